//===- GemmNormalForm.cpp - tx-gemm-normal-form -----------------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// tx.matmul, tx.gemm and tx.fp8_matmul, and the last-two-dims transposes
// they read, as tx.blas_gemm: what a backend's GEMM call takes, on one op.
//
//===----------------------------------------------------------------------===//

#include "txopt/Dialect/Tx/Transforms/GemmNormalForm.h"
#include "txopt/Dialect/Tx/IR/TxOps.h"
#include "txopt/Dialect/Tx/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace mlir::txopt::tx {
#define GEN_PASS_DEF_GEMMNORMALFORMPASS
#include "txopt/Dialect/Tx/Transforms/Passes.h.inc"
} // namespace mlir::txopt::tx

using namespace mlir;
using namespace mlir::txopt;

namespace {

RankedTensorType tensorType(Value v) { return cast<RankedTensorType>(v.getType()); }

bool isGemmFloat(Type t) { return t.isF32() || t.isBF16() || t.isF16(); }

/// The batch rule of tx.blas_gemm: the same batch dims, or one side shared.
std::string whyNotBatches(RankedTensorType a, RankedTensorType b) {
  ArrayRef<int64_t> aBatch = a.getShape().drop_back(2), bBatch = b.getShape().drop_back(2);
  if (tx::areGemmBatchesStridable(aBatch, bBatch))
    return "";
  return "batch dims " + tx::formatShape(aBatch) + " and " + tx::formatShape(bBatch) +
         " broadcast on both sides (a strided batch has one stride per side)";
}

struct GemmNormalFormPass : public tx::impl::GemmNormalFormPassBase<GemmNormalFormPass> {
  void runOnOperation() override { tx::toGemmNormalForm(getOperation()); }
};

} // namespace

bool tx::swapsLastTwoDims(Operation *op) {
  auto transpose = dyn_cast_or_null<tx::TransposeOp>(op);
  if (!transpose)
    return false;
  ArrayRef<int64_t> perm = transpose.getPerm();
  size_t rank = perm.size();
  if (rank < 2 || perm[rank - 2] != static_cast<int64_t>(rank - 1) ||
      perm[rank - 1] != static_cast<int64_t>(rank - 2))
    return false;
  for (size_t i = 0; i + 2 < rank; ++i)
    if (perm[i] != static_cast<int64_t>(i))
      return false;
  return true;
}

std::string tx::whyNotGemmNormalForm(Operation *op) {
  if (auto mm = dyn_cast<tx::MatMulOp>(op)) {
    RankedTensorType a = tensorType(mm.getLhs()), b = tensorType(mm.getRhs());
    if (a.getRank() < 2 || b.getRank() < 2)
      return "operands " + formatShape(a.getShape()) + " and " + formatShape(b.getShape()) +
             " are not both matrices (rank 2 or more)";
    if (a.getElementType() != b.getElementType() || !isGemmFloat(a.getElementType()))
      return "operands are not f32, bf16 or f16 of one type";
    return whyNotBatches(a, b);
  }
  if (auto gemm = dyn_cast<tx::GemmOp>(op)) {
    Type t = tensorType(gemm.getA()).getElementType();
    if (t != tensorType(gemm.getB()).getElementType() || !isGemmFloat(t))
      return "operands are not f32, bf16 or f16 of one type";
    return "";
  }
  if (auto mm = dyn_cast<tx::FP8MatmulOp>(op))
    return whyNotBatches(tensorType(mm.getLhs()), tensorType(mm.getRhs()));
  return "not a GEMM";
}

/// Whether |use|'s GEMM can read a last-two-dims transpose in that operand
/// position through its flag.
static bool readsThroughFlag(OpOperand &use) {
  Operation *gemm = use.getOwner();
  if (isa<tx::MatMulOp, tx::GemmOp>(gemm))
    return use.getOperandNumber() < 2 && tx::whyNotGemmNormalForm(gemm).empty();
  // cuBLASLt's FP8 GEMMs take only the TN form: an FP8 `a` is never
  // transposed, but a transposed `b` is what they read anyway.
  if (isa<tx::FP8MatmulOp>(gemm))
    return use.getOperandNumber() == 1 && tx::whyNotGemmNormalForm(gemm).empty();
  return false;
}

bool tx::isFoldedIntoGemms(Operation *op) {
  return swapsLastTwoDims(op) && !op->use_empty() &&
         llvm::all_of(op->getResult(0).getUses(), readsThroughFlag);
}

tx::GemmNormalFormResult tx::toGemmNormalForm(func::FuncOp func) {
  GemmNormalFormResult result;
  if (func.isExternal())
    return result;
  llvm::SmallVector<Operation *> gemms;
  llvm::SmallPtrSet<Operation *, 16> folded;
  func.walk([&](Operation *op) {
    if (isa<tx::MatMulOp, tx::GemmOp, tx::FP8MatmulOp>(op))
      gemms.push_back(op);
    else if (isFoldedIntoGemms(op))
      folded.insert(op);
  });
  for (Operation *op : gemms) {
    std::string why = whyNotGemmNormalForm(op);
    if (!why.empty()) {
      result.left.push_back({op, why});
      continue;
    }
    OpBuilder b(op);
    Value a = op->getOperand(0), bm = op->getOperand(1), c, aScaleInv, bScaleInv;
    bool transposeA = false, transposeB = false;
    float alpha = 1.0f, beta = 1.0f;
    bool fastAccumulation = false;
    if (auto gemm = dyn_cast<tx::GemmOp>(op)) {
      c = gemm.getC();
      transposeA = gemm.getTransA();
      transposeB = gemm.getTransB();
      alpha = gemm.getAlpha().convertToFloat();
      beta = gemm.getBeta().convertToFloat();
    } else if (auto mm = dyn_cast<tx::FP8MatmulOp>(op)) {
      aScaleInv = mm.getLhsScaleInv();
      bScaleInv = mm.getRhsScaleInv();
      fastAccumulation = mm.getFastAccumulation();
    }
    if (Operation *def = a.getDefiningOp(); def && folded.contains(def)) {
      a = def->getOperand(0);
      transposeA = !transposeA;
    }
    if (Operation *def = bm.getDefiningOp(); def && folded.contains(def)) {
      bm = def->getOperand(0);
      transposeB = !transposeB;
    }
    auto normal = tx::BlasGemmOp::create(
        b, op->getLoc(), op->getResult(0).getType(), a, bm, c, aScaleInv, bScaleInv,
        transposeA ? b.getUnitAttr() : UnitAttr(), transposeB ? b.getUnitAttr() : UnitAttr(),
        b.getF32FloatAttr(alpha), b.getF32FloatAttr(beta),
        fastAccumulation ? b.getUnitAttr() : UnitAttr());
    op->getResult(0).replaceAllUsesWith(normal.getResult());
    op->erase();
    ++result.rewritten;
  }
  for (Operation *transpose : folded) {
    if (transpose->use_empty()) {
      transpose->erase();
      ++result.foldedTransposes;
    }
  }
  return result;
}
