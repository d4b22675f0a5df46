//===- ScatterKernels.cpp - gradients of the gathers ------------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// tx.gather_grad and the GatherElements / GatherND gradients: scatter-adds
// with f32 atomics (the op leaves the order of repeated indices unspecified).
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

/// tx.gather_grad: each gradient element goes to data[a, indices[i], s].
static LogicalResult lowerGatherGradOp(LoweringContext &ctx, tx::GatherGradOp op) {
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
