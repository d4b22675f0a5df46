//===- ElementalKernels.cpp - loop kernels of materialized values -----------===//
//
// SPDX-License-Identifier: Apache-2.0
// One loop kernel per materialized elemental value: every fused producer is
// computed inline by the elemental emitter (KernelBuilder).
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

/// Elements each thread of a loop kernel computes. One 2- or 4-byte access
/// per thread keeps too few bytes in flight to cover HBM latency (Little's
/// law: ~20 KB per SM at H200 bandwidth); four independent elements per
/// thread, all loaded before any is stored, quadruple it.
constexpr int64_t kElementsPerThread = 4;

/// Elements per thread of the vector layout for |value|: 16 bytes of its
/// stored type (4 f32, 8 bf16/f16), when its innermost dim is a multiple of
/// that and there is at least one block's worth; 0 otherwise (the strided
/// layout below).
static int64_t vectorLanes(Value value, const Materialization &plan) {
  auto type = typeOf(value);
  Type stored = typeOf(KernelBuilder::storageOf(value, plan)).getElementType();
  if (type.getRank() == 0 || !(stored.isF32() || stored.isBF16() || stored.isF16()))
    return 0;
  int64_t lanes = 128 / stored.getIntOrFloatBitWidth();
  if (type.getShape().back() % lanes != 0 || type.getNumElements() < kBlockSize * lanes)
    return 0;
  return lanes;
}

LogicalResult cuda::lowerElementalValue(LoweringContext &ctx, Value value) {
  Operation *op = value.getDefiningOp();
  llvm::SetVector<Value> inputs;
  KernelBuilder::collectInputs(value, ctx.plan, inputs);
  KernelBuilder kb(ctx.gpuModule, ctx.kernelName(op), {value},
                   inputs.getArrayRef(), ctx.plan);
  auto &b = kb.builder();
  int64_t n = typeOf(value).getNumElements();
  if (int64_t lanes = vectorLanes(value, ctx.plan)) {
    // Thread g owns the |lanes| consecutive elements [g * lanes, +lanes) of
    // one innermost row: its loads of same-shaped and broadcast operands and
    // its stores are consecutive and 16-byte aligned (buffers are, and rows
    // hold a multiple of |lanes|), which LLVM's load/store vectorizer turns
    // into one 16-byte access each; a thread past the end computes the last
    // group and stores nothing. A concatenation or pad along the innermost
    // axis is computed for the whole group under one branch on the piece
    // it lies in (emitComputedGroup): with a branch per element, Llama's
    // rotary kernels loaded q and k 2 bytes at a time (33% of the copy
    // bandwidth on the H100, session 46). A group of whole runs a thread
    // (session 45's try: constant positions, no branch) was slower still:
    // a warp's accesses then lay a run apart.
    auto shape = typeOf(value).getShape();
    int64_t groups = n / lanes;
    Value group = arith::AddIOp::create(
        b, arith::MulIOp::create(b, kb.blockIndex(), kb.idx(kBlockSize)), kb.threadIndex());
    Value clamped = arith::MinUIOp::create(b, group, kb.idx(groups - 1));
    Value first = arith::MulIOp::create(b, clamped, kb.idx(lanes));
    // The group's index in the shape with the innermost dim counted in
    // groups, then scaled back: the first column is visibly a multiple of
    // |lanes|, which is what lets LLVM prove the accesses 16-byte aligned.
    llvm::SmallVector<int64_t> groupShape(shape.begin(), shape.end());
    groupShape.back() /= lanes;
    llvm::SmallVector<Value> index = kb.delinearize(clamped, groupShape);
    Value column = arith::MulIOp::create(b, index.back(), kb.idx(lanes));
    llvm::SmallVector<llvm::SmallVector<Value>> indices;
    for (int64_t k = 0; k < lanes; ++k) {
      index.back() = arith::AddIOp::create(b, column, kb.idx(k));
      indices.push_back(index);
    }
    llvm::SmallVector<Value> values = kb.emitComputedGroup(value, indices, column);
    Value inRange = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, group, kb.idx(groups));
    kb.ifThen(inRange, [&] {
      for (int64_t k = 0; k < lanes; ++k)
        kb.store(value, arith::AddIOp::create(b, first, kb.idx(k)), values[k]);
    });
    kb.finish();
    kb.groupMemoryAccesses();
    if (failed(kb.status()))
      return failure();
    ctx.launch(kb, op, ceilDiv(groups, kBlockSize), ctx.buffersOf({value}),
               ctx.buffersOf(inputs.getArrayRef()));
    return success();
  }
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
