//===- nccl_symbols.h - NCCL entry points loaded at run time ---*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// NCCL is dlopened, and only for a data-parallel run, so txrun builds
// without NCCL's headers and starts on machines without the library; a run
// that needs it fails at load with one line.
//
//===----------------------------------------------------------------------===//

#ifndef TXRT_HAL_CUDA_NCCL_SYMBOLS_H
#define TXRT_HAL_CUDA_NCCL_SYMBOLS_H

#include "hal/cuda/dynamic_symbols.h"

#include <climits>
#include <cstddef>
#include <string>

namespace txrt::cuda {

// Types and values from nccl.h of NCCL 2.28 (2.28.9), with the ABI's exact
// values and layouts. Enums are passed as int, as the C ABI passes them.
using ncclResult_t = int;
using ncclComm_t = struct ncclComm *;
using ncclDataType_t = int;
using ncclRedOp_t = int;

constexpr size_t kNcclUniqueIdBytes = 128; // NCCL_UNIQUE_ID_BYTES
struct ncclUniqueId {
  char internal[kNcclUniqueIdBytes];
};
static_assert(sizeof(ncclUniqueId) == 128, "layout must match nccl.h");

/// ncclConfig_t as of NCCL 2.28 (struct ncclConfig_v22800). NCCL reads
/// |size| and |version| to know which fields the caller's struct has, so a
/// newer library accepts this one; an older one reads the prefix it knows.
struct ncclConfig_t {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int blocking;
  int cgaClusterSize;
  int minCTAs;
  int maxCTAs;
  const char *netName;
  int splitShare;
  int trafficClass;
  const char *commName;
  int collnetEnable;
  int CTAPolicy;
  int shrinkShare;
  int nvlsCTAs;
  int nChannelsPerNetPeer;
  int nvlinkCentricSched;
};
static_assert(sizeof(ncclConfig_t) == 80, "layout must match nccl.h (NCCL 2.28)");
static_assert(offsetof(ncclConfig_t, netName) == 32 &&
                  offsetof(ncclConfig_t, commName) == 48 &&
                  offsetof(ncclConfig_t, nvlinkCentricSched) == 76,
              "layout must match nccl.h (NCCL 2.28)");

/// NCCL_VERSION(2, 28, 9): what NCCL_CONFIG_INITIALIZER puts in |version|.
constexpr unsigned kNcclConfigVersion = 22809;
constexpr unsigned kNcclConfigMagic = 0xcafebeef;
constexpr int kNcclConfigUndefinedInt = INT_MIN; // NCCL_CONFIG_UNDEF_INT

/// The equivalent of `ncclConfig_t config = NCCL_CONFIG_INITIALIZER;`.
ncclConfig_t defaultNcclConfig();

/// NCCL_VERSION(major, minor, patch) for NCCL 2.9 and later.
constexpr int ncclVersionCode(int major, int minor, int patch) {
  return major * 10000 + minor * 100 + patch;
}

// ncclResult_t.
constexpr ncclResult_t ncclSuccess = 0;
constexpr ncclResult_t ncclUnhandledCudaError = 1;
constexpr ncclResult_t ncclSystemError = 2;
constexpr ncclResult_t ncclInternalError = 3;
constexpr ncclResult_t ncclInvalidArgument = 4;
constexpr ncclResult_t ncclInvalidUsage = 5;
constexpr ncclResult_t ncclRemoteError = 6;
constexpr ncclResult_t ncclInProgress = 7;
// ncclDataType_t.
constexpr ncclDataType_t ncclInt8 = 0;
constexpr ncclDataType_t ncclInt32 = 2;
constexpr ncclDataType_t ncclInt64 = 4;
constexpr ncclDataType_t ncclFloat16 = 6;
constexpr ncclDataType_t ncclFloat32 = 7;
constexpr ncclDataType_t ncclFloat64 = 8;
constexpr ncclDataType_t ncclBfloat16 = 9;
// ncclRedOp_t.
constexpr ncclRedOp_t ncclSum = 0;
constexpr ncclRedOp_t ncclMax = 2;
constexpr ncclRedOp_t ncclAvg = 4;

struct NcclSymbols {
  ncclResult_t (*ncclGetVersion)(int *) = nullptr;
  ncclResult_t (*ncclGetUniqueId)(ncclUniqueId *) = nullptr;
  ncclResult_t (*ncclCommInitRankConfig)(ncclComm_t *, int, ncclUniqueId, int,
                                         ncclConfig_t *) = nullptr;
  ncclResult_t (*ncclCommGetAsyncError)(ncclComm_t, ncclResult_t *) = nullptr;
  ncclResult_t (*ncclCommAbort)(ncclComm_t) = nullptr;
  ncclResult_t (*ncclCommDestroy)(ncclComm_t) = nullptr;
  ncclResult_t (*ncclCommFinalize)(ncclComm_t) = nullptr;
  ncclResult_t (*ncclAllReduce)(const void *, void *, size_t, ncclDataType_t,
                                ncclRedOp_t, ncclComm_t, CUstream) = nullptr;
  ncclResult_t (*ncclReduceScatter)(const void *, void *, size_t, ncclDataType_t,
                                    ncclRedOp_t, ncclComm_t, CUstream) = nullptr;
  ncclResult_t (*ncclAllGather)(const void *, void *, size_t, ncclDataType_t,
                                ncclComm_t, CUstream) = nullptr;
  ncclResult_t (*ncclGroupStart)() = nullptr;
  ncclResult_t (*ncclGroupEnd)() = nullptr;
  const char *(*ncclGetErrorString)(ncclResult_t) = nullptr;
  const char *(*ncclGetLastError)(ncclComm_t) = nullptr;
};

/// Loads libnccl.so.2 once. nullptr with the reason in |error| when it is
/// not there ("NCCL (libnccl.so.2) not found: ...") or lacks a symbol (an
/// NCCL older than 2.14, which has no non-blocking communicators).
const NcclSymbols *loadNccl(std::string &error);

/// "ncclSystemError (unhandled system error)", plus NCCL's last error
/// message for |comm| when it has one.
std::string describeNccl(const NcclSymbols &nccl, ncclResult_t result,
                         ncclComm_t comm = nullptr);

} // namespace txrt::cuda

#endif // TXRT_HAL_CUDA_NCCL_SYMBOLS_H
