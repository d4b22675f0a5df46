//===- options.cpp - txrun's command line ---------------------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// Parsing of txrun's flags (switches, valued options as `--x V` or `--x=V`,
// checks between options) and its help text.
//
//===----------------------------------------------------------------------===//

#include "options.h"

#include "core/training.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sys/stat.h>

using namespace txrt;
using namespace txrun;

const char *const txrun::kHelp = R"(OVERVIEW: txrun - run a compiled training step (step.txa) on a CUDA GPU

USAGE: txrun STEP.txa --steps N [options]
       txrun sample STEP.txa --resume DIR --prompt TEXT [options]
                                          (see txrun sample --help)

OPTIONS:
  --steps N            Run the step N times (N > 0; default 1).
  --data FILE          Token stream, as a 1-D integer .npy or an llm.c .bin
                       token file; step k reads the next window of batch size
                       tokens, the labels argument the same window shifted by
                       one (as txopt-run --data). Without it one seeded random
                       batch is drawn and reused every step.
  --seed S             Seed of the random batch, the dropout key and the
                       --shuffle order (default 0, as txopt-run).
  --lr X               Feed X as the step's `lr` input (default: the
                       compiled lr).
  --schedule KIND      Learning-rate schedule, written to the `lr` argument
                       before every step (like the batch): cosine, linear or
                       constant. Warm-up (step s <= W): lr * s / W; then
                       constant: lr; cosine: min + 0.5*(1 + cos(pi p))*(lr -
                       min); linear: lr + p*(min - lr), p = (s - W)/(D - W);
                       min-lr from step D on. --warmup, --decay-steps or
                       --min-lr alone imply cosine. Same values as txopt-run.
  --warmup W           Warm-up steps (default 0).
  --decay-steps D      Step at which the decay reaches --min-lr (default:
                       --steps).
  --min-lr Y           Floor of the decay (default 0).
  --val-data FILE      Validation stream (same formats as --data; needs
                       --data and an artifact compiled with txopt --eval):
                       the mean loss of the artifact's evaluation function
                       (forward only, dropout off, no state changes) over the
                       stream's first --eval-steps windows, printed as
                       `step N  val_loss L` before the first step, every
                       --eval-every K steps and after the last (as
                       txopt-run --val-data).
  --eval-every K       Validate after every K-th step (default: only before
                       the first step and after the last).
  --eval-steps N       Windows per validation (default 10; they wrap).
  --shuffle            With --data: each epoch visits the windows in a seeded
                       random order (as txopt-run --shuffle).
  --save DIR           Checkpoint after the last step (and every --save-every
                       K steps) into DIR: checkpoint.json (manifest) and
                       model-SSSSSSSS.safetensors (the state arguments by
                       name), written atomically; the format txopt-run writes
                       and reads.
  --save-every K       With --save: also checkpoint after every K-th step.
  --resume DIR         Continue from the checkpoint in DIR (state, step count,
                       data position, seed); --steps N is then the number of
                       the last step. A checkpoint of another model or recipe,
                       or a corrupted one, is refused naming the tensor.
  --log FILE           One JSON object per step (JSONL): step, loss,
                       grad_norm, lr, ms, tok_per_s (appends with --resume).
  --plot FILE.png      With --log: draw the log's training and validation
                       losses into FILE.png after the last step (also
                       `txrun plot LOG [-o FILE.png]` at any time).
  --weights-dir DIR    Folder for the artifact's relative EXTERNAL weight
                       files (default: the artifact's folder).
  --output-dir DIR     Write the final state (every argument whose role is not
                       data/labels) and the last non-state results (loss,
                       grad_norm, ...) as DIR/NAME.npy, named and typed as
                       txopt-run names them. Costs a host copy of the state
                       before every step, so that a NaN/Inf step leaves the
                       last finite state here.
  --dump-results DIR   After the last step write every result as DIR/NAME.npy.
  --log-every K        Print every K-th step line (default 1; the first and
                       last steps always print).
  --profile K          Time step K command by command (no graph) and print
                       where the time goes: per kernel family and the
                       slowest commands (the step still counts as a step).
  --profile-out FILE   With --profile: also write every command of the
                       profiled step as JSON (kind, kernel, origin, ms, and
                       the bytes of the buffers it reads and writes, so
                       GB/s per kernel can be set against the copy ceiling).
  --jit                Load the artifact's PTX (compiled by the driver) even
                       where its cubin would run: the path GPUs of another
                       architecture take, for testing it.
  --deterministic      Same bits on every run (what exact resume needs): the
                       attention backward uses cuDNN's deterministic
                       algorithm, slower and, on Hopper, with a B*H*T*T
                       workspace. Every other command is deterministic
                       without it.
  --tune-gemms         Time the algorithms cuBLASLt offers for each GEMM at
                       load and keep the fastest, instead of its first
                       choice (not with --deterministic: the winner can
                       differ between runs). GPT-2 on an H200 measured no
                       gain from it (bench/NOTES.md, session 14).
  --no-graph           Run every step command by command instead of replaying
                       a CUDA graph captured at step 2.
  --no-overlap         Data parallel: run the gradients' reduce-scatters in
                       order with the other commands instead of on NCCL's
                       own stream beside the backward (txopt --bucket-mb);
                       the same values, for timing the overlap.
  --sync-each          Debugging: synchronize after every command (implies
                       --no-graph) so that a faulting command is named.
  --device I           CUDA device ordinal (default 0; under a launcher,
                       LOCAL_RANK).
  --ranks N            Run a data-parallel step (txopt --data-parallel=N)
                       as N ranks, threads of this process sharing the
                       device, exchanging through host memory in rank
                       order (a check of the sharded step on one GPU; no
                       CUDA graph). Rank 0 prints and writes outputs.
                       An artifact compiled for several counts
                       (--data-parallel=1,2,4) runs the step for N; so
                       does one under a launcher, for WORLD_SIZE.
  --rank-timeout S     How long a rank waits for the others (NCCL setup,
                       the id's rendezvous, a threads' exchange) before it
                       stops with a message naming who is missing
                       (default 300 s).
  --help               Print this help.

DATA PARALLELISM: under a launcher, one process per GPU: torchrun-style
  RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT (or mpirun's
  OMPI_COMM_WORLD_* with MASTER_ADDR/MASTER_PORT) select NCCL: rank 0
  hands out NCCL's id over TCP, each rank runs on device LOCAL_RANK and
  reads its batch of the global window; rank 0 prints and writes outputs.
  WORLD_SIZE must equal the rank count the step was compiled for.

OUTPUT: the recipe and the model FLOPs per step once, then per step
  step N  loss L  grad_norm G  lr X  ms T  tok/s R  TFLOP/s F  MFU U%  mem M GiB
(floats with 9 significant digits; tok/s counts the elements of the "data"
argument, on every rank of a data-parallel run; TFLOP/s divides the compiler's model FLOPs (GEMMs and fused
attention) by the step time, MFU that by the GPU's dense peak for the step's
GEMM precision, printed only for GPUs in txrun's table; mem is the peak
device memory so far), with --val-data the lines `step N  val_loss L`, then the peak device memory and the mean ms and tok/s of the
steps after the first. A NaN or infinite loss or gradient norm stops the run.

EXIT STATUS: 0 success, 1 bad artifact, device or run, 2 usage error.
)";

int txrun::fail(ExitCode code, std::string message) {
  for (char &c : message)
    if (c == '\n')
      c = ' ';
  std::fprintf(stderr, "txrun: error: %s\n", message.c_str());
  return code;
}

bool txrun::parseInt(const std::string &text, int64_t &out) {
  if (text.empty())
    return false;
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno || *end)
    return false;
  out = v;
  return true;
}

namespace {

bool parseUnsigned(const std::string &text, uint64_t &out) {
  if (text.empty() || text[0] == '-' || text[0] == '+')
    return false;
  char *end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (errno || *end)
    return false;
  out = v;
  return true;
}

/// The options that take a value.
const char *const kValued[] = {"--steps", "--data", "--seed",
                                      "--weights-dir", "--output-dir",
                                      "--dump-results", "--log-every", "--device", "--ranks", "--rank-timeout",
                                      "--lr", "--schedule", "--warmup",
                                      "--decay-steps", "--min-lr", "--save",
                                      "--save-every", "--resume", "--log",
                                      "--profile", "--profile-out", "--val-data",
                                      "--eval-every", "--eval-steps", "--plot"};

/// The options without a value: true when |arg| is one (now set in |o|).
bool parseSwitch(const std::string &arg, Options &o) {
  if (arg == "--help" || arg == "-h")
    o.help = true;
  else if (arg == "--no-graph")
    o.noGraph = true;
  else if (arg == "--jit")
    o.forceJit = true;
  else if (arg == "--sync-each")
    o.syncEach = true;
  else if (arg == "--shuffle")
    o.shuffle = true;
  else if (arg == "--deterministic")
    o.deterministic = true;
  else if (arg == "--no-overlap")
    o.overlapCollectives = false;
  else if (arg == "--tune-gemms")
    o.tuneGemms = true;
  else
    return false;
  return true;
}

/// Sets valued option |name| (one of kValued) to |value| in |o|; false
/// with |error| set when the value is not one the option takes.
bool parseValue(const std::string &name, const std::string &value, Options &o,
                std::string &error) {
  if (name == "--steps") {
    if (!parseInt(value, o.steps) || o.steps <= 0) {
      error = "expected --steps N with N > 0, but got '" + value + "'";
      return false;
    }
  } else if (name == "--profile") {
    if (!parseInt(value, o.profileStep) || o.profileStep <= 0) {
      error = "expected --profile K with K > 0, but got '" + value + "'";
      return false;
    }
  } else if (name == "--profile-out") {
    o.profileOut = value;
  } else if (name == "--log-every") {
    if (!parseInt(value, o.logEvery) || o.logEvery <= 0) {
      error = "expected --log-every K with K > 0, but got '" + value + "'";
      return false;
    }
  } else if (name == "--device") {
    int64_t d;
    if (!parseInt(value, d) || d < 0 || d > 1024) {
      error = "expected --device I with I >= 0, but got '" + value + "'";
      return false;
    }
    o.device = static_cast<int>(d);
  } else if (name == "--ranks") {
    if (!parseInt(value, o.ranks) || o.ranks < 1 || o.ranks > 64) {
      error = "expected --ranks N with N in 1..64, but got '" + value + "'";
      return false;
    }
  } else if (name == "--rank-timeout") {
    int64_t seconds = 0;
    if (!parseInt(value, seconds) || seconds < 1 || seconds > 86400) {
      error = "expected --rank-timeout S with S in 1..86400 seconds, but got '" + value + "'";
      return false;
    }
    o.rankTimeoutSeconds = static_cast<double>(seconds);
  } else if (name == "--seed") {
    if (!parseUnsigned(value, o.seed)) {
      error = "expected a non-negative integer --seed, but got '" + value + "'";
      return false;
    }
  } else if (name == "--lr" || name == "--min-lr") {
    char *end = nullptr;
    double x = std::strtod(value.c_str(), &end);
    if (value.empty() || *end || !(x >= 0) || !std::isfinite(x)) {
      error = "expected " + name + " X with a finite X >= 0, but got '" + value + "'";
      return false;
    }
    (name == "--lr" ? o.lr : o.minLr) = x;
  } else if (name == "--eval-every" || name == "--eval-steps") {
    int64_t n;
    if (!parseInt(value, n) || n <= 0) {
      error = "expected " + name + " N with N > 0, but got '" + value + "'";
      return false;
    }
    (name == "--eval-every" ? o.evalEvery : o.evalSteps) = n;
  } else if (name == "--val-data") {
    if (value.empty()) {
      error = "option '--val-data' needs a value";
      return false;
    }
    o.valDataPath = value;
  } else if (name == "--warmup" || name == "--decay-steps" || name == "--save-every") {
    int64_t n;
    int64_t min = name == "--warmup" ? 0 : 1;
    if (!parseInt(value, n) || n < min) {
      error = "expected " + name + " N with N >= " + std::to_string(min) + ", but got '" +
              value + "'";
      return false;
    }
    if (name == "--warmup")
      o.warmup = n;
    else if (name == "--decay-steps")
      o.decaySteps = n;
    else
      o.saveEvery = n;
  } else if (name == "--schedule") {
    LrSchedule::Kind kind;
    if (!parseScheduleKind(value, kind)) {
      error = "unknown --schedule '" + value + "' (expected cosine, linear or constant)";
      return false;
    }
    o.schedule = value;
  } else if (name == "--save" || name == "--resume" || name == "--log" || name == "--plot") {
    if (value.empty()) {
      error = "option '" + name + "' needs a value";
      return false;
    }
    (name == "--save"     ? o.saveDir
     : name == "--resume" ? o.resumeDir
     : name == "--log"    ? o.logPath
                          : o.plotPath) = value;
  } else if (name == "--data") {
    o.dataPath = value;
  } else if (name == "--weights-dir") {
    o.weightsDir = value;
  } else if (name == "--output-dir") {
    o.outputDir = value;
  } else { // --dump-results
    o.dumpDir = value;
  }
  return true;
}

/// The checks between options, once all are read.
bool checkOptions(const Options &o, std::string &error) {
  if (o.saveEvery && !o.saveDir) {
    error = "--save-every needs --save DIR";
    return false;
  }
  if ((o.evalEvery || o.evalSteps) && !o.valDataPath) {
    error = "--eval-every and --eval-steps need --val-data FILE";
    return false;
  }
  if (o.valDataPath && !o.dataPath) {
    error = "--val-data needs --data (validation windows fill the arguments the "
            "training data fills)";
    return false;
  }
  if (o.plotPath && !o.logPath) {
    error = "--plot draws the --log file: give --log FILE too";
    return false;
  }
  if (o.profileOut && !o.profileStep) {
    error = "--profile-out needs --profile K";
    return false;
  }
  if (!o.help && o.artifact.empty()) {
    error = "no artifact given (usage: txrun STEP.txa --steps N [options]; see --help)";
    return false;
  }
  return true;
}

} // namespace

bool txrun::parseOptions(int argc, char **argv, Options &o, std::string &error) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (parseSwitch(arg, o))
      continue;
    std::string name = arg, value;
    bool hasValue = false;
    if (arg.rfind("--", 0) == 0) {
      size_t eq = arg.find('=');
      if (eq != std::string::npos) {
        name = arg.substr(0, eq);
        value = arg.substr(eq + 1);
        hasValue = true;
      }
    }
    bool valued = false;
    for (const char *v : kValued)
      valued |= name == v;
    if (valued && !hasValue) {
      if (i + 1 >= argc) {
        error = "option '" + name + "' needs a value";
        return false;
      }
      value = argv[++i];
    }
    if (valued) {
      if (!parseValue(name, value, o, error))
        return false;
    } else if (arg.size() > 1 && arg[0] == '-') {
      error = "unknown option '" + arg + "' (see --help)";
      return false;
    } else if (!o.artifact.empty()) {
      error = "more than one artifact given ('" + o.artifact + "' and '" + arg + "')";
      return false;
    } else {
      o.artifact = arg;
    }
  }
  return checkOptions(o, error);
}

bool txrun::fileExists(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}
