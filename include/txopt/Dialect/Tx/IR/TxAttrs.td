//===- TxAttrs.td - tx dialect attributes -------------------*- tablegen -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// Enumerations the tx ops carry as attributes.
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_DIALECT_TX_IR_TXATTRS_TD
#define TXOPT_DIALECT_TX_IR_TXATTRS_TD

include "txopt/Dialect/Tx/IR/TxBase.td"
include "mlir/IR/EnumAttr.td"

def Tx_PadMode : I32EnumAttr<"PadMode", "ONNX Pad mode", [
    I32EnumAttrCase<"constant", 0>, I32EnumAttrCase<"reflect", 1>,
    I32EnumAttrCase<"edge", 2>, I32EnumAttrCase<"wrap", 3>]> {
  let cppNamespace = "::mlir::txopt::tx";
  let genSpecializedAttr = 0;
}
def Tx_PadModeAttr : EnumAttr<Tx_Dialect, Tx_PadMode, "pad_mode">;

def Tx_LossReduction : I32EnumAttr<"LossReduction", "loss reduction", [
    I32EnumAttrCase<"none", 0>, I32EnumAttrCase<"sum", 1>,
    I32EnumAttrCase<"mean", 2>]> {
  let cppNamespace = "::mlir::txopt::tx";
  let genSpecializedAttr = 0;
}
def Tx_LossReductionAttr : EnumAttr<Tx_Dialect, Tx_LossReduction, "loss_reduction">;

// Optimizer enums (tx.adam, TxOptimOps.td).
def Tx_AdamMode : I32EnumAttr<"AdamMode", "where Adam applies weight decay", [
    I32EnumAttrCase<"adam", 0>, I32EnumAttrCase<"adamw", 1>]> {
  let cppNamespace = "::mlir::txopt::tx";
  let genSpecializedAttr = 0;
}
def Tx_AdamModeAttr : EnumAttr<Tx_Dialect, Tx_AdamMode, "adam_mode">;

def Tx_EpsilonPlacement : I32EnumAttr<"EpsilonPlacement",
    "where Adam adds epsilon to the second-moment denominator", [
    I32EnumAttrCase<"outside_sqrt", 0>, I32EnumAttrCase<"inside_sqrt", 1>,
    I32EnumAttrCase<"epsilon_hat", 2>]> {
  let cppNamespace = "::mlir::txopt::tx";
  let genSpecializedAttr = 0;
}
def Tx_EpsilonPlacementAttr : EnumAttr<Tx_Dialect, Tx_EpsilonPlacement, "epsilon_placement">;

#endif // TXOPT_DIALECT_TX_IR_TXATTRS_TD
