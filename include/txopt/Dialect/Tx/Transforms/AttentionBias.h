//===- AttentionBias.h - attention masks as cuDNN's bias -----------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// The transformation of tx-attention-bias (Passes.td) as a function, which
// the GPU lowering runs on each function before its kernel grouping.
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_DIALECT_TX_TRANSFORMS_ATTENTIONBIAS_H
#define TXOPT_DIALECT_TX_TRANSFORMS_ATTENTIONBIAS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::txopt::tx {

/// Rewrites the mask of every tx.attention and tx.attention_grad of |func|
/// that is not already a [B|1, H|1, Tq, Tk] tensor of q's element type into
/// one (a tx.expand of its query and key dims, then a tx.cast), shared by
/// the ops reading the same mask; returns how many masks it rewrote.
unsigned masksToAttentionBias(func::FuncOp func);

} // namespace mlir::txopt::tx

#endif // TXOPT_DIALECT_TX_TRANSFORMS_ATTENTIONBIAS_H
