// RUN: txopt-opt %s --split-input-file --verify-diagnostics

// One case per verifier branch and per result-type inference failure of
// tx.max / tx.min, tx.gather_nd and tx.cum_sum (TxOps.cpp). Inference runs
// while parsing, so its errors are reported at the op by the parser.

// max: operands of one element type.
func.func @max_element_types(%a: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error @+1 {{expected operands of one element type, but got 'f32' and 'f16'}}
  %0 = tx.max %a, %b : tensor<4xf32>, tensor<4xf16>
  return
}

// -----

// min: broadcastable shapes.
func.func @min_not_broadcastable(%a: tensor<4x3xi64>, %b: tensor<2xi64>) {
  // expected-error @+1 {{expected broadcastable operand shapes, but got [4, 3] and [2]}}
  %0 = tx.min %a, %b : tensor<4x3xi64>, tensor<2xi64>
  return
}

// -----

// max: inference rejects a dynamic dim before doing shape arithmetic on it.
func.func @max_dynamic(%a: tensor<?xf32>) {
  // expected-error @+1 {{expected statically shaped tensor operands, but got 'tensor<?xf32>'}}
  %0 = tx.max %a, %a : tensor<?xf32>, tensor<?xf32>
  return
}

// -----

// gather_nd (C1): batch_dims below the rank of both operands.
func.func @gather_nd_batch_dims_too_large(%d: tensor<2x3xf32>, %i: tensor<2x1xi64>) {
  // expected-error @+1 {{expected batch_dims in [0, 2), but got 2}}
  %0 = tx.gather_nd %d, %i {batch_dims = 2} : tensor<2x3xf32>, tensor<2x1xi64>
  return
}

// -----

// gather_nd (C1): never negative.
func.func @gather_nd_batch_dims_negative(%d: tensor<2x3xf32>, %i: tensor<2x1xi64>) {
  // expected-error @+1 {{expected batch_dims in [0, 2), but got -1}}
  %0 = tx.gather_nd %d, %i {batch_dims = -1} : tensor<2x3xf32>, tensor<2x1xi64>
  return
}

// -----

// gather_nd (C1): 0-d indices hold no tuple.
func.func @gather_nd_scalar_indices(%d: tensor<2x3xf32>, %i: tensor<i64>) {
  // expected-error @+1 {{expected batch_dims in [0, 0), but got 0}}
  %0 = tx.gather_nd %d, %i : tensor<2x3xf32>, tensor<i64>
  return
}

// -----

// gather_nd (C2): batch dims agree.
func.func @gather_nd_batch_mismatch(%d: tensor<2x3x4xf32>, %i: tensor<3x1xi64>) {
  // expected-error @+1 {{expected the first 1 dims of indices and data to match, but got [3, 1] and [2, 3, 4]}}
  %0 = tx.gather_nd %d, %i {batch_dims = 1} : tensor<2x3x4xf32>, tensor<3x1xi64>
  return
}

// -----

// gather_nd (C3): a tuple addresses at most the dims after the batch dims.
func.func @gather_nd_tuple_too_long(%d: tensor<2x3xf32>, %i: tensor<4x3xi64>) {
  // expected-error @+1 {{expected index tuples of length in [1, 2], but got 3}}
  %0 = tx.gather_nd %d, %i : tensor<2x3xf32>, tensor<4x3xi64>
  return
}

// -----

// gather_nd (C3): and at least one.
func.func @gather_nd_empty_tuple(%d: tensor<2x3xf32>, %i: tensor<4x0xi64>) {
  // expected-error @+1 {{expected index tuples of length in [1, 2], but got 0}}
  %0 = tx.gather_nd %d, %i : tensor<2x3xf32>, tensor<4x0xi64>
  return
}

// -----

// gather_nd: indices are i32 or i64 (ODS constraint).
func.func @gather_nd_float_indices(%d: tensor<2x3xf32>, %i: tensor<4x1xf32>) {
  // expected-error @+1 {{operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values}}
  %0 = "tx.gather_nd"(%d, %i) : (tensor<2x3xf32>, tensor<4x1xf32>) -> tensor<4x3xf32>
  return
}

// -----

// cum_sum: the axis lies within the rank.
func.func @cum_sum_axis(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'tx.cum_sum' op expected axis in [-2, 2), but got 2}}
  %0 = tx.cum_sum %x axis(2) : tensor<2x3xf32>
  return
}

// -----

// cum_sum: ONNX defines it for rank >= 1 only.
func.func @cum_sum_scalar(%x: tensor<f32>) {
  // expected-error @+1 {{'tx.cum_sum' op expected an input of rank at least 1}}
  %0 = tx.cum_sum %x axis(0) : tensor<f32>
  return
}

// -----

// cum_sum: the result has the input's type.
func.func @cum_sum_result_type(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'tx.cum_sum' op requires the same type for all operands and results}}
  %0 = "tx.cum_sum"(%x) <{axis = 0 : i64}> : (tensor<2x3xf32>) -> tensor<2x3xf16>
  return
}
