//===- KernelSerializer.cpp - gpu.module -> PTX -> cubin ------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// Runs MLIR's own GPU path in process (convert-gpu-to-nvvm, NVVM target,
// gpu-module-to-binary in PTX form; libdevice linked for math), then, when
// the CUDA toolkit's ptxas is present, assembles a cubin for the target so
// the runtime needs no JIT. No GPU is needed for either step.
//
// Both steps handle one module's kernels one after another, and together
// they are most of a compile (GPT-2-124M on one core: LLVM's NVPTX back
// end 1.3 s, ptxas 1.7 s of ~4.3 s). So the kernels are dealt into parts,
// one per core, and each part goes through both in its own thread with its
// own MLIR context (parsed from the part's bytecode, so nothing is shared
// but LLVM's target registry, initialized first).
//
//===----------------------------------------------------------------------===//

#include "txopt/Target/CUDA/StepProgram.h"

#include "mlir/Bytecode/BytecodeWriter.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Pipelines/Passes.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "llvm/ADT/StringSet.h"
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

/// Parts compiled at once: the cores, or TXOPT_KERNEL_JOBS when set (a
/// build machine running several compiles at once), at most kMaxParts.
constexpr unsigned kMaxParts = 4;
static unsigned kernelJobs() {
  if (std::optional<std::string> jobs = llvm::sys::Process::GetEnv("TXOPT_KERNEL_JOBS")) {
    unsigned n = 0;
    if (!llvm::StringRef(*jobs).getAsInteger(10, n) && n > 0)
      return std::min(n, kMaxParts);
  }
  return std::clamp(std::thread::hardware_concurrency(), 1u, kMaxParts);
}

/// Deals |gpuModule|'s kernels into |parts| lists of about equal size (ops,
/// what both back ends' time grows with): largest first, each to the
/// lightest part. Names only: the parts are cut from copies.
static std::vector<std::vector<std::string>> dealKernels(gpu::GPUModuleOp gpuModule,
                                                         unsigned parts) {
  std::vector<std::pair<std::string, size_t>> kernels;
  for (auto func : gpuModule.getOps<gpu::GPUFuncOp>()) {
    size_t ops = 0;
    func.walk([&](Operation *) { ++ops; });
    kernels.push_back({func.getName().str(), ops});
  }
  parts = std::max(1u, std::min(parts, static_cast<unsigned>(kernels.size())));
  std::stable_sort(kernels.begin(), kernels.end(),
                   [](const auto &a, const auto &b) { return a.second > b.second; });
  std::vector<std::vector<std::string>> dealt(parts);
  std::vector<size_t> load(parts, 0);
  for (const auto &[name, ops] : kernels) {
    size_t lightest = std::min_element(load.begin(), load.end()) - load.begin();
    load[lightest] += ops;
    dealt[lightest].push_back(name);
  }
  return dealt;
}

/// The kernels module with only |names| kept in its gpu.module, as bytecode.
static std::string cutPart(ModuleOp kernels, const std::vector<std::string> &names) {
  OwningOpRef<ModuleOp> copy(cast<ModuleOp>(kernels->clone()));
  llvm::StringSet<> keep;
  for (const std::string &name : names)
    keep.insert(name);
  copy->walk([&](gpu::GPUFuncOp func) {
    if (!keep.contains(func.getName()))
      func.erase();
  });
  std::string bytes;
  llvm::raw_string_ostream os(bytes);
  if (failed(writeBytecodeToFile(*copy, os)))
    return "";
  return bytes;
}

/// ptxas on |ptx| into |cubin|.
static LogicalResult assemble(const std::string &ptxas, const std::string &target,
                              const std::string &ptx, std::string &cubin,
                              std::string &error) {
  llvm::SmallString<128> ptxFile, cubinFile;
  int fd;
  if (llvm::sys::fs::createTemporaryFile("txopt-kernels", "ptx", fd, ptxFile) ||
      llvm::sys::fs::createTemporaryFile("txopt-kernels", "cubin", cubinFile)) {
    error = "cannot create a temporary file for ptxas";
    return failure();
  }
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << ptx;
  }
  std::string arch = "-arch=" + target;
  llvm::SmallVector<llvm::StringRef> args{ptxas, arch, "-O3", ptxFile, "-o", cubinFile};
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(ptxas, args, std::nullopt, {},
                                     /*SecondsToWait=*/300, 0, &message);
  if (rc != 0) {
    error = "ptxas rejected the generated PTX (exit " + std::to_string(rc) +
            (message.empty() ? "" : ": " + message) + "); PTX kept at " +
            ptxFile.str().str();
    llvm::sys::fs::remove(cubinFile);
    return failure();
  }
  auto file = llvm::MemoryBuffer::getFile(cubinFile, /*IsText=*/false);
  llvm::sys::fs::remove(ptxFile);
  llvm::sys::fs::remove(cubinFile);
  if (!file) {
    error = "cannot read the cubin ptxas wrote";
    return failure();
  }
  cubin = (*file)->getBuffer().str();
  return success();
}

/// What every part's context knows: the dialects, the to-LLVM conversion
/// interfaces of arith, cf, math, memref and friends (as mlir-opt registers
/// them), the NVVM target and the LLVM IR translations.
static DialectRegistry kernelRegistry() {
  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  registerBuiltinDialectTranslation(registry);
  registerGPUDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
  return registry;
}

/// One part: parsed into a context of its own (|registry| only read, from
/// every part's thread), lowered to PTX, assembled.
static LogicalResult compilePart(const DialectRegistry &registry, const std::string &bytecode,
                                 const std::string &target, const std::string &ptxas,
                                 const std::string &toolkit, cuda::KernelImages::Part &part,
                                 std::string &error) {
  MLIRContext context(registry, MLIRContext::Threading::DISABLED);
  std::string diagnostics;
  llvm::raw_string_ostream os(diagnostics);
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
    os << d.str() << "; ";
    return success();
  });
  ParserConfig config(&context);
  OwningOpRef<ModuleOp> lowered = parseSourceString<ModuleOp>(bytecode, config);
  if (!lowered) {
    error = "reading a part of the kernels back failed: " + diagnostics;
    return failure();
  }
  PassManager pm(&context);
  gpu::GPUToNVVMPipelineOptions options;
  options.cubinChip = target;
  options.cubinFeatures = "+ptx80";
  options.cubinFormat = "isa";
  options.kernelUseBarePtrCallConv = true;
  options.optLevel = 3;
  gpu::buildLowerToNVVMPassPipeline(pm, options);
  if (failed(pm.run(*lowered))) {
    error = "lowering the kernels to PTX failed: " + diagnostics;
    return failure();
  }
  lowered->walk([&](gpu::BinaryOp binary) {
    for (Attribute object : binary.getObjects())
      if (auto obj = dyn_cast<gpu::ObjectAttr>(object))
        part.ptx = obj.getObject().str();
  });
  if (part.ptx.empty()) {
    error = "lowering the kernels produced no PTX";
    return failure();
  }
  if (llvm::StringRef(part.ptx).contains(".extern .func __nv_")) {
    error = "the PTX calls libdevice functions that were not linked (toolkit "
            "at '" + toolkit + "')";
    return failure();
  }
  if (ptxas.empty())
    return success();
  return assemble(ptxas, target, part.ptx, part.cubin, error);
}

std::string cuda::KernelImages::allPtx() const {
  std::string all;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (parts.size() > 1)
      all += "// kernel part " + std::to_string(i + 1) + " of " +
             std::to_string(parts.size()) + "\n";
    all += parts[i].ptx;
  }
  return all;
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
  images.ptxasPath = findPtxas();

  ModuleOp module = program.kernels.get();
  auto gpuModules = module.getOps<gpu::GPUModuleOp>();
  if (gpuModules.empty()) {
    error = "the step has no kernel module";
    return failure();
  }
  std::vector<std::vector<std::string>> dealt =
      dealKernels(*gpuModules.begin(), kernelJobs());
  size_t parts = dealt.size();
  std::vector<std::string> bytecode(parts);
  for (size_t p = 0; p < parts; ++p) {
    bytecode[p] = cutPart(module, dealt[p]);
    if (bytecode[p].empty()) {
      error = "writing a part of the kernels as bytecode failed";
      return failure();
    }
  }
  images.parts.assign(parts, {});
  std::vector<std::string> errors(parts);
  const DialectRegistry registry = kernelRegistry();
  auto run = [&](size_t p) {
    images.parts[p].entries = dealt[p];
    (void)compilePart(registry, bytecode[p], program.target, images.ptxasPath, toolkit,
                      images.parts[p], errors[p]);
  };
  std::vector<std::thread> threads;
  for (size_t p = 1; p < parts; ++p)
    threads.emplace_back(run, p);
  run(0);
  for (std::thread &t : threads)
    t.join();
  for (const std::string &e : errors)
    if (!e.empty()) {
      error = e;
      images.parts.clear();
      return failure();
    }
  return success();
}
