//===- TxPrecisionOps.cpp - tx FP8 recipe and scaling op verifiers --------===//
//
// SPDX-License-Identifier: Apache-2.0
// Syntax and verifier of #tx.fp8_recipe, and the verifiers and result names
// of the FP8 scaling ops (TxPrecisionOps.td).
//
//===----------------------------------------------------------------------===//

#include "txopt/Dialect/Tx/IR/TxOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::tx;

//===----------------------------------------------------------------------===//
// FP8RecipeAttr
//===----------------------------------------------------------------------===//

/// `<kind (, key = value)*>` with keys in any order, each at most once.
/// Keys that do not apply to the kind are parsed anyway and left to verify(),
/// so the message is the same whether the recipe came from text or C++.
Attribute FP8RecipeAttr::parse(AsmParser &parser, Type) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef kindName;
  if (parser.parseLess() || parser.parseKeyword(&kindName))
    return {};
  std::optional<FP8ScalingKind> kind = symbolizeFP8ScalingKind(kindName);
  if (!kind) {
    parser.emitError(loc, "expected 'delayed' or 'current', but got '")
        << kindName << "'";
    return {};
  }
  bool delayed = *kind == FP8ScalingKind::delayed;
  FP8Format format = FP8Format::hybrid;
  // TE's DelayedScaling defaults; a current recipe has no history.
  int64_t historyLength = delayed ? 1024 : 0;
  AmaxCompute amaxCompute = AmaxCompute::max;
  int64_t margin = 0;

  llvm::StringSet<> seen;
  while (succeeded(parser.parseOptionalComma())) {
    SMLoc keyLoc = parser.getCurrentLocation();
    StringRef key;
    if (parser.parseKeyword(&key) || parser.parseEqual())
      return {};
    if (!seen.insert(key).second) {
      parser.emitError(keyLoc, "duplicate '") << key << "'";
      return {};
    }
    SMLoc valueLoc = parser.getCurrentLocation();
    if (key == "history" || key == "margin") {
      if (parser.parseInteger(key == "history" ? historyLength : margin))
        return {};
      continue;
    }
    StringRef value;
    if (key == "format") {
      if (parser.parseKeyword(&value))
        return {};
      std::optional<FP8Format> parsed = symbolizeFP8Format(value);
      if (!parsed) {
        parser.emitError(valueLoc, "expected format 'hybrid' or 'e4m3', but got '")
            << value << "'";
        return {};
      }
      format = *parsed;
      continue;
    }
    if (key == "amax") {
      if (parser.parseKeyword(&value))
        return {};
      std::optional<AmaxCompute> parsed = symbolizeAmaxCompute(value);
      if (!parsed) {
        parser.emitError(valueLoc, "expected amax 'max' or 'most_recent', but got '")
            << value << "'";
        return {};
      }
      amaxCompute = *parsed;
      continue;
    }
    parser.emitError(keyLoc, "expected 'format', 'history', 'amax' or 'margin', "
                             "but got '")
        << key << "'";
    return {};
  }
  if (parser.parseGreater())
    return {};
  return parser.getChecked<FP8RecipeAttr>(loc, parser.getContext(), *kind,
                                          format, historyLength, amaxCompute,
                                          margin);
}

void FP8RecipeAttr::print(AsmPrinter &printer) const {
  printer << "<" << stringifyFP8ScalingKind(getKind())
          << ", format = " << stringifyFP8Format(getFormat());
  if (isDelayed())
    printer << ", history = " << getHistoryLength()
            << ", amax = " << stringifyAmaxCompute(getAmaxCompute())
            << ", margin = " << getMargin();
  printer << ">";
}

LogicalResult
FP8RecipeAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                      FP8ScalingKind kind, FP8Format, int64_t historyLength,
                      AmaxCompute amaxCompute, int64_t margin) {
  if (kind == FP8ScalingKind::current) {
    // Current scaling has no state to keep: a history, a choice of amax
    // or a margin would be silently ignored, so refuse them.
    if (historyLength != 0 || amaxCompute != AmaxCompute::max || margin != 0)
      return emitError() << "expected only 'format' in a current-scaling "
                            "recipe ('history', 'amax' and 'margin' are for "
                            "delayed scaling)";
    return success();
  }
  if (historyLength < 1)
    return emitError() << "expected an amax history length of at least 1, "
                          "but got "
                       << historyLength;
  // A negative margin would scale the window's amax past fp8_max, so every
  // step would saturate its largest values.
  if (margin < 0)
    return emitError() << "expected a margin >= 0, but got " << margin;
  return success();
}

bool FP8RecipeAttr::allowsType(Type type) const {
  if (getFormat() == FP8Format::e4m3)
    return isa<Float8E4M3FNType>(type);
  return isa<Float8E4M3FNType, Float8E5M2Type>(type);
}

/// The scale of an |fp8Type| tensor can only come from a recipe whose format
/// casts to that type (E5M2 is for gradients under `hybrid` only).
static LogicalResult verifyRecipeType(Operation *op, FP8RecipeAttr recipe,
                                      Type fp8Type) {
  if (recipe.allowsType(fp8Type))
    return success();
  return op->emitOpError()
         << "expected 'f8E4M3FN' under the recipe's format 'e4m3', but got "
         << fp8Type;
}

//===----------------------------------------------------------------------===//
// FP8ScaleUpdateOp
//===----------------------------------------------------------------------===//

void FP8ScaleUpdateOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  setNameFn(getNewAmaxHistory(), "new_amax_history");
  setNameFn(getNewScale(), "new_scale");
  setNameFn(getNewScaleInv(), "new_scale_inv");
}

Type tx::fp8EntriesType(Type history) {
  auto type = dyn_cast<RankedTensorType>(history);
  if (!type || type.getRank() < 1 || type.getRank() > 2)
    return history;
  return RankedTensorType::get(type.getShape().drop_back(), type.getElementType());
}

LogicalResult FP8ScaleUpdateOp::verify() {
  FP8RecipeAttr recipe = getRecipe();
  if (!recipe.isDelayed())
    return emitOpError("expected a delayed-scaling recipe, but got 'current' "
                       "(current scales come from 'tx.fp8_current_scale')");
  RankedTensorType history = getAmaxHistory().getType();
  if (history.getRank() == 2 && history.getDimSize(0) == 0)
    return emitOpError("expected at least one site (row) in a packed amax history, but got ")
           << history;
  int64_t length = history.getShape().back();
  if (length != recipe.getHistoryLength())
    return emitOpError() << "expected an amax history of "
                         << recipe.getHistoryLength()
                         << " entries (the recipe's history length), but got "
                         << length;
  return verifyRecipeType(*this, recipe, getFp8Type());
}

//===----------------------------------------------------------------------===//
// FP8SiteOp
//===----------------------------------------------------------------------===//

LogicalResult FP8SiteOp::verify() {
  int64_t sites = getState().getType().getDimSize(0);
  int64_t index = static_cast<int64_t>(getIndex());
  if (index < 0 || index >= sites)
    return emitOpError() << "expected an index in [0, " << sites
                         << ") (the state's sites), but got " << index;
  return success();
}

//===----------------------------------------------------------------------===//
// FP8CurrentScaleOp
//===----------------------------------------------------------------------===//

void FP8CurrentScaleOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  setNameFn(getScale(), "scale");
  setNameFn(getScaleInv(), "scale_inv");
}

LogicalResult FP8CurrentScaleOp::verify() {
  FP8RecipeAttr recipe = getRecipe();
  if (recipe.isDelayed())
    return emitOpError("expected a current-scaling recipe, but got 'delayed' "
                       "(delayed scales come from 'tx.fp8_scale_update')");
  return verifyRecipeType(*this, recipe, getFp8Type());
}

//===----------------------------------------------------------------------===//
// FP8MatmulOp
//===----------------------------------------------------------------------===//

LogicalResult FP8MatmulOp::verify() {
  RankedTensorType lhsType = getLhs().getType(), rhsType = getRhs().getType();
  ArrayRef<int64_t> lhs = lhsType.getShape(), rhs = rhsType.getShape();
  // Vectors would need numpy's insert-and-remove-a-dim rule, and cuBLASLt
  // takes matrices; the insertion pass reshapes before casting.
  if (lhs.size() < 2 || rhs.size() < 2)
    return emitOpError("expected operands of rank at least 2, but got ")
           << formatShape(lhs) << " and " << formatShape(rhs);
  if (lhs.back() != rhs[rhs.size() - 2])
    return emitOpError("expected matching contraction dims, but got ")
           << formatShape(lhs) << " and " << formatShape(rhs);
  FailureOr<SmallVector<int64_t>> batch =
      broadcastShapes(lhs.drop_back(2), rhs.drop_back(2));
  if (failed(batch))
    return emitOpError("expected broadcastable batch dims, but got ")
           << formatShape(lhs) << " and " << formatShape(rhs);
  SmallVector<int64_t> expected = *batch;
  expected.push_back(lhs[lhs.size() - 2]);
  expected.push_back(rhs.back());
  ArrayRef<int64_t> result = getResult().getType().getShape();
  if (ArrayRef<int64_t>(expected) != result)
    return emitOpError("expected result shape ")
           << formatShape(expected) << ", but got " << formatShape(result);
  if (isa<Float8E5M2Type>(lhsType.getElementType()) &&
      isa<Float8E5M2Type>(rhsType.getElementType()))
    return emitOpError("expected at most one 'f8E5M2' operand, but got two "
                       "(cuBLASLt has no E5M2 x E5M2 GEMM)");
  return success();
}
