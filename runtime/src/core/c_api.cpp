//===- c_api.cpp - the session half of the C API --------------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// Thin shims over txrt::Session. No exception may cross the C boundary:
// each entry point catches everything (std::bad_alloc above all) and turns
// it into a status.
//
//===----------------------------------------------------------------------===//

#include "core/session.h"
#include "core/dtype.h"
#include "txrt/txrt.h"

#include <atomic>
#include <cstdio>
#include <exception>
#include <new>

struct txrt_session_s {
  std::atomic<int> references{1};
  std::unique_ptr<txrt::Session> session;
  /// Shapes copied out of the artifact, so txrt_tensor_info_t::shape is an
  /// aligned array whatever the FlatBuffers layout.
  std::vector<std::vector<int64_t>> argumentShapes, resultShapes;
};

namespace {

template <typename Fn> txrt_status_t guarded(Fn &&fn) {
  try {
    return fn().release();
  } catch (const std::bad_alloc &) {
    return txrt_status_create(TXRT_INTERNAL, "out of host memory");
  } catch (const std::exception &e) {
    return txrt_status_create(TXRT_INTERNAL, e.what());
  } catch (...) {
    return txrt_status_create(TXRT_INTERNAL, "unknown internal error");
  }
}

txrt::SessionOptions toOptions(const txrt_session_options_t *options) {
  txrt::SessionOptions out;
  if (options) {
    out.device = options->device;
    if (options->weights_dir)
      out.weightsDir = options->weights_dir;
    out.useGraphs = !options->disable_graphs;
    out.syncEachCommand = options->sync_each_command != 0;
    out.tuneGemms = options->tune_gemms != 0;
  }
  return out;
}

std::vector<int64_t> copyShape(const flatbuffers::Vector<int64_t> *shape) {
  std::vector<int64_t> out;
  if (shape)
    for (size_t i = 0; i < shape->size(); ++i)
      out.push_back(shape->Get(i));
  return out;
}

txrt::Status finishCreate(std::shared_ptr<const txrt::Artifact> artifact,
                          const txrt_session_options_t *options,
                          txrt_session_t **out_session) {
  std::unique_ptr<txrt::Session> session;
  TXRT_RETURN_IF_ERROR(txrt::Session::create(artifact, toOptions(options), session));
  auto handle = std::make_unique<txrt_session_s>();
  const txrt::fb::Artifact &a = artifact->root();
  for (size_t i = 0; a.arguments() && i < a.arguments()->size(); ++i)
    handle->argumentShapes.push_back(copyShape(a.arguments()->Get(i)->shape()));
  for (size_t i = 0; a.results() && i < a.results()->size(); ++i)
    handle->resultShapes.push_back(copyShape(a.results()->Get(i)->shape()));
  handle->session = std::move(session);
  *out_session = handle.release();
  return txrt::Status();
}

const char *cstr(const flatbuffers::String *s) { return s ? s->c_str() : ""; }

} // namespace

extern "C" void txrt_session_options_init(txrt_session_options_t *options) {
  if (options)
    *options = txrt_session_options_t{0, nullptr, 0, 0, 0};
}

extern "C" txrt_status_t txrt_session_create_from_file(
    const txrt_session_options_t *options, const char *path,
    txrt_session_t **out_session) {
  return guarded([&]() -> txrt::Status {
    if (!path || !out_session)
      return txrt::Status::invalid("path or out_session is NULL");
    *out_session = nullptr;
    std::unique_ptr<txrt::Artifact> artifact;
    TXRT_RETURN_IF_ERROR(txrt::Artifact::loadFile(path, artifact));
    return finishCreate(std::move(artifact), options, out_session);
  });
}

extern "C" txrt_status_t txrt_session_create(const txrt_session_options_t *options,
                                             const void *data, size_t size,
                                             const char *base_dir,
                                             txrt_session_t **out_session) {
  return guarded([&]() -> txrt::Status {
    if (!data || !out_session)
      return txrt::Status::invalid("data or out_session is NULL");
    *out_session = nullptr;
    const auto *bytes = static_cast<const uint8_t *>(data);
    std::unique_ptr<txrt::Artifact> artifact;
    TXRT_RETURN_IF_ERROR(txrt::Artifact::fromBytes(
        std::vector<uint8_t>(bytes, bytes + size), base_dir ? base_dir : ".", artifact));
    return finishCreate(std::move(artifact), options, out_session);
  });
}

extern "C" void txrt_session_retain(txrt_session_t *session) {
  if (session)
    session->references.fetch_add(1);
}

extern "C" void txrt_session_release(txrt_session_t *session) {
  if (session && session->references.fetch_sub(1) == 1)
    delete session;
}

extern "C" txrt_status_t txrt_session_device_info(txrt_session_t *session,
                                                  txrt_device_info_t *out_info) {
  return guarded([&]() -> txrt::Status {
    if (!session || !out_info)
      return txrt::Status::invalid("session or out_info is NULL");
    const txrt::hal::DeviceInfo &info = session->session->deviceInfo();
    *out_info = txrt_device_info_t{};
    std::snprintf(out_info->name, sizeof(out_info->name), "%s", info.name.c_str());
    out_info->compute_capability_major = info.ccMajor;
    out_info->compute_capability_minor = info.ccMinor;
    out_info->total_memory_bytes = info.totalMemory;
    return txrt::Status();
  });
}

extern "C" const char *txrt_session_recipe(txrt_session_t *session) {
  return session ? cstr(session->session->artifact().root().recipe()) : "";
}

extern "C" size_t txrt_session_argument_count(txrt_session_t *session) {
  return session ? session->argumentShapes.size() : 0;
}

extern "C" size_t txrt_session_result_count(txrt_session_t *session) {
  return session ? session->resultShapes.size() : 0;
}

extern "C" txrt_status_t txrt_session_argument_info(txrt_session_t *session,
                                                    size_t index,
                                                    txrt_tensor_info_t *out_info) {
  return guarded([&]() -> txrt::Status {
    if (!session || !out_info)
      return txrt::Status::invalid("session or out_info is NULL");
    if (index >= session->argumentShapes.size())
      return txrt::Status::outOfRange("argument index " + std::to_string(index) +
                                      " out of range");
    const txrt::Artifact &artifact = session->session->artifact();
    const txrt::fb::Argument *arg = artifact.root().arguments()->Get(index);
    const std::vector<int64_t> &shape = session->argumentShapes[index];
    *out_info = txrt_tensor_info_t{};
    out_info->name = cstr(arg->name());
    out_info->role = cstr(arg->role());
    out_info->dtype = static_cast<txrt_dtype_t>(arg->dtype());
    out_info->rank = shape.size();
    out_info->shape = shape.data();
    out_info->size_bytes = artifact.argumentElements(index) * txrt::dtypeSize(arg->dtype());
    out_info->init = static_cast<txrt_init_kind_t>(arg->init());
    out_info->index_bound = arg->index_bound();
    out_info->next = -1;
    return txrt::Status();
  });
}

extern "C" txrt_status_t txrt_session_result_info(txrt_session_t *session,
                                                  size_t index,
                                                  txrt_tensor_info_t *out_info) {
  return guarded([&]() -> txrt::Status {
    if (!session || !out_info)
      return txrt::Status::invalid("session or out_info is NULL");
    if (index >= session->resultShapes.size())
      return txrt::Status::outOfRange("result index " + std::to_string(index) +
                                      " out of range");
    const txrt::Artifact &artifact = session->session->artifact();
    const txrt::fb::Result *r = artifact.root().results()->Get(index);
    const std::vector<int64_t> &shape = session->resultShapes[index];
    *out_info = txrt_tensor_info_t{};
    out_info->name = cstr(r->name());
    out_info->role = "";
    out_info->dtype = static_cast<txrt_dtype_t>(r->dtype());
    out_info->rank = shape.size();
    out_info->shape = shape.data();
    out_info->size_bytes = artifact.resultElements(index) * txrt::dtypeSize(r->dtype());
    out_info->next = r->next();
    return txrt::Status();
  });
}

extern "C" txrt_status_t txrt_session_find_argument(txrt_session_t *session,
                                                    const char *name,
                                                    size_t *out_index) {
  return guarded([&]() -> txrt::Status {
    if (!session || !name || !out_index)
      return txrt::Status::invalid("session, name or out_index is NULL");
    int index = session->session->artifact().findArgument(name);
    if (index < 0)
      return txrt::Status::outOfRange(std::string("no argument named '") + name + "'");
    *out_index = static_cast<size_t>(index);
    return txrt::Status();
  });
}

extern "C" txrt_status_t txrt_session_find_result(txrt_session_t *session,
                                                  const char *name,
                                                  size_t *out_index) {
  return guarded([&]() -> txrt::Status {
    if (!session || !name || !out_index)
      return txrt::Status::invalid("session, name or out_index is NULL");
    int index = session->session->artifact().findResult(name);
    if (index < 0)
      return txrt::Status::outOfRange(std::string("no result named '") + name + "'");
    *out_index = static_cast<size_t>(index);
    return txrt::Status();
  });
}

extern "C" txrt_status_t txrt_session_write_argument(txrt_session_t *session,
                                                     size_t index, const void *data,
                                                     size_t size) {
  return guarded([&]() -> txrt::Status {
    if (!session || (!data && size))
      return txrt::Status::invalid("session or data is NULL");
    return session->session->writeArgument(static_cast<unsigned>(index), data, size);
  });
}

extern "C" txrt_status_t txrt_session_read_argument(txrt_session_t *session,
                                                    size_t index, void *data,
                                                    size_t size) {
  return guarded([&]() -> txrt::Status {
    if (!session || (!data && size))
      return txrt::Status::invalid("session or data is NULL");
    return session->session->readArgument(static_cast<unsigned>(index), data, size);
  });
}

extern "C" txrt_status_t txrt_session_read_result(txrt_session_t *session,
                                                  size_t index, void *data,
                                                  size_t size) {
  return guarded([&]() -> txrt::Status {
    if (!session || (!data && size))
      return txrt::Status::invalid("session or data is NULL");
    return session->session->readResult(static_cast<unsigned>(index), data, size);
  });
}

extern "C" txrt_status_t txrt_session_run_step(txrt_session_t *session, float *out_ms) {
  return guarded([&]() -> txrt::Status {
    if (!session)
      return txrt::Status::invalid("session is NULL");
    return session->session->runStep(out_ms);
  });
}

extern "C" txrt_status_t txrt_session_run_micro_step(txrt_session_t *session,
                                                     float *out_ms) {
  return guarded([&]() -> txrt::Status {
    if (!session)
      return txrt::Status::invalid("session is NULL");
    return session->session->runMicroStep(out_ms);
  });
}

extern "C" txrt_status_t txrt_session_run_eval(txrt_session_t *session,
                                              double *out_loss, float *out_ms) {
  return guarded([&]() -> txrt::Status {
    if (!session || !out_loss)
      return txrt::Status::invalid("session or out_loss is NULL");
    return session->session->runEvaluation(*out_loss, out_ms);
  });
}

extern "C" txrt_status_t txrt_session_grad_accum(txrt_session_t *session,
                                                 uint32_t *out_grad_accum) {
  return guarded([&]() -> txrt::Status {
    if (!session || !out_grad_accum)
      return txrt::Status::invalid("session or out_grad_accum is NULL");
    unsigned n = session->session->gradAccum();
    *out_grad_accum = n > 1 ? n : 1;
    return txrt::Status();
  });
}

extern "C" txrt_status_t txrt_session_peak_memory(txrt_session_t *session,
                                                  uint64_t *out_bytes) {
  return guarded([&]() -> txrt::Status {
    if (!session || !out_bytes)
      return txrt::Status::invalid("session or out_bytes is NULL");
    return session->session->peakMemory(*out_bytes);
  });
}
