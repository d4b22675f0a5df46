// SPDX-License-Identifier: Apache-2.0
// A device probe, not part of txopt: does cuBLASLt's bias-gradient epilogue
// (BGRADA / BGRADB) take the weight-gradient GEMMs of a training step as
// txopt's lowering writes them (column-major, bf16 operands and D), with a
// bf16 or f32 bias gradient, and what does it cost against the same GEMM
// without it? Checks each bias gradient against column sums computed here
// on the host from the same bf16 inputs (relative error printed), and times
// both GEMMs (CUDA events, median of 20 samples of 5 calls).
//   nvcc -O2 -o bgrad_probe bgrad_probe.cu -lcublasLt
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK_CUDA(x)                                                                         \
  do {                                                                                        \
    cudaError_t err_ = (x);                                                                      \
    if (err_ != cudaSuccess) {                                                                 \
      std::printf("cuda error %s at %d\n", cudaGetErrorString(err_), __LINE__);                  \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)

static float hostValue(uint64_t i, uint64_t seed) {
  uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ull ^ seed;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return float((x >> 40) & 0xFFFF) / 65536.0f - 0.5f;
}

struct Case {
  const char *name;
  int m, n, k;
  bool transA, transB;
  cublasLtEpilogue_t epilogue; // BGRADA: bias over m (sums A over k); BGRADB: over n
  bool f32Bias;
};

static float bf(float v) { return __bfloat162float(__float2bfloat16(v)); }

static void runCase(cublasLtHandle_t lt, const Case &c, void *workspace, size_t wsBytes) {
  // Column-major A: m x k (stored k x m when transposed), B: k x n (n x k).
  size_t aElems = size_t(c.m) * c.k, bElems = size_t(c.k) * c.n, dElems = size_t(c.m) * c.n;
  std::vector<__nv_bfloat16> ha(aElems), hb(bElems);
  for (size_t i = 0; i < aElems; ++i) ha[i] = __float2bfloat16(hostValue(i, 1));
  for (size_t i = 0; i < bElems; ++i) hb[i] = __float2bfloat16(hostValue(i, 2));
  __nv_bfloat16 *da, *db, *dd;
  void *dbias;
  int biasLen = c.epilogue == CUBLASLT_EPILOGUE_BGRADA ? c.m : c.n;
  CHECK_CUDA(cudaMalloc(&da, aElems * 2));
  CHECK_CUDA(cudaMalloc(&db, bElems * 2));
  CHECK_CUDA(cudaMalloc(&dd, dElems * 2));
  CHECK_CUDA(cudaMalloc(&dbias, size_t(biasLen) * 4));
  CHECK_CUDA(cudaMemcpy(da, ha.data(), aElems * 2, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(db, hb.data(), bElems * 2, cudaMemcpyHostToDevice));

  int lda = c.transA ? c.k : c.m, ldb = c.transB ? c.n : c.k, ldd = c.m;
  auto layouts = [&](cublasLtMatrixLayout_t &la, cublasLtMatrixLayout_t &lb,
                     cublasLtMatrixLayout_t &ld) {
    cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, c.transA ? c.k : c.m, c.transA ? c.m : c.k, lda);
    cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, c.transB ? c.n : c.k, c.transB ? c.k : c.n, ldb);
    cublasLtMatrixLayoutCreate(&ld, CUDA_R_16BF, c.m, c.n, ldd);
  };
  float times[2] = {0, 0};
  bool ok[2] = {false, false};
  for (int withBias = 0; withBias < 2; ++withBias) {
    cublasLtMatmulDesc_t desc;
    cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    cublasOperation_t ta = c.transA ? CUBLAS_OP_T : CUBLAS_OP_N, tb = c.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta);
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb);
    if (withBias) {
      cublasLtEpilogue_t e = c.epilogue;
      cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof e);
      cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &dbias, sizeof dbias);
      if (c.f32Bias) {
        cudaDataType_t t = CUDA_R_32F;
        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &t, sizeof t);
      }
    }
    cublasLtMatrixLayout_t la, lb, ld;
    layouts(la, lb, ld);
    cublasLtMatmulPreference_t pref;
    cublasLtMatmulPreferenceCreate(&pref);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsBytes,
                                         sizeof wsBytes);
    cublasLtMatmulHeuristicResult_t heur[4];
    int found = 0;
    cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, ld, ld, pref, 4, heur, &found);
    if (st != CUBLAS_STATUS_SUCCESS || found == 0) {
      std::printf("%-28s %s: no algorithm (status %d, found %d)\n", c.name,
                  withBias ? "with bias grad" : "plain", int(st), found);
      continue;
    }
    float alpha = 1, beta = 0;
    cudaEvent_t s, e;
    cudaEventCreate(&s);
    cudaEventCreate(&e);
    std::vector<float> samples;
    for (int it = 0; it < 23; ++it) {
      cudaEventRecord(s);
      for (int r = 0; r < 5; ++r)
        st = cublasLtMatmul(lt, desc, &alpha, da, la, db, lb, &beta, dd, ld, dd, ld, &heur[0].algo,
                            workspace, wsBytes, 0);
      cudaEventRecord(e);
      CHECK_CUDA(cudaEventSynchronize(e));
      float ms;
      cudaEventElapsedTime(&ms, s, e);
      if (it >= 3) samples.push_back(ms / 5);
    }
    if (st != CUBLAS_STATUS_SUCCESS) {
      std::printf("%-28s matmul failed: %d\n", c.name, int(st));
      continue;
    }
    std::sort(samples.begin(), samples.end());
    times[withBias] = samples[samples.size() / 2];
    ok[withBias] = true;
    if (withBias) {
      // Host column sums of the operand the epilogue reduces, over k.
      std::vector<double> want(biasLen, 0.0);
      if (c.epilogue == CUBLASLT_EPILOGUE_BGRADA) {
        for (int i = 0; i < c.m; ++i)
          for (int kk = 0; kk < c.k; ++kk) {
            size_t idx = c.transA ? size_t(i) * lda + kk : size_t(kk) * lda + i;
            want[i] += __bfloat162float(ha[idx]);
          }
      } else {
        for (int j = 0; j < c.n; ++j)
          for (int kk = 0; kk < c.k; ++kk) {
            size_t idx = c.transB ? size_t(kk) * ldb + j : size_t(j) * ldb + kk;
            want[j] += __bfloat162float(hb[idx]);
          }
      }
      std::vector<float> got(biasLen);
      if (c.f32Bias) {
        CHECK_CUDA(cudaMemcpy(got.data(), dbias, size_t(biasLen) * 4, cudaMemcpyDeviceToHost));
      } else {
        std::vector<__nv_bfloat16> g16(biasLen);
        CHECK_CUDA(cudaMemcpy(g16.data(), dbias, size_t(biasLen) * 2, cudaMemcpyDeviceToHost));
        for (int i = 0; i < biasLen; ++i) got[i] = __bfloat162float(g16[i]);
      }
      double worst = 0, scale = 0;
      for (int i = 0; i < biasLen; ++i) scale = std::max(scale, std::fabs(want[i]));
      for (int i = 0; i < biasLen; ++i) worst = std::max(worst, std::fabs(got[i] - want[i]));
      std::printf("%-28s bias %s[%d]: max abs err %.3e (max |sum| %.3e, rel %.2e)\n", c.name,
                  c.f32Bias ? "f32" : "bf16", biasLen, worst, scale, worst / std::max(scale, 1e-30));
    }
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatmulDescDestroy(desc);
  }
  if (ok[0] && ok[1])
    std::printf("%-28s m=%d n=%d k=%d ta=%d tb=%d: plain %.4f ms, with bias grad %.4f ms (+%.1f%%)\n",
                c.name, c.m, c.n, c.k, c.transA, c.transB, times[0], times[1],
                100.0 * (times[1] - times[0]) / times[0]);
  cudaFree(da);
  cudaFree(db);
  cudaFree(dd);
  cudaFree(dbias);
  (void)bf;
}

int main() {
  cublasLtHandle_t lt;
  cublasLtCreate(&lt);
  size_t wsBytes = 32u << 20;
  void *ws;
  CHECK_CUDA(cudaMalloc(&ws, wsBytes));
  const Case cases[] = {
      // txopt's weight-gradient GEMMs of [in, out] weights (GPT-2, BERT's
      // exports): cuBLASLt A = dY (m = out, no transpose), B = X read
      // transposed; the bias over m.
      {"qkv dW [in,out] BGRADA", 2304, 768, 16384, false, true, CUBLASLT_EPILOGUE_BGRADA, true},
      {"qkv dW [in,out] BGRADA bf16", 2304, 768, 16384, false, true, CUBLASLT_EPILOGUE_BGRADA, false},
      {"fc dW [in,out] BGRADA", 3072, 768, 16384, false, true, CUBLASLT_EPILOGUE_BGRADA, true},
      {"proj dW [in,out] BGRADA", 768, 768, 16384, false, true, CUBLASLT_EPILOGUE_BGRADA, true},
      // A [vocab, d] table's gradient (BERT's tied LM head): A = X (m = d),
      // B = dlogits read transposed; the bias over n.
      {"lm-head dW [V,d] BGRADB", 768, 30528, 16384, false, true, CUBLASLT_EPILOGUE_BGRADB, true},
      {"lm-head dW [V,d] BGRADB bf16", 768, 30528, 16384, false, true, CUBLASLT_EPILOGUE_BGRADB, false},
      // The same [in, out] gradient asked the other way round, for the
      // record: bias over n with B untransposed.
      {"[out,in] dW BGRADB tb=0", 768, 2304, 16384, true, false, CUBLASLT_EPILOGUE_BGRADB, true},
  };
  for (const Case &c : cases) runCase(lt, c, ws, wsBytes);
  return 0;
}
