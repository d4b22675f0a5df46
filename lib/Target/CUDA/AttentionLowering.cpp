//===- AttentionLowering.cpp - tx.attention(_grad) as fused attention calls -===//
//
// SPDX-License-Identifier: Apache-2.0
// tx.attention and tx.attention_grad become one AttentionCmd each, which the
// runtime runs as cuDNN's fused flash attention (SDPA forward / backward):
// the B·H·Tq·Tk scores and probabilities never exist in memory, only the
// f32 row log-sum-exp the backward needs. The compiler checks here what
// cuDNN's SDPA accepts on sm_90 (bf16/f16, head dims multiples of 8 up to
// 256) so that a step.txa never fails at load for a shape reason;
// tx-fuse-attention with `cudnn-limits` already leaves the others unfused.
//
// A mask is handed to cuDNN as an additive bias of the q type shaped
// [B|1, H|1, Tq, Tk]: tx-attention-bias (AttentionBias.cpp) has rewritten
// any other broadcastable mask into that form before the grouping runs.
//
// tx.fp8_attention and tx.fp8_attention_grad (tx-insert-fp8 attention=1)
// become the same command with `fp8` set, run as cuDNN's sdpa_fp8 and
// sdpa_fp8_backward: FP8 tensors, and each scale, scale inverse and amax an
// f32 slot of its own. The scales are sites of the packed FP8 state
// (tx.fp8_site), read through the spread, 16-byte aligned copy the FP8
// GEMMs read too (librarySiteSlot). The amaxes are the ops' own scalar
// results, which the scale update reads like any site's stored amax.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "txopt/Dialect/Tx/IR/TxOps.h"
#include "txopt/Dialect/Tx/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

#include <algorithm>
#include <cstring>

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::cuda;

namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// The [B, H, T, D] tensor |v| as cuDNN reads or writes it: a strided view
/// inside another value's buffer (AttentionLayouts.cpp), or its own
/// contiguous buffer.
AttentionTensor tensorOf(LoweringContext &ctx, Value v) {
  AttentionTensor t;
  auto it = ctx.plan.attentionViews.find(v);
  if (it != ctx.plan.attentionViews.end()) {
    const StridedView &view = it->second;
    t.slot = ctx.bufferFor(view.base);
    t.offset = view.offset;
    for (int d = 0; d < 4; ++d) {
      t.dims[d] = view.shape[d];
      t.strides[d] = view.strides[d];
    }
    return t;
  }
  t.slot = ctx.bufferFor(v);
  auto shape = typeOf(v).getShape();
  int64_t stride = 1;
  for (int d = 3; d >= 0; --d) {
    t.dims[d] = shape[d];
    t.strides[d] = stride;
    stride *= shape[d];
  }
  return t;
}

/// What cuDNN's SDPA supports on Hopper, checked at compile time.
LogicalResult checkSupported(Operation *op, Value q, Value v) {
  Type element = typeOf(q).getElementType();
  if (!element.isBF16() && !element.isF16())
    return op->emitError("fused attention on the GPU runs in bf16 or f16 "
                         "(cuDNN's SDPA), but q is ")
           << element << "; compile with --precision=bf16, or leave "
                         "attention unfused (--no-fuse=attention)";
  int64_t d = typeOf(q).getShape()[3], dv = typeOf(v).getShape()[3];
  for (int64_t dim : {d, dv})
    if (!tx::isCudnnAttentionHeadDim(dim))
      return op->emitError("fused attention on the GPU needs head dims that "
                           "are multiples of 8 and at most 256 (cuDNN's "
                           "SDPA), but got ")
             << d << " (q/k) and " << dv << " (v)";
  return success();
}

/// The Philox offset of a dropout site, as an i64 constant in a slot of
/// its own (cuDNN reads seed and offset from device memory; the seed is the
/// step's key): the seed's low 31 bits in units of 2^32 counter blocks, far
/// more than one call draws, so two sites never draw overlapping (shifted)
/// runs of random numbers even when their seeds are neighbours (an ONNX
/// `seed` attribute). Sites whose seeds agree in the low 31 bits would share
/// a mask; the importer's seeds hash the node's name (1 in 2^31 a pair).
unsigned philoxOffsetConstant(LoweringContext &ctx, int64_t seed) {
  int64_t offset =
      static_cast<int64_t>((static_cast<uint64_t>(seed) << 32) & 0x7fffffffffffffffull);
  unsigned id = ctx.scratch(sizeof offset, "attention dropout offset");
  ctx.buffers[id].persistent = true;
  std::vector<uint8_t> bytes(sizeof offset);
  std::memcpy(bytes.data(), &offset, sizeof offset);
  ctx.program.constants.push_back({id, std::move(bytes)});
  return id;
}

/// Fills the attributes and the q, k, v (and mask) operands both ops share.
template <typename OpT>
LogicalResult fillCommon(LoweringContext &ctx, OpT op, AttentionCmd &cmd) {
  if (failed(checkSupported(op, op.getQ(), op.getV())))
    return failure();
  // Dropout: cuDNN draws the mask (Philox) from the step's key and the
  // site's seed, so it is not the executor's mask (docs/GPU.md); it takes no
  // sliding window with it, which tx-fuse-attention's cudnn-limits leaves
  // unfused, so only a hand-written pipeline gets here with both.
  if (Value key = op.getDropoutKey()) {
    if (op.getWindow())
      return op.emitError("fused attention on the GPU takes a sliding window only "
                          "without dropout (cuDNN's SDPA); fuse attention with "
                          "tx-fuse-attention{cudnn-limits=1}, which leaves it unfused");
    cmd.dropoutRatio = op.getDropoutRatioAttr().getValueAsDouble();
    cmd.dropoutKey = ctx.bufferFor(key);
    cmd.dropoutSeed = static_cast<int64_t>(op.getDropoutSeed());
    cmd.dropoutOffset = philoxOffsetConstant(ctx, cmd.dropoutSeed);
  }
  cmd.dtype = *dtypeOf(typeOf(op.getQ()).getElementType());
  cmd.scale = static_cast<float>(op.getScale().convertToDouble());
  cmd.causal = op.getCausal();
  cmd.window = op.getWindow() ? static_cast<int64_t>(*op.getWindow()) : 0;
  cmd.q = tensorOf(ctx, op.getQ());
  cmd.k = tensorOf(ctx, op.getK());
  cmd.v = tensorOf(ctx, op.getV());
  if (Value mask = op.getMask()) {
    // tx-attention-bias guarantees the bias form.
    auto type = typeOf(mask);
    if (type.getRank() != 4 || type.getElementType() != typeOf(op.getQ()).getElementType())
      return op.emitError("internal error: attention mask not prepared for the GPU");
    cmd.mask = tensorOf(ctx, mask);
  }
  return success();
}

/// Scores and probabilities of the unfused attention, for the report (in
/// q's type; an FP8 attention's unfused form is bf16's: 2 bytes).
uint64_t scoreBytes(Value q, Value k) {
  auto qs = typeOf(q).getShape();
  uint64_t elements = static_cast<uint64_t>(qs[0] * qs[1] * qs[2]) *
                      static_cast<uint64_t>(typeOf(k).getShape()[2]);
  return 2 * elements * std::max<uint64_t>(dtypeBytes(*dtypeOf(typeOf(q).getElementType())), 2);
}

/// What cuDNN's FP8 attention supports on Hopper, checked at compile time
/// (tx-insert-fp8 converts only such attentions; a hand-written step may
/// hold others).
LogicalResult checkFP8Supported(Operation *op, Value q, Value v, bool backward) {
  int64_t d = typeOf(q).getShape()[3], dv = typeOf(v).getShape()[3];
  if (d % 16 != 0 || d > 256 || dv != d)
    return op->emitError("FP8 attention on the GPU needs equal q/k and v head dims, "
                         "multiples of 16 up to 256 (cuDNN's sdpa_fp8), but got ")
           << d << " and " << dv;
  if (backward && d != 128)
    return op->emitError("the FP8 attention backward on Hopper takes head dim 128 only "
                         "(cuDNN's sdpa_fp8_backward), but got ")
           << d;
  // Both cuDNN's FP8 causal mask and tx's are aligned top-left.
  return success();
}

/// Sets the slot of an FP8 attention's f32 scalar: a scale or scale inverse
/// it reads (a site of packed state: its spread, 16-byte aligned copy), or
/// an amax it writes (a result of its own).
LogicalResult setScalar(LoweringContext &ctx, Operation *op, AttentionCmd &cmd,
                        AttentionScalar which, Value v) {
  unsigned &slot = cmd.fp8Scalars[static_cast<unsigned>(which)];
  if (isAttentionAmax(which)) {
    slot = ctx.bufferFor(v);
    return success();
  }
  FailureOr<unsigned> read = librarySiteSlot(ctx, op, v);
  if (failed(read))
    return failure();
  slot = *read;
  return success();
}

/// setScalar for each (scalar, value) of |scalars|.
LogicalResult setScalars(LoweringContext &ctx, Operation *op, AttentionCmd &cmd,
                         std::initializer_list<std::pair<AttentionScalar, Value>> scalars) {
  for (auto [which, v] : scalars)
    if (failed(setScalar(ctx, op, cmd, which, v)))
      return failure();
  return success();
}

/// The forward's output and row statistics, bf16 or FP8, and the scores
/// and probabilities the call never materializes.
template <typename OpT>
void fillForwardOutputs(LoweringContext &ctx, OpT op, AttentionCmd &cmd) {
  cmd.o = tensorOf(ctx, op.getResult());
  cmd.lse = ctx.bufferFor(op.getLse());
  ctx.program.stats.attentionScoreBytesAvoided += scoreBytes(op.getQ(), op.getK());
}

/// The backward's forward output, row statistics, upstream gradient and
/// gradients, bf16 or FP8; it recomputes P and writes dP and dS in the
/// unfused form.
template <typename GradOpT>
void fillBackwardTensors(LoweringContext &ctx, GradOpT grad, AttentionCmd &cmd) {
  cmd.o = tensorOf(ctx, grad.getOut());
  cmd.lse = ctx.bufferFor(grad.getLse());
  cmd.gradO = tensorOf(ctx, grad.getGrad());
  cmd.gradQ = tensorOf(ctx, grad.getQGrad());
  cmd.gradK = tensorOf(ctx, grad.getKGrad());
  cmd.gradV = tensorOf(ctx, grad.getVGrad());
  ctx.program.stats.attentionScoreBytesAvoided += 2 * scoreBytes(grad.getQ(), grad.getK());
}

/// Fills what tx.fp8_attention and tx.fp8_attention_grad share.
template <typename OpT>
LogicalResult fillFP8Common(LoweringContext &ctx, OpT op, AttentionCmd &cmd) {
  cmd.fp8 = true;
  cmd.dtype = *dtypeOf(typeOf(op.getQ()).getElementType());
  cmd.scale = static_cast<float>(op.getScale().convertToDouble());
  cmd.causal = op.getCausal();
  cmd.q = tensorOf(ctx, op.getQ());
  cmd.k = tensorOf(ctx, op.getK());
  cmd.v = tensorOf(ctx, op.getV());
  using S = AttentionScalar;
  return setScalars(ctx, op, cmd,
                    {{S::DescaleQ, op.getQScaleInv()},
                     {S::DescaleK, op.getKScaleInv()},
                     {S::DescaleV, op.getVScaleInv()},
                     {S::DescaleS, op.getSScaleInv()},
                     {S::ScaleS, op.getSScale()}});
}

} // namespace

LogicalResult cuda::lowerFP8Attention(LoweringContext &ctx, Operation *op) {
  auto attention = cast<tx::FP8AttentionOp>(op);
  if (failed(checkFP8Supported(op, attention.getQ(), attention.getV(), /*backward=*/false)))
    return failure();
  AttentionCmd cmd;
  if (failed(fillFP8Common(ctx, attention, cmd)))
    return failure();
  cmd.gradType = cmd.dtype; // no gradients forward
  fillForwardOutputs(ctx, attention, cmd);
  using S = AttentionScalar;
  if (failed(setScalars(ctx, op, cmd,
                        {{S::ScaleO, attention.getOScale()},
                         {S::AmaxS, attention.getSAmax()},
                         {S::AmaxO, attention.getOAmax()}})))
    return failure();
  ctx.attention(std::move(cmd), op);
  return success();
}

LogicalResult cuda::lowerFP8AttentionGrad(LoweringContext &ctx, Operation *op) {
  auto grad = cast<tx::FP8AttentionGradOp>(op);
  if (failed(checkFP8Supported(op, grad.getQ(), grad.getV(), /*backward=*/true)))
    return failure();
  AttentionCmd cmd;
  cmd.backward = true;
  if (failed(fillFP8Common(ctx, grad, cmd)))
    return failure();
  cmd.gradType = *dtypeOf(typeOf(grad.getGrad()).getElementType());
  fillBackwardTensors(ctx, grad, cmd);
  using S = AttentionScalar;
  if (failed(setScalars(ctx, op, cmd,
                        {{S::DescaleO, grad.getOutScaleInv()},
                         {S::DescaleDO, grad.getGradScaleInv()},
                         {S::DescaleDP, grad.getDpScaleInv()},
                         {S::ScaleDQ, grad.getQGradScale()},
                         {S::ScaleDK, grad.getKGradScale()},
                         {S::ScaleDV, grad.getVGradScale()},
                         {S::ScaleDP, grad.getDpScale()},
                         {S::AmaxDQ, grad.getQGradAmax()},
                         {S::AmaxDK, grad.getKGradAmax()},
                         {S::AmaxDV, grad.getVGradAmax()},
                         {S::AmaxDP, grad.getDpAmax()}})))
    return failure();
  ctx.attention(std::move(cmd), op);
  return success();
}

LogicalResult cuda::lowerAttention(LoweringContext &ctx, Operation *op) {
  auto attention = cast<tx::AttentionOp>(op);
  AttentionCmd cmd;
  if (failed(fillCommon(ctx, attention, cmd)))
    return failure();
  fillForwardOutputs(ctx, attention, cmd);
  ctx.attention(std::move(cmd), op);
  return success();
}

LogicalResult cuda::lowerAttentionGrad(LoweringContext &ctx, Operation *op) {
  auto grad = cast<tx::AttentionGradOp>(op);
  AttentionCmd cmd;
  cmd.backward = true;
  if (failed(fillCommon(ctx, grad, cmd)))
    return failure();
  fillBackwardTensors(ctx, grad, cmd);
  ctx.attention(std::move(cmd), op);
  return success();
}
