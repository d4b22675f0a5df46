//===- status.cpp - txrt status objects -----------------------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// Heap-allocated statuses: NULL is success, anything else carries a message.
//
//===----------------------------------------------------------------------===//

#include "txrt/txrt.h"

#include <new>
#include <string>

struct txrt_status_s {
  txrt_status_code_t code;
  std::string message;
};

extern "C" txrt_status_t txrt_status_create(txrt_status_code_t code,
                                            const char *message) {
  if (code == TXRT_OK)
    return nullptr;
  return new (std::nothrow) txrt_status_s{code, message ? message : ""};
}

extern "C" txrt_status_code_t txrt_status_code(txrt_status_t status) {
  return status ? status->code : TXRT_OK;
}

extern "C" const char *txrt_status_message(txrt_status_t status) {
  return status ? status->message.c_str() : "";
}

extern "C" void txrt_status_free(txrt_status_t status) { delete status; }
