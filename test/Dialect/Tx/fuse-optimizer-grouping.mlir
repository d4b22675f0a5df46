// RUN: txopt-opt %s --split-input-file --tx-fuse-optimizer | FileCheck %s
// RUN: txopt-opt %s --split-input-file --tx-fuse-optimizer=explain=true 2>&1 >/dev/null \
// RUN:   | count 0

// tx-fuse-optimizer's grouping: fused per-parameter updates that share lr,
// step and hyperparameters become one multi-tensor tx.adam / tx.sgd.

// Every chain here fuses, so explain=true emits no remark at all.

//===----------------------------------------------------------------------===//
// Grouping
//===----------------------------------------------------------------------===//

// Two parameters with one lr and step: one multi-tensor tx.adam, parameters
// in program order.
// CHECK-LABEL: func.func @adamw_two_params
// CHECK-SAME:    %[[P0:[^:]+]]: tensor<4x8xf32>, %[[G0:[^:]+]]: tensor<4x8xf32>, %[[M0:[^:]+]]: tensor<4x8xf32>, %[[V0:[^:]+]]: tensor<4x8xf32>, %[[P1:[^:]+]]: tensor<8xf32>, %[[G1:[^:]+]]: tensor<8xf32>, %[[M1:[^:]+]]: tensor<8xf32>, %[[V1:[^:]+]]: tensor<8xf32>, %[[LR:[^:]+]]: tensor<f32>, %[[T:[^:]+]]: tensor<f32>
// CHECK-NOT:     tx.mul
// CHECK-NOT:     tx.sqrt
// CHECK-NOT:     tx.pow
// CHECK:         %[[NP:[^:]+]]:2, %[[NM:[^:]+]]:2, %[[NV:[^:]+]]:2 = tx.adam adamw params(%[[P0]], %[[P1]]) grads(%[[G0]], %[[G1]]) exp_avg(%[[M0]], %[[M1]]) exp_avg_sq(%[[V0]], %[[V1]]) lr(%[[LR]]) step(%[[T]]) betas(0.9, 0.999) eps(1.0e-08, outside_sqrt) weight_decay(0.01) {f32_bias_correction} : tensor<4x8xf32>, tensor<8xf32>
// CHECK-NEXT:    return %[[NP]]#0, %[[NM]]#0, %[[NV]]#0, %[[NP]]#1, %[[NM]]#1, %[[NV]]#1
// CHECK-NOT:     tx.adam
func.func @adamw_two_params(%p0: tensor<4x8xf32>, %g0: tensor<4x8xf32>, %m0: tensor<4x8xf32>, %v0: tensor<4x8xf32>, %p1: tensor<8xf32>, %g1: tensor<8xf32>, %m1: tensor<8xf32>, %v1: tensor<8xf32>,
    %lr: tensor<f32>, %step: tensor<f32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %wd_0 = tx.constant dense<0.01> : tensor<f32>
  %lrwd_0 = tx.mul %lr, %wd_0 : tensor<f32>, tensor<f32>
  %one_0 = tx.constant dense<1.0> : tensor<f32>
  %decay_0 = tx.sub %one_0, %lrwd_0 : tensor<f32>, tensor<f32>
  %pd_0 = tx.mul %p0, %decay_0 : tensor<4x8xf32>, tensor<f32>
  %b1_0 = tx.constant dense<0.9> : tensor<f32>
  %mb_0 = tx.mul %m0, %b1_0 : tensor<4x8xf32>, tensor<f32>
  %c1_0 = tx.constant dense<0.1> : tensor<f32>
  %gc_0 = tx.mul %g0, %c1_0 : tensor<4x8xf32>, tensor<f32>
  %m1_0 = tx.add %mb_0, %gc_0 : tensor<4x8xf32>, tensor<4x8xf32>
  %b2_0 = tx.constant dense<0.999> : tensor<f32>
  %vb_0 = tx.mul %v0, %b2_0 : tensor<4x8xf32>, tensor<f32>
  %c2_0 = tx.constant dense<0.001> : tensor<f32>
  %gc2_0 = tx.mul %g0, %c2_0 : tensor<4x8xf32>, tensor<f32>
  %gg_0 = tx.mul %gc2_0, %g0 : tensor<4x8xf32>, tensor<4x8xf32>
  %v1_0 = tx.add %vb_0, %gg_0 : tensor<4x8xf32>, tensor<4x8xf32>
  %bb1_0 = tx.constant dense<0.9> : tensor<f32>
  %pow1_0 = tx.pow %bb1_0, %step : tensor<f32>, tensor<f32>
  %one1_0 = tx.constant dense<1.0> : tensor<f32>
  %bc1_0 = tx.sub %one1_0, %pow1_0 : tensor<f32>, tensor<f32>
  %mhat_0 = tx.div %m1_0, %bc1_0 : tensor<4x8xf32>, tensor<f32>
  %bb2_0 = tx.constant dense<0.999> : tensor<f32>
  %pow2_0 = tx.pow %bb2_0, %step : tensor<f32>, tensor<f32>
  %one2_0 = tx.constant dense<1.0> : tensor<f32>
  %bc2_0 = tx.sub %one2_0, %pow2_0 : tensor<f32>, tensor<f32>
  %vhat_0 = tx.div %v1_0, %bc2_0 : tensor<4x8xf32>, tensor<f32>
  %num_0 = tx.mul %lr, %mhat_0 : tensor<f32>, tensor<4x8xf32>
  %sqrt_0 = tx.sqrt %vhat_0 : tensor<4x8xf32>
  %eps_0 = tx.constant dense<1.0e-08> : tensor<f32>
  %den_0 = tx.add %sqrt_0, %eps_0 : tensor<4x8xf32>, tensor<f32>
  %upd_0 = tx.div %num_0, %den_0 : tensor<4x8xf32>, tensor<4x8xf32>
    %p1_0 = tx.sub %pd_0, %upd_0 : tensor<4x8xf32>, tensor<4x8xf32>
  %wd_1 = tx.constant dense<0.01> : tensor<f32>
  %lrwd_1 = tx.mul %lr, %wd_1 : tensor<f32>, tensor<f32>
  %one_1 = tx.constant dense<1.0> : tensor<f32>
  %decay_1 = tx.sub %one_1, %lrwd_1 : tensor<f32>, tensor<f32>
  %pd_1 = tx.mul %p1, %decay_1 : tensor<8xf32>, tensor<f32>
  %b1_1 = tx.constant dense<0.9> : tensor<f32>
  %mb_1 = tx.mul %m1, %b1_1 : tensor<8xf32>, tensor<f32>
  %c1_1 = tx.constant dense<0.1> : tensor<f32>
  %gc_1 = tx.mul %g1, %c1_1 : tensor<8xf32>, tensor<f32>
  %m1_1 = tx.add %mb_1, %gc_1 : tensor<8xf32>, tensor<8xf32>
  %b2_1 = tx.constant dense<0.999> : tensor<f32>
  %vb_1 = tx.mul %v1, %b2_1 : tensor<8xf32>, tensor<f32>
  %c2_1 = tx.constant dense<0.001> : tensor<f32>
  %gc2_1 = tx.mul %g1, %c2_1 : tensor<8xf32>, tensor<f32>
  %gg_1 = tx.mul %gc2_1, %g1 : tensor<8xf32>, tensor<8xf32>
  %v1_1 = tx.add %vb_1, %gg_1 : tensor<8xf32>, tensor<8xf32>
  %bb1_1 = tx.constant dense<0.9> : tensor<f32>
  %pow1_1 = tx.pow %bb1_1, %step : tensor<f32>, tensor<f32>
  %one1_1 = tx.constant dense<1.0> : tensor<f32>
  %bc1_1 = tx.sub %one1_1, %pow1_1 : tensor<f32>, tensor<f32>
  %mhat_1 = tx.div %m1_1, %bc1_1 : tensor<8xf32>, tensor<f32>
  %bb2_1 = tx.constant dense<0.999> : tensor<f32>
  %pow2_1 = tx.pow %bb2_1, %step : tensor<f32>, tensor<f32>
  %one2_1 = tx.constant dense<1.0> : tensor<f32>
  %bc2_1 = tx.sub %one2_1, %pow2_1 : tensor<f32>, tensor<f32>
  %vhat_1 = tx.div %v1_1, %bc2_1 : tensor<8xf32>, tensor<f32>
  %num_1 = tx.mul %lr, %mhat_1 : tensor<f32>, tensor<8xf32>
  %sqrt_1 = tx.sqrt %vhat_1 : tensor<8xf32>
  %eps_1 = tx.constant dense<1.0e-08> : tensor<f32>
  %den_1 = tx.add %sqrt_1, %eps_1 : tensor<8xf32>, tensor<f32>
  %upd_1 = tx.div %num_1, %den_1 : tensor<8xf32>, tensor<8xf32>
    %p1_1 = tx.sub %pd_1, %upd_1 : tensor<8xf32>, tensor<8xf32>
  return %p1_0, %m1_0, %v1_0, %p1_1, %m1_1, %v1_1 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// The same two chains after CSE: constants, bias corrections and the decay
// factor are shared by both parameters (only p/g/m/v-dependent ops must be
// private to a chain).
// CHECK-LABEL: func.func @adamw_two_params_cse
// CHECK-SAME:    %[[P0:[^:]+]]: tensor<4x8xf32>, %[[G0:[^:]+]]: tensor<4x8xf32>, %[[M0:[^:]+]]: tensor<4x8xf32>, %[[V0:[^:]+]]: tensor<4x8xf32>, %[[P1:[^:]+]]: tensor<8xf32>, %[[G1:[^:]+]]: tensor<8xf32>, %[[M1:[^:]+]]: tensor<8xf32>, %[[V1:[^:]+]]: tensor<8xf32>, %[[LR:[^:]+]]: tensor<f32>, %[[T:[^:]+]]: tensor<f32>
// CHECK-NOT:     tx.mul
// CHECK-NOT:     tx.sqrt
// CHECK-NOT:     tx.pow
// CHECK:         %[[NP:[^:]+]]:2, %[[NM:[^:]+]]:2, %[[NV:[^:]+]]:2 = tx.adam adamw params(%[[P0]], %[[P1]]) grads(%[[G0]], %[[G1]]) exp_avg(%[[M0]], %[[M1]]) exp_avg_sq(%[[V0]], %[[V1]]) lr(%[[LR]]) step(%[[T]]) betas(0.9, 0.999) eps(1.0e-08, outside_sqrt) weight_decay(0.01) {f32_bias_correction} : tensor<4x8xf32>, tensor<8xf32>
// CHECK-NOT:     tx.constant
// CHECK:         return %[[NP]]#0, %[[NM]]#0, %[[NV]]#0, %[[NP]]#1, %[[NM]]#1, %[[NV]]#1
func.func @adamw_two_params_cse(%p0: tensor<4x8xf32>, %g0: tensor<4x8xf32>, %m0: tensor<4x8xf32>, %v0: tensor<4x8xf32>, %p1: tensor<8xf32>, %g1: tensor<8xf32>, %m1: tensor<8xf32>, %v1: tensor<8xf32>,
    %lr: tensor<f32>, %step: tensor<f32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %one = tx.constant dense<1.0> : tensor<f32>
  %wd = tx.constant dense<0.01> : tensor<f32>
  %b1 = tx.constant dense<0.9> : tensor<f32>
  %c1 = tx.constant dense<0.1> : tensor<f32>
  %b2 = tx.constant dense<0.999> : tensor<f32>
  %c2 = tx.constant dense<0.001> : tensor<f32>
  %eps = tx.constant dense<1.0e-08> : tensor<f32>
  %lrwd = tx.mul %lr, %wd : tensor<f32>, tensor<f32>
  %decay = tx.sub %one, %lrwd : tensor<f32>, tensor<f32>
  %pow1 = tx.pow %b1, %step : tensor<f32>, tensor<f32>
  %bc1 = tx.sub %one, %pow1 : tensor<f32>, tensor<f32>
  %pow2 = tx.pow %b2, %step : tensor<f32>, tensor<f32>
  %bc2 = tx.sub %one, %pow2 : tensor<f32>, tensor<f32>
  %pd_0 = tx.mul %p0, %decay : tensor<4x8xf32>, tensor<f32>
  %mb_0 = tx.mul %m0, %b1 : tensor<4x8xf32>, tensor<f32>
  %gc_0 = tx.mul %g0, %c1 : tensor<4x8xf32>, tensor<f32>
  %m1_0 = tx.add %mb_0, %gc_0 : tensor<4x8xf32>, tensor<4x8xf32>
  %vb_0 = tx.mul %v0, %b2 : tensor<4x8xf32>, tensor<f32>
  %gc2_0 = tx.mul %g0, %c2 : tensor<4x8xf32>, tensor<f32>
  %gg_0 = tx.mul %gc2_0, %g0 : tensor<4x8xf32>, tensor<4x8xf32>
  %v1_0 = tx.add %vb_0, %gg_0 : tensor<4x8xf32>, tensor<4x8xf32>
  %mhat_0 = tx.div %m1_0, %bc1 : tensor<4x8xf32>, tensor<f32>
  %vhat_0 = tx.div %v1_0, %bc2 : tensor<4x8xf32>, tensor<f32>
  %num_0 = tx.mul %lr, %mhat_0 : tensor<f32>, tensor<4x8xf32>
  %sqrt_0 = tx.sqrt %vhat_0 : tensor<4x8xf32>
  %den_0 = tx.add %sqrt_0, %eps : tensor<4x8xf32>, tensor<f32>
  %upd_0 = tx.div %num_0, %den_0 : tensor<4x8xf32>, tensor<4x8xf32>
  %p1_0 = tx.sub %pd_0, %upd_0 : tensor<4x8xf32>, tensor<4x8xf32>
  %pd_1 = tx.mul %p1, %decay : tensor<8xf32>, tensor<f32>
  %mb_1 = tx.mul %m1, %b1 : tensor<8xf32>, tensor<f32>
  %gc_1 = tx.mul %g1, %c1 : tensor<8xf32>, tensor<f32>
  %m1_1 = tx.add %mb_1, %gc_1 : tensor<8xf32>, tensor<8xf32>
  %vb_1 = tx.mul %v1, %b2 : tensor<8xf32>, tensor<f32>
  %gc2_1 = tx.mul %g1, %c2 : tensor<8xf32>, tensor<f32>
  %gg_1 = tx.mul %gc2_1, %g1 : tensor<8xf32>, tensor<8xf32>
  %v1_1 = tx.add %vb_1, %gg_1 : tensor<8xf32>, tensor<8xf32>
  %mhat_1 = tx.div %m1_1, %bc1 : tensor<8xf32>, tensor<f32>
  %vhat_1 = tx.div %v1_1, %bc2 : tensor<8xf32>, tensor<f32>
  %num_1 = tx.mul %lr, %mhat_1 : tensor<f32>, tensor<8xf32>
  %sqrt_1 = tx.sqrt %vhat_1 : tensor<8xf32>
  %den_1 = tx.add %sqrt_1, %eps : tensor<8xf32>, tensor<f32>
  %upd_1 = tx.div %num_1, %den_1 : tensor<8xf32>, tensor<8xf32>
  %p1_1 = tx.sub %pd_1, %upd_1 : tensor<8xf32>, tensor<8xf32>
  return %p1_0, %m1_0, %v1_0, %p1_1, %m1_1, %v1_1 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// Different learning rates (parameter groups): two tx.adam ops, not a near
// miss.
// CHECK-LABEL: func.func @adamw_different_lr
// CHECK-SAME:    %[[P0:[^:]+]]: tensor<4x8xf32>, %[[G0:[^:]+]]: tensor<4x8xf32>, %[[M0:[^:]+]]: tensor<4x8xf32>, %[[V0:[^:]+]]: tensor<4x8xf32>, %[[P1:[^:]+]]: tensor<8xf32>, %[[G1:[^:]+]]: tensor<8xf32>, %[[M1:[^:]+]]: tensor<8xf32>, %[[V1:[^:]+]]: tensor<8xf32>, %[[LR:[^:]+]]: tensor<f32>, %[[LR2:[^:]+]]: tensor<f32>, %[[T:[^:]+]]: tensor<f32>
// CHECK-DAG:     tx.adam adamw params(%[[P0]]) grads(%[[G0]]) exp_avg(%[[M0]]) exp_avg_sq(%[[V0]]) lr(%[[LR]]) step(%[[T]])
// CHECK-DAG:     tx.adam adamw params(%[[P1]]) grads(%[[G1]]) exp_avg(%[[M1]]) exp_avg_sq(%[[V1]]) lr(%[[LR2]]) step(%[[T]])
// CHECK:         return
func.func @adamw_different_lr(%p0: tensor<4x8xf32>, %g0: tensor<4x8xf32>, %m0: tensor<4x8xf32>, %v0: tensor<4x8xf32>, %p1: tensor<8xf32>, %g1: tensor<8xf32>, %m1: tensor<8xf32>, %v1: tensor<8xf32>,
    %lr: tensor<f32>, %lr2: tensor<f32>, %step: tensor<f32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %wd_0 = tx.constant dense<0.01> : tensor<f32>
  %lrwd_0 = tx.mul %lr, %wd_0 : tensor<f32>, tensor<f32>
  %one_0 = tx.constant dense<1.0> : tensor<f32>
  %decay_0 = tx.sub %one_0, %lrwd_0 : tensor<f32>, tensor<f32>
  %pd_0 = tx.mul %p0, %decay_0 : tensor<4x8xf32>, tensor<f32>
  %b1_0 = tx.constant dense<0.9> : tensor<f32>
  %mb_0 = tx.mul %m0, %b1_0 : tensor<4x8xf32>, tensor<f32>
  %c1_0 = tx.constant dense<0.1> : tensor<f32>
  %gc_0 = tx.mul %g0, %c1_0 : tensor<4x8xf32>, tensor<f32>
  %m1_0 = tx.add %mb_0, %gc_0 : tensor<4x8xf32>, tensor<4x8xf32>
  %b2_0 = tx.constant dense<0.999> : tensor<f32>
  %vb_0 = tx.mul %v0, %b2_0 : tensor<4x8xf32>, tensor<f32>
  %c2_0 = tx.constant dense<0.001> : tensor<f32>
  %gc2_0 = tx.mul %g0, %c2_0 : tensor<4x8xf32>, tensor<f32>
  %gg_0 = tx.mul %gc2_0, %g0 : tensor<4x8xf32>, tensor<4x8xf32>
  %v1_0 = tx.add %vb_0, %gg_0 : tensor<4x8xf32>, tensor<4x8xf32>
  %bb1_0 = tx.constant dense<0.9> : tensor<f32>
  %pow1_0 = tx.pow %bb1_0, %step : tensor<f32>, tensor<f32>
  %one1_0 = tx.constant dense<1.0> : tensor<f32>
  %bc1_0 = tx.sub %one1_0, %pow1_0 : tensor<f32>, tensor<f32>
  %mhat_0 = tx.div %m1_0, %bc1_0 : tensor<4x8xf32>, tensor<f32>
  %bb2_0 = tx.constant dense<0.999> : tensor<f32>
  %pow2_0 = tx.pow %bb2_0, %step : tensor<f32>, tensor<f32>
  %one2_0 = tx.constant dense<1.0> : tensor<f32>
  %bc2_0 = tx.sub %one2_0, %pow2_0 : tensor<f32>, tensor<f32>
  %vhat_0 = tx.div %v1_0, %bc2_0 : tensor<4x8xf32>, tensor<f32>
  %num_0 = tx.mul %lr, %mhat_0 : tensor<f32>, tensor<4x8xf32>
  %sqrt_0 = tx.sqrt %vhat_0 : tensor<4x8xf32>
  %eps_0 = tx.constant dense<1.0e-08> : tensor<f32>
  %den_0 = tx.add %sqrt_0, %eps_0 : tensor<4x8xf32>, tensor<f32>
  %upd_0 = tx.div %num_0, %den_0 : tensor<4x8xf32>, tensor<4x8xf32>
    %p1_0 = tx.sub %pd_0, %upd_0 : tensor<4x8xf32>, tensor<4x8xf32>
  %wd_1 = tx.constant dense<0.01> : tensor<f32>
  %lrwd_1 = tx.mul %lr2, %wd_1 : tensor<f32>, tensor<f32>
  %one_1 = tx.constant dense<1.0> : tensor<f32>
  %decay_1 = tx.sub %one_1, %lrwd_1 : tensor<f32>, tensor<f32>
  %pd_1 = tx.mul %p1, %decay_1 : tensor<8xf32>, tensor<f32>
  %b1_1 = tx.constant dense<0.9> : tensor<f32>
  %mb_1 = tx.mul %m1, %b1_1 : tensor<8xf32>, tensor<f32>
  %c1_1 = tx.constant dense<0.1> : tensor<f32>
  %gc_1 = tx.mul %g1, %c1_1 : tensor<8xf32>, tensor<f32>
  %m1_1 = tx.add %mb_1, %gc_1 : tensor<8xf32>, tensor<8xf32>
  %b2_1 = tx.constant dense<0.999> : tensor<f32>
  %vb_1 = tx.mul %v1, %b2_1 : tensor<8xf32>, tensor<f32>
  %c2_1 = tx.constant dense<0.001> : tensor<f32>
  %gc2_1 = tx.mul %g1, %c2_1 : tensor<8xf32>, tensor<f32>
  %gg_1 = tx.mul %gc2_1, %g1 : tensor<8xf32>, tensor<8xf32>
  %v1_1 = tx.add %vb_1, %gg_1 : tensor<8xf32>, tensor<8xf32>
  %bb1_1 = tx.constant dense<0.9> : tensor<f32>
  %pow1_1 = tx.pow %bb1_1, %step : tensor<f32>, tensor<f32>
  %one1_1 = tx.constant dense<1.0> : tensor<f32>
  %bc1_1 = tx.sub %one1_1, %pow1_1 : tensor<f32>, tensor<f32>
  %mhat_1 = tx.div %m1_1, %bc1_1 : tensor<8xf32>, tensor<f32>
  %bb2_1 = tx.constant dense<0.999> : tensor<f32>
  %pow2_1 = tx.pow %bb2_1, %step : tensor<f32>, tensor<f32>
  %one2_1 = tx.constant dense<1.0> : tensor<f32>
  %bc2_1 = tx.sub %one2_1, %pow2_1 : tensor<f32>, tensor<f32>
  %vhat_1 = tx.div %v1_1, %bc2_1 : tensor<8xf32>, tensor<f32>
  %num_1 = tx.mul %lr2, %mhat_1 : tensor<f32>, tensor<8xf32>
  %sqrt_1 = tx.sqrt %vhat_1 : tensor<8xf32>
  %eps_1 = tx.constant dense<1.0e-08> : tensor<f32>
  %den_1 = tx.add %sqrt_1, %eps_1 : tensor<8xf32>, tensor<f32>
  %upd_1 = tx.div %num_1, %den_1 : tensor<8xf32>, tensor<8xf32>
    %p1_1 = tx.sub %pd_1, %upd_1 : tensor<8xf32>, tensor<8xf32>
  return %p1_0, %m1_0, %v1_0, %p1_1, %m1_1, %v1_1 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// Existing tx.adam ops (the importer's ai.onnx.preview.training.Adam) merge
// with each other and with a matched chain of equal hyper-parameters (here
// the chain computes its bias corrections with f32 ops, so the existing ops
// carry f32_bias_correction too); the one with other betas stays on its own.
// CHECK-LABEL: func.func @adam_merge_existing
// CHECK-SAME:    %[[P0:[^:]+]]: tensor<4x8xf32>, %[[G0:[^:]+]]: tensor<4x8xf32>, %[[M0:[^:]+]]: tensor<4x8xf32>, %[[V0:[^:]+]]: tensor<4x8xf32>, %[[P1:[^:]+]]: tensor<8xf32>, %[[G1:[^:]+]]: tensor<8xf32>, %[[M1:[^:]+]]: tensor<8xf32>, %[[V1:[^:]+]]: tensor<8xf32>, %[[LR:[^:]+]]: tensor<f32>, %[[T:[^:]+]]: tensor<f32>
// CHECK-DAG:     %[[OTHER:[^,]+]], %{{.+}} = tx.adam adamw params(%[[P1]]) {{.+}} betas(0.8, 0.999)
// CHECK-DAG:     %[[NP:[^:]+]]:3, %{{.+}}:3, %{{.+}}:3 = tx.adam adamw params(%[[P0]], %[[P1]], %[[P0]]) grads(%[[G0]], %[[G1]], %[[G0]]) exp_avg(%[[M0]], %[[M1]], %[[M0]]) exp_avg_sq(%[[V0]], %[[V1]], %[[V0]]) lr(%[[LR]]) step(%[[T]]) betas(0.9, 0.999) eps(1.0e-08, outside_sqrt) weight_decay(0.01) {f32_bias_correction} : tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>
// CHECK-NOT:     tx.adam
// CHECK:         return %[[NP]]#0, %[[NP]]#1, %[[NP]]#2, %[[OTHER]]
func.func @adam_merge_existing(%p0: tensor<4x8xf32>, %g0: tensor<4x8xf32>, %m0: tensor<4x8xf32>, %v0: tensor<4x8xf32>, %p1: tensor<8xf32>, %g1: tensor<8xf32>, %m1: tensor<8xf32>, %v1: tensor<8xf32>,
    %lr: tensor<f32>, %step: tensor<f32>)
    -> (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<8xf32>) {
  %a:3 = tx.adam adamw params(%p0) grads(%g0) exp_avg(%m0) exp_avg_sq(%v0) lr(%lr) step(%step)
      betas(0.9, 0.999) eps(1.0e-08, outside_sqrt) weight_decay(0.01) {f32_bias_correction} : tensor<4x8xf32>
  %b:3 = tx.adam adamw params(%p1) grads(%g1) exp_avg(%m1) exp_avg_sq(%v1) lr(%lr) step(%step)
      betas(0.9, 0.999) eps(1.0e-08, outside_sqrt) weight_decay(0.01) {f32_bias_correction} : tensor<8xf32>
  %c:3 = tx.adam adamw params(%p1) grads(%g1) exp_avg(%m1) exp_avg_sq(%v1) lr(%lr) step(%step)
      betas(0.8, 0.999) eps(1.0e-08, outside_sqrt) weight_decay(0.01) : tensor<8xf32>
  %wd_c = tx.constant dense<0.01> : tensor<f32>
  %lrwd_c = tx.mul %lr, %wd_c : tensor<f32>, tensor<f32>
  %one_c = tx.constant dense<1.0> : tensor<f32>
  %decay_c = tx.sub %one_c, %lrwd_c : tensor<f32>, tensor<f32>
  %pd_c = tx.mul %p0, %decay_c : tensor<4x8xf32>, tensor<f32>
  %b1_c = tx.constant dense<0.9> : tensor<f32>
  %mb_c = tx.mul %m0, %b1_c : tensor<4x8xf32>, tensor<f32>
  %c1_c = tx.constant dense<0.1> : tensor<f32>
  %gc_c = tx.mul %g0, %c1_c : tensor<4x8xf32>, tensor<f32>
  %m1_c = tx.add %mb_c, %gc_c : tensor<4x8xf32>, tensor<4x8xf32>
  %b2_c = tx.constant dense<0.999> : tensor<f32>
  %vb_c = tx.mul %v0, %b2_c : tensor<4x8xf32>, tensor<f32>
  %c2_c = tx.constant dense<0.001> : tensor<f32>
  %gc2_c = tx.mul %g0, %c2_c : tensor<4x8xf32>, tensor<f32>
  %gg_c = tx.mul %gc2_c, %g0 : tensor<4x8xf32>, tensor<4x8xf32>
  %v1_c = tx.add %vb_c, %gg_c : tensor<4x8xf32>, tensor<4x8xf32>
  %bb1_c = tx.constant dense<0.9> : tensor<f32>
  %pow1_c = tx.pow %bb1_c, %step : tensor<f32>, tensor<f32>
  %one1_c = tx.constant dense<1.0> : tensor<f32>
  %bc1_c = tx.sub %one1_c, %pow1_c : tensor<f32>, tensor<f32>
  %mhat_c = tx.div %m1_c, %bc1_c : tensor<4x8xf32>, tensor<f32>
  %bb2_c = tx.constant dense<0.999> : tensor<f32>
  %pow2_c = tx.pow %bb2_c, %step : tensor<f32>, tensor<f32>
  %one2_c = tx.constant dense<1.0> : tensor<f32>
  %bc2_c = tx.sub %one2_c, %pow2_c : tensor<f32>, tensor<f32>
  %vhat_c = tx.div %v1_c, %bc2_c : tensor<4x8xf32>, tensor<f32>
  %num_c = tx.mul %lr, %mhat_c : tensor<f32>, tensor<4x8xf32>
  %sqrt_c = tx.sqrt %vhat_c : tensor<4x8xf32>
  %eps_c = tx.constant dense<1.0e-08> : tensor<f32>
  %den_c = tx.add %sqrt_c, %eps_c : tensor<4x8xf32>, tensor<f32>
  %upd_c = tx.div %num_c, %den_c : tensor<4x8xf32>, tensor<4x8xf32>
    %p1_c = tx.sub %pd_c, %upd_c : tensor<4x8xf32>, tensor<4x8xf32>
  return %a#0, %b#0, %p1_c, %c#0 : tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<8xf32>
}

// -----

// Two consecutive steps of one parameter: the second consumes the first's
// results, so merging them would make a cycle. Two tx.adam ops, in order.
// CHECK-LABEL: func.func @adamw_two_steps_not_merged
// CHECK-SAME:    %[[P:[^:]+]]: tensor<8xf32>, %[[G:[^:]+]]: tensor<8xf32>, %[[M:[^:]+]]: tensor<8xf32>, %[[V:[^:]+]]: tensor<8xf32>, %[[LR:[^:]+]]: tensor<f32>, %[[T:[^:]+]]: tensor<f32>
// CHECK:         %[[A:[^,]+]], %[[AM:[^,]+]], %[[AV:[^ ]+]] = tx.adam adamw params(%[[P]]) grads(%[[G]]) exp_avg(%[[M]]) exp_avg_sq(%[[V]])
// CHECK:         %[[B:[^,]+]], %{{.+}}, %{{.+}} = tx.adam adamw params(%[[A]]) grads(%[[G]]) exp_avg(%[[AM]]) exp_avg_sq(%[[AV]])
// CHECK:         return %[[B]]
func.func @adamw_two_steps_not_merged(%p: tensor<8xf32>, %g: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>, %lr: tensor<f32>, %step: tensor<f32>)
    -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %wd_0 = tx.constant dense<0.01> : tensor<f32>
  %lrwd_0 = tx.mul %lr, %wd_0 : tensor<f32>, tensor<f32>
  %one_0 = tx.constant dense<1.0> : tensor<f32>
  %decay_0 = tx.sub %one_0, %lrwd_0 : tensor<f32>, tensor<f32>
  %pd_0 = tx.mul %p, %decay_0 : tensor<8xf32>, tensor<f32>
  %b1_0 = tx.constant dense<0.9> : tensor<f32>
  %mb_0 = tx.mul %m, %b1_0 : tensor<8xf32>, tensor<f32>
  %c1_0 = tx.constant dense<0.1> : tensor<f32>
  %gc_0 = tx.mul %g, %c1_0 : tensor<8xf32>, tensor<f32>
  %m1_0 = tx.add %mb_0, %gc_0 : tensor<8xf32>, tensor<8xf32>
  %b2_0 = tx.constant dense<0.999> : tensor<f32>
  %vb_0 = tx.mul %v, %b2_0 : tensor<8xf32>, tensor<f32>
  %c2_0 = tx.constant dense<0.001> : tensor<f32>
  %gc2_0 = tx.mul %g, %c2_0 : tensor<8xf32>, tensor<f32>
  %gg_0 = tx.mul %gc2_0, %g : tensor<8xf32>, tensor<8xf32>
  %v1_0 = tx.add %vb_0, %gg_0 : tensor<8xf32>, tensor<8xf32>
  %bb1_0 = tx.constant dense<0.9> : tensor<f32>
  %pow1_0 = tx.pow %bb1_0, %step : tensor<f32>, tensor<f32>
  %one1_0 = tx.constant dense<1.0> : tensor<f32>
  %bc1_0 = tx.sub %one1_0, %pow1_0 : tensor<f32>, tensor<f32>
  %mhat_0 = tx.div %m1_0, %bc1_0 : tensor<8xf32>, tensor<f32>
  %bb2_0 = tx.constant dense<0.999> : tensor<f32>
  %pow2_0 = tx.pow %bb2_0, %step : tensor<f32>, tensor<f32>
  %one2_0 = tx.constant dense<1.0> : tensor<f32>
  %bc2_0 = tx.sub %one2_0, %pow2_0 : tensor<f32>, tensor<f32>
  %vhat_0 = tx.div %v1_0, %bc2_0 : tensor<8xf32>, tensor<f32>
  %num_0 = tx.mul %lr, %mhat_0 : tensor<f32>, tensor<8xf32>
  %sqrt_0 = tx.sqrt %vhat_0 : tensor<8xf32>
  %eps_0 = tx.constant dense<1.0e-08> : tensor<f32>
  %den_0 = tx.add %sqrt_0, %eps_0 : tensor<8xf32>, tensor<f32>
  %upd_0 = tx.div %num_0, %den_0 : tensor<8xf32>, tensor<8xf32>
    %p1_0 = tx.sub %pd_0, %upd_0 : tensor<8xf32>, tensor<8xf32>
  %wd_1 = tx.constant dense<0.01> : tensor<f32>
  %lrwd_1 = tx.mul %lr, %wd_1 : tensor<f32>, tensor<f32>
  %one_1 = tx.constant dense<1.0> : tensor<f32>
  %decay_1 = tx.sub %one_1, %lrwd_1 : tensor<f32>, tensor<f32>
  %pd_1 = tx.mul %p1_0, %decay_1 : tensor<8xf32>, tensor<f32>
  %b1_1 = tx.constant dense<0.9> : tensor<f32>
  %mb_1 = tx.mul %m1_0, %b1_1 : tensor<8xf32>, tensor<f32>
  %c1_1 = tx.constant dense<0.1> : tensor<f32>
  %gc_1 = tx.mul %g, %c1_1 : tensor<8xf32>, tensor<f32>
  %m1_1 = tx.add %mb_1, %gc_1 : tensor<8xf32>, tensor<8xf32>
  %b2_1 = tx.constant dense<0.999> : tensor<f32>
  %vb_1 = tx.mul %v1_0, %b2_1 : tensor<8xf32>, tensor<f32>
  %c2_1 = tx.constant dense<0.001> : tensor<f32>
  %gc2_1 = tx.mul %g, %c2_1 : tensor<8xf32>, tensor<f32>
  %gg_1 = tx.mul %gc2_1, %g : tensor<8xf32>, tensor<8xf32>
  %v1_1 = tx.add %vb_1, %gg_1 : tensor<8xf32>, tensor<8xf32>
  %bb1_1 = tx.constant dense<0.9> : tensor<f32>
  %pow1_1 = tx.pow %bb1_1, %step : tensor<f32>, tensor<f32>
  %one1_1 = tx.constant dense<1.0> : tensor<f32>
  %bc1_1 = tx.sub %one1_1, %pow1_1 : tensor<f32>, tensor<f32>
  %mhat_1 = tx.div %m1_1, %bc1_1 : tensor<8xf32>, tensor<f32>
  %bb2_1 = tx.constant dense<0.999> : tensor<f32>
  %pow2_1 = tx.pow %bb2_1, %step : tensor<f32>, tensor<f32>
  %one2_1 = tx.constant dense<1.0> : tensor<f32>
  %bc2_1 = tx.sub %one2_1, %pow2_1 : tensor<f32>, tensor<f32>
  %vhat_1 = tx.div %v1_1, %bc2_1 : tensor<8xf32>, tensor<f32>
  %num_1 = tx.mul %lr, %mhat_1 : tensor<f32>, tensor<8xf32>
  %sqrt_1 = tx.sqrt %vhat_1 : tensor<8xf32>
  %eps_1 = tx.constant dense<1.0e-08> : tensor<f32>
  %den_1 = tx.add %sqrt_1, %eps_1 : tensor<8xf32>, tensor<f32>
  %upd_1 = tx.div %num_1, %den_1 : tensor<8xf32>, tensor<8xf32>
    %p1_1 = tx.sub %pd_1, %upd_1 : tensor<8xf32>, tensor<8xf32>
  return %p1_1, %m1_1, %v1_1 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}
