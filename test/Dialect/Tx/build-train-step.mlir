// RUN: txopt-opt %s --split-input-file --verify-diagnostics --tx-build-train-step | FileCheck %s
// RUN: txopt-opt %s --split-input-file --verify-diagnostics --tx-build-train-step="optimizer=sgd momentum=0.9 lr=0.1 grad-clip=1.0" | FileCheck %s --check-prefix=SGD
// RUN: txopt-opt %s --split-input-file --verify-diagnostics --tx-build-train-step="optimizer=adam weight-decay=0.1 no-decay=^b$ freeze=^frozen" | FileCheck %s --check-prefix=ADAM
// RUN: txopt-opt %s --split-input-file --verify-diagnostics --tx-build-train-step="optimizer=sgd" | FileCheck %s --check-prefix=PLAINSGD
// RUN: not txopt-opt %s --split-input-file --tx-build-train-step="optimizer=lion" 2>&1 | FileCheck %s --check-prefix=BADOPT
// RUN: not txopt-opt %s --split-input-file --tx-build-train-step="loss=mse" 2>&1 | FileCheck %s --check-prefix=BADLOSS
// RUN: not txopt-opt %s --split-input-file --tx-build-train-step="freeze=(" 2>&1 | FileCheck %s --check-prefix=BADREGEX

// The structure of the step; the numbers are checked by
// test/Training/overfit.test against an independent numpy AdamW.

// Enumerated options are checked when the pipeline is parsed.
// BADOPT: for the --optimizer option: expected adamw|adam|sgd, but got 'lion'
// BADLOSS: for the --loss option: expected output|cross-entropy, but got 'mse'
// BADREGEX: error: invalid --freeze regex '(':

// Default: AdamW, weight decay 0.01 on rank >= 2 parameters only.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME:    %[[W:[^:]+]]: tensor<4x3xf32> {tx.name = "w", tx.parameter = @w, tx.role = "param"}
// CHECK-SAME:    %[[B:[^:]+]]: tensor<3xf32> {tx.name = "b", tx.parameter = @b, tx.role = "param"}
// CHECK-SAME:    %[[MW:[^:]+]]: tensor<4x3xf32> {tx.init = 0.000000e+00 : f32, tx.name = "w.exp_avg", tx.role = "exp_avg"}
// CHECK-SAME:    %[[MB:[^:]+]]: tensor<3xf32> {tx.init = 0.000000e+00 : f32, tx.name = "b.exp_avg", tx.role = "exp_avg"}
// CHECK-SAME:    %[[VW:[^:]+]]: tensor<4x3xf32> {tx.init = 0.000000e+00 : f32, tx.name = "w.exp_avg_sq", tx.role = "exp_avg_sq"}
// CHECK-SAME:    %[[VB:[^:]+]]: tensor<3xf32> {tx.init = 0.000000e+00 : f32, tx.name = "b.exp_avg_sq", tx.role = "exp_avg_sq"}
// The step inputs lr (default: the compiled lr) and rng_key are not carried.
// CHECK-SAME:    %[[LR:[^:]+]]: tensor<f32> {tx.init = 1.000000e-03 : f32, tx.name = "lr", tx.role = "lr"}
// CHECK-SAME:    %[[STEP:[^:]+]]: tensor<f32> {tx.init = 0.000000e+00 : f32, tx.name = "step", tx.role = "step"}
// CHECK-SAME:    %[[KEY:[^:]+]]: tensor<i64> {tx.name = "rng_key", tx.role = "rng"}
// CHECK-SAME:    %[[X:[^:]+]]: tensor<2x4xf32> {tx.name = "x", tx.role = "data"}
// CHECK-SAME:    -> (tensor<4x3xf32> {tx.name = "w", tx.next = 0 : i64}, tensor<3xf32> {tx.name = "b", tx.next = 1 : i64},
// CHECK-SAME:        tensor<4x3xf32> {tx.name = "w.exp_avg", tx.next = 2 : i64}, tensor<3xf32> {tx.name = "b.exp_avg", tx.next = 3 : i64},
// CHECK-SAME:        tensor<4x3xf32> {tx.name = "w.exp_avg_sq", tx.next = 4 : i64}, tensor<3xf32> {tx.name = "b.exp_avg_sq", tx.next = 5 : i64},
// CHECK-SAME:        tensor<f32> {tx.name = "step", tx.next = 7 : i64}, tensor<f32> {tx.name = "loss"}, tensor<f32> {tx.name = "grad_norm"})
// CHECK-SAME:    attributes {tx.train_step = {beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, eps = 1.000000e-08 : f64, forward = "f", grad_clip = 0.000000e+00 : f64, loss = "output", lr = 1.000000e-03 : f64, optimizer = "adamw", weight_decay = 1.000000e-02 : f64}}
// CHECK-NOT:     tx.load_parameter
// CHECK:         %[[Y:.+]] = tx.matmul %[[X]], %[[W]]
// The global norm: sqrt of the summed squares of every gradient.
// CHECK:         %[[SQ1:.+]] = tx.mul %[[GW:[^,]+]], %{{[^ ]+}} : tensor<4x3xf32>, tensor<4x3xf32>
// CHECK:         %[[S1:.+]] = tx.reduce_sum %[[SQ1]] axes []
// CHECK:         %[[SQ2:.+]] = tx.mul %[[GB:[^,]+]], %{{[^ ]+}} : tensor<3xf32>, tensor<3xf32>
// CHECK:         %[[S2:.+]] = tx.reduce_sum %[[SQ2]] axes []
// CHECK:         %[[S:.+]] = tx.add %[[S1]], %[[S2]]
// CHECK:         %[[NORM:.+]] = tx.sqrt %[[S]]
// CHECK:         %[[NEXT:.+]] = tx.add %[[STEP]], %{{.+}} : tensor<f32>, tensor<f32>
// CHECK:         %[[P1:.+]], %[[M1:.+]], %[[V1:.+]] = tx.adam adamw params(%[[W]]) grads(%[[GW]]) exp_avg(%[[MW]]) exp_avg_sq(%[[VW]]) lr(%[[LR]]) step(%[[NEXT]])
// CHECK-SAME:    betas(0.9, 0.999) eps(1.0e-08, outside_sqrt) weight_decay(0.01) : tensor<4x3xf32>
// CHECK:         %[[P2:.+]], %[[M2:.+]], %[[V2:.+]] = tx.adam adamw params(%[[B]]) grads(%[[GB]]) exp_avg(%[[MB]]) exp_avg_sq(%[[VB]]) lr(%[[LR]]) step(%[[NEXT]])
// CHECK-SAME:    weight_decay(0.0) : tensor<3xf32>
// CHECK:         return %[[P1]], %[[P2]], %[[M1]], %[[M2]], %[[V1]], %[[V2]], %[[NEXT]], %{{.+}}, %[[NORM]]
// CHECK-NOT:     func.func @f

// SGD with momentum keeps one buffer per parameter; clipping scales every
// gradient by min(1, c / (norm + 1e-6)).
// SGD-LABEL: func.func @train_step(
// SGD-SAME:    %arg{{[0-9]+}}: tensor<4x3xf32> {tx.init = 0.000000e+00 : f32, tx.name = "w.momentum_buffer", tx.role = "momentum_buffer"}
// SGD-SAME:    %[[LR:[^:]+]]: tensor<f32> {tx.init = 1.000000e-01 : f32, tx.name = "lr", tx.role = "lr"}
// SGD:         %[[NORM:.+]] = tx.sqrt
// SGD:         %[[SUM:.+]] = tx.add %[[NORM]], %{{.+}} : tensor<f32>, tensor<f32>
// SGD:         %[[COEF:.+]] = tx.div %{{.+}}, %[[SUM]]
// SGD:         %[[BELOW:.+]] = tx.less %[[COEF]], %[[ONE:.+]] :
// SGD:         %[[CLIP:.+]] = tx.where %[[BELOW]], %[[COEF]], %[[ONE]]
// SGD:         %[[GW:.+]] = tx.mul %{{.+}}, %[[CLIP]]
// SGD:         %[[GB:.+]] = tx.mul %{{.+}}, %[[CLIP]]
// SGD:         tx.sgd params(%{{.+}}, %{{.+}}) grads(%[[GW]], %[[GB]]) momentum_buffer(%{{.+}}, %{{.+}}) lr(%[[LR]]) momentum(0.9) dampening(0.0) weight_decay(0.0)

// Plain SGD keeps no state.
// PLAINSGD-LABEL: func.func @train_step(
// PLAINSGD-NOT:   momentum_buffer"
// PLAINSGD:       tx.sgd params

tx.parameter @w = dense<0.5> : tensor<4x3xf32>
tx.parameter @b = dense<0.1> : tensor<3xf32>
func.func @f(%x: tensor<2x4xf32> {tx.name = "x"}) -> (tensor<f32> {tx.name = "loss"}) {
  %w = tx.load_parameter @w : tensor<4x3xf32>
  %b = tx.load_parameter @b : tensor<3xf32>
  %y = tx.matmul %x, %w : tensor<2x4xf32>, tensor<4x3xf32>
  %z = tx.add %y, %b : tensor<2x3xf32>, tensor<3xf32>
  %sq = tx.mul %z, %z : tensor<2x3xf32>, tensor<2x3xf32>
  %l = tx.reduce_mean %sq axes [] : tensor<2x3xf32>
  return %l : tensor<f32>
}

// -----

// Adam (L2 decay), decay by regex, a frozen parameter stays a load (and
// gets no state).
// ADAM-LABEL: tx.parameter @frozen_scale = dense<2.000000e+00> : tensor<3xf32> frozen
// ADAM-LABEL: func.func @train_step(
// ADAM-NOT:     frozen_scale
// ADAM-SAME:    {
// ADAM:         tx.load_parameter @frozen_scale
// ADAM:         tx.adam adam params(%{{.+}}) {{.*}} weight_decay(0.1) : tensor<4x3xf32>
// ADAM:         tx.adam adam params(%{{.+}}) {{.*}} weight_decay(0.0) : tensor<3xf32>
tx.parameter @w = dense<0.5> : tensor<4x3xf32>
tx.parameter @b = dense<0.1> : tensor<3xf32>
tx.parameter @frozen_scale = dense<2.0> : tensor<3xf32>
func.func @g(%x: tensor<2x4xf32> {tx.name = "x"}) -> (tensor<f32> {tx.name = "loss"}) {
  %w = tx.load_parameter @w : tensor<4x3xf32>
  %b = tx.load_parameter @b : tensor<3xf32>
  %s = tx.load_parameter @frozen_scale : tensor<3xf32>
  %y = tx.matmul %x, %w : tensor<2x4xf32>, tensor<4x3xf32>
  %z = tx.add %y, %b : tensor<2x3xf32>, tensor<3xf32>
  %t = tx.mul %z, %s : tensor<2x3xf32>, tensor<3xf32>
  %sq = tx.mul %t, %t : tensor<2x3xf32>, tensor<2x3xf32>
  %l = tx.reduce_mean %sq axes [] : tensor<2x3xf32>
  return %l : tensor<f32>
}

// -----

// Labels feeding a cross-entropy are marked so a driver can fill them.
// CHECK-LABEL: func.func @train_step(%arg0: tensor<8x4xf32>
// CHECK-SAME:    %arg{{[0-9]+}}: tensor<2xi64> {tx.name = "ids", tx.role = "data"}
// CHECK-SAME:    %arg{{[0-9]+}}: tensor<2xi64> {tx.name = "targets", tx.role = "labels"}
tx.parameter @emb = dense<0.5> : tensor<8x4xf32>
func.func @main(%ids: tensor<2xi64> {tx.name = "ids"}, %targets: tensor<2xi64> {tx.name = "targets"}) -> tensor<f32> {
  %e = tx.load_parameter @emb : tensor<8x4xf32>
  %h = tx.gather %e, %ids : tensor<8x4xf32>, tensor<2xi64>
  %l = tx.softmax_cross_entropy_loss %h, %targets reduction(mean) : tensor<2x4xf32>, tensor<2xi64>
  return %l : tensor<f32>
}

// -----

// Every dropout, forward and backward, is keyed by the step's rng_key (the
// import-time constant key goes), and the backward dropout has the
// forward's seed: it drops what the forward dropped. Two dropouts keep
// their own seeds.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME:    %[[KEY:[^:]+]]: tensor<i64> {tx.name = "rng_key", tx.role = "rng"}
// CHECK-NOT:     tx.constant dense<0> : tensor<i64>
// CHECK:         tx.dropout %{{.+}}, %[[KEY]] ratio(1.000000e-01) seed(11) : tensor<2x3xf32>
// CHECK:         tx.dropout %{{.+}}, %[[KEY]] ratio(1.000000e-01) seed(12) : tensor<2x3xf32>
// CHECK:         tx.dropout %{{.+}}, %[[KEY]] ratio(1.000000e-01) seed(12) : tensor<2x3xf32>
// CHECK:         tx.dropout %{{.+}}, %[[KEY]] ratio(1.000000e-01) seed(11) : tensor<2x3xf32>
// CHECK:         tx.adam
tx.parameter @w = dense<0.5> : tensor<4x3xf32>
func.func @dropout_net(%x: tensor<2x4xf32> {tx.name = "x"}) -> tensor<f32> {
  %w = tx.load_parameter @w : tensor<4x3xf32>
  %k = tx.constant dense<0> : tensor<i64>
  %y = tx.matmul %x, %w : tensor<2x4xf32>, tensor<4x3xf32>
  %d1 = tx.dropout %y, %k ratio(0.1) seed(11) : tensor<2x3xf32>
  %d2 = tx.dropout %d1, %k ratio(0.1) seed(12) : tensor<2x3xf32>
  %sq = tx.mul %d2, %d2 : tensor<2x3xf32>, tensor<2x3xf32>
  %l = tx.reduce_mean %sq axes [] : tensor<2x3xf32>
  return %l : tensor<f32>
}

// -----

// Everything frozen (here: no parameter at all) is an error.
// expected-error @+1 {{nothing to train: the loss reads no trainable parameter (all frozen, or none)}}
func.func @no_params(%x: tensor<3xf32>) -> tensor<f32> {
  %l = tx.reduce_sum %x axes [] : tensor<3xf32>
  return %l : tensor<f32>
}

// -----

// A bf16 parameter trains through an f32 master weight.
// CHECK-LABEL: func.func @train_step(%arg0: tensor<3xf32> {tx.name = "half", tx.parameter = @half, tx.role = "param"}
// CHECK:         %[[LOW:.+]] = tx.cast %arg0 : tensor<3xf32> to tensor<3xbf16>
// CHECK:         tx.mul %{{.+}}, %[[LOW]] : tensor<3xbf16>, tensor<3xbf16>
// CHECK:         %[[G:.+]] = tx.cast %{{.+}} : tensor<3xbf16> to tensor<3xf32>
// CHECK:         tx.adam adamw params(%arg0) grads(%[[G]])
tx.parameter @half = dense<1.0> : tensor<3xbf16>
func.func @bf16_param(%x: tensor<3xbf16>) -> tensor<bf16> {
  %p = tx.load_parameter @half : tensor<3xbf16>
  %y = tx.mul %x, %p : tensor<3xbf16>, tensor<3xbf16>
  %l = tx.reduce_sum %y axes [] : tensor<3xbf16>
  return %l : tensor<bf16>
}

// -----

// A function without a scalar loss (use loss=cross-entropy for logits).
// expected-error @+1 {{expected result #0 to be a scalar floating-point loss (0-d tensor), but got 'tensor<3xf32>'}}
func.func @logits(%x: tensor<3xf32>) -> tensor<3xf32> {
  %p = tx.load_parameter @p : tensor<3xf32>
  %y = tx.mul %x, %p : tensor<3xf32>, tensor<3xf32>
  return %y : tensor<3xf32>
}
tx.parameter @p = dense<1.0> : tensor<3xf32>
