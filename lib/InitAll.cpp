//===- InitAll.cpp - register everything txopt uses -----------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// Dialect and pass registration shared by txopt, txopt-opt and the plugin.
//
//===----------------------------------------------------------------------===//

#include "txopt/InitAll.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "txopt/Dialect/Tx/IR/TxDialect.h"
#include "txopt/Dialect/Tx/Transforms/Passes.h"
#include "txopt/Pipelines/Pipelines.h"

void mlir::txopt::registerAllDialects(DialectRegistry &registry) {
  registry.insert<tx::TxDialect, func::FuncDialect>();
}

void mlir::txopt::registerTxoptPasses() {
  tx::registerTxPasses();
  registerTxoptPipelines();
}

void mlir::txopt::registerAllPasses() {
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
  mlir::registerInlinerPass();
  registerTxoptPasses();
}
