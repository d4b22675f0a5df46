//===- FloatFormats.h - bit-exact reduced-precision rounding ----*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// Rounding of doubles to bf16, f16 and f32 (round to nearest, ties to even,
// IEEE 754 overflow to infinity and gradual underflow) and to the OCP FP8
// formats E4M3FN and E5M2 (saturating by default), and the bit encodings of
// all four 8- and 16-bit formats. The reference executor emulates mixed
// precision with these, so they must agree bit for bit with hardware
// conversions (`__float2bfloat16_rn`, `__double2half_rn`,
// `__nv_cvt_float_to_fp8(..., __NV_SATFINITE, ...)`) and with APFloat
// (test/Reference/float-formats.test checks that).
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_REFERENCE_FLOATFORMATS_H
#define TXOPT_REFERENCE_FLOATFORMATS_H

#include <cstdint>

namespace mlir::txopt::reference {

/// Parameters of a binary IEEE-style format with infinities.
struct BinaryFormat {
  int precision; ///< significand bits, the implicit bit included
  int minExp;    ///< exponent of the smallest normal number
  int maxExp;    ///< exponent of the largest finite number
};

constexpr BinaryFormat kBFloat16 = {8, -126, 127};
constexpr BinaryFormat kFloat16 = {11, -14, 15};
constexpr BinaryFormat kFloat32 = {24, -126, 127};

/// Rounds |x| to the nearest value of |format| (ties to even), with one
/// rounding directly from double (never through an intermediate format).
/// Values at or above the overflow threshold become +-infinity; NaN stays
/// NaN; the sign of zero is kept.
double roundToFormat(double x, BinaryFormat format);

inline double roundToBFloat16(double x) { return roundToFormat(x, kBFloat16); }
inline double roundToFloat16(double x) { return roundToFormat(x, kFloat16); }
inline double roundToFloat32(double x) {
  return static_cast<double>(static_cast<float>(x));
}

/// Bit encodings (round to nearest even from double; NaN -> quiet NaN with
/// the input's sign).
uint16_t bfloat16Bits(double x);
uint16_t float16Bits(double x);
/// Exact decodings.
double bfloat16FromBits(uint16_t bits);
double float16FromBits(uint16_t bits);

/// Parameters of an OCP 8-bit float format (MLIR's f8E4M3FN and f8E5M2).
/// E4M3FN has no infinities and one NaN per sign (S.1111.111), so its top
/// binade holds 256..448; E5M2 is IEEE-like (S.11111.00 is infinity).
struct Float8Format {
  int exponentBits;
  int mantissaBits; ///< stored significand bits (no implicit bit)
  int bias;
  bool hasInfinity;
  double maxFinite;
};

constexpr Float8Format kFloat8E4M3FN = {4, 3, 7, false, 448.0};
constexpr Float8Format kFloat8E5M2 = {5, 2, 15, true, 57344.0};

/// Rounds |x| to |format|, ties to even, with one rounding from double.
/// Saturating (the default; what TE, cuBLASLt and `cvt.rn.satfinite` do):
/// every finite value that rounds past maxFinite, and +-infinity, becomes
/// +-maxFinite. Non-saturating (IEEE, and APFloat's behaviour): such values
/// become +-infinity in E5M2 and NaN in E4M3FN, which has no infinity.
/// Either way NaN stays NaN, the sign of zero is kept, and the rounding
/// decision treats the pattern past maxFinite as a value (464 ties to 448 in
/// E4M3FN because 480 would be odd; 61440 ties to 65536, an overflow, in
/// E5M2), exactly as `__nv_cvt_double_to_fp8` does.
double roundToFloat8(double x, Float8Format format, bool saturate = true);

/// The FP8 code of |x| after roundToFloat8 (same |saturate| meaning). NaN
/// encodes as the canonical quiet NaN with the input's sign: S.1111.111 in
/// E4M3FN, S.11111.10 in E5M2.
uint8_t float8Bits(double x, Float8Format format, bool saturate = true);

/// Exact decoding of every code (NaN codes give a NaN with the code's sign).
double float8FromBits(uint8_t bits, Float8Format format);

} // namespace mlir::txopt::reference

#endif // TXOPT_REFERENCE_FLOATFORMATS_H
