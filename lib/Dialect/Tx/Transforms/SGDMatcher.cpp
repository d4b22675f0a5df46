//===- SGDMatcher.cpp - per-parameter SGD chain matcher -------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// Reads one torch.optim.SGD update (plain, momentum, nesterov, L2 decay)
// written out in primitive ops into a tx-fuse-optimizer candidate.
//
//===----------------------------------------------------------------------===//

#include "OptimizerMatchers.h"

#include "txopt/Dialect/Tx/Transforms/PatternUtils.h"

#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::tx;
using namespace mlir::txopt::tx::optimizer;

namespace {

/// State that enters the step from outside: a function argument or a
/// parameter read.
bool isStepInput(Value v) {
  if (auto arg = dyn_cast<BlockArgument>(v))
    return arg.getOwner()->isEntryBlock();
  return static_cast<bool>(v.getDefiningOp<LoadParameterOp>());
}

/// State that leaves the step: returned.
bool isStepOutput(Value v) {
  return llvm::any_of(v.getUsers(), [](Operation *user) {
    return user->hasTrait<OpTrait::ReturnLike>();
  });
}

/// `x = grad + wd * p` (torch's `grad.add(param, alpha=weight_decay)`).
struct Decay {
  Value grad;
  std::optional<double> wd; // nullopt: wd is not a constant
  AddOp add;
  ProductTerms terms;
};

/// Matches one torch.optim.SGD update of a parameter anchored on
/// `p1 = p - lr * d`:
///   plain     d = g'
///   momentum  d = b1,            b1 = momentum * b + (1 - dampening) * g'
///   nesterov  d = g' + momentum * b1
/// with g' = g or g + wd * p. Legal because tx.sgd computes the same p1
/// and b1, each line rounded as written, once momentum, dampening and wd
/// are constants in range and no intermediate has another user.
class SGDMatcher : public ChainMatcher {
public:
  using ChainMatcher::ChainMatcher;

  std::optional<Candidate> match();

private:
  /// Look into a one-element product only when it is of the parameter's
  /// type (a one-element parameter); otherwise it is lr or a constant.
  auto inChain() const {
    return [this](Value x) { return isChainLeaf(x); };
  }
  std::optional<Decay> readDecay(Value x) const;
  Value direction(const ProductTerms &u) const;
  bool matchWith(ProductTerms &u, Value d, double scale);
  bool matchDirection(Value d);
  bool matchBufferUpdate(Value sum, Value knownGrad);
  bool matchGradient(Value x);
  bool checkUses();

  Value p, g, b, b1, lrLeaf;
};

std::optional<Candidate> SGDMatcher::match() {
  // Gate: the parameter comes in (an argument or a parameter read), the
  // new one is returned, and it is a scaled descent step `p - s * d`. A
  // subtraction in a forward graph (a residual, a centring) fails one of
  // these and gets no remark.
  if (!isStepOutput(anchor->getResult(0)))
    return std::nullopt;
  Value lhs = anchor->getOperand(0), rhs = anchor->getOperand(1);
  struct Try {
    Value pSide, uSide;
    double sign;
  };
  SmallVector<Try, 2> tries;
  if (isa<SubOp>(anchor))
    tries.push_back({lhs, rhs, -1.0});
  else
    tries.append({{lhs, rhs, 1.0}, {rhs, lhs, 1.0}});
  for (const Try &t : tries) {
    if (!isChainLeaf(t.pSide) || !isStepInput(t.pSide))
      continue;
    ProductTerms u;
    flattenProduct(t.uSide, u, /*inNum=*/true, inChain());
    double scale = t.sign * u.coef;
    Value d = direction(u);
    bool scaled = u.num.size() > 1 || scale != -1.0;
    if (u.ops.empty() || !u.den.empty() || !scaled || !(scale < 0.0) || !d)
      continue;
    p = t.pSide;
    if (!matchWith(u, d, scale))
      return std::nullopt;
    Candidate c;
    c.anchor = anchor;
    c.hp = hp;
    c.inputs = {{p}, {g}, {b}};
    c.outputs = {{anchor->getResult(0)}, {b1}};
    c.ops = ops;
    c.exclusive.assign(stateful.begin(), stateful.end());
    return c;
  }
  return std::nullopt;
}

/// The update's one tensor factor, the direction; with a one-element
/// parameter, its only factor. Null when there is no such factor.
Value SGDMatcher::direction(const ProductTerms &u) const {
  SmallVector<Value> tensors;
  llvm::copy_if(u.num, std::back_inserter(tensors),
                [](Value x) { return getNumElements(x) != 1; });
  if (tensors.size() == 1)
    return tensors.front();
  if (tensors.empty() && u.num.size() == 1 && isChainLeaf(u.num.front()))
    return u.num.front();
  return Value();
}

bool SGDMatcher::matchWith(ProductTerms &u, Value d, double scale) {
  hp.kind = Kind::sgd;
  ops.insert(anchor);
  add(u);
  // Besides the direction d, at most one scalar: lr.
  for (Value x : u.num) {
    if (x == d)
      continue;
    if (!lrLeaf && getNumElements(x) == 1)
      lrLeaf = x;
    else
      return fail("unrecognized factor in the parameter update");
  }
  if (lrLeaf) {
    auto type = cast<RankedTensorType>(lrLeaf.getType());
    if (!type.getElementType().isF32())
      return fail("expected an f32 learning rate, but got " + quoteType(type));
    if (scale != -1.0)
      return fail(llvm::formatv("expected the update to be scaled by lr "
                                "alone, but got an extra factor {0}",
                                formatNumber(-scale)));
    hp.lr = {lrLeaf, std::nullopt};
  } else {
    hp.lr = ScalarKey::ofConstant(-scale);
  }
  if (!matchDirection(d))
    return false;
  if (!(hp.weightDecay >= 0.0) || std::isinf(hp.weightDecay))
    return fail(llvm::formatv("expected weight_decay >= 0, but got {0}",
                              formatNumber(hp.weightDecay)));

  // One f32 type for p, g, b and the results: tx.sgd does not broadcast.
  for (auto [name, value] :
       {std::pair<StringRef, Value>("grad", g), {"momentum_buffer", b}})
    if (value && value.getType() != chainType)
      return fail(llvm::formatv("expected {0} of type {1}, but got {2}", name,
                                quoteType(chainType),
                                quoteType(value.getType())));
  if (!cast<RankedTensorType>(chainType).getElementType().isF32())
    return fail("expected f32 parameters and state, but got " +
                quoteType(chainType));
  hp.block = anchor->getBlock();
  return checkUses();
}

std::optional<Decay> SGDMatcher::readDecay(Value x) const {
  auto sum = x.getDefiningOp<AddOp>();
  if (!sum)
    return std::nullopt;
  for (auto [grad, decay] : {std::pair(sum.getLhs(), sum.getRhs()),
                             std::pair(sum.getRhs(), sum.getLhs())}) {
    Decay r{grad, std::nullopt, sum, {}};
    flattenProduct(decay, r.terms, /*inNum=*/true, inChain());
    if (!r.terms.den.empty() || !llvm::is_contained(r.terms.num, p) ||
        grad == p)
      continue;
    if (r.terms.num.size() == 1)
      r.wd = r.terms.coef;
    else if (r.terms.num.size() != 2 || !llvm::any_of(r.terms.num, [](Value y) {
               return getNumElements(y) == 1;
             }))
      continue;
    return r;
  }
  return std::nullopt;
}

/// g' = g + wd * p, or g itself.
bool SGDMatcher::matchGradient(Value x) {
  std::optional<Decay> decay = readDecay(x);
  if (!decay) {
    g = x;
    return true;
  }
  if (!decay->wd)
    return fail("weight_decay is not a constant");
  g = decay->grad;
  hp.weightDecay = userScalar(*decay->wd);
  ops.insert(decay->add);
  add(decay->terms);
  return true;
}

bool SGDMatcher::matchDirection(Value d) {
  // Plain SGD: the direction is the gradient, possibly with L2 decay.
  if (!d.getDefiningOp<AddOp>() || readDecay(d))
    return matchGradient(d);
  // Nesterov: g' + momentum * b1, where b1 updates the buffer with g'.
  ProductTerms t[2];
  flattenSumOperands(d, t[0], t[1], inChain());
  for (int i = 0; i < 2; ++i) {
    ProductTerms &gt = t[i], &bt = t[1 - i];
    if (gt.coef != 1.0 || gt.num.size() != 1 || !gt.den.empty() ||
        bt.num.size() != 1 || !bt.den.empty())
      continue;
    ProductTerms inner[2];
    if (!flattenSumOperands(bt.num[0], inner[0], inner[1], inChain()) ||
        !llvm::any_of(inner, [&](ProductTerms &x) {
          return x.num.size() == 1 && x.num[0] == gt.num[0];
        }))
      continue;
    ops.insert(d.getDefiningOp());
    add(gt);
    add(bt);
    if (!matchBufferUpdate(bt.num[0], gt.num[0]))
      return false;
    if (static_cast<float>(bt.coef) != static_cast<float>(hp.momentum))
      return fail(llvm::formatv("expected the nesterov term to use the "
                                "buffer's momentum {0}, but got {1}",
                                formatNumber(hp.momentum),
                                formatNumber(bt.coef)));
    if (hp.dampening != 0.0)
      return fail(llvm::formatv("expected dampening 0 with nesterov, but got "
                                "{0}",
                                formatNumber(hp.dampening)));
    hp.nesterov = true;
    return true;
  }
  // Momentum: the direction is the new buffer.
  return matchBufferUpdate(d, Value());
}

/// b1 = momentum * b + (1 - dampening) * g'. Which term is the gradient:
/// |knownGrad| (nesterov), else the one with L2 decay, else the one with
/// coefficient 1 (dampening 0, torch's default), else the right operand
/// (torch writes `buf.mul_(momentum).add_(grad, ...)`). The last two
/// choices only name the state: swapping b and g' computes the same b1.
bool SGDMatcher::matchBufferUpdate(Value sum, Value knownGrad) {
  ops.insert(sum.getDefiningOp());
  ProductTerms t[2];
  flattenSumOperands(sum, t[0], t[1], inChain());
  for (ProductTerms &x : t) {
    if (x.den.empty() && x.num.size() == 1)
      continue;
    if (llvm::is_contained(x.num, p))
      return fail("weight_decay is not a constant");
    if (llvm::any_of(x.num, [](Value y) { return getNumElements(y) == 1; }))
      return fail("momentum is not a constant");
    return fail("direction is not g, g + wd * p, momentum * b + (1 - "
                "dampening) * g or its nesterov form");
  }
  int gi = 1;
  if (knownGrad)
    gi = t[0].num[0] == knownGrad ? 0 : 1;
  else if (readDecay(t[0].num[0]) || readDecay(t[1].num[0]))
    gi = readDecay(t[0].num[0]) ? 0 : 1;
  else if (t[0].coef == 1.0 && t[1].coef != 1.0)
    gi = 0;
  ProductTerms &gt = t[gi], &bt = t[1 - gi];
  add(gt);
  add(bt);
  b = bt.num[0];
  b1 = sum;
  if (b == gt.num[0])
    return fail("expected a momentum buffer other than the gradient");
  // The doubles the user wrote (userScalar): tx.sgd rounds momentum and
  // 1 - dampening to f32 from them, reproducing the graph's constants.
  hp.momentum = userScalar(bt.coef);
  if (!(hp.momentum > 0.0 && hp.momentum < 1.0))
    return fail(llvm::formatv("expected momentum in (0, 1), but got {0}",
                              formatNumber(bt.coef)));
  if (!(gt.coef > 0.0 && gt.coef <= 1.0))
    return fail(llvm::formatv("expected the gradient's coefficient 1 - "
                              "dampening in (0, 1], but got {0}",
                              formatNumber(gt.coef)));
  hp.dampening = userComplement(gt.coef);
  return matchGradient(gt.num[0]);
}

/// Intermediates that depend on p, g or b must stay inside the chain
/// (besides p1 and b1): fusing would otherwise compute them twice.
bool SGDMatcher::checkUses() {
  SmallVector<Value> inputs = {p, g};
  SmallVector<Operation *> outputs = {anchor};
  if (b) {
    inputs.push_back(b);
    outputs.push_back(b1.getDefiningOp());
  }
  return checkContained(inputs, outputs);
}

} // namespace

std::optional<Candidate> optimizer::matchSGDChain(Operation *anchor,
                                                  std::string &reason) {
  SGDMatcher matcher(anchor);
  std::optional<Candidate> c = matcher.match();
  reason = std::move(matcher.reason);
  return c;
}
