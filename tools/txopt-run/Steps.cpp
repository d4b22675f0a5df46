//===- Steps.cpp - txopt-run --steps: repeat a training step --------------===//
//
// SPDX-License-Identifier: Apache-2.0
// The training-run flags (parsed here, shared with txrun's spelling), the
// step function's lookup and runSteps; the run itself is StepRunner's
// (StepRunner.h).
//
//===----------------------------------------------------------------------===//

#include "Steps.h"

#include "StepRunner.h"

#include "txopt/Dialect/Tx/Transforms/TrainStep.h"

#include "llvm/ADT/StringRef.h"

#include <cmath>

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::reference;

bool txopt_run::parseRunFlag(int argc, char **argv, int &i, RunFlags &flags,
                            std::string &error, bool &matched) {
  llvm::StringRef arg = argv[i];
  matched = false;
  if (arg == "--shuffle") {
    matched = true;
    flags.shuffle = true;
    return true;
  }
  static const char *const kValued[] = {"--schedule",   "--warmup",     "--decay-steps",
                                        "--min-lr",     "--save",       "--save-every",
                                        "--resume",     "--log",        "--val-data",
                                        "--eval-every", "--eval-steps"};
  std::string name, value;
  for (const char *flag : kValued) {
    if (arg == flag) {
      if (i + 1 >= argc) {
        error = std::string("option '") + flag + "' needs a value";
        return false;
      }
      name = flag;
      value = argv[++i];
      break;
    }
    if (arg.starts_with(std::string(flag) + "=")) {
      name = flag;
      value = arg.drop_front(std::strlen(flag) + 1).str();
      break;
    }
  }
  if (name.empty())
    return true;
  matched = true;
  auto count = [&](int64_t &out, int64_t min) {
    if (llvm::StringRef(value).getAsInteger(10, out) || out < min) {
      error = "expected " + name + " N with N >= " + std::to_string(min) + ", but got '" +
              value + "'";
      return false;
    }
    return true;
  };
  if (name == "--schedule") {
    txrt::LrSchedule::Kind kind;
    if (!txrt::parseScheduleKind(value, kind)) {
      error = "unknown --schedule '" + value + "' (expected cosine, linear or constant)";
      return false;
    }
    flags.schedule = value;
  } else if (name == "--warmup") {
    int64_t n;
    if (!count(n, 0))
      return false;
    flags.warmup = n;
  } else if (name == "--decay-steps") {
    int64_t n;
    if (!count(n, 1))
      return false;
    flags.decaySteps = n;
  } else if (name == "--save-every") {
    if (!count(flags.saveEvery, 1))
      return false;
  } else if (name == "--eval-every") {
    if (!count(flags.evalEvery, 1))
      return false;
  } else if (name == "--eval-steps") {
    if (!count(flags.evalSteps, 1))
      return false;
  } else if (name == "--min-lr") {
    double x;
    if (llvm::StringRef(value).getAsDouble(x) || !(x >= 0) || !std::isfinite(x)) {
      error = "expected --min-lr X with a finite X >= 0, but got '" + value + "'";
      return false;
    }
    flags.minLr = x;
  } else if (value.empty()) {
    error = "option '" + name + "' needs a value";
    return false;
  } else if (name == "--save") {
    flags.saveDir = value;
  } else if (name == "--resume") {
    flags.resumeDir = value;
  } else if (name == "--log") {
    flags.logPath = value;
  } else if (name == "--val-data") {
    flags.valDataPath = value;
  }
  return true;
}

const char *txopt_run::runFlagsHelp() {
  return R"(TRAINING RUN OPTIONS (with --steps; the same flags as txrun's):
  --schedule KIND         Learning-rate schedule fed to the step's `lr` input
                          on every step: cosine, linear or constant. Base lr:
                          --lr, else the compiled one (tx.init). Warm-up
                          (step s <= W): lr * s / W; then constant: lr;
                          cosine: min + 0.5 * (1 + cos(pi p)) * (lr - min),
                          linear: lr + p * (min - lr), p = (s - W) / (D - W);
                          min-lr from step D on. --warmup, --decay-steps or
                          --min-lr alone imply cosine.
  --warmup W              Warm-up steps (default 0).
  --decay-steps D         Step at which the decay reaches --min-lr (default:
                          --steps).
  --min-lr Y              Floor of the decay (default 0).
  --shuffle               With --data: visit the windows of each epoch in a
                          seeded random order (Fisher-Yates on splitmix64 of
                          the --seed and the epoch).
  --save DIR              Write a checkpoint to DIR after the last step (and
                          every --save-every K steps): DIR/checkpoint.json
                          (manifest) and DIR/model-SSSSSSSS.safetensors
                          (every state argument by name), atomically.
  --save-every K          With --save: also checkpoint after every K-th step.
  --resume DIR            Continue the run saved in DIR: state, step count,
                          data position and seed; --steps N is then the
                          number of the last step. Bit-identical to a run
                          that never stopped (same flags). A checkpoint of
                          another model or recipe, or a corrupted one, is
                          refused naming the tensor.
  --log FILE              Write one JSON object per step to FILE (JSONL):
                          step, loss, grad_norm, lr, ms, tok_per_s (appends
                          with --resume). Plot: scripts/plot_log.py FILE.
  --val-data FILE         Validation tokens (.bin or .npy): the mean loss of
                          the step's @eval (txopt --train --eval) over the
                          first --eval-steps windows of FILE, before the
                          first step, after every --eval-every K-th step and
                          after the last; printed as `step N  val_loss L`
                          and logged as {"step":N,"val_loss":L}.
  --eval-every K          With --val-data: evaluate every K steps (default:
                          before the first step and after the last only).
  --eval-steps M          With --val-data: windows per evaluation (default
                          10; wraps around a shorter stream).
)";
}

func::FuncOp txopt_run::findStepFunction(ModuleOp module) {
  for (auto func : module.getOps<func::FuncOp>())
    if (func->hasAttr(tx::kTrainStepAttrName) && !func.isExternal())
      return func;
  return {};
}

llvm::Error txopt_run::runSteps(Executor &executor, func::FuncOp func,
                                std::vector<std::optional<Tensor>> given,
                                const StepOptions &options,
                                llvm::raw_ostream &os) {
  return StepRunner(executor, func, std::move(given), options, os).runAll();
}
