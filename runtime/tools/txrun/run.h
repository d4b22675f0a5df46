//===- run.h - txrun: the training run --------------------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// One txrun invocation after its options are parsed: load, resume, run the
// steps, write the outputs.
//
//===----------------------------------------------------------------------===//

#ifndef TXRT_TOOLS_TXRUN_RUN_H
#define TXRT_TOOLS_TXRUN_RUN_H

#include "options.h"

namespace txrun {

/// Runs the steps |o| asks for; returns the process's exit code (errors are
/// reported through fail()).
int run(const Options &o);

} // namespace txrun

#endif // TXRT_TOOLS_TXRUN_RUN_H
