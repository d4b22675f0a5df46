//===- dtype.cpp - element types of artifact tensors ----------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// Rounding works on values: the quantum at x's binade (or at the smallest
// normal binade for subnormals) is a power of two, so x / quantum is exact in
// double and std::nearbyint rounds it once, ties to even.
//
//===----------------------------------------------------------------------===//

#include "core/dtype.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace txrt {
namespace {

/// A binary floating-point format with an implicit leading bit.
struct Format {
  int exponentBits;
  int mantissaBits;
  bool hasInfinity;   // IEEE-like; false: E4M3FN (all-ones code is NaN)
  double maxFinite;
};

constexpr Format kBF16{8, 7, true, 0};
constexpr Format kF16{5, 10, true, 0};
constexpr Format kE4M3FN{4, 3, false, 448.0};
constexpr Format kE5M2{5, 2, true, 0};

int biasOf(const Format &f) { return (1 << (f.exponentBits - 1)) - 1; }

/// Encodes |x| in |f|, rounding once to nearest-even. The sign bit sits just
/// above the exponent field.
uint32_t encode(double x, const Format &f) {
  const int m = f.mantissaBits;
  const int bias = biasOf(f);
  const int minExp = 1 - bias;
  const uint32_t sign = std::signbit(x) ? (1u << (f.exponentBits + m)) : 0u;
  const uint32_t expOnes = (1u << f.exponentBits) - 1;
  const uint32_t nan = f.hasInfinity
                           ? (expOnes << m) | (1u << (m - 1))
                           : (expOnes << m) | ((1u << m) - 1);
  const uint32_t inf = f.hasInfinity ? (expOnes << m) : nan;
  if (std::isnan(x))
    return sign | nan;
  if (std::isinf(x))
    return sign | inf;
  double a = std::fabs(x);
  if (a == 0.0)
    return sign;
  int e2;
  (void)std::frexp(a, &e2);
  int unbiased = e2 - 1; // a in [2^unbiased, 2^(unbiased + 1))
  int quantumExp = (unbiased < minExp ? minExp : unbiased) - m;
  double r = std::nearbyint(std::ldexp(a, -quantumExp)); // a / quantum
  if (unbiased < minExp) {
    // Subnormal; r == 2^m is exactly the smallest normal, whose code is r.
    return sign | static_cast<uint32_t>(r);
  }
  if (r >= std::ldexp(1.0, m + 1)) { // rounding carried into the next binade
    r = std::ldexp(r, -1);
    ++unbiased;
  }
  double value = std::ldexp(r, quantumExp);
  int maxExp = f.hasInfinity ? bias : bias + 1; // E4M3FN uses the top binade
  if (unbiased > maxExp || (!f.hasInfinity && value > f.maxFinite))
    return sign | inf;
  uint32_t mantissa = static_cast<uint32_t>(r) - (1u << m);
  return sign | (static_cast<uint32_t>(unbiased + bias) << m) | mantissa;
}

double decode(uint32_t bits, const Format &f) {
  const int m = f.mantissaBits;
  const int bias = biasOf(f);
  const uint32_t expOnes = (1u << f.exponentBits) - 1;
  double sign = (bits >> (f.exponentBits + m)) & 1u ? -1.0 : 1.0;
  uint32_t biased = (bits >> m) & expOnes;
  uint32_t mantissa = bits & ((1u << m) - 1);
  if (biased == expOnes) {
    if (f.hasInfinity)
      return mantissa ? std::numeric_limits<double>::quiet_NaN()
                      : sign * std::numeric_limits<double>::infinity();
    if (mantissa == (1u << m) - 1)
      return std::numeric_limits<double>::quiet_NaN();
  }
  if (biased == 0)
    return sign * std::ldexp(double(mantissa), 1 - bias - m);
  return sign * std::ldexp(double(mantissa + (1u << m)), int(biased) - bias - m);
}

template <typename T> T loadRaw(const void *data, size_t index) {
  T value;
  std::memcpy(&value, static_cast<const unsigned char *>(data) + index * sizeof(T),
              sizeof(T));
  return value;
}

template <typename T> void storeRaw(void *data, size_t index, T value) {
  std::memcpy(static_cast<unsigned char *>(data) + index * sizeof(T), &value,
              sizeof(T));
}

} // namespace

bool isKnownDType(DType type) {
  return static_cast<unsigned>(type) <= static_cast<unsigned>(DType::MAX);
}

size_t dtypeSize(DType type) {
  switch (type) {
  case DType::F64:
  case DType::I64:
    return 8;
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::F16:
  case DType::BF16:
    return 2;
  case DType::F8E4M3FN:
  case DType::F8E5M2:
  case DType::I8:
  case DType::I1:
    return 1;
  }
  return 0;
}

const char *dtypeName(DType type) {
  switch (type) {
  case DType::F32: return "f32";
  case DType::F16: return "f16";
  case DType::BF16: return "bf16";
  case DType::F8E4M3FN: return "f8e4m3fn";
  case DType::F8E5M2: return "f8e5m2";
  case DType::F64: return "f64";
  case DType::I64: return "i64";
  case DType::I32: return "i32";
  case DType::I8: return "i8";
  case DType::I1: return "i1";
  }
  return "unknown dtype";
}

bool isFloatDType(DType type) {
  switch (type) {
  case DType::F32:
  case DType::F16:
  case DType::BF16:
  case DType::F8E4M3FN:
  case DType::F8E5M2:
  case DType::F64:
    return true;
  default:
    return false;
  }
}

uint16_t bf16FromDouble(double x) { return static_cast<uint16_t>(encode(x, kBF16)); }
uint16_t f16FromDouble(double x) { return static_cast<uint16_t>(encode(x, kF16)); }
double bf16ToDouble(uint16_t bits) { return decode(bits, kBF16); }
double f16ToDouble(uint16_t bits) { return decode(bits, kF16); }
uint8_t f8e4m3fnFromDouble(double x) { return static_cast<uint8_t>(encode(x, kE4M3FN)); }
uint8_t f8e5m2FromDouble(double x) { return static_cast<uint8_t>(encode(x, kE5M2)); }
double f8e4m3fnToDouble(uint8_t bits) { return decode(bits, kE4M3FN); }
double f8e5m2ToDouble(uint8_t bits) { return decode(bits, kE5M2); }

double loadAsDouble(DType type, const void *data, size_t index) {
  switch (type) {
  case DType::F32: return loadRaw<float>(data, index);
  case DType::F64: return loadRaw<double>(data, index);
  case DType::F16: return f16ToDouble(loadRaw<uint16_t>(data, index));
  case DType::BF16: return bf16ToDouble(loadRaw<uint16_t>(data, index));
  case DType::F8E4M3FN: return f8e4m3fnToDouble(loadRaw<uint8_t>(data, index));
  case DType::F8E5M2: return f8e5m2ToDouble(loadRaw<uint8_t>(data, index));
  case DType::I64: return static_cast<double>(loadRaw<int64_t>(data, index));
  case DType::I32: return loadRaw<int32_t>(data, index);
  case DType::I8: return loadRaw<int8_t>(data, index);
  case DType::I1: return loadRaw<uint8_t>(data, index) ? 1.0 : 0.0;
  }
  return 0.0;
}

int64_t loadAsInt64(DType type, const void *data, size_t index) {
  switch (type) {
  case DType::I64: return loadRaw<int64_t>(data, index);
  case DType::I32: return loadRaw<int32_t>(data, index);
  case DType::I8: return loadRaw<int8_t>(data, index);
  case DType::I1: return loadRaw<uint8_t>(data, index) ? 1 : 0;
  default: {
    double v = loadAsDouble(type, data, index);
    if (!(std::fabs(v) < 9.2e18))
      return 0;
    return static_cast<int64_t>(v);
  }
  }
}

void storeFromDouble(DType type, void *data, size_t index, double value) {
  switch (type) {
  case DType::F32: storeRaw<float>(data, index, static_cast<float>(value)); return;
  case DType::F64: storeRaw<double>(data, index, value); return;
  case DType::F16: storeRaw<uint16_t>(data, index, f16FromDouble(value)); return;
  case DType::BF16: storeRaw<uint16_t>(data, index, bf16FromDouble(value)); return;
  case DType::F8E4M3FN: storeRaw<uint8_t>(data, index, f8e4m3fnFromDouble(value)); return;
  case DType::F8E5M2: storeRaw<uint8_t>(data, index, f8e5m2FromDouble(value)); return;
  case DType::I1: storeRaw<uint8_t>(data, index, value != 0.0 ? 1 : 0); return;
  default:
    storeFromInt64(type, data, index,
                   std::fabs(value) < 9.2e18 ? static_cast<int64_t>(value) : 0);
    return;
  }
}

void storeFromInt64(DType type, void *data, size_t index, int64_t value) {
  switch (type) {
  case DType::I64: storeRaw<int64_t>(data, index, value); return;
  case DType::I32:
    storeRaw<int32_t>(data, index, static_cast<int32_t>(static_cast<uint32_t>(value)));
    return;
  case DType::I8:
    storeRaw<int8_t>(data, index, static_cast<int8_t>(static_cast<uint8_t>(value)));
    return;
  case DType::I1: storeRaw<uint8_t>(data, index, value != 0 ? 1 : 0); return;
  default: storeFromDouble(type, data, index, static_cast<double>(value)); return;
  }
}

Status convertElements(DType from, const void *src, DType to, void *dst,
                       size_t count) {
  if (!isKnownDType(from) || !isKnownDType(to))
    return Status::invalid("cannot convert between dtypes " +
                           std::to_string(static_cast<int>(from)) + " and " +
                           std::to_string(static_cast<int>(to)));
  if (from == to) {
    std::memcpy(dst, src, count * dtypeSize(from));
    return Status();
  }
  bool fromFloat = isFloatDType(from), toFloat = isFloatDType(to);
  for (size_t i = 0; i < count; ++i) {
    if (!fromFloat && !toFloat)
      storeFromInt64(to, dst, i, loadAsInt64(from, src, i));
    else
      storeFromDouble(to, dst, i, loadAsDouble(from, src, i));
  }
  return Status();
}

} // namespace txrt
