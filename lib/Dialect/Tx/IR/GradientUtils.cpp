//===- GradientUtils.cpp - what the gradient rules share ------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// The builders of GradientUtils.h and GradientContext's out-of-line member.
//
//===----------------------------------------------------------------------===//

#include "GradientUtils.h"

#include "llvm/ADT/STLExtras.h"

#include <numeric>

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::tx;

Value GradientContext::gOrZeros(unsigned i) {
  if (resultGrads[i])
    return resultGrads[i];
  return gradient::zeros(b, op->getResult(i).getType());
}

namespace mlir::txopt::tx::gradient {

RankedTensorType tensorTypeOf(Value value) {
  return cast<RankedTensorType>(value.getType());
}

Type elementTypeOf(Value value) { return tensorTypeOf(value).getElementType(); }

/// A 0-d constant: broadcasting ops then give the other operand's shape.
Value scalar(ImplicitLocOpBuilder &b, Type elementType, double value) {
  auto type = RankedTensorType::get({}, elementType);
  auto attr = DenseElementsAttr::get(
      type, ArrayRef<Attribute>{FloatAttr::get(elementType, value)});
  return ConstantOp::create(b, cast<ElementsAttr>(attr));
}

Value zeros(ImplicitLocOpBuilder &b, Type type) {
  return ConstantOp::create(b, cast<ElementsAttr>(b.getZeroAttr(type)));
}

Value add(ImplicitLocOpBuilder &b, Value x, Value y) {
  return AddOp::create(b, x, y);
}
Value sub(ImplicitLocOpBuilder &b, Value x, Value y) {
  return SubOp::create(b, x, y);
}
Value mul(ImplicitLocOpBuilder &b, Value x, Value y) {
  return MulOp::create(b, x, y);
}
Value div(ImplicitLocOpBuilder &b, Value x, Value y) {
  return DivOp::create(b, x, y);
}
Value neg(ImplicitLocOpBuilder &b, Value x) { return NegOp::create(b, x); }
Value mulScalar(ImplicitLocOpBuilder &b, Value x, double factor) {
  if (factor == 1.0)
    return x;
  return mul(b, x, scalar(b, elementTypeOf(x), factor));
}

Value reshape(ImplicitLocOpBuilder &b, Value x, ArrayRef<int64_t> shape) {
  auto type = RankedTensorType::get(shape, elementTypeOf(x));
  if (type == x.getType())
    return x;
  return ReshapeOp::create(b, type, x);
}

Value castTo(ImplicitLocOpBuilder &b, Value x, Type elementType) {
  if (elementTypeOf(x) == elementType)
    return x;
  return CastOp::create(
      b, RankedTensorType::get(tensorTypeOf(x).getShape(), elementType), x);
}

/// Broadcasts |x| to |shape| (numpy rules) with tx.expand.
Value expandTo(ImplicitLocOpBuilder &b, Value x, ArrayRef<int64_t> shape) {
  auto type = RankedTensorType::get(shape, elementTypeOf(x));
  if (type == x.getType())
    return x;
  return ExpandOp::create(b, type, x);
}

Value reduceSum(ImplicitLocOpBuilder &b, Value x, ArrayRef<int64_t> axes,
                bool keepDims) {
  return ReduceSumOp::create(b, x, b.getDenseI64ArrayAttr(axes),
                             keepDims ? b.getUnitAttr() : nullptr);
}

Value reduceMean(ImplicitLocOpBuilder &b, Value x, ArrayRef<int64_t> axes,
                 bool keepDims) {
  return ReduceMeanOp::create(b, x, b.getDenseI64ArrayAttr(axes),
                              keepDims ? b.getUnitAttr() : nullptr);
}

/// The adjoint of numpy broadcasting: sums |grad| (shape S) over the dims
/// that broadcasting added or stretched to reach S from |shape|, then
/// reshapes to |shape|. The element type stays that of |grad|.
Value sumToShape(ImplicitLocOpBuilder &b, Value grad, ArrayRef<int64_t> shape) {
  ArrayRef<int64_t> from = tensorTypeOf(grad).getShape();
  int64_t lead = static_cast<int64_t>(from.size()) - shape.size();
  assert(lead >= 0 && "broadcasting never lowers the rank");
  SmallVector<int64_t> axes;
  for (int64_t d = 0; d < static_cast<int64_t>(from.size()); ++d)
    if (d < lead || (shape[d - lead] == 1 && from[d] != 1))
      axes.push_back(d);
  Value result = grad;
  if (!axes.empty())
    result = reduceSum(b, grad, axes, /*keepDims=*/false);
  return reshape(b, result, shape);
}

Value sumToType(ImplicitLocOpBuilder &b, Value grad, Value like) {
  return sumToShape(b, grad, tensorTypeOf(like).getShape());
}

/// Swaps the last two dims (rank >= 2).
Value transposeLast2(ImplicitLocOpBuilder &b, Value x) {
  int64_t rank = tensorTypeOf(x).getRank();
  SmallVector<int64_t> perm(rank);
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[rank - 1], perm[rank - 2]);
  return TransposeOp::create(b, x, b.getDenseI64ArrayAttr(perm));
}

/// Normalized reduction axes (an empty list means every dim).
SmallVector<int64_t> reductionAxes(ArrayRef<int64_t> axes, int64_t rank) {
  SmallVector<int64_t> result;
  if (axes.empty()) {
    result.resize(rank);
    std::iota(result.begin(), result.end(), 0);
    return result;
  }
  for (int64_t a : axes)
    result.push_back(a < 0 ? a + rank : a);
  llvm::sort(result);
  return result;
}

/// |shape| with the dims in |axes| set to 1 (a keep_dims reduction's shape).
SmallVector<int64_t> keepDimsShape(ArrayRef<int64_t> shape,
                                   ArrayRef<int64_t> axes) {
  SmallVector<int64_t> result(shape);
  for (int64_t a : axes)
    result[a] = 1;
  return result;
}

int64_t normalized(int64_t axis, int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}

/// Statistics of norms are accumulated in at least f32.
Type computeTypeFor(Type elementType) {
  if (elementType.getIntOrFloatBitWidth() < 32)
    return Float32Type::get(elementType.getContext());
  return elementType;
}
LogicalResult unsupported(Operation *op, const Twine &what) {
  return emitError(op->getLoc())
         << "no gradient rule for '" << op->getName() << "' " << what;
}

} // namespace mlir::txopt::tx::gradient
