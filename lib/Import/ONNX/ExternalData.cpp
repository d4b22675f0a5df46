//===- ExternalData.cpp - safe reads of ONNX external tensor data ---------===//
//
// SPDX-License-Identifier: Apache-2.0
// ONNX keeps large tensors in side files named by the model
// (TensorProto.external_data: location, offset, length). The model is
// untrusted input, so a location may only name a regular file inside the
// model's folder: no absolute paths, no "..", and no symlink that resolves
// outside the folder. Offsets and lengths are checked against the file size
// before anything is allocated or read. Those rules are written once, in
// txopt/Dialect/Tx/IR/WeightSource.h, because the reference executor applies
// them again when it reads a weight the importer left in its file.
//
//===----------------------------------------------------------------------===//

#include "ImporterInternal.h"

#include "txopt/Dialect/Tx/IR/WeightSource.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Error.h"

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::onnx_import;

/// Parses a non-negative decimal integer with no sign, spaces or suffix.
static std::optional<uint64_t> parseUnsigned(llvm::StringRef text) {
  uint64_t value;
  if (text.empty() || !llvm::all_of(text, llvm::isDigit) ||
      text.getAsInteger(10, value))
    return std::nullopt;
  return value;
}

FailureOr<ExternalLocation>
onnx_import::locateExternalData(const onnx::TensorProto &tensor,
                                llvm::StringRef baseDir, llvm::StringRef what,
                                uint64_t numBytes, std::string &error) {
  auto fail = [&](const llvm::Twine &message) {
    error = (what + " " + message).str();
    return failure();
  };
  std::optional<std::string> location;
  uint64_t offset = 0;
  std::optional<uint64_t> length;
  for (const onnx::StringStringEntryProto &entry : tensor.external_data()) {
    llvm::StringRef key = entry.key(), value = entry.value();
    if (key == "location") {
      location = value.str();
    } else if (key == "offset" || key == "length") {
      std::optional<uint64_t> parsed = parseUnsigned(value);
      if (!parsed)
        return fail("has external_data " + key + " " + quote(value) +
                    ", which is not a non-negative integer");
      if (key == "offset")
        offset = *parsed;
      else
        length = *parsed;
    }
    // "checksum" and unknown keys carry no layout information.
  }
  if (!location)
    return fail("has external data without a location");
  if (std::optional<std::string> problem = tx::checkWeightLocation(*location))
    return fail("has external data at " + *problem);
  if (length && *length != numBytes)
    return fail("declares an external data length of " +
                std::to_string(*length) + " bytes, but its dims need " +
                std::to_string(numBytes));
  llvm::Expected<tx::WeightFile> file =
      tx::resolveWeightFile(baseDir, *location);
  if (!file)
    return fail(llvm::toString(file.takeError()));
  // Checked here too (the read checks again), so that a parameter kept by
  // reference is known to fit when the IR is written.
  if (offset > file->size || numBytes > file->size - offset)
    return fail("needs bytes [" + std::to_string(offset) + ", " +
                std::to_string(offset) + " + " + std::to_string(numBytes) +
                ") of external data file " + quote(*location) +
                ", which holds only " + std::to_string(file->size) + " bytes");
  return ExternalLocation{std::move(*file), offset, numBytes};
}

LogicalResult onnx_import::readExternalData(const onnx::TensorProto &tensor,
                                            llvm::StringRef baseDir,
                                            llvm::StringRef what,
                                            uint64_t numBytes,
                                            std::vector<char> &bytes,
                                            std::string &error) {
  FailureOr<ExternalLocation> located =
      locateExternalData(tensor, baseDir, what, numBytes, error);
  if (failed(located))
    return failure();
  bytes.resize(numBytes);
  if (llvm::Error err =
          tx::readWeightFile(located->file, located->offset, bytes)) {
    error = (what + " " + llvm::toString(std::move(err))).str();
    return failure();
  }
  return success();
}
