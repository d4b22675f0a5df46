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
    : public PassPipelineOptions<DefaultPipelineOptions> {};

/// Appends the passes `txopt model.onnx` runs after import: canonicalize and
/// CSE clean up what import left (folded shape arithmetic, duplicate reads).
void buildDefaultPipeline(OpPassManager &pm,
                          const DefaultPipelineOptions &options);

/// Registers `txopt-default` for txopt-opt and mlir-opt plugins.
void registerTxoptPipelines();

} // namespace mlir::txopt

#endif // TXOPT_PIPELINES_PIPELINES_H
