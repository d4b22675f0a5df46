// RUN: txopt-opt %s --split-input-file --tx-fuse-optimizer | FileCheck %s
// RUN: txopt-opt %s --split-input-file --tx-fuse-optimizer=explain=true 2>&1 >/dev/null \
// RUN:   | FileCheck %s --check-prefix=EXPLAIN --implicit-check-not=remark

// tx-fuse-optimizer's SGD matcher (SGDMatcher.cpp): the torch.optim.SGD
// chains it fuses into tx.sgd, and the near misses it must not fuse.

// The EXPLAIN lines check the near-miss remark that explain=true adds at the
// anchor (the parameter update on the line after them) of every Adam or SGD
// candidate that was not fused; fused chains and non-candidates stay silent
// (--implicit-check-not).

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
  // EXPLAIN: fuse-optimizer-sgd.mlir:[[@LINE+1]]:{{[0-9]+}}: remark: not fused: sgd: intermediate 'tx.mul' has a user outside the update chain
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
  // EXPLAIN: fuse-optimizer-sgd.mlir:[[@LINE+1]]:{{[0-9]+}}: remark: not fused: sgd: momentum is not a constant
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
  // EXPLAIN: fuse-optimizer-sgd.mlir:[[@LINE+1]]:{{[0-9]+}}: remark: not fused: sgd: expected the nesterov term to use the buffer's momentum 0.9, but got 0.8
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
  // EXPLAIN: fuse-optimizer-sgd.mlir:[[@LINE+1]]:{{[0-9]+}}: remark: not fused: sgd: expected dampening 0 with nesterov, but got 0.5
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
  // EXPLAIN: fuse-optimizer-sgd.mlir:[[@LINE+1]]:{{[0-9]+}}: remark: not fused: sgd: expected momentum in (0, 1), but got 1.5
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
  // EXPLAIN: fuse-optimizer-sgd.mlir:[[@LINE+1]]:{{[0-9]+}}: remark: not fused: sgd: expected grad of type 'tensor<4x8xf32>', but got 'tensor<8xf32>'
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
