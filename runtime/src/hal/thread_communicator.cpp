//===- thread_communicator.cpp - ranks as threads of one process ----------===//
//
// SPDX-License-Identifier: Apache-2.0
// Host arithmetic in double: a sum, or a quotient, of two values of a type
// with p <= 24 significand bits is computed exactly enough in double (53 >=
// 2p + 2) that rounding it to the type afterwards is the correctly rounded
// result, the same as adding in that type directly.
//
//===----------------------------------------------------------------------===//

#include "hal/thread_communicator.h"

#include "core/dtype.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <type_traits>

namespace txrt::hal {
namespace {

using Reduction = Communicator::Reduction;

const char *reductionName(Reduction op) {
  switch (op) {
  case Reduction::Sum: return "sum";
  case Reduction::Max: return "max";
  case Reduction::Mean: return "mean";
  }
  return "?";
}

template <typename T> T loadRaw(const void *data, size_t index) {
  T value;
  std::memcpy(&value, static_cast<const uint8_t *>(data) + index * sizeof(T), sizeof(T));
  return value;
}

template <typename T> void storeRaw(void *data, size_t index, T value) {
  std::memcpy(static_cast<uint8_t *>(data) + index * sizeof(T), &value, sizeof(T));
}

/// One floating-point element type: how to read it as a double, round a
/// double to it, and store a value already rounded to it.
struct FloatType {
  double (*load)(const void *, size_t);
  double (*round)(double);
  void (*store)(void *, size_t, double);
};

const FloatType kF32{
    [](const void *p, size_t i) { return double(loadRaw<float>(p, i)); },
    [](double v) { return double(static_cast<float>(v)); },
    [](void *p, size_t i, double v) { storeRaw<float>(p, i, static_cast<float>(v)); }};
const FloatType kF64{[](const void *p, size_t i) { return loadRaw<double>(p, i); },
                     [](double v) { return v; },
                     [](void *p, size_t i, double v) { storeRaw<double>(p, i, v); }};
const FloatType kBF16{
    [](const void *p, size_t i) { return bf16ToDouble(loadRaw<uint16_t>(p, i)); },
    [](double v) { return bf16ToDouble(bf16FromDouble(v)); },
    [](void *p, size_t i, double v) { storeRaw<uint16_t>(p, i, bf16FromDouble(v)); }};
const FloatType kF16{
    [](const void *p, size_t i) { return f16ToDouble(loadRaw<uint16_t>(p, i)); },
    [](double v) { return f16ToDouble(f16FromDouble(v)); },
    [](void *p, size_t i, double v) { storeRaw<uint16_t>(p, i, f16FromDouble(v)); }};

void reduceFloats(const FloatType &type, const std::vector<const void *> &contributions,
                  void *out, size_t count, Reduction op, size_t begin) {
  const size_t ranks = contributions.size();
  for (size_t i = 0; i < count; ++i) {
    double acc = type.load(contributions[0], begin + i);
    for (size_t r = 1; r < ranks; ++r) {
      double x = type.load(contributions[r], begin + i);
      if (op == Reduction::Max)
        acc = std::isnan(acc) || std::isnan(x) ? std::numeric_limits<double>::quiet_NaN()
                                               : std::max(acc, x);
      else
        acc = type.round(acc + x);
    }
    if (op == Reduction::Mean)
      acc = type.round(acc / static_cast<double>(ranks));
    type.store(out, i, acc);
  }
}

template <typename T>
void reduceIntegers(const std::vector<const void *> &contributions, void *out,
                    size_t count, Reduction op, size_t begin) {
  using Unsigned = std::make_unsigned_t<T>;
  for (size_t i = 0; i < count; ++i) {
    T acc = loadRaw<T>(contributions[0], begin + i);
    for (size_t r = 1; r < contributions.size(); ++r) {
      T x = loadRaw<T>(contributions[r], begin + i);
      // Unsigned arithmetic wraps at the width, as the device's adds do.
      acc = op == Reduction::Max ? std::max(acc, x)
                                 : static_cast<T>(static_cast<Unsigned>(
                                       static_cast<Unsigned>(acc) + static_cast<Unsigned>(x)));
    }
    storeRaw<T>(out, i, acc);
  }
}

const FloatType *floatType(fb::DType type) {
  switch (type) {
  case fb::DType::F32: return &kF32;
  case fb::DType::F64: return &kF64;
  case fb::DType::BF16: return &kBF16;
  case fb::DType::F16: return &kF16;
  default: return nullptr;
  }
}

bool isReducibleInteger(fb::DType type) {
  return type == fb::DType::I8 || type == fb::DType::I32 || type == fb::DType::I64;
}

/// Whether reduceInRankOrder does |op| on |type|; the reason when not.
Status checkReducible(fb::DType type, Reduction op) {
  if (floatType(type))
    return Status();
  if (isReducibleInteger(type)) {
    if (op == Reduction::Mean)
      return Status::invalid(std::string("threads communicator: a mean of ") +
                             dtypeName(type) + " is not supported (integers)");
    return Status();
  }
  return Status::invalid(std::string("threads communicator: cannot reduce ") +
                         (isKnownDType(type) ? dtypeName(type) : "an unknown type") +
                         " (f32, f64, bf16, f16, i8, i32, i64 only)");
}

std::string secondsText(double seconds) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g s", seconds);
  return text;
}

} // namespace

Status reduceInRankOrder(const std::vector<const void *> &contributions, void *out,
                         size_t count, fb::DType type, Communicator::Reduction op,
                         size_t begin) {
  TXRT_RETURN_IF_ERROR(checkReducible(type, op));
  if (contributions.empty())
    return Status::invalid("threads communicator: nothing to reduce (no ranks)");
  if (const FloatType *floats = floatType(type)) {
    reduceFloats(*floats, contributions, out, count, op, begin);
    return Status();
  }
  switch (type) {
  case fb::DType::I8: reduceIntegers<int8_t>(contributions, out, count, op, begin); break;
  case fb::DType::I32: reduceIntegers<int32_t>(contributions, out, count, op, begin); break;
  default: reduceIntegers<int64_t>(contributions, out, count, op, begin); break;
  }
  return Status();
}

//===----------------------------------------------------------------------===//
// ThreadGroup
//===----------------------------------------------------------------------===//

ThreadGroup::ThreadGroup(int size, double timeoutSeconds)
    : size_(size), timeoutSeconds_(timeoutSeconds), arrived_(size, false) {
  pending_.data.resize(size);
  pending_.descriptions.resize(size);
}

void ThreadGroup::failLocked(Status failure) {
  if (failure_.ok())
    failure_ = std::move(failure);
  completedOrFailed_.notify_all();
}

void ThreadGroup::fail(int rank, const std::string &message) {
  std::lock_guard<std::mutex> lock(mutex_);
  failLocked(Status::unavailable("rank " + std::to_string(rank) + " failed: " + message));
}

Status ThreadGroup::status() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return failure_;
}

Status ThreadGroup::exchange(int rank, std::string description, std::vector<uint8_t> data,
                             std::shared_ptr<const ThreadExchange> &out) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!failure_.ok())
    return failure_;
  if (rank < 0 || rank >= size_ || arrived_[rank])
    return Status::internal("threads communicator: rank " + std::to_string(rank) +
                            " entered an exchange twice, or is not in a group of " +
                            std::to_string(size_));
  const uint64_t myGeneration = generation_;
  pending_.data[rank] = std::move(data);
  pending_.descriptions[rank] = description;
  arrived_[rank] = true;
  if (++arrivedCount_ == size_) {
    // The last rank to arrive publishes the exchange and opens the next.
    completed_ = std::make_shared<const ThreadExchange>(std::move(pending_));
    pending_ = ThreadExchange();
    pending_.data.resize(size_);
    pending_.descriptions.resize(size_);
    arrived_.assign(size_, false);
    arrivedCount_ = 0;
    ++generation_;
    completedOrFailed_.notify_all();
  } else {
    completedOrFailed_.wait_for(lock, std::chrono::duration<double>(timeoutSeconds_), [&] {
      return generation_ != myGeneration || !failure_.ok();
    });
    if (generation_ == myGeneration) {
      if (failure_.ok()) {
        std::string missing;
        for (int r = 0; r < size_; ++r)
          if (!arrived_[r])
            missing += (missing.empty() ? "" : ", ") + std::to_string(r);
        failLocked(Status::unavailable(
            "threads communicator: rank " + std::to_string(rank) + " waited " +
            secondsText(timeoutSeconds_) + " in collective " +
            std::to_string(myGeneration) + " (" + description + ") for rank" +
            (size_ - arrivedCount_ > 1 ? "s " : " ") + missing +
            " (did every rank run the same step?)"));
      }
      return failure_;
    }
  }
  out = completed_;
  lock.unlock();

  for (int r = 1; r < size_; ++r)
    if (out->descriptions[r] != out->descriptions[0]) {
      Status mismatch = Status::invalid(
          "threads communicator: collective " + std::to_string(myGeneration) +
          " differs between ranks: rank 0 ran " + out->descriptions[0] + ", rank " +
          std::to_string(r) + " " + out->descriptions[r]);
      std::lock_guard<std::mutex> relock(mutex_);
      failLocked(mismatch);
      return mismatch;
    }
  return Status();
}

//===----------------------------------------------------------------------===//
// The communicator
//===----------------------------------------------------------------------===//

namespace {

class ThreadCommunicator final : public Communicator {
public:
  ThreadCommunicator(std::shared_ptr<ThreadGroup> group, int rank)
      : group_(std::move(group)), rank_(rank) {}

  int rank() const override { return rank_; }
  int size() const override { return group_->size(); }
  const char *kind() const override { return "threads"; }
  bool capturable() const override { return false; }

  Status allReduce(DevicePtr send, DevicePtr recv, size_t count, fb::DType type,
                   Reduction op, Stream &stream) override {
    std::string description = std::string("allReduce ") + reductionName(op) + " of " +
                              std::to_string(count) + " " + typeName(type);
    return failGroupOnError([&]() -> Status {
      TXRT_RETURN_IF_ERROR(checkReducible(type, op));
      size_t bytes = 0;
      TXRT_RETURN_IF_ERROR(byteCount(count, 1, type, bytes));
      return run(description, send, bytes, recv, bytes, stream,
                 [&](const std::vector<const void *> &all, void *out) {
                   return reduceInRankOrder(all, out, count, type, op, 0);
                 });
    });
  }

  Status reduceScatter(DevicePtr send, DevicePtr recv, size_t recvCount, fb::DType type,
                       Reduction op, Stream &stream) override {
    std::string description = std::string("reduceScatter ") + reductionName(op) +
                              " of " + std::to_string(recvCount) + " " +
                              typeName(type) + " per rank";
    return failGroupOnError([&]() -> Status {
      TXRT_RETURN_IF_ERROR(checkReducible(type, op));
      size_t sendBytes = 0, recvBytes = 0;
      TXRT_RETURN_IF_ERROR(byteCount(recvCount, size(), type, sendBytes));
      TXRT_RETURN_IF_ERROR(byteCount(recvCount, 1, type, recvBytes));
      size_t begin = static_cast<size_t>(rank_) * recvCount;
      return run(description, send, sendBytes, recv, recvBytes, stream,
                 [&](const std::vector<const void *> &all, void *out) {
                   return reduceInRankOrder(all, out, recvCount, type, op, begin);
                 });
    });
  }

  Status allGather(DevicePtr send, DevicePtr recv, size_t sendCount, fb::DType type,
                   Stream &stream) override {
    std::string description =
        "allGather of " + std::to_string(sendCount) + " " + typeName(type) + " per rank";
    return failGroupOnError([&]() -> Status {
      if (!isKnownDType(type))
        return Status::invalid("threads communicator: allGather of an unknown type");
      size_t sendBytes = 0, recvBytes = 0;
      TXRT_RETURN_IF_ERROR(byteCount(sendCount, 1, type, sendBytes));
      TXRT_RETURN_IF_ERROR(byteCount(sendCount, size(), type, recvBytes));
      return run(description, send, sendBytes, recv, recvBytes, stream,
                 [&](const std::vector<const void *> &all, void *out) {
                   for (size_t r = 0; r < all.size(); ++r)
                     if (sendBytes)
                       std::memcpy(static_cast<uint8_t *>(out) + r * sendBytes, all[r],
                                   sendBytes);
                   return Status();
                 });
    });
  }

  Status check() override { return group_->status(); }
  void abort(const std::string &why) override { group_->fail(rank_, why); }

private:
  static const char *typeName(fb::DType type) {
    return isKnownDType(type) ? dtypeName(type) : "unknown-type";
  }

  /// |count| * |ranks| elements of |type| in bytes, refusing overflow.
  static Status byteCount(size_t count, int ranks, fb::DType type, size_t &bytes) {
    size_t element = dtypeSize(type);
    size_t perCount = element * static_cast<size_t>(ranks);
    if (perCount != 0 && count > std::numeric_limits<size_t>::max() / perCount)
      return Status::invalid("threads communicator: " + std::to_string(count) +
                             " elements overflow a byte count");
    bytes = count * perCount;
    return Status();
  }

  /// Runs |body|; when it fails, fails the group too (a no-op when the group
  /// had failed already), so the other ranks stop waiting for this one.
  template <typename Body> Status failGroupOnError(Body body) {
    Status status = body();
    if (!status.ok())
      group_->fail(rank_, status.message());
    return status;
  }

  /// Send buffer to the host, exchange, |combine| every rank's bytes into
  /// the result, result to recv.
  template <typename Combine>
  Status run(const std::string &description, DevicePtr send, size_t sendBytes,
             DevicePtr recv, size_t recvBytes, Stream &stream, Combine combine) {
    std::vector<uint8_t> mine(sendBytes);
    if (sendBytes)
      TXRT_RETURN_IF_ERROR(stream.copyDeviceToHost(mine.data(), send, sendBytes)
                               .withContext(description + ": reading the send buffer"));
    std::shared_ptr<const ThreadExchange> all;
    TXRT_RETURN_IF_ERROR(group_->exchange(rank_, description, std::move(mine), all));
    std::vector<const void *> contributions;
    for (const std::vector<uint8_t> &data : all->data)
      contributions.push_back(data.data());
    std::vector<uint8_t> result(recvBytes);
    TXRT_RETURN_IF_ERROR(combine(contributions, result.data()));
    if (recvBytes)
      TXRT_RETURN_IF_ERROR(stream.copyHostToDevice(recv, result.data(), recvBytes)
                               .withContext(description + ": writing the result"));
    return Status();
  }

  std::shared_ptr<ThreadGroup> group_;
  const int rank_;
};

} // namespace

std::unique_ptr<Communicator> createThreadCommunicator(std::shared_ptr<ThreadGroup> group,
                                                       int rank) {
  if (!group || rank < 0 || rank >= group->size())
    return nullptr;
  return std::make_unique<ThreadCommunicator>(std::move(group), rank);
}

} // namespace txrt::hal
