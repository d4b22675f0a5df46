//===- nccl_symbols.cpp - NCCL entry points loaded at run time ------------===//
//
// SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "hal/cuda/nccl_symbols.h"

#include <dlfcn.h>

namespace txrt::cuda {
namespace {

struct LoadedNccl {
  NcclSymbols symbols;
  std::string error; // empty when loading succeeded
};

template <typename Fn>
bool resolve(void *library, const char *name, Fn &slot, std::string &error) {
  slot = reinterpret_cast<Fn>(dlsym(library, name));
  if (!slot)
    error = std::string("NCCL (libnccl.so.2) lacks symbol '") + name +
            "' (NCCL older than 2.14?)";
  return slot != nullptr;
}

LoadedNccl load() {
  LoadedNccl loaded;
  // The soname only: the loader's search (LD_LIBRARY_PATH, the ld.so cache,
  // RUNPATH) is how NCCL is found, as PyTorch's wheels and the CUDA
  // containers install it.
  void *library = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char *reason = dlerror();
    loaded.error = std::string("NCCL (libnccl.so.2) not found: ") +
                   (reason ? reason : "unknown reason") +
                   " (install NCCL or add its directory to LD_LIBRARY_PATH)";
    return loaded;
  }
  NcclSymbols &s = loaded.symbols;
  std::string &e = loaded.error;
  resolve(library, "ncclGetVersion", s.ncclGetVersion, e) &&
      resolve(library, "ncclGetUniqueId", s.ncclGetUniqueId, e) &&
      resolve(library, "ncclCommInitRankConfig", s.ncclCommInitRankConfig, e) &&
      resolve(library, "ncclCommGetAsyncError", s.ncclCommGetAsyncError, e) &&
      resolve(library, "ncclCommAbort", s.ncclCommAbort, e) &&
      resolve(library, "ncclCommDestroy", s.ncclCommDestroy, e) &&
      resolve(library, "ncclCommFinalize", s.ncclCommFinalize, e) &&
      resolve(library, "ncclAllReduce", s.ncclAllReduce, e) &&
      resolve(library, "ncclReduceScatter", s.ncclReduceScatter, e) &&
      resolve(library, "ncclAllGather", s.ncclAllGather, e) &&
      resolve(library, "ncclGroupStart", s.ncclGroupStart, e) &&
      resolve(library, "ncclGroupEnd", s.ncclGroupEnd, e) &&
      resolve(library, "ncclGetErrorString", s.ncclGetErrorString, e) &&
      resolve(library, "ncclGetLastError", s.ncclGetLastError, e);
  return loaded;
}

const char *resultName(ncclResult_t result) {
  switch (result) {
  case ncclSuccess: return "ncclSuccess";
  case ncclUnhandledCudaError: return "ncclUnhandledCudaError";
  case ncclSystemError: return "ncclSystemError";
  case ncclInternalError: return "ncclInternalError";
  case ncclInvalidArgument: return "ncclInvalidArgument";
  case ncclInvalidUsage: return "ncclInvalidUsage";
  case ncclRemoteError: return "ncclRemoteError";
  case ncclInProgress: return "ncclInProgress";
  default: return nullptr;
  }
}

} // namespace

ncclConfig_t defaultNcclConfig() {
  ncclConfig_t config;
  config.size = sizeof(ncclConfig_t);
  config.magic = kNcclConfigMagic;
  config.version = kNcclConfigVersion;
  config.blocking = kNcclConfigUndefinedInt;
  config.cgaClusterSize = kNcclConfigUndefinedInt;
  config.minCTAs = kNcclConfigUndefinedInt;
  config.maxCTAs = kNcclConfigUndefinedInt;
  config.netName = nullptr;
  config.splitShare = kNcclConfigUndefinedInt;
  config.trafficClass = kNcclConfigUndefinedInt;
  config.commName = nullptr;
  config.collnetEnable = kNcclConfigUndefinedInt;
  config.CTAPolicy = kNcclConfigUndefinedInt;
  config.shrinkShare = kNcclConfigUndefinedInt;
  config.nvlsCTAs = kNcclConfigUndefinedInt;
  config.nChannelsPerNetPeer = kNcclConfigUndefinedInt;
  config.nvlinkCentricSched = kNcclConfigUndefinedInt;
  return config;
}

const NcclSymbols *loadNccl(std::string &error) {
  static LoadedNccl loaded = load(); // thread-safe one-time init (C++11)
  error = loaded.error;
  return loaded.error.empty() ? &loaded.symbols : nullptr;
}

std::string describeNccl(const NcclSymbols &nccl, ncclResult_t result, ncclComm_t comm) {
  const char *name = resultName(result);
  std::string out = name ? name : "NCCL error " + std::to_string(result);
  if (nccl.ncclGetErrorString)
    if (const char *text = nccl.ncclGetErrorString(result); text && *text)
      out += std::string(" (") + text + ")";
  if (nccl.ncclGetLastError && result != ncclSuccess && result != ncclInProgress)
    if (const char *last = nccl.ncclGetLastError(comm); last && *last)
      out += std::string(": ") + last;
  // Messages are one line; NCCL's last error sometimes ends in a newline.
  for (char &c : out)
    if (c == '\n' || c == '\r')
      c = ' ';
  while (!out.empty() && out.back() == ' ')
    out.pop_back();
  return out;
}

} // namespace txrt::cuda
