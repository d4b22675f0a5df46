//===- device_test.cpp - device enumeration -------------------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// With a GPU the driver's answers must be sane; without one the runtime must
// say so through TXRT_UNAVAILABLE and a reason, never crash. Set
// TXRT_EXPECT_GPU=1 (as the device runs do) to make "no GPU" a failure.
//
//===----------------------------------------------------------------------===//

#include "txrt/txrt.h"

#include <cstdlib>
#include <cstring>
#include <gtest/gtest.h>

namespace {
bool gpuExpected() {
  const char *value = std::getenv("TXRT_EXPECT_GPU");
  return value && std::strcmp(value, "1") == 0;
}
} // namespace

TEST(Device, CountRejectsNullOutput) {
  txrt_status_t status = txrt_device_count(nullptr);
  EXPECT_EQ(txrt_status_code(status), TXRT_INVALID_ARGUMENT);
  txrt_status_free(status);
}

TEST(Device, CountIsExplainedOrPositive) {
  int count = -1;
  txrt_status_t status = txrt_device_count(&count);
  if (status) {
    EXPECT_FALSE(gpuExpected()) << txrt_status_message(status);
    EXPECT_EQ(txrt_status_code(status), TXRT_UNAVAILABLE);
    EXPECT_GT(std::strlen(txrt_status_message(status)), 0u);
    EXPECT_EQ(count, 0);
    txrt_status_free(status);
    return;
  }
  EXPECT_GE(count, gpuExpected() ? 1 : 0);
}

TEST(Device, InfoOfEachDeviceIsSane) {
  int count = 0;
  if (txrt_status_t status = txrt_device_count(&count)) {
    txrt_status_free(status);
    GTEST_SKIP() << "no CUDA driver on this machine";
  }
  for (int i = 0; i < count; ++i) {
    txrt_device_info_t info;
    txrt_status_t status = txrt_device_info(i, &info);
    ASSERT_EQ(status, nullptr) << txrt_status_message(status);
    EXPECT_GT(std::strlen(info.name), 0u);
    EXPECT_GE(info.compute_capability_major, 3);
    EXPECT_GT(info.multiprocessor_count, 0);
    EXPECT_GT(info.total_memory_bytes, size_t{1} << 30);
  }
}

TEST(Device, InfoRejectsBadOrdinal) {
  txrt_device_info_t info;
  txrt_status_t status = txrt_device_info(-1, &info);
  ASSERT_NE(status, nullptr);
  EXPECT_TRUE(txrt_status_code(status) == TXRT_OUT_OF_RANGE ||
              txrt_status_code(status) == TXRT_UNAVAILABLE);
  txrt_status_free(status);
  status = txrt_device_info(0, nullptr);
  EXPECT_EQ(txrt_status_code(status), TXRT_INVALID_ARGUMENT);
  txrt_status_free(status);
}

// The gradient-accumulation entry points refuse NULL with one status.
TEST(Device, MicroStepEntryPointsRejectNull) {
  txrt_status_t status = txrt_session_run_micro_step(nullptr, nullptr);
  EXPECT_EQ(txrt_status_code(status), TXRT_INVALID_ARGUMENT);
  txrt_status_free(status);
  uint32_t n = 0;
  status = txrt_session_grad_accum(nullptr, &n);
  EXPECT_EQ(txrt_status_code(status), TXRT_INVALID_ARGUMENT);
  txrt_status_free(status);
}
