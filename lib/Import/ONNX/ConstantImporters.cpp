//===- ConstantImporters.cpp - ops that become constants or aliases -------===//
//
// SPDX-License-Identifier: Apache-2.0
// Shape, ConstantOfShape, Range, Constant and Identity never become tx ops
// (shapes are static, so their results are known): they produce
// tx.constant values or alias their input. This is where exporters' shape
// subgraphs start folding.
//
//===----------------------------------------------------------------------===//

#include "ImporterInternal.h"

#include "txopt/Dialect/Tx/IR/TxOps.h"

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::onnx_import;

LogicalResult onnx_import::importIdentity(NodeImporter &n) {
  if (failed(n.expectInputs(1, 1)))
    return failure();
  n.setResult(0, n.input(0));
  return success();
}

/// Shape is static in tx, so it is always a constant (start/end: opset 15).
LogicalResult onnx_import::importShape(NodeImporter &n) {
  auto startAttr = n.attrInt("start", 0);
  auto endAttr = n.attrOptionalInt("end");
  if (failed(n.expectInputs(1, 1)) || failed(startAttr) || failed(endAttr))
    return failure();
  llvm::ArrayRef<int64_t> shape = n.type(0).getShape();
  int64_t rank = shape.size();
  auto clamp = [rank](int64_t v) {
    if (v < 0)
      v = v < -rank ? 0 : v + rank;
    return std::min(v, rank);
  };
  int64_t start = clamp(*startAttr);
  int64_t end = *endAttr ? clamp(**endAttr) : rank;
  end = std::max(start, end);
  llvm::SmallVector<int64_t> dims(shape.slice(start, end - start));
  auto type = RankedTensorType::get({static_cast<int64_t>(dims.size())},
                                    n.builder.getI64Type());
  n.setResult(0, n.constant(DenseIntElementsAttr::get(type, dims)));
  return success();
}

/// A value attribute as a one-element attr, f32 0 when absent.
LogicalResult onnx_import::importConstantOfShape(NodeImporter &n) {
  auto valueProto = n.attrTensor("value");
  if (failed(n.expectInputs(1, 1)) || failed(valueProto))
    return failure();
  auto shape = n.constantInts(0, "the shape operand");
  if (failed(shape))
    return failure();
  if (!checkedNumElements(*shape))
    return n.fail("the shape " + tx::formatShape(*shape) +
                  " has a negative dim or more than 2^40 elements");
  DenseElementsAttr value;
  if (*valueProto) {
    std::string error;
    auto converted = convertTensor(n.getContext(), **valueProto,
                                   {n.shared.baseDir, "attribute 'value'"}, error);
    if (failed(converted))
      return n.fail(error);
    value = *converted;
    if (value.getNumElements() != 1)
      return n.fail("attribute 'value' must have one element, but has " +
                    std::to_string(value.getNumElements()));
  } else {
    value = DenseElementsAttr::get(RankedTensorType::get({1}, n.builder.getF32Type()),
                                   0.0f);
  }
  n.setResult(0, n.constant(value.resizeSplat(
                     RankedTensorType::get(*shape, value.getElementType()))));
  return success();
}

/// Length of ONNX Range: tx.range's own definition (tx::rangeLength, so the
/// importer and the op's verifier and folder cannot disagree), bounded by
/// the importer's element limit.
static FailureOr<int64_t> rangeLength(NodeImporter &n, DenseElementsAttr start,
                                      DenseElementsAttr limit,
                                      DenseElementsAttr delta) {
  std::string error;
  FailureOr<int64_t> length = tx::rangeLength(start, limit, delta, error);
  if (failed(length))
    return n.fail(error);
  if (*length > kMaxTensorElements)
    return n.fail("the range has more than 2^40 elements");
  return *length;
}

/// Range must have constant operands: its length is the result's static
/// shape. It becomes a tx.range, which NodeImporter::create folds with the
/// op's own folder (so the values accumulate exactly as tx.range defines);
/// ranges too long to fold stay tx.range ops over constants.
LogicalResult onnx_import::importRange(NodeImporter &n) {
  if (failed(n.expectInputs(3, 3)))
    return failure();
  llvm::SmallVector<DenseElementsAttr> operands;
  for (unsigned i = 0; i < 3; ++i) {
    DenseElementsAttr value = n.constantInput(i);
    if (!value)
      return n.fail("operand " + std::to_string(i) + " (" + quote(n.node.input(i)) +
                    ") is not a constant after import-time folding; the "
                    "result length must be static");
    if (value.getNumElements() != 1)
      return n.fail("operand " + std::to_string(i) + " must be a scalar");
    operands.push_back(value);
  }
  Type elementType = operands[0].getElementType();
  if (operands[1].getElementType() != elementType ||
      operands[2].getElementType() != elementType)
    return n.fail("start, limit and delta must have one element type");
  // Range-27's stash_type (default 1) makes f16/bf16 ranges accumulate in
  // f32 and round once at the end; earlier opsets had no f16/bf16 Range.
  auto stash = n.opset >= 27 ? n.attrInt("stash_type", 1) : FailureOr<int64_t>(0);
  if (failed(stash))
    return failure();
  Type resultType = elementType;
  if (*stash != 0 && (elementType.isF16() || elementType.isBF16())) {
    elementType = n.builder.getF32Type();
    for (DenseElementsAttr &a : operands) {
      APFloat v = *a.value_begin<APFloat>();
      bool lost;
      v.convert(APFloat::IEEEsingle(), APFloat::rmNearestTiesToEven, &lost);
      a = DenseElementsAttr::get(RankedTensorType::get({}, elementType), v);
    }
  }
  auto length = rangeLength(n, operands[0], operands[1], operands[2]);
  if (failed(length))
    return failure();
  llvm::SmallVector<Value> scalars;
  for (DenseElementsAttr a : operands)
    scalars.push_back(n.constant(a.reshape(RankedTensorType::get({}, elementType))));
  FailureOr<Value> range = n.createOne<tx::RangeOp>(
      scalars, {}, RankedTensorType::get({*length}, elementType));
  if (succeeded(range) && resultType != elementType)
    range = n.createOne<tx::CastOp>({*range}, {},
                                    RankedTensorType::get({*length}, resultType));
  return setOne(n, range);
}

/// Constant: exactly one of value / value_float(s) / value_int(s).
LogicalResult onnx_import::importConstant(NodeImporter &n) {
  if (failed(n.expectInputs(0, 0)))
    return failure();
  if (n.node.attribute_size() != 1)
    return n.fail("expected exactly one value attribute, but got " +
                  std::to_string(n.node.attribute_size()));
  const onnx::AttributeProto &attr = n.node.attribute(0);
  Builder &b = n.builder;
  llvm::StringRef name = attr.name();
  DenseElementsAttr value;
  if (name == "value") {
    auto proto = n.attrTensor("value");
    if (failed(proto))
      return failure();
    std::string error;
    auto converted = convertTensor(n.getContext(), **proto,
                                   {n.shared.baseDir, "attribute 'value'"}, error);
    if (failed(converted))
      return n.fail(error);
    value = *converted;
  } else if (name == "value_float") {
    auto v = n.attrFloat("value_float", 0);
    if (failed(v))
      return failure();
    value = DenseElementsAttr::get(RankedTensorType::get({}, b.getF32Type()), *v);
  } else if (name == "value_int") {
    auto v = n.attrInt("value_int", 0);
    if (failed(v))
      return failure();
    value = DenseElementsAttr::get(RankedTensorType::get({}, b.getI64Type()), *v);
  } else if (name == "value_ints") {
    auto v = n.attrInts("value_ints");
    if (failed(v))
      return failure();
    value = DenseElementsAttr::get(
        RankedTensorType::get({static_cast<int64_t>((*v)->size())}, b.getI64Type()),
        llvm::ArrayRef<int64_t>(**v));
  } else if (name == "value_floats") {
    if (NodeImporter::attrKind(attr) != onnx::AttributeProto::FLOATS &&
        attr.type() != onnx::AttributeProto::UNDEFINED)
      return n.fail("attribute 'value_floats' must be a list of floats");
    llvm::SmallVector<float> floats(attr.floats().begin(), attr.floats().end());
    value = DenseElementsAttr::get(
        RankedTensorType::get({static_cast<int64_t>(floats.size())}, b.getF32Type()),
        llvm::ArrayRef<float>(floats));
  } else {
    return n.fail("attribute " + quote(name) + " is not supported");
  }
  n.setResult(0, n.constant(value));
  return success();
}
