//===- Executor.cpp - CPU reference interpreter over tx IR ----------------===//
//
// SPDX-License-Identifier: Apache-2.0
// Walks the function's single block in order, keeps one Tensor per live SSA
// value (dropped after its last use), dispatches each op to its kernel
// family, then rounds and optionally checks the results.
//
//===----------------------------------------------------------------------===//

#include "txopt/Reference/Executor.h"

#include "Kernels.h"

#include "txopt/Dialect/Tx/IR/TxOps.h"
#include "txopt/Dialect/Tx/IR/WeightSource.h"
#include "txopt/Reference/FloatFormats.h"

#include "mlir/IR/SymbolTable.h"
#include "llvm/Support/CheckedArithmetic.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::reference;

std::string mlir::txopt::reference::describeLocation(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return "'" + name.getName().str() + "'";
  if (auto file = dyn_cast<FileLineColLoc>(loc))
    return (file.getFilename().str() + ":" + std::to_string(file.getLine()) +
            ":" + std::to_string(file.getColumn()));
  if (auto call = dyn_cast<CallSiteLoc>(loc))
    return describeLocation(call.getCallee());
  if (auto fused = dyn_cast<FusedLoc>(loc)) {
    std::string text;
    for (Location part : fused.getLocations()) {
      if (isa<UnknownLoc>(part))
        continue;
      if (!text.empty())
        text += " + ";
      text += describeLocation(part);
    }
    return text.empty() ? "unknown location" : text;
  }
  if (isa<UnknownLoc>(loc))
    return "unknown location";
  std::string text;
  llvm::raw_string_ostream os(text);
  loc.print(os);
  return text;
}

Executor::Executor(ModuleOp module, ExecutorOptions options)
    : module(module), options(options) {}

static llvm::Error opError(Operation *op, const llvm::Twine &message) {
  return llvm::createStringError(op->getName().getStringRef().str() + " at " +
                                 describeLocation(op->getLoc()) + ": " +
                                 message.str());
}

llvm::Expected<const Tensor *> Executor::getParameter(llvm::StringRef name) {
  auto it = parameters.find(name);
  if (it != parameters.end())
    return &it->second;
  auto parameter = dyn_cast_or_null<tx::ParameterOp>(
      SymbolTable::lookupSymbolIn(module, StringAttr::get(module.getContext(), name)));
  if (!parameter)
    return llvm::createStringError("no tx.parameter named '" + name.str() + "'");
  // A sourced parameter is read from its file now, on first use, through
  // the same path and bounds checks as the importer (WeightSource.h); that
  // error already names the parameter and the file.
  if (llvm::Error err = checkTensorBudget(parameter.getType(),
                                          "parameter '" + name + "'", heldBytes))
    return std::move(err);
  std::optional<llvm::Expected<Tensor>> loaded;
  if (parameter.isSourced()) {
    auto bytes = tx::readParameterBytes(parameter, module);
    if (!bytes)
      return bytes.takeError();
    loaded.emplace(Tensor::fromBytes(parameter.getType(), *bytes));
  } else {
    loaded.emplace(Tensor::fromAttr(parameter.getInitialValueAttr()));
  }
  llvm::Expected<Tensor> &value = *loaded;
  if (!value)
    return llvm::createStringError("parameter '" + name.str() +
                                   "': " + llvm::toString(value.takeError()));
  if (!options.computeInF64)
    roundToElementType(*value);
  heldBytes += storageBytes(value->getShape()).value_or(0);
  return &parameters.insert({name, std::move(*value)}).first->second;
}

llvm::Error Executor::setParameter(llvm::StringRef name, Tensor value) {
  auto current = getParameter(name);
  if (!current)
    return current.takeError();
  if ((*current)->getType() != value.getType())
    return llvm::createStringError("parameter '" + name.str() + "' has type " +
                                   typeString(**current) + ", but got " +
                                   typeString(value));
  parameters[name] = std::move(value);
  return llvm::Error::success();
}

llvm::Expected<Tensor> Executor::evaluateConstant(Operation *op) {
  auto it = constants.find(op);
  if (it != constants.end())
    return it->second;
  ElementsAttr attr = cast<tx::ConstantOp>(op).getValue();
  // A splat constant is tiny in the IR, but the executor stores every
  // element: check its size before materializing it (twice: the cached
  // copy and the value).
  if (auto type = dyn_cast<RankedTensorType>(attr.getType())) {
    std::optional<uint64_t> bytes = storageBytes(type.getShape());
    if (bytes)
      bytes = llvm::checkedMulUnsigned<uint64_t>(*bytes, 2);
    std::string typeText;
    llvm::raw_string_ostream os(typeText);
    os << type;
    if (llvm::Error err = checkBudget("its value (" + typeText + ")", bytes,
                                      heldBytes + liveBytes))
      return opError(op, llvm::toString(std::move(err)));
  }
  auto value = Tensor::fromAttr(attr);
  if (!value)
    return opError(op, llvm::toString(value.takeError()));
  if (!options.computeInF64)
    roundToElementType(*value);
  heldBytes += storageBytes(value->getShape()).value_or(0);
  constants[op] = *value;
  return std::move(*value);
}

/// The first element of |tensor| that |check| rejects, as a message.
static std::optional<std::string> findNonFinite(const Tensor &tensor,
                                                FiniteCheck check) {
  if (!tensor.isFloat() || check == FiniteCheck::Off)
    return std::nullopt;
  const std::vector<double> &data = tensor.floats();
  for (int64_t i = 0, e = data.size(); i < e; ++i) {
    double v = data[i];
    bool bad = std::isnan(v) || (check == FiniteCheck::NonFinite && std::isinf(v));
    if (!bad)
      continue;
    // Multi-index of element i.
    llvm::SmallVector<int64_t, 4> index(tensor.getRank());
    int64_t rest = i;
    for (int64_t d = tensor.getRank() - 1; d >= 0; --d) {
      index[d] = rest % tensor.getShape()[d];
      rest /= tensor.getShape()[d];
    }
    std::string where;
    for (int64_t d = 0; d < tensor.getRank(); ++d)
      where += (d ? ", " : "") + std::to_string(index[d]);
    std::string what = std::isnan(v) ? "NaN" : (v > 0 ? "+inf" : "-inf");
    return "produced " + what + " at element [" + where + "] of " +
           typeString(tensor) + " (--check-finite)";
  }
  return std::nullopt;
}

llvm::Expected<bool> reference::evaluateOp(Operation *op,
                                           llvm::ArrayRef<const Tensor *> operands,
                                           llvm::SmallVectorImpl<Tensor> &results,
                                           const ExecutorOptions &options) {
  llvm::SmallVector<Tensor, 2> produced;
  KernelArgs args{llvm::SmallVector<const Tensor *, 4>(operands), produced,
                  options};
  bool handled = false;
  for (auto family : {evalElementwiseOp, evalShapeOp, evalLinalgOp,
                      evalReductionOp, evalTrainingOp, evalAttentionOp,
                      evalPrecisionOp, evalCollectiveOp}) {
    llvm::Expected<bool> done = family(op, args);
    if (!done)
      return done.takeError();
    if (*done) {
      handled = true;
      break;
    }
  }
  if (!handled)
    return false;
  if (produced.size() != op->getNumResults())
    return llvm::createStringError("internal error: kernel produced " +
                                   std::to_string(produced.size()) +
                                   " results");
  for (auto [result, tensor] : llvm::zip(op->getResults(), produced)) {
    if (tensor.getType() != result.getType())
      return llvm::createStringError("internal error: kernel produced " +
                                     typeString(tensor));
    if (!options.computeInF64 || !tensor.isFloat())
      roundToElementType(tensor);
  }
  results.assign(std::make_move_iterator(produced.begin()),
                 std::make_move_iterator(produced.end()));
  return true;
}

llvm::Error Executor::checkResultBudget(Operation &op) {
  if (isa<tx::ConstantOp>(op))
    return llvm::Error::success();
  std::optional<uint64_t> needed = 0;
  std::string types;
  for (Type type : op.getResultTypes()) {
    auto ranked = dyn_cast<RankedTensorType>(type);
    if (!ranked || !ranked.hasStaticShape())
      continue;
    std::optional<uint64_t> bytes = storageBytes(ranked.getShape());
    needed = needed && bytes ? llvm::checkedAddUnsigned(*needed, *bytes)
                             : std::nullopt;
    llvm::raw_string_ostream os(types);
    os << (types.empty() ? "" : ", ") << type;
  }
  if (llvm::Error err = checkBudget("its result (" + types + ")", needed,
                                    liveBytes + heldBytes))
    return opError(&op, llvm::toString(std::move(err)));
  return llvm::Error::success();
}

llvm::Error Executor::evaluate(Operation &op, const llvm::DenseMap<Value, Tensor> &values,
                               llvm::SmallVectorImpl<Tensor> &results) {
  if (isa<tx::ConstantOp>(op)) {
    auto value = evaluateConstant(&op);
    if (!value)
      return value.takeError();
    results.push_back(std::move(*value));
  } else if (auto load = dyn_cast<tx::LoadParameterOp>(op)) {
    auto value = getParameter(load.getName());
    if (!value)
      return opError(&op, llvm::toString(value.takeError()));
    if ((*value)->getType() != load.getType())
      return opError(&op, "parameter type " + typeString(**value) +
                              " does not match the result type");
    results.push_back(**value);
  } else {
    if (op.getNumRegions() != 0)
      return opError(&op, "ops with regions are not supported");
    llvm::SmallVector<const Tensor *, 4> operands;
    for (Value operand : op.getOperands()) {
      auto it = values.find(operand);
      if (it == values.end())
        return opError(&op, "operand is not a tensor computed in this block");
      operands.push_back(&it->second);
    }
    llvm::Expected<bool> handled = evaluateOp(&op, operands, results, options);
    if (!handled)
      return opError(&op, llvm::toString(handled.takeError()));
    if (!*handled)
      return llvm::createStringError(
          "unsupported op '" + op.getName().getStringRef().str() + "' at " +
          describeLocation(op.getLoc()) +
          ": the reference executor has no implementation for it");
  }
  return llvm::Error::success();
}

llvm::Expected<std::vector<Tensor>>
Executor::run(func::FuncOp func, llvm::ArrayRef<Tensor> arguments) {
  if (func.isExternal())
    return llvm::createStringError("function '" + func.getName().str() +
                                   "' has no body");
  if (!func.getBody().hasOneBlock())
    return llvm::createStringError("function '" + func.getName().str() +
                                   "' has more than one block");
  Block &block = func.getBody().front();
  if (arguments.size() != block.getNumArguments())
    return llvm::createStringError(
        "function '" + func.getName().str() + "' takes " +
        std::to_string(block.getNumArguments()) + " arguments, but got " +
        std::to_string(arguments.size()));

  // Remaining uses per value, so a tensor is dropped after its last use.
  llvm::DenseMap<Value, Tensor> values;
  llvm::DenseMap<Value, unsigned> remainingUses;
  auto countUses = [&](Value value) {
    unsigned uses = 0;
    for (OpOperand &use : value.getUses())
      if (use.getOwner()->getBlock() == &block)
        ++uses;
    remainingUses[value] = uses;
  };

  // Bytes held by live values (arguments and op results not yet dropped):
  // every op's results are checked against the memory budget on top of it
  // before the kernel allocates them.
  liveBytes = 0;
  auto bytesOf = [](const Tensor &tensor) {
    return storageBytes(tensor.getShape()).value_or(0);
  };
  for (auto [index, argument] : llvm::enumerate(block.getArguments())) {
    const Tensor &given = arguments[index];
    if (given.getType() != argument.getType()) {
      std::string expected;
      llvm::raw_string_ostream os(expected);
      os << argument.getType();
      return llvm::createStringError("argument #" + std::to_string(index) +
                                     ": expected " + expected + ", but got " +
                                     typeString(given));
    }
    Tensor value = given;
    if (!options.computeInF64)
      roundToElementType(value);
    liveBytes += bytesOf(value);
    values[argument] = std::move(value);
    countUses(argument);
  }

  for (Operation &op : block) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      std::vector<Tensor> results;
      for (Value operand : ret.getOperands())
        results.push_back(values.lookup(operand));
      return results;
    }

    llvm::SmallVector<Tensor, 2> results;
    if (llvm::Error err = checkResultBudget(op))
      return std::move(err);
    if (llvm::Error err = evaluate(op, values, results))
      return std::move(err);

    for (auto [result, tensor] : llvm::zip(op.getResults(), results)) {
      // evaluateOp has rounded kernel results; constants and parameters
      // are rounded here, as arguments are.
      if (isa<tx::ConstantOp, tx::LoadParameterOp>(op) &&
          (!options.computeInF64 || !tensor.isFloat()))
        roundToElementType(tensor);
      if (auto message = findNonFinite(tensor, options.checkFinite))
        return opError(&op, *message);
    }

    // Drop operands whose last use this was.
    for (Value operand : op.getOperands()) {
      auto it = remainingUses.find(operand);
      if (it != remainingUses.end() && --it->second == 0) {
        auto value = values.find(operand);
        if (value != values.end()) {
          liveBytes -= std::min(liveBytes, bytesOf(value->second));
          values.erase(value);
        }
      }
    }
    for (auto [result, tensor] : llvm::zip(op.getResults(), results)) {
      liveBytes += bytesOf(tensor);
      values[result] = std::move(tensor);
      countUses(result);
    }
  }
  return llvm::createStringError("function '" + func.getName().str() +
                                 "' does not end in func.return");
}
