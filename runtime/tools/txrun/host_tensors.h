//===- host_tensors.h - txrun's host copies of step tensors -----*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// Host copies of a session's tensors (what --output-dir and --dump-results
// write, the scalar results a step line prints) and the artifact fields
// they are described by.
//
//===----------------------------------------------------------------------===//

#ifndef TXRT_TOOLS_TXRUN_HOST_TENSORS_H
#define TXRT_TOOLS_TXRUN_HOST_TENSORS_H

#include "core/artifact.h"
#include "core/dtype.h"
#include "core/session.h"
#include "core/status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace txrun {

/// A host copy of one tensor (argument or result) with its name and type.
struct HostTensor {
  std::string name;
  txrt::DType dtype;
  std::vector<int64_t> shape;
  uint64_t elements;
  std::vector<uint8_t> bytes;
};

/// What --output-dir writes: every argument whose role is not data/labels
/// (the state), and every result that does not become an argument.
struct OutputSet {
  std::vector<unsigned> arguments, results;
};

using txrt::str;

/// A flatbuffers shape as a vector, empty when absent.
std::vector<int64_t> shapeOf(const flatbuffers::Vector<int64_t> *shape);

/// The tensors --output-dir writes from |artifact|.
OutputSet outputSetOf(const txrt::Artifact &artifact);

/// Copies |set|'s tensors from |session| into |out|.
txrt::Status snapshot(txrt::Session &session, const OutputSet &set,
                      std::vector<HostTensor> &out);

/// Writes |tensors| as DIR/<name>.npy, creating |dir| (and its parents).
txrt::Status writeTensors(const std::string &dir, const std::vector<HostTensor> &tensors);

/// Reads scalar result |index| as a double (first element).
txrt::Status readScalar(txrt::Session &session, int index, double &value);

/// The safetensors name of |type| (checkpoint.h), "" when checkpoints
/// cannot hold it.
const char *safetensorsDType(txrt::DType type);

} // namespace txrun

#endif // TXRT_TOOLS_TXRUN_HOST_TENSORS_H
