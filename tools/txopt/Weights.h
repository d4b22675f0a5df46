//===- Weights.h - txopt --weights: start from a checkpoint -----*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// Replaces the initial values of an imported model's parameters with the
// weights of a training checkpoint (txopt-run / txrun --save: checkpoint.json
// + safetensors, runtime/src/core/checkpoint.h), so that a new compile (a
// new recipe, precision, accumulation...) starts from trained weights.
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_TOOLS_TXOPT_WEIGHTS_H
#define TXOPT_TOOLS_TXOPT_WEIGHTS_H

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace txopt_cli {

/// Loads the checkpoint in |dir| (checked: manifest, sizes, checksums) and
/// sets every parameter of |module| from its tensor of role `param` with the
/// same name: the checkpoint must hold each trainable (not `frozen`)
/// parameter, and each of its `param` tensors must be a parameter of the
/// model with the same shape and element type. A parameter kept in an
/// external-data file becomes inline. Optimizer state is not loaded (a new
/// compile starts its own). Returns the number of parameters set, or -1 with
/// a one-line |error| naming the tensor.
int loadWeights(mlir::ModuleOp module, const std::string &dir, std::string &error);

} // namespace txopt_cli

#endif // TXOPT_TOOLS_TXOPT_WEIGHTS_H
