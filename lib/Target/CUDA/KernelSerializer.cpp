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
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

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
  llvm::SmallString<128> ptxFile, cubinFile;
  int fd;
  if (llvm::sys::fs::createTemporaryFile("txopt-kernels", "ptx", fd, ptxFile) ||
      llvm::sys::fs::createTemporaryFile("txopt-kernels", "cubin", cubinFile)) {
    error = "cannot create a temporary file for ptxas";
    return failure();
  }
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << images.ptx;
  }
  std::string arch = "-arch=" + program.target;
  llvm::SmallVector<llvm::StringRef> args{images.ptxasPath, arch, "-O3",
                                          ptxFile, "-o", cubinFile};
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(images.ptxasPath, args, std::nullopt, {},
                                     /*SecondsToWait=*/300, 0, &message);
  if (rc != 0) {
    error = "ptxas rejected the generated PTX (exit " + std::to_string(rc) +
            (message.empty() ? "" : ": " + message) + "); PTX kept at " +
            ptxFile.str().str();
    llvm::sys::fs::remove(cubinFile);
    return failure();
  }
  auto cubin = llvm::MemoryBuffer::getFile(cubinFile, /*IsText=*/false);
  if (!cubin) {
    error = "cannot read the cubin ptxas wrote";
    return failure();
  }
  images.cubin = (*cubin)->getBuffer().str();
  llvm::sys::fs::remove(ptxFile);
  llvm::sys::fs::remove(cubinFile);
  return success();
}
