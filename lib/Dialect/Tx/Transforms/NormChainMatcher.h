//===- NormChainMatcher.h - tx-fuse-norms' chain matcher --------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// Private to FuseNorms.cpp: what matching a decomposed LayerNorm / RMSNorm
// chain finds (NormChainMatcher.cpp), for the patterns that rewrite it.
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_LIB_DIALECT_TX_TRANSFORMS_NORMCHAINMATCHER_H
#define TXOPT_LIB_DIALECT_TX_TRANSFORMS_NORMCHAINMATCHER_H

#include "txopt/Dialect/Tx/IR/TxOps.h"

#include "mlir/IR/BuiltinTypes.h"

#include <string>

namespace mlir::txopt::tx::norm_fusion {

enum class NormKind { LayerNorm, RMSNorm };

inline StringRef kindName(NormKind kind) {
  return kind == NormKind::LayerNorm ? "layer_norm" : "rms_norm";
}

/// A decomposed chain that can be rewritten as one fused op.
struct NormChain {
  /// Operand of the fused op: the chain's input, or what a widening Cast fed
  /// into it when the chain also ends with the Cast back.
  Value input;
  /// Null when the chain has no `* gamma` / `+ beta`.
  Value gamma, beta;
  float epsilon = 0.0f;
  /// The op whose result the fused op's result replaces.
  Operation *root = nullptr;
  /// Every op of the chain in data-flow order (so reversed, it erases cleanly).
  SmallVector<Operation *> ops;
};

/// What matching around one reduce_mean found.
struct NormMatch {
  enum Status { NotACandidate, NearMiss, Matched };
  Status status = NotACandidate;
  NormKind kind = NormKind::RMSNorm;
  /// The first reduce_mean of the chain: where near-miss remarks go.
  Operation *anchor = nullptr;
  std::string reason;
  NormChain chain;
};

inline RankedTensorType tensorType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

inline bool isNormElementType(Type type) {
  return type.isF16() || type.isBF16() || type.isF32();
}

/// |attr| as MLIR prints it, for remarks.
std::string printed(Attribute attr);

/// Matches the decomposed LayerNorm / RMSNorm chain around |variance|, the
/// reduce_mean of a square (see DecomposedNormMatcher).
NormMatch matchDecomposedNorm(ReduceMeanOp variance);

} // namespace mlir::txopt::tx::norm_fusion

#endif // TXOPT_LIB_DIALECT_TX_TRANSFORMS_NORMCHAINMATCHER_H
