//===- checkpoint_test.cpp - checkpoint format, schedules, windows --------===//
//
// SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "core/checkpoint.h"
#include "core/json.h"
#include "core/training.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <gtest/gtest.h>
#include <iterator>
#include <set>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace txrt;

namespace {

std::string tempDir(const std::string &name) {
  const char *base = std::getenv("TMPDIR");
  std::string dir = std::string(base ? base : "/tmp") + "/txrt-ckpt-" +
                    std::to_string(getpid()) + "-" + name;
  std::string command = "rm -rf '" + dir + "'";
  EXPECT_EQ(std::system(command.c_str()), 0);
  return dir;
}

Checkpoint sample(int64_t step, float scale) {
  Checkpoint c;
  c.info.producer = "test";
  c.info.recipe = R"({"optimizer":"adamw","lr":0.001,"beta1":0.9})";
  c.info.step = step;
  c.info.seed = 7;
  c.info.hasData = true;
  c.info.dataFile = "tokens.bin";
  c.info.dataTokens = 1000;
  c.info.dataOffset = 64 * step;
  c.info.dataWindows = step;
  c.info.schedule = LrSchedule{LrSchedule::Kind::Cosine, 1e-3, 2, 10, 1e-4}.json();
  CheckpointTensor w{"w", "param", "F32", {2, 3}, {}};
  for (int i = 0; i < 6; ++i) {
    float v = scale * static_cast<float>(i);
    const auto *p = reinterpret_cast<const uint8_t *>(&v);
    w.bytes.insert(w.bytes.end(), p, p + 4);
  }
  CheckpointTensor s{"step", "step", "I64", {}, std::vector<uint8_t>(8, 0)};
  std::memcpy(s.bytes.data(), &step, 8);
  CheckpointTensor flag{"flag", "fp8_state", "BOOL", {3}, {1, 0, 1}};
  c.tensors = {w, s, flag};
  return c;
}

std::vector<TensorSpec> specs() {
  return {{"w", "param", "F32", {2, 3}, {}}, {"step", "step", "I64", {}, {}},
          {"flag", "fp8_state", "BOOL", {3}, {}}};
}

std::string readFile(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

} // namespace

TEST(Json, ParsesAndKeepsIntegersExact) {
  json::Value v;
  ASSERT_TRUE(json::parse(R"( {"a": [1, -2.5e3, "x\u00e9\n"], "big": 18446744073709551615,
                               "t": true, "n": null} )", v).ok());
  uint64_t big;
  ASSERT_TRUE(v.find("big")->asUint64(big));
  EXPECT_EQ(big, 18446744073709551615ull);
  EXPECT_EQ(v.find("a")->array[1].number, -2500);
  EXPECT_EQ(v.find("a")->array[2].text, "x\xc3\xa9\n");
  EXPECT_FALSE(json::parse("{\"a\":1,}", v).ok());
  EXPECT_FALSE(json::parse("[1] x", v).ok());
}

TEST(Checkpoint, RoundTripsAndIsSafetensors) {
  std::string dir = tempDir("roundtrip");
  Checkpoint c = sample(5, 0.5f);
  ASSERT_TRUE(saveCheckpoint(dir, c).ok());
  Checkpoint back;
  Status s = loadCheckpoint(dir, back);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(back.info.step, 5);
  EXPECT_EQ(back.info.seed, 7u);
  EXPECT_EQ(back.info.dataOffset, 320);
  EXPECT_EQ(back.info.dataWindows, 5);
  ASSERT_EQ(back.tensors.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(back.tensors[i].name, c.tensors[i].name);
    EXPECT_EQ(back.tensors[i].role, c.tensors[i].role);
    EXPECT_EQ(back.tensors[i].bytes, c.tensors[i].bytes);
  }
  EXPECT_TRUE(checkCompatible(back, c.info.recipe, specs()).ok());
  // The safetensors layout: u64 header length, JSON, data.
  std::string bytes = readFile(dir + "/model-00000005.safetensors");
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ(n % 8, 0u);
  json::Value header;
  ASSERT_TRUE(json::parse(bytes.substr(8, n), header).ok());
  EXPECT_EQ(header.find("w")->find("dtype")->text, "F32");
  EXPECT_EQ(bytes.size(), 8 + n + 24 + 8 + 3);
  // A second save replaces the first and removes its file.
  ASSERT_TRUE(saveCheckpoint(dir, sample(10, 1.0f)).ok());
  ASSERT_TRUE(loadCheckpoint(dir, back).ok());
  EXPECT_EQ(back.info.step, 10);
  EXPECT_FALSE(std::ifstream(dir + "/model-00000005.safetensors").good());
  // Saving the same step again uses the other name, then removes the old.
  ASSERT_TRUE(saveCheckpoint(dir, sample(10, 2.0f)).ok());
  ASSERT_TRUE(loadCheckpoint(dir, back).ok());
  EXPECT_EQ(back.tensors[0].bytes, sample(10, 2.0f).tensors[0].bytes);
}

TEST(Checkpoint, CorruptionNamesTheTensor) {
  std::string dir = tempDir("corrupt");
  ASSERT_TRUE(saveCheckpoint(dir, sample(3, 1.0f)).ok());
  std::string path = dir + "/model-00000003.safetensors";
  std::string bytes = readFile(path);
  bytes[bytes.size() - 20] ^= 0x40; // inside w's data
  std::ofstream(path, std::ios::binary) << bytes;
  Checkpoint back;
  Status s = loadCheckpoint(dir, back);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("tensor 'w': checksum mismatch"), std::string::npos) << s.message();
  // Truncation.
  std::ofstream(path, std::ios::binary) << bytes.substr(0, bytes.size() - 5);
  s = loadCheckpoint(dir, back);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("truncated"), std::string::npos) << s.message();
  // No checkpoint at all.
  s = loadCheckpoint(tempDir("none"), back);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("no checkpoint.json"), std::string::npos) << s.message();
}

TEST(Checkpoint, OtherModelOrRecipeIsRefused) {
  Checkpoint c = sample(3, 1.0f);
  Status s = checkCompatible(c, R"({"optimizer":"sgd","lr":0.001,"beta1":0.9})", specs());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("'optimizer' is \"adamw\" there and \"sgd\" in this step"),
            std::string::npos)
      << s.message();
  // Numbers by value: a manifest rewritten by another JSON writer still fits.
  EXPECT_TRUE(
      checkCompatible(c, R"({"beta1":0.90000000000000002,"lr":0.001,"optimizer":"adamw"})", specs())
          .ok());
  // lr is an input, not the recipe's identity.
  EXPECT_TRUE(checkCompatible(c, R"({"optimizer":"adamw","lr":0.5,"beta1":0.9})", specs()).ok());
  std::vector<TensorSpec> other = specs();
  other[0].shape = {3, 2};
  s = checkCompatible(c, c.info.recipe, other);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("tensor 'w' is F32 [2, 3], but this step's is F32 [3, 2]"),
            std::string::npos)
      << s.message();
  other = specs();
  other.push_back({"v", "param", "F32", {1}, {}});
  s = checkCompatible(c, c.info.recipe, other);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("has no tensor 'v'"), std::string::npos) << s.message();
  other = specs();
  other.pop_back();
  s = checkCompatible(c, c.info.recipe, other);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("has tensor 'flag'"), std::string::npos) << s.message();
}

// Packed FP8 scaling state records the cast site of each row; resume into a
// step whose rows are other sites (another --fp8-exclude) is refused at the
// first differing row, even with as many rows; a checkpoint saved before
// sites were recorded resumes with a warning.
TEST(Checkpoint, FP8SitesAreRecordedAndCompared) {
  std::string dir = tempDir("sites");
  Checkpoint c = sample(4, 1.0f);
  CheckpointTensor scale{"fp8.e4m3.scale", "fp8_scale", "F32", {2}, std::vector<uint8_t>(8, 0),
                         {"n1_MatMul.lhs", "n1_MatMul.rhs"}};
  c.tensors.push_back(scale);
  ASSERT_TRUE(saveCheckpoint(dir, c).ok());
  EXPECT_NE(readFile(dir + "/checkpoint.json").find(R"("sites":["n1_MatMul.lhs","n1_MatMul.rhs"])"),
            std::string::npos);
  Checkpoint back;
  ASSERT_TRUE(loadCheckpoint(dir, back).ok());
  ASSERT_NE(back.find("fp8.e4m3.scale"), nullptr);
  // A manifest whose site list does not name one site per row is refused.
  {
    std::string bad = tempDir("sites-bad");
    Checkpoint wrong = c;
    wrong.tensors.back().sites.push_back("extra");
    ASSERT_TRUE(saveCheckpoint(bad, wrong).ok());
    Checkpoint read;
    Status st = loadCheckpoint(bad, read);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.message().find("names 3 cast sites for [2] (one per row)"), std::string::npos)
        << st.message();
  }
  EXPECT_EQ(back.find("fp8.e4m3.scale")->sites, scale.sites);

  std::vector<TensorSpec> expected = specs();
  expected.push_back({"fp8.e4m3.scale", "fp8_scale", "F32", {2}, scale.sites});
  std::vector<std::string> warnings;
  EXPECT_TRUE(checkCompatible(back, c.info.recipe, expected, &warnings).ok());
  EXPECT_TRUE(warnings.empty());

  expected.back().sites = {"n1_MatMul.lhs", "n7_MatMul.rhs"};
  Status s = checkCompatible(back, c.info.recipe, expected, &warnings);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("tensor 'fp8.e4m3.scale' row 1 is FP8 cast site 'n1_MatMul.rhs' "
                             "there and 'n7_MatMul.rhs' in this step (2 vs 2 sites"),
            std::string::npos)
      << s.message();
  expected.back().sites = {"n1_MatMul.lhs"};
  expected.back().shape = {1};
  s = checkCompatible(back, c.info.recipe, expected, &warnings);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("row 1 is FP8 cast site 'n1_MatMul.rhs' there and no site in this "
                             "step (2 vs 1 sites"),
            std::string::npos)
      << s.message();

  // A step without site lists (compiled before them): taken in order, with
  // a warning that does not blame the FP8 options.
  warnings.clear();
  std::vector<TensorSpec> older = expected;
  older.back().sites.clear();
  older.back().shape = {2};
  EXPECT_TRUE(checkCompatible(back, c.info.recipe, older, &warnings).ok());
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("this step records no cast sites for tensor 'fp8.e4m3.scale'"),
            std::string::npos)
      << warnings[0];
  warnings.clear();

  // No sites recorded: taken in order, with a warning.
  back.tensors.back().sites.clear();
  expected.back().sites = scale.sites;
  expected.back().shape = {2};
  EXPECT_TRUE(checkCompatible(back, c.info.recipe, expected, &warnings).ok());
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("tensor 'fp8.e4m3.scale' of the checkpoint (step 4, written by "
                             "test) records no cast sites"),
            std::string::npos)
      << warnings[0];
}

// Sharded state: the ranks' shards in rank order are the whole tensor
// padded with zeros; split again for another rank count, the shards hold
// the same elements and zeros past the end.
TEST(Checkpoint, ShardsSplitAndJoin) {
  std::vector<uint8_t> whole(10);
  for (size_t i = 0; i < whole.size(); ++i)
    whole[i] = static_cast<uint8_t>(i + 1);
  // 2 ranks, 5 bytes each: no padding.
  std::vector<uint8_t> a = shardOfWhole(whole, 5, 0), b = shardOfWhole(whole, 5, 1);
  EXPECT_EQ(a, (std::vector<uint8_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(b, (std::vector<uint8_t>{6, 7, 8, 9, 10}));
  // 4 ranks, 3 bytes each: the last shard holds one byte and two of padding.
  std::vector<uint8_t> joined;
  for (unsigned r = 0; r < 4; ++r) {
    std::vector<uint8_t> shard = shardOfWhole(whole, 3, r);
    ASSERT_EQ(shard.size(), 3u);
    joined.insert(joined.end(), shard.begin(), shard.end());
  }
  EXPECT_EQ(joined, (std::vector<uint8_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 0, 0}));
  std::vector<uint8_t> back;
  ASSERT_TRUE(wholeFromShards(joined, whole.size(), back).ok());
  EXPECT_EQ(back, whole);
  // A rank past the data gets padding only; too few bytes is an error.
  EXPECT_EQ(shardOfWhole(whole, 3, 5), (std::vector<uint8_t>{0, 0, 0}));
  Status s = wholeFromShards(std::vector<uint8_t>(4), whole.size(), back);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("fewer than the whole tensor's 10"), std::string::npos);
}

// A save killed (SIGKILL) at every phase leaves a loadable checkpoint: the
// previous one before the manifest is renamed, the new one after.
TEST(Checkpoint, KillAtEveryPhaseKeepsACheckpoint) {
  std::string dir = tempDir("kill");
  ASSERT_TRUE(saveCheckpoint(dir, sample(1, 1.0f)).ok());
  int64_t last = 1;
  for (const std::string &phase : checkpointKillPhases()) {
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      setenv("TXRT_CHECKPOINT_KILL_AT", phase.c_str(), 1);
      Status s = saveCheckpoint(dir, sample(last + 1, 3.0f));
      _exit(s.ok() ? 0 : 1);
    }
    int status = 0;
    waitpid(child, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << phase;
    Checkpoint back;
    Status s = loadCheckpoint(dir, back);
    ASSERT_TRUE(s.ok()) << phase << ": " << s.message();
    bool committed = phase == "manifest-renamed" || phase == "cleaned";
    EXPECT_EQ(back.info.step, committed ? last + 1 : last) << phase;
    last = back.info.step;
  }
  // The leftovers of killed saves are removed by the next save.
  ASSERT_TRUE(saveCheckpoint(dir, sample(last + 1, 1.0f)).ok());
  std::string command = "test $(ls -A '" + dir + "' | wc -l) -eq 2";
  EXPECT_EQ(std::system(command.c_str()), 0);
}

TEST(Schedule, WarmupCosineLinearConstant) {
  LrSchedule cosine{LrSchedule::Kind::Cosine, 1.0, 4, 12, 0.1};
  ASSERT_TRUE(cosine.validate().ok());
  EXPECT_DOUBLE_EQ(cosine.at(1), 0.25);
  EXPECT_DOUBLE_EQ(cosine.at(4), 1.0);
  EXPECT_DOUBLE_EQ(cosine.at(8), 0.1 + 0.5 * 0.9);
  EXPECT_DOUBLE_EQ(cosine.at(12), 0.1);
  EXPECT_DOUBLE_EQ(cosine.at(100), 0.1);
  LrSchedule linear{LrSchedule::Kind::Linear, 1.0, 0, 10, 0.0};
  EXPECT_DOUBLE_EQ(linear.at(5), 0.5);
  LrSchedule constant{LrSchedule::Kind::Constant, 0.3, 2, 0, 0};
  ASSERT_TRUE(constant.validate().ok());
  EXPECT_DOUBLE_EQ(constant.at(1), 0.15);
  EXPECT_DOUBLE_EQ(constant.at(50), 0.3);
  EXPECT_FALSE((LrSchedule{LrSchedule::Kind::Cosine, 1.0, 10, 10, 0}).validate().ok());
}

TEST(TokenWindows, SequentialWrapsAndShuffleIsAPermutation) {
  TokenWindows seq(100, 30, false, 0); // W = 3
  EXPECT_EQ(seq.next(), 0);
  EXPECT_EQ(seq.next(), 30);
  EXPECT_EQ(seq.next(), 60);
  EXPECT_EQ(seq.next(), 0);
  TokenWindows shuffled(1001, 10, true, 5); // W = 100
  std::set<int64_t> seen;
  std::vector<int64_t> first;
  for (int i = 0; i < 100; ++i) {
    first.push_back(shuffled.next());
    seen.insert(first.back());
  }
  EXPECT_EQ(seen.size(), 100u);
  EXPECT_EQ(*seen.rbegin(), 990);
  std::vector<int64_t> second;
  for (int i = 0; i < 100; ++i)
    second.push_back(shuffled.next());
  EXPECT_NE(first, second); // each epoch its own order
  // Resuming after 37 windows continues the same order.
  TokenWindows again(1001, 10, true, 5);
  again.resume(37, 370);
  for (int i = 37; i < 100; ++i)
    EXPECT_EQ(again.next(), first[static_cast<size_t>(i)]);
}

TEST(StepLog, Line) {
  StepRecord r;
  r.step = 3;
  r.loss = 2.5;
  r.hasGradNorm = true;
  r.gradNorm = 0.125;
  r.hasLr = true;
  r.lr = 1e-3;
  r.ms = 1.5;
  EXPECT_EQ(stepLogLine(r),
            R"({"step":3,"loss":2.5,"grad_norm":0.125,"lr":0.001,"ms":1.5})");
}

// A GPU run's record adds model TFLOP/s, MFU (only with a known peak) and
// the peak memory.
TEST(StepLog, DeviceFields) {
  StepRecord r;
  r.step = 1;
  r.loss = 2.0;
  r.ms = 4.0;
  r.hasDevice = true;
  r.tflops = 250.0;
  r.mfu = 0.25;
  r.memGib = 0.5;
  EXPECT_EQ(stepLogLine(r),
            R"({"step":1,"loss":2,"ms":4,"tflops":250,"mfu":0.25,"mem_gib":0.5})");
  r.mfu = -1;
  EXPECT_EQ(stepLogLine(r), R"({"step":1,"loss":2,"ms":4,"tflops":250,"mem_gib":0.5})");
}

// The peaks MFU divides by: the driver's device names, the more specific
// part first (an "H100 PCIe" is not an SXM H100), unknown GPUs give 0.
TEST(StepLog, PeakTflops) {
  EXPECT_DOUBLE_EQ(peakTflops("NVIDIA H200", PeakKind::BF16), 989.4);
  EXPECT_DOUBLE_EQ(peakTflops("NVIDIA H200", PeakKind::FP8), 1978.9);
  EXPECT_DOUBLE_EQ(peakTflops("NVIDIA H100 80GB HBM3", PeakKind::TF32), 494.7);
  EXPECT_DOUBLE_EQ(peakTflops("NVIDIA H100 PCIe", PeakKind::BF16), 756.0);
  EXPECT_DOUBLE_EQ(peakTflops("NVIDIA A100-SXM4-80GB", PeakKind::F32), 19.5);
  EXPECT_EQ(peakTflops("NVIDIA A100-SXM4-80GB", PeakKind::FP8), 0.0);
  EXPECT_EQ(peakTflops("NVIDIA GeForce RTX 4090", PeakKind::BF16), 0.0);
}

TEST(StepLog, ValidationLine) {
  EXPECT_EQ(valLogLine(0, 4.25, 10), R"({"step":0,"val_loss":4.25,"val_windows":10})");
  EXPECT_EQ(valLogLine(7, 1.0 / 3.0, 2), R"({"step":7,"val_loss":0.333333333,"val_windows":2})");
}

TEST(StepLog, ProgressBar) {
  EXPECT_EQ(progressBar(45, 1, 100, 9.0, 20), "[#########...........] 45/100  45%  ETA 0:11");
  EXPECT_EQ(progressBar(100, 1, 100, 50.0, 4), "[####] 100/100  100%  ETA 0:00");
  // A resumed run: the rate counts the steps of this process only.
  EXPECT_EQ(progressBar(60, 51, 100, 20.0, 10), "[##........] 60/100  20%  ETA 1:20");
  EXPECT_EQ(progressBar(1, 1, 10, 0.0, 10), "[#.........] 1/10  10%  ETA -");
  EXPECT_EQ(progressBar(2, 1, 20000, 1.0, 10), "[..........] 2/20000  0%  ETA 2:46:39");
}
