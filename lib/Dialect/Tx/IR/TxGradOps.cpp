//===- TxGradOps.cpp - verifiers of the gradient-only tx ops --------------===//
//
// SPDX-License-Identifier: Apache-2.0
// Verifiers of tx.gather_grad, tx.gather_elements_grad, tx.gather_nd_grad,
// tx.slice_grad and tx.softmax_cross_entropy_grad (the op classes are
// generated into TxOps.cpp.inc). Each check names the constraint (Cn) of the
// op's description in TxGradOps.td.
//
//===----------------------------------------------------------------------===//

#include "txopt/Dialect/Tx/IR/TxOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::tx;

/// (C-element type) shared by every op here: the gradient keeps its type.
static LogicalResult verifySameElementType(Operation *op, Type expected,
                                           Type actual, StringRef what) {
  if (expected != actual)
    return op->emitOpError("expected ")
           << what << " element type " << expected << ", but got " << actual;
  return success();
}

//===----------------------------------------------------------------------===//
// GatherGradOp
//===----------------------------------------------------------------------===//

LogicalResult GatherGradOp::verify() {
  RankedTensorType result = getType();
  ArrayRef<int64_t> indices = getIndices().getType().getShape();
  int64_t rank = result.getRank();
  int64_t axis = getAxis();
  // (C1)
  if (axis < 0 || axis >= rank)
    return emitOpError("expected axis in [0, ")
           << rank << "), but got " << axis;
  // (C2)
  SmallVector<int64_t> expected(result.getShape().take_front(axis));
  llvm::append_range(expected, indices);
  llvm::append_range(expected, result.getShape().drop_front(axis + 1));
  ArrayRef<int64_t> grad = getGrad().getType().getShape();
  if (grad != ArrayRef<int64_t>(expected))
    return emitOpError("expected grad shape ")
           << formatShape(expected) << ", but got " << formatShape(grad);
  // (C3)
  return verifySameElementType(*this, result.getElementType(),
                               getGrad().getType().getElementType(), "grad");
}

//===----------------------------------------------------------------------===//
// GatherElementsGradOp
//===----------------------------------------------------------------------===//

LogicalResult GatherElementsGradOp::verify() {
  RankedTensorType result = getType();
  RankedTensorType indices = getIndices().getType();
  RankedTensorType grad = getGrad().getType();
  int64_t rank = result.getRank();
  // (C1)
  if (indices.getRank() != rank || grad.getRank() != rank)
    return emitOpError("expected grad and indices of rank ")
           << rank << ", but got " << grad.getRank() << " and "
           << indices.getRank();
  int64_t axis = getAxis();
  if (axis < 0 || axis >= rank)
    return emitOpError("expected axis in [0, ")
           << rank << "), but got " << axis;
  // (C2)
  if (grad.getShape() != indices.getShape())
    return emitOpError("expected grad shape ")
           << formatShape(indices.getShape()) << ", but got "
           << formatShape(grad.getShape());
  // (C3)
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && indices.getDimSize(d) > result.getDimSize(d))
      return emitOpError("expected indices dim ")
             << d << " of at most " << result.getDimSize(d) << ", but got "
             << indices.getDimSize(d);
  // (C4)
  return verifySameElementType(*this, result.getElementType(),
                               grad.getElementType(), "grad");
}

//===----------------------------------------------------------------------===//
// GatherNDGradOp
//===----------------------------------------------------------------------===//

LogicalResult GatherNDGradOp::verify() {
  RankedTensorType result = getType();
  ArrayRef<int64_t> grad = getGrad().getType().getShape();
  // (C1)-(C3) are tx.gather_nd's constraints on the gathered data, which
  // has the result's shape; its inferred shape is (C4).
  std::string error;
  auto expected =
      gatherNDShape(result.getShape(), getIndices().getType().getShape(),
                    static_cast<int64_t>(getBatchDims()), error);
  if (failed(expected))
    return emitOpError(error);
  if (grad != ArrayRef<int64_t>(*expected))
    return emitOpError("expected grad shape ")
           << formatShape(*expected) << ", but got " << formatShape(grad);
  // (C5)
  return verifySameElementType(*this, result.getElementType(),
                               getGrad().getType().getElementType(), "grad");
}

//===----------------------------------------------------------------------===//
// SliceGradOp
//===----------------------------------------------------------------------===//

LogicalResult SliceGradOp::verify() {
  RankedTensorType result = getType();
  RankedTensorType grad = getGrad().getType();
  int64_t rank = result.getRank();
  ArrayRef<int64_t> offsets = getOffsets(), strides = getStrides();
  // (C1)
  if (static_cast<int64_t>(offsets.size()) != rank ||
      static_cast<int64_t>(strides.size()) != rank || grad.getRank() != rank)
    return emitOpError("expected grad, offsets and strides of rank ")
           << rank << ", but got " << grad.getRank() << ", " << offsets.size()
           << " and " << strides.size();
  for (int64_t d = 0; d < rank; ++d) {
    // (C2)
    if (strides[d] == 0)
      return emitOpError("expected non-zero strides, but got ")
             << formatShape(strides);
    // (C3) Both ends of the strided range lie inside the dim. Computed in
    // 128 bits: attributes may hold any int64.
    int64_t size = grad.getDimSize(d), dim = result.getDimSize(d);
    if (size == 0)
      continue;
    __int128 first = offsets[d];
    __int128 last = first + static_cast<__int128>(size - 1) * strides[d];
    if (first < 0 || first >= dim || last < 0 || last >= dim)
      return emitOpError("expected the strided range of dim ")
             << d << " (offset " << offsets[d] << ", stride " << strides[d]
             << ", " << size << " elements) within [0, " << dim << ")";
  }
  // (C4)
  return verifySameElementType(*this, result.getElementType(),
                               grad.getElementType(), "grad");
}

//===----------------------------------------------------------------------===//
// SoftmaxCrossEntropyGradOp
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxCrossEntropyGradOp::verify() {
  RankedTensorType scores = getScores().getType();
  ArrayRef<int64_t> labels = getLabels().getType().getShape();
  // (C1)
  if (scores.getRank() < 2)
    return emitOpError("expected scores of rank at least 2, but got ")
           << formatShape(scores.getShape());
  SmallVector<int64_t> positions{scores.getDimSize(0)};
  llvm::append_range(positions, scores.getShape().drop_front(2));
  if (labels != ArrayRef<int64_t>(positions))
    return emitOpError("expected labels shape ")
           << formatShape(positions) << ", but got " << formatShape(labels);
  // (C2)
  RankedTensorType grad = getGrad().getType();
  SmallVector<int64_t> gradShape;
  if (getReduction() == LossReduction::none)
    gradShape = positions;
  if (grad.getShape() != ArrayRef<int64_t>(gradShape))
    return emitOpError("expected grad shape ")
           << formatShape(gradShape) << " for reduction '"
           << stringifyLossReduction(getReduction()) << "', but got "
           << formatShape(grad.getShape());
  // (C3)
  if (failed(verifySameElementType(*this, scores.getElementType(),
                                   grad.getElementType(), "grad")))
    return failure();
  Value weights = getWeights();
  if (!weights)
    return success();
  auto weightsType = cast<RankedTensorType>(weights.getType());
  if (failed(verifySameElementType(*this, scores.getElementType(),
                                   weightsType.getElementType(), "weights")))
    return failure();
  // (C4)
  if (weightsType.getShape() != ArrayRef<int64_t>{scores.getDimSize(1)})
    return emitOpError("expected weights shape ")
           << formatShape({scores.getDimSize(1)}) << ", but got "
           << formatShape(weightsType.getShape());
  return success();
}
