//===- DataParallel.cpp - tx-data-parallel: a ZeRO-1 step for N ranks -----===//
//
// SPDX-License-Identifier: Apache-2.0
// Rewrites a built training step into the step each of N data-parallel ranks
// runs: gradients reduce-scattered, the optimizer on this rank's shard,
// parameters all-gathered, global norm and loss all-reduced (Passes.td).
//
//===----------------------------------------------------------------------===//

#include "txopt/Dialect/Tx/IR/TxOps.h"
#include "txopt/Dialect/Tx/Transforms/Passes.h"
#include "txopt/Dialect/Tx/Transforms/TrainStep.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::txopt::tx {
#define GEN_PASS_DEF_DATAPARALLELPASS
#include "txopt/Dialect/Tx/Transforms/Passes.h.inc"
} // namespace mlir::txopt::tx

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::tx;

namespace {

/// The recipe key that marks a data-parallel step and holds its rank count.
constexpr StringLiteral kDataParallelKey = "data_parallel";

/// The return value named |name| (`tx.name` result attribute), or null.
OpOperand *namedResult(func::FuncOp step, func::ReturnOp ret, StringRef name) {
  for (unsigned i = 0, e = ret.getNumOperands(); i < e; ++i)
    if (auto attr = step.getResultAttrOfType<StringAttr>(i, tx::kNameAttrName))
      if (attr.getValue() == name)
        return &ret->getOpOperand(i);
  return nullptr;
}

/// A value's length once flattened and padded to a multiple of |ranks|.
int64_t paddedLength(Type type, int64_t ranks) {
  int64_t n = cast<RankedTensorType>(type).getNumElements();
  return (n + ranks - 1) / ranks * ranks;
}

RankedTensorType vectorType(Type like, int64_t length) {
  return RankedTensorType::get({length},
                               cast<RankedTensorType>(like).getElementType());
}

/// |value| flattened to 1-D and padded with zeros to paddedLength: zeros
/// add nothing to a gradient's sum of squares and stay zero under every
/// optimizer (their gradient and moments are zero; decay of 0 is 0).
Value flattenAndPad(ImplicitLocOpBuilder &b, Value value, int64_t ranks) {
  auto type = cast<RankedTensorType>(value.getType());
  int64_t n = type.getNumElements();
  if (type.getRank() != 1)
    value = ReshapeOp::create(b, vectorType(type, n), value);
  int64_t padded = paddedLength(type, ranks);
  if (padded == n)
    return value;
  Value zeros = ConstantOp::create(
      b, cast<ElementsAttr>(b.getZeroAttr(vectorType(type, padded - n))));
  return ConcatOp::create(b, ValueRange{value, zeros}, b.getI64IntegerAttr(0));
}

/// The inverse of flattenAndPad: the first n elements in |like|'s shape.
Value unpadAndReshape(ImplicitLocOpBuilder &b, Value vector, Type like) {
  auto type = cast<RankedTensorType>(like);
  int64_t n = type.getNumElements();
  if (cast<RankedTensorType>(vector.getType()).getDimSize(0) != n)
    vector = SliceOp::create(b, vector, b.getDenseI64ArrayAttr({0}),
                             b.getDenseI64ArrayAttr({n}),
                             b.getDenseI64ArrayAttr({0}),
                             b.getDenseI64ArrayAttr({1}));
  if (type.getRank() != 1)
    vector = ReshapeOp::create(b, type, vector);
  return vector;
}

/// Whether |op| scales a tensor by a 0-d scalar (`x * s`, `s * x`, `x / s`):
/// the ops between a gradient and the optimizer (clipping, unscaling).
/// Returns the tensor operand's index, or nothing.
std::optional<unsigned> scaledOperand(Operation *op) {
  if (!isa<MulOp, DivOp>(op))
    return std::nullopt;
  Type resultType = op->getResult(0).getType();
  auto isScalar = [](Value v) {
    return cast<RankedTensorType>(v.getType()).getRank() == 0;
  };
  for (unsigned i : {0u, 1u})
    if (op->getOperand(i).getType() == resultType &&
        isScalar(op->getOperand(1 - i)) && (i == 0 || isa<MulOp>(op)))
      return i;
  return std::nullopt;
}

/// One parameter of an optimizer op, on its way to being sharded.
struct ShardedParam {
  /// The gradient as the global norm squares it, and its reduce-scattered
  /// shard.
  Value gradient, gradientShard;
  /// The scalar multiplies/divides from `gradient` to the optimizer's
  /// operand, innermost first.
  SmallVector<Operation *> chain;
};

class DataParallelRewriter {
public:
  DataParallelRewriter(func::FuncOp step, int64_t ranks)
      : step(step), ranks(ranks) {}

  LogicalResult run();

private:
  LogicalResult checkSupported();
  /// The step's @micro_step, @eval and @logits (stepCompanions) take its
  /// arguments: its sharded ones take the shard types there too.
  LogicalResult retypeCompanions();
  /// Finds, for |optimizer|'s parameter |index|, the gradient the norm
  /// squares and the scaling chain after it.
  LogicalResult traceGradient(Operation *optimizer, Value operand,
                              unsigned index, ShardedParam &param);
  /// Replaces |optimizer| by the same update on this rank's shards.
  LogicalResult shardOptimizer(Operation *optimizer,
                               MutableArrayRef<ShardedParam> params);
  /// This rank's shard of optimizer state |state| of |optimizer| (which
  /// |sharded| clones): the step argument retyped, or zeros. Null when the
  /// state is something else.
  Value shardState(ImplicitLocOpBuilder &b, Operation *optimizer,
                   Operation *sharded, Value state, Type shardType);
  bool isShardableState(Operation *optimizer, Value state);

  func::FuncOp step;
  int64_t ranks;
  /// The gradients the global norm squares (`tx.mul %g, %g`).
  llvm::SmallPtrSet<Value, 16> squaredGradients;
};

LogicalResult DataParallelRewriter::checkSupported() {
  auto recipe = step->getAttrOfType<DictionaryAttr>(kTrainStepAttrName);
  if (recipe.get(kDataParallelKey))
    return step.emitError("the step is already data-parallel");
  // Loss scaling: the ranks must skip together, so the finite check must be
  // the one tx-build-train-step builds (its sum is all-reduced in run()).
  bool scaled = false;
  for (unsigned i = 0, e = step.getNumArguments(); i < e; ++i)
    if (auto role = step.getArgAttrOfType<StringAttr>(i, kRoleAttrName))
      scaled |= role.getValue() == "loss_scale";
  auto ret = step.getBody().empty() ? func::ReturnOp()
                                    : dyn_cast<func::ReturnOp>(step.getBody().front().getTerminator());
  OpOperand *skipped = ret ? namedResult(step, ret, "skipped") : nullptr;
  if ((scaled || skipped) && (!skipped || !skipped->get().getDefiningOp<IsNaNOp>()))
    return step.emitError("expected a loss-scaling step's result 'skipped' to be a tx.is_nan "
                          "(as tx-build-train-step builds it)");
  // @micro_step, @eval and @logits take the step's arguments; the optimizer
  // state among them becomes shards (retypeCompanions), which they must not
  // read.
  for (func::FuncOp func : stepCompanions(step)) {
    if (func.getNumArguments() != step.getNumArguments())
      return func.emitError("expected the step's ")
             << step.getNumArguments() << " arguments, but got " << func.getNumArguments();
    for (unsigned i = 0, e = step.getNumArguments(); i < e; ++i) {
      auto role = step.getArgAttrOfType<StringAttr>(i, kRoleAttrName);
      bool state = role && llvm::is_contained(
                               {StringRef("exp_avg"), StringRef("exp_avg_sq"),
                                StringRef("momentum_buffer")},
                               role.getValue());
      if (state && !func.getArgument(i).use_empty())
        return func.emitError("reads argument ")
               << i << " ('" << role.getValue()
               << "' state), which the data-parallel step shards";
    }
  }
  return success();
}

/// Whether |user| is the select of a skipped step (loss scaling) that keeps
/// state argument |arg| instead of |optimizer|'s new value and is only
/// returned: `where(is_nan(...), arg, new)`, as tx-build-train-step builds
/// it. It follows the state into shards.
static bool isSkipSelect(Operation *user, Value arg, Operation *optimizer) {
  auto select = dyn_cast<WhereOp>(user);
  return select && select.getLhs() == arg && select.getRhs().getDefiningOp() == optimizer &&
         select.getCondition().getDefiningOp<IsNaNOp>() &&
         llvm::all_of(select->getUsers(),
                      [](Operation *u) { return isa<func::ReturnOp>(u); });
}

LogicalResult DataParallelRewriter::traceGradient(Operation *optimizer,
                                                  Value operand, unsigned index,
                                                  ShardedParam &param) {
  Value value = operand;
  while (!squaredGradients.contains(value)) {
    Operation *def = value.getDefiningOp();
    std::optional<unsigned> scaled = def ? scaledOperand(def) : std::nullopt;
    if (!scaled)
      return optimizer->emitError("cannot trace gradient #")
             << index << " back to the gradient the global norm squares "
                "(expected only scalar multiplies or divides in between)";
    param.chain.push_back(def);
    value = def->getOperand(*scaled);
  }
  std::reverse(param.chain.begin(), param.chain.end());
  param.gradient = value;
  return success();
}

/// Whether shardState can shard |state| of |optimizer|: a step argument
/// that nothing else reads (its type can change), or a zero splat.
bool DataParallelRewriter::isShardableState(Operation *optimizer, Value state) {
  if (auto arg = dyn_cast<BlockArgument>(state))
    return arg.getOwner() == &step.getBody().front() &&
           llvm::all_of(arg.getUsers(), [&](Operation *user) {
             return user == optimizer || isSkipSelect(user, arg, optimizer);
           });
  auto constant = state.getDefiningOp<ConstantOp>();
  auto splat = constant ? dyn_cast<SplatElementsAttr>(constant.getValue())
                        : SplatElementsAttr();
  return splat && splat.getSplatValue<APFloat>().isZero();
}

Value DataParallelRewriter::shardState(ImplicitLocOpBuilder &b,
                                       Operation *optimizer, Operation *sharded,
                                       Value state, Type shardType) {
  if (auto arg = dyn_cast<BlockArgument>(state)) {
    if (arg.getOwner() != &step.getBody().front() ||
        llvm::any_of(arg.getUsers(), [&](Operation *user) {
          return user != optimizer && user != sharded && !isSkipSelect(user, arg, optimizer);
        }))
      return {};
    // A skipped step's select keeps the shard (its other operand becomes
    // the sharded optimizer's result).
    for (Operation *user : arg.getUsers())
      if (isSkipSelect(user, arg, optimizer))
        user->getResult(0).setType(shardType);
    // Checkpoints gather the shards back into this shape (and split them
    // again for any rank count).
    step.setArgAttr(arg.getArgNumber(), kShardOfAttrName,
                    DenseI64ArrayAttr::get(step.getContext(),
                                           cast<RankedTensorType>(arg.getType()).getShape()));
    arg.setType(shardType);
    return arg;
  }
  // SGD without momentum passes zero buffers (constants) and keeps no state.
  if (auto constant = state.getDefiningOp<ConstantOp>()) {
    auto splat = dyn_cast<SplatElementsAttr>(constant.getValue());
    if (splat && splat.getSplatValue<APFloat>().isZero())
      return ConstantOp::create(b, cast<ElementsAttr>(b.getZeroAttr(shardType)));
  }
  return {};
}

LogicalResult
DataParallelRewriter::shardOptimizer(Operation *optimizer,
                                     MutableArrayRef<ShardedParam> params) {
  ImplicitLocOpBuilder b(optimizer->getLoc(), optimizer);
  Operation *sharded = b.clone(*optimizer);
  // The shards are computed right before the update that reads them.
  b.setInsertionPoint(sharded);
  unsigned numParams = params.size();
  // Operands: params, grads, then one list per optimizer state (exp_avg and
  // exp_avg_sq, or momentum_buffer); results: new params, then the states.
  unsigned numStates = optimizer->getNumResults() / numParams - 1;
  for (auto [k, param] : llvm::enumerate(params)) {
    Value fullParam = optimizer->getOperand(k);
    Type shardType = param.gradientShard.getType();
    Value paramShard = RankShardOp::create(
        b, shardType, flattenAndPad(b, fullParam, ranks), ranks);
    sharded->setOperand(k, paramShard);

    Value grad = param.gradientShard;
    for (Operation *scale : param.chain) {
      unsigned tensorIndex = *scaledOperand(scale);
      Value scalar = scale->getOperand(1 - tensorIndex);
      Value lhs = tensorIndex == 0 ? grad : scalar;
      Value rhs = tensorIndex == 0 ? scalar : grad;
      grad = isa<MulOp>(scale) ? Value(MulOp::create(b, lhs, rhs))
                               : Value(DivOp::create(b, lhs, rhs));
    }
    sharded->setOperand(numParams + k, grad);

    for (unsigned s = 0; s < numStates; ++s) {
      unsigned operandIndex = (2 + s) * numParams + k;
      Value state = shardState(b, optimizer, sharded,
                               optimizer->getOperand(operandIndex), shardType);
      if (!state)
        return optimizer->emitError("expected optimizer state operand #")
               << operandIndex << " to be a step argument only the optimizer "
                  "reads, or zeros";
      sharded->setOperand(operandIndex, state);
      sharded->getResult((1 + s) * numParams + k).setType(shardType);
    }
    sharded->getResult(k).setType(shardType);
  }
  b.setInsertionPointAfter(sharded);
  for (unsigned k = 0; k < numParams; ++k) {
    Value oldParam = optimizer->getResult(k);
    Type paddedType = vectorType(oldParam.getType(),
                                 paddedLength(oldParam.getType(), ranks));
    Value gathered =
        AllGatherOp::create(b, paddedType, sharded->getResult(k), ranks);
    oldParam.replaceAllUsesWith(
        unpadAndReshape(b, gathered, oldParam.getType()));
  }
  for (unsigned i = numParams, e = optimizer->getNumResults(); i < e; ++i)
    optimizer->getResult(i).replaceAllUsesWith(sharded->getResult(i));
  optimizer->erase();
  return success();
}

LogicalResult DataParallelRewriter::run() {
  if (failed(checkSupported()))
    return failure();
  Block &body = step.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  OpOperand *gradNorm = namedResult(step, ret, "grad_norm");
  OpOperand *loss = namedResult(step, ret, "loss");
  auto sqrt = gradNorm ? gradNorm->get().getDefiningOp<SqrtOp>() : SqrtOp();
  if (!sqrt || !loss)
    return step.emitError("expected the step's results 'loss' and "
                          "'grad_norm', the latter a tx.sqrt (as "
                          "tx-build-train-step builds them)");

  // The gradients are what the norm squares: walk its operand's producers.
  SmallVector<Value> worklist{sqrt.getInput()};
  llvm::SmallPtrSet<Operation *, 32> visited;
  while (!worklist.empty()) {
    Operation *def = worklist.pop_back_val().getDefiningOp();
    if (!def || !visited.insert(def).second)
      continue;
    if (auto mul = dyn_cast<MulOp>(def); mul && mul.getLhs() == mul.getRhs()) {
      squaredGradients.insert(mul.getLhs());
      continue;
    }
    if (isa<AddOp, ReduceSumOp>(def))
      llvm::append_range(worklist, def->getOperands());
  }

  SmallVector<Operation *> optimizers;
  for (Operation &op : body)
    if (isa<AdamOp, SGDOp>(op))
      optimizers.push_back(&op);
  if (optimizers.empty())
    return step.emitError("expected a tx.adam or tx.sgd in the step");

  // Trace every gradient and check every state operand first, so that a
  // failure leaves the step unchanged.
  SmallVector<SmallVector<ShardedParam>> params;
  for (Operation *optimizer : optimizers) {
    unsigned numParams = isa<AdamOp>(optimizer)
                             ? cast<AdamOp>(optimizer).getNumParams()
                             : cast<SGDOp>(optimizer).getNumParams();
    params.emplace_back(numParams);
    for (unsigned k = 0; k < numParams; ++k)
      if (failed(traceGradient(optimizer, optimizer->getOperand(numParams + k),
                               k, params.back()[k])))
        return failure();
    unsigned numStates = optimizer->getNumResults() / numParams - 1;
    for (unsigned i = 2 * numParams, e = (2 + numStates) * numParams; i < e; ++i)
      if (!isShardableState(optimizer, optimizer->getOperand(i)))
        return optimizer->emitError("expected optimizer state operand #")
               << i << " to be a step argument only the optimizer reads, "
                  "or zeros";
  }

  // Reduce-scatter every gradient where the norm is taken (they all exist
  // there), and take the global norm from the shards' sums of squares.
  ImplicitLocOpBuilder b(sqrt.getLoc(), sqrt);
  Value localSumOfSquares;
  for (MutableArrayRef<ShardedParam> group : params) {
    for (ShardedParam &param : group) {
      Value padded = flattenAndPad(b, param.gradient, ranks);
      int64_t shardLength =
          cast<RankedTensorType>(padded.getType()).getDimSize(0) / ranks;
      param.gradientShard = ReduceScatterOp::create(
          b, vectorType(padded.getType(), shardLength), padded,
          CollectiveReduction::mean, ranks);
      Value square = MulOp::create(b, param.gradientShard, param.gradientShard);
      Value partial = ReduceSumOp::create(b, square, b.getDenseI64ArrayAttr({}),
                                          /*keep_dims=*/nullptr);
      localSumOfSquares = localSumOfSquares
                              ? AddOp::create(b, localSumOfSquares, partial)
                              : partial;
    }
  }
  sqrt->setOperand(0, AllReduceOp::create(b, localSumOfSquares.getType(),
                                          localSumOfSquares,
                                          CollectiveReduction::sum, ranks));

  for (auto [optimizer, group] : llvm::zip(optimizers, params))
    if (failed(shardOptimizer(optimizer, group)))
      return failure();

  // FP8 scaling state is replicated: every rank must derive the same
  // scales, from the amax over all ranks' tensors (Transformer Engine
  // reduces its amaxes the same way). The max over ranks of the ranks'
  // amaxes is also what the plain step on the whole batch sees.
  SmallVector<Operation *> scaleUpdates;
  for (Operation &op : body)
    if (isa<FP8ScaleUpdateOp, FP8CurrentScaleOp>(op))
      scaleUpdates.push_back(&op);
  for (Operation *update : scaleUpdates) {
    OpOperand &amax = isa<FP8ScaleUpdateOp>(update)
                          ? cast<FP8ScaleUpdateOp>(update).getAmaxMutable()
                          : cast<FP8CurrentScaleOp>(update).getAmaxMutable();
    b.setInsertionPoint(update);
    amax.set(AllReduceOp::create(b, amax.get().getType(), amax.get(),
                                 CollectiveReduction::max, ranks));
  }

  b.setInsertionPoint(ret);
  loss->set(AllReduceOp::create(b, loss->get().getType(), loss->get(),
                                CollectiveReduction::mean, ranks));

  // Loss scaling: `skipped` is is_nan of a sum over this rank's gradients
  // (tx-build-train-step). Summed over the ranks first, a non-finite
  // gradient on any rank skips the step on all of them, so the scale, the
  // growth tracker and the state stay identical everywhere.
  if (OpOperand *skipped = namedResult(step, ret, "skipped")) {
    auto check = skipped->get().getDefiningOp<IsNaNOp>(); // checkSupported
    b.setInsertionPoint(check);
    Value local = check->getOperand(0);
    check->setOperand(0, AllReduceOp::create(b, local.getType(), local,
                                             CollectiveReduction::sum, ranks));
  }

  // The local norm computation and the full-size gradient uses are dead now.
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
    if (isOpTriviallyDead(&op))
      op.erase();
  step.setType(FunctionType::get(step.getContext(), body.getArgumentTypes(),
                                 ret.getOperandTypes()));
  NamedAttrList recipe(step->getAttrOfType<DictionaryAttr>(kTrainStepAttrName));
  recipe.set(kDataParallelKey, b.getI64IntegerAttr(ranks));
  step->setAttr(kTrainStepAttrName, recipe.getDictionary(step.getContext()));
  return retypeCompanions();
}

/// @micro_step, @eval and @logits take the step's arguments (drivers bind
/// them by position): the optimizer state they never read becomes shards
/// there too. Each runs on one rank's batch with the whole parameters every
/// rank holds, with no collective. Gradient accumulation's micro-step so
/// adds this rank's gradients into its own whole-size accumulators, and the
/// step reduce-scatters the rank's mean over its micro-batches once (what
/// DDP's no_sync does): the mean over ranks of those means is the gradient
/// of the global batch of ranks x micro-batches x B rows.
LogicalResult DataParallelRewriter::retypeCompanions() {
  for (func::FuncOp func : stepCompanions(step)) {
    // checkSupported made sure: as many arguments, no sharded one read.
    Block &entry = func.getBody().front();
    for (unsigned i = 0, e = step.getNumArguments(); i < e; ++i)
      if (step.getArgAttr(i, kShardOfAttrName))
        entry.getArgument(i).setType(step.getArgument(i).getType());
    func.setType(FunctionType::get(func.getContext(), entry.getArgumentTypes(),
                                   func.getResultTypes()));
  }
  return success();
}

struct DataParallelPass : tx::impl::DataParallelPassBase<DataParallelPass> {
  using Base::Base;

  void runOnOperation() override {
    if (ranks < 1) {
      getOperation().emitError("tx-data-parallel: expected ranks >= 1, but got ")
          << ranks;
      return signalPassFailure();
    }
    // One rank keeps its collectives (each the identity, or a copy): that
    // is the step a launcher starts with WORLD_SIZE=1, and the one run
    // that exercises NCCL on a single GPU (docs/DataParallel.md).
    SmallVector<func::FuncOp> steps;
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (func->hasAttr(kTrainStepAttrName))
        steps.push_back(func);
    for (func::FuncOp step : steps)
      if (failed(DataParallelRewriter(step, ranks).run()))
        return signalPassFailure();
  }
};

} // namespace
