//===- CollectiveOps.cpp - reference kernels of the tx collectives --------===//
//
// SPDX-License-Identifier: Apache-2.0
// tx.all_reduce, tx.reduce_scatter, tx.all_gather and tx.rank_shard over the
// executor's Communicator (a single rank unless the driver simulates N).
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"

#include "txopt/Dialect/Tx/IR/TxOps.h"
#include "txopt/Reference/Communicator.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::reference;

/// The executor's communicator, checked against the rank count the op was
/// compiled for: a step for N ranks computes wrong shapes on any other count.
static llvm::Expected<Communicator *> communicatorFor(const KernelArgs &args,
                                                      int64_t compiledRanks) {
  static SingleRankCommunicator singleRank;
  Communicator *communicator =
      args.options.communicator ? args.options.communicator : &singleRank;
  if (communicator->size() != compiledRanks)
    return llvm::createStringError(
        "the step was compiled for " + std::to_string(compiledRanks) +
        " ranks, but runs on " + std::to_string(communicator->size()) +
        " (txopt-run --ranks=" + std::to_string(compiledRanks) + ")");
  return communicator;
}

/// Every rank's |input|, checked to be of one length.
static llvm::Expected<Contributions> exchangeAll(Communicator &communicator,
                                                 const Tensor &input) {
  llvm::Expected<Contributions> all = communicator.exchange(input.floats());
  if (!all)
    return all.takeError();
  for (auto [rank, contribution] : llvm::enumerate(*all))
    if (contribution.size() != input.floats().size())
      return llvm::createStringError(
          "rank " + std::to_string(rank) + " passed " +
          std::to_string(contribution.size()) + " elements, rank " +
          std::to_string(communicator.rank()) + " " +
          std::to_string(input.floats().size()));
  return all;
}

/// Elements [begin, begin + count) of the ranks' tensors reduced in rank
/// order, rounding to |elementType| after each step, so every rank gets the
/// same bits. The mean divides the rounded sum (the executor rounds that).
static std::vector<double> reduceInRankOrder(const Contributions &all,
                                             tx::CollectiveReduction reduction,
                                             Type elementType, int64_t begin,
                                             int64_t count,
                                             const ExecutorOptions &options) {
  std::vector<double> result(all.front().begin() + begin,
                             all.front().begin() + begin + count);
  for (size_t rank = 1; rank < all.size(); ++rank) {
    for (int64_t i = 0; i < count; ++i) {
      double x = all[rank][begin + i];
      double &acc = result[i];
      if (reduction == tx::CollectiveReduction::max)
        acc = (std::isnan(acc) || std::isnan(x)) ? NAN : std::max(acc, x);
      else
        acc = roundUnlessF64(elementType, acc + x, options);
    }
  }
  if (reduction == tx::CollectiveReduction::mean)
    for (double &value : result)
      value /= static_cast<double>(all.size());
  return result;
}

llvm::Expected<bool> reference::evalCollectiveOp(Operation *op,
                                                 const KernelArgs &args) {
  if (!isa<tx::AllReduceOp, tx::ReduceScatterOp, tx::AllGatherOp,
           tx::RankShardOp>(op))
    return false;
  const Tensor &input = *args.operands[0];
  Tensor result = makeResult(op);
  int64_t resultSize = result.getNumElements();
  Type elementType = input.getElementType();

  if (auto allReduce = dyn_cast<tx::AllReduceOp>(op)) {
    auto communicator = communicatorFor(args, allReduce.getRanks());
    if (!communicator)
      return communicator.takeError();
    auto all = exchangeAll(**communicator, input);
    if (!all)
      return all.takeError();
    result.floats() = reduceInRankOrder(*all, allReduce.getReduction(),
                                        elementType, 0, resultSize, args.options);
  } else if (auto reduceScatter = dyn_cast<tx::ReduceScatterOp>(op)) {
    auto communicator = communicatorFor(args, reduceScatter.getRanks());
    if (!communicator)
      return communicator.takeError();
    auto all = exchangeAll(**communicator, input);
    if (!all)
      return all.takeError();
    // Each rank reduces only its own shard of everyone's tensors: the
    // same arithmetic as an all-reduce restricted to those elements.
    result.floats() = reduceInRankOrder(
        *all, reduceScatter.getReduction(), elementType,
        (*communicator)->rank() * resultSize, resultSize, args.options);
  } else if (auto allGather = dyn_cast<tx::AllGatherOp>(op)) {
    auto communicator = communicatorFor(args, allGather.getRanks());
    if (!communicator)
      return communicator.takeError();
    auto all = exchangeAll(**communicator, input);
    if (!all)
      return all.takeError();
    std::vector<double> &out = result.floats();
    out.clear();
    for (const std::vector<double> &shard : *all)
      out.insert(out.end(), shard.begin(), shard.end());
  } else {
    auto rankShard = cast<tx::RankShardOp>(op);
    auto communicator = communicatorFor(args, rankShard.getRanks());
    if (!communicator)
      return communicator.takeError();
    int64_t begin = (*communicator)->rank() * resultSize;
    std::copy(input.floats().begin() + begin,
              input.floats().begin() + begin + resultSize,
              result.floats().begin());
  }
  args.results.push_back(std::move(result));
  return true;
}
