//===- StepContract.h - attribute names of the step contract ----*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// The names of the attributes a training step carries (docs/Training.md,
// "The step contract"): on the step function, its arguments and results.
// Every reader and writer of the contract (the passes that build a step,
// the dialect's verifier, the GPU lowering, the drivers, the report) spells
// them through these constants, so the contract has one spelling.
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_DIALECT_TX_IR_STEPCONTRACT_H
#define TXOPT_DIALECT_TX_IR_STEPCONTRACT_H

#include "llvm/ADT/StringRef.h"

namespace mlir::txopt::tx {

/// On the step function: its recipe (a dictionary: optimizer, loss, ...).
inline constexpr llvm::StringLiteral kTrainStepAttrName = "tx.train_step";
/// On an argument or result: the tensor's name (the ONNX initializer or
/// input it comes from, or the state it is: "w.exp_avg", "loss").
inline constexpr llvm::StringLiteral kNameAttrName = "tx.name";
/// On an argument: what it is to the step (param, exp_avg, lr, data, ...).
inline constexpr llvm::StringLiteral kRoleAttrName = "tx.role";
/// On an argument: its initial value when no checkpoint gives one.
inline constexpr llvm::StringLiteral kInitAttrName = "tx.init";
/// On a packed FP8 state argument (amax histories, scales, scale
/// inverses of many cast sites): the site of each row, in order (an array
/// of strings: "<GEMM>.lhs", "<GEMM>.rhs").
inline constexpr llvm::StringLiteral kFP8SitesAttrName = "tx.fp8_sites";
/// On an argument of a data-parallel step (tx-data-parallel): it is this
/// rank's shard of a tensor of the given shape (a DenseI64ArrayAttr),
/// flattened and zero-padded to N shards of ceil(n / N) elements, rank r
/// holding shard r. Checkpoints hold the whole tensor.
inline constexpr llvm::StringLiteral kShardOfAttrName = "tx.shard_of";
/// On a tx.reduce_scatter of a data-parallel step's gradient
/// (tx-bucket-gradient-reductions): the bucket it is sent in (an i64, 0
/// first); a bucket's reduce-scatters stand together in the backward, and
/// the GPU runs them beside it.
inline constexpr llvm::StringLiteral kBucketAttrName = "tx.bucket";
/// On a result: the argument it becomes for the next step.
inline constexpr llvm::StringLiteral kNextAttrName = "tx.next";
/// On the micro-step function of a step built with grad-accum N > 1: the
/// step function it feeds (a FlatSymbolRefAttr).
inline constexpr llvm::StringLiteral kMicroStepAttrName = "tx.micro_step";
/// On the state-init function of a step (tx-cache-fp8-weights): the step
/// whose arguments it takes and whose state it gives first values
/// (results with tx.next). Drivers run it once before the first step.
inline constexpr llvm::StringLiteral kStateInitAttrName = "tx.state_init";
/// On the evaluation function emitted with `eval`: the step it evaluates.
inline constexpr llvm::StringLiteral kEvalAttrName = "tx.eval";
/// On the logits function emitted with `eval` when the loss is a softmax
/// cross-entropy: the step whose parameters it reads.
inline constexpr llvm::StringLiteral kLogitsAttrName = "tx.logits";

} // namespace mlir::txopt::tx

#endif // TXOPT_DIALECT_TX_IR_STEPCONTRACT_H
