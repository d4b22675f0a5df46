//===- FloatFormatsTest.cpp - reference rounding against APFloat ----------===//
//
// SPDX-License-Identifier: Apache-2.0
// Checks lib/Reference/FloatFormats bit for bit against llvm::APFloat: every
// code of bf16, f16, f8E4M3FN and f8E5M2 decodes to APFloat's value and
// re-encodes to itself, and tens of millions of f32 and f64 values round to
// APFloat's code (non-saturating) or to APFloat's code with overflow mapped to
// +-max (saturating). Prints a table of the edge cases and one summary line
// per check for FileCheck (float-formats.test); the first mismatches go to
// stderr and the exit status is 1.
//
//===----------------------------------------------------------------------===//

#include "txopt/Reference/FloatFormats.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/APInt.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

using namespace mlir::txopt::reference;

namespace {

/// One format under test: our encoder (both overflow modes where the format
/// has them), our decoder, and the APFloat semantics it must agree with.
struct Format {
  const char *name;
  const llvm::fltSemantics &semantics;
  unsigned width;
  uint16_t (*bits)(double, bool saturate);
  double (*fromBits)(uint16_t);
  bool hasSaturatingMode;
};

uint16_t bf16Bits(double x, bool) { return bfloat16Bits(x); }
uint16_t f16Bits(double x, bool) { return float16Bits(x); }
double bf16Value(uint16_t b) { return bfloat16FromBits(b); }
double f16Value(uint16_t b) { return float16FromBits(b); }
uint16_t e4m3Bits(double x, bool sat) { return float8Bits(x, kFloat8E4M3FN, sat); }
uint16_t e5m2Bits(double x, bool sat) { return float8Bits(x, kFloat8E5M2, sat); }
double e4m3Value(uint16_t b) { return float8FromBits(uint8_t(b), kFloat8E4M3FN); }
double e5m2Value(uint16_t b) { return float8FromBits(uint8_t(b), kFloat8E5M2); }

const Format kFormats[] = {
    {"bf16", llvm::APFloat::BFloat(), 16, bf16Bits, bf16Value, false},
    {"f16", llvm::APFloat::IEEEhalf(), 16, f16Bits, f16Value, false},
    {"f8E4M3FN", llvm::APFloat::Float8E4M3FN(), 8, e4m3Bits, e4m3Value, true},
    {"f8E5M2", llvm::APFloat::Float8E5M2(), 8, e5m2Bits, e5m2Value, true},
};

/// splitmix64 (Steele, Lea, Flood 2014), so the sweep is the same every run.
struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
};

double fromF32Bits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

double fromF64Bits(uint64_t bits) {
  double d;
  std::memcpy(&d, &bits, 8);
  return d;
}

std::string describe(double x) {
  char buf[64];
  uint64_t bits;
  std::memcpy(&bits, &x, 8);
  std::snprintf(buf, sizeof(buf), "%.17g (0x%016llx)", x,
                static_cast<unsigned long long>(bits));
  return buf;
}

/// Counts mismatches of one format and prints the first few.
struct Checker {
  const Format &format;
  uint16_t largestCode;  ///< APFloat's largest finite value, positive
  uint64_t values = 0;
  uint64_t mismatches = 0;
  uint64_t saturatingMismatches = 0;

  explicit Checker(const Format &format)
      : format(format),
        largestCode(static_cast<uint16_t>(
            llvm::APFloat::getLargest(format.semantics)
                .bitcastToAPInt()
                .getZExtValue())) {}

  bool isNaNCode(uint16_t code) const {
    return llvm::APFloat(format.semantics, llvm::APInt(format.width, code))
        .isNaN();
  }

  void report(uint64_t &counter, const char *what, double x, uint16_t got,
              uint16_t want) {
    if (++counter <= 5)
      std::fprintf(stderr, "MISMATCH %s %s: %s -> 0x%04x, expected 0x%04x\n",
                   format.name, what, describe(x).c_str(), got, want);
  }

  /// |x| must round to APFloat's code; in saturating mode, finite
  /// overflow and infinities must give +-largest instead of inf / NaN.
  void check(double x) {
    ++values;
    llvm::APFloat reference(x);
    bool lost;
    reference.convert(format.semantics, llvm::APFloat::rmNearestTiesToEven,
                      &lost);
    auto want = static_cast<uint16_t>(reference.bitcastToAPInt().getZExtValue());
    uint16_t signBit = uint16_t(1u << (format.width - 1));
    uint16_t sign = std::signbit(x) ? signBit : 0;

    uint16_t got = format.bits(x, /*saturate=*/false);
    bool ok = reference.isNaN() ? isNaNCode(got) && (got & signBit) == sign
                                : got == want;
    if (!ok)
      report(mismatches, "non-saturating", x, got, want);

    if (!format.hasSaturatingMode)
      return;
    uint16_t gotSat = format.bits(x, /*saturate=*/true);
    bool overflowed = !std::isnan(x) && (reference.isInfinity() ||
                                         reference.isNaN());
    uint16_t wantSat = overflowed ? uint16_t(sign | largestCode) : want;
    bool okSat = std::isnan(x) ? isNaNCode(gotSat) && (gotSat & signBit) == sign
                               : gotSat == wantSat;
    if (!okSat)
      report(saturatingMismatches, "saturating", x, gotSat, wantSat);
  }
};

/// Every code decodes to APFloat's value (NaN to a NaN of the same sign)
/// and, unless it is a NaN, encodes back to itself without saturation.
uint64_t checkAllCodes(const Format &format, uint64_t &codes) {
  uint64_t mismatches = 0;
  codes = uint64_t(1) << format.width;
  for (uint64_t code = 0; code < codes; ++code) {
    llvm::APFloat reference(format.semantics,
                            llvm::APInt(format.width, code));
    double ours = format.fromBits(static_cast<uint16_t>(code));
    bool ok;
    if (reference.isNaN()) {
      ok = std::isnan(ours) && std::signbit(ours) == reference.isNegative();
    } else {
      bool lost;
      reference.convert(llvm::APFloat::IEEEdouble(),
                        llvm::APFloat::rmNearestTiesToEven, &lost);
      double want = reference.convertToDouble();
      ok = !lost && ours == want && std::signbit(ours) == std::signbit(want) &&
           format.bits(ours, /*saturate=*/false) == code;
    }
    if (!ok && ++mismatches <= 5)
      std::fprintf(stderr, "MISMATCH %s code 0x%04llx decodes to %s\n",
                   format.name, static_cast<unsigned long long>(code),
                   describe(ours).c_str());
  }
  return mismatches;
}

const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

/// The edge cases the FP8 emulation is specified by: the largest value and
/// the ties around it, infinities, NaNs, the subnormal range and ties in it.
struct Row {
  const char *label;
  double x;
};
const Row kE4M3Rows[] = {
    {"448", 448.0},
    {"449", 449.0},
    {"464", 464.0},
    {"464+ulp", std::nextafter(464.0, kInf)},
    {"480", 480.0},
    {"1e9", 1e9},
    {"inf", kInf},
    {"-inf", -kInf},
    {"nan", kNaN},
    {"-nan", -kNaN},
    {"2^-6", std::ldexp(1.0, -6)},
    {"2^-9", std::ldexp(1.0, -9)},
    {"2^-10", std::ldexp(1.0, -10)},
    {"2^-10+ulp", std::nextafter(std::ldexp(1.0, -10), kInf)},
    {"3*2^-10", 3 * std::ldexp(1.0, -10)},
    {"-0", -0.0},
    {"1.0625", 1.0625},
    {"1.1875", 1.1875},
};
const Row kE5M2Rows[] = {
    {"57344", 57344.0},
    {"61439.99", 61439.99},
    {"61440", 61440.0},
    {"inf", kInf},
    {"-inf", -kInf},
    {"nan", kNaN},
    {"2^-14", std::ldexp(1.0, -14)},
    {"2^-16", std::ldexp(1.0, -16)},
    {"2^-17", std::ldexp(1.0, -17)},
    {"3*2^-17", 3 * std::ldexp(1.0, -17)},
    {"1.125", 1.125},
    {"1.375", 1.375},
};

/// Prints the edge cases as a table (what float-formats.test pins down).
void printTable(const char *name, Float8Format format, const Row *rows,
                size_t n) {
  for (size_t i = 0; i < n; ++i) {
    uint8_t sat = float8Bits(rows[i].x, format, true);
    uint8_t nonSat = float8Bits(rows[i].x, format, false);
    std::printf("%s %s: sat 0x%02x = %g, nonsat 0x%02x = %g\n", name,
                rows[i].label, sat, float8FromBits(sat, format), nonSat,
                float8FromBits(nonSat, format));
  }
}

} // namespace

int main() {
  printTable("f8E4M3FN", kFloat8E4M3FN, kE4M3Rows, std::size(kE4M3Rows));
  printTable("f8E5M2", kFloat8E5M2, kE5M2Rows, std::size(kE5M2Rows));
  bool failed = false;
  for (const Format &format : kFormats) {
    uint64_t codes;
    uint64_t codeMismatches = checkAllCodes(format, codes);
    std::printf("%s: %llu codes, %llu mismatches\n", format.name,
                static_cast<unsigned long long>(codes),
                static_cast<unsigned long long>(codeMismatches));
    failed |= codeMismatches != 0;

    Checker checker(format);
    for (const Row &row : kE4M3Rows)
      checker.check(row.x);
    for (const Row &row : kE5M2Rows)
      checker.check(row.x);
    // Every f32 with the low 9 bits clear: each sign, exponent and top 14
    // mantissa bits, which hold the rounding bit and some sticky bits of all
    // four formats (FP8 keeps 2-3 mantissa bits, bf16 7, f16 10).
    for (uint32_t hi = 0; hi < (1u << 23); ++hi)
      checker.check(fromF32Bits(hi << 9));
    // Random f32 bit patterns (low bits set: sticky bits far below a tie).
    SplitMix64 rng{0x5EED};
    for (int i = 0; i < (1 << 21); ++i)
      checker.check(fromF32Bits(static_cast<uint32_t>(rng.next())));
    // Random doubles, rounded once (the executor rounds from double): half
    // anywhere, half with exponents around the formats' ranges.
    for (int i = 0; i < (1 << 20); ++i)
      checker.check(fromF64Bits(rng.next()));
    for (int i = 0; i < (1 << 20); ++i) {
      uint64_t r = rng.next();
      double mantissa = 1.0 + static_cast<double>(r >> 12) * 0x1.0p-52;
      int exponent = static_cast<int>(rng.next() % 60) - 40;
      checker.check((r & 1 ? -1.0 : 1.0) * std::ldexp(mantissa, exponent));
    }
    std::printf("%s: %llu values, %llu mismatches\n", format.name,
                static_cast<unsigned long long>(checker.values),
                static_cast<unsigned long long>(checker.mismatches));
    failed |= checker.mismatches != 0;
    if (format.hasSaturatingMode) {
      std::printf("%s saturating: %llu values, %llu mismatches\n", format.name,
                  static_cast<unsigned long long>(checker.values),
                  static_cast<unsigned long long>(checker.saturatingMismatches));
      failed |= checker.saturatingMismatches != 0;
    }
  }
  return failed ? 1 : 0;
}
