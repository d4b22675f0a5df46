//===- run.cpp - txrun: the training run ----------------------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// The run, phase by phase as TrainingRun goes through it: the artifact and
// the checkpoint it resumes, the batch feeder and lr schedule, the state a
// checkpoint holds, the session, then the step loop (micro-batches, the
// step line, the log, the stop on a non-finite loss, --save) and what is
// written at the end.
//
//===----------------------------------------------------------------------===//

#include "run.h"

#include "host_tensors.h"
#include "profile.h"

#include "core/batch.h"
#include "core/checkpoint.h"
#include "core/loss_plot.h"
#include "core/session.h"
#include "core/training.h"
#include "core/launch_env.h"
#include "hal/cuda/cuda_hal.h"
#include "hal/thread_communicator.h"

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdarg>
#include <cstring>
#include <optional>
#include <thread>
#include <unistd.h>

using namespace txrt;
using namespace txrun;

namespace {

/// Which data-parallel rank a TrainingRun is (a plain run: rank 0 of 1,
/// no communicator). Only rank 0 prints and writes files.
struct RankContext {
  int rank = 0, size = 1;
  std::shared_ptr<hal::Communicator> communicator;
};

/// One txrun run. Each phase returns the exit code when the run ends there
/// (an error, or nothing left to run), nothing when it goes on.
class TrainingRun {
public:
  TrainingRun(const Options &o, RankContext ranks = {})
      : o(o), ranks(std::move(ranks)), seed(o.seed) {}
  ~TrainingRun() {
    if (log)
      std::fclose(log);
  }

  int run() {
    for (auto phase : {&TrainingRun::loadArtifact, &TrainingRun::loadResume,
                       &TrainingRun::createFeeder, &TrainingRun::buildSchedule,
                       &TrainingRun::findState, &TrainingRun::checkResume,
                       &TrainingRun::openLog, &TrainingRun::createSession,
                       &TrainingRun::restoreState})
      if (std::optional<int> exit = (this->*phase)())
        return *exit;
    if (std::optional<int> exit = runSteps())
      return *exit;
    return finish();
  }

private:
  std::optional<int> loadArtifact();
  std::optional<int> loadResume();
  std::optional<int> createFeeder();
  std::optional<int> buildSchedule();
  std::optional<int> findState();
  std::optional<int> checkResume();
  std::optional<int> openLog();
  std::optional<int> createSession();
  std::optional<int> restoreState();
  std::optional<int> runSteps();
  std::optional<int> runStep(int64_t step);
  std::optional<int> evaluate(int64_t step);
  void printStep(int64_t step, double loss, double norm, double skipped, double scale,
                 double lr, double ms);
  void logStep(int64_t step, double loss, double norm, bool isSkipped, double lr,
               double ms);
  Status save(int64_t step);
  int finish();

  /// printf for rank 0 only (the other ranks run the same step quietly).
  void say(const char *format, ...) __attribute__((format(printf, 2, 3)));
  /// For an error every rank meets alike (the same artifact, checkpoint
  /// and options): said by rank 0 only when the ranks are threads of this
  /// process; ranks of a launcher are processes, maybe on machines that
  /// see other files, so each says its own, naming its rank.
  int failOnce(ExitCode code, const std::string &message) {
    if (ranks.rank == 0)
      return fail(code, message);
    if (ranks.communicator && std::string(ranks.communicator->kind()) == "threads")
      return code;
    return fail(code, "rank " + std::to_string(ranks.rank) + ": " + message);
  }
  const Options &o;
  RankContext ranks;
  std::shared_ptr<const Artifact> artifact;
  const fb::Artifact *root = nullptr;
  std::optional<Checkpoint> checkpoint;
  uint64_t seed;
  std::unique_ptr<BatchFeeder> feeder;
  std::string scheduleJson = "null";
  /// The state a checkpoint holds, in argument order.
  std::vector<unsigned> stateArgs;
  std::vector<TensorSpec> specs;
  /// Per state tensor: whether the argument is this rank's shard of it
  /// (shard_of; its spec has the whole shape, as checkpoints hold it).
  std::vector<bool> sharded;
  /// Bytes of state tensor |k|'s argument (a shard: this rank's part), and
  /// of the whole tensor its spec describes.
  size_t argumentBytes(size_t k) const {
    return artifact->argumentElements(stateArgs[k]) *
           dtypeSize(root->arguments()->Get(stateArgs[k])->dtype());
  }
  size_t wholeBytes(size_t k) const {
    size_t elements = 1;
    for (int64_t d : specs[k].shape)
      elements *= static_cast<size_t>(d);
    return elements * dtypeSize(root->arguments()->Get(stateArgs[k])->dtype());
  }
  std::string recipe;
  int64_t firstStep = 1;
  std::FILE *log = nullptr;
  std::unique_ptr<Session> session;

  // The step loop.
  int lossIndex = -1, normIndex = -1, skippedIndex = -1, scaleIndex = -1;
  OutputSet outputs;
  std::vector<HostTensor> lastFinite;
  bool haveLastFinite = false;
  double sumMs = 0;
  int64_t timedSteps = 0;
  std::vector<BatchFeeder::Write> writes;
  uint64_t tokens = 0;
  unsigned accum = 1;
  /// MFU: the step's model FLOPs against the GPU's peak for the step's
  /// GEMM precision (0: unknown GPU, no MFU).
  double modelFlops = 0, peakTflopsOfGpu = 0;
  double memGib = 0;
  void findPeak();
};

void TrainingRun::say(const char *format, ...) {
  if (ranks.rank != 0)
    return;
  va_list args;
  va_start(args, format);
  std::vprintf(format, args);
  va_end(args);
}

std::optional<int> TrainingRun::loadArtifact() {
  std::unique_ptr<Artifact> loaded;
  if (Status s = Artifact::loadFile(o.artifact, loaded); !s.ok())
    return fail(kRunError, s.message());
  // The step for this run's rank count (an artifact may hold several),
  // before any device is touched (every rank finds the same; rank 0 says
  // why it cannot run).
  loaded->selectRanks(static_cast<unsigned>(ranks.size));
  artifact = std::move(loaded);
  root = &artifact->root();
  std::string mismatch =
      rankCountMismatch(*artifact, ranks.size, ranks.communicator != nullptr);
  if (!mismatch.empty())
    return ranks.rank == 0 ? fail(kRunError, mismatch) : kRunError;
  return std::nullopt;
}

/// A resumed run keeps the checkpoint's seed (random batch, dropout keys,
/// shuffle order). Everything about the checkpoint is checked before the
/// device is touched.
std::optional<int> TrainingRun::loadResume() {
  if (!o.resumeDir)
    return std::nullopt;
  checkpoint.emplace();
  if (Status s = loadCheckpoint(*o.resumeDir, *checkpoint); !s.ok())
    return failOnce(kRunError, "--resume: " + s.message());
  if (o.seed != 0 && o.seed != checkpoint->info.seed)
    return failOnce(kRunError, "--resume: the checkpoint's run has --seed " +
                               std::to_string(checkpoint->info.seed) + ", not " +
                               std::to_string(o.seed) +
                               " (resuming keeps the seed; leave --seed out)");
  seed = checkpoint->info.seed;
  return std::nullopt;
}

std::optional<int> TrainingRun::createFeeder() {
  if (Status s = BatchFeeder::create(*artifact, seed, o.dataPath, feeder, o.shuffle,
                                     static_cast<unsigned>(ranks.rank),
                                     static_cast<unsigned>(ranks.size));
      !s.ok())
    return fail(kRunError, s.message());
  if (o.valDataPath) {
    if (!root->eval())
      return fail(kRunError, "--val-data: the artifact has no evaluation function "
                             "(compile with txopt --train --eval)");
    if (Status s = feeder->loadValidation(*o.valDataPath); !s.ok())
      return fail(kRunError, s.message());
  }
  return std::nullopt;
}

/// The learning rate: a schedule (or a constant --lr) is written to the lr
/// argument before every step, like the batch.
std::optional<int> TrainingRun::buildSchedule() {
  bool wantsSchedule = o.schedule || o.warmup || o.decaySteps || o.minLr;
  if (!wantsSchedule && !o.lr)
    return std::nullopt;
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
  return std::nullopt;
}

/// The state a checkpoint holds: every argument a result becomes (weights,
/// moments, step, FP8 scaling state, loss scale), in argument order.
std::optional<int> TrainingRun::findState() {
  for (unsigned i = 0; root->arguments() && i < root->arguments()->size(); ++i) {
    const fb::Argument *arg = root->arguments()->Get(i);
    if (arg->next_of() < 0)
      continue;
    stateArgs.push_back(i);
    specs.push_back({str(arg->name()), str(arg->role()), safetensorsDType(arg->dtype()),
                     shapeOf(arg->shape()), {}});
    // A data-parallel shard is checkpointed whole (gathered at --save,
    // split again at --resume for this run's rank count).
    sharded.push_back(arg->shard_of() != nullptr);
    if (arg->shard_of())
      specs.back().shape = shapeOf(arg->shard_of());
    // A data-parallel artifact from before shard_of: its moment shards
    // would pass for replicated state and be saved as one rank's part.
    std::string role = specs.back().role;
    if (root->ranks() > 0 && !arg->shard_of() && (o.saveDir || o.resumeDir) &&
        (role == "exp_avg" || role == "exp_avg_sq" || role == "momentum_buffer"))
      return failOnce(kRunError, "argument '" + specs.back().name +
                                     "' is a rank's shard, but the artifact does not say of "
                                     "what (no shard_of: compiled by an older txopt); "
                                     "recompile it to --save or --resume");
    if (arg->fp8_sites())
      for (const flatbuffers::String *site : *arg->fp8_sites())
        specs.back().sites.push_back(site->str());
    if (specs.back().dtype.empty() && (o.saveDir || o.resumeDir))
      return fail(kRunError, "argument '" + specs.back().name + "' has type " +
                                 dtypeName(arg->dtype()) + ", which checkpoints cannot hold");
  }
  recipe = str(root->recipe());
  return std::nullopt;
}

/// The precision the step's GEMMs run in (the widest claim: FP8 if any
/// GEMM is FP8, else bf16/fp16 if any is, else TF32 or f32) and the GPU's
/// peak for it.
void TrainingRun::findPeak() {
  modelFlops = root->model_flops();
  PeakKind kind = PeakKind::F32;
  auto consider = [&](const fb::Command *c) {
    if (const fb::Gemm *g = c->op_as_Gemm()) {
      PeakKind k = g->a_type() == DType::F8E4M3FN || g->a_type() == DType::F8E5M2 ? PeakKind::FP8
                   : g->a_type() == DType::BF16 || g->a_type() == DType::F16     ? PeakKind::BF16
                   : g->compute() == fb::ComputeType::F32_FAST_TF32              ? PeakKind::TF32
                                                                                 : PeakKind::F32;
      kind = std::max(kind, k);
    } else if (c->op_as_Attention()) {
      kind = std::max(kind, PeakKind::BF16);
    }
  };
  for (unsigned i = 0; root->commands() && i < root->commands()->size(); ++i)
    consider(root->commands()->Get(i));
  peakTflopsOfGpu = peakTflops(session->deviceInfo().name, kind);
  if (modelFlops > 0)
    say("model %.3f TFLOP per step; MFU against %s\n", modelFlops / 1e12,
                peakTflopsOfGpu > 0
                    ? (std::string(peakKindName(kind)) + " dense peak " +
                       std::to_string(static_cast<int>(peakTflopsOfGpu)) + " TFLOP/s")
                          .c_str()
                         : "no known peak (this GPU is not in the table)");
}

/// With --resume: the checkpoint fits the artifact, the data position
/// continues, and there are steps left to run.
std::optional<int> TrainingRun::checkResume() {
  if (!checkpoint)
    return std::nullopt;
  std::vector<std::string> warnings;
  if (Status s = checkCompatible(*checkpoint, recipe, specs, &warnings); !s.ok())
    return failOnce(kRunError, "--resume: " + s.message());
  for (const std::string &w : warnings)
    if (ranks.rank == 0)
      std::fprintf(stderr, "txrun: warning: --resume: %s\n", w.c_str());
  const CheckpointInfo &info = checkpoint->info;
  firstStep = info.step + 1;
  if (info.hasData && !o.dataPath)
    return failOnce(kRunError, "--resume: the checkpoint's run read --data '" + info.dataFile +
                                   "'; pass --data to continue it");
  if (feeder->hasTokens()) {
    if (ranks.rank == 0 && info.hasData &&
        (info.dataTokens != feeder->tokenCount() || info.shuffle != o.shuffle))
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
    if (ranks.rank == 0)
      std::fprintf(stderr,
                 "txrun: the checkpoint is at step %lld; nothing to run up to --steps %lld "
                 "(with --resume, --steps is the number of the last step)\n",
                 static_cast<long long>(info.step), static_cast<long long>(o.steps));
    return kSuccess;
  }
  return std::nullopt;
}

std::optional<int> TrainingRun::openLog() {
  if (!o.logPath)
    return std::nullopt;
  log = std::fopen(o.logPath->c_str(), o.resumeDir ? "a" : "w");
  if (!log)
    return fail(kRunError, "cannot write --log '" + *o.logPath + "': " + std::strerror(errno));
  return std::nullopt;
}

/// The session on the device, and the lines that say what it runs.
std::optional<int> TrainingRun::createSession() {
  SessionOptions sessionOptions;
  sessionOptions.device = o.device;
  if (o.weightsDir)
    sessionOptions.weightsDir = *o.weightsDir;
  sessionOptions.useGraphs = !o.noGraph;
  sessionOptions.forceJit = o.forceJit;
  sessionOptions.syncEachCommand = o.syncEach;
  sessionOptions.deterministic = o.deterministic;
  sessionOptions.overlapCollectives = o.overlapCollectives;
  sessionOptions.tuneGemms = o.tuneGemms;
  sessionOptions.communicator = ranks.communicator;
  sessionOptions.rankTimeoutSeconds = o.rankTimeoutSeconds;
  if (Status s = Session::create(artifact, sessionOptions, session); !s.ok())
    // No usable GPU is the same news for every rank thread of one process.
    return s.code() == TXRT_UNAVAILABLE ? failOnce(kRunError, s.message())
                                        : fail(kRunError, s.message());

  const hal::DeviceInfo &info = session->deviceInfo();
  say("device %d: %s, sm_%d%d\n", o.device, info.name.c_str(), info.ccMajor,
              info.ccMinor);
  // Where the time to the first step goes, beside the compile: issue 11
  // tracks ONNX -> first step.
  const LoadTimes &t = session->loadTimes();
  say("loaded in %.2f s: device %.2f, kernels %.2f, arena %.2f, plans %.2f, "
              "arguments %.2f\n",
              t.device + t.kernels + t.arena + t.arguments + t.plans, t.device, t.kernels,
              t.arena, t.plans, t.arguments);
  const hal::GemmTuning &tuning = session->gemmTuning();
  if (!o.tuneGemms || o.deterministic)
    say("gemm algorithms: cuBLASLt's first choice%s\n",
                o.tuneGemms ? " (--tune-gemms is off under --deterministic)" : "");
  else
    say("gemm algorithms: %u distinct GEMMs timed over %u candidates, the fastest "
                "kept; %u differ from cuBLASLt's first choice\n",
                tuning.shapes, tuning.candidates, tuning.changed);
  if (session->usesJit())
    say("kernels: the artifact's PTX, compiled by the driver at load%s\n",
                o.forceJit ? " (--jit)" : " (its cubins are for another architecture)");
  say("recipe %s\n", recipe.empty() ? "{}" : recipe.c_str());
  if (ranks.communicator)
    say("data-parallel: %d ranks (%s), rank 0 of them printing; each reads its batch of "
        "the global window; tok/s counts all ranks' tokens, TFLOP/s and MFU are per GPU\n",
        ranks.size, ranks.communicator->kind());
  findPeak();
  if (session->gradAccum() > 1)
    say("accumulating %u micro-batches per step (%s), %llu tokens per step\n",
                session->gradAccum(),
                root->micro_step()->name() ? root->micro_step()->name()->c_str() : "micro-step",
                static_cast<unsigned long long>(feeder->tokensPerStep()));
  return std::nullopt;
}

/// With --resume: the checkpoint's state into the session's arguments.
std::optional<int> TrainingRun::restoreState() {
  if (checkpoint) {
    for (size_t k = 0; k < stateArgs.size(); ++k) {
      const CheckpointTensor *t = checkpoint->find(specs[k].name);
      // This rank's shard of a sharded tensor (zero padding past its end).
      std::vector<uint8_t> shard;
      if (sharded[k])
        shard = shardOfWhole(t->bytes, argumentBytes(k), static_cast<unsigned>(ranks.rank));
      const std::vector<uint8_t> &bytes = sharded[k] ? shard : t->bytes;
      if (Status s = session->writeArgument(stateArgs[k], bytes.data(), bytes.size()); !s.ok())
        return fail(kRunError, "--resume: " + s.message());
    }
    say("resumed from '%s' at step %lld\n", o.resumeDir->c_str(),
                static_cast<long long>(checkpoint->info.step));
  }
  std::fflush(stdout);
  return std::nullopt;
}

/// --save: the state after |step|, with what resuming needs.
Status TrainingRun::save(int64_t step) {
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
  // Replicated state (parameters, step, FP8 scaling state) is the same on
  // every rank by construction; a checkpoint of rank 0's copy is only right
  // if it is, so the ranks compare a checksum per tensor (as txopt-run
  // compares the bits), gathered once after the loop.
  std::vector<uint64_t> checksums;
  std::vector<size_t> checked;
  for (size_t k = 0; k < stateArgs.size(); ++k) {
    CheckpointTensor t{specs[k].name, specs[k].role, specs[k].dtype, specs[k].shape, {},
                       specs[k].sites};
    t.bytes.resize(argumentBytes(k));
    TXRT_RETURN_IF_ERROR(session->readArgument(stateArgs[k], t.bytes.data(), t.bytes.size()));
    if (ranks.communicator && sharded[k]) {
      // The ranks' shards in rank order, the padding cut off: the whole
      // tensor, as the plain step's checkpoint holds it.
      std::vector<uint8_t> shards;
      TXRT_RETURN_IF_ERROR(session->gatherFromRanks(t.bytes.data(), t.bytes.size(), shards));
      TXRT_RETURN_IF_ERROR(wholeFromShards(shards, wholeBytes(k), t.bytes)
                               .withContext("'" + specs[k].name + "'"));
    } else if (ranks.communicator) {
      checksums.push_back(fnv1a64(t.bytes.data(), t.bytes.size()));
      checked.push_back(k);
    }
    out.tensors.push_back(std::move(t));
  }
  if (ranks.communicator) {
    size_t bytes = checksums.size() * sizeof(uint64_t);
    std::vector<uint8_t> all;
    TXRT_RETURN_IF_ERROR(session->gatherFromRanks(checksums.data(), bytes, all));
    for (int r = 1; r < ranks.size; ++r)
      for (size_t i = 0; i < checked.size(); ++i)
        if (std::memcmp(all.data() + r * bytes + i * sizeof(uint64_t),
                        all.data() + i * sizeof(uint64_t), sizeof(uint64_t)) != 0)
          return Status::invalid("rank " + std::to_string(r) + " holds another '" +
                                 specs[checked[i]].name + "' than rank 0 (replicated "
                                 "state must be the same on every rank)");
  }
  // Every rank took part in the gathers; rank 0 writes, and the ranks stop
  // together if it could not (rather than the others going on into the
  // next step's collectives without it).
  Status written = ranks.rank == 0 ? saveCheckpoint(*o.saveDir, out) : Status();
  if (ranks.communicator) {
    uint8_t ok = written.ok() ? 1 : 0;
    std::vector<uint8_t> all;
    TXRT_RETURN_IF_ERROR(session->gatherFromRanks(&ok, 1, all));
    if (ranks.rank != 0 && all[0] == 0)
      return Status::invalid("rank 0 could not write the checkpoint");
  }
  TXRT_RETURN_IF_ERROR(written);
  if (ranks.rank == 0)
    std::fprintf(stderr, "txrun: saved step %lld to '%s'\n", static_cast<long long>(step),
                 o.saveDir->c_str());
  return Status();
}

/// The steps firstStep..--steps, with a progress bar below the step lines
/// only on a terminal (a pipe or a file gets exactly the lines), redrawn at
/// most every 0.2 s; cleared at the top of each step so that whatever the
/// step prints starts clean.
std::optional<int> TrainingRun::runSteps() {
  lossIndex = artifact->findResult("loss");
  normIndex = artifact->findResult("grad_norm");
  skippedIndex = artifact->findResult("skipped");
  scaleIndex = artifact->findResult("loss_scale");
  outputs = outputSetOf(*artifact);
  tokens = feeder->tokensPerStep(); // every rank's, every micro-batch's
  accum = session->gradAccum() > 1 ? session->gradAccum() : 1;
  bool showBar = ranks.rank == 0 && isatty(fileno(stdout)) != 0, barShown = false;
  auto runStarted = std::chrono::steady_clock::now();
  auto lastDrawn = runStarted - std::chrono::seconds(1);
  if (feeder->hasValidation() && firstStep == 1)
    if (std::optional<int> exit = evaluate(0))
      return exit;
  for (int64_t step = firstStep; step <= o.steps; ++step) {
    if (barShown) {
      std::fputs(kClearLine, stdout);
      barShown = false;
    }
    if (std::optional<int> exit = runStep(step))
      return exit;
    if (feeder->hasValidation() &&
        ((o.evalEvery && step % o.evalEvery == 0) || step == o.steps))
      if (std::optional<int> exit = evaluate(step))
        return exit;
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
  return std::nullopt;
}

/// Step |step|: its micro-batches, the step (profiled when --profile says
/// so), its line and log record, the stop on a non-finite loss, --save.
std::optional<int> TrainingRun::runStep(int64_t step) {
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
  // The step sampled the device's memory after it ran; no driver call here.
  memGib = session->peakMemorySampled() / double(1ull << 30);
  if (print)
    printStep(step, loss, norm, skipped, scale, lr, ms);
  // With dynamic loss scaling a non-finite gradient skips the step in the
  // graph itself; only a non-finite loss, or norm without a skip, stops.
  bool isSkipped = skippedIndex >= 0 && skipped != 0;
  if (log)
    logStep(step, loss, norm, isSkipped, lr, ms);
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
  return std::nullopt;
}

/// The validation loss after |step| (0: before the first): the mean of the
/// evaluation function's losses over the first --eval-steps windows of
/// --val-data, under the current parameters. It overwrites only the token
/// arguments, which the next step writes again.
std::optional<int> TrainingRun::evaluate(int64_t step) {
  int64_t count = o.evalSteps ? o.evalSteps : 10;
  double sum = 0;
  for (int64_t k = 0; k < count; ++k) {
    feeder->writesForValidation(k, writes);
    for (const BatchFeeder::Write &w : writes)
      if (Status s = session->writeArgument(w.argument, w.bytes->data(), w.bytes->size());
          !s.ok())
        return fail(kRunError, "validation after step " + std::to_string(step) + ": " +
                                   s.message());
    double loss = 0;
    if (Status s = session->runEvaluation(loss, nullptr); !s.ok())
      return fail(kRunError, "validation after step " + std::to_string(step) + ": " +
                                 s.message());
    sum += loss;
  }
  double loss = sum / static_cast<double>(count);
  if (!std::isfinite(loss))
    return fail(kRunError, "validation after step " + std::to_string(step) +
                               ": the loss is " + (std::isnan(loss) ? "NaN" : "infinite"));
  say("step %lld  val_loss %.6f\n", static_cast<long long>(step), loss);
  std::fflush(stdout);
  if (log) {
    std::fprintf(log, "%s\n", valLogLine(step, loss, count).c_str());
    std::fflush(log);
  }
  return std::nullopt;
}

/// The step line: step, loss, grad_norm, lr, ms, tok/s[, skipped].
void TrainingRun::printStep(int64_t step, double loss, double norm, double skipped,
                            double scale, double lr, double ms) {
  say("step %lld", static_cast<long long>(step));
  if (lossIndex >= 0)
    say("  loss %.9g", loss);
  if (normIndex >= 0)
    say("  grad_norm %.9g", norm);
  if (feeder->lrArgument() >= 0)
    say("  lr %.9g", lr);
  say("  ms %.3f", ms);
  if (tokens)
    say("  tok/s %.0f", ms > 0 ? tokens / (ms / 1000.0) : 0.0);
  if (modelFlops > 0 && ms > 0) {
    double tflops = modelFlops / (ms / 1000.0) / 1e12;
    say("  TFLOP/s %.1f", tflops);
    if (peakTflopsOfGpu > 0)
      say("  MFU %.1f%%", 100.0 * tflops / peakTflopsOfGpu);
  }
  say("  mem %.2f GiB", memGib);
  if (skippedIndex >= 0 && skipped != 0) {
    say("  skipped");
    if (scaleIndex >= 0)
      say(" (loss scale -> %g)", scale);
  }
  say("\n");
  std::fflush(stdout);
}

/// --log: the step's JSON record.
void TrainingRun::logStep(int64_t step, double loss, double norm, bool isSkipped, double lr,
                          double ms) {
  StepRecord record;
  record.step = step;
  record.loss = loss;
  record.hasGradNorm = normIndex >= 0;
  record.gradNorm = norm;
  record.hasLr = feeder->lrArgument() >= 0;
  record.lr = lr;
  record.ms = ms;
  record.hasTokens = tokens > 0;
  record.tokPerS = ms > 0 ? tokens / (ms / 1000.0) : 0.0;
  record.skipped = isSkipped;
  record.hasDevice = true;
  record.tflops = ms > 0 ? modelFlops / (ms / 1000.0) / 1e12 : 0.0;
  record.mfu = peakTflopsOfGpu > 0 ? record.tflops / peakTflopsOfGpu : -1.0;
  record.memGib = memGib;
  std::fprintf(log, "%s\n", stepLogLine(record).c_str());
  std::fflush(log);
}

/// After the last step: peak memory, the mean step time, --output-dir and
/// --dump-results.
int TrainingRun::finish() {
  uint64_t peakBytes = 0;
  if (Status s = session->peakMemory(peakBytes); !s.ok())
    return fail(kRunError, s.message());
  say("peak device memory %.1f MiB (%llu bytes; the plan says %llu)\n",
              peakBytes / (1024.0 * 1024.0), static_cast<unsigned long long>(peakBytes),
              static_cast<unsigned long long>(artifact->root().peak_bytes()));
  if (timedSteps > 0) {
    double meanMs = sumMs / timedSteps;
    say("mean over steps %lld..%lld: ms %.3f", static_cast<long long>(firstStep + 1),
                static_cast<long long>(o.steps), meanMs);
    if (tokens)
      say("  tok/s %.0f", tokens / (meanMs / 1000.0));
    if (modelFlops > 0) {
      double tflops = modelFlops / (meanMs / 1000.0) / 1e12;
      say("  TFLOP/s %.1f", tflops);
      if (peakTflopsOfGpu > 0)
        say("  MFU %.1f%%", 100.0 * tflops / peakTflopsOfGpu);
    }
    say("\n");
  }
  if (o.plotPath) {
    std::fflush(log);
    LossCurves curves;
    Status s = readLossCurves(*o.logPath, curves);
    if (s.ok())
      s = writeLossPlot(curves, *o.plotPath);
    if (!s.ok())
      return fail(kRunError, "--plot: " + s.message());
    say("wrote the loss curves to %s\n", o.plotPath->c_str());
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

/// The options of a rank other than 0: it runs the same steps but writes
/// nothing (no log, plot, outputs or profile).
static Options quietRankOptions(const Options &o) {
  Options quiet = o;
  quiet.outputDir.reset();
  quiet.dumpDir.reset();
  quiet.logPath.reset();
  quiet.plotPath.reset();
  quiet.profileStep = 0;
  quiet.profileOut.reset();
  return quiet;
}

/// --ranks N: N threads, each a rank with its own session on the device,
/// meeting in a ThreadGroup. A rank that stops ends the others' waits.
static int runThreads(const Options &o) {
  int size = static_cast<int>(o.ranks);
  auto group = std::make_shared<hal::ThreadGroup>(size, o.rankTimeoutSeconds);
  std::vector<int> codes(size, kSuccess);
  Options quiet = quietRankOptions(o);
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r)
    threads.emplace_back([&, r] {
      RankContext context{r, size, hal::createThreadCommunicator(group, r)};
      codes[r] = TrainingRun(r == 0 ? o : quiet, std::move(context)).run();
      if (codes[r] != kSuccess)
        group->fail(r, "rank " + std::to_string(r) + " stopped");
    });
  for (std::thread &t : threads)
    t.join();
  for (int code : codes)
    if (code != kSuccess)
      return code;
  return kSuccess;
}

/// Under a launcher: this process is one rank, on device LOCAL_RANK, with
/// NCCL over the ranks the environment names.
static int runLaunched(const Options &o, const LaunchEnvironment &env) {
  if (o.ranks)
    return fail(kUsageError, "--ranks runs ranks as threads of one process, but this "
                             "process was started as rank " + std::to_string(env.rank) +
                             " of " + std::to_string(env.worldSize) + " (" + env.source +
                             "): drop --ranks");
  // The rank count first: a plain step under a launcher of one rank runs
  // as a plain run (no NCCL), and a mismatch is said before any device,
  // rendezvous or NCCL setup.
  std::unique_ptr<Artifact> artifact;
  if (Status s = Artifact::loadFile(o.artifact, artifact); !s.ok())
    return fail(kRunError, s.message());
  artifact->selectRanks(static_cast<unsigned>(env.worldSize));
  if (artifact->root().ranks() == 0 && env.worldSize == 1) {
    Options options = o;
    options.device = env.localRank;
    return TrainingRun(options).run();
  }
  if (std::string mismatch = rankCountMismatch(*artifact, env.worldSize, true);
      !mismatch.empty())
    return env.rank == 0 ? fail(kRunError, mismatch) : kRunError;
  std::unique_ptr<hal::Device> device;
  if (Status s = cuda::createCudaDevice(env.localRank, device); !s.ok())
    return fail(kRunError, "rank " + std::to_string(env.rank) + ": " + s.message());
  std::unique_ptr<hal::Communicator> nccl;
  if (Status s = cuda::createNcclCommunicator(*device, env, o.rankTimeoutSeconds, nccl);
      !s.ok())
    return fail(kRunError, "rank " + std::to_string(env.rank) + ": " + s.message());
  Options options = env.rank == 0 ? o : quietRankOptions(o);
  options.device = env.localRank;
  int code = TrainingRun(options, RankContext{env.rank, env.worldSize, std::move(nccl)}).run();
  return code;
}

int txrun::run(const Options &o) {
  std::optional<LaunchEnvironment> env;
  if (Status s = readLaunchEnvironment([](const char *name) { return std::getenv(name); }, env);
      !s.ok())
    return fail(kUsageError, s.message());
  if (env)
    return runLaunched(o, *env);
  if (o.ranks)
    return runThreads(o);
  return TrainingRun(o).run();
}
