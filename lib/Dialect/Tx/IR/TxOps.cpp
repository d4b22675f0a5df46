//===- TxOps.cpp - tx op verifiers, shape inference and folders -----------===//
//
// SPDX-License-Identifier: Apache-2.0
// Result-type inference follows the ONNX operator specification, so a graph
// that onnxruntime accepts infers the same static shapes here.
//
//===----------------------------------------------------------------------===//

#include "txopt/Dialect/Tx/IR/TxOps.h"
#include "txopt/Dialect/Tx/IR/WeightSource.h"

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

/// The type of an operand whose staticness `checkStaticOperands` (inference)
/// or the ODS constraints (verifiers) have established.
static RankedTensorType tensorType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

/// Emits the streamed `args` at `location` when one is given (verification,
/// parsing), and stays silent otherwise (speculative inference by a builder or
/// a pattern). Types and attributes print quoted, as in every diagnostic.
template <typename... Args>
static LogicalResult inferError(std::optional<Location> location,
                                Args &&...args) {
  return emitOptionalError(location, std::forward<Args>(args)...);
}

/// Inference runs from the custom parser before the ODS operand constraints
/// are verified, so it must itself reject operands they would reject before it
/// reads a shape: an unranked tensor would fail a cast, and a dynamic dim
/// (INT64_MIN) would flow into the shape arithmetic.
static LogicalResult checkStaticOperands(std::optional<Location> location,
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

//===----------------------------------------------------------------------===//
// Broadcasting elementwise ops
//===----------------------------------------------------------------------===//

/// Result type of a broadcasting op: the broadcast shape with `elementType`.
static LogicalResult inferBroadcast(std::optional<Location> location,
                                    ValueRange operands, Type elementType,
                                    SmallVectorImpl<Type> &inferred) {
  SmallVector<int64_t> shape;
  for (Value operand : operands) {
    auto next = broadcastShapes(shape, tensorType(operand).getShape());
    if (failed(next))
      return inferError(location,
                        "expected broadcastable operand shapes, but got " +
                            formatShape(shape) + " and " +
                            formatShape(tensorType(operand).getShape()));
    shape = *next;
  }
  inferred.push_back(RankedTensorType::get(shape, elementType));
  return success();
}

/// Arithmetic ops require one element type, which the result keeps.
static LogicalResult inferArith(std::optional<Location> location, Value lhs,
                                Value rhs, SmallVectorImpl<Type> &inferred) {
  if (failed(checkStaticOperands(location, {lhs, rhs})))
    return failure();
  Type lhsElement = tensorType(lhs).getElementType();
  Type rhsElement = tensorType(rhs).getElementType();
  if (lhsElement != rhsElement)
    return inferError(location,
                      "expected operands of one element type, but got ",
                      lhsElement, " and ", rhsElement);
  return inferBroadcast(location, {lhs, rhs}, lhsElement, inferred);
}

#define TX_ARITH_INFER(OP)                                                     \
  LogicalResult OP::inferReturnTypes(MLIRContext *, std::optional<Location> loc, \
                                     Adaptor adaptor,                          \
                                     SmallVectorImpl<Type> &inferred) {        \
    return inferArith(loc, adaptor.getLhs(), adaptor.getRhs(), inferred);      \
  }
TX_ARITH_INFER(AddOp)
TX_ARITH_INFER(SubOp)
TX_ARITH_INFER(MulOp)
TX_ARITH_INFER(DivOp)
TX_ARITH_INFER(ModOp)
TX_ARITH_INFER(MaxOp)
TX_ARITH_INFER(MinOp)
#undef TX_ARITH_INFER

// max(x, x) = min(x, x) = x, NaN included; the inferred result type is then
// x's own.
OpFoldResult MaxOp::fold(FoldAdaptor) {
  return getLhs() == getRhs() ? getLhs() : OpFoldResult();
}

OpFoldResult MinOp::fold(FoldAdaptor) {
  return getLhs() == getRhs() ? getLhs() : OpFoldResult();
}

LogicalResult PowOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &inferred) {
  if (failed(checkStaticOperands(loc, adaptor.getOperands())))
    return failure();
  return inferBroadcast(loc, {adaptor.getLhs(), adaptor.getRhs()},
                        tensorType(adaptor.getLhs()).getElementType(), inferred);
}

LogicalResult ModOp::verify() {
  if (isa<FloatType>(getLhs().getType().getElementType()) && !getFmod())
    return emitOpError("expected fmod = true for floating-point operands");
  return success();
}

#define TX_COMPARE_INFER(OP)                                                   \
  LogicalResult OP::inferReturnTypes(MLIRContext *context,                     \
                                     std::optional<Location> loc,              \
                                     Adaptor adaptor,                          \
                                     SmallVectorImpl<Type> &inferred) {        \
    SmallVector<Type> ignored;                                                 \
    if (failed(inferArith(loc, adaptor.getLhs(), adaptor.getRhs(), ignored)))  \
      return failure();                                                        \
    return inferBroadcast(loc, {adaptor.getLhs(), adaptor.getRhs()},           \
                          IntegerType::get(context, 1), inferred);             \
  }
TX_COMPARE_INFER(EqualOp)
TX_COMPARE_INFER(GreaterOrEqualOp)
TX_COMPARE_INFER(LessOp)
TX_COMPARE_INFER(LessOrEqualOp)
TX_COMPARE_INFER(GreaterOp)
#undef TX_COMPARE_INFER

#define TX_LOGIC_INFER(OP)                                                     \
  LogicalResult OP::inferReturnTypes(MLIRContext *context,                     \
                                     std::optional<Location> loc,              \
                                     Adaptor adaptor,                          \
                                     SmallVectorImpl<Type> &inferred) {        \
    if (failed(checkStaticOperands(loc, {adaptor.getLhs(), adaptor.getRhs()})))\
      return failure();                                                        \
    return inferBroadcast(loc, {adaptor.getLhs(), adaptor.getRhs()},           \
                          IntegerType::get(context, 1), inferred);             \
  }
TX_LOGIC_INFER(AndOp)
TX_LOGIC_INFER(OrOp)
TX_LOGIC_INFER(XorOp)
#undef TX_LOGIC_INFER

LogicalResult WhereOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  if (failed(checkStaticOperands(loc, adaptor.getOperands())))
    return failure();
  Type lhsElement = tensorType(adaptor.getLhs()).getElementType();
  Type rhsElement = tensorType(adaptor.getRhs()).getElementType();
  if (lhsElement != rhsElement)
    return inferError(loc, "expected branches of one element type, but got ",
                      lhsElement, " and ", rhsElement);
  return inferBroadcast(
      loc, {adaptor.getCondition(), adaptor.getLhs(), adaptor.getRhs()},
      lhsElement, inferred);
}

//===----------------------------------------------------------------------===//
// CastOp / TriluOp
//===----------------------------------------------------------------------===//

OpFoldResult CastOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

LogicalResult TriluOp::verify() {
  if (getInput().getType().getRank() < 2)
    return emitOpError("expected an input of rank at least 2, but got rank ")
           << getInput().getType().getRank();
  return success();
}

//===----------------------------------------------------------------------===//
// MatMulOp / GemmOp
//===----------------------------------------------------------------------===//

LogicalResult MatMulOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  if (failed(checkStaticOperands(loc, adaptor.getOperands())))
    return failure();
  auto lhsType = tensorType(adaptor.getLhs());
  auto rhsType = tensorType(adaptor.getRhs());
  if (lhsType.getElementType() != rhsType.getElementType())
    return inferError(loc, "expected operands of one element type, but got ",
                      lhsType.getElementType(), " and ",
                      rhsType.getElementType());
  if (lhsType.getRank() == 0 || rhsType.getRank() == 0)
    return inferError(loc, "expected operands of rank at least 1, but got " +
                               formatShape(lhsType.getShape()) + " and " +
                               formatShape(rhsType.getShape()));
  SmallVector<int64_t> lhs(lhsType.getShape()), rhs(rhsType.getShape());
  bool lhsVector = lhs.size() == 1, rhsVector = rhs.size() == 1;
  if (lhsVector)
    lhs.insert(lhs.begin(), 1);
  if (rhsVector)
    rhs.push_back(1);
  int64_t k = lhs.back();
  if (k != rhs[rhs.size() - 2])
    return inferError(loc, "expected matching contraction dims, but got " +
                               formatShape(lhsType.getShape()) + " and " +
                               formatShape(rhsType.getShape()));
  auto batch = broadcastShapes(ArrayRef<int64_t>(lhs).drop_back(2),
                               ArrayRef<int64_t>(rhs).drop_back(2));
  if (failed(batch))
    return inferError(loc, "expected broadcastable batch dims, but got " +
                               formatShape(lhsType.getShape()) + " and " +
                               formatShape(rhsType.getShape()));
  SmallVector<int64_t> shape = *batch;
  if (!lhsVector)
    shape.push_back(lhs[lhs.size() - 2]);
  if (!rhsVector)
    shape.push_back(rhs.back());
  inferred.push_back(RankedTensorType::get(shape, lhsType.getElementType()));
  return success();
}

LogicalResult GemmOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  if (failed(checkStaticOperands(loc, adaptor.getOperands())))
    return failure();
  auto aType = tensorType(adaptor.getA());
  auto bType = tensorType(adaptor.getB());
  if (aType.getRank() != 2 || bType.getRank() != 2)
    return inferError(loc, "expected 2-D A and B, but got " +
                               formatShape(aType.getShape()) + " and " +
                               formatShape(bType.getShape()));
  if (aType.getElementType() != bType.getElementType())
    return inferError(loc, "expected A and B of one element type, but got ",
                      aType.getElementType(), " and ", bType.getElementType());
  int64_t m = aType.getDimSize(adaptor.getTransA() ? 1 : 0);
  int64_t ka = aType.getDimSize(adaptor.getTransA() ? 0 : 1);
  int64_t kb = bType.getDimSize(adaptor.getTransB() ? 1 : 0);
  int64_t n = bType.getDimSize(adaptor.getTransB() ? 0 : 1);
  if (ka != kb)
    return inferError(loc, "expected matching contraction dims, but got " +
                               std::to_string(ka) + " and " + std::to_string(kb));
  if (Value c = adaptor.getC()) {
    auto cType = tensorType(c);
    if (cType.getElementType() != aType.getElementType())
      return inferError(loc, "expected C element type ", aType.getElementType(),
                        ", but got ", cType.getElementType());
    // Unidirectional: C broadcasts to [M, N], never the other way round, so
    // the broadcast shape must be exactly [M, N] (which also bounds C's rank).
    auto shape = broadcastShapes({m, n}, cType.getShape());
    if (failed(shape) || ArrayRef<int64_t>(*shape) != ArrayRef<int64_t>{m, n})
      return inferError(loc, "expected C broadcastable to " +
                                 formatShape({m, n}) + ", but got " +
                                 formatShape(cType.getShape()));
  }
  inferred.push_back(RankedTensorType::get({m, n}, aType.getElementType()));
  return success();
}

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

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

static LogicalResult inferReduce(std::optional<Location> loc, Value input,
                                 ArrayRef<int64_t> axes, bool keepDims,
                                 SmallVectorImpl<Type> &inferred) {
  if (failed(checkStaticOperands(loc, input)))
    return failure();
  auto type = tensorType(input);
  llvm::SmallSet<int64_t, 8> reduced;
  for (int64_t a : axes) {
    auto axis = normalizeAxis(a, type.getRank());
    if (failed(axis) || !reduced.insert(*axis).second)
      return inferError(loc, "expected distinct axes within rank " +
                                 std::to_string(type.getRank()) + ", but got " +
                                 formatShape(axes));
  }
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < type.getRank(); ++d) {
    bool reduce = axes.empty() || reduced.contains(d);
    if (!reduce)
      shape.push_back(type.getDimSize(d));
    else if (keepDims)
      shape.push_back(1);
  }
  inferred.push_back(RankedTensorType::get(shape, type.getElementType()));
  return success();
}

#define TX_REDUCE_INFER(OP)                                                    \
  LogicalResult OP::inferReturnTypes(MLIRContext *, std::optional<Location> loc, \
                                     Adaptor adaptor,                          \
                                     SmallVectorImpl<Type> &inferred) {        \
    return inferReduce(loc, adaptor.getInput(), adaptor.getAxes(),             \
                       adaptor.getKeepDims(), inferred);                       \
  }
TX_REDUCE_INFER(ReduceMeanOp)
TX_REDUCE_INFER(ReduceSumOp)
TX_REDUCE_INFER(ReduceMaxOp)
#undef TX_REDUCE_INFER

LogicalResult CumSumOp::verify() {
  int64_t rank = getInput().getType().getRank();
  // ONNX CumSum is defined for rank >= 1 only; say so rather than report
  // that no axis fits in [0, 0).
  if (rank == 0)
    return emitOpError("expected an input of rank at least 1");
  int64_t axis = getAxis();
  if (failed(normalizeAxis(axis, rank)))
    return emitOpError("expected axis in [")
           << -rank << ", " << rank << "), but got " << axis;
  return success();
}

OpFoldResult CumSumOp::fold(FoldAdaptor) {
  auto type = getInput().getType();
  auto axis = normalizeAxis(getAxis(), type.getRank());
  if (failed(axis) || type.getDimSize(*axis) != 1)
    return {};
  if (!getExclusive())
    return getInput();
  // Every exclusive sum is empty.
  Builder builder(getContext());
  return builder.getZeroAttr(type);
}

//===----------------------------------------------------------------------===//
// SoftmaxOp / LayerNormalizationOp / RMSNormalizationOp
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxOp::verify() {
  int64_t rank = getInput().getType().getRank();
  int64_t axis = getAxis();
  if (failed(normalizeAxis(axis, rank)))
    return emitOpError("expected axis within rank ")
           << rank << ", but got " << axis;
  return success();
}

/// Scale/bias of a normalization must broadcast to the normalized dims.
static LogicalResult verifyNormAffine(Operation *op, RankedTensorType input,
                                      int64_t axis, Value affine,
                                      StringRef name) {
  auto normAxis = normalizeAxis(axis, input.getRank());
  if (failed(normAxis))
    return op->emitOpError("expected axis within rank ")
           << input.getRank() << ", but got " << axis;
  if (!affine)
    return success();
  auto type = cast<RankedTensorType>(affine.getType());
  ArrayRef<int64_t> normalized = input.getShape().drop_front(*normAxis);
  auto shape = broadcastShapes(normalized, type.getShape());
  if (failed(shape) || ArrayRef<int64_t>(*shape) != normalized)
    return op->emitOpError("expected ")
           << name << " shape broadcastable to " << formatShape(normalized)
           << ", but got " << formatShape(type.getShape());
  if (type.getElementType() != input.getElementType())
    return op->emitOpError("expected ")
           << name << " element type " << input.getElementType()
           << ", but got " << type.getElementType();
  return success();
}

/// Epsilon is added to a variance: it must be a non-negative number.
static LogicalResult verifyEpsilon(Operation *op, const APFloat &epsilon) {
  if (epsilon.isNaN() || (epsilon.isNegative() && !epsilon.isZero()))
    return op->emitOpError("expected a non-negative epsilon, but got ")
           << epsilon.convertToFloat();
  return success();
}

LogicalResult LayerNormalizationOp::verify() {
  if (failed(verifyEpsilon(*this, getEpsilon())))
    return failure();
  if (failed(verifyNormAffine(*this, getInput().getType(), getAxis(),
                              getScale(), "scale")))
    return failure();
  return verifyNormAffine(*this, getInput().getType(), getAxis(), getBias(),
                          "bias");
}

LogicalResult RMSNormalizationOp::verify() {
  if (failed(verifyEpsilon(*this, getEpsilon())))
    return failure();
  return verifyNormAffine(*this, getInput().getType(), getAxis(), getScale(),
                          "scale");
}

//===----------------------------------------------------------------------===//
// SoftmaxCrossEntropyLossOp / DropoutOp
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxCrossEntropyLossOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  if (failed(checkStaticOperands(loc, adaptor.getOperands())))
    return failure();
  auto scores = tensorType(adaptor.getScores());
  auto labels = tensorType(adaptor.getLabels());
  if (scores.getRank() < 2)
    return inferError(loc, "expected scores of rank at least 2, but got " +
                               formatShape(scores.getShape()));
  SmallVector<int64_t> expected{scores.getDimSize(0)};
  llvm::append_range(expected, scores.getShape().drop_front(2));
  if (labels.getShape() != ArrayRef<int64_t>(expected))
    return inferError(loc, "expected labels shape " + formatShape(expected) +
                               ", but got " + formatShape(labels.getShape()));
  if (Value weights = adaptor.getWeights()) {
    auto weightsType = tensorType(weights);
    if (weightsType.getShape() != ArrayRef<int64_t>{scores.getDimSize(1)})
      return inferError(loc, "expected weights shape " +
                                 formatShape({scores.getDimSize(1)}) +
                                 ", but got " + formatShape(weightsType.getShape()));
    if (weightsType.getElementType() != scores.getElementType())
      return inferError(loc, "expected weights element type ",
                        scores.getElementType(), ", but got ",
                        weightsType.getElementType());
  }
  SmallVector<int64_t> shape;
  if (adaptor.getReduction() == LossReduction::none)
    shape = expected;
  inferred.push_back(RankedTensorType::get(shape, scores.getElementType()));
  return success();
}

LogicalResult DropoutOp::verify() {
  float ratio = getRatio().convertToFloat();
  if (!(ratio >= 0.0f && ratio < 1.0f))
    return emitOpError("expected ratio in [0, 1), but got ") << ratio;
  return success();
}
