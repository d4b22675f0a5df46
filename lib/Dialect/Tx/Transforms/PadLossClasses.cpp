//===- PadLossClasses.cpp - tx-pad-loss-classes ---------------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// A language model's head, logits[M, C] = x[M, K] W[K, C] (+ bias), with a
// vocabulary C that is not a multiple of 8 (BERT's 30522) gives the GEMMs
// that compute the logits and their gradients rows of C * 2 bytes that are
// not 16-byte aligned, and cuBLASLt then runs them several times slower
// (3.1 ms against 1.0 ms for an aligned vocabulary of 32000 on an H200:
// bench/NOTES.md session 44). This pass pads the classes to the next
// multiple of 8 before the loss: the weight gets zero columns, the logits
// of the padded classes get kPadLossLogit through the bias (a padded copy
// of the model's bias, or a constant where it has none), and the loss runs
// over the padded rows. Exact: a padded class's probability is
// exp(kPadLossLogit - max) = 0, so the softmax's sum, the loss and the
// real classes' gradients are the same values, and the padded classes'
// gradients are exactly 0 (their labels never occur); autodiff slices the
// weight's and bias's gradients back to C.
//
//===----------------------------------------------------------------------===//

#include "txopt/Dialect/Tx/Transforms/PadLossClasses.h"
#include "txopt/Dialect/Tx/IR/TxOps.h"
#include "txopt/Dialect/Tx/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

namespace mlir::txopt::tx {
#define GEN_PASS_DEF_PADLOSSCLASSESPASS
#include "txopt/Dialect/Tx/Transforms/Passes.h.inc"
} // namespace mlir::txopt::tx

using namespace mlir;
using namespace mlir::txopt;

namespace {

RankedTensorType tensorType(Value v) { return cast<RankedTensorType>(v.getType()); }

struct PadLossClassesPass : public tx::impl::PadLossClassesPassBase<PadLossClassesPass> {
  void runOnOperation() override { tx::padLossClasses(getOperation()); }
};

/// The chain from the head's GEMM to the loss's scores: the matmul, the
/// bias add (or null) and the reshapes between them and the loss (last
/// first), each value used once, the classes last throughout.
struct Head {
  tx::MatMulOp matmul;
  tx::AddOp biasAdd;
  llvm::SmallVector<tx::ReshapeOp> reshapes;
  Value bias;
};

bool classesLast(Value v, int64_t classes) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return type && type.hasStaticShape() && type.getRank() >= 1 &&
         type.getShape().back() == classes;
}

/// The head feeding |loss|'s scores, or nothing when the scores come from
/// anything else or are read elsewhere too (the logits as an output).
std::optional<Head> matchHead(tx::SoftmaxCrossEntropyLossOp loss, int64_t classes) {
  Head head;
  Value v = loss.getScores();
  while (auto reshape = v.getDefiningOp<tx::ReshapeOp>()) {
    if (!v.hasOneUse() || !classesLast(reshape.getInput(), classes))
      return std::nullopt;
    head.reshapes.push_back(reshape);
    v = reshape.getInput();
  }
  if (auto add = v.getDefiningOp<tx::AddOp>()) {
    if (!v.hasOneUse())
      return std::nullopt;
    // The bias: a [C] row vector beside the GEMM's output.
    for (auto [gemmSide, biasSide] : {std::pair{0u, 1u}, std::pair{1u, 0u}}) {
      Value bias = add->getOperand(biasSide);
      auto biasType = dyn_cast<RankedTensorType>(bias.getType());
      if (add->getOperand(gemmSide).getDefiningOp<tx::MatMulOp>() && biasType &&
          biasType.getRank() == 1 && biasType.getShape()[0] == classes &&
          biasType.getElementType() == tensorType(v).getElementType()) {
        head.biasAdd = add;
        head.bias = bias;
        v = add->getOperand(gemmSide);
        break;
      }
    }
    if (!head.biasAdd)
      return std::nullopt;
  }
  auto matmul = v.getDefiningOp<tx::MatMulOp>();
  if (!matmul || !v.hasOneUse() || !classesLast(v, classes))
    return std::nullopt;
  auto weightType = tensorType(matmul.getRhs());
  if (weightType.getRank() != 2 || !weightType.hasStaticShape())
    return std::nullopt;
  head.matmul = matmul;
  return head;
}

/// |type| with its last dim |classes|.
RankedTensorType withClasses(RankedTensorType type, int64_t classes) {
  llvm::SmallVector<int64_t> shape(type.getShape());
  shape.back() = classes;
  return RankedTensorType::get(shape, type.getElementType());
}

/// ONNX Pad's constant mode (the fill is the op's value).
tx::PadModeAttr constantMode(OpBuilder &b) {
  return tx::PadModeAttr::get(b.getContext(), tx::PadMode::constant);
}

/// |weight| [K, C] with |extra| zero columns. A transposed [C, K] table (a
/// tied embedding) is padded before its transpose, so the GEMM still reads
/// the table through the transpose it folds into its operand.
Value padWeight(OpBuilder &b, Location loc, Value weight, int64_t extra) {
  if (auto transpose = weight.getDefiningOp<tx::TransposeOp>();
      transpose && transpose.getPerm() == ArrayRef<int64_t>{1, 0}) {
    Value table = transpose.getInput();
    auto tableType = tensorType(table);
    Value padded = tx::PadOp::create(b, loc, table, b.getDenseI64ArrayAttr({0, 0, extra, 0}),
                                     constantMode(b), b.getF64FloatAttr(0.0));
    return tx::TransposeOp::create(
        b, loc, withClasses(tensorType(weight), tableType.getShape()[0] + extra), padded,
        transpose.getPermAttr());
  }
  return tx::PadOp::create(b, loc, weight, b.getDenseI64ArrayAttr({0, 0, 0, extra}),
                           constantMode(b), b.getF64FloatAttr(0.0));
}

/// The bias over the padded classes: the model's, or zeros (a splat
/// constant), padded with kPadLossLogit.
Value paddedBias(OpBuilder &b, Location loc, Value bias, Type elementType, int64_t classes,
                 int64_t padded) {
  if (!bias) {
    auto type = RankedTensorType::get({classes}, elementType);
    bias = tx::ConstantOp::create(b, loc, type,
                                  DenseElementsAttr::get(type, b.getFloatAttr(elementType, 0.0)));
  }
  return tx::PadOp::create(b, loc, bias, b.getDenseI64ArrayAttr({0, padded - classes}),
                           constantMode(b), b.getF64FloatAttr(tx::kPadLossLogit));
}

} // namespace

unsigned tx::padLossClasses(func::FuncOp func) {
  unsigned padded = 0;
  if (func.isExternal())
    return padded;
  llvm::SmallVector<tx::SoftmaxCrossEntropyLossOp> losses;
  func.walk([&](tx::SoftmaxCrossEntropyLossOp loss) { losses.push_back(loss); });
  for (tx::SoftmaxCrossEntropyLossOp loss : losses) {
    // Rows of classes ([M, C]: [N, C, d...] scores keep the classes off the
    // last axis), no class weights (they would need padding too).
    auto scoresType = tensorType(loss.getScores());
    if (scoresType.getRank() != 2 || !scoresType.hasStaticShape() || loss.getWeights())
      continue;
    int64_t classes = scoresType.getShape()[1];
    if (classes < kPadLossMinClasses || classes % kPadLossClassMultiple == 0)
      continue;
    std::optional<Head> head = matchHead(loss, classes);
    if (!head)
      continue;
    int64_t paddedClasses = llvm::alignTo(classes, kPadLossClassMultiple);
    Location loc = head->matmul.getLoc();
    OpBuilder b(head->matmul);
    Value weight = padWeight(b, loc, head->matmul.getRhs(), paddedClasses - classes);
    auto logitsType = withClasses(tensorType(head->matmul.getResult()), paddedClasses);
    Value logits = tx::MatMulOp::create(b, loc, logitsType, head->matmul.getLhs(), weight);
    b.setInsertionPoint(head->biasAdd ? head->biasAdd.getOperation() : head->matmul.getOperation());
    Location biasLoc = head->biasAdd ? head->biasAdd.getLoc() : loc;
    Value bias = paddedBias(b, biasLoc, head->bias, logitsType.getElementType(), classes,
                            paddedClasses);
    logits = tx::AddOp::create(b, biasLoc, logitsType, logits, bias);
    // The reshapes from the GEMM's output outward (collected loss-first).
    for (tx::ReshapeOp reshape : llvm::reverse(head->reshapes)) {
      b.setInsertionPoint(reshape);
      logits = tx::ReshapeOp::create(
          b, reshape.getLoc(), withClasses(tensorType(reshape.getResult()), paddedClasses), logits);
    }
    b.setInsertionPoint(loss);
    Value value = tx::SoftmaxCrossEntropyLossOp::create(
        b, loss.getLoc(), loss.getType(), logits, loss.getLabels(), Value(),
        loss.getReductionAttr(), loss.getIgnoreIndexAttr());
    // The class count before padding, for txopt's report (and a reader of
    // the IR): the op's type says only the padded one.
    value.getDefiningOp()->setAttr(kPaddedClassesAttr, b.getI64IntegerAttr(classes));
    loss.getResult().replaceAllUsesWith(value);
    loss.erase();
    for (tx::ReshapeOp reshape : head->reshapes)
      reshape.erase();
    if (head->biasAdd)
      head->biasAdd.erase();
    Operation *oldWeight = head->matmul.getRhs().getDefiningOp();
    head->matmul.erase();
    if (oldWeight && isa<tx::TransposeOp>(oldWeight) && oldWeight->use_empty())
      oldWeight->erase();
    ++padded;
  }
  return padded;
}
