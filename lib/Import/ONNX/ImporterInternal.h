//===- ImporterInternal.h - shared pieces of the ONNX importer --*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// Declarations shared by the ONNX importer's translation units: protobuf
// accessors that validate what they read, external-data loading, the per-node
// importer interface the op mappings use, and the import-time evaluator.
// Nothing here is installed; the public API is ONNXImporter.h.
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_LIB_IMPORT_ONNX_IMPORTERINTERNAL_H
#define TXOPT_LIB_IMPORT_ONNX_IMPORTERINTERNAL_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/Twine.h"

#include "txopt/Dialect/Tx/IR/WeightSource.h"

#include "onnx/onnx_pb.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir::txopt::onnx_import {

//===----------------------------------------------------------------------===//
// Limits
//===----------------------------------------------------------------------===//

/// Largest element count any tensor may have (2^40, about 4 TiB of f32). A
/// larger count is a corrupt or hostile file, not a model, and products of
/// dims below this bound cannot overflow int64.
constexpr int64_t kMaxTensorElements = int64_t(1) << 40;

/// Largest non-splat result the import-time evaluator materializes. Shape
/// computations are tiny; anything bigger stays a runtime op so that the IR
/// text does not balloon with folded data (splats fold at any size).
constexpr int64_t kMaxFoldElements = int64_t(1) << 16;

/// ONNX IR versions a model may declare: 3 introduced opset_import, and
/// 14 is the newest the onnx package this was checked with writes. Models
/// in ONNX text that leave the header out get kDefaultTextIrVersion.
constexpr int64_t kMinIrVersion = 3;
constexpr int64_t kMaxIrVersion = 14;
constexpr int64_t kDefaultTextIrVersion = 8;

/// Supported default-domain (ai.onnx) opsets. Opset 7 is where the
/// elementwise ops took numpy broadcasting (before it, a `broadcast`/`axis`
/// attribute pair aligned operands differently); from 7 on, every supported
/// op either has the semantics of its opset-13 form or is read in its older
/// spelling (attribute axes/splits/pads, coerced-2D Softmax), except those
/// oldestReadableOpsetFor() names. 28 is the newest opset of the onnx
/// package this was checked against (1.23); opsets 24-28 changed the
/// supported ops only by new element types and two attributes (Cast's
/// round_mode, for float8e8m0 only; Range's stash_type), both handled.
constexpr int64_t kMinOpset = 7;
constexpr int64_t kMaxOpset = 28;

//===----------------------------------------------------------------------===//
// Protobuf helpers (ProtoUtils.cpp)
//===----------------------------------------------------------------------===//

/// Quotes |name| for a one-line diagnostic: wraps it in single quotes and
/// escapes control and non-ASCII bytes, so a hostile name cannot break the
/// "one line" promise of the error contract.
std::string quote(llvm::StringRef name);
/// |name| escaped as by quote(), without the quotes (for op types).
std::string escape(llvm::StringRef name);

/// Human-readable ONNX data type name ("float", "int64", "data type 99").
std::string dataTypeName(int32_t dataType);

/// Maps an ONNX TensorProto data type to an MLIR element type, or returns a
/// null type when tx cannot represent it (strings, complex, 4-bit types).
Type convertElementType(MLIRContext *context, int32_t dataType);

/// Number of elements of |dims|, or std::nullopt when a dim is negative or
/// the count exceeds kMaxTensorElements.
std::optional<int64_t> checkedNumElements(llvm::ArrayRef<int64_t> dims);

/// |value| rounded to nearest even in |type|'s semantics.
llvm::APFloat roundedFloat(FloatType type, double value);

/// Where a tensor's bytes may come from and how to describe it in errors.
struct TensorSource {
  /// Folder that external data paths are relative to (and may not leave).
  std::string baseDir;
  /// Describes the tensor in errors, e.g. "initializer 'w'".
  std::string what;
};

/// Converts |tensor| into a DenseElementsAttr after validating data_type,
/// dims, the data field in use and its length (raw, typed or external).
FailureOr<DenseElementsAttr> convertTensor(MLIRContext *context,
                                           const onnx::TensorProto &tensor,
                                           const TensorSource &source,
                                           std::string &error);

/// The type |tensor| declares (data_type and dims validated as by
/// convertTensor), without touching its data.
FailureOr<RankedTensorType> convertTensorType(MLIRContext *context,
                                              const onnx::TensorProto &tensor,
                                              const TensorSource &source,
                                              std::string &error);

/// Bytes a tensor of |type| takes in ONNX raw/external storage.
uint64_t rawTensorBytes(RankedTensorType type);

/// Where the external bytes of a tensor are: a checked file and range.
struct ExternalLocation {
  tx::WeightFile file;
  uint64_t offset = 0;
  uint64_t length = 0;
};

/// Validates the external_data entries of |tensor| (location, offset,
/// length, |numBytes| of them), resolves the file under |baseDir| with the
/// rules of readExternalData and checks the range against its size, without
/// reading the data.
FailureOr<ExternalLocation> locateExternalData(const onnx::TensorProto &tensor,
                                               llvm::StringRef baseDir,
                                               llvm::StringRef what,
                                               uint64_t numBytes,
                                               std::string &error);

/// Reads the external bytes of |tensor| (|numBytes| of them) from a file
/// under |baseDir|. Rejects locations that are absolute, contain "..", or
/// resolve (through symlinks) outside |baseDir|, and files shorter than the
/// declared offset + length. |what| names the tensor in errors.
LogicalResult readExternalData(const onnx::TensorProto &tensor,
                               llvm::StringRef baseDir, llvm::StringRef what,
                               uint64_t numBytes, std::vector<char> &bytes,
                               std::string &error);

//===----------------------------------------------------------------------===//
// Per-node import context (ONNXImporter.cpp)
//===----------------------------------------------------------------------===//

/// What an op mapping sees of the node it translates: operands as MLIR
/// values, typed attribute accessors that report malformed attributes, and
/// `create`, which builds a tx op, infers and verifies its result types, and
/// folds it when all operands are constants. Every accessor that fails has
/// already recorded the node's one-line error; callers just propagate.
class NodeImporter {
public:
  /// What every node of one import shares.
  struct Shared {
    /// First MLIR error reported since it was last cleared (the importer's
    /// diagnostic handler writes it); op inference and verifiers speak here.
    std::string diagnostic;
    /// The import's one-line error; the first failure sets it.
    std::string error;
    /// Non-fatal observations, copied into ONNXImportInfo::warnings.
    std::vector<std::string> warnings;
    /// Folder that external data (initializers and Constant tensors) must
    /// stay in.
    std::string baseDir;
    /// tx.constant ops by value. The function is one block built front to
    /// back, so an earlier constant dominates every later use; reusing it
    /// keeps repeated folded values (per-layer scales, shapes) to one op.
    llvm::DenseMap<Attribute, Value> constants;
  };

  NodeImporter(OpBuilder &builder, const onnx::NodeProto &node,
               std::string label, Location loc, int64_t opset,
               llvm::SmallVector<Value> inputs,
               llvm::SmallVector<bool> outputUsed, Shared &shared)
      : builder(builder), node(node), label(std::move(label)), loc(loc),
        opset(opset), shared(shared), inputs(std::move(inputs)),
        outputUsed(std::move(outputUsed)), results(node.output_size()) {}

  OpBuilder &builder;
  const onnx::NodeProto &node;
  /// "node 'name' (OpType)", or "node #3 (OpType, output 'y')" if unnamed.
  const std::string label;
  const Location loc;
  /// The model's default-domain opset.
  const int64_t opset;
  Shared &shared;

  MLIRContext *getContext() { return builder.getContext(); }

  //--- Errors -------------------------------------------------------------//

  /// Records "<label>: <message>" as the import error; returns failure.
  LogicalResult fail(const llvm::Twine &message);
  /// Records a non-fatal "<label>: <message>".
  void warn(const llvm::Twine &message);

  //--- Operands -----------------------------------------------------------//

  unsigned numInputs() const { return inputs.size(); }
  /// True when input |i| is present (ONNX marks omitted optionals with "").
  bool has(unsigned i) const { return i < inputs.size() && inputs[i]; }
  Value input(unsigned i) const { return inputs[i]; }
  /// Makes |value| input |i| (UnsignedInts.cpp's zero-extended operands).
  void replaceInput(unsigned i, Value value) { inputs[i] = value; }
  RankedTensorType type(unsigned i) const {
    return llvm::cast<RankedTensorType>(inputs[i].getType());
  }
  /// Fails unless at least |min| and at most |max| inputs are given and
  /// the first |min| are present.
  LogicalResult expectInputs(unsigned min, unsigned max);
  /// The contents of input |i| when it folded to a constant; null otherwise.
  DenseElementsAttr constantInput(unsigned i) const;
  /// The integer contents of input |i|, which must be constant: shape
  /// operands (Reshape's shape, Slice's starts, ...) are static in tx.
  FailureOr<llvm::SmallVector<int64_t>> constantInts(unsigned i,
                                                     llvm::StringRef what);
  /// A one-element constant input as double (Pad value, Dropout ratio).
  FailureOr<double> constantScalar(unsigned i, llvm::StringRef what);

  //--- Attributes ---------------------------------------------------------//

  const onnx::AttributeProto *findAttr(llvm::StringRef name) const;
  FailureOr<int64_t> attrInt(llvm::StringRef name, int64_t defaultValue);
  FailureOr<std::optional<int64_t>> attrOptionalInt(llvm::StringRef name);
  FailureOr<float> attrFloat(llvm::StringRef name, float defaultValue);
  FailureOr<std::string> attrString(llvm::StringRef name,
                                    llvm::StringRef defaultValue);
  FailureOr<std::optional<llvm::SmallVector<int64_t>>>
  attrInts(llvm::StringRef name);
  FailureOr<const onnx::TensorProto *> attrTensor(llvm::StringRef name);
  /// The attribute's kind, with ONNX's pre-IR-3 "type not set" handled.
  static int attrKind(const onnx::AttributeProto &attr);

  //--- Results ------------------------------------------------------------//

  unsigned numOutputs() const { return node.output_size(); }
  /// True when output |i| is named and read by a node or a graph output.
  bool isOutputUsed(unsigned i) const {
    return i < outputUsed.size() && outputUsed[i];
  }
  /// Fails when output |i| is used: for outputs tx has no equivalent of
  /// (LayerNormalization's Mean, Dropout's training mask, ...).
  LogicalResult rejectUsedOutput(unsigned i, llvm::StringRef what);
  void setResult(unsigned i, Value value) { results[i] = value; }
  llvm::ArrayRef<Value> getResults() const { return results; }

  //--- Op creation --------------------------------------------------------//

  /// Builds op |name| with |operands| and inherent |attrs|. With empty
  /// |resultTypes| the op must implement InferTypeOpInterface and gets
  /// |numResults| inferred results. The op is verified; when every operand
  /// is a tx.constant it is evaluated and replaced by constants. Returns the
  /// results (of the op or its constants).
  FailureOr<llvm::SmallVector<Value>>
  create(llvm::StringRef name, ValueRange operands,
         llvm::ArrayRef<NamedAttribute> attrs, TypeRange resultTypes = {},
         unsigned numResults = 1);
  template <typename OpTy>
  FailureOr<Value> createOne(ValueRange operands,
                             llvm::ArrayRef<NamedAttribute> attrs = {},
                             Type resultType = {}) {
    auto values = create(OpTy::getOperationName(), operands, attrs,
                         resultType ? TypeRange(resultType) : TypeRange());
    if (failed(values))
      return failure();
    return (*values)[0];
  }
  /// A tx.constant holding |value| (an existing one when there is one).
  Value constant(DenseElementsAttr value);
  /// A 0-d tx.constant of |type| holding |value| rounded to nearest even.
  Value floatScalar(FloatType type, double value);
  /// A 0-d tx.constant of the integer type |type| holding |value|.
  Value intScalar(Type type, int64_t value);

  NamedAttribute named(llvm::StringRef name, Attribute value) {
    return builder.getNamedAttr(name, value);
  }

private:
  llvm::SmallVector<Value> inputs;
  llvm::SmallVector<bool> outputUsed;
  llvm::SmallVector<Value> results;
};

//===----------------------------------------------------------------------===//
// Op mappings (ONNXOpImporters.cpp, NormLossImporters.cpp,
// ConstantImporters.cpp)
//===----------------------------------------------------------------------===//

/// Sets output 0 of |n| from a created op, propagating failure.
inline LogicalResult setOne(NodeImporter &n, FailureOr<Value> value) {
  if (failed(value))
    return failure();
  n.setResult(0, *value);
  return success();
}

/// Normalizes |axis| for |rank| or fails naming |what| (NodeImporter.cpp).
FailureOr<int64_t> axisFor(NodeImporter &n, int64_t axis, int64_t rank,
                           llvm::StringRef what = "axis");

/// Mappings defined outside ONNXOpImporters.cpp; importNode dispatches.
LogicalResult importReduceMean(NodeImporter &n);
LogicalResult importReduceSum(NodeImporter &n);
LogicalResult importReduceMax(NodeImporter &n);
LogicalResult importSoftmax(NodeImporter &n);
LogicalResult importLayerNorm(NodeImporter &n);
LogicalResult importRMSNorm(NodeImporter &n);
LogicalResult importPreviewTrainingAdam(NodeImporter &n);
LogicalResult importSoftmaxCrossEntropyLoss(NodeImporter &n);
LogicalResult importDropout(NodeImporter &n);
LogicalResult importIdentity(NodeImporter &n);
LogicalResult importShape(NodeImporter &n);
LogicalResult importConstantOfShape(NodeImporter &n);
LogicalResult importRange(NodeImporter &n);
LogicalResult importConstant(NodeImporter &n);
LogicalResult importGelu(NodeImporter &n);
// Shape manipulation (ShapeImporters.cpp).
LogicalResult importReshape(NodeImporter &n);
LogicalResult importFlatten(NodeImporter &n);
LogicalResult importExpand(NodeImporter &n);
LogicalResult importTranspose(NodeImporter &n);
LogicalResult importSplit(NodeImporter &n);
LogicalResult importSlice(NodeImporter &n);
LogicalResult importConcat(NodeImporter &n);
LogicalResult importSqueeze(NodeImporter &n);
LogicalResult importUnsqueeze(NodeImporter &n);
LogicalResult importPad(NodeImporter &n);
LogicalResult importTrilu(NodeImporter &n);
LogicalResult importAttention(NodeImporter &n);

/// Translates one node with the mapping registered for its domain and
/// op_type (ONNXOpImporters.cpp). Fails with "unknown op" for anything else.
LogicalResult importNode(NodeImporter &importer, llvm::StringRef domain);

/// ONNX values (graph inputs, initializers, node outputs) of an unsigned
/// integer type, with its width, propagated through |graph|'s nodes in
/// |order| (UnsignedInts.cpp).
llvm::StringMap<unsigned> findUnsignedValues(const onnx::GraphProto &graph,
                                             llvm::ArrayRef<int> order);

/// importNode, giving the ops that read integers as signed (Div, Mod,
/// Max/Min, Pow, ReduceMax/Mean, ordering comparisons, Cast) zero-extended
/// i64 operands for the unsigned values in |widths| and narrowing their
/// results back; uint64 operands: comparisons and Max/Min on the signed
/// order, the other ops an error.
LogicalResult importNodeWithSignedness(NodeImporter &importer,
                                       llvm::StringRef domain,
                                       const llvm::StringMap<unsigned> &widths);

/// True when |domain| / |opType| has a mapping (for the up-front check that
/// names every unsupported node before any IR is built).
bool isSupportedOp(llvm::StringRef domain, llvm::StringRef opType);

/// Checks a default-domain |node| against its op's schema at |opset|:
/// attributes the op does not define there, attribute kinds, input and
/// output counts (SchemaCheck.cpp). Other domains pass. On failure sets
/// |error| to "<label>: ..." (one line).
LogicalResult checkNodeSchema(const onnx::NodeProto &node, int64_t opset,
                              const std::string &label, std::string &error);

/// For a model at a default-domain |opset| older than kMinOpset: the first
/// default-domain node of |graph| or its subgraphs (depth first) whose op
/// libonnx defines differently at |opset| than at kMinOpset (another schema
/// version, or none at one of them), as {node, its index in its graph}; a
/// null node when every op has the same definition at both, so the model
/// reads exactly as at kMinOpset (SchemaCheck.cpp).
std::pair<const onnx::NodeProto *, int>
firstOpChangedBefore(const onnx::GraphProto &graph, int64_t opset);

/// Default-domain opset that introduced |opType| as tx imports it, e.g. 17
/// for LayerNormalization; 0 when any supported opset will do.
int64_t minimumOpsetFor(llvm::StringRef opType);

/// Oldest default-domain opset whose form of |opType| the importer reads
/// (Slice before 10 and Pad before 11 keep their operands in attributes
/// the importer does not read); 0 when any supported opset will do.
int64_t oldestReadableOpsetFor(llvm::StringRef opType);

//===----------------------------------------------------------------------===//
// Import-time evaluation (ConstantFolder.cpp)
//===----------------------------------------------------------------------===//

/// Evaluates |op| whose operands are all constant |operands|. Returns true
/// and fills |results| when it did, false when the op is not evaluable here
/// (unsupported op, or a result too large to be worth materializing), and
/// failure with |error| when evaluation finds the input invalid (an index out
/// of range, an integer division by zero).
FailureOr<bool> evaluateOp(Operation *op, llvm::ArrayRef<DenseElementsAttr> operands,
                           llvm::SmallVectorImpl<DenseElementsAttr> &results,
                           std::string &error);

} // namespace mlir::txopt::onnx_import

#endif // TXOPT_LIB_IMPORT_ONNX_IMPORTERINTERNAL_H
