//===- GemmGelu.h - tanh GELUs as GEMM epilogues -------------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// The transformation of tx-gemm-gelu (Passes.td) as a function, so that the
// GPU lowering can run it after tx-gemm-bias.
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_DIALECT_TX_TRANSFORMS_GEMMGELU_H
#define TXOPT_DIALECT_TX_TRANSFORMS_GEMMGELU_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/SmallVector.h"

#include <string>
#include <utility>

namespace mlir::txopt::tx {

struct GemmGeluResult {
  unsigned folded = 0; ///< GELUs now computed by their GEMM's epilogue
  /// tanh-GELU chains over a GEMM's result left as they were, with the
  /// reason (anchored at the chain's tanh).
  llvm::SmallVector<std::pair<Operation *, std::string>> left;
};

/// Rewrites each tanh GELU of a bf16/f16 tx.blas_gemm's result (plus a row
/// bias) whose output GEMMs read in the GEMM's type into one
/// tx.blas_gemm_gelu: the GEMM writes the GELU's output and the
/// pre-activation (which the backward reads) in one pass, instead of a
/// kernel reading the pre-activation back to compute the GELU.
GemmGeluResult foldGelusIntoGemms(func::FuncOp func);

} // namespace mlir::txopt::tx

#endif // TXOPT_DIALECT_TX_TRANSFORMS_GEMMGELU_H
