//===- PatternUtils.h - matchers shared by the tx fusion passes -*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// Small matchers (constants, single-use chains) and near-miss reporting used
// by tx-fuse-norms and tx-fuse-optimizer.
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_DIALECT_TX_TRANSFORMS_PATTERNUTILS_H
#define TXOPT_DIALECT_TX_TRANSFORMS_PATTERNUTILS_H

// getSplatConstant, which the gradient rules in the dialect share.
#include "txopt/Dialect/Tx/IR/TxOps.h"

#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace mlir::txopt::tx {

/// Text that starts every near-miss remark. `txopt --report` turns remarks of
/// the form `not fused: <pattern>: <reason>` into its "not_fused" list.
inline constexpr llvm::StringLiteral kNearMissPrefix = "not fused: ";

/// Emits the remark `not fused: <pattern>: <reason>` at |anchor|'s location
/// (the ONNX node name after import).
void reportNearMiss(Operation *anchor, llvm::StringRef pattern,
                    const llvm::Twine &reason);

/// True when |value| is a splat constant equal to |expected| within a
/// relative tolerance of 1e-6 (exporters round constants through f32).
bool isSplatConstant(Value value, double expected);

/// The value of |value| when it is a constant holding exactly one element
/// (0-d, [1], [1, 1], ...), as a double: the scalars exporters write for eps.
std::optional<double> getScalarConstant(Value value);

/// |value| with every tx.cast whose result type equals its input type peeled
/// off (such casts survive in exports that cast to the type a value has).
Value stripIdentityCasts(Value value);

/// True when |a| and |b| are the same value after stripIdentityCasts, or are
/// tx.casts to one type of values that are (exports often cast one tensor
/// twice where a CSE'd graph would cast it once).
bool isSameValueModuloCasts(Value a, Value b);

/// For a two-operand op with |operand| as one operand, the other operand;
/// null when |operand| is both operands or neither.
Value getOtherOperand(Operation *op, Value operand);

/// A user of one of |op|'s results that is not in |allowed|, or null. Used
/// to refuse fusing a chain whose intermediate escapes it.
Operation *findUserOutside(Operation *op,
                           const llvm::SmallPtrSetImpl<Operation *> &allowed);

/// A product read through tx.mul, tx.div, tx.neg, tx.reciprocal and
/// Pow(x, 2): `coef * prod(num) / prod(den)`. Constants fold into `coef`, so
/// operand order, association and where a scalar sits do not matter.
struct ProductTerms {
  double coef = 1.0;
  llvm::SmallVector<Value> num, den;
  /// The ops looked through (mul, div, ...), in visit order.
  llvm::SmallVector<Operation *> ops;
  /// Ops still to look through; bounds the walk on large product DAGs.
  unsigned budget = 32;
};

/// Adds |value| to |terms|, as a numerator factor when |inNum|. A
/// one-element value is looked through only when |descendScalar| (if given)
/// returns true, so that, say, a learning rate stays one factor.
void flattenProduct(Value value, ProductTerms &terms, bool inNum = true,
                    llvm::function_ref<bool(Value)> descendScalar = nullptr);

/// True when |value| is tx.sqrt(x) or tx.pow(x, 0.5); sets |radicand| to x.
bool isSqrtLike(Value value, Value *radicand = nullptr);

/// The two operands of the tx.add defining |sum|, each read as a product
/// (flattenProduct; a one-element value is looked through only when
/// |descendScalar| returns true, by default never); false when |sum| is not
/// defined by a tx.add.
bool flattenSumOperands(
    Value sum, ProductTerms &lhs, ProductTerms &rhs,
    llvm::function_ref<bool(Value)> descendScalar = [](Value) {
      return false;
    });

/// The number of elements of |value|'s statically shaped tensor type, or -1.
int64_t getNumElements(Value value);

/// |value| with 7 significant digits, so that an f32 hyper-parameter such as
/// 0.9 reads `0.9` in a remark.
std::string formatNumber(double value);

/// |type| in quotes, the way diagnostics name IR entities: 'tensor<8xf32>'.
std::string quoteType(Type type);

/// For a chain |ops| whose results |outputs| replace: the first op of |ops|
/// (in block order) that depends on one of |inputs| through |ops|, is not
/// one of |outputs|, and has a user outside |ops|, or null. Fusing such a
/// chain would compute that intermediate twice. |dependent| receives every
/// op of |ops| that depends on |inputs|. All of |ops| must be in one block.
Operation *
findEscapingIntermediate(const llvm::SetVector<Operation *> &ops,
                         llvm::ArrayRef<Value> inputs,
                         llvm::ArrayRef<Operation *> outputs,
                         llvm::SmallPtrSetImpl<Operation *> &dependent);

} // namespace mlir::txopt::tx

#endif // TXOPT_DIALECT_TX_TRANSFORMS_PATTERNUTILS_H
