//===- Npy.cpp - NumPy .npy files for the reference executor --------------===//
//
// SPDX-License-Identifier: Apache-2.0
// The header is a Python dict literal; this parses exactly the subset NumPy
// writes ({'descr': str, 'fortran_order': bool, 'shape': tuple of ints}) and
// rejects anything else with a message naming the field.
//
//===----------------------------------------------------------------------===//

#include "txopt/Reference/Npy.h"

#include "txopt/Reference/FloatFormats.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>
#include <optional>

using namespace mlir;
using namespace mlir::txopt::reference;

namespace {

llvm::Error npyError(const llvm::Twine &message) {
  return llvm::createStringError("invalid .npy: " + message.str());
}

/// Cursor over the header dict.
struct HeaderParser {
  llvm::StringRef text;

  void skipSpace() { text = text.ltrim(" \t\n\r"); }
  bool consume(char c) {
    skipSpace();
    if (text.empty() || text.front() != c)
      return false;
    text = text.drop_front();
    return true;
  }
  std::optional<std::string> parseString() {
    skipSpace();
    if (text.empty() || (text.front() != '\'' && text.front() != '"'))
      return std::nullopt;
    char quote = text.front();
    size_t end = text.find(quote, 1);
    if (end == llvm::StringRef::npos)
      return std::nullopt;
    std::string value = text.slice(1, end).str();
    text = text.drop_front(end + 1);
    return value;
  }
  std::optional<bool> parseBool() {
    skipSpace();
    if (text.consume_front("True"))
      return true;
    if (text.consume_front("False"))
      return false;
    return std::nullopt;
  }
  std::optional<std::vector<int64_t>> parseShape() {
    if (!consume('('))
      return std::nullopt;
    std::vector<int64_t> dims;
    while (true) {
      if (consume(')'))
        return dims;
      skipSpace();
      size_t digits = 0;
      while (digits < text.size() && std::isdigit(text[digits]))
        ++digits;
      if (digits == 0 || digits > 12)
        return std::nullopt;
      int64_t dim;
      if (text.take_front(digits).getAsInteger(10, dim))
        return std::nullopt;
      text = text.drop_front(digits);
      dims.push_back(dim);
      if (!consume(',') && !(skipSpace(), text.starts_with(")")))
        return std::nullopt;
    }
  }
};

struct Dtype {
  const char *descr;
  unsigned bytes;
};

std::optional<std::pair<Type, unsigned>> typeForDescr(MLIRContext *context,
                                                      llvm::StringRef descr) {
  Builder b(context);
  if (descr == "<f2")
    return std::make_pair(Type(b.getF16Type()), 2u);
  if (descr == "<f4")
    return std::make_pair(Type(b.getF32Type()), 4u);
  if (descr == "<f8")
    return std::make_pair(Type(b.getF64Type()), 8u);
  if (descr == "<i4")
    return std::make_pair(Type(b.getI32Type()), 4u);
  if (descr == "<i8")
    return std::make_pair(Type(b.getI64Type()), 8u);
  if (descr == "|b1")
    return std::make_pair(Type(b.getI1Type()), 1u);
  // Narrow and unsigned integers read as signless integers of their width
  // (the executor's types; unsigned values keep their bits, and the
  // importer widens them where an op would read them as signed).
  if (descr == "|i1" || descr == "|u1")
    return std::make_pair(Type(b.getIntegerType(8)), 1u);
  if (descr == "<i2" || descr == "<u2")
    return std::make_pair(Type(b.getIntegerType(16)), 2u);
  if (descr == "<u4")
    return std::make_pair(Type(b.getI32Type()), 4u);
  if (descr == "<u8")
    return std::make_pair(Type(b.getI64Type()), 8u);
  return std::nullopt;
}

} // namespace

std::string mlir::txopt::reference::npyDtypeFor(Type type) {
  if (type.isF16())
    return "<f2";
  if (type.isF64())
    return "<f8";
  if (isa<FloatType>(type))
    return "<f4";
  if (type.isInteger(1))
    return "|b1";
  if (type.isInteger(32))
    return "<i4";
  return "<i8";
}

llvm::Expected<Tensor> mlir::txopt::reference::parseNpy(MLIRContext *context,
                                                        llvm::StringRef bytes) {
  if (!bytes.starts_with("\x93NUMPY"))
    return npyError("missing the \\x93NUMPY magic");
  if (bytes.size() < 10)
    return npyError("truncated header");
  unsigned major = static_cast<unsigned char>(bytes[6]);
  size_t headerLen, offset;
  if (major == 1) {
    headerLen = static_cast<unsigned char>(bytes[8]) |
                (static_cast<unsigned char>(bytes[9]) << 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      return npyError("truncated header");
    headerLen = 0;
    for (int i = 3; i >= 0; --i)
      headerLen = (headerLen << 8) | static_cast<unsigned char>(bytes[8 + i]);
    offset = 12;
  } else {
    return npyError("unsupported format version " + std::to_string(major));
  }
  if (bytes.size() < offset + headerLen)
    return npyError("truncated header");

  HeaderParser parser{bytes.substr(offset, headerLen)};
  std::optional<std::string> descr;
  std::optional<bool> fortran;
  std::optional<std::vector<int64_t>> shape;
  if (!parser.consume('{'))
    return npyError("header is not a dict");
  while (!parser.consume('}')) {
    std::optional<std::string> key = parser.parseString();
    if (!key || !parser.consume(':'))
      return npyError("malformed header dict");
    if (*key == "descr") {
      if (!(descr = parser.parseString()))
        return npyError("'descr' is not a string");
    } else if (*key == "fortran_order") {
      if (!(fortran = parser.parseBool()))
        return npyError("'fortran_order' is not True or False");
    } else if (*key == "shape") {
      if (!(shape = parser.parseShape()))
        return npyError("'shape' is not a tuple of integers");
    } else {
      return npyError("unexpected header key '" + *key + "'");
    }
    if (!parser.consume(',') && !(parser.skipSpace(), parser.text.starts_with("}")))
      return npyError("malformed header dict");
  }
  if (!descr || !fortran || !shape)
    return npyError("header lacks 'descr', 'fortran_order' or 'shape'");
  if (*fortran)
    return npyError("Fortran-order arrays are not supported");
  auto dtype = typeForDescr(context, *descr);
  if (!dtype)
    return npyError("unsupported dtype '" + *descr +
                    "' (expected '<f2', '<f4', '<f8', '|i1', '<i2', '<i4', "
                    "'<i8', '|u1', '<u2', '<u4', '<u8' or '|b1')");

  uint64_t count = 1;
  for (int64_t d : *shape) {
    if (d > (int64_t(1) << 40) || (d && count > (uint64_t(1) << 40) / d))
      return npyError("shape is too large");
    count *= d;
  }
  llvm::StringRef data = bytes.drop_front(offset + headerLen);
  if (data.size() != count * dtype->second)
    return npyError("expected " + std::to_string(count * dtype->second) +
                    " data bytes for the shape, but the file has " +
                    std::to_string(data.size()));

  Tensor tensor(dtype->first, *shape);
  Type type = dtype->first;
  for (uint64_t i = 0; i < count; ++i) {
    const char *p = data.data() + i * dtype->second;
    if (type.isF16()) {
      uint16_t bits;
      std::memcpy(&bits, p, 2);
      tensor.floats()[i] = float16FromBits(bits);
    } else if (type.isF32()) {
      float v;
      std::memcpy(&v, p, 4);
      tensor.floats()[i] = v;
    } else if (type.isF64()) {
      std::memcpy(&tensor.floats()[i], p, 8);
    } else if (type.isInteger(8)) {
      tensor.ints()[i] = static_cast<int8_t>(*p);
    } else if (type.isInteger(16)) {
      int16_t v;
      std::memcpy(&v, p, 2);
      tensor.ints()[i] = v;
    } else if (type.isInteger(32)) {
      int32_t v;
      std::memcpy(&v, p, 4);
      tensor.ints()[i] = v;
    } else if (type.isInteger(64)) {
      std::memcpy(&tensor.ints()[i], p, 8);
    } else {
      if (static_cast<unsigned char>(*p) > 1)
        return npyError("bool element " + std::to_string(i) + " is not 0 or 1");
      tensor.ints()[i] = *p;
    }
  }
  return tensor;
}

llvm::Expected<Tensor> mlir::txopt::reference::readNpyFile(MLIRContext *context,
                                                           llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return llvm::createStringError("cannot read '" + path.str() +
                                   "': " + buffer.getError().message());
  auto tensor = parseNpy(context, (*buffer)->getBuffer());
  if (!tensor)
    return llvm::createStringError("'" + path.str() +
                                   "': " + llvm::toString(tensor.takeError()));
  return tensor;
}

std::string mlir::txopt::reference::serializeNpy(const Tensor &tensor) {
  Type type = tensor.getElementType();
  std::string descr = npyDtypeFor(type);
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (";
  for (int64_t d : tensor.getShape())
    header += std::to_string(d) + (tensor.getRank() == 1 ? ",)" : ", ");
  if (tensor.getRank() > 1)
    header.resize(header.size() - 2), header += ")";
  else if (tensor.getRank() == 0)
    header += ")";
  header += ", }";
  // Pad with spaces so magic + length + header + '\n' is a multiple of 64.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';

  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>((header.size() >> 8) & 0xff);
  out += header;
  for (int64_t i = 0, n = tensor.getNumElements(); i < n; ++i) {
    char buf[8];
    size_t size;
    if (descr == "<f2") {
      uint16_t bits = float16Bits(tensor.floats()[i]);
      std::memcpy(buf, &bits, size = 2);
    } else if (descr == "<f4") {
      float v = static_cast<float>(tensor.floats()[i]);
      std::memcpy(buf, &v, size = 4);
    } else if (descr == "<f8") {
      std::memcpy(buf, &tensor.floats()[i], size = 8);
    } else if (descr == "<i4") {
      auto v = static_cast<int32_t>(tensor.ints()[i]);
      std::memcpy(buf, &v, size = 4);
    } else if (descr == "<i8") {
      std::memcpy(buf, &tensor.ints()[i], size = 8);
    } else {
      buf[0] = tensor.ints()[i] ? 1 : 0;
      size = 1;
    }
    out.append(buf, size);
  }
  return out;
}

llvm::Error mlir::txopt::reference::writeNpyFile(const Tensor &tensor,
                                                 llvm::StringRef path) {
  std::string bytes = serializeNpy(tensor);
  return llvm::writeToOutput(path, [&](llvm::raw_ostream &os) {
    os << bytes;
    return llvm::Error::success();
  });
}

std::string mlir::txopt::reference::safetensorsDType(Type type) {
  if (type.isF32())
    return "F32";
  if (type.isF64())
    return "F64";
  if (type.isF16())
    return "F16";
  if (type.isBF16())
    return "BF16";
  if (isa<Float8E4M3FNType>(type))
    return "F8_E4M3";
  if (isa<Float8E5M2Type>(type))
    return "F8_E5M2";
  if (type.isInteger(1))
    return "BOOL";
  if (type.isSignlessInteger(64))
    return "I64";
  if (type.isSignlessInteger(32))
    return "I32";
  if (type.isSignlessInteger(16))
    return "I16";
  if (type.isSignlessInteger(8))
    return "I8";
  return "";
}
