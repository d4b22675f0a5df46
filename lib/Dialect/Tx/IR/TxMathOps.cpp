//===- TxMathOps.cpp - matmul, reduction, normalization and loss tx ops ---===//
//
// SPDX-License-Identifier: Apache-2.0
// Verifiers, result-type inference and folders of the matmul, reduction, normalization and loss tx ops; inference
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
// MatMulOp / GemmOp
//===----------------------------------------------------------------------===//

LogicalResult MatMulOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  if (failed(checkStaticOperands(loc, adaptor.getOperands())))
    return failure();
  auto lhsType = tensorType(adaptor.getLhs());
  auto rhsType = tensorType(adaptor.getRhs());
  if (lhsType.getElementType() != rhsType.getElementType())
    return inferError(loc, "expected operands of one element type, but got ",
                      lhsType.getElementType(), " and ",
                      rhsType.getElementType());
  if (lhsType.getRank() == 0 || rhsType.getRank() == 0)
    return inferError(loc, "expected operands of rank at least 1, but got " +
                               formatShape(lhsType.getShape()) + " and " +
                               formatShape(rhsType.getShape()));
  SmallVector<int64_t> lhs(lhsType.getShape()), rhs(rhsType.getShape());
  bool lhsVector = lhs.size() == 1, rhsVector = rhs.size() == 1;
  if (lhsVector)
    lhs.insert(lhs.begin(), 1);
  if (rhsVector)
    rhs.push_back(1);
  int64_t k = lhs.back();
  if (k != rhs[rhs.size() - 2])
    return inferError(loc, "expected matching contraction dims, but got " +
                               formatShape(lhsType.getShape()) + " and " +
                               formatShape(rhsType.getShape()));
  auto batch = broadcastShapes(ArrayRef<int64_t>(lhs).drop_back(2),
                               ArrayRef<int64_t>(rhs).drop_back(2));
  if (failed(batch))
    return inferError(loc, "expected broadcastable batch dims, but got " +
                               formatShape(lhsType.getShape()) + " and " +
                               formatShape(rhsType.getShape()));
  SmallVector<int64_t> shape = *batch;
  if (!lhsVector)
    shape.push_back(lhs[lhs.size() - 2]);
  if (!rhsVector)
    shape.push_back(rhs.back());
  inferred.push_back(RankedTensorType::get(shape, lhsType.getElementType()));
  return success();
}

LogicalResult GemmOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  if (failed(checkStaticOperands(loc, adaptor.getOperands())))
    return failure();
  auto aType = tensorType(adaptor.getA());
  auto bType = tensorType(adaptor.getB());
  if (aType.getRank() != 2 || bType.getRank() != 2)
    return inferError(loc, "expected 2-D A and B, but got " +
                               formatShape(aType.getShape()) + " and " +
                               formatShape(bType.getShape()));
  if (aType.getElementType() != bType.getElementType())
    return inferError(loc, "expected A and B of one element type, but got ",
                      aType.getElementType(), " and ", bType.getElementType());
  int64_t m = aType.getDimSize(adaptor.getTransA() ? 1 : 0);
  int64_t ka = aType.getDimSize(adaptor.getTransA() ? 0 : 1);
  int64_t kb = bType.getDimSize(adaptor.getTransB() ? 1 : 0);
  int64_t n = bType.getDimSize(adaptor.getTransB() ? 0 : 1);
  if (ka != kb)
    return inferError(loc, "expected matching contraction dims, but got " +
                               std::to_string(ka) + " and " + std::to_string(kb));
  if (Value c = adaptor.getC()) {
    auto cType = tensorType(c);
    if (cType.getElementType() != aType.getElementType())
      return inferError(loc, "expected C element type ", aType.getElementType(),
                        ", but got ", cType.getElementType());
    // Unidirectional: C broadcasts to [M, N], never the other way round, so
    // the broadcast shape must be exactly [M, N] (which also bounds C's rank).
    auto shape = broadcastShapes({m, n}, cType.getShape());
    if (failed(shape) || ArrayRef<int64_t>(*shape) != ArrayRef<int64_t>{m, n})
      return inferError(loc, "expected C broadcastable to " +
                                 formatShape({m, n}) + ", but got " +
                                 formatShape(cType.getShape()));
  }
  inferred.push_back(RankedTensorType::get({m, n}, aType.getElementType()));
  return success();
}


//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

static LogicalResult inferReduce(std::optional<Location> loc, Value input,
                                 ArrayRef<int64_t> axes, bool keepDims,
                                 SmallVectorImpl<Type> &inferred) {
  if (failed(checkStaticOperands(loc, input)))
    return failure();
  auto type = tensorType(input);
  llvm::SmallSet<int64_t, 8> reduced;
  for (int64_t a : axes) {
    auto axis = normalizeAxis(a, type.getRank());
    if (failed(axis) || !reduced.insert(*axis).second)
      return inferError(loc, "expected distinct axes within rank " +
                                 std::to_string(type.getRank()) + ", but got " +
                                 formatShape(axes));
  }
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < type.getRank(); ++d) {
    bool reduce = axes.empty() || reduced.contains(d);
    if (!reduce)
      shape.push_back(type.getDimSize(d));
    else if (keepDims)
      shape.push_back(1);
  }
  inferred.push_back(RankedTensorType::get(shape, type.getElementType()));
  return success();
}

#define TX_REDUCE_INFER(OP)                                                    \
  LogicalResult OP::inferReturnTypes(MLIRContext *, std::optional<Location> loc, \
                                     Adaptor adaptor,                          \
                                     SmallVectorImpl<Type> &inferred) {        \
    return inferReduce(loc, adaptor.getInput(), adaptor.getAxes(),             \
                       adaptor.getKeepDims(), inferred);                       \
  }
TX_REDUCE_INFER(ReduceMeanOp)
TX_REDUCE_INFER(ReduceSumOp)
TX_REDUCE_INFER(ReduceMaxOp)
#undef TX_REDUCE_INFER

LogicalResult CumSumOp::verify() {
  int64_t rank = getInput().getType().getRank();
  // ONNX CumSum is defined for rank >= 1 only; say so rather than report
  // that no axis fits in [0, 0).
  if (rank == 0)
    return emitOpError("expected an input of rank at least 1");
  int64_t axis = getAxis();
  if (failed(normalizeAxis(axis, rank)))
    return emitOpError("expected axis in [")
           << -rank << ", " << rank << "), but got " << axis;
  return success();
}

OpFoldResult CumSumOp::fold(FoldAdaptor) {
  auto type = getInput().getType();
  auto axis = normalizeAxis(getAxis(), type.getRank());
  if (failed(axis) || type.getDimSize(*axis) != 1)
    return {};
  if (!getExclusive())
    return getInput();
  // Every exclusive sum is empty.
  Builder builder(getContext());
  return builder.getZeroAttr(type);
}

//===----------------------------------------------------------------------===//
// SoftmaxOp / LayerNormalizationOp / RMSNormalizationOp
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxOp::verify() {
  int64_t rank = getInput().getType().getRank();
  int64_t axis = getAxis();
  if (failed(normalizeAxis(axis, rank)))
    return emitOpError("expected axis within rank ")
           << rank << ", but got " << axis;
  return success();
}

/// Scale/bias of a normalization must broadcast to the normalized dims.
static LogicalResult verifyNormAffine(Operation *op, RankedTensorType input,
                                      int64_t axis, Value affine,
                                      StringRef name) {
  auto normAxis = normalizeAxis(axis, input.getRank());
  if (failed(normAxis))
    return op->emitOpError("expected axis within rank ")
           << input.getRank() << ", but got " << axis;
  if (!affine)
    return success();
  auto type = cast<RankedTensorType>(affine.getType());
  ArrayRef<int64_t> normalized = input.getShape().drop_front(*normAxis);
  auto shape = broadcastShapes(normalized, type.getShape());
  if (failed(shape) || ArrayRef<int64_t>(*shape) != normalized)
    return op->emitOpError("expected ")
           << name << " shape broadcastable to " << formatShape(normalized)
           << ", but got " << formatShape(type.getShape());
  if (type.getElementType() != input.getElementType())
    return op->emitOpError("expected ")
           << name << " element type " << input.getElementType()
           << ", but got " << type.getElementType();
  return success();
}

/// Epsilon is added to a variance: it must be a non-negative number.
static LogicalResult verifyEpsilon(Operation *op, const APFloat &epsilon) {
  if (epsilon.isNaN() || (epsilon.isNegative() && !epsilon.isZero()))
    return op->emitOpError("expected a non-negative epsilon, but got ")
           << epsilon.convertToFloat();
  return success();
}

LogicalResult LayerNormalizationOp::verify() {
  if (failed(verifyEpsilon(*this, getEpsilon())))
    return failure();
  if (failed(verifyNormAffine(*this, getInput().getType(), getAxis(),
                              getScale(), "scale")))
    return failure();
  return verifyNormAffine(*this, getInput().getType(), getAxis(), getBias(),
                          "bias");
}

LogicalResult RMSNormalizationOp::verify() {
  if (failed(verifyEpsilon(*this, getEpsilon())))
    return failure();
  return verifyNormAffine(*this, getInput().getType(), getAxis(), getScale(),
                          "scale");
}

//===----------------------------------------------------------------------===//
// SoftmaxCrossEntropyLossOp / DropoutOp
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxCrossEntropyLossOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  if (failed(checkStaticOperands(loc, adaptor.getOperands())))
    return failure();
  auto scores = tensorType(adaptor.getScores());
  auto labels = tensorType(adaptor.getLabels());
  if (scores.getRank() < 2)
    return inferError(loc, "expected scores of rank at least 2, but got " +
                               formatShape(scores.getShape()));
  SmallVector<int64_t> expected{scores.getDimSize(0)};
  llvm::append_range(expected, scores.getShape().drop_front(2));
  if (labels.getShape() != ArrayRef<int64_t>(expected))
    return inferError(loc, "expected labels shape " + formatShape(expected) +
                               ", but got " + formatShape(labels.getShape()));
  if (Value weights = adaptor.getWeights()) {
    auto weightsType = tensorType(weights);
    if (weightsType.getShape() != ArrayRef<int64_t>{scores.getDimSize(1)})
      return inferError(loc, "expected weights shape " +
                                 formatShape({scores.getDimSize(1)}) +
                                 ", but got " + formatShape(weightsType.getShape()));
    if (weightsType.getElementType() != scores.getElementType())
      return inferError(loc, "expected weights element type ",
                        scores.getElementType(), ", but got ",
                        weightsType.getElementType());
  }
  SmallVector<int64_t> shape;
  if (adaptor.getReduction() == LossReduction::none)
    shape = expected;
  inferred.push_back(RankedTensorType::get(shape, scores.getElementType()));
  return success();
}

LogicalResult DropoutOp::verify() {
  float ratio = getRatio().convertToFloat();
  if (!(ratio >= 0.0f && ratio < 1.0f))
    return emitOpError("expected ratio in [0, 1), but got ") << ratio;
  return success();
}
