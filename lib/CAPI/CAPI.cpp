//===- CAPI.cpp - C API for the tx dialect, passes and pipeline -----------===//
//
// SPDX-License-Identifier: Apache-2.0
// Wraps registration and the default pipeline for C callers.
//
//===----------------------------------------------------------------------===//

#include "txopt-c/Dialects.h"

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Pass.h"
#include "mlir/CAPI/Registration.h"
#include "mlir/CAPI/Support.h"
#include "mlir/Pass/PassManager.h"
#include "txopt/Dialect/Tx/IR/TxDialect.h"
#include "txopt/Dialect/Tx/Transforms/Passes.h"
#include "txopt/InitAll.h"
#include "txopt/Pipelines/Pipelines.h"

MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(Tx, tx, mlir::txopt::tx::TxDialect)

void txoptRegisterAllDialects(MlirDialectRegistry registry) {
  mlir::txopt::registerAllDialects(*unwrap(registry));
}

void txoptRegisterAllPasses(void) { mlir::txopt::registerAllPasses(); }

MlirLogicalResult txoptBuildDefaultPipeline(MlirOpPassManager pm,
                                            MlirStringRef options) {
  auto parsed = mlir::txopt::DefaultPipelineOptions::createFromString(
      unwrap(options));
  if (!parsed)
    return mlirLogicalResultFailure();
  mlir::txopt::buildDefaultPipeline(*unwrap(pm), *parsed);
  return mlirLogicalResultSuccess();
}

// The generated mlirCreateTx<Pass>() / mlirRegisterTx<Pass>() definitions.
using namespace mlir::txopt::tx;
#include "txopt/Dialect/Tx/Transforms/Passes.capi.cpp.inc"
