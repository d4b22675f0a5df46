//===- ConstantFolder.cpp - import-time evaluation of tx ops --------------===//
//
// SPDX-License-Identifier: Apache-2.0
// Exporters compute shapes at run time: Shape -> Gather -> Unsqueeze ->
// Concat -> Reshape, Cast -> Sqrt -> Div for attention scales, Range for
// position ids. With static shapes all of that is known at import, and tx
// wants it as attributes and constants. This evaluator runs a freshly built
// tx op whose operands are all tx.constant, so it folds exactly what the op
// means after the ONNX -> tx mapping (one semantics, one place).
//
// Values are evaluated as int64 (integers, bool as 0/1) or double (floats)
// and rounded once into the result type, which is exact for + - * / sqrt
// on f32, f16 and bf16 (double has more than 2p + 2 bits for each).
//
//===----------------------------------------------------------------------===//

#include "ImporterInternal.h"

#include "txopt/Dialect/Tx/IR/TxOps.h"

#include "llvm/ADT/StringSwitch.h"

#include <cmath>
#include <functional>

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::onnx_import;

namespace {

/// Constant inputs larger than this are not read element by element.
constexpr int64_t kMaxReadElements = int64_t(1) << 22;

/// A constant tensor in evaluator form. A splat keeps one element.
struct Literal {
  RankedTensorType type;
  bool isFloat = false;
  bool splat = false;
  std::vector<int64_t> ints;
  std::vector<double> floats;

  int64_t size() const { return type.getNumElements(); }
  int64_t i(int64_t index) const { return ints[splat ? 0 : index]; }
  double f(int64_t index) const { return floats[splat ? 0 : index]; }
  double asDouble(int64_t index) const {
    return isFloat ? f(index) : static_cast<double>(i(index));
  }
};

std::optional<Literal> read(DenseElementsAttr attr) {
  Literal lit;
  lit.type = llvm::cast<RankedTensorType>(attr.getType());
  lit.isFloat = llvm::isa<FloatType>(attr.getElementType());
  // An empty tensor has no element to stand for the rest.
  lit.splat = attr.isSplat() && attr.getNumElements() > 0;
  int64_t count = lit.splat ? 1 : attr.getNumElements();
  if (count > kMaxReadElements)
    return std::nullopt;
  if (lit.isFloat) {
    lit.floats.reserve(count);
    for (const APFloat &v : attr.getValues<APFloat>()) {
      lit.floats.push_back(v.convertToDouble());
      if (static_cast<int64_t>(lit.floats.size()) == count)
        break;
    }
  } else {
    bool isBool = attr.getElementType().isInteger(1);
    lit.ints.reserve(count);
    for (const APInt &v : attr.getValues<APInt>()) {
      lit.ints.push_back(isBool ? static_cast<int64_t>(v.getZExtValue())
                                : v.getSExtValue());
      if (static_cast<int64_t>(lit.ints.size()) == count)
        break;
    }
  }
  return lit;
}

/// Wraps |v| to the signed range of |width| bits (bool: 0 or 1).
int64_t wrapInt(int64_t v, unsigned width) {
  if (width == 1)
    return v & 1;
  if (width >= 64)
    return v;
  uint64_t mask = (uint64_t(1) << width) - 1;
  uint64_t bits = static_cast<uint64_t>(v) & mask;
  if (bits >> (width - 1))
    bits |= ~mask;
  return static_cast<int64_t>(bits);
}

/// The result of an evaluation before it becomes an attribute.
struct Values {
  bool splat = false;
  std::vector<int64_t> ints;
  std::vector<double> floats;
};

DenseElementsAttr write(RankedTensorType type, const Values &values) {
  Type elementType = type.getElementType();
  if (auto floatType = llvm::dyn_cast<FloatType>(elementType)) {
    llvm::SmallVector<APFloat> out;
    // Casts to the 8-bit floats saturate (tx.cast, as ONNX's saturate = 1),
    // infinities included; APFloat would overflow to NaN or infinity.
    double largest = floatType.getWidth() == 8
                         ? APFloat::getLargest(floatType.getFloatSemantics())
                               .convertToDouble()
                         : 0.0;
    for (double v : values.floats) {
      if (largest != 0.0 && std::fabs(v) > largest)
        v = std::signbit(v) ? -largest : largest;
      APFloat value(v);
      bool lost;
      value.convert(floatType.getFloatSemantics(), APFloat::rmNearestTiesToEven,
                    &lost);
      out.push_back(value);
    }
    if (values.splat)
      return DenseElementsAttr::get(RankedTensorType::get({}, elementType), out)
          .resizeSplat(type);
    return DenseElementsAttr::get(type, out);
  }
  unsigned width = elementType.getIntOrFloatBitWidth();
  llvm::SmallVector<APInt> out;
  for (int64_t v : values.ints)
    out.push_back(APInt(width, static_cast<uint64_t>(wrapInt(v, width)),
                        /*isSigned=*/width > 1, /*implicitTrunc=*/true));
  if (values.splat)
    return DenseElementsAttr::get(RankedTensorType::get({}, elementType), out)
        .resizeSplat(type);
  return DenseElementsAttr::get(type, out);
}

/// Row-major strides of |shape|.
llvm::SmallVector<int64_t> stridesOf(llvm::ArrayRef<int64_t> shape) {
  llvm::SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

/// For each operand, the flat operand index of every result element under
/// numpy broadcasting to |outShape| (splat operands always read index 0).
std::vector<std::vector<int64_t>>
broadcastIndices(llvm::ArrayRef<int64_t> outShape,
                 llvm::ArrayRef<const Literal *> operands) {
  int64_t rank = outShape.size();
  int64_t count = 1;
  for (int64_t d : outShape)
    count *= d;
  std::vector<std::vector<int64_t>> result(operands.size());
  for (auto [k, lit] : llvm::enumerate(operands)) {
    result[k].assign(count, 0);
    if (lit->splat)
      continue;
    llvm::ArrayRef<int64_t> shape = lit->type.getShape();
    llvm::SmallVector<int64_t> strides = stridesOf(shape);
    // Stride per result dim: 0 where the operand is broadcast.
    llvm::SmallVector<int64_t> mapped(rank, 0);
    int64_t offset = rank - shape.size();
    for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
      mapped[d + offset] = shape[d] == 1 ? 0 : strides[d];
    llvm::SmallVector<int64_t> coord(rank, 0);
    int64_t index = 0;
    for (int64_t flat = 0; flat < count; ++flat) {
      result[k][flat] = index;
      for (int64_t d = rank - 1; d >= 0; --d) {
        index += mapped[d];
        if (++coord[d] < outShape[d])
          break;
        index -= mapped[d] * coord[d];
        coord[d] = 0;
      }
    }
  }
  return result;
}

/// Evaluates an elementwise op: |fn(indices of each operand)| fills one
/// result element. All-splat operands give a splat result of any size.
template <typename Fn>
std::optional<Values> elementwise(RankedTensorType resultType,
                                  llvm::ArrayRef<const Literal *> operands,
                                  bool floatResult, Fn fn) {
  bool allSplat = llvm::all_of(operands, [](const Literal *l) { return l->splat; });
  Values out;
  out.splat = allSplat && resultType.getNumElements() > 0;
  int64_t count = out.splat ? 1 : resultType.getNumElements();
  if (!out.splat && count > kMaxFoldElements)
    return std::nullopt;
  std::vector<std::vector<int64_t>> indices;
  if (!out.splat)
    indices = broadcastIndices(resultType.getShape(), operands);
  llvm::SmallVector<int64_t, 3> at(operands.size(), 0);
  for (int64_t e = 0; e < count; ++e) {
    for (size_t k = 0; k < operands.size(); ++k)
      at[k] = out.splat ? 0 : indices[k][e];
    if (floatResult)
      out.floats.push_back(fn(at, /*asFloat=*/true).first);
    else
      out.ints.push_back(fn(at, /*asFloat=*/false).second);
  }
  return out;
}

/// Copies elements: result element e comes from flat operand index src(e).
template <typename IndexFn>
std::optional<Values> gatherElements(const Literal &in, int64_t count,
                                     IndexFn src) {
  if (count > kMaxFoldElements)
    return std::nullopt;
  Values out;
  for (int64_t e = 0; e < count; ++e) {
    int64_t s = src(e);
    if (in.isFloat)
      out.floats.push_back(in.f(s));
    else
      out.ints.push_back(in.i(s));
  }
  return out;
}

/// Coordinates of flat index |flat| in |shape|.
llvm::SmallVector<int64_t> unflatten(int64_t flat, llvm::ArrayRef<int64_t> shape) {
  llvm::SmallVector<int64_t> coord(shape.size());
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    coord[d] = shape[d] == 0 ? 0 : flat % shape[d];
    flat = shape[d] == 0 ? 0 : flat / shape[d];
  }
  return coord;
}

int64_t flatten(llvm::ArrayRef<int64_t> coord, llvm::ArrayRef<int64_t> strides) {
  int64_t flat = 0;
  for (size_t d = 0; d < coord.size(); ++d)
    flat += coord[d] * strides[d];
  return flat;
}

/// An I64Attr axis as ODS returns it (uint64_t) made non-negative.
int64_t normalize(uint64_t axis, int64_t rank) {
  int64_t signedAxis = static_cast<int64_t>(axis);
  return signedAxis < 0 ? signedAxis + rank : signedAxis;
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

/// Integer binary arithmetic with two's-complement wrap-around, as the
/// runtime ops behave; division by zero is reported.
std::optional<int64_t> intBinary(llvm::StringRef op, int64_t a, int64_t b,
                                 bool fmod, std::string &error) {
  uint64_t ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  if (op == "tx.add")
    return static_cast<int64_t>(ua + ub);
  if (op == "tx.sub")
    return static_cast<int64_t>(ua - ub);
  if (op == "tx.mul")
    return static_cast<int64_t>(ua * ub);
  if (op == "tx.div" || op == "tx.mod") {
    if (b == 0) {
      error = "integer division by zero in a constant computation";
      return std::nullopt;
    }
    if (b == -1) // INT64_MIN / -1 overflows; the wrapped value is -a.
      return op == "tx.div" ? static_cast<int64_t>(0 - ua) : 0;
    if (op == "tx.div")
      return a / b;
    int64_t r = a % b;
    if (!fmod && r != 0 && ((r < 0) != (b < 0)))
      r += b;
    return r;
  }
  return std::nullopt;
}

double floatBinary(llvm::StringRef op, double a, double b) {
  if (op == "tx.add")
    return a + b;
  if (op == "tx.sub")
    return a - b;
  if (op == "tx.mul")
    return a * b;
  if (op == "tx.div")
    return a / b;
  if (op == "tx.mod")
    return std::fmod(a, b);
  return std::pow(a, b); // tx.pow
}

double floatUnary(llvm::StringRef op, double x) {
  return llvm::StringSwitch<std::function<double(double)>>(op)
      .Case("tx.neg", [](double v) { return -v; })
      .Case("tx.sqrt", [](double v) { return std::sqrt(v); })
      .Case("tx.reciprocal", [](double v) { return 1.0 / v; })
      .Case("tx.exp", [](double v) { return std::exp(v); })
      .Case("tx.log", [](double v) { return std::log(v); })
      .Case("tx.sin", [](double v) { return std::sin(v); })
      .Case("tx.cos", [](double v) { return std::cos(v); })
      .Case("tx.tanh", [](double v) { return std::tanh(v); })
      .Case("tx.sigmoid", sigmoid)
      .Case("tx.erf", [](double v) { return std::erf(v); })
      .Case("tx.relu", [](double v) { return v > 0 ? v : 0.0; })
      .Default([](double v) { return v; })(x);
}

/// Float -> integer conversion that truncates toward zero and never hits
/// undefined behaviour (NaN becomes 0, out-of-range values saturate).
int64_t floatToInt(double v) {
  if (std::isnan(v))
    return 0;
  if (v >= 9.2233720368547758e18)
    return INT64_MAX;
  if (v <= -9.2233720368547758e18)
    return INT64_MIN;
  return static_cast<int64_t>(v);
}

/// ReduceSum / ReduceMax / ReduceMean over the op's axes (all when empty);
/// integer means are left to the runtime op.
std::optional<Values> reduce(Operation *op, const Literal &in,
                             RankedTensorType resultType) {
  llvm::ArrayRef<int64_t> axes;
  if (auto sum = llvm::dyn_cast<tx::ReduceSumOp>(op))
    axes = sum.getAxes();
  else if (auto max = llvm::dyn_cast<tx::ReduceMaxOp>(op))
    axes = max.getAxes();
  else
    axes = llvm::cast<tx::ReduceMeanOp>(op).getAxes();
  bool isMax = llvm::isa<tx::ReduceMaxOp>(op);
  bool isMean = llvm::isa<tx::ReduceMeanOp>(op);
  if ((isMean && !in.isFloat) || in.size() > kMaxFoldElements ||
      in.size() == 0)
    return std::nullopt;
  llvm::ArrayRef<int64_t> shape = in.type.getShape();
  int64_t rank = shape.size();
  llvm::SmallVector<bool> reduced(rank, axes.empty());
  for (int64_t a : axes)
    reduced[a < 0 ? a + rank : a] = true;
  // Result index of each input element: the kept dims, row-major.
  llvm::SmallVector<int64_t> keptShape;
  for (int64_t d = 0; d < rank; ++d)
    if (!reduced[d])
      keptShape.push_back(shape[d]);
  llvm::SmallVector<int64_t> keptStrides = stridesOf(keptShape);
  int64_t count = resultType.getNumElements();
  std::vector<double> facc(count, isMax ? -INFINITY : 0.0);
  std::vector<int64_t> iacc(count, isMax ? INT64_MIN : 0);
  for (int64_t e = 0; e < in.size(); ++e) {
    llvm::SmallVector<int64_t> coord = unflatten(e, shape);
    int64_t out = 0;
    for (int64_t d = 0, k = 0; d < rank; ++d)
      if (!reduced[d])
        out += coord[d] * keptStrides[k++];
    if (in.isFloat)
      facc[out] = isMax ? std::max(facc[out], in.f(e)) : facc[out] + in.f(e);
    else
      iacc[out] = isMax ? std::max(iacc[out], in.i(e))
                        : static_cast<int64_t>(static_cast<uint64_t>(iacc[out]) +
                                               static_cast<uint64_t>(in.i(e)));
  }
  Values result;
  if (in.isFloat) {
    double n = static_cast<double>(in.size()) / std::max<int64_t>(count, 1);
    for (double v : facc)
      result.floats.push_back(isMean ? v / n : v);
  } else {
    result.ints = iacc;
  }
  return result;
}

/// CumSum along the op's axis, in double (floats; one rounding per result
/// element when written) or int64 with wrap-around (integers).
std::optional<Values> cumulativeSum(tx::CumSumOp op, const Literal &in) {
  if (in.size() > kMaxFoldElements)
    return std::nullopt;
  llvm::ArrayRef<int64_t> shape = in.type.getShape();
  int64_t axis = normalize(op.getAxis(), shape.size());
  int64_t dim = shape[axis];
  int64_t inner = stridesOf(shape)[axis];
  int64_t outer = dim * inner == 0 ? 0 : in.size() / (dim * inner);
  bool exclusive = op.getExclusive(), reverse = op.getReverse();
  Values out;
  if (in.isFloat)
    out.floats.assign(in.size(), 0.0);
  else
    out.ints.assign(in.size(), 0);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t q = 0; q < inner; ++q) {
      double fsum = 0.0;
      uint64_t isum = 0;
      auto store = [&](int64_t e) {
        if (in.isFloat)
          out.floats[e] = fsum;
        else
          out.ints[e] = static_cast<int64_t>(isum);
      };
      for (int64_t step = 0; step < dim; ++step) {
        int64_t e = (o * dim + (reverse ? dim - 1 - step : step)) * inner + q;
        // Exclusive sums stop one element short: store before adding.
        if (exclusive)
          store(e);
        if (in.isFloat)
          fsum += in.f(e);
        else
          isum += static_cast<uint64_t>(in.i(e));
        if (!exclusive)
          store(e);
      }
    }
  return out;
}

} // namespace

FailureOr<bool>
onnx_import::evaluateOp(Operation *op, llvm::ArrayRef<DenseElementsAttr> operands,
                        llvm::SmallVectorImpl<DenseElementsAttr> &results,
                        std::string &error) {
  if (op->getNumResults() == 0)
    return false;
  auto resultType = llvm::dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!resultType)
    return false;
  llvm::StringRef name = op->getName().getStringRef();

  // Pure re-shapes keep the data: any size folds.
  DenseElementsAttr first = operands[0];
  if (llvm::isa<tx::ReshapeOp, tx::SqueezeOp, tx::UnsqueezeOp, tx::IdentityOp>(op)) {
    results.push_back(first.reshape(resultType));
    return true;
  }
  if (llvm::isa<tx::ExpandOp>(op) && first.isSplat()) {
    results.push_back(first.resizeSplat(resultType));
    return true;
  }

  llvm::SmallVector<Literal> lits;
  for (DenseElementsAttr attr : operands) {
    std::optional<Literal> lit = read(attr);
    if (!lit)
      return false;
    lits.push_back(std::move(*lit));
  }
  bool floatResult = llvm::isa<FloatType>(resultType.getElementType());
  std::optional<Values> values;
  std::string evalError;

  if (llvm::isa<tx::AddOp, tx::SubOp, tx::MulOp, tx::DivOp, tx::ModOp,
                tx::PowOp>(op)) {
    bool fmod = false;
    if (auto mod = llvm::dyn_cast<tx::ModOp>(op))
      fmod = mod.getFmod();
    const Literal &a = lits[0], &b = lits[1];
    bool isPow = llvm::isa<tx::PowOp>(op);
    values = elementwise(
        resultType, {&a, &b}, floatResult,
        [&](llvm::ArrayRef<int64_t> at, bool asFloat) -> std::pair<double, int64_t> {
          if (asFloat)
            return {floatBinary(name, a.asDouble(at[0]), b.asDouble(at[1])), 0};
          if (isPow) {
            if (b.isFloat)
              return {0, floatToInt(std::pow(a.asDouble(at[0]), b.f(at[1])))};
            // Integer power by squaring; negative exponents truncate to 0
            // except for bases 1 and -1.
            int64_t base = a.i(at[0]), exp = b.i(at[1]);
            if (exp < 0)
              return {0, base == 1 ? 1 : base == -1 ? (exp % 2 ? -1 : 1) : 0};
            uint64_t r = 1, x = static_cast<uint64_t>(base);
            for (; exp; exp >>= 1, x *= x)
              if (exp & 1)
                r *= x;
            return {0, static_cast<int64_t>(r)};
          }
          std::optional<int64_t> r = intBinary(name, a.i(at[0]), b.i(at[1]),
                                               fmod, evalError);
          return {0, r.value_or(0)};
        });
  } else if (llvm::isa<tx::MaxOp, tx::MinOp>(op)) {
    const Literal &a = lits[0], &b = lits[1];
    bool isMax = llvm::isa<tx::MaxOp>(op);
    values = elementwise(
        resultType, {&a, &b}, floatResult,
        [&](llvm::ArrayRef<int64_t> at, bool asFloat) -> std::pair<double, int64_t> {
          if (asFloat) {
            double x = a.f(at[0]), y = b.f(at[1]);
            if (std::isnan(x) || std::isnan(y)) // NaN propagates (tx.max)
              return {NAN, 0};
            return {isMax ? (x > y ? x : y) : (x < y ? x : y), 0};
          }
          int64_t x = a.i(at[0]), y = b.i(at[1]);
          return {0, isMax ? std::max(x, y) : std::min(x, y)};
        });
  } else if (llvm::isa<tx::EqualOp, tx::GreaterOrEqualOp>(op)) {
    const Literal &a = lits[0], &b = lits[1];
    bool equal = llvm::isa<tx::EqualOp>(op);
    values = elementwise(resultType, {&a, &b}, false,
                         [&](llvm::ArrayRef<int64_t> at, bool) -> std::pair<double, int64_t> {
                           bool r;
                           if (a.isFloat)
                             r = equal ? a.f(at[0]) == b.f(at[1])
                                       : a.f(at[0]) >= b.f(at[1]);
                           else
                             r = equal ? a.i(at[0]) == b.i(at[1])
                                       : a.i(at[0]) >= b.i(at[1]);
                           return {0, r};
                         });
  } else if (llvm::isa<tx::LessOp, tx::LessOrEqualOp, tx::GreaterOp>(op)) {
    const Literal &a = lits[0], &b = lits[1];
    int kind = llvm::isa<tx::LessOp>(op) ? 0 : llvm::isa<tx::LessOrEqualOp>(op) ? 1 : 2;
    values = elementwise(resultType, {&a, &b}, false,
                         [&](llvm::ArrayRef<int64_t> at, bool) -> std::pair<double, int64_t> {
                           bool r;
                           if (a.isFloat) {
                             double x = a.f(at[0]), y = b.f(at[1]);
                             r = kind == 0 ? x < y : kind == 1 ? x <= y : x > y;
                           } else {
                             int64_t x = a.i(at[0]), y = b.i(at[1]);
                             r = kind == 0 ? x < y : kind == 1 ? x <= y : x > y;
                           }
                           return {0, r};
                         });
  } else if (llvm::isa<tx::AndOp, tx::OrOp, tx::XorOp>(op)) {
    const Literal &a = lits[0], &b = lits[1];
    int kind = llvm::isa<tx::AndOp>(op) ? 0 : llvm::isa<tx::OrOp>(op) ? 1 : 2;
    values = elementwise(resultType, {&a, &b}, false,
                         [&](llvm::ArrayRef<int64_t> at, bool) -> std::pair<double, int64_t> {
                           bool x = a.i(at[0]) != 0, y = b.i(at[1]) != 0;
                           bool r = kind == 0 ? (x && y) : kind == 1 ? (x || y) : (x != y);
                           return {0, r};
                         });
  } else if (llvm::isa<tx::NotOp>(op)) {
    const Literal &a = lits[0];
    values = elementwise(resultType, {&a}, false,
                         [&](llvm::ArrayRef<int64_t> at, bool) -> std::pair<double, int64_t> {
                           return {0, a.i(at[0]) == 0};
                         });
  } else if (llvm::isa<tx::WhereOp>(op)) {
    const Literal &c = lits[0], &a = lits[1], &b = lits[2];
    values = elementwise(resultType, {&c, &a, &b}, floatResult,
                         [&](llvm::ArrayRef<int64_t> at, bool asFloat) -> std::pair<double, int64_t> {
                           bool take = c.i(at[0]) != 0;
                           if (asFloat)
                             return {take ? a.f(at[1]) : b.f(at[2]), 0};
                           return {0, take ? a.i(at[1]) : b.i(at[2])};
                         });
  } else if (llvm::isa<tx::NegOp, tx::SqrtOp, tx::ReciprocalOp, tx::ExpOp,
                       tx::LogOp, tx::SinOp, tx::CosOp, tx::TanhOp,
                       tx::SigmoidOp, tx::ErfOp, tx::ReluOp>(op)) {
    const Literal &a = lits[0];
    values = elementwise(resultType, {&a}, floatResult,
                         [&](llvm::ArrayRef<int64_t> at, bool asFloat) -> std::pair<double, int64_t> {
                           if (asFloat)
                             return {floatUnary(name, a.f(at[0])), 0};
                           int64_t v = a.i(at[0]);
                           if (name == "tx.neg")
                             return {0, static_cast<int64_t>(0 - static_cast<uint64_t>(v))};
                           return {0, v > 0 ? v : 0}; // tx.relu
                         });
  } else if (llvm::isa<tx::IsNaNOp>(op)) {
    const Literal &a = lits[0];
    values = elementwise(resultType, {&a}, false,
                         [&](llvm::ArrayRef<int64_t> at, bool) -> std::pair<double, int64_t> {
                           return {0, std::isnan(a.f(at[0]))};
                         });
  } else if (llvm::isa<tx::CastOp>(op)) {
    const Literal &a = lits[0];
    bool toBool = resultType.getElementType().isInteger(1);
    values = elementwise(resultType, {&a}, floatResult,
                         [&](llvm::ArrayRef<int64_t> at, bool asFloat) -> std::pair<double, int64_t> {
                           if (asFloat)
                             return {a.asDouble(at[0]), 0};
                           if (toBool)
                             return {0, a.asDouble(at[0]) != 0.0};
                           return {0, a.isFloat ? floatToInt(a.f(at[0])) : a.i(at[0])};
                         });
  } else if (llvm::isa<tx::ExpandOp>(op)) {
    const Literal &a = lits[0];
    values = elementwise(resultType, {&a}, floatResult,
                         [&](llvm::ArrayRef<int64_t> at, bool asFloat) -> std::pair<double, int64_t> {
                           return asFloat ? std::pair<double, int64_t>{a.f(at[0]), 0}
                                          : std::pair<double, int64_t>{0, a.i(at[0])};
                         });
  } else if (auto transpose = llvm::dyn_cast<tx::TransposeOp>(op)) {
    llvm::ArrayRef<int64_t> perm = transpose.getPerm();
    llvm::SmallVector<int64_t> inStrides = stridesOf(lits[0].type.getShape());
    values = gatherElements(lits[0], resultType.getNumElements(), [&](int64_t e) {
      llvm::SmallVector<int64_t> coord = unflatten(e, resultType.getShape());
      int64_t flat = 0;
      for (size_t d = 0; d < perm.size(); ++d)
        flat += coord[d] * inStrides[perm[d]];
      return flat;
    });
  } else if (auto slice = llvm::dyn_cast<tx::SliceOp>(op)) {
    llvm::SmallVector<int64_t> offsets, sizes, strides;
    slice.getNormalizedRanges(offsets, sizes, strides);
    llvm::SmallVector<int64_t> inStrides = stridesOf(lits[0].type.getShape());
    values = gatherElements(lits[0], resultType.getNumElements(), [&](int64_t e) {
      llvm::SmallVector<int64_t> coord = unflatten(e, resultType.getShape());
      for (size_t d = 0; d < coord.size(); ++d)
        coord[d] = offsets[d] + coord[d] * strides[d];
      return flatten(coord, inStrides);
    });
  } else if (auto split = llvm::dyn_cast<tx::SplitOp>(op)) {
    int64_t rank = lits[0].type.getRank();
    int64_t axis = normalize(split.getAxis(), rank);
    llvm::SmallVector<int64_t> inStrides = stridesOf(lits[0].type.getShape());
    int64_t start = 0;
    for (Value result : op->getResults()) {
      auto type = llvm::cast<RankedTensorType>(result.getType());
      std::optional<Values> piece =
          gatherElements(lits[0], type.getNumElements(), [&](int64_t e) {
            llvm::SmallVector<int64_t> coord = unflatten(e, type.getShape());
            coord[axis] += start;
            return flatten(coord, inStrides);
          });
      if (!piece)
        return false;
      results.push_back(write(type, *piece));
      start += type.getDimSize(axis);
    }
    return true;
  } else if (auto concat = llvm::dyn_cast<tx::ConcatOp>(op)) {
    int64_t rank = resultType.getRank();
    int64_t axis = normalize(concat.getAxis(), rank);
    if (resultType.getNumElements() > kMaxFoldElements)
      return false;
    Values out;
    for (int64_t e = 0; e < resultType.getNumElements(); ++e) {
      llvm::SmallVector<int64_t> coord = unflatten(e, resultType.getShape());
      size_t k = 0;
      while (coord[axis] >= lits[k].type.getDimSize(axis))
        coord[axis] -= lits[k++].type.getDimSize(axis);
      int64_t flat = flatten(coord, stridesOf(lits[k].type.getShape()));
      if (floatResult)
        out.floats.push_back(lits[k].f(flat));
      else
        out.ints.push_back(lits[k].i(flat));
    }
    values = out;
  } else if (auto gather = llvm::dyn_cast<tx::GatherOp>(op)) {
    const Literal &data = lits[0], &indices = lits[1];
    int64_t rank = data.type.getRank();
    int64_t axis = normalize(gather.getAxis(), rank);
    int64_t dim = data.type.getDimSize(axis);
    int64_t q = indices.type.getRank();
    llvm::SmallVector<int64_t> dataStrides = stridesOf(data.type.getShape());
    llvm::SmallVector<int64_t> indexStrides = stridesOf(indices.type.getShape());
    // Indices are checked before any is used: with a dim of size 0 there is
    // no in-range fallback, and reading one would leave the data. (Results
    // too large to fold are left to the runtime op, which reports them.)
    bool fold = resultType.getNumElements() <= kMaxFoldElements;
    for (int64_t i = 0; fold && i < indices.size() && evalError.empty(); ++i)
      if (indices.i(i) < -dim || indices.i(i) >= dim)
        evalError = "index " + std::to_string(indices.i(i)) +
                    " is out of range for a dim of size " + std::to_string(dim);
    if (evalError.empty())
      values = gatherElements(data, resultType.getNumElements(), [&](int64_t e) {
        llvm::SmallVector<int64_t> coord = unflatten(e, resultType.getShape());
        llvm::SmallVector<int64_t> src(coord.begin(), coord.begin() + axis);
        int64_t index = indices.i(flatten(
            llvm::ArrayRef<int64_t>(coord).slice(axis, q), indexStrides));
        src.push_back(index < 0 ? index + dim : index);
        src.append(coord.begin() + axis + q, coord.end());
        return flatten(src, dataStrides);
      });
  } else if (auto gatherND = llvm::dyn_cast<tx::GatherNDOp>(op)) {
    const Literal &data = lits[0], &indices = lits[1];
    llvm::ArrayRef<int64_t> shape = data.type.getShape();
    int64_t batchDims = static_cast<int64_t>(gatherND.getBatchDims());
    int64_t k = indices.type.getShape().back();
    llvm::SmallVector<int64_t> dataStrides = stridesOf(shape);
    // Result element e = (tuple t, offset s in the slice); the tuple's batch
    // (the first batch_dims dims, row-major) selects a block of data.
    int64_t slice = 1, perBatch = 1, block = 1;
    for (int64_t d = batchDims + k; d < static_cast<int64_t>(shape.size()); ++d)
      slice *= shape[d];
    for (int64_t d = batchDims; d < static_cast<int64_t>(shape.size()); ++d)
      block *= shape[d];
    llvm::ArrayRef<int64_t> tupleDims =
        indices.type.getShape().drop_front(batchDims).drop_back();
    for (int64_t d : tupleDims)
      perBatch *= d;
    // Every index is checked before any is used, as for Gather.
    bool fold = resultType.getNumElements() <= kMaxFoldElements;
    for (int64_t i = 0; fold && i < indices.size() && evalError.empty(); ++i) {
      int64_t dim = shape[batchDims + i % k], index = indices.i(i);
      if (index < -dim || index >= dim)
        evalError = "index " + std::to_string(index) +
                    " is out of range for a dim of size " + std::to_string(dim);
    }
    if (evalError.empty())
      values = gatherElements(data, resultType.getNumElements(), [&](int64_t e) {
        int64_t t = e / slice;
        int64_t flat = (t / perBatch) * block + e % slice;
        for (int64_t j = 0; j < k; ++j) {
          int64_t dim = shape[batchDims + j], index = indices.i(t * k + j);
          flat += (index < 0 ? index + dim : index) * dataStrides[batchDims + j];
        }
        return flat;
      });
  } else if (auto cumsum = llvm::dyn_cast<tx::CumSumOp>(op)) {
    values = cumulativeSum(cumsum, lits[0]);
  } else if (auto trilu = llvm::dyn_cast<tx::TriluOp>(op)) {
    int64_t rank = resultType.getRank();
    int64_t rows = resultType.getDimSize(rank - 2), cols = resultType.getDimSize(rank - 1);
    int64_t k = static_cast<int64_t>(trilu.getK());
    bool upper = trilu.getUpper();
    if (resultType.getNumElements() > kMaxFoldElements)
      return false;
    Values out;
    for (int64_t e = 0; e < resultType.getNumElements(); ++e) {
      int64_t j = e % cols, i = (e / cols) % rows;
      // Compare the diagonal offset j - i (|j - i| < 2^40) with k: i + k
      // overflows for k near INT64_MAX, and any k is valid (beyond the
      // matrix it keeps all or nothing).
      bool keep = upper ? j - i >= k : j - i <= k;
      if (floatResult)
        out.floats.push_back(keep ? lits[0].f(e) : 0.0);
      else
        out.ints.push_back(keep ? lits[0].i(e) : 0);
    }
    values = out;
  } else if (llvm::isa<tx::ReduceSumOp, tx::ReduceMaxOp, tx::ReduceMeanOp>(op)) {
    values = reduce(op, lits[0], resultType);
  } else {
    return false;
  }

  if (!evalError.empty()) {
    error = evalError;
    return failure();
  }
  if (!values)
    return false;
  results.push_back(write(resultType, *values));
  return true;
}
