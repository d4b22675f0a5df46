// RUN: txopt-opt %s --split-input-file --verify-diagnostics --tx-data-parallel=ranks=2 | FileCheck %s
// RUN: txopt-opt %s --split-input-file --verify-diagnostics --tx-data-parallel=ranks=4 | FileCheck %s --check-prefix=PAD
// RUN: txopt-opt %s --split-input-file --verify-diagnostics --tx-data-parallel=ranks=1 | FileCheck %s --check-prefix=ONE

// tx-data-parallel (ZeRO-1). ranks=1 keeps its collectives (each the
// identity): the step of a one-rank launch, which exercises NCCL on one
// GPU (ONE below); the error cases fire for every rank count.

// The step tx-build-train-step builds for test/Training/Inputs/linear-loss.mlir
// (AdamW, grad-clip=1.0). Gradients %14 (w, 3x2) and %12 (b, 2) are
// reduce-scattered where the norm is taken; the norm is the square root of
// the all-reduced sum of the shards' squares; clipping multiplies the
// shards; AdamW updates this rank's shards with shard-sized moments; the
// new parameters are all-gathered; the loss is all-reduced.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME:    %[[W:[^:]+]]: tensor<3x2xf32> {{[^}]*}}tx.role = "param"}
// CHECK-SAME:    %[[B:[^:]+]]: tensor<2xf32> {{[^}]*}}tx.role = "param"}
// CHECK-SAME:    %[[MW:[^:]+]]: tensor<3xf32> {{[^}]*}}tx.name = "w.exp_avg", tx.role = "exp_avg", tx.shard_of = array<i64: 3, 2>}
// CHECK-SAME:    %[[MB:[^:]+]]: tensor<1xf32> {{[^}]*}}tx.name = "b.exp_avg", tx.role = "exp_avg", tx.shard_of = array<i64: 2>}
// CHECK-SAME:    %[[VW:[^:]+]]: tensor<3xf32> {{[^}]*}}tx.name = "w.exp_avg_sq"
// CHECK-SAME:    %[[VB:[^:]+]]: tensor<1xf32> {{[^}]*}}tx.name = "b.exp_avg_sq"
// CHECK-SAME:    -> (tensor<3x2xf32> {tx.name = "w", tx.next = 0 : i64}, tensor<2xf32> {tx.name = "b", tx.next = 1 : i64}, tensor<3xf32> {tx.name = "w.exp_avg", tx.next = 2 : i64}, tensor<1xf32> {tx.name = "b.exp_avg", tx.next = 3 : i64}, tensor<3xf32> {tx.name = "w.exp_avg_sq", tx.next = 4 : i64}, tensor<1xf32> {tx.name = "b.exp_avg_sq", tx.next = 5 : i64}
// CHECK-SAME:    tx.train_step = {{.*}}data_parallel = 2 : i64
// CHECK:         %[[GW:.+]] = tx.matmul %{{.+}}, %{{.+}} : tensor<3x4xf32>
// CHECK:         %[[GWF:.+]] = tx.reshape %[[GW]] : tensor<3x2xf32> -> tensor<6xf32>
// CHECK:         %[[GWS:.+]] = tx.reduce_scatter mean %[[GWF]] ranks(2) : tensor<6xf32> -> tensor<3xf32>
// CHECK:         %[[SQW:.+]] = tx.mul %[[GWS]], %[[GWS]]
// CHECK:         %[[GBS:.+]] = tx.reduce_scatter mean %{{.+}} ranks(2) : tensor<2xf32> -> tensor<1xf32>
// CHECK:         %[[SQB:.+]] = tx.mul %[[GBS]], %[[GBS]]
// CHECK:         %[[LOCAL:.+]] = tx.add
// CHECK:         %[[GLOBAL:.+]] = tx.all_reduce sum %[[LOCAL]] ranks(2) : tensor<f32>
// CHECK:         %[[NORM:.+]] = tx.sqrt %[[GLOBAL]]
// CHECK:         %[[COEF:.+]] = tx.where
// CHECK:         %[[WS:.+]] = tx.rank_shard %{{.+}} ranks(2) : tensor<6xf32> -> tensor<3xf32>
// CHECK:         %[[CGW:.+]] = tx.mul %[[GWS]], %[[COEF]] : tensor<3xf32>, tensor<f32>
// CHECK:         %[[NW:[^,]+]], %[[NMW:[^,]+]], %[[NVW:[^ ]+]] = tx.adam adamw params(%[[WS]]) grads(%[[CGW]]) exp_avg(%[[MW]]) exp_avg_sq(%[[VW]]) {{.*}} : tensor<3xf32>
// CHECK:         %[[WFULL:.+]] = tx.all_gather %[[NW]] ranks(2) : tensor<3xf32> -> tensor<6xf32>
// CHECK:         %[[WOUT:.+]] = tx.reshape %[[WFULL]] : tensor<6xf32> -> tensor<3x2xf32>
// CHECK:         %[[BS:.+]] = tx.rank_shard %[[B]] ranks(2) : tensor<2xf32> -> tensor<1xf32>
// CHECK:         %[[NB:[^,]+]], %[[NMB:[^,]+]], %[[NVB:[^ ]+]] = tx.adam adamw params(%[[BS]]) {{.*}} exp_avg(%[[MB]]) exp_avg_sq(%[[VB]]) {{.*}} : tensor<1xf32>
// CHECK:         %[[BOUT:.+]] = tx.all_gather %[[NB]] ranks(2) : tensor<1xf32> -> tensor<2xf32>
// CHECK:         %[[LOSS:.+]] = tx.all_reduce mean %{{.+}} ranks(2) : tensor<f32>
// CHECK:         return %[[WOUT]], %[[BOUT]], %[[NMW]], %[[NMB]], %[[NVW]], %[[NVB]], %{{.+}}, %[[LOSS]], %[[NORM]]

// Four ranks: 6 elements pad to 8 (shards of 2), 2 to 4 (shards of 1); the
// padded tail is cut off after the gather.
// PAD-LABEL: func.func @train_step(
// PAD-SAME:    tensor<2xf32> {{[^}]*}}tx.name = "w.exp_avg"
// PAD-SAME:    tensor<1xf32> {{[^}]*}}tx.name = "b.exp_avg"
// PAD:         %[[GWF:.+]] = tx.reshape %{{.+}} : tensor<3x2xf32> -> tensor<6xf32>
// PAD:         %[[ZEROS:.+]] = tx.constant dense<0.000000e+00> : tensor<2xf32>
// PAD:         %[[GWP:.+]] = tx.concat %[[GWF]], %[[ZEROS]] axis(0)
// PAD:         tx.reduce_scatter mean %[[GWP]] ranks(4) : tensor<8xf32> -> tensor<2xf32>
// PAD:         %[[FULL:.+]] = tx.all_gather %{{.+}} ranks(4) : tensor<2xf32> -> tensor<8xf32>
// PAD:         %[[CUT:.+]] = tx.slice %[[FULL]] starts [0] ends [6] axes [0] steps [1]
// PAD:         tx.reshape %[[CUT]] : tensor<6xf32> -> tensor<3x2xf32>

// One rank: the same rewrite with unpadded whole-size shards (6 and 2
// elements), every collective ranks(1).
// ONE-LABEL: func.func @train_step(
// ONE-SAME:    tensor<6xf32> {{[^}]*}}tx.name = "w.exp_avg"
// ONE-SAME:    tensor<2xf32> {{[^}]*}}tx.name = "b.exp_avg"
// ONE-SAME:    tx.train_step = {{.*}}data_parallel = 1 : i64
// ONE:         tx.reduce_scatter mean %{{.+}} ranks(1) : tensor<6xf32> -> tensor<6xf32>
// ONE:         tx.reduce_scatter mean %{{.+}} ranks(1) : tensor<2xf32> -> tensor<2xf32>
// ONE:         tx.all_reduce sum %{{.+}} ranks(1) : tensor<f32>
// ONE:         tx.rank_shard %{{.+}} ranks(1) : tensor<6xf32> -> tensor<6xf32>
// ONE:         tx.all_gather %{{.+}} ranks(1) : tensor<6xf32> -> tensor<6xf32>
// ONE:         tx.all_reduce mean %{{.+}} ranks(1) : tensor<f32>
tx.parameter @w = dense<[[5.000000e-01, -2.500000e-01], [1.250000e-01, 1.000000e+00], [-1.000000e+00, 7.500000e-01]]> : tensor<3x2xf32>
tx.parameter @b = dense<[1.000000e-01, -2.000000e-01]> : tensor<2xf32>
func.func @train_step(%arg0: tensor<3x2xf32> {tx.name = "w", tx.parameter = @w, tx.role = "param"}, %arg1: tensor<2xf32> {tx.name = "b", tx.parameter = @b, tx.role = "param"}, %arg2: tensor<3x2xf32> {tx.init = 0.000000e+00 : f32, tx.name = "w.exp_avg", tx.role = "exp_avg"}, %arg3: tensor<2xf32> {tx.init = 0.000000e+00 : f32, tx.name = "b.exp_avg", tx.role = "exp_avg"}, %arg4: tensor<3x2xf32> {tx.init = 0.000000e+00 : f32, tx.name = "w.exp_avg_sq", tx.role = "exp_avg_sq"}, %arg5: tensor<2xf32> {tx.init = 0.000000e+00 : f32, tx.name = "b.exp_avg_sq", tx.role = "exp_avg_sq"}, %arg6: tensor<f32> {tx.init = 1.000000e-03 : f32, tx.name = "lr", tx.role = "lr"}, %arg7: tensor<f32> {tx.init = 0.000000e+00 : f32, tx.name = "step", tx.role = "step"}, %arg8: tensor<i64> {tx.name = "rng_key", tx.role = "rng"}, %arg9: tensor<4x3xf32> {tx.name = "x", tx.role = "data"})
    -> (tensor<3x2xf32> {tx.name = "w", tx.next = 0 : i64}, tensor<2xf32> {tx.name = "b", tx.next = 1 : i64}, tensor<3x2xf32> {tx.name = "w.exp_avg", tx.next = 2 : i64}, tensor<2xf32> {tx.name = "b.exp_avg", tx.next = 3 : i64}, tensor<3x2xf32> {tx.name = "w.exp_avg_sq", tx.next = 4 : i64}, tensor<2xf32> {tx.name = "b.exp_avg_sq", tx.next = 5 : i64}, tensor<f32> {tx.name = "step", tx.next = 7 : i64}, tensor<f32> {tx.name = "loss"}, tensor<f32> {tx.name = "grad_norm"})
    attributes {tx.train_step = {beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, eps = 1.000000e-08 : f64, forward = "main", grad_clip = 1.000000e+00 : f64, loss = "output", lr = 1.000000e-03 : f64, optimizer = "adamw", weight_decay = 1.000000e-02 : f64}} {
  %0 = tx.matmul %arg9, %arg0 : tensor<4x3xf32>, tensor<3x2xf32>
  %1 = tx.add %0, %arg1 : tensor<4x2xf32>, tensor<2xf32>
  %2 = tx.mul %1, %1 : tensor<4x2xf32>, tensor<4x2xf32>
  %3 = tx.reduce_mean %2 axes [] : tensor<4x2xf32>
  %6 = tx.constant dense<2.500000e-01> : tensor<f32>
  %11 = tx.mul %1, %6 : tensor<4x2xf32>, tensor<f32>
  %12 = tx.reduce_sum %11 axes [0] : tensor<4x2xf32>
  %13 = tx.transpose %arg9 perm [1, 0] : tensor<4x3xf32>
  %14 = tx.matmul %13, %11 : tensor<3x4xf32>, tensor<4x2xf32>
  %15 = tx.mul %14, %14 : tensor<3x2xf32>, tensor<3x2xf32>
  %16 = tx.reduce_sum %15 axes [] : tensor<3x2xf32>
  %17 = tx.mul %12, %12 : tensor<2xf32>, tensor<2xf32>
  %18 = tx.reduce_sum %17 axes [] : tensor<2xf32>
  %19 = tx.add %16, %18 : tensor<f32>, tensor<f32>
  %20 = tx.sqrt %19 : tensor<f32>
  %21 = tx.constant dense<1.000000e+00> : tensor<f32>
  %22 = tx.constant dense<9.99999997E-7> : tensor<f32>
  %23 = tx.add %20, %22 : tensor<f32>, tensor<f32>
  %25 = tx.div %21, %23 : tensor<f32>, tensor<f32>
  %26 = tx.less %25, %21 : tensor<f32>, tensor<f32>
  %27 = tx.where %26, %25, %21 : tensor<i1>, tensor<f32>, tensor<f32>
  %28 = tx.mul %14, %27 : tensor<3x2xf32>, tensor<f32>
  %29 = tx.mul %12, %27 : tensor<2xf32>, tensor<f32>
  %31 = tx.add %arg7, %21 : tensor<f32>, tensor<f32>
  %new_params, %new_exp_avg, %new_exp_avg_sq = tx.adam adamw params(%arg0) grads(%28) exp_avg(%arg2) exp_avg_sq(%arg4) lr(%arg6) step(%31) betas(0.9, 0.999) eps(1.0e-08, outside_sqrt) weight_decay(0.01) : tensor<3x2xf32>
  %new_params_0, %new_exp_avg_1, %new_exp_avg_sq_2 = tx.adam adamw params(%arg1) grads(%29) exp_avg(%arg3) exp_avg_sq(%arg5) lr(%arg6) step(%31) betas(0.9, 0.999) eps(1.0e-08, outside_sqrt) weight_decay(0.0) : tensor<2xf32>
  return %new_params, %new_params_0, %new_exp_avg, %new_exp_avg_1, %new_exp_avg_sq, %new_exp_avg_sq_2, %31, %3, %20 : tensor<3x2xf32>, tensor<2xf32>, tensor<3x2xf32>, tensor<2xf32>, tensor<3x2xf32>, tensor<2xf32>, tensor<f32>, tensor<f32>, tensor<f32>
}

// -----

// SGD without momentum keeps no state: its zero buffers become shard-sized
// zeros; one multi-tensor op updates both shards.
// CHECK-LABEL: func.func @sgd_step(
// CHECK-SAME:    -> (tensor<3x2xf32> {tx.name = "w", tx.next = 0 : i64}, tensor<2xf32> {tx.name = "b", tx.next = 1 : i64}
// CHECK-DAG:     %[[ZW:.+]] = tx.constant dense<0.000000e+00> : tensor<3xf32>
// CHECK-DAG:     %[[ZB:.+]] = tx.constant dense<0.000000e+00> : tensor<1xf32>
// CHECK:         %[[NP:.+]]:2, %{{.+}}:2 = tx.sgd params(%{{.+}}, %{{.+}}) grads(%{{.+}}, %{{.+}}) momentum_buffer(%[[ZW]], %[[ZB]]) {{.*}} : tensor<3xf32>, tensor<1xf32>
// CHECK:         tx.all_gather %[[NP]]#0 ranks(2) : tensor<3xf32> -> tensor<6xf32>
// CHECK:         tx.all_gather %[[NP]]#1 ranks(2) : tensor<1xf32> -> tensor<2xf32>
func.func @sgd_step(%arg0: tensor<3x2xf32> {tx.name = "w", tx.role = "param"}, %arg1: tensor<2xf32> {tx.name = "b", tx.role = "param"}, %arg2: tensor<f32> {tx.init = 1.000000e-01 : f32, tx.name = "lr", tx.role = "lr"}, %arg3: tensor<f32> {tx.init = 0.000000e+00 : f32, tx.name = "step", tx.role = "step"}, %arg9: tensor<4x3xf32> {tx.name = "x", tx.role = "data"})
    -> (tensor<3x2xf32> {tx.name = "w", tx.next = 0 : i64}, tensor<2xf32> {tx.name = "b", tx.next = 1 : i64}, tensor<f32> {tx.name = "step", tx.next = 3 : i64}, tensor<f32> {tx.name = "loss"}, tensor<f32> {tx.name = "grad_norm"})
    attributes {tx.train_step = {optimizer = "sgd"}} {
  %0 = tx.matmul %arg9, %arg0 : tensor<4x3xf32>, tensor<3x2xf32>
  %1 = tx.add %0, %arg1 : tensor<4x2xf32>, tensor<2xf32>
  %2 = tx.mul %1, %1 : tensor<4x2xf32>, tensor<4x2xf32>
  %3 = tx.reduce_mean %2 axes [] : tensor<4x2xf32>
  %12 = tx.reduce_sum %1 axes [0] : tensor<4x2xf32>
  %13 = tx.transpose %arg9 perm [1, 0] : tensor<4x3xf32>
  %14 = tx.matmul %13, %1 : tensor<3x4xf32>, tensor<4x2xf32>
  %15 = tx.mul %14, %14 : tensor<3x2xf32>, tensor<3x2xf32>
  %16 = tx.reduce_sum %15 axes [] : tensor<3x2xf32>
  %17 = tx.mul %12, %12 : tensor<2xf32>, tensor<2xf32>
  %18 = tx.reduce_sum %17 axes [] : tensor<2xf32>
  %19 = tx.add %16, %18 : tensor<f32>, tensor<f32>
  %20 = tx.sqrt %19 : tensor<f32>
  %21 = tx.constant dense<1.000000e+00> : tensor<f32>
  %22 = tx.add %arg3, %21 : tensor<f32>, tensor<f32>
  %23 = tx.constant dense<0.000000e+00> : tensor<3x2xf32>
  %24 = tx.constant dense<0.000000e+00> : tensor<2xf32>
  %new_params:2, %new_momentum_buffer:2 = tx.sgd params(%arg0, %arg1) grads(%14, %12) momentum_buffer(%23, %24) lr(%arg2) momentum(0.0) dampening(0.0) weight_decay(0.0) : tensor<3x2xf32>, tensor<2xf32>
  return %new_params#0, %new_params#1, %22, %3, %20 : tensor<3x2xf32>, tensor<2xf32>, tensor<f32>, tensor<f32>, tensor<f32>
}

// -----

// Must not fire: a function that is not a training step keeps its squares,
// sums and shapes.
// CHECK-LABEL: func.func @not_a_step
// CHECK-NOT:     tx.all_reduce
// CHECK-NOT:     tx.reduce_scatter
// CHECK:         return
func.func @not_a_step(%g: tensor<3x2xf32>) -> (tensor<f32> {tx.name = "grad_norm"}) {
  %sq = tx.mul %g, %g : tensor<3x2xf32>, tensor<3x2xf32>
  %s = tx.reduce_sum %sq axes [] : tensor<3x2xf32>
  %n = tx.sqrt %s : tensor<f32>
  return %n : tensor<f32>
}

// -----

// Loss scaling: the ranks must agree on skipping, so the finite check's
// sum is all-reduced; a 'skipped' result that is not that check is refused
// (the full rewrite is checked by test/Training/data-parallel.test).
// expected-error @+1 {{expected a loss-scaling step's result 'skipped' to be a tx.is_nan (as tx-build-train-step builds it)}}
func.func @bad_skipped(%arg0: tensor<3x2xf32> {tx.name = "w", tx.role = "param"}, %arg1: tensor<2xf32> {tx.name = "b", tx.role = "param"}, %arg2: tensor<f32> {tx.init = 1.000000e-01 : f32, tx.name = "lr", tx.role = "lr"}, %arg3: tensor<f32> {tx.init = 0.000000e+00 : f32, tx.name = "step", tx.role = "step"}, %arg9: tensor<4x3xf32> {tx.name = "x", tx.role = "data"})
    -> (tensor<3x2xf32> {tx.name = "w", tx.next = 0 : i64}, tensor<2xf32> {tx.name = "b", tx.next = 1 : i64}, tensor<f32> {tx.name = "step", tx.next = 3 : i64}, tensor<f32> {tx.name = "loss"}, tensor<f32> {tx.name = "grad_norm"}, tensor<i1> {tx.name = "skipped"})
    attributes {tx.train_step = {optimizer = "sgd"}} {
  %0 = tx.matmul %arg9, %arg0 : tensor<4x3xf32>, tensor<3x2xf32>
  %1 = tx.add %0, %arg1 : tensor<4x2xf32>, tensor<2xf32>
  %2 = tx.mul %1, %1 : tensor<4x2xf32>, tensor<4x2xf32>
  %3 = tx.reduce_mean %2 axes [] : tensor<4x2xf32>
  %12 = tx.reduce_sum %1 axes [0] : tensor<4x2xf32>
  %13 = tx.transpose %arg9 perm [1, 0] : tensor<4x3xf32>
  %14 = tx.matmul %13, %1 : tensor<3x4xf32>, tensor<4x2xf32>
  %15 = tx.mul %14, %14 : tensor<3x2xf32>, tensor<3x2xf32>
  %16 = tx.reduce_sum %15 axes [] : tensor<3x2xf32>
  %17 = tx.mul %12, %12 : tensor<2xf32>, tensor<2xf32>
  %18 = tx.reduce_sum %17 axes [] : tensor<2xf32>
  %19 = tx.add %16, %18 : tensor<f32>, tensor<f32>
  %20 = tx.sqrt %19 : tensor<f32>
  %21 = tx.constant dense<1.000000e+00> : tensor<f32>
  %22 = tx.add %arg3, %21 : tensor<f32>, tensor<f32>
  %23 = tx.constant dense<0.000000e+00> : tensor<3x2xf32>
  %24 = tx.constant dense<0.000000e+00> : tensor<2xf32>
  %new_params:2, %new_momentum_buffer:2 = tx.sgd params(%arg0, %arg1) grads(%14, %12) momentum_buffer(%23, %24) lr(%arg2) momentum(0.0) dampening(0.0) weight_decay(0.0) : tensor<3x2xf32>, tensor<2xf32>
  %skip = tx.constant dense<false> : tensor<i1>
  return %new_params#0, %new_params#1, %22, %3, %20, %skip : tensor<3x2xf32>, tensor<2xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<i1>
}

// -----

// FP8 scaling state is replicated: the amax each scale update reads is the
// max over the ranks, so every rank derives the same history and scale.
// CHECK-LABEL: func.func @fp8_step(
// CHECK:         %[[AMAX:.+]] = tx.all_reduce max %{{.+}} ranks(2) : tensor<f32>
// CHECK:         tx.fp8_scale_update %{{.+}}, %{{.+}}, %[[AMAX]] : tensor<4xf32>
// CHECK:         tx.sgd
func.func @fp8_step(%p: tensor<4xf32> {tx.name = "p", tx.role = "param"}, %h: tensor<4xf32> {tx.name = "x.amax_history", tx.role = "fp8_amax_history"}, %s: tensor<f32> {tx.name = "x.scale", tx.role = "fp8_scale"}, %lr: tensor<f32> {tx.name = "lr", tx.role = "lr"}, %x: tensor<4xf32> {tx.name = "x", tx.role = "data"})
    -> (tensor<4xf32> {tx.name = "p", tx.next = 0 : i64}, tensor<4xf32> {tx.name = "x.amax_history", tx.next = 1 : i64}, tensor<f32> {tx.name = "x.scale", tx.next = 2 : i64}, tensor<f32> {tx.name = "loss"}, tensor<f32> {tx.name = "grad_norm"})
    attributes {tx.train_step = {optimizer = "sgd"}} {
  %amax = tx.reduce_max %x axes [] : tensor<4xf32>
  %h2, %s2, %si2 = tx.fp8_scale_update %h, %s, %amax : tensor<4xf32> for f8E4M3FN #tx.fp8_recipe<delayed, format = hybrid, history = 4, amax = max, margin = 0>
  %g = tx.mul %x, %p : tensor<4xf32>, tensor<4xf32>
  %l = tx.reduce_sum %g axes [] : tensor<4xf32>
  %sq = tx.mul %g, %g : tensor<4xf32>, tensor<4xf32>
  %ss = tx.reduce_sum %sq axes [] : tensor<4xf32>
  %n = tx.sqrt %ss : tensor<f32>
  %zero = tx.constant dense<0.0> : tensor<4xf32>
  %np, %nb = tx.sgd params(%p) grads(%g) momentum_buffer(%zero) lr(%lr) momentum(0.0) dampening(0.0) weight_decay(0.0) : tensor<4xf32>
  return %np, %h2, %s2, %l, %n : tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<f32>
}

// -----

// @eval and @logits take the step's arguments: the moments they never read
// become shards there too (drivers bind the arguments by position).
// CHECK-LABEL: func.func @eval(
// CHECK-SAME:    %{{[^:]+}}: tensor<3x2xf32>, %{{[^:]+}}: tensor<2xf32>, %{{[^:]+}}: tensor<3xf32>, %{{[^:]+}}: tensor<1xf32>, %{{[^:]+}}: tensor<3xf32>, %{{[^:]+}}: tensor<1xf32>,
// CHECK-NOT:     tx.all_reduce
// CHECK:         return
tx.parameter @w = dense<[[5.000000e-01, -2.500000e-01], [1.250000e-01, 1.000000e+00], [-1.000000e+00, 7.500000e-01]]> : tensor<3x2xf32>
tx.parameter @b = dense<[1.000000e-01, -2.000000e-01]> : tensor<2xf32>
func.func @train_step(%arg0: tensor<3x2xf32> {tx.name = "w", tx.parameter = @w, tx.role = "param"}, %arg1: tensor<2xf32> {tx.name = "b", tx.parameter = @b, tx.role = "param"}, %arg2: tensor<3x2xf32> {tx.init = 0.000000e+00 : f32, tx.name = "w.exp_avg", tx.role = "exp_avg"}, %arg3: tensor<2xf32> {tx.init = 0.000000e+00 : f32, tx.name = "b.exp_avg", tx.role = "exp_avg"}, %arg4: tensor<3x2xf32> {tx.init = 0.000000e+00 : f32, tx.name = "w.exp_avg_sq", tx.role = "exp_avg_sq"}, %arg5: tensor<2xf32> {tx.init = 0.000000e+00 : f32, tx.name = "b.exp_avg_sq", tx.role = "exp_avg_sq"}, %arg6: tensor<f32> {tx.init = 1.000000e-03 : f32, tx.name = "lr", tx.role = "lr"}, %arg7: tensor<f32> {tx.init = 0.000000e+00 : f32, tx.name = "step", tx.role = "step"}, %arg8: tensor<i64> {tx.name = "rng_key", tx.role = "rng"}, %arg9: tensor<4x3xf32> {tx.name = "x", tx.role = "data"})
    -> (tensor<3x2xf32> {tx.name = "w", tx.next = 0 : i64}, tensor<2xf32> {tx.name = "b", tx.next = 1 : i64}, tensor<3x2xf32> {tx.name = "w.exp_avg", tx.next = 2 : i64}, tensor<2xf32> {tx.name = "b.exp_avg", tx.next = 3 : i64}, tensor<3x2xf32> {tx.name = "w.exp_avg_sq", tx.next = 4 : i64}, tensor<2xf32> {tx.name = "b.exp_avg_sq", tx.next = 5 : i64}, tensor<f32> {tx.name = "step", tx.next = 7 : i64}, tensor<f32> {tx.name = "loss"}, tensor<f32> {tx.name = "grad_norm"})
    attributes {tx.train_step = {beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, eps = 1.000000e-08 : f64, forward = "main", grad_clip = 1.000000e+00 : f64, loss = "output", lr = 1.000000e-03 : f64, optimizer = "adamw", weight_decay = 1.000000e-02 : f64}} {
  %0 = tx.matmul %arg9, %arg0 : tensor<4x3xf32>, tensor<3x2xf32>
  %1 = tx.add %0, %arg1 : tensor<4x2xf32>, tensor<2xf32>
  %2 = tx.mul %1, %1 : tensor<4x2xf32>, tensor<4x2xf32>
  %3 = tx.reduce_mean %2 axes [] : tensor<4x2xf32>
  %6 = tx.constant dense<2.500000e-01> : tensor<f32>
  %11 = tx.mul %1, %6 : tensor<4x2xf32>, tensor<f32>
  %12 = tx.reduce_sum %11 axes [0] : tensor<4x2xf32>
  %13 = tx.transpose %arg9 perm [1, 0] : tensor<4x3xf32>
  %14 = tx.matmul %13, %11 : tensor<3x4xf32>, tensor<4x2xf32>
  %15 = tx.mul %14, %14 : tensor<3x2xf32>, tensor<3x2xf32>
  %16 = tx.reduce_sum %15 axes [] : tensor<3x2xf32>
  %17 = tx.mul %12, %12 : tensor<2xf32>, tensor<2xf32>
  %18 = tx.reduce_sum %17 axes [] : tensor<2xf32>
  %19 = tx.add %16, %18 : tensor<f32>, tensor<f32>
  %20 = tx.sqrt %19 : tensor<f32>
  %21 = tx.constant dense<1.000000e+00> : tensor<f32>
  %22 = tx.constant dense<9.99999997E-7> : tensor<f32>
  %23 = tx.add %20, %22 : tensor<f32>, tensor<f32>
  %25 = tx.div %21, %23 : tensor<f32>, tensor<f32>
  %26 = tx.less %25, %21 : tensor<f32>, tensor<f32>
  %27 = tx.where %26, %25, %21 : tensor<i1>, tensor<f32>, tensor<f32>
  %28 = tx.mul %14, %27 : tensor<3x2xf32>, tensor<f32>
  %29 = tx.mul %12, %27 : tensor<2xf32>, tensor<f32>
  %31 = tx.add %arg7, %21 : tensor<f32>, tensor<f32>
  %new_params, %new_exp_avg, %new_exp_avg_sq = tx.adam adamw params(%arg0) grads(%28) exp_avg(%arg2) exp_avg_sq(%arg4) lr(%arg6) step(%31) betas(0.9, 0.999) eps(1.0e-08, outside_sqrt) weight_decay(0.01) : tensor<3x2xf32>
  %new_params_0, %new_exp_avg_1, %new_exp_avg_sq_2 = tx.adam adamw params(%arg1) grads(%29) exp_avg(%arg3) exp_avg_sq(%arg5) lr(%arg6) step(%31) betas(0.9, 0.999) eps(1.0e-08, outside_sqrt) weight_decay(0.0) : tensor<2xf32>
  return %new_params, %new_params_0, %new_exp_avg, %new_exp_avg_1, %new_exp_avg_sq, %new_exp_avg_sq_2, %31, %3, %20 : tensor<3x2xf32>, tensor<2xf32>, tensor<3x2xf32>, tensor<2xf32>, tensor<3x2xf32>, tensor<2xf32>, tensor<f32>, tensor<f32>, tensor<f32>
}
func.func @eval(%a0: tensor<3x2xf32>, %a1: tensor<2xf32>, %a2: tensor<3x2xf32>, %a3: tensor<2xf32>, %a4: tensor<3x2xf32>, %a5: tensor<2xf32>, %a6: tensor<f32>, %a7: tensor<f32>, %a8: tensor<i64>, %a9: tensor<4x3xf32>) -> tensor<f32> attributes {tx.eval = @train_step} {
  %0 = tx.matmul %a9, %a0 : tensor<4x3xf32>, tensor<3x2xf32>
  %1 = tx.reduce_sum %0 axes [] : tensor<4x2xf32>
  return %1 : tensor<f32>
}

// -----

// An @eval that reads optimizer state cannot follow it into shards.
tx.parameter @w = dense<[[5.000000e-01, -2.500000e-01], [1.250000e-01, 1.000000e+00], [-1.000000e+00, 7.500000e-01]]> : tensor<3x2xf32>
tx.parameter @b = dense<[1.000000e-01, -2.000000e-01]> : tensor<2xf32>
func.func @train_step(%arg0: tensor<3x2xf32> {tx.name = "w", tx.parameter = @w, tx.role = "param"}, %arg1: tensor<2xf32> {tx.name = "b", tx.parameter = @b, tx.role = "param"}, %arg2: tensor<3x2xf32> {tx.init = 0.000000e+00 : f32, tx.name = "w.exp_avg", tx.role = "exp_avg"}, %arg3: tensor<2xf32> {tx.init = 0.000000e+00 : f32, tx.name = "b.exp_avg", tx.role = "exp_avg"}, %arg4: tensor<3x2xf32> {tx.init = 0.000000e+00 : f32, tx.name = "w.exp_avg_sq", tx.role = "exp_avg_sq"}, %arg5: tensor<2xf32> {tx.init = 0.000000e+00 : f32, tx.name = "b.exp_avg_sq", tx.role = "exp_avg_sq"}, %arg6: tensor<f32> {tx.init = 1.000000e-03 : f32, tx.name = "lr", tx.role = "lr"}, %arg7: tensor<f32> {tx.init = 0.000000e+00 : f32, tx.name = "step", tx.role = "step"}, %arg8: tensor<i64> {tx.name = "rng_key", tx.role = "rng"}, %arg9: tensor<4x3xf32> {tx.name = "x", tx.role = "data"})
    -> (tensor<3x2xf32> {tx.name = "w", tx.next = 0 : i64}, tensor<2xf32> {tx.name = "b", tx.next = 1 : i64}, tensor<3x2xf32> {tx.name = "w.exp_avg", tx.next = 2 : i64}, tensor<2xf32> {tx.name = "b.exp_avg", tx.next = 3 : i64}, tensor<3x2xf32> {tx.name = "w.exp_avg_sq", tx.next = 4 : i64}, tensor<2xf32> {tx.name = "b.exp_avg_sq", tx.next = 5 : i64}, tensor<f32> {tx.name = "step", tx.next = 7 : i64}, tensor<f32> {tx.name = "loss"}, tensor<f32> {tx.name = "grad_norm"})
    attributes {tx.train_step = {beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, eps = 1.000000e-08 : f64, forward = "main", grad_clip = 1.000000e+00 : f64, loss = "output", lr = 1.000000e-03 : f64, optimizer = "adamw", weight_decay = 1.000000e-02 : f64}} {
  %0 = tx.matmul %arg9, %arg0 : tensor<4x3xf32>, tensor<3x2xf32>
  %1 = tx.add %0, %arg1 : tensor<4x2xf32>, tensor<2xf32>
  %2 = tx.mul %1, %1 : tensor<4x2xf32>, tensor<4x2xf32>
  %3 = tx.reduce_mean %2 axes [] : tensor<4x2xf32>
  %6 = tx.constant dense<2.500000e-01> : tensor<f32>
  %11 = tx.mul %1, %6 : tensor<4x2xf32>, tensor<f32>
  %12 = tx.reduce_sum %11 axes [0] : tensor<4x2xf32>
  %13 = tx.transpose %arg9 perm [1, 0] : tensor<4x3xf32>
  %14 = tx.matmul %13, %11 : tensor<3x4xf32>, tensor<4x2xf32>
  %15 = tx.mul %14, %14 : tensor<3x2xf32>, tensor<3x2xf32>
  %16 = tx.reduce_sum %15 axes [] : tensor<3x2xf32>
  %17 = tx.mul %12, %12 : tensor<2xf32>, tensor<2xf32>
  %18 = tx.reduce_sum %17 axes [] : tensor<2xf32>
  %19 = tx.add %16, %18 : tensor<f32>, tensor<f32>
  %20 = tx.sqrt %19 : tensor<f32>
  %21 = tx.constant dense<1.000000e+00> : tensor<f32>
  %22 = tx.constant dense<9.99999997E-7> : tensor<f32>
  %23 = tx.add %20, %22 : tensor<f32>, tensor<f32>
  %25 = tx.div %21, %23 : tensor<f32>, tensor<f32>
  %26 = tx.less %25, %21 : tensor<f32>, tensor<f32>
  %27 = tx.where %26, %25, %21 : tensor<i1>, tensor<f32>, tensor<f32>
  %28 = tx.mul %14, %27 : tensor<3x2xf32>, tensor<f32>
  %29 = tx.mul %12, %27 : tensor<2xf32>, tensor<f32>
  %31 = tx.add %arg7, %21 : tensor<f32>, tensor<f32>
  %new_params, %new_exp_avg, %new_exp_avg_sq = tx.adam adamw params(%arg0) grads(%28) exp_avg(%arg2) exp_avg_sq(%arg4) lr(%arg6) step(%31) betas(0.9, 0.999) eps(1.0e-08, outside_sqrt) weight_decay(0.01) : tensor<3x2xf32>
  %new_params_0, %new_exp_avg_1, %new_exp_avg_sq_2 = tx.adam adamw params(%arg1) grads(%29) exp_avg(%arg3) exp_avg_sq(%arg5) lr(%arg6) step(%31) betas(0.9, 0.999) eps(1.0e-08, outside_sqrt) weight_decay(0.0) : tensor<2xf32>
  return %new_params, %new_params_0, %new_exp_avg, %new_exp_avg_1, %new_exp_avg_sq, %new_exp_avg_sq_2, %31, %3, %20 : tensor<3x2xf32>, tensor<2xf32>, tensor<3x2xf32>, tensor<2xf32>, tensor<3x2xf32>, tensor<2xf32>, tensor<f32>, tensor<f32>, tensor<f32>
}
// expected-error @+1 {{reads argument 2 ('exp_avg' state), which the data-parallel step shards}}
func.func @eval(%a0: tensor<3x2xf32>, %a1: tensor<2xf32>, %a2: tensor<3x2xf32>, %a3: tensor<2xf32>, %a4: tensor<3x2xf32>, %a5: tensor<2xf32>, %a6: tensor<f32>, %a7: tensor<f32>, %a8: tensor<i64>, %a9: tensor<4x3xf32>) -> tensor<3x2xf32> attributes {tx.eval = @train_step} {
  return %a2 : tensor<3x2xf32>
}

// -----

// Nor can a gradient accumulation micro-step that reads it.
tx.parameter @w = dense<[[5.000000e-01, -2.500000e-01], [1.250000e-01, 1.000000e+00], [-1.000000e+00, 7.500000e-01]]> : tensor<3x2xf32>
tx.parameter @b = dense<[1.000000e-01, -2.000000e-01]> : tensor<2xf32>
func.func @train_step(%arg0: tensor<3x2xf32> {tx.name = "w", tx.parameter = @w, tx.role = "param"}, %arg1: tensor<2xf32> {tx.name = "b", tx.parameter = @b, tx.role = "param"}, %arg2: tensor<3x2xf32> {tx.init = 0.000000e+00 : f32, tx.name = "w.exp_avg", tx.role = "exp_avg"}, %arg3: tensor<2xf32> {tx.init = 0.000000e+00 : f32, tx.name = "b.exp_avg", tx.role = "exp_avg"}, %arg4: tensor<3x2xf32> {tx.init = 0.000000e+00 : f32, tx.name = "w.exp_avg_sq", tx.role = "exp_avg_sq"}, %arg5: tensor<2xf32> {tx.init = 0.000000e+00 : f32, tx.name = "b.exp_avg_sq", tx.role = "exp_avg_sq"}, %arg6: tensor<f32> {tx.init = 1.000000e-03 : f32, tx.name = "lr", tx.role = "lr"}, %arg7: tensor<f32> {tx.init = 0.000000e+00 : f32, tx.name = "step", tx.role = "step"}, %arg8: tensor<i64> {tx.name = "rng_key", tx.role = "rng"}, %arg9: tensor<4x3xf32> {tx.name = "x", tx.role = "data"})
    -> (tensor<3x2xf32> {tx.name = "w", tx.next = 0 : i64}, tensor<2xf32> {tx.name = "b", tx.next = 1 : i64}, tensor<3x2xf32> {tx.name = "w.exp_avg", tx.next = 2 : i64}, tensor<2xf32> {tx.name = "b.exp_avg", tx.next = 3 : i64}, tensor<3x2xf32> {tx.name = "w.exp_avg_sq", tx.next = 4 : i64}, tensor<2xf32> {tx.name = "b.exp_avg_sq", tx.next = 5 : i64}, tensor<f32> {tx.name = "step", tx.next = 7 : i64}, tensor<f32> {tx.name = "loss"}, tensor<f32> {tx.name = "grad_norm"})
    attributes {tx.train_step = {beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, eps = 1.000000e-08 : f64, forward = "main", grad_clip = 1.000000e+00 : f64, loss = "output", lr = 1.000000e-03 : f64, optimizer = "adamw", weight_decay = 1.000000e-02 : f64}} {
  %0 = tx.matmul %arg9, %arg0 : tensor<4x3xf32>, tensor<3x2xf32>
  %1 = tx.add %0, %arg1 : tensor<4x2xf32>, tensor<2xf32>
  %2 = tx.mul %1, %1 : tensor<4x2xf32>, tensor<4x2xf32>
  %3 = tx.reduce_mean %2 axes [] : tensor<4x2xf32>
  %6 = tx.constant dense<2.500000e-01> : tensor<f32>
  %11 = tx.mul %1, %6 : tensor<4x2xf32>, tensor<f32>
  %12 = tx.reduce_sum %11 axes [0] : tensor<4x2xf32>
  %13 = tx.transpose %arg9 perm [1, 0] : tensor<4x3xf32>
  %14 = tx.matmul %13, %11 : tensor<3x4xf32>, tensor<4x2xf32>
  %15 = tx.mul %14, %14 : tensor<3x2xf32>, tensor<3x2xf32>
  %16 = tx.reduce_sum %15 axes [] : tensor<3x2xf32>
  %17 = tx.mul %12, %12 : tensor<2xf32>, tensor<2xf32>
  %18 = tx.reduce_sum %17 axes [] : tensor<2xf32>
  %19 = tx.add %16, %18 : tensor<f32>, tensor<f32>
  %20 = tx.sqrt %19 : tensor<f32>
  %21 = tx.constant dense<1.000000e+00> : tensor<f32>
  %22 = tx.constant dense<9.99999997E-7> : tensor<f32>
  %23 = tx.add %20, %22 : tensor<f32>, tensor<f32>
  %25 = tx.div %21, %23 : tensor<f32>, tensor<f32>
  %26 = tx.less %25, %21 : tensor<f32>, tensor<f32>
  %27 = tx.where %26, %25, %21 : tensor<i1>, tensor<f32>, tensor<f32>
  %28 = tx.mul %14, %27 : tensor<3x2xf32>, tensor<f32>
  %29 = tx.mul %12, %27 : tensor<2xf32>, tensor<f32>
  %31 = tx.add %arg7, %21 : tensor<f32>, tensor<f32>
  %new_params, %new_exp_avg, %new_exp_avg_sq = tx.adam adamw params(%arg0) grads(%28) exp_avg(%arg2) exp_avg_sq(%arg4) lr(%arg6) step(%31) betas(0.9, 0.999) eps(1.0e-08, outside_sqrt) weight_decay(0.01) : tensor<3x2xf32>
  %new_params_0, %new_exp_avg_1, %new_exp_avg_sq_2 = tx.adam adamw params(%arg1) grads(%29) exp_avg(%arg3) exp_avg_sq(%arg5) lr(%arg6) step(%31) betas(0.9, 0.999) eps(1.0e-08, outside_sqrt) weight_decay(0.0) : tensor<2xf32>
  return %new_params, %new_params_0, %new_exp_avg, %new_exp_avg_1, %new_exp_avg_sq, %new_exp_avg_sq_2, %31, %3, %20 : tensor<3x2xf32>, tensor<2xf32>, tensor<3x2xf32>, tensor<2xf32>, tensor<3x2xf32>, tensor<2xf32>, tensor<f32>, tensor<f32>, tensor<f32>
}
// expected-error @+1 {{reads argument 2 ('exp_avg' state), which the data-parallel step shards}}
func.func @micro_step(%a0: tensor<3x2xf32>, %a1: tensor<2xf32>, %a2: tensor<3x2xf32>, %a3: tensor<2xf32>, %a4: tensor<3x2xf32>, %a5: tensor<2xf32>, %a6: tensor<f32>, %a7: tensor<f32>, %a8: tensor<i64>, %a9: tensor<4x3xf32>) -> tensor<3x2xf32> attributes {tx.micro_step = @train_step} {
  return %a2 : tensor<3x2xf32>
}

// -----

// A step is sharded once.
// expected-error @+1 {{the step is already data-parallel}}
func.func @already_sharded() attributes {tx.train_step = {data_parallel = 2 : i64}} {
  return
}

// -----

// The norm is where the gradients are found.
// expected-error @+1 {{expected the step's results 'loss' and 'grad_norm'}}
func.func @no_grad_norm(%l: tensor<f32> {tx.role = "data"}) -> (tensor<f32> {tx.name = "loss"}) attributes {tx.train_step = {optimizer = "sgd"}} {
  return %l : tensor<f32>
}

// -----

// expected-error @+1 {{expected a tx.adam or tx.sgd in the step}}
func.func @no_optimizer(%l: tensor<f32> {tx.role = "data"}, %g: tensor<4xf32> {tx.role = "data"}) -> (tensor<f32> {tx.name = "loss"}, tensor<f32> {tx.name = "grad_norm"}) attributes {tx.train_step = {optimizer = "sgd"}} {
  %sq = tx.mul %g, %g : tensor<4xf32>, tensor<4xf32>
  %s = tx.reduce_sum %sq axes [] : tensor<4xf32>
  %n = tx.sqrt %s : tensor<f32>
  return %l, %n : tensor<f32>, tensor<f32>
}

// -----

// The optimizer's gradient must be the squared one, up to scalar scaling.
func.func @untraceable_gradient(%p: tensor<4xf32> {tx.role = "param"}, %l: tensor<f32> {tx.role = "data"}, %g: tensor<4xf32> {tx.role = "data"}, %lr: tensor<f32> {tx.role = "lr"}) -> (tensor<4xf32> {tx.name = "p", tx.next = 0 : i64}, tensor<f32> {tx.name = "loss"}, tensor<f32> {tx.name = "grad_norm"}) attributes {tx.train_step = {optimizer = "sgd"}} {
  %sq = tx.mul %g, %g : tensor<4xf32>, tensor<4xf32>
  %s = tx.reduce_sum %sq axes [] : tensor<4xf32>
  %n = tx.sqrt %s : tensor<f32>
  %other = tx.neg %g : tensor<4xf32>
  %zero = tx.constant dense<0.0> : tensor<4xf32>
  // expected-error @+1 {{cannot trace gradient #0 back to the gradient the global norm squares}}
  %np, %nb = tx.sgd params(%p) grads(%other) momentum_buffer(%zero) lr(%lr) momentum(0.0) dampening(0.0) weight_decay(0.0) : tensor<4xf32>
  return %np, %l, %n : tensor<4xf32>, tensor<f32>, tensor<f32>
}

// -----

// Optimizer state read by anything else cannot simply become a shard.
func.func @shared_state(%p: tensor<4xf32> {tx.role = "param"}, %b: tensor<4xf32> {tx.role = "momentum_buffer"}, %l: tensor<f32> {tx.role = "data"}, %g: tensor<4xf32> {tx.role = "data"}, %lr: tensor<f32> {tx.role = "lr"}) -> (tensor<4xf32> {tx.name = "p", tx.next = 0 : i64}, tensor<4xf32>, tensor<f32> {tx.name = "loss"}, tensor<f32> {tx.name = "grad_norm"}) attributes {tx.train_step = {optimizer = "sgd"}} {
  %sq = tx.mul %g, %g : tensor<4xf32>, tensor<4xf32>
  %s = tx.reduce_sum %sq axes [] : tensor<4xf32>
  %n = tx.sqrt %s : tensor<f32>
  %twice = tx.add %b, %b : tensor<4xf32>, tensor<4xf32>
  // expected-error @+1 {{expected optimizer state operand #2 to be a step argument only the optimizer reads, or zeros}}
  %np, %nb = tx.sgd params(%p) grads(%g) momentum_buffer(%b) lr(%lr) momentum(0.9) dampening(0.0) weight_decay(0.0) : tensor<4xf32>
  return %np, %twice, %l, %n : tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>
}
