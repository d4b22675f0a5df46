//===- cublaslt_symbols.cpp - cuBLASLt entry points loaded at run time ----===//
//
// SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "hal/cuda/cublaslt_symbols.h"

#include <dlfcn.h>

namespace txrt::cuda {
namespace {

struct LoadedBlasLt {
  BlasLtSymbols symbols;
  std::string error;
};

template <typename Fn>
bool resolve(void *library, const char *name, Fn &slot, std::string &error) {
  slot = reinterpret_cast<Fn>(dlsym(library, name));
  if (!slot)
    error = std::string("cuBLASLt lacks symbol '") + name + "'";
  return slot != nullptr;
}

LoadedBlasLt load() {
  LoadedBlasLt loaded;
  static const char *const kCandidates[] = {
      "libcublasLt.so.13",
      "libcublasLt.so",
      "/usr/local/cuda/lib64/libcublasLt.so.13",
      "/usr/local/cuda/lib64/libcublasLt.so",
      "/usr/local/cuda/targets/x86_64-linux/lib/libcublasLt.so.13",
      "/usr/local/cuda/targets/x86_64-linux/lib/libcublasLt.so",
  };
  void *library = nullptr;
  std::string tried;
  for (const char *candidate : kCandidates) {
    library = dlopen(candidate, RTLD_NOW | RTLD_LOCAL);
    if (library)
      break;
    const char *reason = dlerror();
    if (tried.empty())
      tried = reason ? reason : candidate;
  }
  if (!library) {
    loaded.error = "cannot load cuBLASLt (tried libcublasLt.so.13, "
                   "libcublasLt.so and /usr/local/cuda/...: " + tried + ")";
    return loaded;
  }
  BlasLtSymbols &s = loaded.symbols;
  std::string &e = loaded.error;
  resolve(library, "cublasLtCreate", s.cublasLtCreate, e) &&
      resolve(library, "cublasLtDestroy", s.cublasLtDestroy, e) &&
      resolve(library, "cublasLtGetVersion", s.cublasLtGetVersion, e) &&
      resolve(library, "cublasLtGetStatusName", s.cublasLtGetStatusName, e) &&
      resolve(library, "cublasLtGetStatusString", s.cublasLtGetStatusString, e) &&
      resolve(library, "cublasLtMatmulDescCreate", s.cublasLtMatmulDescCreate, e) &&
      resolve(library, "cublasLtMatmulDescDestroy", s.cublasLtMatmulDescDestroy, e) &&
      resolve(library, "cublasLtMatmulDescSetAttribute",
              s.cublasLtMatmulDescSetAttribute, e) &&
      resolve(library, "cublasLtMatrixLayoutCreate", s.cublasLtMatrixLayoutCreate, e) &&
      resolve(library, "cublasLtMatrixLayoutDestroy", s.cublasLtMatrixLayoutDestroy, e) &&
      resolve(library, "cublasLtMatrixLayoutSetAttribute",
              s.cublasLtMatrixLayoutSetAttribute, e) &&
      resolve(library, "cublasLtMatmulPreferenceCreate",
              s.cublasLtMatmulPreferenceCreate, e) &&
      resolve(library, "cublasLtMatmulPreferenceDestroy",
              s.cublasLtMatmulPreferenceDestroy, e) &&
      resolve(library, "cublasLtMatmulPreferenceSetAttribute",
              s.cublasLtMatmulPreferenceSetAttribute, e) &&
      resolve(library, "cublasLtMatmulAlgoGetHeuristic",
              s.cublasLtMatmulAlgoGetHeuristic, e) &&
      resolve(library, "cublasLtMatmul", s.cublasLtMatmul, e);
  return loaded;
}

} // namespace

const BlasLtSymbols *loadBlasLt(std::string &error) {
  static LoadedBlasLt loaded = load();
  error = loaded.error;
  return loaded.error.empty() ? &loaded.symbols : nullptr;
}

std::string describeBlas(const BlasLtSymbols &lt, cublasStatus_t status) {
  std::string out = "cuBLAS status " + std::to_string(status);
  if (lt.cublasLtGetStatusName)
    if (const char *name = lt.cublasLtGetStatusName(status))
      out = name;
  if (lt.cublasLtGetStatusString)
    if (const char *text = lt.cublasLtGetStatusString(status))
      out += std::string(" (") + text + ")";
  return out;
}

} // namespace txrt::cuda
