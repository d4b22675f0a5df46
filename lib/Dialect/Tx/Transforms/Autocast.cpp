//===- Autocast.cpp - tx-autocast: GEMMs in bf16 / fp16 -------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// The mixed-precision policy of `txopt --precision`: matrix products and
// fused attention run in the low-precision type, everything else
// (reductions, softmax, norm statistics, the loss, the optimizer) stays f32.
// Attention follows torch.autocast (scaled_dot_product_attention runs in the
// low type); its row log-sum-exp and its mask keep their types. Run on the forward before
// tx-build-train-step: the gradient rules then give the backward GEMMs the
// same precision, and the casts differentiate to casts, so gradients reach
// the f32 master weights in f32.
//
//===----------------------------------------------------------------------===//

#include "txopt/Dialect/Tx/IR/TxOps.h"
#include "txopt/Dialect/Tx/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringSwitch.h"

namespace mlir::txopt::tx {
#define GEN_PASS_DEF_AUTOCASTPASS
#include "txopt/Dialect/Tx/Transforms/Passes.h.inc"
} // namespace mlir::txopt::tx

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::tx;

std::optional<GemmPrecision> tx::parseGemmPrecision(StringRef text) {
  return llvm::StringSwitch<std::optional<GemmPrecision>>(text)
      .Case("fp32", GemmPrecision::fp32)
      .Case("bf16", GemmPrecision::bf16)
      .Case("fp16", GemmPrecision::fp16)
      .Default(std::nullopt);
}

namespace {

bool isF32Tensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.getElementType().isF32();
}

Type withElementType(Type type, Type element) {
  return RankedTensorType::get(cast<RankedTensorType>(type).getShape(), element);
}

struct AutocastPass : tx::impl::AutocastPassBase<AutocastPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    // fp32 is never parsed (the option lists bf16|fp16); a pipeline built
    // in C++ that asks for it gets no casts.
    if (precision == GemmPrecision::fp32)
      return;
    Type low = precision == GemmPrecision::fp16
                   ? Type(Float16Type::get(&getContext()))
                   : Type(BFloat16Type::get(&getContext()));
    SmallVector<Operation *> gemms;
    SmallVector<AttentionOp> attentions;
    func.walk([&](Operation *op) {
      if (isa<MatMulOp, GemmOp>(op) &&
          llvm::all_of(op->getOperandTypes(), isF32Tensor) &&
          isF32Tensor(op->getResult(0).getType()))
        gemms.push_back(op);
      if (auto attention = dyn_cast<AttentionOp>(op))
        if (isF32Tensor(attention.getQ().getType()))
          attentions.push_back(attention);
    });
    OpBuilder builder(&getContext());
    for (Operation *op : gemms) {
      builder.setInsertionPoint(op);
      // Cast each operand once per GEMM; CSE merges casts of a value that
      // several GEMMs read (a weight used forward and backward).
      SmallVector<Value> operands;
      for (Value operand : op->getOperands())
        operands.push_back(CastOp::create(builder, op->getLoc(),
                                          withElementType(operand.getType(), low),
                                          operand));
      OperationState state(op->getLoc(), op->getName());
      state.addOperands(operands);
      state.addAttributes(op->getAttrs());
      state.addTypes(withElementType(op->getResult(0).getType(), low));
      Operation *lowered = builder.create(state);
      Value back = CastOp::create(builder, op->getLoc(),
                                  op->getResult(0).getType(),
                                  lowered->getResult(0));
      op->getResult(0).replaceAllUsesWith(back);
      op->erase();
    }
    // q, k and v to the low type, the output back to f32; the gradient rule
    // then gives tx.attention_grad the same types (the casts differentiate
    // to casts).
    for (AttentionOp op : attentions) {
      builder.setInsertionPoint(op);
      auto toLow = [&](Value value) -> Value {
        return CastOp::create(builder, op.getLoc(),
                              withElementType(value.getType(), low), value);
      };
      // One statement each: the casts come out in q, k, v order.
      Value q = toLow(op.getQ());
      Value k = toLow(op.getK());
      Value v = toLow(op.getV());
      auto lowered = AttentionOp::create(
          builder, op.getLoc(), q, k, v, op.getMask(), op.getDropoutKey(),
          op.getScaleAttr(), op.getCausalAttr(), op.getWindowAttr(),
          op.getDropoutRatioAttr(), op.getDropoutSeedAttr());
      Value back = CastOp::create(builder, op.getLoc(),
                                  op.getResult().getType(), lowered.getResult());
      op.getResult().replaceAllUsesWith(back);
      op.getLse().replaceAllUsesWith(lowered.getLse());
      op.erase();
    }
  }
};

} // namespace
