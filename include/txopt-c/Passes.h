/*===- Passes.h - C API for the tx passes ----------------------*- C -*-===*
 *
 * SPDX-License-Identifier: Apache-2.0
 * mlirCreateTx<Pass>() / mlirRegisterTx<Pass>() generated from Passes.td.
 *
 *===----------------------------------------------------------------------===*/

#ifndef TXOPT_C_PASSES_H
#define TXOPT_C_PASSES_H

#include "mlir-c/Pass.h"

#include "txopt/Dialect/Tx/Transforms/Passes.capi.h.inc"

#endif /* TXOPT_C_PASSES_H */
