//===- LinalgOps.cpp - matmul and gemm ------------------------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// Plain i-k-j triple loops (row-major, the inner loop streams one row of B
// and one row of the result), accumulating in double (int64 for integer
// operands) and rounded once per result element by the executor.
// Single-threaded, so the summation order, and the result, never vary.
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"

#include "txopt/Dialect/Tx/IR/TxOps.h"

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::reference;

namespace {

/// out[M, N] += sum_k a[i, k] * b[k, j], with a and b given by base offsets
/// and (row, column) strides into their storage.
template <typename T>
void matmulKernel(const T *a, int64_t aRow, int64_t aCol, const T *b,
                  int64_t bRow, int64_t bCol, T *out, int64_t m, int64_t n,
                  int64_t k) {
  for (int64_t i = 0; i < m; ++i) {
    T *outRow = out + i * n;
    for (int64_t kk = 0; kk < k; ++kk) {
      T av = a[i * aRow + kk * aCol];
      const T *bRowPtr = b + kk * bRow;
      if (bCol == 1) {
        for (int64_t j = 0; j < n; ++j)
          outRow[j] += av * bRowPtr[j];
      } else {
        for (int64_t j = 0; j < n; ++j)
          outRow[j] += av * bRowPtr[j * bCol];
      }
    }
  }
}

/// Integer version with two's-complement wrapping (no signed overflow UB).
void matmulKernelInt(const int64_t *a, int64_t aRow, int64_t aCol,
                     const int64_t *b, int64_t bRow, int64_t bCol, int64_t *out,
                     int64_t m, int64_t n, int64_t k) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t kk = 0; kk < k; ++kk) {
      uint64_t av = static_cast<uint64_t>(a[i * aRow + kk * aCol]);
      for (int64_t j = 0; j < n; ++j)
        out[i * n + j] = static_cast<int64_t>(
            static_cast<uint64_t>(out[i * n + j]) +
            av * static_cast<uint64_t>(b[kk * bRow + j * bCol]));
    }
}

Tensor evalMatMul(Operation *op, const Tensor &lhs, const Tensor &rhs) {
  Tensor result = makeResult(op);
  llvm::SmallVector<int64_t> ls(lhs.getShape()), rs(rhs.getShape());
  if (ls.size() == 1)
    ls.insert(ls.begin(), 1);
  if (rs.size() == 1)
    rs.push_back(1);
  int64_t m = ls[ls.size() - 2], k = ls.back(), n = rs.back();
  llvm::ArrayRef<int64_t> lb = llvm::ArrayRef<int64_t>(ls).drop_back(2);
  llvm::ArrayRef<int64_t> rb = llvm::ArrayRef<int64_t>(rs).drop_back(2);
  llvm::SmallVector<int64_t> batch = *tx::broadcastShapes(lb, rb);
  std::vector<int64_t> lIndex = broadcastIndices(lb, batch);
  std::vector<int64_t> rIndex = broadcastIndices(rb, batch);
  for (size_t b = 0; b < lIndex.size(); ++b) {
    int64_t lOff = lIndex[b] * m * k, rOff = rIndex[b] * k * n, oOff = b * m * n;
    if (result.isFloat())
      matmulKernel(lhs.floats().data() + lOff, k, 1, rhs.floats().data() + rOff,
                   n, 1, result.floats().data() + oOff, m, n, k);
    else
      matmulKernelInt(lhs.ints().data() + lOff, k, 1, rhs.ints().data() + rOff,
                      n, 1, result.ints().data() + oOff, m, n, k);
  }
  return result;
}

Tensor evalGemm(tx::GemmOp op, const Tensor &a, const Tensor &b,
                const Tensor *c) {
  Tensor result = makeResult(op);
  int64_t m = result.getShape()[0], n = result.getShape()[1];
  int64_t k = a.getShape()[op.getTransA() ? 0 : 1];
  // Strides of op(A)[i, k] and op(B)[k, j] in the row-major storage.
  int64_t aRow = op.getTransA() ? 1 : k, aCol = op.getTransA() ? m : 1;
  int64_t bRow = op.getTransB() ? 1 : n, bCol = op.getTransB() ? k : 1;
  if (result.isFloat()) {
    double alpha = op.getAlpha().convertToDouble();
    double beta = op.getBeta().convertToDouble();
    matmulKernel(a.floats().data(), aRow, aCol, b.floats().data(), bRow, bCol,
                 result.floats().data(), m, n, k);
    std::vector<int64_t> ci;
    if (c)
      ci = broadcastIndices(c->getShape(), result.getShape());
    for (int64_t i = 0; i < m * n; ++i) {
      double v = alpha * result.floats()[i];
      if (c)
        v += beta * c->floats()[ci[i]];
      result.floats()[i] = v;
    }
    return result;
  }
  matmulKernelInt(a.ints().data(), aRow, aCol, b.ints().data(), bRow, bCol,
                  result.ints().data(), m, n, k);
  auto alpha = static_cast<int64_t>(op.getAlpha().convertToDouble());
  auto beta = static_cast<int64_t>(op.getBeta().convertToDouble());
  std::vector<int64_t> ci;
  if (c)
    ci = broadcastIndices(c->getShape(), result.getShape());
  for (int64_t i = 0; i < m * n; ++i) {
    uint64_t v = static_cast<uint64_t>(alpha) * static_cast<uint64_t>(result.ints()[i]);
    if (c)
      v += static_cast<uint64_t>(beta) * static_cast<uint64_t>(c->ints()[ci[i]]);
    result.ints()[i] = static_cast<int64_t>(v);
  }
  return result;
}

/// tx.blas_gemm: each batch's op(a) op(b) read in place through strides (a
/// transposed operand is never copied), summed in double, then scaled by
/// the FP8 scale inverses, alpha, and beta * c added: the same operations
/// in the same order as the tx.matmul, tx.gemm or tx.fp8_matmul it came
/// from, so the same result.
Tensor evalBlasGemm(tx::BlasGemmOp op, const Tensor &a, const Tensor &b, const Tensor *c,
                    const Tensor *aScaleInv, const Tensor *bScaleInv) {
  Tensor result = makeResult(op);
  llvm::ArrayRef<int64_t> as = a.getShape(), bs = b.getShape();
  bool ta = op.getTransposeA(), tb = op.getTransposeB();
  int64_t m = as[as.size() - (ta ? 1 : 2)], k = as[as.size() - (ta ? 2 : 1)];
  int64_t n = bs[bs.size() - (tb ? 2 : 1)];
  // Strides of op(a)[i, k] and op(b)[k, j] in each batch's storage.
  int64_t aRow = ta ? 1 : k, aCol = ta ? m : 1;
  int64_t bRow = tb ? 1 : n, bCol = tb ? k : 1;
  llvm::ArrayRef<int64_t> ab = as.drop_back(2), bb = bs.drop_back(2);
  llvm::SmallVector<int64_t> batch = *tx::broadcastShapes(ab, bb);
  std::vector<int64_t> aIndex = broadcastIndices(ab, batch);
  std::vector<int64_t> bIndex = broadcastIndices(bb, batch);
  for (size_t i = 0; i < aIndex.size(); ++i)
    matmulKernel(a.floats().data() + aIndex[i] * m * k, aRow, aCol,
                 b.floats().data() + bIndex[i] * k * n, bRow, bCol,
                 result.floats().data() + i * m * n, m, n, k);
  double alpha = op.getAlpha().convertToDouble(), beta = op.getBeta().convertToDouble();
  std::vector<int64_t> ci;
  if (c)
    ci = broadcastIndices(c->getShape(), result.getShape());
  for (size_t i = 0; i < result.floats().size(); ++i) {
    double v = result.floats()[i];
    if (aScaleInv)
      v = v * aScaleInv->floats()[0] * bScaleInv->floats()[0];
    if (alpha != 1.0)
      v = alpha * v;
    if (c)
      v += beta * c->floats()[ci[i]];
    result.floats()[i] = v;
  }
  return result;
}

/// tx.blas_gemm_gelu: the sum s = alpha * op(a) op(b) + bias in double (one
/// matrix b; a's leading dims are rows), then both results from the
/// unrounded s, as the epilogue computes them from its f32 accumulator:
/// the pre-activation s and the tanh GELU of s. The executor rounds each
/// to the result type after.
void evalBlasGemmGelu(tx::BlasGemmGeluOp op, const Tensor &a, const Tensor &b,
                      const Tensor *bias, Tensor &gelu, Tensor &pre) {
  llvm::ArrayRef<int64_t> as = a.getShape(), bs = b.getShape();
  bool ta = op.getTransposeA(), tb = op.getTransposeB();
  int64_t k = as[as.size() - (ta ? 2 : 1)];
  int64_t m = a.getNumElements() / k;
  int64_t n = bs[tb ? 0 : 1];
  int64_t aRow = ta ? 1 : k, aCol = ta ? m : 1;
  int64_t bRow = tb ? 1 : n, bCol = tb ? k : 1;
  matmulKernel(a.floats().data(), aRow, aCol, b.floats().data(), bRow, bCol,
               pre.floats().data(), m, n, k);
  double alpha = op.getAlpha().convertToDouble();
  const double sqrt2OverPi = std::sqrt(2.0 / M_PI);
  for (int64_t i = 0; i < m * n; ++i) {
    double s = alpha * pre.floats()[i];
    if (bias)
      s += bias->floats()[i % n];
    pre.floats()[i] = s;
    gelu.floats()[i] = 0.5 * s * (1.0 + std::tanh(sqrt2OverPi * (s + 0.044715 * s * s * s)));
  }
}

} // namespace

llvm::Expected<bool> mlir::txopt::reference::evalLinalgOp(Operation *op,
                                                          const KernelArgs &args) {
  auto &in = args.operands;
  if (isa<tx::MatMulOp>(op)) {
    args.results.push_back(evalMatMul(op, *in[0], *in[1]));
    return true;
  }
  if (auto gemm = dyn_cast<tx::GemmOp>(op)) {
    args.results.push_back(
        evalGemm(gemm, *in[0], *in[1], in.size() > 2 ? in[2] : nullptr));
    return true;
  }
  if (auto gemm = dyn_cast<tx::BlasGemmOp>(op)) {
    // Operands in order: a, b, then c and the scale inverses when present.
    size_t next = 2;
    const Tensor *c = gemm.getC() ? in[next++] : nullptr;
    const Tensor *aScaleInv = gemm.getAScaleInv() ? in[next++] : nullptr;
    const Tensor *bScaleInv = gemm.getBScaleInv() ? in[next++] : nullptr;
    args.results.push_back(evalBlasGemm(gemm, *in[0], *in[1], c, aScaleInv, bScaleInv));
    return true;
  }
  if (auto gemm = dyn_cast<tx::BlasGemmGeluOp>(op)) {
    Tensor gelu = makeResult(op, 0), pre = makeResult(op, 1);
    evalBlasGemmGelu(gemm, *in[0], *in[1], gemm.getBias() ? in[2] : nullptr, gelu, pre);
    args.results.push_back(std::move(gelu));
    args.results.push_back(std::move(pre));
    return true;
  }
  return false;
}
