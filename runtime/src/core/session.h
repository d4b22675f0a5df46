//===- session.h - an artifact loaded onto a device ------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// Load once: images -> kernels, one arena allocation, constants and initial
// argument values uploaded, GEMM descriptors and algorithms chosen. Each
// step then runs the command list in order on one stream: directly the
// first time, and from then on as one captured CUDA graph replayed per step
// (batch uploads stay outside the graph; the graph reads the same slots).
//
//===----------------------------------------------------------------------===//

#ifndef TXRT_CORE_SESSION_H
#define TXRT_CORE_SESSION_H

#include "core/artifact.h"
#include "hal/hal.h"

#include <memory>
#include <string>
#include <vector>

namespace txrt {

/// Wall-clock seconds of each loading phase (Session::create), so the
/// time from the artifact to the first step can be broken down.
struct LoadTimes {
  double device = 0;    ///< opening the device (CUDA context)
  double kernels = 0;   ///< loading the images, JIT included
  double arena = 0;     ///< the arena allocated and zeroed, constants copied
  double arguments = 0; ///< initial argument values: weights from their files
  double plans = 0;     ///< per-command plans: GEMM algorithms (timed with tuneGemms), attention graphs
};

struct SessionOptions {
  int device = 0;
  /// Folder for relative EXTERNAL paths instead of the artifact's folder.
  std::string weightsDir;
  /// Replay steps after the first from a captured CUDA graph.
  bool useGraphs = true;
  /// Run the artifact's PTX through the driver's JIT even where its cubin
  /// would run (to test the path newer GPUs take).
  bool forceJit = false;
  /// Debugging: synchronize after every command of a direct run, so that a
  /// faulting kernel is named (implies no graphs).
  bool syncEachCommand = false;
  /// Every step computes the same bits run after run: the attention
  /// backward uses cuDNN's deterministic algorithm (slower, and on Hopper
  /// a B*H*T*T workspace). Everything else the compiler emits is
  /// deterministic already.
  bool deterministic = false;
  /// Runs a data-parallel step's asynchronous collective groups (bucketed
  /// gradient reduce-scatters) beside the commands after them, on a
  /// communication stream; false runs them in order on the main stream
  /// (txrun --no-overlap): the same values, for timing the overlap and as
  /// the way around a failure of that path.
  bool overlapCollectives = true;
  /// Time the GEMM algorithms cuBLASLt offers and keep the fastest of each
  /// (at load). Off under |deterministic|: which one wins can differ from
  /// run to run, and so would the bits. Off by default: on GPT-2 (H200) it
  /// gained nothing measurable and cost ~0.3 s of load.
  bool tuneGemms = false;
  /// The ranks a data-parallel artifact (Artifact.ranks > 0) runs its
  /// collectives with: NCCL under a launcher, or threads sharing a device.
  /// Its size must equal the artifact's rank count; a plain step takes
  /// none. Shared by the session (it outlives no session that uses it).
  std::shared_ptr<hal::Communicator> communicator;
  /// How long a data-parallel step may wait for the other ranks before
  /// this rank aborts the group (a peer that stopped, or never started,
  /// would otherwise hold its collectives forever).
  double rankTimeoutSeconds = 300;
};

class Session {
public:
  /// Opens the device and loads |artifact| onto it. TXRT_UNAVAILABLE when
  /// the machine has no usable CUDA GPU.
  static Status create(std::shared_ptr<const Artifact> artifact,
                       const SessionOptions &options, std::unique_ptr<Session> &out);
  ~Session();

  const Artifact &artifact() const { return *artifact_; }
  const hal::DeviceInfo &deviceInfo() const { return device_->info(); }

  /// Copies |bytes| host bytes into argument |index|; |bytes| must equal its
  /// size (elements x dtype size).
  Status writeArgument(unsigned index, const void *data, size_t bytes);
  Status readArgument(unsigned index, void *data, size_t bytes);
  Status readResult(unsigned index, void *data, size_t bytes);
  /// Data parallel: every rank's |bytes| host bytes, in rank order, into
  /// |all| (ranks x |bytes|), through the session's communicator. A
  /// collective: every rank calls it, with the same |bytes|. For what
  /// checkpoints gather (the ranks' shards, checksums), not for the step.
  Status gatherFromRanks(const void *data, size_t bytes, std::vector<uint8_t> &all);
  /// Runs the command list once; |ms| receives the device time of the step.
  Status runStep(float *ms);
  /// Gradient accumulation (an artifact with grad_accum N > 1): runs the
  /// micro-step's commands once, adding the batch now in the arguments into
  /// the accumulators; a driver runs it on micro-batches 1..N-1 and then
  /// runStep on micro-batch N. Replayed from its own graph like the step.
  Status runMicroStep(float *ms);
  bool hasMicroStep() const { return microBegin_ < evalBegin_; }
  /// Micro-batches per step (1: no accumulation).
  unsigned gradAccum() const { return artifact_->root().grad_accum(); }
  /// Validation (an artifact compiled with --eval): runs the evaluation
  /// function over the arguments as they are (the parameters, and the
  /// batch the caller wrote) and reads its loss; no argument changes.
  /// Replayed from its own graph after the first run.
  Status runEvaluation(double &loss, float *ms);
  bool hasEvaluation() const { return evalBegin_ < logitsBegin_; }
  /// Sampling (an artifact with a logits function): runs it over the
  /// arguments as they are; then readLogitsRow reads the scores of one
  /// token (row |row| of the result flattened to [rows, vocabulary]).
  Status runLogits(float *ms);
  Status readLogitsRow(uint64_t row, std::vector<double> &scores);
  bool hasLogits() const { return logitsBegin_ < stateInitBegin_; }
  /// Runs the step command by command (no graph), with an event between
  /// every two commands: |msPerCommand| receives each command's device time
  /// (launch gaps included), for a where-the-time-goes table;
  /// |hostMsPerCommand|, if given, the host time each enqueue took.
  Status runStepProfiled(std::vector<float> &msPerCommand, float *ms,
                         std::vector<float> *hostMsPerCommand = nullptr);
  /// Most device memory this session has had in use (driver-reported drop
  /// of free memory since before the arena was allocated, sampled after
  /// load and after every step; at least the arena).
  Status peakMemory(uint64_t &bytes);
  /// The same from the samples taken so far (every run samples after it),
  /// without asking the driver again: for a per-step readout.
  uint64_t peakMemorySampled() const;
  uint64_t stepsRun() const { return stepsRun_; }
  /// Whether the kernels came from PTX compiled by the driver at load.
  bool usesJit() const { return usesJit_; }
  const LoadTimes &loadTimes() const { return loadTimes_; }
  /// What GEMM tuning did at load (all zero when it was off).
  const hal::GemmTuning &gemmTuning() const { return gemmTuning_; }

private:
  Session() = default;
  struct LaunchPlan;
  /// Loading, in its steps (each timed in loadTimes_): the device can run
  /// the artifact, the kernels (cubins, or PTX through the driver's JIT),
  /// the arena with constants, the arguments, and each command's plan
  /// (launch parameters, GEMM and attention descriptors).
  Status load(const SessionOptions &options);
  Status checkDevice(const std::string &deviceName) const;
  /// A data-parallel artifact has a communicator of its rank count; a
  /// plain one none of more than one rank.
  Status checkCommunicator(const SessionOptions &options);
  Status loadKernels(const SessionOptions &options, const std::string &deviceName);
  Status allocateArena();
  Status initializeArguments(const SessionOptions &options);
  Status planCommands();
  /// Times each GEMM's candidate algorithms; before the arguments are
  /// loaded, since the trial runs write the GEMMs' outputs.
  Status tuneGemms();
  Status planLaunch(size_t i, const fb::Launch *l, const std::string &where);
  Status planGemm(size_t i, const fb::Gemm *g, const std::string &where);
  Status planAttention(size_t i, const fb::Attention *at, const std::string &where,
                       size_t &workspace);
  Status initializeArgument(unsigned index, const SessionOptions &options);
  /// The bound form of an attention command (addresses resolved).
  hal::AttentionSpec attentionSpec(const fb::Attention &at) const;
  /// Commands [begin, end) of commands_: directly on the first run
  /// (|runsSoFar| == 0), then from |graph|, captured once.
  Status runCommands(size_t begin, size_t end, uint64_t runsSoFar,
                     std::unique_ptr<hal::Graph> &graph, const std::string &what);
  Status enqueueCommands(size_t begin, size_t end, bool syncEach);
  /// One command; a collective on |collectiveStream| (stream_ when null).
  Status enqueueCommand(unsigned index, hal::Stream *collectiveStream = nullptr);
  /// Creates commStream_ and the group events when the artifact has
  /// asynchronous groups and the communicator runs on streams.
  Status prepareAsyncCollectives(const SessionOptions &options);
  /// "command 3 (origin 'x')", or "micro-step command 3 ...",
  /// "evaluation command 3 ..." or "logits command 3 ...".
  std::string describeCommand(unsigned index) const;
  Status sampleMemory();
  /// Waits for the stream of a data-parallel step, polling the
  /// communicator for a failed rank meanwhile; past the rank timeout it
  /// aborts the group and fails.
  Status waitForRanks();
  /// Whether collective command |i| can join a group that runs commands
  /// [groupBegin, i) as one launch: it touches none of their bytes (the
  /// memory plan may reuse one command's input for the next one's output).
  bool joinsCollectiveGroup(size_t groupBegin, size_t i) const;
  hal::DevicePtr slotAddress(unsigned slot) const;
  uint64_t slotBytes(unsigned slot) const;
  Status copySlot(unsigned slot, uint64_t bytes, void *data, size_t size,
                  const std::string &what);

  std::shared_ptr<const Artifact> artifact_;
  // Declaration order is destruction order in reverse: everything below
  // the device is released before it.
  std::unique_ptr<hal::Device> device_;
  std::unique_ptr<hal::Stream> stream_;
  std::unique_ptr<hal::Event> start_, end_;
  std::vector<std::unique_ptr<hal::Module>> modules_;
  std::vector<std::unique_ptr<hal::Kernel>> kernels_;
  std::unique_ptr<hal::Buffer> arena_;
  std::unique_ptr<hal::Blas> blas_;
  std::vector<std::unique_ptr<hal::GemmPlan>> gemms_; // per command, or null
  std::unique_ptr<hal::Attention> attention_;
  std::shared_ptr<hal::Communicator> communicator_; // data-parallel steps only
  /// Asynchronous collective groups (Collective.async_group, format 8):
  /// with a communicator that works on streams (NCCL), each group runs on
  /// commStream_, forked off stream_ where it starts (forkEvents_[k]) and
  /// joined back where a Join asks (doneEvents_[k]); both indexed by group
  /// id. Without one (threads, or --sync-each and profiled runs) the
  /// groups run in order on stream_ and a Join does nothing.
  std::unique_ptr<hal::Stream> commStream_;
  std::vector<std::unique_ptr<hal::Event>> forkEvents_, doneEvents_;
  bool collectivesBeside_ = false; ///< true while enqueueCommands forks groups
  double rankTimeoutSeconds_ = 300;
  std::vector<std::unique_ptr<hal::AttentionPlan>> attentions_; // per command, or null
  /// Scratch of the attention calls: they run in order on one stream, so
  /// one buffer of the largest workspace serves all.
  std::unique_ptr<hal::Buffer> attentionWorkspace_;
  std::vector<std::unique_ptr<LaunchPlan>> launches_; // per command, or null
  std::unique_ptr<hal::Graph> graph_, microGraph_, evalGraph_, logitsGraph_;
  /// The step's commands, then (from microBegin_) the micro-step's, then
  /// (from evalBegin_) the evaluation's, then (from logitsBegin_) the
  /// logits function's, then (from stateInitBegin_) the state-init's, run
  /// once at load; the per-command plans above are indexed alike.
  std::vector<const fb::Command *> commands_;
  size_t microBegin_ = 0, evalBegin_ = 0, logitsBegin_ = 0, stateInitBegin_ = 0;
  uint64_t microStepsRun_ = 0, evalsRun_ = 0, logitsRun_ = 0;
  /// Runs commands [begin, end) of one function (the step, or one beside
  /// it; the first run directly, then from |graph|), waits, and counts it
  /// in |runs|; |what| names it in errors.
  Status runFunction(size_t begin, size_t end, uint64_t &runs,
                       std::unique_ptr<hal::Graph> &graph, const std::string &what,
                       float *ms);
  bool useGraphs_ = true;
  bool usesJit_ = false;
  bool syncEach_ = false;
  bool deterministic_ = false;
  uint64_t stepsRun_ = 0;
  LoadTimes loadTimes_;
  hal::GemmTuning gemmTuning_;
  size_t freeBefore_ = 0, minFree_ = 0;
};

/// Precomputed kernel parameters of one Launch: the slot addresses and the
/// pointers to them that cuLaunchKernel reads.
struct Session::LaunchPlan {
  std::vector<hal::DevicePtr> addresses;
  std::vector<void *> params;
};

/// Why |artifact| cannot run as |size| ranks (with a communicator or not),
/// or "": a data-parallel step needs exactly its rank count (after
/// Artifact::selectRanks(size), which picks the step for it among several),
/// a plain step one rank. Session::create refuses such a run; txrun asks
/// first, before any device, rendezvous or NCCL setup.
std::string rankCountMismatch(const Artifact &artifact, int size, bool hasCommunicator);

/// "sm_90" -> 9, 0 (also "sm_90a", "sm_100"). False when unparsable.
bool parseSmTarget(const std::string &target, int &major, int &minor);

} // namespace txrt

#endif // TXRT_CORE_SESSION_H
