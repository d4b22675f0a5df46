//===- txopt-opt.cpp - MlirOptMain driver for tests and debugging ---------===//
//
// SPDX-License-Identifier: Apache-2.0
// Runs any registered txopt or upstream pass over .mlir input.
//
//===----------------------------------------------------------------------===//

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "txopt/InitAll.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::txopt::registerAllDialects(registry);
  mlir::txopt::registerAllPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "txopt optimizer driver\n", registry));
}
