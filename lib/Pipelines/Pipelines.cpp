//===- Pipelines.cpp - txopt's pass pipelines -----------------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// Builds the default post-import pipeline.
//
//===----------------------------------------------------------------------===//

#include "txopt/Pipelines/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void txopt::buildDefaultPipeline(OpPassManager &pm,
                                 const DefaultPipelineOptions &) {
  OpPassManager &funcPm = pm.nest<func::FuncOp>();
  funcPm.addPass(createCanonicalizerPass());
  funcPm.addPass(createCSEPass());
}

void txopt::registerTxoptPipelines() {
  PassPipelineRegistration<DefaultPipelineOptions>(
      "txopt-default",
      "The pipeline `txopt model.onnx` runs after import",
      [](OpPassManager &pm, const DefaultPipelineOptions &options) {
        buildDefaultPipeline(pm, options);
      });
}
