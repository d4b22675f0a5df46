//===- TxInterfaces.h - tx op interfaces ------------------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// The generated tx op interfaces and what their methods see: GradientContext
// is the argument of DifferentiableOpInterface::buildGradients.
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_DIALECT_TX_IR_TXINTERFACES_H
#define TXOPT_DIALECT_TX_IR_TXINTERFACES_H

#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/BitVector.h"

namespace mlir::txopt::tx {

/// What a gradient rule sees: the op, the gradients of its results (null
/// where a result's gradient is zero), which operand gradients are wanted,
/// and where they go.
struct GradientContext {
  ImplicitLocOpBuilder &b;
  Operation *op;
  ArrayRef<Value> resultGrads;
  const llvm::BitVector &needed;
  SmallVectorImpl<Value> &operandGrads;

  bool wants(unsigned operand) const { return needed.test(operand); }
  void set(unsigned operand, Value grad) {
    if (wants(operand))
      operandGrads[operand] = grad;
  }
  /// The gradient of the single result.
  Value g() const { return resultGrads.front(); }
  /// The gradient of result |i|, zeros when it has none.
  Value gOrZeros(unsigned i);
};

} // namespace mlir::txopt::tx

#include "txopt/Dialect/Tx/IR/TxInterfaces.h.inc"

#endif // TXOPT_DIALECT_TX_IR_TXINTERFACES_H
