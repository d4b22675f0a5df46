//===- GraphChecks.cpp - validate an ONNX model before importing it -------===//
//
// SPDX-License-Identifier: Apache-2.0
// GraphImporter's checks, run before any IR is built: the model's IR
// version and opsets (checkModel), every node against its op's schema
// (checkNodes, SchemaCheck.cpp), unique and defined names (checkNames), and
// a topological order of the nodes that rejects cycles (sortNodes). Each
// failure is one line naming the field, node or value at fault. Split out
// of ONNXImporter.cpp, which keeps the import steps.
//
//===----------------------------------------------------------------------===//

#include "GraphImporter.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"

#include <climits>
#include <queue>

using namespace mlir;
using namespace mlir::txopt;

namespace mlir::txopt::onnx_import {

LogicalResult GraphImporter::checkModel(const onnx::ModelProto &model) {
  if (!model.has_graph())
    return fail("the model has no graph (empty or truncated file?)");
  // IR versions 3 (the first with opset_import) to kMaxIrVersion; the text
  // form may leave it out (importONNXText supplies a default).
  if (!model.has_ir_version())
    return fail("ir_version is missing");
  if (model.ir_version() < kMinIrVersion || model.ir_version() > kMaxIrVersion)
    return fail("ir_version " + std::to_string(model.ir_version()) +
                " is not an ONNX IR version txopt reads (" +
                std::to_string(kMinIrVersion) + " to " +
                std::to_string(kMaxIrVersion) + ")");
  std::optional<int64_t> found;
  for (const onnx::OperatorSetIdProto &entry : model.opset_import()) {
    if (!isDefaultDomain(entry.domain()))
      continue;
    if (found && *found != entry.version())
      return fail("opset_import lists the default domain twice (" +
                  std::to_string(*found) + " and " +
                  std::to_string(entry.version()) + ")");
    found = entry.version();
  }
  if (!found) {
    // A graph of other domains' ops only (ai.onnx.preview.training's Adam)
    // needs no default-domain opset; its attributes are read as the newest.
    for (const onnx::NodeProto &node : model.graph().node())
      if (isDefaultDomain(node.domain()))
        return fail("opset_import has no default-domain (ai.onnx) opset");
    found = kMaxOpset;
  }
  opset = *found;
  info.opset = opset;
  std::string producer = model.producer_name();
  if (!model.producer_version().empty())
    producer += (producer.empty() ? "" : " ") + model.producer_version();
  info.producer = producer;
  // Older models are not converted here: onnx's version converter does it
  // (and knows every op's history), so the message says how. A model whose
  // ops all have the same definition at its opset as at kMinOpset (Not,
  // unchanged since opset 1) means the same read at kMinOpset, and is.
  if (opset >= 1 && opset < kMinOpset) {
    auto [changed, index] = firstOpChangedBefore(model.graph(), opset);
    if (changed)
      return fail("opset_import: default-domain opset " + std::to_string(opset) +
                  " is older than txopt reads (" + std::to_string(kMinOpset) +
                  " to " + std::to_string(kMaxOpset) + "), and " +
                  nodeLabel(*changed, index) + " is defined differently there " +
                  "than at opset " + std::to_string(kMinOpset) +
                  "; upgrade the model first, e.g. with "
                  "onnx.version_converter.convert_version(model, 13)");
    opset = kMinOpset;
  }
  if (opset < kMinOpset)
    return fail("opset_import: default-domain opset " + std::to_string(opset) +
                " is older than txopt reads (" + std::to_string(kMinOpset) +
                " to " + std::to_string(kMaxOpset) +
                "); upgrade the model first, e.g. with "
                "onnx.version_converter.convert_version(model, 13)");
  if (opset > kMaxOpset)
    return fail("opset_import: unsupported default-domain opset " +
                std::to_string(opset) + " (txopt supports " +
                std::to_string(kMinOpset) + " to " + std::to_string(kMaxOpset) +
                ")");
  if (model.graph().sparse_initializer_size() > 0)
    return fail("initializer " +
                quote(model.graph().sparse_initializer(0).values().name()) +
                ": sparse initializers are not supported");
  return success();
}

/// Rejects unknown domains and ops, and ops newer than the model's opset,
/// before any IR is built; counts ops for the report.
LogicalResult GraphImporter::checkNodes(const onnx::GraphProto &graph) {
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto &node = graph.node(i);
    std::string label = nodeLabel(node, i);
    if (node.op_type().empty())
      return fail(label + ": op_type is empty");
    ++info.opsIn[qualifiedOpType(node)];
    llvm::StringRef domain = node.domain();
    if (!isDefaultDomain(domain) && domain != "com.microsoft" &&
        domain != "ai.onnx.preview.training")
      return fail(label + ": unknown domain " + quote(domain));
    if (!isSupportedOp(domain, node.op_type()))
      return fail(label + ": unsupported op " + quote(qualifiedOpType(node)));
    if (isDefaultDomain(domain)) {
      int64_t since = minimumOpsetFor(node.op_type());
      if (since > opset)
        return fail(label + ": " + node.op_type() + " needs opset " +
                    std::to_string(since) + ", but the model imports opset " +
                    std::to_string(opset));
      int64_t oldest = oldestReadableOpsetFor(node.op_type());
      if (opset < oldest)
        return fail(label + ": " + node.op_type() + " at opset " +
                    std::to_string(opset) +
                    " has the older form that txopt does not read (it reads "
                    "opset " + std::to_string(oldest) +
                    " and newer); upgrade the model first, e.g. with "
                    "onnx.version_converter.convert_version(model, 13)");
      std::string error;
      if (failed(checkNodeSchema(node, opset, label, error)))
        return fail(error);
    }
  }
  return success();
}

/// Every name defined once; every name read is defined somewhere.
LogicalResult GraphImporter::checkNames(const onnx::GraphProto &graph) {
  llvm::StringMap<std::string> definedBy;
  auto define = [&](const std::string &name, const std::string &what) {
    auto [it, inserted] = definedBy.try_emplace(name, what);
    if (!inserted)
      return fail("value " + quote(name) + " is defined twice (by " +
                  it->second + " and " + what + ")");
    return success();
  };
  for (const onnx::TensorProto &init : graph.initializer()) {
    if (init.name().empty())
      return fail("an initializer has no name");
    if (init.name() == options.functionName)
      return fail("initializer " + quote(init.name()) +
                  " has the name of the imported function");
    if (failed(define(init.name(), "initializer " + quote(init.name()))))
      return failure();
    initializerNames.insert(init.name());
  }
  for (const onnx::ValueInfoProto &input : graph.input()) {
    if (input.name().empty())
      return fail("a graph input has no name");
    // Before IR version 4 initializers were also listed as inputs.
    if (initializerNames.contains(input.name()))
      continue;
    if (failed(define(input.name(), "graph input " + quote(input.name()))))
      return failure();
  }
  for (int i = 0; i < graph.node_size(); ++i)
    for (const std::string &output : graph.node(i).output())
      if (!output.empty() &&
          failed(define(output, nodeLabel(graph.node(i), i))))
        return failure();
  for (int i = 0; i < graph.node_size(); ++i)
    for (const std::string &input : graph.node(i).input()) {
      if (input.empty())
        continue;
      if (!definedBy.count(input))
        return fail(nodeLabel(graph.node(i), i) + ": input " + quote(input) +
                    " is not a graph input, initializer or node output");
      usedNames.insert(input);
    }
  if (graph.output_size() == 0)
    return fail("the graph has no outputs");
  for (const onnx::ValueInfoProto &output : graph.output()) {
    if (!definedBy.count(output.name()))
      return fail("graph output " + quote(output.name()) +
                  " is not a graph input, initializer or node output");
    usedNames.insert(output.name());
  }
  return success();
}

/// Kahn's algorithm, taking ready nodes in file order so that a sorted graph
/// keeps its order. Leftover nodes sit on or behind a cycle; walking
/// producers from one of them must revisit a node, which is on the cycle.
LogicalResult GraphImporter::sortNodes(const onnx::GraphProto &graph) {
  int n = graph.node_size();
  llvm::StringMap<int> producer;
  for (int i = 0; i < n; ++i)
    for (const std::string &output : graph.node(i).output())
      if (!output.empty())
        producer[output] = i;
  std::vector<std::vector<int>> consumers(n);
  std::vector<int> pending(n, 0);
  for (int i = 0; i < n; ++i) {
    llvm::DenseSet<int> seen;
    for (const std::string &input : graph.node(i).input()) {
      auto it = producer.find(input);
      if (input.empty() || it == producer.end() || !seen.insert(it->second).second)
        continue;
      consumers[it->second].push_back(i);
      ++pending[i];
    }
  }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int i = 0; i < n; ++i)
    if (pending[i] == 0)
      ready.push(i);
  while (!ready.empty()) {
    int i = ready.top();
    ready.pop();
    order.push_back(i);
    for (int consumer : consumers[i])
      if (--pending[consumer] == 0)
        ready.push(consumer);
  }
  if (static_cast<int>(order.size()) == n)
    return success();
  int current = 0;
  while (pending[current] == 0)
    ++current;
  std::vector<bool> visited(n, false);
  while (!visited[current]) {
    visited[current] = true;
    for (const std::string &input : graph.node(current).input()) {
      auto it = producer.find(input);
      if (!input.empty() && it != producer.end() && pending[it->second] > 0) {
        current = it->second;
        break;
      }
    }
  }
  return fail("the graph has a cycle through " +
              nodeLabel(graph.node(current), current));
}

} // namespace mlir::txopt::onnx_import
