//===- TrainStepUpdate.cpp - the update of tx-build-train-step ------------===//
//
// SPDX-License-Identifier: Apache-2.0
// What the training step computes after the gradient: unscaling and the
// finite check (loss scaling), the global norm and clipping, the fused
// optimizer per weight-decay group, GradScaler's scale update, the results.
//
//===----------------------------------------------------------------------===//

#include "TrainStepUpdate.h"

#include "txopt/Dialect/Tx/IR/TxOps.h"
#include "txopt/Dialect/Tx/IR/StepContract.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::tx;
using namespace mlir::txopt::tx::train_step;

Value train_step::f32Constant(ImplicitLocOpBuilder &b, double value) {
  auto type = f32Scalar(b.getContext());
  return ConstantOp::create(
      b, cast<ElementsAttr>(DenseElementsAttr::get(
             type, ArrayRef<Attribute>{b.getF32FloatAttr(value)})));
}

void train_step::addAccumulators(ImplicitLocOpBuilder &b,
                                 const StepLayout &layout, Block *entry,
                                 Value &lossValue,
                                 MutableArrayRef<Value> grads) {
  lossValue =
      AddOp::create(b, entry->getArgument(layout.lossAccIndex), lossValue);
  for (auto [i, grad] : llvm::enumerate(grads))
    grad = AddOp::create(b, entry->getArgument(layout.gradAccIndex + i), grad);
}

DictionaryAttr train_step::carriedResultAttrs(Builder &builder, const StepLayout &layout,
                                              unsigned argIndex) {
  return builder.getDictionaryAttr(
      {builder.getNamedAttr(tx::kNameAttrName, layout.args[argIndex].attrs.get(tx::kNameAttrName)),
       builder.getNamedAttr(kNextAttrName, builder.getI64IntegerAttr(argIndex))});
}

namespace {

/// Loss scaling: divides the loss and |grads| by |scale| (exact: a power of
/// two) and returns `skipped`, true when any gradient is not finite (one
/// check over all: g - g is 0 for finite g and NaN otherwise).
Value unscaleAndCheckFinite(ImplicitLocOpBuilder &b, Value scale,
                            Value &lossValue, MutableArrayRef<Value> grads) {
  lossValue = DivOp::create(b, lossValue, scale);
  Value total;
  for (Value &grad : grads) {
    grad = DivOp::create(b, grad, scale);
    Value partial = ReduceSumOp::create(b, SubOp::create(b, grad, grad),
                                        b.getDenseI64ArrayAttr({}), nullptr);
    total = total ? AddOp::create(b, total, partial) : partial;
  }
  return IsNaNOp::create(b, RankedTensorType::get({}, b.getI1Type()), total);
}

/// The global L2 norm of |grads|, reported before clipping (as
/// torch.nn.utils.clip_grad_norm_ returns it); with |gradClip| > 0 the
/// gradients are scaled by torch's coef = max_norm / (norm + 1e-6) when it
/// is below 1.
Value clipGradients(ImplicitLocOpBuilder &b, double gradClip,
                    MutableArrayRef<Value> grads) {
  Value sumOfSquares;
  for (Value grad : grads) {
    Value square = MulOp::create(b, grad, grad);
    Value partial = ReduceSumOp::create(b, square, b.getDenseI64ArrayAttr({}),
                                        /*keep_dims=*/nullptr);
    sumOfSquares = sumOfSquares ? AddOp::create(b, sumOfSquares, partial)
                                : partial;
  }
  Value gradNorm = SqrtOp::create(b, sumOfSquares);
  if (gradClip > 0) {
    Value one = f32Constant(b, 1.0);
    Value coef = DivOp::create(
        b, f32Constant(b, gradClip),
        AddOp::create(b, gradNorm, f32Constant(b, 1e-6)));
    Value clipped = WhereOp::create(b, LessOp::create(b, coef, one), coef, one);
    for (Value &grad : grads)
      grad = MulOp::create(b, grad, clipped);
  }
  return gradNorm;
}

/// The optimizer: one fused multi-tensor op per weight-decay group (the
/// decayed group first). Fills |newParams| and |newState| (in the layout's
/// state order).
void applyOptimizer(ImplicitLocOpBuilder &b, const TrainStepOptions &options,
                    double weightDecay, const StepLayout &layout, Block *entry,
                    ArrayRef<Value> grads, ArrayRef<bool> decays, Value newStep,
                    SmallVectorImpl<Value> &newParams,
                    SmallVectorImpl<Value> &newState) {
  unsigned numParams = layout.numParams;
  Value lr = entry->getArgument(layout.lrIndex);
  newParams.assign(numParams, Value());
  newState.assign(layout.stateRoles.size() * numParams, Value());
  for (bool decayGroup : {true, false}) {
    SmallVector<unsigned> members;
    for (unsigned i = 0; i < numParams; ++i)
      if (decays[i] == decayGroup)
        members.push_back(i);
    if (members.empty())
      continue;
    auto pick = [&](auto get) {
      SmallVector<Value> values;
      for (unsigned i : members)
        values.push_back(get(i));
      return values;
    };
    SmallVector<Value> params = pick([&](unsigned i) { return entry->getArgument(i); });
    SmallVector<Value> groupGrads = pick([&](unsigned i) { return grads[i]; });
    SmallVector<Type> types = llvm::to_vector(ValueRange(params).getTypes());
    APFloat groupDecay(decayGroup ? weightDecay : 0.0);
    if (options.optimizer == OptimizerKind::SGD) {
      SmallVector<Value> buffers = pick([&](unsigned i) -> Value {
        if (options.momentum > 0)
          return entry->getArgument(numParams + i);
        return ConstantOp::create(
            b, cast<ElementsAttr>(b.getZeroAttr(grads[i].getType())));
      });
      auto sgd = SGDOp::create(b, types, types, params, groupGrads, buffers, lr,
                               APFloat(options.momentum), APFloat(0.0),
                               groupDecay, /*nesterov=*/false);
      for (auto [k, i] : llvm::enumerate(members)) {
        newParams[i] = sgd.getNewParams()[k];
        if (options.momentum > 0)
          newState[i] = sgd.getNewMomentumBuffer()[k];
      }
      continue;
    }
    SmallVector<Value> expAvg =
        pick([&](unsigned i) { return entry->getArgument(numParams + i); });
    SmallVector<Value> expAvgSq =
        pick([&](unsigned i) { return entry->getArgument(2 * numParams + i); });
    auto adam = AdamOp::create(
        b, types, types, types, params, groupGrads, expAvg, expAvgSq, lr,
        newStep,
        options.optimizer == OptimizerKind::AdamW ? AdamMode::adamw
                                                  : AdamMode::adam,
        APFloat(options.beta1), APFloat(options.beta2),
        APFloat(options.epsilon),
        EpsilonPlacement::outside_sqrt, groupDecay, /*bias_correction=*/true);
    for (auto [k, i] : llvm::enumerate(members)) {
      newParams[i] = adam.getNewParams()[k];
      newState[i] = adam.getNewExpAvg()[k];
      newState[numParams + i] = adam.getNewExpAvgSq()[k];
    }
  }
}

/// GradScaler.update(): the next (scale, growth tracker), backing off on a
/// skipped step and growing after `interval` clean steps in a row.
std::pair<Value, Value> updateLossScale(ImplicitLocOpBuilder &b, Value skipped,
                                        Value scale, Value tracker,
                                        int64_t interval) {
  Value zero = f32Constant(b, 0.0);
  Value counted = WhereOp::create(
      b, skipped, zero, AddOp::create(b, tracker, f32Constant(b, 1.0)));
  Value grow = GreaterOrEqualOp::create(
      b, RankedTensorType::get({}, b.getI1Type()), counted,
      f32Constant(b, static_cast<double>(interval)));
  Value grown = WhereOp::create(
      b, grow, MulOp::create(b, scale, f32Constant(b, 2.0)), scale);
  Value newScale = WhereOp::create(
      b, skipped, MulOp::create(b, scale, f32Constant(b, 0.5)), grown);
  Value newTracker = WhereOp::create(b, grow, zero, counted);
  return {newScale, newTracker};
}

} // namespace

SmallVector<Attribute> train_step::buildUpdate(OpBuilder &builder, Location loc,
                                   const TrainStepOptions &options,
                                   double weightDecay, const StepLayout &layout,
                                   ArrayRef<bool> decays, Block *entry,
                                   Value lossValue, SmallVector<Value> grads,
                                   SmallVectorImpl<Value> &results) {
  ImplicitLocOpBuilder b(loc, builder);
  if (layout.gradAccum > 1) {
    // The mean over the micro-batches: the accumulated sums (this step's
    // micro-batch included) divided by N, before unscaling and the norm,
    // so that everything after sees what one N-times larger batch of a
    // mean loss would give.
    addAccumulators(b, layout, entry, lossValue, grads);
    Value count = f32Constant(b, static_cast<double>(layout.gradAccum));
    lossValue = DivOp::create(b, lossValue, count);
    for (Value &grad : grads)
      grad = DivOp::create(b, grad, count);
  }
  Value skipped;
  if (options.lossScaling)
    skipped = unscaleAndCheckFinite(
        b, entry->getArgument(layout.scaleIndex), lossValue, grads);
  Value gradNorm = clipGradients(b, options.gradClip, grads);
  Value newStep = AddOp::create(b, entry->getArgument(layout.stepIndex),
                                f32Constant(b, 1.0));
  SmallVector<Value> newParams, newState;
  applyOptimizer(b, options, weightDecay, layout, entry, grads, decays,
                 newStep, newParams, newState);

  unsigned numParams = layout.numParams;
  if (skipped) {
    // A skipped step keeps every bit of the state it was given.
    auto keepIfSkipped = [&](Value next, unsigned argIndex) {
      return WhereOp::create(b, skipped, entry->getArgument(argIndex), next)
          .getResult();
    };
    for (unsigned i = 0; i < numParams; ++i)
      newParams[i] = keepIfSkipped(newParams[i], i);
    for (unsigned i = 0; i < newState.size(); ++i)
      newState[i] = keepIfSkipped(newState[i], numParams + i);
    newStep = keepIfSkipped(newStep, layout.stepIndex);
  }

  SmallVector<Attribute> resultAttrs;
  auto carry = [&](Value value, unsigned argIndex) {
    results.push_back(value);
    resultAttrs.push_back(carriedResultAttrs(builder, layout, argIndex));
  };
  for (unsigned i = 0; i < numParams; ++i)
    carry(newParams[i], i);
  for (unsigned i = 0; i < newState.size(); ++i)
    carry(newState[i], numParams + i);
  if (layout.gradAccum > 1) {
    // The next step's accumulation starts from zero (also after a step
    // loss scaling skipped: its gradients are discarded).
    for (unsigned i = 0; i < numParams; ++i) {
      Type type = entry->getArgument(layout.gradAccIndex + i).getType();
      carry(ConstantOp::create(b, cast<ElementsAttr>(b.getZeroAttr(type))),
            layout.gradAccIndex + i);
    }
    carry(f32Constant(b, 0.0), layout.lossAccIndex);
  }
  carry(newStep, layout.stepIndex);
  if (skipped) {
    auto [newScale, newTracker] = updateLossScale(
        b, skipped, entry->getArgument(layout.scaleIndex),
        entry->getArgument(layout.trackerIndex), options.lossScaleInterval);
    carry(newScale, layout.scaleIndex);
    carry(newTracker, layout.trackerIndex);
  }
  auto named = [&](StringRef value) {
    return builder.getDictionaryAttr(namedString(builder, tx::kNameAttrName, value));
  };
  results.push_back(lossValue);
  resultAttrs.push_back(named("loss"));
  results.push_back(gradNorm);
  resultAttrs.push_back(named("grad_norm"));
  if (skipped) {
    results.push_back(skipped);
    resultAttrs.push_back(named("skipped"));
  }
  func::ReturnOp::create(b, results);
  return resultAttrs;
}
