//===- thread_communicator.h - ranks as threads of one process -*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// The data-parallel ranks of a test or of a single-GPU check: N threads of
// one process, each with its own hal::Device (possibly the same device for
// all, which NCCL refuses). Each collective copies the send buffer to the
// host, meets the other ranks, reduces on the host in rank order (rank 0 +
// rank 1 + ..., rounding to the element type after each addition, as
// docs/DataParallel.md specifies and the CPU executor's simulated ranks do)
// and copies the result back. Every rank computes the same bits, and they
// are the reference executor's bits, which NCCL's ring order is not.
//
//===----------------------------------------------------------------------===//

#ifndef TXRT_HAL_THREAD_COMMUNICATOR_H
#define TXRT_HAL_THREAD_COMMUNICATOR_H

#include "hal/hal.h"

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace txrt::hal {

/// Elements [begin, begin + count) of each rank's contribution (host memory,
/// all of |type|) reduced in rank order into |out| (count elements):
///   Sum  acc = x0; acc = round(acc + x_r) for r = 1, 2, ...
///   Mean round(Sum / N), N = contributions.size()
///   Max  the largest; NaN if any is NaN (so a diverged rank is not hidden)
/// round() is one round-to-nearest-even to |type|. Floats: F32, F64, BF16,
/// F16 (Sum, Max, Mean). Integers: I8, I32, I64 (Sum wrapping at the width,
/// Max). Anything else, or Mean of integers: TXRT_INVALID_ARGUMENT.
Status reduceInRankOrder(const std::vector<const void *> &contributions, void *out,
                         size_t count, fb::DType type, Communicator::Reduction op,
                         size_t begin);

/// What every rank handed in to one exchange, indexed by rank.
struct ThreadExchange {
  std::vector<std::vector<uint8_t>> data;
  /// What each rank was doing ("allReduce sum of 8 f32"): ranks that did not
  /// run the same collective fail instead of reading each other's buffers
  /// with the wrong size.
  std::vector<std::string> descriptions;
};

/// Where N rank threads meet; shared by their communicators. Once any rank
/// fails or times out the group stays failed: every call in progress and
/// every later one returns that error, so no rank is left waiting.
class ThreadGroup {
public:
  /// |timeoutSeconds|: how long a rank waits at an exchange for the others.
  ThreadGroup(int size, double timeoutSeconds);
  int size() const { return size_; }
  double timeoutSeconds() const { return timeoutSeconds_; }

  /// Records that |rank| failed (keeping the first failure only) and wakes
  /// every waiting rank with "rank R failed: |message|".
  void fail(int rank, const std::string &message);
  /// OK, or the group's failure.
  Status status() const;

  /// Hands in |rank|'s |data| and blocks until every rank has handed in its
  /// own, then returns all of them. Fails when the group failed, when a rank
  /// does not arrive within the timeout (failing the group, naming the
  /// missing ranks), or when the ranks' descriptions differ.
  Status exchange(int rank, std::string description, std::vector<uint8_t> data,
                  std::shared_ptr<const ThreadExchange> &out);

private:
  void failLocked(Status failure);

  const int size_;
  const double timeoutSeconds_;
  mutable std::mutex mutex_;
  std::condition_variable completedOrFailed_;
  /// The exchange being assembled.
  ThreadExchange pending_;
  std::vector<bool> arrived_;
  int arrivedCount_ = 0;
  /// Counts completed exchanges; a waiting rank leaves when it changes.
  uint64_t generation_ = 0;
  /// The last completed exchange. The next cannot complete (and replace it)
  /// before every rank has arrived again, so every waiter reads this one.
  std::shared_ptr<const ThreadExchange> completed_;
  Status failure_;
};

/// Rank |rank| (0 <= rank < group->size(), nullptr otherwise) of |group|.
/// kind() "threads"; capturable() false (its host copies cannot be recorded
/// into a CUDA graph). A collective's error also fails the group, so the
/// other ranks' calls end with it instead of waiting for the timeout.
std::unique_ptr<Communicator> createThreadCommunicator(std::shared_ptr<ThreadGroup> group,
                                                       int rank);

} // namespace txrt::hal

#endif // TXRT_HAL_THREAD_COMMUNICATOR_H
