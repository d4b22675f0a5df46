// RUN: txopt-opt %s --split-input-file --tx-pad-loss-classes | FileCheck %s

// tx-pad-loss-classes: a language model's head whose vocabulary (1024 or
// more classes) is not a multiple of 8 is padded to the next multiple
// before its loss, so the GEMMs of the logits and their gradients get
// 16-byte-aligned rows; the padded logits are -30000 (probability 0).

// BERT's form: a tied embedding [C, K] transposed into the head, a [C]
// bias, the logits flattened to rows. The table is padded before its
// transpose, the bias padded with -30000, the reshape and the loss follow
// the padded width; the old head is gone.
// CHECK-LABEL: func.func @tied_with_bias
// CHECK:      %[[WP:.*]] = tx.pad %arg1 pads [0, 0, 2, 0] value(0.000000e+00) : tensor<1030x64xf32>
// CHECK-NEXT: %[[WT:.*]] = tx.transpose %[[WP]] perm [1, 0] : tensor<1032x64xf32>
// CHECK-NEXT: %[[Y:.*]] = tx.matmul %arg0, %[[WT]] : tensor<2x16x64xf32>, tensor<64x1032xf32>
// CHECK-NEXT: %[[BP:.*]] = tx.pad %arg2 pads [0, 2] value(-3.000000e+04) : tensor<1030xf32>
// CHECK-NEXT: %[[Z:.*]] = tx.add %[[Y]], %[[BP]] : tensor<2x16x1032xf32>, tensor<1032xf32>
// CHECK-NEXT: %[[R:.*]] = tx.reshape %[[Z]] : tensor<2x16x1032xf32> -> tensor<32x1032xf32>
// CHECK-NEXT: %[[L:.*]] = tx.softmax_cross_entropy_loss %[[R]], %arg3 reduction(mean) {ignore_index = -100 : i64, tx.padded_classes = 1030 : i64} : tensor<32x1032xf32>, tensor<32xi64>
// CHECK-NEXT: return %[[L]]
// CHECK-NOT:  1030x
func.func @tied_with_bias(%x: tensor<2x16x64xf32>, %wte: tensor<1030x64xf32>, %b: tensor<1030xf32>,
                          %labels: tensor<32xi64>) -> tensor<f32> {
  %wt = tx.transpose %wte perm [1, 0] : tensor<1030x64xf32>
  %y = tx.matmul %x, %wt : tensor<2x16x64xf32>, tensor<64x1030xf32>
  %z = tx.add %y, %b : tensor<2x16x1030xf32>, tensor<1030xf32>
  %r = tx.reshape %z : tensor<2x16x1030xf32> -> tensor<32x1030xf32>
  %loss = tx.softmax_cross_entropy_loss %r, %labels reduction(mean) {ignore_index = -100} : tensor<32x1030xf32>, tensor<32xi64>
  return %loss : tensor<f32>
}

// -----

// Llama's form: an untied [K, C] head without a bias, rows of logits
// straight from the GEMM. The weight gets zero columns; the padded
// classes get -30000 from a bias of zeros padded like a model's bias.
// CHECK-LABEL: func.func @untied_no_bias
// CHECK:      %[[WP:.*]] = tx.pad %arg1 pads [0, 0, 0, 3] value(0.000000e+00) : tensor<64x1037xf32>
// CHECK-NEXT: %[[Y:.*]] = tx.matmul %arg0, %[[WP]] : tensor<32x64xf32>, tensor<64x1040xf32>
// CHECK-NEXT: %[[ZERO:.*]] = tx.constant dense<0.000000e+00> : tensor<1037xf32>
// CHECK-NEXT: %[[B:.*]] = tx.pad %[[ZERO]] pads [0, 3] value(-3.000000e+04) : tensor<1037xf32>
// CHECK-NEXT: %[[Z:.*]] = tx.add %[[Y]], %[[B]] : tensor<32x1040xf32>, tensor<1040xf32>
// CHECK-NEXT: tx.softmax_cross_entropy_loss %[[Z]], %arg2 reduction(sum) {tx.padded_classes = 1037 : i64} : tensor<32x1040xf32>, tensor<32xi64>
func.func @untied_no_bias(%x: tensor<32x64xf32>, %w: tensor<64x1037xf32>, %labels: tensor<32xi64>) -> tensor<f32> {
  %y = tx.matmul %x, %w : tensor<32x64xf32>, tensor<64x1037xf32>
  %loss = tx.softmax_cross_entropy_loss %y, %labels reduction(sum) : tensor<32x1037xf32>, tensor<32xi64>
  return %loss : tensor<f32>
}

// -----

// Must not fire: an aligned vocabulary (1032 classes, rows of 2064 bytes
// in bf16) needs no padding.
// CHECK-LABEL: func.func @aligned
// CHECK-NOT:  tx.pad
// CHECK:      tx.softmax_cross_entropy_loss %{{.*}} : tensor<32x1032xf32>
func.func @aligned(%x: tensor<32x64xf32>, %w: tensor<64x1032xf32>, %labels: tensor<32xi64>) -> tensor<f32> {
  %y = tx.matmul %x, %w : tensor<32x64xf32>, tensor<64x1032xf32>
  %loss = tx.softmax_cross_entropy_loss %y, %labels reduction(mean) : tensor<32x1032xf32>, tensor<32xi64>
  return %loss : tensor<f32>
}

// -----

// Must not fire: fewer than 1024 classes (a classifier's head).
// CHECK-LABEL: func.func @few_classes
// CHECK-NOT:  tx.pad
// CHECK:      tx.softmax_cross_entropy_loss %{{.*}} : tensor<32x1001xf32>
func.func @few_classes(%x: tensor<32x64xf32>, %w: tensor<64x1001xf32>, %labels: tensor<32xi64>) -> tensor<f32> {
  %y = tx.matmul %x, %w : tensor<32x64xf32>, tensor<64x1001xf32>
  %loss = tx.softmax_cross_entropy_loss %y, %labels reduction(mean) : tensor<32x1001xf32>, tensor<32xi64>
  return %loss : tensor<f32>
}

// -----

// Must not fire: class weights (they would need padding too).
// CHECK-LABEL: func.func @class_weights
// CHECK-NOT:  tx.pad
// CHECK:      tx.softmax_cross_entropy_loss %{{.*}}, %{{.*}}, %arg3 reduction(mean) : tensor<32x1030xf32>
func.func @class_weights(%x: tensor<32x64xf32>, %w: tensor<64x1030xf32>, %labels: tensor<32xi64>,
                         %cw: tensor<1030xf32>) -> tensor<f32> {
  %y = tx.matmul %x, %w : tensor<32x64xf32>, tensor<64x1030xf32>
  %loss = tx.softmax_cross_entropy_loss %y, %labels, %cw reduction(mean) : tensor<32x1030xf32>, tensor<32xi64>, tensor<1030xf32>
  return %loss : tensor<f32>
}

// -----

// Must not fire: the logits are also an output (padding would change what
// the caller reads).
// CHECK-LABEL: func.func @logits_returned
// CHECK-NOT:  tx.pad
// CHECK:      return %{{.*}}, %{{.*}} : tensor<f32>, tensor<32x1030xf32>
func.func @logits_returned(%x: tensor<32x64xf32>, %w: tensor<64x1030xf32>, %labels: tensor<32xi64>)
    -> (tensor<f32>, tensor<32x1030xf32>) {
  %y = tx.matmul %x, %w : tensor<32x64xf32>, tensor<64x1030xf32>
  %loss = tx.softmax_cross_entropy_loss %y, %labels reduction(mean) : tensor<32x1030xf32>, tensor<32xi64>
  return %loss, %y : tensor<f32>, tensor<32x1030xf32>
}

// -----

// Must not fire: scores that are not a GEMM's output, and scores of rank 3
// (classes on axis 1, as ONNX defines them: not rows).
// CHECK-LABEL: func.func @not_a_head
// CHECK-NOT:  tx.pad
// CHECK:      tx.softmax_cross_entropy_loss %arg0, %arg1 reduction(mean) : tensor<32x1030xf32>
// CHECK:      tx.softmax_cross_entropy_loss %{{.*}}, %arg3 reduction(mean) : tensor<2x1030x16xf32>
func.func @not_a_head(%s: tensor<32x1030xf32>, %labels: tensor<32xi64>, %w: tensor<64x16xf32>,
                      %l3: tensor<2x16xi64>, %x3: tensor<2x1030x64xf32>) -> (tensor<f32>, tensor<f32>) {
  %loss = tx.softmax_cross_entropy_loss %s, %labels reduction(mean) : tensor<32x1030xf32>, tensor<32xi64>
  %y = tx.matmul %x3, %w : tensor<2x1030x64xf32>, tensor<64x16xf32>
  %loss3 = tx.softmax_cross_entropy_loss %y, %l3 reduction(mean) : tensor<2x1030x16xf32>, tensor<2x16xi64>
  return %loss, %loss3 : tensor<f32>, tensor<f32>
}
