//===- Steps.cpp - txopt-run --steps: repeat a training step --------------===//
//
// SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "Steps.h"

#include "Inputs.h"

#include "txopt/Dialect/Tx/Transforms/TrainStep.h"
#include "txopt/Reference/Npy.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <cmath>
#include <cstring>
#include <tuple>

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::reference;

namespace {

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

std::string argName(func::FuncOp func, unsigned i) {
  if (auto name = func.getArgAttrOfType<StringAttr>(i, "tx.name"))
    return name.str();
  return "arg" + std::to_string(i);
}

/// Reads a token file: a 1-D integer .npy, or llm.c's .bin (a header of
/// 256 int32 starting with magic 20240520, version 1, token count; then
/// that many little-endian uint16 tokens).
llvm::Expected<std::vector<int64_t>> readTokens(MLIRContext *context,
                                                const std::string &path) {
  if (llvm::StringRef(path).ends_with(".npy")) {
    auto tensor = readNpyFile(context, path);
    if (!tensor)
      return tensor.takeError();
    if (tensor->isFloat() || tensor->getRank() != 1)
      return error("--data '" + path + "': expected a 1-D integer array, but "
                   "the file holds " + typeString(*tensor));
    return tensor->ints();
  }
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false);
  if (!buffer)
    return error("cannot read --data '" + path + "': " +
                 buffer.getError().message());
  llvm::StringRef bytes = (*buffer)->getBuffer();
  constexpr size_t kHeaderBytes = 256 * sizeof(int32_t);
  if (bytes.size() < kHeaderBytes)
    return error("--data '" + path + "': too short for an llm.c token file "
                 "header (expected .npy or .bin)");
  int32_t header[256];
  std::memcpy(header, bytes.data(), kHeaderBytes);
  if (header[0] != 20240520 || header[1] != 1)
    return error("--data '" + path + "': not an llm.c token file (magic " +
                 llvm::Twine(header[0]) + ", version " + llvm::Twine(header[1]) +
                 "; expected 20240520, 1)");
  int64_t count = header[2];
  if (count < 0 ||
      bytes.size() != kHeaderBytes + static_cast<size_t>(count) * 2)
    return error("--data '" + path + "': the header promises " +
                 llvm::Twine(count) + " tokens, but the file holds " +
                 llvm::Twine((bytes.size() - kHeaderBytes) / 2));
  std::vector<int64_t> tokens(count);
  const auto *data =
      reinterpret_cast<const unsigned char *>(bytes.data() + kHeaderBytes);
  for (int64_t i = 0; i < count; ++i)
    tokens[i] = data[2 * i] | (data[2 * i + 1] << 8);
  return tokens;
}

/// |type| as MLIR prints it, for diagnostics.
std::string typeText(Type type) {
  std::string text;
  llvm::raw_string_ostream(text) << type;
  return text;
}

/// A splat tensor of |type| holding |value|.
Tensor splat(RankedTensorType type, double value) {
  Tensor tensor(type);
  if (tensor.isFloat())
    std::fill(tensor.floats().begin(), tensor.floats().end(), value);
  else
    std::fill(tensor.ints().begin(), tensor.ints().end(),
              static_cast<int64_t>(value));
  return tensor;
}

} // namespace

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
  unsigned numArgs = func.getNumArguments();
  std::vector<Tensor> args(numArgs);
  std::vector<unsigned> batchArgs; // filled each step from the token stream
  std::optional<unsigned> labelArg;
  std::optional<unsigned> rngArg, lrArg; // step inputs by role
  Builder builder(func.getContext());
  for (unsigned i = 0; i < numArgs; ++i) {
    auto type = dyn_cast<RankedTensorType>(func.getArgument(i).getType());
    if (!type || !type.hasStaticShape())
      return error("argument '" + argName(func, i) +
                   "' is not a statically shaped tensor");
    auto role = func.getArgAttrOfType<StringAttr>(i, tx::kRoleAttrName);
    // The step inputs: one scalar each, of the type the contract fixes.
    for (auto [roleName, expected, slot] :
         {std::make_tuple("lr", Type(builder.getF32Type()), &lrArg),
          std::make_tuple("rng", Type(builder.getIntegerType(64)), &rngArg)}) {
      if (!role || role.getValue() != roleName)
        continue;
      auto scalar = RankedTensorType::get({}, expected);
      if (type != scalar)
        return error("argument '" + argName(func, i) + "' has role '" +
                     roleName + "': expected " + typeText(scalar) +
                     ", but got " + typeText(type));
      if (*slot)
        return error("arguments '" + argName(func, **slot) + "' and '" +
                     argName(func, i) + "' both have role '" + roleName + "'");
      *slot = i;
    }
    if (given[i]) {
      args[i] = std::move(*given[i]);
      if (rngArg == i) // an --input key is fixed for every step
        rngArg.reset();
      continue;
    }
    if (lrArg == i && options.lr) {
      args[i] = splat(type, *options.lr);
      continue;
    }
    if (rngArg == i) {
      args[i] = Tensor(type); // set before each step
      continue;
    }
    if (auto param =
            func.getArgAttrOfType<FlatSymbolRefAttr>(i, "tx.parameter")) {
      auto value = executor.getParameter(param.getValue());
      if (!value)
        return value.takeError();
      args[i] = **value;
      // An f32 master weight of a bf16/f16 parameter starts from its value
      // (exact: every bf16/f16 value is an f32 value).
      if (args[i].getElementType() != type.getElementType() &&
          args[i].isFloat()) {
        Tensor master(type);
        master.floats() = args[i].floats();
        args[i] = std::move(master);
      }
    } else if (auto init = func.getArgAttrOfType<FloatAttr>(
                   i, tx::kInitAttrName)) {
      args[i] = splat(type, init.getValueAsDouble());
    } else if (options.dataPath && type.getElementType().isSignlessInteger() &&
               !type.getElementType().isInteger(1)) {
      if (role && role.getValue() == "labels") {
        if (labelArg)
          return error("--data fills one labels argument, but '" +
                       argName(func, *labelArg) + "' and '" +
                       argName(func, i) + "' are both labels");
        labelArg = i;
      } else {
        batchArgs.push_back(i);
      }
    } else {
      int64_t bound = inferIndexBound(func.getArgument(i)).value_or(2);
      args[i] = randomTensor(type, options.seed, i, bound);
    }
  }

  if (options.lr && !lrArg)
    return error("--lr: '" + func.getName() + "' has no argument with role "
                 "'lr' (a step built before learning rates were inputs?)");

  // Token windows, as llm.c's loader: inputs tokens[o, o + n), labels the
  // same window shifted by one; o advances by n and wraps to 0.
  std::vector<int64_t> tokens;
  int64_t window = 0;
  if (options.dataPath) {
    if (batchArgs.size() != 1)
      return error("--data fills one token argument (and optionally one "
                   "labels argument), but the step has " +
                   llvm::Twine(batchArgs.size()) +
                   " integer data arguments without --input");
    auto read = readTokens(func.getContext(), *options.dataPath);
    if (!read)
      return read.takeError();
    tokens = std::move(*read);
    auto type = cast<RankedTensorType>(func.getArgument(batchArgs[0]).getType());
    window = type.getNumElements();
    if (labelArg &&
        cast<RankedTensorType>(func.getArgument(*labelArg).getType()).getShape() !=
            type.getShape())
      return error("--data: labels '" + argName(func, *labelArg) +
                   "' and tokens '" + argName(func, batchArgs[0]) +
                   "' have different shapes");
    if (static_cast<int64_t>(tokens.size()) < window + 1)
      return error("--data '" + *options.dataPath + "' holds " +
                   llvm::Twine(tokens.size()) + " tokens; one batch needs " +
                   llvm::Twine(window + 1));
    std::optional<int64_t> bound = inferIndexBound(func.getArgument(batchArgs[0]));
    if (labelArg)
      if (auto labels = inferIndexBound(func.getArgument(*labelArg)))
        bound = bound ? std::min(*bound, *labels) : *labels;
    if (bound)
      for (size_t p = 0; p < tokens.size(); ++p)
        if (tokens[p] < 0 || tokens[p] >= *bound)
          return error("--data '" + *options.dataPath + "': token " +
                       llvm::Twine(tokens[p]) + " at position " +
                       llvm::Twine(p) + " is outside the vocabulary [0, " +
                       llvm::Twine(*bound) + ")");
  }

  // Which results feed which arguments, and which are loss / grad_norm.
  std::vector<std::pair<unsigned, unsigned>> carried; // result -> argument
  std::optional<unsigned> lossIndex, normIndex, skippedIndex, scaleIndex;
  for (unsigned r = 0; r < func.getNumResults(); ++r) {
    if (auto next = func.getResultAttrOfType<IntegerAttr>(r, tx::kNextAttrName)) {
      int64_t target = next.getInt();
      if (target < 0 || target >= numArgs ||
          func.getArgument(target).getType() != func.getResultTypes()[r])
        return error("result #" + llvm::Twine(r) + " has tx.next = " +
                     llvm::Twine(target) +
                     ", which names no argument of its type");
      carried.emplace_back(r, static_cast<unsigned>(target));
    }
    if (auto name = func.getResultAttrOfType<StringAttr>(r, "tx.name")) {
      if (name.getValue() == "loss")
        lossIndex = r;
      if (name.getValue() == "grad_norm")
        normIndex = r;
      if (name.getValue() == "skipped")
        skippedIndex = r;
      if (name.getValue() == "loss_scale")
        scaleIndex = r;
    }
  }
  if (!lossIndex)
    return error("'" + func.getName() + "' has no result named 'loss'; is it "
                 "a step built by txopt --train?");

  std::vector<Tensor> last;
  auto writeOutputs = [&]() -> llvm::Error {
    if (!options.outputDir || last.empty())
      return llvm::Error::success();
    if (std::error_code ec = llvm::sys::fs::create_directories(*options.outputDir))
      return error("cannot create '" + *options.outputDir + "': " + ec.message());
    for (unsigned r = 0; r < func.getNumResults(); ++r) {
      auto name = func.getResultAttrOfType<StringAttr>(r, "tx.name");
      llvm::SmallString<256> path(*options.outputDir);
      llvm::sys::path::append(
          path, npyFileNameFor(name ? name.str() : "result" + std::to_string(r)));
      if (llvm::Error err = writeNpyFile(last[r], path))
        return err;
    }
    return llvm::Error::success();
  };
  int64_t offset = 0;
  for (int64_t step = 1; step <= options.steps; ++step) {
    if (!tokens.empty()) {
      if (offset + window + 1 > static_cast<int64_t>(tokens.size()))
        offset = 0;
      auto fill = [&](unsigned arg, int64_t shift) {
        auto type = cast<RankedTensorType>(func.getArgument(arg).getType());
        Tensor batch(type);
        for (int64_t k = 0; k < window; ++k)
          batch.ints()[k] = tokens[offset + shift + k];
        args[arg] = std::move(batch);
      };
      fill(batchArgs[0], 0);
      if (labelArg)
        fill(*labelArg, 1);
      offset += window;
    }
    if (rngArg)
      args[*rngArg].ints()[0] =
          rngKey(options.seed, static_cast<uint64_t>(step - 1));
    auto results = executor.run(func, args);
    if (!results)
      return error("step " + llvm::Twine(step) + ": " +
                   llvm::toString(results.takeError()));
    double loss = (*results)[*lossIndex].getDouble(0);
    double norm = normIndex ? (*results)[*normIndex].getDouble(0) : 0.0;
    os << "step " << step << "  loss " << llvm::format("%.6f", loss);
    if (normIndex)
      os << "  grad_norm " << llvm::format("%.6f", norm);
    // With dynamic loss scaling a non-finite gradient skips the step in
    // the graph itself (state unchanged, scale backed off): report it and
    // go on, as GradScaler does.
    bool skipped = skippedIndex && (*results)[*skippedIndex].getInt(0) != 0;
    if (skipped) {
      os << "  skipped";
      if (scaleIndex)
        os << " (loss scale -> "
           << llvm::format("%g", (*results)[*scaleIndex].getDouble(0)) << ")";
    }
    os << "\n";
    if (!std::isfinite(loss) || (!std::isfinite(norm) && !skipped)) {
      // Keep what the user had: the outputs of the last finite step.
      if (llvm::Error err = writeOutputs())
        return err;
      double bad = std::isfinite(loss) ? norm : loss;
      return error("step " + llvm::Twine(step) + ": the " +
                   (std::isfinite(loss) ? "gradient norm" : "loss") + " is " +
                   (std::isnan(bad) ? "NaN" : "infinite") +
                   "; stopped" +
                   (options.outputDir && !last.empty()
                        ? " (--output-dir holds step " + llvm::Twine(step - 1) + ")"
                        : llvm::Twine("")) +
                   "; try a lower --lr or --grad-clip");
    }
    for (auto [r, a] : carried)
      args[a] = (*results)[r];
    last = std::move(*results);
  }

  return writeOutputs();
}
