//===- ScatterKernels.cpp - gradients of the gathers ------------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// tx.gather_grad (the embedding gradient) as a deterministic sort-and-sum
// whose result equals the CPU executor's bit for bit; the GatherElements /
// GatherND gradients as scatter-adds with f32 atomics (the ops leave the
// order of repeated indices unspecified; they are rare in training steps).
//
//===----------------------------------------------------------------------===//

#include "KernelUtils.h"
#include "Lowering.h"

#include "txopt/Dialect/Tx/IR/TxOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include <cmath>

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::cuda;

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

/// The gather gradients' scatter-add: zero the data's shape (|result|),
/// then one thread per element of |grad| adds it at the linear position of
/// |result| that |positionOf| computes from the element's index (reading
/// |indices|).
static LogicalResult
lowerScatterAdd(LoweringContext &ctx, Operation *op, Value grad, Value indices, Value result,
                llvm::function_ref<Value(KernelBuilder &, llvm::ArrayRef<Value>)> positionOf) {
  int64_t n = typeOf(grad).getNumElements();
  bool direct = typeOf(result).getElementType().isF32();
  KernelBuilder kb(ctx.gpuModule, ctx.kernelName(op), direct ? llvm::ArrayRef<Value>{result} : llvm::ArrayRef<Value>{}, {grad, indices}, ctx.plan);
  Value target;
  unsigned out = scatterTarget(ctx, kb, result, 0, target);
  auto &b = kb.builder();
  Value i = kb.globalThreadIndex();
  Value inRange = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, i, kb.idx(n));
  kb.ifThen(inRange, [&] {
    auto gi = kb.delinearize(i, typeOf(grad).getShape());
    Value at = positionOf(kb, gi);
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

/// tx.gather_elements_grad: each gradient element goes to its own index
/// with the axis coordinate replaced by the index it names.
static LogicalResult lowerGatherElementsGrad(LoweringContext &ctx,
                                             tx::GatherElementsGradOp op) {
  Value indices = op.getIndices(), result = op.getResult();
  auto resultShape = typeOf(result).getShape();
  int64_t axis = static_cast<int64_t>(op.getAxis());
  if (axis < 0)
    axis += resultShape.size();
  return lowerScatterAdd(ctx, op, op.getGrad(), indices, result,
                         [&](KernelBuilder &kb, llvm::ArrayRef<Value> gi) {
    auto &b = kb.builder();
    Value which = kb.load(indices, kb.linearize(gi, typeOf(indices).getShape()));
    int64_t dim = resultShape[axis];
    which = kb.clampIndex(which, dim);
    llvm::SmallVector<Value> ri(gi.begin(), gi.end());
    ri[axis] = arith::IndexCastOp::create(b, b.getIndexType(), which);
    return kb.linearize(ri, resultShape);
  });
}

/// tx.gather_nd_grad: each gradient element goes to data[a, indices[a, i, :], s].
static LogicalResult lowerGatherNDGrad(LoweringContext &ctx, tx::GatherNDGradOp op) {
  Value indices = op.getIndices(), result = op.getResult();
  auto resultShape = typeOf(result).getShape();
  auto indicesShape = typeOf(indices).getShape();
  size_t q = indicesShape.size();
  int64_t bd = static_cast<int64_t>(op.getBatchDims());
  int64_t k = indicesShape.back();
  return lowerScatterAdd(ctx, op, op.getGrad(), indices, result,
                         [&](KernelBuilder &kb, llvm::ArrayRef<Value> gi) {
    auto &b = kb.builder();
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
    return kb.linearize(ri, resultShape);
  });
}

namespace {
/// tx.gather_grad as keys and positions: the result is [P, dim, S] (P the
/// dims before the axis, S those after), the gradient [P, count, S]; its
/// position q = p * count + i (i an element of indices) adds its S values
/// into row key(q) = p * dim + indices[i] of the result.
struct GatherGradShape {
  int64_t outer = 1, dim = 0, inner = 1, count = 0;
  int64_t keys() const { return outer * dim; }
  int64_t positions() const { return outer * count; }
  int64_t chunks() const { return ceilDiv(positions(), kBlockSize); }
};
} // namespace

static GatherGradShape gatherGradShape(tx::GatherGradOp op) {
  GatherGradShape g;
  auto shape = typeOf(op.getResult()).getShape();
  int64_t axis = static_cast<int64_t>(op.getAxis());
  for (int64_t d = 0; d < axis; ++d)
    g.outer *= shape[d];
  g.dim = shape[axis];
  for (size_t d = axis + 1; d < shape.size(); ++d)
    g.inner *= shape[d];
  g.count = typeOf(op.getIndices()).getNumElements();
  return g;
}

/// The row key of position |q| (index typed).
static Value gatherKey(KernelBuilder &kb, const GatherGradShape &g, Value indices,
                       Value q) {
  auto &b = kb.builder();
  Value p = arith::DivUIOp::create(b, q, kb.idx(g.count));
  Value i = arith::RemUIOp::create(b, q, kb.idx(g.count));
  Value which = kb.clampIndex(kb.load(indices, i), g.dim);
  Value row = arith::IndexCastOp::create(b, b.getIndexType(), which);
  return arith::AddIOp::create(b, arith::MulIOp::create(b, p, kb.idx(g.dim)), row);
}

static Value loadIndex(ImplicitLocOpBuilder &b, Value buffer, Value at) {
  Value raw = memref::LoadOp::create(b, buffer, ValueRange{at});
  return arith::IndexCastOp::create(b, b.getIndexType(), raw);
}

static void storeIndex(ImplicitLocOpBuilder &b, Value value, Value buffer, Value at) {
  Value raw = arith::IndexCastOp::create(b, b.getI32Type(), value);
  memref::StoreOp::create(b, raw, buffer, ValueRange{at});
}

namespace {
/// The int32 scratch slots of the sorted gather_grad: per-chunk counts of
/// each key, each position's rank in its chunk, the row starts and the
/// positions listed by row.
struct GatherGradScratch {
  unsigned counts = 0, rank = 0, start = 0, list = 0;
};
} // namespace

static MemRefType i32Buffer(MLIRContext *context, int64_t n) {
  return MemRefType::get({n}, IntegerType::get(context, 32));
}

/// Stage 1, rank: one block per chunk of 256 positions; each position
/// counts the earlier positions of its chunk with the same key and adds one
/// to counts[chunk][key].
static LogicalResult lowerGatherGradRanks(LoweringContext &ctx, tx::GatherGradOp op,
                                          const GatherGradShape &g,
                                          const GatherGradScratch &scratch) {
  Value indices = op.getIndices();
  int64_t keys = g.keys(), positions = g.positions(), chunks = g.chunks();
  KernelBuilder kb(ctx.gpuModule, ctx.kernelName(op), {}, {indices}, ctx.plan);
  auto &b = kb.builder();
  Value counts = kb.insertBufferArgument(0, i32Buffer(op.getContext(), chunks * keys));
  Value rank = kb.insertBufferArgument(1, i32Buffer(op.getContext(), positions));
  Value q = kb.globalThreadIndex();
  Value inRange = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, q, kb.idx(positions));
  kb.ifThen(inRange, [&] {
    Value key = gatherKey(kb, g, indices, q);
    Value chunk = kb.blockIndex();
    Value first = arith::MulIOp::create(b, chunk, kb.idx(kBlockSize));
    Value r = kb.loop(first, q, kb.idx(1), {kb.idx(0)},
                      [&](Value j, llvm::ArrayRef<Value> acc) -> llvm::SmallVector<Value> {
      Value same = arith::CmpIOp::create(b, arith::CmpIPredicate::eq,
                                         gatherKey(kb, g, indices, j), key);
      Value one = arith::SelectOp::create(b, same, kb.idx(1), kb.idx(0));
      return {arith::AddIOp::create(b, acc[0], one)};
    })[0];
    storeIndex(b, r, rank, q);
    Value at = arith::AddIOp::create(b, arith::MulIOp::create(b, chunk, kb.idx(keys)), key);
    Value one = arith::ConstantIntOp::create(b, 1, 32);
    memref::AtomicRMWOp::create(b, arith::AtomicRMWKind::addi, one, counts, ValueRange{at});
  });
  kb.finish();
  if (failed(kb.status()))
    return failure();
  ctx.launch(kb, op, chunks, {scratch.counts, scratch.rank}, ctx.buffersOf({indices}));
  return success();
}

/// Stage 2, chunk offsets: per key, counts[.][key] becomes its exclusive
/// prefix over the chunks; the key's total goes to start[key].
static LogicalResult lowerGatherGradChunkOffsets(LoweringContext &ctx, tx::GatherGradOp op,
                                                 const GatherGradShape &g,
                                                 const GatherGradScratch &scratch) {
  int64_t keys = g.keys(), chunks = g.chunks();
  KernelBuilder kb(ctx.gpuModule, ctx.kernelName(op), {}, {}, ctx.plan);
  auto &b = kb.builder();
  Value counts = kb.insertBufferArgument(0, i32Buffer(op.getContext(), chunks * keys));
  Value start = kb.insertBufferArgument(1, i32Buffer(op.getContext(), keys + 1));
  Value key = kb.globalThreadIndex();
  Value inRange = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, key, kb.idx(keys));
  kb.ifThen(inRange, [&] {
    Value total = kb.loop(kb.idx(0), kb.idx(chunks), kb.idx(1), {kb.idx(0)},
                          [&](Value c, llvm::ArrayRef<Value> acc) -> llvm::SmallVector<Value> {
      Value at = arith::AddIOp::create(b, arith::MulIOp::create(b, c, kb.idx(keys)), key);
      Value n = loadIndex(b, counts, at);
      storeIndex(b, acc[0], counts, at);
      return {arith::AddIOp::create(b, acc[0], n)};
    })[0];
    storeIndex(b, total, start, key);
  });
  kb.finish();
  if (failed(kb.status()))
    return failure();
  ctx.launch(kb, op, ceilDiv(keys, kBlockSize), {scratch.counts, scratch.start}, {});
  return success();
}

/// Stage 3, row starts: one block scans start[] (exclusive) and sets
/// start[keys] to the number of positions. Thread t scans keys
/// [t * per, (t + 1) * per); a Hillis-Steele scan of the threads' sums in
/// workgroup memory gives each its base.
static LogicalResult lowerGatherGradRowStarts(LoweringContext &ctx, tx::GatherGradOp op,
                                              const GatherGradShape &g,
                                              const GatherGradScratch &scratch) {
  int64_t keys = g.keys();
  Type i32 = IntegerType::get(op.getContext(), 32);
  KernelBuilder kb(ctx.gpuModule, ctx.kernelName(op), {}, {}, ctx.plan, kBlockSize, i32);
  auto &b = kb.builder();
  Value start = kb.insertBufferArgument(0, i32Buffer(op.getContext(), keys + 1));
  Value smem = kb.workgroupMemory();
  int64_t per = ceilDiv(keys, kBlockSize);
  Value t = kb.threadIndex();
  Value lo = arith::MinUIOp::create(b, arith::MulIOp::create(b, t, kb.idx(per)), kb.idx(keys));
  Value hi = arith::MinUIOp::create(b, arith::AddIOp::create(b, lo, kb.idx(per)), kb.idx(keys));
  Value mine = kb.loop(lo, hi, kb.idx(1), {kb.idx(0)},
                       [&](Value k, llvm::ArrayRef<Value> acc) -> llvm::SmallVector<Value> {
    return {arith::AddIOp::create(b, acc[0], loadIndex(b, start, k))};
  })[0];
  storeIndex(b, mine, smem, t);
  for (int64_t offset = 1; offset < kBlockSize; offset *= 2) {
    gpu::BarrierOp::create(b);
    Value has = arith::CmpIOp::create(b, arith::CmpIPredicate::uge, t, kb.idx(offset));
    Value from = arith::SelectOp::create(
        b, has, arith::SubIOp::create(b, t, kb.idx(offset)), t);
    Value other = arith::SelectOp::create(b, has, loadIndex(b, smem, from), kb.idx(0));
    Value sum = arith::AddIOp::create(b, loadIndex(b, smem, t), other);
    gpu::BarrierOp::create(b);
    storeIndex(b, sum, smem, t);
  }
  gpu::BarrierOp::create(b);
  Value inclusive = loadIndex(b, smem, t);
  Value base = arith::SubIOp::create(b, inclusive, mine);
  kb.loop(lo, hi, kb.idx(1), {base},
          [&](Value k, llvm::ArrayRef<Value> acc) -> llvm::SmallVector<Value> {
    Value n = loadIndex(b, start, k);
    storeIndex(b, acc[0], start, k);
    return {arith::AddIOp::create(b, acc[0], n)};
  });
  Value last = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, t, kb.idx(kBlockSize - 1));
  kb.ifThen(last, [&] { storeIndex(b, inclusive, start, kb.idx(keys)); });
  kb.finish();
  if (failed(kb.status()))
    return failure();
  ctx.launch(kb, op, 1, {scratch.start}, {});
  return success();
}

/// Stage 4, place: list[start[key] + counts[chunk][key] + rank] = position.
static LogicalResult lowerGatherGradPlacement(LoweringContext &ctx, tx::GatherGradOp op,
                                              const GatherGradShape &g,
                                              const GatherGradScratch &scratch) {
  Value indices = op.getIndices();
  int64_t keys = g.keys(), positions = g.positions(), chunks = g.chunks();
  MLIRContext *context = op.getContext();
  KernelBuilder kb(ctx.gpuModule, ctx.kernelName(op), {}, {indices}, ctx.plan);
  auto &b = kb.builder();
  Value list = kb.insertBufferArgument(0, i32Buffer(context, positions));
  Value counts = kb.insertBufferArgument(1, i32Buffer(context, chunks * keys));
  Value start = kb.insertBufferArgument(2, i32Buffer(context, keys + 1));
  Value rank = kb.insertBufferArgument(3, i32Buffer(context, positions));
  Value q = kb.globalThreadIndex();
  Value inRange = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, q, kb.idx(positions));
  kb.ifThen(inRange, [&] {
    Value key = gatherKey(kb, g, indices, q);
    Value at = arith::AddIOp::create(
        b, arith::MulIOp::create(b, kb.blockIndex(), kb.idx(keys)), key);
    Value slot = arith::AddIOp::create(
        b, arith::AddIOp::create(b, loadIndex(b, start, key), loadIndex(b, counts, at)),
        loadIndex(b, rank, q));
    storeIndex(b, q, list, slot);
  });
  kb.finish();
  if (failed(kb.status()))
    return failure();
  ctx.launch(kb, op, chunks, {scratch.list, scratch.counts, scratch.start, scratch.rank},
             ctx.buffersOf({indices}));
  return success();
}

/// Stage 5, sum: result[key, s] = sum over list[start[key] .. start[key + 1]),
/// in f64 over the row's positions in ascending order.
static LogicalResult lowerGatherGradRowSums(LoweringContext &ctx, tx::GatherGradOp op,
                                            const GatherGradShape &g,
                                            const GatherGradScratch &scratch) {
  Value grad = op.getGrad(), result = op.getResult();
  int64_t keys = g.keys(), positions = g.positions();
  KernelBuilder kb(ctx.gpuModule, ctx.kernelName(op), {result}, {grad}, ctx.plan);
  auto &b = kb.builder();
  Value list = kb.insertBufferArgument(2, i32Buffer(op.getContext(), positions));
  Value start = kb.insertBufferArgument(3, i32Buffer(op.getContext(), keys + 1));
  int64_t n = keys * g.inner;
  Value e = kb.globalThreadIndex();
  Value inRange = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, e, kb.idx(n));
  kb.ifThen(inRange, [&] {
    Value key = arith::DivUIOp::create(b, e, kb.idx(g.inner));
    Value s = arith::RemUIOp::create(b, e, kb.idx(g.inner));
    Value begin = loadIndex(b, start, key);
    Value end = loadIndex(b, start, arith::AddIOp::create(b, key, kb.idx(1)));
    Value zero = arith::ConstantOp::create(b, b.getF64FloatAttr(0.0));
    Value sum = kb.loop(begin, end, kb.idx(1), {zero},
                        [&](Value k, llvm::ArrayRef<Value> acc) -> llvm::SmallVector<Value> {
      Value q = loadIndex(b, list, k);
      Value at = arith::AddIOp::create(b, arith::MulIOp::create(b, q, kb.idx(g.inner)), s);
      Value x = arith::ExtFOp::create(b, b.getF64Type(), kb.load(grad, at));
      return {arith::AddFOp::create(b, acc[0], x)};
    })[0];
    kb.store(result, e, arith::TruncFOp::create(b, b.getF32Type(), sum));
  });
  kb.finish();
  if (failed(kb.status()))
    return failure();
  ctx.launch(kb, op, ceilDiv(n, kBlockSize), ctx.buffersOf({result}),
             {ctx.bufferFor(grad), scratch.list, scratch.start});
  return success();
}

/// tx.gather_grad, deterministically: the positions of each row are listed
/// in ascending order (a counting sort whose placement within a row is
/// the position's rank, not an atomic's arrival order), then one thread
/// per result element sums its row's gradients in that order in f64 and
/// rounds once, as the executor does (its double sum over ascending
/// positions), so the embedding gradient is the same on every run and
/// equals the CPU's. Five kernels after one memset, over int32 scratch:
///  1. rank: one block per chunk of 256 positions; each position counts
///     the earlier positions of its chunk with the same key (its rank in
///     the chunk) and adds one to counts[chunk][key] (integer atomics:
///     the same total in any order);
///  2. chunk offsets: per key, counts[.][key] becomes its exclusive prefix
///     over the chunks; the key's total goes to start[key];
///  3. row starts: one block scans start[] (exclusive), start[keys] = all;
///  4. place: list[start[key] + counts[chunk][key] + rank] = position;
///  5. sum: result[key, s] = sum over list[start[key] .. start[key + 1]).
static LogicalResult lowerGatherGradSorted(LoweringContext &ctx, tx::GatherGradOp op,
                                           const GatherGradShape &g) {
  int64_t keys = g.keys(), positions = g.positions(), chunks = g.chunks();
  GatherGradScratch scratch;
  scratch.counts = ctx.scratch(chunks * keys * 4, "gather_grad counts per chunk");
  scratch.rank = ctx.scratch(positions * 4, "gather_grad ranks");
  scratch.start = ctx.scratch((keys + 1) * 4, "gather_grad row starts");
  scratch.list = ctx.scratch(positions * 4, "gather_grad positions by row");
  ctx.memset(scratch.counts, 0, op);
  if (failed(lowerGatherGradRanks(ctx, op, g, scratch)) ||
      failed(lowerGatherGradChunkOffsets(ctx, op, g, scratch)) ||
      failed(lowerGatherGradRowStarts(ctx, op, g, scratch)) ||
      failed(lowerGatherGradPlacement(ctx, op, g, scratch)))
    return failure();
  return lowerGatherGradRowSums(ctx, op, g, scratch);
}

/// tx.gather_grad: each gradient element goes to data[a, indices[i], s].
/// Sorted and summed deterministically (above) when its int32 scratch can
/// count the keys and positions; else (beyond 2^31) the f32 atomic
/// scatter-add. A 16-bit table is rounded f64 -> f32 -> its type, where
/// the executor rounds its double once: a tie can differ by one ulp.
static LogicalResult lowerGatherGradOp(LoweringContext &ctx, tx::GatherGradOp op) {
  GatherGradShape g = gatherGradShape(op);
  constexpr int64_t kInt32Limit = int64_t(1) << 31;
  if (g.positions() > 0 && g.keys() + 1 < kInt32Limit && g.positions() < kInt32Limit &&
      g.chunks() * g.keys() < kInt32Limit && g.keys() * g.inner < kInt32Limit * 64)
    return lowerGatherGradSorted(ctx, op, g);
  Value indices = op.getIndices(), result = op.getResult();
  auto resultShape = typeOf(result).getShape();
  int64_t axis = static_cast<int64_t>(op.getAxis());
  size_t ni = typeOf(indices).getRank();
  return lowerScatterAdd(ctx, op, op.getGrad(), indices, result,
                         [&](KernelBuilder &kb, llvm::ArrayRef<Value> gi) {
    auto &b = kb.builder();
    llvm::SmallVector<Value> ii(gi.begin() + axis, gi.begin() + axis + ni);
    Value which = kb.load(indices, kb.linearize(ii, typeOf(indices).getShape()));
    int64_t dim = resultShape[axis];
    which = kb.clampIndex(which, dim);
    llvm::SmallVector<Value> ri(gi.begin(), gi.begin() + axis);
    ri.push_back(arith::IndexCastOp::create(b, b.getIndexType(), which));
    ri.append(gi.begin() + axis + ni, gi.end());
    return kb.linearize(ri, resultShape);
  });
}

LogicalResult cuda::lowerGatherGrad(LoweringContext &ctx, Operation *op) {
  if (auto ge = dyn_cast<tx::GatherElementsGradOp>(op))
    return lowerGatherElementsGrad(ctx, ge);
  if (auto gn = dyn_cast<tx::GatherNDGradOp>(op))
    return lowerGatherNDGrad(ctx, gn);
  return lowerGatherGradOp(ctx, cast<tx::GatherGradOp>(op));
}
