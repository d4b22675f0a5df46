//===- TxGradOps.td - gradient-only tx operations ----------*- tablegen -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// Ops that only backward passes need: the adjoints of the indexing ops
// (scatter-adds into zeros) and the fused cross-entropy gradient. Created by
// tx-differentiate (the rules in lib/Dialect/Tx/IR/*Gradients.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_DIALECT_TX_IR_TXGRADOPS_TD
#define TXOPT_DIALECT_TX_IR_TXGRADOPS_TD

include "txopt/Dialect/Tx/IR/TxBase.td"
include "txopt/Dialect/Tx/IR/TxAttrs.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// GatherGradOp
//===----------------------------------------------------------------------===//

def Tx_GatherGradOp : Tx_Op<"gather_grad", [Pure]> {
  let summary = "Adjoint of tx.gather: scatter-add slices into a zero tensor";
  let description = [{
    The gradient of `tx.gather %data, %indices {axis}` with respect to
    `data` (an embedding table's gradient). With `a` spanning the dims
    before `axis`, `i` the dims of `indices` and `b` the dims after `axis`:

    ```
    result = 0
    for every (a..., i..., b...):
      result[a..., indices[i...] (+ dim if negative), b...] += grad[a..., i..., b...]
    ```

    Rows named by several indices receive the sum of their slices (the
    order of the additions is unspecified). The result type is that of the
    gathered `data`: its `axis` dim cannot be inferred from `grad`.

    Constraints: (C1) `axis` is in `[0, rank(result))`; (C2) `grad` has
    shape `shape(result)[:axis] ++ shape(indices) ++ shape(result)[axis+1:]`;
    (C3) `grad` and `result` have one element type.

    ```mlir
    %dwte = tx.gather_grad %dx, %ids axis(0) : tensor<2x32x128xf32>, tensor<2x32xi64> -> tensor<512x128xf32>
    ```
  }];
  let arguments = (ins Tx_FloatTensor:$grad, Tx_IndexTensor:$indices,
                       I64Attr:$axis);
  let results = (outs Tx_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $indices `axis` `(` $axis `)` attr-dict
    `:` type($grad) `,` type($indices) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// GatherElementsGradOp
//===----------------------------------------------------------------------===//

def Tx_GatherElementsGradOp : Tx_Op<"gather_elements_grad", [Pure]> {
  let summary = "Adjoint of tx.gather_elements: scatter-add elements into a zero tensor";
  let description = [{
    The gradient of `tx.gather_elements %data, %indices {axis}` with respect
    to `data` (ONNX ScatterElements with `reduction = add` into zeros):

    ```
    result = 0
    for every position p = (p_0, .., p_k) of indices:
      q = p with q_axis = indices[p] (+ dim if negative)
      result[q] += grad[p]
    ```

    Constraints: (C1) `grad`, `indices` and `result` have one rank and
    `axis` is in `[0, rank)`; (C2) `grad` has the shape of `indices`;
    (C3) on every dim but `axis`, `indices` is at most as large as `result`;
    (C4) `grad` and `result` have one element type.

    ```mlir
    %dlogp = tx.gather_elements_grad %dt, %labels axis(1) : tensor<64x1xf32>, tensor<64x1xi64> -> tensor<64x512xf32>
    ```
  }];
  let arguments = (ins Tx_FloatTensor:$grad, Tx_IndexTensor:$indices,
                       I64Attr:$axis);
  let results = (outs Tx_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $indices `axis` `(` $axis `)` attr-dict
    `:` type($grad) `,` type($indices) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// GatherNDGradOp
//===----------------------------------------------------------------------===//

def Tx_GatherNDGradOp : Tx_Op<"gather_nd_grad", [Pure]> {
  let summary = "Adjoint of tx.gather_nd: scatter-add slices into a zero tensor";
  let description = [{
    The gradient of `tx.gather_nd %data, %indices {batch_dims}` with respect
    to `data` (ONNX ScatterND with `reduction = add` into zeros, extended to
    batch dims). With `b = batch_dims`, `k = shape(indices)[-1]`, `a`
    spanning the batch dims, `i` the other dims of `indices` but the last
    and `s` the dims of `result` after `b + k`:

    ```
    result = 0
    for every (a..., i..., s...):
      result[a..., indices[a..., i..., :] (each + its dim if negative), s...]
          += grad[a..., i..., s...]
    ```

    Slices addressed by several index tuples receive the sum of their
    gradients. The result type is that of the gathered `data`.

    Constraints: (C1) `0 <= b < min(rank(indices), rank(result))`;
    (C2) `shape(indices)[:b] == shape(result)[:b]`; (C3)
    `1 <= k <= rank(result) - b`; (C4) `grad` has shape
    `shape(indices)[:-1] ++ shape(result)[b + k:]` (the shape
    `tx.gather_nd` infers); (C5) `grad` and `result` have one element type.

    ```mlir
    %dx = tx.gather_nd_grad %dy, %idx batch_dims(1) : tensor<2x5x4xf32>, tensor<2x5x1xi64> -> tensor<2x3x4xf32>
    ```
  }];
  let arguments = (ins Tx_FloatTensor:$grad, Tx_IndexTensor:$indices,
                       I64Attr:$batch_dims);
  let results = (outs Tx_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $indices `batch_dims` `(` $batch_dims `)` attr-dict
    `:` type($grad) `,` type($indices) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// SliceGradOp
//===----------------------------------------------------------------------===//

def Tx_SliceGradOp : Tx_Op<"slice_grad", [Pure]> {
  let summary = "Adjoint of a strided tx.slice: write into a zero tensor";
  let description = [{
    Places `grad` at the positions a strided slice read, every other
    element being zero. `offsets` and `strides` have one entry per dim of
    `result` (the normalized ranges of `tx.slice`, see
    `SliceOp::getNormalizedRanges`, so ONNX's clamping is already applied):

    ```
    result = 0
    for every j in grad: result[offsets[d] + j[d] * strides[d] for each d] = grad[j]
    ```

    A slice with unit steps differentiates to `tx.pad` instead; this op
    covers the other steps, negative ones included (`x[::-1]`).

    Constraints: (C1) `offsets` and `strides` have `rank(result)` entries
    and `grad` has that rank; (C2) strides are non-zero; (C3) on every dim
    where `grad` is not empty, `offsets[d]` and
    `offsets[d] + (dim(grad, d) - 1) * strides[d]` lie in
    `[0, dim(result, d))`, so positions never collide or leave the result;
    (C4) `grad` and `result` have one element type.

    ```mlir
    %dx = tx.slice_grad %dy offsets [0, 1] strides [1, 2] : tensor<4x8xf32> -> tensor<4x16xf32>
    ```
  }];
  let arguments = (ins Tx_FloatTensor:$grad, DenseI64ArrayAttr:$offsets,
                       DenseI64ArrayAttr:$strides);
  let results = (outs Tx_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `offsets` $offsets `strides` $strides attr-dict
    `:` type($grad) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// SoftmaxCrossEntropyGradOp
//===----------------------------------------------------------------------===//

def Tx_SoftmaxCrossEntropyGradOp : Tx_Op<"softmax_cross_entropy_grad",
    [Pure, AllTypesMatch<["scores", "result"]>]> {
  let summary = "Gradient of tx.softmax_cross_entropy_loss with respect to the scores";
  let description = [{
    Fused gradient of `tx.softmax_cross_entropy_loss` (same operands and
    attributes) given the loss gradient `grad`. With `scores` of shape
    `[N, C, d...]`, `labels` of shape `[N, d...]`, `n, d` ranging over the
    label positions and `c` over the classes:

    ```
    p[n, c, d]  = softmax(scores, axis 1)[n, c, d]
    w[n, d]     = labels[n, d] == ignore_index ? 0
                : (weights present ? weights[labels[n, d]] : 1)
    norm        = reduction == mean ? sum_{n, d} w[n, d] : 1
    g[n, d]     = reduction == none ? grad[n, d] : grad
    result[n, c, d] = w[n, d] == 0 ? 0
                    : g[n, d] * w[n, d] / norm * (p[n, c, d] - (c == labels[n, d]))
    ```

    Positions with zero weight (ignored ones) get exactly zero, so a batch
    whose labels are all ignored gives a zero gradient rather than 0/0. The
    softmax is computed in at least f32.

    Constraints: (C1) `scores` has rank at least 2 and `labels` has shape
    `[N, d...]`; (C2) `grad` is 0-d for `mean`/`sum` and has the shape of
    `labels` for `none`; (C3) `grad` (and `weights`) have the element type
    of `scores`; (C4) `weights` has shape `[C]`.

    ```mlir
    %dlogits = tx.softmax_cross_entropy_grad %dl, %logits, %labels reduction(mean) {ignore_index = -100}
        : tensor<f32>, tensor<64x512xf32>, tensor<64xi64>
    ```
  }];
  let arguments = (ins Tx_FloatTensor:$grad, Tx_FloatTensor:$scores,
                       Tx_IndexTensor:$labels,
                       Optional<Tx_FloatTensor>:$weights,
                       DefaultValuedAttr<Tx_LossReductionAttr, "::mlir::txopt::tx::LossReduction::mean">:$reduction,
                       OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs Tx_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $scores `,` $labels (`,` $weights^)? `reduction` `(` custom<EnumKeyword>($reduction) `)` attr-dict
    `:` type($grad) `,` type($scores) `,` type($labels) (`,` type($weights)^)?
  }];
  let hasVerifier = 1;
}

#endif // TXOPT_DIALECT_TX_IR_TXGRADOPS_TD
