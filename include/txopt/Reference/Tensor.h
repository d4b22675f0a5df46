//===- Tensor.h - values of the reference executor --------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// A statically shaped, row-major tensor with an MLIR element type. Float
// tensors (any FloatType) store doubles; integer tensors (any signless
// integer type, i1 included) store int64_t, so integer arithmetic is exact.
// A float tensor's values are always representable in its element type,
// except in the executor's f64 mode, where they are kept unrounded.
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_REFERENCE_TENSOR_H
#define TXOPT_REFERENCE_TENSOR_H

#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace mlir::txopt::reference {

//===----------------------------------------------------------------------===//
// Memory budget
//===----------------------------------------------------------------------===//
//
// Every tensor stores 8 bytes per element (a double or an int64_t), whatever
// its element type. A model that import accepts may still ask for a tensor
// larger than the machine (a 2^31 input dim, a 2^37-element splat constant),
// so the executor and txopt-run check sizes against a process-wide budget
// before they allocate, and report the value at fault; the Tensor
// constructor checks again as a last resort and throws TensorBudgetError
// (tools catch it at main and print one line).

/// Bytes the executor stores for a tensor of |shape| (8 per element), or
/// std::nullopt when a dim is negative or the count overflows 64 bits.
std::optional<uint64_t> storageBytes(llvm::ArrayRef<int64_t> shape);

/// The budget for tensors, in bytes (0: unlimited). Defaults to
/// defaultMemoryBudget().
uint64_t getMemoryBudget();
void setMemoryBudget(uint64_t bytes);
/// The machine's physical memory (sysconf _SC_PHYS_PAGES * _SC_PAGE_SIZE),
/// or 0 (unlimited) when it cannot be read.
uint64_t defaultMemoryBudget();

/// Fails unless |bytes| more (on top of |inUse|) fit in the budget. The
/// message reads "<what> needs N bytes, more than the memory budget of M
/// bytes (--max-memory)" (with the bytes already in use, when any).
llvm::Error checkBudget(const llvm::Twine &what, std::optional<uint64_t> bytes,
                        uint64_t inUse = 0);
/// checkBudget for a tensor of |type|; |what| names the value, and the
/// message adds the type.
llvm::Error checkTensorBudget(RankedTensorType type, const llvm::Twine &what,
                              uint64_t inUse = 0);

/// What the Tensor constructor throws for a shape over the budget (or whose
/// size overflows): the last resort behind the checks above.
class TensorBudgetError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

class Tensor {
public:
  Tensor() = default;
  /// A zero-filled tensor of |shape| with |elementType| (a FloatType or a
  /// signless IntegerType). Throws TensorBudgetError when the tensor does
  /// not fit in the memory budget (callers check first; see above).
  Tensor(Type elementType, llvm::ArrayRef<int64_t> shape);
  Tensor(RankedTensorType type) : Tensor(type.getElementType(), type.getShape()) {}

  Type getElementType() const { return elementType; }
  llvm::ArrayRef<int64_t> getShape() const { return shape; }
  int64_t getRank() const { return static_cast<int64_t>(shape.size()); }
  int64_t getNumElements() const { return numElements; }
  RankedTensorType getType() const {
    return RankedTensorType::get(shape, elementType);
  }
  bool isFloat() const { return floatStorage; }

  /// Storage: exactly one of these is in use, by isFloat().
  std::vector<double> &floats() { return floatData; }
  const std::vector<double> &floats() const { return floatData; }
  std::vector<int64_t> &ints() { return intData; }
  const std::vector<int64_t> &ints() const { return intData; }

  /// Element |i| converted to double / int64 (floats truncate toward zero).
  double getDouble(int64_t i) const {
    return floatStorage ? floatData[i] : static_cast<double>(intData[i]);
  }
  int64_t getInt(int64_t i) const;

  /// The same elements under another shape (element counts must agree).
  Tensor reshaped(llvm::ArrayRef<int64_t> newShape) const;

  /// Copies element |src| of |from| (same storage kind) into element |dst|.
  void copyElement(int64_t dst, const Tensor &from, int64_t src) {
    if (floatStorage)
      floatData[dst] = from.floatData[src];
    else
      intData[dst] = from.intData[src];
  }

  /// The contents of a constant (dense or dense_resource elements).
  static llvm::Expected<Tensor> fromAttr(ElementsAttr attr);
  /// A tensor of |type| from little-endian row-major |bytes| (a parameter's
  /// source); the byte count must match the type.
  static llvm::Expected<Tensor> fromBytes(RankedTensorType type,
                                          llvm::ArrayRef<char> bytes);

private:
  Type elementType;
  llvm::SmallVector<int64_t, 4> shape;
  int64_t numElements = 0;
  bool floatStorage = false;
  std::vector<double> floatData;
  std::vector<int64_t> intData;
};

/// Rounds |value| to the float type |type| (f64: unchanged; f32, f16, bf16
/// bit-exactly, round to nearest even; f8E4M3FN and f8E5M2 bit-exactly,
/// round to nearest even, finite values saturating to +-max, an E5M2
/// infinity kept; other formats through APFloat).
double roundToType(FloatType type, double value);

/// |value| as a saturating conversion into |type| must give it before
/// roundToType: an infinity becomes the largest finite E5M2 value (ONNX Cast
/// with saturate=1, TE's casts, the GPU's satfinite conversions). Storage
/// keeps E5M2 infinities, so tx.cast and tx.quantize call this first. Other
/// types pass unchanged (E4M3FN saturates infinities in roundToType).
double saturateInfinityForFP8(Type type, double value);

/// Wraps |value| to the signless integer type of |width| bits: i1 becomes
/// 0/1 (`value != 0`), other widths keep the low bits, sign-extended.
int64_t wrapToWidth(int64_t value, unsigned width);

/// Rounds every element of |tensor| to its element type (see above).
void roundToElementType(Tensor &tensor);

/// Row-major strides of |shape|.
llvm::SmallVector<int64_t, 4> stridesOf(llvm::ArrayRef<int64_t> shape);

/// For every element of a tensor of shape |outShape| (row-major, multi-index
/// j), the linear index `offset + sum_k j_k * strides[k]`.
std::vector<int64_t> stridedIndices(llvm::ArrayRef<int64_t> outShape,
                                    llvm::ArrayRef<int64_t> strides,
                                    int64_t offset);

/// For every element of a tensor of shape |outShape| (row-major), the linear
/// index of the element of a tensor of shape |inShape| that numpy
/// broadcasting maps to it. |inShape| must broadcast to |outShape|.
std::vector<int64_t> broadcastIndices(llvm::ArrayRef<int64_t> inShape,
                                      llvm::ArrayRef<int64_t> outShape);

/// Formats an element type and shape as `tensor<2x3xf32>`.
std::string typeString(const Tensor &tensor);

} // namespace mlir::txopt::reference

#endif // TXOPT_REFERENCE_TENSOR_H
