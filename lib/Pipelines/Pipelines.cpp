//===- Pipelines.cpp - txopt's pass pipelines -----------------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// Builds the default post-import pipeline.
//
//===----------------------------------------------------------------------===//

#include "txopt/Pipelines/Pipelines.h"
#include "txopt/Pipelines/TrainPipeline.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "txopt/Dialect/Tx/Transforms/Passes.h"

using namespace mlir;

void txopt::buildDefaultPipeline(OpPassManager &pm,
                                 const DefaultPipelineOptions &options) {
  OpPassManager &funcPm = pm.nest<func::FuncOp>();
  // Fusion matches chains of single-use values: fold and de-duplicate first
  // so that two reads of one constant do not hide a match.
  funcPm.addPass(createCanonicalizerPass());
  funcPm.addPass(createCSEPass());
  if (options.fuseNorms) {
    tx::FuseNormsPassOptions norms;
    norms.explain = options.explain;
    funcPm.addPass(tx::createFuseNormsPass(norms));
  }
  if (options.fuseAttention) {
    tx::FuseAttentionPassOptions attention;
    attention.explain = options.explain;
    attention.cudnnLimits = options.attentionCudnnLimits;
    funcPm.addPass(tx::createFuseAttentionPass(attention));
  }
  // After the fusions (a padded head must not hide the loss from them),
  // before autocast and autodiff, which then derive the padded backward.
  if (options.padLossClasses)
    funcPm.addPass(tx::createPadLossClassesPass());
  if (options.fuseOptimizer) {
    tx::FuseOptimizerPassOptions optimizer;
    optimizer.explain = options.explain;
    funcPm.addPass(tx::createFuseOptimizerPass(optimizer));
  }
  if (options.fuseNorms || options.fuseOptimizer || options.fuseAttention) {
    funcPm.addPass(createCanonicalizerPass());
    funcPm.addPass(createCSEPass());
  }
  // After fusion: the fused norms keep f32 statistics whatever the GEMMs do.
  if (options.precision != tx::GemmPrecision::fp32) {
    tx::AutocastPassOptions autocast;
    autocast.precision = options.precision;
    funcPm.addPass(tx::createAutocastPass(autocast));
  }
}

void txopt::buildTrainPipeline(
    OpPassManager &pm, const DefaultPipelineOptions &fusion,
    const tx::BuildTrainStepPassOptions &step,
    const std::optional<tx::InsertFP8PassOptions> &fp8,
    int64_t dataParallelRanks,
    const std::optional<tx::UntieParametersPassOptions> &untie,
    const std::optional<tx::CacheFP8WeightsPassOptions> &cacheFP8Weights,
    int64_t bucketBytes) {
  buildTrainPipelineFront(pm, fusion, step, fp8, untie);
  buildTrainPipelineTail(pm, fp8.has_value(), dataParallelRanks, cacheFP8Weights,
                         bucketBytes);
}

void txopt::buildTrainPipelineFront(
    OpPassManager &pm, const DefaultPipelineOptions &fusion,
    const tx::BuildTrainStepPassOptions &step,
    const std::optional<tx::InsertFP8PassOptions> &fp8,
    const std::optional<tx::UntieParametersPassOptions> &untie) {
  // Before fusion, while every op still carries its ONNX node's location.
  if (untie)
    pm.addPass(tx::createUntieParametersPass(*untie));
  buildDefaultPipeline(pm, fusion);
  pm.addPass(tx::createBuildTrainStepPass(step));
  if (fp8)
    pm.addPass(tx::createInsertFP8Pass(*fp8));
}

void txopt::buildTrainPipelineTail(
    OpPassManager &pm, bool fp8, int64_t dataParallelRanks,
    const std::optional<tx::CacheFP8WeightsPassOptions> &cacheFP8Weights,
    int64_t bucketBytes) {
  // Before the cleanup, which could reshape the norm computation the pass
  // finds the gradients by.
  if (dataParallelRanks >= 1)
    pm.addPass(tx::createDataParallelPass({dataParallelRanks}));
  // After data parallelism, which adds arguments to the step (a state-init
  // function made before would not take them) and all-reduces the amaxes
  // (so a data-parallel step caches no weight: its amax reaches the scale
  // update through the all-reduce).
  if (fp8 && cacheFP8Weights)
    pm.addPass(tx::createCacheFP8WeightsPass(*cacheFP8Weights));
  OpPassManager &funcPm = pm.nest<func::FuncOp>();
  funcPm.addPass(createCanonicalizerPass());
  funcPm.addPass(createCSEPass());
  // Last: the cleanup hoists constants and could move what this places.
  if (dataParallelRanks >= 1 && bucketBytes > 0)
    pm.addPass(tx::createBucketGradientReductionsPass({bucketBytes}));
}

void txopt::registerTxoptPipelines() {
  PassPipelineRegistration<DefaultPipelineOptions>(
      "txopt-default",
      "The pipeline `txopt model.onnx` runs after import",
      [](OpPassManager &pm, const DefaultPipelineOptions &options) {
        buildDefaultPipeline(pm, options);
      });
  registerTrainPipeline();
}
