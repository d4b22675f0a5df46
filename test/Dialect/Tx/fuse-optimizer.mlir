// RUN: txopt-opt %s --split-input-file --tx-fuse-optimizer | FileCheck %s
// RUN: txopt-opt %s --split-input-file --tx-fuse-optimizer=explain=true 2>&1 >/dev/null \
// RUN:   | FileCheck %s --check-prefix=EXPLAIN --implicit-check-not=remark

// The EXPLAIN lines check the near-miss remark that explain=true adds at the
// anchor (the parameter update on the line after them) of every Adam or SGD
// candidate that was not fused; fused chains and non-candidates stay silent
// (--implicit-check-not).

//===----------------------------------------------------------------------===//
// Fused: one chain
//===----------------------------------------------------------------------===//

// adamw_step_op17.onnx as the importer writes it: PyTorch AdamW exported by
// the TorchScript exporter (opset 17), step and lr as function inputs.
// CHECK-LABEL: func.func @adamw_step_op17
// CHECK-SAME:    %[[P:[^:]+]]: tensor<64x32xf32>, %[[G:[^:]+]]: tensor<64x32xf32>, %[[M:[^:]+]]: tensor<64x32xf32>, %[[V:[^:]+]]: tensor<64x32xf32>, %[[LR:[^:]+]]: tensor<f32>, %[[T:[^:]+]]: tensor<f32>
// CHECK-NOT:     tx.mul
// CHECK-NOT:     tx.sqrt
// CHECK-NOT:     tx.pow
// CHECK-NOT:     tx.div
// CHECK:         %[[NP:[^,]+]], %[[NM:[^,]+]], %[[NV:[^ ]+]] = tx.adam adamw params(%[[P]]) grads(%[[G]]) exp_avg(%[[M]]) exp_avg_sq(%[[V]]) lr(%[[LR]]) step(%[[T]]) betas(0.9, 0.999) eps(1.0e-08, outside_sqrt) weight_decay(0.01) {f32_bias_correction} : tensor<64x32xf32>
// CHECK-NEXT:    return %[[NP]], %[[NM]], %[[NV]]
func.func @adamw_step_op17(%p: tensor<64x32xf32>, %g: tensor<64x32xf32>, %m: tensor<64x32xf32>, %v: tensor<64x32xf32>, %lr: tensor<f32>, %step: tensor<f32>)
    -> (tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>) {
  %wd = tx.constant dense<0.01> : tensor<f32>
  %lrwd = tx.mul %lr, %wd : tensor<f32>, tensor<f32>
  %one = tx.constant dense<1.0> : tensor<f32>
  %decay = tx.sub %one, %lrwd : tensor<f32>, tensor<f32>
  %pd = tx.mul %p, %decay : tensor<64x32xf32>, tensor<f32>
  %b1 = tx.constant dense<0.9> : tensor<f32>
  %mb = tx.mul %m, %b1 : tensor<64x32xf32>, tensor<f32>
  %c1 = tx.constant dense<0.1> : tensor<f32>
  %gc = tx.mul %g, %c1 : tensor<64x32xf32>, tensor<f32>
  %m1 = tx.add %mb, %gc : tensor<64x32xf32>, tensor<64x32xf32>
  %b2 = tx.constant dense<0.999> : tensor<f32>
  %vb = tx.mul %v, %b2 : tensor<64x32xf32>, tensor<f32>
  %c2 = tx.constant dense<0.001> : tensor<f32>
  %gc2 = tx.mul %g, %c2 : tensor<64x32xf32>, tensor<f32>
  %gg = tx.mul %gc2, %g : tensor<64x32xf32>, tensor<64x32xf32>
  %v1 = tx.add %vb, %gg : tensor<64x32xf32>, tensor<64x32xf32>
  %bb1 = tx.constant dense<0.9> : tensor<f32>
  %pow1 = tx.pow %bb1, %step : tensor<f32>, tensor<f32>
  %one1 = tx.constant dense<1.0> : tensor<f32>
  %bc1 = tx.sub %one1, %pow1 : tensor<f32>, tensor<f32>
  %mhat = tx.div %m1, %bc1 : tensor<64x32xf32>, tensor<f32>
  %bb2 = tx.constant dense<0.999> : tensor<f32>
  %pow2 = tx.pow %bb2, %step : tensor<f32>, tensor<f32>
  %one2 = tx.constant dense<1.0> : tensor<f32>
  %bc2 = tx.sub %one2, %pow2 : tensor<f32>, tensor<f32>
  %vhat = tx.div %v1, %bc2 : tensor<64x32xf32>, tensor<f32>
  %num = tx.mul %lr, %mhat : tensor<f32>, tensor<64x32xf32>
  %sqrt = tx.sqrt %vhat : tensor<64x32xf32>
  %eps = tx.constant dense<1.0e-08> : tensor<f32>
  %den = tx.add %sqrt, %eps : tensor<64x32xf32>, tensor<f32>
  %upd = tx.div %num, %den : tensor<64x32xf32>, tensor<64x32xf32>
    %p1 = tx.sub %pd, %upd : tensor<64x32xf32>, tensor<64x32xf32>
  return %p1, %m1, %v1 : tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>
}

// -----

// torch.optim.Adam with L2 decay: g + wd * p feeds both moments, p itself is
// not decayed.
// CHECK-LABEL: func.func @adam_l2_decay
// CHECK-SAME:    %[[P:[^:]+]]: tensor<4x8xf32>, %[[G:[^:]+]]: tensor<4x8xf32>, %[[M:[^:]+]]: tensor<4x8xf32>, %[[V:[^:]+]]: tensor<4x8xf32>, %[[LR:[^:]+]]: tensor<f32>, %[[T:[^:]+]]: tensor<f32>
// CHECK-NOT:     tx.mul
// CHECK-NOT:     tx.sqrt
// CHECK-NOT:     tx.pow
// CHECK:         %[[NP:[^,]+]], %[[NM:[^,]+]], %[[NV:[^ ]+]] = tx.adam adam params(%[[P]]) grads(%[[G]]) exp_avg(%[[M]]) exp_avg_sq(%[[V]]) lr(%[[LR]]) step(%[[T]]) betas(0.9, 0.999) eps(1.0e-08, outside_sqrt) weight_decay(0.5) {f32_bias_correction} : tensor<4x8xf32>
// CHECK-NEXT:    return %[[NP]], %[[NM]], %[[NV]]
func.func @adam_l2_decay(%p: tensor<4x8xf32>, %g: tensor<4x8xf32>, %m: tensor<4x8xf32>, %v: tensor<4x8xf32>, %lr: tensor<f32>, %step: tensor<f32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %wd = tx.constant dense<0.5> : tensor<f32>
  %pwd = tx.mul %p, %wd : tensor<4x8xf32>, tensor<f32>
  %ge = tx.add %g, %pwd : tensor<4x8xf32>, tensor<4x8xf32>
  %b1 = tx.constant dense<0.9> : tensor<f32>
  %mb = tx.mul %m, %b1 : tensor<4x8xf32>, tensor<f32>
  %c1 = tx.constant dense<0.1> : tensor<f32>
  %gc = tx.mul %ge, %c1 : tensor<4x8xf32>, tensor<f32>
  %m1 = tx.add %mb, %gc : tensor<4x8xf32>, tensor<4x8xf32>
  %b2 = tx.constant dense<0.999> : tensor<f32>
  %vb = tx.mul %v, %b2 : tensor<4x8xf32>, tensor<f32>
  %c2 = tx.constant dense<0.001> : tensor<f32>
  %gc2 = tx.mul %ge, %c2 : tensor<4x8xf32>, tensor<f32>
  %gg = tx.mul %gc2, %ge : tensor<4x8xf32>, tensor<4x8xf32>
  %v1 = tx.add %vb, %gg : tensor<4x8xf32>, tensor<4x8xf32>
  %one = tx.constant dense<1.0> : tensor<f32>
  %pow1 = tx.pow %b1, %step : tensor<f32>, tensor<f32>
  %bc1 = tx.sub %one, %pow1 : tensor<f32>, tensor<f32>
  %mhat = tx.div %m1, %bc1 : tensor<4x8xf32>, tensor<f32>
  %pow2 = tx.pow %b2, %step : tensor<f32>, tensor<f32>
  %bc2 = tx.sub %one, %pow2 : tensor<f32>, tensor<f32>
  %vhat = tx.div %v1, %bc2 : tensor<4x8xf32>, tensor<f32>
  %num = tx.mul %lr, %mhat : tensor<f32>, tensor<4x8xf32>
  %sqrt = tx.sqrt %vhat : tensor<4x8xf32>
  %eps = tx.constant dense<1.0e-08> : tensor<f32>
  %den = tx.add %sqrt, %eps : tensor<4x8xf32>, tensor<f32>
  %upd = tx.div %num, %den : tensor<4x8xf32>, tensor<4x8xf32>
  %p1 = tx.sub %p, %upd : tensor<4x8xf32>, tensor<4x8xf32>
  return %p1, %m1, %v1 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// PyTorch's _single_tensor_adamw written out: p.mul_(1 - lr * wd), lerp_ for
// m, step_size = lr / bc1, sqrt(v) / sqrt(bc2) + eps, and addcdiv_ with
// value = -step_size (an Add of a negated update).
// CHECK-LABEL: func.func @adamw_step_size_form
// CHECK-SAME:    %[[P:[^:]+]]: tensor<4x8xf32>, %[[G:[^:]+]]: tensor<4x8xf32>, %[[M:[^:]+]]: tensor<4x8xf32>, %[[V:[^:]+]]: tensor<4x8xf32>, %[[LR:[^:]+]]: tensor<f32>, %[[T:[^:]+]]: tensor<f32>
// CHECK-NOT:     tx.mul
// CHECK-NOT:     tx.sqrt
// CHECK-NOT:     tx.pow
// CHECK-NOT:     tx.neg
// CHECK:         %[[NP:[^,]+]], %[[NM:[^,]+]], %[[NV:[^ ]+]] = tx.adam adamw params(%[[P]]) grads(%[[G]]) exp_avg(%[[M]]) exp_avg_sq(%[[V]]) lr(%[[LR]]) step(%[[T]]) betas(0.9, 0.999) eps(1.0e-08, outside_sqrt) weight_decay(0.01) {f32_bias_correction} : tensor<4x8xf32>
// CHECK-NEXT:    return %[[NP]], %[[NM]], %[[NV]]
func.func @adamw_step_size_form(%p: tensor<4x8xf32>, %g: tensor<4x8xf32>, %m: tensor<4x8xf32>, %v: tensor<4x8xf32>, %lr: tensor<f32>, %step: tensor<f32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %one = tx.constant dense<1.0> : tensor<f32>
  %wd = tx.constant dense<0.01> : tensor<f32>
  %lrwd = tx.mul %lr, %wd : tensor<f32>, tensor<f32>
  %decay = tx.sub %one, %lrwd : tensor<f32>, tensor<f32>
  %pd = tx.mul %p, %decay : tensor<4x8xf32>, tensor<f32>
  %c1 = tx.constant dense<0.1> : tensor<f32>
  %gm = tx.sub %g, %m : tensor<4x8xf32>, tensor<4x8xf32>
  %lerp = tx.mul %gm, %c1 : tensor<4x8xf32>, tensor<f32>
  %m1 = tx.add %m, %lerp : tensor<4x8xf32>, tensor<4x8xf32>
  %b2 = tx.constant dense<0.999> : tensor<f32>
  %vb = tx.mul %v, %b2 : tensor<4x8xf32>, tensor<f32>
  %gg = tx.mul %g, %g : tensor<4x8xf32>, tensor<4x8xf32>
  %c2 = tx.constant dense<0.001> : tensor<f32>
  %ggc = tx.mul %gg, %c2 : tensor<4x8xf32>, tensor<f32>
  %v1 = tx.add %vb, %ggc : tensor<4x8xf32>, tensor<4x8xf32>
  %b1 = tx.constant dense<0.9> : tensor<f32>
  %pow1 = tx.pow %b1, %step : tensor<f32>, tensor<f32>
  %bc1 = tx.sub %one, %pow1 : tensor<f32>, tensor<f32>
  %pow2 = tx.pow %b2, %step : tensor<f32>, tensor<f32>
  %bc2 = tx.sub %one, %pow2 : tensor<f32>, tensor<f32>
  %step_size = tx.div %lr, %bc1 : tensor<f32>, tensor<f32>
  %bc2_sqrt = tx.sqrt %bc2 : tensor<f32>
  %vsqrt = tx.sqrt %v1 : tensor<4x8xf32>
  %vs = tx.div %vsqrt, %bc2_sqrt : tensor<4x8xf32>, tensor<f32>
  %eps = tx.constant dense<1.0e-08> : tensor<f32>
  %den = tx.add %vs, %eps : tensor<4x8xf32>, tensor<f32>
  %ratio = tx.div %m1, %den : tensor<4x8xf32>, tensor<4x8xf32>
  %neg = tx.neg %step_size : tensor<f32>
  %upd = tx.mul %ratio, %neg : tensor<4x8xf32>, tensor<f32>
  %p1 = tx.add %pd, %upd : tensor<4x8xf32>, tensor<4x8xf32>
  return %p1, %m1, %v1 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Epsilon under the root, a constant step (folded into a tx.constant
// operand), decay written as p - lr * wd * p, g * g as Pow(g, 2).
// CHECK-LABEL: func.func @adamw_eps_inside_sqrt_constant_step
// CHECK-SAME:    %[[P:[^:]+]]: tensor<8xf32>, %[[G:[^:]+]]: tensor<8xf32>, %[[M:[^:]+]]: tensor<8xf32>, %[[V:[^:]+]]: tensor<8xf32>, %[[LR:[^:]+]]: tensor<f32>
// CHECK-NOT:     tx.mul
// CHECK-NOT:     tx.sqrt
// CHECK-NOT:     tx.pow
// CHECK:         %[[T:.+]] = tx.constant dense<5.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[NP:[^,]+]], %[[NM:[^,]+]], %[[NV:[^ ]+]] = tx.adam adamw params(%[[P]]) grads(%[[G]]) exp_avg(%[[M]]) exp_avg_sq(%[[V]]) lr(%[[LR]]) step(%[[T]]) betas(0.9, 0.999) eps(1.0e-06, inside_sqrt) weight_decay(0.01) {f32_bias_correction} : tensor<8xf32>
// CHECK-NEXT:    return %[[NP]], %[[NM]], %[[NV]]
func.func @adamw_eps_inside_sqrt_constant_step(%p: tensor<8xf32>, %g: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>, %lr: tensor<f32>)
    -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %step = tx.constant dense<5.0> : tensor<f32>
  %wd = tx.constant dense<0.01> : tensor<f32>
  %lrwd = tx.mul %wd, %lr : tensor<f32>, tensor<f32>
  %dp = tx.mul %lrwd, %p : tensor<f32>, tensor<8xf32>
  %pd = tx.sub %p, %dp : tensor<8xf32>, tensor<8xf32>
  %b1 = tx.constant dense<0.9> : tensor<f32>
  %mb = tx.mul %b1, %m : tensor<f32>, tensor<8xf32>
  %c1 = tx.constant dense<0.1> : tensor<f32>
  %gc = tx.mul %c1, %g : tensor<f32>, tensor<8xf32>
  %m1 = tx.add %gc, %mb : tensor<8xf32>, tensor<8xf32>
  %b2 = tx.constant dense<0.999> : tensor<f32>
  %vb = tx.mul %b2, %v : tensor<f32>, tensor<8xf32>
  %two = tx.constant dense<2.0> : tensor<f32>
  %gg = tx.pow %g, %two : tensor<8xf32>, tensor<f32>
  %c2 = tx.constant dense<0.001> : tensor<f32>
  %ggc = tx.mul %c2, %gg : tensor<f32>, tensor<8xf32>
  %v1 = tx.add %vb, %ggc : tensor<8xf32>, tensor<8xf32>
  %one = tx.constant dense<1.0> : tensor<f32>
  %pow1 = tx.pow %b1, %step : tensor<f32>, tensor<f32>
  %bc1 = tx.sub %one, %pow1 : tensor<f32>, tensor<f32>
  %pow2 = tx.pow %b2, %step : tensor<f32>, tensor<f32>
  %bc2 = tx.sub %one, %pow2 : tensor<f32>, tensor<f32>
  %mhat = tx.div %m1, %bc1 : tensor<8xf32>, tensor<f32>
  %vhat = tx.div %v1, %bc2 : tensor<8xf32>, tensor<f32>
  %eps = tx.constant dense<1.0e-06> : tensor<f32>
  %ve = tx.add %eps, %vhat : tensor<f32>, tensor<8xf32>
  %den = tx.sqrt %ve : tensor<8xf32>
  %ratio = tx.div %mhat, %den : tensor<8xf32>, tensor<8xf32>
  %upd = tx.mul %ratio, %lr : tensor<8xf32>, tensor<f32>
  %p1 = tx.sub %pd, %upd : tensor<8xf32>, tensor<8xf32>
  return %p1, %m1, %v1 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// No bias correction, no weight decay and a constant lr folded into the
// update's factors: lr becomes a tx.constant operand and there is no step.
// CHECK-LABEL: func.func @adam_no_bias_correction_constant_lr
// CHECK-SAME:    %[[P:[^:]+]]: tensor<8xf32>, %[[G:[^:]+]]: tensor<8xf32>, %[[M:[^:]+]]: tensor<8xf32>, %[[V:[^:]+]]: tensor<8xf32>
// CHECK-NOT:     tx.mul
// CHECK-NOT:     tx.sqrt
// CHECK-NOT:     tx.pow
// CHECK:         %[[LR:.+]] = tx.constant dense<1.000000e-03> : tensor<f32>
// CHECK-NEXT:    %[[NP:[^,]+]], %[[NM:[^,]+]], %[[NV:[^ ]+]] = tx.adam adamw params(%[[P]]) grads(%[[G]]) exp_avg(%[[M]]) exp_avg_sq(%[[V]]) lr(%[[LR]]) betas(0.9, 0.999) eps(1.0e-08, outside_sqrt) weight_decay(0.0) {bias_correction = false} : tensor<8xf32>
// CHECK-NEXT:    return %[[NP]], %[[NM]], %[[NV]]
func.func @adam_no_bias_correction_constant_lr(%p: tensor<8xf32>, %g: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>)
    -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %b1 = tx.constant dense<0.9> : tensor<f32>
  %mb = tx.mul %m, %b1 : tensor<8xf32>, tensor<f32>
  %c1 = tx.constant dense<0.1> : tensor<f32>
  %gc = tx.mul %g, %c1 : tensor<8xf32>, tensor<f32>
  %m1 = tx.add %mb, %gc : tensor<8xf32>, tensor<8xf32>
  %b2 = tx.constant dense<0.999> : tensor<f32>
  %vb = tx.mul %v, %b2 : tensor<8xf32>, tensor<f32>
  %c2 = tx.constant dense<0.001> : tensor<f32>
  %gc2 = tx.mul %g, %c2 : tensor<8xf32>, tensor<f32>
  %gg = tx.mul %gc2, %g : tensor<8xf32>, tensor<8xf32>
  %v1 = tx.add %vb, %gg : tensor<8xf32>, tensor<8xf32>
  %lr = tx.constant dense<0.001> : tensor<f32>
  %num = tx.mul %m1, %lr : tensor<8xf32>, tensor<f32>
  %sqrt = tx.sqrt %v1 : tensor<8xf32>
  %eps = tx.constant dense<1.0e-08> : tensor<f32>
  %den = tx.add %sqrt, %eps : tensor<8xf32>, tensor<f32>
  %upd = tx.div %num, %den : tensor<8xf32>, tensor<8xf32>
  %p1 = tx.sub %p, %upd : tensor<8xf32>, tensor<8xf32>
  return %p1, %m1, %v1 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// adamw_multi_conststep_op17.onnx (TorchScript, opset 17): the step is a
// constant, so the exporter folded 1 - b1^10 and 1 - b2^10 into constants;
// lr stays an argument. One integer step (10) reproduces both: tx.adam gets
// it as a tx.constant operand.
// CHECK-LABEL: func.func @adamw_folded_bias_corrections
// CHECK-SAME:    %[[P:[^:]+]]: tensor<8xf32>, %[[G:[^:]+]]: tensor<8xf32>, %[[M:[^:]+]]: tensor<8xf32>, %[[V:[^:]+]]: tensor<8xf32>, %[[LR:[^:]+]]: tensor<f32>
// CHECK-NOT:     tx.div
// CHECK-NOT:     tx.sqrt
// CHECK:         %[[T:.+]] = tx.constant dense<1.000000e+01> : tensor<f32>
// CHECK-NEXT:    %[[NP:[^,]+]], %[[NM:[^,]+]], %[[NV:[^ ]+]] = tx.adam adamw params(%[[P]]) grads(%[[G]]) exp_avg(%[[M]]) exp_avg_sq(%[[V]]) lr(%[[LR]]) step(%[[T]]) betas(0.9, 0.999) eps(1.0e-08, outside_sqrt) weight_decay(0.01) : tensor<8xf32>
// CHECK-NEXT:    return %[[NP]], %[[NM]], %[[NV]]
func.func @adamw_folded_bias_corrections(%p: tensor<8xf32>, %g: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>, %lr: tensor<f32>)
    -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %b1 = tx.constant dense<0.899999976> : tensor<f32>
  %mb = tx.mul %m, %b1 : tensor<8xf32>, tensor<f32>
  %c1 = tx.constant dense<1.000000e-01> : tensor<f32>
  %gc = tx.mul %g, %c1 : tensor<8xf32>, tensor<f32>
  %m1 = tx.add %mb, %gc : tensor<8xf32>, tensor<8xf32>
  %b2 = tx.constant dense<9.990000e-01> : tensor<f32>
  %vb = tx.mul %v, %b2 : tensor<8xf32>, tensor<f32>
  %c2 = tx.constant dense<1.000000e-03> : tensor<f32>
  %gc2 = tx.mul %g, %c2 : tensor<8xf32>, tensor<f32>
  %gg = tx.mul %gc2, %g : tensor<8xf32>, tensor<8xf32>
  %v1 = tx.add %vb, %gg : tensor<8xf32>, tensor<8xf32>
  %bc1 = tx.constant dense<0.65132153> : tensor<f32>
  %mhat = tx.div %m1, %bc1 : tensor<8xf32>, tensor<f32>
  %bc2 = tx.constant dense<0.00995511934> : tensor<f32>
  %vhat = tx.div %v1, %bc2 : tensor<8xf32>, tensor<f32>
  %wd = tx.constant dense<0.00999999977> : tensor<f32>
  %lrwd = tx.mul %lr, %wd : tensor<f32>, tensor<f32>
  %dp = tx.mul %lrwd, %p : tensor<f32>, tensor<8xf32>
  %pd = tx.sub %p, %dp : tensor<8xf32>, tensor<8xf32>
  %num = tx.mul %lr, %mhat : tensor<f32>, tensor<8xf32>
  %sqrt = tx.sqrt %vhat : tensor<8xf32>
  %eps = tx.constant dense<9.99999993E-9> : tensor<f32>
  %den = tx.add %sqrt, %eps : tensor<8xf32>, tensor<f32>
  %upd = tx.div %num, %den : tensor<8xf32>, tensor<8xf32>
  %p1 = tx.sub %pd, %upd : tensor<8xf32>, tensor<8xf32>
  return %p1, %m1, %v1 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// torch.optim.AdamW's _single_tensor_adamw with a constant lr and step
// (the in-graph form of a captured step): p * (1 - lr*wd) folded,
// step_size = lr / (1 - b1^10) folded into one factor, and sqrt(v1)
// divided by the folded sqrt(1 - b2^10). The second moment's correction
// pins the step (10); lr is the factor times 1 - b1^10 as tx.adam
// computes it (1e-3 to an ulp: the folded factor and 1 - b1^10 are each
// rounded to f32). The constants are torch's, formed in double from 0.9,
// 0.999 and lr 1e-3. wd is (1 - 0.99999) / lr: the f32 rounding of 0.99999
// shows in wd, but lr * wd, all that tx.adam uses, is the graph's.
// CHECK-LABEL: func.func @adamw_torch_constant_lr_and_step
// CHECK-SAME:    %[[P:[^:]+]]: tensor<8xf32>, %[[G:[^:]+]]: tensor<8xf32>, %[[M:[^:]+]]: tensor<8xf32>, %[[V:[^:]+]]: tensor<8xf32>
// CHECK-NOT:     tx.div
// CHECK-DAG:     %[[LR:.+]] = tx.constant dense<9.99999931E-4> : tensor<f32>
// CHECK-DAG:     %[[T:.+]] = tx.constant dense<1.000000e+01> : tensor<f32>
// CHECK:         %[[NP:[^,]+]], %[[NM:[^,]+]], %[[NV:[^ ]+]] = tx.adam adamw params(%[[P]]) grads(%[[G]]) exp_avg(%[[M]]) exp_avg_sq(%[[V]]) lr(%[[LR]]) step(%[[T]]) betas(0.9, 0.999) eps(1.0e-08, outside_sqrt) weight_decay(0.010013581) : tensor<8xf32>
// CHECK-NEXT:    return %[[NP]], %[[NM]], %[[NV]]
func.func @adamw_torch_constant_lr_and_step(%p: tensor<8xf32>, %g: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>)
    -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %decay = tx.constant dense<0.999989986> : tensor<f32>
  %pd = tx.mul %p, %decay : tensor<8xf32>, tensor<f32>
  %diff = tx.sub %g, %m : tensor<8xf32>, tensor<8xf32>
  %w = tx.constant dense<1.000000e-01> : tensor<f32>
  %dw = tx.mul %w, %diff : tensor<f32>, tensor<8xf32>
  %m1 = tx.add %m, %dw : tensor<8xf32>, tensor<8xf32>
  %b2 = tx.constant dense<9.990000e-01> : tensor<f32>
  %vb = tx.mul %v, %b2 : tensor<8xf32>, tensor<f32>
  %c2 = tx.constant dense<1.000000e-03> : tensor<f32>
  %gc2 = tx.mul %c2, %g : tensor<f32>, tensor<8xf32>
  %gg = tx.mul %gc2, %g : tensor<8xf32>, tensor<8xf32>
  %v1 = tx.add %vb, %gg : tensor<8xf32>, tensor<8xf32>
  %sqrt = tx.sqrt %v1 : tensor<8xf32>
  %bc2sqrt = tx.constant dense<0.0997753441> : tensor<f32>
  %s = tx.div %sqrt, %bc2sqrt : tensor<8xf32>, tensor<f32>
  %eps = tx.constant dense<9.99999993E-9> : tensor<f32>
  %den = tx.add %s, %eps : tensor<8xf32>, tensor<f32>
  %ratio = tx.div %m1, %den : tensor<8xf32>, tensor<8xf32>
  %neg_step_size = tx.constant dense<-0.00153533998> : tensor<f32>
  %upd = tx.mul %ratio, %neg_step_size : tensor<8xf32>, tensor<f32>
  %p1 = tx.add %pd, %upd : tensor<8xf32>, tensor<8xf32>
  return %p1, %m1, %v1 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// The op17 chain with every commutative operand swapped and the bias
// corrections shared by the two moments' updates (CSE'd scalars may be
// shared, only tensor intermediates must stay private).
// CHECK-LABEL: func.func @adamw_commuted_operands
// CHECK-SAME:    %[[P:[^:]+]]: tensor<4x8xf32>, %[[G:[^:]+]]: tensor<4x8xf32>, %[[M:[^:]+]]: tensor<4x8xf32>, %[[V:[^:]+]]: tensor<4x8xf32>, %[[LR:[^:]+]]: tensor<f32>, %[[T:[^:]+]]: tensor<f32>
// CHECK-NOT:     tx.mul
// CHECK-NOT:     tx.sqrt
// CHECK-NOT:     tx.pow
// CHECK:         %[[NP:[^,]+]], %[[NM:[^,]+]], %[[NV:[^ ]+]] = tx.adam adamw params(%[[P]]) grads(%[[G]]) exp_avg(%[[M]]) exp_avg_sq(%[[V]]) lr(%[[LR]]) step(%[[T]]) betas(0.9, 0.999) eps(1.0e-08, outside_sqrt) weight_decay(0.01) {f32_bias_correction} : tensor<4x8xf32>
// CHECK-NEXT:    return %[[NP]], %[[NM]], %[[NV]]
func.func @adamw_commuted_operands(%p: tensor<4x8xf32>, %g: tensor<4x8xf32>, %m: tensor<4x8xf32>, %v: tensor<4x8xf32>, %lr: tensor<f32>, %step: tensor<f32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %wd = tx.constant dense<0.01> : tensor<f32>
  %lrwd = tx.mul %wd, %lr : tensor<f32>, tensor<f32>
  %one = tx.constant dense<1.0> : tensor<f32>
  %decay = tx.sub %one, %lrwd : tensor<f32>, tensor<f32>
  %pd = tx.mul %decay, %p : tensor<f32>, tensor<4x8xf32>
  %b1 = tx.constant dense<0.9> : tensor<f32>
  %mb = tx.mul %b1, %m : tensor<f32>, tensor<4x8xf32>
  %c1 = tx.constant dense<0.1> : tensor<f32>
  %gc = tx.mul %c1, %g : tensor<f32>, tensor<4x8xf32>
  %m1 = tx.add %gc, %mb : tensor<4x8xf32>, tensor<4x8xf32>
  %b2 = tx.constant dense<0.999> : tensor<f32>
  %vb = tx.mul %b2, %v : tensor<f32>, tensor<4x8xf32>
  %c2 = tx.constant dense<0.001> : tensor<f32>
  %gc2 = tx.mul %c2, %g : tensor<f32>, tensor<4x8xf32>
  %gg = tx.mul %g, %gc2 : tensor<4x8xf32>, tensor<4x8xf32>
  %v1 = tx.add %gg, %vb : tensor<4x8xf32>, tensor<4x8xf32>
  %pow1 = tx.pow %b1, %step : tensor<f32>, tensor<f32>
  %bc1 = tx.sub %one, %pow1 : tensor<f32>, tensor<f32>
  %mhat = tx.div %m1, %bc1 : tensor<4x8xf32>, tensor<f32>
  %pow2 = tx.pow %b2, %step : tensor<f32>, tensor<f32>
  %bc2 = tx.sub %one, %pow2 : tensor<f32>, tensor<f32>
  %vhat = tx.div %v1, %bc2 : tensor<4x8xf32>, tensor<f32>
  %num = tx.mul %mhat, %lr : tensor<4x8xf32>, tensor<f32>
  %sqrt = tx.sqrt %vhat : tensor<4x8xf32>
  %eps = tx.constant dense<1.0e-08> : tensor<f32>
  %den = tx.add %eps, %sqrt : tensor<f32>, tensor<4x8xf32>
  %upd = tx.div %num, %den : tensor<4x8xf32>, tensor<4x8xf32>
  %p1 = tx.sub %pd, %upd : tensor<4x8xf32>, tensor<4x8xf32>
  return %p1, %m1, %v1 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Hyper-parameters are read back as the Python floats behind the f32
// constants: the shortest decimals that round to them (0.9, 0.999, 1e-8,
// 0.01 above). Here the exporter formed 1 - b2 from the f32 0.999
// (0.00099998713, where torch writes f32(1 - 0.999) = 0.001): beta2 becomes
// the shortest decimal that reproduces both constants, 0.9990000129, so
// tx.adam's f32(beta2) and f32(1 - beta2) are the graph's.
// CHECK-LABEL: func.func @adamw_complement_from_f32_beta
// CHECK:         tx.adam adamw {{.+}} betas(0.9, 0.9990000129) eps(1.0e-08, outside_sqrt) weight_decay(0.01) {f32_bias_correction} : tensor<8xf32>
func.func @adamw_complement_from_f32_beta(%p: tensor<8xf32>, %g: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>, %lr: tensor<f32>, %step: tensor<f32>)
    -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %wd = tx.constant dense<0.01> : tensor<f32>
  %lrwd = tx.mul %lr, %wd : tensor<f32>, tensor<f32>
  %dp = tx.mul %lrwd, %p : tensor<f32>, tensor<8xf32>
  %pd = tx.sub %p, %dp : tensor<8xf32>, tensor<8xf32>
  %b1 = tx.constant dense<0.9> : tensor<f32>
  %mb = tx.mul %m, %b1 : tensor<8xf32>, tensor<f32>
  %c1 = tx.constant dense<0.1> : tensor<f32>
  %gc = tx.mul %g, %c1 : tensor<8xf32>, tensor<f32>
  %m1 = tx.add %mb, %gc : tensor<8xf32>, tensor<8xf32>
  %b2 = tx.constant dense<0.999> : tensor<f32>
  %vb = tx.mul %v, %b2 : tensor<8xf32>, tensor<f32>
  %c2 = tx.constant dense<9.99987125E-4> : tensor<f32>
  %gc2 = tx.mul %g, %c2 : tensor<8xf32>, tensor<f32>
  %gg = tx.mul %gc2, %g : tensor<8xf32>, tensor<8xf32>
  %v1 = tx.add %vb, %gg : tensor<8xf32>, tensor<8xf32>
  %bb1 = tx.constant dense<0.9> : tensor<f32>
  %pow1 = tx.pow %bb1, %step : tensor<f32>, tensor<f32>
  %one1 = tx.constant dense<1.0> : tensor<f32>
  %bc1 = tx.sub %one1, %pow1 : tensor<f32>, tensor<f32>
  %mhat = tx.div %m1, %bc1 : tensor<8xf32>, tensor<f32>
  %bb2 = tx.constant dense<0.999> : tensor<f32>
  %pow2 = tx.pow %bb2, %step : tensor<f32>, tensor<f32>
  %one2 = tx.constant dense<1.0> : tensor<f32>
  %bc2 = tx.sub %one2, %pow2 : tensor<f32>, tensor<f32>
  %vhat = tx.div %v1, %bc2 : tensor<8xf32>, tensor<f32>
  %num = tx.mul %lr, %mhat : tensor<f32>, tensor<8xf32>
  %sqrt = tx.sqrt %vhat : tensor<8xf32>
  %eps = tx.constant dense<1.0e-08> : tensor<f32>
  %den = tx.add %sqrt, %eps : tensor<8xf32>, tensor<f32>
  %upd = tx.div %num, %den : tensor<8xf32>, tensor<8xf32>
  %p1 = tx.sub %pd, %upd : tensor<8xf32>, tensor<8xf32>
  return %p1, %m1, %v1 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

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

// -----

//===----------------------------------------------------------------------===//
// Not fused
//===----------------------------------------------------------------------===//

// The bias-corrected first moment is also returned: fusing would compute it
// twice. (The new m and v being returned is expected and fine.)
// CHECK-LABEL: func.func @adamw_no_fuse_escaping_mhat
// CHECK-NOT:     tx.adam
// CHECK:         return
func.func @adamw_no_fuse_escaping_mhat(%p: tensor<8xf32>, %g: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>, %lr: tensor<f32>, %step: tensor<f32>)
    -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %wd = tx.constant dense<0.01> : tensor<f32>
  %lrwd = tx.mul %lr, %wd : tensor<f32>, tensor<f32>
  %one = tx.constant dense<1.0> : tensor<f32>
  %decay = tx.sub %one, %lrwd : tensor<f32>, tensor<f32>
  %pd = tx.mul %p, %decay : tensor<8xf32>, tensor<f32>
  %b1 = tx.constant dense<0.9> : tensor<f32>
  %mb = tx.mul %m, %b1 : tensor<8xf32>, tensor<f32>
  %c1 = tx.constant dense<0.1> : tensor<f32>
  %gc = tx.mul %g, %c1 : tensor<8xf32>, tensor<f32>
  %m1 = tx.add %mb, %gc : tensor<8xf32>, tensor<8xf32>
  %b2 = tx.constant dense<0.999> : tensor<f32>
  %vb = tx.mul %v, %b2 : tensor<8xf32>, tensor<f32>
  %c2 = tx.constant dense<0.001> : tensor<f32>
  %gc2 = tx.mul %g, %c2 : tensor<8xf32>, tensor<f32>
  %gg = tx.mul %gc2, %g : tensor<8xf32>, tensor<8xf32>
  %v1 = tx.add %vb, %gg : tensor<8xf32>, tensor<8xf32>
  %bb1 = tx.constant dense<0.9> : tensor<f32>
  %pow1 = tx.pow %bb1, %step : tensor<f32>, tensor<f32>
  %one1 = tx.constant dense<1.0> : tensor<f32>
  %bc1 = tx.sub %one1, %pow1 : tensor<f32>, tensor<f32>
  %mhat = tx.div %m1, %bc1 : tensor<8xf32>, tensor<f32>
  %bb2 = tx.constant dense<0.999> : tensor<f32>
  %pow2 = tx.pow %bb2, %step : tensor<f32>, tensor<f32>
  %one2 = tx.constant dense<1.0> : tensor<f32>
  %bc2 = tx.sub %one2, %pow2 : tensor<f32>, tensor<f32>
  %vhat = tx.div %v1, %bc2 : tensor<8xf32>, tensor<f32>
  %num = tx.mul %lr, %mhat : tensor<f32>, tensor<8xf32>
  %sqrt = tx.sqrt %vhat : tensor<8xf32>
  %eps = tx.constant dense<1.0e-08> : tensor<f32>
  %den = tx.add %sqrt, %eps : tensor<8xf32>, tensor<f32>
  %upd = tx.div %num, %den : tensor<8xf32>, tensor<8xf32>
  // EXPLAIN: fuse-optimizer.mlir:[[@LINE+1]]:{{[0-9]+}}: remark: not fused: adam: intermediate 'tx.div' has a user outside the update chain
  %p1 = tx.sub %pd, %upd : tensor<8xf32>, tensor<8xf32>
  return %p1, %m1, %v1, %mhat : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// 0.9 * m + 0.2 * g is not a moving average.
// CHECK-LABEL: func.func @adamw_no_fuse_inconsistent_beta1
// CHECK-NOT:     tx.adam
// CHECK:         return
func.func @adamw_no_fuse_inconsistent_beta1(%p: tensor<8xf32>, %g: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>, %lr: tensor<f32>, %step: tensor<f32>)
    -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %wd = tx.constant dense<0.01> : tensor<f32>
  %lrwd = tx.mul %lr, %wd : tensor<f32>, tensor<f32>
  %one = tx.constant dense<1.0> : tensor<f32>
  %decay = tx.sub %one, %lrwd : tensor<f32>, tensor<f32>
  %pd = tx.mul %p, %decay : tensor<8xf32>, tensor<f32>
  %b1 = tx.constant dense<0.9> : tensor<f32>
  %mb = tx.mul %m, %b1 : tensor<8xf32>, tensor<f32>
  %c1 = tx.constant dense<0.2> : tensor<f32>
  %gc = tx.mul %g, %c1 : tensor<8xf32>, tensor<f32>
  %m1 = tx.add %mb, %gc : tensor<8xf32>, tensor<8xf32>
  %b2 = tx.constant dense<0.999> : tensor<f32>
  %vb = tx.mul %v, %b2 : tensor<8xf32>, tensor<f32>
  %c2 = tx.constant dense<0.001> : tensor<f32>
  %gc2 = tx.mul %g, %c2 : tensor<8xf32>, tensor<f32>
  %gg = tx.mul %gc2, %g : tensor<8xf32>, tensor<8xf32>
  %v1 = tx.add %vb, %gg : tensor<8xf32>, tensor<8xf32>
  %bb1 = tx.constant dense<0.9> : tensor<f32>
  %pow1 = tx.pow %bb1, %step : tensor<f32>, tensor<f32>
  %one1 = tx.constant dense<1.0> : tensor<f32>
  %bc1 = tx.sub %one1, %pow1 : tensor<f32>, tensor<f32>
  %mhat = tx.div %m1, %bc1 : tensor<8xf32>, tensor<f32>
  %bb2 = tx.constant dense<0.999> : tensor<f32>
  %pow2 = tx.pow %bb2, %step : tensor<f32>, tensor<f32>
  %one2 = tx.constant dense<1.0> : tensor<f32>
  %bc2 = tx.sub %one2, %pow2 : tensor<f32>, tensor<f32>
  %vhat = tx.div %v1, %bc2 : tensor<8xf32>, tensor<f32>
  %num = tx.mul %lr, %mhat : tensor<f32>, tensor<8xf32>
  %sqrt = tx.sqrt %vhat : tensor<8xf32>
  %eps = tx.constant dense<1.0e-08> : tensor<f32>
  %den = tx.add %sqrt, %eps : tensor<8xf32>, tensor<f32>
  %upd = tx.div %num, %den : tensor<8xf32>, tensor<8xf32>
  // EXPLAIN: fuse-optimizer.mlir:[[@LINE+1]]:{{[0-9]+}}: remark: not fused: adam: expected first-moment coefficients beta1 and 1 - beta1, but got 0.9 and 0.2
  %p1 = tx.sub %pd, %upd : tensor<8xf32>, tensor<8xf32>
  return %p1, %m1, %v1 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// beta1 is a function argument: tx.adam needs it as an attribute.
// CHECK-LABEL: func.func @adamw_no_fuse_nonconstant_beta1
// CHECK-NOT:     tx.adam
// CHECK:         return
func.func @adamw_no_fuse_nonconstant_beta1(%p: tensor<8xf32>, %g: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>, %lr: tensor<f32>, %step: tensor<f32>, %beta1: tensor<f32>)
    -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %wd = tx.constant dense<0.01> : tensor<f32>
  %lrwd = tx.mul %lr, %wd : tensor<f32>, tensor<f32>
  %one = tx.constant dense<1.0> : tensor<f32>
  %decay = tx.sub %one, %lrwd : tensor<f32>, tensor<f32>
  %pd = tx.mul %p, %decay : tensor<8xf32>, tensor<f32>
  %mb = tx.mul %m, %beta1 : tensor<8xf32>, tensor<f32>
  %c1 = tx.constant dense<0.1> : tensor<f32>
  %gc = tx.mul %g, %c1 : tensor<8xf32>, tensor<f32>
  %m1 = tx.add %mb, %gc : tensor<8xf32>, tensor<8xf32>
  %b2 = tx.constant dense<0.999> : tensor<f32>
  %vb = tx.mul %v, %b2 : tensor<8xf32>, tensor<f32>
  %c2 = tx.constant dense<0.001> : tensor<f32>
  %gc2 = tx.mul %g, %c2 : tensor<8xf32>, tensor<f32>
  %gg = tx.mul %gc2, %g : tensor<8xf32>, tensor<8xf32>
  %v1 = tx.add %vb, %gg : tensor<8xf32>, tensor<8xf32>
  %pow1 = tx.pow %beta1, %step : tensor<f32>, tensor<f32>
  %one1 = tx.constant dense<1.0> : tensor<f32>
  %bc1 = tx.sub %one1, %pow1 : tensor<f32>, tensor<f32>
  %mhat = tx.div %m1, %bc1 : tensor<8xf32>, tensor<f32>
  %bb2 = tx.constant dense<0.999> : tensor<f32>
  %pow2 = tx.pow %bb2, %step : tensor<f32>, tensor<f32>
  %one2 = tx.constant dense<1.0> : tensor<f32>
  %bc2 = tx.sub %one2, %pow2 : tensor<f32>, tensor<f32>
  %vhat = tx.div %v1, %bc2 : tensor<8xf32>, tensor<f32>
  %num = tx.mul %lr, %mhat : tensor<f32>, tensor<8xf32>
  %sqrt = tx.sqrt %vhat : tensor<8xf32>
  %eps = tx.constant dense<1.0e-08> : tensor<f32>
  %den = tx.add %sqrt, %eps : tensor<8xf32>, tensor<f32>
  %upd = tx.div %num, %den : tensor<8xf32>, tensor<8xf32>
  // EXPLAIN: fuse-optimizer.mlir:[[@LINE+1]]:{{[0-9]+}}: remark: not fused: adam: beta1 is not a constant
  %p1 = tx.sub %pd, %upd : tensor<8xf32>, tensor<8xf32>
  return %p1, %m1, %v1 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// The first moment broadcasts from [8] to the parameter's [4, 8]: tx.adam
// does not broadcast.
// CHECK-LABEL: func.func @adamw_no_fuse_shape_mismatch
// CHECK-NOT:     tx.adam
// CHECK:         return
func.func @adamw_no_fuse_shape_mismatch(%p: tensor<4x8xf32>, %g: tensor<4x8xf32>, %m: tensor<8xf32>, %v: tensor<4x8xf32>, %lr: tensor<f32>, %step: tensor<f32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %wd = tx.constant dense<0.01> : tensor<f32>
  %lrwd = tx.mul %lr, %wd : tensor<f32>, tensor<f32>
  %one = tx.constant dense<1.0> : tensor<f32>
  %decay = tx.sub %one, %lrwd : tensor<f32>, tensor<f32>
  %pd = tx.mul %p, %decay : tensor<4x8xf32>, tensor<f32>
  %b1 = tx.constant dense<0.9> : tensor<f32>
  %mb = tx.mul %m, %b1 : tensor<8xf32>, tensor<f32>
  %c1 = tx.constant dense<0.1> : tensor<f32>
  %gc = tx.mul %g, %c1 : tensor<4x8xf32>, tensor<f32>
  %m1 = tx.add %mb, %gc : tensor<8xf32>, tensor<4x8xf32>
  %b2 = tx.constant dense<0.999> : tensor<f32>
  %vb = tx.mul %v, %b2 : tensor<4x8xf32>, tensor<f32>
  %c2 = tx.constant dense<0.001> : tensor<f32>
  %gc2 = tx.mul %g, %c2 : tensor<4x8xf32>, tensor<f32>
  %gg = tx.mul %gc2, %g : tensor<4x8xf32>, tensor<4x8xf32>
  %v1 = tx.add %vb, %gg : tensor<4x8xf32>, tensor<4x8xf32>
  %bb1 = tx.constant dense<0.9> : tensor<f32>
  %pow1 = tx.pow %bb1, %step : tensor<f32>, tensor<f32>
  %one1 = tx.constant dense<1.0> : tensor<f32>
  %bc1 = tx.sub %one1, %pow1 : tensor<f32>, tensor<f32>
  %mhat = tx.div %m1, %bc1 : tensor<4x8xf32>, tensor<f32>
  %bb2 = tx.constant dense<0.999> : tensor<f32>
  %pow2 = tx.pow %bb2, %step : tensor<f32>, tensor<f32>
  %one2 = tx.constant dense<1.0> : tensor<f32>
  %bc2 = tx.sub %one2, %pow2 : tensor<f32>, tensor<f32>
  %vhat = tx.div %v1, %bc2 : tensor<4x8xf32>, tensor<f32>
  %num = tx.mul %lr, %mhat : tensor<f32>, tensor<4x8xf32>
  %sqrt = tx.sqrt %vhat : tensor<4x8xf32>
  %eps = tx.constant dense<1.0e-08> : tensor<f32>
  %den = tx.add %sqrt, %eps : tensor<4x8xf32>, tensor<f32>
  %upd = tx.div %num, %den : tensor<4x8xf32>, tensor<4x8xf32>
  // EXPLAIN: fuse-optimizer.mlir:[[@LINE+1]]:{{[0-9]+}}: remark: not fused: adam: expected exp_avg of type 'tensor<4x8xf32>', but got 'tensor<8xf32>'
  %p1 = tx.sub %pd, %upd : tensor<4x8xf32>, tensor<4x8xf32>
  return %p1, %m1, %v1 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// The bias correction uses another beta than the moment it corrects.
// CHECK-LABEL: func.func @adamw_no_fuse_bias_correction_beta
// CHECK-NOT:     tx.adam
// CHECK:         return
func.func @adamw_no_fuse_bias_correction_beta(%p: tensor<8xf32>, %g: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>, %lr: tensor<f32>, %step: tensor<f32>)
    -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %wd = tx.constant dense<0.01> : tensor<f32>
  %lrwd = tx.mul %lr, %wd : tensor<f32>, tensor<f32>
  %one = tx.constant dense<1.0> : tensor<f32>
  %decay = tx.sub %one, %lrwd : tensor<f32>, tensor<f32>
  %pd = tx.mul %p, %decay : tensor<8xf32>, tensor<f32>
  %b1 = tx.constant dense<0.9> : tensor<f32>
  %mb = tx.mul %m, %b1 : tensor<8xf32>, tensor<f32>
  %c1 = tx.constant dense<0.1> : tensor<f32>
  %gc = tx.mul %g, %c1 : tensor<8xf32>, tensor<f32>
  %m1 = tx.add %mb, %gc : tensor<8xf32>, tensor<8xf32>
  %b2 = tx.constant dense<0.999> : tensor<f32>
  %vb = tx.mul %v, %b2 : tensor<8xf32>, tensor<f32>
  %c2 = tx.constant dense<0.001> : tensor<f32>
  %gc2 = tx.mul %g, %c2 : tensor<8xf32>, tensor<f32>
  %gg = tx.mul %gc2, %g : tensor<8xf32>, tensor<8xf32>
  %v1 = tx.add %vb, %gg : tensor<8xf32>, tensor<8xf32>
  %bb1 = tx.constant dense<0.8> : tensor<f32>
  %pow1 = tx.pow %bb1, %step : tensor<f32>, tensor<f32>
  %one1 = tx.constant dense<1.0> : tensor<f32>
  %bc1 = tx.sub %one1, %pow1 : tensor<f32>, tensor<f32>
  %mhat = tx.div %m1, %bc1 : tensor<8xf32>, tensor<f32>
  %bb2 = tx.constant dense<0.999> : tensor<f32>
  %pow2 = tx.pow %bb2, %step : tensor<f32>, tensor<f32>
  %one2 = tx.constant dense<1.0> : tensor<f32>
  %bc2 = tx.sub %one2, %pow2 : tensor<f32>, tensor<f32>
  %vhat = tx.div %v1, %bc2 : tensor<8xf32>, tensor<f32>
  %num = tx.mul %lr, %mhat : tensor<f32>, tensor<8xf32>
  %sqrt = tx.sqrt %vhat : tensor<8xf32>
  %eps = tx.constant dense<1.0e-08> : tensor<f32>
  %den = tx.add %sqrt, %eps : tensor<8xf32>, tensor<f32>
  %upd = tx.div %num, %den : tensor<8xf32>, tensor<8xf32>
  // EXPLAIN: fuse-optimizer.mlir:[[@LINE+1]]:{{[0-9]+}}: remark: not fused: adam: expected bias correction 1 - beta1^t with beta1 = 0.9, but got base 0.8
  %p1 = tx.sub %pd, %upd : tensor<8xf32>, tensor<8xf32>
  return %p1, %m1, %v1 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// Folded bias corrections of two different steps (1 - b1^10 and
// 1 - b2^11): no one step reproduces both, so tx.adam cannot express it.
// CHECK-LABEL: func.func @adamw_no_fuse_folded_bias_corrections_two_steps
// CHECK-NOT:     tx.adam
// CHECK:         return
func.func @adamw_no_fuse_folded_bias_corrections_two_steps(%p: tensor<8xf32>, %g: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>, %lr: tensor<f32>)
    -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %b1 = tx.constant dense<0.899999976> : tensor<f32>
  %mb = tx.mul %m, %b1 : tensor<8xf32>, tensor<f32>
  %c1 = tx.constant dense<1.000000e-01> : tensor<f32>
  %gc = tx.mul %g, %c1 : tensor<8xf32>, tensor<f32>
  %m1 = tx.add %mb, %gc : tensor<8xf32>, tensor<8xf32>
  %b2 = tx.constant dense<9.990000e-01> : tensor<f32>
  %vb = tx.mul %v, %b2 : tensor<8xf32>, tensor<f32>
  %c2 = tx.constant dense<1.000000e-03> : tensor<f32>
  %gc2 = tx.mul %g, %c2 : tensor<8xf32>, tensor<f32>
  %gg = tx.mul %gc2, %g : tensor<8xf32>, tensor<8xf32>
  %v1 = tx.add %vb, %gg : tensor<8xf32>, tensor<8xf32>
  %bc1 = tx.constant dense<0.65132153> : tensor<f32>
  %mhat = tx.div %m1, %bc1 : tensor<8xf32>, tensor<f32>
  %bc2 = tx.constant dense<0.010945165> : tensor<f32>
  %vhat = tx.div %v1, %bc2 : tensor<8xf32>, tensor<f32>
  %num = tx.mul %lr, %mhat : tensor<f32>, tensor<8xf32>
  %sqrt = tx.sqrt %vhat : tensor<8xf32>
  %eps = tx.constant dense<9.99999993E-9> : tensor<f32>
  %den = tx.add %sqrt, %eps : tensor<8xf32>, tensor<f32>
  %upd = tx.div %num, %den : tensor<8xf32>, tensor<8xf32>
  // EXPLAIN: fuse-optimizer.mlir:[[@LINE+1]]:{{[0-9]+}}: remark: not fused: adam: expected folded bias corrections 1 - beta1^t and 1 - beta2^t of one integer step t, but got 0.6513215 and 0.0109451{{[0-9]}}
  %p1 = tx.sub %p, %upd : tensor<8xf32>, tensor<8xf32>
  return %p1, %m1, %v1 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// A constant lr absorbs the update's factor, but the second moment's
// folded correction 0.0095 is 1 - b2^t for no integer t (t = 9.54): not a
// constant step, so no fusion.
// CHECK-LABEL: func.func @adamw_no_fuse_folded_bias_correction_not_a_step
// CHECK-NOT:     tx.adam
// CHECK:         return
func.func @adamw_no_fuse_folded_bias_correction_not_a_step(%p: tensor<8xf32>, %g: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>)
    -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %b1 = tx.constant dense<0.899999976> : tensor<f32>
  %mb = tx.mul %m, %b1 : tensor<8xf32>, tensor<f32>
  %c1 = tx.constant dense<1.000000e-01> : tensor<f32>
  %gc = tx.mul %g, %c1 : tensor<8xf32>, tensor<f32>
  %m1 = tx.add %mb, %gc : tensor<8xf32>, tensor<8xf32>
  %b2 = tx.constant dense<9.990000e-01> : tensor<f32>
  %vb = tx.mul %v, %b2 : tensor<8xf32>, tensor<f32>
  %c2 = tx.constant dense<1.000000e-03> : tensor<f32>
  %gc2 = tx.mul %g, %c2 : tensor<8xf32>, tensor<f32>
  %gg = tx.mul %gc2, %g : tensor<8xf32>, tensor<8xf32>
  %v1 = tx.add %vb, %gg : tensor<8xf32>, tensor<8xf32>
  %bc2 = tx.constant dense<0.0095> : tensor<f32>
  %vhat = tx.div %v1, %bc2 : tensor<8xf32>, tensor<f32>
  %sqrt = tx.sqrt %vhat : tensor<8xf32>
  %eps = tx.constant dense<9.99999993E-9> : tensor<f32>
  %den = tx.add %sqrt, %eps : tensor<8xf32>, tensor<f32>
  %ratio = tx.div %m1, %den : tensor<8xf32>, tensor<8xf32>
  %step_size = tx.constant dense<0.00153533975> : tensor<f32>
  %upd = tx.mul %ratio, %step_size : tensor<8xf32>, tensor<f32>
  // EXPLAIN: fuse-optimizer.mlir:[[@LINE+1]]:{{[0-9]+}}: remark: not fused: adam: expected a folded bias correction 1 - beta2^t of an integer step t, but got 0.0095
  %p1 = tx.sub %p, %upd : tensor<8xf32>, tensor<8xf32>
  return %p1, %m1, %v1 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// lr passed in, but the update is scaled by a further 0.5 and nothing
// scales the second moment: not a folded bias correction, and tx.adam has
// no such factor.
// CHECK-LABEL: func.func @adam_no_fuse_scaled_lr
// CHECK-NOT:     tx.adam
// CHECK:         return
func.func @adam_no_fuse_scaled_lr(%p: tensor<8xf32>, %g: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>, %lr: tensor<f32>)
    -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %b1 = tx.constant dense<0.9> : tensor<f32>
  %mb = tx.mul %m, %b1 : tensor<8xf32>, tensor<f32>
  %c1 = tx.constant dense<0.1> : tensor<f32>
  %gc = tx.mul %g, %c1 : tensor<8xf32>, tensor<f32>
  %m1 = tx.add %mb, %gc : tensor<8xf32>, tensor<8xf32>
  %b2 = tx.constant dense<0.999> : tensor<f32>
  %vb = tx.mul %v, %b2 : tensor<8xf32>, tensor<f32>
  %c2 = tx.constant dense<0.001> : tensor<f32>
  %gc2 = tx.mul %g, %c2 : tensor<8xf32>, tensor<f32>
  %gg = tx.mul %gc2, %g : tensor<8xf32>, tensor<8xf32>
  %v1 = tx.add %vb, %gg : tensor<8xf32>, tensor<8xf32>
  %num = tx.mul %m1, %lr : tensor<8xf32>, tensor<f32>
  %sqrt = tx.sqrt %v1 : tensor<8xf32>
  %eps = tx.constant dense<1.0e-08> : tensor<f32>
  %den = tx.add %sqrt, %eps : tensor<8xf32>, tensor<f32>
  %ratio = tx.div %num, %den : tensor<8xf32>, tensor<8xf32>
  %half = tx.constant dense<0.5> : tensor<f32>
  %upd = tx.mul %ratio, %half : tensor<8xf32>, tensor<f32>
  // EXPLAIN: fuse-optimizer.mlir:[[@LINE+1]]:{{[0-9]+}}: remark: not fused: adam: expected the update to be scaled by lr alone, but got an extra factor 0.5
  %p1 = tx.sub %p, %upd : tensor<8xf32>, tensor<8xf32>
  return %p1, %m1, %v1 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// A LayerNorm's `(x - mean) / sqrt(var + eps) * g + b` is not an optimizer
// update: no rewrite and no remark.
// CHECK-LABEL: func.func @layer_norm_not_a_candidate
// CHECK-NOT:     tx.adam
// CHECK:         return
func.func @layer_norm_not_a_candidate(%x: tensor<4x8xf32>, %mean: tensor<4x1xf32>, %var: tensor<4x1xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %d = tx.sub %x, %mean : tensor<4x8xf32>, tensor<4x1xf32>
  %eps = tx.constant dense<1.0e-05> : tensor<f32>
  %ve = tx.add %var, %eps : tensor<4x1xf32>, tensor<f32>
  %s = tx.sqrt %ve : tensor<4x1xf32>
  %n = tx.div %d, %s : tensor<4x8xf32>, tensor<4x1xf32>
  %y = tx.mul %n, %g : tensor<4x8xf32>, tensor<8xf32>
  %z = tx.add %y, %b : tensor<4x8xf32>, tensor<8xf32>
  return %z : tensor<4x8xf32>
}

// -----

//===----------------------------------------------------------------------===//
// SGD (torch.optim.SGD): fused
//===----------------------------------------------------------------------===//

// Plain SGD over two parameters as TorchScript exports it (lr a constant:
// torch reads it with .item()): one tx.sgd. There is no buffer: zeros are
// passed, which momentum 0 never reads.
// CHECK-LABEL: func.func @sgd_plain
// CHECK-SAME:    %[[P0:[^:]+]]: tensor<16x8xf32>, %[[G0:[^:]+]]: tensor<16x8xf32>, %[[P1:[^:]+]]: tensor<8xf32>, %[[G1:[^:]+]]: tensor<8xf32>
// CHECK-NOT:     tx.mul
// CHECK-DAG:     %[[Z0:.+]] = tx.constant dense<0.000000e+00> : tensor<16x8xf32>
// CHECK-DAG:     %[[Z1:.+]] = tx.constant dense<0.000000e+00> : tensor<8xf32>
// CHECK-DAG:     %[[LR:.+]] = tx.constant dense<0.00999999977> : tensor<f32>
// CHECK:         %[[NP:[^:]+]]:2, %{{.+}}:2 = tx.sgd params(%[[P0]], %[[P1]]) grads(%[[G0]], %[[G1]]) momentum_buffer(%[[Z0]], %[[Z1]]) lr(%[[LR]]) momentum(0.0) dampening(0.0) weight_decay(0.0) : tensor<16x8xf32>, tensor<8xf32>
// CHECK-NEXT:    return %[[NP]]#0, %[[NP]]#1
func.func @sgd_plain(%p0: tensor<16x8xf32>, %g0: tensor<16x8xf32>, %p1: tensor<8xf32>, %g1: tensor<8xf32>)
    -> (tensor<16x8xf32>, tensor<8xf32>) {
  %neg_lr = tx.constant dense<-0.00999999977> : tensor<f32>
  %u0 = tx.mul %g0, %neg_lr : tensor<16x8xf32>, tensor<f32>
  %n0 = tx.add %p0, %u0 : tensor<16x8xf32>, tensor<16x8xf32>
  %u1 = tx.mul %g1, %neg_lr : tensor<8xf32>, tensor<f32>
  %n1 = tx.add %p1, %u1 : tensor<8xf32>, tensor<8xf32>
  return %n0, %n1 : tensor<16x8xf32>, tensor<8xf32>
}

// -----

// A one-element parameter (a learned temperature): the direction is the
// update's only factor, lr the constant.
// CHECK-LABEL: func.func @sgd_scalar_parameter
// CHECK-SAME:    %[[P:[^:]+]]: tensor<f32>, %[[G:[^:]+]]: tensor<f32>
// CHECK:         %[[NP:[^,]+]], %{{.+}} = tx.sgd params(%[[P]]) grads(%[[G]]) momentum_buffer(%{{.+}}) lr(%{{.+}}) momentum(0.0)
// CHECK-NEXT:    return %[[NP]]
func.func @sgd_scalar_parameter(%p: tensor<f32>, %g: tensor<f32>) -> tensor<f32> {
  %lr = tx.constant dense<0.01> : tensor<f32>
  %u = tx.mul %lr, %g : tensor<f32>, tensor<f32>
  %np = tx.sub %p, %u : tensor<f32>, tensor<f32>
  return %np : tensor<f32>
}

// -----

// Momentum 0.9 with L2 weight decay, lr an argument (torch's
// `param.addcmul_(grad, lr, value=-1)` when lr is a tensor), two
// parameters: one tx.sgd.
// CHECK-LABEL: func.func @sgd_momentum_weight_decay_two_params
// CHECK-SAME:    %[[P0:[^:]+]]: tensor<4x8xf32>, %[[G0:[^:]+]]: tensor<4x8xf32>, %[[B0:[^:]+]]: tensor<4x8xf32>, %[[P1:[^:]+]]: tensor<8xf32>, %[[G1:[^:]+]]: tensor<8xf32>, %[[B1:[^:]+]]: tensor<8xf32>, %[[LR:[^:]+]]: tensor<f32>
// CHECK-NOT:     tx.mul
// CHECK:         %[[NP:[^:]+]]:2, %[[NB:[^:]+]]:2 = tx.sgd params(%[[P0]], %[[P1]]) grads(%[[G0]], %[[G1]]) momentum_buffer(%[[B0]], %[[B1]]) lr(%[[LR]]) momentum(0.9) dampening(0.0) weight_decay(0.0001) : tensor<4x8xf32>, tensor<8xf32>
// CHECK-NEXT:    return %[[NP]]#0, %[[NB]]#0, %[[NP]]#1, %[[NB]]#1
func.func @sgd_momentum_weight_decay_two_params(%p0: tensor<4x8xf32>, %g0: tensor<4x8xf32>, %b0: tensor<4x8xf32>, %p1: tensor<8xf32>, %g1: tensor<8xf32>, %b1: tensor<8xf32>, %lr: tensor<f32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %wd = tx.constant dense<9.99999974E-5> : tensor<f32>
  %mu = tx.constant dense<0.899999976> : tensor<f32>
  %wp0 = tx.mul %p0, %wd : tensor<4x8xf32>, tensor<f32>
  %gd0 = tx.add %g0, %wp0 : tensor<4x8xf32>, tensor<4x8xf32>
  %mb0 = tx.mul %b0, %mu : tensor<4x8xf32>, tensor<f32>
  %nb0 = tx.add %mb0, %gd0 : tensor<4x8xf32>, tensor<4x8xf32>
  %u0 = tx.mul %nb0, %lr : tensor<4x8xf32>, tensor<f32>
  %np0 = tx.sub %p0, %u0 : tensor<4x8xf32>, tensor<4x8xf32>
  %wp1 = tx.mul %p1, %wd : tensor<8xf32>, tensor<f32>
  %gd1 = tx.add %g1, %wp1 : tensor<8xf32>, tensor<8xf32>
  %mb1 = tx.mul %b1, %mu : tensor<8xf32>, tensor<f32>
  %nb1 = tx.add %mb1, %gd1 : tensor<8xf32>, tensor<8xf32>
  %u1 = tx.mul %nb1, %lr : tensor<8xf32>, tensor<f32>
  %np1 = tx.sub %p1, %u1 : tensor<8xf32>, tensor<8xf32>
  return %np0, %nb0, %np1, %nb1 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// Dampening 0.1 (both coefficients 0.9, as torch exports
// `buf.mul_(0.9).add_(grad, alpha=1 - 0.1)`), the gradient named by its
// weight decay.
// CHECK-LABEL: func.func @sgd_dampening
// CHECK-SAME:    %[[P:[^:]+]]: tensor<16x8xf32>, %[[G:[^:]+]]: tensor<16x8xf32>, %[[B:[^:]+]]: tensor<16x8xf32>
// CHECK:         %[[NP:[^,]+]], %[[NB:[^ ]+]] = tx.sgd params(%[[P]]) grads(%[[G]]) momentum_buffer(%[[B]]) lr({{.+}}) momentum(0.9) dampening(0.1) weight_decay(0.0001) : tensor<16x8xf32>
// CHECK-NEXT:    return %[[NP]], %[[NB]]
func.func @sgd_dampening(%p: tensor<16x8xf32>, %g: tensor<16x8xf32>, %b: tensor<16x8xf32>)
    -> (tensor<16x8xf32>, tensor<16x8xf32>) {
  %wd = tx.constant dense<9.99999974E-5> : tensor<f32>
  %wp = tx.mul %p, %wd : tensor<16x8xf32>, tensor<f32>
  %gd = tx.add %g, %wp : tensor<16x8xf32>, tensor<16x8xf32>
  %mu = tx.constant dense<0.899999976> : tensor<f32>
  %mb = tx.mul %b, %mu : tensor<16x8xf32>, tensor<f32>
  %gc = tx.mul %gd, %mu : tensor<16x8xf32>, tensor<f32>
  %nb = tx.add %mb, %gc : tensor<16x8xf32>, tensor<16x8xf32>
  %neg_lr = tx.constant dense<-0.00999999977> : tensor<f32>
  %u = tx.mul %nb, %neg_lr : tensor<16x8xf32>, tensor<f32>
  %np = tx.add %p, %u : tensor<16x8xf32>, tensor<16x8xf32>
  return %np, %nb : tensor<16x8xf32>, tensor<16x8xf32>
}

// -----

// Nesterov with weight decay exactly as TorchScript exports it:
// d = g' + momentum * b1.
// CHECK-LABEL: func.func @sgd_nesterov
// CHECK-SAME:    %[[P:[^:]+]]: tensor<16x8xf32>, %[[G:[^:]+]]: tensor<16x8xf32>, %[[B:[^:]+]]: tensor<16x8xf32>
// CHECK-NOT:     tx.mul
// CHECK:         %[[LR:.+]] = tx.constant dense<0.00999999977> : tensor<f32>
// CHECK-NEXT:    %[[NP:[^,]+]], %[[NB:[^ ]+]] = tx.sgd params(%[[P]]) grads(%[[G]]) momentum_buffer(%[[B]]) lr(%[[LR]]) momentum(0.9) dampening(0.0) weight_decay(0.0005) nesterov : tensor<16x8xf32>
// CHECK-NEXT:    return %[[NP]], %[[NB]]
func.func @sgd_nesterov(%p: tensor<16x8xf32>, %g: tensor<16x8xf32>, %b: tensor<16x8xf32>)
    -> (tensor<16x8xf32>, tensor<16x8xf32>) {
  %wd = tx.constant dense<5.000000e-04> : tensor<f32>
  %wp = tx.mul %p, %wd : tensor<16x8xf32>, tensor<f32>
  %gd = tx.add %g, %wp : tensor<16x8xf32>, tensor<16x8xf32>
  %mu = tx.constant dense<0.899999976> : tensor<f32>
  %mb = tx.mul %b, %mu : tensor<16x8xf32>, tensor<f32>
  %nb = tx.add %mb, %gd : tensor<16x8xf32>, tensor<16x8xf32>
  %mnb = tx.mul %nb, %mu : tensor<16x8xf32>, tensor<f32>
  %d = tx.add %gd, %mnb : tensor<16x8xf32>, tensor<16x8xf32>
  %neg_lr = tx.constant dense<-0.00999999977> : tensor<f32>
  %u = tx.mul %d, %neg_lr : tensor<16x8xf32>, tensor<f32>
  %np = tx.add %p, %u : tensor<16x8xf32>, tensor<16x8xf32>
  return %np, %nb : tensor<16x8xf32>, tensor<16x8xf32>
}

// -----

// Two momenta (parameter groups) and an existing tx.sgd of the first
// group's hyper-parameters: the chain of that group merges with it, the
// other chain gets its own op.
// CHECK-LABEL: func.func @sgd_groups_and_existing
// CHECK-SAME:    %[[P0:[^:]+]]: tensor<8xf32>, %[[G0:[^:]+]]: tensor<8xf32>, %[[B0:[^:]+]]: tensor<8xf32>, %[[P1:[^:]+]]: tensor<8xf32>, %[[G1:[^:]+]]: tensor<8xf32>, %[[B1:[^:]+]]: tensor<8xf32>, %[[P2:[^:]+]]: tensor<4xf32>, %[[G2:[^:]+]]: tensor<4xf32>, %[[B2:[^:]+]]: tensor<4xf32>
// CHECK-DAG:     tx.sgd params(%[[P2]], %[[P0]]) grads(%[[G2]], %[[G0]]) momentum_buffer(%[[B2]], %[[B0]]) lr({{.+}}) momentum(0.9) dampening(0.0) weight_decay(0.0) : tensor<4xf32>, tensor<8xf32>
// CHECK-DAG:     tx.sgd params(%[[P1]]) grads(%[[G1]]) momentum_buffer(%[[B1]]) lr({{.+}}) momentum(0.5) dampening(0.0) weight_decay(0.0) : tensor<8xf32>
// CHECK-NOT:     tx.sgd
// CHECK:         return
func.func @sgd_groups_and_existing(%p0: tensor<8xf32>, %g0: tensor<8xf32>, %b0: tensor<8xf32>, %p1: tensor<8xf32>, %g1: tensor<8xf32>, %b1: tensor<8xf32>, %p2: tensor<4xf32>, %g2: tensor<4xf32>, %b2: tensor<4xf32>)
    -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<4xf32>, tensor<4xf32>) {
  %lr = tx.constant dense<0.01> : tensor<f32>
  %np2, %nb2 = tx.sgd params(%p2) grads(%g2) momentum_buffer(%b2) lr(%lr) momentum(0.9) dampening(0.0) weight_decay(0.0) : tensor<4xf32>
  %mu0 = tx.constant dense<0.9> : tensor<f32>
  %mb0 = tx.mul %b0, %mu0 : tensor<8xf32>, tensor<f32>
  %nb0 = tx.add %mb0, %g0 : tensor<8xf32>, tensor<8xf32>
  %u0 = tx.mul %lr, %nb0 : tensor<f32>, tensor<8xf32>
  %np0 = tx.sub %p0, %u0 : tensor<8xf32>, tensor<8xf32>
  %mu1 = tx.constant dense<0.5> : tensor<f32>
  %mb1 = tx.mul %b1, %mu1 : tensor<8xf32>, tensor<f32>
  %nb1 = tx.add %mb1, %g1 : tensor<8xf32>, tensor<8xf32>
  %u1 = tx.mul %lr, %nb1 : tensor<f32>, tensor<8xf32>
  %np1 = tx.sub %p1, %u1 : tensor<8xf32>, tensor<8xf32>
  return %np0, %nb0, %np1, %nb1, %np2, %nb2 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

//===----------------------------------------------------------------------===//
// SGD: not fused
//===----------------------------------------------------------------------===//

// The scaled old buffer is also returned: fusing would compute it twice.
// CHECK-LABEL: func.func @sgd_no_fuse_escaping_scaled_buffer
// CHECK-NOT:     tx.sgd
// CHECK:         return
func.func @sgd_no_fuse_escaping_scaled_buffer(%p: tensor<8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>)
    -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %mu = tx.constant dense<0.9> : tensor<f32>
  %mb = tx.mul %b, %mu : tensor<8xf32>, tensor<f32>
  %nb = tx.add %mb, %g : tensor<8xf32>, tensor<8xf32>
  %neg_lr = tx.constant dense<-0.01> : tensor<f32>
  %u = tx.mul %nb, %neg_lr : tensor<8xf32>, tensor<f32>
  // EXPLAIN: fuse-optimizer.mlir:[[@LINE+1]]:{{[0-9]+}}: remark: not fused: sgd: intermediate 'tx.mul' has a user outside the update chain
  %np = tx.add %p, %u : tensor<8xf32>, tensor<8xf32>
  return %np, %nb, %mb : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// The momentum is an argument: tx.sgd needs it as an attribute.
// CHECK-LABEL: func.func @sgd_no_fuse_nonconstant_momentum
// CHECK-NOT:     tx.sgd
// CHECK:         return
func.func @sgd_no_fuse_nonconstant_momentum(%p: tensor<8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>, %mu: tensor<f32>)
    -> (tensor<8xf32>, tensor<8xf32>) {
  %mb = tx.mul %b, %mu : tensor<8xf32>, tensor<f32>
  %nb = tx.add %mb, %g : tensor<8xf32>, tensor<8xf32>
  %neg_lr = tx.constant dense<-0.01> : tensor<f32>
  %u = tx.mul %nb, %neg_lr : tensor<8xf32>, tensor<f32>
  // EXPLAIN: fuse-optimizer.mlir:[[@LINE+1]]:{{[0-9]+}}: remark: not fused: sgd: momentum is not a constant
  %np = tx.add %p, %u : tensor<8xf32>, tensor<8xf32>
  return %np, %nb : tensor<8xf32>, tensor<8xf32>
}

// -----

// The nesterov term uses another momentum than the buffer update.
// CHECK-LABEL: func.func @sgd_no_fuse_nesterov_momentum_mismatch
// CHECK-NOT:     tx.sgd
// CHECK:         return
func.func @sgd_no_fuse_nesterov_momentum_mismatch(%p: tensor<8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>)
    -> (tensor<8xf32>, tensor<8xf32>) {
  %mu = tx.constant dense<0.9> : tensor<f32>
  %mb = tx.mul %b, %mu : tensor<8xf32>, tensor<f32>
  %nb = tx.add %mb, %g : tensor<8xf32>, tensor<8xf32>
  %mu2 = tx.constant dense<0.8> : tensor<f32>
  %mnb = tx.mul %nb, %mu2 : tensor<8xf32>, tensor<f32>
  %d = tx.add %g, %mnb : tensor<8xf32>, tensor<8xf32>
  %neg_lr = tx.constant dense<-0.01> : tensor<f32>
  %u = tx.mul %d, %neg_lr : tensor<8xf32>, tensor<f32>
  // EXPLAIN: fuse-optimizer.mlir:[[@LINE+1]]:{{[0-9]+}}: remark: not fused: sgd: expected the nesterov term to use the buffer's momentum 0.9, but got 0.8
  %np = tx.add %p, %u : tensor<8xf32>, tensor<8xf32>
  return %np, %nb : tensor<8xf32>, tensor<8xf32>
}

// -----

// Nesterov with dampening: torch.optim.SGD refuses it, and so does tx.sgd.
// CHECK-LABEL: func.func @sgd_no_fuse_nesterov_dampening
// CHECK-NOT:     tx.sgd
// CHECK:         return
func.func @sgd_no_fuse_nesterov_dampening(%p: tensor<8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>)
    -> (tensor<8xf32>, tensor<8xf32>) {
  %mu = tx.constant dense<0.9> : tensor<f32>
  %mb = tx.mul %b, %mu : tensor<8xf32>, tensor<f32>
  %c = tx.constant dense<0.5> : tensor<f32>
  %gc = tx.mul %g, %c : tensor<8xf32>, tensor<f32>
  %nb = tx.add %mb, %gc : tensor<8xf32>, tensor<8xf32>
  %mnb = tx.mul %nb, %mu : tensor<8xf32>, tensor<f32>
  %d = tx.add %g, %mnb : tensor<8xf32>, tensor<8xf32>
  %neg_lr = tx.constant dense<-0.01> : tensor<f32>
  %u = tx.mul %d, %neg_lr : tensor<8xf32>, tensor<f32>
  // EXPLAIN: fuse-optimizer.mlir:[[@LINE+1]]:{{[0-9]+}}: remark: not fused: sgd: expected dampening 0 with nesterov, but got 0.5
  %np = tx.add %p, %u : tensor<8xf32>, tensor<8xf32>
  return %np, %nb : tensor<8xf32>, tensor<8xf32>
}

// -----

// A buffer coefficient of 1.5 is not a momentum (a sum of two gradients
// reads the same way, with coefficient 1).
// CHECK-LABEL: func.func @sgd_no_fuse_momentum_out_of_range
// CHECK-NOT:     tx.sgd
// CHECK:         return
func.func @sgd_no_fuse_momentum_out_of_range(%p: tensor<8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>)
    -> (tensor<8xf32>, tensor<8xf32>) {
  %mu = tx.constant dense<1.5> : tensor<f32>
  %mb = tx.mul %b, %mu : tensor<8xf32>, tensor<f32>
  %nb = tx.add %mb, %g : tensor<8xf32>, tensor<8xf32>
  %neg_lr = tx.constant dense<-0.01> : tensor<f32>
  %u = tx.mul %nb, %neg_lr : tensor<8xf32>, tensor<f32>
  // EXPLAIN: fuse-optimizer.mlir:[[@LINE+1]]:{{[0-9]+}}: remark: not fused: sgd: expected momentum in (0, 1), but got 1.5
  %np = tx.add %p, %u : tensor<8xf32>, tensor<8xf32>
  return %np, %nb : tensor<8xf32>, tensor<8xf32>
}

// -----

// The gradient broadcasts from [8] to the parameter's [4, 8]: tx.sgd does
// not broadcast.
// CHECK-LABEL: func.func @sgd_no_fuse_broadcast_grad
// CHECK-NOT:     tx.sgd
// CHECK:         return
func.func @sgd_no_fuse_broadcast_grad(%p: tensor<4x8xf32>, %g: tensor<8xf32>) -> tensor<4x8xf32> {
  %neg_lr = tx.constant dense<-0.01> : tensor<f32>
  %u = tx.mul %g, %neg_lr : tensor<8xf32>, tensor<f32>
  // EXPLAIN: fuse-optimizer.mlir:[[@LINE+1]]:{{[0-9]+}}: remark: not fused: sgd: expected grad of type 'tensor<4x8xf32>', but got 'tensor<8xf32>'
  %np = tx.add %p, %u : tensor<4x8xf32>, tensor<8xf32>
  return %np : tensor<4x8xf32>
}

// -----

// Subtractions that are not a step get no rewrite and no remark: an
// unscaled `x - y`, a scaled one that is not returned (a residual inside
// the graph), and `x + 0.5 * y` (an ascent).
// CHECK-LABEL: func.func @sgd_not_a_candidate
// CHECK-NOT:     tx.sgd
// CHECK:         return
func.func @sgd_not_a_candidate(%x: tensor<8xf32>, %y: tensor<8xf32>)
    -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %d = tx.sub %x, %y : tensor<8xf32>, tensor<8xf32>
  %half = tx.constant dense<0.5> : tensor<f32>
  %hy = tx.mul %y, %half : tensor<8xf32>, tensor<f32>
  %r = tx.sub %x, %hy : tensor<8xf32>, tensor<8xf32>
  %rr = tx.mul %r, %r : tensor<8xf32>, tensor<8xf32>
  %a = tx.add %x, %hy : tensor<8xf32>, tensor<8xf32>
  return %d, %rr, %a : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}
