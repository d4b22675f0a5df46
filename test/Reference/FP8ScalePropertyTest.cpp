//===- FP8ScalePropertyTest.cpp - tx.fp8_scale_update never breaks --------===//
//
// SPDX-License-Identifier: Apache-2.0
// Property test of the reference executor's tx.fp8_scale_update (issue 13):
// 10^5 random amax sequences mixing zeros, f32 denormals, infinities, NaNs,
// negative values and spikes up to the f32 maximum, under random recipes
// (E4M3FN / E5M2, history 1 to 64, amax = max or most_recent, margin 0 to
// 4096), never drive the scale or scale_inv to 0, inf or NaN; and whenever
// the amax the recipe picks is zero or not finite, the scale stays what it
// was (Transformer Engine's rule). Prints one summary line; exits 1 and
// prints the first violations otherwise. fp8-scale-property.test runs it.
//
//===----------------------------------------------------------------------===//

#include "txopt/InitAll.h"
#include "txopt/Reference/Executor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

using namespace mlir;
using namespace mlir::txopt::reference;

namespace {

struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint64_t below(uint64_t n) { return next() % n; }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
};

/// One amax, from a mixture of the hostile classes and ordinary values;
/// always an f32 value (the op's operand is f32).
double randomAmax(SplitMix64 &rng) {
  const double fmax = std::numeric_limits<float>::max();
  const double denormMin = std::numeric_limits<float>::denorm_min();
  switch (rng.below(12)) {
  case 0: return 0.0;
  case 1: return -0.0;
  case 2: return denormMin * static_cast<double>(1 + rng.below(1 << 20));
  case 3: return std::numeric_limits<double>::infinity();
  case 4: return std::numeric_limits<double>::quiet_NaN();
  case 5: return fmax;                                   // spike
  case 6: return static_cast<float>(fmax * rng.uniform()); // spike
  case 7: return static_cast<float>(std::ldexp(1.0, -126 + static_cast<int>(rng.below(10))));
  case 8: return -static_cast<float>(rng.uniform() * 10);  // hostile sign
  default:
    return static_cast<float>(std::ldexp(rng.uniform() + 0.5,
                                         static_cast<int>(rng.below(60)) - 30));
  }
}

} // namespace

int main() {
  DialectRegistry registry;
  mlir::txopt::registerAllDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();

  // One function per recipe shape; the executor reads the recipe from IR.
  const int64_t lengths[] = {1, 2, 16, 64};
  const int64_t margins[] = {0, 1, 8, 32, 100, 200, 4096};
  const char *formats[] = {"f8E4M3FN", "f8E5M2"};
  const char *computes[] = {"max", "most_recent"};
  std::string text = "module {\n";
  std::vector<std::string> names;
  for (int64_t length : lengths)
    for (int64_t margin : margins)
      for (const char *format : formats)
        for (const char *compute : computes) {
          std::string name = "u" + std::to_string(names.size());
          names.push_back(name);
          std::string h = "tensor<" + std::to_string(length) + "xf32>";
          text += "func.func @" + name + "(%h: " + h +
                  ", %s: tensor<f32>, %a: tensor<f32>) -> (" + h +
                  ", tensor<f32>, tensor<f32>) {\n"
                  "  %h1, %s1, %i1 = tx.fp8_scale_update %h, %s, %a : " + h +
                  " for " + format + " #tx.fp8_recipe<delayed, history = " +
                  std::to_string(length) + ", amax = " + compute +
                  ", margin = " + std::to_string(margin) + ">\n"
                  "  return %h1, %s1, %i1 : " + h + ", tensor<f32>, tensor<f32>\n}\n";
        }
  text += "}\n";
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &context);
  if (!module) {
    std::fprintf(stderr, "fp8-scale-property: cannot parse the test module\n");
    return 1;
  }
  Executor executor(*module);
  Type f32 = Float32Type::get(&context);

  SplitMix64 rng{20250613};
  const int64_t kSequences = 100000;
  int64_t steps = 0, violations = 0, kept = 0, saturated = 0, underflowed = 0;
  for (int64_t seq = 0; seq < kSequences; ++seq) {
    size_t which = rng.below(names.size());
    auto func = module->lookupSymbol<func::FuncOp>(names[which]);
    auto historyType = cast<RankedTensorType>(func.getArgument(0).getType());
    int64_t length = historyType.getDimSize(0);
    bool useMax = which % 2 == 0; // computes[] varies fastest
    Tensor history(historyType);
    Tensor scale(f32, {});
    scale.floats()[0] = 1.0;
    int64_t count = 1 + rng.below(24);
    for (int64_t step = 0; step < count; ++step, ++steps) {
      Tensor amax(f32, {});
      amax.floats()[0] = randomAmax(rng);
      double previous = scale.floats()[0];
      auto results = executor.run(func, {history, scale, amax});
      if (!results) {
        std::fprintf(stderr, "fp8-scale-property: %s\n",
                     llvm::toString(results.takeError()).c_str());
        return 1;
      }
      double s = (*results)[1].floats()[0], inv = (*results)[2].floats()[0];
      // The amax the recipe looks at.
      double picked = amax.floats()[0];
      if (useMax) {
        picked = 0.0;
        for (double v : (*results)[0].floats())
          if (!std::isnan(v))
            picked = std::max(picked, v);
      }
      bool keep = !(std::isfinite(picked) && picked > 0.0);
      bool bad = !std::isfinite(s) || !(s > 0.0) || !std::isfinite(inv) ||
                 !(inv > 0.0) || (keep && s != previous);
      kept += keep;
      saturated += s == std::numeric_limits<float>::max();
      underflowed += s == std::numeric_limits<float>::min();
      if (bad && ++violations <= 10)
        std::fprintf(stderr,
                     "violation: %s (history %lld) step %lld amax %g picked "
                     "%g: scale %g -> %g, scale_inv %g\n",
                     names[which].c_str(), static_cast<long long>(length),
                     static_cast<long long>(step), amax.floats()[0], picked,
                     previous, s, inv);
      history = std::move((*results)[0]);
      scale = std::move((*results)[1]);
    }
  }
  std::printf("fp8_scale_update: %lld sequences, %lld steps, %lld kept the "
              "previous scale, %lld saturated to f32 max, %lld raised to f32 "
              "min, %lld violations\n",
              static_cast<long long>(kSequences), static_cast<long long>(steps),
              static_cast<long long>(kept), static_cast<long long>(saturated),
              static_cast<long long>(underflowed),
              static_cast<long long>(violations));
  return violations ? 1 : 0;
}
