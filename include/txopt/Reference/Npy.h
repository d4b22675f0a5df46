//===- Npy.h - NumPy .npy files for the reference executor ------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// Reads and writes NumPy's .npy format (versions 1.0 to 3.0), C order,
// little endian, for the dtypes the executor exchanges:
//
//   '<f2' f16   '<f4' f32   '<f8' f64   '<i4' i32   '<i8' i64   '|b1' i1
//
// and, read only, '|i1' '|u1' as i8, '<i2' '<u2' as i16, '<u4' as i32 and
// '<u8' as i64 (unsigned values keep their bits in the signless type).
//
// Writing a tensor whose element type has no dtype above widens it exactly:
// bf16 and other small floats to '<f4', other integer widths to '<i8'.
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_REFERENCE_NPY_H
#define TXOPT_REFERENCE_NPY_H

#include "txopt/Reference/Tensor.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace mlir::txopt::reference {

/// Parses the bytes of a .npy file. Errors name what is wrong with the
/// header or the data size.
llvm::Expected<Tensor> parseNpy(MLIRContext *context, llvm::StringRef bytes);

/// Reads |path| with parseNpy.
llvm::Expected<Tensor> readNpyFile(MLIRContext *context, llvm::StringRef path);

/// Serializes |tensor| as a version 1.0 .npy file.
std::string serializeNpy(const Tensor &tensor);

/// Writes |tensor| to |path| (through a temporary file renamed into place).
llvm::Error writeNpyFile(const Tensor &tensor, llvm::StringRef path);

/// The dtype string a tensor of |type| is written with ('<f4', ...).
std::string npyDtypeFor(Type elementType);

/// The safetensors dtype a checkpoint stores an |elementType| tensor as
/// ('F32', 'BF16', 'F8_E4M3', 'BOOL', 'I64', ...), or "" when checkpoints
/// cannot hold it. txopt-run writes checkpoints with it, txopt --weights
/// reads them.
std::string safetensorsDType(Type elementType);

} // namespace mlir::txopt::reference

#endif // TXOPT_REFERENCE_NPY_H
