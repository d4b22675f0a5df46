//===- TxGemmOps.td - tx GEMM normal form ---------------------*- tablegen -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// The GEMM as a backend calls it: stored operands read with transpose flags,
// strided batches, alpha, beta * C and FP8 scale inverses, all on one op.
// tx-gemm-normal-form rewrites tx.matmul, tx.gemm and tx.fp8_matmul (and
// the transposes they read) into it; the GPU lowering maps each to one
// cuBLASLt call. tx.blas_gemm_gelu is the same call with a GELU epilogue
// (tx-gemm-gelu).
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_DIALECT_TX_IR_TXGEMMOPS_TD
#define TXOPT_DIALECT_TX_IR_TXGEMMOPS_TD

include "txopt/Dialect/Tx/IR/TxBase.td"
include "txopt/Dialect/Tx/IR/TxOptimOps.td"
include "txopt/Dialect/Tx/IR/TxPrecisionOps.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Tx_GemmOperandTensor : StaticShapeTensorOf<[F32, BF16, F16, F8E4M3FN, F8E5M2]>;

def Tx_BlasGemmOp : Tx_Op<"blas_gemm", [Pure, AttrSizedOperandSegments]> {
  let summary = "a GEMM in BLAS normal form: transpose flags, strided batches, alpha, beta * C, FP8 scales";
  let description = [{
    One library GEMM call, in row-major terms:

    ```
    result[b..., i, j] = round_to(type(result),
        alpha * s * sum_k A[b..., i, k] * B[b..., k, j] + beta * c[...])
    ```

    where `A = transpose_a ? a^T : a` and `B = transpose_b ? b^T : b`
    (the last two dims swapped: the operand is stored `[..., K, M]` or
    `[..., N, K]` and read with the flag, never transposed in memory), and
    `s = a_scale_inv * b_scale_inv` for FP8 operands (1 otherwise).

    - `a` and `b` have rank at least 2; their leading (batch) dims are the
      same, or those of one side multiply to 1 (that side is shared by
      every batch: batch stride 0). The batch strides follow from the
      shapes (`M * K`, `K * N`, `M * N`, or 0 for the shared side); the
      result has the broadcast batch dims.
    - f32, bf16, f16: `a`, `b` and the result have one element type, no
      scale inverses.
    - FP8 (`f8E4M3FN`, `f8E5M2`, at most one `f8E5M2`: cuBLASLt has no
      E5M2 x E5M2 GEMM): both 0-d f32 scale inverses; the result is f32,
      bf16 or f16. cuBLASLt's FP8 kernels take only the "TN" form, so an FP8
      `a` is never transposed (`transpose_a` is refused).
    - `c` (optional, with `beta`): broadcasts unidirectionally to the result
      and has its element type (ONNX Gemm's C).
    - `fast_accumulation` (FP8 only): the tensor cores' fast accumulator,
      without the periodic promotion to f32 (`tx.fp8_matmul`'s attribute,
      carried over).

    Numerics are those of the op it came from: the products are summed
    (the executor in f64, cuBLASLt in f32), scaled, `beta * c` added, and
    rounded once to the result type.

    ```mlir
    %y = tx.blas_gemm %x, %w {transpose_b} : tensor<64x128xbf16>, tensor<384x128xbf16> -> tensor<64x384xbf16>
    %z = tx.blas_gemm %g, %w8 scale_inv(%gs, %ws) {transpose_b}
        : tensor<16x64xf8E5M2>, tensor<32x64xf8E4M3FN> -> tensor<16x32xbf16>
    ```
  }];
  let arguments = (ins Tx_GemmOperandTensor:$a, Tx_GemmOperandTensor:$b,
                       Optional<Tx_NumericTensor>:$c,
                       Optional<Tx_F32ScalarTensor>:$a_scale_inv,
                       Optional<Tx_F32ScalarTensor>:$b_scale_inv,
                       UnitAttr:$transpose_a, UnitAttr:$transpose_b,
                       DefaultValuedAttr<F32Attr, "1.0">:$alpha,
                       DefaultValuedAttr<F32Attr, "1.0">:$beta,
                       UnitAttr:$fast_accumulation);
  let results = (outs Tx_HighPrecisionTensor:$result);
  let assemblyFormat = [{
    $a `,` $b (`,` $c^)? (`scale_inv` `(` $a_scale_inv^ `,` $b_scale_inv `)`)?
    attr-dict `:` type($a) `,` type($b) (`,` type($c)^)? `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Whether the operands are FP8 codes (then the scale inverses are set).
    bool isFP8();
  }];
}

def Tx_BlasGemmGeluOp : Tx_Op<"blas_gemm_gelu", [Pure]> {
  let summary = "a GEMM with a tanh-GELU epilogue that also writes its pre-activation";
  let description = [{
    A linear layer followed by GPT-2's GELU as one library GEMM call
    (cuBLASLt's GELU_AUX / GELU_AUX_BIAS epilogue), in row-major terms:

    ```
    s[..., i, j] = alpha * sum_k A[..., i, k] * B[k, j] + bias[j]
    result = round_to(type(result), gelu(s))
    pre_activation = round_to(type(result), s)
    gelu(s) = 0.5 s (1 + tanh(sqrt(2 / pi) (s + 0.044715 s^3)))
    ```

    with `A = transpose_a ? a^T : a` and `B = transpose_b ? b^T : b` as in
    `tx.blas_gemm`. Both results are computed from the unrounded sum: the
    GELU is not applied to the rounded pre-activation. `pre_activation` is
    what the backward's GELU gradient reads (cuBLASLt's auxiliary output).

    - `a`, `b`, the results (and `bias`) are bf16 or f16, one type: the
      GPU's epilogue computes tanh approximately (a rounding of bf16 or
      f16 hides it; an f32 step keeps its GELU in a kernel), and FP8
      operands take their GELU through the cast kernel that quantizes it.
    - `b` is one matrix `[K, N]` (`[N, K]` transposed); `a` is `[..., M, K]`
      (its leading dims fold into M, so it is not transposed unless it is
      one matrix). The epilogue's pre-activation has N as its leading
      dimension, which cuBLASLt needs to be a multiple of 8.
    - `bias` (optional) is `[N]`.

    tx-gemm-gelu forms it from a `tx.blas_gemm` whose result (plus a row
    bias) feeds the tanh-GELU chain.

    ```mlir
    %y, %pre = tx.blas_gemm_gelu %x, %w, %b : tensor<64x128xbf16>, tensor<128x512xbf16>, tensor<512xbf16> -> tensor<64x512xbf16>, tensor<64x512xbf16>
    ```
  }];
  let arguments = (ins Tx_GemmOperandTensor:$a, Tx_GemmOperandTensor:$b,
                       Optional<Tx_NumericTensor>:$bias,
                       UnitAttr:$transpose_a, UnitAttr:$transpose_b,
                       DefaultValuedAttr<F32Attr, "1.0">:$alpha);
  let results = (outs Tx_HighPrecisionTensor:$result, Tx_HighPrecisionTensor:$pre_activation);
  let assemblyFormat = [{
    $a `,` $b (`,` $bias^)? attr-dict `:` type($a) `,` type($b) (`,` type($bias)^)?
    `->` type($result) `,` type($pre_activation)
  }];
  let hasVerifier = 1;
}

#endif // TXOPT_DIALECT_TX_IR_TXGEMMOPS_TD
