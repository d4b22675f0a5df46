// RUN: txopt-opt %s --split-input-file --verify-diagnostics --tx-build-train-step="grad-accum=2" --tx-data-parallel=ranks=2 | FileCheck %s

// tx-data-parallel on a step with gradient accumulation: each rank's
// @micro_step adds its gradients into its own whole-size accumulators (no
// collective), and the step reduce-scatters the rank's mean over its
// micro-batches once (DDP's no_sync). The micro-step's moment arguments get
// the step's shard types (drivers bind the arguments by position). The
// numbers (2 ranks x 2 micro-batches == one plain step on 4x the rows) are
// checked by test/Training/data-parallel.test.

// CHECK-LABEL: func.func @train_step(
// CHECK-SAME:    %[[EA:[^:]+]]: tensor<6xf32> {{{.*}}tx.name = "w.exp_avg", tx.role = "exp_avg", tx.shard_of = array<i64: 4, 3>}
// CHECK-SAME:    %[[ACC:[^:]+]]: tensor<4x3xf32> {tx.init = 0.000000e+00 : f32, tx.name = "w.grad_acc", tx.role = "grad_acc"}
// CHECK-SAME:    %[[LACC:[^:]+]]: tensor<f32> {tx.init = 0.000000e+00 : f32, tx.name = "loss_acc", tx.role = "loss_acc"}
// CHECK-SAME:    data_parallel = 2 : i64
// CHECK-SAME:    grad_accum = 2 : i64
// The last micro-batch's gradient joins the accumulated ones; the mean over
// the rank's micro-batches is what is reduce-scattered.
// CHECK:         %[[LS:.+]] = tx.add %[[LACC]], %{{.+}} : tensor<f32>, tensor<f32>
// CHECK:         %[[SW:.+]] = tx.add %[[ACC]], %{{.+}} : tensor<4x3xf32>, tensor<4x3xf32>
// CHECK:         %[[N:.+]] = tx.constant dense<2.000000e+00> : tensor<f32>
// CHECK:         %[[LOSS:.+]] = tx.div %[[LS]], %[[N]]
// CHECK:         %[[MW:.+]] = tx.div %[[SW]], %[[N]]
// CHECK:         %[[FLAT:.+]] = tx.reshape %[[MW]] : tensor<4x3xf32> -> tensor<12xf32>
// CHECK:         %[[SHARD:.+]] = tx.reduce_scatter mean %[[FLAT]] ranks(2) : tensor<12xf32> -> tensor<6xf32>
// CHECK:         tx.adam adamw params(%{{.+}}) grads(%[[SHARD]]) exp_avg(%[[EA]])
// CHECK:         %[[GLOBAL:.+]] = tx.all_reduce mean %[[LOSS]] ranks(2)
// CHECK:         return {{.*}}, %[[GLOBAL]], %{{.+}} :
// CHECK-LABEL: func.func @micro_step(
// CHECK-SAME:    %{{[^:]+}}: tensor<6xf32> {tx.init = 0.000000e+00 : f32, tx.name = "w.exp_avg", tx.role = "exp_avg"}
// CHECK-SAME:    %{{[^:]+}}: tensor<2xf32> {tx.init = 0.000000e+00 : f32, tx.name = "b.exp_avg", tx.role = "exp_avg"}
// CHECK-SAME:    %{{[^:]+}}: tensor<4x3xf32> {tx.init = 0.000000e+00 : f32, tx.name = "w.grad_acc", tx.role = "grad_acc"}
// CHECK-SAME:    -> (tensor<4x3xf32> {tx.name = "w.grad_acc", tx.next = 6 : i64}
// CHECK-NOT:     tx.reduce_scatter
// CHECK-NOT:     tx.all_reduce
// CHECK-NOT:     tx.rank_shard
// CHECK:         return

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
