// RUN: txopt-opt %s --split-input-file --verify-diagnostics --tx-build-train-step="eval=true" | FileCheck %s
// RUN: txopt-opt %s --split-input-file --verify-diagnostics --tx-build-train-step="eval=true loss-scaling=true" | FileCheck %s --check-prefix=SCALED
// RUN: txopt-opt %s --split-input-file --tx-build-train-step | FileCheck %s --check-prefix=NONE

// The validation function (tx-build-train-step eval=true): the step's
// signature, the loss only. Its numbers (equal to the step's loss on the
// same batch) are checked by test/Training/eval.test.

// Trained parameters come from the step's arguments, a frozen one stays a
// load; dropout is off (model.eval()); no gradient, no update.
// CHECK-LABEL: func.func @train_step(
// CHECK-LABEL: func.func @eval(
// CHECK-SAME:    %[[W:[^:]+]]: tensor<4x3xf32> {tx.name = "w", tx.parameter = @w, tx.role = "param"}
// CHECK-SAME:    %[[X:[^:]+]]: tensor<2x4xf32> {tx.name = "x", tx.role = "data"}
// CHECK-SAME:    -> (tensor<f32> {tx.name = "loss"}) attributes {tx.eval = @train_step}
// CHECK-NOT:     tx.load_parameter @w
// CHECK:         %[[S:.+]] = tx.load_parameter @frozen_scale
// CHECK:         %[[Y:.+]] = tx.matmul %[[X]], %[[W]]
// CHECK-NOT:     tx.dropout
// CHECK:         %[[T:.+]] = tx.mul %[[Y]], %[[S]]
// CHECK:         %[[SQ:.+]] = tx.mul %[[T]], %[[T]]
// CHECK:         %[[L:.+]] = tx.reduce_mean %[[SQ]]
// CHECK-NOT:     tx.adam
// CHECK:         return %[[L]]

// Under loss scaling the loss is the unscaled one.
// SCALED-LABEL: func.func @eval(
// SCALED-NOT:     tx.mul %{{.+}}, %arg{{[0-9]+}} : tensor<f32>, tensor<f32>
// SCALED:         %[[L:.+]] = tx.reduce_mean
// SCALED-NEXT:    return %[[L]]

// Must not fire without the option.
// NONE-LABEL: func.func @train_step(
// NONE-NOT:     func.func @eval
// NONE-NOT:     tx.eval
// NONE-NOT:     func.func @logits

// A loss that is not a softmax cross-entropy has no scores to sample from:
// no @logits (must not fire).
// CHECK-NOT:     func.func @logits
// CHECK-LABEL: {{^// -{5}$}}

tx.parameter @w = dense<0.5> : tensor<4x3xf32>
tx.parameter @frozen_scale = dense<2.0> : tensor<3xf32> frozen
func.func @f(%x: tensor<2x4xf32> {tx.name = "x"}) -> (tensor<f32> {tx.name = "loss"}) {
  %w = tx.load_parameter @w : tensor<4x3xf32>
  %s = tx.load_parameter @frozen_scale : tensor<3xf32>
  %k = tx.constant dense<0> : tensor<i64>
  %y = tx.matmul %x, %w : tensor<2x4xf32>, tensor<4x3xf32>
  %d = tx.dropout %y, %k ratio(0.1) seed(11) : tensor<2x3xf32>
  %t = tx.mul %d, %s : tensor<2x3xf32>, tensor<3xf32>
  %sq = tx.mul %t, %t : tensor<2x3xf32>, tensor<2x3xf32>
  %l = tx.reduce_mean %sq axes [] : tensor<2x3xf32>
  return %l : tensor<f32>
}

// -----

// With a softmax cross-entropy loss, @logits returns its scores (one row
// per token) under the step's parameters, the loss itself erased.
// CHECK-LABEL: func.func @eval(
// CHECK:         tx.softmax_cross_entropy_loss
// CHECK-LABEL: func.func @logits(
// CHECK-SAME:    %[[W:[^:]+]]: tensor<4x5xf32> {tx.name = "w", tx.parameter = @w, tx.role = "param"}
// CHECK-SAME:    %[[X:[^:]+]]: tensor<6x4xf32> {tx.name = "x", tx.role = "data"}
// CHECK-SAME:    -> (tensor<6x5xf32> {tx.name = "logits"}) attributes {tx.logits = @train_step}
// CHECK-NEXT:    %[[S:.+]] = tx.matmul %[[X]], %[[W]]
// CHECK-NEXT:    return %[[S]]
tx.parameter @w = dense<0.5> : tensor<4x5xf32>
func.func @f(%x: tensor<6x4xf32> {tx.name = "x"}, %y: tensor<6xi64> {tx.name = "labels"}) -> (tensor<f32> {tx.name = "loss"}) {
  %w = tx.load_parameter @w : tensor<4x5xf32>
  %s = tx.matmul %x, %w : tensor<6x4xf32>, tensor<4x5xf32>
  %l = tx.softmax_cross_entropy_loss %s, %y reduction(mean) : tensor<6x5xf32>, tensor<6xi64>
  return %l : tensor<f32>
}

// -----

// A symbol named like the logits function is not overwritten.
tx.parameter @w = dense<0.5> : tensor<4x3xf32>
func.func private @logits()
// expected-error @+1 {{expected no symbol named '@logits' yet, but one exists}}
func.func @f(%x: tensor<2x4xf32> {tx.name = "x"}) -> (tensor<f32> {tx.name = "loss"}) {
  %w = tx.load_parameter @w : tensor<4x3xf32>
  %y = tx.matmul %x, %w : tensor<2x4xf32>, tensor<4x3xf32>
  %l = tx.reduce_mean %y axes [] : tensor<2x3xf32>
  return %l : tensor<f32>
}

// -----

// A symbol named like the validation function is not overwritten.
tx.parameter @w = dense<0.5> : tensor<4x3xf32>
func.func private @eval()
// expected-error @+1 {{expected no symbol named '@eval' yet, but one exists}}
func.func @f(%x: tensor<2x4xf32> {tx.name = "x"}) -> (tensor<f32> {tx.name = "loss"}) {
  %w = tx.load_parameter @w : tensor<4x3xf32>
  %y = tx.matmul %x, %w : tensor<2x4xf32>, tensor<4x3xf32>
  %l = tx.reduce_mean %y axes [] : tensor<2x3xf32>
  return %l : tensor<f32>
}
