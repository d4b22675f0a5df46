//===- PatternUtils.cpp - matchers shared by the tx fusion passes ---------===//
//
// SPDX-License-Identifier: Apache-2.0
// Constant matchers and near-miss remarks for the fusion passes.
//
//===----------------------------------------------------------------------===//

#include "txopt/Dialect/Tx/Transforms/PatternUtils.h"

#include "txopt/Dialect/Tx/IR/TxOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Matchers.h"
#include "llvm/Support/Format.h"

#include <cmath>

using namespace mlir;
using namespace mlir::txopt;

void tx::reportNearMiss(Operation *anchor, StringRef pattern,
                        const Twine &reason) {
  anchor->emitRemark() << kNearMissPrefix << pattern << ": " << reason;
}

bool tx::isSplatConstant(Value value, double expected) {
  std::optional<double> actual = getSplatConstant(value);
  if (!actual)
    return false;
  if (*actual == expected) // exact, infinities included
    return true;
  double scale = std::max(1.0, std::fabs(expected));
  return std::fabs(*actual - expected) <= 1e-6 * scale;
}

std::optional<double> tx::getScalarConstant(Value value) {
  auto type = value ? dyn_cast<RankedTensorType>(value.getType()) : nullptr;
  if (!type || !type.hasStaticShape() || type.getNumElements() != 1)
    return std::nullopt;
  return getSplatConstant(value);
}

Value tx::stripIdentityCasts(Value value) {
  while (auto cast = value.getDefiningOp<CastOp>()) {
    if (cast.getInput().getType() != cast.getType())
      break;
    value = cast.getInput();
  }
  return value;
}

bool tx::isSameValueModuloCasts(Value a, Value b) {
  a = stripIdentityCasts(a);
  b = stripIdentityCasts(b);
  if (a == b)
    return true;
  auto castA = a.getDefiningOp<CastOp>();
  auto castB = b.getDefiningOp<CastOp>();
  return castA && castB && castA.getType() == castB.getType() &&
         isSameValueModuloCasts(castA.getInput(), castB.getInput());
}

Value tx::getOtherOperand(Operation *op, Value operand) {
  if (op->getNumOperands() != 2)
    return {};
  Value lhs = op->getOperand(0), rhs = op->getOperand(1);
  if (lhs == operand && rhs != operand)
    return rhs;
  if (rhs == operand && lhs != operand)
    return lhs;
  return {};
}

Operation *
tx::findUserOutside(Operation *op,
                    const llvm::SmallPtrSetImpl<Operation *> &allowed) {
  for (Operation *user : op->getUsers())
    if (!allowed.contains(user))
      return user;
  return nullptr;
}

bool tx::isSqrtLike(Value value, Value *radicand) {
  Value x;
  if (auto sqrt = value.getDefiningOp<SqrtOp>())
    x = sqrt.getInput();
  else if (auto pow = value.getDefiningOp<PowOp>();
           pow && isSplatConstant(pow.getRhs(), 0.5))
    x = pow.getLhs();
  if (x && radicand)
    *radicand = x;
  return static_cast<bool>(x);
}

void tx::flattenProduct(Value value, ProductTerms &terms, bool inNum,
                        function_ref<bool(Value)> descendScalar) {
  if (std::optional<double> c = getSplatConstant(value)) {
    terms.coef = inNum ? terms.coef * *c : terms.coef / *c;
    return;
  }
  auto recurse = [&](Value x, bool num) {
    flattenProduct(x, terms, num, descendScalar);
  };
  Operation *op = value.getDefiningOp();
  auto type = dyn_cast<RankedTensorType>(value.getType());
  bool scalar = type && type.hasStaticShape() && type.getNumElements() == 1;
  bool square = op && isa<PowOp>(op) && isSplatConstant(op->getOperand(1), 2.0);
  if (op && terms.budget > 0 &&
      (square || isa<MulOp, DivOp, NegOp, ReciprocalOp>(op)) &&
      (!scalar || !descendScalar || descendScalar(value))) {
    --terms.budget;
    terms.ops.push_back(op);
    Value lhs = op->getOperand(0);
    if (isa<NegOp>(op))
      terms.coef = -terms.coef;
    recurse(lhs, isa<ReciprocalOp>(op) ? !inNum : inNum);
    if (isa<MulOp>(op) || square)
      recurse(square ? lhs : op->getOperand(1), inNum);
    else if (isa<DivOp>(op))
      recurse(op->getOperand(1), !inNum);
    return;
  }
  (inNum ? terms.num : terms.den).push_back(value);
}

bool tx::flattenSumOperands(Value sum, ProductTerms &lhs, ProductTerms &rhs,
                            function_ref<bool(Value)> descendScalar) {
  auto add = sum.getDefiningOp<AddOp>();
  if (!add)
    return false;
  flattenProduct(add.getLhs(), lhs, /*inNum=*/true, descendScalar);
  flattenProduct(add.getRhs(), rhs, /*inNum=*/true, descendScalar);
  return true;
}

int64_t tx::getNumElements(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  return type && type.hasStaticShape() ? type.getNumElements() : -1;
}

std::string tx::formatNumber(double value) {
  std::string text;
  llvm::raw_string_ostream(text) << llvm::format("%.7g", value);
  return text;
}

std::string tx::quoteType(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "'" << type << "'";
  return text;
}

Operation *
tx::findEscapingIntermediate(const llvm::SetVector<Operation *> &ops,
                             ArrayRef<Value> inputs,
                             ArrayRef<Operation *> outputs,
                             llvm::SmallPtrSetImpl<Operation *> &dependent) {
  SmallVector<Operation *> sorted(ops.begin(), ops.end());
  llvm::sort(sorted,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  dependent.clear();
  for (Operation *op : sorted) {
    bool depends = llvm::any_of(op->getOperands(), [&](Value x) {
      return llvm::is_contained(inputs, x) ||
             (x.getDefiningOp() && dependent.contains(x.getDefiningOp()));
    });
    if (depends)
      dependent.insert(op);
  }
  for (Operation *op : sorted) {
    if (!dependent.contains(op) || llvm::is_contained(outputs, op))
      continue;
    for (Operation *user : op->getUsers())
      if (!ops.contains(user))
        return op;
  }
  return nullptr;
}
