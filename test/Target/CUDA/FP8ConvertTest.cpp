//===- FP8ConvertTest.cpp - GPU FP8 conversions vs the executor -----------===//
//
// SPDX-License-Identifier: Apache-2.0
// Runs the integer f32 <-> FP8 conversions the GPU kernels are built from
// (lib/Target/CUDA/FP8Convert.h, the same template the kernel IR is emitted
// from) on the CPU and compares them with the reference executor's
// FloatFormats bit for bit: every FP8 code decoded, and f32 inputs covering
// every rounding boundary (each of the 65536 upper halves with low halves
// at and around 0 and 0x8000, plus random patterns) encoded.
//
//===----------------------------------------------------------------------===//

#include "FP8Convert.h"

#include "txopt/Reference/FloatFormats.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>

using namespace mlir::txopt;

namespace {

/// FP8Convert.h's operations on plain integers.
struct HostOps {
  using V = uint32_t;
  using C = bool;
  V c(uint32_t v) { return v; }
  V add(V a, V b) { return a + b; }
  V sub(V a, V b) { return a - b; }
  V band(V a, V b) { return a & b; }
  V bor(V a, V b) { return a | b; }
  V shl(V a, V b) { return b >= 32 ? 0 : a << b; }
  V shr(V a, V b) { return b >= 32 ? 0 : a >> b; }
  V umin(V a, V b) { return a < b ? a : b; }
  C ugt(V a, V b) { return a > b; }
  C uge(V a, V b) { return a >= b; }
  C eq(V a, V b) { return a == b; }
  V select(C c, V a, V b) { return c ? a : b; }
};

uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

float floatOf(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

int check(const char *name, const cuda::FP8Params &params,
          const reference::Float8Format &format) {
  HostOps ops;
  int failures = 0;
  for (uint32_t code = 0; code < 256; ++code) {
    float got = floatOf(cuda::fp8ToF32Bits(ops, code, params));
    double want = reference::float8FromBits(static_cast<uint8_t>(code), format);
    bool same = std::isnan(want) ? std::isnan(got) && std::signbit(got) == std::signbit(want)
                                 : bitsOf(got) == bitsOf(static_cast<float>(want));
    if (!same && failures++ < 10)
      std::printf("%s decode 0x%02x: got %a, want %a\n", name, code, got, want);
  }
  uint64_t encoded = 0;
  auto encode = [&](uint32_t u) {
    ++encoded;
    uint32_t got = cuda::fp8FromF32Bits(ops, u, params);
    uint32_t want = reference::float8Bits(floatOf(u), format);
    if (got != want && failures++ < 10)
      std::printf("%s encode %a (0x%08x): got 0x%02x, want 0x%02x\n", name,
                  floatOf(u), u, got, want);
  };
  static const uint32_t lows[] = {0, 1, 2, 0x7fff, 0x8000, 0x8001, 0xfffe, 0xffff};
  for (uint32_t high = 0; high < 0x10000; ++high)
    for (uint32_t low : lows)
      encode(high << 16 | low);
  std::mt19937 rng(42);
  for (int i = 0; i < 4000000; ++i)
    encode(rng());
  std::printf("%s: 256 codes decoded, %llu f32 encoded, %d mismatches\n", name,
              static_cast<unsigned long long>(encoded), failures);
  return failures;
}

} // namespace

int main() {
  int failures = check("f8E4M3FN", cuda::kE4M3FN, reference::kFloat8E4M3FN) +
                 check("f8E5M2", cuda::kE5M2, reference::kFloat8E5M2);
  return failures ? 1 : 0;
}
