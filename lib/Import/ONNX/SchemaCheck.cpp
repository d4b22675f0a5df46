//===- SchemaCheck.cpp - validate nodes against their opset's schema ------===//
//
// SPDX-License-Identifier: Apache-2.0
// Before any IR is built, every default-domain node is checked against the
// schema of its op at the model's opset: no attribute the op does not define
// at that opset (Split's `split` attribute from opset 13 on, a `ratio`
// attribute on Dropout), every attribute of the kind the schema says, input
// and output counts in range. Where libonnx knows the opset (its C++
// schemas; opsets up to 17 for ONNX 1.12) OpSchema::Verify does it; past
// that, the importer's own table of the attributes each supported op
// defines at opsets 18 to kMaxOpset does the attribute part (and at any
// opset where libonnx has no schema for the op).
//
//===----------------------------------------------------------------------===//

#include "ImporterInternal.h"

#include "llvm/ADT/StringMap.h"

#include "onnx/checker.h"
#include "onnx/defs/schema.h"

#include <algorithm>
#include <cstdint>

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::onnx_import;

namespace {

enum Kind : int {
  kFloat = onnx::AttributeProto::FLOAT,
  kInt = onnx::AttributeProto::INT,
  kString = onnx::AttributeProto::STRING,
  kTensor = onnx::AttributeProto::TENSOR,
  kSparse = onnx::AttributeProto::SPARSE_TENSOR,
  kFloats = onnx::AttributeProto::FLOATS,
  kInts = onnx::AttributeProto::INTS,
  kStrings = onnx::AttributeProto::STRINGS,
};

struct AttrSpec {
  const char *name;
  int kind;
  int64_t since = 0;        ///< first opset that defines it (0: all supported)
  int64_t until = INT64_MAX; ///< last opset that defines it
};

/// The attributes of each supported default-domain op at opsets kMinOpset
/// to kMaxOpset (from the ONNX operator docs); used where libonnx's schemas
/// stop, and after them (some of them accept any attribute). Ops
/// without attributes have no entry.
const llvm::StringMap<std::vector<AttrSpec>> &attributeTable() {
  static const llvm::StringMap<std::vector<AttrSpec>> table = {
      {"Mod", {{"fmod", kInt}}},
      {"Cast", {{"to", kInt}, {"saturate", kInt, 19}, {"round_mode", kString, 24}}},
      {"Gemm", {{"alpha", kFloat}, {"beta", kFloat}, {"transA", kInt}, {"transB", kInt}}},
      {"Gather", {{"axis", kInt}}},
      {"GatherElements", {{"axis", kInt}}},
      {"GatherND", {{"batch_dims", kInt}}},
      {"Reshape", {{"allowzero", kInt, 14}}},
      {"Flatten", {{"axis", kInt}}},
      {"Transpose", {{"perm", kInts}}},
      {"Split", {{"axis", kInt}, {"split", kInts, 0, 12}, {"num_outputs", kInt, 18}}},
      {"Squeeze", {{"axes", kInts, 0, 12}}},
      {"Unsqueeze", {{"axes", kInts, 0, 12}}},
      {"Concat", {{"axis", kInt}}},
      {"Pad", {{"mode", kString}}},
      {"Trilu", {{"upper", kInt}}},
      {"ReduceMean", {{"keepdims", kInt}, {"axes", kInts, 0, 17},
                      {"noop_with_empty_axes", kInt, 18}}},
      {"ReduceSum", {{"keepdims", kInt}, {"axes", kInts, 0, 12},
                     {"noop_with_empty_axes", kInt, 13}}},
      {"ReduceMax", {{"keepdims", kInt}, {"axes", kInts, 0, 17},
                     {"noop_with_empty_axes", kInt, 18}}},
      {"CumSum", {{"exclusive", kInt}, {"reverse", kInt}}},
      {"Softmax", {{"axis", kInt}}},
      {"LayerNormalization", {{"axis", kInt}, {"epsilon", kFloat}, {"stash_type", kInt}}},
      {"RMSNormalization", {{"axis", kInt}, {"epsilon", kFloat}, {"stash_type", kInt}}},
      {"Gelu", {{"approximate", kString}}},
      {"Attention",
       {{"is_causal", kInt}, {"kv_num_heads", kInt}, {"q_num_heads", kInt},
        {"qk_matmul_output_mode", kInt}, {"scale", kFloat}, {"softcap", kFloat},
        {"softmax_precision", kInt}, {"left_window_size", kInt, 25},
        {"right_window_size", kInt, 25}}},
      {"SoftmaxCrossEntropyLoss", {{"ignore_index", kInt}, {"reduction", kString}}},
      {"Dropout", {{"ratio", kFloat, 0, 11}, {"seed", kInt, 12}}},
      {"Shape", {{"start", kInt, 15}, {"end", kInt, 15}}},
      {"ConstantOfShape", {{"value", kTensor}}},
      {"Range", {{"stash_type", kInt, 27}}},
      {"Constant",
       {{"value", kTensor}, {"sparse_value", kSparse}, {"value_float", kFloat},
        {"value_floats", kFloats}, {"value_int", kInt}, {"value_ints", kInts},
        {"value_string", kString}, {"value_strings", kStrings}}},
  };
  return table;
}

const char *kindName(int kind) {
  switch (kind) {
  case kFloat: return "a float";
  case kInt: return "an int";
  case kString: return "a string";
  case kTensor: return "a tensor";
  case kSparse: return "a sparse tensor";
  case kFloats: return "a list of floats";
  case kInts: return "a list of ints";
  case kStrings: return "a list of strings";
  case onnx::AttributeProto::GRAPH: return "a graph";
  default: return "of another kind";
  }
}

/// The newest default-domain opset libonnx's schemas describe.
int64_t lastKnownOpset() {
  const auto &map = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  auto it = map.find(onnx::ONNX_DOMAIN);
  return it == map.end() ? 0 : it->second.second;
}

std::string oneLine(std::string text) {
  // ValidationError may carry an appended "==> Context: ..." block.
  size_t context = text.find("\n\n==> Context:");
  if (context != std::string::npos)
    text.resize(context);
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

} // namespace

LogicalResult onnx_import::checkNodeSchema(const onnx::NodeProto &node,
                                           int64_t opset,
                                           const std::string &label,
                                           std::string &error) {
  if (!node.domain().empty() && node.domain() != "ai.onnx")
    return success();
  // Names first: a duplicated attribute would let the two readers (schema
  // and importer) see different values.
  for (int i = 0; i < node.attribute_size(); ++i)
    for (int j = 0; j < i; ++j)
      if (node.attribute(i).name() == node.attribute(j).name()) {
        error = label + ": attribute " + quote(node.attribute(i).name()) +
                " is given twice";
        return failure();
      }

  const onnx::OpSchema *schema =
      opset <= lastKnownOpset()
          ? onnx::OpSchemaRegistry::Schema(node.op_type(), static_cast<int>(opset))
          : nullptr;
  // An op newer than the model's opset (Where at opset 7) is not in the
  // model's language, though the importer would read it.
  if (!schema && opset <= lastKnownOpset() &&
      onnx::OpSchemaRegistry::Schema(node.op_type(), static_cast<int>(lastKnownOpset()))) {
    error = label + ": " + node.op_type() + " is not defined at opset " +
            std::to_string(opset);
    return failure();
  }
  if (schema) {
    try {
      // Verify reads the node's domain-less op_type; a node in "ai.onnx"
      // is the same op.
      if (node.domain() == "ai.onnx") {
        onnx::NodeProto copy = node;
        copy.clear_domain();
        schema->Verify(copy);
      } else {
        schema->Verify(node);
      }
    } catch (const std::exception &e) {
      error = label + ": invalid for " + node.op_type() + " at opset " +
              std::to_string(opset) + " (its schema from opset " +
              std::to_string(schema->SinceVersion()) + "): " + oneLine(e.what());
      return failure();
    }
    // Some of libonnx's schemas accept any attribute (LayerNormalization
    // in ONNX 1.12); the table below still applies.
  }

  auto it = attributeTable().find(node.op_type());
  for (const onnx::AttributeProto &attr : node.attribute()) {
    const AttrSpec *spec = nullptr;
    if (it != attributeTable().end())
      for (const AttrSpec &candidate : it->second)
        if (attr.name() == candidate.name && opset >= candidate.since &&
            opset <= candidate.until)
          spec = &candidate;
    if (!spec) {
      error = label + ": attribute " + quote(attr.name()) + " is not defined by " +
              node.op_type() + " at opset " + std::to_string(opset);
      return failure();
    }
    int kind = NodeImporter::attrKind(attr);
    if (attr.ref_attr_name().empty() && kind != spec->kind &&
        !(kind == onnx::AttributeProto::UNDEFINED &&
          (spec->kind == kInts || spec->kind == kFloats ||
           spec->kind == kStrings))) {
      error = label + ": attribute " + quote(attr.name()) + " must be " +
              kindName(spec->kind) + ", but is " + kindName(kind);
      return failure();
    }
  }
  return success();
}

std::pair<const onnx::NodeProto *, int>
onnx_import::firstOpChangedBefore(const onnx::GraphProto &graph, int64_t opset) {
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto &node = graph.node(i);
    if (node.domain().empty() || node.domain() == "ai.onnx") {
      // Schema(op, v) is the op's newest definition at or below v; the same
      // schema at both opsets means the op did not change in between.
      const onnx::OpSchema *old =
          onnx::OpSchemaRegistry::Schema(node.op_type(), static_cast<int>(opset));
      const onnx::OpSchema *current = onnx::OpSchemaRegistry::Schema(
          node.op_type(), static_cast<int>(kMinOpset));
      if (!old || !current || old->SinceVersion() != current->SinceVersion())
        return {&node, i};
    }
    for (const onnx::AttributeProto &attr : node.attribute()) {
      if (attr.has_g())
        if (auto found = firstOpChangedBefore(attr.g(), opset); found.first)
          return found;
      for (const onnx::GraphProto &g : attr.graphs())
        if (auto found = firstOpChangedBefore(g, opset); found.first)
          return found;
    }
  }
  return {nullptr, 0};
}
