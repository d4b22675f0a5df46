//===- TxPrecisionOps.td - tx FP8 scaling operations --------*- tablegen -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// FP8 with Transformer Engine semantics: amax, scaled saturating casts, the
// delayed and current scale updates, and the scaled FP8 GEMM. The numerics
// and the scaling state are described in docs/Precision.md.
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_DIALECT_TX_IR_TXPRECISIONOPS_TD
#define TXOPT_DIALECT_TX_IR_TXPRECISIONOPS_TD

include "txopt/Dialect/Tx/IR/TxBase.td"
include "txopt/Dialect/Tx/IR/TxAttrs.td"
include "txopt/Dialect/Tx/IR/TxOptimOps.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

// The two OCP FP8 formats Hopper's tensor cores and cuBLASLt take.
def Tx_FP8Type : AnyTypeOf<[F8E4M3FN, F8E5M2]>;
def Tx_FP8Tensor : StaticShapeTensorOf<[F8E4M3FN, F8E5M2]>;
// What FP8 tensors are cast from and back to.
def Tx_HighPrecisionTensor : StaticShapeTensorOf<[F16, BF16, F32]>;
// Delayed-scaling state: one amax history ([L]) or one per packed site
// ([N, L]); and the matching scales or amaxes (0-d, or [N]).
def Tx_F32HistoryTensor : RankedTensorOf<[F32], [HasAnyRankOfPred<[1, 2]>, HasStaticShapePred],
                                         "statically shaped 1D or 2D tensor">;
def Tx_F32EntriesTensor : RankedTensorOf<[F32], [HasAnyRankOfPred<[0, 1]>, HasStaticShapePred],
                                         "0D or statically shaped 1D tensor">;

//===----------------------------------------------------------------------===//
// AmaxOp
//===----------------------------------------------------------------------===//

def Tx_AmaxOp : Tx_Op<"amax", [Pure]> {
  let summary = "Largest absolute value of a tensor (the FP8 scaling statistic)";
  let description = [{
    `result = max_i |input[i]|` over all elements, as a 0-d f32 tensor. It is
    exact: |x| of an f32, bf16, f16 or FP8 element is an f32 value and a max
    does not round (an f64 input rounds once, to f32).

    A NaN element makes the result NaN (`fmaxf` would drop it): the scale
    updates keep their previous scale on a NaN amax, and a diverged step
    stays visible in the amax history. An infinity gives inf; an empty
    tensor gives 0.

    Lowering fuses it into the kernel that produces or casts `input` (TE's
    cast kernels and cuBLASLt's amax-of-D epilogue compute it on the way).

    ```mlir
    %amax = tx.amax %x : tensor<16x64xbf16>
    ```
  }];
  let arguments = (ins Tx_FloatTensor:$input);
  let results = (outs Tx_F32ScalarTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

//===----------------------------------------------------------------------===//
// QuantizeOp / DequantizeOp
//===----------------------------------------------------------------------===//

def Tx_QuantizeOp : Tx_Op<"quantize", [Pure, AllShapesMatch<["input", "result"]>]> {
  let summary = "Scaled, saturating cast to FP8";
  let description = [{
    ```
    result[i] = sat_fp8(f32(f32(input[i]) * scale))
    ```

    `input` (f32, bf16 or f16) is widened to f32 and multiplied by the 0-d
    f32 `scale`, rounding once to f32; the product is then rounded to the
    result's FP8 type, to nearest even, saturating: anything beyond the
    largest finite value (448 for `f8E4M3FN`, 57344 for `f8E5M2`), +-inf
    included, becomes +-that value, and NaN stays NaN. These are TE's cast
    kernels (`fp8(float(x) * scale)` through `__NV_SATFINITE`), both
    roundings included, so the reference executor matches the GPU bit for
    bit.

    `scale` is an SSA value so delayed scaling can carry it from step to
    step (`tx.fp8_scale_update`); the amax of `input` is a separate
    `tx.amax`, fused into the same kernel when lowered.

    ```mlir
    %q = tx.quantize %x, %scale : tensor<16x64xbf16> to tensor<16x64xf8E4M3FN>
    ```
  }];
  let arguments = (ins Tx_HighPrecisionTensor:$input, Tx_F32ScalarTensor:$scale);
  let results = (outs Tx_FP8Tensor:$result);
  let assemblyFormat = [{
    $input `,` $scale attr-dict `:` type($input) `to` type($result)
  }];
}

def Tx_DequantizeOp : Tx_Op<"dequantize", [Pure, AllShapesMatch<["input", "result"]>]> {
  let summary = "Cast from FP8 back to a wider float, undoing the scale";
  let description = [{
    ```
    result[i] = round_to(type(result), f32(f32(input[i]) * scale_inv))
    ```

    The FP8 value is exact in f32; the product with the 0-d f32
    `scale_inv` rounds once to f32 and then to the result type (f32, bf16
    or f16), as TE's dequantize kernel does. `scale_inv` is the
    `new_scale_inv` of the scale that quantized `input` (`1 / scale`, in
    f32), not `scale` itself: the GEMM epilogue multiplies by it, so it is
    state next to the scale rather than a division in every consumer.

    ```mlir
    %x = tx.dequantize %q, %scale_inv : tensor<16x64xf8E4M3FN> to tensor<16x64xbf16>
    ```
  }];
  let arguments = (ins Tx_FP8Tensor:$input, Tx_F32ScalarTensor:$scale_inv);
  let results = (outs Tx_HighPrecisionTensor:$result);
  let assemblyFormat = [{
    $input `,` $scale_inv attr-dict `:` type($input) `to` type($result)
  }];
}

//===----------------------------------------------------------------------===//
// FP8ScaleUpdateOp
//===----------------------------------------------------------------------===//

def Tx_FP8ScaleUpdateOp : Tx_Op<"fp8_scale_update", [Pure,
    AllTypesMatch<["amax_history", "new_amax_history"]>,
    TypesMatchWith<"scale has one entry per amax history row", "amax_history",
                   "scale", "::mlir::txopt::tx::fp8EntriesType($_self)">,
    TypesMatchWith<"amax has one entry per amax history row", "amax_history",
                   "amax", "::mlir::txopt::tx::fp8EntriesType($_self)">,
    TypesMatchWith<"new_scale has one entry per amax history row", "amax_history",
                   "new_scale", "::mlir::txopt::tx::fp8EntriesType($_self)">,
    TypesMatchWith<"new_scale_inv has one entry per amax history row", "amax_history",
                   "new_scale_inv", "::mlir::txopt::tx::fp8EntriesType($_self)">,
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>]> {
  let summary = "Delayed FP8 scaling: roll the amax histories and derive the next scales";
  let description = [{
    The end-of-step update of the FP8 scaling state under a `delayed`
    recipe, for one cast site or for many packed together. The state
    (`amax_history`, `scale`) and this step's `amax` come in, the state for
    the next step comes out.

    Packed (what `tx-insert-fp8` emits): `amax_history` is `[N, L]`, one row
    per cast site, and `scale`, `amax` and the results' scales are `[N]`.
    One op then updates every site of a step that casts to `fp8_type`; a
    site reads its entry with `tx.fp8_site`. Single: `amax_history` is `[L]`
    and the scales and the amax are 0-d. `L` is the recipe's `history`.

    Each row (site) `r`, independently:

    ```
    new_amax_history[r] = [amax[r], amax_history[r][0], ..., amax_history[r][L-2]]
    a     = recipe.amax == max ? max(0, maxNum_i new_amax_history[r][i]) : amax[r]
    s     = (a is finite and a > 0) ? f32(f32(fp8_max * 2^-margin) / a) : scale[r]
    new_scale[r]     = s is +-inf ? 3.40282347e+38 (f32 max) : s
    new_scale_inv[r] = f32(1 / new_scale[r])
    ```

    The history is newest first: the new amax enters slot 0, every entry
    moves one slot on, and the oldest (`amax_history[L-1]`) drops.
    `maxNum` skips NaN entries. `fp8_max` is the largest value of
    `fp8_type`, the type these scales cast to: 448 for `f8E4M3FN`, 57344 for
    `f8E5M2` (under the hybrid format the forward's E4M3 sites and the
    gradients' E5M2 sites are two packed states, two ops).

    This is TE's `amax_and_scale_update` (common/recipe/delayed_scaling.cu),
    which also updates all of a recipe's tensors in one call. TE keeps the
    running step's amax in slot 0, where the cast kernels write it, and
    rolls the other way afterwards; both windows hold the newest amax and
    the L - 1 before it, so the scales agree. As in TE:
    * the window max skips NaN (TE's `fmaxf`): a NaN amax is recorded but
      does not freeze the scale for L steps; under `most_recent` a NaN amax
      keeps the previous scale;
    * an amax of 0 (all-zero tensors), inf or NaN keeps the previous scale,
      since no scale maps it to `fp8_max`; an inf stays in the window, and
      so keeps the scale, for L steps;
    * an amax so small that the scale overflows f32 gets the f32 maximum;
    * `new_scale_inv` is recomputed even when the scale is kept.
    One deliberate difference: TE's multi-tensor variant skips the roll when
    the new amax is exactly 0, its marker for a tensor unused in the step.
    Here an unused tensor has no cast site, and a zero amax is an
    observation like any other.

    The scales used by this step's casts are the operand `scale` (computed a
    step earlier: that is what makes the scaling delayed). The insertion
    pass starts the state at zeros and `scale = 1`.

    ```mlir
    // Two sites, a history of 16.
    %new_amax_history, %new_scale, %new_scale_inv = tx.fp8_scale_update
        %history, %scale, %amax : tensor<2x16xf32>
        for f8E4M3FN #tx.fp8_recipe<delayed, format = hybrid, history = 16, amax = max, margin = 0>
    ```
  }];
  let arguments = (ins Tx_F32HistoryTensor:$amax_history,
                       Tx_F32EntriesTensor:$scale,
                       Tx_F32EntriesTensor:$amax,
                       Tx_FP8RecipeAttr:$recipe,
                       TypeAttrOf<Tx_FP8Type>:$fp8_type);
  let results = (outs Tx_F32HistoryTensor:$new_amax_history,
                      Tx_F32EntriesTensor:$new_scale,
                      Tx_F32EntriesTensor:$new_scale_inv);
  // The recipe prints in full (`#tx.fp8_recipe<...>`), as it does everywhere
  // else, so it can be grepped and pasted between ops and pass options. It
  // comes last: right after an operand `#tx` would lex as a result number
  // (`%x#1`), and a `:` after it would read as the attribute's type. The
  // scales' and the amax's types follow from the history's.
  let assemblyFormat = [{
    $amax_history `,` $scale `,` $amax `:` type($amax_history)
    `for` $fp8_type qualified($recipe) attr-dict
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// FP8SiteOp
//===----------------------------------------------------------------------===//

def Tx_FP8SiteOp : Tx_Op<"fp8_site", [Pure]> {
  let summary = "One cast site's entry of packed FP8 scaling state";
  let description = [{
    `result = state[index]`, as a 0-d f32 tensor: the scale (or scale
    inverse) of one FP8 cast site, read out of the packed `[N]` state that
    `tx.fp8_scale_update` keeps for all sites of a step. The state argument
    names its sites in order (`tx.fp8_sites`), so `index` says which tensor
    this is.

    It moves no data: a kernel that reads the scale loads the entry
    itself, and a GEMM takes its address as the scale pointer.

    ```mlir
    %scale = tx.fp8_site %scales[3] : tensor<8xf32>
    ```
  }];
  let arguments = (ins Tx_1DTensorOf<[F32]>:$state, I64Attr:$index);
  let results = (outs Tx_F32ScalarTensor:$result);
  let assemblyFormat = "$state `[` $index `]` attr-dict `:` type($state)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// FP8CurrentScaleOp
//===----------------------------------------------------------------------===//

def Tx_FP8CurrentScaleOp : Tx_Op<"fp8_current_scale", [Pure,
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>]> {
  let summary = "Current FP8 scaling: the scale for the amax of the tensor being cast";
  let description = [{
    Under a `current` recipe each FP8 cast is scaled by the amax of the very
    tensor it casts, computed in the same step (`tx.amax`, then this op,
    then `tx.quantize`); no state is carried between steps.

    ```
    s         = (amax is finite and amax > 0) ? f32(fp8_max / amax) : 1
    scale     = s is +-inf ? 3.40282347e+38 (f32 max) : s
    scale_inv = f32(1 / scale)
    ```

    `fp8_max` is 448 for `f8E4M3FN` and 57344 for `f8E5M2` (`fp8_type`).
    This is TE's `compute_scale_from_amax` (common/recipe/recipe_common.cuh)
    with `Float8CurrentScaling`'s defaults: amax epsilon 0, no power-of-two
    rounding. TE substitutes the input type's largest value for an infinite
    scale; that differs from the f32 maximum only for bf16 inputs whose
    amax is below about 1e-36.

    ```mlir
    %scale, %scale_inv = tx.fp8_current_scale %amax
        for f8E5M2 #tx.fp8_recipe<current, format = hybrid>
    ```
  }];
  let arguments = (ins Tx_F32ScalarTensor:$amax,
                       Tx_FP8RecipeAttr:$recipe,
                       TypeAttrOf<Tx_FP8Type>:$fp8_type);
  let results = (outs Tx_F32ScalarTensor:$scale,
                      Tx_F32ScalarTensor:$scale_inv);
  let assemblyFormat = [{
    $amax `for` $fp8_type qualified($recipe) attr-dict
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// FP8MatmulOp
//===----------------------------------------------------------------------===//

def Tx_FP8MatmulOp : Tx_Op<"fp8_matmul", [Pure]> {
  let summary = "FP8 GEMM with per-tensor scale inverses (cuBLASLt's FP8 matmul)";
  let description = [{
    ```
    result[b..., i, j] = round_to(type(result),
        (sum_k lhs[b..., i, k] * rhs[b..., k, j]) * lhs_scale_inv * rhs_scale_inv)
    ```

    `lhs` is `[..., M, K]` and `rhs` `[..., K, N]`, both FP8 of rank at least
    2, with leading (batch) dims that broadcast as in `tx.matmul`; the
    result is `[..., M, N]` in f32, bf16 or f16. The 0-d f32 scale inverses
    are the `new_scale_inv`s that came with the operands' scales.

    One op rather than `tx.dequantize` + `tx.matmul`, because that pair
    would round every dequantized element to the GEMM's input type before
    multiplying, which cuBLASLt never does: it multiplies the FP8 values
    exactly, accumulates in f32 and applies the scale inverses to the sum.
    This op states those numerics and maps one to one onto a cuBLASLt call
    with A/B scale pointers.

    Numerics: every FP8 product is exact; the reference executor sums in
    f64, multiplies by both scale inverses and rounds once to the result
    type. cuBLASLt accumulates in f32 (with fewer bits on Hopper's FP8 path
    unless split accumulation is on), so GPU results match with a
    tolerance, not bit for bit.

    At most one operand may be `f8E5M2`: cuBLASLt has no E5M2 x E5M2 GEMM,
    and the hybrid format never needs one (gradients meet activations or
    weights, which are E4M3).

    `fast_accumulation` lets Hopper's FP8 tensor cores keep the running sum
    in their own reduced-precision accumulator instead of promoting it to
    full f32 at intervals (cuBLASLt's `CUBLASLT_MATMUL_DESC_FAST_ACCUM`):
    faster, less exact over long K. `tx-insert-fp8` sets it where its
    `fast-accumulation` option says (by default nowhere; `forward` is
    Transformer Engine's default). The reference executor sums in f64
    either way.

    ```mlir
    %y = tx.fp8_matmul %x, %w scale_inv(%x_scale_inv, %w_scale_inv)
        : tensor<16x64xf8E4M3FN>, tensor<64x32xf8E4M3FN> -> tensor<16x32xbf16>
    ```
  }];
  let arguments = (ins Tx_FP8Tensor:$lhs, Tx_FP8Tensor:$rhs,
                       Tx_F32ScalarTensor:$lhs_scale_inv,
                       Tx_F32ScalarTensor:$rhs_scale_inv,
                       UnitAttr:$fast_accumulation);
  let results = (outs Tx_HighPrecisionTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs `scale_inv` `(` $lhs_scale_inv `,` $rhs_scale_inv `)`
    attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// FP8AttentionOp, FP8AttentionGradOp
//===----------------------------------------------------------------------===//

def Tx_FP8AttentionOp : Tx_Op<"fp8_attention", [Pure, InferTypeOpAdaptor]> {
  let summary = "Fused attention over FP8 q, k, v with an FP8 output (cuDNN's sdpa_fp8)";
  let description = [{
    `tx.attention` (causal or not, grouped-query heads; no mask, window or
    dropout) over FP8 operands with per-tensor scaling, as cuDNN's FP8
    flash attention computes it on Hopper (`sdpa_fp8`, cudnn-frontend's
    graph). With `d(x)` the operand's scale inverse, `fp8_T(x)` the
    saturating round-to-nearest-even cast of `f32(x)` to FP8 type `T`, and
    `visible` as in `tx.attention`:

    ```
    S[b,h,i,j]   = (sum_d q[b,h,i,d] * k[b,h/n,j,d]) * scale * d(q) * d(k)   (visible; else -inf)
    lse[b,h,i]   = log(sum_j exp(S[b,h,i,j]))
    P[b,h,i,j]   = exp(S[b,h,i,j] - lse[b,h,i])
    s_amax       = max |P|
    P8[b,h,i,j]  = fp8_{type(q)}(P * s_scale)
    O[b,h,i,e]   = (sum_j P8[b,h,i,j] * v[b,h/n,j,e]) * d(s) * d(v)
    o_amax       = max |O|
    result       = fp8_{type(q)}(O * o_scale)
    ```

    The quantized probabilities take q's FP8 type and have a scaling state
    of their own (`s_scale`, `s_scale_inv`): they are the A operand of the
    second product on FP8 tensor cores. The output is FP8 too (on Hopper
    cuDNN writes no other type): the scaled, saturated `O` in q's type,
    read by the next GEMM as its FP8 operand or dequantized. `s_amax` and
    `o_amax` are of the real values (before the scale), as a `tx.amax` of
    them would be: they feed their sites' scale updates like any amax.
    `lse` is the f32 row log-sum-exp the backward reads.

    Numerics: the reference executor sums in f64 and rounds where the
    formula says. cuDNN's kernel quantizes `exp(S - running max)` over
    blocks of keys and divides by the row sum at the end rather than
    quantizing the normalized `P`, and accumulates on FP8 tensor cores:
    GPU results match within a tolerance (NVIDIA's own tests accept the
    output within 0.08 absolute / 0.2 relative in real units), not bit
    for bit. `tx.attention` in bf16 is what FP8 attention is measured
    against (docs/Precision.md).

    ```mlir
    %o, %lse, %s_amax, %o_amax = tx.fp8_attention %q, %k, %v
        scale_inv(%q_si, %k_si, %v_si, %s_si) fp8_scale(%s_s, %o_s) scale(0.0883883) causal
        : tensor<2x16x128x128xf8E4M3FN>, tensor<2x16x128x128xf8E4M3FN>, tensor<2x16x128x128xf8E4M3FN>
    ```
  }];
  let arguments = (ins Tx_FP8Tensor:$q, Tx_FP8Tensor:$k, Tx_FP8Tensor:$v,
                       Tx_F32ScalarTensor:$q_scale_inv,
                       Tx_F32ScalarTensor:$k_scale_inv,
                       Tx_F32ScalarTensor:$v_scale_inv,
                       Tx_F32ScalarTensor:$s_scale_inv,
                       Tx_F32ScalarTensor:$s_scale,
                       Tx_F32ScalarTensor:$o_scale,
                       F64Attr:$scale,
                       UnitAttr:$causal);
  let results = (outs Tx_FP8Tensor:$result,
                      StaticShapeTensorOf<[F32]>:$lse,
                      Tx_F32ScalarTensor:$s_amax,
                      Tx_F32ScalarTensor:$o_amax);
  let assemblyFormat = [{
    $q `,` $k `,` $v
    `scale_inv` `(` $q_scale_inv `,` $k_scale_inv `,` $v_scale_inv `,` $s_scale_inv `)`
    `fp8_scale` `(` $s_scale `,` $o_scale `)`
    `scale` `(` $scale `)` (`causal` $causal^)? attr-dict
    `:` type($q) `,` type($k) `,` type($v)
  }];
  let hasVerifier = 1;
}

def Tx_FP8AttentionGradOp : Tx_Op<"fp8_attention_grad", [Pure, InferTypeOpAdaptor]> {
  let summary = "Gradients of tx.fp8_attention with FP8 gradients (cuDNN's sdpa_fp8_backward)";
  let description = [{
    Given the FP8 upstream gradient `grad` (dO) of the FP8 `out` of a
    `tx.fp8_attention` with the same `q`, `k`, `v`, attributes and
    `s_scale`/`s_scale_inv`, and its `lse`; `S`, `P`, `n`, `d(x)` and
    `fp8_T` as there:

    ```
    D[b,h,i]     = (sum_e grad[b,h,i,e] * out[b,h,i,e]) * d(grad) * d(out)
    P8[b,h,i,j]  = fp8_{type(q)}(P * s_scale)                 (P from lse)
    dV[b,g,j,e]  = (sum_{h: h/n = g} sum_i P8[b,h,i,j] * grad[b,h,i,e]) * d(s) * d(grad)
    dPbar[b,h,i,j] = (sum_e grad[b,h,i,e] * v[b,h/n,j,e]) * d(grad) * d(v)
    dS[b,h,i,j]  = P * (dPbar - D) * scale
    dp_amax      = max |dS|
    dS8          = fp8_{type(grad)}(dS * dp_scale)
    dQ[b,h,i,d]  = (sum_j dS8[b,h,i,j] * k[b,h/n,j,d]) * d(dp) * d(k)
    dK[b,g,j,d]  = (sum_{h: h/n = g} sum_i dS8[b,h,i,j] * q[b,h,i,d]) * d(dp) * d(q)
    x_grad_amax  = max |dX|,  x_grad = fp8_{type(grad)}(dX * x_grad_scale)   for X in Q, K, V
    ```

    The gradients take the FP8 type of `grad` (E5M2 under the hybrid
    format) and so does the quantized `dS`, cuDNN's `dP` (the gradient of
    the scaled scores, `scale` included), which has a scaling state of its
    own (`dp_scale`, `dp_scale_inv`, `dp_amax`). The row term `D` comes
    from the FP8 `out` and `grad`, not from the real values. The amaxes are
    of the real gradients before their scales; grouped-query heads' `dK`
    and `dV` are summed over their query heads before. Numerics as for
    `tx.fp8_attention`: the GPU matches within a tolerance (NVIDIA's tests
    accept dQ, dK, dV within 0.04 absolute / 0.2 relative).

    ```mlir
    %dq, %dk, %dv, %dq_amax, %dk_amax, %dv_amax, %dp_amax = tx.fp8_attention_grad
        %do, %q, %k, %v, %o, %lse
        scale_inv(%q_si, %k_si, %v_si, %o_si, %do_si, %s_si, %dp_si)
        fp8_scale(%s_s, %dq_s, %dk_s, %dv_s, %dp_s) scale(0.0883883) causal
        : tensor<2x16x128x128xf8E5M2>, tensor<2x16x128x128xf8E4M3FN>,
          tensor<2x16x128x128xf8E4M3FN>, tensor<2x16x128x128xf8E4M3FN>
    ```
  }];
  let arguments = (ins Tx_FP8Tensor:$grad, Tx_FP8Tensor:$q, Tx_FP8Tensor:$k,
                       Tx_FP8Tensor:$v, Tx_FP8Tensor:$out,
                       StaticShapeTensorOf<[F32]>:$lse,
                       Tx_F32ScalarTensor:$q_scale_inv,
                       Tx_F32ScalarTensor:$k_scale_inv,
                       Tx_F32ScalarTensor:$v_scale_inv,
                       Tx_F32ScalarTensor:$out_scale_inv,
                       Tx_F32ScalarTensor:$grad_scale_inv,
                       Tx_F32ScalarTensor:$s_scale_inv,
                       Tx_F32ScalarTensor:$dp_scale_inv,
                       Tx_F32ScalarTensor:$s_scale,
                       Tx_F32ScalarTensor:$q_grad_scale,
                       Tx_F32ScalarTensor:$k_grad_scale,
                       Tx_F32ScalarTensor:$v_grad_scale,
                       Tx_F32ScalarTensor:$dp_scale,
                       F64Attr:$scale,
                       UnitAttr:$causal);
  let results = (outs Tx_FP8Tensor:$q_grad, Tx_FP8Tensor:$k_grad, Tx_FP8Tensor:$v_grad,
                      Tx_F32ScalarTensor:$q_grad_amax,
                      Tx_F32ScalarTensor:$k_grad_amax,
                      Tx_F32ScalarTensor:$v_grad_amax,
                      Tx_F32ScalarTensor:$dp_amax);
  let assemblyFormat = [{
    $grad `,` $q `,` $k `,` $v `,` $out `,` $lse
    `scale_inv` `(` $q_scale_inv `,` $k_scale_inv `,` $v_scale_inv `,` $out_scale_inv `,`
                    $grad_scale_inv `,` $s_scale_inv `,` $dp_scale_inv `)`
    `fp8_scale` `(` $s_scale `,` $q_grad_scale `,` $k_grad_scale `,` $v_grad_scale `,`
                    $dp_scale `)`
    `scale` `(` $scale `)` (`causal` $causal^)? attr-dict
    `:` type($grad) `,` type($q) `,` type($k) `,` type($v) `,` type($out) `,` type($lse)
  }];
  let hasVerifier = 1;
}

#endif // TXOPT_DIALECT_TX_IR_TXPRECISIONOPS_TD
