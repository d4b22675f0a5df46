//===- ONNXImporter.cpp - ONNX model -> tx module -------------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// The graph walk: load the model, validate it (GraphChecks.cpp), bind graph
// inputs to static types, turn initializers into parameters or constants,
// translate each node in order (ONNXOpImporters.cpp and the *Importers.cpp
// files), and return the graph outputs. GraphImporter.h declares the class.
//
// Error contract: every failure is one line that names the node, input,
// initializer or field at fault. ONNX (parser) and protobuf code may throw;
// the two API functions catch everything, and nothing below asserts on
// input (this LLVM is built without assertions anyway, so a bad value would
// not stop at an assert; it is validated before use instead).
//
//===----------------------------------------------------------------------===//

#include "txopt/Import/ONNX/ONNXImporter.h"
#include "txopt/Dialect/Tx/IR/StepContract.h"

#include "GraphImporter.h"
#include "ImporterInternal.h"

#include "txopt/Dialect/Tx/IR/TxDialect.h"
#include "txopt/Dialect/Tx/IR/TxOps.h"
#include "txopt/Dialect/Tx/IR/WeightSource.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Transforms/RegionUtils.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <google/protobuf/unknown_field_set.h>

#include "onnx/defs/parser.h"

#include <google/protobuf/io/coded_stream.h>

#include <climits>
#include <cmath>
#include <cstring>
#include <queue>

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::onnx_import;

namespace mlir::txopt::onnx_import {

bool isDefaultDomain(llvm::StringRef domain) {
  return domain.empty() || domain == "ai.onnx";
}

/// The key ONNXImportInfo::opsIn uses: op_type, domain-qualified off ai.onnx.
std::string qualifiedOpType(const onnx::NodeProto &node) {
  if (isDefaultDomain(node.domain()))
    return node.op_type();
  return node.domain() + "." + node.op_type();
}

/// How errors name node |index|: by its name, else by position and output.
std::string nodeLabel(const onnx::NodeProto &node, int index) {
  std::string op = escape(qualifiedOpType(node));
  if (!node.name().empty())
    return "node " + quote(node.name()) + " (" + op + ")";
  std::string label = "node #" + std::to_string(index) + " (" + op;
  if (node.output_size() > 0 && !node.output(0).empty())
    label += ", output " + quote(node.output(0));
  return label + ")";
}

std::string moduleScope(const onnx::NodeProto &node) {
  // NodeProto.metadata_props (field 9, IR version 10) is newer than the
  // ONNX 1.12 schema we build against: protobuf keeps it as an unknown field.
  constexpr int kMetadataPropsField = 9;
  const google::protobuf::UnknownFieldSet &unknown = node.unknown_fields();
  for (int i = 0; i < unknown.field_count(); ++i) {
    const google::protobuf::UnknownField &field = unknown.field(i);
    onnx::StringStringEntryProto entry;
    if (field.number() != kMetadataPropsField ||
        field.type() != google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED ||
        !entry.ParseFromString(field.length_delimited()) ||
        entry.key() != "pkg.torch.onnx.name_scopes")
      continue;
    // A Python list literal of quoted names: ['', 'h', 'h.0', 'layer_norm'].
    llvm::SmallVector<std::string> scopes;
    llvm::StringRef rest = entry.value();
    while (true) {
      size_t open = rest.find_first_of("'\"");
      if (open == llvm::StringRef::npos)
        break;
      char quoteChar = rest[open];
      size_t close = rest.find(quoteChar, open + 1);
      if (close == llvm::StringRef::npos)
        break;
      scopes.push_back(rest.slice(open + 1, close).str());
      rest = rest.drop_front(close + 1);
    }
    return scopes.size() >= 2 ? scopes[scopes.size() - 2] : std::string();
  }
  llvm::StringRef name = node.name();
  if (!name.consume_front("/"))
    return "";
  llvm::SmallVector<llvm::StringRef> parts;
  name.split(parts, '/');
  parts.pop_back(); // the op's own name
  return llvm::join(parts, ".");
}

} // namespace mlir::txopt::onnx_import

namespace {

/// True when |value| has a non-finite element or one at least half the
/// largest finite value of its type: attention masks use -inf or the type's
/// lowest value (torch.finfo(dtype).min); trained weights never get there.
bool isMaskLike(DenseElementsAttr value) {
  auto floatType = llvm::cast<FloatType>(value.getElementType());
  double limit =
      APFloat::getLargest(floatType.getFloatSemantics()).convertToDouble() / 2;
  auto bad = [limit](double v) { return !std::isfinite(v) || std::fabs(v) >= limit; };
  if (floatType.isF32()) {
    for (float v : value.getValues<float>())
      if (bad(v))
        return true;
    return false;
  }
  if (floatType.isF64()) {
    for (double v : value.getValues<double>())
      if (bad(v))
        return true;
    return false;
  }
  for (const APFloat &v : value.getValues<APFloat>())
    if (bad(v.convertToDouble()))
      return true;
  return false;
}

/// isMaskLike over little-endian raw elements of |type| (a sample of a
/// parameter kept in its file).
bool isMaskLikeBytes(FloatType type, llvm::ArrayRef<char> bytes) {
  unsigned width = type.getWidth();
  size_t elementBytes = width / 8;
  double limit =
      APFloat::getLargest(type.getFloatSemantics()).convertToDouble() / 2;
  for (size_t i = 0; i + elementBytes <= bytes.size(); i += elementBytes) {
    uint64_t raw = 0;
    std::memcpy(&raw, bytes.data() + i, elementBytes);
    double v;
    if (width == 32) {
      float f;
      std::memcpy(&f, &raw, 4);
      v = f;
    } else if (width == 64) {
      std::memcpy(&v, &raw, 8);
    } else {
      APFloat value(type.getFloatSemantics(), APInt(width, raw));
      v = value.convertToDouble();
    }
    if (!std::isfinite(v) || std::fabs(v) >= limit)
      return true;
  }
  return false;
}

} // namespace

namespace mlir::txopt::onnx_import {

/// A graph input's static type: the model's dims, with symbolic ones (and
/// any the user overrides) taken from --input-shape.
FailureOr<RankedTensorType>
GraphImporter::inputType(const onnx::ValueInfoProto &input) {
  std::string what = "graph input " + quote(input.name());
  if (!input.type().has_tensor_type())
    return fail(what + " is not a tensor");
  const onnx::TypeProto::Tensor &tensor = input.type().tensor_type();
  Type elementType = convertElementType(&context, tensor.elem_type());
  if (!elementType)
    return fail(what + " has unsupported element type " +
                dataTypeName(tensor.elem_type()));
  auto given = options.inputShapes.find(input.name());
  std::string hint = " (give it with --input-shape " + input.name() + "=...)";
  llvm::SmallVector<int64_t> dims;
  if (!tensor.has_shape()) {
    if (given == options.inputShapes.end())
      return fail(what + " has no shape" + hint);
    dims.assign(given->second.begin(), given->second.end());
  } else {
    int rank = tensor.shape().dim_size();
    if (given != options.inputShapes.end() &&
        static_cast<int>(given->second.size()) != rank)
      return fail(what + " has rank " + std::to_string(rank) +
                  ", but --input-shape gives " + std::to_string(given->second.size()) +
                  " dims");
    for (int d = 0; d < rank; ++d) {
      const onnx::TensorShapeProto::Dimension &dim = tensor.shape().dim(d);
      std::optional<int64_t> size;
      if (dim.has_dim_value())
        size = dim.dim_value();
      if (given != options.inputShapes.end()) {
        int64_t override = given->second[d];
        if (size && *size != override)
          return fail(what + " dim " + std::to_string(d) + " is " +
                      std::to_string(*size) + " in the model, but --input-shape gives " +
                      std::to_string(override));
        size = override;
      }
      if (!size) {
        std::string symbol = dim.has_dim_param() && !dim.dim_param().empty()
                                 ? " (" + quote(dim.dim_param()) + ")"
                                 : "";
        return fail(what + " dim " + std::to_string(d) + symbol +
                    " is symbolic; give its size with --input-shape " +
                    input.name() + "=...");
      }
      dims.push_back(*size);
    }
  }
  for (auto [d, size] : llvm::enumerate(dims))
    if (size < 0)
      return fail(what + " dim " + std::to_string(d) + " is " + std::to_string(size) +
                  "; tx needs positive sizes");
  if (!checkedNumElements(dims))
    return fail(what + " has shape " + tx::formatShape(dims) +
                ", more than 2^40 elements");
  return RankedTensorType::get(dims, elementType);
}

/// Float initializers are weights: module-level tx.parameter read through
/// tx.load_parameter. Exceptions, so that fusion and folding see constants:
///  * one-element (or empty) float initializers (epsilon, scales) are
///    tx.constant;
///  * float initializers with a non-finite or saturated value (attention
///    masks built from -inf or finfo.min) are `frozen` parameters: state,
///    but never trained;
///  * integer and bool initializers (shapes, indices) are tx.constant.
/// Unused initializers are skipped (and reported as warnings).
LogicalResult GraphImporter::importInitializers(const onnx::GraphProto &graph,
                                                ModuleOp module) {
  // Parameters go before the function, in initializer order.
  OpBuilder moduleBuilder(module.getBodyRegion());
  for (const onnx::TensorProto &init : graph.initializer()) {
    std::string what = "initializer " + quote(init.name());
    if (!usedNames.contains(init.name())) {
      shared.warnings.push_back(what + " is not used; dropped");
      continue;
    }
    std::string error;
    if (init.data_location() == onnx::TensorProto::EXTERNAL &&
        !options.inlineWeights) {
      FailureOr<bool> sourced = importSourcedParameter(init, what, module,
                                                         moduleBuilder);
      if (failed(sourced))
        return failure();
      if (*sourced)
        continue;
    }
    auto value = convertTensor(&context, init, {shared.baseDir, what}, error);
    if (failed(value))
      return fail(error);
    Location loc = NameLoc::get(builder.getStringAttr(init.name()));
    bool isFloat = llvm::isa<FloatType>(value->getElementType());
    if (!isFloat || value->getNumElements() <= 1) {
      Value &cached = shared.constants[*value];
      if (!cached)
        cached = tx::ConstantOp::create(builder, loc, *value);
      values[init.name()] = cached;
      continue;
    }
    bool frozen = isMaskLike(*value);
    info.numFrozenParameters += frozen;
    tx::ParameterOp::create(moduleBuilder, loc, llvm::StringRef(init.name()),
                            llvm::cast<ElementsAttr>(*value), frozen);
    values[init.name()] =
        tx::LoadParameterOp::create(builder, loc, value->getType(), init.name());
    ++info.numParameters;
    info.numParameterElements += value->getNumElements();
  }
  return success();
}

/// An external float initializer of more than one element becomes a
/// parameter that refers to its bytes (`source`), which are not read: the
/// importer only folds tx.constant operands, and a parameter never is one.
/// Only the mask test reads anything: the first and last kMaskSampleBytes.
/// A causal or sliding-window mask masks the future, so its first row (at
/// the start of the data) holds a masked value; a trained weight has no
/// value anywhere near the type's largest. Returns false, having done
/// nothing, for initializers that stay on the dense path (integers, bools,
/// scalars).
FailureOr<bool> GraphImporter::importSourcedParameter(const onnx::TensorProto &init,
                                                      const std::string &what,
                                                      ModuleOp module,
                                                      OpBuilder &moduleBuilder) {
  std::string error;
  FailureOr<RankedTensorType> type =
      convertTensorType(&context, init, {shared.baseDir, what}, error);
  if (failed(type))
    return fail(error);
  auto floatType = llvm::dyn_cast<FloatType>(type->getElementType());
  if (!floatType || type->getNumElements() <= 1 ||
      tx::weightElementBytes(floatType) == 0)
    return false;
  uint64_t numBytes = rawTensorBytes(*type);
  FailureOr<ExternalLocation> located =
      locateExternalData(init, shared.baseDir, what, numBytes, error);
  if (failed(located))
    return fail(error);

  constexpr uint64_t kMaskSampleBytes = 4096;
  uint64_t elementBytes = tx::weightElementBytes(floatType);
  uint64_t sample = std::min(numBytes, kMaskSampleBytes / elementBytes * elementBytes);
  std::vector<char> head(sample), tail(sample);
  if (llvm::Error err = tx::readWeightFile(located->file, located->offset, head))
    return fail(what + " " + llvm::toString(std::move(err)));
  if (llvm::Error err = tx::readWeightFile(
          located->file, located->offset + numBytes - sample, tail))
    return fail(what + " " + llvm::toString(std::move(err)));
  bool frozen = isMaskLikeBytes(floatType, head) || isMaskLikeBytes(floatType, tail);

  if (!module->hasAttr(tx::kModelDirAttrName)) {
    llvm::SmallString<256> dir;
    if (std::error_code ec = llvm::sys::fs::real_path(
            shared.baseDir.empty() ? "." : shared.baseDir, dir))
      return fail(what + " has external data, but the model's folder " +
                  quote(shared.baseDir) + " cannot be resolved: " + ec.message());
    module->setAttr(tx::kModelDirAttrName, builder.getStringAttr(dir));
  }
  Location loc = NameLoc::get(builder.getStringAttr(init.name()));
  auto source = tx::WeightSourceAttr::get(
      &context, located->file.location, located->offset, located->length);
  tx::ParameterOp::create(moduleBuilder, loc, llvm::StringRef(init.name()),
                          *type, source, frozen);
  values[init.name()] =
      tx::LoadParameterOp::create(builder, loc, *type, init.name());
  ++info.numParameters;
  info.numFrozenParameters += frozen;
  info.numParameterElements += type->getNumElements();
  ++info.numSourcedParameters;
  info.numSourcedBytes += numBytes;
  return true;
}

LogicalResult GraphImporter::importNodes(const onnx::GraphProto &graph) {
  llvm::StringMap<unsigned> unsignedValues = findUnsignedValues(graph, order);
  for (int index : order) {
    const onnx::NodeProto &node = graph.node(index);
    std::string label = nodeLabel(node, index);
    std::string locName = !node.name().empty() ? node.name()
                          : node.output_size() > 0 && !node.output(0).empty()
                              ? node.output(0)
                              : "node#" + std::to_string(index);
    Location loc = NameLoc::get(builder.getStringAttr(locName));
    if (std::string scope = moduleScope(node); !scope.empty())
      loc = NameLoc::get(builder.getStringAttr(locName),
                         NameLoc::get(builder.getStringAttr(scope)));
    llvm::SmallVector<Value> inputs;
    for (const std::string &input : node.input())
      inputs.push_back(input.empty() ? Value() : values.lookup(input));
    llvm::SmallVector<bool> used;
    for (const std::string &output : node.output())
      used.push_back(!output.empty() && usedNames.contains(output));
    NodeImporter importer(builder, node, label, loc, opset, inputs, used, shared);
    if (failed(importNodeWithSignedness(importer, node.domain(), unsignedValues)))
      return failure();
    for (auto [i, output] : llvm::enumerate(node.output())) {
      Value result = importer.getResults()[i];
      if (result)
        values[output] = result;
      else if (used[i])
        return fail(label + ": output " + quote(output) +
                    " is used, but the import does not produce it");
    }
  }
  return success();
}

/// Returns the graph outputs, checking the element types the model
/// declares; a differing static shape is only a warning, as in onnxruntime.
LogicalResult GraphImporter::importOutputs(const onnx::GraphProto &graph,
                                           func::FuncOp func) {
  llvm::SmallVector<Value> results;
  llvm::SmallVector<Attribute> resultAttrs;
  for (const onnx::ValueInfoProto &output : graph.output()) {
    Value value = values.lookup(output.name());
    std::string what = "graph output " + quote(output.name());
    if (!value)
      return fail(what + " is not produced");
    auto type = llvm::cast<RankedTensorType>(value.getType());
    if (output.type().has_tensor_type()) {
      const onnx::TypeProto::Tensor &declared = output.type().tensor_type();
      if (declared.elem_type() != 0) {
        Type elementType = convertElementType(&context, declared.elem_type());
        if (elementType != type.getElementType())
          return fail(what + " is declared " + dataTypeName(declared.elem_type()) +
                      ", but the graph computes another element type");
      }
      if (declared.has_shape()) {
        bool same = declared.shape().dim_size() == type.getRank();
        for (int d = 0; same && d < declared.shape().dim_size(); ++d)
          if (declared.shape().dim(d).has_dim_value() &&
              declared.shape().dim(d).dim_value() != type.getDimSize(d))
            same = false;
        if (!same) {
          std::string declaredShape = "[";
          for (int d = 0; d < declared.shape().dim_size(); ++d) {
            const auto &dim = declared.shape().dim(d);
            declaredShape += (d ? ", " : "");
            declaredShape += dim.has_dim_value()
                                 ? std::to_string(dim.dim_value())
                                 : std::string("?");
          }
          declaredShape += "]";
          std::string message = what + " is declared with shape " +
                                declaredShape + ", but the graph computes " +
                                tx::formatShape(type.getShape());
          if (!options.allowShapeMismatch)
            return fail(message + " (--allow-shape-mismatch accepts it)");
          shared.warnings.push_back(message);
        }
      }
    }
    results.push_back(value);
    resultAttrs.push_back(builder.getDictionaryAttr(
        builder.getNamedAttr(tx::kNameAttrName, builder.getStringAttr(output.name()))));
  }
  func::ReturnOp::create(builder, func.getLoc(), results);
  func.setFunctionType(builder.getFunctionType(
      func.getFunctionType().getInputs(), ValueRange(results).getTypes()));
  func.setAllResultAttrs(resultAttrs);
  return success();
}

/// Drops ops whose results nobody reads (constants folded away, loads of
/// weights only Shape looked at, dead branches), then parameters no load
/// reads any more.
void GraphImporter::removeDeadCode(ModuleOp module, func::FuncOp func) {
  Block &body = func.getBody().front();
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
    if (isOpTriviallyDead(&op))
      op.erase();
  llvm::StringSet<> loaded;
  func.walk([&](tx::LoadParameterOp load) { loaded.insert(load.getName()); });
  for (auto parameter : llvm::make_early_inc_range(module.getOps<tx::ParameterOp>()))
    if (!loaded.contains(parameter.getSymName())) {
      shared.warnings.push_back("initializer " + quote(parameter.getSymName()) +
                                " does not affect any graph output; dropped");
      --info.numParameters;
      info.numFrozenParameters -= parameter.getFrozen();
      info.numParameterElements -= parameter.getType().getNumElements();
      if (tx::WeightSourceAttr source = parameter.getSourceAttr()) {
        --info.numSourcedParameters;
        info.numSourcedBytes -= source.getLength();
      }
      parameter.erase();
    }
  if (info.numSourcedParameters == 0)
    module->removeAttr(tx::kModelDirAttrName);
}

OwningOpRef<ModuleOp> GraphImporter::import(const onnx::ModelProto &model,
                                            std::string &error) {
  context.getOrLoadDialect<tx::TxDialect>();
  context.getOrLoadDialect<func::FuncDialect>();
  // Inference and verifier errors arrive as diagnostics; keep the first so
  // the failing node can report it in its one line.
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    if (diag.getSeverity() == DiagnosticSeverity::Error && shared.diagnostic.empty())
      shared.diagnostic = diag.str();
    return success();
  });
  auto finish = [&](OwningOpRef<ModuleOp> module) -> OwningOpRef<ModuleOp> {
    info.warnings.insert(info.warnings.end(), shared.warnings.begin(),
                         shared.warnings.end());
    if (!module)
      error = shared.error.empty() ? "import failed" : shared.error;
    return module;
  };

  if (failed(checkModel(model)))
    return finish(nullptr);
  const onnx::GraphProto &graph = model.graph();
  if (failed(checkNodes(graph)) || failed(checkNames(graph)) ||
      failed(sortNodes(graph)))
    return finish(nullptr);
  for (const auto &entry : options.inputShapes) {
    bool known = false;
    for (const onnx::ValueInfoProto &input : graph.input())
      known |= input.name() == entry.first &&
               !initializerNames.contains(entry.first);
    if (!known) {
      (void)fail("--input-shape names " + quote(entry.first) +
           ", which is not a graph input");
      return finish(nullptr);
    }
  }

  Location moduleLoc = NameLoc::get(builder.getStringAttr(sourceName));
  OwningOpRef<ModuleOp> module = ModuleOp::create(moduleLoc);
  (*module)->setAttr("tx.source", builder.getStringAttr(
                                      llvm::sys::path::filename(sourceName)));
  (*module)->setAttr("tx.opset", builder.getI64IntegerAttr(opset));
  (*module)->setAttr("tx.producer", builder.getStringAttr(info.producer));

  llvm::SmallVector<Type> argTypes;
  llvm::SmallVector<Attribute> argAttrs;
  llvm::SmallVector<std::string> argNames;
  for (const onnx::ValueInfoProto &input : graph.input()) {
    if (initializerNames.contains(input.name()))
      continue;
    auto type = inputType(input);
    if (failed(type))
      return finish(nullptr);
    argTypes.push_back(*type);
    argNames.push_back(input.name());
    argAttrs.push_back(builder.getDictionaryAttr(
        builder.getNamedAttr(tx::kNameAttrName, builder.getStringAttr(input.name()))));
  }
  builder.setInsertionPointToEnd(module->getBody());
  auto func = func::FuncOp::create(builder, moduleLoc, options.functionName,
                                   builder.getFunctionType(argTypes, {}));
  func.setAllArgAttrs(argAttrs);
  Block *entry = func.addEntryBlock();
  for (auto [i, name] : llvm::enumerate(argNames)) {
    entry->getArgument(i).setLoc(NameLoc::get(builder.getStringAttr(name)));
    values[name] = entry->getArgument(i);
  }
  builder.setInsertionPointToStart(entry);
  if (failed(importInitializers(graph, *module)) || failed(importNodes(graph)) ||
      failed(importOutputs(graph, func)))
    return finish(nullptr);
  removeDeadCode(*module, func);

  shared.diagnostic.clear();
  if (failed(mlir::verify(*module))) {
    (void)fail("internal error: the imported module does not verify: " +
         shared.diagnostic);
    return finish(nullptr);
  }
  return finish(std::move(module));
}

} // namespace mlir::txopt::onnx_import

namespace {

/// Runs |body| with every exception turned into a one-line error.
template <typename Fn>
OwningOpRef<ModuleOp> guarded(std::string &error, Fn body) {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    error = "out of memory while importing the model";
  } catch (const std::exception &e) {
    error = std::string("internal error while importing the model: ") + e.what();
    std::replace(error.begin(), error.end(), '\n', ' ');
  } catch (...) {
    error = "internal error while importing the model: unknown exception";
  }
  return nullptr;
}

std::string parentDir(llvm::StringRef path) {
  llvm::StringRef parent = llvm::sys::path::parent_path(path);
  return parent.empty() ? "." : parent.str();
}

/// Parses and imports the serialized model |bytes| (read from |path|, whose
/// folder external data is relative to). Exceptions reach the caller's
/// guarded().
OwningOpRef<ModuleOp> importModelBytes(MLIRContext &context,
                                       llvm::StringRef bytes,
                                       llvm::StringRef path,
                                       const ONNXImportOptions &options,
                                       ONNXImportInfo &info, std::string &error);

} // namespace

OwningOpRef<ModuleOp> mlir::txopt::importONNXFile(MLIRContext &context,
                                                  llvm::StringRef path,
                                                  const ONNXImportOptions &options,
                                                  ONNXImportInfo &info,
                                                  std::string &error) {
  return guarded(error, [&]() -> OwningOpRef<ModuleOp> {
    auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                              /*RequiresNullTerminator=*/false);
    if (!buffer) {
      error = "cannot read " + quote(path) + ": " + buffer.getError().message();
      return nullptr;
    }
    return importModelBytes(context, (*buffer)->getBuffer(), path, options,
                            info, error);
  });
}

OwningOpRef<ModuleOp> mlir::txopt::importONNXBytes(MLIRContext &context,
                                                   llvm::StringRef bytes,
                                                   llvm::StringRef path,
                                                   const ONNXImportOptions &options,
                                                   ONNXImportInfo &info,
                                                   std::string &error) {
  return guarded(error, [&]() -> OwningOpRef<ModuleOp> {
    return importModelBytes(context, bytes, path, options, info, error);
  });
}

namespace {
OwningOpRef<ModuleOp> importModelBytes(MLIRContext &context,
                                       llvm::StringRef bytes,
                                       llvm::StringRef path,
                                       const ONNXImportOptions &options,
                                       ONNXImportInfo &info,
                                       std::string &error) {
  {
    if (bytes.empty()) {
      error = quote(path) + " is empty, not an ONNX model";
      return nullptr;
    }
    if (bytes.size() > static_cast<size_t>(INT_MAX)) {
      error = quote(path) + " is larger than 2 GiB; protobuf cannot parse it "
                            "(store the weights as external data)";
      return nullptr;
    }
    onnx::ModelProto model;
    google::protobuf::io::CodedInputStream stream(
        reinterpret_cast<const uint8_t *>(bytes.data()),
        static_cast<int>(bytes.size()));
    stream.SetTotalBytesLimit(INT_MAX);
    if (!model.ParseFromCodedStream(&stream) || !stream.ConsumedEntireMessage()) {
      error = quote(path) + " is not a valid ONNX model: protobuf parsing "
                            "failed (truncated or corrupt file?)";
      return nullptr;
    }
    GraphImporter importer(context, options, info, parentDir(path), path);
    return importer.import(model, error);
  }
}
} // namespace

OwningOpRef<ModuleOp> mlir::txopt::importONNXText(MLIRContext &context,
                                                  llvm::StringRef text,
                                                  llvm::StringRef sourceName,
                                                  const ONNXImportOptions &options,
                                                  ONNXImportInfo &info,
                                                  std::string &error) {
  return guarded(error, [&]() -> OwningOpRef<ModuleOp> {
    // The parser reads a NUL-terminated string; a NUL inside would silently
    // cut the model short.
    if (text.contains('\0')) {
      error = quote(sourceName) + " contains a NUL byte; it is not ONNX text";
      return nullptr;
    }
    std::string buffer = text.str();
    onnx::ModelProto model;
    onnx::Common::Status status;
    try {
      status = onnx::OnnxParser::Parse(model, buffer.c_str());
    } catch (const std::exception &e) {
      // The parser converts literals with std::stof/stoll, which throw on
      // out-of-range or malformed numbers ("1e400", "-inf").
      error = quote(sourceName) +
              ": invalid ONNX text: a numeric literal cannot be converted (" +
              e.what() + ")";
      return nullptr;
    }
    if (!status.IsOK()) {
      std::string message = status.ErrorMessage();
      std::replace(message.begin(), message.end(), '\n', ' ');
      error = quote(sourceName) + ": invalid ONNX text: " + message;
      return nullptr;
    }
    // The text header (`<ir_version: 8, ...>`) is optional.
    if (!model.has_ir_version())
      model.set_ir_version(kDefaultTextIrVersion);
    GraphImporter importer(context, options, info, parentDir(sourceName),
                           sourceName);
    return importer.import(model, error);
  });
}
