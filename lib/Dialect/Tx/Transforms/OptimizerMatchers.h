//===- OptimizerMatchers.h - tx-fuse-optimizer's chain matchers -*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// Private to tx-fuse-optimizer: the fusion candidate a matcher returns and
// the Adam (AdamMatcher.cpp) and SGD (SGDMatcher.cpp) chain matchers.
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_LIB_DIALECT_TX_TRANSFORMS_OPTIMIZERMATCHERS_H
#define TXOPT_LIB_DIALECT_TX_TRANSFORMS_OPTIMIZERMATCHERS_H

#include "txopt/Dialect/Tx/IR/TxOps.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <string>

namespace mlir::txopt::tx::optimizer {

enum class Kind { adam, sgd };

/// The pattern name in near-miss remarks (`not fused: <name>: ...`).
llvm::StringRef kindName(Kind kind);

/// lr or step: an SSA value, or the constant it is. Constants compare by
/// their f32 value (two tx.constant ops of 1e-3 are one learning rate).
struct ScalarKey {
  Value value;
  std::optional<double> constant;

  static ScalarKey of(Value v);
  static ScalarKey ofConstant(double c) { return {Value(), c}; }
  bool operator==(const ScalarKey &other) const;
};

/// What must agree for two updates to share one fused op. Fields of the
/// other kind stay at their defaults, so they compare equal.
struct HyperParams {
  Kind kind = Kind::adam;
  float weightDecay = 0;
  ScalarKey lr;
  Block *block = nullptr;
  // tx.adam
  AdamMode mode = AdamMode::adamw;
  float beta1 = 0, beta2 = 0, epsilon = 0;
  EpsilonPlacement placement = EpsilonPlacement::outside_sqrt;
  bool biasCorrection = false;
  ScalarKey step;
  // tx.sgd
  float momentum = 0, dampening = 0;
  bool nesterov = false;

  bool operator==(const HyperParams &o) const;
};

/// One unit of fusion: a matched chain (one parameter) or an existing op.
struct Candidate {
  Operation *anchor = nullptr;
  bool existing = false;
  HyperParams hp;
  /// Per-parameter operand lists in the fused op's order: params, grads,
  /// then the state (exp_avg, exp_avg_sq; or momentum_buffer). A null entry
  /// is state the chain does not keep (SGD without momentum): the rewrite
  /// passes zeros, which tx.sgd with momentum 0 never reads.
  llvm::SmallVector<llvm::SmallVector<Value>> inputs;
  /// Per-parameter result lists in the fused op's order; a null entry has
  /// nothing to replace.
  llvm::SmallVector<llvm::SmallVector<Value>> outputs;
  llvm::SetVector<Operation *> ops; // dead once the results are replaced
  /// The ops that depend on the parameter, gradient or state: no two
  /// chains may share one. Scalar ops (bias corrections, lr * wd) may be
  /// shared, e.g. after CSE.
  llvm::SmallVector<Operation *> exclusive;

  /// Every non-null input, then lr and step when they are values.
  llvm::SmallVector<Value> operands() const;
  /// Every non-null output.
  llvm::SmallVector<Value> results() const;
};

/// The candidate for the per-parameter Adam/AdamW update anchored on
/// |anchor| (`p1 = P - U`), or nullopt. After a failure, |reason| says why
/// (a near miss), or is empty when |anchor| does not look like an Adam
/// update at all.
std::optional<Candidate> matchAdamChain(Operation *anchor, std::string &reason);

/// The same for torch.optim.SGD's update (`p1 = p - lr * d`).
std::optional<Candidate> matchSGDChain(Operation *anchor, std::string &reason);

/// Sets |hp|'s lr, and step and biasCorrection unless `1 - b^t` ops were
/// matched already (biasCorrection set), from the constant factors of an
/// Adam update: |scale| on the update besides |lr| (null when lr is a
/// constant, then part of |scale|) and |vScale| on v1 under the root. With a
/// constant step exporters fold 1 / (1 - b1^t) into the first and
/// 1 / (1 - b2^t) into the second; they fuse only when one integer t
/// reproduces them (BiasCorrection.cpp). False with |reason| otherwise.
bool resolveFoldedFactors(HyperParams &hp, Value lr, double scale,
                          double vScale, std::string &reason);

/// An existing tx.adam / tx.sgd as a candidate, so that matched chains and
/// earlier fused ops merge.
Candidate candidateFor(AdamOp op);
Candidate candidateFor(SGDOp op);

} // namespace mlir::txopt::tx::optimizer

#endif // TXOPT_LIB_DIALECT_TX_TRANSFORMS_OPTIMIZERMATCHERS_H
