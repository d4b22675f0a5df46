//===- TxCollectiveOps.cpp - tx collective op verifiers -------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// Shape checks of the collectives whose result length differs from their
// input's: a shard is the full length divided by the rank count.
//
//===----------------------------------------------------------------------===//

#include "txopt/Dialect/Tx/IR/TxOps.h"

#include <string>

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::tx;

static int64_t length(Value value) {
  return cast<RankedTensorType>(value.getType()).getDimSize(0);
}

/// A full 1-D tensor of |fullLength| elements and its shard of
/// |shardLength|: the full length must split into |ranks| equal shards.
static LogicalResult verifyShardLengths(Operation *op, int64_t fullLength,
                                        int64_t shardLength, int64_t ranks) {
  if (fullLength % ranks != 0)
    return op->emitOpError("expected the full length ")
           << fullLength << " to be a multiple of ranks (" << ranks << ")";
  if (shardLength != fullLength / ranks)
    return op->emitOpError("expected shard length ")
           << fullLength / ranks << " (" << fullLength << " / " << ranks
           << " ranks), but got " << shardLength;
  return success();
}

//===----------------------------------------------------------------------===//
// ReduceScatterOp
//===----------------------------------------------------------------------===//

LogicalResult ReduceScatterOp::verify() {
  return verifyShardLengths(*this, length(getInput()), length(getResult()),
                            getRanks());
}

//===----------------------------------------------------------------------===//
// AllGatherOp
//===----------------------------------------------------------------------===//

LogicalResult AllGatherOp::verify() {
  return verifyShardLengths(*this, length(getResult()), length(getInput()),
                            getRanks());
}

//===----------------------------------------------------------------------===//
// RankShardOp
//===----------------------------------------------------------------------===//

LogicalResult RankShardOp::verify() {
  return verifyShardLengths(*this, length(getInput()), length(getResult()),
                            getRanks());
}
