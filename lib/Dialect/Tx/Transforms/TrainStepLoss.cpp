//===- TrainStepLoss.cpp - loss wrappers of tx-build-train-step -----------===//
//
// SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "TrainStepLoss.h"

#include "txopt/Dialect/Tx/IR/TxOps.h"
#include "txopt/Dialect/Tx/IR/StepContract.h"

#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::tx;

/// A copy of |forward| named |name| that returns the mean cross-entropy of
/// its result #0 (logits [..., C]) against integer labels: the argument
/// called |labels|, or a new trailing i64 argument of that name.
FailureOr<func::FuncOp>
train_step::appendCrossEntropy(func::FuncOp forward, StringRef labels,
                               StringRef name) {
  if (forward.getNumResults() == 0)
    return emitError(forward.getLoc(), "--loss=cross-entropy expects logits "
                                       "as result #0, but the function has no "
                                       "results");
  auto logitsType = dyn_cast<RankedTensorType>(forward.getResultTypes()[0]);
  if (!logitsType || !isa<FloatType>(logitsType.getElementType()) ||
      logitsType.getRank() < 2 || !logitsType.hasStaticShape())
    return emitError(forward.getLoc(),
                     "--loss=cross-entropy expects result #0 to be static "
                     "float logits [..., classes] of rank >= 2, but got ")
           << forward.getResultTypes()[0];
  ArrayRef<int64_t> logitsShape = logitsType.getShape();
  int64_t classes = logitsShape.back();
  SmallVector<int64_t> labelShape(logitsShape.drop_back());
  int64_t rows = 1;
  for (int64_t d : labelShape)
    rows *= d;

  OpBuilder builder(forward);
  auto loss = cast<func::FuncOp>(builder.clone(*forward));
  loss.setSymName(name);
  loss.setPrivate();

  // The labels argument: an existing integer argument of the right shape,
  // or a new one.
  std::optional<unsigned> labelIndex;
  for (unsigned i = 0; i < loss.getNumArguments(); ++i)
    if (auto argName = loss.getArgAttrOfType<StringAttr>(i, tx::kNameAttrName))
      if (argName.getValue() == labels)
        labelIndex = i;
  Block &body = loss.getBody().front();
  if (labelIndex) {
    auto type = dyn_cast<RankedTensorType>(loss.getArgument(*labelIndex).getType());
    if (!type || !type.getElementType().isSignlessInteger() ||
        type.getShape() != ArrayRef<int64_t>(labelShape)) {
      loss.erase();
      return emitError(forward.getLoc(), "labels '")
             << labels << "' must be an integer tensor of shape ["
             << labelShape << "] to match logits " << logitsType
             << ", but has type " << forward.getArgument(*labelIndex).getType();
    }
  } else {
    labelIndex = loss.getNumArguments();
    auto type = RankedTensorType::get(labelShape,
                                      IntegerType::get(forward.getContext(), 64));
    if (failed(loss.insertArgument(
            *labelIndex, type,
            builder.getDictionaryAttr(
                builder.getNamedAttr(tx::kNameAttrName, builder.getStringAttr(labels))),
            forward.getLoc()))) {
      loss.erase();
      return emitError(forward.getLoc(), "cannot add the labels argument");
    }
  }

  auto ret = cast<func::ReturnOp>(body.getTerminator());
  ImplicitLocOpBuilder b(ret.getLoc(), ret);
  Value scores = ret.getOperand(0);
  Value target = loss.getArgument(*labelIndex);
  if (logitsType.getRank() > 2) {
    scores = ReshapeOp::create(
        b, RankedTensorType::get({rows, classes}, logitsType.getElementType()),
        scores);
    target = ReshapeOp::create(
        b,
        RankedTensorType::get(
            {rows}, cast<RankedTensorType>(target.getType()).getElementType()),
        target);
  }
  // ignore_index = -100 is torch.nn.functional.cross_entropy's default.
  Value value = SoftmaxCrossEntropyLossOp::create(
      b, RankedTensorType::get({}, logitsType.getElementType()), scores, target,
      /*weights=*/Value(), LossReduction::mean, b.getI64IntegerAttr(-100));
  func::ReturnOp::create(b, ValueRange{value});
  ret.erase();
  loss.setFunctionType(FunctionType::get(
      forward.getContext(), body.getArgumentTypes(), {value.getType()}));
  loss.setAllResultAttrs(ArrayRef<DictionaryAttr>{builder.getDictionaryAttr(
      builder.getNamedAttr(tx::kNameAttrName, builder.getStringAttr("loss")))});
  return loss;
}

/// A copy of |loss| named |name| with a trailing 0-d f32 argument
/// `loss_scale` that returns `loss * loss_scale` (in f32).
FailureOr<func::FuncOp> train_step::appendLossScale(func::FuncOp loss,
                                                    StringRef name) {
  OpBuilder builder(loss);
  auto scaled = cast<func::FuncOp>(builder.clone(*loss));
  scaled.setSymName(name);
  scaled.setPrivate();
  MLIRContext *context = loss.getContext();
  unsigned index = scaled.getNumArguments();
  if (failed(scaled.insertArgument(
          index, train_step::f32Scalar(context),
          builder.getDictionaryAttr(builder.getNamedAttr(
              tx::kNameAttrName, builder.getStringAttr("loss_scale"))),
          loss.getLoc()))) {
    scaled.erase();
    return emitError(loss.getLoc(), "cannot add the loss scale argument");
  }
  Block &body = scaled.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  ImplicitLocOpBuilder b(ret.getLoc(), ret);
  Value value = ret.getOperand(0);
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || type.getRank() != 0 || !isa<FloatType>(type.getElementType())) {
    scaled.erase();
    return emitError(loss.getLoc(),
                     "expected result #0 to be a scalar floating-point loss "
                     "(0-d tensor), but got ")
           << value.getType();
  }
  if (!type.getElementType().isF32())
    value = CastOp::create(b, train_step::f32Scalar(context), value);
  SmallVector<Value> results(ret.getOperands());
  results[0] = MulOp::create(b, value, scaled.getArgument(index));
  func::ReturnOp::create(b, results);
  ret.erase();
  scaled.setFunctionType(FunctionType::get(
      context, body.getArgumentTypes(), ValueRange(results).getTypes()));
  return scaled;
}

/// True when |value| reaches the labels operand of a cross-entropy op
/// through integer values only (reshapes, slices, casts of the labels; an
/// embedding lookup of token ids yields floats and stops the walk).
bool train_step::feedsLabels(Value value) {
  auto isInteger = [](Value v) {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    return type && isa<IntegerType>(type.getElementType());
  };
  SmallVector<Value> worklist{value};
  llvm::DenseSet<Value> seen{value};
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (auto loss = dyn_cast<SoftmaxCrossEntropyLossOp>(user))
        if (use.get() == loss.getLabels())
          return true;
      if (auto grad = dyn_cast<SoftmaxCrossEntropyGradOp>(user))
        if (use.get() == grad.getLabels())
          return true;
      for (Value result : user->getResults())
        if (isInteger(result) && seen.insert(result).second)
          worklist.push_back(result);
    }
  }
  return false;
}
