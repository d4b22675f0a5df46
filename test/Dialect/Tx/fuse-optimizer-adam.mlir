// RUN: txopt-opt %s --split-input-file --tx-fuse-optimizer | FileCheck %s
// RUN: txopt-opt %s --split-input-file --tx-fuse-optimizer=explain=true 2>&1 >/dev/null \
// RUN:   | FileCheck %s --check-prefix=EXPLAIN --implicit-check-not=remark

// tx-fuse-optimizer's Adam / AdamW matcher (AdamMatcher.cpp, with the bias
// corrections of BiasCorrection.cpp): the chains it fuses into tx.adam, one
// per export form, and the near misses it must not fuse.

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
  // EXPLAIN: fuse-optimizer-adam.mlir:[[@LINE+1]]:{{[0-9]+}}: remark: not fused: adam: intermediate 'tx.div' has a user outside the update chain
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
  // EXPLAIN: fuse-optimizer-adam.mlir:[[@LINE+1]]:{{[0-9]+}}: remark: not fused: adam: expected first-moment coefficients beta1 and 1 - beta1, but got 0.9 and 0.2
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
  // EXPLAIN: fuse-optimizer-adam.mlir:[[@LINE+1]]:{{[0-9]+}}: remark: not fused: adam: beta1 is not a constant
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
  // EXPLAIN: fuse-optimizer-adam.mlir:[[@LINE+1]]:{{[0-9]+}}: remark: not fused: adam: expected exp_avg of type 'tensor<4x8xf32>', but got 'tensor<8xf32>'
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
  // EXPLAIN: fuse-optimizer-adam.mlir:[[@LINE+1]]:{{[0-9]+}}: remark: not fused: adam: expected bias correction 1 - beta1^t with beta1 = 0.9, but got base 0.8
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
  // EXPLAIN: fuse-optimizer-adam.mlir:[[@LINE+1]]:{{[0-9]+}}: remark: not fused: adam: expected folded bias corrections 1 - beta1^t and 1 - beta2^t of one integer step t, but got 0.6513215 and 0.0109451{{[0-9]}}
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
  // EXPLAIN: fuse-optimizer-adam.mlir:[[@LINE+1]]:{{[0-9]+}}: remark: not fused: adam: expected a folded bias correction 1 - beta2^t of an integer step t, but got 0.0095
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
  // EXPLAIN: fuse-optimizer-adam.mlir:[[@LINE+1]]:{{[0-9]+}}: remark: not fused: adam: expected the update to be scaled by lr alone, but got an extra factor 0.5
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
