//===- TxOps.h - tx dialect operations --------------------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// Declares the tx ops generated from TxOps.td and the shape helpers they share.
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_DIALECT_TX_IR_TXOPS_H
#define TXOPT_DIALECT_TX_IR_TXOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "txopt/Dialect/Tx/IR/TxDialect.h"
#include "txopt/Dialect/Tx/IR/TxEnums.h.inc"
#define GET_ATTRDEF_CLASSES
#include "txopt/Dialect/Tx/IR/TxAttrs.h.inc"

#define GET_OP_CLASSES
#include "txopt/Dialect/Tx/IR/TxOps.h.inc"

namespace mlir::txopt::tx {

/// Numpy/ONNX multidirectional broadcast of two shapes; failure when a pair
/// of dims is neither equal nor 1.
FailureOr<SmallVector<int64_t>> broadcastShapes(ArrayRef<int64_t> lhs,
                                                ArrayRef<int64_t> rhs);

/// Maps a possibly negative axis into [0, rank); failure when out of range.
FailureOr<int64_t> normalizeAxis(int64_t axis, int64_t rank);

/// Formats a shape as `[2, 32, 128]` for diagnostics.
std::string formatShape(ArrayRef<int64_t> shape);

} // namespace mlir::txopt::tx

#endif // TXOPT_DIALECT_TX_IR_TXOPS_H
