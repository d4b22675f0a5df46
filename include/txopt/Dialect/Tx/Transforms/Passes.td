//===- Passes.td - tx dialect passes ------------------------*- tablegen -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// Declarations of the passes over tx IR. Each pass lives in its own .cpp
// under lib/Dialect/Tx/Transforms and has one test file named after its flag.
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_DIALECT_TX_TRANSFORMS_PASSES_TD
#define TXOPT_DIALECT_TX_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

// Passes are added below, one `def` each, in alphabetical order.

def DifferentiatePass : Pass<"tx-differentiate", "::mlir::ModuleOp"> {
  let summary = "Build the reverse-mode gradient function of every loss function";
  let description = [{
    For a function `@f` whose result #0 is a scalar floating-point loss
    (a 0-d tensor), creates `@f_grad` right after it, which returns the loss
    and its gradient with respect to:

    * `wrt=params` (default): every non-`frozen` `tx.parameter` that `@f`
      reads with `tx.load_parameter`. They become trailing arguments of
      `@f_grad`, in `tx.parameter` order, each with `tx.parameter = @name`
      and `tx.name = "name"` argument attributes, so `@f_grad` reads no
      trainable state (frozen parameters stay `tx.load_parameter`);
    * `wrt=args`: every floating-point argument of `@f`;
    * `wrt=all`: both, argument gradients first.

    `@f_grad` takes `@f`'s arguments (then the parameters) and returns
    `(loss, grads...)`; each gradient result has the type of its value and a
    `tx.grad_of` attribute: the parameter's symbol, or the argument's index.
    Results #1.. of `@f` are not returned (the forward ops only they need are
    dropped). `@f_grad` carries `tx.grad_of = @f`.

    Before:

    ```mlir
    tx.parameter @w = dense<0.5> : tensor<4x3xf32>
    func.func @f(%x: tensor<2x4xf32>) -> tensor<f32> {
      %w = tx.load_parameter @w : tensor<4x3xf32>
      %y = tx.matmul %x, %w : tensor<2x4xf32>, tensor<4x3xf32>
      %l = tx.reduce_sum %y axes [] : tensor<2x3xf32>
      return %l : tensor<f32>
    }
    ```

    After (`@f` is kept unchanged):

    ```mlir
    func.func @f_grad(%x: tensor<2x4xf32>, %w: tensor<4x3xf32> {tx.name = "w", tx.parameter = @w})
        -> (tensor<f32>, tensor<4x3xf32> {tx.grad_of = @w}) attributes {tx.grad_of = @f} {
      %y = tx.matmul %x, %w : tensor<2x4xf32>, tensor<4x3xf32>
      %l = tx.reduce_sum %y axes [] : tensor<2x3xf32>
      %one = tx.constant dense<1.0> : tensor<f32>
      %g1 = tx.reshape %one : tensor<f32> -> tensor<1x1xf32>
      %g = tx.expand %g1 : tensor<1x1xf32> -> tensor<2x3xf32>
      %xt = tx.transpose %x perm [1, 0] : tensor<2x4xf32>
      %dw = tx.matmul %xt, %g : tensor<4x2xf32>, tensor<2x3xf32>
      return %l, %dw : tensor<f32>, tensor<4x3xf32>
    }
    ```

    Reverse mode over the single block: a value gets a gradient when it is
    floating-point, depends on a value differentiated against, and the loss
    depends on it; only the ops producing such values need a rule (integer,
    boolean and shape computations, constants and frozen parameters never
    do). Gradients of a value used several times are summed with `tx.add`;
    broadcasting ops reduce theirs to the operand shape with `tx.reduce_sum`
    and `tx.reshape`. The per-op rules are in GradientRules.cpp
    (`buildGradientFunction` in Autodiff.h is the C++ entry point). An op on
    such a path without a rule is an error at its location (the ONNX node):
    `no gradient rule for 'tx.foo'`; a function whose result #0 is not a
    scalar float is an error too.

    Rules worth knowing: `tx.reduce_max` shares the gradient equally among
    tied maxima (as `torch.amax`); `tx.relu` has gradient 0 at 0;
    `tx.pow`'s exponent gradient is 0 where the base is 0; `tx.dropout`
    reuses the forward's seed, so it drops the same elements;
    `tx.gather`, `tx.gather_elements` and strided `tx.slice` scatter back
    with the ops of TxGradOps.td; `tx.softmax_cross_entropy_loss` becomes
    `tx.softmax_cross_entropy_grad`. The fused `tx.layer_norm` /
    `tx.rms_norm` differentiate to their `_grad` ops, and so do
    `tx.layer_normalization` / `tx.rms_normalization` over the innermost dim
    in f16/bf16/f32 (the statistics recomputed by a `tx.layer_norm` /
    `tx.rms_norm`, which CSE merges with the forward once tx-fuse-norms has
    fused it); other norms (f64, several normalized dims) are written out
    with primitives. Decomposed norm chains are differentiated op by op:
    run tx-fuse-norms first to get fused gradients for them too.
  }];
  let dependentDialects = ["::mlir::txopt::tx::TxDialect",
                           "::mlir::func::FuncDialect"];
  let options = [
    Option<"wrt", "wrt", "std::string", /*default=*/"\"params\"",
           "What to differentiate against: params | args | all">,
    Option<"functionName", "function", "std::string", /*default=*/"\"\"",
           "Only differentiate this function (default: every function with "
           "a body that is not itself a gradient function)">,
  ];
}

def FuseNormsPass : Pass<"tx-fuse-norms", "::mlir::func::FuncOp"> {
  let summary = "Fuse LayerNorm / RMSNorm subgraphs into tx.layer_norm / tx.rms_norm";
  let description = [{
    Replaces every normalization over the innermost dimension with one fused
    op whose statistics are accumulated in f32:

    * `tx.layer_normalization` (ONNX LayerNormalization, opset 17+) whose
      normalized dims are the innermost one only (`axis = -1`, or an axis
      whose other normalized dims are all 1) -> `tx.layer_norm`;
    * `tx.rms_normalization` (ONNX RMSNormalization, com.microsoft
      SimplifiedLayerNormalization) likewise -> `tx.rms_norm`;
    * the decomposed LayerNorm of the TorchScript exporter (opset <= 16) and
      the decomposed RMSNorm of HF Llama / Mistral / T5 exports.

    Before (TorchScript, opset 14):

    ```mlir
    %m   = tx.reduce_mean %x axes [-1] keep_dims : tensor<2x32x128xf32>
    %d   = tx.sub %x, %m : tensor<2x32x128xf32>, tensor<2x32x1xf32>
    %sq  = tx.pow %d, %two : tensor<2x32x128xf32>, tensor<f32>
    %var = tx.reduce_mean %sq axes [-1] keep_dims : tensor<2x32x128xf32>
    %ve  = tx.add %var, %eps : tensor<2x32x1xf32>, tensor<f32>
    %std = tx.sqrt %ve : tensor<2x32x1xf32>
    %n   = tx.div %d, %std : tensor<2x32x128xf32>, tensor<2x32x1xf32>
    %s   = tx.mul %n, %gamma : tensor<2x32x128xf32>, tensor<128xf32>
    %y   = tx.add %s, %beta : tensor<2x32x128xf32>, tensor<128xf32>
    ```

    After:

    ```mlir
    %y, %mean, %rstd = tx.layer_norm %x, %gamma, %beta eps(1.0e-05)
        : tensor<2x32x128xf32>, tensor<128xf32>, tensor<128xf32>
    ```

    Decomposed chains are recognized from the reduce_mean of a square
    (`Pow(v, 2)` or `Mul(v, v)`) followed by `+ eps` and a square root;
    `v = x - ReduceMean(x)` makes it a LayerNorm, any other `v` an RMSNorm
    of `v`. Accepted spellings: `Div(v, Sqrt(.))`, `Mul(v, Reciprocal(Sqrt(.)))`,
    `Mul(v, Div(1, Sqrt(.)))`, `Mul(v, Pow(., -0.5))`, `Pow(., 0.5)` for the
    square root, either operand order of Mul/Add, an optional `* gamma`
    (and, for LayerNorm, `+ beta`) with gamma/beta of shape `[D]`, and a
    widening Cast to f32 before the chain with a Cast back to the same type
    after it (before or after the affine step). Absorbing those Casts rounds
    once instead of twice, which is the point of fusing them.

    Preconditions, each reported as a near miss under `explain=true`:
    every reduce_mean reduces only the innermost axis and keeps it; the
    exponent is exactly 2 (and +-0.5 for a Pow square root); `eps` is a
    one-element constant >= 0; the centered value is `x - mean(x)` of one
    `x` (modulo identical Casts); no intermediate of the chain (mean,
    centered value, variance, rstd, unscaled result...) has a user outside
    it, since fusing would then compute it twice; a Mul/Add after the
    normalization whose operand varies along the innermost dim but is not
    `[D]` (a weight broadcast over the batch) blocks the fusion rather than
    being left behind; the element type is f16, bf16 or f32.

    Deliberately not handled: normalization over several trailing dims or a
    non-innermost axis, unbiased variance (ReduceSum / (D - 1)), chains
    without an eps, and backward chains (the gradient ops are created by
    autodiff, not matched).

    With `explain=true`, every candidate that was not fused gets a remark
    `not fused: layer_norm|rms_norm: <reason>` at its first reduce_mean (or
    at the ONNX op); `txopt --report` collects them.
  }];
  let dependentDialects = ["::mlir::txopt::tx::TxDialect"];
  let options = [
    Option<"explain", "explain", "bool", /*default=*/"false",
           "Emit a remark for every norm candidate that was not fused, with the reason">,
  ];
  let statistics = [
    Statistic<"numLayerNorm", "num-layer-norm", "Number of tx.layer_norm ops created">,
    Statistic<"numRMSNorm", "num-rms-norm", "Number of tx.rms_norm ops created">,
  ];
}

def FuseOptimizerPass : Pass<"tx-fuse-optimizer", "::mlir::func::FuncOp"> {
  let summary = "Fuse per-parameter Adam / AdamW update chains into multi-tensor tx.adam ops";
  let description = [{
    Finds every per-parameter Adam or AdamW update written out in primitive
    ops (what torch.onnx exports for an optimizer step, see
    `adamw_step_op17.onnx`) and replaces all of them in a function with one
    `tx.adam` per group of equal hyper-parameters. Existing `tx.adam` ops
    (the importer's translation of `ai.onnx.preview.training.Adam`, or an
    earlier run) with equal hyper-parameters are merged into the same op.

    Before (one parameter, PyTorch AdamW as exported by TorchScript, opset 17;
    operands nested and types elided for brevity):

    ```mlir
    %lwd = tx.mul %lr, %wd : tensor<f32>, tensor<f32>
    %dec = tx.sub %one, %lwd : tensor<f32>, tensor<f32>
    %pd  = tx.mul %p, %dec : tensor<64x32xf32>, tensor<f32>
    %m1  = tx.add (tx.mul %m, %b1), (tx.mul %g, %one_minus_b1)
    %v1  = tx.add (tx.mul %v, %b2), (tx.mul (tx.mul %g, %one_minus_b2), %g)
    %bc1 = tx.sub %one, (tx.pow %b1, %step)      // and %bc2 likewise
    %mh  = tx.div %m1, %bc1                       // %vh = %v1 / %bc2
    %num = tx.mul %lr, %mh
    %den = tx.add (tx.sqrt %vh), %eps
    %p1  = tx.sub %pd, (tx.div %num, %den)
    return %p1, %m1, %v1
    ```

    After (all parameters of the function with these hyper-parameters):

    ```mlir
    %new_params:2, %new_exp_avg:2, %new_exp_avg_sq:2 = tx.adam adamw
        params(%p, %q) grads(%g, %h) exp_avg(%m, %n) exp_avg_sq(%v, %w)
        lr(%lr) step(%step) betas(0.899999976, 9.990000e-01)
        eps(9.99999993E-9, outside_sqrt) weight_decay(0.00999999977)
        : tensor<64x32xf32>, tensor<32xf32>
    ```

    A chain is anchored on the parameter update `p1 = P - U` (or `P + U`
    with a negated `U`). Products and quotients are flattened, so operand
    order, association and where the scalars sit do not matter. Recognized:

    * decoupled decay (AdamW) `P = p * (1 - lr*wd)`, `P = p - lr*wd*p`, or
      with a constant lr their folded forms; L2 decay (Adam) `g' = g + wd*p`
      feeding both moments; no decay (wd = 0, recorded as `adamw`);
    * `m1 = b1*m + c1*g'` (or torch's `lerp`: `m + c1*(g' - m)`) and
      `v1 = b2*v + c2*g'*g'` (`g'*g'` also as `Pow(g', 2)`);
    * bias corrections `1 - b^t` with `t` a value (function argument) or a
      constant, applied as `m1 / bc1` or as PyTorch's
      `step_size = lr / bc1`; `v1 / bc2` under the root or
      `sqrt(v1) / sqrt(bc2)`; both or neither;
    * `eps` outside (`sqrt(vh) + eps`) or inside (`sqrt(vh + eps)`) the
      root, `Sqrt` or `Pow(., 0.5)`, `Div` or `Mul(., Reciprocal(.))`.

    Preconditions (each failing one is a near miss, reported as a remark
    `not fused: adam: <reason>` at the anchor under `explain=true`):
    b1, b2, eps, wd are constants with c1 = 1 - b1 and c2 = 1 - b2 (to f32
    rounding), b in [0, 1), eps >= 0, wd >= 0; both bias corrections use
    the moments' betas and one step; p, g, m, v and the three results have
    one f32 type (no broadcasting); lr and step are 0-d f32 (an integer step
    is cast); no intermediate that depends on p/g/m/v other than the new
    m, new v and new p has a user outside the chain (fusing would compute it
    twice). Scalar-only parts (bias corrections, lr*wd) may be shared.

    Grouping: chains join one `tx.adam` when mode, betas, eps and its
    placement, wd, bias correction, lr and step agree (lr/step: the same
    value, or constants equal in value), and when the op can be placed
    after all of its operands and before every user of its results (two
    consecutive steps of one parameter never merge). Otherwise they become
    separate `tx.adam` ops; that is not a failure. Each `tx.adam` is placed
    right after its last operand definition; a constant lr or step becomes a
    `tx.constant` operand. A lone existing `tx.adam` is left as it is.

    Not handled: AMSGrad, Adamax, NAdam/RAdam, maximize, per-parameter
    (tensor-valued) learning rates, decay applied after the update (ONNX
    Adam's `norm_coefficient_post`), mixed-precision state, and chains in
    the `epsilon_hat` form (`lr * sqrt(bc2) / bc1 * m / (sqrt(v) + eps)`,
    TF/Keras); an existing `tx.adam` with that placement still merges.

    This is a function-level rewrite rather than greedy patterns: grouping
    needs every chain of the function at once.
  }];
  let dependentDialects = ["::mlir::txopt::tx::TxDialect"];
  let options = [
    Option<"explain", "explain", "bool", /*default=*/"false",
           "Emit a remark for every Adam candidate that was not fused, with the reason">,
  ];
  let statistics = [
    Statistic<"numParams", "num-params", "Number of parameters updated by created tx.adam ops">,
    Statistic<"numOps", "num-ops", "Number of tx.adam ops created">,
  ];
}

#endif // TXOPT_DIALECT_TX_TRANSFORMS_PASSES_TD
