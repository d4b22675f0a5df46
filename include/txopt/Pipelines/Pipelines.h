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
  Option<bool> fuseOptimizer{*this, "fuse-optimizer",
                             llvm::cl::desc("Run tx-fuse-optimizer"),
                             llvm::cl::init(true)};
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

/// Registers `txopt-default` for txopt-opt and mlir-opt plugins.
void registerTxoptPipelines();

} // namespace mlir::txopt

#endif // TXOPT_PIPELINES_PIPELINES_H
