//===- CrossEntropyRows.h - cross-entropy over rows of classes -*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// The transformation of tx-cross-entropy-rows (Passes.td) as a function,
// which the GPU lowering runs on each function before its kernel grouping.
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_DIALECT_TX_TRANSFORMS_CROSSENTROPYROWS_H
#define TXOPT_DIALECT_TX_TRANSFORMS_CROSSENTROPYROWS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::txopt::tx {

/// Rewrites every tx.softmax_cross_entropy_loss and
/// tx.softmax_cross_entropy_grad of |func| whose scores are [N, C, d...]
/// (rank > 2) into the same op over [N * d..., C] rows: the scores
/// transposed to put the classes last and flattened, the labels (and a
/// per-position loss or its gradient) flattened, the results brought back
/// to their shapes. Returns how many ops it rewrote.
unsigned crossEntropyOverRows(func::FuncOp func);

} // namespace mlir::txopt::tx

#endif // TXOPT_DIALECT_TX_TRANSFORMS_CROSSENTROPYROWS_H
