//===- TrainPipeline.cpp - `txopt-train`, the --train pipeline ------------===//
//
// SPDX-License-Identifier: Apache-2.0
// Maps txopt's --train options onto buildTrainPipeline, for txopt-opt.
//
//===----------------------------------------------------------------------===//

#include "txopt/Pipelines/TrainPipeline.h"
#include "txopt/Pipelines/Pipelines.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

void txopt::buildTrainPipelineFromOptions(OpPassManager &pm,
                                          const TrainPipelineOptions &options) {
  DefaultPipelineOptions fusion;
  fusion.fuseNorms = options.fuseNorms;
  fusion.fuseAttention = options.fuseAttention;
  fusion.fuseOptimizer = options.fuseOptimizer;
  fusion.explain = options.explain;
  // As txopt does: FP8 runs the GEMMs it cannot convert in bf16, and fp16
  // needs loss scaling.
  switch (options.precision) {
  case TrainPrecision::fp32:
    fusion.precision = tx::GemmPrecision::fp32;
    break;
  case TrainPrecision::fp16:
    fusion.precision = tx::GemmPrecision::fp16;
    break;
  case TrainPrecision::bf16:
  case TrainPrecision::fp8:
    fusion.precision = tx::GemmPrecision::bf16;
    break;
  }

  tx::BuildTrainStepPassOptions step;
  step.loss = options.loss;
  step.labels = options.labels;
  step.optimizer = options.optimizer;
  step.lr = options.lr;
  step.beta1 = options.beta1;
  step.beta2 = options.beta2;
  step.eps = options.eps;
  step.weightDecay = options.weightDecay;
  step.momentum = options.momentum;
  step.noDecay = options.noDecay;
  step.gradClip = options.gradClip;
  step.gradAccum = options.gradAccum;
  step.eval = options.eval;
  step.freeze = options.freeze;
  step.lossScaling = options.precision == TrainPrecision::fp16;

  std::optional<tx::InsertFP8PassOptions> fp8;
  if (options.precision == TrainPrecision::fp8) {
    fp8.emplace();
    fp8->scaling = options.fp8Scaling;
    fp8->format = options.fp8Format;
    fp8->history = options.fp8History;
    fp8->amax = options.fp8Amax;
    fp8->margin = options.fp8Margin;
    fp8->exclude = options.fp8Exclude;
    fp8->fastAccumulation = options.fp8FastAccumulation;
    fp8->target = options.target;
    fp8->explain = options.explain;
    fp8->attention = options.fp8Attention;
  }
  tx::UntieParametersPassOptions untie;
  untie.tie = options.tie;
  untie.untie = options.untie;
  std::optional<tx::CacheFP8WeightsPassOptions> cache;
  if (fp8 && options.fp8WeightCache && fp8->scaling == tx::FP8ScalingKind::delayed) {
    cache.emplace();
    cache->explain = options.explain;
  }
  buildTrainPipeline(pm, fusion, step, fp8, options.dataParallel, untie, cache,
                     options.bucketBytes);
}

void txopt::registerTrainPipeline() {
  PassPipelineRegistration<TrainPipelineOptions>(
      "txopt-train",
      "The pipeline `txopt model.onnx --train` runs after import: fusion, "
      "the training step, precision",
      [](OpPassManager &pm, const TrainPipelineOptions &options) {
        buildTrainPipelineFromOptions(pm, options);
      });
}
