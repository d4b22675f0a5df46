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
// layout (cuda.h of CUDA 13.0) so that no CUDA header is required to build.
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long; // CUdeviceptr_v2
using CUcontext = struct CUctx_st *;
using CUmodule = struct CUmod_st *;
using CUfunction = struct CUfunc_st *;
using CUstream = struct CUstream_st *;
using CUevent = struct CUevent_st *;
using CUgraph = struct CUgraph_st *;
using CUgraphExec = struct CUgraphExec_st *;

constexpr CUresult CUDA_SUCCESS = 0;
constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;
constexpr CUresult CUDA_ERROR_NOT_READY = 600;
constexpr int CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
constexpr int CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97;
constexpr int CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;
constexpr unsigned CU_STREAM_DEFAULT = 0x0;
constexpr unsigned CU_STREAM_NON_BLOCKING = 0x1;
constexpr unsigned CU_EVENT_DEFAULT = 0x0;
constexpr int CU_STREAM_CAPTURE_MODE_GLOBAL = 0;
constexpr int CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1;

/// Driver functions, resolved once. Members hold the versioned symbols the
/// driver exports (cuMemAlloc_v2, ...), which is what cuda.h's macros name.
struct DriverSymbols {
  CUresult (*cuInit)(unsigned int) = nullptr;
  CUresult (*cuDeviceGetCount)(int *) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice *, int) = nullptr;
  CUresult (*cuDeviceGetName)(char *, int, CUdevice) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice) = nullptr;
  CUresult (*cuDeviceTotalMem)(size_t *, CUdevice) = nullptr;
  CUresult (*cuGetErrorString)(CUresult, const char **) = nullptr;
  CUresult (*cuGetErrorName)(CUresult, const char **) = nullptr;
  // Context.
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice) = nullptr;
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice) = nullptr;
  CUresult (*cuCtxSetCurrent)(CUcontext) = nullptr;
  CUresult (*cuCtxSynchronize)() = nullptr;
  // Memory.
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t) = nullptr;
  CUresult (*cuMemFree)(CUdeviceptr) = nullptr;
  CUresult (*cuMemGetInfo)(size_t *, size_t *) = nullptr;
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t) = nullptr;
  CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t) = nullptr;
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream) = nullptr;
  CUresult (*cuMemsetD32Async)(CUdeviceptr, unsigned int, size_t, CUstream) = nullptr;
  // Modules and launches.
  CUresult (*cuModuleLoadDataEx)(CUmodule *, const void *, unsigned int,
                                 int * /*CUjit_option*/, void **) = nullptr;
  CUresult (*cuModuleUnload)(CUmodule) = nullptr;
  CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *) = nullptr;
  CUresult (*cuFuncSetAttribute)(CUfunction, int, int) = nullptr;
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, unsigned, CUstream, void **,
                             void **) = nullptr;
  // Streams, events, graphs.
  CUresult (*cuStreamCreate)(CUstream *, unsigned int) = nullptr;
  CUresult (*cuStreamDestroy)(CUstream) = nullptr;
  CUresult (*cuStreamSynchronize)(CUstream) = nullptr;
  CUresult (*cuStreamQuery)(CUstream) = nullptr;
  CUresult (*cuStreamBeginCapture)(CUstream, int /*CUstreamCaptureMode*/) = nullptr;
  CUresult (*cuStreamEndCapture)(CUstream, CUgraph *) = nullptr;
  CUresult (*cuGraphInstantiateWithFlags)(CUgraphExec *, CUgraph,
                                          unsigned long long) = nullptr;
  CUresult (*cuGraphLaunch)(CUgraphExec, CUstream) = nullptr;
  CUresult (*cuGraphExecDestroy)(CUgraphExec) = nullptr;
  CUresult (*cuGraphDestroy)(CUgraph) = nullptr;
  CUresult (*cuEventCreate)(CUevent *, unsigned int) = nullptr;
  CUresult (*cuEventDestroy)(CUevent) = nullptr;
  CUresult (*cuEventRecord)(CUevent, CUstream) = nullptr;
  CUresult (*cuStreamWaitEvent)(CUstream, CUevent, unsigned int) = nullptr;
  CUresult (*cuEventElapsedTime)(float *, CUevent, CUevent) = nullptr;
};

/// Loads libcuda.so.1 and calls cuInit(0) on first use. Returns the table,
/// or nullptr with the reason in |error| (library missing, symbol missing,
/// cuInit failed: e.g. no GPU).
const DriverSymbols *loadDriver(std::string &error);

/// "CUDA_ERROR_NAME (description)" for |result|, or its number if unknown.
std::string describe(const DriverSymbols &driver, CUresult result);

} // namespace txrt::cuda

#endif // TXRT_HAL_CUDA_DYNAMIC_SYMBOLS_H
