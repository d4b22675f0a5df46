// RUN: txopt-run %s --function history_wrap | FileCheck %s --check-prefix=WRAP
// RUN: txopt-run %s --function spike_max | FileCheck %s --check-prefix=SPIKE-MAX
// RUN: txopt-run %s --function spike_most_recent | FileCheck %s --check-prefix=SPIKE-RECENT
// RUN: txopt-run %s --function zero_amax | FileCheck %s --check-prefix=ZERO
// RUN: txopt-run %s --function nan_amax | FileCheck %s --check-prefix=NAN
// RUN: txopt-run %s --function inf_amax | FileCheck %s --check-prefix=INF
// RUN: txopt-run %s --function margin_and_format | FileCheck %s --check-prefix=MARGIN
// RUN: txopt-run %s --function tiny_amax | FileCheck %s --check-prefix=TINY
// RUN: txopt-run %s --function current_scaling | FileCheck %s --check-prefix=CURRENT
// RUN: txopt-run %s --function amax | FileCheck %s --check-prefix=AMAX
// RUN: txopt-run %s --function quantize_dequantize | FileCheck %s --check-prefix=QDQ
// RUN: txopt-run %s --function fp8_matmul | FileCheck %s --check-prefix=GEMM
// RUN: txopt-run %s --function packed | FileCheck %s --check-prefix=PACKED

// Unit tests of the FP8 scaling ops (TxPrecisionOps.td) on the reference
// executor. Every expected value follows from the formulas in the op
// descriptions (TE's delayed_scaling.cu and recipe_common.cuh), evaluated in
// f32 by hand and cross-checked with numpy float32; scales print with 9
// significant digits, i.e. exactly. fp8-scaling.test runs the same formulas
// over long random amax sequences against an independent numpy version.

// History wrap (L = 4, amax = max): amaxes 2, 8, 1, 0.5, 0.25, 4 enter slot
// 0 one step at a time. The spike of 8 sets the scale to 448 / 8 = 56 while
// it is in the window (4 steps) and drops out at step 6, when the window is
// [4, 0.25, 0.5, 1] and the scale becomes 448 / 4 = 112.
// WRAP: s1 = 224
// WRAP-NEXT: s2 = 56
// WRAP-NEXT: s3 = 56
// WRAP-NEXT: s4 = 56
// WRAP-NEXT: s5 = 56
// WRAP-NEXT: h5: tensor<4xf32> = [0.25, 0.5, 1, 8]
// WRAP-NEXT: s6 = 112
// WRAP-NEXT: h6: tensor<4xf32> = [4, 0.25, 0.5, 1]
// WRAP-NEXT: si6 = 0.00892857183
func.func @history_wrap() -> (tensor<f32> {tx.name = "s1"}, tensor<f32> {tx.name = "s2"}, tensor<f32> {tx.name = "s3"},
    tensor<f32> {tx.name = "s4"}, tensor<f32> {tx.name = "s5"}, tensor<4xf32> {tx.name = "h5"},
    tensor<f32> {tx.name = "s6"}, tensor<4xf32> {tx.name = "h6"}, tensor<f32> {tx.name = "si6"}) {
  %h0 = tx.constant dense<0.0> : tensor<4xf32>
  %s0 = tx.constant dense<1.0> : tensor<f32>
  %a1 = tx.constant dense<2.0> : tensor<f32>
  %a2 = tx.constant dense<8.0> : tensor<f32>
  %a3 = tx.constant dense<1.0> : tensor<f32>
  %a4 = tx.constant dense<0.5> : tensor<f32>
  %a5 = tx.constant dense<0.25> : tensor<f32>
  %a6 = tx.constant dense<4.0> : tensor<f32>
  %h1, %s1, %i1 = tx.fp8_scale_update %h0, %s0, %a1 : tensor<4xf32> for f8E4M3FN #tx.fp8_recipe<delayed, history = 4>
  %h2, %s2, %i2 = tx.fp8_scale_update %h1, %s1, %a2 : tensor<4xf32> for f8E4M3FN #tx.fp8_recipe<delayed, history = 4>
  %h3, %s3, %i3 = tx.fp8_scale_update %h2, %s2, %a3 : tensor<4xf32> for f8E4M3FN #tx.fp8_recipe<delayed, history = 4>
  %h4, %s4, %i4 = tx.fp8_scale_update %h3, %s3, %a4 : tensor<4xf32> for f8E4M3FN #tx.fp8_recipe<delayed, history = 4>
  %h5, %s5, %i5 = tx.fp8_scale_update %h4, %s4, %a5 : tensor<4xf32> for f8E4M3FN #tx.fp8_recipe<delayed, history = 4>
  %h6, %s6, %i6 = tx.fp8_scale_update %h5, %s5, %a6 : tensor<4xf32> for f8E4M3FN #tx.fp8_recipe<delayed, history = 4>
  return %s1, %s2, %s3, %s4, %s5, %h5, %s6, %h6, %i6
      : tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<4xf32>, tensor<f32>, tensor<4xf32>, tensor<f32>
}

// An amax spike (1, 100, 1): under max the spike holds the scale at
// f32(448 / 100) = 4.48000002 for the whole window ...
// SPIKE-MAX: s1 = 448
// SPIKE-MAX-NEXT: s2 = 4.48000002
// SPIKE-MAX-NEXT: s3 = 4.48000002
// SPIKE-MAX-NEXT: si3 = 0.223214284
func.func @spike_max() -> (tensor<f32> {tx.name = "s1"}, tensor<f32> {tx.name = "s2"}, tensor<f32> {tx.name = "s3"},
    tensor<f32> {tx.name = "si3"}) {
  %h0 = tx.constant dense<0.0> : tensor<4xf32>
  %s0 = tx.constant dense<1.0> : tensor<f32>
  %one = tx.constant dense<1.0> : tensor<f32>
  %spike = tx.constant dense<100.0> : tensor<f32>
  %h1, %s1, %i1 = tx.fp8_scale_update %h0, %s0, %one : tensor<4xf32> for f8E4M3FN #tx.fp8_recipe<delayed, history = 4, amax = max>
  %h2, %s2, %i2 = tx.fp8_scale_update %h1, %s1, %spike : tensor<4xf32> for f8E4M3FN #tx.fp8_recipe<delayed, history = 4, amax = max>
  %h3, %s3, %i3 = tx.fp8_scale_update %h2, %s2, %one : tensor<4xf32> for f8E4M3FN #tx.fp8_recipe<delayed, history = 4, amax = max>
  return %s1, %s2, %s3, %i3 : tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>
}

// ... under most_recent it follows the newest amax straight back to 448.
// SPIKE-RECENT: s1 = 448
// SPIKE-RECENT-NEXT: s2 = 4.48000002
// SPIKE-RECENT-NEXT: s3 = 448
// SPIKE-RECENT-NEXT: si3 = 0.00223214296
// SPIKE-RECENT-NEXT: h3: tensor<4xf32> = [1, 100, 1, 0]
func.func @spike_most_recent() -> (tensor<f32> {tx.name = "s1"}, tensor<f32> {tx.name = "s2"}, tensor<f32> {tx.name = "s3"},
    tensor<f32> {tx.name = "si3"}, tensor<4xf32> {tx.name = "h3"}) {
  %h0 = tx.constant dense<0.0> : tensor<4xf32>
  %s0 = tx.constant dense<1.0> : tensor<f32>
  %one = tx.constant dense<1.0> : tensor<f32>
  %spike = tx.constant dense<100.0> : tensor<f32>
  %h1, %s1, %i1 = tx.fp8_scale_update %h0, %s0, %one : tensor<4xf32> for f8E4M3FN #tx.fp8_recipe<delayed, history = 4, amax = most_recent>
  %h2, %s2, %i2 = tx.fp8_scale_update %h1, %s1, %spike : tensor<4xf32> for f8E4M3FN #tx.fp8_recipe<delayed, history = 4, amax = most_recent>
  %h3, %s3, %i3 = tx.fp8_scale_update %h2, %s2, %one : tensor<4xf32> for f8E4M3FN #tx.fp8_recipe<delayed, history = 4, amax = most_recent>
  return %s1, %s2, %s3, %i3, %h3 : tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<4xf32>
}

// A zero amax: with an all-zero window (max) or as the newest amax
// (most_recent) no scale maps it to 448, so the previous scale 3 is kept
// (scale_inv recomputed: f32(1/3)); under max an older nonzero entry in the
// window still decides (448 / 2 = 224). The zero is recorded either way.
// ZERO: max_empty = 3
// ZERO-NEXT: max_empty_inv = 0.333333343
// ZERO-NEXT: recent = 3
// ZERO-NEXT: max_older = 224
// ZERO-NEXT: h: tensor<4xf32> = [0, 2, 0, 0]
func.func @zero_amax() -> (tensor<f32> {tx.name = "max_empty"}, tensor<f32> {tx.name = "max_empty_inv"},
    tensor<f32> {tx.name = "recent"}, tensor<f32> {tx.name = "max_older"}, tensor<4xf32> {tx.name = "h"}) {
  %zeros = tx.constant dense<0.0> : tensor<4xf32>
  %older = tx.constant dense<[2.0, 0.0, 0.0, 0.0]> : tensor<4xf32>
  %s = tx.constant dense<3.0> : tensor<f32>
  %zero = tx.constant dense<0.0> : tensor<f32>
  %h1, %s1, %i1 = tx.fp8_scale_update %zeros, %s, %zero : tensor<4xf32> for f8E4M3FN #tx.fp8_recipe<delayed, history = 4, amax = max>
  %h2, %s2, %i2 = tx.fp8_scale_update %older, %s, %zero : tensor<4xf32> for f8E4M3FN #tx.fp8_recipe<delayed, history = 4, amax = most_recent>
  %h3, %s3, %i3 = tx.fp8_scale_update %older, %s, %zero : tensor<4xf32> for f8E4M3FN #tx.fp8_recipe<delayed, history = 4, amax = max>
  return %s1, %i1, %s2, %s3, %h3 : tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<4xf32>
}

// A NaN amax (here from tx.amax of a tensor holding a NaN) is recorded in
// the history. The window max skips it, as TE's fmaxf does, so the scale
// comes from the older 2 (224) instead of freezing for L steps; under
// most_recent the NaN keeps the previous scale 5 (inverse f32(1/5)).
// NAN: h: tensor<4xf32> = [nan, 2, 0, 0]
// NAN-NEXT: max = 224
// NAN-NEXT: recent = 5
// NAN-NEXT: recent_inv = 0.200000003
func.func @nan_amax() -> (tensor<4xf32> {tx.name = "h"}, tensor<f32> {tx.name = "max"}, tensor<f32> {tx.name = "recent"},
    tensor<f32> {tx.name = "recent_inv"}) {
  %x = tx.constant dense<[1.0, 0x7FC0, -3.0]> : tensor<3xbf16>
  %amax = tx.amax %x : tensor<3xbf16>
  %older = tx.constant dense<[2.0, 0.0, 0.0, 0.0]> : tensor<4xf32>
  %s = tx.constant dense<5.0> : tensor<f32>
  %h1, %s1, %i1 = tx.fp8_scale_update %older, %s, %amax : tensor<4xf32> for f8E4M3FN #tx.fp8_recipe<delayed, history = 4, amax = max>
  %h2, %s2, %i2 = tx.fp8_scale_update %older, %s, %amax : tensor<4xf32> for f8E4M3FN #tx.fp8_recipe<delayed, history = 4, amax = most_recent>
  return %h1, %s1, %s2, %i2 : tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<f32>
}

// An infinite amax keeps the scale (1) while it is in the window: L = 2,
// amaxes inf, 2, 4: the scale stays 1 for two steps, then the window is
// [4, 2] and the scale 448 / 4 = 112.
// INF: s1 = 1
// INF-NEXT: s2 = 1
// INF-NEXT: h2: tensor<2xf32> = [2, inf]
// INF-NEXT: s3 = 112
func.func @inf_amax() -> (tensor<f32> {tx.name = "s1"}, tensor<f32> {tx.name = "s2"}, tensor<2xf32> {tx.name = "h2"},
    tensor<f32> {tx.name = "s3"}) {
  %h0 = tx.constant dense<0.0> : tensor<2xf32>
  %s0 = tx.constant dense<1.0> : tensor<f32>
  %inf = tx.constant dense<0x7F800000> : tensor<f32>
  %two = tx.constant dense<2.0> : tensor<f32>
  %four = tx.constant dense<4.0> : tensor<f32>
  %h1, %s1, %i1 = tx.fp8_scale_update %h0, %s0, %inf : tensor<2xf32> for f8E4M3FN #tx.fp8_recipe<delayed, history = 2>
  %h2, %s2, %i2 = tx.fp8_scale_update %h1, %s1, %two : tensor<2xf32> for f8E4M3FN #tx.fp8_recipe<delayed, history = 2>
  %h3, %s3, %i3 = tx.fp8_scale_update %h2, %s2, %four : tensor<2xf32> for f8E4M3FN #tx.fp8_recipe<delayed, history = 2>
  return %s1, %s2, %h2, %s3 : tensor<f32>, tensor<f32>, tensor<2xf32>, tensor<f32>
}

// Margin and format: scale = fp8_max * 2^-margin / amax with amax 7 gives
// 448 / 2 / 7 = 32 (E4M3FN, margin 1), 57344 / 7 = 8192 (E5M2, margin 0),
// 57344 / 4 / 7 = 2048 (E5M2, margin 2); amax 3 gives f32(448 / 3) =
// 149.333328, whose inverse rounds again.
// MARGIN: e4m3_m1 = 32
// MARGIN-NEXT: e4m3_m1_inv = 0.03125
// MARGIN-NEXT: e5m2_m0 = 8192
// MARGIN-NEXT: e5m2_m2 = 2048
// MARGIN-NEXT: e5m2_m2_inv = 0.00048828125
// MARGIN-NEXT: e4m3_third = 149.333328
// MARGIN-NEXT: e4m3_third_inv = 0.00669642864
func.func @margin_and_format() -> (tensor<f32> {tx.name = "e4m3_m1"}, tensor<f32> {tx.name = "e4m3_m1_inv"},
    tensor<f32> {tx.name = "e5m2_m0"}, tensor<f32> {tx.name = "e5m2_m2"}, tensor<f32> {tx.name = "e5m2_m2_inv"},
    tensor<f32> {tx.name = "e4m3_third"}, tensor<f32> {tx.name = "e4m3_third_inv"}) {
  %h = tx.constant dense<0.0> : tensor<1xf32>
  %s = tx.constant dense<1.0> : tensor<f32>
  %seven = tx.constant dense<7.0> : tensor<f32>
  %three = tx.constant dense<3.0> : tensor<f32>
  %h1, %s1, %i1 = tx.fp8_scale_update %h, %s, %seven : tensor<1xf32> for f8E4M3FN #tx.fp8_recipe<delayed, history = 1, margin = 1>
  %h2, %s2, %i2 = tx.fp8_scale_update %h, %s, %seven : tensor<1xf32> for f8E5M2 #tx.fp8_recipe<delayed, history = 1>
  %h3, %s3, %i3 = tx.fp8_scale_update %h, %s, %seven : tensor<1xf32> for f8E5M2 #tx.fp8_recipe<delayed, history = 1, margin = 2>
  %h4, %s4, %i4 = tx.fp8_scale_update %h, %s, %three : tensor<1xf32> for f8E4M3FN #tx.fp8_recipe<delayed, format = e4m3, history = 1>
  return %s1, %i1, %s2, %s3, %i3, %s4, %i4 : tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>
}

// An amax so small (the smallest f32 subnormal) that 448 / amax overflows
// f32 gets the f32 maximum, whose inverse is a subnormal.
// TINY: s = 3.40282347e+38
// TINY-NEXT: si = 2.93873588e-39
func.func @tiny_amax() -> (tensor<f32> {tx.name = "s"}, tensor<f32> {tx.name = "si"}) {
  %h = tx.constant dense<0.0> : tensor<2xf32>
  %s0 = tx.constant dense<1.0> : tensor<f32>
  %tiny = tx.constant dense<0x00000001> : tensor<f32>
  %h1, %s1, %i1 = tx.fp8_scale_update %h, %s0, %tiny : tensor<2xf32> for f8E4M3FN #tx.fp8_recipe<delayed, history = 2>
  return %s1, %i1 : tensor<f32>, tensor<f32>
}

// Current scaling: fp8_max / amax of this very tensor; 0, NaN and inf give
// scale 1 (there is no previous scale), a tiny amax the f32 maximum.
// CURRENT: two = 224
// CURRENT-NEXT: two_inv = 0.00446428591
// CURRENT-NEXT: zero = 1
// CURRENT-NEXT: nan = 1
// CURRENT-NEXT: inf = 1
// CURRENT-NEXT: tiny = 3.40282347e+38
// CURRENT-NEXT: e5m2_seven = 8192
func.func @current_scaling() -> (tensor<f32> {tx.name = "two"}, tensor<f32> {tx.name = "two_inv"},
    tensor<f32> {tx.name = "zero"}, tensor<f32> {tx.name = "nan"}, tensor<f32> {tx.name = "inf"},
    tensor<f32> {tx.name = "tiny"}, tensor<f32> {tx.name = "e5m2_seven"}) {
  %two = tx.constant dense<2.0> : tensor<f32>
  %zero = tx.constant dense<0.0> : tensor<f32>
  %nan = tx.constant dense<0x7FC00000> : tensor<f32>
  %inf = tx.constant dense<0x7F800000> : tensor<f32>
  %tiny = tx.constant dense<0x00000001> : tensor<f32>
  %seven = tx.constant dense<7.0> : tensor<f32>
  %s1, %i1 = tx.fp8_current_scale %two for f8E4M3FN #tx.fp8_recipe<current>
  %s2, %i2 = tx.fp8_current_scale %zero for f8E4M3FN #tx.fp8_recipe<current>
  %s3, %i3 = tx.fp8_current_scale %nan for f8E4M3FN #tx.fp8_recipe<current>
  %s4, %i4 = tx.fp8_current_scale %inf for f8E4M3FN #tx.fp8_recipe<current>
  %s5, %i5 = tx.fp8_current_scale %tiny for f8E4M3FN #tx.fp8_recipe<current>
  %s6, %i6 = tx.fp8_current_scale %seven for f8E5M2 #tx.fp8_recipe<current>
  return %s1, %i1, %s2, %s3, %s4, %s5, %s6 : tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>
}

// amax is max |x|: signs do not matter, -inf gives inf, NaN propagates,
// an empty tensor gives 0, and FP8 inputs work like any float.
// AMAX: signed = 3
// AMAX-NEXT: neg_inf = inf
// AMAX-NEXT: nan = nan
// AMAX-NEXT: empty = 0
// AMAX-NEXT: fp8 = 448
func.func @amax() -> (tensor<f32> {tx.name = "signed"}, tensor<f32> {tx.name = "neg_inf"}, tensor<f32> {tx.name = "nan"},
    tensor<f32> {tx.name = "empty"}, tensor<f32> {tx.name = "fp8"}) {
  %a = tx.constant dense<[[-3.0, 2.0], [0.5, -0.0]]> : tensor<2x2xf32>
  %b = tx.constant dense<[1.0, 0xFF800000]> : tensor<2xf32>
  %c = tx.constant dense<[0x7FC00000, 1.0e30]> : tensor<2xf32>
  %d = tx.constant dense<> : tensor<0xf32>
  %e = tx.constant dense<[-448.0, 2.0]> : tensor<2xf8E4M3FN>
  %ra = tx.amax %a : tensor<2x2xf32>
  %rb = tx.amax %b : tensor<2xf32>
  %rc = tx.amax %c : tensor<2xf32>
  %rd = tx.amax %d : tensor<0xf32>
  %re = tx.amax %e : tensor<2xf8E4M3FN>
  return %ra, %rb, %rc, %rd, %re : tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>
}

// quantize computes f32(x * scale) and then rounds to FP8, saturating:
// with scale 2, 0.3 -> 0.6 -> 0.625, 229 -> 458 and 1000 -> 2000 saturate to
// 448, inf saturates, NaN stays, 1e-4 -> 2e-4 underflows to 0. dequantize
// by 0.5 (into bf16) halves them back.
// Both roundings matter: (1 + 2^-23) * (1.0625 - 2^-23) is 1.0625 + 7.5e-9,
// which f32 rounds to exactly 1.0625, a tie that E4M3FN rounds to the even
// 1 (rounding the exact product once would give 1.125).
// A gradient to E5M2 with scale 0.5: 5e4 -> 49152, -1.5e-6 -> -0,
// 0.05 -> 0.046875.
// dequantize rounds twice too: 448 * f32(0.1) = 44.7999992 in f32, then
// 44.75 in bf16.
// QDQ: q: tensor<8xf8E4M3FN> = [2, -4, 0.625, 448, 448, nan, 448, 0]
// QDQ-NEXT: x: tensor<8xbf16> = [1, -2, 0.3125, 224, 224, nan, 224, 0]
// QDQ-NEXT: tie = 1
// QDQ-NEXT: g: tensor<3xf8E5M2> = [49152, -0, 0.046875]
// QDQ-NEXT: deq = 44.75
func.func @quantize_dequantize() -> (tensor<8xf8E4M3FN> {tx.name = "q"}, tensor<8xbf16> {tx.name = "x"},
    tensor<f8E4M3FN> {tx.name = "tie"}, tensor<3xf8E5M2> {tx.name = "g"}, tensor<bf16> {tx.name = "deq"}) {
  %x = tx.constant dense<[1.0, -2.0, 0.3, 229.0, 1000.0, 0x7FC00000, 0x7F800000, 1.0e-4]> : tensor<8xf32>
  %two = tx.constant dense<2.0> : tensor<f32>
  %half = tx.constant dense<0.5> : tensor<f32>
  %q = tx.quantize %x, %two : tensor<8xf32> to tensor<8xf8E4M3FN>
  %d = tx.dequantize %q, %half : tensor<8xf8E4M3FN> to tensor<8xbf16>
  %t = tx.constant dense<0x3F800001> : tensor<f32>
  %ts = tx.constant dense<0x3F87FFFF> : tensor<f32>
  %tq = tx.quantize %t, %ts : tensor<f32> to tensor<f8E4M3FN>
  %g = tx.constant dense<[1.0e5, -3.0e-6, 0.1]> : tensor<3xf32>
  %gq = tx.quantize %g, %half : tensor<3xf32> to tensor<3xf8E5M2>
  %m = tx.constant dense<448.0> : tensor<f8E4M3FN>
  %tenth = tx.constant dense<0.1> : tensor<f32>
  %md = tx.dequantize %m, %tenth : tensor<f8E4M3FN> to tensor<bf16>
  return %q, %d, %tq, %gq, %md : tensor<8xf8E4M3FN>, tensor<8xbf16>, tensor<f8E4M3FN>, tensor<3xf8E5M2>, tensor<bf16>
}

// fp8_matmul: exact FP8 products, summed, times both scale inverses
// (0.5 * 0.25), rounded once: [[4, 5], [447, 448.5]] / 8. In bf16,
// 55.875 and 56.0625 both round to 56 (55.875 is a tie, 224 is even).
// The batched case broadcasts rhs over lhs's batch: E5M2 [[[2, 4]], [[-1,
// 0.5]]] times E4M3 [[[1], [3]]] = [[[14]], [[0.5]]], times 1 * 1.
// GEMM: f32: tensor<2x2xf32> = {{\[\[}}0.5, 0.625], [55.875, 56.0625]]
// GEMM-NEXT: bf16: tensor<2x2xbf16> = {{\[\[}}0.5, 0.625], [56, 56]]
// GEMM-NEXT: batched: tensor<2x1x1xf32> = {{\[\[\[}}14]], {{\[\[}}0.5]]]
func.func @fp8_matmul() -> (tensor<2x2xf32> {tx.name = "f32"}, tensor<2x2xbf16> {tx.name = "bf16"},
    tensor<2x1x1xf32> {tx.name = "batched"}) {
  %a = tx.constant dense<[[1.0, 2.0, 3.0], [-1.0, 0.5, 448.0]]> : tensor<2x3xf8E4M3FN>
  %b = tx.constant dense<[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]> : tensor<3x2xf8E4M3FN>
  %sa = tx.constant dense<0.5> : tensor<f32>
  %sb = tx.constant dense<0.25> : tensor<f32>
  %y = tx.fp8_matmul %a, %b scale_inv(%sa, %sb) : tensor<2x3xf8E4M3FN>, tensor<3x2xf8E4M3FN> -> tensor<2x2xf32>
  %z = tx.fp8_matmul %a, %b scale_inv(%sa, %sb) : tensor<2x3xf8E4M3FN>, tensor<3x2xf8E4M3FN> -> tensor<2x2xbf16>
  %c = tx.constant dense<[[[2.0, 4.0]], [[-1.0, 0.5]]]> : tensor<2x1x2xf8E5M2>
  %d = tx.constant dense<[[[1.0], [3.0]]]> : tensor<1x2x1xf8E4M3FN>
  %one = tx.constant dense<1.0> : tensor<f32>
  %w = tx.fp8_matmul %c, %d scale_inv(%one, %one) : tensor<2x1x2xf8E5M2>, tensor<1x2x1xf8E4M3FN> -> tensor<2x1x1xf32>
  return %y, %z, %w : tensor<2x2xf32>, tensor<2x2xbf16>, tensor<2x1x1xf32>
}

// Packed state (what tx-insert-fp8 emits): two sites' histories as the rows
// of one [2, 4] history, updated at once. Each row updates exactly as a
// single history would: row 0 as history_wrap's first step (amax 2: scale
// 448 / 2 = 224), row 1 as its second amax alone (8: 448 / 8 = 56), and a
// row's amax never reaches the other row's window. A site reads its own
// entry of the packed scales.
// PACKED: s: tensor<2xf32> = [224, 56]
// PACKED-NEXT: si: tensor<2xf32> = [0.00446428591, 0.0178571437]
// PACKED-NEXT: h: tensor<2x4xf32> = {{\[}}[2, 0, 0, 0], [8, 0, 0, 0]]
// PACKED-NEXT: site1 = 56
func.func @packed() -> (tensor<2xf32> {tx.name = "s"}, tensor<2xf32> {tx.name = "si"},
    tensor<2x4xf32> {tx.name = "h"}, tensor<f32> {tx.name = "site1"}) {
  %h0 = tx.constant dense<0.0> : tensor<2x4xf32>
  %s0 = tx.constant dense<1.0> : tensor<2xf32>
  %a = tx.constant dense<[2.0, 8.0]> : tensor<2xf32>
  %h1, %s1, %si1 = tx.fp8_scale_update %h0, %s0, %a : tensor<2x4xf32>
      for f8E4M3FN #tx.fp8_recipe<delayed, format = hybrid, history = 4, amax = max, margin = 0>
  %site = tx.fp8_site %s1[1] : tensor<2xf32>
  return %s1, %si1, %h1, %site : tensor<2xf32>, tensor<2xf32>, tensor<2x4xf32>, tensor<f32>
}
