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

def AutocastPass : Pass<"tx-autocast", "::mlir::func::FuncOp"> {
  let summary = "Run matrix products in bf16 or fp16 (the --precision policy)";
  let description = [{
    The per-op mixed-precision policy of `txopt --precision=bf16|fp16`:

    | ops | precision |
    |---|---|
    | `tx.matmul`, `tx.gemm` | the low type (operands cast, result cast back to f32) |
    | `tx.attention` | q, k, v and the output in the low type (output cast back to f32); the row log-sum-exp stays f32, the mask keeps its type (as `torch.autocast` runs `scaled_dot_product_attention`) |
    | everything else: reductions, softmax, norms and their statistics, the loss, the optimizer | f32 |

    Every f32 `tx.matmul` / `tx.gemm` gets its operands cast to the low type,
    runs there (accumulating in f32 or better: the reference executor
    accumulates in double and rounds the result once, as cuBLAS does with an
    f32 compute type) and its result is cast back to f32 for its users:

    ```mlir
    %y = tx.matmul %x, %w : tensor<64x128xf32>, tensor<128x384xf32>
    ```

    becomes

    ```mlir
    %xl = tx.cast %x : tensor<64x128xf32> to tensor<64x128xbf16>
    %wl = tx.cast %w : tensor<128x384xf32> to tensor<128x384xbf16>
    %yl = tx.matmul %xl, %wl : tensor<64x128xbf16>, tensor<128x384xbf16>
    %y  = tx.cast %yl : tensor<64x384xbf16> to tensor<64x384xf32>
    ```

    This is `torch.autocast`'s list for these ops, with one difference: the
    result is widened right away instead of when a later op needs f32, so no
    other op ever sees a low-precision value. Run it on the forward before
    `tx-build-train-step`: the matmul gradient rules then run the backward
    GEMMs in the low type too, and the casts differentiate to casts, so the
    f32 master weights receive f32 gradients. GEMMs that are not f32 are
    left alone.
  }];
  let dependentDialects = ["::mlir::txopt::tx::TxDialect"];
  let options = [
    Option<"precision", "precision", "::mlir::txopt::tx::GemmPrecision",
           /*default=*/"::mlir::txopt::tx::GemmPrecision::bf16",
           "The GEMM type", [{::llvm::cl::values(
             clEnumValN(::mlir::txopt::tx::GemmPrecision::bf16, "bf16", "bfloat16"),
             clEnumValN(::mlir::txopt::tx::GemmPrecision::fp16, "fp16",
                        "IEEE half (pair with loss scaling)"))}]>,
  ];
}

def BuildTrainStepPass : Pass<"tx-build-train-step", "::mlir::ModuleOp"> {
  let summary = "Replace a forward + loss function with one pure training step";
  let description = [{
    What `txopt model.onnx --train` runs. The forward function's result #0
    is the loss (`loss=output`), or logits `[..., C]` to which
    `loss=cross-entropy` appends torch's mean token cross-entropy
    (`ignore_index = -100`) against the integer argument named `labels`
    (created, i64, when the function has none). The function is replaced by

    ```mlir
    func.func @train_step(params..., state..., %lr, %step, %rng_key,
                          batch...)
        -> (new params..., new state..., new step, loss, grad_norm)
        attributes {tx.train_step = {optimizer = "adamw", lr = ..., ...}}
    ```

    * the gradient of the loss with respect to every trainable parameter
      (tx-differentiate's rules, inlined);
    * `grad_norm`, the global L2 norm of all gradients, before clipping;
      with `grad-clip=c > 0` every gradient is scaled by
      `min(1, c / (grad_norm + 1e-6))` (`torch.nn.utils.clip_grad_norm_`);
    * `step + 1`, then the optimizer as fused multi-tensor ops: one
      `tx.adam` (`adamw` decoupled or `adam` L2 decay, bias-corrected, eps
      outside the root: torch.optim.AdamW / Adam) or `tx.sgd`
      (torch.optim.SGD, dampening 0) per weight-decay group.

    Arguments carry `tx.name` and `tx.role`: `param` (also `tx.parameter =
    @name`, whose value is the initial one), `exp_avg` / `exp_avg_sq` /
    `momentum_buffer` and `step` (also `tx.init`, their splat initial
    value, 0), `data` / `labels` (the batch; `labels` when the value reaches
    a cross-entropy's labels). Two step inputs are set by the driver each
    step and not carried: `lr` (`tensor<f32>`, role `lr`, `tx.init` = the
    `lr` option), the optimizer's learning rate, so a schedule needs no
    recompile; and `rng_key` (`tensor<i64>`, role `rng`), the key operand
    of every `tx.dropout` in the step (forward and gradient alike), so each
    step draws a fresh mask and the backward drops what the forward
    dropped. Each result that feeds the next step carries
    `tx.next = i`, the index of the argument it replaces, so a driver runs
    N steps without knowing the optimizer (`txopt-run --steps`).

    Parameters matching `freeze` (a POSIX extended regex searched in the
    name) are marked `frozen` and stay `tx.load_parameter` reads. Weight
    decay skips parameters matching `no-decay`, by default those of rank
    < 2 (biases, norm weights: the nanoGPT / llm.c convention); the default
    decay is PyTorch's (AdamW 0.01, Adam and SGD 0). SGD without momentum
    keeps no buffers. Master weights are f32: a bf16 or f16 parameter (a
    bf16 export) becomes an f32 argument, cast to the model's type where
    the forward reads it, and its gradient is cast to f32 for the optimizer. The forward function is removed; errors (no trainable
    parameter, bad regex, labels of the wrong shape, an op without a
    gradient rule, ...) are reported at the function or the op.

    With `loss-scaling` (what `--precision=fp16` sets), the step carries
    GradScaler's state as two more arguments, `loss_scale` (initially
    `loss-scale`, 65536) and `growth_tracker` (0): the loss is multiplied
    by the scale before differentiation, every gradient divided by it, and
    one finite check covers all of them (`sum(g - g)` over every gradient
    is 0 exactly when all are finite). When one is not, the optimizer's
    results are discarded with `tx.where`, so parameters, moments and the
    step counter keep their bit patterns, the scale halves and the tracker
    resets; otherwise the tracker counts up and the scale doubles after
    `loss-scale-interval` (2000) clean steps. The returned loss is the
    unscaled one; a result `skipped` (i1) says whether the step was skipped.

    With `grad-accum=N > 1` (gradient accumulation over N micro-batches),
    the step gains accumulator arguments after the optimizer state, one
    `<param>.grad_acc` (role `grad_acc`, f32, `tx.init = 0`) per parameter
    and a scalar `loss_acc` (role `loss_acc`), and a second function is
    emitted beside it with the step's own signature (so a driver passes
    one argument list to both; the arguments it does not read are unused):

    ```mlir
    func.func @micro_step(<the step's arguments>)
        -> (grad_acc + grad..., loss_acc + loss, loss)
        attributes {tx.micro_step = @train_step}
    ```

    Each gradient is added where it is produced, so accumulating costs no
    pass over the gradients beyond that add. The driver runs `@micro_step`
    on micro-batches 1..N-1 and the step on micro-batch N: the step adds
    its own gradients to the accumulators, divides by N (the mean over the
    N micro-batches, as one batch N times larger gives for a mean loss),
    reports `loss = (loss_acc + loss) / N`, and returns zeros for the
    accumulators (`tx.next`), ready for the next step. Not combined with
    tx-insert-fp8 (its scaling state is per step).

    With `eval`, a forward-only function is emitted beside the step, again
    with the step's signature, for validation:

    ```mlir
    func.func @eval(<the step's arguments>) -> (loss)
        attributes {tx.eval = @train_step}
    ```

    It reads the parameters from the step's parameter arguments and the
    batch from its batch arguments and computes the loss as the step does
    (unscaled, dropout off as under torch's `model.eval()`); no gradient,
    no update, no state change.

    Run tx-fuse-norms first: the fused norms then differentiate to
    `tx.layer_norm_grad` / `tx.rms_norm_grad`.
  }];
  let dependentDialects = ["::mlir::txopt::tx::TxDialect",
                           "::mlir::func::FuncDialect"];
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"\"",
           "Forward function (default: main, else the only public one)">,
    Option<"stepName", "name", "std::string", /*default=*/"\"train_step\"",
           "Name of the step function">,
    Option<"loss", "loss", "::mlir::txopt::tx::LossKind",
           /*default=*/"::mlir::txopt::tx::LossKind::Output",
           "What result #0 of the forward is", [{::llvm::cl::values(
             clEnumValN(::mlir::txopt::tx::LossKind::Output, "output",
                        "the loss"),
             clEnumValN(::mlir::txopt::tx::LossKind::CrossEntropy,
                        "cross-entropy", "logits, against the labels"))}]>,
    Option<"labels", "labels", "std::string", /*default=*/"\"labels\"",
           "Argument holding the labels under loss=cross-entropy">,
    Option<"optimizer", "optimizer", "::mlir::txopt::tx::OptimizerKind",
           /*default=*/"::mlir::txopt::tx::OptimizerKind::AdamW",
           "The optimizer", [{::llvm::cl::values(
             clEnumValN(::mlir::txopt::tx::OptimizerKind::AdamW, "adamw",
                        "Adam with decoupled weight decay"),
             clEnumValN(::mlir::txopt::tx::OptimizerKind::Adam, "adam",
                        "Adam, weight decay added to the gradient"),
             clEnumValN(::mlir::txopt::tx::OptimizerKind::SGD, "sgd",
                        "SGD with optional momentum"))}]>,
    Option<"lr", "lr", "double", /*default=*/"1e-3",
           "Learning rate: the initial value (tx.init) of the step's lr input">,
    Option<"beta1", "beta1", "double", /*default=*/"0.9", "Adam beta1">,
    Option<"beta2", "beta2", "double", /*default=*/"0.999", "Adam beta2">,
    Option<"eps", "eps", "double", /*default=*/"1e-8", "Adam epsilon">,
    Option<"weightDecay", "weight-decay", "double", /*default=*/"-1",
           "Weight decay (negative: PyTorch's default of the optimizer)">,
    Option<"momentum", "momentum", "double", /*default=*/"0", "SGD momentum">,
    Option<"noDecay", "no-decay", "std::string", /*default=*/"\"\"",
           "Regex of parameters without weight decay (default: rank < 2)">,
    Option<"gradClip", "grad-clip", "double", /*default=*/"0",
           "Clip gradients to this global L2 norm (0: off)">,
    Option<"freeze", "freeze", "std::string", /*default=*/"\"\"",
           "Regex of parameters not trained">,
    Option<"lossScaling", "loss-scaling", "bool", /*default=*/"false",
           "Dynamic loss scaling (GradScaler semantics), for fp16">,
    Option<"initialLossScale", "loss-scale", "double", /*default=*/"65536.0",
           "Initial loss scale">,
    Option<"lossScaleInterval", "loss-scale-interval", "int64_t",
           /*default=*/"2000", "Clean steps before the scale doubles">,
    Option<"gradAccum", "grad-accum", "int64_t", /*default=*/"1",
           "Micro-batches per optimizer step (> 1 emits @micro_step)">,
    Option<"eval", "eval", "bool", /*default=*/"false",
           "Also emit @eval: the loss only, forward, for validation">,
  ];
}

def DataParallelPass : Pass<"tx-data-parallel", "::mlir::ModuleOp"> {
  let summary = "Turn a training step into a ZeRO-1 data-parallel step for N ranks";
  let description = [{
    Rewrites every function carrying `tx.train_step` (as tx-build-train-step
    builds it) into the step one of `ranks` ranks runs on its own slice of
    the global batch, with the optimizer state sharded over the ranks
    (ZeRO stage 1). Per parameter `p` (n elements), with gradient `g` as
    the global-norm computation squares it:

    ```
    shard_g = reduce_scatter mean (pad(flatten(g), n_pad))    // n_pad = n rounded up to ranks
    shard_p = rank_shard (pad(flatten(p), n_pad))
    sumsq   = all_reduce sum (sum over params of sum(shard_g^2))
    grad_norm = sqrt(sumsq)                                    // the global norm
    shard_p', m', v' = optimizer(shard_p, clip(shard_g), m, v)  // m, v: n_pad / ranks
    p'      = reshape(slice(all_gather shard_p', 0, n))
    loss    = all_reduce mean (loss)
    ```

    Before, with ranks = 2 and one parameter `tensor<3x5xf32>`:

    ```mlir
    %n = tx.sqrt %sumsq : tensor<f32>
    %p2, %m2, %v2 = tx.adam adamw params(%p) grads(%g) exp_avg(%m) ...
        : tensor<3x5xf32>
    ```

    After (moment arguments and results become `tensor<8xf32>`: 15
    elements padded to 16, half on each rank):

    ```mlir
    %gs = tx.reduce_scatter mean %gpad ranks(2) : tensor<16xf32> -> tensor<8xf32>
    %ss = tx.all_reduce sum %local ranks(2) : tensor<f32>
    %n = tx.sqrt %ss : tensor<f32>
    %ps = tx.rank_shard %ppad ranks(2) : tensor<16xf32> -> tensor<8xf32>
    %p2s, %m2, %v2 = tx.adam adamw params(%ps) grads(%gs) exp_avg(%m) ...
        : tensor<8xf32>
    %full = tx.all_gather %p2s ranks(2) : tensor<8xf32> -> tensor<16xf32>
    ```

    The mean over ranks of per-rank mean-loss gradients is the gradient of
    the mean loss over the global batch (equal-sized slices), so a step of
    N ranks on batch B equals a plain step on batch N*B up to f32
    summation order. Gradient clipping scales by a factor computed from the
    global norm, identical on every rank, so it commutes with the
    reduce-scatter: the pass rebuilds the chain of scalar multiplies and
    divides between the squared gradient and the optimizer on the shard.
    The recipe (`tx.train_step`) gains `data_parallel = ranks`: drivers
    read the rank count there (checkpoints do not compare it: they hold
    the sharded state whole, see `tx.shard_of` below).

    `ranks` is fixed at compile time because the IR has static shapes (a
    shard's length is part of its type); issue 15 asks for the rank count
    at run time, which is not built yet. The gradients are reduce-scattered
    where the norm is taken, after the backward; tx-bucket-gradient-reductions
    moves them up into the backward, in buckets.

    FP8 steps: the amax operand of every tx.fp8_scale_update and
    tx.fp8_current_scale becomes `all_reduce max` of it, so every rank keeps
    identical scaling state (as Transformer Engine reduces amaxes).

    `@micro_step` (gradient accumulation), `@eval` and `@logits` take the
    step's arguments: the moment arguments they never read get the shard
    types (one that reads a moment is refused). The micro-step keeps no
    collective: each rank accumulates its own micro-batches' gradients in
    its whole-size accumulators, and the step reduce-scatters the rank's
    mean once (DDP's no_sync). Every sharded argument carries
    `tx.shard_of`, the whole tensor's shape (checkpoints save it whole).

    Loss scaling (fp16): the finite check behind the `skipped` result sums
    this rank's gradients; that sum is all-reduced (sum), so every rank
    skips together, and a skipped step's `where` keeping a moment follows
    it into shards.

    Not handled, refused with an error: a loss-scaling step whose `skipped`
    is not the `tx.is_nan` tx-build-train-step builds, a `@micro_step`,
    `@eval` or `@logits` that reads optimizer state, and a step already
    data-parallel. `ranks = 1`
    rewrites the step too, every collective over one rank; functions
    without `tx.train_step` are never touched.
  }];
  let dependentDialects = ["::mlir::txopt::tx::TxDialect",
                           "::mlir::func::FuncDialect"];
  let options = [
    Option<"ranks", "ranks", "int64_t", /*default=*/"1",
           "Number of data-parallel ranks the step is built for">,
  ];
}


def BucketGradientReductionsPass
    : Pass<"tx-bucket-gradient-reductions", "::mlir::ModuleOp"> {
  let summary = "Move a data-parallel step's gradient reduce-scatters into the backward, in buckets";
  let description = [{
    tx-data-parallel reduce-scatters every gradient where the global norm
    is taken, after the whole backward: the communication then waits for
    the backward to end and the backward never runs beside it. This pass
    moves each reduce-scatter of a gradient (with the reshape and zero
    padding that feed only it) up to where that gradient is complete, so
    the GPU can run it while the backward goes on (the lowering forks it
    onto a communication stream and waits for it before the first reader
    of its shard: docs/DataParallel.md).

    One collective per gradient would be one NCCL launch per parameter in
    the middle of the backward; so the gradients are taken in the order
    they become complete and gathered into buckets of at least
    `bucket-bytes` bytes (the last bucket holds the rest, PyTorch DDP's
    bucket_cap_mb is 25 MB), and a bucket's reduce-scatters go together,
    right after its last gradient is complete. Each carries the bucket's
    number in `tx.bucket`, in the order the buckets are sent.

    Before (ranks = 2; %g2 is complete early in the backward, %g1 at its
    end):

    ```mlir
    %g2 = tx.matmul ...
    ... the rest of the backward ...
    %g1 = tx.matmul ...
    %f1 = tx.reshape %g1 : tensor<4x4xf32> -> tensor<16xf32>
    %s1 = tx.reduce_scatter mean %f1 ranks(2) : tensor<16xf32> -> tensor<8xf32>
    %s2 = tx.reduce_scatter mean %g2 ranks(2) : tensor<8xf32> -> tensor<4xf32>
    ```

    After, with buckets of 32 bytes:

    ```mlir
    %g2 = tx.matmul ...
    %s2 = tx.reduce_scatter mean %g2 ranks(2) {tx.bucket = 0 : i64} ...
    ... the rest of the backward ...
    %g1 = tx.matmul ...
    %f1 = tx.reshape %g1 : tensor<4x4xf32> -> tensor<16xf32>
    %s1 = tx.reduce_scatter mean %f1 ranks(2) {tx.bucket = 1 : i64} ...
    ```

    Only ops move, and only up to a point after everything they read: the
    values are unchanged (the CPU executor's simulated ranks, which meet
    at each collective in program order, give the same numbers).
    `bucket-bytes = 0` leaves the step as it is: one bucket after the
    backward, all reduce-scatters together. Touches only functions with
    `tx.train_step` and `data_parallel`, and of their reduce-scatters only
    those in the function's body whose input is complete before the first
    reduce-scatter: one that reads another's result, even through other
    ops, stays where it is, untagged (moving both could put the first
    below its reader). A reduce-scatter the pass did not make otherwise
    moves the same way.
  }];
  let dependentDialects = ["::mlir::txopt::tx::TxDialect",
                           "::mlir::func::FuncDialect"];
  let options = [
    Option<"bucketBytes", "bucket-bytes", "int64_t", /*default=*/"26214400",
           "Bytes of gradient per bucket (0: leave the reduce-scatters after the backward)">,
  ];
}

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
    and `tx.reshape`. Each op's rule is its `DifferentiableOpInterface`
    method (lib/Dialect/Tx/IR/<Family>Gradients.cpp;
    `buildGradientFunction` in Autodiff.h is the C++ entry point). An op on
    such a path without a rule is an error at its location (the ONNX node):
    `no gradient rule for 'tx.foo'`; a function whose result #0 is not a
    scalar float is an error too.

    Rules worth knowing: `tx.reduce_max` shares the gradient equally among
    tied maxima (as `torch.amax`); `tx.relu` has gradient 0 at 0;
    `tx.pow`'s exponent gradient is 0 where the base is 0; `tx.dropout`
    reuses the forward's key and seed, so it drops the same elements;
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
    Option<"wrt", "wrt", "::mlir::txopt::tx::GradientWrt",
           /*default=*/"::mlir::txopt::tx::GradientWrt::Params",
           "What to differentiate against", [{::llvm::cl::values(
             clEnumValN(::mlir::txopt::tx::GradientWrt::Params, "params",
                        "the tx.parameter reads"),
             clEnumValN(::mlir::txopt::tx::GradientWrt::Args, "args",
                        "the floating-point arguments"),
             clEnumValN(::mlir::txopt::tx::GradientWrt::All, "all",
                        "arguments, then parameters"))}]>,
    Option<"functionName", "function", "std::string", /*default=*/"\"\"",
           "Only differentiate this function (default: every function with "
           "a body that is not itself a gradient function)">,
  ];
}

def FuseAttentionPass : Pass<"tx-fuse-attention", "::mlir::func::FuncOp"> {
  let summary = "Fuse scaled-dot-product attention subgraphs into tx.attention";
  let description = [{
    Replaces the attention that exporters write out in primitive ops with
    one `tx.attention` (see its description), so that neither the scores nor
    the probabilities are materialized and autodiff produces one
    `tx.attention_grad`.

    Before (PyTorch SDPA through the dynamo exporter, opset 18; GQA with 4
    query heads on 2 key/value heads; types abbreviated):

    ```mlir
    %ku  = tx.unsqueeze %k axes [2] : tensor<2x2x32x32xf32>
    %ke  = tx.expand %ku : tensor<2x2x1x32x32xf32> -> tensor<2x2x2x32x32xf32>
    %k3  = tx.reshape %ke : tensor<2x2x2x32x32xf32> -> tensor<8x32x32xf32>
    %kt3 = tx.transpose %k3 perm [0, 2, 1] : tensor<8x32x32xf32>
    %kt  = tx.reshape %kt3 : tensor<8x32x32xf32> -> tensor<2x4x32x32xf32>
    %qs  = tx.mul %q, %c : tensor<2x4x32x32xf32>, tensor<f32>     // c = sqrt(scale)
    %kts = tx.mul %kt, %c : tensor<2x4x32x32xf32>, tensor<f32>
    %s   = tx.matmul %qs, %kts : tensor<2x4x32x32xf32>, tensor<2x4x32x32xf32>
    %sm  = tx.add %s, %causal : tensor<2x4x32x32xf32>, tensor<2x1x32x32xf32>
    %p   = tx.softmax %sm axis(-1) : tensor<2x4x32x32xf32>
    %nan = tx.is_nan %p : tensor<2x4x32x32xf32> -> tensor<2x4x32x32xi1>
    %pz  = tx.where %nan, %zero, %p : tensor<2x4x32x32xi1>, tensor<f32>, tensor<2x4x32x32xf32>
    %o   = tx.matmul %pz, %v4 : tensor<2x4x32x32xf32>, tensor<2x4x32x32xf32>
    ```

    After (`%causal` was a constant 0 / -inf triangle; `%v4` the same
    repeat of `%v`):

    ```mlir
    %o, %lse = tx.attention %q, %k, %v scale(0.17677669529663687) causal
        : tensor<2x4x32x32xf32>, tensor<2x2x32x32xf32>, tensor<2x2x32x32xf32>
    ```

    Recognized: `softmax(scores, axis = -1)` whose probabilities (optionally
    through `Where(IsNaN(p), 0, p)`) are the lhs of one rank-4 `matmul` with
    v, where `scores = matmul(q', kT') [*|/ c] [Where] [+ mask]` and `q'`,
    `kT'` are q and kT times scalar constants; the product of all those
    constants is `scale`. kT is a transpose whose last two output dims are
    (D, Tk), possibly between reshapes that keep those dims
    (`k.transpose(-2, -1)`, the dynamo exporter's `[B*H, T, D]` transpose,
    TorchScript's `permute(0, 2, 3, 1)` of `[B, T, H, D]`); the swap is
    undone into k's `[B, H, Tk, D]` layout (a new transpose/reshape where
    needed). A
    grouped-query repeat `reshape(expand(unsqueeze(x, 2)))` of k and v folds
    into their `Hkv` heads. A mask that is a constant (or a frozen
    parameter with an inline value) is classified: all zeros disappears;
    the same lower triangle in every `[Tq, Tk]` slice (0 where `j <= i`,
    `-inf` or `<= -1e30` elsewhere) becomes `causal`, and a band of width
    `w < Tq` in it `window(w)`; any other mask stays an additive `mask`
    operand.

    A `Where` on the scores, `Where(cond, scores, fill)` (Hugging Face's
    eager GPT-2: `torch.where(causal_mask, scores, finfo.min)`) or
    `Where(cond, fill, scores)` (`masked_fill`: cond marks the masked keys),
    is read as the 0 / -inf additive mask it amounts to when `cond` is a
    constant i1 (a folded slice of the causal buffer, say) and `fill` a
    scalar constant that exp flushes to exactly 0: -inf, or at most -1e30
    (finfo.min of f32 and bf16). f16 scores take -inf only: finfo(f16).min
    = -65504 is within their own range. That mask is classified as above
    (a condition that keeps everything disappears; a triangle or band
    becomes `causal`/`window`; any other pattern becomes a constant f32
    mask operand). A mask added after the Where becomes the `mask` operand
    next to the Where's `causal`.

    Preconditions, each reported as a near miss under `explain=true`: the
    softmax is over the last axis of rank-4 scores; every scale factor is a
    scalar constant (a Mul by a tensor is a scale not applied uniformly);
    q, kT and v have matching `[B, H, ...]` shapes without broadcasting and
    one f16/bf16/f32 type; k and v fold to the same head count; the mask
    broadcasts to the scores without widening them and needs no gradient
    (reads no trainable parameter); no intermediate (scaled q or kT, scores,
    masked scores, probabilities) has a user outside the attention. A
    training `tx.dropout` of the probabilities (read only by the matmul with
    v) becomes the op's `dropout(key, ratio, seed)`: the same mask (on
    the GPU cuDNN draws its own, at the same rate); with `cudnn-limits`,
    dropout together with a sliding window is a near miss instead (cuDNN
    takes the window only without dropout). A Where on
    the scores has a constant condition and a scalar constant fill as above.
    Its condition keeps a key in every query row: for a row it masks
    completely the unfused softmax gives uniform probabilities (finite fill)
    or NaN (-inf), and tx.attention zeros. With -inf, a
    `Where(IsNaN(p), 0, p)` after the softmax makes both zeros, so that
    case fuses. With a mask added after the Where, the fill is -inf and the
    condition causal. A finite fill stays finite after the add, so a row the
    added mask hides completely (left padding) spreads its probabilities
    over keys the condition masked; two non-causal masks would need a
    new add.

    Left as they are: the head-split transposes and reshapes around q, v
    and the output (the op's layout is `[B, H, T, D]`), a Where that the
    scale follows (`Where` then `Mul`) or that follows the mask's add, and
    rank-3 (`bmm`) attention.

    With `explain=true`, every candidate that was not fused gets a remark
    `not fused: attention: <reason>` at its softmax.
  }];
  let dependentDialects = ["::mlir::txopt::tx::TxDialect"];
  let options = [
    Option<"explain", "explain", "bool", /*default=*/"false",
           "Emit a remark for every attention candidate that was not fused, with the reason">,
    Option<"cudnnLimits", "cudnn-limits", "bool", /*default=*/"false",
           "Fuse only what the GPU's fused attention (cuDNN SDPA) runs: head "
           "dims multiples of 8, at most 256, no dropout with a sliding window "
           "(txopt sets it for GPU steps)">,
  ];
  let statistics = [
    Statistic<"numAttention", "num-attention", "Number of tx.attention ops created">,
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
  let summary = "Fuse per-parameter Adam / AdamW / SGD update chains into multi-tensor tx.adam / tx.sgd ops";
  let description = [{
    Finds every per-parameter Adam, AdamW or SGD update written out in
    primitive ops (what torch.onnx exports for an optimizer step, see
    `adamw_step_op17.onnx`, `sgd_groups_op17.onnx`) and replaces all of
    them in a function with one `tx.adam` or `tx.sgd` per group of equal
    hyper-parameters. Existing `tx.adam` / `tx.sgd` ops (the importer's
    translation of `ai.onnx.preview.training.Adam`, the training-step
    builder's, or an earlier run's) with equal hyper-parameters are merged
    into the same op.

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

    **Adam.** A chain is anchored on the parameter update `p1 = P - U` (or
    `P + U` with a negated `U`). Products and quotients are flattened, so
    operand order, association and where the scalars sit do not matter.
    Recognized:

    * decoupled decay (AdamW) `P = p * (1 - lr*wd)`, `P = p - lr*wd*p`, or
      with a constant lr their folded forms; L2 decay (Adam) `g' = g + wd*p`
      feeding both moments; no decay (wd = 0, recorded as `adamw`);
    * `m1 = b1*m + c1*g'` (or torch's `lerp`: `m + c1*(g' - m)`) and
      `v1 = b2*v + c2*g'*g'` (`g'*g'` also as `Pow(g', 2)`);
    * bias corrections `1 - b^t` with `t` a value (function argument) or a
      constant, applied as `m1 / bc1` or as PyTorch's
      `step_size = lr / bc1`; `v1 / bc2` under the root or
      `sqrt(v1) / sqrt(bc2)`; both or neither;
    * bias corrections of a constant step folded into constants (what
      exporters and the canonicalizer make of `1 - b^10`), see below;
    * `eps` outside (`sqrt(vh) + eps`) or inside (`sqrt(vh + eps)`) the
      root, `Sqrt` or `Pow(., 0.5)`, `Div` or `Mul(., Reciprocal(.))`.

    Folded bias corrections. With a constant step the corrections arrive as
    constant factors: `1 / (1 - b1^t)` on the update (merged with lr when lr
    is a constant too) and `1 / (1 - b2^t)` on v1 under the root (or its
    square root on `sqrt(v1)`). They fuse only when one integer step
    `t` in [1, 2^24] reproduces them: `c = 1 - b^t` to f32 rounding, the
    bound being `b^t * (t * 2^-24 + 2^-22) + c * 2^-22`, i.e. the
    exporter's beta may be the unrounded one (0.999 rather than its f32
    value, 2^-24 relative away, raised to the t) and `b^t` and `c` may carry
    a few f32 ulps. With lr a value, both factors must match the same `t`
    (two equations, one unknown); with lr a constant, the update's factor
    `lr / (1 - b1^t)` cannot be split, so the second moment's factor alone
    gives `t` and lr is that factor times `1 - b1^t` as tx.adam computes
    it. Either way tx.adam then recomputes exactly the folded constants (to
    the bound above), so the rewrite is exact up to f32 rounding. A factor
    that is `1 - b^t` of no integer step (0.0095 for b = 0.999 lies between
    t = 9 and 10), or factors of two different steps, do not fuse: they are
    near misses. For realistic steps the bound admits one integer (the
    neighbours differ by `b^t (1 - b)`); once `b^t` nears f32 resolution
    (e.g. `b2 = 0.999` beyond a few thousand steps) neighbouring steps give
    the same constants and the smallest is used: they are interchangeable.
    `lr` and the step become `tx.constant` operands. With a constant lr
    and no factor on v1, any factor on the update is taken as lr, without
    bias correction: whatever the exporter meant, tx.adam then computes the
    same numbers.

    Adam preconditions (each failing one is a near miss, reported as a remark
    `not fused: adam: <reason>` at the anchor under `explain=true`):
    b1, b2, eps, wd are constants with c1 = 1 - b1 and c2 = 1 - b2 (to f32
    rounding), b in [0, 1), eps >= 0, wd >= 0; both bias corrections use
    the moments' betas and one step; p, g, m, v and the three results have
    one f32 type (no broadcasting); lr and step are 0-d f32 (an integer step
    is cast); no intermediate that depends on p/g/m/v other than the new
    m, new v and new p has a user outside the chain (fusing would compute it
    twice). Scalar-only parts (bias corrections, lr*wd) may be shared.

    The hyper-parameters of the fused op are f64, as PyTorch's are Python
    floats: exporters write them as f32 constants, so the matcher takes the
    shortest decimal that rounds to the graph's f32 beta (f32(0.999) ->
    0.999) and accepts it only when it reproduces both f32 constants, the
    beta and its complement (which exporters fold in double). Bias
    corrections the graph computes with ops (`1 - Pow(beta, t)` on the f32
    beta, as exports that take the step as an input and torch's capturable
    path do) make the fused op `f32_bias_correction`, so fused and unfused
    round alike; folded ones (a constant step) are formed in double.

    **SGD** (torch.optim.SGD, `_single_tensor_sgd` as exported). Anchored on
    `p1 = p - lr * d` (or `p + (-lr) * d`), with lr a constant (torch reads
    it with `.item()`) or a 0-d f32 value:

    * plain: `d = g'` (`tx.sgd` with momentum 0; the buffer operand is
      zeros, which momentum 0 never reads);
    * momentum: `d = b1`, `b1 = momentum * b + (1 - dampening) * g'`;
    * nesterov: `d = g' + momentum * b1`, the same b1 and momentum;
    * `g' = g + wd * p` (L2 decay) or `g' = g`.

    Gate: p is a function argument or a `tx.load_parameter`, p1 is returned
    and the step is scaled (`p - d` alone is a subtraction, lr = 1 is not
    recognized), so that a residual or a centring in a forward graph is not
    read as a step and gets no remark. In the buffer update the gradient is
    the term that is also the nesterov term, else the one with L2 decay,
    else the one with coefficient 1 (dampening 0), else the right operand;
    the last two only name the state, as swapping b and g' gives the same
    b1. Near misses (`not fused: sgd: <reason>`): momentum, dampening or wd
    not constants; momentum outside (0, 1) (a coefficient of 1 is also what
    a sum of two gradients looks like); `1 - dampening` outside (0, 1]; a
    nesterov term with another momentum, or with dampening (torch refuses
    it); p, g, b and the results not of one f32 type; an intermediate
    (`momentum * b`, `g + wd*p`, ...) with a user outside the chain.

    Grouping: chains join one op when the kind and all hyper-parameters
    agree (Adam: mode, betas, eps and its placement, wd, bias correction, lr
    and step; SGD: momentum, dampening, nesterov, wd, lr; lr/step: the same
    value, or constants equal in value), and when the op can be placed
    after all of its operands and before every user of its results (two
    consecutive steps of one parameter never merge). Otherwise they become
    separate ops; that is not a failure. Each fused op is placed right after
    its last operand definition; a constant lr or step becomes a
    `tx.constant` operand. A lone existing `tx.adam` / `tx.sgd` is left as
    it is.

    Not handled: AMSGrad, Adamax, NAdam/RAdam, maximize (an ascent `p + lr
    * g`), per-parameter (tensor-valued) learning rates, decay applied after
    the update (ONNX Adam's `norm_coefficient_post`), mixed-precision state,
    chains in the `epsilon_hat` form (`lr * sqrt(bc2) / bc1 * m /
    (sqrt(v) + eps)`, TF/Keras; with a constant lr and step it fuses as the
    unbiased update above; an existing `tx.adam` with that placement still
    merges), lerp written as `where(true, ...)` (the dynamo exporter's
    decomposition of torch's in-place `lerp_`, left for a `tx.where`
    folder). SGD's first step (torch sets `b1 = g'`, there is no old
    buffer) fuses as plain SGD with the returned buffer left as it is;
    with weight decay `g'` is returned too, an escaping intermediate.

    This is a function-level rewrite rather than greedy patterns: grouping
    needs every chain of the function at once.
  }];
  let dependentDialects = ["::mlir::txopt::tx::TxDialect"];
  let options = [
    Option<"explain", "explain", "bool", /*default=*/"false",
           "Emit a remark for every Adam or SGD candidate that was not fused, with the reason">,
  ];
  let statistics = [
    Statistic<"numParams", "num-params", "Number of parameters updated by created tx.adam / tx.sgd ops">,
    Statistic<"numOps", "num-ops", "Number of tx.adam / tx.sgd ops created">,
  ];
}

def GemmNormalFormPass : Pass<"tx-gemm-normal-form", "::mlir::func::FuncOp"> {
  let summary = "Rewrite GEMMs and the transposes they read into tx.blas_gemm";
  let description = [{
    A backend calls a GEMM library with stored operands, transpose flags,
    batch strides, alpha, beta * C and, for FP8, scale pointers. The step IR
    says the same thing with several ops: ONNX's MatMul reading a
    `tx.transpose` (nanoGPT's step has 48 transposes around 39 matmuls),
    Gemm's own flags and C, and `tx.fp8_matmul`. This pass rewrites each
    `tx.matmul`, `tx.gemm` and `tx.fp8_matmul` into one `tx.blas_gemm`:

    - a `tx.transpose` that swaps the last two dims (and keeps the others)
      becomes the reading GEMM's transpose flag, when every reader of the
      transpose is a GEMM that can take it that way; the transpose is then
      erased. A transpose something else reads stays, and the GEMMs read
      it as it is (it is computed anyway). An FP8 GEMM takes a transposed
      `b` only (cuBLASLt's FP8 kernels take only the "TN" form);
    - `tx.gemm`'s transA/transB, alpha, beta and C carry over (a folded
      transpose toggles the flag);
    - `tx.fp8_matmul`'s scale inverses become the op's.

    Must not fire: integer or mixed-type matmuls, 1-D operands (numpy's
    vector rule), and batch dims that broadcast on both sides (`[2, 1, M,
    K] x [1, 3, K, N]`: a strided batch has one stride per side); those
    GEMMs stay as they are (the GPU lowering then names the reason). The
    numerics are unchanged: the op sums, scales and rounds once, as the op
    it replaces. The GPU lowering runs this on every function it lowers.

    ```mlir
    %t = tx.transpose %w perm [1, 0] : tensor<384x128xbf16>
    %y = tx.matmul %x, %t : tensor<64x128xbf16>, tensor<128x384xbf16>
    // becomes
    %y = tx.blas_gemm %x, %w {transpose_b} : tensor<64x128xbf16>, tensor<384x128xbf16> -> tensor<64x384xbf16>
    ```
  }];
  let dependentDialects = ["::mlir::txopt::tx::TxDialect"];
}

def LossBiasGradientPass : Pass<"tx-loss-bias-gradient", "::mlir::func::FuncOp"> {
  let summary = "Sum an LM-head bias gradient over the loss gradient as rounded for the GEMMs";
  let description = [{
    A loss gradient (`tx.softmax_cross_entropy_grad`, f32) that is read,
    through reshapes, only by column sums (an LM head's bias gradient) and
    by one cast to bf16 or f16 (its gradient GEMMs' operand): the sums read
    the rounded copy, widened, instead. PyTorch's autocast does the same
    (an autocast `F.linear`'s bias gradient reduces its bf16 output
    gradient). The f32 gradient is then read by the cast alone, which the
    GPU's loss kernel absorbs: it writes the gradient in bf16, never in
    f32 (BERT's head: 16384 x 30528, 2 GB), and the sum reads 1 GB of bf16
    where it read 2 GB and wrote the bf16 copy. The rounding is taken once,
    right after the loss op; the old cast's readers and the sums read views
    of it.

    Must not fire (a remark says why, where something sums the gradient):
    a gradient any other op reads in f32 (it is stored in f32 anyway), one
    no cast rounds to bf16/f16, a gradient not in f32. A loss gradient no
    sum reads (an LM head without a bias) is left alone, silently. The GPU
    lowering runs it beside tx-gemm-bias.

    ```mlir
    %g = tx.softmax_cross_entropy_grad %seed, %logits, %labels reduction(mean) : tensor<f32>, tensor<8x16xf32>, tensor<8xi64>
    %db = tx.reduce_sum %g axes [0] : tensor<8x16xf32>
    %h = tx.cast %g : tensor<8x16xf32> to tensor<8x16xbf16>
    // becomes
    %r = tx.cast %g : tensor<8x16xf32> to tensor<8x16xbf16>
    %w = tx.cast %r : tensor<8x16xbf16> to tensor<8x16xf32>
    %db = tx.reduce_sum %w axes [0] : tensor<8x16xf32>
    ```
  }];
  let dependentDialects = ["::mlir::txopt::tx::TxDialect"];
}

def GemmBiasPass : Pass<"tx-gemm-bias", "::mlir::func::FuncOp"> {
  let summary = "Fold a row-vector bias into its GEMM's epilogue where no kernel would absorb the add";
  let description = [{
    A linear layer's bias is a row vector added to its GEMM's result. Where
    the sum's readers compute with it, the add runs in their kernel at no
    extra traffic. Where only library calls read it through views, the add
    is a kernel of its own, reading and writing the whole product (GPT-2's
    q/k/v projection before cuDNN's attention). The loss and its gradient
    count as such readers: their row kernel takes no elementwise producer
    in (BERT's LM-head bias). Views: reshapes; before
    `tx.attention`/`tx.attention_grad` also the head split (split,
    transpose: cuDNN's strides) and the cast back to the GEMM's type (it
    cancels the widening cast); before a `tx.blas_gemm`, reshapes only. This
    pass folds such an add into the `tx.blas_gemm` as its `c` with beta 1,
    which the GPU lowering passes to cuBLASLt as the epilogue's bias:

    - `add(gemm, bias)` or `add(cast(gemm), bias)` (either order), `bias` a
      row vector (`[N]` or `[1, ..., N]`, N the GEMM's columns);
    - the GEMM has no `c`, its result (and the cast's) has no other reader;
      an FP8 GEMM only with a bf16 or f16 result (cuBLASLt's FP8 bias rule)
      and a `b` without batch dims;
    - the bias is rounded to the GEMM's type (bf16 under
      `--precision=bf16`) and the sum rounds once, as PyTorch's autocast
      `F.linear` does; in f32 the sum rounds once instead of twice.

    Must not fire (a remark says why): a sum some reader computes with
    (the function's result included), a split, transpose or cast before a
    GEMM (a kernel that absorbs the add), a GEMM already adding a `c`, a
    GEMM result (or its cast) read without the bias too, a bias that is not
    a float row vector over the columns, the FP8 cases above. The GPU
    lowering runs it after tx-gemm-normal-form.

    ```mlir
    %y = tx.blas_gemm %x, %w : tensor<64x128xbf16>, tensor<128x384xbf16> -> tensor<64x384xbf16>
    %f = tx.cast %y : tensor<64x384xbf16> to tensor<64x384xf32>
    %s = tx.add %f, %bias : tensor<64x384xf32>, tensor<384xf32>
    // (%s read by reshapes and transposes into tx.attention) becomes
    %b = tx.cast %bias : tensor<384xf32> to tensor<384xbf16>
    %y = tx.blas_gemm %x, %w, %b : tensor<64x128xbf16>, tensor<128x384xbf16>, tensor<384xbf16> -> tensor<64x384xbf16>
    %s = tx.cast %y : tensor<64x384xbf16> to tensor<64x384xf32>
    ```
  }];
  let dependentDialects = ["::mlir::txopt::tx::TxDialect"];
}

def GemmGeluPass : Pass<"tx-gemm-gelu", "::mlir::func::FuncOp"> {
  let summary = "Compute a GEMM's tanh GELU in its epilogue, with the pre-activation as a second result";
  let description = [{
    GPT-2's MLP computes `gelu(x W + b)` with the GELU's tanh form. Without
    this pass the GEMM writes `x W` and a kernel reads it back to add the
    bias, compute the GELU and write it for the next GEMM; the backward
    reads `x W` again. cuBLASLt's GELU_AUX_BIAS epilogue writes both from
    its accumulator, the GELU's output and the pre-activation `x W + b`,
    and the kernel's read goes away. This pass rewrites

    - the chain `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))` in any
      association and operand order, x^3 as a product or `tx.pow`, its
      constants as the chain's type rounds them (relative 2^-9 in bf16,
      2^-11 in f16, 1e-6 in f32) and the chain of x's shape, where
    - x is a `tx.blas_gemm`'s result through reshapes that keep the last
      dim and float casts (between the GEMM and the bias add only exact
      ones: to the same type or f32; after it, to 16 bits or more), plus
      (optionally) a row-vector bias,
    - the GEMM is bf16 or f16 (the epilogue's tanh is approximate, within
      their rounding), without `c`, its `b` one matrix, N a multiple of 8,
      its product read only through the bias add when there is one,
    - and GEMMs (through reshapes) are the only readers of the chain's
      output cast to the GEMM's type,

    into a `tx.blas_gemm_gelu`: the cast's readers read its result, and the
    chain's other readers (the backward's GELU gradient) read its
    pre-activation through the same casts and reshapes. The bias is rounded
    to the GEMM's type, as tx-gemm-bias rounds it; the pre-activation is
    rounded once with the bias in it, and the GELU is computed from the
    unrounded sum.

    Must not fire (a remark at the chain's tanh says why): an FP8 or f32
    GEMM, a GEMM with `c`, a batched `b`, N not a multiple of 8, a bias that
    is not a row vector, the product read without the bias too, a GELU
    output no GEMM reads in the GEMM's type (an FP8 step quantizes it in the
    kernel that computes it), and the second GELU of one GEMM's result (the
    backward's recomputation). The erf GELU has no cuBLASLt epilogue. The
    GPU lowering runs it after tx-gemm-bias (`--no-gelu-epilogue` turns it
    off).

    ```mlir
    %y = tx.blas_gemm %x, %w : tensor<64x128xbf16>, tensor<128x512xbf16> -> tensor<64x512xbf16>
    %f = tx.cast %y : tensor<64x512xbf16> to tensor<64x512xf32>
    %s = tx.add %f, %bias : tensor<64x512xf32>, tensor<512xf32>
    // %g = 0.5 %s (1 + tanh(...)) ; %h = tx.cast %g to bf16 ; GEMMs read %h
    // becomes
    %b = tx.cast %bias : tensor<512xf32> to tensor<512xbf16>
    %h, %pre = tx.blas_gemm_gelu %x, %w, %b : tensor<64x128xbf16>, tensor<128x512xbf16>, tensor<512xbf16> -> tensor<64x512xbf16>, tensor<64x512xbf16>
    %s = tx.cast %pre : tensor<64x512xbf16> to tensor<64x512xf32>
    ```
  }];
  let dependentDialects = ["::mlir::txopt::tx::TxDialect"];
}

def GemmTransposesPass : Pass<"tx-gemm-transposes", "::mlir::func::FuncOp"> {
  let summary = "Move transposes to where the GEMMs reading or writing them fold them";
  let description = [{
    A GEMM reads a last-two-dims transpose of an operand through its flag
    (tx-gemm-normal-form), and writes its result transposed by swapping its
    operands (`C^T = B^T A^T`). Two exact rewrites put transposes there
    instead of in kernels that move data across strides:

    - a `tx.cast` of such a transpose, the cast's only reader, whose result
      only GEMMs read (directly or through transposes they fold), moves
      before the transpose: the cast converts in place order (the tied LM
      head's bf16 embedding: GPT-2 0.28 -> 0.06 ms), and a transpose of
      the moved transpose (the backward's GEMM reading the weight as it is)
      becomes the cast itself;
    - a 2-D `tx.matmul` whose result is read only through such a transpose
      (maybe after a cast, each the other's only reader) computes the
      transposed result with its operands swapped; an operand's own
      transpose is read through, one only it read disappears.

    Must not fire: a cast of a transpose something else also reads, a cast
    read by anything but GEMMs, batched (rank > 2) matmuls, and a matmul
    whose result something else reads too. Moving elements and converting
    them commute, and a GEMM sums the same products either way round, so
    the values are the same bits. The GPU lowering runs it on every
    function it lowers, before tx-rematerialize and tx-gemm-normal-form.

    ```mlir
    %t = tx.transpose %w perm [1, 0] : tensor<16x8xf32>
    %c = tx.cast %t : tensor<8x16xf32> to tensor<8x16xbf16>
    %y = tx.matmul %x, %c : tensor<4x8xbf16>, tensor<8x16xbf16>
    // becomes
    %c = tx.cast %w : tensor<16x8xf32> to tensor<16x8xbf16>
    %t = tx.transpose %c perm [1, 0] : tensor<16x8xbf16>
    %y = tx.matmul %x, %t : tensor<4x8xbf16>, tensor<8x16xbf16>
    ```
  }];
  let dependentDialects = ["::mlir::txopt::tx::TxDialect"];
}

def AttentionBiasPass : Pass<"tx-attention-bias", "::mlir::func::FuncOp"> {
  let summary = "Spell out attention masks as the [B|1, H|1, Tq, Tk] bias of the q type";
  let description = [{
    cuDNN's fused attention takes a mask as an additive bias of q's element
    type that may broadcast over batch and heads, not over query or key
    positions. This pass rewrites the mask of every `tx.attention` and
    `tx.attention_grad` that has another shape or type (a `[B, 1, 1, Tk]`
    padding mask, an f32 mask) into that form: a `tx.expand` to
    `[B|1, H|1, Tq, Tk]` (batch and heads stay broadcast) and a `tx.cast`
    to q's type, placed after the mask's definition and shared by every op
    reading the same mask. Must not fire: a mask already in that form, and
    attention without a mask. The cast rounds an f32 mask to q's type:
    exact for the 0 / -inf masks exporters write. The GPU lowering runs it
    on each function before the kernel grouping.
  }];
  let dependentDialects = ["::mlir::txopt::tx::TxDialect"];
}

def AttentionCastsPass : Pass<"tx-attention-casts", "::mlir::func::FuncOp"> {
  let summary = "Move the casts around attention's head split and merge to their far side";
  let description = [{
    An exported attention after tx-autocast splits an f32 projection into
    heads (split, reshape, transpose) and casts each piece to bf16/f16
    before `tx.attention`, and widens each result before the head merge.
    With the casts between them, a backend cannot read the heads as strided
    views of the projection's buffer. This pass moves

    - each f32 -> bf16/f16 cast of an attention input (q, k, v, dO) up its
      chain of layout ops (transpose, reshape, squeeze, unsqueeze,
      identity), and across a `tx.split` once every used piece is cast the
      same way, when everything the chain feeds is an attention input;
    - each bf16/f16 -> f32 cast of an attention result (o, dQ, dK, dV) down
      past a layout op that is its only reader, or a `tx.concat` whose
      every operand is such a cast of the same type;
    - and drops a narrowing cast of a widened narrow value (the value is
      the narrow one itself).

    Must not fire: a cast whose chain also feeds something other than
    attention, a split with a piece not cast alike, a concat with an
    operand that is not a widened narrow value. All exact: a cast commutes
    with moving elements, and bf16/f16 -> f32 -> bf16/f16 is the identity.
    The GPU lowering runs it on each function before the kernel grouping
    (GPU.md, "Views, no head split or merge copies").
  }];
  let dependentDialects = ["::mlir::txopt::tx::TxDialect"];
}

def PadLossClassesPass : Pass<"tx-pad-loss-classes", "::mlir::func::FuncOp"> {
  let summary = "Pad a language model's vocabulary to a multiple of 8 before its loss";
  let description = [{
    A head `logits[M, C] = x[M, K] W[K, C]` (+ a `[C]` bias, through
    reshapes that keep the classes last) feeding a
    `tx.softmax_cross_entropy_loss` over `[M, C]` rows, with `C >= 1024`
    not a multiple of 8 (BERT's 30522), gives the GEMMs of the logits and
    of their gradients rows that are not 16-byte aligned in bf16, which
    cuBLASLt runs several times slower. This pass pads the classes to the
    next multiple of 8: `W` gets zero columns (a transposed `[C, K]` table,
    a tied embedding, gets zero rows before its transpose), the padded
    logits get -30000 through the bias (the model's bias padded, or a
    constant), and the loss runs over the padded rows. Exact: a padded
    class's probability underflows to 0, so the loss and the real classes'
    gradients are unchanged and the padded classes' gradients are 0;
    autodiff slices the weight's and the bias's gradients back.

    Before (types abbreviated):

    ```mlir
    %wt = tx.transpose %wte perm [1, 0] : tensor<1030x64xf32>
    %y  = tx.matmul %x, %wt : tensor<2x16x64xf32>, tensor<64x1030xf32>
    %z  = tx.add %y, %b : tensor<2x16x1030xf32>, tensor<1030xf32>
    %r  = tx.reshape %z : tensor<2x16x1030xf32> -> tensor<32x1030xf32>
    %l  = tx.softmax_cross_entropy_loss %r, %labels reduction(mean)
    ```

    After:

    ```mlir
    %wp = tx.pad %wte pads [0, 0, 2, 0] value(0.0) : tensor<1030x64xf32>
    %wt = tx.transpose %wp perm [1, 0] : tensor<1032x64xf32>
    %y  = tx.matmul %x, %wt : tensor<2x16x64xf32>, tensor<64x1032xf32>
    %bp = tx.pad %b pads [0, 2] value(-3.000000e+04) : tensor<1030xf32>
    %z  = tx.add %y, %bp : tensor<2x16x1032xf32>, tensor<1032xf32>
    %r  = tx.reshape %z : tensor<2x16x1032xf32> -> tensor<32x1032xf32>
    %l  = tx.softmax_cross_entropy_loss %r, %labels reduction(mean)
    ```

    Must not fire: an aligned or small class count, class weights, scores
    of rank > 2, logits read by anything but the loss, scores that are not
    a GEMM's output. txopt runs it for GPU steps (`--no-pad-loss-classes`
    turns it off, `--pad-loss-classes` on for any output).
  }];
  let dependentDialects = ["::mlir::txopt::tx::TxDialect"];
}

def CrossEntropyRowsPass : Pass<"tx-cross-entropy-rows", "::mlir::func::FuncOp"> {
  let summary = "Cross-entropy over [N, C, d...] scores as the same op over [N * d..., C] rows";
  let description = [{
    ONNX's SoftmaxCrossEntropyLoss takes the classes on axis 1 (scores
    `[N, C, d1, ..., dk]`, labels `[N, d1, ..., dk]`); a row kernel wants
    each position's classes contiguous. This pass rewrites every
    `tx.softmax_cross_entropy_loss` and `tx.softmax_cross_entropy_grad`
    whose scores have rank > 2 into the same op over rows: the scores
    transposed to `[N, d..., C]` and reshaped to `[N * d..., C]`, the labels
    (and the gradient of a `none` loss) reshaped to `[N * d...]`; a `none`
    loss is reshaped back to `[N, d...]`, the gradient reshaped to
    `[N, d..., C]` and transposed back to `[N, C, d...]`. A loss and its
    gradient over the same scores and labels share the row operands. Class
    weights, the reduction and `ignore_index` carry over. Exact: the same
    values, moved. Must not fire: scores of rank 2. The GPU lowering runs
    it on each function before the kernel grouping.
  }];
  let dependentDialects = ["::mlir::txopt::tx::TxDialect"];
}

def InsertFP8Pass : Pass<"tx-insert-fp8", "::mlir::ModuleOp"> {
  let summary = "Turn the eligible GEMMs of a training step into FP8 GEMMs with scaling state";
  let description = [{
    Transformer Engine's FP8 recipe, as IR, on the step function built by
    `tx-build-train-step` (run right after it: the pass tells gradients from
    forward values by the `tx.grad_seed` marker that step building leaves on
    the reverse sweep's seed, and removes it; a step without the marker is
    an error rather than a silent E4M3-for-all). Every eligible `tx.matmul`
    or `tx.gemm` (forward, and the dgrad/wgrad GEMMs autodiff derived from
    it) becomes a
    `tx.fp8_matmul` of scaled, saturating casts of its operands:

    * operand types: `format=hybrid` (default) casts activations and
      weights to `f8E4M3FN` and gradients (values that depend on the seed)
      to `f8E5M2`; `format=e4m3` uses `f8E4M3FN` for all;
    * `scaling=delayed` (default; `history`, default 1024, `amax=max|
      most_recent`, `margin`, default 0): each cast tensor gets three state
      arguments, `<node>.<lhs|rhs>.fp8_<k>.amax_history` (`tensor<Lxf32>`,
      init 0), `.scale` and `.scale_inv` (init 1), with `tx.role`
      `fp8_amax_history` / `fp8_scale` / `fp8_scale_inv`. The cast uses the
      scale from the previous step; `tx.amax` of the tensor and
      `tx.fp8_scale_update` produce the next history, scale and scale_inv,
      returned with `tx.next` (TE's `amax_and_scale_update`, in the same
      step);
    * `scaling=current`: the scale comes from the tensor's own amax
      (`tx.fp8_current_scale`); no state.

    A tensor read by several GEMMs (a weight in its forward and dgrad GEMMs)
    is cast once. The output keeps the GEMM's type (bf16 after tx-autocast).

    Eligibility is decided here and nowhere else; a GEMM that stays in its
    precision gets a remark `not fused: fp8: <reason>` (under
    `explain=true`; `txopt --report` lists them):

    * `target=sm_XY` below sm_89 (no FP8 tensor cores): every GEMM;
    * excluded: by default the first and the last forward GEMM (the
      embedding side and the LM head, as TE practice keeps them in higher
      precision) and the backward GEMMs of the same ONNX node; with
      `exclude=REGEX`, the GEMMs whose ONNX node name matches instead;
    * M, K or N not a multiple of 16 (cuBLASLt's FP8 requirement), rank < 2
      operands, or two gradient operands (no E5M2 x E5M2 GEMM).

    Accumulation: by default (`fast-accumulation=none`) every FP8 GEMM
    keeps split accumulation (its tensor-core partial sums promoted to f32
    at intervals). `forward` marks the forward GEMMs `fast_accumulation`
    and leaves the dgrad/wgrad GEMMs split, as Transformer Engine does by
    default (its fprop GEMMs run without `use_split_accumulator`, its
    dgrad and wgrad with it); `all` marks every one. txopt does not follow
    TE's default because the fast accumulator bought nothing measurable
    on GPT-2's step (H100: forward FP8 GEMMs 4.46 ms fast against 4.48
    split, DeviceLog session 28) while summing less exactly.

    With `attention=true` (txopt `--fp8-attention`) each eligible
    `tx.attention` and its `tx.attention_grad` become `tx.fp8_attention`
    and `tx.fp8_attention_grad` (cuDNN's FP8 flash attention): q, k, v and
    the upstream gradient are cast like GEMM operands (sites `<node>.q`,
    `.k`, `.v`, `<node>.backward.do`, E5M2 under the hybrid format); the
    quantized probabilities (`.s`),
    the output (`.o`), the quantized dS (`.backward.dp`) and the gradients
    (`.backward.dq`, `.dk`, `.dv`) get sites of their own whose amaxes are
    the ops' results; the FP8 output and gradients are dequantized for
    their readers (a GEMM that reads one casts it again, with a site of
    its own). Eligible: delayed scaling (the FP8 output needs its
    scale before the call), a bf16 or f16 attention with its gradient, no
    mask, window or dropout, target sm_90 or newer, and q, k and v of head
    dim 128 (cuDNN's FP8 attention backward on Hopper takes no other).
    Others stay as they are (with `explain=true`, a remark `not fused: fp8
    attention: <reason>`; txopt turns each into a warning).

    When at least one GEMM is converted, the step's `tx.train_step` recipe
    gains `fp8 = #tx.fp8_recipe<...>`. `tx.gemm` (GPT-2's Conv1D) is
    converted too: `transA` / `transB` become a `tx.transpose` of the
    high-precision operand before its cast, and `alpha * AB + beta * C` is
    applied to the FP8 product's result in the GEMM's type.
  }];
  let dependentDialects = ["::mlir::txopt::tx::TxDialect"];
  let options = [
    Option<"scaling", "scaling", "::mlir::txopt::tx::FP8ScalingKind",
           /*default=*/"::mlir::txopt::tx::FP8ScalingKind::delayed",
           "How scales are derived", [{::llvm::cl::values(
             clEnumValN(::mlir::txopt::tx::FP8ScalingKind::delayed, "delayed",
                        "from the amax history of earlier steps"),
             clEnumValN(::mlir::txopt::tx::FP8ScalingKind::current, "current",
                        "from this step's amax"))}]>,
    Option<"format", "format", "::mlir::txopt::tx::FP8Format",
           /*default=*/"::mlir::txopt::tx::FP8Format::hybrid",
           "Which FP8 types", [{::llvm::cl::values(
             clEnumValN(::mlir::txopt::tx::FP8Format::hybrid, "hybrid",
                        "E4M3 forward, E5M2 gradients"),
             clEnumValN(::mlir::txopt::tx::FP8Format::e4m3, "e4m3",
                        "E4M3 everywhere"))}]>,
    Option<"history", "history", "int64_t", /*default=*/"1024",
           "Amax history length (delayed)">,
    Option<"amax", "amax", "::mlir::txopt::tx::AmaxCompute",
           /*default=*/"::mlir::txopt::tx::AmaxCompute::max",
           "Amax of the history (delayed)", [{::llvm::cl::values(
             clEnumValN(::mlir::txopt::tx::AmaxCompute::max, "max",
                        "the largest in the history"),
             clEnumValN(::mlir::txopt::tx::AmaxCompute::most_recent,
                        "most_recent", "the last step's"))}]>,
    Option<"margin", "margin", "int64_t", /*default=*/"0",
           "Binades of headroom (delayed)">,
    Option<"fastAccumulation", "fast-accumulation",
           "::mlir::txopt::tx::FP8FastAccumulation",
           /*default=*/"::mlir::txopt::tx::FP8FastAccumulation::none",
           "Which FP8 GEMMs get fast_accumulation", [{::llvm::cl::values(
             clEnumValN(::mlir::txopt::tx::FP8FastAccumulation::none, "none",
                        "none (default): every sum promoted to f32 at intervals"),
             clEnumValN(::mlir::txopt::tx::FP8FastAccumulation::forward, "forward",
                        "the forward GEMMs (Transformer Engine's default)"),
             clEnumValN(::mlir::txopt::tx::FP8FastAccumulation::all, "all",
                        "forward and gradient GEMMs"))}]>,
    Option<"exclude", "exclude", "std::string", /*default=*/"\"\"",
           "Regex of ONNX node names whose GEMMs stay in higher precision "
           "(default: the first and last forward GEMM)">,
    Option<"target", "target", "std::string", /*default=*/"\"sm_90\"",
           "GPU architecture sm_XY (checked when the option is parsed); "
           "below sm_89 nothing is converted">,
    Option<"explain", "explain", "bool", /*default=*/"false",
           "Emit a remark for every GEMM left in higher precision, with the reason">,
    Option<"attention", "attention", "bool", /*default=*/"false",
           "Also make the eligible fused attentions FP8 (cuDNN's FP8 flash attention)">,
  ];
}

def CacheFP8WeightsPass : Pass<"tx-cache-fp8-weights", "::mlir::ModuleOp"> {
  let summary = "Keep the FP8 codes of updated weights as step state, cast by the step that updates them";
  let description = [{
    Runs after `tx-insert-fp8` on a delayed-scaling step. A weight's cast
    `tx.quantize(tx.cast(param), scale)` depends only on the weight and on
    its scale state, and both are known at the end of the previous step
    (the optimizer's result and the scale update's result). So the codes
    are made state: for each such cast whose amax feeds the scale state's
    `tx.fp8_scale_update`, the step gains arguments `<param>.fp8_codes`
    (the codes as they are, for the dgrad and any lhs reader) and/or
    `<param>.fp8_codes_t` (transposed `[N, K]`, for the forward GEMM's rhs,
    read through a `tx.transpose`: the FP8 GEMMs' TN form), and
    `<param>.fp8_amax`, with `tx.role` `fp8_weight_codes` /
    `fp8_weight_amax`. The forward reads them instead of casting; the scale
    update takes the kept amax; at the end of the step the updated weight
    is cast with the updated scale and its codes and amax are returned with
    `tx.next`.

    The first step's values come from `@<step>_state_init` (attribute
    `tx.state_init = @<step>`): the step's arguments in, the cache's values
    out (`tx.next`), computed from the weights and scales the arguments
    hold. Drivers run it once after initializing the state; it is also
    exact after restoring a checkpoint. Every step's results are
    bit-identical to the step without the pass.

    Not cached (with `explain=true`, a remark `not cached: fp8 weight:
    <reason>`): current scaling (no scale state), a frozen parameter (no
    next value), a cast whose amax feeds no scale update.
  }];
  let dependentDialects = ["::mlir::txopt::tx::TxDialect",
                           "::mlir::func::FuncDialect"];
  let options = [
    Option<"explain", "explain", "bool", /*default=*/"false",
           "Emit a remark for every delayed-scaling cast that is not cached, with the reason">,
  ];
}

def RematerializePass : Pass<"tx-rematerialize", "::mlir::func::FuncOp"> {
  let summary = "Recompute cheap stored values where the backward reads them, instead of keeping them";
  let description = [{
    A training step keeps every forward value its backward reads alive from
    the forward to the backward. Where such a value is stored only because a
    GEMM reads it (a GELU output cast to bf16: the MLP's second GEMM reads
    it in the forward, its weight gradient in the backward), and the
    elementwise chain that computed it can be evaluated again from values
    that are alive at the backward's read anyway, keeping it costs memory
    and recomputing it costs one cheap kernel. This pass recomputes it:
    torch.compile's min-cut partitioner makes the same trade.

    For every value V computed by a pure elementwise op (a cast,
    arithmetic with broadcasting, a unary function, a select) and read by
    at least one op that needs it in memory (anything not elementwise and
    not a view), take V's readers in program order. At the first reader R
    that is separated from the previous one by a GEMM or an attention op
    (V would be held across it), collect the chain that computes V, going
    up through elementwise ops and stopping at values that are alive at R
    anyway (read by R or by an op after it), block arguments and
    constants. When the chain exists, has at most 16 ops and reads an
    activation (a chain over step arguments alone, such as a weight's bf16
    copy, stays stored: re-reading the f32 weights costs more per byte
    saved, and frees little), clone it
    right before R and let R and every later reader read the clone. The
    earlier readers keep V, which now dies at the last of them.

    Values are recomputed by the same ops on the same inputs, so every
    result is bit-identical. The pass never runs CSE; running CSE after it
    undoes it. The GPU lowering runs it on the training step before it
    plans memory (txopt --train -o step.txa).

    ```mlir
    %g = tx.mul %h, %t : ...                       // GELU, f32
    %c = tx.cast %g : tensor<..xf32> to tensor<..xbf16>
    %y = tx.matmul %c, %w ...                      // forward GEMM
    ... the rest of the forward, the loss, the backward's first GEMMs ...
    %d = tx.matmul %ct, %dy ...                    // weight gradient reads %c
    // After: the weight gradient reads a clone computed just before it
    // from %h and %t, which the GELU's gradient keeps alive anyway.
    %g2 = tx.mul %h, %t : ...
    %c2 = tx.cast %g2 : ...
    %d = tx.matmul %c2t, %dy ...
    ```
  }];
  let dependentDialects = ["::mlir::txopt::tx::TxDialect"];
}

def UntieParametersPass : Pass<"tx-untie-parameters", "::mlir::ModuleOp"> {
  let summary = "Give every node its own copy of a weight the exporter shared by accident";
  let description = [{
    PyTorch's dynamo exporter stores identical initializers once: a freshly
    initialised GPT-2 has one LayerNorm weight (all ones) and one bias (all
    zeros) read by all 25 LayerNorms. Trained as exported, those norms would
    share one weight, unlike the PyTorch model. This pass finds each
    trainable `tx.parameter` read by several ONNX nodes (the users of its
    `tx.load_parameter`s, grouped by the node name of their location) and,
    when the exporter shared it by accident, gives every node after the
    first a parameter of its own, with the same initial value or source.

    Shared by accident means: a module's own parameter (its name is
    `<scope>.<leaf>` for the module scope of one of its readers, the child
    of the reader's NameLoc that the ONNX importer sets) read by nodes of
    several modules. Everything else stays one parameter, and the reason is
    recorded: an embedding reused as the LM head (exactly one reader is a
    `tx.gather` reading it as its table: GPT-2, nanoGPT); nodes of one module
    only; a computed constant several modules read (Llama's rotary tables,
    named after the op that made them); an export without module scopes.
    Frozen parameters (buffers such as masks) are never trained, so never
    untied. `tie` (a regex) keeps matching shared parameters tied; `untie`
    (a regex) unties matching ones whatever the reason. `untie` wins.

    The node of the module that owns the name keeps the original (else the
    first node does: with --untie, the LM head keeps `lm_head.weight` and
    the embedding gets `wte.weight`). A copy is named after the module that
    reads it, from the child of its NameLoc that the ONNX importer sets (the
    PyTorch module scope): `<scope>.<leaf>`, where `<leaf>` is the text
    after the original name's last `.` ("weight"), or the whole name if it
    has no `.`. Without a scope, or when that name is taken, the copy of
    reader k (counted from 0 in program order) is `<original>.<k>`, then
    `<original>.<k>_<j>` for j = 1, 2, ... until free.

    The module records what it did: `tx.untied_parameters` maps each untied
    parameter to the names of its copies, `tx.tied_parameters` each shared
    parameter kept tied to the reason. A second run finds nothing left to
    do and leaves both as they are.

    ```mlir
    // Before: one weight for two LayerNorms.
    %w = tx.load_parameter @ln.weight : tensor<8xf32>
    %a = tx.layer_norm %x, %w, %b ... loc("ln_1"("h.0.ln_1"))
    %c = tx.layer_norm %y, %w, %b ... loc("ln_2"("h.0.ln_2"))
    // After: the second reads its own.
    tx.parameter @h.0.ln_2.weight = dense<1.0> : tensor<8xf32>
    %w2 = tx.load_parameter @h.0.ln_2.weight : tensor<8xf32>
    %c = tx.layer_norm %y, %w2, %b2 ... loc("ln_2"("h.0.ln_2"))
    ```
  }];
  let dependentDialects = ["::mlir::txopt::tx::TxDialect"];
  let options = [
    Option<"tie", "tie", "std::string", /*default=*/"\"\"",
           "Regex: shared parameters whose name matches stay tied">,
    Option<"untie", "untie", "std::string", /*default=*/"\"\"",
           "Regex: shared parameters whose name matches are untied, "
           "embeddings reused as the LM head too">,
  ];
}

#endif // TXOPT_DIALECT_TX_TRANSFORMS_PASSES_TD
