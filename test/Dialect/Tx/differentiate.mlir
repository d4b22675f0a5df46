// RUN: txopt-opt %s --split-input-file --verify-diagnostics --tx-differentiate | FileCheck %s
// RUN: txopt-opt %s --split-input-file --verify-diagnostics --tx-differentiate="wrt=args" | FileCheck %s --check-prefix=ARGS
// RUN: txopt-opt %s --split-input-file --verify-diagnostics --tx-differentiate="wrt=all" | FileCheck %s --check-prefix=ALL
// RUN: not txopt-opt %s --split-input-file --tx-differentiate="wrt=weights" 2>&1 | FileCheck %s --check-prefix=BADWRT
// RUN: not txopt-opt %s --split-input-file --tx-differentiate="function=linear" 2>&1 | FileCheck %s --check-prefix=FUNC

// The structure of what tx-differentiate builds. The numbers are checked by
// test/Reference/gradcheck.py (finite differences on the reference executor).

// Enumerated options are checked when the pipeline is parsed.
// BADWRT: for the --wrt option: expected params|args|all, but got 'weights'

// function= picks one function; a module without it is an error.
// FUNC-DAG: func.func @linear_grad
// FUNC-DAG: error: expected a function named '@linear' to differentiate
// FUNC-NOT: func.func @used_twice_grad

// A linear layer: the parameter becomes an argument, its gradient x^T @ g.
// CHECK-LABEL: func.func @linear_grad
// CHECK-SAME:    (%[[X:[^:]+]]: tensor<2x4xf32> {tx.name = "x"}, %[[W:[^:]+]]: tensor<4x3xf32> {tx.name = "w", tx.parameter = @w})
// CHECK-SAME:    -> (tensor<f32> {tx.name = "loss"}, tensor<4x3xf32> {tx.grad_of = @w})
// CHECK-SAME:    attributes {tx.grad_of = @linear}
// CHECK-NOT:     tx.load_parameter
// CHECK:         %[[Y:.+]] = tx.matmul %[[X]], %[[W]]
// CHECK:         %[[L:.+]] = tx.reduce_sum %[[Y]] axes []
// CHECK:         %[[ONE:.+]] = tx.constant dense<1.000000e+00> : tensor<f32>
// CHECK:         %[[G1:.+]] = tx.reshape %[[ONE]] : tensor<f32> -> tensor<1x1xf32>
// CHECK:         %[[G:.+]] = tx.expand %[[G1]] : tensor<1x1xf32> -> tensor<2x3xf32>
// CHECK:         %[[XT:.+]] = tx.transpose %[[X]] perm [1, 0]
// CHECK:         %[[DW:.+]] = tx.matmul %[[XT]], %[[G]] : tensor<4x2xf32>, tensor<2x3xf32>
// CHECK:         return %[[L]], %[[DW]] : tensor<f32>, tensor<4x3xf32>
// With wrt=args the parameter stays a load and x gets the gradient g @ w^T.
// ARGS-LABEL: func.func @linear_grad
// ARGS-SAME:    (%[[X:[^:]+]]: tensor<2x4xf32> {tx.name = "x"})
// ARGS-SAME:    -> (tensor<f32> {tx.name = "loss"}, tensor<2x4xf32> {tx.grad_of = 0 : i64})
// ARGS:         %[[W:.+]] = tx.load_parameter @w
// ARGS:         %[[WT:.+]] = tx.transpose %[[W]] perm [1, 0]
// ARGS:         tx.matmul %{{.+}}, %[[WT]] : tensor<2x3xf32>, tensor<3x4xf32>
// Both, arguments first.
// ALL-LABEL: func.func @linear_grad
// ALL-SAME:    -> (tensor<f32> {tx.name = "loss"}, tensor<2x4xf32> {tx.grad_of = 0 : i64}, tensor<4x3xf32> {tx.grad_of = @w})
tx.parameter @w = dense<0.5> : tensor<4x3xf32>
func.func @linear(%x: tensor<2x4xf32> {tx.name = "x"}) -> (tensor<f32> {tx.name = "loss"}) {
  %w = tx.load_parameter @w : tensor<4x3xf32>
  %y = tx.matmul %x, %w : tensor<2x4xf32>, tensor<4x3xf32>
  %l = tx.reduce_sum %y axes [] : tensor<2x3xf32>
  return %l : tensor<f32>
}

// -----

// A value used twice gets the sum of both contributions.
// CHECK-LABEL: func.func @used_twice_grad
// CHECK-SAME:    %[[W:[^:]+]]: tensor<3xf32> {tx.name = "w", tx.parameter = @w}
// CHECK:         %[[E:.+]] = tx.exp %[[W]]
// CHECK:         %[[G:.+]] = tx.expand
// CHECK:         %[[COS:.+]] = tx.cos %[[W]]
// CHECK:         %[[FROM_SIN:.+]] = tx.mul %[[G]], %[[COS]]
// CHECK:         %[[FROM_EXP:.+]] = tx.mul %[[G]], %[[E]]
// CHECK:         %[[SUM:.+]] = tx.add %[[FROM_SIN]], %[[FROM_EXP]]
// CHECK:         return %{{.+}}, %[[SUM]]
tx.parameter @w = dense<0.5> : tensor<3xf32>
func.func @used_twice() -> tensor<f32> {
  %w = tx.load_parameter @w : tensor<3xf32>
  %a = tx.exp %w : tensor<3xf32>
  %b = tx.sin %w : tensor<3xf32>
  %s = tx.add %a, %b : tensor<3xf32>, tensor<3xf32>
  %l = tx.reduce_sum %s axes [] : tensor<3xf32>
  return %l : tensor<f32>
}

// -----

// Broadcast operands get the gradient summed over the broadcast dims, then
// reshaped: a [3] bias over [2, 3] sums dim 0; a [2, 1] scale sums dim 1.
// CHECK-LABEL: func.func @broadcast_grad
// CHECK-SAME:    %[[B:[^:]+]]: tensor<3xf32> {tx.name = "b", tx.parameter = @b}, %[[C:[^:]+]]: tensor<2x1xf32> {tx.name = "c", tx.parameter = @c}
// CHECK:         %[[Y:.+]] = tx.add %{{.+}}, %[[B]]
// CHECK:         %[[G:.+]] = tx.expand
// CHECK:         %[[GC:.+]] = tx.mul %[[G]], %[[C]] : tensor<2x3xf32>, tensor<2x1xf32>
// CHECK:         %[[GY:.+]] = tx.mul %[[G]], %[[Y]] : tensor<2x3xf32>, tensor<2x3xf32>
// CHECK:         %[[DC1:.+]] = tx.reduce_sum %[[GY]] axes [1] : tensor<2x3xf32>
// CHECK:         %[[DC:.+]] = tx.reshape %[[DC1]] : tensor<2xf32> -> tensor<2x1xf32>
// CHECK:         %[[DB:.+]] = tx.reduce_sum %[[GC]] axes [0] : tensor<2x3xf32>
// CHECK:         return %{{.+}}, %[[DB]], %[[DC]] : tensor<f32>, tensor<3xf32>, tensor<2x1xf32>
tx.parameter @b = dense<0.5> : tensor<3xf32>
tx.parameter @c = dense<0.5> : tensor<2x1xf32>
func.func @broadcast(%x: tensor<2x3xf32>) -> tensor<f32> {
  %b = tx.load_parameter @b : tensor<3xf32>
  %c = tx.load_parameter @c : tensor<2x1xf32>
  %y = tx.add %x, %b : tensor<2x3xf32>, tensor<3xf32>
  %z = tx.mul %y, %c : tensor<2x3xf32>, tensor<2x1xf32>
  %l = tx.reduce_sum %z axes [] : tensor<2x3xf32>
  return %l : tensor<f32>
}

// -----

// Embedding lookup and the fused loss: gather scatters back with
// tx.gather_grad, the loss differentiates to tx.softmax_cross_entropy_grad.
// Integer ids and labels never get gradients, even under wrt=args.
// CHECK-LABEL: func.func @embedding_loss_grad
// CHECK-SAME:    (%[[IDS:[^:]+]]: tensor<2x3xi64>, %[[LABELS:[^:]+]]: tensor<6xi64>, %[[WTE:[^:]+]]: tensor<8x4xf32> {tx.name = "wte", tx.parameter = @wte})
// CHECK:         %[[E:.+]] = tx.gather %[[WTE]], %[[IDS]]
// CHECK:         %[[LOGITS:.+]] = tx.matmul
// CHECK:         %[[ONE:.+]] = tx.constant dense<1.000000e+00> : tensor<f32>
// CHECK:         %[[DLOGITS:.+]] = tx.softmax_cross_entropy_grad %[[ONE]], %[[LOGITS]], %[[LABELS]] reduction(mean) {ignore_index = -100 : i64}
// CHECK:         %[[DE:.+]] = tx.reshape %{{.+}} : tensor<6x4xf32> -> tensor<2x3x4xf32>
// CHECK:         %[[DWTE1:.+]] = tx.gather_grad %[[DE]], %[[IDS]] axis(0) : tensor<2x3x4xf32>, tensor<2x3xi64> -> tensor<8x4xf32>
// Tied embeddings: the head's use of wte is added to the lookup's.
// CHECK:         %[[DWTE:.+]] = tx.add %{{.+}}, %[[DWTE1]]
// CHECK:         return %{{.+}}, %[[DWTE]]
// ARGS-LABEL: func.func @embedding_loss_grad
// ARGS-SAME:    -> tensor<f32> attributes {tx.grad_of = @embedding_loss}
tx.parameter @wte = dense<0.5> : tensor<8x4xf32>
func.func @embedding_loss(%ids: tensor<2x3xi64>, %labels: tensor<6xi64>) -> tensor<f32> {
  %wte = tx.load_parameter @wte : tensor<8x4xf32>
  %e = tx.gather %wte, %ids {axis = 0} : tensor<8x4xf32>, tensor<2x3xi64>
  %h = tx.reshape %e : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %wt = tx.transpose %wte perm [1, 0] : tensor<8x4xf32>
  %logits = tx.matmul %h, %wt : tensor<6x4xf32>, tensor<4x8xf32>
  %l = tx.softmax_cross_entropy_loss %logits, %labels reduction(mean) {ignore_index = -100} : tensor<6x8xf32>, tensor<6xi64>
  return %l : tensor<f32>
}

// -----

// A frozen parameter (an exported buffer) stays a load and gets no gradient;
// a parameter the loss does not depend on gets zeros; integer arithmetic and
// an op without a rule (float tx.mod) off the differentiable path are fine;
// results after #0 are dropped.
// CHECK-LABEL: func.func @frozen_and_unused_grad
// CHECK-SAME:    (%[[X:[^:]+]]: tensor<4xf32>, %[[A:[^:]+]]: tensor<4xf32> {tx.name = "a", tx.parameter = @a}, %[[U:[^:]+]]: tensor<2xf32> {tx.name = "unused", tx.parameter = @unused})
// CHECK-SAME:    -> (tensor<f32>, tensor<4xf32> {tx.grad_of = @a}, tensor<2xf32> {tx.grad_of = @unused})
// CHECK:         tx.load_parameter @mask : tensor<4xf32>
// CHECK-NOT:     tx.mod
// CHECK:         %[[ZERO:.+]] = tx.constant dense<0.000000e+00> : tensor<2xf32>
// CHECK:         return %{{.+}}, %{{.+}}, %[[ZERO]] : tensor<f32>, tensor<4xf32>, tensor<2xf32>
tx.parameter @a = dense<0.5> : tensor<4xf32>
tx.parameter @mask = dense<[1.0, 0.0, 1.0, 1.0]> : tensor<4xf32> frozen
tx.parameter @unused = dense<0.5> : tensor<2xf32>
func.func @frozen_and_unused(%x: tensor<4xf32>) -> (tensor<f32>, tensor<2xf32>, tensor<4xf32>) {
  %a = tx.load_parameter @a : tensor<4xf32>
  %m = tx.load_parameter @mask : tensor<4xf32>
  %u = tx.load_parameter @unused : tensor<2xf32>
  %s = tx.shape %a : tensor<4xf32>
  %one = tx.constant dense<1> : tensor<i64>
  %s1 = tx.add %s, %one : tensor<1xi64>, tensor<i64>
  %xm = tx.mod %x, %x {fmod = true} : tensor<4xf32>, tensor<4xf32>
  %y = tx.mul %a, %m : tensor<4xf32>, tensor<4xf32>
  %l = tx.reduce_sum %y axes [] : tensor<4xf32>
  return %l, %u, %xm : tensor<f32>, tensor<2xf32>, tensor<4xf32>
}

// -----

// reduce_max shares the gradient among tied maxima: mask / count.
// CHECK-LABEL: func.func @reduce_max_grad
// CHECK-SAME:    %[[X:[^:]+]]: tensor<2x3xf32> {tx.name = "x", tx.parameter = @x}
// CHECK:         %[[M:.+]] = tx.reduce_max %[[X]] axes [1]
// CHECK:         %[[MK:.+]] = tx.reshape %[[M]] : tensor<2xf32> -> tensor<2x1xf32>
// CHECK:         %[[EQ:.+]] = tx.equal %[[X]], %[[MK]]
// CHECK:         %[[MASK:.+]] = tx.cast %[[EQ]] : tensor<2x3xi1> to tensor<2x3xf32>
// CHECK:         %[[COUNT:.+]] = tx.reduce_sum %[[MASK]] axes [1] keep_dims
// CHECK:         %[[SHARE:.+]] = tx.div %{{.+}}, %[[COUNT]] : tensor<2x1xf32>, tensor<2x1xf32>
// CHECK:         %[[DX:.+]] = tx.mul %[[MASK]], %[[SHARE]]
// CHECK:         return %{{.+}}, %[[DX]]
tx.parameter @x = dense<[[1.0, 3.0, 3.0], [2.0, 0.0, 1.0]]> : tensor<2x3xf32>
func.func @reduce_max() -> tensor<f32> {
  %x = tx.load_parameter @x : tensor<2x3xf32>
  %m = tx.reduce_max %x axes [1] : tensor<2x3xf32>
  %l = tx.reduce_sum %m axes [] : tensor<2xf32>
  return %l : tensor<f32>
}

// -----

// A strided slice scatters back with tx.slice_grad (normalized offsets);
// a unit-step slice pads with zeros; dropout reuses the forward's key and
// seed (so it drops the same elements).
// CHECK-LABEL: func.func @slices_and_dropout_grad
// CHECK-SAME:    %[[KEY:[^:]+]]: tensor<i64>
// CHECK:         tx.dropout %{{.+}}, %[[KEY]] ratio(1.000000e-01) seed(42) : tensor<4x6xf32>
// CHECK:         tx.pad %{{.+}} pads [1, 0, 1, 0] value(0.000000e+00) : tensor<2x6xf32>
// CHECK:         tx.slice_grad %{{.+}} offsets [0, 5] strides [1, -2] : tensor<4x3xf32> -> tensor<4x6xf32>
// CHECK:         tx.dropout %{{.+}}, %[[KEY]] ratio(1.000000e-01) seed(42) : tensor<4x6xf32>
tx.parameter @x = dense<1.0> : tensor<4x6xf32>
func.func @slices_and_dropout(%key: tensor<i64>) -> tensor<f32> {
  %x = tx.load_parameter @x : tensor<4x6xf32>
  %d = tx.dropout %x, %key ratio(0.1) seed(42) : tensor<4x6xf32>
  %a = tx.slice %d starts [-1] ends [-100] axes [1] steps [-2] : tensor<4x6xf32>
  %b = tx.slice %d starts [1] ends [3] axes [0] steps [1] : tensor<4x6xf32>
  %la = tx.reduce_sum %a axes [] : tensor<4x3xf32>
  %lb = tx.reduce_sum %b axes [] : tensor<2x6xf32>
  %l = tx.add %la, %lb : tensor<f32>, tensor<f32>
  return %l : tensor<f32>
}

// -----

// LayerNormalization over the innermost dim recomputes its statistics with
// tx.layer_norm (CSE merges it with the forward once tx-fuse-norms fused
// that) and differentiates to tx.layer_norm_grad.
// CHECK-LABEL: func.func @layer_norm_grad
// CHECK-SAME:    (%[[X:[^:]+]]: tensor<2x4xf32>, %[[G:[^:]+]]: tensor<4xf32> {tx.name = "g", tx.parameter = @g}, %[[B:[^:]+]]: tensor<4xf32> {tx.name = "b", tx.parameter = @b})
// CHECK:         tx.layer_normalization %[[X]], %[[G]], %[[B]]
// CHECK:         %{{.+}}, %[[MEAN:.+]], %[[RSTD:.+]] = tx.layer_norm %[[X]], %[[G]], %[[B]] eps(9.99999974E-6)
// CHECK:         %{{.+}}, %[[DG:.+]], %[[DB:.+]] = tx.layer_norm_grad %{{.+}}, %[[X]], %[[G]], %[[MEAN]], %[[RSTD]]
// CHECK:         return %{{.+}}, %[[DG]], %[[DB]]
tx.parameter @g = dense<1.0> : tensor<4xf32>
tx.parameter @b = dense<0.0> : tensor<4xf32>
func.func @layer_norm(%x: tensor<2x4xf32>) -> tensor<f32> {
  %g = tx.load_parameter @g : tensor<4xf32>
  %b = tx.load_parameter @b : tensor<4xf32>
  %y = tx.layer_normalization %x, %g, %b axis(-1) eps(1.0e-05) : tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>
  %l = tx.reduce_sum %y axes [] : tensor<2x4xf32>
  return %l : tensor<f32>
}

// -----

// Normalized over two dims, LayerNormalization has no fused form: the
// gradient is written with primitives (statistics recomputed).
// CHECK-LABEL: func.func @layer_norm_two_dims_grad
// CHECK-NOT:     tx.layer_norm_grad
// CHECK:         tx.reduce_mean %{{.+}} axes [1, 2] keep_dims
// CHECK:         tx.reciprocal
// CHECK-NOT:     tx.layer_norm_grad
// CHECK:         return
tx.parameter @g = dense<1.0> : tensor<3x4xf32>
func.func @layer_norm_two_dims(%x: tensor<2x3x4xf32>) -> tensor<f32> {
  %g = tx.load_parameter @g : tensor<3x4xf32>
  %y = tx.layer_normalization %x, %g axis(1) eps(1.0e-05) : tensor<2x3x4xf32>, tensor<3x4xf32>
  %l = tx.reduce_sum %y axes [] : tensor<2x3x4xf32>
  return %l : tensor<f32>
}

// -----

// RMSNormalization likewise differentiates to tx.rms_norm_grad.
// CHECK-LABEL: func.func @rms_norm_grad
// CHECK:         %{{.+}}, %[[RSTD:.+]] = tx.rms_norm %[[X:.+]], %[[G:.+]] eps(9.99999997E-7)
// CHECK:         %[[DX:.+]], %[[DG:.+]] = tx.rms_norm_grad %{{.+}}, %[[X]], %[[G]], %[[RSTD]]
// CHECK:         return %{{.+}}, %[[DG]]
tx.parameter @g = dense<1.0> : tensor<8xbf16>
func.func @rms_norm(%x: tensor<2x8xbf16>) -> tensor<bf16> {
  %g = tx.load_parameter @g : tensor<8xbf16>
  %y = tx.rms_normalization %x, %g axis(-1) eps(1.0e-06) : tensor<2x8xbf16>, tensor<8xbf16>
  %l = tx.reduce_sum %y axes [] : tensor<2x8xbf16>
  return %l : tensor<bf16>
}

// -----

// An op without a gradient rule on the path from a parameter (and from an
// argument) to the loss is an error at that op.
tx.parameter @p = dense<0.5> : tensor<4xf32>
func.func @no_rule(%x: tensor<4xf32>) -> tensor<f32> {
  %p = tx.load_parameter @p : tensor<4xf32>
  // expected-error @+1 {{no gradient rule for 'tx.mod'}}
  %m = tx.mod %x, %p {fmod = true} : tensor<4xf32>, tensor<4xf32>
  %l = tx.reduce_sum %m axes [] : tensor<4xf32>
  return %l : tensor<f32>
}

// -----

// Every op on the path that lacks a rule is named, not just the first.
tx.parameter @p = dense<0.5> : tensor<4xf32>
func.func @no_rules(%x: tensor<4xf32>) -> tensor<f32> {
  %p = tx.load_parameter @p : tensor<4xf32>
  // expected-error @+1 {{no gradient rule for 'tx.mod'}}
  %m = tx.mod %x, %p {fmod = true} : tensor<4xf32>, tensor<4xf32>
  %e = tx.exp %m : tensor<4xf32>
  // expected-error @+1 {{no gradient rule for 'tx.mod'}}
  %n = tx.mod %e, %p {fmod = true} : tensor<4xf32>, tensor<4xf32>
  %l = tx.reduce_sum %n axes [] : tensor<4xf32>
  return %l : tensor<f32>
}

// -----

// Result #0 must be a scalar float loss.
tx.parameter @p = dense<0.5> : tensor<4xf32>
// expected-error @+1 {{expected result #0 to be a scalar floating-point loss (0-d tensor), but got 'tensor<4xf32>'}}
func.func @vector_loss(%x: tensor<4xf32>) -> tensor<4xf32> {
  %p = tx.load_parameter @p : tensor<4xf32>
  %y = tx.mul %x, %p : tensor<4xf32>, tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// An integer "loss" is not differentiable either.
// expected-error @+1 {{expected result #0 to be a scalar floating-point loss (0-d tensor), but got 'tensor<i64>'}}
func.func @integer_loss(%x: tensor<i64>) -> tensor<i64> {
  return %x : tensor<i64>
}

// -----

// The name of the gradient function must be free.
// expected-error @+1 {{expected no symbol named '@taken_grad' yet, but one exists}}
func.func @taken(%x: tensor<f32>) -> tensor<f32> {
  return %x : tensor<f32>
}
func.func private @taken_grad(%x: tensor<f32>) -> tensor<f32>
