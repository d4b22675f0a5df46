//===- nccl_communicator.cpp - hal::Communicator on NCCL ------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// The communicator is non-blocking (ncclConfig_t::blocking = 0): NCCL then
// never blocks the calling thread, and a call that has not finished
// returns ncclInProgress. Polling ncclCommGetAsyncError against a deadline
// is what turns a dead rank or a broken network into an error message
// instead of a hang, at init and at every call.
//
//===----------------------------------------------------------------------===//

#include "core/dtype.h"
#include "core/rendezvous.h"
#include "hal/cuda/cuda_hal.h"
#include "hal/cuda/nccl_symbols.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

namespace txrt::cuda {
namespace {

using Clock = std::chrono::steady_clock;

Clock::time_point deadlineAfter(double seconds) {
  // Clamped so that "wait forever" (a huge or infinite value) cannot
  // overflow the clock.
  double bounded = seconds > 0 ? std::min(seconds, 1e8) : 0.0;
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(
                            std::chrono::duration<double>(bounded));
}

std::string secondsText(double seconds) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g s", seconds);
  return text;
}

/// NCCL_VERSION_CODE as "2.28.9" (codes before 2.9 were major*1000 + ...).
std::string versionText(int code) {
  if (code < 10000)
    return std::to_string(code / 1000) + "." + std::to_string(code % 1000 / 100) + "." +
           std::to_string(code % 100);
  return std::to_string(code / 10000) + "." + std::to_string(code % 10000 / 100) + "." +
         std::to_string(code % 100);
}

/// Errors caused by a peer or the network are UNAVAILABLE (the run may be
/// retried); ones caused by how NCCL was called are INTERNAL.
Status ncclFailure(ncclResult_t result, std::string message) {
  bool remote = result == ncclSystemError || result == ncclRemoteError ||
                result == ncclInProgress;
  return remote ? Status::unavailable(std::move(message))
                : Status::internal(std::move(message));
}

/// Polls |comm|'s state until it is no longer ncclInProgress or |deadline|
/// passes; returns the last state (ncclInProgress on timeout). A failure of
/// ncclCommGetAsyncError itself is returned as the state.
ncclResult_t waitWhileInProgress(const NcclSymbols &nccl, ncclComm_t comm,
                                 Clock::time_point deadline) {
  for (unsigned polls = 0;; ++polls) {
    ncclResult_t state = ncclInProgress;
    ncclResult_t result = nccl.ncclCommGetAsyncError(comm, &state);
    if (result != ncclSuccess)
      return result;
    if (state != ncclInProgress || Clock::now() >= deadline)
      return state;
    // Enqueuing a collective takes microseconds: spin briefly first; init
    // and teardown take seconds: then poll every millisecond.
    if (polls < 1000)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void *devicePointer(hal::DevicePtr address) {
  return reinterpret_cast<void *>(static_cast<uintptr_t>(address));
}

Status ncclDataType(fb::DType type, ncclDataType_t &out) {
  switch (type) {
  case fb::DType::F32: out = ncclFloat32; return Status();
  case fb::DType::BF16: out = ncclBfloat16; return Status();
  case fb::DType::F16: out = ncclFloat16; return Status();
  case fb::DType::F64: out = ncclFloat64; return Status();
  case fb::DType::I32: out = ncclInt32; return Status();
  case fb::DType::I64: out = ncclInt64; return Status();
  case fb::DType::I8: out = ncclInt8; return Status();
  default:
    return Status::invalid(std::string("NCCL cannot reduce ") +
                           (isKnownDType(type) ? dtypeName(type) : "an unknown type") +
                           " (f32, bf16, f16, f64, i32, i64, i8 only)");
  }
}

ncclRedOp_t ncclReduction(hal::Communicator::Reduction op) {
  switch (op) {
  case hal::Communicator::Reduction::Sum: return ncclSum;
  case hal::Communicator::Reduction::Max: return ncclMax;
  case hal::Communicator::Reduction::Mean: return ncclAvg;
  }
  return ncclSum;
}

class NcclCommunicator final : public hal::Communicator {
public:
  NcclCommunicator(const NcclSymbols &nccl, ncclComm_t comm, int rank, int size,
                   double timeoutSeconds)
      : nccl_(nccl), comm_(comm), rank_(rank), size_(size),
        timeoutSeconds_(timeoutSeconds),
        who_("NCCL rank " + std::to_string(rank) + " of " + std::to_string(size)) {}

  ~NcclCommunicator() override {
    if (!comm_)
      return; // aborted when it failed (check)
    if (failure_.ok()) {
      // Finalize flushes this rank's outstanding work and leaves the group
      // cleanly; if it fails or cannot finish, abort instead of waiting on
      // ranks that may be gone.
      ncclResult_t result = nccl_.ncclCommFinalize(comm_);
      if (result == ncclInProgress)
        result = waitWhileInProgress(nccl_, comm_, deadlineAfter(timeoutSeconds_));
      if (result == ncclSuccess) {
        nccl_.ncclCommDestroy(comm_);
        return;
      }
    }
    nccl_.ncclCommAbort(comm_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char *kind() const override { return "nccl"; }
  bool capturable() const override { return true; }

  Status allReduce(hal::DevicePtr send, hal::DevicePtr recv, size_t count, fb::DType type,
                   Reduction op, hal::Stream &stream) override {
    TXRT_RETURN_IF_ERROR(failure_);
    ncclDataType_t dataType;
    TXRT_RETURN_IF_ERROR(ncclDataType(type, dataType).withContext(who_));
    return finishCall("ncclAllReduce",
                      nccl_.ncclAllReduce(devicePointer(send), devicePointer(recv), count,
                                          dataType, ncclReduction(op), comm_,
                                          streamHandle(stream)));
  }

  Status reduceScatter(hal::DevicePtr send, hal::DevicePtr recv, size_t recvCount,
                       fb::DType type, Reduction op, hal::Stream &stream) override {
    TXRT_RETURN_IF_ERROR(failure_);
    ncclDataType_t dataType;
    TXRT_RETURN_IF_ERROR(ncclDataType(type, dataType).withContext(who_));
    return finishCall("ncclReduceScatter",
                      nccl_.ncclReduceScatter(devicePointer(send), devicePointer(recv),
                                              recvCount, dataType, ncclReduction(op),
                                              comm_, streamHandle(stream)));
  }

  Status allGather(hal::DevicePtr send, hal::DevicePtr recv, size_t sendCount,
                   fb::DType type, hal::Stream &stream) override {
    TXRT_RETURN_IF_ERROR(failure_);
    if (!isKnownDType(type))
      return Status::invalid(who_ + ": allGather of an unknown type");
    // A gather moves bytes without looking at them, so every type (fp8 and
    // i1 included) goes through as int8 elements.
    return finishCall("ncclAllGather",
                      nccl_.ncclAllGather(devicePointer(send), devicePointer(recv),
                                          sendCount * dtypeSize(type), ncclInt8, comm_,
                                          streamHandle(stream)));
  }

  Status beginGroup() override {
    TXRT_RETURN_IF_ERROR(failure_);
    return finishCall("ncclGroupStart", nccl_.ncclGroupStart());
  }
  Status endGroup() override {
    TXRT_RETURN_IF_ERROR(failure_);
    return finishCall("ncclGroupEnd", nccl_.ncclGroupEnd());
  }

  Status check() override {
    TXRT_RETURN_IF_ERROR(failure_);
    ncclResult_t state = ncclSuccess;
    ncclResult_t result = nccl_.ncclCommGetAsyncError(comm_, &state);
    if (result != ncclSuccess)
      return fail(ncclFailure(result, who_ + ": ncclCommGetAsyncError failed: " +
                                          describeNccl(nccl_, result, comm_)));
    if (state != ncclSuccess && state != ncclInProgress)
      return fail(ncclFailure(state, who_ + ": the communicator failed: " +
                                          describeNccl(nccl_, state, comm_)));
    return Status();
  }

  void abort(const std::string &why) override {
    if (failure_.ok())
      failure_ = Status::unavailable(who_ + ": aborted: " + why);
    abortNow();
  }

private:
  /// A failed communicator stays failed: NCCL's state after an error is
  /// undefined except for ncclCommAbort, which the destructor calls.
  Status fail(Status failure) {
    failure_ = failure;
    // Abort now, not in the destructor: NCCL's kernels already on the
    // stream may wait for peers that are gone, and only an abort lets them
    // end, so that the session's stream can be synchronized (~Session)
    // before this communicator is destroyed.
    abortNow();
    return failure;
  }
  void abortNow() {
    if (comm_)
      nccl_.ncclCommAbort(comm_);
    comm_ = nullptr;
  }

  /// A non-blocking call may return ncclInProgress before its work is on
  /// the stream. Waiting here until it is keeps the stream's order (the
  /// kernels enqueued next read recv) and puts the work inside a graph
  /// capture in progress.
  Status finishCall(const char *call, ncclResult_t result) {
    if (result == ncclInProgress)
      result = waitWhileInProgress(nccl_, comm_, deadlineAfter(timeoutSeconds_));
    if (result == ncclInProgress)
      return fail(Status::unavailable(who_ + ": " + call + " was not enqueued within " +
                                      secondsText(timeoutSeconds_)));
    if (result != ncclSuccess)
      return fail(ncclFailure(result, who_ + ": " + call + " failed: " +
                                          describeNccl(nccl_, result, comm_)));
    return Status();
  }

  const NcclSymbols &nccl_;
  ncclComm_t comm_;
  const int rank_, size_;
  const double timeoutSeconds_;
  const std::string who_;
  Status failure_;
};

} // namespace

Status createNcclCommunicator(hal::Device &device, const LaunchEnvironment &env,
                              double timeoutSeconds,
                              std::unique_ptr<hal::Communicator> &out) {
  std::string error;
  const NcclSymbols *loaded = loadNccl(error);
  if (!loaded)
    return Status::unavailable(error);
  const NcclSymbols &nccl = *loaded;
  const std::string who =
      "NCCL rank " + std::to_string(env.rank) + " of " + std::to_string(env.worldSize);

  int version = 0;
  if (ncclResult_t r = nccl.ncclGetVersion(&version); r != ncclSuccess)
    return ncclFailure(r, who + ": ncclGetVersion failed: " + describeNccl(nccl, r));
  if (version < ncclVersionCode(2, 14, 0))
    return Status::unavailable(who + ": NCCL " + versionText(version) +
                               " is too old (non-blocking communicators need 2.14)");

  // NCCL binds the communicator to the device current on this thread.
  TXRT_RETURN_IF_ERROR(device.makeCurrent().withContext(who));

  std::array<uint8_t, kRendezvousBlobBytes> blob{};
  static_assert(sizeof(ncclUniqueId) == kRendezvousBlobBytes,
                "the rendezvous carries exactly one ncclUniqueId");
  if (env.rank == 0) {
    ncclUniqueId id;
    if (ncclResult_t r = nccl.ncclGetUniqueId(&id); r != ncclSuccess)
      return ncclFailure(r, who + ": ncclGetUniqueId failed: " + describeNccl(nccl, r));
    std::memcpy(blob.data(), &id, sizeof(id));
  }
  TXRT_RETURN_IF_ERROR(exchangeRendezvousBlob(env, blob, timeoutSeconds));
  ncclUniqueId id;
  std::memcpy(&id, blob.data(), sizeof(id));

  ncclConfig_t config = defaultNcclConfig();
  config.blocking = 0;
  ncclComm_t comm = nullptr;
  auto deadline = deadlineAfter(timeoutSeconds);
  ncclResult_t result =
      nccl.ncclCommInitRankConfig(&comm, env.worldSize, id, env.rank, &config);
  if (result == ncclInProgress && comm)
    result = waitWhileInProgress(nccl, comm, deadline);
  if (result != ncclSuccess) {
    Status failure =
        result == ncclInProgress
            ? Status::unavailable(
                  who + ": ncclCommInitRankConfig did not finish within " +
                  secondsText(timeoutSeconds) + " (did every rank start? rendezvous at " +
                  env.masterAddr + ":" + std::to_string(env.masterPort) + ")")
            : ncclFailure(result, who + ": ncclCommInitRankConfig failed: " +
                                      describeNccl(nccl, result, comm));
    if (comm)
      nccl.ncclCommAbort(comm);
    return failure;
  }
  out = std::make_unique<NcclCommunicator>(nccl, comm, env.rank, env.worldSize,
                                           timeoutSeconds);
  return Status();
}

} // namespace txrt::cuda
