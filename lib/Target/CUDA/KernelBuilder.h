//===- KernelBuilder.h - gpu.func bodies for tx kernel groups ---*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// Builds the gpu.func of one kernel of a lowered step. Three shapes of
// kernel cover every tx op the backend supports:
//  - loop kernels: one thread per output element; the element is computed
//    by the *elemental emitter*, which inlines every fused producer (an
//    elementwise, broadcast or data-movement op whose value is not
//    materialized) by recursion on the element's index, XLA-style;
//  - reduction kernels: one block per output element, the reduced elements
//    strided over the block's threads (each computed by the elemental
//    emitter, so producers fuse into the reduction), a warp-shuffle and
//    shared-memory tree to combine them;
//  - row kernels: one block per row for the fused norms, softmax and the
//    cross-entropy loss and gradient, each in a single launch.
// Arithmetic is f32 for f32/bf16/f16 tensors (f64 for f64); a bf16/f16 op
// result is rounded to its type as the reference executor rounds it, so
// fused and unfused code see the same values.
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_LIB_TARGET_CUDA_KERNELBUILDER_H
#define TXOPT_LIB_TARGET_CUDA_KERNELBUILDER_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

#include <functional>

namespace mlir::txopt::cuda {

/// Threads per block of every kernel.
constexpr unsigned kBlockSize = 256;

/// The alignment every kernel's buffer arguments are declared with (the
/// memory plan aligns every buffer to 256 bytes), as the LLVM argument
/// attribute the GPU-to-NVVM lowering forwards.
constexpr int64_t kArgAlign = 16;
inline constexpr llvm::StringLiteral kArgAlignAttr = "llvm.align";

/// Which tensor values live in memory: everything else is recomputed by the
/// elemental emitter inside the kernel that reads it.
/// A tensor read or written in place inside |base|'s buffer: element
/// |offset| and per-dim element |strides| (AttentionLayouts.cpp).
struct StridedView {
  Value base;
  int64_t offset = 0;
  llvm::SmallVector<int64_t, 4> shape, strides;
};

struct Materialization {
  llvm::DenseSet<Value> materialized;
  /// Attention operands and results that live inside another value's
  /// buffer (a head split or merge cuDNN reads/writes through strides).
  llvm::DenseMap<Value, StridedView> attentionViews;
  /// Row-kernel results written straight in the type of the one cast that
  /// reads them (StepLowering's absorbCastsIntoStores): result -> the cast's
  /// result, which is what memory holds. The cast ops are in absorbedCasts.
  llvm::DenseMap<Value, Value> storedAs;
  llvm::DenseSet<Operation *> absorbedCasts;
  bool isMaterialized(Value v) const { return materialized.contains(v); }
};

/// True for the ops the elemental emitter can inline (elementwise,
/// broadcast, data movement, splat constants).
bool isElementalOp(Operation *op);

/// Reshape, squeeze, unsqueeze, identity: the same elements in the same
/// order, so a materialized one is its input's buffer.
bool isViewOp(Operation *op);

/// True for f8E4M3FN and f8E5M2, stored as one byte (an i8 memref) and
/// computed in f32.
bool isFP8(Type type);
/// The FP8 code (i8) of the f32 |value| rounded to |fp8Type| as the
/// executor rounds: to nearest even, saturating, NaN kept (FP8Kernels.cpp).
Value emitFP8Encode(ImplicitLocOpBuilder &b, Value value, Type fp8Type);
/// The codes of |values| (f32), two at a time through sm_89's
/// `cvt.rn.satfinite.{e4m3,e5m2}x2.f32`, each NaN then replaced by the
/// canonical NaN code with its sign (for more than two values, on a branch
/// only values holding a NaN take): the same codes as emitFP8Encode
/// (checked for every f32 on the GPU, scripts/gpu/fp8_convert_check.py).
llvm::SmallVector<Value> emitFP8EncodeHardware(ImplicitLocOpBuilder &b,
                                               llvm::ArrayRef<Value> values, Type fp8Type);
/// The exact f32 value of the FP8 code |code| (i8).
Value emitFP8Decode(ImplicitLocOpBuilder &b, Value code, Type fp8Type);

/// Workgroup memory a kernel may declare statically (CUDA's limit without
/// the opt-in to more dynamic memory).
constexpr int64_t kMaxStaticSharedBytes = 48 * 1024;
/// The most dynamic shared memory any kernel here takes with the opt-in:
/// half of the 228 KiB an SM of sm_90 (and sm_100) holds, less the 1 KiB
/// the driver reserves a block, so two blocks still share an SM. Kernels
/// size to their target within it (RowKernels.cpp, maxSharedBytes: 96 KiB
/// on the other targets from sm_80 on, which sm_86 and sm_89's 99 KiB a
/// block allow; the static 48 KiB before sm_80).
constexpr int64_t kMaxDynamicSharedBytes = 113 * 1024;

/// One kernel under construction.
class KernelBuilder {
public:
  /// Creates `gpu.func @name` in |gpuModule| taking one memref per value of
  /// |outputs| then |inputs| (flat, of the value's storage type), with
  /// |workgroupFloats| elements of workgroup memory (of |workgroupElement|,
  /// f32 when null): a static workgroup buffer up to the 48 KiB a kernel may
  /// declare statically, past that dynamic shared memory (the launch then
  /// passes dynamicSharedBytes() and the runtime opts the kernel in).
  KernelBuilder(gpu::GPUModuleOp gpuModule, llvm::StringRef name,
                llvm::ArrayRef<Value> outputs, llvm::ArrayRef<Value> inputs,
                const Materialization &plan, unsigned workgroupFloats = 0,
                Type workgroupElement = Type());

  /// Collects the materialized values the elemental emission of |root|
  /// reads (|root| itself is computed, not read).
  static void collectInputs(Value root, const Materialization &plan,
                            llvm::SetVector<Value> &inputs);
  /// Whether a kernel computing its operands reads |v| from its buffer
  /// (stored, an argument, or made by a non-elemental op) rather than
  /// computing it: never for a splat constant, an immediate. collectInputs
  /// and emit decide alike, so every value read has a buffer argument.
  static bool readsFromMemory(Value v, const Materialization &plan);
  /// The same for a value |v| a kernel may read from memory or compute:
  /// |v| itself when it is in memory (or a block argument), else what
  /// computing it reads.
  static void collectReadsOf(Value v, const Materialization &plan,
                             llvm::SetVector<Value> &inputs);
  /// Whether |v| is in memory as f32, bf16 or f16 (itself or the value a
  /// recomputed cast of it converts), so a kernel can load it widened.
  static bool isStoredAsFloat(Value v, const Materialization &plan);

  ImplicitLocOpBuilder &builder() { return b; }
  gpu::GPUFuncOp func() { return kernel; }
  /// The kernel's workgroup buffer (static or dynamic), as requested.
  Value workgroupMemory() { return workgroup; }
  /// Bytes of dynamic shared memory the launch must pass (0: none).
  unsigned dynamicSharedBytes() const { return dynamicBytes; }
  /// Threads a block (kBlockSize unless setBlockSize): the stride of
  /// blockStridedLoop, the warps of blockReduce, the launch's block.
  unsigned blockSize() const { return threads; }
  /// Before anything is built: a multiple of 32 up to 1024. A size other
  /// than kBlockSize is also the kernel's known block size (gpu.func
  /// known_block_size, which MLIR's NVVM lowering emits as PTX .maxntid),
  /// so that ptxas keeps the registers a thread within what a block of that
  /// size may have (64 at 1024 threads) instead of the launch failing.
  void setBlockSize(unsigned n);
  /// Blocks of this kernel an SM must be able to hold at once (gpu.func
  /// nvvm.minctasm, PTX .minnctapersm). Also makes the block size (set
  /// before) the kernel's known one, without which ptxas ignores the bound;
  /// with it ptxas keeps a thread's registers within 65536 / (n * blocks).
  void setMinBlocksPerSM(unsigned blocks);

  /// An i64 index into a dim of size |dim| as gathers read it: negative
  /// counts from the end, out of range clamps (token ids are checked
  /// against the table by the runtime before a step).
  Value clampIndex(Value which, int64_t dim);

  // Index helpers (all `index` typed).
  Value idx(int64_t v);
  Value globalThreadIndex();
  Value threadIndex();
  Value blockIndex();
  /// Row-major multi-index of |linear| in |shape|.
  llvm::SmallVector<Value> delinearize(Value linear, llvm::ArrayRef<int64_t> shape);
  Value linearize(llvm::ArrayRef<Value> index, llvm::ArrayRef<int64_t> shape);

  /// The element of |v| at |index| (in |v|'s shape) in compute type: f32
  /// (f64 for f64 tensors), i64 for integers, i1 for booleans.
  Value emit(Value v, llvm::ArrayRef<Value> index);
  /// The element of |v|'s defining op result at |index|, never a load of
  /// |v| itself (for kernel outputs).
  Value emitComputed(Value v, llvm::ArrayRef<Value> index);
  /// emitComputed of |v| at each of |indices|: a group of consecutive
  /// elements along the innermost axis, the first at |column| (a multiple
  /// of the group's size). A concatenation or pad along that axis whose
  /// pieces are whole groups is computed for the whole group at once, under
  /// one branch on |column| (emitGroupPieces), instead of a branch or a
  /// select per element: the loads of a piece are then consecutive, and
  /// LLVM merges them into vector accesses (Llama's rotate-half).
  llvm::SmallVector<Value> emitComputedGroup(Value v,
                                             llvm::ArrayRef<llvm::SmallVector<Value>> indices,
                                             Value column);

  /// Loads / stores the element |linear| of a kernel argument's buffer,
  /// converting between storage and compute type.
  Value load(Value tensor, Value linear);
  /// What holds |v| in memory: |v| itself, or for a cast left out of memory
  /// (recomputed by its users, maybe behind reshapes) the materialized value
  /// it converts, or for a row-kernel result stored as its cast, that cast.
  static Value storageOf(Value v, const Materialization &plan);
  void store(Value tensor, Value linear, Value scalar);
  /// Whether |tensor| can be read (or written) |width| elements at a time
  /// with one vector access of at most 16 bytes: its memory, after recomputed
  /// or stored-as casts, holds f32, bf16 or f16, |width| * element bytes is
  /// at most 16, and an access at a multiple of |width| is then aligned
  /// (buffers start 256-byte aligned).
  bool vectorAccessible(Value tensor, unsigned width);
  /// The |width| elements |linear|, ..., |linear| + width - 1 (|linear| a
  /// multiple of |width|) in compute type, as load() would give them one by
  /// one, through one vector load (`ld.global.v4` for 16 bytes).
  llvm::SmallVector<Value> loadVector(Value tensor, Value linear, unsigned width);
  /// Stores |scalars| (compute type) at |linear|, ... as store() would, with
  /// one vector store.
  void storeVector(Value tensor, Value linear, llvm::ArrayRef<Value> scalars);
  /// A value as memory holds it (|element|) to compute type, and back: the
  /// conversions every load and store makes, scalar or vector (and the
  /// packed kernels' loads through their offset tables).
  Value fromStorage(Value raw, Type element);
  Value toStorage(Value scalar, Type element);
  /// Atomic f32 add into |tensor| (an f32 output).
  void atomicAdd(Value tensor, Value linear, Value scalar);

  /// Compute type of an element type.
  Type computeType(Type elementType);
  /// |scalar| (compute type) rounded to |elementType| as the executor rounds.
  Value roundTo(Value scalar, Type elementType);
  Value f32(double v);
  Value castScalar(Value scalar, Type fromElement, Type toElement);
  /// 2^x for an f32 |x| by ex2.approx.ftz: one MUFU instruction, within
  /// 2^-22 relative for normal results; results below 2^-126 flush to 0.
  Value fastExp2(Value x);
  /// e^x for an f32 |x| <= 0 (or -inf, or NaN) as fastExp2(x log2 e): a
  /// multiply and an ex2 where libdevice's expf takes about eleven
  /// instructions. The product's rounding adds |x| 2^-24 relative (1e-6 at
  /// x = -16, where the value is 1e-7). Only for arguments that are never
  /// above 0 (nothing overflows), where the callers say why.
  Value fastExpOfNonPositive(Value x);

  /// Block-wide reduction of an f32 |value| (add or max); every thread gets
  /// the result. Needs workgroupFloats >= 32.
  Value blockReduce(Value value, bool isMax);
  /// blockReduce of several values at once (at most 4), through one pair of
  /// barriers: each total's bits are those of its own blockReduce.
  llvm::SmallVector<Value> blockReduce(llvm::ArrayRef<Value> values, bool isMax);
  /// The same over the 32 lanes of a warp (butterfly shuffles, no barrier
  /// or shared memory); every lane gets the result.
  Value warpReduce(Value value, bool isMax);

  /// `for (j = threadIdx; j < count; j += blockDim)` with f32 accumulators,
  /// unrolled by 4 (loop's |unroll|).
  llvm::SmallVector<Value>
  blockStridedLoop(int64_t count, llvm::ArrayRef<Value> init,
                   llvm::function_ref<llvm::SmallVector<Value>(
                       Value j, llvm::ArrayRef<Value> acc)> body);

  /// `for (j = begin + threadIdx; j < end; j += blockDim)`.
  llvm::SmallVector<Value>
  blockStridedLoop(Value begin, Value end, llvm::ArrayRef<Value> init,
                   llvm::function_ref<llvm::SmallVector<Value>(
                       Value j, llvm::ArrayRef<Value> acc)> body);

  /// One thread's own loop: lower, lower + step, ... < end, carrying |init|.
  /// With |unroll| > 1 the body is emitted |unroll| times per iteration of
  /// a main loop (then a remainder loop): more loads in flight per thread,
  /// the carried values combined in the same order.
  llvm::SmallVector<Value> loop(
      Value lower, Value end, Value step, llvm::ArrayRef<Value> init,
      llvm::function_ref<llvm::SmallVector<Value>(Value, llvm::ArrayRef<Value>)> body,
      unsigned unroll = 1);
  /// `if (cond) { body }` without results.
  void ifThen(Value cond, llvm::function_ref<void()> body);
  /// `if (cond) { thenBody } else { elseBody }` without results.
  void ifThenElse(Value cond, llvm::function_ref<void()> thenBody,
                  llvm::function_ref<void()> elseBody);

  void finish();
  /// Sets the alignment that each load and store index proves (finish
  /// calls it; see KernelBuilder.cpp).
  void annotateAlignment();
  /// Reorders each block of the finished kernel so that a thread's memory
  /// accesses sit together: float math sinks to its first reader, each
  /// store moves down to the next op that touches memory, and each load
  /// moves up as far as its indices and the last memory write or barrier
  /// allow. LLVM's load/store vectorizer then merges consecutive accesses
  /// (it does not across long math such as an erf, or across a store to
  /// another buffer), and all loads are in flight before the math starts.
  /// For loop kernels and column reductions.
  void groupMemoryAccesses();

  /// Adds a raw buffer argument (not a tensor value) at |position| of the
  /// kernel's arguments (before the workgroup attributions).
  Value insertBufferArgument(unsigned position, MemRefType type);
  unsigned numArguments() { return kernel.getFunctionType().getNumInputs(); }

  /// Emission errors (an op the emitter cannot inline) are reported here.
  LogicalResult status() const { return failed ? failure() : success(); }

private:
  /// The element of result |resultNumber| of |op| (an elemental op) at
  /// |index|: dispatches to one of the families below.
  Value emitOp(Operation *op, unsigned resultNumber, Type elementType,
               llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<Value> index);
  Value emitArithmetic(Operation *op, unsigned resultNumber, Type elementType,
                       llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<Value> index);
  Value emitBinaryArithmetic(Operation *op, Type elementType,
                             llvm::ArrayRef<Value> index);
  Value emitMath(Operation *op, Type elementType, llvm::ArrayRef<Value> index);
  Value emitConcat(Operation *op, Type elementType, llvm::ArrayRef<int64_t> shape,
                   llvm::ArrayRef<Value> index);
  Value emitCumSum(Operation *op, Type elementType, llvm::ArrayRef<int64_t> shape,
                   llvm::ArrayRef<Value> index);
  Value emitDataMovement(Operation *op, unsigned resultNumber, Type elementType,
                         llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<Value> index);
  Value emitIndexed(Operation *op, unsigned resultNumber, Type elementType,
                    llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<Value> index);
  Value emitDropout(Operation *op, unsigned resultNumber, Type elementType,
                    llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<Value> index);
  Value emitOperand(Operation *op, unsigned i, llvm::ArrayRef<Value> index);
  Value emitFailure(Operation *op, const llvm::Twine &why, Type elementType);
  Value bufferOf(Value tensor);
  void pushScope();
  void popScope();

  ImplicitLocOpBuilder b;
  gpu::GPUFuncOp kernel;
  Value workgroup;
  unsigned dynamicBytes = 0;
  unsigned threads = kBlockSize;
  const Materialization &plan;
  /// Inputs that are casts recomputed on load (through views), by the
  /// value in memory they convert.
  llvm::DenseMap<Value, Value> castSources;
  /// Outputs stored in the type of the cast that reads them.
  llvm::DenseMap<Value, Value> storedAs;
  llvm::DenseMap<Value, Value> buffers;
  std::vector<llvm::DenseMap<Operation *, llvm::SmallVector<std::pair<llvm::SmallVector<Value>, Value>>>> scopes;
  /// While emitComputedGroup emits a group: its innermost index values in
  /// order, and the first one's column.
  struct InnermostGroup {
    llvm::SmallVector<Value> positions;
    Value column;
  };
  std::optional<InnermostGroup> innermostGroup;
  /// A reshape's view of a group (reshapedGroup): the input's index
  /// outside its innermost axis and the input's group, made once for the
  /// group and reused by each element, kept per scope as computed values
  /// are (they are only defined inside it).
  struct ReshapedGroup {
    Operation *reshape;
    Value column;                      ///< the outer group's
    llvm::SmallVector<Value> outer;    ///< the output index but its innermost
    llvm::SmallVector<Value> inOuter;  ///< the input index but its innermost
    InnermostGroup inner;
  };
  std::vector<std::vector<ReshapedGroup>> reshapedGroups{1};
  /// For element |index| of the group being emitted, read through the
  /// reshape |op|: the input's index and group when the group stays in one
  /// row of the input's innermost axis (its length a multiple of the
  /// group's size). None otherwise.
  std::optional<std::pair<llvm::SmallVector<Value>, InnermostGroup>>
  reshapedGroup(Operation *op, llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<Value> index);
  /// Emits, for the group being emitted, the concatenations, pads and
  /// slice gradients of |root| reached through same-shaped arithmetic and
  /// reshapes first (|root| itself too if |withRoot|), at element |index|:
  /// their branches then come before the group's other accesses.
  void emitGroupPiecesFirst(Value root, llvm::ArrayRef<Value> index, bool withRoot);
  /// The element at |index| of |op|, a concatenation or pad along the
  /// innermost axis made of |pieces| ([begin, end) along it): when |index|
  /// is an element of the group being emitted and every piece boundary a
  /// multiple of its size, the whole group's values, computed by
  /// |emitPiece| in a branch per piece on the group's column, the other
  /// elements' kept for their turn. Null otherwise.
  Value emitGroupPieces(Operation *op, llvm::ArrayRef<Value> index, Type elementType,
                        llvm::ArrayRef<std::pair<int64_t, int64_t>> pieces,
                        llvm::function_ref<Value(size_t, llvm::ArrayRef<Value>)> emitPiece);
  /// A constant pad's fill value, rounded to |elementType|, in compute type.
  Value padFill(Operation *pad, Type elementType);
  bool failed = false;
};

} // namespace mlir::txopt::cuda

#endif // TXOPT_LIB_TARGET_CUDA_KERNELBUILDER_H
