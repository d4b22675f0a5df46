//===- Weights.cpp - txopt --weights: start from a checkpoint -------------===//
//
// SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "Weights.h"

#include "txopt/Dialect/Tx/IR/TxOps.h"
#include "txopt/Dialect/Tx/Transforms/Passes.h"
#include "txopt/Reference/Npy.h"

#include "core/checkpoint.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Regex.h"

#include <sstream>

using namespace mlir;

namespace {

/// The safetensors dtype a checkpoint holds a parameter of |type| in, or ""
/// when --weights cannot load one: checkpoints store BOOL one byte an
/// element, MLIR's raw i1 buffers one bit.
std::string weightDType(Type type) {
  std::string dtype = txopt::reference::safetensorsDType(type);
  return dtype == "BOOL" ? "" : dtype;
}

std::string shapeText(ArrayRef<int64_t> shape) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < shape.size(); ++i)
    os << (i ? ", " : "") << shape[i];
  os << "]";
  return os.str();
}

} // namespace

/// When |name| is a copy tx-untie-parameters made, the words that say so
/// and how to keep the model tied as the checkpoint's was; else "".
static std::string untiedFrom(mlir::ModuleOp module, llvm::StringRef name) {
  auto untied = module->getAttrOfType<mlir::DictionaryAttr>(
      mlir::txopt::tx::kUntiedParametersAttrName);
  if (!untied)
    return "";
  std::string original, all;
  for (mlir::NamedAttribute entry : untied.getValue()) {
    all += (all.empty() ? "" : "|") + llvm::Regex::escape(entry.getName());
    for (mlir::Attribute copy : mlir::cast<mlir::ArrayAttr>(entry.getValue()))
      if (mlir::cast<mlir::StringAttr>(copy).getValue() == name)
        original = entry.getName().str();
  }
  if (original.empty())
    return "";
  return "untied from '" + original +
         "': a checkpoint of the model trained tied loads with --tie='^(" +
         all + ")$'; or ";
}

int txopt_cli::loadWeights(ModuleOp module, const std::string &dir, std::string &error) {
  txrt::Checkpoint checkpoint;
  if (txrt::Status st = txrt::loadCheckpoint(dir, checkpoint); !st.ok()) {
    error = "--weights: " + st.message();
    return -1;
  }
  llvm::StringMap<txopt::tx::ParameterOp> params;
  for (auto param : module.getOps<txopt::tx::ParameterOp>())
    params[param.getSymName()] = param;
  // First check everything, then change the module: a refused checkpoint
  // leaves it as imported.
  std::vector<std::pair<txopt::tx::ParameterOp, const txrt::CheckpointTensor *>> updates;
  llvm::StringMap<bool> inCheckpoint;
  for (const txrt::CheckpointTensor &t : checkpoint.tensors) {
    if (t.role != "param")
      continue;
    inCheckpoint[t.name] = true;
    auto it = params.find(t.name);
    if (it == params.end()) {
      error = "--weights: checkpoint tensor '" + t.name +
              "' is no parameter of the model (a checkpoint of another model?)";
      return -1;
    }
    txopt::tx::ParameterOp param = it->second;
    RankedTensorType type = param.getType();
    std::string dtype = weightDType(type.getElementType());
    if (std::vector<int64_t>(type.getShape().begin(), type.getShape().end()) != t.shape) {
      error = "--weights: tensor '" + t.name + "': the checkpoint's shape " +
              shapeText(t.shape) + " is not the model's " + shapeText(type.getShape());
      return -1;
    }
    if (dtype != t.dtype) {
      std::string modelType;
      llvm::raw_string_ostream(modelType) << type.getElementType();
      error = "--weights: tensor '" + t.name + "': the checkpoint holds " + t.dtype +
              ", the model's parameter is " + modelType +
              (t.dtype == "F32" && dtype == "BF16"
                   ? " (the f32 master weights of a bf16 export: not converted)"
                   : "");
      return -1;
    }
    updates.emplace_back(param, &t);
  }
  // In module order, so the error names the same tensor every time.
  for (txopt::tx::ParameterOp param : module.getOps<txopt::tx::ParameterOp>()) {
    if (!param.getFrozen() && !inCheckpoint.count(param.getSymName())) {
      error = "--weights: the checkpoint has no tensor '" +
              param.getSymName().str() +
              "', a trainable parameter of the model (" +
              untiedFrom(module, param.getSymName()) +
              "a checkpoint of another model, or one trained with it frozen?)";
      return -1;
    }
  }
  for (auto [param, t] : updates) {
    // Checkpoints are little-endian row-major, MLIR's raw buffer layout
    // on the little-endian hosts txopt builds for.
    auto bytes = ArrayRef<char>(reinterpret_cast<const char *>(t->bytes.data()),
                                t->bytes.size());
    auto value = DenseElementsAttr::getFromRawBuffer(param.getType(), bytes);
    param.setInitialValueAttr(cast<ElementsAttr>(value));
    param.removeSourceAttr();
  }
  return static_cast<int>(updates.size());
}
