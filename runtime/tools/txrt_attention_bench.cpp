//===- txrt_attention_bench.cpp - time and dump the runtime's fused attention ===//
//
// SPDX-License-Identifier: Apache-2.0
// Runs hal::Attention (cuDNN's SDPA, exactly what a step.txa's attention
// commands run) on random bf16 inputs of one shape, forward and backward:
//   txrt-attention-bench B H HKV T D [--causal] [--window W] [--iters N]
//                        [--dropout P] [--dump DIR]
// Prints one JSON line: median milliseconds of the forward and of forward +
// backward over N timed repetitions (after warm-up; CUDA events), and the
// TFLOP/s with the FLOP count of ANCHORS.md (4·B·H·T²·D forward, halved when
// causal; backward 2.5× the forward). With --dump, writes the inputs and
// outputs as f32 .npy files (bf16 values exactly) plus lse, so
// bench/attention/check_attention.py can compare them with PyTorch.
// With --dropout P the calls drop probabilities with cuDNN's mask, keyed as
// a step keys them (a device int64 key and a site seed); --dump then also
// writes what the checker needs to recover and judge that mask: the output
// of a second forward with the same key (o_again) and with the next key
// (o_key2), and the dropped probabilities themselves (pdrop, [B, H, T, T]),
// read off T/D forwards whose v is one block of the identity (T a multiple
// of D).
//
//===----------------------------------------------------------------------===//

#include "core/batch.h"
#include "core/dtype.h"
#include "core/npy.h"
#include "hal/cuda/cuda_hal.h"

#include "attention_tool_util.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <tuple>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace txrt;

namespace {

int fail(const std::string &message) {
  std::fprintf(stderr, "txrt-attention-bench: error: %s\n", message.c_str());
  return 1;
}

struct Tensor {
  std::vector<int64_t> shape;
  std::unique_ptr<hal::Buffer> buffer;
  size_t elements() const {
    size_t n = 1;
    for (int64_t d : shape) n *= static_cast<size_t>(d);
    return n;
  }
  hal::AttentionTensorSpec spec() const { return tools::contiguousSpec(shape, buffer->address()); }
};

/// --dump: |t| (bf16, or f32 when |f32|) as an f32 .npy file at |path|.
Status dumpTensor(hal::Stream &stream, const Tensor &t, bool f32, const std::string &path) {
  size_t count = t.elements();
  std::vector<uint8_t> raw(count * (f32 ? 4 : 2));
  TXRT_RETURN_IF_ERROR(stream.copyDeviceToHost(raw.data(), t.buffer->address(), raw.size()));
  std::vector<float> values(count);
  for (size_t i = 0; i < count; ++i)
    values[i] = f32 ? reinterpret_cast<float *>(raw.data())[i]
                    : static_cast<float>(bf16ToDouble(reinterpret_cast<uint16_t *>(raw.data())[i]));
  return writeNpyFile(path, DType::F32, t.shape, values.data(), values.size());
}

/// --dropout --dump: o of the same forward again (o_again), of the forward
/// with the next key (o_key2), and the dropped probabilities (pdrop,
/// [B, H, T, T]): block j of v set to the identity (rows j*D.. j*D+D-1,
/// zero elsewhere) makes o the columns j*D.. of dropout(P) / (1 - p).
template <typename WriteKey>
Status dumpDropout(hal::Device &device, hal::Stream &stream, hal::Attention &attention,
                   const hal::AttentionSpec &forward, hal::DevicePtr workspace,
                   WriteKey writeKey, int64_t key, Tensor &o, const std::string &dump) {
  std::unique_ptr<hal::AttentionPlan> plan;
  TXRT_RETURN_IF_ERROR(attention.prepare(forward, plan));
  TXRT_RETURN_IF_ERROR(attention.run(*plan, workspace, stream));
  TXRT_RETURN_IF_ERROR(dumpTensor(stream, o, false, dump + "/o_again.npy"));
  TXRT_RETURN_IF_ERROR(writeKey(key + 1));
  TXRT_RETURN_IF_ERROR(attention.run(*plan, workspace, stream));
  TXRT_RETURN_IF_ERROR(dumpTensor(stream, o, false, dump + "/o_key2.npy"));
  TXRT_RETURN_IF_ERROR(writeKey(key));

  const int64_t B = forward.q.dims[0], H = forward.q.dims[1], T = forward.q.dims[2],
                D = forward.q.dims[3], HKV = forward.k.dims[1];
  Tensor block;
  block.shape = {B, HKV, T, D};
  TXRT_RETURN_IF_ERROR(device.allocate(block.elements() * 2, block.buffer));
  hal::AttentionSpec identity = forward;
  identity.v = block.spec();
  TXRT_RETURN_IF_ERROR(attention.prepare(identity, plan));
  std::vector<float> pdrop(static_cast<size_t>(B * H * T * T));
  std::vector<uint16_t> host(block.elements()), out(static_cast<size_t>(B * H * T * D));
  const uint16_t one = 0x3f80; // bf16 1.0
  for (int64_t j = 0; j < T / D; ++j) {
    std::fill(host.begin(), host.end(), 0);
    for (int64_t bh = 0; bh < B * HKV; ++bh)
      for (int64_t d = 0; d < D; ++d)
        host[static_cast<size_t>((bh * T + j * D + d) * D + d)] = one;
    TXRT_RETURN_IF_ERROR(
        stream.copyHostToDevice(block.buffer->address(), host.data(), host.size() * 2));
    TXRT_RETURN_IF_ERROR(attention.run(*plan, workspace, stream));
    TXRT_RETURN_IF_ERROR(stream.copyDeviceToHost(out.data(), o.buffer->address(), out.size() * 2));
    for (int64_t bh = 0; bh < B * H; ++bh)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t d = 0; d < D; ++d)
          pdrop[static_cast<size_t>((bh * T + t) * T + j * D + d)] = static_cast<float>(
              bf16ToDouble(out[static_cast<size_t>((bh * T + t) * D + d)]));
  }
  std::vector<int64_t> shape = {B, H, T, T};
  return writeNpyFile(dump + "/pdrop.npy", DType::F32, shape, pdrop.data(), pdrop.size());
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 6)
    return fail("usage: txrt-attention-bench B H HKV T D [--causal] [--window W] "
                "[--iters N] [--dropout P] [--dump DIR]");
  int64_t B = std::atoll(argv[1]), H = std::atoll(argv[2]), HKV = std::atoll(argv[3]),
          T = std::atoll(argv[4]), D = std::atoll(argv[5]);
  bool causal = false;
  int64_t window = 0;
  int iters = 20;
  double dropout = 0.0;
  std::string dump;
  for (int i = 6; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--causal") causal = true;
    else if (a == "--window" && i + 1 < argc) window = std::atoll(argv[++i]);
    else if (a == "--iters" && i + 1 < argc) iters = std::atoi(argv[++i]);
    else if (a == "--dump" && i + 1 < argc) dump = argv[++i];
    else if (a == "--dropout" && i + 1 < argc) dropout = std::atof(argv[++i]);
    else return fail("unknown argument '" + a + "'");
  }
  if (B <= 0 || H <= 0 || HKV <= 0 || H % HKV != 0 || T <= 0 || D <= 0 || iters <= 0)
    return fail("bad shape: need positive B H HKV T D with HKV dividing H");
  if (!(dropout >= 0.0 && dropout < 1.0))
    return fail("--dropout must be in [0, 1)");
  if (dropout > 0.0 && !dump.empty() && T % D != 0)
    return fail("--dropout with --dump reads the mask through identity blocks of v: "
                "T must be a multiple of D");

  std::unique_ptr<hal::Device> device;
  if (Status s = cuda::createCudaDevice(0, device); !s.ok())
    return fail(s.message());
  std::unique_ptr<hal::Stream> stream;
  std::unique_ptr<hal::Attention> attention;
  if (Status s = device->createStream(stream); !s.ok()) return fail(s.message());
  if (Status s = device->createAttention(attention); !s.ok()) return fail(s.message());

  auto make = [&](std::vector<int64_t> shape, size_t elementBytes, Tensor &t) {
    t.shape = std::move(shape);
    return device->allocate(t.elements() * elementBytes, t.buffer);
  };
  Tensor q, k, v, o, lse, dO, dQ, dK, dV;
  for (auto [t, shape, bytes] :
       {std::tuple{&q, std::vector<int64_t>{B, H, T, D}, 2}, {&k, {B, HKV, T, D}, 2},
        {&v, {B, HKV, T, D}, 2}, {&o, {B, H, T, D}, 2}, {&lse, {B, H, T, 1}, 4},
        {&dO, {B, H, T, D}, 2}, {&dQ, {B, H, T, D}, 2}, {&dK, {B, HKV, T, D}, 2},
        {&dV, {B, HKV, T, D}, 2}})
    if (Status s = make(shape, bytes, *t); !s.ok())
      return fail(s.message());
  // N(0, 1) bf16 inputs, seeded as txrun seeds a batch (core/batch.h).
  unsigned argIndex = 0;
  for (Tensor *t : {&q, &k, &v, &dO}) {
    std::vector<uint8_t> bytes =
        randomArgument(DType::BF16, t->elements(), /*seed=*/1, argIndex++, 0);
    if (Status s = stream->copyHostToDevice(t->buffer->address(), bytes.data(), bytes.size());
        !s.ok())
      return fail(s.message());
  }

  // The dropout key and the site's Philox offset as a step holds them:
  // int64s in device memory (the offset as txopt derives it from seed 5).
  const int64_t key = (int64_t{7} << 32) + 3, offset = int64_t{5} << 32;
  std::unique_ptr<hal::Buffer> keyBuffer, offsetBuffer;
  auto writeKey = [&](int64_t value) {
    return stream->copyHostToDevice(keyBuffer->address(), &value, sizeof value);
  };
  if (Status s = device->allocate(sizeof key, keyBuffer); !s.ok()) return fail(s.message());
  if (Status s = device->allocate(sizeof offset, offsetBuffer); !s.ok())
    return fail(s.message());
  if (Status s = writeKey(key); !s.ok()) return fail(s.message());
  if (Status s = stream->copyHostToDevice(offsetBuffer->address(), &offset, sizeof offset);
      !s.ok())
    return fail(s.message());

  hal::AttentionSpec forward;
  forward.dtype = fb::DType::BF16;
  forward.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)));
  forward.causal = causal || window > 0;
  forward.window = window;
  forward.q = q.spec(), forward.k = k.spec(), forward.v = v.spec(), forward.o = o.spec();
  forward.lse = lse.buffer->address();
  forward.dropout = static_cast<float>(dropout);
  forward.dropoutKey = keyBuffer->address();
  forward.dropoutOffset = offsetBuffer->address();
  hal::AttentionSpec backward = forward;
  backward.backward = true;
  backward.gradO = dO.spec(), backward.gradQ = dQ.spec();
  backward.gradK = dK.spec(), backward.gradV = dV.spec();
  std::unique_ptr<hal::AttentionPlan> fwdPlan, bwdPlan;
  if (Status s = attention->prepare(forward, fwdPlan); !s.ok())
    return fail("forward: " + s.message());
  if (Status s = attention->prepare(backward, bwdPlan); !s.ok())
    return fail("backward: " + s.message());
  std::unique_ptr<hal::Buffer> workspace;
  if (Status s = device->allocate(std::max(fwdPlan->workspaceBytes(), bwdPlan->workspaceBytes()),
                                  workspace);
      !s.ok())
    return fail(s.message());

  auto timeMs = [&](bool withBackward, double &median) {
    return tools::medianMs(*device, *stream, *attention, *fwdPlan, withBackward ? bwdPlan.get() : nullptr,
                    workspace->address(), iters, median);
  };
  double fwdMs = 0, bothMs = 0;
  if (Status s = timeMs(false, fwdMs); !s.ok()) return fail(s.message());
  if (Status s = timeMs(true, bothMs); !s.ok()) return fail(s.message());
  double flops = 4.0 * B * H * static_cast<double>(T) * T * D * (causal || window ? 0.5 : 1.0);
  std::printf("{\"B\": %lld, \"H\": %lld, \"HKV\": %lld, \"T\": %lld, \"D\": %lld, "
              "\"causal\": %s, \"window\": %lld, \"dropout\": %g, \"fwd_ms\": %.4f, "
              "\"fwd_bwd_ms\": %.4f, "
              "\"fwd_tflops\": %.1f, \"fwd_bwd_tflops\": %.1f}\n",
              (long long)B, (long long)H, (long long)HKV, (long long)T, (long long)D,
              causal ? "true" : "false", (long long)window, dropout, fwdMs, bothMs,
              flops / fwdMs / 1e9, 3.5 * flops / bothMs / 1e9);

  if (!dump.empty()) {
    // Outputs of one more forward + backward, then everything as f32.
    if (Status s = attention->run(*fwdPlan, workspace->address(), *stream); !s.ok())
      return fail(s.message());
    if (Status s = attention->run(*bwdPlan, workspace->address(), *stream); !s.ok())
      return fail(s.message());
    struct Named { const char *name; Tensor *t; bool f32; };
    for (Named n : {Named{"q", &q, false}, {"k", &k, false}, {"v", &v, false},
                    {"do", &dO, false}, {"o", &o, false}, {"lse", &lse, true},
                    {"dq", &dQ, false}, {"dk", &dK, false}, {"dv", &dV, false}})
      if (Status s = dumpTensor(*stream, *n.t, n.f32, dump + "/" + n.name + ".npy"); !s.ok())
        return fail(s.message());
    if (dropout > 0.0)
      if (Status s = dumpDropout(*device, *stream, *attention, forward, workspace->address(),
                                 [&](int64_t value) { return writeKey(value); }, key, o, dump);
          !s.ok())
        return fail(s.message());
  }
  return 0;
}
