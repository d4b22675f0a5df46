// RUN: txopt-opt %s --split-input-file | txopt-opt --split-input-file | FileCheck %s
// RUN: txopt-opt %s --split-input-file --mlir-print-op-generic | txopt-opt --split-input-file | FileCheck %s

// Round trips of the FP8 ops (TxPrecisionOps.td) and #tx.fp8_recipe, in
// custom and generic form.

// amax of an activation is a 0-d f32 whatever the input type.
// CHECK-LABEL: func.func @amax_bf16
// CHECK-SAME:    %[[X:[^:]+]]: tensor<16x64xbf16>
// CHECK:         %[[A:.+]] = tx.amax %[[X]] : tensor<16x64xbf16>
// CHECK:         return %[[A]] : tensor<f32>
func.func @amax_bf16(%x: tensor<16x64xbf16>) -> tensor<f32> {
  %a = tx.amax %x : tensor<16x64xbf16>
  return %a : tensor<f32>
}

// -----

// Forward tensors go to E4M3 and back to their type.
// CHECK-LABEL: func.func @quantize_dequantize_e4m3
// CHECK-SAME:    %[[X:[^:]+]]: tensor<16x64xbf16>, %[[S:[^:]+]]: tensor<f32>, %[[SI:[^:]+]]: tensor<f32>
// CHECK:         %[[Q:.+]] = tx.quantize %[[X]], %[[S]] : tensor<16x64xbf16> to tensor<16x64xf8E4M3FN>
// CHECK:         %[[D:.+]] = tx.dequantize %[[Q]], %[[SI]] : tensor<16x64xf8E4M3FN> to tensor<16x64xbf16>
// CHECK:         return %[[D]]
func.func @quantize_dequantize_e4m3(%x: tensor<16x64xbf16>, %s: tensor<f32>, %si: tensor<f32>) -> tensor<16x64xbf16> {
  %q = tx.quantize %x, %s : tensor<16x64xbf16> to tensor<16x64xf8E4M3FN>
  %d = tx.dequantize %q, %si : tensor<16x64xf8E4M3FN> to tensor<16x64xbf16>
  return %d : tensor<16x64xbf16>
}

// -----

// Gradients go to E5M2 under the hybrid format; f32 in, f32 out.
// CHECK-LABEL: func.func @quantize_dequantize_e5m2
// CHECK:         tx.quantize %{{.+}}, %{{.+}} : tensor<8xf32> to tensor<8xf8E5M2>
// CHECK:         tx.dequantize %{{.+}}, %{{.+}} : tensor<8xf8E5M2> to tensor<8xf32>
func.func @quantize_dequantize_e5m2(%g: tensor<8xf32>, %s: tensor<f32>) -> tensor<8xf32> {
  %q = tx.quantize %g, %s : tensor<8xf32> to tensor<8xf8E5M2>
  %d = tx.dequantize %q, %s : tensor<8xf8E5M2> to tensor<8xf32>
  return %d : tensor<8xf32>
}

// -----

// The delayed update with every recipe key spelled out; results get names.
// CHECK-LABEL: func.func @scale_update_delayed
// CHECK-SAME:    %[[H:[^:]+]]: tensor<16xf32>, %[[S:[^:]+]]: tensor<f32>, %[[A:[^:]+]]: tensor<f32>
// CHECK:         %[[NH:.+]], %[[NS:.+]], %[[NSI:.+]] = tx.fp8_scale_update %[[H]], %[[S]], %[[A]] : tensor<16xf32> for f8E4M3FN #tx.fp8_recipe<delayed, format = hybrid, history = 16, amax = max, margin = 0>
// CHECK:         return %[[NH]], %[[NS]], %[[NSI]]
func.func @scale_update_delayed(%h: tensor<16xf32>, %s: tensor<f32>, %a: tensor<f32>)
    -> (tensor<16xf32>, tensor<f32>, tensor<f32>) {
  %nh, %ns, %nsi = tx.fp8_scale_update %h, %s, %a : tensor<16xf32>
      for f8E4M3FN #tx.fp8_recipe<delayed, format = hybrid, history = 16, amax = max, margin = 0>
  return %nh, %ns, %nsi : tensor<16xf32>, tensor<f32>, tensor<f32>
}

// -----

// Omitted keys take TE's defaults (hybrid, 1024, max, 0) and print in full.
// CHECK-LABEL: func.func @scale_update_defaults
// CHECK:         tx.fp8_scale_update %{{.+}}, %{{.+}}, %{{.+}} : tensor<1024xf32> for f8E5M2 #tx.fp8_recipe<delayed, format = hybrid, history = 1024, amax = max, margin = 0>
func.func @scale_update_defaults(%h: tensor<1024xf32>, %s: tensor<f32>, %a: tensor<f32>) -> tensor<f32> {
  %nh, %ns, %nsi = tx.fp8_scale_update %h, %s, %a : tensor<1024xf32> for f8E5M2 #tx.fp8_recipe<delayed>
  return %ns : tensor<f32>
}

// -----

// Keys in any order; most_recent, a margin and the all-E4M3 format.
// CHECK-LABEL: func.func @scale_update_most_recent_margin
// CHECK:         tx.fp8_scale_update {{.+}} : tensor<4xf32> for f8E4M3FN #tx.fp8_recipe<delayed, format = e4m3, history = 4, amax = most_recent, margin = 2>
func.func @scale_update_most_recent_margin(%h: tensor<4xf32>, %s: tensor<f32>, %a: tensor<f32>) -> tensor<f32> {
  %nh, %ns, %nsi = tx.fp8_scale_update %h, %s, %a : tensor<4xf32>
      for f8E4M3FN #tx.fp8_recipe<delayed, margin = 2, amax = most_recent, history = 4, format = e4m3>
  return %ns : tensor<f32>
}

// -----

// Current scaling: no state, the recipe carries only the format.
// CHECK-LABEL: func.func @current_scale
// CHECK-SAME:    %[[A:[^:]+]]: tensor<f32>
// CHECK:         %[[S:.+]], %[[SI:.+]] = tx.fp8_current_scale %[[A]] for f8E5M2 #tx.fp8_recipe<current, format = hybrid>
// CHECK:         return %[[S]], %[[SI]]
func.func @current_scale(%a: tensor<f32>) -> (tensor<f32>, tensor<f32>) {
  %s, %si = tx.fp8_current_scale %a for f8E5M2 #tx.fp8_recipe<current>
  return %s, %si : tensor<f32>, tensor<f32>
}

// -----

// A plain 2-D FP8 GEMM into bf16.
// CHECK-LABEL: func.func @fp8_matmul_2d
// CHECK-SAME:    %[[X:[^:]+]]: tensor<16x64xf8E4M3FN>, %[[W:[^:]+]]: tensor<64x32xf8E4M3FN>, %[[SX:[^:]+]]: tensor<f32>, %[[SW:[^:]+]]: tensor<f32>
// CHECK:         %[[Y:.+]] = tx.fp8_matmul %[[X]], %[[W]] scale_inv(%[[SX]], %[[SW]]) : tensor<16x64xf8E4M3FN>, tensor<64x32xf8E4M3FN> -> tensor<16x32xbf16>
// CHECK:         return %[[Y]]
func.func @fp8_matmul_2d(%x: tensor<16x64xf8E4M3FN>, %w: tensor<64x32xf8E4M3FN>, %sx: tensor<f32>, %sw: tensor<f32>) -> tensor<16x32xbf16> {
  %y = tx.fp8_matmul %x, %w scale_inv(%sx, %sw) : tensor<16x64xf8E4M3FN>, tensor<64x32xf8E4M3FN> -> tensor<16x32xbf16>
  return %y : tensor<16x32xbf16>
}

// -----

// With the fast accumulator (a forward GEMM under tx-insert-fp8's
// fast-accumulation=forward).
// CHECK-LABEL: func.func @fp8_matmul_fast_accumulation
// CHECK:         tx.fp8_matmul %{{.+}}, %{{.+}} scale_inv(%{{.+}}, %{{.+}}) {fast_accumulation} : tensor<16x64xf8E4M3FN>, tensor<64x32xf8E4M3FN> -> tensor<16x32xbf16>
func.func @fp8_matmul_fast_accumulation(%x: tensor<16x64xf8E4M3FN>, %w: tensor<64x32xf8E4M3FN>, %sx: tensor<f32>, %sw: tensor<f32>) -> tensor<16x32xbf16> {
  %y = tx.fp8_matmul %x, %w scale_inv(%sx, %sw) {fast_accumulation} : tensor<16x64xf8E4M3FN>, tensor<64x32xf8E4M3FN> -> tensor<16x32xbf16>
  return %y : tensor<16x32xbf16>
}

// -----

// A batched data-gradient GEMM: E5M2 gradient times E4M3 weight, the
// weight's batch dim broadcasts, f32 out.
// CHECK-LABEL: func.func @fp8_matmul_batched_e5m2
// CHECK:         tx.fp8_matmul %{{.+}}, %{{.+}} scale_inv(%{{.+}}, %{{.+}}) : tensor<2x8x32xf8E5M2>, tensor<1x32x64xf8E4M3FN> -> tensor<2x8x64xf32>
func.func @fp8_matmul_batched_e5m2(%dy: tensor<2x8x32xf8E5M2>, %w: tensor<1x32x64xf8E4M3FN>, %s: tensor<f32>) -> tensor<2x8x64xf32> {
  %dx = tx.fp8_matmul %dy, %w scale_inv(%s, %s) : tensor<2x8x32xf8E5M2>, tensor<1x32x64xf8E4M3FN> -> tensor<2x8x64xf32>
  return %dx : tensor<2x8x64xf32>
}

// -----

// The recipe is an ordinary attribute too (the insertion pass can read it
// from the module), and tx.cast accepts the FP8 types.
// CHECK-LABEL: module attributes {tx.fp8_recipe = #tx.fp8_recipe<current, format = e4m3>}
// CHECK:         tx.cast %{{.+}} : tensor<4xf32> to tensor<4xf8E4M3FN>
// CHECK:         tx.cast %{{.+}} : tensor<4xf8E4M3FN> to tensor<4xf8E5M2>
module attributes {tx.fp8_recipe = #tx.fp8_recipe<current, format = e4m3>} {
  func.func @casts(%x: tensor<4xf32>) -> tensor<4xf8E5M2> {
    %a = tx.cast %x : tensor<4xf32> to tensor<4xf8E4M3FN>
    %b = tx.cast %a : tensor<4xf8E4M3FN> to tensor<4xf8E5M2>
    return %b : tensor<4xf8E5M2>
  }
}
