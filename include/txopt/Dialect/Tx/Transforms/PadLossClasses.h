//===- PadLossClasses.h - aligned class rows for the LM head -*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// The transformation of tx-pad-loss-classes (Passes.td) as a function.
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_DIALECT_TX_TRANSFORMS_PADLOSSCLASSES_H
#define TXOPT_DIALECT_TX_TRANSFORMS_PADLOSSCLASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::txopt::tx {

/// The smallest class count tx-pad-loss-classes pads, and the multiple it
/// pads to (8 elements: a 16-byte row of bf16 or f16 logits).
constexpr int64_t kPadLossMinClasses = 1024;
constexpr int64_t kPadLossClassMultiple = 8;

/// The value the padded classes' logits get: finite in every float type
/// logits are computed in (f16's largest is 65504, so no -inf whose
/// arithmetic could make a NaN), and far enough below any real logit that
/// exp(value - max) is exactly 0 in f32.
constexpr double kPadLossLogit = -30000.0;

/// The discardable attribute a padded loss carries: its class count before
/// padding (txopt's report lists each padded loss by it).
constexpr llvm::StringLiteral kPaddedClassesAttr = "tx.padded_classes";

/// Pads the classes of every tx.softmax_cross_entropy_loss of |func| whose
/// scores come from a tx.matmul against a [K, C] weight (through an
/// optional bias add and reshapes) with C >= kPadLossMinClasses not a
/// multiple of kPadLossClassMultiple. Returns how many losses it padded.
unsigned padLossClasses(func::FuncOp func);

} // namespace mlir::txopt::tx

#endif // TXOPT_DIALECT_TX_TRANSFORMS_PADLOSSCLASSES_H
