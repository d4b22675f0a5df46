//===- txrun_cli_test.cpp - txrun's command line and exit codes -----------===//
//
// SPDX-License-Identifier: Apache-2.0
// Runs the built txrun binary. Without a GPU a valid artifact must end in
// exit 1 with "no CUDA GPU"; on a GPU machine that case is skipped visibly.
//
//===----------------------------------------------------------------------===//

#include "core/checkpoint.h"
#include "test_artifact.h"
#include "txrt/txrt.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <gtest/gtest.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace {

struct RunResult {
  int exitCode;
  std::string output; // stdout and stderr
};

RunResult runTxrun(const std::string &args) {
  std::string command = std::string(TXRUN_PATH) + " " + args + " 2>&1";
  RunResult result{-1, ""};
  FILE *pipe = popen(command.c_str(), "r");
  if (!pipe)
    return result;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0)
    result.output.append(buffer, n);
  int status = pclose(pipe);
  result.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

std::string tempPath(const std::string &name) {
  const char *dir = std::getenv("TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/txrt-cli-" + std::to_string(getpid()) +
         "-" + name;
}

std::string writeFile(const std::string &name, const std::vector<uint8_t> &bytes) {
  std::string path = tempPath(name);
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char *>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
  return path;
}

bool gpuPresent() {
  int count = 0;
  txrt_status_t status = txrt_device_count(&count);
  txrt_status_free(status);
  return status == nullptr && count > 0;
}

} // namespace

TEST(TxrunCli, UnknownFlagIsUsageError) {
  RunResult r = runTxrun("x.txa --frobnicate");
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_NE(r.output.find("txrun: error: unknown option '--frobnicate'"), std::string::npos)
      << r.output;
}

TEST(TxrunCli, BadNumberIsUsageError) {
  RunResult r = runTxrun("x.txa --steps abc");
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_NE(r.output.find("expected --steps N with N > 0, but got 'abc'"), std::string::npos);
  r = runTxrun("x.txa --steps 0");
  EXPECT_EQ(r.exitCode, 2) << r.output;
  r = runTxrun("x.txa --seed -3");
  EXPECT_EQ(r.exitCode, 2) << r.output;
  r = runTxrun("x.txa --steps");
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_NE(r.output.find("option '--steps' needs a value"), std::string::npos);
}

TEST(TxrunCli, NoArtifactIsUsageError) {
  RunResult r = runTxrun("--steps 3");
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_NE(r.output.find("no artifact given"), std::string::npos) << r.output;
}

TEST(TxrunCli, HelpExitsZero) {
  RunResult r = runTxrun("--help");
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_NE(r.output.find("--no-graph"), std::string::npos);
}

TEST(TxrunCli, MissingFileIsReported) {
  RunResult r = runTxrun("/nonexistent/step.txa --steps 1");
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_NE(r.output.find("cannot read '/nonexistent/step.txa'"), std::string::npos)
      << r.output;
}

TEST(TxrunCli, GarbageFileIsNotAnArtifact) {
  std::string path = writeFile("garbage.txa", std::vector<uint8_t>(100, 0x5A));
  RunResult r = runTxrun(path + " --steps 1");
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_NE(r.output.find("txrun: error: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("not a txopt artifact"), std::string::npos) << r.output;
  std::remove(path.c_str());
}

TEST(TxrunCli, BadDataFileIsRunError) {
  std::string artifact = writeFile("valid.txa", txrt::test::TestArtifact().build());
  std::string data = writeFile("tokens.bin", std::vector<uint8_t>(64, 0));
  RunResult r = runTxrun(artifact + " --steps 1 --data " + data);
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_NE(r.output.find("too short for an llm.c token file"), std::string::npos)
      << r.output;
  std::remove(artifact.c_str());
  std::remove(data.c_str());
}

TEST(TxrunCli, ValidArtifactWithoutGpuSaysSo) {
  if (gpuPresent())
    GTEST_SKIP() << "this machine has a GPU; the no-GPU message cannot be checked";
  std::string path = writeFile("valid.txa", txrt::test::TestArtifact().build());
  RunResult r = runTxrun(path + " --steps 2");
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_NE(r.output.find("txrun: error: no CUDA GPU found ("), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("txopt-run runs the step on the CPU"), std::string::npos)
      << r.output;
  std::remove(path.c_str());
}

// The training-run flags (issue 12): every error that needs no GPU.
TEST(TxrunCli, RunFlagUsageErrors) {
  RunResult r = runTxrun("x.txa --schedule step");
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_NE(r.output.find("unknown --schedule 'step' (expected cosine, linear or constant)"),
            std::string::npos)
      << r.output;
  r = runTxrun("x.txa --save-every 2");
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_NE(r.output.find("--save-every needs --save DIR"), std::string::npos) << r.output;
  r = runTxrun("x.txa --profile-out p.json");
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_NE(r.output.find("--profile-out needs --profile K"), std::string::npos) << r.output;
  r = runTxrun("x.txa --warmup -1");
  EXPECT_EQ(r.exitCode, 2) << r.output;
  r = runTxrun("x.txa --lr fast");
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_NE(r.output.find("expected --lr X with a finite X >= 0, but got 'fast'"),
            std::string::npos)
      << r.output;
  r = runTxrun("--help");
  for (const char *flag : {"--save DIR", "--resume DIR", "--schedule KIND", "--log FILE",
                           "--shuffle", "--warmup W", "--decay-steps D", "--min-lr Y",
                           "--tune-gemms"})
    EXPECT_NE(r.output.find(flag), std::string::npos) << flag;
}

TEST(TxrunCli, RunFlagErrorsBeforeTheDevice) {
  std::string artifact = writeFile("valid.txa", txrt::test::TestArtifact().build());
  // The test artifact has no lr argument.
  RunResult r = runTxrun(artifact + " --steps 2 --schedule cosine");
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_NE(r.output.find("--schedule: the step has no argument with role 'lr'"),
            std::string::npos)
      << r.output;
  r = runTxrun(artifact + " --steps 2 --shuffle");
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_NE(r.output.find("--shuffle needs --data"), std::string::npos) << r.output;
  // A stream shorter than one batch (8 tokens + 1).
  std::vector<uint8_t> bin(1024 + 2 * 5, 0);
  int32_t header[3] = {20240520, 1, 5};
  std::memcpy(bin.data(), header, sizeof header);
  std::string data = writeFile("short.bin", bin);
  r = runTxrun(artifact + " --steps 2 --data " + data);
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_NE(r.output.find("holds 5 tokens; one batch needs 9"), std::string::npos) << r.output;
  r = runTxrun(artifact + " --steps 2 --resume " + tempPath("nowhere"));
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_NE(r.output.find("no checkpoint.json"), std::string::npos) << r.output;
  // A checkpoint of another recipe, then of another model, is refused.
  std::string dir = tempPath("ckpt");
  txrt::Checkpoint c;
  c.info.producer = "txopt-run";
  c.info.recipe = R"({"optimizer":"adamw"})";
  c.info.step = 3;
  c.tensors.push_back({"w", "param", "F32", {4, 4}, std::vector<uint8_t>(64, 0)});
  ASSERT_TRUE(txrt::saveCheckpoint(dir, c).ok());
  r = runTxrun(artifact + " --steps 5 --resume " + dir);
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_NE(r.output.find("is from another recipe: 'optimizer' is \"adamw\" there and "
                          "\"sgd\" in this step"),
            std::string::npos)
      << r.output;
  c.info.recipe = R"({"optimizer":"sgd"})";
  ASSERT_TRUE(txrt::saveCheckpoint(dir, c).ok());
  r = runTxrun(artifact + " --steps 5 --resume " + dir);
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_NE(r.output.find("has tensor 'w', which this step does not have"), std::string::npos)
      << r.output;
  r = runTxrun(artifact + " --steps 2 --log " + tempPath("no/such/dir/log.jsonl"));
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_NE(r.output.find("cannot write --log"), std::string::npos) << r.output;
  std::remove(artifact.c_str());
  std::remove(data.c_str());
  std::string command = "rm -rf '" + dir + "'";
  EXPECT_EQ(std::system(command.c_str()), 0);
}
