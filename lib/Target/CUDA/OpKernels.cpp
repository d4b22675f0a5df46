//===- OpKernels.cpp - one kernel builder per tx op family ----------------===//
//
// SPDX-License-Identifier: Apache-2.0
// Loop kernels for materialized elemental values, reduction kernels, and the
// row kernels of the fused ops (norms and their gradients, softmax, softmax
// cross-entropy and its gradient), the scatter of tx.gather_grad and the
// optimizers. Each follows the reference executor's formula (lib/Reference)
// in f32; where the executor accumulates in double the kernels accumulate in
// f32, which the GPU-vs-CPU checks bound.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "txopt/Dialect/Tx/IR/TxOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include <cmath>

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::cuda;

static RankedTensorType typeOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

static unsigned ceilDiv(int64_t n, int64_t d) {
  return static_cast<unsigned>(std::max<int64_t>((n + d - 1) / d, 1));
}

/// Elements each thread of a loop kernel computes. One 2- or 4-byte access
/// per thread keeps too few bytes in flight to cover HBM latency (Little's
/// law: ~20 KB per SM at H200 bandwidth); four independent elements per
/// thread, all loaded before any is stored, quadruple it.
constexpr int64_t kElementsPerThread = 4;

LogicalResult cuda::lowerElementalValue(LoweringContext &ctx, Value value) {
  Operation *op = value.getDefiningOp();
  llvm::SetVector<Value> inputs;
  KernelBuilder::collectInputs(value, ctx.plan, inputs);
  KernelBuilder kb(ctx.gpuModule, ctx.kernelName(op), {value},
                   inputs.getArrayRef(), ctx.plan);
  auto &b = kb.builder();
  int64_t n = typeOf(value).getNumElements();
  int64_t perThread = std::min<int64_t>(kElementsPerThread, ceilDiv(n, kBlockSize));
  // Thread t of block g owns elements g * 256 * K + j * 256 + t, j < K:
  // each j is one coalesced access of the block. An element past the end is
  // computed at the last element (in bounds, never stored), so every load
  // is issued before the first store: the stores may alias the inputs (bare
  // pointers), which would otherwise serialize load and store pairs.
  Value base = arith::AddIOp::create(
      b, arith::MulIOp::create(b, kb.blockIndex(), kb.idx(kBlockSize * perThread)),
      kb.threadIndex());
  llvm::SmallVector<Value> positions, values;
  for (int64_t j = 0; j < perThread; ++j) {
    Value i = arith::AddIOp::create(b, base, kb.idx(j * kBlockSize));
    positions.push_back(i);
    Value clamped = arith::MinUIOp::create(b, i, kb.idx(std::max<int64_t>(n - 1, 0)));
    values.push_back(kb.emitComputed(value, kb.delinearize(clamped, typeOf(value).getShape())));
  }
  for (int64_t j = 0; j < perThread; ++j) {
    Value inRange =
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, positions[j], kb.idx(n));
    kb.ifThen(inRange, [&] { kb.store(value, positions[j], values[j]); });
  }
  kb.finish();
  if (failed(kb.status()))
    return failure();
  ctx.launch(kb, op, ceilDiv(n, kBlockSize * perThread), ctx.buffersOf({value}),
             ctx.buffersOf(inputs.getArrayRef()));
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

/// One step of a sum or max reduction, in f32 (the GPU's reductions
/// accumulate in f32; an f64 element is narrowed first).
static Value combine(ImplicitLocOpBuilder &b, Value acc, Value v, bool isMax) {
  if (v.getType().isF64())
    v = arith::TruncFOp::create(b, b.getF32Type(), v);
  return isMax ? Value(arith::MaximumFOp::create(b, acc, v))
               : Value(arith::AddFOp::create(b, acc, v));
}

/// Writes a reduction's f32 |sum| (a mean already divided) at |at| of
/// |result|: widened for an f64 result, rounded to its element type.
static void storeReduced(KernelBuilder &k, Value result, Value at, Value sum) {
  Type element = typeOf(result).getElementType();
  if (element.isF64())
    sum = arith::ExtFOp::create(k.builder(), k.builder().getF64Type(), sum);
  k.store(result, at, k.roundTo(sum, element));
}

/// Column sums (or maxima) of an f32 scratch buffer of |parts| rows by
/// |cols| columns, in a fixed order: block c covers columns [32c, 32c + 32);
/// warp w combines rows w, w + 8, ... of its lane's column, then warp 0
/// combines the 8 warp results in order and |finish| stores the total. Rows
/// are spread over 8 warps (not one thread walking all of them) so enough
/// loads are in flight; the order never depends on timing.
static LogicalResult lowerPartialColumnSums(
    LoweringContext &ctx, Operation *op, llvm::ArrayRef<Value> outputs,
    unsigned partialBuffer, int64_t parts, int64_t cols, bool isMax,
    llvm::function_ref<void(KernelBuilder &, Value col, Value sum)> finish) {
  constexpr int64_t kWarps = kBlockSize / 32;
  KernelBuilder kb(ctx.gpuModule, ctx.kernelName(op), outputs, {}, ctx.plan, kBlockSize);
  auto &b = kb.builder();
  Value partials = kb.insertBufferArgument(static_cast<unsigned>(outputs.size()),
                                           MemRefType::get({parts * cols}, b.getF32Type()));
  Value smem = kb.func().getWorkgroupAttributions().front();
  Value tid = kb.threadIndex();
  Value lane = arith::RemUIOp::create(b, tid, kb.idx(32));
  Value warp = arith::DivUIOp::create(b, tid, kb.idx(32));
  Value col = arith::AddIOp::create(
      b, arith::MulIOp::create(b, kb.blockIndex(), kb.idx(32)), lane);
  Value inRange = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, col, kb.idx(cols));
  Value readCol = arith::MinUIOp::create(b, col, kb.idx(cols - 1));
  Value identity = kb.f32(isMax ? -INFINITY : 0.0);
  auto acc = kb.loop(warp, kb.idx(parts), kb.idx(kWarps), {identity},
                     [&](Value p, llvm::ArrayRef<Value> a) {
    Value at = arith::AddIOp::create(b, arith::MulIOp::create(b, p, kb.idx(cols)), readCol);
    Value v = memref::LoadOp::create(b, partials, ValueRange{at});
    return llvm::SmallVector<Value>{combine(b, a[0], v, isMax)};
  }, /*unroll=*/4);
  memref::StoreOp::create(b, acc[0], smem, ValueRange{tid});
  gpu::BarrierOp::create(b);
  Value warp0 = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, warp, kb.idx(0));
  kb.ifThen(arith::AndIOp::create(b, warp0, inRange), [&] {
    Value total = identity;
    for (int64_t w = 0; w < kWarps; ++w) {
      Value at = arith::AddIOp::create(b, lane, kb.idx(w * 32));
      total = combine(b, total, memref::LoadOp::create(b, smem, ValueRange{at}), isMax);
    }
    finish(kb, col, total);
  });
  kb.finish();
  if (failed(kb.status()))
    return failure();
  ctx.launch(kb, op, ceilDiv(cols, 32), ctx.buffersOf(outputs), {partialBuffer});
  return success();
}

/// A reduction over leading axes |rows| keeping trailing axes |cols| (both
/// as shapes), e.g. a bias gradient. Thread t of block (tile, split) owns
/// column tile * kBlockSize + t and sums rows [split * chunk, +chunk) of it
/// in order; with several splits a second kernel adds the splits' partials
/// in order: deterministic, and every load coalesced.
static LogicalResult lowerColumnReduction(LoweringContext &ctx, Operation *op,
                                          llvm::ArrayRef<int64_t> rows,
                                          llvm::ArrayRef<int64_t> cols,
                                          bool isMax, bool isMean) {
  Value input = op->getOperand(0), result = op->getResult(0);
  int64_t rowCount = 1, colCount = 1;
  for (int64_t s : rows) rowCount *= s;
  for (int64_t s : cols) colCount *= s;
  int64_t tiles = ceilDiv(colCount, kBlockSize);
  // Enough blocks to fill the GPU (~2048), at least 32 rows each.
  int64_t splits = std::max<int64_t>(
      1, std::min<int64_t>(ceilDiv(rowCount, 32), ceilDiv(2048, tiles)));
  int64_t chunk = ceilDiv(rowCount, splits);
  splits = ceilDiv(rowCount, chunk);
  auto finish = [&](KernelBuilder &k, Value column, Value sum) {
    if (isMean)
      sum = arith::DivFOp::create(k.builder(), sum, k.f32(static_cast<double>(rowCount)));
    storeReduced(k, result, column, sum);
  };

  llvm::SetVector<Value> inputs;
  KernelBuilder::collectInputs(result, ctx.plan, inputs);
  KernelBuilder kb(ctx.gpuModule, ctx.kernelName(op),
                   splits == 1 ? llvm::ArrayRef<Value>{result} : llvm::ArrayRef<Value>{},
                   inputs.getArrayRef(), ctx.plan);
  auto &b = kb.builder();
  Value partials;
  unsigned partialBuffer = 0;
  if (splits > 1) {
    partials = kb.insertBufferArgument(0, MemRefType::get({splits * colCount}, b.getF32Type()));
    partialBuffer = ctx.scratch(splits * colCount * 4, "column reduction partials");
  }
  Value block = kb.blockIndex();
  Value tile = arith::RemUIOp::create(b, block, kb.idx(tiles));
  Value split = arith::DivUIOp::create(b, block, kb.idx(tiles));
  Value column = arith::AddIOp::create(
      b, arith::MulIOp::create(b, tile, kb.idx(kBlockSize)), kb.threadIndex());
  Value inRange = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, column, kb.idx(colCount));
  kb.ifThen(inRange, [&] {
    Value begin = arith::MulIOp::create(b, split, kb.idx(chunk));
    Value end = arith::MinUIOp::create(b, arith::AddIOp::create(b, begin, kb.idx(chunk)),
                                       kb.idx(rowCount));
    auto colIndex = kb.delinearize(column, cols);
    auto acc = kb.loop(begin, end, kb.idx(1), {kb.f32(isMax ? -INFINITY : 0.0)},
                       [&](Value r, llvm::ArrayRef<Value> a) {
      llvm::SmallVector<Value> full = kb.delinearize(r, rows);
      full.append(colIndex.begin(), colIndex.end());
      return llvm::SmallVector<Value>{combine(b, a[0], kb.emit(input, full), isMax)};
    }, /*unroll=*/4);
    if (splits == 1) {
      finish(kb, column, acc[0]);
    } else {
      Value at = arith::AddIOp::create(b, arith::MulIOp::create(b, split, kb.idx(colCount)), column);
      memref::StoreOp::create(b, acc[0], partials, ValueRange{at});
    }
  });
  kb.finish();
  if (failed(kb.status()))
    return failure();
  if (splits == 1) {
    ctx.launch(kb, op, static_cast<unsigned>(tiles), ctx.buffersOf({result}),
               ctx.buffersOf(inputs.getArrayRef()));
    return success();
  }
  ctx.launch(kb, op, static_cast<unsigned>(tiles * splits), {partialBuffer},
             ctx.buffersOf(inputs.getArrayRef()));
  // Stage two: each column adds its splits' partials, in order.
  return lowerPartialColumnSums(ctx, op, {result}, partialBuffer, splits, colCount, isMax,
                                [&](KernelBuilder &k, Value column, Value sum) {
                                  finish(k, column, sum);
                                });
}

LogicalResult cuda::lowerReduction(LoweringContext &ctx, Operation *op) {
  Value input = op->getOperand(0), result = op->getResult(0);
  auto inType = typeOf(input);
  if (!isa<FloatType>(inType.getElementType()))
    return op->emitError("integer reductions are not supported on the GPU");
  int64_t rank = inType.getRank();
  llvm::ArrayRef<int64_t> axesAttr =
      cast<DenseI64ArrayAttr>(op->getAttr("axes")).asArrayRef();
  llvm::SmallVector<bool> reduced(rank, axesAttr.empty());
  for (int64_t a : axesAttr)
    reduced[a < 0 ? a + rank : a] = true;
  llvm::SmallVector<int64_t> outer, inner;
  for (int64_t d = 0; d < rank; ++d)
    (reduced[d] ? inner : outer).push_back(inType.getShape()[d]);
  int64_t outerCount = 1, innerCount = 1;
  for (int64_t s : outer) outerCount *= s;
  for (int64_t s : inner) innerCount *= s;
  bool isMax = isa<tx::ReduceMaxOp>(op);
  bool isMean = isa<tx::ReduceMeanOp>(op);

  // Reduced axes all before the kept ones (a bias gradient: [rows, cols]
  // summed over rows): the kept elements are contiguous, so threads take
  // consecutive columns and walk down the rows, coalesced (one block per
  // output would stride through memory).
  int64_t leadingReduced = 0;
  while (leadingReduced < rank && reduced[leadingReduced])
    ++leadingReduced;
  bool columnsContiguous = leadingReduced > 0 && leadingReduced < rank &&
                           llvm::none_of(llvm::ArrayRef<bool>(reduced).drop_front(leadingReduced),
                                         [](bool r) { return r; });
  if (columnsContiguous && outerCount >= 32)
    return lowerColumnReduction(ctx, op, inner, outer, isMax, isMean);

  // Few outputs over many elements (the gradient norm's sums of squares,
  // a loss's mean): one block per output would leave the GPU idle, so
  // |chunks| blocks per output reduce slices into f32 partials, and a second
  // kernel reduces those. Both sum in a fixed order: deterministic.
  int64_t chunks = 1;
  if (outerCount < 256 && innerCount >= (1 << 16))
    chunks = std::min<int64_t>(1024, innerCount / 8192);
  int64_t chunkLength = (innerCount + chunks - 1) / chunks;

  llvm::SetVector<Value> inputs;
  KernelBuilder::collectInputs(result, ctx.plan, inputs);
  KernelBuilder kb(ctx.gpuModule, ctx.kernelName(op),
                   chunks == 1 ? llvm::ArrayRef<Value>{result} : llvm::ArrayRef<Value>{},
                   inputs.getArrayRef(), ctx.plan, /*workgroupFloats=*/32);
  auto &b = kb.builder();
  Value partials;
  unsigned partialBuffer = 0;
  if (chunks > 1) {
    partials = kb.insertBufferArgument(
        0, MemRefType::get({outerCount * chunks}, b.getF32Type()));
    partialBuffer = ctx.scratch(outerCount * chunks * 4, "reduction partials");
  }
  Value block = kb.blockIndex();
  Value o = chunks == 1 ? block : Value(arith::DivUIOp::create(b, block, kb.idx(chunks)));
  Value begin = kb.idx(0), end = kb.idx(innerCount);
  if (chunks > 1) {
    Value chunk = arith::RemUIOp::create(b, block, kb.idx(chunks));
    begin = arith::MulIOp::create(b, chunk, kb.idx(chunkLength));
    end = arith::MinUIOp::create(b, arith::AddIOp::create(b, begin, kb.idx(chunkLength)),
                                 kb.idx(innerCount));
  }
  auto outerIndex = kb.delinearize(o, outer);
  Value identity = kb.f32(isMax ? -INFINITY : 0.0);
  auto acc = kb.blockStridedLoop(begin, end, {identity}, [&](Value r, llvm::ArrayRef<Value> a) {
    auto innerIndex = kb.delinearize(r, inner);
    llvm::SmallVector<Value> full;
    unsigned oi = 0, ii = 0;
    for (int64_t d = 0; d < rank; ++d)
      full.push_back(reduced[d] ? innerIndex[ii++] : outerIndex[oi++]);
    return llvm::SmallVector<Value>{combine(b, a[0], kb.emit(input, full), isMax)};
  });
  Value total = kb.blockReduce(acc[0], isMax);
  auto finalStore = [&](KernelBuilder &k, Value out, Value sum) {
    auto &kbb = k.builder();
    if (isMean)
      sum = arith::DivFOp::create(kbb, sum, k.f32(static_cast<double>(innerCount)));
    Value first = arith::CmpIOp::create(kbb, arith::CmpIPredicate::eq, k.threadIndex(), k.idx(0));
    k.ifThen(first, [&] { storeReduced(k, result, out, sum); });
  };
  if (chunks == 1) {
    finalStore(kb, o, total);
  } else {
    Value first = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, kb.threadIndex(), kb.idx(0));
    kb.ifThen(first, [&] { memref::StoreOp::create(b, total, partials, ValueRange{block}); });
  }
  kb.finish();
  if (failed(kb.status()))
    return failure();
  if (chunks == 1) {
    ctx.launch(kb, op, static_cast<unsigned>(std::max<int64_t>(outerCount, 1)),
               ctx.buffersOf({result}), ctx.buffersOf(inputs.getArrayRef()));
    return success();
  }
  ctx.launch(kb, op, static_cast<unsigned>(outerCount * chunks), {partialBuffer},
             ctx.buffersOf(inputs.getArrayRef()));
  // Stage two: one block per output over its partials.
  KernelBuilder fin(ctx.gpuModule, ctx.kernelName(op), {result}, {}, ctx.plan, 32);
  auto &fb2 = fin.builder();
  Value parts = fin.insertBufferArgument(
      1, MemRefType::get({outerCount * chunks}, fb2.getF32Type()));
  Value out = fin.blockIndex();
  Value base = arith::MulIOp::create(fb2, out, fin.idx(chunks));
  auto sums = fin.blockStridedLoop(chunks, {fin.f32(isMax ? -INFINITY : 0.0)},
                                   [&](Value j, llvm::ArrayRef<Value> a) {
    Value v = memref::LoadOp::create(fb2, parts, ValueRange{arith::AddIOp::create(fb2, base, j)});
    return llvm::SmallVector<Value>{combine(fb2, a[0], v, isMax)};
  });
  finalStore(fin, out, fin.blockReduce(sums[0], isMax));
  fin.finish();
  if (failed(fin.status()))
    return failure();
  ctx.launch(fin, op, static_cast<unsigned>(std::max<int64_t>(outerCount, 1)),
             ctx.buffersOf({result}), {partialBuffer});
  return success();
}

//===----------------------------------------------------------------------===//
// Row kernels
//===----------------------------------------------------------------------===//

/// Rows of up to kBlockSize * kRowElementsInRegisters elements (2048: every
/// hidden size up to GPT-1.3B's) are swept in straight-line code: each
/// thread's elements of a row tensor are loaded once, into registers, and
/// reused by every pass over the row (mean, variance, output), instead of
/// being loaded again, one dependent load at a time, by each pass.
constexpr int64_t kRowElementsInRegisters = 8;

namespace {
/// A row kernel: one block per row of |rowLength| elements (or, with
/// setRow, several rows walked by one block).
struct RowKernel {
  KernelBuilder kb;
  Value row, base;
  int64_t length;
  RowKernel(LoweringContext &ctx, Operation *op, llvm::ArrayRef<Value> outputs,
            llvm::ArrayRef<Value> inputs, int64_t rowLength)
      : kb(ctx.gpuModule, ctx.kernelName(op), outputs, inputs, ctx.plan, 32),
        length(rowLength) {
    setRow(kb.blockIndex());
  }
  /// Makes |r| the row that at() and loadRow() address.
  void setRow(Value r) {
    row = r;
    base = arith::MulIOp::create(kb.builder(), row, kb.idx(length));
    rowValues.clear();
  }
  Value at(Value j) { return arith::AddIOp::create(kb.builder(), base, j); }
  /// Runs |body| on thread 0 only.
  void onFirstThread(llvm::function_ref<void()> body) {
    auto &b = kb.builder();
    Value first = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, kb.threadIndex(), kb.idx(0));
    kb.ifThen(first, body);
  }
  bool inRegisters() const { return length <= kBlockSize * kRowElementsInRegisters; }

  /// `for (j = thread; j < length; j += blockDim) acc = body(j, acc)`. For a
  /// short row, unrolled: the k-th step visits the same j the loop would,
  /// in the same order, so sums are bit for bit the loop's; a j past the
  /// row's end keeps acc (and a body without acc, which stores, is skipped
  /// there).
  llvm::SmallVector<Value>
  sweep(llvm::ArrayRef<Value> init,
        llvm::function_ref<llvm::SmallVector<Value>(Value j, llvm::ArrayRef<Value> acc)> body) {
    if (!inRegisters())
      return kb.blockStridedLoop(length, init, body);
    auto &b = kb.builder();
    llvm::SmallVector<Value> acc(init.begin(), init.end());
    for (int64_t k = 0; k * kBlockSize < length; ++k) {
      Value j = arith::AddIOp::create(b, kb.threadIndex(), kb.idx(k * kBlockSize));
      bool alwaysInRow = (k + 1) * kBlockSize <= length;
      Value inRow = alwaysInRow ? Value()
                                : arith::CmpIOp::create(b, arith::CmpIPredicate::ult, j,
                                                        kb.idx(length));
      // Past the end, work at the last element (loads stay in bounds).
      Value safeJ = alwaysInRow ? j : arith::MinUIOp::create(b, j, kb.idx(length - 1));
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

  /// Element |j| of the current row of |tensor| (row-major, rows of
  /// |length|): inside a register sweep, loaded once per row and step.
  Value loadRow(Value tensor, Value j) {
    if (currentStep < 0)
      return kb.load(tensor, at(j));
    auto found = rowValues.find({tensor, currentStep});
    if (found != rowValues.end())
      return found->second;
    Value value = kb.load(tensor, at(j));
    // Only a load at the row's top level is kept: it dominates every later
    // pass (one inside the scf.if that skips the row's end would not).
    if (!insideGuard)
      rowValues[{tensor, currentStep}] = value;
    return value;
  }

private:
  int64_t currentStep = -1;
  bool insideGuard = false;
  llvm::DenseMap<std::pair<Value, int64_t>, Value> rowValues;
};
} // namespace

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
  llvm::SmallVector<Value> inputs{x, gamma};
  if (beta)
    inputs.push_back(beta);
  RowKernel rk(ctx, op, outputs, inputs, d);
  KernelBuilder &kb = rk.kb;
  auto &b = kb.builder();
  Type element = typeOf(x).getElementType();
  Value mean = kb.f32(0.0);
  if (center) {
    auto sum = rk.sweep({kb.f32(0.0)}, [&](Value j, llvm::ArrayRef<Value> a) {
      return llvm::SmallVector<Value>{arith::AddFOp::create(b, a[0], rk.loadRow(x, j))};
    });
    mean = arith::DivFOp::create(b, kb.blockReduce(sum[0], false), kb.f32(d));
  }
  auto sq = rk.sweep({kb.f32(0.0)}, [&](Value j, llvm::ArrayRef<Value> a) {
    Value c = arith::SubFOp::create(b, rk.loadRow(x, j), mean);
    return llvm::SmallVector<Value>{arith::AddFOp::create(b, a[0], arith::MulFOp::create(b, c, c))};
  });
  Value var = arith::DivFOp::create(b, kb.blockReduce(sq[0], false), kb.f32(d));
  Value rstd = arith::DivFOp::create(
      b, kb.f32(1.0), math::SqrtOp::create(b, arith::AddFOp::create(b, var, kb.f32(eps))));
  rk.sweep({}, [&](Value j, llvm::ArrayRef<Value>) {
    Value c = arith::SubFOp::create(b, rk.loadRow(x, j), mean);
    Value v = arith::MulFOp::create(b, arith::MulFOp::create(b, c, rstd), kb.load(gamma, j));
    if (beta)
      v = arith::AddFOp::create(b, v, kb.load(beta, j));
    kb.store(outputs[0], rk.at(j), kb.roundTo(v, element));
    return llvm::SmallVector<Value>{};
  });
  if (outputs.size() > 1)
    rk.onFirstThread([&] {
      if (center)
        kb.store(outputs[1], rk.row, mean);
      kb.store(outputs.back(), rk.row, rstd);
    });
  kb.finish();
  if (failed(kb.status()))
    return failure();
  ctx.launch(kb, op, static_cast<unsigned>(std::max<int64_t>(rows, 1)),
             ctx.buffersOf(outputs), ctx.buffersOf(inputs));
  return success();
}

/// Blocks of a row kernel that walks several rows per block: about one
/// wave of 256-thread blocks on an H200 (132 SMs x 8 resident blocks).
constexpr int64_t kRowBlocks = 1024;

/// tx.layer_norm_grad / tx.rms_norm_grad, deterministic and without atomics.
/// Kernel 1: block g walks rows [g R, (g + 1) R); per row it computes dx,
/// and each thread adds dy * xhat (and dy) of its own columns into row g of
/// an f32 partials buffer [G, d] (or [G, 2d]) that no other thread touches.
/// Kernel 2 adds the G partial rows of each column in a fixed order
/// (lowerPartialColumnSums) and rounds once into dgamma (and dbeta).
/// Atomics, one per element per row on d addresses, serialized at L2 and
/// made the sums' order (and bits) vary from run to run.
LogicalResult cuda::lowerNormGrad(LoweringContext &ctx, Operation *op) {
  bool center = isa<tx::LayerNormGradOp>(op);
  Value dy = op->getOperand(0), x = op->getOperand(1), gamma = op->getOperand(2);
  Value mean = center ? op->getOperand(3) : Value();
  Value rstd = op->getOperand(center ? 4 : 3);
  int64_t d = typeOf(x).getShape().back();
  int64_t rows = d ? typeOf(x).getNumElements() / d : 0;
  llvm::SmallVector<Value> outputs(op->getResults().begin(), op->getResults().end());
  llvm::SmallVector<Value> inputs{dy, x, gamma, rstd};
  if (center)
    inputs.push_back(mean);
  int64_t perBlock = ceilDiv(std::max<int64_t>(rows, 1), kRowBlocks);
  int64_t blocks = ceilDiv(std::max<int64_t>(rows, 1), perBlock);
  int64_t sums = static_cast<int64_t>(outputs.size()) - 1; // dgamma [, dbeta]
  int64_t cols = sums * d;
  unsigned partialBuffer = ctx.scratch(blocks * cols * 4, "f32 norm-gradient partial sums");

  RowKernel rk(ctx, op, {outputs[0]}, inputs, d);
  KernelBuilder &kb = rk.kb;
  auto &b = kb.builder();
  Value partials = kb.insertBufferArgument(1, MemRefType::get({blocks * cols}, b.getF32Type()));
  Value block = kb.blockIndex();
  Value first = arith::MulIOp::create(b, block, kb.idx(perBlock));
  Value last = arith::MinUIOp::create(b, arith::AddIOp::create(b, first, kb.idx(perBlock)),
                                      kb.idx(rows));
  Value partialRow = arith::MulIOp::create(b, block, kb.idx(cols));
  Type element = typeOf(outputs[0]).getElementType();
  kb.loop(first, last, kb.idx(1), {}, [&](Value row, llvm::ArrayRef<Value>) {
    rk.setRow(row);
    Value mu = center ? kb.load(mean, row) : kb.f32(0.0);
    Value inv = kb.load(rstd, row);
    auto xhatAt = [&](Value j) {
      return arith::MulFOp::create(b, arith::SubFOp::create(b, rk.loadRow(x, j), mu), inv);
    };
    auto rowSums = rk.sweep({kb.f32(0.0), kb.f32(0.0)}, [&](Value j, llvm::ArrayRef<Value> a) {
      Value g = arith::MulFOp::create(b, rk.loadRow(dy, j), kb.load(gamma, j));
      return llvm::SmallVector<Value>{
          arith::AddFOp::create(b, a[0], g),
          arith::AddFOp::create(b, a[1], arith::MulFOp::create(b, g, xhatAt(j)))};
    });
    Value sumG = kb.blockReduce(rowSums[0], false);
    Value sumGX = kb.blockReduce(rowSums[1], false);
    Value dd = kb.f32(d);
    Value firstRow = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, row, first);
    // This thread's running sum at column |c| of the block's partial row;
    // the block's first row starts it (the buffer is not cleared).
    auto accumulate = [&](Value c, Value v) {
      Value slot = arith::AddIOp::create(b, partialRow, c);
      Value old = memref::LoadOp::create(b, partials, ValueRange{slot});
      Value sum = arith::SelectOp::create(b, firstRow, v, arith::AddFOp::create(b, old, v));
      memref::StoreOp::create(b, sum, partials, ValueRange{slot});
    };
    rk.sweep({}, [&](Value j, llvm::ArrayRef<Value>) {
      Value dyj = rk.loadRow(dy, j);
      Value xhat = xhatAt(j);
      Value g = arith::MulFOp::create(b, dyj, kb.load(gamma, j));
      Value v = arith::SubFOp::create(
          b, g, arith::DivFOp::create(b, arith::MulFOp::create(b, xhat, sumGX), dd));
      if (center)
        v = arith::SubFOp::create(b, v, arith::DivFOp::create(b, sumG, dd));
      kb.store(outputs[0], rk.at(j), kb.roundTo(arith::MulFOp::create(b, inv, v), element));
      accumulate(j, arith::MulFOp::create(b, dyj, xhat));
      if (center)
        accumulate(arith::AddIOp::create(b, j, kb.idx(d)), dyj);
      return llvm::SmallVector<Value>{};
    });
    return llvm::SmallVector<Value>{};
  });
  kb.finish();
  if (failed(kb.status()))
    return failure();
  ctx.launch(kb, op, static_cast<unsigned>(blocks),
             {ctx.bufferFor(outputs[0]), partialBuffer}, ctx.buffersOf(inputs));
  llvm::SmallVector<Value> paramGrads(outputs.begin() + 1, outputs.end());
  return lowerPartialColumnSums(
      ctx, op, paramGrads, partialBuffer, blocks, cols, /*isMax=*/false,
      [&](KernelBuilder &k, Value col, Value sum) {
        auto &kbb = k.builder();
        if (!center) {
          storeReduced(k, paramGrads[0], col, sum);
          return;
        }
        // Columns [0, d) are dgamma's, [d, 2d) dbeta's.
        Value isGamma = arith::CmpIOp::create(kbb, arith::CmpIPredicate::ult, col, k.idx(d));
        k.ifThen(isGamma, [&] { storeReduced(k, paramGrads[0], col, sum); });
        Value isBeta = arith::CmpIOp::create(kbb, arith::CmpIPredicate::uge, col, k.idx(d));
        k.ifThen(isBeta, [&] {
          storeReduced(k, paramGrads[1], arith::SubIOp::create(kbb, col, k.idx(d)), sum);
        });
      });
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

/// Checks the cross-entropy forms the GPU kernels handle: scores [N, C],
/// labels [N], no class weights.
static LogicalResult checkCrossEntropy(Operation *op, Value scores,
                                       bool hasWeights) {
  if (typeOf(scores).getRank() != 2)
    return op->emitError("the GPU cross-entropy expects scores of rank 2, but got rank ")
           << typeOf(scores).getRank();
  if (hasWeights)
    return op->emitError("class weights are not supported by the GPU cross-entropy");
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

/// Row max and sum of exp(x - max).
static std::pair<Value, Value> rowLogSumExpParts(RowKernel &rk, Value scores,
                                                 int64_t classes) {
  KernelBuilder &kb = rk.kb;
  auto &b = kb.builder();
  auto m = kb.blockStridedLoop(classes, {kb.f32(-INFINITY)}, [&](Value j, llvm::ArrayRef<Value> a) {
    return llvm::SmallVector<Value>{arith::MaximumFOp::create(b, a[0], kb.load(scores, rk.at(j)))};
  });
  Value max = kb.blockReduce(m[0], true);
  auto s = kb.blockStridedLoop(classes, {kb.f32(0.0)}, [&](Value j, llvm::ArrayRef<Value> a) {
    Value e = math::ExpOp::create(b, arith::SubFOp::create(b, kb.load(scores, rk.at(j)), max));
    return llvm::SmallVector<Value>{arith::AddFOp::create(b, a[0], e)};
  });
  return {max, kb.blockReduce(s[0], false)};
}

/// tx.softmax_cross_entropy_loss: a row kernel writes each row's loss and
/// weight, then one block sums them (mean, sum) unless reduction is none.
LogicalResult cuda::lowerCrossEntropy(LoweringContext &ctx, Operation *op) {
  auto loss = cast<tx::SoftmaxCrossEntropyLossOp>(op);
  Value scores = loss.getScores(), labels = loss.getLabels(), result = loss.getResult();
  if (failed(checkCrossEntropy(op, scores, static_cast<bool>(loss.getWeights()))))
    return failure();
  int64_t rows = typeOf(scores).getShape()[0], classes = typeOf(scores).getShape()[1];
  bool none = loss.getReduction() == tx::LossReduction::none;
  bool mean = loss.getReduction() == tx::LossReduction::mean;
  std::optional<int64_t> ignore = loss.getIgnoreIndex() ? std::optional<int64_t>(static_cast<int64_t>(*loss.getIgnoreIndex())) : std::nullopt;

  // Row losses go straight to the result for reduction none.
  unsigned rowLoss = none ? ctx.bufferFor(result) : ctx.scratch(rows * 4, "row losses");
  unsigned rowWeight = ctx.scratch(rows * 4, "row weights");
  unsigned rowStats = ctx.scratch(rows * 8, "row max and sum of exp");
  ctx.rowLogSumExp[scores] = rowStats;
  {
    // Stand-in values typed like the scratch buffers, for the builder.
    RowKernel rk(ctx, op, {result, result}, {scores, labels}, classes);
    KernelBuilder &kb = rk.kb;
    auto &b = kb.builder();
    Value statsArg = kb.insertBufferArgument(2, MemRefType::get({rows * 2}, b.getF32Type()));
    auto [label, valid] = rowLabel(kb, labels, rk.row, ignore, classes);
    auto [max, sum] = rowLogSumExpParts(rk, scores, classes);
    Value picked = kb.load(scores, rk.at(arith::IndexCastOp::create(b, b.getIndexType(), label)));
    Value logProb = arith::SubFOp::create(
        b, arith::SubFOp::create(b, picked, max), math::LogOp::create(b, sum));
    Value zero = kb.f32(0.0);
    Value rowValue = arith::SelectOp::create(b, valid, arith::NegFOp::create(b, logProb), zero);
    Value weight = arith::SelectOp::create(b, valid, kb.f32(1.0), zero);
    rk.onFirstThread([&] {
      Value ba = kb.func().getArgument(0), bw = kb.func().getArgument(1);
      memref::StoreOp::create(b, rowValue, ba, ValueRange{rk.row});
      memref::StoreOp::create(b, weight, bw, ValueRange{rk.row});
      Value at = arith::MulIOp::create(b, rk.row, kb.idx(2));
      memref::StoreOp::create(b, max, statsArg, ValueRange{at});
      memref::StoreOp::create(b, sum, statsArg,
                              ValueRange{arith::AddIOp::create(b, at, kb.idx(1))});
    });
    kb.finish();
    if (failed(kb.status()))
      return failure();
    // The builder typed both outputs like |result|; fix the argument types
    // to the f32 row buffers they really are.
    auto funcType = kb.func().getFunctionType();
    llvm::SmallVector<Type> args(funcType.getInputs().begin(), funcType.getInputs().end());
    auto rowType = MemRefType::get({rows}, b.getF32Type());
    args[0] = args[1] = rowType;
    kb.func().setType(b.getFunctionType(args, {}));
    kb.func().getArgument(0).setType(rowType);
    kb.func().getArgument(1).setType(rowType);
    ctx.launch(kb, op, static_cast<unsigned>(std::max<int64_t>(rows, 1)),
               {rowLoss, rowWeight, rowStats}, ctx.buffersOf({scores, labels}));
  }
  if (none)
    return success();
  {
    // One block: total loss and weight, then mean or sum.
    KernelBuilder kb(ctx.gpuModule, ctx.kernelName(op), {result}, {}, ctx.plan, 32);
    auto &b = kb.builder();
    auto rowType = MemRefType::get({rows}, b.getF32Type());
    Value lossArg = kb.insertBufferArgument(kb.numArguments(), rowType);
    Value weightArg = kb.insertBufferArgument(kb.numArguments(), rowType);
    auto sums = kb.blockStridedLoop(rows, {kb.f32(0.0), kb.f32(0.0)}, [&](Value j, llvm::ArrayRef<Value> a) {
      Value l = memref::LoadOp::create(b, lossArg, ValueRange{j});
      Value w = memref::LoadOp::create(b, weightArg, ValueRange{j});
      return llvm::SmallVector<Value>{arith::AddFOp::create(b, a[0], l), arith::AddFOp::create(b, a[1], w)};
    });
    Value total = kb.blockReduce(sums[0], false);
    Value weight = kb.blockReduce(sums[1], false);
    Value value = mean ? Value(arith::DivFOp::create(b, total, weight)) : total;
    Value first = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, kb.threadIndex(), kb.idx(0));
    kb.ifThen(first, [&] {
      kb.store(result, kb.idx(0), kb.roundTo(value, typeOf(result).getElementType()));
    });
    kb.finish();
    if (failed(kb.status()))
      return failure();
    ctx.launch(kb, op, 1, ctx.buffersOf({result}), {rowLoss, rowWeight});
  }
  return success();
}

/// tx.softmax_cross_entropy_grad: one block counts the weight (mean), then
/// a row kernel writes g * w / norm * (softmax - onehot).
LogicalResult cuda::lowerCrossEntropyGrad(LoweringContext &ctx, Operation *op) {
  auto grad = cast<tx::SoftmaxCrossEntropyGradOp>(op);
  Value dl = grad.getGrad(), scores = grad.getScores(), labels = grad.getLabels();
  Value result = grad.getResult();
  if (failed(checkCrossEntropy(op, scores, static_cast<bool>(grad.getWeights()))))
    return failure();
  int64_t rows = typeOf(scores).getShape()[0], classes = typeOf(scores).getShape()[1];
  bool none = grad.getReduction() == tx::LossReduction::none;
  bool mean = grad.getReduction() == tx::LossReduction::mean;
  std::optional<int64_t> ignore = grad.getIgnoreIndex() ? std::optional<int64_t>(static_cast<int64_t>(*grad.getIgnoreIndex())) : std::nullopt;
  unsigned norm = ctx.scratch(4, "loss weight");
  {
    KernelBuilder kb(ctx.gpuModule, ctx.kernelName(op), {}, {labels}, ctx.plan, 32);
    auto &b = kb.builder();
    auto scalarType = MemRefType::get({1}, b.getF32Type());
    Value normArg = kb.insertBufferArgument(0, scalarType);
    auto count = kb.blockStridedLoop(rows, {kb.f32(0.0)}, [&](Value j, llvm::ArrayRef<Value> a) {
      auto [label, valid] = rowLabel(kb, labels, j, ignore, classes);
      (void)label;
      Value w = arith::SelectOp::create(b, valid, kb.f32(1.0), kb.f32(0.0));
      return llvm::SmallVector<Value>{arith::AddFOp::create(b, a[0], w)};
    });
    Value total = kb.blockReduce(count[0], false);
    Value value = mean ? total : kb.f32(1.0);
    Value first = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, kb.threadIndex(), kb.idx(0));
    kb.ifThen(first, [&] { memref::StoreOp::create(b, value, normArg, ValueRange{kb.idx(0)}); });
    kb.finish();
    if (failed(kb.status()))
      return failure();
    ctx.launch(kb, op, 1, {norm}, ctx.buffersOf({labels}));
  }
  {
    RowKernel rk(ctx, op, {result}, {dl, scores, labels}, classes);
    KernelBuilder &kb = rk.kb;
    auto &b = kb.builder();
    auto scalarType = MemRefType::get({1}, b.getF32Type());
    Value normArg = kb.insertBufferArgument(kb.numArguments(), scalarType);
    auto [label, valid] = rowLabel(kb, labels, rk.row, ignore, classes);
    Value g = kb.load(dl, none ? rk.row : kb.idx(0));
    Value normValue = memref::LoadOp::create(b, normArg, ValueRange{kb.idx(0)});
    Value scale = arith::DivFOp::create(b, g, normValue);
    // The loss kernel of the same scores left each row's max and sum (the
    // same code computed them, so the values are identical); otherwise two
    // passes over the row compute them here.
    auto known = ctx.rowLogSumExp.find(scores);
    Value max, sum;
    if (known != ctx.rowLogSumExp.end()) {
      Value stats = kb.insertBufferArgument(kb.numArguments(),
                                            MemRefType::get({rows * 2}, b.getF32Type()));
      Value at = arith::MulIOp::create(b, rk.row, kb.idx(2));
      max = memref::LoadOp::create(b, stats, ValueRange{at});
      sum = memref::LoadOp::create(b, stats, ValueRange{arith::AddIOp::create(b, at, kb.idx(1))});
    } else {
      std::tie(max, sum) = rowLogSumExpParts(rk, scores, classes);
    }
    Value labelIndex = arith::IndexCastOp::create(b, b.getIndexType(), label);
    Type element = typeOf(result).getElementType();
    kb.blockStridedLoop(classes, {}, [&](Value j, llvm::ArrayRef<Value>) {
      Value e = math::ExpOp::create(b, arith::SubFOp::create(b, kb.load(scores, rk.at(j)), max));
      Value p = arith::DivFOp::create(b, e, sum);
      Value isLabel = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, j, labelIndex);
      Value onehot = arith::SelectOp::create(b, isLabel, kb.f32(1.0), kb.f32(0.0));
      Value v = arith::MulFOp::create(b, scale, arith::SubFOp::create(b, p, onehot));
      v = arith::SelectOp::create(b, valid, v, kb.f32(0.0));
      kb.store(result, rk.at(j), kb.roundTo(v, element));
      return llvm::SmallVector<Value>{};
    });
    kb.finish();
    if (failed(kb.status()))
      return failure();
    llvm::SmallVector<unsigned> inputs = ctx.buffersOf({dl, scores, labels});
    inputs.push_back(norm);
    if (known != ctx.rowLogSumExp.end())
      inputs.push_back(known->second);
    ctx.launch(kb, op, static_cast<unsigned>(std::max<int64_t>(rows, 1)),
               ctx.buffersOf({result}), inputs);
  }
  return success();
}

/// tx.gather_grad: zero the table, then one thread per gradient element adds
/// it into the row its index names (f32 atomics: the order of additions of
/// repeated rows is unspecified, as the op says).
/// Scatter-adds accumulate in f32 with atomics. For an f32 |result| the
/// kernel adds into it directly; otherwise into an f32 scratch buffer that
/// a loop kernel then rounds once into |result| (the executor rounds its
/// double sum once). Returns the buffer the scatter kernel adds into, and
/// sets |target| to the memref it adds through.
static unsigned scatterTarget(LoweringContext &ctx, KernelBuilder &kb,
                              Value result, unsigned position, Value &target) {
  if (typeOf(result).getElementType().isF32()) {
    target = Value();
    return ctx.bufferFor(result);
  }
  int64_t n = typeOf(result).getNumElements();
  target = kb.insertBufferArgument(position,
                                   MemRefType::get({n}, kb.builder().getF32Type()));
  return ctx.scratch(n * 4, "f32 scatter sums");
}

/// The loop kernel that rounds f32 sums in |sums| into |result|.
static LogicalResult roundSumsInto(LoweringContext &ctx, Operation *op,
                                   Value result, unsigned sums) {
  if (typeOf(result).getElementType().isF32())
    return success();
  int64_t n = typeOf(result).getNumElements();
  KernelBuilder cast(ctx.gpuModule, ctx.kernelName(op), {result}, {}, ctx.plan);
  auto &cb = cast.builder();
  Value sumsArg = cast.insertBufferArgument(1, MemRefType::get({n}, cb.getF32Type()));
  Value j = cast.globalThreadIndex();
  Value inRange = arith::CmpIOp::create(cb, arith::CmpIPredicate::ult, j, cast.idx(n));
  cast.ifThen(inRange, [&] {
    cast.store(result, j, memref::LoadOp::create(cb, sumsArg, ValueRange{j}));
  });
  cast.finish();
  if (failed(cast.status()))
    return failure();
  ctx.launch(cast, op, ceilDiv(n, kBlockSize), ctx.buffersOf({result}), {sums});
  return success();
}

/// tx.gather_elements_grad: zero the data's shape, then one thread per
/// gradient element adds it at the position its index names.
static LogicalResult lowerGatherElementsGrad(LoweringContext &ctx,
                                             tx::GatherElementsGradOp op) {
  Value grad = op.getGrad(), indices = op.getIndices(), result = op.getResult();
  auto resultShape = typeOf(result).getShape();
  auto gradShape = typeOf(grad).getShape();
  int64_t axis = static_cast<int64_t>(op.getAxis());
  if (axis < 0)
    axis += resultShape.size();
  int64_t n = typeOf(grad).getNumElements();
  bool direct = typeOf(result).getElementType().isF32();
  KernelBuilder kb(ctx.gpuModule, ctx.kernelName(op), direct ? llvm::ArrayRef<Value>{result} : llvm::ArrayRef<Value>{}, {grad, indices}, ctx.plan);
  Value target;
  unsigned out = scatterTarget(ctx, kb, result, 0, target);
  auto &b = kb.builder();
  Value i = kb.globalThreadIndex();
  Value inRange = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, i, kb.idx(n));
  kb.ifThen(inRange, [&] {
    auto gi = kb.delinearize(i, gradShape);
    Value which = kb.load(indices, kb.linearize(gi, typeOf(indices).getShape()));
    int64_t dim = resultShape[axis];
    which = kb.clampIndex(which, dim);
    llvm::SmallVector<Value> ri(gi.begin(), gi.end());
    ri[axis] = arith::IndexCastOp::create(b, b.getIndexType(), which);
    Value at = kb.linearize(ri, resultShape);
    if (target)
      memref::AtomicRMWOp::create(b, arith::AtomicRMWKind::addf, kb.load(grad, i), target, ValueRange{at});
    else
      kb.atomicAdd(result, at, kb.load(grad, i));
  });
  kb.finish();
  if (failed(kb.status()))
    return failure();
  ctx.memset(out, 0, op);
  ctx.launch(kb, op, ceilDiv(n, kBlockSize), {out}, ctx.buffersOf({grad, indices}));
  return roundSumsInto(ctx, op, result, out);
}

/// tx.gather_nd_grad: zero the data's shape, then one thread per gradient
/// element adds it at data[a, indices[a, i, :], s].
static LogicalResult lowerGatherNDGrad(LoweringContext &ctx, tx::GatherNDGradOp op) {
  Value grad = op.getGrad(), indices = op.getIndices(), result = op.getResult();
  auto resultShape = typeOf(result).getShape();
  auto gradShape = typeOf(grad).getShape();
  auto indicesShape = typeOf(indices).getShape();
  size_t q = indicesShape.size();
  int64_t bd = static_cast<int64_t>(op.getBatchDims());
  int64_t k = indicesShape.back();
  int64_t n = typeOf(grad).getNumElements();
  bool direct = typeOf(result).getElementType().isF32();
  KernelBuilder kb(ctx.gpuModule, ctx.kernelName(op), direct ? llvm::ArrayRef<Value>{result} : llvm::ArrayRef<Value>{}, {grad, indices}, ctx.plan);
  Value target;
  unsigned out = scatterTarget(ctx, kb, result, 0, target);
  auto &b = kb.builder();
  Value i = kb.globalThreadIndex();
  Value inRange = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, i, kb.idx(n));
  kb.ifThen(inRange, [&] {
    auto gi = kb.delinearize(i, gradShape);
    llvm::SmallVector<Value> ri(gi.begin(), gi.begin() + bd);
    llvm::SmallVector<Value> tuple(gi.begin(), gi.begin() + (q - 1));
    tuple.push_back(Value());
    for (int64_t t = 0; t < k; ++t) {
      tuple.back() = kb.idx(t);
      Value which = kb.load(indices, kb.linearize(tuple, indicesShape));
      which = kb.clampIndex(which, resultShape[bd + t]);
      ri.push_back(arith::IndexCastOp::create(b, b.getIndexType(), which));
    }
    ri.append(gi.begin() + (q - 1), gi.end());
    Value at = kb.linearize(ri, resultShape);
    if (target)
      memref::AtomicRMWOp::create(b, arith::AtomicRMWKind::addf, kb.load(grad, i), target, ValueRange{at});
    else
      kb.atomicAdd(result, at, kb.load(grad, i));
  });
  kb.finish();
  if (failed(kb.status()))
    return failure();
  ctx.memset(out, 0, op);
  ctx.launch(kb, op, ceilDiv(n, kBlockSize), {out}, ctx.buffersOf({grad, indices}));
  return roundSumsInto(ctx, op, result, out);
}

LogicalResult cuda::lowerGatherGrad(LoweringContext &ctx, Operation *op) {
  if (auto ge = dyn_cast<tx::GatherElementsGradOp>(op))
    return lowerGatherElementsGrad(ctx, ge);
  if (auto gn = dyn_cast<tx::GatherNDGradOp>(op))
    return lowerGatherNDGrad(ctx, gn);
  auto gg = cast<tx::GatherGradOp>(op);
  Value grad = gg.getGrad(), indices = gg.getIndices(), result = gg.getResult();
  auto resultShape = typeOf(result).getShape();
  auto gradShape = typeOf(grad).getShape();
  int64_t axis = static_cast<int64_t>(gg.getAxis());
  size_t ni = typeOf(indices).getRank();
  int64_t n = typeOf(grad).getNumElements();
  bool direct = typeOf(result).getElementType().isF32();
  KernelBuilder kb(ctx.gpuModule, ctx.kernelName(op), direct ? llvm::ArrayRef<Value>{result} : llvm::ArrayRef<Value>{}, {grad, indices}, ctx.plan);
  Value target;
  unsigned out = scatterTarget(ctx, kb, result, 0, target);
  auto &b = kb.builder();
  Value i = kb.globalThreadIndex();
  Value inRange = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, i, kb.idx(n));
  kb.ifThen(inRange, [&] {
    auto gi = kb.delinearize(i, gradShape);
    llvm::SmallVector<Value> ii(gi.begin() + axis, gi.begin() + axis + ni);
    Value which = kb.load(indices, kb.linearize(ii, typeOf(indices).getShape()));
    int64_t dim = resultShape[axis];
    which = kb.clampIndex(which, dim);
    llvm::SmallVector<Value> ri(gi.begin(), gi.begin() + axis);
    ri.push_back(arith::IndexCastOp::create(b, b.getIndexType(), which));
    ri.append(gi.begin() + axis + ni, gi.end());
    Value at = kb.linearize(ri, resultShape);
    if (target)
      memref::AtomicRMWOp::create(b, arith::AtomicRMWKind::addf, kb.load(grad, i), target, ValueRange{at});
    else
      kb.atomicAdd(result, at, kb.load(grad, i));
  });
  kb.finish();
  if (failed(kb.status()))
    return failure();
  ctx.memset(out, 0, op);
  ctx.launch(kb, op, ceilDiv(n, kBlockSize), {out}, ctx.buffersOf({grad, indices}));
  return roundSumsInto(ctx, op, result, out);
}

//===----------------------------------------------------------------------===//
// Optimizers
//===----------------------------------------------------------------------===//

/// Lets the optimizer write |result| over |state| (a step argument) when
/// nothing after |op| reads the old value: each thread reads element i and
/// writes element i, so the update is safe in place, and the next-step copy
/// of the result disappears.
static void updateInPlace(LoweringContext &ctx, Operation *op, Value state,
                          Value result) {
  if (!isa<BlockArgument>(state) || ctx.bufferOfValue.count(result))
    return;
  for (Operation *user : state.getUsers())
    if (user != op && !user->isBeforeInBlock(op))
      return;
  ctx.bufferOfValue[result] = ctx.bufferFor(state);
}

/// f32 rounding of a double, as the executor's r32().
static double r32(double v) { return static_cast<double>(static_cast<float>(v)); }

/// Elements per thread of the optimizer kernels (see lowerOptimizer).
constexpr int64_t kOptimizerElementsPerThread = 8;

/// tx.adam (and tx.sgd): one loop kernel per parameter tensor, each line of
/// the executor's formula in f32 (correctly rounded f32 operations equal
/// the executor's double-then-round results), the step-dependent scalars
/// formed in f64 inside the kernel from the lr and step tensors.
LogicalResult cuda::lowerOptimizer(LoweringContext &ctx, Operation *op) {
  if (auto adam = dyn_cast<tx::AdamOp>(op)) {
    unsigned n = adam.getNumParams();
    double beta1 = adam.getBeta1().convertToDouble();
    double beta2 = adam.getBeta2().convertToDouble();
    double eps = adam.getEpsilon().convertToDouble();
    double wd = adam.getWeightDecay().convertToDouble();
    bool adamw = adam.getMode() == tx::AdamMode::adamw;
    bool correct = adam.getBiasCorrection();
    bool f32Correction = adam.getF32BiasCorrection();
    tx::EpsilonPlacement placement = adam.getEpsilonPlacement();
    Value lr = op->getOperand(4 * n);
    Value step = correct ? op->getOperand(4 * n + 1) : Value();
    for (unsigned t = 0; t < n; ++t) {
      Value p = op->getOperand(t), g = op->getOperand(n + t);
      Value m = op->getOperand(2 * n + t), v = op->getOperand(3 * n + t);
      Value np = op->getResult(t), nm = op->getResult(n + t), nv = op->getResult(2 * n + t);
      if (!typeOf(p).getElementType().isF32())
        return op->emitError("the GPU optimizer updates f32 parameters only");
      updateInPlace(ctx, op, p, np);
      updateInPlace(ctx, op, m, nm);
      updateInPlace(ctx, op, v, nv);
      llvm::SmallVector<Value> inputs{p, g, m, v, lr};
      if (step)
        inputs.push_back(step);
      KernelBuilder kb(ctx.gpuModule, ctx.kernelName(op), {np, nm, nv}, inputs, ctx.plan);
      auto &b = kb.builder();
      int64_t count = typeOf(p).getNumElements();
      auto f64 = [&](double x) { return Value(arith::ConstantOp::create(b, b.getF64FloatAttr(x))); };
      auto toF32 = [&](Value x) { return Value(arith::TruncFOp::create(b, b.getF32Type(), x)); };
      auto toF64 = [&](Value x) { return Value(arith::ExtFOp::create(b, b.getF64Type(), x)); };
      // Scalars (as evalAdam forms them).
      Value lrValue = toF64(kb.load(lr, kb.idx(0)));
      Value lrWd = toF32(arith::MulFOp::create(b, lrValue, f64(wd)));
      Value lr32 = toF32(lrValue);
      Value bc1 = kb.f32(1.0), bc2 = kb.f32(1.0), epsTerm = kb.f32(r32(eps));
      if (correct) {
        Value s = toF64(kb.load(step, kb.idx(0)));
        Value power1, power2;
        if (f32Correction) {
          power1 = toF64(toF32(math::PowFOp::create(b, f64(r32(beta1)), s)));
          power2 = toF64(toF32(math::PowFOp::create(b, f64(r32(beta2)), s)));
        } else {
          power1 = math::PowFOp::create(b, f64(beta1), s);
          power2 = math::PowFOp::create(b, f64(beta2), s);
        }
        bc1 = toF32(arith::SubFOp::create(b, f64(1.0), power1));
        bc2 = toF32(arith::SubFOp::create(b, f64(1.0), power2));
        if (placement == tx::EpsilonPlacement::epsilon_hat)
          epsTerm = toF32(arith::DivFOp::create(
              b, f64(eps), math::SqrtOp::create(b, arith::SubFOp::create(b, f64(1.0), power2))));
      }
      // Each thread updates up to kOptimizerElementsPerThread elements (as
      // the loop kernels do, lowerElementalValue): the step's f64 scalars
      // above are formed once per thread, not once per element, and every
      // element's loads are issued before the first store.
      int64_t perThread = std::min<int64_t>(kOptimizerElementsPerThread, ceilDiv(count, kBlockSize));
      Value base = arith::AddIOp::create(
          b, arith::MulIOp::create(b, kb.blockIndex(), kb.idx(kBlockSize * perThread)),
          kb.threadIndex());
      struct Element { Value at, pk, gk, mk, vk; };
      llvm::SmallVector<Element> elements;
      for (int64_t e = 0; e < perThread; ++e) {
        Value at = arith::AddIOp::create(b, base, kb.idx(e * kBlockSize));
        Value i = arith::MinUIOp::create(b, at, kb.idx(std::max<int64_t>(count - 1, 0)));
        elements.push_back({at, kb.load(p, i), kb.load(g, i), kb.load(m, i), kb.load(v, i)});
      }
      for (Element &e : elements) {
        Value pk = e.pk, gk = e.gk;
        if (!adamw)
          gk = arith::AddFOp::create(b, gk, arith::MulFOp::create(b, kb.f32(r32(wd)), pk));
        Value mk = arith::AddFOp::create(
            b, arith::MulFOp::create(b, kb.f32(r32(beta1)), e.mk),
            arith::MulFOp::create(b, kb.f32(r32(1.0 - beta1)), gk));
        Value vk = arith::AddFOp::create(
            b, arith::MulFOp::create(b, kb.f32(r32(beta2)), e.vk),
            arith::MulFOp::create(b, arith::MulFOp::create(b, kb.f32(r32(1.0 - beta2)), gk), gk));
        Value mHat = correct ? Value(arith::DivFOp::create(b, mk, bc1)) : mk;
        Value vHat = correct ? Value(arith::DivFOp::create(b, vk, bc2)) : vk;
        Value den = placement == tx::EpsilonPlacement::inside_sqrt
                        ? Value(math::SqrtOp::create(b, arith::AddFOp::create(b, vHat, epsTerm)))
                        : Value(arith::AddFOp::create(b, math::SqrtOp::create(b, vHat), epsTerm));
        Value pd = adamw ? Value(arith::SubFOp::create(b, pk, arith::MulFOp::create(b, lrWd, pk))) : pk;
        Value update = arith::DivFOp::create(b, arith::MulFOp::create(b, lr32, mHat), den);
        Value newP = arith::SubFOp::create(b, pd, update);
        Value inRange = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, e.at, kb.idx(count));
        kb.ifThen(inRange, [&] {
          kb.store(np, e.at, newP);
          kb.store(nm, e.at, mk);
          kb.store(nv, e.at, vk);
        });
      }
      kb.finish();
      if (failed(kb.status()))
        return failure();
      ctx.launch(kb, op, ceilDiv(count, kBlockSize * perThread), ctx.buffersOf({np, nm, nv}),
                 ctx.buffersOf(inputs));
    }
    return success();
  }
  auto sgd = cast<tx::SGDOp>(op);
  unsigned n = sgd.getNumParams();
  bool hasMomentum = !sgd.getMomentum().isZero();
  double momentum = r32(sgd.getMomentum().convertToDouble());
  double wd = r32(sgd.getWeightDecay().convertToDouble());
  double oneMinusDampening = r32(1.0 - sgd.getDampening().convertToDouble());
  bool nesterov = sgd.getNesterov();
  Value lr = op->getOperand(3 * n);
  for (unsigned t = 0; t < n; ++t) {
    Value p = op->getOperand(t), g = op->getOperand(n + t), buf = op->getOperand(2 * n + t);
    Value np = op->getResult(t), nb = op->getResult(n + t);
    if (!typeOf(p).getElementType().isF32())
      return op->emitError("the GPU optimizer updates f32 parameters only");
    updateInPlace(ctx, op, p, np);
    updateInPlace(ctx, op, buf, nb);
    KernelBuilder kb(ctx.gpuModule, ctx.kernelName(op), {np, nb}, {p, g, buf, lr}, ctx.plan);
    auto &b = kb.builder();
    int64_t count = typeOf(p).getNumElements();
    Value i = kb.globalThreadIndex();
    Value lrValue = kb.load(lr, kb.idx(0));
    Value inRange = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, i, kb.idx(count));
    kb.ifThen(inRange, [&] {
      Value pk = kb.load(p, i);
      Value gk = arith::AddFOp::create(b, kb.load(g, i), arith::MulFOp::create(b, kb.f32(wd), pk));
      Value bk = kb.load(buf, i), dk = gk;
      if (hasMomentum) {
        bk = arith::AddFOp::create(b, arith::MulFOp::create(b, kb.f32(momentum), bk),
                                   arith::MulFOp::create(b, kb.f32(oneMinusDampening), gk));
        dk = nesterov ? Value(arith::AddFOp::create(b, gk, arith::MulFOp::create(b, kb.f32(momentum), bk)))
                      : bk;
      }
      kb.store(np, i, arith::SubFOp::create(b, pk, arith::MulFOp::create(b, lrValue, dk)));
      kb.store(nb, i, bk);
    });
    kb.finish();
    if (failed(kb.status()))
      return failure();
    ctx.launch(kb, op, ceilDiv(count, kBlockSize), ctx.buffersOf({np, nb}),
               ctx.buffersOf({p, g, buf, lr}));
  }
  return success();
}
