//===- TxElementwiseOps.cpp - elementwise tx ops --------------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// Verifiers, result-type inference and folders of the elementwise tx ops; inference
// follows the ONNX operator specification (see TxOps.cpp).
//
//===----------------------------------------------------------------------===//

#include "TxOpsCommon.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/Support/CheckedArithmetic.h"

#include <cmath>

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::tx;
using namespace mlir::txopt::tx::detail;

//===----------------------------------------------------------------------===//
// Broadcasting elementwise ops
//===----------------------------------------------------------------------===//

/// Result type of a broadcasting op: the broadcast shape with `elementType`.
static LogicalResult inferBroadcast(std::optional<Location> location,
                                    ValueRange operands, Type elementType,
                                    SmallVectorImpl<Type> &inferred) {
  SmallVector<int64_t> shape;
  for (Value operand : operands) {
    auto next = broadcastShapes(shape, tensorType(operand).getShape());
    if (failed(next))
      return inferError(location,
                        "expected broadcastable operand shapes, but got " +
                            formatShape(shape) + " and " +
                            formatShape(tensorType(operand).getShape()));
    shape = *next;
  }
  inferred.push_back(RankedTensorType::get(shape, elementType));
  return success();
}

/// Arithmetic ops require one element type, which the result keeps.
static LogicalResult inferArith(std::optional<Location> location, Value lhs,
                                Value rhs, SmallVectorImpl<Type> &inferred) {
  if (failed(checkStaticOperands(location, {lhs, rhs})))
    return failure();
  Type lhsElement = tensorType(lhs).getElementType();
  Type rhsElement = tensorType(rhs).getElementType();
  if (lhsElement != rhsElement)
    return inferError(location,
                      "expected operands of one element type, but got ",
                      lhsElement, " and ", rhsElement);
  return inferBroadcast(location, {lhs, rhs}, lhsElement, inferred);
}

#define TX_ARITH_INFER(OP)                                                     \
  LogicalResult OP::inferReturnTypes(MLIRContext *, std::optional<Location> loc, \
                                     Adaptor adaptor,                          \
                                     SmallVectorImpl<Type> &inferred) {        \
    return inferArith(loc, adaptor.getLhs(), adaptor.getRhs(), inferred);      \
  }
TX_ARITH_INFER(AddOp)
TX_ARITH_INFER(SubOp)
TX_ARITH_INFER(MulOp)
TX_ARITH_INFER(DivOp)
TX_ARITH_INFER(ModOp)
TX_ARITH_INFER(MaxOp)
TX_ARITH_INFER(MinOp)
#undef TX_ARITH_INFER

// max(x, x) = min(x, x) = x, NaN included; the inferred result type is then
// x's own.
OpFoldResult MaxOp::fold(FoldAdaptor) {
  return getLhs() == getRhs() ? getLhs() : OpFoldResult();
}

OpFoldResult MinOp::fold(FoldAdaptor) {
  return getLhs() == getRhs() ? getLhs() : OpFoldResult();
}

LogicalResult PowOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &inferred) {
  if (failed(checkStaticOperands(loc, adaptor.getOperands())))
    return failure();
  return inferBroadcast(loc, {adaptor.getLhs(), adaptor.getRhs()},
                        tensorType(adaptor.getLhs()).getElementType(), inferred);
}

LogicalResult ModOp::verify() {
  if (isa<FloatType>(getLhs().getType().getElementType()) && !getFmod())
    return emitOpError("expected fmod = true for floating-point operands");
  return success();
}

#define TX_COMPARE_INFER(OP)                                                   \
  LogicalResult OP::inferReturnTypes(MLIRContext *context,                     \
                                     std::optional<Location> loc,              \
                                     Adaptor adaptor,                          \
                                     SmallVectorImpl<Type> &inferred) {        \
    SmallVector<Type> ignored;                                                 \
    if (failed(inferArith(loc, adaptor.getLhs(), adaptor.getRhs(), ignored)))  \
      return failure();                                                        \
    return inferBroadcast(loc, {adaptor.getLhs(), adaptor.getRhs()},           \
                          IntegerType::get(context, 1), inferred);             \
  }
TX_COMPARE_INFER(EqualOp)
TX_COMPARE_INFER(GreaterOrEqualOp)
TX_COMPARE_INFER(LessOp)
TX_COMPARE_INFER(LessOrEqualOp)
TX_COMPARE_INFER(GreaterOp)
#undef TX_COMPARE_INFER

#define TX_LOGIC_INFER(OP)                                                     \
  LogicalResult OP::inferReturnTypes(MLIRContext *context,                     \
                                     std::optional<Location> loc,              \
                                     Adaptor adaptor,                          \
                                     SmallVectorImpl<Type> &inferred) {        \
    if (failed(checkStaticOperands(loc, {adaptor.getLhs(), adaptor.getRhs()})))\
      return failure();                                                        \
    return inferBroadcast(loc, {adaptor.getLhs(), adaptor.getRhs()},           \
                          IntegerType::get(context, 1), inferred);             \
  }
TX_LOGIC_INFER(AndOp)
TX_LOGIC_INFER(OrOp)
TX_LOGIC_INFER(XorOp)
#undef TX_LOGIC_INFER

LogicalResult WhereOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  if (failed(checkStaticOperands(loc, adaptor.getOperands())))
    return failure();
  Type lhsElement = tensorType(adaptor.getLhs()).getElementType();
  Type rhsElement = tensorType(adaptor.getRhs()).getElementType();
  if (lhsElement != rhsElement)
    return inferError(loc, "expected branches of one element type, but got ",
                      lhsElement, " and ", rhsElement);
  return inferBroadcast(
      loc, {adaptor.getCondition(), adaptor.getLhs(), adaptor.getRhs()},
      lhsElement, inferred);
}

//===----------------------------------------------------------------------===//
// CastOp / TriluOp
//===----------------------------------------------------------------------===//

OpFoldResult CastOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

LogicalResult TriluOp::verify() {
  if (getInput().getType().getRank() < 2)
    return emitOpError("expected an input of rank at least 2, but got rank ")
           << getInput().getType().getRank();
  return success();
}
