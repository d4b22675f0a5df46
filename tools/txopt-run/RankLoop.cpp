//===- RankLoop.cpp - txopt-run --steps --ranks N: simulated ranks --------===//
//
// SPDX-License-Identifier: Apache-2.0
// Runs a data-parallel step (tx-data-parallel) on N threads of this
// process, one per rank, that meet in the step's collectives through the
// reference executor's in-process communicator.
//
//===----------------------------------------------------------------------===//

#include "StepRunner.h"

#include "txopt/Dialect/Tx/Transforms/TrainStep.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::reference;
using namespace txopt_run;

llvm::Error StepRunner::checkRanks() {
  auto recipe = func->getAttrOfType<DictionaryAttr>(tx::kTrainStepAttrName);
  auto compiled = recipe ? recipe.getAs<IntegerAttr>("data_parallel") : nullptr;
  int64_t stepRanks = compiled ? compiled.getInt() : 1;
  if (stepRanks != options.ranks)
    return error(stepRanks == 1
                     ? "--ranks " + llvm::Twine(options.ranks) +
                           " needs a data-parallel step (txopt --train "
                           "--data-parallel=" + llvm::Twine(options.ranks) +
                           "), but '" + func.getName() + "' is a plain one"
                     : "'" + func.getName() + "' is a step for " +
                           llvm::Twine(stepRanks) + " ranks; run it with --ranks " +
                           llvm::Twine(stepRanks));
  return llvm::Error::success();
}

/// Whether two doubles hold the same bits (NaN included).
static bool sameBits(double a, double b) {
  return std::memcmp(&a, &b, sizeof(double)) == 0;
}

llvm::Error StepRunner::runRanks(int64_t step) {
  int64_t numRanks = options.ranks;
  if (rankArgs.empty()) {
    simulatedRanks = std::make_unique<SimulatedRanks>(numRanks);
    auto module = func->getParentOfType<ModuleOp>();
    for (int64_t r = 0; r < numRanks; ++r) {
      communicators.push_back(
          std::make_unique<ThreadRankCommunicator>(*simulatedRanks, r));
      ExecutorOptions rankOptions = executor.getOptions();
      rankOptions.communicator = communicators.back().get();
      rankExecutors.push_back(std::make_unique<Executor>(module, rankOptions));
    }
    // Every rank starts from the same state: the parameters and tx.init
    // splats (a moment's shard of zeros is zeros), or a checkpoint's, each
    // rank with its own shard of the sharded state.
    rankArgs.assign(numRanks, args);
    for (auto &[arg, whole] : resumedWhole)
      for (int64_t r = 0; r < numRanks; ++r)
        rankArgs[r][arg] =
            shardOf(whole, cast<RankedTensorType>(func.getArgument(arg).getType()), r);
    resumedWhole.clear(); // the ranks hold their shards now
  }

  auto started = std::chrono::steady_clock::now();
  // One window of N x B rows per micro-batch (one per step without
  // gradient accumulation), taken in order as the plain step's loop does.
  std::vector<std::optional<int64_t>> offsets(gradAccum);
  if (windows)
    for (std::optional<int64_t> &offset : offsets)
      offset = windows->next();
  // Micro-batch |m| (0-based; the step runs the last) on rank |r|: rows
  // r*B .. (r+1)*B - 1 of the micro-batch's window, and the micro-batch's
  // dropout key, the same on every rank.
  auto setRankInputs = [&](int64_t r, int64_t m) {
    setBatchInputs(rankArgs[r], step, m, offsets[m], r);
  };
  if (schedule)
    for (int64_t r = 0; r < numRanks; ++r)
      rankArgs[r][*lrArg].floats()[0] = schedule->at(step);
  double lr = lrArg ? static_cast<double>(
                          static_cast<float>(rankArgs[0][*lrArg].floats()[0]))
                    : 0;

  std::vector<std::vector<Tensor>> outputs(numRanks);
  std::vector<std::string> failures(numRanks);
  // The rank that failed first; the others then fail because it left.
  std::atomic<int64_t> firstFailed{-1};
  auto fail = [&](int64_t r, std::string message) {
    failures[r] = std::move(message);
    int64_t none = -1;
    firstFailed.compare_exchange_strong(none, r);
    simulatedRanks->abort(r, failures[r]);
  };
  std::vector<std::thread> threads;
  for (int64_t r = 0; r < numRanks; ++r)
    threads.emplace_back([&, r] {
      // Gradient accumulation: each rank adds its micro-batches 1..N-1 into
      // its own accumulators (the micro-step has no collective); the step
      // runs the last one and reduces.
      for (int64_t m = 0; m + 1 < gradAccum; ++m) {
        setRankInputs(r, m);
        auto results = rankExecutors[r]->run(micro, rankArgs[r]);
        if (!results)
          return fail(r, "micro-batch " + std::to_string(m + 1) + ": " +
                             llvm::toString(results.takeError()));
        for (auto [result, arg] : microCarried)
          rankArgs[r][arg] = (*results)[result];
      }
      setRankInputs(r, gradAccum - 1);
      auto results = rankExecutors[r]->run(func, rankArgs[r]);
      if (results) {
        outputs[r] = std::move(*results);
        return;
      }
      fail(r, llvm::toString(results.takeError()));
    });
  for (std::thread &thread : threads)
    thread.join();
  double ms = std::chrono::duration<double, std::milli>(
                  std::chrono::steady_clock::now() - started)
                  .count();
  if (int64_t r = firstFailed.load(); r >= 0)
    return error("step " + llvm::Twine(step) + ", rank " + llvm::Twine(r) +
                 ": " + failures[r]);

  // The collectives reduce in rank order on every rank, so the ranks must
  // agree exactly; a difference is a bug in the step or the executor.
  for (std::optional<unsigned> index : {lossIndex, normIndex}) {
    if (!index)
      continue;
    for (int64_t r = 1; r < numRanks; ++r)
      if (!sameBits(outputs[r][*index].getDouble(0),
                    outputs[0][*index].getDouble(0)))
        return error("step " + llvm::Twine(step) + ": rank " + llvm::Twine(r) +
                     " computed " +
                     (index == lossIndex ? "the loss" : "the gradient norm") +
                     " differently from rank 0 (the ranks must agree)");
  }
  double loss = outputs[0][*lossIndex].getDouble(0);
  double norm = normIndex ? outputs[0][*normIndex].getDouble(0) : 0.0;
  // Loss scaling: every rank skips together (the step all-reduces the
  // finite check), as the plain step's loop reports it.
  bool skipped = skippedIndex && outputs[0][*skippedIndex].getInt(0) != 0;
  for (int64_t r = 1; skippedIndex && r < numRanks; ++r)
    if ((outputs[r][*skippedIndex].getInt(0) != 0) != skipped)
      return error("step " + llvm::Twine(step) + ": rank " + llvm::Twine(r) +
                   " decided differently from rank 0 whether to skip the step");
  printStep(step, loss, norm, skipped, lr, outputs[0]);
  if (log)
    logStep(step, loss, norm, skipped, lr, ms);
  if (!std::isfinite(loss) || (!std::isfinite(norm) && !skipped))
    return stopOnNonFinite(step, loss, norm);
  for (int64_t r = 0; r < numRanks; ++r)
    for (auto [result, arg] : carried)
      rankArgs[r][arg] = outputs[r][result];
  // Rank 0's results for --output-dir: the parameters are whole on every
  // rank; the optimizer state is rank 0's shard.
  last = std::move(outputs[0]);
  return saveDue(step) ? save(step) : llvm::Error::success();
}
