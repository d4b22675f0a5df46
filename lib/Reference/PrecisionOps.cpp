//===- PrecisionOps.cpp - FP8 amax, casts, scale updates and GEMM ---------===//
//
// SPDX-License-Identifier: Apache-2.0
// The FP8 scaling ops of TxPrecisionOps.td, evaluated exactly as their
// descriptions state. Intermediate f32 roundings are explicit (TE's kernels
// round the scaled value to f32 before the FP8 conversion, and compute
// scales in f32); the final rounding to the result type, saturating for
// FP8, is the executor's.
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"

#include "txopt/Dialect/Tx/IR/TxOps.h"
#include "txopt/Reference/FloatFormats.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::reference;

namespace {

/// Largest finite value of the FP8 type a scale casts to.
double fp8Max(Type type) {
  return isa<Float8E5M2Type>(type) ? kFloat8E5M2.maxFinite
                                   : kFloat8E4M3FN.maxFinite;
}

/// What TE stores when the computed scale overflows f32: the f32 maximum, so
/// the cast still scales up as far as it can instead of producing inf * 0.
double clampInfiniteScale(double scale) {
  return std::isinf(scale)
             ? static_cast<double>(std::numeric_limits<float>::max())
             : scale;
}

Tensor evalAmax(Operation *op, const Tensor &input) {
  Tensor result = makeResult(op);
  double amax = 0.0;
  for (double v : input.floats()) {
    if (std::isnan(v)) {
      amax = std::numeric_limits<double>::quiet_NaN();
      break;
    }
    amax = std::max(amax, std::fabs(v));
  }
  result.floats()[0] = amax;
  return result;
}

/// quantize and dequantize: x * s rounded to f32; the executor then rounds
/// to the result type (saturating FP8, or bf16/f16/f32).
Tensor evalScaledCast(Operation *op, const Tensor &input, double factor,
                      const ExecutorOptions &options) {
  Type f32 = Float32Type::get(op->getContext());
  Tensor result = makeResult(op);
  Type to = result.getElementType();
  for (int64_t i = 0, n = result.getNumElements(); i < n; ++i)
    result.floats()[i] = saturateInfinityForFP8(
        to, roundUnlessF64(f32, input.floats()[i] * factor, options));
  return result;
}

/// One row of tx.fp8_scale_update: |history| (L entries) rolled into
/// |rolled|, the row's new scale and scale inverse returned.
std::pair<double, double> updateScaleRow(tx::FP8ScaleUpdateOp op, const double *history,
                                         double scale, double newAmax, double *rolled,
                                         int64_t length, const ExecutorOptions &options) {
  Type f32 = Float32Type::get(op.getContext());
  auto r32 = [&](double v) { return roundUnlessF64(f32, v, options); };
  tx::FP8RecipeAttr recipe = op.getRecipe();

  // Newest first: the new amax enters slot 0, the oldest entry drops.
  rolled[0] = newAmax;
  for (int64_t i = 1; i < length; ++i)
    rolled[i] = history[i - 1];

  double amax = newAmax;
  if (recipe.getAmaxCompute() == tx::AmaxCompute::max) {
    // TE's fmaxf reduction from 0: NaN entries are skipped.
    amax = 0.0;
    for (int64_t i = 0; i < length; ++i)
      if (!std::isnan(rolled[i]))
        amax = std::max(amax, rolled[i]);
  }
  // fp8_max * 2^-margin in f32. ldexp takes an int; every margin past 4096
  // underflows to 0 just as that one does.
  int margin = static_cast<int>(std::min<int64_t>(recipe.getMargin(), 4096));
  double scaledMax = r32(std::ldexp(fp8Max(op.getFp8Type()), -margin));
  double newScale = (std::isfinite(amax) && amax > 0.0) ? r32(scaledMax / amax)
                                                        : scale;
  newScale = clampInfiniteScale(newScale);
  // The mirror image: a finite amax near the f32 maximum with a large margin
  // (or a margin past ~150 binades) gives a scale that underflows f32 to a
  // denormal or 0, which would zero every cast and make scale_inv infinite.
  // It becomes the smallest normal f32 instead, whose inverse is finite.
  // (TE does not guard this case; no amax a real tensor produces reaches it
  // at margins below 100.)
  const double smallestNormal = std::numeric_limits<float>::min();
  if (newScale < smallestNormal && !(scale < smallestNormal))
    newScale = smallestNormal;
  return {newScale, r32(1.0 / newScale)};
}

/// tx.fp8_scale_update, one history [L] or N packed rows [N, L]: each row
/// on its own (updateScaleRow).
void evalScaleUpdate(tx::FP8ScaleUpdateOp op, llvm::ArrayRef<const Tensor *> in,
                     const ExecutorOptions &options,
                     llvm::SmallVectorImpl<Tensor> &results) {
  const std::vector<double> &history = in[0]->floats();
  const std::vector<double> &scales = in[1]->floats();
  const std::vector<double> &amaxes = in[2]->floats();
  int64_t length = op.getAmaxHistory().getType().getShape().back();
  Tensor newHistory = makeResult(op, 0);
  Tensor scaleOut = makeResult(op, 1), scaleInvOut = makeResult(op, 2);
  for (size_t row = 0; row < scales.size(); ++row) {
    auto [scale, scaleInv] =
        updateScaleRow(op, history.data() + row * length, scales[row], amaxes[row],
                       newHistory.floats().data() + row * length, length, options);
    scaleOut.floats()[row] = scale;
    scaleInvOut.floats()[row] = scaleInv;
  }
  results.push_back(std::move(newHistory));
  results.push_back(std::move(scaleOut));
  results.push_back(std::move(scaleInvOut));
}

void evalCurrentScale(tx::FP8CurrentScaleOp op, const Tensor &amaxTensor,
                      const ExecutorOptions &options,
                      llvm::SmallVectorImpl<Tensor> &results) {
  Type f32 = Float32Type::get(op.getContext());
  auto r32 = [&](double v) { return roundUnlessF64(f32, v, options); };
  double amax = amaxTensor.floats()[0];
  double scale = (std::isfinite(amax) && amax > 0.0)
                     ? r32(fp8Max(op.getFp8Type()) / amax)
                     : 1.0;
  scale = clampInfiniteScale(scale);
  Tensor scaleOut = makeResult(op, 0), scaleInvOut = makeResult(op, 1);
  scaleOut.floats()[0] = scale;
  scaleInvOut.floats()[0] = r32(1.0 / scale);
  results.push_back(std::move(scaleOut));
  results.push_back(std::move(scaleInvOut));
}

/// Batched i-k-j loops as in LinalgOps.cpp: FP8 products are exact in
/// double, the sum is accumulated in double and scaled once at the end.
Tensor evalFP8Matmul(Operation *op, const Tensor &lhs, const Tensor &rhs,
                     double lhsScaleInv, double rhsScaleInv) {
  Tensor result = makeResult(op);
  llvm::ArrayRef<int64_t> ls = lhs.getShape(), rs = rhs.getShape();
  int64_t m = ls[ls.size() - 2], k = ls.back(), n = rs.back();
  llvm::ArrayRef<int64_t> lb = ls.drop_back(2), rb = rs.drop_back(2);
  llvm::SmallVector<int64_t> batch = *tx::broadcastShapes(lb, rb);
  std::vector<int64_t> lIndex = broadcastIndices(lb, batch);
  std::vector<int64_t> rIndex = broadcastIndices(rb, batch);
  const double *a = lhs.floats().data(), *b = rhs.floats().data();
  double *out = result.floats().data();
  for (size_t bi = 0; bi < lIndex.size(); ++bi) {
    const double *ab = a + lIndex[bi] * m * k, *bb = b + rIndex[bi] * k * n;
    double *ob = out + bi * m * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t kk = 0; kk < k; ++kk) {
        double av = ab[i * k + kk];
        for (int64_t j = 0; j < n; ++j)
          ob[i * n + j] += av * bb[kk * n + j];
      }
  }
  for (double &v : result.floats())
    v = v * lhsScaleInv * rhsScaleInv;
  return result;
}

} // namespace

llvm::Expected<bool> mlir::txopt::reference::evalPrecisionOp(Operation *op,
                                                             const KernelArgs &args) {
  auto &in = args.operands;
  auto &results = args.results;
  if (isa<tx::AmaxOp>(op)) {
    results.push_back(evalAmax(op, *in[0]));
    return true;
  }
  if (isa<tx::QuantizeOp, tx::DequantizeOp>(op)) {
    results.push_back(
        evalScaledCast(op, *in[0], in[1]->floats()[0], args.options));
    return true;
  }
  if (auto update = dyn_cast<tx::FP8ScaleUpdateOp>(op)) {
    evalScaleUpdate(update, in, args.options, results);
    return true;
  }
  if (auto site = dyn_cast<tx::FP8SiteOp>(op)) {
    Tensor result = makeResult(op);
    result.floats()[0] = in[0]->floats()[static_cast<size_t>(site.getIndex())];
    results.push_back(std::move(result));
    return true;
  }
  if (auto current = dyn_cast<tx::FP8CurrentScaleOp>(op)) {
    evalCurrentScale(current, *in[0], args.options, results);
    return true;
  }
  if (isa<tx::FP8MatmulOp>(op)) {
    results.push_back(evalFP8Matmul(op, *in[0], *in[1], in[2]->floats()[0],
                                    in[3]->floats()[0]));
    return true;
  }
  return false;
}
