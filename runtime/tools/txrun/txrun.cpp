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

#include <cstdio>
#include <exception>
#include <string>

using namespace txrun;

int main(int argc, char **argv) {
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
