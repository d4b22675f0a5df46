// RUN: txopt-opt %s --split-input-file --tx-gemm-normal-form | FileCheck %s

// tx-gemm-normal-form: every GEMM becomes one tx.blas_gemm, the
// last-two-dims transposes it reads become its flags (and disappear when
// nothing else reads them). The numerics are checked on the executor by
// test/Reference/blas-gemm.test (each rewrite gives the same bits).

// A linear layer reading its weight transposed (PyTorch's x @ W^T): the
// transpose is the flag; a 3-D activation against a shared 2-D weight.
// CHECK-LABEL: func.func @linear
// CHECK-NOT: tx.transpose
// CHECK: %[[Y:.*]] = tx.blas_gemm %arg0, %arg1 {transpose_b} : tensor<4x6x8xf32>, tensor<5x8xf32> -> tensor<4x6x5xf32>
// CHECK-NEXT: return %[[Y]]
func.func @linear(%x: tensor<4x6x8xf32>, %w: tensor<5x8xf32>) -> tensor<4x6x5xf32> {
  %t = tx.transpose %w perm [1, 0] : tensor<5x8xf32>
  %y = tx.matmul %x, %t : tensor<4x6x8xf32>, tensor<8x5xf32>
  return %y : tensor<4x6x5xf32>
}

// -----

// Both operands transposed, batched on both sides (attention's q k^T shape
// class); the result keeps the batch dims.
// CHECK-LABEL: func.func @batched
// CHECK-NOT: tx.transpose
// CHECK: tx.blas_gemm %arg0, %arg1 {transpose_a, transpose_b} : tensor<2x3x8x6xbf16>, tensor<2x3x5x8xbf16> -> tensor<2x3x6x5xbf16>
func.func @batched(%a: tensor<2x3x8x6xbf16>, %b: tensor<2x3x5x8xbf16>) -> tensor<2x3x6x5xbf16> {
  %at = tx.transpose %a perm [0, 1, 3, 2] : tensor<2x3x8x6xbf16>
  %bt = tx.transpose %b perm [0, 1, 3, 2] : tensor<2x3x5x8xbf16>
  %y = tx.matmul %at, %bt : tensor<2x3x6x8xbf16>, tensor<2x3x8x5xbf16>
  return %y : tensor<2x3x6x5xbf16>
}

// -----

// ONNX Gemm: its flags, alpha, beta and C carry over; a transpose it reads
// toggles the flag (transA of a transposed A is A as stored).
// CHECK-LABEL: func.func @gemm
// CHECK: tx.blas_gemm %arg0, %arg1, %arg2 {alpha = 5.000000e-01 : f32, beta = 2.000000e+00 : f32, transpose_b} : tensor<6x8xf32>, tensor<5x8xf32>, tensor<5xf32> -> tensor<6x5xf32>
// CHECK-NOT: tx.transpose
// CHECK: tx.blas_gemm %arg0, %arg1 {transpose_b} : tensor<6x8xf32>, tensor<5x8xf32> -> tensor<6x5xf32>
func.func @gemm(%a: tensor<6x8xf32>, %b: tensor<5x8xf32>, %c: tensor<5xf32>) -> (tensor<6x5xf32>, tensor<6x5xf32>) {
  %y = tx.gemm %a, %b, %c {alpha = 0.5 : f32, beta = 2.0 : f32, transB = true} : tensor<6x8xf32>, tensor<5x8xf32>, tensor<5xf32>
  %at = tx.transpose %a perm [1, 0] : tensor<6x8xf32>
  %z = tx.gemm %at, %b {transA = true, transB = true} : tensor<8x6xf32>, tensor<5x8xf32>
  return %y, %z : tensor<6x5xf32>, tensor<6x5xf32>
}

// -----

// FP8: the scale inverses move onto the op; a transposed b is folded (what
// cuBLASLt's TN form reads anyway), a transposed a is not (no FP8 kernel
// reads a transposed A): that transpose stays and is read as it is.
// CHECK-LABEL: func.func @fp8
// CHECK: %[[AT:.*]] = tx.transpose %arg0 perm [1, 0]
// CHECK-NOT: tx.transpose
// CHECK: tx.blas_gemm %[[AT]], %arg1 scale_inv(%arg2, %arg3) {transpose_b} : tensor<6x8xf8E5M2>, tensor<5x8xf8E4M3FN> -> tensor<6x5xbf16>
// fast_accumulation comes along (and stays off where it was off).
// CHECK: tx.blas_gemm %arg1, %arg4 scale_inv(%arg3, %arg3) {fast_accumulation} : tensor<5x8xf8E4M3FN>, tensor<8x5xf8E4M3FN> -> tensor<5x5xf32>
func.func @fp8(%a: tensor<8x6xf8E5M2>, %b: tensor<5x8xf8E4M3FN>, %sa: tensor<f32>, %sb: tensor<f32>, %c: tensor<8x5xf8E4M3FN>) -> (tensor<6x5xbf16>, tensor<5x5xf32>) {
  %at = tx.transpose %a perm [1, 0] : tensor<8x6xf8E5M2>
  %bt = tx.transpose %b perm [1, 0] : tensor<5x8xf8E4M3FN>
  %y = tx.fp8_matmul %at, %bt scale_inv(%sa, %sb) : tensor<6x8xf8E5M2>, tensor<8x5xf8E4M3FN> -> tensor<6x5xbf16>
  %z = tx.fp8_matmul %b, %c scale_inv(%sb, %sb) {fast_accumulation} : tensor<5x8xf8E4M3FN>, tensor<8x5xf8E4M3FN> -> tensor<5x5xf32>
  return %y, %z : tensor<6x5xbf16>, tensor<5x5xf32>
}

// -----

// Must not fold: a transpose something else reads too is computed anyway,
// so the GEMM reads it as it is (still in normal form, without the flag).
// CHECK-LABEL: func.func @shared_transpose
// CHECK: %[[T:.*]] = tx.transpose %arg1 perm [1, 0]
// CHECK: tx.blas_gemm %arg0, %[[T]] : tensor<6x8xf32>, tensor<8x5xf32> -> tensor<6x5xf32>
// CHECK: tx.relu %[[T]]
func.func @shared_transpose(%x: tensor<6x8xf32>, %w: tensor<5x8xf32>) -> (tensor<6x5xf32>, tensor<8x5xf32>) {
  %t = tx.transpose %w perm [1, 0] : tensor<5x8xf32>
  %y = tx.matmul %x, %t : tensor<6x8xf32>, tensor<8x5xf32>
  %r = tx.relu %t : tensor<8x5xf32>
  return %y, %r : tensor<6x5xf32>, tensor<8x5xf32>
}

// -----

// Must not fold: a transpose of other dims than the last two.
// CHECK-LABEL: func.func @head_split
// CHECK: %[[T:.*]] = tx.transpose %arg0 perm [1, 0, 2]
// CHECK: tx.blas_gemm %[[T]], %arg1 :
func.func @head_split(%x: tensor<3x2x8xf32>, %w: tensor<8x5xf32>) -> tensor<2x3x5xf32> {
  %t = tx.transpose %x perm [1, 0, 2] : tensor<3x2x8xf32>
  %y = tx.matmul %t, %w : tensor<2x3x8xf32>, tensor<8x5xf32>
  return %y : tensor<2x3x5xf32>
}

// -----

// Must not fire: GEMMs without a normal form stay as they are, and so do
// the transposes they read: integer operands, a vector operand (numpy's
// insert-and-remove-a-dim rule), batch dims broadcast on both sides (a
// strided batch has one stride per side).
// CHECK-LABEL: func.func @no_normal_form
// CHECK-NOT: tx.blas_gemm
// CHECK: tx.transpose
// CHECK: tx.matmul {{.*}} : tensor<3x2xi64>, tensor<2x4xi64>
// CHECK: tx.matmul {{.*}} : tensor<4x3xf32>, tensor<3xf32>
// CHECK: tx.matmul {{.*}} : tensor<2x1x4x3xf32>, tensor<1x5x3x2xf32>
// CHECK-NOT: tx.blas_gemm
func.func @no_normal_form(%i: tensor<2x3xi64>, %j: tensor<2x4xi64>, %x: tensor<4x3xf32>, %v: tensor<3xf32>,
                          %p: tensor<2x1x4x3xf32>, %q: tensor<1x5x3x2xf32>)
    -> (tensor<3x4xi64>, tensor<4xf32>, tensor<2x5x4x2xf32>) {
  %it = tx.transpose %i perm [1, 0] : tensor<2x3xi64>
  %ii = tx.matmul %it, %j : tensor<3x2xi64>, tensor<2x4xi64>
  %xv = tx.matmul %x, %v : tensor<4x3xf32>, tensor<3xf32>
  %pq = tx.matmul %p, %q : tensor<2x1x4x3xf32>, tensor<1x5x3x2xf32>
  return %ii, %xv, %pq : tensor<3x4xi64>, tensor<4xf32>, tensor<2x5x4x2xf32>
}
