//===- json.h - the little JSON the checkpoint format needs ----*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// A strict RFC 8259 reader into a small tree, and string quoting for
// writers. Used for the safetensors header and the checkpoint manifest
// (checkpoint.h); nothing here depends on MLIR or FlatBuffers, so txopt-run
// and txrun share it.
//
//===----------------------------------------------------------------------===//

#ifndef TXRT_CORE_JSON_H
#define TXRT_CORE_JSON_H

#include "core/status.h"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace txrt {
namespace json {

struct Value {
  enum class Kind { Null, Bool, Number, String, Array, Object };
  Kind kind = Kind::Null;
  bool boolean = false;
  double number = 0;
  /// Numbers keep their text so 64-bit integers read exactly.
  std::string text; // String: the decoded string; Number: the literal
  std::vector<Value> array;
  std::vector<std::pair<std::string, Value>> object; // in file order

  /// The member |key| of an object, or null.
  const Value *find(const std::string &key) const;
  bool isInteger() const;
  /// The number as int64 / uint64 (exact for integer literals).
  bool asInt64(int64_t &out) const;
  bool asUint64(uint64_t &out) const;
};

/// Parses |text| (one value, optional surrounding whitespace).
Status parse(const std::string &text, Value &out);
/// |s| as a JSON string literal, quotes included.
std::string quote(const std::string &s);
/// |v| as a JSON number that reads back as the same double (17 digits);
/// non-finite values become null.
std::string number(double v);
/// |v| compactly (objects keep their order).
std::string serialize(const Value &v);

} // namespace json
} // namespace txrt

#endif // TXRT_CORE_JSON_H
