// RUN: txopt-opt %s --split-input-file --verify-diagnostics

// One case per branch of the #tx.fp8_recipe parser and verifier and of the
// FP8 op verifiers (TxPrecisionOps.cpp), plus the ODS constraints the ops
// rely on.

// The recipe kind is TE's: delayed or current.
func.func @recipe_unknown_kind(%a: tensor<f32>) {
  // expected-error @+1 {{expected 'delayed' or 'current', but got 'lazy'}}
  %s, %si = tx.fp8_current_scale %a for f8E4M3FN #tx.fp8_recipe<lazy>
  return
}

// -----

func.func @recipe_duplicate_key(%a: tensor<f32>) {
  // expected-error @+1 {{duplicate 'format'}}
  %s, %si = tx.fp8_current_scale %a for f8E4M3FN #tx.fp8_recipe<current, format = e4m3, format = hybrid>
  return
}

// -----

func.func @recipe_unknown_format(%a: tensor<f32>) {
  // expected-error @+1 {{expected format 'hybrid' or 'e4m3', but got 'e5m2'}}
  %s, %si = tx.fp8_current_scale %a for f8E4M3FN #tx.fp8_recipe<current, format = e5m2>
  return
}

// -----

func.func @recipe_unknown_amax(%h: tensor<4xf32>, %s: tensor<f32>, %a: tensor<f32>) {
  // expected-error @+1 {{expected amax 'max' or 'most_recent', but got 'mean'}}
  %nh, %ns, %nsi = tx.fp8_scale_update %h, %s, %a : tensor<4xf32> for f8E4M3FN #tx.fp8_recipe<delayed, history = 4, amax = mean>
  return
}

// -----

func.func @recipe_unknown_key(%h: tensor<4xf32>, %s: tensor<f32>, %a: tensor<f32>) {
  // expected-error @+1 {{expected 'format', 'history', 'amax' or 'margin', but got 'window'}}
  %nh, %ns, %nsi = tx.fp8_scale_update %h, %s, %a : tensor<4xf32> for f8E4M3FN #tx.fp8_recipe<delayed, window = 4>
  return
}

// -----

// Current scaling keeps no history: the keys would be silently ignored.
func.func @recipe_current_with_history(%a: tensor<f32>) {
  // expected-error @+1 {{expected only 'format' in a current-scaling recipe}}
  %s, %si = tx.fp8_current_scale %a for f8E4M3FN #tx.fp8_recipe<current, history = 16>
  return
}

// -----

func.func @recipe_empty_history(%h: tensor<4xf32>, %s: tensor<f32>, %a: tensor<f32>) {
  // expected-error @+1 {{expected an amax history length of at least 1, but got 0}}
  %nh, %ns, %nsi = tx.fp8_scale_update %h, %s, %a : tensor<4xf32> for f8E4M3FN #tx.fp8_recipe<delayed, history = 0>
  return
}

// -----

// A negative margin would push the window's amax past fp8_max.
func.func @recipe_negative_margin(%h: tensor<4xf32>, %s: tensor<f32>, %a: tensor<f32>) {
  // expected-error @+1 {{expected a margin >= 0, but got -1}}
  %nh, %ns, %nsi = tx.fp8_scale_update %h, %s, %a : tensor<4xf32> for f8E4M3FN #tx.fp8_recipe<delayed, history = 4, margin = -1>
  return
}

// -----

// A history update needs a delayed recipe.
func.func @scale_update_current_recipe(%h: tensor<4xf32>, %s: tensor<f32>, %a: tensor<f32>) {
  // expected-error @+1 {{expected a delayed-scaling recipe, but got 'current'}}
  %nh, %ns, %nsi = tx.fp8_scale_update %h, %s, %a : tensor<4xf32> for f8E4M3FN #tx.fp8_recipe<current>
  return
}

// -----

// The state is sized by the recipe (TE's amax_history_len).
func.func @scale_update_history_length(%h: tensor<8xf32>, %s: tensor<f32>, %a: tensor<f32>) {
  // expected-error @+1 {{expected an amax history of 16 entries (the recipe's history length), but got 8}}
  %nh, %ns, %nsi = tx.fp8_scale_update %h, %s, %a : tensor<8xf32> for f8E4M3FN #tx.fp8_recipe<delayed, history = 16>
  return
}

// -----

// Under format = e4m3 nothing is cast to E5M2, so no E5M2 scale exists.
func.func @scale_update_e5m2_under_e4m3(%h: tensor<4xf32>, %s: tensor<f32>, %a: tensor<f32>) {
  // expected-error @+1 {{expected 'f8E4M3FN' under the recipe's format 'e4m3', but got 'f8E5M2'}}
  %nh, %ns, %nsi = tx.fp8_scale_update %h, %s, %a : tensor<4xf32> for f8E5M2 #tx.fp8_recipe<delayed, format = e4m3, history = 4>
  return
}

// -----

// The history is f32 (and so is every scale): the ODS constraint.
func.func @scale_update_bf16_history(%h: tensor<4xbf16>, %s: tensor<f32>, %a: tensor<f32>) {
  // expected-error @+1 {{'amax_history' must be statically shaped 1D or 2D tensor of 32-bit float values, but got 'tensor<4xbf16>'}}
  %nh, %ns, %nsi = tx.fp8_scale_update %h, %s, %a : tensor<4xbf16> for f8E4M3FN #tx.fp8_recipe<delayed, history = 4>
  return
}

// -----

// Scales are for the two OCP FP8 types only: the ODS constraint.
func.func @scale_update_not_fp8(%h: tensor<4xf32>, %s: tensor<f32>, %a: tensor<f32>) {
  // expected-error @+1 {{attribute 'fp8_type' failed to satisfy constraint: type attribute of f8E4M3FN type or f8E5M2 type}}
  %nh, %ns, %nsi = tx.fp8_scale_update %h, %s, %a : tensor<4xf32> for bf16 #tx.fp8_recipe<delayed, history = 4>
  return
}

// -----

// Packed: every row is one site's history, sized by the recipe too.
func.func @packed_history_length(%h: tensor<3x8xf32>, %s: tensor<3xf32>, %a: tensor<3xf32>) {
  // expected-error @+1 {{expected an amax history of 16 entries (the recipe's history length), but got 8}}
  %nh, %ns, %nsi = tx.fp8_scale_update %h, %s, %a : tensor<3x8xf32> for f8E4M3FN #tx.fp8_recipe<delayed, history = 16>
  return
}

// -----

// One scale per history row: the generic form can state a mismatch the
// custom form infers away.
func.func @packed_scale_count(%h: tensor<3x4xf32>, %s: tensor<2xf32>, %a: tensor<3xf32>) {
  // expected-error @+1 {{scale has one entry per amax history row}}
  %nh, %ns, %nsi = "tx.fp8_scale_update"(%h, %s, %a) <{fp8_type = f8E4M3FN, recipe = #tx.fp8_recipe<delayed, history = 4>}> : (tensor<3x4xf32>, tensor<2xf32>, tensor<3xf32>) -> (tensor<3x4xf32>, tensor<3xf32>, tensor<3xf32>)
  return
}

// -----

func.func @packed_amax_count(%h: tensor<3x4xf32>, %s: tensor<3xf32>, %a: tensor<f32>) {
  // expected-error @+1 {{amax has one entry per amax history row}}
  %nh, %ns, %nsi = "tx.fp8_scale_update"(%h, %s, %a) <{fp8_type = f8E4M3FN, recipe = #tx.fp8_recipe<delayed, history = 4>}> : (tensor<3x4xf32>, tensor<3xf32>, tensor<f32>) -> (tensor<3x4xf32>, tensor<3xf32>, tensor<3xf32>)
  return
}

// -----

func.func @packed_new_scale_inv_count(%h: tensor<3x4xf32>, %s: tensor<3xf32>, %a: tensor<3xf32>) {
  // expected-error @+1 {{new_scale_inv has one entry per amax history row}}
  %nh, %ns, %nsi = "tx.fp8_scale_update"(%h, %s, %a) <{fp8_type = f8E4M3FN, recipe = #tx.fp8_recipe<delayed, history = 4>}> : (tensor<3x4xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<3x4xf32>, tensor<3xf32>, tensor<f32>)
  return
}

// -----

// A packed state of no sites updates nothing.
func.func @packed_no_sites(%h: tensor<0x4xf32>, %s: tensor<0xf32>, %a: tensor<0xf32>) {
  // expected-error @+1 {{expected at least one site (row) in a packed amax history, but got 'tensor<0x4xf32>'}}
  %nh, %ns, %nsi = tx.fp8_scale_update %h, %s, %a : tensor<0x4xf32> for f8E4M3FN #tx.fp8_recipe<delayed, history = 4>
  return
}

// -----

// Rank 3 is no history at all: the ODS constraint.
func.func @history_rank_3(%h: tensor<2x3x4xf32>, %s: tensor<2x3xf32>, %a: tensor<2x3xf32>) {
  // expected-error @+1 {{'amax_history' must be statically shaped 1D or 2D tensor of 32-bit float values, but got 'tensor<2x3x4xf32>'}}
  %nh, %ns, %nsi = tx.fp8_scale_update %h, %s, %a : tensor<2x3x4xf32> for f8E4M3FN #tx.fp8_recipe<delayed, history = 4>
  return
}

// -----

func.func @site_out_of_range(%s: tensor<3xf32>) {
  // expected-error @+1 {{expected an index in [0, 3) (the state's sites), but got 3}}
  %x = tx.fp8_site %s[3] : tensor<3xf32>
  return
}

// -----

func.func @site_of_2d_state(%h: tensor<3x4xf32>) {
  // expected-error @+1 {{operand #0 must be statically shaped 1D tensor of 32-bit float values, but got 'tensor<3x4xf32>'}}
  %x = tx.fp8_site %h[0] : tensor<3x4xf32>
  return
}

// -----

// Valid: a packed update of two sites and a site's read (guards against
// an over-strict verifier).
func.func @packed_ok(%h: tensor<2x4xf32>, %s: tensor<2xf32>, %a: tensor<2xf32>) -> tensor<f32> {
  %nh, %ns, %nsi = tx.fp8_scale_update %h, %s, %a : tensor<2x4xf32> for f8E4M3FN #tx.fp8_recipe<delayed, history = 4>
  %x = tx.fp8_site %nsi[1] : tensor<2xf32>
  return %x : tensor<f32>
}

// -----

// Valid: E5M2 under hybrid (guards against an over-strict verifier).
func.func @scale_update_e5m2_hybrid_ok(%h: tensor<4xf32>, %s: tensor<f32>, %a: tensor<f32>) {
  %nh, %ns, %nsi = tx.fp8_scale_update %h, %s, %a : tensor<4xf32> for f8E5M2 #tx.fp8_recipe<delayed, history = 4>
  return
}

// -----

func.func @current_scale_delayed_recipe(%a: tensor<f32>) {
  // expected-error @+1 {{expected a current-scaling recipe, but got 'delayed'}}
  %s, %si = tx.fp8_current_scale %a for f8E4M3FN #tx.fp8_recipe<delayed>
  return
}

// -----

func.func @current_scale_e5m2_under_e4m3(%a: tensor<f32>) {
  // expected-error @+1 {{expected 'f8E4M3FN' under the recipe's format 'e4m3', but got 'f8E5M2'}}
  %s, %si = tx.fp8_current_scale %a for f8E5M2 #tx.fp8_recipe<current, format = e4m3>
  return
}

// -----

// quantize keeps the shape (ODS AllShapesMatch) ...
func.func @quantize_shape_mismatch(%x: tensor<4x8xbf16>, %s: tensor<f32>) {
  // expected-error @+1 {{all of {input, result} have same shape}}
  %q = tx.quantize %x, %s : tensor<4x8xbf16> to tensor<8x4xf8E4M3FN>
  return
}

// -----

// ... and produces FP8 ...
func.func @quantize_to_bf16(%x: tensor<4xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{result #0 must be statically shaped tensor of f8E4M3FN type or f8E5M2 type values}}
  %q = tx.quantize %x, %s : tensor<4xf32> to tensor<4xbf16>
  return
}

// -----

// ... from a wider float; the scale is a 0-d f32.
func.func @quantize_vector_scale(%x: tensor<4xf32>, %s: tensor<4xf32>) {
  // expected-error @+1 {{operand #1 must be 0D tensor of 32-bit float values}}
  %q = "tx.quantize"(%x, %s) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf8E4M3FN>
  return
}

// -----

func.func @dequantize_from_f32(%x: tensor<4xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of f8E4M3FN type or f8E5M2 type values}}
  %d = tx.dequantize %x, %s : tensor<4xf32> to tensor<4xbf16>
  return
}

// -----

func.func @fp8_matmul_vector(%x: tensor<64xf8E4M3FN>, %w: tensor<64x32xf8E4M3FN>, %s: tensor<f32>) {
  // expected-error @+1 {{expected operands of rank at least 2, but got [64] and [64, 32]}}
  %y = tx.fp8_matmul %x, %w scale_inv(%s, %s) : tensor<64xf8E4M3FN>, tensor<64x32xf8E4M3FN> -> tensor<32xbf16>
  return
}

// -----

func.func @fp8_matmul_contraction(%x: tensor<16x64xf8E4M3FN>, %w: tensor<32x32xf8E4M3FN>, %s: tensor<f32>) {
  // expected-error @+1 {{expected matching contraction dims, but got [16, 64] and [32, 32]}}
  %y = tx.fp8_matmul %x, %w scale_inv(%s, %s) : tensor<16x64xf8E4M3FN>, tensor<32x32xf8E4M3FN> -> tensor<16x32xbf16>
  return
}

// -----

func.func @fp8_matmul_batch(%x: tensor<2x16x64xf8E4M3FN>, %w: tensor<3x64x32xf8E4M3FN>, %s: tensor<f32>) {
  // expected-error @+1 {{expected broadcastable batch dims, but got [2, 16, 64] and [3, 64, 32]}}
  %y = tx.fp8_matmul %x, %w scale_inv(%s, %s) : tensor<2x16x64xf8E4M3FN>, tensor<3x64x32xf8E4M3FN> -> tensor<2x16x32xbf16>
  return
}

// -----

func.func @fp8_matmul_result_shape(%x: tensor<16x64xf8E4M3FN>, %w: tensor<64x32xf8E4M3FN>, %s: tensor<f32>) {
  // expected-error @+1 {{expected result shape [16, 32], but got [32, 16]}}
  %y = tx.fp8_matmul %x, %w scale_inv(%s, %s) : tensor<16x64xf8E4M3FN>, tensor<64x32xf8E4M3FN> -> tensor<32x16xbf16>
  return
}

// -----

// cuBLASLt has no E5M2 x E5M2 GEMM; the hybrid format never needs one.
func.func @fp8_matmul_two_e5m2(%x: tensor<16x64xf8E5M2>, %w: tensor<64x32xf8E5M2>, %s: tensor<f32>) {
  // expected-error @+1 {{expected at most one 'f8E5M2' operand, but got two}}
  %y = tx.fp8_matmul %x, %w scale_inv(%s, %s) : tensor<16x64xf8E5M2>, tensor<64x32xf8E5M2> -> tensor<16x32xbf16>
  return
}

// -----

// The result is a wider float (what the epilogue writes), never FP8.
func.func @fp8_matmul_fp8_result(%x: tensor<16x64xf8E4M3FN>, %w: tensor<64x32xf8E4M3FN>, %s: tensor<f32>) {
  // expected-error @+1 {{result #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float values}}
  %y = tx.fp8_matmul %x, %w scale_inv(%s, %s) : tensor<16x64xf8E4M3FN>, tensor<64x32xf8E4M3FN> -> tensor<16x32xf8E4M3FN>
  return
}
