//===- GemmLowering.cpp - tx.matmul and tx.gemm as cuBLASLt GEMMs ---------===//
//
// SPDX-License-Identifier: Apache-2.0
// Row-major matrix products as column-major cuBLASLt GEMM commands: batched
// with strides, transposed operands read with the transpose flags.
//
//===----------------------------------------------------------------------===//

#include "KernelUtils.h"
#include "Lowering.h"

#include "txopt/Dialect/Tx/IR/TxOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::cuda;

/// tx.matmul as one (batched) cuBLASLt GEMM. Row-major C[M, N] = A[M, K] B[K, N]
/// is column-major C^T = B^T A^T: cuBLASLt's A is our B (m = N), its B is
/// our A (n = M). Batch dims: equal on both sides (strided batch), absent or
/// all-ones on one side (stride 0), or B two-dimensional (batch folded into M).
/// An operand that is a last-two-dims transpose is read untransposed with
/// cuBLASLt's transpose flag (isFoldedIntoGemm).
LogicalResult cuda::lowerMatMul(LoweringContext &ctx, tx::MatMulOp op) {
  Value a = op.getLhs(), bm = op.getRhs(), c = op.getResult();
  auto at = typeOf(a), bt = typeOf(bm), ct = typeOf(c);
  if (at.getRank() < 2 || bt.getRank() < 2)
    return op.emitError("the GPU matmul needs operands of rank 2 or more");
  auto aType = dtypeOf(at.getElementType()), bType = dtypeOf(bt.getElementType());
  auto cType = dtypeOf(ct.getElementType());
  if (!aType || !isa<FloatType>(at.getElementType()) || aType != bType ||
      (*aType != DType::F32 && *aType != DType::BF16 && *aType != DType::F16))
    return op.emitError("the GPU matmul supports f32, bf16 and f16 operands of one type");
  int64_t M = at.getShape()[at.getRank() - 2], K = at.getShape().back();
  int64_t N = bt.getShape().back();
  auto aBatch = at.getShape().drop_back(2), bBatch = bt.getShape().drop_back(2);
  auto count = [](llvm::ArrayRef<int64_t> s) {
    int64_t n = 1;
    for (int64_t d : s) n *= d;
    return n;
  };
  int64_t aCount = count(aBatch), bCount = count(bBatch);
  // Transposed operands read their source with the transpose flag.
  Value aSource = a, bSource = bm;
  bool aTransposed = false, bTransposed = false;
  if (Operation *def = a.getDefiningOp(); def && isFoldedIntoGemm(def)) {
    aSource = def->getOperand(0);
    aTransposed = true;
  }
  if (Operation *def = bm.getDefiningOp(); def && isFoldedIntoGemm(def)) {
    bSource = def->getOperand(0);
    bTransposed = true;
  }
  GemmCmd g;
  g.aType = g.bType = *aType;
  g.dType = *cType;
  g.allowTF32 = ctx.options.allowTF32;
  g.k = K;
  g.m = N;
  g.n = M;
  g.transA = bTransposed;
  g.lda = bTransposed ? K : N;
  g.transB = aTransposed;
  g.ldb = aTransposed ? M : K;
  g.ldd = N;
  if (bCount == 1 && !aTransposed) {
    // B is shared and A's rows are contiguous: fold A's batch into M.
    g.n = M * aCount;
  } else if (bCount == 1 || aCount == 1 ||
             (aBatch.size() == bBatch.size() && aBatch == bBatch)) {
    g.batch = std::max(aCount, bCount);
    g.strideA = bCount == 1 ? 0 : K * N;
    g.strideB = aCount == 1 ? 0 : M * K;
    g.strideD = M * N;
  } else {
    return op.emitError("the GPU matmul does not broadcast batch dims of ")
           << at << " against " << bt;
  }
  g.a = ctx.bufferFor(bSource);
  g.b = ctx.bufferFor(aSource);
  g.d = ctx.bufferFor(c);
  // A gradient GEMM of gradient accumulation adds into its f32 accumulator
  // (D = C = acc), also when its operands are bf16/f16 and the IR casts its
  // product to f32 (StepLowering's accumulateInPlace).
  if (ctx.accumulatingGemms.contains(c)) {
    g.beta = 1.0f;
    g.dType = DType::F32;
  }
  ctx.gemm(g, op);
  return success();
}

/// tx.gemm: Y = alpha * A' B' + beta * C. C is first broadcast into Y by a
/// loop kernel, then the GEMM accumulates with beta.
LogicalResult cuda::lowerGemm(LoweringContext &ctx, tx::GemmOp op) {
  Value a = op.getA(), bm = op.getB(), y = op.getResult();
  auto at = typeOf(a), bt = typeOf(bm);
  auto aType = dtypeOf(at.getElementType()), bType = dtypeOf(bt.getElementType());
  if (!aType || aType != bType ||
      (*aType != DType::F32 && *aType != DType::BF16 && *aType != DType::F16))
    return op.emitError("the GPU gemm supports f32, bf16 and f16 operands of one type");
  bool transA = op.getTransA(), transB = op.getTransB();
  int64_t M = transA ? at.getShape()[1] : at.getShape()[0];
  int64_t K = transA ? at.getShape()[0] : at.getShape()[1];
  int64_t N = transB ? bt.getShape()[0] : bt.getShape()[1];
  GemmCmd g;
  g.aType = g.bType = *aType;
  g.dType = *dtypeOf(typeOf(y).getElementType());
  g.allowTF32 = ctx.options.allowTF32;
  g.m = N;
  g.n = M;
  g.k = K;
  g.transA = transB;
  g.lda = transB ? K : N;
  g.transB = transA;
  g.ldb = transA ? M : K;
  g.ldd = N;
  g.alpha = op.getAlpha().convertToFloat();
  g.beta = 0.0f;
  if (Value c = op.getC()) {
    float beta = op.getBeta().convertToFloat();
    if (beta != 0.0f) {
      // Y = broadcast(C), elementwise, then the GEMM adds alpha * AB.
      KernelBuilder kb(ctx.gpuModule, ctx.kernelName(op), {y}, {c}, ctx.plan);
      auto &b = kb.builder();
      int64_t n = typeOf(y).getNumElements();
      Value i = kb.globalThreadIndex();
      Value inRange = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, i, kb.idx(n));
      kb.ifThen(inRange, [&] {
        auto index = kb.delinearize(i, typeOf(y).getShape());
        llvm::SmallVector<Value> ci;
        auto cShape = typeOf(c).getShape();
        size_t offset = index.size() - cShape.size();
        for (size_t d = 0; d < cShape.size(); ++d)
          ci.push_back(cShape[d] == 1 ? kb.idx(0) : index[offset + d]);
        kb.store(y, i, kb.load(c, kb.linearize(ci, cShape)));
      });
      kb.finish();
      if (failed(kb.status()))
        return failure();
      ctx.launch(kb, op, static_cast<unsigned>((n + kBlockSize - 1) / kBlockSize),
                 ctx.buffersOf({y}), ctx.buffersOf({c}));
      g.beta = beta;
    }
  }
  g.a = ctx.bufferFor(bm);
  g.b = ctx.bufferFor(a);
  g.d = ctx.bufferFor(y);
  ctx.gemm(g, op);
  return success();
}
