//===- dynamic_symbols.cpp - CUDA driver entry points loaded at run time --===//
//
// SPDX-License-Identifier: Apache-2.0
// dlopen/dlsym of the CUDA driver, done once per process.
//
//===----------------------------------------------------------------------===//

#include "hal/cuda/dynamic_symbols.h"

#include <dlfcn.h>
#include <mutex>

namespace txrt::cuda {
namespace {

struct LoadedDriver {
  DriverSymbols symbols;
  std::string error; // empty when loading succeeded
};

template <typename Fn>
bool resolve(void *library, const char *name, Fn &slot, std::string &error) {
  slot = reinterpret_cast<Fn>(dlsym(library, name));
  if (!slot)
    error = std::string("CUDA driver lacks symbol '") + name + "'";
  return slot != nullptr;
}

LoadedDriver load() {
  LoadedDriver loaded;
  void *library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char *reason = dlerror();
    loaded.error = std::string("no CUDA driver: cannot load libcuda.so.1 (") +
                   (reason ? reason : "unknown reason") + ")";
    return loaded;
  }
  DriverSymbols &s = loaded.symbols;
  // cuDeviceTotalMem is exported with a _v2 suffix since CUDA 3.2.
  if (!resolve(library, "cuInit", s.cuInit, loaded.error) ||
      !resolve(library, "cuDeviceGetCount", s.cuDeviceGetCount, loaded.error) ||
      !resolve(library, "cuDeviceGet", s.cuDeviceGet, loaded.error) ||
      !resolve(library, "cuDeviceGetName", s.cuDeviceGetName, loaded.error) ||
      !resolve(library, "cuDeviceGetAttribute", s.cuDeviceGetAttribute,
               loaded.error) ||
      !resolve(library, "cuDeviceTotalMem_v2", s.cuDeviceTotalMem, loaded.error) ||
      !resolve(library, "cuGetErrorString", s.cuGetErrorString, loaded.error))
    return loaded;
  CUresult result = s.cuInit(0);
  if (result != CUDA_SUCCESS)
    loaded.error = "CUDA driver found but cuInit failed: " + describe(s, result);
  return loaded;
}

} // namespace

const DriverSymbols *loadDriver(std::string &error) {
  static LoadedDriver loaded = load(); // thread-safe one-time init (C++11)
  error = loaded.error;
  return loaded.error.empty() ? &loaded.symbols : nullptr;
}

std::string describe(const DriverSymbols &driver, CUresult result) {
  const char *text = nullptr;
  if (driver.cuGetErrorString &&
      driver.cuGetErrorString(result, &text) == CUDA_SUCCESS && text)
    return text;
  return "CUDA error " + std::to_string(result);
}

} // namespace txrt::cuda
