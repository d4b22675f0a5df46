//===- CollectiveLowering.cpp - data-parallel collectives as NCCL calls ----===//
//
// SPDX-License-Identifier: Apache-2.0
// The collectives tx-data-parallel puts into a step (docs/DataParallel.md)
// become commands the runtime hands to its communicator (NCCL, one process
// per GPU; or threads sharing one device in tests):
//   tx.all_reduce / tx.reduce_scatter / tx.all_gather -> one CollectiveCmd,
//   tx.rank_shard -> a copy whose source moves by one shard per rank.
// The rank is not known at compile time (one artifact serves every rank),
// so the shard's offset is the runtime's: rank x the copy's rank stride.
// The operands are in memory (the grouping fuses nothing into a
// collective), so each command reads one buffer and writes another.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "txopt/Dialect/Tx/IR/TxOps.h"

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::cuda;

static CollectiveCmd::Reduction reductionOf(tx::CollectiveReduction reduction) {
  switch (reduction) {
  case tx::CollectiveReduction::sum:
    return CollectiveCmd::Reduction::Sum;
  case tx::CollectiveReduction::max:
    return CollectiveCmd::Reduction::Max;
  case tx::CollectiveReduction::mean:
    return CollectiveCmd::Reduction::Mean;
  }
  llvm_unreachable("unknown collective reduction");
}

/// Checks that |op|'s rank count is the step's (one communicator serves
/// the whole step) and records it.
static LogicalResult checkRanks(LoweringContext &ctx, Operation *op, int64_t ranks) {
  if (ctx.program.ranks != 0 && ctx.program.ranks != ranks)
    return op->emitError("expected every collective of the step to run over ")
           << ctx.program.ranks << " ranks, but this one runs over " << ranks;
  ctx.program.ranks = ranks;
  return success();
}

LogicalResult cuda::lowerCollective(LoweringContext &ctx, Operation *op) {
  Value input = op->getOperand(0), result = op->getResult(0);
  auto inputType = cast<RankedTensorType>(input.getType());
  auto resultType = cast<RankedTensorType>(result.getType());
  std::optional<DType> dtype = dtypeOf(inputType.getElementType());
  if (!dtype || *dtype == DType::F8E4M3FN || *dtype == DType::F8E5M2)
    return op->emitError("the GPU backend has no collective over ")
           << inputType.getElementType() << " tensors";
  unsigned src = ctx.bufferFor(input);
  unsigned dst = ctx.bufferFor(result);
  uint64_t elementBytes = dtypeBytes(*dtype);

  if (auto shard = dyn_cast<tx::RankShardOp>(op)) {
    if (failed(checkRanks(ctx, op, shard.getRanks())))
      return failure();
    uint64_t shardBytes = resultType.getNumElements() * elementBytes;
    ctx.copy(dst, src, shardBytes, describeOrigin(op), /*srcRankStride=*/shardBytes);
    return success();
  }

  CollectiveCmd cmd;
  cmd.dtype = *dtype;
  cmd.src = src;
  cmd.dst = dst;
  cmd.sendCount = inputType.getNumElements();
  cmd.recvCount = resultType.getNumElements();
  int64_t ranks = 0;
  if (auto allReduce = dyn_cast<tx::AllReduceOp>(op)) {
    cmd.kind = CollectiveCmd::Kind::AllReduce;
    cmd.reduction = reductionOf(allReduce.getReduction());
    ranks = allReduce.getRanks();
  } else if (auto reduceScatter = dyn_cast<tx::ReduceScatterOp>(op)) {
    cmd.kind = CollectiveCmd::Kind::ReduceScatter;
    cmd.reduction = reductionOf(reduceScatter.getReduction());
    ranks = reduceScatter.getRanks();
  } else {
    auto allGather = cast<tx::AllGatherOp>(op);
    cmd.kind = CollectiveCmd::Kind::AllGather;
    ranks = allGather.getRanks();
  }
  if (failed(checkRanks(ctx, op, ranks)))
    return failure();
  ctx.collective(cmd, op);
  return success();
}
