//===- GradientUtils.h - what the gradient rules share ----------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// Small builders shared by the DifferentiableOpInterface rules
// (<Family>Gradients.cpp); private to the dialect library. Rules for
// broadcasting ops compute in the broadcast shape and reduce back to each
// operand's shape with sumToShape.
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_LIB_DIALECT_TX_IR_GRADIENTUTILS_H
#define TXOPT_LIB_DIALECT_TX_IR_GRADIENTUTILS_H

#include "txopt/Dialect/Tx/IR/TxOps.h"

#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::txopt::tx::gradient {

RankedTensorType tensorTypeOf(Value value);
Type elementTypeOf(Value value);

/// A 0-d constant: broadcasting ops then give the other operand's shape.
Value scalar(ImplicitLocOpBuilder &b, Type elementType, double value);
Value zeros(ImplicitLocOpBuilder &b, Type type);

Value add(ImplicitLocOpBuilder &b, Value x, Value y);
Value sub(ImplicitLocOpBuilder &b, Value x, Value y);
Value mul(ImplicitLocOpBuilder &b, Value x, Value y);
Value div(ImplicitLocOpBuilder &b, Value x, Value y);
Value neg(ImplicitLocOpBuilder &b, Value x);
Value mulScalar(ImplicitLocOpBuilder &b, Value x, double factor);

/// |x| reshaped to |shape| (|x| itself when it already has it).
Value reshape(ImplicitLocOpBuilder &b, Value x, ArrayRef<int64_t> shape);
/// |x| cast to |elementType| (|x| itself when it already has it).
Value castTo(ImplicitLocOpBuilder &b, Value x, Type elementType);
/// Broadcasts |x| to |shape| (numpy rules) with tx.expand.
Value expandTo(ImplicitLocOpBuilder &b, Value x, ArrayRef<int64_t> shape);
Value reduceSum(ImplicitLocOpBuilder &b, Value x, ArrayRef<int64_t> axes,
                bool keepDims);
Value reduceMean(ImplicitLocOpBuilder &b, Value x, ArrayRef<int64_t> axes,
                 bool keepDims);

/// The adjoint of numpy broadcasting: sums |grad| (shape S) over the dims
/// that broadcasting added or stretched to reach S from |shape|, then
/// reshapes to |shape|. The element type stays that of |grad|.
Value sumToShape(ImplicitLocOpBuilder &b, Value grad, ArrayRef<int64_t> shape);
/// sumToShape to |like|'s shape.
Value sumToType(ImplicitLocOpBuilder &b, Value grad, Value like);

/// Swaps the last two dims (rank >= 2).
Value transposeLast2(ImplicitLocOpBuilder &b, Value x);

/// Normalized reduction axes (an empty list means every dim).
SmallVector<int64_t> reductionAxes(ArrayRef<int64_t> axes, int64_t rank);
/// |shape| with the dims in |axes| set to 1 (a keep_dims reduction's shape).
SmallVector<int64_t> keepDimsShape(ArrayRef<int64_t> shape,
                                   ArrayRef<int64_t> axes);
int64_t normalized(int64_t axis, int64_t rank);

/// Statistics of norms are accumulated in at least f32.
Type computeTypeFor(Type elementType);

/// The error of a rule that does not cover |op|'s configuration |what|.
LogicalResult unsupported(Operation *op, const Twine &what);

} // namespace mlir::txopt::tx::gradient

#endif // TXOPT_LIB_DIALECT_TX_IR_GRADIENTUTILS_H
