//===- PackedKernels.cpp - kernels over many tensors in one launch ---------===//
//
// SPDX-License-Identifier: Apache-2.0
// A step ends with work over every parameter: the gradients' global norm and
// the optimizer update. One launch per tensor costs GPT-2 ~300 launches of a
// few microseconds each, most of them over tensors too small to fill the
// GPU. A packed kernel covers a list of tensors in one launch: the tensors
// stay where the memory plan put them, and the kernel finds them through an
// offset table in the arena (LoweringContext::OffsetTable), each block
// working on one slice of one tensor.
//
// Here: the table and the block-to-tensor search (shared with the packed
// AdamW, OptimizerKernels.cpp), and the global norm's sum of squares.
//
//===----------------------------------------------------------------------===//

#include "KernelUtils.h"
#include "Lowering.h"

#include "txopt/Dialect/Tx/IR/TxOps.h"
#include "txopt/Dialect/Tx/Transforms/TrainStep.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::cuda;

//===----------------------------------------------------------------------===//
// The offset table
//===----------------------------------------------------------------------===//

PackedTable cuda::buildPackedTable(LoweringContext &ctx,
                                   llvm::ArrayRef<int64_t> elements,
                                   llvm::ArrayRef<llvm::SmallVector<unsigned, 4>> buffers,
                                   int64_t perBlock, llvm::StringRef what,
                                   llvm::ArrayRef<llvm::SmallVector<int64_t, 2>> extras) {
  PackedTable packed;
  packed.count = elements.size();
  size_t numBuffers = buffers.empty() ? 0 : buffers.front().size();
  packed.wordsPerTensor = 1 + numBuffers + (extras.empty() ? 0 : extras.front().size());
  packed.perBlock = perBlock;
  LoweringContext::OffsetTable table;
  table.words.assign(packed.count + 1 + packed.wordsPerTensor * packed.count, 0);
  // What the launch reaches must have arrived first: every join before any
  // buffer is marked live at the launch (a join is a command, and would
  // end the live ranges of buffers touched before it).
  {
    llvm::SmallVector<unsigned> all;
    for (const auto &tensorBuffers : buffers)
      all.append(tensorBuffers.begin(), tensorBuffers.end());
    ctx.awaitCollectivesTouching(all);
  }
  for (unsigned i = 0; i < packed.count; ++i) {
    table.words[i] = packed.blocks;
    packed.blocks += ceilDiv(elements[i], perBlock);
    size_t entry = packed.count + 1 + packed.wordsPerTensor * i;
    table.words[entry] = elements[i];
    for (auto [k, buffer] : llvm::enumerate(buffers[i])) {
      table.offsetOf.push_back({entry + 1 + k, buffer});
      packed.through.push_back(buffer);
      // Live at the launch that is about to be appended.
      ctx.touch(buffer);
    }
    if (!extras.empty())
      for (auto [k, word] : llvm::enumerate(extras[i]))
        table.words[entry + 1 + numBuffers + k] = word;
  }
  table.words[packed.count] = packed.blocks;
  packed.words = table.words.size();
  packed.buffer = ctx.offsetTable(std::move(table), what);
  return packed;
}

PackedBlock cuda::emitPackedBlock(KernelBuilder &kb, const PackedTable &packed) {
  auto &b = kb.builder();
  PackedBlock block;
  block.table = kb.insertBufferArgument(
      0, MemRefType::get({static_cast<int64_t>(packed.words * 8)}, b.getI8Type()));
  Value words = memref::ViewOp::create(
      b, MemRefType::get({static_cast<int64_t>(packed.words)}, b.getI64Type()), block.table,
      kb.idx(0), ValueRange{});
  auto word = [&](Value i) {
    return Value(arith::IndexCastOp::create(b, b.getIndexType(),
                                            memref::LoadOp::create(b, words, ValueRange{i})));
  };
  // The last t with first[t] <= block: first[] rises strictly (every
  // tensor has a block) and first[count] is the grid size, past any block.
  Value id = kb.blockIndex();
  Value t = kb.idx(0);
  for (int64_t span = llvm::PowerOf2Ceil(packed.count) / 2; span >= 1; span /= 2) {
    Value candidate = arith::MinUIOp::create(b, arith::AddIOp::create(b, t, kb.idx(span)),
                                             kb.idx(packed.count));
    Value fits = arith::CmpIOp::create(b, arith::CmpIPredicate::ule, word(candidate), id);
    t = arith::SelectOp::create(b, fits, candidate, t);
  }
  Value entry = arith::AddIOp::create(
      b, kb.idx(packed.count + 1), arith::MulIOp::create(b, t, kb.idx(packed.wordsPerTensor)));
  for (int64_t k = 0; k < packed.wordsPerTensor; ++k)
    block.entry.push_back(word(arith::AddIOp::create(b, entry, kb.idx(k))));
  block.elements = block.entry[0];
  block.start = arith::MulIOp::create(b, arith::SubIOp::create(b, id, word(t)),
                                      kb.idx(packed.perBlock));
  return block;
}

Value cuda::packedView(KernelBuilder &kb, const PackedBlock &block, unsigned k, Type element) {
  auto &b = kb.builder();
  return memref::ViewOp::create(b, MemRefType::get({ShapedType::kDynamic}, element), block.table,
                                block.entry[1 + k], ValueRange{block.elements});
}

Value cuda::packedVectorStart(KernelBuilder &kb, const PackedBlock &block, int64_t k,
                              int64_t width) {
  auto &b = kb.builder();
  return arith::AddIOp::create(
      b, block.start,
      arith::AddIOp::create(b, kb.idx(k * kBlockSize * width),
                            arith::MulIOp::create(b, kb.threadIndex(), kb.idx(width))));
}

void cuda::launchPacked(LoweringContext &ctx, KernelBuilder &kb, Operation *origin,
                        PackedTable &packed, llvm::ArrayRef<unsigned> inputs,
                        llvm::ArrayRef<unsigned> written) {
  llvm::SmallVector<unsigned> args{packed.buffer};
  args.append(inputs.begin(), inputs.end());
  ctx.launch(kb, origin, static_cast<unsigned>(packed.blocks), {}, args);
  for (unsigned buffer : written)
    ctx.markWrittenByLastCommand(buffer);
  std::get<LaunchCmd>(ctx.program.commands.back().op).through = std::move(packed.through);
}

//===----------------------------------------------------------------------===//
// Sums of squares
//===----------------------------------------------------------------------===//

/// Elements of one tensor a block of the packed sum covers: 256 threads, four
/// 16-byte f32 vectors each.
constexpr int64_t kSumElementsPerBlock = kBlockSize * 16;

/// The tensor |leaf| (a `tx.reduce_sum` over all axes) sums the squares of,
/// when it is `reduce_sum(mul(x, x))` with x an f32 tensor in memory (as
/// f32, bf16 or f16) and nothing else reads the square or the sum.
static Value squaredTensor(const Materialization &plan, Operation *leaf) {
  auto sum = dyn_cast<tx::ReduceSumOp>(leaf);
  if (!sum || !sum->hasOneUse() || !sum.getAxes().empty() ||
      typeOf(sum.getResult()).getRank() != 0)
    return {};
  auto square = sum->getOperand(0).getDefiningOp<tx::MulOp>();
  if (!square || !square->hasOneUse() || square.getLhs() != square.getRhs() ||
      plan.isMaterialized(square.getResult()))
    return {};
  Value x = square.getLhs();
  if (!typeOf(x).getElementType().isF32() || !typeOf(square.getResult()).getElementType().isF32())
    return {};
  return KernelBuilder::isStoredAsFloat(x, plan) ? x : Value();
}

/// The leaves of the add tree under |root| that are sums of squares, with
/// the tree's ops, and its other whole-tensor sums (|extras|); false when
/// anything else is in it.
static bool collectSquareSums(const Materialization &plan, Value value,
                              llvm::SmallVectorImpl<Value> &tensors,
                              llvm::SmallVectorImpl<Value> &extras,
                              llvm::SmallVectorImpl<Operation *> &tree) {
  Operation *def = value.getDefiningOp();
  if (!def || !def->hasOneUse())
    return false;
  if (auto add = dyn_cast<tx::AddOp>(def)) {
    if (plan.isMaterialized(add.getResult()) || typeOf(add.getResult()).getRank() != 0 ||
        !collectSquareSums(plan, add.getLhs(), tensors, extras, tree) ||
        !collectSquareSums(plan, add.getRhs(), tensors, extras, tree))
      return false;
    tree.push_back(def);
    return true;
  }
  Value x = squaredTensor(plan, def);
  if (!x) {
    auto sum = dyn_cast<tx::ReduceSumOp>(def);
    if (!sum || !sum.getAxes().empty() || typeOf(sum.getResult()).getRank() != 0 ||
        !typeOf(sum.getResult()).getElementType().isF32())
      return false;
    extras.push_back(sum.getResult());
    return true;
  }
  tensors.push_back(x);
  tree.push_back(def);
  tree.push_back(def->getOperand(0).getDefiningOp());
  return true;
}

void cuda::packSumsOfSquares(LoweringContext &ctx, func::FuncOp func) {
  llvm::SmallVector<tx::AddOp> adds;
  func.walk([&](tx::AddOp add) { adds.push_back(add); });
  llvm::DenseSet<Operation *> taken;
  // From the last add back: the first add of a tree met is its root.
  for (tx::AddOp root : llvm::reverse(adds)) {
    if (taken.contains(root) || typeOf(root.getResult()).getRank() != 0 ||
        !typeOf(root.getResult()).getElementType().isF32())
      continue;
    llvm::SmallVector<Value> tensors, extras;
    llvm::SmallVector<Operation *> tree;
    if (!collectSquareSums(ctx.plan, root.getLhs(), tensors, extras, tree) ||
        !collectSquareSums(ctx.plan, root.getRhs(), tensors, extras, tree) ||
        tensors.empty())
      continue;
    taken.insert(tree.begin(), tree.end());
    for (Operation *op : tree)
      ctx.loweredElsewhere.insert(op);
    // The root is written by the packed kernels and read from memory, and
    // so are the other sums it adds.
    ctx.plan.materialized.insert(root.getResult());
    for (Value extra : extras)
      ctx.plan.materialized.insert(extra);
    ctx.packedSumsOfSquares[root] = std::move(tensors);
    if (!extras.empty())
      ctx.packedSumExtras[root] = std::move(extras);
  }
}

/// Named for the profile's kernel families (the root op is a tx.add).
static std::string sumKernelName(LoweringContext &ctx) {
  return "k" + std::to_string(ctx.builtKernels++) + "_sum_of_squares";
}

LogicalResult cuda::lowerSumOfSquaresStages(LoweringContext &ctx, Operation *root,
                                            llvm::ArrayRef<Value> tensors) {
  // Group by storage type: one table and one launch of partial sums each,
  // then one block adds all partials in a fixed order.
  llvm::MapVector<Type, llvm::SmallVector<Value>> byStorage;
  for (Value x : tensors)
    byStorage[typeOf(KernelBuilder::storageOf(x, ctx.plan)).getElementType()].push_back(x);
  auto &stages = ctx.sumStages[root];
  for (auto &[stored, members] : byStorage) {
    llvm::SmallVector<int64_t> elements;
    llvm::SmallVector<llvm::SmallVector<unsigned, 4>> buffers;
    for (Value x : members) {
      elements.push_back(typeOf(x).getNumElements());
      buffers.push_back({ctx.bufferFor(x)});
    }
    PackedTable packed = buildPackedTable(ctx, elements, buffers, kSumElementsPerBlock,
                                          "sum of squares offset table");
    unsigned partials = ctx.scratch(packed.blocks * 4, "sum of squares partials");
    KernelBuilder kb(ctx.gpuModule, sumKernelName(ctx), {}, {}, ctx.plan,
                     /*workgroupFloats=*/32);
    auto &b = kb.builder();
    PackedBlock block = emitPackedBlock(kb, packed);
    Value partialArg = kb.insertBufferArgument(
        1, MemRefType::get({packed.blocks}, b.getF32Type()));
    Value view = packedView(kb, block, 0, stored);
    Type f32 = b.getF32Type();
    constexpr int64_t width = 4, vectors = kSumElementsPerBlock / (kBlockSize * width);
    auto vectorType = VectorType::get({width}, stored);
    Value full = arith::CmpIOp::create(
        b, arith::CmpIPredicate::ule,
        arith::AddIOp::create(b, block.start, kb.idx(kSumElementsPerBlock)), block.elements);
    // Each thread sums its elements in a fixed order into one f32.
    Value accumulator = memref::AllocaOp::create(b, MemRefType::get({1}, f32));
    memref::StoreOp::create(b, kb.f32(0.0), accumulator, ValueRange{kb.idx(0)});
    kb.ifThenElse(
        full,
        [&] {
          llvm::SmallVector<Value> loaded;
          for (int64_t k = 0; k < vectors; ++k) {
            Value at = packedVectorStart(kb, block, k, width);
            loaded.push_back(vector::LoadOp::create(
                b, vectorType, view, ValueRange{at}, /*nontemporal=*/false,
                llvm::MaybeAlign(width * stored.getIntOrFloatBitWidth() / 8)));
          }
          Value sum = kb.f32(0.0);
          for (Value vec : loaded)
            for (int64_t lane = 0; lane < width; ++lane) {
              Value x = kb.fromStorage(vector::ExtractOp::create(b, vec, lane), stored);
              sum = arith::AddFOp::create(b, sum, arith::MulFOp::create(b, x, x));
            }
          memref::StoreOp::create(b, sum, accumulator, ValueRange{kb.idx(0)});
        },
        [&] {
          Value sum = kb.f32(0.0);
          for (int64_t k = 0; k < kSumElementsPerBlock / kBlockSize; ++k) {
            Value at = arith::AddIOp::create(
                b, block.start, arith::AddIOp::create(b, kb.idx(k * kBlockSize), kb.threadIndex()));
            Value inRange = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, at, block.elements);
            Value clamped = arith::MinUIOp::create(
                b, at, arith::SubIOp::create(b, block.elements, kb.idx(1)));
            Value x = kb.fromStorage(memref::LoadOp::create(b, view, ValueRange{clamped}), stored);
            Value square = arith::SelectOp::create(b, inRange, arith::MulFOp::create(b, x, x),
                                                   kb.f32(0.0));
            sum = arith::AddFOp::create(b, sum, square);
          }
          memref::StoreOp::create(b, sum, accumulator, ValueRange{kb.idx(0)});
        });
    Value total = kb.blockReduce(
        memref::LoadOp::create(b, accumulator, ValueRange{kb.idx(0)}), /*isMax=*/false);
    Value first = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, kb.threadIndex(), kb.idx(0));
    kb.ifThen(first, [&] {
      memref::StoreOp::create(b, total, partialArg, ValueRange{kb.blockIndex()});
    });
    kb.finish();
    if (failed(kb.status()))
      return failure();
    launchPacked(ctx, kb, root, packed, {partials}, /*written=*/{partials});
    stages.push_back({partials, packed.blocks});
  }
  return success();
}

LogicalResult cuda::lowerPackedSumOfSquares(LoweringContext &ctx, Operation *root) {
  Value result = root->getResult(0);
  // Summed by the Adam kernels (planSumsOfSquaresInAdam), which ran before
  // this, or here.
  if (!ctx.sumsInAdam.count(root) &&
      failed(lowerSumOfSquaresStages(ctx, root, ctx.packedSumsOfSquares.lookup(root))))
    return failure();
  llvm::SmallVector<LoweringContext::SumStage> stages = ctx.sumStages.lookup(root);
  llvm::SmallVector<Value> extras = ctx.packedSumExtras.lookup(root);
  // One block over every stage's partials, in order, then the other sums.
  KernelBuilder fin(ctx.gpuModule, sumKernelName(ctx), {result}, extras, ctx.plan, 32);
  auto &b = fin.builder();
  Value sum = fin.f32(0.0);
  for (auto [i, stage] : llvm::enumerate(stages)) {
    Value parts = fin.insertBufferArgument(
        1 + i, MemRefType::get({stage.blocks}, b.getF32Type()));
    auto acc = fin.blockStridedLoop(stage.blocks, {fin.f32(0.0)},
                                    [&](Value j, llvm::ArrayRef<Value> a) {
      Value v = memref::LoadOp::create(b, parts, ValueRange{j});
      return llvm::SmallVector<Value>{arith::AddFOp::create(b, a[0], v)};
    });
    sum = arith::AddFOp::create(b, sum, acc[0]);
  }
  Value total = fin.blockReduce(sum, /*isMax=*/false);
  Value first = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, fin.threadIndex(), fin.idx(0));
  fin.ifThen(first, [&] {
    Value all = total;
    for (Value extra : extras)
      all = arith::AddFOp::create(b, all, fin.load(extra, fin.idx(0)));
    storeReduced(fin, result, fin.idx(0), all);
  });
  fin.finish();
  if (failed(fin.status()))
    return failure();
  llvm::SmallVector<unsigned> inputs;
  for (const LoweringContext::SumStage &stage : stages)
    inputs.push_back(stage.partials);
  llvm::append_range(inputs, ctx.buffersOf(extras));
  ctx.launch(fin, root, 1, ctx.buffersOf({result}), inputs);
  return success();
}

void cuda::planSumsOfSquaresInAdam(LoweringContext &ctx, func::FuncOp step) {
  Block &body = step.getBody().front();
  // In block order, so which of two sums over one Adam op's gradients gets
  // it does not depend on pointers; an Adam op adds up one sum at most.
  llvm::SmallVector<Operation *> roots;
  for (auto &entry : ctx.packedSumsOfSquares)
    if (entry.first->getBlock() == &body)
      roots.push_back(entry.first);
  llvm::sort(roots, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  llvm::DenseSet<Operation *> claimed;
  for (Operation *root : roots) {
    llvm::ArrayRef<Value> tensors = ctx.packedSumsOfSquares.find(root)->second;
    // Every tensor is the gradient of a parameter that a packed Adam kernel
    // updates, once.
    llvm::SmallVector<Operation *, 2> adams;
    llvm::DenseSet<Value> seen;
    bool gradients = true;
    for (Value x : tensors) {
      Operation *reader = nullptr;
      for (OpOperand &use : x.getUses())
        if (auto adam = dyn_cast<tx::AdamOp>(use.getOwner())) {
          unsigned n = adam.getNumParams();
          if (use.getOperandNumber() >= n && use.getOperandNumber() < 2 * n &&
              adamUpdatesPacked(ctx, adam, use.getOperandNumber() - n))
            reader = adam;
        }
      // (A gradient the packed kernel does not read is left to the sum's
      // own launch: its partial sums over all tensors at once.)
      if (!reader || reader->getBlock() != &body || !seen.insert(x).second) {
        gradients = false;
        break;
      }
      if (!llvm::is_contained(adams, reader))
        adams.push_back(reader);
    }
    if (!gradients || adams.empty() ||
        llvm::any_of(adams, [&](Operation *adam) { return claimed.contains(adam); }))
      continue;
    // Nothing an Adam op reads may come from the sum (clipping does).
    llvm::SetVector<Operation *> readers;
    readers.insert(root);
    for (size_t i = 0; i < readers.size(); ++i)
      for (Value r : readers[i]->getResults())
        for (Operation *user : r.getUsers())
          if (!isa<func::ReturnOp>(user))
            readers.insert(user);
    if (llvm::any_of(adams, [&](Operation *adam) { return readers.contains(adam); }))
      continue;
    Operation *last = adams.front();
    for (Operation *adam : adams)
      if (last->isBeforeInBlock(adam))
        last = adam;
    for (Operation *reader : readers)
      if (reader->isBeforeInBlock(last))
        ctx.deferredAfter[reader] = last;
    claimed.insert(adams.begin(), adams.end());
    ctx.sumsInAdam[root] = std::move(adams);
  }
}

//===----------------------------------------------------------------------===//
// Deferred column sums
//===----------------------------------------------------------------------===//

bool cuda::deferColumnSums(LoweringContext &ctx, Operation *origin, unsigned partials,
                           int64_t parts, int64_t cols, llvm::ArrayRef<Value> outputs,
                           int64_t split) {
  if (outputs.empty() || outputs.size() > 2 || parts < 1 || cols < 1)
    return false;
  for (Value out : outputs)
    if (!typeOf(out).getElementType().isF32() || !ctx.plan.isMaterialized(out) ||
        ctx.plan.storedAs.count(out) || ctx.bufferOfValue.count(out) ||
        out.getDefiningOp() != origin)
      return false;
  LoweringContext::DeferredColumnSum d;
  d.origin = origin;
  d.partials = partials;
  d.parts = parts;
  d.cols = cols;
  d.split = outputs.size() == 2 ? split : cols;
  d.out0 = outputs[0];
  d.out1 = outputs.size() == 2 ? outputs[1] : outputs[0];
  ctx.deferredColumnSums.push_back(d);
  ctx.deferredOutputs.insert(outputs.begin(), outputs.end());
  return true;
}

LogicalResult cuda::sumPartialRows(LoweringContext &ctx, Operation *origin, unsigned partials,
                                   int64_t parts, Value result) {
  int64_t cols = typeOf(result).getNumElements();
  if (deferColumnSums(ctx, origin, partials, parts, cols, {result}, cols))
    return success();
  return lowerPartialColumnSums(ctx, origin, {result}, partials, parts, cols, /*isMax=*/false,
                                [&](KernelBuilder &k, Value col, Value total) {
                                  storeReduced(k, result, col, total);
                                });
}

bool cuda::readsDeferredColumnSums(LoweringContext &ctx, Operation &op) {
  if (ctx.deferredOutputs.empty())
    return false;
  // The op's operands, and whatever its kernel computes them from: through
  // every value not in memory (recomputed casts, fused elementwise chains,
  // the leaves of a packed sum of squares).
  llvm::SmallVector<Value> work(op.getOperands().begin(), op.getOperands().end());
  auto packed = ctx.packedSumsOfSquares.find(&op);
  if (packed != ctx.packedSumsOfSquares.end())
    work.append(packed->second.begin(), packed->second.end());
  llvm::DenseSet<Value> seen;
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (!seen.insert(v).second)
      continue;
    if (ctx.deferredOutputs.contains(v))
      return true;
    Operation *def = v.getDefiningOp();
    if (def && !ctx.plan.isMaterialized(v))
      work.append(def->getOperands().begin(), def->getOperands().end());
  }
  return false;
}

/// Columns of one tensor a block of the packed column sum covers: one per
/// lane, as lowerPartialColumnSums does.
constexpr int64_t kColumnsPerBlock = 32;

LogicalResult cuda::flushColumnSums(LoweringContext &ctx) {
  std::vector<LoweringContext::DeferredColumnSum> pending;
  std::swap(pending, ctx.deferredColumnSums);
  ctx.deferredOutputs.clear();
  if (pending.empty())
    return success();
  // One alone keeps its own kernel.
  if (pending.size() == 1) {
    auto &d = pending.front();
    Value second = d.out1 != d.out0 ? d.out1 : Value();
    llvm::SmallVector<Value, 2> outs{d.out0};
    if (second)
      outs.push_back(second);
    return lowerPartialColumnSums(ctx, d.origin, outs, d.partials, d.parts, d.cols,
                                  /*isMax=*/false, [&](KernelBuilder &k, Value col, Value sum) {
      storeColumnSplit(k, d.out0, second, d.split, col, sum);
    });
  }
  // One packed launch: a block per 32 columns of one tensor; each column
  // adds its partial rows through the same emitColumnSum as
  // lowerPartialColumnSums (warp w takes rows w, w + 8, ... in order, then
  // the 8 warps in order), so the sums are bit for bit the separate kernels'.
  llvm::SmallVector<int64_t> elements;
  llvm::SmallVector<llvm::SmallVector<unsigned, 4>> buffers;
  llvm::SmallVector<llvm::SmallVector<int64_t, 2>> extras;
  for (auto &d : pending) {
    elements.push_back(d.cols);
    buffers.push_back({d.partials, ctx.bufferFor(d.out0), ctx.bufferFor(d.out1)});
    extras.push_back({d.parts, d.split});
  }
  PackedTable packed =
      buildPackedTable(ctx, elements, buffers, kColumnsPerBlock, "column-sum offset table", extras);
  KernelBuilder kb(ctx.gpuModule, "k" + std::to_string(ctx.builtKernels++) + "_column_sums",
                   {}, {}, ctx.plan, kBlockSize);
  auto &b = kb.builder();
  PackedBlock block = emitPackedBlock(kb, packed);
  Value cols = block.elements, parts = block.entry[4], split = block.entry[5];
  auto view = [&](unsigned k, Value size) {
    return Value(memref::ViewOp::create(b, MemRefType::get({ShapedType::kDynamic}, b.getF32Type()),
                                        block.table, block.entry[1 + k], ValueRange{size}));
  };
  Value partials = view(0, arith::MulIOp::create(b, parts, cols));
  Value out0 = view(1, split), out1 = view(2, cols);
  emitColumnSum(kb, partials, parts, cols, block.start, /*isMax=*/false,
                [&](Value col, Value total) {
    kb.ifThen(arith::CmpIOp::create(b, arith::CmpIPredicate::ult, col, split),
              [&] { memref::StoreOp::create(b, total, out0, ValueRange{col}); });
    kb.ifThen(arith::CmpIOp::create(b, arith::CmpIPredicate::uge, col, split), [&] {
      memref::StoreOp::create(b, total, out1, ValueRange{arith::SubIOp::create(b, col, split)});
    });
  });
  kb.finish();
  if (failed(kb.status()))
    return failure();
  launchPacked(ctx, kb, pending.front().origin, packed, {});
  return success();
}

//===----------------------------------------------------------------------===//
// Parameter casts
//===----------------------------------------------------------------------===//

/// Elements of one tensor a block of the packed cast covers: 256 threads,
/// two chunks of 8 each (two 16-byte f32 loads and one 16-byte store a
/// chunk).
constexpr int64_t kCastChunk = 8;
constexpr int64_t kCastElementsPerBlock = kBlockSize * kCastChunk * 2;

void cuda::packParameterCasts(LoweringContext &ctx, func::FuncOp step) {
  Block &body = step.getBody().front();
  llvm::SmallVector<Operation *> casts;
  for (Operation &op : body) {
    // Only the forward's casts: the optimizer writes the parameters, and a
    // cast after it would read the updated values.
    if (isa<tx::AdamOp, tx::SGDOp>(op))
      break;
    auto castOp = dyn_cast<tx::CastOp>(op);
    if (!castOp || ctx.loweredElsewhere.contains(&op) || ctx.plan.absorbedCasts.contains(&op))
      continue;
    auto arg = dyn_cast<BlockArgument>(castOp.getInput());
    if (!arg || arg.getOwner() != &body)
      continue;
    auto role = step.getArgAttrOfType<StringAttr>(arg.getArgNumber(), tx::kRoleAttrName);
    Type from = typeOf(arg).getElementType(), to = typeOf(castOp.getResult()).getElementType();
    if (!role || role.getValue() != "param" || !from.isF32() || !(to.isBF16() || to.isF16()) ||
        !ctx.plan.isMaterialized(castOp.getResult()) ||
        KernelBuilder::storageOf(castOp.getResult(), ctx.plan) != castOp.getResult())
      continue;
    casts.push_back(&op);
  }
  if (casts.size() < 2)
    return;
  for (Operation *op : llvm::ArrayRef(casts).drop_front())
    ctx.loweredElsewhere.insert(op);
  ctx.packedParameterCasts[casts.front()] = std::move(casts);
}

LogicalResult cuda::lowerPackedParameterCasts(LoweringContext &ctx, Operation *first) {
  llvm::ArrayRef<Operation *> casts = ctx.packedParameterCasts.find(first)->second;
  // Grouped by the storage type written (bf16, f16): one launch each.
  llvm::MapVector<Type, llvm::SmallVector<Operation *>> byType;
  for (Operation *op : casts)
    byType[typeOf(op->getResult(0)).getElementType()].push_back(op);
  for (auto &[to, members] : byType) {
    llvm::SmallVector<int64_t> elements;
    llvm::SmallVector<llvm::SmallVector<unsigned, 4>> buffers;
    llvm::SmallVector<unsigned> written;
    for (Operation *op : members) {
      elements.push_back(typeOf(op->getResult(0)).getNumElements());
      unsigned out = ctx.bufferFor(op->getResult(0));
      buffers.push_back({ctx.bufferFor(op->getOperand(0)), out});
      written.push_back(out);
    }
    PackedTable packed = buildPackedTable(ctx, elements, buffers, kCastElementsPerBlock,
                                          "parameter cast offset table");
    KernelBuilder kb(ctx.gpuModule,
                     "k" + std::to_string(ctx.builtKernels++) + "_parameter_casts", {}, {},
                     ctx.plan);
    auto &b = kb.builder();
    Type f32 = b.getF32Type();
    PackedBlock block = emitPackedBlock(kb, packed);
    Value from = packedView(kb, block, 0, f32), into = packedView(kb, block, 1, to);
    Value full = arith::CmpIOp::create(
        b, arith::CmpIPredicate::ule,
        arith::AddIOp::create(b, block.start, kb.idx(kCastElementsPerBlock)), block.elements);
    constexpr int64_t chunks = kCastElementsPerBlock / (kBlockSize * kCastChunk);
    kb.ifThenElse(
        full,
        [&] {
          // Every load first, then every store: the block's bytes in flight.
          llvm::SmallVector<std::pair<Value, llvm::SmallVector<Value>>> loaded;
          for (int64_t k = 0; k < chunks; ++k) {
            Value at = packedVectorStart(kb, block, k, kCastChunk);
            llvm::SmallVector<Value> lanes;
            for (int64_t half = 0; half < 2; ++half) {
              Value vec = vector::LoadOp::create(
                  b, VectorType::get({kCastChunk / 2}, f32), from,
                  ValueRange{arith::AddIOp::create(b, at, kb.idx(half * kCastChunk / 2))},
                  /*nontemporal=*/false, llvm::MaybeAlign(16));
              for (int64_t lane = 0; lane < kCastChunk / 2; ++lane)
                lanes.push_back(vector::ExtractOp::create(b, vec, lane));
            }
            loaded.push_back({at, lanes});
          }
          for (auto &[at, lanes] : loaded) {
            llvm::SmallVector<Value> narrow;
            for (Value x : lanes)
              narrow.push_back(kb.toStorage(x, to));
            Value vec = vector::FromElementsOp::create(
                b, VectorType::get({kCastChunk}, to), narrow);
            vector::StoreOp::create(b, vec, into, ValueRange{at}, /*nontemporal=*/false,
                                    llvm::MaybeAlign(16));
          }
        },
        [&] {
          for (int64_t k = 0; k < kCastElementsPerBlock / kBlockSize; ++k) {
            Value at = arith::AddIOp::create(
                b, block.start, arith::AddIOp::create(b, kb.idx(k * kBlockSize), kb.threadIndex()));
            Value inRange = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, at, block.elements);
            kb.ifThen(inRange, [&] {
              Value x = memref::LoadOp::create(b, from, ValueRange{at});
              memref::StoreOp::create(b, kb.toStorage(x, to), into, ValueRange{at});
            });
          }
        });
    kb.finish();
    if (failed(kb.status()))
      return failure();
    launchPacked(ctx, kb, first, packed, {}, written);
  }
  return success();
}
