//===- rendezvous_test.cpp - rank 0 hands its blob to the others ----------===//
//
// SPDX-License-Identifier: Apache-2.0
// Ranks are threads on 127.0.0.1. A missing rank or a rank of a job with
// another world size must end in a message within the timeout, not a hang.
//
//===----------------------------------------------------------------------===//

#include "core/rendezvous.h"

#include <chrono>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

using Blob = std::array<uint8_t, txrt::kRendezvousBlobBytes>;
using Clock = std::chrono::steady_clock;

/// A port nothing listens on right now: bind port 0, read what the kernel
/// chose, release it. (Another process could take it in between; that is
/// unlikely enough for a test.)
int freePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  EXPECT_GE(fd, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr *>(&address), sizeof(address)), 0);
  socklen_t length = sizeof(address);
  EXPECT_EQ(::getsockname(fd, reinterpret_cast<sockaddr *>(&address), &length), 0);
  ::close(fd);
  return ntohs(address.sin_port);
}

txrt::LaunchEnvironment rankOf(int rank, int worldSize, int port) {
  txrt::LaunchEnvironment env;
  env.rank = rank;
  env.worldSize = worldSize;
  env.localRank = rank;
  env.masterAddr = "127.0.0.1";
  env.masterPort = port;
  env.source = "test";
  return env;
}

Blob patterned(uint8_t seed) {
  Blob blob;
  for (size_t i = 0; i < blob.size(); ++i)
    blob[i] = static_cast<uint8_t>(seed + 7 * i);
  return blob;
}

struct Outcome {
  txrt::Status status;
  Blob blob{};
};

/// Runs each of |ranks| on its own thread (rank 0's blob patterned(1), the
/// others' patterned(99)) and returns what each got.
std::vector<Outcome> runRanks(const std::vector<txrt::LaunchEnvironment> &ranks,
                              double timeoutSeconds) {
  std::vector<Outcome> outcomes(ranks.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < ranks.size(); ++i)
    threads.emplace_back([&, i] {
      outcomes[i].blob = patterned(ranks[i].rank == 0 ? 1 : 99);
      outcomes[i].status =
          txrt::exchangeRendezvousBlob(ranks[i], outcomes[i].blob, timeoutSeconds);
    });
  for (std::thread &thread : threads)
    thread.join();
  return outcomes;
}

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

TEST(Rendezvous, EveryRankGetsRankZerosBlob) {
  int port = freePort();
  // The other ranks start first: they must retry while rank 0 is not up.
  std::vector<Outcome> outcomes =
      runRanks({rankOf(2, 3, port), rankOf(1, 3, port), rankOf(0, 3, port)}, 10);
  for (const Outcome &outcome : outcomes) {
    ASSERT_TRUE(outcome.status.ok()) << outcome.status.message();
    EXPECT_EQ(outcome.blob, patterned(1));
  }
}

TEST(Rendezvous, OneRankOpensNoSocket) {
  Blob blob = patterned(5);
  // Port 0 would fail to connect or listen meaningfully; one rank never tries.
  txrt::Status status = txrt::exchangeRendezvousBlob(rankOf(0, 1, 0), blob, 0.1);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(blob, patterned(5));
}

TEST(Rendezvous, MissingRankTimesOut) {
  int port = freePort();
  auto start = Clock::now();
  std::vector<Outcome> outcomes = runRanks({rankOf(0, 3, port), rankOf(1, 3, port)}, 1.0);
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_LT(seconds, 5.0);
  EXPECT_TRUE(outcomes[1].status.ok()) << outcomes[1].status.message();
  EXPECT_EQ(outcomes[1].blob, patterned(1));
  EXPECT_EQ(outcomes[0].status.code(), TXRT_UNAVAILABLE);
  EXPECT_EQ(outcomes[0].status.message(),
            "rendezvous: rank 0 (listening on 127.0.0.1:" + std::to_string(port) +
                ") did not hear from 1 of 3 ranks (rank 2) within 1 s");
}

TEST(Rendezvous, MissingRankZeroTimesOut) {
  int port = freePort();
  auto start = Clock::now();
  std::vector<Outcome> outcomes = runRanks({rankOf(1, 2, port)}, 1.0);
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_LT(seconds, 5.0);
  EXPECT_EQ(outcomes[0].status.code(), TXRT_UNAVAILABLE);
  EXPECT_EQ(outcomes[0].status.message(),
            "rendezvous: rank 1 could not reach rank 0 at 127.0.0.1:" +
                std::to_string(port) + " within 1 s (last error: Connection refused)");
}

TEST(Rendezvous, WorldSizeMismatchIsRejected) {
  int port = freePort();
  // A rank launched with WORLD_SIZE=3 against a rank 0 of 2, then the real
  // rank 1: the first is turned away with a reason, the second served.
  std::vector<Outcome> outcomes(2);
  std::thread rank0([&] {
    outcomes[0].blob = patterned(1);
    outcomes[0].status = txrt::exchangeRendezvousBlob(rankOf(0, 2, port), outcomes[0].blob, 10);
  });
  Blob strayBlob = patterned(99);
  txrt::Status stray = txrt::exchangeRendezvousBlob(rankOf(1, 3, port), strayBlob, 10);
  EXPECT_EQ(stray.code(), TXRT_INVALID_ARGUMENT);
  EXPECT_EQ(stray.message(), "rendezvous: rank 1: rank 0 at 127.0.0.1:" +
                                 std::to_string(port) +
                                 " runs a job of 2 ranks, but this rank was launched "
                                 "with a world size of 3");
  EXPECT_EQ(strayBlob, patterned(99)); // untouched
  outcomes[1].blob = patterned(99);
  outcomes[1].status = txrt::exchangeRendezvousBlob(rankOf(1, 2, port), outcomes[1].blob, 10);
  rank0.join();
  ASSERT_TRUE(outcomes[0].status.ok()) << outcomes[0].status.message();
  ASSERT_TRUE(outcomes[1].status.ok()) << outcomes[1].status.message();
  EXPECT_EQ(outcomes[1].blob, patterned(1));
}

TEST(Rendezvous, TimeoutNamesTheRankTurnedAway) {
  int port = freePort();
  std::vector<Outcome> outcomes = runRanks({rankOf(0, 2, port), rankOf(1, 4, port)}, 1.0);
  EXPECT_EQ(outcomes[1].status.code(), TXRT_INVALID_ARGUMENT);
  EXPECT_EQ(outcomes[0].status.code(), TXRT_UNAVAILABLE);
  EXPECT_TRUE(contains(outcomes[0].status.message(),
                       "did not hear from 1 of 2 ranks (rank 1) within 1 s; it turned "
                       "away rank 1 of a 4-rank job"))
      << outcomes[0].status.message();
}

TEST(Rendezvous, DuplicateRankIsRejected) {
  int port = freePort();
  std::vector<Outcome> outcomes(3);
  std::thread rank0([&] {
    outcomes[0].blob = patterned(1);
    outcomes[0].status = txrt::exchangeRendezvousBlob(rankOf(0, 3, port), outcomes[0].blob, 1.0);
  });
  outcomes[1].status = txrt::exchangeRendezvousBlob(rankOf(1, 3, port), outcomes[1].blob, 10);
  outcomes[2].status = txrt::exchangeRendezvousBlob(rankOf(1, 3, port), outcomes[2].blob, 10);
  rank0.join();
  EXPECT_TRUE(outcomes[1].status.ok()) << outcomes[1].status.message();
  EXPECT_EQ(outcomes[2].status.code(), TXRT_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(outcomes[2].status.message(), "already served a rank 1"))
      << outcomes[2].status.message();
  EXPECT_TRUE(contains(outcomes[0].status.message(), "(rank 2)"))
      << outcomes[0].status.message();
}

TEST(Rendezvous, PortInUseIsReported) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr *>(&address), sizeof(address)), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  socklen_t length = sizeof(address);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr *>(&address), &length), 0);
  int port = ntohs(address.sin_port);
  Blob blob = patterned(1);
  txrt::Status status = txrt::exchangeRendezvousBlob(rankOf(0, 2, port), blob, 1.0);
  ::close(fd);
  EXPECT_EQ(status.code(), TXRT_UNAVAILABLE);
  EXPECT_EQ(status.message(), "rendezvous: rank 0 cannot listen on 127.0.0.1:" +
                                  std::to_string(port) + ": Address already in use");
}

} // namespace
