//===- EmitArithmetic.cpp - The elemental emitter's arithmetic ops --------===//
//
// SPDX-License-Identifier: Apache-2.0
// KernelBuilder's per-op dispatch and its arithmetic family (constants,
// elementwise math, comparisons, casts, FP8 quantization). Kept apart from
// KernelBuilder.cpp, which holds the builder's memory, index and loop
// machinery, so each op family's scalar code reads on its own.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "txopt/Dialect/Tx/IR/TxOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/TypeSwitch.h"
#include <cmath>

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::cuda;

static RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// The index of a numpy-broadcast operand of shape |operandShape| for the
/// result element at |index|.
static llvm::SmallVector<Value>
broadcastIndex(KernelBuilder &kb, llvm::ArrayRef<int64_t> operandShape,
               llvm::ArrayRef<Value> index) {
  llvm::SmallVector<Value> out;
  size_t offset = index.size() - operandShape.size();
  for (size_t d = 0; d < operandShape.size(); ++d)
    out.push_back(operandShape[d] == 1 ? kb.idx(0) : index[offset + d]);
  return out;
}

/// Operand |i| of |op| at the numpy-broadcast image of |index|.
Value KernelBuilder::emitOperand(Operation *op, unsigned i,
                                 llvm::ArrayRef<Value> index) {
  Value operand = op->getOperand(i);
  return emit(operand, broadcastIndex(*this, tensorType(operand).getShape(), index));
}

/// Reports that |op| cannot be computed in a kernel; a zero stands in so
/// emission can continue to the end (the kernel is then discarded).
Value KernelBuilder::emitFailure(Operation *op, const llvm::Twine &why,
                                 Type elementType) {
  op->emitError() << why;
  failed = true;
  return arith::ConstantOp::create(b, b.getZeroAttr(computeType(elementType)));
}

Value KernelBuilder::emitOp(Operation *op, unsigned resultNumber,
                            Type elementType, llvm::ArrayRef<int64_t> shape,
                            llvm::ArrayRef<Value> index) {
  if (isa<tx::TriluOp, tx::ReshapeOp, tx::SqueezeOp, tx::UnsqueezeOp,
          tx::IdentityOp, tx::ExpandOp, tx::TransposeOp, tx::SliceOp,
          tx::ConcatOp, tx::PadOp, tx::SplitOp>(op))
    return emitDataMovement(op, resultNumber, elementType, shape, index);
  if (isa<tx::GatherOp, tx::GatherElementsOp, tx::GatherNDOp, tx::SliceGradOp,
          tx::ConstantOfShapeOp, tx::CumSumOp>(op))
    return emitIndexed(op, resultNumber, elementType, shape, index);
  if (isa<tx::DropoutOp>(op))
    return emitDropout(op, resultNumber, elementType, shape, index);
  return emitArithmetic(op, resultNumber, elementType, shape, index);
}

/// The erf of `erf(u) + 1` (either order; an f32 erf, so no rounding comes
/// between the two) if |op| is that sum, else null. The caller computes it
/// only where the erf is not read from memory.
static tx::ErfOp erfOfOnePlusErf(Operation *op) {
  if (!isa<tx::AddOp>(op))
    return {};
  for (unsigned i = 0; i < 2; ++i) {
    auto erf = op->getOperand(i).getDefiningOp<tx::ErfOp>();
    if (erf && tensorType(erf.getResult()).getElementType().isF32() &&
        tx::getSplatConstant(op->getOperand(1 - i)) == 1.0)
      return erf;
  }
  return {};
}

Value KernelBuilder::fastExp2(Value x) {
  return LLVM::CallIntrinsicOp::create(b, b.getF32Type(),
                                       b.getStringAttr("llvm.nvvm.ex2.approx.ftz.f"),
                                       ValueRange{x})
      .getResult(0);
}

Value KernelBuilder::fastExpOfNonPositive(Value x) {
  return fastExp2(arith::MulFOp::create(b, x, f32(M_LOG2E)));
}

/// Whether |v| is -(a * a) as erf's gradient builds it (neg(mul(a, a)),
/// or a * -a): a value that is never above 0.
static bool isNegatedSquare(Value v) {
  auto sameOperands = [](Operation *mul) {
    return mul && isa<tx::MulOp>(mul) && mul->getOperand(0) == mul->getOperand(1);
  };
  if (auto neg = v.getDefiningOp<tx::NegOp>())
    return sameOperands(neg.getInput().getDefiningOp());
  auto mul = v.getDefiningOp<tx::MulOp>();
  if (!mul)
    return false;
  for (unsigned i = 0; i < 2; ++i)
    if (auto neg = mul->getOperand(i).getDefiningOp<tx::NegOp>();
        neg && neg.getInput() == mul->getOperand(1 - i))
      return true;
  return false;
}

/// 1 + erf(u) for an f32 u, as GELU and its gradient write it (0.5 x (1 +
/// erf(x / sqrt 2))). libdevice's erff is some 28 instructions (two
/// polynomials chosen lane by lane, and a branch): it made the GELU kernels
/// issue-bound. Here, with t = |u|,
///   1 + erf(u) = 2 - erfc(t) for u >= 0, erfc(t) below;
///   erfc(t) = 2^(t P(t)) for t < 4, 0 from 4 on (erfc(4) = 1.5e-8 is under
///   half an ulp of 1),
/// P of degree 8 (scripts/gpu/fit_one_plus_erf.py fits it and checks the
/// bounds): 15 instructions. Within 4e-7 of the exact value (libdevice's erf
/// then + 1: 9e-8). For -4 < u < -0.5, where the sum is small, within 3%
/// relative, where erf + 1 loses digits to cancellation (all of them near
/// u = -4); from u = -4 on both give 0. NaN stays NaN (t >= 4 is false for
/// it); +-inf give 2 and 0.
static Value emitOnePlusErf(KernelBuilder &kb, Value u) {
  auto &b = kb.builder();
  static constexpr float kLog2ErfcOverT[] = {
      -0x1.a0be880000000p+0f, -0x1.d63e260000000p-1f, -0x1.2fbc0e0000000p-3f,
      0x1.c63ce20000000p-6f,  0x1.63b1140000000p-14f, -0x1.2a29140000000p-9f,
      0x1.bcb7f60000000p-11f, -0x1.40c9f80000000p-13f, 0x1.85644c0000000p-17f};
  auto constant = [&](double v) {
    return Value(arith::ConstantOp::create(b, b.getF32FloatAttr(static_cast<float>(v))));
  };
  Value t = math::AbsFOp::create(b, u);
  Value p = constant(kLog2ErfcOverT[8]);
  for (int k = 7; k >= 0; --k)
    p = math::FmaOp::create(b, p, t, constant(kLog2ErfcOverT[k]));
  // 2^x for x >= -27 (t < 4): ex2.approx.ftz, one MUFU instruction (math.exp2
  // lowers to the non-flushing variant, which scales around denormal
  // results that cannot occur here); NaN and the t >= 4 garbage go through.
  Value tail = kb.fastExp2(arith::MulFOp::create(b, p, t));
  Value beyond = arith::CmpFOp::create(b, arith::CmpFPredicate::OGE, t, constant(4.0));
  tail = arith::SelectOp::create(b, beyond, constant(0.0), tail);
  Value positive = arith::CmpFOp::create(b, arith::CmpFPredicate::OGE, u, constant(0.0));
  return arith::SelectOp::create(b, positive, arith::SubFOp::create(b, constant(2.0), tail), tail);
}

/// Add, sub, mul, div, max, min (in the compute type rounded to the result
/// type, or in i64), pow and mod (for integers with the divisor's sign).
Value KernelBuilder::emitBinaryArithmetic(Operation *op, Type elementType,
                                          llvm::ArrayRef<Value> index) {
  auto operandAt = [&](unsigned i) { return emitOperand(op, i, index); };
  auto round = [&](Value v) { return roundTo(v, elementType); };
  auto fail = [&](const llvm::Twine &why) { return emitFailure(op, why, elementType); };
  bool isFloat = isa<FloatType>(elementType);
  return llvm::TypeSwitch<Operation *, Value>(op)
      .Case<tx::AddOp, tx::SubOp, tx::MulOp, tx::DivOp, tx::MaxOp,
            tx::MinOp>([&](Operation *) -> Value {
        // (An erf the plan stores is loaded, like any operand: its input is
        // not among the kernel's.)
        if (tx::ErfOp erf = erfOfOnePlusErf(op); erf && !readsFromMemory(erf.getResult(), plan)) {
          auto erfIndex = broadcastIndex(*this, tensorType(erf.getResult()).getShape(), index);
          return round(emitOnePlusErf(*this, emitOperand(erf, 0, erfIndex)));
        }
        Value l = operandAt(0), r = operandAt(1);
        if (isFloat) {
          Value v = llvm::TypeSwitch<Operation *, Value>(op)
                        .Case([&](tx::AddOp) { return Value(arith::AddFOp::create(b, l, r)); })
                        .Case([&](tx::SubOp) { return Value(arith::SubFOp::create(b, l, r)); })
                        .Case([&](tx::MulOp) { return Value(arith::MulFOp::create(b, l, r)); })
                        .Case([&](tx::DivOp) { return Value(arith::DivFOp::create(b, l, r)); })
                        .Case([&](tx::MaxOp) { return Value(arith::MaximumFOp::create(b, l, r)); })
                        .Default([&](Operation *) { return Value(arith::MinimumFOp::create(b, l, r)); });
          return round(v);
        }
        Value v = llvm::TypeSwitch<Operation *, Value>(op)
                      .Case([&](tx::AddOp) { return Value(arith::AddIOp::create(b, l, r)); })
                      .Case([&](tx::SubOp) { return Value(arith::SubIOp::create(b, l, r)); })
                      .Case([&](tx::MulOp) { return Value(arith::MulIOp::create(b, l, r)); })
                      .Case([&](tx::DivOp) { return Value(arith::DivSIOp::create(b, l, r)); })
                      .Case([&](tx::MaxOp) { return Value(arith::MaxSIOp::create(b, l, r)); })
                      .Default([&](Operation *) { return Value(arith::MinSIOp::create(b, l, r)); });
        return castScalar(v, b.getI64Type(), elementType);
      })
      .Case([&](tx::PowOp pow) -> Value {
        Value base = operandAt(0);
        if (!isFloat)
          return fail("integer pow is not supported on the GPU");
        // x^2 and x^3, as exporters write them (GPT-2's tanh GELU cubes its
        // input), as multiplications: exact for the square, one rounding
        // more for the cube (what PyTorch's CUDA pow does for these
        // exponents). libdevice's powf is some 60 instructions: it made the
        // GELU kernels issue-bound. NaN, infinities and signed zeros come
        // out as pow's.
        if (auto exponent = pow.getRhs().getDefiningOp<tx::ConstantOp>()) {
          auto attr = dyn_cast<DenseFPElementsAttr>(exponent.getValue());
          if (attr && attr.isSplat()) {
            double e = attr.getSplatValue<APFloat>().convertToDouble();
            if (e == 2.0)
              return round(arith::MulFOp::create(b, base, base));
            if (e == 3.0)
              return round(arith::MulFOp::create(
                  b, arith::MulFOp::create(b, base, base), base));
            if (e == 1.0)
              return base;
          }
        }
        Value e = operandAt(1);
        if (!isa<FloatType>(e.getType()))
          e = arith::SIToFPOp::create(b, base.getType(), e);
        return round(math::PowFOp::create(b, base, e));
      })
      .Case([&](tx::ModOp mod) -> Value {
        Value l = operandAt(0), r = operandAt(1);
        if (isFloat) {
          if (mod.getFmod())
            return round(arith::RemFOp::create(b, l, r));
          Value q = math::FloorOp::create(b, arith::DivFOp::create(b, l, r));
          return round(arith::SubFOp::create(b, l, arith::MulFOp::create(b, q, r)));
        }
        // Python-style remainder: the sign of the divisor.
        Value rem = arith::RemSIOp::create(b, l, r);
        Value zero = arith::ConstantIntOp::create(b, 0, 64);
        Value remNeg = arith::CmpIOp::create(b, arith::CmpIPredicate::slt, rem, zero);
        Value rNeg = arith::CmpIOp::create(b, arith::CmpIPredicate::slt, r, zero);
        Value nonzero = arith::CmpIOp::create(b, arith::CmpIPredicate::ne, rem, zero);
        Value differ = arith::XOrIOp::create(b, remNeg, rNeg);
        Value fix = arith::AndIOp::create(b, differ, nonzero);
        return arith::SelectOp::create(b, fix, arith::AddIOp::create(b, rem, r), rem);
      });
}

/// Unary math (sqrt, reciprocal, erf, tanh, sigmoid, exp, log, sin, cos,
/// neg, relu) in the compute type rounded to the result type; neg and relu
/// also on integers.
Value KernelBuilder::emitMath(Operation *op, Type elementType, llvm::ArrayRef<Value> index) {
  auto round = [&](Value v) { return roundTo(v, elementType); };
  auto fail = [&](const llvm::Twine &why) { return emitFailure(op, why, elementType); };
  bool isFloat = isa<FloatType>(elementType);
  Value x = emitOperand(op, 0, index);
  if (!isFloat) {
    if (isa<tx::NegOp>(op))
      return castScalar(arith::SubIOp::create(b, arith::ConstantIntOp::create(b, 0, 64), x),
                        b.getI64Type(), elementType);
    if (isa<tx::ReluOp>(op))
      return arith::MaxSIOp::create(b, x, arith::ConstantIntOp::create(b, 0, 64));
    return fail("integer math is not supported on the GPU");
  }
  Type ct = x.getType();
  // exp(-a^2), the Gaussian in erf's (and so GELU's) gradient: GPT-2's
  // GELU-gradient kernels, issue-bound at 47-62 instructions a value, spent
  // a sixth of them in libdevice's expf. Its argument is never above 0.
  if (auto exp = dyn_cast<tx::ExpOp>(op); exp && ct.isF32() && isNegatedSquare(exp.getInput()))
    return round(fastExpOfNonPositive(x));
  Value one = arith::ConstantOp::create(b, b.getFloatAttr(ct, 1.0));
  Value v = llvm::TypeSwitch<Operation *, Value>(op)
                .Case([&](tx::SqrtOp) { return Value(math::SqrtOp::create(b, x)); })
                .Case([&](tx::ReciprocalOp) { return Value(arith::DivFOp::create(b, one, x)); })
                .Case([&](tx::ErfOp) { return Value(math::ErfOp::create(b, x)); })
                .Case([&](tx::TanhOp) { return Value(math::TanhOp::create(b, x)); })
                .Case([&](tx::SigmoidOp) {
                  Value e = math::ExpOp::create(b, arith::NegFOp::create(b, x));
                  return Value(arith::DivFOp::create(b, one, arith::AddFOp::create(b, one, e)));
                })
                .Case([&](tx::ExpOp) { return Value(math::ExpOp::create(b, x)); })
                .Case([&](tx::LogOp) { return Value(math::LogOp::create(b, x)); })
                .Case([&](tx::SinOp) { return Value(math::SinOp::create(b, x)); })
                .Case([&](tx::CosOp) { return Value(math::CosOp::create(b, x)); })
                .Case([&](tx::NegOp) { return Value(arith::NegFOp::create(b, x)); })
                .Default([&](Operation *) {
                  Value zero = arith::ConstantOp::create(b, b.getFloatAttr(ct, 0.0));
                  Value pos = arith::CmpFOp::create(b, arith::CmpFPredicate::OGT, x, zero);
                  return Value(arith::SelectOp::create(b, pos, x, zero));
                });
  return round(v);
}

/// Constants, arithmetic, comparisons, logic, select, math, casts and FP8
/// quantization: the element of each operand at the broadcast index.
Value KernelBuilder::emitArithmetic(Operation *op, unsigned resultNumber,
                            Type elementType, llvm::ArrayRef<int64_t> shape,
                            llvm::ArrayRef<Value> index) {
  auto operandAt = [&](unsigned i) { return emitOperand(op, i, index); };
  auto operandType = [&](unsigned i) {
    return tensorType(op->getOperand(i)).getElementType();
  };
  auto round = [&](Value v) { return roundTo(v, elementType); };
  auto fail = [&](const llvm::Twine &why) { return emitFailure(op, why, elementType); };
  return llvm::TypeSwitch<Operation *, Value>(op)
      .Case([&](tx::ConstantOp c) -> Value {
        auto attr = cast<ElementsAttr>(c.getValue());
        if (auto dense = dyn_cast<DenseFPElementsAttr>(attr)) {
          double v = dense.getSplatValue<APFloat>().convertToDouble();
          return arith::ConstantOp::create(
              b, b.getFloatAttr(computeType(elementType), v));
        }
        if (auto dense = dyn_cast<DenseIntElementsAttr>(attr)) {
          APInt v = dense.getSplatValue<APInt>();
          if (elementType.isInteger(1))
            return arith::ConstantIntOp::create(b, v.getBoolValue(), 1);
          return arith::ConstantIntOp::create(b, v.getSExtValue(), 64);
        }
        return fail("unsupported constant on the GPU");
      })
      .Case<tx::AddOp, tx::SubOp, tx::MulOp, tx::DivOp, tx::MaxOp, tx::MinOp,
            tx::PowOp, tx::ModOp>([&](Operation *) {
        return emitBinaryArithmetic(op, elementType, index);
      })
      .Case<tx::EqualOp, tx::LessOp, tx::LessOrEqualOp, tx::GreaterOp,
            tx::GreaterOrEqualOp>([&](Operation *) -> Value {
        Value l = operandAt(0), r = operandAt(1);
        if (isa<FloatType>(l.getType())) {
          auto p = llvm::TypeSwitch<Operation *, arith::CmpFPredicate>(op)
                       .Case([](tx::EqualOp) { return arith::CmpFPredicate::OEQ; })
                       .Case([](tx::LessOp) { return arith::CmpFPredicate::OLT; })
                       .Case([](tx::LessOrEqualOp) { return arith::CmpFPredicate::OLE; })
                       .Case([](tx::GreaterOp) { return arith::CmpFPredicate::OGT; })
                       .Default([](Operation *) { return arith::CmpFPredicate::OGE; });
          return arith::CmpFOp::create(b, p, l, r);
        }
        auto p = llvm::TypeSwitch<Operation *, arith::CmpIPredicate>(op)
                     .Case([](tx::EqualOp) { return arith::CmpIPredicate::eq; })
                     .Case([](tx::LessOp) { return arith::CmpIPredicate::slt; })
                     .Case([](tx::LessOrEqualOp) { return arith::CmpIPredicate::sle; })
                     .Case([](tx::GreaterOp) { return arith::CmpIPredicate::sgt; })
                     .Default([](Operation *) { return arith::CmpIPredicate::sge; });
        return arith::CmpIOp::create(b, p, l, r);
      })
      .Case([&](tx::AndOp) { return Value(arith::AndIOp::create(b, operandAt(0), operandAt(1))); })
      .Case([&](tx::OrOp) { return Value(arith::OrIOp::create(b, operandAt(0), operandAt(1))); })
      .Case([&](tx::XorOp) { return Value(arith::XOrIOp::create(b, operandAt(0), operandAt(1))); })
      .Case([&](tx::NotOp) {
        return Value(arith::XOrIOp::create(b, operandAt(0),
                                           arith::ConstantIntOp::create(b, 1, 1)));
      })
      .Case([&](tx::WhereOp) -> Value {
        Value c = operandAt(0), l = operandAt(1), r = operandAt(2);
        return arith::SelectOp::create(b, c, l, r);
      })
      .Case<tx::SqrtOp, tx::ReciprocalOp, tx::ErfOp, tx::TanhOp, tx::SigmoidOp,
            tx::ExpOp, tx::LogOp, tx::SinOp, tx::CosOp, tx::NegOp,
            tx::ReluOp>([&](Operation *) { return emitMath(op, elementType, index); })
      .Case([&](tx::IsNaNOp) -> Value {
        Value x = operandAt(0);
        return arith::CmpFOp::create(b, arith::CmpFPredicate::UNO, x, x);
      })
      .Case([&](tx::CastOp) -> Value {
        return castScalar(operandAt(0), operandType(0), elementType);
      })
      .Case([&](tx::QuantizeOp) -> Value {
        // f32(x * scale), then to FP8: the executor's two roundings.
        return round(arith::MulFOp::create(b, operandAt(0), operandAt(1)));
      })
      .Case([&](tx::DequantizeOp) -> Value {
        // The FP8 value is exact in f32; f32(q * scale_inv), then the type.
        return round(arith::MulFOp::create(b, operandAt(0), operandAt(1)));
      })
      .Default([&](Operation *) -> Value {
        return fail("'" + op->getName().getStringRef() +
                    "' cannot be computed inside a GPU kernel");
      });
}
