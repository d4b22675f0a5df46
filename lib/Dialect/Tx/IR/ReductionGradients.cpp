//===- ReductionGradients.cpp - reductions --------------------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// Gradient rules of the tx reductions and tx.cum_sum.
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

// Reductions
//===----------------------------------------------------------------------===//

/// g of a reduction reshaped to the keep_dims shape, so it broadcasts
/// against the input.
template <typename ReduceOpTy>
static Value keptGrad(GradientContext &c, ReduceOpTy op, ArrayRef<int64_t> axes) {
  auto inputType = tensorTypeOf(op.getInput());
  return reshape(c.b, c.g(), keepDimsShape(inputType.getShape(), axes));
}

// d reduce_sum(x) = g broadcast back over the reduced dims
LogicalResult ReduceSumOp::buildGradients(GradientContext &c) {
  ReduceSumOp op = *this;
  auto inputType = tensorTypeOf(op.getInput());
  auto axes = reductionAxes(op.getAxes(), inputType.getRank());
  c.set(0, expandTo(c.b, keptGrad(c, op, axes), inputType.getShape()));
  return success();
}

// d reduce_mean(x) = g / n broadcast back (n = number of reduced elements)
LogicalResult ReduceMeanOp::buildGradients(GradientContext &c) {
  ReduceMeanOp op = *this;
  auto inputType = tensorTypeOf(op.getInput());
  auto axes = reductionAxes(op.getAxes(), inputType.getRank());
  int64_t count = 1;
  for (int64_t a : axes)
    count *= inputType.getDimSize(a);
  Value scaled = mulScalar(c.b, keptGrad(c, op, axes), 1.0 / count);
  c.set(0, expandTo(c.b, scaled, inputType.getShape()));
  return success();
}

// d reduce_max(x) = g * (x == max) / count(x == max): tied maxima share the
// gradient equally (torch.amax's convention), so the sum over ties is g.
LogicalResult ReduceMaxOp::buildGradients(GradientContext &c) {
  ReduceMaxOp op = *this;
  ImplicitLocOpBuilder &b = c.b;
  Value x = op.getInput();
  auto inputType = tensorTypeOf(x);
  auto axes = reductionAxes(op.getAxes(), inputType.getRank());
  SmallVector<int64_t> kept = keepDimsShape(inputType.getShape(), axes);
  Value max = reshape(b, op.getResult(), kept);
  Value mask =
      castTo(b, EqualOp::create(b, x, max), inputType.getElementType());
  Value count = reduceSum(b, mask, axes, /*keepDims=*/true);
  Value share = div(b, keptGrad(c, op, axes), count);
  c.set(0, mul(b, mask, share));
  return success();
}

// d cum_sum(x) = cum_sum(g) in the other direction, same exclusivity:
// y[i] sums x[j] over j <= i, so x[j] reaches every y[i] with i >= j, whose
// gradients the reversed scan sums (strictly, j < i and i > j, when
// exclusive).
LogicalResult CumSumOp::buildGradients(GradientContext &c) {
  CumSumOp op = *this;
  c.set(0, CumSumOp::create(c.b, c.g(), op.getAxisAttr(), op.getExclusiveAttr(),
                            op.getReverse() ? UnitAttr()
                                            : c.b.getUnitAttr()));
  return success();
}

//===----------------------------------------------------------------------===//
