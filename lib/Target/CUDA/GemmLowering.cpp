//===- GemmLowering.cpp - tx.blas_gemm as cuBLASLt GEMMs --------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// tx.blas_gemm (the GEMM normal form, tx-gemm-normal-form) of f32, bf16 and
// f16 operands as column-major cuBLASLt GEMM commands; FP8 GEMMs are in
// FP8Kernels.cpp.
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

/// |bias|'s slot when cuBLASLt can read it as the epilogue's bias: its
/// vector loads need a part of a packed buffer to start on 16 bytes (a
/// whole slot always does).
static std::optional<unsigned> alignedBiasSlot(LoweringContext &ctx, Value bias) {
  unsigned slot = ctx.bufferFor(bias);
  uint64_t offset = 0;
  for (int b = static_cast<int>(slot); ctx.buffers[b].partOf >= 0; b = ctx.buffers[b].partOf)
    offset += ctx.buffers[b].offsetInWhole;
  if (offset % 16 != 0)
    return std::nullopt;
  return slot;
}

std::optional<unsigned> cuda::epilogueBiasSlot(LoweringContext &ctx, tx::BlasGemmOp op,
                                               const GemmCmd &g) {
  Value c = op.getC();
  if (!c || op.getBeta().convertToFloat() != 1.0f || g.batch != 1 ||
      ctx.accumulatingGemms.contains(op.getResult()))
    return std::nullopt;
  llvm::ArrayRef<int64_t> shape = typeOf(c).getShape();
  if (shape.empty() || static_cast<uint64_t>(shape.back()) != g.m ||
      llvm::any_of(shape.drop_back(), [](int64_t d) { return d != 1; }))
    return std::nullopt;
  return alignedBiasSlot(ctx, c);
}

/// Row-major C[..., M, N] = op(a)[..., M, K] op(b)[..., K, N] as the
/// column-major C^T = op(b)^T op(a)^T cuBLASLt computes: its A is our b
/// (m = N), its B our a (n = M), each read with the op's transpose flag.
/// Batches: equal on both sides (strided), or one side shared (stride 0);
/// a shared b with an untransposed a folds a's batch into M.
static GemmCmd columnMajorGemm(RankedTensorType at, RankedTensorType bt, bool aTransposed,
                               bool bTransposed) {
  int64_t M = at.getShape()[at.getRank() - (aTransposed ? 1 : 2)];
  int64_t K = at.getShape()[at.getRank() - (aTransposed ? 2 : 1)];
  int64_t N = bt.getShape()[bt.getRank() - (bTransposed ? 2 : 1)];
  auto count = [](llvm::ArrayRef<int64_t> s) {
    int64_t n = 1;
    for (int64_t d : s) n *= d;
    return n;
  };
  int64_t aCount = count(at.getShape().drop_back(2)), bCount = count(bt.getShape().drop_back(2));
  GemmCmd g;
  g.k = K;
  g.m = N;
  g.n = M;
  g.transA = bTransposed;
  g.lda = bTransposed ? K : N;
  g.transB = aTransposed;
  g.ldb = aTransposed ? M : K;
  g.ldd = N;
  if (bCount == 1 && !aTransposed) {
    // b is shared and a's rows are contiguous: fold a's batch into M.
    g.n = M * aCount;
  } else {
    // The verifier allows equal batch dims or one shared side only.
    g.batch = std::max(aCount, bCount);
    g.strideA = bCount == 1 ? 0 : K * N;
    g.strideB = aCount == 1 ? 0 : M * K;
    g.strideD = M * N;
  }
  return g;
}

/// The tx.blas_gemm |op| of f32, bf16 or f16 operands as one (batched)
/// cuBLASLt GEMM (columnMajorGemm). With c (tx.gemm's C, or a bias
/// tx-gemm-bias folded), a row vector with beta 1 is cuBLASLt's epilogue
/// bias; any other c is first broadcast into the result by a loop kernel
/// and the GEMM adds it with beta. With an empty inner dimension (k = 0:
/// a product of nothing) and a c, that kernel writes beta * c and no GEMM
/// follows (LoweringContext::gemm handles the rest of the empty cases).
LogicalResult cuda::lowerBlasGemm(LoweringContext &ctx, tx::BlasGemmOp op) {
  Value a = op.getA(), bm = op.getB(), y = op.getResult();
  auto at = typeOf(a), bt = typeOf(bm), yt = typeOf(y);
  auto aType = dtypeOf(at.getElementType());
  if (!aType || (*aType != DType::F32 && *aType != DType::BF16 && *aType != DType::F16))
    return op.emitError("the GPU GEMM supports f32, bf16 and f16 operands (FP8 through "
                        "its scales)");
  GemmCmd g = columnMajorGemm(at, bt, op.getTransposeA(), op.getTransposeB());
  g.aType = g.bType = *aType;
  g.dType = *dtypeOf(yt.getElementType());
  g.allowTF32 = ctx.options.allowTF32;
  g.alpha = op.getAlpha().convertToFloat();
  g.beta = 0.0f;
  bool emptyProduct = g.k == 0 && g.m > 0 && g.n > 0 && g.batch > 0 &&
                      !ctx.accumulatingGemms.contains(y);
  std::optional<unsigned> bias;
  if (!emptyProduct)
    bias = epilogueBiasSlot(ctx, op, g);
  if (bias) {
    g.bias = static_cast<int>(*bias);
  } else if (Value c = op.getC()) {
    float beta = op.getBeta().convertToFloat();
    if (beta != 0.0f) {
      // Y = broadcast(C), elementwise, then the GEMM adds alpha * AB.
      KernelBuilder kb(ctx.gpuModule, "k" + std::to_string(ctx.builtKernels++) + "_gemm_c", {y},
                       {c}, ctx.plan);
      auto &b = kb.builder();
      int64_t n = yt.getNumElements();
      Value i = kb.globalThreadIndex();
      Value inRange = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, i, kb.idx(n));
      kb.ifThen(inRange, [&] {
        auto index = kb.delinearize(i, yt.getShape());
        llvm::SmallVector<Value> ci;
        auto cShape = typeOf(c).getShape();
        size_t offset = index.size() - cShape.size();
        for (size_t d = 0; d < cShape.size(); ++d)
          ci.push_back(cShape[d] == 1 ? kb.idx(0) : index[offset + d]);
        Value cValue = kb.load(c, kb.linearize(ci, cShape));
        if (emptyProduct && beta != 1.0f)
          cValue = kb.roundTo(arith::MulFOp::create(b, cValue, kb.f32(beta)),
                              yt.getElementType());
        kb.store(y, i, cValue);
      });
      kb.finish();
      if (failed(kb.status()))
        return failure();
      ctx.launch(kb, op, static_cast<unsigned>((n + kBlockSize - 1) / kBlockSize),
                 ctx.buffersOf({y}), ctx.buffersOf({c}));
      if (emptyProduct)
        return success();
      g.beta = beta;
    }
  }
  g.a = ctx.bufferFor(bm);
  g.b = ctx.bufferFor(a);
  g.d = ctx.bufferFor(y);
  // A gradient GEMM of gradient accumulation adds into its f32 accumulator
  // (D = C = acc), also when its operands are bf16/f16 and the IR casts its
  // product to f32 (StepLowering's accumulateInPlace).
  if (ctx.accumulatingGemms.contains(y)) {
    g.beta = 1.0f;
    g.dType = DType::F32;
  }
  return ctx.gemm(g, op);
}

/// tx.blas_gemm_gelu as one cuBLASLt GEMM with the GELU_AUX(_BIAS)
/// epilogue: D is the GELU's output, the pre-activation goes to the aux
/// slot, laid out as D (the verifier's one matrix b and untransposed
/// batched a make it one GEMM, and N a multiple of 8 cuBLASLt's aux
/// leading dimension). A pre-activation nothing reads (a function without
/// a backward: @eval) is not written: the GELU(_BIAS) epilogue.
LogicalResult cuda::lowerBlasGemmGelu(LoweringContext &ctx, tx::BlasGemmGeluOp op) {
  GemmCmd g = columnMajorGemm(typeOf(op.getA()), typeOf(op.getB()), op.getTransposeA(),
                              op.getTransposeB());
  if (g.batch != 1)
    return op.emitError("the GELU epilogue takes one GEMM, not a batch of ") << g.batch;
  g.aType = g.bType = g.dType = *dtypeOf(typeOf(op.getResult()).getElementType());
  g.alpha = op.getAlpha().convertToFloat();
  if (Value bias = op.getBias()) {
    std::optional<unsigned> slot = alignedBiasSlot(ctx, bias);
    if (!slot)
      return op.emitError("the GELU epilogue's bias is not 16-byte aligned in its buffer "
                          "(cuBLASLt reads it with vector loads)");
    g.bias = static_cast<int>(*slot);
  }
  g.a = ctx.bufferFor(op.getB());
  g.b = ctx.bufferFor(op.getA());
  g.d = ctx.bufferFor(op.getResult());
  g.gelu = true;
  if (!op.getPreActivation().use_empty())
    g.geluAux = static_cast<int>(ctx.bufferFor(op.getPreActivation()));
  return ctx.gemm(g, op);
}
