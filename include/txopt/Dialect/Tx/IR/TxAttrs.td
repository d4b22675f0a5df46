//===- TxAttrs.td - tx dialect attributes -------------------*- tablegen -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// Enumerations the tx ops carry as attributes, and the FP8 recipe.
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_DIALECT_TX_IR_TXATTRS_TD
#define TXOPT_DIALECT_TX_IR_TXATTRS_TD

include "txopt/Dialect/Tx/IR/TxBase.td"
include "mlir/IR/EnumAttr.td"

def Tx_PadMode : I32EnumAttr<"PadMode", "ONNX Pad mode", [
    I32EnumAttrCase<"constant", 0>, I32EnumAttrCase<"reflect", 1>,
    I32EnumAttrCase<"edge", 2>, I32EnumAttrCase<"wrap", 3>]> {
  let cppNamespace = "::mlir::txopt::tx";
  let genSpecializedAttr = 0;
}
def Tx_PadModeAttr : EnumAttr<Tx_Dialect, Tx_PadMode, "pad_mode">;

def Tx_LossReduction : I32EnumAttr<"LossReduction", "loss reduction", [
    I32EnumAttrCase<"none", 0>, I32EnumAttrCase<"sum", 1>,
    I32EnumAttrCase<"mean", 2>]> {
  let cppNamespace = "::mlir::txopt::tx";
  let genSpecializedAttr = 0;
}
def Tx_LossReductionAttr : EnumAttr<Tx_Dialect, Tx_LossReduction, "loss_reduction">;

// Optimizer enums (tx.adam, TxOptimOps.td).
def Tx_AdamMode : I32EnumAttr<"AdamMode", "where Adam applies weight decay", [
    I32EnumAttrCase<"adam", 0>, I32EnumAttrCase<"adamw", 1>]> {
  let cppNamespace = "::mlir::txopt::tx";
  let genSpecializedAttr = 0;
}
def Tx_AdamModeAttr : EnumAttr<Tx_Dialect, Tx_AdamMode, "adam_mode">;

def Tx_EpsilonPlacement : I32EnumAttr<"EpsilonPlacement",
    "where Adam adds epsilon to the second-moment denominator", [
    I32EnumAttrCase<"outside_sqrt", 0>, I32EnumAttrCase<"inside_sqrt", 1>,
    I32EnumAttrCase<"epsilon_hat", 2>]> {
  let cppNamespace = "::mlir::txopt::tx";
  let genSpecializedAttr = 0;
}
def Tx_EpsilonPlacementAttr : EnumAttr<Tx_Dialect, Tx_EpsilonPlacement, "epsilon_placement">;

// How a collective combines the ranks' tensors (TxCollectiveOps.td).
def Tx_CollectiveReduction : I32EnumAttr<"CollectiveReduction",
    "how a collective combines the ranks' tensors", [
    I32EnumAttrCase<"sum", 0>, I32EnumAttrCase<"max", 1>,
    I32EnumAttrCase<"mean", 2>]> {
  let cppNamespace = "::mlir::txopt::tx";
  let genSpecializedAttr = 0;
}
def Tx_CollectiveReductionAttr
    : EnumAttr<Tx_Dialect, Tx_CollectiveReduction, "collective_reduction">;

//===----------------------------------------------------------------------===//
// FP8 recipe (TxPrecisionOps.td)
//===----------------------------------------------------------------------===//

def Tx_FP8ScalingKind : I32EnumAttr<"FP8ScalingKind",
    "how an FP8 scale is derived", [
    I32EnumAttrCase<"delayed", 0>, I32EnumAttrCase<"current", 1>]> {
  let cppNamespace = "::mlir::txopt::tx";
  let genSpecializedAttr = 0;
}

def Tx_FP8Format : I32EnumAttr<"FP8Format", "which FP8 types a recipe uses", [
    I32EnumAttrCase<"hybrid", 0>, I32EnumAttrCase<"e4m3", 1>]> {
  let cppNamespace = "::mlir::txopt::tx";
  let genSpecializedAttr = 0;
}

def Tx_AmaxCompute : I32EnumAttr<"AmaxCompute",
    "which amax of the history a delayed scale is derived from", [
    I32EnumAttrCase<"max", 0>, I32EnumAttrCase<"most_recent", 1>]> {
  let cppNamespace = "::mlir::txopt::tx";
  let genSpecializedAttr = 0;
}

def Tx_FP8FastAccumulation : I32EnumAttr<"FP8FastAccumulation",
    "which FP8 GEMMs use the tensor cores' fast accumulator", [
    I32EnumAttrCase<"none", 0>, I32EnumAttrCase<"forward", 1>,
    I32EnumAttrCase<"all", 2>]> {
  let cppNamespace = "::mlir::txopt::tx";
  let genSpecializedAttr = 0;
}

def Tx_FP8RecipeAttr : AttrDef<Tx_Dialect, "FP8Recipe"> {
  let mnemonic = "fp8_recipe";
  let summary = "An FP8 scaling recipe (Transformer Engine's DelayedScaling / Float8CurrentScaling)";
  let description = [{
    How the per-tensor scales of FP8 casts are derived. The FP8 insertion
    pass puts one recipe on every scaling op it creates, so the IR records
    the recipe it was compiled with.

    * `delayed` (TE's `DelayedScaling`): the scale a cast uses was computed
      at the end of the previous step from a window of `history` amaxes
      (`amax = max` over the window, or `most_recent`, the newest amax
      only), with `margin` binades of headroom: `scale = fp8_max / amax /
      2^margin`. See `tx.fp8_scale_update`.
    * `current` (TE's `Float8CurrentScaling`): the scale comes from the amax
      of the tensor being cast, in the same step (`tx.fp8_current_scale`).
      It takes only `format`.

    `format = hybrid` (TE's `Format.HYBRID`, the default) casts forward
    tensors (activations, weights) to `f8E4M3FN` (max 448) and gradients to
    `f8E5M2` (max 57344, more range, less precision); `format = e4m3` uses
    `f8E4M3FN` everywhere. Defaults are TE's: `format = hybrid`,
    `history = 1024`, `amax = max`, `margin = 0`; omitted keys take them,
    and the printer writes every key that applies.

    ```mlir
    #tx.fp8_recipe<delayed, format = hybrid, history = 1024, amax = max, margin = 0>
    #tx.fp8_recipe<current, format = e4m3>
    ```
  }];
  // history and margin only mean something for delayed scaling; a current
  // recipe stores history = 0, amax = max, margin = 0 (the verifier holds
  // it to that) so that two equal recipes are one attribute.
  let parameters = (ins EnumParameter<Tx_FP8ScalingKind>:$kind,
                        EnumParameter<Tx_FP8Format>:$format,
                        "int64_t":$historyLength,
                        EnumParameter<Tx_AmaxCompute>:$amaxCompute,
                        "int64_t":$margin);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    static FP8RecipeAttr getDelayed(::mlir::MLIRContext *context,
                                    FP8Format format, int64_t historyLength,
                                    AmaxCompute amaxCompute, int64_t margin) {
      return get(context, FP8ScalingKind::delayed, format, historyLength,
                 amaxCompute, margin);
    }
    static FP8RecipeAttr getCurrent(::mlir::MLIRContext *context,
                                    FP8Format format) {
      return get(context, FP8ScalingKind::current, format, 0, AmaxCompute::max,
                 0);
    }
    bool isDelayed() const { return getKind() == FP8ScalingKind::delayed; }
    /// Whether FP8 type |type| is one this recipe's format uses: both OCP
    /// types under hybrid, f8E4M3FN only under e4m3.
    bool allowsType(::mlir::Type type) const;
  }];
}

//===----------------------------------------------------------------------===//
// Weights by reference (tx.parameter source)
//===----------------------------------------------------------------------===//

def Tx_WeightSourceAttr : AttrDef<Tx_Dialect, "WeightSource"> {
  let mnemonic = "weight_source";
  let summary = "Where a parameter's initial bytes live: a file range";
  let description = [{
    The initial value of a `tx.parameter` that stays in the file it came
    from (an ONNX external-data file) instead of being copied into the IR:
    `length` bytes at byte `offset` of the file `path`, little-endian, in
    the row-major layout of the parameter's type, which gives the element
    type and shape. `path` is relative, as the model wrote it; it resolves
    against the module's `tx.model_dir` attribute (an absolute folder), so
    the IR does not depend on where the weights are read from until they
    are read. Readers (`tx::readParameterBytes`, WeightSource.h) accept
    only a regular file inside that folder and check the range against
    the file's size when they read.

    Verified here: `path` is non-empty, relative and has no `..`
    component or NUL byte, and `offset + length` fits in 64 bits. The
    parameter checks `length` against its type.

    ```mlir
    #tx.weight_source<path = "model.onnx.data", offset = 0, length = 393216>
    ```
  }];
  let parameters = (ins StringRefParameter<"file, relative to tx.model_dir">:$path,
                        "uint64_t":$offset,
                        "uint64_t":$length);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

#endif // TXOPT_DIALECT_TX_IR_TXATTRS_TD
