//===- Autodiff.h - reverse-mode autodiff of tx functions -------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// The C++ entry point behind tx-differentiate, for builders (the training
// step) that need a gradient function without running the pass, and the
// per-op gradient rules it is made of.
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_DIALECT_TX_TRANSFORMS_AUTODIFF_H
#define TXOPT_DIALECT_TX_TRANSFORMS_AUTODIFF_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/BitVector.h"

#include <optional>
#include <string>

namespace mlir::txopt::tx {

/// What a gradient function differentiates against.
enum class GradientWrt {
  /// Every non-frozen tx.parameter the function reads (made arguments).
  Params,
  /// Every floating-point function argument.
  Args,
  /// Arguments, then parameters.
  All,
};

/// Parses `params`, `args` or `all`.
std::optional<GradientWrt> parseGradientWrt(StringRef text);

struct GradientOptions {
  GradientWrt wrt = GradientWrt::Params;
  /// Name of the new function; empty means `<forward>_grad`.
  std::string name;
  /// Put `tx.grad_seed` on the constant that seeds the reverse sweep (dL/dL
  /// = 1), so a later pass (tx-insert-fp8) can tell gradients, the values
  /// that depend on it, from forward values. Cleanup passes may merge or
  /// drop the marker: it is for the pass right after.
  bool markSeed = false;
};

/// Builds the gradient function of |forward| (whose result #0 must be a
/// 0-d floating-point loss) and inserts it after |forward| in its module:
///
///   @<name>_grad(args..., params...) -> (loss, d loss / d wrt...)
///
/// Trainable parameters (under Params / All) become trailing arguments in
/// tx.parameter order with `tx.parameter = @name` and `tx.name = "name"`
/// attributes; every gradient result has a `tx.grad_of` attribute naming its
/// parameter (symbol ref) or argument (index). |forward| is left unchanged.
/// On failure an error has been emitted (at the op without a gradient rule,
/// or at |forward|) and nothing is added to the module.
FailureOr<func::FuncOp>
buildGradientFunction(func::FuncOp forward,
                      const GradientOptions &options = {});

/// Name of the attribute that `buildGradientFunction` puts on gradient
/// results (and on the gradient function itself, naming its forward).
inline constexpr StringLiteral kGradOfAttrName = "tx.grad_of";
/// Name of the argument attribute naming the parameter an argument holds.
inline constexpr StringLiteral kParameterAttrName = "tx.parameter";
/// The marker of GradientOptions::markSeed.
inline constexpr StringLiteral kGradSeedAttrName = "tx.grad_seed";

//===----------------------------------------------------------------------===//
// Per-op gradient rules (tx::DifferentiableOpInterface)
//===----------------------------------------------------------------------===//

/// True when |op| has a gradient rule, i.e. implements
/// DifferentiableOpInterface (it may still refuse a particular
/// configuration, e.g. tx.pad in reflect mode, with a diagnostic).
bool hasGradientRule(Operation *op);

/// Emits, at |builder|'s insertion point, the ops computing the gradients of
/// |op|'s operands from |resultGrads| (one per result of |op|, of the
/// result's type, null where that result's gradient is zero; at least one is
/// non-null). Only operands whose bit is set in |needed| (floating-point
/// ones) get a gradient; |operandGrads| receives one entry per operand, null
/// for the others, each of its operand's type. Fails with an error at |op|
/// when no rule applies.
LogicalResult buildOperandGradients(OpBuilder &builder, Operation *op,
                                    ArrayRef<Value> resultGrads,
                                    const llvm::BitVector &needed,
                                    SmallVectorImpl<Value> &operandGrads);

} // namespace mlir::txopt::tx

#endif // TXOPT_DIALECT_TX_TRANSFORMS_AUTODIFF_H
