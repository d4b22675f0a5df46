//===- npy_test.cpp - .npy files as txopt-run writes them -----------------===//
//
// SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "core/npy.h"

#include <cstring>
#include <gtest/gtest.h>

using namespace txrt;

TEST(Npy, FileNamesMatchTxoptRun) {
  EXPECT_EQ(npyFileNameFor("loss"), "loss.npy");
  EXPECT_EQ(npyFileNameFor("model/w:0"), "model_w_0.npy");
  EXPECT_EQ(npyFileNameFor(".hidden"), "_.hidden.npy");
  EXPECT_EQ(npyFileNameFor(""), "_.npy");
  EXPECT_EQ(npyFileNameFor("a-b.c_d"), "a-b.c_d.npy");
}

TEST(Npy, HeaderIsPaddedTo64) {
  float v[6] = {1, 2, 3, 4, 5, 6};
  std::string bytes = serializeNpy(DType::F32, {2, 3}, v, 6);
  ASSERT_GE(bytes.size(), 10u);
  size_t headerLen = static_cast<unsigned char>(bytes[8]) |
                     (static_cast<unsigned char>(bytes[9]) << 8);
  EXPECT_EQ((10 + headerLen) % 64, 0u);
  EXPECT_NE(bytes.find("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"),
            std::string::npos);
  EXPECT_NE(serializeNpy(DType::F32, {5}, v, 5).find("'shape': (5,), }"), std::string::npos);
  EXPECT_NE(serializeNpy(DType::F32, {}, v, 1).find("'shape': (), }"), std::string::npos);
}

TEST(Npy, RoundTrip) {
  int64_t ints[4] = {1, -2, 3, 1ll << 40};
  NpyArray array;
  ASSERT_TRUE(parseNpy(serializeNpy(DType::I64, {4}, ints, 4), array).ok());
  EXPECT_EQ(array.descr, "<i8");
  EXPECT_EQ(array.shape, std::vector<int64_t>{4});
  ASSERT_EQ(array.data.size(), 32u);
  EXPECT_EQ(std::memcmp(array.data.data(), ints, 32), 0);

  int32_t i32[2] = {7, -9};
  ASSERT_TRUE(parseNpy(serializeNpy(DType::I32, {1, 2}, i32, 2), array).ok());
  EXPECT_EQ(array.descr, "<i4");
  EXPECT_EQ(array.shape, (std::vector<int64_t>{1, 2}));
}

TEST(Npy, NarrowFloatsAreWrittenAsF32) {
  uint16_t bf16[2] = {0x3FC0, 0xC010}; // 1.5, -2.25
  NpyArray array;
  ASSERT_TRUE(parseNpy(serializeNpy(DType::BF16, {2}, bf16, 2), array).ok());
  EXPECT_EQ(array.descr, "<f4");
  float f[2];
  std::memcpy(f, array.data.data(), 8);
  EXPECT_EQ(f[0], 1.5f);
  EXPECT_EQ(f[1], -2.25f);
  uint16_t half[1] = {0x3C00};
  ASSERT_TRUE(parseNpy(serializeNpy(DType::F16, {1}, half, 1), array).ok());
  EXPECT_EQ(array.descr, "<f2");
  uint8_t bools[2] = {1, 0};
  ASSERT_TRUE(parseNpy(serializeNpy(DType::I1, {2}, bools, 2), array).ok());
  EXPECT_EQ(array.descr, "|b1");
}

TEST(Npy, RejectsDamagedFiles) {
  NpyArray array;
  EXPECT_FALSE(parseNpy("hello", array).ok());
  float v[2] = {1, 2};
  std::string bytes = serializeNpy(DType::F32, {2}, v, 2);
  EXPECT_FALSE(parseNpy(bytes.substr(0, bytes.size() - 1), array).ok());
}
