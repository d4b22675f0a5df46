//===- cudnn_attention.cpp - hal::Attention on cuDNN's fused SDPA ---------===//
//
// SPDX-License-Identifier: Apache-2.0
// Each attention call of a step becomes one cuDNN frontend graph (an SDPA
// forward with its row statistics, or an SDPA backward), validated and
// planned once at load; running it is one execute on the session's stream,
// which a CUDA graph captures like any other launch.
//
// cuDNN is dlopened (libcudnn.so.9), like the driver and cuBLASLt, so the
// runtime still starts on a machine without it and only an artifact that
// has attention calls asks for it. The frontend is header-only and built
// with NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING: every backend call goes
// through dlsym on the handle opened here. The frontend also dlopens
// libcudart by soname for device queries; the toolkit's copy is loaded
// first from the usual CUDA folders so that soname resolves when
// /usr/local/cuda/lib64 is not on the loader's path.
//
// Dropout: cuDNN draws the mask with Philox from a seed and an offset, both
// int64 in device memory, read at each execute: the seed is the step's
// dropout key (a captured graph replays with the key the driver wrote for
// this step), the offset the call site's constant (the compiler derives it
// from the site's seed so that two sites of one step never share random
// numbers; AttentionLowering.cpp). The backward of a call gets the same key
// and offset and so regenerates the forward's mask.
//
// Statistics: cuDNN's "Stats" output is the natural-log log-sum-exp of the
// scaled, masked scores per query row (f32), which is exactly tx.attention's
// `lse`, so the forward's output feeds the backward unchanged.
//
//===----------------------------------------------------------------------===//

#include "hal/cuda/cuda_hal.h"

#ifdef TXRT_HAVE_CUDNN_FRONTEND

#include <array>
#include <cstring>
#include <dlfcn.h>

#include <cudnn_frontend.h>

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace cudnn_frontend {
// The frontend's dynamic-loading shim resolves every cuDNN symbol here.
void *cudnn_dlhandle = nullptr;
} // namespace cudnn_frontend

namespace txrt::cuda {
namespace {

namespace fe = cudnn_frontend;

/// Opens libcudnn.so.9 (TXRT_CUDNN_LIBRARY overrides) and makes a CUDA 13
/// libcudart resolvable by soname. Once per process; the error is kept.
const std::string &openCudnn() {
  static std::string error;
  static std::once_flag once;
  std::call_once(once, [] {
    if (!dlopen("libcudart.so.13", RTLD_NOW | RTLD_GLOBAL)) {
      const char *candidates[] = {
          "/usr/local/cuda/lib64/libcudart.so.13",
          "/usr/local/cuda/targets/x86_64-linux/lib/libcudart.so.13",
          "/usr/local/cuda-13.0/lib64/libcudart.so.13"};
      bool found = false;
      for (const char *path : candidates)
        if (dlopen(path, RTLD_NOW | RTLD_GLOBAL)) {
          found = true;
          break;
        }
      if (!found) {
        error = "libcudart.so.13 (CUDA 13's runtime, which cuDNN's frontend "
                "queries the device with) was not found on the loader path "
                "or in /usr/local/cuda/lib64";
        return;
      }
    }
    const char *override = std::getenv("TXRT_CUDNN_LIBRARY");
    const char *name = override && *override ? override : "libcudnn.so.9";
    fe::cudnn_dlhandle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!fe::cudnn_dlhandle) {
      const char *why = dlerror();
      error = std::string("cannot load cuDNN (") + name + "): " +
              (why ? why : "unknown error") +
              "; fused attention needs cuDNN 9 (set TXRT_CUDNN_LIBRARY to its path)";
      return;
    }
    try {
      size_t version = fe::detail::get_backend_version();
      if (version < 90000)
        error = "cuDNN " + std::to_string(version) +
                " is too old for fused attention (needs 9.0 or newer)";
    } catch (const std::exception &e) {
      error = std::string("cuDNN does not answer cudnnGetVersion: ") + e.what();
    }
  });
  return error;
}

fe::DataType_t feType(fb::DType type) {
  switch (type) {
  case fb::DType::F16: return fe::DataType_t::HALF;
  case fb::DType::F8E4M3FN: return fe::DataType_t::FP8_E4M3;
  case fb::DType::F8E5M2: return fe::DataType_t::FP8_E5M2;
  default: return fe::DataType_t::BFLOAT16;
  }
}

std::vector<int64_t> dimsOf(const hal::AttentionTensorSpec &t) {
  return {t.dims[0], t.dims[1], t.dims[2], t.dims[3]};
}
std::vector<int64_t> stridesOf(const hal::AttentionTensorSpec &t) {
  return {t.strides[0], t.strides[1], t.strides[2], t.strides[3]};
}

/// Causal (top-left aligned, as tx.attention), the sliding window and the
/// additive bias: the same on the forward and the backward attributes.
template <typename Attributes>
void setMasking(Attributes &options, const hal::AttentionSpec &spec,
                const std::shared_ptr<fe::graph::Tensor_attributes> &bias) {
  if (spec.causal)
    options.set_causal_mask(true);
  if (spec.window > 0)
    options.set_diagonal_band_left_bound(static_cast<int>(spec.window));
  if (bias)
    options.set_bias(bias);
}

/// Tensor uids of the variant pack (FP8 attention's scalars after the
/// tensors).
enum Uid : int64_t {
  Q = 1, K, V, O, LSE, BIAS, DO, DQ, DK, DV, SEED, OFFSET,
  DESCALE_Q, DESCALE_K, DESCALE_V, DESCALE_S, SCALE_S, SCALE_O, AMAX_S, AMAX_O,
  DESCALE_O, DESCALE_DO, DESCALE_DP, SCALE_DQ, SCALE_DK, SCALE_DV, SCALE_DP,
  AMAX_DQ, AMAX_DK, AMAX_DV, AMAX_DP
};
static_assert(AMAX_DP - DESCALE_Q + 1 == txrt::kAttentionScalarCount,
              "one uid per FP8 attention scalar, in fb::AttentionScalar's order");
// The order itself, at each end of each direction's run of scalars.
static_assert(SCALE_S - DESCALE_Q == static_cast<int>(fb::AttentionScalar::SCALE_S) &&
                  SCALE_O - DESCALE_Q == static_cast<int>(fb::AttentionScalar::SCALE_O) &&
                  AMAX_O - DESCALE_Q == static_cast<int>(fb::AttentionScalar::AMAX_O) &&
                  DESCALE_O - DESCALE_Q == static_cast<int>(fb::AttentionScalar::DESCALE_O) &&
                  SCALE_DP - DESCALE_Q == static_cast<int>(fb::AttentionScalar::SCALE_DP) &&
                  AMAX_DQ - DESCALE_Q == static_cast<int>(fb::AttentionScalar::AMAX_DQ),
              "the uids follow fb::AttentionScalar's order");

/// The uid of FP8 attention scalar |which|.
Uid scalarUid(fb::AttentionScalar which) {
  return static_cast<Uid>(DESCALE_Q + static_cast<int64_t>(which));
}

using TensorPtr = std::shared_ptr<fe::graph::Tensor_attributes>;

/// The byte alignment cuDNN may assume of |ptr|: its largest power-of-two
/// divisor, at most 16 (the frontend's default, which every tensor but an
/// FP8 scale inside a step's packed state has).
int64_t alignmentOf(hal::DevicePtr ptr) {
  int64_t alignment = 16;
  while (alignment > 1 && ptr % static_cast<hal::DevicePtr>(alignment) != 0)
    alignment /= 2;
  return alignment;
}

/// A one-element [1, 1, 1, 1] tensor of |type| in device memory (a
/// dropout key or offset, an FP8 scale or amax) at |ptr|, declared as
/// aligned as |ptr| is (a step's FP8 scales are 4-byte entries of packed
/// state).
TensorPtr scalarTensor(fe::graph::Graph &graph, const char *name, Uid uid,
                       fe::DataType_t type, hal::DevicePtr ptr = 0) {
  return graph.tensor(fe::graph::Tensor_attributes()
                          .set_name(name)
                          .set_uid(uid)
                          .set_dim({1, 1, 1, 1})
                          .set_stride({1, 1, 1, 1})
                          .set_data_type(type)
                          .set_alignment(alignmentOf(ptr)));
}

/// Describes |stats| as cuDNN's row statistics of |spec|: f32 [B, H, Tq, 1]
/// (tx.attention's lse), written by a forward, read by a backward.
void describeStats(fe::graph::Tensor_attributes &stats, const hal::AttentionSpec &spec) {
  const int64_t b = spec.q.dims[0], h = spec.q.dims[1], tq = spec.q.dims[2];
  stats.set_uid(LSE)
      .set_dim({b, h, tq, 1})
      .set_stride({h * tq, tq, 1, 1})
      .set_data_type(fe::DataType_t::FLOAT);
}

/// The backward's input statistics (the forward's output).
TensorPtr statsInput(fe::graph::Graph &graph, const hal::AttentionSpec &spec) {
  fe::graph::Tensor_attributes stats;
  stats.set_name("Stats");
  describeStats(stats, spec);
  return graph.tensor(stats);
}

/// Dropout of the probabilities with cuDNN's own mask (see the top).
template <typename Attributes>
void setDropout(fe::graph::Graph &graph, Attributes &options, const hal::AttentionSpec &spec) {
  if (spec.dropout <= 0.0f)
    return;
  options.set_dropout(spec.dropout,
                      scalarTensor(graph, "DropoutKey", SEED, fe::DataType_t::INT64, spec.dropoutKey),
                      scalarTensor(graph, "DropoutOffset", OFFSET, fe::DataType_t::INT64,
                                   spec.dropoutOffset));
}

/// A built graph: the operation graph and its execution plan. The addresses
/// are not part of it (they come with each execute, in the variant pack),
/// so every call of one shape shares it.
struct BuiltGraph {
  fe::graph::Graph graph;
  size_t workspace = 0;
};

class CudnnPlan final : public hal::AttentionPlan {
public:
  size_t workspaceBytes() const override { return built->workspace; }
  std::shared_ptr<BuiltGraph> built;
  std::unordered_map<int64_t, void *> pointers;
};

/// Everything of a spec that shapes the built graph (not the addresses):
/// the key of the graph cache.
std::string graphKey(const hal::AttentionSpec &spec) {
  std::string key;
  auto add = [&](int64_t v) { key += std::to_string(v) + ","; };
  add(spec.backward), add(static_cast<int64_t>(spec.dtype)), add(spec.causal),
      add(spec.window), add(spec.hasMask), add(spec.deterministic), add(spec.fp8),
      add(static_cast<int64_t>(spec.gradType));
  uint32_t scaleBits, dropoutBits;
  std::memcpy(&scaleBits, &spec.scale, sizeof scaleBits);
  std::memcpy(&dropoutBits, &spec.dropout, sizeof dropoutBits);
  add(scaleBits), add(dropoutBits);
  for (const hal::AttentionTensorSpec *t :
       {&spec.q, &spec.k, &spec.v, &spec.o, &spec.mask, &spec.gradO, &spec.gradQ, &spec.gradK,
        &spec.gradV})
    for (int i = 0; i < 4; ++i)
      add(t->dims[i]), add(t->strides[i]);
  // The scalars' alignments are declared in the graph.
  if (spec.dropout > 0.0f)
    add(alignmentOf(spec.dropoutKey)), add(alignmentOf(spec.dropoutOffset));
  if (spec.fp8)
    for (unsigned i = 0; i < txrt::kAttentionScalarCount; ++i)
      if (txrt::attentionScalarUsed(static_cast<fb::AttentionScalar>(i), spec.backward))
        add(alignmentOf(spec.fp8Scalars[i]));
  return key;
}

class CudnnAttention final : public hal::Attention {
public:
  explicit CudnnAttention(cudnnHandle_t handle) : handle_(handle) {}
  ~CudnnAttention() override {
    try {
      fe::detail::destroy_handle(handle_);
    } catch (...) {
    }
  }

  /// Building a graph takes cuDNN's heuristics and kernel compilation,
  /// ~60 ms each: a step's layers repeat a few shapes (GPT-2-124M: 24
  /// calls, 2 graphs), so each shape is built once and its calls share it.
  Status prepare(const hal::AttentionSpec &spec,
                 std::unique_ptr<hal::AttentionPlan> &out) override {
    auto plan = std::make_unique<CudnnPlan>();
    bindPointers(spec, plan->pointers);
    std::string key = graphKey(spec);
    auto cached = graphs_.find(key);
    if (cached != graphs_.end()) {
      plan->built = cached->second;
    } else {
      plan->built = std::make_shared<BuiltGraph>();
      try {
        TXRT_RETURN_IF_ERROR(build(spec, *plan->built));
      } catch (const std::exception &e) {
        return Status::internal(std::string("cuDNN frontend: ") + e.what());
      }
      graphs_.emplace(key, plan->built);
    }
    out = std::move(plan);
    return Status();
  }

  Status run(hal::AttentionPlan &generic, hal::DevicePtr workspace,
             hal::Stream &stream) override {
    auto &plan = static_cast<CudnnPlan &>(generic);
    try {
      cudnnStatus_t s = fe::detail::set_stream(
          handle_, reinterpret_cast<cudaStream_t>(streamHandle(stream)));
      if (s != CUDNN_STATUS_SUCCESS)
        return Status::internal("cudnnSetStream failed: status " + std::to_string(s));
      auto result = plan.built->graph.execute(handle_, plan.pointers,
                                       reinterpret_cast<void *>(workspace));
      if (result.is_bad())
        return Status::internal("cuDNN SDPA execute failed: " + result.get_message());
    } catch (const std::exception &e) {
      return Status::internal(std::string("cuDNN frontend: ") + e.what());
    }
    return Status();
  }

private:
  Status build(const hal::AttentionSpec &spec, BuiltGraph &built) {
    if (spec.fp8)
      TXRT_RETURN_IF_ERROR(buildFP8(spec, built.graph));
    else
      buildBF16(spec, built.graph);
    return plan(built);
  }

  void buildBF16(const hal::AttentionSpec &spec, fe::graph::Graph &graph) {
    graph.set_io_data_type(feType(spec.dtype))
        .set_intermediate_data_type(fe::DataType_t::FLOAT)
        .set_compute_data_type(fe::DataType_t::FLOAT);
    auto tensor = [&](const char *name, Uid uid, const hal::AttentionTensorSpec &t) {
      return graph.tensor(fe::graph::Tensor_attributes()
                              .set_name(name)
                              .set_uid(uid)
                              .set_dim(dimsOf(t))
                              .set_stride(stridesOf(t)));
    };
    auto q = tensor("Q", Q, spec.q);
    auto k = tensor("K", K, spec.k);
    auto v = tensor("V", V, spec.v);
    std::shared_ptr<fe::graph::Tensor_attributes> bias;
    if (spec.hasMask)
      bias = tensor("Bias", BIAS, spec.mask);

    if (!spec.backward) {
      auto options = fe::graph::SDPA_attributes()
                         .set_name("sdpa_forward")
                         .set_generate_stats(true)
                         .set_attn_scale(spec.scale);
      setMasking(options, spec, bias);
      setDropout(graph, options, spec);
      auto [o, stats] = graph.sdpa(q, k, v, options);
      o->set_output(true).set_uid(O).set_dim(dimsOf(spec.o)).set_stride(stridesOf(spec.o));
      describeStats(stats->set_output(true), spec);
    } else {
      auto o = tensor("O", O, spec.o);
      auto dO = tensor("dO", DO, spec.gradO);
      auto stats = statsInput(graph, spec);
      auto options = fe::graph::SDPA_backward_attributes()
                         .set_name("sdpa_backward")
                         .set_attn_scale(spec.scale)
                         .set_deterministic_algorithm(spec.deterministic);
      setMasking(options, spec, bias);
      setDropout(graph, options, spec);
      auto [dQ, dK, dV] = graph.sdpa_backward(q, k, v, o, dO, stats, options);
      dQ->set_output(true).set_uid(DQ).set_dim(dimsOf(spec.gradQ)).set_stride(stridesOf(spec.gradQ));
      dK->set_output(true).set_uid(DK).set_dim(dimsOf(spec.gradK)).set_stride(stridesOf(spec.gradK));
      dV->set_output(true).set_uid(DV).set_dim(dimsOf(spec.gradV)).set_stride(stridesOf(spec.gradV));
    }
  }

  /// cuDNN's FP8 flash attention (sdpa_fp8, sdpa_fp8_backward): the
  /// tensors in their FP8 types, every scale an f32 [1, 1, 1, 1] tensor in
  /// device memory, the amaxes outputs of the same form.
  Status buildFP8(const hal::AttentionSpec &spec, fe::graph::Graph &graph) {
    if (spec.hasMask || spec.window > 0 || spec.dropout > 0.0f)
      return Status::unavailable(
          "cuDNN's FP8 attention on Hopper takes no mask, sliding window or dropout");
    // cuDNN's FP8 backward has a deterministic algorithm on Blackwell only
    // (cudnn-frontend 1.32's sdpa_fp8_backward), which this runtime does not
    // ask for yet: refused, not silently run the other way.
    if (spec.backward && spec.deterministic)
      return Status::unavailable(
          "the deterministic attention backward (--deterministic) is not available for "
          "cuDNN's FP8 attention: run without --deterministic, or compile the step "
          "without --fp8-attention");
    graph.set_io_data_type(feType(spec.dtype))
        .set_intermediate_data_type(fe::DataType_t::FLOAT)
        .set_compute_data_type(fe::DataType_t::FLOAT);
    auto tensor = [&](const char *name, Uid uid, const hal::AttentionTensorSpec &t,
                      fb::DType type) {
      return graph.tensor(fe::graph::Tensor_attributes()
                              .set_name(name)
                              .set_uid(uid)
                              .set_dim(dimsOf(t))
                              .set_stride(stridesOf(t))
                              .set_data_type(feType(type)));
    };
    using S = fb::AttentionScalar;
    auto scalar = [&](const char *name, S which) {
      return scalarTensor(graph, name, scalarUid(which), fe::DataType_t::FLOAT,
                          spec.fp8Scalar(which));
    };
    auto asScalarOutput = [&](const std::shared_ptr<fe::graph::Tensor_attributes> &t, S which) {
      t->set_output(true).set_uid(scalarUid(which)).set_dim({1, 1, 1, 1}).set_stride({1, 1, 1, 1})
          .set_data_type(fe::DataType_t::FLOAT).set_alignment(alignmentOf(spec.fp8Scalar(which)));
    };
    auto q = tensor("Q", Q, spec.q, spec.dtype);
    auto k = tensor("K", K, spec.k, spec.dtype);
    auto v = tensor("V", V, spec.v, spec.dtype);
    auto descaleQ = scalar("Descale_Q", S::DESCALE_Q), descaleK = scalar("Descale_K", S::DESCALE_K);
    auto descaleV = scalar("Descale_V", S::DESCALE_V), descaleS = scalar("Descale_S", S::DESCALE_S);
    auto scaleS = scalar("Scale_S", S::SCALE_S);
    if (!spec.backward) {
      auto options = fe::graph::SDPA_fp8_attributes()
                         .set_name("sdpa_fp8")
                         .set_generate_stats(true)
                         .set_causal_mask(spec.causal)
                         .set_attn_scale(spec.scale);
      auto [o, stats, amaxS, amaxO] =
          graph.sdpa_fp8(q, k, v, descaleQ, descaleK, descaleV, descaleS, scaleS,
                         scalar("Scale_O", S::SCALE_O), options);
      o->set_output(true).set_uid(O).set_dim(dimsOf(spec.o)).set_stride(stridesOf(spec.o))
          .set_data_type(feType(spec.dtype));
      describeStats(stats->set_output(true), spec);
      asScalarOutput(amaxS, S::AMAX_S);
      asScalarOutput(amaxO, S::AMAX_O);
      return Status();
    }
    auto o = tensor("O", O, spec.o, spec.dtype);
    auto dO = tensor("dO", DO, spec.gradO, spec.gradType);
    auto stats = statsInput(graph, spec);
    auto options = fe::graph::SDPA_fp8_backward_attributes()
                       .set_name("sdpa_fp8_backward")
                       .set_causal_mask(spec.causal)
                       .set_attn_scale(spec.scale);
    auto [dQ, dK, dV, amaxDQ, amaxDK, amaxDV, amaxDP] = graph.sdpa_fp8_backward(
        q, k, v, o, dO, stats, descaleQ, descaleK, descaleV, scalar("Descale_O", S::DESCALE_O),
        scalar("Descale_dO", S::DESCALE_DO), descaleS, scalar("Descale_dP", S::DESCALE_DP), scaleS,
        scalar("Scale_dQ", S::SCALE_DQ), scalar("Scale_dK", S::SCALE_DK),
        scalar("Scale_dV", S::SCALE_DV), scalar("Scale_dP", S::SCALE_DP), options);
    for (auto [t, uid, spec_] : {std::tuple{dQ, DQ, &spec.gradQ}, {dK, DK, &spec.gradK},
                                 {dV, DV, &spec.gradV}})
      t->set_output(true).set_uid(uid).set_dim(dimsOf(*spec_)).set_stride(stridesOf(*spec_))
          .set_data_type(feType(spec.gradType));
    asScalarOutput(amaxDQ, S::AMAX_DQ);
    asScalarOutput(amaxDK, S::AMAX_DK);
    asScalarOutput(amaxDV, S::AMAX_DV);
    asScalarOutput(amaxDP, S::AMAX_DP);
    return Status();
  }

  /// Validates |built|'s graph and makes its execution plan.
  Status plan(BuiltGraph &built) {
    fe::graph::Graph &graph = built.graph;
    auto check = [](fe::error_t result, const char *stage) -> Status {
      if (result.is_good())
        return Status();
      return Status::unavailable(std::string("cuDNN SDPA ") + stage + ": " +
                                 result.get_message());
    };
    TXRT_RETURN_IF_ERROR(check(graph.validate(), "validate"));
    TXRT_RETURN_IF_ERROR(check(graph.build_operation_graph(handle_), "operation graph"));
    TXRT_RETURN_IF_ERROR(check(graph.create_execution_plans({fe::HeurMode_t::A}),
                               "execution plans"));
    TXRT_RETURN_IF_ERROR(check(graph.check_support(handle_), "support on this GPU"));
    TXRT_RETURN_IF_ERROR(check(graph.build_plans(handle_), "build plans"));
    int64_t workspace = 0;
    TXRT_RETURN_IF_ERROR(check(graph.get_workspace_size(workspace), "workspace size"));
    built.workspace = static_cast<size_t>(workspace);
    return Status();
  }

  /// The variant pack of one call: each tensor uid's address.
  static void bindPointers(const hal::AttentionSpec &spec,
                           std::unordered_map<int64_t, void *> &pointers) {
    auto bind = [&](Uid uid, hal::DevicePtr ptr) {
      pointers[uid] = reinterpret_cast<void *>(ptr);
    };
    bind(Q, spec.q.ptr), bind(K, spec.k.ptr), bind(V, spec.v.ptr), bind(O, spec.o.ptr);
    bind(LSE, spec.lse);
    if (spec.hasMask)
      bind(BIAS, spec.mask.ptr);
    if (spec.dropout > 0.0f)
      bind(SEED, spec.dropoutKey), bind(OFFSET, spec.dropoutOffset);
    if (spec.backward)
      bind(DO, spec.gradO.ptr), bind(DQ, spec.gradQ.ptr), bind(DK, spec.gradK.ptr),
          bind(DV, spec.gradV.ptr);
    if (!spec.fp8)
      return;
    // Only the direction's own: the graph declares no other uid.
    for (unsigned i = 0; i < txrt::kAttentionScalarCount; ++i) {
      auto which = static_cast<fb::AttentionScalar>(i);
      if (txrt::attentionScalarUsed(which, spec.backward))
        bind(scalarUid(which), spec.fp8Scalars[i]);
    }
  }

  cudnnHandle_t handle_;
  std::unordered_map<std::string, std::shared_ptr<BuiltGraph>> graphs_;
};

} // namespace

Status createCudnnAttention(hal::Device &device, std::unique_ptr<hal::Attention> &out) {
  const std::string &error = openCudnn();
  if (!error.empty())
    return Status::unavailable(error);
  TXRT_RETURN_IF_ERROR(device.makeCurrent());
  cudnnHandle_t handle = nullptr;
  try {
    cudnnStatus_t s = fe::detail::create_handle(&handle);
    if (s != CUDNN_STATUS_SUCCESS)
      return Status::unavailable("cudnnCreate failed: status " + std::to_string(s));
  } catch (const std::exception &e) {
    return Status::unavailable(std::string("cuDNN frontend: ") + e.what());
  }
  out = std::make_unique<CudnnAttention>(handle);
  return Status();
}

} // namespace txrt::cuda

#else // !TXRT_HAVE_CUDNN_FRONTEND

namespace txrt::cuda {

Status createCudnnAttention(hal::Device &, std::unique_ptr<hal::Attention> &) {
  return Status::unavailable(
      "this txrt was built without cuDNN's frontend headers, so it cannot run "
      "fused attention (run scripts/setup.sh, which fetches them, and rebuild; "
      "or compile the step with --no-fuse=attention)");
}

} // namespace txrt::cuda

#endif // TXRT_HAVE_CUDNN_FRONTEND
