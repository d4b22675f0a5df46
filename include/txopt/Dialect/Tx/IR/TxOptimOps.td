//===- TxOptimOps.td - tx optimizer operations --------------*- tablegen -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// Multi-tensor optimizer updates: tx.adam (created by tx-fuse-optimizer,
// imported from ai.onnx.preview.training.Adam) and tx.sgd (created by
// tx-fuse-optimizer from torch.optim.SGD exports).
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_DIALECT_TX_IR_TXOPTIMOPS_TD
#define TXOPT_DIALECT_TX_IR_TXOPTIMOPS_TD

include "txopt/Dialect/Tx/IR/TxBase.td"
include "txopt/Dialect/Tx/IR/TxAttrs.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

// A 0-d f32 tensor. Buildable, so assembly formats need not spell its type.
def Tx_F32ScalarTensor : 0DTensorOf<[F32]> {
  let builderCall = "::mlir::RankedTensorType::get({}, $_builder.getF32Type())";
}

//===----------------------------------------------------------------------===//
// AdamOp
//===----------------------------------------------------------------------===//

def Tx_AdamOp : Tx_Op<"adam", [Pure, AttrSizedOperandSegments,
    SameVariadicResultSize,
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>]> {
  let summary = "Multi-tensor Adam / AdamW update of N parameters";
  let description = [{
    One optimizer step for N parameters at once. Operand lists `params`,
    `grads`, `exp_avg` (first moment m) and `exp_avg_sq` (second moment v)
    have N entries each, and the i-th entries share one f32 tensor type;
    result lists `new_params`, `new_exp_avg`, `new_exp_avg_sq` have that type
    too. `lr` and `step` are 0-d f32 tensors shared by all N parameters, so
    a learning-rate schedule or a step counter stays an SSA value of the step
    function. Each parameter is updated independently of the others:

    ```
    g'   = mode == adam  ? g + weight_decay * p : g          // L2 decay
    m'   = beta1 * m + (1 - beta1) * g'
    v'   = beta2 * v + (1 - beta2) * g' * g'
    m^   = bias_correction ? m' / (1 - beta1^step) : m'
    v^   = bias_correction ? v' / (1 - beta2^step) : v'
    den  = epsilon_placement == outside_sqrt ? sqrt(v^) + epsilon
         : epsilon_placement == inside_sqrt  ? sqrt(v^ + epsilon)
         : /* epsilon_hat */                   sqrt(v^) + epsilon * c2
      where c2 = bias_correction ? 1 / sqrt(1 - beta2^step) : 1
    p_d  = mode == adamw ? p - lr * weight_decay * p : p     // decoupled decay
    new_params     = p_d - lr * m^ / den
    new_exp_avg    = m'
    new_exp_avg_sq = v'
    ```

    With `mode = adamw`, `epsilon_placement = outside_sqrt` and bias
    correction this is exactly `torch.optim.AdamW` (and with `mode = adam`,
    `torch.optim.Adam` with its L2 `weight_decay`); PyTorch's `step_size =
    lr / (1 - beta1^step)` and `sqrt(v') / sqrt(1 - beta2^step)` are the same
    quantities rearranged. `weight_decay = 0` makes the two modes identical.
    `epsilon_hat` is the original paper's (Kingma & Ba) and ONNX
    `ai.onnx.preview.training.Adam`'s placement, written there as
    `p - lr * sqrt(1 - beta2^step) / (1 - beta1^step) * m' / (sqrt(v') + epsilon)`.

    Numerics. The hyper-parameters are f64 attributes because PyTorch's are
    Python floats (doubles): `betas=(0.9, 0.999)` means the double 0.999,
    not its f32 value 0.99900001. Scalars are formed as PyTorch's
    `_single_tensor_adam` (torch.optim.Adam and AdamW, f32 parameters, the
    default non-capturable path) forms them: every scalar is computed in
    double from the double attributes and the f32 values of `lr` and `step`,
    and rounded to f32 once, where it meets the f32 tensors. So a multiply
    by beta uses f32(beta); `1 - beta1`, `1 - beta2`, `lr * weight_decay`,
    the bias corrections `1 - beta^step` (PyTorch's `1 - beta1 ** step`
    with `step = step_t.item()`) and `epsilon * c2` are each one f32 value
    computed in double; `epsilon` and `weight_decay` (the L2 term) are
    f32(epsilon) and f32(weight_decay). The distinction matters: `1 - b2`
    from the f32 0.99900001 is 0.00099998713, 1.3e-5 relative off
    PyTorch's f32(1 - 0.999) = 0.001, which shows up as ~1e-6 relative in
    `v'` with realistic moments. PyTorch's capturable path (a tensor step),
    and graphs that compute `beta ** step` in tensor ops, form the bias
    corrections in f32 from f32(beta) instead: for beta2 = 0.999 that is
    ~1.3e-5 relative off at small steps (t multiplications carry the
    2^-24 rounding of beta into beta^t, and `1 - beta^t` cancels), so the
    update, not `m'` or `v'`, differs by ~6e-6 of itself.

    Per element, all arithmetic is f32: the CPU reference executor evaluates
    the lines above in the order written, one rounding per operation.
    PyTorch's own per-element order differs by rounding only (a few f32
    ulps of the terms involved), not by a scalar's value: it writes
    `m' = m + (1 - beta1) * (g' - m)` (`lerp_`), decays as
    `p * f32(1 - lr * weight_decay)`, updates
    `p_d + f32(-lr / (1 - beta1^step)) * m' /
    (sqrt(v') / f32(sqrt(1 - beta2^step)) + epsilon)` (`addcdiv_`), and its
    vectorized CPU kernels may contract `a + s * b` into a fused
    multiply-add. Fused kernels may reassociate too and are checked against
    the reference executor with a tolerance, not bit for bit.

    `step` is the count *after* this step's increment (PyTorch's
    `state["step"]` when the update runs, so 1 on the first step); the op
    does not increment it. It is a float so schedules can be computed in
    the graph. It is present exactly when `bias_correction` is set (the
    default), since nothing else reads it. A step that was a constant in the
    source graph stays an operand (a `tx.constant`): keeping one form means
    one kernel signature and lets constant and counted steps share an op.

    `f32_bias_correction` forms `1 - beta^step` the way PyTorch's capturable
    (tensor-step) path and exports that take the step as an input do: in
    f32, from f32(beta), `f32(1 - f32(f32(beta)^step))`, instead of from the
    double beta. tx-fuse-optimizer sets it when the graph computes the bias
    corrections with ops, so fused and unfused graphs round alike.

    Operands are not updated in place: the memory planner aliases each result
    with its operand when the operand is dead afterwards (the usual case).

    ```mlir
    %new_params:2, %new_exp_avg:2, %new_exp_avg_sq:2 = tx.adam adamw
        params(%w, %b) grads(%gw, %gb) exp_avg(%mw, %mb) exp_avg_sq(%vw, %vb)
        lr(%lr) step(%t) betas(0.9, 0.999) eps(1.0e-08, outside_sqrt)
        weight_decay(0.01)
        : tensor<64x32xf32>, tensor<32xf32>
    ```
  }];
  let arguments = (ins Variadic<Tx_FloatTensor>:$params,
                       Variadic<Tx_FloatTensor>:$grads,
                       Variadic<Tx_FloatTensor>:$exp_avg,
                       Variadic<Tx_FloatTensor>:$exp_avg_sq,
                       Tx_F32ScalarTensor:$lr,
                       Optional<Tx_F32ScalarTensor>:$step,
                       Tx_AdamModeAttr:$mode,
                       F64Attr:$beta1,
                       F64Attr:$beta2,
                       F64Attr:$epsilon,
                       Tx_EpsilonPlacementAttr:$epsilon_placement,
                       F64Attr:$weight_decay,
                       DefaultValuedAttr<BoolAttr, "true">:$bias_correction,
                       UnitAttr:$f32_bias_correction);
  let results = (outs Variadic<Tx_FloatTensor>:$new_params,
                      Variadic<Tx_FloatTensor>:$new_exp_avg,
                      Variadic<Tx_FloatTensor>:$new_exp_avg_sq);
  // One type list for all seven per-parameter lists: the verifier requires
  // them to agree, so spelling each out would only add noise. lr and step
  // are always tensor<f32>, hence no type at all. The enum attributes print
  // their own leading space, hence the empty literals before them. The f64
  // hyper-parameters print as the shortest decimal that reads back to them
  // (`custom<Hyper>`): the value the user wrote, 0.999, where the default
  // float printer writes 0.99899999999999999.
  let assemblyFormat = [{
    `` $mode `params` `(` $params `)` `grads` `(` $grads `)`
    `exp_avg` `(` $exp_avg `)` `exp_avg_sq` `(` $exp_avg_sq `)`
    `lr` `(` $lr `)` (`step` `(` $step^ `)`)?
    `betas` `(` custom<Hyper>($beta1) `,` custom<Hyper>($beta2) `)`
    `eps` `(` custom<Hyper>($epsilon) `,` `` $epsilon_placement `)`
    `weight_decay` `(` custom<Hyper>($weight_decay) `)` attr-dict
    `:` custom<PerParamTypes>(type($params), type($grads), type($exp_avg),
        type($exp_avg_sq), type($new_params), type($new_exp_avg),
        type($new_exp_avg_sq))
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Number of parameters this op updates (N).
    unsigned getNumParams() { return getParams().size(); }

    // The `custom<PerParamTypes>` directive. Static members rather than free
    // functions so the generated parser and printer (compiled in TxOps.cpp)
    // find them by class-scope lookup; defined in TxOptimOps.cpp.
    static ::mlir::ParseResult parsePerParamTypes(::mlir::OpAsmParser &parser,
        ::llvm::SmallVectorImpl<::mlir::Type> &params,
        ::llvm::SmallVectorImpl<::mlir::Type> &grads,
        ::llvm::SmallVectorImpl<::mlir::Type> &expAvg,
        ::llvm::SmallVectorImpl<::mlir::Type> &expAvgSq,
        ::llvm::SmallVectorImpl<::mlir::Type> &newParams,
        ::llvm::SmallVectorImpl<::mlir::Type> &newExpAvg,
        ::llvm::SmallVectorImpl<::mlir::Type> &newExpAvgSq);
    static void printPerParamTypes(::mlir::OpAsmPrinter &printer,
        ::mlir::Operation *op, ::mlir::TypeRange params,
        ::mlir::TypeRange grads, ::mlir::TypeRange expAvg,
        ::mlir::TypeRange expAvgSq, ::mlir::TypeRange newParams,
        ::mlir::TypeRange newExpAvg, ::mlir::TypeRange newExpAvgSq);

    // The `custom<Hyper>` directive (an f64 hyper-parameter).
    static ::mlir::ParseResult parseHyper(::mlir::OpAsmParser &parser,
                                          ::mlir::FloatAttr &value);
    static void printHyper(::mlir::OpAsmPrinter &printer,
                           ::mlir::Operation *op, ::mlir::FloatAttr value);
  }];
}

//===----------------------------------------------------------------------===//
// SGDOp
//===----------------------------------------------------------------------===//

def Tx_SGDOp : Tx_Op<"sgd", [Pure, SameVariadicOperandSize,
    SameVariadicResultSize,
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>]> {
  let summary = "Multi-tensor SGD with momentum (torch.optim.SGD) over N parameters";
  let description = [{
    One SGD step for N parameters: `params`, `grads` and `momentum_buffer`
    have N entries each, the i-th entries and the i-th results share one f32
    tensor type, and the 0-d f32 `lr` is shared. Per parameter:

    ```
    g'  = g + weight_decay * p                            // L2 decay
    b'  = momentum == 0 ? b : momentum * b + (1 - dampening) * g'
    d   = momentum == 0 ? g' : nesterov ? g' + momentum * b' : b'
    new_params          = p - lr * d
    new_momentum_buffer = b'
    ```

    This is `torch.optim.SGD` from its second step on. PyTorch's first step
    sets `b' = g'` (no dampening); with `dampening = 0` that equals the
    formula for `b = 0`, otherwise the caller passes the first step's
    buffer explicitly.

    Numerics: as tx.adam's. The hyper-parameters are f64 (PyTorch's Python
    floats); `momentum`, `weight_decay` and `1 - dampening` are each
    computed in double and rounded to f32 once, as torch.optim.SGD's
    `alpha` / `mul_` scalars are. Per element the arithmetic is f32,
    evaluated as written by the reference executor, one rounding per
    operation (PyTorch's vectorized `add_(x, alpha=s)` may contract into a
    fused multiply-add, a difference of an ulp).

    ```mlir
    %new_params:2, %new_momentum_buffer:2 = tx.sgd params(%w, %b)
        grads(%gw, %gb) momentum_buffer(%bw, %bb) lr(%lr)
        momentum(0.9) dampening(0.0) weight_decay(0.0) nesterov
        : tensor<64x32xf32>, tensor<32xf32>
    ```
  }];
  let arguments = (ins Variadic<Tx_FloatTensor>:$params,
                       Variadic<Tx_FloatTensor>:$grads,
                       Variadic<Tx_FloatTensor>:$momentum_buffer,
                       Tx_F32ScalarTensor:$lr,
                       F64Attr:$momentum,
                       F64Attr:$dampening,
                       F64Attr:$weight_decay,
                       UnitAttr:$nesterov);
  let results = (outs Variadic<Tx_FloatTensor>:$new_params,
                      Variadic<Tx_FloatTensor>:$new_momentum_buffer);
  let assemblyFormat = [{
    `params` `(` $params `)` `grads` `(` $grads `)`
    `momentum_buffer` `(` $momentum_buffer `)` `lr` `(` $lr `)`
    `momentum` `(` custom<Hyper>($momentum) `)`
    `dampening` `(` custom<Hyper>($dampening) `)`
    `weight_decay` `(` custom<Hyper>($weight_decay) `)`
    (`nesterov` $nesterov^)? attr-dict
    `:` custom<PerParamTypes>(type($params), type($grads),
        type($momentum_buffer), type($new_params), type($new_momentum_buffer))
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Number of parameters this op updates (N).
    unsigned getNumParams() { return getParams().size(); }

    // The `custom<PerParamTypes>` directive; see tx.adam.
    static ::mlir::ParseResult parsePerParamTypes(::mlir::OpAsmParser &parser,
        ::llvm::SmallVectorImpl<::mlir::Type> &params,
        ::llvm::SmallVectorImpl<::mlir::Type> &grads,
        ::llvm::SmallVectorImpl<::mlir::Type> &momentumBuffer,
        ::llvm::SmallVectorImpl<::mlir::Type> &newParams,
        ::llvm::SmallVectorImpl<::mlir::Type> &newMomentumBuffer);
    static void printPerParamTypes(::mlir::OpAsmPrinter &printer,
        ::mlir::Operation *op, ::mlir::TypeRange params,
        ::mlir::TypeRange grads, ::mlir::TypeRange momentumBuffer,
        ::mlir::TypeRange newParams, ::mlir::TypeRange newMomentumBuffer);

    // The `custom<Hyper>` directive; see tx.adam.
    static ::mlir::ParseResult parseHyper(::mlir::OpAsmParser &parser,
                                          ::mlir::FloatAttr &value);
    static void printHyper(::mlir::OpAsmPrinter &printer,
                           ::mlir::Operation *op, ::mlir::FloatAttr value);
  }];
}

#endif // TXOPT_DIALECT_TX_IR_TXOPTIMOPS_TD
