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

#include "KernelBuilder.h"
#include "Lowering.h"

#include "txopt/Dialect/Tx/IR/StepContract.h"
#include "txopt/Dialect/Tx/IR/TxOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

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

/// The step argument whose next value |gather| is, when the gather can
/// write it in place: its result reaches the return only through reshapes
/// (views), fills the argument exactly (no padding to cut off), and nothing
/// reads the argument's old value after the gather. Then the gather's
/// buffer is the argument's, and the copy of the next-step value and a
/// parameter-sized temporary go away (ZeRO-1's parameters are all-gathered
/// straight into place).
static std::optional<BlockArgument> gatheredInPlace(LoweringContext &ctx,
                                                    tx::AllGatherOp gather) {
  Value value = gather.getResult();
  while (value.hasOneUse() && isa<tx::ReshapeOp>(*value.getUsers().begin()))
    value = value.getUsers().begin()->getResult(0);
  if (!value.hasOneUse())
    return std::nullopt;
  OpOperand &use = *value.getUses().begin();
  auto ret = dyn_cast<func::ReturnOp>(use.getOwner());
  if (!ret)
    return std::nullopt;
  auto func = cast<func::FuncOp>(ret->getParentOp());
  auto next = func.getResultAttrOfType<IntegerAttr>(use.getOperandNumber(), tx::kNextAttrName);
  if (!next || next.getInt() < 0 ||
      next.getInt() >= static_cast<int64_t>(func.getNumArguments()))
    return std::nullopt;
  BlockArgument arg = func.getArgument(next.getInt());
  if (cast<RankedTensorType>(arg.getType()).getNumElements() !=
          gather.getType().getNumElements() ||
      cast<RankedTensorType>(arg.getType()).getElementType() !=
          gather.getType().getElementType())
    return std::nullopt;
  // Every reader of the old value, through views and values computed
  // inside their readers' kernels, is lowered before the gather: it comes
  // before it in the block, no plan moves it later (ops held back to run
  // after another, scale updates flushed at the end), and it does not
  // return the old value. An op lowered inside another op's kernel (a
  // residual add inside its norm) is followed to its users, among which is
  // that op. (A copy written by a column sum's kernel is lowered earlier,
  // not later: RecomputeScheduling moves the sum up to it.)
  llvm::SmallVector<Value> work{arg};
  llvm::DenseSet<Value> seen;
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (!seen.insert(v).second)
      continue;
    for (Operation *reader : v.getUsers()) {
      if (reader == ret.getOperation() || !reader->isBeforeInBlock(gather) ||
          ctx.deferredAfter.count(reader) ||
          isa<tx::FP8ScaleUpdateOp>(reader))
        return std::nullopt;
      for (Value r : reader->getResults())
        if (isViewOp(reader) || !ctx.plan.isMaterialized(r) ||
            ctx.loweredElsewhere.contains(reader))
          work.push_back(r);
    }
  }
  if (ctx.bufferOfValue.count(gather.getResult()))
    return std::nullopt;
  return arg;
}

/// The asynchronous group a reduce-scatter of |bucket| joins: the open one
/// when the command before is a collective of it, else a new pending group
/// (always a new one for a collective |alone|).
static unsigned asyncGroupFor(LoweringContext &ctx, int64_t bucket, bool alone = false) {
  const std::vector<Command> &commands = ctx.program.commands;
  if (!alone && !commands.empty() && !ctx.pendingGroups.empty() &&
      ctx.pendingGroups.back().bucket == bucket)
    if (auto *last = std::get_if<CollectiveCmd>(&commands.back().op))
      if (last->asyncGroup == ctx.pendingGroups.back().id)
        return last->asyncGroup;
  LoweringContext::PendingGroup group;
  group.id = ++ctx.asyncGroups;
  group.bucket = bucket;
  ctx.pendingGroups.push_back(group);
  return group.id;
}

LogicalResult cuda::lowerCollective(LoweringContext &ctx, Operation *op) {
  Value input = op->getOperand(0), result = op->getResult(0);
  auto inputType = cast<RankedTensorType>(input.getType());
  auto resultType = cast<RankedTensorType>(result.getType());
  std::optional<DType> dtype = dtypeOf(inputType.getElementType());
  if (!dtype || *dtype == DType::F8E4M3FN || *dtype == DType::F8E5M2)
    return op->emitError("the GPU backend has no collective over ")
           << inputType.getElementType() << " tensors";
  if (auto gather = dyn_cast<tx::AllGatherOp>(op))
    if (std::optional<BlockArgument> arg = gatheredInPlace(ctx, gather))
      ctx.bufferOfValue[result] = ctx.bufferFor(*arg);
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
    // The amaxes a delayed scale update reads (tx-data-parallel's max over
    // the ranks), in a step whose reduce-scatters run beside the backward:
    // the update itself waits for the step's end, and NCCL runs one
    // communicator's calls in the order they were issued, so this
    // all-reduce on the main stream would hold the backward until every
    // bucket before it was done. Beside the backward too, in a group of its
    // own, it keeps them going.
    bool forDelayedScaling =
        allReduce.getReduction() == tx::CollectiveReduction::max &&
        !result.use_empty() && llvm::all_of(result.getUsers(), [](Operation *user) {
          return isa<tx::FP8ScaleUpdateOp>(user);
        });
    auto bucketed = [&] {
      auto func = op->getParentOfType<func::FuncOp>();
      bool any = false;
      func.walk([&](tx::ReduceScatterOp rs) {
        any |= rs->hasAttr(tx::kBucketAttrName);
      });
      return any;
    };
    if (forDelayedScaling && bucketed()) {
      ctx.awaitCollectivesTouching({src, dst});
      cmd.asyncGroup = asyncGroupFor(ctx, /*bucket=*/-1, /*alone=*/true);
    }
  } else if (auto reduceScatter = dyn_cast<tx::ReduceScatterOp>(op)) {
    cmd.kind = CollectiveCmd::Kind::ReduceScatter;
    cmd.reduction = reductionOf(reduceScatter.getReduction());
    ranks = reduceScatter.getRanks();
    // A bucket's reduce-scatters (tx-bucket-gradient-reductions), right
    // after each other: one asynchronous group, which runs beside the
    // commands after it until one of them touches its buffers.
    if (auto bucket = op->getAttrOfType<IntegerAttr>(tx::kBucketAttrName)) {
      // A join this collective needs comes before the group is chosen: it
      // may end the open group, and a group's collectives stand together.
      ctx.awaitCollectivesTouching({src, dst});
      cmd.asyncGroup = asyncGroupFor(ctx, bucket.getInt());
    }
  } else {
    auto allGather = cast<tx::AllGatherOp>(op);
    cmd.kind = CollectiveCmd::Kind::AllGather;
    ranks = allGather.getRanks();
  }
  if (failed(checkRanks(ctx, op, ranks)))
    return failure();
  ctx.collective(cmd, op);
  // Registered after the command, which must not wait for itself.
  if (cmd.asyncGroup)
    ctx.pendingGroups.back().buffers.append({ctx.rootOf(src), ctx.rootOf(dst)});
  return success();
}
