//===- dtype_test.cpp - dtype sizes and host conversions ------------------===//
//
// SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "core/dtype.h"

#include <cmath>
#include <cstring>
#include <gtest/gtest.h>
#include <limits>

using namespace txrt;

TEST(DType, Sizes) {
  EXPECT_EQ(dtypeSize(DType::F32), 4u);
  EXPECT_EQ(dtypeSize(DType::F16), 2u);
  EXPECT_EQ(dtypeSize(DType::BF16), 2u);
  EXPECT_EQ(dtypeSize(DType::F8E4M3FN), 1u);
  EXPECT_EQ(dtypeSize(DType::F8E5M2), 1u);
  EXPECT_EQ(dtypeSize(DType::F64), 8u);
  EXPECT_EQ(dtypeSize(DType::I64), 8u);
  EXPECT_EQ(dtypeSize(DType::I32), 4u);
  EXPECT_EQ(dtypeSize(DType::I8), 1u);
  EXPECT_EQ(dtypeSize(DType::I1), 1u);
  EXPECT_FALSE(isKnownDType(static_cast<DType>(10)));
  EXPECT_STREQ(dtypeName(DType::BF16), "bf16");
}

TEST(DType, BFloat16RoundsToNearestEven) {
  EXPECT_EQ(bf16FromDouble(1.0), 0x3F80);
  EXPECT_EQ(bf16FromDouble(-2.0), 0xC000);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to the even 1.0.
  EXPECT_EQ(bf16FromDouble(1.0 + std::ldexp(1.0, -8)), 0x3F80);
  // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 (odd) and 1 + 2^-6: up.
  EXPECT_EQ(bf16FromDouble(1.0 + 3 * std::ldexp(1.0, -8)), 0x3F82);
  // Just above the halfway point rounds up.
  EXPECT_EQ(bf16FromDouble(1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -20)), 0x3F81);
  EXPECT_EQ(bf16FromDouble(std::numeric_limits<double>::infinity()), 0x7F80);
  EXPECT_EQ(bf16FromDouble(1e39), 0x7F80); // overflow
  EXPECT_TRUE(std::isnan(bf16ToDouble(bf16FromDouble(std::nan("")))));
  EXPECT_EQ(bf16FromDouble(-0.0), 0x8000);
  // The same rounding as truncating the f32 bit pattern with RNE.
  for (float f : {3.14159f, -0.001234f, 65504.5f, 1e-40f, 7.0e30f}) {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    uint32_t rounded = bits + 0x7FFF + ((bits >> 16) & 1);
    EXPECT_EQ(bf16FromDouble(f), rounded >> 16) << f;
    EXPECT_EQ(bf16ToDouble(static_cast<uint16_t>(rounded >> 16)),
              [&] { uint32_t r = rounded & 0xFFFF0000u; float g; std::memcpy(&g, &r, 4); return double(g); }());
  }
}

TEST(DType, Float16) {
  EXPECT_EQ(f16FromDouble(1.0), 0x3C00);
  EXPECT_EQ(f16FromDouble(65504.0), 0x7BFF);
  EXPECT_EQ(f16FromDouble(65520.0), 0x7C00); // rounds past the largest finite
  EXPECT_EQ(f16FromDouble(std::ldexp(1.0, -24)), 0x0001); // smallest subnormal
  EXPECT_EQ(f16FromDouble(std::ldexp(1.0, -25)), 0x0000); // tie to even zero
  EXPECT_EQ(f16ToDouble(0x3555), 0.333251953125);
  EXPECT_EQ(f16ToDouble(0xFC00), -std::numeric_limits<double>::infinity());
}

TEST(DType, Float8) {
  EXPECT_EQ(f8e4m3fnFromDouble(448.0), 0x7E);
  EXPECT_EQ(f8e4m3fnFromDouble(1.0), 0x38);
  EXPECT_EQ(f8e4m3fnFromDouble(500.0), 0x7F); // no infinity: NaN
  EXPECT_EQ(f8e4m3fnToDouble(0x7E), 448.0);
  EXPECT_EQ(f8e5m2FromDouble(1.0), 0x3C);
  EXPECT_EQ(f8e5m2FromDouble(57344.0), 0x7B);
  EXPECT_EQ(f8e5m2FromDouble(1e6), 0x7C);
}

TEST(DType, ConvertFloats) {
  float f32[3] = {1.5f, -2.25f, 3.0e-3f};
  uint16_t bf16[3];
  ASSERT_TRUE(convertElements(DType::F32, f32, DType::BF16, bf16, 3).ok());
  EXPECT_EQ(bf16[0], 0x3FC0);
  EXPECT_EQ(bf16[1], 0xC010);
  float back[3];
  ASSERT_TRUE(convertElements(DType::BF16, bf16, DType::F32, back, 3).ok());
  EXPECT_EQ(back[0], 1.5f);
  EXPECT_EQ(back[1], -2.25f);
  EXPECT_NEAR(back[2], 3.0e-3f, 3.0e-3f / 128);
  double f64[2] = {0.1, -1e300};
  float narrowed[2];
  ASSERT_TRUE(convertElements(DType::F64, f64, DType::F32, narrowed, 2).ok());
  EXPECT_EQ(narrowed[0], 0.1f);
  EXPECT_TRUE(std::isinf(narrowed[1]) && narrowed[1] < 0);
  uint16_t half[2];
  ASSERT_TRUE(convertElements(DType::F32, f32, DType::F16, half, 2).ok());
  EXPECT_EQ(half[0], 0x3E00);
}

TEST(DType, ConvertIntegers) {
  int64_t i64[3] = {5, -7, (int64_t(1) << 33) + 9};
  int32_t i32[3];
  ASSERT_TRUE(convertElements(DType::I64, i64, DType::I32, i32, 3).ok());
  EXPECT_EQ(i32[0], 5);
  EXPECT_EQ(i32[1], -7);
  EXPECT_EQ(i32[2], 9); // wraps to the width
  int64_t wide[3];
  ASSERT_TRUE(convertElements(DType::I32, i32, DType::I64, wide, 3).ok());
  EXPECT_EQ(wide[1], -7);
  float asFloat[2];
  ASSERT_TRUE(convertElements(DType::I64, i64, DType::F32, asFloat, 2).ok());
  EXPECT_EQ(asFloat[1], -7.0f);
  float fs[2] = {2.9f, -2.9f};
  int64_t truncated[2];
  ASSERT_TRUE(convertElements(DType::F32, fs, DType::I64, truncated, 2).ok());
  EXPECT_EQ(truncated[0], 2);
  EXPECT_EQ(truncated[1], -2);
  EXPECT_FALSE(convertElements(static_cast<DType>(42), fs, DType::I64, truncated, 1).ok());
}
