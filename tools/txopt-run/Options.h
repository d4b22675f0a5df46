//===- Options.h - txopt-run's command line ---------------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// txopt-run's options, their parsing and help text, and the one-line error
// convention (`txopt-run: error: ...`, exit 1 or 2).
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_TOOLS_TXOPT_RUN_OPTIONS_H
#define TXOPT_TOOLS_TXOPT_RUN_OPTIONS_H

#include "Steps.h"

#include "txopt/Reference/Executor.h"

#include "llvm/ADT/Twine.h"

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace txopt_run {

enum ExitCode { kSuccess = 0, kRunError = 1, kUsageError = 2 };

/// Prints `txopt-run: error: MESSAGE` (on one line) and returns |code|.
int fail(ExitCode code, const llvm::Twine &message);

/// The text of --help (the training-run flags' text is runFlagsHelp()).
extern const char *const kHelp;

struct Options {
  std::string model;
  std::optional<std::string> function;
  std::vector<std::pair<std::string, std::string>> inputs;
  std::map<std::string, int64_t> intRanges;
  uint64_t seed = 0;
  mlir::txopt::reference::ExecutorOptions executor;
  std::optional<std::string> outputDir;
  int64_t printLimit = 16;
  std::optional<int64_t> steps;
  /// --ranks N: simulated data-parallel ranks (threads) running the step.
  int64_t ranks = 1;
  std::optional<std::string> dataPath;
  std::optional<double> lr;
  RunFlags run; // checkpoints, schedule, log (Steps.h)
  std::optional<uint64_t> maxMemory;
  bool help = false;
};

/// Parses argv into |options|; false with |error| set on a usage error.
bool parseOptions(int argc, char **argv, Options &options, std::string &error);

} // namespace txopt_run

#endif // TXOPT_TOOLS_TXOPT_RUN_OPTIONS_H
