//===- TxInterfaces.td - tx op interfaces -------------------*- tablegen -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// Op interfaces of the tx dialect: the reverse-mode gradient rule.
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_DIALECT_TX_IR_TXINTERFACES_TD
#define TXOPT_DIALECT_TX_IR_TXINTERFACES_TD

include "mlir/IR/OpBase.td"

def Tx_DifferentiableOpInterface : OpInterface<"DifferentiableOpInterface"> {
  let cppNamespace = "::mlir::txopt::tx";
  let description = [{
    An op that tx-differentiate can run backwards: it emits the ops that
    compute the gradients of its operands (dL/dx) from those of its results
    (dL/dy). Declaring the interface in the op's ODS trait list is the one
    place that says an op is differentiable; the rule itself is the op's
    `buildGradients` method, in lib/Dialect/Tx/IR/<Family>Gradients.cpp,
    stated as a formula and checked against finite differences by
    test/Reference/gradcheck.py. An op without the interface has no rule,
    and tx-differentiate names it when a loss depends on it through a
    differentiable value.
  }];
  let methods = [
    InterfaceMethod<[{
        Emits, at the context's insertion point, the gradients of the
        operands the context asks for (`GradientContext::wants`) and stores
        them with `GradientContext::set`. Fails with an error at the op for a
        configuration the rule does not cover (e.g. tx.pad in reflect mode).
      }],
      "::llvm::LogicalResult", "buildGradients",
      (ins "::mlir::txopt::tx::GradientContext &":$context)>,
  ];
}

/// The trait an op lists to be differentiable; it declares buildGradients
/// on the op, so the rule is a method of the op.
def Tx_Differentiable : DeclareOpInterfaceMethods<Tx_DifferentiableOpInterface>;

#endif // TXOPT_DIALECT_TX_IR_TXINTERFACES_TD
