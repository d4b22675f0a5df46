//===- dynamic_symbols.cpp - CUDA driver entry points loaded at run time --===//
//
// SPDX-License-Identifier: Apache-2.0
// dlopen/dlsym of the CUDA driver, done once per process. Every symbol is
// required: a driver too old to export one is reported by name.
//
//===----------------------------------------------------------------------===//

#include "hal/cuda/dynamic_symbols.h"

#include <dlfcn.h>

namespace txrt::cuda {
namespace {

struct LoadedDriver {
  DriverSymbols symbols;
  std::string error; // empty when loading succeeded
};

/// Resolves the first of |names| the library exports into |slot|.
template <typename Fn>
bool resolve(void *library, std::initializer_list<const char *> names, Fn &slot,
             std::string &error) {
  for (const char *name : names) {
    slot = reinterpret_cast<Fn>(dlsym(library, name));
    if (slot)
      return true;
  }
  error = std::string("CUDA driver lacks symbol '") + *names.begin() +
          "' (driver too old?)";
  return false;
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
  std::string &e = loaded.error;
  // The versioned names are the ones cuda.h's macros map the plain API to.
  bool ok =
      resolve(library, {"cuInit"}, s.cuInit, e) &&
      resolve(library, {"cuDeviceGetCount"}, s.cuDeviceGetCount, e) &&
      resolve(library, {"cuDeviceGet"}, s.cuDeviceGet, e) &&
      resolve(library, {"cuDeviceGetName"}, s.cuDeviceGetName, e) &&
      resolve(library, {"cuDeviceGetAttribute"}, s.cuDeviceGetAttribute, e) &&
      resolve(library, {"cuDeviceTotalMem_v2"}, s.cuDeviceTotalMem, e) &&
      resolve(library, {"cuGetErrorString"}, s.cuGetErrorString, e) &&
      resolve(library, {"cuGetErrorName"}, s.cuGetErrorName, e) &&
      resolve(library, {"cuDevicePrimaryCtxRetain"}, s.cuDevicePrimaryCtxRetain, e) &&
      resolve(library, {"cuDevicePrimaryCtxRelease_v2"}, s.cuDevicePrimaryCtxRelease, e) &&
      resolve(library, {"cuCtxSetCurrent"}, s.cuCtxSetCurrent, e) &&
      resolve(library, {"cuCtxSynchronize"}, s.cuCtxSynchronize, e) &&
      resolve(library, {"cuMemAlloc_v2"}, s.cuMemAlloc, e) &&
      resolve(library, {"cuMemFree_v2"}, s.cuMemFree, e) &&
      resolve(library, {"cuMemGetInfo_v2"}, s.cuMemGetInfo, e) &&
      resolve(library, {"cuMemcpyHtoD_v2"}, s.cuMemcpyHtoD, e) &&
      resolve(library, {"cuMemcpyDtoH_v2"}, s.cuMemcpyDtoH, e) &&
      resolve(library, {"cuMemcpyDtoDAsync_v2"}, s.cuMemcpyDtoDAsync, e) &&
      resolve(library, {"cuMemsetD32Async"}, s.cuMemsetD32Async, e) &&
      resolve(library, {"cuModuleLoadDataEx"}, s.cuModuleLoadDataEx, e) &&
      resolve(library, {"cuModuleUnload"}, s.cuModuleUnload, e) &&
      resolve(library, {"cuModuleGetFunction"}, s.cuModuleGetFunction, e) &&
      resolve(library, {"cuFuncSetAttribute"}, s.cuFuncSetAttribute, e) &&
      resolve(library, {"cuLaunchKernel"}, s.cuLaunchKernel, e) &&
      resolve(library, {"cuStreamCreate"}, s.cuStreamCreate, e) &&
      resolve(library, {"cuStreamDestroy_v2"}, s.cuStreamDestroy, e) &&
      resolve(library, {"cuStreamSynchronize"}, s.cuStreamSynchronize, e) &&
      resolve(library, {"cuStreamQuery"}, s.cuStreamQuery, e) &&
      resolve(library, {"cuStreamBeginCapture_v2"}, s.cuStreamBeginCapture, e) &&
      resolve(library, {"cuStreamEndCapture"}, s.cuStreamEndCapture, e) &&
      resolve(library, {"cuGraphInstantiateWithFlags"},
              s.cuGraphInstantiateWithFlags, e) &&
      resolve(library, {"cuGraphLaunch"}, s.cuGraphLaunch, e) &&
      resolve(library, {"cuGraphExecDestroy"}, s.cuGraphExecDestroy, e) &&
      resolve(library, {"cuGraphDestroy"}, s.cuGraphDestroy, e) &&
      resolve(library, {"cuEventCreate"}, s.cuEventCreate, e) &&
      resolve(library, {"cuEventDestroy_v2"}, s.cuEventDestroy, e) &&
      resolve(library, {"cuEventRecord"}, s.cuEventRecord, e) &&
      resolve(library, {"cuStreamWaitEvent"}, s.cuStreamWaitEvent, e) &&
      // CUDA 12.8 added _v2 (same signature); older drivers only the plain one.
      resolve(library, {"cuEventElapsedTime_v2", "cuEventElapsedTime"},
              s.cuEventElapsedTime, e);
  if (!ok)
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
  const char *name = nullptr, *text = nullptr;
  std::string out;
  if (driver.cuGetErrorName && driver.cuGetErrorName(result, &name) == CUDA_SUCCESS &&
      name)
    out = name;
  else
    out = "CUDA error " + std::to_string(result);
  if (driver.cuGetErrorString &&
      driver.cuGetErrorString(result, &text) == CUDA_SUCCESS && text)
    out += std::string(" (") + text + ")";
  return out;
}

} // namespace txrt::cuda
