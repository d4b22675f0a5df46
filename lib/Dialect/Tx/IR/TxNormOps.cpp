//===- TxNormOps.cpp - fused norm op verifiers and type inference ---------===//
//
// SPDX-License-Identifier: Apache-2.0
// Result-type inference and verifiers of tx.layer_norm, tx.rms_norm and
// their gradients (the op classes are generated into TxOps.cpp.inc).
//
//===----------------------------------------------------------------------===//

#include "txopt/Dialect/Tx/IR/TxOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::tx;

//===----------------------------------------------------------------------===//
// Shared helpers
//===----------------------------------------------------------------------===//

/// The ranked type of a norm input, or a diagnostic (when |loc| is given)
/// for the rank-0 tensors the norms cannot normalize. Inference runs before
/// the ODS type constraints when ops are parsed or built, so it may not
/// assume a ranked type.
static FailureOr<RankedTensorType> normInputType(std::optional<Location> loc,
                                                 Value input) {
  auto type = dyn_cast<RankedTensorType>(input.getType());
  if (!type)
    return emitOptionalError(loc, "expected a ranked input, but got ",
                             input.getType());
  if (type.getRank() < 1)
    return emitOptionalError(loc,
                             "expected an input of rank at least 1, but got "
                             "rank 0");
  return type;
}

/// Shape of the per-row statistics: the input shape with the innermost dim 1.
static RankedTensorType statsType(RankedTensorType input) {
  SmallVector<int64_t> shape(input.getShape());
  shape.back() = 1;
  return RankedTensorType::get(shape, Float32Type::get(input.getContext()));
}

static LogicalResult verifyEpsilon(Operation *op, APFloat epsilon) {
  if (epsilon.isNegative() || !epsilon.isFinite())
    return op->emitOpError("expected a finite non-negative epsilon, but got ")
           << epsilon.convertToDouble();
  return success();
}

/// gamma / beta (and their gradients' types) are `[D]` with the input's
/// element type or f32 (f32 master weights next to bf16 activations).
static LogicalResult verifyAffine(Operation *op, RankedTensorType input,
                                  Value affine, StringRef name) {
  if (!affine)
    return success();
  auto type = cast<RankedTensorType>(affine.getType());
  int64_t dim = input.getShape().back();
  if (type.getShape() != ArrayRef<int64_t>{dim})
    return op->emitOpError("expected ")
           << name << " shape " << formatShape({dim}) << ", but got "
           << formatShape(type.getShape());
  Type element = type.getElementType();
  if (element == input.getElementType() || element.isF32())
    return success();
  InFlightDiagnostic diag = op->emitOpError("expected ")
                            << name << " element type " << input.getElementType();
  if (!input.getElementType().isF32())
    diag << " or " << Float32Type::get(op->getContext());
  return diag << ", but got " << element;
}

/// mean / rstd operands of the gradients must be the forward's statistics.
static LogicalResult verifyStats(Operation *op, RankedTensorType input,
                                 Value stats, StringRef name) {
  auto type = cast<RankedTensorType>(stats.getType());
  RankedTensorType expected = statsType(input);
  if (type.getShape() != expected.getShape())
    return op->emitOpError("expected ")
           << name << " shape " << formatShape(expected.getShape())
           << ", but got " << formatShape(type.getShape());
  return success();
}

//===----------------------------------------------------------------------===//
// LayerNormOp
//===----------------------------------------------------------------------===//

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> input = normInputType(loc, adaptor.getInput());
  if (failed(input))
    return failure();
  RankedTensorType stats = statsType(*input);
  inferred.append({*input, stats, stats});
  return success();
}

LogicalResult LayerNormOp::verify() {
  if (failed(verifyEpsilon(*this, getEpsilon())))
    return failure();
  auto input = getInput().getType();
  if (failed(verifyAffine(*this, input, getGamma(), "gamma")))
    return failure();
  return verifyAffine(*this, input, getBeta(), "beta");
}

//===----------------------------------------------------------------------===//
// RMSNormOp
//===----------------------------------------------------------------------===//

LogicalResult RMSNormOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> input = normInputType(loc, adaptor.getInput());
  if (failed(input))
    return failure();
  inferred.append({*input, statsType(*input)});
  return success();
}

LogicalResult RMSNormOp::verify() {
  if (failed(verifyEpsilon(*this, getEpsilon())))
    return failure();
  return verifyAffine(*this, getInput().getType(), getGamma(), "gamma");
}

//===----------------------------------------------------------------------===//
// LayerNormGradOp
//===----------------------------------------------------------------------===//

LogicalResult
LayerNormGradOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                  Adaptor adaptor,
                                  SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> input = normInputType(loc, adaptor.getInput());
  if (failed(input))
    return failure();
  Type gamma = adaptor.getGamma().getType();
  inferred.append({*input, gamma, gamma});
  return success();
}

LogicalResult LayerNormGradOp::verify() {
  auto input = getInput().getType();
  if (failed(verifyAffine(*this, input, getGamma(), "gamma")))
    return failure();
  // rstd has mean's type (AllTypesMatch), so checking mean covers both.
  return verifyStats(*this, input, getMean(), "mean");
}

//===----------------------------------------------------------------------===//
// RMSNormGradOp
//===----------------------------------------------------------------------===//

LogicalResult
RMSNormGradOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                Adaptor adaptor,
                                SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> input = normInputType(loc, adaptor.getInput());
  if (failed(input))
    return failure();
  inferred.append({*input, adaptor.getGamma().getType()});
  return success();
}

LogicalResult RMSNormGradOp::verify() {
  auto input = getInput().getType();
  if (failed(verifyAffine(*this, input, getGamma(), "gamma")))
    return failure();
  return verifyStats(*this, input, getRstd(), "rstd");
}
