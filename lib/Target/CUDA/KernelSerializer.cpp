//===- KernelSerializer.cpp - gpu.module -> PTX -> cubin ------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// Runs MLIR's own GPU path in process (convert-gpu-to-nvvm, NVVM target,
// gpu-module-to-binary in PTX form; libdevice linked for math), then, when
// the CUDA toolkit's ptxas is present, assembles a cubin for the target so
// the runtime needs no JIT. No GPU is needed for either step.
//
//===----------------------------------------------------------------------===//

#include "txopt/Target/CUDA/StepProgram.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Pipelines/Passes.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdlib>
#include <thread>

using namespace mlir;
using namespace mlir::txopt;

/// NVPTX contracts a*b+c into fma by default and may approximate sqrt; the reference executor rounds
/// every operation, so the kernels must too (the optimizer's update is then
/// bit-identical to the CPU's). Set once, before the first lowering.
static void disableFMAContraction() {
  static bool done = [] {
    auto &options = llvm::cl::getRegisteredOptions();
    auto set = [&](llvm::StringRef name, llvm::StringRef value) {
      auto it = options.find(name);
      if (it != options.end())
        it->second->addOccurrence(0, name, value);
    };
    set("nvptx-fma-level", "0");
    // Correctly rounded f32 sqrt and division, as the executor computes them.
    // (libdevice's __nv_sqrtf picks its variant through __nvvm_reflect.)
    set("nvptx-prec-sqrtf32", "1");
    set("nvptx-prec-divf32", "2");
    set("nvvm-reflect-add", "__CUDA_PREC_SQRT=1");
    return true;
  }();
  (void)done;
}

/// The CUDA toolkit folder holding libdevice (nvvm/libdevice/libdevice.10.bc),
/// which the kernels' math (exp, tanh, erf, pow, ...) links against: from
/// CUDA_ROOT, CUDA_HOME or CUDA_PATH as MLIR's NVVM target reads them, else
/// /usr/local/cuda. Empty if none has it.
static std::string findCudaToolkit() {
  for (const char *var : {"CUDA_ROOT", "CUDA_HOME", "CUDA_PATH"})
    if (const char *dir = std::getenv(var))
      if (llvm::sys::fs::exists(std::string(dir) + "/nvvm/libdevice/libdevice.10.bc"))
        return dir;
  if (llvm::sys::fs::exists("/usr/local/cuda/nvvm/libdevice/libdevice.10.bc"))
    return "/usr/local/cuda";
  return "";
}

/// ptxas from $CUDA_HOME, /usr/local/cuda or the PATH; empty if none.
static std::string findPtxas() {
  llvm::SmallVector<std::string> candidates;
  if (const char *home = std::getenv("CUDA_HOME"))
    candidates.push_back(std::string(home) + "/bin/ptxas");
  candidates.push_back("/usr/local/cuda/bin/ptxas");
  for (const std::string &c : candidates)
    if (llvm::sys::fs::can_execute(c))
      return c;
  if (auto found = llvm::sys::findProgramByName("ptxas"))
    return *found;
  return "";
}

/// The PTX's kernels in order, each with the size of its text (what
/// ptxas's time grows with).
static std::vector<std::pair<std::string, size_t>> entriesOf(llvm::StringRef ptx) {
  std::vector<std::pair<std::string, size_t>> entries;
  size_t previous = llvm::StringRef::npos;
  for (size_t at = ptx.find(".entry "); at != llvm::StringRef::npos;
       at = ptx.find(".entry ", at + 1)) {
    size_t nameBegin = at + 7;
    size_t nameEnd = ptx.find_first_of("( \n", nameBegin);
    if (nameEnd == llvm::StringRef::npos)
      break;
    if (previous != llvm::StringRef::npos)
      entries.back().second = at - previous;
    entries.push_back({ptx.slice(nameBegin, nameEnd).str(), 0});
    previous = at;
  }
  if (!entries.empty())
    entries.back().second = ptx.size() - previous;
  return entries;
}

/// Parts to assemble in parallel: one per core, at most kMaxPtxasParts.
/// ptxas assembles a module's kernels one after another, and it is the
/// largest share of a compile (GPT-2-124M: 1.7 of ~4 s on one core).
constexpr unsigned kMaxPtxasParts = 4;

/// ptxas runs at once: the cores, or TXOPT_PTXAS_JOBS when set (a build
/// farm that runs several compiles at once).
static unsigned ptxasJobs() {
  if (std::optional<std::string> jobs = llvm::sys::Process::GetEnv("TXOPT_PTXAS_JOBS")) {
    unsigned n = 0;
    if (!llvm::StringRef(*jobs).getAsInteger(10, n) && n > 0)
      return n;
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

/// Assembles |images.ptx| into cubins with ptxas: the kernels are dealt
/// into parts of about equal PTX size (largest first, each to the lightest
/// part), and one ptxas per part (`--entry` its kernels) runs at once.
static LogicalResult assembleCubins(cuda::KernelImages &images, const std::string &target,
                                    std::string &error) {
  std::vector<std::pair<std::string, size_t>> entries = entriesOf(images.ptx);
  unsigned parts = std::max(1u, std::min({ptxasJobs(), kMaxPtxasParts,
                                          static_cast<unsigned>(entries.size())}));
  images.cubins.assign(parts, {});
  std::vector<size_t> load(parts, 0);
  std::vector<size_t> order(entries.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return entries[a].second > entries[b].second;
  });
  for (size_t i : order) {
    size_t lightest = std::min_element(load.begin(), load.end()) - load.begin();
    load[lightest] += entries[i].second;
    images.cubins[lightest].entries.push_back(entries[i].first);
  }

  llvm::SmallString<128> ptxFile;
  int fd;
  if (llvm::sys::fs::createTemporaryFile("txopt-kernels", "ptx", fd, ptxFile)) {
    error = "cannot create a temporary file for ptxas";
    return failure();
  }
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << images.ptx;
  }
  struct Run {
    llvm::SmallString<128> cubinFile;
    std::string entryList;
    llvm::sys::ProcessInfo process;
  };
  std::vector<Run> runs(parts);
  std::string arch = "-arch=" + target;
  bool failedToStart = false;
  for (unsigned p = 0; p < parts; ++p) {
    Run &run = runs[p];
    if (llvm::sys::fs::createTemporaryFile("txopt-kernels", "cubin", run.cubinFile)) {
      error = "cannot create a temporary file for ptxas";
      failedToStart = true;
      break;
    }
    run.entryList = llvm::join(images.cubins[p].entries, ",");
    llvm::SmallVector<llvm::StringRef> args{images.ptxasPath, arch, "-O3"};
    if (parts > 1)
      args.append({"--entry", run.entryList});
    args.append({ptxFile, "-o", run.cubinFile});
    std::string message;
    bool startFailed = false;
    run.process = llvm::sys::ExecuteNoWait(images.ptxasPath, args, std::nullopt, {}, 0,
                                           &message, &startFailed);
    if (startFailed) {
      error = "cannot run ptxas: " + message;
      failedToStart = true;
      break;
    }
  }
  // Every started ptxas is waited for, whatever happened to the others.
  std::string firstFailure;
  for (Run &run : runs) {
    if (run.process.Pid == llvm::sys::ProcessInfo::InvalidPid)
      continue;
    std::string message;
    llvm::sys::ProcessInfo done =
        llvm::sys::Wait(run.process, /*SecondsToWait=*/300, &message);
    if (done.ReturnCode != 0 && firstFailure.empty())
      firstFailure = "ptxas rejected the generated PTX (exit " +
                     std::to_string(done.ReturnCode) +
                     (message.empty() ? "" : ": " + message) + "); PTX kept at " +
                     ptxFile.str().str();
  }
  auto cleanUp = [&](bool keepPtx) {
    for (Run &run : runs)
      if (!run.cubinFile.empty())
        llvm::sys::fs::remove(run.cubinFile);
    if (!keepPtx)
      llvm::sys::fs::remove(ptxFile);
  };
  if (failedToStart || !firstFailure.empty()) {
    if (error.empty())
      error = firstFailure;
    cleanUp(/*keepPtx=*/!firstFailure.empty());
    images.cubins.clear();
    return failure();
  }
  for (unsigned p = 0; p < parts; ++p) {
    auto cubin = llvm::MemoryBuffer::getFile(runs[p].cubinFile, /*IsText=*/false);
    if (!cubin) {
      error = "cannot read the cubin ptxas wrote";
      cleanUp(/*keepPtx=*/false);
      images.cubins.clear();
      return failure();
    }
    images.cubins[p].data = (*cubin)->getBuffer().str();
  }
  cleanUp(/*keepPtx=*/false);
  return success();
}

LogicalResult cuda::compileKernels(StepProgram &program, KernelImages &images,
                                   std::string &error) {
  disableFMAContraction();
  LLVMInitializeNVPTXTargetInfo();
  LLVMInitializeNVPTXTarget();
  LLVMInitializeNVPTXTargetMC();
  LLVMInitializeNVPTXAsmPrinter();

  // MLIR's NVVM target finds libdevice through these variables; point them
  // at the toolkit found, or refuse: PTX with unresolved math calls would
  // fail only when the GPU loads it.
  std::string toolkit = findCudaToolkit();
  if (toolkit.empty()) {
    error = "libdevice (the CUDA toolkit's nvvm/libdevice/libdevice.10.bc) "
            "was not found in $CUDA_HOME or /usr/local/cuda; the kernels' math "
            "functions need it";
    return failure();
  }
  ::setenv("CUDA_ROOT", toolkit.c_str(), /*overwrite=*/1);

  ModuleOp module = program.kernels.get();
  MLIRContext *context = module.getContext();
  DialectRegistry registry;
  // The to-LLVM conversion interfaces of arith, cf, math, memref and
  // friends, as mlir-opt registers them.
  registerAllExtensions(registry);
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  registerBuiltinDialectTranslation(registry);
  registerGPUDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
  context->appendDialectRegistry(registry);
  context->loadAllAvailableDialects();

  // Lower a copy: the program keeps the readable kernels for --emit.
  OwningOpRef<ModuleOp> lowered(cast<ModuleOp>(module->clone()));
  PassManager pm(context);
  gpu::GPUToNVVMPipelineOptions options;
  options.cubinChip = program.target;
  options.cubinFeatures = "+ptx80";
  options.cubinFormat = "isa";
  options.kernelUseBarePtrCallConv = true;
  options.optLevel = 3;
  gpu::buildLowerToNVVMPassPipeline(pm, options);
  std::string diagnostics;
  {
    llvm::raw_string_ostream os(diagnostics);
    ScopedDiagnosticHandler handler(context, [&](Diagnostic &d) {
      os << d.str() << "; ";
      return success();
    });
    if (failed(pm.run(*lowered))) {
      error = "lowering the kernels to PTX failed: " + diagnostics;
      return failure();
    }
  }
  images.ptx.clear();
  lowered->walk([&](gpu::BinaryOp binary) {
    for (Attribute object : binary.getObjects())
      if (auto obj = dyn_cast<gpu::ObjectAttr>(object))
        images.ptx = obj.getObject().str();
  });
  if (images.ptx.empty()) {
    error = "lowering the kernels produced no PTX";
    return failure();
  }

  if (llvm::StringRef(images.ptx).contains(".extern .func __nv_")) {
    error = "the PTX calls libdevice functions that were not linked (toolkit "
            "at '" + toolkit + "')";
    return failure();
  }

  images.ptxasPath = findPtxas();
  if (images.ptxasPath.empty())
    return success();
  return assembleCubins(images, program.target, error);
}
