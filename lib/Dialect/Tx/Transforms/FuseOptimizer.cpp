//===- FuseOptimizer.cpp - fuse Adam update chains into tx.adam -----------===//
//
// SPDX-License-Identifier: Apache-2.0
// Matches per-parameter Adam/AdamW update chains and merges them, together
// with existing tx.adam ops, into one multi-tensor tx.adam per group.
//
//===----------------------------------------------------------------------===//

#include "txopt/Dialect/Tx/IR/TxOps.h"
#include "txopt/Dialect/Tx/Transforms/Passes.h"
#include "txopt/Dialect/Tx/Transforms/PatternUtils.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

namespace mlir::txopt::tx {
#define GEN_PASS_DEF_FUSEOPTIMIZERPASS
#include "txopt/Dialect/Tx/Transforms/Passes.h.inc"
} // namespace mlir::txopt::tx

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::tx;

namespace {

//===----------------------------------------------------------------------===//
// Keys: what must agree for two updates to share one tx.adam
//===----------------------------------------------------------------------===//

int64_t numElements(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return type && type.hasStaticShape() ? type.getNumElements() : -1;
}

/// lr or step: an SSA value, or the constant it is. Constants compare by
/// value (two tx.constant ops of 1e-3 are one learning rate).
struct ScalarKey {
  Value value;
  std::optional<double> constant;

  static ScalarKey of(Value v) {
    if (std::optional<double> c = getSplatConstant(v))
      return {Value(), c};
    return {v, std::nullopt};
  }
  bool operator==(const ScalarKey &other) const {
    if (constant || other.constant)
      return constant && other.constant &&
             static_cast<float>(*constant) ==
                 static_cast<float>(*other.constant);
    return value == other.value;
  }
};

struct HyperParams {
  AdamMode mode = AdamMode::adamw;
  float beta1 = 0, beta2 = 0, epsilon = 0, weightDecay = 0;
  EpsilonPlacement placement = EpsilonPlacement::outside_sqrt;
  bool biasCorrection = false;
  ScalarKey lr, step;
  Block *block = nullptr;

  bool operator==(const HyperParams &o) const {
    return mode == o.mode && beta1 == o.beta1 && beta2 == o.beta2 &&
           epsilon == o.epsilon && weightDecay == o.weightDecay &&
           placement == o.placement && biasCorrection == o.biasCorrection &&
           lr == o.lr && (!biasCorrection || step == o.step) &&
           block == o.block;
  }
};

/// One unit of fusion: a matched chain (one parameter) or an existing tx.adam.
struct Candidate {
  Operation *anchor = nullptr;
  bool existing = false;
  HyperParams hp;
  SmallVector<Value> params, grads, expAvg, expAvgSq;
  SmallVector<Value> newParams, newExpAvg, newExpAvgSq;
  llvm::SetVector<Operation *> ops; // dead once the results are replaced
  /// The ops that depend on p, g, m or v: no two chains may share one.
  /// Scalar ops (bias corrections, lr * wd) may be shared, e.g. after CSE.
  SmallVector<Operation *> exclusive;

  SmallVector<Value> operands() const {
    SmallVector<Value> all;
    for (const SmallVector<Value> *list : {&params, &grads, &expAvg, &expAvgSq})
      all.append(list->begin(), list->end());
    for (const ScalarKey *key : {&hp.lr, &hp.step})
      if (key->value)
        all.push_back(key->value);
    return all;
  }
  SmallVector<Value> results() const {
    SmallVector<Value> all(newParams);
    all.append(newExpAvg.begin(), newExpAvg.end());
    all.append(newExpAvgSq.begin(), newExpAvgSq.end());
    return all;
  }
};

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

/// |c| is `1 - beta` up to the f32 rounding of either constant.
bool isOneMinus(double c, double beta) {
  return std::fabs(c - (1.0 - beta)) <= 1e-7 + 1e-5 * std::fabs(1.0 - beta);
}

/// A hyper-parameter for a remark: 7 significant digits, so the f32 0.9
/// reads `0.9`.
std::string num(double value) {
  std::string text;
  llvm::raw_string_ostream(text) << llvm::format("%.7g", value);
  return text;
}

std::string typeString(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "'" << type << "'";
  return text;
}

//===----------------------------------------------------------------------===//
// ChainMatcher
//===----------------------------------------------------------------------===//

/// Matches one per-parameter Adam/AdamW update anchored on `p1 = P - U`.
/// Legal because tx.adam computes the same p1, m1 and v1 (up to f32
/// reassociation) once the checks below hold: constant betas with
/// c = 1 - beta, one step for both bias corrections, eps >= 0, wd >= 0, one
/// f32 type without broadcasting, and no other user of an intermediate.
class ChainMatcher {
public:
  explicit ChainMatcher(Operation *anchor)
      : anchor(anchor), chainType(anchor->getResult(0).getType()) {}

  /// The candidate, or nullopt. After a failure, `reason` is empty when the
  /// anchor does not look like an Adam update at all (no remark).
  std::optional<Candidate> match();
  std::string reason;

private:
  bool fail(const Twine &message) {
    reason = message.str();
    return false;
  }
  bool isChainLeaf(Value v) const { return v.getType() == chainType; }
  /// Descend into a scalar product only if it holds part of the chain (a
  /// bias correction or a parameter-shaped value); otherwise it is lr.
  bool containsChainLeaf(Value v, unsigned depth = 8) const;
  bool isDenominatorLike(Value v) const;

  bool matchWith(Value pSide, double sign, ProductTerms &u);
  bool matchDenominator(Value d);
  bool matchCorrectedSqrt(Value s);
  bool matchCorrectedV(Value x, bool allowCorrection);
  bool matchSecondMoment();
  bool matchFirstMoment();
  bool matchBiasCorrection(Value bc, double beta, StringRef name,
                           ScalarKey &step);
  bool matchDecoupledDecay(Value pSide);
  bool decayCoefficient(ArrayRef<Value> leaves, double coef);
  bool checkUses();
  void add(ProductTerms &m) { ops.insert(m.ops.begin(), m.ops.end()); }

  Operation *anchor;
  Type chainType;
  llvm::SetVector<Operation *> ops;
  llvm::SmallPtrSet<Operation *, 16> stateful; // set by checkUses
  Value p, g, gEff, m, v, m1, v1, lrLeaf, bc1, bc2;
  HyperParams hp;
};

bool ChainMatcher::containsChainLeaf(Value v, unsigned depth) const {
  if (isChainLeaf(v) || isBiasCorrectionLike(v))
    return true;
  Operation *op = v.getDefiningOp();
  if (!op || depth == 0 || !isa<MulOp, DivOp, NegOp, ReciprocalOp>(op))
    return false;
  return llvm::any_of(op->getOperands(),
                      [&](Value x) { return containsChainLeaf(x, depth - 1); });
}

bool ChainMatcher::isDenominatorLike(Value v) const {
  if (!isChainLeaf(v))
    return false;
  if (isSqrtLike(v))
    return true;
  auto add = v.getDefiningOp<AddOp>();
  return add && (hasSqrtFactor(add.getLhs()) || hasSqrtFactor(add.getRhs()));
}

std::optional<Candidate> ChainMatcher::match() {
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
    c.params = {p};
    c.grads = {g};
    c.expAvg = {m};
    c.expAvgSq = {v};
    c.newParams = {anchor->getResult(0)};
    c.newExpAvg = {m1};
    c.newExpAvgSq = {v1};
    c.ops = ops;
    c.exclusive.assign(stateful.begin(), stateful.end());
    return c;
  }
  return std::nullopt;
}

bool ChainMatcher::matchWith(Value pSide, double sign, ProductTerms &u) {
  ops.insert(anchor);
  add(u);
  // Update numerator: the new first moment and at most one scalar (lr).
  for (Value x : u.num) {
    if (!m1 && isChainLeaf(x) && x.getDefiningOp<AddOp>())
      m1 = x;
    else if (!lrLeaf && numElements(x) == 1)
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
  double scale = sign * u.coef;
  if (lrLeaf) {
    if (scale != 1.0)
      return fail(llvm::formatv("expected the update to be scaled by lr "
                                "alone, but got an extra factor {0}",
                                num(scale)));
    auto type = cast<RankedTensorType>(lrLeaf.getType());
    if (!type.getElementType().isF32())
      return fail("expected an f32 learning rate, but got " + typeString(type));
    hp.lr = {lrLeaf, std::nullopt};
  } else {
    hp.lr = {Value(), scale};
  }

  if (!matchDenominator(d) || !matchSecondMoment() || !matchFirstMoment())
    return false;

  if (static_cast<bool>(bc1) != static_cast<bool>(bc2))
    return fail("expected bias correction of both moments or of neither");
  hp.biasCorrection = static_cast<bool>(bc1);
  if (hp.biasCorrection) {
    ScalarKey step2;
    if (!matchBiasCorrection(bc1, hp.beta1, "beta1", hp.step) ||
        !matchBiasCorrection(bc2, hp.beta2, "beta2", step2))
      return false;
    if (!(hp.step == step2))
      return fail("the two bias corrections use different steps");
  }

  // Weight decay: decoupled on the parameter side, else L2 on the gradient.
  if (!matchDecoupledDecay(pSide))
    return false;
  g = gEff;
  if (hp.weightDecay == 0.0f) {
    if (auto l2 = gEff.getDefiningOp<AddOp>()) {
      for (auto [grad, decay] : {std::pair(l2.getLhs(), l2.getRhs()),
                                 std::pair(l2.getRhs(), l2.getLhs())}) {
        ProductTerms w;
        flattenProduct(decay, w);
        if (w.den.empty() && w.num.size() == 1 && w.num[0] == p) {
          hp.mode = AdamMode::adam;
          hp.weightDecay = static_cast<float>(w.coef);
          g = grad;
          ops.insert(l2);
          add(w);
          break;
        }
      }
    }
  }
  if (!(hp.weightDecay >= 0.0f) || std::isinf(hp.weightDecay))
    return fail(llvm::formatv("expected weight_decay >= 0, but got {0}",
                              num(hp.weightDecay)));
  if (hp.weightDecay == 0.0f)
    hp.mode = AdamMode::adamw;

  // One f32 type for p, g, m, v and the results: tx.adam does not broadcast.
  for (auto [name, value] : {std::pair<StringRef, Value>("param", p),
                             {"grad", g},
                             {"exp_avg", m},
                             {"exp_avg_sq", v}})
    if (value.getType() != chainType)
      return fail(llvm::formatv("expected {0} of type {1}, but got {2}", name,
                                typeString(chainType),
                                typeString(value.getType())));
  if (!cast<RankedTensorType>(chainType).getElementType().isF32())
    return fail("expected f32 parameters and state, but got " +
                typeString(chainType));
  hp.block = anchor->getBlock();
  return checkUses();
}

bool ChainMatcher::matchDenominator(Value d) {
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
    hp.epsilon = static_cast<float>(*eps);
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
    hp.epsilon = static_cast<float>(eps.value_or(0.0));
    if (!matchCorrectedV(x, /*allowCorrection=*/true))
      return false;
  }
  if (!(hp.epsilon >= 0.0f) || std::isinf(hp.epsilon))
    return fail(
        llvm::formatv("expected epsilon >= 0, but got {0}", num(hp.epsilon)));
  return true;
}

/// sqrt(v1 [/ bc2]) or sqrt(v1) / sqrt(bc2) (PyTorch's bias_correction2_sqrt).
bool ChainMatcher::matchCorrectedSqrt(Value s) {
  Value radicand;
  if (isSqrtLike(s, &radicand)) {
    ops.insert(s.getDefiningOp());
    return matchCorrectedV(radicand, /*allowCorrection=*/true);
  }
  ProductTerms q;
  flattenProduct(s, q, true, [&](Value x) { return containsChainLeaf(x); });
  Value bcRadicand;
  if (q.coef == 1.0 && q.num.size() == 1 && isSqrtLike(q.num[0], &radicand) &&
      q.den.size() <= 1 &&
      (q.den.empty() || (isSqrtLike(q.den[0], &bcRadicand) &&
                         isBiasCorrectionLike(bcRadicand)))) {
    add(q);
    ops.insert(q.num[0].getDefiningOp());
    if (bcRadicand) {
      ops.insert(q.den[0].getDefiningOp());
      bc2 = bcRadicand;
    }
    return matchCorrectedV(radicand, /*allowCorrection=*/!bcRadicand);
  }
  return fail("expected sqrt of the second moment in the denominator");
}

/// v1, or v1 / (1 - b2^t).
bool ChainMatcher::matchCorrectedV(Value x, bool allowCorrection) {
  ProductTerms q;
  flattenProduct(x, q, true, [&](Value y) { return containsChainLeaf(y); });
  if (q.coef == 1.0 && q.num.size() == 1 && isChainLeaf(q.num[0]) &&
      q.num[0].getDefiningOp<AddOp>() &&
      (q.den.empty() || (allowCorrection && q.den.size() == 1 &&
                         isBiasCorrectionLike(q.den[0])))) {
    add(q);
    v1 = q.num[0];
    if (!q.den.empty())
      bc2 = q.den[0];
    return true;
  }
  return fail("expected the second moment, optionally divided by its bias "
              "correction, under the square root");
}

/// True when a term holds a non-constant scalar factor (a beta passed in).
static bool hasScalarLeaf(const ProductTerms &t) {
  return llvm::any_of(t.num, [](Value x) { return numElements(x) == 1; });
}

/// v1 = b2 * v + c2 * g' * g', with c2 = 1 - b2.
bool ChainMatcher::matchSecondMoment() {
  auto sum = v1.getDefiningOp<AddOp>();
  ops.insert(sum);
  auto leafOnly = [](Value) { return false; };
  ProductTerms t[2];
  flattenProduct(sum.getLhs(), t[0], true, leafOnly);
  flattenProduct(sum.getRhs(), t[1], true, leafOnly);
  for (int i = 0; i < 2; ++i) {
    ProductTerms &sq = t[i], &lin = t[1 - i];
    if (sq.den.empty() && sq.num.size() == 2 && sq.num[0] == sq.num[1] &&
        lin.den.empty() && lin.num.size() == 1 && lin.num[0] != sq.num[0]) {
      add(sq);
      add(lin);
      gEff = sq.num[0];
      v = lin.num[0];
      hp.beta2 = static_cast<float>(lin.coef);
      if (!(hp.beta2 >= 0.0f && hp.beta2 < 1.0f))
        return fail(llvm::formatv("expected beta2 in [0, 1), but got {0}",
                                  num(hp.beta2)));
      if (!isOneMinus(sq.coef, lin.coef))
        return fail(llvm::formatv("expected second-moment coefficients beta2 "
                                  "and 1 - beta2, but got {0} and {1}",
                                  num(lin.coef), num(sq.coef)));
      return true;
    }
  }
  if (hasScalarLeaf(t[0]) || hasScalarLeaf(t[1]))
    return fail("beta2 is not a constant");
  return fail("second moment is not beta2 * v + (1 - beta2) * g * g");
}

/// m1 = b1 * m + c1 * g' (c1 = 1 - b1), or torch's lerp m + c1 * (g' - m).
bool ChainMatcher::matchFirstMoment() {
  auto sum = m1.getDefiningOp<AddOp>();
  ops.insert(sum);
  auto leafOnly = [](Value) { return false; };
  ProductTerms t[2];
  flattenProduct(sum.getLhs(), t[0], true, leafOnly);
  flattenProduct(sum.getRhs(), t[1], true, leafOnly);
  for (int i = 0; i < 2; ++i) {
    ProductTerms &gt = t[i], &mt = t[1 - i];
    if (!gt.den.empty() || gt.num.size() != 1 || !mt.den.empty() ||
        mt.num.size() != 1 || mt.num[0] == gEff)
      continue;
    double beta1, c1 = gt.coef;
    if (gt.num[0] == gEff) {
      beta1 = mt.coef;
    } else if (auto diff = gt.num[0].getDefiningOp<SubOp>();
               diff && mt.coef == 1.0 && diff.getLhs() == gEff &&
               diff.getRhs() == mt.num[0]) {
      ops.insert(diff);
      beta1 = 1.0 - c1;
    } else {
      continue;
    }
    add(gt);
    add(mt);
    m = mt.num[0];
    hp.beta1 = static_cast<float>(beta1);
    if (!(hp.beta1 >= 0.0f && hp.beta1 < 1.0f))
      return fail(llvm::formatv("expected beta1 in [0, 1), but got {0}",
                                num(hp.beta1)));
    if (!isOneMinus(c1, beta1))
      return fail(llvm::formatv("expected first-moment coefficients beta1 "
                                "and 1 - beta1, but got {0} and {1}",
                                num(beta1), num(c1)));
    return true;
  }
  if (hasScalarLeaf(t[0]) || hasScalarLeaf(t[1]))
    return fail("beta1 is not a constant");
  return fail("first moment is not beta1 * m + (1 - beta1) * g with the "
              "second moment's g");
}

/// bc = 1 - b^t with b equal to the moment's beta.
bool ChainMatcher::matchBiasCorrection(Value bc, double beta, StringRef name,
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
                              name, num(beta), num(*base)));
  Value t = pow.getRhs();
  auto type = cast<RankedTensorType>(t.getType());
  if (type.getNumElements() != 1 ||
      !(type.getElementType().isF32() ||
        type.getElementType().isSignlessInteger()))
    return fail("expected a one-element f32 or integer step, but got " +
                typeString(type));
  step = ScalarKey::of(t);
  return true;
}

/// lr * wd (leaves {lr}, or none with a constant lr) gives wd.
bool ChainMatcher::decayCoefficient(ArrayRef<Value> leaves, double coef) {
  double wd;
  if (leaves.size() == 1 && hp.lr.value && leaves[0] == hp.lr.value)
    wd = coef;
  else if (leaves.empty() && hp.lr.constant && *hp.lr.constant != 0.0)
    wd = coef / *hp.lr.constant;
  else
    return false;
  if (!(wd > 0.0))
    return false;
  hp.weightDecay = static_cast<float>(wd);
  return true;
}

/// P = p * (1 - lr*wd), p - lr*wd*p, or their forms with lr folded in. Any
/// other P is the parameter itself: the update is then exactly Adam on P.
bool ChainMatcher::matchDecoupledDecay(Value pSide) {
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
bool ChainMatcher::checkUses() {
  Block *block = anchor->getBlock();
  for (Operation *op : ops)
    if (op->getBlock() != block)
      return fail("update chain spans several blocks");
  SmallVector<Operation *> sorted(ops.begin(), ops.end());
  llvm::sort(sorted,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  DenseSet<Value> state = {p, g, m, v};
  stateful.clear();
  for (Operation *op : sorted) {
    bool depends = llvm::any_of(op->getOperands(), [&](Value x) {
      return state.contains(x) ||
             (x.getDefiningOp() && stateful.contains(x.getDefiningOp()));
    });
    if (depends)
      stateful.insert(op);
  }
  Operation *outputs[] = {anchor, m1.getDefiningOp(), v1.getDefiningOp()};
  for (Operation *op : sorted) {
    if (!stateful.contains(op) || llvm::is_contained(outputs, op))
      continue;
    for (Operation *user : op->getUsers())
      if (!ops.contains(user))
        return fail(llvm::formatv("intermediate '{0}' has a user outside the "
                                  "update chain",
                                  op->getName()));
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Grouping and rewriting
//===----------------------------------------------------------------------===//

struct Group {
  HyperParams hp;
  SmallVector<Candidate *> members;
  DenseSet<Value> operands, results;
};

Operation *later(Operation *a, Operation *b) {
  if (!a || !b)
    return a ? a : b;
  return a->isBeforeInBlock(b) ? b : a;
}

Operation *earlier(Operation *a, Operation *b) {
  if (!a || !b)
    return a ? a : b;
  return a->isBeforeInBlock(b) ? a : b;
}

/// Where an op taking |operands| and replacing |results| may go in |block|:
/// after `lastDef` (null: only block arguments) and before `firstUse` (null:
/// no users). Users in |internal| (ops erased with the chains) do not count.
struct Placement {
  Operation *lastDef = nullptr, *firstUse = nullptr;

  Placement(Block *block, ArrayRef<Value> operands, ArrayRef<Value> results,
            function_ref<bool(Operation *)> internal) {
    for (Value x : operands)
      if (Operation *def = x.getDefiningOp())
        lastDef = later(lastDef, block->findAncestorOpInBlock(*def));
    for (Value x : results)
      for (Operation *user : x.getUsers())
        if (!internal(user))
          firstUse = earlier(firstUse, block->findAncestorOpInBlock(*user));
  }
  bool feasible() const {
    return !lastDef || !firstUse || lastDef->isBeforeInBlock(firstUse);
  }
};

/// Adds |c| to |group| when the merged op can still be placed: no member
/// consumes another member's result (a cycle) and every operand is defined
/// before the first user of any result.
bool tryJoin(Group &group, Candidate &c) {
  SmallVector<Value> operands = c.operands(), results = c.results();
  if (llvm::any_of(operands,
                   [&](Value x) {
                     return group.results.contains(x) ||
                            llvm::is_contained(results, x);
                   }) ||
      llvm::any_of(results,
                   [&](Value x) { return group.operands.contains(x); }))
    return false;
  SmallVector<Value> allOperands(operands), allResults(results);
  llvm::append_range(allOperands, group.operands);
  llvm::append_range(allResults, group.results);
  auto internal = [&](Operation *op) {
    return c.ops.contains(op) || llvm::any_of(group.members, [&](Candidate *m) {
             return m->ops.contains(op);
           });
  };
  if (!Placement(c.hp.block, allOperands, allResults, internal).feasible())
    return false;
  group.operands.insert(operands.begin(), operands.end());
  group.results.insert(results.begin(), results.end());
  group.members.push_back(&c);
  return true;
}

/// A 0-d f32 tensor holding |key| (a new tx.constant, or the value reshaped
/// and cast as needed).
Value materializeScalar(OpBuilder &b, Location loc, const ScalarKey &key) {
  auto f32Scalar = RankedTensorType::get({}, b.getF32Type());
  if (key.constant)
    return ConstantOp::create(
        b, loc,
        cast<ElementsAttr>(DenseElementsAttr::get(
            f32Scalar, ArrayRef<float>{static_cast<float>(*key.constant)})));
  Value x = key.value;
  auto type = cast<RankedTensorType>(x.getType());
  if (type.getRank() != 0)
    x = ReshapeOp::create(b, loc,
                          RankedTensorType::get({}, type.getElementType()), x);
  if (!type.getElementType().isF32())
    x = CastOp::create(b, loc, f32Scalar, x);
  return x;
}

struct FuseOptimizerPass : tx::impl::FuseOptimizerPassBase<FuseOptimizerPass> {
  using Base::Base;
  void runOnOperation() override;
  void rewriteGroup(Group &group, DenseMap<Value, Value> &replaced);
};

void FuseOptimizerPass::runOnOperation() {
  std::vector<Candidate> candidates;
  llvm::SmallPtrSet<Operation *, 32> claimed;
  getOperation().walk([&](Operation *op) {
    if (auto adam = dyn_cast<AdamOp>(op)) {
      Candidate c;
      c.anchor = op;
      c.existing = true;
      c.params = llvm::to_vector(adam.getParams());
      c.grads = llvm::to_vector(adam.getGrads());
      c.expAvg = llvm::to_vector(adam.getExpAvg());
      c.expAvgSq = llvm::to_vector(adam.getExpAvgSq());
      c.newParams = llvm::to_vector_of<Value>(adam.getNewParams());
      c.newExpAvg = llvm::to_vector_of<Value>(adam.getNewExpAvg());
      c.newExpAvgSq = llvm::to_vector_of<Value>(adam.getNewExpAvgSq());
      c.ops.insert(op);
      HyperParams &hp = c.hp;
      hp.weightDecay = adam.getWeightDecay().convertToFloat();
      hp.mode = hp.weightDecay == 0.0f ? AdamMode::adamw : adam.getMode();
      hp.beta1 = adam.getBeta1().convertToFloat();
      hp.beta2 = adam.getBeta2().convertToFloat();
      hp.epsilon = adam.getEpsilon().convertToFloat();
      hp.placement = adam.getEpsilonPlacement();
      hp.biasCorrection = adam.getBiasCorrection();
      hp.lr = ScalarKey::of(adam.getLr());
      if (adam.getStep())
        hp.step = ScalarKey::of(adam.getStep());
      hp.block = op->getBlock();
      candidates.push_back(std::move(c));
      return;
    }
    if (!isa<SubOp, AddOp>(op))
      return;
    ChainMatcher matcher(op);
    std::optional<Candidate> c = matcher.match();
    if (c && llvm::any_of(c->exclusive,
                          [&](Operation *x) { return claimed.contains(x); })) {
      c.reset();
      matcher.reason = "update chain overlaps another update chain";
    }
    if (!c) {
      if (explain && !matcher.reason.empty())
        reportNearMiss(op, "adam", matcher.reason);
      return;
    }
    claimed.insert(c->exclusive.begin(), c->exclusive.end());
    candidates.push_back(std::move(*c));
  });

  // Candidates are in program order; each joins the first compatible group.
  // A chain that fits no group on its own (a result used before one of its
  // operands is defined) is left alone.
  std::vector<Group> groups;
  for (Candidate &c : candidates) {
    if (llvm::any_of(groups, [&](Group &group) {
          return group.hp == c.hp && tryJoin(group, c);
        }))
      continue;
    Group group;
    group.hp = c.hp;
    if (tryJoin(group, c)) {
      groups.push_back(std::move(group));
    } else if (explain) {
      reportNearMiss(c.anchor, "adam",
                     "a result is used before all operands are defined");
    }
  }
  DenseMap<Value, Value> replaced;
  for (Group &group : groups)
    if (group.members.size() > 1 || !group.members.front()->existing)
      rewriteGroup(group, replaced);
}

void FuseOptimizerPass::rewriteGroup(Group &group,
                                     DenseMap<Value, Value> &replaced) {
  // Earlier groups may have replaced some of this group's operands (with
  // results of their tx.adam, which are never replaced again).
  auto current = [&](Value x) {
    return replaced.lookup(x) ? replaced.lookup(x) : x;
  };
  HyperParams hp = group.hp;
  if (hp.lr.value)
    hp.lr.value = current(hp.lr.value);
  if (hp.step.value)
    hp.step.value = current(hp.step.value);
  SmallVector<Location> locs;
  SmallVector<Value> params, grads, expAvg, expAvgSq;
  SmallVector<Value> newParams, newExpAvg, newExpAvgSq;
  for (Candidate *c : group.members) {
    locs.push_back(c->anchor->getLoc());
    llvm::append_range(params, llvm::map_range(c->params, current));
    llvm::append_range(grads, llvm::map_range(c->grads, current));
    llvm::append_range(expAvg, llvm::map_range(c->expAvg, current));
    llvm::append_range(expAvgSq, llvm::map_range(c->expAvgSq, current));
    llvm::append_range(newParams, c->newParams);
    llvm::append_range(newExpAvg, c->newExpAvg);
    llvm::append_range(newExpAvgSq, c->newExpAvgSq);
  }
  SmallVector<Value> results(newParams); // in tx.adam's result order
  llvm::append_range(results, newExpAvg);
  llvm::append_range(results, newExpAvgSq);

  // Right after the last operand definition: earlier groups' rewrites only
  // ever move definitions up, so a placement feasible at grouping time
  // stays feasible.
  SmallVector<Value> operands(params);
  llvm::append_range(operands, grads);
  llvm::append_range(operands, expAvg);
  llvm::append_range(operands, expAvgSq);
  for (Value x : {hp.lr.value, hp.step.value})
    if (x)
      operands.push_back(x);
  Block *block = hp.block;
  Placement placement(block, operands, results, [&](Operation *op) {
    return llvm::any_of(group.members,
                        [&](Candidate *m) { return m->ops.contains(op); });
  });
  if (!placement.feasible())
    return;
  OpBuilder b(&getContext());
  if (placement.lastDef)
    b.setInsertionPointAfter(placement.lastDef);
  else
    b.setInsertionPointToStart(block);

  Location loc = b.getFusedLoc(locs);
  Value lr = materializeScalar(b, loc, hp.lr);
  Value step = hp.biasCorrection ? materializeScalar(b, loc, hp.step) : Value();
  SmallVector<Type> types = llvm::to_vector(ValueRange(params).getTypes());
  auto fused = AdamOp::create(
      b, loc, types, types, types, params, grads, expAvg, expAvgSq, lr, step,
      hp.mode, APFloat(hp.beta1), APFloat(hp.beta2), APFloat(hp.epsilon),
      hp.placement, APFloat(hp.weightDecay), hp.biasCorrection);

  // Replace, then erase what died: chain ops in reverse order, then the
  // constants they alone used.
  for (auto [from, to] : llvm::zip_equal(results, fused.getResults())) {
    from.replaceAllUsesWith(to);
    replaced[from] = to;
  }
  llvm::SetVector<Operation *> dead, constants;
  for (Candidate *c : group.members)
    dead.insert(c->ops.begin(), c->ops.end());
  SmallVector<Operation *> sorted(dead.begin(), dead.end());
  llvm::sort(sorted,
             [](Operation *x, Operation *y) { return y->isBeforeInBlock(x); });
  for (Operation *op : sorted) {
    if (!op->use_empty())
      continue;
    for (Value x : op->getOperands())
      if (Operation *def = x.getDefiningOp(); def && isa<ConstantOp>(def))
        constants.insert(def);
    op->erase();
  }
  for (Operation *op : constants)
    if (op->use_empty())
      op->erase();
  numOps++;
  numParams += params.size();
}

} // namespace
