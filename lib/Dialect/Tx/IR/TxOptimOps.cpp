//===- TxOptimOps.cpp - tx optimizer op verifiers and syntax --------------===//
//
// SPDX-License-Identifier: Apache-2.0
// Verifiers, result names, the shared per-parameter type list and the
// hyper-parameter syntax of tx.adam and tx.sgd.
//
//===----------------------------------------------------------------------===//

#include "txopt/Dialect/Tx/IR/TxOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

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

/// `custom<Hyper>`: an f64 hyper-parameter, written as any float literal.
static ParseResult parseHyperParameter(OpAsmParser &parser, FloatAttr &value) {
  APFloat x(0.0);
  if (parser.parseFloat(APFloat::IEEEdouble(), x))
    return failure();
  value = FloatAttr::get(Float64Type::get(parser.getContext()), x);
  return success();
}

/// Prints |value| as the shortest decimal that reads back to the same double
/// (0.999, 1.0e-08): the Python float the user wrote. MLIR float literals
/// need a '.' before any exponent, hence 1.0e-08 rather than 1e-08.
static void printHyperParameter(OpAsmPrinter &printer, FloatAttr value) {
  double x = value.getValueAsDouble();
  if (!std::isfinite(x)) {
    printer.printFloat(value.getValue());
    return;
  }
  char text[32];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(text, sizeof(text), "%.*g", digits, x);
    if (std::strtod(text, nullptr) == x)
      break;
  }
  std::string literal(text);
  if (literal.find('.') == std::string::npos)
    literal.insert(std::min(literal.find('e'), literal.size()), ".0");
  printer << literal;
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

// The hyper-parameters are f64 attributes (PyTorch's Python floats); the
// checks apply to that double, the value the user wrote.

/// |value| >= 0 and finite (NaN fails).
static LogicalResult verifyNonNegative(Operation *op, StringRef name,
                                       APFloat value) {
  double x = value.convertToDouble();
  if (x >= 0.0 && !std::isinf(x))
    return success();
  return op->emitOpError() << "expected " << name
                           << " to be finite and >= 0, but got " << x;
}

/// |value| in [0, 1) or, with |closed|, [0, 1] (NaN fails).
static LogicalResult verifyUnitInterval(Operation *op, StringRef name,
                                        APFloat value, bool closed) {
  double x = value.convertToDouble();
  if (x >= 0.0 && (closed ? x <= 1.0 : x < 1.0))
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

ParseResult AdamOp::parseHyper(OpAsmParser &parser, FloatAttr &value) {
  return parseHyperParameter(parser, value);
}

void AdamOp::printHyper(OpAsmPrinter &printer, Operation *, FloatAttr value) {
  printHyperParameter(printer, value);
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

ParseResult SGDOp::parseHyper(OpAsmParser &parser, FloatAttr &value) {
  return parseHyperParameter(parser, value);
}

void SGDOp::printHyper(OpAsmPrinter &printer, Operation *, FloatAttr value) {
  printHyperParameter(printer, value);
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
  double momentum = getMomentum().convertToDouble();
  double dampening = getDampening().convertToDouble();
  if (getNesterov() && (momentum <= 0.0 || dampening != 0.0))
    return emitOpError() << "expected momentum > 0 and dampening = 0 with "
                            "nesterov, but got momentum "
                         << momentum << " and dampening " << dampening;
  return success();
}
