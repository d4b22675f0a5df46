// RUN: txopt-opt %s --split-input-file --verify-diagnostics

// One case per verifier branch of tx.adam (TxOptimOps.cpp), plus the ODS
// constraints on lr and step. Cases the custom syntax cannot express (it has
// one type list for all per-parameter lists) use the generic form.

// An update of nothing is a bug in whatever built it.
func.func @adam_no_params(%lr: tensor<f32>, %t: tensor<f32>) {
  // expected-error @+1 {{expected at least one parameter}}
  "tx.adam"(%lr, %t) <{beta1 = 0.9 : f64, beta2 = 0.999 : f64, epsilon = 1.0e-08 : f64,
      epsilon_placement = #tx<epsilon_placement outside_sqrt>, mode = #tx<adam_mode adamw>,
      operandSegmentSizes = array<i32: 0, 0, 0, 0, 1, 1>, weight_decay = 0.01 : f64}>
      : (tensor<f32>, tensor<f32>) -> ()
  return
}

// -----

// Every parameter needs its gradient.
func.func @adam_grad_count_mismatch(%p: tensor<8xf32>, %lr: tensor<f32>, %t: tensor<f32>) {
  // expected-error @+1 {{expected 2 'grads' (one per parameter), but got 1}}
  %r:6 = "tx.adam"(%p, %p, %p, %p, %p, %p, %p, %lr, %t) <{beta1 = 0.9 : f64, beta2 = 0.999 : f64, epsilon = 1.0e-08 : f64,
      epsilon_placement = #tx<epsilon_placement outside_sqrt>, mode = #tx<adam_mode adamw>,
      operandSegmentSizes = array<i32: 2, 1, 2, 2, 1, 1>, weight_decay = 0.01 : f64}>
      : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>)
      -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

// ... and three results.
func.func @adam_result_count_mismatch(%p: tensor<8xf32>, %lr: tensor<f32>, %t: tensor<f32>) {
  // expected-error @+1 {{expected 2 'new_params' (one per parameter), but got 1}}
  %r:3 = "tx.adam"(%p, %p, %p, %p, %p, %p, %p, %p, %lr, %t) <{beta1 = 0.9 : f64, beta2 = 0.999 : f64, epsilon = 1.0e-08 : f64,
      epsilon_placement = #tx<epsilon_placement outside_sqrt>, mode = #tx<adam_mode adamw>,
      operandSegmentSizes = array<i32: 2, 2, 2, 2, 1, 1>, weight_decay = 0.01 : f64}>
      : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>)
      -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

// The update is elementwise without broadcasting: a moment of another shape
// is refused.
func.func @adam_exp_avg_shape_mismatch(%p: tensor<4x8xf32>, %m: tensor<8xf32>, %lr: tensor<f32>, %t: tensor<f32>) {
  // expected-error @+1 {{expected 'exp_avg' #0 of type 'tensor<4x8xf32>', but got 'tensor<8xf32>'}}
  %r:3 = "tx.adam"(%p, %p, %m, %p, %lr, %t) <{beta1 = 0.9 : f64, beta2 = 0.999 : f64, epsilon = 1.0e-08 : f64,
      epsilon_placement = #tx<epsilon_placement outside_sqrt>, mode = #tx<adam_mode adamw>,
      operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1>, weight_decay = 0.01 : f64}>
      : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<f32>, tensor<f32>)
      -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
  return
}

// -----

// Results have their parameter's type too.
func.func @adam_result_type_mismatch(%p: tensor<8xf32>, %lr: tensor<f32>, %t: tensor<f32>) {
  // expected-error @+1 {{expected 'new_exp_avg_sq' #0 of type 'tensor<8xf32>', but got 'tensor<4xf32>'}}
  %r:3 = "tx.adam"(%p, %p, %p, %p, %lr, %t) <{beta1 = 0.9 : f64, beta2 = 0.999 : f64, epsilon = 1.0e-08 : f64,
      epsilon_placement = #tx<epsilon_placement outside_sqrt>, mode = #tx<adam_mode adamw>,
      operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1>, weight_decay = 0.01 : f64}>
      : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>)
      -> (tensor<8xf32>, tensor<8xf32>, tensor<4xf32>)
  return
}

// -----

// Optimizer state is f32 (fp32 master weights).
func.func @adam_bf16_state(%p: tensor<8xbf16>, %lr: tensor<f32>, %t: tensor<f32>) {
  // expected-error @+1 {{expected f32 parameters and optimizer state, but got 'tensor<8xbf16>' for parameter #0}}
  %np, %nm, %nv = tx.adam adamw params(%p) grads(%p) exp_avg(%p) exp_avg_sq(%p) lr(%lr) step(%t)
      betas(0.9, 0.999) eps(1.0e-08, outside_sqrt) weight_decay(0.01) : tensor<8xbf16>
  return
}

// -----

// beta1 = 1 never forgets and makes the bias correction divide by zero.
func.func @adam_beta1_one(%p: tensor<8xf32>, %lr: tensor<f32>, %t: tensor<f32>) {
  // expected-error @+1 {{expected beta1 in [0, 1), but got 1.000000e+00}}
  %np, %nm, %nv = tx.adam adamw params(%p) grads(%p) exp_avg(%p) exp_avg_sq(%p) lr(%lr) step(%t)
      betas(1.0, 0.999) eps(1.0e-08, outside_sqrt) weight_decay(0.01) : tensor<8xf32>
  return
}

// -----

// A negative beta2 could make the second moment negative.
func.func @adam_beta2_negative(%p: tensor<8xf32>, %lr: tensor<f32>, %t: tensor<f32>) {
  // expected-error @+1 {{expected beta2 in [0, 1), but got -1.000000e-01}}
  %np, %nm, %nv = tx.adam adamw params(%p) grads(%p) exp_avg(%p) exp_avg_sq(%p) lr(%lr) step(%t)
      betas(0.9, -0.1) eps(1.0e-08, outside_sqrt) weight_decay(0.01) : tensor<8xf32>
  return
}

// -----

// A negative epsilon can make the denominator zero.
func.func @adam_epsilon_negative(%p: tensor<8xf32>, %lr: tensor<f32>, %t: tensor<f32>) {
  // expected-error @+1 {{expected epsilon to be finite and >= 0, but got -1.000000e+00}}
  %np, %nm, %nv = tx.adam adamw params(%p) grads(%p) exp_avg(%p) exp_avg_sq(%p) lr(%lr) step(%t)
      betas(0.9, 0.999) eps(-1.0, outside_sqrt) weight_decay(0.01) : tensor<8xf32>
  return
}

// -----

// Negative weight decay grows the weights.
func.func @adam_weight_decay_negative(%p: tensor<8xf32>, %lr: tensor<f32>, %t: tensor<f32>) {
  // expected-error @+1 {{expected weight_decay to be finite and >= 0, but got -5.000000e-01}}
  %np, %nm, %nv = tx.adam adam params(%p) grads(%p) exp_avg(%p) exp_avg_sq(%p) lr(%lr) step(%t)
      betas(0.9, 0.999) eps(1.0e-08, outside_sqrt) weight_decay(-0.5) : tensor<8xf32>
  return
}

// -----

// Bias correction (the default) needs the step.
func.func @adam_bias_correction_without_step(%p: tensor<8xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{expected a 'step' operand when bias_correction is set}}
  %np, %nm, %nv = tx.adam adamw params(%p) grads(%p) exp_avg(%p) exp_avg_sq(%p) lr(%lr)
      betas(0.9, 0.999) eps(1.0e-08, outside_sqrt) weight_decay(0.01) : tensor<8xf32>
  return
}

// -----

// Without bias correction nothing reads the step.
func.func @adam_step_without_bias_correction(%p: tensor<8xf32>, %lr: tensor<f32>, %t: tensor<f32>) {
  // expected-error @+1 {{expected no 'step' operand when bias_correction is false}}
  %np, %nm, %nv = tx.adam adamw params(%p) grads(%p) exp_avg(%p) exp_avg_sq(%p) lr(%lr) step(%t)
      betas(0.9, 0.999) eps(1.0e-08, outside_sqrt) weight_decay(0.01) {bias_correction = false} : tensor<8xf32>
  return
}

// -----

// ODS: lr is one 0-d f32 shared by all parameters, not a per-element tensor.
func.func @adam_lr_not_scalar(%p: tensor<8xf32>, %lr: tensor<8xf32>, %t: tensor<f32>) {
  // expected-error @+1 {{operand #4 must be 0D tensor of 32-bit float values}}
  %r:3 = "tx.adam"(%p, %p, %p, %p, %lr, %t) <{beta1 = 0.9 : f64, beta2 = 0.999 : f64, epsilon = 1.0e-08 : f64,
      epsilon_placement = #tx<epsilon_placement outside_sqrt>, mode = #tx<adam_mode adamw>,
      operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1>, weight_decay = 0.01 : f64}>
      : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<f32>)
      -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

// ODS: hyper-parameters are f64, PyTorch's Python floats (an f32 0.999 is a
// different beta).
func.func @adam_f32_beta(%p: tensor<8xf32>, %lr: tensor<f32>, %t: tensor<f32>) {
  // expected-error @+1 {{attribute 'beta2' failed to satisfy constraint: 64-bit float attribute}}
  %r:3 = "tx.adam"(%p, %p, %p, %p, %lr, %t) <{beta1 = 0.9 : f64, beta2 = 0.999 : f32, epsilon = 1.0e-08 : f64,
      epsilon_placement = #tx<epsilon_placement outside_sqrt>, mode = #tx<adam_mode adamw>,
      operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1>, weight_decay = 0.01 : f64}>
      : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>)
      -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

// tx.sgd shares the per-parameter checks; one case for its lists.
func.func @sgd_momentum_buffer_shape_mismatch(%p: tensor<4x8xf32>, %b: tensor<8xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{expected 'momentum_buffer' #0 of type 'tensor<4x8xf32>', but got 'tensor<8xf32>'}}
  %r:2 = "tx.sgd"(%p, %p, %b, %lr) <{momentum = 0.9 : f64, dampening = 0.0 : f64, weight_decay = 0.0 : f64}>
      : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<f32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
  return
}

// -----

// Negative momentum oscillates instead of averaging.
func.func @sgd_momentum_negative(%p: tensor<8xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{expected momentum to be finite and >= 0, but got -9.000000e-01}}
  %np, %nb = tx.sgd params(%p) grads(%p) momentum_buffer(%p) lr(%lr)
      momentum(-0.9) dampening(0.0) weight_decay(0.0) : tensor<8xf32>
  return
}

// -----

// Dampening is a fraction of the gradient to drop.
func.func @sgd_dampening_above_one(%p: tensor<8xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{expected dampening in [0, 1], but got 1.500000e+00}}
  %np, %nb = tx.sgd params(%p) grads(%p) momentum_buffer(%p) lr(%lr)
      momentum(0.9) dampening(1.5) weight_decay(0.0) : tensor<8xf32>
  return
}

// -----

// SGD's L2 decay is checked like Adam's.
func.func @sgd_weight_decay_negative(%p: tensor<8xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{expected weight_decay to be finite and >= 0, but got -1.000000e+00}}
  %np, %nb = tx.sgd params(%p) grads(%p) momentum_buffer(%p) lr(%lr)
      momentum(0.9) dampening(0.0) weight_decay(-1.0) : tensor<8xf32>
  return
}

// -----

// Nesterov needs momentum and no dampening (torch.optim.SGD refuses it too).
func.func @sgd_nesterov_with_dampening(%p: tensor<8xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{expected momentum > 0 and dampening = 0 with nesterov, but got momentum 9.000000e-01 and dampening 1.000000e-01}}
  %np, %nb = tx.sgd params(%p) grads(%p) momentum_buffer(%p) lr(%lr)
      momentum(0.9) dampening(0.1) weight_decay(0.0) nesterov : tensor<8xf32>
  return
}
