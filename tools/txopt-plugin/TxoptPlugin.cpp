//===- TxoptPlugin.cpp - tx dialect and passes as mlir-opt plugins --------===//
//
// SPDX-License-Identifier: Apache-2.0
// Lets a stock `mlir-opt-22` load the tx dialect (--load-dialect-plugin) and
// txopt's passes (--load-pass-plugin) from one shared library.
//
//===----------------------------------------------------------------------===//

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "txopt/InitAll.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/Compiler.h"

extern "C" LLVM_ATTRIBUTE_WEAK mlir::DialectPluginLibraryInfo
mlirGetDialectPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "Tx", LLVM_VERSION_STRING,
          [](mlir::DialectRegistry *registry) {
            mlir::txopt::registerAllDialects(*registry);
          }};
}

// Only txopt's own passes: mlir-opt registered the upstream ones already,
// and registering a pass name twice is a fatal error.
extern "C" LLVM_ATTRIBUTE_WEAK mlir::PassPluginLibraryInfo mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "TxoptPasses", LLVM_VERSION_STRING,
          []() { mlir::txopt::registerTxoptPasses(); }};
}
