//===- Report.h - txopt's JSON report and terminal summary ------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// What `--report` writes and what txopt prints after compiling a model.
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_TOOLS_TXOPT_REPORT_H
#define TXOPT_TOOLS_TXOPT_REPORT_H

#include "mlir/IR/BuiltinOps.h"
#include "txopt/Import/ONNX/ONNXImporter.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace txopt_cli {

/// A fusion candidate that nearly matched, from a pass's near-miss remark.
struct NearMiss {
  std::string pattern; ///< layer_norm, rms_norm, adam, ...
  std::string node;    ///< ONNX node name (the op's location)
  std::string reason;
};

/// What `--train` built: the step function and its recipe.
struct TrainSummary {
  std::string function;
  std::string optimizer;
  std::string loss;
  llvm::json::Object recipe; ///< the step's tx.train_step attribute
  int64_t trainableParams = 0;
  int64_t trainableElements = 0;
  int64_t stateTensors = 0; ///< optimizer state arguments (moments, buffers)
  std::vector<std::string> frozen;  ///< parameters read but not trained
  std::vector<std::string> noDecay; ///< trained without weight decay
  /// tx-untie-parameters: each untied parameter with its copies' names, and
  /// each shared parameter kept tied with the reason.
  std::vector<std::pair<std::string, std::vector<std::string>>> untied;
  std::vector<std::pair<std::string, std::string>> tied;
  /// Gradient accumulation: micro-batches per optimizer step (1: none),
  /// the batch argument's shape (one micro-batch) and the effective batch
  /// of one step (the first dim times gradAccum and the ranks).
  int64_t gradAccum = 1;
  /// Data parallelism (tx-data-parallel): the ranks the step is for (1: a
  /// plain step, or one rank).
  int64_t ranks = 1;
  std::vector<int64_t> microBatch, effectiveBatch;
};

/// Describes the step function of |module| (the one with tx.train_step).
std::optional<TrainSummary> describeTrainStep(mlir::ModuleOp module);

/// The mixed-precision policy and where it applied.
struct PrecisionSummary {
  std::string mode;              ///< fp32, bf16, fp16
  int64_t lowPrecisionGemms = 0; ///< matmul/gemm ops in the low type
  int64_t f32Gemms = 0;          ///< matmul/gemm ops left in f32
  /// tx.attention / tx.attention_grad whose q is in the low type (fused
  /// attention runs in bf16/fp16 in a low-precision step).
  int64_t lowPrecisionAttention = 0, lowPrecisionAttentionGrads = 0;
  bool lossScaling = false;
  int64_t fp8Gemms = 0;        ///< tx.fp8_matmul ops
  /// tx.fp8_attention / tx.fp8_attention_grad (--fp8-attention).
  int64_t fp8Attention = 0, fp8AttentionGrads = 0;
  int64_t fp8FastAccumulationGemms = 0; ///< of them, with fast_accumulation
  int64_t fp8StateTensors = 0; ///< amax histories, scales, scale_invs
  /// Tensors cast to FP8 under delayed scaling: the rows of the packed
  /// scales (one per cast site).
  int64_t fp8CastSites = 0;
  /// Weights whose FP8 codes the step keeps (tx-cache-fp8-weights).
  int64_t fp8CachedWeights = 0;
  std::string fp8Recipe;       ///< the #tx.fp8_recipe, printed
};

/// Counts the GEMMs of |module| by element type under --precision=|mode|.
PrecisionSummary describePrecision(mlir::ModuleOp module,
                                   const std::string &mode);

/// Everything the report and the summary say about one compilation.
struct CompileSummary {
  std::string model;
  std::string output;
  std::string emit;
  mlir::txopt::ONNXImportInfo import;
  std::map<std::string, int64_t> txOps; ///< op name -> count in the output
  std::map<std::string, int64_t> fused; ///< fused-op kind -> count
  std::vector<NearMiss> notFused;
  std::vector<std::string> fusionsRun;  ///< "norms", "optimizer"
  /// tx-pad-loss-classes: each padded loss's classes, before and after.
  std::vector<std::pair<int64_t, int64_t>> paddedLossClasses;
  std::optional<TrainSummary> train;    ///< with --train
  /// --weights DIR: the checkpoint folder and how many parameters it set.
  std::string weightsCheckpoint;
  int64_t weightsLoaded = 0;
  PrecisionSummary precision;
  double seconds = 0.0;
  /// With -o step.txa: the GPU step in one line, and the report's figures.
  std::string gpu;
  int64_t gpuLaunches = 0;
  int64_t gpuArenaBytes = 0;
  int64_t gpuAttentionCalls = 0;        ///< fused attention, fwd + bwd
  int64_t gpuFP8AttentionCalls = 0;     ///< of them in FP8
  int64_t gpuBiasEpilogues = 0;         ///< GEMMs adding their bias (cuBLASLt)
  int64_t gpuGeluEpilogues = 0;         ///< GEMMs computing their GELU (cuBLASLt)
  int64_t gpuAttentionBytesAvoided = 0; ///< scores/probabilities not stored
  int64_t gpuRematerializedBytes = 0;   ///< recomputed for the backward
  double gpuModelFlops = 0;             ///< per optimizer step (StepStatistics)
  /// --data-parallel with several counts: each other count's step in the
  /// same artifact (the numbers above are the smallest count's).
  struct RankVariant {
    int64_t ranks = 0;
    int64_t arenaBytes = 0;
    int64_t launches = 0;
  };
  std::vector<RankVariant> gpuRankVariants;
};

/// Counts the ops of |module| by name (func.func and the module excluded).
std::map<std::string, int64_t> countOps(mlir::ModuleOp module);

/// The report's "fused" object: fused norm ops by kind, and the parameters
/// and ops of the multi-tensor optimizer.
std::map<std::string, int64_t> countFused(mlir::ModuleOp module);

/// Parses a near-miss remark (`not fused: <pattern>: <reason>`) emitted at
/// |loc|; std::nullopt for any other diagnostic text.
std::optional<NearMiss> parseNearMiss(mlir::Location loc, llvm::StringRef text);

/// The `--report` JSON object.
llvm::json::Object buildReport(const CompileSummary &summary);

/// A one-screen human summary; |verbose| lists every op kind.
void printSummary(const CompileSummary &summary, bool verbose,
                  llvm::raw_ostream &os);

} // namespace txopt_cli

#endif // TXOPT_TOOLS_TXOPT_REPORT_H
