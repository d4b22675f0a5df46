//===- Grouping.cpp - which values of a step live in memory ---------------===//
//
// SPDX-License-Identifier: Apache-2.0
// The kernel grouping of the GPU lowering: decides which values are
// materialized (stored by a kernel, GEMM or fused op) and which are
// recomputed inside the kernels that read them. An elementwise, broadcast
// or data-movement op (isElementalOp) whose result has exactly one user,
// which is itself such an op or a reduction, is computed inside that
// user's kernel. The rules below widen that where it saves memory traffic
// without changing a single rounding (docs/GPU.md lists them).
//
//===----------------------------------------------------------------------===//

#include "KernelUtils.h"
#include "Lowering.h"

#include "txopt/Dialect/Tx/IR/TxOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::cuda;

bool cuda::sumsLeadingAxes(tx::ReduceSumOp sum) {
  int64_t rank = typeOf(sum.getInput()).getRank();
  llvm::SmallDenseSet<int64_t, 4> axes;
  for (int64_t a : sum.getAxes())
    axes.insert(a < 0 ? a + rank : a);
  if (rank < 2 || static_cast<int64_t>(axes.size()) != rank - 1)
    return false;
  for (int64_t i = 0; i < rank - 1; ++i)
    if (!axes.contains(i))
      return false;
  return true;
}

bool cuda::isReduction(Operation *op) {
  return isa<tx::ReduceSumOp, tx::ReduceMeanOp, tx::ReduceMaxOp>(op);
}

/// Users that compute their operands' elements in their own kernel.
static bool fusesOperands(Operation *user) {
  return isElementalOp(user) || isReduction(user);
}

/// Whether |user| computes |operand|'s elements in its own kernel: the FP8
/// scale update its amaxes too (the concatenation of the sites' amaxes,
/// tx-insert-fp8, is never stored), but not its history or scale.
static bool fusesOperand(Operation *user, Value operand) {
  if (auto update = dyn_cast<tx::FP8ScaleUpdateOp>(user))
    return operand == update.getAmax() && operand != update.getAmaxHistory() &&
           operand != update.getScale();
  return fusesOperands(user);
}

/// Kernels that read every operand element through KernelBuilder::load,
/// which converts a recomputed cast on the fly: the row kernels and the
/// optimizers.
static bool loadsOperands(Operation *user) {
  return isa<tx::LayerNormOp, tx::RMSNormOp, tx::LayerNormGradOp,
             tx::RMSNormGradOp, tx::SoftmaxOp, tx::SoftmaxCrossEntropyLossOp,
             tx::SoftmaxCrossEntropyGradOp, tx::AdamOp, tx::SGDOp>(user);
}

/// A float tx.cast of a value that is in memory anyway, read only by kernels
/// that compute their operands' elements or load them: recomputing it in
/// each of them (one read of its input per user) beats storing it (a read
/// and a write, then a read per user) however many users it has. In a bf16
/// step this keeps the f32 copies of bf16 GEMM outputs (read by an
/// activation and its gradient, a norm's backward, the optimizer) out of
/// memory. GEMMs, attention and the step's results still need it stored.
/// A view of a recomputed cast read only by kernels that load their
/// operands: they read through it (KernelBuilder::storageOf) to the value
/// the cast converts; it needs no memory of its own.
static bool isLoadedView(Operation &view, const Materialization &plan) {
  Value input = view.getOperand(0);
  while (Operation *def = input.getDefiningOp()) {
    if (!isViewOp(def))
      break;
    if (plan.isMaterialized(input))
      return false;
    input = def->getOperand(0);
  }
  auto castOp = input.getDefiningOp<tx::CastOp>();
  if (!castOp || plan.isMaterialized(input) ||
      !plan.isMaterialized(castOp.getInput()))
    return false;
  return llvm::all_of(view.getResult(0).getUsers(), loadsOperands);
}

static bool isRecomputedCast(Operation &op, const Materialization &plan) {
  auto castOp = dyn_cast<tx::CastOp>(op);
  if (!castOp || !isa<FloatType>(typeOf(castOp.getInput()).getElementType()) ||
      !isa<FloatType>(typeOf(castOp.getResult()).getElementType()))
    return false;
  Value input = castOp.getInput();
  Operation *def = input.getDefiningOp();
  bool inputInMemory = !def || !isElementalOp(def) || plan.isMaterialized(input);
  return inputInMemory &&
         llvm::all_of(castOp.getResult().getUsers(), [](Operation *user) {
           return fusesOperands(user) || loadsOperands(user);
         });
}

/// A row kernel's f32 result read only by one cast to bf16/f16, maybe
/// through reshapes (a norm's output or a loss gradient going into a GEMM),
/// is written by the kernel in
/// the cast's type: the f32 tensor and the cast kernel disappear, and the
/// single rounding is the cast's own.
static void absorbCastsIntoStores(func::FuncOp step, Materialization &plan) {
  for (Operation &op : step.getBody().front()) {
    // Results written by kb.store, once per element, in f32.
    llvm::SmallVector<Value, 1> candidates;
    if (isa<tx::LayerNormOp, tx::RMSNormOp, tx::SoftmaxOp,
            tx::SoftmaxCrossEntropyGradOp, tx::LayerNormGradOp,
            tx::RMSNormGradOp>(op))
      candidates.push_back(op.getResult(0));
    for (Value result : candidates) {
      if (!typeOf(result).getElementType().isF32())
        continue;
      // Through single-use views (same elements, same order) to the cast.
      Value reader = result;
      while (reader.hasOneUse() &&
             isViewOp(*reader.getUsers().begin()))
        reader = reader.getUsers().begin()->getResult(0);
      if (!reader.hasOneUse() || (reader != result && plan.isMaterialized(reader)))
        continue;
      auto castOp = dyn_cast<tx::CastOp>(*reader.getUsers().begin());
      if (!castOp)
        continue;
      Type to = typeOf(castOp.getResult()).getElementType();
      if (!to.isBF16() && !to.isF16())
        continue;
      plan.materialized.erase(result);
      plan.materialized.insert(castOp.getResult());
      plan.storedAs[result] = castOp.getResult();
      plan.absorbedCasts.insert(castOp);
    }
  }
}

/// Arithmetic the elemental emitter computes from its operands alone (no
/// index remapping, no random numbers): the ops worth recomputing.
static bool isArithmetic(Operation *op) {
  if (auto constant = dyn_cast<tx::ConstantOp>(op))
    return cast<ElementsAttr>(constant.getValue()).isSplat();
  return isa<tx::AddOp, tx::SubOp, tx::MulOp, tx::DivOp, tx::PowOp, tx::MaxOp,
             tx::MinOp, tx::WhereOp, tx::SqrtOp, tx::ReciprocalOp, tx::ErfOp,
             tx::TanhOp, tx::SigmoidOp, tx::ExpOp, tx::LogOp, tx::NegOp,
             tx::ReluOp, tx::CastOp, tx::EqualOp, tx::LessOp, tx::GreaterOp,
             tx::LessOrEqualOp, tx::GreaterOrEqualOp, tx::NotOp, tx::AndOp,
             tx::OrOp, tx::IsNaNOp>(op);
}

/// What recomputing a value costs a kernel: the arithmetic ops it evaluates
/// and the large values in memory it reads (those with at least a quarter
/// of the result's elements; biases and scalars are cheap to read).
struct RecomputeCost {
  int ops = 0;
  llvm::SmallPtrSet<Value, 4> largeReads;
  /// Ops counted already: a kernel computes an element of a value read
  /// twice once (KernelBuilder::emitComputed), so a shared subexpression
  /// (the tanh in GELU's gradient, read as t and t * t) costs once.
  llvm::SmallPtrSet<Operation *, 16> counted;
};

/// A split or transpose that keeps the innermost axis innermost: an
/// element's neighbours along it stay neighbours in memory, so a kernel
/// that reads runs of them through it still reads whole runs (the head
/// split of an FP8 attention's q, k, v, [B, T, 3, H, D] into [B, H, T, D]).
/// Not one over a fused attention's result or gradient: cuDNN writes those
/// in the layout their reader wants (AttentionLayouts.cpp).
static bool movesRowsWhole(Operation *op) {
  if (!isa<tx::TransposeOp, tx::SplitOp>(op))
    return false;
  Operation *def = op->getOperand(0).getDefiningOp();
  while (def && (isViewOp(def) || isa<tx::TransposeOp, tx::SplitOp>(def)))
    def = def->getOperand(0).getDefiningOp();
  if (isa_and_nonnull<tx::AttentionOp, tx::AttentionGradOp>(def))
    return false;
  if (auto transpose = dyn_cast<tx::TransposeOp>(op)) {
    auto perm = transpose.getPerm();
    return !perm.empty() && perm.back() == static_cast<int64_t>(perm.size()) - 1;
  }
  if (auto split = dyn_cast<tx::SplitOp>(op)) {
    int64_t rank = typeOf(split.getInput()).getRank();
    int64_t axis = static_cast<int64_t>(split.getAxis());
    if (axis < 0)
      axis += rank;
    return axis != rank - 1 ||
           llvm::all_of(split.getResults(), [&](Value part) {
             return typeOf(part).getShape().back() % 16 == 0;
           });
  }
  return false;
}

/// Adds the cost of recomputing |v| for a result of |resultElements|
/// elements; false past |maxOps| ops or |maxReads| large reads, or when the
/// way down crosses anything else (data movement, random numbers, an op
/// whose result is not stored), views (reshapes), broadcasts and splits or
/// transposes that move rows whole excepted when |throughViews|.
static bool addRecomputeCost(Value v, const Materialization &plan,
                             int64_t resultElements, int maxOps, unsigned maxReads,
                             RecomputeCost &cost, bool throughViews = false) {
  Operation *def = v.getDefiningOp();
  if (!def || plan.isMaterialized(v)) {
    if (typeOf(v).getNumElements() * 4 >= resultElements)
      cost.largeReads.insert(v);
    return cost.largeReads.size() <= maxReads;
  }
  // A splat constant is an immediate in the kernel: no op to count.
  if (auto constant = dyn_cast<tx::ConstantOp>(def);
      constant && cast<ElementsAttr>(constant.getValue()).isSplat())
    return true;
  bool view = throughViews && (isViewOp(def) || isa<tx::ExpandOp>(def) || movesRowsWhole(def));
  if (!isArithmetic(def) && !view)
    return false;
  if (!cost.counted.insert(def).second)
    return true;
  if (++cost.ops > maxOps)
    return false;
  for (Value operand : def->getOperands())
    if (!addRecomputeCost(operand, plan, resultElements, maxOps, maxReads, cost,
                          throughViews))
      return false;
  return true;
}

/// An arithmetic value with several readers, all of which compute their
/// operands' elements, that a short expression over values in memory
/// gives: each reader recomputes it (a GELU's intermediates, read by the
/// forward and by its gradient) instead of a store and a load per reader.
/// Materialized, a value read by k kernels costs its R large reads, one
/// write and k reads; recomputed, k * R reads: so one large read allows
/// four readers, two large reads two readers, and a chain never grows
/// (a residual sum of sums stays materialized). Up to 16 distinct ops,
/// constants not counted: the tanh GELU's gradient has a factor, dy * 0.5 x
/// * (1 - tanh(u)^2) * sqrt(2/pi), that two of its terms read: about a
/// dozen ops in a bf16 step, casts included, more as exporters write the
/// chain. Stored, that f32 factor cost GPT-2 a 200 MB write and read a
/// layer, and kept an FP8 step's GELU gradient out of its amax kernel
/// (planColumnSumsInAmax).
static bool isRecomputedExpression(Operation &op, const Materialization &plan) {
  if (op.getNumResults() != 1 || !isArithmetic(&op))
    return false;
  Value result = op.getResult(0);
  llvm::SmallPtrSet<Operation *, 4> users(result.getUsers().begin(),
                                           result.getUsers().end());
  if (users.size() < 2 || users.size() > 4 ||
      !llvm::all_of(users, [](Operation *u) { return fusesOperands(u); }))
    return false;
  RecomputeCost cost;
  if (!addRecomputeCost(result, plan, typeOf(result).getNumElements(),
                        /*maxOps=*/16, /*maxReads=*/2, cost))
    return false;
  return cost.largeReads.size() <= 1 || users.size() <= 2;
}

/// A transpose that moves rows whole, of a value in memory (through
/// reshapes and a float cast at most), read by two or more kernels that
/// compute their operands: each reads through it. Llama's rotary embedding
/// reads the head split of q and k, [B, T, H, hd] -> [B, H, T, hd], three
/// times (the product with cos and both rotate-half slices); stored, it was
/// a kernel of its own that wrote the bf16 GEMM output again as f32 (24
/// launches, 0.54 ms of the H200's step), which the rotary kernel then read
/// in f32. Nothing is computed twice but index arithmetic and the cast, so
/// k readers of an input of b bytes an element read k * b bytes, against
/// b + c + k * c stored (c the copy's bytes an element, never less than
/// b here): however many readers, recomputing reads less.
static bool isRecomputedTranspose(Operation &op, const Materialization &plan) {
  if (!isa<tx::TransposeOp>(op) || !movesRowsWhole(&op))
    return false;
  Value result = op.getResult(0);
  llvm::SmallPtrSet<Operation *, 4> users(result.getUsers().begin(),
                                           result.getUsers().end());
  if (users.size() < 2 ||
      !llvm::all_of(users, [](Operation *u) { return fusesOperands(u); }))
    return false;
  // The transpose, reshapes and one widening cast: no other arithmetic.
  RecomputeCost cost;
  if (!addRecomputeCost(result, plan, typeOf(result).getNumElements(),
                        /*maxOps=*/4, /*maxReads=*/1, cost, /*throughViews=*/true))
    return false;
  auto widens = [](tx::CastOp c) {
    return typeOf(c.getInput()).getElementTypeBitWidth() <=
           typeOf(c.getResult()).getElementTypeBitWidth();
  };
  return llvm::count_if(cost.counted, [](Operation *o) { return isa<tx::CastOp>(o); }) <= 1 &&
         llvm::all_of(cost.counted, [&](Operation *o) {
           if (auto c = dyn_cast<tx::CastOp>(o))
             return widens(c);
           return isa<tx::TransposeOp>(o) || isViewOp(o);
         });
}

/// An f32 elemental value read only by one cast to a narrower float type
/// and by reductions: the backward's gradient of a linear layer's output
/// (the GELU gradient, the concatenated q/k/v gradient), narrowed for the
/// GEMMs and summed over rows for the bias gradient. Both readers compute
/// it themselves, so the f32 tensor (its write and two reads) never exists;
/// they compute the same f32 elements, so nothing changes numerically.
static bool isNarrowedAndReduced(Operation &op) {
  if (op.getNumResults() != 1 || !isElementalOp(&op))
    return false;
  Value result = op.getResult(0);
  if (!typeOf(result).getElementType().isF32())
    return false;
  unsigned casts = 0, reductions = 0;
  for (Operation *user : result.getUsers()) {
    if (isReduction(user)) {
      ++reductions;
      continue;
    }
    auto cast = dyn_cast<tx::CastOp>(user);
    if (!cast)
      return false;
    auto to = dyn_cast<FloatType>(typeOf(cast.getResult()).getElementType());
    if (!to || to.getWidth() >= 32)
      return false;
    ++casts;
  }
  return casts == 1 && reductions >= 1 && reductions <= 2;
}

/// An arithmetic value (or a view of one) read only by one tx.amax and one
/// tx.quantize of it
/// (an FP8 GEMM operand under delayed scaling: the bf16 copy of a weight,
/// the GELU output, a loss gradient) and computed, through reshapes and
/// broadcasts, from one large value in memory: the amax
/// kernel computes it, takes its max and writes the codes (lowerAmax fuses
/// that quantize), so it is never stored. Two large reads or more (the GELU
/// gradient, from the GEMM's output gradient and the GELU input) stay a
/// stored value: the column sum beside it writes it on the way (measured:
/// recomputing it in the amax kernel cost GPT-2 0.5 ms). Where the quantize
/// cannot join the amax's kernel (current scaling: its scale is this
/// amax's result) it computes the value again on its own, one more read
/// of the one large input instead of a store and two reads.
///
/// Two large reads are fine when the value is the narrowing cast of an f32
/// value whose bias gradient (a reduce_sum over every axis but the last)
/// the amax kernel adds up as well (planColumnSumsInAmax): the GELU
/// gradient then is computed once, in the amax kernel, which sums it,
/// quantizes it and writes both layouts of its codes; the column sum's own
/// kernel, which read the same two inputs and wrote the stored copy, goes.
/// That needs the tiled kernel: a delayed-scaling quantize (its scale a
/// step argument) and whole 64 x 64 tiles.
static bool isSummedByTiledAmax(Value result, tx::QuantizeOp quantize) {
  auto castOp = result.getDefiningOp<tx::CastOp>();
  if (!castOp || !isCarriedScale(quantize.getScale()))
    return false;
  Value source = castOp.getInput();
  auto shape = typeOf(source).getShape();
  int64_t rank = shape.size();
  if (rank < 2 || !typeOf(source).getElementType().isF32() || shape.back() % 64 != 0 ||
      (typeOf(source).getNumElements() / shape.back()) % 64 != 0)
    return false;
  return llvm::any_of(source.getUsers(), [&](Operation *user) {
    auto sum = dyn_cast<tx::ReduceSumOp>(user);
    return sum && sumsLeadingAxes(sum) && typeOf(sum.getResult()).getElementType().isF32();
  });
}

static bool isQuantizedWithItsAmax(Operation &op, const Materialization &plan) {
  if (op.getNumResults() != 1 || (!isArithmetic(&op) && !isViewOp(&op)))
    return false;
  Value result = op.getResult(0);
  unsigned amaxes = 0;
  tx::QuantizeOp quantize;
  for (OpOperand &use : result.getUses()) {
    Operation *user = use.getOwner();
    if (isa<tx::AmaxOp>(user))
      ++amaxes;
    else if (isa<tx::QuantizeOp>(user) && use.getOperandNumber() == 0 && !quantize)
      quantize = cast<tx::QuantizeOp>(user);
    else
      return false;
  }
  if (amaxes != 1 || !quantize)
    return false;
  RecomputeCost cost;
  // Summed in the same kernel, the value is computed once either way (in
  // the amax kernel instead of the column sum's): no op limit of a
  // recompute applies, only the expression the column sum would compute.
  bool summed = isSummedByTiledAmax(result, quantize);
  return addRecomputeCost(result, plan, typeOf(result).getNumElements(),
                          /*maxOps=*/summed ? 48 : 24, /*maxReads=*/summed ? 2 : 1, cost,
                          /*throughViews=*/true);
}

/// `mul(x, s)`, `mul(s, x)` or `div(x, s)` of an f32 tensor x in memory
/// (as f32, bf16 or f16) by an f32 scalar s (in memory, or computed by the
/// kernel from values that are), read only as the
/// gradients of tx.adam ops: global-norm clipping's coefficient, which
/// multiplies every gradient. The Adam kernels read x and scale each
/// element as they load it (the f32 rounding of the op itself), so the
/// scaled gradients are never stored: without this every gradient was
/// read and written once more, in a kernel of its own, and the norm's sum
/// of squares could not be packed (its tensors were not in memory).
ScaledGradient cuda::scaledGradient(Operation *op, const Materialization &plan) {
  if (!op || op->getNumResults() != 1 || !isa<tx::MulOp, tx::DivOp>(op))
    return {};
  Value result = op->getResult(0);
  auto type = typeOf(result);
  if (!type.getElementType().isF32() || result.use_empty())
    return {};
  auto isScalar = [&](Value v) {
    return typeOf(v).getRank() == 0 && typeOf(v).getElementType().isF32();
  };
  auto inMemory = [&](Value v) {
    return typeOf(v) == type && KernelBuilder::isStoredAsFloat(v, plan);
  };
  Value lhs = op->getOperand(0), rhs = op->getOperand(1);
  ScaledGradient scaled;
  if (inMemory(lhs) && isScalar(rhs))
    scaled = {lhs, rhs, isa<tx::DivOp>(op)};
  else if (isa<tx::MulOp>(op) && inMemory(rhs) && isScalar(lhs))
    scaled = {rhs, lhs, false};
  else
    return {};
  for (OpOperand &use : result.getUses()) {
    auto adam = dyn_cast<tx::AdamOp>(use.getOwner());
    unsigned n = adam ? adam.getNumParams() : 0;
    if (!adam || use.getOperandNumber() < n || use.getOperandNumber() >= 2 * n)
      return {};
  }
  return scaled;
}

/// A value computed from splat constants alone (a GELU's 0.5 and
/// sqrt(2/pi), the backward's products of them): every kernel that reads
/// it evaluates it from immediates, which LLVM folds to one, so it needs
/// no buffer however many kernels read it. Stored, each reader loaded it
/// once per element from memory LLVM cannot prove unchanged, and those
/// loads sat between a thread's vector loads and kept them apart.
/// Arithmetic whose folding at compile time gives the bits the GPU would
/// compute (IEEE-rounded basic operations and float conversions); not
/// tanh, erf, exp and the like, which LLVM would fold with the host's
/// library rather than libdevice, nor float-to-integer casts.
static bool foldsExactly(Operation *op) {
  if (auto cast = dyn_cast<tx::CastOp>(op))
    return isa<FloatType>(getElementTypeOrSelf(cast.getInput().getType())) &&
           isa<FloatType>(getElementTypeOrSelf(cast.getType()));
  return isa<tx::AddOp, tx::SubOp, tx::MulOp, tx::DivOp, tx::NegOp, tx::SqrtOp,
             tx::ReciprocalOp, tx::MaxOp, tx::MinOp>(op);
}

static bool isConstantExpression(Operation *op, llvm::DenseMap<Operation *, bool> &known) {
  if (auto found = known.find(op); found != known.end())
    return found->second;
  bool constant = false;
  if (auto c = dyn_cast<tx::ConstantOp>(op))
    constant = cast<ElementsAttr>(c.getValue()).isSplat();
  else if (foldsExactly(op))
    constant = llvm::all_of(op->getOperands(), [&](Value operand) {
      Operation *def = operand.getDefiningOp();
      return def && isConstantExpression(def, known);
    });
  known[op] = constant;
  return constant;
}

void cuda::decideMaterialization(func::FuncOp step, Materialization &plan,
                                  unsigned &fusedOps) {
  Block &body = step.getBody().front();
  for (BlockArgument arg : body.getArguments())
    plan.materialized.insert(arg);
  // Head splits cuDNN reads through strides are never computed.
  llvm::DenseSet<Operation *> attentionViewOps;
  findAttentionInputViews(step, plan, attentionViewOps);
  llvm::DenseMap<Operation *, bool> constantExpressions;
  for (Operation &op : body) {
    if (attentionViewOps.contains(&op))
      continue;
    if (isConstantExpression(&op, constantExpressions)) {
      // Stored only for a reader that does not compute its operands (a
      // GEMM, the step's results).
      for (Value result : op.getResults())
        if (llvm::any_of(result.getUsers(),
                         [&](Operation *user) { return !fusesOperand(user, result); }))
          plan.materialized.insert(result);
      continue;
    }
    if (isRecomputedCast(op, plan) || isRecomputedExpression(op, plan) ||
        isRecomputedTranspose(op, plan) || isNarrowedAndReduced(op) ||
        isQuantizedWithItsAmax(op, plan) || scaledGradient(&op, plan))
      continue;
    for (Value result : op.getResults()) {
      bool needed = !isElementalOp(&op);
      llvm::SmallPtrSet<Operation *, 4> users;
      for (Operation *user : result.getUsers())
        users.insert(user);
      if (users.size() != 1)
        needed = true;
      for (Operation *user : users)
        if (!fusesOperand(user, result))
          needed = true;
      if (needed)
        plan.materialized.insert(result);
    }
  }
  // A materialized view needs its input in memory (it aliases it), unless
  // only kernels that load through views read it (a reshape of a recomputed
  // cast, read by a row kernel: KernelBuilder::storageOf).
  for (Operation &op : llvm::reverse(body))
    if (isViewOp(&op) &&
        plan.isMaterialized(op.getResult(0))) {
      if (isLoadedView(op, plan)) {
        plan.materialized.erase(op.getResult(0));
        continue;
      }
      plan.materialized.insert(op.getOperand(0));
    }
  absorbCastsIntoStores(step, plan);
  fusedOps = 0;
  for (Operation &op : body)
    if (isElementalOp(&op) && op.getNumResults() &&
        !attentionViewOps.contains(&op) &&
        llvm::none_of(op.getResults(), [&](Value r) { return plan.isMaterialized(r); }))
      ++fusedOps;
}
