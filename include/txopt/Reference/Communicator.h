//===- Communicator.h - collectives for the reference executor --*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// The in-process communicator the CPU executor runs tx.all_reduce,
// tx.reduce_scatter, tx.all_gather and tx.rank_shard against: one rank by
// default, or N simulated ranks on N threads of one process.
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_REFERENCE_COMMUNICATOR_H
#define TXOPT_REFERENCE_COMMUNICATOR_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace mlir::txopt::reference {

/// Every rank's contribution to one collective, in rank order.
using Contributions = std::vector<std::vector<double>>;

/// What the executor's collective kernels need from the ranks: who this rank
/// is, how many there are, and one primitive, an exchange in which every
/// rank hands in a vector and gets all of them back in rank order. Each
/// kernel then reduces the contributions itself in rank order (rank 0 +
/// rank 1 + ...), so every rank computes the same bits without trusting a
/// transport's reduction order.
class Communicator {
public:
  virtual ~Communicator();
  virtual int64_t rank() const = 0;
  virtual int64_t size() const = 0;
  /// Blocks until every rank has called it, then returns every rank's
  /// |mine|. Fails (never hangs) when another rank failed or a rank does
  /// not arrive within the timeout.
  virtual llvm::Expected<Contributions> exchange(llvm::ArrayRef<double> mine) = 0;
};

/// One rank: the collectives of a step compiled for one rank are identities.
class SingleRankCommunicator final : public Communicator {
public:
  int64_t rank() const override { return 0; }
  int64_t size() const override { return 1; }
  llvm::Expected<Contributions> exchange(llvm::ArrayRef<double> mine) override {
    return Contributions{std::vector<double>(mine.begin(), mine.end())};
  }
};

/// N simulated ranks in one process, one thread each: the state they meet
/// in. Create one per run and a ThreadRankCommunicator per rank.
class SimulatedRanks {
public:
  explicit SimulatedRanks(int64_t size,
                          std::chrono::seconds timeout = std::chrono::seconds(300));
  int64_t size() const { return numRanks; }
  /// Ends every exchange in progress and every later one with an error
  /// naming |rank| and |why|: a rank that failed must not leave the others
  /// waiting for it.
  void abort(int64_t rank, const std::string &why);

private:
  friend class ThreadRankCommunicator;
  llvm::Expected<Contributions> exchange(int64_t rank,
                                         llvm::ArrayRef<double> mine);

  const int64_t numRanks;
  const std::chrono::seconds timeout;
  std::mutex mutex;
  std::condition_variable arrived;
  /// The exchange being assembled: one slot per rank, and how many ranks
  /// have filled theirs.
  Contributions slots;
  int64_t filled = 0;
  /// Counts completed exchanges; a waiter leaves when it changes.
  uint64_t generation = 0;
  /// The last completed exchange. The next one cannot complete before every
  /// rank has taken its copy, since it needs every rank to arrive again.
  std::shared_ptr<const Contributions> completed;
  std::string abortMessage;
};

/// Rank |rank| of a SimulatedRanks.
class ThreadRankCommunicator final : public Communicator {
public:
  ThreadRankCommunicator(SimulatedRanks &ranks, int64_t rank)
      : ranks(ranks), myRank(rank) {}
  int64_t rank() const override { return myRank; }
  int64_t size() const override { return ranks.size(); }
  llvm::Expected<Contributions> exchange(llvm::ArrayRef<double> mine) override {
    return ranks.exchange(myRank, mine);
  }

private:
  SimulatedRanks &ranks;
  int64_t myRank;
};

} // namespace mlir::txopt::reference

#endif // TXOPT_REFERENCE_COMMUNICATOR_H
