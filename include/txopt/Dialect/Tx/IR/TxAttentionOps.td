//===- TxAttentionOps.td - fused attention ops --------------*- tablegen -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// Fused scaled-dot-product attention and its gradient, created by
// tx-fuse-attention (forward) and the autodiff pass (backward).
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_DIALECT_TX_IR_TXATTENTIONOPS_TD
#define TXOPT_DIALECT_TX_IR_TXATTENTIONOPS_TD

include "txopt/Dialect/Tx/IR/TxBase.td"
include "txopt/Dialect/Tx/IR/TxInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

// q, k, v, the output and the gradients. f64 is left out like for the norms:
// the contract is f32 accumulation (the GPU kernels' own), which would
// silently lose precision on f64 inputs.
def Tx_AttentionTensor : StaticShapeTensorOf<[F16, BF16, F32]>;

// The additive mask: any of those types, broadcastable to [B, H, Tq, Tk].
def Tx_AttentionMaskTensor : StaticShapeTensorOf<[F16, BF16, F32]>;

// The row log-sum-exp saved for the backward: always f32, [B, H, Tq].
def Tx_AttentionStatsTensor : StaticShapeTensorOf<[F32]>;

//===----------------------------------------------------------------------===//
// AttentionOp
//===----------------------------------------------------------------------===//

def Tx_AttentionOp : Tx_Op<"attention", [Tx_Differentiable, Pure, InferTypeOpAdaptor,
    AttrSizedOperandSegments]> {
  let summary = "Fused scaled-dot-product attention (grouped-query, causal, sliding window)";
  let description = [{
    Multi-head attention over the layout `[batch, heads, tokens, head dim]`:
    `q` is `[B, H, Tq, D]`, `k` is `[B, Hkv, Tk, D]`, `v` is `[B, Hkv, Tk, Dv]`
    with `H` a multiple of `Hkv` (grouped-query attention: `n = H / Hkv`
    consecutive query heads share one key/value head, as Hugging Face's
    `repeat_kv` and `enable_gqa=True` have it; `Hkv = H` is plain multi-head
    attention, `Hkv = 1` multi-query attention). `mask`, when present, is an
    additive mask broadcastable (numpy rules) to `[B, H, Tq, Tk]`.

    ```
    visible(i, j) = !causal || (j <= i && (window absent || j > i - window))
    S[b,h,i,j]    = scale * sum_d f32(q[b,h,i,d]) * f32(k[b,h/n,j,d])
                    + f32(mask[b,h,i,j])                    // 0 when absent
                    if visible(i, j), else -inf
    lse[b,h,i]    = log(sum_j exp(S[b,h,i,j]))              // -inf: no key visible
    P[b,h,i,j]    = exp(S[b,h,i,j] - lse[b,h,i])            // 0 when lse = -inf
    result[b,h,i,e] = T(sum_j P[b,h,i,j] * f32(v[b,h/n,j,e]))
    ```

    The causal mask is aligned top-left (key `j` is visible from query `i`
    iff `j <= i`), as `F.scaled_dot_product_attention(is_causal=True)`;
    `window` (which needs `causal`) keeps the `window` most recent keys
    including the diagonal (Mistral's sliding window). Every sum is
    accumulated in at least f32 (the reference executor: double) and
    `result` is rounded once into the element type of `q`; `S` and `P` are
    never materialized. With bf16/f16 operands the probabilities enter the
    product with `v` rounded to that type, as flash-attention kernels
    (cuDNN's SDPA, which the GPU runs) feed them to tensor cores: the
    reference uses `round(exp(S - max_j S)) / sum_j exp(S - max_j S)`; f32
    attention is not rounded. A row whose every key is masked (`-inf` everywhere)
    has `lse = -inf` and a zero `result` row, where the unfused softmax gives
    NaN (Hugging Face exports write `Where(IsNaN(p), 0, p)` for exactly that).

    `dropout(%key, ratio, seed)`, when present, is a training dropout of the
    probabilities before the product with `v`, with exactly the mask that
    `tx.dropout %P, %key ratio(ratio) seed(seed)` draws over the
    `[B, H, Tq, Tk]` tensor `P` (the row-major linear index
    `((b * H + h) * Tq + i) * Tk + j`; TxOps.td has the generator): the
    fused op trains as the unfused graph it replaces, mask for mask.

    ```
    Pd[b,h,i,j]   = keep(seed, key, index(b,h,i,j)) ? P[b,h,i,j] / (1 - ratio) : 0
    result[b,h,i,e] = T(sum_j Pd[b,h,i,j] * f32(v[b,h/n,j,e]))
    ```

    `1 / (1 - ratio)` is formed in double from the f32 ratio, as tx.dropout
    forms it; the product is not rounded on its own (with bf16/f16
    operands, `P` is rounded as above before it is scaled). On the GPU,
    cuDNN's SDPA draws the mask (Philox keyed by `key` and `seed`), a
    different one from the executor's with the same rate and the same
    mask on the forward and the backward (docs/GPU.md); it takes no sliding
    window together with dropout, which tx-fuse-attention with
    `cudnn-limits` leaves unfused, as a near miss.

    ```mlir
    %o, %lse = tx.attention %q, %k, %v scale(0.125) causal
        : tensor<2x8x128x64xbf16>, tensor<2x2x128x64xbf16>, tensor<2x2x128x64xbf16>
    // %o : tensor<2x8x128x64xbf16>, %lse : tensor<2x8x128xf32>
    %o2, %lse2 = tx.attention %q, %k, %v mask(%m) scale(0.125)
        : tensor<2x8x128x64xbf16>, tensor<2x2x128x64xbf16>, tensor<2x2x128x64xbf16>,
          tensor<2x1x1x128xf32>
    ```
  }];
  let arguments = (ins Tx_AttentionTensor:$q,
                       Tx_AttentionTensor:$k,
                       Tx_AttentionTensor:$v,
                       Optional<Tx_AttentionMaskTensor>:$mask,
                       Optional<Tx_I64ScalarTensor>:$dropout_key,
                       F64Attr:$scale,
                       UnitAttr:$causal,
                       OptionalAttr<I64Attr>:$window,
                       OptionalAttr<F32Attr>:$dropout_ratio,
                       DefaultValuedAttr<I64Attr, "0">:$dropout_seed);
  let results = (outs Tx_AttentionTensor:$result,
                      Tx_AttentionStatsTensor:$lse);
  // The key is always tensor<i64>, hence not spelled among the types.
  let assemblyFormat = [{
    $q `,` $k `,` $v (`mask` `(` $mask^ `)`)? `scale` `(` $scale `)`
    (`causal` $causal^)? (`window` `(` $window^ `)`)?
    (`dropout` `(` $dropout_key^ `,` $dropout_ratio `,` $dropout_seed `)`)? attr-dict
    `:` type($q) `,` type($k) `,` type($v) (`,` type($mask)^)?
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// AttentionGradOp
//===----------------------------------------------------------------------===//

def Tx_AttentionGradOp : Tx_Op<"attention_grad", [Pure, InferTypeOpAdaptor,
    AllTypesMatch<["grad", "out"]>, AttrSizedOperandSegments]> {
  let summary = "Gradients of tx.attention with respect to q, k and v";
  let description = [{
    Given the upstream gradient `grad` (dO) of the `result` (`out`) of a
    `tx.attention` with the same operands and attributes, and its saved
    `lse`; `S`, `P`, `n`, `visible` as in `tx.attention` (`P` recomputed
    from `lse`):

    ```
    dP[b,h,i,j]  = sum_e f32(dO[b,h,i,e]) * f32(v[b,h/n,j,e])
    Dsum[b,h,i]  = sum_e f32(dO[b,h,i,e]) * f32(out[b,h,i,e])
    dS[b,h,i,j]  = P[b,h,i,j] * (dP[b,h,i,j] - Dsum[b,h,i])
    q_grad[b,h,i,d]  = T(scale * sum_j dS[b,h,i,j] * f32(k[b,h/n,j,d]))
    k_grad[b,g,j,d]  = T(scale * sum_{h: h/n = g} sum_i dS[b,h,i,j] * f32(q[b,h,i,d]))
    v_grad[b,g,j,e]  = T(sum_{h: h/n = g} sum_i P[b,h,i,j] * f32(dO[b,h,i,e]))
    ```

    Every sum is accumulated in at least f32; the gradients have the types
    of `q`, `k` and `v`. With bf16/f16 operands `P` (in the `v_grad` sum)
    and `P * (dP - Dsum)` (in the `q_grad` and `k_grad` sums) are rounded
    to that type first, as flash-attention kernels do. There is no gradient for `mask`: the gradient rule
    refuses a mask that needs one (a learned bias).

    With `dropout(%key, ratio, seed)` (the forward's), the same mask: `Pd`
    (as in tx.attention) takes `P`'s place in the `v_grad` sum, and `dP` is
    the gradient through the dropout,
    `keep(index) ? (sum_e dO * v) / (1 - ratio) : 0`; `Dsum` is unchanged
    (`sum_j P dP = sum_j Pd (dO . v_j) = dO . out`).

    ```mlir
    %dq, %dk, %dv = tx.attention_grad %do, %q, %k, %v, %o, %lse scale(0.125) causal
        : tensor<2x8x128x64xbf16>, tensor<2x8x128x64xbf16>, tensor<2x2x128x64xbf16>,
          tensor<2x2x128x64xbf16>, tensor<2x8x128xf32>
    ```
  }];
  let arguments = (ins Tx_AttentionTensor:$grad,
                       Tx_AttentionTensor:$q,
                       Tx_AttentionTensor:$k,
                       Tx_AttentionTensor:$v,
                       Optional<Tx_AttentionMaskTensor>:$mask,
                       Tx_AttentionTensor:$out,
                       Tx_AttentionStatsTensor:$lse,
                       Optional<Tx_I64ScalarTensor>:$dropout_key,
                       F64Attr:$scale,
                       UnitAttr:$causal,
                       OptionalAttr<I64Attr>:$window,
                       OptionalAttr<F32Attr>:$dropout_ratio,
                       DefaultValuedAttr<I64Attr, "0">:$dropout_seed);
  let results = (outs Tx_AttentionTensor:$q_grad,
                      Tx_AttentionTensor:$k_grad,
                      Tx_AttentionTensor:$v_grad);
  // `out` takes the type of `grad` (AllTypesMatch).
  let assemblyFormat = [{
    $grad `,` $q `,` $k `,` $v `,` (`mask` `(` $mask^ `)` `,`)? $out `,` $lse
    `scale` `(` $scale `)` (`causal` $causal^)? (`window` `(` $window^ `)`)?
    (`dropout` `(` $dropout_key^ `,` $dropout_ratio `,` $dropout_seed `)`)?
    attr-dict `:` type($grad) `,` type($q) `,` type($k) `,` type($v) `,`
    type($lse) (`,` type($mask)^)?
  }];
  let hasVerifier = 1;
}

#endif // TXOPT_DIALECT_TX_IR_TXATTENTIONOPS_TD
