//===- GradientOps.cpp - adjoints of indexing ops, cross-entropy grad -----===//
//
// SPDX-License-Identifier: Apache-2.0
// The gradient-only ops of TxGradOps.td. Scatter-adds accumulate in double
// in index order (deterministic, unlike atomics) and round once.
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"

#include "txopt/Dialect/Tx/IR/TxOps.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::reference;

namespace {

llvm::Error indexOutOfRange(int64_t index, int64_t dim) {
  return llvm::createStringError("index " + std::to_string(index) +
                                 " is out of range [-" + std::to_string(dim) +
                                 ", " + std::to_string(dim) + ")");
}

llvm::Expected<Tensor> evalGatherGrad(tx::GatherGradOp op, const Tensor &grad,
                                      const Tensor &indices) {
  Tensor result = makeResult(op);
  auto shape = result.getShape();
  int64_t axis = op.getAxis();
  int64_t outer = 1, inner = 1, dim = shape[axis];
  for (int64_t d = 0; d < axis; ++d)
    outer *= shape[d];
  for (int64_t d = axis + 1; d < result.getRank(); ++d)
    inner *= shape[d];
  int64_t count = indices.getNumElements();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t p = 0; p < count; ++p) {
      int64_t index = indices.ints()[p];
      if (index < -dim || index >= dim)
        return indexOutOfRange(index, dim);
      if (index < 0)
        index += dim;
      for (int64_t q = 0; q < inner; ++q)
        result.floats()[(o * dim + index) * inner + q] +=
            grad.floats()[(o * count + p) * inner + q];
    }
  return result;
}

llvm::Expected<Tensor> evalGatherElementsGrad(tx::GatherElementsGradOp op,
                                              const Tensor &grad,
                                              const Tensor &indices) {
  Tensor result = makeResult(op);
  auto map = gatherElementsIndexMap(result.getShape(), indices, op.getAxis());
  if (!map)
    return map.takeError();
  for (int64_t i = 0, n = indices.getNumElements(); i < n; ++i)
    result.floats()[(*map)[i]] += grad.floats()[i];
  return result;
}

/// The transpose of tx.gather_nd: each gradient element is added to the
/// data element its forward counterpart read (gatherNDIndexMap).
llvm::Expected<Tensor> evalGatherNDGrad(tx::GatherNDGradOp op,
                                        const Tensor &grad,
                                        const Tensor &indices) {
  Tensor result = makeResult(op);
  auto map = gatherNDIndexMap(result.getShape(), indices, op.getBatchDims(),
                              grad.getNumElements());
  if (!map)
    return map.takeError();
  for (int64_t i = 0, n = grad.getNumElements(); i < n; ++i)
    result.floats()[(*map)[i]] += grad.floats()[i];
  return result;
}

Tensor evalSliceGrad(tx::SliceGradOp op, const Tensor &grad) {
  Tensor result = makeResult(op);
  auto rs = stridesOf(result.getShape());
  int64_t base = 0;
  llvm::SmallVector<int64_t, 4> strides;
  for (int64_t d = 0; d < result.getRank(); ++d) {
    base += op.getOffsets()[d] * rs[d];
    strides.push_back(op.getStrides()[d] * rs[d]);
  }
  std::vector<int64_t> map = stridedIndices(grad.getShape(), strides, base);
  for (int64_t i = 0, n = grad.getNumElements(); i < n; ++i)
    result.floats()[map[i]] = grad.floats()[i];
  return result;
}

llvm::Expected<Tensor> evalCrossEntropyGrad(tx::SoftmaxCrossEntropyGradOp op,
                                            llvm::ArrayRef<const Tensor *> in) {
  const Tensor &grad = *in[0], &scores = *in[1], &labels = *in[2];
  const Tensor *weights = in.size() > 3 ? in[3] : nullptr;
  Tensor result = makeResult(op);
  int64_t batch = scores.getShape()[0], classes = scores.getShape()[1];
  int64_t inner = batch != 0 && classes != 0 ? scores.getNumElements() / (batch * classes) : 0;
  bool hasIgnore = op.getIgnoreIndex().has_value();
  int64_t ignoreIndex = op.getIgnoreIndex().value_or(0);
  tx::LossReduction reduction = op.getReduction();

  std::vector<double> w(batch * inner, 0.0);
  double norm = 0.0;
  for (int64_t i = 0; i < batch * inner; ++i) {
    int64_t label = labels.ints()[i];
    if (hasIgnore && label == ignoreIndex)
      continue;
    if (label < 0 || label >= classes)
      return llvm::createStringError("label " + std::to_string(label) +
                                     " is out of range [0, " +
                                     std::to_string(classes) + ")");
    w[i] = weights ? weights->floats()[label] : 1.0;
    norm += w[i];
  }
  if (reduction != tx::LossReduction::mean)
    norm = 1.0;

  std::vector<double> e(classes);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t q = 0; q < inner; ++q) {
      int64_t pos = b * inner + q;
      if (w[pos] == 0.0)
        continue;
      const double *x = scores.floats().data() + b * classes * inner + q;
      double *y = result.floats().data() + b * classes * inner + q;
      double max = -std::numeric_limits<double>::infinity();
      for (int64_t c = 0; c < classes; ++c)
        max = std::max(max, x[c * inner]);
      double sum = 0.0;
      for (int64_t c = 0; c < classes; ++c)
        sum += e[c] = std::exp(x[c * inner] - max);
      double g = reduction == tx::LossReduction::none ? grad.floats()[pos]
                                                      : grad.floats()[0];
      double scale = g * w[pos] / norm;
      int64_t label = labels.ints()[pos];
      for (int64_t c = 0; c < classes; ++c)
        y[c * inner] = scale * (e[c] / sum - (c == label ? 1.0 : 0.0));
    }
  return result;
}

} // namespace

llvm::Expected<bool> mlir::txopt::reference::evalGradientOp(Operation *op,
                                                            const KernelArgs &args) {
  auto &in = args.operands;
  llvm::Expected<Tensor> result = Tensor();
  if (auto g = dyn_cast<tx::GatherGradOp>(op))
    result = evalGatherGrad(g, *in[0], *in[1]);
  else if (auto g = dyn_cast<tx::GatherElementsGradOp>(op))
    result = evalGatherElementsGrad(g, *in[0], *in[1]);
  else if (auto g = dyn_cast<tx::GatherNDGradOp>(op))
    result = evalGatherNDGrad(g, *in[0], *in[1]);
  else if (auto s = dyn_cast<tx::SliceGradOp>(op))
    result = evalSliceGrad(s, *in[0]);
  else if (auto c = dyn_cast<tx::SoftmaxCrossEntropyGradOp>(op))
    result = evalCrossEntropyGrad(c, in);
  else
    return false;
  if (!result)
    return result.takeError();
  args.results.push_back(std::move(*result));
  return true;
}
