//===- ONNXOpImporters.cpp - one mapping per ONNX op ----------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// Each supported ONNX op becomes (at most) one tx op with the same
// semantics; opset-dependent spellings (attribute before a given opset,
// input after) are resolved where the op is read. This file holds the
// elementwise, linear-algebra, indexing and scan ops and the registry of
// every op; ShapeImporters.cpp the shape manipulation ops (whose shape
// operands must fold to constants), NormLossImporters.cpp the reductions,
// norms, loss and dropout, ConstantImporters.cpp the constants, and
// CompositeImporters.cpp Gelu and Attention.
//
//===----------------------------------------------------------------------===//

#include "ImporterInternal.h"

#include "txopt/Dialect/Tx/IR/TxOps.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/CheckedArithmetic.h"

#include <limits>

#include <type_traits>

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::onnx_import;

namespace {
using ImportFn = LogicalResult (*)(NodeImporter &);

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

template <typename OpTy>
LogicalResult importBinary(NodeImporter &n) {
  if (failed(n.expectInputs(2, 2)))
    return failure();
  return setOne(n, n.createOne<OpTy>({n.input(0), n.input(1)}));
}

/// Unary ops whose result has the operand's type.
template <typename OpTy>
LogicalResult importUnary(NodeImporter &n) {
  if (failed(n.expectInputs(1, 1)))
    return failure();
  return setOne(n, n.createOne<OpTy>({n.input(0)}, {}, n.type(0)));
}

/// Mod with fmod = 0 on floats (defined from opset 28, floored: the sign
/// of the divisor) from tx.mod's fmod form, as Python's float `%` does it:
/// r = fmod(a, b); r != 0 and sign(r) != sign(b) ? r + b : r, and a zero
/// takes b's sign. fmod's NaN cases (a infinite, b zero, a NaN) stay NaN,
/// and a finite a against an infinite b of the other sign gives b.
static LogicalResult importFlooredFloatMod(NodeImporter &n) {
  Builder &b = n.builder;
  auto floatType = llvm::cast<FloatType>(n.type(0).getElementType());
  Value zero = n.floatScalar(floatType, 0.0);
  auto r = n.createOne<tx::ModOp>({n.input(0), n.input(1)},
                                  {n.named("fmod", b.getBoolAttr(true))});
  if (failed(r))
    return failure();
  auto rZero = n.createOne<tx::EqualOp>({*r, zero});
  auto rNeg = n.createOne<tx::LessOp>({*r, zero});
  auto bNeg = n.createOne<tx::LessOp>({n.input(1), zero});
  if (failed(rZero) || failed(rNeg) || failed(bNeg))
    return failure();
  auto signsDiffer = n.createOne<tx::XorOp>({*rNeg, *bNeg});
  auto nonZero = n.createOne<tx::NotOp>({*rZero});
  if (failed(signsDiffer) || failed(nonZero))
    return failure();
  auto fix = n.createOne<tx::AndOp>({*nonZero, *signsDiffer});
  auto shifted = n.createOne<tx::AddOp>({*r, n.input(1)});
  if (failed(fix) || failed(shifted))
    return failure();
  auto fixed = n.createOne<tx::WhereOp>({*fix, *shifted, *r});
  auto signedZero = n.createOne<tx::WhereOp>({*bNeg, n.floatScalar(floatType, -0.0), zero});
  if (failed(fixed) || failed(signedZero))
    return failure();
  return setOne(n, n.createOne<tx::WhereOp>({*rZero, *signedZero, *fixed}));
}

LogicalResult importMod(NodeImporter &n) {
  auto fmod = n.attrInt("fmod", 0);
  if (failed(n.expectInputs(2, 2)) || failed(fmod))
    return failure();
  if (*fmod == 0 && isa<FloatType>(n.type(0).getElementType()))
    return importFlooredFloatMod(n);
  return setOne(n, n.createOne<tx::ModOp>(
                       {n.input(0), n.input(1)},
                       {n.named("fmod", n.builder.getBoolAttr(*fmod != 0))}));
}

LogicalResult importIsNaN(NodeImporter &n) {
  if (failed(n.expectInputs(1, 1)))
    return failure();
  return setOne(n, n.createOne<tx::IsNaNOp>(
                       {n.input(0)}, {},
                       n.type(0).clone(n.builder.getI1Type())));
}

/// Cast to an FP8 format with saturate = 0: values that round past the
/// largest finite value become NaN in the formats without infinities
/// (E4M3FN, the FNUZ formats) and +-inf in E5M2, where tx.cast saturates. Rounding is to nearest even with
/// an unbounded exponent, so |x| overflows from the midpoint between the
/// largest value and the next step up; at the midpoint itself the tie goes
/// to the even neighbour: down when the largest value's last mantissa bit
/// is 0 (E4M3FN's 448), up otherwise. The comparisons run in x's type,
/// which must hold the midpoint exactly (f16, bf16, f32 and f64 all do).
static LogicalResult importNonSaturatingFloat8Cast(NodeImporter &n,
                                                   FloatType target,
                                                   const std::string &targetName) {
  auto inType = n.type(0);
  auto inFloat = llvm::dyn_cast<FloatType>(inType.getElementType());
  std::string what = "cast to " + targetName + " with saturate = 0";
  if (!inFloat || inFloat.getWidth() < 16)
    return n.fail(what + " is only supported from a float of 16 bits or more");
  const llvm::fltSemantics &sem = target.getFloatSemantics();
  llvm::APFloat largest = llvm::APFloat::getLargest(sem);
  llvm::APFloat below = largest;
  below.next(/*nextDown=*/true);
  double step = largest.convertToDouble() - below.convertToDouble();
  double midpoint = largest.convertToDouble() + step / 2;
  bool tieGoesUp = largest.bitcastToAPInt()[0];
  llvm::APFloat bound(midpoint);
  bool lost = false;
  bound.convert(inFloat.getFloatSemantics(), llvm::APFloat::rmNearestTiesToEven, &lost);
  if (lost)
    return n.fail(what + " from this type is not supported");
  auto scalarIn = RankedTensorType::get({}, inFloat);
  auto scalarOut = RankedTensorType::get({}, target);
  Value hiBound = n.constant(DenseElementsAttr::get(scalarIn, llvm::ArrayRef(bound)));
  llvm::APFloat negBound = bound;
  negBound.changeSign();
  Value loBound = n.constant(DenseElementsAttr::get(scalarIn, llvm::ArrayRef(negBound)));
  auto saturated = n.createOne<tx::CastOp>({n.input(0)}, {}, inType.clone(target));
  auto high = tieGoesUp ? n.createOne<tx::GreaterOrEqualOp>({n.input(0), hiBound})
                        : n.createOne<tx::GreaterOp>({n.input(0), hiBound});
  auto low = tieGoesUp ? n.createOne<tx::LessOrEqualOp>({n.input(0), loBound})
                       : n.createOne<tx::LessOp>({n.input(0), loBound});
  if (failed(saturated) || failed(high) || failed(low))
    return failure();
  if (llvm::APFloat::semanticsHasInf(sem)) {
    Value posInf = n.constant(DenseElementsAttr::get(
        scalarOut, llvm::ArrayRef(llvm::APFloat::getInf(sem))));
    Value negInf = n.constant(DenseElementsAttr::get(
        scalarOut, llvm::ArrayRef(llvm::APFloat::getInf(sem, /*Negative=*/true))));
    auto lowOrSaturated = n.createOne<tx::WhereOp>({*low, negInf, *saturated});
    if (failed(lowOrSaturated))
      return failure();
    return setOne(n, n.createOne<tx::WhereOp>({*high, posInf, *lowOrSaturated}));
  }
  Value nan = n.constant(DenseElementsAttr::get(
      scalarOut, llvm::ArrayRef(llvm::APFloat::getNaN(sem))));
  auto overflow = n.createOne<tx::OrOp>({*high, *low});
  if (failed(overflow))
    return failure();
  return setOne(n, n.createOne<tx::WhereOp>({*overflow, nan, *saturated}));
}

/// Cast from a float to int4/uint4/int2/uint2 (ONNX types 22, 21, 26, 25).
/// ONNX's reference evaluator (onnx.reference, Cast: x.astype(dtype), which
/// is ml_dtypes' conversion) truncates toward zero and gives 0 for NaN, the
/// infinities and every value whose truncation lies outside the target's
/// range; tx.cast would instead saturate to int64 and wrap to the width
/// (8.0 to int4 giving -8). trunc(x) lies in [lo, hi] exactly when
/// lo - 1 < x < hi + 1, which NaN fails. The comparisons run in x's type
/// when it holds both bounds exactly (16-bit floats and wider do), else in
/// f32, which holds every value of the narrower floats (float8e5m2 has no
/// -9, int4's lower bound).
static LogicalResult importFloatToSubByteInt(NodeImporter &n, Type target,
                                             int32_t dataType) {
  unsigned width = target.getIntOrFloatBitWidth();
  bool isUnsigned = dataType == 21 || dataType == 25;
  int64_t lo = isUnsigned ? 0 : -(int64_t(1) << (width - 1));
  int64_t hi = isUnsigned ? (int64_t(1) << width) - 1
                          : (int64_t(1) << (width - 1)) - 1;
  auto inType = n.type(0);
  auto exactIn = [](FloatType type, int64_t v) {
    llvm::APFloat f(static_cast<double>(v));
    bool lost = false;
    f.convert(type.getFloatSemantics(), llvm::APFloat::rmNearestTiesToEven, &lost);
    return std::make_pair(f, !lost);
  };
  auto compareType = llvm::cast<FloatType>(inType.getElementType());
  Value x = n.input(0);
  if (!exactIn(compareType, lo - 1).second || !exactIn(compareType, hi + 1).second) {
    compareType = n.builder.getF32Type();
    auto wide = n.createOne<tx::CastOp>({x}, {}, inType.clone(compareType));
    if (failed(wide))
      return failure();
    x = *wide;
  }
  auto bound = [&](int64_t v) {
    return n.constant(DenseElementsAttr::get(
        RankedTensorType::get({}, compareType),
        llvm::ArrayRef(exactIn(compareType, v).first)));
  };
  Value below = bound(lo - 1), above = bound(hi + 1);
  Value zero = n.constant(DenseElementsAttr::get(
      RankedTensorType::get({}, target), llvm::APInt(width, 0)));
  auto aboveLow = n.createOne<tx::GreaterOp>({x, below});
  auto belowHigh = n.createOne<tx::LessOp>({x, above});
  auto converted = n.createOne<tx::CastOp>({n.input(0)}, {}, inType.clone(target));
  if (failed(aboveLow) || failed(belowHigh) || failed(converted))
    return failure();
  auto inRange = n.createOne<tx::AndOp>({*aboveLow, *belowHigh});
  if (failed(inRange))
    return failure();
  return setOne(n, n.createOne<tx::WhereOp>({*inRange, *converted, zero}));
}

LogicalResult importCast(NodeImporter &n) {
  const onnx::AttributeProto *to = n.findAttr("to");
  if (failed(n.expectInputs(1, 1)))
    return failure();
  if (!to)
    return n.fail("missing required attribute 'to'");
  auto dataType = n.attrInt("to", 0);
  if (failed(dataType))
    return failure();
  Type elementType = convertElementType(n.getContext(), *dataType);
  if (!elementType)
    return n.fail("cast to " + dataTypeName(*dataType) + " is not supported");
  if (elementType.isInteger() && elementType.getIntOrFloatBitWidth() < 8 &&
      !elementType.isInteger(1) && isa<FloatType>(n.type(0).getElementType()))
    return importFloatToSubByteInt(n, elementType, *dataType);
  // tx.cast to FP8 saturates (the default, saturate = 1); ONNX's other
  // mode sends overflow to NaN or infinity.
  auto saturate = n.opset >= 19 ? n.attrInt("saturate", 1) : FailureOr<int64_t>(1);
  if (failed(saturate))
    return failure();
  // tx.cast to float8e8m0 rounds up and saturates (ONNX's defaults, and
  // CUDA's conversion); the other modes are not implemented.
  if (isa<Float8E8M0FNUType>(elementType)) {
    auto roundMode = n.opset >= 24 ? n.attrString("round_mode", "up")
                                   : FailureOr<std::string>(std::string("up"));
    if (failed(roundMode))
      return failure();
    if (*roundMode != "up" || *saturate == 0)
      return n.fail("cast to float8e8m0 with round_mode = '" + *roundMode +
                    "' and saturate = " + std::to_string(*saturate) +
                    " is not supported (only round_mode = 'up' with "
                    "saturate = 1, the default)");
  }
  if (*saturate == 0 && isa<FloatType>(elementType) &&
      elementType.getIntOrFloatBitWidth() == 8)
    return importNonSaturatingFloat8Cast(n, llvm::cast<FloatType>(elementType),
                                         dataTypeName(*dataType));
  // Before opset 24, saturating casts to the FNUZ formats sent infinities
  // to NaN; tx.cast follows opset 24 and saturates them.
  if (n.opset < 24 && isa<Float8E4M3FNUZType, Float8E5M2FNUZType>(elementType))
    return n.fail("cast to " + dataTypeName(*dataType) + " at opset " +
                  std::to_string(n.opset) +
                  " sends infinities to NaN, which tx.cast does not (it "
                  "saturates them, as opset 24 does); upgrade the model to "
                  "opset 24 or newer");
  // Cast to the same type is the identity; keep the graph free of no-ops.
  if (n.type(0).getElementType() == elementType) {
    n.setResult(0, n.input(0));
    return success();
  }
  return setOne(n, n.createOne<tx::CastOp>({n.input(0)}, {},
                                           n.type(0).clone(elementType)));
}

/// Max / Min (opset 13+: every numeric type, one or more inputs broadcast
/// together). tx.max / tx.min are binary, so n inputs become a chain of
/// n - 1 ops and a single input is the result itself (see TxOps.td).
template <typename OpTy>
LogicalResult importVariadicMinMax(NodeImporter &n) {
  if (n.numInputs() == 0)
    return n.fail("expected at least one input");
  for (unsigned i = 0; i < n.numInputs(); ++i)
    if (!n.has(i))
      return n.fail("input " + std::to_string(i) + " is missing");
  Value result = n.input(0);
  for (unsigned i = 1; i < n.numInputs(); ++i) {
    FailureOr<Value> next = n.createOne<OpTy>({result, n.input(i)});
    if (failed(next))
      return failure();
    result = *next;
  }
  n.setResult(0, result);
  return success();
}

LogicalResult importWhere(NodeImporter &n) {
  if (failed(n.expectInputs(3, 3)))
    return failure();
  return setOne(n, n.createOne<tx::WhereOp>(
                       {n.input(0), n.input(1), n.input(2)}));
}

//===----------------------------------------------------------------------===//
// Linear algebra and indexing
//===----------------------------------------------------------------------===//

LogicalResult importGemm(NodeImporter &n) {
  auto alpha = n.attrFloat("alpha", 1.0f);
  auto beta = n.attrFloat("beta", 1.0f);
  auto transA = n.attrInt("transA", 0);
  auto transB = n.attrInt("transB", 0);
  if (failed(n.expectInputs(2, 3)) || failed(alpha) || failed(beta) ||
      failed(transA) || failed(transB))
    return failure();
  llvm::SmallVector<Value> operands{n.input(0), n.input(1)};
  if (n.has(2))
    operands.push_back(n.input(2));
  Builder &b = n.builder;
  return setOne(n, n.createOne<tx::GemmOp>(
                       operands, {n.named("alpha", b.getF32FloatAttr(*alpha)),
                                  n.named("beta", b.getF32FloatAttr(*beta)),
                                  n.named("transA", b.getBoolAttr(*transA != 0)),
                                  n.named("transB", b.getBoolAttr(*transB != 0))}));
}

/// Constant indices must lie in [-dim, dim) along the gathered axis: ONNX
/// leaves an index out of range undefined, so such a model is invalid, and
/// the importer says so instead of leaving it to txopt-run.
LogicalResult checkConstantIndices(NodeImporter &n, int64_t axis) {
  DenseElementsAttr indices = n.constantInput(1);
  if (!indices || !llvm::isa<IntegerType>(indices.getElementType()))
    return success();
  auto normalized = axisFor(n, axis, n.type(0).getRank());
  if (failed(normalized))
    return failure();
  int64_t dim = n.type(0).getDimSize(*normalized);
  int64_t position = 0;
  for (const APInt &value : indices.getValues<APInt>()) {
    int64_t index = value.getBitWidth() == 1
                        ? static_cast<int64_t>(value.getZExtValue())
                        : value.getSExtValue();
    if (index < -dim || index >= dim)
      return n.fail("index " + std::to_string(index) + " (element " +
                    std::to_string(position) + " of the constant indices " +
                    quote(n.node.input(1)) + ") is out of range for dim " +
                    std::to_string(*normalized) + " of size " +
                    std::to_string(dim));
    ++position;
  }
  return success();
}

template <typename OpTy>
LogicalResult importGather(NodeImporter &n) {
  auto axis = n.attrInt("axis", 0);
  if (failed(n.expectInputs(2, 2)) || failed(axis) ||
      failed(checkConstantIndices(n, *axis)))
    return failure();
  return setOne(n, n.createOne<OpTy>(
                       {n.input(0), n.input(1)},
                       {n.named("axis", n.builder.getI64IntegerAttr(*axis))}));
}

/// GatherND: `batch_dims` (opset 12+; absent, i.e. 0, before) becomes the
/// attribute of the same name; tx.gather_nd's inference checks it against
/// the operand shapes.
LogicalResult importGatherND(NodeImporter &n) {
  auto batchDims = n.attrInt("batch_dims", 0);
  if (failed(n.expectInputs(2, 2)) || failed(batchDims))
    return failure();
  return setOne(n, n.createOne<tx::GatherNDOp>(
                       {n.input(0), n.input(1)},
                       {n.named("batch_dims",
                                n.builder.getI64IntegerAttr(*batchDims))}));
}

//===----------------------------------------------------------------------===//
// Scans
//===----------------------------------------------------------------------===//

/// CumSum (opset 11+, f16/bf16 from 14): the axis is an input, a 0-d or
/// one-element int32/int64 tensor, and must be constant after folding since
/// tx.cum_sum keeps it as an attribute. `exclusive` and `reverse` are ints.
LogicalResult importCumSum(NodeImporter &n) {
  auto exclusive = n.attrInt("exclusive", 0);
  auto reverse = n.attrInt("reverse", 0);
  if (failed(n.expectInputs(2, 2)) || failed(exclusive) || failed(reverse))
    return failure();
  auto given = n.constantInts(1, "the axis operand");
  if (failed(given))
    return failure();
  if (given->size() != 1)
    return n.fail("the axis operand must have one element, but has " +
                  std::to_string(given->size()));
  auto axis = axisFor(n, given->front(), n.type(0).getRank());
  if (failed(axis))
    return failure();
  Builder &b = n.builder;
  llvm::SmallVector<NamedAttribute> attrs{
      n.named("axis", b.getI64IntegerAttr(*axis))};
  if (*exclusive)
    attrs.push_back(n.named("exclusive", b.getUnitAttr()));
  if (*reverse)
    attrs.push_back(n.named("reverse", b.getUnitAttr()));
  return setOne(n, n.createOne<tx::CumSumOp>({n.input(0)}, attrs, n.type(0)));
}

//===----------------------------------------------------------------------===//
// Registry
//===----------------------------------------------------------------------===//

struct OpEntry {
  ImportFn fn;
  int64_t since; ///< default-domain opset that introduced the op (0: any)
};

const llvm::StringMap<OpEntry> &registry() {
  static const llvm::StringMap<OpEntry> table = {
      {"Add", {importBinary<tx::AddOp>, 0}},
      {"Sub", {importBinary<tx::SubOp>, 0}},
      {"Mul", {importBinary<tx::MulOp>, 0}},
      {"Div", {importBinary<tx::DivOp>, 0}},
      {"Pow", {importBinary<tx::PowOp>, 0}},
      {"Mod", {importMod, 0}},
      {"Equal", {importBinary<tx::EqualOp>, 0}},
      {"GreaterOrEqual", {importBinary<tx::GreaterOrEqualOp>, 0}},
      {"Less", {importBinary<tx::LessOp>, 0}},
      {"LessOrEqual", {importBinary<tx::LessOrEqualOp>, 0}},
      {"Greater", {importBinary<tx::GreaterOp>, 0}},
      {"And", {importBinary<tx::AndOp>, 0}},
      {"Or", {importBinary<tx::OrOp>, 0}},
      {"Xor", {importBinary<tx::XorOp>, 0}},
      {"Not", {importUnary<tx::NotOp>, 0}},
      {"Max", {importVariadicMinMax<tx::MaxOp>, 0}},
      {"Min", {importVariadicMinMax<tx::MinOp>, 0}},
      {"Where", {importWhere, 0}},
      {"Sqrt", {importUnary<tx::SqrtOp>, 0}},
      {"Reciprocal", {importUnary<tx::ReciprocalOp>, 0}},
      {"Neg", {importUnary<tx::NegOp>, 0}},
      {"Erf", {importUnary<tx::ErfOp>, 0}},
      {"Tanh", {importUnary<tx::TanhOp>, 0}},
      {"Sigmoid", {importUnary<tx::SigmoidOp>, 0}},
      {"Relu", {importUnary<tx::ReluOp>, 0}},
      {"Exp", {importUnary<tx::ExpOp>, 0}},
      {"Log", {importUnary<tx::LogOp>, 0}},
      {"Sin", {importUnary<tx::SinOp>, 0}},
      {"Cos", {importUnary<tx::CosOp>, 0}},
      {"IsNaN", {importIsNaN, 0}},
      {"Cast", {importCast, 0}},
      {"MatMul", {importBinary<tx::MatMulOp>, 0}},
      {"Gemm", {importGemm, 0}},
      {"Gather", {importGather<tx::GatherOp>, 0}},
      {"GatherElements", {importGather<tx::GatherElementsOp>, 0}},
      {"GatherND", {importGatherND, 0}},
      {"Reshape", {importReshape, 0}},
      {"Flatten", {importFlatten, 0}},
      {"Expand", {importExpand, 0}},
      {"Transpose", {importTranspose, 0}},
      {"Split", {importSplit, 0}},
      {"Slice", {importSlice, 0}},
      {"Concat", {importConcat, 0}},
      {"Squeeze", {importSqueeze, 0}},
      {"Unsqueeze", {importUnsqueeze, 0}},
      {"Pad", {importPad, 0}},
      {"Trilu", {importTrilu, 14}},
      {"ReduceMean", {importReduceMean, 0}},
      {"ReduceSum", {importReduceSum, 0}},
      {"ReduceMax", {importReduceMax, 0}},
      {"CumSum", {importCumSum, 0}},
      {"Softmax", {importSoftmax, 0}},
      {"LayerNormalization", {importLayerNorm, 17}},
      {"RMSNormalization", {importRMSNorm, 23}},
      {"SoftmaxCrossEntropyLoss", {importSoftmaxCrossEntropyLoss, 0}},
      {"Dropout", {importDropout, 0}},
      {"Identity", {importIdentity, 0}},
      {"Shape", {importShape, 0}},
      {"ConstantOfShape", {importConstantOfShape, 0}},
      {"Range", {importRange, 0}},
      {"Constant", {importConstant, 0}},
      {"Gelu", {importGelu, 20}},
      {"Attention", {importAttention, 23}},
      {"com.microsoft.SimplifiedLayerNormalization", {importRMSNorm, 0}},
      {"ai.onnx.preview.training.Adam", {importPreviewTrainingAdam, 0}},
  };
  return table;
}

/// Registry key: op_type for ai.onnx, "domain.op_type" otherwise.
std::string registryKey(llvm::StringRef domain, llvm::StringRef opType) {
  if (domain.empty() || domain == "ai.onnx")
    return opType.str();
  return (domain + "." + opType).str();
}
} // namespace

bool onnx_import::isSupportedOp(llvm::StringRef domain, llvm::StringRef opType) {
  return registry().count(registryKey(domain, opType));
}

int64_t onnx_import::minimumOpsetFor(llvm::StringRef opType) {
  auto it = registry().find(opType);
  return it == registry().end() ? 0 : it->second.since;
}

int64_t onnx_import::oldestReadableOpsetFor(llvm::StringRef opType) {
  // Slice-1 takes starts/ends/axes as attributes and Pad-2 its constant as
  // a `value` attribute; importSlice/importPad read only the input forms,
  // so reading those models would silently drop the attributes.
  return llvm::StringSwitch<int64_t>(opType)
      .Case("Slice", 10)
      .Case("Pad", 11)
      .Default(0);
}

LogicalResult onnx_import::importNode(NodeImporter &importer,
                                      llvm::StringRef domain) {
  auto it = registry().find(registryKey(domain, importer.node.op_type()));
  if (it == registry().end())
    return importer.fail("unsupported op");
  return it->second.fn(importer);
}
