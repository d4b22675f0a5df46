//===- StepProgram.h - a training step lowered for the GPU ------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// What the GPU backend makes of one tx training step before it is written as
// step.txa: a gpu.module of kernels, a memory plan over one arena, and the
// command list (launches, cuBLASLt GEMMs, memsets, copies) that runs it.
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_TARGET_CUDA_STEPPROGRAM_H
#define TXOPT_TARGET_CUDA_STEPPROGRAM_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <array>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace mlir::txopt::cuda {

/// Storage types of arena tensors, with the artifact's numbering.
enum class DType : uint8_t {
  F32 = 0, F16 = 1, BF16 = 2, F8E4M3FN = 3, F8E5M2 = 4,
  F64 = 5, I64 = 6, I32 = 7, I8 = 8, I1 = 9
};
/// Bytes per element in the arena (i1 is stored as one byte).
unsigned dtypeBytes(DType type);
const char *dtypeName(DType type);
/// The arena type of |type|, or std::nullopt for types the backend lacks.
std::optional<DType> dtypeOf(Type type);

/// A byte range of the arena; `offset` is 256-byte aligned (4-byte for a
/// 4-byte part of packed state).
/// Every slot's offset in the arena is a multiple of this (the artifact's
/// contract: txrt's kSlotAlignment), but for 4-byte parts of packed state
/// (tx.fp8_site), which sit at their own 4-byte offsets (txrt's
/// kScalarSlotBytes).
constexpr uint64_t kSlotAlignment = 256;

struct Slot {
  uint64_t offset = 0;
  uint64_t bytes = 0;
};

struct LaunchCmd {
  unsigned kernel;             ///< index into StepProgram::kernelNames
  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
  /// Dynamic shared memory (a kernel whose workgroup buffer is past the
  /// 48 KiB of static shared memory); 0: none.
  unsigned sharedBytes = 0;
  std::vector<unsigned> args;  ///< slot per kernel argument
  /// Slots the kernel reaches through an offset table argument (the
  /// packed optimizer), for the plan listing.
  std::vector<unsigned> through;
};

/// cuBLASLt GEMM in column-major terms (see runtime/include/txrt/artifact.fbs).
struct GemmCmd {
  uint64_t m = 0, n = 0, k = 0, batch = 1;
  bool transA = false, transB = false;
  uint64_t lda = 0, ldb = 0, ldd = 0;
  int64_t strideA = 0, strideB = 0, strideD = 0;
  DType aType = DType::F32, bType = DType::F32, dType = DType::F32;
  bool allowTF32 = false;
  float alpha = 1.0f, beta = 0.0f;
  unsigned a = 0, b = 0, d = 0;
  /// FP8: slots of f32 scalars (-1: none). aScale/bScale multiply the
  /// products (the operands' scale_inv); dScale and dAmax are for FP8 D.
  int aScale = -1, bScale = -1, dScale = -1, dAmax = -1;
  /// FP8: the tensor cores' fast accumulator (tx.blas_gemm's
  /// fast_accumulation), else split accumulation (promoted to f32).
  bool fastAccumulation = false;
  /// A row vector of D's type added to every row (cuBLASLt's BIAS
  /// epilogue: a tx.blas_gemm's row-vector c, tx-gemm-bias); -1: none.
  int bias = -1;
  /// cuBLASLt's GELU epilogue (tx.blas_gemm_gelu): D is the tanh GELU of
  /// the sum.
  bool gelu = false;
  /// With gelu: the slot the sum (bias included, D's type, leading
  /// dimension ldd) goes to, for the backward (GELU_AUX); -1 where nothing
  /// reads it (an evaluation function: the GELU epilogue alone).
  int geluAux = -1;
};

struct MemsetCmd {
  unsigned slot;
  uint32_t value;
};

struct CopyCmd {
  unsigned dst, src;
  uint64_t bytes;
  /// Bytes added to src's address per rank (tx.rank_shard: rank r copies
  /// its own shard); 0: the same bytes on every rank.
  uint64_t srcRankStride = 0;
};

/// A collective over the step's data-parallel ranks (tx.all_reduce,
/// tx.reduce_scatter, tx.all_gather; NCCL at run time). Each rank sends
/// `sendCount` elements from `src` and receives `recvCount` into `dst`.
struct CollectiveCmd {
  enum class Kind : uint8_t { AllReduce = 0, ReduceScatter = 1, AllGather = 2 };
  enum class Reduction : uint8_t { Sum = 0, Max = 1, Mean = 2 };
  Kind kind = Kind::AllReduce;
  Reduction reduction = Reduction::Sum;
  DType dtype = DType::F32;
  uint64_t sendCount = 0, recvCount = 0;
  unsigned src = 0, dst = 0;
  /// 0: runs in order with the other commands. k > 0: one of the
  /// consecutive collectives of asynchronous group k (a bucket of gradient
  /// reduce-scatters), which the runtime may run on a communication stream
  /// beside the commands after it, until a JoinCmd of group >= k.
  unsigned asyncGroup = 0;
};

/// The commands after this one wait for the asynchronous collective
/// groups 1..group (their buffers are written, read and reused only after).
struct JoinCmd {
  unsigned group = 0;
};

/// A [B, H, T, D] tensor of an attention call: a slot read with element
/// strides, so views (a head split by reshape + transpose) need no copy.
struct AttentionTensor {
  unsigned slot = 0;
  int64_t offset = 0; ///< in elements, from the slot's start
  int64_t dims[4] = {0, 0, 0, 0};
  int64_t strides[4] = {0, 0, 0, 0};
};

/// The f32 scalars of an FP8 attention call, in the order of the artifact's
/// AttentionScalar (artifact.fbs): the forward uses DescaleQ..AmaxO, the
/// backward DescaleQ..ScaleS and DescaleO..AmaxDP.
enum class AttentionScalar : unsigned {
  DescaleQ, DescaleK, DescaleV, DescaleS, ScaleS, ScaleO, AmaxS, AmaxO,
  DescaleO, DescaleDO, DescaleDP, ScaleDQ, ScaleDK, ScaleDV, ScaleDP,
  AmaxDQ, AmaxDK, AmaxDV, AmaxDP
};
constexpr unsigned kNumAttentionScalars = 19;
/// A slot index that names no slot (an FP8 attention scalar not used).
constexpr unsigned kNoSlot = 0xffffffffu;

/// The scalars the call writes (amaxes); it reads the others (scales and
/// scale inverses).
constexpr bool isAttentionAmax(AttentionScalar which) {
  return which == AttentionScalar::AmaxS || which == AttentionScalar::AmaxO ||
         which >= AttentionScalar::AmaxDQ;
}

/// One fused attention call (cuDNN's SDPA at run time; see
/// runtime/include/txrt/artifact.fbs): tx.attention, or tx.attention_grad
/// when `backward`. q/k/v/o in `dtype` (bf16 or f16); lse f32 [B, H, Tq];
/// the mask, when present, an additive bias of `dtype`, [B|1, H|1, Tq, Tk].
struct AttentionCmd {
  bool backward = false;
  DType dtype = DType::BF16;
  float scale = 1.0f;
  bool causal = false;
  int64_t window = 0; ///< 0: none
  AttentionTensor q, k, v, o;
  unsigned lse = 0;
  std::optional<AttentionTensor> mask;
  AttentionTensor gradO, gradQ, gradK, gradV; ///< backward only
  /// Dropout of the probabilities (ratio 0: none): the runtime's library
  /// draws the mask from the step's key (an i64 in slot |dropoutKey|) and
  /// the site's Philox offset (an i64 constant in slot |dropoutOffset|,
  /// from the site's seed); forward and backward of one site draw the same.
  float dropoutRatio = 0.0f;
  unsigned dropoutKey = 0;
  unsigned dropoutOffset = 0;
  int64_t dropoutSeed = 0; ///< the IR's seed, for --gpu-plan
  /// FP8 attention (tx.fp8_attention / tx.fp8_attention_grad): |dtype| is
  /// q's FP8 type (k, v, o and the quantized probabilities), |gradType| that
  /// of dO, the gradients and the quantized dS. |fp8Scalars| holds the slot
  /// of each f32 scale, scale inverse or amax, indexed by AttentionScalar
  /// (kNoSlot where the direction has none).
  bool fp8 = false;
  DType gradType = DType::F8E5M2;
  std::array<unsigned, kNumAttentionScalars> fp8Scalars;
  AttentionCmd() { fp8Scalars.fill(kNoSlot); }
};

struct Command {
  std::variant<LaunchCmd, GemmCmd, MemsetCmd, CopyCmd, AttentionCmd, CollectiveCmd, JoinCmd>
      op;
  std::string origin; ///< the op and ONNX node it came from
};

/// How a step argument gets its first value.
struct ArgumentBinding {
  std::string name, role;
  unsigned slot = 0;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  enum class Init { Zeros, Splat, Inline, External, Batch } init = Init::Zeros;
  double splat = 0.0;
  DType sourceType = DType::F32;
  std::vector<uint8_t> data;     ///< Inline bytes, of sourceType
  std::string path;              ///< External
  uint64_t offset = 0, length = 0;
  int64_t indexBound = 0;        ///< Batch integers: values in [0, bound)
  int nextOf = -1;               ///< result that becomes this argument
  /// Packed FP8 scaling state: the cast site of each row (tx.fp8_sites),
  /// which checkpoints record and resume compares.
  std::vector<std::string> fp8Sites;
  /// Data parallel: the whole tensor's shape when this argument is the
  /// rank's shard of it (tx.shard_of); empty otherwise.
  std::vector<int64_t> shardOf;
};

struct ResultBinding {
  std::string name;
  unsigned slot = 0;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  int next = -1;
};

struct ConstantUpload {
  unsigned slot;
  std::vector<uint8_t> data;
};

/// Figures the report and the summary print.
struct StepStatistics {
  unsigned launches = 0, gemms = 0, memsets = 0, copies = 0;
  unsigned fp8Gemms = 0;      ///< of the gemms, those with FP8 operands
  unsigned attentions = 0;    ///< fused attention calls, forward + backward
  unsigned fp8Attentions = 0; ///< of them in FP8 (cuDNN's sdpa_fp8)
  unsigned collectives = 0;   ///< data-parallel collectives (NCCL calls)
  /// Of those, the ones run beside the backward, in how many groups.
  unsigned asyncCollectives = 0, asyncGroups = 0;
  /// Bytes of the B·H·Tq·Tk scores and probabilities the unfused
  /// attention would have written (forward and backward, before reuse).
  uint64_t attentionScoreBytesAvoided = 0;
  unsigned fusedOps = 0;      ///< tx ops computed inside another op's kernel
  /// Stored forward values recomputed for the backward (tx-rematerialize)
  /// and their bytes, which no longer stay alive in between.
  unsigned rematerializedValues = 0;
  uint64_t rematerializedBytes = 0;
  /// Bias adds the step's GEMMs do in cuBLASLt's epilogue (tx-gemm-bias,
  /// and tx-gemm-gelu's with a bias).
  unsigned biasEpilogues = 0;
  /// GELUs the step's GEMMs compute in cuBLASLt's epilogue (tx-gemm-gelu).
  unsigned geluEpilogues = 0;
  uint64_t argumentBytes = 0; ///< parameters, state and batch
  uint64_t scratchBytes = 0;  ///< the planned arena minus the arguments
  uint64_t unplannedBytes = 0; ///< every value in its own buffer, for comparison
  /// Where the temporaries peak (planMemory): the command with the most
  /// temporary bytes live, those bytes (before fragmentation: the planned
  /// scratch is at least this), and the largest buffers live there, for
  /// the plan listing: what to shrink to lower the step's memory.
  struct PeakBuffer {
    unsigned slot = 0;
    uint64_t bytes = 0;
    int first = -1, last = -1; ///< commands that write and last read it
    std::string what;
  };
  int peakCommand = -1;
  uint64_t peakLiveBytes = 0;
  std::string peakOrigin;
  std::vector<PeakBuffer> peakBuffers;
  /// Model FLOPs of one optimizer step (its micro-steps included): every
  /// GEMM's 2·m·n·k·batch, and per fused attention 4·B·H·Tq·Tk·D forward
  /// and twice that backward, halved when causal (the work the model
  /// needs, not what a kernel recomputes); elementwise work not counted.
  /// txrun divides it by the step time for TFLOP/s and MFU.
  double modelFlops = 0;
};

/// A function beside the step over the same arena and arguments (gradient
/// accumulation's micro-step, validation's @eval): its own commands and
/// results; a result's `next` names a step argument.
struct FunctionProgram {
  std::string name;
  std::vector<Command> commands;
  std::vector<ResultBinding> results;
};

struct StepProgram {
  std::string target = "sm_90";
  OwningOpRef<ModuleOp> kernels;      ///< gpu.module @kernels inside
  std::vector<std::string> kernelNames;
  std::vector<Slot> slots;
  uint64_t arenaBytes = 0;
  std::vector<Command> commands;
  std::vector<ArgumentBinding> arguments;
  std::vector<ResultBinding> results;
  std::vector<ConstantUpload> constants;
  std::string recipe;                 ///< tx.train_step as JSON
  std::string weightsDir;             ///< where External paths start
  StepStatistics stats;
  /// Gradient accumulation: micro-batches per step, and the micro-step
  /// the driver runs gradAccum - 1 times before each step.
  int64_t gradAccum = 1;
  std::optional<FunctionProgram> microStep;
  /// Validation (txopt --eval): the loss of the batch in the arguments
  /// under the current parameters, forward only; changes no argument.
  std::optional<FunctionProgram> evaluation;
  /// Sampling (txopt --eval, a cross-entropy loss): the scores of the batch
  /// in the arguments, one row per token; changes no argument.
  std::optional<FunctionProgram> logits;
  /// FP8 weight caching (tx.state_init): run once before the first step;
  /// its results with `next` are the first values of those arguments.
  std::optional<FunctionProgram> stateInit;
  /// For --gpu-plan only: what an FP8 attention's scalar slot copies, a
  /// packed state's entry ("fp8.e4m3.scale_inv[2]"), by slot.
  std::map<unsigned, std::string> scalarSources;
  /// Data parallelism (tx.train_step's data_parallel): the rank count the
  /// collectives are compiled for; 0: a plain step.
  int64_t ranks = 0;

  /// A readable listing of slots and commands (`txopt --emit=gpu-plan`).
  void print(llvm::raw_ostream &os) const;
};

struct GPUOptions {
  std::string target = "sm_90";
  bool allowTF32 = false;
  /// tx-gemm-gelu: tanh GELUs of bf16/f16 GEMMs in cuBLASLt's epilogue
  /// (--no-gelu-epilogue turns it off, to measure what it gains).
  bool geluEpilogue = true;
  /// The cross-entropy loss's kernel writes the gradient too, where the
  /// loss gradient is known before the loss (RowKernels.cpp,
  /// gradientComputedByLoss; --no-loss-grad-fusion turns it off).
  bool lossGradientFusion = true;
  /// A norm gradient's kernel computes its dy, and a residual epilogue's r,
  /// when no kernel needs them stored (RowKernels.cpp,
  /// normGradInputComputedByNormGrad, residualEpilogue;
  /// --no-norm-grad-input-fusion turns it off).
  bool normGradInputFusion = true;
  /// The forward's parameter casts to bf16/f16 in one packed launch
  /// (PackedKernels.cpp, packParameterCasts; --no-packed-casts turns it off).
  bool packParameterCasts = true;
};

/// Lowers the step function |step| of |module| (the output of the training
/// pipeline) to kernels, a memory plan and a command list. Errors are
/// reported as diagnostics on the op at fault.
LogicalResult lowerStepForGPU(ModuleOp module, func::FuncOp step,
                              const GPUOptions &options, StepProgram &program);

/// Compiled kernel images of a program: PTX always, a cubin when ptxas was
/// found (CUDA toolkit), so the artifact loads without the driver's JIT.
struct KernelImages {
  /// The kernels are compiled in parts, in parallel (each part its own
  /// module through NVVM and ptxas): each part's kernels, its PTX and its
  /// cubin (empty when no ptxas).
  struct Part {
    std::vector<std::string> entries;
    std::string ptx;
    std::string cubin;
  };
  std::vector<Part> parts;
  std::string ptxasPath;       ///< the ptxas used, or empty
  bool hasCubins() const { return !parts.empty() && !parts.front().cubin.empty(); }
  /// Every part's PTX, one module after another (--gpu-ptx).
  std::string allPtx() const;
};

/// Lowers |program|'s gpu.module through NVVM to PTX for its target (in
/// process, no GPU needed) and assembles cubins with ptxas when available:
/// in parts, one per core (at most 4; TXOPT_KERNEL_JOBS overrides), each in
/// a thread with its own MLIR context.
LogicalResult compileKernels(StepProgram &program, KernelImages &images,
                             std::string &error);

/// The same step compiled for another rank count, already serialized by
/// writeArtifact (txopt --data-parallel=2,4,8).
struct RankVariantBytes {
  int64_t ranks = 0;
  std::vector<uint8_t> bytes;
};

/// Serializes |program| and |images| as a step.txa artifact; |variants|,
/// when any, become its Artifact.rank_variants (the program is then the
/// step for its own rank count, the smallest).
LogicalResult writeArtifact(const StepProgram &program,
                            const KernelImages &images,
                            std::vector<uint8_t> &bytes, std::string &error,
                            llvm::ArrayRef<RankVariantBytes> variants = {});

} // namespace mlir::txopt::cuda

#endif // TXOPT_TARGET_CUDA_STEPPROGRAM_H
