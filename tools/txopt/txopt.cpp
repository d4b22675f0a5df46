//===- txopt.cpp - the user-facing compiler driver ------------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// `txopt model.onnx -o fused.mlir`: import, run the default pipeline, write
// the IR, a summary and (optionally) a JSON report.
//
//===----------------------------------------------------------------------===//

#include "Options.h"
#include "Report.h"
#include "Weights.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "txopt/Dialect/Tx/IR/WeightSource.h"
#include "txopt/Dialect/Tx/IR/StepContract.h"
#include "txopt/Dialect/Tx/IR/TxOps.h"
#include "txopt/Dialect/Tx/Transforms/PadLossClasses.h"
#include "txopt/Import/ONNX/ONNXImporter.h"
#include "txopt/InitAll.h"
#include "txopt/Pipelines/Pipelines.h"
#include "txopt/Target/CUDA/StepProgram.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Timer.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <set>

using namespace mlir;
using namespace txopt_cli;

namespace {
constexpr const char *kVersion = "0.1.0";

/// Exit statuses promised by `txopt --help`.
enum ExitCode { kSuccess = 0, kCompileError = 1, kUsageError = 2 };

int fail(ExitCode code, const llvm::Twine &message) {
  llvm::errs() << "txopt: error: " << message << "\n";
  return code;
}

/// Takes every diagnostic MLIR reports: keeps the first error as one line
/// with its location (so a failing pass surfaces as `txopt: error: <where>:
/// <what>`) and turns the fusion passes' near-miss remarks into report rows.
class DiagnosticCollector {
public:
  explicit DiagnosticCollector(MLIRContext &context)
      : handler(&context, [this](Diagnostic &diag) {
          std::string text = diag.str();
          if (diag.getSeverity() == DiagnosticSeverity::Remark) {
            // The greedy driver retries patterns, so one near-miss can be
            // reported more than once: keep the first of each.
            if (auto miss = parseNearMiss(diag.getLocation(), text))
              if (seen.insert(miss->pattern + "\n" + miss->node + "\n" +
                              miss->reason)
                      .second)
                nearMisses.push_back(*miss);
          } else if (diag.getSeverity() == DiagnosticSeverity::Error &&
                     message.empty()) {
            llvm::raw_string_ostream os(message);
            os << diag.getLocation() << ": " << text;
            std::replace(message.begin(), message.end(), '\n', ' ');
          }
          return success();
        }) {}
  const std::string &firstError() const { return message; }
  std::vector<NearMiss> takeNearMisses() { return std::move(nearMisses); }

private:
  std::string message;
  std::vector<NearMiss> nearMisses;
  std::set<std::string> seen;
  ScopedDiagnosticHandler handler;
};

/// Same canonical file? Writing the output over the model would lose it.
bool samePath(llvm::StringRef a, llvm::StringRef b) {
  llvm::sys::fs::UniqueID idA, idB;
  if (llvm::sys::fs::getUniqueID(a, idA) || llvm::sys::fs::getUniqueID(b, idB))
    return false;
  return idA == idB;
}

/// Writes through a temporary file renamed into place, so an existing
/// output is replaced only by a complete new one.
llvm::Error writeAtomically(llvm::StringRef path,
                            llvm::function_ref<void(llvm::raw_ostream &)> body) {
  if (path == "-") {
    body(llvm::outs());
    llvm::outs().flush();
    return llvm::Error::success();
  }
  return llvm::writeToOutput(path, [&](llvm::raw_ostream &os) {
    body(os);
    return llvm::Error::success();
  });
}

/// Lowers the training step of |module| for the GPU and writes step.txa
/// (plus the plan and kernels when asked). Returns an error message or "".
/// Every command of a lowered step (the report's "launches").
int64_t commandCount(const mlir::txopt::cuda::StepStatistics &st) {
  return st.launches + st.gemms + st.memsets + st.copies + st.attentions + st.collectives;
}

/// Lowers the training step of |module| for the GPU into |program| and
/// serializes it, with |variants| (the step for other rank counts), into
/// |bytes|. |debugOutputs|: also writes --gpu-plan, --gpu-kernels and
/// --gpu-ptx (of the root step only). Returns an error or "".
std::string compileGPUStep(ModuleOp module, const Options &options,
                           DiagnosticCollector &collector, bool debugOutputs,
                           mlir::txopt::cuda::StepProgram &program,
                           llvm::ArrayRef<mlir::txopt::cuda::RankVariantBytes> variants,
                           std::vector<uint8_t> &bytes, bool &hasCubins) {
  namespace cuda = mlir::txopt::cuda;
  func::FuncOp step;
  module.walk([&](func::FuncOp f) {
    if (f->hasAttr(mlir::txopt::tx::kTrainStepAttrName))
      step = f;
  });
  if (!step)
    return "the module has no training step to compile for the GPU";
  cuda::GPUOptions gpuOptions;
  gpuOptions.target = options.target;
  gpuOptions.allowTF32 = options.allowTF32;
  gpuOptions.geluEpilogue = !options.noGeluEpilogue;
  gpuOptions.lossGradientFusion = !options.noLossGradFusion;
  gpuOptions.normGradInputFusion = !options.noNormGradInputFusion;
  gpuOptions.packParameterCasts = !options.noPackedCasts;
  if (failed(cuda::lowerStepForGPU(module, step, gpuOptions, program)))
    return collector.firstError().empty() ? "GPU lowering failed"
                                          : collector.firstError();
  if (debugOutputs && options.gpuKernelsPath)
    if (llvm::Error err = writeAtomically(*options.gpuKernelsPath, [&](llvm::raw_ostream &os) {
          program.kernels->print(os);
        }))
      return "cannot write '" + *options.gpuKernelsPath + "': " + llvm::toString(std::move(err));
  if (debugOutputs && options.gpuPlanPath)
    if (llvm::Error err = writeAtomically(*options.gpuPlanPath, [&](llvm::raw_ostream &os) {
          program.print(os);
        }))
      return "cannot write '" + *options.gpuPlanPath + "': " + llvm::toString(std::move(err));
  cuda::KernelImages images;
  std::string error;
  if (failed(cuda::compileKernels(program, images, error)))
    return error;
  if (debugOutputs && options.gpuPtxPath)
    if (llvm::Error err = writeAtomically(*options.gpuPtxPath, [&](llvm::raw_ostream &os) {
          os << images.allPtx();
        }))
      return "cannot write '" + *options.gpuPtxPath + "': " + llvm::toString(std::move(err));
  if (failed(cuda::writeArtifact(program, images, bytes, error, variants)))
    return error;
  hasCubins = images.hasCubins();
  return "";
}

/// Compiles |module|'s training step for the GPU into |program| and writes
/// the artifact; each of |rankVariants| (the step for another rank count,
/// --data-parallel=2,4,8) is compiled into it too, and described in
/// |summary|. Returns an error or "".
std::string writeGPUArtifact(ModuleOp module,
                             llvm::ArrayRef<OwningOpRef<ModuleOp>> rankVariants,
                             const Options &options, DiagnosticCollector &collector,
                             mlir::txopt::cuda::StepProgram &program,
                             CompileSummary &summary) {
  namespace cuda = mlir::txopt::cuda;
  bool hasCubins = false;
  std::vector<cuda::RankVariantBytes> variants(rankVariants.size());
  for (size_t i = 0; i < rankVariants.size(); ++i) {
    cuda::StepProgram variantProgram;
    variants[i].ranks = options.dataParallelRanks[i + 1];
    if (std::string error = compileGPUStep(rankVariants[i].get(), options, collector,
                                           /*debugOutputs=*/false, variantProgram, {},
                                           variants[i].bytes, hasCubins);
        !error.empty())
      return "the step for " + std::to_string(variants[i].ranks) + " ranks: " + error;
    summary.gpuRankVariants.push_back({variants[i].ranks,
                                       static_cast<int64_t>(variantProgram.arenaBytes),
                                       commandCount(variantProgram.stats)});
  }
  std::vector<uint8_t> bytes;
  if (std::string error = compileGPUStep(module, options, collector, /*debugOutputs=*/true,
                                         program, variants, bytes, hasCubins);
      !error.empty())
    return error;
  if (llvm::Error err = writeAtomically(options.output, [&](llvm::raw_ostream &os) {
        os.write(reinterpret_cast<const char *>(bytes.data()), bytes.size());
      }))
    return "cannot write '" + options.output + "': " + llvm::toString(std::move(err));
  if (!hasCubins)
    llvm::errs() << "txopt: warning: ptxas not found (no CUDA toolkit): the "
                    "artifact carries PTX, which the driver compiles at load\n";
  return "";
}

OwningOpRef<ModuleOp> importModel(MLIRContext &context, const Options &options,
                                  txopt::ONNXImportInfo &info,
                                  std::string &error) {
  txopt::ONNXImportOptions importOptions;
  importOptions.inputShapes = options.inputShapes;
  importOptions.inlineWeights = options.inlineWeights;
  importOptions.allowShapeMismatch = options.allowShapeMismatch;
  if (llvm::StringRef(options.input).ends_with(".onnxtxt")) {
    auto buffer = llvm::MemoryBuffer::getFile(options.input, /*IsText=*/true);
    if (!buffer) {
      error = "cannot read '" + options.input + "': " + buffer.getError().message();
      return nullptr;
    }
    return txopt::importONNXText(context, (*buffer)->getBuffer(), options.input,
                                 importOptions, info, error);
  }
  return txopt::importONNXFile(context, options.input, importOptions, info,
                               error);
}
/// The output must not be a file one of |module|'s parameters reads its
/// weights from: the IR refers to its weight files, and writing it over one
/// of them would leave it referring to itself. Returns an error or "".
std::string checkOutputIsNoWeightFile(ModuleOp module, const Options &options) {
  if (options.output == "-")
    return "";
  for (auto parameter : module.getOps<txopt::tx::ParameterOp>())
    if (parameter.isSourced() &&
        samePath(txopt::tx::resolveWeightPath(parameter, module), options.output))
      return "output '" + options.output + "' holds the weights of parameter '" +
             parameter.getSymName().str() + "'; refusing to overwrite it";
  return "";
}

/// The options of tx-build-train-step that --train's flags set.
mlir::txopt::tx::BuildTrainStepPassOptions trainStepOptions(const Options &options) {
  mlir::txopt::tx::BuildTrainStepPassOptions step;
  step.loss = *mlir::txopt::tx::parseLossKind(options.loss);
  step.labels = options.labels;
  step.optimizer = *mlir::txopt::tx::parseOptimizerKind(options.optimizer);
  step.lr = options.lr;
  step.beta1 = options.beta1;
  step.beta2 = options.beta2;
  step.eps = options.eps;
  step.weightDecay = options.weightDecay.value_or(-1.0);
  step.momentum = options.momentum;
  step.noDecay = options.noDecay.value_or("");
  step.gradClip = options.gradClip;
  step.gradAccum = options.gradAccum;
  step.eval = options.eval;
  step.freeze = options.freeze;
  step.lossScaling = options.precision == "fp16";
  return step;
}

/// The options of tx-insert-fp8 under --precision=fp8, else none.
std::optional<mlir::txopt::tx::InsertFP8PassOptions> fp8Options(const Options &options) {
  std::optional<mlir::txopt::tx::InsertFP8PassOptions> fp8;
  if (options.precision != "fp8")
    return fp8;
  fp8.emplace();
  fp8->scaling = *mlir::txopt::tx::symbolizeFP8ScalingKind(options.fp8Scaling);
  fp8->format = *mlir::txopt::tx::symbolizeFP8Format(options.fp8Format);
  fp8->history = options.fp8History;
  fp8->amax = *mlir::txopt::tx::symbolizeAmaxCompute(options.fp8Amax);
  fp8->margin = options.fp8Margin;
  fp8->exclude = options.fp8Exclude;
  fp8->fastAccumulation =
      *mlir::txopt::tx::symbolizeFP8FastAccumulation(options.fp8FastAccumulation);
  fp8->target = options.target;
  fp8->attention = options.fp8Attention;
  fp8->explain = true;
  return fp8;
}

/// The fusions and precision of the default (or --train) pipeline into
/// |pipelineOptions|. Sets |f32GpuAttentionUnfused| when an f32 GPU step
/// keeps attention unfused.
void setPipelineOptions(const Options &options, CompileSummary &summary,
                        bool &f32GpuAttentionUnfused,
                        txopt::DefaultPipelineOptions &pipelineOptions) {
  pipelineOptions.fuseNorms = options.fuseNorms;
  pipelineOptions.fuseOptimizer = options.fuseOptimizer;
  // Attention is fused by default: on the CPU path the executor runs
  // tx.attention, and a GPU step runs it as cuDNN's SDPA, which is
  // bf16/fp16 only: an f32 GPU step keeps attention in primitive ops (GEMMs
  // and softmax kernels), and says so when fusion was asked for.
  bool gpuStep = options.emitsArtifact() || options.gpuPlanPath ||
                 options.gpuKernelsPath || options.gpuPtxPath;
  bool lowPrecision = options.precision != "fp32";
  pipelineOptions.fuseAttention =
      options.fuseAttention.value_or(!gpuStep || lowPrecision);
  f32GpuAttentionUnfused = gpuStep && !lowPrecision;
  if (gpuStep && !lowPrecision && pipelineOptions.fuseAttention) {
    pipelineOptions.fuseAttention = false;
    summary.import.warnings.push_back(
        "attention left unfused: the GPU's fused attention (cuDNN SDPA) "
        "runs in bf16/fp16; compile with --precision=bf16 to fuse it");
  }
  pipelineOptions.attentionCudnnLimits = gpuStep;
  pipelineOptions.padLossClasses = options.padLossClasses.value_or(gpuStep);
  pipelineOptions.explain = true; // near-misses feed the summary and report
  // FP8 runs the GEMMs it cannot convert in bf16.
  pipelineOptions.precision = *mlir::txopt::tx::parseGemmPrecision(
      options.precision == "fp8" ? "bf16" : options.precision);
}

/// --emit=fused (the default): runs the default pipeline, or with --train
/// the training pipeline, on |module|. Returns an error or "".
std::string runPipeline(MLIRContext &context, ModuleOp module, const Options &options,
                        DiagnosticCollector &collector, CompileSummary &summary,
                        bool &f32GpuAttentionUnfused,
                        std::vector<OwningOpRef<ModuleOp>> &rankVariants) {
  PassManager pm(&context);
  txopt::DefaultPipelineOptions pipeline;
  setPipelineOptions(options, summary, f32GpuAttentionUnfused, pipeline);
  std::optional<mlir::txopt::tx::CacheFP8WeightsPassOptions> cache;
  if (options.train && options.precision == "fp8" && options.fp8Scaling == "delayed" &&
      options.fp8WeightCache == "on") {
    cache.emplace();
    cache->explain = false;
  }
  // Several rank counts: the part of the pipeline that does not depend on
  // the count runs once, the rest once per count (below).
  bool severalRankCounts = options.dataParallelRanks.size() > 1;
  if (options.train && severalRankCounts) {
    txopt::buildTrainPipelineFront(pm, pipeline, trainStepOptions(options),
                                   fp8Options(options), std::nullopt);
  } else if (options.train) {
    txopt::buildTrainPipeline(pm, pipeline, trainStepOptions(options), fp8Options(options),
                              options.dataParallel, std::nullopt, cache,
                              options.bucketBytes);
  } else {
    txopt::buildDefaultPipeline(pm, pipeline);
  }
  // The step is built for one GPU architecture: record it in the IR.
  if (options.train)
    module->setAttr("tx.target", StringAttr::get(&context, options.target));
  if (options.fuseNorms)
    summary.fusionsRun.push_back("norms");
  if (options.fuseOptimizer)
    summary.fusionsRun.push_back("optimizer");
  if (pipeline.fuseAttention)
    summary.fusionsRun.push_back("attention");
  if (failed(pm.run(module)))
    return collector.firstError().empty() ? "the default pipeline failed"
                                          : collector.firstError();
  if (!(options.train && severalRankCounts))
    return "";
  // |module| becomes the step for the smallest count, a copy of it the
  // step for each other count.
  for (size_t i = 1; i < options.dataParallelRanks.size(); ++i)
    rankVariants.push_back(module.clone());
  auto runTail = [&](ModuleOp m, int64_t ranks) -> std::string {
    PassManager tail(&context);
    txopt::buildTrainPipelineTail(tail, options.precision == "fp8", ranks, cache,
                                  options.bucketBytes);
    if (succeeded(tail.run(m)))
      return "";
    std::string error = collector.firstError().empty() ? "the training pipeline failed"
                                                       : collector.firstError();
    return "the step for " + std::to_string(ranks) + " ranks: " + error;
  };
  if (std::string error = runTail(module, options.dataParallelRanks.front()); !error.empty())
    return error;
  for (size_t i = 0; i < rankVariants.size(); ++i)
    if (std::string error = runTail(rankVariants[i].get(), options.dataParallelRanks[i + 1]);
        !error.empty())
      return error;
  return "";
}

/// What the compiled |module| holds, for the summary and the report: op
/// counts, fusions, near misses (a GEMM left out of FP8 also warns), the
/// training step and the precision.
void summarizeModule(ModuleOp module, const Options &options,
                     DiagnosticCollector &collector, CompileSummary &summary) {
  summary.txOps = countOps(module);
  summary.fused = countFused(module);
  module.walk([&](mlir::txopt::tx::SoftmaxCrossEntropyLossOp loss) {
    if (auto classes = loss->getAttrOfType<IntegerAttr>(mlir::txopt::tx::kPaddedClassesAttr))
      summary.paddedLossClasses.emplace_back(
          classes.getInt(), cast<RankedTensorType>(loss.getScores().getType()).getShape()[1]);
  });
  summary.notFused = collector.takeNearMisses();
  // A GEMM that cannot use FP8 is worth a warning, not just a report row.
  for (const NearMiss &miss : summary.notFused) {
    if (miss.pattern == "fp8")
      summary.import.warnings.push_back("GEMM '" + miss.node +
                                        "' stays bf16: " + miss.reason);
    // Asked for with --fp8-attention, so each one left out is worth a line.
    if (miss.pattern == "fp8 attention")
      summary.import.warnings.push_back("attention '" + miss.node +
                                        "' stays bf16: " + miss.reason);
  }
  if (options.train)
    summary.train = describeTrainStep(module);
  summary.precision = describePrecision(module, options.precision);
}

/// The GPU lines of the summary and report for the lowered |program|.
void summarizeGPUProgram(const mlir::txopt::cuda::StepProgram &gpuProgram,
                         bool f32GpuAttentionUnfused, CompileSummary &summary) {
  const auto &st = gpuProgram.stats;
  summary.gpu = llvm::formatv(
      "{0}: {1} kernel launches, {2} GEMMs, {3} memsets, {4} copies; {5} ops "
      "fused into their users; arena {6:F1} MB (state {7:F1} MB, scratch "
      "{8:F1} MB planned from {9:F1} MB)",
      gpuProgram.target, st.launches, st.gemms, st.memsets, st.copies,
      st.fusedOps, gpuProgram.arenaBytes / 1e6, st.argumentBytes / 1e6,
      st.scratchBytes / 1e6, st.unplannedBytes / 1e6);
  if (st.rematerializedValues)
    summary.gpu += llvm::formatv(
        "; {0} values recomputed for the backward ({1:F1} MB not kept)",
        st.rematerializedValues, st.rematerializedBytes / 1e6);
  if (st.biasEpilogues)
    summary.gpu += llvm::formatv("; {0} GEMMs add their bias in cuBLASLt's epilogue",
                                 st.biasEpilogues);
  if (st.geluEpilogues)
    summary.gpu += llvm::formatv("; {0} GEMMs compute their tanh GELU in cuBLASLt's "
                                 "epilogue",
                                 st.geluEpilogues);
  if (f32GpuAttentionUnfused)
    summary.gpu += "; attention unfused (an f32 step: cuDNN's fused "
                   "attention runs bf16/fp16)";
  if (st.attentions)
    summary.gpu += llvm::formatv(
        "; {0} fused attention calls (cuDNN SDPA{2}), {1:F1} MB of attention "
        "scores and probabilities never materialized",
        st.attentions, st.attentionScoreBytesAvoided / 1e6,
        st.fp8Attentions ? llvm::formatv(", {0} in FP8", st.fp8Attentions).str() : "");
  if (gpuProgram.ranks)
    summary.gpu += llvm::formatv(
        "; data-parallel over {0} ranks: {1} collectives (NCCL)",
        gpuProgram.ranks, st.collectives);
  if (st.asyncGroups)
    summary.gpu += llvm::formatv(", {0} of them beside the backward in {1} group{2}",
                                 st.asyncCollectives, st.asyncGroups,
                                 st.asyncGroups == 1 ? "" : "s");
  // The other rank counts' steps in the same artifact: what each costs.
  for (const CompileSummary::RankVariant &v : summary.gpuRankVariants)
    summary.gpu += llvm::formatv("; also the step for {0} ranks (arena {1:F1} MB, "
                                 "{2} commands)",
                                 v.ranks, v.arenaBytes / 1e6, v.launches);
  // The functions beside the step run on their own; their sizes say what
  // validation and sampling cost per call.
  for (const auto *f : {&gpuProgram.microStep, &gpuProgram.evaluation, &gpuProgram.logits})
    if (*f)
      summary.gpu += llvm::formatv("; @{0} {1} commands", (*f)->name, (*f)->commands.size());
  summary.gpu += llvm::formatv("; {0:F3} model TFLOP per step", st.modelFlops / 1e12);
  summary.gpuLaunches = commandCount(st);
  summary.gpuModelFlops = st.modelFlops;
  summary.gpuAttentionCalls = st.attentions;
  summary.gpuFP8AttentionCalls = st.fp8Attentions;
  summary.gpuBiasEpilogues = st.biasEpilogues;
  summary.gpuGeluEpilogues = st.geluEpilogues;
  summary.gpuAttentionBytesAvoided = st.attentionScoreBytesAvoided;
  summary.gpuRematerializedBytes = st.rematerializedBytes;
  summary.gpuArenaBytes = gpuProgram.arenaBytes;
}

/// Writes what --emit asks for: the GPU artifact, or the IR. Returns an
/// error or "".
std::string writeOutput(ModuleOp module, llvm::ArrayRef<OwningOpRef<ModuleOp>> rankVariants,
                        const Options &options, DiagnosticCollector &collector,
                        bool f32GpuAttentionUnfused, CompileSummary &summary) {
  if (options.emitsArtifact()) {
    mlir::txopt::cuda::StepProgram gpuProgram;
    std::string gpuError =
        writeGPUArtifact(module, rankVariants, options, collector, gpuProgram, summary);
    if (!gpuError.empty())
      return gpuError;
    summarizeGPUProgram(gpuProgram, f32GpuAttentionUnfused, summary);
    return "";
  }
  OpPrintingFlags flags;
  flags.enableDebugInfo(options.printLocations, /*prettyForm=*/false);
  if (llvm::Error err = writeAtomically(options.output, [&](llvm::raw_ostream &os) {
        module->print(os, flags);
      }))
    return "cannot write '" + options.output + "': " + llvm::toString(std::move(err));
  return "";
}
} // namespace

static int runMain(int argc, char **argv);

int main(int argc, char **argv) {
  // The importer catches its own exceptions; this is the last resort for
  // the rest (an allocation failure in a pass), so that nothing escapes as
  // an abort.
  try {
    return runMain(argc, argv);
  } catch (const std::bad_alloc &) {
    return fail(kCompileError, "out of memory");
  } catch (const std::exception &e) {
    return fail(kCompileError, std::string("internal error: ") + e.what());
  }
}

static int runMain(int argc, char **argv) {
  Options options;
  std::string error;
  if (!parseOptions(argc, argv, options, error))
    return fail(kUsageError, error);
  if (options.showHelp) {
    llvm::outs() << helpText();
    return kSuccess;
  }
  if (options.showVersion) {
    llvm::outs() << "txopt " << kVersion << " (MLIR " << LLVM_VERSION_STRING
                 << ")\n";
    return kSuccess;
  }
  if (options.output != "-" && samePath(options.input, options.output))
    return fail(kUsageError, "output '" + options.output +
                                 "' is the input model; refusing to overwrite it");

  auto start = std::chrono::steady_clock::now();
  DialectRegistry registry;
  txopt::registerAllDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  DiagnosticCollector collector(context);

  CompileSummary summary;
  summary.model = options.input;
  summary.output = options.output;
  summary.emit = options.emit == EmitKind::Imported ? "tx"
                 : options.emitsArtifact()           ? "gpu step"
                                                     : "fused";

  OwningOpRef<ModuleOp> module =
      importModel(context, options, summary.import, error);
  if (!module)
    return fail(kCompileError, error.empty() ? collector.firstError() : error);

  // Before --weights: a checkpoint of an untied model names every copy.
  if (options.train && options.emit == EmitKind::Fused) {
    PassManager pm(&context);
    txopt::tx::UntieParametersPassOptions untie;
    untie.tie = options.tie;
    untie.untie = options.untie;
    pm.addPass(txopt::tx::createUntieParametersPass(untie));
    if (failed(pm.run(*module)))
      return fail(kCompileError, collector.firstError());
  }

  if (options.weightsCheckpoint) {
    int loaded = loadWeights(*module, *options.weightsCheckpoint, error);
    if (loaded < 0)
      return fail(kCompileError, error);
    summary.weightsCheckpoint = *options.weightsCheckpoint;
    summary.weightsLoaded = loaded;
  }

  if (std::string bad = checkOutputIsNoWeightFile(*module, options); !bad.empty())
    return fail(kUsageError, bad);

  bool f32GpuAttentionUnfused = false;
  std::vector<OwningOpRef<ModuleOp>> rankVariants;
  if (options.emit == EmitKind::Fused)
    if (std::string err = runPipeline(context, *module, options, collector, summary,
                                      f32GpuAttentionUnfused, rankVariants);
        !err.empty())
      return fail(kCompileError, err);
  if (failed(verify(*module)))
    return fail(kCompileError, "internal error: invalid IR after compilation: " +
                                   collector.firstError());
  for (OwningOpRef<ModuleOp> &variant : rankVariants)
    if (failed(verify(*variant)))
      return fail(kCompileError, "internal error: invalid IR after compilation: " +
                                     collector.firstError());

  summarizeModule(*module, options, collector, summary);
  if (std::string err = writeOutput(*module, rankVariants, options, collector,
                                    f32GpuAttentionUnfused, summary);
      !err.empty())
    return fail(kCompileError, err);

  summary.seconds = std::chrono::duration<double>(
                        std::chrono::steady_clock::now() - start)
                        .count();
  if (options.reportPath) {
    llvm::json::Value report(buildReport(summary));
    if (llvm::Error err = writeAtomically(*options.reportPath,
                                          [&](llvm::raw_ostream &os) {
                                            os << llvm::formatv("{0:2}", report)
                                               << "\n";
                                          }))
      return fail(kCompileError, "cannot write report '" + *options.reportPath +
                                     "': " + llvm::toString(std::move(err)));
  }

  if (!options.quiet)
    printSummary(summary, options.verbose,
                 options.output == "-" ? llvm::errs() : llvm::outs());
  // Warnings go to stderr, one line each, whatever the summary does (it
  // goes to stdout with -o FILE, and -q drops it): a script that reads the
  // summary still sees them, and -q cannot hide them.
  llvm::outs().flush();
  for (const std::string &warning : summary.import.warnings)
    llvm::errs() << "txopt: warning: " << warning << "\n";
  return kSuccess;
}
