//===- ReductionOps.cpp - reductions, scans, softmax, norms, cross-entropy ===//
//
// SPDX-License-Identifier: Apache-2.0
// Everything here accumulates in double (int64 for integer sums), in index
// order, and rounds only the op's results: a reduction of f32 values is
// therefore usually the correctly rounded exact sum, which is what the
// f32-accumulating kernels it is compared with approximate.
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"

#include "txopt/Dialect/Tx/IR/TxOps.h"

#include "llvm/ADT/SmallSet.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::reference;

namespace {

enum class ReduceKind { Sum, Mean, Max };

Tensor evalReduce(Operation *op, const Tensor &input, llvm::ArrayRef<int64_t> axes,
                  ReduceKind kind) {
  Tensor result = makeResult(op);
  int64_t rank = input.getRank();
  llvm::SmallSet<int64_t, 8> reduced;
  for (int64_t a : axes)
    reduced.insert(*tx::normalizeAxis(a, rank));
  // The result shape with reduced dims kept as 1: every input element
  // broadcasts from exactly one of its elements.
  llvm::SmallVector<int64_t, 4> kept;
  int64_t count = 1;
  for (int64_t d = 0; d < rank; ++d) {
    bool r = axes.empty() || reduced.contains(d);
    kept.push_back(r ? 1 : input.getShape()[d]);
    if (r)
      count *= input.getShape()[d];
  }
  std::vector<int64_t> target = broadcastIndices(kept, input.getShape());
  int64_t n = result.getNumElements(), total = input.getNumElements();
  if (input.isFloat()) {
    std::vector<double> acc(n, kind == ReduceKind::Max
                                   ? -std::numeric_limits<double>::infinity()
                                   : 0.0);
    for (int64_t i = 0; i < total; ++i) {
      double v = input.floats()[i];
      double &a = acc[target[i]];
      if (kind != ReduceKind::Max)
        a += v;
      else if (std::isnan(v) || v > a) // NaN propagates
        a = std::isnan(a) ? a : v;
    }
    for (int64_t i = 0; i < n; ++i)
      result.floats()[i] = kind == ReduceKind::Mean ? acc[i] / count : acc[i];
    return result;
  }
  std::vector<int64_t> acc(n, kind == ReduceKind::Max
                                  ? std::numeric_limits<int64_t>::min()
                                  : 0);
  for (int64_t i = 0; i < total; ++i) {
    int64_t v = input.ints()[i];
    int64_t &a = acc[target[i]];
    if (kind == ReduceKind::Max)
      a = std::max(a, v);
    else
      a = static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(v));
  }
  for (int64_t i = 0; i < n; ++i) // integer mean truncates, as onnxruntime
    result.ints()[i] = kind == ReduceKind::Mean && count ? acc[i] / count : acc[i];
  return result;
}

/// Splits |shape| at |axis| into (outer, axis dim, inner) element counts.
void splitAt(llvm::ArrayRef<int64_t> shape, int64_t axis, int64_t &outer,
             int64_t &dim, int64_t &inner) {
  outer = inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= shape[d];
  dim = shape[axis];
  for (size_t d = axis + 1; d < shape.size(); ++d)
    inner *= shape[d];
}

/// Running sums along the axis, each rounded once by the executor (so an f32
/// entry is the correctly rounded exact prefix sum, which onnxruntime's f32
/// accumulation approximates); integers wrap.
Tensor evalCumSum(tx::CumSumOp op, const Tensor &input) {
  Tensor result = makeResult(op);
  int64_t outer, dim, inner;
  splitAt(input.getShape(), *tx::normalizeAxis(op.getAxis(), input.getRank()),
          outer, dim, inner);
  bool exclusive = op.getExclusive(), reverse = op.getReverse();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t q = 0; q < inner; ++q) {
      double fsum = 0.0;
      uint64_t isum = 0;
      auto store = [&](int64_t i) {
        if (input.isFloat())
          result.floats()[i] = fsum;
        else
          result.ints()[i] = static_cast<int64_t>(isum);
      };
      for (int64_t step = 0; step < dim; ++step) {
        int64_t i = (o * dim + (reverse ? dim - 1 - step : step)) * inner + q;
        // Exclusive sums stop one element short: store before adding.
        if (exclusive)
          store(i);
        if (input.isFloat())
          fsum += input.floats()[i];
        else
          isum += static_cast<uint64_t>(input.ints()[i]);
        if (!exclusive)
          store(i);
      }
    }
  return result;
}

Tensor evalSoftmax(tx::SoftmaxOp op, const Tensor &input) {
  Tensor result = makeResult(op);
  int64_t outer, dim, inner;
  splitAt(input.getShape(), *tx::normalizeAxis(op.getAxis(), input.getRank()),
          outer, dim, inner);
  const double *x = input.floats().data();
  double *y = result.floats().data();
  std::vector<double> e(dim);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t q = 0; q < inner; ++q) {
      int64_t base = o * dim * inner + q;
      double max = -std::numeric_limits<double>::infinity();
      for (int64_t c = 0; c < dim; ++c)
        max = std::max(max, x[base + c * inner]);
      double sum = 0.0;
      for (int64_t c = 0; c < dim; ++c)
        sum += e[c] = std::exp(x[base + c * inner] - max);
      for (int64_t c = 0; c < dim; ++c)
        y[base + c * inner] = e[c] / sum;
    }
  return result;
}

/// y = (x - mean) / sqrt(var + eps) * scale (+ bias) over the dims from
/// |axis| on (|center| = false: RMS, no mean subtracted, var = mean(x^2)).
Tensor normalize(Operation *op, const Tensor &input, int64_t axis,
                 double epsilon, const Tensor &scale, const Tensor *bias,
                 bool center) {
  Tensor result = makeResult(op);
  int64_t rank = input.getRank();
  axis = *tx::normalizeAxis(axis, rank);
  llvm::ArrayRef<int64_t> normShape = input.getShape().drop_front(axis);
  int64_t n = 1;
  for (int64_t d : normShape)
    n *= d;
  int64_t rows = n ? input.getNumElements() / n : 0;
  std::vector<int64_t> si = broadcastIndices(scale.getShape(), normShape);
  std::vector<int64_t> bi;
  if (bias)
    bi = broadcastIndices(bias->getShape(), normShape);
  for (int64_t r = 0; r < rows; ++r) {
    const double *x = input.floats().data() + r * n;
    double *y = result.floats().data() + r * n;
    double mean = 0.0;
    if (center) {
      for (int64_t i = 0; i < n; ++i)
        mean += x[i];
      mean /= n;
    }
    double var = 0.0;
    for (int64_t i = 0; i < n; ++i)
      var += (x[i] - mean) * (x[i] - mean);
    var /= n;
    double inv = 1.0 / std::sqrt(var + epsilon);
    for (int64_t i = 0; i < n; ++i) {
      double v = (x[i] - mean) * inv * scale.floats()[si[i]];
      if (bias)
        v += bias->floats()[bi[i]];
      y[i] = v;
    }
  }
  return result;
}

llvm::Expected<Tensor> evalCrossEntropy(tx::SoftmaxCrossEntropyLossOp op,
                                        const Tensor &scores,
                                        const Tensor &labels,
                                        const Tensor *weights) {
  Tensor result = makeResult(op);
  int64_t batch = scores.getShape()[0], classes = scores.getShape()[1];
  int64_t inner = batch != 0 && classes != 0 ? scores.getNumElements() / (batch * classes) : 0;
  bool hasIgnore = op.getIgnoreIndex().has_value();
  int64_t ignoreIndex = op.getIgnoreIndex().value_or(0);
  std::vector<double> loss(batch * inner, 0.0);
  double weightSum = 0.0;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t q = 0; q < inner; ++q) {
      int64_t label = labels.ints()[b * inner + q];
      if (hasIgnore && label == ignoreIndex)
        continue;
      if (label < 0 || label >= classes)
        return llvm::createStringError("label " + std::to_string(label) +
                                       " is out of range [0, " +
                                       std::to_string(classes) + ")");
      const double *x = scores.floats().data() + b * classes * inner + q;
      double max = -std::numeric_limits<double>::infinity();
      for (int64_t c = 0; c < classes; ++c)
        max = std::max(max, x[c * inner]);
      double sum = 0.0;
      for (int64_t c = 0; c < classes; ++c)
        sum += std::exp(x[c * inner] - max);
      double logProb = x[label * inner] - max - std::log(sum);
      double w = weights ? weights->floats()[label] : 1.0;
      loss[b * inner + q] = -w * logProb;
      weightSum += w;
    }
  switch (op.getReduction()) {
  case tx::LossReduction::none:
    result.floats() = std::move(loss);
    break;
  case tx::LossReduction::sum:
  case tx::LossReduction::mean: {
    double total = 0.0;
    for (double l : loss)
      total += l;
    // mean over no counted position is 0 / 0 = NaN, as in PyTorch.
    result.floats()[0] = op.getReduction() == tx::LossReduction::sum
                             ? total
                             : total / weightSum;
    break;
  }
  }
  return result;
}

} // namespace

llvm::Expected<bool> mlir::txopt::reference::evalReductionOp(
    Operation *op, const KernelArgs &args) {
  auto &in = args.operands;
  auto &results = args.results;
  if (auto r = dyn_cast<tx::ReduceSumOp>(op)) {
    results.push_back(evalReduce(op, *in[0], r.getAxes(), ReduceKind::Sum));
    return true;
  }
  if (auto r = dyn_cast<tx::ReduceMeanOp>(op)) {
    results.push_back(evalReduce(op, *in[0], r.getAxes(), ReduceKind::Mean));
    return true;
  }
  if (auto r = dyn_cast<tx::ReduceMaxOp>(op)) {
    results.push_back(evalReduce(op, *in[0], r.getAxes(), ReduceKind::Max));
    return true;
  }
  if (auto cumsum = dyn_cast<tx::CumSumOp>(op)) {
    results.push_back(evalCumSum(cumsum, *in[0]));
    return true;
  }
  if (auto softmax = dyn_cast<tx::SoftmaxOp>(op)) {
    results.push_back(evalSoftmax(softmax, *in[0]));
    return true;
  }
  if (auto ln = dyn_cast<tx::LayerNormalizationOp>(op)) {
    results.push_back(normalize(op, *in[0], ln.getAxis(),
                                ln.getEpsilon().convertToDouble(), *in[1],
                                in.size() > 2 ? in[2] : nullptr, /*center=*/true));
    return true;
  }
  if (auto rms = dyn_cast<tx::RMSNormalizationOp>(op)) {
    results.push_back(normalize(op, *in[0], rms.getAxis(),
                                rms.getEpsilon().convertToDouble(), *in[1],
                                nullptr, /*center=*/false));
    return true;
  }
  if (auto loss = dyn_cast<tx::SoftmaxCrossEntropyLossOp>(op)) {
    auto result = evalCrossEntropy(loss, *in[0], *in[1],
                                   in.size() > 2 ? in[2] : nullptr);
    if (!result)
      return result.takeError();
    results.push_back(std::move(*result));
    return true;
  }
  return false;
}
