//===- ProtoUtils.cpp - validated reads of ONNX protobuf messages ---------===//
//
// SPDX-License-Identifier: Apache-2.0
// Element types and TensorProto -> DenseElementsAttr. A TensorProto comes
// from an untrusted file: every count, length and enum is checked before it
// sizes an allocation or an MLIR type (LLVM here is built without
// assertions, so an unchecked negative dim would be silent corruption).
//
//===----------------------------------------------------------------------===//

#include "ImporterInternal.h"

#include "txopt/Dialect/Tx/IR/TxOps.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/SwapByteOrder.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::onnx_import;

std::string onnx_import::escape(llvm::StringRef name) {
  std::string text;
  for (unsigned char c : name) {
    if (c == '\\' || c == '\'') {
      text += '\\';
      text += c;
    } else if (c >= 0x20 && c < 0x7f) {
      text += c;
    } else {
      text += "\\x";
      text += llvm::hexdigit(c >> 4, /*LowerCase=*/true);
      text += llvm::hexdigit(c & 15, /*LowerCase=*/true);
    }
  }
  // Names are for humans; a megabyte of name helps nobody.
  if (text.size() > 200)
    text = text.substr(0, 200) + "...";
  return text;
}

std::string onnx_import::quote(llvm::StringRef name) {
  return "'" + escape(name) + "'";
}

namespace {
/// ONNX TensorProto.DataType values (onnx.proto). ONNX 1.12's generated
/// enum stops at BFLOAT16; the float8 values are from later versions of the
/// same enum and are read by number.
enum DataType : int32_t {
  kUndefined = 0,
  kFloat = 1,
  kUInt8 = 2,
  kInt8 = 3,
  kUInt16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kDouble = 11,
  kUInt32 = 12,
  kUInt64 = 13,
  kComplex64 = 14,
  kComplex128 = 15,
  kBFloat16 = 16,
  kFloat8E4M3FN = 17,
  kFloat8E4M3FNUZ = 18,
  kFloat8E5M2 = 19,
  kFloat8E5M2FNUZ = 20,
};
} // namespace

std::string onnx_import::dataTypeName(int32_t dataType) {
  switch (dataType) {
  case kFloat: return "float";
  case kUInt8: return "uint8";
  case kInt8: return "int8";
  case kUInt16: return "uint16";
  case kInt16: return "int16";
  case kInt32: return "int32";
  case kInt64: return "int64";
  case kString: return "string";
  case kBool: return "bool";
  case kFloat16: return "float16";
  case kDouble: return "double";
  case kUInt32: return "uint32";
  case kUInt64: return "uint64";
  case kComplex64: return "complex64";
  case kComplex128: return "complex128";
  case kBFloat16: return "bfloat16";
  case kFloat8E4M3FN: return "float8e4m3fn";
  case kFloat8E4M3FNUZ: return "float8e4m3fnuz";
  case kFloat8E5M2: return "float8e5m2";
  case kFloat8E5M2FNUZ: return "float8e5m2fnuz";
  // Types of opsets 21-28 that tx does not have; named in errors.
  case 21: return "uint4";
  case 22: return "int4";
  case 23: return "float4e2m1";
  case 24: return "float8e8m0";
  case 25: return "uint2";
  case 26: return "int2";
  default: return std::to_string(dataType);
  }
}

/// Unsigned ONNX types become signless integers of the same width: tx, like
/// most MLIR dialects, keeps signedness in the ops, and the transformer
/// graphs txopt targets use unsigned types only for byte masks.
Type onnx_import::convertElementType(MLIRContext *context, int32_t dataType) {
  Builder b(context);
  switch (dataType) {
  case kFloat: return b.getF32Type();
  case kUInt8:
  case kInt8: return b.getIntegerType(8);
  case kUInt16:
  case kInt16: return b.getIntegerType(16);
  case kUInt32:
  case kInt32: return b.getIntegerType(32);
  case kUInt64:
  case kInt64: return b.getIntegerType(64);
  case kBool: return b.getI1Type();
  case kFloat16: return b.getF16Type();
  case kDouble: return b.getF64Type();
  case kBFloat16: return b.getBF16Type();
  case kFloat8E4M3FN: return b.getType<Float8E4M3FNType>();
  case kFloat8E4M3FNUZ: return b.getType<Float8E4M3FNUZType>();
  case kFloat8E5M2: return b.getType<Float8E5M2Type>();
  case kFloat8E5M2FNUZ: return b.getType<Float8E5M2FNUZType>();
  // OCP's MX element and scale types (opsets 23 and 24); the packed data
  // of float4e2m1 is not read (convertTensorType refuses it), as for int4.
  case 23: return b.getType<Float4E2M1FNType>();  // float4e2m1
  case 24: return b.getType<Float8E8M0FNUType>(); // float8e8m0
  // The 4- and 2-bit integers (opsets 21 and 25) are signless integers of
  // their width like the others; their packed tensor data is not read
  // (convertTensorType refuses it), so they come in as graph inputs.
  case 21: // uint4
  case 22: // int4
    return b.getIntegerType(4);
  case 25: // uint2
  case 26: // int2
    return b.getIntegerType(2);
  default: return {};
  }
}

std::optional<int64_t>
onnx_import::checkedNumElements(llvm::ArrayRef<int64_t> dims) {
  int64_t count = 1;
  for (int64_t dim : dims) {
    if (dim < 0)
      return std::nullopt;
    if (dim == 0)
      count = 0;
    // Both factors are at most 2^40 here, so the product cannot overflow.
    else if (count != 0 && dim > kMaxTensorElements / count)
      return std::nullopt;
    else
      count *= dim;
  }
  // A zero dim after an absurd one still describes a corrupt file.
  for (int64_t dim : dims)
    if (dim > kMaxTensorElements)
      return std::nullopt;
  return count;
}

/// Bytes per element in ONNX raw_data (bool is one byte per element).
static unsigned rawElementBytes(Type elementType) {
  if (elementType.isInteger(1))
    return 1;
  return elementType.getIntOrFloatBitWidth() / 8;
}

/// Builds the attribute from little-endian ONNX raw bytes.
static DenseElementsAttr fromRawBytes(RankedTensorType type,
                                      llvm::ArrayRef<char> bytes) {
  if (type.getElementType().isInteger(1)) {
    llvm::SmallVector<bool> values;
    values.reserve(bytes.size());
    for (char byte : bytes)
      values.push_back(byte != 0);
    return DenseElementsAttr::get(type, llvm::ArrayRef<bool>(values));
  }
  if (type.getNumElements() == 0)
    return DenseElementsAttr::get(type, llvm::ArrayRef<Attribute>());
  return DenseElementsAttr::getFromRawBuffer(type, bytes);
}

/// Appends the low |width| bytes of |value| in little-endian order.
static void appendLittleEndian(std::vector<char> &bytes, uint64_t value,
                               unsigned width) {
  for (unsigned i = 0; i < width; ++i)
    bytes.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

FailureOr<RankedTensorType>
onnx_import::convertTensorType(MLIRContext *context,
                               const onnx::TensorProto &tensor,
                               const TensorSource &source, std::string &error) {
  auto fail = [&](const llvm::Twine &message) -> FailureOr<RankedTensorType> {
    error = (source.what + " " + message).str();
    return failure();
  };
  if (!llvm::sys::IsLittleEndianHost)
    return fail("cannot be read: big-endian hosts are not supported");
  int32_t dataType = tensor.data_type();
  if (dataType == kUndefined)
    return fail("has no data_type");
  Type elementType = convertElementType(context, dataType);
  if (!elementType)
    return fail("has unsupported data type " + dataTypeName(dataType));
  // ONNX packs 4- and 2-bit integers and float4e2m1 several to a byte;
  // nothing reads that.
  if (elementType.getIntOrFloatBitWidth() < 8 && !elementType.isInteger(1))
    return fail("has data type " + dataTypeName(dataType) +
                ", whose packed data txopt does not read");
  llvm::SmallVector<int64_t> dims(tensor.dims().begin(), tensor.dims().end());
  for (int64_t dim : dims)
    if (dim < 0)
      return fail("has negative dim " + std::to_string(dim));
  std::optional<int64_t> numElements = checkedNumElements(dims);
  if (!numElements)
    return fail("has more than 2^40 elements");
  if (tensor.has_segment())
    return fail("is segmented, which is not supported");
  // A tensor keeps its data in exactly one place; two would leave it to the
  // reader which one wins (onnxruntime and onnx's numpy_helper differ).
  llvm::SmallVector<const char *, 2> fields;
  if (tensor.has_raw_data())
    fields.push_back("raw_data");
  if (tensor.float_data_size())
    fields.push_back("float_data");
  if (tensor.int32_data_size())
    fields.push_back("int32_data");
  if (tensor.string_data_size())
    fields.push_back("string_data");
  if (tensor.int64_data_size())
    fields.push_back("int64_data");
  if (tensor.double_data_size())
    fields.push_back("double_data");
  if (tensor.uint64_data_size())
    fields.push_back("uint64_data");
  if (tensor.data_location() == onnx::TensorProto::EXTERNAL)
    fields.push_back("external data");
  else if (tensor.external_data_size())
    return fail("has external_data entries, but its data_location is not "
                "EXTERNAL");
  if (fields.size() > 1)
    return fail("holds data in both " + llvm::Twine(fields[0]) + " and " +
                fields[1] + "; a tensor has one data field");
  return RankedTensorType::get(dims, elementType);
}

uint64_t onnx_import::rawTensorBytes(RankedTensorType type) {
  return static_cast<uint64_t>(type.getNumElements()) *
         rawElementBytes(type.getElementType());
}

FailureOr<DenseElementsAttr>
onnx_import::convertTensor(MLIRContext *context,
                           const onnx::TensorProto &tensor,
                           const TensorSource &source, std::string &error) {
  auto fail = [&](const llvm::Twine &message) -> FailureOr<DenseElementsAttr> {
    error = (source.what + " " + message).str();
    return failure();
  };
  FailureOr<RankedTensorType> convertedType =
      convertTensorType(context, tensor, source, error);
  if (failed(convertedType))
    return failure();
  RankedTensorType type = *convertedType;
  int32_t dataType = tensor.data_type();
  llvm::SmallVector<int64_t> dims(type.getShape());
  std::optional<int64_t> numElements = type.getNumElements();
  uint64_t width = rawElementBytes(type.getElementType());
  uint64_t numBytes = static_cast<uint64_t>(*numElements) * width;

  if (tensor.data_location() == onnx::TensorProto::EXTERNAL) {
    std::vector<char> bytes;
    if (failed(readExternalData(tensor, source.baseDir, source.what, numBytes,
                                bytes, error)))
      return failure();
    return fromRawBytes(type, bytes);
  }
  if (tensor.data_location() != onnx::TensorProto::DEFAULT)
    return fail("has unknown data_location " +
                std::to_string(tensor.data_location()));
  if (tensor.has_raw_data()) {
    const std::string &raw = tensor.raw_data();
    if (raw.size() != numBytes)
      return fail("has " + std::to_string(raw.size()) +
                  " bytes of raw_data, but its dims " +
                  tx::formatShape(dims) + " of " + dataTypeName(dataType) +
                  " need " + std::to_string(numBytes));
    return fromRawBytes(type, llvm::ArrayRef<char>(raw.data(), raw.size()));
  }

  // Typed storage: each data type lives in exactly one repeated field.
  int64_t count = 0;
  llvm::StringRef field;
  std::vector<char> bytes;
  auto checkCount = [&](int64_t given, llvm::StringRef name) {
    count = given;
    field = name;
    return given == *numElements;
  };
  bool ok = false;
  switch (dataType) {
  case kFloat:
    ok = checkCount(tensor.float_data_size(), "float_data");
    if (ok)
      for (float v : tensor.float_data()) {
        uint32_t bits;
        std::memcpy(&bits, &v, 4);
        appendLittleEndian(bytes, bits, 4);
      }
    break;
  case kDouble:
    ok = checkCount(tensor.double_data_size(), "double_data");
    if (ok)
      for (double v : tensor.double_data()) {
        uint64_t bits;
        std::memcpy(&bits, &v, 8);
        appendLittleEndian(bytes, bits, 8);
      }
    break;
  case kInt64:
    ok = checkCount(tensor.int64_data_size(), "int64_data");
    if (ok)
      for (int64_t v : tensor.int64_data())
        appendLittleEndian(bytes, static_cast<uint64_t>(v), 8);
    break;
  case kUInt32:
  case kUInt64:
    ok = checkCount(tensor.uint64_data_size(), "uint64_data");
    if (ok)
      for (uint64_t v : tensor.uint64_data())
        appendLittleEndian(bytes, v, width);
    break;
  default:
    // INT32, INT16, INT8, UINT16, UINT8, BOOL, FLOAT16, BFLOAT16 and the
    // float8 types keep one value (or bit pattern) per int32_data entry.
    ok = checkCount(tensor.int32_data_size(), "int32_data");
    if (ok)
      for (int32_t v : tensor.int32_data())
        appendLittleEndian(bytes,
                           dataType == kBool ? (v != 0)
                                             : static_cast<uint32_t>(v),
                           width);
    break;
  }
  if (!ok) {
    if (count == 0)
      return fail("has no data for its " + std::to_string(*numElements) +
                  " elements");
    return fail("has " + std::to_string(count) + " values in " + field +
                ", but its dims " + tx::formatShape(dims) + " need " +
                std::to_string(*numElements));
  }
  return fromRawBytes(type, bytes);
}
