//===- Options.cpp - txopt command-line options ---------------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// A small hand-written parser: llvm::cl exits with status 1 on a bad flag,
// and txopt promises status 2 for every usage error.
//
//===----------------------------------------------------------------------===//

#include "Options.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

using namespace txopt_cli;

const char *txopt_cli::helpText() {
  return R"(OVERVIEW: txopt - training compiler for transformers (ONNX in, fused tx IR out)

USAGE: txopt MODEL.onnx [options]
       txopt MODEL.onnxtxt [options]      (ONNX textual syntax)

OPTIONS:
  -o FILE                 Write the IR to FILE ('-' = stdout, the default).
                          The file is replaced atomically, only on success.
  --emit=KIND             What to write: 'fused' (default: import, then the
                          default pipeline) or 'tx' (the IR right after import).
  --input-shape NAME=DIMS Size every dim of graph input NAME, e.g. ids=2x32.
                          Needed when the model has symbolic dims. Repeatable.
  --no-fuse=LIST          Skip fusions: comma-separated 'norms', 'optimizer'
                          or 'all'.
  --report=FILE           Write a JSON report: what was imported, fused, and
                          why each near-miss was not fused.
  --print-locations       Keep ONNX node names as locations in the output.
  -v, --verbose           Print a longer summary, with every near-miss.
  -q, --quiet             Print no summary.
  --help                  Print this help.
  --version               Print the version.

EXIT STATUS: 0 success, 1 the model could not be compiled, 2 usage error.
)";
}

/// Parses `2x32x128` into dims; every dim must be a positive integer.
static bool parseDims(const std::string &text, std::vector<int64_t> &dims) {
  dims.clear();
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('x', start);
    std::string item = text.substr(start, end == std::string::npos
                                              ? std::string::npos
                                              : end - start);
    if (item.empty() || item.find_first_not_of("0123456789") != std::string::npos)
      return false;
    errno = 0;
    long long value = std::strtoll(item.c_str(), nullptr, 10);
    if (errno != 0 || value <= 0 || value > (1LL << 40))
      return false;
    dims.push_back(value);
    if (end == std::string::npos)
      break;
    start = end + 1;
  }
  return !dims.empty();
}

/// Matches `--name=value` or `--name value`; advances |i| for the latter.
static bool takeValue(int argc, char **argv, int &i, const char *name,
                      std::string &value, std::string &error) {
  std::string arg = argv[i];
  std::string flag = std::string("--") + name;
  if (arg.rfind(flag + "=", 0) == 0) {
    value = arg.substr(flag.size() + 1);
    return true;
  }
  if (arg == flag) {
    if (i + 1 >= argc) {
      error = "option '" + flag + "' needs a value";
      return false;
    }
    value = argv[++i];
    return true;
  }
  return false;
}

bool txopt_cli::parseOptions(int argc, char **argv, Options &options,
                             std::string &error) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    if (arg == "--help" || arg == "-h") {
      options.showHelp = true;
    } else if (arg == "--version") {
      options.showVersion = true;
    } else if (arg == "-v" || arg == "--verbose") {
      options.verbose = true;
    } else if (arg == "-q" || arg == "--quiet") {
      options.quiet = true;
    } else if (arg == "--print-locations") {
      options.printLocations = true;
    } else if (arg == "-o") {
      if (i + 1 >= argc) {
        error = "option '-o' needs a file name";
        return false;
      }
      options.output = argv[++i];
    } else if (arg.rfind("-o", 0) == 0 && arg.size() > 2 && arg[2] != '-') {
      options.output = arg.substr(2);
    } else if (takeValue(argc, argv, i, "emit", value, error)) {
      if (value == "tx")
        options.emit = EmitKind::Imported;
      else if (value == "fused")
        options.emit = EmitKind::Fused;
      else {
        error = "unknown --emit value '" + value + "' (expected 'tx' or 'fused')";
        return false;
      }
    } else if (takeValue(argc, argv, i, "input-shape", value, error)) {
      size_t eq = value.rfind('=');
      std::vector<int64_t> dims;
      if (eq == std::string::npos || eq == 0 ||
          !parseDims(value.substr(eq + 1), dims)) {
        error = "bad --input-shape '" + value +
                "' (expected NAME=DIMS with positive dims, e.g. ids=2x32)";
        return false;
      }
      options.inputShapes[value.substr(0, eq)] = dims;
    } else if (takeValue(argc, argv, i, "no-fuse", value, error)) {
      size_t start = 0;
      while (start <= value.size()) {
        size_t comma = value.find(',', start);
        std::string item = value.substr(start, comma == std::string::npos
                                                   ? std::string::npos
                                                   : comma - start);
        if (item == "norms" || item == "all")
          options.fuseNorms = false;
        if (item == "optimizer" || item == "all")
          options.fuseOptimizer = false;
        if (item != "norms" && item != "optimizer" && item != "all") {
          error = "unknown fusion '" + item +
                  "' in --no-fuse (expected norms, optimizer or all)";
          return false;
        }
        if (comma == std::string::npos)
          break;
        start = comma + 1;
      }
    } else if (takeValue(argc, argv, i, "report", value, error)) {
      if (value.empty()) {
        error = "option '--report' needs a file name";
        return false;
      }
      options.reportPath = value;
    } else if (!error.empty()) {
      return false;
    } else if (arg.size() > 1 && arg[0] == '-') {
      error = "unknown option '" + arg + "' (see txopt --help)";
      return false;
    } else if (!options.input.empty()) {
      error = "more than one model given ('" + options.input + "' and '" +
              arg + "')";
      return false;
    } else {
      options.input = arg;
    }
  }
  if (!error.empty())
    return false;
  if (options.input.empty() && !options.showHelp && !options.showVersion) {
    error = "no model given (usage: txopt MODEL.onnx -o OUT.mlir)";
    return false;
  }
  return true;
}
