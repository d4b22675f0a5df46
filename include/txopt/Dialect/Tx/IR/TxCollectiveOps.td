//===- TxCollectiveOps.td - tx collectives across ranks ----*- tablegen -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// Collectives of a data-parallel step (tx-data-parallel): every rank runs
// the same function and meets the others in these ops.
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_DIALECT_TX_IR_TXCOLLECTIVEOPS_TD
#define TXOPT_DIALECT_TX_IR_TXCOLLECTIVEOPS_TD

include "txopt/Dialect/Tx/IR/TxBase.td"
include "txopt/Dialect/Tx/IR/TxAttrs.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

// The number of ranks is an attribute, fixed when the step is compiled: the
// IR has static shapes, and a shard's length is the full length / ranks.
// (Issue 15 asks for N at run time; a step compiled for N ranks is the first
// step towards it.) At least one rank.
def Tx_RankCountAttr : ConfinedAttr<I64Attr, [IntMinValue<1>]>;

// Collectives are Pure: every rank executes the same function in the same
// order (SPMD), so any rewrite a pass applies (CSE of two identical
// collectives, removal of an unused one) is applied on every rank alike and
// the ranks still meet in the same collectives.
class Tx_CollectiveOp<string mnemonic, list<Trait> traits = []>
    : Tx_Op<mnemonic, !listconcat(traits, [Pure])>;

//===----------------------------------------------------------------------===//
// AllReduceOp
//===----------------------------------------------------------------------===//

def Tx_AllReduceOp : Tx_CollectiveOp<"all_reduce", [SameOperandsAndResultType]> {
  let summary = "Combines a tensor across all ranks; every rank gets the result";
  let description = [{
    Every rank passes a tensor of the same type; every rank receives, per
    element,

    ```
    sum:  x_0 + x_1 + ... + x_(R-1)
    max:  max(x_0, x_1, ..., x_(R-1))
    mean: (x_0 + x_1 + ... + x_(R-1)) / R
    ```

    where `x_r` is rank r's tensor and R is `ranks`. The sum is taken in
    rank order, rounding to the element type after each addition (the mean
    then divides that sum and rounds once), so every rank computes the same
    bits and a run is reproducible; NCCL's ring order differs by rounding.
    With `ranks = 1` the op is the identity. A NaN in any rank's element
    makes that element NaN under `max`, as under `sum`.

    ```mlir
    %global_loss = tx.all_reduce mean %loss ranks(2) : tensor<f32>
    ```
  }];
  let arguments = (ins Tx_FloatTensor:$input,
                       Tx_CollectiveReductionAttr:$reduction,
                       Tx_RankCountAttr:$ranks);
  let results = (outs Tx_FloatTensor:$result);
  // The enum prints its own leading space, hence the empty literal.
  let assemblyFormat = [{
    `` $reduction $input `ranks` `(` $ranks `)` attr-dict `:` type($input)
  }];
}

//===----------------------------------------------------------------------===//
// ReduceScatterOp
//===----------------------------------------------------------------------===//

def Tx_ReduceScatterOp : Tx_CollectiveOp<"reduce_scatter",
    [AllElementTypesMatch<["input", "result"]>]> {
  let summary = "Combines a 1-D tensor across ranks; rank r keeps shard r";
  let description = [{
    The input is a 1-D tensor of length `L`, a multiple of R = `ranks`;
    the result has length `L / R`. Rank r receives elements
    `[r * L/R, (r + 1) * L/R)` of the all-reduced tensor (tx.all_reduce's
    formula, same rank order and rounding):

    ```
    result_r[i] = reduce(x_0[r * L/R + i], ..., x_(R-1)[r * L/R + i])
    ```

    Callers pad a tensor whose length is not a multiple of R (ZeRO-1
    pads each flattened gradient with zeros).

    ```mlir
    %shard = tx.reduce_scatter mean %grad ranks(2) : tensor<64xf32> -> tensor<32xf32>
    ```
  }];
  let arguments = (ins Tx_1DTensorOf<[AnyFloat]>:$input,
                       Tx_CollectiveReductionAttr:$reduction,
                       Tx_RankCountAttr:$ranks);
  let results = (outs Tx_1DTensorOf<[AnyFloat]>:$result);
  let assemblyFormat = [{
    `` $reduction $input `ranks` `(` $ranks `)` attr-dict `:` type($input)
    `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// AllGatherOp
//===----------------------------------------------------------------------===//

def Tx_AllGatherOp : Tx_CollectiveOp<"all_gather", [AllElementTypesMatch<["input", "result"]>]> {
  let summary = "Concatenates every rank's 1-D shard, in rank order";
  let description = [{
    Every rank passes a 1-D shard of length `S`; every rank receives the
    length `S * R` concatenation `x_0 ++ x_1 ++ ... ++ x_(R-1)` (R =
    `ranks`). It is exact: no arithmetic.

    ```mlir
    %param = tx.all_gather %shard ranks(2) : tensor<32xf32> -> tensor<64xf32>
    ```
  }];
  let arguments = (ins Tx_1DTensorOf<[AnyFloat]>:$input,
                       Tx_RankCountAttr:$ranks);
  let results = (outs Tx_1DTensorOf<[AnyFloat]>:$result);
  let assemblyFormat = [{
    $input `ranks` `(` $ranks `)` attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// RankShardOp
//===----------------------------------------------------------------------===//

def Tx_RankShardOp : Tx_CollectiveOp<"rank_shard", [AllElementTypesMatch<["input", "result"]>]> {
  let summary = "This rank's shard of a 1-D tensor every rank holds in full";
  let description = [{
    The input is a 1-D tensor of length `L`, a multiple of R = `ranks`,
    that holds the same value on every rank (a replicated parameter); rank
    r's result is its elements `[r * L/R, (r + 1) * L/R)`. No communication:
    it is a slice at an offset known only at run time, the inverse of
    tx.all_gather (`all_gather(rank_shard(x)) == x` for replicated x).

    ```mlir
    %mine = tx.rank_shard %param ranks(2) : tensor<64xf32> -> tensor<32xf32>
    ```
  }];
  let arguments = (ins Tx_1DTensorOf<[AnyFloat]>:$input,
                       Tx_RankCountAttr:$ranks);
  let results = (outs Tx_1DTensorOf<[AnyFloat]>:$result);
  let assemblyFormat = [{
    $input `ranks` `(` $ranks `)` attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

#endif // TXOPT_DIALECT_TX_IR_TXCOLLECTIVEOPS_TD
