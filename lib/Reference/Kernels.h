//===- Kernels.h - op implementations of the reference executor -*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// Internal to lib/Reference. Each family of ops lives in its own file and
// exposes one entry point with the same contract:
//
//   llvm::Expected<bool> evalXxxOp(Operation *op, const KernelArgs &args);
//
// returns false when |op| is not in the family, true after filling
// args.results (one tensor per op result, of the result's type), or an error
// (a one-line message without location; the executor adds op and location).
// Kernels compute in double and leave rounding to the executor, except where
// an op's semantics round inside it (Range accumulates in its element type).
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_LIB_REFERENCE_KERNELS_H
#define TXOPT_LIB_REFERENCE_KERNELS_H

#include "txopt/Reference/Executor.h"
#include "txopt/Reference/FloatFormats.h"
#include "txopt/Reference/Tensor.h"

#include "mlir/IR/Operation.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"

namespace mlir::txopt::reference {

struct KernelArgs {
  llvm::SmallVector<const Tensor *, 4> operands;
  llvm::SmallVector<Tensor, 2> &results;
  const ExecutorOptions &options;
};

/// A zero-filled tensor of the type of |op|'s result |index|.
inline Tensor makeResult(Operation *op, unsigned index = 0) {
  return Tensor(cast<RankedTensorType>(op->getResult(index).getType()));
}

/// Rounds |value| to |type| unless the executor runs in f64 mode. Inline:
/// kernels call it per element, mostly for f32.
inline double roundUnlessF64(Type type, double value,
                             const ExecutorOptions &options) {
  if (options.computeInF64)
    return value;
  if (isa<Float32Type>(type))
    return roundToFloat32(value);
  return roundToType(cast<FloatType>(type), value);
}

/// tx.dropout's uniform draw in [0, 1) for element |index| (its
/// description has the generator); the element is kept when it is >= the
/// ratio. tx.attention's dropout draws the same (ElementwiseOps.cpp).
double dropoutUniform(uint64_t seed, uint64_t key, uint64_t index);

llvm::Expected<bool> evalElementwiseOp(Operation *op, const KernelArgs &args);
llvm::Expected<bool> evalShapeOp(Operation *op, const KernelArgs &args);
llvm::Expected<bool> evalLinalgOp(Operation *op, const KernelArgs &args);
llvm::Expected<bool> evalReductionOp(Operation *op, const KernelArgs &args);
llvm::Expected<bool> evalTrainingOp(Operation *op, const KernelArgs &args);
llvm::Expected<bool> evalAttentionOp(Operation *op, const KernelArgs &args);
llvm::Expected<bool> evalGradientOp(Operation *op, const KernelArgs &args);
llvm::Expected<bool> evalPrecisionOp(Operation *op, const KernelArgs &args);
llvm::Expected<bool> evalCollectiveOp(Operation *op, const KernelArgs &args);

/// The element of `data` (shape |dataShape|) that each of the |resultElements|
/// elements of `tx.gather_nd data, indices` reads: tuple t's slice element s
/// reads `batch(t) * block + sum_j index_j * stride_j + s`. tx.gather_nd
/// gathers through it and tx.gather_nd_grad scatters back through it. Fails
/// on an index out of range.
llvm::Expected<std::vector<int64_t>>
gatherNDIndexMap(llvm::ArrayRef<int64_t> dataShape, const Tensor &indices,
                 int64_t batchDims, int64_t resultElements);

/// The element of `data` (shape |dataShape|) that each element of |indices|
/// names in `tx.gather_elements data, indices` along |axis| (>= 0): its own
/// index with the axis coordinate replaced by the index it holds.
/// tx.gather_elements gathers through it and tx.gather_elements_grad
/// scatters back through it. Fails on an index out of range.
llvm::Expected<std::vector<int64_t>>
gatherElementsIndexMap(llvm::ArrayRef<int64_t> dataShape, const Tensor &indices,
                       int64_t axis);

} // namespace mlir::txopt::reference

#endif // TXOPT_LIB_REFERENCE_KERNELS_H
