//===- NormChainMatcher.cpp - tx-fuse-norms' chain matcher ----------------===//
//
// SPDX-License-Identifier: Apache-2.0
// Follows a decomposed LayerNorm / RMSNorm chain, as exporters spell it,
// from its reduce_mean of a square to the affine step, and says why a
// near miss is one. Apart from FuseNorms.cpp (the rewrite patterns and the
// pass) because matching is most of the work and reads on its own.
//
//===----------------------------------------------------------------------===//

#include "NormChainMatcher.h"

#include "txopt/Dialect/Tx/Transforms/PatternUtils.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <cmath>

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::tx;
using namespace mlir::txopt::tx::norm_fusion;

std::string norm_fusion::printed(Attribute attr) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << attr;
  return text;
}

namespace {

/// True when |value| is a one-element constant equal to |expected| (within
/// the f32 rounding exporters apply to constants).
bool isScalarConstant(Value value, double expected) {
  std::optional<double> actual = getScalarConstant(value);
  return actual &&
         std::fabs(*actual - expected) <= 1e-6 * std::max(1.0, std::fabs(expected));
}

/// A short description of where |value| comes from, for remarks.
std::string describe(Value value) {
  if (auto arg = dyn_cast<BlockArgument>(value))
    return "block argument #" + std::to_string(arg.getArgNumber());
  Operation *op = value.getDefiningOp();
  if (isa<ConstantOp>(op))
    return "a constant of shape " + formatShape(tensorType(value).getShape());
  return "the result of '" + op->getName().getStringRef().str() + "'";
}

std::string describeExponent(Value exponent) {
  if (std::optional<double> value = getScalarConstant(exponent)) {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << *value;
    return text;
  }
  return describe(exponent);
}

/// Empty when |op| reduces only the innermost axis and keeps it (so the
/// statistic broadcasts back against the input); otherwise why not.
std::string checkInnermostReduce(ReduceMeanOp op) {
  int64_t rank = tensorType(op.getInput()).getRank();
  SmallVector<int64_t> axes;
  if (op.getAxes().empty()) {
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
  }
  for (int64_t axis : op.getAxes()) {
    FailureOr<int64_t> normalized = normalizeAxis(axis, rank);
    if (failed(normalized))
      return "expected reduce_mean axes within rank " + std::to_string(rank);
    axes.push_back(*normalized);
  }
  if (rank == 0 || axes != SmallVector<int64_t>{rank - 1})
    return "expected reduce_mean over the innermost axis " +
           std::to_string(rank - 1) + " only, but got axes " +
           formatShape(op.getAxes());
  if (!op.getKeepDims())
    return "expected reduce_mean with keep_dims, but the reduced axis is dropped";
  return {};
}

/// Matches the decomposed LayerNorm / RMSNorm chain around |variance|, the
/// reduce_mean of a square. Matching starts there because every spelling
/// has it; the chain is then followed up (to the centering, for LayerNorm)
/// and down (to eps, the square root, the normalizing Mul/Div, then the
/// affine step and Casts) one use at a time. Each phase returns false when
/// it has settled the match as no candidate or a near miss.
class DecomposedNormMatcher {
public:
  explicit DecomposedNormMatcher(ReduceMeanOp variance) : variance(variance) {
    match.anchor = variance;
  }

  NormMatch run() {
    if (matchSkeleton() && classify() && checkStatistics() && matchEpsilon() &&
        matchNormalization() && matchAffineTail() && checkEscapes() &&
        checkTypes())
      match.status = NormMatch::Matched;
    return match;
  }

private:
  bool notCandidate(StringRef why) {
    match.status = NormMatch::NotACandidate;
    match.reason = why.str();
    return false;
  }
  bool nearMiss(const Twine &why) {
    match.status = NormMatch::NearMiss;
    match.reason = why.str();
    return false;
  }

  /// The skeleton every norm has: reduce_mean(square) + eps, square-rooted.
  /// Anything short of it (a mean of squares in a loss, say) is no
  /// candidate.
  bool matchSkeleton() {
    square = variance.getInput().getDefiningOp();
    if (auto pow = dyn_cast_or_null<PowOp>(square))
      base = pow.getLhs();
    else if (auto mul = dyn_cast_or_null<MulOp>(square);
             mul && mul.getLhs() == mul.getRhs())
      base = mul.getLhs();
    else
      return notCandidate("reduce_mean input is not a square");
    for (Operation *user : variance->getUsers())
      if (auto add = dyn_cast<AddOp>(user);
          add && getOtherOperand(add, variance.getResult())) {
        addEps = add;
        break;
      }
    if (!addEps)
      return notCandidate("reduce_mean of a square is not followed by '+ eps'");
    for (Operation *user : addEps->getUsers())
      if (isa<SqrtOp, PowOp>(user) && user->getOperand(0) == addEps.getResult()) {
        sqrtOrPow = user;
        break;
      }
    if (!sqrtOrPow)
      return notCandidate("'mean(square) + eps' has no square root");
    return true;
  }

  /// A centered base makes a LayerNorm, anything else an RMSNorm. From here
  /// on a failure is a near miss worth explaining.
  bool classify() {
    center = base.getDefiningOp<SubOp>();
    if (!center)
      return true;
    if ((mean = center.getRhs().getDefiningOp<ReduceMeanOp>())) {
      match.kind = NormKind::LayerNorm;
      match.anchor = mean;
    } else if (auto reversed = center.getLhs().getDefiningOp<ReduceMeanOp>()) {
      match.kind = NormKind::LayerNorm;
      match.anchor = reversed;
      return nearMiss("expected 'x - mean(x)', but got 'mean(x) - x'");
    }
    return true;
  }

  /// The square is a square, both means reduce the innermost axis, and the
  /// centered value is the input minus its own mean.
  bool checkStatistics() {
    if (auto pow = dyn_cast<PowOp>(square); pow && !isScalarConstant(pow.getRhs(), 2.0))
      return nearMiss("expected exponent 2 in the square, but got " +
                      describeExponent(pow.getRhs()));
    if (std::string why = checkInnermostReduce(variance); !why.empty())
      return nearMiss(why);
    if (mean) {
      if (std::string why = checkInnermostReduce(mean); !why.empty())
        return nearMiss(why);
      if (!isSameValueModuloCasts(center.getLhs(), mean.getInput()))
        return nearMiss("expected the centered value to be the reduce_mean "
                        "input minus its mean, but 'tx.sub' subtracts the mean "
                        "from another value");
    }
    x = mean ? center.getLhs() : base;
    shape = tensorType(x).getShape();
    dim = shape.back();
    return true;
  }

  bool matchEpsilon() {
    Value eps = getOtherOperand(addEps, variance.getResult());
    epsilon = getScalarConstant(eps);
    if (!epsilon)
      return nearMiss("expected a constant scalar eps, but got " + describe(eps));
    if (!(*epsilon >= 0.0) || !std::isfinite(*epsilon))
      return nearMiss("expected a finite non-negative eps, but got " +
                      std::to_string(*epsilon));
    if (addEps.getType() != variance.getType())
      return nearMiss("expected eps to keep the variance shape " +
                      formatShape(variance.getType().getShape()) + ", but got " +
                      formatShape(addEps.getType().getShape()));
    return true;
  }

  /// The square root and the op that divides by it (or multiplies by its
  /// reciprocal): Div(v, s), Mul(v, Reciprocal(s)), Mul(v, Div(1, s)), or
  /// Mul(v, Pow(var + eps, -0.5)). Records the statistics part of the chain.
  bool matchNormalization() {
    if (auto pow = dyn_cast<PowOp>(sqrtOrPow)) {
      if (isScalarConstant(pow.getRhs(), 0.5))
        sqrtOp = pow;
      else if (isScalarConstant(pow.getRhs(), -0.5))
        rstdOp = pow;
      else
        return nearMiss("expected exponent 0.5 or -0.5 on 'var + eps', but got " +
                        describeExponent(pow.getRhs()));
    } else {
      sqrtOp = sqrtOrPow;
    }
    if (sqrtOp && !matchDivisionByRoot())
      return false;
    if (!normOp && !matchMultiplicationByRstd())
      return false;
    if (mean ? normalized != center.getResult()
             : !isSameValueModuloCasts(normalized, base))
      return nearMiss(Twine("expected the ") +
                      (mean ? "centered" : "squared") +
                      " value to be normalized, but the normalizing '" +
                      normOp->getName().getStringRef() +
                      "' scales another value");
    if (tensorType(normOp->getResult(0)).getShape() != shape)
      return nearMiss("expected the normalized value to keep the input shape " +
                      formatShape(shape) + ", but got " +
                      formatShape(tensorType(normOp->getResult(0)).getShape()));

    NormChain &chain = match.chain;
    if (mean)
      chain.ops.append({mean, center});
    chain.ops.append({square, variance, addEps});
    if (sqrtOp)
      chain.ops.push_back(sqrtOp);
    if (rstdOp)
      chain.ops.push_back(rstdOp);
    chain.ops.push_back(normOp);
    return true;
  }

  /// Div(v, sqrt) normalizes; Div(1, sqrt) and Reciprocal(sqrt) invert.
  bool matchDivisionByRoot() {
    Value root = sqrtOp->getResult(0);
    for (Operation *user : sqrtOp->getUsers()) {
      if (auto div = dyn_cast<DivOp>(user);
          div && div.getRhs() == root && div.getLhs() != root) {
        if (isScalarConstant(div.getLhs(), 1.0)) {
          rstdOp = div;
        } else {
          normOp = div;
          normalized = div.getLhs();
        }
        break;
      }
      if (isa<ReciprocalOp>(user)) {
        rstdOp = user;
        break;
      }
    }
    if (!normOp && !rstdOp)
      return nearMiss("expected the square root to divide the input or to be "
                      "inverted, but it has no such user");
    return true;
  }

  bool matchMultiplicationByRstd() {
    Value rstd = rstdOp->getResult(0);
    for (Operation *user : rstdOp->getUsers())
      if (isa<MulOp>(user))
        if (Value other = getOtherOperand(user, rstd)) {
          normOp = user;
          normalized = other;
          break;
        }
    if (!normOp)
      return nearMiss("expected the reciprocal square root to multiply the "
                      "input, but it has no such user");
    return true;
  }

  /// Follows single uses: at most one Cast back, `* gamma`, then
  /// (LayerNorm only) `+ beta`. An operand that varies along the innermost
  /// dim but is not [D] looks like a misshapen weight: block instead of
  /// leaving it out.
  bool matchAffineTail() {
    // A widening Cast to f32 in front of the chain is absorbed only
    // together with the Cast back to the same type after it.
    if (auto cast = stripIdentityCasts(x).getDefiningOp<CastOp>()) {
      Type from = tensorType(cast.getInput()).getElementType();
      if ((from.isF16() || from.isBF16()) && cast.getType().getElementType().isF32())
        lowInput = cast.getInput();
    }
    NormChain &chain = match.chain;
    Value current = normOp->getResult(0);
    while (current.hasOneUse()) {
      Operation *user = *current.getUsers().begin();
      if (auto cast = dyn_cast<CastOp>(user)) {
        // Identity Casts (TorchScript's `.float()` on f32 values) are
        // skipped; the one real Cast allowed narrows back to the pre-chain
        // type.
        bool identity = cast.getInput().getType() == cast.getType();
        if (!identity) {
          if (endCast || !lowInput ||
              !tensorType(current).getElementType().isF32() ||
              cast.getType().getElementType() !=
                  tensorType(lowInput).getElementType())
            break;
          endCast = cast;
        }
      } else if (isa<MulOp, AddOp>(user)) {
        bool isScale = isa<MulOp>(user);
        if (isScale ? (chain.gamma || chain.beta)
                    : (match.kind == NormKind::RMSNorm || chain.beta))
          break;
        Value other = getOtherOperand(user, current);
        if (!other)
          break;
        ArrayRef<int64_t> affine = tensorType(other).getShape();
        if (affine == ArrayRef<int64_t>{dim}) {
          (isScale ? chain.gamma : chain.beta) = other;
        } else if (!affine.empty() && affine.back() == dim && affine != shape) {
          return nearMiss(Twine("expected ") + (isScale ? "gamma" : "beta") +
                          " shape " + formatShape({dim}) + ", but got " +
                          formatShape(affine));
        } else {
          break;
        }
      } else {
        break;
      }
      chain.ops.push_back(user);
      current = user->getResult(0);
    }
    chain.root = chain.ops.back();
    return true;
  }

  /// No intermediate may escape: the fused op does not expose it, so
  /// fusing would compute it twice.
  bool checkEscapes() {
    NormChain &chain = match.chain;
    llvm::SmallPtrSet<Operation *, 16> inChain(chain.ops.begin(), chain.ops.end());
    for (Operation *op : chain.ops) {
      if (op->getBlock() != chain.root->getBlock())
        return nearMiss("expected the chain in one block");
      if (op == chain.root)
        continue;
      if (Operation *user = findUserOutside(op, inChain))
        return nearMiss("intermediate '" + op->getName().getStringRef() +
                        "' has a user outside the chain ('" +
                        user->getName().getStringRef() + "')");
    }
    return true;
  }

  /// The fused op's types: an f16/bf16/f32 input, affine operands of the
  /// input's type or f32, and a result of the input's type.
  bool checkTypes() {
    NormChain &chain = match.chain;
    chain.input = endCast ? lowInput : stripIdentityCasts(x);
    Type element = tensorType(chain.input).getElementType();
    if (!isNormElementType(element))
      return nearMiss("expected an f16, bf16 or f32 input, but got " +
                      printed(TypeAttr::get(element)));
    for (Value affine : {chain.gamma, chain.beta}) {
      if (!affine)
        continue;
      Type affineElement = tensorType(affine).getElementType();
      if (affineElement != element && !affineElement.isF32())
        return nearMiss("expected an affine element type equal to the input's or "
                        "f32, but got " +
                        printed(TypeAttr::get(affineElement)));
    }
    if (chain.input.getType() != chain.root->getResult(0).getType())
      return nearMiss("expected the chain result to have the input type " +
                      printed(TypeAttr::get(chain.input.getType())));
    chain.epsilon = static_cast<float>(*epsilon);
    return true;
  }

  ReduceMeanOp variance;
  NormMatch match;
  // The statistics: square(base), mean(square) + eps, its root.
  Operation *square = nullptr, *sqrtOrPow = nullptr;
  Value base;
  AddOp addEps;
  // LayerNorm only: base = x - mean(x).
  SubOp center;
  ReduceMeanOp mean;
  Value x;
  ArrayRef<int64_t> shape;
  int64_t dim = 0;
  std::optional<double> epsilon;
  // The normalization: normOp = normalized / sqrtOp or normalized * rstdOp.
  Operation *sqrtOp = nullptr, *rstdOp = nullptr, *normOp = nullptr;
  Value normalized;
  // The f16/bf16 input behind a widening Cast, and the Cast back.
  Value lowInput;
  CastOp endCast;
};

} // namespace

NormMatch norm_fusion::matchDecomposedNorm(ReduceMeanOp variance) {
  return DecomposedNormMatcher(variance).run();
}
