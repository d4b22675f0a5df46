//===- artifact.cpp - loading and validating step.txa ---------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// Loading a step.txa (the FlatBuffers checks and the format version here,
// the semantic checks in artifact_validator.cpp) and the lookups on it.
//
//===----------------------------------------------------------------------===//

#include "core/artifact.h"

#include "core/dtype.h"
#include "txrt/artifact_format.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

namespace txrt {
namespace {

template <typename T> size_t sizeOf(const flatbuffers::Vector<T> *v) {
  return v ? v->size() : 0;
}

const char *opName(fb::Op op) {
  switch (op) {
  case fb::Op::Launch: return "launch";
  case fb::Op::Gemm: return "gemm";
  case fb::Op::Memset: return "memset";
  case fb::Op::Copy: return "copy";
  case fb::Op::Attention: return "attention";
  default: return "command";
  }
}

} // namespace

Status verifyArtifactBytes(const uint8_t *data, size_t size) {
  auto notArtifact = [](const std::string &why) {
    return Status::invalid("not a txopt artifact or truncated: " + why);
  };
  if (size < 8)
    return notArtifact("only " + std::to_string(size) + " bytes");
  if (!flatbuffers::BufferHasIdentifier(data, kFileIdentifier))
    return notArtifact("the file identifier is not '" + std::string(kFileIdentifier) +
                       "'");
  // Read the version before the full verification, so that a newer artifact
  // whose layout this runtime cannot verify still gets the helpful message.
  flatbuffers::Verifier header(data, size, /*max_depth=*/64,
                               /*max_tables=*/1000000);
  if (header.VerifyOffset(0) == 0)
    return notArtifact("bad root offset");
  const fb::Artifact *root = fb::GetArtifact(data);
  flatbuffers::Verifier tableCheck(data, size, 64, 1000000);
  // fb::Artifact derives privately from Table; view it as the Table it is.
  const auto *table = reinterpret_cast<const flatbuffers::Table *>(root);
  if (!table->VerifyTableStart(tableCheck) ||
      !table->VerifyField<uint32_t>(tableCheck, fb::Artifact::VT_FORMAT_VERSION, 4))
    return notArtifact("the root table is damaged");
  if (root->format_version() > kFormatVersion)
    return Status::invalid("artifact format version " +
                           std::to_string(root->format_version()) +
                           " is newer than this runtime supports (" +
                           std::to_string(kFormatVersion) + "); rebuild txrun");
  flatbuffers::Verifier verifier(data, size, /*max_depth=*/64,
                                 /*max_tables=*/1u << 24);
  if (!fb::VerifyArtifactBuffer(verifier))
    return notArtifact("the FlatBuffers verifier rejects the " +
                       std::to_string(size) + " bytes");
  if (root->format_version() == 0)
    return Status::invalid("artifact format version 0 is not a valid version "
                           "(expected 1)");
  return Status();
}

Status Artifact::fromBytes(std::vector<uint8_t> bytes, std::string directory,
                           std::unique_ptr<Artifact> &out) {
  // FlatBuffers reads scalars in place; a std::vector's storage from
  // operator new is aligned for any scalar, as the verifier wants.
  TXRT_RETURN_IF_ERROR(verifyArtifactBytes(bytes.data(), bytes.size()));
  auto artifact = std::unique_ptr<Artifact>(new Artifact());
  artifact->bytes_ = std::move(bytes);
  artifact->directory_ = std::move(directory);
  artifact->root_ = fb::GetArtifact(artifact->bytes_.data());
  TXRT_RETURN_IF_ERROR(validateArtifact(*artifact->root_));
  TXRT_RETURN_IF_ERROR(validateRankVariants(*artifact->root_));
  out = std::move(artifact);
  return Status();
}

Status Artifact::loadFile(const std::string &path, std::unique_ptr<Artifact> &out) {
  std::ifstream file(path, std::ios::binary);
  if (!file)
    return Status::invalid("cannot read '" + path + "': " + std::strerror(errno));
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(file)),
                             std::istreambuf_iterator<char>());
  if (file.bad())
    return Status::invalid("cannot read '" + path + "': I/O error");
  size_t slash = path.find_last_of('/');
  std::string directory = slash == std::string::npos ? "." : path.substr(0, slash);
  if (directory.empty())
    directory = "/";
  return fromBytes(std::move(bytes), directory, out).withContext(path);
}

Status validateRankVariants(const fb::Artifact &artifact) {
  const auto *variants = artifact.rank_variants();
  if (!variants || variants->size() == 0)
    return Status();
  if (artifact.ranks() == 0)
    return Status::invalid("the artifact has rank variants, but its step is not "
                           "data-parallel (ranks 0)");
  if (variants->size() > kMaxRankVariants)
    return Status::invalid("the artifact has " + std::to_string(variants->size()) +
                           " rank variants, more than the " +
                           std::to_string(kMaxRankVariants) + " txopt writes at most");
  std::vector<unsigned> seen{artifact.ranks()};
  for (unsigned i = 0; i < variants->size(); ++i) {
    const fb::RankVariant *v = variants->Get(i);
    std::string where = "rank variant " + std::to_string(i) + " (" +
                        std::to_string(v->ranks()) + " ranks)";
    if (v->ranks() == 0)
      return Status::invalid(where + ": a rank count of 0");
    for (unsigned count : seen)
      if (count == v->ranks())
        return Status::invalid(where + ": a second step for " + std::to_string(count) +
                               " ranks");
    seen.push_back(v->ranks());
    const flatbuffers::Vector<uint8_t> *bytes = v->artifact();
    if (!bytes)
      return Status::invalid(where + ": no artifact");
    // Read in place: its scalars are only as aligned as its first byte.
    if (reinterpret_cast<uintptr_t>(bytes->data()) % 16 != 0)
      return Status::invalid(where + ": its bytes do not start at a 16-byte boundary");
    TXRT_RETURN_IF_ERROR(verifyArtifactBytes(bytes->data(), bytes->size()).withContext(where));
    const fb::Artifact *step = fb::GetArtifact(bytes->data());
    if (step->ranks() != v->ranks())
      return Status::invalid(where + ": its step is for " + std::to_string(step->ranks()) +
                             " ranks");
    if (step->rank_variants() && step->rank_variants()->size() > 0)
      return Status::invalid(where + ": it has rank variants of its own");
    TXRT_RETURN_IF_ERROR(validateArtifact(*step).withContext(where));
  }
  return Status();
}

std::vector<unsigned> Artifact::rankCounts() const {
  // The root as loaded: after selectRanks the variants are still the
  // file root's.
  const fb::Artifact *file = fb::GetArtifact(bytes_.data());
  std::vector<unsigned> counts;
  if (file->ranks() > 0)
    counts.push_back(file->ranks());
  for (unsigned i = 0; i < sizeOf(file->rank_variants()); ++i)
    counts.push_back(file->rank_variants()->Get(i)->ranks());
  std::sort(counts.begin(), counts.end());
  return counts;
}

void Artifact::selectRanks(unsigned ranks) {
  const fb::Artifact *file = fb::GetArtifact(bytes_.data());
  if (file->ranks() == ranks) {
    root_ = file;
    return;
  }
  for (unsigned i = 0; i < sizeOf(file->rank_variants()); ++i) {
    const fb::RankVariant *v = file->rank_variants()->Get(i);
    if (v->ranks() == ranks) {
      root_ = fb::GetArtifact(v->artifact()->data());
      return;
    }
  }
}

int Artifact::findArgument(const std::string &name) const {
  for (size_t i = 0; i < sizeOf(root_->arguments()); ++i)
    if (str(root_->arguments()->Get(i)->name()) == name)
      return static_cast<int>(i);
  return -1;
}

int Artifact::findResult(const std::string &name) const {
  for (size_t i = 0; i < sizeOf(root_->results()); ++i)
    if (str(root_->results()->Get(i)->name()) == name)
      return static_cast<int>(i);
  return -1;
}

uint64_t Artifact::argumentElements(unsigned index) const {
  uint64_t n = 0;
  shapeElements(root_->arguments()->Get(index)->shape(), n);
  return n;
}

uint64_t Artifact::resultElements(unsigned index) const {
  uint64_t n = 0;
  shapeElements(root_->results()->Get(index)->shape(), n);
  return n;
}

std::string Artifact::describeCommand(unsigned index) const {
  const fb::Command *c = root_->commands()->Get(index);
  return "command " + std::to_string(index) + " (" + opName(c->op_type()) +
         " from origin '" + str(c->origin()) + "')";
}

} // namespace txrt
