//===- txrt.hpp - RAII C++ wrapper over the txrt C API ----------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// Header-only: owns statuses and sessions so C++ callers cannot leak them.
// Errors come back as txrt::Error values (no exceptions).
//
//===----------------------------------------------------------------------===//

#ifndef TXRT_TXRT_HPP
#define TXRT_TXRT_HPP

#include "txrt/txrt.h"

#include <string>
#include <utility>

namespace txrt {

/// An owned txrt_status_t; converts to true when it holds an error.
class Error {
public:
  Error() = default;
  explicit Error(txrt_status_t status) : status_(status) {}
  Error(Error &&other) noexcept : status_(std::exchange(other.status_, nullptr)) {}
  Error &operator=(Error &&other) noexcept {
    std::swap(status_, other.status_);
    return *this;
  }
  Error(const Error &) = delete;
  Error &operator=(const Error &) = delete;
  ~Error() { txrt_status_free(status_); }

  explicit operator bool() const { return status_ != nullptr; }
  txrt_status_code_t code() const { return txrt_status_code(status_); }
  std::string message() const { return txrt_status_message(status_); }

private:
  txrt_status_t status_ = nullptr;
};

/// An owned session handle.
class SessionHandle {
public:
  SessionHandle() = default;
  SessionHandle(SessionHandle &&other) noexcept
      : session_(std::exchange(other.session_, nullptr)) {}
  SessionHandle &operator=(SessionHandle &&other) noexcept {
    std::swap(session_, other.session_);
    return *this;
  }
  SessionHandle(const SessionHandle &) = delete;
  SessionHandle &operator=(const SessionHandle &) = delete;
  ~SessionHandle() { txrt_session_release(session_); }

  /// Loads |path| (options may be NULL for the defaults).
  static Error fromFile(const std::string &path, const txrt_session_options_t *options,
                        SessionHandle &out) {
    txrt_session_t *session = nullptr;
    Error error(txrt_session_create_from_file(options, path.c_str(), &session));
    if (!error)
      out = SessionHandle(session);
    return error;
  }
  /// Loads an artifact held in memory.
  static Error fromBytes(const void *data, size_t size, const char *baseDir,
                         const txrt_session_options_t *options, SessionHandle &out) {
    txrt_session_t *session = nullptr;
    Error error(txrt_session_create(options, data, size, baseDir, &session));
    if (!error)
      out = SessionHandle(session);
    return error;
  }

  txrt_session_t *get() const { return session_; }
  Error deviceInfo(txrt_device_info_t &info) const {
    return Error(txrt_session_device_info(session_, &info));
  }
  size_t argumentCount() const { return txrt_session_argument_count(session_); }
  size_t resultCount() const { return txrt_session_result_count(session_); }
  Error argumentInfo(size_t index, txrt_tensor_info_t &info) const {
    return Error(txrt_session_argument_info(session_, index, &info));
  }
  Error resultInfo(size_t index, txrt_tensor_info_t &info) const {
    return Error(txrt_session_result_info(session_, index, &info));
  }
  Error findArgument(const std::string &name, size_t &index) const {
    return Error(txrt_session_find_argument(session_, name.c_str(), &index));
  }
  Error findResult(const std::string &name, size_t &index) const {
    return Error(txrt_session_find_result(session_, name.c_str(), &index));
  }
  Error writeArgument(size_t index, const void *data, size_t size) {
    return Error(txrt_session_write_argument(session_, index, data, size));
  }
  Error readArgument(size_t index, void *data, size_t size) const {
    return Error(txrt_session_read_argument(session_, index, data, size));
  }
  Error readResult(size_t index, void *data, size_t size) const {
    return Error(txrt_session_read_result(session_, index, data, size));
  }
  Error runStep(float *ms = nullptr) { return Error(txrt_session_run_step(session_, ms)); }
  Error runMicroStep(float *ms = nullptr) {
    return Error(txrt_session_run_micro_step(session_, ms));
  }
  Error peakMemory(uint64_t &bytes) const {
    return Error(txrt_session_peak_memory(session_, &bytes));
  }

private:
  explicit SessionHandle(txrt_session_t *session) : session_(session) {}
  txrt_session_t *session_ = nullptr;
};

} // namespace txrt

#endif // TXRT_TXRT_HPP
