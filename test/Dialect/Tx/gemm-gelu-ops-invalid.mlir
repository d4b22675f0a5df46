// RUN: txopt-opt %s --split-input-file --verify-diagnostics

// One case per branch of the tx.blas_gemm_gelu verifier (TxGemmOps.cpp),
// and valid ops (no diagnostic): with a bias, batched a, transposes.

func.func @valid(%a: tensor<2x6x8xbf16>, %b: tensor<16x8xbf16>, %bias: tensor<16xbf16>) -> (tensor<2x6x16xbf16>, tensor<2x6x16xbf16>) {
  %y, %pre = tx.blas_gemm_gelu %a, %b, %bias {transpose_b, alpha = 0.5 : f32}
      : tensor<2x6x8xbf16>, tensor<16x8xbf16>, tensor<16xbf16> -> tensor<2x6x16xbf16>, tensor<2x6x16xbf16>
  return %y, %pre : tensor<2x6x16xbf16>, tensor<2x6x16xbf16>
}

// -----

func.func @valid_transposed_a(%a: tensor<8x6xf16>, %b: tensor<8x16xf16>) -> (tensor<6x16xf16>, tensor<6x16xf16>) {
  %y, %pre = tx.blas_gemm_gelu %a, %b {transpose_a} : tensor<8x6xf16>, tensor<8x16xf16> -> tensor<6x16xf16>, tensor<6x16xf16>
  return %y, %pre : tensor<6x16xf16>, tensor<6x16xf16>
}

// -----

func.func @f32(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{expected bf16 or f16 operands (the GPU's GELU epilogue computes tanh approximately, within their rounding), but got 'f32'}}
  %y, %pre = tx.blas_gemm_gelu %a, %b : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>, tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

func.func @fp8(%a: tensor<4x8xf8E4M3FN>, %b: tensor<8x16xf8E4M3FN>) -> tensor<4x16xbf16> {
  // expected-error @+1 {{expected bf16 or f16 operands}}
  %y, %pre = tx.blas_gemm_gelu %a, %b : tensor<4x8xf8E4M3FN>, tensor<8x16xf8E4M3FN> -> tensor<4x16xbf16>, tensor<4x16xbf16>
  return %y : tensor<4x16xbf16>
}

// -----

func.func @mixed_types(%a: tensor<4x8xbf16>, %b: tensor<8x16xbf16>) -> tensor<4x16xf16> {
  // expected-error @+1 {{expected one element type for operands and results, but got 'bf16', 'bf16', 'f16' and 'bf16'}}
  %y, %pre = tx.blas_gemm_gelu %a, %b : tensor<4x8xbf16>, tensor<8x16xbf16> -> tensor<4x16xf16>, tensor<4x16xbf16>
  return %y : tensor<4x16xf16>
}

// -----

func.func @batched_b(%a: tensor<2x4x8xbf16>, %b: tensor<2x8x16xbf16>) -> tensor<2x4x16xbf16> {
  // expected-error @+1 {{expected 'b' to be one matrix, but got [2, 8, 16]}}
  %y, %pre = tx.blas_gemm_gelu %a, %b : tensor<2x4x8xbf16>, tensor<2x8x16xbf16> -> tensor<2x4x16xbf16>, tensor<2x4x16xbf16>
  return %y : tensor<2x4x16xbf16>
}

// -----

func.func @batched_transposed_a(%a: tensor<2x8x4xbf16>, %b: tensor<8x16xbf16>) -> tensor<2x4x16xbf16> {
  // expected-error @+1 {{expected 'a' of rank 2, or of higher rank not transposed (its leading dims fold into M), but got [2, 8, 4] (transposed)}}
  %y, %pre = tx.blas_gemm_gelu %a, %b {transpose_a} : tensor<2x8x4xbf16>, tensor<8x16xbf16> -> tensor<2x4x16xbf16>, tensor<2x4x16xbf16>
  return %y : tensor<2x4x16xbf16>
}

// -----

func.func @contraction(%a: tensor<4x8xbf16>, %b: tensor<16x16xbf16>) -> tensor<4x16xbf16> {
  // expected-error @+1 {{expected matching contraction dims, but got 8 in [4, 8] and 16 in [16, 16]}}
  %y, %pre = tx.blas_gemm_gelu %a, %b : tensor<4x8xbf16>, tensor<16x16xbf16> -> tensor<4x16xbf16>, tensor<4x16xbf16>
  return %y : tensor<4x16xbf16>
}

// -----

func.func @result_shape(%a: tensor<4x8xbf16>, %b: tensor<8x16xbf16>) -> tensor<4x16xbf16> {
  // expected-error @+1 {{expected results of shape [4, 16], but got [16, 4]}}
  %y, %pre = tx.blas_gemm_gelu %a, %b : tensor<4x8xbf16>, tensor<8x16xbf16> -> tensor<4x16xbf16>, tensor<16x4xbf16>
  return %y : tensor<4x16xbf16>
}

// -----

func.func @n_not_multiple_of_8(%a: tensor<4x8xbf16>, %b: tensor<8x12xbf16>) -> tensor<4x12xbf16> {
  // expected-error @+1 {{expected N a multiple of 8 (cuBLASLt's leading dimension of the pre-activation), but got 12}}
  %y, %pre = tx.blas_gemm_gelu %a, %b : tensor<4x8xbf16>, tensor<8x12xbf16> -> tensor<4x12xbf16>, tensor<4x12xbf16>
  return %y : tensor<4x12xbf16>
}

// -----

func.func @bias_type(%a: tensor<4x8xbf16>, %b: tensor<8x16xbf16>, %bias: tensor<16xf32>) -> tensor<4x16xbf16> {
  // expected-error @+1 {{expected 'bias' of type 'tensor<16xbf16>', but got 'tensor<16xf32>'}}
  %y, %pre = tx.blas_gemm_gelu %a, %b, %bias : tensor<4x8xbf16>, tensor<8x16xbf16>, tensor<16xf32> -> tensor<4x16xbf16>, tensor<4x16xbf16>
  return %y : tensor<4x16xbf16>
}
