//===- cuda_device.cpp - device enumeration through the CUDA driver -------===//
//
// SPDX-License-Identifier: Apache-2.0
// Implements txrt_device_count / txrt_device_info; every driver call checked.
//
//===----------------------------------------------------------------------===//

#include "hal/cuda/dynamic_symbols.h"
#include "txrt/txrt.h"

#include <cstring>
#include <string>

using namespace txrt::cuda;

namespace {
txrt_status_t driverError(const DriverSymbols &driver, const char *call,
                          CUresult result) {
  std::string message = std::string(call) + " failed: " + describe(driver, result);
  return txrt_status_create(TXRT_INTERNAL, message.c_str());
}
} // namespace

extern "C" txrt_status_t txrt_device_count(int *out_count) {
  if (!out_count)
    return txrt_status_create(TXRT_INVALID_ARGUMENT, "out_count is NULL");
  *out_count = 0;
  std::string error;
  const DriverSymbols *driver = loadDriver(error);
  if (!driver)
    return txrt_status_create(TXRT_UNAVAILABLE, error.c_str());
  if (CUresult r = driver->cuDeviceGetCount(out_count); r != CUDA_SUCCESS)
    return driverError(*driver, "cuDeviceGetCount", r);
  return nullptr;
}

extern "C" txrt_status_t txrt_device_info(int ordinal,
                                          txrt_device_info_t *out_info) {
  if (!out_info)
    return txrt_status_create(TXRT_INVALID_ARGUMENT, "out_info is NULL");
  std::memset(out_info, 0, sizeof(*out_info));
  int count = 0;
  if (txrt_status_t status = txrt_device_count(&count))
    return status;
  if (ordinal < 0 || ordinal >= count) {
    std::string message = "device ordinal " + std::to_string(ordinal) +
                          " out of range [0, " + std::to_string(count) + ")";
    return txrt_status_create(TXRT_OUT_OF_RANGE, message.c_str());
  }
  std::string error;
  const DriverSymbols *driver = loadDriver(error);
  CUdevice device = 0;
  if (CUresult r = driver->cuDeviceGet(&device, ordinal); r != CUDA_SUCCESS)
    return driverError(*driver, "cuDeviceGet", r);
  if (CUresult r = driver->cuDeviceGetName(out_info->name,
                                           sizeof(out_info->name) - 1, device);
      r != CUDA_SUCCESS)
    return driverError(*driver, "cuDeviceGetName", r);
  struct {
    int attribute;
    int *slot;
  } attributes[] = {
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
       &out_info->compute_capability_major},
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
       &out_info->compute_capability_minor},
      {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
       &out_info->multiprocessor_count},
  };
  for (auto &entry : attributes)
    if (CUresult r = driver->cuDeviceGetAttribute(entry.slot, entry.attribute,
                                                  device);
        r != CUDA_SUCCESS)
      return driverError(*driver, "cuDeviceGetAttribute", r);
  if (CUresult r = driver->cuDeviceTotalMem(&out_info->total_memory_bytes, device);
      r != CUDA_SUCCESS)
    return driverError(*driver, "cuDeviceTotalMem", r);
  return nullptr;
}
