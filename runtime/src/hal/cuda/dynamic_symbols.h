//===- dynamic_symbols.h - CUDA driver entry points loaded at run time ----===//
//
// SPDX-License-Identifier: Apache-2.0
// The runtime dlopens libcuda instead of linking it, so one binary runs on
// machines with and without a GPU and says which one it is on.
//
//===----------------------------------------------------------------------===//

#ifndef TXRT_HAL_CUDA_DYNAMIC_SYMBOLS_H
#define TXRT_HAL_CUDA_DYNAMIC_SYMBOLS_H

#include <cstddef>
#include <string>

namespace txrt::cuda {

// The few driver types the runtime needs, declared with the driver ABI's
// layout so that no CUDA header is required to build the runtime.
using CUresult = int;
using CUdevice = int;
constexpr CUresult CUDA_SUCCESS = 0;
constexpr int CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;

/// Driver functions, resolved once. Null members mean "not loaded".
struct DriverSymbols {
  CUresult (*cuInit)(unsigned int) = nullptr;
  CUresult (*cuDeviceGetCount)(int *) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice *, int) = nullptr;
  CUresult (*cuDeviceGetName)(char *, int, CUdevice) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice) = nullptr;
  CUresult (*cuDeviceTotalMem)(size_t *, CUdevice) = nullptr;
  CUresult (*cuGetErrorString)(CUresult, const char **) = nullptr;
};

/// Loads libcuda.so.1 and calls cuInit(0) on first use. Returns the table,
/// or nullptr with the reason in |error| (library missing, symbol missing,
/// cuInit failed: e.g. no GPU).
const DriverSymbols *loadDriver(std::string &error);

/// "CUDA_ERROR_..." text for |result|, or its number if unknown.
std::string describe(const DriverSymbols &driver, CUresult result);

} // namespace txrt::cuda

#endif // TXRT_HAL_CUDA_DYNAMIC_SYMBOLS_H
