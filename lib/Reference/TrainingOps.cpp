//===- TrainingOps.cpp - fused norms, their gradients, the optimizer ------===//
//
// SPDX-License-Identifier: Apache-2.0
// The training ops the fusion passes and autodiff create (TxNormOps.td,
// TxOptimOps.td: tx.layer_norm, tx.rms_norm, their *_grad, tx.adam,
// tx.sgd). The norms compute their statistics and sums in double and round
// each result once (mean/rstd to f32, the rest to their element types), like
// the ONNX norms in ReductionOps.cpp. tx.adam and tx.sgd follow their own
// contract instead: scalars computed in double from the f64 hyper-parameters
// and rounded to f32 once (as PyTorch does), then every line of the formula
// rounded to f32 in the order written, so fused kernels can be checked
// against exactly that.
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"

#include "txopt/Dialect/Tx/IR/TxOps.h"

#include <cmath>

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::reference;

namespace {

/// Rows of a norm over the innermost dim of |input|: (rows, D).
std::pair<int64_t, int64_t> rowsOf(const Tensor &input) {
  int64_t d = input.getShape().back();
  return {d ? input.getNumElements() / d : 0, d};
}

/// tx.layer_norm / tx.rms_norm (|center| false): result, [mean,] rstd.
void evalNormForward(Operation *op, llvm::ArrayRef<const Tensor *> in,
                     double epsilon, bool center,
                     llvm::SmallVectorImpl<Tensor> &results) {
  const Tensor &x = *in[0], &gamma = *in[1];
  const Tensor *beta = center && in.size() > 2 ? in[2] : nullptr;
  auto [rows, d] = rowsOf(x);
  Tensor y = makeResult(op, 0);
  Tensor mean = center ? makeResult(op, 1) : Tensor();
  Tensor rstd = makeResult(op, center ? 2 : 1);
  for (int64_t r = 0; r < rows; ++r) {
    const double *xr = x.floats().data() + r * d;
    double mu = 0.0;
    if (center) {
      for (int64_t j = 0; j < d; ++j)
        mu += xr[j];
      mu /= d;
    }
    double var = 0.0;
    for (int64_t j = 0; j < d; ++j)
      var += (xr[j] - mu) * (xr[j] - mu);
    var /= d;
    double inv = 1.0 / std::sqrt(var + epsilon);
    for (int64_t j = 0; j < d; ++j) {
      double v = (xr[j] - mu) * inv * gamma.floats()[j];
      if (beta)
        v += beta->floats()[j];
      y.floats()[r * d + j] = v;
    }
    if (center)
      mean.floats()[r] = mu;
    rstd.floats()[r] = inv;
  }
  results.push_back(std::move(y));
  if (center)
    results.push_back(std::move(mean));
  results.push_back(std::move(rstd));
}

/// tx.layer_norm_grad (|center|) and tx.rms_norm_grad, with the saved
/// statistics taken as given.
void evalNormBackward(Operation *op, llvm::ArrayRef<const Tensor *> in,
                      bool center, llvm::SmallVectorImpl<Tensor> &results) {
  const Tensor &dy = *in[0], &x = *in[1], &gamma = *in[2];
  const Tensor *mean = center ? in[3] : nullptr;
  const Tensor &rstd = *in[center ? 4 : 3];
  auto [rows, d] = rowsOf(x);
  Tensor dx = makeResult(op, 0);
  Tensor dgamma = makeResult(op, 1);
  Tensor dbeta = center ? makeResult(op, 2) : Tensor();
  std::vector<double> xhat(d), g(d);
  for (int64_t r = 0; r < rows; ++r) {
    double mu = center ? mean->floats()[r] : 0.0;
    double inv = rstd.floats()[r];
    double sumG = 0.0, sumGX = 0.0;
    for (int64_t j = 0; j < d; ++j) {
      double dyj = dy.floats()[r * d + j];
      xhat[j] = (x.floats()[r * d + j] - mu) * inv;
      g[j] = dyj * gamma.floats()[j];
      sumG += g[j];
      sumGX += g[j] * xhat[j];
      dgamma.floats()[j] += dyj * xhat[j];
      if (center)
        dbeta.floats()[j] += dyj;
    }
    for (int64_t j = 0; j < d; ++j) {
      double v = g[j] - xhat[j] * sumGX / d;
      if (center)
        v -= sumG / d;
      dx.floats()[r * d + j] = inv * v;
    }
  }
  results.push_back(std::move(dx));
  results.push_back(std::move(dgamma));
  if (center)
    results.push_back(std::move(dbeta));
}

/// tx.adam: the scalars as PyTorch forms them (in double from the f64
/// attributes and the f32 lr and step, rounded to f32 once), then every
/// line of the formula rounded to the parameter's type in the order written.
void evalAdam(tx::AdamOp op, llvm::ArrayRef<const Tensor *> in,
              const ExecutorOptions &options,
              llvm::SmallVectorImpl<Tensor> &results) {
  unsigned n = op.getNumParams();
  Type f32 = Float32Type::get(op.getContext());
  auto r32 = [&](double v) { return roundUnlessF64(f32, v, options); };
  double beta1 = op.getBeta1().convertToDouble();
  double beta2 = op.getBeta2().convertToDouble();
  double eps = op.getEpsilon().convertToDouble();
  double wd = op.getWeightDecay().convertToDouble();
  double lr = in[4 * n]->floats()[0];
  bool adamw = op.getMode() == tx::AdamMode::adamw;
  tx::EpsilonPlacement placement = op.getEpsilonPlacement();
  bool correct = op.getBiasCorrection();
  // PyTorch multiplies by f32(beta) but forms `1 - beta` (and `1 - beta^t`)
  // from the double: f32(1 - 0.999) = 0.001, where 1 - f32(0.999) would be
  // 0.00099998713.
  double b1 = r32(beta1), b2 = r32(beta2), wdL2 = r32(wd);
  double oneMinusBeta1 = r32(1.0 - beta1), oneMinusBeta2 = r32(1.0 - beta2);
  double lrWd = r32(lr * wd);
  double bc1 = 1.0, bc2 = 1.0, epsTerm = r32(eps);
  if (correct) {
    double step = in[4 * n + 1]->floats()[0];
    double power1 = std::pow(beta1, step), power2 = std::pow(beta2, step);
    if (op.getF32BiasCorrection()) {
      // As the graph (or torch's capturable path) computes it: f32 ops on
      // the f32 beta.
      power1 = r32(std::pow(b1, step));
      power2 = r32(std::pow(b2, step));
    }
    bc1 = r32(1.0 - power1);
    bc2 = r32(1.0 - power2);
    if (placement == tx::EpsilonPlacement::epsilon_hat)
      epsTerm = r32(eps / std::sqrt(1.0 - power2)); // epsilon * c2
  }
  bool inside = placement == tx::EpsilonPlacement::inside_sqrt;
  llvm::SmallVector<Tensor> newParams, newM, newV;
  for (unsigned i = 0; i < n; ++i) {
    const Tensor &p = *in[i], &g = *in[n + i], &m = *in[2 * n + i],
                 &v = *in[3 * n + i];
    Type type = p.getElementType();
    auto rt = [&](double x) { return roundUnlessF64(type, x, options); };
    Tensor np = makeResult(op, i), nm = makeResult(op, n + i),
           nv = makeResult(op, 2 * n + i);
    for (int64_t k = 0, e = p.getNumElements(); k < e; ++k) {
      double pk = p.floats()[k], gk = g.floats()[k];
      if (!adamw)
        gk = rt(gk + rt(wdL2 * pk));
      double mk = rt(rt(b1 * m.floats()[k]) + rt(oneMinusBeta1 * gk));
      double vk = rt(rt(b2 * v.floats()[k]) + rt(rt(oneMinusBeta2 * gk) * gk));
      double mHat = correct ? rt(mk / bc1) : mk;
      double vHat = correct ? rt(vk / bc2) : vk;
      double den = inside ? rt(std::sqrt(rt(vHat + epsTerm)))
                          : rt(rt(std::sqrt(vHat)) + epsTerm);
      double pd = adamw ? rt(pk - rt(lrWd * pk)) : pk;
      np.floats()[k] = rt(pd - rt(rt(lr * mHat) / den));
      nm.floats()[k] = mk;
      nv.floats()[k] = vk;
    }
    newParams.push_back(std::move(np));
    newM.push_back(std::move(nm));
    newV.push_back(std::move(nv));
  }
  for (auto *list : {&newParams, &newM, &newV})
    for (Tensor &t : *list)
      results.push_back(std::move(t));
}

/// tx.sgd: momentum, weight_decay and 1 - dampening rounded to f32 once
/// from their doubles (torch.optim.SGD's scalars), then every line rounded
/// to the parameter's type as written.
void evalSGD(tx::SGDOp op, llvm::ArrayRef<const Tensor *> in,
             const ExecutorOptions &options,
             llvm::SmallVectorImpl<Tensor> &results) {
  unsigned n = op.getNumParams();
  Type f32 = Float32Type::get(op.getContext());
  auto r32 = [&](double v) { return roundUnlessF64(f32, v, options); };
  bool hasMomentum = !op.getMomentum().isZero();
  double momentum = r32(op.getMomentum().convertToDouble());
  double wd = r32(op.getWeightDecay().convertToDouble());
  double oneMinusDampening = r32(1.0 - op.getDampening().convertToDouble());
  double lr = in[3 * n]->floats()[0];
  bool nesterov = op.getNesterov();
  llvm::SmallVector<Tensor> newParams, newBuffers;
  for (unsigned i = 0; i < n; ++i) {
    const Tensor &p = *in[i], &g = *in[n + i], &b = *in[2 * n + i];
    Type type = p.getElementType();
    auto rt = [&](double x) { return roundUnlessF64(type, x, options); };
    Tensor np = makeResult(op, i), nb = makeResult(op, n + i);
    for (int64_t k = 0, e = p.getNumElements(); k < e; ++k) {
      double pk = p.floats()[k];
      double gk = rt(g.floats()[k] + rt(wd * pk));
      double bk = b.floats()[k], dk = gk;
      if (hasMomentum) {
        bk = rt(rt(momentum * bk) + rt(oneMinusDampening * gk));
        dk = nesterov ? rt(gk + rt(momentum * bk)) : bk;
      }
      np.floats()[k] = rt(pk - rt(lr * dk));
      nb.floats()[k] = bk;
    }
    newParams.push_back(std::move(np));
    newBuffers.push_back(std::move(nb));
  }
  for (auto *list : {&newParams, &newBuffers})
    for (Tensor &t : *list)
      results.push_back(std::move(t));
}

} // namespace

llvm::Expected<bool> mlir::txopt::reference::evalTrainingOp(Operation *op,
                                                            const KernelArgs &args) {
  auto &in = args.operands;
  if (auto ln = dyn_cast<tx::LayerNormOp>(op)) {
    evalNormForward(op, in, ln.getEpsilon().convertToDouble(), /*center=*/true,
                    args.results);
    return true;
  }
  if (auto rms = dyn_cast<tx::RMSNormOp>(op)) {
    evalNormForward(op, in, rms.getEpsilon().convertToDouble(), /*center=*/false,
                    args.results);
    return true;
  }
  if (isa<tx::LayerNormGradOp>(op)) {
    evalNormBackward(op, in, /*center=*/true, args.results);
    return true;
  }
  if (isa<tx::RMSNormGradOp>(op)) {
    evalNormBackward(op, in, /*center=*/false, args.results);
    return true;
  }
  if (auto adam = dyn_cast<tx::AdamOp>(op)) {
    evalAdam(adam, in, args.options, args.results);
    return true;
  }
  if (auto sgd = dyn_cast<tx::SGDOp>(op)) {
    evalSGD(sgd, in, args.options, args.results);
    return true;
  }
  return evalGradientOp(op, args);
}
