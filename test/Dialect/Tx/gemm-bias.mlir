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
// another GEMM through a reshape (a view): the bias is reshaped to [N],
// not cast. The bias is defined between the GEMM and the add: the GEMM is
// rebuilt at the add, where the bias is available.
// CHECK-LABEL: func.func @f32_into_gemm
// CHECK: %[[BIAS:.*]] = tx.exp %arg2
// CHECK: %[[B:.*]] = tx.reshape %[[BIAS]] : tensor<1x6xf32> -> tensor<6xf32>
// CHECK: %[[Y:.*]] = tx.blas_gemm %arg0, %arg1, %[[B]] : tensor<4x8xf32>, tensor<8x6xf32>, tensor<6xf32> -> tensor<4x6xf32>
// CHECK-NOT: tx.add
// CHECK: tx.reshape %[[Y]] : tensor<4x6xf32> -> tensor<2x2x6xf32>
func.func @f32_into_gemm(%x: tensor<4x8xf32>, %w: tensor<8x6xf32>, %b0: tensor<1x6xf32>, %z: tensor<6x5xf32>) -> tensor<2x2x5xf32> {
  %y = tx.blas_gemm %x, %w : tensor<4x8xf32>, tensor<8x6xf32> -> tensor<4x6xf32>
  %bias = tx.exp %b0 : tensor<1x6xf32>
  %s = tx.add %bias, %y : tensor<1x6xf32>, tensor<4x6xf32>
  %r = tx.reshape %s : tensor<4x6xf32> -> tensor<2x2x6xf32>
  %o = tx.blas_gemm %r, %z : tensor<2x2x6xf32>, tensor<6x5xf32> -> tensor<2x2x5xf32>
  return %o : tensor<2x2x5xf32>
}

// -----

// An FP8 GEMM with a bf16 result takes the bias too (cuBLASLt's FP8 bias
// is bf16 when D is); its scales and flags carry over.
// CHECK-LABEL: func.func @fp8
// CHECK: %[[B:.*]] = tx.cast %arg4 : tensor<8xf32> to tensor<8xbf16>
// CHECK: tx.blas_gemm %arg0, %arg1, %[[B]] scale_inv(%arg2, %arg3) {fast_accumulation, transpose_b} : tensor<4x8xf8E4M3FN>, tensor<8x8xf8E4M3FN>, tensor<8xbf16> -> tensor<4x8xbf16>
// CHECK-NOT: tx.add
func.func @fp8(%x: tensor<4x8xf8E4M3FN>, %w: tensor<8x8xf8E4M3FN>, %sx: tensor<f32>, %sw: tensor<f32>, %bias: tensor<8xf32>) -> tensor<1x1x4x8xbf16> {
  %y = tx.blas_gemm %x, %w scale_inv(%sx, %sw) {fast_accumulation, transpose_b} : tensor<4x8xf8E4M3FN>, tensor<8x8xf8E4M3FN> -> tensor<4x8xbf16>
  %f = tx.cast %y : tensor<4x8xbf16> to tensor<4x8xf32>
  %s = tx.add %f, %bias : tensor<4x8xf32>, tensor<8xf32>
  %r = tx.reshape %s : tensor<4x8xf32> -> tensor<1x1x4x8xf32>
  %h = tx.cast %r : tensor<1x1x4x8xf32> to tensor<1x1x4x8xbf16>
  %o, %lse = tx.attention %h, %h, %h scale(0.35355339059327379) causal : tensor<1x1x4x8xbf16>, tensor<1x1x4x8xbf16>, tensor<1x1x4x8xbf16>
  return %o : tensor<1x1x4x8xbf16>
}

// -----

// BERT's masked-LM head in a bf16 step: the bias added to the widened
// logits, read (through a reshape) by the loss and its gradient only. Their
// row kernel takes no elementwise producer in, so the add would be a kernel
// over the whole logits: it folds, and the loss reads the GEMM's bf16
// result through the widening cast.
// CHECK-LABEL: func.func @lm_head_to_loss
// CHECK: %[[B:.*]] = tx.cast %arg2 : tensor<16xf32> to tensor<16xbf16>
// CHECK: %[[Y:.*]] = tx.blas_gemm %arg0, %arg1, %[[B]] {transpose_b} : tensor<2x4x8xbf16>, tensor<16x8xbf16>, tensor<16xbf16> -> tensor<2x4x16xbf16>
// CHECK: %[[F:.*]] = tx.cast %[[Y]] : tensor<2x4x16xbf16> to tensor<2x4x16xf32>
// CHECK-NOT: tx.add
// CHECK: %[[R:.*]] = tx.reshape %[[F]] : tensor<2x4x16xf32> -> tensor<8x16xf32>
// CHECK: tx.softmax_cross_entropy_loss %[[R]]
// CHECK: tx.softmax_cross_entropy_grad %{{.*}}, %[[R]]
func.func @lm_head_to_loss(%x: tensor<2x4x8xbf16>, %w: tensor<16x8xbf16>, %bias: tensor<16xf32>, %labels: tensor<8xi64>, %seed: tensor<f32>) -> (tensor<f32>, tensor<8x16xf32>) {
  %y = tx.blas_gemm %x, %w {transpose_b} : tensor<2x4x8xbf16>, tensor<16x8xbf16> -> tensor<2x4x16xbf16>
  %f = tx.cast %y : tensor<2x4x16xbf16> to tensor<2x4x16xf32>
  %s = tx.add %f, %bias : tensor<2x4x16xf32>, tensor<16xf32>
  %r = tx.reshape %s : tensor<2x4x16xf32> -> tensor<8x16xf32>
  %loss = tx.softmax_cross_entropy_loss %r, %labels reduction(mean) : tensor<8x16xf32>, tensor<8xi64>
  %g = tx.softmax_cross_entropy_grad %seed, %r, %labels reduction(mean) : tensor<f32>, tensor<8x16xf32>, tensor<8xi64>
  return %loss, %g : tensor<f32>, tensor<8x16xf32>
}

// -----

// Must not fire: the logits the loss reads are also read by a compute op
// (here an exp), whose kernel adds the bias at no extra traffic.
// CHECK-LABEL: func.func @lm_head_also_computed
// CHECK: tx.blas_gemm %arg0, %arg1 {transpose_b} :
// CHECK: tx.add
func.func @lm_head_also_computed(%x: tensor<8x8xbf16>, %w: tensor<16x8xbf16>, %bias: tensor<16xf32>, %labels: tensor<8xi64>) -> (tensor<f32>, tensor<8x16xf32>) {
  %y = tx.blas_gemm %x, %w {transpose_b} : tensor<8x8xbf16>, tensor<16x8xbf16> -> tensor<8x16xbf16>
  %f = tx.cast %y : tensor<8x16xbf16> to tensor<8x16xf32>
  // expected-remark @below {{bias add not folded into its GEMM: 'tx.exp' reads the sum (the add runs in its kernel)}}
  %s = tx.add %f, %bias : tensor<8x16xf32>, tensor<16xf32>
  %loss = tx.softmax_cross_entropy_loss %s, %labels reduction(mean) : tensor<8x16xf32>, tensor<8xi64>
  %e = tx.exp %s : tensor<8x16xf32>
  return %loss, %e : tensor<f32>, tensor<8x16xf32>
}

// -----

// Must not fire: the sum is computed with (a GELU's first op): that kernel
// adds the bias at no extra traffic.
// CHECK-LABEL: func.func @read_by_compute
// CHECK-NEXT: tx.blas_gemm %arg0, %arg1 :
// CHECK-NEXT: tx.add
func.func @read_by_compute(%x: tensor<4x8xf32>, %w: tensor<8x6xf32>, %bias: tensor<6xf32>) -> tensor<4x6xf32> {
  %y = tx.blas_gemm %x, %w : tensor<4x8xf32>, tensor<8x6xf32> -> tensor<4x6xf32>
  // expected-remark @below {{bias add not folded into its GEMM: 'tx.tanh' reads the sum (the add runs in its kernel)}}
  %s = tx.add %y, %bias : tensor<4x6xf32>, tensor<6xf32>
  %g = tx.tanh %s : tensor<4x6xf32>
  return %g : tensor<4x6xf32>
}

// -----

// Must not fire: only layout ops read the sum, into the function's result.
// CHECK-LABEL: func.func @returned
// CHECK: tx.add
func.func @returned(%x: tensor<4x8xf32>, %w: tensor<8x6xf32>, %bias: tensor<6xf32>) -> tensor<6x4xf32> {
  %y = tx.blas_gemm %x, %w : tensor<4x8xf32>, tensor<8x6xf32> -> tensor<4x6xf32>
  // expected-remark @below {{'func.return' reads the sum (the add runs in its kernel)}}
  %s = tx.add %y, %bias : tensor<4x6xf32>, tensor<6xf32>
  %t = tx.transpose %s perm [1, 0] : tensor<4x6xf32>
  return %t : tensor<6x4xf32>
}

// -----

// Must not fire: the GEMM's result is read without the bias too.
// CHECK-LABEL: func.func @product_read_twice
// CHECK: tx.add
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
// CHECK-LABEL: func.func @column_vector
// CHECK: tx.add
func.func @column_vector(%x: tensor<4x8xf32>, %w: tensor<8x6xf32>, %bias: tensor<4x1xf32>, %z: tensor<6x3xf32>) -> tensor<4x3xf32> {
  %y = tx.blas_gemm %x, %w : tensor<4x8xf32>, tensor<8x6xf32> -> tensor<4x6xf32>
  // expected-remark @below {{the other operand [4, 1] is not a row vector over the GEMM's 6 columns}}
  %s = tx.add %y, %bias : tensor<4x6xf32>, tensor<4x1xf32>
  %r = tx.blas_gemm %s, %z : tensor<4x6xf32>, tensor<6x3xf32> -> tensor<4x3xf32>
  return %r : tensor<4x3xf32>
}

// -----

// Must not fire: the GEMM already adds a c (ONNX Gemm's C).
// CHECK-LABEL: func.func @has_c
// CHECK: tx.add
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
// CHECK-LABEL: func.func @fp8_f32_result
// CHECK: tx.add
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
// CHECK-LABEL: func.func @broadcast_product
// CHECK: tx.add
func.func @broadcast_product(%x: tensor<4x8xf32>, %w: tensor<8x6xf32>, %other: tensor<2x4x6xf32>, %z: tensor<6x3xf32>) -> tensor<2x4x3xf32> {
  %y = tx.blas_gemm %x, %w : tensor<4x8xf32>, tensor<8x6xf32> -> tensor<4x6xf32>
  // expected-remark @below {{the add broadcasts the GEMM's result}}
  %s = tx.add %y, %other : tensor<4x6xf32>, tensor<2x4x6xf32>
  %r = tx.blas_gemm %s, %z : tensor<2x4x6xf32>, tensor<6x3xf32> -> tensor<2x4x3xf32>
  return %r : tensor<2x4x3xf32>
}

// -----

// Must not fire: a cast before the GEMM that reads the sum (the bf16 step's
// narrowing for a GEMM) is a kernel of its own, which adds the bias at no
// extra traffic; folding would only move the rounding.
// CHECK-LABEL: func.func @cast_before_gemm
// CHECK: tx.add
func.func @cast_before_gemm(%x: tensor<4x8xbf16>, %w: tensor<8x6xbf16>, %bias: tensor<6xf32>, %z: tensor<6x3xbf16>) -> tensor<4x3xbf16> {
  %y = tx.blas_gemm %x, %w : tensor<4x8xbf16>, tensor<8x6xbf16> -> tensor<4x6xbf16>
  %f = tx.cast %y : tensor<4x6xbf16> to tensor<4x6xf32>
  // expected-remark @below {{a split, transpose or cast before a GEMM is a kernel that reads the sum (the add runs in it)}}
  %s = tx.add %f, %bias : tensor<4x6xf32>, tensor<6xf32>
  %h = tx.cast %s : tensor<4x6xf32> to tensor<4x6xbf16>
  %r = tx.blas_gemm %h, %z : tensor<4x6xbf16>, tensor<6x3xbf16> -> tensor<4x3xbf16>
  return %r : tensor<4x3xbf16>
}

// -----

// Must not fire: a transpose left before a GEMM (tx-gemm-normal-form would
// have made a foldable one the GEMM's flag) is a copy kernel.
// CHECK-LABEL: func.func @transpose_before_gemm
// CHECK: tx.add
func.func @transpose_before_gemm(%x: tensor<4x8xf32>, %w: tensor<8x6xf32>, %bias: tensor<6xf32>, %z: tensor<4x5xf32>) -> tensor<6x5xf32> {
  %y = tx.blas_gemm %x, %w : tensor<4x8xf32>, tensor<8x6xf32> -> tensor<4x6xf32>
  // expected-remark @below {{a split, transpose or cast before a GEMM is a kernel that reads the sum}}
  %s = tx.add %y, %bias : tensor<4x6xf32>, tensor<6xf32>
  %t = tx.transpose %s perm [1, 0] : tensor<4x6xf32>
  %r = tx.blas_gemm %t, %z : tensor<6x4xf32>, tensor<4x5xf32> -> tensor<6x5xf32>
  return %r : tensor<6x5xf32>
}

// -----

// Must not fire: nothing but an unused reshape reads the sum.
// CHECK-LABEL: func.func @no_reader
// CHECK: tx.add
func.func @no_reader(%x: tensor<4x8xf32>, %w: tensor<8x6xf32>, %bias: tensor<6xf32>) {
  %y = tx.blas_gemm %x, %w : tensor<4x8xf32>, tensor<8x6xf32> -> tensor<4x6xf32>
  // expected-remark @below {{no library call reads the sum}}
  %s = tx.add %y, %bias : tensor<4x6xf32>, tensor<6xf32>
  %r = tx.reshape %s : tensor<4x6xf32> -> tensor<24xf32>
  return
}

// -----

// Must not fire: the cast of the GEMM's result is read without the bias too.
// CHECK-LABEL: func.func @cast_read_twice
// CHECK: tx.add
func.func @cast_read_twice(%x: tensor<4x8xbf16>, %w: tensor<8x8xbf16>, %bias: tensor<8xf32>) -> (tensor<1x1x4x8xbf16>, tensor<4x8xf32>) {
  %y = tx.blas_gemm %x, %w : tensor<4x8xbf16>, tensor<8x8xbf16> -> tensor<4x8xbf16>
  %f = tx.cast %y : tensor<4x8xbf16> to tensor<4x8xf32>
  // expected-remark @below {{the GEMM's result is read without the bias too}}
  %s = tx.add %f, %bias : tensor<4x8xf32>, tensor<8xf32>
  %r = tx.reshape %s : tensor<4x8xf32> -> tensor<1x1x4x8xf32>
  %h = tx.cast %r : tensor<1x1x4x8xf32> to tensor<1x1x4x8xbf16>
  %o, %lse = tx.attention %h, %h, %h scale(0.35355339059327379) causal : tensor<1x1x4x8xbf16>, tensor<1x1x4x8xbf16>, tensor<1x1x4x8xbf16>
  return %o, %f : tensor<1x1x4x8xbf16>, tensor<4x8xf32>
}

// -----

// Must not fire: an FP8 GEMM whose b has batch dims (cuBLASLt's bias runs
// over one matrix).
// CHECK-LABEL: func.func @fp8_batched_b
// CHECK: tx.add
func.func @fp8_batched_b(%x: tensor<2x4x8xf8E4M3FN>, %w: tensor<2x8x8xf8E4M3FN>, %sx: tensor<f32>, %sw: tensor<f32>, %bias: tensor<8xf32>) -> tensor<2x1x4x8xbf16> {
  %y = tx.blas_gemm %x, %w scale_inv(%sx, %sw) {transpose_b} : tensor<2x4x8xf8E4M3FN>, tensor<2x8x8xf8E4M3FN> -> tensor<2x4x8xbf16>
  %f = tx.cast %y : tensor<2x4x8xbf16> to tensor<2x4x8xf32>
  // expected-remark @below {{an FP8 GEMM takes a bias only over one matrix (its b has batch dims)}}
  %s = tx.add %f, %bias : tensor<2x4x8xf32>, tensor<8xf32>
  %r = tx.reshape %s : tensor<2x4x8xf32> -> tensor<2x1x4x8xf32>
  %h = tx.cast %r : tensor<2x1x4x8xf32> to tensor<2x1x4x8xbf16>
  %o, %lse = tx.attention %h, %h, %h scale(0.35355339059327379) causal : tensor<2x1x4x8xbf16>, tensor<2x1x4x8xbf16>, tensor<2x1x4x8xbf16>
  return %o : tensor<2x1x4x8xbf16>
}

// -----

// Must not fire: an integer bias (after a cast of the product to i32).
// CHECK-LABEL: func.func @integer_bias
// CHECK: tx.add
func.func @integer_bias(%x: tensor<4x8xf32>, %w: tensor<8x6xf32>, %bias: tensor<6xi32>, %z: tensor<6x3xf32>) -> tensor<4x6xi32> {
  %y = tx.blas_gemm %x, %w : tensor<4x8xf32>, tensor<8x6xf32> -> tensor<4x6xf32>
  %i = tx.cast %y : tensor<4x6xf32> to tensor<4x6xi32>
  // expected-remark @below {{the bias is not a float}}
  %s = tx.add %i, %bias : tensor<4x6xi32>, tensor<6xi32>
  return %s : tensor<4x6xi32>
}
