//===- StepSetup.cpp - txopt-run --steps: before the first step -----------===//
//
// SPDX-License-Identifier: Apache-2.0
// The phases StepRunner goes through before its first step: the micro-step,
// the arguments, the lr schedule, the token and validation streams and the
// results' roles. Apart from the loop (StepLoop.cpp) because this is where
// a run's flags meet the step function's signature.
//
//===----------------------------------------------------------------------===//

#include "StepRunner.h"

#include "Inputs.h"

#include "txopt/Dialect/Tx/Transforms/TrainStep.h"
#include "txopt/Reference/Npy.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>
#include <cstring>

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::reference;
using namespace txopt_run;

llvm::Error txopt_run::error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

std::string txopt_run::argName(func::FuncOp func, unsigned i) {
  if (auto name = func.getArgAttrOfType<StringAttr>(i, tx::kNameAttrName))
    return name.str();
  return "arg" + std::to_string(i);
}

/// |type| as MLIR prints it, for diagnostics.
std::string txopt_run::typeText(Type type) {
  std::string text;
  llvm::raw_string_ostream(text) << type;
  return text;
}

namespace {

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

/// The function of |step|'s module that names |step| in attribute
/// |link| (tx.micro_step, tx.eval, tx.state_init), or null.
func::FuncOp besideStep(func::FuncOp step, llvm::StringRef link) {
  auto module = step->getParentOfType<ModuleOp>();
  for (auto candidate : module.getOps<func::FuncOp>())
    if (auto ref = candidate->getAttrOfType<FlatSymbolRefAttr>(link))
      if (ref.getValue() == step.getName() && !candidate.isExternal())
        return candidate;
  return {};
}

} // namespace

/// Gradient accumulation (recipe `grad_accum` N > 1): the micro-step
/// that runs micro-batches 1..N-1 of each step. It has the step's
/// signature, so both run on |args|.
llvm::Error StepRunner::findMicroStep() {
  auto recipe = func->getAttrOfType<DictionaryAttr>(tx::kTrainStepAttrName);
  if (auto accum = recipe ? recipe.getAs<IntegerAttr>("grad_accum") : nullptr)
    gradAccum = accum.getInt();
  if (gradAccum <= 1)
    return llvm::Error::success();
  micro = besideStep(func, tx::kMicroStepAttrName);
  if (!micro)
    return error("'" + func.getName() + "' accumulates " + llvm::Twine(gradAccum) +
                 " micro-batches (grad_accum), but the module has no function "
                 "with tx.micro_step = @" + func.getName());
  if (micro.getFunctionType().getInputs() != func.getFunctionType().getInputs())
    return error("'" + micro.getName() + "' must take the arguments of '" +
                 func.getName() + "'");
  for (unsigned r = 0; r < micro.getNumResults(); ++r)
    if (auto next = micro.getResultAttrOfType<IntegerAttr>(r, tx::kNextAttrName)) {
      int64_t target = next.getInt();
      if (target < 0 || target >= func.getNumArguments() ||
          func.getArgument(target).getType() != micro.getResultTypes()[r])
        return error("'" + micro.getName() + "' result #" + llvm::Twine(r) +
                     " has tx.next = " + llvm::Twine(target) +
                     ", which names no argument of its type");
      microCarried.emplace_back(r, static_cast<unsigned>(target));
    }
  return llvm::Error::success();
}

/// The first step's arguments: --input values, the step inputs (lr,
/// rng) by role, parameters and tx.init state, and a seeded random batch
/// unless --data fills it each step.
llvm::Error StepRunner::bindArguments() {
  unsigned numArgs = func.getNumArguments();
  args.assign(numArgs, Tensor());
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
      if (lrArg == i)
        lrGiven = true;
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
    if (llvm::Error err = bindStateOrBatch(i, type, role))
      return err;
  }
  if (options.lr && !lrArg)
    return error("--lr: '" + func.getName() + "' has no argument with role "
                 "'lr' (a step built before learning rates were inputs?)");
  return llvm::Error::success();
}

llvm::Error StepRunner::runStateInit() {
  func::FuncOp init = besideStep(func, tx::kStateInitAttrName);
  if (!init)
    return llvm::Error::success();
  if (init.getFunctionType().getInputs() != func.getFunctionType().getInputs())
    return error("'" + init.getName() + "' must take the arguments of '" +
                 func.getName() + "'");
  // It reads the state and the parameters; a batch argument --data fills
  // before each step is not bound yet: zeros of its type stand in for the
  // call (in place, not a copy of every argument), then it is unbound again.
  llvm::SmallVector<unsigned> unbound;
  for (unsigned i = 0; i < args.size(); ++i)
    if (!args[i].getElementType()) {
      unbound.push_back(i);
      args[i] = Tensor(cast<RankedTensorType>(func.getArgument(i).getType()));
    }
  auto results = executor.run(init, args);
  for (unsigned i : unbound)
    args[i] = Tensor();
  if (!results)
    return error("'" + init.getName() + "': " + llvm::toString(results.takeError()));
  for (unsigned r = 0; r < init.getNumResults(); ++r) {
    auto next = init.getResultAttrOfType<IntegerAttr>(r, tx::kNextAttrName);
    if (!next || next.getInt() < 0 || next.getInt() >= func.getNumArguments() ||
        func.getArgument(next.getInt()).getType() != init.getResultTypes()[r])
      return error("'" + init.getName() + "' result #" + llvm::Twine(r) +
                   " names no argument of its type (tx.next)");
    if (!given[next.getInt()])
      args[next.getInt()] = std::move((*results)[r]);
  }
  return llvm::Error::success();
}

/// Argument |i| that is neither given nor a step input: a parameter's
/// value, a tx.init splat, a --data batch (filled each step) or random.
llvm::Error StepRunner::bindStateOrBatch(unsigned i, RankedTensorType type,
                               StringAttr role) {
  if (auto param = func.getArgAttrOfType<FlatSymbolRefAttr>(i, "tx.parameter")) {
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
  } else if (auto init = func.getArgAttrOfType<FloatAttr>(i, tx::kInitAttrName)) {
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
    args[i] = randomTensor(type, seed, i, bound);
  }
  return llvm::Error::success();
}

/// The learning-rate schedule (txrt::LrSchedule, shared with txrun).
llvm::Error StepRunner::buildSchedule() {
  if (!(run.schedule || run.warmup || run.decaySteps || run.minLr))
    return llvm::Error::success();
  if (!lrArg)
    return error("--schedule: '" + func.getName() + "' has no argument with role 'lr'");
  if (lrGiven)
    return error("--schedule: the lr argument is fixed by --input");
  txrt::LrSchedule sched;
  sched.kind = txrt::LrSchedule::Kind::Cosine;
  if (run.schedule)
    txrt::parseScheduleKind(*run.schedule, sched.kind);
  sched.lr = args[*lrArg].floats()[0]; // --lr, else the compiled tx.init
  sched.warmup = run.warmup.value_or(0);
  sched.decaySteps = run.decaySteps.value_or(options.steps);
  sched.minLr = run.minLr.value_or(0.0);
  if (txrt::Status st = sched.validate(); !st.ok())
    return error(st.message());
  schedule = sched;
  return llvm::Error::success();
}

/// Token windows, as llm.c's loader: inputs tokens[o, o + n), labels the
/// same window shifted by one; o advances by n and wraps to 0 (or, with
/// --shuffle, a seeded order per epoch; txrt::TokenWindows).
llvm::Error StepRunner::loadTokens() {
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
    // With --ranks N a step reads one window of N batches, rank r the r-th.
    int64_t stepWindow = window * options.ranks;
    if (static_cast<int64_t>(tokens.size()) < stepWindow + 1)
      return error("--data '" + *options.dataPath + "' holds " +
                   llvm::Twine(tokens.size()) + " tokens; one batch needs " +
                   llvm::Twine(stepWindow + 1));
    if (llvm::Error err = checkVocabulary(tokens, "--data", *options.dataPath))
      return err;
    windows.emplace(static_cast<int64_t>(tokens.size()), stepWindow, run.shuffle, seed);
  }
  // Tokens per step for tok/s: the "data" argument, else the token window.
  tokensPerStep = static_cast<uint64_t>(window);
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    if (auto role = func.getArgAttrOfType<StringAttr>(i, tx::kRoleAttrName))
      if (role.getValue() == "data")
        tokensPerStep = cast<RankedTensorType>(func.getArgument(i).getType()).getNumElements();
  tokensPerStep *= static_cast<uint64_t>(gradAccum * options.ranks);
  if (gradAccum > 1) {
    // The batch argument's shape (the first data/labels one), and the
    // effective batch: N micro-batches along the first dim, on each of the
    // --ranks (their micro-batches are one global one, rank r's rows r*B..).
    for (unsigned i = 0; i < func.getNumArguments() && microBatchText.empty(); ++i)
      if (auto role = func.getArgAttrOfType<StringAttr>(i, tx::kRoleAttrName))
        if (role.getValue() == "data" || role.getValue() == "labels") {
          auto shape = cast<RankedTensorType>(func.getArgument(i).getType()).getShape();
          for (auto [k, d] : llvm::enumerate(shape)) {
            microBatchText += (k ? "x" : "") + std::to_string(d);
            effectiveBatchText +=
                (k ? "x" : "") + std::to_string(k ? d : d * gradAccum * options.ranks);
          }
        }
  }
  return llvm::Error::success();
}

/// --val-data: the step's @eval (same signature) and the validation
/// stream, windows of the training batch's size.
llvm::Error StepRunner::loadValidation() {
  if (!run.valDataPath)
    return llvm::Error::success();
  evalFunc = besideStep(func, tx::kEvalAttrName);
  if (!evalFunc)
    return error("--val-data: '" + func.getName() + "' has no evaluation function "
                 "(compile with txopt --train --eval)");
  if (evalFunc.getFunctionType().getInputs() != func.getFunctionType().getInputs() ||
      evalFunc.getNumResults() != 1)
    return error("'" + evalFunc.getName() + "' must take the arguments of '" +
                 func.getName() + "' and return the loss");
  if (batchArgs.size() != 1)
    return error("--val-data fills one token argument (and optionally one labels "
                 "argument); the step has " + llvm::Twine(batchArgs.size()) +
                 " integer data arguments without --input (pass --data too)");
  auto read = readTokens(func.getContext(), *run.valDataPath);
  if (!read)
    return read.takeError();
  valTokens = std::move(*read);
  if (static_cast<int64_t>(valTokens.size()) < window + 1)
    return error("--val-data '" + *run.valDataPath + "' holds " +
                 llvm::Twine(valTokens.size()) + " tokens; one batch needs " +
                 llvm::Twine(window + 1));
  if (llvm::Error err = checkVocabulary(valTokens, "--val-data", *run.valDataPath))
    return err;
  valWindows = (static_cast<int64_t>(valTokens.size()) - 1) / window;
  return llvm::Error::success();
}

/// Every token below the vocabulary size the step's gathers imply.
llvm::Error StepRunner::checkVocabulary(const std::vector<int64_t> &tokens, llvm::StringRef flag,
                              const std::string &path) {
  std::optional<int64_t> bound = inferIndexBound(func.getArgument(batchArgs[0]));
  if (labelArg)
    if (auto labels = inferIndexBound(func.getArgument(*labelArg)))
      bound = bound ? std::min(*bound, *labels) : *labels;
  if (bound)
    for (size_t p = 0; p < tokens.size(); ++p)
      if (tokens[p] < 0 || tokens[p] >= *bound)
        return error(flag + " '" + path + "': token " +
                     llvm::Twine(tokens[p]) + " at position " +
                     llvm::Twine(p) + " is outside the vocabulary [0, " +
                     llvm::Twine(*bound) + ")");
  return llvm::Error::success();
}

/// Which results feed which arguments, and which are loss / grad_norm.
llvm::Error StepRunner::findResults() {
  unsigned numArgs = func.getNumArguments();
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
    if (auto name = func.getResultAttrOfType<StringAttr>(r, tx::kNameAttrName)) {
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
  return llvm::Error::success();
}

llvm::Error StepRunner::openLog() {
  if (!run.logPath)
    return llvm::Error::success();
  log = std::fopen(run.logPath->c_str(), run.resumeDir ? "a" : "w");
  if (!log)
    return error("cannot write --log '" + *run.logPath + "': " + std::strerror(errno));
  return llvm::Error::success();
}
