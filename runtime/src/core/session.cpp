//===- session.cpp - an artifact loaded onto a device ---------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// Running a loaded session: arguments in and out, the step and micro-step
// (directly, then as CUDA graphs), per-command profiling. Errors from
// commands name the command index, its origin and, for launches, the
// kernel, so a failure points back at the ONNX node. Loading is in
// session_load.cpp.
//
//===----------------------------------------------------------------------===//

#include "core/session.h"

#include "core/dtype.h"
#include "hal/cuda/cuda_hal.h"

#include <array>
#include <cctype>
#include <chrono>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <thread>

namespace txrt {

Session::~Session() {
  // Frees below need this device's context current on the calling thread;
  // and queued work must finish before buffers and modules go away.
  if (device_)
    (void)device_->makeCurrent();
  if (stream_)
    (void)stream_->synchronize();
}

Status Session::create(std::shared_ptr<const Artifact> artifact,
                       const SessionOptions &options, std::unique_ptr<Session> &out) {
  if (!artifact)
    return Status::invalid("no artifact");
  std::unique_ptr<Session> session(new Session());
  session->artifact_ = std::move(artifact);
  auto started = std::chrono::steady_clock::now();
  Status status = cuda::createCudaDevice(options.device, session->device_);
  session->loadTimes_.device =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (status.code() == TXRT_UNAVAILABLE)
    return Status::unavailable("no CUDA GPU found (" + status.message() +
                               "); txopt-run runs the step on the CPU");
  TXRT_RETURN_IF_ERROR(status);
  TXRT_RETURN_IF_ERROR(session->load(options));
  out = std::move(session);
  return Status();
}

hal::DevicePtr Session::slotAddress(unsigned slot) const {
  return arena_->address() + artifact_->root().slots()->Get(slot)->offset();
}

uint64_t Session::slotBytes(unsigned slot) const {
  return artifact_->root().slots()->Get(slot)->bytes();
}

Status Session::writeArgument(unsigned index, const void *data, size_t bytes) {
  const fb::Artifact &a = artifact_->root();
  if (!a.arguments() || index >= a.arguments()->size())
    return Status::outOfRange("argument index " + std::to_string(index) +
                              " out of range");
  const fb::Argument *arg = a.arguments()->Get(index);
  size_t want = artifact_->argumentElements(index) * dtypeSize(arg->dtype());
  if (bytes != want)
    return Status::invalid("argument " + std::to_string(index) + " ('" +
                           str(arg->name()) + "') holds " + std::to_string(want) +
                           " bytes, but " + std::to_string(bytes) + " were given");
  TXRT_RETURN_IF_ERROR(device_->makeCurrent());
  return stream_->copyHostToDevice(slotAddress(arg->slot()), data, bytes)
      .withContext("writing argument '" + str(arg->name()) + "'");
}

Status Session::gatherFromRanks(const void *data, size_t bytes, std::vector<uint8_t> &all) {
  if (!communicator_)
    return Status::invalid("gathering from ranks in a run without ranks");
  all.assign(bytes * static_cast<size_t>(communicator_->size()), 0);
  if (bytes == 0)
    return Status();
  TXRT_RETURN_IF_ERROR(device_->makeCurrent());
  // Device buffers of their own, outside the arena: the step's memory plan
  // has no room for them, and a save runs between steps.
  std::unique_ptr<hal::Buffer> send, recv;
  TXRT_RETURN_IF_ERROR(device_->allocate(bytes, send).withContext("gathering from ranks"));
  TXRT_RETURN_IF_ERROR(device_->allocate(all.size(), recv).withContext("gathering from ranks"));
  TXRT_RETURN_IF_ERROR(stream_->copyHostToDevice(send->address(), data, bytes));
  TXRT_RETURN_IF_ERROR(communicator_->allGather(send->address(), recv->address(), bytes,
                                                fb::DType::I8, *stream_)
                           .withContext("gathering from ranks"));
  TXRT_RETURN_IF_ERROR(waitForRanks().withContext("gathering from ranks"));
  return stream_->copyDeviceToHost(all.data(), recv->address(), all.size())
      .withContext("gathering from ranks");
}

Status Session::copySlot(unsigned slot, uint64_t bytes, void *data, size_t size,
                         const std::string &what) {
  if (size != bytes)
    return Status::invalid(what + " holds " + std::to_string(bytes) + " bytes, but " +
                           std::to_string(size) + " were asked for");
  TXRT_RETURN_IF_ERROR(device_->makeCurrent());
  return stream_->copyDeviceToHost(data, slotAddress(slot), bytes)
      .withContext("reading " + what);
}

Status Session::readArgument(unsigned index, void *data, size_t bytes) {
  const fb::Artifact &a = artifact_->root();
  if (!a.arguments() || index >= a.arguments()->size())
    return Status::outOfRange("argument index " + std::to_string(index) +
                              " out of range");
  const fb::Argument *arg = a.arguments()->Get(index);
  return copySlot(arg->slot(),
                  artifact_->argumentElements(index) * dtypeSize(arg->dtype()), data,
                  bytes, "argument '" + str(arg->name()) + "'");
}

Status Session::readResult(unsigned index, void *data, size_t bytes) {
  const fb::Artifact &a = artifact_->root();
  if (!a.results() || index >= a.results()->size())
    return Status::outOfRange("result index " + std::to_string(index) + " out of range");
  const fb::Result *r = a.results()->Get(index);
  return copySlot(r->slot(), artifact_->resultElements(index) * dtypeSize(r->dtype()),
                  data, bytes, "result '" + str(r->name()) + "'");
}

std::string Session::describeCommand(unsigned index) const {
  std::string which =
      index >= stateInitBegin_ ? "state-init command " + std::to_string(index - stateInitBegin_)
      : index >= logitsBegin_ ? "logits command " + std::to_string(index - logitsBegin_)
      : index >= evalBegin_ ? "evaluation command " + std::to_string(index - evalBegin_)
      : index >= microBegin_ ? "micro-step command " + std::to_string(index - microBegin_)
                             : "command " + std::to_string(index);
  return which + " (origin '" + str(commands_[index]->origin()) + "')";
}

Status Session::enqueueCommand(unsigned index, hal::Stream *collectiveStream) {
  const fb::Command *c = commands_[index];
  auto where = [&]() { return describeCommand(index); };
  switch (c->op_type()) {
  case fb::Op::Launch: {
    const fb::Launch *l = c->op_as_Launch();
    hal::Kernel &kernel = *kernels_[l->kernel()];
    uint32_t grid[3] = {l->grid()->Get(0), l->grid()->Get(1), l->grid()->Get(2)};
    uint32_t block[3] = {l->block()->Get(0), l->block()->Get(1), l->block()->Get(2)};
    LaunchPlan &plan = *launches_[index];
    return stream_
        ->launch(kernel, grid, block, l->shared_bytes(),
                 plan.params.empty() ? nullptr : plan.params.data())
        .withContext(where() + ": kernel '" + kernel.name() + "'");
  }
  case fb::Op::Gemm:
    return blas_->run(*gemms_[index], *stream_).withContext(where() + ": gemm");
  case fb::Op::Attention:
    return attention_
        ->run(*attentions_[index], attentionWorkspace_->address(), *stream_)
        .withContext(where() + ": attention");
  case fb::Op::Memset: {
    const fb::Memset *m = c->op_as_Memset();
    return stream_->memset32(slotAddress(m->slot()), m->value(), slotBytes(m->slot()) / 4)
        .withContext(where() + ": memset");
  }
  case fb::Op::Copy: {
    const fb::Copy *cp = c->op_as_Copy();
    if (cp->bytes() == 0)
      return Status();
    // A rank's own shard (tx.rank_shard): the validator checked that the
    // last rank's lies inside the slot.
    hal::DevicePtr src = slotAddress(cp->src());
    if (cp->src_rank_stride())
      src += cp->src_rank_stride() * static_cast<uint64_t>(communicator_->rank());
    return stream_->copyDeviceToDevice(slotAddress(cp->dst()), src, cp->bytes())
        .withContext(where() + ": copy");
  }
  case fb::Op::Collective: {
    const fb::Collective *col = c->op_as_Collective();
    hal::DevicePtr src = slotAddress(col->src()), dst = slotAddress(col->dst());
    auto op = col->reduction() == fb::Reduction::SUM       ? hal::Communicator::Reduction::Sum
              : col->reduction() == fb::Reduction::MAXIMUM ? hal::Communicator::Reduction::Max
                                                           : hal::Communicator::Reduction::Mean;
    std::string what = where() + ": " + communicator_->kind() + " ";
    hal::Stream &on = collectiveStream ? *collectiveStream : *stream_;
    switch (col->kind()) {
    case fb::CollectiveKind::ALL_REDUCE:
      return communicator_
          ->allReduce(src, dst, col->send_count(), col->dtype(), op, on)
          .withContext(what + "all-reduce");
    case fb::CollectiveKind::REDUCE_SCATTER:
      return communicator_
          ->reduceScatter(src, dst, col->recv_count(), col->dtype(), op, on)
          .withContext(what + "reduce-scatter");
    case fb::CollectiveKind::ALL_GATHER:
      return communicator_->allGather(src, dst, col->send_count(), col->dtype(), on)
          .withContext(what + "all-gather");
    }
    return Status::internal(where() + ": unknown collective");
  }
  case fb::Op::Join: {
    // The groups up to this one ran beside the commands before: the ones
    // after wait for the last of them (the communication stream runs
    // groups in order). Run in order, there is nothing to wait for.
    if (!collectivesBeside_)
      return Status();
    return stream_->wait(*doneEvents_[c->op_as_Join()->group()])
        .withContext(where() + ": join");
  }
  default:
    return Status::internal(where() + ": unknown op");
  }
}

Status Session::enqueueCommands(size_t begin, size_t end, bool syncEach) {
  // Consecutive collectives (the reduce-scatters of the gradients, the
  // all-gathers of the parameters) read and write disjoint buffers: one
  // group each, which NCCL launches as one kernel instead of one per call.
  // A group's calls run concurrently, so one whose bytes another of the
  // group touches starts a new group (the memory plan reuses a buffer as
  // soon as its last reader has run). An asynchronous group (a bucket of
  // gradient reduce-scatters) is one NCCL group on the communication
  // stream, after everything before it on the main stream.
  auto isCollective = [&](size_t i) {
    return i < end && commands_[i]->op_type() == fb::Op::Collective;
  };
  auto asyncGroupOf = [&](size_t i) -> unsigned {
    return isCollective(i) ? commands_[i]->op_as_Collective()->async_group() : 0;
  };
  bool grouping = communicator_ && !syncEach;
  collectivesBeside_ = grouping && commStream_ != nullptr;
  struct Reset {
    bool &flag;
    ~Reset() { flag = false; }
  } reset{collectivesBeside_};
  bool inGroup = false;
  size_t groupBegin = begin;
  auto where = [&](size_t i) { return describeCommand(static_cast<unsigned>(i)); };
  for (size_t i = begin; i < end; ++i) {
    unsigned async = collectivesBeside_ ? asyncGroupOf(i) : 0;
    bool startsAsync = async && (i == begin || asyncGroupOf(i - 1) != async);
    if (grouping && isCollective(i) && inGroup &&
        (startsAsync || !joinsCollectiveGroup(groupBegin, i))) {
      TXRT_RETURN_IF_ERROR(communicator_->endGroup().withContext(where(i)));
      inGroup = false;
    }
    if (startsAsync) {
      // Everything before it on the main stream first.
      TXRT_RETURN_IF_ERROR(stream_->record(*forkEvents_[async]).withContext(where(i)));
      TXRT_RETURN_IF_ERROR(commStream_->wait(*forkEvents_[async]).withContext(where(i)));
    }
    if (grouping && isCollective(i) && !inGroup) {
      TXRT_RETURN_IF_ERROR(communicator_->beginGroup().withContext(where(i)));
      inGroup = true;
      groupBegin = i;
    }
    Status enqueued =
        enqueueCommand(static_cast<unsigned>(i), async ? commStream_.get() : nullptr);
    if (!enqueued.ok()) {
      if (inGroup)
        (void)communicator_->endGroup(); // leave NCCL's group closed
      return enqueued;
    }
    bool endsAsync = async && asyncGroupOf(i + 1) != async;
    if (inGroup && (!isCollective(i + 1) || endsAsync ||
                    (collectivesBeside_ && asyncGroupOf(i + 1) != async))) {
      TXRT_RETURN_IF_ERROR(communicator_->endGroup().withContext(where(i)));
      inGroup = false;
    }
    if (endsAsync)
      TXRT_RETURN_IF_ERROR(commStream_->record(*doneEvents_[async]).withContext(where(i)));
    if (syncEach)
      TXRT_RETURN_IF_ERROR(stream_->synchronize().withContext(
          describeCommand(static_cast<unsigned>(i))));
  }
  return Status();
}

Status Session::prepareAsyncCollectives(const SessionOptions &options) {
  unsigned groups = 0;
  for (const fb::Command *c : commands_)
    if (c->op_type() == fb::Op::Collective)
      groups = std::max(groups, c->op_as_Collective()->async_group());
  // Threads exchanging through host memory run every collective in order.
  if (groups == 0 || !communicator_ || !communicator_->capturable() ||
      !options.overlapCollectives)
    return Status();
  TXRT_RETURN_IF_ERROR(device_->createStream(commStream_).withContext("the communication stream"));
  forkEvents_.resize(groups + 1);
  doneEvents_.resize(groups + 1);
  for (unsigned k = 1; k <= groups; ++k) {
    TXRT_RETURN_IF_ERROR(device_->createEvent(forkEvents_[k]));
    TXRT_RETURN_IF_ERROR(device_->createEvent(doneEvents_[k]));
  }
  return Status();
}

Status Session::runStep(float *ms) {
  TXRT_RETURN_IF_ERROR(runFunction(0, microBegin_, stepsRun_, graph_,
                                   "step " + std::to_string(stepsRun_ + 1), ms));
  return sampleMemory();
}

Status Session::runMicroStep(float *ms) {
  if (!hasMicroStep())
    return Status::invalid("the artifact has no micro-step (it was compiled "
                           "without --grad-accum)");
  TXRT_RETURN_IF_ERROR(runFunction(microBegin_, evalBegin_, microStepsRun_, microGraph_,
                                   "micro-step " + std::to_string(microStepsRun_ + 1), ms));
  return sampleMemory();
}

Status Session::runFunction(size_t begin, size_t end, uint64_t &runs,
                              std::unique_ptr<hal::Graph> &graph,
                              const std::string &what, float *ms) {
  TXRT_RETURN_IF_ERROR(device_->makeCurrent());
  TXRT_RETURN_IF_ERROR(runCommands(begin, end, runs, graph, what));
  TXRT_RETURN_IF_ERROR(stream_->record(*end_));
  Status synced = communicator_ ? waitForRanks() : stream_->synchronize();
  if (!synced.ok())
    return synced.withContext(what + " (a command failed on the device; rerun with "
                                     "--no-graph --sync-each to name it)");
  float elapsed = 0;
  TXRT_RETURN_IF_ERROR(device_->elapsedMs(*start_, *end_, elapsed));
  if (ms)
    *ms = elapsed;
  ++runs;
  return Status();
}

bool Session::joinsCollectiveGroup(size_t groupBegin, size_t i) const {
  struct Range {
    uint64_t begin, end;
  };
  auto ranges = [&](size_t k) {
    const fb::Collective *c = commands_[k]->op_as_Collective();
    uint64_t size = dtypeSize(c->dtype());
    uint64_t src = slotAddress(c->src()), dst = slotAddress(c->dst());
    return std::array<Range, 2>{Range{src, src + c->send_count() * size},
                                Range{dst, dst + c->recv_count() * size}};
  };
  auto overlap = [](Range a, Range b) { return a.begin < b.end && b.begin < a.end; };
  std::array<Range, 2> mine = ranges(i);
  for (size_t k = groupBegin; k < i; ++k)
    for (Range theirs : ranges(k))
      for (Range r : mine)
        if (overlap(r, theirs))
          return false;
  return true;
}

Status Session::waitForRanks() {
  // A collective waits on the device for every other rank: a rank that
  // died, or a network that failed, would hold this stream forever. So
  // poll it, asking the communicator for such failures in between (NCCL
  // reports them asynchronously and, aborted, lets its kernels end). A
  // peer that simply stopped (or never got this far) is not always
  // reported: past the rank timeout, this rank aborts the group.
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration<double>(rankTimeoutSeconds_);
  for (;;) {
    bool done = false;
    TXRT_RETURN_IF_ERROR(stream_->query(done));
    TXRT_RETURN_IF_ERROR(communicator_->check());
    if (done)
      return Status();
    if (std::chrono::steady_clock::now() > deadline) {
      std::string why = "the step did not complete within " +
                        std::to_string(static_cast<long long>(rankTimeoutSeconds_)) +
                        " s (a rank stopped or is stuck; --rank-timeout sets the wait)";
      communicator_->abort(why);
      return Status::unavailable(communicator_->kind() + std::string(" rank ") +
                                 std::to_string(communicator_->rank()) + ": " + why);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

Status Session::runLogits(float *ms) {
  if (!hasLogits())
    return Status::invalid("the artifact has no logits function (compile with txopt "
                           "--train --eval, and a softmax cross-entropy loss)");
  TXRT_RETURN_IF_ERROR(runFunction(logitsBegin_, stateInitBegin_, logitsRun_,
                                     logitsGraph_,
                                     "logits " + std::to_string(logitsRun_ + 1), ms));
  return sampleMemory();
}

Status Session::readLogitsRow(uint64_t row, std::vector<double> &scores) {
  if (!hasLogits())
    return Status::invalid("the artifact has no logits function");
  const fb::Result *r = artifact_->root().logits()->results()->Get(0);
  uint64_t elements = 0;
  shapeElements(r->shape(), elements);
  uint64_t vocabulary = static_cast<uint64_t>(r->shape()->Get(r->shape()->size() - 1));
  uint64_t rows = vocabulary ? elements / vocabulary : 0;
  if (row >= rows)
    return Status::outOfRange("logits row " + std::to_string(row) + " of " +
                              std::to_string(rows));
  size_t width = dtypeSize(r->dtype());
  std::vector<uint8_t> raw(vocabulary * width);
  TXRT_RETURN_IF_ERROR(device_->makeCurrent());
  TXRT_RETURN_IF_ERROR(stream_
                           ->copyDeviceToHost(raw.data(),
                                              slotAddress(r->slot()) + row * vocabulary * width,
                                              raw.size())
                           .withContext("reading the logits"));
  scores.resize(vocabulary);
  for (uint64_t v = 0; v < vocabulary; ++v)
    scores[v] = loadAsDouble(r->dtype(), raw.data(), v);
  return Status();
}

Status Session::runEvaluation(double &loss, float *ms) {
  if (!hasEvaluation())
    return Status::invalid("the artifact has no evaluation function (compile "
                           "with txopt --train --eval)");
  TXRT_RETURN_IF_ERROR(runFunction(evalBegin_, logitsBegin_, evalsRun_, evalGraph_,
                                     "evaluation " + std::to_string(evalsRun_ + 1), ms));
  // The loss: one float value of any width (validated at load).
  const fb::Result *r = artifact_->root().eval()->results()->Get(0);
  uint8_t bytes[8] = {};
  TXRT_RETURN_IF_ERROR(copySlot(r->slot(), dtypeSize(r->dtype()), bytes,
                                dtypeSize(r->dtype()), "evaluation loss"));
  loss = loadAsDouble(r->dtype(), bytes, 0);
  return sampleMemory();
}

Status Session::runCommands(size_t begin, size_t end, uint64_t runsSoFar,
                            std::unique_ptr<hal::Graph> &graph, const std::string &what) {
  TXRT_RETURN_IF_ERROR(stream_->record(*start_));
  if (useGraphs_ && runsSoFar >= 1) {
    if (!graph) {
      // The first run went directly (and proved the commands work); capture
      // the same list once and replay it from now on.
      TXRT_RETURN_IF_ERROR(stream_->beginCapture().withContext(what + ": graph capture"));
      Status enqueued = enqueueCommands(begin, end, false);
      std::unique_ptr<hal::Graph> captured;
      Status ended = stream_->endCapture(captured);
      TXRT_RETURN_IF_ERROR(enqueued.withContext(what + ": graph capture"));
      TXRT_RETURN_IF_ERROR(ended.withContext(what + ": graph capture (try --no-graph)"));
      graph = std::move(captured);
    }
    return graph->launch(*stream_).withContext(what);
  }
  return enqueueCommands(begin, end, syncEach_).withContext(what);
}

Status Session::runStepProfiled(std::vector<float> &msPerCommand, float *ms,
                                std::vector<float> *hostMsPerCommand) {
  TXRT_RETURN_IF_ERROR(device_->makeCurrent());
  std::string step = "step " + std::to_string(stepsRun_ + 1) + " (profiled)";
  size_t n = microBegin_;
  std::vector<std::unique_ptr<hal::Event>> events(n + 1);
  for (auto &event : events)
    TXRT_RETURN_IF_ERROR(device_->createEvent(event).withContext(step));
  // The host time of each enqueue too: a command whose host work (cuDNN's
  // execute, say) outlasts the GPU's leaves the GPU idle inside its event
  // interval, which a replayed graph would not.
  if (hostMsPerCommand)
    hostMsPerCommand->assign(n, 0.0f);
  for (size_t i = 0; i < n; ++i) {
    TXRT_RETURN_IF_ERROR(stream_->record(*events[i]).withContext(step));
    auto hostStart = std::chrono::steady_clock::now();
    TXRT_RETURN_IF_ERROR(enqueueCommand(static_cast<unsigned>(i)).withContext(step));
    if (hostMsPerCommand)
      (*hostMsPerCommand)[i] = std::chrono::duration<float, std::milli>(
                                   std::chrono::steady_clock::now() - hostStart)
                                   .count();
  }
  TXRT_RETURN_IF_ERROR(stream_->record(*events[n]).withContext(step));
  TXRT_RETURN_IF_ERROR(
      (communicator_ ? waitForRanks() : stream_->synchronize()).withContext(step));
  msPerCommand.assign(n, 0.0f);
  float total = 0;
  for (size_t i = 0; i < n; ++i) {
    TXRT_RETURN_IF_ERROR(device_->elapsedMs(*events[i], *events[i + 1], msPerCommand[i]));
    total += msPerCommand[i];
  }
  if (ms)
    *ms = total;
  ++stepsRun_;
  return sampleMemory();
}

Status Session::sampleMemory() {
  size_t freeNow = 0, total = 0;
  TXRT_RETURN_IF_ERROR(device_->memoryInfo(freeNow, total));
  if (freeNow < minFree_)
    minFree_ = freeNow;
  return Status();
}

Status Session::peakMemory(uint64_t &bytes) {
  TXRT_RETURN_IF_ERROR(device_->makeCurrent());
  TXRT_RETURN_IF_ERROR(sampleMemory());
  bytes = peakMemorySampled();
  return Status();
}

uint64_t Session::peakMemorySampled() const {
  uint64_t used = freeBefore_ > minFree_ ? freeBefore_ - minFree_ : 0;
  uint64_t arena = arena_ ? arena_->size() : 0;
  return used > arena ? used : arena;
}

} // namespace txrt
