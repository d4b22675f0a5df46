//===- GemmTransposes.h - transposes moved to where GEMMs fold them -*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// The transformation of tx-gemm-transposes (Passes.td) as functions, so
// that the GPU lowering runs it on each function it lowers, before
// tx-rematerialize and tx-gemm-normal-form.
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_DIALECT_TX_TRANSFORMS_GEMMTRANSPOSES_H
#define TXOPT_DIALECT_TX_TRANSFORMS_GEMMTRANSPOSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::txopt::tx {

struct GemmTransposesResult {
  unsigned castsMoved = 0;         ///< casts now before the transpose GEMMs fold
  unsigned resultsTransposed = 0;  ///< GEMMs now computing their result transposed
};

/// Moves each cast of a last-two-dims transpose that only GEMMs read before
/// the transpose, then makes each 2-D GEMM whose result is read only
/// through such a transpose (maybe after a cast) compute the transposed
/// result itself, its operands swapped.
GemmTransposesResult moveTransposesIntoGemms(func::FuncOp func);

} // namespace mlir::txopt::tx

#endif // TXOPT_DIALECT_TX_TRANSFORMS_GEMMTRANSPOSES_H
