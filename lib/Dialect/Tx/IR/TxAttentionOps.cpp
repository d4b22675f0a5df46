//===- TxAttentionOps.cpp - fused attention verifiers and type inference --===//
//
// SPDX-License-Identifier: Apache-2.0
// Result-type inference and verifiers of tx.attention and tx.attention_grad,
// and of their FP8 forms tx.fp8_attention and tx.fp8_attention_grad (the op
// classes are generated into TxOps.cpp.inc).
//
//===----------------------------------------------------------------------===//

#include "txopt/Dialect/Tx/IR/TxOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"

#include <cmath>

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::tx;

/// The rank-4 type of q / k / v, or a diagnostic (when |loc| is given).
/// Inference runs before the ODS type constraints, so it may not assume a
/// ranked type.
static FailureOr<RankedTensorType> rank4(std::optional<Location> loc,
                                         Value value, StringRef name) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || type.getRank() != 4)
    return emitOptionalError(loc, "expected ", name,
                             " of rank 4 [B, H, T, D], but got ",
                             value.getType());
  return type;
}

/// [B, H, Tq, Dv] and [B, H, Tq] f32 from q and v.
static LogicalResult inferAttention(std::optional<Location> loc, Value q,
                                    Value v, SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> qType = rank4(loc, q, "q");
  if (failed(qType))
    return failure();
  FailureOr<RankedTensorType> vType = rank4(loc, v, "v");
  if (failed(vType))
    return failure();
  ArrayRef<int64_t> qs = qType->getShape();
  inferred.push_back(RankedTensorType::get(
      {qs[0], qs[1], qs[2], vType->getShape()[3]}, qType->getElementType()));
  inferred.push_back(RankedTensorType::get(
      {qs[0], qs[1], qs[2]}, Float32Type::get(q.getContext())));
  return success();
}

/// The checks tx.attention and tx.attention_grad share: layouts, element
/// types, grouped heads, the mask's broadcast, the attributes.
static LogicalResult verifyAttentionOperands(Operation *op, Value q, Value k,
                                             Value v, Value mask, double scale,
                                             bool causal,
                                             std::optional<int64_t> window) {
  for (auto [value, name] :
       {std::pair{q, "q"}, std::pair{k, "k"}, std::pair{v, "v"}}) {
    auto type = cast<RankedTensorType>(value.getType());
    if (type.getRank() != 4)
      return op->emitOpError("expected ")
             << name << " of rank 4 [B, H, T, D], but got rank "
             << type.getRank();
  }
  auto qType = cast<RankedTensorType>(q.getType());
  auto kType = cast<RankedTensorType>(k.getType());
  auto vType = cast<RankedTensorType>(v.getType());
  if (kType.getElementType() != qType.getElementType())
    return op->emitOpError("expected k element type ")
           << qType.getElementType() << ", but got " << kType.getElementType();
  if (vType.getElementType() != qType.getElementType())
    return op->emitOpError("expected v element type ")
           << qType.getElementType() << ", but got " << vType.getElementType();
  ArrayRef<int64_t> qs = qType.getShape(), ks = kType.getShape(),
                    vs = vType.getShape();
  if (ks[0] != qs[0])
    return op->emitOpError("expected k batch ")
           << qs[0] << " (q's), but got " << ks[0];
  if (ks[3] != qs[3])
    return op->emitOpError("expected k head dim ")
           << qs[3] << " (q's), but got " << ks[3];
  if (ks[1] < 1 || qs[1] % ks[1] != 0)
    return op->emitOpError("expected k heads dividing the ")
           << qs[1] << " query heads, but got " << ks[1];
  if (vs[0] != ks[0] || vs[1] != ks[1] || vs[2] != ks[2])
    return op->emitOpError("expected v shape [")
           << ks[0] << ", " << ks[1] << ", " << ks[2]
           << ", Dv] (k's batch, heads and tokens), but got "
           << formatShape(vs);
  if (mask) {
    auto mType = cast<RankedTensorType>(mask.getType());
    SmallVector<int64_t> full = {qs[0], qs[1], qs[2], ks[2]};
    ArrayRef<int64_t> ms = mType.getShape();
    bool ok = ms.size() <= 4;
    for (size_t d = 0; ok && d < ms.size(); ++d) {
      int64_t target = full[4 - ms.size() + d];
      ok = ms[d] == 1 || ms[d] == target;
    }
    if (!ok)
      return op->emitOpError("expected a mask broadcastable to ")
             << formatShape(full) << ", but got " << formatShape(ms);
  }
  if (!std::isfinite(scale))
    return op->emitOpError("expected a finite scale, but got ") << scale;
  if (window) {
    if (!causal)
      return op->emitOpError(
          "expected 'causal' with 'window', but got a window alone");
    if (*window < 1)
      return op->emitOpError("expected a window of at least 1, but got ")
             << *window;
  }
  return success();
}

/// The dropout of the probabilities: a key and a ratio in [0, 1) together.
static LogicalResult verifyAttentionDropout(Operation *op, Value key,
                                            std::optional<APFloat> ratio) {
  if (static_cast<bool>(key) != ratio.has_value())
    return op->emitOpError("expected a dropout key and ratio together, but got ")
           << (key ? "a key without a ratio" : "a ratio without a key");
  if (ratio) {
    double r = ratio->convertToDouble();
    if (!(r >= 0.0 && r < 1.0))
      return op->emitOpError("expected a dropout ratio in [0, 1), but got ") << r;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// AttentionOp
//===----------------------------------------------------------------------===//

LogicalResult AttentionOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  return inferAttention(loc, adaptor.getQ(), adaptor.getV(), inferred);
}

LogicalResult AttentionOp::verify() {
  if (failed(verifyAttentionOperands(*this, getQ(), getK(), getV(), getMask(),
                                     getScale().convertToDouble(), getCausal(),
                                     getWindow())))
    return failure();
  return verifyAttentionDropout(*this, getDropoutKey(), getDropoutRatio());
}

//===----------------------------------------------------------------------===//
// AttentionGradOp
//===----------------------------------------------------------------------===//

LogicalResult
AttentionGradOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                  Adaptor adaptor,
                                  SmallVectorImpl<Type> &inferred) {
  inferred.append({adaptor.getQ().getType(), adaptor.getK().getType(),
                   adaptor.getV().getType()});
  return success();
}

LogicalResult AttentionGradOp::verify() {
  if (failed(verifyAttentionOperands(*this, getQ(), getK(), getV(), getMask(),
                                     getScale().convertToDouble(), getCausal(),
                                     getWindow())) ||
      failed(verifyAttentionDropout(*this, getDropoutKey(), getDropoutRatio())))
    return failure();
  SmallVector<Type> forward;
  if (failed(inferAttention(getLoc(), getQ(), getV(), forward)))
    return failure();
  if (getOut().getType() != forward[0])
    return emitOpError("expected out (and grad) type ")
           << forward[0] << ", but got " << getOut().getType();
  if (getLse().getType() != forward[1])
    return emitOpError("expected lse type ")
           << forward[1] << ", but got " << getLse().getType();
  return success();
}

//===----------------------------------------------------------------------===//
// FP8AttentionOp
//===----------------------------------------------------------------------===//

LogicalResult FP8AttentionOp::inferReturnTypes(MLIRContext *context,
                                               std::optional<Location> loc,
                                               Adaptor adaptor,
                                               SmallVectorImpl<Type> &inferred) {
  if (failed(inferAttention(loc, adaptor.getQ(), adaptor.getV(), inferred)))
    return failure();
  auto amax = RankedTensorType::get({}, Float32Type::get(context));
  inferred.append({amax, amax});
  return success();
}

LogicalResult FP8AttentionOp::verify() {
  return verifyAttentionOperands(*this, getQ(), getK(), getV(), /*mask=*/Value(),
                                 getScale().convertToDouble(), getCausal(),
                                 /*window=*/std::nullopt);
}

//===----------------------------------------------------------------------===//
// FP8AttentionGradOp
//===----------------------------------------------------------------------===//

LogicalResult FP8AttentionGradOp::inferReturnTypes(MLIRContext *context,
                                                   std::optional<Location> loc,
                                                   Adaptor adaptor,
                                                   SmallVectorImpl<Type> &inferred) {
  // The gradients: q's, k's and v's shapes in grad's FP8 type.
  auto gradType = dyn_cast<RankedTensorType>(adaptor.getGrad().getType());
  if (!gradType)
    return emitOptionalError(loc, "expected a ranked grad, but got ",
                             adaptor.getGrad().getType());
  for (Value operand : {adaptor.getQ(), adaptor.getK(), adaptor.getV()}) {
    auto type = dyn_cast<RankedTensorType>(operand.getType());
    if (!type)
      return emitOptionalError(loc, "expected ranked q, k and v, but got ",
                               operand.getType());
    inferred.push_back(type.clone(gradType.getElementType()));
  }
  auto amax = RankedTensorType::get({}, Float32Type::get(context));
  inferred.append({amax, amax, amax, amax});
  return success();
}

LogicalResult FP8AttentionGradOp::verify() {
  if (failed(verifyAttentionOperands(*this, getQ(), getK(), getV(), /*mask=*/Value(),
                                     getScale().convertToDouble(), getCausal(),
                                     /*window=*/std::nullopt)))
    return failure();
  SmallVector<Type> forward;
  if (failed(inferAttention(getLoc(), getQ(), getV(), forward)))
    return failure();
  auto outType = cast<RankedTensorType>(forward[0]);
  if (getOut().getType() != outType)
    return emitOpError("expected out type ")
           << outType << " (the forward's result), but got " << getOut().getType();
  if (getGrad().getType().getShape() != outType.getShape())
    return emitOpError("expected grad of shape ")
           << formatShape(outType.getShape()) << " (out's), but got "
           << formatShape(getGrad().getType().getShape());
  if (getLse().getType() != forward[1])
    return emitOpError("expected lse type ")
           << forward[1] << ", but got " << getLse().getType();
  return success();
}
