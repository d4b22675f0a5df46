// RUN: txopt-opt %s --split-input-file --tx-gemm-gelu --verify-diagnostics | FileCheck %s

// tx-gemm-gelu: the tanh GELU of a bf16/f16 GEMM's result (plus a row
// bias), whose output GEMMs read in the GEMM's type, becomes one
// tx.blas_gemm_gelu; the chain's other readers read its pre-activation.
// Elsewhere a remark at the chain's tanh says why not. The executor's
// numerics of the fused op: test/Reference/blas-gemm-gelu.mlir.

// GPT-2's MLP in a bf16 step (as tx-gemm-normal-form leaves it): the GEMM's
// bf16 result widened, the f32 bias added, Hugging Face's gelu_new with
// pow(x, 3), cast to bf16 for the next GEMM; the backward's GELU gradient
// (here a multiplication by the tanh) reads the chain too. The bias is
// rounded to bf16 into the epilogue; the chain's readers read the
// pre-activation widened; the next GEMM reads the epilogue's GELU.
// CHECK-LABEL: func.func @gpt2_mlp
// CHECK: %[[B:.*]] = tx.cast %arg2 : tensor<16xf32> to tensor<16xbf16>
// CHECK: %[[Y:.*]], %[[PRE:.*]] = tx.blas_gemm_gelu %arg0, %arg1, %[[B]] : tensor<2x4x8xbf16>, tensor<8x16xbf16>, tensor<16xbf16> -> tensor<2x4x16xbf16>, tensor<2x4x16xbf16>
// CHECK: %[[X:.*]] = tx.cast %[[PRE]] : tensor<2x4x16xbf16> to tensor<2x4x16xf32>
// CHECK-NOT: tx.blas_gemm %arg0
// CHECK: tx.pow %[[X]]
// CHECK: %[[T:.*]] = tx.tanh
// CHECK: tx.blas_gemm %[[Y]], %arg3 : tensor<2x4x16xbf16>, tensor<16x8xbf16>
// CHECK: tx.mul %[[T]], %[[X]]
func.func @gpt2_mlp(%x: tensor<2x4x8xbf16>, %w: tensor<8x16xbf16>, %bias: tensor<16xf32>, %w2: tensor<16x8xbf16>)
    -> (tensor<2x4x8xbf16>, tensor<2x4x16xf32>) {
  %half = tx.constant dense<0.5> : tensor<1xf32>
  %three = tx.constant dense<3.0> : tensor<1xf32>
  %k = tx.constant dense<0.044715> : tensor<1xf32>
  %c = tx.constant dense<0.797884583> : tensor<1xf32>
  %one = tx.constant dense<1.0> : tensor<1xf32>
  %p = tx.blas_gemm %x, %w : tensor<2x4x8xbf16>, tensor<8x16xbf16> -> tensor<2x4x16xbf16>
  %f = tx.cast %p : tensor<2x4x16xbf16> to tensor<2x4x16xf32>
  %s = tx.add %f, %bias : tensor<2x4x16xf32>, tensor<16xf32>
  %cube = tx.pow %s, %three : tensor<2x4x16xf32>, tensor<1xf32>
  %kc = tx.mul %cube, %k : tensor<2x4x16xf32>, tensor<1xf32>
  %inner = tx.add %s, %kc : tensor<2x4x16xf32>, tensor<2x4x16xf32>
  %u = tx.mul %inner, %c : tensor<2x4x16xf32>, tensor<1xf32>
  %t = tx.tanh %u : tensor<2x4x16xf32>
  %hs = tx.mul %s, %half : tensor<2x4x16xf32>, tensor<1xf32>
  %tp = tx.add %t, %one : tensor<2x4x16xf32>, tensor<1xf32>
  %g = tx.mul %hs, %tp : tensor<2x4x16xf32>, tensor<2x4x16xf32>
  %g16 = tx.cast %g : tensor<2x4x16xf32> to tensor<2x4x16xbf16>
  %out = tx.blas_gemm %g16, %w2 : tensor<2x4x16xbf16>, tensor<16x8xbf16> -> tensor<2x4x8xbf16>
  %grad = tx.mul %t, %s : tensor<2x4x16xf32>, tensor<2x4x16xf32>
  return %out, %grad : tensor<2x4x8xbf16>, tensor<2x4x16xf32>
}

// -----

// ONNX Gelu(approximate="tanh") as the importer writes it (x * x * x, the
// half on x, the constants on the right), in f16 without a bias, the GEMM's
// result reshaped before the GELU and the output reshaped back before the
// next GEMM and its weight gradient: the GELU_AUX epilogue, the
// pre-activation replacing the product itself.
// CHECK-LABEL: func.func @onnx_gelu_f16
// CHECK: %[[Y:.*]], %[[PRE:.*]] = tx.blas_gemm_gelu %arg0, %arg1 : tensor<4x8xf16>, tensor<8x16xf16> -> tensor<4x16xf16>, tensor<4x16xf16>
// CHECK: tx.reshape %[[PRE]] : tensor<4x16xf16> -> tensor<2x2x16xf16>
// CHECK: %[[R:.*]] = tx.reshape %[[Y]] : tensor<4x16xf16> -> tensor<2x2x16xf16>
// CHECK: %[[R2:.*]] = tx.reshape %[[R]] : tensor<2x2x16xf16> -> tensor<4x16xf16>
// CHECK: tx.blas_gemm %[[R2]], %arg2
// CHECK: tx.blas_gemm %[[R2]], %arg3 {transpose_a}
func.func @onnx_gelu_f16(%x: tensor<4x8xf16>, %w: tensor<8x16xf16>, %w2: tensor<16x8xf16>, %dy: tensor<4x8xf16>)
    -> (tensor<4x8xf16>, tensor<16x8xf16>, tensor<2x2x16xf16>) {
  %half = tx.constant dense<0.5> : tensor<f16>
  %k = tx.constant dense<0.044715> : tensor<f16>
  %c = tx.constant dense<0.797884583> : tensor<f16>
  %one = tx.constant dense<1.0> : tensor<f16>
  %p = tx.blas_gemm %x, %w : tensor<4x8xf16>, tensor<8x16xf16> -> tensor<4x16xf16>
  %s = tx.reshape %p : tensor<4x16xf16> -> tensor<2x2x16xf16>
  %sq = tx.mul %s, %s : tensor<2x2x16xf16>, tensor<2x2x16xf16>
  %cube = tx.mul %sq, %s : tensor<2x2x16xf16>, tensor<2x2x16xf16>
  %kc = tx.mul %cube, %k : tensor<2x2x16xf16>, tensor<f16>
  %inner = tx.add %s, %kc : tensor<2x2x16xf16>, tensor<2x2x16xf16>
  %u = tx.mul %inner, %c : tensor<2x2x16xf16>, tensor<f16>
  %t = tx.tanh %u : tensor<2x2x16xf16>
  %hs = tx.mul %s, %half : tensor<2x2x16xf16>, tensor<f16>
  %tp = tx.add %t, %one : tensor<2x2x16xf16>, tensor<f16>
  %g = tx.mul %hs, %tp : tensor<2x2x16xf16>, tensor<2x2x16xf16>
  %g16 = tx.cast %g : tensor<2x2x16xf16> to tensor<2x2x16xf16>
  %r = tx.reshape %g16 : tensor<2x2x16xf16> -> tensor<4x16xf16>
  %out = tx.blas_gemm %r, %w2 : tensor<4x16xf16>, tensor<16x8xf16> -> tensor<4x8xf16>
  %dw = tx.blas_gemm %r, %dy {transpose_a} : tensor<4x16xf16>, tensor<4x8xf16> -> tensor<16x8xf16>
  return %out, %dw, %s : tensor<4x8xf16>, tensor<16x8xf16>, tensor<2x2x16xf16>
}

// -----

// nanoGPT's NewGELU association, 0.5 * x * (1 + tanh(c * (x + k * x^3))),
// in bf16 with the bias first in its add: a second chain over the same GEMM
// result later in the block (the backward's recomputation) is left, with a
// remark, and reads the pre-activation.
// CHECK-LABEL: func.func @recomputed
// CHECK: %[[Y:.*]], %[[PRE:.*]] = tx.blas_gemm_gelu %arg0, %arg1, %arg2
// CHECK: tx.blas_gemm %[[Y]], %arg3
// CHECK: tx.pow %[[PRE]]
// CHECK: tx.tanh
// CHECK-NOT: tx.tanh
// CHECK: tx.blas_gemm %{{.*}}, %arg4 {transpose_a}
func.func @recomputed(%x: tensor<4x8xbf16>, %w: tensor<8x16xbf16>, %bias: tensor<16xbf16>, %w2: tensor<16x8xbf16>, %dy: tensor<4x8xbf16>)
    -> (tensor<4x8xbf16>, tensor<16x8xbf16>) {
  %half = tx.constant dense<0.5> : tensor<bf16>
  %three = tx.constant dense<3.0> : tensor<bf16>
  %k = tx.constant dense<0.044715> : tensor<bf16>
  %c = tx.constant dense<0.797884583> : tensor<bf16>
  %one = tx.constant dense<1.0> : tensor<bf16>
  %p = tx.blas_gemm %x, %w : tensor<4x8xbf16>, tensor<8x16xbf16> -> tensor<4x16xbf16>
  %s = tx.add %bias, %p : tensor<16xbf16>, tensor<4x16xbf16>
  %hs = tx.mul %half, %s : tensor<bf16>, tensor<4x16xbf16>
  %cube = tx.pow %s, %three : tensor<4x16xbf16>, tensor<bf16>
  %kc = tx.mul %k, %cube : tensor<bf16>, tensor<4x16xbf16>
  %inner = tx.add %s, %kc : tensor<4x16xbf16>, tensor<4x16xbf16>
  %u = tx.mul %c, %inner : tensor<bf16>, tensor<4x16xbf16>
  %t = tx.tanh %u : tensor<4x16xbf16>
  %tp = tx.add %one, %t : tensor<bf16>, tensor<4x16xbf16>
  %g = tx.mul %hs, %tp : tensor<4x16xbf16>, tensor<4x16xbf16>
  %g16 = tx.cast %g : tensor<4x16xbf16> to tensor<4x16xbf16>
  %out = tx.blas_gemm %g16, %w2 : tensor<4x16xbf16>, tensor<16x8xbf16> -> tensor<4x8xbf16>
  // The recomputation.
  %hs2 = tx.mul %half, %s : tensor<bf16>, tensor<4x16xbf16>
  %cube2 = tx.pow %s, %three : tensor<4x16xbf16>, tensor<bf16>
  %kc2 = tx.mul %k, %cube2 : tensor<bf16>, tensor<4x16xbf16>
  %inner2 = tx.add %s, %kc2 : tensor<4x16xbf16>, tensor<4x16xbf16>
  %u2 = tx.mul %c, %inner2 : tensor<bf16>, tensor<4x16xbf16>
  // expected-remark @+1 {{GELU not folded into its GEMM's epilogue: not the first GELU of its GEMM's result (a recomputation reads the pre-activation)}}
  %t2 = tx.tanh %u2 : tensor<4x16xbf16>
  %tp2 = tx.add %one, %t2 : tensor<bf16>, tensor<4x16xbf16>
  %g2 = tx.mul %hs2, %tp2 : tensor<4x16xbf16>, tensor<4x16xbf16>
  %g216 = tx.cast %g2 : tensor<4x16xbf16> to tensor<4x16xbf16>
  %dw = tx.blas_gemm %g216, %dy {transpose_a} : tensor<4x16xbf16>, tensor<4x8xbf16> -> tensor<16x8xbf16>
  return %out, %dw : tensor<4x8xbf16>, tensor<16x8xbf16>
}

// -----

// Must not fire: an f32 GEMM (the epilogue's tanh is approximate).
// CHECK-LABEL: func.func @f32_gemm
// CHECK-NOT: tx.blas_gemm_gelu
func.func @f32_gemm(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %w2: tensor<16x8xf32>) -> tensor<4x8xf32> {
  %half = tx.constant dense<0.5> : tensor<f32>
  %three = tx.constant dense<3.0> : tensor<f32>
  %k = tx.constant dense<0.044715> : tensor<f32>
  %c = tx.constant dense<0.797884583> : tensor<f32>
  %one = tx.constant dense<1.0> : tensor<f32>
  %s = tx.blas_gemm %x, %w : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  %cube = tx.pow %s, %three : tensor<4x16xf32>, tensor<f32>
  %kc = tx.mul %cube, %k : tensor<4x16xf32>, tensor<f32>
  %inner = tx.add %s, %kc : tensor<4x16xf32>, tensor<4x16xf32>
  %u = tx.mul %inner, %c : tensor<4x16xf32>, tensor<f32>
  // expected-remark @+1 {{GELU not folded into its GEMM's epilogue: the GEMM's result is 'f32': cuBLASLt's GELU epilogue computes tanh approximately, which only a bf16 or f16 rounding hides}}
  %t = tx.tanh %u : tensor<4x16xf32>
  %hs = tx.mul %s, %half : tensor<4x16xf32>, tensor<f32>
  %tp = tx.add %t, %one : tensor<4x16xf32>, tensor<f32>
  %g = tx.mul %hs, %tp : tensor<4x16xf32>, tensor<4x16xf32>
  %out = tx.blas_gemm %g, %w2 : tensor<4x16xf32>, tensor<16x8xf32> -> tensor<4x8xf32>
  return %out : tensor<4x8xf32>
}

// -----

// Must not fire: an FP8 GEMM whose GELU output is quantized for the next
// FP8 GEMM (the cast kernel computes it).
// CHECK-LABEL: func.func @fp8_gemm
// CHECK-NOT: tx.blas_gemm_gelu
func.func @fp8_gemm(%x: tensor<4x8xf8E4M3FN>, %w: tensor<16x8xf8E4M3FN>, %si: tensor<f32>) -> tensor<4x16xf8E4M3FN> {
  %half = tx.constant dense<0.5> : tensor<f32>
  %three = tx.constant dense<3.0> : tensor<f32>
  %k = tx.constant dense<0.044715> : tensor<f32>
  %c = tx.constant dense<0.797884583> : tensor<f32>
  %one = tx.constant dense<1.0> : tensor<f32>
  %p = tx.blas_gemm %x, %w scale_inv(%si, %si) {transpose_b} : tensor<4x8xf8E4M3FN>, tensor<16x8xf8E4M3FN> -> tensor<4x16xbf16>
  %s = tx.cast %p : tensor<4x16xbf16> to tensor<4x16xf32>
  %cube = tx.pow %s, %three : tensor<4x16xf32>, tensor<f32>
  %kc = tx.mul %cube, %k : tensor<4x16xf32>, tensor<f32>
  %inner = tx.add %s, %kc : tensor<4x16xf32>, tensor<4x16xf32>
  %u = tx.mul %inner, %c : tensor<4x16xf32>, tensor<f32>
  // expected-remark @+1 {{GELU not folded into its GEMM's epilogue: the GEMM is FP8: its GELU output is quantized in the kernel that computes it}}
  %t = tx.tanh %u : tensor<4x16xf32>
  %hs = tx.mul %s, %half : tensor<4x16xf32>, tensor<f32>
  %tp = tx.add %t, %one : tensor<4x16xf32>, tensor<f32>
  %g = tx.mul %hs, %tp : tensor<4x16xf32>, tensor<4x16xf32>
  %q = tx.quantize %g, %si : tensor<4x16xf32> to tensor<4x16xf8E4M3FN>
  return %q : tensor<4x16xf8E4M3FN>
}

// -----

// Must not fire: a bf16 GELU output that no GEMM reads (a kernel does), a
// GEMM with 12 columns, a bias that is a full matrix or one element. The
// erf GELU (no epilogue) is not a candidate: no remark.
// CHECK-LABEL: func.func @near_misses
// CHECK-NOT: tx.blas_gemm_gelu
func.func @near_misses(%x: tensor<4x8xbf16>, %w: tensor<8x16xbf16>, %w12: tensor<8x12xbf16>, %full: tensor<4x16xbf16>, %w2: tensor<16x8xbf16>, %w3: tensor<12x8xbf16>)
    -> (tensor<4x16xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x16xbf16>, tensor<4x16xbf16>) {
  %half = tx.constant dense<0.5> : tensor<bf16>
  %three = tx.constant dense<3.0> : tensor<bf16>
  %k = tx.constant dense<0.044715> : tensor<bf16>
  %c = tx.constant dense<0.797884583> : tensor<bf16>
  %one = tx.constant dense<1.0> : tensor<bf16>
  %rsqrt2 = tx.constant dense<0.707106769> : tensor<bf16>

  // Read by an exp kernel only.
  %s0 = tx.blas_gemm %x, %w : tensor<4x8xbf16>, tensor<8x16xbf16> -> tensor<4x16xbf16>
  %cube0 = tx.pow %s0, %three : tensor<4x16xbf16>, tensor<bf16>
  %kc0 = tx.mul %cube0, %k : tensor<4x16xbf16>, tensor<bf16>
  %inner0 = tx.add %s0, %kc0 : tensor<4x16xbf16>, tensor<4x16xbf16>
  %u0 = tx.mul %inner0, %c : tensor<4x16xbf16>, tensor<bf16>
  // expected-remark @+1 {{GELU not folded into its GEMM's epilogue: no GEMM reads the GELU's output in the GEMM's type (its readers compute it in their kernels)}}
  %t0 = tx.tanh %u0 : tensor<4x16xbf16>
  %hs0 = tx.mul %s0, %half : tensor<4x16xbf16>, tensor<bf16>
  %tp0 = tx.add %t0, %one : tensor<4x16xbf16>, tensor<bf16>
  %g0 = tx.mul %hs0, %tp0 : tensor<4x16xbf16>, tensor<4x16xbf16>
  %e0 = tx.exp %g0 : tensor<4x16xbf16>

  // 12 columns.
  %s1 = tx.blas_gemm %x, %w12 : tensor<4x8xbf16>, tensor<8x12xbf16> -> tensor<4x12xbf16>
  %cube1 = tx.pow %s1, %three : tensor<4x12xbf16>, tensor<bf16>
  %kc1 = tx.mul %cube1, %k : tensor<4x12xbf16>, tensor<bf16>
  %inner1 = tx.add %s1, %kc1 : tensor<4x12xbf16>, tensor<4x12xbf16>
  %u1 = tx.mul %inner1, %c : tensor<4x12xbf16>, tensor<bf16>
  // expected-remark @+1 {{GELU not folded into its GEMM's epilogue: the GEMM's 12 columns are not a multiple of 8 (cuBLASLt's leading dimension of the pre-activation)}}
  %t1 = tx.tanh %u1 : tensor<4x12xbf16>
  %hs1 = tx.mul %s1, %half : tensor<4x12xbf16>, tensor<bf16>
  %tp1 = tx.add %t1, %one : tensor<4x12xbf16>, tensor<bf16>
  %g1 = tx.mul %hs1, %tp1 : tensor<4x12xbf16>, tensor<4x12xbf16>
  %o1 = tx.blas_gemm %g1, %w3 : tensor<4x12xbf16>, tensor<12x8xbf16> -> tensor<4x8xbf16>

  // A [4, 16] "bias".
  %p2 = tx.blas_gemm %x, %w : tensor<4x8xbf16>, tensor<8x16xbf16> -> tensor<4x16xbf16>
  %s2 = tx.add %p2, %full : tensor<4x16xbf16>, tensor<4x16xbf16>
  %cube2 = tx.pow %s2, %three : tensor<4x16xbf16>, tensor<bf16>
  %kc2 = tx.mul %cube2, %k : tensor<4x16xbf16>, tensor<bf16>
  %inner2 = tx.add %s2, %kc2 : tensor<4x16xbf16>, tensor<4x16xbf16>
  %u2 = tx.mul %inner2, %c : tensor<4x16xbf16>, tensor<bf16>
  // expected-remark @+1 {{GELU not folded into its GEMM's epilogue: the other operand of the add, [4, 16], is not a row vector over the GEMM's 16 columns}}
  %t2 = tx.tanh %u2 : tensor<4x16xbf16>
  %hs2 = tx.mul %s2, %half : tensor<4x16xbf16>, tensor<bf16>
  %tp2 = tx.add %t2, %one : tensor<4x16xbf16>, tensor<bf16>
  %g2 = tx.mul %hs2, %tp2 : tensor<4x16xbf16>, tensor<4x16xbf16>
  %o2 = tx.blas_gemm %g2, %w2 : tensor<4x16xbf16>, tensor<16x8xbf16> -> tensor<4x8xbf16>

  // A one-element "bias" ([1]) broadcast over the columns.
  %p3 = tx.blas_gemm %x, %w : tensor<4x8xbf16>, tensor<8x16xbf16> -> tensor<4x16xbf16>
  %bias3 = tx.reshape %rsqrt2 : tensor<bf16> -> tensor<1xbf16>
  %s3 = tx.add %p3, %bias3 : tensor<4x16xbf16>, tensor<1xbf16>
  %cube3 = tx.pow %s3, %three : tensor<4x16xbf16>, tensor<bf16>
  %kc3 = tx.mul %cube3, %k : tensor<4x16xbf16>, tensor<bf16>
  %inner3 = tx.add %s3, %kc3 : tensor<4x16xbf16>, tensor<4x16xbf16>
  %u3 = tx.mul %inner3, %c : tensor<4x16xbf16>, tensor<bf16>
  // expected-remark @+1 {{GELU not folded into its GEMM's epilogue: the other operand of the add, [1], is not a row vector over the GEMM's 16 columns}}
  %t3 = tx.tanh %u3 : tensor<4x16xbf16>
  %hs3 = tx.mul %s3, %half : tensor<4x16xbf16>, tensor<bf16>
  %tp3 = tx.add %t3, %one : tensor<4x16xbf16>, tensor<bf16>
  %g3 = tx.mul %hs3, %tp3 : tensor<4x16xbf16>, tensor<4x16xbf16>
  %o3 = tx.blas_gemm %g3, %w2 : tensor<4x16xbf16>, tensor<16x8xbf16> -> tensor<4x8xbf16>

  // The erf GELU.
  %p4 = tx.blas_gemm %x, %w : tensor<4x8xbf16>, tensor<8x16xbf16> -> tensor<4x16xbf16>
  %a4 = tx.mul %p4, %rsqrt2 : tensor<4x16xbf16>, tensor<bf16>
  %erf = tx.erf %a4 : tensor<4x16xbf16>
  %ep = tx.add %erf, %one : tensor<4x16xbf16>, tensor<bf16>
  %h4 = tx.mul %p4, %half : tensor<4x16xbf16>, tensor<bf16>
  %g4 = tx.mul %h4, %ep : tensor<4x16xbf16>, tensor<4x16xbf16>
  return %e0, %o1, %o2, %o3, %g4, %p3 : tensor<4x16xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x16xbf16>, tensor<4x16xbf16>
}

// -----

// Must not fire: the product without its bias read by another reader too.
// CHECK-LABEL: func.func @product_read_twice
// CHECK-NOT: tx.blas_gemm_gelu
func.func @product_read_twice(%x: tensor<4x8xbf16>, %w: tensor<8x16xbf16>, %bias: tensor<16xbf16>, %w2: tensor<16x8xbf16>)
    -> (tensor<4x8xbf16>, tensor<4x16xbf16>) {
  %half = tx.constant dense<0.5> : tensor<bf16>
  %three = tx.constant dense<3.0> : tensor<bf16>
  %k = tx.constant dense<0.044715> : tensor<bf16>
  %c = tx.constant dense<0.797884583> : tensor<bf16>
  %one = tx.constant dense<1.0> : tensor<bf16>
  %p = tx.blas_gemm %x, %w : tensor<4x8xbf16>, tensor<8x16xbf16> -> tensor<4x16xbf16>
  %s = tx.add %p, %bias : tensor<4x16xbf16>, tensor<16xbf16>
  %cube = tx.pow %s, %three : tensor<4x16xbf16>, tensor<bf16>
  %kc = tx.mul %cube, %k : tensor<4x16xbf16>, tensor<bf16>
  %inner = tx.add %s, %kc : tensor<4x16xbf16>, tensor<4x16xbf16>
  %u = tx.mul %inner, %c : tensor<4x16xbf16>, tensor<bf16>
  // expected-remark @+1 {{GELU not folded into its GEMM's epilogue: the GEMM's result is read without the bias too}}
  %t = tx.tanh %u : tensor<4x16xbf16>
  %hs = tx.mul %s, %half : tensor<4x16xbf16>, tensor<bf16>
  %tp = tx.add %t, %one : tensor<4x16xbf16>, tensor<bf16>
  %g = tx.mul %hs, %tp : tensor<4x16xbf16>, tensor<4x16xbf16>
  %out = tx.blas_gemm %g, %w2 : tensor<4x16xbf16>, tensor<16x8xbf16> -> tensor<4x8xbf16>
  return %out, %p : tensor<4x8xbf16>, tensor<4x16xbf16>
}

// -----

// Must not fire: the chain's constants differ from the tanh GELU's (0.04
// for 0.044715): not a GELU, no remark.
// CHECK-LABEL: func.func @not_gelu
// CHECK-NOT: tx.blas_gemm_gelu
func.func @not_gelu(%x: tensor<4x8xbf16>, %w: tensor<8x16xbf16>, %w2: tensor<16x8xbf16>) -> tensor<4x8xbf16> {
  %half = tx.constant dense<0.5> : tensor<bf16>
  %three = tx.constant dense<3.0> : tensor<bf16>
  %k = tx.constant dense<0.04> : tensor<bf16>
  %c = tx.constant dense<0.797884583> : tensor<bf16>
  %one = tx.constant dense<1.0> : tensor<bf16>
  %s = tx.blas_gemm %x, %w : tensor<4x8xbf16>, tensor<8x16xbf16> -> tensor<4x16xbf16>
  %cube = tx.pow %s, %three : tensor<4x16xbf16>, tensor<bf16>
  %kc = tx.mul %cube, %k : tensor<4x16xbf16>, tensor<bf16>
  %inner = tx.add %s, %kc : tensor<4x16xbf16>, tensor<4x16xbf16>
  %u = tx.mul %inner, %c : tensor<4x16xbf16>, tensor<bf16>
  %t = tx.tanh %u : tensor<4x16xbf16>
  %hs = tx.mul %s, %half : tensor<4x16xbf16>, tensor<bf16>
  %tp = tx.add %t, %one : tensor<4x16xbf16>, tensor<bf16>
  %g = tx.mul %hs, %tp : tensor<4x16xbf16>, tensor<4x16xbf16>
  %out = tx.blas_gemm %g, %w2 : tensor<4x16xbf16>, tensor<16x8xbf16> -> tensor<4x8xbf16>
  return %out : tensor<4x8xbf16>
}

// -----

// The GEMM's flags and alpha carry over, and a reshape between the GEMM and
// the bias add (keeping the last dim) is rebuilt on the pre-activation.
// CHECK-LABEL: func.func @flags_and_reshape
// CHECK: %[[Y:.*]], %[[PRE:.*]] = tx.blas_gemm_gelu %arg0, %arg1, %{{[0-9]+}} {alpha = 5.000000e-01 : f32, transpose_a, transpose_b} : tensor<8x4xbf16>, tensor<16x8xbf16>, tensor<16xbf16> -> tensor<4x16xbf16>, tensor<4x16xbf16>
// CHECK: %[[R:.*]] = tx.reshape %[[PRE]] : tensor<4x16xbf16> -> tensor<2x2x16xbf16>
// CHECK: %[[X:.*]] = tx.cast %[[R]] : tensor<2x2x16xbf16> to tensor<2x2x16xf32>
// CHECK: tx.tanh
// CHECK: tx.mul %{{.*}}, %[[X]]
func.func @flags_and_reshape(%x: tensor<8x4xbf16>, %w: tensor<16x8xbf16>, %bias: tensor<16xbf16>, %w2: tensor<16x8xbf16>)
    -> (tensor<4x8xbf16>, tensor<2x2x16xf32>) {
  %half = tx.constant dense<0.5> : tensor<f32>
  %three = tx.constant dense<3.0> : tensor<f32>
  %k = tx.constant dense<0.044715> : tensor<f32>
  %c = tx.constant dense<0.797884583> : tensor<f32>
  %one = tx.constant dense<1.0> : tensor<f32>
  %p = tx.blas_gemm %x, %w {transpose_a, transpose_b, alpha = 0.5 : f32} : tensor<8x4xbf16>, tensor<16x8xbf16> -> tensor<4x16xbf16>
  %r = tx.reshape %p : tensor<4x16xbf16> -> tensor<2x2x16xbf16>
  %f = tx.cast %r : tensor<2x2x16xbf16> to tensor<2x2x16xf32>
  %bf = tx.cast %bias : tensor<16xbf16> to tensor<16xf32>
  %s = tx.add %f, %bf : tensor<2x2x16xf32>, tensor<16xf32>
  %cube = tx.pow %s, %three : tensor<2x2x16xf32>, tensor<f32>
  %kc = tx.mul %cube, %k : tensor<2x2x16xf32>, tensor<f32>
  %inner = tx.add %s, %kc : tensor<2x2x16xf32>, tensor<2x2x16xf32>
  %u = tx.mul %inner, %c : tensor<2x2x16xf32>, tensor<f32>
  %t = tx.tanh %u : tensor<2x2x16xf32>
  %hs = tx.mul %s, %half : tensor<2x2x16xf32>, tensor<f32>
  %tp = tx.add %t, %one : tensor<2x2x16xf32>, tensor<f32>
  %g = tx.mul %hs, %tp : tensor<2x2x16xf32>, tensor<2x2x16xf32>
  %g16 = tx.cast %g : tensor<2x2x16xf32> to tensor<2x2x16xbf16>
  %g2 = tx.reshape %g16 : tensor<2x2x16xbf16> -> tensor<4x16xbf16>
  %out = tx.blas_gemm %g2, %w2 : tensor<4x16xbf16>, tensor<16x8xbf16> -> tensor<4x8xbf16>
  %back = tx.mul %t, %s : tensor<2x2x16xf32>, tensor<2x2x16xf32>
  return %out, %back : tensor<4x8xbf16>, tensor<2x2x16xf32>
}

// -----

// Must not fire, with a remark: a GEMM that already adds a c, a batched b,
// a batched a read transposed.
// CHECK-LABEL: func.func @gemm_forms
// CHECK-NOT: tx.blas_gemm_gelu
func.func @gemm_forms(%x: tensor<4x8xbf16>, %w: tensor<8x16xbf16>, %cc: tensor<4x16xbf16>,
                      %xb: tensor<2x4x8xbf16>, %wb: tensor<2x8x16xbf16>, %xt: tensor<2x8x4xbf16>,
                      %w2: tensor<16x8xbf16>, %w2b: tensor<2x16x8xbf16>)
    -> (tensor<4x8xbf16>, tensor<2x4x8xbf16>, tensor<2x4x8xbf16>) {
  %half = tx.constant dense<0.5> : tensor<bf16>
  %three = tx.constant dense<3.0> : tensor<bf16>
  %k = tx.constant dense<0.044715> : tensor<bf16>
  %c = tx.constant dense<0.797884583> : tensor<bf16>
  %one = tx.constant dense<1.0> : tensor<bf16>

  %s0 = tx.blas_gemm %x, %w, %cc {beta = 1.0 : f32} : tensor<4x8xbf16>, tensor<8x16xbf16>, tensor<4x16xbf16> -> tensor<4x16xbf16>
  %cube0 = tx.pow %s0, %three : tensor<4x16xbf16>, tensor<bf16>
  %kc0 = tx.mul %cube0, %k : tensor<4x16xbf16>, tensor<bf16>
  %inner0 = tx.add %s0, %kc0 : tensor<4x16xbf16>, tensor<4x16xbf16>
  %u0 = tx.mul %inner0, %c : tensor<4x16xbf16>, tensor<bf16>
  // expected-remark @+1 {{GELU not folded into its GEMM's epilogue: its GEMM already adds a c}}
  %t0 = tx.tanh %u0 : tensor<4x16xbf16>
  %hs0 = tx.mul %s0, %half : tensor<4x16xbf16>, tensor<bf16>
  %tp0 = tx.add %t0, %one : tensor<4x16xbf16>, tensor<bf16>
  %g0 = tx.mul %hs0, %tp0 : tensor<4x16xbf16>, tensor<4x16xbf16>
  %c0 = tx.cast %g0 : tensor<4x16xbf16> to tensor<4x16xbf16>
  %o0 = tx.blas_gemm %c0, %w2 : tensor<4x16xbf16>, tensor<16x8xbf16> -> tensor<4x8xbf16>

  %s1 = tx.blas_gemm %xb, %wb : tensor<2x4x8xbf16>, tensor<2x8x16xbf16> -> tensor<2x4x16xbf16>
  %cube1 = tx.pow %s1, %three : tensor<2x4x16xbf16>, tensor<bf16>
  %kc1 = tx.mul %cube1, %k : tensor<2x4x16xbf16>, tensor<bf16>
  %inner1 = tx.add %s1, %kc1 : tensor<2x4x16xbf16>, tensor<2x4x16xbf16>
  %u1 = tx.mul %inner1, %c : tensor<2x4x16xbf16>, tensor<bf16>
  // expected-remark @+1 {{GELU not folded into its GEMM's epilogue: the GEMM's b has batch dims}}
  %t1 = tx.tanh %u1 : tensor<2x4x16xbf16>
  %hs1 = tx.mul %s1, %half : tensor<2x4x16xbf16>, tensor<bf16>
  %tp1 = tx.add %t1, %one : tensor<2x4x16xbf16>, tensor<bf16>
  %g1 = tx.mul %hs1, %tp1 : tensor<2x4x16xbf16>, tensor<2x4x16xbf16>
  %c1 = tx.cast %g1 : tensor<2x4x16xbf16> to tensor<2x4x16xbf16>
  %o1 = tx.blas_gemm %c1, %w2b : tensor<2x4x16xbf16>, tensor<2x16x8xbf16> -> tensor<2x4x8xbf16>

  %s2 = tx.blas_gemm %xt, %w {transpose_a} : tensor<2x8x4xbf16>, tensor<8x16xbf16> -> tensor<2x4x16xbf16>
  %cube2 = tx.pow %s2, %three : tensor<2x4x16xbf16>, tensor<bf16>
  %kc2 = tx.mul %cube2, %k : tensor<2x4x16xbf16>, tensor<bf16>
  %inner2 = tx.add %s2, %kc2 : tensor<2x4x16xbf16>, tensor<2x4x16xbf16>
  %u2 = tx.mul %inner2, %c : tensor<2x4x16xbf16>, tensor<bf16>
  // expected-remark @+1 {{GELU not folded into its GEMM's epilogue: the GEMM's a is batched and transposed}}
  %t2 = tx.tanh %u2 : tensor<2x4x16xbf16>
  %hs2 = tx.mul %s2, %half : tensor<2x4x16xbf16>, tensor<bf16>
  %tp2 = tx.add %t2, %one : tensor<2x4x16xbf16>, tensor<bf16>
  %g2 = tx.mul %hs2, %tp2 : tensor<2x4x16xbf16>, tensor<2x4x16xbf16>
  %c2 = tx.cast %g2 : tensor<2x4x16xbf16> to tensor<2x4x16xbf16>
  %o2 = tx.blas_gemm %c2, %w2 : tensor<2x4x16xbf16>, tensor<16x8xbf16> -> tensor<2x4x8xbf16>
  return %o0, %o1, %o2 : tensor<4x8xbf16>, tensor<2x4x8xbf16>, tensor<2x4x8xbf16>
}

// -----

// Must not fire, and no remark (not the tanh GELU over a GEMM's sum): a
// bf16 chain whose 0.044715 is 0.042 (within bf16's absolute rounding of
// 0.0039, but 6% off), a GEMM result through an integer cast, and a
// constant that broadcasts the chain to a larger shape.
// CHECK-LABEL: func.func @not_the_gelu_of_the_sum
// CHECK-NOT: tx.blas_gemm_gelu
func.func @not_the_gelu_of_the_sum(%x: tensor<4x8xbf16>, %w: tensor<8x16xbf16>, %w2: tensor<16x8xbf16>, %w2b: tensor<2x16x8xbf16>)
    -> (tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<2x4x8xbf16>) {
  %half = tx.constant dense<0.5> : tensor<bf16>
  %three = tx.constant dense<3.0> : tensor<bf16>
  %k = tx.constant dense<0.044715> : tensor<bf16>
  %k42 = tx.constant dense<0.042> : tensor<bf16>
  %c = tx.constant dense<0.797884583> : tensor<bf16>
  %one = tx.constant dense<1.0> : tensor<bf16>
  %halfwide = tx.constant dense<0.5> : tensor<2x4x16xbf16>

  %s0 = tx.blas_gemm %x, %w : tensor<4x8xbf16>, tensor<8x16xbf16> -> tensor<4x16xbf16>
  %cube0 = tx.pow %s0, %three : tensor<4x16xbf16>, tensor<bf16>
  %kc0 = tx.mul %cube0, %k42 : tensor<4x16xbf16>, tensor<bf16>
  %inner0 = tx.add %s0, %kc0 : tensor<4x16xbf16>, tensor<4x16xbf16>
  %u0 = tx.mul %inner0, %c : tensor<4x16xbf16>, tensor<bf16>
  %t0 = tx.tanh %u0 : tensor<4x16xbf16>
  %hs0 = tx.mul %s0, %half : tensor<4x16xbf16>, tensor<bf16>
  %tp0 = tx.add %t0, %one : tensor<4x16xbf16>, tensor<bf16>
  %g0 = tx.mul %hs0, %tp0 : tensor<4x16xbf16>, tensor<4x16xbf16>
  %c0 = tx.cast %g0 : tensor<4x16xbf16> to tensor<4x16xbf16>
  %o0 = tx.blas_gemm %c0, %w2 : tensor<4x16xbf16>, tensor<16x8xbf16> -> tensor<4x8xbf16>

  %p1 = tx.blas_gemm %x, %w : tensor<4x8xbf16>, tensor<8x16xbf16> -> tensor<4x16xbf16>
  %i1 = tx.cast %p1 : tensor<4x16xbf16> to tensor<4x16xi32>
  %s1 = tx.cast %i1 : tensor<4x16xi32> to tensor<4x16xbf16>
  %cube1 = tx.pow %s1, %three : tensor<4x16xbf16>, tensor<bf16>
  %kc1 = tx.mul %cube1, %k : tensor<4x16xbf16>, tensor<bf16>
  %inner1 = tx.add %s1, %kc1 : tensor<4x16xbf16>, tensor<4x16xbf16>
  %u1 = tx.mul %inner1, %c : tensor<4x16xbf16>, tensor<bf16>
  %t1 = tx.tanh %u1 : tensor<4x16xbf16>
  %hs1 = tx.mul %s1, %half : tensor<4x16xbf16>, tensor<bf16>
  %tp1 = tx.add %t1, %one : tensor<4x16xbf16>, tensor<bf16>
  %g1 = tx.mul %hs1, %tp1 : tensor<4x16xbf16>, tensor<4x16xbf16>
  %c1 = tx.cast %g1 : tensor<4x16xbf16> to tensor<4x16xbf16>
  %o1 = tx.blas_gemm %c1, %w2 : tensor<4x16xbf16>, tensor<16x8xbf16> -> tensor<4x8xbf16>

  %s2 = tx.blas_gemm %x, %w : tensor<4x8xbf16>, tensor<8x16xbf16> -> tensor<4x16xbf16>
  %cube2 = tx.pow %s2, %three : tensor<4x16xbf16>, tensor<bf16>
  %kc2 = tx.mul %cube2, %k : tensor<4x16xbf16>, tensor<bf16>
  %inner2 = tx.add %s2, %kc2 : tensor<4x16xbf16>, tensor<4x16xbf16>
  %u2 = tx.mul %inner2, %c : tensor<4x16xbf16>, tensor<bf16>
  %t2 = tx.tanh %u2 : tensor<4x16xbf16>
  %hs2 = tx.mul %s2, %halfwide : tensor<4x16xbf16>, tensor<2x4x16xbf16>
  %tp2 = tx.add %t2, %one : tensor<4x16xbf16>, tensor<bf16>
  %g2 = tx.mul %hs2, %tp2 : tensor<2x4x16xbf16>, tensor<4x16xbf16>
  %c2 = tx.cast %g2 : tensor<2x4x16xbf16> to tensor<2x4x16xbf16>
  %o2 = tx.blas_gemm %c2, %w2b : tensor<2x4x16xbf16>, tensor<2x16x8xbf16> -> tensor<2x4x8xbf16>
  return %o0, %o1, %o2 : tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<2x4x8xbf16>
}
