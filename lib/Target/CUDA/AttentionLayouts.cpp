//===- AttentionLayouts.cpp - attention tensors as views of their buffers -===//
//
// SPDX-License-Identifier: Apache-2.0
// cuDNN's SDPA reads q, k, v, dO and writes o, dQ, dK, dV through element
// strides, so the head split of an exported attention (q/k/v cut out of one
// projection, reshaped to heads and transposed to [B, H, T, D]) and the
// head merge after it (o transposed back to [B, T, H*D] for the output
// projection, dQ/dK/dV concatenated for the q/k/v projection's gradient)
// need no copy kernel: the attention call reads and writes the GEMMs'
// buffers in place.
//
// Three steps, all exact (no rounding moves):
//  1. normalizeAttentionCasts (before the grouping) moves the casts around
//     those layout chains to the far side of them: a narrowing cast feeding
//     an attention operand goes up to the chain's base (one cast of the
//     projection instead of three of its pieces), a widening cast of an
//     attention result goes down past the head merge, and a narrowing cast
//     of a widening cast of the same narrow value disappears. Converting a
//     float and moving elements commute, and bf16/f16 -> f32 -> bf16/f16 is
//     the identity.
//  2. findAttentionInputViews (in the grouping): an attention operand that
//     is a layout chain of a value in memory is a strided view of it; the
//     chain's ops are not materialized, the base is.
//  3. placeAttentionResults (after the grouping): an attention result whose
//     only reader is a layout chain into a materialized value (the head
//     merge, or one part of a concat of such chains) is written by the
//     attention call as a strided view of that value, whose own kernel goes.
// A view cuDNN cannot take (a last dim that is not contiguous, an offset or
// stride that breaks 16-byte alignment) stays a copy.
//
//===----------------------------------------------------------------------===//

#include "KernelUtils.h"
#include "Lowering.h"

#include "txopt/Dialect/Tx/IR/TxOps.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::cuda;

namespace {

/// Ops that only move elements, one input: the links of a layout chain.
bool isLayoutOp(Operation *op) {
  return isa<tx::TransposeOp, tx::ReshapeOp, tx::SqueezeOp, tx::UnsqueezeOp,
             tx::IdentityOp>(op);
}

/// bf16 or f16: the types cuDNN's attention reads and writes.
bool isNarrowFloat(Type t) { return t.isBF16() || t.isF16(); }

/// The tx.cast defining |v| when it narrows f32 to bf16/f16 (|narrowing|)
/// or widens bf16/f16 to f32; null otherwise.
tx::CastOp floatCast(Value v, bool narrowing) {
  auto cast = v.getDefiningOp<tx::CastOp>();
  if (!cast)
    return nullptr;
  Type in = typeOf(cast.getInput()).getElementType();
  Type out = typeOf(cast.getResult()).getElementType();
  if (narrowing ? (in.isF32() && isNarrowFloat(out)) : (isNarrowFloat(in) && out.isF32()))
    return cast;
  return nullptr;
}

RankedTensorType withElement(Value v, Type element) {
  return RankedTensorType::get(typeOf(v).getShape(), element);
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

/// True when |user| (an attention op) reads |v| as q, k, v or dO.
bool readsAsInput(Operation *user, Value v) {
  if (auto a = dyn_cast<tx::AttentionOp>(user))
    return a.getQ() == v || a.getK() == v || a.getV() == v;
  if (auto g = dyn_cast<tx::AttentionGradOp>(user))
    return g.getQ() == v || g.getK() == v || g.getV() == v || g.getGrad() == v;
  return false;
}

/// True when every reader of |v|, through layout ops and splits, is an
/// attention input: the values whose casts step 1 may move.
bool feedsOnlyAttention(Value v, int depth = 0) {
  if (depth > 8 || v.use_empty())
    return false;
  for (OpOperand &use : v.getUses()) {
    Operation *user = use.getOwner();
    if (readsAsInput(user, v))
      continue;
    if (isLayoutOp(user) || isa<tx::CastOp>(user)) {
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
  Type narrow = typeOf(c.getResult()).getElementType();
  if (tx::CastOp wide = floatCast(in, /*narrowing=*/false)) {
    if (typeOf(wide.getInput()).getElementType() != narrow)
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
  if (isLayoutOp(def) && in.hasOneUse()) {
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
      if (!rc || typeOf(rc.getResult()).getElementType() != narrow)
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
  Type narrow = typeOf(c.getInput()).getElementType();
  // A narrowing cast back to the narrow type reads the narrow value.
  bool folded = false;
  for (Operation *user : llvm::make_early_inc_range(out.getUsers())) {
    auto back = dyn_cast<tx::CastOp>(user);
    if (back && typeOf(back.getResult()).getElementType() == narrow) {
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
  if (isLayoutOp(user)) {
    Operation *moved = cloneIn(b, user, c.getInput(), narrow);
    Value wideResult = user->getResult(0);
    auto newCast = tx::CastOp::create(b, c.getLoc(), typeOf(wideResult), moved->getResult(0));
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
          typeOf(oc.getInput()).getElementType() != narrow)
        return folded;
      narrowInputs.push_back(oc.getInput());
    }
    Operation *moved = cloneIn(b, concat, narrowInputs, narrow);
    auto newCast = tx::CastOp::create(b, c.getLoc(), typeOf(concat.getResult()),
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

/// Applies |op| (a layout op, or piece |piece| of a split) to |view|.
bool applyForward(Operation *op, unsigned piece, StridedView &view);

/// Reshapes a strided view to |shape| without moving elements: each group
/// of old dims whose product matches a group of new dims must be
/// contiguous within itself; the new dims of the group then take strides
/// from the group's innermost stride outwards.
bool reshapeView(StridedView &view, llvm::ArrayRef<int64_t> shape) {
  llvm::SmallVector<int64_t, 4> oldShape, oldStrides;
  for (auto [d, s] : llvm::zip(view.shape, view.strides))
    if (d != 1) {
      oldShape.push_back(d);
      oldStrides.push_back(s);
    }
  llvm::SmallVector<int64_t, 4> strides(shape.size(), 0);
  size_t i = 0, j = 0;
  // New dims of size 1 take any stride; give them the next inner extent.
  while (j < shape.size() || i < oldShape.size()) {
    if (j < shape.size() && shape[j] == 1) {
      ++j;
      continue;
    }
    if (i >= oldShape.size() || j >= shape.size())
      return false;
    size_t groupStart = i, newStart = j;
    int64_t oldProduct = oldShape[i++], newProduct = shape[j++];
    while (oldProduct != newProduct) {
      if (oldProduct < newProduct) {
        if (i >= oldShape.size())
          return false;
        oldProduct *= oldShape[i++];
      } else {
        while (j < shape.size() && shape[j] == 1)
          ++j;
        if (j >= shape.size())
          return false;
        newProduct *= shape[j++];
      }
    }
    for (size_t d = groupStart; d + 1 < i; ++d)
      if (oldStrides[d] != oldStrides[d + 1] * oldShape[d + 1])
        return false;
    int64_t stride = oldStrides[i - 1];
    for (size_t d = j; d-- > newStart;) {
      strides[d] = stride;
      if (shape[d] != 1)
        stride *= shape[d];
    }
  }
  // Size-1 dims: the stride of the dim inside them times its extent.
  int64_t inner = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] == 1)
      strides[d] = inner;
    else
      inner = strides[d] * shape[d];
  }
  view.shape.assign(shape.begin(), shape.end());
  view.strides = strides;
  return true;
}

void permuteView(StridedView &view, llvm::ArrayRef<int64_t> perm) {
  llvm::SmallVector<int64_t, 4> shape, strides;
  for (int64_t p : perm) {
    shape.push_back(view.shape[p]);
    strides.push_back(view.strides[p]);
  }
  view.shape = shape;
  view.strides = strides;
}

bool applyForward(Operation *op, unsigned piece, StridedView &view) {
  if (auto transpose = dyn_cast<tx::TransposeOp>(op)) {
    permuteView(view, transpose.getPerm());
    return true;
  }
  if (isLayoutOp(op))
    return reshapeView(view, typeOf(op->getResult(0)).getShape());
  if (auto split = dyn_cast<tx::SplitOp>(op)) {
    int64_t axis = split.getAxis();
    if (axis < 0)
      axis += view.shape.size();
    int64_t start = 0;
    for (unsigned i = 0; i < piece; ++i)
      start += typeOf(split.getResult(i)).getShape()[axis];
    view.offset += start * view.strides[axis];
    view.shape[axis] = typeOf(split.getResult(piece)).getShape()[axis];
    return true;
  }
  return false;
}

StridedView contiguousView(Value v) {
  StridedView view;
  view.base = v;
  auto shape = typeOf(v).getShape();
  view.shape.assign(shape.begin(), shape.end());
  view.strides.assign(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;)
    view.strides[d - 1] = view.strides[d] * shape[d];
  return view;
}

/// What cuDNN's SDPA takes: a contiguous last dim and 16-byte aligned rows.
bool cudnnCanTake(const StridedView &view) {
  if (view.shape.size() != 4 || view.strides[3] != 1)
    return false;
  int64_t elementsPer16B = 16 / 2;
  if (view.offset % elementsPer16B != 0)
    return false;
  for (int d = 0; d < 3; ++d)
    if (view.shape[d] != 1 && view.strides[d] % elementsPer16B != 0)
      return false;
  return true;
}

/// |v| as a view of the first value up its chain of layout ops and splits
/// that some other op computes; |chain| gets the chain's ops. Every link
/// but the base has no reader outside the chain.
bool resolveInputView(Value v, StridedView &view, llvm::SmallVectorImpl<Operation *> &chain) {
  llvm::SmallVector<std::pair<Operation *, unsigned>> links;
  Value cur = v;
  while (Operation *def = cur.getDefiningOp()) {
    if (!isLayoutOp(def) && !isa<tx::SplitOp>(def))
      break;
    if (cur != v && !cur.hasOneUse())
      return false;
    links.push_back({def, cast<OpResult>(cur).getResultNumber()});
    cur = def->getOperand(0);
  }
  if (links.empty())
    return false;
  if (cur.getDefiningOp<tx::AttentionOp>() || cur.getDefiningOp<tx::AttentionGradOp>())
    return false; // a result placed elsewhere: keep it simple, copy
  view = contiguousView(cur);
  for (auto &[op, piece] : llvm::reverse(links)) {
    if (!applyForward(op, piece, view))
      return false;
    chain.push_back(op);
  }
  return cudnnCanTake(view);
}

/// The attention result |r|'s way to the value it can be written into:
/// single-reader layout ops up to a materialized value, or up to a concat
/// (whose result is materialized). Fills |view| (r inside that value).
bool resolveResultPlacement(Value r, const Materialization &plan, StridedView &view,
                            Operation *&writtenOp) {
  llvm::SmallVector<Operation *> links;
  Value cur = r;
  Operation *concatUser = nullptr;
  unsigned concatOperand = 0;
  while (true) {
    if (cur != r && plan.isMaterialized(cur))
      break;
    llvm::SmallVector<OpOperand *> readers;
    for (OpOperand &use : cur.getUses()) {
      auto g = dyn_cast<tx::AttentionGradOp>(use.getOwner());
      if (cur == r && g && g.getOut() == r && g.getQ() != r && g.getK() != r &&
          g.getV() != r && g.getGrad() != r && g.getMask() != r)
        continue; // the backward reads o through the same view
      readers.push_back(&use);
    }
    if (readers.size() != 1)
      return false;
    Operation *user = readers.front()->getOwner();
    if (isLayoutOp(user)) {
      links.push_back(user);
      cur = user->getResult(0);
      continue;
    }
    if (isa<tx::ConcatOp>(user)) {
      concatUser = user;
      concatOperand = readers.front()->getOperandNumber();
      cur = user->getResult(0);
      if (!plan.isMaterialized(cur))
        return false;
      break;
    }
    return false;
  }
  if (links.empty() && !concatUser)
    return false;
  if (typeOf(cur).getElementType() != typeOf(r).getElementType())
    return false;
  view = contiguousView(cur);
  writtenOp = cur.getDefiningOp();
  if (concatUser) {
    auto concat = cast<tx::ConcatOp>(concatUser);
    int64_t axis = concat.getAxis();
    if (axis < 0)
      axis += view.shape.size();
    int64_t start = 0;
    for (unsigned i = 0; i < concatOperand; ++i)
      start += typeOf(concat.getInputs()[i]).getShape()[axis];
    view.offset += start * view.strides[axis];
    view.shape[axis] = typeOf(concat.getInputs()[concatOperand]).getShape()[axis];
  }
  // Undo the links, last first: a transpose by its inverse, a reshape back
  // to its input's shape.
  for (Operation *op : llvm::reverse(links)) {
    if (auto transpose = dyn_cast<tx::TransposeOp>(op)) {
      llvm::ArrayRef<int64_t> perm = transpose.getPerm();
      llvm::SmallVector<int64_t, 4> inverse(perm.size());
      for (auto [i, p] : llvm::enumerate(perm))
        inverse[p] = i;
      permuteView(view, inverse);
    } else if (!reshapeView(view, typeOf(op->getOperand(0)).getShape())) {
      return false;
    }
  }
  return cudnnCanTake(view);
}

/// The attention results (o; dQ, dK, dV) and inputs of |op|.
llvm::SmallVector<Value, 4> resultsOf(Operation *op) {
  if (auto a = dyn_cast<tx::AttentionOp>(op))
    return {a.getResult()};
  if (auto g = dyn_cast<tx::AttentionGradOp>(op))
    return {g.getQGrad(), g.getKGrad(), g.getVGrad()};
  return {};
}

llvm::SmallVector<Value, 4> inputsOf(Operation *op) {
  if (auto a = dyn_cast<tx::AttentionOp>(op))
    return {a.getQ(), a.getK(), a.getV()};
  if (auto g = dyn_cast<tx::AttentionGradOp>(op))
    return {g.getQ(), g.getK(), g.getV(), g.getGrad()};
  return {};
}

} // namespace

void cuda::normalizeAttentionCasts(func::FuncOp step) {
  llvm::SmallVector<tx::CastOp> narrowing, widening;
  step.walk([&](Operation *op) {
    if (!isa<tx::AttentionOp, tx::AttentionGradOp>(op))
      return;
    for (Value in : inputsOf(op))
      if (tx::CastOp c = floatCast(in, /*narrowing=*/true))
        narrowing.push_back(c);
    for (Value r : resultsOf(op))
      for (Operation *user : r.getUsers())
        if (tx::CastOp c = floatCast(user->getResult(0), /*narrowing=*/false))
          widening.push_back(c);
  });
  // Casts wait their turn: a split moves only once all its pieces are
  // narrowed, a concat only once all its operands are widened. A cast that
  // moved is gone (|c| itself, and the other pieces' casts it took along).
  auto run = [](llvm::SmallVector<tx::CastOp> &work, bool hoist) {
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
        if (!erased.contains(raw))
          next.push_back(c); // it only dropped a cast back: it may move later
        for (tx::CastOp n : created) {
          erased.erase(n);
          next.push_back(n);
        }
      }
      work = std::move(next);
    }
  };
  run(narrowing, /*hoist=*/true);
  run(widening, /*hoist=*/false);
}

void cuda::findAttentionInputViews(func::FuncOp step, Materialization &plan,
                                   llvm::DenseSet<Operation *> &viewOps) {
  struct Candidate {
    Value input;
    StridedView view;
    llvm::SmallVector<Operation *> chain;
  };
  llvm::SmallVector<Candidate> candidates;
  llvm::DenseSet<Value> seen, covered;
  step.walk([&](Operation *op) {
    for (Value in : inputsOf(op)) {
      if (!seen.insert(in).second)
        continue;
      // Every reader of the operand must be an attention input.
      if (!llvm::all_of(in.getUsers(), [&](Operation *u) { return readsAsInput(u, in); }))
        continue;
      Candidate c{in, {}, {}};
      if (!resolveInputView(in, c.view, c.chain))
        continue;
      // The values along the chain (one piece of a split, not all).
      Value cur = in;
      for (size_t i = 0; i < c.chain.size(); ++i) {
        covered.insert(cur);
        cur = cur.getDefiningOp()->getOperand(0);
      }
      candidates.push_back(std::move(c));
    }
  });
  // A link nobody computes must have no reader outside the views: a split
  // piece read by a GEMM, say, keeps the split (and that view) a copy.
  for (Candidate &c : candidates) {
    bool alone = llvm::all_of(c.chain, [&](Operation *link) {
      return llvm::all_of(link->getResults(), [&](Value r) {
        return r.use_empty() || covered.contains(r);
      });
    });
    if (!alone)
      continue;
    plan.attentionViews[c.input] = c.view;
    plan.materialized.insert(c.view.base);
    viewOps.insert(c.chain.begin(), c.chain.end());
  }
}

void cuda::placeAttentionResults(LoweringContext &ctx, func::FuncOp step) {
  step.walk([&](Operation *op) {
    llvm::SmallVector<Value, 4> results = resultsOf(op);
    llvm::SmallVector<std::pair<Value, StridedView>, 4> placed;
    llvm::SmallVector<Operation *, 4> written;
    for (Value r : results) {
      StridedView view;
      Operation *writtenOp = nullptr;
      if (!resolveResultPlacement(r, ctx.plan, view, writtenOp) || !writtenOp)
        continue;
      placed.push_back({r, view});
      written.push_back(writtenOp);
    }
    // A concat is written by the call only when every one of its parts is.
    for (auto [i, entry] : llvm::enumerate(placed)) {
      Operation *target = written[i];
      if (auto concat = dyn_cast<tx::ConcatOp>(target)) {
        unsigned parts = llvm::count(written, target);
        if (parts != concat.getInputs().size())
          continue;
      }
      ctx.plan.attentionViews[entry.first] = entry.second;
      ctx.loweredElsewhere.insert(target);
    }
  });
}
