//===- txrun.cpp - run a compiled training step on the GPU ----------------===//
//
// SPDX-License-Identifier: Apache-2.0
// `txrun step.txa --steps N [options]`: the GPU counterpart of
// `txopt-run model.mlir --steps N`. The batch (seeded random, or windows of
// a token file) is fed exactly as txopt-run feeds it, so the two executors'
// losses can be compared step by step. Errors are one line,
// `txrun: error: ...`: exit 1 for a bad artifact, device or run, 2 for a
// usage error.
//
//===----------------------------------------------------------------------===//

#include "core/batch.h"
#include "core/checkpoint.h"
#include "core/json.h"
#include "core/npy.h"
#include "core/session.h"
#include "core/training.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

using namespace txrt;

namespace {

enum ExitCode { kSuccess = 0, kRunError = 1, kUsageError = 2 };

const char *kHelp = R"(OVERVIEW: txrun - run a compiled training step (step.txa) on a CUDA GPU

USAGE: txrun STEP.txa --steps N [options]

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
  --no-graph           Run every step command by command instead of replaying
                       a CUDA graph captured at step 2.
  --sync-each          Debugging: synchronize after every command (implies
                       --no-graph) so that a faulting command is named.
  --device I           CUDA device ordinal (default 0).
  --help               Print this help.

OUTPUT: the recipe once, then per step
  step N  loss L  grad_norm G  lr X  ms T  tok/s R
(floats with 9 significant digits; tok/s counts the elements of the "data"
argument), then the peak device memory and the mean ms and tok/s of the
steps after the first. A NaN or infinite loss or gradient norm stops the run.

EXIT STATUS: 0 success, 1 bad artifact, device or run, 2 usage error.
)";

struct Options {
  std::string artifact;
  int64_t steps = 1;
  std::optional<std::string> dataPath, weightsDir, outputDir, dumpDir;
  uint64_t seed = kDefaultSeed;
  int64_t logEvery = 1;
  std::optional<double> lr, minLr;
  std::optional<std::string> schedule, saveDir, resumeDir, logPath;
  std::optional<int64_t> warmup, decaySteps;
  int64_t saveEvery = 0;
  bool shuffle = false;
  bool noGraph = false, syncEach = false, help = false, forceJit = false;
  int64_t profileStep = 0;
  std::optional<std::string> profileOut;
  int device = 0;
};

int fail(ExitCode code, std::string message) {
  for (char &c : message)
    if (c == '\n')
      c = ' ';
  std::fprintf(stderr, "txrun: error: %s\n", message.c_str());
  return code;
}

bool parseInt(const std::string &text, int64_t &out) {
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

/// The --profile table: device time per kind of command (kernel family by
/// the op it came from, cuBLASLt GEMMs, fused attention, memsets, copies)
/// and the slowest single commands with their origin.
void printProfile(const Artifact &artifact, const std::vector<float> &ms,
                  float total) {
  const fb::Artifact &a = artifact.root();
  std::map<std::string, std::pair<double, int>> families;
  std::vector<std::pair<float, unsigned>> order;
  for (unsigned i = 0; i < ms.size(); ++i) {
    const fb::Command *c = a.commands()->Get(i);
    std::string family;
    switch (c->op_type()) {
    case fb::Op::Launch: {
      std::string name = a.kernels()->Get(c->op_as_Launch()->kernel())->name()->str();
      size_t underscore = name.find('_');
      family = "kernel " + (underscore == std::string::npos ? name : name.substr(underscore + 1));
      break;
    }
    case fb::Op::Gemm: family = "gemm (cuBLASLt)"; break;
    case fb::Op::Memset: family = "memset"; break;
    case fb::Op::Copy: family = "copy"; break;
    case fb::Op::Attention: family = "attention (cuDNN SDPA)"; break;
    default: family = "other"; break;
    }
    families[family].first += ms[i];
    families[family].second += 1;
    order.push_back({ms[i], i});
  }
  std::vector<std::pair<double, std::string>> rows;
  for (auto &[name, v] : families)
    rows.push_back({v.first, name});
  std::sort(rows.rbegin(), rows.rend());
  std::printf("profile: %zu commands, %.3f ms (events between commands, no graph)\n",
              ms.size(), total);
  std::printf("  %-36s %10s %6s %7s\n", "family", "ms", "count", "share");
  for (auto &[t, name] : rows)
    std::printf("  %-36s %10.3f %6d %6.1f%%\n", name.c_str(), t, families[name].second,
                total > 0 ? 100.0 * t / total : 0.0);
  std::sort(order.rbegin(), order.rend());
  std::printf("  slowest commands:\n");
  for (size_t k = 0; k < std::min<size_t>(12, order.size()); ++k)
    std::printf("  %10.3f ms  %s\n", order[k].first,
                artifact.describeCommand(order[k].second).c_str());
  std::fflush(stdout);
}

/// The buffers a command touches, by slot: a launch's arguments, a GEMM's
/// A, B, D (and bias, scales), an attention call's tensors. Their bytes are
/// what a bandwidth figure divides by (each counted once, so a broadcast
/// input counts its own size, not the elements read through it).
std::vector<unsigned> slotsOf(const fb::Command &c) {
  std::vector<unsigned> s;
  switch (c.op_type()) {
  case fb::Op::Launch:
    if (auto *args = c.op_as_Launch()->args())
      s.assign(args->begin(), args->end());
    break;
  case fb::Op::Gemm: {
    const fb::Gemm *g = c.op_as_Gemm();
    s = {g->a(), g->b(), g->d()};
    if (g->bias() >= 0)
      s.push_back(static_cast<unsigned>(g->bias()));
    break;
  }
  case fb::Op::Memset: s = {c.op_as_Memset()->slot()}; break;
  case fb::Op::Copy: s = {c.op_as_Copy()->dst(), c.op_as_Copy()->src()}; break;
  case fb::Op::Attention: {
    const fb::Attention *a = c.op_as_Attention();
    for (const fb::AttentionTensor *t :
         {a->q(), a->k(), a->v(), a->o(), a->grad_o(), a->grad_q(), a->grad_k(), a->grad_v(),
          a->has_mask() ? a->mask() : nullptr})
      if (t)
        s.push_back(t->slot());
    s.push_back(a->lse());
    break;
  }
  default: break;
  }
  std::sort(s.begin(), s.end());
  s.erase(std::unique(s.begin(), s.end()), s.end());
  return s;
}

/// --profile-out: the profiled step, command by command, as JSON.
Status writeProfileJson(const std::string &path, const Artifact &artifact,
                        const std::vector<float> &ms, const std::vector<float> &hostMs,
                        float total) {
  const fb::Artifact &a = artifact.root();
  std::string out = "{\"step_ms\": " + json::number(total) + ", \"commands\": [\n";
  for (unsigned i = 0; i < ms.size(); ++i) {
    const fb::Command *c = a.commands()->Get(i);
    std::string kind = fb::EnumNameOp(c->op_type()), name;
    if (c->op_type() == fb::Op::Launch)
      name = a.kernels()->Get(c->op_as_Launch()->kernel())->name()->str();
    uint64_t bytes = 0;
    for (unsigned slot : slotsOf(*c))
      if (a.slots() && slot < a.slots()->size())
        bytes += a.slots()->Get(slot)->bytes();
    out += "  {\"index\": " + std::to_string(i) + ", \"kind\": " + json::quote(kind) +
           ", \"kernel\": " + json::quote(name) + ", \"origin\": " +
           json::quote(c->origin() ? c->origin()->str() : "") + ", \"ms\": " +
           json::number(ms[i]) + ", \"host_ms\": " + json::number(hostMs[i]) +
           ", \"bytes\": " + std::to_string(bytes) + "}" +
           (i + 1 < ms.size() ? ",\n" : "\n");
  }
  out += "]}\n";
  FILE *f = std::fopen(path.c_str(), "w");
  if (!f)
    return Status::invalid("cannot write '" + path + "': " + std::strerror(errno));
  bool ok = std::fwrite(out.data(), 1, out.size(), f) == out.size();
  ok = std::fclose(f) == 0 && ok;
  return ok ? Status() : Status::invalid("cannot write '" + path + "'");
}

bool parseOptions(int argc, char **argv, Options &o, std::string &error) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      o.help = true;
      continue;
    }
    if (arg == "--no-graph") {
      o.noGraph = true;
      continue;
    }
    if (arg == "--jit") {
      o.forceJit = true;
      continue;
    }
    if (arg == "--sync-each") {
      o.syncEach = true;
      continue;
    }
    if (arg == "--shuffle") {
      o.shuffle = true;
      continue;
    }
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
    static const char *const kValued[] = {"--steps", "--data", "--seed",
                                          "--weights-dir", "--output-dir",
                                          "--dump-results", "--log-every", "--device",
                                          "--lr", "--schedule", "--warmup",
                                          "--decay-steps", "--min-lr", "--save",
                                          "--save-every", "--resume", "--log",
                                          "--profile", "--profile-out"};
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
    } else if (name == "--save" || name == "--resume" || name == "--log") {
      if (value.empty()) {
        error = "option '" + name + "' needs a value";
        return false;
      }
      (name == "--save" ? o.saveDir : name == "--resume" ? o.resumeDir : o.logPath) = value;
    } else if (name == "--data") {
      o.dataPath = value;
    } else if (name == "--weights-dir") {
      o.weightsDir = value;
    } else if (name == "--output-dir") {
      o.outputDir = value;
    } else if (name == "--dump-results") {
      o.dumpDir = value;
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
  if (o.saveEvery && !o.saveDir) {
    error = "--save-every needs --save DIR";
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

bool fileExists(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

Status makeDirectories(const std::string &path) {
  std::string prefix;
  for (size_t i = 0; i <= path.size(); ++i) {
    if (i == path.size() || path[i] == '/') {
      prefix = path.substr(0, i);
      if (!prefix.empty() && ::mkdir(prefix.c_str(), 0777) != 0 && errno != EEXIST)
        return Status::invalid("cannot create '" + prefix + "': " + std::strerror(errno));
    }
  }
  return Status();
}

std::string str(const flatbuffers::String *s) { return s ? s->str() : ""; }

std::vector<int64_t> shapeOf(const flatbuffers::Vector<int64_t> *shape) {
  std::vector<int64_t> out;
  if (shape)
    for (size_t i = 0; i < shape->size(); ++i)
      out.push_back(shape->Get(i));
  return out;
}

/// A host copy of one tensor (argument or result) with its name and type.
struct HostTensor {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  uint64_t elements;
  std::vector<uint8_t> bytes;
};

/// What --output-dir writes: every argument whose role is not data/labels
/// (the state), and every result that does not become an argument.
struct OutputSet {
  std::vector<unsigned> arguments, results;
};

OutputSet outputSetOf(const Artifact &artifact) {
  OutputSet set;
  const fb::Artifact &a = artifact.root();
  for (unsigned i = 0; a.arguments() && i < a.arguments()->size(); ++i) {
    std::string role = str(a.arguments()->Get(i)->role());
    if (role != "data" && role != "labels")
      set.arguments.push_back(i);
  }
  for (unsigned i = 0; a.results() && i < a.results()->size(); ++i)
    if (a.results()->Get(i)->next() < 0)
      set.results.push_back(i);
  return set;
}

Status snapshot(Session &session, const OutputSet &set, std::vector<HostTensor> &out) {
  const Artifact &artifact = session.artifact();
  const fb::Artifact &a = artifact.root();
  out.clear();
  for (unsigned i : set.arguments) {
    const fb::Argument *arg = a.arguments()->Get(i);
    HostTensor t{str(arg->name()), arg->dtype(), shapeOf(arg->shape()),
                 artifact.argumentElements(i), {}};
    t.bytes.resize(t.elements * dtypeSize(t.dtype));
    TXRT_RETURN_IF_ERROR(session.readArgument(i, t.bytes.data(), t.bytes.size()));
    out.push_back(std::move(t));
  }
  for (unsigned i : set.results) {
    const fb::Result *r = a.results()->Get(i);
    HostTensor t{str(r->name()), r->dtype(), shapeOf(r->shape()),
                 artifact.resultElements(i), {}};
    t.bytes.resize(t.elements * dtypeSize(t.dtype));
    TXRT_RETURN_IF_ERROR(session.readResult(i, t.bytes.data(), t.bytes.size()));
    out.push_back(std::move(t));
  }
  return Status();
}

Status writeTensors(const std::string &dir, const std::vector<HostTensor> &tensors) {
  TXRT_RETURN_IF_ERROR(makeDirectories(dir));
  for (const HostTensor &t : tensors)
    TXRT_RETURN_IF_ERROR(writeNpyFile(dir + "/" + npyFileNameFor(t.name), t.dtype,
                                      t.shape, t.bytes.data(), t.elements));
  return Status();
}

/// Reads scalar result |index| as a double (first element).
Status readScalar(Session &session, int index, double &value) {
  const fb::Result *r = session.artifact().root().results()->Get(index);
  std::vector<uint8_t> bytes(session.artifact().resultElements(index) *
                             dtypeSize(r->dtype()));
  if (bytes.empty()) {
    value = 0;
    return Status();
  }
  TXRT_RETURN_IF_ERROR(session.readResult(index, bytes.data(), bytes.size()));
  value = loadAsDouble(r->dtype(), bytes.data(), 0);
  return Status();
}

/// The safetensors name of |type| (checkpoint.h).
const char *safetensorsDType(DType type) {
  switch (type) {
  case DType::F32: return "F32";
  case DType::F16: return "F16";
  case DType::BF16: return "BF16";
  case DType::F8E4M3FN: return "F8_E4M3";
  case DType::F8E5M2: return "F8_E5M2";
  case DType::F64: return "F64";
  case DType::I64: return "I64";
  case DType::I32: return "I32";
  case DType::I8: return "I8";
  case DType::I1: return "BOOL";
  default: return "";
  }
}

int run(const Options &o) {
  std::unique_ptr<Artifact> loaded;
  if (Status s = Artifact::loadFile(o.artifact, loaded); !s.ok())
    return fail(kRunError, s.message());
  std::shared_ptr<const Artifact> artifact = std::move(loaded);

  const fb::Artifact &root = artifact->root();

  // A resumed run keeps the checkpoint's seed (random batch, dropout keys,
  // shuffle order). Everything about the checkpoint is checked before the
  // device is touched.
  std::optional<Checkpoint> checkpoint;
  uint64_t seed = o.seed;
  if (o.resumeDir) {
    checkpoint.emplace();
    if (Status s = loadCheckpoint(*o.resumeDir, *checkpoint); !s.ok())
      return fail(kRunError, "--resume: " + s.message());
    if (o.seed != 0 && o.seed != checkpoint->info.seed)
      return fail(kRunError, "--resume: the checkpoint's run has --seed " +
                                 std::to_string(checkpoint->info.seed) + ", not " +
                                 std::to_string(o.seed) +
                                 " (resuming keeps the seed; leave --seed out)");
    seed = checkpoint->info.seed;
  }

  std::unique_ptr<BatchFeeder> feeder;
  if (Status s = BatchFeeder::create(*artifact, seed, o.dataPath, feeder, o.shuffle); !s.ok())
    return fail(kRunError, s.message());

  // The learning rate: a schedule (or a constant --lr) is written to the lr
  // argument before every step, like the batch.
  bool wantsSchedule = o.schedule || o.warmup || o.decaySteps || o.minLr;
  std::string scheduleJson = "null";
  if (wantsSchedule || o.lr) {
    if (feeder->lrArgument() < 0)
      return fail(kRunError, std::string(wantsSchedule ? "--schedule" : "--lr") +
                                 ": the step has no argument with role 'lr'");
    LrSchedule schedule;
    schedule.kind = LrSchedule::Kind::Constant;
    if (wantsSchedule) {
      schedule.kind = LrSchedule::Kind::Cosine;
      if (o.schedule)
        parseScheduleKind(*o.schedule, schedule.kind);
    }
    schedule.lr = o.lr ? *o.lr : feeder->compiledLr();
    schedule.warmup = o.warmup.value_or(0);
    schedule.decaySteps = o.decaySteps.value_or(o.steps);
    schedule.minLr = o.minLr.value_or(0.0);
    if (Status s = schedule.validate(); !s.ok())
      return fail(kUsageError, s.message());
    feeder->setLrSchedule(schedule);
    if (wantsSchedule)
      scheduleJson = schedule.json();
  }

  // The state a checkpoint holds: every argument a result becomes (weights,
  // moments, step, FP8 scaling state, loss scale), in argument order.
  std::vector<unsigned> stateArgs;
  std::vector<TensorSpec> specs;
  for (unsigned i = 0; root.arguments() && i < root.arguments()->size(); ++i) {
    const fb::Argument *arg = root.arguments()->Get(i);
    if (arg->next_of() < 0)
      continue;
    stateArgs.push_back(i);
    specs.push_back({str(arg->name()), str(arg->role()), safetensorsDType(arg->dtype()),
                     shapeOf(arg->shape())});
    if (specs.back().dtype.empty() && (o.saveDir || o.resumeDir))
      return fail(kRunError, "argument '" + specs.back().name + "' has type " +
                                 dtypeName(arg->dtype()) + ", which checkpoints cannot hold");
  }
  std::string recipe = str(root.recipe());
  int64_t firstStep = 1;
  if (checkpoint) {
    if (Status s = checkCompatible(*checkpoint, recipe, specs); !s.ok())
      return fail(kRunError, "--resume: " + s.message());
    const CheckpointInfo &info = checkpoint->info;
    firstStep = info.step + 1;
    if (info.hasData && !o.dataPath)
      return fail(kRunError, "--resume: the checkpoint's run read --data '" + info.dataFile +
                                 "'; pass --data to continue it");
    if (feeder->hasTokens()) {
      if (info.hasData && (info.dataTokens != feeder->tokenCount() || info.shuffle != o.shuffle))
        std::fprintf(stderr,
                     "txrun: warning: --resume: the checkpoint's run read %llu tokens%s, "
                     "this one %llu%s; continuing at window %lld, offset %lld\n",
                     static_cast<unsigned long long>(info.dataTokens),
                     info.shuffle ? " shuffled" : "",
                     static_cast<unsigned long long>(feeder->tokenCount()),
                     o.shuffle ? " shuffled" : "", static_cast<long long>(info.dataWindows),
                     static_cast<long long>(info.dataOffset));
      feeder->resumeData(info.dataWindows, info.dataOffset);
    }
    if (firstStep > o.steps) {
      std::fprintf(stderr,
                   "txrun: the checkpoint is at step %lld; nothing to run up to --steps %lld "
                   "(with --resume, --steps is the number of the last step)\n",
                   static_cast<long long>(info.step), static_cast<long long>(o.steps));
      return kSuccess;
    }
  }
  std::FILE *log = nullptr;
  if (o.logPath) {
    log = std::fopen(o.logPath->c_str(), o.resumeDir ? "a" : "w");
    if (!log)
      return fail(kRunError, "cannot write --log '" + *o.logPath + "': " + std::strerror(errno));
  }
  struct Closer {
    std::FILE *f;
    ~Closer() {
      if (f)
        std::fclose(f);
    }
  } closer{log};

  SessionOptions sessionOptions;
  sessionOptions.device = o.device;
  if (o.weightsDir)
    sessionOptions.weightsDir = *o.weightsDir;
  sessionOptions.useGraphs = !o.noGraph;
  sessionOptions.forceJit = o.forceJit;
  sessionOptions.syncEachCommand = o.syncEach;
  std::unique_ptr<Session> session;
  if (Status s = Session::create(artifact, sessionOptions, session); !s.ok())
    return fail(kRunError, s.message());

  const hal::DeviceInfo &info = session->deviceInfo();
  std::printf("device %d: %s, sm_%d%d\n", o.device, info.name.c_str(), info.ccMajor,
              info.ccMinor);
  if (session->usesJit())
    std::printf("kernels: the artifact's PTX, compiled by the driver at load%s\n",
                o.forceJit ? " (--jit)" : " (its cubins are for another architecture)");
  std::printf("recipe %s\n", recipe.empty() ? "{}" : recipe.c_str());
  if (session->gradAccum() > 1)
    std::printf("accumulating %u micro-batches per step (%s), %llu tokens per step\n",
                session->gradAccum(),
                root.micro_step()->name() ? root.micro_step()->name()->c_str() : "micro-step",
                static_cast<unsigned long long>(feeder->tokensPerStep()));
  if (checkpoint) {
    for (size_t k = 0; k < stateArgs.size(); ++k) {
      const CheckpointTensor *t = checkpoint->find(specs[k].name);
      if (Status s = session->writeArgument(stateArgs[k], t->bytes.data(), t->bytes.size());
          !s.ok())
        return fail(kRunError, "--resume: " + s.message());
    }
    std::printf("resumed from '%s' at step %lld\n", o.resumeDir->c_str(),
                static_cast<long long>(checkpoint->info.step));
  }
  std::fflush(stdout);
  auto save = [&](int64_t step) -> Status {
    Checkpoint out;
    CheckpointInfo &info = out.info;
    info.producer = "txrun";
    info.recipe = recipe;
    info.step = step;
    info.seed = seed;
    if (feeder->hasTokens()) {
      info.hasData = true;
      info.dataFile = *o.dataPath;
      info.dataTokens = feeder->tokenCount();
      info.dataOffset = feeder->dataOffset();
      info.dataWindows = feeder->windowsConsumed();
      info.shuffle = o.shuffle;
    }
    info.schedule = scheduleJson;
    for (size_t k = 0; k < stateArgs.size(); ++k) {
      const fb::Argument *arg = root.arguments()->Get(stateArgs[k]);
      CheckpointTensor t{specs[k].name, specs[k].role, specs[k].dtype, specs[k].shape, {}};
      t.bytes.resize(artifact->argumentElements(stateArgs[k]) * dtypeSize(arg->dtype()));
      TXRT_RETURN_IF_ERROR(session->readArgument(stateArgs[k], t.bytes.data(), t.bytes.size()));
      out.tensors.push_back(std::move(t));
    }
    TXRT_RETURN_IF_ERROR(saveCheckpoint(*o.saveDir, out));
    std::fprintf(stderr, "txrun: saved step %lld to '%s'\n", static_cast<long long>(step),
                 o.saveDir->c_str());
    return Status();
  };

  int lossIndex = artifact->findResult("loss");
  int normIndex = artifact->findResult("grad_norm");
  int skippedIndex = artifact->findResult("skipped");
  int scaleIndex = artifact->findResult("loss_scale");
  OutputSet outputs = outputSetOf(*artifact);
  std::vector<HostTensor> lastFinite;
  bool haveLastFinite = false;
  double sumMs = 0;
  int64_t timedSteps = 0;
  std::vector<BatchFeeder::Write> writes;
  uint64_t tokens = feeder->tokensPerStep();

  unsigned accum = session->gradAccum() > 1 ? session->gradAccum() : 1;
  // A progress bar below the step lines, only on a terminal (a pipe or a
  // file gets exactly the lines), redrawn at most every 0.2 s; cleared at
  // the top of each step so that whatever the step prints starts clean.
  bool showBar = isatty(fileno(stdout)) != 0, barShown = false;
  auto runStarted = std::chrono::steady_clock::now();
  auto lastDrawn = runStarted - std::chrono::seconds(1);
  for (int64_t step = firstStep; step <= o.steps; ++step) {
    if (barShown) {
      std::fputs(kClearLine, stdout);
      barShown = false;
    }
    auto upload = [&](unsigned micro) -> Status {
      feeder->writesForStep(step, writes, micro);
      for (const BatchFeeder::Write &w : writes)
        TXRT_RETURN_IF_ERROR(
            session->writeArgument(w.argument, w.bytes->data(), w.bytes->size()));
      return Status();
    };
    // Gradient accumulation: micro-batches 1..N-1 add their gradients into
    // the accumulator arguments; the step below runs micro-batch N.
    float microMs = 0;
    for (unsigned m = 0; m + 1 < accum; ++m) {
      float oneMs = 0;
      if (Status s = upload(m); !s.ok())
        return fail(kRunError, "step " + std::to_string(step) + ": " + s.message());
      if (Status s = session->runMicroStep(&oneMs); !s.ok())
        return fail(kRunError, "step " + std::to_string(step) + ": " + s.message());
      microMs += oneMs;
    }
    if (Status s = upload(accum - 1); !s.ok())
      return fail(kRunError, "step " + std::to_string(step) + ": " + s.message());
    // Keep the state this step starts from: if the step goes non-finite,
    // --output-dir gets the last finite state, as with txopt-run.
    if (o.outputDir && step > firstStep) {
      if (Status s = snapshot(*session, outputs, lastFinite); !s.ok())
        return fail(kRunError, s.message());
      haveLastFinite = true;
    }
    float ms = 0;
    if (step == o.profileStep) {
      std::vector<float> perCommand, hostPerCommand;
      if (Status s = session->runStepProfiled(perCommand, &ms, &hostPerCommand); !s.ok())
        return fail(kRunError, s.message());
      printProfile(session->artifact(), perCommand, ms);
      if (o.profileOut)
        if (Status s = writeProfileJson(*o.profileOut, session->artifact(), perCommand,
                                        hostPerCommand, ms);
            !s.ok())
          return fail(kRunError, "--profile-out: " + s.message());
    } else if (Status s = session->runStep(&ms); !s.ok()) {
      return fail(kRunError, s.message());
    }
    ms += microMs;
    if (step > firstStep) {
      sumMs += ms;
      ++timedSteps;
    }
    double loss = 0, norm = 0, skipped = 0, scale = 0;
    for (auto [index, value] : {std::pair{lossIndex, &loss}, {normIndex, &norm},
                                {skippedIndex, &skipped}, {scaleIndex, &scale}})
      if (index >= 0)
        if (Status s = readScalar(*session, index, *value); !s.ok())
          return fail(kRunError, s.message());
    bool finite = std::isfinite(loss) && std::isfinite(norm);
    bool print = step == firstStep || step == o.steps || step % o.logEvery == 0 || !finite;
    double lr = feeder->lrForStep(step);
    bool hasLr = feeder->lrArgument() >= 0;
    if (print) {
      std::printf("step %lld", static_cast<long long>(step));
      if (lossIndex >= 0)
        std::printf("  loss %.9g", loss);
      if (normIndex >= 0)
        std::printf("  grad_norm %.9g", norm);
      if (hasLr)
        std::printf("  lr %.9g", lr);
      std::printf("  ms %.3f", ms);
      if (tokens)
        std::printf("  tok/s %.0f", ms > 0 ? tokens / (ms / 1000.0) : 0.0);
      if (skippedIndex >= 0 && skipped != 0) {
        std::printf("  skipped");
        if (scaleIndex >= 0)
          std::printf(" (loss scale -> %g)", scale);
      }
      std::printf("\n");
      std::fflush(stdout);
    }
    // With dynamic loss scaling a non-finite gradient skips the step in the
    // graph itself; only a non-finite loss, or norm without a skip, stops.
    bool isSkipped = skippedIndex >= 0 && skipped != 0;
    if (log) {
      StepRecord record;
      record.step = step;
      record.loss = loss;
      record.hasGradNorm = normIndex >= 0;
      record.gradNorm = norm;
      record.hasLr = hasLr;
      record.lr = lr;
      record.ms = ms;
      record.hasTokens = tokens > 0;
      record.tokPerS = ms > 0 ? tokens / (ms / 1000.0) : 0.0;
      record.skipped = isSkipped;
      std::fprintf(log, "%s\n", stepLogLine(record).c_str());
      std::fflush(log);
    }
    if (!std::isfinite(loss) || (!std::isfinite(norm) && !isSkipped)) {
      std::string extra;
      if (o.outputDir && haveLastFinite) {
        if (Status s = writeTensors(*o.outputDir, lastFinite); !s.ok())
          return fail(kRunError, s.message());
        extra = " (--output-dir holds step " + std::to_string(step - 1) + ")";
      }
      double bad = std::isfinite(loss) ? norm : loss;
      return fail(kRunError, "step " + std::to_string(step) + ": the " +
                                 (std::isfinite(loss) ? "gradient norm" : "loss") +
                                 " is " + (std::isnan(bad) ? "NaN" : "infinite") +
                                 "; stopped" + extra + "; try a lower --lr or --grad-clip");
    }
    if (o.saveDir && (step == o.steps || (o.saveEvery && step % o.saveEvery == 0)))
      if (Status s = save(step); !s.ok())
        return fail(kRunError, "--save: step " + std::to_string(step) + ": " + s.message());
    auto now = std::chrono::steady_clock::now();
    if (showBar && step < o.steps && now - lastDrawn >= std::chrono::milliseconds(200)) {
      double seconds = std::chrono::duration<double>(now - runStarted).count();
      std::fputs(progressBar(step, firstStep, o.steps, seconds).c_str(), stdout);
      std::fflush(stdout);
      barShown = true;
      lastDrawn = now;
    }
  }
  if (barShown)
    std::fputs(kClearLine, stdout);

  uint64_t peak = 0;
  if (Status s = session->peakMemory(peak); !s.ok())
    return fail(kRunError, s.message());
  std::printf("peak device memory %.1f MiB (%llu bytes; the plan says %llu)\n",
              peak / (1024.0 * 1024.0), static_cast<unsigned long long>(peak),
              static_cast<unsigned long long>(artifact->root().peak_bytes()));
  if (timedSteps > 0) {
    double meanMs = sumMs / timedSteps;
    std::printf("mean over steps %lld..%lld: ms %.3f", static_cast<long long>(firstStep + 1),
                static_cast<long long>(o.steps), meanMs);
    if (tokens)
      std::printf("  tok/s %.0f", tokens / (meanMs / 1000.0));
    std::printf("\n");
  }
  if (o.outputDir) {
    std::vector<HostTensor> final;
    if (Status s = snapshot(*session, outputs, final); !s.ok())
      return fail(kRunError, s.message());
    if (Status s = writeTensors(*o.outputDir, final); !s.ok())
      return fail(kRunError, s.message());
  }
  if (o.dumpDir) {
    OutputSet all;
    for (unsigned i = 0; artifact->root().results() && i < artifact->root().results()->size();
         ++i)
      all.results.push_back(i);
    std::vector<HostTensor> results;
    if (Status s = snapshot(*session, all, results); !s.ok())
      return fail(kRunError, s.message());
    if (Status s = writeTensors(*o.dumpDir, results); !s.ok())
      return fail(kRunError, s.message());
  }
  return kSuccess;
}

} // namespace

int main(int argc, char **argv) {
  Options options;
  std::string error;
  if (!parseOptions(argc, argv, options, error))
    return fail(kUsageError, error);
  if (options.help) {
    std::fputs(kHelp, stdout);
    return kSuccess;
  }
  if (!fileExists(options.artifact))
    return fail(kUsageError, "cannot read '" + options.artifact + "': no such file");
  if (options.dataPath && !fileExists(*options.dataPath))
    return fail(kUsageError, "cannot read --data '" + *options.dataPath +
                                 "': no such file");
  try {
    return run(options);
  } catch (const std::exception &e) {
    return fail(kRunError, std::string("internal error: ") + e.what());
  }
}
