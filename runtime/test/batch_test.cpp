//===- batch_test.cpp - the random batch equals txopt-run's ---------------===//
//
// SPDX-License-Identifier: Apache-2.0
// The expected values are computed here from the splitmix64 definition,
// independently of src/core/batch.cpp, and one constant is splitmix64's
// published first output for state 0.
//
//===----------------------------------------------------------------------===//

#include "core/batch.h"
#include "core/npy.h"
#include "test_artifact.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <gtest/gtest.h>
#include <unistd.h>

using namespace txrt;

namespace {
uint64_t mix(uint64_t &state) {
  state += 0x9E3779B97F4A7C15ull;
  uint64_t z = state;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
double unit(uint64_t &state) { return std::ldexp(double(mix(state) >> 11), -53); }

/// Writes the tokens 0, 1, ..., |count| - 1 as a 1-D .npy of <i8 in /tmp
/// (|tag| and the process id in its name); its path, or "" if it failed.
std::string writeTokenRange(int64_t count, const std::string &tag) {
  std::vector<int64_t> tokens(count);
  for (int64_t i = 0; i < count; ++i)
    tokens[i] = i;
  std::string path = "/tmp/txrt-batch-" + tag + std::to_string(getpid()) + ".npy";
  return writeNpyFile(path, DType::I64, {count}, tokens.data(), count).ok() ? path : "";
}
} // namespace

TEST(Batch, SplitMixKnownValue) {
  SplitMix64 rng{0};
  EXPECT_EQ(rng.next(), 0xE220A8397B1DCDAFull);
  EXPECT_EQ(kDefaultSeed, 0u); // txopt-run's --seed default
}

TEST(Batch, IntegersAreUniformBelowTheBound) {
  const uint64_t seed = 1234;
  const unsigned argIndex = 3;
  std::vector<uint8_t> bytes = randomArgument(DType::I64, 64, seed, argIndex, 50257);
  uint64_t state = seed + (uint64_t(argIndex) << 32);
  for (size_t i = 0; i < 64; ++i) {
    int64_t got;
    std::memcpy(&got, bytes.data() + 8 * i, 8);
    EXPECT_EQ(got, static_cast<int64_t>(unit(state) * 50257.0)) << i;
    EXPECT_GE(got, 0);
    EXPECT_LT(got, 50257);
  }
  std::vector<uint8_t> bits = randomArgument(DType::I1, 16, seed, argIndex, 99);
  for (uint8_t b : bits)
    EXPECT_LE(b, 1);
}

TEST(Batch, FloatsAreBoxMullerRounded) {
  const uint64_t seed = 7;
  const unsigned argIndex = 2;
  std::vector<uint8_t> f32 = randomArgument(DType::F32, 10, seed, argIndex, 0);
  std::vector<uint8_t> bf16 = randomArgument(DType::BF16, 10, seed, argIndex, 0);
  uint64_t state = seed + (uint64_t(argIndex) << 32);
  for (size_t i = 0; i < 10; ++i) {
    double u1 = 1.0 - unit(state), u2 = unit(state);
    double v = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
    float got;
    std::memcpy(&got, f32.data() + 4 * i, 4);
    EXPECT_EQ(got, static_cast<float>(v));
    uint16_t b;
    std::memcpy(&b, bf16.data() + 2 * i, 2);
    EXPECT_EQ(b, bf16FromDouble(v));
  }
}

TEST(Batch, FeederUsesIndexBoundAndArgumentIndex) {
  std::unique_ptr<Artifact> artifact;
  ASSERT_TRUE(Artifact::fromBytes(txrt::test::TestArtifact().build(), ".", artifact).ok());
  std::unique_ptr<BatchFeeder> feeder;
  ASSERT_TRUE(BatchFeeder::create(*artifact, 5, std::nullopt, feeder).ok());
  EXPECT_EQ(feeder->tokensPerStep(), 8u);
  std::vector<BatchFeeder::Write> writes;
  feeder->writesForStep(1, writes);
  ASSERT_EQ(writes.size(), 2u);
  EXPECT_EQ(writes[0].argument, 1u);
  EXPECT_EQ(*writes[0].bytes, randomArgument(DType::I64, 8, 5, 1, 50));
  EXPECT_EQ(*writes[1].bytes, randomArgument(DType::I64, 8, 5, 2, 50));
  feeder->writesForStep(2, writes);
  EXPECT_TRUE(writes.empty()); // the same batch is reused
}

TEST(Batch, TokenWindowsShiftAndWrap) {
  std::unique_ptr<Artifact> artifact;
  ASSERT_TRUE(Artifact::fromBytes(txrt::test::TestArtifact().build(), ".", artifact).ok());
  // 20 tokens 0..19 as a 1-D .npy of <i8; windows of 8 (+1 for labels).
  std::string path = writeTokenRange(20, "");
  ASSERT_FALSE(path.empty());
  std::unique_ptr<BatchFeeder> feeder;
  Status s = BatchFeeder::create(*artifact, 0, path, feeder);
  ASSERT_TRUE(s.ok()) << s.message();
  std::vector<BatchFeeder::Write> writes;
  auto first = [&](size_t w) {
    int64_t v;
    std::memcpy(&v, writes[w].bytes->data(), 8);
    return v;
  };
  feeder->writesForStep(1, writes);
  ASSERT_EQ(writes.size(), 2u);
  EXPECT_EQ(first(0), 0);
  EXPECT_EQ(first(1), 1);
  feeder->writesForStep(2, writes);
  EXPECT_EQ(first(0), 8);
  EXPECT_EQ(first(1), 9);
  feeder->writesForStep(3, writes); // 16 + 8 + 1 > 20: wraps to 0
  EXPECT_EQ(first(0), 0);
  std::remove(path.c_str());
}

TEST(Batch, TokensOutsideTheVocabularyAreNamed) {
  std::unique_ptr<Artifact> artifact;
  ASSERT_TRUE(Artifact::fromBytes(txrt::test::TestArtifact().build(), ".", artifact).ok());
  // llm.c .bin: header then uint16 tokens; token 77 >= index_bound 50.
  std::vector<int32_t> header(256, 0);
  header[0] = 20240520, header[1] = 1, header[2] = 12;
  std::vector<uint16_t> tokens(12, 3);
  tokens[10] = 77;
  std::string path = "/tmp/txrt-batch-" + std::to_string(getpid()) + ".bin";
  {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char *>(header.data()), 1024);
    out.write(reinterpret_cast<const char *>(tokens.data()), 24);
  }
  std::unique_ptr<BatchFeeder> feeder;
  Status s = BatchFeeder::create(*artifact, 0, path, feeder);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("token 77 at position 10 is outside the vocabulary [0, 50)"),
            std::string::npos)
      << s.message();
  std::remove(path.c_str());
}

// Gradient accumulation: each micro-batch of a step takes the next window
// (the micro-step's, then the step's), and a step counts the tokens of all.
TEST(Batch, MicroBatchesTakeConsecutiveWindows) {
  txrt::test::TestArtifact t;
  t.gradAccum = 2;
  t.withMicroStep = true;
  std::unique_ptr<Artifact> artifact;
  ASSERT_TRUE(Artifact::fromBytes(t.build(), ".", artifact).ok());
  std::string path = writeTokenRange(40, "accum-");
  ASSERT_FALSE(path.empty());
  std::unique_ptr<BatchFeeder> feeder;
  Status s = BatchFeeder::create(*artifact, 0, path, feeder);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(feeder->gradAccum(), 2u);
  EXPECT_EQ(feeder->tokensPerStep(), 16u);
  std::vector<BatchFeeder::Write> writes;
  auto first = [&](size_t w) {
    int64_t v;
    std::memcpy(&v, writes[w].bytes->data(), 8);
    return v;
  };
  int64_t expected[][2] = {{1, 0}, {1, 8}, {2, 16}, {2, 24}, {3, 0}};
  for (auto [step, offset] : expected) {
    unsigned micro = offset / 8 % 2;
    feeder->writesForStep(step, writes, micro);
    ASSERT_EQ(writes.size(), 2u);
    EXPECT_EQ(first(0), offset) << "step " << step << " micro-batch " << micro;
    EXPECT_EQ(first(1), offset + 1);
  }
  std::remove(path.c_str());
}

// Data parallelism: a step reads one window of the global batch (ranks x
// the step's 8 tokens), rank r its r-th part, labels one token on; a
// stream shorter than one global batch is refused naming the rank count.
TEST(Batch, EachRankReadsItsPartOfTheGlobalWindow) {
  std::unique_ptr<Artifact> artifact;
  ASSERT_TRUE(Artifact::fromBytes(txrt::test::TestArtifact().build(), ".", artifact).ok());
  std::string path = writeTokenRange(40, "ranks-");
  ASSERT_FALSE(path.empty());
  std::vector<BatchFeeder::Write> writes;
  auto first = [&](size_t w) {
    int64_t v;
    std::memcpy(&v, writes[w].bytes->data(), 8);
    return v;
  };
  std::unique_ptr<BatchFeeder> rank1;
  Status s = BatchFeeder::create(*artifact, 0, path, rank1, false, /*rank=*/1, /*ranks=*/2);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(rank1->tokensPerStep(), 16u);
  rank1->writesForStep(1, writes);
  ASSERT_EQ(writes.size(), 2u);
  EXPECT_EQ(first(0), 8);
  EXPECT_EQ(first(1), 9);
  rank1->writesForStep(2, writes); // the global window moves by 16
  EXPECT_EQ(first(0), 24);
  EXPECT_EQ(first(1), 25);
  std::unique_ptr<BatchFeeder> ofSix;
  s = BatchFeeder::create(*artifact, 0, path, ofSix, false, 0, 6);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("holds 40 tokens; one batch of 6 ranks needs 49"),
            std::string::npos)
      << s.message();
  std::remove(path.c_str());
}

// Validation: windows 0, 1, ... of the --val-data stream from its start,
// wrapping (as txopt-run's evaluation reads them), the labels one token on;
// a stream shorter than a batch or with a token outside the vocabulary is
// refused.
TEST(Batch, ValidationWindowsWrapFromTheStart) {
  txrt::test::TestArtifact t;
  std::unique_ptr<Artifact> artifact;
  ASSERT_TRUE(Artifact::fromBytes(t.build(), ".", artifact).ok());
  std::string pid = std::to_string(getpid());
  std::string train = "/tmp/txrt-batch-train-" + pid + ".npy";
  std::string val = "/tmp/txrt-batch-val-" + pid + ".npy";
  std::string shortVal = "/tmp/txrt-batch-short-" + pid + ".npy";
  std::string wide = "/tmp/txrt-batch-wide-" + pid + ".npy";
  std::vector<int64_t> tokens(40), valTokens(20);
  for (int i = 0; i < 40; ++i)
    tokens[i] = i;
  for (int i = 0; i < 20; ++i)
    valTokens[i] = 20 + i;
  ASSERT_TRUE(writeNpyFile(train, DType::I64, {40}, tokens.data(), 40).ok());
  ASSERT_TRUE(writeNpyFile(val, DType::I64, {20}, valTokens.data(), 20).ok());
  ASSERT_TRUE(writeNpyFile(shortVal, DType::I64, {8}, valTokens.data(), 8).ok());
  valTokens[13] = 50; // the artifact's vocabulary is [0, 50)
  ASSERT_TRUE(writeNpyFile(wide, DType::I64, {20}, valTokens.data(), 20).ok());
  std::unique_ptr<BatchFeeder> feeder;
  ASSERT_TRUE(BatchFeeder::create(*artifact, 0, train, feeder).ok());
  EXPECT_FALSE(feeder->hasValidation());
  Status s = feeder->loadValidation(val);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(feeder->hasValidation());
  std::vector<BatchFeeder::Write> writes;
  auto element = [&](size_t w, size_t e) {
    int64_t v;
    std::memcpy(&v, writes[w].bytes->data() + 8 * e, 8);
    return v;
  };
  // 20 tokens hold (20 - 1) / 8 = 2 windows of 8 (+1 for the labels).
  for (auto [k, offset] : {std::pair{0, 0}, {1, 8}, {2, 0}, {3, 8}}) {
    feeder->writesForValidation(k, writes);
    ASSERT_EQ(writes.size(), 2u);
    EXPECT_EQ(element(0, 0), 20 + offset) << "window " << k;
    EXPECT_EQ(element(0, 7), 27 + offset) << "window " << k;
    EXPECT_EQ(element(1, 0), 21 + offset) << "labels of window " << k;
  }
  s = feeder->loadValidation(shortVal);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("holds 8 tokens; one batch needs 9"), std::string::npos)
      << s.message();
  s = feeder->loadValidation(wide);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("token 50 at position 13 is outside the vocabulary [0, 50)"),
            std::string::npos)
      << s.message();
  // Without --data there is nothing for the windows to fill.
  std::unique_ptr<BatchFeeder> random;
  ASSERT_TRUE(BatchFeeder::create(*artifact, 0, std::nullopt, random).ok());
  s = random->loadValidation(val);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("--val-data needs --data"), std::string::npos) << s.message();
  for (const std::string &p : {train, val, shortVal, wide})
    std::remove(p.c_str());
}
