//===- txrt_fp8_attention_probe.cpp - cuDNN's FP8 attention against the IR ===//
//
// SPDX-License-Identifier: Apache-2.0
// Runs hal::Attention's FP8 path (cuDNN's sdpa_fp8 and sdpa_fp8_backward,
// what a step's tx.fp8_attention / tx.fp8_attention_grad would run) on one
// shape with seeded FP8 inputs and fixed scales, times it, and dumps what
// bench/attention/check_fp8_attention.py compares with the reference
// executor's formulas (TxPrecisionOps.td):
//   txrt-fp8-attention-probe B H HKV T D [--causal] [--iters N] [--dump DIR]
//       [--grad-type e4m3|e5m2] [--scalar-offset 0|4|8|12] [--scale-s X]
// Prints one JSON line: median milliseconds of the forward and of forward +
// backward, their TFLOP/s (the FLOP count of txrt-attention-bench), and the
// six amaxes cuDNN wrote. With --dump, DIR gets q, k, v, do, o, lse, dq, dk,
// dv as f32 .npy files (the FP8 values exactly) and scales.json (every
// scale and scale inverse given to the calls, and the amaxes).
//
// q, k and v are N(0, 1) * 2 rounded to E4M3, dO N(0, 1) rounded to the
// gradient type; the scales are fixed below so that the quantized
// probabilities stay well inside E4M3's range (scale_s 224: a probability
// of 1 maps to half the largest code). --scale-s sets scale_s (and
// descale_s, its inverse) as a step's delayed scaling would: 448 / Amax_S,
// where Amax_S is the largest normalized probability (below 1 without a
// causal mask): what the kernel quantizes then, exp(S - running max) up to
// 1 or the normalized P, decides whether the codes saturate.
//
//===----------------------------------------------------------------------===//

#include "core/dtype.h"
#include "core/npy.h"
#include "hal/cuda/cuda_hal.h"

#include "attention_tool_util.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

using namespace txrt;

namespace {

int fail(const std::string &message) {
  std::fprintf(stderr, "txrt-fp8-attention-probe: error: %s\n", message.c_str());
  return 1;
}

/// A [B, H, T, D] FP8 tensor (contiguous), its codes kept on the host.
struct FP8Tensor {
  std::vector<int64_t> shape;
  DType type = DType::F8E4M3FN;
  std::vector<uint8_t> codes;
  std::unique_ptr<hal::Buffer> buffer;
  size_t elements() const {
    size_t n = 1;
    for (int64_t d : shape) n *= static_cast<size_t>(d);
    return n;
  }
  hal::AttentionTensorSpec spec() const { return tools::contiguousSpec(shape, buffer->address()); }
  double value(size_t i) const {
    return type == DType::F8E4M3FN ? f8e4m3fnToDouble(codes[i]) : f8e5m2ToDouble(codes[i]);
  }
};

/// One f32 in device memory.
struct Scalar {
  std::unique_ptr<hal::Buffer> buffer;
  float value = 0;
};

Status dumpValues(const FP8Tensor &t, const std::string &path) {
  std::vector<float> values(t.elements());
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<float>(t.value(i));
  return writeNpyFile(path, DType::F32, t.shape, values.data(), values.size());
}

/// The command line: the shape and the flags.
struct ProbeOptions {
  int64_t B = 0, H = 0, HKV = 0, T = 0, D = 0;
  bool causal = false;
  int iters = 20;
  int scalarOffset = 0;
  std::string dump;
  DType gradType = DType::F8E5M2;
  float scaleS = 224.0f;
};

/// The device, its stream and its attention, which every buffer below
/// belongs to.
struct Runtime {
  std::unique_ptr<hal::Device> device;
  std::unique_ptr<hal::Stream> stream;
  std::unique_ptr<hal::Attention> attention;
};

/// The calls' tensors: inputs q, k, v, dO; outputs o, lse, dQ, dK, dV.
struct Tensors {
  FP8Tensor q, k, v, o, dO, dQ, dK, dV;
  std::unique_ptr<hal::Buffer> lse;
};

/// The scalars in fb::AttentionScalar's order.
enum { DQ_, DK_, DV_, DS_, SS_, SO_, AS_, AO_, DO_, DDO_, DDP_, SDQ_, SDK_, SDV_, SDP_,
       ADQ_, ADK_, ADV_, ADP_, COUNT_ };
static_assert(COUNT_ == txrt::kAttentionScalarCount, "fb::AttentionScalar's order");
const char *const kScalarNames[COUNT_] = {
    "descale_q", "descale_k", "descale_v", "descale_s", "scale_s",
    "scale_o",   "amax_s",    "amax_o",    "descale_o", "descale_do",
    "descale_dp", "scale_dq", "scale_dk",  "scale_dv",  "scale_dp",
    "amax_dq",   "amax_dk",   "amax_dv",   "amax_dp"};
using Scalars = std::array<Scalar, COUNT_>;

/// The forward and backward plans and the workspace both run in.
struct Plans {
  std::unique_ptr<hal::AttentionPlan> forward, backward;
  std::unique_ptr<hal::Buffer> workspace;
};

/// Median milliseconds of the forward and of forward + backward.
struct Timings {
  double fwdMs = 0, bothMs = 0;
};

Status parseOptions(int argc, char **argv, ProbeOptions &options) {
  if (argc < 6)
    return Status::invalid("usage: txrt-fp8-attention-probe B H HKV T D [--causal] [--iters N] "
                           "[--dump DIR] [--grad-type e4m3|e5m2] [--scalar-offset 0|4|8|12] "
                           "[--scale-s X]");
  options.B = std::atoll(argv[1]);
  options.H = std::atoll(argv[2]);
  options.HKV = std::atoll(argv[3]);
  options.T = std::atoll(argv[4]);
  options.D = std::atoll(argv[5]);
  for (int i = 6; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--causal") options.causal = true;
    else if (a == "--iters" && i + 1 < argc) options.iters = std::atoi(argv[++i]);
    else if (a == "--dump" && i + 1 < argc) options.dump = argv[++i];
    else if (a == "--scalar-offset" && i + 1 < argc) {
      options.scalarOffset = std::atoi(argv[++i]);
      if (options.scalarOffset < 0 || options.scalarOffset > 12 || options.scalarOffset % 4 != 0)
        return Status::invalid("--scalar-offset must be 0, 4, 8 or 12");
    }
    else if (a == "--scale-s" && i + 1 < argc) {
      char *end = nullptr;
      const char *text = argv[++i];
      options.scaleS = std::strtof(text, &end);
      if (end == text || *end != '\0' || !std::isnormal(options.scaleS) ||
          options.scaleS < 0.0f || !std::isfinite(1.0f / options.scaleS))
        return Status::invalid("--scale-s must be a positive number with a finite inverse, not '" +
                               std::string(text) + "'");
    }
    else if (a == "--grad-type" && i + 1 < argc) {
      std::string t = argv[++i];
      if (t != "e4m3" && t != "e5m2")
        return Status::invalid("--grad-type must be e4m3 or e5m2, not '" + t + "'");
      options.gradType = t == "e4m3" ? DType::F8E4M3FN : DType::F8E5M2;
    } else return Status::invalid("unknown argument '" + a + "'");
  }
  if (options.B <= 0 || options.H <= 0 || options.HKV <= 0 || options.H % options.HKV != 0 ||
      options.T <= 0 || options.D <= 0 || options.iters <= 0)
    return Status::invalid("bad shape: need positive B H HKV T D with HKV dividing H");
  return Status();
}

Status openRuntime(Runtime &runtime) {
  TXRT_RETURN_IF_ERROR(cuda::createCudaDevice(0, runtime.device));
  TXRT_RETURN_IF_ERROR(runtime.device->createStream(runtime.stream));
  return runtime.device->createAttention(runtime.attention);
}

/// Allocates every tensor and uploads its codes: the inputs seeded
/// N(0, 1) * spread, the outputs zeros. One generator in a fixed order, so
/// every run draws the same inputs.
Status makeTensors(const ProbeOptions &options, Runtime &runtime, Tensors &tensors) {
  const int64_t B = options.B, H = options.H, HKV = options.HKV, T = options.T, D = options.D;
  const DType gradType = options.gradType;
  std::mt19937_64 rng(1);
  std::normal_distribution<double> normal(0.0, 1.0);
  auto make = [&](std::vector<int64_t> shape, DType type, double spread, bool fill,
                  FP8Tensor &t) -> Status {
    t.shape = std::move(shape);
    t.type = type;
    t.codes.assign(t.elements(), 0);
    if (fill)
      for (uint8_t &c : t.codes) {
        double x = normal(rng) * spread;
        c = type == DType::F8E4M3FN ? f8e4m3fnFromDouble(x) : f8e5m2FromDouble(x);
      }
    TXRT_RETURN_IF_ERROR(runtime.device->allocate(t.elements(), t.buffer));
    return runtime.stream->copyHostToDevice(t.buffer->address(), t.codes.data(), t.codes.size());
  };
  const DType e4m3 = DType::F8E4M3FN;
  for (auto [t, shape, type, spread, fill] :
       {std::tuple{&tensors.q, std::vector<int64_t>{B, H, T, D}, e4m3, 2.0, true},
        {&tensors.k, {B, HKV, T, D}, e4m3, 2.0, true},
        {&tensors.v, {B, HKV, T, D}, e4m3, 2.0, true},
        {&tensors.o, {B, H, T, D}, e4m3, 0.0, false},
        {&tensors.dO, {B, H, T, D}, gradType, 1.0, true},
        {&tensors.dQ, {B, H, T, D}, gradType, 0.0, false},
        {&tensors.dK, {B, HKV, T, D}, gradType, 0.0, false},
        {&tensors.dV, {B, HKV, T, D}, gradType, 0.0, false}})
    TXRT_RETURN_IF_ERROR(make(shape, type, spread, fill, *t));
  return runtime.device->allocate(static_cast<size_t>(B * H * T) * 4, tensors.lse);
}

/// Fixes every scale and uploads it, each scalar in its own 256-byte buffer.
Status makeScalars(const ProbeOptions &options, Runtime &runtime, Scalars &scalars) {
  // The scales: inverses as f32 reciprocals, as a delayed-scaling state
  // holds them.
  auto inverse = [](float x) { return 1.0f / x; };
  scalars[DQ_].value = 0.5f, scalars[DK_].value = 0.5f, scalars[DV_].value = 0.5f;
  scalars[SS_].value = options.scaleS, scalars[DS_].value = inverse(options.scaleS);
  scalars[SO_].value = 16.0f, scalars[DO_].value = inverse(16.0f);
  scalars[DDO_].value = 1.0f, scalars[SDP_].value = 64.0f, scalars[DDP_].value = inverse(64.0f);
  scalars[SDQ_].value = 2.0f, scalars[SDK_].value = 2.0f, scalars[SDV_].value = 2.0f;
  for (Scalar &s : scalars) {
    TXRT_RETURN_IF_ERROR(runtime.device->allocate(256, s.buffer));
    TXRT_RETURN_IF_ERROR(
        runtime.stream->copyHostToDevice(s.buffer->address() + options.scalarOffset, &s.value, 4));
  }
  return Status();
}

/// The forward spec over |tensors|, with every scalar of both directions
/// (each call takes its own).
hal::AttentionSpec forwardSpec(const ProbeOptions &options, const Tensors &tensors,
                               const Scalars &scalars) {
  hal::AttentionSpec forward;
  forward.fp8 = true;
  forward.dtype = DType::F8E4M3FN;
  forward.gradType = options.gradType;
  forward.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(options.D)));
  forward.causal = options.causal;
  forward.q = tensors.q.spec(), forward.k = tensors.k.spec(), forward.v = tensors.v.spec();
  forward.o = tensors.o.spec();
  forward.lse = tensors.lse->address();
  // --scalar-offset: every scale and amax 4, 8 or 12 bytes past a 256-byte
  // boundary, as a step's scales sit inside its packed FP8 state.
  for (int i = 0; i < COUNT_; ++i)
    forward.fp8Scalars[i] = scalars[i].buffer->address() + options.scalarOffset;
  return forward;
}

hal::AttentionSpec backwardSpec(const hal::AttentionSpec &forward, const Tensors &tensors) {
  hal::AttentionSpec backward = forward;
  backward.backward = true;
  backward.gradO = tensors.dO.spec(), backward.gradQ = tensors.dQ.spec();
  backward.gradK = tensors.dK.spec(), backward.gradV = tensors.dV.spec();
  return backward;
}

Status preparePlans(hal::Attention &attention, const hal::AttentionSpec &forward,
                    const hal::AttentionSpec &backward, Plans &plans) {
  TXRT_RETURN_IF_ERROR(attention.prepare(forward, plans.forward).withContext("forward"));
  return attention.prepare(backward, plans.backward).withContext("backward");
}

/// The deterministic backward (txrun --deterministic) has no FP8 form on
/// Hopper: the runtime must refuse it, naming why, not run the other one.
Status checkDeterministicRefused(hal::Attention &attention, const hal::AttentionSpec &backward) {
  hal::AttentionSpec deterministic = backward;
  deterministic.deterministic = true;
  std::unique_ptr<hal::AttentionPlan> refused;
  Status s = attention.prepare(deterministic, refused);
  if (s.ok() || s.message().find("deterministic") == std::string::npos)
    return Status::internal("a deterministic FP8 backward was not refused: " +
                            (s.ok() ? std::string("prepared") : s.message()));
  return Status();
}

Status allocateWorkspace(hal::Device &device, Plans &plans) {
  return device.allocate(
      std::max<size_t>({plans.forward->workspaceBytes(), plans.backward->workspaceBytes(), 256}),
      plans.workspace);
}

Status timeCalls(const ProbeOptions &options, Runtime &runtime, Plans &plans,
                 Timings &timings) {
  auto timeMs = [&](bool withBackward, double &median) {
    return tools::medianMs(*runtime.device, *runtime.stream, *runtime.attention, *plans.forward,
                           withBackward ? plans.backward.get() : nullptr,
                           plans.workspace->address(), options.iters, median);
  };
  TXRT_RETURN_IF_ERROR(timeMs(false, timings.fwdMs));
  return timeMs(true, timings.bothMs);
}

/// One more forward + backward on the inputs as they are: what --dump
/// writes and the amaxes printed.
Status runOnceAndReadScalars(const ProbeOptions &options, Runtime &runtime, Plans &plans,
                             Scalars &scalars) {
  TXRT_RETURN_IF_ERROR(
      runtime.attention->run(*plans.forward, plans.workspace->address(), *runtime.stream));
  TXRT_RETURN_IF_ERROR(
      runtime.attention->run(*plans.backward, plans.workspace->address(), *runtime.stream));
  for (Scalar &s : scalars)
    TXRT_RETURN_IF_ERROR(runtime.stream->copyDeviceToHost(
        &s.value, s.buffer->address() + options.scalarOffset, 4));
  return Status();
}

void printResultJson(const ProbeOptions &options, const Timings &timings,
                     const Scalars &scalars) {
  const int64_t B = options.B, H = options.H, HKV = options.HKV, T = options.T, D = options.D;
  double flops = 4.0 * B * H * static_cast<double>(T) * T * D * (options.causal ? 0.5 : 1.0);
  std::printf("{\"B\": %lld, \"H\": %lld, \"HKV\": %lld, \"T\": %lld, \"D\": %lld, "
              "\"causal\": %s, \"fp8\": true, \"fwd_ms\": %.4f, \"fwd_bwd_ms\": %.4f, "
              "\"fwd_tflops\": %.1f, \"fwd_bwd_tflops\": %.1f, \"amax_s\": %g, \"amax_o\": %g, "
              "\"amax_dq\": %g, \"amax_dk\": %g, \"amax_dv\": %g, \"amax_dp\": %g}\n",
              (long long)B, (long long)H, (long long)HKV, (long long)T, (long long)D,
              options.causal ? "true" : "false", timings.fwdMs, timings.bothMs,
              flops / timings.fwdMs / 1e9, 3.5 * flops / timings.bothMs / 1e9,
              scalars[AS_].value, scalars[AO_].value, scalars[ADQ_].value, scalars[ADK_].value,
              scalars[ADV_].value, scalars[ADP_].value);
}

/// --dump: every tensor as f32 .npy in |dir|, the outputs read back first.
Status dumpTensors(const std::string &dir, const ProbeOptions &options, Runtime &runtime,
                   Tensors &tensors) {
  for (FP8Tensor *t : {&tensors.o, &tensors.dQ, &tensors.dK, &tensors.dV})
    TXRT_RETURN_IF_ERROR(
        runtime.stream->copyDeviceToHost(t->codes.data(), t->buffer->address(), t->codes.size()));
  struct Named { const char *name; FP8Tensor *t; };
  for (Named n : {Named{"q", &tensors.q}, {"k", &tensors.k}, {"v", &tensors.v},
                  {"do", &tensors.dO}, {"o", &tensors.o}, {"dq", &tensors.dQ},
                  {"dk", &tensors.dK}, {"dv", &tensors.dV}})
    TXRT_RETURN_IF_ERROR(dumpValues(*n.t, dir + "/" + n.name + ".npy"));
  const int64_t B = options.B, H = options.H, T = options.T;
  std::vector<float> lseHost(static_cast<size_t>(B * H * T));
  TXRT_RETURN_IF_ERROR(
      runtime.stream->copyDeviceToHost(lseHost.data(), tensors.lse->address(), lseHost.size() * 4));
  std::vector<int64_t> lseShape = {B, H, T};
  return writeNpyFile(dir + "/lse.npy", DType::F32, lseShape, lseHost.data(), lseHost.size());
}

/// --dump: scales.json, every scale and scale inverse given to the calls and
/// the amaxes they wrote.
Status writeScalesJson(const std::string &dir, const ProbeOptions &options,
                       const hal::AttentionSpec &forward, const Scalars &scalars) {
  FILE *json = std::fopen((dir + "/scales.json").c_str(), "w");
  if (!json)
    return Status::unavailable("cannot write " + dir + "/scales.json");
  std::fprintf(json, "{\"attn_scale\": %.9g, \"causal\": %s, \"grad_type\": \"%s\"", forward.scale,
               options.causal ? "true" : "false",
               options.gradType == DType::F8E4M3FN ? "f8E4M3FN" : "f8E5M2");
  for (int i = 0; i < COUNT_; ++i)
    std::fprintf(json, ", \"%s\": %.9g", kScalarNames[i], scalars[i].value);
  std::fprintf(json, "}\n");
  std::fclose(json);
  return Status();
}

} // namespace

int main(int argc, char **argv) {
  ProbeOptions options;
  if (Status s = parseOptions(argc, argv, options); !s.ok()) return fail(s.message());
  Runtime runtime;
  if (Status s = openRuntime(runtime); !s.ok()) return fail(s.message());
  Tensors tensors;
  if (Status s = makeTensors(options, runtime, tensors); !s.ok()) return fail(s.message());
  Scalars scalars;
  if (Status s = makeScalars(options, runtime, scalars); !s.ok()) return fail(s.message());

  hal::AttentionSpec forward = forwardSpec(options, tensors, scalars);
  hal::AttentionSpec backward = backwardSpec(forward, tensors);
  Plans plans;
  if (Status s = preparePlans(*runtime.attention, forward, backward, plans); !s.ok())
    return fail(s.message());
  if (Status s = checkDeterministicRefused(*runtime.attention, backward); !s.ok())
    return fail(s.message());
  if (Status s = allocateWorkspace(*runtime.device, plans); !s.ok()) return fail(s.message());

  Timings timings;
  if (Status s = timeCalls(options, runtime, plans, timings); !s.ok()) return fail(s.message());
  if (Status s = runOnceAndReadScalars(options, runtime, plans, scalars); !s.ok())
    return fail(s.message());
  printResultJson(options, timings, scalars);
  if (options.dump.empty())
    return 0;
  if (Status s = dumpTensors(options.dump, options, runtime, tensors); !s.ok())
    return fail(s.message());
  if (Status s = writeScalesJson(options.dump, options, forward, scalars); !s.ok())
    return fail(s.message());
  return 0;
}
