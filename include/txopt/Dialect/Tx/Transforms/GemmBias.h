//===- GemmBias.h - bias adds as GEMM epilogues --------------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// The transformation of tx-gemm-bias (Passes.td) as a function, so that the
// GPU lowering can run it after tx-gemm-normal-form.
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_DIALECT_TX_TRANSFORMS_GEMMBIAS_H
#define TXOPT_DIALECT_TX_TRANSFORMS_GEMMBIAS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/SmallVector.h"

#include <string>
#include <utility>

namespace mlir::txopt::tx {

struct GemmBiasResult {
  unsigned folded = 0; ///< bias adds now the `c` of their GEMM
  /// Bias adds of a GEMM's result left where they were, with the reason.
  llvm::SmallVector<std::pair<Operation *, std::string>> left;
};

/// Folds each row-vector bias added to a tx.blas_gemm's result (maybe after
/// a cast) into the GEMM as its `c` (beta 1), where the add would otherwise
/// be a kernel of its own: every reader of the sum is a library call
/// reached through views only (reshapes; before tx.attention and its
/// gradient also the head split and the cast back to the GEMM's type).
GemmBiasResult foldBiasesIntoGemms(func::FuncOp func);

/// Whether |shape| is a row vector over |n| columns ([n] or [1, ..., n]):
/// a bias cuBLASLt's epilogue can add (tx-gemm-bias, tx-gemm-gelu).
bool isRowVectorOver(ArrayRef<int64_t> shape, int64_t n);

/// The row-vector |bias| as the epilogue takes it, built at |b|: [N] of the
/// element type of |gemmType| (a GEMM result of N columns). Under
/// --precision=bf16 the bias is rounded to bf16 and the sum rounds once,
/// as PyTorch's autocast linear does (its bias goes to cuBLASLt's epilogue
/// in bf16 too).
Value biasAsEpilogueRow(OpBuilder &b, Location loc, Value bias, RankedTensorType gemmType);

} // namespace mlir::txopt::tx

#endif // TXOPT_DIALECT_TX_TRANSFORMS_GEMMBIAS_H
