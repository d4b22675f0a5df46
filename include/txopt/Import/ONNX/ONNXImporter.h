//===- ONNXImporter.h - ONNX protobuf to tx IR ------------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// Translates an ONNX model (binary protobuf or ONNX textual syntax) into a
// module holding one func.func of tx ops plus tx.parameter weights.
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_IMPORT_ONNX_ONNXIMPORTER_H
#define TXOPT_IMPORT_ONNX_ONNXIMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringRef.h"

#include <map>
#include <string>
#include <vector>

namespace mlir::txopt {

/// What the user tells the importer beyond the model file.
struct ONNXImportOptions {
  /// Sizes for graph inputs with symbolic or unknown dims: NAME -> full shape
  /// (from `--input-shape NAME=2x32`).
  std::map<std::string, std::vector<int64_t>> inputShapes;
  /// Name of the function the graph becomes.
  std::string functionName = "main";
  /// Copy external-data weights into the IR as dense values (the behaviour
  /// before weights by reference; `--inline-weights`). By default a float
  /// initializer stored as external data becomes a parameter with a
  /// `source` and its bytes are not read.
  bool inlineWeights = false;
  /// Accept a graph output whose declared static shape contradicts the
  /// computed one (a warning, as onnxruntime does) instead of failing the
  /// import (`--allow-shape-mismatch`).
  bool allowShapeMismatch = false;
};

/// Facts about the imported model, for `--report` and the summary.
struct ONNXImportInfo {
  std::string producer;                 ///< producer_name + version
  int64_t opset = 0;                    ///< default-domain opset
  std::map<std::string, int64_t> opsIn; ///< ONNX op_type (domain-qualified
                                        ///< when not ai.onnx) -> count
  int64_t numParameters = 0;            ///< tx.parameter ops created
  int64_t numFrozenParameters = 0;      ///< of which `frozen` (masks)
  int64_t numParameterElements = 0;     ///< their total element count
  int64_t numSourcedParameters = 0;     ///< of which kept by reference
  int64_t numSourcedBytes = 0;          ///< bytes those references cover
  std::vector<std::string> warnings;    ///< non-fatal observations
};

/// Imports the binary .onnx file at |path|. External data is resolved
/// relative to the model's folder and may not escape it; float weights in
/// external data stay there (`tx.parameter ... source(...)`, with the
/// folder in the module's `tx.model_dir`) unless options.inlineWeights. On failure returns
/// nullptr and sets |error| to one line naming the node or field at fault.
/// Never throws, asserts or aborts on malformed input. The rules (which
/// initializers become parameters, what folds) are in docs/Import.md.
OwningOpRef<ModuleOp> importONNXFile(MLIRContext &context, llvm::StringRef path,
                                     const ONNXImportOptions &options,
                                     ONNXImportInfo &info, std::string &error);

/// Imports the serialized ModelProto |bytes|, as if read from |path| (whose
/// folder external data is resolved against). Same contract as
/// importONNXFile; the fuzzer (fuzz/) feeds it.
OwningOpRef<ModuleOp> importONNXBytes(MLIRContext &context, llvm::StringRef bytes,
                                      llvm::StringRef path,
                                      const ONNXImportOptions &options,
                                      ONNXImportInfo &info, std::string &error);

/// Imports a model written in ONNX textual syntax (onnx::OnnxParser), as the
/// lit tests do. |sourceName| names the text in errors and `tx.source`, and
/// its folder is where external data would be looked up. Same contract as
/// importONNXFile.
OwningOpRef<ModuleOp> importONNXText(MLIRContext &context, llvm::StringRef text,
                                     llvm::StringRef sourceName,
                                     const ONNXImportOptions &options,
                                     ONNXImportInfo &info, std::string &error);

} // namespace mlir::txopt

#endif // TXOPT_IMPORT_ONNX_ONNXIMPORTER_H
