//===- host_tensors.cpp - txrun's host copies of step tensors -------------===//
//
// SPDX-License-Identifier: Apache-2.0
// Reading a session's tensors back to the host and writing them as .npy
// files; see host_tensors.h.
//
//===----------------------------------------------------------------------===//

#include "host_tensors.h"

#include "core/npy.h"

#include <cerrno>
#include <cstring>
#include <sys/stat.h>

using namespace txrt;
using namespace txrun;

namespace {

Status makeDirectories(const std::string &path) {
  std::string prefix;
  for (size_t i = 0; i <= path.size(); ++i) {
    if (i == path.size() || path[i] == '/') {
      prefix = path.substr(0, i);
      if (!prefix.empty() && ::mkdir(prefix.c_str(), 0777) != 0 && errno != EEXIST)
        return Status::invalid("cannot create '" + prefix + "': " + std::strerror(errno));
    }
  }
  return Status();
}

} // namespace

std::vector<int64_t> txrun::shapeOf(const flatbuffers::Vector<int64_t> *shape) {
  std::vector<int64_t> out;
  if (shape)
    for (size_t i = 0; i < shape->size(); ++i)
      out.push_back(shape->Get(i));
  return out;
}

OutputSet txrun::outputSetOf(const Artifact &artifact) {
  OutputSet set;
  const fb::Artifact &a = artifact.root();
  for (unsigned i = 0; a.arguments() && i < a.arguments()->size(); ++i) {
    std::string role = str(a.arguments()->Get(i)->role());
    if (role != "data" && role != "labels")
      set.arguments.push_back(i);
  }
  for (unsigned i = 0; a.results() && i < a.results()->size(); ++i)
    if (a.results()->Get(i)->next() < 0)
      set.results.push_back(i);
  return set;
}

Status txrun::snapshot(Session &session, const OutputSet &set, std::vector<HostTensor> &out) {
  const Artifact &artifact = session.artifact();
  const fb::Artifact &a = artifact.root();
  out.clear();
  for (unsigned i : set.arguments) {
    const fb::Argument *arg = a.arguments()->Get(i);
    HostTensor t{str(arg->name()), arg->dtype(), shapeOf(arg->shape()),
                 artifact.argumentElements(i), {}};
    t.bytes.resize(t.elements * dtypeSize(t.dtype));
    TXRT_RETURN_IF_ERROR(session.readArgument(i, t.bytes.data(), t.bytes.size()));
    out.push_back(std::move(t));
  }
  for (unsigned i : set.results) {
    const fb::Result *r = a.results()->Get(i);
    HostTensor t{str(r->name()), r->dtype(), shapeOf(r->shape()),
                 artifact.resultElements(i), {}};
    t.bytes.resize(t.elements * dtypeSize(t.dtype));
    TXRT_RETURN_IF_ERROR(session.readResult(i, t.bytes.data(), t.bytes.size()));
    out.push_back(std::move(t));
  }
  return Status();
}

Status txrun::writeTensors(const std::string &dir, const std::vector<HostTensor> &tensors) {
  TXRT_RETURN_IF_ERROR(makeDirectories(dir));
  for (const HostTensor &t : tensors)
    TXRT_RETURN_IF_ERROR(writeNpyFile(dir + "/" + npyFileNameFor(t.name), t.dtype,
                                      t.shape, t.bytes.data(), t.elements));
  return Status();
}

Status txrun::readScalar(Session &session, int index, double &value) {
  const fb::Result *r = session.artifact().root().results()->Get(index);
  std::vector<uint8_t> bytes(session.artifact().resultElements(index) *
                             dtypeSize(r->dtype()));
  if (bytes.empty()) {
    value = 0;
    return Status();
  }
  TXRT_RETURN_IF_ERROR(session.readResult(index, bytes.data(), bytes.size()));
  value = loadAsDouble(r->dtype(), bytes.data(), 0);
  return Status();
}

const char *txrun::safetensorsDType(DType type) {
  switch (type) {
  case DType::F32: return "F32";
  case DType::F16: return "F16";
  case DType::BF16: return "BF16";
  case DType::F8E4M3FN: return "F8_E4M3";
  case DType::F8E5M2: return "F8_E5M2";
  case DType::F64: return "F64";
  case DType::I64: return "I64";
  case DType::I32: return "I32";
  case DType::I8: return "I8";
  case DType::I1: return "BOOL";
  default: return "";
  }
}
