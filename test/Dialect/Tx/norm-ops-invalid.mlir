// RUN: txopt-opt %s --split-input-file --verify-diagnostics

// One case per verifier branch of the fused norm ops (TxNormOps.cpp), plus the
// type constraints and traits ODS checks for them.

// A 0-d input has no innermost dim to normalize.
func.func @layer_norm_rank_zero(%x: tensor<f32>, %g: tensor<1xf32>) {
  // expected-error @+1 {{expected an input of rank at least 1, but got rank 0}}
  %y, %m, %r = tx.layer_norm %x, %g eps(1.0e-05) : tensor<f32>, tensor<1xf32>
  return
}

// -----

// Statistics are accumulated in f32, so f64 activations are refused.
func.func @layer_norm_f64(%x: tensor<4x128xf64>, %g: tensor<128xf64>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float values}}
  %y, %m, %r = tx.layer_norm %x, %g eps(1.0e-05) : tensor<4x128xf64>, tensor<128xf64>
  return
}

// -----

func.func @layer_norm_negative_epsilon(%x: tensor<4x128xf32>, %g: tensor<128xf32>) {
  // expected-error @+1 {{expected a finite non-negative epsilon, but got -1.000000e+00}}
  %y, %m, %r = tx.layer_norm %x, %g eps(-1.0) : tensor<4x128xf32>, tensor<128xf32>
  return
}

// -----

func.func @layer_norm_gamma_shape(%x: tensor<4x128xbf16>, %g: tensor<64xbf16>) {
  // expected-error @+1 {{expected gamma shape [128], but got [64]}}
  %y, %m, %r = tx.layer_norm %x, %g eps(1.0e-05) : tensor<4x128xbf16>, tensor<64xbf16>
  return
}

// -----

// gamma may be f32 next to bf16 activations, but not another low precision.
func.func @layer_norm_gamma_element_type(%x: tensor<4x128xbf16>, %g: tensor<128xf16>) {
  // expected-error @+1 {{expected gamma element type 'bf16' or 'f32', but got 'f16'}}
  %y, %m, %r = tx.layer_norm %x, %g eps(1.0e-05) : tensor<4x128xbf16>, tensor<128xf16>
  return
}

// -----

// A beta broadcast over the rows is not a per-feature shift.
func.func @layer_norm_beta_shape(%x: tensor<4x128xf32>, %g: tensor<128xf32>, %b: tensor<4x128xf32>) {
  // expected-error @+1 {{expected beta shape [128], but got [4, 128]}}
  %y, %m, %r = tx.layer_norm %x, %g, %b eps(1.0e-05) : tensor<4x128xf32>, tensor<128xf32>, tensor<4x128xf32>
  return
}

// -----

func.func @layer_norm_beta_element_type(%x: tensor<4x128xf32>, %g: tensor<128xf32>, %b: tensor<128xbf16>) {
  // expected-error @+1 {{expected beta element type 'f32', but got 'bf16'}}
  %y, %m, %r = tx.layer_norm %x, %g, %b eps(1.0e-05) : tensor<4x128xf32>, tensor<128xf32>, tensor<128xbf16>
  return
}

// -----

// The statistics results are inferred; the generic form cannot override them.
func.func @layer_norm_wrong_stats_type(%x: tensor<4x128xf32>, %g: tensor<128xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<4x128xf32>', 'tensor<4x1xf32>', 'tensor<4x1xf32>' are incompatible with return type(s) of operation 'tensor<4x128xf32>', 'tensor<4xf32>', 'tensor<4xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %y:3 = "tx.layer_norm"(%x, %g) <{epsilon = 1.0e-05 : f32}>
      : (tensor<4x128xf32>, tensor<128xf32>) -> (tensor<4x128xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @rms_norm_negative_epsilon(%x: tensor<4x128xf32>, %g: tensor<128xf32>) {
  // expected-error @+1 {{expected a finite non-negative epsilon, but got -1.000000e-06}}
  %y, %r = tx.rms_norm %x, %g eps(-1.0e-06) : tensor<4x128xf32>, tensor<128xf32>
  return
}

// -----

func.func @rms_norm_gamma_shape(%x: tensor<2x32x128xbf16>, %g: tensor<32x128xbf16>) {
  // expected-error @+1 {{expected gamma shape [128], but got [32, 128]}}
  %y, %r = tx.rms_norm %x, %g eps(1.0e-06) : tensor<2x32x128xbf16>, tensor<32x128xbf16>
  return
}

// -----

func.func @rms_norm_gamma_element_type(%x: tensor<4x128xf32>, %g: tensor<128xbf16>) {
  // expected-error @+1 {{expected gamma element type 'f32', but got 'bf16'}}
  %y, %r = tx.rms_norm %x, %g eps(1.0e-06) : tensor<4x128xf32>, tensor<128xbf16>
  return
}

// -----

func.func @layer_norm_grad_gamma_shape(%dy: tensor<64x128xf32>, %x: tensor<64x128xf32>, %g: tensor<64xf32>,
                                       %mean: tensor<64x1xf32>, %rstd: tensor<64x1xf32>) {
  // expected-error @+1 {{expected gamma shape [128], but got [64]}}
  %dx, %dg, %db = tx.layer_norm_grad %dy, %x, %g, %mean, %rstd : tensor<64x128xf32>, tensor<64xf32>, tensor<64x1xf32>
  return
}

// -----

// The statistics must be the forward's, shaped like the input with the last dim 1.
func.func @layer_norm_grad_mean_shape(%dy: tensor<64x128xf32>, %x: tensor<64x128xf32>, %g: tensor<128xf32>,
                                      %mean: tensor<64xf32>, %rstd: tensor<64xf32>) {
  // expected-error @+1 {{expected mean shape [64, 1], but got [64]}}
  %dx, %dg, %db = tx.layer_norm_grad %dy, %x, %g, %mean, %rstd : tensor<64x128xf32>, tensor<128xf32>, tensor<64xf32>
  return
}

// -----

// dy has the type of x (a trait, so only the generic form can break it).
func.func @layer_norm_grad_dy_type(%dy: tensor<64x128xbf16>, %x: tensor<64x128xf32>, %g: tensor<128xf32>,
                                   %mean: tensor<64x1xf32>, %rstd: tensor<64x1xf32>) {
  // expected-error @+1 {{all of {grad, input} have same type}}
  %r:3 = "tx.layer_norm_grad"(%dy, %x, %g, %mean, %rstd)
      : (tensor<64x128xbf16>, tensor<64x128xf32>, tensor<128xf32>, tensor<64x1xf32>, tensor<64x1xf32>)
      -> (tensor<64x128xf32>, tensor<128xf32>, tensor<128xf32>)
  return
}

// -----

func.func @rms_norm_grad_gamma_element_type(%dy: tensor<4x128xbf16>, %x: tensor<4x128xbf16>, %g: tensor<128xf16>,
                                            %rstd: tensor<4x1xf32>) {
  // expected-error @+1 {{expected gamma element type 'bf16' or 'f32', but got 'f16'}}
  %dx, %dg = tx.rms_norm_grad %dy, %x, %g, %rstd : tensor<4x128xbf16>, tensor<128xf16>, tensor<4x1xf32>
  return
}

// -----

func.func @rms_norm_grad_rstd_shape(%dy: tensor<4x128xbf16>, %x: tensor<4x128xbf16>, %g: tensor<128xbf16>,
                                    %rstd: tensor<4x128xf32>) {
  // expected-error @+1 {{expected rstd shape [4, 1], but got [4, 128]}}
  %dx, %dg = tx.rms_norm_grad %dy, %x, %g, %rstd : tensor<4x128xbf16>, tensor<128xbf16>, tensor<4x128xf32>
  return
}

// -----

// The statistics are f32 whatever the activation type.
func.func @rms_norm_grad_rstd_bf16(%dy: tensor<4x128xbf16>, %x: tensor<4x128xbf16>, %g: tensor<128xbf16>,
                                   %rstd: tensor<4x1xbf16>) {
  // expected-error @+1 {{operand #3 must be statically shaped tensor of 32-bit float values}}
  %dx, %dg = tx.rms_norm_grad %dy, %x, %g, %rstd : tensor<4x128xbf16>, tensor<128xbf16>, tensor<4x1xbf16>
  return
}
