//===- LossBiasGradient.cpp - tx-loss-bias-gradient -----------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// An LM head with a bias (BERT's masked-LM head) needs the bias gradient:
// the column sums of the loss gradient. In a bf16 step the f32 loss
// gradient is also rounded to bf16 for the head's two gradient GEMMs. With
// both readers the loss kernel had to write the whole gradient in f32
// (16384 x 30528: 2 GB), and a column sum read it back and wrote the bf16
// copy (1.06 ms on the H100). PyTorch's autocast sums the bf16 gradient
// (the bias gradient of an autocast F.linear is a reduction of its bf16
// output gradient): summing the rounded copy instead leaves the f32
// gradient one reader, the cast, which the loss kernel then absorbs (it
// writes bf16), and the sum reads 1 GB of bf16.
//
//===----------------------------------------------------------------------===//

#include "txopt/Dialect/Tx/Transforms/LossBiasGradient.h"
#include "txopt/Dialect/Tx/IR/TxOps.h"
#include "txopt/Dialect/Tx/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::txopt::tx {
#define GEN_PASS_DEF_LOSSBIASGRADIENTPASS
#include "txopt/Dialect/Tx/Transforms/Passes.h.inc"
} // namespace mlir::txopt::tx

using namespace mlir;
using namespace mlir::txopt;

namespace {

RankedTensorType tensorType(Value v) { return cast<RankedTensorType>(v.getType()); }

/// The readers of |grad| and of the reshapes of it, reshapes left out.
void collectReaders(Value grad, llvm::SmallVectorImpl<OpOperand *> &readers) {
  for (OpOperand &use : grad.getUses()) {
    if (auto reshape = dyn_cast<tx::ReshapeOp>(use.getOwner()))
      collectReaders(reshape.getResult(), readers);
    else
      readers.push_back(&use);
  }
}

/// Why the column sums of the loss gradient |grad| stay as they are, or ""
/// when they are rewritten; |narrowing| and |sums| are filled as found.
std::string whyNotRewritten(Value grad, tx::CastOp &narrowing,
                            llvm::SmallVectorImpl<tx::ReduceSumOp> &sums) {
  if (!tensorType(grad).getElementType().isF32())
    return "the loss gradient is not f32";
  llvm::SmallVector<OpOperand *> readers;
  collectReaders(grad, readers);
  std::string otherReader;
  for (OpOperand *use : readers) {
    Operation *user = use->getOwner();
    if (auto sum = dyn_cast<tx::ReduceSumOp>(user)) {
      sums.push_back(sum);
      continue;
    }
    auto castOp = dyn_cast<tx::CastOp>(user);
    Type to = castOp ? tensorType(castOp.getResult()).getElementType() : Type();
    if (castOp && (to.isBF16() || to.isF16()) && !narrowing) {
      narrowing = castOp;
      continue;
    }
    if (otherReader.empty())
      otherReader = "'" + user->getName().getStringRef().str() +
                    "' reads the f32 gradient too (it is stored in f32 anyway)";
  }
  if (!otherReader.empty())
    return otherReader;
  if (!narrowing)
    return "no cast rounds the gradient to bf16 or f16";
  if (sums.empty())
    return "nothing sums the gradient";
  return "";
}

void rewrite(Value grad, tx::CastOp narrowing, llvm::ArrayRef<tx::ReduceSumOp> sums) {
  OpBuilder b(grad.getContext());
  b.setInsertionPointAfterValue(grad);
  Location loc = narrowing.getLoc();
  RankedTensorType gradType = tensorType(grad);
  Type roundedElement = tensorType(narrowing.getResult()).getElementType();
  Value rounded = tx::CastOp::create(b, loc, gradType.clone(roundedElement), grad);
  Value widened = tx::CastOp::create(b, loc, gradType, rounded);
  auto asShape = [](Value v, RankedTensorType type, Operation *before) -> Value {
    if (tensorType(v).getShape() == type.getShape())
      return v;
    OpBuilder at(before);
    return tx::ReshapeOp::create(at, before->getLoc(), type, v);
  };
  llvm::SmallVector<Value> oldInputs{narrowing.getInput()};
  for (tx::ReduceSumOp sum : sums) {
    oldInputs.push_back(sum.getInput());
    sum->setOperand(0, asShape(widened, tensorType(sum.getInput()), sum));
  }
  narrowing.getResult().replaceAllUsesWith(
      asShape(rounded, tensorType(narrowing.getResult()), narrowing));
  narrowing.erase();
  // The reshapes that only led to the old rounding or to the sums (two of
  // them may have read the same one: erased once, when nothing reads it).
  llvm::SmallSetVector<Operation *, 4> work;
  for (Value old : oldInputs)
    if (auto reshape = old.getDefiningOp<tx::ReshapeOp>())
      work.insert(reshape);
  while (!work.empty()) {
    Operation *reshape = work.pop_back_val();
    if (!reshape->use_empty())
      continue;
    if (auto input = reshape->getOperand(0).getDefiningOp<tx::ReshapeOp>())
      work.insert(input);
    reshape->erase();
  }
}

struct LossBiasGradientPass : public tx::impl::LossBiasGradientPassBase<LossBiasGradientPass> {
  void runOnOperation() override {
    tx::LossBiasGradientResult result = tx::sumRoundedLossGradients(getOperation());
    // The must-not-fire cases say why in a remark (lit checks them).
    for (auto &[op, why] : result.left)
      op->emitRemark("loss gradient's column sums not moved to its rounded copy: ") << why;
  }
};

} // namespace

tx::LossBiasGradientResult tx::sumRoundedLossGradients(func::FuncOp func) {
  LossBiasGradientResult result;
  if (func.isExternal())
    return result;
  llvm::SmallVector<tx::SoftmaxCrossEntropyGradOp> grads;
  func.walk([&](tx::SoftmaxCrossEntropyGradOp op) { grads.push_back(op); });
  for (tx::SoftmaxCrossEntropyGradOp op : grads) {
    tx::CastOp narrowing;
    llvm::SmallVector<tx::ReduceSumOp> sums;
    std::string why = whyNotRewritten(op.getResult(), narrowing, sums);
    if (!why.empty()) {
      // Only a gradient something sums is worth a word: an LM head without
      // a bias (GPT-2's) has no column sum at all.
      if (!sums.empty())
        result.left.push_back({op, why});
      continue;
    }
    rewrite(op.getResult(), narrowing, sums);
    ++result.rewritten;
  }
  return result;
}
