//===- npy.cpp - NumPy .npy files for txrun -------------------------------===//
//
// SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "core/npy.h"

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>

namespace txrt {

const char *npyDescrFor(DType type) {
  switch (type) {
  case DType::F16: return "<f2";
  case DType::F64: return "<f8";
  case DType::F32:
  case DType::BF16:
  case DType::F8E4M3FN:
  case DType::F8E5M2: return "<f4";
  case DType::I1: return "|b1";
  case DType::I32: return "<i4";
  default: return "<i8";
  }
}

std::string serializeNpy(DType type, const std::vector<int64_t> &shape,
                         const void *data, size_t elements) {
  std::string descr = npyDescrFor(type);
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < shape.size(); ++i)
    header += std::to_string(shape[i]) + (shape.size() == 1 ? ",)" : ", ");
  if (shape.size() > 1)
    header.resize(header.size() - 2), header += ")";
  else if (shape.empty())
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
  for (size_t i = 0; i < elements; ++i) {
    char buf[8];
    size_t size;
    if (descr == "<f2") {
      // Exact for f16 data (decode then encode returns the same bits).
      uint16_t bits = f16FromDouble(loadAsDouble(type, data, i));
      std::memcpy(buf, &bits, size = 2);
    } else if (descr == "<f4") {
      float v = static_cast<float>(loadAsDouble(type, data, i));
      std::memcpy(buf, &v, size = 4);
    } else if (descr == "<f8") {
      double v = loadAsDouble(type, data, i);
      std::memcpy(buf, &v, size = 8);
    } else if (descr == "<i4") {
      auto v = static_cast<int32_t>(loadAsInt64(type, data, i));
      std::memcpy(buf, &v, size = 4);
    } else if (descr == "<i8") {
      int64_t v = loadAsInt64(type, data, i);
      std::memcpy(buf, &v, size = 8);
    } else {
      buf[0] = loadAsInt64(type, data, i) ? 1 : 0;
      size = 1;
    }
    out.append(buf, size);
  }
  return out;
}

Status writeNpyFile(const std::string &path, DType type,
                    const std::vector<int64_t> &shape, const void *data,
                    size_t elements) {
  std::string bytes = serializeNpy(type, shape, data, elements);
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file)
    return Status::invalid("cannot write '" + path + "': " + std::strerror(errno));
  file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  file.close();
  if (!file)
    return Status::invalid("cannot write '" + path + "': I/O error");
  return Status();
}

namespace {
/// Finds `'key':` in the header dict and returns the text after it.
bool valueAfter(const std::string &header, const std::string &key, size_t &pos) {
  for (const char *quote : {"'", "\""}) {
    size_t at = header.find(std::string(quote) + key + quote);
    if (at == std::string::npos)
      continue;
    size_t colon = header.find(':', at);
    if (colon == std::string::npos)
      return false;
    pos = colon + 1;
    while (pos < header.size() && header[pos] == ' ')
      ++pos;
    return true;
  }
  return false;
}
} // namespace

Status parseNpy(const std::string &bytes, NpyArray &out) {
  auto bad = [](const std::string &why) { return Status::invalid("invalid .npy: " + why); };
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0)
    return bad("missing the \\x93NUMPY magic");
  unsigned major = static_cast<unsigned char>(bytes[6]);
  size_t headerLen = 0, offset = 0;
  if (major == 1) {
    headerLen = static_cast<unsigned char>(bytes[8]) |
                (static_cast<unsigned char>(bytes[9]) << 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      return bad("truncated header");
    for (int i = 3; i >= 0; --i)
      headerLen = (headerLen << 8) | static_cast<unsigned char>(bytes[8 + i]);
    offset = 12;
  } else {
    return bad("unsupported format version " + std::to_string(major));
  }
  if (bytes.size() < offset + headerLen)
    return bad("truncated header");
  std::string header = bytes.substr(offset, headerLen);
  size_t pos;
  if (!valueAfter(header, "descr", pos) || pos >= header.size())
    return bad("no 'descr'");
  char quote = header[pos];
  size_t end = header.find(quote, pos + 1);
  if (end == std::string::npos)
    return bad("bad 'descr'");
  out.descr = header.substr(pos + 1, end - pos - 1);
  if (valueAfter(header, "fortran_order", pos) && header.compare(pos, 4, "True") == 0)
    return bad("fortran_order arrays are not supported");
  if (!valueAfter(header, "shape", pos) || header[pos] != '(')
    return bad("no 'shape'");
  size_t close = header.find(')', pos);
  if (close == std::string::npos)
    return bad("bad 'shape'");
  out.shape.clear();
  std::string dims = header.substr(pos + 1, close - pos - 1);
  uint64_t elements = 1;
  size_t i = 0;
  while (i < dims.size()) {
    while (i < dims.size() && (dims[i] == ' ' || dims[i] == ','))
      ++i;
    if (i == dims.size())
      break;
    size_t j = i;
    while (j < dims.size() && std::isdigit(static_cast<unsigned char>(dims[j])))
      ++j;
    if (j == i || j - i > 15)
      return bad("bad 'shape'");
    int64_t d = std::stoll(dims.substr(i, j - i));
    out.shape.push_back(d);
    elements *= static_cast<uint64_t>(d);
    i = j;
  }
  size_t itemSize = 0;
  if (out.descr.size() == 3 && (out.descr[0] == '<' || out.descr[0] == '|') &&
      std::isdigit(static_cast<unsigned char>(out.descr[2])))
    itemSize = static_cast<size_t>(out.descr[2] - '0');
  if (itemSize == 0)
    return bad("unsupported dtype '" + out.descr + "'");
  size_t payload = offset + headerLen;
  if (elements > (uint64_t(1) << 48) || bytes.size() - payload != elements * itemSize)
    return bad("the shape promises " + std::to_string(elements) + " elements of " +
               std::to_string(itemSize) + " bytes, but " +
               std::to_string(bytes.size() - payload) + " bytes follow the header");
  out.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(payload), bytes.end());
  return Status();
}

std::string npyFileNameFor(const std::string &name) {
  std::string out;
  for (char c : name)
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' ||
            c == '-')
               ? c
               : '_';
  if (out.empty() || out[0] == '.')
    out = "_" + out;
  return out + ".npy";
}

} // namespace txrt
