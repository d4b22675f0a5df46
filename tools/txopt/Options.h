//===- Options.h - txopt command-line options -------------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// The options of the user-facing `txopt` driver and their parser.
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_TOOLS_TXOPT_OPTIONS_H
#define TXOPT_TOOLS_TXOPT_OPTIONS_H

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace txopt_cli {

/// What `--emit` selects: the IR right after import, or after the pipeline.
enum class EmitKind { Imported, Fused };

struct Options {
  std::string input;
  std::string output = "-";
  EmitKind emit = EmitKind::Fused;
  std::map<std::string, std::vector<int64_t>> inputShapes;
  std::optional<std::string> reportPath;
  bool verbose = false;
  bool quiet = false;
  bool printLocations = false;
  bool fuseNorms = true;     ///< off with --no-fuse=norms
  bool fuseOptimizer = true; ///< off with --no-fuse=optimizer
  bool showHelp = false;
  bool showVersion = false;
};

/// Parses argv. On a usage error returns false with a one-line |error|;
/// the driver then exits with status 2.
bool parseOptions(int argc, char **argv, Options &options, std::string &error);

/// The text `txopt --help` prints.
const char *helpText();

} // namespace txopt_cli

#endif // TXOPT_TOOLS_TXOPT_OPTIONS_H
