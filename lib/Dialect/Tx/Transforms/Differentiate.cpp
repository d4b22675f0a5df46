//===- Differentiate.cpp - tx-differentiate: reverse-mode autodiff --------===//
//
// SPDX-License-Identifier: Apache-2.0
// Builds `@f_grad` from a loss function `@f`: the forward ops are cloned,
// then one reverse sweep over them applies each op's gradient rule (its
// DifferentiableOpInterface, lib/Dialect/Tx/IR/*Gradients.cpp), summing the
// gradients of values used more than once.
//
//===----------------------------------------------------------------------===//

#include "txopt/Dialect/Tx/IR/TxOps.h"
#include "txopt/Dialect/Tx/IR/StepContract.h"
#include "txopt/Dialect/Tx/Transforms/Autodiff.h"
#include "txopt/Dialect/Tx/Transforms/Passes.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::txopt::tx {
#define GEN_PASS_DEF_DIFFERENTIATEPASS
#include "txopt/Dialect/Tx/Transforms/Passes.h.inc"
} // namespace mlir::txopt::tx

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::tx;

std::optional<GradientWrt> tx::parseGradientWrt(StringRef text) {
  if (text == "params")
    return GradientWrt::Params;
  if (text == "args")
    return GradientWrt::Args;
  if (text == "all")
    return GradientWrt::All;
  return std::nullopt;
}

bool tx::hasGradientRule(Operation *op) {
  return isa<DifferentiableOpInterface>(op);
}

LogicalResult tx::buildOperandGradients(OpBuilder &builder, Operation *op,
                                        ArrayRef<Value> resultGrads,
                                        const llvm::BitVector &needed,
                                        SmallVectorImpl<Value> &operandGrads) {
  assert(resultGrads.size() == op->getNumResults() &&
         needed.size() == op->getNumOperands());
  auto differentiable = dyn_cast<DifferentiableOpInterface>(op);
  if (!differentiable)
    return emitError(op->getLoc())
           << "no gradient rule for '" << op->getName() << "'";
  operandGrads.assign(op->getNumOperands(), Value());
  ImplicitLocOpBuilder b(op->getLoc(), builder);
  GradientContext context{b, op, resultGrads, needed, operandGrads};
  LogicalResult result = differentiable.buildGradients(context);
  // Keep the builder's insertion point in step with what the rule built.
  builder.setInsertionPoint(b.getInsertionBlock(), b.getInsertionPoint());
  return result;
}

static bool isFloatTensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && isa<FloatType>(tensor.getElementType());
}

namespace {
/// A value the gradient function differentiates against, and what its
/// gradient result's `tx.grad_of` says.
struct WrtValue {
  Value value;
  Attribute gradOf;
};

/// The type of |forward|'s loss (result #0, a 0-d float tensor); errors at
/// |forward| when it cannot be differentiated.
FailureOr<RankedTensorType> checkLossFunction(func::FuncOp forward) {
  if (forward.isExternal())
    return emitError(forward.getLoc(),
                     "expected a function with a body to differentiate");
  if (!forward.getBody().hasOneBlock())
    return emitError(forward.getLoc(),
                     "expected a single-block function, but got ")
           << forward.getBody().getBlocks().size() << " blocks";
  FunctionType forwardType = forward.getFunctionType();
  if (forwardType.getNumResults() == 0)
    return emitError(
        forward.getLoc(),
        "expected result #0 to be a scalar floating-point loss, but got no "
        "results");
  Type lossType = forwardType.getResult(0);
  auto lossTensor = dyn_cast<RankedTensorType>(lossType);
  if (!isFloatTensor(lossType) || lossTensor.getRank() != 0)
    return emitError(forward.getLoc(),
                     "expected result #0 to be a scalar "
                     "floating-point loss (0-d tensor), but got ")
           << lossType;
  if (!forward->getParentOfType<ModuleOp>())
    return emitError(forward.getLoc(),
                     "expected the function to be inside a module");
  return lossTensor;
}

/// Trainable parameters |forward| reads, in tx.parameter order.
SmallVector<ParameterOp> trainableParameters(func::FuncOp forward,
                                             ModuleOp module) {
  SmallVector<ParameterOp> params;
  llvm::StringSet<> read;
  forward.walk([&](LoadParameterOp load) { read.insert(load.getName()); });
  for (ParameterOp param : module.getOps<ParameterOp>())
    if (read.contains(param.getSymName()) && !param.getFrozen())
      params.push_back(param);
  return params;
}

/// Clones |forward|'s body into |entry| (the gradient function's block:
/// the forward's arguments, then |params|), reading the parameters from the
/// new arguments. Fills |wrt| and returns the cloned loss.
Value cloneForward(OpBuilder &builder, func::FuncOp forward, Block *entry,
                   ArrayRef<ParameterOp> params, bool wrtArgs,
                   SmallVectorImpl<WrtValue> &wrt) {
  Block &forwardBody = forward.getBody().front();
  IRMapping mapping;
  for (auto [i, arg] : llvm::enumerate(forwardBody.getArguments())) {
    mapping.map(arg, entry->getArgument(i));
    if (wrtArgs && isFloatTensor(arg.getType()))
      wrt.push_back({entry->getArgument(i),
                     builder.getI64IntegerAttr(static_cast<int64_t>(i))});
  }
  llvm::StringMap<Value> paramArgs;
  for (unsigned i = 0; i < params.size(); ++i) {
    ParameterOp param = params[i]; // op accessors are not const
    Value arg = entry->getArgument(forwardBody.getNumArguments() + i);
    paramArgs[param.getSymName()] = arg;
    wrt.push_back({arg, FlatSymbolRefAttr::get(param.getSymNameAttr())});
  }
  builder.setInsertionPointToEnd(entry);
  for (Operation &op : forwardBody.without_terminator()) {
    if (auto load = dyn_cast<LoadParameterOp>(op))
      if (Value arg = paramArgs.lookup(load.getName())) {
        mapping.map(load.getResult(), arg);
        continue;
      }
    builder.clone(op, mapping);
  }
  return mapping.lookupOrDefault(forwardBody.getTerminator()->getOperand(0));
}

/// Activity analysis: a value needs a gradient when it is a float that
/// depends on a wrt value (varied) and that the loss depends on (useful).
struct Activity {
  llvm::DenseSet<Value> varied, useful;

  Activity(Block &entry, ArrayRef<WrtValue> wrt, Value loss) {
    for (const WrtValue &w : wrt)
      varied.insert(w.value);
    for (Operation &op : entry)
      if (llvm::any_of(op.getOperands(),
                       [&](Value v) { return varied.contains(v); }))
        for (Value result : op.getResults())
          if (isFloatTensor(result.getType()))
            varied.insert(result);
    useful.insert(loss);
    for (Operation &op : llvm::reverse(entry))
      if (llvm::any_of(op.getResults(),
                       [&](Value v) { return useful.contains(v); }))
        useful.insert(op.operand_begin(), op.operand_end());
  }

  bool needsGrad(Value v) const {
    return varied.contains(v) && useful.contains(v);
  }
};

/// The ops of |entry| with a result that needs a gradient, in order. Every
/// one without a gradient rule gets an error (not just the first).
LogicalResult collectActiveOps(Block &entry, const Activity &activity,
                               SmallVectorImpl<Operation *> &active) {
  bool missingRule = false;
  for (Operation &op : entry) {
    if (llvm::none_of(op.getResults(),
                      [&](Value v) { return activity.needsGrad(v); }))
      continue;
    if (!hasGradientRule(&op)) {
      emitError(op.getLoc()) << "no gradient rule for '" << op.getName() << "'";
      missingRule = true;
    }
    active.push_back(&op);
  }
  return failure(missingRule);
}

/// The reverse sweep over |active|, from the seed dL/dL = 1 at |seedLoc|:
/// fills |grads| with the gradient of every active value, summing over
/// uses.
LogicalResult reverseSweep(OpBuilder &builder, ArrayRef<Operation *> active,
                           const Activity &activity, Value loss,
                           RankedTensorType lossTensor, Location seedLoc,
                           bool markSeed, llvm::DenseMap<Value, Value> &grads) {
  auto accumulate = [&](Value value, Value grad) {
    Value &slot = grads[value];
    slot = slot ? AddOp::create(builder, grad.getLoc(), slot, grad).getResult()
                : grad;
  };
  if (activity.needsGrad(loss)) {
    auto one = DenseElementsAttr::get(
        lossTensor,
        ArrayRef<Attribute>{FloatAttr::get(lossTensor.getElementType(), 1.0)});
    auto seed = ConstantOp::create(builder, seedLoc, cast<ElementsAttr>(one));
    if (markSeed)
      seed->setAttr(kGradSeedAttrName, builder.getUnitAttr());
    grads[loss] = seed;
  }
  for (Operation *op : llvm::reverse(active)) {
    SmallVector<Value> resultGrads;
    for (Value result : op->getResults())
      resultGrads.push_back(grads.lookup(result));
    if (llvm::all_of(resultGrads, [](Value g) { return !g; }))
      continue;
    llvm::BitVector needed(op->getNumOperands());
    for (OpOperand &operand : op->getOpOperands())
      if (activity.needsGrad(operand.get()))
        needed.set(operand.getOperandNumber());
    SmallVector<Value> operandGrads;
    if (failed(buildOperandGradients(builder, op, resultGrads, needed,
                                     operandGrads)))
      return failure();
    for (OpOperand &operand : op->getOpOperands()) {
      unsigned i = operand.getOperandNumber();
      if (!needed.test(i) || !operandGrads[i])
        continue;
      if (operandGrads[i].getType() != operand.get().getType())
        return emitError(op->getLoc(), "internal error: the gradient rule for '")
               << op->getName() << "' gave operand #" << i
               << " a gradient of type " << operandGrads[i].getType()
               << ", but the operand has type " << operand.get().getType();
      accumulate(operand.get(), operandGrads[i]);
    }
  }
  return success();
}

/// Returns (loss, grads...), zeros for what the loss does not depend on,
/// and sets |gradFunc|'s type and attributes: the forward's argument
/// attributes, `tx.parameter` and `tx.name` on the parameter arguments,
/// `tx.grad_of` on the results and the function.
void finishGradientFunction(OpBuilder &builder, func::FuncOp forward,
                            func::FuncOp gradFunc, ArrayRef<ParameterOp> params,
                            ArrayRef<WrtValue> wrt, Value loss,
                            const llvm::DenseMap<Value, Value> &grads) {
  Block &forwardBody = forward.getBody().front();
  SmallVector<Value> results{loss};
  SmallVector<Attribute> resultAttrs{
      forward.getResultAttrDict(0) ? Attribute(forward.getResultAttrDict(0))
                                   : builder.getDictionaryAttr({})};
  for (const WrtValue &w : wrt) {
    Value grad = grads.lookup(w.value);
    if (!grad)
      grad = ConstantOp::create(
          builder, w.value.getLoc(),
          cast<ElementsAttr>(builder.getZeroAttr(w.value.getType())));
    results.push_back(grad);
    resultAttrs.push_back(builder.getDictionaryAttr(
        builder.getNamedAttr(kGradOfAttrName, w.gradOf)));
  }
  func::ReturnOp::create(builder, forwardBody.getTerminator()->getLoc(),
                         results);
  gradFunc.setFunctionType(FunctionType::get(
      builder.getContext(), gradFunc.getArgumentTypes(),
      ValueRange(results).getTypes()));

  SmallVector<Attribute> argAttrs;
  for (unsigned i = 0; i < forwardBody.getNumArguments(); ++i) {
    DictionaryAttr attrs = forward.getArgAttrDict(i);
    argAttrs.push_back(attrs ? attrs : builder.getDictionaryAttr({}));
  }
  // `tx.name` too, so tools address the argument by the parameter's name
  // (ONNX names are unique across graph inputs and initializers).
  for (ParameterOp param : params)
    argAttrs.push_back(builder.getDictionaryAttr(
        {builder.getNamedAttr(kParameterAttrName,
                              FlatSymbolRefAttr::get(param.getSymNameAttr())),
         builder.getNamedAttr(tx::kNameAttrName, param.getSymNameAttr())}));
  gradFunc.setAllArgAttrs(argAttrs);
  gradFunc.setAllResultAttrs(resultAttrs);
  gradFunc->setAttr(kGradOfAttrName,
                    FlatSymbolRefAttr::get(forward.getSymNameAttr()));
}
} // namespace

FailureOr<func::FuncOp>
tx::buildGradientFunction(func::FuncOp forward,
                          const GradientOptions &options) {
  FailureOr<RankedTensorType> lossTensor = checkLossFunction(forward);
  if (failed(lossTensor))
    return failure();
  auto module = forward->getParentOfType<ModuleOp>();
  std::string name =
      options.name.empty() ? (forward.getName() + "_grad").str() : options.name;
  if (module.lookupSymbol(name))
    return emitError(forward.getLoc(), "expected no symbol named '@")
           << name << "' yet, but one exists";

  MLIRContext *context = forward.getContext();
  bool wrtArgs = options.wrt != GradientWrt::Params;
  bool wrtParams = options.wrt != GradientWrt::Args;
  Block &forwardBody = forward.getBody().front();
  SmallVector<ParameterOp> params;
  if (wrtParams)
    params = trainableParameters(forward, module);

  // The gradient function: the forward's arguments, then the parameters.
  SmallVector<Type> argTypes(forward.getFunctionType().getInputs());
  SmallVector<Location> argLocs;
  for (BlockArgument arg : forwardBody.getArguments())
    argLocs.push_back(arg.getLoc());
  for (ParameterOp param : params) {
    argTypes.push_back(param.getType());
    argLocs.push_back(param.getLoc());
  }
  OpBuilder builder(context);
  builder.setInsertionPointAfter(forward);
  auto gradFunc =
      func::FuncOp::create(builder, forward.getLoc(), name,
                           FunctionType::get(context, argTypes, {}));
  gradFunc.setVisibility(forward.getVisibility());
  Block *entry =
      builder.createBlock(&gradFunc.getBody(), {}, argTypes, argLocs);

  SmallVector<WrtValue> wrt;
  Value loss = cloneForward(builder, forward, entry, params, wrtArgs, wrt);
  Activity activity(*entry, wrt, loss);
  SmallVector<Operation *> active;
  llvm::DenseMap<Value, Value> grads;
  if (failed(collectActiveOps(*entry, activity, active)) ||
      failed(reverseSweep(builder, active, activity, loss, *lossTensor,
                          forwardBody.getTerminator()->getLoc(),
                          options.markSeed, grads))) {
    gradFunc.erase();
    return failure();
  }
  finishGradientFunction(builder, forward, gradFunc, params, wrt, loss, grads);

  // Drop forward ops only the other results needed (users come after their
  // operands, so one reverse walk removes whole dead chains).
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(*entry)))
    if (isOpTriviallyDead(&op))
      op.erase();
  return gradFunc;
}

namespace {
struct DifferentiatePass : tx::impl::DifferentiatePassBase<DifferentiatePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> forwards;
    for (func::FuncOp func : module.getOps<func::FuncOp>()) {
      if (func.isExternal() || func->hasAttr(kGradOfAttrName))
        continue;
      if (!functionName.empty() && func.getName() != functionName)
        continue;
      forwards.push_back(func);
    }
    if (!functionName.empty() && forwards.empty()) {
      emitError(module.getLoc(), "expected a function named '@")
          << functionName << "' to differentiate";
      return signalPassFailure();
    }
    GradientOptions options;
    options.wrt = wrt;
    bool failure = false;
    for (func::FuncOp forward : forwards)
      failure |= failed(buildGradientFunction(forward, options));
    if (failure)
      signalPassFailure();
  }
};
} // namespace
