//===- TxDialect.cpp - tx dialect registration ----------------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// Registers the tx ops, materializes folded constants as tx.constant, and
// verifies the tx.* attributes of the training-step contract.
//
//===----------------------------------------------------------------------===//

#include "txopt/Dialect/Tx/IR/TxDialect.h"
#include "txopt/Dialect/Tx/IR/TxOps.h"
#include "txopt/Dialect/Tx/IR/StepContract.h"

using namespace mlir;
using namespace mlir::txopt::tx;

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/TypeSwitch.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/IR/SymbolTable.h"

#include "txopt/Dialect/Tx/IR/TxOpsDialect.cpp.inc"
#define GET_ATTRDEF_CLASSES
#include "txopt/Dialect/Tx/IR/TxAttrs.cpp.inc"

void TxDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "txopt/Dialect/Tx/IR/TxOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "txopt/Dialect/Tx/IR/TxAttrs.cpp.inc"
      >();
}

Operation *TxDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                          Type type, Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, elements);
}

//===----------------------------------------------------------------------===//
// The step contract (docs/Training.md)
//===----------------------------------------------------------------------===//

namespace {
/// Roles of step arguments, and what each requires of the argument's type.
enum class RoleType { FloatTensor, F32Scalar, F32Entries, I64Scalar, IntTensor, Any };

std::optional<RoleType> roleType(StringRef role) {
  return llvm::StringSwitch<std::optional<RoleType>>(role)
      .Cases({"param", "exp_avg", "exp_avg_sq", "momentum_buffer",
              "fp8_amax_history", "fp8_weight_codes", "grad_acc"},
             RoleType::FloatTensor)
      .Cases({"lr", "step", "loss_scale", "growth_tracker",
              "fp8_weight_amax", "loss_acc"},
             RoleType::F32Scalar)
      // One site's scale, or the packed scales of N sites (tx.fp8_site).
      .Cases({"fp8_scale", "fp8_scale_inv"}, RoleType::F32Entries)
      .Case("rng", RoleType::I64Scalar)
      .Case("labels", RoleType::IntTensor)
      .Case("data", RoleType::Any)
      .Default(std::nullopt);
}

LogicalResult checkRoleType(Operation *op, StringRef role, RoleType kind,
                            Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  auto fail = [&](StringRef want) {
    return op->emitError() << "argument with tx.role '" << role
                           << "' must be " << want << ", but got " << type;
  };
  switch (kind) {
  case RoleType::FloatTensor:
    if (!tensor || !isa<FloatType>(tensor.getElementType()))
      return fail("a float tensor");
    return success();
  case RoleType::F32Scalar:
    if (!tensor || tensor.getRank() != 0 || !tensor.getElementType().isF32())
      return fail("tensor<f32>");
    return success();
  case RoleType::F32Entries:
    if (!tensor || tensor.getRank() > 1 || !tensor.getElementType().isF32())
      return fail("tensor<f32> or tensor<Nxf32>");
    return success();
  case RoleType::I64Scalar:
    if (!tensor || tensor.getRank() != 0 || !tensor.getElementType().isInteger(64))
      return fail("tensor<i64>");
    return success();
  case RoleType::IntTensor:
    if (!tensor || !isa<IntegerType>(tensor.getElementType()))
      return fail("an integer tensor");
    return success();
  case RoleType::Any:
    return success();
  }
  return success();
}

LogicalResult checkName(Operation *op, NamedAttribute attr) {
  auto name = dyn_cast<StringAttr>(attr.getValue());
  if (!name || name.getValue().empty())
    return op->emitError() << "expected tx.name to be a non-empty string, but got "
                           << attr.getValue();
  return success();
}
} // namespace

namespace {
/// The whole step function's side of the contract (each attribute alone is
/// checked where it sits): every argument says what it is (tx.role), and no
/// two results carry the same argument into the next step (tx.next).
LogicalResult verifyStepFunction(FunctionOpInterface func) {
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
    if (!func.getArgAttr(i, kRoleAttrName))
      return func->emitError() << "argument " << i
                               << " of a training step has no tx.role";
  llvm::DenseMap<int64_t, unsigned> carriedBy;
  for (unsigned r = 0, e = func.getNumResults(); r < e; ++r) {
    auto next = func.getResultAttrOfType<IntegerAttr>(r, kNextAttrName);
    if (!next)
      continue;
    auto [it, inserted] = carriedBy.try_emplace(next.getInt(), r);
    if (!inserted)
      return func->emitError() << "results " << it->second << " and " << r
                               << " both carry argument " << next.getInt()
                               << " into the next step (tx.next)";
  }
  return success();
}
} // namespace

LogicalResult TxDialect::verifyOperationAttribute(Operation *op,
                                                  NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  Attribute value = attr.getValue();
  if (name == kTrainStepAttrName || name == "tx.grad_of") {
    if (!isa<FunctionOpInterface>(op))
      return op->emitError() << "'" << name << "' belongs on a function";
    if (name == kTrainStepAttrName && !isa<DictionaryAttr>(value))
      return op->emitError() << "expected tx.train_step to be a dictionary, but got " << value;
    if (name == kTrainStepAttrName)
      return verifyStepFunction(cast<FunctionOpInterface>(op));
    return success();
  }
  if (name == kMicroStepAttrName || name == kEvalAttrName || name == kLogitsAttrName ||
      name == kStateInitAttrName) {
    // Gradient accumulation's micro-step, the validation, the logits and
    // the state-init functions: the step function each belongs to.
    if (!isa<FunctionOpInterface>(op) || !isa<FlatSymbolRefAttr>(value))
      return op->emitError() << "expected " << name << " to be a function's "
                                "symbol reference to its step, but got "
                             << value;
    return success();
  }
  if (name == "tx.fp8_recipe") {
    // A module-wide FP8 recipe tx-insert-fp8 can read.
    if (!isa<ModuleOp>(op) || !isa<FP8RecipeAttr>(value))
      return op->emitError() << "expected tx.fp8_recipe to be a module's #tx.fp8_recipe";
    return success();
  }
  if (name == "tx.grad_seed") {
    // Autodiff's mark on the constant that seeds the reverse sweep.
    if (!isa<UnitAttr>(value))
      return op->emitError() << "expected tx.grad_seed to be a unit attribute";
    return success();
  }
  if (name == "tx.target") {
    auto target = dyn_cast<StringAttr>(value);
    unsigned sm = 0;
    if (!isa<ModuleOp>(op) || !target || !target.getValue().starts_with("sm_") ||
        target.getValue().drop_front(3).getAsInteger(10, sm) || sm < 50)
      return op->emitError() << "expected tx.target to be a module's \"sm_XY\" "
                                "(XY >= 50), but got " << value;
    return success();
  }
  if (name == "tx.source" || name == "tx.producer" || name == "tx.model_dir") {
    if (!isa<ModuleOp>(op) || !isa<StringAttr>(value))
      return op->emitError() << "expected '" << name << "' to be a module's string";
    return success();
  }
  if (name == "tx.untied_parameters" || name == "tx.tied_parameters") {
    // tx-untie-parameters' record: parameter -> its copies' names, or
    // parameter -> why it stays shared.
    auto dict = dyn_cast<DictionaryAttr>(value);
    bool ok = isa<ModuleOp>(op) && dict;
    for (NamedAttribute entry : ok ? dict.getValue() : ArrayRef<NamedAttribute>{}) {
      if (name == "tx.tied_parameters") {
        ok &= isa<StringAttr>(entry.getValue());
        continue;
      }
      auto copies = dyn_cast<ArrayAttr>(entry.getValue());
      ok &= copies && !copies.empty() &&
            llvm::all_of(copies, [](Attribute a) { return isa<StringAttr>(a); });
    }
    if (!ok)
      return op->emitError()
             << "expected '" << name << "' to be a module's dictionary of "
             << (name == "tx.tied_parameters" ? "strings (the reasons)"
                                              : "non-empty arrays of names");
    return success();
  }
  if (name == kBucketAttrName) {
    // tx-bucket-gradient-reductions: the bucket a reduce-scatter goes in.
    auto bucket = dyn_cast<IntegerAttr>(value);
    if (!isa<ReduceScatterOp>(op) || !bucket || bucket.getInt() < 0)
      return op->emitError() << "expected tx.bucket to be a tx.reduce_scatter's "
                                "integer >= 0, but got " << value;
    return success();
  }
  if (name == "tx.padded_classes") {
    // tx-pad-loss-classes: a padded loss's class count before padding,
    // fewer than its scores' (padded) classes.
    auto loss = dyn_cast<SoftmaxCrossEntropyLossOp>(op);
    auto classes = dyn_cast<IntegerAttr>(value);
    auto scores = loss ? dyn_cast<RankedTensorType>(loss.getScores().getType()) : nullptr;
    if (!scores || scores.getRank() != 2 || !classes || classes.getInt() <= 0 ||
        classes.getInt() >= scores.getShape()[1])
      return op->emitError() << "expected tx.padded_classes to be a "
                                "tx.softmax_cross_entropy_loss's class count before "
                                "padding (> 0, below its rows' width), but got "
                             << value;
    return success();
  }
  if (name == "tx.opset") {
    if (!isa<ModuleOp>(op) || !isa<IntegerAttr>(value))
      return op->emitError() << "expected tx.opset to be a module's integer";
    return success();
  }
  return op->emitError() << "unknown tx attribute '" << name << "'";
}

LogicalResult TxDialect::verifyRegionArgAttribute(Operation *op,
                                                  unsigned regionIndex,
                                                  unsigned argIndex,
                                                  NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  Attribute value = attr.getValue();
  auto func = dyn_cast<FunctionOpInterface>(op);
  if (!func || regionIndex != 0)
    return op->emitError() << "'" << name << "' belongs on a function argument";
  Type type = func.getArgumentTypes()[argIndex];
  if (name == kNameAttrName)
    return checkName(op, attr);
  if (name == kRoleAttrName) {
    auto role = dyn_cast<StringAttr>(value);
    std::optional<RoleType> kind = role ? roleType(role.getValue()) : std::nullopt;
    if (!kind)
      return op->emitError()
             << "unknown tx.role " << value << " (expected param, exp_avg, "
                "exp_avg_sq, momentum_buffer, lr, step, rng, loss_scale, "
                "growth_tracker, fp8_amax_history, fp8_scale, fp8_scale_inv, "
                "fp8_weight_codes, fp8_weight_amax, "
                "grad_acc, loss_acc, data or labels)";
    return checkRoleType(op, role.getValue(), *kind, type);
  }
  if (name == kFP8SitesAttrName) {
    // Packed FP8 state (tx-insert-fp8): the cast site of each row, in order.
    auto sites = dyn_cast<ArrayAttr>(value);
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!sites || !llvm::all_of(sites, [](Attribute a) { return isa<StringAttr>(a); }))
      return op->emitError() << "expected tx.fp8_sites to be an array of strings, but got "
                             << value;
    if (!tensor || tensor.getRank() < 1 ||
        tensor.getDimSize(0) != static_cast<int64_t>(sites.size()))
      return op->emitError() << "expected tx.fp8_sites to name one site per row of " << type
                             << ", but got " << sites.size();
    return success();
  }
  if (name == kShardOfAttrName) {
    // This rank's shard of a tensor of that shape (tx-data-parallel):
    // ceil(n / N) elements for the step's N ranks.
    auto shape = dyn_cast<DenseI64ArrayAttr>(value);
    auto tensor = dyn_cast<RankedTensorType>(type);
    auto recipe = op->getAttrOfType<DictionaryAttr>(kTrainStepAttrName);
    auto ranks = recipe ? recipe.getAs<IntegerAttr>("data_parallel") : IntegerAttr();
    if (!shape || llvm::any_of(shape.asArrayRef(), [](int64_t d) { return d < 0; }))
      return op->emitError() << "expected tx.shard_of to be a shape (array<i64>), but got "
                             << value;
    if (!ranks || ranks.getInt() < 1)
      return op->emitError() << "tx.shard_of belongs on an argument of a data-parallel step "
                                "(tx.train_step with data_parallel = N)";
    int64_t n = 1;
    for (int64_t d : shape.asArrayRef())
      n *= d;
    int64_t perRank = (n + ranks.getInt() - 1) / ranks.getInt();
    if (!tensor || tensor.getRank() != 1 || tensor.getDimSize(0) != perRank ||
        !isa<FloatType>(tensor.getElementType()))
      return op->emitError() << "expected a float shard of " << perRank << " elements (ceil(" << n
                             << " / " << ranks.getInt() << ")) for tx.shard_of "
                             << formatShape(shape.asArrayRef()) << ", but got " << type;
    return success();
  }
  if (name == kInitAttrName) {
    if (!isa<FloatAttr, IntegerAttr>(value))
      return op->emitError() << "expected tx.init to be a number, but got " << value;
    return success();
  }
  if (name == "tx.parameter") {
    auto ref = dyn_cast<FlatSymbolRefAttr>(value);
    if (!ref)
      return op->emitError() << "expected tx.parameter to name a tx.parameter, but got " << value;
    auto param = SymbolTable::lookupNearestSymbolFrom<ParameterOp>(op, ref);
    if (!param)
      return op->emitError() << "tx.parameter names " << ref
                             << ", which is not a tx.parameter of the module";
    auto tensor = dyn_cast<RankedTensorType>(type);
    // The argument may be the f32 master copy of a bf16/f16 parameter.
    if (!tensor || tensor.getShape() != param.getType().getShape())
      return op->emitError() << "expected the argument of tx.parameter " << ref
                             << " to have shape of " << param.getType()
                             << ", but got " << type;
    return success();
  }
  return op->emitError() << "unknown tx argument attribute '" << name << "'";
}

LogicalResult TxDialect::verifyRegionResultAttribute(Operation *op,
                                                     unsigned regionIndex,
                                                     unsigned resultIndex,
                                                     NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  auto func = dyn_cast<FunctionOpInterface>(op);
  if (!func || regionIndex != 0)
    return op->emitError() << "'" << name << "' belongs on a function result";
  if (name == kNameAttrName)
    return checkName(op, attr);
  if (name == "tx.grad_of")
    return success();
  if (name == kNextAttrName) {
    auto next = dyn_cast<IntegerAttr>(attr.getValue());
    int64_t numArgs = static_cast<int64_t>(func.getNumArguments());
    if (!next || next.getInt() < 0 || next.getInt() >= numArgs)
      return op->emitError() << "expected tx.next to be an argument index in [0, "
                             << numArgs << "), but got " << attr.getValue();
    Type resultType = func.getResultTypes()[resultIndex];
    Type argType = func.getArgumentTypes()[next.getInt()];
    if (resultType != argType)
      return op->emitError() << "expected result " << resultIndex
                             << " (tx.next = " << next.getInt()
                             << ") to have the argument's type " << argType
                             << ", but got " << resultType;
    return success();
  }
  return op->emitError() << "unknown tx result attribute '" << name << "'";
}
