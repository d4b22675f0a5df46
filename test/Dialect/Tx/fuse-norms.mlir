// RUN: txopt-opt %s --split-input-file --tx-fuse-norms | FileCheck %s
// RUN: txopt-opt %s --split-input-file --tx-fuse-norms=explain=true 2>&1 >/dev/null \
// RUN:   | FileCheck %s --check-prefix=EXPLAIN --implicit-check-not=remark

// The EXPLAIN lines check the near-miss remark that explain=true adds at the
// anchor (the line after them) of every candidate that was not fused; fused
// chains and non-candidates stay silent (--implicit-check-not).

//===----------------------------------------------------------------------===//
// ONNX norm ops
//===----------------------------------------------------------------------===//

// ONNX LayerNormalization over the last axis.
// CHECK-LABEL: func.func @layer_normalization_last_axis
// CHECK-SAME:    %[[X:[^:]+]]: tensor<2x4x8xf32>, %[[G:[^:]+]]: tensor<8xf32>, %[[B:[^:]+]]: tensor<8xf32>
// CHECK:         %[[Y:.+]], %{{.+}}, %{{.+}} = tx.layer_norm %[[X]], %[[G]], %[[B]] eps(9.99999974E-6)
// CHECK-NOT:     tx.layer_normalization
// CHECK:         return %[[Y]]
func.func @layer_normalization_last_axis(%x: tensor<2x4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<2x4x8xf32> {
  %y = tx.layer_normalization %x, %g, %b axis(-1) eps(1.0e-05) : tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>
  return %y : tensor<2x4x8xf32>
}

// -----

// A positive axis naming the last dim, without bias.
// CHECK-LABEL: func.func @layer_normalization_positive_axis_no_bias
// CHECK-SAME:    %[[X:[^:]+]]: tensor<4x8xbf16>, %[[G:[^:]+]]: tensor<8xbf16>
// CHECK:         %[[Y:.+]], %{{.+}}, %{{.+}} = tx.layer_norm %[[X]], %[[G]] eps(9.765625E-4) : tensor<4x8xbf16>, tensor<8xbf16>
// CHECK:         return %[[Y]]
func.func @layer_normalization_positive_axis_no_bias(%x: tensor<4x8xbf16>, %g: tensor<8xbf16>) -> tensor<4x8xbf16> {
  %y = tx.layer_normalization %x, %g axis(1) eps(9.765625e-04) : tensor<4x8xbf16>, tensor<8xbf16>
  return %y : tensor<4x8xbf16>
}

// -----

// The axis covers [1, 8]: only the last dim has more than one element, so it
// is an innermost-dim norm; the [1, 8] scale and bias are reshaped to [8].
// CHECK-LABEL: func.func @layer_normalization_axis_covering_only_last_dim
// CHECK-SAME:    %[[X:[^:]+]]: tensor<2x4x1x8xf32>, %[[G:[^:]+]]: tensor<1x8xf32>, %[[B:[^:]+]]: tensor<1x8xf32>
// CHECK-DAG:     %[[G8:.+]] = tx.reshape %[[G]] : tensor<1x8xf32> -> tensor<8xf32>
// CHECK-DAG:     %[[B8:.+]] = tx.reshape %[[B]] : tensor<1x8xf32> -> tensor<8xf32>
// CHECK:         %[[Y:.+]], %{{.+}}, %{{.+}} = tx.layer_norm %[[X]], %[[G8]], %[[B8]]
// CHECK:         return %[[Y]]
func.func @layer_normalization_axis_covering_only_last_dim(%x: tensor<2x4x1x8xf32>, %g: tensor<1x8xf32>, %b: tensor<1x8xf32>) -> tensor<2x4x1x8xf32> {
  %y = tx.layer_normalization %x, %g, %b axis(-2) eps(1.0e-05) : tensor<2x4x1x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>
  return %y : tensor<2x4x1x8xf32>
}

// -----

// Normalizing the last two dims is not an innermost-dim norm: no fusion.
// CHECK-LABEL: func.func @layer_normalization_no_fuse_two_dims
// CHECK:         tx.layer_normalization
// CHECK-NOT:     tx.layer_norm
func.func @layer_normalization_no_fuse_two_dims(%x: tensor<2x4x8xf32>, %g: tensor<4x8xf32>) -> tensor<2x4x8xf32> {
  // EXPLAIN: fuse-norms.mlir:[[@LINE+1]]:{{[0-9]+}}: remark: not fused: layer_norm: expected normalization over the innermost dim only, but axis 1 normalizes dims [4, 8]
  %y = tx.layer_normalization %x, %g axis(1) eps(1.0e-05) : tensor<2x4x8xf32>, tensor<4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// -----

// ONNX RMSNormalization / com.microsoft SimplifiedLayerNormalization.
// CHECK-LABEL: func.func @rms_normalization_last_axis
// CHECK-SAME:    %[[X:[^:]+]]: tensor<2x4x8xbf16>, %[[G:[^:]+]]: tensor<8xbf16>
// CHECK:         %[[Y:.+]], %{{.+}} = tx.rms_norm %[[X]], %[[G]] eps(9.99999997E-7) : tensor<2x4x8xbf16>, tensor<8xbf16>
// CHECK-NOT:     tx.rms_normalization
// CHECK:         return %[[Y]]
func.func @rms_normalization_last_axis(%x: tensor<2x4x8xbf16>, %g: tensor<8xbf16>) -> tensor<2x4x8xbf16> {
  %y = tx.rms_normalization %x, %g axis(-1) eps(1.0e-06) : tensor<2x4x8xbf16>, tensor<8xbf16>
  return %y : tensor<2x4x8xbf16>
}

// -----

// f64 has no fused form (statistics are f32).
// CHECK-LABEL: func.func @rms_normalization_no_fuse_f64
// CHECK:         tx.rms_normalization
// CHECK-NOT:     tx.rms_norm
func.func @rms_normalization_no_fuse_f64(%x: tensor<4x8xf64>, %g: tensor<8xf64>) -> tensor<4x8xf64> {
  // EXPLAIN: fuse-norms.mlir:[[@LINE+1]]:{{[0-9]+}}: remark: not fused: rms_norm: expected an f16, bf16 or f32 input, but got f64
  %y = tx.rms_normalization %x, %g axis(-1) eps(1.0e-06) : tensor<4x8xf64>, tensor<8xf64>
  return %y : tensor<4x8xf64>
}

//===----------------------------------------------------------------------===//
// Decomposed LayerNorm (TorchScript exporter, opset <= 16)
//===----------------------------------------------------------------------===//

// -----

// Exactly what torch.onnx (TorchScript, opset 14) writes for nn.LayerNorm,
// with the weights read from parameters.
tx.parameter @"ln.weight" = dense<1.0> : tensor<8xf32>
tx.parameter @"ln.bias" = dense<0.0> : tensor<8xf32>

// CHECK-LABEL: func.func @layer_norm_torchscript
// CHECK-SAME:    %[[X:[^:]+]]: tensor<2x4x8xf32>
// CHECK-DAG:     %[[G:.+]] = tx.load_parameter @ln.weight
// CHECK-DAG:     %[[B:.+]] = tx.load_parameter @ln.bias
// CHECK:         %[[Y:.+]], %{{.+}}, %{{.+}} = tx.layer_norm %[[X]], %[[G]], %[[B]] eps(9.99999974E-6) : tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>
// CHECK-NOT:     tx.reduce_mean
// CHECK-NOT:     tx.sqrt
// CHECK-NOT:     tx.div
// CHECK:         return %[[Y]]
func.func @layer_norm_torchscript(%x: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %g = tx.load_parameter @"ln.weight" : tensor<8xf32>
  %b = tx.load_parameter @"ln.bias" : tensor<8xf32>
  %mean = tx.reduce_mean %x axes [-1] keep_dims : tensor<2x4x8xf32>
  %d = tx.sub %x, %mean : tensor<2x4x8xf32>, tensor<2x4x1xf32>
  %two = tx.constant dense<2.0> : tensor<f32>
  %sq = tx.pow %d, %two : tensor<2x4x8xf32>, tensor<f32>
  %var = tx.reduce_mean %sq axes [-1] keep_dims : tensor<2x4x8xf32>
  %eps = tx.constant dense<1.0e-05> : tensor<f32>
  %ve = tx.add %var, %eps : tensor<2x4x1xf32>, tensor<f32>
  %std = tx.sqrt %ve : tensor<2x4x1xf32>
  %n = tx.div %d, %std : tensor<2x4x8xf32>, tensor<2x4x1xf32>
  %s = tx.mul %n, %g : tensor<2x4x8xf32>, tensor<8xf32>
  %y = tx.add %s, %b : tensor<2x4x8xf32>, tensor<8xf32>
  return %y : tensor<2x4x8xf32>
}

// -----

// Algebraic variant: d * d for the square, reciprocal(sqrt) times d, a [1]
// eps, and gamma / beta on the left of the commutative ops.
// CHECK-LABEL: func.func @layer_norm_mul_square_reciprocal_swapped
// CHECK-SAME:    %[[X:[^:]+]]: tensor<4x8xf32>, %[[G:[^:]+]]: tensor<8xf32>, %[[B:[^:]+]]: tensor<8xf32>
// CHECK:         %[[Y:.+]], %{{.+}}, %{{.+}} = tx.layer_norm %[[X]], %[[G]], %[[B]] eps(9.765625E-4)
// CHECK-NOT:     tx.reciprocal
// CHECK:         return %[[Y]]
func.func @layer_norm_mul_square_reciprocal_swapped(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %mean = tx.reduce_mean %x axes [1] keep_dims : tensor<4x8xf32>
  %d = tx.sub %x, %mean : tensor<4x8xf32>, tensor<4x1xf32>
  %sq = tx.mul %d, %d : tensor<4x8xf32>, tensor<4x8xf32>
  %var = tx.reduce_mean %sq axes [-1] keep_dims : tensor<4x8xf32>
  %eps = tx.constant dense<9.765625e-04> : tensor<1xf32>
  %ve = tx.add %eps, %var : tensor<1xf32>, tensor<4x1xf32>
  %std = tx.sqrt %ve : tensor<4x1xf32>
  %r = tx.reciprocal %std : tensor<4x1xf32>
  %n = tx.mul %r, %d : tensor<4x1xf32>, tensor<4x8xf32>
  %s = tx.mul %g, %n : tensor<8xf32>, tensor<4x8xf32>
  %y = tx.add %b, %s : tensor<8xf32>, tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// rsqrt written as Pow(var + eps, -0.5); gamma only (bias=False).
// CHECK-LABEL: func.func @layer_norm_pow_rsqrt_gamma_only
// CHECK-SAME:    %[[X:[^:]+]]: tensor<4x8xf32>, %[[G:[^:]+]]: tensor<8xf32>
// CHECK:         %[[Y:.+]], %{{.+}}, %{{.+}} = tx.layer_norm %[[X]], %[[G]] eps(9.765625E-4) : tensor<4x8xf32>, tensor<8xf32>
// CHECK-NOT:     tx.pow
// CHECK:         return %[[Y]]
func.func @layer_norm_pow_rsqrt_gamma_only(%x: tensor<4x8xf32>, %g: tensor<8xf32>) -> tensor<4x8xf32> {
  %mean = tx.reduce_mean %x axes [-1] keep_dims : tensor<4x8xf32>
  %d = tx.sub %x, %mean : tensor<4x8xf32>, tensor<4x1xf32>
  %two = tx.constant dense<2.0> : tensor<f32>
  %sq = tx.pow %d, %two : tensor<4x8xf32>, tensor<f32>
  %var = tx.reduce_mean %sq axes [-1] keep_dims : tensor<4x8xf32>
  %eps = tx.constant dense<9.765625e-04> : tensor<f32>
  %ve = tx.add %var, %eps : tensor<4x1xf32>, tensor<f32>
  %mhalf = tx.constant dense<-0.5> : tensor<f32>
  %r = tx.pow %ve, %mhalf : tensor<4x1xf32>, tensor<f32>
  %n = tx.mul %d, %r : tensor<4x8xf32>, tensor<4x1xf32>
  %y = tx.mul %n, %g : tensor<4x8xf32>, tensor<8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// No affine step at all (elementwise_affine=False): gamma becomes ones.
// CHECK-LABEL: func.func @layer_norm_no_affine
// CHECK-SAME:    %[[X:[^:]+]]: tensor<4x8xf32>
// CHECK:         %[[ONES:.+]] = tx.constant dense<1.000000e+00> : tensor<8xf32>
// CHECK:         %[[Y:.+]], %{{.+}}, %{{.+}} = tx.layer_norm %[[X]], %[[ONES]] eps(9.765625E-4) : tensor<4x8xf32>, tensor<8xf32>
// CHECK:         return %[[Y]]
func.func @layer_norm_no_affine(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %mean = tx.reduce_mean %x axes [-1] keep_dims : tensor<4x8xf32>
  %d = tx.sub %x, %mean : tensor<4x8xf32>, tensor<4x1xf32>
  %two = tx.constant dense<2.0> : tensor<f32>
  %sq = tx.pow %d, %two : tensor<4x8xf32>, tensor<f32>
  %var = tx.reduce_mean %sq axes [-1] keep_dims : tensor<4x8xf32>
  %eps = tx.constant dense<9.765625e-04> : tensor<f32>
  %ve = tx.add %var, %eps : tensor<4x1xf32>, tensor<f32>
  %std = tx.sqrt %ve : tensor<4x1xf32>
  %n = tx.div %d, %std : tensor<4x8xf32>, tensor<4x1xf32>
  return %n : tensor<4x8xf32>
}

// -----

// bf16 model under autocast: Cast to f32 first, affine in f32, Cast back at
// the end. The fused op reads bf16, keeps f32 weights and rounds once.
// CHECK-LABEL: func.func @layer_norm_casts_around
// CHECK-SAME:    %[[X:[^:]+]]: tensor<4x8xbf16>, %[[G:[^:]+]]: tensor<8xf32>, %[[B:[^:]+]]: tensor<8xf32>
// CHECK:         %[[Y:.+]], %{{.+}}, %{{.+}} = tx.layer_norm %[[X]], %[[G]], %[[B]] eps(9.765625E-4) : tensor<4x8xbf16>, tensor<8xf32>, tensor<8xf32>
// CHECK-NOT:     tx.cast
// CHECK:         return %[[Y]]
func.func @layer_norm_casts_around(%x: tensor<4x8xbf16>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<4x8xbf16> {
  %xf = tx.cast %x : tensor<4x8xbf16> to tensor<4x8xf32>
  %mean = tx.reduce_mean %xf axes [-1] keep_dims : tensor<4x8xf32>
  %d = tx.sub %xf, %mean : tensor<4x8xf32>, tensor<4x1xf32>
  %two = tx.constant dense<2.0> : tensor<f32>
  %sq = tx.pow %d, %two : tensor<4x8xf32>, tensor<f32>
  %var = tx.reduce_mean %sq axes [-1] keep_dims : tensor<4x8xf32>
  %eps = tx.constant dense<9.765625e-04> : tensor<f32>
  %ve = tx.add %var, %eps : tensor<4x1xf32>, tensor<f32>
  %std = tx.sqrt %ve : tensor<4x1xf32>
  %n = tx.div %d, %std : tensor<4x8xf32>, tensor<4x1xf32>
  %s = tx.mul %n, %g : tensor<4x8xf32>, tensor<8xf32>
  %yf = tx.add %s, %b : tensor<4x8xf32>, tensor<8xf32>
  %y = tx.cast %yf : tensor<4x8xf32> to tensor<4x8xbf16>
  return %y : tensor<4x8xbf16>
}

// -----

// A Cast to f32 in front but none back (the model keeps f32 activations
// after the norm): the Cast stays and the norm fuses on its f32 result.
// CHECK-LABEL: func.func @layer_norm_cast_in_only
// CHECK-SAME:    %[[X:[^:]+]]: tensor<4x8xf16>, %[[G:[^:]+]]: tensor<8xf32>, %[[B:[^:]+]]: tensor<8xf32>
// CHECK:         %[[XF:.+]] = tx.cast %[[X]] : tensor<4x8xf16> to tensor<4x8xf32>
// CHECK:         %[[Y:.+]], %{{.+}}, %{{.+}} = tx.layer_norm %[[XF]], %[[G]], %[[B]] eps(9.765625E-4) : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>
// CHECK:         return %[[Y]]
func.func @layer_norm_cast_in_only(%x: tensor<4x8xf16>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %xf = tx.cast %x : tensor<4x8xf16> to tensor<4x8xf32>
  %mean = tx.reduce_mean %xf axes [-1] keep_dims : tensor<4x8xf32>
  %d = tx.sub %xf, %mean : tensor<4x8xf32>, tensor<4x1xf32>
  %sq = tx.mul %d, %d : tensor<4x8xf32>, tensor<4x8xf32>
  %var = tx.reduce_mean %sq axes [-1] keep_dims : tensor<4x8xf32>
  %eps = tx.constant dense<9.765625e-04> : tensor<f32>
  %ve = tx.add %var, %eps : tensor<4x1xf32>, tensor<f32>
  %std = tx.sqrt %ve : tensor<4x1xf32>
  %one = tx.constant dense<1.0> : tensor<f32>
  %r = tx.div %one, %std : tensor<f32>, tensor<4x1xf32>
  %n = tx.mul %d, %r : tensor<4x8xf32>, tensor<4x1xf32>
  %s = tx.mul %n, %g : tensor<4x8xf32>, tensor<8xf32>
  %y = tx.add %s, %b : tensor<4x8xf32>, tensor<8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// The input feeds other ops too (a residual): only intermediates must not
// escape. Two LayerNorms in sequence both fuse.
// CHECK-LABEL: func.func @layer_norm_twice_with_residual
// CHECK-SAME:    %[[X:[^:]+]]: tensor<4x8xf32>, %[[G:[^:]+]]: tensor<8xf32>, %[[B:[^:]+]]: tensor<8xf32>
// CHECK:         %[[Y1:.+]], %{{.+}}, %{{.+}} = tx.layer_norm %[[X]], %[[G]], %[[B]]
// CHECK:         %[[H:.+]] = tx.add %[[X]], %[[Y1]]
// CHECK:         %[[Y2:.+]], %{{.+}}, %{{.+}} = tx.layer_norm %[[H]], %[[G]], %[[B]]
// CHECK:         return %[[Y2]]
func.func @layer_norm_twice_with_residual(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %two = tx.constant dense<2.0> : tensor<f32>
  %eps = tx.constant dense<1.0e-05> : tensor<f32>
  %mean = tx.reduce_mean %x axes [-1] keep_dims : tensor<4x8xf32>
  %d = tx.sub %x, %mean : tensor<4x8xf32>, tensor<4x1xf32>
  %sq = tx.pow %d, %two : tensor<4x8xf32>, tensor<f32>
  %var = tx.reduce_mean %sq axes [-1] keep_dims : tensor<4x8xf32>
  %ve = tx.add %var, %eps : tensor<4x1xf32>, tensor<f32>
  %std = tx.sqrt %ve : tensor<4x1xf32>
  %n = tx.div %d, %std : tensor<4x8xf32>, tensor<4x1xf32>
  %s = tx.mul %n, %g : tensor<4x8xf32>, tensor<8xf32>
  %y1 = tx.add %s, %b : tensor<4x8xf32>, tensor<8xf32>
  %h = tx.add %x, %y1 : tensor<4x8xf32>, tensor<4x8xf32>
  %mean2 = tx.reduce_mean %h axes [-1] keep_dims : tensor<4x8xf32>
  %d2 = tx.sub %h, %mean2 : tensor<4x8xf32>, tensor<4x1xf32>
  %sq2 = tx.pow %d2, %two : tensor<4x8xf32>, tensor<f32>
  %var2 = tx.reduce_mean %sq2 axes [-1] keep_dims : tensor<4x8xf32>
  %ve2 = tx.add %var2, %eps : tensor<4x1xf32>, tensor<f32>
  %std2 = tx.sqrt %ve2 : tensor<4x1xf32>
  %n2 = tx.div %d2, %std2 : tensor<4x8xf32>, tensor<4x1xf32>
  %s2 = tx.mul %n2, %g : tensor<4x8xf32>, tensor<8xf32>
  %y2 = tx.add %s2, %b : tensor<4x8xf32>, tensor<8xf32>
  return %y2 : tensor<4x8xf32>
}

// -----

// The mean is also returned: fusing would compute it twice, so no fusion.
// CHECK-LABEL: func.func @layer_norm_no_fuse_mean_escapes
// CHECK-NOT:     tx.layer_norm
// CHECK:         tx.div
func.func @layer_norm_no_fuse_mean_escapes(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>) {
  // EXPLAIN: fuse-norms.mlir:[[@LINE+1]]:{{[0-9]+}}: remark: not fused: layer_norm: intermediate 'tx.reduce_mean' has a user outside the chain ('func.return')
  %mean = tx.reduce_mean %x axes [-1] keep_dims : tensor<4x8xf32>
  %d = tx.sub %x, %mean : tensor<4x8xf32>, tensor<4x1xf32>
  %two = tx.constant dense<2.0> : tensor<f32>
  %sq = tx.pow %d, %two : tensor<4x8xf32>, tensor<f32>
  %var = tx.reduce_mean %sq axes [-1] keep_dims : tensor<4x8xf32>
  %eps = tx.constant dense<1.0e-05> : tensor<f32>
  %ve = tx.add %var, %eps : tensor<4x1xf32>, tensor<f32>
  %std = tx.sqrt %ve : tensor<4x1xf32>
  %n = tx.div %d, %std : tensor<4x8xf32>, tensor<4x1xf32>
  %s = tx.mul %n, %g : tensor<4x8xf32>, tensor<8xf32>
  %y = tx.add %s, %b : tensor<4x8xf32>, tensor<8xf32>
  return %y, %mean : tensor<4x8xf32>, tensor<4x1xf32>
}

// -----

// Statistics over axis 1 of [2, 4, 8] (not the innermost): no fusion.
// CHECK-LABEL: func.func @layer_norm_no_fuse_not_innermost
// CHECK-NOT:     tx.layer_norm
// CHECK:         tx.div
func.func @layer_norm_no_fuse_not_innermost(%x: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  // EXPLAIN: fuse-norms.mlir:[[@LINE+1]]:{{[0-9]+}}: remark: not fused: layer_norm: expected reduce_mean over the innermost axis 2 only, but got axes [1]
  %mean = tx.reduce_mean %x axes [1] keep_dims : tensor<2x4x8xf32>
  %d = tx.sub %x, %mean : tensor<2x4x8xf32>, tensor<2x1x8xf32>
  %two = tx.constant dense<2.0> : tensor<f32>
  %sq = tx.pow %d, %two : tensor<2x4x8xf32>, tensor<f32>
  %var = tx.reduce_mean %sq axes [1] keep_dims : tensor<2x4x8xf32>
  %eps = tx.constant dense<1.0e-05> : tensor<f32>
  %ve = tx.add %var, %eps : tensor<2x1x8xf32>, tensor<f32>
  %std = tx.sqrt %ve : tensor<2x1x8xf32>
  %n = tx.div %d, %std : tensor<2x4x8xf32>, tensor<2x1x8xf32>
  return %n : tensor<2x4x8xf32>
}

// -----

// eps is a function argument, not a constant: no fusion (the op needs an
// attribute).
// CHECK-LABEL: func.func @layer_norm_no_fuse_eps_argument
// CHECK-NOT:     tx.layer_norm
// CHECK:         tx.div
func.func @layer_norm_no_fuse_eps_argument(%x: tensor<4x8xf32>, %eps: tensor<f32>) -> tensor<4x8xf32> {
  // EXPLAIN: fuse-norms.mlir:[[@LINE+1]]:{{[0-9]+}}: remark: not fused: layer_norm: expected a constant scalar eps, but got block argument #1
  %mean = tx.reduce_mean %x axes [-1] keep_dims : tensor<4x8xf32>
  %d = tx.sub %x, %mean : tensor<4x8xf32>, tensor<4x1xf32>
  %two = tx.constant dense<2.0> : tensor<f32>
  %sq = tx.pow %d, %two : tensor<4x8xf32>, tensor<f32>
  %var = tx.reduce_mean %sq axes [-1] keep_dims : tensor<4x8xf32>
  %ve = tx.add %var, %eps : tensor<4x1xf32>, tensor<f32>
  %std = tx.sqrt %ve : tensor<4x1xf32>
  %n = tx.div %d, %std : tensor<4x8xf32>, tensor<4x1xf32>
  return %n : tensor<4x8xf32>
}

// -----

// gamma is [4, 8] (a weight per row): the fused op only takes [D].
// CHECK-LABEL: func.func @layer_norm_no_fuse_gamma_not_vector
// CHECK-NOT:     tx.layer_norm
// CHECK:         tx.div
func.func @layer_norm_no_fuse_gamma_not_vector(%x: tensor<2x4x8xf32>, %g: tensor<4x8xf32>) -> tensor<2x4x8xf32> {
  // EXPLAIN: fuse-norms.mlir:[[@LINE+1]]:{{[0-9]+}}: remark: not fused: layer_norm: expected gamma shape [8], but got [4, 8]
  %mean = tx.reduce_mean %x axes [-1] keep_dims : tensor<2x4x8xf32>
  %d = tx.sub %x, %mean : tensor<2x4x8xf32>, tensor<2x4x1xf32>
  %two = tx.constant dense<2.0> : tensor<f32>
  %sq = tx.pow %d, %two : tensor<2x4x8xf32>, tensor<f32>
  %var = tx.reduce_mean %sq axes [-1] keep_dims : tensor<2x4x8xf32>
  %eps = tx.constant dense<1.0e-05> : tensor<f32>
  %ve = tx.add %var, %eps : tensor<2x4x1xf32>, tensor<f32>
  %std = tx.sqrt %ve : tensor<2x4x1xf32>
  %n = tx.div %d, %std : tensor<2x4x8xf32>, tensor<2x4x1xf32>
  %y = tx.mul %n, %g : tensor<2x4x8xf32>, tensor<4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// -----

// beta broadcasts over the batch ([2, 1, 8]): no fusion.
// CHECK-LABEL: func.func @layer_norm_no_fuse_beta_broadcast_over_batch
// CHECK-NOT:     tx.layer_norm
// CHECK:         tx.div
func.func @layer_norm_no_fuse_beta_broadcast_over_batch(%x: tensor<2x4x8xf32>, %g: tensor<8xf32>, %b: tensor<2x1x8xf32>) -> tensor<2x4x8xf32> {
  // EXPLAIN: fuse-norms.mlir:[[@LINE+1]]:{{[0-9]+}}: remark: not fused: layer_norm: expected beta shape [8], but got [2, 1, 8]
  %mean = tx.reduce_mean %x axes [-1] keep_dims : tensor<2x4x8xf32>
  %d = tx.sub %x, %mean : tensor<2x4x8xf32>, tensor<2x4x1xf32>
  %two = tx.constant dense<2.0> : tensor<f32>
  %sq = tx.pow %d, %two : tensor<2x4x8xf32>, tensor<f32>
  %var = tx.reduce_mean %sq axes [-1] keep_dims : tensor<2x4x8xf32>
  %eps = tx.constant dense<1.0e-05> : tensor<f32>
  %ve = tx.add %var, %eps : tensor<2x4x1xf32>, tensor<f32>
  %std = tx.sqrt %ve : tensor<2x4x1xf32>
  %n = tx.div %d, %std : tensor<2x4x8xf32>, tensor<2x4x1xf32>
  %s = tx.mul %n, %g : tensor<2x4x8xf32>, tensor<8xf32>
  %y = tx.add %s, %b : tensor<2x4x8xf32>, tensor<2x1x8xf32>
  return %y : tensor<2x4x8xf32>
}

// -----

// The "variance" is a mean of cubes: not a LayerNorm.
// CHECK-LABEL: func.func @layer_norm_no_fuse_pow_three
// CHECK-NOT:     tx.layer_norm
// CHECK:         tx.div
func.func @layer_norm_no_fuse_pow_three(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // EXPLAIN: fuse-norms.mlir:[[@LINE+1]]:{{[0-9]+}}: remark: not fused: layer_norm: expected exponent 2 in the square, but got 3
  %mean = tx.reduce_mean %x axes [-1] keep_dims : tensor<4x8xf32>
  %d = tx.sub %x, %mean : tensor<4x8xf32>, tensor<4x1xf32>
  %three = tx.constant dense<3.0> : tensor<f32>
  %sq = tx.pow %d, %three : tensor<4x8xf32>, tensor<f32>
  %var = tx.reduce_mean %sq axes [-1] keep_dims : tensor<4x8xf32>
  %eps = tx.constant dense<1.0e-05> : tensor<f32>
  %ve = tx.add %var, %eps : tensor<4x1xf32>, tensor<f32>
  %std = tx.sqrt %ve : tensor<4x1xf32>
  %n = tx.div %d, %std : tensor<4x8xf32>, tensor<4x1xf32>
  return %n : tensor<4x8xf32>
}

// -----

// The mean of %x is subtracted from %z: not a LayerNorm of either.
// CHECK-LABEL: func.func @layer_norm_no_fuse_sub_of_other_value
// CHECK-NOT:     tx.layer_norm
// CHECK-NOT:     tx.rms_norm
// CHECK:         tx.div
func.func @layer_norm_no_fuse_sub_of_other_value(%x: tensor<4x8xf32>, %z: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // EXPLAIN: fuse-norms.mlir:[[@LINE+1]]:{{[0-9]+}}: remark: not fused: layer_norm: expected the centered value to be the reduce_mean input minus its mean, but 'tx.sub' subtracts the mean from another value
  %mean = tx.reduce_mean %x axes [-1] keep_dims : tensor<4x8xf32>
  %d = tx.sub %z, %mean : tensor<4x8xf32>, tensor<4x1xf32>
  %two = tx.constant dense<2.0> : tensor<f32>
  %sq = tx.pow %d, %two : tensor<4x8xf32>, tensor<f32>
  %var = tx.reduce_mean %sq axes [-1] keep_dims : tensor<4x8xf32>
  %eps = tx.constant dense<1.0e-05> : tensor<f32>
  %ve = tx.add %var, %eps : tensor<4x1xf32>, tensor<f32>
  %std = tx.sqrt %ve : tensor<4x1xf32>
  %n = tx.div %d, %std : tensor<4x8xf32>, tensor<4x1xf32>
  return %n : tensor<4x8xf32>
}

// -----

// mean(x) - x is the negated centered value: not a LayerNorm.
// CHECK-LABEL: func.func @layer_norm_no_fuse_mean_minus_x
// CHECK-NOT:     tx.layer_norm
// CHECK-NOT:     tx.rms_norm
func.func @layer_norm_no_fuse_mean_minus_x(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // EXPLAIN: fuse-norms.mlir:[[@LINE+1]]:{{[0-9]+}}: remark: not fused: layer_norm: expected 'x - mean(x)', but got 'mean(x) - x'
  %mean = tx.reduce_mean %x axes [-1] keep_dims : tensor<4x8xf32>
  %d = tx.sub %mean, %x : tensor<4x1xf32>, tensor<4x8xf32>
  %two = tx.constant dense<2.0> : tensor<f32>
  %sq = tx.pow %d, %two : tensor<4x8xf32>, tensor<f32>
  %var = tx.reduce_mean %sq axes [-1] keep_dims : tensor<4x8xf32>
  %eps = tx.constant dense<1.0e-05> : tensor<f32>
  %ve = tx.add %var, %eps : tensor<4x1xf32>, tensor<f32>
  %std = tx.sqrt %ve : tensor<4x1xf32>
  %n = tx.div %d, %std : tensor<4x8xf32>, tensor<4x1xf32>
  return %n : tensor<4x8xf32>
}

// -----

// A mean of squares without eps and square root (an MSE loss) is no norm
// candidate at all: unchanged, and no remark.
// CHECK-LABEL: func.func @mean_square_loss_not_a_candidate
// CHECK:         tx.reduce_mean
// CHECK-NOT:     tx.rms_norm
func.func @mean_square_loss_not_a_candidate(%p: tensor<4x8xf32>, %t: tensor<4x8xf32>) -> tensor<f32> {
  %d = tx.sub %p, %t : tensor<4x8xf32>, tensor<4x8xf32>
  %sq = tx.mul %d, %d : tensor<4x8xf32>, tensor<4x8xf32>
  %l = tx.reduce_mean %sq axes [] : tensor<4x8xf32>
  return %l : tensor<f32>
}

//===----------------------------------------------------------------------===//
// Decomposed RMSNorm (HF Llama / Mistral / T5, hand-written RMSNorm)
//===----------------------------------------------------------------------===//

// -----

// HF Llama as the dynamo exporter writes it (opset 18): gamma on the left.
tx.parameter @"input_layernorm.weight" = dense<1.0> : tensor<8xf32>

// CHECK-LABEL: func.func @rms_norm_llama
// CHECK-SAME:    %[[X:[^:]+]]: tensor<2x4x8xf32>
// CHECK:         %[[G:.+]] = tx.load_parameter @input_layernorm.weight
// CHECK:         %[[Y:.+]], %{{.+}} = tx.rms_norm %[[X]], %[[G]] eps(9.99999997E-7) : tensor<2x4x8xf32>, tensor<8xf32>
// CHECK-NOT:     tx.reciprocal
// CHECK-NOT:     tx.sqrt
// CHECK:         return %[[Y]]
func.func @rms_norm_llama(%x: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %g = tx.load_parameter @"input_layernorm.weight" : tensor<8xf32>
  %two = tx.constant dense<2.0> : tensor<f32>
  %sq = tx.pow %x, %two : tensor<2x4x8xf32>, tensor<f32>
  %ms = tx.reduce_mean %sq axes [-1] keep_dims : tensor<2x4x8xf32>
  %eps = tx.constant dense<1.0e-06> : tensor<f32>
  %den = tx.add %ms, %eps : tensor<2x4x1xf32>, tensor<f32>
  %rms = tx.sqrt %den : tensor<2x4x1xf32>
  %inv = tx.reciprocal %rms : tensor<2x4x1xf32>
  %n = tx.mul %x, %inv : tensor<2x4x8xf32>, tensor<2x4x1xf32>
  %y = tx.mul %g, %n : tensor<8xf32>, tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// -----

// Llama in bf16: Cast to f32 for the statistics, Cast back to bf16 before the
// bf16 weight multiplies. The residual stream %x has other users.
// CHECK-LABEL: func.func @rms_norm_llama_bf16_casts
// CHECK-SAME:    %[[X:[^:]+]]: tensor<2x4x8xbf16>, %[[G:[^:]+]]: tensor<8xbf16>
// CHECK:         %[[Y:.+]], %{{.+}} = tx.rms_norm %[[X]], %[[G]] eps(9.99999997E-7) : tensor<2x4x8xbf16>, tensor<8xbf16>
// CHECK-NOT:     tx.cast
// CHECK:         %[[R:.+]] = tx.add %[[X]], %[[Y]]
// CHECK:         return %[[R]]
func.func @rms_norm_llama_bf16_casts(%x: tensor<2x4x8xbf16>, %g: tensor<8xbf16>) -> tensor<2x4x8xbf16> {
  %xf = tx.cast %x : tensor<2x4x8xbf16> to tensor<2x4x8xf32>
  %two = tx.constant dense<2.0> : tensor<f32>
  %sq = tx.pow %xf, %two : tensor<2x4x8xf32>, tensor<f32>
  %ms = tx.reduce_mean %sq axes [-1] keep_dims : tensor<2x4x8xf32>
  %eps = tx.constant dense<1.0e-06> : tensor<f32>
  %den = tx.add %ms, %eps : tensor<2x4x1xf32>, tensor<f32>
  %rms = tx.sqrt %den : tensor<2x4x1xf32>
  %inv = tx.reciprocal %rms : tensor<2x4x1xf32>
  %n = tx.mul %xf, %inv : tensor<2x4x8xf32>, tensor<2x4x1xf32>
  %nb = tx.cast %n : tensor<2x4x8xf32> to tensor<2x4x8xbf16>
  %y = tx.mul %g, %nb : tensor<8xbf16>, tensor<2x4x8xbf16>
  %r = tx.add %x, %y : tensor<2x4x8xbf16>, tensor<2x4x8xbf16>
  return %r : tensor<2x4x8xbf16>
}

// -----

// TorchScript (opset 14) hand-written RMSNorm: identity Casts to f32, x cast
// twice, rsqrt as Div(1, sqrt), and a [1] eps.
// CHECK-LABEL: func.func @rms_norm_torchscript_div_one
// CHECK-SAME:    %[[X:[^:]+]]: tensor<4x8xf32>, %[[G:[^:]+]]: tensor<8xf32>
// CHECK:         %[[Y:.+]], %{{.+}} = tx.rms_norm %[[X]], %[[G]] eps(9.99999997E-7) : tensor<4x8xf32>, tensor<8xf32>
// CHECK:         return %[[Y]]
func.func @rms_norm_torchscript_div_one(%x: tensor<4x8xf32>, %g: tensor<8xf32>) -> tensor<4x8xf32> {
  %c0 = tx.cast %x : tensor<4x8xf32> to tensor<4x8xf32>
  %two = tx.constant dense<2.0> : tensor<f32>
  %sq = tx.pow %c0, %two : tensor<4x8xf32>, tensor<f32>
  %ms = tx.reduce_mean %sq axes [-1] keep_dims : tensor<4x8xf32>
  %c1 = tx.cast %c0 : tensor<4x8xf32> to tensor<4x8xf32>
  %eps = tx.constant dense<1.0e-06> : tensor<1xf32>
  %den = tx.add %ms, %eps : tensor<4x1xf32>, tensor<1xf32>
  %rms = tx.sqrt %den : tensor<4x1xf32>
  %one = tx.constant dense<1.0> : tensor<f32>
  %inv = tx.div %one, %rms : tensor<f32>, tensor<4x1xf32>
  %n = tx.mul %c1, %inv : tensor<4x8xf32>, tensor<4x1xf32>
  %c2 = tx.cast %n : tensor<4x8xf32> to tensor<4x8xf32>
  %y = tx.mul %g, %c2 : tensor<8xf32>, tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// x * x for the square, x / sqrt(.) for the normalization, gamma on the right,
// all in f16 (the fused op still accumulates in f32).
// CHECK-LABEL: func.func @rms_norm_mul_square_div_f16
// CHECK-SAME:    %[[X:[^:]+]]: tensor<4x8xf16>, %[[G:[^:]+]]: tensor<8xf16>
// CHECK:         %[[Y:.+]], %{{.+}} = tx.rms_norm %[[X]], %[[G]] eps(9.765625E-4) : tensor<4x8xf16>, tensor<8xf16>
// CHECK:         return %[[Y]]
func.func @rms_norm_mul_square_div_f16(%x: tensor<4x8xf16>, %g: tensor<8xf16>) -> tensor<4x8xf16> {
  %sq = tx.mul %x, %x : tensor<4x8xf16>, tensor<4x8xf16>
  %ms = tx.reduce_mean %sq axes [1] keep_dims : tensor<4x8xf16>
  %eps = tx.constant dense<9.765625e-04> : tensor<f16>
  %den = tx.add %eps, %ms : tensor<f16>, tensor<4x1xf16>
  %rms = tx.sqrt %den : tensor<4x1xf16>
  %n = tx.div %x, %rms : tensor<4x8xf16>, tensor<4x1xf16>
  %y = tx.mul %n, %g : tensor<4x8xf16>, tensor<8xf16>
  return %y : tensor<4x8xf16>
}

// -----

// The square root written as Pow(., 0.5), then x / sqrt(.) * gamma.
// CHECK-LABEL: func.func @rms_norm_pow_half
// CHECK-SAME:    %[[X:[^:]+]]: tensor<4x8xf32>, %[[G:[^:]+]]: tensor<8xf32>
// CHECK:         %[[Y:.+]], %{{.+}} = tx.rms_norm %[[X]], %[[G]] eps(9.765625E-4)
// CHECK-NOT:     tx.pow
// CHECK:         return %[[Y]]
func.func @rms_norm_pow_half(%x: tensor<4x8xf32>, %g: tensor<8xf32>) -> tensor<4x8xf32> {
  %two = tx.constant dense<2.0> : tensor<f32>
  %sq = tx.pow %x, %two : tensor<4x8xf32>, tensor<f32>
  %ms = tx.reduce_mean %sq axes [-1] keep_dims : tensor<4x8xf32>
  %eps = tx.constant dense<9.765625e-04> : tensor<f32>
  %den = tx.add %ms, %eps : tensor<4x1xf32>, tensor<f32>
  %half = tx.constant dense<0.5> : tensor<f32>
  %rms = tx.pow %den, %half : tensor<4x1xf32>, tensor<f32>
  %n = tx.div %x, %rms : tensor<4x8xf32>, tensor<4x1xf32>
  %y = tx.mul %n, %g : tensor<4x8xf32>, tensor<8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// No weight: gamma becomes ones.
// CHECK-LABEL: func.func @rms_norm_no_gamma
// CHECK-SAME:    %[[X:[^:]+]]: tensor<4x8xf32>
// CHECK:         %[[ONES:.+]] = tx.constant dense<1.000000e+00> : tensor<8xf32>
// CHECK:         %[[Y:.+]], %{{.+}} = tx.rms_norm %[[X]], %[[ONES]] eps(9.765625E-4)
// CHECK:         return %[[Y]]
func.func @rms_norm_no_gamma(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %two = tx.constant dense<2.0> : tensor<f32>
  %sq = tx.pow %x, %two : tensor<4x8xf32>, tensor<f32>
  %ms = tx.reduce_mean %sq axes [-1] keep_dims : tensor<4x8xf32>
  %eps = tx.constant dense<9.765625e-04> : tensor<f32>
  %den = tx.add %ms, %eps : tensor<4x1xf32>, tensor<f32>
  %mhalf = tx.constant dense<-0.5> : tensor<f32>
  %inv = tx.pow %den, %mhalf : tensor<4x1xf32>, tensor<f32>
  %n = tx.mul %inv, %x : tensor<4x1xf32>, tensor<4x8xf32>
  return %n : tensor<4x8xf32>
}

// -----

// rstd is also returned: no fusion.
// CHECK-LABEL: func.func @rms_norm_no_fuse_rstd_escapes
// CHECK-NOT:     tx.rms_norm
// CHECK:         tx.reciprocal
func.func @rms_norm_no_fuse_rstd_escapes(%x: tensor<4x8xf32>, %g: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>) {
  %two = tx.constant dense<2.0> : tensor<f32>
  %sq = tx.pow %x, %two : tensor<4x8xf32>, tensor<f32>
  // EXPLAIN: fuse-norms.mlir:[[@LINE+1]]:{{[0-9]+}}: remark: not fused: rms_norm: intermediate 'tx.reciprocal' has a user outside the chain ('func.return')
  %ms = tx.reduce_mean %sq axes [-1] keep_dims : tensor<4x8xf32>
  %eps = tx.constant dense<1.0e-06> : tensor<f32>
  %den = tx.add %ms, %eps : tensor<4x1xf32>, tensor<f32>
  %rms = tx.sqrt %den : tensor<4x1xf32>
  %inv = tx.reciprocal %rms : tensor<4x1xf32>
  %n = tx.mul %x, %inv : tensor<4x8xf32>, tensor<4x1xf32>
  %y = tx.mul %g, %n : tensor<8xf32>, tensor<4x8xf32>
  return %y, %inv : tensor<4x8xf32>, tensor<4x1xf32>
}

// -----

// Mean square over the batch axis 0: not an innermost-dim norm.
// CHECK-LABEL: func.func @rms_norm_no_fuse_not_innermost
// CHECK-NOT:     tx.rms_norm
// CHECK:         tx.reciprocal
func.func @rms_norm_no_fuse_not_innermost(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %two = tx.constant dense<2.0> : tensor<f32>
  %sq = tx.pow %x, %two : tensor<4x8xf32>, tensor<f32>
  // EXPLAIN: fuse-norms.mlir:[[@LINE+1]]:{{[0-9]+}}: remark: not fused: rms_norm: expected reduce_mean over the innermost axis 1 only, but got axes [0]
  %ms = tx.reduce_mean %sq axes [0] keep_dims : tensor<4x8xf32>
  %eps = tx.constant dense<1.0e-06> : tensor<f32>
  %den = tx.add %ms, %eps : tensor<1x8xf32>, tensor<f32>
  %rms = tx.sqrt %den : tensor<1x8xf32>
  %inv = tx.reciprocal %rms : tensor<1x8xf32>
  %n = tx.mul %x, %inv : tensor<4x8xf32>, tensor<1x8xf32>
  return %n : tensor<4x8xf32>
}

// -----

// eps is a non-scalar constant (one value per row): no fusion.
// CHECK-LABEL: func.func @rms_norm_no_fuse_eps_not_scalar
// CHECK-NOT:     tx.rms_norm
func.func @rms_norm_no_fuse_eps_not_scalar(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %two = tx.constant dense<2.0> : tensor<f32>
  %sq = tx.pow %x, %two : tensor<4x8xf32>, tensor<f32>
  // EXPLAIN: fuse-norms.mlir:[[@LINE+1]]:{{[0-9]+}}: remark: not fused: rms_norm: expected a constant scalar eps, but got a constant of shape [4, 1]
  %ms = tx.reduce_mean %sq axes [-1] keep_dims : tensor<4x8xf32>
  %eps = tx.constant dense<[[1.0e-06], [2.0e-06], [3.0e-06], [4.0e-06]]> : tensor<4x1xf32>
  %den = tx.add %ms, %eps : tensor<4x1xf32>, tensor<4x1xf32>
  %rms = tx.sqrt %den : tensor<4x1xf32>
  %inv = tx.reciprocal %rms : tensor<4x1xf32>
  %n = tx.mul %x, %inv : tensor<4x8xf32>, tensor<4x1xf32>
  return %n : tensor<4x8xf32>
}

// -----

// The square root scales %z, not the %x whose mean square it is.
// CHECK-LABEL: func.func @rms_norm_no_fuse_other_value_normalized
// CHECK-NOT:     tx.rms_norm
func.func @rms_norm_no_fuse_other_value_normalized(%x: tensor<4x8xf32>, %z: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %two = tx.constant dense<2.0> : tensor<f32>
  %sq = tx.pow %x, %two : tensor<4x8xf32>, tensor<f32>
  // EXPLAIN: fuse-norms.mlir:[[@LINE+1]]:{{[0-9]+}}: remark: not fused: rms_norm: expected the squared value to be normalized, but the normalizing 'tx.mul' scales another value
  %ms = tx.reduce_mean %sq axes [-1] keep_dims : tensor<4x8xf32>
  %eps = tx.constant dense<1.0e-06> : tensor<f32>
  %den = tx.add %ms, %eps : tensor<4x1xf32>, tensor<f32>
  %rms = tx.sqrt %den : tensor<4x1xf32>
  %inv = tx.reciprocal %rms : tensor<4x1xf32>
  %n = tx.mul %z, %inv : tensor<4x8xf32>, tensor<4x1xf32>
  return %n : tensor<4x8xf32>
}
