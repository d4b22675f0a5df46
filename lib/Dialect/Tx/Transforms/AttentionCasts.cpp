//===- AttentionCasts.cpp - tx-attention-casts -------------------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// A fused attention reads q, k, v (and dO) and writes o (dQ, dK, dV) in the
// low type, while the exported graph around it splits one f32 projection
// into heads, casts each piece, and merges the widened results back. The
// casts sit between the attention op and the projections' buffers, so a
// backend could not read the pieces in place. This pass moves them to the
// far side of those layout chains: a narrowing cast feeding an attention
// operand goes up to the chain's base (one cast of the projection instead
// of three of its pieces), a widening cast of an attention result goes
// down past the head merge, and a narrowing cast of a widening cast of the
// same narrow value disappears. All exact: converting a float and moving
// elements commute, and bf16/f16 -> f32 -> bf16/f16 is the identity.
//
//===----------------------------------------------------------------------===//

#include "txopt/Dialect/Tx/Transforms/AttentionCasts.h"
#include "txopt/Dialect/Tx/IR/TxOps.h"
#include "txopt/Dialect/Tx/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace mlir::txopt::tx {
#define GEN_PASS_DEF_ATTENTIONCASTSPASS
#include "txopt/Dialect/Tx/Transforms/Passes.h.inc"
} // namespace mlir::txopt::tx

using namespace mlir;
using namespace mlir::txopt;

bool tx::isAttentionLayoutOp(Operation *op) {
  return isa<tx::TransposeOp, tx::ReshapeOp, tx::SqueezeOp, tx::UnsqueezeOp,
             tx::IdentityOp>(op);
}

llvm::SmallVector<Value, 4> tx::attentionInputs(Operation *op) {
  if (auto a = dyn_cast<tx::AttentionOp>(op))
    return {a.getQ(), a.getK(), a.getV()};
  if (auto g = dyn_cast<tx::AttentionGradOp>(op))
    return {g.getQ(), g.getK(), g.getV(), g.getGrad()};
  return {};
}

llvm::SmallVector<Value, 4> tx::attentionResults(Operation *op) {
  if (auto a = dyn_cast<tx::AttentionOp>(op))
    return {a.getResult()};
  if (auto g = dyn_cast<tx::AttentionGradOp>(op))
    return {g.getQGrad(), g.getKGrad(), g.getVGrad()};
  return {};
}

bool tx::readsAsAttentionInput(Operation *user, Value v) {
  return llvm::is_contained(attentionInputs(user), v);
}

namespace {

RankedTensorType tensorType(Value v) { return cast<RankedTensorType>(v.getType()); }

/// bf16 or f16: the types cuDNN's attention reads and writes.
bool isNarrowFloat(Type t) { return t.isBF16() || t.isF16(); }

/// The tx.cast defining |v| when it narrows f32 to bf16/f16 (|narrowing|)
/// or widens bf16/f16 to f32; null otherwise.
tx::CastOp floatCast(Value v, bool narrowing) {
  auto cast = v.getDefiningOp<tx::CastOp>();
  if (!cast)
    return nullptr;
  Type in = tensorType(cast.getInput()).getElementType();
  Type out = tensorType(cast.getResult()).getElementType();
  if (narrowing ? (in.isF32() && isNarrowFloat(out)) : (isNarrowFloat(in) && out.isF32()))
    return cast;
  return nullptr;
}

RankedTensorType withElement(Value v, Type element) {
  return RankedTensorType::get(tensorType(v).getShape(), element);
}

/// A copy of the layout op, split or concat |op|, inserted by |b|, reading
/// |operands| and with its results' elements of type |element| (same shapes).
Operation *cloneIn(OpBuilder &b, Operation *op, ValueRange operands, Type element) {
  Operation *copy = b.clone(*op);
  copy->setOperands(operands);
  for (auto [r, old] : llvm::zip(copy->getResults(), op->getResults()))
    r.setType(withElement(old, element));
  return copy;
}

/// True when every reader of |v|, through layout ops and splits, is an
/// attention input: the values whose casts step 1 may move.
bool feedsOnlyAttention(Value v, int depth = 0) {
  if (depth > 8 || v.use_empty())
    return false;
  for (OpOperand &use : v.getUses()) {
    Operation *user = use.getOwner();
    if (tx::readsAsAttentionInput(user, v))
      continue;
    if (tx::isAttentionLayoutOp(user) || isa<tx::CastOp>(user)) {
      if (!feedsOnlyAttention(user->getResult(0), depth + 1))
        return false;
      continue;
    }
    if (auto split = dyn_cast<tx::SplitOp>(user)) {
      for (Value r : split.getResults())
        if (!r.use_empty() && !feedsOnlyAttention(r, depth + 1))
          return false;
      continue;
    }
    return false;
  }
  return true;
}

/// Moves the narrowing cast |c| one link up its chain, or folds it into the
/// widening cast it reads; false when it cannot move (yet). The casts it
/// creates go to |created| (to move further), the ones it erases to
/// |erased|.
bool hoistOnce(tx::CastOp c, llvm::SmallVectorImpl<tx::CastOp> &created,
               llvm::DenseSet<Operation *> &erased) {
  Value in = c.getInput();
  Type narrow = tensorType(c.getResult()).getElementType();
  if (tx::CastOp wide = floatCast(in, /*narrowing=*/false)) {
    if (tensorType(wide.getInput()).getElementType() != narrow)
      return false;
    c.getResult().replaceAllUsesWith(wide.getInput());
    erased.insert(c);
    c.erase();
    if (wide.getResult().use_empty())
      wide.erase();
    return true;
  }
  Operation *def = in.getDefiningOp();
  if (!def)
    return false;
  OpBuilder b(def);
  if (tx::isAttentionLayoutOp(def) && in.hasOneUse()) {
    Value source = def->getOperand(0);
    auto newCast = tx::CastOp::create(b, c.getLoc(), withElement(source, narrow), source);
    Operation *moved = cloneIn(b, def, newCast.getResult(), narrow);
    c.getResult().replaceAllUsesWith(moved->getResult(0));
    erased.insert(c);
    c.erase();
    def->erase();
    created.push_back(newCast);
    return true;
  }
  if (auto split = dyn_cast<tx::SplitOp>(def)) {
    // Every piece must be narrowed the same way (or unused).
    llvm::SmallVector<tx::CastOp> casts;
    for (Value r : split.getResults()) {
      if (r.use_empty()) {
        casts.push_back(nullptr);
        continue;
      }
      if (!r.hasOneUse())
        return false;
      auto rc = dyn_cast<tx::CastOp>(*r.getUsers().begin());
      if (!rc || tensorType(rc.getResult()).getElementType() != narrow)
        return false;
      casts.push_back(rc);
    }
    Value source = split.getInput();
    auto newCast = tx::CastOp::create(b, c.getLoc(), withElement(source, narrow), source);
    Operation *moved = cloneIn(b, split, newCast.getResult(), narrow);
    for (auto [i, r] : llvm::enumerate(moved->getResults())) {
      if (casts[i]) {
        casts[i].getResult().replaceAllUsesWith(r);
        erased.insert(casts[i]);
        casts[i].erase();
      }
    }
    split.erase();
    created.push_back(newCast);
    return true;
  }
  return false;
}

/// Moves the widening cast |c| of a narrow value one link down, past a
/// layout op or a concat whose every operand is widened the same way, after
/// dropping any narrowing cast back that reads it; false when nothing
/// changed. |created| and |erased| as for hoistOnce.
bool sinkOnce(tx::CastOp c, llvm::SmallVectorImpl<tx::CastOp> &created,
              llvm::DenseSet<Operation *> &erased) {
  Value out = c.getResult();
  Type narrow = tensorType(c.getInput()).getElementType();
  // A narrowing cast back to the narrow type reads the narrow value.
  bool folded = false;
  for (Operation *user : llvm::make_early_inc_range(out.getUsers())) {
    auto back = dyn_cast<tx::CastOp>(user);
    if (back && tensorType(back.getResult()).getElementType() == narrow) {
      back.getResult().replaceAllUsesWith(c.getInput());
      back.erase();
      folded = true;
    }
  }
  if (out.use_empty()) {
    erased.insert(c);
    c.erase();
    return true;
  }
  if (!out.hasOneUse())
    return folded;
  Operation *user = *out.getUsers().begin();
  OpBuilder b(user);
  if (tx::isAttentionLayoutOp(user)) {
    Operation *moved = cloneIn(b, user, c.getInput(), narrow);
    Value wideResult = user->getResult(0);
    auto newCast = tx::CastOp::create(b, c.getLoc(), tensorType(wideResult), moved->getResult(0));
    wideResult.replaceAllUsesWith(newCast.getResult());
    user->erase();
    erased.insert(c);
    c.erase();
    created.push_back(newCast);
    return true;
  }
  if (auto concat = dyn_cast<tx::ConcatOp>(user)) {
    llvm::SmallVector<Value> narrowInputs;
    for (Value operand : concat.getInputs()) {
      tx::CastOp oc = floatCast(operand, /*narrowing=*/false);
      if (!oc || !operand.hasOneUse() ||
          tensorType(oc.getInput()).getElementType() != narrow)
        return folded;
      narrowInputs.push_back(oc.getInput());
    }
    Operation *moved = cloneIn(b, concat, narrowInputs, narrow);
    auto newCast = tx::CastOp::create(b, c.getLoc(), tensorType(concat.getResult()),
                                      moved->getResult(0));
    concat.getResult().replaceAllUsesWith(newCast.getResult());
    llvm::SmallVector<Operation *> operandsCasts;
    for (Value operand : concat.getInputs())
      operandsCasts.push_back(operand.getDefiningOp());
    concat.erase();
    for (Operation *oc : operandsCasts) {
      erased.insert(oc);
      oc->erase();
    }
    created.push_back(newCast);
    return true;
  }
  return folded;
}

struct AttentionCastsPass : public tx::impl::AttentionCastsPassBase<AttentionCastsPass> {
  void runOnOperation() override { tx::moveCastsOffAttentionLayouts(getOperation()); }
};

} // namespace

tx::AttentionCastsResult tx::moveCastsOffAttentionLayouts(func::FuncOp func) {
  AttentionCastsResult result;
  if (func.isExternal())
    return result;
  llvm::SmallVector<tx::CastOp> narrowing, widening;
  func.walk([&](Operation *op) {
    if (!isa<tx::AttentionOp, tx::AttentionGradOp>(op))
      return;
    for (Value in : attentionInputs(op))
      if (tx::CastOp c = floatCast(in, /*narrowing=*/true))
        narrowing.push_back(c);
    for (Value r : attentionResults(op))
      for (Operation *user : r.getUsers())
        if (auto c = dyn_cast<tx::CastOp>(user); c && floatCast(c.getResult(), false))
          widening.push_back(c);
  });
  // Casts wait their turn: a split moves only once all its pieces are
  // narrowed, a concat only once all its operands are widened. A cast that
  // moved is gone (|c| itself, and the other pieces' casts it took along).
  auto run = [](llvm::SmallVector<tx::CastOp> &work, bool hoist) {
    unsigned moves = 0;
    llvm::DenseSet<Operation *> erased;
    bool changed = true;
    while (changed) {
      changed = false;
      llvm::SmallVector<tx::CastOp> next;
      for (tx::CastOp c : work) {
        if (erased.contains(c))
          continue;
        if (hoist && !feedsOnlyAttention(c.getResult())) {
          next.push_back(c);
          continue;
        }
        llvm::SmallVector<tx::CastOp> created;
        Operation *raw = c;
        bool moved = hoist ? hoistOnce(c, created, erased) : sinkOnce(c, created, erased);
        if (!moved) {
          next.push_back(c);
          continue;
        }
        changed = true;
        ++moves;
        if (!erased.contains(raw))
          next.push_back(c); // it only dropped a cast back: it may move later
        for (tx::CastOp n : created) {
          erased.erase(n);
          next.push_back(n);
        }
      }
      work = std::move(next);
    }
    return moves;
  };
  result.hoisted = run(narrowing, /*hoist=*/true);
  result.sunk = run(widening, /*hoist=*/false);
  return result;
}
