//===- Options.h - txopt command-line options -------------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// The options of the user-facing `txopt` driver and their parser.
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_TOOLS_TXOPT_OPTIONS_H
#define TXOPT_TOOLS_TXOPT_OPTIONS_H

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include "llvm/ADT/StringRef.h"

#include <vector>

namespace txopt_cli {

/// What `--emit` selects: the IR right after import, or after the pipeline.
enum class EmitKind { Imported, Fused };

struct Options {
  std::string input;
  std::string output = "-";
  EmitKind emit = EmitKind::Fused;
  std::map<std::string, std::vector<int64_t>> inputShapes;
  std::optional<std::string> reportPath;
  bool verbose = false;
  bool quiet = false;
  bool printLocations = false;
  bool inlineWeights = false; ///< --inline-weights: external data into the IR
  /// --weights DIR: parameters start from the checkpoint in DIR.
  std::optional<std::string> weightsCheckpoint;
  bool allowShapeMismatch = false; ///< --allow-shape-mismatch
  bool fuseNorms = true;     ///< off with --no-fuse=norms
  bool fuseOptimizer = true; ///< off with --no-fuse=optimizer
  /// --fuse-attention / --no-fuse=attention; unset: on, except for an f32
  /// GPU step (cuDNN's fused attention is bf16/fp16 only).
  std::optional<bool> fuseAttention;
  /// --pad-loss-classes / --no-pad-loss-classes; unset: on for a GPU step
  /// (tx-pad-loss-classes: cuBLASLt's unaligned-row GEMMs are slow).
  std::optional<bool> padLossClasses;
  /// --train and the options of the step it builds (see TrainStep.h);
  /// trainFlags lists the training options given, to reject them without
  /// --train.
  bool train = false;
  std::string loss = "output";
  std::string labels = "labels";
  std::string optimizer = "adamw";
  double lr = 1e-3;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  std::optional<double> weightDecay;
  double momentum = 0.0;
  std::optional<std::string> noDecay;
  double gradClip = 0.0;
  /// --grad-accum N: micro-batches per optimizer step (1: none).
  int64_t gradAccum = 1;
  /// --data-parallel N: a ZeRO-1 step for N ranks (1: the collectives
  /// kept over one rank); with a list N1,N2,...: the smallest count (the
  /// artifact's root step).
  int64_t dataParallel = 0; ///< 0: a plain step (no --data-parallel)
  /// --data-parallel's rank counts, ascending, without repeats (one count
  /// unless a list was given; a list makes one artifact for every count).
  std::vector<int64_t> dataParallelRanks;
  /// --bucket-mb X: gradient bytes per data-parallel bucket (0: the
  /// reduce-scatters stay after the backward).
  int64_t bucketBytes = 25 * 1024 * 1024;
  bool bucketGiven = false;
  /// --eval: also emit @eval (the validation loss, forward only).
  bool eval = false;
  std::string freeze;
  /// tx-untie-parameters' regexes: shared parameters kept tied / untied.
  std::string tie, untie;
  std::vector<std::string> trainFlags;
  /// --precision: fp32 (default), bf16, fp16 (with dynamic loss scaling
  /// under --train) or fp8.
  std::string precision = "fp32";
  /// --precision=fp8: the recipe (tx-insert-fp8's options).
  std::string fp8Scaling = "delayed";
  std::string fp8Format = "hybrid";
  int64_t fp8History = 1024;
  std::string fp8Amax = "max";
  int64_t fp8Margin = 0;
  std::string fp8Exclude;
  std::string fp8WeightCache = "off";
  std::string fp8FastAccumulation = "none";
  /// --fp8-attention: tx-insert-fp8's attention=true.
  bool fp8Attention = false;
  std::string target = "sm_90";
  std::vector<std::string> fp8Flags;
  /// GPU backend: `-o step.txa` compiles the training step for txrun;
  /// --gpu-plan / --gpu-kernels also write its command list and kernels.
  std::optional<std::string> gpuPlanPath;
  std::optional<std::string> gpuKernelsPath;
  std::optional<std::string> gpuPtxPath;
  bool allowTF32 = false;
  bool noGeluEpilogue = false; ///< --no-gelu-epilogue
  bool noLossGradFusion = false; ///< --no-loss-grad-fusion
  bool noNormGradInputFusion = false; ///< --no-norm-grad-input-fusion
  bool noPackedCasts = false; ///< --no-packed-casts
  bool emitsArtifact() const {
    return llvm::StringRef(output).ends_with(".txa");
  }
  bool showHelp = false;
  bool showVersion = false;
};

/// Parses argv. On a usage error returns false with a one-line |error|;
/// the driver then exits with status 2.
bool parseOptions(int argc, char **argv, Options &options, std::string &error);

/// The text `txopt --help` prints.
const char *helpText();

} // namespace txopt_cli

#endif // TXOPT_TOOLS_TXOPT_OPTIONS_H
