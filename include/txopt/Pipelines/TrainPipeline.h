//===- TrainPipeline.h - `txopt-train`, the --train pipeline ----*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// The pipeline `txopt model.onnx --train` runs, registered for txopt-opt as
// `--txopt-train` with the driver's options, so any stage of a training
// compile can be reproduced in one line from the imported IR.
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_PIPELINES_TRAINPIPELINE_H
#define TXOPT_PIPELINES_TRAINPIPELINE_H

#include "txopt/Dialect/Tx/Transforms/Passes.h"
#include "txopt/Pipelines/Pipelines.h"

#include "mlir/Pass/PassOptions.h"

namespace mlir::txopt {

/// txopt's --precision: the GEMM type, and fp8 for FP8 GEMMs with scaling
/// state (bf16 where a GEMM cannot be FP8).
enum class TrainPrecision { fp32, bf16, fp16, fp8 };

} // namespace mlir::txopt

TXOPT_ENUM_PASS_OPTION(::mlir::txopt::TrainPrecision)

namespace mlir::txopt {

/// Options of `txopt-train`; each is the txopt flag of the same name
/// (`fp8-format` is --fp8-format, ...), with the same default.
struct TrainPipelineOptions : public PassPipelineOptions<TrainPipelineOptions> {
  Option<bool> fuseNorms{*this, "fuse-norms", llvm::cl::desc("Run tx-fuse-norms"),
                         llvm::cl::init(true)};
  Option<bool> fuseAttention{*this, "fuse-attention",
                             llvm::cl::desc("Run tx-fuse-attention"),
                             llvm::cl::init(true)};
  Option<bool> fuseOptimizer{*this, "fuse-optimizer",
                             llvm::cl::desc("Run tx-fuse-optimizer"),
                             llvm::cl::init(true)};
  Option<bool> explain{*this, "explain",
                       llvm::cl::desc("Emit a remark for every near miss"),
                       llvm::cl::init(false)};
  Option<TrainPrecision> precision{
      *this, "precision", llvm::cl::desc("GEMM precision"),
      llvm::cl::init(TrainPrecision::fp32),
      llvm::cl::values(
          clEnumValN(TrainPrecision::fp32, "fp32", "f32 everywhere"),
          clEnumValN(TrainPrecision::bf16, "bf16", "bf16 GEMMs"),
          clEnumValN(TrainPrecision::fp16, "fp16",
                     "fp16 GEMMs with dynamic loss scaling"),
          clEnumValN(TrainPrecision::fp8, "fp8",
                     "FP8 GEMMs with scaling state, bf16 elsewhere"))};
  Option<tx::LossKind> loss{
      *this, "loss", llvm::cl::desc("What result #0 of the forward is"),
      llvm::cl::init(tx::LossKind::Output),
      llvm::cl::values(
          clEnumValN(tx::LossKind::Output, "output", "the loss"),
          clEnumValN(tx::LossKind::CrossEntropy, "cross-entropy",
                     "logits, against the labels"))};
  Option<std::string> labels{*this, "labels",
                             llvm::cl::desc("The labels argument"),
                             llvm::cl::init("labels")};
  Option<tx::OptimizerKind> optimizer{
      *this, "optimizer", llvm::cl::desc("The optimizer"),
      llvm::cl::init(tx::OptimizerKind::AdamW),
      llvm::cl::values(
          clEnumValN(tx::OptimizerKind::AdamW, "adamw", "AdamW"),
          clEnumValN(tx::OptimizerKind::Adam, "adam", "Adam"),
          clEnumValN(tx::OptimizerKind::SGD, "sgd", "SGD"))};
  Option<double> lr{*this, "lr", llvm::cl::desc("Learning rate"),
                    llvm::cl::init(1e-3)};
  Option<double> beta1{*this, "beta1", llvm::cl::init(0.9)};
  Option<double> beta2{*this, "beta2", llvm::cl::init(0.999)};
  Option<double> eps{*this, "eps", llvm::cl::init(1e-8)};
  Option<double> weightDecay{
      *this, "weight-decay",
      llvm::cl::desc("Negative: PyTorch's default of the optimizer"),
      llvm::cl::init(-1.0)};
  Option<double> momentum{*this, "momentum", llvm::cl::init(0.0)};
  Option<std::string> noDecay{*this, "no-decay", llvm::cl::init("")};
  Option<double> gradClip{*this, "grad-clip", llvm::cl::init(0.0)};
  Option<int64_t> gradAccum{
      *this, "grad-accum",
      llvm::cl::desc("Micro-batches per optimizer step (> 1 emits @micro_step)"),
      llvm::cl::init(1)};
  Option<int64_t> dataParallel{
      *this, "data-parallel",
      llvm::cl::desc("Build a ZeRO-1 step for N data-parallel ranks "
                     "(tx-data-parallel; 0: a plain step; 1 keeps the "
                     "collectives, for a one-rank launch)"),
      llvm::cl::init(0)};
  Option<int64_t> bucketBytes{
      *this, "bucket-bytes",
      llvm::cl::desc("Gradient bytes per data-parallel bucket "
                     "(tx-bucket-gradient-reductions; 0: after the backward)"),
      llvm::cl::init(kDefaultBucketBytes)};
  Option<bool> eval{*this, "eval",
                    llvm::cl::desc("Also emit @eval (validation loss)"),
                    llvm::cl::init(false)};
  Option<std::string> freeze{*this, "freeze", llvm::cl::init("")};
  Option<std::string> tie{
      *this, "tie",
      llvm::cl::desc("Regex: shared parameters kept tied (tx-untie-parameters)"),
      llvm::cl::init("")};
  Option<std::string> untie{
      *this, "untie",
      llvm::cl::desc("Regex: shared parameters untied, embeddings too"),
      llvm::cl::init("")};
  Option<tx::FP8ScalingKind> fp8Scaling{
      *this, "fp8-scaling", llvm::cl::init(tx::FP8ScalingKind::delayed),
      llvm::cl::values(
          clEnumValN(tx::FP8ScalingKind::delayed, "delayed", "amax history"),
          clEnumValN(tx::FP8ScalingKind::current, "current", "this step"))};
  Option<tx::FP8Format> fp8Format{
      *this, "fp8-format", llvm::cl::init(tx::FP8Format::hybrid),
      llvm::cl::values(
          clEnumValN(tx::FP8Format::hybrid, "hybrid", "E4M3 + E5M2"),
          clEnumValN(tx::FP8Format::e4m3, "e4m3", "E4M3 only"))};
  Option<int64_t> fp8History{*this, "fp8-history", llvm::cl::init(1024)};
  Option<tx::AmaxCompute> fp8Amax{
      *this, "fp8-amax", llvm::cl::init(tx::AmaxCompute::max),
      llvm::cl::values(
          clEnumValN(tx::AmaxCompute::max, "max", "history max"),
          clEnumValN(tx::AmaxCompute::most_recent, "most_recent", "last"))};
  Option<int64_t> fp8Margin{*this, "fp8-margin", llvm::cl::init(0)};
  Option<std::string> fp8Exclude{*this, "fp8-exclude", llvm::cl::init("")};
  Option<tx::FP8FastAccumulation> fp8FastAccumulation{
      *this, "fp8-fast-accumulation", llvm::cl::init(tx::FP8FastAccumulation::none),
      llvm::cl::values(
          clEnumValN(tx::FP8FastAccumulation::forward, "forward", "forward GEMMs"),
          clEnumValN(tx::FP8FastAccumulation::none, "none", "none"),
          clEnumValN(tx::FP8FastAccumulation::all, "all", "every FP8 GEMM"))};
  Option<bool> fp8WeightCache{
      *this, "fp8-weight-cache",
      llvm::cl::desc("Delayed scaling: FP8 weight codes as step state (tx-cache-fp8-weights)"),
      llvm::cl::init(false)};
  Option<bool> fp8Attention{
      *this, "fp8-attention",
      llvm::cl::desc("Delayed scaling: eligible fused attentions in FP8 (tx-insert-fp8 attention)"),
      llvm::cl::init(false)};
  Option<std::string> target{*this, "target",
                             llvm::cl::desc("GPU architecture (FP8: sm_89+)"),
                             llvm::cl::init("sm_90")};
};

/// Appends what `txopt --train` runs for |options| (buildTrainPipeline of
/// Pipelines.h, with the driver's mapping of --precision).
void buildTrainPipelineFromOptions(OpPassManager &pm,
                                   const TrainPipelineOptions &options);

/// Registers `txopt-train`.
void registerTrainPipeline();

} // namespace mlir::txopt

#endif // TXOPT_PIPELINES_TRAINPIPELINE_H
