//===- FloatFormats.cpp - bit-exact reduced-precision rounding ------------===//
//
// SPDX-License-Identifier: Apache-2.0
// Rounding works on the value, not on bit patterns: the quantum (ulp) at x's
// binade, or at the smallest normal binade for subnormals, is a power of two,
// so x / quantum is exact in double and std::nearbyint (in the default
// round-to-nearest-even mode) rounds it exactly once.
//
//===----------------------------------------------------------------------===//

#include "txopt/Reference/FloatFormats.h"

#include <cmath>
#include <cstring>
#include <limits>

using namespace mlir::txopt::reference;

double mlir::txopt::reference::roundToFormat(double x, BinaryFormat format) {
  if (std::isnan(x) || std::isinf(x) || x == 0.0)
    return x;
  int exp2;
  (void)std::frexp(x, &exp2); // |x| = m * 2^exp2, m in [0.5, 1)
  int unbiased = exp2 - 1;    // |x| in [2^unbiased, 2^(unbiased + 1))
  int quantumExp = std::max(unbiased, format.minExp) - (format.precision - 1);
  double quantum = std::ldexp(1.0, quantumExp);
  double rounded = std::nearbyint(x / quantum) * quantum;
  // Anything that rounds to 2^(maxExp + 1) or beyond overflows.
  if (std::fabs(rounded) >= std::ldexp(1.0, format.maxExp + 1))
    return std::copysign(std::numeric_limits<double>::infinity(), x);
  return rounded;
}

/// Encodes an already rounded value of a format with |mantissaBits| stored
/// significand bits and exponent bias |bias| into sign/exponent/mantissa.
static uint16_t encode(double x, BinaryFormat format, int exponentBits) {
  int mantissaBits = format.precision - 1;
  int bias = format.maxExp;
  uint16_t sign = std::signbit(x) ? uint16_t(1u << 15) : uint16_t(0);
  uint16_t expMask = uint16_t(((1u << exponentBits) - 1) << mantissaBits);
  if (std::isnan(x))
    return sign | expMask | uint16_t(1u << (mantissaBits - 1));
  double r = std::fabs(roundToFormat(x, format));
  if (std::isinf(r))
    return sign | expMask;
  if (r == 0.0)
    return sign;
  int exp2;
  (void)std::frexp(r, &exp2);
  int unbiased = exp2 - 1;
  if (unbiased < format.minExp) {
    // Subnormal: r = mantissa * 2^(minExp - mantissaBits), exactly.
    auto mantissa = static_cast<uint16_t>(
        std::ldexp(r, mantissaBits - format.minExp));
    return sign | mantissa;
  }
  auto mantissa = static_cast<uint16_t>(
      std::ldexp(r, mantissaBits - unbiased) - std::ldexp(1.0, mantissaBits));
  auto biased = static_cast<uint16_t>(unbiased + bias);
  return sign | uint16_t(biased << mantissaBits) | mantissa;
}

static double decode(uint16_t bits, BinaryFormat format, int exponentBits) {
  int mantissaBits = format.precision - 1;
  int bias = format.maxExp;
  double sign = (bits >> 15) ? -1.0 : 1.0;
  unsigned biased = (bits >> mantissaBits) & ((1u << exponentBits) - 1);
  unsigned mantissa = bits & ((1u << mantissaBits) - 1);
  if (biased == (1u << exponentBits) - 1)
    return mantissa ? std::copysign(std::numeric_limits<double>::quiet_NaN(), sign)
                    : sign * std::numeric_limits<double>::infinity();
  if (biased == 0)
    return sign * std::ldexp(double(mantissa), format.minExp - mantissaBits);
  return sign * std::ldexp(double(mantissa + (1u << mantissaBits)),
                           int(biased) - bias - mantissaBits);
}

uint16_t mlir::txopt::reference::bfloat16Bits(double x) {
  return encode(x, kBFloat16, 8);
}
uint16_t mlir::txopt::reference::float16Bits(double x) {
  return encode(x, kFloat16, 5);
}
double mlir::txopt::reference::bfloat16FromBits(uint16_t bits) {
  return decode(bits, kBFloat16, 8);
}
double mlir::txopt::reference::float16FromBits(uint16_t bits) {
  return decode(bits, kFloat16, 5);
}
