//===- LinalgGradients.cpp - matmul, gemm ---------------------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// Gradient rules of tx.matmul and tx.gemm.
// Each rule is the op's DifferentiableOpInterface::buildGradients and states
// its formula; `g` is the result gradient and `y` the op's result. Every
// rule is checked against finite differences by test/Reference/gradcheck.py.
//
//===----------------------------------------------------------------------===//

#include "GradientUtils.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/STLExtras.h"

#include <cmath>
#include <numeric>

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::tx;
using namespace mlir::txopt::tx::gradient;

// Linear algebra
//===----------------------------------------------------------------------===//

// y = a @ b (numpy matmul): da = g @ b^T, db = a^T @ g, each summed over the
// batch dims its operand was broadcast along. 1-D operands are made 2-D
// first (a row / a column) and the gradient reshaped back. A 2-D b under a
// batched a (every linear layer) takes one flattened GEMM for db.
LogicalResult MatMulOp::buildGradients(GradientContext &c) {
  MatMulOp op = *this;
  ImplicitLocOpBuilder &b = c.b;
  Value lhs = op.getLhs(), rhs = op.getRhs();
  ArrayRef<int64_t> lhsShape = tensorTypeOf(lhs).getShape();
  ArrayRef<int64_t> rhsShape = tensorTypeOf(rhs).getShape();
  bool lhsVector = lhsShape.size() == 1, rhsVector = rhsShape.size() == 1;
  SmallVector<int64_t> lhs2(lhsShape), rhs2(rhsShape);
  if (lhsVector)
    lhs2.insert(lhs2.begin(), 1);
  if (rhsVector)
    rhs2.push_back(1);
  FailureOr<SmallVector<int64_t>> batch =
      broadcastShapes(ArrayRef<int64_t>(lhs2).drop_back(2),
                      ArrayRef<int64_t>(rhs2).drop_back(2));
  if (failed(batch))
    return mlir::emitError(op.getLoc(),
                     "internal error: matmul batch dims do not broadcast");
  SmallVector<int64_t> out2(*batch);
  out2.push_back(lhs2[lhs2.size() - 2]);
  out2.push_back(rhs2.back());
  Value g2 = reshape(b, c.g(), out2);
  Value lhsM = reshape(b, lhs, lhs2), rhsM = reshape(b, rhs, rhs2);

  if (c.wants(0)) {
    Value d = MatMulOp::create(b, g2, transposeLast2(b, rhsM));
    c.set(0, reshape(b, sumToShape(b, d, lhs2), lhsShape));
  }
  if (c.wants(1)) {
    Value d;
    if (rhs2.size() == 2 && lhs2.size() > 2) {
      int64_t k = lhs2.back(), n = rhs2.back();
      int64_t rows = 1;
      for (int64_t dim : ArrayRef<int64_t>(lhs2).drop_back())
        rows *= dim;
      Value a = reshape(b, lhsM, {rows, k});
      Value gm = reshape(b, g2, {rows, n});
      d = MatMulOp::create(b, transposeLast2(b, a), gm);
    } else {
      d = sumToShape(b, MatMulOp::create(b, transposeLast2(b, lhsM), g2), rhs2);
    }
    c.set(1, reshape(b, d, rhsShape));
  }
  return success();
}

// y = alpha * op(A) @ op(B) + beta * C, written with Gemm's own transposes:
//   dA = alpha * g @ op(B)^T   (transA: alpha * op(B) @ g^T)
//   dB = alpha * op(A)^T @ g   (transB: alpha * g^T @ op(A))
//   dC = beta * sum of g over C's broadcast dims
LogicalResult GemmOp::buildGradients(GradientContext &c) {
  GemmOp op = *this;
  ImplicitLocOpBuilder &b = c.b;
  Value g = c.g(), a = op.getA(), bm = op.getB();
  bool transA = op.getTransA(), transB = op.getTransB();
  FloatAttr alpha = op.getAlphaAttr();
  FloatAttr one = b.getF32FloatAttr(1.0f);
  auto gemm = [&](Value x, Value y, bool tx, bool ty) -> Value {
    return GemmOp::create(b, x, y, /*c=*/nullptr, alpha, one, b.getBoolAttr(tx),
                          b.getBoolAttr(ty));
  };
  if (c.wants(0))
    c.set(0, transA ? gemm(bm, g, transB, true) : gemm(g, bm, false, !transB));
  if (c.wants(1))
    c.set(1, transB ? gemm(g, a, true, transA) : gemm(a, g, !transA, false));
  if (op.getC() && c.wants(2))
    c.set(2, mulScalar(b, sumToType(b, g, op.getC()),
                       op.getBeta().convertToDouble()));
  return success();
}

//===----------------------------------------------------------------------===//
