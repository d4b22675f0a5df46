//===- batch.h - the training batch, as txopt-run feeds it -----*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// txrun must feed a step exactly what txopt-run (tools/txopt-run/Steps.cpp,
// Inputs.cpp) feeds the CPU reference executor, because the two runs are
// compared number by number. This file reimplements those semantics:
//  * without --data, every BATCH argument gets one seeded random value,
//    drawn once and reused every step: splitmix64 seeded with
//    seed + (argIndex << 32); floats N(0, 1) by Box-Muller (cosine branch,
//    u1 = 1 - uniform, u2 = uniform) rounded once to the element type;
//    integers floor(uniform * bound), bound = index_bound or 2; i1 in {0, 1};
//  * with --data, integer BATCH arguments are token windows: the one whose
//    role is "labels" reads the window shifted by one, every other one (there
//    must be exactly one) the window itself; a window is the argument's
//    element count, and it advances per step, wrapping to 0 when the next
//    window plus one token would run past the end. Other BATCH arguments stay
//    random.
//
//===----------------------------------------------------------------------===//

#ifndef TXRT_CORE_BATCH_H
#define TXRT_CORE_BATCH_H

#include "core/artifact.h"
#include "core/dtype.h"
#include "core/training.h"

#include <optional>
#include <string>
#include <vector>

namespace txrt {

/// txopt-run's default --seed.
constexpr uint64_t kDefaultSeed = 0;

/// splitmix64 (Steele, Lea, Flood 2014).
struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
};

/// The seeded random value of argument |argIndex|: |elements| values of
/// |type| (see the file comment), as raw bytes.
std::vector<uint8_t> randomArgument(DType type, uint64_t elements, uint64_t seed,
                                    unsigned argIndex, int64_t bound);

/// Reads a token file: a 1-D integer .npy, or llm.c's .bin (256 int32 header:
/// magic 20240520, version 1, count; then count little-endian uint16).
Status readTokens(const std::string &path, std::vector<int64_t> &out);

/// Produces the BATCH argument values for each step.
class BatchFeeder {
public:
  struct Write {
    unsigned argument;
    const std::vector<uint8_t> *bytes;
  };

  /// |shuffle|: token windows in a seeded order per epoch (TokenWindows).
  /// Data parallelism (|ranks| > 1): a step reads one window of |ranks|
  /// batches, the one a plain step on |ranks| x the batch would read, and
  /// rank |rank| takes batch |rank| of it (rows rank*B .. (rank+1)*B - 1,
  /// labels one token on), as txopt-run --ranks does; random arguments and
  /// the dropout key are the same on every rank.
  static Status create(const Artifact &artifact, uint64_t seed,
                       const std::optional<std::string> &dataPath,
                       std::unique_ptr<BatchFeeder> &out, bool shuffle = false,
                       unsigned rank = 0, unsigned ranks = 1);

  /// The argument values to upload before step |step| (1-based): every
  /// BATCH argument before the first step fed (step 1, or the first step
  /// after a resume), then only the token windows, the dropout key and,
  /// with a schedule, the learning rate. With gradient accumulation
  /// (grad_accum N > 1) call it for micro-batches |micro| = 0..N-1 of each
  /// step (the micro-step runs 0..N-2, the step N-1): each takes the next
  /// window and the key seed * 2^32 + (step - 1) * N + micro; the lr is
  /// written with micro-batch 0.
  void writesForStep(int64_t step, std::vector<Write> &out, unsigned micro = 0);
  /// Micro-batches per step (the artifact's grad_accum; 1: none).
  unsigned gradAccum() const { return gradAccum_; }

  /// The argument with role "lr" (f32 scalar), or -1; its compiled value.
  int lrArgument() const { return lrArg_ ? static_cast<int>(lrArg_->argument) : -1; }
  double compiledLr() const { return compiledLr_; }
  /// Feed |schedule|.at(step), rounded to f32, to the lr argument before
  /// every step (needs lrArgument() >= 0).
  void setLrSchedule(const LrSchedule &schedule) { schedule_ = schedule; }
  /// The lr step |step| reads: the schedule's, else the compiled value.
  double lrForStep(int64_t step) const;

  /// The data position (checkpoints): windows consumed, the sequential
  /// offset of the next one, the stream's length; and continuing from one.
  bool hasTokens() const { return windows_.has_value(); }
  int64_t windowsConsumed() const { return windows_ ? windows_->consumed() : 0; }
  int64_t dataOffset() const { return windows_ ? windows_->offset() : 0; }
  uint64_t tokenCount() const { return tokens_.size(); }
  void resumeData(int64_t consumed, int64_t offset) {
    if (windows_)
      windows_->resume(consumed, offset);
  }
  /// Validation (--val-data, needs --data): reads the stream and checks it
  /// as --data is checked; windows of the training batch's size.
  Status loadValidation(const std::string &path);
  /// The token (and labels) writes of validation window |k| (0-based):
  /// windows 0, 1, ... of the stream, wrapping, the same ones every time,
  /// as txopt-run's evaluation reads them.
  void writesForValidation(int64_t k, std::vector<Write> &out);
  bool hasValidation() const { return valWindows_ > 0; }

  /// Elements of the argument whose role is "data" (else of the token
  /// argument with --data) times grad_accum and the rank count (the global
  /// batch); 0 when there is none.
  uint64_t tokensPerStep() const { return tokensPerStep_; }

private:
  struct Fed {
    unsigned argument;
    DType dtype;
    std::vector<uint8_t> bytes;
  };
  /// Appends the writes of the window of |tokens| at |offset|: the token
  /// argument, and the labels argument one token on.
  void writeWindow(const std::vector<int64_t> &tokens, int64_t offset,
                   std::vector<Write> &out);
  /// Fails when |tokens| (read from |path| for |flag|) is shorter than
  /// one batch (of |ranks| ranks' windows side by side) or holds a token
  /// outside the vocabulary.
  Status checkTokens(const std::string &flag, const std::string &path,
                     const std::vector<int64_t> &tokens, unsigned ranks = 1) const;

  std::vector<Fed> random_;
  std::optional<Fed> tokensArg_, labelsArg_;
  /// The role "rng" argument (tx.dropout's key): seed * 2^32 + step index,
  /// as txopt-run feeds it, so both draw the same dropout masks.
  std::optional<Fed> rngArg_;
  uint64_t seed_ = 0;
  std::vector<int64_t> tokens_;
  int64_t window_ = 0;
  unsigned rank_ = 0; ///< this rank's batch in the global window
  int64_t vocabulary_ = 0; ///< tokens must be below it (0: unknown)
  std::vector<int64_t> valTokens_;
  int64_t valWindows_ = 0;
  std::optional<TokenWindows> windows_;
  bool randomWritten_ = false;
  std::optional<Fed> lrArg_;
  double compiledLr_ = 0;
  std::optional<LrSchedule> schedule_;
  uint64_t tokensPerStep_ = 0;
  unsigned gradAccum_ = 1;
};

} // namespace txrt

#endif // TXRT_CORE_BATCH_H
