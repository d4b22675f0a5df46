//===- NormalizationGradients.cpp - norms, loss ---------------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// Gradient rules of softmax, the norms (ONNX and fused), tx.attention and
// the cross-entropy loss.
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

// Softmax, normalization, loss
//===----------------------------------------------------------------------===//

// d softmax(x) = y * (g - sum(g * y, axis))
LogicalResult SoftmaxOp::buildGradients(GradientContext &c) {
  SoftmaxOp op = *this;
  Value y = op.getResult();
  int64_t axis = normalized(op.getAxis(), tensorTypeOf(y).getRank());
  Value dot = reduceSum(c.b, mul(c.b, c.g(), y), {axis}, /*keepDims=*/true);
  c.set(0, mul(c.b, y, sub(c.b, c.g(), dot)));
  return success();
}

/// Normalized dims [axis, rank) of a norm over |x|.
static SmallVector<int64_t> normAxes(Value x, int64_t axis) {
  int64_t rank = tensorTypeOf(x).getRank();
  SmallVector<int64_t> axes;
  for (int64_t d = normalized(axis, rank); d < rank; ++d)
    axes.push_back(d);
  return axes;
}

/// True when a norm over |x| from |axis| on, with affine operands
/// |affine| (null for an absent bias), fits the fused tx.layer_norm /
/// tx.rms_norm: f16 / bf16 / f32, normalized over the innermost dim only,
/// affine operands of shape [D].
static bool fitsFusedNorm(Value x, int64_t axis, ArrayRef<Value> affine) {
  auto type = tensorTypeOf(x);
  Type elementType = type.getElementType();
  int64_t rank = type.getRank();
  if (!(elementType.isF16() || elementType.isBF16() || elementType.isF32()) ||
      rank < 1 || normalized(axis, rank) != rank - 1)
    return false;
  return llvm::all_of(affine, [&](Value v) {
    return !v || tensorTypeOf(v).getShape() ==
                     ArrayRef<int64_t>{type.getShape().back()};
  });
}

// y = xhat * scale + bias with xhat = (x - mean) * rstd over dims [axis, r):
//   dbias  = sum g,  dscale = sum g * xhat   (over the broadcast dims)
//   dxhat  = g * scale
//   dx     = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))
// Over the innermost dim in f16 / bf16 / f32 (what exporters emit): the
// statistics are recomputed by a tx.layer_norm (which CSE merges with the
// forward once tx-fuse-norms has fused it) and fed to tx.layer_norm_grad.
// Otherwise (f64, several normalized dims, broadcast affine operands)
// written out with primitives, the statistics recomputed in at least f32.
LogicalResult LayerNormalizationOp::buildGradients(GradientContext &c) {
  LayerNormalizationOp op = *this;
  ImplicitLocOpBuilder &b = c.b;
  if (fitsFusedNorm(op.getInput(), op.getAxis(),
                    {op.getScale(), op.getBias()})) {
    auto stats = LayerNormOp::create(b, op.getInput(), op.getScale(),
                                     op.getBias(), op.getEpsilonAttr());
    auto grad = LayerNormGradOp::create(b, c.g(), op.getInput(), op.getScale(),
                                        stats.getMean(), stats.getRstd());
    c.set(0, grad.getInputGrad());
    c.set(1, grad.getGammaGrad());
    if (op.getBias())
      c.set(2, grad.getBetaGrad());
    return success();
  }
  Type elementType = elementTypeOf(op.getInput());
  Type ct = computeTypeFor(elementType);
  SmallVector<int64_t> axes = normAxes(op.getInput(), op.getAxis());
  Value x = castTo(b, op.getInput(), ct), g = castTo(b, c.g(), ct);
  Value mean = reduceMean(b, x, axes, true);
  Value centered = sub(b, x, mean);
  Value var = reduceMean(b, mul(b, centered, centered), axes, true);
  Value eps = scalar(b, ct, op.getEpsilon().convertToDouble());
  Value rstd = ReciprocalOp::create(b, SqrtOp::create(b, add(b, var, eps)));
  Value xhat = mul(b, centered, rstd);
  if (op.getBias() && c.wants(2))
    c.set(2, castTo(b, sumToType(b, g, op.getBias()), elementType));
  if (c.wants(1))
    c.set(1,
          castTo(b, sumToType(b, mul(b, g, xhat), op.getScale()), elementType));
  if (c.wants(0)) {
    Value dxhat = mul(b, g, castTo(b, op.getScale(), ct));
    Value m1 = reduceMean(b, dxhat, axes, true);
    Value m2 = reduceMean(b, mul(b, dxhat, xhat), axes, true);
    Value inner = sub(b, sub(b, dxhat, m1), mul(b, xhat, m2));
    c.set(0, castTo(b, mul(b, rstd, inner), elementType));
  }
  return success();
}

// y = xhat * scale with xhat = x * rstd, rstd = 1 / sqrt(mean(x^2) + eps):
//   dscale = sum g * xhat,  dxhat = g * scale
//   dx     = rstd * (dxhat - xhat * mean(dxhat * xhat))
// Fused (tx.rms_norm + tx.rms_norm_grad) or primitives, as for LayerNorm.
LogicalResult RMSNormalizationOp::buildGradients(GradientContext &c) {
  RMSNormalizationOp op = *this;
  ImplicitLocOpBuilder &b = c.b;
  if (fitsFusedNorm(op.getInput(), op.getAxis(), {op.getScale()})) {
    auto stats =
        RMSNormOp::create(b, op.getInput(), op.getScale(), op.getEpsilonAttr());
    auto grad = RMSNormGradOp::create(b, c.g(), op.getInput(), op.getScale(),
                                      stats.getRstd());
    c.set(0, grad.getInputGrad());
    c.set(1, grad.getGammaGrad());
    return success();
  }
  Type elementType = elementTypeOf(op.getInput());
  Type ct = computeTypeFor(elementType);
  SmallVector<int64_t> axes = normAxes(op.getInput(), op.getAxis());
  Value x = castTo(b, op.getInput(), ct), g = castTo(b, c.g(), ct);
  Value ms = reduceMean(b, mul(b, x, x), axes, true);
  Value eps = scalar(b, ct, op.getEpsilon().convertToDouble());
  Value rstd = ReciprocalOp::create(b, SqrtOp::create(b, add(b, ms, eps)));
  Value xhat = mul(b, x, rstd);
  if (c.wants(1))
    c.set(1,
          castTo(b, sumToType(b, mul(b, g, xhat), op.getScale()), elementType));
  if (c.wants(0)) {
    Value dxhat = mul(b, g, castTo(b, op.getScale(), ct));
    Value m2 = reduceMean(b, mul(b, dxhat, xhat), axes, true);
    c.set(0, castTo(b, mul(b, rstd, sub(b, dxhat, mul(b, xhat, m2))),
                    elementType));
  }
  return success();
}

// Fused tx.layer_norm: tx.layer_norm_grad with the saved mean / rstd.
LogicalResult LayerNormOp::buildGradients(GradientContext &c) {
  LayerNormOp op = *this;
  if (c.resultGrads[1] || c.resultGrads[2])
    return unsupported(op, "through its mean / rstd results");
  auto grad = LayerNormGradOp::create(c.b, c.g(), op.getInput(), op.getGamma(),
                                      op.getMean(), op.getRstd());
  c.set(0, grad.getInputGrad());
  c.set(1, grad.getGammaGrad());
  if (op.getBeta() && c.wants(2))
    c.set(2, castTo(c.b, grad.getBetaGrad(), elementTypeOf(op.getBeta())));
  return success();
}

// Fused tx.rms_norm: tx.rms_norm_grad with the saved rstd.
LogicalResult RMSNormOp::buildGradients(GradientContext &c) {
  RMSNormOp op = *this;
  if (c.resultGrads[1])
    return unsupported(op, "through its rstd result");
  auto grad = RMSNormGradOp::create(c.b, c.g(), op.getInput(), op.getGamma(),
                                    op.getRstd());
  c.set(0, grad.getInputGrad());
  c.set(1, grad.getGammaGrad());
  return success();
}

// Fused tx.attention: tx.attention_grad with the saved output and lse. The
// mask gets no gradient (a learned additive bias is refused, not dropped).
LogicalResult AttentionOp::buildGradients(GradientContext &c) {
  AttentionOp op = *this;
  if (c.resultGrads[1])
    return unsupported(op, "through its lse result");
  if (op.getMask() && c.wants(3))
    return unsupported(op, "with respect to its mask");
  // A dropout of the probabilities: the same key, ratio and seed, so the
  // backward drops exactly the forward's entries.
  auto grad = AttentionGradOp::create(
      c.b, c.g(), op.getQ(), op.getK(), op.getV(), op.getMask(),
      op.getResult(), op.getLse(), op.getDropoutKey(), op.getScaleAttr(),
      op.getCausalAttr(), op.getWindowAttr(), op.getDropoutRatioAttr(),
      op.getDropoutSeedAttr());
  c.set(0, grad.getQGrad());
  c.set(1, grad.getKGrad());
  c.set(2, grad.getVGrad());
  return success();
}

// d loss / d scores = g * w / norm * (softmax(scores) - onehot(labels)),
// fused into tx.softmax_cross_entropy_grad (see its description).
LogicalResult SoftmaxCrossEntropyLossOp::buildGradients(GradientContext &c) {
  SoftmaxCrossEntropyLossOp op = *this;
  if (op.getWeights() && c.wants(2))
    return unsupported(op, "with respect to its class weights");
  c.set(0, SoftmaxCrossEntropyGradOp::create(
               c.b, op.getScores().getType(), c.g(), op.getScores(),
               op.getLabels(), op.getWeights(), op.getReductionAttr(),
               op.getIgnoreIndexAttr()));
  return success();
}
