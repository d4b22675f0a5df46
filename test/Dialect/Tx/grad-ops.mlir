// RUN: txopt-opt %s --split-input-file | FileCheck %s
// RUN: txopt-opt %s --split-input-file --mlir-print-op-generic | txopt-opt --split-input-file | FileCheck %s

// Round trip of the gradient-only ops (TxGradOps.td), through the custom and
// the generic form.

// An embedding table's gradient: negative axis-0 indices are allowed.
// CHECK-LABEL: func.func @gather_grad_embedding
// CHECK-SAME:    %[[G:[^:]+]]: tensor<2x32x128xf32>, %[[IDS:[^:]+]]: tensor<2x32xi64>
// CHECK:         %[[R:.+]] = tx.gather_grad %[[G]], %[[IDS]] axis(0) : tensor<2x32x128xf32>, tensor<2x32xi64> -> tensor<512x128xf32>
// CHECK:         return %[[R]]
func.func @gather_grad_embedding(%g: tensor<2x32x128xf32>, %ids: tensor<2x32xi64>) -> tensor<512x128xf32> {
  %r = tx.gather_grad %g, %ids axis(0) : tensor<2x32x128xf32>, tensor<2x32xi64> -> tensor<512x128xf32>
  return %r : tensor<512x128xf32>
}

// -----

// Gather along an inner axis with 0-d indices removes that dim.
// CHECK-LABEL: func.func @gather_grad_inner_axis_scalar_index
// CHECK:         tx.gather_grad %{{.+}}, %{{.+}} axis(1) : tensor<4x6xbf16>, tensor<i32> -> tensor<4x5x6xbf16>
func.func @gather_grad_inner_axis_scalar_index(%g: tensor<4x6xbf16>, %i: tensor<i32>) -> tensor<4x5x6xbf16> {
  %r = tx.gather_grad %g, %i axis(1) : tensor<4x6xbf16>, tensor<i32> -> tensor<4x5x6xbf16>
  return %r : tensor<4x5x6xbf16>
}

// -----

// CHECK-LABEL: func.func @gather_elements_grad_labels
// CHECK:         tx.gather_elements_grad %{{.+}}, %{{.+}} axis(1) : tensor<64x1xf32>, tensor<64x1xi64> -> tensor<64x512xf32>
func.func @gather_elements_grad_labels(%g: tensor<64x1xf32>, %l: tensor<64x1xi64>) -> tensor<64x512xf32> {
  %r = tx.gather_elements_grad %g, %l axis(1) : tensor<64x1xf32>, tensor<64x1xi64> -> tensor<64x512xf32>
  return %r : tensor<64x512xf32>
}

// -----

// A reversed, strided slice (x[:, 7:0:-2]).
// CHECK-LABEL: func.func @slice_grad_negative_stride
// CHECK:         tx.slice_grad %{{.+}} offsets [0, 7] strides [1, -2] : tensor<3x4xf64> -> tensor<3x8xf64>
func.func @slice_grad_negative_stride(%g: tensor<3x4xf64>) -> tensor<3x8xf64> {
  %r = tx.slice_grad %g offsets [0, 7] strides [1, -2] : tensor<3x4xf64> -> tensor<3x8xf64>
  return %r : tensor<3x8xf64>
}

// -----

// An empty dim may carry any offset.
// CHECK-LABEL: func.func @slice_grad_empty
// CHECK:         tx.slice_grad %{{.+}} offsets [9] strides [3] : tensor<0xf32> -> tensor<4xf32>
func.func @slice_grad_empty(%g: tensor<0xf32>) -> tensor<4xf32> {
  %r = tx.slice_grad %g offsets [9] strides [3] : tensor<0xf32> -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @softmax_cross_entropy_grad_mean
// CHECK-SAME:    %[[DL:[^:]+]]: tensor<f32>, %[[S:[^:]+]]: tensor<64x512xf32>, %[[L:[^:]+]]: tensor<64xi64>
// CHECK:         %[[R:.+]] = tx.softmax_cross_entropy_grad %[[DL]], %[[S]], %[[L]] reduction(mean) {ignore_index = -100 : i64} : tensor<f32>, tensor<64x512xf32>, tensor<64xi64>
// CHECK:         return %[[R]] : tensor<64x512xf32>
func.func @softmax_cross_entropy_grad_mean(%dl: tensor<f32>, %s: tensor<64x512xf32>, %l: tensor<64xi64>) -> tensor<64x512xf32> {
  %r = tx.softmax_cross_entropy_grad %dl, %s, %l reduction(mean) {ignore_index = -100} : tensor<f32>, tensor<64x512xf32>, tensor<64xi64>
  return %r : tensor<64x512xf32>
}

// -----

// Per-position loss gradient with class weights and extra spatial dims.
// CHECK-LABEL: func.func @softmax_cross_entropy_grad_none_weighted
// CHECK:         tx.softmax_cross_entropy_grad %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} reduction(none) : tensor<2x7xf32>, tensor<2x5x7xf32>, tensor<2x7xi32>, tensor<5xf32>
func.func @softmax_cross_entropy_grad_none_weighted(%dl: tensor<2x7xf32>, %s: tensor<2x5x7xf32>, %l: tensor<2x7xi32>, %w: tensor<5xf32>) -> tensor<2x5x7xf32> {
  %r = tx.softmax_cross_entropy_grad %dl, %s, %l, %w reduction(none) : tensor<2x7xf32>, tensor<2x5x7xf32>, tensor<2x7xi32>, tensor<5xf32>
  return %r : tensor<2x5x7xf32>
}

// -----

// Scatter-add of gathered rows back into a [2, 3, 4] table, one batch dim.
// CHECK-LABEL: func.func @gather_nd_grad_batch_rows
// CHECK-SAME:    %[[G:[^:]+]]: tensor<2x5x4xf32>, %[[I:[^:]+]]: tensor<2x5x1xi64>
// CHECK:         %[[R:.+]] = tx.gather_nd_grad %[[G]], %[[I]] batch_dims(1) : tensor<2x5x4xf32>, tensor<2x5x1xi64> -> tensor<2x3x4xf32>
// CHECK:         return %[[R]]
func.func @gather_nd_grad_batch_rows(%g: tensor<2x5x4xf32>, %i: tensor<2x5x1xi64>) -> tensor<2x3x4xf32> {
  %r = tx.gather_nd_grad %g, %i batch_dims(1) : tensor<2x5x4xf32>, tensor<2x5x1xi64> -> tensor<2x3x4xf32>
  return %r : tensor<2x3x4xf32>
}

// -----

// Full tuples: one element per tuple.
// CHECK-LABEL: func.func @gather_nd_grad_elements
// CHECK:         tx.gather_nd_grad %{{.+}}, %{{.+}} batch_dims(0) : tensor<7xbf16>, tensor<7x2xi32> -> tensor<3x4xbf16>
func.func @gather_nd_grad_elements(%g: tensor<7xbf16>, %i: tensor<7x2xi32>) -> tensor<3x4xbf16> {
  %r = tx.gather_nd_grad %g, %i batch_dims(0) : tensor<7xbf16>, tensor<7x2xi32> -> tensor<3x4xbf16>
  return %r : tensor<3x4xbf16>
}
