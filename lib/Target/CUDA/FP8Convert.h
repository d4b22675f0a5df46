//===- FP8Convert.h - f32 <-> FP8 as integer operations ---------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// The GPU kernels' conversions between f32 and the OCP FP8 formats
// (f8E4M3FN, f8E5M2), written once over an abstract set of 32-bit integer
// operations: FP8Kernels.cpp instantiates them with arith ops (the kernel
// IR), test/Target/CUDA/FP8ConvertTest.cpp with plain uint32_t arithmetic,
// which it compares with the reference executor's FloatFormats.
//
// Why integer operations: MLIR 22 has no NVVM lowering of arith.truncf to
// FP8, and PTX's `cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32` needs sm_89 and
// leaves the NaN code it writes unspecified. These are round to nearest
// even, saturating (+-inf included), NaN to the canonical code with its
// sign: the executor's rounding (docs/Precision.md), bit for bit.
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_LIB_TARGET_CUDA_FP8CONVERT_H
#define TXOPT_LIB_TARGET_CUDA_FP8CONVERT_H

#include <cstdint>

namespace mlir::txopt::cuda {

/// Constants of one FP8 format.
struct FP8Params {
  uint32_t exponentBits, mantissaBits, bias;
  uint32_t maxCode; ///< the largest finite magnitude's code
  uint32_t nanCode; ///< the canonical NaN (positive)
  bool hasInfinity;
};
constexpr FP8Params kE4M3FN = {4, 3, 7, 0x7e, 0x7f, false};
constexpr FP8Params kE5M2 = {5, 2, 15, 0x7b, 0x7e, true};

/// The FP8 code (in the low 8 bits) of the f32 whose bits are |u|.
///
/// Ops provides V (a 32-bit unsigned value), C (a condition) and
/// c(uint32_t), add, sub, band, bor, shl, shr (logical), umin, ugt, uge, eq,
/// select(C, V, V).
template <class Ops>
typename Ops::V fp8FromF32Bits(Ops &o, typename Ops::V u, const FP8Params &p) {
  using V = typename Ops::V;
  const uint32_t shift = 23 - p.mantissaBits;
  V sign = o.band(o.shr(u, o.c(24)), o.c(0x80));
  V a = o.band(u, o.c(0x7fffffff));
  // Normal in the target: rebias the exponent and round the dropped
  // mantissa bits to nearest even; a carry moves into the exponent, and
  // anything past the largest finite value is clamped below.
  V t = o.sub(a, o.c((127 - p.bias) << 23));
  V odd = o.band(o.shr(t, o.c(shift)), o.c(1));
  V normal = o.shr(o.add(o.add(t, o.c((1u << (shift - 1)) - 1)), odd), o.c(shift));
  // Subnormal in the target: the significand (implicit bit included)
  // shifted right by s >= shift + 1 bits, rounded to nearest even. Tiny and
  // f32-subnormal inputs get s clamped to 31 and round to 0.
  V e32 = o.shr(a, o.c(23));
  V m = o.bor(o.band(a, o.c(0x7fffff)), o.c(0x800000));
  V s = o.umin(o.sub(o.c(128 - p.bias + shift), e32), o.c(31));
  V half = o.sub(o.shl(o.c(1), o.sub(s, o.c(1))), o.c(1));
  V subOdd = o.band(o.shr(m, s), o.c(1));
  V sub = o.shr(o.add(o.add(m, half), subOdd), s);
  V code = o.select(o.uge(a, o.c((128 - p.bias) << 23)), normal, sub);
  code = o.umin(code, o.c(p.maxCode));
  code = o.select(o.ugt(a, o.c(0x7f800000)), o.c(p.nanCode), code);
  return o.bor(code, sign);
}

/// The f32 bits of the FP8 code |code| (low 8 bits, upper bits zero):
/// exact, NaN codes to the f32 quiet NaN with the code's sign.
template <class Ops>
typename Ops::V fp8ToF32Bits(Ops &o, typename Ops::V code, const FP8Params &p) {
  using V = typename Ops::V;
  const uint32_t mb = p.mantissaBits;
  V sign = o.shl(o.band(code, o.c(0x80)), o.c(24));
  V mag = o.band(code, o.c(0x7f));
  V e = o.shr(mag, o.c(mb));
  V m = o.band(mag, o.c((1u << mb) - 1));
  V normal = o.bor(o.shl(o.add(e, o.c(127 - p.bias)), o.c(23)),
                   o.shl(m, o.c(23 - mb)));
  // Subnormal m * 2^(1 - bias - mb): its leading bit p = floor(log2 m)
  // (m < 8, so a few compares) becomes the implicit bit.
  V lead = o.c(0);
  for (uint32_t j = 1; j < mb; ++j)
    lead = o.add(lead, o.select(o.uge(m, o.c(1u << j)), o.c(1), o.c(0)));
  V subExp = o.add(lead, o.c(128 - p.bias - mb));
  V subMant = o.band(o.shl(m, o.sub(o.c(23), lead)), o.c(0x7fffff));
  V sub = o.select(o.eq(m, o.c(0)), o.c(0), o.bor(o.shl(subExp, o.c(23)), subMant));
  V bits = o.select(o.eq(e, o.c(0)), sub, normal);
  uint32_t top = 0x7f & ~((1u << mb) - 1); // S.111..1.00
  if (p.hasInfinity) {
    bits = o.select(o.eq(mag, o.c(top)), o.c(0x7f800000), bits);
    bits = o.select(o.ugt(mag, o.c(top)), o.c(0x7fc00000), bits);
  } else {
    bits = o.select(o.eq(mag, o.c(0x7f)), o.c(0x7fc00000), bits);
  }
  return o.bor(bits, sign);
}

} // namespace mlir::txopt::cuda

#endif // TXOPT_LIB_TARGET_CUDA_FP8CONVERT_H
