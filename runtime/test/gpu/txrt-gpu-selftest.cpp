//===- txrt-gpu-selftest.cpp - end-to-end check of the runtime on a GPU ---===//
//
// SPDX-License-Identifier: Apache-2.0
// `txrt-gpu-selftest`: builds small artifacts in memory and runs them
// through the public C API (txrt.hpp), the same path txrun takes: a
// hand-written PTX kernel, f32 GEMMs (plain and strided-batched), a bf16
// GEMM, a GEMM accumulating into an argument (beta 1: GEMM tuning, on for
// every case here, runs it many times at load, so it must come before the
// argument's initial value is written), a Memset and a Copy, each checked against a host
// reference, and CUDA-graph replay checked against direct execution. Prints PASS/FAIL per
// case; exits 0 only if every case passes (1 on a failure, 2 without GPU).
// Not run by ctest: it needs a GPU.
//
// Tolerances: f32 GEMM |d - ref| <= 1e-5 * sum_k |a_ik b_kj| (+1e-30);
// bf16 GEMM (bf16 output) |d - ref| <= 1e-2 * sum_k |a_ik b_kj|, where ref
// is computed in double from the bf16-rounded inputs; the PTX kernel,
// Memset and Copy must match exactly, and graph replay must be bitwise
// equal to direct execution.
//
//===----------------------------------------------------------------------===//

#include "core/dtype.h"
#include "txrt/artifact_format.h"
#include "txrt/artifact_generated.h"
#include "txrt/txrt.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

using namespace txrt;

namespace {

/// y[i] = a[i] * 2 + b[i] for i < 1000; parameters are bare pointers, as
/// the compiler's kernels take them.
const char kAxpyPtx[] = R"(.version 8.0
.target sm_90
.address_size 64

.visible .entry twice_plus(
    .param .u64 param_a,
    .param .u64 param_b,
    .param .u64 param_y
)
{
    .reg .pred %p<2>;
    .reg .b32 %r<5>;
    .reg .f32 %f<4>;
    .reg .b64 %rd<11>;

    ld.param.u64 %rd1, [param_a];
    ld.param.u64 %rd2, [param_b];
    ld.param.u64 %rd3, [param_y];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mad.lo.s32 %r4, %r1, %r2, %r3;
    setp.ge.u32 %p1, %r4, 1000;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd4, %rd1;
    cvta.to.global.u64 %rd5, %rd2;
    cvta.to.global.u64 %rd6, %rd3;
    mul.wide.u32 %rd7, %r4, 4;
    add.s64 %rd8, %rd4, %rd7;
    ld.global.f32 %f1, [%rd8];
    add.s64 %rd9, %rd5, %rd7;
    ld.global.f32 %f2, [%rd9];
    fma.rn.f32 %f3, %f1, 0f40000000, %f2;
    add.s64 %rd10, %rd6, %rd7;
    st.global.f32 [%rd10], %f3;
DONE:
    ret;
}
)";
constexpr unsigned kAxpyN = 1000;

/// Builds one artifact: slots are laid out in order, 256-byte aligned.
class ArtifactBuilder {
public:
  unsigned slot(uint64_t bytes) {
    slots_.emplace_back(arena_, bytes);
    arena_ += (bytes + 255) / 256 * 256;
    return static_cast<unsigned>(slots_.size() - 1);
  }
  /// An argument initialized from |bytes| of |source| type, converted to
  /// |dtype| at load. Returns its slot.
  unsigned inlineArgument(const std::string &name, fb::DType dtype,
                          std::vector<int64_t> shape, fb::DType source,
                          const void *bytes, size_t size) {
    uint64_t elements = 1;
    for (int64_t d : shape)
      elements *= static_cast<uint64_t>(d);
    unsigned s = slot(elements * dtypeSize(dtype));
    auto data = b_.CreateVector(static_cast<const uint8_t *>(bytes), size);
    args_.push_back(fb::CreateArgument(b_, b_.CreateString(name), b_.CreateString("param"),
                                       s, dtype, b_.CreateVector(shape),
                                       fb::InitKind::INLINE, 0.0, source, data));
    return s;
  }
  unsigned result(const std::string &name, unsigned slot, fb::DType dtype,
                  std::vector<int64_t> shape, int next = -1) {
    results_.push_back(fb::CreateResult(b_, b_.CreateString(name), slot, dtype,
                                        b_.CreateVector(shape), next));
    return static_cast<unsigned>(results_.size() - 1);
  }
  unsigned ptxKernel(const char *ptx, const std::string &name) {
    auto image = fb::CreateKernelImage(
        b_, fb::ImageFormat::PTX,
        b_.CreateVector(reinterpret_cast<const uint8_t *>(ptx), std::strlen(ptx) + 1));
    images_.push_back(image);
    kernels_.push_back(fb::CreateKernel(b_, b_.CreateString(name),
                                        static_cast<uint32_t>(images_.size() - 1)));
    return static_cast<unsigned>(kernels_.size() - 1);
  }
  void launch(unsigned kernel, std::vector<uint32_t> grid, std::vector<uint32_t> block,
              std::vector<uint32_t> args, const std::string &origin) {
    auto op = fb::CreateLaunch(b_, kernel, b_.CreateVector(grid), b_.CreateVector(block),
                               0, b_.CreateVector(args));
    command(fb::Op::Launch, op.Union(), origin);
  }
  void gemm(const std::function<void(fb::GemmBuilder &)> &fill, const std::string &origin) {
    fb::GemmBuilder g(b_);
    fill(g);
    auto op = g.Finish();
    command(fb::Op::Gemm, op.Union(), origin);
  }
  void memset(unsigned slot, uint32_t value, const std::string &origin) {
    command(fb::Op::Memset, fb::CreateMemset(b_, slot, value).Union(), origin);
  }
  void copy(unsigned dst, unsigned src, uint64_t bytes, const std::string &origin) {
    command(fb::Op::Copy, fb::CreateCopy(b_, dst, src, bytes).Union(), origin);
  }
  std::vector<uint8_t> finish() {
    auto root = fb::CreateArtifact(
        b_, kFormatVersion, b_.CreateString("txrt-gpu-selftest"), b_.CreateString("sm_90"),
        false, b_.CreateString("{}"), arena_, b_.CreateVectorOfStructs(slots_),
        b_.CreateVector(images_), b_.CreateVector(kernels_), 0, b_.CreateVector(args_),
        b_.CreateVector(results_), b_.CreateVector(commands_), arena_);
    fb::FinishArtifactBuffer(b_, root);
    return std::vector<uint8_t>(b_.GetBufferPointer(), b_.GetBufferPointer() + b_.GetSize());
  }

private:
  void command(fb::Op type, flatbuffers::Offset<void> op, const std::string &origin) {
    commands_.push_back(fb::CreateCommand(b_, type, op, b_.CreateString(origin)));
  }
  flatbuffers::FlatBufferBuilder b_;
  uint64_t arena_ = 0;
  std::vector<fb::Slot> slots_;
  std::vector<flatbuffers::Offset<fb::KernelImage>> images_;
  std::vector<flatbuffers::Offset<fb::Kernel>> kernels_;
  std::vector<flatbuffers::Offset<fb::Argument>> args_;
  std::vector<flatbuffers::Offset<fb::Result>> results_;
  std::vector<flatbuffers::Offset<fb::Command>> commands_;
};

int failures = 0;

void report(const std::string &name, bool pass, const std::string &detail) {
  std::printf("%s  %s%s%s\n", pass ? "PASS" : "FAIL", name.c_str(),
              detail.empty() ? "" : ": ", detail.c_str());
  std::fflush(stdout);
  if (!pass)
    ++failures;
}

/// Creates a session or reports why not.
bool open(const std::string &caseName, const std::vector<uint8_t> &bytes, bool graphs,
          SessionHandle &session) {
  txrt_session_options_t options;
  txrt_session_options_init(&options);
  options.disable_graphs = graphs ? 0 : 1;
  // Every GEMM case also checks the tuned algorithm's result.
  options.tune_gemms = 1;
  Error error = SessionHandle::fromBytes(bytes.data(), bytes.size(), nullptr, &options,
                                         session);
  if (error)
    report(caseName, false, "session: " + error.message());
  return !error;
}

std::vector<float> pattern(size_t n, float scale, float offset) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = std::sin(0.37f * float(i) + offset) * scale;
  return v;
}

/// (a) The PTX kernel through the session; the state a <- 2a + b carries
/// across steps by a Copy, and graph replay must equal direct execution.
void testPtxKernelAndGraphs() {
  std::vector<float> a0 = pattern(kAxpyN, 1.0f, 0.0f), b = pattern(kAxpyN, 0.5f, 1.0f);
  auto build = [&]() {
    ArtifactBuilder ab;
    unsigned kernel = ab.ptxKernel(kAxpyPtx, "twice_plus");
    std::vector<int64_t> shape = {kAxpyN};
    unsigned aSlot = ab.inlineArgument("a", fb::DType::F32, shape, fb::DType::F32,
                                       a0.data(), a0.size() * 4);
    unsigned bSlot = ab.inlineArgument("b", fb::DType::F32, shape, fb::DType::F32,
                                       b.data(), b.size() * 4);
    unsigned ySlot = ab.slot(kAxpyN * 4);
    ab.result("y", ySlot, fb::DType::F32, shape, 0);
    ab.launch(kernel, {(kAxpyN + 127) / 128, 1, 1}, {128, 1, 1}, {aSlot, bSlot, ySlot},
              "twice_plus");
    ab.copy(aSlot, ySlot, kAxpyN * 4, "a <- y");
    return ab.finish();
  };
  std::vector<uint8_t> bytes = build();
  const int kSteps = 4;
  std::vector<std::vector<float>> byMode[2];
  for (int graphs = 0; graphs < 2; ++graphs) {
    std::string name = graphs ? "ptx-kernel (graph replay)" : "ptx-kernel (direct)";
    SessionHandle session;
    if (!open(name, bytes, graphs == 1, session))
      return;
    std::vector<float> expect = a0;
    bool ok = true;
    std::string detail;
    for (int step = 1; step <= kSteps && ok; ++step) {
      float ms = 0;
      if (Error e = session.runStep(&ms)) {
        report(name, false, "step " + std::to_string(step) + ": " + e.message());
        return;
      }
      for (unsigned i = 0; i < kAxpyN; ++i)
        expect[i] = expect[i] * 2.0f + b[i];
      std::vector<float> y(kAxpyN), a(kAxpyN);
      Error e1 = session.readResult(0, y.data(), y.size() * 4);
      Error e2 = session.readArgument(0, a.data(), a.size() * 4);
      if (e1 || e2) {
        report(name, false, (e1 ? e1.message() : e2.message()));
        return;
      }
      for (unsigned i = 0; i < kAxpyN && ok; ++i)
        if (y[i] != expect[i] || a[i] != expect[i]) {
          ok = false;
          detail = "step " + std::to_string(step) + ", element " + std::to_string(i) +
                   ": got " + std::to_string(y[i]) + ", expected " +
                   std::to_string(expect[i]);
        }
      byMode[graphs].push_back(y);
    }
    report(name, ok, ok ? std::to_string(kSteps) + " steps exact" : detail);
  }
  report("graph replay == direct (ptx-kernel)",
         byMode[0].size() == byMode[1].size() && byMode[0] == byMode[1], "");
}

/// Host reference of row-major C = A B and the per-element error bound.
void hostGemm(const std::vector<double> &A, const std::vector<double> &B, size_t M,
              size_t N, size_t K, std::vector<double> &C, std::vector<double> &scale) {
  C.assign(M * N, 0.0);
  scale.assign(M * N, 0.0);
  for (size_t i = 0; i < M; ++i)
    for (size_t j = 0; j < N; ++j)
      for (size_t k = 0; k < K; ++k) {
        C[i * N + j] += A[i * K + k] * B[k * N + j];
        scale[i * N + j] += std::fabs(A[i * K + k] * B[k * N + j]);
      }
}

/// (b), (c): row-major C[M x N] = A[M x K] B[K x N], |batch| times, in
/// cuBLASLt's column-major terms by swapping the operands: m = N, n = M,
/// k = K, A-slot = B, B-slot = A, lda = N, ldb = K, ldd = N. With
/// |accumulate|, C is an argument holding C0 and the GEMM adds into it
/// (beta 1): one step must give C0 + A B.
void testGemm(const std::string &name, fb::DType type, size_t M, size_t N, size_t K,
              size_t batch, double tolerance, bool graphs, int steps,
              bool accumulate = false) {
  std::vector<float> A = pattern(batch * M * K, 1.0f, 0.3f);
  std::vector<float> B = pattern(batch * K * N, 1.0f, 2.1f);
  std::vector<float> C0 = pattern(batch * M * N, 0.5f, 1.3f);
  ArtifactBuilder ab;
  // Inputs given as f32 bytes; the session converts them to |type| at load.
  unsigned aSlot = ab.inlineArgument("A", type, {int64_t(batch), int64_t(M), int64_t(K)},
                                     fb::DType::F32, A.data(), A.size() * 4);
  unsigned bSlot = ab.inlineArgument("B", type, {int64_t(batch), int64_t(K), int64_t(N)},
                                     fb::DType::F32, B.data(), B.size() * 4);
  unsigned cSlot =
      accumulate ? ab.inlineArgument("C", type, {int64_t(batch), int64_t(M), int64_t(N)},
                                     fb::DType::F32, C0.data(), C0.size() * 4)
                 : ab.slot(batch * M * N * dtypeSize(type));
  ab.result("C", cSlot, type, {int64_t(batch), int64_t(M), int64_t(N)});
  ab.gemm(
      [&](fb::GemmBuilder &g) {
        g.add_m(N), g.add_n(M), g.add_k(K), g.add_batch(batch);
        g.add_lda(N), g.add_ldb(K), g.add_ldd(N);
        g.add_stride_a(int64_t(K * N)), g.add_stride_b(int64_t(M * K));
        g.add_stride_d(int64_t(M * N));
        g.add_a_type(type), g.add_b_type(type), g.add_d_type(type);
        g.add_compute(fb::ComputeType::F32);
        if (accumulate)
          g.add_beta(1.0f);
        g.add_a(bSlot), g.add_b(aSlot), g.add_d(cSlot);
      },
      name);
  std::vector<uint8_t> bytes = ab.finish();
  SessionHandle session;
  if (!open(name, bytes, graphs, session))
    return;
  std::vector<uint8_t> first, out(batch * M * N * dtypeSize(type));
  for (int step = 1; step <= steps; ++step) {
    if (Error e = session.runStep()) {
      report(name, false, "step " + std::to_string(step) + ": " + e.message());
      return;
    }
    if (Error e = session.readResult(0, out.data(), out.size())) {
      report(name, false, e.message());
      return;
    }
    if (step == 1)
      first = out;
    else if (out != first) {
      report(name, false, "step " + std::to_string(step) + " (graph replay) differs from step 1");
      return;
    }
  }
  double worst = 0;
  std::string detail;
  bool ok = true;
  for (size_t p = 0; p < batch; ++p) {
    std::vector<double> a(M * K), bm(K * N), ref, scale;
    // The reference sees the inputs as the device does: rounded to |type|.
    for (size_t i = 0; i < M * K; ++i) {
      uint8_t tmp[8];
      storeFromDouble(type, tmp, 0, A[p * M * K + i]);
      a[i] = loadAsDouble(type, tmp, 0);
    }
    for (size_t i = 0; i < K * N; ++i) {
      uint8_t tmp[8];
      storeFromDouble(type, tmp, 0, B[p * K * N + i]);
      bm[i] = loadAsDouble(type, tmp, 0);
    }
    hostGemm(a, bm, M, N, K, ref, scale);
    if (accumulate)
      for (size_t i = 0; i < M * N; ++i) {
        uint8_t tmp[8];
        storeFromDouble(type, tmp, 0, C0[p * M * N + i]);
        double c = loadAsDouble(type, tmp, 0);
        ref[i] += c, scale[i] += std::fabs(c);
      }
    for (size_t i = 0; i < M * N; ++i) {
      double got = loadAsDouble(type, out.data(), p * M * N + i);
      double err = std::fabs(got - ref[i]);
      double bound = tolerance * scale[i] + 1e-30;
      worst = std::max(worst, err / (scale[i] + 1e-30));
      if (!(err <= bound) && ok) {
        ok = false;
        detail = "batch " + std::to_string(p) + " element " + std::to_string(i) + ": got " +
                 std::to_string(got) + ", expected " + std::to_string(ref[i]);
      }
    }
  }
  char summary[128];
  std::snprintf(summary, sizeof(summary), "M %zu N %zu K %zu batch %zu, worst relative error %.3g%s",
                M, N, K, batch, worst, steps > 1 ? ", graph replay equal" : "");
  report(name, ok, ok ? summary : detail);
}

/// (d) Memset a slot to 1.0f, Copy it to another; both must be exact.
void testCopyMemset() {
  const std::string name = "memset + copy";
  ArtifactBuilder ab;
  const uint64_t n = 300;
  unsigned s1 = ab.slot(n * 4), s2 = ab.slot(n * 4);
  ab.result("filled", s1, fb::DType::F32, {int64_t(n)});
  ab.result("copied", s2, fb::DType::F32, {int64_t(n)});
  ab.memset(s1, 0x3F800000u, "fill 1.0");
  ab.copy(s2, s1, n * 4, "copy");
  std::vector<uint8_t> bytes = ab.finish();
  SessionHandle session;
  if (!open(name, bytes, true, session))
    return;
  for (int step = 1; step <= 2; ++step)
    if (Error e = session.runStep()) {
      report(name, false, e.message());
      return;
    }
  std::vector<float> filled(n), copied(n);
  Error e1 = session.readResult(0, filled.data(), n * 4);
  Error e2 = session.readResult(1, copied.data(), n * 4);
  if (e1 || e2) {
    report(name, false, e1 ? e1.message() : e2.message());
    return;
  }
  bool ok = true;
  for (uint64_t i = 0; i < n; ++i)
    ok &= filled[i] == 1.0f && copied[i] == 1.0f;
  report(name, ok, ok ? "" : "values differ from 1.0");
}

} // namespace

int main() {
  int count = 0;
  if (Error e{txrt_device_count(&count)}) {
    std::printf("FAIL  no usable GPU: %s\n", e.message().c_str());
    return 2;
  }
  if (count == 0) {
    std::printf("FAIL  the CUDA driver reports no devices\n");
    return 2;
  }
  txrt_device_info_t info;
  if (Error e{txrt_device_info(0, &info)}) {
    std::printf("FAIL  device 0: %s\n", e.message().c_str());
    return 1;
  }
  std::printf("device 0: %s, compute capability %d.%d, %d SMs, %.1f GiB\n", info.name,
              info.compute_capability_major, info.compute_capability_minor,
              info.multiprocessor_count, info.total_memory_bytes / 1073741824.0);

  testPtxKernelAndGraphs();
  testGemm("gemm f32 (direct)", fb::DType::F32, 64, 48, 32, 1, 1e-5, false, 1);
  testGemm("gemm f32 (graph replay)", fb::DType::F32, 64, 48, 32, 1, 1e-5, true, 3);
  testGemm("gemm f32 strided batch", fb::DType::F32, 64, 48, 32, 3, 1e-5, true, 2);
  testGemm("gemm bf16", fb::DType::BF16, 64, 48, 32, 1, 1e-2, true, 2);
  testGemm("gemm bf16 strided batch", fb::DType::BF16, 32, 16, 64, 2, 1e-2, false, 1);
  testGemm("gemm f32 accumulating into an argument", fb::DType::F32, 256, 192, 128, 1, 1e-5,
           false, 1, /*accumulate=*/true);
  testCopyMemset();

  std::printf("%s: %d failure%s\n", failures ? "FAIL" : "PASS", failures,
              failures == 1 ? "" : "s");
  return failures ? 1 : 0;
}
