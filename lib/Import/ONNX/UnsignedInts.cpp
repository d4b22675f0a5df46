//===- UnsignedInts.cpp - ONNX unsigned integers on signless tx ints ------===//
//
// SPDX-License-Identifier: Apache-2.0
// tx integers are signless, and its ops that depend on signedness (division,
// ordering, conversion to a wider or float type) read them as signed. ONNX
// uint8/16/32 values past the signed range would read as negative, so the
// importer tracks which ONNX values are unsigned and gives those ops
// zero-extended i64 operands, narrowing the result back where it is of the
// operand type. uint64 has no wider type: its comparisons and Max/Min are
// rewritten on the signed order, Div and Mod through a halved dividend,
// Pow's uint64 exponent split at 2^63, a Cast from a float to uint64 is
// split at 2^63, and the other sign-dependent ops refuse a uint64 operand.
//
//===----------------------------------------------------------------------===//

#include "ImporterInternal.h"

#include "llvm/ADT/StringSwitch.h"

#include <limits>

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::onnx_import;

namespace {

/// ONNX TensorProto data types that are unsigned integers, with their width.
unsigned unsignedWidth(int32_t dataType) {
  switch (dataType) {
  case 25: return 2; // uint2 (opset 25; newer than libonnx 1.12)
  case 21: return 4; // uint4 (opset 21)
  case onnx::TensorProto::UINT8: return 8;
  case onnx::TensorProto::UINT16: return 16;
  case onnx::TensorProto::UINT32: return 32;
  case onnx::TensorProto::UINT64: return 64;
  default: return 0;
  }
}

/// How a default-domain op depends on the signedness of its integer
/// operands.
enum class Sensitivity {
  None,       ///< wrapping arithmetic, data movement, equality: bits suffice
  Result,     ///< computes in the operand type: widen, then narrow back
  Comparison, ///< ordering (bool result) or conversion: widen only
};

Sensitivity sensitivityOf(llvm::StringRef opType) {
  return llvm::StringSwitch<Sensitivity>(opType)
      .Cases({"Div", "Mod", "Max", "Min", "Pow", "ReduceMax", "ReduceMean"},
             Sensitivity::Result)
      .Cases({"Less", "LessOrEqual", "Greater", "GreaterOrEqual", "Cast"},
             Sensitivity::Comparison)
      .Default(Sensitivity::None);
}

bool isDefault(llvm::StringRef domain) {
  return domain.empty() || domain == "ai.onnx";
}

/// The width of the unsigned type a tensor attribute (Constant's `value`,
/// ConstantOfShape's `value`) holds, or 0.
unsigned tensorAttrWidth(const onnx::NodeProto &node) {
  for (const onnx::AttributeProto &attr : node.attribute())
    if (attr.name() == "value" && attr.has_t())
      return unsignedWidth(attr.t().data_type());
  return 0;
}

/// `a <u b` (or <=, >, >= by |OpTy|) for uint64 in signless i64: when the
/// signs agree the signed order is the unsigned one; when they differ it
/// is reversed, and exactly one of `a < 0`, `b < 0` holds, so
/// `cmp(a, b) xor (a < 0) xor (b < 0)` is the unsigned comparison.
template <typename OpTy>
FailureOr<Value> compareUnsigned64(NodeImporter &n, Value a, Value b) {
  Value zero = n.constant(DenseElementsAttr::get(
      RankedTensorType::get({}, n.builder.getI64Type()), int64_t(0)));
  auto cmp = n.createOne<OpTy>({a, b});
  auto aNeg = n.createOne<tx::LessOp>({a, zero});
  auto bNeg = n.createOne<tx::LessOp>({b, zero});
  if (failed(cmp) || failed(aNeg) || failed(bNeg))
    return failure();
  auto once = n.createOne<tx::XorOp>({*cmp, *aNeg});
  if (failed(once))
    return failure();
  return n.createOne<tx::XorOp>({*once, *bNeg});
}

/// `a /u b` (or `a %u b` when |remainder|) for uint64 in signless i64,
/// with signed truncating division only. A divisor from 2^63 up (negative
/// as i64) goes into any dividend at most once: the quotient is `a >=u b`.
/// A smaller divisor is positive as i64; halving the dividend first
/// (`h = a >>u 1`, which is non-negative) makes the signed division exact:
/// q0 = 2 * (h / b) is the true quotient or one less, and the remainder
/// a - q0 * b (below 2b, so it fits u64) says which. `a >>u 1` is a / 2
/// for a >= 0 and (a - INT64_MIN) / 2 + 2^62 for a < 0 (a - INT64_MIN
/// wraps to a + 2^63, in [0, 2^63)). b = 0 divides by zero where signed
/// Div would, with the executor's error.
FailureOr<Value> divideUnsigned64(NodeImporter &n, Value a, Value b,
                                  bool remainder) {
  auto i64 = n.builder.getI64Type();
  auto scalar = [&](int64_t v) { return n.intScalar(i64, v); };
  Value zero = scalar(0), one = scalar(1), two = scalar(2);
  Value minValue = scalar(std::numeric_limits<int64_t>::min());
  Value quarter = scalar(int64_t(1) << 62);
  auto aNeg = n.createOne<tx::LessOp>({a, zero});
  auto bNeg = n.createOne<tx::LessOp>({b, zero});
  auto halfPos = n.createOne<tx::DivOp>({a, two});
  auto shifted = n.createOne<tx::SubOp>({a, minValue});
  if (failed(aNeg) || failed(bNeg) || failed(halfPos) || failed(shifted))
    return failure();
  auto shiftedHalf = n.createOne<tx::DivOp>({*shifted, two});
  if (failed(shiftedHalf))
    return failure();
  auto halfNeg = n.createOne<tx::AddOp>({*shiftedHalf, quarter});
  if (failed(halfNeg))
    return failure();
  auto half = n.createOne<tx::WhereOp>({*aNeg, *halfNeg, *halfPos});
  if (failed(half))
    return failure();
  // Small divisor: q0 = 2 * (h / b), corrected by one when a - q0 * b >=u b.
  auto partial = n.createOne<tx::DivOp>({*half, b});
  if (failed(partial))
    return failure();
  auto q0 = n.createOne<tx::MulOp>({*partial, two});
  if (failed(q0))
    return failure();
  auto q0b = n.createOne<tx::MulOp>({*q0, b});
  if (failed(q0b))
    return failure();
  auto r0 = n.createOne<tx::SubOp>({a, *q0b});
  if (failed(r0))
    return failure();
  auto carry = compareUnsigned64<tx::GreaterOrEqualOp>(n, *r0, b);
  if (failed(carry))
    return failure();
  auto carryInt = n.createOne<tx::WhereOp>({*carry, one, zero});
  if (failed(carryInt))
    return failure();
  auto qSmall = n.createOne<tx::AddOp>({*q0, *carryInt});
  // Large divisor: one when a >=u b, else zero.
  auto fits = compareUnsigned64<tx::GreaterOrEqualOp>(n, a, b);
  if (failed(qSmall) || failed(fits))
    return failure();
  auto qLarge = n.createOne<tx::WhereOp>({*fits, one, zero});
  if (failed(qLarge))
    return failure();
  auto quotient = n.createOne<tx::WhereOp>({*bNeg, *qLarge, *qSmall});
  if (failed(quotient) || !remainder)
    return quotient;
  auto qb = n.createOne<tx::MulOp>({*quotient, b});
  if (failed(qb))
    return failure();
  return n.createOne<tx::SubOp>({a, *qb});
}

/// Pow(x, y) with a float base and a uint64 exponent (ONNX's only uint64
/// Pow: the base type has no unsigned integers). Exponents below 2^63 read
/// the same as i64. From 2^63 up every exponent is an even integer at
/// least 2^63, and for every double x, x^y is then x^(2^63): 1 for |x| = 1,
/// 0 below, infinity above, NaN for NaN (the smallest double past 1,
/// 1 + 2^-52, already overflows: e^2048). So those take x^c with c = 2^63
/// in x's type, or infinity where the type cannot hold it (f16), which
/// pow treats the same on every x.
FailureOr<Value> powUnsigned64Exponent(NodeImporter &n, Value x, Value y) {
  auto floatType = llvm::cast<FloatType>(
      llvm::cast<RankedTensorType>(x.getType()).getElementType());
  llvm::APFloat big(std::ldexp(1.0, 63));
  bool lost = false;
  big.convert(floatType.getFloatSemantics(), llvm::APFloat::rmNearestTiesToEven,
              &lost);
  Value bigExponent = n.constant(DenseElementsAttr::get(
      RankedTensorType::get({}, floatType), llvm::ArrayRef(big)));
  Value zero = n.constant(DenseElementsAttr::get(
      RankedTensorType::get({}, n.builder.getI64Type()), int64_t(0)));
  auto huge = n.createOne<tx::LessOp>({y, zero});
  auto direct = n.createOne<tx::PowOp>({x, y});
  auto saturated = n.createOne<tx::PowOp>({x, bigExponent});
  if (failed(huge) || failed(direct) || failed(saturated))
    return failure();
  return n.createOne<tx::WhereOp>({*huge, *saturated, *direct});
}

/// The uint64 forms of the sign-dependent ops that need no wider type:
/// ordering comparisons and Max/Min (a select on `<u`). Fails (with the
/// node's error) for the others.
LogicalResult importUnsigned64(NodeImporter &n) {
  llvm::StringRef op = n.node.op_type();
  for (unsigned i = 0; i < n.numInputs(); ++i)
    if (!n.has(i))
      return n.fail("input " + std::to_string(i) + " is missing");
  FailureOr<Value> result = failure();
  if ((op == "Less" || op == "Greater" || op == "LessOrEqual" ||
       op == "GreaterOrEqual") &&
      n.numInputs() == 2) {
    Value a = n.input(0), b = n.input(1);
    if (op == "Less")
      result = compareUnsigned64<tx::LessOp>(n, a, b);
    else if (op == "Greater")
      result = compareUnsigned64<tx::GreaterOp>(n, a, b);
    else if (op == "LessOrEqual")
      result = compareUnsigned64<tx::LessOrEqualOp>(n, a, b);
    else
      result = compareUnsigned64<tx::GreaterOrEqualOp>(n, a, b);
  } else if ((op == "Max" || op == "Min") && n.numInputs() >= 1) {
    // Left to right, as importVariadicMinMax chains tx.max / tx.min.
    Value acc = n.input(0);
    for (unsigned i = 1; i < n.numInputs(); ++i) {
      auto less = compareUnsigned64<tx::LessOp>(n, acc, n.input(i));
      if (failed(less))
        return failure();
      auto picked = op == "Max"
                        ? n.createOne<tx::WhereOp>({*less, n.input(i), acc})
                        : n.createOne<tx::WhereOp>({*less, acc, n.input(i)});
      if (failed(picked))
        return failure();
      acc = *picked;
    }
    result = acc;
  } else if ((op == "Div" || op == "Mod") && n.numInputs() == 2) {
    // Mod on unsigned values has no sign to choose: fmod = 0 and 1 agree.
    result = divideUnsigned64(n, n.input(0), n.input(1), op == "Mod");
  } else if (op == "Pow" && n.numInputs() == 2 &&
             isa<FloatType>(n.type(0).getElementType())) {
    result = powUnsigned64Exponent(n, n.input(0), n.input(1));
  } else {
    return n.fail(op + " on uint64 is not supported: tx integers are signless, "
                       "and there is no wider type to compute it in");
  }
  if (failed(result))
    return failure();
  n.setResult(0, *result);
  return success();
}

/// Cast from a float to uint64: values from 2^63 up do not fit i64, whose
/// conversion saturates; they are converted after subtracting 2^63, and
/// adding 2^63 back in wrapping i64 arithmetic gives the uint64 bits.
LogicalResult importFloatToUnsigned64(NodeImporter &n) {
  RankedTensorType type = n.type(0);
  auto floatType = llvm::cast<FloatType>(type.getElementType());
  auto i64 = n.builder.getI64Type();
  llvm::APFloat twoPow63 = llvm::APFloat::getOne(floatType.getFloatSemantics());
  twoPow63 = llvm::scalbn(twoPow63, 63, llvm::APFloat::rmNearestTiesToEven);
  Value bound = n.constant(DenseElementsAttr::get(
      RankedTensorType::get({}, floatType), llvm::ArrayRef(twoPow63)));
  Value signBit = n.constant(DenseElementsAttr::get(
      RankedTensorType::get({}, i64), std::numeric_limits<int64_t>::min()));
  auto big = n.createOne<tx::GreaterOrEqualOp>({n.input(0), bound});
  auto low = n.createOne<tx::CastOp>({n.input(0)}, {}, type.clone(i64));
  auto shifted = n.createOne<tx::SubOp>({n.input(0), bound});
  if (failed(big) || failed(low) || failed(shifted))
    return failure();
  auto shiftedInt = n.createOne<tx::CastOp>({*shifted}, {}, type.clone(i64));
  if (failed(shiftedInt))
    return failure();
  auto high = n.createOne<tx::AddOp>({*shiftedInt, signBit});
  if (failed(high))
    return failure();
  return setOne(n, n.createOne<tx::WhereOp>({*big, *high, *low}));
}

} // namespace

llvm::StringMap<unsigned>
onnx_import::findUnsignedValues(const onnx::GraphProto &graph,
                                llvm::ArrayRef<int> order) {
  llvm::StringMap<unsigned> widths;
  for (const onnx::ValueInfoProto &input : graph.input())
    if (input.type().has_tensor_type())
      if (unsigned w = unsignedWidth(input.type().tensor_type().elem_type()))
        widths[input.name()] = w;
  for (const onnx::TensorProto &init : graph.initializer())
    if (unsigned w = unsignedWidth(init.data_type()))
      widths[init.name()] = w;
  // Forward in topological order: an output has the type its op gives it.
  for (int index : order) {
    const onnx::NodeProto &node = graph.node(index);
    unsigned width = 0;
    llvm::StringRef op = node.op_type();
    if (!isDefault(node.domain())) {
      width = 0;
    } else if (op == "Cast") {
      for (const onnx::AttributeProto &attr : node.attribute())
        if (attr.name() == "to")
          width = unsignedWidth(static_cast<int32_t>(attr.i()));
    } else if (op == "Constant" || op == "ConstantOfShape") {
      width = tensorAttrWidth(node);
    } else if (llvm::is_contained({"Equal", "Less", "LessOrEqual", "Greater",
                                   "GreaterOrEqual", "IsNaN", "And", "Or",
                                   "Xor", "Not", "Shape"},
                                  op)) {
      width = 0;
    } else {
      // Same-type ops: the data operand's type (Where's is input 1).
      int data = op == "Where" ? 1 : 0;
      if (node.input_size() > data)
        width = widths.lookup(node.input(data));
    }
    if (width)
      for (const std::string &output : node.output())
        if (!output.empty())
          widths[output] = width;
  }
  return widths;
}

LogicalResult
onnx_import::importNodeWithSignedness(NodeImporter &n, llvm::StringRef domain,
                                      const llvm::StringMap<unsigned> &widths) {
  Sensitivity sensitivity = isDefault(domain)
                                ? sensitivityOf(n.node.op_type())
                                : Sensitivity::None;
  if (isDefault(domain) && n.node.op_type() == "Cast" && n.has(0) &&
      n.node.output_size() > 0 && widths.lookup(n.node.output(0)) == 64 &&
      isa<FloatType>(n.type(0).getElementType()))
    return importFloatToUnsigned64(n);
  llvm::SmallVector<unsigned> widened;
  for (unsigned i = 0; sensitivity != Sensitivity::None && i < n.numInputs(); ++i) {
    unsigned width = widths.lookup(n.node.input(i));
    if (!width || !n.has(i))
      continue;
    if (width == 64)
      return importUnsigned64(n);
    // zext(x) = sext(x) mod 2^width, with the divisor's sign (fmod = false).
    Builder &b = n.builder;
    auto i64 = b.getIntegerType(64);
    auto type = n.type(i);
    auto wide = n.createOne<tx::CastOp>({n.input(i)}, {}, type.clone(i64));
    if (failed(wide))
      return failure();
    Value modulus = n.constant(DenseElementsAttr::get(
        RankedTensorType::get({}, i64),
        llvm::ArrayRef<int64_t>(int64_t(1) << width)));
    auto zext = n.createOne<tx::ModOp>({*wide, modulus},
                                       {n.named("fmod", b.getBoolAttr(false))});
    if (failed(zext))
      return failure();
    n.replaceInput(i, *zext);
    widened.push_back(width);
  }
  if (failed(importNode(n, domain)))
    return failure();
  if (sensitivity != Sensitivity::Result || widened.empty())
    return success();
  // The op computed in i64 what ONNX computes in the unsigned type; every
  // value it can produce fits that type, so narrowing is exact.
  unsigned width = widths.lookup(n.node.output(0));
  for (unsigned i = 0; width && i < n.numOutputs(); ++i) {
    Value result = n.getResults()[i];
    auto type = result ? llvm::dyn_cast<RankedTensorType>(result.getType())
                       : RankedTensorType();
    if (!type || !type.getElementType().isInteger(64) || width == 64)
      continue;
    auto narrow = n.createOne<tx::CastOp>(
        {result}, {}, type.clone(n.builder.getIntegerType(width)));
    if (failed(narrow))
      return failure();
    n.setResult(i, *narrow);
  }
  return success();
}
