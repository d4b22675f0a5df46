// RUN: txopt-opt %s --split-input-file --verify-diagnostics

// One case per verifier branch of tx.attention / tx.attention_grad
// (TxAttentionOps.cpp), plus the element-type constraint ODS checks.

func.func @q_rank(%q: tensor<8x16x64xf32>, %k: tensor<2x4x16x64xf32>, %v: tensor<2x4x16x64xf32>) {
  // expected-error @+1 {{expected q of rank 4 [B, H, T, D], but got 'tensor<8x16x64xf32>'}}
  %o, %l = tx.attention %q, %k, %v scale(0.125) : tensor<8x16x64xf32>, tensor<2x4x16x64xf32>, tensor<2x4x16x64xf32>
  return
}

// -----

func.func @k_rank(%q: tensor<2x4x16x64xf32>, %k: tensor<8x16x64xf32>, %v: tensor<2x4x16x64xf32>) {
  // expected-error @+1 {{expected k of rank 4 [B, H, T, D], but got rank 3}}
  %o, %l = tx.attention %q, %k, %v scale(0.125) : tensor<2x4x16x64xf32>, tensor<8x16x64xf32>, tensor<2x4x16x64xf32>
  return
}

// -----

func.func @f64(%q: tensor<2x4x16x64xf64>, %k: tensor<2x4x16x64xf64>, %v: tensor<2x4x16x64xf64>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float values}}
  %o, %l = tx.attention %q, %k, %v scale(0.125) : tensor<2x4x16x64xf64>, tensor<2x4x16x64xf64>, tensor<2x4x16x64xf64>
  return
}

// -----

func.func @k_element_type(%q: tensor<2x4x16x64xf32>, %k: tensor<2x4x16x64xbf16>, %v: tensor<2x4x16x64xf32>) {
  // expected-error @+1 {{expected k element type 'f32', but got 'bf16'}}
  %o, %l = tx.attention %q, %k, %v scale(0.125) : tensor<2x4x16x64xf32>, tensor<2x4x16x64xbf16>, tensor<2x4x16x64xf32>
  return
}

// -----

func.func @v_element_type(%q: tensor<2x4x16x64xf32>, %k: tensor<2x4x16x64xf32>, %v: tensor<2x4x16x64xf16>) {
  // expected-error @+1 {{expected v element type 'f32', but got 'f16'}}
  %o, %l = tx.attention %q, %k, %v scale(0.125) : tensor<2x4x16x64xf32>, tensor<2x4x16x64xf32>, tensor<2x4x16x64xf16>
  return
}

// -----

func.func @k_batch(%q: tensor<2x4x16x64xf32>, %k: tensor<1x4x16x64xf32>, %v: tensor<1x4x16x64xf32>) {
  // expected-error @+1 {{expected k batch 2 (q's), but got 1}}
  %o, %l = tx.attention %q, %k, %v scale(0.125) : tensor<2x4x16x64xf32>, tensor<1x4x16x64xf32>, tensor<1x4x16x64xf32>
  return
}

// -----

func.func @k_head_dim(%q: tensor<2x4x16x64xf32>, %k: tensor<2x4x16x32xf32>, %v: tensor<2x4x16x64xf32>) {
  // expected-error @+1 {{expected k head dim 64 (q's), but got 32}}
  %o, %l = tx.attention %q, %k, %v scale(0.125) : tensor<2x4x16x64xf32>, tensor<2x4x16x32xf32>, tensor<2x4x16x64xf32>
  return
}

// -----

func.func @k_heads(%q: tensor<2x4x16x64xf32>, %k: tensor<2x3x16x64xf32>, %v: tensor<2x3x16x64xf32>) {
  // expected-error @+1 {{expected k heads dividing the 4 query heads, but got 3}}
  %o, %l = tx.attention %q, %k, %v scale(0.125) : tensor<2x4x16x64xf32>, tensor<2x3x16x64xf32>, tensor<2x3x16x64xf32>
  return
}

// -----

func.func @v_shape(%q: tensor<2x4x16x64xf32>, %k: tensor<2x2x16x64xf32>, %v: tensor<2x2x8x64xf32>) {
  // expected-error @+1 {{expected v shape [2, 2, 16, Dv] (k's batch, heads and tokens), but got [2, 2, 8, 64]}}
  %o, %l = tx.attention %q, %k, %v scale(0.125) : tensor<2x4x16x64xf32>, tensor<2x2x16x64xf32>, tensor<2x2x8x64xf32>
  return
}

// -----

func.func @mask_shape(%q: tensor<2x4x16x64xf32>, %k: tensor<2x4x8x64xf32>, %v: tensor<2x4x8x64xf32>, %m: tensor<16x16xf32>) {
  // expected-error @+1 {{expected a mask broadcastable to [2, 4, 16, 8], but got [16, 16]}}
  %o, %l = tx.attention %q, %k, %v mask(%m) scale(0.125) : tensor<2x4x16x64xf32>, tensor<2x4x8x64xf32>, tensor<2x4x8x64xf32>, tensor<16x16xf32>
  return
}

// -----

func.func @scale_not_finite(%q: tensor<2x4x16x64xf32>, %k: tensor<2x4x16x64xf32>, %v: tensor<2x4x16x64xf32>) {
  // expected-error @+1 {{expected a finite scale, but got INF}}
  %o, %l = tx.attention %q, %k, %v scale(0x7FF0000000000000) : tensor<2x4x16x64xf32>, tensor<2x4x16x64xf32>, tensor<2x4x16x64xf32>
  return
}

// -----

func.func @window_without_causal(%q: tensor<2x4x16x64xf32>, %k: tensor<2x4x16x64xf32>, %v: tensor<2x4x16x64xf32>) {
  // expected-error @+1 {{expected 'causal' with 'window', but got a window alone}}
  %o, %l = tx.attention %q, %k, %v scale(0.125) window(4) : tensor<2x4x16x64xf32>, tensor<2x4x16x64xf32>, tensor<2x4x16x64xf32>
  return
}

// -----

func.func @window_zero(%q: tensor<2x4x16x64xf32>, %k: tensor<2x4x16x64xf32>, %v: tensor<2x4x16x64xf32>) {
  // expected-error @+1 {{expected a window of at least 1, but got 0}}
  %o, %l = tx.attention %q, %k, %v scale(0.125) causal window(0) : tensor<2x4x16x64xf32>, tensor<2x4x16x64xf32>, tensor<2x4x16x64xf32>
  return
}

// -----

// The gradient shares the checks above and adds the saved output and lse.
func.func @grad_out_type(%do: tensor<2x4x16x32xf32>, %q: tensor<2x4x16x64xf32>, %k: tensor<2x4x16x64xf32>,
                         %v: tensor<2x4x16x64xf32>, %lse: tensor<2x4x16xf32>) {
  // expected-error @+1 {{expected out (and grad) type 'tensor<2x4x16x64xf32>', but got 'tensor<2x4x16x32xf32>'}}
  %dq, %dk, %dv = tx.attention_grad %do, %q, %k, %v, %do, %lse scale(0.125)
      : tensor<2x4x16x32xf32>, tensor<2x4x16x64xf32>, tensor<2x4x16x64xf32>, tensor<2x4x16x64xf32>, tensor<2x4x16xf32>
  return
}

// -----

func.func @grad_lse_type(%do: tensor<2x4x16x64xf32>, %q: tensor<2x4x16x64xf32>, %k: tensor<2x4x16x64xf32>,
                         %v: tensor<2x4x16x64xf32>, %lse: tensor<2x4x8xf32>) {
  // expected-error @+1 {{expected lse type 'tensor<2x4x16xf32>', but got 'tensor<2x4x8xf32>'}}
  %dq, %dk, %dv = tx.attention_grad %do, %q, %k, %v, %do, %lse scale(0.125)
      : tensor<2x4x16x64xf32>, tensor<2x4x16x64xf32>, tensor<2x4x16x64xf32>, tensor<2x4x16x64xf32>, tensor<2x4x8xf32>
  return
}

// -----

func.func @grad_shared_check(%do: tensor<2x4x16x64xf32>, %q: tensor<2x4x16x64xf32>, %k: tensor<2x4x16x64xf32>,
                             %v: tensor<2x4x16x64xf32>, %lse: tensor<2x4x16xf32>) {
  // expected-error @+1 {{expected 'causal' with 'window', but got a window alone}}
  %dq, %dk, %dv = tx.attention_grad %do, %q, %k, %v, %do, %lse scale(0.125) window(2)
      : tensor<2x4x16x64xf32>, tensor<2x4x16x64xf32>, tensor<2x4x16x64xf32>, tensor<2x4x16x64xf32>, tensor<2x4x16xf32>
  return
}

// -----

func.func @dropout_ratio_one(%q: tensor<1x2x4x8xf32>, %key: tensor<i64>) {
  // expected-error @+1 {{expected a dropout ratio in [0, 1), but got 1}}
  %o, %l = tx.attention %q, %q, %q scale(0.125) dropout(%key, 1.0, 0) : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>
  return
}

// -----

func.func @dropout_key_without_ratio(%q: tensor<1x2x4x8xf32>, %key: tensor<i64>) {
  // expected-error @+1 {{expected a dropout key and ratio together, but got a key without a ratio}}
  %o, %l = "tx.attention"(%q, %q, %q, %key) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 1>, scale = 1.250000e-01 : f64}> : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<i64>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4xf32>)
  return
}

// -----

func.func @dropout_ratio_without_key(%q: tensor<1x2x4x8xf32>, %o: tensor<1x2x4x8xf32>, %lse: tensor<1x2x4xf32>) {
  // expected-error @+1 {{expected a dropout key and ratio together, but got a ratio without a key}}
  %dq, %dk, %dv = "tx.attention_grad"(%o, %q, %q, %q, %o, %lse) <{dropout_ratio = 1.000000e-01 : f32, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 1, 1, 0>, scale = 1.250000e-01 : f64}> : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>)
  return
}

// -----

func.func @dropout_key_type(%q: tensor<1x2x4x8xf32>, %key: tensor<i32>) {
  // expected-error @+1 {{operand #3 must be 0D tensor of 64-bit signless integer values}}
  %o, %l = "tx.attention"(%q, %q, %q, %key) <{dropout_ratio = 1.000000e-01 : f32, operandSegmentSizes = array<i32: 1, 1, 1, 0, 1>, scale = 1.250000e-01 : f64}> : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<i32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4xf32>)
  return
}
