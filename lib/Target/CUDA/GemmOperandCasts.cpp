//===- GemmOperandCasts.cpp - casts of GEMM operands before transposes ----===//
//
// SPDX-License-Identifier: Apache-2.0
// A GEMM reads a last-two-dims transpose of its operand through its
// transpose flag (isFoldedIntoGemm), but not a cast of such a transpose:
// `cast(transpose(w))` (the tied LM head reading the f32 embedding as
// [d, vocab] in bf16) became one kernel that transposed while it converted,
// its reads or its writes strided (GPT-2's 50304 x 768 embedding: 0.28 ms
// per step, at a fifth of the copy bandwidth). A cast commutes with a
// transpose exactly, so it is moved before it: the kernel converts in
// place order and the GEMMs fold the transpose, and a transpose of that
// transpose (the backward's GEMM reading the weight as it is) is the cast
// itself.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"
#include "KernelUtils.h"

#include "txopt/Dialect/Tx/IR/TxOps.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::cuda;

/// Whether |op| is a transpose that swaps the last two dims only.
static bool isLastTwoSwap(Operation *op) {
  auto transpose = dyn_cast_or_null<tx::TransposeOp>(op);
  if (!transpose)
    return false;
  llvm::ArrayRef<int64_t> perm = transpose.getPerm();
  size_t rank = perm.size();
  if (rank < 2)
    return false;
  for (size_t i = 0; i < rank; ++i) {
    size_t expected = i + 2 < rank ? i : (i + 2 == rank ? rank - 1 : rank - 2);
    if (perm[i] != static_cast<int64_t>(expected))
      return false;
  }
  return true;
}

/// Whether every reader of |v| is a matmul, or a last-two-dims transpose
/// only matmuls read: a GEMM folds whichever transpose it meets.
static bool readByGemmsOnly(Value v) {
  return !v.use_empty() && llvm::all_of(v.getUsers(), [](Operation *user) {
    if (isa<tx::MatMulOp>(user))
      return true;
    return isLastTwoSwap(user) && !user->getResult(0).use_empty() &&
           llvm::all_of(user->getResult(0).getUsers(),
                        [](Operation *u) { return isa<tx::MatMulOp>(u); });
  });
}

void cuda::castGemmOperandsBeforeTransposes(func::FuncOp func) {
  llvm::SmallVector<tx::CastOp> casts;
  func.walk([&](tx::CastOp c) {
    Operation *def = c.getInput().getDefiningOp();
    if (isLastTwoSwap(def) && c.getInput().hasOneUse() && readByGemmsOnly(c.getResult()))
      casts.push_back(c);
  });
  for (tx::CastOp c : casts) {
    auto transpose = c.getInput().getDefiningOp<tx::TransposeOp>();
    Value source = transpose.getInput();
    OpBuilder b(c);
    auto converted = tx::CastOp::create(
        b, c.getLoc(),
        RankedTensorType::get(typeOf(source).getShape(), typeOf(c.getResult()).getElementType()),
        source);
    auto moved = tx::TransposeOp::create(b, transpose.getLoc(), typeOf(c.getResult()),
                                         converted.getResult(), transpose.getPermAttr());
    // A transpose back (the backward's GEMM reading the weight as it is)
    // is the converted weight itself.
    for (Operation *user : llvm::make_early_inc_range(c.getResult().getUsers()))
      if (isLastTwoSwap(user)) {
        user->getResult(0).replaceAllUsesWith(converted.getResult());
        user->erase();
      }
    c.getResult().replaceAllUsesWith(moved.getResult());
    c.erase();
    transpose.erase();
  }
}
