//===- txrun.cpp - run a compiled training step on the GPU ----------------===//
//
// SPDX-License-Identifier: Apache-2.0
// `txrun step.txa --steps N [options]`: the GPU counterpart of
// `txopt-run model.mlir --steps N`. The batch (seeded random, or windows of
// a token file) is fed exactly as txopt-run feeds it, so the two executors'
// losses can be compared step by step. Errors are one line,
// `txrun: error: ...`: exit 1 for a bad artifact, device or run, 2 for a
// usage error.
//
// The parts: options.cpp (flags, help), run.cpp (the run), profile.cpp
// (--profile), host_tensors.cpp (tensors read back, .npy outputs),
// sample.cpp (`txrun sample`: generation from a trained step).
//
//===----------------------------------------------------------------------===//

#include "options.h"
#include "run.h"
#include "sample.h"

#include "core/loss_plot.h"

#include <cstdio>
#include <exception>
#include <string>

using namespace txrun;

/// `txrun plot LOG [-o FILE.png]`: the loss curves of a --log file.
static int plot(int argc, char **argv) {
  std::string log, png;
  for (int i = 2; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs("USAGE: txrun plot LOG.jsonl [-o FILE.png]\n\nDraws the training and "
                 "validation losses of a --log file (txrun or txopt-run) as a PNG\n"
                 "(default: LOG with .png for its extension).\n",
                 stdout);
      return kSuccess;
    }
    if (arg == "-o") {
      if (i + 1 >= argc)
        return fail(kUsageError, "option '-o' needs a value");
      png = argv[++i];
    } else if (arg.size() > 1 && arg[0] == '-') {
      return fail(kUsageError, "unknown option '" + arg + "' (see txrun plot --help)");
    } else if (!log.empty()) {
      return fail(kUsageError, "more than one log given ('" + log + "' and '" + arg + "')");
    } else {
      log = arg;
    }
  }
  if (log.empty())
    return fail(kUsageError, "no log given (usage: txrun plot LOG.jsonl [-o FILE.png])");
  if (png.empty())
    png = log.substr(0, log.rfind('.') == std::string::npos ? log.size() : log.rfind('.')) +
          ".png";
  txrt::LossCurves curves;
  if (txrt::Status s = txrt::readLossCurves(log, curves); !s.ok())
    return fail(kRunError, s.message());
  if (txrt::Status s = txrt::writeLossPlot(curves, png); !s.ok())
    return fail(kRunError, s.message());
  std::printf("wrote %s (%zu steps, %zu validations)\n", png.c_str(), curves.train.size(),
              curves.val.size());
  return kSuccess;
}

int main(int argc, char **argv) {
  if (argc > 1 && std::string(argv[1]) == "plot")
    return plot(argc, argv);
  if (argc > 1 && std::string(argv[1]) == "sample") {
    SampleOptions options;
    std::string error;
    if (!parseSampleOptions(argc, argv, options, error))
      return fail(kUsageError, error);
    if (options.help) {
      std::fputs(kSampleHelp, stdout);
      return kSuccess;
    }
    if (!fileExists(options.artifact))
      return fail(kUsageError, "cannot read '" + options.artifact + "': no such file");
    try {
      return sample(options);
    } catch (const std::exception &e) {
      return fail(kRunError, std::string("internal error: ") + e.what());
    }
  }
  Options options;
  std::string error;
  if (!parseOptions(argc, argv, options, error))
    return fail(kUsageError, error);
  if (options.help) {
    std::fputs(kHelp, stdout);
    return kSuccess;
  }
  if (!fileExists(options.artifact))
    return fail(kUsageError, "cannot read '" + options.artifact + "': no such file");
  if (options.dataPath && !fileExists(*options.dataPath))
    return fail(kUsageError, "cannot read --data '" + *options.dataPath +
                                 "': no such file");
  try {
    return run(options);
  } catch (const std::exception &e) {
    return fail(kRunError, std::string("internal error: ") + e.what());
  }
}
