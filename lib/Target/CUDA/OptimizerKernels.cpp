//===- OptimizerKernels.cpp - adam and sgd updates --------------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// tx.adam: the tensors of one op (an optimizer group) in one packed launch;
// tx.sgd: one loop kernel per parameter tensor. Each line of the executor's
// formula in f32.
//
//===----------------------------------------------------------------------===//

#include "KernelUtils.h"
#include "Lowering.h"

#include "txopt/Dialect/Tx/IR/TxOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "llvm/ADT/MapVector.h"

#include <cmath>

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::cuda;

bool cuda::updatableInPlace(Operation *op, Value state) {
  // A step argument (state the step carries), or a data-parallel rank's
  // copy of its parameter shard (tx.rank_shard: a buffer of its own).
  if (!isa<BlockArgument>(state) && !state.getDefiningOp<tx::RankShardOp>())
    return false;
  for (Operation *user : state.getUsers())
    if (user != op && !user->isBeforeInBlock(op))
      return false;
  return true;
}

/// Gradient |t| of |adam| as its kernel reads it: the tensor in memory and,
/// for a gradient scaled on the way (scaledGradient: the clipping
/// coefficient), the scalar and whether it divides.
static ScaledGradient gradientRead(LoweringContext &ctx, tx::AdamOp adam, unsigned t) {
  Value g = adam->getOperand(adam.getNumParams() + t);
  if (!ctx.plan.isMaterialized(g))
    if (ScaledGradient scaled = scaledGradient(g.getDefiningOp(), ctx.plan))
      return scaled;
  return {g, Value(), false};
}

/// The scalar a gradient is scaled by in the kernel: the arithmetic of
/// the mul or div the kernel stands in for (same f32 rounding).
static Value applyGradientScale(KernelBuilder &kb, Value gk, Value scale, bool divide) {
  if (!scale)
    return gk;
  auto &b = kb.builder();
  return divide ? Value(arith::DivFOp::create(b, gk, scale))
                : Value(arith::MulFOp::create(b, gk, scale));
}

/// Appends to |inputs| what the kernel reads to form |scale|: the scale
/// itself when it is in memory, else the values in memory it is computed
/// from (the kernel emits it, KernelBuilder::emit), each once.
static void addScaleInputs(LoweringContext &ctx, Value scale, llvm::SmallVectorImpl<Value> &inputs) {
  llvm::SetVector<Value> leaves;
  KernelBuilder::collectReadsOf(scale, ctx.plan, leaves);
  for (Value v : leaves)
    if (!llvm::is_contained(inputs, v))
      inputs.push_back(v);
}

bool cuda::adamUpdatesPacked(LoweringContext &ctx, tx::AdamOp adam, unsigned t) {
  Operation *op = adam;
  unsigned n = adam.getNumParams();
  Value g = op->getOperand(n + t);
  Type gradStorage =
      typeOf(KernelBuilder::storageOf(gradientRead(ctx, adam, t).tensor, ctx.plan))
          .getElementType();
  return updatableInPlace(op, op->getOperand(t)) &&
         updatableInPlace(op, op->getOperand(2 * n + t)) &&
         updatableInPlace(op, op->getOperand(3 * n + t)) && typeOf(g).getElementType().isF32() &&
         (gradStorage.isF32() || gradStorage.isBF16() || gradStorage.isF16());
}

void cuda::updateInPlace(LoweringContext &ctx, Operation *op, Value state, Value result) {
  if (!ctx.bufferOfValue.count(result) && updatableInPlace(op, state))
    ctx.bufferOfValue[result] = ctx.bufferFor(state);
}

/// f32 rounding of a double, as the executor's r32().
static double r32(double v) { return static_cast<double>(static_cast<float>(v)); }

/// Elements per thread of the Adam kernels (see lowerAdam).
constexpr int64_t kOptimizerElementsPerThread = 8;
/// Vector width of the packed Adam kernel: 4 f32 = one 16-byte access.
constexpr int64_t kPackedVectorWidth = 4;

namespace {

/// tx.adam's attributes, as evalAdam reads them.
struct AdamConfig {
  double beta1, beta2, eps, wd;
  bool adamw, correct, f32Correction;
  tx::EpsilonPlacement placement;

  explicit AdamConfig(tx::AdamOp adam)
      : beta1(adam.getBeta1().convertToDouble()),
        beta2(adam.getBeta2().convertToDouble()),
        eps(adam.getEpsilon().convertToDouble()),
        wd(adam.getWeightDecay().convertToDouble()),
        adamw(adam.getMode() == tx::AdamMode::adamw),
        correct(adam.getBiasCorrection()),
        f32Correction(adam.getF32BiasCorrection()),
        placement(adam.getEpsilonPlacement()) {}
};

/// The step's scalars of the update in f32: formed once per thread (in f64
/// from the lr and step tensors, as evalAdam forms them), not per element.
struct AdamScalars {
  Value lr, lrWd, bc1, bc2, epsTerm;
};

} // namespace

static AdamScalars adamScalars(KernelBuilder &kb, const AdamConfig &c, Value lr, Value step) {
  auto &b = kb.builder();
  auto f64 = [&](double x) { return Value(arith::ConstantOp::create(b, b.getF64FloatAttr(x))); };
  auto toF32 = [&](Value x) { return Value(arith::TruncFOp::create(b, b.getF32Type(), x)); };
  auto toF64 = [&](Value x) { return Value(arith::ExtFOp::create(b, b.getF64Type(), x)); };
  AdamScalars s;
  Value lrValue = toF64(kb.load(lr, kb.idx(0)));
  s.lrWd = toF32(arith::MulFOp::create(b, lrValue, f64(c.wd)));
  s.lr = toF32(lrValue);
  s.bc1 = kb.f32(1.0);
  s.bc2 = kb.f32(1.0);
  s.epsTerm = kb.f32(r32(c.eps));
  if (!c.correct)
    return s;
  Value t = toF64(kb.load(step, kb.idx(0)));
  Value power1, power2;
  if (c.f32Correction) {
    power1 = toF64(toF32(math::PowFOp::create(b, f64(r32(c.beta1)), t)));
    power2 = toF64(toF32(math::PowFOp::create(b, f64(r32(c.beta2)), t)));
  } else {
    power1 = math::PowFOp::create(b, f64(c.beta1), t);
    power2 = math::PowFOp::create(b, f64(c.beta2), t);
  }
  s.bc1 = toF32(arith::SubFOp::create(b, f64(1.0), power1));
  s.bc2 = toF32(arith::SubFOp::create(b, f64(1.0), power2));
  if (c.placement == tx::EpsilonPlacement::epsilon_hat)
    s.epsTerm = toF32(arith::DivFOp::create(
        b, f64(c.eps), math::SqrtOp::create(b, arith::SubFOp::create(b, f64(1.0), power2))));
  return s;
}

namespace {
struct AdamElement {
  Value p, m, v;
};
} // namespace

/// One element's update, each line of the executor's formula in f32
/// (correctly rounded f32 operations equal its double-then-round results).
static AdamElement adamElement(KernelBuilder &kb, const AdamConfig &c, const AdamScalars &s,
                               Value pk, Value gk, Value mk, Value vk) {
  auto &b = kb.builder();
  if (!c.adamw)
    gk = arith::AddFOp::create(b, gk, arith::MulFOp::create(b, kb.f32(r32(c.wd)), pk));
  Value m = arith::AddFOp::create(b, arith::MulFOp::create(b, kb.f32(r32(c.beta1)), mk),
                                  arith::MulFOp::create(b, kb.f32(r32(1.0 - c.beta1)), gk));
  Value v = arith::AddFOp::create(
      b, arith::MulFOp::create(b, kb.f32(r32(c.beta2)), vk),
      arith::MulFOp::create(b, arith::MulFOp::create(b, kb.f32(r32(1.0 - c.beta2)), gk), gk));
  Value mHat = c.correct ? Value(arith::DivFOp::create(b, m, s.bc1)) : m;
  Value vHat = c.correct ? Value(arith::DivFOp::create(b, v, s.bc2)) : v;
  Value den = c.placement == tx::EpsilonPlacement::inside_sqrt
                  ? Value(math::SqrtOp::create(b, arith::AddFOp::create(b, vHat, s.epsTerm)))
                  : Value(arith::AddFOp::create(b, math::SqrtOp::create(b, vHat), s.epsTerm));
  Value pd = c.adamw ? Value(arith::SubFOp::create(b, pk, arith::MulFOp::create(b, s.lrWd, pk)))
                     : pk;
  Value update = arith::DivFOp::create(b, arith::MulFOp::create(b, s.lr, mHat), den);
  return {arith::SubFOp::create(b, pd, update), m, v};
}

namespace {
/// FP8 weight caching (planAdamWritingCodes): the packed Adam also rounds
/// each new weight to |cast| (when set), writes its |fp8| codes (scaled by
/// the weight's new scale) and folds the block's max |x| into the weight's
/// amax: the next step's plain codes and amax, which the weight's own cast
/// kernel wrote before from a second read of the f32 weight.
struct PackedCodes {
  Type fp8, cast; ///< cast: the type the weight is rounded to first, or null
};

/// The scalar all members' gradients are multiplied (or divided) by as
/// they are read (scaledGradient), when set.
struct GradientScale {
  Value scale;
  bool divide = false;
};

/// The body of the packed Adam kernel (lowerPackedAdam) for the block of
/// one tensor: the tensor's views, the update's scalars, and the two ways a
/// block runs (whole vectors, or a tensor's last, partial block).
class PackedAdamBody {
public:
  /// Builds the views and scalars at |kb|'s insertion point. |squares|:
  /// the thread's running sum of squared gradients (a one-float alloca),
  /// or null when the kernel does not add them up.
  PackedAdamBody(LoweringContext &ctx, KernelBuilder &kb, const AdamConfig &c,
                 const PackedBlock &block, Type gradStorage, GradientScale gradScale,
                 std::optional<PackedCodes> codes, Value squares, Value lr, Value step)
      : ctx(ctx), kb(kb), b(kb.builder()), c(c), block(block), gradStorage(gradStorage),
        divide(gradScale.divide), codes(codes), squares(squares) {
    Type f32 = b.getF32Type();
    p = view(0, f32), g = view(1, gradStorage), m = view(2, f32), v = view(3, f32);
    s = adamScalars(kb, c, lr, step);
    gradScaleValue = gradScale.scale ? kb.emit(gradScale.scale, {}) : Value();
    if (codes) {
      codesView = view(4, b.getI8Type());
      amaxView = view(5, b.getI32Type());
      scale = memref::LoadOp::create(b, view(6, f32), ValueRange{kb.idx(0)});
    }
  }

  /// Whether the block is whole: perBlock elements of its tensor.
  Value isFull(int64_t perBlock) {
    return arith::CmpIOp::create(b, arith::CmpIPredicate::ule,
                                 arith::AddIOp::create(b, block.start, kb.idx(perBlock)),
                                 block.elements);
  }

  /// A whole block. Thread i covers 4 consecutive elements at i * 4 and
  /// again one block-width of vectors further: each vector access of a
  /// warp is 512 contiguous bytes (the memory plan aligns buffers to 256
  /// bytes). All of p, g, m and v are loaded before the math.
  void wholeBlock() {
    Type f32 = b.getF32Type();
    struct Group {
      Value at, p, g, m, v;
    };
    llvm::SmallVector<Group> groups;
    for (int64_t k = 0; k < kVectors; ++k) {
      Value at = packedVectorStart(kb, block, k, kPackedVectorWidth);
      auto load = [&](Value view, Type element) {
        return Value(vector::LoadOp::create(
            b, vectorOf(element), view, ValueRange{at}, /*nontemporal=*/false,
            llvm::MaybeAlign(kPackedVectorWidth * element.getIntOrFloatBitWidth() / 8)));
      };
      groups.push_back({at, load(p, f32), load(g, gradStorage), load(m, f32), load(v, f32)});
    }
    Value acc = kb.f32(0.0);
    for (Group &group : groups) {
      llvm::SmallVector<Value> newP, newM, newV;
      for (int64_t lane = 0; lane < kPackedVectorWidth; ++lane) {
        auto extract = [&](Value vec) { return Value(vector::ExtractOp::create(b, vec, lane)); };
        Value gk = readGradient(extract(group.g));
        addSquare(gk);
        AdamElement e =
            adamElement(kb, c, s, extract(group.p), gk, extract(group.m), extract(group.v));
        newP.push_back(e.p);
        newM.push_back(e.m);
        newV.push_back(e.v);
      }
      for (auto [view, lanes] : {std::pair{p, &newP}, {m, &newM}, {v, &newV}})
        vector::StoreOp::create(b, vector::FromElementsOp::create(b, vectorOf(f32), *lanes),
                                view, ValueRange{group.at}, /*nontemporal=*/false,
                                llvm::MaybeAlign(kPackedVectorWidth * 4));
      if (codes) {
        llvm::SmallVector<Value> rounded;
        for (Value x : newP) {
          rounded.push_back(castValue(x));
          acc = absMax(acc, rounded.back());
        }
        llvm::SmallVector<Value> laneCodes = encode(rounded);
        vector::StoreOp::create(
            b, vector::FromElementsOp::create(b, vectorOf(b.getI8Type()), laneCodes),
            codesView, ValueRange{group.at}, /*nontemporal=*/false,
            llvm::MaybeAlign(kPackedVectorWidth));
      }
    }
    // Every thread of the block takes this branch (whether the block is
    // whole is the block's): the block reduction's barriers are safe here.
    if (codes)
      emitAtomicAmax(kb, kb.blockReduce(acc, /*isMax=*/true), amaxView);
  }

  /// A tensor's last, partial block, element by element.
  void partialBlock() {
    if (codes)
      return partialBlockWritingCodes();
    for (int64_t k = 0; k < kOptimizerElementsPerThread; ++k) {
      Value at = elementIndex(k);
      Value inRange = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, at, block.elements);
      kb.ifThen(inRange, [&] {
        auto load = [&](Value view) {
          return Value(memref::LoadOp::create(b, view, ValueRange{at}));
        };
        Value gk = readGradient(load(g));
        addSquare(gk);
        AdamElement e = adamElement(kb, c, s, load(p), gk, load(m), load(v));
        memref::StoreOp::create(b, e.p, p, ValueRange{at});
        memref::StoreOp::create(b, e.m, m, ValueRange{at});
        memref::StoreOp::create(b, e.v, v, ValueRange{at});
      });
    }
  }

private:
  static constexpr int64_t kVectors = kOptimizerElementsPerThread / kPackedVectorWidth;

  /// With codes: every thread computes a clamped element (the amax's block
  /// reduction needs them all), only those in range store, and only they
  /// count in the amax.
  void partialBlockWritingCodes() {
    Value acc = kb.f32(0.0);
    Value last = arith::SubIOp::create(b, block.elements, kb.idx(1));
    for (int64_t k = 0; k < kOptimizerElementsPerThread; ++k) {
      Value at = elementIndex(k);
      Value inRange = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, at, block.elements);
      Value i = arith::MinUIOp::create(b, at, last);
      auto load = [&](Value view) { return Value(memref::LoadOp::create(b, view, ValueRange{i})); };
      Value gk = readGradient(load(g));
      addSquare(gk, inRange);
      AdamElement e = adamElement(kb, c, s, load(p), gk, load(m), load(v));
      Value rounded = castValue(e.p);
      Value code = encode({rounded}).front();
      acc = arith::SelectOp::create(b, inRange, absMax(acc, rounded), acc);
      kb.ifThen(inRange, [&] {
        memref::StoreOp::create(b, e.p, p, ValueRange{at});
        memref::StoreOp::create(b, e.m, m, ValueRange{at});
        memref::StoreOp::create(b, e.v, v, ValueRange{at});
        memref::StoreOp::create(b, code, codesView, ValueRange{at});
      });
    }
    emitAtomicAmax(kb, kb.blockReduce(acc, /*isMax=*/true), amaxView);
  }

  Value view(unsigned k, Type element) { return packedView(kb, block, k, element); }
  VectorType vectorOf(Type element) { return VectorType::get({kPackedVectorWidth}, element); }
  /// Element k of this thread in a partial block: k block-widths further.
  Value elementIndex(int64_t k) {
    return arith::AddIOp::create(
        b, block.start, arith::AddIOp::create(b, kb.idx(k * kBlockSize), kb.threadIndex()));
  }
  Value readGradient(Value stored) {
    return applyGradientScale(kb, kb.fromStorage(stored, gradStorage), gradScaleValue, divide);
  }
  /// Adds g^2 to the thread's sum of squares (where |inRange|, if given).
  void addSquare(Value gk, Value inRange = Value()) {
    if (!squares)
      return;
    Value square = arith::MulFOp::create(b, gk, gk);
    if (inRange)
      square = arith::SelectOp::create(b, inRange, square, kb.f32(0.0));
    Value sum = memref::LoadOp::create(b, squares, ValueRange{kb.idx(0)});
    memref::StoreOp::create(b, arith::AddFOp::create(b, sum, square), squares,
                            ValueRange{kb.idx(0)});
  }
  /// The new weight as its cast rounds it (what the codes and amax are of).
  Value castValue(Value newP) { return codes->cast ? kb.roundTo(newP, codes->cast) : newP; }
  llvm::SmallVector<Value> encode(llvm::ArrayRef<Value> values) {
    llvm::SmallVector<Value> scaled;
    for (Value x : values)
      scaled.push_back(arith::MulFOp::create(b, x, scale));
    return emitFP8Codes(ctx, b, scaled, codes->fp8);
  }
  Value absMax(Value acc, Value x) {
    return arith::MaximumFOp::create(b, acc, math::AbsFOp::create(b, x));
  }

  LoweringContext &ctx;
  KernelBuilder &kb;
  ImplicitLocOpBuilder &b;
  const AdamConfig &c;
  const PackedBlock &block;
  Type gradStorage;
  bool divide;
  std::optional<PackedCodes> codes;
  Value squares;
  Value p, g, m, v, gradScaleValue, codesView, amaxView, scale;
  AdamScalars s;
};
} // namespace

/// The parameters |members| of |adam| (f32, updated in place, gradients
/// stored as |gradStorage|, scaled by |gradScale| as they are read) in one
/// launch. The tensors lie wherever the memory plan put them; the kernel
/// finds them through an offset table (PackedKernels.cpp: each tensor's
/// parameter, gradient, first and second moment). Each block updates 8
/// elements per thread: two 16-byte vectors of each of p, g, m, v (all
/// loaded before the math), or element by element in a tensor's last,
/// partial block. The same arithmetic as the per-tensor kernel, so the
/// result is bit-identical to it and to the executor.
///
/// With |codes| every member is a cached FP8 weight whose next codes and
/// amax the kernel writes too (PackedCodes). With |sumRoot|
/// (planSumsOfSquaresInAdam) the kernel also adds up the squares of the
/// gradients it reads, one partial sum a block, for the gradient norm that
/// |sumRoot| computes.
static LogicalResult lowerPackedAdam(LoweringContext &ctx, tx::AdamOp adam, const AdamConfig &c,
                                     llvm::ArrayRef<unsigned> members, Type gradStorage,
                                     GradientScale gradScale,
                                     std::optional<PackedCodes> codes = std::nullopt,
                                     Operation *sumRoot = nullptr) {
  Operation *op = adam;
  unsigned n = adam.getNumParams();
  Value lr = op->getOperand(4 * n);
  Value step = c.correct ? op->getOperand(4 * n + 1) : Value();
  constexpr int64_t perBlock = kBlockSize * kOptimizerElementsPerThread;
  llvm::SmallVector<int64_t> elementCounts;
  llvm::SmallVector<llvm::SmallVector<unsigned, 4>> buffers;
  for (unsigned t : members) {
    elementCounts.push_back(typeOf(op->getOperand(t)).getNumElements());
    buffers.emplace_back();
    for (unsigned k = 0; k < 4; ++k)
      buffers.back().push_back(ctx.bufferFor(
          k == 1 ? gradientRead(ctx, adam, t).tensor : op->getOperand(k * n + t)));
    if (codes) {
      // The codes, the amax and the (new) scale, after p, g, m and v.
      auto [amax, quantize] = ctx.adamWritesCodes.lookup(op->getResult(t));
      buffers.back().push_back(ctx.bufferFor(quantize->getResult(0)));
      buffers.back().push_back(ctx.bufferFor(amax->getResult(0)));
      buffers.back().push_back(ctx.bufferFor(quantize->getOperand(1)));
    }
  }
  PackedTable packed = buildPackedTable(ctx, elementCounts, buffers, perBlock, "adam offset table");

  llvm::SmallVector<Value> inputs{lr};
  if (step)
    inputs.push_back(step);
  if (gradScale.scale)
    addScaleInputs(ctx, gradScale.scale, inputs);
  // The amax's and the squares' block reductions need 32 floats of
  // workgroup memory.
  KernelBuilder kb(ctx.gpuModule, ctx.kernelName(op), {}, inputs, ctx.plan,
                   /*workgroupFloats=*/codes || sumRoot ? 32 : 0);
  auto &b = kb.builder();
  PackedBlock block = emitPackedBlock(kb, packed);
  unsigned partials = 0;
  Value partialArg, squares;
  if (sumRoot) {
    partials = ctx.scratch(packed.blocks * 4, "sum of squares partials");
    partialArg = kb.insertBufferArgument(1, MemRefType::get({packed.blocks}, b.getF32Type()));
    squares = memref::AllocaOp::create(b, MemRefType::get({1}, b.getF32Type()));
    memref::StoreOp::create(b, kb.f32(0.0), squares, ValueRange{kb.idx(0)});
  }
  PackedAdamBody body(ctx, kb, c, block, gradStorage, gradScale, codes, squares, lr, step);
  kb.ifThenElse(body.isFull(perBlock), [&] { body.wholeBlock(); }, [&] { body.partialBlock(); });
  if (sumRoot) {
    // Every thread reaches this (after both branches): the block's sum.
    Value total = kb.blockReduce(memref::LoadOp::create(b, squares, ValueRange{kb.idx(0)}),
                                 /*isMax=*/false);
    Value first = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, kb.threadIndex(), kb.idx(0));
    kb.ifThen(first, [&] {
      memref::StoreOp::create(b, total, partialArg, ValueRange{kb.blockIndex()});
    });
  }
  kb.finish();
  if (failed(kb.status()))
    return failure();
  // The arguments after the table: the partial sums (inserted at 1), then
  // the inputs.
  llvm::SmallVector<unsigned> args;
  if (sumRoot) {
    args.push_back(partials);
    ctx.sumStages[sumRoot].push_back({partials, packed.blocks});
  }
  llvm::append_range(args, ctx.buffersOf(inputs));
  launchPacked(ctx, kb, op, packed, args,
               sumRoot ? llvm::ArrayRef<unsigned>(partials) : llvm::ArrayRef<unsigned>());
  return success();
}

namespace {
/// By gradient storage and scale (scaledGradient): one launch each.
using AdamPackKey = std::tuple<Type, Value, unsigned>; // storage, scale, divides

/// The parameters of a tx.adam by the kernel that updates them.
struct AdamLaunches {
  /// Updated in place: one packed launch per key.
  llvm::MapVector<AdamPackKey, llvm::SmallVector<unsigned>> packed;
  /// Cached FP8 weights whose codes this kernel writes, by (gradient
  /// storage and scale, FP8 type, cast type): one launch each.
  llvm::MapVector<std::tuple<AdamPackKey, Type, Type>, llvm::SmallVector<unsigned>> withCodes;
  /// A loop kernel each.
  llvm::SmallVector<unsigned> alone;
};

/// The gradient norm's sum of squares over a tx.adam's gradients, when its
/// kernels add it up (planSumsOfSquaresInAdam): a packed launch adds the
/// squares of its members when all of them are in the sum; the sum's
/// other gradients of this op get the sum's own partial-sum launches.
class AdamSumOfSquares {
public:
  AdamSumOfSquares(LoweringContext &ctx, tx::AdamOp adam) : adam(adam) {
    Operation *op = adam;
    unsigned n = adam.getNumParams();
    for (auto &[root, adams] : ctx.sumsInAdam)
      if (llvm::is_contained(adams, op)) {
        sumRoot = root;
        for (Value x : ctx.packedSumsOfSquares.lookup(root))
          summed.insert(x);
      }
    for (unsigned t = 0; t < n; ++t)
      if (summed.contains(op->getOperand(n + t)))
        leftover.insert(op->getOperand(n + t));
  }

  /// The sum a packed launch of |members| adds to (no longer left over),
  /// or null.
  Operation *takeMembers(llvm::ArrayRef<unsigned> members) {
    Operation *op = adam;
    unsigned n = adam.getNumParams();
    if (!sumRoot || !llvm::all_of(members, [&](unsigned t) {
          return summed.contains(op->getOperand(n + t));
        }))
      return nullptr;
    for (unsigned t : members)
      leftover.erase(op->getOperand(n + t));
    return sumRoot;
  }

  /// The partial-sum launches of the summed gradients no packed launch
  /// added up.
  LogicalResult lowerLeftover(LoweringContext &ctx) {
    if (leftover.empty())
      return success();
    Operation *op = adam;
    unsigned n = adam.getNumParams();
    // In this op's operand order, so the plan does not depend on pointers.
    llvm::SmallVector<Value> rest;
    for (unsigned t = 0; t < n; ++t)
      if (leftover.erase(op->getOperand(n + t)))
        rest.push_back(op->getOperand(n + t));
    return lowerSumOfSquaresStages(ctx, sumRoot, rest);
  }

private:
  tx::AdamOp adam;
  Operation *sumRoot = nullptr;
  llvm::DenseSet<Value> summed, leftover;
};
} // namespace

/// Sorts |adam|'s parameters into |launches|, making each state's result
/// share the state's buffer where it can (updateInPlace).
static LogicalResult groupAdamParameters(LoweringContext &ctx, tx::AdamOp adam,
                                         AdamLaunches &launches) {
  Operation *op = adam;
  unsigned n = adam.getNumParams();
  for (unsigned t = 0; t < n; ++t) {
    Value p = op->getOperand(t), g = op->getOperand(n + t);
    if (!typeOf(p).getElementType().isF32())
      return op->emitError("the GPU optimizer updates f32 parameters only");
    bool inPlace = true;
    for (unsigned k = 0; k < 3; ++k) {
      Value state = op->getOperand((k == 0 ? 0 : k + 1) * n + t), result = op->getResult(k * n + t);
      updateInPlace(ctx, op, state, result);
      inPlace &= ctx.bufferFor(state) == ctx.bufferFor(result);
    }
    ScaledGradient read = gradientRead(ctx, adam, t);
    Type gradStorage = typeOf(KernelBuilder::storageOf(read.tensor, ctx.plan)).getElementType();
    bool widens = gradStorage.isF32() || gradStorage.isBF16() || gradStorage.isF16();
    AdamPackKey key{gradStorage, read.scale, read.divide ? 1u : 0u};
    if (auto it = ctx.adamWritesCodes.find(op->getResult(t)); it != ctx.adamWritesCodes.end()) {
      if (!inPlace || !widens)
        return op->emitError("an FP8 weight planned for codes from the optimizer is not "
                             "updated in place by the packed kernel");
      auto quantize = cast<tx::QuantizeOp>(it->second.second);
      Value input = quantize.getInput();
      Type castType = input == op->getResult(t) ? Type() : typeOf(input).getElementType();
      launches.withCodes[{key, typeOf(quantize.getResult()).getElementType(), castType}]
          .push_back(t);
    } else if (inPlace && widens && typeOf(g).getElementType().isF32()) {
      launches.packed[key].push_back(t);
    } else {
      launches.alone.push_back(t);
    }
  }
  return success();
}

/// Before the launches that write FP8 codes: the held-back scale updates
/// go out first (the codes take the new scales; those whose old state
/// nothing later reads: all but none here). Then the weights' amaxes are
/// zeroed for the kernels' atomics.
static LogicalResult prepareCodeWritingLaunches(LoweringContext &ctx, tx::AdamOp adam,
                                                const AdamLaunches &launches) {
  Operation *op = adam;
  if (failed(flushFP8ScaleUpdates(ctx, op)))
    return failure();
  for (auto &[key, members] : launches.withCodes)
    for (unsigned t : members) {
      Value amax = ctx.adamWritesCodes.lookup(op->getResult(t)).first->getResult(0);
      auto block = ctx.amaxBlockOf.find(amax);
      if (block == ctx.amaxBlockOf.end())
        ctx.memset(ctx.bufferFor(amax), 0, op);
      else if (ctx.zeroedAmaxBlocks.insert(block->second).second)
        ctx.memset(block->second, 0, op);
    }
  return success();
}

/// The loop kernel of |adam|'s parameter |t| (its old value read after the
/// update, so not updated in place).
static LogicalResult lowerAdamAlone(LoweringContext &ctx, tx::AdamOp adam, const AdamConfig &c,
                                    unsigned t) {
  Operation *op = adam;
  unsigned n = adam.getNumParams();
  Value lr = op->getOperand(4 * n);
  Value step = c.correct ? op->getOperand(4 * n + 1) : Value();
  ScaledGradient read = gradientRead(ctx, adam, t);
  Value p = op->getOperand(t), g = read.tensor;
  Value m = op->getOperand(2 * n + t), v = op->getOperand(3 * n + t);
  Value np = op->getResult(t), nm = op->getResult(n + t), nv = op->getResult(2 * n + t);
  llvm::SmallVector<Value> inputs{p, g, m, v, lr};
  if (step)
    inputs.push_back(step);
  if (read.scale)
    addScaleInputs(ctx, read.scale, inputs);
  KernelBuilder kb(ctx.gpuModule, ctx.kernelName(op), {np, nm, nv}, inputs, ctx.plan);
  auto &b = kb.builder();
  int64_t count = typeOf(p).getNumElements();
  AdamScalars s = adamScalars(kb, c, lr, step);
  Value gradScale = read.scale ? kb.emit(read.scale, {}) : Value();
  // Each thread updates up to kOptimizerElementsPerThread elements (as
  // the loop kernels do, lowerElementalValue): every element's loads are
  // issued before the first store.
  int64_t perThread = std::min<int64_t>(kOptimizerElementsPerThread, ceilDiv(count, kBlockSize));
  Value base = arith::AddIOp::create(
      b, arith::MulIOp::create(b, kb.blockIndex(), kb.idx(kBlockSize * perThread)),
      kb.threadIndex());
  struct Element { Value at, pk, gk, mk, vk; };
  llvm::SmallVector<Element> elements;
  for (int64_t e = 0; e < perThread; ++e) {
    Value at = arith::AddIOp::create(b, base, kb.idx(e * kBlockSize));
    Value i = arith::MinUIOp::create(b, at, kb.idx(std::max<int64_t>(count - 1, 0)));
    elements.push_back({at, kb.load(p, i),
                        applyGradientScale(kb, kb.load(g, i), gradScale, read.divide),
                        kb.load(m, i), kb.load(v, i)});
  }
  for (Element &e : elements) {
    AdamElement next = adamElement(kb, c, s, e.pk, e.gk, e.mk, e.vk);
    Value inRange = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, e.at, kb.idx(count));
    kb.ifThen(inRange, [&] {
      kb.store(np, e.at, next.p);
      kb.store(nm, e.at, next.m);
      kb.store(nv, e.at, next.v);
    });
  }
  kb.finish();
  if (failed(kb.status()))
    return failure();
  ctx.launch(kb, op, ceilDiv(count, kBlockSize * perThread), ctx.buffersOf({np, nm, nv}),
             ctx.buffersOf(inputs));
  return success();
}

/// tx.adam. Parameters updated in place are packed into one launch per
/// gradient storage type (lowerPackedAdam); any other parameter (its old
/// value read after the update) gets a loop kernel of its own. Cached FP8
/// weights whose next codes the kernel writes (planAdamWritingCodes) get a
/// packed launch of their own, after the held-back scale updates (the
/// codes take the new scales) and the memset of their amaxes.
static LogicalResult lowerAdam(LoweringContext &ctx, tx::AdamOp adam) {
  AdamConfig c(adam);
  AdamLaunches launches;
  if (failed(groupAdamParameters(ctx, adam, launches)))
    return failure();
  AdamSumOfSquares sum(ctx, adam);
  for (auto &[key, members] : launches.packed) {
    auto [gradStorage, scale, divide] = key;
    if (failed(lowerPackedAdam(ctx, adam, c, members, gradStorage, {scale, divide != 0},
                               std::nullopt, sum.takeMembers(members))))
      return failure();
  }
  if (!launches.withCodes.empty() && failed(prepareCodeWritingLaunches(ctx, adam, launches)))
    return failure();
  for (auto &[key, members] : launches.withCodes) {
    auto [packKey, fp8, castType] = key;
    auto [gradStorage, scale, divide] = packKey;
    if (failed(lowerPackedAdam(ctx, adam, c, members, gradStorage, {scale, divide != 0},
                               PackedCodes{fp8, castType}, sum.takeMembers(members))))
      return failure();
  }
  if (failed(sum.lowerLeftover(ctx)))
    return failure();
  for (unsigned t : launches.alone)
    if (failed(lowerAdamAlone(ctx, adam, c, t)))
      return failure();
  return success();
}

/// tx.sgd: one loop kernel per parameter tensor, one element per thread.
static LogicalResult lowerSGD(LoweringContext &ctx, tx::SGDOp sgd) {
  Operation *op = sgd;
  unsigned n = sgd.getNumParams();
  bool hasMomentum = !sgd.getMomentum().isZero();
  double momentum = r32(sgd.getMomentum().convertToDouble());
  double wd = r32(sgd.getWeightDecay().convertToDouble());
  double oneMinusDampening = r32(1.0 - sgd.getDampening().convertToDouble());
  bool nesterov = sgd.getNesterov();
  Value lr = op->getOperand(3 * n);
  for (unsigned t = 0; t < n; ++t) {
    Value p = op->getOperand(t), g = op->getOperand(n + t), buf = op->getOperand(2 * n + t);
    Value np = op->getResult(t), nb = op->getResult(n + t);
    if (!typeOf(p).getElementType().isF32())
      return op->emitError("the GPU optimizer updates f32 parameters only");
    updateInPlace(ctx, op, p, np);
    updateInPlace(ctx, op, buf, nb);
    KernelBuilder kb(ctx.gpuModule, ctx.kernelName(op), {np, nb}, {p, g, buf, lr}, ctx.plan);
    auto &b = kb.builder();
    int64_t count = typeOf(p).getNumElements();
    Value i = kb.globalThreadIndex();
    Value lrValue = kb.load(lr, kb.idx(0));
    Value inRange = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, i, kb.idx(count));
    kb.ifThen(inRange, [&] {
      Value pk = kb.load(p, i);
      Value gk = arith::AddFOp::create(b, kb.load(g, i), arith::MulFOp::create(b, kb.f32(wd), pk));
      Value bk = kb.load(buf, i), dk = gk;
      if (hasMomentum) {
        bk = arith::AddFOp::create(b, arith::MulFOp::create(b, kb.f32(momentum), bk),
                                   arith::MulFOp::create(b, kb.f32(oneMinusDampening), gk));
        dk = nesterov ? Value(arith::AddFOp::create(b, gk, arith::MulFOp::create(b, kb.f32(momentum), bk)))
                      : bk;
      }
      kb.store(np, i, arith::SubFOp::create(b, pk, arith::MulFOp::create(b, lrValue, dk)));
      kb.store(nb, i, bk);
    });
    kb.finish();
    if (failed(kb.status()))
      return failure();
    ctx.launch(kb, op, ceilDiv(count, kBlockSize), ctx.buffersOf({np, nb}),
               ctx.buffersOf({p, g, buf, lr}));
  }
  return success();
}

/// tx.adam (packed, see lowerAdam) and tx.sgd (one loop kernel per tensor).
LogicalResult cuda::lowerOptimizer(LoweringContext &ctx, Operation *op) {
  if (auto adam = dyn_cast<tx::AdamOp>(op))
    return lowerAdam(ctx, adam);
  return lowerSGD(ctx, cast<tx::SGDOp>(op));
}
