//===- StepRunner.h - the phases of one txopt-run --steps run -*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// The class behind runSteps (Steps.h), shared by the files that implement
// its phases: StepSetup.cpp (binding arguments, schedule, token streams,
// result roles), StepLoop.cpp (the step loop, evaluation, logging, outputs)
// and StepCheckpoint.cpp (--save and --resume). Private to txopt-run.
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_TOOLS_TXOPT_RUN_STEPRUNNER_H
#define TXOPT_TOOLS_TXOPT_RUN_STEPRUNNER_H

#include "Steps.h"

#include "txopt/Reference/Communicator.h"

#include "core/checkpoint.h"
#include "core/training.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace txopt_run {

using mlir::txopt::reference::Executor;
using mlir::txopt::reference::Tensor;

/// A txopt-run error carrying |message|.
llvm::Error error(const llvm::Twine &message);

/// The tx.name of |func|'s argument |i|, else "arg<i>".
std::string argName(mlir::func::FuncOp func, unsigned i);
/// Shard |rank| of a tensor split by tx.shard_of: |whole| flattened and
/// zero-padded to N shards of shardType's size, elements [rank * size, ...).
Tensor shardOf(const Tensor &whole, mlir::RankedTensorType shardType, int64_t rank);

/// |type| as MLIR prints it, for diagnostics.
std::string typeText(mlir::Type type);

/// One `txopt-run --steps` run of a step function, in the phases it goes
/// through: resume, bind the arguments, the lr schedule, the token stream,
/// the results' roles, checkpoint state, then the step loop.
class StepRunner {
public:
  StepRunner(Executor &executor, mlir::func::FuncOp func,
             std::vector<std::optional<Tensor>> given,
             const StepOptions &options, llvm::raw_ostream &os)
      : executor(executor), func(func), given(std::move(given)),
        options(options), run(options.run), os(os), seed(options.seed) {}

  llvm::Error runAll();

  /// Erases the progress bar (when drawn) before anything else is printed.
  void clearBar();

  ~StepRunner();

private:
  /// --resume: the checkpoint, whose seed the run continues with (it drives
  /// the random batch and the dropout keys).
  llvm::Error loadResume();

  /// Gradient accumulation (recipe `grad_accum` N > 1): the micro-step
  /// that runs micro-batches 1..N-1 of each step. It has the step's
  /// signature, so both run on |args|.
  llvm::Error findMicroStep();

  /// The first step's arguments: --input values, the step inputs (lr,
  /// rng) by role, parameters and tx.init state, and a seeded random batch
  /// unless --data fills it each step.
  llvm::Error bindArguments();

  /// The step's state-init function (tx.state_init, tx-cache-fp8-weights),
  /// run once on the bound arguments: its results (tx.next) are the first
  /// values of the state it names, unless --input gave them.
  llvm::Error runStateInit();

  /// Argument |i| that is neither given nor a step input: a parameter's
  /// value, a tx.init splat, a --data batch (filled each step) or random.
  llvm::Error bindStateOrBatch(unsigned i, mlir::RankedTensorType type,
                               mlir::StringAttr role);

  /// The learning-rate schedule (txrt::LrSchedule, shared with txrun).
  llvm::Error buildSchedule();

  /// Token windows, as llm.c's loader: inputs tokens[o, o + n), labels the
  /// same window shifted by one; o advances by n and wraps to 0 (or, with
  /// --shuffle, a seeded order per epoch; txrt::TokenWindows).
  llvm::Error loadTokens();

  /// --val-data: the step's @eval (same signature) and the validation
  /// stream, windows of the training batch's size.
  llvm::Error loadValidation();

  /// The validation loss after |step| (0: before the first): the mean of
  /// @eval's losses over the first --eval-steps windows of --val-data (the
  /// same windows every time, wrapping), with the current state; nothing
  /// the training reads is touched.
  llvm::Error evaluate(int64_t step);

  /// Every token below the vocabulary size the step's gathers imply.
  llvm::Error checkVocabulary(const std::vector<int64_t> &tokens, llvm::StringRef flag,
                              const std::string &path);

  /// Which results feed which arguments, and which are loss / grad_norm.
  llvm::Error findResults();

  /// The state a checkpoint holds: every argument a result carries
  /// (weights, moments, step, FP8 scaling state, loss scale), in argument
  /// order; with --resume, that state is loaded here.
  llvm::Error prepareCheckpoints();

  llvm::Error openLog();

  /// The inputs that change every micro-batch: the batch window and the
  /// dropout key. Micro-batch |micro| (0-based; the step runs the last,
  /// N - 1) of step |step| reads the next window and the key of micro-batch
  /// (step - 1) * N + micro of the run, which for N = 1 is the step's.
  /// And the step's scheduled lr.
  void setStepInputs(int64_t step, int64_t micro = 0);
  /// What setStepInputs and each simulated rank (RankLoop.cpp) write into
  /// one rank's arguments |target|: rows rank*B .. (rank+1)*B - 1 of the
  /// window at token |offset| (none: the seeded batch stays) and the
  /// dropout key of micro-batch |micro| of step |step|.
  void setBatchInputs(std::vector<mlir::txopt::reference::Tensor> &target, int64_t step,
                      int64_t micro, std::optional<int64_t> offset, int64_t rank);

  llvm::Error runStep(int64_t step);

  /// --ranks N (RankLoop.cpp): the step must be one compiled for N ranks
  /// (its recipe's `data_parallel`), and the flags ones a sharded run
  /// supports.
  llvm::Error checkRanks();

  /// One step on N simulated ranks, a thread each with its own arguments
  /// and executor: rank r reads the r-th batch of the step's token window.
  /// The ranks agree on the loss and grad_norm bit for bit; rank 0's
  /// results are printed, logged and written.
  llvm::Error runRanks(int64_t step);

  /// One line per step on |os|: step, loss, grad_norm[, skipped][, lr].
  void printStep(int64_t step, double loss, double norm, bool skipped,
                 double lr, const std::vector<Tensor> &results);

  void logStep(int64_t step, double loss, double norm, bool skipped, double lr,
               double ms);

  /// A NaN or infinite loss (or gradient norm, unless the step was
  /// skipped) ends the run, keeping the outputs of the last finite step.
  llvm::Error stopOnNonFinite(int64_t step, double loss, double norm);

  /// --output-dir: the last finished step's results as .npy files.
  llvm::Error writeOutputs();

  /// --save: the state after |step|, with what resuming needs.
  llvm::Error save(int64_t step);
  /// Whether --save wants a checkpoint after |step| (the last, or every
  /// --save-every).
  bool saveDue(int64_t step) const;

  Executor &executor;
  mlir::func::FuncOp func;
  /// Gradient accumulation: micro-batches per step, the micro-step and
  /// which of its results feed which arguments.
  int64_t gradAccum = 1;
  mlir::func::FuncOp micro;
  std::vector<std::pair<unsigned, unsigned>> microCarried;
  std::string microBatchText, effectiveBatchText;
  /// --val-data: the step's @eval and the validation stream.
  mlir::func::FuncOp evalFunc;
  std::vector<int64_t> valTokens;
  int64_t valWindows = 0;
  std::vector<std::optional<Tensor>> given;
  const StepOptions &options;
  const RunFlags &run;
  llvm::raw_ostream &os;
  uint64_t seed;
  std::optional<txrt::Checkpoint> checkpoint;

  // Arguments.
  std::vector<Tensor> args;
  std::vector<unsigned> batchArgs; // filled each step from the token stream
  std::optional<unsigned> labelArg;
  std::optional<unsigned> rngArg, lrArg; // step inputs by role
  bool lrGiven = false;
  std::optional<txrt::LrSchedule> schedule;

  // The token stream.
  std::vector<int64_t> tokens;
  int64_t window = 0;
  std::optional<txrt::TokenWindows> windows;
  uint64_t tokensPerStep = 0;

  // Results.
  std::vector<std::pair<unsigned, unsigned>> carried; // result -> argument
  std::optional<unsigned> lossIndex, normIndex, skippedIndex, scaleIndex;

  // Checkpoints and output.
  std::vector<unsigned> stateArgs;
  std::string recipe;
  std::vector<txrt::TensorSpec> specs;
  /// The whole tensors a resumed checkpoint gave the sharded arguments
  /// (tx.shard_of), split per rank when the simulated ranks start.
  llvm::DenseMap<unsigned, Tensor> resumedWhole;
  /// The whole shape when argument |arg| is a rank's shard (tx.shard_of).
  std::optional<llvm::ArrayRef<int64_t>> shardOfArg(unsigned arg);
  int64_t firstStep = 1;
  std::vector<Tensor> last;
  std::FILE *log = nullptr;
  bool showBar = false, barShown = false;

  // Simulated ranks (--ranks N > 1): each rank's arguments, executor and
  // communicator, created on the first step.
  std::vector<std::vector<Tensor>> rankArgs;
  std::unique_ptr<mlir::txopt::reference::SimulatedRanks> simulatedRanks;
  std::vector<std::unique_ptr<mlir::txopt::reference::ThreadRankCommunicator>>
      communicators;
  std::vector<std::unique_ptr<Executor>> rankExecutors;
};

} // namespace txopt_run

#endif // TXOPT_TOOLS_TXOPT_RUN_STEPRUNNER_H
