//===- Communicator.cpp - simulated ranks of the reference executor -------===//
//
// SPDX-License-Identifier: Apache-2.0
// The barrier the simulated ranks meet in: each exchange completes when the
// last rank arrives, and a failed or missing rank ends it with an error.
//
//===----------------------------------------------------------------------===//

#include "txopt/Reference/Communicator.h"

using namespace mlir::txopt::reference;

Communicator::~Communicator() = default;

SimulatedRanks::SimulatedRanks(int64_t size, std::chrono::seconds timeout)
    : numRanks(size), timeout(timeout), slots(size) {}

void SimulatedRanks::abort(int64_t rank, const std::string &why) {
  std::lock_guard<std::mutex> lock(mutex);
  if (abortMessage.empty())
    abortMessage = "rank " + std::to_string(rank) + " failed: " + why;
  arrived.notify_all();
}

llvm::Expected<Contributions>
SimulatedRanks::exchange(int64_t rank, llvm::ArrayRef<double> mine) {
  std::unique_lock<std::mutex> lock(mutex);
  if (!abortMessage.empty())
    return llvm::createStringError(abortMessage);
  slots[rank].assign(mine.begin(), mine.end());
  if (++filled == numRanks) {
    // The last rank to arrive publishes the exchange and opens the next.
    completed = std::make_shared<const Contributions>(std::move(slots));
    slots.assign(numRanks, {});
    filled = 0;
    ++generation;
    arrived.notify_all();
    return *completed;
  }
  uint64_t myGeneration = generation;
  bool done = arrived.wait_for(lock, timeout, [&] {
    return generation != myGeneration || !abortMessage.empty();
  });
  if (generation != myGeneration)
    return *completed;
  if (!abortMessage.empty())
    return llvm::createStringError(abortMessage);
  (void)done;
  return llvm::createStringError(
      "rank " + std::to_string(rank) + " waited " +
      std::to_string(timeout.count()) +
      " s in a collective for the other ranks (did they run the same step?)");
}
