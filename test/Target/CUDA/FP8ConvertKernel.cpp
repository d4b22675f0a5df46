//===- FP8ConvertKernel.cpp - the hardware FP8 encode against the integer one ===//
//
// SPDX-License-Identifier: Apache-2.0
// `txopt-fp8-convert-kernel OUT.ptx` writes one kernel, built with the GPU
// backend's own emitters, that encodes every f32 bit pattern to E4M3 and
// E5M2 twice: with the integer code of FP8Convert.h (emitFP8Encode, checked
// against the reference executor by txopt-fp8-convert-test) and with
// sm_89's cvt.rn.satfinite instructions plus the NaN fix-up
// (emitFP8EncodeHardware, what the amax kernels use). It counts the
// patterns whose codes differ. scripts/gpu/fp8_convert_check.py runs it on
// the GPU over all 2^32 patterns; zero mismatches makes the hardware path
// bit-identical to the executor.
//
// Kernel `fp8_encode_compare(counts)`: thread g encodes the 16 patterns
// [16 g, 16 g + 16); counts[0] / counts[1] count E4M3 / E5M2 mismatches,
// counts[2] / counts[3] keep the last mismatching pattern of each.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "txopt/Target/CUDA/StepProgram.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/MLIRContext.h"

#include <cstdio>
#include <fstream>

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::cuda;

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: txopt-fp8-convert-kernel OUT.ptx\n");
    return 2;
  }
  MLIRContext context;
  context.loadDialect<gpu::GPUDialect, arith::ArithDialect, math::MathDialect,
                      vector::VectorDialect, NVVM::NVVMDialect, memref::MemRefDialect,
                      scf::SCFDialect>();
  StepProgram program;
  program.target = "sm_90";
  Location loc = UnknownLoc::get(&context);
  OpBuilder builder(&context);
  program.kernels = ModuleOp::create(loc);
  program.kernels.get()->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                                 builder.getUnitAttr());
  builder.setInsertionPointToEnd(program.kernels->getBody());
  auto gpuModule = gpu::GPUModuleOp::create(builder, loc, "kernels");

  Materialization plan;
  KernelBuilder kb(gpuModule, "fp8_encode_compare", {}, {}, plan);
  auto &b = kb.builder();
  Value counts = kb.insertBufferArgument(0, MemRefType::get({4}, b.getI32Type()));
  Value thread = kb.globalThreadIndex();
  Value first = arith::IndexCastOp::create(
      b, b.getI32Type(), arith::MulIOp::create(b, thread, kb.idx(16)));
  llvm::SmallVector<Value> bits, values;
  for (int e = 0; e < 16; ++e) {
    bits.push_back(arith::AddIOp::create(b, first, arith::ConstantIntOp::create(b, e, 32)));
    values.push_back(arith::BitcastOp::create(b, b.getF32Type(), bits.back()));
  }
  Type formats[2] = {Float8E4M3FNType::get(&context), Float8E5M2Type::get(&context)};
  for (int f = 0; f < 2; ++f) {
    llvm::SmallVector<Value> hardware = emitFP8EncodeHardware(b, values, formats[f]);
    for (int e = 0; e < 16; ++e) {
      Value integer = emitFP8Encode(b, values[e], formats[f]);
      Value differ = arith::CmpIOp::create(b, arith::CmpIPredicate::ne, integer, hardware[e]);
      kb.ifThen(differ, [&] {
        memref::AtomicRMWOp::create(b, arith::AtomicRMWKind::addi,
                                    arith::ConstantIntOp::create(b, 1, 32), counts,
                                    ValueRange{kb.idx(f)});
        memref::StoreOp::create(b, bits[e], counts, ValueRange{kb.idx(2 + f)});
      });
    }
  }
  kb.finish();
  if (failed(kb.status())) {
    std::fprintf(stderr, "txopt-fp8-convert-kernel: building the kernel failed\n");
    return 1;
  }
  KernelImages images;
  std::string error;
  if (failed(compileKernels(program, images, error))) {
    std::fprintf(stderr, "txopt-fp8-convert-kernel: %s\n", error.c_str());
    return 1;
  }
  // One kernel: one part, one PTX module (the check loads it whole).
  std::string ptx = images.allPtx();
  std::ofstream out(argv[1], std::ios::binary);
  out << ptx;
  if (!out) {
    std::fprintf(stderr, "txopt-fp8-convert-kernel: cannot write '%s'\n", argv[1]);
    return 1;
  }
  std::printf("wrote %s: fp8_encode_compare, %zu bytes of PTX\n", argv[1], ptx.size());
  return 0;
}
