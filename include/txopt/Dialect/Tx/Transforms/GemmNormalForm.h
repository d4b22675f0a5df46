//===- GemmNormalForm.h - GEMMs as tx.blas_gemm --------------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// The transformation of tx-gemm-normal-form (Passes.td) as functions, so
// that the GPU lowering can run it and name the GEMMs it could not rewrite.
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_DIALECT_TX_TRANSFORMS_GEMMNORMALFORM_H
#define TXOPT_DIALECT_TX_TRANSFORMS_GEMMNORMALFORM_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/SmallVector.h"

#include <string>
#include <utility>

namespace mlir::txopt::tx {

/// Whether |op| is a tx.transpose that swaps the last two dims and keeps
/// the others: the transpose a GEMM's flag expresses.
bool swapsLastTwoDims(Operation *op);

/// Why the tx.matmul, tx.gemm or tx.fp8_matmul |op| has no tx.blas_gemm
/// form (a sentence naming the operand types or shapes), or "" when it has.
std::string whyNotGemmNormalForm(Operation *op);

/// Whether the transpose |op| disappears into the flags of the GEMMs that
/// read it: it swaps the last two dims, and every reader is a GEMM with a
/// normal form that can read it through a flag (an FP8 GEMM only as `b`).
bool isFoldedIntoGemms(Operation *op);

struct GemmNormalFormResult {
  unsigned rewritten = 0;         ///< GEMMs now tx.blas_gemm
  unsigned foldedTransposes = 0;  ///< transposes now flags
  /// GEMMs left as they were, with the reason (whyNotGemmNormalForm).
  llvm::SmallVector<std::pair<Operation *, std::string>> left;
};

/// Rewrites every GEMM of |func| that has a normal form into tx.blas_gemm,
/// its operands' folded transposes into its flags.
GemmNormalFormResult toGemmNormalForm(func::FuncOp func);

} // namespace mlir::txopt::tx

#endif // TXOPT_DIALECT_TX_TRANSFORMS_GEMMNORMALFORM_H
