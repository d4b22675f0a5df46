//===- training.h - run-level logic both drivers share ---------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// What txrun and txopt-run must do identically for their runs to match
// number for number, with no MLIR, FlatBuffers or GPU: the learning-rate
// schedule (the value of the step's `lr` input on each step), the order of
// token windows (sequential as llm.c's loader, or a seeded shuffle), and the
// JSONL log line. txopt-run links txrt for these.
//
//===----------------------------------------------------------------------===//

#ifndef TXRT_CORE_TRAINING_H
#define TXRT_CORE_TRAINING_H

#include "core/status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace txrt {

/// The learning rate of step s (1-based), computed in double on the host
/// and rounded once to the f32 `lr` argument:
///   warm-up (s <= warmup, warmup > 0):  lr * s / warmup
///   constant:                           lr
///   s >= decay_steps:                   min_lr
///   otherwise, p = (s - warmup) / (decay_steps - warmup):
///     cosine  min_lr + 0.5 * (1 + cos(pi * p)) * (lr - min_lr)
///     linear  lr + p * (min_lr - lr)
/// decay_steps is the step at which the decay reaches min_lr (nanoGPT's
/// lr_decay_iters), counted from the start of the run, not from a resume.
struct LrSchedule {
  enum class Kind { Constant, Cosine, Linear };
  Kind kind = Kind::Constant;
  double lr = 0;
  int64_t warmup = 0;
  int64_t decaySteps = 0;
  double minLr = 0;

  double at(int64_t step) const;
  /// {"kind":"cosine","lr":...,"warmup":...,"decay_steps":...,"min_lr":...}
  std::string json() const;
  /// Checks the parameters (decay_steps > warmup for cosine/linear).
  Status validate() const;
};
/// "cosine" / "linear" / "constant".
bool parseScheduleKind(const std::string &text, LrSchedule::Kind &out);
const char *scheduleKindName(LrSchedule::Kind kind);

/// The order in which a token stream of |tokens| tokens is cut into windows
/// of |window| tokens (a window reads window + 1 tokens: the labels are the
/// same window shifted by one). An epoch has W = (tokens - 1) / window
/// windows, starting at offsets j * window, j < W.
///  * sequential (llm.c's loader): offsets 0, window, 2 * window, ...,
///    wrapping to 0 when the next window plus one token would run past the
///    end;
///  * shuffled: epoch e visits the W windows in the order of a Fisher-Yates
///    shuffle driven by splitmix64 seeded with
///    (seed << 32) ^ 0x73687566666c65 ^ (e * 0xD1B54A32D192ED03):
///    for i = W-1 down to 1 swap order[i] with order[next() % (i + 1)].
class TokenWindows {
public:
  TokenWindows(int64_t tokens, int64_t window, bool shuffle, uint64_t seed)
      : tokens_(tokens), window_(window), shuffle_(shuffle), seed_(seed) {}
  /// The token offset of the next window; advances.
  int64_t next();
  /// Continues a run: |consumed| windows taken so far; in sequential order
  /// the next one starts at |offset| (wrapping as usual).
  void resume(int64_t consumed, int64_t offset);
  int64_t consumed() const { return consumed_; }
  /// The offset the next sequential window starts at (the data position
  /// checkpoints record).
  int64_t offset() const { return offset_; }
  int64_t windowsPerEpoch() const { return tokens_ > window_ ? (tokens_ - 1) / window_ : 0; }

private:
  int64_t tokens_, window_;
  bool shuffle_;
  uint64_t seed_;
  int64_t consumed_ = 0, offset_ = 0;
  int64_t epoch_ = -1;
  std::vector<int64_t> order_;
};

/// One line of a --log FILE (JSONL), without the newline:
///   {"step":N,"loss":L,"grad_norm":G,"lr":X,"ms":T,"tok_per_s":R}
/// (grad_norm / lr omitted when the step has none, tok_per_s when no token
/// argument; "skipped":true when loss scaling skipped the step; floats
/// with 9 significant digits, non-finite ones as null).
struct StepRecord {
  int64_t step = 0;
  double loss = 0, gradNorm = 0, lr = 0, ms = 0, tokPerS = 0;
  bool hasGradNorm = false, hasLr = false, hasTokens = false, skipped = false;
  /// GPU runs: model TFLOP/s, MFU (a fraction; < 0: the peak is unknown)
  /// and the peak device memory so far in GiB; absent when hasDevice is
  /// false (txopt-run).
  bool hasDevice = false;
  double tflops = 0, mfu = -1, memGib = 0;
};
std::string stepLogLine(const StepRecord &record);

/// The GEMM precision a step's model FLOPs are measured against.
enum class PeakKind { F32, TF32, BF16, FP8 };
/// The dense (no sparsity) peak TFLOP/s of the GPU named |deviceName| (as
/// the driver names it) for |kind|, from the vendor's data sheets; 0 when
/// the GPU is not in the table, where MFU is not printed.
double peakTflops(const std::string &deviceName, PeakKind kind);
const char *peakKindName(PeakKind kind);
/// The --log line of a validation pass after step |step| (0: before the
/// first): {"step":N,"val_loss":L,"val_windows":M}, L as in stepLogLine.
std::string valLogLine(int64_t step, double valLoss, int64_t windows);

/// The progress bar both drivers draw below the step lines when stdout is
/// a terminal: after step |done| of a run from |first| to |total| that has
/// taken |elapsedSeconds| since |first| began,
///   "[#########...........] 45/100  45%  ETA 0:24"
/// (|width| marks; the ETA extrapolates the steps run so far; "ETA -"
/// before there is a rate).
std::string progressBar(int64_t done, int64_t first, int64_t total, double elapsedSeconds,
                        int width = 30);
/// Terminal control: return to the start of the line and clear it (erases
/// the bar before the next line is printed).
inline constexpr const char *kClearLine = "\r\033[K";

} // namespace txrt

#endif // TXRT_CORE_TRAINING_H
