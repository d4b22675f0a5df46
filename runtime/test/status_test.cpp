//===- status_test.cpp - txrt status API ----------------------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// NULL is success; statuses own a copy of their message.
//
//===----------------------------------------------------------------------===//

#include "txrt/txrt.h"

#include <gtest/gtest.h>
#include <string>

TEST(Status, NullIsOk) {
  EXPECT_EQ(txrt_status_code(nullptr), TXRT_OK);
  EXPECT_STREQ(txrt_status_message(nullptr), "");
  txrt_status_free(nullptr); // must be a no-op
}

TEST(Status, OkCodeCreatesNoObject) {
  EXPECT_EQ(txrt_status_create(TXRT_OK, "ignored"), nullptr);
}

TEST(Status, CarriesCodeAndOwnsMessage) {
  std::string text = "bad thing";
  txrt_status_t status = txrt_status_create(TXRT_INVALID_ARGUMENT, text.c_str());
  text = "changed";
  ASSERT_NE(status, nullptr);
  EXPECT_EQ(txrt_status_code(status), TXRT_INVALID_ARGUMENT);
  EXPECT_STREQ(txrt_status_message(status), "bad thing");
  txrt_status_free(status);
}

TEST(Status, NullMessageBecomesEmpty) {
  txrt_status_t status = txrt_status_create(TXRT_INTERNAL, nullptr);
  ASSERT_NE(status, nullptr);
  EXPECT_STREQ(txrt_status_message(status), "");
  txrt_status_free(status);
}
