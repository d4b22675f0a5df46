//===- TxDialect.h - tx dialect declaration ---------------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// Declares the tx dialect class.
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_DIALECT_TX_IR_TXDIALECT_H
#define TXOPT_DIALECT_TX_IR_TXDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Dialect.h"

#include "txopt/Dialect/Tx/IR/TxOpsDialect.h.inc"

#endif // TXOPT_DIALECT_TX_IR_TXDIALECT_H
