//===- OptimizerKernels.cpp - adam and sgd updates --------------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// tx.adam / tx.sgd: one loop kernel per parameter tensor, each line of the
// executor's formula in f32.
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

void cuda::updateInPlace(LoweringContext &ctx, Operation *op, Value state, Value result) {
  if (!isa<BlockArgument>(state) || ctx.bufferOfValue.count(result))
    return;
  for (Operation *user : state.getUsers())
    if (user != op && !user->isBeforeInBlock(op))
      return;
  ctx.bufferOfValue[result] = ctx.bufferFor(state);
}

/// f32 rounding of a double, as the executor's r32().
static double r32(double v) { return static_cast<double>(static_cast<float>(v)); }

/// Elements per thread of the Adam kernels (see lowerAdam).
constexpr int64_t kOptimizerElementsPerThread = 8;

/// tx.adam: one loop kernel per parameter tensor, each line of the
/// executor's formula in f32 (correctly rounded f32 operations equal the
/// executor's double-then-round results), the step-dependent scalars formed
/// in f64 inside the kernel from the lr and step tensors.
static LogicalResult lowerAdam(LoweringContext &ctx, tx::AdamOp adam) {
  Operation *op = adam;
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

/// tx.sgd: one loop kernel per parameter tensor, one element per thread.
static LogicalResult lowerSGD(LoweringContext &ctx, tx::SGDOp sgd) {
  Operation *op = sgd;
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

/// tx.adam and tx.sgd: one loop kernel per parameter tensor.
LogicalResult cuda::lowerOptimizer(LoweringContext &ctx, Operation *op) {
  if (auto adam = dyn_cast<tx::AdamOp>(op))
    return lowerAdam(ctx, adam);
  return lowerSGD(ctx, cast<tx::SGDOp>(op));
}
