//===- checkpoint.h - training checkpoints (safetensors + manifest) -*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// The one implementation of the checkpoint format, shared by txrun and
// txopt-run (which links txrt for it; nothing here needs MLIR, FlatBuffers
// or a GPU). A checkpoint is a folder:
//
//   DIR/checkpoint.json               the manifest: the commit point
//   DIR/model-SSSSSSSS.safetensors    the tensors, named by the step's
//                                     argument names (SSSSSSSS: the step,
//                                     zero-padded; "-1" appended when a save
//                                     repeats the step the manifest names)
//
// The .safetensors file is the Hugging Face layout: an 8-byte little-endian
// header length N, N bytes of JSON (padded with spaces to a multiple of 8)
// mapping each tensor name to {"dtype", "shape", "data_offsets": [begin,
// end)} plus "__metadata__" (string values), then the raw little-endian
// bytes of every tensor, contiguous, in header order. PyTorch reads it with
// safetensors.torch.load_file; parameters carry their own names, optimizer
// moments `<param>.exp_avg` etc., so model.load_state_dict(..., strict=False)
// takes the weights.
//
// The manifest (format_version 1) repeats every tensor's dtype, shape and
// role with its FNV-1a 64 checksum (and, for packed FP8 scaling state, the
// cast site of each row: "sites"), and records the recipe, the step count,
// the seed (which with the step drives rng_key and the random batch), the
// data position and the learning-rate schedule. See docs/Training.md.
//
// Saving is atomic: the tensor file is written under a temporary name,
// fsynced, renamed and the folder fsynced; then the manifest the same way;
// only then are older tensor files removed. A kill at any point leaves the
// previous manifest and the file it names intact.
//
//===----------------------------------------------------------------------===//

#ifndef TXRT_CORE_CHECKPOINT_H
#define TXRT_CORE_CHECKPOINT_H

#include "core/status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace txrt {

constexpr int kCheckpointFormatVersion = 1;
constexpr const char *kCheckpointManifest = "checkpoint.json";

struct CheckpointTensor {
  std::string name;
  std::string role;  // tx.role of the argument: param, exp_avg, step, ...
  std::string dtype; // safetensors: F64 F32 F16 BF16 F8_E4M3 F8_E5M2 I64 I32 I16 I8 U8 BOOL
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes; // little-endian, row-major
  /// Packed FP8 scaling state: the cast site of each row (tx.fp8_sites);
  /// empty for any other tensor.
  std::vector<std::string> sites;
};

/// Where a run stands, besides its tensors.
struct CheckpointInfo {
  std::string producer;     // "txopt-run" or "txrun"
  std::string recipe;       // tx.train_step as JSON ("{}" when unknown)
  int64_t step = 0;         // steps completed; the next step is step + 1
  uint64_t seed = 0;        // --seed: rng_key = seed * 2^32 + k, random batch
  bool hasData = false;     // a token stream fed the batch
  std::string dataFile;     // --data as given (informational)
  uint64_t dataTokens = 0;  // tokens in the stream
  int64_t dataOffset = 0;   // token offset of the next window (sequential order)
  int64_t dataWindows = 0;  // windows consumed so far
  bool shuffle = false;     // windows in seeded shuffled order
  std::string schedule;     // the lr schedule as JSON ("null": none)
};

struct Checkpoint {
  CheckpointInfo info;
  std::vector<CheckpointTensor> tensors;
  /// The tensor named |name|, or null.
  const CheckpointTensor *find(const std::string &name) const;
};

/// What a step expects of one state tensor.
struct TensorSpec {
  std::string name, role, dtype;
  std::vector<int64_t> shape;
  std::vector<std::string> sites; ///< tx.fp8_sites of packed FP8 state
};

/// Bytes per element of a safetensors dtype; 0 for unknown names.
size_t safetensorsDTypeSize(const std::string &dtype);
/// FNV-1a 64 of |size| bytes.
uint64_t fnv1a64(const void *data, size_t size);

/// Data-parallel state: a rank holds shard r of a tensor flattened and
/// padded with zeros to ranks x |shardBytes|; a checkpoint holds it whole
/// (so it resumes on any rank count). Rank |rank|'s shard of |whole|: its
/// bytes [rank * shardBytes, (rank + 1) * shardBytes), zeros past the end.
std::vector<uint8_t> shardOfWhole(const std::vector<uint8_t> &whole, size_t shardBytes,
                                  unsigned rank);
/// The whole tensor of |wholeBytes| from the ranks' shards concatenated in
/// rank order (the padding cut off); an error when they are fewer bytes.
Status wholeFromShards(const std::vector<uint8_t> &shards, size_t wholeBytes,
                       std::vector<uint8_t> &whole);

/// Writes |checkpoint| into |dir| (created if missing) atomically.
Status saveCheckpoint(const std::string &dir, const Checkpoint &checkpoint);
/// Reads the checkpoint in |dir|, checking the manifest, the safetensors
/// header against it and every tensor's checksum (an error names the tensor).
Status loadCheckpoint(const std::string &dir, Checkpoint &out);
/// Checks that |checkpoint| belongs to a step with |recipe| (JSON; the "lr"
/// member, a run-time input, and "data_parallel", the rank count, are not
/// compared: sharded state is saved whole) and exactly the state tensors
/// |expected|, packed FP8 state with the same cast site in every row; the
/// error names the first recipe key, tensor or row that differs. A
/// checkpoint older than the site lists (none recorded) cannot be checked
/// row by row: |warnings| gets one line per such tensor.
Status checkCompatible(const Checkpoint &checkpoint, const std::string &recipe,
                       const std::vector<TensorSpec> &expected,
                       std::vector<std::string> *warnings = nullptr);

/// The temporary files of a save, in order, for the kill tests: with
/// TXRT_CHECKPOINT_KILL_AT=PHASE in the environment a save raises SIGKILL
/// at that phase (data-partial, data-written, data-renamed,
/// manifest-written, manifest-renamed, cleaned).
const std::vector<std::string> &checkpointKillPhases();

} // namespace txrt

#endif // TXRT_CORE_CHECKPOINT_H
