//===- ReductionKernels.cpp - reduce_sum / reduce_mean / reduce_max ---------===//
//
// SPDX-License-Identifier: Apache-2.0
// Reductions over any axes: one block per output, or coalesced column
// reductions with ordered partial sums when the kept axes are trailing.
// Every order of additions is fixed (deterministic).
//
//===----------------------------------------------------------------------===//

#include "KernelUtils.h"
#include "Lowering.h"

#include "txopt/Dialect/Tx/IR/TxOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::cuda;

Value cuda::combine(ImplicitLocOpBuilder &b, Value acc, Value v, bool isMax) {
  if (v.getType().isF64())
    v = arith::TruncFOp::create(b, b.getF32Type(), v);
  return isMax ? Value(arith::MaximumFOp::create(b, acc, v))
               : Value(arith::AddFOp::create(b, acc, v));
}

void cuda::storeReduced(KernelBuilder &k, Value result, Value at, Value sum) {
  Type element = typeOf(result).getElementType();
  if (element.isF64())
    sum = arith::ExtFOp::create(k.builder(), k.builder().getF64Type(), sum);
  k.store(result, at, k.roundTo(sum, element));
}

void cuda::storeColumnSplit(KernelBuilder &k, Value out0, Value out1, int64_t split, Value col,
                            Value sum) {
  auto &b = k.builder();
  if (!out1) {
    storeReduced(k, out0, col, sum);
    return;
  }
  Value first = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, col, k.idx(split));
  k.ifThen(first, [&] { storeReduced(k, out0, col, sum); });
  Value second = arith::CmpIOp::create(b, arith::CmpIPredicate::uge, col, k.idx(split));
  k.ifThen(second, [&] {
    storeReduced(k, out1, arith::SubIOp::create(b, col, k.idx(split)), sum);
  });
}

void cuda::emitColumnSum(KernelBuilder &kb, Value partials, Value parts, Value cols,
                         Value firstColumn, bool isMax,
                         llvm::function_ref<void(Value col, Value total)> finish) {
  constexpr int64_t kWarps = kBlockSize / 32;
  auto &b = kb.builder();
  Value smem = kb.workgroupMemory();
  Value tid = kb.threadIndex();
  Value lane = arith::RemUIOp::create(b, tid, kb.idx(32));
  Value warp = arith::DivUIOp::create(b, tid, kb.idx(32));
  Value col = arith::AddIOp::create(b, firstColumn, lane);
  Value inRange = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, col, cols);
  Value readCol = arith::MinUIOp::create(b, col, arith::SubIOp::create(b, cols, kb.idx(1)));
  Value identity = kb.f32(isMax ? -INFINITY : 0.0);
  auto acc = kb.loop(warp, parts, kb.idx(kWarps), {identity},
                     [&](Value p, llvm::ArrayRef<Value> a) {
    Value at = arith::AddIOp::create(b, arith::MulIOp::create(b, p, cols), readCol);
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
    finish(col, total);
  });
}

LogicalResult cuda::lowerPartialColumnSums(
    LoweringContext &ctx, Operation *op, llvm::ArrayRef<Value> outputs,
    unsigned partialBuffer, int64_t parts, int64_t cols, bool isMax,
    llvm::function_ref<void(KernelBuilder &, Value col, Value sum)> finish) {
  KernelBuilder kb(ctx.gpuModule, ctx.kernelName(op), outputs, {}, ctx.plan, kBlockSize);
  auto &b = kb.builder();
  Value partials = kb.insertBufferArgument(static_cast<unsigned>(outputs.size()),
                                           MemRefType::get({parts * cols}, b.getF32Type()));
  Value firstColumn = arith::MulIOp::create(b, kb.blockIndex(), kb.idx(32));
  emitColumnSum(kb, partials, kb.idx(parts), kb.idx(cols), firstColumn, isMax,
                [&](Value col, Value total) { finish(kb, col, total); });
  kb.finish();
  if (failed(kb.status()))
    return failure();
  ctx.launch(kb, op, ceilDiv(cols, 32), ctx.buffersOf(outputs), {partialBuffer});
  return success();
}

/// Whether the kernel of the column reduction |op| can write |value| as a
/// further output while it walks |op|'s input: |value| is in memory in a
/// buffer of its own (not bound elsewhere: an accumulator, an argument; not
/// stored as another value), still to be computed (its op comes after |op|
/// and no other kernel computes it), shaped like the input, and read only
/// after |op|; its own kernel then disappears.
static bool writableAlongside(LoweringContext &ctx, Operation *op, Value value) {
  Operation *def = value.getDefiningOp();
  if (!def || def->getBlock() != op->getBlock() || !op->isBeforeInBlock(def) ||
      !ctx.plan.isMaterialized(value) || ctx.loweredElsewhere.contains(def) ||
      ctx.plan.absorbedCasts.contains(def) || ctx.plan.storedAs.count(value) ||
      ctx.bufferOfValue.count(value) ||
      typeOf(value).getShape() != typeOf(op->getOperand(0)).getShape())
    return false;
  return llvm::all_of(value.getUsers(), [&](Operation *reader) {
    return reader->getBlock() == op->getBlock() && op->isBeforeInBlock(reader);
  });
}

/// A tx.cast of the column reduction |op|'s input that the reduction's
/// kernel can write (writableAlongside), or null: the cast's own kernel
/// would read the input again. A bias gradient and the bf16 copy of the
/// same gradient the weight-gradient GEMMs read are such a pair (sum over
/// rows of dy, and bf16(dy)).
static tx::CastOp companionCast(LoweringContext &ctx, Operation *op) {
  Value input = op->getOperand(0);
  if (ctx.plan.storedAs.count(input))
    return nullptr;
  for (Operation *user : input.getUsers())
    if (auto cast = dyn_cast<tx::CastOp>(user);
        cast && writableAlongside(ctx, op, cast.getResult()))
      return cast;
  return nullptr;
}

/// The recomputed value scheduleRecomputesIntoColumnSums paired with the
/// column sum |op|, if |op|'s kernel can write it (writableAlongside) and
/// every value it is computed from is among |inputs|, what the kernel reads
/// anyway.
static Value recomputedAlongside(LoweringContext &ctx, Operation *op,
                                 const llvm::SetVector<Value> &inputs) {
  auto found = ctx.recomputedBySum.find(op);
  if (found == ctx.recomputedBySum.end() || !writableAlongside(ctx, op, found->second))
    return nullptr;
  llvm::SetVector<Value> needs;
  KernelBuilder::collectInputs(found->second, ctx.plan, needs);
  if (!llvm::all_of(needs, [&](Value v) { return inputs.contains(v); }))
    return nullptr;
  return found->second;
}

namespace {
/// A column reduction (see lowerColumnReduction) and how its kernel divides
/// the work: thread t of block (tile, split) sums the |lanes| columns of
/// group tile * blockSize + t over rows [split * chunk, +chunk).
/// |elementBytes| is narrowestElementBytes's.
struct ColumnReduction {
  Value input, result;
  llvm::ArrayRef<int64_t> rows, cols;
  bool isMax, isMean;
  int64_t rowCount = 1, colCount = 1;
  int64_t lanes, groups, tiles, blockSize, splits, chunk;

  ColumnReduction(Operation *op, llvm::ArrayRef<int64_t> rows, llvm::ArrayRef<int64_t> cols,
                  bool isMax, bool isMean, int64_t elementBytes)
      : input(op->getOperand(0)), result(op->getResult(0)), rows(rows), cols(cols),
        isMax(isMax), isMean(isMean) {
    for (int64_t s : rows) rowCount *= s;
    for (int64_t s : cols) colCount *= s;
    // Each thread sums |lanes| adjacent columns, 16 bytes of the narrowest
    // element it moves (4 f32, 8 bf16), or the largest power of two below
    // that the innermost kept dim holds: its loads (and a companion's
    // stores) are then consecutive, which LLVM merges into 16-byte accesses
    // (the arguments are 16-byte aligned); each column's sum keeps its
    // order.
    lanes = std::max<int64_t>(1, 16 / elementBytes);
    while (lanes > 1 && (cols.back() % lanes != 0 || colCount < lanes))
      lanes /= 2;
    groups = colCount / lanes;
    tiles = ceilDiv(groups, kBlockSize);
    // Blocks as wide as the tile's column groups (whole warps): a block
    // of idle threads would hold an SM's warp slots (768 bf16 columns are
    // 96 groups).
    blockSize = std::max<int64_t>(32, ceilDiv(ceilDiv(groups, tiles), 32) * 32);
    // Enough blocks to fill the GPU (~2048), at least 16 rows each: GPT-2's
    // 768-column sums have one tile, and 32 rows a split left them a third
    // of the threads HBM's latency needs (session 35: 0.83 -> 0.71 ms for
    // 24 of them on an H100).
    splits = std::max<int64_t>(
        1, std::min<int64_t>(ceilDiv(rowCount, 16), ceilDiv(2048, tiles)));
    chunk = ceilDiv(rowCount, splits);
    splits = ceilDiv(rowCount, chunk);
  }

  /// Stores |sum|, the total of |column| over all rows, as the result (the
  /// mean for a mean).
  void storeResult(KernelBuilder &k, Value column, Value sum) const {
    if (isMean)
      sum = arith::DivFOp::create(k.builder(), sum, k.f32(static_cast<double>(rowCount)));
    storeReduced(k, result, column, sum);
  }
};

/// One thread of the column reduction's kernel: it sums its group of
/// columns over its split's rows, storing the sums (the result with one
/// split, else its split's partials) and, at every element it reads, a
/// companion cast's and a recomputed value's elements.
class ColumnReductionThread {
public:
  ColumnReductionThread(KernelBuilder &kb, const ColumnReduction &reduction,
                        tx::CastOp companion, Value recomputed, Value partials, Value split)
      : kb(kb), b(kb.builder()), reduction(reduction), companion(companion),
        recomputed(recomputed), partials(partials), split(split) {}

  /// The thread of column group |group| (in range), reading the whole
  /// input or, with |concatParts|, the part of the concat its columns lie
  /// in.
  void emit(Value group, Operation *concatParts) {
    int64_t lanes = reduction.lanes, chunk = reduction.chunk;
    begin = arith::MulIOp::create(b, split, kb.idx(chunk));
    end = arith::MinUIOp::create(b, arith::AddIOp::create(b, begin, kb.idx(chunk)),
                                 kb.idx(reduction.rowCount));
    // The first column of the group, visibly a multiple of |lanes|.
    llvm::SmallVector<int64_t> groupCols(reduction.cols.begin(), reduction.cols.end());
    groupCols.back() /= lanes;
    colIndex = kb.delinearize(group, groupCols);
    innermost = arith::MulIOp::create(b, colIndex.back(), kb.idx(lanes));
    column = arith::MulIOp::create(b, group, kb.idx(lanes));
    if (!concatParts) {
      reduceColumns(reduction.input, 0);
      return;
    }
    // A thread's columns lie in one part of the concat for all its rows:
    // the part is chosen once here, and its loop reads that part directly.
    int64_t offset = 0;
    for (Value part : concatParts->getOperands()) {
      int64_t width = typeOf(part).getShape().back();
      Value inPart = arith::AndIOp::create(
          b, arith::CmpIOp::create(b, arith::CmpIPredicate::uge, innermost, kb.idx(offset)),
          arith::CmpIOp::create(b, arith::CmpIPredicate::ult, innermost, kb.idx(offset + width)));
      kb.ifThen(inPart, [&] { reduceColumns(part, offset); });
      offset += width;
    }
  }

private:
  /// Sums the thread's columns over its rows, reading element j of |source|
  /// at innermost index j - |offset| (the whole input, or one concat part).
  void reduceColumns(Value source, int64_t offset) {
    int64_t lanes = reduction.lanes;
    llvm::SmallVector<Value> init(lanes, kb.f32(reduction.isMax ? -INFINITY : 0.0));
    auto acc = kb.loop(begin, end, kb.idx(1), init,
                       [&](Value r, llvm::ArrayRef<Value> a) {
      return emitRow(r, a, source, offset);
    }, /*unroll=*/4); // four rows' loads in flight before their sums
    storeSums(acc);
  }

  /// Row |r| of the loop: adds the row's elements to |acc| and returns the
  /// new sums.
  llvm::SmallVector<Value> emitRow(Value r, llvm::ArrayRef<Value> acc, Value source,
                                   int64_t offset) {
    int64_t lanes = reduction.lanes;
    llvm::SmallVector<Value> full = kb.delinearize(r, reduction.rows);
    full.append(colIndex.begin(), colIndex.end());
    // Every lane's loads before any store: a store between them (to
    // another buffer, which LLVM cannot tell apart) would keep the loads
    // from merging.
    llvm::SmallVector<Value> elements, recomputedElements, next;
    for (int64_t k = 0; k < lanes; ++k) {
      full.back() = arith::AddIOp::create(b, innermost, kb.idx(k - offset));
      elements.push_back(kb.emit(source, full));
      if (recomputed)
        recomputedElements.push_back(kb.emitComputed(recomputed, full));
    }
    // Each output's stores together (the companion's, then the
    // recomputed value's): stores to two buffers interleaved stay
    // scalar, since LLVM cannot tell the buffers apart to merge them.
    // Lane k's element, linear in the input (and in both outputs).
    llvm::SmallVector<Value> positions;
    if (companion || recomputed)
      for (int64_t k = 0; k < lanes; ++k)
        positions.push_back(arith::AddIOp::create(
            b, arith::MulIOp::create(b, r, kb.idx(reduction.colCount)),
            arith::AddIOp::create(b, column, kb.idx(k))));
    for (int64_t k = 0; k < lanes; ++k) {
      if (companion) {
        Value y = companion.getResult();
        kb.store(y, positions[k],
                 kb.castScalar(elements[k], typeOf(reduction.input).getElementType(),
                               typeOf(y).getElementType()));
      }
      next.push_back(combine(b, acc[k], elements[k], reduction.isMax));
    }
    for (int64_t k = 0; k < lanes && recomputed; ++k)
      kb.store(recomputed, positions[k], recomputedElements[k]);
    return next;
  }

  /// Stores the thread's column sums: the result with one split, else this
  /// split's partials.
  void storeSums(llvm::ArrayRef<Value> sums) {
    for (int64_t k = 0; k < reduction.lanes; ++k) {
      Value col = arith::AddIOp::create(b, column, kb.idx(k));
      if (reduction.splits == 1) {
        reduction.storeResult(kb, col, sums[k]);
      } else {
        Value at = arith::AddIOp::create(
            b, arith::MulIOp::create(b, split, kb.idx(reduction.colCount)), col);
        memref::StoreOp::create(b, sums[k], partials, ValueRange{at});
      }
    }
  }

  KernelBuilder &kb;
  ImplicitLocOpBuilder &b;
  const ColumnReduction &reduction;
  tx::CastOp companion;
  Value recomputed, partials, split;
  // The thread's rows [begin, end), its columns' indices, the innermost
  // index and the linear index of its first column (set by emit).
  Value begin, end, innermost, column;
  llvm::SmallVector<Value> colIndex;
};
} // namespace

/// An input concatenated along its innermost dim from parts each a
/// multiple of |lanes| wide (the q/k/v gradients of a fused projection), or
/// null: the elemental concat picks a part per element, in branches LLVM
/// does not hoist out of the row loop, and their scalar loads never merge.
static Operation *laneAlignedConcat(LoweringContext &ctx, Value input, int64_t lanes) {
  auto concat = input.getDefiningOp<tx::ConcatOp>();
  if (!concat)
    return nullptr;
  int64_t rank = typeOf(input).getRank();
  // The attribute reads back unsigned: a negative axis (from the end) is
  // its two's complement.
  int64_t axis = static_cast<int64_t>(concat.getAxis());
  if (axis < 0)
    axis += rank;
  if (!ctx.plan.isMaterialized(input) && axis == rank - 1 && lanes > 1 &&
      llvm::all_of(concat.getInputs(), [&](Value part) {
        return typeOf(part).getShape().back() % lanes == 0;
      }))
    return concat;
  return nullptr;
}

/// Bytes of the narrowest element a column reduction's kernel moves at
/// every (row, column): among the full-size tensors it reads (|reads|, the
/// kernel's inputs) and the |companion| cast it writes, as stored.
static int64_t narrowestElementBytes(LoweringContext &ctx, Operation *op,
                                     const llvm::SetVector<Value> &reads,
                                     tx::CastOp companion) {
  int64_t full = typeOf(op->getOperand(0)).getNumElements(), bytes = 4;
  auto consider = [&](Value v) {
    Type stored = typeOf(KernelBuilder::storageOf(v, ctx.plan)).getElementType();
    if (stored.isIntOrFloat())
      bytes = std::min<int64_t>(bytes, std::max(1u, stored.getIntOrFloatBitWidth() / 8));
  };
  for (Value v : reads)
    if (typeOf(v).getNumElements() == full)
      consider(v);
  if (companion)
    consider(companion.getResult());
  return bytes;
}

/// A reduction over leading axes |rows| keeping trailing axes |cols| (both
/// as shapes), e.g. a bias gradient. With a companionCast the kernel also
/// stores the cast of every element it reads, and with a
/// recomputedAlongside value that value at every element it walks. Thread t
/// of block (tile, split) owns columns [(tile * blockSize + t) * lanes, +lanes) and sums
/// rows [split * chunk, +chunk) of each in order; with several splits a
/// second kernel adds the splits' partials in order: deterministic, and
/// every load coalesced.
static LogicalResult lowerColumnReduction(LoweringContext &ctx, Operation *op,
                                          llvm::ArrayRef<int64_t> rows,
                                          llvm::ArrayRef<int64_t> cols,
                                          bool isMax, bool isMean) {
  llvm::SetVector<Value> inputs;
  KernelBuilder::collectInputs(op->getResult(0), ctx.plan, inputs);
  tx::CastOp companion = companionCast(ctx, op);
  ColumnReduction reduction(op, rows, cols, isMax, isMean,
                            narrowestElementBytes(ctx, op, inputs, companion));
  Value input = reduction.input, result = reduction.result;
  int64_t colCount = reduction.colCount, tiles = reduction.tiles, splits = reduction.splits;
  Operation *concatParts = laneAlignedConcat(ctx, input, reduction.lanes);

  Value recomputed = concatParts ? Value() : recomputedAlongside(ctx, op, inputs);
  llvm::SmallVector<Value> outputs;
  if (splits == 1)
    outputs.push_back(result);
  if (companion)
    outputs.push_back(companion.getResult());
  if (recomputed)
    outputs.push_back(recomputed);
  KernelBuilder kb(ctx.gpuModule, ctx.kernelName(op), outputs, inputs.getArrayRef(),
                   ctx.plan);
  kb.setBlockSize(static_cast<unsigned>(reduction.blockSize));
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
  Value group = arith::AddIOp::create(
      b, arith::MulIOp::create(b, tile, kb.idx(reduction.blockSize)), kb.threadIndex());
  Value inRange =
      arith::CmpIOp::create(b, arith::CmpIPredicate::ult, group, kb.idx(reduction.groups));
  ColumnReductionThread thread(kb, reduction, companion, recomputed, partials, split);
  kb.ifThen(inRange, [&] { thread.emit(group, concatParts); });
  kb.finish();
  kb.groupMemoryAccesses();
  if (failed(kb.status()))
    return failure();
  llvm::SmallVector<unsigned> written = ctx.buffersOf(outputs);
  if (companion)
    ctx.loweredElsewhere.insert(companion);
  if (recomputed)
    ctx.loweredElsewhere.insert(recomputed.getDefiningOp());
  if (splits == 1) {
    ctx.launch(kb, op, static_cast<unsigned>(tiles), written,
               ctx.buffersOf(inputs.getArrayRef()));
    return success();
  }
  written.insert(written.begin(), partialBuffer);
  ctx.launch(kb, op, static_cast<unsigned>(tiles * splits), written,
             ctx.buffersOf(inputs.getArrayRef()));
  // Stage two: each column adds its splits' partials, in order; a plain
  // sum waits to share one launch with the others (deferColumnSums).
  if (!isMax && !isMean &&
      deferColumnSums(ctx, op, partialBuffer, splits, colCount, {result}, colCount))
    return success();
  return lowerPartialColumnSums(ctx, op, {result}, partialBuffer, splits, colCount, isMax,
                                [&](KernelBuilder &k, Value column, Value sum) {
                                  reduction.storeResult(k, column, sum);
                                });
}

/// A reduction over integers (a count of the tokens a loss sees, a
/// length): one thread per result element adds (or maxes) its reduced
/// elements in order, as the executor does: i64 arithmetic that wraps, a
/// mean that truncates toward zero, the result narrowed to its type. These
/// tensors are small; no tiling.
static LogicalResult lowerIntegerReduction(LoweringContext &ctx, Operation *op,
                                           llvm::ArrayRef<bool> reduced) {
  Value input = op->getOperand(0), result = op->getResult(0);
  auto inType = typeOf(input);
  if (inType.getElementType().isInteger(1))
    return op->emitError("a reduction over booleans is not supported on the GPU");
  bool isMax = isa<tx::ReduceMaxOp>(op), isMean = isa<tx::ReduceMeanOp>(op);
  llvm::SmallVector<int64_t> keptShape, reducedShape;
  for (auto [d, size] : llvm::enumerate(inType.getShape()))
    (reduced[d] ? reducedShape : keptShape).push_back(size);
  int64_t outCount = 1, count = 1;
  for (int64_t s : keptShape)
    outCount *= s;
  for (int64_t s : reducedShape)
    count *= s;
  llvm::SetVector<Value> inputs;
  KernelBuilder::collectReadsOf(input, ctx.plan, inputs);
  KernelBuilder kb(ctx.gpuModule, ctx.kernelName(op), {result}, inputs.getArrayRef(), ctx.plan);
  auto &b = kb.builder();
  auto i64 = [&](int64_t v) { return arith::ConstantIntOp::create(b, v, 64); };
  Value o = kb.globalThreadIndex();
  kb.ifThen(arith::CmpIOp::create(b, arith::CmpIPredicate::ult, o, kb.idx(outCount)), [&] {
    llvm::SmallVector<Value> kept;
    if (!keptShape.empty())
      kept = kb.delinearize(o, keptShape);
    Value init = i64(isMax ? std::numeric_limits<int64_t>::min() : 0);
    auto acc = kb.loop(kb.idx(0), kb.idx(count), kb.idx(1), {init},
                       [&](Value k, llvm::ArrayRef<Value> a) {
      llvm::SmallVector<Value> red;
      if (!reducedShape.empty())
        red = kb.delinearize(k, reducedShape);
      llvm::SmallVector<Value> index;
      size_t nextKept = 0, nextReduced = 0;
      for (bool r : reduced)
        index.push_back(r ? red[nextReduced++] : kept[nextKept++]);
      Value v = kb.emit(input, index);
      Value next = isMax ? Value(arith::MaxSIOp::create(b, a[0], v))
                         : Value(arith::AddIOp::create(b, a[0], v));
      return llvm::SmallVector<Value>{next};
    });
    Value total = acc[0];
    if (isMean && count)
      total = arith::DivSIOp::create(b, total, i64(count));
    kb.store(result, o, total);
  });
  kb.finish();
  if (failed(kb.status()))
    return failure();
  ctx.launch(kb, op, static_cast<unsigned>(ceilDiv(std::max<int64_t>(outCount, 1), kBlockSize)),
             ctx.buffersOf({result}), ctx.buffersOf(inputs.getArrayRef()));
  return success();
}

LogicalResult cuda::lowerReduction(LoweringContext &ctx, Operation *op) {
  Value input = op->getOperand(0), result = op->getResult(0);
  auto inType = typeOf(input);
  int64_t rank = inType.getRank();
  llvm::ArrayRef<int64_t> axesAttr =
      cast<DenseI64ArrayAttr>(op->getAttr("axes")).asArrayRef();
  llvm::SmallVector<bool> reduced(rank, axesAttr.empty());
  for (int64_t a : axesAttr)
    reduced[a < 0 ? a + rank : a] = true;
  if (!isa<FloatType>(inType.getElementType()))
    return lowerIntegerReduction(ctx, op, reduced);
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
