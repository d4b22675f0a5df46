//===- txopt-run.cpp - run tx IR on the CPU reference executor ------------===//
//
// SPDX-License-Identifier: Apache-2.0
// `txopt-run model.mlir [options]`: parses tx IR, runs one function on the
// reference executor (lib/Reference) with inputs from .npy files or seeded
// random values, prints every output and optionally writes them as .npy.
// Errors are one line, `txopt-run: error: ...`: exit 1 for a bad model,
// input or run, 2 for a usage error. The flags are parsed in Options.cpp.
//
//===----------------------------------------------------------------------===//

#include "Inputs.h"
#include "Options.h"
#include "Steps.h"

#include "txopt/InitAll.h"
#include "txopt/Reference/Executor.h"
#include "txopt/Reference/Npy.h"
#include "txopt/Dialect/Tx/Transforms/TrainStep.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <optional>

using namespace mlir;
using namespace mlir::txopt::reference;
using namespace txopt_run;

namespace {

/// The name of argument or result |index|: its `tx.name` attribute (what the
/// ONNX importer sets), else `argN` / `resultN`.
std::string nameOf(DictionaryAttr attrs, llvm::StringRef prefix, unsigned index) {
  if (attrs)
    if (auto name = attrs.getAs<StringAttr>(mlir::txopt::tx::kNameAttrName))
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
  stepOptions.ranks = options.ranks;
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
  // A training step run once on random parameters, moments and step count
  // means nothing; without --steps, --function or --input it is almost
  // surely a mistake, so say what to do instead.
  if (!options.steps && !options.function && options.inputs.empty() &&
      func->hasAttr(mlir::txopt::tx::kTrainStepAttrName))
    return fail(kUsageError,
                "'@" + func.getName().str() +
                    "' is a training step: train it with --steps N (from its initial "
                    "weights and state), or run it once on random inputs with "
                    "--function " + func.getName().str());

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
