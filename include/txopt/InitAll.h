//===- InitAll.h - register everything txopt uses ---------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// One place that lists the dialects and passes txopt's tools understand.
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_INITALL_H
#define TXOPT_INITALL_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace mlir::txopt {

/// Adds tx and the upstream dialects that tx IR mentions (func, arith).
void registerAllDialects(DialectRegistry &registry);

/// Registers txopt's own passes and pipelines only (what a plugin loaded
/// into mlir-opt adds; mlir-opt already has the upstream ones).
void registerTxoptPasses();

/// Registers txopt's passes and the upstream ones its pipelines use.
void registerAllPasses();

} // namespace mlir::txopt

#endif // TXOPT_INITALL_H
