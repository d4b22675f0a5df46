//===- NodeImporter.cpp - operands, attributes and op creation ------------===//
//
// SPDX-License-Identifier: Apache-2.0
// The services every ONNX op mapping uses. Attribute accessors check the
// attribute's declared type, because a malformed model can put a string
// where an int belongs. `create` never uses the ODS builders that infer
// result types: those abort the process when inference fails, and a model
// with mismatched shapes must produce an error, not a crash.
//
//===----------------------------------------------------------------------===//

#include "ImporterInternal.h"

#include "txopt/Dialect/Tx/IR/TxOps.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::onnx_import;

LogicalResult NodeImporter::fail(const llvm::Twine &message) {
  std::string &error = shared.error;
  if (error.empty()) {
    error = (label + ": " + message).str();
    // Diagnostics may span lines (notes, types with newlines); the error
    // contract is one line.
    std::replace(error.begin(), error.end(), '\n', ' ');
  }
  return failure();
}

void NodeImporter::warn(const llvm::Twine &message) {
  shared.warnings.push_back((label + ": " + message).str());
}

//===----------------------------------------------------------------------===//
// Operands
//===----------------------------------------------------------------------===//

LogicalResult NodeImporter::expectInputs(unsigned min, unsigned max) {
  if (inputs.size() < min || inputs.size() > max) {
    std::string expected = min == max ? std::to_string(min)
                                      : std::to_string(min) + " to " +
                                            std::to_string(max);
    return fail("expected " + expected + " inputs, but got " +
                std::to_string(inputs.size()));
  }
  for (unsigned i = 0; i < min; ++i)
    if (!inputs[i])
      return fail("required input " + std::to_string(i) + " is missing");
  return success();
}

DenseElementsAttr NodeImporter::constantInput(unsigned i) const {
  if (!has(i))
    return {};
  DenseElementsAttr value;
  if (auto constant = inputs[i].getDefiningOp<tx::ConstantOp>())
    value = llvm::dyn_cast<DenseElementsAttr>(constant.getValue());
  // A tensor without elements has one possible value, whatever produced it
  // (ONNX's tests feed an empty `axes` as a graph input).
  auto type = llvm::cast<RankedTensorType>(inputs[i].getType());
  if (!value && type.getNumElements() == 0)
    value = DenseElementsAttr::get(type, llvm::ArrayRef<Attribute>());
  return value;
}

FailureOr<llvm::SmallVector<int64_t>>
NodeImporter::constantInts(unsigned i, llvm::StringRef what) {
  DenseElementsAttr value = constantInput(i);
  if (!value)
    return fail(what + " (input " + quote(node.input(i)) +
                ") is not a constant after import-time folding; tx needs it "
                "static");
  auto intType = llvm::dyn_cast<IntegerType>(value.getElementType());
  if (!intType)
    return fail(what + " must be an integer tensor, but has element type " +
                [&] {
                  std::string text;
                  llvm::raw_string_ostream os(text);
                  os << value.getElementType();
                  return text;
                }());
  if (value.getType().getRank() > 1)
    return fail(what + " must be a 1-D tensor, but has shape " +
                tx::formatShape(value.getType().getShape()));
  llvm::SmallVector<int64_t> result;
  for (const APInt &v : value.getValues<APInt>())
    result.push_back(intType.getWidth() == 1
                         ? static_cast<int64_t>(v.getZExtValue())
                         : v.getSExtValue());
  return result;
}

FailureOr<double> NodeImporter::constantScalar(unsigned i,
                                               llvm::StringRef what) {
  DenseElementsAttr value = constantInput(i);
  if (!value)
    return fail(what + " (input " + quote(node.input(i)) +
                ") is not a constant after import-time folding");
  if (value.getNumElements() != 1)
    return fail(what + " must have one element, but has " +
                std::to_string(value.getNumElements()));
  if (llvm::isa<FloatType>(value.getElementType()))
    return (*value.getValues<APFloat>().begin()).convertToDouble();
  APInt v = *value.getValues<APInt>().begin();
  // Separate conversions: a ?: over uint64_t and int64_t would turn -100
  // into 2^64 - 100.
  if (v.getBitWidth() == 1)
    return static_cast<double>(v.getZExtValue());
  return static_cast<double>(v.getSExtValue());
}

FailureOr<int64_t> onnx_import::axisFor(NodeImporter &n, int64_t axis,
                                        int64_t rank, llvm::StringRef what) {
  auto normalized = tx::normalizeAxis(axis, rank);
  if (failed(normalized))
    return n.fail(what + " " + std::to_string(axis) +
                  " is out of range for rank " + std::to_string(rank));
  return *normalized;
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

const onnx::AttributeProto *
NodeImporter::findAttr(llvm::StringRef name) const {
  for (const onnx::AttributeProto &attr : node.attribute())
    if (attr.name() == name)
      return &attr;
  return nullptr;
}

int NodeImporter::attrKind(const onnx::AttributeProto &attr) {
  if (attr.type() != onnx::AttributeProto::UNDEFINED)
    return attr.type();
  // IR version < 3 did not require `type`; infer it from the field set.
  if (attr.has_f())
    return onnx::AttributeProto::FLOAT;
  if (attr.has_i())
    return onnx::AttributeProto::INT;
  if (attr.has_s())
    return onnx::AttributeProto::STRING;
  if (attr.has_t())
    return onnx::AttributeProto::TENSOR;
  if (attr.has_g())
    return onnx::AttributeProto::GRAPH;
  if (attr.floats_size())
    return onnx::AttributeProto::FLOATS;
  if (attr.ints_size())
    return onnx::AttributeProto::INTS;
  if (attr.strings_size())
    return onnx::AttributeProto::STRINGS;
  return onnx::AttributeProto::UNDEFINED;
}

static const char *kindName(int kind) {
  switch (kind) {
  case onnx::AttributeProto::FLOAT: return "a float";
  case onnx::AttributeProto::INT: return "an int";
  case onnx::AttributeProto::STRING: return "a string";
  case onnx::AttributeProto::TENSOR: return "a tensor";
  case onnx::AttributeProto::GRAPH: return "a graph";
  case onnx::AttributeProto::FLOATS: return "a list of floats";
  case onnx::AttributeProto::INTS: return "a list of ints";
  case onnx::AttributeProto::STRINGS: return "a list of strings";
  default: return "of an unsupported kind";
  }
}

/// Finds |name| and checks that it has |kind|; null (success) when absent.
static FailureOr<const onnx::AttributeProto *>
findTyped(NodeImporter &importer, llvm::StringRef name, int kind) {
  const onnx::AttributeProto *attr = importer.findAttr(name);
  if (!attr)
    return static_cast<const onnx::AttributeProto *>(nullptr);
  if (!attr->ref_attr_name().empty())
    return importer.fail("attribute " + quote(name) +
                         " refers to a function attribute, which only "
                         "functions may do");
  int actual = NodeImporter::attrKind(*attr);
  if (actual != kind)
    return importer.fail("attribute " + quote(name) + " must be " +
                         kindName(kind) + ", but is " + kindName(actual));
  return attr;
}

FailureOr<int64_t> NodeImporter::attrInt(llvm::StringRef name,
                                         int64_t defaultValue) {
  auto attr = findTyped(*this, name, onnx::AttributeProto::INT);
  if (failed(attr))
    return failure();
  return *attr ? (*attr)->i() : defaultValue;
}

FailureOr<std::optional<int64_t>>
NodeImporter::attrOptionalInt(llvm::StringRef name) {
  auto attr = findTyped(*this, name, onnx::AttributeProto::INT);
  if (failed(attr))
    return failure();
  if (!*attr)
    return std::optional<int64_t>();
  return std::optional<int64_t>((*attr)->i());
}

FailureOr<float> NodeImporter::attrFloat(llvm::StringRef name,
                                         float defaultValue) {
  auto attr = findTyped(*this, name, onnx::AttributeProto::FLOAT);
  if (failed(attr))
    return failure();
  return *attr ? (*attr)->f() : defaultValue;
}

FailureOr<std::string> NodeImporter::attrString(llvm::StringRef name,
                                                llvm::StringRef defaultValue) {
  auto attr = findTyped(*this, name, onnx::AttributeProto::STRING);
  if (failed(attr))
    return failure();
  return *attr ? (*attr)->s() : defaultValue.str();
}

FailureOr<std::optional<llvm::SmallVector<int64_t>>>
NodeImporter::attrInts(llvm::StringRef name) {
  using Result = std::optional<llvm::SmallVector<int64_t>>;
  const onnx::AttributeProto *attr = findAttr(name);
  // An empty list has no field set, so its kind may read as UNDEFINED.
  if (attr && attr->type() == onnx::AttributeProto::UNDEFINED &&
      attrKind(*attr) == onnx::AttributeProto::UNDEFINED)
    return Result(llvm::SmallVector<int64_t>());
  auto typed = findTyped(*this, name, onnx::AttributeProto::INTS);
  if (failed(typed))
    return failure();
  if (!*typed)
    return Result();
  return Result(llvm::SmallVector<int64_t>((*typed)->ints().begin(),
                                           (*typed)->ints().end()));
}

FailureOr<const onnx::TensorProto *>
NodeImporter::attrTensor(llvm::StringRef name) {
  auto attr = findTyped(*this, name, onnx::AttributeProto::TENSOR);
  if (failed(attr))
    return failure();
  return *attr ? &(*attr)->t() : nullptr;
}

//===----------------------------------------------------------------------===//
// Results
//===----------------------------------------------------------------------===//

LogicalResult NodeImporter::rejectUsedOutput(unsigned i, llvm::StringRef what) {
  if (isOutputUsed(i))
    return fail("output " + std::to_string(i) + " (" + what + ", " +
                quote(node.output(i)) + ") is used, but tx has no equivalent");
  return success();
}

//===----------------------------------------------------------------------===//
// Op creation
//===----------------------------------------------------------------------===//

Value NodeImporter::constant(DenseElementsAttr value) {
  Value &cached = shared.constants[value];
  if (!cached)
    cached = tx::ConstantOp::create(builder, loc, value).getResult();
  return cached;
}

llvm::APFloat onnx_import::roundedFloat(FloatType type, double value) {
  llvm::APFloat result(value);
  bool lost = false;
  result.convert(type.getFloatSemantics(), llvm::APFloat::rmNearestTiesToEven,
                 &lost);
  return result;
}

Value NodeImporter::floatScalar(FloatType type, double value) {
  return constant(DenseElementsAttr::get(RankedTensorType::get({}, type),
                                         roundedFloat(type, value)));
}

Value NodeImporter::intScalar(Type type, int64_t value) {
  return constant(DenseElementsAttr::get(
      RankedTensorType::get({}, type),
      llvm::APInt(type.getIntOrFloatBitWidth(), value, /*isSigned=*/true)));
}

/// Checks what tx requires of every value: a statically shaped tensor of
/// sane size.
static std::optional<std::string> checkResultType(Type type) {
  auto tensor = llvm::dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return std::string("a result is not a statically shaped tensor");
  if (!checkedNumElements(tensor.getShape()))
    return "its result shape " + tx::formatShape(tensor.getShape()) +
           " has more than 2^40 elements";
  return std::nullopt;
}

FailureOr<llvm::SmallVector<Value>>
NodeImporter::create(llvm::StringRef name, ValueRange operands,
                     llvm::ArrayRef<NamedAttribute> attrs,
                     TypeRange resultTypes, unsigned numResults) {
  std::string &diagnostic = shared.diagnostic;
  diagnostic.clear();
  OperationState state(loc, name);
  state.addOperands(operands);
  state.addAttributes(attrs);
  bool infer = resultTypes.empty();
  if (infer)
    state.addTypes(llvm::SmallVector<Type>(numResults, builder.getNoneType()));
  else
    state.addTypes(resultTypes);
  // Inherent attributes given this way are moved into the op's properties,
  // so inference below sees them exactly as the ODS builders would.
  Operation *op = builder.create(state);
  auto fromDiagnostic = [&](llvm::StringRef fallback) {
    std::string message = diagnostic.empty() ? fallback.str() : diagnostic;
    op->erase();
    return fail(message);
  };

  if (infer) {
    auto iface = llvm::dyn_cast<InferTypeOpInterface>(op);
    if (!iface)
      return fromDiagnostic("internal error: " + name.str() +
                            " cannot infer its result types");
    llvm::SmallVector<Type> types;
    if (failed(iface.inferReturnTypes(getContext(), loc, op->getOperands(),
                                      op->getRawDictionaryAttrs(),
                                      op->getPropertiesStorage(),
                                      op->getRegions(), types)) ||
        types.size() != op->getNumResults())
      return fromDiagnostic("cannot infer the result type of " + name.str());
    for (auto [result, type] : llvm::zip(op->getResults(), types))
      result.setType(type);
  }
  for (Type type : op->getResultTypes())
    if (std::optional<std::string> problem = checkResultType(type))
      return fromDiagnostic(*problem);
  if (failed(mlir::verify(op, /*verifyRecursively=*/false)))
    return fromDiagnostic("the " + name.str() + " op it maps to is invalid");

  // Evaluate at import time when every operand is known: this is what turns
  // Shape -> Gather -> Concat -> Reshape chains into static attributes.
  llvm::SmallVector<DenseElementsAttr> constants;
  for (Value operand : op->getOperands()) {
    auto constantOp = operand.getDefiningOp<tx::ConstantOp>();
    auto dense = constantOp
                     ? llvm::dyn_cast<DenseElementsAttr>(constantOp.getValue())
                     : DenseElementsAttr();
    if (!dense)
      break;
    constants.push_back(dense);
  }
  if (constants.size() == op->getNumOperands() && op->getNumOperands() > 0) {
    llvm::SmallVector<DenseElementsAttr> folded;
    std::string foldError;
    FailureOr<bool> evaluated = evaluateOp(op, constants, folded, foldError);
    if (failed(evaluated)) {
      op->erase();
      return fail(foldError);
    }
    if (*evaluated) {
      llvm::SmallVector<Value> values;
      for (DenseElementsAttr value : folded)
        values.push_back(constant(value));
      op->erase();
      return values;
    }
    // Ops the evaluator leaves alone may have a folder of their own
    // (tx.range, tx.constant_of_shape).
    llvm::SmallVector<Attribute> attrs(constants.begin(), constants.end());
    llvm::SmallVector<OpFoldResult> foldResults;
    if (succeeded(op->fold(attrs, foldResults)) &&
        foldResults.size() == op->getNumResults()) {
      llvm::SmallVector<Value> values;
      for (OpFoldResult result : foldResults) {
        auto dense = llvm::dyn_cast_if_present<DenseElementsAttr>(
            llvm::dyn_cast_if_present<Attribute>(result));
        if (!dense || dense.getType() != op->getResult(values.size()).getType())
          break;
        values.push_back(constant(dense));
      }
      if (values.size() == op->getNumResults()) {
        op->erase();
        return values;
      }
    }
  }
  return llvm::SmallVector<Value>(op->getResults());
}
