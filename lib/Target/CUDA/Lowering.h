//===- Lowering.h - shared state of the step lowering ----------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// The state StepLowering.cpp (analysis, GEMMs, bindings, memory plan) and
// the kernel builders (one file per op family: *Kernels.cpp) share while a
// step is lowered.
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_LIB_TARGET_CUDA_LOWERING_H
#define TXOPT_LIB_TARGET_CUDA_LOWERING_H

#include "KernelBuilder.h"

#include "txopt/Dialect/Tx/IR/TxOps.h"
#include "txopt/Target/CUDA/StepProgram.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <optional>

namespace mlir::txopt::cuda {


/// A tensor's place in the arena before offsets are planned.
struct Buffer {
  uint64_t bytes = 0;
  int firstCommand = -1;   ///< first command that touches it
  int lastCommand = -1;    ///< last command that touches it
  bool persistent = false; ///< arguments and constants: never reused
  /// Holds an empty tensor (a step over zero rows): nothing in it is ever
  /// read, though |bytes| keeps the smallest slot.
  bool empty = false;
  std::string what;        ///< for the plan listing
  /// A part of another buffer, |offsetInWhole| bytes into it (the amaxes
  /// packed for one memset: packAmaxes); the plan places the whole.
  int partOf = -1;
  uint64_t offsetInWhole = 0;
};

/// The buffers one command reads and writes (CommandUses[i] is
/// program.commands[i]'s), for checkCommandDataflow; a launch's packed
/// buffers are its LaunchCmd::through.
struct CommandUses {
  llvm::SmallVector<unsigned, 4> reads, writes;
};

struct LoweringContext {
  StepProgram &program;
  /// Per command, what it reads and writes (the helpers below fill it).
  std::vector<CommandUses> commandUses;
  gpu::GPUModuleOp gpuModule;
  Materialization plan;
  llvm::DenseMap<Value, unsigned> bufferOfValue;
  std::vector<Buffer> buffers;
  const GPUOptions &options;
  /// Kernels already emitted, by their body: layers repeat, and so do their
  /// kernels; each distinct one is compiled and shipped once.
  llvm::StringMap<unsigned> kernelByBody;
  unsigned builtKernels = 0;
  /// Ops already computed inside another op's kernel (a tx.quantize fused
  /// into the tx.amax kernel of the same input); the step loop skips them.
  llvm::DenseSet<Operation *> loweredElsewhere;
  /// Recomputed values (tx-rematerialize) that a column sum's kernel can
  /// write as it walks the same inputs, by the sum's op
  /// (scheduleRecomputesIntoColumnSums).
  llvm::DenseMap<Operation *, Value> recomputedBySum;
  /// Norms whose kernel computes and stores their input (the residual
  /// add before them), and norm gradients whose kernel computes their dy
  /// (the sum of partial input gradients), by op (computeNormInputsInNorms).
  llvm::DenseMap<Operation *, Value> normComputedInputs;
  /// FP8 GEMM operands already written transposed ([..., N, K], the layout
  /// cuBLASLt's FP8 GEMM reads B in), by the buffer holding them.
  llvm::DenseMap<Value, unsigned> fp8Transposed;
  /// Each row's max and sum of exp(x - max) of a cross-entropy's scores
  /// (f32 pairs), written by the loss kernel so the gradient kernel of the
  /// same scores reads them instead of two more passes over the logits.
  llvm::DenseMap<Value, unsigned> rowLogSumExp;
  /// Matmul results whose GEMM adds into their buffer (beta = 1): a
  /// micro-step's gradient GEMM writing straight into its accumulator.
  llvm::DenseSet<Value> accumulatingGemms;
  /// Tables of i64 words filled in after the memory plan: the words listed
  /// in `offsetOf` become the byte offset of a buffer from the table's own
  /// start, so one kernel can reach many tensors through one argument (the
  /// packed optimizer, the FP8 scale update's amaxes). Uploaded as constants.
  struct OffsetTable {
    unsigned buffer = 0;
    std::vector<int64_t> words;
    std::vector<std::pair<size_t, unsigned>> offsetOf; ///< word -> buffer
  };
  std::vector<OffsetTable> offsetTables;
  /// Roots of add trees summing the squares of many tensors (the global
  /// gradient norm), by root op: the tensors, lowered as one packed kernel.
  llvm::DenseMap<Operation *, llvm::SmallVector<Value>> packedSumsOfSquares;
  /// packParameterCasts: by the first cast, every cast the packed launch
  /// writes (the others are lowered elsewhere).
  llvm::DenseMap<Operation *, llvm::SmallVector<Operation *>> packedParameterCasts;
  /// By root: the tree's other leaves, whole-tensor sums that are lowered
  /// as they are (a square of a gradient not in memory) and that the final
  /// block adds, in this order, after the packed partials.
  llvm::DenseMap<Operation *, llvm::SmallVector<Value>> packedSumExtras;
  /// Of those, the sums whose tensors are exactly the gradients tx.adam ops
  /// read (no clipping reads the sum first): by root, those Adam ops, whose
  /// packed kernels add up the squares on their way (planSumsOfSquaresInAdam).
  llvm::DenseMap<Operation *, llvm::SmallVector<Operation *, 2>> sumsInAdam;
  /// By root: the partial sums written so far, one buffer of |blocks| f32
  /// per launch, which the root's final block adds up in this order.
  struct SumStage {
    unsigned partials = 0;
    int64_t blocks = 0;
  };
  llvm::DenseMap<Operation *, llvm::SmallVector<SumStage>> sumStages;
  /// Ops lowered right after another op instead of in block order: such a
  /// sum and its readers, after the last of its Adam ops.
  llvm::DenseMap<Operation *, Operation *> deferredAfter;
  /// Column-sum second stages waiting for their first reader
  /// (deferColumnSums, PackedKernels.cpp), and their outputs.
  struct DeferredColumnSum {
    Operation *origin = nullptr;
    unsigned partials = 0;
    int64_t parts = 0, cols = 0, split = 0;
    Value out0, out1;
  };
  std::vector<DeferredColumnSum> deferredColumnSums;
  llvm::DenseSet<Value> deferredOutputs;
  /// Delayed-scaling updates whose results only the step returns, put off
  /// to the end of the step (flushFP8ScaleUpdates, FP8Kernels.cpp).
  std::vector<Operation *> deferredScaleUpdates;
  /// The next step's FP8 weight codes (tx-cache-fp8-weights) placed in
  /// their state arguments' slots (castCachedWeightsInPlace): whole
  /// buffers, which the quantizing kernel may write in any layout.
  llvm::DenseSet<Value> cachedWeightCodes;
  /// Updated weights (a tx.adam parameter result) whose next-step codes
  /// and amax the packed Adam kernel writes on its way (planAdamWritingCodes):
  /// the amax op and its fused quantize.
  llvm::DenseMap<Value, std::pair<Operation *, Operation *>> adamWritesCodes;
  /// tx.amax ops whose tiled kernel also sums columns for a tx.reduce_sum
  /// (planColumnSumsInAmax): amax -> the sum, and the value the kernel
  /// adds up (the sum's input, or the stored narrow tensor it widens).
  struct ColumnSumInAmax {
    Operation *sum = nullptr;
    Value summed;
  };
  llvm::DenseMap<Operation *, ColumnSumInAmax> columnSumInAmax;
  /// Packed FP8 scale inverses spread for the GEMMs (gemmScaleSlot): by
  /// packed state value, the block whose 256-byte parts hold its entries
  /// and the part its site 0 is in (the states spread by one launch share
  /// a block), and by (state, site) the part a GEMM reads.
  struct SpreadScales {
    unsigned block = 0;
    int64_t firstPart = 0;
  };
  llvm::DenseMap<Value, SpreadScales> spreadScaleBlocks;
  llvm::DenseMap<std::pair<Value, int64_t>, unsigned> spreadScaleParts;
  /// The block each packed tx.amax result is a part of (packAmaxes), and
  /// the blocks already zeroed by their one memset.
  llvm::DenseMap<Value, unsigned> amaxBlockOf;
  llvm::DenseSet<unsigned> zeroedAmaxBlocks;

  LoweringContext(StepProgram &program, gpu::GPUModuleOp gpuModule,
                  const GPUOptions &options)
      : program(program), gpuModule(gpuModule), options(options) {}

  /// The target's compute capability XY of "sm_XY" (0 if unparsable): what
  /// the kernels may use (FP8 conversions, dynamic shared memory).
  unsigned targetSM() const;
  /// The buffer holding |v| (created on first request).
  unsigned bufferFor(Value v);
  /// A scratch buffer private to one op's kernels.
  unsigned scratch(uint64_t bytes, llvm::StringRef what);
  /// A buffer of |bytes| inside |whole|, |offset| bytes in.
  unsigned part(unsigned whole, uint64_t offset, uint64_t bytes, llvm::StringRef what);
  /// A persistent buffer for |table| (its buffer field is set), written
  /// once the memory plan is known (resolveOffsetTables).
  unsigned offsetTable(OffsetTable table, llvm::StringRef what);
  /// Fills every offset table's words from the plan and adds its upload.
  void resolveOffsetTables();
  /// A fresh kernel name: k<N>_<op mnemonic>.
  std::string kernelName(Operation *op);

  /// Appends a launch of |kernel| (built with outputs then inputs in the
  /// order of |outputs| and |inputs|) and records the buffers' uses.
  void launch(KernelBuilder &kernel, Operation *origin, unsigned gridX,
              llvm::ArrayRef<unsigned> outputs, llvm::ArrayRef<unsigned> inputs);
  void memset(unsigned buffer, uint32_t value, Operation *origin);
  /// Appends a GEMM. An empty one (ONNX allows empty tensors: a step over
  /// zero rows) becomes what it computes: nothing where D has no element,
  /// zeros (a memset of D, and of the GELU's pre-activation) where the
  /// inner dimension is empty, nothing where it then accumulates (beta 1).
  /// An empty inner dimension with a bias, or another beta, fails with
  /// an error on |origin|.
  LogicalResult gemm(GemmCmd gemm, Operation *origin);
  void copy(unsigned dst, unsigned src, uint64_t bytes, llvm::StringRef origin,
            uint64_t srcRankStride = 0);
  void attention(AttentionCmd cmd, Operation *origin);
  void collective(CollectiveCmd cmd, Operation *origin);
  void touch(unsigned buffer);
  /// Appends |command| with what it reads and writes: first the joins of
  /// the asynchronous groups it touches, then its buffers made live at it.
  /// Every helper above goes through it.
  void append(Command command, CommandUses uses);
  /// Records that the last command writes |buffer|, which it was given as
  /// an input (an argument order the kernel fixes): for the dataflow check.
  void markWrittenByLastCommand(unsigned buffer);

  /// Asynchronous collective groups (bucketed gradient reduce-scatters,
  /// CollectiveLowering.cpp) not joined yet: each group's id and the root
  /// buffers its collectives read and write. A command about to touch one
  /// of those first gets a JoinCmd (awaitCollectivesTouching), which also
  /// keeps the group's buffers live up to it, so that the memory plan puts
  /// nothing else there while the collectives may still run.
  struct PendingGroup {
    unsigned id = 0;
    int64_t bucket = -1;
    llvm::SmallVector<unsigned, 8> buffers;
  };
  std::vector<PendingGroup> pendingGroups;
  unsigned asyncGroups = 0; ///< groups started so far (ids 1..asyncGroups)
  /// The root buffer |buffer| is a part of (itself when whole).
  unsigned rootOf(unsigned buffer) const;
  /// Joins every pending group up to the last one touching |buffers|.
  void awaitCollectivesTouching(llvm::ArrayRef<unsigned> buffers);
  /// Joins every pending group (where a function returns).
  void joinAllCollectives();

  /// Buffers of a list of values.
  llvm::SmallVector<unsigned> buffersOf(llvm::ArrayRef<Value> values);
};

/// "'tx.add' at 'node name'" for command origins and messages.
std::string describeOrigin(Operation *op);

/// Moves each column sum (a bias gradient) that reads everything one of
/// |recomputed| (tx-rematerialize's copies for the backward) is computed
/// from, with the pure ops it depends on, to just before the op computing that value,
/// when all of it can go there; records the pairs in |pairs| for
/// lowerColumnReduction, which writes the value in the sum's kernel
/// (RecomputeScheduling.cpp).
void scheduleRecomputesIntoColumnSums(func::FuncOp func, llvm::ArrayRef<Value> recomputed,
                                      llvm::DenseMap<Operation *, Value> &pairs);

/// The kernel grouping (Grouping.cpp): fills |plan| with the values of
/// |step| that live in memory; |fusedOps| counts the ops computed inside
/// their readers' kernels.
void decideMaterialization(func::FuncOp step, Materialization &plan, unsigned &fusedOps);
/// A gradient tx.adam reads as |tensor| (in memory) times or divided by
/// |scale| (a scalar the kernel loads or computes), applied as the kernel
/// loads the tensor and never stored (Grouping.cpp says when). Empty when
/// |op| is not one.
struct ScaledGradient {
  Value tensor, scale;
  bool divide = false;
  explicit operator bool() const { return static_cast<bool>(tensor); }
};
ScaledGradient scaledGradient(Operation *op, const Materialization &plan);
/// reduce_sum / reduce_mean / reduce_max.
bool isReduction(Operation *op);
/// A reduce_sum over every axis but the last (a bias gradient's shape).
bool sumsLeadingAxes(tx::ReduceSumOp sum);
/// Before |func| is lowered (FP8Kernels.cpp): its tx.amax results, when
/// there are two or more, each become a part of one block that a single
/// memset zeroes before the first amax kernel (not one memset per amax:
/// 142 in GPT-2's fp8 step). A returned amax, or one whose buffer is
/// already decided, keeps a buffer and a memset of its own.
void packAmaxes(LoweringContext &ctx, func::FuncOp func);

/// GEMMs in normal form (tx.blas_gemm, tx-gemm-normal-form; GemmLowering.cpp):
/// one cuBLASLt call each (a row-vector C with beta 1 as cuBLASLt's bias,
/// any other C first broadcast into the output by a loop kernel). FP8 ones
/// are lowerFP8Gemm's.
LogicalResult lowerBlasGemm(LoweringContext &ctx, tx::BlasGemmOp op);
/// tx.blas_gemm_gelu as one cuBLASLt GEMM with the GELU_AUX(_BIAS) epilogue.
LogicalResult lowerBlasGemmGelu(LoweringContext &ctx, tx::BlasGemmGeluOp op);

/// The slot of |op|'s `c` when cuBLASLt's epilogue can add it as a bias to
/// the GEMM |g| describes: a row vector over the columns, beta 1, one
/// (unbatched) matrix, 16-byte aligned; std::nullopt otherwise.
std::optional<unsigned> epilogueBiasSlot(LoweringContext &ctx, tx::BlasGemmOp op,
                                         const GemmCmd &g);

/// Emits the kernel(s) of |op|: a materialized elemental value, a
/// reduction, a fused norm/softmax/loss, an optimizer or a scatter.
/// GEMMs and data layout are StepLowering.cpp's.
LogicalResult lowerElementalValue(LoweringContext &ctx, Value value);
LogicalResult lowerReduction(LoweringContext &ctx, Operation *op);
LogicalResult lowerNorm(LoweringContext &ctx, Operation *op);
/// Marks each norm whose kernel computes its input (the elemental op right
/// before it, whose kernel then goes), and each norm gradient whose kernel
/// computes its dy: after the grouping, before lowering.
void computeNormInputsInNorms(LoweringContext &ctx, func::FuncOp func);
LogicalResult lowerNormGrad(LoweringContext &ctx, Operation *op);
LogicalResult lowerSoftmax(LoweringContext &ctx, Operation *op);
LogicalResult lowerCrossEntropy(LoweringContext &ctx, Operation *op);
LogicalResult lowerCrossEntropyGrad(LoweringContext &ctx, Operation *op);
LogicalResult lowerGatherGrad(LoweringContext &ctx, Operation *op);
LogicalResult lowerOptimizer(LoweringContext &ctx, Operation *op);

/// Packed kernels (PackedKernels.cpp). packSumsOfSquares runs after the
/// grouping: it finds add trees of `reduce_sum(mul(x, x))` over whole
/// tensors in memory (the global norm), marks their ops lowered elsewhere
/// and their root materialized; lowerPackedSumOfSquares then writes the
/// root with one partial-sum launch per storage type and one final block.
/// A leaf that is another whole-tensor reduce_sum (the square of a value
/// its readers recompute) keeps its own kernels; the final block adds it.
void packSumsOfSquares(LoweringContext &ctx, func::FuncOp func);
/// The forward's casts of f32 parameters to bf16/f16 (a bf16 step's weight
/// casts, one small launch each: 61 in GPT-2) as one packed launch, where
/// the first of them was: the parameters hold their values from the step's
/// start until the optimizer, so every cast may run at the first.
void packParameterCasts(LoweringContext &ctx, func::FuncOp step);
LogicalResult lowerPackedParameterCasts(LoweringContext &ctx, Operation *first);
LogicalResult lowerPackedSumOfSquares(LoweringContext &ctx, Operation *root);
/// The partial-sum launches of |root|'s sum over |tensors| (a subset of its
/// tensors), appended to ctx.sumStages[root].
LogicalResult lowerSumOfSquaresStages(LoweringContext &ctx, Operation *root,
                                      llvm::ArrayRef<Value> tensors);
/// Marks the packed sums whose tensors are all gradients that tx.adam ops
/// read as they are (ctx.sumsInAdam): without clipping, the gradient norm
/// is only reported, so the Adam kernels, which read every gradient anyway,
/// add up the squares, and the sum and its readers are lowered after them
/// (ctx.deferredAfter). Saves a full pass over the gradients.
void planSumsOfSquaresInAdam(LoweringContext &ctx, func::FuncOp step);

/// Fused attention (AttentionLowering.cpp): one cuDNN SDPA call each, its
/// mask already in cuDNN's bias form (tx-attention-bias).
/// Attention tensors as strided views (AttentionLayouts.cpp), once
/// tx-attention-casts has moved the casts off the head split and merge.
/// findAttentionInputViews, in the grouping, records the attention inputs
/// that are views of a value in memory (plan.attentionViews), marks those
/// values materialized and returns the layout ops nobody needs to compute.
/// placeAttentionResults, after it, records the results the attention call
/// writes straight into their reader's buffer and skips that reader.
void findAttentionInputViews(func::FuncOp step, Materialization &plan,
                             llvm::DenseSet<Operation *> &viewOps);
void placeAttentionResults(LoweringContext &ctx, func::FuncOp step);
LogicalResult lowerAttention(LoweringContext &ctx, Operation *op);
LogicalResult lowerAttentionGrad(LoweringContext &ctx, Operation *op);
/// The 16-byte aligned slot a library call (cuBLASLt, cuDNN) reads the f32
/// scale |scale| from: a site of packed FP8 state is read through a spread
/// copy (FP8Kernels.cpp), anything else from its own buffer.
FailureOr<unsigned> librarySiteSlot(LoweringContext &ctx, Operation *origin, Value scale);
/// tx.fp8_attention(_grad): cuDNN's FP8 flash attention (AttentionLowering.cpp).
LogicalResult lowerFP8Attention(LoweringContext &ctx, Operation *op);
LogicalResult lowerFP8AttentionGrad(LoweringContext &ctx, Operation *op);
/// Checks that every command of the planned program reads bytes its
/// buffer was the last to write since its function began (|functionBegins|:
/// the first command of each function, in order), or persistent ones;
/// an internal error on |anchor| otherwise (DataflowCheck.cpp).
LogicalResult checkCommandDataflow(const LoweringContext &ctx,
                                   llvm::ArrayRef<size_t> functionBegins,
                                   Operation *anchor);

/// tx.all_reduce / reduce_scatter / all_gather / rank_shard
/// (CollectiveLowering.cpp).
LogicalResult lowerCollective(LoweringContext &ctx, Operation *op);

/// FP8 (FP8Kernels.cpp): tx.amax (with a tx.quantize of the same input
/// fused in when the scale is known before it), a materialized tx.quantize
/// on its own, the delayed and current scale updates, and an FP8
/// tx.blas_gemm as a cuBLASLt FP8 GEMM.
LogicalResult lowerAmax(LoweringContext &ctx, Operation *op);
LogicalResult lowerQuantize(LoweringContext &ctx, Operation *op);
/// A tiled byte transpose for an FP8 transpose of codes in memory; false
/// when it does not apply.
FailureOr<bool> lowerFP8Transpose(LoweringContext &ctx, Operation *op);
LogicalResult lowerFP8ScaleUpdate(LoweringContext &ctx, Operation *op);
/// The scale updates lowerFP8ScaleUpdate held back, as one packed launch
/// per recipe and FP8 type; called where the step returns.
/// The held-back scale updates as packed launches: all of them at the end
/// of the function, or, |before| a reader of one's new scale, those whose
/// old state nothing from |before| on reads.
LogicalResult flushFP8ScaleUpdates(LoweringContext &ctx, Operation *before = nullptr);
/// FP8 weight caching: for each cached weight whose next codes and amax
/// come from the optimizer's in-place result through a cast, lets the
/// packed Adam kernel write the plain codes and the amax as it updates the
/// weight (ctx.adamWritesCodes): the separate cast, which read the f32
/// weight again, goes; the transposed codes are a tiled byte transpose.
void planAdamWritingCodes(LoweringContext &ctx, func::FuncOp step);
/// A bias gradient `reduce_sum(v)` over every axis but the last, where v
/// (or its cast) is what a tiled amax kernel quantizes: that kernel also
/// adds up each tile's columns of v into per-tile partial rows, and the
/// column sums' second stage adds them (Transformer Engine's
/// cast-transpose-dbias). One full read of v less per bias gradient.
void planColumnSumsInAmax(LoweringContext &ctx, func::FuncOp step);
/// Whether |op| (or the quantize its amax kernel computes) reads the new
/// scale of a held-back scale update.
bool readsDeferredScaleUpdates(LoweringContext &ctx, Operation &op);
LogicalResult lowerFP8CurrentScale(LoweringContext &ctx, Operation *op);
LogicalResult lowerFP8Gemm(LoweringContext &ctx, tx::BlasGemmOp op);

} // namespace mlir::txopt::cuda

#endif // TXOPT_LIB_TARGET_CUDA_LOWERING_H
