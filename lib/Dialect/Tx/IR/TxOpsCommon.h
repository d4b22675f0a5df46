//===- TxOpsCommon.h - helpers the tx op files share ------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// Shape-inference helpers of the primitive op families (TxOps.cpp,
// TxElementwiseOps.cpp, TxShapeOps.cpp, TxMathOps.cpp); private to the
// dialect library.
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_LIB_DIALECT_TX_IR_TXOPSCOMMON_H
#define TXOPT_LIB_DIALECT_TX_IR_TXOPSCOMMON_H

#include "txopt/Dialect/Tx/IR/TxOps.h"

#include "mlir/IR/Diagnostics.h"

#include <optional>

namespace mlir::txopt::tx::detail {

/// The type of an operand whose staticness `checkStaticOperands` (inference)
/// or the ODS constraints (verifiers) have established.
inline RankedTensorType tensorType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

/// Emits the streamed `args` at `location` when one is given (verification,
/// parsing), and stays silent otherwise (speculative inference by a builder
/// or a pattern). Types and attributes print quoted, as in every diagnostic.
template <typename... Args>
LogicalResult inferError(std::optional<Location> location, Args &&...args) {
  return emitOptionalError(location, std::forward<Args>(args)...);
}

/// Fails (with an error at |location| when given) unless every operand is a
/// statically shaped ranked tensor; inference calls it first.
LogicalResult checkStaticOperands(std::optional<Location> location,
                                  ValueRange operands);

} // namespace mlir::txopt::tx::detail

#endif // TXOPT_LIB_DIALECT_TX_IR_TXOPSCOMMON_H
