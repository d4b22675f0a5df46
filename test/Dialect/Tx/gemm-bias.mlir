// RUN: txopt-opt %s --split-input-file --tx-gemm-bias --verify-diagnostics | FileCheck %s

// tx-gemm-bias: a row-vector bias added to a GEMM's result folds into the
// GEMM as its c (beta 1: cuBLASLt's epilogue bias on the GPU) where only
// layout ops and library calls read the sum; elsewhere a remark says why
// not. The executor computes the folded form with one rounding
// (test/Reference/blas-gemm.test covers c).

// GPT-2's q/k/v projection in a bf16 step: widened to f32, the bias added,
// split into heads for attention. The bias is rounded to bf16 and added in
// the GEMM; the widening cast now follows the GEMM.
// CHECK-LABEL: func.func @qkv_to_attention
// CHECK: %[[B:.*]] = tx.cast %arg2 : tensor<24xf32> to tensor<24xbf16>
// CHECK: %[[Y:.*]] = tx.blas_gemm %arg0, %arg1, %[[B]] : tensor<1x4x8xbf16>, tensor<8x24xbf16>, tensor<24xbf16> -> tensor<1x4x24xbf16>
// CHECK: %[[F:.*]] = tx.cast %[[Y]] : tensor<1x4x24xbf16> to tensor<1x4x24xf32>
// CHECK-NOT: tx.add
// CHECK: tx.split %[[F]] axis(2)
func.func @qkv_to_attention(%x: tensor<1x4x8xbf16>, %w: tensor<8x24xbf16>, %bias: tensor<24xf32>) -> tensor<1x1x4x8xbf16> {
  %y = tx.blas_gemm %x, %w : tensor<1x4x8xbf16>, tensor<8x24xbf16> -> tensor<1x4x24xbf16>
  %f = tx.cast %y : tensor<1x4x24xbf16> to tensor<1x4x24xf32>
  %s = tx.add %f, %bias : tensor<1x4x24xf32>, tensor<24xf32>
  %p:3 = tx.split %s axis(2) : tensor<1x4x24xf32> -> tensor<1x4x8xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>
  %q0 = tx.reshape %p#0 : tensor<1x4x8xf32> -> tensor<1x4x1x8xf32>
  %k0 = tx.reshape %p#1 : tensor<1x4x8xf32> -> tensor<1x4x1x8xf32>
  %v0 = tx.reshape %p#2 : tensor<1x4x8xf32> -> tensor<1x4x1x8xf32>
  %q1 = tx.transpose %q0 perm [0, 2, 1, 3] : tensor<1x4x1x8xf32>
  %k1 = tx.transpose %k0 perm [0, 2, 1, 3] : tensor<1x4x1x8xf32>
  %v1 = tx.transpose %v0 perm [0, 2, 1, 3] : tensor<1x4x1x8xf32>
  %q = tx.cast %q1 : tensor<1x1x4x8xf32> to tensor<1x1x4x8xbf16>
  %k = tx.cast %k1 : tensor<1x1x4x8xf32> to tensor<1x1x4x8xbf16>
  %v = tx.cast %v1 : tensor<1x1x4x8xf32> to tensor<1x1x4x8xbf16>
  %o, %lse = tx.attention %q, %k, %v scale(0.35355339059327379) causal : tensor<1x1x4x8xbf16>, tensor<1x1x4x8xbf16>, tensor<1x1x4x8xbf16>
  return %o : tensor<1x1x4x8xbf16>
}

// -----

// f32, the bias first (add is commutative) as [1, N], the sum read by
// another GEMM through a transpose: the bias is reshaped to [N], not cast.
// CHECK-LABEL: func.func @f32_into_gemm
// CHECK: %[[B:.*]] = tx.reshape %arg2 : tensor<1x6xf32> -> tensor<6xf32>
// CHECK: %[[Y:.*]] = tx.blas_gemm %arg0, %arg1, %[[B]] : tensor<4x8xf32>, tensor<8x6xf32>, tensor<6xf32> -> tensor<4x6xf32>
// CHECK-NOT: tx.add
// CHECK: tx.transpose %[[Y]]
func.func @f32_into_gemm(%x: tensor<4x8xf32>, %w: tensor<8x6xf32>, %bias: tensor<1x6xf32>, %z: tensor<4x5xf32>) -> tensor<6x5xf32> {
  %y = tx.blas_gemm %x, %w : tensor<4x8xf32>, tensor<8x6xf32> -> tensor<4x6xf32>
  %s = tx.add %bias, %y : tensor<1x6xf32>, tensor<4x6xf32>
  %t = tx.transpose %s perm [1, 0] : tensor<4x6xf32>
  %r = tx.blas_gemm %t, %z : tensor<6x4xf32>, tensor<4x5xf32> -> tensor<6x5xf32>
  return %r : tensor<6x5xf32>
}

// -----

// An FP8 GEMM with a bf16 result takes the bias too (cuBLASLt's FP8 bias
// is bf16 when D is); its scales and flags carry over.
// CHECK-LABEL: func.func @fp8
// CHECK: %[[B:.*]] = tx.cast %arg4 : tensor<6xf32> to tensor<6xbf16>
// CHECK: tx.blas_gemm %arg0, %arg1, %[[B]] scale_inv(%arg2, %arg3) {fast_accumulation, transpose_b} : tensor<4x8xf8E4M3FN>, tensor<6x8xf8E4M3FN>, tensor<6xbf16> -> tensor<4x6xbf16>
// CHECK-NOT: tx.add
func.func @fp8(%x: tensor<4x8xf8E4M3FN>, %w: tensor<6x8xf8E4M3FN>, %sx: tensor<f32>, %sw: tensor<f32>, %bias: tensor<6xf32>, %z: tensor<6x3xbf16>) -> tensor<4x3xbf16> {
  %y = tx.blas_gemm %x, %w scale_inv(%sx, %sw) {fast_accumulation, transpose_b} : tensor<4x8xf8E4M3FN>, tensor<6x8xf8E4M3FN> -> tensor<4x6xbf16>
  %f = tx.cast %y : tensor<4x6xbf16> to tensor<4x6xf32>
  %s = tx.add %f, %bias : tensor<4x6xf32>, tensor<6xf32>
  %h = tx.cast %s : tensor<4x6xf32> to tensor<4x6xbf16>
  %r = tx.blas_gemm %h, %z : tensor<4x6xbf16>, tensor<6x3xbf16> -> tensor<4x3xbf16>
  return %r : tensor<4x3xbf16>
}

// -----

// Must not fire: the sum is computed with (a GELU's first op): that kernel
// adds the bias at no extra traffic.
// CHECK-LABEL: func.func @read_by_compute
// CHECK: tx.blas_gemm %arg0, %arg1 :
// CHECK: tx.add
func.func @read_by_compute(%x: tensor<4x8xf32>, %w: tensor<8x6xf32>, %bias: tensor<6xf32>) -> tensor<4x6xf32> {
  %y = tx.blas_gemm %x, %w : tensor<4x8xf32>, tensor<8x6xf32> -> tensor<4x6xf32>
  // expected-remark @below {{bias add not folded into its GEMM: 'tx.tanh' reads the sum (the add runs in its kernel)}}
  %s = tx.add %y, %bias : tensor<4x6xf32>, tensor<6xf32>
  %g = tx.tanh %s : tensor<4x6xf32>
  return %g : tensor<4x6xf32>
}

// -----

// Must not fire: only layout ops read the sum, into the function's result.
func.func @returned(%x: tensor<4x8xf32>, %w: tensor<8x6xf32>, %bias: tensor<6xf32>) -> tensor<6x4xf32> {
  %y = tx.blas_gemm %x, %w : tensor<4x8xf32>, tensor<8x6xf32> -> tensor<4x6xf32>
  // expected-remark @below {{'func.return' reads the sum (the add runs in its kernel)}}
  %s = tx.add %y, %bias : tensor<4x6xf32>, tensor<6xf32>
  %t = tx.transpose %s perm [1, 0] : tensor<4x6xf32>
  return %t : tensor<6x4xf32>
}

// -----

// Must not fire: the GEMM's result is read without the bias too.
func.func @product_read_twice(%x: tensor<4x8xf32>, %w: tensor<8x6xf32>, %bias: tensor<6xf32>, %z: tensor<6x3xf32>) -> (tensor<4x3xf32>, tensor<4x6xf32>) {
  %y = tx.blas_gemm %x, %w : tensor<4x8xf32>, tensor<8x6xf32> -> tensor<4x6xf32>
  // expected-remark @below {{the GEMM's result is read without the bias too}}
  %s = tx.add %y, %bias : tensor<4x6xf32>, tensor<6xf32>
  %r = tx.blas_gemm %s, %z : tensor<4x6xf32>, tensor<6x3xf32> -> tensor<4x3xf32>
  return %r, %y : tensor<4x3xf32>, tensor<4x6xf32>
}

// -----

// Must not fire: a column vector (one number per row) is not cuBLASLt's
// bias, which runs along the columns.
func.func @column_vector(%x: tensor<4x8xf32>, %w: tensor<8x6xf32>, %bias: tensor<4x1xf32>, %z: tensor<6x3xf32>) -> tensor<4x3xf32> {
  %y = tx.blas_gemm %x, %w : tensor<4x8xf32>, tensor<8x6xf32> -> tensor<4x6xf32>
  // expected-remark @below {{the other operand [4, 1] is not a row vector over the GEMM's 6 columns}}
  %s = tx.add %y, %bias : tensor<4x6xf32>, tensor<4x1xf32>
  %r = tx.blas_gemm %s, %z : tensor<4x6xf32>, tensor<6x3xf32> -> tensor<4x3xf32>
  return %r : tensor<4x3xf32>
}

// -----

// Must not fire: the GEMM already adds a c (ONNX Gemm's C).
func.func @has_c(%x: tensor<4x8xf32>, %w: tensor<8x6xf32>, %c: tensor<6xf32>, %bias: tensor<6xf32>, %z: tensor<6x3xf32>) -> tensor<4x3xf32> {
  %y = tx.blas_gemm %x, %w, %c : tensor<4x8xf32>, tensor<8x6xf32>, tensor<6xf32> -> tensor<4x6xf32>
  // expected-remark @below {{its GEMM already adds a c}}
  %s = tx.add %y, %bias : tensor<4x6xf32>, tensor<6xf32>
  %r = tx.blas_gemm %s, %z : tensor<4x6xf32>, tensor<6x3xf32> -> tensor<4x3xf32>
  return %r : tensor<4x3xf32>
}

// -----

// Must not fire: an FP8 GEMM with an f32 result (cuBLASLt's FP8 bias would
// be bf16, not the sum's type).
func.func @fp8_f32_result(%x: tensor<4x8xf8E4M3FN>, %w: tensor<6x8xf8E4M3FN>, %sx: tensor<f32>, %sw: tensor<f32>, %bias: tensor<6xf32>, %z: tensor<6x3xf32>) -> tensor<4x3xf32> {
  %y = tx.blas_gemm %x, %w scale_inv(%sx, %sw) {transpose_b} : tensor<4x8xf8E4M3FN>, tensor<6x8xf8E4M3FN> -> tensor<4x6xf32>
  // expected-remark @below {{an FP8 GEMM takes a bias only with a bf16 or f16 result}}
  %s = tx.add %y, %bias : tensor<4x6xf32>, tensor<6xf32>
  %r = tx.blas_gemm %s, %z : tensor<4x6xf32>, tensor<6x3xf32> -> tensor<4x3xf32>
  return %r : tensor<4x3xf32>
}

// -----

// Must not fire: the add broadcasts the GEMM's result (a [4, 6] product
// against a [2, 4, 6] addend is not a bias).
func.func @broadcast_product(%x: tensor<4x8xf32>, %w: tensor<8x6xf32>, %other: tensor<2x4x6xf32>, %z: tensor<6x3xf32>) -> tensor<2x4x3xf32> {
  %y = tx.blas_gemm %x, %w : tensor<4x8xf32>, tensor<8x6xf32> -> tensor<4x6xf32>
  // expected-remark @below {{the add broadcasts the GEMM's result}}
  %s = tx.add %y, %other : tensor<4x6xf32>, tensor<2x4x6xf32>
  %r = tx.blas_gemm %s, %z : tensor<2x4x6xf32>, tensor<6x3xf32> -> tensor<2x4x3xf32>
  return %r : tensor<2x4x3xf32>
}
