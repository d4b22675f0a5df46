//===- ConstantFolder.cpp - import-time evaluation of tx ops --------------===//
//
// SPDX-License-Identifier: Apache-2.0
// Exporters compute shapes at run time: Shape -> Gather -> Unsqueeze ->
// Concat -> Reshape, Cast -> Sqrt -> Div for attention scales, Range for
// position ids. With static shapes all of that is known at import, and tx
// wants it as attributes and constants. A freshly built tx op whose operands
// are all tx.constant is evaluated here by the reference executor's kernels
// (reference::evaluateOp), so a folded constant is bit for bit what the
// training step would compute for the same op: one semantics, one place.
// This file only decides what is worth folding.
//
//===----------------------------------------------------------------------===//

#include "ImporterInternal.h"

#include "txopt/Dialect/Tx/IR/TxOps.h"
#include "txopt/Reference/Executor.h"

#include <cmath>

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::onnx_import;

namespace {

/// Constant operands larger than this are not expanded for evaluation.
constexpr int64_t kMaxReadElements = int64_t(1) << 22;

/// The ops folded at import: the shape, index and scale arithmetic that
/// exporters emit. Others (matmuls, norms, ...) stay runtime ops even with
/// constant operands.
bool isFoldable(Operation *op) {
  return isa<tx::AddOp, tx::SubOp, tx::MulOp, tx::DivOp, tx::ModOp, tx::PowOp,
             tx::MaxOp, tx::MinOp, tx::EqualOp, tx::GreaterOrEqualOp,
             tx::LessOp, tx::LessOrEqualOp, tx::GreaterOp, tx::AndOp, tx::OrOp,
             tx::XorOp, tx::NotOp, tx::WhereOp, tx::NegOp, tx::SqrtOp,
             tx::ReciprocalOp, tx::ExpOp, tx::LogOp, tx::SinOp, tx::CosOp,
             tx::TanhOp, tx::SigmoidOp, tx::ErfOp, tx::ReluOp, tx::IsNaNOp,
             tx::CastOp, tx::ExpandOp, tx::TransposeOp, tx::SliceOp,
             tx::SplitOp, tx::ConcatOp, tx::GatherOp, tx::GatherNDOp,
             tx::CumSumOp, tx::TriluOp, tx::ReduceSumOp, tx::ReduceMaxOp,
             tx::ReduceMeanOp>(op);
}

/// Ops whose result element depends only on the operand elements at the
/// same (broadcast) position: with splat operands the result is a splat,
/// which is evaluated on one element, whatever the size.
bool isElementwise(Operation *op) {
  return isFoldable(op) &&
         !isa<tx::ExpandOp, tx::TransposeOp, tx::SliceOp, tx::SplitOp, tx::ConcatOp,
              tx::GatherOp, tx::GatherNDOp, tx::CumSumOp, tx::TriluOp,
              tx::ReduceSumOp, tx::ReduceMaxOp, tx::ReduceMeanOp>(op);
}

/// |tensor| (already rounded to its element type by evaluateOp) as an
/// attribute of |type|; the conversion is exact.
DenseElementsAttr toAttr(const reference::Tensor &tensor,
                         RankedTensorType type) {
  Type elementType = type.getElementType();
  if (auto floatType = dyn_cast<FloatType>(elementType)) {
    llvm::SmallVector<APFloat> values;
    values.reserve(tensor.getNumElements());
    // Casts to the 8-bit floats saturate (tx.cast, as ONNX's saturate = 1),
    // infinities included; APFloat would overflow to NaN or infinity.
    double largest = floatType.getWidth() == 8
                         ? APFloat::getLargest(floatType.getFloatSemantics())
                               .convertToDouble()
                         : 0.0;
    for (double v : tensor.floats()) {
      if (largest != 0.0 && std::fabs(v) > largest)
        v = std::signbit(v) ? -largest : largest;
      APFloat value(v);
      bool losesInfo = false;
      value.convert(floatType.getFloatSemantics(),
                    APFloat::rmNearestTiesToEven, &losesInfo);
      values.push_back(value);
    }
    return DenseElementsAttr::get(type, values);
  }
  unsigned width = elementType.getIntOrFloatBitWidth();
  llvm::SmallVector<APInt> values;
  values.reserve(tensor.getNumElements());
  // Integers are stored sign-extended; i1 as 0 / 1.
  for (int64_t v : tensor.ints())
    values.push_back(APInt(width, static_cast<uint64_t>(v),
                           /*isSigned=*/width > 1));
  return DenseElementsAttr::get(type, values);
}

/// Runs the reference kernel of |op| on |operands|; see evaluateOp below
/// for the result. |op|'s result types are what the kernel produces.
FailureOr<bool> runKernel(Operation *op,
                          llvm::ArrayRef<DenseElementsAttr> operands,
                          llvm::SmallVectorImpl<DenseElementsAttr> &results,
                          std::string &error) {
  llvm::SmallVector<reference::Tensor> tensors;
  for (DenseElementsAttr attr : operands) {
    llvm::Expected<reference::Tensor> tensor = reference::Tensor::fromAttr(attr);
    if (!tensor) {
      llvm::consumeError(tensor.takeError());
      return false;
    }
    tensors.push_back(std::move(*tensor));
  }
  llvm::SmallVector<const reference::Tensor *> pointers;
  for (const reference::Tensor &tensor : tensors)
    pointers.push_back(&tensor);
  llvm::SmallVector<reference::Tensor> values;
  llvm::Expected<bool> evaluated =
      reference::evaluateOp(op, pointers, values);
  if (!evaluated) {
    error = llvm::toString(evaluated.takeError()) +
            " in a constant computation";
    return failure();
  }
  if (!*evaluated)
    return false;
  for (auto [result, value] : llvm::zip(op->getResults(), values))
    results.push_back(
        toAttr(value, cast<RankedTensorType>(result.getType())));
  return true;
}

/// An elementwise |op| on splat |operands|: evaluated once, on a copy of
/// |op| whose operands and results are 0-d, and splatted to the result.
FailureOr<bool> evaluateSplat(Operation *op,
                              llvm::ArrayRef<DenseElementsAttr> operands,
                              llvm::SmallVectorImpl<DenseElementsAttr> &results,
                              std::string &error) {
  auto scalarOf = [](Type type) {
    return RankedTensorType::get({}, cast<ShapedType>(type).getElementType());
  };
  llvm::SmallVector<DenseElementsAttr> scalars;
  for (DenseElementsAttr attr : operands)
    scalars.push_back(attr.resizeSplat(scalarOf(attr.getType())));
  Operation *scalarOp = op->clone();
  for (OpResult result : scalarOp->getResults())
    result.setType(scalarOf(result.getType()));
  llvm::SmallVector<DenseElementsAttr> scalarResults;
  FailureOr<bool> evaluated = runKernel(scalarOp, scalars, scalarResults, error);
  scalarOp->destroy();
  if (failed(evaluated) || !*evaluated)
    return evaluated;
  for (auto [result, scalar] : llvm::zip(op->getResults(), scalarResults))
    results.push_back(
        scalar.resizeSplat(cast<ShapedType>(result.getType())));
  return true;
}

} // namespace

FailureOr<bool>
onnx_import::evaluateOp(Operation *op, llvm::ArrayRef<DenseElementsAttr> operands,
                        llvm::SmallVectorImpl<DenseElementsAttr> &results,
                        std::string &error) {
  if (op->getNumResults() == 0 ||
      !llvm::all_of(op->getResultTypes(), [](Type type) {
        auto ranked = dyn_cast<RankedTensorType>(type);
        return ranked && ranked.hasStaticShape();
      }))
    return false;
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());

  // Pure re-shapes keep the data: any size folds, without evaluation.
  DenseElementsAttr first = operands[0];
  if (isa<tx::ReshapeOp, tx::SqueezeOp, tx::UnsqueezeOp, tx::IdentityOp>(op)) {
    results.push_back(first.reshape(resultType));
    return true;
  }
  if (isa<tx::ExpandOp>(op) && first.isSplat()) {
    results.push_back(first.resizeSplat(resultType));
    return true;
  }
  if (!isFoldable(op))
    return false;

  bool allSplat = llvm::all_of(operands, [](DenseElementsAttr attr) {
    return attr.isSplat() && attr.getNumElements() > 0;
  });
  if (allSplat && isElementwise(op))
    return evaluateSplat(op, operands, results, error);

  // Anything bigger stays a runtime op (see kMaxFoldElements).
  for (DenseElementsAttr attr : operands)
    if (attr.getNumElements() > kMaxReadElements)
      return false;
  for (Type type : op->getResultTypes())
    if (cast<RankedTensorType>(type).getNumElements() > kMaxFoldElements)
      return false;
  return runKernel(op, operands, results, error);
}
