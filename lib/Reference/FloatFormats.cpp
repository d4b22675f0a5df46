//===- FloatFormats.cpp - bit-exact reduced-precision rounding ------------===//
//
// SPDX-License-Identifier: Apache-2.0
// Rounding works on the value, not on bit patterns: the quantum (ulp) at x's
// binade, or at the smallest normal binade for subnormals, is a power of two,
// so x / quantum is exact in double and std::nearbyint (in the default
// round-to-nearest-even mode) rounds it exactly once. FP8 reuses that
// rounding with an unbounded top exponent and applies its own overflow rule
// afterwards, because E4M3FN's largest binade stops short of its last code.
//
//===----------------------------------------------------------------------===//

#include "txopt/Reference/FloatFormats.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

using namespace mlir::txopt::reference;

/// 2^e as a double, for e in the normal range [-1022, 1023].
static double powerOfTwo(int e) {
  uint64_t bits = static_cast<uint64_t>(e + 1023) << 52;
  double value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

double mlir::txopt::reference::roundToFormat(double x, BinaryFormat format) {
  uint64_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  int biased = static_cast<int>((bits >> 52) & 0x7ff);
  if (biased == 0x7ff || x == 0.0) // NaN, infinity, +-0
    return x;
  // x's binade, read off the exponent field (double subnormals lie below
  // every format's smallest quantum and only need a binade below minExp).
  int unbiased = biased == 0 ? -1023 : biased - 1023;
  int quantumExp = std::max(unbiased, format.minExp) - (format.precision - 1);
  double rounded;
  if (quantumExp >= -1022 && quantumExp <= 1023 - 53) {
    // |x| < 2^precision quanta, so x + 1.5 * 2^52 quanta lies in the binade
    // whose ulp is one quantum: the addition rounds x to a multiple of the
    // quantum (to nearest, ties to even, once) and the subtraction is exact.
    // The copysign keeps the sign of a result that rounds to zero. (Valid
    // because nothing here is built with -ffast-math, which could fold
    // (x + c) - c to x, and x86-64 evaluates doubles in double.)
    double shifter = 1.5 * powerOfTwo(quantumExp + 52);
    rounded = std::copysign((x + shifter) - shifter, x);
  } else {
    double quantum = std::ldexp(1.0, quantumExp);
    rounded = std::nearbyint(x / quantum) * quantum;
  }
  // Anything that rounds to 2^(maxExp + 1) or beyond overflows.
  double overflow = format.maxExp < 1023
                        ? powerOfTwo(format.maxExp + 1)
                        : std::numeric_limits<double>::infinity();
  if (std::fabs(rounded) >= overflow)
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

//===----------------------------------------------------------------------===//
// FP8 (OCP E4M3FN and E5M2)
//===----------------------------------------------------------------------===//

double mlir::txopt::reference::roundToFloat8(double x, Float8Format format,
                                             bool saturate) {
  if (std::isnan(x))
    return x;
  double overflowed =
      saturate ? std::copysign(format.maxFinite, x)
               : std::copysign(format.hasInfinity
                                   ? std::numeric_limits<double>::infinity()
                                   : std::numeric_limits<double>::quiet_NaN(),
                               x);
  if (std::isinf(x))
    return overflowed;
  // Precision and subnormal spacing of the format, but no upper exponent
  // bound: rounding first and comparing with maxFinite afterwards makes the
  // tie at maxFinite + ulp/2 go the way CUDA's conversion sends it.
  BinaryFormat unbounded = {format.mantissaBits + 1, 1 - format.bias, 1023};
  double rounded = roundToFormat(x, unbounded);
  if (std::fabs(rounded) > format.maxFinite)
    return overflowed;
  return rounded;
}

/// The canonical quiet NaN code (without sign): all exponent and mantissa
/// bits in E4M3FN (its only NaN), the top mantissa bit in E5M2.
static uint8_t float8NaNBits(Float8Format format) {
  unsigned expMask = ((1u << format.exponentBits) - 1) << format.mantissaBits;
  if (!format.hasInfinity)
    return static_cast<uint8_t>(expMask | ((1u << format.mantissaBits) - 1));
  return static_cast<uint8_t>(expMask | (1u << (format.mantissaBits - 1)));
}

uint8_t mlir::txopt::reference::float8Bits(double x, Float8Format format,
                                           bool saturate) {
  uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  double r = roundToFloat8(x, format, saturate);
  if (std::isnan(r))
    return sign | float8NaNBits(format);
  unsigned expMask = ((1u << format.exponentBits) - 1) << format.mantissaBits;
  if (std::isinf(r))
    return static_cast<uint8_t>(sign | expMask);
  r = std::fabs(r);
  if (r == 0.0)
    return sign;
  int exp2;
  (void)std::frexp(r, &exp2);
  int unbiased = exp2 - 1;
  int minExp = 1 - format.bias;
  if (unbiased < minExp) {
    // Subnormal: r = mantissa * 2^(minExp - mantissaBits), exactly.
    auto mantissa =
        static_cast<unsigned>(std::ldexp(r, format.mantissaBits - minExp));
    return static_cast<uint8_t>(sign | mantissa);
  }
  auto mantissa = static_cast<unsigned>(
      std::ldexp(r, format.mantissaBits - unbiased) -
      std::ldexp(1.0, format.mantissaBits));
  auto biased = static_cast<unsigned>(unbiased + format.bias);
  return static_cast<uint8_t>(sign | (biased << format.mantissaBits) |
                              mantissa);
}

double mlir::txopt::reference::float8FromBits(uint8_t bits,
                                              Float8Format format) {
  double sign = (bits & 0x80) ? -1.0 : 1.0;
  unsigned expOnes = (1u << format.exponentBits) - 1;
  unsigned mantissaOnes = (1u << format.mantissaBits) - 1;
  unsigned biased = (bits >> format.mantissaBits) & expOnes;
  unsigned mantissa = bits & mantissaOnes;
  if (biased == expOnes) {
    if (format.hasInfinity)
      return mantissa
                 ? std::copysign(std::numeric_limits<double>::quiet_NaN(), sign)
                 : sign * std::numeric_limits<double>::infinity();
    // E4M3FN: only the all-ones mantissa is NaN; the rest of the binade is
    // finite (256 .. 448).
    if (mantissa == mantissaOnes)
      return std::copysign(std::numeric_limits<double>::quiet_NaN(), sign);
  }
  if (biased == 0)
    return sign * std::ldexp(double(mantissa),
                             1 - format.bias - format.mantissaBits);
  return sign * std::ldexp(double(mantissa + (1u << format.mantissaBits)),
                           int(biased) - format.bias - format.mantissaBits);
}
