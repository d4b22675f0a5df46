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
//  1. tx-attention-casts (AttentionCasts.cpp, before the grouping) moves the
//     casts around those layout chains to the far side of them, so that the
//     chains connect the attention op to the projections' buffers.
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
#include "txopt/Dialect/Tx/Transforms/AttentionCasts.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::cuda;

namespace {

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
  if (tx::isAttentionLayoutOp(op))
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
    if (!tx::isAttentionLayoutOp(def) && !isa<tx::SplitOp>(def))
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
    if (tx::isAttentionLayoutOp(user)) {
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

} // namespace

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
    for (Value in : tx::attentionInputs(op)) {
      if (!seen.insert(in).second)
        continue;
      // Every reader of the operand must be an attention input.
      if (!llvm::all_of(in.getUsers(),
                        [&](Operation *u) { return tx::readsAsAttentionInput(u, in); }))
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
    llvm::SmallVector<Value, 4> results = tx::attentionResults(op);
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
