//===- TrainStepLoss.h - loss wrappers of tx-build-train-step ---*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// Private to BuildTrainStep.cpp: the functions that turn a forward into the
// loss the step differentiates (appended cross-entropy, loss scaling) and
// the labels analysis. Split out to keep the pass file readable.
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_LIB_DIALECT_TX_TRANSFORMS_TRAINSTEPLOSS_H
#define TXOPT_LIB_DIALECT_TX_TRANSFORMS_TRAINSTEPLOSS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"

namespace mlir::txopt::tx::train_step {

inline RankedTensorType f32Scalar(MLIRContext *context) {
  return RankedTensorType::get({}, Float32Type::get(context));
}

/// A copy of |forward| named |name| that returns the mean cross-entropy of
/// its result #0 (logits [..., C]) against integer labels: the argument
/// called |labels|, or a new trailing i64 argument of that name.
FailureOr<func::FuncOp> appendCrossEntropy(func::FuncOp forward,
                                           StringRef labels, StringRef name);

/// A copy of |loss| named |name| with a trailing 0-d f32 argument
/// `loss_scale` that returns `loss * loss_scale` (in f32).
FailureOr<func::FuncOp> appendLossScale(func::FuncOp loss, StringRef name);

/// True when |value| reaches the labels operand of a cross-entropy op
/// through integer values only.
bool feedsLabels(Value value);

} // namespace mlir::txopt::tx::train_step

#endif // TXOPT_LIB_DIALECT_TX_TRANSFORMS_TRAINSTEPLOSS_H
