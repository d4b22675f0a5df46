//===- Options.cpp - txopt command-line options ---------------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// A small hand-written parser: llvm::cl exits with status 1 on a bad flag,
// and txopt promises status 2 for every usage error.
//
//===----------------------------------------------------------------------===//

#include "Options.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Regex.h"

#include <cerrno>
#include <cstdlib>
#include <cmath>
#include <cstring>

using namespace txopt_cli;

const char *txopt_cli::helpText() {
  return R"(OVERVIEW: txopt - training compiler for transformers (ONNX in, fused tx IR out)

USAGE: txopt MODEL.onnx [options]
       txopt MODEL.onnxtxt [options]      (ONNX textual syntax)

OPTIONS:
  -o FILE                 Write the IR to FILE ('-' = stdout, the default).
                          The file is replaced atomically, only on success.
  --emit=KIND             What to write: 'fused' (default: import, then the
                          default pipeline) or 'tx' (the IR right after import).
  --input-shape NAME=DIMS Size every dim of graph input NAME, e.g. ids=2x32.
                          Needed when the model has symbolic dims. Repeatable.
  --inline-weights        Copy weights stored as ONNX external data into
                          the IR as dense values. By default they stay in
                          their file: the IR records file, offset and length
                          (see docs/Import.md) and nothing reads them.
  --allow-shape-mismatch  Accept a graph output whose declared shape
                          contradicts the shape txopt computes (a warning
                          instead of an error).
  --no-fuse=LIST          Skip fusions: comma-separated 'norms', 'optimizer',
                          'attention' or 'all'.
  --fuse-attention        Fuse attention into tx.attention. On by default
                          on the CPU path (the executor's tx.attention) and
                          for a GPU step (-o step.txa) in bf16, fp16 or fp8,
                          where it runs as cuDNN's fused flash attention.
                          An f32 GPU step keeps attention unfused (with a
                          warning when this flag asks for it): cuDNN's fused
                          attention runs bf16/fp16 only. --no-fuse=attention
                          turns it off everywhere.
  --pad-loss-classes      Pad a language model's vocabulary of 1024 or more
                          classes to a multiple of 8 before its loss
                          (tx-pad-loss-classes; exact: the padded classes'
                          probabilities are 0). On by default for a GPU step,
                          whose cuBLASLt GEMMs run unaligned logit rows
                          several times slower; off elsewhere.
                          --no-pad-loss-classes turns it off.
  --report=FILE           Write a JSON report: what was imported, fused, and
                          why each near-miss was not fused.
  --train                 Build a training step instead: one function
                          (params, optimizer state, step, batch...) ->
                          (new params, new state, new step, loss, grad_norm)
                          with the gradient and a fused optimizer (see
                          docs/Training.md). Options below need --train.
  --loss=KIND             'output' (default: the model's result #0 is the
                          loss) or 'cross-entropy' (result #0 is logits).
  --labels=NAME           Labels input for --loss=cross-entropy (default
                          'labels'; added as an i64 input if missing).
  --optimizer=KIND        adamw (default), adam or sgd.
  --lr=X                  Learning rate (default 1e-3).
  --betas=B1,B2           Adam betas (default 0.9,0.999).
  --eps=X                 Adam epsilon (default 1e-8).
  --weight-decay=X        Default: 0.01 for adamw, 0 for adam and sgd.
  --momentum=X            SGD momentum (default 0).
  --no-decay=REGEX        Parameters without weight decay (default: rank < 2,
                          i.e. biases and norm weights).
  --grad-clip=X           Clip gradients to global L2 norm X (default off).
  --freeze=REGEX          Parameters not trained.
  --tie=REGEX             Keep matching shared parameters tied. By default
                          a weight several nodes read (the exporter stores
                          identical initializers once: all LayerNorms of a
                          fresh GPT-2 read one weight) is untied, one copy
                          per node, named after its module; an embedding
                          reused as the LM head stays tied.
  --untie=REGEX           Untie matching shared parameters, embeddings too.
  --grad-accum=N          Gradient accumulation: one optimizer step per N
                          micro-batches (each the model's batch). Also emits
                          @micro_step, which adds a micro-batch's gradients
                          into accumulators; the step adds the last one's
                          and updates with their mean (docs/Training.md).
  --data-parallel=N       A ZeRO-1 step for N data-parallel ranks: gradients
                          reduce-scattered, optimizer state sharded, params
                          all-gathered (docs/DataParallel.md). Runs on
                          txopt-run --ranks=N, or on the GPU under a
                          launcher (txrun: NCCL) or as txrun --ranks=N
                          threads. N=1 keeps the collectives.
  --data-parallel=N1,N2,...
                          With -o step.txa: one artifact holding the step
                          for each rank count; txrun runs the one for the
                          ranks it was started with (--gpu-plan, --gpu-
                          kernels and --gpu-ptx show the smallest count's).
  --bucket-mb=X           With --data-parallel: reduce-scatter the gradients
                          in buckets of X MiB (default 25) as the backward
                          completes them, beside the backward on the GPU;
                          0 keeps them after the backward.
  --eval                  Also emit @eval: the loss of a batch under the
                          step's parameters, forward only (no update, no
                          state change, dropout off), for txopt-run
                          --val-data and (in step.txa) txrun --val-data.
  --precision=MODE        fp32 (default), bf16 or fp16: matrix products in
                          that type, everything else in f32 (see --report);
                          fp16 under --train adds dynamic loss scaling
                          (GradScaler: scale 2^16, x2 after 2000 clean steps,
                          x0.5 and a skipped step on inf/NaN). fp8 (needs
                          --train): GEMMs in bf16, then every eligible one
                          in FP8 with Transformer Engine's scaling as state
                          of the step (options below; --report lists each
                          GEMM kept in bf16 and why).
  --fp8-recipe=KIND       delayed (default) or current scaling.
  --fp8-format=KIND       hybrid (default: E4M3 forward, E5M2 gradients) or
                          e4m3.
  --fp8-history=N         Delayed scaling: amax history length (1024).
  --fp8-amax=KIND         Delayed scaling: max (default) or most_recent.
  --fp8-margin=N          Delayed scaling: binades of headroom (0).
  --fp8-fast-accumulation=KIND
                          Which FP8 GEMMs sum in the tensor cores' fast
                          accumulator: none (default), forward (Transformer
                          Engine's default) or all; the others promote
                          their sums to f32 at intervals (more exact; no
                          slower on GPT-2's step, docs/Precision.md).
  --fp8-exclude=REGEX     GEMMs (by ONNX node name) kept in bf16; default:
                          the first and last forward GEMM.
  --fp8-weight-cache=on|off
                          Delayed scaling: keep the weights' FP8 codes as
                          step state, cast by the step that updates the
                          weights (bit-identical results; default off: on
                          the GPU it saves no time yet and keeps the codes
                          between steps, docs/Precision.md).
  --fp8-attention         Delayed scaling: also run each eligible fused
                          attention in FP8 (cuDNN's FP8 flash attention:
                          bf16/f16, causal or no mask, head dim 128; the
                          others are reported; docs/Precision.md).
  --target=sm_XY          GPU architecture (default sm_90); below sm_89 no
                          GEMM can use FP8 (reported).
  -o step.txa             With --train: compile the step for the GPU (CUDA
                          kernels through MLIR's NVVM path + cuBLASLt GEMMs,
                          a memory plan); run it with `txrun step.txa`.
                          No GPU is needed to compile.
  --gpu-plan=FILE         With -o step.txa: also write the step's memory
                          plan and command list as text.
  --gpu-kernels=FILE      With -o step.txa: also write the kernels as MLIR.
  --gpu-ptx=FILE          With -o step.txa: also write the kernels' PTX: one
                          module per part compiled in parallel, one after
                          another (TXOPT_KERNEL_JOBS=1: one module, which
                          ptxas reads whole).
  --tf32                  Let f32 GEMMs use TF32 tensor cores (off: exact f32).
  --no-gelu-epilogue      Keep a bf16/f16 GEMM's tanh GELU in a kernel instead
                          of cuBLASLt's GELU_AUX epilogue (which writes the
                          GELU and its input from the GEMM; tanh-GELU models
                          such as GPT-2's gelu_new only).
  --no-loss-grad-fusion   Give the cross-entropy gradient its own kernel
                          after the loss's, reading the logits from memory
                          again, instead of writing it from the loss's kernel.
  --no-norm-grad-input-fusion
                          Store a norm gradient's dy (the sum of its readers'
                          input gradients) and its residual gradient with
                          kernels of their own, instead of computing them in
                          the norm-gradient kernel.
  --no-packed-casts       Cast each f32 parameter to bf16/f16 in its own
                          launch instead of all in one packed launch.
  --weights=DIR           Start from trained weights: every parameter takes
                          its value from the checkpoint in DIR (txopt-run or
                          txrun --save: checkpoint.json + safetensors,
                          checksums verified); names, shapes and dtypes must
                          match the model's. Optimizer state is not loaded.
  --print-locations       Keep ONNX node names as locations in the output.
  -v, --verbose           Print a longer summary, with every near-miss.
  -q, --quiet             Print no summary.
  --help                  Print this help.
  --version               Print the version.

EXIT STATUS: 0 success, 1 the model could not be compiled, 2 usage error.
)";
}

/// Parses `2x32x128` into dims; every dim must be a positive integer.
static bool parseDims(const std::string &text, std::vector<int64_t> &dims) {
  dims.clear();
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('x', start);
    std::string item = text.substr(start, end == std::string::npos
                                              ? std::string::npos
                                              : end - start);
    if (item.empty() || item.find_first_not_of("0123456789") != std::string::npos)
      return false;
    errno = 0;
    long long value = std::strtoll(item.c_str(), nullptr, 10);
    if (errno != 0 || value <= 0 || value > (1LL << 40))
      return false;
    dims.push_back(value);
    if (end == std::string::npos)
      break;
    start = end + 1;
  }
  return !dims.empty();
}

/// Parses a finite number; the whole text must be consumed.
static bool parseNumber(const std::string &text, double &value) {
  if (text.empty())
    return false;
  errno = 0;
  char *end = nullptr;
  value = std::strtod(text.c_str(), &end);
  return errno == 0 && end == text.c_str() + text.size() && std::isfinite(value);
}

/// Matches `--name=value` or `--name value`; advances |i| for the latter.
static bool takeValue(int argc, char **argv, int &i, const char *name,
                      std::string &value, std::string &error) {
  std::string arg = argv[i];
  std::string flag = std::string("--") + name;
  if (arg.rfind(flag + "=", 0) == 0) {
    value = arg.substr(flag.size() + 1);
    return true;
  }
  if (arg == flag) {
    if (i + 1 >= argc) {
      error = "option '" + flag + "' needs a value";
      return false;
    }
    value = argv[++i];
    return true;
  }
  return false;
}

/// Checks |value| of |flag| against |allowed| (with none listed, any
/// non-empty value); sets a one-line |error| when it does not fit.
static void checkChoice(const std::string &flag, const std::string &value,
                        std::initializer_list<const char *> allowed,
                        std::string &error) {
  bool ok = allowed.size() == 0 && !value.empty();
  std::string expected;
  for (const char *a : allowed) {
    ok |= value == a;
    expected += (expected.empty() ? "" : ", ") + std::string(a);
  }
  if (!ok)
    error = "bad " + flag + " '" + value + "'" +
            (expected.empty() ? " (expected a non-empty value)"
                              : " (expected one of " + expected + ")");
}

/// The options of --train. Returns true when argv[i] was one of them (with
/// |error| set when its value is bad).
static bool parseTrainOption(int argc, char **argv, int &i, Options &options,
                             std::string &error) {
  std::string value;
  std::string flag = argv[i];
  flag = flag.substr(0, flag.find('='));
  auto number = [&](double &out, bool (*valid)(double), const char *what) {
    if (!parseNumber(value, out) || !valid(out))
      error = "bad " + flag + " '" + value + "' (expected " + what + ")";
    options.trainFlags.push_back(flag);
    return true;
  };
  auto positive = [](double x) { return x > 0; };
  auto nonNegative = [](double x) { return x >= 0; };
  auto unitInterval = [](double x) { return x >= 0 && x < 1; };
  if (takeValue(argc, argv, i, "lr", value, error))
    return number(options.lr, positive, "a number > 0");
  if (takeValue(argc, argv, i, "eps", value, error))
    return number(options.eps, nonNegative, "a number >= 0");
  if (takeValue(argc, argv, i, "momentum", value, error))
    return number(options.momentum, unitInterval, "a number in [0, 1)");
  if (takeValue(argc, argv, i, "grad-clip", value, error))
    return number(options.gradClip, positive, "a number > 0");
  if (std::string(argv[i]) == "--eval") {
    options.eval = true;
    options.trainFlags.push_back("--eval");
    return true;
  }
  if (takeValue(argc, argv, i, "grad-accum", value, error)) {
    char *end = nullptr;
    errno = 0;
    long long n = std::strtoll(value.c_str(), &end, 10);
    if (value.empty() || errno || *end || n < 1 || n > (1 << 20))
      error = "bad --grad-accum '" + value + "' (expected an integer >= 1)";
    options.gradAccum = n;
    options.trainFlags.push_back(flag);
    return true;
  }
  if (takeValue(argc, argv, i, "data-parallel", value, error)) {
    // One rank count, or a comma-separated list of them (one artifact that
    // runs on any of them).
    options.dataParallelRanks.clear();
    for (llvm::StringRef item : llvm::split(llvm::StringRef(value), ',')) {
      long long n = 0;
      if (item.getAsInteger(10, n) || n < 1 || n > 4096) {
        error = "bad --data-parallel '" + value +
                "' (expected a rank count in 1..4096, or a comma-separated list of them)";
        return true;
      }
      if (llvm::is_contained(options.dataParallelRanks, n)) {
        error = "bad --data-parallel '" + value + "': rank count " +
                std::to_string(n) + " is listed twice";
        return true;
      }
      options.dataParallelRanks.push_back(n);
    }
    // The root's count and at most 63 variants (the runtime's limit).
    if (options.dataParallelRanks.size() > 64) {
      error = "bad --data-parallel '" + value + "': at most 64 rank counts";
      return true;
    }
    llvm::sort(options.dataParallelRanks);
    options.dataParallel = options.dataParallelRanks.front();
    options.trainFlags.push_back(flag);
    return true;
  }
  if (takeValue(argc, argv, i, "bucket-mb", value, error)) {
    double mb = 0;
    number(mb, nonNegative, "a size in MiB >= 0");
    if (error.empty() && mb > 1048576.0)
      error = "bad --bucket-mb '" + value + "' (expected at most 1048576 MiB)";
    options.bucketBytes = static_cast<int64_t>(mb * 1024 * 1024);
    options.bucketGiven = true;
    return true;
  }
  if (takeValue(argc, argv, i, "weight-decay", value, error)) {
    double decay = 0;
    number(decay, nonNegative, "a number >= 0");
    options.weightDecay = decay;
    return true;
  }
  if (takeValue(argc, argv, i, "betas", value, error)) {
    size_t comma = value.find(',');
    std::string all = value;
    bool ok = comma != std::string::npos;
    if (ok) {
      value = all.substr(0, comma);
      ok = parseNumber(value, options.beta1) && unitInterval(options.beta1);
      value = all.substr(comma + 1);
      ok = ok && parseNumber(value, options.beta2) && unitInterval(options.beta2);
    }
    if (!ok)
      error = "bad --betas '" + all + "' (expected B1,B2 in [0, 1), e.g. 0.9,0.95)";
    options.trainFlags.push_back(flag);
    return true;
  }
  auto text = [&](std::string &out, std::initializer_list<const char *> allowed) {
    out = value;
    checkChoice(flag, value, allowed, error);
    options.trainFlags.push_back(flag);
    return true;
  };
  if (takeValue(argc, argv, i, "loss", value, error))
    return text(options.loss, {"output", "cross-entropy"});
  if (takeValue(argc, argv, i, "optimizer", value, error))
    return text(options.optimizer, {"adamw", "adam", "sgd"});
  if (takeValue(argc, argv, i, "labels", value, error))
    return text(options.labels, {});
  if (takeValue(argc, argv, i, "freeze", value, error))
    return text(options.freeze, {});
  for (auto [name, out] : {std::pair<const char *, std::string *>{"tie", &options.tie},
                           {"untie", &options.untie}})
    if (takeValue(argc, argv, i, name, value, error)) {
      text(*out, {});
      std::string why;
      if (!llvm::Regex(value).isValid(why))
        error = "bad --" + std::string(name) + " regex '" + value + "': " + why;
      return true;
    }
  if (takeValue(argc, argv, i, "no-decay", value, error)) {
    std::string regex;
    text(regex, {});
    options.noDecay = regex;
    return true;
  }
  return !error.empty();
}

/// The FP8 recipe options. Returns true when argv[i] was one of them (with
/// |error| set when its value is bad).
static bool parseFP8Option(int argc, char **argv, int &i, Options &options,
                           std::string &error) {
  std::string value;
  std::string flag = argv[i];
  flag = flag.substr(0, flag.find('='));
  auto oneOf = [&](std::string &out, std::initializer_list<const char *> allowed) {
    out = value;
    checkChoice(flag, value, allowed, error);
    options.fp8Flags.push_back(flag);
    return true;
  };
  auto count = [&](int64_t &out, int64_t min) {
    char *end = nullptr;
    errno = 0;
    long long n = std::strtoll(value.c_str(), &end, 10);
    if (value.empty() || errno || *end || n < min || n > (1 << 20))
      error = "bad " + flag + " '" + value + "' (expected an integer >= " +
              std::to_string(min) + ")";
    out = n;
    options.fp8Flags.push_back(flag);
    return true;
  };
  if (takeValue(argc, argv, i, "fp8-recipe", value, error))
    return oneOf(options.fp8Scaling, {"delayed", "current"});
  if (takeValue(argc, argv, i, "fp8-format", value, error))
    return oneOf(options.fp8Format, {"hybrid", "e4m3"});
  if (takeValue(argc, argv, i, "fp8-amax", value, error))
    return oneOf(options.fp8Amax, {"max", "most_recent"});
  if (takeValue(argc, argv, i, "fp8-fast-accumulation", value, error))
    return oneOf(options.fp8FastAccumulation, {"forward", "none", "all"});
  if (takeValue(argc, argv, i, "fp8-weight-cache", value, error))
    return oneOf(options.fp8WeightCache, {"on", "off"});
  if (takeValue(argc, argv, i, "fp8-history", value, error))
    return count(options.fp8History, 1);
  if (takeValue(argc, argv, i, "fp8-margin", value, error))
    return count(options.fp8Margin, 0);
  if (takeValue(argc, argv, i, "fp8-exclude", value, error)) {
    options.fp8Exclude = value;
    if (value.empty())
      error = "option '--fp8-exclude' needs a regex";
    options.fp8Flags.push_back(flag);
    return true;
  }
  if (takeValue(argc, argv, i, "target", value, error)) {
    int sm = 0;
    if (value.rfind("sm_", 0) != 0 || value.size() < 4 ||
        value.find_first_not_of("0123456789", 3) != std::string::npos ||
        (sm = std::atoi(value.c_str() + 3)) <= 0)
      error = "bad --target '" + value + "' (expected sm_XY, e.g. sm_90)";
    options.target = value;
    options.fp8Flags.push_back(flag);
    return true;
  }
  return !error.empty();
}

/// --no-fuse's comma-separated list (norms, optimizer, attention, all).
static bool parseNoFuse(const std::string &value, Options &options,
                        std::string &error) {
  size_t start = 0;
  while (start <= value.size()) {
    size_t comma = value.find(',', start);
    std::string item = value.substr(start, comma == std::string::npos
                                               ? std::string::npos
                                               : comma - start);
    if (item == "norms" || item == "all")
      options.fuseNorms = false;
    if (item == "optimizer" || item == "all")
      options.fuseOptimizer = false;
    if (item == "attention" || item == "all")
      options.fuseAttention = false;
    if (item != "norms" && item != "optimizer" && item != "attention" &&
        item != "all") {
      error = "unknown fusion '" + item +
              "' in --no-fuse (expected norms, optimizer, attention or all)";
      return false;
    }
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  return true;
}

/// The checks between options, once all are read.
static bool checkCombinations(const Options &options, std::string &error) {
  if (!options.train && !options.trainFlags.empty()) {
    error = "option '" + options.trainFlags.front() + "' needs --train";
    return false;
  }
  if (options.bucketGiven && options.dataParallel == 0) {
    error = "option '--bucket-mb' needs --data-parallel";
    return false;
  }
  if (options.precision != "fp8" && !options.fp8Flags.empty()) {
    error = "option '" + options.fp8Flags.front() + "' needs --precision=fp8";
    return false;
  }
  bool cacheAsked = llvm::is_contained(options.fp8Flags, "--fp8-weight-cache") &&
                    options.fp8WeightCache == "on";
  if (options.fp8Attention && options.fp8Scaling != "delayed") {
    error = "--fp8-attention needs --fp8-recipe=delayed (cuDNN's FP8 attention "
            "writes an FP8 output whose scale must be known before the call)";
    return false;
  }
  if (cacheAsked && options.fp8Scaling != "delayed") {
    error = "--fp8-weight-cache=on needs --fp8-recipe=delayed (current scaling "
            "derives each weight's scale from this step's amax, so its codes "
            "cannot be made a step ahead)";
    return false;
  }
  if (options.precision == "fp8" && options.gradAccum > 1) {
    error = "--grad-accum and --precision=fp8 exclude each other (the FP8 "
            "scaling state advances once per micro-batch; not built yet)";
    return false;
  }
  if (options.precision == "fp8" && !options.train) {
    error = "--precision=fp8 needs --train (the FP8 scaling state lives in "
            "the training step)";
    return false;
  }
  if (options.precision != "fp32" && options.emit == EmitKind::Imported) {
    error = "--precision and --emit=tx exclude each other (--emit=tx "
            "writes the IR right after import)";
    return false;
  }
  if (options.train && options.emit == EmitKind::Imported) {
    error = "--train and --emit=tx exclude each other (the step is built "
            "after the fusions)";
    return false;
  }
  if (options.dataParallelRanks.size() > 1 && !options.emitsArtifact()) {
    error = "--data-parallel with several rank counts needs a GPU artifact "
            "(-o step.txa); the IR holds the step for one rank count "
            "(txopt-run --ranks N runs the step compiled for N)";
    return false;
  }
  if (options.emitsArtifact() && !options.train) {
    error = "-o '" + options.output + "': a .txa artifact holds a training "
            "step; add --train";
    return false;
  }
  if ((options.gpuPlanPath || options.gpuKernelsPath || options.gpuPtxPath ||
       options.allowTF32 || options.noGeluEpilogue || options.noLossGradFusion ||
       options.noNormGradInputFusion || options.noPackedCasts) &&
      !options.emitsArtifact()) {
    error = "--gpu-plan, --gpu-kernels, --gpu-ptx, --tf32, --no-gelu-epilogue, "
            "--no-loss-grad-fusion, --no-norm-grad-input-fusion and --no-packed-casts "
            "need -o FILE.txa";
    return false;
  }
  if (options.input.empty() && !options.showHelp && !options.showVersion) {
    error = "no model given (usage: txopt MODEL.onnx -o OUT.mlir)";
    return false;
  }
  return true;
}

bool txopt_cli::parseOptions(int argc, char **argv, Options &options,
                             std::string &error) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    if (arg == "--help" || arg == "-h") {
      options.showHelp = true;
    } else if (arg == "--version") {
      options.showVersion = true;
    } else if (arg == "-v" || arg == "--verbose") {
      options.verbose = true;
    } else if (arg == "-q" || arg == "--quiet") {
      options.quiet = true;
    } else if (arg == "--print-locations") {
      options.printLocations = true;
    } else if (arg == "--inline-weights") {
      options.inlineWeights = true;
    } else if (takeValue(argc, argv, i, "weights", value, error)) {
      if (value.empty())
        error = "option '--weights' needs a checkpoint folder";
      options.weightsCheckpoint = value;
    } else if (arg == "--allow-shape-mismatch") {
      options.allowShapeMismatch = true;
    } else if (arg == "-o") {
      if (i + 1 >= argc) {
        error = "option '-o' needs a file name";
        return false;
      }
      options.output = argv[++i];
    } else if (arg.rfind("-o", 0) == 0 && arg.size() > 2 && arg[2] != '-') {
      options.output = arg.substr(2);
    } else if (takeValue(argc, argv, i, "emit", value, error)) {
      if (value == "tx")
        options.emit = EmitKind::Imported;
      else if (value == "fused")
        options.emit = EmitKind::Fused;
      else {
        error = "unknown --emit value '" + value + "' (expected 'tx' or 'fused')";
        return false;
      }
    } else if (arg == "--tf32") {
      options.allowTF32 = true;
    } else if (arg == "--no-gelu-epilogue") {
      options.noGeluEpilogue = true;
    } else if (arg == "--no-loss-grad-fusion") {
      options.noLossGradFusion = true;
    } else if (arg == "--no-norm-grad-input-fusion") {
      options.noNormGradInputFusion = true;
    } else if (arg == "--no-packed-casts") {
      options.noPackedCasts = true;
    } else if (arg == "--fp8-attention") {
      options.fp8Attention = true;
      options.fp8Flags.push_back(arg);
    } else if (takeValue(argc, argv, i, "gpu-plan", value, error)) {
      options.gpuPlanPath = value;
    } else if (takeValue(argc, argv, i, "gpu-ptx", value, error)) {
      options.gpuPtxPath = value;
    } else if (takeValue(argc, argv, i, "gpu-kernels", value, error)) {
      options.gpuKernelsPath = value;
    } else if (takeValue(argc, argv, i, "input-shape", value, error)) {
      size_t eq = value.rfind('=');
      std::vector<int64_t> dims;
      if (eq == std::string::npos || eq == 0 ||
          !parseDims(value.substr(eq + 1), dims)) {
        error = "bad --input-shape '" + value +
                "' (expected NAME=DIMS with positive dims, e.g. ids=2x32)";
        return false;
      }
      options.inputShapes[value.substr(0, eq)] = dims;
    } else if (arg == "--fuse-attention") {
      options.fuseAttention = true;
    } else if (arg == "--pad-loss-classes") {
      options.padLossClasses = true;
    } else if (arg == "--no-pad-loss-classes") {
      options.padLossClasses = false;
    } else if (takeValue(argc, argv, i, "no-fuse", value, error)) {
      if (!parseNoFuse(value, options, error))
        return false;
    } else if (arg == "--train") {
      options.train = true;
    } else if (parseTrainOption(argc, argv, i, options, error)) {
      if (!error.empty())
        return false;
    } else if (takeValue(argc, argv, i, "precision", value, error)) {
      if (value != "fp32" && value != "bf16" && value != "fp16" &&
          value != "fp8") {
        error = "unknown --precision '" + value +
                "' (expected fp32, bf16, fp16 or fp8)";
        return false;
      }
      options.precision = value;
    } else if (parseFP8Option(argc, argv, i, options, error)) {
      if (!error.empty())
        return false;
    } else if (takeValue(argc, argv, i, "report", value, error)) {
      if (value.empty()) {
        error = "option '--report' needs a file name";
        return false;
      }
      options.reportPath = value;
    } else if (!error.empty()) {
      return false;
    } else if (arg.size() > 1 && arg[0] == '-') {
      error = "unknown option '" + arg + "' (see txopt --help)";
      return false;
    } else if (!options.input.empty()) {
      error = "more than one model given ('" + options.input + "' and '" +
              arg + "')";
      return false;
    } else {
      options.input = arg;
    }
  }
  if (!error.empty())
    return false;
  return checkCombinations(options, error);
}
