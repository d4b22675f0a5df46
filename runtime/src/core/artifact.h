//===- artifact.h - loading and validating step.txa ------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// An artifact is untrusted input: the loader checks the identifier, runs the
// FlatBuffers verifier, checks the format version and then every index and
// size the runtime will later trust (slots, kernels, images, byte counts),
// so that executing a validated artifact never reads or writes outside the
// arena. Each failure is one line naming the offending element.
//
//===----------------------------------------------------------------------===//

#ifndef TXRT_CORE_ARTIFACT_H
#define TXRT_CORE_ARTIFACT_H

#include "core/status.h"
#include "txrt/artifact_generated.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace txrt {

/// FP8 attention's scalars (Attention.fp8_scalars): one per
/// fb::AttentionScalar, in its order.
constexpr unsigned kAttentionScalarCount = static_cast<unsigned>(fb::AttentionScalar::MAX) + 1;
/// The slot index of an FP8 attention scalar the call's direction does not
/// use (artifact.fbs: 4294967295).
constexpr uint32_t kNoAttentionScalarSlot = 0xffffffffu;

/// Whether an FP8 attention call of that direction reads or writes
/// |which|: q, k, v's descales and the probabilities' scale and descale
/// (DESCALE_Q..SCALE_S) both; SCALE_O, AMAX_S and AMAX_O the forward; the
/// rest (DESCALE_O..AMAX_DP) the backward.
constexpr bool attentionScalarUsed(fb::AttentionScalar which, bool backward) {
  if (which <= fb::AttentionScalar::SCALE_S)
    return true;
  return backward ? which >= fb::AttentionScalar::DESCALE_O : which <= fb::AttentionScalar::AMAX_O;
}

/// A verified, validated artifact; owns its bytes.
class Artifact {
public:
  /// Reads and validates the file at |path|. Relative EXTERNAL paths are
  /// resolved against its folder.
  static Status loadFile(const std::string &path, std::unique_ptr<Artifact> &out);
  /// Validates |bytes|; |directory| resolves relative EXTERNAL paths.
  static Status fromBytes(std::vector<uint8_t> bytes, std::string directory,
                          std::unique_ptr<Artifact> &out);

  const fb::Artifact &root() const { return *root_; }
  const std::string &directory() const { return directory_; }
  const std::vector<uint8_t> &bytes() const { return bytes_; }

  /// Index of the argument / result named |name|, or -1.
  int findArgument(const std::string &name) const;
  int findResult(const std::string &name) const;
  /// Number of elements of argument / result |index| (validated to fit).
  uint64_t argumentElements(unsigned index) const;
  uint64_t resultElements(unsigned index) const;
  /// "command 12 (origin 'x')" for messages.
  std::string describeCommand(unsigned index) const;

  /// The rank counts this artifact holds a step for, ascending: the root
  /// step's and each rank variant's (txopt --data-parallel=2,4,8); empty
  /// for a plain step.
  std::vector<unsigned> rankCounts() const;
  /// Makes the step for |ranks| ranks the root when a rank variant holds
  /// it; otherwise changes nothing (rankCountMismatch then says why the
  /// run cannot start). Call before anything reads the root.
  void selectRanks(unsigned ranks);

private:
  std::vector<uint8_t> bytes_;
  std::string directory_;
  const fb::Artifact *root_ = nullptr;
};

/// A FlatBuffers string field as a std::string ("" when absent).
inline std::string str(const flatbuffers::String *s) { return s ? s->str() : ""; }

/// The element count of |shape| in |out|; fails on negative dimensions or
/// overflow past 2^62.
bool shapeElements(const flatbuffers::Vector<int64_t> *shape, uint64_t &out);

/// Checks identifier, verifier and version only (no index validation).
Status verifyArtifactBytes(const uint8_t *data, size_t size);
/// Checks every index and size of a verified artifact.
Status validateArtifact(const fb::Artifact &artifact);
/// The most rank counts one artifact holds (txopt --data-parallel=N1,N2,...
/// takes as many); more is a damaged or crafted file.
inline constexpr unsigned kMaxRankVariants = 63;

/// Checks the rank variants of a verified, validated artifact: each a
/// whole artifact (verified and validated like the root) for a rank count
/// of its own, aligned for its scalars, with no variants of its own.
Status validateRankVariants(const fb::Artifact &artifact);

} // namespace txrt

#endif // TXRT_CORE_ARTIFACT_H
