//===- KernelBuilder.cpp - gpu.func bodies for tx kernel groups -----------===//
//
// SPDX-License-Identifier: Apache-2.0
// KernelBuilder's memory, index, scalar-conversion, loop and reduction
// machinery and the elemental emitter's recursion (emit, emitComputed); the
// per-op element code is in EmitArithmetic.cpp and EmitDataMovement.cpp.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "txopt/Dialect/Tx/IR/TxOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::cuda;

bool cuda::isElementalOp(Operation *op) {
  if (auto constant = dyn_cast<tx::ConstantOp>(op))
    return cast<ElementsAttr>(constant.getValue()).isSplat();
  return isa<tx::AddOp, tx::SubOp, tx::MulOp, tx::DivOp, tx::PowOp, tx::ModOp,
             tx::MaxOp, tx::MinOp, tx::EqualOp, tx::LessOp, tx::LessOrEqualOp,
             tx::GreaterOp, tx::GreaterOrEqualOp, tx::AndOp, tx::OrOp,
             tx::XorOp, tx::NotOp, tx::WhereOp, tx::SqrtOp, tx::ReciprocalOp,
             tx::ErfOp, tx::TanhOp, tx::SigmoidOp, tx::ExpOp, tx::LogOp,
             tx::SinOp, tx::CosOp, tx::NegOp, tx::ReluOp, tx::IsNaNOp,
             tx::CastOp, tx::TriluOp, tx::ReshapeOp, tx::ExpandOp,
             tx::TransposeOp, tx::SliceOp, tx::ConcatOp, tx::SqueezeOp,
             tx::UnsqueezeOp, tx::IdentityOp, tx::SplitOp, tx::GatherOp,
             tx::GatherElementsOp, tx::GatherNDOp, tx::SliceGradOp,
             tx::CumSumOp, tx::ConstantOfShapeOp, tx::DropoutOp,
             tx::QuantizeOp, tx::DequantizeOp>(op) ||
         (isa<tx::PadOp>(op) &&
          cast<tx::PadOp>(op).getMode() == tx::PadMode::constant);
}

bool cuda::isViewOp(Operation *op) {
  return isa<tx::ReshapeOp, tx::SqueezeOp, tx::UnsqueezeOp, tx::IdentityOp>(op);
}

/// The alignment a kernel argument of |type| may claim: kArgAlign, or 4
/// for a buffer of at most 4 bytes (an entry of packed FP8 state sits at
/// any 4-byte offset of its state's slot).
static int64_t argAlignment(MemRefType type) {
  int64_t bits = type.getNumElements() * type.getElementTypeBitWidth();
  return bits <= 32 ? 4 : kArgAlign;
}

static RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// The flat memref a tensor value is passed as (i1 and FP8 stored as i8).
static MemRefType bufferType(Value v) {
  RankedTensorType type = tensorType(v);
  Type element = type.getElementType();
  if (element.isInteger(1) || isFP8(element))
    element = IntegerType::get(v.getContext(), 8);
  return MemRefType::get({std::max<int64_t>(type.getNumElements(), 1)}, element);
}

KernelBuilder::KernelBuilder(gpu::GPUModuleOp gpuModule, llvm::StringRef name,
                             llvm::ArrayRef<Value> outputs,
                             llvm::ArrayRef<Value> inputs,
                             const Materialization &plan,
                             unsigned workgroupFloats, Type workgroupElement)
    : b(gpuModule.getLoc(), gpuModule.getContext()), plan(plan) {
  b.setInsertionPointToEnd(gpuModule.getBody());
  llvm::SmallVector<Type> argTypes;
  for (Value v : outputs)
    argTypes.push_back(bufferType(storageOf(v, plan)));
  for (Value v : inputs)
    argTypes.push_back(bufferType(storageOf(v, plan)));
  Type workgroupType = workgroupElement ? workgroupElement : b.getF32Type();
  auto workgroupSpace =
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  auto workgroupMemref = MemRefType::get({workgroupFloats}, workgroupType,
                                         MemRefLayoutAttrInterface(), workgroupSpace);
  uint64_t workgroupBytes =
      uint64_t(workgroupFloats) * (workgroupType.getIntOrFloatBitWidth() / 8);
  bool dynamic = workgroupBytes > kMaxStaticSharedBytes;
  // Callers size their buffers within their target's limit (RowKernels.cpp);
  // one past every target's would fail at load, so it is a compile error.
  if (static_cast<int64_t>(workgroupBytes) > kMaxDynamicSharedBytes) {
    emitError(gpuModule.getLoc(), "kernel '")
        << name << "' needs " << workgroupBytes << " bytes of shared memory, past the "
        << kMaxDynamicSharedBytes << " any target's kernels take";
    failed = true;
  }
  llvm::SmallVector<Type> staticWorkgroup;
  if (workgroupFloats && !dynamic)
    staticWorkgroup.push_back(workgroupMemref);
  kernel = gpu::GPUFuncOp::create(b, name, b.getFunctionType(argTypes, {}),
                                  staticWorkgroup);
  kernel->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  // Every buffer starts 256-byte aligned in the arena (StepLowering's memory
  // plan): telling LLVM lets its load/store vectorizer merge a thread's
  // consecutive scalar accesses into 16-byte ones. A 4-byte one may be an
  // entry of packed state (tx.fp8_site), aligned 4 only.
  for (unsigned a = 0; a < argTypes.size(); ++a)
    kernel.setArgAttr(a, kArgAlignAttr,
                      b.getI64IntegerAttr(argAlignment(cast<MemRefType>(argTypes[a]))));
  Block &entry = kernel.getBody().front();
  unsigned i = 0;
  for (Value v : outputs) {
    Value storage = storageOf(v, plan);
    buffers[storage] = entry.getArgument(i++);
    if (storage != v)
      storedAs[v] = storage;
  }
  for (Value v : inputs) {
    Value storage = storageOf(v, plan);
    buffers[storage] = entry.getArgument(i++);
    if (storage != v)
      castSources[v] = storage;
  }
  b.setInsertionPointToStart(&entry);
  if (dynamic) {
    // The same buffer, as a typed view of the launch's dynamic shared memory.
    Value raw = gpu::DynamicSharedMemoryOp::create(
        b, MemRefType::get({ShapedType::kDynamic}, b.getI8Type(), MemRefLayoutAttrInterface(),
                           workgroupSpace));
    workgroup = memref::ViewOp::create(b, workgroupMemref, raw,
                                       arith::ConstantIndexOp::create(b, 0), ValueRange{});
    dynamicBytes = static_cast<unsigned>(workgroupBytes);
  } else if (workgroupFloats) {
    workgroup = kernel.getWorkgroupAttributions().front();
  }
  scopes.emplace_back();
}

void KernelBuilder::finish() {
  gpu::ReturnOp::create(b);
  annotateAlignment();
}

/// The largest power of two (at most 2^12) that |v|, an index or integer
/// value, is a multiple of for certain: constants, and sums, differences,
/// products, remainders by a constant, selects, min/max and casts of such
/// values (arithmetic modulo 2^64 keeps divisibility by powers of two).
/// Anything else (thread ids, quotients, loads) counts as 1.
static int64_t knownPowerOfTwoMultiple(Value v, llvm::DenseMap<Value, int64_t> &memo,
                                       unsigned depth = 0) {
  constexpr int64_t kCap = int64_t(1) << 12;
  if (auto it = memo.find(v); it != memo.end())
    return it->second;
  auto lowBit = [&](int64_t c) {
    return c == 0 ? kCap : std::min<int64_t>(kCap, c & -c);
  };
  int64_t result = 1;
  Operation *def = v.getDefiningOp();
  if (std::optional<int64_t> c = getConstantIntValue(v)) {
    result = lowBit(*c);
  } else if (auto arg = dyn_cast<BlockArgument>(v); arg && depth < 64) {
    // A loop's induction variable: lb + i * step.
    auto loop = dyn_cast_or_null<scf::ForOp>(arg.getOwner()->getParentOp());
    if (loop && loop.getInductionVar() == arg)
      result = std::min(knownPowerOfTwoMultiple(loop.getLowerBound(), memo, depth + 1),
                        knownPowerOfTwoMultiple(loop.getStep(), memo, depth + 1));
  } else if (def && depth < 64) {
    auto of = [&](Value operand) { return knownPowerOfTwoMultiple(operand, memo, depth + 1); };
    if (isa<arith::AddIOp, arith::SubIOp, arith::SelectOp, arith::MinUIOp, arith::MinSIOp,
            arith::MaxUIOp, arith::MaxSIOp>(def)) {
      // (select's condition is not a value of the result.)
      unsigned first = isa<arith::SelectOp>(def) ? 1 : 0;
      result = std::min(of(def->getOperand(first)), of(def->getOperand(first + 1)));
    } else if (isa<arith::MulIOp>(def)) {
      result = std::min(kCap, of(def->getOperand(0)) * of(def->getOperand(1)));
    } else if (auto rem = dyn_cast<arith::RemUIOp>(def)) {
      // a - floor(a / c) * c, with c a constant.
      if (std::optional<int64_t> c = getConstantIntValue(rem.getRhs()))
        result = std::min(of(rem.getLhs()), lowBit(*c));
    } else if (isa<arith::IndexCastOp, arith::IndexCastUIOp, arith::ExtUIOp, arith::ExtSIOp>(def)) {
      result = of(def->getOperand(0));
    }
  }
  memo[v] = result;
  return result;
}

/// Gives every scalar load and store of a kernel argument (a buffer whose
/// start is kArgAlign-aligned) the alignment its index proves. LLVM's
/// load/store vectorizer merges a thread's consecutive accesses into
/// 16-byte ones only where it can prove their alignment, and its own proof
/// gives up on long address chains: the amax kernels' 16-element runs were
/// one 16-byte load and then scalar loads for the rest.
void KernelBuilder::annotateAlignment() {
  llvm::DenseMap<Value, int64_t> memo;
  auto alignmentOf = [&](Value memref, ValueRange indices) -> int64_t {
    auto arg = dyn_cast<BlockArgument>(memref);
    auto type = dyn_cast<MemRefType>(memref.getType());
    // Function arguments only: the entry block's workgroup buffers follow
    // them.
    if (!arg || arg.getOwner() != &kernel.getBody().front() ||
        arg.getArgNumber() >= kernel.getNumArguments() || !type || indices.size() != 1 ||
        !type.getElementType().isIntOrFloat() ||
        !kernel.getArgAttr(arg.getArgNumber(), kArgAlignAttr))
      return 0;
    int64_t bytes = std::max<int64_t>(1, type.getElementType().getIntOrFloatBitWidth() / 8);
    int64_t base = kernel.getArgAttrOfType<IntegerAttr>(arg.getArgNumber(), kArgAlignAttr).getInt();
    int64_t align = std::min<int64_t>(base, bytes * knownPowerOfTwoMultiple(indices[0], memo));
    return align > bytes ? align : 0;
  };
  kernel.walk([&](Operation *op) {
    if (auto load = dyn_cast<memref::LoadOp>(op)) {
      if (int64_t align = alignmentOf(load.getMemref(), load.getIndices()); align && !load.getAlignment())
        load.setAlignment(static_cast<uint64_t>(align));
    } else if (auto store = dyn_cast<memref::StoreOp>(op)) {
      if (int64_t align = alignmentOf(store.getMemref(), store.getIndices()); align && !store.getAlignment())
        store.setAlignment(static_cast<uint64_t>(align));
    }
  });
}

/// Whether |op| may write memory or order memory accesses (a barrier, a
/// call, anything with regions): a load is never moved above one.
static bool ordersMemory(Operation *op) {
  // An op with regions orders memory where an op inside it does: loads
  // move up past a branch that only loads (a concatenation's or pad's
  // pieces of a group, emitGroupPieces), or the group's loads after the
  // branch stay apart from its first element's before it, and LLVM cannot
  // merge them.
  if (op->getNumRegions() > 0) {
    bool orders = false;
    op->walk([&](Operation *inner) {
      if (inner != op && inner->getNumRegions() == 0 && ordersMemory(inner))
        orders = true;
    });
    return orders;
  }
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  if (!effects)
    return !op->hasTrait<OpTrait::ConstantLike>() && !isPure(op);
  return effects.hasEffect<MemoryEffects::Write>() ||
         effects.hasEffect<MemoryEffects::Allocate>() ||
         effects.hasEffect<MemoryEffects::Free>();
}

void KernelBuilder::groupMemoryAccesses() {
  // First sink the float math (pure, no regions, not index arithmetic)
  // down to its first reader, in reverse so chains sink together: what is
  // left between a thread's loads is their index arithmetic.
  kernel.walk([&](Block *block) {
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(*block))) {
      if (op.getNumResults() == 0 || op.getNumRegions() > 0 || !isPure(&op) ||
          op.hasTrait<OpTrait::ConstantLike>() ||
          llvm::any_of(op.getResultTypes(), [](Type t) { return t.isIndex(); }))
        continue;
      Operation *first = nullptr;
      bool local = true;
      for (Operation *user : op.getUsers()) {
        Operation *inBlock = block->findAncestorOpInBlock(*user);
        if (!inBlock) {
          local = false;
          break;
        }
        if (!first || inBlock->isBeforeInBlock(first))
          first = inBlock;
      }
      if (local && first && first != op.getNextNode())
        op.moveBefore(first);
    }
  });
  // Then gather the stores: each moves down past pure ops to just before
  // the next op that touches memory (or the terminator), so a thread's
  // consecutive stores sit together too.
  kernel.walk([&](Block *block) {
    llvm::SmallVector<Operation *> stores;
    for (Operation &op : *block)
      if (isa<memref::StoreOp, vector::StoreOp>(op))
        stores.push_back(&op);
    for (Operation *store : llvm::reverse(stores)) {
      Operation *next = store->getNextNode();
      while (next && !next->hasTrait<OpTrait::IsTerminator>() &&
             next->getNumRegions() == 0 && isPure(next))
        next = next->getNextNode();
      if (next && next != store->getNextNode())
        store->moveBefore(next);
    }
  });
  kernel.walk([&](Block *block) {
    Operation *fence = nullptr; // the last op no load may move above
    for (Operation &op : llvm::make_early_inc_range(*block)) {
      if (!isa<memref::LoadOp, vector::LoadOp>(op)) {
        if (ordersMemory(&op))
          fence = &op;
        continue;
      }
      // Right after the latest of the fence and the operands' definitions
      // in this block.
      Operation *after = fence;
      for (Value operand : op.getOperands()) {
        Operation *def = operand.getDefiningOp();
        if (def && def->getBlock() == block && (!after || after->isBeforeInBlock(def)))
          after = def;
      }
      if (!after)
        op.moveBefore(block, block->begin());
      else if (after->getNextNode() != &op)
        op.moveAfter(after);
    }
  });
}

Value KernelBuilder::insertBufferArgument(unsigned position, MemRefType type) {
  // Through the function interface, so the argument attributes (alignment)
  // shift with the arguments.
  auto align = b.getDictionaryAttr(
      b.getNamedAttr(kArgAlignAttr, b.getI64IntegerAttr(argAlignment(type))));
  if (mlir::failed(cast<FunctionOpInterface>(kernel.getOperation())
                 .insertArgument(position, type, align, kernel.getLoc())))
    failed = true;
  return kernel.getBody().front().getArgument(position);
}

/// A splat constant: kernels that compute their operands take it as an
/// immediate even where the plan stores it for another reader (the loss
/// gradient's seed 1, which the cross-entropy kernel loads).
static bool isImmediate(Value v) {
  auto constant = v.getDefiningOp<tx::ConstantOp>();
  return constant && cast<ElementsAttr>(constant.getValue()).isSplat();
}

bool KernelBuilder::readsFromMemory(Value v, const Materialization &plan) {
  if (isImmediate(v))
    return false;
  Operation *def = v.getDefiningOp();
  return plan.isMaterialized(v) || !def || !isElementalOp(def);
}

void KernelBuilder::collectInputs(Value root, const Materialization &plan,
                                  llvm::SetVector<Value> &inputs) {
  llvm::SmallVector<Value> work;
  llvm::DenseSet<Value> seen;
  auto visitOperands = [&](Operation *op) {
    for (Value operand : op->getOperands())
      if (seen.insert(operand).second)
        work.push_back(operand);
  };
  if (Operation *def = root.getDefiningOp())
    visitOperands(def);
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (readsFromMemory(v, plan)) {
      inputs.insert(v);
      continue;
    }
    visitOperands(v.getDefiningOp());
  }
}

void KernelBuilder::collectReadsOf(Value v, const Materialization &plan,
                                   llvm::SetVector<Value> &inputs) {
  if (plan.isMaterialized(v) || !v.getDefiningOp())
    inputs.insert(v);
  else
    collectInputs(v, plan, inputs);
}

bool KernelBuilder::isStoredAsFloat(Value v, const Materialization &plan) {
  Value storage = storageOf(v, plan);
  Type stored = tensorType(storage).getElementType();
  return plan.isMaterialized(storage) && (stored.isF32() || stored.isBF16() || stored.isF16());
}

//===----------------------------------------------------------------------===//
// Indices
//===----------------------------------------------------------------------===//

Value KernelBuilder::clampIndex(Value which, int64_t dim) {
  Value zero = arith::ConstantIntOp::create(b, 0, 64);
  Value neg = arith::CmpIOp::create(b, arith::CmpIPredicate::slt, which, zero);
  which = arith::SelectOp::create(
      b, neg, arith::AddIOp::create(b, which, arith::ConstantIntOp::create(b, dim, 64)), which);
  return arith::MaxSIOp::create(
      b, arith::MinSIOp::create(b, which, arith::ConstantIntOp::create(b, dim - 1, 64)), zero);
}

Value KernelBuilder::idx(int64_t v) {
  return arith::ConstantIndexOp::create(b, v);
}

void KernelBuilder::setBlockSize(unsigned n) {
  assert(n % 32 == 0 && n <= 1024 && "a block of whole warps, at most 1024");
  threads = n;
  if (n != kBlockSize)
    kernel.setKnownBlockSizeAttr(
        b.getDenseI32ArrayAttr({static_cast<int32_t>(n), 1, 1}));
}

void KernelBuilder::setMinBlocksPerSM(unsigned blocks) {
  // ptxas honours .minnctapersm only beside .maxntid: without a known block
  // size it must allow for 1024 threads.
  kernel.setKnownBlockSizeAttr(
      b.getDenseI32ArrayAttr({static_cast<int32_t>(threads), 1, 1}));
  kernel->setAttr("nvvm.minctasm", b.getI32IntegerAttr(static_cast<int32_t>(blocks)));
}

Value KernelBuilder::threadIndex() {
  return gpu::ThreadIdOp::create(b, gpu::Dimension::x);
}

Value KernelBuilder::blockIndex() {
  return gpu::BlockIdOp::create(b, gpu::Dimension::x);
}

Value KernelBuilder::globalThreadIndex() {
  Value base = arith::MulIOp::create(b, blockIndex(), idx(threads));
  return arith::AddIOp::create(b, base, threadIndex());
}

llvm::SmallVector<Value>
KernelBuilder::delinearize(Value linear, llvm::ArrayRef<int64_t> shape) {
  llvm::SmallVector<Value> index(shape.size());
  Value rest = linear;
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    if (shape[d] == 1) {
      index[d] = idx(0);
      continue;
    }
    if (d == 0) {
      index[d] = rest;
      break;
    }
    index[d] = arith::RemUIOp::create(b, rest, idx(shape[d]));
    rest = arith::DivUIOp::create(b, rest, idx(shape[d]));
  }
  return index;
}

Value KernelBuilder::linearize(llvm::ArrayRef<Value> index,
                               llvm::ArrayRef<int64_t> shape) {
  Value linear = idx(0);
  int64_t stride = 1;
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    if (shape[d] != 1) {
      Value term = stride == 1 ? index[d]
                               : Value(arith::MulIOp::create(b, index[d], idx(stride)));
      linear = arith::AddIOp::create(b, linear, term);
    }
    stride *= shape[d];
  }
  return linear;
}

//===----------------------------------------------------------------------===//
// Scalars
//===----------------------------------------------------------------------===//

Type KernelBuilder::computeType(Type elementType) {
  if (elementType.isF64())
    return b.getF64Type();
  if (isa<FloatType>(elementType))
    return b.getF32Type();
  if (elementType.isInteger(1))
    return b.getI1Type();
  return b.getI64Type();
}

Value KernelBuilder::f32(double v) {
  return arith::ConstantOp::create(b, b.getF32FloatAttr(static_cast<float>(v)));
}

Value KernelBuilder::roundTo(Value scalar, Type elementType) {
  if (elementType.isBF16() || elementType.isF16()) {
    Value narrow = arith::TruncFOp::create(b, elementType, scalar);
    return arith::ExtFOp::create(b, b.getF32Type(), narrow);
  }
  // FP8 through its code. From f64 (only f64 -> FP8 casts) the f32 step
  // rounds first, which can move a tie; f64 steps are not GPU targets.
  if (isFP8(elementType)) {
    Value v = scalar;
    if (v.getType().isF64())
      v = arith::TruncFOp::create(b, b.getF32Type(), v);
    return emitFP8Decode(b, emitFP8Encode(b, v, elementType), elementType);
  }
  return scalar;
}

Value KernelBuilder::castScalar(Value scalar, Type from, Type to) {
  Type cFrom = computeType(from), cTo = computeType(to);
  if (isa<FloatType>(from) && isa<FloatType>(to)) {
    Value v = scalar;
    if (cFrom != cTo)
      v = cTo.getIntOrFloatBitWidth() > cFrom.getIntOrFloatBitWidth()
              ? Value(arith::ExtFOp::create(b, cTo, v))
              : Value(arith::TruncFOp::create(b, cTo, v));
    return roundTo(v, to);
  }
  if (isa<FloatType>(from)) {
    if (to.isInteger(1)) {
      Value zero = arith::ConstantOp::create(b, b.getFloatAttr(cFrom, 0.0));
      return arith::CmpFOp::create(b, arith::CmpFPredicate::UNE, scalar, zero);
    }
    // Toward zero, then wrap to the width (as the executor does).
    Value v = arith::FPToSIOp::create(b, b.getI64Type(), scalar);
    unsigned width = to.getIntOrFloatBitWidth();
    if (width < 64) {
      Value t = arith::TruncIOp::create(b, b.getIntegerType(width), v);
      v = arith::ExtSIOp::create(b, b.getI64Type(), t);
    }
    return v;
  }
  if (from.isInteger(1)) {
    if (isa<FloatType>(to))
      return arith::UIToFPOp::create(b, cTo, scalar);
    return arith::ExtUIOp::create(b, b.getI64Type(), scalar);
  }
  // From an integer.
  if (isa<FloatType>(to))
    return roundTo(arith::SIToFPOp::create(b, cTo, scalar), to);
  if (to.isInteger(1))
    return arith::CmpIOp::create(b, arith::CmpIPredicate::ne, scalar,
                                 arith::ConstantIntOp::create(b, 0, 64));
  unsigned width = to.getIntOrFloatBitWidth();
  if (width < 64) {
    Value t = arith::TruncIOp::create(b, b.getIntegerType(width), scalar);
    return arith::ExtSIOp::create(b, b.getI64Type(), t);
  }
  return scalar;
}

Value KernelBuilder::bufferOf(Value tensor) {
  auto it = buffers.find(tensor);
  if (it == buffers.end()) {
    emitError(tensor.getLoc()) << "internal: kernel reads a value it was not given";
    failed = true;
    return {};
  }
  return it->second;
}

Value KernelBuilder::storageOf(Value v, const Materialization &plan) {
  if (plan.isMaterialized(v))
    return v;
  if (Value stored = plan.storedAs.lookup(v))
    return stored;
  // Views (same elements, same order) and at most one cast, down to a
  // value in memory.
  Value current = v;
  bool castSeen = false;
  while (!plan.isMaterialized(current)) {
    Operation *def = current.getDefiningOp();
    if (!def)
      return v;
    if (isViewOp(def)) {
      current = def->getOperand(0);
    } else if (isa<tx::CastOp>(def) && !castSeen) {
      castSeen = true;
      current = def->getOperand(0);
    } else {
      return v;
    }
  }
  return castSeen ? current : v;
}

Value KernelBuilder::load(Value tensor, Value linear) {
  // A recomputed cast (StepLowering's isRecomputedCast): read its input and
  // convert, as the tx.cast would have.
  if (auto it = castSources.find(tensor); it != castSources.end())
    return castScalar(load(it->second, linear),
                      tensorType(it->second).getElementType(),
                      tensorType(tensor).getElementType());
  Value buffer = bufferOf(tensor);
  Type element = tensorType(tensor).getElementType();
  if (!buffer)
    return arith::ConstantOp::create(b, b.getZeroAttr(computeType(element)));
  return fromStorage(memref::LoadOp::create(b, buffer, ValueRange{linear}), element);
}

Value KernelBuilder::fromStorage(Value raw, Type element) {
  if (element.isInteger(1))
    return arith::CmpIOp::create(b, arith::CmpIPredicate::ne, raw,
                                 arith::ConstantIntOp::create(b, 0, 8));
  if (element.isBF16() || element.isF16())
    return arith::ExtFOp::create(b, b.getF32Type(), raw);
  if (isFP8(element))
    return emitFP8Decode(b, raw, element);
  if (auto integer = dyn_cast<IntegerType>(element))
    if (integer.getWidth() < 64)
      return arith::ExtSIOp::create(b, b.getI64Type(), raw);
  return raw;
}

Value KernelBuilder::toStorage(Value scalar, Type element) {
  if (element.isInteger(1))
    return arith::ExtUIOp::create(b, b.getI8Type(), scalar);
  if (element.isBF16() || element.isF16())
    return arith::TruncFOp::create(b, element, scalar);
  if (isFP8(element))
    return emitFP8Encode(b, scalar, element);
  if (auto integer = dyn_cast<IntegerType>(element))
    if (integer.getWidth() < 64)
      return arith::TruncIOp::create(b, element, scalar);
  return scalar;
}

void KernelBuilder::store(Value tensor, Value linear, Value scalar) {
  // A result stored as its cast: rounding into the cast's type here is what
  // the tx.cast would have done (the result itself is f32).
  if (auto it = storedAs.find(tensor); it != storedAs.end())
    return store(it->second, linear, scalar);
  Value buffer = bufferOf(tensor);
  if (!buffer)
    return;
  Type element = tensorType(tensor).getElementType();
  memref::StoreOp::create(b, toStorage(scalar, element), buffer, ValueRange{linear});
}

/// The buffer value and element type that hold |tensor| in memory, after
/// a recomputed cast (reads) or a stored-as cast (writes).
static std::pair<Value, Type> memoryOf(Value tensor,
                                       const llvm::DenseMap<Value, Value> &redirect) {
  Value current = tensor;
  while (Value next = redirect.lookup(current))
    current = next;
  return {current, cast<RankedTensorType>(current.getType()).getElementType()};
}

bool KernelBuilder::vectorAccessible(Value tensor, unsigned width) {
  for (const auto *redirect : {&castSources, &storedAs}) {
    Type element = memoryOf(tensor, *redirect).second;
    if (!element.isF32() && !element.isBF16() && !element.isF16())
      return false;
    if (width * element.getIntOrFloatBitWidth() / 8 > 16)
      return false;
  }
  return true;
}

llvm::SmallVector<Value> KernelBuilder::loadVector(Value tensor, Value linear,
                                                   unsigned width) {
  if (auto it = castSources.find(tensor); it != castSources.end()) {
    llvm::SmallVector<Value> lanes = loadVector(it->second, linear, width);
    for (Value &lane : lanes)
      lane = castScalar(lane, tensorType(it->second).getElementType(),
                        tensorType(tensor).getElementType());
    return lanes;
  }
  Type element = tensorType(tensor).getElementType();
  Value buffer = bufferOf(tensor);
  if (!buffer)
    return llvm::SmallVector<Value>(
        width, arith::ConstantOp::create(b, b.getZeroAttr(computeType(element))));
  auto vectorType = VectorType::get({static_cast<int64_t>(width)}, element);
  unsigned bytes = width * element.getIntOrFloatBitWidth() / 8;
  Value vector = vector::LoadOp::create(b, vectorType, buffer, ValueRange{linear},
                                        /*nontemporal=*/false, llvm::MaybeAlign(bytes));
  llvm::SmallVector<Value> lanes;
  for (unsigned i = 0; i < width; ++i)
    lanes.push_back(fromStorage(
        vector::ExtractOp::create(b, vector, static_cast<int64_t>(i)), element));
  return lanes;
}

void KernelBuilder::storeVector(Value tensor, Value linear,
                                llvm::ArrayRef<Value> scalars) {
  if (auto it = storedAs.find(tensor); it != storedAs.end())
    return storeVector(it->second, linear, scalars);
  Value buffer = bufferOf(tensor);
  if (!buffer)
    return;
  Type element = tensorType(tensor).getElementType();
  llvm::SmallVector<Value> raw;
  for (Value scalar : scalars)
    raw.push_back(toStorage(scalar, element));
  auto vectorType = VectorType::get({static_cast<int64_t>(raw.size())}, element);
  unsigned bytes = raw.size() * element.getIntOrFloatBitWidth() / 8;
  Value vector = vector::FromElementsOp::create(b, vectorType, raw);
  vector::StoreOp::create(b, vector, buffer, ValueRange{linear},
                          /*nontemporal=*/false, llvm::MaybeAlign(bytes));
}

void KernelBuilder::atomicAdd(Value tensor, Value linear, Value scalar) {
  Value buffer = bufferOf(tensor);
  if (!buffer)
    return;
  memref::AtomicRMWOp::create(b, arith::AtomicRMWKind::addf, scalar, buffer,
                              ValueRange{linear});
}

//===----------------------------------------------------------------------===//
// Elemental emission
//===----------------------------------------------------------------------===//

void KernelBuilder::pushScope() {
  scopes.emplace_back();
  reshapedGroups.emplace_back();
}
void KernelBuilder::popScope() {
  scopes.pop_back();
  reshapedGroups.pop_back();
}

Value KernelBuilder::emit(Value v, llvm::ArrayRef<Value> index) {
  if (readsFromMemory(v, plan))
    return load(v, linearize(index, tensorType(v).getShape()));
  return emitComputed(v, index);
}

Value KernelBuilder::emitComputed(Value v, llvm::ArrayRef<Value> index) {
  Operation *def = v.getDefiningOp();
  // Reuse an element already computed in this or an enclosing scope: a
  // value read twice at the same index (x * x) is computed once.
  for (auto &scope : llvm::reverse(scopes)) {
    auto it = scope.find(def);
    if (it == scope.end())
      continue;
    for (auto &[key, value] : it->second)
      if (key.size() == index.size() + 1 &&
          key[0] == Value(def->getResult(cast<OpResult>(v).getResultNumber())) &&
          std::equal(index.begin(), index.end(), key.begin() + 1))
        return value;
  }
  RankedTensorType type = tensorType(v);
  Value result = emitOp(def, cast<OpResult>(v).getResultNumber(),
                        type.getElementType(), type.getShape(), index);
  llvm::SmallVector<Value> key{v};
  key.append(index.begin(), index.end());
  scopes.back()[def].push_back({key, result});
  return result;
}

//===----------------------------------------------------------------------===//
// Loops and reductions
//===----------------------------------------------------------------------===//

Value KernelBuilder::warpReduce(Value value, bool isMax) {
  for (int offset = 16; offset > 0; offset /= 2) {
    Value other = gpu::ShuffleOp::create(b, value, offset, 32, gpu::ShuffleMode::XOR)
                      .getShuffleResult();
    value = isMax ? Value(arith::MaximumFOp::create(b, value, other))
                  : Value(arith::AddFOp::create(b, value, other));
  }
  return value;
}

Value KernelBuilder::blockReduce(Value value, bool isMax) {
  return blockReduce(llvm::ArrayRef<Value>{value}, isMax).front();
}

llvm::SmallVector<Value> KernelBuilder::blockReduce(llvm::ArrayRef<Value> values, bool isMax) {
  const unsigned kWarps = threads / 32;
  assert(values.size() * kWarps <= 32 && "the reduction's workgroup floats hold 32");
  auto warpReduce = [&](Value v) { return this->warpReduce(v, isMax); };
  Value smem = workgroup;
  Value tid = threadIndex();
  Value lane = arith::RemUIOp::create(b, tid, idx(32));
  Value warp = arith::DivUIOp::create(b, tid, idx(32));
  // The barrier first: the previous reduction's readers are done with smem.
  gpu::BarrierOp::create(b);
  llvm::SmallVector<Value> partials;
  for (Value value : values)
    partials.push_back(warpReduce(value));
  // Value i's per-warp partials in slots [i * kWarps, (i + 1) * kWarps):
  // several values share the two barriers.
  Value isLane0 = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, lane, idx(0));
  ifThen(isLane0, [&] {
    for (auto [i, partial] : llvm::enumerate(partials))
      memref::StoreOp::create(b, partial, smem,
                              ValueRange{arith::AddIOp::create(b, warp, idx(i * kWarps))});
  });
  gpu::BarrierOp::create(b);
  // Every warp folds the per-warp partials, so every thread has the total.
  Value inRange = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, lane, idx(kWarps));
  Value slot = arith::SelectOp::create(b, inRange, lane, idx(0));
  Value identity = f32(isMax ? -std::numeric_limits<float>::infinity() : 0.0);
  llvm::SmallVector<Value> totals;
  for (size_t i = 0; i < values.size(); ++i) {
    Value loaded = memref::LoadOp::create(
        b, smem, ValueRange{arith::AddIOp::create(b, slot, idx(i * kWarps))});
    totals.push_back(warpReduce(arith::SelectOp::create(b, inRange, loaded, identity)));
  }
  return totals;
}

llvm::SmallVector<Value> KernelBuilder::blockStridedLoop(
    int64_t count, llvm::ArrayRef<Value> init,
    llvm::function_ref<llvm::SmallVector<Value>(Value, llvm::ArrayRef<Value>)> body) {
  return blockStridedLoop(idx(0), idx(count), init, body);
}

llvm::SmallVector<Value> KernelBuilder::blockStridedLoop(
    Value begin, Value end, llvm::ArrayRef<Value> init,
    llvm::function_ref<llvm::SmallVector<Value>(Value, llvm::ArrayRef<Value>)> body) {
  return loop(arith::AddIOp::create(b, begin, threadIndex()), end,
              idx(threads), init, body, /*unroll=*/4);
}

llvm::SmallVector<Value> KernelBuilder::loop(
    Value lower, Value end, Value step, llvm::ArrayRef<Value> init,
    llvm::function_ref<llvm::SmallVector<Value>(Value, llvm::ArrayRef<Value>)> body,
    unsigned unroll) {
  auto emitLoop = [&](Value from, Value to, Value by, llvm::ArrayRef<Value> start,
                      unsigned copies) {
    auto loop = scf::ForOp::create(
        b, from, to, by, start,
        [&](OpBuilder &nested, Location, Value iv, ValueRange args) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nested.getInsertionBlock(), nested.getInsertionPoint());
          llvm::SmallVector<Value> acc(args.begin(), args.end());
          for (unsigned k = 0; k < copies; ++k) {
            Value at = k ? Value(arith::AddIOp::create(
                               b, iv, arith::MulIOp::create(b, step, idx(k))))
                         : iv;
            pushScope();
            acc = body(at, acc);
            popScope();
          }
          scf::YieldOp::create(b, acc);
        });
    return llvm::SmallVector<Value>(loop.getResults().begin(), loop.getResults().end());
  };
  if (unroll <= 1)
    return emitLoop(lower, end, step, init, 1);
  // Unrolled: while the last of |unroll| iterations is in range, run the
  // body |unroll| times in straight-line code (their loads are independent
  // of the carried values, so they can all be in flight at once; the
  // carried values see the same order as in the plain loop), then the
  // remaining iterations one by one. scf.for compares signed, so a negative
  // mainEnd runs no unrolled iteration.
  Value wide = arith::MulIOp::create(b, step, idx(unroll));
  Value mainEnd = arith::SubIOp::create(b, end, arith::MulIOp::create(b, step, idx(unroll - 1)));
  llvm::SmallVector<Value> acc = emitLoop(lower, mainEnd, wide, init, unroll);
  Value span = arith::MaxSIOp::create(b, arith::SubIOp::create(b, mainEnd, lower), idx(0));
  Value rounds = arith::DivUIOp::create(
      b, arith::AddIOp::create(b, span, arith::SubIOp::create(b, wide, idx(1))), wide);
  Value tailStart = arith::AddIOp::create(b, lower, arith::MulIOp::create(b, rounds, wide));
  return emitLoop(tailStart, end, step, acc, 1);
}

void KernelBuilder::ifThen(Value cond, llvm::function_ref<void()> body) {
  auto ifOp = scf::IfOp::create(b, cond, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&ifOp.getThenRegion().front());
  pushScope();
  body();
  popScope();
}

void KernelBuilder::ifThenElse(Value cond, llvm::function_ref<void()> thenBody,
                               llvm::function_ref<void()> elseBody) {
  auto ifOp = scf::IfOp::create(b, cond, /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  for (auto [region, body] : {std::pair{&ifOp.getThenRegion(), thenBody},
                              std::pair{&ifOp.getElseRegion(), elseBody}}) {
    b.setInsertionPointToStart(&region->front());
    pushScope();
    body();
    popScope();
  }
}

