//===- ExternalData.cpp - safe reads of ONNX external tensor data ---------===//
//
// SPDX-License-Identifier: Apache-2.0
// ONNX keeps large tensors in side files named by the model
// (TensorProto.external_data: location, offset, length). The model is
// untrusted input, so a location may only name a regular file inside the
// model's folder: no absolute paths, no "..", and no symlink that resolves
// outside the folder. Offsets and lengths are checked against the file size
// before anything is allocated or read.
//
//===----------------------------------------------------------------------===//

#include "ImporterInternal.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/Path.h"

#include <algorithm>

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

/// Checks the textual form of |location|: relative, no parent components,
/// no NUL bytes. Returns an explanation when it is not acceptable.
static std::optional<std::string> checkLocation(llvm::StringRef location) {
  if (location.empty())
    return std::string("an empty location");
  if (location.contains('\0'))
    return std::string("a location with a NUL byte");
  if (location.starts_with("/") || location.starts_with("\\") ||
      llvm::sys::path::is_absolute(location) ||
      (location.size() > 1 && location[1] == ':'))
    return "absolute location " + quote(location);
  std::string normalized = location.str();
  std::replace(normalized.begin(), normalized.end(), '\\', '/');
  llvm::SmallVector<llvm::StringRef> parts;
  llvm::StringRef(normalized).split(parts, '/');
  for (llvm::StringRef part : parts)
    if (part == "..")
      return "location " + quote(location) + ", which leaves the model's folder";
  return std::nullopt;
}

LogicalResult onnx_import::readExternalData(const onnx::TensorProto &tensor,
                                            llvm::StringRef baseDir,
                                            llvm::StringRef what,
                                            uint64_t numBytes,
                                            std::vector<char> &bytes,
                                            std::string &error) {
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
  if (std::optional<std::string> problem = checkLocation(*location))
    return fail("has external data at " + *problem);
  if (length && *length != numBytes)
    return fail("declares an external data length of " +
                std::to_string(*length) + " bytes, but its dims need " +
                std::to_string(numBytes));

  // Resolve symlinks on both sides, then require containment, so that a
  // symlink inside the folder cannot point at /etc/passwd.
  llvm::SmallString<256> realBase, realFile, joined(baseDir.empty() ? "." : baseDir);
  llvm::sys::path::append(joined, *location);
  if (llvm::sys::fs::real_path(baseDir.empty() ? "." : baseDir, realBase))
    return fail("has external data, but the model's folder " + quote(baseDir) +
                " cannot be resolved");
  if (std::error_code ec = llvm::sys::fs::real_path(joined, realFile))
    return fail("has external data file " + quote(*location) +
                " that cannot be opened: " + ec.message());
  llvm::SmallString<256> prefix(realBase);
  if (!prefix.ends_with("/"))
    prefix += "/";
  if (!llvm::StringRef(realFile).starts_with(prefix))
    return fail("has external data file " + quote(*location) +
                " that resolves outside the model's folder");
  llvm::sys::fs::file_status status;
  if (std::error_code ec = llvm::sys::fs::status(realFile, status))
    return fail("has external data file " + quote(*location) +
                " that cannot be opened: " + ec.message());
  if (status.type() != llvm::sys::fs::file_type::regular_file)
    return fail("has external data location " + quote(*location) +
                ", which is not a regular file");
  uint64_t fileSize = status.getSize();
  if (offset > fileSize || numBytes > fileSize - offset)
    return fail("needs bytes [" + std::to_string(offset) + ", " +
                std::to_string(offset) + " + " + std::to_string(numBytes) +
                ") of external data file " + quote(*location) +
                ", which holds only " + std::to_string(fileSize) + " bytes");

  llvm::Expected<llvm::sys::fs::file_t> file =
      llvm::sys::fs::openNativeFileForRead(realFile);
  if (!file)
    return fail("has external data file " + quote(*location) +
                " that cannot be opened: " + llvm::toString(file.takeError()));
  bytes.resize(numBytes);
  uint64_t done = 0;
  while (done < numBytes) {
    llvm::Expected<size_t> read = llvm::sys::fs::readNativeFileSlice(
        *file,
        llvm::MutableArrayRef<char>(bytes.data() + done,
                                    std::min<uint64_t>(numBytes - done, 1u << 30)),
        offset + done);
    if (!read || *read == 0) {
      llvm::sys::fs::closeFile(*file);
      if (!read)
        return fail("cannot read external data file " + quote(*location) +
                    ": " + llvm::toString(read.takeError()));
      return fail("cannot read external data file " + quote(*location) +
                  ": it ended early");
    }
    done += *read;
  }
  llvm::sys::fs::closeFile(*file);
  return success();
}
