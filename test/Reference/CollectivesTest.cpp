//===- CollectivesTest.cpp - the collectives on simulated ranks -----------===//
//
// SPDX-License-Identifier: Apache-2.0
// The reference executor's collectives on N threads meeting in a
// SimulatedRanks (collectives.test runs it): each op's values against the
// formulas of TxCollectiveOps.td, the rank-order f32 rounding, a rank
// count that is not the step's, and that a failed or missing rank ends the
// others' waits with an error instead of a hang. One line per check; exit 1
// on any failure.
//
//===----------------------------------------------------------------------===//

#include "txopt/InitAll.h"
#include "txopt/Reference/Communicator.h"
#include "txopt/Reference/Executor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <chrono>
#include <cmath>
#include <optional>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

using namespace mlir;
using namespace mlir::txopt::reference;

namespace {

const char *kModule = R"mlir(
func.func @collectives(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>,
    tensor<2xf32>, tensor<8xf32>, tensor<2xf32>) {
  %sum = tx.all_reduce sum %x ranks(2) : tensor<4xf32>
  %max = tx.all_reduce max %x ranks(2) : tensor<4xf32>
  %mean = tx.all_reduce mean %x ranks(2) : tensor<4xf32>
  %shard = tx.reduce_scatter sum %x ranks(2) : tensor<4xf32> -> tensor<2xf32>
  %full = tx.all_gather %x ranks(2) : tensor<4xf32> -> tensor<8xf32>
  %mine = tx.rank_shard %x ranks(2) : tensor<4xf32> -> tensor<2xf32>
  return %sum, %max, %mean, %shard, %full, %mine
      : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2xf32>, tensor<8xf32>, tensor<2xf32>
}
func.func @three(%x: tensor<1xf32>) -> tensor<1xf32> {
  %sum = tx.all_reduce sum %x ranks(3) : tensor<1xf32>
  return %sum : tensor<1xf32>
}
)mlir";

int failures = 0;

void check(bool ok, const std::string &what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAILED", what.c_str());
  failures += !ok;
}

bool equal(const Tensor &tensor, const std::vector<double> &want) {
  return tensor.floats() == want;
}

/// Runs |name| on |ranks.size()| threads, rank r on |inputs[r]|.
std::vector<llvm::Expected<std::vector<Tensor>>>
runRanks(ModuleOp module, llvm::StringRef name,
         const std::vector<std::vector<double>> &inputs, SimulatedRanks &ranks) {
  auto func = module.lookupSymbol<func::FuncOp>(name);
  auto type = cast<RankedTensorType>(func.getArgument(0).getType());
  std::vector<std::optional<llvm::Expected<std::vector<Tensor>>>> out(inputs.size());
  std::vector<std::thread> threads;
  for (size_t r = 0; r < inputs.size(); ++r)
    threads.emplace_back([&, r] {
      ThreadRankCommunicator communicator(ranks, r);
      ExecutorOptions options;
      options.communicator = &communicator;
      Executor executor(module, options);
      Tensor x(type);
      x.floats() = inputs[r];
      out[r].emplace(executor.run(func, {x}));
    });
  for (std::thread &thread : threads)
    thread.join();
  std::vector<llvm::Expected<std::vector<Tensor>>> results;
  for (auto &result : out)
    results.push_back(std::move(*result));
  return results;
}

} // namespace

int main() {
  DialectRegistry registry;
  mlir::txopt::registerAllDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(kModule, &context);
  if (!module) {
    std::fprintf(stderr, "collectives: cannot parse the test module\n");
    return 1;
  }

  // Two ranks, each op against its formula.
  {
    SimulatedRanks ranks(2);
    auto results = runRanks(*module, "collectives",
                            {{1, -2, 3, 0.5}, {10, 20, -30, 0.25}}, ranks);
    for (size_t r = 0; r < results.size(); ++r) {
      if (!results[r]) {
        check(false, "rank " + std::to_string(r) + ": " +
                         llvm::toString(results[r].takeError()));
        continue;
      }
      std::vector<Tensor> &out = *results[r];
      std::string rank = "rank " + std::to_string(r) + " ";
      check(equal(out[0], {11, 18, -27, 0.75}), rank + "all_reduce sum");
      check(equal(out[1], {10, 20, 3, 0.5}), rank + "all_reduce max");
      check(equal(out[2], {5.5, 9, -13.5, 0.375}), rank + "all_reduce mean");
      check(equal(out[3], r == 0 ? std::vector<double>{11, 18}
                                 : std::vector<double>{-27, 0.75}),
            rank + "reduce_scatter sum keeps shard r");
      check(equal(out[4], {1, -2, 3, 0.5, 10, 20, -30, 0.25}),
            rank + "all_gather concatenates in rank order");
      // rank_shard reads only this rank's tensor (it assumes a replicated
      // one): elements [2r, 2r + 2) of rank r's own input.
      check(equal(out[5], r == 0 ? std::vector<double>{1, -2}
                                 : std::vector<double>{-30, 0.25}),
            rank + "rank_shard takes shard r");
    }
  }

  // Three ranks holding 1, 2^-24, 2^-24: in rank order with a rounding to
  // f32 after each addition, 1 + 2^-24 ties to even (1) twice, so the sum is
  // 1 on every rank; one rounding of the exact sum would give 1 + 2^-23.
  {
    SimulatedRanks ranks(3);
    double ulp = std::ldexp(1.0, -23);
    auto results = runRanks(*module, "three", {{1.0}, {ulp / 2}, {ulp / 2}}, ranks);
    bool same = true, allOk = true;
    for (auto &result : results) {
      if (!result) {
        allOk = false;
        llvm::consumeError(result.takeError());
        continue;
      }
      same = same && (*result)[0].floats()[0] == 1.0;
    }
    check(allOk && same, "3 ranks: sum rounds to f32 after each addition in rank order, on every rank");
  }

  // A step for 2 ranks on one rank (no communicator) is an error naming both.
  {
    Executor executor(*module);
    auto func = module->lookupSymbol<func::FuncOp>("collectives");
    Tensor x(cast<RankedTensorType>(func.getArgument(0).getType()));
    auto result = executor.run(func, {x});
    std::string message = result ? "" : llvm::toString(result.takeError());
    check(message.find("compiled for 2 ranks, but runs on 1") != std::string::npos,
          "one rank: " + message);
  }

  // A rank that fails ends the waits of the others: rank 1 aborts instead of
  // arriving; rank 0, already waiting, gets rank 1's error.
  {
    SimulatedRanks ranks(2);
    std::string message;
    std::thread waiter([&] {
      ThreadRankCommunicator rank0(ranks, 0);
      auto got = rank0.exchange({1.0});
      message = got ? "" : llvm::toString(got.takeError());
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ranks.abort(1, "out of memory");
    waiter.join();
    check(message == "rank 1 failed: out of memory",
          "a failed rank ends the wait: " + message);
    ThreadRankCommunicator rank0(ranks, 0);
    auto later = rank0.exchange({1.0});
    std::string laterMessage = later ? "" : llvm::toString(later.takeError());
    check(laterMessage == "rank 1 failed: out of memory",
          "and every later exchange fails at once");
  }

  // A rank that never arrives: the waiting rank times out with an error.
  {
    SimulatedRanks ranks(2, std::chrono::seconds(1));
    ThreadRankCommunicator rank0(ranks, 0);
    auto got = rank0.exchange({1.0});
    std::string message = got ? "" : llvm::toString(got.takeError());
    check(message.find("rank 0 waited 1 s in a collective") != std::string::npos,
          "a missing rank times out: " + message);
  }

  // Many rounds in a row: no exchange may see the next one's contributions.
  {
    SimulatedRanks ranks(4);
    std::vector<int> bad(4, 0);
    std::vector<std::thread> threads;
    for (int r = 0; r < 4; ++r)
      threads.emplace_back([&, r] {
        ThreadRankCommunicator me(ranks, r);
        for (int round = 0; round < 2000; ++round) {
          auto got = me.exchange({static_cast<double>(round * 10 + r)});
          if (!got) {
            llvm::consumeError(got.takeError());
            ++bad[r];
            return;
          }
          for (int k = 0; k < 4; ++k)
            bad[r] += (*got)[k] != std::vector<double>{double(round * 10 + k)};
        }
      });
    for (std::thread &thread : threads)
      thread.join();
    check(bad == std::vector<int>(4, 0), "4 ranks x 2000 exchanges, each sees its own round");
  }

  std::printf("collectives: %d failures\n", failures);
  return failures ? 1 : 0;
}
