//===- Inputs.h - argument values for txopt-run -----------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_TOOLS_TXOPT_RUN_INPUTS_H
#define TXOPT_TOOLS_TXOPT_RUN_INPUTS_H

#include "txopt/Reference/Tensor.h"

#include "mlir/IR/Value.h"

#include <cstdint>
#include <optional>
#include <string>

namespace txopt_run {

/// Upper bound (exclusive) for random values of the integer argument |arg|:
/// the smallest size among the tables it indexes (tx.gather and
/// tx.gather_elements indices, along their axis) and the class count of the
/// losses it labels (tx.softmax_cross_entropy_loss), following the value
/// through data-movement ops (cast, reshape, slice, pad, concat, ...).
/// std::nullopt when it reaches none of these.
std::optional<int64_t> inferIndexBound(mlir::Value arg);

/// A seeded random tensor of |type| for argument number |argIndex|. Floats
/// are N(0, 1) (Box-Muller on a splitmix64 stream); integers are uniform in
/// [0, bound); i1 is uniform in {0, 1}. See `txopt-run --help`.
mlir::txopt::reference::Tensor randomTensor(mlir::RankedTensorType type,
                                            uint64_t seed, unsigned argIndex,
                                            int64_t bound);

/// A file name for output |name|: characters other than [A-Za-z0-9._-]
/// become '_', and ".npy" is appended.
std::string npyFileNameFor(const std::string &name);

} // namespace txopt_run

#endif // TXOPT_TOOLS_TXOPT_RUN_INPUTS_H
