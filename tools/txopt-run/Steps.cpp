//===- Steps.cpp - txopt-run --steps: repeat a training step --------------===//
//
// SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "Steps.h"

#include "Inputs.h"

#include "txopt/Dialect/Tx/Transforms/TrainStep.h"
#include "txopt/Reference/Npy.h"

#include "core/checkpoint.h"
#include "core/dtype.h"
#include "core/training.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
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


/// The safetensors dtype of |type|, or "" when checkpoints cannot hold it.
std::string safetensorsDType(Type type) {
  if (type.isF32())
    return "F32";
  if (type.isF64())
    return "F64";
  if (type.isF16())
    return "F16";
  if (type.isBF16())
    return "BF16";
  if (isa<Float8E4M3FNType>(type))
    return "F8_E4M3";
  if (isa<Float8E5M2Type>(type))
    return "F8_E5M2";
  if (type.isInteger(1))
    return "BOOL";
  if (type.isSignlessInteger(64))
    return "I64";
  if (type.isSignlessInteger(32))
    return "I32";
  if (type.isSignlessInteger(16))
    return "I16";
  if (type.isSignlessInteger(8))
    return "I8";
  return "";
}

/// |tensor|'s values as the raw little-endian bytes of |dtype|.
std::vector<uint8_t> encodeTensor(const Tensor &tensor, const std::string &dtype) {
  size_t n = static_cast<size_t>(tensor.getNumElements());
  std::vector<uint8_t> out(n * txrt::safetensorsDTypeSize(dtype));
  uint8_t *p = out.data();
  for (size_t i = 0; i < n; ++i) {
    if (dtype == "F32") {
      float v = static_cast<float>(tensor.floats()[i]);
      std::memcpy(p + 4 * i, &v, 4);
    } else if (dtype == "F64") {
      double v = tensor.floats()[i];
      std::memcpy(p + 8 * i, &v, 8);
    } else if (dtype == "F16" || dtype == "BF16") {
      uint16_t v = dtype == "F16" ? txrt::f16FromDouble(tensor.floats()[i])
                                  : txrt::bf16FromDouble(tensor.floats()[i]);
      std::memcpy(p + 2 * i, &v, 2);
    } else if (dtype == "F8_E4M3") {
      p[i] = txrt::f8e4m3fnFromDouble(tensor.floats()[i]);
    } else if (dtype == "F8_E5M2") {
      p[i] = txrt::f8e5m2FromDouble(tensor.floats()[i]);
    } else {
      int64_t v = tensor.ints()[i];
      size_t size = txrt::safetensorsDTypeSize(dtype);
      if (dtype == "BOOL")
        v = v != 0;
      for (size_t b = 0; b < size; ++b)
        p[size * i + b] = static_cast<uint8_t>(static_cast<uint64_t>(v) >> (8 * b));
    }
  }
  return out;
}

/// The inverse of encodeTensor into a tensor of |type|.
Tensor decodeTensor(RankedTensorType type, const txrt::CheckpointTensor &t) {
  Tensor tensor(type);
  size_t n = static_cast<size_t>(tensor.getNumElements());
  const uint8_t *p = t.bytes.data();
  const std::string &dtype = t.dtype;
  for (size_t i = 0; i < n; ++i) {
    if (dtype == "F32") {
      float v;
      std::memcpy(&v, p + 4 * i, 4);
      tensor.floats()[i] = v;
    } else if (dtype == "F64") {
      std::memcpy(&tensor.floats()[i], p + 8 * i, 8);
    } else if (dtype == "F16" || dtype == "BF16") {
      uint16_t v;
      std::memcpy(&v, p + 2 * i, 2);
      tensor.floats()[i] = dtype == "F16" ? txrt::f16ToDouble(v) : txrt::bf16ToDouble(v);
    } else if (dtype == "F8_E4M3") {
      tensor.floats()[i] = txrt::f8e4m3fnToDouble(p[i]);
    } else if (dtype == "F8_E5M2") {
      tensor.floats()[i] = txrt::f8e5m2ToDouble(p[i]);
    } else {
      size_t size = txrt::safetensorsDTypeSize(dtype);
      uint64_t bits = 0;
      for (size_t b = 0; b < size; ++b)
        bits |= static_cast<uint64_t>(p[size * i + b]) << (8 * b);
      int64_t v = static_cast<int64_t>(bits);
      if (size < 8 && dtype != "BOOL" && (bits >> (8 * size - 1)) & 1)
        v = static_cast<int64_t>(bits | (~uint64_t(0) << (8 * size))); // sign-extend
      tensor.ints()[i] = v;
    }
  }
  return tensor;
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

namespace txopt_run {
namespace {

/// One `txopt-run --steps` run of a step function, in the phases it goes
/// through: resume, bind the arguments, the lr schedule, the token stream,
/// the results' roles, checkpoint state, then the step loop.
class StepRunner {
public:
  StepRunner(Executor &executor, func::FuncOp func,
             std::vector<std::optional<Tensor>> given,
             const StepOptions &options, llvm::raw_ostream &os)
      : executor(executor), func(func), given(std::move(given)),
        options(options), run(options.run), os(os), seed(options.seed) {}

  llvm::Error runAll() {
    if (llvm::Error err = loadResume())
      return err;
    if (run.shuffle && !options.dataPath)
      return error("--shuffle needs --data");
    if (run.saveEvery && !run.saveDir)
      return error("--save-every needs --save DIR");
    if ((run.evalEvery || run.evalSteps) && !run.valDataPath)
      return error("--eval-every and --eval-steps need --val-data FILE");
    for (auto phase : {&StepRunner::findMicroStep, &StepRunner::bindArguments,
                       &StepRunner::buildSchedule,
                       &StepRunner::loadTokens, &StepRunner::loadValidation,
                       &StepRunner::findResults,
                       &StepRunner::prepareCheckpoints, &StepRunner::openLog})
      if (llvm::Error err = (this->*phase)())
        return err;
    if (gradAccum > 1)
      os << "accumulating " << gradAccum << " micro-batches of " << microBatchText
         << " per step (@" << micro.getName() << "): effective batch "
         << effectiveBatchText << "\n";
    if (firstStep > options.steps) {
      llvm::errs() << "txopt-run: the checkpoint is at step " << firstStep - 1
                   << "; nothing to run up to --steps " << options.steps
                   << " (with --resume, --steps is the number of the last step)\n";
      return llvm::Error::success();
    }
    if (evalFunc && firstStep == 1)
      if (llvm::Error err = evaluate(0))
        return err;
    // A progress bar below the step lines, only on a terminal (a pipe or
    // file gets exactly the lines).
    showBar = &os == &llvm::outs() && llvm::outs().is_displayed();
    auto started = std::chrono::steady_clock::now();
    for (int64_t step = firstStep; step <= options.steps; ++step) {
      llvm::Error err = runStep(step);
      if (!err && evalFunc &&
          ((run.evalEvery && step % run.evalEvery == 0) || step == options.steps))
        err = evaluate(step);
      if (err) {
        clearBar();
        return err;
      }
      if (showBar) {
        double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        os << txrt::progressBar(step, firstStep, options.steps, seconds);
        os.flush();
        barShown = true;
      }
    }
    clearBar();
    return writeOutputs();
  }

  /// Erases the progress bar (when drawn) before anything else is printed.
  void clearBar() {
    if (barShown)
      os << txrt::kClearLine;
    barShown = false;
  }

  ~StepRunner() {
    if (log)
      std::fclose(log);
  }

private:
  /// --resume: the checkpoint, whose seed the run continues with (it drives
  /// the random batch and the dropout keys).
  llvm::Error loadResume() {
    if (!run.resumeDir)
      return llvm::Error::success();
    checkpoint.emplace();
    if (txrt::Status st = txrt::loadCheckpoint(*run.resumeDir, *checkpoint); !st.ok())
      return error("--resume: " + st.message());
    if (options.seed != 0 && options.seed != checkpoint->info.seed)
      return error("--resume: the checkpoint's run has --seed " +
                   llvm::Twine(checkpoint->info.seed) + ", not " + llvm::Twine(options.seed) +
                   " (resuming keeps the seed; leave --seed out)");
    seed = checkpoint->info.seed;
    return llvm::Error::success();
  }

  /// Gradient accumulation (recipe `grad_accum` N > 1): the micro-step
  /// that runs micro-batches 1..N-1 of each step. It has the step's
  /// signature, so both run on |args|.
  llvm::Error findMicroStep() {
    auto recipe = func->getAttrOfType<DictionaryAttr>(tx::kTrainStepAttrName);
    if (auto accum = recipe ? recipe.getAs<IntegerAttr>("grad_accum") : nullptr)
      gradAccum = accum.getInt();
    if (gradAccum <= 1)
      return llvm::Error::success();
    auto module = func->getParentOfType<ModuleOp>();
    for (auto candidate : module.getOps<func::FuncOp>())
      if (auto ref = candidate->getAttrOfType<FlatSymbolRefAttr>(tx::kMicroStepAttrName))
        if (ref.getValue() == func.getName() && !candidate.isExternal())
          micro = candidate;
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
  llvm::Error bindArguments() {
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

  /// Argument |i| that is neither given nor a step input: a parameter's
  /// value, a tx.init splat, a --data batch (filled each step) or random.
  llvm::Error bindStateOrBatch(unsigned i, RankedTensorType type,
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
  llvm::Error buildSchedule() {
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
  llvm::Error loadTokens() {
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
      if (llvm::Error err = checkVocabulary(tokens, "--data", *options.dataPath))
        return err;
      windows.emplace(static_cast<int64_t>(tokens.size()), window, run.shuffle, seed);
    }
    // Tokens per step for tok/s: the "data" argument, else the token window.
    tokensPerStep = static_cast<uint64_t>(window);
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      if (auto role = func.getArgAttrOfType<StringAttr>(i, tx::kRoleAttrName))
        if (role.getValue() == "data")
          tokensPerStep = cast<RankedTensorType>(func.getArgument(i).getType()).getNumElements();
    tokensPerStep *= static_cast<uint64_t>(gradAccum);
    if (gradAccum > 1) {
      // The batch argument's shape (the first data/labels one), and the
      // effective batch: N micro-batches along the first dim.
      for (unsigned i = 0; i < func.getNumArguments() && microBatchText.empty(); ++i)
        if (auto role = func.getArgAttrOfType<StringAttr>(i, tx::kRoleAttrName))
          if (role.getValue() == "data" || role.getValue() == "labels") {
            auto shape = cast<RankedTensorType>(func.getArgument(i).getType()).getShape();
            for (auto [k, d] : llvm::enumerate(shape)) {
              microBatchText += (k ? "x" : "") + std::to_string(d);
              effectiveBatchText += (k ? "x" : "") + std::to_string(k ? d : d * gradAccum);
            }
          }
    }
    return llvm::Error::success();
  }

  /// --val-data: the step's @eval (same signature) and the validation
  /// stream, windows of the training batch's size.
  llvm::Error loadValidation() {
    if (!run.valDataPath)
      return llvm::Error::success();
    auto module = func->getParentOfType<ModuleOp>();
    for (auto candidate : module.getOps<func::FuncOp>())
      if (auto ref = candidate->getAttrOfType<FlatSymbolRefAttr>(tx::kEvalAttrName))
        if (ref.getValue() == func.getName() && !candidate.isExternal())
          evalFunc = candidate;
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

  /// The validation loss after |step| (0: before the first): the mean of
  /// @eval's losses over the first --eval-steps windows of --val-data (the
  /// same windows every time, wrapping), with the current state; nothing
  /// the training reads is touched.
  llvm::Error evaluate(int64_t step) {
    std::vector<Tensor> evalArgs = args;
    int64_t count = run.evalSteps ? run.evalSteps : 10;
    double sum = 0;
    for (int64_t k = 0; k < count; ++k) {
      int64_t offset = (k % valWindows) * window;
      auto fill = [&](unsigned arg, int64_t shift) {
        Tensor batch(cast<RankedTensorType>(func.getArgument(arg).getType()));
        for (int64_t e = 0; e < window; ++e)
          batch.ints()[e] = valTokens[offset + shift + e];
        evalArgs[arg] = std::move(batch);
      };
      fill(batchArgs[0], 0);
      if (labelArg)
        fill(*labelArg, 1);
      auto results = executor.run(evalFunc, evalArgs);
      if (!results)
        return error("validation after step " + llvm::Twine(step) + ": " +
                     llvm::toString(results.takeError()));
      sum += (*results)[0].getDouble(0);
    }
    double loss = sum / static_cast<double>(count);
    clearBar();
    os << "step " << step << "  val_loss " << llvm::format("%.6f", loss) << "\n";
    os.flush();
    if (log) {
      std::fprintf(log, "%s\n", txrt::valLogLine(step, loss, count).c_str());
      std::fflush(log);
    }
    return llvm::Error::success();
  }

  /// Every token below the vocabulary size the step's gathers imply.
  llvm::Error checkVocabulary(const std::vector<int64_t> &tokens, llvm::StringRef flag,
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
  llvm::Error findResults() {
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
    return llvm::Error::success();
  }

  /// The state a checkpoint holds: every argument a result carries
  /// (weights, moments, step, FP8 scaling state, loss scale), in argument
  /// order; with --resume, that state is loaded here.
  llvm::Error prepareCheckpoints() {
    for (auto [r, a] : carried)
      stateArgs.push_back(a);
    llvm::sort(stateArgs);
    stateArgs.erase(std::unique(stateArgs.begin(), stateArgs.end()), stateArgs.end());
    recipe = tx::trainStepRecipeJson(func);
    if (run.saveDir || run.resumeDir) {
      for (unsigned a : stateArgs) {
        auto type = cast<RankedTensorType>(func.getArgument(a).getType());
        std::string dtype = safetensorsDType(type.getElementType());
        if (dtype.empty())
          return error("argument '" + argName(func, a) + "' has type " + typeText(type) +
                       ", which checkpoints cannot hold");
        auto role = func.getArgAttrOfType<StringAttr>(a, tx::kRoleAttrName);
        specs.push_back({argName(func, a), role ? role.str() : "", dtype,
                         std::vector<int64_t>(type.getShape().begin(), type.getShape().end())});
      }
    }
    if (!checkpoint)
      return llvm::Error::success();
    if (txrt::Status st = txrt::checkCompatible(*checkpoint, recipe, specs); !st.ok())
      return error("--resume: " + st.message());
    for (unsigned a : stateArgs)
      args[a] = decodeTensor(cast<RankedTensorType>(func.getArgument(a).getType()),
                             *checkpoint->find(argName(func, a)));
    const txrt::CheckpointInfo &info = checkpoint->info;
    firstStep = info.step + 1;
    if (info.hasData && !options.dataPath)
      return error("--resume: the checkpoint's run read --data '" + info.dataFile +
                   "'; pass --data to continue it");
    if (windows) {
      if (info.hasData && (info.dataTokens != tokens.size() || info.shuffle != run.shuffle))
        llvm::errs() << "txopt-run: warning: --resume: the checkpoint's run read "
                     << info.dataTokens << " tokens" << (info.shuffle ? " shuffled" : "")
                     << ", this one " << tokens.size() << (run.shuffle ? " shuffled" : "")
                     << "; continuing at window " << info.dataWindows << ", offset "
                     << info.dataOffset << "\n";
      windows->resume(info.dataWindows, info.dataOffset);
    }
    return llvm::Error::success();
  }

  llvm::Error openLog() {
    if (!run.logPath)
      return llvm::Error::success();
    log = std::fopen(run.logPath->c_str(), run.resumeDir ? "a" : "w");
    if (!log)
      return error("cannot write --log '" + *run.logPath + "': " + std::strerror(errno));
    return llvm::Error::success();
  }

  /// The inputs that change every micro-batch: the batch window and the
  /// dropout key. Micro-batch |micro| (0-based; the step runs the last,
  /// N - 1) of step |step| reads the next window and the key of micro-batch
  /// (step - 1) * N + micro of the run, which for N = 1 is the step's.
  /// And the step's scheduled lr.
  void setStepInputs(int64_t step, int64_t micro = 0) {
    if (windows) {
      int64_t offset = windows->next();
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
    }
    if (rngArg)
      args[*rngArg].ints()[0] =
          rngKey(seed, static_cast<uint64_t>((step - 1) * gradAccum + micro));
    if (schedule)
      args[*lrArg].floats()[0] = schedule->at(step);
  }

  llvm::Error runStep(int64_t step) {
    auto started = std::chrono::steady_clock::now();
    // Gradient accumulation: micro-batches 1..N-1 add into the
    // accumulator arguments; the step runs the last one and updates.
    for (int64_t m = 0; m + 1 < gradAccum; ++m) {
      setStepInputs(step, m);
      auto results = executor.run(micro, args);
      if (!results)
        return error("step " + llvm::Twine(step) + ", micro-batch " + llvm::Twine(m + 1) +
                     ": " + llvm::toString(results.takeError()));
      for (auto [r, a] : microCarried)
        args[a] = (*results)[r];
    }
    setStepInputs(step, gradAccum - 1);
    // The lr as the step reads it (the executor rounds inputs to f32).
    double lr = lrArg ? static_cast<double>(static_cast<float>(args[*lrArg].floats()[0])) : 0;
    auto results = executor.run(func, args);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() -
                                                          started)
                    .count();
    if (!results)
      return error("step " + llvm::Twine(step) + ": " +
                   llvm::toString(results.takeError()));
    double loss = (*results)[*lossIndex].getDouble(0);
    double norm = normIndex ? (*results)[*normIndex].getDouble(0) : 0.0;
    // With dynamic loss scaling a non-finite gradient skips the step in
    // the graph itself (state unchanged, scale backed off): report it and
    // go on, as GradScaler does.
    bool skipped = skippedIndex && (*results)[*skippedIndex].getInt(0) != 0;
    printStep(step, loss, norm, skipped, lr, *results);
    if (log)
      logStep(step, loss, norm, skipped, lr, ms);
    if (!std::isfinite(loss) || (!std::isfinite(norm) && !skipped))
      return stopOnNonFinite(step, loss, norm);
    for (auto [r, a] : carried)
      args[a] = (*results)[r];
    last = std::move(*results);
    if (run.saveDir &&
        (step == options.steps || (run.saveEvery && step % run.saveEvery == 0)))
      return save(step);
    return llvm::Error::success();
  }

  /// One line per step on |os|: step, loss, grad_norm[, skipped][, lr].
  void printStep(int64_t step, double loss, double norm, bool skipped,
                 double lr, const std::vector<Tensor> &results) {
    clearBar();
    os << "step " << step << "  loss " << llvm::format("%.6f", loss);
    if (normIndex)
      os << "  grad_norm " << llvm::format("%.6f", norm);
    if (skipped) {
      os << "  skipped";
      if (scaleIndex)
        os << " (loss scale -> "
           << llvm::format("%g", results[*scaleIndex].getDouble(0)) << ")";
    }
    // When the driver sets it (--lr or a schedule); last, so that the
    // columns before it keep their places. --log always records it.
    if (lrArg && (schedule || options.lr))
      os << "  lr " << llvm::format("%.6g", lr);
    os << "\n";
    os.flush();
  }

  void logStep(int64_t step, double loss, double norm, bool skipped, double lr,
               double ms) {
    txrt::StepRecord record;
    record.step = step;
    record.loss = loss;
    record.hasGradNorm = normIndex.has_value();
    record.gradNorm = norm;
    record.hasLr = lrArg.has_value();
    record.lr = lr;
    record.ms = ms;
    record.hasTokens = tokensPerStep > 0;
    record.tokPerS = ms > 0 ? tokensPerStep / (ms / 1000.0) : 0.0;
    record.skipped = skipped;
    std::fprintf(log, "%s\n", txrt::stepLogLine(record).c_str());
    std::fflush(log);
  }

  /// A NaN or infinite loss (or gradient norm, unless the step was
  /// skipped) ends the run, keeping the outputs of the last finite step.
  llvm::Error stopOnNonFinite(int64_t step, double loss, double norm) {
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

  /// --output-dir: the last finished step's results as .npy files.
  llvm::Error writeOutputs() {
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
  }

  /// --save: the state after |step|, with what resuming needs.
  llvm::Error save(int64_t step) {
    txrt::Checkpoint out;
    txrt::CheckpointInfo &info = out.info;
    info.producer = "txopt-run";
    info.recipe = recipe;
    info.step = step;
    info.seed = seed;
    if (windows) {
      info.hasData = true;
      info.dataFile = *options.dataPath;
      info.dataTokens = tokens.size();
      info.dataOffset = windows->offset();
      info.dataWindows = windows->consumed();
      info.shuffle = run.shuffle;
    }
    info.schedule = schedule ? schedule->json() : "null";
    for (size_t k = 0; k < stateArgs.size(); ++k)
      out.tensors.push_back({specs[k].name, specs[k].role, specs[k].dtype, specs[k].shape,
                             encodeTensor(args[stateArgs[k]], specs[k].dtype)});
    if (txrt::Status st = txrt::saveCheckpoint(*run.saveDir, out); !st.ok())
      return error("--save: step " + llvm::Twine(step) + ": " + st.message());
    llvm::errs() << "txopt-run: saved step " << step << " to '" << *run.saveDir << "'\n";
    return llvm::Error::success();
  }

  Executor &executor;
  func::FuncOp func;
  /// Gradient accumulation: micro-batches per step, the micro-step and
  /// which of its results feed which arguments.
  int64_t gradAccum = 1;
  func::FuncOp micro;
  std::vector<std::pair<unsigned, unsigned>> microCarried;
  std::string microBatchText, effectiveBatchText;
  /// --val-data: the step's @eval and the validation stream.
  func::FuncOp evalFunc;
  std::vector<int64_t> valTokens;
  int64_t valWindows = 0;
  std::vector<std::optional<Tensor>> given;
  const StepOptions &options;
  const RunFlags &run;
  llvm::raw_ostream &os;
  uint64_t seed;
  std::optional<txrt::Checkpoint> checkpoint;

  // Arguments.
  std::vector<Tensor> args;
  std::vector<unsigned> batchArgs; // filled each step from the token stream
  std::optional<unsigned> labelArg;
  std::optional<unsigned> rngArg, lrArg; // step inputs by role
  bool lrGiven = false;
  std::optional<txrt::LrSchedule> schedule;

  // The token stream.
  std::vector<int64_t> tokens;
  int64_t window = 0;
  std::optional<txrt::TokenWindows> windows;
  uint64_t tokensPerStep = 0;

  // Results.
  std::vector<std::pair<unsigned, unsigned>> carried; // result -> argument
  std::optional<unsigned> lossIndex, normIndex, skippedIndex, scaleIndex;

  // Checkpoints and output.
  std::vector<unsigned> stateArgs;
  std::string recipe;
  std::vector<txrt::TensorSpec> specs;
  int64_t firstStep = 1;
  std::vector<Tensor> last;
  std::FILE *log = nullptr;
  bool showBar = false, barShown = false;
};

} // namespace
} // namespace txopt_run

llvm::Error txopt_run::runSteps(Executor &executor, func::FuncOp func,
                                std::vector<std::optional<Tensor>> given,
                                const StepOptions &options,
                                llvm::raw_ostream &os) {
  return StepRunner(executor, func, std::move(given), options, os).runAll();
}
