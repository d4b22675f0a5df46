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
