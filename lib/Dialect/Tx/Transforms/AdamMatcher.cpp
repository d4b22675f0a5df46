//===- AdamMatcher.cpp - per-parameter Adam/AdamW chain matcher -----------===//
//
// SPDX-License-Identifier: Apache-2.0
// Reads one Adam/AdamW update written out in primitive ops (as torch.onnx
// exports it) into a tx-fuse-optimizer candidate.
//
//===----------------------------------------------------------------------===//

#include "OptimizerMatchers.h"

#include "txopt/Dialect/Tx/Transforms/PatternUtils.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::tx;
using namespace mlir::txopt::tx::optimizer;

namespace {

//===----------------------------------------------------------------------===//
// Small matchers
//===----------------------------------------------------------------------===//

/// A square root, possibly scaled (sqrt(v) / sqrt(bc2)).
bool hasSqrtFactor(Value v, unsigned depth = 4) {
  if (isSqrtLike(v))
    return true;
  Operation *op = v.getDefiningOp();
  return op && depth > 0 && isa<MulOp, DivOp>(op) &&
         llvm::any_of(op->getOperands(),
                      [&](Value x) { return hasSqrtFactor(x, depth - 1); });
}

/// `1 - b^t` in shape (whether b is a constant is checked later).
bool isBiasCorrectionLike(Value v) {
  auto sub = v.getDefiningOp<SubOp>();
  return sub && isSplatConstant(sub.getLhs(), 1.0) &&
         sub.getRhs().getDefiningOp<PowOp>();
}

/// True when a term holds a non-constant scalar factor (a beta passed in).
bool hasScalarLeaf(const ProductTerms &t) {
  return llvm::any_of(t.num, [](Value x) { return getNumElements(x) == 1; });
}

//===----------------------------------------------------------------------===//
// AdamMatcher
//===----------------------------------------------------------------------===//

/// Matches one per-parameter Adam/AdamW update anchored on `p1 = P - U`.
/// Legal because tx.adam computes the same p1, m1 and v1 (up to f32
/// reassociation) once the checks below hold: constant betas with
/// c = 1 - beta (read back as the user's doubles, see userBeta, so tx.adam
/// reproduces both f32 constants), one step for both bias corrections (or
/// folded constants that are 1 - beta^t of one integer t), eps >= 0, wd >= 0,
/// one f32 type without broadcasting, and no other user of an intermediate.
class AdamMatcher : public ChainMatcher {
public:
  using ChainMatcher::ChainMatcher;

  std::optional<Candidate> match();

private:
  /// Descend into a scalar product only if it holds part of the chain (a
  /// bias correction or a parameter-shaped value); otherwise it is lr.
  bool containsChainLeaf(Value v, unsigned depth = 8) const;
  bool isDenominatorLike(Value v) const;

  bool matchWith(Value pSide, double sign, ProductTerms &u);
  bool matchDenominator(Value d);
  bool matchCorrectedSqrt(Value s);
  bool matchCorrectedV(Value x, bool allowCorrection);
  bool
  matchMovingAverage(Value sum, StringRef moment, StringRef betaName,
                     StringRef expected, double &beta,
                     function_ref<std::optional<double>(ProductTerms &input,
                                                        ProductTerms &state)>
                         read);
  bool matchSecondMoment();
  bool matchFirstMoment();
  bool matchBiasCorrection(Value bc, double beta, StringRef name,
                           ScalarKey &step);
  bool resolveBiasCorrection(double scale);
  bool matchDecoupledDecay(Value pSide);
  bool decayCoefficient(ArrayRef<Value> leaves, double coef);
  bool checkUses();

  Value p, g, gEff, m, v, m1, v1, lrLeaf, bc1, bc2;
  /// Constant factor on v1 under the root (1 / (1 - b2^t) folded by the
  /// exporter when the step is a constant).
  double vScale = 1.0;
};

bool AdamMatcher::containsChainLeaf(Value v, unsigned depth) const {
  if (isChainLeaf(v) || isBiasCorrectionLike(v))
    return true;
  Operation *op = v.getDefiningOp();
  if (!op || depth == 0 || !isa<MulOp, DivOp, NegOp, ReciprocalOp>(op))
    return false;
  return llvm::any_of(op->getOperands(),
                      [&](Value x) { return containsChainLeaf(x, depth - 1); });
}

bool AdamMatcher::isDenominatorLike(Value v) const {
  if (!isChainLeaf(v))
    return false;
  if (isSqrtLike(v))
    return true;
  auto add = v.getDefiningOp<AddOp>();
  return add && (hasSqrtFactor(add.getLhs()) || hasSqrtFactor(add.getRhs()));
}

std::optional<Candidate> AdamMatcher::match() {
  auto descend = [&](Value x) { return containsChainLeaf(x); };
  Value lhs = anchor->getOperand(0), rhs = anchor->getOperand(1);
  struct Try {
    Value pSide, uSide;
    double sign;
  };
  SmallVector<Try, 2> tries;
  if (isa<SubOp>(anchor))
    tries.push_back({lhs, rhs, 1.0});
  else
    tries.append({{lhs, rhs, -1.0}, {rhs, lhs, -1.0}});

  for (const Try &t : tries) {
    ProductTerms u;
    flattenProduct(t.uSide, u, /*inNum=*/true, descend);
    // Gate: a parameter-shaped sum over a parameter-shaped sqrt denominator,
    // subtracted. Anything else is not an optimizer update (a LayerNorm's
    // `+ beta` has the wrong sign), and gets no remark.
    bool hasMoment = llvm::any_of(u.num, [&](Value x) {
      return isChainLeaf(x) && x.getDefiningOp<AddOp>();
    });
    bool hasDen =
        llvm::any_of(u.den, [&](Value x) { return isDenominatorLike(x); });
    if (!hasMoment || !hasDen || t.sign * u.coef <= 0)
      continue;
    if (!matchWith(t.pSide, t.sign, u))
      return std::nullopt;
    Candidate c;
    c.anchor = anchor;
    c.hp = hp;
    c.inputs = {{p}, {g}, {m}, {v}};
    c.outputs = {{anchor->getResult(0)}, {m1}, {v1}};
    c.ops = ops;
    c.exclusive.assign(stateful.begin(), stateful.end());
    return c;
  }
  return std::nullopt;
}

bool AdamMatcher::matchWith(Value pSide, double sign, ProductTerms &u) {
  hp.kind = Kind::adam;
  ops.insert(anchor);
  add(u);
  // Update numerator: the new first moment and at most one scalar (lr).
  for (Value x : u.num) {
    if (!m1 && isChainLeaf(x) && x.getDefiningOp<AddOp>())
      m1 = x;
    else if (!lrLeaf && getNumElements(x) == 1)
      lrLeaf = x;
    else
      return fail("unrecognized factor in the parameter update");
  }
  // Update denominator: sqrt(...) + eps, and 1 - b1^t when bias-corrected.
  Value d;
  for (Value x : u.den) {
    if (!d && isDenominatorLike(x))
      d = x;
    else if (!bc1 && isBiasCorrectionLike(x))
      bc1 = x;
    else
      return fail("unrecognized divisor in the parameter update");
  }
  if (lrLeaf) {
    auto type = cast<RankedTensorType>(lrLeaf.getType());
    if (!type.getElementType().isF32())
      return fail("expected an f32 learning rate, but got " + quoteType(type));
  }

  if (!matchDenominator(d) || !matchSecondMoment() || !matchFirstMoment() ||
      !resolveBiasCorrection(sign * u.coef))
    return false;

  // Weight decay: decoupled on the parameter side, else L2 on the gradient.
  if (!matchDecoupledDecay(pSide))
    return false;
  g = gEff;
  if (hp.weightDecay == 0.0) {
    if (auto l2 = gEff.getDefiningOp<AddOp>()) {
      for (auto [grad, decay] : {std::pair(l2.getLhs(), l2.getRhs()),
                                 std::pair(l2.getRhs(), l2.getLhs())}) {
        ProductTerms w;
        flattenProduct(decay, w);
        if (w.den.empty() && w.num.size() == 1 && w.num[0] == p) {
          hp.mode = AdamMode::adam;
          hp.weightDecay = userScalar(w.coef);
          g = grad;
          ops.insert(l2);
          add(w);
          break;
        }
      }
    }
  }
  if (!(hp.weightDecay >= 0.0) || std::isinf(hp.weightDecay))
    return fail(llvm::formatv("expected weight_decay >= 0, but got {0}",
                              formatNumber(hp.weightDecay)));
  if (hp.weightDecay == 0.0)
    hp.mode = AdamMode::adamw;

  // One f32 type for p, g, m, v and the results: tx.adam does not broadcast.
  for (auto [name, value] : {std::pair<StringRef, Value>("param", p),
                             {"grad", g},
                             {"exp_avg", m},
                             {"exp_avg_sq", v}})
    if (value.getType() != chainType)
      return fail(llvm::formatv("expected {0} of type {1}, but got {2}", name,
                                quoteType(chainType),
                                quoteType(value.getType())));
  if (!cast<RankedTensorType>(chainType).getElementType().isF32())
    return fail("expected f32 parameters and state, but got " +
                quoteType(chainType));
  hp.block = anchor->getBlock();
  return checkUses();
}

bool AdamMatcher::matchDenominator(Value d) {
  ops.insert(d.getDefiningOp());
  Value radicand;
  if (auto add = d.getDefiningOp<AddOp>()) {
    // sqrt(v^) + eps
    Value s = add.getLhs(), e = add.getRhs();
    if (getSplatConstant(s))
      std::swap(s, e);
    std::optional<double> eps = getSplatConstant(e);
    if (!eps)
      return fail("epsilon is not a constant");
    hp.epsilon = userScalar(*eps);
    hp.placement = EpsilonPlacement::outside_sqrt;
    if (!matchCorrectedSqrt(s))
      return false;
  } else if (isSqrtLike(d, &radicand)) {
    // sqrt(v^ + eps), or sqrt(v^) with no epsilon at all.
    auto add = radicand.getDefiningOp<AddOp>();
    std::optional<double> eps;
    Value x = radicand;
    if (add && (eps = getSplatConstant(add.getRhs())))
      x = add.getLhs();
    else if (add && (eps = getSplatConstant(add.getLhs())))
      x = add.getRhs();
    if (eps) {
      ops.insert(add);
      hp.placement = EpsilonPlacement::inside_sqrt;
    }
    hp.epsilon = userScalar(eps.value_or(0.0));
    if (!matchCorrectedV(x, /*allowCorrection=*/true))
      return false;
  }
  if (!(hp.epsilon >= 0.0) || std::isinf(hp.epsilon))
    return fail(llvm::formatv("expected epsilon >= 0, but got {0}",
                              formatNumber(hp.epsilon)));
  return true;
}

/// sqrt(v1 [/ bc2]), sqrt(v1) / sqrt(bc2) (PyTorch's bias_correction2_sqrt),
/// or sqrt(v1) times a constant (that square root folded).
bool AdamMatcher::matchCorrectedSqrt(Value s) {
  Value radicand;
  if (isSqrtLike(s, &radicand)) {
    ops.insert(s.getDefiningOp());
    return matchCorrectedV(radicand, /*allowCorrection=*/true);
  }
  ProductTerms q;
  flattenProduct(s, q, true, [&](Value x) { return containsChainLeaf(x); });
  Value bcRadicand;
  if (q.coef > 0.0 && q.num.size() == 1 && isSqrtLike(q.num[0], &radicand) &&
      q.den.size() <= 1 &&
      (q.den.empty() || (isSqrtLike(q.den[0], &bcRadicand) &&
                         isBiasCorrectionLike(bcRadicand)))) {
    add(q);
    ops.insert(q.num[0].getDefiningOp());
    if (bcRadicand) {
      ops.insert(q.den[0].getDefiningOp());
      bc2 = bcRadicand;
    }
    vScale *= q.coef * q.coef;
    return matchCorrectedV(radicand, /*allowCorrection=*/!bcRadicand);
  }
  return fail("expected sqrt of the second moment in the denominator");
}

/// v1, v1 / (1 - b2^t), or v1 times a constant.
bool AdamMatcher::matchCorrectedV(Value x, bool allowCorrection) {
  ProductTerms q;
  flattenProduct(x, q, true, [&](Value y) { return containsChainLeaf(y); });
  if (q.coef > 0.0 && q.num.size() == 1 && isChainLeaf(q.num[0]) &&
      q.num[0].getDefiningOp<AddOp>() &&
      (q.den.empty() || (allowCorrection && q.den.size() == 1 &&
                         isBiasCorrectionLike(q.den[0])))) {
    add(q);
    v1 = q.num[0];
    vScale *= q.coef;
    if (!q.den.empty())
      bc2 = q.den[0];
    return true;
  }
  return fail("expected the second moment, optionally divided by its bias "
              "correction, under the square root");
}

/// `sum = beta * state + (1 - beta) * input` for one moment. |read| is
/// tried on the two products of the sum in both orders; it returns the
/// state's coefficient when the order fits (and records state and input),
/// else nullopt. |expected| is the remark when neither order fits. beta is
/// the double behind the two f32 coefficients (userBeta).
bool AdamMatcher::matchMovingAverage(
    Value sum, StringRef moment, StringRef betaName, StringRef expected,
    double &beta,
    function_ref<std::optional<double>(ProductTerms &, ProductTerms &)> read) {
  ops.insert(sum.getDefiningOp());
  ProductTerms t[2];
  flattenSumOperands(sum, t[0], t[1], [&](Value x) { return isChainLeaf(x); });
  for (int i = 0; i < 2; ++i) {
    ProductTerms &input = t[i], &state = t[1 - i];
    std::optional<double> b = read(input, state);
    if (!b)
      continue;
    add(input);
    add(state);
    if (!(*b >= 0.0 && *b < 1.0))
      return fail(llvm::formatv("expected {0} in [0, 1), but got {1}", betaName,
                                formatNumber(*b)));
    std::optional<double> user = userBeta(*b, input.coef);
    if (!user)
      return fail(llvm::formatv("expected {0} coefficients {1} and 1 - {1}, "
                                "but got {2} and {3}",
                                moment, betaName, formatNumber(*b),
                                formatNumber(input.coef)));
    beta = *user;
    return true;
  }
  if (hasScalarLeaf(t[0]) || hasScalarLeaf(t[1]))
    return fail(betaName + " is not a constant");
  return fail(expected);
}

/// v1 = b2 * v + c2 * g' * g', with c2 = 1 - b2.
bool AdamMatcher::matchSecondMoment() {
  return matchMovingAverage(
      v1, "second-moment", "beta2",
      "second moment is not beta2 * v + (1 - beta2) * g * g", hp.beta2,
      [&](ProductTerms &sq, ProductTerms &lin) -> std::optional<double> {
        if (!sq.den.empty() || sq.num.size() != 2 || sq.num[0] != sq.num[1] ||
            !lin.den.empty() || lin.num.size() != 1 || lin.num[0] == sq.num[0])
          return std::nullopt;
        gEff = sq.num[0];
        v = lin.num[0];
        return lin.coef;
      });
}

/// m1 = b1 * m + c1 * g' (c1 = 1 - b1), or torch's lerp m + c1 * (g' - m).
bool AdamMatcher::matchFirstMoment() {
  return matchMovingAverage(
      m1, "first-moment", "beta1",
      "first moment is not beta1 * m + (1 - beta1) * g with the second "
      "moment's g",
      hp.beta1,
      [&](ProductTerms &gt, ProductTerms &mt) -> std::optional<double> {
        if (!gt.den.empty() || gt.num.size() != 1 || !mt.den.empty() ||
            mt.num.size() != 1 || mt.num[0] == gEff)
          return std::nullopt;
        m = mt.num[0];
        if (gt.num[0] == gEff)
          return mt.coef;
        auto diff = gt.num[0].getDefiningOp<SubOp>();
        if (diff && mt.coef == 1.0 && diff.getLhs() == gEff &&
            diff.getRhs() == m) {
          ops.insert(diff);
          return 1.0 - gt.coef;
        }
        return std::nullopt;
      });
}

/// bc = 1 - b^t with b equal to the moment's beta.
bool AdamMatcher::matchBiasCorrection(Value bc, double beta, StringRef name,
                                      ScalarKey &step) {
  auto sub = bc.getDefiningOp<SubOp>();
  auto pow = sub.getRhs().getDefiningOp<PowOp>();
  ops.insert(sub);
  ops.insert(pow);
  std::optional<double> base = getSplatConstant(pow.getLhs());
  if (!base)
    return fail(
        llvm::formatv("bias correction of {0} has a non-constant base", name));
  if (static_cast<float>(*base) != static_cast<float>(beta))
    return fail(llvm::formatv("expected bias correction 1 - {0}^t with {0} = "
                              "{1}, but got base {2}",
                              name, formatNumber(beta), formatNumber(*base)));
  Value t = pow.getRhs();
  auto type = cast<RankedTensorType>(t.getType());
  if (type.getNumElements() != 1 ||
      !(type.getElementType().isF32() ||
        type.getElementType().isSignlessInteger()))
    return fail("expected a one-element f32 or integer step, but got " +
                quoteType(type));
  step = ScalarKey::of(t);
  return true;
}

/// Sets lr, step and biasCorrection from the matched bias corrections and
/// the constant factors left on the update (|scale|) and on v1 (vScale):
/// `1 - b^t` ops give the step, folded constants go to
/// resolveFoldedFactors.
bool AdamMatcher::resolveBiasCorrection(double scale) {
  if (bc1 || bc2) {
    if (!bc1 || !bc2)
      return fail("expected bias correction of both moments or of neither");
    ScalarKey step2;
    if (!matchBiasCorrection(bc1, hp.beta1, "beta1", hp.step) ||
        !matchBiasCorrection(bc2, hp.beta2, "beta2", step2))
      return false;
    if (!(hp.step == step2))
      return fail("the two bias corrections use different steps");
    if (vScale != 1.0)
      return fail(llvm::formatv("expected the second moment to be divided by "
                                "its bias correction alone, but got an extra "
                                "factor {0}",
                                formatNumber(vScale)));
    hp.biasCorrection = true;
    // `1 - Pow(beta, t)` as graph ops: f32 arithmetic on the f32 beta.
    hp.f32BiasCorrection = true;
  }
  return resolveFoldedFactors(hp, lrLeaf, scale, vScale, reason);
}

/// lr * wd (leaves {lr}, or none with a constant lr) gives wd.
bool AdamMatcher::decayCoefficient(ArrayRef<Value> leaves, double coef) {
  double wd;
  if (leaves.size() == 1 && hp.lr.value && leaves[0] == hp.lr.value)
    wd = coef;
  else if (leaves.empty() && hp.lr.constant && *hp.lr.constant != 0.0)
    wd = coef / *hp.lr.constant;
  else
    return false;
  if (!(wd > 0.0))
    return false;
  hp.weightDecay = userScalar(wd);
  return true;
}

/// P = p * (1 - lr*wd), p - lr*wd*p, or their forms with lr folded in. Any
/// other P is the parameter itself: the update is then exactly Adam on P.
bool AdamMatcher::matchDecoupledDecay(Value pSide) {
  p = pSide;
  if (auto sub = pSide.getDefiningOp<SubOp>()) {
    ProductTerms x;
    flattenProduct(sub.getRhs(), x);
    SmallVector<Value> rest;
    llvm::copy_if(x.num, std::back_inserter(rest),
                  [&](Value y) { return y != sub.getLhs(); });
    if (x.den.empty() && rest.size() + 1 == x.num.size() &&
        decayCoefficient(rest, x.coef)) {
      p = sub.getLhs();
      ops.insert(sub);
      add(x);
      return true;
    }
  }
  ProductTerms f;
  flattenProduct(pSide, f);
  if (f.ops.empty() || !f.den.empty())
    return true;
  SmallVector<Value> params, scalars;
  for (Value y : f.num)
    (isChainLeaf(y) ? params : scalars).push_back(y);
  if (params.size() != 1)
    return true;
  auto dec = scalars.size() == 1 ? scalars[0].getDefiningOp<SubOp>() : SubOp();
  if (scalars.empty()) {
    // p * c with c = 1 - lr*wd folded by the exporter (constant lr only).
    if (!decayCoefficient({}, 1.0 - f.coef))
      return true;
  } else if (dec && f.coef == 1.0 && isSplatConstant(dec.getLhs(), 1.0)) {
    ProductTerms w;
    flattenProduct(dec.getRhs(), w);
    if (!w.den.empty() || !decayCoefficient(w.num, w.coef))
      return true;
    ops.insert(dec);
    add(w);
  } else {
    return true;
  }
  p = params[0];
  add(f);
  return true;
}

/// Intermediates that depend on p, g, m or v must stay inside the chain
/// (besides the three results): fusing would otherwise compute them twice.
/// Scalar parts (bias corrections, lr * wd) may be shared.
bool AdamMatcher::checkUses() {
  return checkContained({p, g, m, v}, {anchor, m1.getDefiningOp(), v1.getDefiningOp()});
}

} // namespace

std::optional<Candidate> optimizer::matchAdamChain(Operation *anchor,
                                                   std::string &reason) {
  AdamMatcher matcher(anchor);
  std::optional<Candidate> c = matcher.match();
  reason = std::move(matcher.reason);
  return c;
}
