//===- BiasCorrection.cpp - the step behind folded Adam bias corrections --===//
//
// SPDX-License-Identifier: Apache-2.0
// Recovers the integer step t (and lr) from bias corrections 1 - beta^t that
// an exporter folded into constants, for tx-fuse-optimizer's Adam matcher.
//
//===----------------------------------------------------------------------===//

#include "OptimizerMatchers.h"

#include "txopt/Dialect/Tx/Transforms/PatternUtils.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace mlir;
using namespace mlir::txopt::tx;

namespace {

/// Steps are f32 operands of tx.adam: integers up to 2^24 are exact.
constexpr double kMaxStep = 16777216.0;

/// True when |c| is the bias correction 1 - beta^t up to f32 rounding.
/// |beta| is the user's double (0.999, see userScalar). PyTorch forms
/// 1 - beta^t from it in double, but an exporter may instead compute it
/// from the f32 beta (up to 2^-24 relative away), which t multiplications
/// carry into beta^t as up to t * 2^-24 relative; computing beta^t in f32
/// and storing |c| as f32 add a few ulps of beta^t and of c.
bool matchesBiasCorrection(double c, double beta, double t) {
  double power = std::pow(beta, t);
  double expected = 1.0 - power;
  double tolerance =
      power * (t * 0x1p-24 + 0x1p-22) + std::fabs(expected) * 0x1p-22;
  return std::fabs(c - expected) <= tolerance;
}

/// The smallest integer step t in [1, 2^24] with c = 1 - beta^t (to f32
/// rounding, see matchesBiasCorrection) for every (beta, c) pair, or nullopt.
/// Since 1 - beta^t increases with t, each pair confines t to an interval;
/// the integers at the low end of their intersection and next to each
/// pair's real solution are tried. For realistic steps the interval holds
/// one integer (neighbouring steps differ by beta^t (1 - beta), far more
/// than the tolerance); where it holds several, the constants cannot tell
/// them apart and every one reproduces them.
std::optional<double>
solveConstantStep(ArrayRef<std::pair<double, double>> pairs) {
  double lo = 1.0, hi = kMaxStep;
  SmallVector<double> tries;
  for (auto [beta, c] : pairs) {
    if (!(beta > 0.0 && beta < 1.0))
      continue; // beta = 0: 1 - 0^t = 1 for every t >= 1, checked below
    double rest = 1.0 - c, logBeta = std::log(beta);
    double estimate =
        rest > 0.0 ? std::min(std::log(rest) / logBeta, kMaxStep) : kMaxStep;
    // Wider than matchesBiasCorrection's tolerance: this only picks tries.
    double slack = std::max(rest, 0.0) * (estimate + 4.0) * 0x1p-22 +
                   std::fabs(c) * 0x1p-20;
    if (!(rest + slack > 0.0))
      return std::nullopt; // c > 1 (or not a number): no step gives it
    if (rest + slack < 1.0)
      lo = std::max(lo, std::log(rest + slack) / logBeta);
    if (rest - slack > 0.0)
      hi = std::min(hi, std::log(rest - slack) / logBeta);
    for (double d = -2; d <= 2; ++d)
      tries.push_back(std::round(estimate) + d);
  }
  for (double d = 0; d < 64; ++d)
    tries.push_back(std::ceil(lo) + d);
  llvm::sort(tries);
  for (double t : tries) {
    if (t < 1.0 || t > kMaxStep || t > std::floor(hi) + 2.0)
      continue;
    if (llvm::all_of(pairs, [&](const std::pair<double, double> &p) {
          return matchesBiasCorrection(p.second, p.first, t);
        }))
      return t;
  }
  return std::nullopt;
}

/// 1 - beta^step as tx.adam computes it: in double from the double beta,
/// rounded to f32 once (PyTorch's `1 - beta1 ** step`).
float adamBiasCorrection(double beta, double step) {
  return static_cast<float>(1.0 - std::pow(beta, step));
}

bool fail(std::string &reason, const Twine &message) {
  reason = message.str();
  return false;
}

} // namespace

bool optimizer::resolveFoldedFactors(HyperParams &hp, Value lr, double scale,
                                     double vScale, std::string &reason) {
  if (lr) {
    // lr is a value: the update's factor is 1 / (1 - b1^t) alone, so both
    // factors constrain the one t.
    hp.lr = {lr, std::nullopt};
    if (scale == 1.0 && vScale == 1.0)
      return true;
    std::optional<double> t;
    if (!hp.biasCorrection)
      t = solveConstantStep(
          {{hp.beta1, 1.0 / scale}, {hp.beta2, 1.0 / vScale}});
    if (!t && vScale == 1.0)
      return fail(reason,
                  llvm::formatv("expected the update to be scaled by lr "
                                "alone, but got an extra factor {0}",
                                formatNumber(scale)));
    if (!t)
      return fail(
          reason,
          llvm::formatv(
              "expected folded bias corrections 1 - beta1^t and 1 - beta2^t of "
              "one integer step t, but got {0} and {1}",
              formatNumber(1.0 / scale), formatNumber(1.0 / vScale)));
    hp.biasCorrection = true;
    hp.step = ScalarKey::ofConstant(*t);
    return true;
  }
  // A constant lr absorbs any factor on the update, 1 / (1 - b1^t)
  // included; only the second moment's correction tells whether there is
  // one.
  if (hp.biasCorrection || vScale == 1.0) {
    hp.lr = ScalarKey::ofConstant(scale);
    return true;
  }
  std::optional<double> t = solveConstantStep({{hp.beta2, 1.0 / vScale}});
  if (!t)
    return fail(reason,
                llvm::formatv("expected a folded bias correction 1 - beta2^t "
                              "of an integer step t, but got {0}",
                              formatNumber(1.0 / vScale)));
  // lr / (1 - b1^t) is the factor, with 1 - b1^t as tx.adam computes it.
  hp.lr = ScalarKey::ofConstant(
      static_cast<float>(scale * adamBiasCorrection(hp.beta1, *t)));
  hp.biasCorrection = true;
  hp.step = ScalarKey::ofConstant(*t);
  return true;
}
