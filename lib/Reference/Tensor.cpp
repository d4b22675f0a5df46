//===- Tensor.cpp - values of the reference executor ----------------------===//
//
// SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "txopt/Reference/Tensor.h"

#include "txopt/Reference/FloatFormats.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/Support/raw_ostream.h"

#include "llvm/Support/CheckedArithmetic.h"

#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>

#include <unistd.h>

using namespace mlir;
using namespace mlir::txopt::reference;

//===----------------------------------------------------------------------===//
// Memory budget
//===----------------------------------------------------------------------===//

static std::atomic<uint64_t> &budgetStorage() {
  static std::atomic<uint64_t> budget{defaultMemoryBudget()};
  return budget;
}

uint64_t mlir::txopt::reference::defaultMemoryBudget() {
  long pages = sysconf(_SC_PHYS_PAGES);
  long pageSize = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || pageSize <= 0)
    return 0;
  return llvm::checkedMulUnsigned<uint64_t>(pages, pageSize)
      .value_or(std::numeric_limits<uint64_t>::max());
}

uint64_t mlir::txopt::reference::getMemoryBudget() { return budgetStorage(); }

void mlir::txopt::reference::setMemoryBudget(uint64_t bytes) {
  budgetStorage() = bytes;
}

std::optional<uint64_t>
mlir::txopt::reference::storageBytes(llvm::ArrayRef<int64_t> shape) {
  uint64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0)
      return std::nullopt;
    std::optional<uint64_t> next =
        llvm::checkedMulUnsigned<uint64_t>(count, static_cast<uint64_t>(d));
    if (!next)
      return std::nullopt;
    count = *next;
  }
  return llvm::checkedMulUnsigned<uint64_t>(count, sizeof(double));
}

llvm::Error mlir::txopt::reference::checkBudget(const llvm::Twine &what,
                                                std::optional<uint64_t> bytes,
                                                uint64_t inUse) {
  uint64_t budget = getMemoryBudget();
  if (!bytes)
    return llvm::createStringError(what + " needs more than 2^64 bytes");
  if (budget == 0)
    return llvm::Error::success();
  std::optional<uint64_t> total = llvm::checkedAddUnsigned(*bytes, inUse);
  if (total && *total <= budget)
    return llvm::Error::success();
  std::string used =
      inUse ? " with " + std::to_string(inUse) + " bytes already in use" : "";
  return llvm::createStringError(what + " needs " + std::to_string(*bytes) +
                                 " bytes, more than the memory budget of " +
                                 std::to_string(budget) + " bytes" + used +
                                 " (--max-memory)");
}

llvm::Error mlir::txopt::reference::checkTensorBudget(RankedTensorType type,
                                                      const llvm::Twine &what,
                                                      uint64_t inUse) {
  std::string typeText;
  llvm::raw_string_ostream os(typeText);
  os << type;
  if (!type.hasStaticShape())
    return llvm::createStringError(what + " (" + typeText +
                                   ") is not statically shaped");
  return checkBudget(what + " (" + typeText + ")", storageBytes(type.getShape()),
                     inUse);
}

//===----------------------------------------------------------------------===//
// Tensor
//===----------------------------------------------------------------------===//

Tensor::Tensor(Type elementType, llvm::ArrayRef<int64_t> shape)
    : elementType(elementType), shape(shape.begin(), shape.end()) {
  std::optional<uint64_t> bytes = storageBytes(shape);
  uint64_t budget = getMemoryBudget();
  if (!bytes || (budget && *bytes > budget)) {
    std::string message;
    llvm::raw_string_ostream os(message);
    os << "a tensor of shape " << RankedTensorType::get(shape, elementType)
       << " needs "
       << (bytes ? std::to_string(*bytes) + " bytes" : "more than 2^64 bytes")
       << ", more than the memory budget of " << budget
       << " bytes (--max-memory)";
    throw TensorBudgetError(message);
  }
  numElements = static_cast<int64_t>(*bytes / sizeof(double));
  floatStorage = isa<FloatType>(elementType);
  if (floatStorage)
    floatData.assign(numElements, 0.0);
  else
    intData.assign(numElements, 0);
}

int64_t Tensor::getInt(int64_t i) const {
  if (!floatStorage)
    return intData[i];
  double v = floatData[i];
  // ONNX leaves NaN and out-of-range conversions undefined; saturate.
  if (std::isnan(v))
    return 0;
  if (v >= 9223372036854775807.0)
    return std::numeric_limits<int64_t>::max();
  if (v <= -9223372036854775808.0)
    return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

Tensor Tensor::reshaped(llvm::ArrayRef<int64_t> newShape) const {
  Tensor result = *this;
  result.shape.assign(newShape.begin(), newShape.end());
  return result;
}

//===----------------------------------------------------------------------===//
// Constants
//===----------------------------------------------------------------------===//

/// Reads element |i| of little-endian raw bytes holding |type| elements.
static void readRaw(Tensor &tensor, llvm::ArrayRef<char> bytes) {
  Type type = tensor.getElementType();
  int64_t n = tensor.getNumElements();
  if (auto floatType = dyn_cast<FloatType>(type)) {
    unsigned width = floatType.getWidth();
    for (int64_t i = 0; i < n; ++i) {
      if (width == 32) {
        float v;
        std::memcpy(&v, bytes.data() + 4 * i, 4);
        tensor.floats()[i] = v;
      } else if (width == 64) {
        std::memcpy(&tensor.floats()[i], bytes.data() + 8 * i, 8);
      } else {
        uint64_t raw = 0;
        std::memcpy(&raw, bytes.data() + (width / 8) * i, width / 8);
        llvm::APFloat v(floatType.getFloatSemantics(), llvm::APInt(width, raw));
        bool lost;
        v.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven,
                  &lost);
        tensor.floats()[i] = v.convertToDouble();
      }
    }
    return;
  }
  unsigned width = type.getIntOrFloatBitWidth();
  unsigned bytesPer = width == 1 ? 1 : width / 8;
  for (int64_t i = 0; i < n; ++i) {
    uint64_t raw = 0;
    std::memcpy(&raw, bytes.data() + bytesPer * i, bytesPer);
    tensor.ints()[i] = wrapToWidth(static_cast<int64_t>(raw), width);
  }
}

llvm::Expected<Tensor> Tensor::fromBytes(RankedTensorType type,
                                         llvm::ArrayRef<char> bytes) {
  if (!type.hasStaticShape())
    return llvm::createStringError("expected a statically shaped type");
  Type elementType = type.getElementType();
  if (!isa<FloatType>(elementType) && !elementType.isSignlessInteger())
    return llvm::createStringError("unsupported element type");
  unsigned width = elementType.getIntOrFloatBitWidth();
  if (width % 8 != 0 && width != 1)
    return llvm::createStringError("unsupported element width");
  uint64_t expected =
      uint64_t(type.getNumElements()) * (width == 1 ? 1 : width / 8);
  if (bytes.size() != expected)
    return llvm::createStringError("expected " + std::to_string(expected) +
                                   " bytes, but got " +
                                   std::to_string(bytes.size()));
  Tensor tensor(type);
  readRaw(tensor, bytes);
  return tensor;
}

llvm::Expected<Tensor> Tensor::fromAttr(ElementsAttr attr) {
  auto type = dyn_cast<RankedTensorType>(attr.getType());
  if (!type || !type.hasStaticShape())
    return llvm::createStringError("expected a statically shaped constant");
  Type elementType = type.getElementType();
  if (!isa<FloatType>(elementType) && !elementType.isSignlessInteger())
    return llvm::createStringError("unsupported constant element type");
  Tensor tensor(type);
  int64_t n = tensor.getNumElements();

  if (auto resource = dyn_cast<DenseResourceElementsAttr>(attr)) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob)
      return llvm::createStringError("dense_resource constant has no data");
    llvm::ArrayRef<char> bytes = blob->getData();
    unsigned width = elementType.getIntOrFloatBitWidth();
    uint64_t expected = uint64_t(n) * (width == 1 ? 1 : width / 8);
    if (width % 8 != 0 && width != 1)
      return llvm::createStringError("unsupported constant element width");
    if (bytes.size() != expected)
      return llvm::createStringError("dense_resource constant has " +
                                     std::to_string(bytes.size()) +
                                     " bytes, expected " + std::to_string(expected));
    readRaw(tensor, bytes);
    return tensor;
  }

  auto dense = dyn_cast<DenseElementsAttr>(attr);
  if (!dense)
    return llvm::createStringError("unsupported constant attribute kind");
  if (auto floatType = dyn_cast<FloatType>(elementType)) {
    if (floatType.isF32()) {
      int64_t i = 0;
      for (float v : dense.getValues<float>())
        tensor.floats()[i++] = v;
    } else if (floatType.isF64()) {
      int64_t i = 0;
      for (double v : dense.getValues<double>())
        tensor.floats()[i++] = v;
    } else {
      int64_t i = 0;
      for (llvm::APFloat v : dense.getValues<llvm::APFloat>()) {
        bool lost;
        v.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven,
                  &lost);
        tensor.floats()[i++] = v.convertToDouble();
      }
    }
    return tensor;
  }
  unsigned width = elementType.getIntOrFloatBitWidth();
  int64_t i = 0;
  if (width == 1) {
    for (bool v : dense.getValues<bool>())
      tensor.ints()[i++] = v ? 1 : 0;
  } else {
    for (const llvm::APInt &v : dense.getValues<llvm::APInt>())
      tensor.ints()[i++] = v.getSExtValue();
  }
  return tensor;
}

//===----------------------------------------------------------------------===//
// Rounding
//===----------------------------------------------------------------------===//

/// float4e2m1 (OCP MX FP4: values 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their
/// negatives; no infinity, no NaN): round to nearest even, saturating to
/// +-6 (infinities included), as ONNX's reference evaluator converts
/// (ml_dtypes). NaN has no code: it becomes -0, which is what that
/// reference gives (ONNX does not define it).
static double roundToFloat4E2M1(double value) {
  if (std::isnan(value))
    return -0.0;
  if (std::fabs(value) >= 6.0)
    return std::copysign(6.0, value);
  llvm::APFloat v(value);
  bool lost;
  v.convert(llvm::APFloat::Float4E2M1FN(), llvm::APFloat::rmNearestTiesToEven, &lost);
  v.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven, &lost);
  return v.convertToDouble();
}

/// float8e8m0 (OCP MX scale: 2^(code - 127) for codes 0 to 254, 255 is
/// NaN; no zero, no sign): tx.cast rounds up to the next power of two and
/// saturates, ONNX Cast's round_mode = 'up', saturate = 1 (its spec table:
/// x below 2^-127, zero included, gives 2^-127; above 2^127 and infinity
/// give 2^127; NaN stays NaN). The sign is dropped, as ONNX's reference
/// does (negative values are unspecified there).
static double roundUpToFloat8E8M0(double value) {
  if (std::isnan(value))
    return value;
  double magnitude = std::fabs(value);
  const double smallest = std::ldexp(1.0, -127), largest = std::ldexp(1.0, 127);
  if (magnitude <= smallest)
    return smallest;
  if (magnitude >= largest)
    return largest;
  int exponent = 0;
  double mantissa = std::frexp(magnitude, &exponent); // in [0.5, 1)
  return mantissa == 0.5 ? magnitude : std::ldexp(1.0, exponent);
}

double mlir::txopt::reference::saturateInfinityForFP8(Type type,
                                                      double value) {
  if (!std::isinf(value) || !isa<Float8E5M2Type>(type))
    return value;
  return std::copysign(kFloat8E5M2.maxFinite, value);
}

double mlir::txopt::reference::roundToType(FloatType type, double value) {
  // isa<> compares type ids inline; the executor calls this per element.
  if (isa<Float32Type>(type))
    return roundToFloat32(value);
  if (isa<Float64Type>(type))
    return value;
  if (isa<BFloat16Type>(type))
    return roundToBFloat16(value);
  if (isa<Float16Type>(type))
    return roundToFloat16(value);
  // The OCP FP8 formats saturate, as TE's casts and cuBLASLt's FP8 outputs
  // do (and ONNX Cast with its default saturate=1); APFloat would overflow
  // E4M3FN to NaN. An infinity already in an E5M2 value stays one (E5M2 has
  // them: ONNX Cast with saturate=0 makes them); the conversions into FP8
  // (tx.cast, tx.quantize) saturate infinities themselves
  // (saturateInfinityForFP8).
  if (isa<Float8E4M3FNType>(type))
    return roundToFloat8(value, kFloat8E4M3FN);
  if (isa<Float8E5M2Type>(type))
    return std::isinf(value) ? value : roundToFloat8(value, kFloat8E5M2);
  if (isa<Float4E2M1FNType>(type))
    return roundToFloat4E2M1(value);
  if (isa<Float8E8M0FNUType>(type))
    return roundUpToFloat8E8M0(value);
  if (std::isnan(value))
    return value;
  // The FNUZ FP8 formats have no infinity: they saturate too, infinities
  // included, as ONNX Cast (saturate=1) does from opset 24 (the importer
  // refuses the earlier Cast, which sent infinities to NaN).
  if (isa<Float8E4M3FNUZType, Float8E5M2FNUZType>(type)) {
    double largest =
        llvm::APFloat::getLargest(type.getFloatSemantics()).convertToDouble();
    if (std::fabs(value) > largest)
      return std::signbit(value) ? -largest : largest;
  }
  // Everything else (other FP8 variants, tf32, ...): APFloat, round to
  // nearest even, IEEE overflow.
  llvm::APFloat v(value);
  bool lost;
  v.convert(type.getFloatSemantics(), llvm::APFloat::rmNearestTiesToEven, &lost);
  v.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven,
            &lost);
  return v.convertToDouble();
}

int64_t mlir::txopt::reference::wrapToWidth(int64_t value, unsigned width) {
  if (width == 1)
    return value != 0 ? 1 : 0;
  if (width >= 64)
    return value;
  uint64_t mask = (uint64_t(1) << width) - 1;
  uint64_t low = static_cast<uint64_t>(value) & mask;
  uint64_t signBit = uint64_t(1) << (width - 1);
  return static_cast<int64_t>((low ^ signBit) - signBit);
}

void mlir::txopt::reference::roundToElementType(Tensor &tensor) {
  Type type = tensor.getElementType();
  if (auto floatType = dyn_cast<FloatType>(type)) {
    if (isa<Float64Type>(floatType))
      return;
    if (isa<Float32Type>(floatType)) {
      for (double &v : tensor.floats())
        v = roundToFloat32(v);
      return;
    }
    for (double &v : tensor.floats())
      v = roundToType(floatType, v);
    return;
  }
  unsigned width = type.getIntOrFloatBitWidth();
  if (width == 64)
    return;
  for (int64_t &v : tensor.ints())
    v = wrapToWidth(v, width);
}

//===----------------------------------------------------------------------===//
// Indexing helpers
//===----------------------------------------------------------------------===//

llvm::SmallVector<int64_t, 4>
mlir::txopt::reference::stridesOf(llvm::ArrayRef<int64_t> shape) {
  llvm::SmallVector<int64_t, 4> strides(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

std::vector<int64_t>
mlir::txopt::reference::stridedIndices(llvm::ArrayRef<int64_t> outShape,
                                       llvm::ArrayRef<int64_t> strides,
                                       int64_t offset) {
  int64_t rank = outShape.size();
  int64_t total = 1;
  for (int64_t d : outShape)
    total *= d;
  std::vector<int64_t> result(total);
  if (total == 0)
    return result;
  if (rank == 0) {
    result[0] = offset;
    return result;
  }
  // The innermost dimension is filled as one strided run; an odometer over
  // the outer dimensions moves between runs.
  int64_t inner = outShape.back(), innerStride = strides.back();
  llvm::SmallVector<int64_t, 4> index(rank, 0);
  int64_t current = offset;
  for (int64_t start = 0; start < total; start += inner) {
    int64_t *run = result.data() + start;
    for (int64_t j = 0; j < inner; ++j)
      run[j] = current + j * innerStride;
    for (int64_t d = rank - 2; d >= 0; --d) {
      if (++index[d] < outShape[d]) {
        current += strides[d];
        break;
      }
      current -= strides[d] * (outShape[d] - 1);
      index[d] = 0;
    }
  }
  return result;
}

std::vector<int64_t>
mlir::txopt::reference::broadcastIndices(llvm::ArrayRef<int64_t> inShape,
                                         llvm::ArrayRef<int64_t> outShape) {
  int64_t rank = outShape.size();
  int64_t offset = rank - static_cast<int64_t>(inShape.size());
  // Stride of the input along each output dim; 0 where it broadcasts.
  llvm::SmallVector<int64_t, 4> inStrides = stridesOf(inShape);
  llvm::SmallVector<int64_t, 4> strides(rank, 0);
  for (int64_t d = offset; d < rank; ++d)
    if (inShape[d - offset] != 1)
      strides[d] = inStrides[d - offset];
  return stridedIndices(outShape, strides, 0);
}

std::string mlir::txopt::reference::typeString(const Tensor &tensor) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << tensor.getType();
  return text;
}
