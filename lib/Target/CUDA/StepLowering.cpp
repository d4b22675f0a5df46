//===- StepLowering.cpp - a tx training step to kernels and GEMMs ---------===//
//
// SPDX-License-Identifier: Apache-2.0
// Lowers a training step: runs the kernel grouping (Grouping.cpp), emits one
// command per kernel, cuBLASLt GEMM (GemmLowering.cpp), fused attention,
// memset and copy in program order (through LoweringContext.cpp), binds the
// step's arguments and results, and plans the arena.
//
//===----------------------------------------------------------------------===//

#include "KernelUtils.h"
#include "Lowering.h"

#include "txopt/Dialect/Tx/IR/TxOps.h"
#include "txopt/Dialect/Tx/Transforms/AttentionBias.h"
#include "txopt/Dialect/Tx/Transforms/AttentionCasts.h"
#include "txopt/Dialect/Tx/Transforms/CrossEntropyRows.h"
#include "txopt/Dialect/Tx/Transforms/GemmBias.h"
#include "txopt/Dialect/Tx/Transforms/LossBiasGradient.h"
#include "txopt/Dialect/Tx/Transforms/GemmGelu.h"
#include "txopt/Dialect/Tx/Transforms/GemmNormalForm.h"
#include "txopt/Dialect/Tx/Transforms/GemmTransposes.h"
#include "txopt/Dialect/Tx/Transforms/PadLossClasses.h"
#include "txopt/Dialect/Tx/Transforms/Rematerialize.h"
#include "txopt/Dialect/Tx/Transforms/TrainStep.h"
#include "txopt/Dialect/Tx/IR/WeightSource.h"
#include "txopt/Reference/Executor.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"

#include <map>

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::cuda;

//===----------------------------------------------------------------------===//
// Bindings
//===----------------------------------------------------------------------===//

/// Raw little-endian bytes of a dense attribute in its element type.
static std::vector<uint8_t> rawBytes(ElementsAttr attr) {
  auto type = cast<RankedTensorType>(attr.getType());
  Type element = type.getElementType();
  DType dtype = *dtypeOf(element);
  unsigned width = dtypeBytes(dtype);
  std::vector<uint8_t> bytes(type.getNumElements() * width);
  size_t i = 0;
  if (isa<FloatType>(element)) {
    for (APFloat v : attr.getValues<APFloat>()) {
      uint64_t bits = v.bitcastToAPInt().getZExtValue();
      std::memcpy(bytes.data() + i * width, &bits, width);
      ++i;
    }
  } else {
    for (APInt v : attr.getValues<APInt>()) {
      uint64_t bits = element.isInteger(1) ? (v.getBoolValue() ? 1 : 0) : v.getZExtValue();
      std::memcpy(bytes.data() + i * width, &bits, width);
      ++i;
    }
  }
  return bytes;
}

/// Upper bound of the random values an integer batch argument may take:
/// the size of the tables it indexes and the classes of the losses it labels.
static int64_t indexBound(Value arg) {
  int64_t bound = 0;
  llvm::SmallVector<Value> work{arg};
  llvm::DenseSet<Value> seen;
  auto tighten = [&](int64_t b) { bound = bound == 0 ? b : std::min(bound, b); };
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (!seen.insert(v).second)
      continue;
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (auto gather = dyn_cast<tx::GatherOp>(user)) {
        if (use.getOperandNumber() == 1) {
          auto shape = typeOf(gather.getData()).getShape();
          int64_t axis = static_cast<int64_t>(gather.getAxis()) < 0 ? static_cast<int64_t>(gather.getAxis()) + shape.size() : static_cast<int64_t>(gather.getAxis());
          tighten(shape[axis]);
        }
      } else if (auto loss = dyn_cast<tx::SoftmaxCrossEntropyLossOp>(user)) {
        // A padded loss's labels stay below its real classes
        // (tx-pad-loss-classes): random labels and --data's check use them.
        auto real = loss->getAttrOfType<IntegerAttr>(tx::kPaddedClassesAttr);
        tighten(real ? real.getInt() : typeOf(loss.getScores()).getShape()[1]);
      } else if (isa<tx::ReshapeOp, tx::CastOp, tx::SliceOp, tx::PadOp,
                     tx::ConcatOp, tx::SqueezeOp, tx::UnsqueezeOp,
                     tx::IdentityOp, tx::ExpandOp, tx::TransposeOp>(user)) {
        for (Value r : user->getResults())
          work.push_back(r);
      }
    }
  }
  return bound;
}

static LogicalResult bindArguments(LoweringContext &ctx, ModuleOp module,
                                   func::FuncOp step) {
  Block &body = step.getBody().front();
  for (BlockArgument arg : body.getArguments()) {
    unsigned i = arg.getArgNumber();
    auto type = typeOf(arg);
    auto dtype = dtypeOf(type.getElementType());
    if (!dtype)
      return step.emitError("argument ") << i << " has type " << type
                                         << ", which the GPU backend cannot store";
    ArgumentBinding binding;
    auto name = step.getArgAttrOfType<StringAttr>(i, tx::kNameAttrName);
    auto role = step.getArgAttrOfType<StringAttr>(i, tx::kRoleAttrName);
    binding.name = name ? name.str() : "arg" + std::to_string(i);
    binding.role = role ? role.str() : "";
    if (auto sites = step.getArgAttrOfType<ArrayAttr>(i, tx::kFP8SitesAttrName))
      for (Attribute site : sites)
        if (auto text = dyn_cast<StringAttr>(site))
          binding.fp8Sites.push_back(text.str());
    if (auto whole = step.getArgAttrOfType<DenseI64ArrayAttr>(i, tx::kShardOfAttrName))
      binding.shardOf.assign(whole.asArrayRef().begin(), whole.asArrayRef().end());
    binding.dtype = *dtype;
    binding.shape.assign(type.getShape().begin(), type.getShape().end());
    binding.slot = ctx.bufferFor(arg);
    ctx.buffers[binding.slot].persistent = true;
    ctx.buffers[binding.slot].what = "argument " + binding.name;
    if (auto init = step.getArgAttr(i, tx::kInitAttrName)) {
      binding.init = ArgumentBinding::Init::Splat;
      if (auto f = dyn_cast<FloatAttr>(init))
        binding.splat = f.getValueAsDouble();
      else if (auto n = dyn_cast<IntegerAttr>(init))
        binding.splat = static_cast<double>(n.getInt());
      if (binding.splat == 0.0)
        binding.init = ArgumentBinding::Init::Zeros;
    } else if (auto ref = step.getArgAttrOfType<FlatSymbolRefAttr>(i, "tx.parameter")) {
      auto param = SymbolTable::lookupNearestSymbolFrom<tx::ParameterOp>(module, ref);
      if (!param)
        return step.emitError("argument ") << i << " names a missing parameter " << ref;
      auto sourceType = dtypeOf(param.getType().getElementType());
      if (!sourceType)
        return param.emitError("parameter type not supported by the GPU backend");
      binding.sourceType = *sourceType;
      if (auto source = param.getSourceAttr()) {
        // Weights by reference: the runtime reads them from the model's
        // external-data file; the artifact stays small.
        binding.init = ArgumentBinding::Init::External;
        binding.path = source.getPath().str();
        binding.offset = source.getOffset();
        binding.length = source.getLength();
        if (auto dir = module->getAttrOfType<StringAttr>(tx::kModelDirAttrName))
          ctx.program.weightsDir = dir.str();
      } else {
        binding.init = ArgumentBinding::Init::Inline;
        binding.data = rawBytes(*param.getInitialValue());
      }
    } else {
      binding.init = ArgumentBinding::Init::Batch;
      if (isa<IntegerType>(type.getElementType()))
        binding.indexBound = indexBound(arg);
    }
    ctx.program.arguments.push_back(std::move(binding));
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Memory plan
//===----------------------------------------------------------------------===//

/// Offsets for every buffer: arguments and constants first, contiguous and
/// never reused; then the temporaries by first fit over their live ranges
/// (a buffer is free after the last command that touches it).
static void planMemory(LoweringContext &ctx) {
  auto align = [](uint64_t x) {
    return (x + kSlotAlignment - 1) / kSlotAlignment * kSlotAlignment;
  };
  StepProgram &program = ctx.program;
  program.slots.assign(ctx.buffers.size(), Slot());
  uint64_t top = 0;
  for (size_t i = 0; i < ctx.buffers.size(); ++i)
    if (ctx.buffers[i].persistent && ctx.buffers[i].partOf < 0) {
      program.slots[i] = {top, ctx.buffers[i].bytes};
      top += align(ctx.buffers[i].bytes);
    }
  program.stats.argumentBytes = top;
  uint64_t base = top;
  std::vector<size_t> order;
  for (size_t i = 0; i < ctx.buffers.size(); ++i)
    if (!ctx.buffers[i].persistent && ctx.buffers[i].partOf < 0) {
      order.push_back(i);
      program.stats.unplannedBytes += align(ctx.buffers[i].bytes);
    }
  llvm::sort(order, [&](size_t x, size_t y) {
    return ctx.buffers[x].firstCommand < ctx.buffers[y].firstCommand;
  });
  // Live allocations: offset -> (end offset, last command).
  std::map<uint64_t, std::pair<uint64_t, int>> live;
  uint64_t end = base;
  for (size_t i : order) {
    const Buffer &buffer = ctx.buffers[i];
    for (auto it = live.begin(); it != live.end();)
      it = it->second.second < buffer.firstCommand ? live.erase(it) : std::next(it);
    uint64_t size = align(buffer.bytes), offset = base;
    for (auto &[start, info] : live) {
      if (start >= offset + size)
        break;
      offset = std::max(offset, info.first);
    }
    live[offset] = {offset + size, buffer.lastCommand};
    program.slots[i] = {offset, buffer.bytes};
    end = std::max(end, offset + size);
  }
  program.arenaBytes = end;
  program.stats.scratchBytes = end - base;
  for (size_t i = 0; i < ctx.buffers.size(); ++i)
    if (const Buffer &buffer = ctx.buffers[i]; buffer.partOf >= 0)
      program.slots[i] = {program.slots[buffer.partOf].offset + buffer.offsetInWhole,
                          buffer.bytes};

  // The command with the most temporary bytes live, and its largest ones.
  int commands = 0;
  for (size_t i : order)
    commands = std::max(commands, ctx.buffers[i].lastCommand + 1);
  std::vector<int64_t> delta(commands + 1, 0);
  for (size_t i : order) {
    const Buffer &buffer = ctx.buffers[i];
    if (buffer.firstCommand < 0)
      continue;
    delta[buffer.firstCommand] += align(buffer.bytes);
    delta[buffer.lastCommand + 1] -= align(buffer.bytes);
  }
  int64_t running = 0;
  for (int c = 0; c < commands; ++c) {
    running += delta[c];
    if (static_cast<uint64_t>(running) > program.stats.peakLiveBytes) {
      program.stats.peakLiveBytes = running;
      program.stats.peakCommand = c;
    }
  }
  if (program.stats.peakCommand < 0)
    return;
  int peak = program.stats.peakCommand;
  program.stats.peakOrigin = static_cast<size_t>(peak) < program.commands.size()
                                 ? program.commands[peak].origin
                                 : "a function beside the step";
  std::vector<size_t> atPeak;
  for (size_t i : order)
    if (ctx.buffers[i].firstCommand <= peak && peak <= ctx.buffers[i].lastCommand)
      atPeak.push_back(i);
  llvm::stable_sort(atPeak, [&](size_t x, size_t y) {
    return ctx.buffers[x].bytes > ctx.buffers[y].bytes;
  });
  constexpr size_t kListed = 8;
  for (size_t i : llvm::ArrayRef(atPeak).take_front(kListed)) {
    const Buffer &buffer = ctx.buffers[i];
    program.stats.peakBuffers.push_back({static_cast<unsigned>(i), buffer.bytes,
                                         buffer.firstCommand, buffer.lastCommand, buffer.what});
  }
}

//===----------------------------------------------------------------------===//
// The step
//===----------------------------------------------------------------------===//

/// A tx.constant zero splat of f32 whose every use returns it as the next
/// value of an argument (gradient accumulation resetting its accumulators):
/// lowered as a memset of the argument, not as a constant in the arena
/// plus a copy.
static bool isCarriedZero(Value value) {
  auto constant = value.getDefiningOp<tx::ConstantOp>();
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!constant || !type || !type.getElementType().isF32() || value.use_empty())
    return false;
  auto splat = dyn_cast<SplatElementsAttr>(constant.getValue());
  if (!splat || !splat.getSplatValue<APFloat>().isPosZero())
    return false;
  for (OpOperand &use : value.getUses()) {
    auto ret = dyn_cast<func::ReturnOp>(use.getOwner());
    if (!ret)
      return false;
    auto func = cast<func::FuncOp>(ret->getParentOp());
    if (!func.getResultAttr(use.getOperandNumber(), tx::kNextAttrName))
      return false;
  }
  return true;
}

/// The GEMM behind gradient |grad| when it can add into an f32 accumulator
/// itself: an f32 tx.blas_gemm without c read only by the sum, or a bf16/f16
/// one read only by its cast to f32 (cuBLASLt computes in f32 and writes D
/// in f32 from 16-bit A and B). Null otherwise.
static tx::BlasGemmOp accumulatingGemm(Value grad, RankedTensorType accType) {
  if (!grad.hasOneUse() || grad.getType() != accType ||
      !accType.getElementType().isF32())
    return nullptr;
  Value product = grad;
  if (auto cast = grad.getDefiningOp<tx::CastOp>()) {
    product = cast.getInput();
    Type from = typeOf(product).getElementType();
    if (!from.isBF16() && !from.isF16())
      return nullptr;
  }
  auto matmul = product.getDefiningOp<tx::BlasGemmOp>();
  if (!matmul || matmul.isFP8() || matmul.getC() || !product.hasOneUse() ||
      typeOf(product).getShape() != accType.getShape())
    return nullptr;
  return matmul;
}

/// Gradient accumulation adds each gradient (and the loss) into its
/// accumulator argument `acc` where it is produced, so nothing re-reads a
/// stored gradient to sum it later:
/// - the micro-step returns `acc + grad` as the next value of `acc`, its
///   only reader: the add's kernel writes the sum over `acc` in place
///   (elementwise, each element read before it is written at the same
///   index), so no copy follows;
/// - the step (the last micro-batch) reads `acc + grad` for the update and
///   resets `acc` with a memset after everything else (bindResults).
/// When `grad` comes from a GEMM (accumulatingGemm) there is no add at all,
/// in either: the GEMM accumulates into `acc` itself (beta = 1, C = D =
/// acc, f32 D even from bf16 operands), saving the gradient's write, its
/// cast and both reads of the add; the step's update then reads `acc`.
/// In the step an add without such a GEMM stays fused into its readers.
static void accumulateInPlace(LoweringContext &ctx, func::FuncOp func,
                              bool isStep) {
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  // The result each argument's next value comes from.
  llvm::DenseMap<unsigned, Value> nextValue;
  for (auto [i, value] : llvm::enumerate(ret.getOperands()))
    if (auto next = func.getResultAttrOfType<IntegerAttr>(i, tx::kNextAttrName))
      nextValue[next.getInt()] = value;
  for (BlockArgument acc : func.getArguments()) {
    if (!acc.hasOneUse())
      continue;
    auto add = dyn_cast<tx::AddOp>(*acc.getUsers().begin());
    if (!add || add.getType() != acc.getType())
      continue;
    Value sum = add.getResult(), next = nextValue.lookup(acc.getArgNumber());
    Value grad = add.getLhs() == acc ? add.getRhs() : add.getLhs();
    tx::BlasGemmOp gemm = accumulatingGemm(grad, cast<RankedTensorType>(acc.getType()));
    if (isStep) {
      if (!next || !isCarriedZero(next) || !gemm)
        continue;
      ctx.plan.materialized.insert(sum); // its readers load acc
    } else if (next != sum || !sum.hasOneUse() || !ctx.plan.isMaterialized(sum)) {
      continue;
    }
    unsigned slot = ctx.bufferFor(acc);
    ctx.bufferOfValue[sum] = slot;
    if (!gemm)
      continue;
    ctx.bufferOfValue[gemm.getResult()] = slot;
    ctx.accumulatingGemms.insert(gemm.getResult());
    ctx.loweredElsewhere.insert(add);
    if (Operation *widen = grad.getDefiningOp<tx::CastOp>()) {
      ctx.bufferOfValue[grad] = slot;
      ctx.loweredElsewhere.insert(widen);
    }
  }
}

/// FP8 weight caching: the cached weights' amax arguments as parts of one
/// persistent block, 256 bytes apart (each a slot of its own), so that one
/// memset zeroes them all before the step's first weight cast (its amax
/// kernels fold into them atomically), not one memset per weight.
static void packCachedWeightAmaxes(LoweringContext &ctx, func::FuncOp step) {
  llvm::SmallVector<BlockArgument> amaxes;
  for (BlockArgument arg : step.getArguments())
    if (auto role = step.getArgAttrOfType<StringAttr>(arg.getArgNumber(), tx::kRoleAttrName);
        role && role.getValue() == "fp8_weight_amax")
      amaxes.push_back(arg);
  if (amaxes.size() < 2)
    return;
  unsigned block = ctx.scratch(amaxes.size() * kSlotAlignment, "cached weight amaxes");
  ctx.buffers[block].persistent = true;
  for (auto [i, arg] : llvm::enumerate(amaxes)) {
    ctx.bufferOfValue[arg] = ctx.part(block, i * kSlotAlignment, 4, "fp8 weight amax");
    ctx.amaxBlockOf[arg] = block;
  }
}

/// FP8 weight caching (tx-cache-fp8-weights): the step's next codes and
/// amax of a weight are written straight into their state arguments (no
/// copy at the end) when everything that reads the old values comes
/// before the cast: the forward and backward GEMMs read the codes, the
/// held-back scale update the amax, and it goes out before the first cast
/// that needs its new scale.
static void castCachedWeightsInPlace(LoweringContext &ctx, func::FuncOp step) {
  auto ret = cast<func::ReturnOp>(step.getBody().front().getTerminator());
  for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
    auto next = step.getResultAttrOfType<IntegerAttr>(i, tx::kNextAttrName);
    if (!next || next.getInt() < 0 || next.getInt() >= step.getNumArguments())
      continue;
    BlockArgument arg = step.getArgument(next.getInt());
    auto role = step.getArgAttrOfType<StringAttr>(arg.getArgNumber(), tx::kRoleAttrName);
    if (!role || (role.getValue() != "fp8_weight_codes" && role.getValue() != "fp8_weight_amax"))
      continue;
    Operation *producer = value.getDefiningOp();
    bool cast = isa_and_nonnull<tx::AmaxOp, tx::QuantizeOp>(producer) ||
                (isa_and_nonnull<tx::TransposeOp>(producer) &&
                 producer->getOperand(0).getDefiningOp<tx::QuantizeOp>());
    if (!cast || ctx.bufferOfValue.count(value))
      continue;
    bool readBefore = llvm::all_of(arg.getUsers(), [&](Operation *user) {
      return user->isBeforeInBlock(producer);
    });
    if (!readBefore)
      continue;
    ctx.bufferOfValue[value] = ctx.bufferFor(arg);
    ctx.cachedWeightCodes.insert(value);
    // The amax kernel zeroes the whole block before the first of them.
    if (auto block = ctx.amaxBlockOf.find(arg); block != ctx.amaxBlockOf.end())
      ctx.amaxBlockOf[value] = block->second;
  }
}

/// Lowers every op of |func|'s body to commands of |ctx|.
static LogicalResult lowerBody(LoweringContext &ctx, ModuleOp module,
                               func::FuncOp func) {
  StepProgram &program = ctx.program;
  Block &body = func.getBody().front();
  packAmaxes(ctx, func);
  // The ops lowered right after an op (planSumsOfSquaresInAdam: the
  // gradient norm's sum and its readers wait for the Adam kernels that add
  // up the squares), in block order.
  llvm::DenseMap<Operation *, llvm::SmallVector<Operation *>> waiting;
  auto lowerOne = [&](Operation &op) -> LogicalResult {
    LogicalResult result = success();
    // Held-back column sums go out before their first reader (and before
    // the function ends: its results are read back or copied).
    if ((isa<func::ReturnOp>(op) || readsDeferredColumnSums(ctx, op)) &&
        failed(flushColumnSums(ctx)))
      return failure();
    if (isa<func::ReturnOp>(op) && failed(flushFP8ScaleUpdates(ctx)))
      return failure();
    // Nothing runs beside the function after it returns.
    if (isa<func::ReturnOp>(op))
      ctx.joinAllCollectives();
    if (readsDeferredScaleUpdates(ctx, op) && failed(flushFP8ScaleUpdates(ctx, &op)))
      return failure();
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      (void)ret;
      return success();
    }
    if (auto constant = dyn_cast<tx::ConstantOp>(op)) {
      if (!ctx.plan.isMaterialized(constant.getResult()) ||
          isCarriedZero(constant.getResult()))
        return success();
      unsigned id = ctx.bufferFor(constant.getResult());
      ctx.buffers[id].persistent = true;
      ctx.buffers[id].what = "constant";
      program.constants.push_back({id, rawBytes(cast<ElementsAttr>(constant.getValue()))});
      return success();
    }
    if (auto load = dyn_cast<tx::LoadParameterOp>(op)) {
      auto param = SymbolTable::lookupNearestSymbolFrom<tx::ParameterOp>(module, load.getNameAttr());
      if (!param)
        return load.emitError("unknown parameter");
      unsigned id = ctx.bufferFor(load.getResult());
      ctx.buffers[id].persistent = true;
      ctx.buffers[id].what = "frozen parameter";
      // A frozen parameter (an exported mask) is folded into the artifact.
      auto bytes = tx::readParameterBytes(param, module);
      if (!bytes)
        return load.emitError(llvm::toString(bytes.takeError()));
      program.constants.push_back({id, std::vector<uint8_t>(bytes->begin(), bytes->end())});
      return success();
    }
    if (ctx.loweredElsewhere.contains(&op) || ctx.plan.absorbedCasts.contains(&op))
      return success();
    // A site of packed FP8 state is a part of the state's buffer: no command.
    if (auto site = dyn_cast<tx::FP8SiteOp>(op)) {
      ctx.bufferFor(site.getResult());
      return success();
    }
    if (isa<tx::QuantizeOp>(op)) {
      if (failed(lowerQuantize(ctx, &op)))
        return failure();
      return success();
    }
    if (isa<tx::TransposeOp>(op)) {
      FailureOr<bool> lowered = lowerFP8Transpose(ctx, &op);
      if (failed(lowered))
        return failure();
      if (*lowered)
        return success();
    }
    if (ctx.packedParameterCasts.count(&op))
      return lowerPackedParameterCasts(ctx, &op);
    if (ctx.packedSumsOfSquares.count(&op)) {
      if (failed(lowerPackedSumOfSquares(ctx, &op)))
        return failure();
      return success();
    }
    if (isElementalOp(&op)) {
      for (Value r : op.getResults()) {
        if (!ctx.plan.isMaterialized(r))
          continue;
        // A view of a materialized value is its input's buffer.
        if (isViewOp(&op) &&
            ctx.plan.isMaterialized(op.getOperand(0))) {
          ctx.bufferFor(r);
          continue;
        }
        if (failed(lowerElementalValue(ctx, r)))
          return failure();
      }
      return success();
    }
    if (isReduction(&op))
      result = lowerReduction(ctx, &op);
    else if (auto gemm = dyn_cast<tx::BlasGemmOp>(op))
      result = gemm.isFP8() ? lowerFP8Gemm(ctx, gemm) : lowerBlasGemm(ctx, gemm);
    else if (auto gemm = dyn_cast<tx::BlasGemmGeluOp>(op))
      result = lowerBlasGemmGelu(ctx, gemm);
    else if (isa<tx::MatMulOp, tx::GemmOp, tx::FP8MatmulOp>(op))
      // tx-gemm-normal-form (lowerStepForGPU) left it: say why.
      result = op.emitError("the GPU lowering takes GEMMs in normal form (tx.blas_gemm); this "
                            "one has none: ")
               << tx::whyNotGemmNormalForm(&op);
    else if (isa<tx::LayerNormOp, tx::RMSNormOp, tx::LayerNormalizationOp,
                 tx::RMSNormalizationOp>(op))
      result = lowerNorm(ctx, &op);
    else if (isa<tx::LayerNormGradOp, tx::RMSNormGradOp>(op))
      result = lowerNormGrad(ctx, &op);
    else if (isa<tx::SoftmaxOp>(op))
      result = lowerSoftmax(ctx, &op);
    else if (isa<tx::SoftmaxCrossEntropyLossOp>(op))
      result = lowerCrossEntropy(ctx, &op);
    else if (isa<tx::SoftmaxCrossEntropyGradOp>(op))
      result = lowerCrossEntropyGrad(ctx, &op);
    else if (isa<tx::GatherGradOp, tx::GatherElementsGradOp, tx::GatherNDGradOp>(op))
      result = lowerGatherGrad(ctx, &op);
    else if (isa<tx::AdamOp, tx::SGDOp>(op))
      result = lowerOptimizer(ctx, &op);
    else if (isa<tx::AmaxOp>(op))
      result = lowerAmax(ctx, &op);
    else if (isa<tx::FP8ScaleUpdateOp>(op))
      result = lowerFP8ScaleUpdate(ctx, &op);
    else if (isa<tx::FP8CurrentScaleOp>(op))
      result = lowerFP8CurrentScale(ctx, &op);
    else if (isa<tx::AttentionOp>(op))
      result = lowerAttention(ctx, &op);
    else if (isa<tx::AttentionGradOp>(op))
      result = lowerAttentionGrad(ctx, &op);
    else if (isa<tx::FP8AttentionOp>(op))
      result = lowerFP8Attention(ctx, &op);
    else if (isa<tx::FP8AttentionGradOp>(op))
      result = lowerFP8AttentionGrad(ctx, &op);
    else if (isa<tx::AllReduceOp, tx::ReduceScatterOp, tx::AllGatherOp,
                 tx::RankShardOp>(op))
      result = lowerCollective(ctx, &op);
    else
      return op.emitError("'") << op.getName()
                               << "' has no GPU lowering yet; txopt-run runs this step on the CPU";
    return result;
  };
  for (Operation &op : body) {
    if (auto after = ctx.deferredAfter.find(&op); after != ctx.deferredAfter.end()) {
      waiting[after->second].push_back(&op);
      continue;
    }
    if (failed(lowerOne(op)))
      return failure();
    for (Operation *deferred : waiting.lookup(&op))
      if (failed(lowerOne(*deferred)))
        return failure();
  }

  return success();
}

/// Decides what |func| keeps in memory (the kernel grouping), with the
/// rewrites around it: cross-entropy over [N, C, d...] scores as rows
/// (tx-cross-entropy-rows), attention masks into cuDNN's bias form
/// (tx-attention-bias) and casts moved off the head split/merge
/// (tx-attention-casts) before, attention results placed into their
/// readers' buffers after.
static void groupKernels(LoweringContext &ctx, func::FuncOp func, bool isStep) {
  tx::crossEntropyOverRows(func);
  tx::masksToAttentionBias(func);
  tx::moveCastsOffAttentionLayouts(func);
  // The report counts the step's fusions, not those of the functions
  // beside it.
  unsigned besideFusedOps = 0;
  decideMaterialization(func, ctx.plan,
                        isStep ? ctx.program.stats.fusedOps : besideFusedOps);
  placeAttentionResults(ctx, func);
  computeNormInputsInNorms(ctx, func);
}

/// Binds |func|'s results into |out|: read back (loss, grad_norm), copied
/// over their argument for the next step after everything else has read
/// the old values, or (carried zeros) a memset of the argument.
/// |program.arguments| are the step's; the micro-step has the same
/// arguments, and only the step's results set their `nextOf`.
static void bindResults(LoweringContext &ctx, func::FuncOp func,
                        std::vector<ResultBinding> &out, bool isStep) {
  StepProgram &program = ctx.program;
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
    ResultBinding binding;
    auto name = func.getResultAttrOfType<StringAttr>(i, tx::kNameAttrName);
    binding.name = name ? name.str() : "result" + std::to_string(i);
    auto type = typeOf(value);
    binding.dtype = *dtypeOf(type.getElementType());
    binding.shape.assign(type.getShape().begin(), type.getShape().end());
    auto next = func.getResultAttrOfType<IntegerAttr>(i, tx::kNextAttrName);
    if (next && next.getInt() >= 0 &&
        next.getInt() < static_cast<int64_t>(program.arguments.size())) {
      binding.next = next.getInt();
      if (isStep)
        program.arguments[binding.next].nextOf = i;
    }
    binding.slot = binding.next >= 0 && isCarriedZero(value)
                       ? program.arguments[binding.next].slot
                       : ctx.bufferFor(value);
    out.push_back(binding);
  }
  for (auto [i, r] : llvm::enumerate(out)) {
    if (r.next < 0)
      continue;
    unsigned dst = program.arguments[r.next].slot;
    if (isCarriedZero(ret.getOperand(i)))
      ctx.memset(dst, 0, ret.getOperand(i).getDefiningOp());
    else if (dst != r.slot)
      ctx.copy(dst, r.slot, ctx.buffers[r.slot].bytes, "next-step value of '" + r.name + "'");
  }
  // Everything returned stays readable until the function ends (a part,
  // with its whole).
  int last = static_cast<int>(program.commands.size());
  for (const ResultBinding &r : out)
    for (int b = static_cast<int>(r.slot); b >= 0; b = ctx.buffers[b].partOf)
      ctx.buffers[b].lastCommand = last;
}

/// The model FLOPs of |commands| (see StepStatistics::modelFlops).
static double modelFlopsOf(const std::vector<Command> &commands) {
  double flops = 0;
  for (const Command &c : commands) {
    if (auto *g = std::get_if<GemmCmd>(&c.op)) {
      flops += 2.0 * g->m * g->n * g->k * g->batch;
    } else if (auto *at = std::get_if<AttentionCmd>(&c.op)) {
      const int64_t *q = at->q.dims, *k = at->k.dims;
      double forward = 4.0 * q[0] * q[1] * q[2] * k[2] * q[3];
      flops += (at->backward ? 2 * forward : forward) * (at->causal ? 0.5 : 1.0);
    }
  }
  return flops;
}

namespace {
/// The functions lowered beside the step over its argument slots, each
/// naming it in an attribute: gradient accumulation's micro-step,
/// validation's @eval, sampling's @logits and the FP8 weight cache's state
/// init (null where the module has none).
struct FunctionsBesideStep {
  func::FuncOp micro, eval, logits, stateInit;
};
} // namespace

/// Finds |step|'s functions beside it in |module|; each must take the
/// step's arguments.
static FailureOr<FunctionsBesideStep> findFunctionsBesideStep(ModuleOp module,
                                                              func::FuncOp step) {
  auto besideStep = [&](StringRef attrName) {
    func::FuncOp found;
    for (auto func : module.getOps<func::FuncOp>())
      if (auto ref = func->getAttrOfType<FlatSymbolRefAttr>(attrName))
        if (ref.getValue() == step.getName())
          found = func;
    return found;
  };
  FunctionsBesideStep beside{besideStep(tx::kMicroStepAttrName), besideStep(tx::kEvalAttrName),
                             besideStep(tx::kLogitsAttrName),
                             besideStep(tx::kStateInitAttrName)};
  for (func::FuncOp f : {beside.micro, beside.eval, beside.logits, beside.stateInit})
    if (f && f.getFunctionType().getInputs() != step.getFunctionType().getInputs())
      return f == beside.micro
                 ? f.emitError("expected the micro-step to take the step's arguments")
                 : f.emitError("expected '") << f.getName() << "' to take the step's arguments";
  return beside;
}

/// The IR rewrites the kernel grouping builds on, over |step| and the
/// functions beside it. Fills |recomputedBySum| (RecomputeScheduling.cpp)
/// and the step's rematerialization counts.
static void rewriteForLowering(func::FuncOp step, const FunctionsBesideStep &beside,
                               const GPUOptions &options, StepStatistics &stats,
                               llvm::DenseMap<Operation *, Value> &recomputedBySum) {
  func::FuncOp all[] = {step, beside.micro, beside.eval, beside.logits, beside.stateInit};
  // Transposes around GEMMs moved to where the GEMMs fold them first
  // (tx-gemm-transposes), so that what follows sees (and pairs up) the ops
  // that stay.
  for (func::FuncOp f : all)
    if (f)
      tx::moveTransposesIntoGemms(f);
  // Forward values the backward reads again are recomputed there when that
  // is a cheap elementwise chain (tx-rematerialize): the memory plan then
  // frees them after the forward. The micro-step has a backward too. The
  // report counts the step's (the micro-step repeats its forward). A copy
  // whose inputs a nearby column sum reads anyway is written by that sum's
  // kernel (RecomputeScheduling.cpp).
  for (func::FuncOp f : {step, beside.micro}) {
    if (!f)
      continue;
    tx::RematerializeResult freed = tx::rematerializeForBackward(f);
    if (f == step) {
      stats.rematerializedValues = freed.values;
      stats.rematerializedBytes = freed.bytes;
    }
    scheduleRecomputesIntoColumnSums(f, freed.recomputed, recomputedBySum);
  }
  // Every GEMM as the one cuBLASLt call it becomes (tx-gemm-normal-form):
  // transposes the GEMMs read through flags disappear. One that has no
  // normal form is an error where it is lowered, naming the reason.
  for (func::FuncOp f : all)
    if (f)
      tx::toGemmNormalForm(f);
  // A bias add no kernel would absorb (the q/k/v projection's, read by
  // attention in place) goes to the GEMM's epilogue (tx-gemm-bias).
  for (func::FuncOp f : all)
    if (f)
      tx::foldBiasesIntoGemms(f);
  // An LM-head bias gradient sums the loss gradient as rounded for the
  // head's GEMMs (tx-loss-bias-gradient), so the loss kernel writes only
  // that rounded copy.
  for (func::FuncOp f : all)
    if (f)
      tx::sumRoundedLossGradients(f);
  // A tanh GELU of a bf16/f16 GEMM's result goes to the GEMM's epilogue,
  // which also writes the pre-activation (tx-gemm-gelu).
  if (options.geluEpilogue)
    for (func::FuncOp f : all)
      if (f)
        tx::foldGelusIntoGemms(f);
}

/// Counts |program|'s step commands by kind into its statistics.
static void countCommands(StepProgram &program) {
  StepStatistics &stats = program.stats;
  for (const Command &c : program.commands) {
    if (std::holds_alternative<LaunchCmd>(c.op)) ++stats.launches;
    else if (auto *g = std::get_if<GemmCmd>(&c.op)) {
      ++stats.gemms;
      if (g->aType == DType::F8E4M3FN || g->aType == DType::F8E5M2)
        ++stats.fp8Gemms;
      if (g->bias >= 0)
        ++stats.biasEpilogues;
      if (g->gelu)
        ++stats.geluEpilogues;
    }
    else if (std::holds_alternative<MemsetCmd>(c.op)) ++stats.memsets;
    else if (auto *at = std::get_if<AttentionCmd>(&c.op)) {
      ++stats.attentions;
      stats.fp8Attentions += at->fp8;
    }
    else if (auto *col = std::get_if<CollectiveCmd>(&c.op)) {
      ++stats.collectives;
      if (col->asyncGroup) {
        ++stats.asyncCollectives;
        stats.asyncGroups = std::max(stats.asyncGroups, col->asyncGroup);
      }
    }
    else if (std::holds_alternative<JoinCmd>(c.op)) continue;
    else ++stats.copies;
  }
}

LogicalResult cuda::lowerStepForGPU(ModuleOp module, func::FuncOp step,
                                    const GPUOptions &options,
                                    StepProgram &program) {
  MLIRContext *context = module.getContext();
  FailureOr<FunctionsBesideStep> found = findFunctionsBesideStep(module, step);
  if (failed(found))
    return failure();
  auto [micro, eval, logits, stateInit] = *found;
  context->loadDialect<gpu::GPUDialect, arith::ArithDialect, math::MathDialect,
                       vector::VectorDialect, NVVM::NVVMDialect,
                       memref::MemRefDialect, scf::SCFDialect>();
  program.target = options.target;
  // A data-parallel step: its collectives must all run over this many
  // ranks (lowerCollective checks), the communicator's size at load.
  if (auto recipe = step->getAttrOfType<DictionaryAttr>(tx::kTrainStepAttrName))
    if (auto ranks = recipe.getAs<IntegerAttr>("data_parallel"))
      program.ranks = ranks.getInt();
  OpBuilder builder(context);
  program.kernels = ModuleOp::create(step.getLoc());
  program.kernels.get()->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                                 builder.getUnitAttr());
  builder.setInsertionPointToEnd(program.kernels->getBody());
  auto gpuModule = gpu::GPUModuleOp::create(builder, step.getLoc(), "kernels");

  llvm::DenseMap<Operation *, Value> recomputedBySum;
  rewriteForLowering(step, *found, options, program.stats, recomputedBySum);

  LoweringContext ctx(program, gpuModule, options);
  ctx.recomputedBySum = std::move(recomputedBySum);
  groupKernels(ctx, step, /*isStep=*/true);
  packSumsOfSquares(ctx, step);
  packCachedWeightAmaxes(ctx, step);
  if (failed(bindArguments(ctx, module, step)))
    return failure();
  if (micro)
    accumulateInPlace(ctx, step, /*isStep=*/true);
  castCachedWeightsInPlace(ctx, step);
  planAdamWritingCodes(ctx, step);
  planColumnSumsInAmax(ctx, step);
  planSumsOfSquaresInAdam(ctx, step);
  if (options.packParameterCasts)
    packParameterCasts(ctx, step);

  if (failed(lowerBody(ctx, module, step)))
    return failure();
  bindResults(ctx, step, program.results, /*isStep=*/true);
  size_t stepCommands = program.commands.size();

  // A function beside the step runs over the same argument slots; its
  // commands follow the step's in the plan's timeline (it never runs at
  // the same time), so its temporaries reuse the step's memory. The
  // micro-step adds into its accumulators in place; @eval and @logits
  // write nothing but their one result; the state-init function's results
  // are copied over the arguments they initialize.
  auto lowerBeside = [&](func::FuncOp f, std::optional<FunctionProgram> &out,
                         bool accumulates, bool writesState = false) -> LogicalResult {
    groupKernels(ctx, f, /*isStep=*/false);
    for (auto [stepArg, arg] : llvm::zip(step.getArguments(), f.getArguments()))
      ctx.bufferOfValue[arg] = ctx.bufferFor(stepArg);
    if (accumulates)
      accumulateInPlace(ctx, f, /*isStep=*/false);
    if (failed(lowerBody(ctx, module, f)))
      return failure();
    out.emplace();
    out->name = f.getName().str();
    bindResults(ctx, f, out->results, /*isStep=*/false);
    if (!accumulates && !writesState)
      for (const ResultBinding &r : out->results)
        if (r.next >= 0)
          return f.emitError("expected '")
                 << f.getName() << "' to change no argument, but result '" << r.name
                 << "' is the next value of argument " << r.next;
    return success();
  };
  if (micro) {
    if (failed(lowerBeside(micro, program.microStep, /*accumulates=*/true)))
      return failure();
    if (auto recipe = step->getAttrOfType<DictionaryAttr>(tx::kTrainStepAttrName))
      if (auto accum = recipe.getAs<IntegerAttr>("grad_accum"))
        program.gradAccum = accum.getInt();
  }
  size_t evalBegin = program.commands.size();
  if (eval && failed(lowerBeside(eval, program.evaluation, /*accumulates=*/false)))
    return failure();
  size_t logitsBegin = program.commands.size();
  if (logits && failed(lowerBeside(logits, program.logits, /*accumulates=*/false)))
    return failure();

  size_t stateInitBegin = program.commands.size();
  if (stateInit && failed(lowerBeside(stateInit, program.stateInit, /*accumulates=*/false,
                                      /*writesState=*/true)))
    return failure();

  planMemory(ctx);
  ctx.resolveOffsetTables();
  if (failed(checkCommandDataflow(
          ctx, {0, stepCommands, evalBegin, logitsBegin, stateInitBegin}, step)))
    return failure();
  // The timeline is step, micro-step, evaluation, logits, state init:
  // split it back.
  auto at = [&](size_t i) { return program.commands.begin() + i; };
  if (program.stateInit)
    program.stateInit->commands.assign(at(stateInitBegin), program.commands.end());
  if (program.logits)
    program.logits->commands.assign(at(logitsBegin), at(stateInitBegin));
  if (program.evaluation)
    program.evaluation->commands.assign(at(evalBegin), at(logitsBegin));
  if (program.microStep)
    program.microStep->commands.assign(at(stepCommands), at(evalBegin));
  program.commands.resize(stepCommands);
  program.recipe = tx::trainStepRecipeJson(step);
  program.stats.modelFlops = modelFlopsOf(program.commands) +
                             (program.microStep ? (program.gradAccum - 1) *
                                                      modelFlopsOf(program.microStep->commands)
                                                : 0.0);
  countCommands(program);
  return success();
}
