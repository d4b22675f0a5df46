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

#include <vector>

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

/// Stores column |col|'s |sum| (storeReduced) into |out0| at col, or with
/// |out1| (a layer norm's dgamma and dbeta, one column range) into |out0|
/// for col < |split| and into |out1| at col - split after it.
void storeColumnSplit(KernelBuilder &k, Value out0, Value out1, int64_t split, Value col,
                      Value sum);

/// The body of a column-sum kernel: column firstColumn + lane of |partials|
/// (|parts| rows of |cols| f32, both index values) combined as
/// lowerPartialColumnSums describes; |finish| runs in warp 0's lanes whose
/// column is in range. Needs kBlockSize f32 of workgroup memory.
void emitColumnSum(KernelBuilder &kb, Value partials, Value parts, Value cols,
                   Value firstColumn, bool isMax,
                   llvm::function_ref<void(Value col, Value total)> finish);

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

/// Whether |state| (a parameter or moment of optimizer |op|) can be
/// updated in place: an argument that nothing after |op| reads.
bool updatableInPlace(Operation *op, Value state);
/// Whether parameter |t| of |adam| meets the packed Adam kernel's
/// conditions: its parameter and moments updatable in place, an f32
/// gradient stored as f32, bf16 or f16.
bool adamUpdatesPacked(LoweringContext &ctx, tx::AdamOp adam, unsigned t);

/// Whether |scale| is delayed-scaling state known before the step runs: a
/// step argument, or one site of a packed state argument (tx.fp8_site),
/// rather than a scale of this step's own amax (current scaling).
bool isCarriedScale(Value scale);

/// Thread 0 folds the block's max |x| |total| into the f32 amax at
/// |amaxArg| (an i32 view): an unsigned atomic max of its bits, NaN
/// canonicalized first (FP8Kernels.cpp).
void emitAtomicAmax(KernelBuilder &kb, Value total, Value amaxArg);
/// Whether the kernels' target has sm_89's FP8 conversion instructions.
bool hasFP8Conversions(LoweringContext &ctx);
/// The FP8 codes of |scaled| (f32 values already multiplied by the scale):
/// the hardware conversions where the target has them, else the integer
/// encode (the same codes either way).
llvm::SmallVector<Value> emitFP8Codes(LoweringContext &ctx, ImplicitLocOpBuilder &b,
                                      llvm::ArrayRef<Value> scaled, Type fp8Type);

/// The offset table of a packed kernel (PackedKernels.cpp): words
/// [0, count] hold each tensor's first block (word count: the grid size);
/// then per tensor `wordsPerTensor` words: its element count and the byte
/// offsets, from the table, of its buffers.
struct PackedTable {
  unsigned buffer = 0;       ///< the table's own (persistent) buffer
  size_t words = 0;
  unsigned count = 0;        ///< tensors
  int64_t wordsPerTensor = 1;
  int64_t perBlock = 1;      ///< elements of one tensor per block
  int64_t blocks = 0;        ///< the grid size
  std::vector<unsigned> through; ///< the buffers, for LaunchCmd::through
};

/// Builds the table of |elements.size()| tensors, each with the buffers
/// |buffers[i]| (the same number each) and then the words |extras[i]| (the
/// same number each, or none), |perBlock| elements per block, and marks the
/// buffers used by the launch about to be appended.
PackedTable buildPackedTable(LoweringContext &ctx, llvm::ArrayRef<int64_t> elements,
                             llvm::ArrayRef<llvm::SmallVector<unsigned, 4>> buffers,
                             int64_t perBlock, llvm::StringRef what,
                             llvm::ArrayRef<llvm::SmallVector<int64_t, 2>> extras = {});

/// What a block of a packed kernel works on: its tensor's table entry
/// (entry[0] the element count, entry[1 + k] the offset of buffer k) and
/// the first of its perBlock elements.
struct PackedBlock {
  Value table;
  llvm::SmallVector<Value> entry;
  Value elements, start;
};
/// Adds the table argument (first) to |kb| and finds the block's tensor by
/// binary search over the first-block words.
PackedBlock emitPackedBlock(KernelBuilder &kb, const PackedTable &packed);
/// Buffer |k| of the block's tensor as a 1-D memref of |element|.
Value packedView(KernelBuilder &kb, const PackedBlock &block, unsigned k, Type element);
/// The first element of the thread's |k|-th vector of |width| elements in
/// its block's slice (a block of kBlockSize threads takes the slice's
/// vectors in turns: thread t's k-th is number k * kBlockSize + t).
Value packedVectorStart(KernelBuilder &kb, const PackedBlock &block, int64_t k, int64_t width);
/// Appends the launch of a packed kernel built with emitPackedBlock and no
/// outputs: the table, then |inputs|, one block per table block; the plan
/// lists the tensors it reaches (LaunchCmd::through). Of |inputs|, the
/// kernel writes |written| (per-block partial sums).
void launchPacked(LoweringContext &ctx, KernelBuilder &kb, Operation *origin,
                  PackedTable &packed, llvm::ArrayRef<unsigned> inputs,
                  llvm::ArrayRef<unsigned> written = {});

/// The second stage of a column reduction (bias or norm-parameter
/// gradients: f32 partial rows summed per column into f32 outputs, columns
/// [0, split) into |out0| and [split, cols) into |out1|), put off until
/// something reads an output: then flushColumnSums lowers every pending one
/// in one packed launch instead of one small launch each. False (nothing
/// recorded) when the outputs are not plain f32 tensors in memory.
bool deferColumnSums(LoweringContext &ctx, Operation *origin, unsigned partials,
                     int64_t parts, int64_t cols, llvm::ArrayRef<Value> outputs,
                     int64_t split);
/// The second stage of one column sum into |result| (its elements the
/// columns of |parts| f32 partial rows, |origin| the op that defines it):
/// deferred (deferColumnSums) where it can be, else lowered now
/// (lowerPartialColumnSums).
LogicalResult sumPartialRows(LoweringContext &ctx, Operation *origin, unsigned partials,
                             int64_t parts, Value result);
/// Whether lowering |op| reads an output deferColumnSums holds back.
bool readsDeferredColumnSums(LoweringContext &ctx, Operation &op);
LogicalResult flushColumnSums(LoweringContext &ctx);

} // namespace mlir::txopt::cuda

#endif // TXOPT_LIB_TARGET_CUDA_KERNELUTILS_H
