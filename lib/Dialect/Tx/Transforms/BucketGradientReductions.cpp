//===- BucketGradientReductions.cpp - reduce-scatters into the backward ---===//
//
// SPDX-License-Identifier: Apache-2.0
// tx-bucket-gradient-reductions (Passes.td): moves a data-parallel step's
// gradient reduce-scatters up to where their gradients are complete,
// gathered into buckets, so that the GPU runs them beside the rest of the
// backward.
//
//===----------------------------------------------------------------------===//

#include "txopt/Dialect/Tx/IR/StepContract.h"
#include "txopt/Dialect/Tx/IR/TxOps.h"
#include "txopt/Dialect/Tx/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::txopt::tx {
#define GEN_PASS_DEF_BUCKETGRADIENTREDUCTIONSPASS
#include "txopt/Dialect/Tx/Transforms/Passes.h.inc"
} // namespace mlir::txopt::tx

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::tx;

namespace {

/// A reduce-scatter, the ops that compute its input for it alone (the
/// flatten and the zero padding), and the last op before it that it
/// depends on otherwise: where its input is complete.
struct Reduction {
  ReduceScatterOp op;
  SmallVector<Operation *> feeders; ///< in block order
  Operation *ready = nullptr;       ///< null: only block arguments
  int64_t bytes = 0;
};

/// Whether every user of |op|'s results is |consumer| or in |chain|.
bool feedsOnly(Operation *op, Operation *consumer,
               const llvm::SetVector<Operation *> &chain) {
  for (Operation *user : op->getUsers())
    if (user != consumer && !chain.contains(user))
      return false;
  return true;
}

Reduction analyze(ReduceScatterOp op) {
  Reduction r;
  r.op = op;
  auto type = cast<RankedTensorType>(op.getInput().getType());
  r.bytes = type.getNumElements() * ((type.getElementTypeBitWidth() + 7) / 8);
  // The reshapes and the padding concat (and its zeros) tx-data-parallel
  // built for this reduce-scatter alone.
  llvm::SetVector<Operation *> chain;
  SmallVector<Value> work{op.getInput()};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    Operation *def = v.getDefiningOp();
    if (!def || def->getBlock() != op->getBlock() ||
        !isa<ReshapeOp, ConcatOp, ConstantOp>(def) || !feedsOnly(def, op, chain) ||
        chain.contains(def))
      continue;
    chain.insert(def);
    for (Value operand : def->getOperands())
      work.push_back(operand);
  }
  r.feeders.assign(chain.begin(), chain.end());
  llvm::sort(r.feeders, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  // The latest op outside the chain that the chain or the reduce-scatter
  // reads (a value defined in a nested region counts by its ancestor in
  // the step's body).
  auto consider = [&](Value v) {
    Operation *def = v.getDefiningOp();
    if (def)
      def = op->getBlock()->findAncestorOpInBlock(*def);
    if (!def || chain.contains(def))
      return;
    if (!r.ready || r.ready->isBeforeInBlock(def))
      r.ready = def;
  };
  for (Operation *feeder : r.feeders)
    for (Value operand : feeder->getOperands())
      consider(operand);
  consider(op.getInput());
  return r;
}

/// Moves |step|'s reduce-scatters into buckets of at least |bucketBytes|.
void bucketReductions(func::FuncOp step, int64_t bucketBytes) {
  Block &body = step.getBody().front();
  // Only those of the step's body whose input is complete before the first
  // reduce-scatter (a gradient, as tx-data-parallel places them all after
  // the backward): one that reads another's result, even through other
  // ops, stays where it is, since moving the two together could put the
  // first below what reads it.
  ReduceScatterOp firstReduction;
  for (auto op : body.getOps<ReduceScatterOp>()) {
    firstReduction = op;
    break;
  }
  if (!firstReduction)
    return;
  SmallVector<Reduction> reductions;
  for (auto op : body.getOps<ReduceScatterOp>()) {
    Reduction r = analyze(op);
    if (!r.ready || r.ready->isBeforeInBlock(firstReduction))
      reductions.push_back(std::move(r));
  }
  if (reductions.empty())
    return;
  // In the order the gradients become complete (those complete from the
  // start first), keeping their order where they tie.
  llvm::stable_sort(reductions, [](const Reduction &a, const Reduction &b) {
    if (!a.ready || !b.ready)
      return !a.ready && b.ready;
    return a.ready->isBeforeInBlock(b.ready);
  });
  int64_t bucket = 0, filled = 0;
  size_t first = 0;
  OpBuilder builder(step.getContext());
  for (size_t i = 0; i < reductions.size(); ++i) {
    filled += reductions[i].bytes;
    if (filled < bucketBytes && i + 1 < reductions.size())
      continue;
    // Bucket [first, i], right after its last gradient: every feeder
    // first, then the reduce-scatters together (one group of collectives).
    SmallVector<Operation *> moved;
    for (size_t k = first; k <= i; ++k)
      llvm::append_range(moved, reductions[k].feeders);
    for (size_t k = first; k <= i; ++k) {
      moved.push_back(reductions[k].op);
      reductions[k].op->setAttr(kBucketAttrName, builder.getI64IntegerAttr(bucket));
    }
    Operation *after = reductions[i].ready;
    for (Operation *op : moved) {
      if (after)
        op->moveAfter(after);
      else if (op != &body.front())
        op->moveBefore(&body.front());
      after = op;
    }
    ++bucket;
    filled = 0;
    first = i + 1;
  }
}

struct BucketGradientReductionsPass
    : tx::impl::BucketGradientReductionsPassBase<BucketGradientReductionsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (bucketBytes < 0) {
      getOperation().emitError("tx-bucket-gradient-reductions: expected bucket-bytes >= 0, "
                               "but got ")
          << static_cast<int64_t>(bucketBytes);
      return signalPassFailure();
    }
    if (bucketBytes == 0)
      return;
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      auto recipe = func->getAttrOfType<DictionaryAttr>(kTrainStepAttrName);
      if (recipe && recipe.get("data_parallel"))
        bucketReductions(func, bucketBytes);
    }
  }
};

} // namespace
