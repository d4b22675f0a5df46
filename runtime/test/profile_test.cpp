//===- profile_test.cpp - txrun --profile-out's byte counts ---------------===//
//
// SPDX-License-Identifier: Apache-2.0
// The bytes --profile-out gives a command are what the bench summaries
// divide by for "% of copy": a launch counts each argument slot as often as
// it is passed (twice: an output written over an input, read and written),
// and the tensors of a packed kernel's offset table once, unless already
// an argument. Runs without a GPU: writeProfileJson only reads the artifact.
//
//===----------------------------------------------------------------------===//

#include "profile.h"
#include "test_artifact.h"

#include <cstdio>
#include <fstream>
#include <gtest/gtest.h>
#include <regex>
#include <sstream>
#include <string>

using namespace txrt;
using txrt::test::TestArtifact;

namespace {
/// The "bytes" of each command in --profile-out's JSON for |t|.
std::vector<uint64_t> profiledBytes(const TestArtifact &t) {
  std::unique_ptr<Artifact> artifact;
  Status s = Artifact::fromBytes(t.build(), ".", artifact);
  EXPECT_TRUE(s.ok()) << s.message();
  if (!s.ok())
    return {};
  size_t n = artifact->root().commands()->size();
  std::vector<float> ms(n, 1.0f), hostMs(n, 0.0f);
  std::string path = ::testing::TempDir() + "profile_test.json";
  s = txrun::writeProfileJson(path, *artifact, ms, hostMs, static_cast<float>(n));
  EXPECT_TRUE(s.ok()) << s.message();
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::remove(path.c_str());
  std::vector<uint64_t> bytes;
  std::string json = text.str();
  std::regex field("\"bytes\": ([0-9]+)");
  for (std::sregex_iterator it(json.begin(), json.end(), field), end; it != end; ++it)
    bytes.push_back(std::stoull((*it)[1].str()));
  return bytes;
}
} // namespace

// TestArtifact's slots: 0 and 1 of 1024 bytes, 2 and 3 of 256. Command 0 is
// the launch.
TEST(ProfileBytes, LaunchCountsEachArgumentOnce) {
  TestArtifact t;
  t.launchArgs = {0, 1};
  std::vector<uint64_t> bytes = profiledBytes(t);
  ASSERT_FALSE(bytes.empty());
  EXPECT_EQ(bytes[0], 2048u);
}

TEST(ProfileBytes, InPlaceArgumentCountsTwice) {
  TestArtifact t;
  t.launchArgs = {0, 1, 1}; // slot 1 written over an input
  std::vector<uint64_t> bytes = profiledBytes(t);
  ASSERT_FALSE(bytes.empty());
  EXPECT_EQ(bytes[0], 1024u + 2 * 1024u);
}

TEST(ProfileBytes, TableTensorsCountOnceBesideArguments) {
  TestArtifact t;
  t.launchArgs = {0};
  t.launchThrough = {2, 2, 0, 3}; // 0 is an argument already; 2 listed twice
  std::vector<uint64_t> bytes = profiledBytes(t);
  ASSERT_FALSE(bytes.empty());
  EXPECT_EQ(bytes[0], 1024u + 256u + 256u);
}
