//===- Options.cpp - txopt-run's command line -----------------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// Parsing of txopt-run's flags (switches, valued flags by table, the
// training-run flags of Steps.cpp, checks between flags) and its help text;
// apart from txopt-run.cpp, which runs what they ask for.
//
//===----------------------------------------------------------------------===//

#include "Options.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CheckedArithmetic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace mlir::txopt::reference;
using namespace txopt_run;

int txopt_run::fail(ExitCode code, const llvm::Twine &message) {
  std::string text = message.str();
  std::replace(text.begin(), text.end(), '\n', ' ');
  llvm::errs() << "txopt-run: error: " << text << "\n";
  return code;
}

const char *const txopt_run::kHelp = R"(OVERVIEW: txopt-run - run tx IR on the CPU reference executor (the numerics oracle)

USAGE: txopt-run MODEL.mlir [options]

OPTIONS:
  --function NAME         Function to run (default: 'main' if it exists, else
                          the first public function with a body).
  --input NAME=FILE.npy   Value of argument NAME (its tx.name attribute, or
                          argN for the N-th argument). Repeatable. The file's
                          dtype and shape must match the argument exactly
                          ('<f4' is also accepted for bf16/f16 arguments and
                          rounded). Supported dtypes: <f2 <f4 <f8 <i4 <i8 |b1,
                          and |i1 |u1 <i2 <u2 <u4 <u8 for i8/i16/i32/i64
                          arguments (unsigned values keep their bits); i4
                          and i2 arguments read |i1 files whose values fit.
  --seed S                Seed for arguments without --input (default 0):
                          floats are N(0, 1) by Box-Muller on a splitmix64
                          stream whose state starts at S + (argIndex << 32);
                          integers are uniform in [0, K).
  --int-range NAME=K      K for integer argument NAME. Default: the smallest
                          table size the argument indexes (tx.gather /
                          tx.gather_elements indices, along the axis) or class
                          count it labels (tx.softmax_cross_entropy_loss),
                          followed through data-movement ops; 2 otherwise.
  --f64                   Compute every float value in f64, never rounding to
                          the element types (for finite-difference checks).
  --no-dropout            Let tx.dropout (and tx.attention's dropout) pass
                          its input through (to compare with a reference
                          whose random numbers differ).
  --check-finite[=WHAT]   Stop at the first op whose result holds a NaN
                          (WHAT=nan, the default: -inf attention masks are
                          legitimate) or a NaN or infinity (WHAT=all), and
                          name it with its location (the ONNX node name).
  --output-dir DIR        Also write every output to DIR/NAME.npy (f32 and
                          narrower floats as <f4, f64 or --f64 as <f8).
  --print-limit N         Print the values of outputs with at most N elements
                          (default 16; 0-d outputs always print).
  --steps N               Train: run the step function (the one marked
                          tx.train_step, built by `txopt --train`, unless
                          --function names another) N times, feeding each
                          result marked tx.next back into its argument.
                          Parameters start from their tx.parameter values,
                          optimizer state from tx.init; prints one line per
                          step, `step N  loss L  grad_norm G`. Without --data
                          one seeded random batch is drawn and reused (so the
                          loss falls as the model memorizes it). A NaN or
                          infinite loss or gradient norm stops the run (exit
                          1). --output-dir receives the final state.
                          Step inputs: `lr` is the compiled default (its
                          tx.init) unless --lr says otherwise; `rng_key` (the
                          key of every dropout) is S * 2^32 + k on the
                          step counted from k = 0 (S: --seed; uint64 bits,
                          wrapping), so each step draws a fresh mask.
  --lr X                  With --steps: feed X as the step's `lr` input.
  --ranks N               With --steps: run a data-parallel step (txopt
                          --data-parallel=N) on N simulated ranks, one thread
                          each, meeting in its collectives. Each step reads
                          one window of N x batch tokens; rank r takes the
                          r-th batch of it. Prints the loss (the same on every
                          rank) once per step (docs/DataParallel.md).
  --data FILE             With --steps: token stream for the batch, as a 1-D
                          integer .npy or an llm.c .bin token file; step k
                          reads the next window of batch size tokens, the
                          labels argument the same window shifted by one.
  --max-memory BYTES      Budget for the executor's tensors (8 bytes per
                          element whatever the type; a K, M, G or T suffix
                          multiplies by 2^10, 2^20, 2^30, 2^40; 0: no
                          limit). Default: the machine's physical memory.
                          An argument, constant, parameter or op result
                          that would not fit (with the values live at that
                          point) stops the run with an error naming it and
                          the bytes it needs (exit 1).
  --help                  Print this help.

OUTPUT: one line per result, in order: `NAME = VALUE` for a 0-d result, else
`NAME: tensor<...>` followed by ` = [...]` when it is small enough. Values
print with 9 significant digits (17 for f64 element types).

EXIT STATUS: 0 success, 1 bad model, input or run (e.g. an unsupported op),
2 usage error.
)";

namespace {

/// "123", "64K", "2G", ...: bytes with an optional binary suffix.
std::optional<uint64_t> parseBytes(llvm::StringRef text) {
  uint64_t scale = 1;
  if (!text.empty()) {
    switch (llvm::toUpper(text.back())) {
    case 'K': scale = uint64_t(1) << 10; break;
    case 'M': scale = uint64_t(1) << 20; break;
    case 'G': scale = uint64_t(1) << 30; break;
    case 'T': scale = uint64_t(1) << 40; break;
    default: break;
    }
    if (scale != 1)
      text = text.drop_back();
  }
  uint64_t value;
  if (text.empty() || text.getAsInteger(10, value))
    return std::nullopt;
  return llvm::checkedMulUnsigned(value, scale);
}

/// `--name=value` or `--name value`.
bool takeValue(int argc, char **argv, int &i, llvm::StringRef name,
               std::string &value, std::string &error, bool &matched) {
  llvm::StringRef arg = argv[i];
  std::string flag = ("--" + name).str();
  matched = false;
  if (arg.starts_with(flag + "=")) {
    matched = true;
    value = arg.drop_front(flag.size() + 1).str();
    return true;
  }
  if (arg == flag) {
    matched = true;
    if (i + 1 >= argc) {
      error = "option '" + flag + "' needs a value";
      return false;
    }
    value = argv[++i];
    return true;
  }
  return true;
}

bool splitPair(const std::string &text, std::string &name, std::string &value) {
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    return false;
  name = text.substr(0, eq);
  value = text.substr(eq + 1);
  return true;
}

/// A flag without a value (--help, --f64, --no-dropout, --check-finite):
/// sets |matched| when |arg| is one; false on an error.
bool parseSwitch(llvm::StringRef arg, Options &options, std::string &error,
                 bool &matched) {
  matched = true;
  if (arg == "--help" || arg == "-h")
    options.help = true;
  else if (arg == "--f64")
    options.executor.computeInF64 = true;
  else if (arg == "--no-dropout")
    options.executor.disableDropout = true;
  else if (arg == "--check-finite" || arg == "--check-finite=nan")
    options.executor.checkFinite = FiniteCheck::NaN;
  else if (arg == "--check-finite=all")
    options.executor.checkFinite = FiniteCheck::NonFinite;
  else if (arg.starts_with("--check-finite=")) {
    error = "unknown --check-finite value '" + arg.drop_front(15).str() +
            "' (expected 'nan' or 'all')";
    return false;
  } else
    matched = false;
  return true;
}

/// How one valued flag stores its value; returns false (with |error|) when
/// the value is malformed.
using ValueHandler = bool (*)(const std::string &value, Options &options,
                              std::string &error);

/// txopt-run's own valued flags (--name=VALUE or --name VALUE); the
/// training-run flags are Steps.h's parseRunFlag.
const std::pair<const char *, ValueHandler> kValueFlags[] = {
    {"function",
     [](const std::string &value, Options &options, std::string &) {
       options.function = value;
       return true;
     }},
    {"input",
     [](const std::string &value, Options &options, std::string &error) {
       std::string name, path;
       if (!splitPair(value, name, path)) {
         error = "expected --input NAME=FILE.npy, but got '" + value + "'";
         return false;
       }
       options.inputs.emplace_back(name, path);
       return true;
     }},
    {"int-range",
     [](const std::string &value, Options &options, std::string &error) {
       std::string name, count;
       int64_t k;
       if (!splitPair(value, name, count) ||
           llvm::StringRef(count).getAsInteger(10, k) || k <= 0) {
         error = "expected --int-range NAME=K with K > 0, but got '" + value + "'";
         return false;
       }
       options.intRanges[name] = k;
       return true;
     }},
    {"seed",
     [](const std::string &value, Options &options, std::string &error) {
       if (llvm::StringRef(value).getAsInteger(10, options.seed)) {
         error = "expected a non-negative integer --seed, but got '" + value + "'";
         return false;
       }
       return true;
     }},
    {"output-dir",
     [](const std::string &value, Options &options, std::string &) {
       options.outputDir = value;
       return true;
     }},
    {"steps",
     [](const std::string &value, Options &options, std::string &error) {
       int64_t steps;
       if (llvm::StringRef(value).getAsInteger(10, steps) || steps <= 0) {
         error = "expected --steps N with N > 0, but got '" + value + "'";
         return false;
       }
       options.steps = steps;
       return true;
     }},
    {"ranks",
     [](const std::string &value, Options &options, std::string &error) {
       if (llvm::StringRef(value).getAsInteger(10, options.ranks) ||
           options.ranks < 1 || options.ranks > 1024) {
         error = "expected --ranks N with N in 1..1024, but got '" + value + "'";
         return false;
       }
       return true;
     }},
    {"data",
     [](const std::string &value, Options &options, std::string &) {
       options.dataPath = value;
       return true;
     }},
    {"lr",
     [](const std::string &value, Options &options, std::string &error) {
       double lr;
       if (llvm::StringRef(value).getAsDouble(lr) || !(lr >= 0) ||
           !std::isfinite(lr)) {
         error = "expected --lr X with a finite X >= 0, but got '" + value + "'";
         return false;
       }
       options.lr = lr;
       return true;
     }},
    {"max-memory",
     [](const std::string &value, Options &options, std::string &error) {
       options.maxMemory = parseBytes(value);
       if (!options.maxMemory) {
         error = "expected --max-memory BYTES (an integer, optionally with a "
                 "K, M, G or T suffix), but got '" + value + "'";
         return false;
       }
       return true;
     }},
    {"print-limit",
     [](const std::string &value, Options &options, std::string &error) {
       if (llvm::StringRef(value).getAsInteger(10, options.printLimit) ||
           options.printLimit < 0) {
         error = "expected a non-negative --print-limit, but got '" + value + "'";
         return false;
       }
       return true;
     }},
};

/// Flags that need another: the training-run flags need --steps, and a
/// model is required unless --help.
bool checkFlagCombinations(const Options &options, std::string &error) {
  if (options.dataPath && !options.steps) {
    error = "--data needs --steps";
    return false;
  }
  if (options.ranks > 1 && !options.steps) {
    error = "--ranks needs --steps";
    return false;
  }
  if (options.lr && !options.steps) {
    error = "--lr needs --steps";
    return false;
  }
  if (options.run.any() && !options.steps) {
    error = "--schedule, --warmup, --decay-steps, --min-lr, --shuffle, --save, "
            "--save-every, --resume and --log need --steps";
    return false;
  }
  if (!options.help && options.model.empty()) {
    error = "no model given (usage: txopt-run MODEL.mlir [options]; see --help)";
    return false;
  }
  return true;
}

} // namespace

bool txopt_run::parseOptions(int argc, char **argv, Options &options, std::string &error) {
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef arg = argv[i];
    bool matched = false;
    if (!parseSwitch(arg, options, error, matched))
      return false;
    for (const auto &[name, handle] : kValueFlags) {
      if (matched)
        break;
      std::string value;
      if (!takeValue(argc, argv, i, name, value, error, matched))
        return false;
      if (matched && !handle(value, options, error))
        return false;
    }
    if (!matched &&
        !txopt_run::parseRunFlag(argc, argv, i, options.run, error, matched))
      return false;
    if (matched)
      continue;
    if (arg.starts_with("-") && arg != "-") {
      error = "unknown option '" + arg.str() + "' (see --help)";
      return false;
    }
    if (!options.model.empty()) {
      error = "more than one model given ('" + options.model + "' and '" +
              arg.str() + "')";
      return false;
    }
    options.model = arg.str();
  }
  return checkFlagCombinations(options, error);
}
