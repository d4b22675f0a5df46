// RUN: txopt-opt %s --split-input-file --tx-loss-bias-gradient --verify-diagnostics | FileCheck %s

// tx-loss-bias-gradient: the column sums of an f32 loss gradient that is
// otherwise read only by one cast to bf16/f16 read that rounded copy
// (widened) instead, as PyTorch's autocast sums its bf16 gradient. The
// rounding is taken once, right after the loss op.

// BERT's LM head in a bf16 step: the bias gradient sums the [B, T, C]
// gradient; the GEMMs read its bf16 copy. Both went through reshapes of
// the [B*T, C] gradient.
// CHECK-LABEL: func.func @lm_head_bias
// CHECK: %[[G:.*]] = tx.softmax_cross_entropy_grad
// CHECK-NEXT: %[[R:.*]] = tx.cast %[[G]] : tensor<8x16xf32> to tensor<8x16xbf16>
// CHECK-NEXT: %[[W:.*]] = tx.cast %[[R]] : tensor<8x16xbf16> to tensor<8x16xf32>
// CHECK-NEXT: %[[WV:.*]] = tx.reshape %[[W]] : tensor<8x16xf32> -> tensor<2x4x16xf32>
// CHECK-NEXT: %[[DB:.*]] = tx.reduce_sum %[[WV]] axes [0, 1] : tensor<2x4x16xf32>
// CHECK-NEXT: %[[RV:.*]] = tx.reshape %[[R]] : tensor<8x16xbf16> -> tensor<2x4x16xbf16>
// CHECK-NEXT: tx.blas_gemm %[[RV]], %arg3 :
// CHECK-NOT: tx.cast
// CHECK: return %[[DB]]
func.func @lm_head_bias(%seed: tensor<f32>, %logits: tensor<8x16xf32>, %labels: tensor<8xi64>, %w: tensor<16x8xbf16>) -> (tensor<16xf32>, tensor<2x4x8xbf16>) {
  %g = tx.softmax_cross_entropy_grad %seed, %logits, %labels reduction(mean) : tensor<f32>, tensor<8x16xf32>, tensor<8xi64>
  %v = tx.reshape %g : tensor<8x16xf32> -> tensor<2x4x16xf32>
  %db = tx.reduce_sum %v axes [0, 1] : tensor<2x4x16xf32>
  %h = tx.cast %v : tensor<2x4x16xf32> to tensor<2x4x16xbf16>
  %dx = tx.blas_gemm %h, %w : tensor<2x4x16xbf16>, tensor<16x8xbf16> -> tensor<2x4x8xbf16>
  return %db, %dx : tensor<16xf32>, tensor<2x4x8xbf16>
}

// -----

// Must not fire: the f32 gradient is also returned (stored in f32 anyway).
// CHECK-LABEL: func.func @f32_gradient_read
// CHECK: %[[G:.*]] = tx.softmax_cross_entropy_grad
// CHECK-NEXT: tx.reduce_sum %[[G]] axes [0]
func.func @f32_gradient_read(%seed: tensor<f32>, %logits: tensor<8x16xf32>, %labels: tensor<8xi64>) -> (tensor<16xf32>, tensor<8x16xbf16>, tensor<8x16xf32>) {
  // expected-remark @below {{loss gradient's column sums not moved to its rounded copy: 'func.return' reads the f32 gradient too (it is stored in f32 anyway)}}
  %g = tx.softmax_cross_entropy_grad %seed, %logits, %labels reduction(mean) : tensor<f32>, tensor<8x16xf32>, tensor<8xi64>
  %db = tx.reduce_sum %g axes [0] : tensor<8x16xf32>
  %h = tx.cast %g : tensor<8x16xf32> to tensor<8x16xbf16>
  return %db, %h, %g : tensor<16xf32>, tensor<8x16xbf16>, tensor<8x16xf32>
}

// -----

// Must not fire: an f32 step, whose GEMM reads the f32 gradient itself.
// CHECK-LABEL: func.func @f32_step
// CHECK: %[[G:.*]] = tx.softmax_cross_entropy_grad
// CHECK-NEXT: tx.reduce_sum %[[G]] axes [0]
func.func @f32_step(%seed: tensor<f32>, %logits: tensor<8x16xf32>, %labels: tensor<8xi64>, %w: tensor<16x8xf32>) -> (tensor<16xf32>, tensor<8x8xf32>) {
  // expected-remark @below {{'tx.blas_gemm' reads the f32 gradient too}}
  %g = tx.softmax_cross_entropy_grad %seed, %logits, %labels reduction(mean) : tensor<f32>, tensor<8x16xf32>, tensor<8xi64>
  %db = tx.reduce_sum %g axes [0] : tensor<8x16xf32>
  %dx = tx.blas_gemm %g, %w : tensor<8x16xf32>, tensor<16x8xf32> -> tensor<8x8xf32>
  return %db, %dx : tensor<16xf32>, tensor<8x8xf32>
}

// -----

// Must not fire: two casts round it (one to bf16, one to f16): which copy
// the sums should read is not one answer.
// CHECK-LABEL: func.func @two_roundings
// CHECK: %[[G:.*]] = tx.softmax_cross_entropy_grad
// CHECK-NEXT: tx.reduce_sum %[[G]] axes [0]
func.func @two_roundings(%seed: tensor<f32>, %logits: tensor<8x16xf32>, %labels: tensor<8xi64>) -> (tensor<16xf32>, tensor<8x16xbf16>, tensor<8x16xf16>) {
  // expected-remark @below {{'tx.cast' reads the f32 gradient too}}
  %g = tx.softmax_cross_entropy_grad %seed, %logits, %labels reduction(mean) : tensor<f32>, tensor<8x16xf32>, tensor<8xi64>
  %db = tx.reduce_sum %g axes [0] : tensor<8x16xf32>
  %h = tx.cast %g : tensor<8x16xf32> to tensor<8x16xbf16>
  %k = tx.cast %g : tensor<8x16xf32> to tensor<8x16xf16>
  return %db, %h, %k : tensor<16xf32>, tensor<8x16xbf16>, tensor<8x16xf16>
}

// -----

// Must not fire: the gradient is summed but never rounded (returned as
// its f32 sum only).
// CHECK-LABEL: func.func @never_rounded
// CHECK: %[[G:.*]] = tx.softmax_cross_entropy_grad
// CHECK-NEXT: tx.reduce_sum %[[G]] axes [0]
func.func @never_rounded(%seed: tensor<f32>, %logits: tensor<8x16xf32>, %labels: tensor<8xi64>) -> tensor<16xf32> {
  // expected-remark @below {{no cast rounds the gradient to bf16 or f16}}
  %g = tx.softmax_cross_entropy_grad %seed, %logits, %labels reduction(mean) : tensor<f32>, tensor<8x16xf32>, tensor<8xi64>
  %db = tx.reduce_sum %g axes [0] : tensor<8x16xf32>
  return %db : tensor<16xf32>
}

// -----

// Left alone without a word: an LM head without a bias (GPT-2's) has no
// column sum of the loss gradient.
// CHECK-LABEL: func.func @no_bias
// CHECK: %[[G:.*]] = tx.softmax_cross_entropy_grad
// CHECK-NEXT: tx.cast %[[G]] : tensor<8x16xf32> to tensor<8x16xbf16>
func.func @no_bias(%seed: tensor<f32>, %logits: tensor<8x16xf32>, %labels: tensor<8xi64>) -> tensor<8x16xbf16> {
  %g = tx.softmax_cross_entropy_grad %seed, %logits, %labels reduction(mean) : tensor<f32>, tensor<8x16xf32>, tensor<8xi64>
  %h = tx.cast %g : tensor<8x16xf32> to tensor<8x16xbf16>
  return %h : tensor<8x16xbf16>
}
