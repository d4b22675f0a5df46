//===- RowKernels.cpp - norms, softmax, cross-entropy -----------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// Row kernels of the fused ops: layer_norm / rms_norm and their gradients,
// softmax, softmax cross-entropy and its gradient. Each follows the
// reference executor's formula (lib/Reference) in f32; where the executor
// accumulates in double the kernels accumulate in f32, which the GPU-vs-CPU
// checks bound.
//
//===----------------------------------------------------------------------===//

#include "KernelUtils.h"
#include "Lowering.h"

#include "txopt/Dialect/Tx/IR/TxOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::cuda;

/// Rows of up to kBlockSize * kRowElementsInRegisters elements (2048: every
/// hidden size up to GPT-1.3B's) are swept in straight-line code: each
/// thread's elements of a row tensor are loaded once, into registers, and
/// reused by every pass over the row (mean, variance, output), instead of
/// being loaded again, one dependent load at a time, by each pass.
constexpr int64_t kRowElementsInRegisters = 8;
/// The norms (forward and gradient) hold rows of up to 8192 (every hidden
/// size up to Llama-70B's) in registers: in loops, rows of 4096 and 8192
/// ran at 18-39% of the copy bandwidth backward and 52-81% forward
/// (bench/results/norm-h200-s13; in registers: norm-h200-s16). The softmax
/// and cross-entropy rows keep their vectorized loops past 2048.
constexpr int64_t kNormRowElementsInRegisters = 32;
/// Register rows a norm gradient software-pipelines (the next row's
/// elements held beside the current row's): up to 8 per thread (2048).
constexpr int64_t kPipelinedRowElements = 8;

/// Rows of at most kWarpRowMax elements, a multiple of kLaneWidth, can be
/// swept by one warp each (kWarpsPerBlock rows per block) instead of one
/// block: at GPT-2's 768 a block-wide row gives each thread 3 elements
/// between two barriers per reduction, so the norms waited on barriers and
/// shared memory; a warp reduces with shuffles alone, and each lane owns
/// kLaneWidth consecutive elements per group (16-byte accesses for f32;
/// 16-bit rows may take twice as many, warpRowWidth).
constexpr int64_t kWarpRowMax = 1024;
constexpr int64_t kLaneWidth = 4;
constexpr int64_t kWarpsPerBlock = kBlockSize / 32;

/// The narrowest group (RowKernel's |width|) a register sweep computes and
/// stores one group at a time (16-bit rows' 16-byte groups); narrower
/// groups' rows are computed whole first (RowKernel::storeSweep).
constexpr int64_t kGroupedStoreMinWidth = 8;

/// Threads an SM of the target holds at once: 1024 on sm_75, 1536 on the
/// sm_86/87/89/120 parts, 2048 on sm_80, sm_90 and the rest.
static unsigned threadsPerSM(unsigned sm) {
  if (sm == 75)
    return 1024;
  if (sm == 86 || sm == 87 || sm == 89 || sm == 120)
    return 1536;
  return 2048;
}

/// Registers a forward norm's thread needs beside the row elements it holds
/// (one f32 register each): addresses, the statistics, the scale and bias
/// groups being applied. ptxas fitted LayerNorm's forward under 256-thread
/// blocks into 32 registers at 16 elements a thread (rows of 4096, bf16 and
/// f32) and 48 at 32 (8192), without spills.
constexpr int64_t kNormForwardRegistersBesideRow = 16;
/// 32-bit registers an SM holds, on every target from sm_75 on.
constexpr int64_t kRegistersPerSM = 65536;

/// Blocks an SM the forward norm of a block row held in registers, |perThread|
/// elements a thread, asks ptxas to fit (nvvm.minctasm). Left to itself
/// ptxas gave LayerNorm's bf16 rows of 4096 40 registers (six blocks an SM,
/// 48 KB of row loads in flight) where RMSNorm's took 32 (eight): LayerNorm
/// ran at 80-82% of the H200's copy bandwidth, RMSNorm at 91-92%
/// (bench/results/norm-h200-s40). Bounded by the register estimate above,
/// the bound costs no spills, unlike the occupancy forced on kernels with
/// more live values (bench/NOTES.md, sessions 21 and 41).
static unsigned normForwardBlocksPerSM(int64_t perThread, unsigned sm) {
  int64_t registers = llvm::alignTo(perThread + kNormForwardRegistersBesideRow, 8);
  int64_t blocks = kRegistersPerSM / (registers * kBlockSize);
  return static_cast<unsigned>(
      std::clamp<int64_t>(blocks, 1, threadsPerSM(sm) / kBlockSize));
}

/// The floats of workgroup memory KernelBuilder::blockReduce uses (from 0).
constexpr int64_t kReduceFloats = 32;

/// Dynamic shared memory every target from sm_80 on allows a block.
constexpr int64_t kSharedBytesFromSM80 = 96 * 1024;

/// Shared memory a row kernel may take on the step's target, with the
/// dynamic opt-in from sm_80 on, else the static 48 KiB (sm_75 allows only
/// 64 KiB a block). sm_90 and sm_100 take kMaxDynamicSharedBytes, which
/// keeps two 256-thread blocks an SM, as many as these kernels' registers
/// (up to 128 a thread) allow: LayerNorm's gradient over f32 rows of 8192
/// with a column-sum epilogue needs 96 KiB + 128 bytes for its three
/// running sums; at the kSharedBytesFromSM80 the other targets keep
/// (within sm_86 and sm_89's 99 KiB a block) they went to global partial
/// rows, at 28% of the copy bandwidth on an H100 (bench/NOTES.md, session
/// 43).
static int64_t maxSharedBytes(const LoweringContext &ctx) {
  unsigned sm = ctx.targetSM();
  if (sm == 90 || sm == 100)
    return kMaxDynamicSharedBytes;
  return sm >= 80 ? kSharedBytesFromSM80 : kMaxStaticSharedBytes;
}

static bool usesWarpRows(int64_t length) {
  return length > 0 && length % kLaneWidth == 0 && length <= kWarpRowMax;
}

/// Whether a block row of |length| is swept with its elements kept in
/// registers (|perThread| per thread) rather than by loops.
static bool blockRowInRegisters(int64_t length,
                                int64_t perThread = kRowElementsInRegisters) {
  return length <= kBlockSize * perThread;
}

/// Elements each lane holds of a warp row of |length|: |width| consecutive
/// ones per group of 32 * width.
static int64_t warpRowSteps(int64_t length, int64_t width) {
  return ceilDiv(length, 32 * width) * width;
}

/// The consecutive elements a warp row's lane takes per group
/// (RowKernel's |width| for warp rows): for rows loaded as 16-bit elements,
/// 8 (one 16-byte access where kLaneWidth's 4 made 8-byte ones, which is
/// what GPT-2's 768-wide bf16 LayerNorm ran at 58% of the copy bandwidth
/// with, bench/results/norm-h100-s28) when that leaves no lane holding
/// more elements (768: 3 groups of 8 instead of 6 of 4); else kLaneWidth.
static int64_t warpRowWidth(int64_t length, Type element) {
  constexpr int64_t kWidth = 2 * kLaneWidth;
  if (element.getIntOrFloatBitWidth() == 16 && length % kWidth == 0 &&
      warpRowSteps(length, kWidth) == warpRowSteps(length, kLaneWidth))
    return kWidth;
  return kLaneWidth;
}

/// The consecutive elements each thread of a block row held in registers
/// takes per group (RowKernel's |width|) for a row of 16-bit elements: 8
/// (16 bytes) when the row's length is a multiple of 8, so every row
/// starts 16-byte aligned and LLVM's vectorizer merges a thread's group
/// into one access, and when the thread holds no more elements than with
/// one element a step (no group leaves more threads idle at the row's
/// end); else, and for wider elements, 1: the strided layout (element j =
/// thread + step * blockDim). On the H200 (DeviceLog session 27) a bf16 row
/// of 4096 with one 2-byte access a step ran the forward LayerNorm at 72%
/// of the copy bandwidth, RMSNorm 83%; with 16-byte groups 79% and 94%
/// (rows of 8192: 70 -> 82%, 79 -> 91%). f32 rows stay strided: their
/// 4-byte accesses already coalesce a warp into 128 bytes (93%), and groups
/// of 8 f32 (two 16-byte accesses a thread, 32 bytes apart across the warp)
/// fell to 77%. The norm gradients take the same groups (their column sums
/// transposed in shared memory, lowerNormGrad).
static int64_t blockRowWidth(int64_t length, Type element) {
  constexpr int64_t kWidth = 8;
  if (element.getIntOrFloatBitWidth() == 16 && length % kWidth == 0 &&
      ceilDiv(length, kBlockSize * kWidth) * kWidth == ceilDiv(length, kBlockSize))
    return kWidth;
  return 1;
}

namespace {
/// A row kernel: one block per row of |rowLength| elements, or with
/// |warpRows| one warp per row (usesWarpRows), or with setRow several rows
/// walked by one block or warp.
struct RowKernel {
  KernelBuilder kb;
  Value row, base;
  int64_t length;
  bool warpRows;
  Value lane, warp; ///< with warpRows
  /// Elements per thread up to which a block row is held in registers.
  int64_t registerElements;
  /// The consecutive elements a thread takes per group: of a block row in
  /// registers, per group of kBlockSize * width (blockRowWidth; 1: one
  /// element a step); of a warp row, a lane's per group of 32 * width
  /// (warpRowWidth; kLaneWidth when given 1).
  int64_t width;

  RowKernel(LoweringContext &ctx, Operation *op, llvm::ArrayRef<Value> outputs,
            llvm::ArrayRef<Value> inputs, int64_t rowLength, bool warpRows = false,
            unsigned workgroupFloats = 32,
            int64_t registerElements = kRowElementsInRegisters, int64_t width = 1,
            unsigned blockSize = kBlockSize)
      : kb(ctx.gpuModule, ctx.kernelName(op), outputs, inputs, ctx.plan, workgroupFloats),
        length(rowLength), warpRows(warpRows), registerElements(registerElements),
        width(warpRows && width == 1 ? kLaneWidth : width) {
    // The register sweeps' layouts are kBlockSize's; another block size
    // only walks its row with blockStridedLoop.
    assert((blockSize == kBlockSize || !inRegisters()) && "a register row of kBlockSize threads");
    kb.setBlockSize(blockSize);
    auto &b = kb.builder();
    if (!warpRows) {
      setRow(kb.blockIndex());
    } else {
      lane = arith::RemUIOp::create(b, kb.threadIndex(), kb.idx(32));
      warp = arith::DivUIOp::create(b, kb.threadIndex(), kb.idx(32));
      setRow(arith::AddIOp::create(
          b, arith::MulIOp::create(b, kb.blockIndex(), kb.idx(kWarpsPerBlock)), warp));
    }
    // Each step's element, once at the top: every sweep then addresses a
    // step's elements with the same values, so the loads of one step in
    // different sweeps sit together after groupMemoryAccesses.
    if (inRegisters())
      for (int64_t k = 0; k < steps(); ++k)
        stepElements.push_back(computeStepElement(k));
  }

  /// Makes |r| the row that at() and loadRow() address.
  void setRow(Value r) {
    row = r;
    base = arith::MulIOp::create(kb.builder(), row, kb.idx(length));
    rowValues.clear();
  }
  Value at(Value j) { return arith::AddIOp::create(kb.builder(), base, j); }

  /// Whether step |s|'s element is in the row (null when it always is).
  Value stepInRow(int64_t s) {
    if (stepAlwaysInRow(s))
      return {};
    return arith::CmpIOp::create(kb.builder(), arith::CmpIPredicate::ult, stepElement(s),
                                 kb.idx(length));
  }

  /// The row's sum (or max) of each thread's |value|: over the warp or the
  /// block.
  Value reduce(Value value, bool isMax) {
    return warpRows ? kb.warpReduce(value, isMax) : kb.blockReduce(value, isMax);
  }
  /// reduce() of several values: a block row's share one pair of barriers.
  llvm::SmallVector<Value> reduce(llvm::ArrayRef<Value> values, bool isMax) {
    if (!warpRows)
      return kb.blockReduce(values, isMax);
    llvm::SmallVector<Value> totals;
    for (Value value : values)
      totals.push_back(kb.warpReduce(value, isMax));
    return totals;
  }

  /// Runs |body| on the row's first thread only.
  void onFirstThread(llvm::function_ref<void()> body) {
    auto &b = kb.builder();
    Value first = arith::CmpIOp::create(b, arith::CmpIPredicate::eq,
                                        warpRows ? lane : kb.threadIndex(), kb.idx(0));
    kb.ifThen(first, body);
  }

  bool inRegisters() const {
    return warpRows || blockRowInRegisters(length, registerElements);
  }
  /// Steps of a register sweep, and the element step |s| visits in this
  /// thread: j = thread + s * blockDim for a block row; for a warp row,
  /// |width| consecutive elements per lane, 32 * width per group. With
  /// |width| > 1, a block row's thread takes |width| consecutive elements
  /// per group of kBlockSize * width, like a warp row's lane.
  int64_t steps() const {
    if (warpRows)
      return warpRowSteps(length, width);
    return ceilDiv(length, kBlockSize * width) * width;
  }
  Value stepElement(int64_t s) { return stepElements[s]; }
  Value computeStepElement(int64_t s) {
    auto &b = kb.builder();
    if (!warpRows && width == 1)
      return arith::AddIOp::create(b, kb.threadIndex(), kb.idx(s * kBlockSize));
    int64_t lanes = warpRows ? 32 : kBlockSize;
    int64_t group = s / width, offset = s % width;
    Value lane = warpRows ? this->lane : kb.threadIndex();
    return arith::AddIOp::create(b, arith::MulIOp::create(b, lane, kb.idx(width)),
                                 kb.idx(group * lanes * width + offset));
  }
  bool stepAlwaysInRow(int64_t s) const {
    int64_t lanes = warpRows ? 32 : kBlockSize;
    return (s / width + 1) * lanes * width <= length;
  }
  /// stepElement(|s|), or the row's last element for a step past the row's
  /// end: where a sweep works (loads stay in bounds; it stores nothing).
  Value safeStepElement(int64_t s) {
    Value j = stepElement(s);
    if (stepAlwaysInRow(s))
      return j;
    return arith::MinUIOp::create(kb.builder(), j, kb.idx(length - 1));
  }

  /// `for (j = thread; j < length; j += blockDim) acc = body(j, acc)`. For a
  /// short row, unrolled over steps(): for a block row of width 1 the k-th
  /// step visits the same j the loop would, in the same order, so sums are
  /// bit for bit the loop's (with a wider layout, the thread's own elements
  /// in their order); a j past the row's end keeps acc (and a body without
  /// acc, which stores, is skipped there).
  llvm::SmallVector<Value>
  sweep(llvm::ArrayRef<Value> init,
        llvm::function_ref<llvm::SmallVector<Value>(Value j, llvm::ArrayRef<Value> acc)> body) {
    if (!inRegisters())
      return kb.blockStridedLoop(length, init, body);
    auto &b = kb.builder();
    llvm::SmallVector<Value> acc(init.begin(), init.end());
    for (int64_t k = 0; k < steps(); ++k) {
      Value j = stepElement(k);
      bool alwaysInRow = stepAlwaysInRow(k);
      Value inRow = alwaysInRow ? Value()
                                : arith::CmpIOp::create(b, arith::CmpIPredicate::ult, j,
                                                        kb.idx(length));
      Value safeJ = safeStepElement(k);
      currentStep = k;
      if (acc.empty()) {
        if (alwaysInRow) {
          body(safeJ, acc);
        } else {
          insideGuard = true;
          kb.ifThen(inRow, [&] { body(safeJ, acc); });
          insideGuard = false;
        }
        continue;
      }
      llvm::SmallVector<Value> next = body(safeJ, acc);
      for (size_t i = 0; i < acc.size(); ++i)
        acc[i] = alwaysInRow ? next[i] : arith::SelectOp::create(b, inRow, next[i], acc[i]);
    }
    currentStep = -1;
    return acc;
  }

  /// Stores valueAt(j, step) at element j of the current row of |output| for
  /// every j of the row (step: the register sweep's step, -1 in a loop). In
  /// a register sweep, rows whose groups are at least kGroupedStoreMinWidth
  /// wide (16-bit rows' groups of 8) are computed and stored a group at a
  /// time; other rows are computed whole, then stored. Either way a
  /// group's stores sit together, so LLVM's vectorizer makes one 16-byte
  /// store of a thread's group, and a j past the row's end computes at the
  /// last element and stores nothing. A group at a time keeps fewer values
  /// live: the bf16 768-wide LayerNorm gradient needed 142 registers with
  /// the whole row (one block an SM) and 125 this way (two: 49% -> 63% of
  /// the H100's copy bandwidth). Whole rows issue all their loads before
  /// the first store; f32 rows a group at a time lost (GPT-2's LayerNorm
  /// gradients 1.78 -> 1.85 ms), likely because each group's loads waited
  /// behind the previous group's stores. bench/NOTES.md, session 37, has
  /// the figures. A row loaded as 16-bit with a wider output would also go
  /// a group at a time; no such row was measured.
  void storeSweep(Value output, llvm::function_ref<Value(Value j, int64_t step)> valueAt) {
    storeSweep(llvm::ArrayRef<Value>(output), [&](Value j, int64_t step) {
      return llvm::SmallVector<Value, 2>{valueAt(j, step)};
    });
  }
  /// storeSweep for several outputs of the row's shape: valueAt returns one
  /// value per output. Each output's stores of a batch sit together (all of
  /// the first output's, then the second's): stores to two buffers
  /// interleaved stay scalar, since LLVM cannot tell the buffers apart.
  /// With two outputs every row goes a group at a time, f32 rows too: GPT-2's
  /// f32 LayerNorm gradients writing dx and its bf16 copy took 144-154
  /// registers computing the whole row first (one block an SM; 2.40 ms for
  /// the 25 on an H200) and 114-127 a group at a time (two blocks; 1.69 ms;
  /// bench/NOTES.md, session 38).
  void storeSweep(llvm::ArrayRef<Value> outputs,
                  llvm::function_ref<llvm::SmallVector<Value, 2>(Value j, int64_t step)> valueAt) {
    if (!inRegisters()) {
      kb.blockStridedLoop(length, {}, [&](Value j, llvm::ArrayRef<Value>) {
        llvm::SmallVector<Value, 2> values = valueAt(j, -1);
        for (size_t o = 0; o < outputs.size(); ++o)
          kb.store(outputs[o], at(j), values[o]);
        return llvm::SmallVector<Value>{};
      });
      return;
    }
    auto &b = kb.builder();
    // Steps computed before their stores: a group's, or the whole row's.
    int64_t batch = width >= kGroupedStoreMinWidth || outputs.size() > 1 ? width : steps();
    for (int64_t first = 0; first < steps(); first += batch) {
      int64_t end = std::min(first + batch, steps());
      llvm::SmallVector<llvm::SmallVector<Value, 2>> values;
      for (int64_t k = first; k < end; ++k) {
        currentStep = k;
        values.push_back(valueAt(safeStepElement(k), k));
      }
      currentStep = -1;
      for (size_t o = 0; o < outputs.size(); ++o)
        for (int64_t k = first; k < end; ++k) {
          Value j = stepElement(k), value = values[k - first][o];
          if (stepAlwaysInRow(k)) {
            kb.store(outputs[o], at(j), value);
            continue;
          }
          kb.ifThen(arith::CmpIOp::create(b, arith::CmpIPredicate::ult, j, kb.idx(length)),
                    [&] { kb.store(outputs[o], at(j), value); });
        }
    }
  }

  /// Element |j| of the current row of |tensor| (row-major, rows of
  /// |length|): inside a register sweep, loaded once per row and step.
  Value loadRow(Value tensor, Value j) {
    if (currentStep < 0)
      return element(tensor, j);
    auto found = rowValues.find({tensor, currentStep});
    if (found != rowValues.end())
      return found->second;
    Value value = element(tensor, j);
    // Only a load at the row's top level is kept: it dominates every later
    // pass (one inside the scf.if that skips the row's end would not).
    if (!insideGuard)
      rowValues[{tensor, currentStep}] = value;
    return value;
  }

  /// Makes |value| element stepElement(|step|) of the current row of
  /// |tensor| for loadRow (loaded earlier: a prefetched row).
  void seedRow(Value tensor, int64_t step, Value value) {
    rowValues[{tensor, step}] = value;
  }
  /// Element stepElement(|step|) of row |row| of |tensor| (the last
  /// element for a step past the row's end), loaded now: a prefetch that
  /// seedRow hands to the sweeps once |row| is the current row.
  Value loadAhead(Value tensor, Value row, int64_t step) {
    auto &b = kb.builder();
    if (computed.contains(tensor))
      return computedElement(tensor, row, safeStepElement(step));
    return kb.load(tensor, arith::AddIOp::create(b, arith::MulIOp::create(b, row, kb.idx(length)),
                                                 safeStepElement(step)));
  }

  /// Tensors this kernel computes from their inputs instead of loading: a
  /// norm's input (normInputComputedByNorm; the norm stores it too) or a
  /// norm gradient's dy (normGradInputComputedByNormGrad; stored by none).
  llvm::DenseSet<Value> computed;

private:
  /// Element |j| of the current row of |tensor|: loaded, or computed.
  Value element(Value tensor, Value j) {
    if (!computed.contains(tensor))
      return kb.load(tensor, at(j));
    return computedElement(tensor, row, j);
  }

  /// Element |j| of row |r| of the computed |tensor|, rounded to the
  /// tensor's type as its store would have rounded it.
  Value computedElement(Value tensor, Value r, Value j) {
    Value value = kb.emitComputed(tensor, rowElementIndex(tensor, r, j));
    return kb.roundTo(value, typeOf(tensor).getElementType());
  }

  /// The multi-index of element |j| of row |r| of |tensor|. When the row is
  /// the innermost dim, j itself is the innermost index and only the row is
  /// delinearized: from the delinearized linear index (a remainder by the
  /// row length) LLVM could not see that a lane's consecutive j are
  /// consecutive addresses, and kept the loads of a computed norm input
  /// (GPT-2's bias + residual) 2 and 4 bytes wide.
  llvm::SmallVector<Value> rowElementIndex(Value tensor, Value r, Value j) {
    llvm::ArrayRef<int64_t> shape = typeOf(tensor).getShape();
    if (shape.empty() || shape.back() != length) {
      auto &b = kb.builder();
      return kb.delinearize(
          arith::AddIOp::create(b, arith::MulIOp::create(b, r, kb.idx(length)), j), shape);
    }
    llvm::SmallVector<Value> index = kb.delinearize(r, shape.drop_back());
    index.push_back(j);
    return index;
  }

  llvm::SmallVector<Value> stepElements;
  int64_t currentStep = -1;
  bool insideGuard = false;
  llvm::DenseMap<std::pair<Value, int64_t>, Value> rowValues;
};
} // namespace

/// The input of the fused norm |op| when the norm's kernel can compute and
/// store it (the residual stream's add: x = h + bias + r, read by the norm
/// and later by the next residual add and the norm's gradient): it is in
/// memory, an elemental op right before computes it, nothing reads it
/// between that op and the norm, and the norm's rows fit its registers
/// (each element is computed once, kept, stored, and normalized) at 8 a
/// thread (2048): past that the norm keeps x in registers too, but the
/// inputs the add reads would raise its registers further, and that has
/// not been measured. The add kernel's write stays; its launch and the
/// norm's read of x go.
static Value normInputComputedByNorm(LoweringContext &ctx, Operation *op) {
  if (!isa<tx::LayerNormOp, tx::RMSNormOp>(op))
    return nullptr;
  Value x = op->getOperand(0);
  Operation *def = x.getDefiningOp();
  if (!def || def->getBlock() != op->getBlock() || !isElementalOp(def) || isViewOp(def) ||
      def->getNumResults() != 1 || !ctx.plan.isMaterialized(x) ||
      ctx.loweredElsewhere.contains(def) || ctx.plan.absorbedCasts.contains(def) ||
      ctx.plan.storedAs.count(x) || ctx.bufferOfValue.count(x))
    return nullptr;
  for (Operation *user : x.getUsers())
    if (user != op && (user->getBlock() != op->getBlock() || !op->isBeforeInBlock(user)))
      return nullptr;
  int64_t d = typeOf(x).getRank() ? typeOf(x).getShape().back() : 0;
  if (d <= 0 || !(usesWarpRows(d) || blockRowInRegisters(d)))
    return nullptr;
  return x;
}

/// The incoming gradient dy of the norm gradient |op| when the norm
/// gradient's kernel can compute it instead of loading it: an elemental op
/// in memory that nothing else reads. Llama's q/k/v and gate/up
/// projections each read the norm's output, so its gradient is the sum of
/// their GEMMs' input gradients (16-bit, added in f32): an add kernel
/// read those 2 or 3 products and wrote dy in f32 (50 MB a layer at
/// 16384 x 768), and the norm gradient read it back. Computed in the norm
/// gradient, dy is never stored: the kernel reads the products (rounded
/// as the add's store would round the sum, so the same bits). Rows must be
/// held in registers (warp rows, or block rows that fit), where the row's
/// elements are loaded once for the kernel's two passes over them; a
/// strided block row would compute dy twice.
static Value normGradInputComputedByNormGrad(LoweringContext &ctx, Operation *op) {
  if (!ctx.options.normGradInputFusion || !isa<tx::LayerNormGradOp, tx::RMSNormGradOp>(op))
    return nullptr;
  Value dy = op->getOperand(0);
  Operation *def = dy.getDefiningOp();
  if (!def || def->getBlock() != op->getBlock() || !isElementalOp(def) || isViewOp(def) ||
      def->getNumResults() != 1 || !ctx.plan.isMaterialized(dy) ||
      ctx.loweredElsewhere.contains(def) || ctx.plan.absorbedCasts.contains(def) ||
      ctx.plan.storedAs.count(dy) || ctx.bufferOfValue.count(dy))
    return nullptr;
  if (llvm::any_of(dy.getUsers(), [&](Operation *user) { return user != op; }))
    return nullptr;
  int64_t d = typeOf(dy).getRank() ? typeOf(dy).getShape().back() : 0;
  if (d <= 0 || !(usesWarpRows(d) || blockRowInRegisters(d, kNormRowElementsInRegisters)))
    return nullptr;
  return dy;
}

void cuda::computeNormInputsInNorms(LoweringContext &ctx, func::FuncOp func) {
  for (Operation &op : func.getBody().front()) {
    Value computed = normInputComputedByNorm(ctx, &op);
    if (!computed)
      computed = normGradInputComputedByNormGrad(ctx, &op);
    if (computed) {
      ctx.normComputedInputs[&op] = computed;
      ctx.loweredElsewhere.insert(computed.getDefiningOp());
    }
  }
}

/// tx.layer_norm / tx.rms_norm: y, [mean,] rstd over the innermost dim.
LogicalResult cuda::lowerNorm(LoweringContext &ctx, Operation *op) {
  // tx.layer_norm / tx.rms_norm normalize the innermost dim and also return
  // their statistics; the ONNX-level tx.layer_normalization /
  // tx.rms_normalization (left when norm fusion is off) normalize the dims
  // from `axis` on and return only y.
  bool center = isa<tx::LayerNormOp, tx::LayerNormalizationOp>(op);
  Value x = op->getOperand(0), gamma = op->getOperand(1);
  Value beta = center && op->getNumOperands() > 2 ? op->getOperand(2) : Value();
  double eps = 0;
  int64_t axis = typeOf(x).getRank() - 1;
  if (auto ln = dyn_cast<tx::LayerNormOp>(op)) {
    eps = ln.getEpsilon().convertToDouble();
  } else if (auto rms = dyn_cast<tx::RMSNormOp>(op)) {
    eps = rms.getEpsilon().convertToDouble();
  } else if (auto ln = dyn_cast<tx::LayerNormalizationOp>(op)) {
    eps = ln.getEpsilon().convertToDouble();
    axis = static_cast<int64_t>(ln.getAxis());
  } else {
    auto rms = cast<tx::RMSNormalizationOp>(op);
    eps = rms.getEpsilon().convertToDouble();
    axis = static_cast<int64_t>(rms.getAxis());
  }
  if (axis < 0)
    axis += typeOf(x).getRank();
  int64_t d = 1;
  for (int64_t k = axis; k < typeOf(x).getRank(); ++k)
    d *= typeOf(x).getShape()[k];
  int64_t rows = d ? typeOf(x).getNumElements() / d : 0;
  for (Value param : {gamma, beta})
    if (param && typeOf(param).getNumElements() != d)
      return op->emitError("the GPU norm expects scale and bias of the normalized size ")
             << d << ", but got " << param.getType();
  llvm::SmallVector<Value> outputs(op->getResults().begin(), op->getResults().end());
  // With its input computed here, the kernel also writes it (last) and
  // reads what it is computed from.
  auto computedInput = ctx.normComputedInputs.find(op);
  Value computedX = computedInput != ctx.normComputedInputs.end() ? computedInput->second
                                                                   : Value();
  llvm::SmallVector<Value> kernelOutputs(outputs);
  llvm::SetVector<Value> inputSet;
  if (computedX) {
    kernelOutputs.push_back(computedX);
    KernelBuilder::collectInputs(computedX, ctx.plan, inputSet);
  } else {
    inputSet.insert(x);
  }
  inputSet.insert(gamma);
  if (beta)
    inputSet.insert(beta);
  llvm::SmallVector<Value> inputs(inputSet.begin(), inputSet.end());
  bool warpRows = usesWarpRows(d);
  // The layout follows the type the rows are loaded as (a recomputed cast
  // of an f32 value is loaded as f32).
  Type loaded = typeOf(KernelBuilder::storageOf(x, ctx.plan)).getElementType();
  RowKernel rk(ctx, op, kernelOutputs, inputs, d, warpRows, /*workgroupFloats=*/32,
               kNormRowElementsInRegisters,
               warpRows ? warpRowWidth(d, loaded) : blockRowWidth(d, loaded));
  KernelBuilder &kb = rk.kb;
  if (computedX)
    rk.computed.insert(computedX);
  else if (!warpRows && rk.inRegisters())
    kb.setMinBlocksPerSM(normForwardBlocksPerSM(rk.steps(), ctx.targetSM()));
  auto &b = kb.builder();
  Type element = typeOf(x).getElementType();
  auto emitRow = [&] {
    Value mean = kb.f32(0.0);
    if (center) {
      auto sum = rk.sweep({kb.f32(0.0)}, [&](Value j, llvm::ArrayRef<Value> a) {
        return llvm::SmallVector<Value>{arith::AddFOp::create(b, a[0], rk.loadRow(x, j))};
      });
      mean = arith::DivFOp::create(b, rk.reduce(sum[0], false), kb.f32(d));
    }
    // The computed input, kept from the sweep above (or computed by the
    // next one's first use), stored before the statistics are reduced.
    if (computedX)
      rk.storeSweep(computedX, [&](Value j, int64_t) { return rk.loadRow(x, j); });
    auto sq = rk.sweep({kb.f32(0.0)}, [&](Value j, llvm::ArrayRef<Value> a) {
      Value c = arith::SubFOp::create(b, rk.loadRow(x, j), mean);
      return llvm::SmallVector<Value>{arith::AddFOp::create(b, a[0], arith::MulFOp::create(b, c, c))};
    });
    Value var = arith::DivFOp::create(b, rk.reduce(sq[0], false), kb.f32(d));
    Value rstd = arith::DivFOp::create(
        b, kb.f32(1.0), math::SqrtOp::create(b, arith::AddFOp::create(b, var, kb.f32(eps))));
    rk.storeSweep(outputs[0], [&](Value j, int64_t) {
      Value c = arith::SubFOp::create(b, rk.loadRow(x, j), mean);
      Value v = arith::MulFOp::create(b, arith::MulFOp::create(b, c, rstd), kb.load(gamma, j));
      if (beta)
        v = arith::AddFOp::create(b, v, kb.load(beta, j));
      return kb.roundTo(v, element);
    });
    if (outputs.size() > 1)
      rk.onFirstThread([&] {
        if (center)
          kb.store(outputs[1], rk.row, mean);
        kb.store(outputs.back(), rk.row, rstd);
      });
  };
  // One warp per row: the last block's warps past the last row do nothing
  // (their reductions involve no other warp).
  if (warpRows && rows % kWarpsPerBlock != 0)
    kb.ifThen(arith::CmpIOp::create(b, arith::CmpIPredicate::ult, rk.row, kb.idx(rows)), emitRow);
  else
    emitRow();
  kb.finish();
  if (warpRows || (rk.inRegisters() && rk.width > 1))
    kb.groupMemoryAccesses();
  if (failed(kb.status()))
    return failure();
  int64_t grid = warpRows ? ceilDiv(rows, kWarpsPerBlock) : std::max<int64_t>(rows, 1);
  ctx.launch(kb, op, static_cast<unsigned>(grid), ctx.buffersOf(kernelOutputs),
             ctx.buffersOf(inputs));
  return success();
}

/// Blocks of a row kernel that walks several rows per block: about one
/// wave of 256-thread blocks on an H200 (132 SMs x 8 resident blocks).
constexpr int64_t kRowBlocks = 1024;

/// The residual connection's gradient after a norm's: `dx + r`, the only
/// reader of the norm gradient's dx, with r the same shape, computed before
/// the norm gradient: in memory, or an elemental expression of values in
/// memory that the kernel computes as the add kernel would have (a
/// pre-norm block's two residual branches: dx1 + (dx2 + dout), the
/// incoming gradient of the block's second residual add never stored).
/// The norm-gradient kernel then writes the sum (one f32 add, as the add
/// kernel would) and neither dx nor the add kernel exists: one write and
/// two reads of the activation gradient fewer.
static tx::AddOp residualEpilogue(LoweringContext &ctx, Operation *normGrad) {
  Value dx = normGrad->getResult(0);
  if (!dx.hasOneUse() || !typeOf(dx).getElementType().isF32() ||
      ctx.plan.storedAs.count(dx))
    return nullptr;
  auto add = dyn_cast<tx::AddOp>(*dx.getUsers().begin());
  if (!add || add.getType() != dx.getType() || add.getLhs() == add.getRhs() ||
      !ctx.plan.isMaterialized(add.getResult()) ||
      ctx.bufferOfValue.count(add.getResult()))
    return nullptr;
  Value r = add.getLhs() == dx ? add.getRhs() : add.getLhs();
  if (r.getType() != dx.getType() || ctx.plan.storedAs.count(r))
    return nullptr;
  auto computedBefore = [&](Value v) {
    Operation *def = v.getDefiningOp();
    return !def || (def->getBlock() == normGrad->getBlock() && def->isBeforeInBlock(normGrad));
  };
  if (ctx.plan.isMaterialized(r))
    return computedBefore(r) ? add : nullptr;
  Operation *def = r.getDefiningOp();
  if (!ctx.options.normGradInputFusion || !def || !isElementalOp(def))
    return nullptr;
  llvm::SetVector<Value> inputs;
  KernelBuilder::collectInputs(r, ctx.plan, inputs);
  return llvm::all_of(inputs, computedBefore) ? add : nullptr;
}

namespace {
/// What a norm-gradient kernel can compute from its output |out| (dx, or
/// dx + r with the residual epilogue) while each element is in registers:
/// |sum|, a column sum of |out| over its rows (the bias gradient of the
/// linear layer the gradient enters next, GPT-2's attention and MLP output
/// projections), and |cast|, |out|'s 16-bit copy that layer's
/// weight-gradient GEMMs read. Without this a column-reduction kernel read
/// |out| back (GPT-2: 50 MB of f32 a layer, twice a layer) to write both.
/// The kernel adds one more running column sum beside dgamma's (into a
/// partial-row buffer of its own, summed like a bias gradient's partials)
/// and stores the copy beside |out|. Either part may be missing.
struct ColumnSumEpilogue {
  tx::ReduceSumOp sum;
  tx::CastOp cast;
};
} // namespace

/// The epilogue lowerNormGrad writes for |normGrad|'s output |out|. The sum
/// qualifies where its own kernel would otherwise read |out| (not claimed by
/// another kernel: an FP8 amax's, a packed or deferred one), the cast where
/// it would be stored by a kernel after |normGrad| (the column reduction's
/// companion, or its own). Both need buffers no value holds yet: the kernel
/// writes them before the ops that define them come.
static ColumnSumEpilogue columnSumEpilogue(LoweringContext &ctx, Operation *normGrad,
                                           Value out) {
  ColumnSumEpilogue epilogue;
  if (!typeOf(out).getElementType().isF32() || ctx.plan.storedAs.count(out))
    return epilogue;
  int64_t d = typeOf(out).getShape().back();
  auto unclaimed = [&](Operation *user, Value result) {
    return user->getBlock() == normGrad->getBlock() && normGrad->isBeforeInBlock(user) &&
           ctx.plan.isMaterialized(result) && !ctx.plan.storedAs.count(result) &&
           !ctx.bufferOfValue.count(result) && !ctx.loweredElsewhere.contains(user) &&
           !ctx.plan.absorbedCasts.contains(user) && !ctx.deferredAfter.count(user);
  };
  for (Operation *user : out.getUsers()) {
    if (auto sum = dyn_cast<tx::ReduceSumOp>(user)) {
      Value result = sum.getResult();
      if (!epilogue.sum && sum.getInput() == out && sumsLeadingAxes(sum) &&
          typeOf(result).getElementType().isF32() && typeOf(result).getNumElements() == d &&
          unclaimed(user, result) && !ctx.recomputedBySum.count(sum))
        epilogue.sum = sum;
    } else if (auto cast = dyn_cast<tx::CastOp>(user)) {
      Type to = typeOf(cast.getResult()).getElementType();
      if (!epilogue.cast && (to.isBF16() || to.isF16()) &&
          typeOf(cast.getResult()).getShape() == typeOf(out).getShape() &&
          unclaimed(user, cast.getResult()))
        epilogue.cast = cast;
    }
  }
  return epilogue;
}

/// tx.layer_norm_grad / tx.rms_norm_grad, deterministic and without atomics.
/// Kernel 1: block g walks rows [g R, (g + 1) R); per row it computes dx,
/// and each thread adds dy * xhat (and dy) of its own columns into row g of
/// an f32 partials buffer [G, d] (or [G, 2d]) that no other thread touches.
/// Kernel 2 adds the G partial rows of each column in a fixed order
/// (lowerPartialColumnSums) and rounds once into dgamma (and dbeta).
/// Atomics, one per element per row on d addresses, serialized at L2 and
/// made the sums' order (and bits) vary from run to run.
namespace {
/// One row of a norm gradient, shared by the block-row and warp-row
/// kernels: begin() loads the row's statistics and reduces its two sums;
/// at(j) gives element j's dy, xhat and the dx value to store (plus
/// the residual gradient |addend| when the kernel absorbed that add).
struct NormGradRow {
  RowKernel &rk;
  bool center;
  Value dy, x, gamma, mean, rstd, addend;
  int64_t d;
  Type element;
  Value mu, inv, sumG, sumGX, dd;

  /// The row tensors an element reads (dy, x, and the residual gradient
  /// when absorbed), in the order prefetch() returns them per step.
  llvm::SmallVector<Value> rowTensors() const {
    llvm::SmallVector<Value> tensors{dy, x};
    if (addend)
      tensors.push_back(addend);
    return tensors;
  }
  /// Row |row|'s statistics (rstd [, mean]) and every element this thread
  /// reads of it, loaded now (register sweeps only): the values begin()
  /// takes as |prefetched| when |row| comes.
  llvm::SmallVector<Value> prefetch(Value row) {
    KernelBuilder &kb = rk.kb;
    llvm::SmallVector<Value> values{kb.load(rstd, row)};
    if (center)
      values.push_back(kb.load(mean, row));
    for (int64_t k = 0; k < rk.steps(); ++k)
      for (Value tensor : rowTensors())
        values.push_back(rk.loadAhead(tensor, row, k));
    return values;
  }

  void begin(Value row, llvm::ArrayRef<Value> prefetched = {}) {
    KernelBuilder &kb = rk.kb;
    auto &b = kb.builder();
    rk.setRow(row);
    if (prefetched.empty()) {
      mu = center ? kb.load(mean, row) : kb.f32(0.0);
      inv = kb.load(rstd, row);
    } else {
      inv = prefetched[0];
      mu = center ? prefetched[1] : kb.f32(0.0);
      size_t next = center ? 2 : 1;
      for (int64_t k = 0; k < rk.steps(); ++k)
        for (Value tensor : rowTensors())
          rk.seedRow(tensor, k, prefetched[next++]);
    }
    auto rowSums = rk.sweep({kb.f32(0.0), kb.f32(0.0)}, [&](Value j, llvm::ArrayRef<Value> a) {
      Value g = arith::MulFOp::create(b, rk.loadRow(dy, j), kb.load(gamma, j));
      return llvm::SmallVector<Value>{
          arith::AddFOp::create(b, a[0], g),
          arith::AddFOp::create(b, a[1], arith::MulFOp::create(b, g, xhat(j)))};
    });
    // Both sums in one reduction: a block row waits on two barriers per
    // row instead of four.
    llvm::SmallVector<Value> totals = rk.reduce(rowSums, false);
    sumG = totals[0];
    sumGX = totals[1];
    dd = kb.f32(d);
  }
  Value xhat(Value j) {
    auto &b = rk.kb.builder();
    return arith::MulFOp::create(b, arith::SubFOp::create(b, rk.loadRow(x, j), mu), inv);
  }
  struct Element {
    Value dy, xhat, dx;
  };
  Element at(Value j) {
    KernelBuilder &kb = rk.kb;
    auto &b = kb.builder();
    Value dyj = rk.loadRow(dy, j);
    Value xh = xhat(j);
    Value g = arith::MulFOp::create(b, dyj, kb.load(gamma, j));
    Value v = arith::SubFOp::create(
        b, g, arith::DivFOp::create(b, arith::MulFOp::create(b, xh, sumGX), dd));
    if (center)
      v = arith::SubFOp::create(b, v, arith::DivFOp::create(b, sumG, dd));
    Value dxj = kb.roundTo(arith::MulFOp::create(b, inv, v), element);
    if (addend)
      dxj = arith::AddFOp::create(b, dxj, rk.loadRow(addend, j));
    return {dyj, xh, kb.roundTo(dxj, element)};
  }
};
} // namespace

/// The buffers of a norm-gradient kernel beyond its inputs: the partial
/// rows of dgamma (and dbeta), and with a ColumnSumEpilogue the 16-bit
/// copy of the output and the epilogue sum's own partial rows.
struct NormGradBuffers {
  ColumnSumEpilogue epilogue;
  unsigned partials = 0;
  unsigned sumPartials = 0; ///< with epilogue.sum
  /// Whether the output itself is stored: not when it has no reader but
  /// the epilogue's sum and cast (a function result's reader is the
  /// return).
  bool storesOut = true;
  /// The kernel's stored row outputs: dx (or dx + r) if stored, then the
  /// copy.
  llvm::SmallVector<Value, 2> rowOutputs;

  /// The partial-row arguments of a kernel of |blocks| blocks, after its
  /// row outputs: [blocks, cols] parameter sums, and with an epilogue sum
  /// its [blocks, d] (null without).
  std::pair<Value, Value> insertArguments(KernelBuilder &kb, int64_t blocks, int64_t cols,
                                          int64_t d) const {
    auto f32 = kb.builder().getF32Type();
    unsigned first = static_cast<unsigned>(rowOutputs.size());
    Value params = kb.insertBufferArgument(first, MemRefType::get({blocks * cols}, f32));
    Value sums = epilogue.sum
                     ? kb.insertBufferArgument(first + 1, MemRefType::get({blocks * d}, f32))
                     : Value();
    return {params, sums};
  }
};

/// Claims |epilogue|'s ops for the norm-gradient kernel and sizes its
/// buffers for |blocks| partial rows of |cols| parameter columns.
static NormGradBuffers normGradBuffers(LoweringContext &ctx, Value out,
                                       ColumnSumEpilogue epilogue, int64_t blocks,
                                       int64_t cols, int64_t d) {
  NormGradBuffers buffers;
  buffers.epilogue = epilogue;
  buffers.partials = ctx.scratch(blocks * cols * 4, "f32 norm-gradient partial sums");
  buffers.storesOut = llvm::any_of(out.getUsers(), [&](Operation *user) {
    return user != epilogue.sum.getOperation() && user != epilogue.cast.getOperation();
  });
  if (buffers.storesOut)
    buffers.rowOutputs.push_back(out);
  if (epilogue.cast) {
    buffers.rowOutputs.push_back(epilogue.cast.getResult());
    ctx.loweredElsewhere.insert(epilogue.cast);
  }
  if (epilogue.sum) {
    buffers.sumPartials = ctx.scratch(blocks * d * 4, "f32 norm-gradient epilogue partial sums");
    ctx.loweredElsewhere.insert(epilogue.sum);
  }
  return buffers;
}

/// The values a norm-gradient kernel stores at an element whose output is
/// |dx| (rounded to |element|), one per NormGradBuffers::rowOutputs: dx,
/// and with the epilogue's cast its 16-bit copy, rounded as the tx.cast
/// would.
static llvm::SmallVector<Value, 2> rowValues(KernelBuilder &kb, const NormGradBuffers &buffers,
                                             Value dx, Type element) {
  llvm::SmallVector<Value, 2> values;
  if (buffers.storesOut)
    values.push_back(dx);
  if (tx::CastOp cast = buffers.epilogue.cast)
    values.push_back(kb.castScalar(dx, element, typeOf(cast.getResult()).getElementType()));
  return values;
}

/// Both norm-gradient kernels end alike: the finished kernel 1 (dx, and
/// one partial row per block) is launched, then kernel 2 adds the partial
/// rows of each column in a fixed order into dgamma (and dbeta), and the
/// epilogue's column sum likewise.
static LogicalResult launchNormGrad(LoweringContext &ctx, Operation *op, KernelBuilder &kb,
                                    llvm::ArrayRef<Value> outputs, llvm::ArrayRef<Value> inputs,
                                    const NormGradBuffers &buffers, int64_t blocks,
                                    int64_t cols, bool center, int64_t d,
                                    bool computesRows) {
  tx::ReduceSumOp epilogueSum = buffers.epilogue.sum;
  kb.finish();
  // Row tensors computed here interleave their loads with the math that
  // computes them (a tanh's branches split the block): grouped, the
  // loads of a group's consecutive elements merge into 16-byte ones.
  if (computesRows)
    kb.groupMemoryAccesses();
  if (failed(kb.status()))
    return failure();
  llvm::SmallVector<unsigned> written = ctx.buffersOf(buffers.rowOutputs);
  written.push_back(buffers.partials);
  if (epilogueSum)
    written.push_back(buffers.sumPartials);
  ctx.launch(kb, op, static_cast<unsigned>(blocks), written, ctx.buffersOf(inputs));
  if (epilogueSum &&
      failed(sumPartialRows(ctx, epilogueSum, buffers.sumPartials, blocks, epilogueSum.getResult())))
    return failure();
  llvm::SmallVector<Value> paramGrads(outputs.begin() + 1, outputs.end());
  if (deferColumnSums(ctx, op, buffers.partials, blocks, cols, paramGrads, d))
    return success();
  // dgamma, or for a layer norm columns [0, d) dgamma's and [d, 2d) dbeta's.
  Value dbeta = center ? paramGrads[1] : Value();
  return lowerPartialColumnSums(ctx, op, paramGrads, buffers.partials, blocks, cols,
                                /*isMax=*/false, [&](KernelBuilder &k, Value col, Value sum) {
    storeColumnSplit(k, paramGrads[0], dbeta, d, col, sum);
  });
}

/// Blocks of the warp-row norm gradient: at most this many, each of 8
/// warps walking a few rows (GPT-2's 16384 rows: 512 blocks, 4 rows per
/// warp), so the partial-sum rows (one per block) stay few.
constexpr int64_t kWarpRowGradBlocks = 512;
/// Column partials combined per round through shared memory at the end of
/// the warp-row norm gradient: kWarpsPerBlock x 32 lanes x this many f32.
constexpr int64_t kCombineSlots = 16;

/// tx.layer_norm_grad / tx.rms_norm_grad for rows usesWarpRows accepts.
/// Kernel 1: each warp walks its own rows [w R, (w + 1) R) and computes dx
/// (plus the residual gradient when |addend|), adding its lanes' dy * xhat
/// (and dy) per column into running sums across the rows; at the end the
/// block's 8 warps add theirs in warp order and write one partial row per
/// block. Kernel 2 adds the blocks' partial rows in a fixed order
/// (lowerPartialColumnSums). Deterministic, no atomics.
///
/// The running sums live in shared memory, one slot per warp, step, sum and
/// lane, when they fit (GPT-2's 768: 48 KB, 72 KB with a ColumnSumEpilogue's
/// sum): held in registers they were 48 of a lane's 168, which left one
/// block (8 warps) per SM and too few bytes in flight for a memory-bound
/// kernel. Otherwise (a layer norm of 1024 without the epilogue: past the
/// static 48 KB) they stay in registers and are combined through shared
/// memory in rounds of kCombineSlots. Both add the same terms in the same
/// order: the same bits.
static LogicalResult lowerNormGradWarpRows(LoweringContext &ctx, Operation *op, bool center,
                                           llvm::ArrayRef<Value> outputs,
                                           llvm::ArrayRef<Value> inputs, Value addend,
                                           llvm::ArrayRef<Value> computed,
                                           ColumnSumEpilogue epilogue,
                                           int64_t d, int64_t rows) {
  Value dy = op->getOperand(0), x = op->getOperand(1), gamma = op->getOperand(2);
  Value mean = center ? op->getOperand(3) : Value();
  Value rstd = op->getOperand(center ? 4 : 3);
  int64_t blocks = std::min<int64_t>(ceilDiv(rows, kWarpsPerBlock), kWarpRowGradBlocks);
  int64_t rowsPerWarp = ceilDiv(rows, blocks * kWarpsPerBlock);
  blocks = ceilDiv(ceilDiv(rows, rowsPerWarp), kWarpsPerBlock);
  int64_t paramSums = static_cast<int64_t>(outputs.size()) - 1; // dgamma [, dbeta]
  int64_t cols = paramSums * d;
  // The running sums: dgamma's [, dbeta's] [, the epilogue's].
  int64_t sums = paramSums + (epilogue.sum ? 1 : 0);
  NormGradBuffers buffers = normGradBuffers(ctx, outputs[0], epilogue, blocks, cols, d);

  // The lanes' groups as the forward's (warpRowWidth): 16-byte loads of dy
  // and x and stores of dx for 16-bit rows.
  Type loaded = typeOf(KernelBuilder::storageOf(x, ctx.plan)).getElementType();
  int64_t width = warpRowWidth(d, loaded);
  // Per step: the lane's running dgamma (and dbeta, and the epilogue's)
  // term of that column.
  int64_t total = warpRowSteps(d, width) * sums;
  // With the epilogue's third sum GPT-2's 768 takes 72 KB: dynamic shared
  // memory (kept in registers the sums would be 72 floats a lane). Without
  // it the static limit stays where the kernels were measured.
  int64_t sharedBytes = epilogue.sum ? maxSharedBytes(ctx) : kMaxStaticSharedBytes;
  bool sumsInShared = kWarpsPerBlock * 32 * total * 4 <= sharedBytes;
  RowKernel rk(ctx, op, buffers.rowOutputs, inputs, d, /*warpRows=*/true,
               kWarpsPerBlock * 32 * (sumsInShared ? total : kCombineSlots),
               kRowElementsInRegisters, width);
  KernelBuilder &kb = rk.kb;
  rk.computed.insert(computed.begin(), computed.end());
  // Computing dy and r keeps their inputs live beside the row: ptxas gave
  // Llama's first-layer norm gradient (dy from three products, r from two
  // f32 gradients) 168 registers, one block an SM. Two blocks an SM, as
  // the kernel that loads dy has (110 registers).
  if (!computed.empty())
    kb.setMinBlocksPerSM(2);
  auto &b = kb.builder();
  Value partials, sumPartials; // plain names: lambdas below capture them
  std::tie(partials, sumPartials) = buffers.insertArguments(kb, blocks, cols, d);
  Value smem = kb.workgroupMemory();
  // Lane |rk.lane|'s word of slot |slot| of warp |w| (slots of
  // |slotsPerWarp|): consecutive lanes, consecutive banks.
  auto smemAt = [&](Value w, Value slot, int64_t slotsPerWarp) {
    Value s = arith::AddIOp::create(b, arith::MulIOp::create(b, w, kb.idx(slotsPerWarp)), slot);
    return Value(arith::AddIOp::create(b, arith::MulIOp::create(b, s, kb.idx(32)), rk.lane));
  };
  Value warpIndex = rk.row; // block * 8 + warp, before setRow
  Value first = arith::MulIOp::create(b, warpIndex, kb.idx(rowsPerWarp));
  Value last = arith::MinUIOp::create(b, arith::AddIOp::create(b, first, kb.idx(rowsPerWarp)),
                                      kb.idx(rows));
  first = arith::MinUIOp::create(b, first, last);
  Type element = typeOf(outputs[0]).getElementType();
  if (sumsInShared)
    for (int64_t k = 0; k < total; ++k)
      memref::StoreOp::create(b, kb.f32(0.0), smem,
                              ValueRange{smemAt(rk.warp, kb.idx(k), total)});
  llvm::SmallVector<Value> init(sumsInShared ? 0 : total, kb.f32(0.0));
  NormGradRow row{rk, center, dy, x, gamma, mean, rstd, addend, d, element};
  llvm::SmallVector<Value> acc = kb.loop(first, last, kb.idx(1), init,
                                         [&](Value r, llvm::ArrayRef<Value> carried) {
    row.begin(r);
    llvm::SmallVector<Value> next(carried.begin(), carried.end());
    rk.storeSweep(buffers.rowOutputs, [&](Value j, int64_t step) {
      NormGradRow::Element e = row.at(j);
      Value inRow = rk.stepInRow(step);
      auto add = [&](int64_t slot, Value term) {
        Value where = sumsInShared ? smemAt(rk.warp, kb.idx(slot), total) : Value();
        Value old = sumsInShared ? Value(memref::LoadOp::create(b, smem, ValueRange{where}))
                                 : carried[slot];
        Value sum = arith::AddFOp::create(b, old, term);
        if (inRow)
          sum = arith::SelectOp::create(b, inRow, sum, old);
        if (sumsInShared)
          memref::StoreOp::create(b, sum, smem, ValueRange{where});
        else
          next[slot] = sum;
      };
      add(step * sums, arith::MulFOp::create(b, e.dy, e.xhat));
      if (center)
        add(step * sums + 1, e.dy);
      if (epilogue.sum)
        add(step * sums + paramSums, e.dx);
      return rowValues(kb, buffers, e.dx, element);
    });
    return next;
  });

  // The block's warps add their column terms in warp order: warp w adds
  // slots w, w + 8, ... over the 8 warps and stores them in the block's
  // row. Registers go through shared memory kCombineSlots slots per round.
  Value partialRow = arith::MulIOp::create(b, kb.blockIndex(), kb.idx(cols));
  int64_t perRound = sumsInShared ? total : kCombineSlots;
  for (int64_t round = 0; round < total; round += perRound) {
    int64_t count = std::min<int64_t>(perRound, total - round);
    gpu::BarrierOp::create(b);
    if (!sumsInShared) {
      for (int64_t i = 0; i < count; ++i)
        memref::StoreOp::create(b, acc[round + i], smem,
                                ValueRange{smemAt(rk.warp, kb.idx(i), perRound)});
      gpu::BarrierOp::create(b);
    }
    for (int64_t t = 0; t * kWarpsPerBlock < count; ++t) {
      Value i = arith::AddIOp::create(b, rk.warp, kb.idx(t * kWarpsPerBlock));
      kb.ifThen(arith::CmpIOp::create(b, arith::CmpIPredicate::ult, i, kb.idx(count)), [&] {
        Value sum = kb.f32(0.0);
        for (int64_t w = 0; w < kWarpsPerBlock; ++w)
          sum = arith::AddFOp::create(
              b, sum,
              memref::LoadOp::create(b, smem, ValueRange{smemAt(kb.idx(w), i, perRound)}));
        // Slot round + i is step s, sum q: element j of step s, column
        // q * d + j.
        Value slot = arith::AddIOp::create(b, i, kb.idx(round));
        Value s = arith::DivUIOp::create(b, slot, kb.idx(sums));
        Value q = arith::RemUIOp::create(b, slot, kb.idx(sums));
        Value group = arith::DivUIOp::create(b, s, kb.idx(width));
        Value offset = arith::RemUIOp::create(b, s, kb.idx(width));
        Value j = arith::AddIOp::create(
            b,
            arith::AddIOp::create(b, arith::MulIOp::create(b, group, kb.idx(32 * width)),
                                  arith::MulIOp::create(b, rk.lane, kb.idx(width))),
            offset);
        kb.ifThen(arith::CmpIOp::create(b, arith::CmpIPredicate::ult, j, kb.idx(d)), [&] {
          auto storeParam = [&] {
            Value col = arith::AddIOp::create(b, arith::MulIOp::create(b, q, kb.idx(d)), j);
            memref::StoreOp::create(b, sum, partials,
                                    ValueRange{arith::AddIOp::create(b, partialRow, col)});
          };
          if (!epilogue.sum)
            return storeParam();
          // Sum q == paramSums is the epilogue's: its own partial rows.
          Value isEpilogue =
              arith::CmpIOp::create(b, arith::CmpIPredicate::eq, q, kb.idx(paramSums));
          kb.ifThenElse(isEpilogue, [&] {
            Value at = arith::AddIOp::create(
                b, arith::MulIOp::create(b, kb.blockIndex(), kb.idx(d)), j);
            memref::StoreOp::create(b, sum, sumPartials, ValueRange{at});
          }, storeParam);
        });
      });
    }
  }
  return launchNormGrad(ctx, op, kb, outputs, inputs, buffers, blocks, cols, center, d,
                        !computed.empty());
}

namespace {
/// Where a block-row norm gradient keeps its running column sums (dgamma,
/// and for a LayerNorm dbeta) in shared memory, after the kReduceFloats
/// floats of the row reductions. With groups of |width| > 1 consecutive
/// elements a thread (blockRowWidth), a thread's columns j = g*256*W + t*W
/// + i (i < W) would sit W words apart across the warp: a W-way bank
/// conflict on every running-sum update. So the sums are stored transposed
/// within each group, at g*256*W + i*256 + t (consecutive threads,
/// consecutive banks), each sum's columns padded to whole groups.
struct ColumnSumSlots {
  int64_t d, width;
  int64_t groupSpan() const { return kBlockSize * width; }
  /// Floats each sum takes (d, or padded to whole groups).
  int64_t sumSpan() const { return width > 1 ? ceilDiv(d, groupSpan()) * groupSpan() : d; }
  /// Floats of workgroup memory the reductions and |sums| sums take.
  int64_t floats(int64_t sums) const { return kReduceFloats + sums * sumSpan(); }
  /// The word of sum |s| at column |j|.
  Value at(KernelBuilder &kb, int64_t s, Value j) const {
    auto &b = kb.builder();
    Value within = j;
    if (width > 1) {
      Value group = arith::DivUIOp::create(b, j, kb.idx(groupSpan()));
      Value rest = arith::RemUIOp::create(b, j, kb.idx(groupSpan()));
      Value thread = arith::DivUIOp::create(b, rest, kb.idx(width));
      Value lane = arith::RemUIOp::create(b, rest, kb.idx(width));
      within = arith::AddIOp::create(
          b, arith::MulIOp::create(b, group, kb.idx(groupSpan())),
          arith::AddIOp::create(b, arith::MulIOp::create(b, lane, kb.idx(kBlockSize)), thread));
    }
    return arith::AddIOp::create(b, within, kb.idx(kReduceFloats + s * sumSpan()));
  }
  /// The word of column |c| of the partial row (dgamma's columns [0, d),
  /// then with |center| dbeta's [d, 2d)).
  Value ofPartialColumn(KernelBuilder &kb, bool center, Value c) const {
    if (!center)
      return at(kb, 0, c);
    auto &b = kb.builder();
    Value isBeta = arith::CmpIOp::create(b, arith::CmpIPredicate::uge, c, kb.idx(d));
    Value j = arith::SelectOp::create(b, isBeta, arith::SubIOp::create(b, c, kb.idx(d)), c);
    return arith::SelectOp::create(b, isBeta, at(kb, 1, j), at(kb, 0, j));
  }
};
} // namespace

LogicalResult cuda::lowerNormGrad(LoweringContext &ctx, Operation *op) {
  bool center = isa<tx::LayerNormGradOp>(op);
  Value dy = op->getOperand(0), x = op->getOperand(1), gamma = op->getOperand(2);
  Value mean = center ? op->getOperand(3) : Value();
  Value rstd = op->getOperand(center ? 4 : 3);
  int64_t d = typeOf(x).getShape().back();
  int64_t rows = d ? typeOf(x).getNumElements() / d : 0;
  llvm::SmallVector<Value> outputs(op->getResults().begin(), op->getResults().end());
  // Row tensors the kernel computes from what they are computed from
  // instead of loading them: dy (normGradInputComputedByNormGrad), and a
  // residual epilogue's r when no kernel stored it.
  llvm::SmallVector<Value, 2> computed;
  if (auto it = ctx.normComputedInputs.find(op); it != ctx.normComputedInputs.end())
    computed.push_back(it->second);
  llvm::SetVector<Value> inputSet;
  auto readRow = [&](Value v) {
    if (llvm::is_contained(computed, v))
      KernelBuilder::collectInputs(v, ctx.plan, inputSet);
    else
      inputSet.insert(v);
  };
  readRow(dy);
  inputSet.insert(x);
  inputSet.insert(gamma);
  inputSet.insert(rstd);
  if (center)
    inputSet.insert(mean);
  // dx, or with a residual epilogue dx + r in the add's place.
  Value addend;
  if (tx::AddOp residual = residualEpilogue(ctx, op)) {
    addend = residual.getLhs() == outputs[0] ? residual.getRhs() : residual.getLhs();
    outputs[0] = residual.getResult();
    if (!ctx.plan.isMaterialized(addend))
      computed.push_back(addend);
    readRow(addend);
    ctx.loweredElsewhere.insert(residual);
  }
  llvm::SmallVector<Value> inputs(inputSet.begin(), inputSet.end());
  ColumnSumEpilogue epilogue = columnSumEpilogue(ctx, op, outputs[0]);
  if (usesWarpRows(d) && rows > 0)
    return lowerNormGradWarpRows(ctx, op, center, outputs, inputs, addend, computed, epilogue,
                                 d, rows);
  int64_t perBlock = ceilDiv(std::max<int64_t>(rows, 1), kRowBlocks);
  int64_t blocks = ceilDiv(std::max<int64_t>(rows, 1), perBlock);
  int64_t paramSums = static_cast<int64_t>(outputs.size()) - 1; // dgamma [, dbeta]
  int64_t cols = paramSums * d;
  // The running sums: dgamma's [, dbeta's] [, the epilogue's].
  int64_t sums = paramSums + (epilogue.sum ? 1 : 0);
  NormGradBuffers buffers = normGradBuffers(ctx, outputs[0], epilogue, blocks, cols, d);
  // 16-bit rows held in registers take 8 consecutive elements a thread per
  // group, as the forward's (blockRowWidth): 16-byte loads of dy and x and
  // stores of dx instead of 2-byte ones (a warp's 64 bytes a request).
  Type loaded = typeOf(KernelBuilder::storageOf(x, ctx.plan)).getElementType();
  int64_t width = blockRowInRegisters(d, kNormRowElementsInRegisters) ? blockRowWidth(d, loaded) : 1;
  ColumnSumSlots slots{d, width};

  // The running column sums in shared memory when they fit (after the 32
  // floats blockReduce uses): a load and a store of the partial row in
  // global memory per element and row cost as much traffic as the row
  // itself (bf16 rows of 4096: a quarter of the copy bandwidth). Each
  // thread adds only into its own columns, as in the partial row. Past the
  // 48 KiB of static shared memory (LayerNorm's dgamma and dbeta over rows
  // of 8192: 64 KiB) the kernel takes dynamic shared memory: in global
  // memory those rows ran at 36-45% of the copy bandwidth on an H100, half
  // of RMSNorm's one column sum in static memory (DeviceLog session 28).
  bool sumsInShared = slots.floats(sums) * 4 <= maxSharedBytes(ctx);
  RowKernel rk(ctx, op, buffers.rowOutputs, inputs, d, /*warpRows=*/false,
               sumsInShared ? slots.floats(sums) : kReduceFloats, kNormRowElementsInRegisters,
               width);
  KernelBuilder &kb = rk.kb;
  rk.computed.insert(computed.begin(), computed.end());
  auto &b = kb.builder();
  Value partials, sumPartials; // plain names: lambdas below capture them
  std::tie(partials, sumPartials) = buffers.insertArguments(kb, blocks, cols, d);
  Value smem = kb.workgroupMemory();
  Value block = kb.blockIndex();
  Value first = arith::MulIOp::create(b, block, kb.idx(perBlock));
  Value last = arith::MinUIOp::create(b, arith::AddIOp::create(b, first, kb.idx(perBlock)),
                                      kb.idx(rows));
  Value partialRow = arith::MulIOp::create(b, block, kb.idx(cols));
  Type element = typeOf(outputs[0]).getElementType();
  NormGradRow normRow{rk, center, dy, x, gamma, mean, rstd, addend, d, element};
  // Rows held in registers are software-pipelined: the loop carries the
  // next row's loads, issued before this row's reduction and stores, so a
  // block has a row in flight while it waits on its barriers. Without it
  // GPT-1.3B's norm gradient (rows of 2048) stalled on its loads: 2.4 TB/s,
  // 21% of issue slots busy (Nsight Compute, DeviceLog session 16).
  bool pipelined = rows > 0 && rk.inRegisters() && rk.steps() <= kPipelinedRowElements;
  llvm::SmallVector<Value> firstLoads;
  if (pipelined) // a block without rows loads row rows - 1 and never uses it
    firstLoads = normRow.prefetch(arith::MinUIOp::create(b, first, kb.idx(rows - 1)));
  kb.loop(first, last, kb.idx(1), firstLoads, [&](Value row, llvm::ArrayRef<Value> carried) {
    // The next row's loads (the last row loads itself again: in bounds,
    // unused), then this row from the carried ones.
    llvm::SmallVector<Value> nextLoads;
    if (pipelined) {
      Value next = arith::MinUIOp::create(b, arith::AddIOp::create(b, row, kb.idx(1)),
                                          arith::SubIOp::create(b, last, kb.idx(1)));
      nextLoads = normRow.prefetch(next);
    }
    normRow.begin(row, carried);
    Value firstRow = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, row, first);
    // This thread's running sum at column |j| of sum |s| (0: dgamma, 1:
    // dbeta, paramSums: the epilogue's) of the block's partial row; the
    // block's first row starts it (none is cleared).
    auto accumulate = [&](int64_t s, Value j, Value v) {
      bool ownRows = s == paramSums; // the epilogue's partial rows
      Value slot =
          sumsInShared ? slots.at(kb, s, j)
          : ownRows
              ? Value(arith::AddIOp::create(
                    b, arith::MulIOp::create(b, block, kb.idx(d)), j))
              : Value(arith::AddIOp::create(
                    b, partialRow, arith::AddIOp::create(b, j, kb.idx(s * d))));
      Value sums = sumsInShared ? smem : ownRows ? sumPartials : partials;
      Value old = memref::LoadOp::create(b, sums, ValueRange{slot});
      Value sum = arith::SelectOp::create(b, firstRow, v, arith::AddFOp::create(b, old, v));
      memref::StoreOp::create(b, sum, sums, ValueRange{slot});
    };
    // In registers, every dx is computed and stored before the running
    // sums are updated: the stores sit together, so a thread's group of 8
    // 16-bit dx becomes one 16-byte store (between them, the shared-memory
    // updates kept each store scalar). The two sweeps compute the same
    // values from the same loads; LLVM keeps one copy.
    bool storesFirst = rk.inRegisters();
    if (storesFirst)
      rk.storeSweep(buffers.rowOutputs, [&](Value j, int64_t) {
        return rowValues(kb, buffers, normRow.at(j).dx, element);
      });
    rk.sweep({}, [&](Value j, llvm::ArrayRef<Value>) {
      NormGradRow::Element e = normRow.at(j);
      if (!storesFirst) {
        llvm::SmallVector<Value, 2> values = rowValues(kb, buffers, e.dx, element);
        for (size_t o = 0; o < values.size(); ++o)
          kb.store(buffers.rowOutputs[o], rk.at(j), values[o]);
      }
      accumulate(0, j, arith::MulFOp::create(b, e.dy, e.xhat));
      if (center)
        accumulate(1, j, e.dy);
      if (epilogue.sum)
        accumulate(paramSums, j, e.dx);
      return llvm::SmallVector<Value>{};
    });
    return nextLoads;
  });
  if (rows == 0) {
    // A step over zero rows: the one block has no row, and its partial
    // rows are what the column sums read, so it writes them as empty sums
    // (dgamma and dbeta are exact zeros, as the executor's sums over
    // nothing; the scratch would otherwise be whatever it held).
    kb.blockStridedLoop(cols, {}, [&](Value c, llvm::ArrayRef<Value>) {
      memref::StoreOp::create(b, kb.f32(0.0), partials,
                              ValueRange{arith::AddIOp::create(b, partialRow, c)});
      return llvm::SmallVector<Value>{};
    });
    if (epilogue.sum)
      kb.blockStridedLoop(d, {}, [&](Value j, llvm::ArrayRef<Value>) {
        memref::StoreOp::create(b, kb.f32(0.0), sumPartials, ValueRange{j});
        return llvm::SmallVector<Value>{};
      });
  }
  if (sumsInShared) {
    // The block's sums into its partial row (a block without rows has
    // none: its row is never read, as with the sums in global memory).
    gpu::BarrierOp::create(b);
    Value hasRows = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, first, last);
    kb.ifThen(hasRows, [&] {
      kb.blockStridedLoop(cols, {}, [&](Value c, llvm::ArrayRef<Value>) {
        Value sum = memref::LoadOp::create(b, smem,
                                           ValueRange{slots.ofPartialColumn(kb, center, c)});
        memref::StoreOp::create(b, sum, partials,
                                ValueRange{arith::AddIOp::create(b, partialRow, c)});
        return llvm::SmallVector<Value>{};
      });
      if (!epilogue.sum)
        return;
      Value sumRow = arith::MulIOp::create(b, block, kb.idx(d));
      kb.blockStridedLoop(d, {}, [&](Value j, llvm::ArrayRef<Value>) {
        Value sum = memref::LoadOp::create(b, smem, ValueRange{slots.at(kb, paramSums, j)});
        memref::StoreOp::create(b, sum, sumPartials,
                                ValueRange{arith::AddIOp::create(b, sumRow, j)});
        return llvm::SmallVector<Value>{};
      });
    });
  }
  return launchNormGrad(ctx, op, kb, outputs, inputs, buffers, blocks, cols, center, d,
                        !computed.empty());
}

/// tx.softmax over any axis: one block per row along the axis; rows of an
/// inner axis are strided (element j of row (o, i) at (o*D + j)*inner + i).
LogicalResult cuda::lowerSoftmax(LoweringContext &ctx, Operation *op) {
  auto softmax = cast<tx::SoftmaxOp>(op);
  Value x = softmax.getInput(), y = softmax.getResult();
  int64_t rank = typeOf(x).getRank();
  int64_t axis = static_cast<int64_t>(softmax.getAxis());
  if (axis < 0)
    axis += rank;
  auto shape = typeOf(x).getShape();
  int64_t d = shape[axis], inner = 1;
  for (int64_t k = axis + 1; k < rank; ++k)
    inner *= shape[k];
  int64_t rows = d ? typeOf(x).getNumElements() / d : 0;
  RowKernel rk(ctx, op, {y}, {x}, d);
  KernelBuilder &kb = rk.kb;
  auto &b = kb.builder();
  Value rowBase = rk.base;
  if (inner != 1) {
    Value o = arith::DivUIOp::create(b, rk.row, kb.idx(inner));
    Value i = arith::RemUIOp::create(b, rk.row, kb.idx(inner));
    rowBase = arith::AddIOp::create(b, arith::MulIOp::create(b, o, kb.idx(d * inner)), i);
  }
  auto at = [&](Value j) -> Value {
    Value offset = inner == 1 ? j : Value(arith::MulIOp::create(b, j, kb.idx(inner)));
    return arith::AddIOp::create(b, rowBase, offset);
  };
  auto m = kb.blockStridedLoop(d, {kb.f32(-INFINITY)}, [&](Value j, llvm::ArrayRef<Value> a) {
    return llvm::SmallVector<Value>{arith::MaximumFOp::create(b, a[0], kb.load(x, at(j)))};
  });
  Value max = kb.blockReduce(m[0], true);
  auto s2 = kb.blockStridedLoop(d, {kb.f32(0.0)}, [&](Value j, llvm::ArrayRef<Value> a) {
    Value e = math::ExpOp::create(b, arith::SubFOp::create(b, kb.load(x, at(j)), max));
    return llvm::SmallVector<Value>{arith::AddFOp::create(b, a[0], e)};
  });
  Value sum = kb.blockReduce(s2[0], false);
  Type element = typeOf(y).getElementType();
  kb.blockStridedLoop(d, {}, [&](Value j, llvm::ArrayRef<Value>) {
    Value e = math::ExpOp::create(b, arith::SubFOp::create(b, kb.load(x, at(j)), max));
    kb.store(y, at(j), kb.roundTo(arith::DivFOp::create(b, e, sum), element));
    return llvm::SmallVector<Value>{};
  });
  kb.finish();
  if (failed(kb.status()))
    return failure();
  ctx.launch(kb, op, static_cast<unsigned>(std::max<int64_t>(rows, 1)),
             ctx.buffersOf({y}), ctx.buffersOf({x}));
  return success();
}

/// Checks the cross-entropy forms the GPU kernels handle: scores [N, C] and
/// labels [N] (tx-cross-entropy-rows brings [N, C, d...] scores to that
/// form before the lowering).
static LogicalResult checkCrossEntropy(Operation *op, Value scores) {
  if (typeOf(scores).getRank() != 2)
    return op->emitError("the GPU cross-entropy expects scores of rank 2, but got rank ")
           << typeOf(scores).getRank();
  return success();
}

/// The label of a row and whether it counts (not the ignore index).
static std::pair<Value, Value> rowLabel(KernelBuilder &kb, Value labels,
                                        Value row, std::optional<int64_t> ignore,
                                        int64_t classes) {
  auto &b = kb.builder();
  Value label = kb.load(labels, row);
  Value valid = arith::ConstantIntOp::create(b, 1, 1);
  if (ignore)
    valid = arith::CmpIOp::create(b, arith::CmpIPredicate::ne, label,
                                  arith::ConstantIntOp::create(b, *ignore, 64));
  Value zero = arith::ConstantIntOp::create(b, 0, 64);
  Value clamped = arith::MaxSIOp::create(
      b, arith::MinSIOp::create(b, label, arith::ConstantIntOp::create(b, classes - 1, 64)), zero);
  return {clamped, valid};
}

/// A row's weight: 0 when its label is ignored, else the label's class
/// weight (|weights|, [C]) or 1 without class weights.
static Value rowWeight(KernelBuilder &kb, Value weights, Value label, Value valid) {
  auto &b = kb.builder();
  Value w = weights ? kb.load(weights, arith::IndexCastOp::create(b, b.getIndexType(), label))
                    : kb.f32(1.0);
  return arith::SelectOp::create(b, valid, w, kb.f32(0.0));
}

/// Elements per step of a sweep over rows of |length| elements of |tensor|
/// with vector accesses: 8 (16 bytes of bf16/f16, two 16-byte accesses of
/// f32) when every row starts at a multiple of 8 elements and the tensor's
/// memory allows it (KernelBuilder::vectorAccessible), else 1.
static int64_t vectorChunk(KernelBuilder &kb, Value tensor, int64_t length) {
  constexpr unsigned kChunk = 8;
  Type element = typeOf(tensor).getElementType();
  bool wide = element.isF32();
  if (length % kChunk != 0 || !kb.vectorAccessible(tensor, wide ? kChunk / 2 : kChunk))
    return 1;
  return kChunk;
}

/// exp(x - max) for the cross-entropy's softmax: |max| is the row's max
/// or a running max at least x, so the argument is never above 0 (or NaN
/// where both are -inf, which the callers select away). In f32 it takes
/// fastExpOfNonPositive's two instructions instead of libdevice's eleven:
/// GPT-2's loss kernel, which reads 50,304 logits a row twice, kept an H100's
/// issue slots 68% busy at 85% of DRAM bandwidth (Nsight Compute, session
/// 41), and an H200's bandwidth asks 1.45 times the instructions a second.
/// Within 1e-6 relative where the argument is above -16.
static Value expBelowMax(KernelBuilder &kb, Value x, Value max) {
  auto &b = kb.builder();
  Value d = arith::SubFOp::create(b, x, max);
  if (d.getType().isF32())
    return kb.fastExpOfNonPositive(d);
  return math::ExpOp::create(b, d);
}

/// Row max and sum of exp(x - max).
static std::pair<Value, Value> rowLogSumExpParts(RowKernel &rk, Value scores,
                                                 int64_t classes) {
  KernelBuilder &kb = rk.kb;
  auto &b = kb.builder();
  if (rk.inRegisters()) {
    // Short rows: two passes over the thread's registers.
    auto m = rk.sweep({kb.f32(-INFINITY)}, [&](Value j, llvm::ArrayRef<Value> a) {
      return llvm::SmallVector<Value>{arith::MaximumFOp::create(b, a[0], rk.loadRow(scores, j))};
    });
    Value max = kb.blockReduce(m[0], true);
    auto s = rk.sweep({kb.f32(0.0)}, [&](Value j, llvm::ArrayRef<Value> a) {
      Value e = expBelowMax(kb, rk.loadRow(scores, j), max);
      return llvm::SmallVector<Value>{arith::AddFOp::create(b, a[0], e)};
    });
    return {max, kb.blockReduce(s[0], false)};
  }
  // Long rows (a vocabulary): one pass with a running max, each thread's sum
  // rescaled when its max grows (online softmax), then the block's max and
  // the threads' sums rescaled to it. Reads the logits once instead of
  // twice. A running max still at -inf keeps the sum at 0 (exp(-inf - -inf)
  // would be NaN). When the row splits into 16-byte chunks (vectorChunk),
  // each step takes one chunk with one vector load and rescales once per
  // chunk: 9 exponentials per 8 logits instead of 16, and 8 times fewer
  // load instructions.
  Value negInf = kb.f32(-INFINITY);
  int64_t chunk = vectorChunk(kb, scores, classes);
  auto ms = kb.blockStridedLoop(classes / chunk, {negInf, kb.f32(0.0)}, [&](Value c, llvm::ArrayRef<Value> a) {
    llvm::SmallVector<Value> xs =
        chunk == 1 ? llvm::SmallVector<Value>{kb.load(scores, rk.at(c))}
                   : kb.loadVector(scores, rk.at(arith::MulIOp::create(b, c, kb.idx(chunk))),
                                   chunk);
    Value m = a[0];
    for (Value x : xs)
      m = arith::MaximumFOp::create(b, m, x);
    Value live = arith::CmpFOp::create(b, arith::CmpFPredicate::ONE, m, negInf);
    Value sum = arith::MulFOp::create(
        b, a[1], expBelowMax(kb, a[0], m));
    for (Value x : xs)
      sum = arith::AddFOp::create(b, sum, expBelowMax(kb, x, m));
    return llvm::SmallVector<Value>{m, arith::SelectOp::create(b, live, sum, kb.f32(0.0))};
  });
  Value max = kb.blockReduce(ms[0], true);
  Value live = arith::CmpFOp::create(b, arith::CmpFPredicate::ONE, ms[0], negInf);
  Value mine = arith::SelectOp::create(
      b, live,
      arith::MulFOp::create(b, ms[1], expBelowMax(kb, ms[0], max)),
      kb.f32(0.0));
  return {max, kb.blockReduce(mine, false)};
}

namespace {
/// What tx.softmax_cross_entropy_loss and tx.softmax_cross_entropy_grad
/// share: scores [rows, classes], labels [rows], optional class weights, the
/// reduction and the ignored label.
struct CrossEntropyForm {
  Value scores, labels, weights;
  int64_t rows = 0, classes = 0;
  tx::LossReduction reduction = tx::LossReduction::mean;
  std::optional<int64_t> ignore;

  bool none() const { return reduction == tx::LossReduction::none; }
  bool mean() const { return reduction == tx::LossReduction::mean; }
};
} // namespace

template <typename CrossEntropyOp>
static CrossEntropyForm crossEntropyForm(CrossEntropyOp op) {
  CrossEntropyForm f;
  f.scores = op.getScores();
  f.labels = op.getLabels();
  f.weights = op.getWeights();
  f.rows = typeOf(f.scores).getShape()[0];
  f.classes = typeOf(f.scores).getShape()[1];
  f.reduction = op.getReduction();
  if (op.getIgnoreIndex())
    f.ignore = static_cast<int64_t>(*op.getIgnoreIndex());
  return f;
}

/// One block sums the rows' weights into a 4-byte scratch buffer: the
/// gradient's norm (1 unless the reduction is mean). Returns the buffer.
static FailureOr<unsigned> emitGradientNorm(LoweringContext &ctx, Operation *op,
                                            const CrossEntropyForm &f) {
  unsigned norm = ctx.scratch(4, "loss weight");
  llvm::SmallVector<Value> normInputs{f.labels};
  if (f.weights)
    normInputs.push_back(f.weights);
  KernelBuilder kb(ctx.gpuModule, ctx.kernelName(op), {}, normInputs, ctx.plan, 32);
  auto &b = kb.builder();
  auto scalarType = MemRefType::get({1}, b.getF32Type());
  Value normArg = kb.insertBufferArgument(0, scalarType);
  auto count = kb.blockStridedLoop(f.rows, {kb.f32(0.0)}, [&](Value j, llvm::ArrayRef<Value> a) {
    auto [label, valid] = rowLabel(kb, f.labels, j, f.ignore, f.classes);
    Value w = rowWeight(kb, f.weights, label, valid);
    return llvm::SmallVector<Value>{arith::AddFOp::create(b, a[0], w)};
  });
  Value total = kb.blockReduce(count[0], false);
  Value value = f.mean() ? total : kb.f32(1.0);
  Value first = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, kb.threadIndex(), kb.idx(0));
  kb.ifThen(first, [&] { memref::StoreOp::create(b, value, normArg, ValueRange{kb.idx(0)}); });
  kb.finish();
  if (failed(kb.status()))
    return failure();
  ctx.launch(kb, op, 1, {norm}, ctx.buffersOf(normInputs));
  return norm;
}

/// Row rk.row's gradient scale, g * w / norm (|dl| the loss gradient, per
/// row for reduction none; |normArg| the kernel's argument holding the
/// norm; w only with class weights), and whether the row has a gradient:
/// its label counts and, with class weights, its weight is not 0.
static std::pair<Value, Value> gradientScale(RowKernel &rk, const CrossEntropyForm &f, Value dl,
                                             Value normArg, Value label, Value valid) {
  KernelBuilder &kb = rk.kb;
  auto &b = kb.builder();
  Value g = kb.load(dl, f.none() ? rk.row : kb.idx(0));
  Value normValue = memref::LoadOp::create(b, normArg, ValueRange{kb.idx(0)});
  Value scale = arith::DivFOp::create(b, g, normValue);
  // With class weights, the row's weight scales it, and a row of weight
  // 0 gets exactly 0 (the op's definition), like an ignored one.
  if (f.weights) {
    Value w = rowWeight(kb, f.weights, label, valid);
    scale = arith::MulFOp::create(b, scale, w);
    valid = arith::AndIOp::create(
        b, valid, arith::CmpFOp::create(b, arith::CmpFPredicate::UNE, w, kb.f32(0.0)));
  }
  return {scale, valid};
}

/// Writes row rk.row's gradient, scale * (softmax - onehot) (0 where the
/// row has none), from the row's max and sum of exp(x - max).
static void emitGradientSweep(RowKernel &rk, const CrossEntropyForm &f, Value result,
                              Value label, Value scale, Value valid, Value max, Value sum) {
  KernelBuilder &kb = rk.kb;
  auto &b = kb.builder();
  Value labelIndex = arith::IndexCastOp::create(b, b.getIndexType(), label);
  Type element = typeOf(result).getElementType();
  // Chunks of 16 bytes where both the scores and the result allow it: one
  // vector load and one vector store per 8 classes.
  int64_t chunk =
      std::min(vectorChunk(kb, f.scores, f.classes), vectorChunk(kb, result, f.classes));
  // One division a row, a multiplication an element: the division is a
  // dozen instructions, and at the vocabulary's length the sweep's
  // arithmetic is what stands beside its memory traffic.
  Value inverseSum = arith::DivFOp::create(b, kb.f32(1.0), sum);
  kb.blockStridedLoop(f.classes / chunk, {}, [&](Value c, llvm::ArrayRef<Value>) {
    Value first = chunk == 1 ? c : Value(arith::MulIOp::create(b, c, kb.idx(chunk)));
    llvm::SmallVector<Value> xs =
        chunk == 1 ? llvm::SmallVector<Value>{kb.load(f.scores, rk.at(first))}
                   : kb.loadVector(f.scores, rk.at(first), chunk);
    llvm::SmallVector<Value> out;
    for (auto [i, x] : llvm::enumerate(xs)) {
      Value j = arith::AddIOp::create(b, first, kb.idx(i));
      Value e = expBelowMax(kb, x, max);
      Value p = arith::MulFOp::create(b, e, inverseSum);
      Value isLabel = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, j, labelIndex);
      Value onehot = arith::SelectOp::create(b, isLabel, kb.f32(1.0), kb.f32(0.0));
      Value v = arith::MulFOp::create(b, scale, arith::SubFOp::create(b, p, onehot));
      out.push_back(kb.roundTo(arith::SelectOp::create(b, valid, v, kb.f32(0.0)), element));
    }
    if (chunk == 1)
      kb.store(result, rk.at(first), out[0]);
    else
      kb.storeVector(result, rk.at(first), out);
    return llvm::SmallVector<Value>{};
  });
}

/// The scores' buffer, when the gradient may be written over it by the
/// kernel of |position| (the gradient's op, or the loss's when it computes
/// the gradient too): a scratch buffer of the result's size and storage
/// type that nothing but |readersInKernel| reads at or after |position|
/// (the GEMM that wrote the logits comes before it). Each element is read
/// and then written by the same thread (the row's max and sum are known
/// before the write loop), so the kernel can run in place, and the B*T x
/// vocab logits and their gradient never take memory side by side: in
/// GPT-2-124M, 1.6 GB of the step's peak.
static std::optional<unsigned>
scoresBufferToOverwrite(LoweringContext &ctx, Operation *position,
                        llvm::ArrayRef<Operation *> readersInKernel, Value scores, Value result) {
  Value storage = KernelBuilder::storageOf(scores, ctx.plan);
  // Down views to the value that owns the buffer.
  Value root = storage;
  while (Operation *def = root.getDefiningOp()) {
    if (!isViewOp(def) || !ctx.plan.isMaterialized(def->getOperand(0)))
      break;
    root = def->getOperand(0);
  }
  Operation *rootDef = root.getDefiningOp();
  if (!rootDef || rootDef->getBlock() != position->getBlock())
    return std::nullopt;
  Value resultStorage = KernelBuilder::storageOf(result, ctx.plan);
  if (typeOf(storage).getElementType() != typeOf(resultStorage).getElementType() ||
      typeOf(storage).getNumElements() != typeOf(resultStorage).getNumElements())
    return std::nullopt;
  // Every reader of the buffer (through views and casts, which read it
  // where they are used) must come before |position|.
  llvm::SmallVector<Value> aliases = {root};
  llvm::DenseSet<Value> seen = {root};
  while (!aliases.empty()) {
    Value v = aliases.pop_back_val();
    for (Operation *user : v.getUsers()) {
      if (llvm::is_contained(readersInKernel, user))
        continue;
      if (isViewOp(user) || isa<tx::CastOp>(user)) {
        if (seen.insert(user->getResult(0)).second)
          aliases.push_back(user->getResult(0));
        continue;
      }
      if (user->getBlock() != position->getBlock() || !user->isBeforeInBlock(position))
        return std::nullopt;
    }
  }
  unsigned buffer = ctx.bufferFor(root);
  if (ctx.buffers[buffer].persistent)
    return std::nullopt;
  return buffer;
}

/// The tx.softmax_cross_entropy_grad the kernel of |loss| computes as well,
/// if any: the gradient of the same scores, labels, weights, reduction and
/// ignored label, later in the same block, whose loss gradient is known
/// where the loss runs: a constant (the training step's seed 1) or an
/// argument. A value computed before the loss in the IR is not enough: its
/// kernel may be held back past the loss (deferred column sums, scale
/// updates, ops lowered after another). The loss kernel reads every logit
/// anyway; writing the gradient there saves the gradient kernel's read of
/// the B*T x vocab logits (1.6 GB in GPT-2-124M's step).
static tx::SoftmaxCrossEntropyGradOp gradientComputedByLoss(LoweringContext &ctx,
                                                            tx::SoftmaxCrossEntropyLossOp loss) {
  if (!ctx.options.lossGradientFusion)
    return {};
  for (Operation *user : loss.getScores().getUsers()) {
    auto grad = dyn_cast<tx::SoftmaxCrossEntropyGradOp>(user);
    if (!grad || grad->getBlock() != loss->getBlock() || !loss->isBeforeInBlock(grad) ||
        ctx.loweredElsewhere.contains(grad) || grad.getScores() != loss.getScores() ||
        grad.getLabels() != loss.getLabels() || grad.getWeights() != loss.getWeights() ||
        grad.getReduction() != loss.getReduction() ||
        grad.getIgnoreIndex() != loss.getIgnoreIndex())
      continue;
    Operation *def = grad.getGrad().getDefiningOp();
    if (!def || isa<tx::ConstantOp>(def))
      return grad;
  }
  return {};
}

/// One block: the rows' total loss and weight, then their mean or sum.
static LogicalResult emitLossTotal(LoweringContext &ctx, Operation *op, Value result,
                                   const CrossEntropyForm &f, unsigned rowLoss,
                                   unsigned rowWeights) {
  KernelBuilder kb(ctx.gpuModule, ctx.kernelName(op), {result}, {}, ctx.plan, 32);
  auto &b = kb.builder();
  auto rowType = MemRefType::get({f.rows}, b.getF32Type());
  Value lossArg = kb.insertBufferArgument(kb.numArguments(), rowType);
  Value weightArg = kb.insertBufferArgument(kb.numArguments(), rowType);
  auto sums = kb.blockStridedLoop(f.rows, {kb.f32(0.0), kb.f32(0.0)}, [&](Value j, llvm::ArrayRef<Value> a) {
    Value l = memref::LoadOp::create(b, lossArg, ValueRange{j});
    Value w = memref::LoadOp::create(b, weightArg, ValueRange{j});
    return llvm::SmallVector<Value>{arith::AddFOp::create(b, a[0], l), arith::AddFOp::create(b, a[1], w)};
  });
  Value total = kb.blockReduce(sums[0], false);
  Value weight = kb.blockReduce(sums[1], false);
  Value value = f.mean() ? Value(arith::DivFOp::create(b, total, weight)) : total;
  Value first = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, kb.threadIndex(), kb.idx(0));
  kb.ifThen(first, [&] {
    kb.store(result, kb.idx(0), kb.roundTo(value, typeOf(result).getElementType()));
  });
  kb.finish();
  if (failed(kb.status()))
    return failure();
  ctx.launch(kb, op, 1, ctx.buffersOf({result}), {rowLoss, rowWeights});
  return success();
}

/// A kernel that computes the gradient as well reads each row twice: once
/// for its max and sum, then again for the gradient. The second read should
/// hit L2, so the rows between their two reads must fit in it. With
/// 256-thread blocks an H100 SM runs five such kernels' blocks (48
/// registers a thread): 660 of GPT-2's 100 KB rows of logits, 66 MB
/// against a 50 MB L2, and the second read went to DRAM (1.65 ms, no
/// faster than the two kernels' 1.70). A long row's block (one that does
/// not hold its row in registers) therefore has 1024 threads (fewer rows
/// in flight by workgroup memory alone, two or three 256-thread blocks an
/// SM, cost more in occupancy than L2 gave back: 1.8-1.9 ms), and
/// kLongRowBlocksPerSM of them fit an SM: 264 rows (26 MB) in flight.
/// With one block an SM (ptxas's 42 registers under .maxntid 1024 alone)
/// GPT-2's kernel took 1.52 ms on an H100; with two (32 registers) 1.36
/// (DeviceLog session 36).
constexpr unsigned kLongRowBlockSize = 1024;
constexpr unsigned kLongRowBlocksPerSM = 2;

/// tx.softmax_cross_entropy_loss: a row kernel writes each row's loss and
/// weight, then one block sums them (mean, sum) unless reduction is none.
/// With gradientComputedByLoss, the row kernel writes the gradient too
/// (after a block has summed the rows' weights), and the gradient's op has
/// no command of its own. Otherwise it leaves each row's max and sum for
/// the gradient's kernel.
LogicalResult cuda::lowerCrossEntropy(LoweringContext &ctx, Operation *op) {
  auto loss = cast<tx::SoftmaxCrossEntropyLossOp>(op);
  Value result = loss.getResult();
  if (failed(checkCrossEntropy(op, loss.getScores())))
    return failure();
  CrossEntropyForm f = crossEntropyForm(loss);
  tx::SoftmaxCrossEntropyGradOp grad = gradientComputedByLoss(ctx, loss);

  std::optional<unsigned> norm;
  if (grad) {
    FailureOr<unsigned> made = emitGradientNorm(ctx, grad, f);
    if (failed(made))
      return failure();
    norm = *made;
  }
  // Row losses go straight to the result for reduction none.
  unsigned rowLoss = f.none() ? ctx.bufferFor(result) : ctx.scratch(f.rows * 4, "row losses");
  unsigned rowWeights = ctx.scratch(f.rows * 4, "row weights");
  std::optional<unsigned> rowStats;
  if (!grad) {
    rowStats = ctx.scratch(f.rows * 8, "row max and sum of exp");
    ctx.rowLogSumExp[f.scores] = *rowStats;
  }
  {
    llvm::SmallVector<Value> inputs{f.scores, f.labels};
    if (f.weights)
      inputs.push_back(f.weights);
    // Stand-in values typed like the row buffers, for the builder.
    llvm::SmallVector<Value> outputs{result, result};
    if (grad) {
      inputs.push_back(grad.getGrad());
      outputs.push_back(grad.getResult());
    }
    bool longRows = !blockRowInRegisters(f.classes, kRowElementsInRegisters);
    RowKernel rk(ctx, op, outputs, inputs, f.classes, /*warpRows=*/false, /*workgroupFloats=*/32,
                 kRowElementsInRegisters, /*width=*/1,
                 grad && longRows ? kLongRowBlockSize : kBlockSize);
    KernelBuilder &kb = rk.kb;
    // Where two long-row blocks cannot run together (sm_75, sm_86/89) the
    // bound would only cost registers.
    if (grad && longRows &&
        threadsPerSM(ctx.targetSM()) >= kLongRowBlocksPerSM * kLongRowBlockSize)
      kb.setMinBlocksPerSM(kLongRowBlocksPerSM);
    auto &b = kb.builder();
    if (grad)
      kb.func().setName(kb.func().getName().str() + "_and_grad");
    Value statsArg = rowStats ? kb.insertBufferArgument(
                                    2, MemRefType::get({f.rows * 2}, b.getF32Type()))
                              : Value();
    Value normArg = norm ? kb.insertBufferArgument(kb.numArguments(),
                                                   MemRefType::get({1}, b.getF32Type()))
                         : Value();
    auto [label, valid] = rowLabel(kb, f.labels, rk.row, f.ignore, f.classes);
    // Before the sweeps' barriers: a gradient written over the scores may
    // overwrite the label's logit once every thread has passed them.
    Value picked =
        kb.load(f.scores, rk.at(arith::IndexCastOp::create(b, b.getIndexType(), label)));
    auto [max, sum] = rowLogSumExpParts(rk, f.scores, f.classes);
    Value logProb = arith::SubFOp::create(
        b, arith::SubFOp::create(b, picked, max), math::LogOp::create(b, sum));
    Value zero = kb.f32(0.0);
    Value weight = rowWeight(kb, f.weights, label, valid);
    Value negLogProb = arith::NegFOp::create(b, logProb);
    Value rowValue = arith::SelectOp::create(
        b, valid, f.weights ? Value(arith::MulFOp::create(b, weight, negLogProb)) : negLogProb,
        zero);
    rk.onFirstThread([&] {
      Value ba = kb.func().getArgument(0), bw = kb.func().getArgument(1);
      memref::StoreOp::create(b, rowValue, ba, ValueRange{rk.row});
      memref::StoreOp::create(b, weight, bw, ValueRange{rk.row});
      if (statsArg) {
        Value at = arith::MulIOp::create(b, rk.row, kb.idx(2));
        memref::StoreOp::create(b, max, statsArg, ValueRange{at});
        memref::StoreOp::create(b, sum, statsArg,
                                ValueRange{arith::AddIOp::create(b, at, kb.idx(1))});
      }
    });
    if (grad) {
      auto [scale, hasGradient] = gradientScale(rk, f, grad.getGrad(), normArg, label, valid);
      emitGradientSweep(rk, f, grad.getResult(), label, scale, hasGradient, max, sum);
    }
    kb.finish();
    if (failed(kb.status()))
      return failure();
    // The builder typed both outputs like |result|; fix the argument types
    // to the f32 row buffers they really are.
    auto funcType = kb.func().getFunctionType();
    llvm::SmallVector<Type> args(funcType.getInputs().begin(), funcType.getInputs().end());
    auto rowType = MemRefType::get({f.rows}, b.getF32Type());
    args[0] = args[1] = rowType;
    kb.func().setType(b.getFunctionType(args, {}));
    kb.func().getArgument(0).setType(rowType);
    kb.func().getArgument(1).setType(rowType);
    // Whole slots, so 16-byte aligned (a stand-in scalar claimed only 4).
    for (unsigned a : {0u, 1u})
      kb.func().setArgAttr(a, kArgAlignAttr, b.getI64IntegerAttr(kArgAlign));
    llvm::SmallVector<unsigned> written{rowLoss, rowWeights};
    llvm::SmallVector<unsigned> read = ctx.buffersOf(inputs);
    if (rowStats)
      written.push_back(*rowStats);
    if (grad) {
      if (std::optional<unsigned> same =
              scoresBufferToOverwrite(ctx, op, {op, grad}, f.scores, grad.getResult()))
        ctx.bufferOfValue[KernelBuilder::storageOf(grad.getResult(), ctx.plan)] = *same;
      written.append(ctx.buffersOf({grad.getResult()}));
      read.push_back(*norm);
      ctx.loweredElsewhere.insert(grad);
    }
    ctx.launch(kb, op, static_cast<unsigned>(std::max<int64_t>(f.rows, 1)), written, read);
  }
  if (f.none())
    return success();
  return emitLossTotal(ctx, op, result, f, rowLoss, rowWeights);
}

/// tx.softmax_cross_entropy_grad (when its loss's kernel did not compute
/// it): one block counts the weight (mean), then a row kernel writes
/// g * w / norm * (softmax - onehot).
LogicalResult cuda::lowerCrossEntropyGrad(LoweringContext &ctx, Operation *op) {
  auto grad = cast<tx::SoftmaxCrossEntropyGradOp>(op);
  Value dl = grad.getGrad(), result = grad.getResult();
  if (failed(checkCrossEntropy(op, grad.getScores())))
    return failure();
  CrossEntropyForm f = crossEntropyForm(grad);
  FailureOr<unsigned> norm = emitGradientNorm(ctx, op, f);
  if (failed(norm))
    return failure();
  llvm::SmallVector<Value> rowInputs{dl, f.scores, f.labels};
  if (f.weights)
    rowInputs.push_back(f.weights);
  RowKernel rk(ctx, op, {result}, rowInputs, f.classes);
  KernelBuilder &kb = rk.kb;
  auto &b = kb.builder();
  Value normArg =
      kb.insertBufferArgument(kb.numArguments(), MemRefType::get({1}, b.getF32Type()));
  auto [label, valid] = rowLabel(kb, f.labels, rk.row, f.ignore, f.classes);
  auto [scale, hasGradient] = gradientScale(rk, f, dl, normArg, label, valid);
  // The loss kernel of the same scores left each row's max and sum (the
  // same code computed them, so the values are identical); otherwise two
  // passes over the row compute them here.
  auto known = ctx.rowLogSumExp.find(f.scores);
  Value max, sum;
  if (known != ctx.rowLogSumExp.end()) {
    Value stats = kb.insertBufferArgument(kb.numArguments(),
                                          MemRefType::get({f.rows * 2}, b.getF32Type()));
    Value at = arith::MulIOp::create(b, rk.row, kb.idx(2));
    max = memref::LoadOp::create(b, stats, ValueRange{at});
    sum = memref::LoadOp::create(b, stats, ValueRange{arith::AddIOp::create(b, at, kb.idx(1))});
  } else {
    std::tie(max, sum) = rowLogSumExpParts(rk, f.scores, f.classes);
  }
  emitGradientSweep(rk, f, result, label, scale, hasGradient, max, sum);
  kb.finish();
  if (failed(kb.status()))
    return failure();
  llvm::SmallVector<unsigned> inputs = ctx.buffersOf(rowInputs);
  inputs.push_back(*norm);
  if (known != ctx.rowLogSumExp.end())
    inputs.push_back(known->second);
  if (std::optional<unsigned> same = scoresBufferToOverwrite(ctx, op, {op}, f.scores, result))
    ctx.bufferOfValue[KernelBuilder::storageOf(result, ctx.plan)] = *same;
  ctx.launch(kb, op, static_cast<unsigned>(std::max<int64_t>(f.rows, 1)),
             ctx.buffersOf({result}), inputs);
  return success();
}
