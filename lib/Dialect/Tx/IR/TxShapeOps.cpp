//===- TxShapeOps.cpp - indexing and shape tx ops -------------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// Verifiers, result-type inference and folders of the indexing and shape tx ops; inference
// follows the ONNX operator specification (see TxOps.cpp).
//
//===----------------------------------------------------------------------===//

#include "TxOpsCommon.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/Support/CheckedArithmetic.h"

#include <cmath>

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::tx;
using namespace mlir::txopt::tx::detail;

//===----------------------------------------------------------------------===//
// GatherOp / GatherElementsOp
//===----------------------------------------------------------------------===//

LogicalResult GatherOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  if (failed(checkStaticOperands(loc, adaptor.getOperands())))
    return failure();
  auto dataType = tensorType(adaptor.getData());
  int64_t rank = dataType.getRank();
  int64_t rawAxis = adaptor.getAxis();
  auto axis = normalizeAxis(rawAxis, rank);
  if (failed(axis))
    return inferError(loc, "expected axis in [", -rank, ", ", rank,
                      "), but got ", rawAxis);
  SmallVector<int64_t> shape(dataType.getShape().take_front(*axis));
  llvm::append_range(shape, tensorType(adaptor.getIndices()).getShape());
  llvm::append_range(shape, dataType.getShape().drop_front(*axis + 1));
  inferred.push_back(RankedTensorType::get(shape, dataType.getElementType()));
  return success();
}

LogicalResult GatherElementsOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  if (failed(checkStaticOperands(loc, adaptor.getOperands())))
    return failure();
  auto dataType = tensorType(adaptor.getData());
  auto indicesType = tensorType(adaptor.getIndices());
  int64_t rank = dataType.getRank();
  if (rank != indicesType.getRank())
    return inferError(loc, "expected indices of rank ", rank, ", but got ",
                      indicesType.getRank());
  int64_t rawAxis = adaptor.getAxis();
  auto axis = normalizeAxis(rawAxis, rank);
  if (failed(axis))
    return inferError(loc, "expected axis in [", -rank, ", ", rank,
                      "), but got ", rawAxis);
  for (int64_t d = 0; d < rank; ++d)
    if (d != *axis && indicesType.getDimSize(d) > dataType.getDimSize(d))
      return inferError(loc, "expected indices dim ", d, " of at most ",
                        dataType.getDimSize(d), ", but got ",
                        indicesType.getDimSize(d));
  inferred.push_back(
      RankedTensorType::get(indicesType.getShape(), dataType.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// GatherNDOp
//===----------------------------------------------------------------------===//

FailureOr<SmallVector<int64_t>> tx::gatherNDShape(ArrayRef<int64_t> data,
                                                  ArrayRef<int64_t> indices,
                                                  int64_t batchDims,
                                                  std::string &error) {
  int64_t r = data.size(), q = indices.size();
  // (C1) Also guarantees both ranks are at least 1, so `k` exists.
  if (batchDims < 0 || batchDims >= std::min(q, r)) {
    error = "expected batch_dims in [0, " + std::to_string(std::min(q, r)) +
            "), but got " + std::to_string(batchDims);
    return failure();
  }
  // (C2)
  if (indices.take_front(batchDims) != data.take_front(batchDims)) {
    error = "expected the first " + std::to_string(batchDims) +
            " dims of indices and data to match, but got " +
            formatShape(indices) + " and " + formatShape(data);
    return failure();
  }
  // (C3)
  int64_t k = indices.back();
  if (k < 1 || k > r - batchDims) {
    error = "expected index tuples of length in [1, " +
            std::to_string(r - batchDims) + "], but got " + std::to_string(k);
    return failure();
  }
  SmallVector<int64_t> shape(indices.drop_back());
  llvm::append_range(shape, data.drop_front(batchDims + k));
  return shape;
}

LogicalResult GatherNDOp::inferReturnTypes(MLIRContext *,
                                           std::optional<Location> loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &inferred) {
  if (failed(checkStaticOperands(loc, adaptor.getOperands())))
    return failure();
  auto dataType = tensorType(adaptor.getData());
  std::string error;
  auto shape =
      gatherNDShape(dataType.getShape(),
                    tensorType(adaptor.getIndices()).getShape(),
                    static_cast<int64_t>(adaptor.getBatchDims()), error);
  if (failed(shape))
    return inferError(loc, error);
  inferred.push_back(RankedTensorType::get(*shape, dataType.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// ReshapeOp / ExpandOp / TransposeOp
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  auto in = getInput().getType(), out = getType();
  if (in.getElementType() != out.getElementType())
    return emitOpError("expected result element type ")
           << in.getElementType() << ", but got " << out.getElementType();
  if (in.getNumElements() != out.getNumElements())
    return emitOpError("expected ")
           << in.getNumElements() << " result elements, but got "
           << out.getNumElements();
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  if (auto dense = dyn_cast_or_null<DenseElementsAttr>(adaptor.getInput()))
    return dense.reshape(cast<ShapedType>(getType()));
  return {};
}

LogicalResult ExpandOp::verify() {
  auto in = getInput().getType(), out = getType();
  if (in.getElementType() != out.getElementType())
    return emitOpError("expected result element type ")
           << in.getElementType() << ", but got " << out.getElementType();
  auto shape = broadcastShapes(in.getShape(), out.getShape());
  if (failed(shape) || ArrayRef<int64_t>(*shape) != out.getShape())
    return emitOpError("expected input shape ")
           << formatShape(in.getShape()) << " to broadcast to "
           << formatShape(out.getShape());
  return success();
}

OpFoldResult ExpandOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  if (auto dense = dyn_cast_or_null<DenseElementsAttr>(adaptor.getInput()))
    if (dense.isSplat())
      return DenseElementsAttr::get(cast<ShapedType>(getType()),
                                    dense.getSplatValue<Attribute>());
  return {};
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  if (failed(checkStaticOperands(loc, adaptor.getOperands())))
    return failure();
  auto type = tensorType(adaptor.getInput());
  ArrayRef<int64_t> perm = adaptor.getPerm();
  if (static_cast<int64_t>(perm.size()) != type.getRank())
    return inferError(loc, "expected a permutation of " +
                               std::to_string(type.getRank()) + " dims, but got " +
                               formatShape(perm));
  llvm::SmallSet<int64_t, 8> seen;
  SmallVector<int64_t> shape;
  for (int64_t p : perm) {
    if (p < 0 || p >= type.getRank() || !seen.insert(p).second)
      return inferError(loc, "expected a permutation of " +
                                 std::to_string(type.getRank()) +
                                 " dims, but got " + formatShape(perm));
    shape.push_back(type.getDimSize(p));
  }
  inferred.push_back(RankedTensorType::get(shape, type.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// SplitOp / SliceOp / ConcatOp
//===----------------------------------------------------------------------===//

LogicalResult SplitOp::verify() {
  auto type = getInput().getType();
  int64_t rawAxis = getAxis();
  auto axis = normalizeAxis(rawAxis, type.getRank());
  if (failed(axis))
    return emitOpError("expected axis within rank ")
           << type.getRank() << ", but got " << rawAxis;
  if (getResults().empty())
    return emitOpError("expected at least one result");
  int64_t total = 0;
  for (auto [index, result] : llvm::enumerate(getResults())) {
    auto resultType = cast<RankedTensorType>(result.getType());
    if (resultType.getRank() != type.getRank() ||
        resultType.getElementType() != type.getElementType())
      return emitOpError("expected result #")
             << index << " of rank " << type.getRank() << " and element type "
             << type.getElementType() << ", but got " << resultType;
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (d != *axis && resultType.getDimSize(d) != type.getDimSize(d))
        return emitOpError("expected result dim ")
               << d << " to be " << type.getDimSize(d) << ", but got "
               << resultType.getDimSize(d);
    // Both terms are at most INT64_MAX: stop at the first excess instead of
    // letting a sum of huge pieces overflow.
    total += std::min(resultType.getDimSize(*axis),
                      type.getDimSize(*axis) + 1 - total);
    if (total > type.getDimSize(*axis))
      break;
  }
  if (total != type.getDimSize(*axis))
    return emitOpError("expected the pieces to sum to ")
           << type.getDimSize(*axis) << " along axis " << *axis << ", but got "
           << (total > type.getDimSize(*axis) ? "more" : std::to_string(total));
  return success();
}

/// ONNX Slice semantics for one axis: (offset, size) after clamping. Never
/// overflows, whatever the attribute values: exporters write INT64_MAX and
/// INT64_MIN for "to the end" and steps can be as extreme.
static std::pair<int64_t, int64_t> sliceRange(int64_t dim, int64_t start,
                                              int64_t end, int64_t step) {
  // Adding dim (>= 0) to a negative value cannot overflow.
  if (start < 0)
    start += dim;
  if (end < 0)
    end += dim;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    if (end <= start)
      return {start, 0};
    // ceil((end - start) / step) without forming end - start + step - 1.
    return {start, (end - start - 1) / step + 1};
  }
  if (dim == 0) // [0, dim - 1] would be an empty clamp range.
    return {0, 0};
  start = std::clamp<int64_t>(start, 0, dim - 1);
  end = std::clamp<int64_t>(end, -1, dim - 1);
  if (start <= end)
    return {start, 0};
  // -step overflows for INT64_MIN; the unsigned magnitude does not.
  uint64_t magnitude = -static_cast<uint64_t>(step);
  return {start, static_cast<int64_t>(
                     static_cast<uint64_t>(start - end - 1) / magnitude + 1)};
}

/// Validates a slice's attribute lists; fills per-dim offsets/sizes/strides.
static LogicalResult
computeSlice(std::optional<Location> loc, ArrayRef<int64_t> shape,
             ArrayRef<int64_t> starts, ArrayRef<int64_t> ends,
             ArrayRef<int64_t> axes, ArrayRef<int64_t> steps,
             SmallVectorImpl<int64_t> &offsets, SmallVectorImpl<int64_t> &sizes,
             SmallVectorImpl<int64_t> &strides) {
  if (starts.size() != ends.size() || starts.size() != axes.size() ||
      starts.size() != steps.size())
    return inferError(loc,
                      "expected starts, ends, axes and steps of one length, "
                      "but got ",
                      starts.size(), ", ", ends.size(), ", ", axes.size(),
                      " and ", steps.size());
  int64_t rank = shape.size();
  offsets.assign(rank, 0);
  sizes.assign(shape.begin(), shape.end());
  strides.assign(rank, 1);
  llvm::SmallSet<int64_t, 8> seen;
  for (size_t i = 0; i < axes.size(); ++i) {
    auto axis = normalizeAxis(axes[i], rank);
    if (failed(axis) || !seen.insert(*axis).second)
      return inferError(loc, "expected distinct axes within rank " +
                                 std::to_string(rank) + ", but got " +
                                 formatShape(axes));
    if (steps[i] == 0)
      return inferError(loc, "expected non-zero steps, but got " +
                                 formatShape(steps));
    auto [offset, size] = sliceRange(shape[*axis], starts[i], ends[i], steps[i]);
    offsets[*axis] = offset;
    sizes[*axis] = size;
    strides[*axis] = steps[i];
  }
  return success();
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  if (failed(checkStaticOperands(loc, adaptor.getOperands())))
    return failure();
  auto type = tensorType(adaptor.getInput());
  SmallVector<int64_t> offsets, sizes, strides;
  if (failed(computeSlice(loc, type.getShape(), adaptor.getStarts(),
                          adaptor.getEnds(), adaptor.getAxes(),
                          adaptor.getSteps(), offsets, sizes, strides)))
    return failure();
  inferred.push_back(RankedTensorType::get(sizes, type.getElementType()));
  return success();
}

void SliceOp::getNormalizedRanges(SmallVectorImpl<int64_t> &offsets,
                                  SmallVectorImpl<int64_t> &sizes,
                                  SmallVectorImpl<int64_t> &strides) {
  // The verifier has run inference already, so this cannot fail.
  (void)computeSlice(std::nullopt, getInput().getType().getShape(), getStarts(),
                     getEnds(), getAxes(), getSteps(), offsets, sizes, strides);
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  if (failed(checkStaticOperands(loc, adaptor.getOperands())))
    return failure();
  if (adaptor.getInputs().empty())
    return inferError(loc, "expected at least one input");
  auto first = tensorType(adaptor.getInputs().front());
  int64_t rawAxis = adaptor.getAxis();
  auto axis = normalizeAxis(rawAxis, first.getRank());
  if (failed(axis))
    return inferError(loc, "expected axis within rank ", first.getRank(),
                      ", but got ", rawAxis);
  SmallVector<int64_t> shape(first.getShape());
  shape[*axis] = 0;
  for (Value input : adaptor.getInputs()) {
    auto type = tensorType(input);
    if (type.getRank() != first.getRank() ||
        type.getElementType() != first.getElementType())
      return inferError(loc,
                        "expected inputs of one rank and element type, but "
                        "got ",
                        first, " and ", type);
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (d != *axis && type.getDimSize(d) != first.getDimSize(d))
        return inferError(loc, "expected inputs to agree on dim " +
                                   std::to_string(d) + ", but got " +
                                   formatShape(first.getShape()) + " and " +
                                   formatShape(type.getShape()));
    std::optional<int64_t> sum =
        llvm::checkedAdd(shape[*axis], type.getDimSize(*axis));
    if (!sum)
      return inferError(loc, "expected a concatenated dim that fits in 64 "
                             "bits");
    shape[*axis] = *sum;
  }
  inferred.push_back(RankedTensorType::get(shape, first.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// SqueezeOp / UnsqueezeOp / PadOp
//===----------------------------------------------------------------------===//

LogicalResult SqueezeOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  if (failed(checkStaticOperands(loc, adaptor.getOperands())))
    return failure();
  auto type = tensorType(adaptor.getInput());
  llvm::SmallSet<int64_t, 8> drop;
  for (int64_t a : adaptor.getAxes()) {
    auto axis = normalizeAxis(a, type.getRank());
    if (failed(axis))
      return inferError(loc, "expected axes within rank " +
                                 std::to_string(type.getRank()) + ", but got " +
                                 std::to_string(a));
    if (type.getDimSize(*axis) != 1)
      return inferError(loc, "expected dim " + std::to_string(*axis) +
                                 " to be 1, but got " +
                                 std::to_string(type.getDimSize(*axis)));
    drop.insert(*axis);
  }
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < type.getRank(); ++d) {
    bool squeeze = adaptor.getAxes().empty() ? type.getDimSize(d) == 1
                                             : drop.contains(d);
    if (!squeeze)
      shape.push_back(type.getDimSize(d));
  }
  inferred.push_back(RankedTensorType::get(shape, type.getElementType()));
  return success();
}

LogicalResult UnsqueezeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  if (failed(checkStaticOperands(loc, adaptor.getOperands())))
    return failure();
  auto type = tensorType(adaptor.getInput());
  int64_t rank = type.getRank() + adaptor.getAxes().size();
  llvm::SmallSet<int64_t, 8> insert;
  for (int64_t a : adaptor.getAxes()) {
    auto axis = normalizeAxis(a, rank);
    if (failed(axis) || !insert.insert(*axis).second)
      return inferError(loc, "expected distinct axes within rank " +
                                 std::to_string(rank) + ", but got " +
                                 formatShape(adaptor.getAxes()));
  }
  SmallVector<int64_t> shape;
  auto dims = type.getShape();
  for (int64_t d = 0, next = 0; d < rank; ++d)
    shape.push_back(insert.contains(d) ? 1 : dims[next++]);
  inferred.push_back(RankedTensorType::get(shape, type.getElementType()));
  return success();
}

LogicalResult PadOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &inferred) {
  if (failed(checkStaticOperands(loc, adaptor.getOperands())))
    return failure();
  auto type = tensorType(adaptor.getInput());
  int64_t rank = type.getRank();
  ArrayRef<int64_t> pads = adaptor.getPads();
  if (static_cast<int64_t>(pads.size()) != 2 * rank)
    return inferError(loc, "expected ", 2 * rank, " pads, but got ",
                      static_cast<int64_t>(pads.size()));
  PadMode mode = adaptor.getMode();
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t dim = type.getDimSize(d), begin = pads[d], end = pads[d + rank];
    // Negative pads crop first, together at most the whole dim. (Checked
    // arithmetic: a pad can be INT64_MIN.)
    std::optional<int64_t> extent = llvm::checkedAdd(dim, std::min<int64_t>(begin, 0));
    if (extent)
      extent = llvm::checkedAdd(*extent, std::min<int64_t>(end, 0));
    if (!extent || *extent < 0)
      return inferError(loc, "expected pads ", formatShape({begin, end}),
                        " to crop at most ", dim, " elements of dim ", d);
    // Non-constant modes read the cropped input to fill the border.
    int64_t maxPad = std::numeric_limits<int64_t>::max();
    if (mode == PadMode::edge)
      maxPad = *extent > 0 ? maxPad : 0;
    else if (mode == PadMode::reflect)
      maxPad = std::max<int64_t>(*extent - 1, 0);
    else if (mode == PadMode::wrap)
      maxPad = *extent;
    if (begin > maxPad || end > maxPad)
      return inferError(loc, "expected '", stringifyPadMode(mode),
                        "' pads of at most ", maxPad, " on dim ", d,
                        ", but got ", formatShape({begin, end}));
    std::optional<int64_t> size =
        llvm::checkedAdd(*extent, std::max<int64_t>(begin, 0));
    if (size)
      size = llvm::checkedAdd(*size, std::max<int64_t>(end, 0));
    if (!size)
      return inferError(loc, "expected a padded dim ", d,
                        " that fits in 64 bits, but got pads ",
                        formatShape({begin, end}));
    shape.push_back(*size);
  }
  inferred.push_back(RankedTensorType::get(shape, type.getElementType()));
  return success();
}
