//===- WeightSource.cpp - safe reads of the weights parameters refer to ---===//
//
// SPDX-License-Identifier: Apache-2.0
// The model (and so the IR imported from it) is untrusted input: a weight
// reference may only name a regular file inside the model's folder, and a
// byte range is checked against the file's size right before it is read,
// because the file can change between compile and run.
//
//===----------------------------------------------------------------------===//

#include "txopt/Dialect/Tx/IR/WeightSource.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::tx;

/// |text| in single quotes with control, non-ASCII, quote and backslash
/// bytes escaped, so a hostile path cannot break a one-line message.
static std::string quoted(llvm::StringRef text) {
  std::string out = "'";
  for (unsigned char c : text.take_front(200)) {
    if (c == '\\' || c == '\'') {
      out += '\\';
      out += c;
    } else if (c >= 0x20 && c < 0x7f) {
      out += c;
    } else {
      out += "\\x";
      out += llvm::hexdigit(c >> 4, /*LowerCase=*/true);
      out += llvm::hexdigit(c & 15, /*LowerCase=*/true);
    }
  }
  if (text.size() > 200)
    out += "...";
  return out + "'";
}

std::optional<std::string> tx::checkWeightLocation(llvm::StringRef location) {
  if (location.empty())
    return std::string("an empty location");
  if (location.contains('\0'))
    return std::string("a location with a NUL byte");
  if (location.starts_with("/") || location.starts_with("\\") ||
      llvm::sys::path::is_absolute(location) ||
      (location.size() > 1 && location[1] == ':'))
    return "absolute location " + quoted(location);
  std::string normalized = location.str();
  std::replace(normalized.begin(), normalized.end(), '\\', '/');
  llvm::SmallVector<llvm::StringRef> parts;
  llvm::StringRef(normalized).split(parts, '/');
  for (llvm::StringRef part : parts)
    if (part == "..")
      return "location " + quoted(location) +
             ", which leaves the model's folder";
  return std::nullopt;
}

llvm::Expected<WeightFile> tx::resolveWeightFile(llvm::StringRef baseDir,
                                                 llvm::StringRef location) {
  if (std::optional<std::string> problem = checkWeightLocation(location))
    return llvm::createStringError("has external data at " + *problem);
  // Resolve symlinks on both sides, then require containment, so that a
  // symlink inside the folder cannot point at /etc/passwd.
  llvm::StringRef base = baseDir.empty() ? "." : baseDir;
  llvm::SmallString<256> realBase, realFile, joined(base);
  llvm::sys::path::append(joined, location);
  if (llvm::sys::fs::real_path(base, realBase))
    return llvm::createStringError("has external data, but the model's folder " +
                                   quoted(baseDir) + " cannot be resolved");
  if (std::error_code ec = llvm::sys::fs::real_path(joined, realFile))
    return llvm::createStringError("has external data file " + quoted(location) +
                                   " that cannot be opened: " + ec.message());
  llvm::SmallString<256> prefix(realBase);
  if (!prefix.ends_with("/"))
    prefix += "/";
  if (!llvm::StringRef(realFile).starts_with(prefix))
    return llvm::createStringError("has external data file " + quoted(location) +
                                   " that resolves outside the model's folder");
  llvm::sys::fs::file_status status;
  if (std::error_code ec = llvm::sys::fs::status(realFile, status))
    return llvm::createStringError("has external data file " + quoted(location) +
                                   " that cannot be opened: " + ec.message());
  if (status.type() != llvm::sys::fs::file_type::regular_file)
    return llvm::createStringError("has external data location " +
                                   quoted(location) +
                                   ", which is not a regular file");
  return WeightFile{location.str(), realFile.str().str(), status.getSize()};
}

llvm::Error tx::readWeightFile(const WeightFile &file, uint64_t offset,
                               llvm::MutableArrayRef<char> bytes) {
  uint64_t numBytes = bytes.size();
  auto rangeError = [&](uint64_t fileSize) {
    return llvm::createStringError(
        "needs bytes [" + std::to_string(offset) + ", " +
        std::to_string(offset) + " + " + std::to_string(numBytes) +
        ") of external data file " + quoted(file.location) +
        ", which holds only " + std::to_string(fileSize) + " bytes");
  };
  llvm::Expected<llvm::sys::fs::file_t> handle =
      llvm::sys::fs::openNativeFileForRead(file.realPath);
  if (!handle)
    return llvm::createStringError("has external data file " +
                                   quoted(file.location) +
                                   " that cannot be opened: " +
                                   llvm::toString(handle.takeError()));
  // The size of the file as opened now, not as resolved: a file truncated
  // after compilation must be an error, not a short read.
  llvm::sys::fs::file_status status;
  if (std::error_code ec = llvm::sys::fs::status(*handle, status)) {
    llvm::sys::fs::closeFile(*handle);
    return llvm::createStringError("has external data file " +
                                   quoted(file.location) +
                                   " that cannot be opened: " + ec.message());
  }
  uint64_t fileSize = status.getSize();
  if (offset > fileSize || numBytes > fileSize - offset) {
    llvm::sys::fs::closeFile(*handle);
    return rangeError(fileSize);
  }
  uint64_t done = 0;
  while (done < numBytes) {
    llvm::Expected<size_t> read = llvm::sys::fs::readNativeFileSlice(
        *handle,
        llvm::MutableArrayRef<char>(
            bytes.data() + done, std::min<uint64_t>(numBytes - done, 1u << 30)),
        offset + done);
    if (!read || *read == 0) {
      llvm::sys::fs::closeFile(*handle);
      if (!read)
        return llvm::createStringError("cannot read external data file " +
                                       quoted(file.location) + ": " +
                                       llvm::toString(read.takeError()));
      return llvm::createStringError("cannot read external data file " +
                                     quoted(file.location) +
                                     ": it ended early");
    }
    done += *read;
  }
  llvm::sys::fs::closeFile(*handle);
  return llvm::Error::success();
}

uint64_t tx::weightElementBytes(Type elementType) {
  if (!elementType.isIntOrFloat())
    return 0;
  unsigned width = elementType.getIntOrFloatBitWidth();
  return width % 8 == 0 ? width / 8 : 0;
}

std::string tx::resolveWeightPath(ParameterOp parameter, ModuleOp module) {
  WeightSourceAttr source = parameter.getSourceAttr();
  if (!source)
    return "";
  llvm::SmallString<256> path;
  if (auto dir = module->getAttrOfType<StringAttr>(kModelDirAttrName))
    path = dir.getValue();
  llvm::sys::path::append(path, source.getPath());
  return path.str().str();
}

/// The bytes of a dense (or dense_resource) initial value, splats expanded.
static llvm::Expected<std::vector<char>> inlineBytes(ElementsAttr value) {
  if (auto dense = dyn_cast<DenseElementsAttr>(value)) {
    uint64_t elementBytes = weightElementBytes(dense.getElementType());
    if (elementBytes == 0)
      return llvm::createStringError("has an element type that is not a "
                                     "whole number of bytes");
    llvm::ArrayRef<char> raw = dense.getRawData();
    if (!dense.isSplat())
      return std::vector<char>(raw.begin(), raw.end());
    std::vector<char> bytes;
    bytes.reserve(elementBytes * dense.getNumElements());
    for (int64_t i = 0, e = dense.getNumElements(); i < e; ++i)
      bytes.insert(bytes.end(), raw.begin(), raw.begin() + elementBytes);
    return bytes;
  }
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(value)) {
    if (AsmResourceBlob *blob = resource.getRawHandle().getBlob()) {
      llvm::ArrayRef<char> data = blob->getData();
      return std::vector<char>(data.begin(), data.end());
    }
    return llvm::createStringError("has a dense_resource value without data");
  }
  return llvm::createStringError("has an initial value that is not dense");
}

llvm::Expected<std::vector<char>> tx::readParameterBytes(ParameterOp parameter,
                                                         ModuleOp module) {
  std::string what = "parameter " + quoted(parameter.getSymName());
  auto fail = [&](llvm::Error error) -> llvm::Error {
    return llvm::createStringError(what + " " + llvm::toString(std::move(error)));
  };
  WeightSourceAttr source = parameter.getSourceAttr();
  if (!source) {
    if (!parameter.getInitialValueAttr())
      return llvm::createStringError(what + " has neither an initial value "
                                            "nor a source");
    auto bytes = inlineBytes(parameter.getInitialValueAttr());
    if (!bytes)
      return fail(bytes.takeError());
    return bytes;
  }
  auto dir = module->getAttrOfType<StringAttr>(kModelDirAttrName);
  if (!dir)
    return llvm::createStringError(
        what + " has external data file " + quoted(source.getPath()) +
        ", but the module has no tx.model_dir to find it in");
  // The verifier ties length to the type; recheck, since the bytes become a
  // tensor of that type.
  RankedTensorType type = parameter.getType();
  uint64_t elementBytes = weightElementBytes(type.getElementType());
  if (elementBytes == 0 || !type.hasStaticShape() ||
      source.getLength() != elementBytes * uint64_t(type.getNumElements()))
    return llvm::createStringError(what + " has a source length that does not "
                                          "match its type");
  auto file = resolveWeightFile(dir.getValue(), source.getPath());
  if (!file)
    return fail(file.takeError());
  std::vector<char> bytes;
  bytes.resize(source.getLength());
  if (llvm::Error error = readWeightFile(*file, source.getOffset(), bytes))
    return fail(std::move(error));
  return bytes;
}

//===----------------------------------------------------------------------===//
// WeightSourceAttr
//===----------------------------------------------------------------------===//

LogicalResult
WeightSourceAttr::verify(llvm::function_ref<InFlightDiagnostic()> emitError,
                         llvm::StringRef path, uint64_t offset,
                         uint64_t length) {
  if (std::optional<std::string> problem = checkWeightLocation(path))
    return emitError() << "expected a relative path inside the model's "
                          "folder, but got "
                       << *problem;
  if (offset > UINT64_MAX - length)
    return emitError() << "expected offset + length to fit in 64 bits, but got "
                       << offset << " + " << length;
  return success();
}
