//===- TrainStepRecipe.cpp - the recipe of tx-build-train-step ------------===//
//
// SPDX-License-Identifier: Apache-2.0
// The recipe's text forms: the optimizer and loss names the pass options
// take, the `tx.train_step` attribute the step carries, and its JSON for
// reports and checkpoints. Apart from BuildTrainStep.cpp, which builds the
// IR, since these only translate options to and from text.
//
//===----------------------------------------------------------------------===//

#include "TrainStepUpdate.h"

#include "txopt/Dialect/Tx/Transforms/TrainStep.h"

#include "llvm/Support/JSON.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::tx;

std::optional<OptimizerKind> tx::parseOptimizerKind(StringRef text) {
  if (text == "adamw")
    return OptimizerKind::AdamW;
  if (text == "adam")
    return OptimizerKind::Adam;
  if (text == "sgd")
    return OptimizerKind::SGD;
  return std::nullopt;
}

std::optional<LossKind> tx::parseLossKind(StringRef text) {
  if (text == "output" || text.empty())
    return LossKind::Output;
  if (text == "cross-entropy")
    return LossKind::CrossEntropy;
  return std::nullopt;
}

DictionaryAttr train_step::recipeAttr(Builder &builder, const TrainStepOptions &options,
                          double weightDecay, func::FuncOp forward) {
  StringRef optimizerName = options.optimizer == OptimizerKind::AdamW ? "adamw"
                            : options.optimizer == OptimizerKind::Adam ? "adam"
                                                                       : "sgd";
  NamedAttrList recipe;
  recipe.append(namedString(builder, "optimizer", optimizerName));
  recipe.append("lr", builder.getF64FloatAttr(options.lr));
  if (options.optimizer == OptimizerKind::SGD) {
    recipe.append("momentum", builder.getF64FloatAttr(options.momentum));
  } else {
    recipe.append("beta1", builder.getF64FloatAttr(options.beta1));
    recipe.append("beta2", builder.getF64FloatAttr(options.beta2));
    recipe.append("eps", builder.getF64FloatAttr(options.epsilon));
  }
  recipe.append("weight_decay", builder.getF64FloatAttr(weightDecay));
  recipe.append("grad_clip", builder.getF64FloatAttr(std::max(0.0, options.gradClip)));
  recipe.append("loss", builder.getStringAttr(
                            options.loss == LossKind::CrossEntropy
                                ? "cross-entropy"
                                : "output"));
  recipe.append("forward", builder.getStringAttr(forward.getName()));
  // Only when used, so that recipes (and the checkpoints that store them)
  // of steps without accumulation stay as they were.
  if (options.gradAccum > 1)
    recipe.append("grad_accum", builder.getI64IntegerAttr(options.gradAccum));
  if (options.lossScaling) {
    recipe.append("loss_scale", builder.getF64FloatAttr(options.initialLossScale));
    recipe.append("loss_scale_interval",
                  builder.getI64IntegerAttr(options.lossScaleInterval));
  }
  return recipe.getDictionary(builder.getContext());
}

std::string mlir::txopt::tx::trainStepRecipeJson(func::FuncOp step) {
  auto dict = step->getAttrOfType<DictionaryAttr>(kTrainStepAttrName);
  llvm::json::Object object;
  if (dict)
    for (NamedAttribute entry : dict) {
      llvm::StringRef key = entry.getName().getValue();
      if (auto s = dyn_cast<StringAttr>(entry.getValue()))
        object[key] = s.getValue().str();
      else if (auto f = dyn_cast<FloatAttr>(entry.getValue()))
        object[key] = f.getValueAsDouble();
      else if (auto i = dyn_cast<IntegerAttr>(entry.getValue()))
        object[key] = i.getInt();
      else if (auto b = dyn_cast<BoolAttr>(entry.getValue()))
        object[key] = b.getValue();
    }
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::json::Value(std::move(object));
  return text;
}

SmallVector<func::FuncOp> mlir::txopt::tx::stepCompanions(func::FuncOp step) {
  SmallVector<func::FuncOp> found;
  auto module = step->getParentOfType<ModuleOp>();
  if (!module)
    return found;
  for (auto func : module.getOps<func::FuncOp>())
    for (StringLiteral link : {kMicroStepAttrName, kEvalAttrName, kLogitsAttrName}) {
      auto ref = func->getAttrOfType<FlatSymbolRefAttr>(link);
      if (ref && ref.getValue() == step.getName() && !func.isExternal()) {
        found.push_back(func);
        break;
      }
    }
  return found;
}

void mlir::txopt::tx::appendStepArgumentsToCompanions(func::FuncOp step) {
  for (func::FuncOp companion : stepCompanions(step))
    for (unsigned i = companion.getNumArguments(), e = step.getNumArguments(); i < e; ++i)
      (void)companion.insertArgument(i, step.getArgument(i).getType(), step.getArgAttrDict(i),
                                     step.getArgument(i).getLoc());
}
