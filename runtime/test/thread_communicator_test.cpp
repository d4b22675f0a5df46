//===- thread_communicator_test.cpp - ranks as threads, host reductions ---===//
//
// SPDX-License-Identifier: Apache-2.0
// The reduction values are chosen so that the rank order and the rounding
// after each addition matter: a sum in another order, or rounded once at
// the end, gives other bits and fails these tests. Collectives run on a
// fake stream whose "device" addresses are host addresses, so no GPU is
// needed.
//
//===----------------------------------------------------------------------===//

#include "core/dtype.h"
#include "hal/thread_communicator.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <gtest/gtest.h>
#include <thread>
#include <vector>

namespace {

using txrt::hal::Communicator;
using txrt::hal::ThreadExchange;
using txrt::hal::ThreadGroup;
using Reduction = Communicator::Reduction;
using txrt::fb::DType;

/// Reduces |perRank| (one host vector per rank) and returns the result.
template <typename T>
std::vector<T> reduce(const std::vector<std::vector<T>> &perRank, DType type, Reduction op,
                      size_t count, size_t begin = 0) {
  std::vector<const void *> contributions;
  for (const std::vector<T> &values : perRank)
    contributions.push_back(values.data());
  std::vector<T> out(count);
  txrt::Status status =
      txrt::hal::reduceInRankOrder(contributions, out.data(), count, type, op, begin);
  EXPECT_TRUE(status.ok()) << status.message();
  return out;
}

uint16_t bf16(double x) { return txrt::bf16FromDouble(x); }
uint16_t f16(double x) { return txrt::f16FromDouble(x); }

TEST(HostReduction, Bf16RoundsAfterEachAdditionInRankOrder) {
  // bf16 has 8 significant bits: its spacing at 1 is 2^-7. Rank order:
  // 1 + 2^-8 is a tie and rounds to even, 1; + 2^-8 again, 1. Adding the
  // two small ones first, or rounding the exact sum once, gives 1 + 2^-7.
  std::vector<std::vector<uint16_t>> ranks = {
      {bf16(1.0)}, {bf16(std::ldexp(1.0, -8))}, {bf16(std::ldexp(1.0, -8))}};
  EXPECT_EQ(reduce(ranks, DType::BF16, Reduction::Sum, 1)[0], 0x3F80); // 1.0
  // The same values from the other end: 2^-8 + 2^-8 = 2^-7, + 1 = 1.0078125.
  std::vector<std::vector<uint16_t>> reversed = {ranks[2], ranks[1], ranks[0]};
  EXPECT_EQ(reduce(reversed, DType::BF16, Reduction::Sum, 1)[0], 0x3F81);
}

TEST(HostReduction, Bf16RoundsToNearestNotDown) {
  // 1 + 3 * 2^-9 = 1.005859375 lies nearer 1.0078125 (0x3F81) than 1.0:
  // truncation would give 0x3F80.
  std::vector<std::vector<uint16_t>> ranks = {{bf16(1.0)}, {0x3BC0 /* 3 * 2^-9 */}};
  ASSERT_EQ(txrt::bf16ToDouble(0x3BC0), 3 * std::ldexp(1.0, -9));
  EXPECT_EQ(reduce(ranks, DType::BF16, Reduction::Sum, 1)[0], 0x3F81);
}

TEST(HostReduction, F16AndF32RoundAfterEachAddition) {
  std::vector<std::vector<uint16_t>> half = {
      {f16(1.0)}, {f16(std::ldexp(1.0, -11))}, {f16(std::ldexp(1.0, -11))}};
  EXPECT_EQ(reduce(half, DType::F16, Reduction::Sum, 1)[0], 0x3C00); // 1.0, not 1 + 2^-10
  std::vector<std::vector<float>> single = {
      {1.0f}, {std::ldexp(1.0f, -24)}, {std::ldexp(1.0f, -24)}};
  EXPECT_EQ(reduce(single, DType::F32, Reduction::Sum, 1)[0], 1.0f); // not 1 + 2^-23
}

TEST(HostReduction, MeanDividesTheRoundedSum) {
  // Sum in rank order rounds to 1.0 (above); 1/3 in bf16 is 0x3EAB
  // (0.333984375). The exact mean, (1 + 2^-7) / 3, would round to 0x3EAC.
  std::vector<std::vector<uint16_t>> ranks = {
      {bf16(1.0), bf16(1.0)}, {bf16(std::ldexp(1.0, -8)), bf16(2.0)}, {bf16(std::ldexp(1.0, -8)), bf16(4.0)}};
  std::vector<uint16_t> mean = reduce(ranks, DType::BF16, Reduction::Mean, 2);
  EXPECT_EQ(mean[0], 0x3EAB);
  EXPECT_EQ(bf16(7.0 / 3.0), mean[1]);
  EXPECT_EQ(txrt::bf16ToDouble(mean[1]), 2.328125);
  std::vector<std::vector<float>> floats = {{1.0f}, {2.0f}, {4.0f}, {8.0f}};
  EXPECT_EQ(reduce(floats, DType::F32, Reduction::Mean, 1)[0], 3.75f);
}

TEST(HostReduction, MaxPropagatesNaN) {
  std::vector<std::vector<float>> ranks = {{-3.0f, 1.0f, -0.5f}, {-2.0f, NAN, -7.0f}};
  std::vector<float> max = reduce(ranks, DType::F32, Reduction::Max, 3);
  EXPECT_EQ(max[0], -2.0f);
  EXPECT_TRUE(std::isnan(max[1]));
  EXPECT_EQ(max[2], -0.5f);
  std::vector<std::vector<uint16_t>> bf = {{bf16(-1.5)}, {bf16(-2.5)}, {bf16(-1.25)}};
  EXPECT_EQ(reduce(bf, DType::BF16, Reduction::Max, 1)[0], bf16(-1.25));
}

TEST(HostReduction, IntegersWrapAtTheirWidth) {
  std::vector<std::vector<int32_t>> ranks = {{2147483647, 5}, {1, -9}};
  std::vector<int32_t> sum = reduce(ranks, DType::I32, Reduction::Sum, 2);
  EXPECT_EQ(sum[0], -2147483647 - 1);
  EXPECT_EQ(sum[1], -4);
  EXPECT_EQ(reduce(ranks, DType::I32, Reduction::Max, 2)[1], 5);
}

TEST(HostReduction, BeginSelectsTheShard) {
  // Reduce-scatter's shard 1 of 2: elements [2, 4).
  std::vector<std::vector<float>> ranks = {{1, 2, 3, 4}, {10, 20, 30, 40}};
  std::vector<float> shard = reduce(ranks, DType::F32, Reduction::Sum, 2, 2);
  EXPECT_EQ(shard, (std::vector<float>{33, 44}));
}

TEST(HostReduction, UnsupportedTypesAreRefused) {
  std::vector<uint8_t> a(4), out(4);
  std::vector<const void *> contributions = {a.data()};
  txrt::Status fp8 = txrt::hal::reduceInRankOrder(contributions, out.data(), 1,
                                                  DType::F8E4M3FN, Reduction::Sum, 0);
  EXPECT_EQ(fp8.code(), TXRT_INVALID_ARGUMENT);
  EXPECT_NE(fp8.message().find("cannot reduce f8e4m3fn"), std::string::npos) << fp8.message();
  txrt::Status intMean = txrt::hal::reduceInRankOrder(contributions, out.data(), 1,
                                                      DType::I32, Reduction::Mean, 0);
  EXPECT_EQ(intMean.code(), TXRT_INVALID_ARGUMENT);
}

//===----------------------------------------------------------------------===//
// ThreadGroup
//===----------------------------------------------------------------------===//

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

TEST(ThreadGroup, ExchangeReturnsEveryRanksDataInRankOrder) {
  auto group = std::make_shared<ThreadGroup>(3, 10);
  std::vector<std::shared_ptr<const ThreadExchange>> seen(3);
  std::vector<txrt::Status> statuses(3);
  std::vector<std::thread> threads;
  for (int rank = 2; rank >= 0; --rank)
    threads.emplace_back([&, rank] {
      for (int round = 0; round < 50 && statuses[rank].ok(); ++round)
        statuses[rank] = group->exchange(rank, "round " + std::to_string(round),
                                         {uint8_t(rank), uint8_t(round)}, seen[rank]);
    });
  for (std::thread &thread : threads)
    thread.join();
  for (int rank = 0; rank < 3; ++rank) {
    ASSERT_TRUE(statuses[rank].ok()) << statuses[rank].message();
    ASSERT_EQ(seen[rank]->data.size(), 3u);
    for (int r = 0; r < 3; ++r)
      EXPECT_EQ(seen[rank]->data[r], (std::vector<uint8_t>{uint8_t(r), 49}));
  }
}

TEST(ThreadGroup, FailedRankEndsTheOthersWaits) {
  auto group = std::make_shared<ThreadGroup>(3, 30);
  std::vector<txrt::Status> statuses(2);
  auto start = Clock::now();
  std::vector<std::thread> waiters;
  for (int rank = 0; rank < 2; ++rank)
    waiters.emplace_back([&, rank] {
      std::shared_ptr<const ThreadExchange> out;
      statuses[rank] = group->exchange(rank, "allReduce", {1}, out);
    });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  group->fail(2, "cuLaunchKernel failed: CUDA_ERROR_ILLEGAL_ADDRESS");
  for (std::thread &thread : waiters)
    thread.join();
  EXPECT_LT(secondsSince(start), 10.0);
  for (const txrt::Status &status : statuses) {
    EXPECT_EQ(status.code(), TXRT_UNAVAILABLE);
    EXPECT_EQ(status.message(), "rank 2 failed: cuLaunchKernel failed: CUDA_ERROR_ILLEGAL_ADDRESS");
  }
  // Later calls fail at once too.
  std::shared_ptr<const ThreadExchange> out;
  EXPECT_EQ(group->exchange(2, "allReduce", {1}, out).message(), statuses[0].message());
  EXPECT_EQ(group->status().message(), statuses[0].message());
}

TEST(ThreadGroup, MissingRankTimesOut) {
  auto group = std::make_shared<ThreadGroup>(3, 0.5);
  std::vector<txrt::Status> statuses(2);
  auto start = Clock::now();
  std::vector<std::thread> waiters;
  for (int rank = 0; rank < 2; ++rank)
    waiters.emplace_back([&, rank] {
      std::shared_ptr<const ThreadExchange> out;
      statuses[rank] = group->exchange(rank, "allGather of 4 f32 per rank", {1}, out);
    });
  for (std::thread &thread : waiters)
    thread.join();
  EXPECT_LT(secondsSince(start), 5.0);
  for (const txrt::Status &status : statuses) {
    EXPECT_EQ(status.code(), TXRT_UNAVAILABLE);
    EXPECT_NE(status.message().find("waited 0.5 s in collective 0 (allGather of 4 f32 per "
                                    "rank) for rank 2"),
              std::string::npos)
        << status.message();
  }
}

TEST(ThreadGroup, DifferentCollectivesAreRefused) {
  auto group = std::make_shared<ThreadGroup>(2, 10);
  std::vector<txrt::Status> statuses(2);
  std::thread other([&] {
    std::shared_ptr<const ThreadExchange> out;
    statuses[1] = group->exchange(1, "allGather of 2 f32 per rank", {1}, out);
  });
  std::shared_ptr<const ThreadExchange> out;
  statuses[0] = group->exchange(0, "allReduce sum of 2 f32", {1}, out);
  other.join();
  for (const txrt::Status &status : statuses) {
    EXPECT_EQ(status.code(), TXRT_INVALID_ARGUMENT);
    EXPECT_EQ(status.message(), "threads communicator: collective 0 differs between ranks: "
                                "rank 0 ran allReduce sum of 2 f32, rank 1 allGather of 2 "
                                "f32 per rank");
  }
}

//===----------------------------------------------------------------------===//
// The communicator on a fake stream
//===----------------------------------------------------------------------===//

/// A stream over host memory: DevicePtr values are host addresses.
class HostStream final : public txrt::hal::Stream {
public:
  txrt::Status memset32(txrt::hal::DevicePtr, uint32_t, size_t) override { return unused(); }
  txrt::Status copyDeviceToDevice(txrt::hal::DevicePtr, txrt::hal::DevicePtr,
                                  size_t) override {
    return unused();
  }
  txrt::Status copyHostToDevice(txrt::hal::DevicePtr dst, const void *src,
                                size_t bytes) override {
    std::memcpy(reinterpret_cast<void *>(dst), src, bytes);
    return txrt::Status();
  }
  txrt::Status copyDeviceToHost(void *dst, txrt::hal::DevicePtr src, size_t bytes) override {
    if (failReads)
      return txrt::Status::internal("cuMemcpyDtoH failed: CUDA_ERROR_LAUNCH_FAILED");
    std::memcpy(dst, reinterpret_cast<const void *>(src), bytes);
    return txrt::Status();
  }
  txrt::Status launch(txrt::hal::Kernel &, const uint32_t[3], const uint32_t[3], uint32_t,
                      void **) override {
    return unused();
  }
  txrt::Status synchronize() override { return txrt::Status(); }
  txrt::Status query(bool &done) override {
    done = true;
    return txrt::Status();
  }
  txrt::Status record(txrt::hal::Event &) override { return unused(); }
  txrt::Status wait(txrt::hal::Event &) override { return unused(); }
  txrt::Status beginCapture() override { return unused(); }
  txrt::Status endCapture(std::unique_ptr<txrt::hal::Graph> &) override { return unused(); }

  bool failReads = false;

private:
  static txrt::Status unused() { return txrt::Status::internal("not in this fake"); }
};

template <typename T> txrt::hal::DevicePtr address(std::vector<T> &values) {
  return reinterpret_cast<txrt::hal::DevicePtr>(values.data());
}

/// Runs |body(communicator, stream)| as each of |size| ranks on its own thread.
template <typename Body> void runRanks(int size, double timeoutSeconds, Body body) {
  auto group = std::make_shared<ThreadGroup>(size, timeoutSeconds);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < size; ++rank)
    threads.emplace_back([&, rank] {
      std::unique_ptr<Communicator> communicator =
          txrt::hal::createThreadCommunicator(group, rank);
      ASSERT_NE(communicator, nullptr);
      HostStream stream;
      body(*communicator, stream);
    });
  for (std::thread &thread : threads)
    thread.join();
}

TEST(ThreadCommunicator, Describes) {
  auto group = std::make_shared<ThreadGroup>(2, 1);
  auto communicator = txrt::hal::createThreadCommunicator(group, 1);
  ASSERT_NE(communicator, nullptr);
  EXPECT_EQ(communicator->rank(), 1);
  EXPECT_EQ(communicator->size(), 2);
  EXPECT_STREQ(communicator->kind(), "threads");
  EXPECT_FALSE(communicator->capturable());
  EXPECT_TRUE(communicator->check().ok());
  EXPECT_EQ(txrt::hal::createThreadCommunicator(group, 2), nullptr);
}

TEST(ThreadCommunicator, AllReduceInPlaceGivesEveryRankTheSameBits) {
  runRanks(3, 10, [](Communicator &communicator, HostStream &stream) {
    int rank = communicator.rank();
    std::vector<uint16_t> values = {bf16(rank == 0 ? 1.0 : std::ldexp(1.0, -8)),
                                    bf16(rank + 1.0)};
    txrt::Status status = communicator.allReduce(address(values), address(values), 2,
                                                 DType::BF16, Reduction::Sum, stream);
    ASSERT_TRUE(status.ok()) << status.message();
    EXPECT_EQ(values, (std::vector<uint16_t>{0x3F80, bf16(6.0)}));
  });
}

TEST(ThreadCommunicator, ReduceScatterGivesEachRankItsShard) {
  runRanks(3, 10, [](Communicator &communicator, HostStream &stream) {
    int rank = communicator.rank();
    // Rank r sends 100 * r + i for i in [0, 6): two elements per rank.
    std::vector<float> send(6), recv(2, -1.0f);
    for (int i = 0; i < 6; ++i)
      send[i] = 100.0f * rank + i;
    txrt::Status status = communicator.reduceScatter(address(send), address(recv), 2,
                                                     DType::F32, Reduction::Mean, stream);
    ASSERT_TRUE(status.ok()) << status.message();
    // Mean over ranks of 100 r + i = 100 + i, for i = 2 rank, 2 rank + 1.
    EXPECT_EQ(recv, (std::vector<float>{100.0f + 2 * rank, 101.0f + 2 * rank}));
  });
}

TEST(ThreadCommunicator, AllGatherConcatenatesInRankOrder) {
  runRanks(4, 10, [](Communicator &communicator, HostStream &stream) {
    int rank = communicator.rank();
    std::vector<int64_t> send = {10 * rank, 10 * rank + 1}, recv(8, -1);
    txrt::Status status =
        communicator.allGather(address(send), address(recv), 2, DType::I64, stream);
    ASSERT_TRUE(status.ok()) << status.message();
    EXPECT_EQ(recv, (std::vector<int64_t>{0, 1, 10, 11, 20, 21, 30, 31}));
  });
}

TEST(ThreadCommunicator, AFailingRankEndsTheOthersCalls) {
  auto start = Clock::now();
  runRanks(3, 30, [](Communicator &communicator, HostStream &stream) {
    std::vector<float> values(4, 1.0f);
    stream.failReads = communicator.rank() == 1;
    txrt::Status status = communicator.allReduce(address(values), address(values), 4,
                                                 DType::F32, Reduction::Sum, stream);
    EXPECT_FALSE(status.ok());
    EXPECT_NE(status.message().find("cuMemcpyDtoH failed: CUDA_ERROR_LAUNCH_FAILED"),
              std::string::npos)
        << status.message();
    if (communicator.rank() != 1) {
      EXPECT_EQ(status.message().rfind("rank 1 failed: ", 0), 0u) << status.message();
    }
    EXPECT_FALSE(communicator.check().ok());
  });
  EXPECT_LT(secondsSince(start), 10.0);
}

TEST(ThreadCommunicator, UnsupportedTypeFailsEveryRank) {
  runRanks(2, 30, [](Communicator &communicator, HostStream &stream) {
    std::vector<uint8_t> values(4, 1);
    txrt::Status status = communicator.allReduce(address(values), address(values), 4,
                                                 DType::F8E5M2, Reduction::Sum, stream);
    EXPECT_FALSE(status.ok());
    EXPECT_NE(status.message().find("cannot reduce f8e5m2"), std::string::npos)
        << status.message();
  });
}

} // namespace
