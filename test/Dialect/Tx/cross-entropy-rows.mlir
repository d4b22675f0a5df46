// RUN: txopt-opt %s --split-input-file --tx-cross-entropy-rows | FileCheck %s

// tx-cross-entropy-rows: cross-entropy over [N, C, d...] scores (the
// classes on axis 1, as ONNX defines SoftmaxCrossEntropyLoss) becomes the
// same op over [N * d..., C] rows, the form a row kernel reads.

// A mean loss and its gradient over the same scores and labels: one
// transpose and two reshapes shared by both; the gradient back to
// [N, d..., C] and the classes back on axis 1.
// CHECK-LABEL: func.func @mean_and_grad
// CHECK:      %[[T:.*]] = tx.transpose %arg0 perm [0, 2, 1] : tensor<2x10x6xf32>
// CHECK-NEXT: %[[S:.*]] = tx.reshape %[[T]] : tensor<2x6x10xf32> -> tensor<12x10xf32>
// CHECK-NEXT: %[[L:.*]] = tx.reshape %arg1 : tensor<2x6xi64> -> tensor<12xi64>
// CHECK-NEXT: %[[LOSS:.*]] = tx.softmax_cross_entropy_loss %[[S]], %[[L]] reduction(mean) {ignore_index = -100 : i64} : tensor<12x10xf32>, tensor<12xi64>
// CHECK-NOT:  tx.transpose %arg0
// CHECK-NEXT: %[[G:.*]] = tx.softmax_cross_entropy_grad %arg2, %[[S]], %[[L]] reduction(mean) {ignore_index = -100 : i64} : tensor<f32>, tensor<12x10xf32>, tensor<12xi64>
// CHECK-NEXT: %[[U:.*]] = tx.reshape %[[G]] : tensor<12x10xf32> -> tensor<2x6x10xf32>
// CHECK-NEXT: %[[B:.*]] = tx.transpose %[[U]] perm [0, 2, 1] : tensor<2x6x10xf32>
// CHECK-NEXT: return %[[LOSS]], %[[B]]
func.func @mean_and_grad(%s: tensor<2x10x6xf32>, %l: tensor<2x6xi64>, %g: tensor<f32>)
    -> (tensor<f32>, tensor<2x10x6xf32>) {
  %loss = tx.softmax_cross_entropy_loss %s, %l reduction(mean) {ignore_index = -100} : tensor<2x10x6xf32>, tensor<2x6xi64>
  %d = tx.softmax_cross_entropy_grad %g, %s, %l reduction(mean) {ignore_index = -100}
      : tensor<f32>, tensor<2x10x6xf32>, tensor<2x6xi64>
  return %loss, %d : tensor<f32>, tensor<2x10x6xf32>
}

// -----

// Rank 4 ([N, C, H, W], a segmentation map), a per-position loss with class
// weights: the loss reshaped back to [N, H, W]; its gradient takes the
// per-position loss gradient flattened too; the weights carry over.
// CHECK-LABEL: func.func @none_weighted_rank4
// CHECK:      %[[T:.*]] = tx.transpose %arg0 perm [0, 2, 3, 1] : tensor<2x5x3x4xbf16>
// CHECK-NEXT: %[[S:.*]] = tx.reshape %[[T]] : tensor<2x3x4x5xbf16> -> tensor<24x5xbf16>
// CHECK-NEXT: %[[L:.*]] = tx.reshape %arg1 : tensor<2x3x4xi64> -> tensor<24xi64>
// CHECK-NEXT: %[[R:.*]] = tx.softmax_cross_entropy_loss %[[S]], %[[L]], %arg2 reduction(none) : tensor<24x5xbf16>, tensor<24xi64>, tensor<5xbf16>
// CHECK-NEXT: %[[LOSS:.*]] = tx.reshape %[[R]] : tensor<24xbf16> -> tensor<2x3x4xbf16>
// CHECK-NEXT: %[[GF:.*]] = tx.reshape %arg3 : tensor<2x3x4xbf16> -> tensor<24xbf16>
// CHECK-NEXT: %[[G:.*]] = tx.softmax_cross_entropy_grad %[[GF]], %[[S]], %[[L]], %arg2 reduction(none) : tensor<24xbf16>, tensor<24x5xbf16>, tensor<24xi64>, tensor<5xbf16>
// CHECK-NEXT: %[[U:.*]] = tx.reshape %[[G]] : tensor<24x5xbf16> -> tensor<2x3x4x5xbf16>
// CHECK-NEXT: %[[B:.*]] = tx.transpose %[[U]] perm [0, 3, 1, 2] : tensor<2x3x4x5xbf16>
// CHECK-NEXT: return %[[LOSS]], %[[B]]
func.func @none_weighted_rank4(%s: tensor<2x5x3x4xbf16>, %l: tensor<2x3x4xi64>, %w: tensor<5xbf16>,
                               %g: tensor<2x3x4xbf16>) -> (tensor<2x3x4xbf16>, tensor<2x5x3x4xbf16>) {
  %loss = tx.softmax_cross_entropy_loss %s, %l, %w reduction(none) : tensor<2x5x3x4xbf16>, tensor<2x3x4xi64>, tensor<5xbf16>
  %d = tx.softmax_cross_entropy_grad %g, %s, %l, %w reduction(none)
      : tensor<2x3x4xbf16>, tensor<2x5x3x4xbf16>, tensor<2x3x4xi64>, tensor<5xbf16>
  return %loss, %d : tensor<2x3x4xbf16>, tensor<2x5x3x4xbf16>
}

// -----

// Must not fire: rank-2 scores are rows already.
// CHECK-LABEL: func.func @rows_already
// CHECK-NOT:  tx.transpose
// CHECK-NOT:  tx.reshape
// CHECK:      tx.softmax_cross_entropy_loss %arg0, %arg1 reduction(sum) : tensor<12x10xf32>, tensor<12xi64>
// CHECK:      tx.softmax_cross_entropy_grad %arg2, %arg0, %arg1 reduction(sum)
func.func @rows_already(%s: tensor<12x10xf32>, %l: tensor<12xi64>, %g: tensor<f32>)
    -> (tensor<f32>, tensor<12x10xf32>) {
  %loss = tx.softmax_cross_entropy_loss %s, %l reduction(sum) : tensor<12x10xf32>, tensor<12xi64>
  %d = tx.softmax_cross_entropy_grad %g, %s, %l reduction(sum) : tensor<f32>, tensor<12x10xf32>, tensor<12xi64>
  return %loss, %d : tensor<f32>, tensor<12x10xf32>
}

// The rewrite changes no number: a step over [2, 10, 6] scores (a
// per-position loss with class weights and a mean over the same scores,
// Inputs/cross_entropy_rank3.onnxtxt) trains to the same losses on the
// CPU executor, bit for bit, before and after the pass (and the pass did
// fire on it).
// RUN: rm -rf %t && mkdir -p %t
// RUN: txopt %S/Inputs/cross_entropy_rank3.onnxtxt --train -q -o %t/before.mlir
// RUN: txopt-opt %t/before.mlir --tx-cross-entropy-rows -o %t/after.mlir
// RUN: grep -c "tx.softmax_cross_entropy_[a-z]* %[0-9a-z_]*, %[0-9a-z_]*.* : tensor<12x10xf32>" %t/after.mlir | FileCheck %s --check-prefix=FIRED
// FIRED: {{^}}2{{$}}
// RUN: txopt-run %t/before.mlir --steps 4 > %t/before.log
// RUN: txopt-run %t/after.mlir --steps 4 > %t/after.log
// RUN: grep -c "^step" %t/after.log | FileCheck %s --check-prefix=STEPS
// STEPS: {{^}}4{{$}}
// RUN: diff %t/before.log %t/after.log
