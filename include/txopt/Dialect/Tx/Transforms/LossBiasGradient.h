//===- LossBiasGradient.h - an LM-head bias gradient from the rounded loss gradient -*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// The transformation of tx-loss-bias-gradient (Passes.td) as a function, so
// that the GPU lowering can run it beside tx-gemm-bias.
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_DIALECT_TX_TRANSFORMS_LOSSBIASGRADIENT_H
#define TXOPT_DIALECT_TX_TRANSFORMS_LOSSBIASGRADIENT_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/SmallVector.h"

#include <string>
#include <utility>

namespace mlir::txopt::tx {

struct LossBiasGradientResult {
  unsigned rewritten = 0; ///< sums that now read the rounded gradient
  /// Column sums of a loss gradient left as they were, with the reason.
  llvm::SmallVector<std::pair<Operation *, std::string>> left;
};

/// Makes each column sum of an f32 loss gradient (tx.softmax_cross_entropy_grad,
/// through reshapes) that is otherwise read only by one cast to bf16/f16
/// (for the LM head's GEMMs) sum that rounded copy instead, as PyTorch's
/// autocast does: the f32 gradient then has one reader, the cast, and the
/// loss kernel writes it rounded (never the f32 logits' gradient).
LossBiasGradientResult sumRoundedLossGradients(func::FuncOp func);

} // namespace mlir::txopt::tx

#endif // TXOPT_DIALECT_TX_TRANSFORMS_LOSSBIASGRADIENT_H
