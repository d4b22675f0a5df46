//===- txrun_cli_test.cpp - txrun's command line and exit codes -----------===//
//
// SPDX-License-Identifier: Apache-2.0
// Runs the built txrun binary. Without a GPU a valid artifact must end in
// exit 1 with "no CUDA GPU"; on a GPU machine that case is skipped visibly.
//
//===----------------------------------------------------------------------===//

#include "test_artifact.h"
#include "txrt/txrt.h"

#include <cstdio>
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
