//===- FloatFormats.h - bit-exact reduced-precision rounding ----*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// Rounding of doubles to bf16, f16 and f32 (round to nearest, ties to even,
// IEEE 754 overflow to infinity and gradual underflow), and the bit encodings
// of bf16 and f16. The reference executor emulates mixed precision with
// these, so they must agree bit for bit with hardware conversions
// (`__float2bfloat16_rn`, `__double2half_rn`, ...) and with APFloat.
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

} // namespace mlir::txopt::reference

#endif // TXOPT_REFERENCE_FLOATFORMATS_H
