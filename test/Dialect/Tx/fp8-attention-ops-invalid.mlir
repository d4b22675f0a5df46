// RUN: txopt-opt %s --split-input-file --verify-diagnostics

// tx.fp8_attention / tx.fp8_attention_grad (TxAttentionOps.cpp): the
// branches of their own verifiers and type inference, a sample of the
// checks they share with tx.attention (attention-ops-invalid.mlir has each
// of those), and the FP8 and scale constraints ODS checks.

func.func @not_fp8(%q: tensor<1x2x4x8xbf16>, %s: tensor<f32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of f8E4M3FN type or f8E5M2 type values}}
  %o, %l, %a, %b = tx.fp8_attention %q, %q, %q scale_inv(%s, %s, %s, %s) fp8_scale(%s, %s) scale(0.125) : tensor<1x2x4x8xbf16>, tensor<1x2x4x8xbf16>, tensor<1x2x4x8xbf16>
  return
}

// -----

func.func @q_rank(%q: tensor<2x4x8xf8E4M3FN>, %k: tensor<1x2x4x8xf8E4M3FN>, %s: tensor<f32>) {
  // expected-error @+1 {{expected q of rank 4 [B, H, T, D], but got 'tensor<2x4x8xf8E4M3FN>'}}
  %o, %l, %a, %b = tx.fp8_attention %q, %k, %k scale_inv(%s, %s, %s, %s) fp8_scale(%s, %s) scale(0.125) : tensor<2x4x8xf8E4M3FN>, tensor<1x2x4x8xf8E4M3FN>, tensor<1x2x4x8xf8E4M3FN>
  return
}

// -----

func.func @mixed_types(%q: tensor<1x2x4x8xf8E4M3FN>, %k: tensor<1x2x4x8xf8E5M2>, %s: tensor<f32>) {
  // expected-error @+1 {{expected k element type 'f8E4M3FN', but got 'f8E5M2'}}
  %o, %l, %a, %b = tx.fp8_attention %q, %k, %q scale_inv(%s, %s, %s, %s) fp8_scale(%s, %s) scale(0.125) : tensor<1x2x4x8xf8E4M3FN>, tensor<1x2x4x8xf8E5M2>, tensor<1x2x4x8xf8E4M3FN>
  return
}

// -----

func.func @heads(%q: tensor<1x4x4x8xf8E4M3FN>, %k: tensor<1x3x4x8xf8E4M3FN>, %s: tensor<f32>) {
  // expected-error @+1 {{expected k heads dividing the 4 query heads, but got 3}}
  %o, %l, %a, %b = tx.fp8_attention %q, %k, %k scale_inv(%s, %s, %s, %s) fp8_scale(%s, %s) scale(0.125) : tensor<1x4x4x8xf8E4M3FN>, tensor<1x3x4x8xf8E4M3FN>, tensor<1x3x4x8xf8E4M3FN>
  return
}

// -----

func.func @scale(%q: tensor<1x2x4x8xf8E4M3FN>, %s: tensor<f32>) {
  // expected-error @+1 {{expected a finite scale, but got INF}}
  %o, %l, %a, %b = tx.fp8_attention %q, %q, %q scale_inv(%s, %s, %s, %s) fp8_scale(%s, %s) scale(0x7FF0000000000000) : tensor<1x2x4x8xf8E4M3FN>, tensor<1x2x4x8xf8E4M3FN>, tensor<1x2x4x8xf8E4M3FN>
  return
}

// -----

// expected-note @+1 {{prior use here}}
func.func @scale_not_scalar(%q: tensor<1x2x4x8xf8E4M3FN>, %s: tensor<f32>, %t: tensor<1xf32>) {
  // expected-error @+1 {{use of value '%t' expects different type than prior uses: 'tensor<f32>' vs 'tensor<1xf32>'}}
  %o, %l, %a, %b = tx.fp8_attention %q, %q, %q scale_inv(%s, %s, %s, %s) fp8_scale(%t, %s) scale(0.125) : tensor<1x2x4x8xf8E4M3FN>, tensor<1x2x4x8xf8E4M3FN>, tensor<1x2x4x8xf8E4M3FN>
  return
}

// -----

func.func @grad_out_type(%do: tensor<1x2x4x8xf8E5M2>, %q: tensor<1x2x4x8xf8E4M3FN>, %o: tensor<1x2x4x8xf8E5M2>, %lse: tensor<1x2x4xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{expected out type 'tensor<1x2x4x8xf8E4M3FN>' (the forward's result), but got 'tensor<1x2x4x8xf8E5M2>'}}
  %dq, %dk, %dv, %a, %b, %c, %d = tx.fp8_attention_grad %do, %q, %q, %q, %o, %lse scale_inv(%s, %s, %s, %s, %s, %s, %s) fp8_scale(%s, %s, %s, %s, %s) scale(0.125) : tensor<1x2x4x8xf8E5M2>, tensor<1x2x4x8xf8E4M3FN>, tensor<1x2x4x8xf8E4M3FN>, tensor<1x2x4x8xf8E4M3FN>, tensor<1x2x4x8xf8E5M2>, tensor<1x2x4xf32>
  return
}

// -----

func.func @grad_shape(%do: tensor<1x2x4x4xf8E5M2>, %q: tensor<1x2x4x8xf8E4M3FN>, %lse: tensor<1x2x4xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{expected grad of shape [1, 2, 4, 8] (out's), but got [1, 2, 4, 4]}}
  %dq, %dk, %dv, %a, %b, %c, %d = tx.fp8_attention_grad %do, %q, %q, %q, %q, %lse scale_inv(%s, %s, %s, %s, %s, %s, %s) fp8_scale(%s, %s, %s, %s, %s) scale(0.125) : tensor<1x2x4x4xf8E5M2>, tensor<1x2x4x8xf8E4M3FN>, tensor<1x2x4x8xf8E4M3FN>, tensor<1x2x4x8xf8E4M3FN>, tensor<1x2x4x8xf8E4M3FN>, tensor<1x2x4xf32>
  return
}

// -----

func.func @grad_lse(%do: tensor<1x2x4x8xf8E5M2>, %q: tensor<1x2x4x8xf8E4M3FN>, %lse: tensor<1x2x8xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{expected lse type 'tensor<1x2x4xf32>', but got 'tensor<1x2x8xf32>'}}
  %dq, %dk, %dv, %a, %b, %c, %d = tx.fp8_attention_grad %do, %q, %q, %q, %q, %lse scale_inv(%s, %s, %s, %s, %s, %s, %s) fp8_scale(%s, %s, %s, %s, %s) scale(0.125) : tensor<1x2x4x8xf8E5M2>, tensor<1x2x4x8xf8E4M3FN>, tensor<1x2x4x8xf8E4M3FN>, tensor<1x2x4x8xf8E4M3FN>, tensor<1x2x4x8xf8E4M3FN>, tensor<1x2x8xf32>
  return
}

// -----

func.func @grad_shared_check(%do: tensor<2x2x4x8xf8E5M2>, %q: tensor<2x2x4x8xf8E4M3FN>, %k: tensor<1x2x4x8xf8E4M3FN>, %lse: tensor<2x2x4xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{expected k batch 2 (q's), but got 1}}
  %dq, %dk, %dv, %a, %b, %c, %d = tx.fp8_attention_grad %do, %q, %k, %k, %q, %lse scale_inv(%s, %s, %s, %s, %s, %s, %s) fp8_scale(%s, %s, %s, %s, %s) scale(0.125) : tensor<2x2x4x8xf8E5M2>, tensor<2x2x4x8xf8E4M3FN>, tensor<1x2x4x8xf8E4M3FN>, tensor<1x2x4x8xf8E4M3FN>, tensor<2x2x4x8xf8E4M3FN>, tensor<2x2x4xf32>
  return
}
