//===- cublaslt_symbols.h - cuBLASLt entry points loaded at run time -----===//
//
// SPDX-License-Identifier: Apache-2.0
// cuBLASLt is dlopened like the driver, and only when an artifact has GEMMs,
// so artifacts without GEMMs run where the library is absent.
//
//===----------------------------------------------------------------------===//

#ifndef TXRT_HAL_CUDA_CUBLASLT_SYMBOLS_H
#define TXRT_HAL_CUDA_CUBLASLT_SYMBOLS_H

#include "hal/cuda/dynamic_symbols.h"

#include <cstdint>
#include <string>

namespace txrt::cuda {

// Types and enum values from cublasLt.h, cublas_api.h and library_types.h
// of CUDA 13.0, with the ABI's exact values and layouts.
using cublasStatus_t = int;
using cublasLtHandle_t = struct cublasLtContext *;
using cublasLtMatmulDesc_t = struct cublasLtMatmulDescOpaque *;
using cublasLtMatrixLayout_t = struct cublasLtMatrixLayoutOpaque *;
using cublasLtMatmulPreference_t = struct cublasLtMatmulPreferenceOpaque *;

struct cublasLtMatmulAlgo_t {
  uint64_t data[8];
};
struct cublasLtMatmulHeuristicResult_t {
  cublasLtMatmulAlgo_t algo;
  size_t workspaceSize;
  cublasStatus_t state;
  float wavesCount;
  int reserved[4];
};
static_assert(sizeof(cublasLtMatmulHeuristicResult_t) == 96,
              "layout must match cublasLt.h");

constexpr cublasStatus_t CUBLAS_STATUS_SUCCESS = 0;
// cudaDataType_t (library_types.h).
constexpr int CUDA_R_32F = 0;
constexpr int CUDA_R_16F = 2;
constexpr int CUDA_R_16BF = 14;
constexpr int CUDA_R_8F_E4M3 = 28;
constexpr int CUDA_R_8F_E5M2 = 29;
// cublasComputeType_t.
constexpr int CUBLAS_COMPUTE_32F = 68;
constexpr int CUBLAS_COMPUTE_32F_FAST_TF32 = 77;
// cublasOperation_t.
constexpr int32_t CUBLAS_OP_N = 0;
constexpr int32_t CUBLAS_OP_T = 1;
// cublasLtMatmulDescAttributes_t.
constexpr int CUBLASLT_MATMUL_DESC_TRANSA = 3;
constexpr int CUBLASLT_MATMUL_DESC_TRANSB = 4;
constexpr int CUBLASLT_MATMUL_DESC_EPILOGUE = 7;
constexpr int CUBLASLT_MATMUL_DESC_BIAS_POINTER = 8;
constexpr int CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER = 11;
constexpr int CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD = 12; // int64_t
constexpr int CUBLASLT_MATMUL_DESC_A_SCALE_POINTER = 17;
constexpr int CUBLASLT_MATMUL_DESC_B_SCALE_POINTER = 18;
constexpr int CUBLASLT_MATMUL_DESC_D_SCALE_POINTER = 20;
constexpr int CUBLASLT_MATMUL_DESC_AMAX_D_POINTER = 21;
constexpr int CUBLASLT_MATMUL_DESC_FAST_ACCUM = 25; // int8_t
// cublasLtEpilogue_t.
constexpr uint32_t CUBLASLT_EPILOGUE_DEFAULT = 1;
constexpr uint32_t CUBLASLT_EPILOGUE_BIAS = 4;
constexpr uint32_t CUBLASLT_EPILOGUE_GELU = 32;
constexpr uint32_t CUBLASLT_EPILOGUE_GELU_BIAS = 36;
constexpr uint32_t CUBLASLT_EPILOGUE_GELU_AUX = 160;      // GELU | 128
constexpr uint32_t CUBLASLT_EPILOGUE_GELU_AUX_BIAS = 164; // GELU_AUX | BIAS
// cublasLtMatrixLayoutAttribute_t.
constexpr int CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT = 5;
constexpr int CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET = 6;
// cublasLtMatmulPreferenceAttributes_t.
constexpr int CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1;

struct BlasLtSymbols {
  cublasStatus_t (*cublasLtCreate)(cublasLtHandle_t *) = nullptr;
  cublasStatus_t (*cublasLtDestroy)(cublasLtHandle_t) = nullptr;
  size_t (*cublasLtGetVersion)() = nullptr;
  const char *(*cublasLtGetStatusName)(cublasStatus_t) = nullptr;
  const char *(*cublasLtGetStatusString)(cublasStatus_t) = nullptr;
  cublasStatus_t (*cublasLtMatmulDescCreate)(cublasLtMatmulDesc_t *, int, int) = nullptr;
  cublasStatus_t (*cublasLtMatmulDescDestroy)(cublasLtMatmulDesc_t) = nullptr;
  cublasStatus_t (*cublasLtMatmulDescSetAttribute)(cublasLtMatmulDesc_t, int,
                                                    const void *, size_t) = nullptr;
  cublasStatus_t (*cublasLtMatrixLayoutCreate)(cublasLtMatrixLayout_t *, int,
                                                uint64_t, uint64_t, int64_t) = nullptr;
  cublasStatus_t (*cublasLtMatrixLayoutDestroy)(cublasLtMatrixLayout_t) = nullptr;
  cublasStatus_t (*cublasLtMatrixLayoutSetAttribute)(cublasLtMatrixLayout_t, int,
                                                      const void *, size_t) = nullptr;
  cublasStatus_t (*cublasLtMatmulPreferenceCreate)(cublasLtMatmulPreference_t *) = nullptr;
  cublasStatus_t (*cublasLtMatmulPreferenceDestroy)(cublasLtMatmulPreference_t) = nullptr;
  cublasStatus_t (*cublasLtMatmulPreferenceSetAttribute)(cublasLtMatmulPreference_t,
                                                          int, const void *,
                                                          size_t) = nullptr;
  cublasStatus_t (*cublasLtMatmulAlgoGetHeuristic)(
      cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t,
      cublasLtMatrixLayout_t, cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
      cublasLtMatmulPreference_t, int, cublasLtMatmulHeuristicResult_t *,
      int *) = nullptr;
  cublasStatus_t (*cublasLtMatmul)(cublasLtHandle_t, cublasLtMatmulDesc_t,
                                   const void *, const void *,
                                   cublasLtMatrixLayout_t, const void *,
                                   cublasLtMatrixLayout_t, const void *,
                                   const void *, cublasLtMatrixLayout_t, void *,
                                   cublasLtMatrixLayout_t,
                                   const cublasLtMatmulAlgo_t *, void *, size_t,
                                   CUstream) = nullptr;
};

/// Loads cuBLASLt once (libcublasLt.so.13, then libcublasLt.so, also under
/// /usr/local/cuda/lib64 and /usr/local/cuda/targets/x86_64-linux/lib).
/// nullptr with the reason in |error| when none loads or a symbol is missing.
const BlasLtSymbols *loadBlasLt(std::string &error);

/// "CUBLAS_STATUS_NAME (description)" for |status|.
std::string describeBlas(const BlasLtSymbols &lt, cublasStatus_t status);

} // namespace txrt::cuda

#endif // TXRT_HAL_CUDA_CUBLASLT_SYMBOLS_H
