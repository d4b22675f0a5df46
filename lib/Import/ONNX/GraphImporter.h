//===- GraphImporter.h - the ONNX graph walk, shared by its files --*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// GraphImporter turns one ModelProto into a tx module. Its model and graph
// checks (GraphChecks.cpp: IR version, opsets, schemas, names, the node
// order) and its import steps (ONNXImporter.cpp: inputs, initializers,
// nodes, outputs) live in two files; this header is what they share.
// Private to lib/Import/ONNX.
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_LIB_IMPORT_ONNX_GRAPHIMPORTER_H
#define TXOPT_LIB_IMPORT_ONNX_GRAPHIMPORTER_H

#include "ImporterInternal.h"

#include "txopt/Import/ONNX/ONNXImporter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringSet.h"

#include <algorithm>
#include <string>
#include <vector>

namespace mlir::txopt::onnx_import {

/// True for the default ONNX domain ("" or "ai.onnx").
bool isDefaultDomain(llvm::StringRef domain);
/// The key ONNXImportInfo::opsIn uses: op_type, domain-qualified off ai.onnx.
std::string qualifiedOpType(const onnx::NodeProto &node);
/// How errors name node |index|: by its name, else by position and output.
std::string nodeLabel(const onnx::NodeProto &node, int index);
/// The PyTorch module a node comes from, as a dotted path ("h.0.ln_2"), or
/// "" when the exporter did not say. The dynamo exporter lists the scopes in
/// the metadata `pkg.torch.onnx.name_scopes` (the last entry is the aten
/// call, the one before it the module); the TorchScript exporter names nodes
/// "/h.0/ln_2/LayerNormalization". The importer makes it the child of the
/// node's NameLoc, where tx-untie-parameters finds it to name a weight it
/// unties after the module that reads it.
std::string moduleScope(const onnx::NodeProto &node);

class GraphImporter {
public:
  GraphImporter(MLIRContext &context, const ONNXImportOptions &options,
                ONNXImportInfo &info, llvm::StringRef baseDir,
                llvm::StringRef sourceName)
      : context(context), options(options), info(info), builder(&context),
        sourceName(sourceName.str()) {
    shared.baseDir = baseDir.str();
  }

  OwningOpRef<ModuleOp> import(const onnx::ModelProto &model, std::string &error);

private:
  LogicalResult fail(const llvm::Twine &message) {
    if (shared.error.empty()) {
      shared.error = message.str();
      std::replace(shared.error.begin(), shared.error.end(), '\n', ' ');
    }
    return failure();
  }

  LogicalResult checkModel(const onnx::ModelProto &model);
  LogicalResult checkNodes(const onnx::GraphProto &graph);
  LogicalResult checkNames(const onnx::GraphProto &graph);
  LogicalResult sortNodes(const onnx::GraphProto &graph);
  FailureOr<RankedTensorType> inputType(const onnx::ValueInfoProto &input);
  LogicalResult importInitializers(const onnx::GraphProto &graph, ModuleOp module);
  FailureOr<bool> importSourcedParameter(const onnx::TensorProto &init,
                                         const std::string &what,
                                         ModuleOp module,
                                         OpBuilder &moduleBuilder);
  LogicalResult importNodes(const onnx::GraphProto &graph);
  LogicalResult importOutputs(const onnx::GraphProto &graph, func::FuncOp func);
  void removeDeadCode(ModuleOp module, func::FuncOp func);

  MLIRContext &context;
  const ONNXImportOptions &options;
  ONNXImportInfo &info;
  OpBuilder builder;
  std::string sourceName;
  NodeImporter::Shared shared;
  int64_t opset = 0;

  /// Values by ONNX name (graph inputs, initializers, node outputs).
  llvm::StringMap<Value> values;
  /// Initializer names, and graph inputs that are not initializers.
  llvm::StringSet<> initializerNames;
  /// Names read by some node or returned by the graph.
  llvm::StringSet<> usedNames;
  /// Node indices in a topological order.
  std::vector<int> order;
};

} // namespace mlir::txopt::onnx_import

#endif // TXOPT_LIB_IMPORT_ONNX_GRAPHIMPORTER_H
