//===- WeightSource.h - reading weights a tx.parameter refers to -*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// A sourced tx.parameter keeps its initial value in a file
// (`source(#tx.weight_source<path, offset, length>)`, the path relative to
// the module's `tx.model_dir`). These are the only functions that turn such
// a reference into bytes, shared by the ONNX importer (external data), the
// reference executor and artifact writers, so the file-safety rules are
// written once: the path is relative with no "..", it resolves (through
// symlinks) to a regular file inside the model's folder, and the byte range
// lies inside the file at the moment it is read.
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_DIALECT_TX_IR_WEIGHTSOURCE_H
#define TXOPT_DIALECT_TX_IR_WEIGHTSOURCE_H

#include "txopt/Dialect/Tx/IR/TxOps.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir::txopt::tx {

/// Module attribute: the absolute folder that `#tx.weight_source` paths are
/// relative to (the imported model's folder). Set only when the module has
/// a sourced parameter, so IR without one does not depend on where the
/// model sat.
inline constexpr llvm::StringLiteral kModelDirAttrName = "tx.model_dir";

/// Why |location| cannot name a weight file, as a phrase completing "has
/// external data at ..." ("absolute location '/etc/passwd'"), or nullopt
/// when it is an acceptable relative path: non-empty, not absolute, no
/// drive letter, no ".." component (with '/' or '\\' separators), no NUL.
std::optional<std::string> checkWeightLocation(llvm::StringRef location);

/// A weight file that passed the containment checks.
struct WeightFile {
  std::string location; ///< as written (relative), for messages
  std::string realPath; ///< symlinks resolved, inside the folder
  uint64_t size = 0;    ///< when it was resolved
};

/// Resolves |location| under |baseDir| ("" means the working directory):
/// checkWeightLocation, then both sides through real_path, then
/// containment and "regular file". Errors are predicates to put after the
/// tensor's name, e.g. "has external data file 'w.bin' that resolves
/// outside the model's folder".
llvm::Expected<WeightFile> resolveWeightFile(llvm::StringRef baseDir,
                                             llvm::StringRef location);

/// Reads |bytes.size()| bytes at |offset| of |file|, first checking the
/// range against the file's size now (it may have changed since it was
/// resolved). Errors are predicates, e.g. "needs bytes [0, 0 + 24) of
/// external data file 'w.bin', which holds only 12 bytes".
llvm::Error readWeightFile(const WeightFile &file, uint64_t offset,
                           llvm::MutableArrayRef<char> bytes);

/// `module[tx.model_dir]/path` of a sourced |parameter| (textually joined,
/// no checks; for messages and for writers that copy the file). Empty when
/// the parameter has no source.
std::string resolveWeightPath(ParameterOp parameter, ModuleOp module);

/// The initial value of |parameter| as little-endian bytes in its type's
/// row-major layout: read from its source (all checks above, plus
/// `tx.model_dir` present), or copied from a dense `initial_value`. Errors
/// are one line naming the parameter and the file:
/// "parameter 'w' needs bytes [...) of external data file 'model.data',
/// which holds only 12 bytes".
llvm::Expected<std::vector<char>> readParameterBytes(ParameterOp parameter,
                                                     ModuleOp module);

/// Bytes per element when sourced parameters of |elementType| are stored:
/// the bit width over 8; 0 when it is not a whole number of bytes.
uint64_t weightElementBytes(Type elementType);

} // namespace mlir::txopt::tx

#endif // TXOPT_DIALECT_TX_IR_WEIGHTSOURCE_H
