// RUN: txopt-opt %s | txopt-opt | FileCheck %s
// RUN: txopt-opt %s --mlir-print-op-generic | txopt-opt | FileCheck %s

// Round trip of tx.fp8_attention and tx.fp8_attention_grad: the custom form
// and the generic form both parse back to the same custom form. Inferred
// result types (the output [B, H, Tq, Dv] in q's FP8 type, f32 lse
// [B, H, Tq], 0-d f32 amaxes; the gradients in grad's FP8 type with q's,
// k's and v's shapes) are pinned by the functions' return types.

// Grouped-query (4 query heads on 2), causal, Dv != D.
// CHECK-LABEL: func.func @forward_gqa_causal
// CHECK-SAME:    %[[Q:[^:]+]]: tensor<2x4x8x16xf8E4M3FN>, %[[K:[^:]+]]: tensor<2x2x8x16xf8E4M3FN>, %[[V:[^:]+]]: tensor<2x2x8x32xf8E4M3FN>, %[[A:[^:]+]]: tensor<f32>, %[[B:[^:]+]]: tensor<f32>
// CHECK:         %[[O:.+]], %[[L:.+]], %[[SA:.+]], %[[OA:.+]] = tx.fp8_attention %[[Q]], %[[K]], %[[V]] scale_inv(%[[A]], %[[B]], %[[A]], %[[B]]) fp8_scale(%[[B]], %[[A]]) scale(2.500000e-01) causal : tensor<2x4x8x16xf8E4M3FN>, tensor<2x2x8x16xf8E4M3FN>, tensor<2x2x8x32xf8E4M3FN>
// CHECK:         return %[[O]], %[[L]], %[[SA]], %[[OA]]
func.func @forward_gqa_causal(%q: tensor<2x4x8x16xf8E4M3FN>, %k: tensor<2x2x8x16xf8E4M3FN>,
    %v: tensor<2x2x8x32xf8E4M3FN>, %a: tensor<f32>, %b: tensor<f32>)
    -> (tensor<2x4x8x32xf8E4M3FN>, tensor<2x4x8xf32>, tensor<f32>, tensor<f32>) {
  %o, %lse, %sa, %oa = tx.fp8_attention %q, %k, %v scale_inv(%a, %b, %a, %b) fp8_scale(%b, %a)
      scale(0.25) causal
      : tensor<2x4x8x16xf8E4M3FN>, tensor<2x2x8x16xf8E4M3FN>, tensor<2x2x8x32xf8E4M3FN>
  return %o, %lse, %sa, %oa : tensor<2x4x8x32xf8E4M3FN>, tensor<2x4x8xf32>, tensor<f32>, tensor<f32>
}

// E5M2 operands, not causal.
// CHECK-LABEL: func.func @forward_e5m2
// CHECK:         tx.fp8_attention %{{.+}}, %{{.+}}, %{{.+}} scale_inv(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) fp8_scale(%{{.+}}, %{{.+}}) scale(1.250000e-01) : tensor<1x2x4x64xf8E5M2>
func.func @forward_e5m2(%q: tensor<1x2x4x64xf8E5M2>, %s: tensor<f32>) -> tensor<1x2x4x64xf8E5M2> {
  %o, %lse, %sa, %oa = tx.fp8_attention %q, %q, %q scale_inv(%s, %s, %s, %s) fp8_scale(%s, %s)
      scale(0.125) : tensor<1x2x4x64xf8E5M2>, tensor<1x2x4x64xf8E5M2>, tensor<1x2x4x64xf8E5M2>
  return %o : tensor<1x2x4x64xf8E5M2>
}

// The backward: E5M2 gradients of E4M3 operands, grouped-query heads.
// CHECK-LABEL: func.func @backward_gqa
// CHECK:         %[[DQ:.+]], %[[DK:.+]], %[[DV:.+]], %[[QA:.+]], %[[KA:.+]], %[[VA:.+]], %[[PA:.+]] = tx.fp8_attention_grad %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} scale_inv(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) fp8_scale(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) scale(2.500000e-01) causal : tensor<2x4x8x32xf8E5M2>, tensor<2x4x8x16xf8E4M3FN>, tensor<2x2x8x16xf8E4M3FN>, tensor<2x2x8x32xf8E4M3FN>, tensor<2x4x8x32xf8E4M3FN>, tensor<2x4x8xf32>
// CHECK:         return %[[DQ]], %[[DK]], %[[DV]], %[[QA]], %[[KA]], %[[VA]], %[[PA]]
func.func @backward_gqa(%do: tensor<2x4x8x32xf8E5M2>, %q: tensor<2x4x8x16xf8E4M3FN>,
    %k: tensor<2x2x8x16xf8E4M3FN>, %v: tensor<2x2x8x32xf8E4M3FN>,
    %o: tensor<2x4x8x32xf8E4M3FN>, %lse: tensor<2x4x8xf32>, %s: tensor<f32>)
    -> (tensor<2x4x8x16xf8E5M2>, tensor<2x2x8x16xf8E5M2>, tensor<2x2x8x32xf8E5M2>,
        tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) {
  %dq, %dk, %dv, %qa, %ka, %va, %pa = tx.fp8_attention_grad %do, %q, %k, %v, %o, %lse
      scale_inv(%s, %s, %s, %s, %s, %s, %s) fp8_scale(%s, %s, %s, %s, %s) scale(0.25) causal
      : tensor<2x4x8x32xf8E5M2>, tensor<2x4x8x16xf8E4M3FN>, tensor<2x2x8x16xf8E4M3FN>,
        tensor<2x2x8x32xf8E4M3FN>, tensor<2x4x8x32xf8E4M3FN>, tensor<2x4x8xf32>
  return %dq, %dk, %dv, %qa, %ka, %va, %pa : tensor<2x4x8x16xf8E5M2>, tensor<2x2x8x16xf8E5M2>,
      tensor<2x2x8x32xf8E5M2>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>
}
