//===- TxDialect.cpp - tx dialect registration ----------------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// Registers the tx ops and materializes folded constants as tx.constant.
//
//===----------------------------------------------------------------------===//

#include "txopt/Dialect/Tx/IR/TxDialect.h"
#include "txopt/Dialect/Tx/IR/TxOps.h"

using namespace mlir;
using namespace mlir::txopt::tx;

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

#include "txopt/Dialect/Tx/IR/TxOpsDialect.cpp.inc"
#define GET_ATTRDEF_CLASSES
#include "txopt/Dialect/Tx/IR/TxAttrs.cpp.inc"

void TxDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "txopt/Dialect/Tx/IR/TxOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "txopt/Dialect/Tx/IR/TxAttrs.cpp.inc"
      >();
}

Operation *TxDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                          Type type, Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, elements);
}
