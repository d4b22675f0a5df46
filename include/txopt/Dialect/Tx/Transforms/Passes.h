//===- Passes.h - tx dialect passes -----------------------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// Generated pass declarations plus the pattern entry points they expose.
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_DIALECT_TX_TRANSFORMS_PASSES_H
#define TXOPT_DIALECT_TX_TRANSFORMS_PASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"
// Before the generated options: their enum types and parsers.
#include "txopt/Dialect/Tx/Transforms/PassOptions.h"

namespace mlir::txopt::tx {

#define GEN_PASS_DECL
#include "txopt/Dialect/Tx/Transforms/Passes.h.inc"

/// Patterns behind tx-fuse-norms: ONNX LayerNormalization / RMSNormalization
/// and decomposed LayerNorm / RMSNorm chains over the innermost dim become
/// tx.layer_norm / tx.rms_norm. Reusable from other passes and pipelines.
void populateFuseNormsPatterns(RewritePatternSet &patterns);

#define GEN_PASS_REGISTRATION
#include "txopt/Dialect/Tx/Transforms/Passes.h.inc"

/// Module attributes tx-untie-parameters records (Passes.td): the untied
/// parameters, each with the names of its copies, and the shared ones kept
/// tied, each with the reason.
inline constexpr StringLiteral kUntiedParametersAttrName = "tx.untied_parameters";
inline constexpr StringLiteral kTiedParametersAttrName = "tx.tied_parameters";

/// Head dims cuDNN's fused SDPA (what tx.attention runs as on the GPU)
/// takes on sm_90: multiples of 8, at most 256. tx-fuse-attention's
/// cudnn-limits and the GPU lowering both ask this.
inline bool isCudnnAttentionHeadDim(int64_t dim) {
  return dim % 8 == 0 && dim <= 256;
}

} // namespace mlir::txopt::tx

#endif // TXOPT_DIALECT_TX_TRANSFORMS_PASSES_H
