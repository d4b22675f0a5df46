//===- TxOptimOps.cpp - tx optimizer op verifiers and syntax --------------===//
//
// SPDX-License-Identifier: Apache-2.0
// Verifiers, result names and the shared per-parameter type list of tx.adam
// and tx.sgd.
//
//===----------------------------------------------------------------------===//

#include "txopt/Dialect/Tx/IR/TxOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

#include <cmath>

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::tx;

//===----------------------------------------------------------------------===//
// Shared helpers
//===----------------------------------------------------------------------===//

/// Parses the one type list of `custom<PerParamTypes>` and hands it to every
/// per-parameter operand and result list.
static ParseResult parseSharedTypes(OpAsmParser &parser,
                                    ArrayRef<SmallVectorImpl<Type> *> lists) {
  if (parser.parseTypeList(*lists.front()))
    return failure();
  for (SmallVectorImpl<Type> *list : lists.drop_front())
    list->assign(lists.front()->begin(), lists.front()->end());
  return success();
}

namespace {
struct NamedTypes {
  StringRef name;
  TypeRange types;
};
} // namespace

/// Every per-parameter list has one entry per parameter, of the parameter's
/// type (the updates are elementwise, without broadcasting), and the state
/// is f32 (fp32 master weights: moments lose too much in bf16/fp16, and the
/// reference executor computes in f32).
static LogicalResult verifyPerParamLists(Operation *op, TypeRange params,
                                         ArrayRef<NamedTypes> lists) {
  size_t n = params.size();
  if (n == 0)
    return op->emitOpError("expected at least one parameter");
  for (const NamedTypes &list : lists)
    if (list.types.size() != n)
      return op->emitOpError()
             << "expected " << n << " '" << list.name
             << "' (one per parameter), but got " << list.types.size();
  for (const NamedTypes &list : lists)
    for (size_t i = 0; i < n; ++i)
      if (list.types[i] != params[i])
        return op->emitOpError()
               << "expected '" << list.name << "' #" << i << " of type "
               << params[i] << ", but got " << list.types[i];
  for (size_t i = 0; i < n; ++i)
    if (!cast<RankedTensorType>(params[i]).getElementType().isF32())
      return op->emitOpError()
             << "expected f32 parameters and optimizer state, but got "
             << params[i] << " for parameter #" << i;
  return success();
}

/// |value| >= 0 and finite (NaN fails).
static LogicalResult verifyNonNegative(Operation *op, StringRef name,
                                       APFloat value) {
  float x = value.convertToFloat();
  if (x >= 0.0f && !std::isinf(x))
    return success();
  return op->emitOpError() << "expected " << name
                           << " to be finite and >= 0, but got " << x;
}

/// |value| in [0, 1) or, with |closed|, [0, 1] (NaN fails).
static LogicalResult verifyUnitInterval(Operation *op, StringRef name,
                                        APFloat value, bool closed) {
  float x = value.convertToFloat();
  if (x >= 0.0f && (closed ? x <= 1.0f : x < 1.0f))
    return success();
  return op->emitOpError() << "expected " << name << " in [0, 1"
                           << (closed ? "]" : ")") << ", but got " << x;
}

//===----------------------------------------------------------------------===//
// AdamOp
//===----------------------------------------------------------------------===//

ParseResult AdamOp::parsePerParamTypes(
    OpAsmParser &parser, SmallVectorImpl<Type> &params,
    SmallVectorImpl<Type> &grads, SmallVectorImpl<Type> &expAvg,
    SmallVectorImpl<Type> &expAvgSq, SmallVectorImpl<Type> &newParams,
    SmallVectorImpl<Type> &newExpAvg, SmallVectorImpl<Type> &newExpAvgSq) {
  return parseSharedTypes(parser, {&params, &grads, &expAvg, &expAvgSq,
                                   &newParams, &newExpAvg, &newExpAvgSq});
}

void AdamOp::printPerParamTypes(OpAsmPrinter &printer, Operation *,
                                TypeRange params, TypeRange, TypeRange,
                                TypeRange, TypeRange, TypeRange, TypeRange) {
  // The verifier guarantees the other lists equal `params`; invalid IR is
  // printed in generic form, so nothing is lost here.
  llvm::interleaveComma(params, printer);
}

void AdamOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  // Named groups make tests read `%new_params:2, %new_exp_avg:2, ...`.
  if (getNewParams().empty())
    return;
  setNameFn(getNewParams().front(), "new_params");
  setNameFn(getNewExpAvg().front(), "new_exp_avg");
  setNameFn(getNewExpAvgSq().front(), "new_exp_avg_sq");
}

LogicalResult AdamOp::verify() {
  if (failed(verifyPerParamLists(
          *this, getParams().getTypes(),
          {{"grads", getGrads().getTypes()},
           {"exp_avg", getExpAvg().getTypes()},
           {"exp_avg_sq", getExpAvgSq().getTypes()},
           {"new_params", getNewParams().getTypes()},
           {"new_exp_avg", getNewExpAvg().getTypes()},
           {"new_exp_avg_sq", getNewExpAvgSq().getTypes()}})))
    return failure();
  // beta = 1 would divide by zero in the bias correction.
  if (failed(verifyUnitInterval(*this, "beta1", getBeta1(), false)) ||
      failed(verifyUnitInterval(*this, "beta2", getBeta2(), false)) ||
      failed(verifyNonNegative(*this, "epsilon", getEpsilon())) ||
      failed(verifyNonNegative(*this, "weight_decay", getWeightDecay())))
    return failure();
  // `step` feeds only the bias corrections.
  if (getBiasCorrection() && !getStep())
    return emitOpError("expected a 'step' operand when bias_correction is set");
  if (!getBiasCorrection() && getStep())
    return emitOpError(
        "expected no 'step' operand when bias_correction is false");
  return success();
}

//===----------------------------------------------------------------------===//
// SGDOp
//===----------------------------------------------------------------------===//

ParseResult
SGDOp::parsePerParamTypes(OpAsmParser &parser, SmallVectorImpl<Type> &params,
                          SmallVectorImpl<Type> &grads,
                          SmallVectorImpl<Type> &momentumBuffer,
                          SmallVectorImpl<Type> &newParams,
                          SmallVectorImpl<Type> &newMomentumBuffer) {
  return parseSharedTypes(parser, {&params, &grads, &momentumBuffer, &newParams,
                                   &newMomentumBuffer});
}

void SGDOp::printPerParamTypes(OpAsmPrinter &printer, Operation *,
                               TypeRange params, TypeRange, TypeRange,
                               TypeRange, TypeRange) {
  llvm::interleaveComma(params, printer);
}

void SGDOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  if (getNewParams().empty())
    return;
  setNameFn(getNewParams().front(), "new_params");
  setNameFn(getNewMomentumBuffer().front(), "new_momentum_buffer");
}

LogicalResult SGDOp::verify() {
  if (failed(verifyPerParamLists(
          *this, getParams().getTypes(),
          {{"grads", getGrads().getTypes()},
           {"momentum_buffer", getMomentumBuffer().getTypes()},
           {"new_params", getNewParams().getTypes()},
           {"new_momentum_buffer", getNewMomentumBuffer().getTypes()}})))
    return failure();
  if (failed(verifyNonNegative(*this, "momentum", getMomentum())) ||
      failed(verifyUnitInterval(*this, "dampening", getDampening(), true)) ||
      failed(verifyNonNegative(*this, "weight_decay", getWeightDecay())))
    return failure();
  // torch.optim.SGD refuses the same combination.
  float momentum = getMomentum().convertToFloat();
  float dampening = getDampening().convertToFloat();
  if (getNesterov() && (momentum <= 0.0f || dampening != 0.0f))
    return emitOpError() << "expected momentum > 0 and dampening = 0 with "
                            "nesterov, but got momentum "
                         << momentum << " and dampening " << dampening;
  return success();
}
