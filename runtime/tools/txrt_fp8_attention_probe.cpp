//===- txrt_fp8_attention_probe.cpp - cuDNN's FP8 attention against the IR ===//
//
// SPDX-License-Identifier: Apache-2.0
// Runs hal::Attention's FP8 path (cuDNN's sdpa_fp8 and sdpa_fp8_backward,
// what a step's tx.fp8_attention / tx.fp8_attention_grad would run) on one
// shape with seeded FP8 inputs and fixed scales, times it, and dumps what
// bench/attention/check_fp8_attention.py compares with the reference
// executor's formulas (TxPrecisionOps.td):
//   txrt-fp8-attention-probe B H HKV T D [--causal] [--iters N] [--dump DIR]
//       [--grad-type e4m3|e5m2] [--scalar-offset 0|4|8|12]
// Prints one JSON line: median milliseconds of the forward and of forward +
// backward, their TFLOP/s (the FLOP count of txrt-attention-bench), and the
// six amaxes cuDNN wrote. With --dump, DIR gets q, k, v, do, o, lse, dq, dk,
// dv as f32 .npy files (the FP8 values exactly) and scales.json (every
// scale and scale inverse given to the calls, and the amaxes).
//
// q, k and v are N(0, 1) * 2 rounded to E4M3, dO N(0, 1) rounded to the
// gradient type; the scales are fixed below so that the quantized
// probabilities stay well inside E4M3's range (scale_s 224: a probability
// of 1 maps to half the largest code).
//
//===----------------------------------------------------------------------===//

#include "core/dtype.h"
#include "core/npy.h"
#include "hal/cuda/cuda_hal.h"

#include "attention_tool_util.h"

#include <algorithm>
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

} // namespace

int main(int argc, char **argv) {
  if (argc < 6)
    return fail("usage: txrt-fp8-attention-probe B H HKV T D [--causal] [--iters N] "
                "[--dump DIR] [--grad-type e4m3|e5m2] [--scalar-offset 0|4|8|12]");
  int64_t B = std::atoll(argv[1]), H = std::atoll(argv[2]), HKV = std::atoll(argv[3]),
          T = std::atoll(argv[4]), D = std::atoll(argv[5]);
  bool causal = false;
  int iters = 20;
  int scalarOffset = 0;
  std::string dump;
  DType gradType = DType::F8E5M2;
  for (int i = 6; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--causal") causal = true;
    else if (a == "--iters" && i + 1 < argc) iters = std::atoi(argv[++i]);
    else if (a == "--dump" && i + 1 < argc) dump = argv[++i];
    else if (a == "--scalar-offset" && i + 1 < argc) {
      scalarOffset = std::atoi(argv[++i]);
      if (scalarOffset < 0 || scalarOffset > 12 || scalarOffset % 4 != 0)
        return fail("--scalar-offset must be 0, 4, 8 or 12");
    }
    else if (a == "--grad-type" && i + 1 < argc) {
      std::string t = argv[++i];
      if (t != "e4m3" && t != "e5m2")
        return fail("--grad-type must be e4m3 or e5m2, not '" + t + "'");
      gradType = t == "e4m3" ? DType::F8E4M3FN : DType::F8E5M2;
    } else return fail("unknown argument '" + a + "'");
  }
  if (B <= 0 || H <= 0 || HKV <= 0 || H % HKV != 0 || T <= 0 || D <= 0 || iters <= 0)
    return fail("bad shape: need positive B H HKV T D with HKV dividing H");

  std::unique_ptr<hal::Device> device;
  if (Status s = cuda::createCudaDevice(0, device); !s.ok()) return fail(s.message());
  std::unique_ptr<hal::Stream> stream;
  std::unique_ptr<hal::Attention> attention;
  if (Status s = device->createStream(stream); !s.ok()) return fail(s.message());
  if (Status s = device->createAttention(attention); !s.ok()) return fail(s.message());

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
    TXRT_RETURN_IF_ERROR(device->allocate(t.elements(), t.buffer));
    return stream->copyHostToDevice(t.buffer->address(), t.codes.data(), t.codes.size());
  };
  FP8Tensor q, k, v, o, dO, dQ, dK, dV;
  const DType e4m3 = DType::F8E4M3FN;
  for (auto [t, shape, type, spread, fill] :
       {std::tuple{&q, std::vector<int64_t>{B, H, T, D}, e4m3, 2.0, true},
        {&k, {B, HKV, T, D}, e4m3, 2.0, true}, {&v, {B, HKV, T, D}, e4m3, 2.0, true},
        {&o, {B, H, T, D}, e4m3, 0.0, false}, {&dO, {B, H, T, D}, gradType, 1.0, true},
        {&dQ, {B, H, T, D}, gradType, 0.0, false}, {&dK, {B, HKV, T, D}, gradType, 0.0, false},
        {&dV, {B, HKV, T, D}, gradType, 0.0, false}})
    if (Status s = make(shape, type, spread, fill, *t); !s.ok()) return fail(s.message());
  std::unique_ptr<hal::Buffer> lse;
  if (Status s = device->allocate(static_cast<size_t>(B * H * T) * 4, lse); !s.ok())
    return fail(s.message());

  // The scales: inverses as f32 reciprocals, as a delayed-scaling state
  // holds them.
  enum { DQ_, DK_, DV_, DS_, SS_, SO_, AS_, AO_, DO_, DDO_, DDP_, SDQ_, SDK_, SDV_, SDP_,
         ADQ_, ADK_, ADV_, ADP_, COUNT_ };
  static_assert(COUNT_ == txrt::kAttentionScalarCount, "fb::AttentionScalar's order");
  const char *names[COUNT_] = {"descale_q", "descale_k", "descale_v", "descale_s", "scale_s",
                               "scale_o", "amax_s", "amax_o", "descale_o", "descale_do",
                               "descale_dp", "scale_dq", "scale_dk", "scale_dv", "scale_dp",
                               "amax_dq", "amax_dk", "amax_dv", "amax_dp"};
  Scalar scalars[COUNT_];
  auto inverse = [](float x) { return 1.0f / x; };
  scalars[DQ_].value = 0.5f, scalars[DK_].value = 0.5f, scalars[DV_].value = 0.5f;
  scalars[SS_].value = 224.0f, scalars[DS_].value = inverse(224.0f);
  scalars[SO_].value = 16.0f, scalars[DO_].value = inverse(16.0f);
  scalars[DDO_].value = 1.0f, scalars[SDP_].value = 64.0f, scalars[DDP_].value = inverse(64.0f);
  scalars[SDQ_].value = 2.0f, scalars[SDK_].value = 2.0f, scalars[SDV_].value = 2.0f;
  for (Scalar &s : scalars) {
    if (Status st = device->allocate(256, s.buffer); !st.ok()) return fail(st.message());
    if (Status st = stream->copyHostToDevice(s.buffer->address() + scalarOffset, &s.value, 4);
        !st.ok())
      return fail(st.message());
  }
  // --scalar-offset: every scale and amax 4, 8 or 12 bytes past a 256-byte
  // boundary, as a step's scales sit inside its packed FP8 state.
  auto at = [&](int i) { return scalars[i].buffer->address() + scalarOffset; };

  hal::AttentionSpec forward;
  forward.fp8 = true;
  forward.dtype = e4m3;
  forward.gradType = gradType;
  forward.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)));
  forward.causal = causal;
  forward.q = q.spec(), forward.k = k.spec(), forward.v = v.spec(), forward.o = o.spec();
  forward.lse = lse->address();
  // Every scalar of both directions (each call takes its own).
  for (int i = 0; i < COUNT_; ++i)
    forward.fp8Scalars[i] = at(i);
  hal::AttentionSpec backward = forward;
  backward.backward = true;
  backward.gradO = dO.spec(), backward.gradQ = dQ.spec();
  backward.gradK = dK.spec(), backward.gradV = dV.spec();
  std::unique_ptr<hal::AttentionPlan> fwdPlan, bwdPlan;
  if (Status s = attention->prepare(forward, fwdPlan); !s.ok())
    return fail("forward: " + s.message());
  if (Status s = attention->prepare(backward, bwdPlan); !s.ok())
    return fail("backward: " + s.message());
  // The deterministic backward (txrun --deterministic) has no FP8 form on
  // Hopper: the runtime must refuse it, naming why, not run the other one.
  {
    hal::AttentionSpec deterministic = backward;
    deterministic.deterministic = true;
    std::unique_ptr<hal::AttentionPlan> refused;
    Status s = attention->prepare(deterministic, refused);
    if (s.ok() || s.message().find("deterministic") == std::string::npos)
      return fail("a deterministic FP8 backward was not refused: " +
                  (s.ok() ? std::string("prepared") : s.message()));
  }
  std::unique_ptr<hal::Buffer> workspace;
  if (Status s = device->allocate(std::max<size_t>(
                                      {fwdPlan->workspaceBytes(), bwdPlan->workspaceBytes(), 256}),
                                  workspace);
      !s.ok())
    return fail(s.message());

  auto timeMs = [&](bool withBackward, double &median) {
    return tools::medianMs(*device, *stream, *attention, *fwdPlan,
                           withBackward ? bwdPlan.get() : nullptr, workspace->address(), iters,
                           median);
  };
  double fwdMs = 0, bothMs = 0;
  if (Status s = timeMs(false, fwdMs); !s.ok()) return fail(s.message());
  if (Status s = timeMs(true, bothMs); !s.ok()) return fail(s.message());
  // One more forward + backward on the inputs as they are: what --dump
  // writes and the amaxes printed.
  if (Status s = attention->run(*fwdPlan, workspace->address(), *stream); !s.ok())
    return fail(s.message());
  if (Status s = attention->run(*bwdPlan, workspace->address(), *stream); !s.ok())
    return fail(s.message());
  for (Scalar &s : scalars)
    if (Status st = stream->copyDeviceToHost(&s.value, s.buffer->address() + scalarOffset, 4); !st.ok())
      return fail(st.message());
  double flops = 4.0 * B * H * static_cast<double>(T) * T * D * (causal ? 0.5 : 1.0);
  std::printf("{\"B\": %lld, \"H\": %lld, \"HKV\": %lld, \"T\": %lld, \"D\": %lld, "
              "\"causal\": %s, \"fp8\": true, \"fwd_ms\": %.4f, \"fwd_bwd_ms\": %.4f, "
              "\"fwd_tflops\": %.1f, \"fwd_bwd_tflops\": %.1f, \"amax_s\": %g, \"amax_o\": %g, "
              "\"amax_dq\": %g, \"amax_dk\": %g, \"amax_dv\": %g, \"amax_dp\": %g}\n",
              (long long)B, (long long)H, (long long)HKV, (long long)T, (long long)D,
              causal ? "true" : "false", fwdMs, bothMs, flops / fwdMs / 1e9,
              3.5 * flops / bothMs / 1e9, scalars[AS_].value, scalars[AO_].value,
              scalars[ADQ_].value, scalars[ADK_].value, scalars[ADV_].value, scalars[ADP_].value);
  if (dump.empty())
    return 0;
  for (FP8Tensor *t : {&o, &dQ, &dK, &dV})
    if (Status s = stream->copyDeviceToHost(t->codes.data(), t->buffer->address(),
                                            t->codes.size());
        !s.ok())
      return fail(s.message());
  struct Named { const char *name; FP8Tensor *t; };
  for (Named n : {Named{"q", &q}, {"k", &k}, {"v", &v}, {"do", &dO}, {"o", &o}, {"dq", &dQ},
                  {"dk", &dK}, {"dv", &dV}})
    if (Status s = dumpValues(*n.t, dump + "/" + n.name + ".npy"); !s.ok())
      return fail(s.message());
  std::vector<float> lseHost(static_cast<size_t>(B * H * T));
  if (Status s = stream->copyDeviceToHost(lseHost.data(), lse->address(), lseHost.size() * 4);
      !s.ok())
    return fail(s.message());
  std::vector<int64_t> lseShape = {B, H, T};
  if (Status s = writeNpyFile(dump + "/lse.npy", DType::F32, lseShape, lseHost.data(),
                              lseHost.size());
      !s.ok())
    return fail(s.message());
  FILE *json = std::fopen((dump + "/scales.json").c_str(), "w");
  if (!json)
    return fail("cannot write " + dump + "/scales.json");
  std::fprintf(json, "{\"attn_scale\": %.9g, \"causal\": %s, \"grad_type\": \"%s\"", forward.scale,
               causal ? "true" : "false", gradType == e4m3 ? "f8E4M3FN" : "f8E5M2");
  for (int i = 0; i < COUNT_; ++i)
    std::fprintf(json, ", \"%s\": %.9g", names[i], scalars[i].value);
  std::fprintf(json, "}\n");
  std::fclose(json);
  return 0;
}
