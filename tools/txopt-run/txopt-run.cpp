//===- txopt-run.cpp - run tx IR on the CPU reference executor ------------===//
//
// SPDX-License-Identifier: Apache-2.0
// `txopt-run model.mlir [options]`: parses tx IR, runs one function on the
// reference executor (lib/Reference) with inputs from .npy files or seeded
// random values, prints every output and optionally writes them as .npy.
// Errors are one line, `txopt-run: error: ...`: exit 1 for a bad model,
// input or run, 2 for a usage error.
//
//===----------------------------------------------------------------------===//

#include "Inputs.h"
#include "Steps.h"

#include "txopt/InitAll.h"
#include "txopt/Reference/Executor.h"
#include "txopt/Reference/Npy.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CheckedArithmetic.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <optional>

using namespace mlir;
using namespace mlir::txopt::reference;

namespace {

enum ExitCode { kSuccess = 0, kRunError = 1, kUsageError = 2 };

int fail(ExitCode code, const llvm::Twine &message) {
  std::string text = message.str();
  std::replace(text.begin(), text.end(), '\n', ' ');
  llvm::errs() << "txopt-run: error: " << text << "\n";
  return code;
}

const char *kHelp = R"(OVERVIEW: txopt-run - run tx IR on the CPU reference executor (the numerics oracle)

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
  --no-dropout            Let tx.dropout pass its input through (to compare
                          with a reference whose random numbers differ).
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
                          key of every tx.dropout) is S * 2^32 + k on the
                          step counted from k = 0 (S: --seed; uint64 bits,
                          wrapping), so each step draws a fresh mask.
  --lr X                  With --steps: feed X as the step's `lr` input.
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

struct Options {
  std::string model;
  std::optional<std::string> function;
  std::vector<std::pair<std::string, std::string>> inputs;
  std::map<std::string, int64_t> intRanges;
  uint64_t seed = 0;
  ExecutorOptions executor;
  std::optional<std::string> outputDir;
  int64_t printLimit = 16;
  std::optional<int64_t> steps;
  std::optional<std::string> dataPath;
  std::optional<double> lr;
  txopt_run::RunFlags run; // checkpoints, schedule, log (Steps.h)
  std::optional<uint64_t> maxMemory;
  bool help = false;
};

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

bool parseOptions(int argc, char **argv, Options &options, std::string &error) {
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

/// The name of argument or result |index|: its `tx.name` attribute (what the
/// ONNX importer sets), else `argN` / `resultN`.
std::string nameOf(DictionaryAttr attrs, llvm::StringRef prefix, unsigned index) {
  if (attrs)
    if (auto name = attrs.getAs<StringAttr>("tx.name"))
      return name.str();
  return (prefix + llvm::Twine(index)).str();
}

std::string formatValue(const Tensor &tensor, int64_t i) {
  Type type = tensor.getElementType();
  if (!tensor.isFloat()) {
    if (type.isInteger(1))
      return tensor.ints()[i] ? "true" : "false";
    return std::to_string(tensor.ints()[i]);
  }
  double v = tensor.floats()[i];
  if (std::isnan(v))
    return "nan";
  if (std::isinf(v))
    return v > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof(buf), type.isF64() ? "%.17g" : "%.9g", v);
  return buf;
}

void printNested(llvm::raw_ostream &os, const Tensor &tensor, int64_t dim,
                 int64_t &next) {
  if (dim == tensor.getRank()) {
    os << formatValue(tensor, next++);
    return;
  }
  os << "[";
  for (int64_t j = 0; j < tensor.getShape()[dim]; ++j) {
    if (j)
      os << ", ";
    printNested(os, tensor, dim + 1, next);
  }
  os << "]";
}


func::FuncOp pickFunction(ModuleOp module, const Options &options,
                          std::string &error) {
  if (options.function) {
    auto func = module.lookupSymbol<func::FuncOp>(*options.function);
    if (!func)
      error = "no function named '" + *options.function + "' in '" +
              options.model + "'";
    return func;
  }
  if (auto main = module.lookupSymbol<func::FuncOp>("main"))
    if (!main.isExternal())
      return main;
  for (auto func : module.getOps<func::FuncOp>())
    if (func.isPublic() && !func.isExternal())
      return func;
  error = "'" + options.model + "' has no public function with a body";
  return {};
}

llvm::Error runError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// The function to run: the training step under --steps (unless
/// --function names one), else pickFunction's choice.
func::FuncOp selectFunction(ModuleOp module, const Options &options,
                            std::string &error) {
  if (!options.steps || options.function)
    return pickFunction(module, options, error);
  func::FuncOp func = txopt_run::findStepFunction(module);
  if (!func)
    error = "'" + options.model +
            "' has no training step (a function marked tx.train_step; build "
            "one with txopt --train)";
  return func;
}

/// The arguments of |func| by name (tx.name, else argN), for --input and
/// --int-range.
struct ArgumentNames {
  // Op handles are values whose accessors are not const.
  mutable func::FuncOp func;
  std::vector<std::string> names;

  explicit ArgumentNames(func::FuncOp func) : func(func) {
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      names.push_back(nameOf(func.getArgAttrDict(i), "arg", i));
  }
  std::optional<unsigned> find(const std::string &name) const {
    for (unsigned i = 0; i < names.size(); ++i)
      if (names[i] == name || "arg" + std::to_string(i) == name)
        return i;
    return std::nullopt;
  }
  llvm::Error unknown(const std::string &what, const std::string &name) const {
    std::string known = llvm::join(names, ", ");
    return runError(what + " names no argument of '" + func.getName().str() +
                    "': '" + name + "' (arguments: " +
                    (known.empty() ? "none" : known) + ")");
  }
};

/// The --input values, one slot per argument. A file must hold the
/// argument's type, except that f32 data may feed a bf16/f16 argument
/// (rounded once).
llvm::Error readInputs(MLIRContext &context, const Options &options,
                       const ArgumentNames &args,
                       std::vector<std::optional<Tensor>> &given) {
  given.assign(args.names.size(), std::nullopt);
  for (auto &[name, path] : options.inputs) {
    std::optional<unsigned> index = args.find(name);
    if (!index)
      return args.unknown("--input", name);
    auto tensor = readNpyFile(&context, path);
    if (!tensor)
      return runError("input '" + name + "': " +
                      llvm::toString(tensor.takeError()));
    auto expected = cast<RankedTensorType>(args.func.getArgument(*index).getType());
    Type fileType = tensor->getElementType();
    bool widened = fileType.isF32() && isa<FloatType>(expected.getElementType()) &&
                   expected.getElementType().getIntOrFloatBitWidth() < 32;
    // 4- and 2-bit integers (no .npy dtype) come as '|i1'/'|u1' holding
    // their values, signed or unsigned.
    unsigned subByte = expected.getElementType().isInteger() &&
                               !expected.getElementType().isInteger(1) &&
                               expected.getElementType().getIntOrFloatBitWidth() < 8
                           ? expected.getElementType().getIntOrFloatBitWidth()
                           : 0;
    bool packedInts = subByte && fileType.isInteger(8);
    if ((fileType != expected.getElementType() && !widened && !packedInts) ||
        tensor->getShape() != expected.getShape()) {
      std::string want;
      llvm::raw_string_ostream os(want);
      os << expected;
      return runError("input '" + name + "' ('" + path + "'): expected " +
                      want + ", but the file holds " + typeString(*tensor) +
                      " ('" + npyDtypeFor(fileType) + "')");
    }
    if (widened) {
      Tensor narrowed(expected);
      narrowed.floats() = tensor->floats();
      roundToElementType(narrowed);
      tensor = std::move(narrowed);
    }
    if (packedInts) {
      // The file reads as i8 (|u1 wraps to negative past 127): the bits
      // below the width must hold the value.
      Tensor bits(expected);
      for (int64_t i = 0, e = tensor->getNumElements(); i < e; ++i) {
        int64_t v = tensor->ints()[i];
        int64_t low = -(int64_t(1) << (subByte - 1)), high = (int64_t(1) << subByte) - 1;
        if (v < low || v > high)
          return runError("input '" + name + "' ('" + path + "'): element " +
                          std::to_string(i) + " (" + std::to_string(v) +
                          ") does not fit in " + std::to_string(subByte) + " bits");
        bits.ints()[i] = wrapToWidth(v, subByte);
      }
      tensor = std::move(bits);
    }
    given[*index] = std::move(*tensor);
  }
  for (auto &[name, k] : options.intRanges)
    if (!args.find(name))
      return args.unknown("--int-range", name);
  return llvm::Error::success();
}

/// Every argument is materialized before the first op runs: their sizes
/// are checked together against the budget before any is allocated.
llvm::Error checkArgumentBudget(const ArgumentNames &args) {
  uint64_t argumentBytes = 0;
  for (unsigned i = 0; i < args.names.size(); ++i) {
    auto type = dyn_cast<RankedTensorType>(args.func.getArgument(i).getType());
    if (!type || !type.hasStaticShape())
      continue;
    if (llvm::Error err = checkTensorBudget(
            type, "argument '" + args.names[i] + "'", argumentBytes))
      return err;
    argumentBytes += *storageBytes(type.getShape());
  }
  return llvm::Error::success();
}

/// --steps: repeats the training step (Steps.h).
llvm::Error runTrainingSteps(ModuleOp module, func::FuncOp func,
                             const Options &options,
                             std::vector<std::optional<Tensor>> given) {
  Executor executor(module, options.executor);
  txopt_run::StepOptions stepOptions;
  stepOptions.steps = *options.steps;
  stepOptions.dataPath = options.dataPath;
  stepOptions.seed = options.seed;
  stepOptions.lr = options.lr;
  stepOptions.outputDir = options.outputDir;
  stepOptions.run = options.run;
  return txopt_run::runSteps(executor, func, std::move(given), stepOptions,
                             llvm::outs());
}

/// One run's arguments: the given ones, the others seeded random values
/// (integers below --int-range, else the bound their gathers imply, else 2).
llvm::Expected<std::vector<Tensor>>
materializeArguments(const ArgumentNames &args, const Options &options,
                     std::vector<std::optional<Tensor>> given) {
  std::vector<Tensor> arguments;
  for (unsigned i = 0; i < args.names.size(); ++i) {
    if (given[i]) {
      arguments.push_back(std::move(*given[i]));
      continue;
    }
    auto type = dyn_cast<RankedTensorType>(args.func.getArgument(i).getType());
    if (!type || !type.hasStaticShape())
      return runError("argument '" + args.names[i] +
                      "' is not a statically shaped tensor");
    int64_t bound = 2;
    auto range = options.intRanges.find(args.names[i]);
    if (range == options.intRanges.end())
      range = options.intRanges.find("arg" + std::to_string(i));
    if (range != options.intRanges.end())
      bound = range->second;
    else if (auto inferred = txopt_run::inferIndexBound(args.func.getArgument(i)))
      bound = *inferred;
    arguments.push_back(txopt_run::randomTensor(type, options.seed, i, bound));
  }
  return arguments;
}

/// Prints each result (scalars as a value, small tensors in full) and, with
/// --output-dir, writes it as .npy (f64 under --f64).
llvm::Error reportResults(MLIRContext &context, func::FuncOp func,
                          const Options &options,
                          const std::vector<Tensor> &results) {
  if (options.outputDir) {
    if (std::error_code ec = llvm::sys::fs::create_directories(*options.outputDir))
      return runError("cannot create '" + *options.outputDir +
                      "': " + ec.message());
  }
  for (auto [index, tensor] : llvm::enumerate(results)) {
    std::string name = nameOf(func.getResultAttrDict(index), "result", index);
    if (tensor.getRank() == 0) {
      llvm::outs() << name << " = " << formatValue(tensor, 0) << "\n";
    } else {
      llvm::outs() << name << ": " << typeString(tensor);
      if (tensor.getNumElements() <= options.printLimit) {
        llvm::outs() << " = ";
        int64_t next = 0;
        printNested(llvm::outs(), tensor, 0, next);
      }
      llvm::outs() << "\n";
    }
    if (options.outputDir) {
      Tensor toWrite = tensor;
      if (options.executor.computeInF64 && tensor.isFloat()) {
        toWrite = Tensor(Float64Type::get(&context), tensor.getShape());
        toWrite.floats() = tensor.floats();
      }
      llvm::SmallString<256> path(*options.outputDir);
      llvm::sys::path::append(path, txopt_run::npyFileNameFor(name));
      if (llvm::Error err = writeNpyFile(toWrite, path))
        return runError("cannot write '" + path.str().str() +
                        "': " + llvm::toString(std::move(err)));
    }
  }
  return llvm::Error::success();
}

int runMain(int argc, char **argv) {
  Options options;
  std::string error;
  if (!parseOptions(argc, argv, options, error))
    return fail(kUsageError, error);
  if (options.help) {
    llvm::outs() << kHelp << "\n" << txopt_run::runFlagsHelp();
    return kSuccess;
  }
  if (options.maxMemory)
    setMemoryBudget(*options.maxMemory);

  DialectRegistry registry;
  mlir::txopt::registerAllDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  std::string firstError;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    if (diag.getSeverity() == DiagnosticSeverity::Error && firstError.empty()) {
      llvm::raw_string_ostream os(firstError);
      os << diag.getLocation() << ": " << diag.str();
    }
    return success();
  });

  if (!llvm::sys::fs::exists(options.model))
    return fail(kRunError, "cannot read '" + options.model + "': no such file");
  OwningOpRef<ModuleOp> module =
      parseSourceFile<ModuleOp>(options.model, &context);
  if (!module)
    return fail(kRunError, firstError.empty()
                               ? "cannot parse '" + options.model + "'"
                               : firstError);
  func::FuncOp func = selectFunction(*module, options, error);
  if (!func)
    return fail(kRunError, error);

  ArgumentNames args(func);
  std::vector<std::optional<Tensor>> given;
  if (llvm::Error err = readInputs(context, options, args, given))
    return fail(kRunError, llvm::toString(std::move(err)));
  if (llvm::Error err = checkArgumentBudget(args))
    return fail(kRunError, llvm::toString(std::move(err)));

  if (options.steps) {
    if (llvm::Error err =
            runTrainingSteps(*module, func, options, std::move(given)))
      return fail(kRunError, llvm::toString(std::move(err)));
    return kSuccess;
  }

  llvm::Expected<std::vector<Tensor>> arguments =
      materializeArguments(args, options, std::move(given));
  if (!arguments)
    return fail(kRunError, llvm::toString(arguments.takeError()));
  Executor executor(*module, options.executor);
  auto results = executor.run(func, *arguments);
  if (!results)
    return fail(kRunError, llvm::toString(results.takeError()));
  if (llvm::Error err = reportResults(context, func, options, *results))
    return fail(kRunError, llvm::toString(std::move(err)));
  return kSuccess;
}

} // namespace

int main(int argc, char **argv) {
  // The size checks above and in the executor come first; this is the last
  // resort, so that no exception escapes as an abort.
  try {
    return runMain(argc, argv);
  } catch (const TensorBudgetError &e) {
    return fail(kRunError, e.what());
  } catch (const std::bad_alloc &) {
    return fail(kRunError, "out of memory (lower the model's sizes, or see "
                           "--max-memory)");
  } catch (const std::exception &e) {
    return fail(kRunError, std::string("internal error: ") + e.what());
  }
}
