//===- TxOps.td - tx dialect operations ---------------------*- tablegen -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// Primitive tx ops with ONNX semantics, plus parameters and constants.
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_DIALECT_TX_IR_TXOPS_TD
#define TXOPT_DIALECT_TX_IR_TXOPS_TD

include "txopt/Dialect/Tx/IR/TxBase.td"
include "txopt/Dialect/Tx/IR/TxAttrs.td"
include "txopt/Dialect/Tx/IR/TxInterfaces.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Parameters and constants
//===----------------------------------------------------------------------===//

def Tx_ParameterOp : Tx_Op<"parameter", [Symbol, HasParent<"::mlir::ModuleOp">]> {
  let summary = "A trainable weight with its initial value or its source";
  let description = [{
    Declares one model weight at module level. The ONNX importer creates one
    per float initializer, named after it. `frozen` marks a weight that is
    state but must not be trained (an exported buffer such as a causal mask).
    Functions read it with `tx.load_parameter`; the training-step builder turns
    the reads into arguments of a pure step function.

    The initial value is either inline (`initial_value`, a dense attribute)
    or by reference (`source`, a `#tx.weight_source` naming a byte range of
    a file relative to the module's `tx.model_dir`): weights of a large
    model stay in their external-data file, and the IR stays small. Nothing
    in the compiler reads a sourced parameter's bytes; runners read them
    with `tx::readParameterBytes` (WeightSource.h).

    Constraints: (C1) `type` is a statically shaped tensor of a float
    element type; (C2) exactly one of `initial_value` and `source` is
    present; (C3) `initial_value` has type `type`; (C4) a sourced
    parameter's elements are whole bytes and `source.length` equals
    `num_elements(type) * element_bytes`.

    ```mlir
    tx.parameter @"h.0.ln_1.weight" = dense<1.0> : tensor<128xf32>
    tx.parameter @"h.0.attn.c_attn.weight" : tensor<768x2304xf32>
        source(#tx.weight_source<path = "model.onnx.data", offset = 512, length = 7077888>)
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       TypeAttrOf<AnyRankedTensor>:$type,
                       OptionalAttr<ElementsAttr>:$initial_value,
                       OptionalAttr<Tx_WeightSourceAttr>:$source,
                       UnitAttr:$frozen);
  // `@w = dense<...> : T` or `@w : T source(#tx.weight_source<...>)`; the
  // type is stored once for both forms, so readers never need the value.
  let hasCustomAssemblyFormat = 1;
  let builders = [
    OpBuilder<(ins "::llvm::StringRef":$name, "::mlir::ElementsAttr":$value,
                   CArg<"bool", "false">:$frozen)>,
    OpBuilder<(ins "::llvm::StringRef":$name, "::mlir::RankedTensorType":$type,
                   "WeightSourceAttr":$source, CArg<"bool", "false">:$frozen)>,
  ];
  let extraClassDeclaration = [{
    /// True when the initial value stays in a file (`source`).
    bool isSourced() { return static_cast<bool>(getSourceAttr()); }
  }];
  let hasVerifier = 1;
}

def Tx_LoadParameterOp : Tx_Op<"load_parameter",
    [Pure, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Reads the current value of a tx.parameter";
  let description = [{
    `result = value of @name`. Never folded to the initial value: weights are
    state, and the training step replaces these reads with step arguments.

    ```mlir
    %w = tx.load_parameter @"h.0.ln_1.weight" : tensor<128xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$name);
  let results = (outs Tx_Tensor:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
}

def Tx_ConstantOp : Tx_Op<"constant", [ConstantLike, Pure,
    AllTypesMatch<["value", "result"]>]> {
  let summary = "A constant tensor";
  let description = [{
    `result = value`. Integer tensors, scalars and folded shape computations
    end up here; float weights become `tx.parameter` instead.

    ```mlir
    %eps = tx.constant dense<1.0e-05> : tensor<f32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Tx_Tensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

def Tx_ConstantOfShapeOp : Tx_Op<"constant_of_shape", [Pure]> {
  let summary = "ONNX ConstantOfShape: a tensor filled with one value";
  let description = [{
    `result[i...] = value` where the result shape equals the contents of the
    1-D `shape`, and `value` holds exactly one element of the result's element
    type. The result type carries the static shape; the verifier checks its
    rank against the length of `shape` always, and its dims against the
    contents of `shape` when that is a constant. Folds to a splat
    `tx.constant` whether or not `shape` is constant.

    ```mlir
    %z = tx.constant_of_shape %s value(dense<0.0> : tensor<1xf32>) : tensor<2xi64> -> tensor<2x3xf32>
    ```
  }];
  let arguments = (ins Tx_1DTensorOf<[I64]>:$shape, ElementsAttr:$value);
  let results = (outs Tx_Tensor:$result);
  let assemblyFormat = "$shape `value` `(` $value `)` attr-dict `:` type($shape) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Tx_RangeOp : Tx_Op<"range", [Pure, AllTypesMatch<["start", "limit", "delta"]>]> {
  let summary = "ONNX Range: start, start + delta, ... up to (excluding) limit";
  let description = [{
    `result[0] = start`, `result[i + 1] = result[i] + delta` (accumulated in
    the element type, as ONNX's function body and onnxruntime do), for
    `max(ceil((limit - start) / delta), 0)` elements. As in onnxruntime,
    `limit - start` is taken in the element type and the division in f64
    (exactly, for integers). The result length is static: the verifier checks
    it when the operands are constants, and rejects a constant zero `delta`
    and non-finite float operands. Folds to `tx.constant` when all operands
    are constants and the result has at most 65536 elements.

    ```mlir
    %r = tx.range %start, %limit, %delta : tensor<i64> -> tensor<32xi64>
    ```
  }];
  let arguments = (ins Tx_ScalarTensor:$start, Tx_ScalarTensor:$limit,
                       Tx_ScalarTensor:$delta);
  let results = (outs Tx_1DTensorOf<[AnyFloat, AnySignlessInteger]>:$result);
  let assemblyFormat = "$start `,` $limit `,` $delta attr-dict `:` type($start) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Tx_ShapeOp : Tx_Op<"shape", [Pure, Tx_InferTypeOpAdaptor]> {
  let summary = "ONNX Shape: the dimensions of a tensor as i64";
  let description = [{
    `result = shape(input)[start:end]` with ONNX's clamping of `start`/`end`.
    Shapes are static, so this always folds to a constant.

    ```mlir
    %s = tx.shape %x : tensor<2x32x128xf32>
    ```
  }];
  let arguments = (ins Tx_Tensor:$input,
                       DefaultValuedAttr<I64Attr, "0">:$start,
                       OptionalAttr<I64Attr>:$end);
  let results = (outs StaticShapeTensorOf<[I64]>:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasFolder = 1;
}

def Tx_IdentityOp : Tx_UnaryOp<"identity", Tx_Tensor, [Tx_Differentiable]> {
  let summary = "ONNX Identity: result = input";
  let description = [{
    ```mlir
    %y = tx.identity %x : tensor<4xf32>
    ```
  }];
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise arithmetic (broadcasting)
//===----------------------------------------------------------------------===//

class Tx_ArithOp<string mnemonic, string onnxName, string formula>
    : Tx_BroadcastBinaryOp<mnemonic, Tx_NumericTensor, [Tx_Differentiable]> {
  let summary = "ONNX " # onnxName # ": " # formula # " with numpy broadcasting";
  let description = [{
    `result = }] # formula # [{`, both operands broadcast to the common shape
    (numpy rules: dims compared right to left, equal or 1). Operands have one
    element type, which the result keeps.

    ```mlir
    %y = tx.}] # mnemonic # [{ %a, %b : tensor<2x32x128xf32>, tensor<128xf32>
    ```
  }];
}

def Tx_AddOp : Tx_ArithOp<"add", "Add", "lhs + rhs">;
def Tx_SubOp : Tx_ArithOp<"sub", "Sub", "lhs - rhs">;
def Tx_MulOp : Tx_ArithOp<"mul", "Mul", "lhs * rhs">;
def Tx_DivOp : Tx_ArithOp<"div", "Div", "lhs / rhs">;

def Tx_PowOp : Tx_BroadcastBinaryOp<"pow", Tx_NumericTensor, [Tx_Differentiable]> {
  let summary = "ONNX Pow: base ^ exponent with numpy broadcasting";
  let description = [{
    `result = lhs ^ rhs`. The result has the base's element type; the
    exponent may have another numeric type (as ONNX allows).

    ```mlir
    %sq = tx.pow %x, %two : tensor<2x32x128xf32>, tensor<f32>
    ```
  }];
}

def Tx_ModOp : Tx_BroadcastBinaryOp<"mod", Tx_NumericTensor> {
  let summary = "ONNX Mod with numpy broadcasting";
  let description = [{
    `result = fmod ? fmod(lhs, rhs) : lhs - floor(lhs / rhs) * rhs` (the
    integer form takes the divisor's sign, as Python's `%`). ONNX requires
    `fmod = 1` for floating-point operands.

    ```mlir
    %m = tx.mod %a, %b {fmod = false} : tensor<4xi64>, tensor<i64>
    ```
  }];
  let arguments = (ins Tx_NumericTensor:$lhs, Tx_NumericTensor:$rhs,
                       DefaultValuedAttr<BoolAttr, "false">:$fmod);
  let hasVerifier = 1;
}

// Binary rather than variadic like ONNX: one broadcast per op keeps these in
// the Tx_BroadcastBinaryOp family (shared inference, executor kernel and a
// gradient rule that only has two operands to route to). The importer turns
// an N-ary Max/Min into a chain.
class Tx_MinMaxOp<string mnemonic, string onnxName, string fn, string pick>
    : Tx_BroadcastBinaryOp<mnemonic, Tx_NumericTensor, [Tx_Differentiable]> {
  let summary = "ONNX " # onnxName # ": elementwise " # fn # " with numpy broadcasting";
  let description = [{
    `result = }] # fn # [{(lhs, rhs)` elementwise after broadcasting, i.e.
    `}] # pick # [{`; a NaN in either operand gives NaN
    (onnxruntime's behaviour). Operands have one element type, which the
    result keeps.

    ONNX }] # onnxName # [{ is variadic (opset 13+: any numeric type, 1 or
    more inputs, all broadcast together). The importer maps one input to
    that input and `n` inputs to a left-to-right chain of `n - 1` binary
    ops, `}] # mnemonic # [{(}] # mnemonic # [{(a, b), c)`: the function is
    associative and commutative, and broadcasting pairwise gives the same
    shape as broadcasting all inputs at once.

    Folds `}] # mnemonic # [{(x, x)` to `x`.

    ```mlir
    %y = tx.}] # mnemonic # [{ %a, %b : tensor<2x1x32x1xi64>, tensor<1x1x1x32xi64>
    ```
  }];
  let hasFolder = 1;
}

def Tx_MaxOp : Tx_MinMaxOp<"max", "Max", "max", "lhs > rhs ? lhs : rhs">;
def Tx_MinOp : Tx_MinMaxOp<"min", "Min", "min", "lhs < rhs ? lhs : rhs">;

class Tx_CompareOp<string mnemonic, string onnxName, string formula>
    : Tx_BroadcastBinaryOp<mnemonic, Tx_NumericTensor> {
  let summary = "ONNX " # onnxName # ": " # formula # " with numpy broadcasting";
  let description = [{
    `result = }] # formula # [{` as i1, elementwise after broadcasting. Both
    operands have one element type.

    ```mlir
    %c = tx.}] # mnemonic # [{ %a, %b : tensor<32x32xf32>, tensor<f32>
    ```
  }];
}

def Tx_EqualOp : Tx_CompareOp<"equal", "Equal", "lhs == rhs">;
def Tx_GreaterOrEqualOp : Tx_CompareOp<"greater_or_equal", "GreaterOrEqual", "lhs >= rhs">;
def Tx_LessOp : Tx_CompareOp<"less", "Less", "lhs < rhs">;
def Tx_LessOrEqualOp : Tx_CompareOp<"less_or_equal", "LessOrEqual", "lhs <= rhs">;
def Tx_GreaterOp : Tx_CompareOp<"greater", "Greater", "lhs > rhs">;

class Tx_LogicOp<string mnemonic, string onnxName, string formula>
    : Tx_BroadcastBinaryOp<mnemonic, Tx_BoolTensor> {
  let summary = "ONNX " # onnxName # ": " # formula # " on i1 with numpy broadcasting";
  let description = [{
    `result = }] # formula # [{` elementwise after broadcasting; operands and
    result are i1.

    ```mlir
    %c = tx.}] # mnemonic # [{ %a, %b : tensor<32x32xi1>, tensor<i1>
    ```
  }];
}

def Tx_AndOp : Tx_LogicOp<"and", "And", "lhs && rhs">;
def Tx_OrOp : Tx_LogicOp<"or", "Or", "lhs || rhs">;
def Tx_XorOp : Tx_LogicOp<"xor", "Xor", "lhs != rhs">;

def Tx_NotOp : Tx_UnaryOp<"not", Tx_BoolTensor> {
  let summary = "ONNX Not: logical negation of i1";
  let description = [{
    ```mlir
    %n = tx.not %m : tensor<32x32xi1>
    ```
  }];
}

def Tx_WhereOp : Tx_Op<"where", [Tx_Differentiable, Pure, Tx_InferTypeOpAdaptor]> {
  let summary = "ONNX Where: select with three-way broadcasting";
  let description = [{
    `result = condition ? lhs : rhs`, all three broadcast to a common shape.
    `lhs` and `rhs` have one element type, which the result keeps.

    ```mlir
    %y = tx.where %mask, %scores, %neg_inf : tensor<32x32xi1>, tensor<2x4x32x32xf32>, tensor<f32>
    ```
  }];
  let arguments = (ins Tx_BoolTensor:$condition, Tx_Tensor:$lhs, Tx_Tensor:$rhs);
  let results = (outs Tx_Tensor:$result);
  let assemblyFormat = [{
    $condition `,` $lhs `,` $rhs attr-dict `:` type($condition) `,` type($lhs) `,` type($rhs)
  }];
}

//===----------------------------------------------------------------------===//
// Elementwise unary
//===----------------------------------------------------------------------===//

class Tx_FloatUnaryOp<string mnemonic, string formula>
    : Tx_UnaryOp<mnemonic, Tx_FloatTensor, [Tx_Differentiable]> {
  let summary = "ONNX elementwise " # formula;
  let description = [{
    `result = }] # formula # [{` elementwise.

    ```mlir
    %y = tx.}] # mnemonic # [{ %x : tensor<2x32x128xf32>
    ```
  }];
}

def Tx_SqrtOp : Tx_FloatUnaryOp<"sqrt", "sqrt(x)">;
def Tx_ReciprocalOp : Tx_FloatUnaryOp<"reciprocal", "1 / x">;
def Tx_ErfOp : Tx_FloatUnaryOp<"erf", "erf(x)">;
def Tx_TanhOp : Tx_FloatUnaryOp<"tanh", "tanh(x)">;
def Tx_SigmoidOp : Tx_FloatUnaryOp<"sigmoid", "1 / (1 + exp(-x))">;
def Tx_ExpOp : Tx_FloatUnaryOp<"exp", "exp(x)">;
def Tx_LogOp : Tx_FloatUnaryOp<"log", "log(x)">;
def Tx_SinOp : Tx_FloatUnaryOp<"sin", "sin(x)">;
def Tx_CosOp : Tx_FloatUnaryOp<"cos", "cos(x)">;

def Tx_NegOp : Tx_UnaryOp<"neg", Tx_NumericTensor, [Tx_Differentiable]> {
  let summary = "ONNX Neg: result = -x";
  let description = [{
    ```mlir
    %y = tx.neg %x : tensor<2x4x32x16xf32>
    ```
  }];
}

def Tx_ReluOp : Tx_UnaryOp<"relu", Tx_NumericTensor, [Tx_Differentiable]> {
  let summary = "ONNX Relu: result = max(x, 0)";
  let description = [{
    ```mlir
    %y = tx.relu %x : tensor<2x32x512xf32>
    ```
  }];
}

def Tx_IsNaNOp : Tx_Op<"is_nan", [Pure, Elementwise, SameOperandsAndResultShape]> {
  let summary = "ONNX IsNaN: result = (x != x) as i1";
  let description = [{
    ```mlir
    %m = tx.is_nan %x : tensor<2x1x32x32xf32> -> tensor<2x1x32x32xi1>
    ```
  }];
  let arguments = (ins Tx_FloatTensor:$input);
  let results = (outs Tx_BoolTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def Tx_CastOp : Tx_Op<"cast", [Tx_Differentiable, Pure, Elementwise, SameOperandsAndResultShape]> {
  let summary = "ONNX Cast: convert the element type";
  let description = [{
    `result = convert(input)`: floats round to nearest even, float to integer
    truncates toward zero, anything to i1 is `x != 0`. Into the FP8 formats
    the conversion saturates, as ONNX's Cast with `saturate = 1`, Transformer
    Engine's casts and the GPU's `satfinite` conversions do: finite values
    beyond the largest one and infinities become +-largest (E4M3FN 448,
    E5M2 57344); NaN stays NaN. An E5M2 value may still hold an infinity
    (the importer spells ONNX's `saturate = 0` with selects that produce
    them). Into float8e8m0 it rounds up and saturates (ONNX's defaults,
    what CUDA's conversion does).

    ```mlir
    %h = tx.cast %x : tensor<4x128xf32> to tensor<4x128xbf16>
    ```
  }];
  let arguments = (ins Tx_Tensor:$input);
  let results = (outs Tx_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasFolder = 1;
}

def Tx_TriluOp : Tx_Op<"trilu", [Tx_Differentiable, Pure, SameOperandsAndResultType]> {
  let summary = "ONNX Trilu: keep the upper or lower triangle of the last two dims";
  let description = [{
    Lower (`upper = false`): `result[..., i, j] = j <= i + k ? x[..., i, j] : 0`.
    Upper: `result[..., i, j] = j >= i + k ? x[..., i, j] : 0`.

    ```mlir
    %m = tx.trilu %ones {upper = false, k = 0} : tensor<32x32xf32>
    ```
  }];
  let arguments = (ins StaticShapeTensorOf<[AnyType]>:$input,
                       DefaultValuedAttr<BoolAttr, "true">:$upper,
                       DefaultValuedAttr<I64Attr, "0">:$k);
  let results = (outs Tx_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

def Tx_MatMulOp : Tx_Op<"matmul", [Tx_Differentiable, Pure, Tx_InferTypeOpAdaptor]> {
  let summary = "ONNX MatMul: numpy matmul with batch broadcasting";
  let description = [{
    `result[b..., i, j] = sum_k lhs[b..., i, k] * rhs[b..., k, j]`. A 1-D lhs
    is treated as a row and a 1-D rhs as a column, and the inserted dim is
    removed again, as numpy does. Leading (batch) dims broadcast.

    ```mlir
    %y = tx.matmul %x, %w : tensor<2x32x128xf32>, tensor<128x384xf32>
    ```
  }];
  let arguments = (ins Tx_NumericTensor:$lhs, Tx_NumericTensor:$rhs);
  let results = (outs Tx_NumericTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs)";
}

def Tx_GemmOp : Tx_Op<"gemm", [Tx_Differentiable, Pure, Tx_InferTypeOpAdaptor]> {
  let summary = "ONNX Gemm: alpha * op(A) * op(B) + beta * C";
  let description = [{
    `result = alpha * (transA ? A^T : A) @ (transB ? B^T : B) + beta * C` with
    2-D `A` and `B` of one element type; the optional `C` has that element
    type and broadcasts unidirectionally to `[M, N]` (rank at most 2).

    ```mlir
    %y = tx.gemm %a, %b, %c {transB = true} : tensor<64x128xf32>, tensor<384x128xf32>, tensor<384xf32>
    ```
  }];
  let arguments = (ins Tx_NumericTensor:$a, Tx_NumericTensor:$b,
                       Optional<Tx_NumericTensor>:$c,
                       DefaultValuedAttr<F32Attr, "1.0">:$alpha,
                       DefaultValuedAttr<F32Attr, "1.0">:$beta,
                       DefaultValuedAttr<BoolAttr, "false">:$transA,
                       DefaultValuedAttr<BoolAttr, "false">:$transB);
  let results = (outs Tx_NumericTensor:$result);
  let assemblyFormat = [{
    $a `,` $b (`,` $c^)? attr-dict `:` type($a) `,` type($b) (`,` type($c)^)?
  }];
}

//===----------------------------------------------------------------------===//
// Indexing and data movement
//===----------------------------------------------------------------------===//

def Tx_GatherOp : Tx_Op<"gather", [Tx_Differentiable, Pure, Tx_InferTypeOpAdaptor]> {
  let summary = "ONNX Gather: take slices along an axis (embedding lookup)";
  let description = [{
    With `r = rank(data)` and `q = rank(indices)`, the result has rank
    `q + r - 1`: `result[a..., i..., b...] = data[a..., indices[i...], b...]`
    where `a` spans the dims before `axis`. Negative indices count from the end.

    ```mlir
    %e = tx.gather %wte, %ids {axis = 0} : tensor<512x128xf32>, tensor<2x32xi64>
    ```
  }];
  let arguments = (ins Tx_Tensor:$data, Tx_IndexTensor:$indices,
                       DefaultValuedAttr<I64Attr, "0">:$axis);
  let results = (outs Tx_Tensor:$result);
  let assemblyFormat = "$data `,` $indices attr-dict `:` type($data) `,` type($indices)";
}

def Tx_GatherElementsOp : Tx_Op<"gather_elements",
    [Tx_Differentiable, Pure, Tx_InferTypeOpAdaptor]> {
  let summary = "ONNX GatherElements: index one element per output position";
  let description = [{
    `result[i0, .., ik] = data[i0, .., indices[i0, .., ik], .., ik]` with the
    index replacing position `axis`; the result has the shape of `indices`.
    `indices` has the rank of `data` and, on every dim but `axis`, at most
    its size (onnxruntime's check; a larger dim would read out of bounds).

    ```mlir
    %t = tx.gather_elements %logp, %labels {axis = 1} : tensor<64x512xf32>, tensor<64x1xi64>
    ```
  }];
  let arguments = (ins Tx_Tensor:$data, Tx_IndexTensor:$indices,
                       DefaultValuedAttr<I64Attr, "0">:$axis);
  let results = (outs Tx_Tensor:$result);
  let assemblyFormat = "$data `,` $indices attr-dict `:` type($data) `,` type($indices)";
}

def Tx_GatherNDOp : Tx_Op<"gather_nd", [Tx_Differentiable, Pure, Tx_InferTypeOpAdaptor]> {
  let summary = "ONNX GatherND: take slices addressed by index tuples";
  let description = [{
    With `r = rank(data)`, `q = rank(indices)`, `b = batch_dims` and
    `k = shape(indices)[q - 1]`: the first `b` dims are batch dims that
    `data` and `indices` share, and each innermost row of `indices` is a
    tuple of `k` indices into dims `[b, b + k)` of `data`, which selects the
    slice over the dims after them:

    ```
    result[a..., i..., s...] =
        data[a..., indices[a..., i..., 0], .., indices[a..., i..., k - 1], s...]
    shape(result) = shape(indices)[:q - 1] ++ shape(data)[b + k:]
    ```

    where `a` spans the `b` batch dims, `i` the other dims of `indices` but
    the last and `s` the dims of `data` after `b + k`. Negative indices
    count from the end of their dim; an index out of range is an error when
    the op runs (or is folded).

    Constraints, checked by result-type inference: (C1) `0 <= b < min(q, r)`
    (so both ranks are at least 1); (C2) `shape(indices)[:b] ==
    shape(data)[:b]`; (C3) `1 <= k <= r - b`.

    ```mlir
    %y = tx.gather_nd %data, %idx {batch_dims = 1} : tensor<2x3x4xf32>, tensor<2x5x1xi64>
    ```
  }];
  let arguments = (ins Tx_Tensor:$data, Tx_IndexTensor:$indices,
                       DefaultValuedAttr<I64Attr, "0">:$batch_dims);
  let results = (outs Tx_Tensor:$result);
  let assemblyFormat = "$data `,` $indices attr-dict `:` type($data) `,` type($indices)";
}

def Tx_ReshapeOp : Tx_Op<"reshape", [Tx_Differentiable, Pure]> {
  let summary = "ONNX Reshape to the static result type";
  let description = [{
    Same elements, row-major order, new shape. The importer resolves the
    ONNX shape operand (0 and -1 entries included) into the result type.

    ```mlir
    %y = tx.reshape %x : tensor<2x32x128xf32> -> tensor<64x128xf32>
    ```
  }];
  let arguments = (ins Tx_Tensor:$input);
  let results = (outs Tx_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Tx_ExpandOp : Tx_Op<"expand", [Tx_Differentiable, Pure]> {
  let summary = "ONNX Expand: broadcast to the static result type";
  let description = [{
    `result = broadcast(input)` with numpy rules; the result shape is the
    broadcast of the input shape and the (folded) ONNX shape operand.

    ```mlir
    %y = tx.expand %x : tensor<2x1x32x16xf32> -> tensor<2x4x32x16xf32>
    ```
  }];
  let arguments = (ins Tx_Tensor:$input);
  let results = (outs Tx_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Tx_TransposeOp : Tx_Op<"transpose", [Tx_Differentiable, Pure, Tx_InferTypeOpAdaptor]> {
  let summary = "ONNX Transpose: permute dimensions";
  let description = [{
    `result[j_0, .., j_(r-1)] = input[i_0, .., i_(r-1)]` with
    `i_perm[k] = j_k`, so `shape(result)[k] = shape(input)[perm[k]]`. `perm`
    is a permutation of `[0, r)`.

    ```mlir
    %y = tx.transpose %x perm [0, 2, 1, 3] : tensor<2x32x4x32xf32>
    ```
  }];
  let arguments = (ins Tx_Tensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs Tx_Tensor:$result);
  let assemblyFormat = "$input `perm` $perm attr-dict `:` type($input)";
}

def Tx_SplitOp : Tx_Op<"split", [Tx_Differentiable, Pure]> {
  let summary = "ONNX Split: cut a tensor into pieces along an axis";
  let description = [{
    The pieces, in order, cover `input` along `axis`; their sizes are the
    results' sizes on that axis (the importer resolves ONNX's `split` input,
    attribute or `num_outputs` into them).

    ```mlir
    %q, %k, %v = tx.split %qkv axis(2) : tensor<2x32x384xf32> -> tensor<2x32x128xf32>, tensor<2x32x128xf32>, tensor<2x32x128xf32>
    ```
  }];
  let arguments = (ins Tx_Tensor:$input, I64Attr:$axis);
  let results = (outs Variadic<Tx_Tensor>:$results);
  let assemblyFormat = "$input `axis` `(` $axis `)` attr-dict `:` type($input) `->` type($results)";
  let hasVerifier = 1;
}

def Tx_SliceOp : Tx_Op<"slice", [Tx_Differentiable, Pure, Tx_InferTypeOpAdaptor]> {
  let summary = "ONNX Slice with static starts, ends, axes and steps";
  let description = [{
    For each listed axis: `result` takes `input[start : end : step]` with
    ONNX's rules: negative `start`/`end` count from the end (`+ dim`), then
    for a positive step both clamp to `[0, dim]`; for a negative step `start`
    clamps to `[0, dim - 1]` and `end` to `[-1, dim - 1]`. The size is
    `ceil((end - start) / step)` if positive, else 0. Out-of-range values,
    including the `INT64_MAX`/`INT64_MIN` that exporters write for "to the
    end", simply clamp. `starts`, `ends`, `axes` and `steps` have one length,
    axes are distinct and steps non-zero. Unlisted axes are taken whole.

    ```mlir
    %y = tx.slice %x starts [0] ends [16] axes [3] steps [1] : tensor<2x4x32x32xf32>
    ```
  }];
  let arguments = (ins Tx_Tensor:$input, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$ends, DenseI64ArrayAttr:$axes,
                       DenseI64ArrayAttr:$steps);
  let results = (outs Tx_Tensor:$result);
  let assemblyFormat = [{
    $input `starts` $starts `ends` $ends `axes` $axes `steps` $steps attr-dict `:` type($input)
  }];
  let extraClassDeclaration = [{
    /// Per-dimension (offset, size, stride) of the slice after ONNX clamping.
    void getNormalizedRanges(::llvm::SmallVectorImpl<int64_t> &offsets,
                             ::llvm::SmallVectorImpl<int64_t> &sizes,
                             ::llvm::SmallVectorImpl<int64_t> &strides);
  }];
}

def Tx_ConcatOp : Tx_Op<"concat", [Tx_Differentiable, Pure, Tx_InferTypeOpAdaptor]> {
  let summary = "ONNX Concat along an axis";
  let description = [{
    All inputs share rank, element type and every dim but `axis` (negative
    counts from the end); the result's `axis` dim is their sum.

    ```mlir
    %y = tx.concat %a, %b axis(3) : tensor<2x4x32x8xf32>, tensor<2x4x32x8xf32>
    ```
  }];
  let arguments = (ins Variadic<Tx_Tensor>:$inputs, I64Attr:$axis);
  let results = (outs Tx_Tensor:$result);
  let assemblyFormat = "$inputs `axis` `(` $axis `)` attr-dict `:` type($inputs)";
}

def Tx_SqueezeOp : Tx_Op<"squeeze", [Tx_Differentiable, Pure, Tx_InferTypeOpAdaptor]> {
  let summary = "ONNX Squeeze: remove size-1 dims";
  let description = [{
    Removes the listed dims (each must be 1); an empty list removes every
    size-1 dim.

    ```mlir
    %y = tx.squeeze %x axes [1] : tensor<64x1xf32>
    ```
  }];
  let arguments = (ins Tx_Tensor:$input, DenseI64ArrayAttr:$axes);
  let results = (outs Tx_Tensor:$result);
  let assemblyFormat = "$input `axes` $axes attr-dict `:` type($input)";
}

def Tx_UnsqueezeOp : Tx_Op<"unsqueeze", [Tx_Differentiable, Pure, Tx_InferTypeOpAdaptor]> {
  let summary = "ONNX Unsqueeze: insert size-1 dims";
  let description = [{
    Inserts a size-1 dim at each listed position of the result (negative
    positions count from the end of the result).

    ```mlir
    %y = tx.unsqueeze %x axes [0, 1] : tensor<32x32xf32>
    ```
  }];
  let arguments = (ins Tx_Tensor:$input, DenseI64ArrayAttr:$axes);
  let results = (outs Tx_Tensor:$result);
  let assemblyFormat = "$input `axes` $axes attr-dict `:` type($input)";
}

def Tx_PadOp : Tx_Op<"pad", [Tx_Differentiable, Pure, Tx_InferTypeOpAdaptor]> {
  let summary = "ONNX Pad with static pads";
  let description = [{
    `pads` holds `[begin_0, .., begin_(r-1), end_0, .., end_(r-1)]` for every
    dim; `shape(result)[d] = dim_d + begin_d + end_d`. Negative values crop
    first, at most the whole dim. `mode = constant` fills with `value`;
    `reflect`, `edge` and `wrap` mirror (excluding the border element),
    repeat or wrap the cropped input, so they need input to read: `edge`
    pads only a non-empty dim, `reflect` pads at most `dim - 1` and `wrap`
    at most `dim` on each side (`dim` after cropping), as onnxruntime does.

    ```mlir
    %y = tx.pad %labels pads [0, 0, 0, 1] value(-100.0) : tensor<2x32xi64>
    %r = tx.pad %x pads [0, 2, 0, 2] value(0.0) {mode = #tx<pad_mode reflect>} : tensor<2x32xf32>
    ```
  }];
  let arguments = (ins Tx_Tensor:$input, DenseI64ArrayAttr:$pads,
                       DefaultValuedAttr<Tx_PadModeAttr, "::mlir::txopt::tx::PadMode::constant">:$mode,
                       DefaultValuedAttr<F64Attr, "0.0">:$value);
  let results = (outs Tx_Tensor:$result);
  let assemblyFormat = "$input `pads` $pads `value` `(` $value `)` attr-dict `:` type($input)";
}

//===----------------------------------------------------------------------===//
// Reductions, scans and normalization
//===----------------------------------------------------------------------===//

class Tx_ReduceOp<string mnemonic, string formula>
    : Tx_Op<mnemonic, [Pure, Tx_InferTypeOpAdaptor, Tx_Differentiable]> {
  let summary = "ONNX " # formula # " over the listed axes";
  let description = [{
    `result = }] # formula # [{(input, axes)`; an empty `axes` reduces every
    dim. `keep_dims` keeps the reduced dims as size 1. Float inputs
    accumulate in at least f32.

    ```mlir
    %m = tx.}] # mnemonic # [{ %x axes [-1] keep_dims : tensor<2x32x128xf32>
    ```
  }];
  let arguments = (ins Tx_NumericTensor:$input, DenseI64ArrayAttr:$axes,
                       UnitAttr:$keep_dims);
  let results = (outs Tx_NumericTensor:$result);
  let assemblyFormat = "$input `axes` $axes (`keep_dims` $keep_dims^)? attr-dict `:` type($input)";
}

def Tx_ReduceMeanOp : Tx_ReduceOp<"reduce_mean", "ReduceMean">;
def Tx_ReduceSumOp : Tx_ReduceOp<"reduce_sum", "ReduceSum">;
def Tx_ReduceMaxOp : Tx_ReduceOp<"reduce_max", "ReduceMax">;

def Tx_CumSumOp : Tx_Op<"cum_sum", [Tx_Differentiable, Pure, SameOperandsAndResultType]> {
  let summary = "ONNX CumSum: running sum along one axis";
  let description = [{
    With `n = dim(input, axis)` (a negative `axis` counts from the end), for
    every position `i` along `axis`:

    ```
    result[.., i, ..] = sum of input[.., j, ..] over j in
        [0, i]   default              [0, i)   exclusive
        [i, n)   reverse              (i, n)   exclusive reverse
    ```

    (an empty sum is 0). Integer sums wrap around; float sums accumulate in
    at least f32. ONNX passes `axis` as a 0-d or one-element input tensor;
    the importer requires it to be constant and stores it here, as it does
    reduction axes, so the scan's layout is known to every later pass.

    Folds when `dim(input, axis) == 1`: each sum then holds the element
    itself, or nothing when `exclusive`, so the result is `input` or zeros.

    ```mlir
    %c = tx.cum_sum %mask axis(1) : tensor<2x32xi64>
    %r = tx.cum_sum %x axis(-1) exclusive reverse : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Tx_NumericTensor:$input, I64Attr:$axis,
                       UnitAttr:$exclusive, UnitAttr:$reverse);
  let results = (outs Tx_NumericTensor:$result);
  let assemblyFormat = [{
    $input `axis` `(` $axis `)` (`exclusive` $exclusive^)? (`reverse` $reverse^)? attr-dict `:` type($input)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Tx_SoftmaxOp : Tx_Op<"softmax", [Tx_Differentiable, Pure, SameOperandsAndResultType]> {
  let summary = "ONNX Softmax (opset 13+) along one axis";
  let description = [{
    `result = exp(x - max(x, axis)) / sum(exp(x - max(x, axis)), axis)`,
    computed in at least f32.

    ```mlir
    %p = tx.softmax %s axis(-1) : tensor<2x4x32x32xf32>
    ```
  }];
  let arguments = (ins Tx_FloatTensor:$input, DefaultValuedAttr<I64Attr, "-1">:$axis);
  let results = (outs Tx_FloatTensor:$result);
  let assemblyFormat = "$input `axis` `(` $axis `)` attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Tx_LayerNormalizationOp : Tx_Op<"layer_normalization",
    [Tx_Differentiable, Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "ONNX LayerNormalization (opset 17)";
  let description = [{
    Normalizes over the dims from `axis` to the last:
    `result = (x - mean) / sqrt(var + epsilon) * scale + bias`, with mean and
    (biased) variance over those dims, accumulated in f32. `scale` and `bias`
    broadcast to the normalized dims.

    ```mlir
    %y = tx.layer_normalization %x, %g, %b axis(-1) eps(1.0e-05) : tensor<2x32x128xf32>, tensor<128xf32>, tensor<128xf32>
    ```
  }];
  let arguments = (ins Tx_FloatTensor:$input, Tx_FloatTensor:$scale,
                       Optional<Tx_FloatTensor>:$bias,
                       DefaultValuedAttr<I64Attr, "-1">:$axis,
                       DefaultValuedAttr<F32Attr, "1.0e-05">:$epsilon);
  let results = (outs Tx_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $scale (`,` $bias^)? `axis` `(` $axis `)` `eps` `(` $epsilon `)` attr-dict
    `:` type($input) `,` type($scale) (`,` type($bias)^)?
  }];
  let hasVerifier = 1;
}

def Tx_RMSNormalizationOp : Tx_Op<"rms_normalization",
    [Tx_Differentiable, Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "ONNX RMSNormalization (opset 23) and com.microsoft SimplifiedLayerNormalization";
  let description = [{
    Normalizes over the dims from `axis` to the last without centering:
    `result = x / sqrt(mean(x^2) + epsilon) * scale`, accumulated in f32.
    Both ONNX spellings of this computation import to this one op.

    ```mlir
    %y = tx.rms_normalization %x, %g axis(-1) eps(1.0e-06) : tensor<2x32x128xf32>, tensor<128xf32>
    ```
  }];
  let arguments = (ins Tx_FloatTensor:$input, Tx_FloatTensor:$scale,
                       DefaultValuedAttr<I64Attr, "-1">:$axis,
                       DefaultValuedAttr<F32Attr, "1.0e-05">:$epsilon);
  let results = (outs Tx_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $scale `axis` `(` $axis `)` `eps` `(` $epsilon `)` attr-dict `:` type($input) `,` type($scale)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Loss and regularization
//===----------------------------------------------------------------------===//

def Tx_SoftmaxCrossEntropyLossOp : Tx_Op<"softmax_cross_entropy_loss",
    [Tx_Differentiable, Pure, Tx_InferTypeOpAdaptor]> {
  let summary = "ONNX SoftmaxCrossEntropyLoss";
  let description = [{
    `scores` is `[N, C]` or `[N, C, d1, ..]`, `labels` `[N]` or `[N, d1, ..]`.
    `l[n, d] = -weight[c] * log_softmax(scores)[n, c, d]` with `c = labels[n, d]`;
    positions whose label equals `ignore_index` contribute 0. `mean` divides
    the sum by the summed weights of the positions not ignored; `none` keeps
    `l` (shape of `labels`).

    ```mlir
    %loss = tx.softmax_cross_entropy_loss %logits, %labels reduction(mean) {ignore_index = -100} : tensor<64x512xf32>, tensor<64xi64>
    ```
  }];
  let arguments = (ins Tx_FloatTensor:$scores, Tx_IndexTensor:$labels,
                       Optional<Tx_FloatTensor>:$weights,
                       DefaultValuedAttr<Tx_LossReductionAttr, "::mlir::txopt::tx::LossReduction::mean">:$reduction,
                       OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs Tx_FloatTensor:$result);
  let assemblyFormat = [{
    $scores `,` $labels (`,` $weights^)? `reduction` `(` custom<EnumKeyword>($reduction) `)` attr-dict
    `:` type($scores) `,` type($labels) (`,` type($weights)^)?
  }];
}

// A 0-d i64 tensor. Buildable, so assembly formats need not spell its type.
def Tx_I64ScalarTensor : 0DTensorOf<[I64]> {
  let builderCall = "::mlir::RankedTensorType::get({}, $_builder.getI64Type())";
}

def Tx_DropoutOp : Tx_Op<"dropout", [Tx_Differentiable, AllTypesMatch<["input", "result"]>]> {
  let summary = "ONNX Dropout in training mode";
  let description = [{
    `result = keep ? x * (1 / (1 - ratio)) : 0`, where `keep` is drawn per
    element with probability `1 - ratio` from a counter-based generator
    (splitmix64) keyed by the `seed` attribute, the `key` operand and the
    row-major linear element index `i`. In wrapping uint64 arithmetic (`key`
    read as the bits of its i64 value):

    ```
    s = seed + key * 0x2545F4914F6CDD1D
    z = s + (i + 1) * 0x9E3779B97F4A7C15
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
    z = (z ^ (z >> 27)) * 0x94D049BB133111EB
    z = z ^ (z >> 31)
    u = (z >> 11) * 2^-53                      // in [0, 1)
    keep = u >= ratio
    ```

    `1 / (1 - ratio)` is computed in double from the f32 `ratio`; the
    product `x * (1 / (1 - ratio))` is rounded once to the element type.

    The mask depends on nothing else (not on evaluation order), so every
    backend reproduces it from `(seed, key, i)` alone. `seed` tells the
    dropout ops of one model apart (the importer gives each its own);
    `key` tells the steps apart: tx-build-train-step feeds every dropout
    the step's `rng_key` input, so each step draws a fresh mask, and the
    gradient of a dropout is a dropout of the incoming gradient with the
    same `key` and `seed`, hence the same mask. With `key = 0` the mask is
    the one of `seed` alone. Inference-mode Dropout is removed by the
    importer, so this op always drops.

    ```mlir
    %y = tx.dropout %x, %key ratio(0.1) seed(42) : tensor<2x32x128xf32>
    ```
  }];
  let arguments = (ins Tx_FloatTensor:$input, Tx_I64ScalarTensor:$key,
                       F32Attr:$ratio, DefaultValuedAttr<I64Attr, "0">:$seed);
  let results = (outs Tx_FloatTensor:$result);
  // The key is always tensor<i64>, hence only the input's type is spelled.
  let assemblyFormat = [{
    $input `,` $key `ratio` `(` $ratio `)` `seed` `(` $seed `)` attr-dict
    `:` type($input)
  }];
  let hasVerifier = 1;
}

include "txopt/Dialect/Tx/IR/TxNormOps.td"
include "txopt/Dialect/Tx/IR/TxAttentionOps.td"
include "txopt/Dialect/Tx/IR/TxOptimOps.td"
include "txopt/Dialect/Tx/IR/TxGradOps.td"
include "txopt/Dialect/Tx/IR/TxPrecisionOps.td"
include "txopt/Dialect/Tx/IR/TxCollectiveOps.td"
include "txopt/Dialect/Tx/IR/TxGemmOps.td"

#endif // TXOPT_DIALECT_TX_IR_TXOPS_TD
