//===- status.h - internal success-or-error value --------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// Internals return a Status instead of throwing, so nothing can escape the C
// API; the C API turns a failed Status into a txrt_status_t.
//
//===----------------------------------------------------------------------===//

#ifndef TXRT_CORE_STATUS_H
#define TXRT_CORE_STATUS_H

#include "txrt/txrt.h"

#include <string>
#include <utility>

namespace txrt {

/// OK, or an error code with a one-line message naming what went wrong.
class [[nodiscard]] Status {
public:
  Status() = default;
  Status(txrt_status_code_t code, std::string message)
      : code_(code), message_(std::move(message)) {}

  static Status invalid(std::string message) {
    return Status(TXRT_INVALID_ARGUMENT, std::move(message));
  }
  static Status unavailable(std::string message) {
    return Status(TXRT_UNAVAILABLE, std::move(message));
  }
  static Status internal(std::string message) {
    return Status(TXRT_INTERNAL, std::move(message));
  }
  static Status outOfRange(std::string message) {
    return Status(TXRT_OUT_OF_RANGE, std::move(message));
  }

  bool ok() const { return code_ == TXRT_OK; }
  txrt_status_code_t code() const { return code_; }
  const std::string &message() const { return message_; }

  /// The same error with "|prefix|: " in front (no-op when OK), so callers
  /// add what they were doing without losing the cause.
  Status withContext(const std::string &prefix) const {
    return ok() ? *this : Status(code_, prefix + ": " + message_);
  }

  /// A C status the caller owns (NULL when OK).
  txrt_status_t release() const {
    return ok() ? nullptr : txrt_status_create(code_, message_.c_str());
  }

private:
  txrt_status_code_t code_ = TXRT_OK;
  std::string message_;
};

} // namespace txrt

/// Returns from the enclosing function when |expr| yields an error.
#define TXRT_RETURN_IF_ERROR(expr)                                             \
  do {                                                                         \
    ::txrt::Status txrt_status_ = (expr);                                      \
    if (!txrt_status_.ok())                                                    \
      return txrt_status_;                                                     \
  } while (0)

#endif // TXRT_CORE_STATUS_H
