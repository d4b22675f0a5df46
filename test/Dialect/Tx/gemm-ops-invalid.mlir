// RUN: txopt-opt %s --split-input-file --verify-diagnostics

// One case per branch of the tx.blas_gemm verifier (TxGemmOps.cpp), the
// parser's both-scales rule, and a valid op with every operand and
// attribute (no diagnostic).

func.func @valid(%a: tensor<2x8x6xf16>, %b: tensor<5x8xf16>, %c: tensor<2x6x5xf16>) -> tensor<2x6x5xf16> {
  %y = tx.blas_gemm %a, %b, %c {transpose_a, transpose_b, alpha = 2.0 : f32, beta = 0.5 : f32}
      : tensor<2x8x6xf16>, tensor<5x8xf16>, tensor<2x6x5xf16> -> tensor<2x6x5xf16>
  return %y : tensor<2x6x5xf16>
}

// -----

func.func @one_scale(%a: tensor<4x8xf8E4M3FN>, %b: tensor<8x5xf8E4M3FN>, %s: tensor<f32>) -> tensor<4x5xf32> {
  // expected-error @+1 {{expected ','}}
  %y = tx.blas_gemm %a, %b scale_inv(%s) : tensor<4x8xf8E4M3FN>, tensor<8x5xf8E4M3FN> -> tensor<4x5xf32>
  return %y : tensor<4x5xf32>
}

// -----

func.func @one_scale_generic(%a: tensor<4x8xf8E4M3FN>, %b: tensor<8x5xf8E4M3FN>, %s: tensor<f32>) -> tensor<4x5xf32> {
  // expected-error @+1 {{'tx.blas_gemm' op expected both scale inverses or none}}
  %y = "tx.blas_gemm"(%a, %b, %s) {operandSegmentSizes = array<i32: 1, 1, 0, 1, 0>}
      : (tensor<4x8xf8E4M3FN>, tensor<8x5xf8E4M3FN>, tensor<f32>) -> tensor<4x5xf32>
  return %y : tensor<4x5xf32>
}

// -----

func.func @rank(%a: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tx.blas_gemm' op expected operands of rank at least 2, but got [4, 8] and [8]}}
  %y = tx.blas_gemm %a, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @mixed_fp8(%a: tensor<4x8xf8E4M3FN>, %b: tensor<8x5xbf16>, %s: tensor<f32>) -> tensor<4x5xbf16> {
  // expected-error @+1 {{'tx.blas_gemm' op expected both operands FP8 or neither, but got 'f8E4M3FN' and 'bf16'}}
  %y = tx.blas_gemm %a, %b scale_inv(%s, %s) : tensor<4x8xf8E4M3FN>, tensor<8x5xbf16> -> tensor<4x5xbf16>
  return %y : tensor<4x5xbf16>
}

// -----

func.func @fp8_unscaled(%a: tensor<4x8xf8E4M3FN>, %b: tensor<8x5xf8E4M3FN>) -> tensor<4x5xf32> {
  // expected-error @+1 {{'tx.blas_gemm' op expected the scale inverses of FP8 operands}}
  %y = tx.blas_gemm %a, %b : tensor<4x8xf8E4M3FN>, tensor<8x5xf8E4M3FN> -> tensor<4x5xf32>
  return %y : tensor<4x5xf32>
}

// -----

func.func @two_e5m2(%a: tensor<4x8xf8E5M2>, %b: tensor<8x5xf8E5M2>, %s: tensor<f32>) -> tensor<4x5xf32> {
  // expected-error @+1 {{'tx.blas_gemm' op expected at most one 'f8E5M2' operand, but got two (cuBLASLt has no E5M2 x E5M2 GEMM)}}
  %y = tx.blas_gemm %a, %b scale_inv(%s, %s) : tensor<4x8xf8E5M2>, tensor<8x5xf8E5M2> -> tensor<4x5xf32>
  return %y : tensor<4x5xf32>
}

// -----

func.func @fp8_transposed_a(%a: tensor<8x4xf8E4M3FN>, %b: tensor<8x5xf8E4M3FN>, %s: tensor<f32>) -> tensor<4x5xf32> {
  // expected-error @+1 {{'tx.blas_gemm' op expected an FP8 'a' not transposed (cuBLASLt's FP8 GEMMs take only the TN form)}}
  %y = tx.blas_gemm %a, %b scale_inv(%s, %s) {transpose_a} : tensor<8x4xf8E4M3FN>, tensor<8x5xf8E4M3FN> -> tensor<4x5xf32>
  return %y : tensor<4x5xf32>
}

// -----

func.func @scaled_bf16(%a: tensor<4x8xbf16>, %b: tensor<8x5xbf16>, %s: tensor<f32>) -> tensor<4x5xbf16> {
  // expected-error @+1 {{'tx.blas_gemm' op expected no scale inverses for 'bf16' operands}}
  %y = tx.blas_gemm %a, %b scale_inv(%s, %s) : tensor<4x8xbf16>, tensor<8x5xbf16> -> tensor<4x5xbf16>
  return %y : tensor<4x5xbf16>
}

// -----

func.func @types(%a: tensor<4x8xbf16>, %b: tensor<8x5xbf16>) -> tensor<4x5xf32> {
  // expected-error @+1 {{'tx.blas_gemm' op expected one element type for operands and result, but got 'bf16', 'bf16' and 'f32'}}
  %y = tx.blas_gemm %a, %b : tensor<4x8xbf16>, tensor<8x5xbf16> -> tensor<4x5xf32>
  return %y : tensor<4x5xf32>
}

// -----

func.func @contraction(%a: tensor<4x8xf32>, %b: tensor<5x8xf32>) -> tensor<4x5xf32> {
  // expected-error @+1 {{'tx.blas_gemm' op expected matching contraction dims, but got 8 in [4, 8] and 5 in [5, 8]}}
  %y = tx.blas_gemm %a, %b : tensor<4x8xf32>, tensor<5x8xf32> -> tensor<4x5xf32>
  return %y : tensor<4x5xf32>
}

// -----

func.func @batches(%a: tensor<2x1x4x8xf32>, %b: tensor<1x3x8x5xf32>) -> tensor<2x3x4x5xf32> {
  // expected-error @+1 {{'tx.blas_gemm' op expected the same batch dims on both sides or one side without a batch (stride 0), but got [2, 1, 4, 8] and [1, 3, 8, 5]}}
  %y = tx.blas_gemm %a, %b : tensor<2x1x4x8xf32>, tensor<1x3x8x5xf32> -> tensor<2x3x4x5xf32>
  return %y : tensor<2x3x4x5xf32>
}

// -----

func.func @result(%a: tensor<4x8xf32>, %b: tensor<5x8xf32>) -> tensor<5x4xf32> {
  // expected-error @+1 {{'tx.blas_gemm' op expected result shape [4, 5], but got [5, 4]}}
  %y = tx.blas_gemm %a, %b {transpose_b} : tensor<4x8xf32>, tensor<5x8xf32> -> tensor<5x4xf32>
  return %y : tensor<5x4xf32>
}

// -----

func.func @c(%a: tensor<4x8xf32>, %b: tensor<8x5xf32>, %c: tensor<4xf32>) -> tensor<4x5xf32> {
  // expected-error @+1 {{'tx.blas_gemm' op expected 'c' of the result's element type broadcasting to [4, 5], but got 'tensor<4xf32>'}}
  %y = tx.blas_gemm %a, %b, %c : tensor<4x8xf32>, tensor<8x5xf32>, tensor<4xf32> -> tensor<4x5xf32>
  return %y : tensor<4x5xf32>
}

// -----

func.func @fast_accumulation_not_fp8(%a: tensor<4x8xbf16>, %b: tensor<8x5xbf16>) -> tensor<4x5xbf16> {
  // expected-error @+1 {{'tx.blas_gemm' op expected 'fast_accumulation' only on FP8 operands (it is cuBLASLt's FP8 accumulator mode), but got 'bf16'}}
  %y = tx.blas_gemm %a, %b {fast_accumulation} : tensor<4x8xbf16>, tensor<8x5xbf16> -> tensor<4x5xbf16>
  return %y : tensor<4x5xbf16>
}

