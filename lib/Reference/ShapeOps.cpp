//===- ShapeOps.cpp - data movement and tensor creation -------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// Every data-movement op is written as an index map: for each result element
// the linear index of the input element it copies (or -1 for a fill value),
// so one gather loop serves float and integer tensors alike.
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"

#include "txopt/Dialect/Tx/IR/TxOps.h"

#include "llvm/ADT/TypeSwitch.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::reference;

namespace {

/// result[i] = input[map[i]], or |fill| where map[i] < 0.
Tensor gatherMap(Tensor result, const Tensor &input,
                 const std::vector<int64_t> &map, double fill = 0.0) {
  for (int64_t i = 0, n = result.getNumElements(); i < n; ++i) {
    if (map[i] >= 0)
      result.copyElement(i, input, map[i]);
    else if (result.isFloat())
      result.floats()[i] = fill;
    else
      result.ints()[i] = static_cast<int64_t>(fill);
  }
  return result;
}

Tensor evalTranspose(tx::TransposeOp op, const Tensor &input) {
  Tensor result = makeResult(op);
  auto inStrides = stridesOf(input.getShape());
  llvm::SmallVector<int64_t, 4> strides;
  for (int64_t p : op.getPerm())
    strides.push_back(inStrides[p]);
  std::vector<int64_t> map = stridedIndices(result.getShape(), strides, 0);
  return gatherMap(std::move(result), input, map);
}

Tensor evalSlice(tx::SliceOp op, const Tensor &input) {
  llvm::SmallVector<int64_t> offsets, sizes, steps;
  op.getNormalizedRanges(offsets, sizes, steps);
  auto inStrides = stridesOf(input.getShape());
  int64_t base = 0;
  llvm::SmallVector<int64_t, 4> strides;
  for (size_t d = 0; d < offsets.size(); ++d) {
    base += offsets[d] * inStrides[d];
    strides.push_back(steps[d] * inStrides[d]);
  }
  Tensor result = makeResult(op);
  std::vector<int64_t> map = stridedIndices(result.getShape(), strides, base);
  return gatherMap(std::move(result), input, map);
}

/// Copies the slab [offset, offset + size) along |axis| of |input|.
Tensor sliceAlong(Tensor result, const Tensor &input, int64_t axis,
                  int64_t offset) {
  auto inStrides = stridesOf(input.getShape());
  std::vector<int64_t> map =
      stridedIndices(result.getShape(), inStrides, offset * inStrides[axis]);
  return gatherMap(std::move(result), input, map);
}

llvm::Expected<Tensor> evalGather(tx::GatherOp op, const Tensor &data,
                                  const Tensor &indices) {
  Tensor result = makeResult(op);
  int64_t axis = *tx::normalizeAxis(op.getAxis(), data.getRank());
  auto shape = data.getShape();
  int64_t outer = 1, inner = 1, dim = shape[axis];
  for (int64_t d = 0; d < axis; ++d)
    outer *= shape[d];
  for (int64_t d = axis + 1; d < data.getRank(); ++d)
    inner *= shape[d];
  int64_t count = indices.getNumElements();
  std::vector<int64_t> map(result.getNumElements());
  for (int64_t p = 0; p < count; ++p) {
    int64_t index = indices.ints()[p];
    if (index < -dim || index >= dim)
      return llvm::createStringError("index " + std::to_string(index) +
                                     " is out of range [-" + std::to_string(dim) +
                                     ", " + std::to_string(dim) + ")");
    if (index < 0)
      index += dim;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t q = 0; q < inner; ++q)
        map[(o * count + p) * inner + q] = (o * dim + index) * inner + q;
  }
  return gatherMap(std::move(result), data, map);
}

llvm::Expected<Tensor> evalGatherElements(tx::GatherElementsOp op,
                                          const Tensor &data,
                                          const Tensor &indices) {
  Tensor result = makeResult(op);
  int64_t rank = data.getRank();
  int64_t axis = *tx::normalizeAxis(op.getAxis(), rank);
  auto idxShape = indices.getShape();
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && idxShape[d] > data.getShape()[d])
      return llvm::createStringError("indices dim " + std::to_string(d) +
                                     " exceeds the data dim");
  auto map = gatherElementsIndexMap(data.getShape(), indices, axis);
  if (!map)
    return map.takeError();
  return gatherMap(std::move(result), data, *map);
}

llvm::Expected<Tensor> evalGatherND(tx::GatherNDOp op, const Tensor &data,
                                    const Tensor &indices) {
  Tensor result = makeResult(op);
  auto map = gatherNDIndexMap(data.getShape(), indices, op.getBatchDims(),
                              result.getNumElements());
  if (!map)
    return map.takeError();
  return gatherMap(std::move(result), data, *map);
}

Tensor evalConcat(tx::ConcatOp op, llvm::ArrayRef<const Tensor *> inputs) {
  Tensor result = makeResult(op);
  int64_t axis = *tx::normalizeAxis(op.getAxis(), result.getRank());
  auto shape = result.getShape();
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= shape[d];
  for (int64_t d = axis + 1; d < result.getRank(); ++d)
    inner *= shape[d];
  int64_t rowSize = shape[axis] * inner, start = 0;
  for (const Tensor *input : inputs) {
    int64_t chunk = input->getShape()[axis] * inner;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < chunk; ++j)
        result.copyElement(o * rowSize + start + j, *input, o * chunk + j);
    start += chunk;
  }
  return result;
}

/// Source coordinate in the (cropped) input for result coordinate |j| of
/// one dim, or -1 for the constant fill.
int64_t padSource(int64_t j, int64_t dim, int64_t begin, int64_t end,
                  tx::PadMode mode) {
  int64_t lo = std::max<int64_t>(0, -begin);
  int64_t hi = dim - std::max<int64_t>(0, -end);
  int64_t n = hi - lo;
  int64_t c = j - std::max<int64_t>(0, begin); // coordinate in the cropped input
  if (c >= 0 && c < n)
    return lo + c;
  switch (mode) {
  case tx::PadMode::constant:
    return -1;
  case tx::PadMode::edge:
    return lo + std::clamp<int64_t>(c, 0, n - 1);
  case tx::PadMode::reflect: {
    if (n == 1)
      return lo;
    int64_t period = 2 * (n - 1);
    int64_t m = ((c % period) + period) % period;
    return lo + (m < n ? m : period - m);
  }
  case tx::PadMode::wrap:
    return lo + ((c % n) + n) % n;
  }
  return -1;
}

llvm::Expected<Tensor> evalPad(tx::PadOp op, const Tensor &input,
                               const ExecutorOptions &options) {
  Tensor result = makeResult(op);
  int64_t rank = input.getRank();
  auto pads = op.getPads();
  tx::PadMode mode = op.getMode();
  auto inStrides = stridesOf(input.getShape());
  // Per dim: result coordinate -> input offset (or -1).
  std::vector<std::vector<int64_t>> dimMaps(rank);
  for (int64_t d = 0; d < rank; ++d) {
    int64_t dim = input.getShape()[d];
    int64_t cropped = dim - std::max<int64_t>(0, -pads[d]) -
                      std::max<int64_t>(0, -pads[d + rank]);
    bool padded = pads[d] > 0 || pads[d + rank] > 0;
    if (padded && mode != tx::PadMode::constant && cropped <= 0)
      return llvm::createStringError("cannot pad an empty dim in this mode");
    for (int64_t j = 0; j < result.getShape()[d]; ++j) {
      int64_t src = padSource(j, dim, pads[d], pads[d + rank], mode);
      dimMaps[d].push_back(src < 0 ? -1 : src * inStrides[d]);
    }
  }
  std::vector<int64_t> map(result.getNumElements());
  llvm::SmallVector<int64_t, 4> index(rank, 0);
  for (int64_t i = 0, n = result.getNumElements(); i < n; ++i) {
    int64_t linear = 0;
    for (int64_t d = 0; d < rank && linear >= 0; ++d) {
      int64_t offset = dimMaps[d][index[d]];
      linear = offset < 0 ? -1 : linear + offset;
    }
    map[i] = linear;
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++index[d] < result.getShape()[d])
        break;
      index[d] = 0;
    }
  }
  double fill = op.getValue().convertToDouble();
  if (result.isFloat())
    fill = roundUnlessF64(result.getElementType(), fill, options);
  else
    fill = static_cast<double>(wrapToWidth(static_cast<int64_t>(fill),
                                           result.getElementType().getIntOrFloatBitWidth()));
  return gatherMap(std::move(result), input, map, fill);
}

Tensor evalTrilu(tx::TriluOp op, const Tensor &input) {
  Tensor result = makeResult(op);
  auto shape = input.getShape();
  int64_t rows = shape[shape.size() - 2], cols = shape.back();
  int64_t k = op.getK();
  bool upper = op.getUpper();
  std::vector<int64_t> map(result.getNumElements());
  for (int64_t i = 0, n = result.getNumElements(); i < n; ++i) {
    int64_t col = i % cols, row = (i / cols) % rows;
    // col - row cannot overflow; row + k can (k near INT64_MAX).
    bool keep = upper ? col - row >= k : col - row <= k;
    map[i] = keep ? i : -1;
  }
  return gatherMap(std::move(result), input, map);
}

Tensor evalRange(tx::RangeOp op, const Tensor &start, const Tensor &delta,
                 const ExecutorOptions &options) {
  Tensor result = makeResult(op);
  int64_t n = result.getNumElements();
  if (result.isFloat()) {
    // Accumulated in the element type, as ONNX's function body does.
    Type type = result.getElementType();
    double value = start.floats()[0], step = delta.floats()[0];
    for (int64_t i = 0; i < n; ++i) {
      result.floats()[i] = value;
      value = roundUnlessF64(type, value + step, options);
    }
    return result;
  }
  unsigned width = result.getElementType().getIntOrFloatBitWidth();
  int64_t value = start.ints()[0], step = delta.ints()[0];
  for (int64_t i = 0; i < n; ++i) {
    result.ints()[i] = value;
    value = wrapToWidth(static_cast<int64_t>(static_cast<uint64_t>(value) +
                                             static_cast<uint64_t>(step)),
                        width);
  }
  return result;
}

} // namespace

llvm::Expected<bool> mlir::txopt::reference::evalShapeOp(Operation *op,
                                                         const KernelArgs &args) {
  auto &in = args.operands;
  auto &results = args.results;
  // Same elements, new shape.
  if (isa<tx::ReshapeOp, tx::SqueezeOp, tx::UnsqueezeOp>(op)) {
    results.push_back(in[0]->reshaped(makeResult(op).getShape()));
    return true;
  }
  if (isa<tx::ExpandOp>(op)) {
    Tensor result = makeResult(op);
    std::vector<int64_t> map =
        broadcastIndices(in[0]->getShape(), result.getShape());
    results.push_back(gatherMap(std::move(result), *in[0], map));
    return true;
  }
  if (auto split = dyn_cast<tx::SplitOp>(op)) {
    int64_t axis = *tx::normalizeAxis(split.getAxis(), in[0]->getRank());
    int64_t offset = 0;
    for (unsigned i = 0; i < op->getNumResults(); ++i) {
      Tensor piece = makeResult(op, i);
      int64_t size = piece.getShape()[axis];
      results.push_back(sliceAlong(std::move(piece), *in[0], axis, offset));
      offset += size;
    }
    return true;
  }
  if (auto shapeOp = dyn_cast<tx::ShapeOp>(op)) {
    Tensor result = makeResult(op);
    int64_t rank = in[0]->getRank();
    int64_t start = shapeOp.getStart();
    if (start < 0)
      start += rank;
    start = std::clamp<int64_t>(start, 0, rank);
    for (int64_t i = 0; i < result.getNumElements(); ++i)
      result.ints()[i] = in[0]->getShape()[start + i];
    results.push_back(std::move(result));
    return true;
  }
  if (auto cos = dyn_cast<tx::ConstantOfShapeOp>(op)) {
    auto value = Tensor::fromAttr(cos.getValue());
    if (!value)
      return value.takeError();
    Tensor result = makeResult(op);
    std::vector<int64_t> map(result.getNumElements(), 0);
    results.push_back(gatherMap(std::move(result), *value, map));
    return true;
  }
  if (auto range = dyn_cast<tx::RangeOp>(op)) {
    results.push_back(evalRange(range, *in[0], *in[2], args.options));
    return true;
  }

  llvm::Expected<Tensor> result =
      llvm::TypeSwitch<Operation *, llvm::Expected<Tensor>>(op)
          .Case([&](tx::TransposeOp t) { return evalTranspose(t, *in[0]); })
          .Case([&](tx::SliceOp s) { return evalSlice(s, *in[0]); })
          .Case([&](tx::GatherOp g) { return evalGather(g, *in[0], *in[1]); })
          .Case([&](tx::GatherElementsOp g) {
            return evalGatherElements(g, *in[0], *in[1]);
          })
          .Case([&](tx::GatherNDOp g) { return evalGatherND(g, *in[0], *in[1]); })
          .Case([&](tx::ConcatOp c) { return evalConcat(c, in); })
          .Case([&](tx::PadOp p) { return evalPad(p, *in[0], args.options); })
          .Case([&](tx::TriluOp t) { return evalTrilu(t, *in[0]); })
          .Default([](Operation *) { return Tensor(); });
  if (!result)
    return result.takeError();
  if (!result->getElementType())
    return false;
  results.push_back(std::move(*result));
  return true;
}

llvm::Expected<std::vector<int64_t>> mlir::txopt::reference::gatherNDIndexMap(
    llvm::ArrayRef<int64_t> shape, const Tensor &indices, int64_t batchDims,
    int64_t resultElements) {
  int64_t rank = static_cast<int64_t>(shape.size());
  int64_t k = indices.getShape().back();
  auto strides = stridesOf(shape);
  int64_t slice = 1, block = 1, perBatch = 1;
  for (int64_t d = batchDims + k; d < rank; ++d)
    slice *= shape[d];
  for (int64_t d = batchDims; d < rank; ++d)
    block *= shape[d];
  for (int64_t d : indices.getShape().drop_front(batchDims).drop_back())
    perBatch *= d;
  int64_t tuples = k ? indices.getNumElements() / k : 0;
  std::vector<int64_t> map(resultElements);
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t base = (t / perBatch) * block;
    for (int64_t j = 0; j < k; ++j) {
      int64_t dim = shape[batchDims + j], index = indices.ints()[t * k + j];
      if (index < -dim || index >= dim)
        return llvm::createStringError("index " + std::to_string(index) +
                                       " is out of range [-" + std::to_string(dim) +
                                       ", " + std::to_string(dim) + ")");
      base += (index < 0 ? index + dim : index) * strides[batchDims + j];
    }
    for (int64_t s = 0; s < slice; ++s)
      map[t * slice + s] = base + s;
  }
  return map;
}

llvm::Expected<std::vector<int64_t>> mlir::txopt::reference::gatherElementsIndexMap(
    llvm::ArrayRef<int64_t> dataShape, const Tensor &indices, int64_t axis) {
  int64_t rank = dataShape.size();
  auto dataStrides = stridesOf(dataShape);
  auto idxShape = indices.getShape();
  int64_t dim = dataShape[axis];
  std::vector<int64_t> map(indices.getNumElements());
  llvm::SmallVector<int64_t, 4> index(rank, 0);
  for (int64_t i = 0, n = indices.getNumElements(); i < n; ++i) {
    int64_t rest = i;
    for (int64_t d = rank - 1; d >= 0; --d) {
      index[d] = rest % idxShape[d];
      rest /= idxShape[d];
    }
    int64_t k = indices.ints()[i];
    if (k < -dim || k >= dim)
      return llvm::createStringError("index " + std::to_string(k) +
                                     " is out of range [-" + std::to_string(dim) +
                                     ", " + std::to_string(dim) + ")");
    index[axis] = k < 0 ? k + dim : k;
    int64_t linear = 0;
    for (int64_t d = 0; d < rank; ++d)
      linear += index[d] * dataStrides[d];
    map[i] = linear;
  }
  return map;
}
