//===- ElementwiseGradients.cpp - elementwise ops -------------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// Gradient rules of the elementwise tx ops (arithmetic with broadcasting,
// unary math, casts, where, dropout).
// Each rule is the op's DifferentiableOpInterface::buildGradients and states
// its formula; `g` is the result gradient and `y` the op's result. Every
// rule is checked against finite differences by test/Reference/gradcheck.py.
//
//===----------------------------------------------------------------------===//

#include "GradientUtils.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/STLExtras.h"

#include <cmath>
#include <numeric>

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::tx;
using namespace mlir::txopt::tx::gradient;

//===----------------------------------------------------------------------===//
// Elementwise arithmetic (broadcasting)
//===----------------------------------------------------------------------===//

// d(a + b) = (g, g)
LogicalResult AddOp::buildGradients(GradientContext &c) {
  AddOp op = *this;
  if (c.wants(0))
    c.set(0, sumToType(c.b, c.g(), op.getLhs()));
  if (c.wants(1))
    c.set(1, sumToType(c.b, c.g(), op.getRhs()));
  return success();
}

// d(a - b) = (g, -g)
LogicalResult SubOp::buildGradients(GradientContext &c) {
  SubOp op = *this;
  if (c.wants(0))
    c.set(0, sumToType(c.b, c.g(), op.getLhs()));
  if (c.wants(1))
    c.set(1, neg(c.b, sumToType(c.b, c.g(), op.getRhs())));
  return success();
}

// d(a * b) = (g * b, g * a)
LogicalResult MulOp::buildGradients(GradientContext &c) {
  MulOp op = *this;
  if (c.wants(0))
    c.set(0, sumToType(c.b, mul(c.b, c.g(), op.getRhs()), op.getLhs()));
  if (c.wants(1))
    c.set(1, sumToType(c.b, mul(c.b, c.g(), op.getLhs()), op.getRhs()));
  return success();
}

// d(a / b) = (g / b, -g * y / b)   (y / b rather than a / b^2: no overflow)
LogicalResult DivOp::buildGradients(GradientContext &c) {
  DivOp op = *this;
  if (c.wants(0))
    c.set(0, sumToType(c.b, div(c.b, c.g(), op.getRhs()), op.getLhs()));
  if (c.wants(1)) {
    Value t = div(c.b, mul(c.b, c.g(), op.getResult()), op.getRhs());
    c.set(1, neg(c.b, sumToType(c.b, t, op.getRhs())));
  }
  return success();
}

// d(a ^ e) = (g * e * a^(e - 1), g * y * log(a))
// A constant exponent is folded (e = 2 gives g * 2a). The exponent gradient
// is 0 where a == 0 (the limit of y * log(a) for e > 0, as PyTorch does).
LogicalResult PowOp::buildGradients(GradientContext &c) {
  PowOp op = *this;
  ImplicitLocOpBuilder &b = c.b;
  Value base = op.getLhs(), exponent = op.getRhs();
  Type type = elementTypeOf(base);
  if (c.wants(0)) {
    Value grad;
    if (std::optional<double> e = getSplatConstant(exponent)) {
      if (*e == 0.0)
        grad = zeros(b, op.getType());
      else if (*e == 1.0)
        grad = c.g();
      else if (*e == 2.0)
        grad = mul(b, c.g(), mulScalar(b, base, 2.0));
      else
        grad =
            mul(b, c.g(),
                mulScalar(b, PowOp::create(b, base, scalar(b, type, *e - 1.0)),
                          *e));
    } else {
      Value ef = castTo(b, exponent, type);
      Value powed = PowOp::create(b, base, sub(b, ef, scalar(b, type, 1.0)));
      grad = mul(b, c.g(), mul(b, ef, powed));
    }
    c.set(0, sumToType(b, grad, base));
  }
  if (c.wants(1)) {
    Value zero = scalar(b, type, 0.0);
    Value isZero = EqualOp::create(b, base, zero);
    Value safeLog = WhereOp::create(b, isZero, zero, LogOp::create(b, base));
    Value grad = mul(b, mul(b, c.g(), op.getResult()), safeLog);
    grad = castTo(b, sumToType(b, grad, exponent), elementTypeOf(exponent));
    c.set(1, grad);
  }
  return success();
}

// d where(cond, a, b) = (where(cond, g, 0), where(cond, 0, g)); cond has none.
LogicalResult WhereOp::buildGradients(GradientContext &c) {
  WhereOp op = *this;
  Value zero = scalar(c.b, elementTypeOf(op.getResult()), 0.0);
  if (c.wants(1))
    c.set(1,
          sumToType(c.b, WhereOp::create(c.b, op.getCondition(), c.g(), zero),
                    op.getLhs()));
  if (c.wants(2))
    c.set(2,
          sumToType(c.b, WhereOp::create(c.b, op.getCondition(), zero, c.g()),
                    op.getRhs()));
  return success();
}

// d max(a, b) = (g * w, g * (1 - w)), w = a > b ? 1 : (a == b ? 0.5 : 0);
// min the same with a < b. The selected operand gets g; tied operands split
// it equally (torch.maximum's convention, and tx.reduce_max's rule), so the
// two gradients always sum to g. Each is summed over its broadcast dims.
template <typename OpTy>
static LogicalResult minMaxRule(GradientContext &c, OpTy op) {
  ImplicitLocOpBuilder &b = c.b;
  Value lhs = op.getLhs(), rhs = op.getRhs();
  Type type = elementTypeOf(op.getResult());
  Value selected;
  if constexpr (std::is_same_v<OpTy, MaxOp>)
    selected = GreaterOp::create(b, lhs, rhs);
  else
    selected = LessOp::create(b, lhs, rhs);
  Value tied = EqualOp::create(b, lhs, rhs);
  Value tieShare = WhereOp::create(b, tied, scalar(b, type, 0.5),
                                   scalar(b, type, 0.0));
  Value w = WhereOp::create(b, selected, scalar(b, type, 1.0), tieShare);
  if (c.wants(0))
    c.set(0, sumToType(b, mul(b, c.g(), w), lhs));
  if (c.wants(1))
    c.set(1, sumToType(b, mul(b, c.g(), sub(b, scalar(b, type, 1.0), w)), rhs));
  return success();
}

LogicalResult MaxOp::buildGradients(GradientContext &c) {
  return minMaxRule(c, *this);
}
LogicalResult MinOp::buildGradients(GradientContext &c) {
  return minMaxRule(c, *this);
}

//===----------------------------------------------------------------------===//
// Elementwise unary
//===----------------------------------------------------------------------===//

// d sqrt(x) = g * 0.5 / y
LogicalResult SqrtOp::buildGradients(GradientContext &c) {
  SqrtOp op = *this;
  c.set(0, div(c.b, mulScalar(c.b, c.g(), 0.5), op.getResult()));
  return success();
}

// d (1 / x) = -g * y * y
LogicalResult ReciprocalOp::buildGradients(GradientContext &c) {
  ReciprocalOp op = *this;
  Value y = op.getResult();
  c.set(0, neg(c.b, mul(c.b, c.g(), mul(c.b, y, y))));
  return success();
}

// d (-x) = -g
LogicalResult NegOp::buildGradients(GradientContext &c) {
  c.set(0, neg(c.b, c.g()));
  return success();
}

// d erf(x) = g * 2 / sqrt(pi) * exp(-x^2)
LogicalResult ErfOp::buildGradients(GradientContext &c) {
  ErfOp op = *this;
  Value x = op.getInput();
  Value e = ExpOp::create(c.b, neg(c.b, mul(c.b, x, x)));
  c.set(0, mul(c.b, c.g(), mulScalar(c.b, e, 2.0 / std::sqrt(M_PI))));
  return success();
}

// d tanh(x) = g * (1 - y^2)
LogicalResult TanhOp::buildGradients(GradientContext &c) {
  TanhOp op = *this;
  Value y = op.getResult();
  Value one = scalar(c.b, elementTypeOf(y), 1.0);
  c.set(0, mul(c.b, c.g(), sub(c.b, one, mul(c.b, y, y))));
  return success();
}

// d sigmoid(x) = g * y * (1 - y)
LogicalResult SigmoidOp::buildGradients(GradientContext &c) {
  SigmoidOp op = *this;
  Value y = op.getResult();
  Value one = scalar(c.b, elementTypeOf(y), 1.0);
  c.set(0, mul(c.b, mul(c.b, c.g(), y), sub(c.b, one, y)));
  return success();
}

// d relu(x) = x > 0 ? g : 0   (0 at x == 0, as PyTorch)
LogicalResult ReluOp::buildGradients(GradientContext &c) {
  ReluOp op = *this;
  Value zero = scalar(c.b, elementTypeOf(op.getInput()), 0.0);
  Value notPositive = GreaterOrEqualOp::create(c.b, zero, op.getInput());
  c.set(0, WhereOp::create(c.b, notPositive, zero, c.g()));
  return success();
}

// d exp(x) = g * y
LogicalResult ExpOp::buildGradients(GradientContext &c) {
  ExpOp op = *this;
  c.set(0, mul(c.b, c.g(), op.getResult()));
  return success();
}

// d log(x) = g / x
LogicalResult LogOp::buildGradients(GradientContext &c) {
  LogOp op = *this;
  c.set(0, div(c.b, c.g(), op.getInput()));
  return success();
}

// d sin(x) = g * cos(x)
LogicalResult SinOp::buildGradients(GradientContext &c) {
  SinOp op = *this;
  c.set(0, mul(c.b, c.g(), CosOp::create(c.b, op.getInput())));
  return success();
}

// d cos(x) = -g * sin(x)
LogicalResult CosOp::buildGradients(GradientContext &c) {
  CosOp op = *this;
  c.set(0, neg(c.b, mul(c.b, c.g(), SinOp::create(c.b, op.getInput()))));
  return success();
}

// d identity(x) = g
LogicalResult IdentityOp::buildGradients(GradientContext &c) {
  c.set(0, c.g());
  return success();
}

// d cast(x) = cast(g) back to x's type (only float x is ever wanted)
LogicalResult CastOp::buildGradients(GradientContext &c) {
  CastOp op = *this;
  c.set(0, castTo(c.b, c.g(), elementTypeOf(op.getInput())));
  return success();
}

// d trilu(x) = trilu(g): the kept positions are those of the forward.
LogicalResult TriluOp::buildGradients(GradientContext &c) {
  TriluOp op = *this;
  c.set(0, TriluOp::create(c.b, c.g(), op.getUpperAttr(), op.getKAttr()));
  return success();
}

// d dropout(x) = dropout(g) with the same key, ratio and seed: the generator
// is keyed by (seed, key, element index) only, so it keeps (and scales)
// exactly the elements the forward kept. The key is the forward's SSA value,
// so when tx-build-train-step replaces it by the step's rng_key both
// dropouts follow. The integer key has no gradient.
LogicalResult DropoutOp::buildGradients(GradientContext &c) {
  DropoutOp op = *this;
  c.set(0, DropoutOp::create(c.b, c.g().getType(), c.g(), op.getKey(),
                             op.getRatioAttr(), op.getSeedAttr()));
  return success();
}

//===----------------------------------------------------------------------===//
