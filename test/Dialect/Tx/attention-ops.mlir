// RUN: txopt-opt %s | txopt-opt | FileCheck %s
// RUN: txopt-opt %s --mlir-print-op-generic | txopt-opt | FileCheck %s

// Round trip of tx.attention and tx.attention_grad: the custom form and the
// generic form both parse back to the same custom form. Inferred result types
// ([B, H, Tq, Dv] in q's type, f32 lse [B, H, Tq]) are pinned by the
// functions' return types.

// Grouped-query (8 query heads on 2 kv heads), causal, bf16, Dv != D.
// CHECK-LABEL: func.func @attention_gqa_causal
// CHECK-SAME:    %[[Q:[^:]+]]: tensor<2x8x16x64xbf16>, %[[K:[^:]+]]: tensor<2x2x16x64xbf16>, %[[V:[^:]+]]: tensor<2x2x16x32xbf16>
// CHECK:         %[[O:.+]], %[[L:.+]] = tx.attention %[[Q]], %[[K]], %[[V]] scale(1.250000e-01) causal : tensor<2x8x16x64xbf16>, tensor<2x2x16x64xbf16>, tensor<2x2x16x32xbf16>
// CHECK:         return %[[O]], %[[L]]
func.func @attention_gqa_causal(%q: tensor<2x8x16x64xbf16>, %k: tensor<2x2x16x64xbf16>, %v: tensor<2x2x16x32xbf16>)
    -> (tensor<2x8x16x32xbf16>, tensor<2x8x16xf32>) {
  %o, %lse = tx.attention %q, %k, %v scale(0.125) causal
      : tensor<2x8x16x64xbf16>, tensor<2x2x16x64xbf16>, tensor<2x2x16x32xbf16>
  return %o, %lse : tensor<2x8x16x32xbf16>, tensor<2x8x16xf32>
}

// A sliding window, f32.
// CHECK-LABEL: func.func @attention_window
// CHECK:         tx.attention %{{.+}}, %{{.+}}, %{{.+}} scale(2.500000e-01) causal window(4) : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>
func.func @attention_window(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>)
    -> tensor<1x2x8x16xf32> {
  %o, %lse = tx.attention %q, %k, %v scale(0.25) causal window(4)
      : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// A padding mask [B, 1, 1, Tk] in f32 next to f16 activations, Tq != Tk,
// no causality.
// CHECK-LABEL: func.func @attention_mask
// CHECK-SAME:    %[[M:[^:]+]]: tensor<2x1x1x12xf32>
// CHECK:         tx.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%[[M]]) scale(1.000000e+00) : tensor<2x4x6x8xf16>, tensor<2x4x12x8xf16>, tensor<2x4x12x8xf16>, tensor<2x1x1x12xf32>
func.func @attention_mask(%q: tensor<2x4x6x8xf16>, %k: tensor<2x4x12x8xf16>, %v: tensor<2x4x12x8xf16>, %m: tensor<2x1x1x12xf32>)
    -> (tensor<2x4x6x8xf16>, tensor<2x4x6xf32>) {
  %o, %lse = tx.attention %q, %k, %v mask(%m) scale(1.0)
      : tensor<2x4x6x8xf16>, tensor<2x4x12x8xf16>, tensor<2x4x12x8xf16>, tensor<2x1x1x12xf32>
  return %o, %lse : tensor<2x4x6x8xf16>, tensor<2x4x6xf32>
}

// The gradient, with and without a mask.
// CHECK-LABEL: func.func @attention_grad
// CHECK:         %{{.+}}, %{{.+}}, %{{.+}} = tx.attention_grad %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} scale(1.250000e-01) causal window(3) : tensor<2x8x16x32xbf16>, tensor<2x8x16x64xbf16>, tensor<2x2x16x64xbf16>, tensor<2x2x16x32xbf16>, tensor<2x8x16xf32>
// CHECK:         %{{.+}}, %{{.+}}, %{{.+}} = tx.attention_grad %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, mask(%{{.+}}), %{{.+}}, %{{.+}} scale(1.250000e-01) : tensor<2x8x16x32xbf16>, tensor<2x8x16x64xbf16>, tensor<2x2x16x64xbf16>, tensor<2x2x16x32xbf16>, tensor<2x8x16xf32>, tensor<16x16xbf16>
func.func @attention_grad(%do: tensor<2x8x16x32xbf16>, %q: tensor<2x8x16x64xbf16>, %k: tensor<2x2x16x64xbf16>,
                          %v: tensor<2x2x16x32xbf16>, %o: tensor<2x8x16x32xbf16>, %lse: tensor<2x8x16xf32>,
                          %m: tensor<16x16xbf16>)
    -> (tensor<2x8x16x64xbf16>, tensor<2x2x16x64xbf16>, tensor<2x2x16x32xbf16>, tensor<2x8x16x64xbf16>) {
  %dq, %dk, %dv = tx.attention_grad %do, %q, %k, %v, %o, %lse scale(0.125) causal window(3)
      : tensor<2x8x16x32xbf16>, tensor<2x8x16x64xbf16>, tensor<2x2x16x64xbf16>, tensor<2x2x16x32xbf16>, tensor<2x8x16xf32>
  %dq2, %dk2, %dv2 = tx.attention_grad %do, %q, %k, %v, mask(%m), %o, %lse scale(0.125)
      : tensor<2x8x16x32xbf16>, tensor<2x8x16x64xbf16>, tensor<2x2x16x64xbf16>, tensor<2x2x16x32xbf16>, tensor<2x8x16xf32>, tensor<16x16xbf16>
  return %dq, %dk, %dv, %dq2 : tensor<2x8x16x64xbf16>, tensor<2x2x16x64xbf16>, tensor<2x2x16x32xbf16>, tensor<2x8x16x64xbf16>
}

// A dropout of the probabilities (key, ratio, seed), forward and gradient.
// CHECK-LABEL: func.func @attention_dropout
// CHECK-SAME:    %[[KEY:[^:]+]]: tensor<i64>
// CHECK:         %[[O:.+]], %[[L:.+]] = tx.attention %{{.+}}, %{{.+}}, %{{.+}} scale(1.250000e-01) causal dropout(%[[KEY]], 1.000000e-01, 7) : tensor<2x4x16x8xbf16>, tensor<2x4x16x8xbf16>, tensor<2x4x16x8xbf16>
// CHECK:         tx.attention_grad %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[O]], %[[L]] scale(1.250000e-01) causal dropout(%[[KEY]], 1.000000e-01, 7) :
func.func @attention_dropout(%q: tensor<2x4x16x8xbf16>, %k: tensor<2x4x16x8xbf16>, %v: tensor<2x4x16x8xbf16>,
                             %key: tensor<i64>, %do: tensor<2x4x16x8xbf16>) -> tensor<2x4x16x8xbf16> {
  %o, %lse = tx.attention %q, %k, %v scale(0.125) causal dropout(%key, 0.1, 7)
      : tensor<2x4x16x8xbf16>, tensor<2x4x16x8xbf16>, tensor<2x4x16x8xbf16>
  %dq, %dk, %dv = tx.attention_grad %do, %q, %k, %v, %o, %lse scale(0.125) causal dropout(%key, 0.1, 7)
      : tensor<2x4x16x8xbf16>, tensor<2x4x16x8xbf16>, tensor<2x4x16x8xbf16>, tensor<2x4x16x8xbf16>, tensor<2x4x16xf32>
  return %dq : tensor<2x4x16x8xbf16>
}

