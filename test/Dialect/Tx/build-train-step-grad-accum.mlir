// RUN: txopt-opt %s --split-input-file --verify-diagnostics --tx-build-train-step="grad-accum=3" | FileCheck %s
// RUN: txopt-opt %s --split-input-file --verify-diagnostics --tx-build-train-step="grad-accum=2 loss-scaling=true" | FileCheck %s --check-prefix=SCALED
// RUN: txopt-opt %s --split-input-file --tx-build-train-step | FileCheck %s --check-prefix=NONE
// RUN: txopt-opt %s --split-input-file --tx-build-train-step="grad-accum=1" | FileCheck %s --check-prefix=NONE
// RUN: not txopt-opt %s --split-input-file --tx-build-train-step="grad-accum=0" 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: not txopt-opt %s --split-input-file --txopt-train="grad-accum=2 precision=fp8" 2>&1 | FileCheck %s --check-prefix=FP8

// Gradient accumulation (tx-build-train-step grad-accum=N): the step gains
// accumulators after the optimizer state and a @micro_step with the same
// signature. The numbers (N micro-batches == one batch N times larger)
// are checked by test/Training/grad-accum.test.

// CHECK-LABEL: func.func @train_step(
// CHECK-SAME:    %[[W:[^:]+]]: tensor<4x3xf32> {tx.name = "w", tx.parameter = @w, tx.role = "param"}
// CHECK-SAME:    %[[AW:[^:]+]]: tensor<4x3xf32> {tx.init = 0.000000e+00 : f32, tx.name = "w.grad_acc", tx.role = "grad_acc"}
// CHECK-SAME:    %[[AB:[^:]+]]: tensor<3xf32> {tx.init = 0.000000e+00 : f32, tx.name = "b.grad_acc", tx.role = "grad_acc"}
// CHECK-SAME:    %[[AL:[^:]+]]: tensor<f32> {tx.init = 0.000000e+00 : f32, tx.name = "loss_acc", tx.role = "loss_acc"}
// CHECK-SAME:    %[[LR:[^:]+]]: tensor<f32> {tx.init = 1.000000e-03 : f32, tx.name = "lr", tx.role = "lr"}
// CHECK-SAME:    tensor<4x3xf32> {tx.name = "w.grad_acc", tx.next = 6 : i64}, tensor<3xf32> {tx.name = "b.grad_acc", tx.next = 7 : i64}, tensor<f32> {tx.name = "loss_acc", tx.next = 8 : i64}
// CHECK-SAME:    grad_accum = 3 : i64
// The last micro-batch's gradient joins the accumulated ones, then all is
// divided by N before the norm and the optimizer.
// CHECK:         %[[L:.+]] = tx.reduce_mean
// CHECK:         %[[GW:.+]] = tx.matmul
// CHECK:         %[[LS:.+]] = tx.add %[[AL]], %[[L]]
// CHECK:         %[[SW:.+]] = tx.add %[[AW]], %[[GW]]
// CHECK:         %[[N:.+]] = tx.constant dense<3.000000e+00> : tensor<f32>
// CHECK:         %[[LOSS:.+]] = tx.div %[[LS]], %[[N]]
// CHECK:         %[[MW:.+]] = tx.div %[[SW]], %[[N]]
// CHECK:         tx.mul %[[MW]], %[[MW]]
// CHECK:         tx.adam adamw params(%[[W]]) grads(%[[MW]])
// The accumulators restart from zero.
// CHECK:         %[[ZW:.+]] = tx.constant dense<0.000000e+00> : tensor<4x3xf32>
// CHECK:         %[[ZB:.+]] = tx.constant dense<0.000000e+00> : tensor<3xf32>
// CHECK:         %[[ZL:.+]] = tx.constant dense<0.000000e+00> : tensor<f32>
// CHECK:         return {{.*}}, %[[ZW]], %[[ZB]], %[[ZL]], {{.*}}, %[[LOSS]],
// CHECK-LABEL: func.func @micro_step(
// CHECK-SAME:    %[[W:[^:]+]]: tensor<4x3xf32> {tx.name = "w", tx.parameter = @w, tx.role = "param"}
// CHECK-SAME:    %[[AW:[^:]+]]: tensor<4x3xf32> {tx.init = 0.000000e+00 : f32, tx.name = "w.grad_acc", tx.role = "grad_acc"}
// CHECK-SAME:    %[[AB:[^:]+]]: tensor<3xf32> {tx.init = 0.000000e+00 : f32, tx.name = "b.grad_acc", tx.role = "grad_acc"}
// CHECK-SAME:    %[[AL:[^:]+]]: tensor<f32> {tx.init = 0.000000e+00 : f32, tx.name = "loss_acc", tx.role = "loss_acc"}
// CHECK-SAME:    -> (tensor<4x3xf32> {tx.name = "w.grad_acc", tx.next = 6 : i64}, tensor<3xf32> {tx.name = "b.grad_acc", tx.next = 7 : i64}, tensor<f32> {tx.name = "loss_acc", tx.next = 8 : i64}, tensor<f32> {tx.name = "loss"})
// CHECK-SAME:    attributes {tx.micro_step = @train_step}
// No update, no norm: the forward, the gradient and the adds.
// CHECK-NOT:     tx.adam
// CHECK-NOT:     tx.sqrt
// CHECK:         %[[L:.+]] = tx.reduce_mean
// CHECK:         %[[GB:.+]] = tx.reduce_sum %{{.+}} axes [0]
// CHECK:         %[[GW:.+]] = tx.matmul
// CHECK:         %[[LS:.+]] = tx.add %[[AL]], %[[L]]
// CHECK:         %[[SW:.+]] = tx.add %[[AW]], %[[GW]]
// CHECK:         %[[SB:.+]] = tx.add %[[AB]], %[[GB]]
// CHECK:         return %[[SW]], %[[SB]], %[[LS]], %[[L]]

// Loss scaling: the accumulated (scaled) sums are divided by N, then
// unscaled and checked once.
// SCALED-LABEL: func.func @train_step(
// SCALED-SAME:    %[[AL:[^:]+]]: tensor<f32> {tx.init = 0.000000e+00 : f32, tx.name = "loss_acc", tx.role = "loss_acc"}
// SCALED-SAME:    %[[SCALE:[^:]+]]: tensor<f32> {tx.init = 6.553600e+04 : f32, tx.name = "loss_scale", tx.role = "loss_scale"}
// SCALED:         %[[N:.+]] = tx.constant dense<2.000000e+00> : tensor<f32>
// SCALED:         %[[MEAN:.+]] = tx.div %{{.+}}, %[[N]]
// SCALED:         tx.div %[[MEAN]], %[[SCALE]]
// SCALED:         tx.is_nan
// SCALED-LABEL: func.func @micro_step(
// SCALED-SAME:    %[[SCALE:[^:]+]]: tensor<f32> {tx.init = 6.553600e+04 : f32, tx.name = "loss_scale", tx.role = "loss_scale"}
// SCALED:         tx.mul %{{.+}}, %[[SCALE]]
// SCALED-NOT:     tx.is_nan

// Without accumulation (the default, or N = 1) nothing changes (and the
// @micro_step declared in the second case is no conflict).
// NONE-LABEL: func.func @train_step(
// NONE-NOT:     grad_acc
// NONE-NOT:     loss_acc
// NONE-NOT:     grad_accum
// NONE-NOT:     func.func @micro_step

// ZERO: error: expected grad-accum >= 1, but got 0
// FP8: error: FP8 steps do not support gradient accumulation yet (grad-accum > 1)

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

// A symbol already named like the micro-step is not overwritten.
tx.parameter @w = dense<0.5> : tensor<4x3xf32>
func.func private @micro_step()
// expected-error @+1 {{expected no symbol named '@micro_step' yet, but one exists}}
func.func @f(%x: tensor<2x4xf32> {tx.name = "x"}) -> (tensor<f32> {tx.name = "loss"}) {
  %w = tx.load_parameter @w : tensor<4x3xf32>
  %y = tx.matmul %x, %w : tensor<2x4xf32>, tensor<4x3xf32>
  %l = tx.reduce_mean %y axes [] : tensor<2x3xf32>
  return %l : tensor<f32>
}
