//===- TrainStep.h - build a training step from a forward + loss -*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// The C++ entry point behind tx-build-train-step (`txopt --train`), and the
// attribute names that describe a step function to the tools that run it
// (txopt-run --steps, the GPU runtime).
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_DIALECT_TX_TRANSFORMS_TRAINSTEP_H
#define TXOPT_DIALECT_TX_TRANSFORMS_TRAINSTEP_H

#include "txopt/Dialect/Tx/IR/StepContract.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <optional>
#include <string>

namespace mlir::txopt::tx {

enum class OptimizerKind { AdamW, Adam, SGD };
enum class LossKind {
  /// The forward's result #0 is already a scalar loss.
  Output,
  /// The forward's result #0 is logits [..., C]; mean token cross-entropy
  /// against integer labels is appended.
  CrossEntropy,
};

std::optional<OptimizerKind> parseOptimizerKind(StringRef text);
std::optional<LossKind> parseLossKind(StringRef text);

struct TrainStepOptions {
  /// The forward function; empty: `main`, else the only public function.
  std::string function;
  LossKind loss = LossKind::Output;
  /// Under CrossEntropy: the argument (tx.name) holding the labels; created
  /// (i64, the logits' shape without the class dim) when there is none.
  std::string labels = "labels";
  OptimizerKind optimizer = OptimizerKind::AdamW;
  double lr = 1e-3;
  double beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8;
  /// Unset: PyTorch's default of the optimizer (AdamW 0.01, Adam/SGD 0).
  std::optional<double> weightDecay;
  /// SGD only.
  double momentum = 0.0;
  /// Parameters (by name, POSIX extended regex, searched) that get no
  /// weight decay. Unset: those of rank < 2, i.e. biases and norm weights
  /// (the nanoGPT / llm.c convention).
  std::optional<std::string> noDecay;
  /// Clip gradients to this global L2 norm first; <= 0 disables clipping.
  double gradClip = 0.0;
  /// Parameters (by name, regex, searched) that are not trained.
  std::string freeze;
  /// Dynamic loss scaling (torch.cuda.amp.GradScaler), for fp16 GEMMs: the
  /// loss is multiplied by a scale (state, initially |initialLossScale|)
  /// before differentiation and the gradients divided by it; when any
  /// gradient is not finite the step is skipped (parameters, state and the
  /// step counter keep their bit patterns) and the scale halves, and after
  /// |lossScaleInterval| clean steps in a row it doubles.
  bool lossScaling = false;
  double initialLossScale = 65536.0;
  int64_t lossScaleInterval = 2000;
  /// Gradient accumulation over this many micro-batches (>= 1). Above 1,
  /// a second function, `@micro_step`, is emitted beside the step with the
  /// step's own signature: it adds one micro-batch's gradients (and loss)
  /// into accumulator arguments; the step adds the last micro-batch's,
  /// divides by |gradAccum|, updates, and returns zeroed accumulators.
  int64_t gradAccum = 1;
  /// Also emit `@eval`, with the step's signature: the loss of the batch
  /// under the current parameters, forward only (no gradient, no update,
  /// no state change; dropout off, as torch's model.eval()).
  bool eval = false;
  /// Name of the step function.
  std::string name = "train_step";
};

/// Replaces |module|'s forward function with one pure step function
///
///   @train_step(params..., optimizer state..., lr, step, rng_key,
///               [loss_scale, growth_tracker,] batch...)
///       -> (new params..., new state..., new step, [new loss_scale,
///           new growth_tracker,] loss, grad_norm[, skipped])
///
/// built from the forward's gradient (Autodiff.h), optional clipping and the
/// optimizer as fused multi-tensor ops (tx.adam / tx.sgd, one per weight-
/// decay group). Arguments carry `tx.name` and `tx.role` ("param", "exp_avg",
/// "exp_avg_sq", "momentum_buffer", "lr", "step", "rng", "data", "labels");
/// parameters also `tx.parameter = @name` (their initial value), state and
/// `lr` `tx.init` (a splat initial value; for `lr` the compiled default).
/// `lr` (tensor<f32>) is the optimizer's learning rate and `rng_key`
/// (tensor<i64>, role "rng") the key of every tx.dropout; both are inputs a
/// driver sets each step, not state. Results that feed the next step carry
/// `tx.next = i` (the argument they replace). The function carries
/// `tx.train_step` with the recipe. Frozen parameters stay
/// `tx.load_parameter` reads. On failure an error has been emitted and
/// |module| is unchanged except for the `frozen` marks of matched parameters.
FailureOr<func::FuncOp> buildTrainStep(ModuleOp module,
                                       const TrainStepOptions &options);

/// The step's recipe (`tx.train_step`) as one-line JSON, the form drivers
/// print and store: the GPU artifact's recipe and both drivers'
/// checkpoints compare it, so it is written in one place.
std::string trainStepRecipeJson(func::FuncOp step);

/// The functions beside |step| that take its arguments: gradient
/// accumulation's @micro_step, validation's @eval and sampling's @logits
/// (each names the step in tx.micro_step, tx.eval or tx.logits).
SmallVector<func::FuncOp> stepCompanions(func::FuncOp step);

/// After a pass appended arguments to |step| (FP8 scaling state, cached FP8
/// weights), appends the same ones (types and attributes) to each of its
/// companions, which ignore them: drivers call them with the step's
/// arguments, so their signatures must stay the step's.
void appendStepArgumentsToCompanions(func::FuncOp step);

// The contract's attribute names (kRoleAttrName, ...): StepContract.h.

/// The names of the functions emitted beside step |stepName|.
inline std::string evalName(StringRef stepName) {
  return stepName == "train_step" ? "eval" : (stepName + "_eval").str();
}
inline std::string logitsName(StringRef stepName) {
  return stepName == "train_step" ? "logits" : (stepName + "_logits").str();
}

} // namespace mlir::txopt::tx

#endif // TXOPT_DIALECT_TX_TRANSFORMS_TRAINSTEP_H
