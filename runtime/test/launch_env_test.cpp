//===- launch_env_test.cpp - reading the launcher's environment -----------===//
//
// SPDX-License-Identifier: Apache-2.0
// Each malformed launch must fail with one line naming the variable and its
// value; a plain run (nothing set) is not an error.
//
//===----------------------------------------------------------------------===//

#include "core/launch_env.h"

#include <gtest/gtest.h>
#include <map>
#include <string>

namespace {

using txrt::LaunchEnvironment;
using Variables = std::map<std::string, std::string>;

txrt::Status readFrom(const Variables &variables, std::optional<LaunchEnvironment> &out) {
  return txrt::readLaunchEnvironment(
      [&](const char *name) -> const char * {
        auto it = variables.find(name);
        return it == variables.end() ? nullptr : it->second.c_str();
      },
      out);
}

/// The message of a launch that must be refused.
std::string refusal(const Variables &variables) {
  std::optional<LaunchEnvironment> env;
  txrt::Status status = readFrom(variables, env);
  EXPECT_EQ(status.code(), TXRT_INVALID_ARGUMENT) << status.message();
  EXPECT_FALSE(env.has_value());
  EXPECT_EQ(status.message().find('\n'), std::string::npos) << status.message();
  return status.message();
}

const Variables kTorchrun = {{"RANK", "2"},           {"WORLD_SIZE", "4"},
                             {"LOCAL_RANK", "1"},     {"MASTER_ADDR", "10.0.0.7"},
                             {"MASTER_PORT", "29500"}};

TEST(LaunchEnv, NothingSetIsAPlainRun) {
  std::optional<LaunchEnvironment> env = LaunchEnvironment();
  txrt::Status status = readFrom({{"PATH", "/usr/bin"}, {"LOCAL_RANK", "0"}}, env);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_FALSE(env.has_value());
}

TEST(LaunchEnv, Torchrun) {
  std::optional<LaunchEnvironment> env;
  txrt::Status status = readFrom(kTorchrun, env);
  ASSERT_TRUE(status.ok()) << status.message();
  ASSERT_TRUE(env.has_value());
  EXPECT_EQ(env->rank, 2);
  EXPECT_EQ(env->worldSize, 4);
  EXPECT_EQ(env->localRank, 1);
  EXPECT_EQ(env->masterAddr, "10.0.0.7");
  EXPECT_EQ(env->masterPort, 29500);
  EXPECT_EQ(env->source, "torchrun");
}

TEST(LaunchEnv, Mpirun) {
  std::optional<LaunchEnvironment> env;
  txrt::Status status = readFrom({{"OMPI_COMM_WORLD_RANK", "3"},
                                  {"OMPI_COMM_WORLD_SIZE", "8"},
                                  {"OMPI_COMM_WORLD_LOCAL_RANK", "3"},
                                  {"MASTER_ADDR", "node0"},
                                  {"MASTER_PORT", "1234"}},
                                 env);
  ASSERT_TRUE(status.ok()) << status.message();
  ASSERT_TRUE(env.has_value());
  EXPECT_EQ(env->rank, 3);
  EXPECT_EQ(env->worldSize, 8);
  EXPECT_EQ(env->localRank, 3);
  EXPECT_EQ(env->masterAddr, "node0");
  EXPECT_EQ(env->masterPort, 1234);
  EXPECT_EQ(env->source, "mpirun");
}

TEST(LaunchEnv, OneRankNeedsNoMaster) {
  std::optional<LaunchEnvironment> env;
  txrt::Status status = readFrom({{"RANK", "0"}, {"WORLD_SIZE", "1"}}, env);
  ASSERT_TRUE(status.ok()) << status.message();
  ASSERT_TRUE(env.has_value());
  EXPECT_EQ(env->worldSize, 1);
  EXPECT_EQ(env->masterAddr, "127.0.0.1");
  EXPECT_EQ(env->masterPort, 0);
}

TEST(LaunchEnv, LocalRankDefaultsToRank) {
  Variables variables = kTorchrun;
  variables.erase("LOCAL_RANK");
  std::optional<LaunchEnvironment> env;
  ASSERT_TRUE(readFrom(variables, env).ok());
  EXPECT_EQ(env->localRank, 2);
}

TEST(LaunchEnv, EmptyCountsAsUnset) {
  Variables variables = kTorchrun;
  variables["RANK"] = "";
  EXPECT_EQ(refusal(variables),
            "launch environment: WORLD_SIZE=4 is set but RANK is not");
}

TEST(LaunchEnv, PartialIsRefused) {
  EXPECT_EQ(refusal({{"RANK", "1"}}), "launch environment: RANK=1 is set but WORLD_SIZE is not");
  EXPECT_EQ(refusal({{"OMPI_COMM_WORLD_SIZE", "2"}}),
            "launch environment: OMPI_COMM_WORLD_SIZE=2 is set but OMPI_COMM_WORLD_RANK "
            "is not");
}

TEST(LaunchEnv, MalformedNumbersAreRefused) {
  for (const char *name : {"RANK", "WORLD_SIZE", "LOCAL_RANK"}) {
    for (const char *value : {"abc", "-1", "1.0", " 1", "+1"}) {
      Variables variables = kTorchrun;
      variables[name] = value;
      EXPECT_EQ(refusal(variables), std::string("launch environment: ") + name + "=" +
                                        value + " is not a non-negative integer");
    }
  }
  Variables huge = kTorchrun;
  huge["WORLD_SIZE"] = "99999999999999999999";
  EXPECT_EQ(refusal(huge),
            "launch environment: WORLD_SIZE=99999999999999999999 is too large");
}

TEST(LaunchEnv, OutOfRangeIsRefused) {
  Variables rank = kTorchrun;
  rank["RANK"] = "4";
  EXPECT_EQ(refusal(rank), "launch environment: RANK=4 is not below WORLD_SIZE=4");
  Variables local = kTorchrun;
  local["LOCAL_RANK"] = "7";
  EXPECT_EQ(refusal(local), "launch environment: LOCAL_RANK=7 is not below WORLD_SIZE=4");
  Variables zero = kTorchrun;
  zero["WORLD_SIZE"] = "0";
  EXPECT_EQ(refusal(zero), "launch environment: WORLD_SIZE=0 must be at least 1");
}

TEST(LaunchEnv, PortMustBeATcpPort) {
  for (const char *port : {"0", "65536", "70000"}) {
    Variables variables = kTorchrun;
    variables["MASTER_PORT"] = port;
    EXPECT_EQ(refusal(variables), std::string("launch environment: MASTER_PORT=") + port +
                                      " is not a TCP port (1..65535)");
  }
  Variables text = kTorchrun;
  text["MASTER_PORT"] = "http";
  EXPECT_EQ(refusal(text), "launch environment: MASTER_PORT=http is not a non-negative integer");
}

// torchrun's agent serves its own store on MASTER_PORT (and says so):
// the rendezvous takes the next port; TXRT_RENDEZVOUS_PORT overrides both.
TEST(LaunchEnv, RendezvousPortBesideTorchrunsStore) {
  Variables variables = kTorchrun;
  variables["TORCHELASTIC_USE_AGENT_STORE"] = "True";
  std::optional<LaunchEnvironment> env;
  txrt::Status status = readFrom(variables, env);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(env->masterPort, 29501);
  variables["TORCHELASTIC_USE_AGENT_STORE"] = "False";
  ASSERT_TRUE(readFrom(variables, env).ok());
  EXPECT_EQ(env->masterPort, 29500);
  variables["TXRT_RENDEZVOUS_PORT"] = "31000";
  ASSERT_TRUE(readFrom(variables, env).ok());
  EXPECT_EQ(env->masterPort, 31000);
  variables["TXRT_RENDEZVOUS_PORT"] = "0";
  EXPECT_EQ(refusal(variables),
            "launch environment: TXRT_RENDEZVOUS_PORT=0 is not a TCP port (1..65535)");
}

TEST(LaunchEnv, MasterIsRequiredForSeveralRanks) {
  Variables noAddr = kTorchrun;
  noAddr.erase("MASTER_ADDR");
  EXPECT_EQ(refusal(noAddr), "launch environment: MASTER_ADDR is not set (rank 0's "
                             "address; required when the world size is 4)");
  Variables noPort = kTorchrun;
  noPort.erase("MASTER_PORT");
  EXPECT_EQ(refusal(noPort), "launch environment: MASTER_PORT is not set (rank 0's "
                             "rendezvous port; required when the world size is 4)");
  // mpirun does not set them either.
  std::string message = refusal({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"}});
  EXPECT_NE(message.find("MASTER_ADDR is not set"), std::string::npos) << message;
}

TEST(LaunchEnv, LaunchersMustAgree) {
  Variables both = kTorchrun;
  both["OMPI_COMM_WORLD_RANK"] = "0";
  both["OMPI_COMM_WORLD_SIZE"] = "4";
  EXPECT_EQ(refusal(both), "launch environment: RANK=2 WORLD_SIZE=4 disagree with "
                           "OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=4");
  both["OMPI_COMM_WORLD_RANK"] = "2";
  std::optional<LaunchEnvironment> env;
  ASSERT_TRUE(readFrom(both, env).ok());
  EXPECT_EQ(env->source, "torchrun");
}

} // namespace
