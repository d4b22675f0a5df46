//===- txrt_info.cpp - print the GPUs the runtime can use -----------------===//
//
// SPDX-License-Identifier: Apache-2.0
// `txrt-info`: one line per device, or why none is usable (exit 1).
//
//===----------------------------------------------------------------------===//

#include "txrt/txrt.h"

#include <cstdio>

int main() {
  int count = 0;
  if (txrt_status_t status = txrt_device_count(&count)) {
    std::fprintf(stderr, "txrt-info: %s\n", txrt_status_message(status));
    txrt_status_free(status);
    return 1;
  }
  if (count == 0) {
    std::fprintf(stderr, "txrt-info: the CUDA driver reports no devices\n");
    return 1;
  }
  for (int i = 0; i < count; ++i) {
    txrt_device_info_t info;
    if (txrt_status_t status = txrt_device_info(i, &info)) {
      std::fprintf(stderr, "txrt-info: device %d: %s\n", i,
                   txrt_status_message(status));
      txrt_status_free(status);
      return 1;
    }
    std::printf("device %d: %s, sm_%d%d, %d SMs, %.1f GiB\n", i, info.name,
                info.compute_capability_major, info.compute_capability_minor,
                info.multiprocessor_count,
                info.total_memory_bytes / (1024.0 * 1024.0 * 1024.0));
  }
  return 0;
}
