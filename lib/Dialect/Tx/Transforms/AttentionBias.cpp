//===- AttentionBias.cpp - tx-attention-bias ---------------------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// cuDNN's fused attention takes a mask as an additive bias of the q type
// shaped [B|1, H|1, Tq, Tk]: it broadcasts over batch and heads, not over
// the query or key positions. An exported mask is often narrower (a
// [B, 1, 1, Tk] padding mask) or f32. This pass spells it out once, before
// a backend groups kernels: a tx.expand over Tq and Tk (batch and heads
// stay broadcast, so a padding mask costs B*Tq*Tk, never *H unless the mask
// has heads) and a tx.cast to q's type, which elemental kernels then
// materialize. Ops reading the same mask (the forward and its gradient)
// share the rewritten one. Expanding is exact; the cast rounds an f32 mask
// to q's type, which is exact for the 0 / -inf masks exporters write
// (causal, padding) and for any value bf16 holds, and is the rounding a
// learned f32 bias gets from a backend whose bias is of q's type.
//
//===----------------------------------------------------------------------===//

#include "txopt/Dialect/Tx/Transforms/AttentionBias.h"
#include "txopt/Dialect/Tx/IR/TxOps.h"
#include "txopt/Dialect/Tx/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace mlir::txopt::tx {
#define GEN_PASS_DEF_ATTENTIONBIASPASS
#include "txopt/Dialect/Tx/Transforms/Passes.h.inc"
} // namespace mlir::txopt::tx

using namespace mlir;
using namespace mlir::txopt;

namespace {

RankedTensorType tensorType(Value v) { return cast<RankedTensorType>(v.getType()); }

struct AttentionBiasPass : public tx::impl::AttentionBiasPassBase<AttentionBiasPass> {
  void runOnOperation() override { tx::masksToAttentionBias(getOperation()); }
};

} // namespace

unsigned tx::masksToAttentionBias(func::FuncOp func) {
  unsigned rewritten = 0;
  if (func.isExternal())
    return rewritten;
  llvm::DenseMap<std::pair<Value, Type>, Value> prepared;
  func.walk([&](Operation *op) {
    Value q, mask, k;
    OpOperand *maskOperand = nullptr;
    if (auto a = dyn_cast<tx::AttentionOp>(op)) {
      q = a.getQ(); k = a.getK(); mask = a.getMask();
      if (mask) maskOperand = &a.getMaskMutable()[0];
    } else if (auto g = dyn_cast<tx::AttentionGradOp>(op)) {
      q = g.getQ(); k = g.getK(); mask = g.getMask();
      if (mask) maskOperand = &g.getMaskMutable()[0];
    }
    if (!mask)
      return;
    auto qType = tensorType(q), mType = tensorType(mask);
    Type element = qType.getElementType();
    auto ms = mType.getShape();
    // Broadcast over B and H stays (cuDNN's bias broadcasts those); Tq and
    // Tk are spelled out.
    auto dimFromEnd = [&](int64_t fromEnd) -> int64_t {
      return fromEnd < static_cast<int64_t>(ms.size()) ? ms[ms.size() - 1 - fromEnd] : 1;
    };
    llvm::SmallVector<int64_t, 4> shape = {
        dimFromEnd(3), dimFromEnd(2), qType.getShape()[2],
        tensorType(k).getShape()[2]};
    auto want = RankedTensorType::get(shape, element);
    if (mType == want)
      return;
    auto [it, inserted] = prepared.try_emplace({mask, want}, Value());
    if (inserted) {
      OpBuilder b(op);
      if (Operation *def = mask.getDefiningOp())
        b.setInsertionPointAfter(def);
      else
        b.setInsertionPointToStart(mask.getParentBlock());
      Value value = mask;
      auto wide = RankedTensorType::get(shape, mType.getElementType());
      if (mType != wide)
        value = tx::ExpandOp::create(b, op->getLoc(), wide, value);
      if (mType.getElementType() != element)
        value = tx::CastOp::create(b, op->getLoc(), want, value);
      it->second = value;
      ++rewritten;
    }
    maskOperand->set(it->second);
  });
  return rewritten;
}
