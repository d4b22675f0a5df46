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
#include <string>
#include <vector>

namespace mlir::txopt::reference {

class Tensor {
public:
  Tensor() = default;
  /// A zero-filled tensor of |shape| with |elementType| (a FloatType or a
  /// signless IntegerType).
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
/// round to nearest even, saturating to +-max; other formats through APFloat).
double roundToType(FloatType type, double value);

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
