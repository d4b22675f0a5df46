//===- import_fuzzer.cpp - libFuzzer target for the ONNX importer ---------===//
//
// SPDX-License-Identifier: Apache-2.0
// Feeds bytes to importONNXBytes and checks the importer's contract: it
// returns a module or a non-empty one-line error, and never crashes, hangs
// or trips a sanitizer. With a custom mutator that parses the input as a
// ModelProto and changes it structurally (dims, element types, attributes,
// node wiring, initializer data lengths, external-data records, opset and
// ir_version) before libFuzzer's byte-level mutations; inputs that do not
// parse get the byte-level ones only. Build and run: fuzz/run.sh.
//
//===----------------------------------------------------------------------===//

#include "txopt/Import/ONNX/ONNXImporter.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include "onnx/onnx_pb.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

extern "C" size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t maxSize);

namespace {

int64_t extremeInt(std::mt19937_64 &rng) {
  static const int64_t values[] = {0,  1,  -1, 2, 3, 7, 64, 1 << 20,
                                   int64_t(1) << 31, int64_t(1) << 40,
                                   -(int64_t(1) << 40), INT64_MAX, INT64_MIN,
                                   INT64_MAX - 1, INT64_MIN + 1};
  if (rng() % 3 == 0)
    return static_cast<int64_t>(rng());
  return values[rng() % (sizeof(values) / sizeof(values[0]))];
}

void mutateDims(google::protobuf::RepeatedField<int64_t> *dims,
                std::mt19937_64 &rng) {
  switch (rng() % 4) {
  case 0:
    if (!dims->empty())
      dims->Set(rng() % dims->size(), extremeInt(rng));
    break;
  case 1:
    dims->Add(extremeInt(rng) & 7);
    break;
  case 2:
    if (!dims->empty())
      dims->RemoveLast();
    break;
  default:
    if (!dims->empty())
      dims->Set(rng() % dims->size(), 1 + rng() % 8);
  }
}

void mutateValueInfo(onnx::ValueInfoProto *info, std::mt19937_64 &rng) {
  auto *tensor = info->mutable_type()->mutable_tensor_type();
  if (rng() % 4 == 0) {
    tensor->set_elem_type(rng() % 24);
    return;
  }
  auto *shape = tensor->mutable_shape();
  if (shape->dim_size() == 0 || rng() % 4 == 0) {
    shape->add_dim()->set_dim_value(1 + rng() % 4);
    return;
  }
  auto *dim = shape->mutable_dim(rng() % shape->dim_size());
  if (rng() % 5 == 0)
    dim->set_dim_param("n");
  else
    dim->set_dim_value(extremeInt(rng));
}

void mutateTensor(onnx::TensorProto *t, std::mt19937_64 &rng) {
  switch (rng() % 7) {
  case 0: {
    google::protobuf::RepeatedField<int64_t> dims = t->dims();
    mutateDims(&dims, rng);
    *t->mutable_dims() = dims;
    break;
  }
  case 1:
    t->set_data_type(rng() % 24);
    break;
  case 2: { // raw data length off by a few bytes, or cleared
    std::string raw = t->raw_data();
    if (rng() % 2 && !raw.empty())
      raw.resize(raw.size() - 1 - rng() % std::min<size_t>(raw.size(), 8));
    else
      raw.append(1 + rng() % 8, '\x7f');
    t->set_raw_data(raw);
    break;
  }
  case 3: // a second data field
    t->add_float_data(1.0f);
    t->add_int64_data(extremeInt(rng));
    break;
  case 4: { // external-data records
    t->set_data_location(onnx::TensorProto::EXTERNAL);
    auto *entry = t->add_external_data();
    static const char *keys[] = {"location", "offset", "length", "checksum"};
    static const char *values[] = {"w.bin", "../w.bin", "/etc/passwd", "-1",
                                   "18446744073709551615", "9223372036854775807",
                                   "0", "12", ""};
    entry->set_key(keys[rng() % 4]);
    entry->set_value(values[rng() % 9]);
    break;
  }
  case 5: { // a raw value at the int64 limits (indices, shapes, k)
    if (t->data_type() == onnx::TensorProto::INT64 && !t->raw_data().empty()) {
      std::string raw = t->raw_data();
      int64_t v = extremeInt(rng);
      size_t at = (rng() % (raw.size() / 8 + 1)) * 8;
      if (at + 8 <= raw.size())
        std::memcpy(&raw[at], &v, 8);
      t->set_raw_data(raw);
    }
    break;
  }
  default:
    t->set_data_location(static_cast<onnx::TensorProto::DataLocation>(rng() % 3));
  }
}

void mutateAttribute(onnx::NodeProto *node, std::mt19937_64 &rng) {
  static const char *names[] = {"axis", "axes", "perm", "split", "k", "upper",
                                "keepdims", "num_outputs", "to", "mode",
                                "epsilon", "ratio", "seed", "value", "pads",
                                "allowzero", "batch_dims", "bogus"};
  if (node->attribute_size() > 0 && rng() % 2) {
    auto *attr = node->mutable_attribute(rng() % node->attribute_size());
    switch (rng() % 5) {
    case 0: attr->set_i(extremeInt(rng)); break;
    case 1: attr->add_ints(extremeInt(rng)); break;
    case 2: attr->set_type(static_cast<onnx::AttributeProto::AttributeType>(rng() % 14)); break;
    case 3: attr->set_f(rng() % 2 ? 1e30f : -0.0f); break;
    default: if (attr->has_t()) mutateTensor(attr->mutable_t(), rng);
    }
    return;
  }
  auto *attr = node->add_attribute();
  attr->set_name(names[rng() % (sizeof(names) / sizeof(names[0]))]);
  if (rng() % 2) {
    attr->set_type(onnx::AttributeProto::INT);
    attr->set_i(extremeInt(rng));
  } else {
    attr->set_type(onnx::AttributeProto::INTS);
    for (int i = 0, n = rng() % 4; i < n; ++i)
      attr->add_ints(extremeInt(rng));
  }
}

void mutateModel(onnx::ModelProto &model, std::mt19937_64 &rng) {
  onnx::GraphProto *graph = model.mutable_graph();
  switch (rng() % 10) {
  case 0:
    if (graph->input_size())
      mutateValueInfo(graph->mutable_input(rng() % graph->input_size()), rng);
    break;
  case 1:
    if (graph->output_size())
      mutateValueInfo(graph->mutable_output(rng() % graph->output_size()), rng);
    break;
  case 2:
    if (graph->initializer_size())
      mutateTensor(graph->mutable_initializer(rng() % graph->initializer_size()), rng);
    break;
  case 3:
  case 4:
    if (graph->node_size())
      mutateAttribute(graph->mutable_node(rng() % graph->node_size()), rng);
    break;
  case 5: { // rewire: a node input reads another value
    if (graph->node_size() < 2)
      break;
    auto *node = graph->mutable_node(rng() % graph->node_size());
    const auto &other = graph->node(rng() % graph->node_size());
    if (node->input_size() && other.output_size())
      node->set_input(rng() % node->input_size(), other.output(0));
    break;
  }
  case 6: { // drop or duplicate an input
    if (!graph->node_size())
      break;
    auto *node = graph->mutable_node(rng() % graph->node_size());
    if (node->input_size() && rng() % 2)
      node->mutable_input()->RemoveLast();
    else if (node->input_size())
      node->add_input(node->input(0));
    break;
  }
  case 7:
    if (model.opset_import_size())
      model.mutable_opset_import(0)->set_version(11 + rng() % 14);
    break;
  case 8:
    model.set_ir_version(rng() % 4 ? 3 + rng() % 10 : extremeInt(rng));
    break;
  default:
    if (graph->node_size()) { // a Constant node's tensor
      auto *node = graph->mutable_node(rng() % graph->node_size());
      for (auto &attr : *node->mutable_attribute())
        if (attr.has_t())
          mutateTensor(attr.mutable_t(), rng);
    }
  }
}

} // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size,
                                          size_t maxSize, unsigned int seed) {
  std::mt19937_64 rng(seed);
  onnx::ModelProto model;
  if (rng() % 4 != 0 && model.ParseFromArray(data, static_cast<int>(size))) {
    for (int i = 0, n = 1 + rng() % 3; i < n; ++i)
      mutateModel(model, rng);
    std::string out;
    if (model.SerializeToString(&out) && out.size() <= maxSize) {
      std::memcpy(data, out.data(), out.size());
      return out.size();
    }
  }
  return LLVMFuzzerMutate(data, size, maxSize);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // The importer loads the dialects it builds (tx, func) itself.
  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  mlir::txopt::ONNXImportOptions options;
  mlir::txopt::ONNXImportInfo info;
  std::string error;
  // No external data can be found in a folder that does not exist; the
  // path checks still run on every record.
  auto module = mlir::txopt::importONNXBytes(
      context, llvm::StringRef(reinterpret_cast<const char *>(data), size),
      "/nonexistent-txopt-fuzz/model.onnx", options, info, error);
  if (module) {
    if (mlir::failed(mlir::verify(*module))) {
      std::fprintf(stderr, "import returned a module that does not verify\n");
      std::abort();
    }
    return 0;
  }
  if (error.empty() || error.find('\n') != std::string::npos) {
    std::fprintf(stderr, "import failed without a one-line error: '%s'\n",
                 error.c_str());
    std::abort();
  }
  return 0;
}
