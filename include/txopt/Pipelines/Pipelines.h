//===- Pipelines.h - txopt's pass pipelines ---------------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// The default pipeline `txopt` runs after import, shared with txopt-opt and
// the C API so every entry point compiles the same way.
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_PIPELINES_PIPELINES_H
#define TXOPT_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassOptions.h"

#include <optional>
#include "txopt/Dialect/Tx/Transforms/Passes.h"

namespace mlir {
class OpPassManager;
} // namespace mlir

namespace mlir::txopt {

/// Options of the default pipeline (`txopt-default` in textual form).
struct DefaultPipelineOptions
    : public PassPipelineOptions<DefaultPipelineOptions> {
  Option<bool> fuseNorms{*this, "fuse-norms",
                         llvm::cl::desc("Run tx-fuse-norms"),
                         llvm::cl::init(true)};
  Option<bool> fuseAttention{
      *this, "fuse-attention",
      llvm::cl::desc("Run tx-fuse-attention (txopt turns it off for f32 "
                     "GPU steps: cuDNN's fused attention is bf16/fp16)"),
      llvm::cl::init(true)};
  Option<bool> attentionCudnnLimits{
      *this, "attention-cudnn-limits",
      llvm::cl::desc("Fuse only the attention cuDNN's fused SDPA runs (head "
                     "dims multiples of 8, at most 256): for GPU steps"),
      llvm::cl::init(false)};
  Option<bool> padLossClasses{
      *this, "pad-loss-classes",
      llvm::cl::desc("Run tx-pad-loss-classes (txopt: for GPU steps, where "
                     "cuBLASLt runs unaligned logit rows slowly)"),
      llvm::cl::init(false)};
  Option<bool> fuseOptimizer{*this, "fuse-optimizer",
                             llvm::cl::desc("Run tx-fuse-optimizer"),
                             llvm::cl::init(true)};
  Option<tx::GemmPrecision> precision{
      *this, "precision",
      llvm::cl::desc("GEMM precision after fusion (bf16, fp16: tx-autocast)"),
      llvm::cl::init(tx::GemmPrecision::fp32),
      llvm::cl::values(
          clEnumValN(tx::GemmPrecision::fp32, "fp32", "no autocast"),
          clEnumValN(tx::GemmPrecision::bf16, "bf16", "bfloat16 GEMMs"),
          clEnumValN(tx::GemmPrecision::fp16, "fp16", "IEEE half GEMMs"))};
  Option<bool> explain{*this, "explain",
                       llvm::cl::desc("Fusion passes emit a remark for every "
                                      "candidate they did not fuse"),
                       llvm::cl::init(false)};
};

/// Appends the passes `txopt model.onnx` runs after import: canonicalize and
/// CSE clean up what import left, then the norm and optimizer fusions, then
/// another cleanup for what fusion made dead.
void buildDefaultPipeline(OpPassManager &pm,
                          const DefaultPipelineOptions &options);

/// Appends what `txopt model.onnx --train` runs: tx-untie-parameters with
/// |untie|'s options when it is set (a driver that loads weights by name
/// runs it before loading them and passes null), the default pipeline (so
/// the forward's norms are fused and differentiate to fused gradients),
/// tx-build-train-step with |step|'s options, tx-insert-fp8 when |fp8| is
/// set (right after, as it needs the seed marker), and a final cleanup that
/// merges the forward and recomputed norm statistics. |dataParallelRanks|
/// >= 1 adds tx-data-parallel before the cleanup (0: a plain step), and
/// after it tx-bucket-gradient-reductions with |bucketBytes| (0: the
/// reduce-scatters stay after the backward).
/// Gradient bytes per data-parallel bucket by default: PyTorch DDP's 25 MB.
inline constexpr int64_t kDefaultBucketBytes = 25 * 1024 * 1024;

void buildTrainPipeline(
    OpPassManager &pm, const DefaultPipelineOptions &fusion,
    const tx::BuildTrainStepPassOptions &step,
    const std::optional<tx::InsertFP8PassOptions> &fp8 = std::nullopt,
    int64_t dataParallelRanks = 0,
    const std::optional<tx::UntieParametersPassOptions> &untie = std::nullopt,
    const std::optional<tx::CacheFP8WeightsPassOptions> &cacheFP8Weights = std::nullopt,
    int64_t bucketBytes = kDefaultBucketBytes);

/// The two halves of buildTrainPipeline, for a driver that builds one step
/// for several rank counts (txopt --data-parallel=2,4,8): the rank-count
/// independent part (untie, the default pipeline, tx-build-train-step,
/// tx-insert-fp8) runs once, and the rest, from tx-data-parallel on, once
/// per rank count on a copy of its result. Together they append exactly
/// what buildTrainPipeline does.
void buildTrainPipelineFront(
    OpPassManager &pm, const DefaultPipelineOptions &fusion,
    const tx::BuildTrainStepPassOptions &step,
    const std::optional<tx::InsertFP8PassOptions> &fp8,
    const std::optional<tx::UntieParametersPassOptions> &untie);
void buildTrainPipelineTail(
    OpPassManager &pm, bool fp8, int64_t dataParallelRanks,
    const std::optional<tx::CacheFP8WeightsPassOptions> &cacheFP8Weights,
    int64_t bucketBytes);

/// Registers `txopt-default` (and `txopt-train`, TrainPipeline.h) for
/// txopt-opt and mlir-opt plugins.
void registerTxoptPipelines();

} // namespace mlir::txopt

#endif // TXOPT_PIPELINES_PIPELINES_H
