//===- GemmGelu.cpp - tx-gemm-gelu ------------------------------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// GPT-2's MLP computes GELU(x W + b) with the tanh form of the GELU. In a
// bf16 step the GEMM writes x W, and a kernel reads it back to add the bias,
// compute the GELU and write it for the next GEMM, while the backward reads
// x W again to differentiate the GELU. cuBLASLt's GELU_AUX_BIAS epilogue
// writes both from the GEMM's accumulator: the GELU's output and the
// pre-activation (bias included) the backward reads. The kernel's read of
// the pre-activation goes away: 100 MB a layer in GPT-2-124M's step at
// B16 T1024. This pass recognises the chain as exporters write it (Hugging
// Face's gelu_new, nanoGPT's NewGELU, ONNX's Gelu with approximate="tanh")
// and rewrites it into tx.blas_gemm_gelu. The erf GELU (PyTorch's default)
// has no cuBLASLt epilogue and stays in its kernel.
//
//===----------------------------------------------------------------------===//

#include "txopt/Dialect/Tx/Transforms/GemmGelu.h"
#include "txopt/Dialect/Tx/Transforms/GemmBias.h"
#include "txopt/Dialect/Tx/IR/TxOps.h"
#include "txopt/Dialect/Tx/Transforms/Passes.h"
#include "txopt/Dialect/Tx/Transforms/PatternUtils.h"

#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <cmath>

namespace mlir::txopt::tx {
#define GEN_PASS_DEF_GEMMGELUPASS
#include "txopt/Dialect/Tx/Transforms/Passes.h.inc"
} // namespace mlir::txopt::tx

using namespace mlir;
using namespace mlir::txopt;

namespace {

RankedTensorType tensorType(Value v) { return cast<RankedTensorType>(v.getType()); }

/// Whether the chain's constant |actual| is |expected| as a chain of
/// |element| holds it: exporters round constants to the chain's type, so
/// within that type's relative rounding error (half its epsilon: bf16
/// 2^-9, f16 2^-11), or 1e-6 for f32. Relative to |expected|: 0.042 for
/// 0.044715 is another function, not a rounding.
bool isClose(double actual, double expected, Type element) {
  double tolerance = element.isF16() ? 0x1p-11 : element.isBF16() ? 0x1p-9 : 1e-6;
  return std::fabs(actual - expected) <= tolerance * std::fabs(expected);
}

/// How many factors of |x| the product |terms| holds (x^3 may be written
/// x * x * x, x * x^2 or pow(x, 3)), or -1 when it holds anything else.
int powerOf(const tx::ProductTerms &terms, Value x) {
  if (!terms.den.empty())
    return -1;
  int power = 0;
  for (Value factor : terms.num) {
    if (tx::isSameValueModuloCasts(factor, x)) {
      ++power;
      continue;
    }
    auto pow = factor.getDefiningOp<tx::PowOp>();
    if (!pow || !tx::isSameValueModuloCasts(pow.getLhs(), x))
      return -1;
    std::optional<double> e = tx::getSplatConstant(pow.getRhs());
    if (!e || *e != std::round(*e) || *e < 1)
      return -1;
    power += static_cast<int>(*e);
  }
  return power;
}

/// The GELU chain ending at |y|: `0.5 x (1 + tanh(c (x + 0.044715 x^3)))`
/// with c = sqrt(2 / pi), in any association and operand order.
struct TanhGelu {
  Value x;
  tx::TanhOp tanh;
};

std::optional<TanhGelu> matchTanhGelu(Value y) {
  tx::ProductTerms outer;
  tx::flattenProduct(y, outer);
  RankedTensorType yType = cast<RankedTensorType>(y.getType());
  Type element = yType.getElementType();
  if (!outer.den.empty() || outer.num.size() != 2 || !isClose(outer.coef, 0.5, element))
    return std::nullopt;
  for (unsigned side = 0; side < 2; ++side) {
    Value x = outer.num[side], onePlusTanh = outer.num[1 - side];
    auto add = onePlusTanh.getDefiningOp<tx::AddOp>();
    if (!add)
      continue;
    Value other = tx::isSplatConstant(add.getLhs(), 1.0)   ? add.getRhs()
                  : tx::isSplatConstant(add.getRhs(), 1.0) ? add.getLhs()
                                                           : Value();
    auto tanh = other ? other.getDefiningOp<tx::TanhOp>() : nullptr;
    if (!tanh)
      continue;
    tx::ProductTerms scaled;
    tx::flattenProduct(tanh.getInput(), scaled);
    if (!scaled.den.empty() || scaled.num.size() != 1 ||
        !isClose(scaled.coef, std::sqrt(2.0 / M_PI), element))
      continue;
    tx::ProductTerms lhs, rhs;
    if (!tx::flattenSumOperands(scaled.num[0], lhs, rhs))
      continue;
    for (auto [linear, cubic] : {std::pair{&lhs, &rhs}, std::pair{&rhs, &lhs}})
      // y has x's shape: a constant that broadcasts the chain to a larger
      // shape makes it something else.
      if (isClose(linear->coef, 1.0, element) && powerOf(*linear, x) == 1 &&
          isClose(cubic->coef, 0.044715, element) && powerOf(*cubic, x) == 3 &&
          cast<RankedTensorType>(x.getType()).getShape() == yType.getShape())
        return TanhGelu{x, tanh};
  }
  return std::nullopt;
}

/// A GELU over a GEMM's result: x = views(add(views(cast?(views(gemm))), bias))
/// or x = views(cast?(gemm)), views being reshapes that keep the last dim.
struct GeluOverGemm {
  TanhGelu gelu;
  Value y;                    ///< the chain's output
  tx::BlasGemmOp gemm;
  tx::AddOp biasAdd;          ///< null without a bias
  Value bias;                 ///< the bias operand of biasAdd
  /// The unary ops (casts, reshapes) from the GEMM's result to the bias
  /// add, in order.
  llvm::SmallVector<Operation *> path;
  tx::CastOp output;          ///< y (through reshapes) cast to the GEMM's type
};

/// Whether |op| is a reshape keeping the last dim (the bias's and the
/// GEMM's column index of every element stays the same).
bool isColumnKeepingReshape(Operation *op) {
  auto reshape = dyn_cast_or_null<tx::ReshapeOp>(op);
  if (!reshape)
    return false;
  ArrayRef<int64_t> in = tensorType(reshape.getInput()).getShape();
  ArrayRef<int64_t> out = tensorType(reshape.getResult()).getShape();
  return !in.empty() && !out.empty() && in.back() == out.back();
}

/// Whether |op| is a cast from a float type to a float type at least as
/// wide and as ranged (the same type, or to f32): every value passes
/// unchanged. The epilogue's pre-activation is the GEMM's sum, so only
/// such casts may lie between the GEMM and the bias add.
bool isExactFloatCast(Operation *op) {
  auto cast = dyn_cast_or_null<tx::CastOp>(op);
  if (!cast)
    return false;
  Type from = tensorType(cast.getInput()).getElementType();
  Type to = tensorType(cast.getResult()).getElementType();
  return isa<FloatType>(from) && (from == to || to.isF32() || to.isF64());
}

/// Whether |op| casts a float type to a float type of 16 bits or more
/// (after the bias add, or without one, a rounding of the sum to bf16 is a
/// difference the GELU's 16-bit output hides; an integer or FP8 cast would
/// not be).
bool isFloatCast(Operation *op) {
  auto cast = dyn_cast_or_null<tx::CastOp>(op);
  if (!cast)
    return false;
  auto to = dyn_cast<FloatType>(tensorType(cast.getResult()).getElementType());
  return isa<FloatType>(tensorType(cast.getInput()).getElementType()) && to &&
         to.getWidth() >= 16;
}

/// Walks from |x| back to a tx.blas_gemm; fills |m|. False when x is not
/// a GEMM's result through the ops above.
bool findGemm(Value x, GeluOverGemm &m) {
  Value v = x;
  llvm::SmallVector<Operation *> reversed;
  while (true) {
    Operation *def = v.getDefiningOp();
    if (auto gemm = dyn_cast_or_null<tx::BlasGemmOp>(def)) {
      m.gemm = gemm;
      break;
    }
    // Walking back: past the add, the op lies between the GEMM and it.
    bool beforeTheAdd = static_cast<bool>(m.biasAdd);
    if (isColumnKeepingReshape(def) ||
        (beforeTheAdd ? isExactFloatCast(def) : isFloatCast(def))) {
      reversed.push_back(def);
      v = def->getOperand(0);
      continue;
    }
    auto add = dyn_cast_or_null<tx::AddOp>(def);
    if (!add || m.biasAdd)
      return false;
    // The operand of the add's shape is the product; the other the bias.
    ArrayRef<int64_t> sumShape = tensorType(add.getResult()).getShape();
    bool lhsIsProduct = tensorType(add.getLhs()).getShape() == sumShape;
    if (!lhsIsProduct && tensorType(add.getRhs()).getShape() != sumShape)
      return false;
    m.biasAdd = add;
    m.bias = lhsIsProduct ? add.getRhs() : add.getLhs();
    v = lhsIsProduct ? add.getLhs() : add.getRhs();
    // The ops after the add read its result, which fold() replaces: the
    // path to rebuild is the part before it.
    reversed.clear();
  }
  m.path.assign(reversed.rbegin(), reversed.rend());
  return true;
}

/// The reshapes from |y| to its cast to |element| whose every reader
/// (through reshapes) is a GEMM: the value written for the next layer.
tx::CastOp findGemmReadOutput(Value y, Type element) {
  std::function<bool(Value)> readOnlyByGemms = [&](Value v) {
    for (Operation *user : v.getUsers()) {
      if (isa<tx::ReshapeOp>(user) && readOnlyByGemms(user->getResult(0)))
        continue;
      if (!isa<tx::BlasGemmOp>(user))
        return false;
    }
    return !v.use_empty();
  };
  std::function<tx::CastOp(Value)> search = [&](Value v) -> tx::CastOp {
    for (Operation *user : v.getUsers()) {
      if (auto cast = dyn_cast<tx::CastOp>(user))
        if (tensorType(cast.getResult()).getElementType() == element &&
            readOnlyByGemms(cast.getResult()))
          return cast;
      if (isa<tx::ReshapeOp>(user))
        if (tx::CastOp found = search(user->getResult(0)))
          return found;
    }
    return nullptr;
  };
  return search(y);
}

/// Why the GELU |m| stays in its kernel, or "" when it folds.
std::string whyNotFolded(GeluOverGemm &m) {
  tx::BlasGemmOp gemm = m.gemm;
  RankedTensorType gemmType = tensorType(gemm.getResult());
  Type element = gemmType.getElementType();
  if (gemm.isFP8())
    return "the GEMM is FP8: its GELU output is quantized in the kernel that computes it";
  if (!element.isBF16() && !element.isF16())
    return "the GEMM's result is " + tx::quoteType(element) +
           ": cuBLASLt's GELU epilogue computes tanh approximately, which only a bf16 or "
           "f16 rounding hides";
  if (gemm.getC())
    return "its GEMM already adds a c";
  if (tensorType(gemm.getB()).getRank() != 2)
    return "the GEMM's b has batch dims";
  if (tensorType(gemm.getA()).getRank() > 2 && gemm.getTransposeA())
    return "the GEMM's a is batched and transposed";
  int64_t n = gemmType.getShape().back();
  if (n % 8 != 0)
    return "the GEMM's " + std::to_string(n) +
           " columns are not a multiple of 8 (cuBLASLt's leading dimension of the "
           "pre-activation)";
  if (m.biasAdd) {
    ArrayRef<int64_t> biasShape = tensorType(m.bias).getShape();
    if (!tx::isRowVectorOver(biasShape, n))
      return "the other operand of the add, " + tx::formatShape(biasShape) +
             ", is not a row vector over the GEMM's " + std::to_string(n) + " columns";
    // The product without the bias has no other reader: the GEMM's result
    // and each op on the path to the add are read once.
    if (!gemm.getResult().hasOneUse() ||
        llvm::any_of(m.path, [](Operation *op) { return !op->getResult(0).hasOneUse(); }))
      return "the GEMM's result is read without the bias too";
  }
  m.output = findGemmReadOutput(m.y, element);
  if (!m.output)
    return "no GEMM reads the GELU's output in the GEMM's type (its readers compute "
           "it in their kernels)";
  return "";
}

/// |value| reshaped to |type|'s shape when it differs.
Value reshapeTo(OpBuilder &b, Location loc, Value value, RankedTensorType type) {
  if (tensorType(value).getShape() == type.getShape())
    return value;
  return tx::ReshapeOp::create(b, loc, RankedTensorType::get(type.getShape(),
                                                             tensorType(value).getElementType()),
                               value);
}

/// Erases each of |roots| that is trivially dead (unread, no side
/// effects), then its operands' definitions that become so, transitively.
void eraseDeadFrom(llvm::ArrayRef<Operation *> roots) {
  llvm::SmallVector<Operation *> work(roots.begin(), roots.end());
  llvm::SmallPtrSet<Operation *, 16> erased;
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    if (erased.contains(op) || !isOpTriviallyDead(op))
      continue;
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp())
        work.push_back(def);
    erased.insert(op);
    op->erase();
  }
}

void fold(GeluOverGemm &m) {
  tx::BlasGemmOp gemm = m.gemm;
  RankedTensorType gemmType = tensorType(gemm.getResult());
  // Where the bias and the GEMM's operands are all available: the add
  // (the bias may be computed after the GEMM), else the GEMM.
  Operation *at = m.biasAdd ? m.biasAdd.getOperation() : gemm.getOperation();
  OpBuilder b(at);
  Location loc = gemm.getLoc();
  // The bias rounded to the GEMM's type, as tx-gemm-bias rounds it.
  Value bias = m.biasAdd ? tx::biasAsEpilogueRow(b, loc, m.bias, gemmType) : Value();
  auto fused = tx::BlasGemmGeluOp::create(b, loc, gemmType, gemmType, gemm.getA(), gemm.getB(),
                                          bias, gemm.getTransposeAAttr(),
                                          gemm.getTransposeBAttr(), gemm.getAlphaAttr());
  // The chain's readers of x (the backward's GELU gradient) read the
  // pre-activation through the same casts and reshapes.
  Value pre = fused.getPreActivation();
  if (m.biasAdd) {
    Value x = pre;
    for (Operation *op : m.path) {
      auto resultType = tensorType(op->getResult(0));
      if (isa<tx::CastOp>(op))
        x = tx::CastOp::create(b, op->getLoc(),
                               RankedTensorType::get(tensorType(x).getShape(),
                                                     resultType.getElementType()),
                               x);
      else
        x = reshapeTo(b, op->getLoc(), x, resultType);
    }
    // The path ends at the add's product operand, of the add's type.
    m.biasAdd.getResult().replaceAllUsesWith(x);
  } else {
    gemm.getResult().replaceAllUsesWith(pre);
  }
  // The next GEMM reads the epilogue's GELU output.
  OpBuilder after(m.output);
  m.output.getResult().replaceAllUsesWith(
      reshapeTo(after, m.output.getLoc(), fused.getResult(), tensorType(m.output.getResult())));
  // What only led to the replaced values is dead now: the GEMM, the
  // product's casts and the add, the output cast and the part of the chain
  // only it read.
  llvm::SmallVector<Operation *> roots{m.output, gemm};
  if (m.biasAdd)
    roots.push_back(m.biasAdd);
  eraseDeadFrom(roots);
}

struct GemmGeluPass : public tx::impl::GemmGeluPassBase<GemmGeluPass> {
  void runOnOperation() override {
    tx::GemmGeluResult result = tx::foldGelusIntoGemms(getOperation());
    // The must-not-fire cases say why in a remark (lit checks them).
    for (auto &[op, why] : result.left)
      op->emitRemark("GELU not folded into its GEMM's epilogue: ") << why;
  }
};

} // namespace

tx::GemmGeluResult tx::foldGelusIntoGemms(func::FuncOp func) {
  GemmGeluResult result;
  if (func.isExternal())
    return result;
  // Chains are matched at their output, a tx.mul; collect first, rewrite
  // after (a rewrite erases ops).
  llvm::SmallVector<GeluOverGemm> matches;
  func.walk([&](tx::MulOp mul) {
    std::optional<TanhGelu> gelu = matchTanhGelu(mul.getResult());
    if (!gelu)
      return;
    GeluOverGemm m;
    m.gelu = *gelu;
    m.y = mul.getResult();
    if (findGemm(gelu->x, m))
      matches.push_back(m);
  });
  // Only the first GELU of a GEMM's result (in block order: the forward's)
  // may fold. A later one is the backward's recomputation
  // (tx-rematerialize), which reads the pre-activation; written by the
  // epilogue, its output would stay in memory from the forward to there.
  // A GEMM seen before may be erased already: nothing of |m| is read then.
  llvm::SmallPtrSet<Operation *, 8> seenGemms;
  for (GeluOverGemm &m : matches) {
    if (!seenGemms.insert(m.gemm).second) {
      result.left.push_back({m.gelu.tanh, "not the first GELU of its GEMM's result (a "
                                          "recomputation reads the pre-activation)"});
      continue;
    }
    std::string why = whyNotFolded(m);
    if (!why.empty()) {
      result.left.push_back({m.gelu.tanh, why});
      continue;
    }
    fold(m);
    ++result.folded;
  }
  return result;
}
