// RUN: txopt-opt %s --split-input-file --verify-diagnostics

// The training step's contract (docs/Training.md) is verified by the
// dialect: every tx.* attribute on a module, function, argument or result.

// Valid: a step with every role's attribute (guards against an over-strict
// verifier).
module attributes {tx.target = "sm_90", tx.opset = 18 : i64, tx.source = "m.onnx"} {
  tx.parameter @w = dense<1.0> : tensor<4xbf16>
  func.func @train_step(%w: tensor<4xf32> {tx.name = "w", tx.role = "param", tx.parameter = @w},
                        %m: tensor<4xf32> {tx.name = "w.exp_avg", tx.role = "exp_avg", tx.init = 0.0 : f32},
                        %lr: tensor<f32> {tx.name = "lr", tx.role = "lr", tx.init = 1.0e-3 : f32},
                        %step: tensor<f32> {tx.name = "step", tx.role = "step", tx.init = 0.0 : f32},
                        %key: tensor<i64> {tx.name = "rng_key", tx.role = "rng"},
                        %ids: tensor<2x3xi64> {tx.name = "ids", tx.role = "data"},
                        %lab: tensor<2x3xi64> {tx.name = "labels", tx.role = "labels"})
      -> (tensor<4xf32> {tx.name = "w", tx.next = 0 : i64}, tensor<f32> {tx.name = "loss"})
      attributes {tx.train_step = {optimizer = "adamw"}} {
    return %w, %lr : tensor<4xf32>, tensor<f32>
  }
}

// -----

// expected-error @+1 {{unknown tx.role "weights"}}
func.func @unknown_role(%w: tensor<4xf32> {tx.role = "weights"}) {
  return
}

// -----

// expected-error @+1 {{argument with tx.role 'lr' must be tensor<f32>, but got 'tensor<4xf32>'}}
func.func @lr_not_scalar(%lr: tensor<4xf32> {tx.role = "lr"}) {
  return
}

// -----

// expected-error @+1 {{argument with tx.role 'rng' must be tensor<i64>, but got 'tensor<f32>'}}
func.func @rng_not_i64(%k: tensor<f32> {tx.role = "rng"}) {
  return
}

// -----

// expected-error @+1 {{argument with tx.role 'param' must be a float tensor, but got 'tensor<4xi64>'}}
func.func @param_not_float(%p: tensor<4xi64> {tx.role = "param"}) {
  return
}

// -----

// expected-error @+1 {{argument with tx.role 'labels' must be an integer tensor, but got 'tensor<4xf32>'}}
func.func @labels_not_int(%l: tensor<4xf32> {tx.role = "labels"}) {
  return
}

// -----

// A packed scale is [N] (one entry per cast site), never [N, M].
// expected-error @+1 {{argument with tx.role 'fp8_scale' must be tensor<f32> or tensor<Nxf32>, but got 'tensor<2x2xf32>'}}
func.func @fp8_scale_2d(%s: tensor<2x2xf32> {tx.role = "fp8_scale"}) {
  return
}

// -----

// expected-error @+1 {{argument with tx.role 'fp8_scale_inv' must be tensor<f32> or tensor<Nxf32>, but got 'tensor<2xbf16>'}}
func.func @fp8_scale_inv_bf16(%s: tensor<2xbf16> {tx.role = "fp8_scale_inv"}) {
  return
}

// -----

// Valid: packed FP8 state with its sites named, and a single-site scale.
func.func @fp8_packed_state_ok(
    %h: tensor<2x4xf32> {tx.role = "fp8_amax_history", tx.fp8_sites = ["mm.lhs", "mm.rhs"]},
    %s: tensor<2xf32> {tx.role = "fp8_scale", tx.fp8_sites = ["mm.lhs", "mm.rhs"]},
    %one: tensor<f32> {tx.role = "fp8_scale"}) {
  return
}

// -----

// expected-error @+1 {{expected tx.fp8_sites to name one site per row of 'tensor<3xf32>', but got 2}}
func.func @fp8_sites_count(%s: tensor<3xf32> {tx.role = "fp8_scale", tx.fp8_sites = ["a", "b"]}) {
  return
}

// -----

// expected-error @+1 {{expected tx.fp8_sites to be an array of strings, but got [1, 2]}}
func.func @fp8_sites_not_strings(%s: tensor<2xf32> {tx.role = "fp8_scale", tx.fp8_sites = [1, 2]}) {
  return
}

// -----

// expected-error @+1 {{expected tx.fp8_sites to name one site per row of 'tensor<f32>', but got 1}}
func.func @fp8_sites_on_scalar(%s: tensor<f32> {tx.role = "fp8_scale", tx.fp8_sites = ["a"]}) {
  return
}

// -----

// expected-error @+1 {{expected tx.name to be a non-empty string, but got ""}}
func.func @empty_name(%a: tensor<4xf32> {tx.name = ""}) {
  return
}

// -----

// expected-error @+1 {{expected tx.init to be a number, but got "zero"}}
func.func @init_not_number(%a: tensor<4xf32> {tx.init = "zero"}) {
  return
}

// -----

// expected-error @+1 {{tx.parameter names @missing, which is not a tx.parameter of the module}}
func.func @parameter_missing(%a: tensor<4xf32> {tx.parameter = @missing}) {
  return
}

// -----

tx.parameter @w = dense<1.0> : tensor<4xf32>
// expected-error @+1 {{expected the argument of tx.parameter @w to have shape of 'tensor<4xf32>', but got 'tensor<8xf32>'}}
func.func @parameter_shape(%a: tensor<8xf32> {tx.parameter = @w}) {
  return
}

// -----

// expected-error @+1 {{expected tx.parameter to name a tx.parameter, but got "w"}}
func.func @parameter_not_symbol(%a: tensor<4xf32> {tx.parameter = "w"}) {
  return
}

// -----

// expected-error @+1 {{unknown tx argument attribute 'tx.colour'}}
func.func @unknown_arg_attr(%a: tensor<4xf32> {tx.colour = "red"}) {
  return
}

// -----

// expected-error @+1 {{expected tx.next to be an argument index in [0, 1), but got 3 : i64}}
func.func @next_out_of_range(%a: tensor<4xf32>) -> (tensor<4xf32> {tx.next = 3 : i64}) {
  return %a : tensor<4xf32>
}

// -----

// expected-error @+1 {{expected result 0 (tx.next = 0) to have the argument's type 'tensor<4xf32>', but got 'tensor<8xf32>'}}
func.func @next_type_mismatch(%a: tensor<4xf32>, %b: tensor<8xf32>) -> (tensor<8xf32> {tx.next = 0 : i64}) {
  return %b : tensor<8xf32>
}

// -----

// expected-error @+1 {{unknown tx result attribute 'tx.role'}}
func.func @role_on_result(%a: tensor<4xf32>) -> (tensor<4xf32> {tx.role = "param"}) {
  return %a : tensor<4xf32>
}

// -----

// expected-error @+1 {{expected tx.train_step to be a dictionary, but got "adamw"}}
func.func @recipe_not_dict() attributes {tx.train_step = "adamw"} {
  return
}

// -----

// expected-error @+1 {{expected tx.target to be a module's "sm_XY" (XY >= 50), but got "gfx942"}}
module attributes {tx.target = "gfx942"} {
}

// -----

// expected-error @+1 {{expected tx.opset to be a module's integer}}
module attributes {tx.opset = "18"} {
}

// -----

// expected-error @+1 {{expected 'tx.model_dir' to be a module's string}}
module attributes {tx.model_dir = 3 : i64} {
}

// -----

// expected-error @+1 {{'tx.train_step' belongs on a function}}
module attributes {tx.train_step = {optimizer = "adamw"}} {
}

// -----

// tx-untie-parameters' records: a dictionary of non-empty name arrays
// (untied) and of reasons (tied), on a module.
module attributes {tx.untied_parameters = {w = ["w.1"]}, tx.tied_parameters = {e = "an embedding reused as the LM head"}} {
}

// -----

// expected-error @+1 {{expected 'tx.untied_parameters' to be a module's dictionary of non-empty arrays of names}}
module attributes {tx.untied_parameters = {w = []}} {
}

// -----

// expected-error @+1 {{expected 'tx.untied_parameters' to be a module's dictionary of non-empty arrays of names}}
module attributes {tx.untied_parameters = {w = [1]}} {
}

// -----

// expected-error @+1 {{expected 'tx.tied_parameters' to be a module's dictionary of strings (the reasons)}}
module attributes {tx.tied_parameters = {w = 1}} {
}

// -----

// expected-error @+1 {{expected 'tx.tied_parameters' to be a module's dictionary of strings (the reasons)}}
func.func @f() attributes {tx.tied_parameters = {w = "x"}} {
  return
}

// -----

// tx-pad-loss-classes' record on a padded loss: the class count before
// padding, below the rows' width; on nothing else.
func.func @padded(%s: tensor<4x1032xf32>, %l: tensor<4xi64>) -> tensor<f32> {
  %loss = tx.softmax_cross_entropy_loss %s, %l reduction(mean) {tx.padded_classes = 1030 : i64} : tensor<4x1032xf32>, tensor<4xi64>
  return %loss : tensor<f32>
}

// -----

func.func @padded_wider(%s: tensor<4x1032xf32>, %l: tensor<4xi64>) -> tensor<f32> {
  // expected-error @+1 {{expected tx.padded_classes to be a tx.softmax_cross_entropy_loss's class count before padding (> 0, below its rows' width), but got 1032 : i64}}
  %loss = tx.softmax_cross_entropy_loss %s, %l reduction(mean) {tx.padded_classes = 1032 : i64} : tensor<4x1032xf32>, tensor<4xi64>
  return %loss : tensor<f32>
}

// -----

func.func @padded_not_a_loss(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{expected tx.padded_classes to be a tx.softmax_cross_entropy_loss's class count before padding}}
  %y = tx.neg %x {tx.padded_classes = 2 : i64} : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// expected-error @+1 {{unknown tx attribute 'tx.colour'}}
module attributes {tx.colour = "red"} {
}

// -----

// The functions beside a step name it with a symbol reference: the
// micro-step, the validation and the logits functions.
func.func @train_step() {
  return
}
func.func @eval() attributes {tx.eval = @train_step} {
  return
}
func.func @logits() attributes {tx.logits = @train_step} {
  return
}
// expected-error @+1 {{expected tx.logits to be a function's symbol reference to its step, but got "train_step"}}
func.func @bad_logits() attributes {tx.logits = "train_step"} {
  return
}

// -----

// expected-error @+1 {{expected tx.eval to be a function's symbol reference to its step, but got @train_step}}
module attributes {tx.eval = @train_step} {
}

// -----

// expected-error @+1 {{expected tx.micro_step to be a function's symbol reference to its step, but got 3 : i64}}
func.func @bad_micro() attributes {tx.micro_step = 3 : i64} {
  return
}

// -----

// The whole step: every argument has a role.
// expected-error @+1 {{argument 1 of a training step has no tx.role}}
func.func @train_step_unroled(%w: tensor<4xf32> {tx.role = "param"}, %x: tensor<4xf32>)
    -> (tensor<4xf32> {tx.next = 0 : i64})
    attributes {tx.train_step = {optimizer = "adamw"}} {
  return %w : tensor<4xf32>
}

// -----

// The whole step: one result per argument carried into the next step.
// expected-error @+1 {{results 0 and 1 both carry argument 0 into the next step (tx.next)}}
func.func @train_step_twice(%w: tensor<4xf32> {tx.role = "param"})
    -> (tensor<4xf32> {tx.next = 0 : i64}, tensor<4xf32> {tx.next = 0 : i64})
    attributes {tx.train_step = {optimizer = "adamw"}} {
  return %w, %w : tensor<4xf32>, tensor<4xf32>
}

// -----

// Must not fire: the same two shapes without tx.train_step are not a step.
func.func @not_a_step(%w: tensor<4xf32> {tx.role = "param"}, %x: tensor<4xf32>)
    -> (tensor<4xf32> {tx.next = 0 : i64}, tensor<4xf32> {tx.next = 0 : i64}) {
  return %w, %w : tensor<4xf32>, tensor<4xf32>
}

// -----

// tx.shard_of (tx-data-parallel): this rank's shard of a tensor of that
// shape, ceil(n / N) elements for the step's N ranks.
func.func @shard_ok(%m: tensor<3xf32> {tx.role = "exp_avg", tx.shard_of = array<i64: 3, 2>})
    attributes {tx.train_step = {data_parallel = 2 : i64}} {
  return
}

// -----

// expected-error @+1 {{expected a float shard of 2 elements (ceil(6 / 4)) for tx.shard_of [3, 2], but got 'tensor<3xf32>'}}
func.func @shard_size(%m: tensor<3xf32> {tx.role = "exp_avg", tx.shard_of = array<i64: 3, 2>})
    attributes {tx.train_step = {data_parallel = 4 : i64}} {
  return
}

// -----

// expected-error @+1 {{tx.shard_of belongs on an argument of a data-parallel step (tx.train_step with data_parallel = N)}}
func.func @shard_plain(%m: tensor<3xf32> {tx.role = "exp_avg", tx.shard_of = array<i64: 3>}) {
  return
}

// -----

// expected-error @+1 {{expected tx.shard_of to be a shape (array<i64>), but got [3, 2]}}
func.func @shard_not_shape(%m: tensor<3xf32> {tx.role = "exp_avg", tx.shard_of = [3, 2]})
    attributes {tx.train_step = {data_parallel = 2 : i64}} {
  return
}
