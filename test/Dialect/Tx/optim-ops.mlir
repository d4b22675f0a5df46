// RUN: txopt-opt %s --split-input-file | txopt-opt --split-input-file | FileCheck %s
// RUN: txopt-opt %s --split-input-file --mlir-print-op-generic | txopt-opt --split-input-file | FileCheck %s

// Round trips of the optimizer ops (TxOptimOps.td), in custom and generic form.
// Hyper-parameters are f64 and print as the shortest decimal that reads back
// to the same double: the Python float the user wrote.

// One parameter, PyTorch AdamW defaults.
// CHECK-LABEL: func.func @adam_adamw_one_param
// CHECK-SAME:    %[[P:[^:]+]]: tensor<64x32xf32>, %[[G:[^:]+]]: tensor<64x32xf32>, %[[M:[^:]+]]: tensor<64x32xf32>, %[[V:[^:]+]]: tensor<64x32xf32>, %[[LR:[^:]+]]: tensor<f32>, %[[T:[^:]+]]: tensor<f32>
// CHECK:         %[[NP:[^,]+]], %[[NM:[^,]+]], %[[NV:[^ ]+]] = tx.adam adamw params(%[[P]]) grads(%[[G]]) exp_avg(%[[M]]) exp_avg_sq(%[[V]]) lr(%[[LR]]) step(%[[T]]) betas(0.9, 0.999) eps(1.0e-08, outside_sqrt) weight_decay(0.01) : tensor<64x32xf32>
// CHECK:         return %[[NP]], %[[NM]], %[[NV]]
func.func @adam_adamw_one_param(%p: tensor<64x32xf32>, %g: tensor<64x32xf32>, %m: tensor<64x32xf32>, %v: tensor<64x32xf32>, %lr: tensor<f32>, %t: tensor<f32>)
    -> (tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>) {
  %np, %nm, %nv = tx.adam adamw params(%p) grads(%g) exp_avg(%m) exp_avg_sq(%v) lr(%lr) step(%t)
      betas(0.9, 0.999) eps(1.0e-08, outside_sqrt) weight_decay(0.01) : tensor<64x32xf32>
  return %np, %nm, %nv : tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>
}

// -----

// Two parameters of different shapes, L2 decay, epsilon under the root.
// CHECK-LABEL: func.func @adam_l2_two_params
// CHECK:         %{{.+}}:2, %{{.+}}:2, %{{.+}}:2 = tx.adam adam params(%{{.+}}, %{{.+}}) grads(%{{.+}}, %{{.+}}) exp_avg(%{{.+}}, %{{.+}}) exp_avg_sq(%{{.+}}, %{{.+}}) lr(%{{.+}}) step(%{{.+}}) betas(0.8, 0.99) eps(1.0e-06, inside_sqrt) weight_decay(0.5) : tensor<4x8xf32>, tensor<8xf32>
func.func @adam_l2_two_params(%p0: tensor<4x8xf32>, %p1: tensor<8xf32>, %lr: tensor<f32>, %t: tensor<f32>)
    -> (tensor<4x8xf32>, tensor<8xf32>) {
  %np:2, %nm:2, %nv:2 = tx.adam adam params(%p0, %p1) grads(%p0, %p1) exp_avg(%p0, %p1) exp_avg_sq(%p0, %p1)
      lr(%lr) step(%t) betas(0.8, 0.99) eps(1.0e-06, inside_sqrt) weight_decay(0.5) : tensor<4x8xf32>, tensor<8xf32>
  return %np#0, %nv#1 : tensor<4x8xf32>, tensor<8xf32>
}

// -----

// Without bias correction there is no step operand.
// CHECK-LABEL: func.func @adam_no_bias_correction
// CHECK:         tx.adam adamw params(%{{.+}}) grads(%{{.+}}) exp_avg(%{{.+}}) exp_avg_sq(%{{.+}}) lr(%{{.+}}) betas(0.9, 0.999) eps(1.0e-08, outside_sqrt) weight_decay(0.0) {bias_correction = false} : tensor<8xf32>
func.func @adam_no_bias_correction(%p: tensor<8xf32>, %lr: tensor<f32>) -> tensor<8xf32> {
  %np, %nm, %nv = tx.adam adamw params(%p) grads(%p) exp_avg(%p) exp_avg_sq(%p) lr(%lr)
      betas(0.9, 0.999) eps(1.0e-08, outside_sqrt) weight_decay(0.0) {bias_correction = false} : tensor<8xf32>
  return %np : tensor<8xf32>
}

// -----

// Epsilon as in Kingma & Ba and ONNX's Adam (added to the uncorrected root).
// CHECK-LABEL: func.func @adam_epsilon_hat
// CHECK:         tx.adam adam params(%{{.+}}) {{.+}} eps(1.0e-06, epsilon_hat) weight_decay(0.0) : tensor<8xf32>
func.func @adam_epsilon_hat(%p: tensor<8xf32>, %lr: tensor<f32>, %t: tensor<f32>) -> tensor<8xf32> {
  %np, %nm, %nv = tx.adam adam params(%p) grads(%p) exp_avg(%p) exp_avg_sq(%p) lr(%lr) step(%t)
      betas(0.9, 0.999) eps(1.0e-06, epsilon_hat) weight_decay(0.0) : tensor<8xf32>
  return %np : tensor<8xf32>
}

// -----

// SGD with Nesterov momentum over two parameters.
// CHECK-LABEL: func.func @sgd_nesterov_two_params
// CHECK-SAME:    %[[P0:[^:]+]]: tensor<4x8xf32>, %[[P1:[^:]+]]: tensor<8xf32>, %[[LR:[^:]+]]: tensor<f32>
// CHECK:         %[[NP:[^:]+]]:2, %[[NB:[^:]+]]:2 = tx.sgd params(%[[P0]], %[[P1]]) grads(%[[P0]], %[[P1]]) momentum_buffer(%[[P0]], %[[P1]]) lr(%[[LR]]) momentum(0.9) dampening(0.0) weight_decay(0.0001) nesterov : tensor<4x8xf32>, tensor<8xf32>
// CHECK:         return %[[NP]]#1, %[[NB]]#0
func.func @sgd_nesterov_two_params(%p0: tensor<4x8xf32>, %p1: tensor<8xf32>, %lr: tensor<f32>) -> (tensor<8xf32>, tensor<4x8xf32>) {
  %np:2, %nb:2 = tx.sgd params(%p0, %p1) grads(%p0, %p1) momentum_buffer(%p0, %p1) lr(%lr)
      momentum(0.9) dampening(0.0) weight_decay(1.0e-04) nesterov : tensor<4x8xf32>, tensor<8xf32>
  return %np#1, %nb#0 : tensor<8xf32>, tensor<4x8xf32>
}

// -----

// Plain momentum with dampening.
// CHECK-LABEL: func.func @sgd_dampening
// CHECK:         tx.sgd params(%{{.+}}) grads(%{{.+}}) momentum_buffer(%{{.+}}) lr(%{{.+}}) momentum(0.5) dampening(0.1) weight_decay(0.0) : tensor<8xf32>
func.func @sgd_dampening(%p: tensor<8xf32>, %lr: tensor<f32>) -> tensor<8xf32> {
  %np, %nb = tx.sgd params(%p) grads(%p) momentum_buffer(%p) lr(%lr)
      momentum(0.5) dampening(0.1) weight_decay(0.0) : tensor<8xf32>
  return %np : tensor<8xf32>
}

// -----

// Any float literal reads; a double that is no short decimal keeps the
// digits it needs (here the f32 value of 0.999).
// CHECK-LABEL: func.func @hyper_parameter_literals
// CHECK:         betas(0.9990000128746033, 0.999) eps(1.0e-08, outside_sqrt) weight_decay(0.0) :
func.func @hyper_parameter_literals(%p: tensor<8xf32>, %lr: tensor<f32>, %t: tensor<f32>) -> tensor<8xf32> {
  %np, %nm, %nv = tx.adam adamw params(%p) grads(%p) exp_avg(%p) exp_avg_sq(%p) lr(%lr) step(%t)
      betas(0.99900001287460327, 9.990000e-01) eps(1.0e-8, outside_sqrt) weight_decay(0.0e+00) : tensor<8xf32>
  return %np : tensor<8xf32>
}

// -----

// Bias corrections formed in f32 from the f32 betas (an export's graph ops,
// torch's capturable path).
// CHECK-LABEL: func.func @adam_f32_bias_correction
// CHECK:         tx.adam adamw {{.*}} weight_decay(0.01) {f32_bias_correction} : tensor<8xf32>
func.func @adam_f32_bias_correction(%p: tensor<8xf32>, %g: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>, %lr: tensor<f32>, %t: tensor<f32>)
    -> tensor<8xf32> {
  %np, %nm, %nv = tx.adam adamw params(%p) grads(%g) exp_avg(%m) exp_avg_sq(%v) lr(%lr) step(%t)
      betas(0.9, 0.999) eps(1.0e-08, outside_sqrt) weight_decay(0.01) {f32_bias_correction} : tensor<8xf32>
  return %np : tensor<8xf32>
}
