//===- KernelUtils.h - helpers shared by the kernel builders ----*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// Small helpers of the kernel families (ElementalKernels, ReductionKernels,
// RowKernels, ScatterKernels, OptimizerKernels, FP8Kernels): shapes, grid
// sizes, and the ordered f32 combination steps reductions share.
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_LIB_TARGET_CUDA_KERNELUTILS_H
#define TXOPT_LIB_TARGET_CUDA_KERNELUTILS_H

#include "KernelBuilder.h"
#include "Lowering.h"

#include "mlir/IR/BuiltinTypes.h"

#include <algorithm>

namespace mlir::txopt::cuda {

inline RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// ceil(n / d) as a grid size: at least 1.
inline unsigned ceilDiv(int64_t n, int64_t d) {
  return static_cast<unsigned>(std::max<int64_t>((n + d - 1) / d, 1));
}

/// One step of a sum or max reduction, in f32 (the GPU's reductions
/// accumulate in f32; an f64 element is narrowed first).
Value combine(ImplicitLocOpBuilder &b, Value acc, Value v, bool isMax);

/// Writes a reduction's f32 |sum| (a mean already divided) at |at| of
/// |result|: widened for an f64 result, rounded to its element type.
void storeReduced(KernelBuilder &k, Value result, Value at, Value sum);

/// Column sums (or maxima) of an f32 scratch buffer of |parts| rows by
/// |cols| columns, in a fixed order: block c covers columns [32c, 32c + 32);
/// warp w combines rows w, w + 8, ... of its lane's column, then warp 0
/// combines the 8 warp results in order and |finish| stores the total. Rows
/// are spread over 8 warps (not one thread walking all of them) so enough
/// loads are in flight; the order never depends on timing.
LogicalResult lowerPartialColumnSums(
    LoweringContext &ctx, Operation *op, llvm::ArrayRef<Value> outputs,
    unsigned partialBuffer, int64_t parts, int64_t cols, bool isMax,
    llvm::function_ref<void(KernelBuilder &, Value col, Value sum)> finish);

/// Lets |result| share the buffer of the step argument |state| when nothing
/// after |op| reads the old value: an element-wise update (each thread reads
/// element i and writes element i: the optimizers, the FP8 scale) is then
/// safe in place, and the next-step copy of the result disappears.
void updateInPlace(LoweringContext &ctx, Operation *op, Value state, Value result);

} // namespace mlir::txopt::cuda

#endif // TXOPT_LIB_TARGET_CUDA_KERNELUTILS_H
