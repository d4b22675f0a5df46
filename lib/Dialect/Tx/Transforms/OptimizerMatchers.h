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
#include "txopt/Dialect/Tx/Transforms/PatternUtils.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Support/FormatVariadic.h"
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
/// other kind stay at their defaults, so they compare equal. The
/// hyper-parameters are the doubles the user wrote (see userScalar), as
/// tx.adam / tx.sgd hold them.
struct HyperParams {
  Kind kind = Kind::adam;
  double weightDecay = 0;
  ScalarKey lr;
  Block *block = nullptr;
  // tx.adam
  AdamMode mode = AdamMode::adamw;
  double beta1 = 0, beta2 = 0, epsilon = 0;
  EpsilonPlacement placement = EpsilonPlacement::outside_sqrt;
  bool biasCorrection = false;
  /// The graph computes `1 - beta^t` with f32 ops (tx.adam's
  /// f32_bias_correction) rather than folding it in double.
  bool f32BiasCorrection = false;
  ScalarKey step;
  // tx.sgd
  double momentum = 0, dampening = 0;
  bool nesterov = false;

  bool operator==(const HyperParams &o) const;
};

//===----------------------------------------------------------------------===//
// Hyper-parameters from f32 constants
//
// PyTorch's hyper-parameters are Python floats (doubles), and tx.adam /
// tx.sgd hold them as such: PyTorch computes `1 - beta2`, `1 - beta^t` and
// `lr * wd` in double and rounds once, so f32(1 - 0.999) = 0.001, whereas
// 1 - f32(0.999) = 0.00099998713 is 1.3e-5 relative off. Exporters write
// every Python float into the graph as an f32 constant, so the matchers see
// only f32(0.999) = 0.99900001287. The double the user wrote is recovered
// as the shortest decimal that rounds to the same f32: users write short
// decimals (0.999, 1e-8, 0.01), and any decimal with at most 6 significant
// digits is the shortest one of its f32.
//===----------------------------------------------------------------------===//

/// The shortest decimal (as a double) that rounds to the f32 value of |c|:
/// the Python float behind an exported constant (f32(0.999) -> 0.999).
double userScalar(double c);

/// The beta of a moving average `b * state + c * input` read from its f32
/// coefficients |b| and |c| = 1 - beta, or nullopt when |c| is not 1 - |b|
/// to f32 rounding. Prefers the shortest decimal beta that reproduces both
/// constants when tx.adam rounds them (f32(beta) == b, f32(1 - beta) == c):
/// 0.999 where the exporter formed 1 - beta in double (PyTorch), a longer
/// one (0.9990000129) where it formed it from the f32 beta (1 - f32(b));
/// otherwise userScalar(b) when c is within two f32 ulps of 1 - it. The
/// betas that round to b span one f32 ulp of b, so for b = f32(0.999) any
/// c within about 3e-5 relative of 0.001 is reproduced exactly (c =
/// f32(0.00100001) gives beta2 = 0.99899999): the rounding of beta decides
/// only the bias corrections `1 - beta^t`.
std::optional<double> userBeta(double b, double c);

/// The shortest decimal x with f32(1 - x) == f32(|c|): the Python float
/// behind an exported complement `1 - x` (SGD's 1 - dampening; f32(0.9) ->
/// 0.1).
double userComplement(double c);

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

/// What AdamMatcher and SGDMatcher share: the anchor (`p1 = p - update`),
/// the chain's type (a leaf of the chain has it), the ops matched so far,
/// the state ops checkUses finds, the hyper-parameters, and the reason of a
/// near miss.
class ChainMatcher {
public:
  explicit ChainMatcher(Operation *anchor)
      : anchor(anchor), chainType(anchor->getResult(0).getType()) {}

  std::string reason;

protected:
  bool fail(const Twine &message) {
    reason = message.str();
    return false;
  }
  bool isChainLeaf(Value v) const { return v.getType() == chainType; }
  void add(ProductTerms &terms) { ops.insert(terms.ops.begin(), terms.ops.end()); }
  /// The matched ops are in one block and every intermediate that depends
  /// on |inputs| stays inside the chain (besides |outputs|): fusing would
  /// otherwise compute it twice. Fills |stateful|.
  bool checkContained(ArrayRef<Value> inputs, ArrayRef<Operation *> outputs) {
    Block *block = anchor->getBlock();
    for (Operation *op : ops)
      if (op->getBlock() != block)
        return fail("update chain spans several blocks");
    if (Operation *escaping = findEscapingIntermediate(ops, inputs, outputs, stateful))
      return fail(llvm::formatv("intermediate '{0}' has a user outside the "
                                "update chain",
                                escaping->getName()));
    return true;
  }

  Operation *anchor;
  Type chainType;
  llvm::SetVector<Operation *> ops;
  llvm::SmallPtrSet<Operation *, 16> stateful; // set by checkUses
  HyperParams hp;
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
