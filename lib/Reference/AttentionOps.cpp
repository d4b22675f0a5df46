//===- AttentionOps.cpp - tx.attention and tx.attention_grad --------------===//
//
// SPDX-License-Identifier: Apache-2.0
// The fused attention ops (TxAttentionOps.td) and their FP8 forms
// (tx.fp8_attention, tx.fp8_attention_grad: TxPrecisionOps.td). Scores,
// probabilities and every sum are computed in double, row by row, and never
// stored as a [B, H, Tq, Tk] tensor; the executor rounds each result once.
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"

#include "txopt/Dialect/Tx/IR/TxOps.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::reference;

namespace {

/// Shapes, attributes and the mask's broadcast strides of one attention.
struct Geometry {
  int64_t b, h, tq, d, hkv, tk, dv, group;
  double scale;
  bool causal;
  std::optional<int64_t> window;
  const Tensor *mask = nullptr;
  int64_t maskStride[4] = {0, 0, 0, 0};

  Geometry(const Tensor &q, const Tensor &k, const Tensor &v,
           const Tensor *mask, double scale, bool causal,
           std::optional<int64_t> window)
      : scale(scale), causal(causal), window(window), mask(mask) {
    b = q.getShape()[0];
    h = q.getShape()[1];
    tq = q.getShape()[2];
    d = q.getShape()[3];
    hkv = k.getShape()[1];
    tk = k.getShape()[2];
    dv = v.getShape()[3];
    group = h / hkv;
    if (mask) {
      // Right-aligned numpy broadcast: a dim of 1 (or a missing one) has
      // stride 0.
      llvm::ArrayRef<int64_t> ms = mask->getShape();
      int64_t stride = 1;
      for (int64_t i = static_cast<int64_t>(ms.size()) - 1; i >= 0; --i) {
        int64_t axis = 4 - static_cast<int64_t>(ms.size()) + i;
        maskStride[axis] = ms[i] == 1 ? 0 : stride;
        stride *= ms[i];
      }
    }
  }

  bool visible(int64_t i, int64_t j) const {
    if (!causal)
      return true;
    if (j > i)
      return false;
    return !window || j > i - *window;
  }

  /// Scores of row (bi, hi, i) into |s| (-inf where not visible).
  void scores(const Tensor &q, const Tensor &k, int64_t bi, int64_t hi,
              int64_t i, std::vector<double> &s) const {
    int64_t g = hi / group;
    const double *qr = q.floats().data() + ((bi * h + hi) * tq + i) * d;
    for (int64_t j = 0; j < tk; ++j) {
      if (!visible(i, j)) {
        s[j] = -std::numeric_limits<double>::infinity();
        continue;
      }
      const double *kr = k.floats().data() + ((bi * hkv + g) * tk + j) * d;
      double dot = 0.0;
      for (int64_t e = 0; e < d; ++e)
        dot += qr[e] * kr[e];
      double value = scale * dot;
      if (mask)
        value += mask->floats()[bi * maskStride[0] + hi * maskStride[1] +
                                i * maskStride[2] + j * maskStride[3]];
      s[j] = value;
    }
  }
};

/// log(sum_j exp(s_j)), -inf when every s_j is -inf.
double logSumExp(const std::vector<double> &s) {
  double max = -std::numeric_limits<double>::infinity();
  for (double x : s)
    max = std::max(max, x);
  if (max == -std::numeric_limits<double>::infinity())
    return max;
  double sum = 0.0;
  for (double x : s)
    sum += std::exp(x - max);
  return max + std::log(sum);
}

/// exp(s_j - lse), 0 for a fully masked row.
void probabilities(std::vector<double> &s, double lse) {
  bool empty = lse == -std::numeric_limits<double>::infinity();
  for (double &x : s)
    x = empty ? 0.0 : std::exp(x - lse);
}

/// tx.attention's dropout of the probabilities: tx.dropout's mask over the
/// [B, H, Tq, Tk] tensor (row-major index row * Tk + j), and its scale.
struct ProbabilityDropout {
  bool active = false;
  uint64_t seed = 0, key = 0;
  double ratio = 0.0, scale = 1.0;

  ProbabilityDropout(std::optional<APFloat> ratioAttr, int64_t seedAttr, const Tensor *keyTensor,
                     const ExecutorOptions &options) {
    if (!ratioAttr || !keyTensor || options.disableDropout)
      return;
    active = true;
    seed = static_cast<uint64_t>(seedAttr);
    key = static_cast<uint64_t>(keyTensor->ints()[0]);
    ratio = ratioAttr->convertToFloat();
    scale = 1.0 / (1.0 - ratio);
  }
  /// The factor element (row, j) of the probabilities is multiplied by.
  double factor(int64_t row, int64_t tk, int64_t j) const {
    if (!active)
      return 1.0;
    uint64_t index = static_cast<uint64_t>(row * tk + j);
    return dropoutUniform(seed, key, index) >= ratio ? scale : 0.0;
  }
};

/// Flash-attention kernels (cuDNN's SDPA, which the GPU step runs;
/// FlashAttention) multiply the probabilities by V, and in the backward dS
/// by K and Q, on tensor cores in the operands' type: P and dS are rounded
/// to it first. For bf16/f16 attention the reference rounds at the same two
/// points (sums stay in double), so it models the GPU's numerics rather
/// than an exact softmax it never computes. f32 attention (and --f64) is
/// not rounded.
struct FlashRounding {
  Type element;
  const ExecutorOptions &options;
  bool active() const { return element.isBF16() || element.isF16(); }
  double operator()(double x) const {
    return active() ? roundUnlessF64(element, x, options) : x;
  }
};

void evalForward(tx::AttentionOp op, llvm::ArrayRef<const Tensor *> in,
                 llvm::SmallVectorImpl<Tensor> &results,
                 const FlashRounding &round) {
  const Tensor &q = *in[0], &k = *in[1], &v = *in[2];
  ProbabilityDropout dropout(op.getDropoutRatio(), op.getDropoutSeed(),
                             op.getDropoutKey() ? in.back() : nullptr, round.options);
  Geometry geo(q, k, v, op.getMask() ? in[3] : nullptr,
               op.getScale().convertToDouble(), op.getCausal(), op.getWindow());
  Tensor out = makeResult(op, 0), lse = makeResult(op, 1);
  std::vector<double> s(geo.tk);
  for (int64_t bi = 0; bi < geo.b; ++bi)
    for (int64_t hi = 0; hi < geo.h; ++hi)
      for (int64_t i = 0; i < geo.tq; ++i) {
        geo.scores(q, k, bi, hi, i, s);
        int64_t row = (bi * geo.h + hi) * geo.tq + i;
        double l = logSumExp(s);
        lse.floats()[row] = l;
        if (round.active() && l != -std::numeric_limits<double>::infinity()) {
          // The kernel's P: exp(s - max) rounded, normalized at the end by
          // the unrounded sum.
          double max = -std::numeric_limits<double>::infinity();
          for (double x : s)
            max = std::max(max, x);
          double sum = 0.0;
          for (double &x : s) {
            double e = std::exp(x - max);
            sum += e;
            x = round(e);
          }
          for (double &x : s)
            x /= sum;
        } else {
          probabilities(s, l);
        }
        for (int64_t j = 0; dropout.active && j < geo.tk; ++j)
          s[j] *= dropout.factor(row, geo.tk, j);
        double *o = out.floats().data() + row * geo.dv;
        int64_t g = hi / geo.group;
        for (int64_t j = 0; j < geo.tk; ++j) {
          if (s[j] == 0.0)
            continue;
          const double *vr =
              v.floats().data() + ((bi * geo.hkv + g) * geo.tk + j) * geo.dv;
          for (int64_t e = 0; e < geo.dv; ++e)
            o[e] += s[j] * vr[e];
        }
      }
  results.push_back(std::move(out));
  results.push_back(std::move(lse));
}

/// One query row of a backward pass (BackwardRows): P recomputed from lse,
/// the row's dO, out, q and dQ, and sum_e dO * out over it.
struct BackwardRow {
  int64_t row, i;
  const std::vector<double> &p;
  const double *dO, *out, *q;
  double *dq;
  double rowDot;
};

/// One key of a backward row: its k and v, and where its dK and dV add up.
struct BackwardKey {
  const double *k, *v;
  double *dk, *dv;
};

/// Walks the query rows of an attention backward in order (batch, head,
/// row), handing |visitRow| each row and a function that finds key j's
/// tensors (the shared key/value head of grouped-query attention).
template <typename VisitRow>
void forEachBackwardRow(const Geometry &geo, const Tensor &q, const Tensor &k, const Tensor &v,
                        const Tensor &dO, const Tensor &out, const Tensor &lse, Tensor &dq,
                        Tensor &dk, Tensor &dv, VisitRow visitRow) {
  std::vector<double> p(geo.tk);
  for (int64_t bi = 0; bi < geo.b; ++bi)
    for (int64_t hi = 0; hi < geo.h; ++hi) {
      int64_t g = hi / geo.group;
      auto key = [&](int64_t j) {
        int64_t kvRow = (bi * geo.hkv + g) * geo.tk + j;
        return BackwardKey{k.floats().data() + kvRow * geo.d, v.floats().data() + kvRow * geo.dv,
                           dk.floats().data() + kvRow * geo.d,
                           dv.floats().data() + kvRow * geo.dv};
      };
      for (int64_t i = 0; i < geo.tq; ++i) {
        int64_t row = (bi * geo.h + hi) * geo.tq + i;
        geo.scores(q, k, bi, hi, i, p);
        probabilities(p, lse.floats()[row]);
        BackwardRow r{row,
                      i,
                      p,
                      dO.floats().data() + row * geo.dv,
                      out.floats().data() + row * geo.dv,
                      q.floats().data() + row * geo.d,
                      dq.floats().data() + row * geo.d,
                      0.0};
        for (int64_t e = 0; e < geo.dv; ++e)
          r.rowDot += r.dO[e] * r.out[e];
        visitRow(r, key);
      }
    }
}

void evalBackward(tx::AttentionGradOp op, llvm::ArrayRef<const Tensor *> in,
                  llvm::SmallVectorImpl<Tensor> &results,
                  const FlashRounding &round) {
  bool hasMask = static_cast<bool>(op.getMask());
  const Tensor &dO = *in[0], &q = *in[1], &k = *in[2], &v = *in[3];
  const Tensor *mask = hasMask ? in[4] : nullptr;
  const Tensor &out = *in[hasMask ? 5 : 4], &lse = *in[hasMask ? 6 : 5];
  Geometry geo(q, k, v, mask, op.getScale().convertToDouble(), op.getCausal(),
               op.getWindow());
  ProbabilityDropout dropout(op.getDropoutRatio(), op.getDropoutSeed(),
                             op.getDropoutKey() ? in.back() : nullptr, round.options);
  // Gradients accumulate in double tensors of the results' shapes; the
  // executor rounds them once.
  Tensor dq = makeResult(op, 0), dk = makeResult(op, 1), dv = makeResult(op, 2);
  forEachBackwardRow(geo, q, k, v, dO, out, lse, dq, dk, dv, [&](const BackwardRow &r, auto key) {
    for (int64_t j = 0; j < geo.tk; ++j) {
      if (r.p[j] == 0.0)
        continue;
      BackwardKey kj = key(j);
      // With dropout: v sees the dropped probabilities Pd = P * m, and
      // the gradient reaches P through the same mask (dP = m * dPd);
      // Dsum = dO . out holds with it (sum_j P dP = sum_j Pd dPd).
      double m = dropout.factor(r.row, geo.tk, j);
      double dp = 0.0;
      double pr = round(r.p[j]) * m;
      for (int64_t e = 0; e < geo.dv; ++e) {
        dp += r.dO[e] * kj.v[e];
        kj.dv[e] += pr * r.dO[e];
      }
      dp *= m;
      double ds = round(r.p[j] * (dp - r.rowDot)) * geo.scale;
      for (int64_t e = 0; e < geo.d; ++e) {
        r.dq[e] += ds * kj.k[e];
        kj.dk[e] += ds * r.q[e];
      }
    }
  });
  results.push_back(std::move(dq));
  results.push_back(std::move(dk));
  results.push_back(std::move(dv));
}

/// The FP8 attention ops' quantization: fp8_T(x * scale), the product
/// rounded to f32 first as TE's casts and cuDNN's scale nodes do. The
/// executor's own final rounding does the same for the ops' FP8 results.
struct FP8Cast {
  Type type;
  const ExecutorOptions &options;
  double scaled(double x, double scale) const {
    return saturateInfinityForFP8(
        type, roundUnlessF64(Float32Type::get(type.getContext()), x * scale, options));
  }
  double operator()(double x, double scale) const {
    return roundUnlessF64(type, scaled(x, scale), options);
  }
};

double scalar(const Tensor *t) { return t->floats()[0]; }

/// |amax| and the max |x| of |values|: NaN propagates, as tx.amax's does.
void foldAmax(double &amax, double x) {
  if (std::isnan(amax) || std::isnan(x))
    amax = std::numeric_limits<double>::quiet_NaN();
  else
    amax = std::max(amax, std::fabs(x));
}

void evalFP8Forward(tx::FP8AttentionOp op, llvm::ArrayRef<const Tensor *> in,
                    llvm::SmallVectorImpl<Tensor> &results, const ExecutorOptions &options) {
  const Tensor &q = *in[0], &k = *in[1], &v = *in[2];
  double qDescale = scalar(in[3]), kDescale = scalar(in[4]), vDescale = scalar(in[5]);
  double sDescale = scalar(in[6]), sScale = scalar(in[7]), oScale = scalar(in[8]);
  FP8Cast cast{q.getElementType(), options};
  Geometry geo(q, k, v, /*mask=*/nullptr, op.getScale().convertToDouble(), op.getCausal(),
               /*window=*/std::nullopt);
  // The descales multiply the score after the attention scale (cuDNN's
  // graph: ((q . k) * scale) * d(q) * d(k)).
  geo.scale = geo.scale * qDescale * kDescale;
  Tensor out = makeResult(op, 0), lse = makeResult(op, 1);
  Tensor sAmax = makeResult(op, 2), oAmax = makeResult(op, 3);
  double amaxS = 0.0, amaxO = 0.0;
  std::vector<double> s(geo.tk), o(geo.dv);
  for (int64_t bi = 0; bi < geo.b; ++bi)
    for (int64_t hi = 0; hi < geo.h; ++hi)
      for (int64_t i = 0; i < geo.tq; ++i) {
        geo.scores(q, k, bi, hi, i, s);
        int64_t row = (bi * geo.h + hi) * geo.tq + i;
        double l = logSumExp(s);
        lse.floats()[row] = l;
        probabilities(s, l);
        std::fill(o.begin(), o.end(), 0.0);
        int64_t g = hi / geo.group;
        for (int64_t j = 0; j < geo.tk; ++j) {
          foldAmax(amaxS, s[j]);
          double p8 = cast(s[j], sScale);
          if (p8 == 0.0)
            continue;
          const double *vr = v.floats().data() + ((bi * geo.hkv + g) * geo.tk + j) * geo.dv;
          for (int64_t e = 0; e < geo.dv; ++e)
            o[e] += p8 * vr[e];
        }
        double *outRow = out.floats().data() + row * geo.dv;
        for (int64_t e = 0; e < geo.dv; ++e) {
          double real = o[e] * sDescale * vDescale;
          foldAmax(amaxO, real);
          outRow[e] = cast.scaled(real, oScale);
        }
      }
  sAmax.floats()[0] = amaxS;
  oAmax.floats()[0] = amaxO;
  results.push_back(std::move(out));
  results.push_back(std::move(lse));
  results.push_back(std::move(sAmax));
  results.push_back(std::move(oAmax));
}

void evalFP8Backward(tx::FP8AttentionGradOp op, llvm::ArrayRef<const Tensor *> in,
                     llvm::SmallVectorImpl<Tensor> &results, const ExecutorOptions &options) {
  const Tensor &dO = *in[0], &q = *in[1], &k = *in[2], &v = *in[3], &out = *in[4],
               &lse = *in[5];
  double qDescale = scalar(in[6]), kDescale = scalar(in[7]), vDescale = scalar(in[8]);
  double outDescale = scalar(in[9]), gradDescale = scalar(in[10]);
  double sDescale = scalar(in[11]), dpDescale = scalar(in[12]);
  double sScale = scalar(in[13]), dqScale = scalar(in[14]), dkScale = scalar(in[15]);
  double dvScale = scalar(in[16]), dpScale = scalar(in[17]);
  FP8Cast castS{q.getElementType(), options}, castGrad{dO.getElementType(), options};
  double attnScale = op.getScale().convertToDouble();
  Geometry geo(q, k, v, /*mask=*/nullptr, attnScale * qDescale * kDescale, op.getCausal(),
               /*window=*/std::nullopt);
  // The real gradients accumulate in double tensors of q's, k's and v's
  // shapes; the scales and the executor's rounding make them FP8 at the end.
  auto shaped = [](const Tensor &like) {
    return Tensor(RankedTensorType::get(like.getShape(),
                                        Float64Type::get(like.getElementType().getContext())));
  };
  Tensor dq = shaped(q), dk = shaped(k), dv = shaped(v);
  double amaxDP = 0.0;
  forEachBackwardRow(geo, q, k, v, dO, out, lse, dq, dk, dv, [&](const BackwardRow &r, auto key) {
    double rowTerm = r.rowDot * gradDescale * outDescale;
    for (int64_t j = 0; j < geo.tk; ++j) {
      if (!geo.visible(r.i, j))
        continue;
      BackwardKey kj = key(j);
      double p8 = castS(r.p[j], sScale), dpBar = 0.0;
      for (int64_t e = 0; e < geo.dv; ++e) {
        dpBar += r.dO[e] * kj.v[e];
        kj.dv[e] += p8 * r.dO[e];
      }
      dpBar = dpBar * gradDescale * vDescale;
      double ds = r.p[j] * (dpBar - rowTerm) * attnScale;
      foldAmax(amaxDP, ds);
      double ds8 = castGrad(ds, dpScale);
      for (int64_t e = 0; e < geo.d; ++e) {
        r.dq[e] += ds8 * kj.k[e];
        kj.dk[e] += ds8 * r.q[e];
      }
    }
  });
  // Real values, their amaxes, then the scaled values the executor rounds.
  auto finish = [&](unsigned index, Tensor &sum, double descale, double scale) {
    Tensor grad = makeResult(op, index), amax = makeResult(op, index + 3);
    double m = 0.0;
    for (int64_t x = 0, n = grad.getNumElements(); x < n; ++x) {
      double real = sum.floats()[x] * descale;
      foldAmax(m, real);
      grad.floats()[x] = castGrad.scaled(real, scale);
    }
    amax.floats()[0] = m;
    results.push_back(std::move(grad));
    return amax;
  };
  Tensor dqAmax = finish(0, dq, dpDescale * kDescale, dqScale);
  Tensor dkAmax = finish(1, dk, dpDescale * qDescale, dkScale);
  Tensor dvAmax = finish(2, dv, sDescale * gradDescale, dvScale);
  Tensor dpAmax = makeResult(op, 6);
  dpAmax.floats()[0] = amaxDP;
  results.push_back(std::move(dqAmax));
  results.push_back(std::move(dkAmax));
  results.push_back(std::move(dvAmax));
  results.push_back(std::move(dpAmax));
}

} // namespace

llvm::Expected<bool>
mlir::txopt::reference::evalAttentionOp(Operation *op, const KernelArgs &args) {
  if (auto attention = dyn_cast<tx::FP8AttentionOp>(op)) {
    evalFP8Forward(attention, args.operands, args.results, args.options);
    return true;
  }
  if (auto grad = dyn_cast<tx::FP8AttentionGradOp>(op)) {
    evalFP8Backward(grad, args.operands, args.results, args.options);
    return true;
  }
  if (auto attention = dyn_cast<tx::AttentionOp>(op)) {
    FlashRounding round{cast<RankedTensorType>(attention.getQ().getType()).getElementType(),
                        args.options};
    evalForward(attention, args.operands, args.results, round);
    return true;
  }
  if (auto grad = dyn_cast<tx::AttentionGradOp>(op)) {
    FlashRounding round{cast<RankedTensorType>(grad.getQ().getType()).getElementType(),
                        args.options};
    evalBackward(grad, args.operands, args.results, round);
    return true;
  }
  return false;
}
