//===- GemmTransposes.cpp - tx-gemm-transposes ------------------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// A GEMM reads a last-two-dims transpose of an operand through its
// transpose flag (tx::isFoldedIntoGemms), and can write its result
// transposed by swapping its operands (C^T = B^T A^T). Two rewrites put the
// transposes where the GEMMs fold them instead of in kernels that move data
// across strides:
//
// - a cast of such a transpose read only by GEMMs (the tied LM head reading
//   the f32 embedding as [d, vocab] in bf16) was one kernel that transposed
//   while it converted, its reads or its writes strided (GPT-2's 50304 x 768
//   embedding: 0.28 ms per step, a fifth of the copy bandwidth). A cast
//   commutes with a transpose exactly, so it moves before it: the kernel
//   converts in place order, the GEMMs fold the transpose, and a transpose
//   of that transpose (the backward's GEMM reading the weight as it is) is
//   the cast itself;
// - a 2-D GEMM whose result is read only through a transpose (maybe after
//   a cast), the tied embedding's LM-head gradient [d, vocab] added to its
//   gather gradient [vocab, d], computes the transposed result itself, so
//   the add reads both in place order (GPT-2: 0.28 ms at 1.4 TB/s).
//
//===----------------------------------------------------------------------===//

#include "txopt/Dialect/Tx/Transforms/GemmTransposes.h"
#include "txopt/Dialect/Tx/IR/TxOps.h"
#include "txopt/Dialect/Tx/Transforms/GemmNormalForm.h"
#include "txopt/Dialect/Tx/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

#include <numeric>

namespace mlir::txopt::tx {
#define GEN_PASS_DEF_GEMMTRANSPOSESPASS
#include "txopt/Dialect/Tx/Transforms/Passes.h.inc"
} // namespace mlir::txopt::tx

using namespace mlir;
using namespace mlir::txopt;

namespace {

RankedTensorType tensorType(Value v) { return cast<RankedTensorType>(v.getType()); }

/// Whether every reader of |v| is a matmul, or a transpose the GEMMs
/// reading it fold (tx::isFoldedIntoGemms).
bool readByGemmsOnly(Value v) {
  return !v.use_empty() && llvm::all_of(v.getUsers(), [](Operation *user) {
    return isa<tx::MatMulOp>(user) || tx::isFoldedIntoGemms(user);
  });
}

unsigned castGemmOperandsBeforeTransposes(func::FuncOp func) {
  llvm::SmallVector<tx::CastOp> casts;
  func.walk([&](tx::CastOp c) {
    Operation *def = c.getInput().getDefiningOp();
    if (tx::swapsLastTwoDims(def) && c.getInput().hasOneUse() && readByGemmsOnly(c.getResult()))
      casts.push_back(c);
  });
  for (tx::CastOp c : casts) {
    auto transpose = c.getInput().getDefiningOp<tx::TransposeOp>();
    Value source = transpose.getInput();
    OpBuilder b(c);
    auto converted = tx::CastOp::create(
        b, c.getLoc(),
        RankedTensorType::get(tensorType(source).getShape(),
                              tensorType(c.getResult()).getElementType()),
        source);
    auto moved = tx::TransposeOp::create(b, transpose.getLoc(), tensorType(c.getResult()),
                                         converted.getResult(), transpose.getPermAttr());
    // A transpose back (the backward's GEMM reading the weight as it is)
    // is the converted weight itself.
    for (Operation *user : llvm::make_early_inc_range(c.getResult().getUsers()))
      if (tx::swapsLastTwoDims(user)) {
        user->getResult(0).replaceAllUsesWith(converted.getResult());
        user->erase();
      }
    c.getResult().replaceAllUsesWith(moved.getResult());
    c.erase();
    transpose.erase();
    // Read only through transposes back: nothing reads it the other way
    // (left, it would be computed by a kernel of its own).
    if (moved.getResult().use_empty())
      moved.erase();
  }
  return casts.size();
}

/// |v| transposed over its last two dims, as a value a GEMM folds: the
/// input of |v|'s own such transpose, or a new transpose at |b|.
Value swappedOperand(OpBuilder &b, Value v) {
  if (tx::swapsLastTwoDims(v.getDefiningOp()))
    return v.getDefiningOp()->getOperand(0);
  int64_t rank = tensorType(v).getRank();
  llvm::SmallVector<int64_t> perm(rank);
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[rank - 1], perm[rank - 2]);
  return tx::TransposeOp::create(b, v.getLoc(), v, b.getDenseI64ArrayAttr(perm)).getResult();
}

unsigned transposeGemmResults(func::FuncOp func) {
  llvm::SmallVector<tx::MatMulOp> matmuls;
  func.walk([&](tx::MatMulOp mm) {
    // Plain 2-D products only: a batched one broadcasts, and a transpose
    // of its operands would too.
    if (tensorType(mm.getLhs()).getRank() != 2 || tensorType(mm.getRhs()).getRank() != 2 ||
        !mm.getResult().hasOneUse())
      return;
    Operation *user = *mm.getResult().getUsers().begin();
    if (auto c = dyn_cast<tx::CastOp>(user)) {
      if (!c.getResult().hasOneUse())
        return;
      user = *c.getResult().getUsers().begin();
    }
    if (tx::swapsLastTwoDims(user))
      matmuls.push_back(mm);
  });
  for (tx::MatMulOp mm : matmuls) {
    Operation *user = *mm.getResult().getUsers().begin();
    auto c = dyn_cast<tx::CastOp>(user);
    Operation *transpose = c ? *c.getResult().getUsers().begin() : user;
    OpBuilder b(mm);
    Value lhs = swappedOperand(b, mm.getRhs()), rhs = swappedOperand(b, mm.getLhs());
    auto resultType = cast<RankedTensorType>(transpose->getResult(0).getType());
    auto product = tx::MatMulOp::create(b, mm.getLoc(), lhs, rhs);
    Value result = product.getResult();
    if (c) {
      b.setInsertionPoint(c);
      result = tx::CastOp::create(b, c.getLoc(), resultType, result).getResult();
    }
    transpose->getResult(0).replaceAllUsesWith(result);
    transpose->erase();
    if (c)
      c.erase();
    llvm::SmallPtrSet<Operation *, 2> operandDefs;
    for (Value operand : mm->getOperands())
      if (Operation *def = operand.getDefiningOp(); def && tx::swapsLastTwoDims(def))
        operandDefs.insert(def);
    mm.erase();
    // A transpose of an operand that only this GEMM read is dead now (once,
    // when both operands are the same transpose).
    for (Operation *def : operandDefs)
      if (def->use_empty())
        def->erase();
  }
  return matmuls.size();
}

struct GemmTransposesPass : public tx::impl::GemmTransposesPassBase<GemmTransposesPass> {
  void runOnOperation() override { tx::moveTransposesIntoGemms(getOperation()); }
};

} // namespace

tx::GemmTransposesResult tx::moveTransposesIntoGemms(func::FuncOp func) {
  GemmTransposesResult result;
  if (func.isExternal())
    return result;
  // Operands first, then results: the order the GPU lowering's plans were
  // checked with (GPU.md, stage 0).
  result.castsMoved = castGemmOperandsBeforeTransposes(func);
  result.resultsTransposed = transposeGemmResults(func);
  return result;
}
