//===- FuseOptimizer.cpp - fuse optimizer chains into tx.adam / tx.sgd ----===//
//
// SPDX-License-Identifier: Apache-2.0
// Matches per-parameter Adam/AdamW and SGD update chains and merges them,
// together with existing tx.adam / tx.sgd ops, into one multi-tensor op per
// group of equal hyper-parameters. The matchers live in AdamMatcher.cpp and
// SGDMatcher.cpp.
//
//===----------------------------------------------------------------------===//

#include "OptimizerMatchers.h"

#include "txopt/Dialect/Tx/IR/TxOps.h"
#include "txopt/Dialect/Tx/Transforms/Passes.h"
#include "txopt/Dialect/Tx/Transforms/PatternUtils.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace mlir::txopt::tx {
#define GEN_PASS_DEF_FUSEOPTIMIZERPASS
#include "txopt/Dialect/Tx/Transforms/Passes.h.inc"
} // namespace mlir::txopt::tx

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::tx;
using namespace mlir::txopt::tx::optimizer;

//===----------------------------------------------------------------------===//
// Hyper-parameters from f32 constants (OptimizerMatchers.h)
//===----------------------------------------------------------------------===//

/// |x| rounded to |digits| significant decimal digits, read back as a double.
static double roundToDigits(double x, int digits) {
  char text[40];
  std::snprintf(text, sizeof(text), "%.*e", digits - 1, x);
  return std::strtod(text, nullptr);
}

/// The first of |x| rounded to 1, 2, ..., 17 significant digits that
/// |accepts|, else nullopt (17 digits give |x| itself back).
static std::optional<double>
shortestDecimal(double x, function_ref<bool(double)> accepts) {
  for (int digits = 1; digits <= 17; ++digits) {
    double d = roundToDigits(x, digits);
    if (accepts(d))
      return d;
  }
  return std::nullopt;
}

// Round-trip checks go double -> f32, the exporter's own rounding of a
// Python float, rather than decimal -> f32 directly.

double optimizer::userScalar(double c) {
  float f = static_cast<float>(c);
  if (!std::isfinite(f))
    return c;
  return shortestDecimal(f,
                         [&](double d) { return static_cast<float>(d) == f; })
      .value_or(f);
}

double optimizer::userComplement(double c) {
  float f = static_cast<float>(c);
  double x = 1.0 - static_cast<double>(f);
  if (!std::isfinite(f))
    return x;
  return shortestDecimal(
             x, [&](double d) { return static_cast<float>(1.0 - d) == f; })
      .value_or(x);
}

std::optional<double> optimizer::userBeta(double b, double c) {
  float fb = static_cast<float>(b), fc = static_cast<float>(c);
  if (!std::isfinite(fb) || !std::isfinite(fc))
    return std::nullopt;
  auto reproduces = [&](double beta) {
    return static_cast<float>(beta) == fb &&
           static_cast<float>(1.0 - beta) == fc;
  };
  // From b's side (0.99900001287 -> 0.999) and from c's (for a lerp, whose
  // b is 1 - c, and for a complement formed in f32).
  for (double seed : {static_cast<double>(fb), 1.0 - static_cast<double>(fc)})
    if (std::optional<double> beta = shortestDecimal(seed, reproduces))
      return beta;
  // Another exporter's rounding of the complement: a couple of ulps apart.
  double beta = userScalar(b);
  float expected = static_cast<float>(1.0 - beta);
  float ulp = std::nextafter(expected, std::numeric_limits<float>::infinity()) -
              expected;
  if (std::fabs(static_cast<double>(fc) - expected) <= 2.0 * ulp)
    return beta;
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Candidates (OptimizerMatchers.h)
//===----------------------------------------------------------------------===//

StringRef optimizer::kindName(Kind kind) {
  return kind == Kind::adam ? "adam" : "sgd";
}

ScalarKey ScalarKey::of(Value v) {
  if (std::optional<double> c = getSplatConstant(v))
    return ofConstant(*c);
  return {v, std::nullopt};
}

bool ScalarKey::operator==(const ScalarKey &other) const {
  if (constant || other.constant)
    return constant && other.constant &&
           static_cast<float>(*constant) == static_cast<float>(*other.constant);
  return value == other.value;
}

bool HyperParams::operator==(const HyperParams &o) const {
  if (kind != o.kind || weightDecay != o.weightDecay || !(lr == o.lr) ||
      block != o.block)
    return false;
  if (kind == Kind::sgd)
    return momentum == o.momentum && dampening == o.dampening &&
           nesterov == o.nesterov;
  return mode == o.mode && beta1 == o.beta1 && beta2 == o.beta2 &&
         epsilon == o.epsilon && placement == o.placement &&
         biasCorrection == o.biasCorrection &&
         f32BiasCorrection == o.f32BiasCorrection &&
         (!biasCorrection || step == o.step);
}

SmallVector<Value> Candidate::operands() const {
  SmallVector<Value> all;
  for (const SmallVector<Value> &list : inputs)
    llvm::append_range(
        all, llvm::make_filter_range(list, [](Value x) { return bool(x); }));
  for (const ScalarKey *key : {&hp.lr, &hp.step})
    if (key->value)
      all.push_back(key->value);
  return all;
}

SmallVector<Value> Candidate::results() const {
  SmallVector<Value> all;
  for (const SmallVector<Value> &list : outputs)
    llvm::append_range(
        all, llvm::make_filter_range(list, [](Value x) { return bool(x); }));
  return all;
}

Candidate optimizer::candidateFor(AdamOp adam) {
  Candidate c;
  c.anchor = adam;
  c.existing = true;
  c.inputs = {
      llvm::to_vector(adam.getParams()), llvm::to_vector(adam.getGrads()),
      llvm::to_vector(adam.getExpAvg()), llvm::to_vector(adam.getExpAvgSq())};
  c.outputs = {llvm::to_vector_of<Value>(adam.getNewParams()),
               llvm::to_vector_of<Value>(adam.getNewExpAvg()),
               llvm::to_vector_of<Value>(adam.getNewExpAvgSq())};
  c.ops.insert(adam);
  HyperParams &hp = c.hp;
  hp.kind = Kind::adam;
  hp.weightDecay = adam.getWeightDecay().convertToDouble();
  hp.mode = hp.weightDecay == 0.0 ? AdamMode::adamw : adam.getMode();
  hp.beta1 = adam.getBeta1().convertToDouble();
  hp.beta2 = adam.getBeta2().convertToDouble();
  hp.epsilon = adam.getEpsilon().convertToDouble();
  hp.placement = adam.getEpsilonPlacement();
  hp.biasCorrection = adam.getBiasCorrection();
  hp.f32BiasCorrection = adam.getF32BiasCorrection();
  hp.lr = ScalarKey::of(adam.getLr());
  if (adam.getStep())
    hp.step = ScalarKey::of(adam.getStep());
  hp.block = adam->getBlock();
  return c;
}

Candidate optimizer::candidateFor(SGDOp sgd) {
  Candidate c;
  c.anchor = sgd;
  c.existing = true;
  c.inputs = {llvm::to_vector(sgd.getParams()), llvm::to_vector(sgd.getGrads()),
              llvm::to_vector(sgd.getMomentumBuffer())};
  c.outputs = {llvm::to_vector_of<Value>(sgd.getNewParams()),
               llvm::to_vector_of<Value>(sgd.getNewMomentumBuffer())};
  c.ops.insert(sgd);
  HyperParams &hp = c.hp;
  hp.kind = Kind::sgd;
  hp.weightDecay = sgd.getWeightDecay().convertToDouble();
  hp.momentum = sgd.getMomentum().convertToDouble();
  // Without momentum the buffer is never read: dampening and nesterov do
  // not matter, so they must not keep such ops apart.
  if (hp.momentum != 0.0) {
    hp.dampening = sgd.getDampening().convertToDouble();
    hp.nesterov = sgd.getNesterov();
  }
  hp.lr = ScalarKey::of(sgd.getLr());
  hp.block = sgd->getBlock();
  return c;
}

namespace {

//===----------------------------------------------------------------------===//
// Grouping
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

//===----------------------------------------------------------------------===//
// Rewriting
//===----------------------------------------------------------------------===//

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

/// The fused op for |hp| over the concatenated per-parameter lists.
Operation *createFusedOp(OpBuilder &b, Location loc, const HyperParams &hp,
                         ArrayRef<SmallVector<Value>> inputs) {
  Value lr = materializeScalar(b, loc, hp.lr);
  SmallVector<Type> types = llvm::to_vector(ValueRange(inputs[0]).getTypes());
  if (hp.kind == Kind::sgd)
    return SGDOp::create(b, loc, types, types, inputs[0], inputs[1], inputs[2],
                         lr, APFloat(hp.momentum), APFloat(hp.dampening),
                         APFloat(hp.weightDecay), hp.nesterov);
  Value step = hp.biasCorrection ? materializeScalar(b, loc, hp.step) : Value();
  return AdamOp::create(b, loc, types, types, types, inputs[0], inputs[1],
                        inputs[2], inputs[3], lr, step, hp.mode,
                        APFloat(hp.beta1), APFloat(hp.beta2),
                        APFloat(hp.epsilon), hp.placement,
                        APFloat(hp.weightDecay), hp.biasCorrection,
                        hp.f32BiasCorrection);
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
      candidates.push_back(candidateFor(adam));
      return;
    }
    if (auto sgd = dyn_cast<SGDOp>(op)) {
      candidates.push_back(candidateFor(sgd));
      return;
    }
    if (!isa<SubOp, AddOp>(op))
      return;
    // Adam first: its gate (a sqrt denominator) is the stricter one, and
    // an Adam update never passes SGD's (no divisor in the update).
    std::string reason;
    Kind kind = Kind::adam;
    std::optional<Candidate> c = matchAdamChain(op, reason);
    if (!c && reason.empty()) {
      kind = Kind::sgd;
      c = matchSGDChain(op, reason);
    }
    if (c && llvm::any_of(c->exclusive,
                          [&](Operation *x) { return claimed.contains(x); })) {
      c.reset();
      reason = "update chain overlaps another update chain";
    }
    if (!c) {
      if (explain && !reason.empty())
        reportNearMiss(op, kindName(kind), reason);
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
      reportNearMiss(c.anchor, kindName(c.hp.kind),
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
  // results of their fused op, which are never replaced again).
  auto current = [&](Value x) {
    return replaced.lookup(x) ? replaced.lookup(x) : x;
  };
  HyperParams hp = group.hp;
  if (hp.lr.value)
    hp.lr.value = current(hp.lr.value);
  if (hp.step.value)
    hp.step.value = current(hp.step.value);
  size_t numInputs = group.members.front()->inputs.size();
  size_t numOutputs = group.members.front()->outputs.size();
  SmallVector<Location> locs;
  SmallVector<SmallVector<Value>> inputs(numInputs), outputs(numOutputs);
  for (Candidate *c : group.members) {
    locs.push_back(c->anchor->getLoc());
    for (size_t i = 0; i < numInputs; ++i)
      llvm::append_range(inputs[i], llvm::map_range(c->inputs[i], current));
    for (size_t i = 0; i < numOutputs; ++i)
      llvm::append_range(outputs[i], c->outputs[i]);
  }
  SmallVector<Value> results; // in the fused op's result order
  for (const SmallVector<Value> &list : outputs)
    llvm::append_range(results, list);

  // Right after the last operand definition: earlier groups' rewrites only
  // ever move definitions up, so a placement feasible at grouping time
  // stays feasible.
  SmallVector<Value> operands;
  for (const SmallVector<Value> &list : inputs)
    llvm::append_range(operands, llvm::make_filter_range(
                                     list, [](Value x) { return bool(x); }));
  SmallVector<Value> definedResults(
      llvm::make_filter_range(results, [](Value x) { return bool(x); }));
  for (Value x : {hp.lr.value, hp.step.value})
    if (x)
      operands.push_back(x);
  Block *block = hp.block;
  Placement placement(block, operands, definedResults, [&](Operation *op) {
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
  // State a chain does not keep (SGD without momentum) is zeros: tx.sgd
  // with momentum 0 passes the buffer through unread.
  for (SmallVector<Value> &list : inputs)
    for (size_t i = 0; i < list.size(); ++i)
      if (!list[i])
        list[i] = ConstantOp::create(
            b, loc, cast<ElementsAttr>(b.getZeroAttr(inputs[0][i].getType())));
  Operation *fused = createFusedOp(b, loc, hp, inputs);

  // Replace, then erase what died: chain ops in reverse order, then the
  // constants they alone used.
  for (auto [from, to] : llvm::zip_equal(results, fused->getResults())) {
    if (!from)
      continue;
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
  numParams += inputs[0].size();
}

} // namespace
