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

#endif // TXOPT_DIALECT_TX_IR_TXPRECISIONOPS_TD
