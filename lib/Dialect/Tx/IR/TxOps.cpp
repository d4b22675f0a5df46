//===- TxOps.cpp - tx op verifiers, shape inference and folders -----------===//
//
// SPDX-License-Identifier: Apache-2.0
// Result-type inference follows the ONNX operator specification, so a graph
// that onnxruntime accepts infers the same static shapes here. This file holds
// the generated op classes, the shared helpers, parameters and constants; the
// other primitive op families are in TxElementwiseOps.cpp, TxShapeOps.cpp and
// TxMathOps.cpp.
//
//===----------------------------------------------------------------------===//

#include "txopt/Dialect/Tx/IR/TxOps.h"
#include "txopt/Dialect/Tx/IR/WeightSource.h"

#include "TxOpsCommon.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/Support/CheckedArithmetic.h"

#include <cmath>

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::tx;
using namespace mlir::txopt::tx::detail;

#include "txopt/Dialect/Tx/IR/TxEnums.cpp.inc"
#include "txopt/Dialect/Tx/IR/TxInterfaces.cpp.inc"

#define GET_OP_CLASSES
#include "txopt/Dialect/Tx/IR/TxOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Shared helpers
//===----------------------------------------------------------------------===//

FailureOr<SmallVector<int64_t>> tx::broadcastShapes(ArrayRef<int64_t> lhs,
                                                    ArrayRef<int64_t> rhs) {
  size_t rank = std::max(lhs.size(), rhs.size());
  SmallVector<int64_t> result(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t l = i < rank - lhs.size() ? 1 : lhs[i - (rank - lhs.size())];
    int64_t r = i < rank - rhs.size() ? 1 : rhs[i - (rank - rhs.size())];
    if (l != r && l != 1 && r != 1)
      return failure();
    result[i] = l == 1 ? r : l;
  }
  return result;
}

std::optional<double> tx::getSplatConstant(Value value) {
  DenseElementsAttr attr;
  if (!value || !matchPattern(value, m_Constant(&attr)) || !attr.isSplat())
    return std::nullopt;
  Type elementType = attr.getElementType();
  if (isa<FloatType>(elementType))
    return attr.getSplatValue<APFloat>().convertToDouble();
  if (elementType.isSignlessInteger() && elementType.getIntOrFloatBitWidth() > 1)
    return static_cast<double>(attr.getSplatValue<APInt>().getSExtValue());
  return std::nullopt;
}

FailureOr<int64_t> tx::normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return failure();
  return axis < 0 ? axis + rank : axis;
}

std::string tx::formatShape(ArrayRef<int64_t> shape) {
  std::string text = "[";
  llvm::raw_string_ostream os(text);
  llvm::interleaveComma(shape, os);
  os << "]";
  return text;
}

/// Inference runs from the custom parser before the ODS operand constraints
/// are verified, so it must itself reject operands they would reject before
/// it reads a shape: an unranked tensor would fail a cast, and a dynamic dim
/// (INT64_MIN) would flow into the shape arithmetic.
LogicalResult tx::detail::checkStaticOperands(std::optional<Location> location,
                                              ValueRange operands) {
  for (Value operand : operands) {
    auto type = dyn_cast<RankedTensorType>(operand.getType());
    if (!type || !type.hasStaticShape())
      return inferError(location,
                        "expected statically shaped tensor operands, but got ",
                        operand.getType());
  }
  return success();
}

//===----------------------------------------------------------------------===//
// ParameterOp / LoadParameterOp
//===----------------------------------------------------------------------===//

void ParameterOp::build(OpBuilder &builder, OperationState &state,
                        llvm::StringRef name, ElementsAttr value, bool frozen) {
  build(builder, state, builder.getStringAttr(name),
        TypeAttr::get(value.getType()), value, WeightSourceAttr(),
        frozen ? builder.getUnitAttr() : UnitAttr());
}

void ParameterOp::build(OpBuilder &builder, OperationState &state,
                        llvm::StringRef name, RankedTensorType type,
                        WeightSourceAttr source, bool frozen) {
  build(builder, state, builder.getStringAttr(name), TypeAttr::get(type),
        ElementsAttr(), source, frozen ? builder.getUnitAttr() : UnitAttr());
}

/// `@name = <elements attr> (frozen)? attr-dict` or
/// `@name : <tensor type> source(<#tx.weight_source>) (frozen)? attr-dict`.
ParseResult ParameterOp::parse(OpAsmParser &parser, OperationState &result) {
  StringAttr name;
  if (parser.parseSymbolName(name, getSymNameAttrName(result.name),
                             result.attributes))
    return failure();
  Type type;
  if (succeeded(parser.parseOptionalEqual())) {
    llvm::SMLoc loc = parser.getCurrentLocation();
    Attribute value;
    if (parser.parseAttribute(value))
      return failure();
    auto elements = dyn_cast<ElementsAttr>(value);
    if (!elements)
      return parser.emitError(loc, "expected an elements attribute, but got ")
             << value;
    type = elements.getType();
    if (!isa<RankedTensorType>(type))
      return parser.emitError(loc, "expected a statically shaped tensor "
                                   "type, but got ")
             << type;
    result.addAttribute(getInitialValueAttrName(result.name), elements);
  } else {
    llvm::SMLoc loc = parser.getCurrentLocation();
    WeightSourceAttr source;
    if (parser.parseColonType(type))
      return failure();
    if (!isa<RankedTensorType>(type))
      return parser.emitError(loc, "expected a statically shaped tensor "
                                   "type, but got ")
             << type;
    if (parser.parseKeyword("source") || parser.parseLParen() ||
        parser.parseAttribute(source) || parser.parseRParen())
      return failure();
    result.addAttribute(getSourceAttrName(result.name), source);
  }
  result.addAttribute(getTypeAttrName(result.name), TypeAttr::get(type));
  if (succeeded(parser.parseOptionalKeyword("frozen")))
    result.addAttribute(getFrozenAttrName(result.name),
                        parser.getBuilder().getUnitAttr());
  return parser.parseOptionalAttrDict(result.attributes);
}

void ParameterOp::print(OpAsmPrinter &printer) {
  printer << ' ';
  printer.printSymbolName(getSymName());
  // The short forms need exactly one of the two; otherwise the generic
  // attr-dict below keeps everything (the verifier reports the op).
  bool inlineForm = getInitialValueAttr() && !getSourceAttr() &&
                    getInitialValueAttr().getType() == getTypeAttr().getValue();
  bool sourcedForm = getSourceAttr() && !getInitialValueAttr();
  llvm::SmallVector<llvm::StringRef, 4> elided = {getSymNameAttrName(),
                                                  getFrozenAttrName()};
  if (inlineForm) {
    printer << " = ";
    printer.printAttribute(getInitialValueAttr());
    elided.append({getInitialValueAttrName(), getTypeAttrName()});
  } else if (sourcedForm) {
    printer << " : " << getTypeAttr().getValue() << " source(";
    printer.printAttribute(getSourceAttr());
    printer << ")";
    elided.append({getSourceAttrName(), getTypeAttrName()});
  }
  if (getFrozen())
    printer << " frozen";
  printer.printOptionalAttrDict((*this)->getAttrs(), elided);
}

LogicalResult ParameterOp::verify() {
  // (C1)
  Type declared = getTypeAttr().getValue();
  auto type = dyn_cast<RankedTensorType>(declared);
  if (!type || !type.hasStaticShape())
    return emitOpError("expected a statically shaped tensor type, but got ")
           << declared;
  if (!isa<FloatType>(type.getElementType()))
    return emitOpError(
               "expected a floating-point parameter, but got element type ")
           << type.getElementType();
  // (C2)
  ElementsAttr value = getInitialValueAttr();
  WeightSourceAttr source = getSourceAttr();
  if (static_cast<bool>(value) == static_cast<bool>(source))
    return emitOpError("expected exactly one of an initial value and a "
                       "source, but got ")
           << (value ? "both" : "neither");
  // (C3)
  if (value) {
    if (value.getType() != type)
      return emitOpError("expected an initial value of type ")
             << type << ", but got " << value.getType();
    return success();
  }
  // (C4)
  uint64_t elementBytes = weightElementBytes(type.getElementType());
  if (elementBytes == 0)
    return emitOpError("expected a sourced parameter of whole-byte elements, "
                       "but got element type ")
           << type.getElementType();
  uint64_t expected = elementBytes * static_cast<uint64_t>(type.getNumElements());
  if (source.getLength() != expected)
    return emitOpError("expected a source length of ")
           << expected << " bytes for " << type << ", but got "
           << source.getLength();
  return success();
}

LogicalResult
LoadParameterOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto parameter =
      symbolTable.lookupNearestSymbolFrom<ParameterOp>(*this, getNameAttr());
  if (!parameter)
    return emitOpError("expected '")
           << getName() << "' to name a tx.parameter";
  // Compare the raw declared type rather than `ParameterOp::getType()`,
  // whose cast would assert on a parameter that failed its own verifier.
  Type parameterType = parameter.getTypeAttr().getValue();
  if (parameterType != getType())
    return emitOpError("expected type ")
           << parameterType << " of parameter '" << getName() << "', but got "
           << getType();
  return success();
}

//===----------------------------------------------------------------------===//
// ConstantOp / ConstantOfShapeOp / RangeOp / ShapeOp / IdentityOp
//===----------------------------------------------------------------------===//

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

/// The i64 contents of `value` when it is produced by a constant.
static std::optional<SmallVector<int64_t>> constantInts(Value value) {
  DenseIntElementsAttr attr;
  if (!matchPattern(value, m_Constant(&attr)))
    return std::nullopt;
  return llvm::to_vector(llvm::map_range(
      attr.getValues<APInt>(), [](const APInt &v) { return v.getSExtValue(); }));
}

LogicalResult ConstantOfShapeOp::verify() {
  ElementsAttr value = getValue();
  if (value.getNumElements() != 1)
    return emitOpError("expected a one-element value, but got ")
           << value.getNumElements() << " elements";
  if (value.getElementType() != getType().getElementType())
    return emitOpError("expected value element type ")
           << getType().getElementType() << ", but got "
           << value.getElementType();
  int64_t entries = getShape().getType().getDimSize(0);
  if (entries != getType().getRank())
    return emitOpError("expected shape operand with ")
           << getType().getRank() << " entries, but got " << entries;
  if (auto shape = constantInts(getShape()))
    if (ArrayRef<int64_t>(*shape) != getType().getShape())
      return emitOpError("expected result shape ")
             << formatShape(*shape) << ", but got "
             << formatShape(getType().getShape());
  return success();
}

OpFoldResult ConstantOfShapeOp::fold(FoldAdaptor) {
  // The result type is static, so the fill needs no constant shape operand.
  if (auto dense = dyn_cast<DenseElementsAttr>(getValue()))
    return DenseElementsAttr::get(cast<ShapedType>(getType()),
                                  *dense.value_begin<Attribute>());
  return {};
}

/// Range results longer than this stay `tx.range`: materializing them would
/// bloat the IR (and a result type can claim billions of elements).
static constexpr int64_t kMaxFoldedRangeLength = 1 << 16;

/// Exact conversion of a scalar to f64 for any float semantics (f80 and f128
/// round; `APFloat::convertToDouble` would assert on them).
static double toDouble(APFloat value) {
  bool lost;
  value.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &lost);
  return value.convertToDouble();
}

static bool isZeroScalar(DenseElementsAttr attr) {
  if (isa<FloatType>(attr.getElementType()))
    return (*attr.value_begin<APFloat>()).isZero();
  return (*attr.value_begin<APInt>()).isZero();
}

FailureOr<int64_t> tx::rangeLength(DenseElementsAttr start,
                                   DenseElementsAttr limit,
                                   DenseElementsAttr delta,
                                   std::string &error) {
  if (isZeroScalar(delta)) {
    error = "expected a non-zero delta";
    return failure();
  }
  if (isa<FloatType>(start.getElementType())) {
    APFloat s = *start.value_begin<APFloat>();
    APFloat l = *limit.value_begin<APFloat>();
    APFloat d = *delta.value_begin<APFloat>();
    if (!s.isFinite() || !l.isFinite() || !d.isFinite()) {
      error = "expected finite start, limit and delta";
      return failure();
    }
    APFloat diff = l;
    diff.subtract(s, APFloat::rmNearestTiesToEven);
    double count = std::ceil(toDouble(diff) / toDouble(d));
    if (!(count < 0x1p63)) { // also catches the infinity of an overflowed diff
      error = "expected a range length that fits in 64 bits";
      return failure();
    }
    return count > 0 ? static_cast<int64_t>(count) : 0;
  }
  APInt s = *start.value_begin<APInt>();
  // Two extra bits hold `limit - start` and the rounding of the quotient.
  unsigned width = s.getBitWidth() + 2;
  APInt wideStart = s.sext(width);
  APInt wideLimit = (*limit.value_begin<APInt>()).sext(width);
  APInt wideDelta = (*delta.value_begin<APInt>()).sext(width);
  APInt diff = wideLimit - wideStart;
  APInt quotient = diff.sdiv(wideDelta);
  APInt remainder = diff.srem(wideDelta);
  if (!remainder.isZero() && remainder.isNegative() == wideDelta.isNegative())
    quotient += 1;
  if (quotient.isNegative() || quotient.isZero())
    return 0;
  if (quotient.getActiveBits() > 63) {
    error = "expected a range length that fits in 64 bits";
    return failure();
  }
  return static_cast<int64_t>(quotient.getZExtValue());
}

LogicalResult RangeOp::verify() {
  Type elementType = getStart().getType().getElementType();
  if (getType().getElementType() != elementType)
    return emitOpError("expected result element type ")
           << elementType << ", but got " << getType().getElementType();
  DenseElementsAttr start, limit, delta;
  if (matchPattern(getDelta(), m_Constant(&delta)) && isZeroScalar(delta))
    return emitOpError("expected a non-zero delta");
  if (!delta || !matchPattern(getStart(), m_Constant(&start)) ||
      !matchPattern(getLimit(), m_Constant(&limit)))
    return success();
  std::string error;
  FailureOr<int64_t> length = rangeLength(start, limit, delta, error);
  if (failed(length))
    return emitOpError(error);
  if (*length != getType().getDimSize(0))
    return emitOpError("expected a result of ")
           << *length << " elements, but got " << getType().getDimSize(0);
  return success();
}

OpFoldResult RangeOp::fold(FoldAdaptor adaptor) {
  auto start = dyn_cast_or_null<DenseElementsAttr>(adaptor.getStart());
  auto limit = dyn_cast_or_null<DenseElementsAttr>(adaptor.getLimit());
  auto delta = dyn_cast_or_null<DenseElementsAttr>(adaptor.getDelta());
  if (!start || !limit || !delta)
    return {};
  std::string error;
  FailureOr<int64_t> length = rangeLength(start, limit, delta, error);
  if (failed(length) || *length != getType().getDimSize(0) ||
      *length > kMaxFoldedRangeLength)
    return {};
  // Accumulate in the element type: result[i + 1] = result[i] + delta.
  if (isa<FloatType>(getType().getElementType())) {
    APFloat value = *start.value_begin<APFloat>();
    APFloat step = *delta.value_begin<APFloat>();
    SmallVector<APFloat> values;
    values.reserve(*length);
    for (int64_t i = 0; i < *length; ++i) {
      values.push_back(value);
      value.add(step, APFloat::rmNearestTiesToEven);
    }
    return DenseElementsAttr::get(getType(), values);
  }
  APInt value = *start.value_begin<APInt>();
  APInt step = *delta.value_begin<APInt>();
  SmallVector<APInt> values;
  values.reserve(*length);
  for (int64_t i = 0; i < *length; ++i) {
    values.push_back(value);
    value += step; // Wraps only past the last element, which is not stored.
  }
  return DenseElementsAttr::get(getType(), values);
}

/// ONNX Shape's [start, end) after clamping to [0, rank].
static std::pair<int64_t, int64_t> shapeBounds(int64_t rank, int64_t start,
                                               std::optional<int64_t> end) {
  auto clamp = [rank](int64_t v) {
    if (v < 0)
      v += rank;
    return std::clamp<int64_t>(v, 0, rank);
  };
  int64_t s = clamp(start);
  int64_t e = end ? clamp(*end) : rank;
  return {s, std::max(s, e)};
}

LogicalResult ShapeOp::inferReturnTypes(MLIRContext *context,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  if (failed(checkStaticOperands(loc, adaptor.getOperands())))
    return failure();
  auto type = tensorType(adaptor.getInput());
  std::optional<int64_t> end;
  if (adaptor.getEnd())
    end = static_cast<int64_t>(*adaptor.getEnd());
  auto [start, stop] = shapeBounds(type.getRank(), adaptor.getStart(), end);
  inferred.push_back(
      RankedTensorType::get({stop - start}, IntegerType::get(context, 64)));
  return success();
}

OpFoldResult ShapeOp::fold(FoldAdaptor) {
  auto type = getInput().getType();
  std::optional<int64_t> end;
  if (getEnd())
    end = static_cast<int64_t>(*getEnd());
  auto [start, stop] = shapeBounds(type.getRank(), getStart(), end);
  SmallVector<int64_t> dims(type.getShape().slice(start, stop - start));
  return DenseIntElementsAttr::get(getType(), ArrayRef<int64_t>(dims));
}

OpFoldResult IdentityOp::fold(FoldAdaptor) { return getInput(); }

