//===- txrt_gemm_bench.cpp - time the runtime's GEMM at one shape ------------===//
//
// SPDX-License-Identifier: Apache-2.0
// Runs hal::Blas (cuBLASLt, with exactly the descriptors a step.txa's GEMM
// commands get) on seeded N(0, 1) inputs of one shape:
//   txrt-gemm-bench M N K [--type fp8|bf16] [--fast-accum] [--tune]
//                   [--iters N]
// Row-major D[M, N] = A[M, K] * B[K, N] with B stored [N, K] (a Linear
// layer's weight; the TN form cuBLASLt's FP8 kernels take), D in bf16.
// FP8: A and B E4M3 with scale inverses 1 (device scalars, as a step
// passes them); --fast-accum sets cuBLASLt's fast accumulator. --tune
// times every algorithm the heuristic offers and keeps the fastest (txrun
// --tune-gemms); the default is the heuristic's first choice, as txrun
// runs. Prints one JSON line: the median milliseconds of one GEMM over N
// timed samples (after 5 warm-up ones), each sample 10 GEMMs back to back
// between two CUDA events (so the host's launch time, which an event pair
// around one short GEMM would count, hides behind the GPU's work; the
// peers are timed the same way), and TFLOP/s (2·M·N·K).
//
//===----------------------------------------------------------------------===//

#include "core/batch.h"
#include "core/dtype.h"
#include "hal/cuda/cuda_hal.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

using namespace txrt;

namespace {

int fail(const std::string &message) {
  std::fprintf(stderr, "txrt-gemm-bench: error: %s\n", message.c_str());
  return 1;
}

bool parsePositive(const char *text, int64_t &out) {
  char *end = nullptr;
  long long v = std::strtoll(text, &end, 10);
  if (!end || *end || v <= 0)
    return false;
  out = v;
  return true;
}

} // namespace

int main(int argc, char **argv) {
  std::vector<int64_t> dims;
  std::string type = "fp8";
  bool fastAccum = false, tune = false;
  int64_t iters = 50;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--type" && i + 1 < argc) {
      type = argv[++i];
    } else if (arg == "--fast-accum") {
      fastAccum = true;
    } else if (arg == "--tune") {
      tune = true;
    } else if (arg == "--iters" && i + 1 < argc) {
      if (!parsePositive(argv[++i], iters))
        return fail("--iters needs a positive integer");
    } else {
      int64_t v = 0;
      if (!parsePositive(argv[i], v))
        return fail("unexpected argument '" + arg +
                    "' (usage: txrt-gemm-bench M N K [--type fp8|bf16] [--fast-accum] "
                    "[--tune] [--iters N])");
      dims.push_back(v);
    }
  }
  if (dims.size() != 3)
    return fail("expected M N K");
  if (type != "fp8" && type != "bf16")
    return fail("--type must be fp8 or bf16, got '" + type + "'");
  if (fastAccum && type != "fp8")
    return fail("--fast-accum is an FP8 accumulator mode");
  const int64_t M = dims[0], N = dims[1], K = dims[2];
  const bool fp8 = type == "fp8";
  const DType operand = fp8 ? DType::F8E4M3FN : DType::BF16;

  std::unique_ptr<hal::Device> device;
  if (Status s = cuda::createCudaDevice(0, device); !s.ok())
    return fail(s.message());
  std::unique_ptr<hal::Stream> stream;
  std::unique_ptr<hal::Blas> blas;
  if (Status s = device->createStream(stream); !s.ok()) return fail(s.message());
  if (Status s = device->createBlas(blas); !s.ok()) return fail(s.message());

  std::unique_ptr<hal::Buffer> a, b, d, scale;
  const size_t elementBytes = dtypeSize(operand);
  for (auto [buffer, bytes] : {std::pair{&a, size_t(M * K) * elementBytes},
                               {&b, size_t(N * K) * elementBytes}, {&d, size_t(M * N) * 2},
                               {&scale, size_t{4}}})
    if (Status s = device->allocate(bytes, *buffer); !s.ok())
      return fail(s.message());
  unsigned argIndex = 0;
  for (auto [buffer, elements] : {std::pair{&a, M * K}, {&b, N * K}}) {
    std::vector<uint8_t> bytes = randomArgument(operand, static_cast<uint64_t>(elements),
                                                /*seed=*/1, argIndex++, 0);
    if (Status s = stream->copyHostToDevice((*buffer)->address(), bytes.data(), bytes.size());
        !s.ok())
      return fail(s.message());
  }
  const float one = 1.0f;
  if (Status s = stream->copyHostToDevice(scale->address(), &one, sizeof one); !s.ok())
    return fail(s.message());

  // Column-major, as the compiler writes a row-major GEMM: cuBLASLt's A is
  // the weight [N, K] read transposed (m = N), its B the activations
  // [M, K] (n = M), D [N, M] column-major = [M, N] row-major.
  hal::GemmSpec spec;
  spec.m = static_cast<uint64_t>(N);
  spec.n = static_cast<uint64_t>(M);
  spec.k = static_cast<uint64_t>(K);
  spec.transA = true;
  spec.transB = false;
  spec.lda = spec.ldb = static_cast<uint64_t>(K);
  spec.ldd = static_cast<uint64_t>(N);
  spec.aType = spec.bType = operand;
  spec.dType = DType::BF16;
  spec.a = b->address();
  spec.b = a->address();
  spec.d = d->address();
  if (fp8) {
    spec.aScale = spec.bScale = scale->address();
    spec.fastAccum = fastAccum;
  }
  std::unique_ptr<hal::GemmPlan> plan;
  if (Status s = blas->prepare(spec, plan); !s.ok())
    return fail(s.message());
  hal::GemmTuning tally;
  if (tune)
    if (Status s = blas->tune(*plan, *stream, tally); !s.ok())
      return fail(s.message());

  std::unique_ptr<hal::Event> start, end;
  if (Status s = device->createEvent(start); !s.ok()) return fail(s.message());
  if (Status s = device->createEvent(end); !s.ok()) return fail(s.message());
  constexpr int kPerSample = 10;
  std::vector<float> times;
  for (int64_t i = 0; i < iters + 5; ++i) {
    float ms = 0;
    Status s = stream->record(*start);
    for (int r = 0; r < kPerSample && s.ok(); ++r)
      s = blas->run(*plan, *stream);
    if (s.ok()) s = stream->record(*end);
    if (s.ok()) s = stream->synchronize();
    if (s.ok()) s = device->elapsedMs(*start, *end, ms);
    if (!s.ok())
      return fail(s.message());
    if (i >= 5)
      times.push_back(ms / kPerSample);
  }
  std::sort(times.begin(), times.end());
  double median = times[times.size() / 2];
  double tflops = 2.0 * double(M) * double(N) * double(K) / (median * 1e-3) / 1e12;
  std::printf("{\"m\": %lld, \"n\": %lld, \"k\": %lld, \"type\": \"%s\", \"fast_accum\": %s, "
              "\"algorithm\": \"%s\", \"candidates\": %u, \"ms\": %.5f, \"tflops\": %.1f}\n",
              static_cast<long long>(M), static_cast<long long>(N), static_cast<long long>(K),
              type.c_str(), fastAccum ? "true" : "false", tune ? "tuned" : "first choice",
              tally.candidates, median, tflops);
  return 0;
}
