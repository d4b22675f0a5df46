//===- BuildTrainStep.cpp - tx-build-train-step: forward -> training step -===//
//
// SPDX-License-Identifier: Apache-2.0
// Turns a forward function (loss, or logits plus --loss=cross-entropy) into
// one pure training step: the gradient function of Autodiff.h is inlined,
// followed by the global gradient norm, optional clipping and the optimizer
// as fused multi-tensor ops. All state (parameters, moments, the step
// counter) is arguments and results, so the step is a function of its
// inputs that any executor (the CPU reference, the GPU runtime) can repeat.
//
//===----------------------------------------------------------------------===//

#include "txopt/Dialect/Tx/IR/TxOps.h"
#include "txopt/Dialect/Tx/Transforms/Autodiff.h"
#include "txopt/Dialect/Tx/Transforms/Passes.h"
#include "txopt/Dialect/Tx/Transforms/TrainStep.h"

#include "TrainStepLoss.h"
#include "TrainStepUpdate.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Regex.h"

#include <cmath>

namespace mlir::txopt::tx {
#define GEN_PASS_DEF_BUILDTRAINSTEPPASS
#include "txopt/Dialect/Tx/Transforms/Passes.h.inc"
} // namespace mlir::txopt::tx

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::tx;

namespace {

using namespace train_step;

/// The forward function the options name, or the one a user means.
FailureOr<func::FuncOp> findForward(ModuleOp module,
                                    const TrainStepOptions &options) {
  if (!options.function.empty()) {
    auto func = module.lookupSymbol<func::FuncOp>(options.function);
    if (!func || func.isExternal())
      return emitError(module.getLoc(), "expected a function named '@")
             << options.function << "' with a body to train";
    return func;
  }
  if (auto main = module.lookupSymbol<func::FuncOp>("main"))
    if (!main.isExternal())
      return main;
  func::FuncOp only;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isExternal() || !func.isPublic())
      continue;
    if (only)
      return emitError(module.getLoc(),
                       "expected one public function to train, but found '@")
             << only.getName() << "' and '@" << func.getName()
             << "' (name one with function=)";
    only = func;
  }
  if (!only)
    return emitError(module.getLoc(), "expected a function to train");
  return only;
}

/// The numeric options in range; errors at |loc| otherwise.
LogicalResult checkNumericOptions(Location loc, const TrainStepOptions &options,
                                  double weightDecay) {
  if (!(options.lr > 0))
    return emitError(loc, "expected lr > 0, but got ") << options.lr;
  if (!(options.beta1 >= 0 && options.beta1 < 1 && options.beta2 >= 0 &&
        options.beta2 < 1))
    return emitError(loc, "expected betas in [0, 1), but got ")
           << options.beta1 << ", " << options.beta2;
  if (!(options.epsilon >= 0))
    return emitError(loc, "expected eps >= 0, but got ") << options.epsilon;
  if (!(weightDecay >= 0))
    return emitError(loc, "expected weight decay >= 0, but got ") << weightDecay;
  if (!(options.momentum >= 0 && options.momentum < 1))
    return emitError(loc, "expected momentum in [0, 1), but got ")
           << options.momentum;
  if (options.gradAccum < 1)
    return emitError(loc, "expected grad-accum >= 1, but got ")
           << options.gradAccum;
  if (options.lossScaling &&
      !(options.initialLossScale > 0 && std::isfinite(options.initialLossScale) &&
        options.lossScaleInterval > 0))
    return emitError(loc, "expected a finite loss scale > 0 and an interval "
                          "> 0, but got ")
           << options.initialLossScale << " and " << options.lossScaleInterval;
  return success();
}

/// The --freeze and --no-decay regexes, compiled; errors at |loc|.
LogicalResult compileRegexes(Location loc, const TrainStepOptions &options,
                             llvm::Regex &freeze,
                             std::optional<llvm::Regex> &noDecay) {
  std::string regexError;
  freeze = llvm::Regex(options.freeze, llvm::Regex::NoFlags);
  if (!options.freeze.empty() && !freeze.isValid(regexError))
    return emitError(loc, "invalid --freeze regex '")
           << options.freeze << "': " << regexError;
  if (options.noDecay) {
    noDecay.emplace(*options.noDecay, llvm::Regex::NoFlags);
    if (!noDecay->isValid(regexError))
      return emitError(loc, "invalid --no-decay regex '")
             << *options.noDecay << "': " << regexError;
  }
  return success();
}

/// The function the step differentiates, and the copies made to get it
/// (with cross-entropy, with loss scaling), which are erased at the end.
struct LossFunctions {
  func::FuncOp forward;
  func::FuncOp unscaled; ///< forward, or forward + cross-entropy
  func::FuncOp scaled;   ///< unscaled, or unscaled * loss_scale

  /// Erases the temporaries (and |grad| when set), never the forward.
  void eraseTemporaries(func::FuncOp grad) {
    if (grad)
      grad.erase();
    if (scaled != forward)
      scaled.erase();
    if (unscaled != forward && unscaled != scaled)
      unscaled.erase();
  }
};

/// Appends the cross-entropy loss and the loss scale the options ask for.
FailureOr<LossFunctions> buildLossFunction(func::FuncOp forward,
                                           const TrainStepOptions &options) {
  LossFunctions loss{forward, forward, forward};
  if (options.loss == LossKind::CrossEntropy) {
    FailureOr<func::FuncOp> withLoss = train_step::appendCrossEntropy(
        forward, options.labels, options.name + "_loss");
    if (failed(withLoss))
      return failure();
    loss.unscaled = loss.scaled = *withLoss;
  }
  if (options.lossScaling) {
    FailureOr<func::FuncOp> scaled = train_step::appendLossScale(
        loss.unscaled, options.name + "_scaled_loss");
    if (failed(scaled)) {
      if (loss.unscaled != forward)
        loss.unscaled.erase();
      return failure();
    }
    loss.scaled = *scaled;
  }
  return loss;
}

/// The trainable parameters (the gradient function's trailing arguments)
/// by name, and whether weight decay applies to each.
struct Parameters {
  SmallVector<StringAttr> names;
  SmallVector<bool> decays;
};

FailureOr<Parameters> collectParameters(func::FuncOp gradFunc, unsigned numData,
                                        unsigned numParams,
                                        const std::optional<llvm::Regex> &noDecay,
                                        double weightDecay) {
  Parameters params;
  for (unsigned i = 0; i < numParams; ++i) {
    BlockArgument arg = gradFunc.getArgument(numData + i);
    auto name = gradFunc.getArgAttrOfType<StringAttr>(numData + i, tx::kNameAttrName);
    auto type = cast<RankedTensorType>(arg.getType());
    if (!isa<FloatType>(type.getElementType()) ||
        type.getElementType().getIntOrFloatBitWidth() > 32)
      return emitError(arg.getLoc(), "parameter '")
             << name.getValue() << "' has type " << type
             << "; training supports f32, bf16 and f16 parameters";
    params.names.push_back(name);
    bool exempt = noDecay ? noDecay->match(name.getValue()) : type.getRank() < 2;
    params.decays.push_back(weightDecay > 0 && !exempt);
  }
  return params;
}

StepLayout layoutStepArguments(Builder &builder, Location loc,
                               const TrainStepOptions &options,
                               func::FuncOp gradFunc, func::FuncOp lossFunc,
                               unsigned numData, unsigned numBatch,
                               const Parameters &params) {
  MLIRContext *context = builder.getContext();
  StepLayout layout;
  layout.numParams = params.names.size();
  layout.numBatch = numBatch;
  SmallVector<StepArg> &args = layout.args;
  auto zeroInit = builder.getNamedAttr(kInitAttrName, builder.getF32FloatAttr(0));
  for (unsigned i = 0; i < layout.numParams; ++i) {
    // Master weights are f32 whatever the model stores: a bf16/f16
    // parameter (a bf16 export) is an f32 argument, initialized from the
    // parameter's value and cast to the model's type where it is read.
    NamedAttrList attrs(gradFunc.getArgAttrDict(numData + i));
    attrs.append(namedString(builder, kRoleAttrName, "param"));
    auto type = cast<RankedTensorType>(gradFunc.getArgument(numData + i).getType());
    args.push_back({RankedTensorType::get(type.getShape(), builder.getF32Type()),
                    attrs, gradFunc.getArgument(numData + i).getLoc()});
  }
  if (options.optimizer == OptimizerKind::SGD) {
    if (options.momentum > 0)
      layout.stateRoles.push_back("momentum_buffer");
  } else {
    layout.stateRoles = {"exp_avg", "exp_avg_sq"};
  }
  for (StringRef role : layout.stateRoles)
    for (unsigned i = 0; i < layout.numParams; ++i) {
      NamedAttrList attrs;
      attrs.append(namedString(
          builder, tx::kNameAttrName, (params.names[i].getValue() + "." + role).str()));
      attrs.append(namedString(builder, kRoleAttrName, role));
      attrs.append(zeroInit);
      args.push_back({args[i].type, attrs, args[i].loc});
    }
  auto addScalarState = [&](StringRef name, double init) {
    NamedAttrList attrs;
    attrs.append(namedString(builder, tx::kNameAttrName, name));
    attrs.append(namedString(builder, kRoleAttrName, name));
    attrs.append(builder.getNamedAttr(kInitAttrName, builder.getF32FloatAttr(init)));
    args.push_back({f32Scalar(context), attrs, loc});
    return static_cast<unsigned>(args.size() - 1);
  };
  // Gradient accumulators: state like the moments (carried, zero at the
  // start), so every driver and checkpoint handles them without knowing.
  if (options.gradAccum > 1) {
    layout.gradAccum = options.gradAccum;
    layout.gradAccIndex = args.size();
    for (unsigned i = 0; i < layout.numParams; ++i) {
      NamedAttrList attrs;
      attrs.append(namedString(
          builder, tx::kNameAttrName, (params.names[i].getValue() + ".grad_acc").str()));
      attrs.append(namedString(builder, kRoleAttrName, "grad_acc"));
      attrs.append(zeroInit);
      args.push_back({args[i].type, attrs, args[i].loc});
    }
    layout.lossAccIndex = addScalarState("loss_acc", 0.0);
  }
  // Step inputs the driver sets each step, not state (no tx.next): the
  // learning rate (tx.init: the compiled default), so a schedule needs no
  // recompile, and the dropout key, so each step draws a fresh mask.
  layout.lrIndex = args.size();
  {
    NamedAttrList attrs;
    attrs.append(namedString(builder, tx::kNameAttrName, "lr"));
    attrs.append(namedString(builder, kRoleAttrName, "lr"));
    attrs.append(builder.getNamedAttr(kInitAttrName,
                                      builder.getF32FloatAttr(options.lr)));
    args.push_back({f32Scalar(context), attrs, loc});
  }
  layout.stepIndex = addScalarState("step", 0.0);
  layout.rngIndex = args.size();
  {
    NamedAttrList attrs;
    attrs.append(namedString(builder, tx::kNameAttrName, "rng_key"));
    attrs.append(namedString(builder, kRoleAttrName, "rng"));
    args.push_back({RankedTensorType::get({}, builder.getI64Type()), attrs, loc});
  }
  if (options.lossScaling) {
    layout.scaleIndex = addScalarState("loss_scale", options.initialLossScale);
    layout.trackerIndex = addScalarState("growth_tracker", 0.0);
  }
  layout.dataIndex = args.size();
  for (unsigned i = 0; i < numBatch; ++i) {
    NamedAttrList attrs(lossFunc.getArgAttrDict(i));
    bool isLabels = train_step::feedsLabels(gradFunc.getArgument(i));
    attrs.append(namedString(builder, kRoleAttrName, isLabels ? "labels" : "data"));
    args.push_back({lossFunc.getArgument(i).getType(), attrs,
                    lossFunc.getArgument(i).getLoc()});
  }
  return layout;
}

/// Clones |gradFunc|'s body into |entry| (the step's block, laid out as
/// |layout|): the batch, the loss scale and the f32 master weights (cast to
/// the model's type) stand for its arguments, and every dropout is keyed by
/// the step's rng_key. Returns the loss and the f32 gradients.
Value inlineGradient(OpBuilder &builder, func::FuncOp gradFunc, Block *entry,
                     const StepLayout &layout, bool lossScaling,
                     unsigned numData, SmallVectorImpl<Value> &grads) {
  IRMapping mapping;
  for (unsigned i = 0; i < layout.numBatch; ++i)
    mapping.map(gradFunc.getArgument(i),
                entry->getArgument(layout.dataIndex + i));
  if (lossScaling)
    mapping.map(gradFunc.getArgument(layout.numBatch),
                entry->getArgument(layout.scaleIndex));
  builder.setInsertionPointToEnd(entry);
  for (unsigned i = 0; i < layout.numParams; ++i) {
    Value master = entry->getArgument(i);
    BlockArgument modelParam = gradFunc.getArgument(numData + i);
    if (modelParam.getType() != master.getType())
      master = CastOp::create(builder, modelParam.getLoc(), modelParam.getType(),
                              master);
    mapping.map(modelParam, master);
  }
  Block &gradBody = gradFunc.getBody().front();
  for (Operation &op : gradBody.without_terminator())
    builder.clone(op, mapping);
  // Every dropout (forward and, through the shared key, its gradient; the
  // probabilities' dropout of a fused attention and of its gradient) is
  // keyed by the step's rng_key; the import-time constant key goes dead.
  llvm::SetVector<Operation *> oldKeys;
  Value rngKey = entry->getArgument(layout.rngIndex);
  auto rekey = [&](OpOperand &key) {
    if (Operation *def = key.get().getDefiningOp())
      oldKeys.insert(def);
    key.set(rngKey);
  };
  entry->walk([&](Operation *op) {
    if (auto dropout = dyn_cast<DropoutOp>(op))
      rekey(dropout.getKeyMutable());
    else if (auto attention = dyn_cast<AttentionOp>(op); attention && attention.getDropoutKey())
      rekey(attention.getDropoutKeyMutable()[0]);
    else if (auto grad = dyn_cast<AttentionGradOp>(op); grad && grad.getDropoutKey())
      rekey(grad.getDropoutKeyMutable()[0]);
  });
  for (Operation *key : oldKeys)
    if (isa<ConstantOp>(key) && key->use_empty())
      key->erase();
  Operation *gradReturn = gradBody.getTerminator();
  Value lossValue = mapping.lookup(gradReturn->getOperand(0));
  for (unsigned i = 0; i < layout.numParams; ++i) {
    // Gradients of low-precision parameters reach the f32 optimizer in f32.
    Value grad = mapping.lookup(gradReturn->getOperand(1 + i));
    Type masterType = entry->getArgument(i).getType();
    if (grad.getType() != masterType)
      grad = CastOp::create(builder, grad.getLoc(), masterType, grad);
    grads.push_back(grad);
  }
  return lossValue;
}

/// The name of the micro-step of the step named |stepName|.
std::string microStepName(StringRef stepName) {
  return stepName == "train_step" ? "micro_step" : (stepName + "_micro").str();
}

/// Gradient accumulation: `@micro_step`, with the step's signature, adds
/// one micro-batch's gradients and loss into the accumulators. The adds
/// consume each gradient where it is produced; nothing else is computed.
func::FuncOp buildMicroStep(OpBuilder &builder, Location loc,
                            const TrainStepOptions &options,
                            func::FuncOp gradFunc, const StepLayout &layout,
                            unsigned numData, ArrayRef<Type> argTypes,
                            ArrayRef<Location> argLocs,
                            ArrayRef<Attribute> argAttrs) {
  MLIRContext *context = builder.getContext();
  auto micro = func::FuncOp::create(builder, loc, microStepName(options.name),
                                    FunctionType::get(context, argTypes, {}));
  Block *entry = builder.createBlock(&micro.getBody(), {}, argTypes, argLocs);
  SmallVector<Value> grads;
  Value lossValue = inlineGradient(builder, gradFunc, entry, layout,
                                   options.lossScaling, numData, grads);
  ImplicitLocOpBuilder b(loc, builder);
  Value microLoss = lossValue;
  addAccumulators(b, layout, entry, lossValue, grads);
  SmallVector<Value> results;
  SmallVector<Attribute> resultAttrs;
  auto carry = [&](Value value, unsigned argIndex) {
    results.push_back(value);
    resultAttrs.push_back(carriedResultAttrs(builder, layout, argIndex));
  };
  for (auto [i, grad] : llvm::enumerate(grads))
    carry(grad, layout.gradAccIndex + i);
  carry(lossValue, layout.lossAccIndex);
  // The micro-batch's own loss (scaled, under loss scaling: the step
  // unscales the accumulated sum), for drivers that print every one.
  results.push_back(microLoss);
  resultAttrs.push_back(
      builder.getDictionaryAttr(namedString(builder, tx::kNameAttrName, "loss")));
  func::ReturnOp::create(b, results);
  micro.setFunctionType(
      FunctionType::get(context, argTypes, ValueRange(results).getTypes()));
  micro.setAllArgAttrs(argAttrs);
  micro.setAllResultAttrs(resultAttrs);
  return micro;
}

/// The forward of |lossFunc| (the unscaled loss: the forward, or forward +
/// cross-entropy) cloned into |entry|, a block with the step's arguments:
/// the trained parameters read from the step's parameter arguments (cast to
/// the model's type, as the step does) and every dropout the identity
/// (torch's model.eval()). Frozen parameters stay loads. Returns the map
/// from |lossFunc|'s values to the clones.
IRMapping cloneForwardForEvaluation(OpBuilder &builder, func::FuncOp lossFunc,
                                    const StepLayout &layout, Block *entry) {
  IRMapping mapping;
  for (unsigned i = 0; i < layout.numBatch; ++i)
    mapping.map(lossFunc.getArgument(i), entry->getArgument(layout.dataIndex + i));
  llvm::StringMap<unsigned> paramArg;
  for (unsigned i = 0; i < layout.numParams; ++i)
    if (auto ref = dyn_cast_or_null<FlatSymbolRefAttr>(
            layout.args[i].attrs.get("tx.parameter")))
      paramArg[ref.getValue()] = i;
  Block &body = lossFunc.getBody().front();
  for (Operation &op : body.without_terminator()) {
    if (auto load = dyn_cast<LoadParameterOp>(op)) {
      auto it = paramArg.find(load.getName());
      if (it != paramArg.end()) {
        Value master = entry->getArgument(it->second);
        if (master.getType() != load.getType())
          master = CastOp::create(builder, load.getLoc(), load.getType(), master);
        mapping.map(load.getResult(), master);
        continue;
      }
    }
    if (auto dropout = dyn_cast<DropoutOp>(op)) {
      mapping.map(dropout.getResult(), mapping.lookupOrDefault(dropout.getInput()));
      continue;
    }
    // A fused attention's dropout of the probabilities goes the same way.
    if (auto attention = dyn_cast<AttentionOp>(op); attention && attention.getDropoutKey()) {
      Value mask = attention.getMask() ? mapping.lookupOrDefault(attention.getMask()) : Value();
      auto plain = AttentionOp::create(
          builder, attention.getLoc(), mapping.lookupOrDefault(attention.getQ()),
          mapping.lookupOrDefault(attention.getK()), mapping.lookupOrDefault(attention.getV()),
          mask, Value(), attention.getScaleAttr(), attention.getCausalAttr(),
          attention.getWindowAttr(), nullptr, builder.getI64IntegerAttr(0));
      mapping.map(attention.getResult(), plain.getResult());
      mapping.map(attention.getLse(), plain.getLse());
      continue;
    }
    builder.clone(op, mapping);
  }
  return mapping;
}

/// A function named |name| with the step's signature returning one value
/// of |lossFunc|'s forward: |pick| chooses it; ops it does not need are
/// erased. Its result is named |resultName|.
func::FuncOp buildForwardFunction(
    OpBuilder &builder, Location loc, StringRef name, StringRef resultName,
    func::FuncOp lossFunc, const StepLayout &layout, ArrayRef<Type> argTypes,
    ArrayRef<Location> argLocs, ArrayRef<Attribute> argAttrs,
    llvm::function_ref<Value(const IRMapping &)> pick) {
  MLIRContext *context = builder.getContext();
  auto func = func::FuncOp::create(builder, loc, name,
                                   FunctionType::get(context, argTypes, {}));
  Block *entry = builder.createBlock(&func.getBody(), {}, argTypes, argLocs);
  IRMapping mapping = cloneForwardForEvaluation(builder, lossFunc, layout, entry);
  Value result = pick(mapping);
  func::ReturnOp::create(builder, loc, result);
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(*entry)))
    if (isOpTriviallyDead(&op))
      op.erase();
  func.setFunctionType(FunctionType::get(context, argTypes, result.getType()));
  func.setAllArgAttrs(argAttrs);
  func.setResultAttrs(
      0, builder.getDictionaryAttr(namedString(builder, tx::kNameAttrName, resultName)));
  return func;
}

/// Validation: `@eval`, with the step's signature, the loss of
/// |lossFunc|'s forward under the step's parameters (see
/// cloneForwardForEvaluation).
func::FuncOp buildEval(OpBuilder &builder, Location loc,
                       const TrainStepOptions &options, func::FuncOp lossFunc,
                       const StepLayout &layout, ArrayRef<Type> argTypes,
                       ArrayRef<Location> argLocs, ArrayRef<Attribute> argAttrs) {
  Value loss = lossFunc.getBody().front().getTerminator()->getOperand(0);
  return buildForwardFunction(
      builder, loc, evalName(options.name), "loss", lossFunc, layout, argTypes, argLocs,
      argAttrs, [&](const IRMapping &mapping) { return mapping.lookup(loss); });
}

/// The scores the loss is a softmax cross-entropy of (through casts), or
/// null when the loss is something else.
Value crossEntropyScores(func::FuncOp lossFunc) {
  Value loss = lossFunc.getBody().front().getTerminator()->getOperand(0);
  while (auto cast = loss.getDefiningOp<CastOp>())
    loss = cast.getInput();
  if (auto ce = loss.getDefiningOp<SoftmaxCrossEntropyLossOp>())
    return ce.getScores();
  return Value();
}

/// Sampling: `@logits`, with the step's signature, the scores of the
/// loss's softmax cross-entropy (one row per token of the batch) under the
/// step's parameters, forward only: what `txrun sample` reads.
func::FuncOp buildLogits(OpBuilder &builder, Location loc,
                         const TrainStepOptions &options, func::FuncOp lossFunc,
                         Value scores, const StepLayout &layout,
                         ArrayRef<Type> argTypes, ArrayRef<Location> argLocs,
                         ArrayRef<Attribute> argAttrs) {
  return buildForwardFunction(
      builder, loc, logitsName(options.name), "logits", lossFunc, layout, argTypes,
      argLocs, argAttrs, [&](const IRMapping &mapping) { return mapping.lookup(scores); });
}

} // namespace

FailureOr<func::FuncOp> tx::buildTrainStep(ModuleOp module,
                                           const TrainStepOptions &options) {
  MLIRContext *context = module.getContext();
  FailureOr<func::FuncOp> found = findForward(module, options);
  if (failed(found))
    return failure();
  func::FuncOp forward = *found;
  Location loc = forward.getLoc();
  SmallVector<std::string> names = {options.name};
  if (options.gradAccum > 1)
    names.push_back(microStepName(options.name));
  if (options.eval) {
    names.push_back(evalName(options.name));
    names.push_back(logitsName(options.name));
  }
  for (const std::string &name : names)
    if (module.lookupSymbol(name))
      return emitError(loc, "expected no symbol named '@")
             << name << "' yet, but one exists";
  double weightDecay = options.weightDecay.value_or(
      options.optimizer == OptimizerKind::AdamW ? 0.01 : 0.0);
  llvm::Regex freeze;
  std::optional<llvm::Regex> noDecay;
  if (failed(checkNumericOptions(loc, options, weightDecay)) ||
      failed(compileRegexes(loc, options, freeze, noDecay)))
    return failure();

  // Freezing is a property of the parameter: autodiff then treats it as a
  // constant and it keeps its tx.load_parameter read.
  if (!options.freeze.empty())
    for (ParameterOp param : module.getOps<ParameterOp>())
      if (freeze.match(param.getSymName()))
        param.setFrozen(true);

  // The loss function: the forward itself, or a copy with cross-entropy
  // and/or the loss scale; then its gradient.
  FailureOr<LossFunctions> loss = buildLossFunction(forward, options);
  if (failed(loss))
    return failure();
  func::FuncOp lossFunc = loss->scaled;
  GradientOptions gradOptions;
  gradOptions.wrt = GradientWrt::Params;
  gradOptions.name = options.name + "_grad";
  gradOptions.markSeed = true; // for tx-insert-fp8, which runs next
  FailureOr<func::FuncOp> gradResult = buildGradientFunction(lossFunc, gradOptions);
  if (failed(gradResult)) {
    loss->eraseTemporaries({});
    return failure();
  }
  func::FuncOp gradFunc = *gradResult;
  // The loss function's arguments: the batch, then (with loss scaling) the
  // scale appended by appendLossScale.
  unsigned numData = lossFunc.getNumArguments();
  unsigned numBatch = numData - (options.lossScaling ? 1 : 0);
  unsigned numParams = gradFunc.getNumArguments() - numData;
  if (numParams == 0) {
    loss->eraseTemporaries(gradFunc);
    return emitError(loc, "nothing to train: the loss reads no trainable "
                          "parameter (all frozen, or none)");
  }
  FailureOr<Parameters> params =
      collectParameters(gradFunc, numData, numParams, noDecay, weightDecay);
  if (failed(params)) {
    loss->eraseTemporaries(gradFunc);
    return failure();
  }

  // The step function: its signature, the inlined gradient, the update.
  OpBuilder builder(context);
  StepLayout layout = layoutStepArguments(builder, loc, options, gradFunc,
                                          lossFunc, numData, numBatch, *params);
  builder.setInsertionPoint(forward);
  SmallVector<Type> argTypes;
  SmallVector<Location> argLocs;
  for (const StepArg &arg : layout.args) {
    argTypes.push_back(arg.type);
    argLocs.push_back(arg.loc);
  }
  auto step = func::FuncOp::create(builder, loc, options.name,
                                   FunctionType::get(context, argTypes, {}));
  Block *entry = builder.createBlock(&step.getBody(), {}, argTypes, argLocs);
  SmallVector<Value> grads;
  Value lossValue = inlineGradient(builder, gradFunc, entry, layout,
                                   options.lossScaling, numData, grads);
  SmallVector<Value> results;
  SmallVector<Attribute> resultAttrs =
      buildUpdate(builder, loc, options, weightDecay, layout, params->decays,
                  entry, lossValue, grads, results);
  step.setFunctionType(
      FunctionType::get(context, argTypes, ValueRange(results).getTypes()));
  SmallVector<Attribute> argAttrs;
  for (const StepArg &arg : layout.args)
    argAttrs.push_back(arg.attrs.getDictionary(context));
  step.setAllArgAttrs(argAttrs);
  step.setAllResultAttrs(resultAttrs);
  step->setAttr(kTrainStepAttrName,
                recipeAttr(builder, options, weightDecay, forward));
  if (options.gradAccum > 1) {
    builder.setInsertionPointAfter(step);
    func::FuncOp micro = buildMicroStep(builder, loc, options, gradFunc, layout,
                                        numData, argTypes, argLocs, argAttrs);
    micro->setAttr(kMicroStepAttrName, FlatSymbolRefAttr::get(step));
  }
  if (options.eval) {
    builder.setInsertionPointAfter(step);
    func::FuncOp eval = buildEval(builder, loc, options, loss->unscaled, layout,
                                  argTypes, argLocs, argAttrs);
    eval->setAttr(kEvalAttrName, FlatSymbolRefAttr::get(step));
    // Sampling needs the scores; a loss that is not a softmax
    // cross-entropy of them has none to offer (txrun sample says so).
    if (Value scores = crossEntropyScores(loss->unscaled)) {
      builder.setInsertionPointAfter(eval);
      func::FuncOp logits = buildLogits(builder, loc, options, loss->unscaled, scores,
                                        layout, argTypes, argLocs, argAttrs);
      logits->setAttr(kLogitsAttrName, FlatSymbolRefAttr::get(step));
    }
  }

  loss->eraseTemporaries(gradFunc);
  forward.erase();
  return step;
}

namespace {
struct BuildTrainStepPass
    : tx::impl::BuildTrainStepPassBase<BuildTrainStepPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    TrainStepOptions options;
    options.function = function;
    options.name = stepName;
    options.labels = labels;
    options.lr = lr;
    options.beta1 = beta1;
    options.beta2 = beta2;
    options.epsilon = eps;
    options.momentum = momentum;
    options.gradClip = gradClip;
    options.freeze = freeze;
    options.lossScaling = lossScaling;
    options.initialLossScale = initialLossScale;
    options.lossScaleInterval = lossScaleInterval;
    options.gradAccum = gradAccum;
    options.eval = eval;
    if (weightDecay >= 0)
      options.weightDecay = weightDecay;
    if (!noDecay.empty())
      options.noDecay = noDecay;
    options.optimizer = optimizer;
    options.loss = loss;
    if (failed(buildTrainStep(module, options)))
      signalPassFailure();
  }
};
} // namespace
