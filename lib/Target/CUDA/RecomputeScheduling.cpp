//===- RecomputeScheduling.cpp - recomputes written by a column sum -------===//
//
// SPDX-License-Identifier: Apache-2.0
// tx-rematerialize recomputes the MLP's activation (GELU's bf16 output) in
// the backward, right before the weight-gradient GEMM that reads it: one
// kernel reading the first GEMM's output and writing the activation, 2 x
// 100 MB per GPT-2 layer. A few ops later the activation's gradient and its
// bias gradient (a column sum) read that same GEMM output again. So the
// column sum is moved up to just before the recompute, with the ops it
// depends on, and its kernel then writes the recomputed activation as it
// walks the rows (ReductionKernels.cpp, lowerColumnReduction): the
// recompute's own kernel, and its reads, disappear.
//
// Moving pure ops whose operands are all defined before the place they go
// to keeps the program's meaning; nothing else moves.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "KernelBuilder.h"
#include "txopt/Dialect/Tx/IR/TxOps.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mlir::txopt;

namespace {

/// How far after the recompute the column sum is looked for, in ops (the
/// GELU gradient's chain is about 20).
constexpr unsigned kSearchWindow = 64;

/// The values |value| is computed from through ops the elemental emitter
/// inlines: what a kernel computing it reads (constants left out).
void chainLeaves(Value value, llvm::SetVector<Value> &leaves,
                 llvm::DenseSet<Operation *> &seen) {
  Operation *def = value.getDefiningOp();
  if (def && def->hasTrait<OpTrait::ConstantLike>())
    return;
  if (!def || !cuda::isElementalOp(def)) {
    leaves.insert(value);
    return;
  }
  if (!seen.insert(def).second)
    return;
  for (Value operand : def->getOperands())
    chainLeaves(operand, leaves, seen);
}

llvm::SetVector<Value> leavesOf(Value value) {
  llvm::SetVector<Value> leaves;
  llvm::DenseSet<Operation *> seen;
  chainLeaves(value, leaves, seen);
  return leaves;
}

/// Whether every reader of |value|, through reshapes and transposes, is a
/// GEMM: it is materialized for them and nothing else computes from it.
bool readOnlyByGemms(Value value) {
  for (Operation *user : value.getUsers()) {
    if (isa<tx::ReshapeOp, tx::TransposeOp>(user)) {
      if (!readOnlyByGemms(user->getResult(0)))
        return false;
      continue;
    }
    if (!isa<tx::MatMulOp, tx::GemmOp>(user))
      return false;
  }
  return !value.use_empty();
}

/// A sum over leading axes of a tensor shaped like |shape| (a bias
/// gradient), the kind lowerColumnReduction lowers, of a value that only
/// reductions and casts read: the sum's kernel computes it (the grouping
/// never stores such a value), so its kernel reads what the value is
/// computed from. In an f32 step the gradient is stored for the GEMMs, and
/// its sum reads only that.
bool isColumnSumOver(Operation *op, llvm::ArrayRef<int64_t> shape) {
  auto sum = dyn_cast<tx::ReduceSumOp>(op);
  if (!sum || !llvm::all_of(sum->getOperand(0).getUsers(), [](Operation *user) {
        return isa<tx::ReduceSumOp, tx::ReduceMeanOp, tx::ReduceMaxOp, tx::CastOp>(user);
      }))
    return false;
  auto type = dyn_cast<RankedTensorType>(sum->getOperand(0).getType());
  if (!type || type.getShape() != shape)
    return false;
  llvm::ArrayRef<int64_t> axes = sum.getAxes();
  if (axes.empty() || static_cast<int64_t>(axes.size()) >= type.getRank())
    return false;
  for (auto [i, axis] : llvm::enumerate(axes))
    if (axis != static_cast<int64_t>(i))
      return false;
  return true;
}

/// The ops strictly after |from| up to and including |sum| that |sum|
/// depends on, in block order, if all of them are pure and each operand
/// outside them is defined before |from|; otherwise empty.
llvm::SmallVector<Operation *> dependenciesAfter(Operation *from, Operation *sum) {
  llvm::SetVector<Operation *> needed;
  llvm::SmallVector<Operation *> work{sum};
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    if (!needed.insert(op))
      continue;
    for (Value operand : op->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (def && def->getBlock() == from->getBlock() && from->isBeforeInBlock(def))
        work.push_back(def);
      else if (def == from)
        return {};
    }
  }
  llvm::SmallVector<Operation *> ordered(needed.begin(), needed.end());
  if (llvm::any_of(ordered, [](Operation *op) { return !isPure(op) || op->getNumRegions(); }))
    return {};
  llvm::sort(ordered, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  return ordered;
}

} // namespace

void cuda::scheduleRecomputesIntoColumnSums(func::FuncOp func,
                                            llvm::ArrayRef<Value> recomputed,
                                            llvm::DenseMap<Operation *, Value> &pairs) {
  for (Value value : recomputed) {
    Operation *def = value.getDefiningOp();
    auto type = dyn_cast<RankedTensorType>(value.getType());
    if (!def || !cuda::isElementalOp(def) || !type || def->getParentOp() != func ||
        !readOnlyByGemms(value))
      continue;
    llvm::SetVector<Value> needs = leavesOf(value);
    if (needs.empty())
      continue;
    Operation *sum = nullptr;
    unsigned scanned = 0;
    for (Operation *op = def->getNextNode(); op && scanned < kSearchWindow;
         op = op->getNextNode(), ++scanned) {
      if (!isColumnSumOver(op, type.getShape()) || pairs.count(op))
        continue;
      llvm::SetVector<Value> reads = leavesOf(op->getOperand(0));
      if (llvm::all_of(needs, [&](Value v) { return reads.contains(v); })) {
        sum = op;
        break;
      }
    }
    if (!sum)
      continue;
    llvm::SmallVector<Operation *> moved = dependenciesAfter(def, sum);
    if (moved.empty())
      continue;
    // Up, in order, to just before the recompute's last op: the sum's
    // kernel then comes first, and writes the value for its readers.
    for (Operation *op : moved)
      op->moveBefore(def);
    pairs[sum] = value;
  }
}
