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
  /// Blocks of kBlockSize row starts: keys + 1 of them (the last is the
  /// number of positions).
  int64_t keyBlocks() const { return ceilDiv(keys() + 1, kBlockSize); }
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
/// each key, each position's rank in its chunk, the row starts within
/// their block of keys and the blocks' bases, and the positions listed by
/// row.
struct GatherGradScratch {
  unsigned counts = 0, rank = 0, start = 0, blockBase = 0, list = 0;
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

/// The inclusive prefix sum of |mine| over the block's threads: a
/// Hillis-Steele scan in the kernel's kBlockSize i32 of workgroup memory.
static Value blockInclusiveScan(KernelBuilder &kb, Value mine) {
  auto &b = kb.builder();
  Value smem = kb.workgroupMemory();
  Value t = kb.threadIndex();
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
  return loadIndex(b, smem, t);
}

/// Stage 2, chunk offsets and row starts within a block: per key,
/// counts[.][key] becomes its exclusive prefix over the chunks; start[key]
/// the positions of the earlier keys of its block of kBlockSize keys (for
/// key = keys too, which has none: the last block's total); the block's
/// total goes to blockBase[block].
static LogicalResult lowerGatherGradChunkOffsets(LoweringContext &ctx, tx::GatherGradOp op,
                                                 const GatherGradShape &g,
                                                 const GatherGradScratch &scratch) {
  int64_t keys = g.keys(), chunks = g.chunks(), blocks = g.keyBlocks();
  MLIRContext *context = op.getContext();
  KernelBuilder kb(ctx.gpuModule, ctx.kernelName(op), {}, {}, ctx.plan, kBlockSize,
                   IntegerType::get(context, 32));
  auto &b = kb.builder();
  Value counts = kb.insertBufferArgument(0, i32Buffer(context, chunks * keys));
  Value start = kb.insertBufferArgument(1, i32Buffer(context, keys + 1));
  Value blockBase = kb.insertBufferArgument(2, i32Buffer(context, blocks));
  Value key = kb.globalThreadIndex();
  // Every thread takes part in the scan; keys past the table count nothing.
  Value hasCounts = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, key, kb.idx(keys));
  Value end = arith::SelectOp::create(b, hasCounts, kb.idx(chunks), kb.idx(0));
  Value total = kb.loop(kb.idx(0), end, kb.idx(1), {kb.idx(0)},
                        [&](Value c, llvm::ArrayRef<Value> acc) -> llvm::SmallVector<Value> {
    Value at = arith::AddIOp::create(b, arith::MulIOp::create(b, c, kb.idx(keys)), key);
    Value n = loadIndex(b, counts, at);
    storeIndex(b, acc[0], counts, at);
    return {arith::AddIOp::create(b, acc[0], n)};
  })[0];
  Value inclusive = blockInclusiveScan(kb, total);
  Value hasStart = arith::CmpIOp::create(b, arith::CmpIPredicate::ule, key, kb.idx(keys));
  kb.ifThen(hasStart, [&] {
    storeIndex(b, arith::SubIOp::create(b, inclusive, total), start, key);
  });
  Value last = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, kb.threadIndex(),
                                     kb.idx(kBlockSize - 1));
  kb.ifThen(last, [&] { storeIndex(b, inclusive, blockBase, kb.blockIndex()); });
  kb.finish();
  if (failed(kb.status()))
    return failure();
  ctx.launch(kb, op, blocks, {scratch.counts, scratch.start, scratch.blockBase}, {});
  return success();
}

/// Stage 3, block bases: one block scans blockBase[] (exclusive; the
/// number of positions, rowStart(keys), is start[keys] plus the last
/// block's base and needs no entry of its own). Thread t scans blocks
/// [t * per, (t + 1) * per); a scan of the threads' sums gives each its
/// base. (One base per kBlockSize keys: a 50,304-row table has 197, one a
/// thread, where a scan of the row starts themselves walked 197 a thread,
/// one dependent load after another: 77 us on an H200.)
static LogicalResult lowerGatherGradBlockBases(LoweringContext &ctx, tx::GatherGradOp op,
                                               const GatherGradShape &g,
                                               const GatherGradScratch &scratch) {
  int64_t blocks = g.keyBlocks();
  MLIRContext *context = op.getContext();
  KernelBuilder kb(ctx.gpuModule, ctx.kernelName(op), {}, {}, ctx.plan, kBlockSize,
                   IntegerType::get(context, 32));
  auto &b = kb.builder();
  Value blockBase = kb.insertBufferArgument(0, i32Buffer(context, blocks));
  int64_t per = ceilDiv(blocks, kBlockSize);
  Value t = kb.threadIndex();
  Value lo = arith::MinUIOp::create(b, arith::MulIOp::create(b, t, kb.idx(per)), kb.idx(blocks));
  Value hi = arith::MinUIOp::create(b, arith::AddIOp::create(b, lo, kb.idx(per)), kb.idx(blocks));
  Value mine = kb.loop(lo, hi, kb.idx(1), {kb.idx(0)},
                       [&](Value k, llvm::ArrayRef<Value> acc) -> llvm::SmallVector<Value> {
    return {arith::AddIOp::create(b, acc[0], loadIndex(b, blockBase, k))};
  })[0];
  Value inclusive = blockInclusiveScan(kb, mine);
  Value base = arith::SubIOp::create(b, inclusive, mine);
  kb.loop(lo, hi, kb.idx(1), {base},
          [&](Value k, llvm::ArrayRef<Value> acc) -> llvm::SmallVector<Value> {
    Value n = loadIndex(b, blockBase, k);
    storeIndex(b, acc[0], blockBase, k);
    return {arith::AddIOp::create(b, acc[0], n)};
  });
  kb.finish();
  if (failed(kb.status()))
    return failure();
  ctx.launch(kb, op, 1, {scratch.blockBase}, {});
  return success();
}

/// Where the positions of key |k| (0 <= k <= keys) start in the list: its
/// start within its block of keys plus the block's base.
static Value rowStart(KernelBuilder &kb, Value start, Value blockBase, Value k) {
  auto &b = kb.builder();
  Value block = arith::DivUIOp::create(b, k, kb.idx(kBlockSize));
  return arith::AddIOp::create(b, loadIndex(b, start, k), loadIndex(b, blockBase, block));
}

/// Stage 4, place: list[rowStart(key) + counts[chunk][key] + rank] = position.
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
  Value blockBase = kb.insertBufferArgument(4, i32Buffer(context, g.keyBlocks()));
  Value q = kb.globalThreadIndex();
  Value inRange = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, q, kb.idx(positions));
  kb.ifThen(inRange, [&] {
    Value key = gatherKey(kb, g, indices, q);
    Value at = arith::AddIOp::create(
        b, arith::MulIOp::create(b, kb.blockIndex(), kb.idx(keys)), key);
    Value slot = arith::AddIOp::create(
        b, arith::AddIOp::create(b, rowStart(kb, start, blockBase, key), loadIndex(b, counts, at)),
        loadIndex(b, rank, q));
    storeIndex(b, q, list, slot);
  });
  kb.finish();
  if (failed(kb.status()))
    return failure();
  ctx.launch(kb, op, chunks,
             {scratch.list, scratch.counts, scratch.start, scratch.rank, scratch.blockBase},
             ctx.buffersOf({indices}));
  return success();
}

/// The term of |add| that is not |term|.
static Value otherAddend(tx::AddOp add, Value term) {
  return add.getLhs() == term ? add.getRhs() : add.getLhs();
}

/// The add that stage 5 computes with the row sums: the gather gradient's
/// only reader, an add of a tensor of its shape already in memory (a tied
/// LM head's weight gradient, from a GEMM early in the backward), whose
/// sum is stored by a kernel of its own. Stage 5 then stores the sum
/// instead of the gradient: the add's launch, the gradient's write and its
/// read go (GPT-2: 0.09 ms of an H200's step, 154 MB written and read).
/// The sum is the add kernel's, bit for bit: the row sum rounded to the
/// gradient's type, plus the other term, in f32.
static tx::AddOp addAfterRowSums(LoweringContext &ctx, tx::GatherGradOp op) {
  Value result = op.getResult();
  if (!result.hasOneUse())
    return nullptr;
  auto add = dyn_cast<tx::AddOp>(*result.getUsers().begin());
  if (!add || add->getBlock() != op->getBlock() || add.getType() != result.getType() ||
      add.getLhs() == add.getRhs() || ctx.loweredElsewhere.contains(add) ||
      ctx.deferredAfter.count(add))
    return nullptr;
  // The row sums are f64 rounded to f32: an f64 table keeps its add.
  Type element = typeOf(result).getElementType();
  if (!element.isF32() && !element.isBF16() && !element.isF16())
    return nullptr;
  Value sum = add.getResult();
  // The other term as memory holds it: itself, or what a cast recomputed
  // by its readers converts (a bf16 GEMM's gradient widened to f32).
  Value other = otherAddend(add, result);
  Value storage = KernelBuilder::storageOf(other, ctx.plan);
  if (!ctx.plan.isMaterialized(sum) || ctx.plan.storedAs.count(sum) ||
      ctx.bufferOfValue.count(sum) || ctx.plan.attentionViews.count(sum) ||
      !KernelBuilder::isStoredAsFloat(other, ctx.plan) ||
      ctx.plan.attentionViews.count(storage) || typeOf(other) != typeOf(result))
    return nullptr;
  // Read where the row sums run: written before them (an op whose command
  // is deferred or emitted elsewhere may write it later than it sits).
  if (Operation *def = storage.getDefiningOp())
    if (def->getBlock() != op->getBlock() || !def->isBeforeInBlock(op) ||
        ctx.deferredAfter.count(def) || ctx.loweredElsewhere.contains(def))
      return nullptr;
  return add;
}

/// Stage 5, sum: result[key, s] = sum over list[rowStart(key) ..
/// rowStart(key + 1)), in f64 over the row's positions in ascending order
/// (plus the add after it, see addAfterRowSums). A thread sums 4
/// consecutive s where rows allow 16-byte (or 8-byte) vector accesses:
/// most of a vocabulary's rows have no position, so a thread is mostly its
/// chain of dependent loads (row starts, list, grad), and 4 elements a
/// chain quarter the chains (one element a thread ran a GPT-2 embedding
/// gradient at 1.5 TB/s on an H200).
static LogicalResult lowerGatherGradRowSums(LoweringContext &ctx, tx::GatherGradOp op,
                                            const GatherGradShape &g,
                                            const GatherGradScratch &scratch) {
  Value grad = op.getGrad(), result = op.getResult();
  tx::AddOp add = addAfterRowSums(ctx, op);
  Value stored = add ? add.getResult() : result;
  Value other = add ? otherAddend(add, result) : Value();
  llvm::SmallVector<Value> inputs{grad};
  if (other)
    inputs.push_back(other);
  int64_t keys = g.keys(), positions = g.positions();
  KernelBuilder kb(ctx.gpuModule, ctx.kernelName(op), {stored}, inputs, ctx.plan);
  auto &b = kb.builder();
  unsigned first = 1 + inputs.size();
  Value list = kb.insertBufferArgument(first, i32Buffer(op.getContext(), positions));
  Value start = kb.insertBufferArgument(first + 1, i32Buffer(op.getContext(), keys + 1));
  Value blockBase =
      kb.insertBufferArgument(first + 2, i32Buffer(op.getContext(), g.keyBlocks()));
  constexpr unsigned kVector = 4;
  bool vectors = g.inner % kVector == 0 && kb.vectorAccessible(grad, kVector) &&
                 kb.vectorAccessible(stored, kVector) &&
                 (!other || kb.vectorAccessible(other, kVector));
  unsigned width = vectors ? kVector : 1;
  Type resultElement = typeOf(result).getElementType();
  auto read = [&](Value tensor, Value at) {
    return width == 1 ? llvm::SmallVector<Value>{kb.load(tensor, at)}
                      : kb.loadVector(tensor, at, width);
  };
  int64_t n = keys * g.inner / width;
  Value e = kb.globalThreadIndex();
  Value inRange = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, e, kb.idx(n));
  kb.ifThen(inRange, [&] {
    Value at = arith::MulIOp::create(b, e, kb.idx(width));
    Value key = arith::DivUIOp::create(b, at, kb.idx(g.inner));
    Value s = arith::RemUIOp::create(b, at, kb.idx(g.inner));
    Value begin = rowStart(kb, start, blockBase, key);
    Value end = rowStart(kb, start, blockBase, arith::AddIOp::create(b, key, kb.idx(1)));
    // The other term's load first: in flight while the row's chain runs.
    llvm::SmallVector<Value> terms;
    if (other)
      terms = read(other, at);
    Value zero = arith::ConstantOp::create(b, b.getF64FloatAttr(0.0));
    llvm::SmallVector<Value> zeros(width, zero);
    llvm::SmallVector<Value> sums = kb.loop(begin, end, kb.idx(1), zeros,
                        [&](Value k, llvm::ArrayRef<Value> acc) -> llvm::SmallVector<Value> {
      Value q = loadIndex(b, list, k);
      Value from = arith::AddIOp::create(b, arith::MulIOp::create(b, q, kb.idx(g.inner)), s);
      llvm::SmallVector<Value> xs = read(grad, from);
      llvm::SmallVector<Value> next;
      for (unsigned i = 0; i < width; ++i)
        next.push_back(arith::AddFOp::create(
            b, acc[i], arith::ExtFOp::create(b, b.getF64Type(), xs[i])));
      return next;
    });
    llvm::SmallVector<Value> values;
    for (Value sum : sums)
      values.push_back(arith::TruncFOp::create(b, b.getF32Type(), sum));
    if (other) {
      for (unsigned i = 0; i < width; ++i)
        values[i] = arith::AddFOp::create(b, kb.roundTo(values[i], resultElement), terms[i]);
    }
    if (width == 1)
      kb.store(stored, at, values[0]);
    else
      kb.storeVector(stored, at, values);
  });
  kb.finish();
  if (failed(kb.status()))
    return failure();
  llvm::SmallVector<unsigned> reads{ctx.bufferFor(grad)};
  if (other)
    reads.push_back(ctx.bufferFor(KernelBuilder::storageOf(other, ctx.plan)));
  reads.append({scratch.list, scratch.start, scratch.blockBase});
  ctx.launch(kb, op, ceilDiv(n, kBlockSize), ctx.buffersOf({stored}), reads);
  if (add)
    ctx.loweredElsewhere.insert(add);
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
///     over the chunks; a block scan of the keys' totals gives start[key]
///     within its block of kBlockSize keys, and the block's total;
///  3. block bases: one block scans the blocks' totals (exclusive), so
///     rowStart(key) = start[key] + blockBase[key / kBlockSize];
///  4. place: list[rowStart(key) + counts[chunk][key] + rank] = position;
///  5. sum: result[key, s] = sum over list[rowStart(key) ..
///     rowStart(key + 1)), 4 elements of a row a thread where aligned.
static LogicalResult lowerGatherGradSorted(LoweringContext &ctx, tx::GatherGradOp op,
                                           const GatherGradShape &g) {
  int64_t keys = g.keys(), positions = g.positions(), chunks = g.chunks();
  GatherGradScratch scratch;
  scratch.counts = ctx.scratch(chunks * keys * 4, "gather_grad counts per chunk");
  scratch.rank = ctx.scratch(positions * 4, "gather_grad ranks");
  scratch.start = ctx.scratch((keys + 1) * 4, "gather_grad row starts within a block of keys");
  scratch.blockBase = ctx.scratch(g.keyBlocks() * 4, "gather_grad row starts of the blocks");
  scratch.list = ctx.scratch(positions * 4, "gather_grad positions by row");
  ctx.memset(scratch.counts, 0, op);
  if (failed(lowerGatherGradRanks(ctx, op, g, scratch)) ||
      failed(lowerGatherGradChunkOffsets(ctx, op, g, scratch)) ||
      failed(lowerGatherGradBlockBases(ctx, op, g, scratch)) ||
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
