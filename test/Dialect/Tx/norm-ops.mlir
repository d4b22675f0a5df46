// RUN: txopt-opt %s | txopt-opt | FileCheck %s
// RUN: txopt-opt %s --mlir-print-op-generic | txopt-opt | FileCheck %s

// Round trip of the fused norm ops: the custom form and the generic form both
// parse back to the same custom form. Inferred result types (f32 statistics
// with the innermost dim set to 1) are pinned by the functions' return types.

// bf16 activations with f32 master weights, beta present.
// CHECK-LABEL: func.func @layer_norm_bf16_f32_affine
// CHECK-SAME:    %[[X:[^:]+]]: tensor<2x32x128xbf16>, %[[G:[^:]+]]: tensor<128xf32>, %[[B:[^:]+]]: tensor<128xf32>
// CHECK:         %[[Y:.+]], %[[MEAN:.+]], %[[RSTD:.+]] = tx.layer_norm %[[X]], %[[G]], %[[B]] eps(9.765625E-4) : tensor<2x32x128xbf16>, tensor<128xf32>, tensor<128xf32>
// CHECK:         return %[[Y]], %[[MEAN]], %[[RSTD]]
func.func @layer_norm_bf16_f32_affine(%x: tensor<2x32x128xbf16>, %g: tensor<128xf32>, %b: tensor<128xf32>)
    -> (tensor<2x32x128xbf16>, tensor<2x32x1xf32>, tensor<2x32x1xf32>) {
  %y, %mean, %rstd = tx.layer_norm %x, %g, %b eps(9.765625e-04)
      : tensor<2x32x128xbf16>, tensor<128xf32>, tensor<128xf32>
  return %y, %mean, %rstd : tensor<2x32x128xbf16>, tensor<2x32x1xf32>, tensor<2x32x1xf32>
}

// Without beta (bias=False); a rank-1 input has 1-element statistics.
// CHECK-LABEL: func.func @layer_norm_no_beta
// CHECK-SAME:    %[[X:[^:]+]]: tensor<128xf32>, %[[G:[^:]+]]: tensor<128xf32>
// CHECK:         %[[Y:.+]], %{{.+}}, %{{.+}} = tx.layer_norm %[[X]], %[[G]] eps(0.000000e+00) : tensor<128xf32>, tensor<128xf32>
// CHECK:         return %[[Y]]
func.func @layer_norm_no_beta(%x: tensor<128xf32>, %g: tensor<128xf32>)
    -> (tensor<128xf32>, tensor<1xf32>) {
  %y, %mean, %rstd = tx.layer_norm %x, %g eps(0.0) : tensor<128xf32>, tensor<128xf32>
  return %y, %rstd : tensor<128xf32>, tensor<1xf32>
}

// CHECK-LABEL: func.func @rms_norm
// CHECK-SAME:    %[[X:[^:]+]]: tensor<2x32x128xf16>, %[[G:[^:]+]]: tensor<128xf16>
// CHECK:         %[[Y:.+]], %[[RSTD:.+]] = tx.rms_norm %[[X]], %[[G]] eps(9.99999997E-7) : tensor<2x32x128xf16>, tensor<128xf16>
// CHECK:         return %[[Y]], %[[RSTD]]
func.func @rms_norm(%x: tensor<2x32x128xf16>, %g: tensor<128xf16>)
    -> (tensor<2x32x128xf16>, tensor<2x32x1xf32>) {
  %y, %rstd = tx.rms_norm %x, %g eps(1.0e-06) : tensor<2x32x128xf16>, tensor<128xf16>
  return %y, %rstd : tensor<2x32x128xf16>, tensor<2x32x1xf32>
}

// Parameter gradients take gamma's type, the input gradient the input's.
// CHECK-LABEL: func.func @layer_norm_grad
// CHECK-SAME:    %[[DY:[^:]+]]: tensor<64x128xbf16>, %[[X:[^:]+]]: tensor<64x128xbf16>, %[[G:[^:]+]]: tensor<128xf32>, %[[MEAN:[^:]+]]: tensor<64x1xf32>, %[[RSTD:[^:]+]]: tensor<64x1xf32>
// CHECK:         %[[DX:.+]], %[[DG:.+]], %[[DB:.+]] = tx.layer_norm_grad %[[DY]], %[[X]], %[[G]], %[[MEAN]], %[[RSTD]] : tensor<64x128xbf16>, tensor<128xf32>, tensor<64x1xf32>
// CHECK:         return %[[DX]], %[[DG]], %[[DB]]
func.func @layer_norm_grad(%dy: tensor<64x128xbf16>, %x: tensor<64x128xbf16>, %g: tensor<128xf32>,
                           %mean: tensor<64x1xf32>, %rstd: tensor<64x1xf32>)
    -> (tensor<64x128xbf16>, tensor<128xf32>, tensor<128xf32>) {
  %dx, %dg, %db = tx.layer_norm_grad %dy, %x, %g, %mean, %rstd
      : tensor<64x128xbf16>, tensor<128xf32>, tensor<64x1xf32>
  return %dx, %dg, %db : tensor<64x128xbf16>, tensor<128xf32>, tensor<128xf32>
}

// CHECK-LABEL: func.func @rms_norm_grad
// CHECK-SAME:    %[[DY:[^:]+]]: tensor<2x32x128xbf16>, %[[X:[^:]+]]: tensor<2x32x128xbf16>, %[[G:[^:]+]]: tensor<128xbf16>, %[[RSTD:[^:]+]]: tensor<2x32x1xf32>
// CHECK:         %[[DX:.+]], %[[DG:.+]] = tx.rms_norm_grad %[[DY]], %[[X]], %[[G]], %[[RSTD]] : tensor<2x32x128xbf16>, tensor<128xbf16>, tensor<2x32x1xf32>
// CHECK:         return %[[DX]], %[[DG]]
func.func @rms_norm_grad(%dy: tensor<2x32x128xbf16>, %x: tensor<2x32x128xbf16>, %g: tensor<128xbf16>,
                         %rstd: tensor<2x32x1xf32>)
    -> (tensor<2x32x128xbf16>, tensor<128xbf16>) {
  %dx, %dg = tx.rms_norm_grad %dy, %x, %g, %rstd
      : tensor<2x32x128xbf16>, tensor<128xbf16>, tensor<2x32x1xf32>
  return %dx, %dg : tensor<2x32x128xbf16>, tensor<128xbf16>
}
