//===- sample.h - txrun sample: text from a trained step ---------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// `txrun sample STEP.txa --resume DIR --prompt TEXT`: generation from the
// artifact's logits function (txopt --train --eval with a cross-entropy
// loss) under a checkpoint's weights, one token at a time.
//
//===----------------------------------------------------------------------===//

#ifndef TXRT_TOOLS_TXRUN_SAMPLE_H
#define TXRT_TOOLS_TXRUN_SAMPLE_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace txrun {

extern const char *const kSampleHelp;

struct SampleOptions {
  std::string artifact;
  std::optional<std::string> resumeDir, weightsDir;
  /// The prompt: TEXT's bytes as tokens (a byte-level vocabulary), or ids.
  std::optional<std::string> prompt;
  std::vector<int64_t> promptIds;
  int64_t tokens = 200;
  int64_t topK = 1;          ///< 1: greedy
  double temperature = 1.0;
  uint64_t seed = 0;
  int device = 0;
  bool help = false;
};

/// Parses `txrun sample ...` (argv[1] == "sample"); false with |error|.
bool parseSampleOptions(int argc, char **argv, SampleOptions &o, std::string &error);
/// Runs it; returns the exit code.
int sample(const SampleOptions &o);

} // namespace txrun

#endif // TXRT_TOOLS_TXRUN_SAMPLE_H
