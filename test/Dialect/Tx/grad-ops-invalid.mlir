// RUN: txopt-opt %s --split-input-file --verify-diagnostics

// One case per verifier branch of TxGradOps.cpp, named after the constraint
// (Cn) of the op's description it checks.

// gather_grad (C1): axis within the result's rank.
func.func @gather_grad_axis_out_of_range(%g: tensor<4x6xf32>, %i: tensor<4xi64>) {
  // expected-error @+1 {{expected axis in [0, 2), but got 2}}
  %r = tx.gather_grad %g, %i axis(2) : tensor<4x6xf32>, tensor<4xi64> -> tensor<10x6xf32>
  return
}

// -----

// gather_grad (C1): the axis is normalized by the rule, never negative here.
func.func @gather_grad_negative_axis(%g: tensor<4x6xf32>, %i: tensor<4xi64>) {
  // expected-error @+1 {{expected axis in [0, 2), but got -2}}
  %r = tx.gather_grad %g, %i axis(-2) : tensor<4x6xf32>, tensor<4xi64> -> tensor<10x6xf32>
  return
}

// -----

// gather_grad (C2): grad has the shape of the gather's result.
func.func @gather_grad_shape_mismatch(%g: tensor<4x5xf32>, %i: tensor<4xi64>) {
  // expected-error @+1 {{expected grad shape [4, 6], but got [4, 5]}}
  %r = tx.gather_grad %g, %i axis(0) : tensor<4x5xf32>, tensor<4xi64> -> tensor<10x6xf32>
  return
}

// -----

// gather_grad (C3)
func.func @gather_grad_element_type(%g: tensor<4x6xf16>, %i: tensor<4xi64>) {
  // expected-error @+1 {{expected grad element type 'f32', but got 'f16'}}
  %r = tx.gather_grad %g, %i axis(0) : tensor<4x6xf16>, tensor<4xi64> -> tensor<10x6xf32>
  return
}

// -----

// gather_grad: the ODS constraints still apply (integer grads make no sense).
func.func @gather_grad_integer(%g: tensor<4x6xi32>, %i: tensor<4xi64>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of floating-point values}}
  %r = tx.gather_grad %g, %i axis(0) : tensor<4x6xi32>, tensor<4xi64> -> tensor<10x6xi32>
  return
}

// -----

// gather_elements_grad (C1): ranks agree.
func.func @gather_elements_grad_rank(%g: tensor<4xf32>, %i: tensor<4xi64>) {
  // expected-error @+1 {{expected grad and indices of rank 2, but got 1 and 1}}
  %r = tx.gather_elements_grad %g, %i axis(0) : tensor<4xf32>, tensor<4xi64> -> tensor<4x3xf32>
  return
}

// -----

// gather_elements_grad (C1): axis in range.
func.func @gather_elements_grad_axis(%g: tensor<4x1xf32>, %i: tensor<4x1xi64>) {
  // expected-error @+1 {{expected axis in [0, 2), but got 3}}
  %r = tx.gather_elements_grad %g, %i axis(3) : tensor<4x1xf32>, tensor<4x1xi64> -> tensor<4x3xf32>
  return
}

// -----

// gather_elements_grad (C2)
func.func @gather_elements_grad_shape(%g: tensor<4x2xf32>, %i: tensor<4x1xi64>) {
  // expected-error @+1 {{expected grad shape [4, 1], but got [4, 2]}}
  %r = tx.gather_elements_grad %g, %i axis(1) : tensor<4x2xf32>, tensor<4x1xi64> -> tensor<4x3xf32>
  return
}

// -----

// gather_elements_grad (C3): off the axis, indices fit in the result.
func.func @gather_elements_grad_indices_too_large(%g: tensor<5x1xf32>, %i: tensor<5x1xi64>) {
  // expected-error @+1 {{expected indices dim 0 of at most 4, but got 5}}
  %r = tx.gather_elements_grad %g, %i axis(1) : tensor<5x1xf32>, tensor<5x1xi64> -> tensor<4x3xf32>
  return
}

// -----

// gather_elements_grad (C4)
func.func @gather_elements_grad_element_type(%g: tensor<4x1xbf16>, %i: tensor<4x1xi64>) {
  // expected-error @+1 {{expected grad element type 'f32', but got 'bf16'}}
  %r = tx.gather_elements_grad %g, %i axis(1) : tensor<4x1xbf16>, tensor<4x1xi64> -> tensor<4x3xf32>
  return
}

// -----

// slice_grad (C1)
func.func @slice_grad_attribute_length(%g: tensor<2x2xf32>) {
  // expected-error @+1 {{expected grad, offsets and strides of rank 2, but got 2, 1 and 2}}
  %r = tx.slice_grad %g offsets [0] strides [1, 1] : tensor<2x2xf32> -> tensor<4x4xf32>
  return
}

// -----

// slice_grad (C2)
func.func @slice_grad_zero_stride(%g: tensor<2xf32>) {
  // expected-error @+1 {{expected non-zero strides, but got [0]}}
  %r = tx.slice_grad %g offsets [0] strides [0] : tensor<2xf32> -> tensor<4xf32>
  return
}

// -----

// slice_grad (C3): the last position 1 + 2 * 2 = 5 is outside [0, 4).
func.func @slice_grad_out_of_range(%g: tensor<3xf32>) {
  // expected-error @+1 {{expected the strided range of dim 0 (offset 1, stride 2, 3 elements) within [0, 4)}}
  %r = tx.slice_grad %g offsets [1] strides [2] : tensor<3xf32> -> tensor<4xf32>
  return
}

// -----

// slice_grad (C3): a negative stride walking below 0.
func.func @slice_grad_negative_out_of_range(%g: tensor<3xf32>) {
  // expected-error @+1 {{expected the strided range of dim 0 (offset 1, stride -1, 3 elements) within [0, 4)}}
  %r = tx.slice_grad %g offsets [1] strides [-1] : tensor<3xf32> -> tensor<4xf32>
  return
}

// -----

// slice_grad (C4)
func.func @slice_grad_element_type(%g: tensor<2xf16>) {
  // expected-error @+1 {{expected grad element type 'f32', but got 'f16'}}
  %r = tx.slice_grad %g offsets [0] strides [2] : tensor<2xf16> -> tensor<4xf32>
  return
}

// -----

// softmax_cross_entropy_grad (C1): scores need a class dim.
func.func @sce_grad_scores_rank(%dl: tensor<f32>, %s: tensor<5xf32>, %l: tensor<5xi64>) {
  // expected-error @+1 {{expected scores of rank at least 2, but got [5]}}
  %r = tx.softmax_cross_entropy_grad %dl, %s, %l reduction(mean) : tensor<f32>, tensor<5xf32>, tensor<5xi64>
  return
}

// -----

// softmax_cross_entropy_grad (C1)
func.func @sce_grad_labels_shape(%dl: tensor<f32>, %s: tensor<4x5xf32>, %l: tensor<5xi64>) {
  // expected-error @+1 {{expected labels shape [4], but got [5]}}
  %r = tx.softmax_cross_entropy_grad %dl, %s, %l reduction(mean) : tensor<f32>, tensor<4x5xf32>, tensor<5xi64>
  return
}

// -----

// softmax_cross_entropy_grad (C2): a reduced loss has a scalar gradient.
func.func @sce_grad_mean_grad_shape(%dl: tensor<4xf32>, %s: tensor<4x5xf32>, %l: tensor<4xi64>) {
  // expected-error @+1 {{expected grad shape [] for reduction 'mean', but got [4]}}
  %r = tx.softmax_cross_entropy_grad %dl, %s, %l reduction(mean) : tensor<4xf32>, tensor<4x5xf32>, tensor<4xi64>
  return
}

// -----

// softmax_cross_entropy_grad (C2): an unreduced loss has one per position.
func.func @sce_grad_none_grad_shape(%dl: tensor<f32>, %s: tensor<4x5xf32>, %l: tensor<4xi64>) {
  // expected-error @+1 {{expected grad shape [4] for reduction 'none', but got []}}
  %r = tx.softmax_cross_entropy_grad %dl, %s, %l reduction(none) : tensor<f32>, tensor<4x5xf32>, tensor<4xi64>
  return
}

// -----

// softmax_cross_entropy_grad (C3)
func.func @sce_grad_element_type(%dl: tensor<f64>, %s: tensor<4x5xf32>, %l: tensor<4xi64>) {
  // expected-error @+1 {{expected grad element type 'f32', but got 'f64'}}
  %r = tx.softmax_cross_entropy_grad %dl, %s, %l reduction(sum) : tensor<f64>, tensor<4x5xf32>, tensor<4xi64>
  return
}

// -----

// softmax_cross_entropy_grad (C3): weights too.
func.func @sce_grad_weights_element_type(%dl: tensor<f32>, %s: tensor<4x5xf32>, %l: tensor<4xi64>, %w: tensor<5xf16>) {
  // expected-error @+1 {{expected weights element type 'f32', but got 'f16'}}
  %r = tx.softmax_cross_entropy_grad %dl, %s, %l, %w reduction(sum) : tensor<f32>, tensor<4x5xf32>, tensor<4xi64>, tensor<5xf16>
  return
}

// -----

// softmax_cross_entropy_grad (C4)
func.func @sce_grad_weights_shape(%dl: tensor<f32>, %s: tensor<4x5xf32>, %l: tensor<4xi64>, %w: tensor<4xf32>) {
  // expected-error @+1 {{expected weights shape [5], but got [4]}}
  %r = tx.softmax_cross_entropy_grad %dl, %s, %l, %w reduction(sum) : tensor<f32>, tensor<4x5xf32>, tensor<4xi64>, tensor<4xf32>
  return
}

// -----

// gather_nd_grad (C1)
func.func @gather_nd_grad_batch_dims(%g: tensor<2x4xf32>, %i: tensor<2x1xi64>) {
  // expected-error @+1 {{expected batch_dims in [0, 2), but got 2}}
  %r = tx.gather_nd_grad %g, %i batch_dims(2) : tensor<2x4xf32>, tensor<2x1xi64> -> tensor<2x3x4xf32>
  return
}

// -----

// gather_nd_grad (C2)
func.func @gather_nd_grad_batch_mismatch(%g: tensor<3x4xf32>, %i: tensor<3x1xi64>) {
  // expected-error @+1 {{expected the first 1 dims of indices and data to match, but got [3, 1] and [2, 3, 4]}}
  %r = tx.gather_nd_grad %g, %i batch_dims(1) : tensor<3x4xf32>, tensor<3x1xi64> -> tensor<2x3x4xf32>
  return
}

// -----

// gather_nd_grad (C3)
func.func @gather_nd_grad_tuple_length(%g: tensor<5xf32>, %i: tensor<5x3xi64>) {
  // expected-error @+1 {{expected index tuples of length in [1, 2], but got 3}}
  %r = tx.gather_nd_grad %g, %i batch_dims(0) : tensor<5xf32>, tensor<5x3xi64> -> tensor<3x4xf32>
  return
}

// -----

// gather_nd_grad (C4): grad has the shape tx.gather_nd infers.
func.func @gather_nd_grad_shape(%g: tensor<5x3xf32>, %i: tensor<5x1xi64>) {
  // expected-error @+1 {{expected grad shape [5, 4], but got [5, 3]}}
  %r = tx.gather_nd_grad %g, %i batch_dims(0) : tensor<5x3xf32>, tensor<5x1xi64> -> tensor<3x4xf32>
  return
}

// -----

// gather_nd_grad (C5)
func.func @gather_nd_grad_element_type(%g: tensor<5x4xf16>, %i: tensor<5x1xi64>) {
  // expected-error @+1 {{expected grad element type 'f32', but got 'f16'}}
  %r = tx.gather_nd_grad %g, %i batch_dims(0) : tensor<5x4xf16>, tensor<5x1xi64> -> tensor<3x4xf32>
  return
}
