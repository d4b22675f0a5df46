//===- Steps.h - txopt-run --steps: repeat a training step ------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// Runs a step function built by tx-build-train-step N times on the
// reference executor, feeding each result marked `tx.next = i` back into
// argument i, and prints one line per step.
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_TOOLS_TXOPT_RUN_STEPS_H
#define TXOPT_TOOLS_TXOPT_RUN_STEPS_H

#include "txopt/Reference/Executor.h"
#include "txopt/Reference/Tensor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <vector>

namespace txopt_run {

/// The training-run flags of `txopt-run --steps` (checkpoints, schedule,
/// data order, log); parsed here (parseRunFlag) so that txopt-run.cpp only
/// forwards them. Their semantics are shared with txrun through txrt
/// (runtime/src/core/checkpoint.h, training.h).
struct RunFlags {
  /// --schedule cosine|linear|constant; implied cosine by --warmup,
  /// --decay-steps or --min-lr.
  std::optional<std::string> schedule;
  std::optional<int64_t> warmup, decaySteps;
  std::optional<double> minLr;
  /// --shuffle: seeded window order (needs --data).
  bool shuffle = false;
  /// --save DIR [--save-every K]: checkpoint after every K-th step and
  /// after the last one; --resume DIR: continue from a checkpoint.
  std::optional<std::string> saveDir, resumeDir;
  int64_t saveEvery = 0;
  /// --log FILE: one JSON object per step.
  std::optional<std::string> logPath;
  /// --val-data FILE [--eval-every K] [--eval-steps M]: the validation
  /// loss (the step's @eval) over the first M windows of FILE, before the
  /// first step and after every K-th and the last.
  std::optional<std::string> valDataPath;
  int64_t evalEvery = 0, evalSteps = 0;
  bool any() const {
    return schedule || warmup || decaySteps || minLr || shuffle || saveDir || resumeDir ||
           saveEvery || logPath || valDataPath || evalEvery || evalSteps;
  }
};

/// Matches argv[i] against the run flags; |matched| says whether it was
/// one. False (with |error|) on a bad value.
bool parseRunFlag(int argc, char **argv, int &i, RunFlags &flags, std::string &error,
                  bool &matched);
/// The --help lines of the run flags.
const char *runFlagsHelp();

struct StepOptions {
  int64_t steps = 1;
  /// Token file: .npy (1-D integers) or llm.c's .bin (uint16 tokens after a
  /// 256 x int32 header). Unset: one seeded random batch, reused every step.
  std::optional<std::string> dataPath;
  /// Seeds the random batch and the dropout key: the argument with role
  /// `rng` gets rngKey(seed, k) on the step counted from k = 0.
  uint64_t seed = 0;
  /// The value of the argument with role `lr`; unset: its tx.init.
  std::optional<double> lr;
  /// Write the final state (every `tx.next` result) and the last loss here.
  std::optional<std::string> outputDir;
  /// Simulated data-parallel ranks (RankLoop.cpp); 1: the plain loop.
  int64_t ranks = 1;
  /// Checkpoints, schedule, shuffle, log. With --resume, |steps| is the
  /// number of the last step, counted from the start of the run.
  RunFlags run;
};

/// The dropout key of step |stepIndex| (counted from 0) of a run seeded with
/// |seed|: `seed * 2^32 + stepIndex` in wrapping uint64 arithmetic, passed as
/// the bits of an i64. The GPU runtime (txrun) feeds the same value, so both
/// draw the same masks.
inline int64_t rngKey(uint64_t seed, uint64_t stepIndex) {
  return static_cast<int64_t>((seed << 32) + stepIndex);
}

/// Runs |func| |options.steps| times. |given| holds the values of `--input`
/// arguments (they override initial values and fix batch arguments); every
/// other argument starts from its `tx.parameter`'s value, its `tx.init`
/// splat, a window of the token file, or a seeded random batch; the step
/// inputs are `lr` (|options.lr| or its tx.init) and `rng_key` (rngKey). A NaN or
/// infinite loss or gradient norm stops the run with an error naming the
/// step. Prints `step N  loss L  grad_norm G` per step to |os|.
llvm::Error runSteps(mlir::txopt::reference::Executor &executor,
                     mlir::func::FuncOp func,
                     std::vector<std::optional<mlir::txopt::reference::Tensor>> given,
                     const StepOptions &options, llvm::raw_ostream &os);

/// The step function of |module|: the one marked `tx.train_step`.
mlir::func::FuncOp findStepFunction(mlir::ModuleOp module);

} // namespace txopt_run

#endif // TXOPT_TOOLS_TXOPT_RUN_STEPS_H
