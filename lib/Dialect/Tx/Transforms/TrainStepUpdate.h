//===- TrainStepUpdate.h - the update of tx-build-train-step ----*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// Private to BuildTrainStep.cpp: the step's argument layout, and what the
// step computes after the gradient (unscaling, clipping, the optimizer, the
// loss-scale update, the results). Split out to keep the pass file short.
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_LIB_DIALECT_TX_TRANSFORMS_TRAINSTEPUPDATE_H
#define TXOPT_LIB_DIALECT_TX_TRANSFORMS_TRAINSTEPUPDATE_H

#include "TrainStepLoss.h"

#include "txopt/Dialect/Tx/Transforms/TrainStep.h"

#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/OperationSupport.h"

namespace mlir::txopt::tx::train_step {

/// A 0-d f32 constant.
Value f32Constant(ImplicitLocOpBuilder &b, double value);

inline NamedAttribute namedString(Builder &builder, StringRef key,
                                  StringRef value) {
  return builder.getNamedAttr(key, builder.getStringAttr(value));
}

/// One argument of the step function being built.
struct StepArg {
  Type type;
  NamedAttrList attrs;
  Location loc;
};

/// The step function's arguments (TrainStep.h's contract) and where each
/// group starts.
struct StepLayout {
  SmallVector<StepArg> args;
  /// Optimizer state per parameter, in argument order after the params.
  SmallVector<StringRef> stateRoles;
  unsigned numParams = 0, numBatch = 0;
  unsigned lrIndex = 0, stepIndex = 0, rngIndex = 0, dataIndex = 0;
  /// Loss scaling only.
  unsigned scaleIndex = 0, trackerIndex = 0;
  /// Gradient accumulation (gradAccum > 1) only: the first `grad_acc`
  /// argument (one per parameter, in parameter order) and `loss_acc`.
  int64_t gradAccum = 1;
  unsigned gradAccIndex = 0, lossAccIndex = 0;
};

/// Gradient accumulation: adds the accumulators of |layout| (arguments of
/// |entry|) to |lossValue| and |grads|, in place.
void addAccumulators(ImplicitLocOpBuilder &b, const StepLayout &layout,
                     Block *entry, Value &lossValue,
                     MutableArrayRef<Value> grads);

/// Builds the body of |step| after its gradient: unscaling, clipping, the
/// optimizer and the results (next state, each naming the argument it
/// replaces; loss, grad_norm[, skipped]), ending in the return. Fills
/// |results| and returns the result attributes.
SmallVector<Attribute> buildUpdate(OpBuilder &builder, Location loc,
                                   const TrainStepOptions &options,
                                   double weightDecay, const StepLayout &layout,
                                   ArrayRef<bool> decays, Block *entry,
                                   Value lossValue, SmallVector<Value> grads,
                                   SmallVectorImpl<Value> &results);

/// The attributes of a result that becomes argument |argIndex| of the next
/// step: the argument's tx.name and tx.next = |argIndex|.
DictionaryAttr carriedResultAttrs(Builder &builder, const StepLayout &layout,
                                  unsigned argIndex);

/// The recipe (`tx.train_step`) of a step built from |forward| with
/// |options|, for reports and for whoever reads the IR (TrainStepRecipe.cpp).
DictionaryAttr recipeAttr(Builder &builder, const TrainStepOptions &options,
                          double weightDecay, func::FuncOp forward);

} // namespace mlir::txopt::tx::train_step

#endif // TXOPT_LIB_DIALECT_TX_TRANSFORMS_TRAINSTEPUPDATE_H
