//===- ShapeImporters.cpp - ONNX shape manipulation ops -------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// Reshape, Flatten, Expand, Transpose, Split, Slice, Concat, Squeeze,
// Unsqueeze, Pad and Trilu: the ops whose shape operands (Reshape's shape,
// Slice's starts/ends/axes/steps, Split's sizes, Pad's pads, Trilu's k)
// must fold to constants, since tx shapes are static. Split out of
// ONNXOpImporters.cpp, which keeps the elementwise, linear-algebra and
// indexing mappings and the registry.
//
//===----------------------------------------------------------------------===//

#include "ImporterInternal.h"

#include "txopt/Dialect/Tx/IR/TxOps.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/CheckedArithmetic.h"

#include <limits>
#include <type_traits>

using namespace mlir;
using namespace mlir::txopt;

namespace mlir::txopt::onnx_import {

/// ONNX Reshape's target: 0 copies the input dim (unless allowzero), one -1
/// is inferred from the element count.
LogicalResult importReshape(NodeImporter &n) {
  if (failed(n.expectInputs(2, 2)))
    return failure();
  auto shape = n.constantInts(1, "the shape operand");
  auto allowZero = n.opset >= 14 ? n.attrInt("allowzero", 0) : FailureOr<int64_t>(0);
  if (failed(shape) || failed(allowZero))
    return failure();
  RankedTensorType in = n.type(0);
  llvm::SmallVector<int64_t> dims;
  std::optional<size_t> inferred;
  int64_t known = 1;
  for (auto [i, d] : llvm::enumerate(*shape)) {
    if (d == -1) {
      if (inferred)
        return n.fail("the shape operand " + tx::formatShape(*shape) +
                      " has more than one -1");
      inferred = i;
      dims.push_back(1);
      continue;
    }
    if (d == 0 && !*allowZero) {
      if (i >= static_cast<size_t>(in.getRank()))
        return n.fail("the shape operand " + tx::formatShape(*shape) +
                      " copies dim " + std::to_string(i) +
                      " (0), but the input has rank " +
                      std::to_string(in.getRank()));
      d = in.getDimSize(i);
    }
    if (d < 0)
      return n.fail("the shape operand " + tx::formatShape(*shape) +
                    " has a negative dim");
    dims.push_back(d);
  }
  if (!checkedNumElements(dims))
    return n.fail("the shape operand " + tx::formatShape(*shape) +
                  " has more than 2^40 elements");
  for (int64_t d : dims)
    known *= d;
  if (inferred) {
    if (known == 0 || in.getNumElements() % known != 0)
      return n.fail("cannot reshape " + tx::formatShape(in.getShape()) +
                    " to " + tx::formatShape(*shape));
    dims[*inferred] = in.getNumElements() / known;
  } else if (known != in.getNumElements()) {
    return n.fail("cannot reshape " + tx::formatShape(in.getShape()) +
                  " (" + std::to_string(in.getNumElements()) + " elements) to " +
                  tx::formatShape(dims));
  }
  return setOne(n, n.createOne<tx::ReshapeOp>({n.input(0)}, {}, in.clone(dims)));
}

/// Flatten is a reshape to [prod(dims[:axis]), prod(dims[axis:])].
LogicalResult importFlatten(NodeImporter &n) {
  auto axis = n.attrInt("axis", 1);
  if (failed(n.expectInputs(1, 1)) || failed(axis))
    return failure();
  RankedTensorType in = n.type(0);
  int64_t rank = in.getRank(), a = *axis;
  if (a < -rank || a > rank)
    return n.fail("axis " + std::to_string(a) + " is out of range for rank " +
                  std::to_string(rank));
  if (a < 0)
    a += rank;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < rank; ++i)
    (i < a ? outer : inner) *= in.getDimSize(i);
  return setOne(n, n.createOne<tx::ReshapeOp>({n.input(0)}, {},
                                              in.clone({outer, inner})));
}

LogicalResult importExpand(NodeImporter &n) {
  if (failed(n.expectInputs(2, 2)))
    return failure();
  auto shape = n.constantInts(1, "the shape operand");
  if (failed(shape))
    return failure();
  if (llvm::any_of(*shape, [](int64_t d) { return d < 0; }))
    return n.fail("the shape operand " + tx::formatShape(*shape) +
                  " has a negative dim");
  auto result = tx::broadcastShapes(n.type(0).getShape(), *shape);
  if (failed(result))
    return n.fail("cannot expand " + tx::formatShape(n.type(0).getShape()) +
                  " to " + tx::formatShape(*shape));
  if (!checkedNumElements(*result))
    return n.fail("the result shape " + tx::formatShape(*result) +
                  " has more than 2^40 elements");
  return setOne(n, n.createOne<tx::ExpandOp>({n.input(0)}, {},
                                             n.type(0).clone(*result)));
}

LogicalResult importTranspose(NodeImporter &n) {
  auto perm = n.attrInts("perm");
  if (failed(n.expectInputs(1, 1)) || failed(perm))
    return failure();
  llvm::SmallVector<int64_t> permutation;
  if (*perm) {
    permutation = **perm;
  } else {
    // The default reverses the dims.
    for (int64_t d = n.type(0).getRank() - 1; d >= 0; --d)
      permutation.push_back(d);
  }
  return setOne(n, n.createOne<tx::TransposeOp>(
                       {n.input(0)},
                       {n.named("perm", n.builder.getDenseI64ArrayAttr(permutation))}));
}

/// Split sizes come from the `split` attribute (opset < 13), the `split`
/// input (13+), `num_outputs` (18+, last piece smaller) or an even split.
LogicalResult importSplit(NodeImporter &n) {
  auto axisAttr = n.attrInt("axis", 0);
  if (failed(n.expectInputs(1, 2)) || failed(axisAttr))
    return failure();
  RankedTensorType in = n.type(0);
  auto axis = axisFor(n, *axisAttr, in.getRank());
  if (failed(axis))
    return failure();
  int64_t dim = in.getDimSize(*axis);
  int64_t pieces = n.numOutputs();
  if (pieces == 0)
    return n.fail("has no outputs");
  llvm::SmallVector<int64_t> sizes;
  auto numOutputs = n.opset >= 18 ? n.attrOptionalInt("num_outputs")
                                  : FailureOr<std::optional<int64_t>>(std::nullopt);
  if (failed(numOutputs))
    return failure();
  if (n.opset >= 13 && n.has(1)) {
    auto given = n.constantInts(1, "the split operand");
    if (failed(given))
      return failure();
    sizes = *given;
  } else if (n.opset < 13 && n.findAttr("split")) {
    auto given = n.attrInts("split");
    if (failed(given))
      return failure();
    sizes = **given;
  } else if (*numOutputs) {
    if (**numOutputs != pieces)
      return n.fail("num_outputs is " + std::to_string(**numOutputs) +
                    ", but the node has " + std::to_string(pieces) + " outputs");
    int64_t chunk = (dim + pieces - 1) / pieces;
    if (chunk * (pieces - 1) > dim)
      return n.fail("cannot split dim " + std::to_string(dim) + " into " +
                    std::to_string(pieces) + " pieces");
    sizes.assign(pieces - 1, chunk);
    sizes.push_back(dim - chunk * (pieces - 1));
  } else {
    if (dim % pieces != 0)
      return n.fail("cannot split dim " + std::to_string(dim) + " evenly into " +
                    std::to_string(pieces) + " pieces");
    sizes.assign(pieces, dim / pieces);
  }
  if (static_cast<int64_t>(sizes.size()) != pieces)
    return n.fail("the split sizes " + tx::formatShape(sizes) + " do not match " +
                  std::to_string(pieces) + " outputs");
  int64_t total = 0;
  for (int64_t size : sizes) {
    if (size < 0 || size > dim)
      return n.fail("the split sizes " + tx::formatShape(sizes) +
                    " are invalid for dim " + std::to_string(dim));
    // Each size is at most dim, but enough of them overflow a plain sum.
    total = llvm::checkedAdd(total, size).value_or(
        std::numeric_limits<int64_t>::max());
  }
  if (total != dim)
    return n.fail("the split sizes " + tx::formatShape(sizes) + " sum to " +
                  std::to_string(total) + ", but dim " + std::to_string(*axis) +
                  " is " + std::to_string(dim));
  llvm::SmallVector<Type> types;
  for (int64_t size : sizes) {
    llvm::SmallVector<int64_t> shape(in.getShape());
    shape[*axis] = size;
    types.push_back(in.clone(shape));
  }
  auto results = n.create(tx::SplitOp::getOperationName(), {n.input(0)},
                          {n.named("axis", n.builder.getI64IntegerAttr(*axis))},
                          types);
  if (failed(results))
    return failure();
  for (auto [i, value] : llvm::enumerate(*results))
    n.setResult(i, value);
  return success();
}

/// Slice with constant starts/ends/axes/steps. Values are clamped into
/// [-dim - 1, dim + 1] (steps into [-max(dim, 1), max(dim, 1)]) first: that
/// keeps ONNX's meaning (INT64_MAX means "to the end") while keeping the
/// tx op's size arithmetic far from overflow.
LogicalResult importSlice(NodeImporter &n) {
  if (failed(n.expectInputs(3, 5)))
    return failure();
  RankedTensorType in = n.type(0);
  auto starts = n.constantInts(1, "starts");
  auto ends = n.constantInts(2, "ends");
  if (failed(starts) || failed(ends))
    return failure();
  llvm::SmallVector<int64_t> axes, steps;
  if (n.has(3)) {
    auto given = n.constantInts(3, "axes");
    if (failed(given))
      return failure();
    axes = *given;
  } else {
    for (size_t i = 0; i < starts->size(); ++i)
      axes.push_back(i);
  }
  if (n.has(4)) {
    auto given = n.constantInts(4, "steps");
    if (failed(given))
      return failure();
    steps = *given;
  } else {
    steps.assign(starts->size(), 1);
  }
  if (ends->size() != starts->size() || axes.size() != starts->size() ||
      steps.size() != starts->size())
    return n.fail("starts, ends, axes and steps must have one length, but have " +
                  std::to_string(starts->size()) + ", " +
                  std::to_string(ends->size()) + ", " +
                  std::to_string(axes.size()) + " and " +
                  std::to_string(steps.size()));
  for (size_t i = 0; i < axes.size(); ++i) {
    auto axis = axisFor(n, axes[i], in.getRank(), "slice axis");
    if (failed(axis))
      return failure();
    axes[i] = *axis;
    int64_t dim = in.getDimSize(*axis);
    if (steps[i] == 0)
      return n.fail("step " + std::to_string(i) + " is 0");
    int64_t stepBound = std::max<int64_t>(dim, 1);
    steps[i] = std::clamp(steps[i], -stepBound, stepBound);
    (*starts)[i] = std::clamp((*starts)[i], -dim - 1, dim + 1);
    (*ends)[i] = std::clamp((*ends)[i], -dim - 1, dim + 1);
  }
  Builder &b = n.builder;
  return setOne(n, n.createOne<tx::SliceOp>(
                       {n.input(0)}, {n.named("starts", b.getDenseI64ArrayAttr(*starts)),
                                      n.named("ends", b.getDenseI64ArrayAttr(*ends)),
                                      n.named("axes", b.getDenseI64ArrayAttr(axes)),
                                      n.named("steps", b.getDenseI64ArrayAttr(steps))}));
}

LogicalResult importConcat(NodeImporter &n) {
  const onnx::AttributeProto *attr = n.findAttr("axis");
  auto axis = n.attrInt("axis", 0);
  if (failed(axis))
    return failure();
  if (!attr)
    return n.fail("missing required attribute 'axis'");
  if (n.numInputs() == 0)
    return n.fail("expected at least one input");
  llvm::SmallVector<Value> operands;
  for (unsigned i = 0; i < n.numInputs(); ++i) {
    if (!n.has(i))
      return n.fail("input " + std::to_string(i) + " is missing");
    operands.push_back(n.input(i));
  }
  return setOne(n, n.createOne<tx::ConcatOp>(
                       operands, {n.named("axis", n.builder.getI64IntegerAttr(*axis))}));
}

/// Squeeze/Unsqueeze axes: an attribute before opset 13, an input after.
static FailureOr<std::optional<llvm::SmallVector<int64_t>>>
squeezeAxes(NodeImporter &n) {
  using Result = std::optional<llvm::SmallVector<int64_t>>;
  if (n.opset < 13)
    return n.attrInts("axes");
  if (!n.has(1))
    return Result();
  auto axes = n.constantInts(1, "the axes operand");
  if (failed(axes))
    return failure();
  return Result(*axes);
}

template <typename OpTy>
static LogicalResult importSqueezeLike(NodeImporter &n) {
  if (failed(n.expectInputs(1, 2)))
    return failure();
  auto axes = squeezeAxes(n);
  if (failed(axes))
    return failure();
  if (std::is_same_v<OpTy, tx::UnsqueezeOp> && !*axes)
    return n.fail("Unsqueeze needs axes");
  llvm::SmallVector<int64_t> list = *axes ? **axes : llvm::SmallVector<int64_t>();
  return setOne(n, n.createOne<OpTy>(
                       {n.input(0)},
                       {n.named("axes", n.builder.getDenseI64ArrayAttr(list))}));
}

/// Pad (opset 11+): pads, constant_value and (18+) axes are inputs.
LogicalResult importPad(NodeImporter &n) {
  auto modeName = n.attrString("mode", "constant");
  if (failed(n.expectInputs(1, 4)) || failed(modeName))
    return failure();
  std::optional<tx::PadMode> mode =
      llvm::StringSwitch<std::optional<tx::PadMode>>(*modeName)
          .Case("constant", tx::PadMode::constant)
          .Case("reflect", tx::PadMode::reflect)
          .Case("edge", tx::PadMode::edge)
          .Case("wrap", tx::PadMode::wrap)
          .Default(std::nullopt);
  if (!mode)
    return n.fail("unknown pad mode " + quote(*modeName));
  int64_t rank = n.type(0).getRank();
  FailureOr<std::optional<llvm::SmallVector<int64_t>>> attrPads =
      n.opset < 11 ? n.attrInts("pads")
                   : FailureOr<std::optional<llvm::SmallVector<int64_t>>>(std::nullopt);
  if (failed(attrPads))
    return failure();
  llvm::SmallVector<int64_t> pads;
  if (*attrPads) {
    pads = **attrPads;
  } else {
    if (!n.has(1))
      return n.fail("the pads operand is missing");
    auto given = n.constantInts(1, "the pads operand");
    if (failed(given))
      return failure();
    pads = *given;
  }
  llvm::SmallVector<int64_t> axes;
  if (n.has(3)) {
    auto given = n.constantInts(3, "the axes operand");
    if (failed(given))
      return failure();
    for (int64_t a : *given) {
      auto axis = axisFor(n, a, rank, "pad axis");
      if (failed(axis))
        return failure();
      axes.push_back(*axis);
    }
  } else {
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
  }
  if (pads.size() != 2 * axes.size())
    return n.fail("expected " + std::to_string(2 * axes.size()) +
                  " pads, but got " + std::to_string(pads.size()));
  llvm::SmallVector<int64_t> full(2 * rank, 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    full[axes[i]] = pads[i];
    full[axes[i] + rank] = pads[i + axes.size()];
  }
  // (Not std::abs: INT64_MIN has no absolute value.)
  auto absurd = [](int64_t pad) {
    return pad > kMaxTensorElements || pad < -kMaxTensorElements;
  };
  for (int64_t d = 0; d < rank; ++d)
    if (absurd(full[d]) || absurd(full[d + rank]))
      return n.fail("pads " + tx::formatShape(full) + " are absurdly large");
  double value = 0.0;
  if (n.has(2)) {
    auto given = n.constantScalar(2, "constant_value");
    if (failed(given))
      return failure();
    value = *given;
  }
  Builder &b = n.builder;
  return setOne(n, n.createOne<tx::PadOp>(
                       {n.input(0)},
                       {n.named("pads", b.getDenseI64ArrayAttr(full)),
                        n.named("mode", tx::PadModeAttr::get(n.getContext(), *mode)),
                        n.named("value", b.getF64FloatAttr(value))}));
}

LogicalResult importTrilu(NodeImporter &n) {
  auto upper = n.attrInt("upper", 1);
  if (failed(n.expectInputs(1, 2)) || failed(upper))
    return failure();
  int64_t k = 0;
  if (n.has(1)) {
    auto given = n.constantInts(1, "k");
    if (failed(given))
      return failure();
    if (given->size() != 1)
      return n.fail("k must have one element");
    k = (*given)[0];
  }
  Builder &b = n.builder;
  return setOne(n, n.createOne<tx::TriluOp>(
                       {n.input(0)},
                       {n.named("upper", b.getBoolAttr(*upper != 0)),
                        n.named("k", b.getI64IntegerAttr(k))},
                       n.type(0)));
}

LogicalResult importSqueeze(NodeImporter &n) {
  return importSqueezeLike<tx::SqueezeOp>(n);
}

LogicalResult importUnsqueeze(NodeImporter &n) {
  return importSqueezeLike<tx::UnsqueezeOp>(n);
}

} // namespace mlir::txopt::onnx_import
