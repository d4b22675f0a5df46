//===- AttentionCasts.h - casts moved off attention's layout chains -*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// The transformation of tx-attention-casts (Passes.td) as a function, and
// the queries about attention operands it shares with the GPU lowering's
// strided views (lib/Target/CUDA/AttentionLayouts.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_DIALECT_TX_TRANSFORMS_ATTENTIONCASTS_H
#define TXOPT_DIALECT_TX_TRANSFORMS_ATTENTIONCASTS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/SmallVector.h"

namespace mlir::txopt::tx {

/// Ops that only move elements, one input (transpose, reshape, squeeze,
/// unsqueeze, identity): the links of a head split or merge chain.
bool isAttentionLayoutOp(Operation *op);

/// The q, k, v (and dO) operands of a tx.attention or tx.attention_grad;
/// empty for any other op.
llvm::SmallVector<Value, 4> attentionInputs(Operation *op);

/// The o (tx.attention) or dQ, dK, dV (tx.attention_grad) results; empty
/// for any other op.
llvm::SmallVector<Value, 4> attentionResults(Operation *op);

/// Whether |user| is an attention op reading |v| as q, k, v or dO.
bool readsAsAttentionInput(Operation *user, Value v);

struct AttentionCastsResult {
  unsigned hoisted = 0;  ///< narrowing casts moved up a link (or dropped)
  unsigned sunk = 0;     ///< widening casts moved down a link (or dropped)
};

/// Moves each f32 -> bf16/f16 cast of an attention input up its layout
/// chain (through splits whose every piece is cast alike) and each
/// bf16/f16 -> f32 cast of an attention result down past layout ops and
/// concats whose every operand is cast alike; a cast back to the narrow
/// type of a widened narrow value is that value.
AttentionCastsResult moveCastsOffAttentionLayouts(func::FuncOp func);

} // namespace mlir::txopt::tx

#endif // TXOPT_DIALECT_TX_TRANSFORMS_ATTENTIONCASTS_H
