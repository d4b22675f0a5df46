//===- CrossEntropyRows.cpp - tx-cross-entropy-rows -----------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// ONNX's SoftmaxCrossEntropyLoss puts the classes on axis 1: scores
// [N, C, d1, ..., dk] with labels [N, d1, ..., dk] (a per-token loss over
// [B, V, T] logits, a segmentation map). A row kernel (the GPU's loss and
// gradient kernels) wants each position's classes contiguous: [M, C] rows,
// M = N * d1 * ... * dk. This pass moves the class axis last with one
// tx.transpose, flattens scores and labels to rows, runs the op there, and
// brings the results back: a `none` loss reshaped to [N, d...], the
// gradient reshaped to [N, d..., C] and transposed back to [N, C, d...].
// Exact: every position's loss and gradient are computed from the same
// values in the same order; only where the elements sit changes. Ops that
// read the same scores and labels (the loss and its gradient) share the
// flattened operands.
//
//===----------------------------------------------------------------------===//

#include "txopt/Dialect/Tx/Transforms/CrossEntropyRows.h"
#include "txopt/Dialect/Tx/IR/TxOps.h"
#include "txopt/Dialect/Tx/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace mlir::txopt::tx {
#define GEN_PASS_DEF_CROSSENTROPYROWSPASS
#include "txopt/Dialect/Tx/Transforms/Passes.h.inc"
} // namespace mlir::txopt::tx

using namespace mlir;
using namespace mlir::txopt;

namespace {

RankedTensorType tensorType(Value v) { return cast<RankedTensorType>(v.getType()); }

struct CrossEntropyRowsPass
    : public tx::impl::CrossEntropyRowsPassBase<CrossEntropyRowsPass> {
  void runOnOperation() override { tx::crossEntropyOverRows(getOperation()); }
};

/// The row forms of scores and labels, made once per pair, and the
/// scores' type with the classes moved last ([N, d..., C]), which the
/// gradient is reshaped back to before its inverse transpose.
struct Rows {
  Value scores, labels;
  RankedTensorType classesLast;
};

/// [N, C, d...] -> [N, d..., C] -> [N * d..., C], and [N, d...] -> [N * d...],
/// at |b|'s insertion point.
Rows toRows(OpBuilder &b, Location loc, Value scores, Value labels) {
  auto sType = tensorType(scores);
  int64_t rank = sType.getRank();
  llvm::SmallVector<int64_t> perm{0};
  for (int64_t d = 2; d < rank; ++d)
    perm.push_back(d);
  perm.push_back(1);
  llvm::SmallVector<int64_t> moved;
  for (int64_t p : perm)
    moved.push_back(sType.getShape()[p]);
  int64_t classes = sType.getShape()[1];
  int64_t positions = tensorType(labels).getNumElements();
  auto classesLast = RankedTensorType::get(moved, sType.getElementType());
  Value transposed =
      tx::TransposeOp::create(b, loc, classesLast, scores, b.getDenseI64ArrayAttr(perm));
  Value rowScores = tx::ReshapeOp::create(
      b, loc, RankedTensorType::get({positions, classes}, sType.getElementType()), transposed);
  Value rowLabels = tx::ReshapeOp::create(
      b, loc, RankedTensorType::get({positions}, tensorType(labels).getElementType()), labels);
  return {rowScores, rowLabels, classesLast};
}

} // namespace

unsigned tx::crossEntropyOverRows(func::FuncOp func) {
  unsigned rewritten = 0;
  if (func.isExternal())
    return rewritten;
  llvm::SmallVector<Operation *> ops;
  func.walk([&](Operation *op) {
    if (auto loss = dyn_cast<tx::SoftmaxCrossEntropyLossOp>(op);
        loss && tensorType(loss.getScores()).getRank() > 2)
      ops.push_back(op);
    if (auto grad = dyn_cast<tx::SoftmaxCrossEntropyGradOp>(op);
        grad && tensorType(grad.getScores()).getRank() > 2)
      ops.push_back(op);
  });
  llvm::DenseMap<std::pair<Value, Value>, Rows> made;
  OpBuilder b(func.getContext());
  // The rows of |scores| and |labels|, built before |user| the first time
  // (the first op reading the pair comes first in the block, so the shared
  // values dominate the later ones).
  auto rowsFor = [&](Operation *user, Value scores, Value labels) {
    auto [it, inserted] = made.try_emplace({scores, labels});
    if (inserted) {
      b.setInsertionPoint(user);
      it->second = toRows(b, user->getLoc(), scores, labels);
    }
    return it->second;
  };
  for (Operation *op : ops) {
    Location loc = op->getLoc();
    if (auto loss = dyn_cast<tx::SoftmaxCrossEntropyLossOp>(op)) {
      Rows rows = rowsFor(op, loss.getScores(), loss.getLabels());
      b.setInsertionPoint(op);
      Type resultType = loss.getType();
      auto labelsType = tensorType(rows.labels);
      bool none = loss.getReduction() == tx::LossReduction::none;
      Type rowResultType =
          none ? RankedTensorType::get(labelsType.getShape(),
                                       tensorType(loss.getResult()).getElementType())
               : resultType;
      Value value = tx::SoftmaxCrossEntropyLossOp::create(
          b, loc, rowResultType, rows.scores, rows.labels, loss.getWeights(),
          loss.getReductionAttr(), loss.getIgnoreIndexAttr());
      if (none)
        value = tx::ReshapeOp::create(b, loc, resultType, value);
      loss.getResult().replaceAllUsesWith(value);
    } else {
      auto grad = cast<tx::SoftmaxCrossEntropyGradOp>(op);
      Rows rows = rowsFor(op, grad.getScores(), grad.getLabels());
      b.setInsertionPoint(op);
      Value g = grad.getGrad();
      if (grad.getReduction() == tx::LossReduction::none)
        g = tx::ReshapeOp::create(
            b, loc,
            RankedTensorType::get(tensorType(rows.labels).getShape(),
                                  tensorType(g).getElementType()),
            g);
      Value rowGrad = tx::SoftmaxCrossEntropyGradOp::create(
          b, loc, rows.scores.getType(), g, rows.scores, rows.labels, grad.getWeights(),
          grad.getReductionAttr(), grad.getIgnoreIndexAttr());
      // Back to [N, d..., C], then the classes back on axis 1.
      int64_t rank = rows.classesLast.getRank();
      Value unflat = tx::ReshapeOp::create(b, loc, rows.classesLast, rowGrad);
      llvm::SmallVector<int64_t> back{0, rank - 1};
      for (int64_t d = 1; d < rank - 1; ++d)
        back.push_back(d);
      Value result = tx::TransposeOp::create(b, loc, grad.getType(), unflat,
                                             b.getDenseI64ArrayAttr(back));
      grad.getResult().replaceAllUsesWith(result);
    }
    op->erase();
    ++rewritten;
  }
  return rewritten;
}
