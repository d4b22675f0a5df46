//===- StepLoop.cpp - txopt-run --steps: the step loop --------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// StepRunner's loop: run the phases, then each step (its micro-batches, the
// step line, the log, the stop on a non-finite loss), the validation loss,
// and --output-dir. The phases themselves are in StepSetup.cpp and
// StepCheckpoint.cpp.
//
//===----------------------------------------------------------------------===//

#include "StepRunner.h"

#include "Inputs.h"

#include "txopt/Reference/Npy.h"
#include "txopt/Dialect/Tx/IR/StepContract.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"

#include <chrono>
#include <cmath>

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::reference;
using namespace txopt_run;

llvm::Error StepRunner::runAll() {
  if (llvm::Error err = loadResume())
    return err;
  if (run.shuffle && !options.dataPath)
    return error("--shuffle needs --data");
  if (run.saveEvery && !run.saveDir)
    return error("--save-every needs --save DIR");
  if ((run.evalEvery || run.evalSteps) && !run.valDataPath)
    return error("--eval-every and --eval-steps need --val-data FILE");
  for (auto phase : {&StepRunner::checkRanks, &StepRunner::findMicroStep,
                     &StepRunner::bindArguments, &StepRunner::runStateInit,
                     &StepRunner::buildSchedule,
                     &StepRunner::loadTokens, &StepRunner::loadValidation,
                     &StepRunner::findResults,
                     &StepRunner::prepareCheckpoints, &StepRunner::openLog})
    if (llvm::Error err = (this->*phase)())
      return err;
  if (gradAccum > 1)
    os << "accumulating " << gradAccum << " micro-batches of " << microBatchText
       << " per step (@" << micro.getName() << "): effective batch "
       << effectiveBatchText << "\n";
  if (firstStep > options.steps) {
    llvm::errs() << "txopt-run: the checkpoint is at step " << firstStep - 1
                 << "; nothing to run up to --steps " << options.steps
                 << " (with --resume, --steps is the number of the last step)\n";
    return llvm::Error::success();
  }
  if (evalFunc && firstStep == 1)
    if (llvm::Error err = evaluate(0))
      return err;
  // A progress bar below the step lines, only on a terminal (a pipe or
  // file gets exactly the lines).
  showBar = &os == &llvm::outs() && llvm::outs().is_displayed();
  auto started = std::chrono::steady_clock::now();
  for (int64_t step = firstStep; step <= options.steps; ++step) {
    llvm::Error err = runStep(step);
    if (!err && evalFunc &&
        ((run.evalEvery && step % run.evalEvery == 0) || step == options.steps))
      err = evaluate(step);
    if (err) {
      clearBar();
      return err;
    }
    if (showBar) {
      double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      os << txrt::progressBar(step, firstStep, options.steps, seconds);
      os.flush();
      barShown = true;
    }
  }
  clearBar();
  return writeOutputs();
}

/// Erases the progress bar (when drawn) before anything else is printed.
void StepRunner::clearBar() {
  if (barShown)
    os << txrt::kClearLine;
  barShown = false;
}

StepRunner::~StepRunner() {
  if (log)
    std::fclose(log);
}

/// The validation loss after |step| (0: before the first): the mean of
/// @eval's losses over the first --eval-steps windows of --val-data (the
/// same windows every time, wrapping), with the current state; nothing
/// the training reads is touched.
llvm::Error StepRunner::evaluate(int64_t step) {
  // The state as it stands: simulated ranks keep their own (the parameters
  // are whole on each; @eval reads no shard).
  std::vector<Tensor> evalArgs = rankArgs.empty() ? args : rankArgs[0];
  int64_t count = run.evalSteps ? run.evalSteps : 10;
  double sum = 0;
  for (int64_t k = 0; k < count; ++k) {
    int64_t offset = (k % valWindows) * window;
    auto fill = [&](unsigned arg, int64_t shift) {
      Tensor batch(cast<RankedTensorType>(func.getArgument(arg).getType()));
      for (int64_t e = 0; e < window; ++e)
        batch.ints()[e] = valTokens[offset + shift + e];
      evalArgs[arg] = std::move(batch);
    };
    fill(batchArgs[0], 0);
    if (labelArg)
      fill(*labelArg, 1);
    auto results = executor.run(evalFunc, evalArgs);
    if (!results)
      return error("validation after step " + llvm::Twine(step) + ": " +
                   llvm::toString(results.takeError()));
    sum += (*results)[0].getDouble(0);
  }
  double loss = sum / static_cast<double>(count);
  clearBar();
  os << "step " << step << "  val_loss " << llvm::format("%.6f", loss) << "\n";
  os.flush();
  if (log) {
    std::fprintf(log, "%s\n", txrt::valLogLine(step, loss, count).c_str());
    std::fflush(log);
  }
  return llvm::Error::success();
}

/// The inputs that change every micro-batch: the batch window and the
/// dropout key. Micro-batch |micro| (0-based; the step runs the last,
/// N - 1) of step |step| reads the next window and the key of micro-batch
/// (step - 1) * N + micro of the run, which for N = 1 is the step's.
/// And the step's scheduled lr.
void StepRunner::setStepInputs(int64_t step, int64_t micro) {
  std::optional<int64_t> offset;
  if (windows)
    offset = windows->next();
  setBatchInputs(args, step, micro, offset, /*rank=*/0);
  if (schedule)
    args[*lrArg].floats()[0] = schedule->at(step);
}

void StepRunner::setBatchInputs(std::vector<Tensor> &target, int64_t step, int64_t micro,
                                std::optional<int64_t> offset, int64_t rank) {
  if (offset) {
    auto fill = [&](unsigned arg, int64_t shift) {
      Tensor batch(cast<RankedTensorType>(func.getArgument(arg).getType()));
      for (int64_t k = 0; k < window; ++k)
        batch.ints()[k] = tokens[*offset + rank * window + shift + k];
      target[arg] = std::move(batch);
    };
    fill(batchArgs[0], 0);
    if (labelArg)
      fill(*labelArg, 1);
  }
  if (rngArg)
    target[*rngArg].ints()[0] =
        rngKey(seed, static_cast<uint64_t>((step - 1) * gradAccum + micro));
}

llvm::Error StepRunner::runStep(int64_t step) {
  if (options.ranks > 1)
    return runRanks(step);
  auto started = std::chrono::steady_clock::now();
  // Gradient accumulation: micro-batches 1..N-1 add into the
  // accumulator arguments; the step runs the last one and updates.
  for (int64_t m = 0; m + 1 < gradAccum; ++m) {
    setStepInputs(step, m);
    auto results = executor.run(micro, args);
    if (!results)
      return error("step " + llvm::Twine(step) + ", micro-batch " + llvm::Twine(m + 1) +
                   ": " + llvm::toString(results.takeError()));
    for (auto [r, a] : microCarried)
      args[a] = (*results)[r];
  }
  setStepInputs(step, gradAccum - 1);
  // The lr as the step reads it (the executor rounds inputs to f32).
  double lr = lrArg ? static_cast<double>(static_cast<float>(args[*lrArg].floats()[0])) : 0;
  auto results = executor.run(func, args);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() -
                                                        started)
                  .count();
  if (!results)
    return error("step " + llvm::Twine(step) + ": " +
                 llvm::toString(results.takeError()));
  double loss = (*results)[*lossIndex].getDouble(0);
  double norm = normIndex ? (*results)[*normIndex].getDouble(0) : 0.0;
  // With dynamic loss scaling a non-finite gradient skips the step in
  // the graph itself (state unchanged, scale backed off): report it and
  // go on, as GradScaler does.
  bool skipped = skippedIndex && (*results)[*skippedIndex].getInt(0) != 0;
  printStep(step, loss, norm, skipped, lr, *results);
  if (log)
    logStep(step, loss, norm, skipped, lr, ms);
  if (!std::isfinite(loss) || (!std::isfinite(norm) && !skipped))
    return stopOnNonFinite(step, loss, norm);
  for (auto [r, a] : carried)
    args[a] = (*results)[r];
  last = std::move(*results);
  return saveDue(step) ? save(step) : llvm::Error::success();
}

bool StepRunner::saveDue(int64_t step) const {
  return run.saveDir &&
         (step == options.steps || (run.saveEvery && step % run.saveEvery == 0));
}

/// One line per step on |os|: step, loss, grad_norm[, skipped][, lr].
void StepRunner::printStep(int64_t step, double loss, double norm, bool skipped,
                 double lr, const std::vector<Tensor> &results) {
  clearBar();
  os << "step " << step << "  loss " << llvm::format("%.6f", loss);
  if (normIndex)
    os << "  grad_norm " << llvm::format("%.6f", norm);
  if (skipped) {
    os << "  skipped";
    if (scaleIndex)
      os << " (loss scale -> "
         << llvm::format("%g", results[*scaleIndex].getDouble(0)) << ")";
  }
  // When the driver sets it (--lr or a schedule); last, so that the
  // columns before it keep their places. --log always records it.
  if (lrArg && (schedule || options.lr))
    os << "  lr " << llvm::format("%.6g", lr);
  os << "\n";
  os.flush();
}

void StepRunner::logStep(int64_t step, double loss, double norm, bool skipped, double lr,
               double ms) {
  txrt::StepRecord record;
  record.step = step;
  record.loss = loss;
  record.hasGradNorm = normIndex.has_value();
  record.gradNorm = norm;
  record.hasLr = lrArg.has_value();
  record.lr = lr;
  record.ms = ms;
  record.hasTokens = tokensPerStep > 0;
  record.tokPerS = ms > 0 ? tokensPerStep / (ms / 1000.0) : 0.0;
  record.skipped = skipped;
  std::fprintf(log, "%s\n", txrt::stepLogLine(record).c_str());
  std::fflush(log);
}

/// A NaN or infinite loss (or gradient norm, unless the step was
/// skipped) ends the run, keeping the outputs of the last finite step.
llvm::Error StepRunner::stopOnNonFinite(int64_t step, double loss, double norm) {
  if (llvm::Error err = writeOutputs())
    return err;
  double bad = std::isfinite(loss) ? norm : loss;
  return error("step " + llvm::Twine(step) + ": the " +
               (std::isfinite(loss) ? "gradient norm" : "loss") + " is " +
               (std::isnan(bad) ? "NaN" : "infinite") +
               "; stopped" +
               (options.outputDir && !last.empty()
                    ? " (--output-dir holds step " + llvm::Twine(step - 1) + ")"
                    : llvm::Twine("")) +
               "; try a lower --lr or --grad-clip");
}

/// --output-dir: the last finished step's results as .npy files.
llvm::Error StepRunner::writeOutputs() {
  if (!options.outputDir || last.empty())
    return llvm::Error::success();
  if (std::error_code ec = llvm::sys::fs::create_directories(*options.outputDir))
    return error("cannot create '" + *options.outputDir + "': " + ec.message());
  for (unsigned r = 0; r < func.getNumResults(); ++r) {
    auto name = func.getResultAttrOfType<StringAttr>(r, tx::kNameAttrName);
    llvm::SmallString<256> path(*options.outputDir);
    llvm::sys::path::append(
        path, npyFileNameFor(name ? name.str() : "result" + std::to_string(r)));
    if (llvm::Error err = writeNpyFile(last[r], path))
      return err;
  }
  return llvm::Error::success();
}
