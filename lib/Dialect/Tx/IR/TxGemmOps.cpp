//===- TxGemmOps.cpp - tx.blas_gemm, the GEMM normal form ------------------===//
//
// SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "txopt/Dialect/Tx/IR/TxOps.h"

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::tx;

bool mlir::txopt::tx::areGemmBatchesStridable(ArrayRef<int64_t> aBatch,
                                               ArrayRef<int64_t> bBatch) {
  return ShapedType::getNumElements(aBatch) == 1 || ShapedType::getNumElements(bBatch) == 1 ||
         aBatch == bBatch;
}

bool BlasGemmOp::isFP8() { return getA().getType().getElementType().getIntOrFloatBitWidth() == 8; }

LogicalResult BlasGemmOp::verify() {
  RankedTensorType aType = getA().getType(), bType = getB().getType();
  ArrayRef<int64_t> a = aType.getShape(), b = bType.getShape();
  if (a.size() < 2 || b.size() < 2)
    return emitOpError("expected operands of rank at least 2, but got ")
           << formatShape(a) << " and " << formatShape(b);
  Type aElem = aType.getElementType(), bElem = bType.getElementType();
  Type resultElem = getResult().getType().getElementType();
  bool aFP8 = aElem.getIntOrFloatBitWidth() == 8, bFP8 = bElem.getIntOrFloatBitWidth() == 8;
  bool scaled = getAScaleInv() && getBScaleInv();
  if (static_cast<bool>(getAScaleInv()) != static_cast<bool>(getBScaleInv()))
    return emitOpError("expected both scale inverses or none");
  if (aFP8 != bFP8)
    return emitOpError("expected both operands FP8 or neither, but got ")
           << aElem << " and " << bElem;
  if (aFP8) {
    if (!scaled)
      return emitOpError("expected the scale inverses of FP8 operands");
    if (isa<Float8E5M2Type>(aElem) && isa<Float8E5M2Type>(bElem))
      return emitOpError("expected at most one 'f8E5M2' operand, but got two "
                         "(cuBLASLt has no E5M2 x E5M2 GEMM)");
    if (getTransposeA())
      return emitOpError("expected an FP8 'a' not transposed (cuBLASLt's FP8 GEMMs take "
                         "only the TN form)");
  } else {
    if (scaled)
      return emitOpError("expected no scale inverses for ") << aElem << " operands";
    if (getFastAccumulation())
      return emitOpError("expected 'fast_accumulation' only on FP8 operands (it is "
                         "cuBLASLt's FP8 accumulator mode), but got ")
             << aElem;
    if (aElem != bElem || aElem != resultElem)
      return emitOpError("expected one element type for operands and result, but got ")
             << aElem << ", " << bElem << " and " << resultElem;
  }
  int64_t m = a[a.size() - (getTransposeA() ? 1 : 2)];
  int64_t k = a[a.size() - (getTransposeA() ? 2 : 1)];
  int64_t kb = b[b.size() - (getTransposeB() ? 1 : 2)];
  int64_t n = b[b.size() - (getTransposeB() ? 2 : 1)];
  if (k != kb)
    return emitOpError("expected matching contraction dims, but got ")
           << k << " in " << formatShape(a) << (getTransposeA() ? " (transposed)" : "")
           << " and " << kb << " in " << formatShape(b)
           << (getTransposeB() ? " (transposed)" : "");
  ArrayRef<int64_t> aBatch = a.drop_back(2), bBatch = b.drop_back(2);
  FailureOr<SmallVector<int64_t>> batch = broadcastShapes(aBatch, bBatch);
  if (failed(batch) || !areGemmBatchesStridable(aBatch, bBatch))
    return emitOpError("expected the same batch dims on both sides or one side "
                       "without a batch (stride 0), but got ")
           << formatShape(a) << " and " << formatShape(b);
  SmallVector<int64_t> expected = *batch;
  expected.push_back(m);
  expected.push_back(n);
  ArrayRef<int64_t> result = getResult().getType().getShape();
  if (ArrayRef<int64_t>(expected) != result)
    return emitOpError("expected result shape ")
           << formatShape(expected) << ", but got " << formatShape(result);
  if (Value c = getC()) {
    auto cType = cast<RankedTensorType>(c.getType());
    FailureOr<SmallVector<int64_t>> joined = broadcastShapes(cType.getShape(), result);
    if (cType.getElementType() != resultElem || failed(joined) ||
        ArrayRef<int64_t>(*joined) != result)
      return emitOpError("expected 'c' of the result's element type broadcasting to ")
             << formatShape(result) << ", but got " << cType;
  }
  return success();
}

LogicalResult BlasGemmGeluOp::verify() {
  RankedTensorType aType = getA().getType(), bType = getB().getType();
  ArrayRef<int64_t> a = aType.getShape(), b = bType.getShape();
  Type elem = aType.getElementType();
  if (!elem.isBF16() && !elem.isF16())
    return emitOpError("expected bf16 or f16 operands (the GPU's GELU epilogue computes "
                       "tanh approximately, within their rounding), but got ")
           << elem;
  RankedTensorType resultType = getResult().getType();
  if (bType.getElementType() != elem || resultType.getElementType() != elem ||
      getPreActivation().getType().getElementType() != elem)
    return emitOpError("expected one element type for operands and results, but got ")
           << elem << ", " << bType.getElementType() << ", " << resultType.getElementType()
           << " and " << getPreActivation().getType().getElementType();
  if (b.size() != 2)
    return emitOpError("expected 'b' to be one matrix, but got ") << formatShape(b);
  if (a.size() < 2 || (a.size() > 2 && getTransposeA()))
    return emitOpError("expected 'a' of rank 2, or of higher rank not transposed (its "
                       "leading dims fold into M), but got ")
           << formatShape(a) << (getTransposeA() ? " (transposed)" : "");
  int64_t m = a[a.size() - (getTransposeA() ? 1 : 2)];
  int64_t k = a[a.size() - (getTransposeA() ? 2 : 1)];
  int64_t kb = b[getTransposeB() ? 1 : 0], n = b[getTransposeB() ? 0 : 1];
  if (k != kb)
    return emitOpError("expected matching contraction dims, but got ")
           << k << " in " << formatShape(a) << " and " << kb << " in " << formatShape(b);
  SmallVector<int64_t> expected(a.drop_back(2));
  expected.push_back(m);
  expected.push_back(n);
  for (Value r : {getResult(), getPreActivation()})
    if (ArrayRef<int64_t>(expected) != cast<RankedTensorType>(r.getType()).getShape())
      return emitOpError("expected results of shape ")
             << formatShape(expected) << ", but got "
             << formatShape(cast<RankedTensorType>(r.getType()).getShape());
  if (n % 8 != 0)
    return emitOpError("expected N a multiple of 8 (cuBLASLt's leading dimension of the "
                       "pre-activation), but got ")
           << n;
  if (Value bias = getBias()) {
    auto biasType = cast<RankedTensorType>(bias.getType());
    if (biasType.getElementType() != elem || biasType.getShape() != ArrayRef<int64_t>{n})
      return emitOpError("expected 'bias' of type ")
             << RankedTensorType::get({n}, elem) << ", but got " << biasType;
  }
  return success();
}
