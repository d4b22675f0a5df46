//===- Rematerialize.h - recompute stored values for the backward -*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// The transformation of tx-rematerialize (Passes.td) as a function, so that
// the GPU lowering can run it and report what it freed.
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_DIALECT_TX_TRANSFORMS_REMATERIALIZE_H
#define TXOPT_DIALECT_TX_TRANSFORMS_REMATERIALIZE_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>

namespace mlir::txopt::tx {

struct RematerializeResult {
  unsigned values = 0;  ///< stored values now recomputed for late readers
  uint64_t bytes = 0;   ///< their total size: what no longer stays alive
  /// The copies computed for the late readers (each the clone of a stored
  /// value's defining op).
  llvm::SmallVector<Value> recomputed;
};

/// Recomputes, in |func|'s body, every stored elementwise value whose late
/// readers can read a copy computed from values alive there anyway.
RematerializeResult rematerializeForBackward(func::FuncOp func);

} // namespace mlir::txopt::tx

#endif // TXOPT_DIALECT_TX_TRANSFORMS_REMATERIALIZE_H
