//===- options.h - txrun's command line -------------------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// txrun's options, their parsing and help text, and the one-line error
// convention (`txrun: error: ...`, exit 1 or 2) every part of txrun reports
// through.
//
//===----------------------------------------------------------------------===//

#ifndef TXRT_TOOLS_TXRUN_OPTIONS_H
#define TXRT_TOOLS_TXRUN_OPTIONS_H

#include "core/batch.h"

#include <cstdint>
#include <optional>
#include <string>

namespace txrun {

enum ExitCode { kSuccess = 0, kRunError = 1, kUsageError = 2 };

/// The text of --help.
extern const char *const kHelp;

struct Options {
  std::string artifact;
  int64_t steps = 1;
  std::optional<std::string> dataPath, weightsDir, outputDir, dumpDir;
  uint64_t seed = txrt::kDefaultSeed;
  int64_t logEvery = 1;
  std::optional<double> lr, minLr;
  std::optional<std::string> schedule, saveDir, resumeDir, logPath, plotPath;
  std::optional<int64_t> warmup, decaySteps;
  int64_t saveEvery = 0;
  /// Validation: --val-data FILE, evaluated before the first step, every
  /// --eval-every K steps and after the last, over --eval-steps windows.
  std::optional<std::string> valDataPath;
  int64_t evalEvery = 0, evalSteps = 0;
  bool shuffle = false;
  bool noGraph = false, syncEach = false, help = false, forceJit = false;
  bool deterministic = false;
  bool overlapCollectives = true; ///< --no-overlap clears it
  bool tuneGemms = false;
  int64_t profileStep = 0;
  std::optional<std::string> profileOut;
  int device = 0;
  /// --ranks N: N data-parallel ranks as threads sharing the device (0:
  /// not given).
  int64_t ranks = 0;
  /// --rank-timeout S: how long a rank waits for the others.
  double rankTimeoutSeconds = 300;
};

/// Prints `txrun: error: MESSAGE` (on one line) and returns |code|.
int fail(ExitCode code, std::string message);

/// Parses argv into |o|; false with |error| set on a usage error.
bool parseOptions(int argc, char **argv, Options &o, std::string &error);

/// A whole decimal integer (no trailing characters, no overflow).
bool parseInt(const std::string &text, int64_t &out);

/// True when |path| names a regular file.
bool fileExists(const std::string &path);

} // namespace txrun

#endif // TXRT_TOOLS_TXRUN_OPTIONS_H
