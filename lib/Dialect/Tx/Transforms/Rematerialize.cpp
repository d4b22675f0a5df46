//===- Rematerialize.cpp - tx-rematerialize -------------------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// Recomputes a stored elementwise value where a much later reader (the
// backward) reads it, from values alive there anyway, so the stored copy
// dies at its last early reader (Passes.td). The memory this frees is the
// GPU step's: its plan keeps a value from its producer to its last reader.
//
//===----------------------------------------------------------------------===//

#include "txopt/Dialect/Tx/IR/TxOps.h"
#include "txopt/Dialect/Tx/Transforms/Passes.h"
#include "txopt/Dialect/Tx/Transforms/Rematerialize.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::txopt::tx {
#define GEN_PASS_DEF_REMATERIALIZEPASS
#include "txopt/Dialect/Tx/Transforms/Passes.h.inc"
} // namespace mlir::txopt::tx

using namespace mlir;
using namespace mlir::txopt;

namespace {

/// The most ops one recomputation may clone: GELU's tanh form with its
/// bias add and casts is 10.
constexpr unsigned kMaxChainOps = 16;

/// Pure ops that compute each result element from the operand elements at
/// the same (broadcast) index: cheap to run again, fused into one kernel.
bool isElementwise(Operation *op) {
  if (op->getNumResults() != 1 || op->getNumRegions() != 0 || !isPure(op))
    return false;
  return op->hasTrait<OpTrait::Elementwise>() ||
         isa<tx::AddOp, tx::SubOp, tx::MulOp, tx::DivOp, tx::PowOp, tx::MaxOp,
             tx::MinOp, tx::WhereOp>(op);
}

/// Ops that only re-index their operand.
bool isView(Operation *op) {
  return isa<tx::ReshapeOp, tx::TransposeOp, tx::SqueezeOp, tx::UnsqueezeOp>(op);
}

/// Ops long enough that holding a value across them is worth a recompute.
bool isHeavy(Operation *op) {
  return isa<tx::MatMulOp, tx::GemmOp, tx::FP8MatmulOp, tx::BlasGemmOp, tx::AttentionOp,
             tx::AttentionGradOp>(op);
}

/// Whether some reader of |value|, through views, needs it in memory (a
/// GEMM, a norm, a reduction...) rather than computing it in its kernel.
bool isReadFromMemory(Value value) {
  for (Operation *user : value.getUsers()) {
    if (isElementwise(user))
      continue;
    if (!isView(user) || isReadFromMemory(user->getResult(0)))
      return true;
  }
  return false;
}

/// Whether |value| is alive at |at| without any recomputation: a block
/// argument, a constant, or read by |at| or a later op of the block.
bool isAliveAt(Value value, Operation *at) {
  Operation *def = value.getDefiningOp();
  if (!def || def->hasTrait<OpTrait::ConstantLike>())
    return true;
  return llvm::any_of(value.getUsers(), [&](Operation *user) {
    return user == at || at->isBeforeInBlock(user);
  });
}

/// Collects into |chain|, operands before users, the ops that compute
/// |value| from values alive at |at|. Fails when it meets an op that is not
/// elementwise or the chain grows past kMaxChainOps.
bool collectChain(Value value, Value root, Operation *at,
                  llvm::SetVector<Operation *> &chain) {
  if (value != root && isAliveAt(value, at))
    return true;
  Operation *def = value.getDefiningOp();
  if (!def || !isElementwise(def))
    return false;
  if (chain.contains(def))
    return true;
  for (Value operand : def->getOperands())
    if (!collectChain(operand, root, at, chain))
      return false;
  if (chain.size() >= kMaxChainOps)
    return false;
  chain.insert(def);
  return true;
}

/// Whether |chain| reads an activation (a value some op computed), not only
/// step arguments and constants. A weight's bf16 copy is recomputed from
/// the f32 weight alone: it stays stored, because re-reading every weight
/// in the backward costs more time per byte saved than an activation's
/// recompute and frees little (GPT-2: 170 MB of weights against 1.2 GB of
/// GELU outputs).
bool readsActivation(const llvm::SetVector<Operation *> &chain) {
  for (Operation *op : chain)
    for (Value operand : op->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (def && !chain.contains(def) && !def->hasTrait<OpTrait::ConstantLike>())
        return true;
    }
  return false;
}

/// Whether a heavy op lies strictly between |from| and |to|.
bool heavyOpBetween(Operation *from, Operation *to) {
  for (Operation *op = from->getNextNode(); op && op != to; op = op->getNextNode())
    if (isHeavy(op))
      return true;
  return false;
}

/// Recomputes |root| for its late readers if it can; returns the copy, or
/// null.
Value rematerialize(Value root) {
  llvm::SmallVector<Operation *> readers;
  Block *block = root.getDefiningOp()->getBlock();
  for (Operation *user : root.getUsers()) {
    if (user->getBlock() != block) // program order is a block's
      return nullptr;
    if (!llvm::is_contained(readers, user))
      readers.push_back(user);
  }
  if (readers.size() < 2)
    return nullptr;
  llvm::sort(readers, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  for (size_t i = 1; i < readers.size(); ++i) {
    Operation *late = readers[i];
    if (!heavyOpBetween(readers[i - 1], late))
      continue;
    llvm::SetVector<Operation *> chain;
    if (!collectChain(root, root, late, chain) || !readsActivation(chain))
      continue;
    OpBuilder builder(late);
    IRMapping mapping;
    for (Operation *op : chain)
      builder.clone(*op, mapping);
    Value clone = mapping.lookup(root);
    for (size_t j = i; j < readers.size(); ++j)
      readers[j]->replaceUsesOfWith(root, clone);
    return clone;
  }
  return nullptr;
}

struct RematerializePass
    : public tx::impl::RematerializePassBase<RematerializePass> {
  void runOnOperation() override { tx::rematerializeForBackward(getOperation()); }
};

} // namespace

tx::RematerializeResult tx::rematerializeForBackward(func::FuncOp func) {
  RematerializeResult result;
  if (func.isExternal())
    return result;
  // Candidates first: the clones go into the block being scanned.
  llvm::SmallVector<Value> candidates;
  for (Operation &op : func.getBody().front())
    if (isElementwise(&op) && isa<RankedTensorType>(op.getResult(0).getType()) &&
        isReadFromMemory(op.getResult(0)))
      candidates.push_back(op.getResult(0));
  for (Value candidate : candidates) {
    Value copy = rematerialize(candidate);
    if (!copy)
      continue;
    result.recomputed.push_back(copy);
    auto type = cast<RankedTensorType>(candidate.getType());
    ++result.values;
    if (type.hasStaticShape())
      result.bytes += static_cast<uint64_t>(type.getNumElements()) *
                      ((type.getElementTypeBitWidth() + 7) / 8);
  }
  return result;
}
