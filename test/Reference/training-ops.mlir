// RUN: txopt-run %s --function layer_norm_and_grad | FileCheck %s --check-prefix=LN
// RUN: txopt-run %s --function rms_norm_and_grad | FileCheck %s --check-prefix=RMS
// RUN: txopt-run %s --function adamw_step | FileCheck %s --check-prefix=ADAM
// RUN: txopt-run %s --function adam_l2_epsilon_hat_step | FileCheck %s --check-prefix=L2HAT
// RUN: txopt-run %s --function scatter_grads | FileCheck %s --check-prefix=SCATTER
// RUN: txopt-run %s --function cross_entropy_grad | FileCheck %s --check-prefix=XENT
// RUN: txopt-run %s --function sgd_nesterov_step | FileCheck %s --check-prefix=SGD

// The fused norms (tx-fuse-norms) and their gradients; values checked
// against numpy (f64 formulas, rounded to f32) and, for the gradients,
// against central finite differences of the forward.
// LN: y: tensor<2x4xf32> = {{\[\[}}-0.341635406, 0.105576389, 2.34163547, 6.36654186], [-0.414199412, 1, 1, 6.65679789]]
// LN: mean: tensor<2x1xf32> = {{\[\[}}2.5], [0]]
// LN: rstd: tensor<2x1xf32> = {{\[\[}}0.894423604], [1.41419947]]
// LN: dx: tensor<2x4xf32> = {{\[\[}}0.80496943, -2.86215949, 3.30937123, -1.25218117], [0.353528738, -1.41419947, 0.707099736, 0.353570998]]
// LN: dgamma: tensor<4xf32> = [-2.04873514, 0.447211802, 0.894423604, 1.37791741]
// LN: dbeta: tensor<4xf32> = [1.5, -1, 2.5, 1]
func.func @layer_norm_and_grad() -> (tensor<2x4xf32> {tx.name = "y"}, tensor<2x1xf32> {tx.name = "mean"},
    tensor<2x1xf32> {tx.name = "rstd"}, tensor<2x4xf32> {tx.name = "dx"}, tensor<4xf32> {tx.name = "dgamma"},
    tensor<4xf32> {tx.name = "dbeta"}) {
  %x = tx.constant dense<[[1.0, 2.0, 3.0, 4.0], [-1.0, 0.0, 0.0, 1.0]]> : tensor<2x4xf32>
  %g = tx.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %b = tx.constant dense<[1.0, 1.0, 1.0, 1.0]> : tensor<4xf32>
  %y, %mean, %rstd = tx.layer_norm %x, %g, %b eps(1.0e-05) : tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>
  %dy = tx.constant dense<[[1.0, -1.0, 2.0, 0.5], [0.5, 0.0, 0.5, 0.5]]> : tensor<2x4xf32>
  %dx, %dg, %db = tx.layer_norm_grad %dy, %x, %g, %mean, %rstd : tensor<2x4xf32>, tensor<4xf32>, tensor<2x1xf32>
  return %y, %mean, %rstd, %dx, %dg, %db : tensor<2x4xf32>, tensor<2x1xf32>, tensor<2x1xf32>, tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>
}

// RMS: y: tensor<2x4xf32> = {{\[\[}}0.365148336, 1.46059334, 3.28633523, 5.84237337], [-1.41421211, 0, 0, 5.65684843]]
// RMS: rstd: tensor<2x1xf32> = {{\[\[}}0.365148336], [1.41421211]]
// RMS: dx: tensor<2x4xf32> = {{\[\[}}0.0852013305, -1.2901907, 1.35104907, -0.389491349], [1.7677629, 0, 2.1213181, 1.76776731]]
// RMS: dgamma: tensor<4xf32> = [-0.341957718, -0.730296671, 2.19089007, 1.43740273]
func.func @rms_norm_and_grad() -> (tensor<2x4xf32> {tx.name = "y"}, tensor<2x1xf32> {tx.name = "rstd"},
    tensor<2x4xf32> {tx.name = "dx"}, tensor<4xf32> {tx.name = "dgamma"}) {
  %x = tx.constant dense<[[1.0, 2.0, 3.0, 4.0], [-1.0, 0.0, 0.0, 1.0]]> : tensor<2x4xf32>
  %g = tx.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %y, %rstd = tx.rms_norm %x, %g eps(1.0e-06) : tensor<2x4xf32>, tensor<4xf32>
  %dy = tx.constant dense<[[1.0, -1.0, 2.0, 0.5], [0.5, 0.0, 0.5, 0.5]]> : tensor<2x4xf32>
  %dx, %dg = tx.rms_norm_grad %dy, %x, %g, %rstd : tensor<2x4xf32>, tensor<4xf32>, tensor<2x1xf32>
  return %y, %rstd, %dx, %dg : tensor<2x4xf32>, tensor<2x1xf32>, tensor<2x4xf32>, tensor<4xf32>
}

// One AdamW step (torch.optim.AdamW numerics: scalars such as 1 - beta2
// formed in double from the f64 attributes and rounded once, then every
// line rounded to f32). v[1] = f32(1 - 0.999) * 0.2^2 = 4.0e-05; from the
// f32 beta it would be 3.9999486e-05.
// ADAM: p: tensor<4xf32> = [0.999869168, -1.99934113, 0.500176907, 2.99987578]
// ADAM: m: tensor<4xf32> = [0.0190000013, -0.0200000014, -0.0899999961, 0.329999983]
// ADAM: v: tensor<4xf32> = [0.001009, 4.00000026e-05, 0.00999000017, 0.501749992]
func.func @adamw_step() -> (tensor<4xf32> {tx.name = "p"}, tensor<4xf32> {tx.name = "m"}, tensor<4xf32> {tx.name = "v"}) {
  %p = tx.constant dense<[1.0, -2.0, 0.5, 3.0]> : tensor<4xf32>
  %g = tx.constant dense<[0.1, -0.2, 0.0, 1.5]> : tensor<4xf32>
  %m = tx.constant dense<[0.01, 0.0, -0.1, 0.2]> : tensor<4xf32>
  %v = tx.constant dense<[0.001, 0.0, 0.01, 0.5]> : tensor<4xf32>
  %lr = tx.constant dense<1.0e-03> : tensor<f32>
  %t = tx.constant dense<3.0> : tensor<f32>
  %np, %nm, %nv = tx.adam adamw params(%p) grads(%g) exp_avg(%m) exp_avg_sq(%v)
      lr(%lr) step(%t) betas(0.9, 0.999) eps(1.0e-08, outside_sqrt)
      weight_decay(0.01) : tensor<4xf32>
  return %np, %nm, %nv : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// Adam with L2 decay and ONNX's epsilon placement: den = sqrt(v^) +
// f32(eps / sqrt(1 - beta2^t)).
// L2HAT: p: tensor<4xf32> = [0.994375706, -1.99275649, 0.50627178, 2.99632454]
// L2HAT: m: tensor<4xf32> = [0.029000001, -0.0400000028, -0.0849999934, 0.359999985]
// L2HAT: v: tensor<4xf32> = [0.00139000011, 0.00160000008, 0.00992500037, 0.527400017]
func.func @adam_l2_epsilon_hat_step() -> (tensor<4xf32> {tx.name = "p"}, tensor<4xf32> {tx.name = "m"}, tensor<4xf32> {tx.name = "v"}) {
  %p = tx.constant dense<[1.0, -2.0, 0.5, 3.0]> : tensor<4xf32>
  %g = tx.constant dense<[0.1, -0.2, 0.0, 1.5]> : tensor<4xf32>
  %m = tx.constant dense<[0.01, 0.0, -0.1, 0.2]> : tensor<4xf32>
  %v = tx.constant dense<[0.001, 0.0, 0.01, 0.5]> : tensor<4xf32>
  %lr = tx.constant dense<1.0e-02> : tensor<f32>
  %t = tx.constant dense<2.0> : tensor<f32>
  %np, %nm, %nv = tx.adam adam params(%p) grads(%g) exp_avg(%m) exp_avg_sq(%v)
      lr(%lr) step(%t) betas(0.9, 0.99) eps(0.001, epsilon_hat)
      weight_decay(0.1) : tensor<4xf32>
  return %np, %nm, %nv : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// Adjoints of gather (repeated rows add up), gather_elements and a strided slice.
// SCATTER: result0: tensor<3x2xf32> = {{\[\[}}2, 2], [0, 0], [4, 6]]
// SCATTER: result1: tensor<2x3xf32> = {{\[\[}}0, 3, 0], [4, 0, 0]]
// SCATTER: result2: tensor<2x5xf32> = {{\[\[}}0, 0, 0, 0, 0], [0, 2, 0, 1, 0]]
func.func @scatter_grads() -> (tensor<3x2xf32>, tensor<2x3xf32>, tensor<2x5xf32>) {
  %dy = tx.constant dense<[[1.0, 2.0], [3.0, 4.0], [2.0, 2.0]]> : tensor<3x2xf32>
  %ids = tx.constant dense<[-1, 2, 0]> : tensor<3xi64>
  %dt = tx.gather_grad %dy, %ids axis(0) : tensor<3x2xf32>, tensor<3xi64> -> tensor<3x2xf32>
  %de = tx.constant dense<[[1.0, 2.0], [4.0, 0.0]]> : tensor<2x2xf32>
  %sel = tx.constant dense<[[1, -2], [0, 0]]> : tensor<2x2xi64>
  %dd = tx.gather_elements_grad %de, %sel axis(1) : tensor<2x2xf32>, tensor<2x2xi64> -> tensor<2x3xf32>
  %ds = tx.constant dense<[[1.0, 2.0]]> : tensor<1x2xf32>
  %dx = tx.slice_grad %ds offsets [1, 3] strides [1, -2] : tensor<1x2xf32> -> tensor<2x5xf32>
  return %dt, %dd, %dx : tensor<3x2xf32>, tensor<2x3xf32>, tensor<2x5xf32>
}

// (softmax - onehot) * dloss / count, zero where the label is ignored.
// XENT: result0: tensor<3x2xf32> = {{\[\[}}-0.25, 0.25], [0.365529299, -0.365529299], [0, 0]]
func.func @cross_entropy_grad() -> tensor<3x2xf32> {
  %s = tx.constant dense<[[0.0, 0.0], [1.0, 0.0], [5.0, 5.0]]> : tensor<3x2xf32>
  %l = tx.constant dense<[0, 1, -100]> : tensor<3xi64>
  %dl = tx.constant dense<1.0> : tensor<f32>
  %d = tx.softmax_cross_entropy_grad %dl, %s, %l reduction(mean) {ignore_index = -100} : tensor<f32>, tensor<3x2xf32>, tensor<3xi64>
  return %d : tensor<3x2xf32>
}

// One SGD step with momentum, Nesterov and L2 decay, every line in f32.
// SGD: p: tensor<2xf32> = [0.894999981, -2.17000008]
// SGD: buf: tensor<2xf32> = [0.599999964, 0.800000012]
func.func @sgd_nesterov_step() -> (tensor<2xf32> {tx.name = "p"}, tensor<2xf32> {tx.name = "buf"}) {
  %p = tx.constant dense<[1.0, -2.0]> : tensor<2xf32>
  %g = tx.constant dense<[0.5, 1.0]> : tensor<2xf32>
  %b = tx.constant dense<[0.1, -0.2]> : tensor<2xf32>
  %lr = tx.constant dense<0.1> : tensor<f32>
  %np, %nb = tx.sgd params(%p) grads(%g) momentum_buffer(%b) lr(%lr)
      momentum(0.899999976) dampening(0.000000e+00) weight_decay(0.00999999977) nesterov : tensor<2xf32>
  return %np, %nb : tensor<2xf32>, tensor<2xf32>
}
