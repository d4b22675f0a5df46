//===- hal.h - hardware abstraction: device, memory, streams, BLAS -*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// The session (src/core) runs a step through these interfaces only; the
// CUDA implementation lives in src/hal/cuda. Keeping the split lets a second
// backend, or a fake for tests, slot in without touching the executor.
// Objects created by a Device must be destroyed before it.
//
//===----------------------------------------------------------------------===//

#ifndef TXRT_HAL_HAL_H
#define TXRT_HAL_HAL_H

#include "core/artifact.h"
#include "core/status.h"
#include "txrt/artifact_generated.h"

#include <array>
#include <cstdint>
#include <memory>
#include <string>

namespace txrt::hal {

/// A device address.
using DevicePtr = uint64_t;

struct DeviceInfo {
  std::string name;
  int ccMajor = 0, ccMinor = 0;
  size_t totalMemory = 0;
  int maxSharedPerBlockOptin = 0;
};

/// Device memory; freed on destruction.
class Buffer {
public:
  virtual ~Buffer() = default;
  virtual DevicePtr address() const = 0;
  virtual size_t size() const = 0;
};

/// A timestamp recorded in a stream.
class Event {
public:
  virtual ~Event() = default;
};

/// A kernel entry point of a loaded module.
class Kernel {
public:
  virtual ~Kernel() = default;
  virtual const std::string &name() const = 0;
  /// Allows |bytes| of dynamic shared memory (beyond the 48 KiB default).
  virtual Status allowSharedMemory(uint32_t bytes) = 0;
};

/// A loaded GPU module (PTX or cubin).
class Module {
public:
  virtual ~Module() = default;
  virtual Status getKernel(const std::string &name, std::unique_ptr<Kernel> &out) = 0;
};

class Stream;

/// A recorded sequence of stream work, replayed as one launch.
class Graph {
public:
  virtual ~Graph() = default;
  virtual Status launch(Stream &stream) = 0;
};

/// An in-order queue of device work.
class Stream {
public:
  virtual ~Stream() = default;
  virtual Status memset32(DevicePtr dst, uint32_t value, size_t count) = 0;
  virtual Status copyDeviceToDevice(DevicePtr dst, DevicePtr src, size_t bytes) = 0;
  /// Host copies wait for the stream's earlier work and complete before
  /// returning.
  virtual Status copyHostToDevice(DevicePtr dst, const void *src, size_t bytes) = 0;
  virtual Status copyDeviceToHost(void *dst, DevicePtr src, size_t bytes) = 0;
  /// |params| holds one pointer per kernel parameter, as cuLaunchKernel wants.
  virtual Status launch(Kernel &kernel, const uint32_t grid[3],
                        const uint32_t block[3], uint32_t sharedBytes,
                        void **params) = 0;
  virtual Status synchronize() = 0;
  /// Whether the stream's work has completed, without waiting.
  virtual Status query(bool &done) = 0;
  virtual Status record(Event &event) = 0;
  /// Work enqueued after this waits for |event|'s last record (another
  /// stream's work up to there); captured into a graph as a dependency.
  virtual Status wait(Event &event) = 0;
  /// Everything enqueued between begin and end becomes |out| instead of
  /// running.
  virtual Status beginCapture() = 0;
  virtual Status endCapture(std::unique_ptr<Graph> &out) = 0;
};

/// One GEMM with all operand addresses bound (the arena never moves).
struct GemmSpec {
  uint64_t m = 0, n = 0, k = 0, batch = 1;
  bool transA = false, transB = false;
  uint64_t lda = 0, ldb = 0, ldd = 0;
  int64_t strideA = 0, strideB = 0, strideD = 0;
  fb::DType aType = fb::DType::F32, bType = fb::DType::F32, dType = fb::DType::F32;
  bool fastTf32 = false;
  float alpha = 1.0f, beta = 0.0f;
  fb::Epilogue epilogue = fb::Epilogue::NONE;
  DevicePtr a = 0, b = 0, d = 0;
  DevicePtr bias = 0, aScale = 0, bScale = 0, dScale = 0, dAmax = 0; // 0: none
  bool fastAccum = false; ///< FP8: the fast accumulator (no split accumulation)
  /// GELU_AUX(_BIAS): where the pre-activation goes (0: none), and its
  /// leading dimension in elements.
  DevicePtr aux = 0;
  uint64_t auxLd = 0;
};

/// A GEMM whose descriptors and algorithm were chosen once, at load.
class GemmPlan {
public:
  virtual ~GemmPlan() = default;
};

/// What tuning the GEMM algorithms found (Blas::tune).
struct GemmTuning {
  unsigned shapes = 0;     ///< distinct GEMMs timed
  unsigned candidates = 0; ///< algorithms timed over all of them
  unsigned changed = 0;    ///< GEMMs whose fastest was not the library's first pick
};

class Blas {
public:
  virtual ~Blas() = default;
  /// Builds descriptors and picks an algorithm (the library's first
  /// choice); fails if none fits.
  virtual Status prepare(const GemmSpec &spec, std::unique_ptr<GemmPlan> &out) = 0;
  /// Runs each algorithm the library offers for |plan| on |stream| and keeps
  /// the fastest, for every plan of the same descriptors. It writes D, so
  /// the caller runs it before D's memory holds anything it needs.
  virtual Status tune(GemmPlan &plan, Stream &stream, GemmTuning &tally) = 0;
  virtual Status run(GemmPlan &plan, Stream &stream) = 0;
};

/// A [B, H, T, D] view: address, dims and element strides.
struct AttentionTensorSpec {
  DevicePtr ptr = 0;
  int64_t dims[4] = {0, 0, 0, 0};
  int64_t strides[4] = {0, 0, 0, 0};
};

/// One fused attention call (artifact.fbs `Attention`) with every address
/// bound. `lse` is f32 [B, H, Tq] (contiguous).
struct AttentionSpec {
  bool backward = false;
  fb::DType dtype = fb::DType::BF16;
  float scale = 1.0f;
  bool causal = false;
  int64_t window = 0;
  AttentionTensorSpec q, k, v, o;
  DevicePtr lse = 0;
  bool hasMask = false;
  AttentionTensorSpec mask;
  AttentionTensorSpec gradO, gradQ, gradK, gradV;
  /// Backward: the same bits on every run (cuDNN's deterministic
  /// algorithm: on Hopper it keeps dP in a B*H*Tq*Tk workspace and is
  /// slower), instead of dQ accumulated with atomics.
  bool deterministic = false;
  /// Dropout of the probabilities (tx.attention's `dropout(%key, ratio,
  /// seed)`), 0: none. The mask is the library's (cuDNN's Philox), drawn
  /// from the step's key, an int64 the device reads at |dropoutKey| (so a
  /// captured graph sees each step's key), and the call site's Philox
  /// offset, an int64 at |dropoutOffset|, which keeps the calls of one step
  /// apart. The backward with the same key and offset draws the same mask.
  float dropout = 0.0f;
  DevicePtr dropoutKey = 0;
  DevicePtr dropoutOffset = 0;
  /// FP8 attention (tx.fp8_attention / tx.fp8_attention_grad; cuDNN's
  /// sdpa_fp8 and sdpa_fp8_backward, which on Hopper take no mask, window
  /// or dropout): |dtype| is q's FP8 type, shared by k, v and o (and the
  /// quantized probabilities); |gradType| that of dO, the gradients and the
  /// quantized dS. Each scale, scale inverse ("descale") and amax is one f32
  /// in device memory; the call writes the amaxes. |fp8Scalars| holds their
  /// addresses, indexed by fb::AttentionScalar: those the call's direction
  /// uses (attentionScalarUsed); the others are ignored (neither bound nor
  /// part of the graph's key).
  bool fp8 = false;
  fb::DType gradType = fb::DType::F8E5M2;
  std::array<DevicePtr, kAttentionScalarCount> fp8Scalars{};
  DevicePtr fp8Scalar(fb::AttentionScalar which) const {
    return fp8Scalars[static_cast<unsigned>(which)];
  }
};

/// An attention call whose plan was built once, at load.
class AttentionPlan {
public:
  virtual ~AttentionPlan() = default;
  /// Scratch the call needs while it runs (the session provides it).
  virtual size_t workspaceBytes() const = 0;
};

/// Fused scaled-dot-product attention (cuDNN's SDPA on CUDA).
class Attention {
public:
  virtual ~Attention() = default;
  /// Builds the plan; fails, naming the reason, when the library cannot run
  /// this shape/type on this GPU.
  virtual Status prepare(const AttentionSpec &spec, std::unique_ptr<AttentionPlan> &out) = 0;
  virtual Status run(AttentionPlan &plan, DevicePtr workspace, Stream &stream) = 0;
};

/// A group of data-parallel ranks exchanging device buffers (the step's
/// Collective commands). Calls are enqueued on |stream| in the same order on
/// every rank; counts are in elements of |type|. NCCL on CUDA
/// (cuda_hal.h); threads sharing one device in tests (thread_communicator.h).
class Communicator {
public:
  enum class Reduction { Sum, Max, Mean };
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// "nccl", "threads": for messages and the run's header line.
  virtual const char *kind() const = 0;
  /// Whether its calls may be captured into a CUDA graph (NCCL's may; an
  /// exchange through host memory may not).
  virtual bool capturable() const = 0;
  /// Collectives enqueued between beginGroup and endGroup may be launched
  /// together (NCCL aggregates them into one kernel); they must not depend
  /// on each other. No-ops where grouping gains nothing.
  virtual Status beginGroup() { return Status(); }
  virtual Status endGroup() { return Status(); }
  /// recv = the reduction over ranks of send, |count| elements each.
  virtual Status allReduce(DevicePtr send, DevicePtr recv, size_t count,
                           fb::DType type, Reduction op, Stream &stream) = 0;
  /// recv (|recvCount| elements) = shard rank() of the reduction over ranks
  /// of send (|recvCount| * size() elements each).
  virtual Status reduceScatter(DevicePtr send, DevicePtr recv, size_t recvCount,
                               fb::DType type, Reduction op, Stream &stream) = 0;
  /// recv (|sendCount| * size() elements) = every rank's send in rank order.
  virtual Status allGather(DevicePtr send, DevicePtr recv, size_t sendCount,
                           fb::DType type, Stream &stream) = 0;
  /// Ends the group's collectives in flight (the kernels of a collective
  /// waiting for a peer that will not come), after which every call fails.
  /// For a rank that gives up waiting.
  virtual void abort(const std::string &why) = 0;
  /// After the stream's work has completed, or while waiting for it: a
  /// failure of the group that happened asynchronously (a dead rank, a
  /// network error), or OK.
  virtual Status check() = 0;
};

class Device {
public:
  virtual ~Device() = default;
  virtual const DeviceInfo &info() const = 0;
  /// Makes this device current on the calling thread.
  virtual Status makeCurrent() = 0;
  virtual Status allocate(size_t bytes, std::unique_ptr<Buffer> &out) = 0;
  virtual Status createStream(std::unique_ptr<Stream> &out) = 0;
  virtual Status createEvent(std::unique_ptr<Event> &out) = 0;
  virtual Status elapsedMs(Event &start, Event &end, float &ms) = 0;
  virtual Status loadModule(fb::ImageFormat format, const void *data, size_t size,
                            std::unique_ptr<Module> &out) = 0;
  virtual Status createBlas(std::unique_ptr<Blas> &out) = 0;
  /// TXRT_UNAVAILABLE, with the reason, when the attention library is not
  /// there (or this runtime was built without it).
  virtual Status createAttention(std::unique_ptr<Attention> &out) = 0;
  virtual Status memoryInfo(size_t &freeBytes, size_t &totalBytes) = 0;
  virtual Status synchronize() = 0;
};

} // namespace txrt::hal

#endif // TXRT_HAL_HAL_H
