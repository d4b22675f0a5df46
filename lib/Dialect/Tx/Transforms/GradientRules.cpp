//===- GradientRules.cpp - per-op reverse-mode rules for tx ---------------===//
//
// SPDX-License-Identifier: Apache-2.0
// One rule per differentiable tx op: given the gradients of an op's results
// (dL/dy), emit the tx ops computing the gradients of its operands (dL/dx).
// Each rule states its formula; `g` is the result gradient and `y` the
// op's result. Rules for broadcasting ops compute in the broadcast shape and
// reduce back to each operand's shape (sumToShape). Every rule is checked
// numerically against finite differences by test/Reference/gradcheck.py.
//
//===----------------------------------------------------------------------===//

#include "txopt/Dialect/Tx/IR/TxOps.h"
#include "txopt/Dialect/Tx/Transforms/Autodiff.h"
#include "txopt/Dialect/Tx/Transforms/PatternUtils.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <numeric>
#include <type_traits>

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::tx;

namespace {

//===----------------------------------------------------------------------===//
// Building blocks
//===----------------------------------------------------------------------===//

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

/// What a rule sees: the op, the gradients of its results, which operand
/// gradients are wanted, and where they go.
struct RuleContext {
  ImplicitLocOpBuilder &b;
  Operation *op;
  ArrayRef<Value> resultGrads;
  const llvm::BitVector &needed;
  SmallVectorImpl<Value> &operandGrads;

  bool wants(unsigned operand) const { return needed.test(operand); }
  void set(unsigned operand, Value grad) {
    if (wants(operand))
      operandGrads[operand] = grad;
  }
  /// The gradient of the single result.
  Value g() const { return resultGrads.front(); }
  /// The gradient of result |i|, zeros when it has none.
  Value gOrZeros(unsigned i) {
    if (resultGrads[i])
      return resultGrads[i];
    return zeros(b, op->getResult(i).getType());
  }
};

//===----------------------------------------------------------------------===//
// Elementwise arithmetic (broadcasting)
//===----------------------------------------------------------------------===//

// d(a + b) = (g, g)
LogicalResult rule(RuleContext &c, AddOp op) {
  if (c.wants(0))
    c.set(0, sumToType(c.b, c.g(), op.getLhs()));
  if (c.wants(1))
    c.set(1, sumToType(c.b, c.g(), op.getRhs()));
  return success();
}

// d(a - b) = (g, -g)
LogicalResult rule(RuleContext &c, SubOp op) {
  if (c.wants(0))
    c.set(0, sumToType(c.b, c.g(), op.getLhs()));
  if (c.wants(1))
    c.set(1, neg(c.b, sumToType(c.b, c.g(), op.getRhs())));
  return success();
}

// d(a * b) = (g * b, g * a)
LogicalResult rule(RuleContext &c, MulOp op) {
  if (c.wants(0))
    c.set(0, sumToType(c.b, mul(c.b, c.g(), op.getRhs()), op.getLhs()));
  if (c.wants(1))
    c.set(1, sumToType(c.b, mul(c.b, c.g(), op.getLhs()), op.getRhs()));
  return success();
}

// d(a / b) = (g / b, -g * y / b)   (y / b rather than a / b^2: no overflow)
LogicalResult rule(RuleContext &c, DivOp op) {
  if (c.wants(0))
    c.set(0, sumToType(c.b, div(c.b, c.g(), op.getRhs()), op.getLhs()));
  if (c.wants(1)) {
    Value t = div(c.b, mul(c.b, c.g(), op.getResult()), op.getRhs());
    c.set(1, neg(c.b, sumToType(c.b, t, op.getRhs())));
  }
  return success();
}

// d(a ^ e) = (g * e * a^(e - 1), g * y * log(a))
// A constant exponent is folded (e = 2 gives g * 2a). The exponent gradient
// is 0 where a == 0 (the limit of y * log(a) for e > 0, as PyTorch does).
LogicalResult rule(RuleContext &c, PowOp op) {
  ImplicitLocOpBuilder &b = c.b;
  Value base = op.getLhs(), exponent = op.getRhs();
  Type type = elementTypeOf(base);
  if (c.wants(0)) {
    Value grad;
    if (std::optional<double> e = getSplatConstant(exponent)) {
      if (*e == 0.0)
        grad = zeros(b, op.getType());
      else if (*e == 1.0)
        grad = c.g();
      else if (*e == 2.0)
        grad = mul(b, c.g(), mulScalar(b, base, 2.0));
      else
        grad =
            mul(b, c.g(),
                mulScalar(b, PowOp::create(b, base, scalar(b, type, *e - 1.0)),
                          *e));
    } else {
      Value ef = castTo(b, exponent, type);
      Value powed = PowOp::create(b, base, sub(b, ef, scalar(b, type, 1.0)));
      grad = mul(b, c.g(), mul(b, ef, powed));
    }
    c.set(0, sumToType(b, grad, base));
  }
  if (c.wants(1)) {
    Value zero = scalar(b, type, 0.0);
    Value isZero = EqualOp::create(b, base, zero);
    Value safeLog = WhereOp::create(b, isZero, zero, LogOp::create(b, base));
    Value grad = mul(b, mul(b, c.g(), op.getResult()), safeLog);
    grad = castTo(b, sumToType(b, grad, exponent), elementTypeOf(exponent));
    c.set(1, grad);
  }
  return success();
}

// d where(cond, a, b) = (where(cond, g, 0), where(cond, 0, g)); cond has none.
LogicalResult rule(RuleContext &c, WhereOp op) {
  Value zero = scalar(c.b, elementTypeOf(op.getResult()), 0.0);
  if (c.wants(1))
    c.set(1,
          sumToType(c.b, WhereOp::create(c.b, op.getCondition(), c.g(), zero),
                    op.getLhs()));
  if (c.wants(2))
    c.set(2,
          sumToType(c.b, WhereOp::create(c.b, op.getCondition(), zero, c.g()),
                    op.getRhs()));
  return success();
}

// d max(a, b) = (g * w, g * (1 - w)), w = a > b ? 1 : (a == b ? 0.5 : 0);
// min the same with a < b. The selected operand gets g; tied operands split
// it equally (torch.maximum's convention, and tx.reduce_max's rule), so the
// two gradients always sum to g. Each is summed over its broadcast dims.
template <typename OpTy>
LogicalResult minMaxRule(RuleContext &c, OpTy op) {
  ImplicitLocOpBuilder &b = c.b;
  Value lhs = op.getLhs(), rhs = op.getRhs();
  Type type = elementTypeOf(op.getResult());
  Value selected;
  if constexpr (std::is_same_v<OpTy, MaxOp>)
    selected = GreaterOp::create(b, lhs, rhs);
  else
    selected = LessOp::create(b, lhs, rhs);
  Value tied = EqualOp::create(b, lhs, rhs);
  Value tieShare = WhereOp::create(b, tied, scalar(b, type, 0.5),
                                   scalar(b, type, 0.0));
  Value w = WhereOp::create(b, selected, scalar(b, type, 1.0), tieShare);
  if (c.wants(0))
    c.set(0, sumToType(b, mul(b, c.g(), w), lhs));
  if (c.wants(1))
    c.set(1, sumToType(b, mul(b, c.g(), sub(b, scalar(b, type, 1.0), w)), rhs));
  return success();
}

LogicalResult rule(RuleContext &c, MaxOp op) { return minMaxRule(c, op); }
LogicalResult rule(RuleContext &c, MinOp op) { return minMaxRule(c, op); }

//===----------------------------------------------------------------------===//
// Elementwise unary
//===----------------------------------------------------------------------===//

// d sqrt(x) = g * 0.5 / y
LogicalResult rule(RuleContext &c, SqrtOp op) {
  c.set(0, div(c.b, mulScalar(c.b, c.g(), 0.5), op.getResult()));
  return success();
}

// d (1 / x) = -g * y * y
LogicalResult rule(RuleContext &c, ReciprocalOp op) {
  Value y = op.getResult();
  c.set(0, neg(c.b, mul(c.b, c.g(), mul(c.b, y, y))));
  return success();
}

// d (-x) = -g
LogicalResult rule(RuleContext &c, NegOp) {
  c.set(0, neg(c.b, c.g()));
  return success();
}

// d erf(x) = g * 2 / sqrt(pi) * exp(-x^2)
LogicalResult rule(RuleContext &c, ErfOp op) {
  Value x = op.getInput();
  Value e = ExpOp::create(c.b, neg(c.b, mul(c.b, x, x)));
  c.set(0, mul(c.b, c.g(), mulScalar(c.b, e, 2.0 / std::sqrt(M_PI))));
  return success();
}

// d tanh(x) = g * (1 - y^2)
LogicalResult rule(RuleContext &c, TanhOp op) {
  Value y = op.getResult();
  Value one = scalar(c.b, elementTypeOf(y), 1.0);
  c.set(0, mul(c.b, c.g(), sub(c.b, one, mul(c.b, y, y))));
  return success();
}

// d sigmoid(x) = g * y * (1 - y)
LogicalResult rule(RuleContext &c, SigmoidOp op) {
  Value y = op.getResult();
  Value one = scalar(c.b, elementTypeOf(y), 1.0);
  c.set(0, mul(c.b, mul(c.b, c.g(), y), sub(c.b, one, y)));
  return success();
}

// d relu(x) = x > 0 ? g : 0   (0 at x == 0, as PyTorch)
LogicalResult rule(RuleContext &c, ReluOp op) {
  Value zero = scalar(c.b, elementTypeOf(op.getInput()), 0.0);
  Value notPositive = GreaterOrEqualOp::create(c.b, zero, op.getInput());
  c.set(0, WhereOp::create(c.b, notPositive, zero, c.g()));
  return success();
}

// d exp(x) = g * y
LogicalResult rule(RuleContext &c, ExpOp op) {
  c.set(0, mul(c.b, c.g(), op.getResult()));
  return success();
}

// d log(x) = g / x
LogicalResult rule(RuleContext &c, LogOp op) {
  c.set(0, div(c.b, c.g(), op.getInput()));
  return success();
}

// d sin(x) = g * cos(x)
LogicalResult rule(RuleContext &c, SinOp op) {
  c.set(0, mul(c.b, c.g(), CosOp::create(c.b, op.getInput())));
  return success();
}

// d cos(x) = -g * sin(x)
LogicalResult rule(RuleContext &c, CosOp op) {
  c.set(0, neg(c.b, mul(c.b, c.g(), SinOp::create(c.b, op.getInput()))));
  return success();
}

// d identity(x) = g
LogicalResult rule(RuleContext &c, IdentityOp) {
  c.set(0, c.g());
  return success();
}

// d cast(x) = cast(g) back to x's type (only float x is ever wanted)
LogicalResult rule(RuleContext &c, CastOp op) {
  c.set(0, castTo(c.b, c.g(), elementTypeOf(op.getInput())));
  return success();
}

// d trilu(x) = trilu(g): the kept positions are those of the forward.
LogicalResult rule(RuleContext &c, TriluOp op) {
  c.set(0, TriluOp::create(c.b, c.g(), op.getUpperAttr(), op.getKAttr()));
  return success();
}

// d dropout(x) = dropout(g) with the same key, ratio and seed: the generator
// is keyed by (seed, key, element index) only, so it keeps (and scales)
// exactly the elements the forward kept. The key is the forward's SSA value,
// so when tx-build-train-step replaces it by the step's rng_key both
// dropouts follow. The integer key has no gradient.
LogicalResult rule(RuleContext &c, DropoutOp op) {
  c.set(0, DropoutOp::create(c.b, c.g().getType(), c.g(), op.getKey(),
                             op.getRatioAttr(), op.getSeedAttr()));
  return success();
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

// y = a @ b (numpy matmul): da = g @ b^T, db = a^T @ g, each summed over the
// batch dims its operand was broadcast along. 1-D operands are made 2-D
// first (a row / a column) and the gradient reshaped back. A 2-D b under a
// batched a (every linear layer) takes one flattened GEMM for db.
LogicalResult rule(RuleContext &c, MatMulOp op) {
  ImplicitLocOpBuilder &b = c.b;
  Value lhs = op.getLhs(), rhs = op.getRhs();
  ArrayRef<int64_t> lhsShape = tensorTypeOf(lhs).getShape();
  ArrayRef<int64_t> rhsShape = tensorTypeOf(rhs).getShape();
  bool lhsVector = lhsShape.size() == 1, rhsVector = rhsShape.size() == 1;
  SmallVector<int64_t> lhs2(lhsShape), rhs2(rhsShape);
  if (lhsVector)
    lhs2.insert(lhs2.begin(), 1);
  if (rhsVector)
    rhs2.push_back(1);
  FailureOr<SmallVector<int64_t>> batch =
      broadcastShapes(ArrayRef<int64_t>(lhs2).drop_back(2),
                      ArrayRef<int64_t>(rhs2).drop_back(2));
  if (failed(batch))
    return emitError(op.getLoc(),
                     "internal error: matmul batch dims do not broadcast");
  SmallVector<int64_t> out2(*batch);
  out2.push_back(lhs2[lhs2.size() - 2]);
  out2.push_back(rhs2.back());
  Value g2 = reshape(b, c.g(), out2);
  Value lhsM = reshape(b, lhs, lhs2), rhsM = reshape(b, rhs, rhs2);

  if (c.wants(0)) {
    Value d = MatMulOp::create(b, g2, transposeLast2(b, rhsM));
    c.set(0, reshape(b, sumToShape(b, d, lhs2), lhsShape));
  }
  if (c.wants(1)) {
    Value d;
    if (rhs2.size() == 2 && lhs2.size() > 2) {
      int64_t k = lhs2.back(), n = rhs2.back();
      int64_t rows = 1;
      for (int64_t dim : ArrayRef<int64_t>(lhs2).drop_back())
        rows *= dim;
      Value a = reshape(b, lhsM, {rows, k});
      Value gm = reshape(b, g2, {rows, n});
      d = MatMulOp::create(b, transposeLast2(b, a), gm);
    } else {
      d = sumToShape(b, MatMulOp::create(b, transposeLast2(b, lhsM), g2), rhs2);
    }
    c.set(1, reshape(b, d, rhsShape));
  }
  return success();
}

// y = alpha * op(A) @ op(B) + beta * C, written with Gemm's own transposes:
//   dA = alpha * g @ op(B)^T   (transA: alpha * op(B) @ g^T)
//   dB = alpha * op(A)^T @ g   (transB: alpha * g^T @ op(A))
//   dC = beta * sum of g over C's broadcast dims
LogicalResult rule(RuleContext &c, GemmOp op) {
  ImplicitLocOpBuilder &b = c.b;
  Value g = c.g(), a = op.getA(), bm = op.getB();
  bool transA = op.getTransA(), transB = op.getTransB();
  FloatAttr alpha = op.getAlphaAttr();
  FloatAttr one = b.getF32FloatAttr(1.0f);
  auto gemm = [&](Value x, Value y, bool tx, bool ty) -> Value {
    return GemmOp::create(b, x, y, /*c=*/nullptr, alpha, one, b.getBoolAttr(tx),
                          b.getBoolAttr(ty));
  };
  if (c.wants(0))
    c.set(0, transA ? gemm(bm, g, transB, true) : gemm(g, bm, false, !transB));
  if (c.wants(1))
    c.set(1, transB ? gemm(g, a, true, transA) : gemm(a, g, !transA, false));
  if (op.getC() && c.wants(2))
    c.set(2, mulScalar(b, sumToType(b, g, op.getC()),
                       op.getBeta().convertToDouble()));
  return success();
}

//===----------------------------------------------------------------------===//
// Indexing and data movement
//===----------------------------------------------------------------------===//

// d gather(data, idx) = scatter-add of g into zeros at idx (tx.gather_grad)
LogicalResult rule(RuleContext &c, GatherOp op) {
  int64_t axis = normalized(op.getAxis(), tensorTypeOf(op.getData()).getRank());
  c.set(0, GatherGradOp::create(c.b, op.getData().getType(), c.g(),
                                op.getIndices(), c.b.getI64IntegerAttr(axis)));
  return success();
}

// d gather_elements(data, idx) = element scatter-add (tx.gather_elements_grad)
LogicalResult rule(RuleContext &c, GatherElementsOp op) {
  int64_t axis = normalized(op.getAxis(), tensorTypeOf(op.getData()).getRank());
  c.set(0, GatherElementsGradOp::create(c.b, op.getData().getType(), c.g(),
                                        op.getIndices(),
                                        c.b.getI64IntegerAttr(axis)));
  return success();
}

// d gather_nd(data, idx) = scatter-add of g's slices into zeros at the index
// tuples (tx.gather_nd_grad)
LogicalResult rule(RuleContext &c, GatherNDOp op) {
  c.set(0, GatherNDGradOp::create(c.b, op.getData().getType(), c.g(),
                                  op.getIndices(), op.getBatchDimsAttr()));
  return success();
}

// d reshape / squeeze / unsqueeze (x) = reshape(g) to x's shape
LogicalResult reshapeRule(RuleContext &c, Operation *op) {
  c.set(0, reshape(c.b, c.g(), tensorTypeOf(op->getOperand(0)).getShape()));
  return success();
}

// d expand(x) = g summed over the broadcast dims
LogicalResult rule(RuleContext &c, ExpandOp op) {
  c.set(0, sumToType(c.b, c.g(), op.getInput()));
  return success();
}

// d transpose(x, perm) = transpose(g, perm^-1)
LogicalResult rule(RuleContext &c, TransposeOp op) {
  ArrayRef<int64_t> perm = op.getPerm();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = i;
  c.set(0, TransposeOp::create(c.b, c.g(), c.b.getDenseI64ArrayAttr(inverse)));
  return success();
}

// d slice(x) = g placed where the slice read, zeros elsewhere: tx.pad for
// unit steps, tx.slice_grad for any other step (negative ones included).
LogicalResult rule(RuleContext &c, SliceOp op) {
  SmallVector<int64_t> offsets, sizes, strides;
  op.getNormalizedRanges(offsets, sizes, strides);
  auto inputType = tensorTypeOf(op.getInput());
  if (llvm::all_of(strides, [](int64_t s) { return s == 1; })) {
    int64_t rank = inputType.getRank();
    SmallVector<int64_t> pads(2 * rank);
    for (int64_t d = 0; d < rank; ++d) {
      pads[d] = offsets[d];
      pads[d + rank] = inputType.getDimSize(d) - offsets[d] - sizes[d];
    }
    if (llvm::all_of(pads, [](int64_t p) { return p == 0; })) {
      c.set(0, c.g());
      return success();
    }
    c.set(0,
          PadOp::create(c.b, c.g(), c.b.getDenseI64ArrayAttr(pads),
                        PadModeAttr::get(c.b.getContext(), PadMode::constant),
                        c.b.getF64FloatAttr(0.0)));
    return success();
  }
  // Empty dims may carry any offset; give them one the verifier accepts.
  for (auto [offset, size] : llvm::zip(offsets, sizes))
    if (size == 0)
      offset = 0;
  c.set(0, SliceGradOp::create(c.b, inputType, c.g(),
                               c.b.getDenseI64ArrayAttr(offsets),
                               c.b.getDenseI64ArrayAttr(strides)));
  return success();
}

// d concat(x_0, .., x_n) = the slices of g along axis
LogicalResult rule(RuleContext &c, ConcatOp op) {
  int64_t rank = tensorTypeOf(op.getResult()).getRank();
  int64_t axis = normalized(op.getAxis(), rank);
  int64_t offset = 0;
  for (auto [i, input] : llvm::enumerate(op.getInputs())) {
    int64_t size = tensorTypeOf(input).getDimSize(axis);
    if (c.wants(i))
      c.set(i, SliceOp::create(c.b, c.g(), c.b.getDenseI64ArrayAttr({offset}),
                               c.b.getDenseI64ArrayAttr({offset + size}),
                               c.b.getDenseI64ArrayAttr({axis}),
                               c.b.getDenseI64ArrayAttr({1})));
    offset += size;
  }
  return success();
}

// d split(x) = concat of the pieces' gradients (zeros for unused pieces)
LogicalResult rule(RuleContext &c, SplitOp op) {
  int64_t rank = tensorTypeOf(op.getInput()).getRank();
  SmallVector<Value> pieces;
  for (unsigned i = 0; i < op->getNumResults(); ++i)
    pieces.push_back(c.gOrZeros(i));
  if (pieces.size() == 1) {
    c.set(0, pieces.front());
    return success();
  }
  c.set(0, ConcatOp::create(
               c.b, pieces,
               c.b.getI64IntegerAttr(normalized(op.getAxis(), rank))));
  return success();
}

// d pad(x) (constant mode) = g cropped to where x landed; a negative pad
// cropped x, so those elements of x get zeros back.
LogicalResult rule(RuleContext &c, PadOp op) {
  if (op.getMode() != PadMode::constant)
    return unsupported(op, "in '" + stringifyPadMode(op.getMode()) + "' mode");
  auto inputType = tensorTypeOf(op.getInput());
  int64_t rank = inputType.getRank();
  ArrayRef<int64_t> pads = op.getPads();
  SmallVector<int64_t> starts, ends, axes, steps, repad(2 * rank, 0);
  bool crop = false;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t begin = pads[d], end = pads[d + rank];
    int64_t extent = inputType.getDimSize(d) + std::min<int64_t>(begin, 0) +
                     std::min<int64_t>(end, 0);
    int64_t start = std::max<int64_t>(begin, 0);
    crop |= begin > 0 || end > 0;
    starts.push_back(start);
    ends.push_back(start + extent);
    axes.push_back(d);
    steps.push_back(1);
    repad[d] = std::max<int64_t>(-begin, 0);
    repad[d + rank] = std::max<int64_t>(-end, 0);
  }
  Value grad = c.g();
  if (crop)
    grad = SliceOp::create(c.b, grad, c.b.getDenseI64ArrayAttr(starts),
                           c.b.getDenseI64ArrayAttr(ends),
                           c.b.getDenseI64ArrayAttr(axes),
                           c.b.getDenseI64ArrayAttr(steps));
  if (llvm::any_of(repad, [](int64_t p) { return p != 0; }))
    grad = PadOp::create(c.b, grad, c.b.getDenseI64ArrayAttr(repad),
                         PadModeAttr::get(c.b.getContext(), PadMode::constant),
                         c.b.getF64FloatAttr(0.0));
  c.set(0, grad);
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

/// g of a reduction reshaped to the keep_dims shape, so it broadcasts
/// against the input.
template <typename ReduceOpTy>
Value keptGrad(RuleContext &c, ReduceOpTy op, ArrayRef<int64_t> axes) {
  auto inputType = tensorTypeOf(op.getInput());
  return reshape(c.b, c.g(), keepDimsShape(inputType.getShape(), axes));
}

// d reduce_sum(x) = g broadcast back over the reduced dims
LogicalResult rule(RuleContext &c, ReduceSumOp op) {
  auto inputType = tensorTypeOf(op.getInput());
  auto axes = reductionAxes(op.getAxes(), inputType.getRank());
  c.set(0, expandTo(c.b, keptGrad(c, op, axes), inputType.getShape()));
  return success();
}

// d reduce_mean(x) = g / n broadcast back (n = number of reduced elements)
LogicalResult rule(RuleContext &c, ReduceMeanOp op) {
  auto inputType = tensorTypeOf(op.getInput());
  auto axes = reductionAxes(op.getAxes(), inputType.getRank());
  int64_t count = 1;
  for (int64_t a : axes)
    count *= inputType.getDimSize(a);
  Value scaled = mulScalar(c.b, keptGrad(c, op, axes), 1.0 / count);
  c.set(0, expandTo(c.b, scaled, inputType.getShape()));
  return success();
}

// d reduce_max(x) = g * (x == max) / count(x == max): tied maxima share the
// gradient equally (torch.amax's convention), so the sum over ties is g.
LogicalResult rule(RuleContext &c, ReduceMaxOp op) {
  ImplicitLocOpBuilder &b = c.b;
  Value x = op.getInput();
  auto inputType = tensorTypeOf(x);
  auto axes = reductionAxes(op.getAxes(), inputType.getRank());
  SmallVector<int64_t> kept = keepDimsShape(inputType.getShape(), axes);
  Value max = reshape(b, op.getResult(), kept);
  Value mask =
      castTo(b, EqualOp::create(b, x, max), inputType.getElementType());
  Value count = reduceSum(b, mask, axes, /*keepDims=*/true);
  Value share = div(b, keptGrad(c, op, axes), count);
  c.set(0, mul(b, mask, share));
  return success();
}

// d cum_sum(x) = cum_sum(g) in the other direction, same exclusivity:
// y[i] sums x[j] over j <= i, so x[j] reaches every y[i] with i >= j, whose
// gradients the reversed scan sums (strictly, j < i and i > j, when
// exclusive).
LogicalResult rule(RuleContext &c, CumSumOp op) {
  c.set(0, CumSumOp::create(c.b, c.g(), op.getAxisAttr(), op.getExclusiveAttr(),
                            op.getReverse() ? UnitAttr()
                                            : c.b.getUnitAttr()));
  return success();
}

//===----------------------------------------------------------------------===//
// Softmax, normalization, loss
//===----------------------------------------------------------------------===//

// d softmax(x) = y * (g - sum(g * y, axis))
LogicalResult rule(RuleContext &c, SoftmaxOp op) {
  Value y = op.getResult();
  int64_t axis = normalized(op.getAxis(), tensorTypeOf(y).getRank());
  Value dot = reduceSum(c.b, mul(c.b, c.g(), y), {axis}, /*keepDims=*/true);
  c.set(0, mul(c.b, y, sub(c.b, c.g(), dot)));
  return success();
}

/// Normalized dims [axis, rank) of a norm over |x|.
SmallVector<int64_t> normAxes(Value x, int64_t axis) {
  int64_t rank = tensorTypeOf(x).getRank();
  SmallVector<int64_t> axes;
  for (int64_t d = normalized(axis, rank); d < rank; ++d)
    axes.push_back(d);
  return axes;
}

/// True when a norm over |x| from |axis| on, with affine operands
/// |affine| (null for an absent bias), fits the fused tx.layer_norm /
/// tx.rms_norm: f16 / bf16 / f32, normalized over the innermost dim only,
/// affine operands of shape [D].
bool fitsFusedNorm(Value x, int64_t axis, ArrayRef<Value> affine) {
  auto type = tensorTypeOf(x);
  Type elementType = type.getElementType();
  int64_t rank = type.getRank();
  if (!(elementType.isF16() || elementType.isBF16() || elementType.isF32()) ||
      rank < 1 || normalized(axis, rank) != rank - 1)
    return false;
  return llvm::all_of(affine, [&](Value v) {
    return !v || tensorTypeOf(v).getShape() ==
                     ArrayRef<int64_t>{type.getShape().back()};
  });
}

// y = xhat * scale + bias with xhat = (x - mean) * rstd over dims [axis, r):
//   dbias  = sum g,  dscale = sum g * xhat   (over the broadcast dims)
//   dxhat  = g * scale
//   dx     = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))
// Over the innermost dim in f16 / bf16 / f32 (what exporters emit): the
// statistics are recomputed by a tx.layer_norm (which CSE merges with the
// forward once tx-fuse-norms has fused it) and fed to tx.layer_norm_grad.
// Otherwise (f64, several normalized dims, broadcast affine operands)
// written out with primitives, the statistics recomputed in at least f32.
LogicalResult rule(RuleContext &c, LayerNormalizationOp op) {
  ImplicitLocOpBuilder &b = c.b;
  if (fitsFusedNorm(op.getInput(), op.getAxis(),
                    {op.getScale(), op.getBias()})) {
    auto stats = LayerNormOp::create(b, op.getInput(), op.getScale(),
                                     op.getBias(), op.getEpsilonAttr());
    auto grad = LayerNormGradOp::create(b, c.g(), op.getInput(), op.getScale(),
                                        stats.getMean(), stats.getRstd());
    c.set(0, grad.getInputGrad());
    c.set(1, grad.getGammaGrad());
    if (op.getBias())
      c.set(2, grad.getBetaGrad());
    return success();
  }
  Type elementType = elementTypeOf(op.getInput());
  Type ct = computeTypeFor(elementType);
  SmallVector<int64_t> axes = normAxes(op.getInput(), op.getAxis());
  Value x = castTo(b, op.getInput(), ct), g = castTo(b, c.g(), ct);
  Value mean = reduceMean(b, x, axes, true);
  Value centered = sub(b, x, mean);
  Value var = reduceMean(b, mul(b, centered, centered), axes, true);
  Value eps = scalar(b, ct, op.getEpsilon().convertToDouble());
  Value rstd = ReciprocalOp::create(b, SqrtOp::create(b, add(b, var, eps)));
  Value xhat = mul(b, centered, rstd);
  if (op.getBias() && c.wants(2))
    c.set(2, castTo(b, sumToType(b, g, op.getBias()), elementType));
  if (c.wants(1))
    c.set(1,
          castTo(b, sumToType(b, mul(b, g, xhat), op.getScale()), elementType));
  if (c.wants(0)) {
    Value dxhat = mul(b, g, castTo(b, op.getScale(), ct));
    Value m1 = reduceMean(b, dxhat, axes, true);
    Value m2 = reduceMean(b, mul(b, dxhat, xhat), axes, true);
    Value inner = sub(b, sub(b, dxhat, m1), mul(b, xhat, m2));
    c.set(0, castTo(b, mul(b, rstd, inner), elementType));
  }
  return success();
}

// y = xhat * scale with xhat = x * rstd, rstd = 1 / sqrt(mean(x^2) + eps):
//   dscale = sum g * xhat,  dxhat = g * scale
//   dx     = rstd * (dxhat - xhat * mean(dxhat * xhat))
// Fused (tx.rms_norm + tx.rms_norm_grad) or primitives, as for LayerNorm.
LogicalResult rule(RuleContext &c, RMSNormalizationOp op) {
  ImplicitLocOpBuilder &b = c.b;
  if (fitsFusedNorm(op.getInput(), op.getAxis(), {op.getScale()})) {
    auto stats =
        RMSNormOp::create(b, op.getInput(), op.getScale(), op.getEpsilonAttr());
    auto grad = RMSNormGradOp::create(b, c.g(), op.getInput(), op.getScale(),
                                      stats.getRstd());
    c.set(0, grad.getInputGrad());
    c.set(1, grad.getGammaGrad());
    return success();
  }
  Type elementType = elementTypeOf(op.getInput());
  Type ct = computeTypeFor(elementType);
  SmallVector<int64_t> axes = normAxes(op.getInput(), op.getAxis());
  Value x = castTo(b, op.getInput(), ct), g = castTo(b, c.g(), ct);
  Value ms = reduceMean(b, mul(b, x, x), axes, true);
  Value eps = scalar(b, ct, op.getEpsilon().convertToDouble());
  Value rstd = ReciprocalOp::create(b, SqrtOp::create(b, add(b, ms, eps)));
  Value xhat = mul(b, x, rstd);
  if (c.wants(1))
    c.set(1,
          castTo(b, sumToType(b, mul(b, g, xhat), op.getScale()), elementType));
  if (c.wants(0)) {
    Value dxhat = mul(b, g, castTo(b, op.getScale(), ct));
    Value m2 = reduceMean(b, mul(b, dxhat, xhat), axes, true);
    c.set(0, castTo(b, mul(b, rstd, sub(b, dxhat, mul(b, xhat, m2))),
                    elementType));
  }
  return success();
}

// Fused tx.layer_norm: tx.layer_norm_grad with the saved mean / rstd.
LogicalResult rule(RuleContext &c, LayerNormOp op) {
  if (c.resultGrads[1] || c.resultGrads[2])
    return unsupported(op, "through its mean / rstd results");
  auto grad = LayerNormGradOp::create(c.b, c.g(), op.getInput(), op.getGamma(),
                                      op.getMean(), op.getRstd());
  c.set(0, grad.getInputGrad());
  c.set(1, grad.getGammaGrad());
  if (op.getBeta() && c.wants(2))
    c.set(2, castTo(c.b, grad.getBetaGrad(), elementTypeOf(op.getBeta())));
  return success();
}

// Fused tx.rms_norm: tx.rms_norm_grad with the saved rstd.
LogicalResult rule(RuleContext &c, RMSNormOp op) {
  if (c.resultGrads[1])
    return unsupported(op, "through its rstd result");
  auto grad = RMSNormGradOp::create(c.b, c.g(), op.getInput(), op.getGamma(),
                                    op.getRstd());
  c.set(0, grad.getInputGrad());
  c.set(1, grad.getGammaGrad());
  return success();
}

// Fused tx.attention: tx.attention_grad with the saved output and lse. The
// mask gets no gradient (a learned additive bias is refused, not dropped).
LogicalResult rule(RuleContext &c, AttentionOp op) {
  if (c.resultGrads[1])
    return unsupported(op, "through its lse result");
  if (op.getMask() && c.wants(3))
    return unsupported(op, "with respect to its mask");
  auto grad = AttentionGradOp::create(
      c.b, c.g(), op.getQ(), op.getK(), op.getV(), op.getMask(),
      op.getResult(), op.getLse(), op.getScaleAttr(), op.getCausalAttr(),
      op.getWindowAttr());
  c.set(0, grad.getQGrad());
  c.set(1, grad.getKGrad());
  c.set(2, grad.getVGrad());
  return success();
}

// d loss / d scores = g * w / norm * (softmax(scores) - onehot(labels)),
// fused into tx.softmax_cross_entropy_grad (see its description).
LogicalResult rule(RuleContext &c, SoftmaxCrossEntropyLossOp op) {
  if (op.getWeights() && c.wants(2))
    return unsupported(op, "with respect to its class weights");
  c.set(0, SoftmaxCrossEntropyGradOp::create(
               c.b, op.getScores().getType(), c.g(), op.getScores(),
               op.getLabels(), op.getWeights(), op.getReductionAttr(),
               op.getIgnoreIndexAttr()));
  return success();
}

} // namespace

//===----------------------------------------------------------------------===//
// Dispatch
//===----------------------------------------------------------------------===//

bool tx::hasGradientRule(Operation *op) {
  return isa<AddOp, SubOp, MulOp, DivOp, PowOp, MaxOp, MinOp, WhereOp, SqrtOp,
             ReciprocalOp, NegOp, ErfOp, TanhOp, SigmoidOp, ReluOp, ExpOp,
             LogOp, SinOp, CosOp, IdentityOp, CastOp, TriluOp, DropoutOp,
             MatMulOp, GemmOp, GatherOp, GatherElementsOp, GatherNDOp,
             ReshapeOp, SqueezeOp, UnsqueezeOp, ExpandOp, TransposeOp, SliceOp,
             ConcatOp, SplitOp, PadOp, ReduceSumOp, ReduceMeanOp, ReduceMaxOp,
             CumSumOp, SoftmaxOp,
             LayerNormalizationOp, RMSNormalizationOp, LayerNormOp, RMSNormOp,
             AttentionOp, SoftmaxCrossEntropyLossOp>(op);
}

LogicalResult tx::buildOperandGradients(OpBuilder &builder, Operation *op,
                                        ArrayRef<Value> resultGrads,
                                        const llvm::BitVector &needed,
                                        SmallVectorImpl<Value> &operandGrads) {
  assert(resultGrads.size() == op->getNumResults() &&
         needed.size() == op->getNumOperands());
  operandGrads.assign(op->getNumOperands(), Value());
  ImplicitLocOpBuilder b(op->getLoc(), builder);
  RuleContext context{b, op, resultGrads, needed, operandGrads};
  LogicalResult result =
      llvm::TypeSwitch<Operation *, LogicalResult>(op)
          .Case<AddOp, SubOp, MulOp, DivOp, PowOp, MaxOp, MinOp, WhereOp,
                SqrtOp, ReciprocalOp, NegOp, ErfOp, TanhOp, SigmoidOp, ReluOp,
                ExpOp, LogOp, SinOp, CosOp, IdentityOp, CastOp, TriluOp,
                DropoutOp, MatMulOp, GemmOp, GatherOp, GatherElementsOp,
                GatherNDOp, ExpandOp, TransposeOp, SliceOp, ConcatOp, SplitOp,
                PadOp, ReduceSumOp, ReduceMeanOp, ReduceMaxOp, CumSumOp,
                SoftmaxOp, LayerNormalizationOp,
                RMSNormalizationOp, LayerNormOp, RMSNormOp, AttentionOp,
                SoftmaxCrossEntropyLossOp>(
              [&](auto typed) { return rule(context, typed); })
          .Case<ReshapeOp, SqueezeOp, UnsqueezeOp>(
              [&](Operation *op) { return reshapeRule(context, op); })
          .Default([&](Operation *op) {
            return emitError(op->getLoc())
                   << "no gradient rule for '" << op->getName() << "'";
          });
  // Keep the builder's insertion point in step with what the rules built.
  builder.setInsertionPoint(b.getInsertionBlock(), b.getInsertionPoint());
  return result;
}
