//===- KernelBuilder.cpp - gpu.func bodies for tx kernel groups -----------===//
//
// SPDX-License-Identifier: Apache-2.0
// The elemental emitter and the loop/reduction helpers of KernelBuilder.h.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "txopt/Dialect/Tx/IR/TxOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
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
                             unsigned workgroupFloats)
    : b(gpuModule.getLoc(), gpuModule.getContext()), plan(plan) {
  b.setInsertionPointToEnd(gpuModule.getBody());
  llvm::SmallVector<Type> argTypes;
  for (Value v : outputs)
    argTypes.push_back(bufferType(storageOf(v, plan)));
  for (Value v : inputs)
    argTypes.push_back(bufferType(storageOf(v, plan)));
  llvm::SmallVector<Type> workgroup;
  if (workgroupFloats)
    workgroup.push_back(MemRefType::get(
        {workgroupFloats}, b.getF32Type(), MemRefLayoutAttrInterface(),
        gpu::AddressSpaceAttr::get(b.getContext(),
                                   gpu::AddressSpace::Workgroup)));
  kernel = gpu::GPUFuncOp::create(b, name, b.getFunctionType(argTypes, {}),
                                  workgroup);
  kernel->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
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
  scopes.emplace_back();
}

void KernelBuilder::finish() { gpu::ReturnOp::create(b); }

Value KernelBuilder::insertBufferArgument(unsigned position, MemRefType type) {
  auto funcType = kernel.getFunctionType();
  llvm::SmallVector<Type> args(funcType.getInputs().begin(), funcType.getInputs().end());
  args.insert(args.begin() + position, type);
  kernel.setType(b.getFunctionType(args, {}));
  return kernel.getBody().front().insertArgument(position, type, kernel.getLoc());
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
    Operation *def = v.getDefiningOp();
    if (plan.isMaterialized(v) || !def || !isElementalOp(def)) {
      inputs.insert(v);
      continue;
    }
    visitOperands(def);
  }
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

Value KernelBuilder::threadIndex() {
  return gpu::ThreadIdOp::create(b, gpu::Dimension::x);
}

Value KernelBuilder::blockIndex() {
  return gpu::BlockIdOp::create(b, gpu::Dimension::x);
}

Value KernelBuilder::globalThreadIndex() {
  Value base = arith::MulIOp::create(b, blockIndex(), idx(kBlockSize));
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
  Value raw = memref::LoadOp::create(b, buffer, ValueRange{linear});
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

void KernelBuilder::store(Value tensor, Value linear, Value scalar) {
  // A result stored as its cast: rounding into the cast's type here is what
  // the tx.cast would have done (the result itself is f32).
  if (auto it = storedAs.find(tensor); it != storedAs.end())
    return store(it->second, linear, scalar);
  Value buffer = bufferOf(tensor);
  if (!buffer)
    return;
  Type element = tensorType(tensor).getElementType();
  Value raw = scalar;
  if (element.isInteger(1))
    raw = arith::ExtUIOp::create(b, b.getI8Type(), scalar);
  else if (element.isBF16() || element.isF16())
    raw = arith::TruncFOp::create(b, element, scalar);
  else if (isFP8(element))
    raw = emitFP8Encode(b, scalar, element);
  else if (auto integer = dyn_cast<IntegerType>(element))
    if (integer.getWidth() < 64)
      raw = arith::TruncIOp::create(b, element, scalar);
  memref::StoreOp::create(b, raw, buffer, ValueRange{linear});
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

void KernelBuilder::pushScope() { scopes.emplace_back(); }
void KernelBuilder::popScope() { scopes.pop_back(); }

Value KernelBuilder::emit(Value v, llvm::ArrayRef<Value> index) {
  Operation *def = v.getDefiningOp();
  if (plan.isMaterialized(v) || !def || !isElementalOp(def))
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

/// The index of a numpy-broadcast operand of shape |operandShape| for the
/// result element at |index|.
static llvm::SmallVector<Value>
broadcastIndex(KernelBuilder &kb, llvm::ArrayRef<int64_t> operandShape,
               llvm::ArrayRef<Value> index) {
  llvm::SmallVector<Value> out;
  size_t offset = index.size() - operandShape.size();
  for (size_t d = 0; d < operandShape.size(); ++d)
    out.push_back(operandShape[d] == 1 ? kb.idx(0) : index[offset + d]);
  return out;
}

/// ONNX Slice's clamped start on one axis (see tx.slice's description).
static int64_t sliceStart(int64_t start, int64_t step, int64_t dim) {
  if (start < 0)
    start = start < -dim ? 0 : start + dim;
  if (step > 0)
    return std::min(std::max<int64_t>(start, 0), dim);
  return std::min(std::max<int64_t>(start, 0), dim - 1);
}

/// Operand |i| of |op| at the numpy-broadcast image of |index|.
Value KernelBuilder::emitOperand(Operation *op, unsigned i,
                                 llvm::ArrayRef<Value> index) {
  Value operand = op->getOperand(i);
  return emit(operand, broadcastIndex(*this, tensorType(operand).getShape(), index));
}

/// Reports that |op| cannot be computed in a kernel; a zero stands in so
/// emission can continue to the end (the kernel is then discarded).
Value KernelBuilder::emitFailure(Operation *op, const llvm::Twine &why,
                                 Type elementType) {
  op->emitError() << why;
  failed = true;
  return arith::ConstantOp::create(b, b.getZeroAttr(computeType(elementType)));
}

Value KernelBuilder::emitOp(Operation *op, unsigned resultNumber,
                            Type elementType, llvm::ArrayRef<int64_t> shape,
                            llvm::ArrayRef<Value> index) {
  if (isa<tx::TriluOp, tx::ReshapeOp, tx::SqueezeOp, tx::UnsqueezeOp,
          tx::IdentityOp, tx::ExpandOp, tx::TransposeOp, tx::SliceOp,
          tx::ConcatOp, tx::PadOp, tx::SplitOp>(op))
    return emitDataMovement(op, resultNumber, elementType, shape, index);
  if (isa<tx::GatherOp, tx::GatherElementsOp, tx::GatherNDOp, tx::SliceGradOp,
          tx::ConstantOfShapeOp, tx::CumSumOp>(op))
    return emitIndexed(op, resultNumber, elementType, shape, index);
  if (isa<tx::DropoutOp>(op))
    return emitDropout(op, resultNumber, elementType, shape, index);
  return emitArithmetic(op, resultNumber, elementType, shape, index);
}

/// Constants, arithmetic, comparisons, logic, select, math, casts and FP8
/// quantization: the element of each operand at the broadcast index.
Value KernelBuilder::emitArithmetic(Operation *op, unsigned resultNumber,
                            Type elementType, llvm::ArrayRef<int64_t> shape,
                            llvm::ArrayRef<Value> index) {
  auto operandAt = [&](unsigned i) { return emitOperand(op, i, index); };
  auto operandType = [&](unsigned i) {
    return tensorType(op->getOperand(i)).getElementType();
  };
  auto round = [&](Value v) { return roundTo(v, elementType); };
  auto fail = [&](const llvm::Twine &why) { return emitFailure(op, why, elementType); };
  bool isFloat = isa<FloatType>(elementType);
  (void)resultNumber, (void)shape, (void)operandAt, (void)operandType, (void)isFloat,
      (void)round;
  return llvm::TypeSwitch<Operation *, Value>(op)
      .Case([&](tx::ConstantOp c) -> Value {
        auto attr = cast<ElementsAttr>(c.getValue());
        if (auto dense = dyn_cast<DenseFPElementsAttr>(attr)) {
          double v = dense.getSplatValue<APFloat>().convertToDouble();
          return arith::ConstantOp::create(
              b, b.getFloatAttr(computeType(elementType), v));
        }
        if (auto dense = dyn_cast<DenseIntElementsAttr>(attr)) {
          APInt v = dense.getSplatValue<APInt>();
          if (elementType.isInteger(1))
            return arith::ConstantIntOp::create(b, v.getBoolValue(), 1);
          return arith::ConstantIntOp::create(b, v.getSExtValue(), 64);
        }
        return fail("unsupported constant on the GPU");
      })
      .Case<tx::AddOp, tx::SubOp, tx::MulOp, tx::DivOp, tx::MaxOp,
            tx::MinOp>([&](Operation *) -> Value {
        Value l = operandAt(0), r = operandAt(1);
        if (isFloat) {
          Value v = llvm::TypeSwitch<Operation *, Value>(op)
                        .Case([&](tx::AddOp) { return Value(arith::AddFOp::create(b, l, r)); })
                        .Case([&](tx::SubOp) { return Value(arith::SubFOp::create(b, l, r)); })
                        .Case([&](tx::MulOp) { return Value(arith::MulFOp::create(b, l, r)); })
                        .Case([&](tx::DivOp) { return Value(arith::DivFOp::create(b, l, r)); })
                        .Case([&](tx::MaxOp) { return Value(arith::MaximumFOp::create(b, l, r)); })
                        .Default([&](Operation *) { return Value(arith::MinimumFOp::create(b, l, r)); });
          return round(v);
        }
        Value v = llvm::TypeSwitch<Operation *, Value>(op)
                      .Case([&](tx::AddOp) { return Value(arith::AddIOp::create(b, l, r)); })
                      .Case([&](tx::SubOp) { return Value(arith::SubIOp::create(b, l, r)); })
                      .Case([&](tx::MulOp) { return Value(arith::MulIOp::create(b, l, r)); })
                      .Case([&](tx::DivOp) { return Value(arith::DivSIOp::create(b, l, r)); })
                      .Case([&](tx::MaxOp) { return Value(arith::MaxSIOp::create(b, l, r)); })
                      .Default([&](Operation *) { return Value(arith::MinSIOp::create(b, l, r)); });
        return castScalar(v, b.getI64Type(), elementType);
      })
      .Case([&](tx::PowOp pow) -> Value {
        Value base = operandAt(0);
        if (!isFloat)
          return fail("integer pow is not supported on the GPU");
        // x^2 and x^3, as exporters write them, as multiplications: exact
        // for the square, one rounding more for the cube.
        if (auto exponent = pow.getRhs().getDefiningOp<tx::ConstantOp>()) {
          auto attr = dyn_cast<DenseFPElementsAttr>(exponent.getValue());
          if (attr && attr.isSplat()) {
            double e = attr.getSplatValue<APFloat>().convertToDouble();
            if (e == 2.0)
              return round(arith::MulFOp::create(b, base, base));
            if (e == 1.0)
              return base;
          }
        }
        Value e = operandAt(1);
        if (!isa<FloatType>(e.getType()))
          e = arith::SIToFPOp::create(b, base.getType(), e);
        return round(math::PowFOp::create(b, base, e));
      })
      .Case([&](tx::ModOp mod) -> Value {
        Value l = operandAt(0), r = operandAt(1);
        if (isFloat) {
          if (mod.getFmod())
            return round(arith::RemFOp::create(b, l, r));
          Value q = math::FloorOp::create(b, arith::DivFOp::create(b, l, r));
          return round(arith::SubFOp::create(b, l, arith::MulFOp::create(b, q, r)));
        }
        // Python-style remainder: the sign of the divisor.
        Value rem = arith::RemSIOp::create(b, l, r);
        Value zero = arith::ConstantIntOp::create(b, 0, 64);
        Value remNeg = arith::CmpIOp::create(b, arith::CmpIPredicate::slt, rem, zero);
        Value rNeg = arith::CmpIOp::create(b, arith::CmpIPredicate::slt, r, zero);
        Value nonzero = arith::CmpIOp::create(b, arith::CmpIPredicate::ne, rem, zero);
        Value differ = arith::XOrIOp::create(b, remNeg, rNeg);
        Value fix = arith::AndIOp::create(b, differ, nonzero);
        return arith::SelectOp::create(b, fix, arith::AddIOp::create(b, rem, r), rem);
      })
      .Case<tx::EqualOp, tx::LessOp, tx::LessOrEqualOp, tx::GreaterOp,
            tx::GreaterOrEqualOp>([&](Operation *) -> Value {
        Value l = operandAt(0), r = operandAt(1);
        if (isa<FloatType>(l.getType())) {
          auto p = llvm::TypeSwitch<Operation *, arith::CmpFPredicate>(op)
                       .Case([](tx::EqualOp) { return arith::CmpFPredicate::OEQ; })
                       .Case([](tx::LessOp) { return arith::CmpFPredicate::OLT; })
                       .Case([](tx::LessOrEqualOp) { return arith::CmpFPredicate::OLE; })
                       .Case([](tx::GreaterOp) { return arith::CmpFPredicate::OGT; })
                       .Default([](Operation *) { return arith::CmpFPredicate::OGE; });
          return arith::CmpFOp::create(b, p, l, r);
        }
        auto p = llvm::TypeSwitch<Operation *, arith::CmpIPredicate>(op)
                     .Case([](tx::EqualOp) { return arith::CmpIPredicate::eq; })
                     .Case([](tx::LessOp) { return arith::CmpIPredicate::slt; })
                     .Case([](tx::LessOrEqualOp) { return arith::CmpIPredicate::sle; })
                     .Case([](tx::GreaterOp) { return arith::CmpIPredicate::sgt; })
                     .Default([](Operation *) { return arith::CmpIPredicate::sge; });
        return arith::CmpIOp::create(b, p, l, r);
      })
      .Case([&](tx::AndOp) { return Value(arith::AndIOp::create(b, operandAt(0), operandAt(1))); })
      .Case([&](tx::OrOp) { return Value(arith::OrIOp::create(b, operandAt(0), operandAt(1))); })
      .Case([&](tx::XorOp) { return Value(arith::XOrIOp::create(b, operandAt(0), operandAt(1))); })
      .Case([&](tx::NotOp) {
        return Value(arith::XOrIOp::create(b, operandAt(0),
                                           arith::ConstantIntOp::create(b, 1, 1)));
      })
      .Case([&](tx::WhereOp) -> Value {
        Value c = operandAt(0), l = operandAt(1), r = operandAt(2);
        return arith::SelectOp::create(b, c, l, r);
      })
      .Case<tx::SqrtOp, tx::ReciprocalOp, tx::ErfOp, tx::TanhOp, tx::SigmoidOp,
            tx::ExpOp, tx::LogOp, tx::SinOp, tx::CosOp, tx::NegOp,
            tx::ReluOp>([&](Operation *) -> Value {
        Value x = operandAt(0);
        if (!isFloat) {
          if (isa<tx::NegOp>(op))
            return castScalar(arith::SubIOp::create(b, arith::ConstantIntOp::create(b, 0, 64), x),
                              b.getI64Type(), elementType);
          if (isa<tx::ReluOp>(op))
            return arith::MaxSIOp::create(b, x, arith::ConstantIntOp::create(b, 0, 64));
          return fail("integer math is not supported on the GPU");
        }
        Type ct = x.getType();
        Value one = arith::ConstantOp::create(b, b.getFloatAttr(ct, 1.0));
        Value v = llvm::TypeSwitch<Operation *, Value>(op)
                      .Case([&](tx::SqrtOp) { return Value(math::SqrtOp::create(b, x)); })
                      .Case([&](tx::ReciprocalOp) { return Value(arith::DivFOp::create(b, one, x)); })
                      .Case([&](tx::ErfOp) { return Value(math::ErfOp::create(b, x)); })
                      .Case([&](tx::TanhOp) { return Value(math::TanhOp::create(b, x)); })
                      .Case([&](tx::SigmoidOp) {
                        Value e = math::ExpOp::create(b, arith::NegFOp::create(b, x));
                        return Value(arith::DivFOp::create(b, one, arith::AddFOp::create(b, one, e)));
                      })
                      .Case([&](tx::ExpOp) { return Value(math::ExpOp::create(b, x)); })
                      .Case([&](tx::LogOp) { return Value(math::LogOp::create(b, x)); })
                      .Case([&](tx::SinOp) { return Value(math::SinOp::create(b, x)); })
                      .Case([&](tx::CosOp) { return Value(math::CosOp::create(b, x)); })
                      .Case([&](tx::NegOp) { return Value(arith::NegFOp::create(b, x)); })
                      .Default([&](Operation *) {
                        Value zero = arith::ConstantOp::create(b, b.getFloatAttr(ct, 0.0));
                        Value pos = arith::CmpFOp::create(b, arith::CmpFPredicate::OGT, x, zero);
                        return Value(arith::SelectOp::create(b, pos, x, zero));
                      });
        return round(v);
      })
      .Case([&](tx::IsNaNOp) -> Value {
        Value x = operandAt(0);
        return arith::CmpFOp::create(b, arith::CmpFPredicate::UNO, x, x);
      })
      .Case([&](tx::CastOp) -> Value {
        return castScalar(operandAt(0), operandType(0), elementType);
      })
      .Case([&](tx::QuantizeOp) -> Value {
        // f32(x * scale), then to FP8: the executor's two roundings.
        return round(arith::MulFOp::create(b, operandAt(0), operandAt(1)));
      })
      .Case([&](tx::DequantizeOp) -> Value {
        // The FP8 value is exact in f32; f32(q * scale_inv), then the type.
        return round(arith::MulFOp::create(b, operandAt(0), operandAt(1)));
      })
      .Default([&](Operation *) -> Value {
        return fail("'" + op->getName().getStringRef() +
                    "' cannot be computed inside a GPU kernel");
      });
}

/// Reshapes, transposes, slices, concatenation, padding, splits, expand,
/// trilu: the element of the input at a remapped index.
Value KernelBuilder::emitDataMovement(Operation *op, unsigned resultNumber,
                            Type elementType, llvm::ArrayRef<int64_t> shape,
                            llvm::ArrayRef<Value> index) {
  auto operandAt = [&](unsigned i) { return emitOperand(op, i, index); };
  auto operandType = [&](unsigned i) {
    return tensorType(op->getOperand(i)).getElementType();
  };
  auto round = [&](Value v) { return roundTo(v, elementType); };
  auto fail = [&](const llvm::Twine &why) { return emitFailure(op, why, elementType); };
  bool isFloat = isa<FloatType>(elementType);
  (void)resultNumber, (void)shape, (void)operandAt, (void)operandType, (void)isFloat,
      (void)round;
  return llvm::TypeSwitch<Operation *, Value>(op)
      .Case([&](tx::TriluOp trilu) -> Value {
        Value x = emit(trilu.getInput(), index);
        size_t r = index.size();
        Value row = arith::IndexCastOp::create(b, b.getI64Type(), index[r - 2]);
        Value col = arith::IndexCastOp::create(b, b.getI64Type(), index[r - 1]);
        Value diff = arith::SubIOp::create(b, col, row);
        Value k = arith::ConstantIntOp::create(b, static_cast<int64_t>(trilu.getK()), 64);
        Value keep = arith::CmpIOp::create(
            b, trilu.getUpper() ? arith::CmpIPredicate::sge : arith::CmpIPredicate::sle,
            diff, k);
        Value zero = arith::ConstantOp::create(b, b.getZeroAttr(x.getType()));
        return arith::SelectOp::create(b, keep, x, zero);
      })
      .Case<tx::ReshapeOp, tx::SqueezeOp, tx::UnsqueezeOp>([&](Operation *) -> Value {
        Value input = op->getOperand(0);
        Value linear = linearize(index, shape);
        return emit(input, delinearize(linear, tensorType(input).getShape()));
      })
      .Case([&](tx::IdentityOp) { return emit(op->getOperand(0), index); })
      .Case([&](tx::ExpandOp) { return operandAt(0); })
      .Case([&](tx::TransposeOp t) -> Value {
        llvm::SmallVector<Value> in(index.size());
        for (auto [i, p] : llvm::enumerate(t.getPerm()))
          in[p] = index[i];
        return emit(t.getInput(), in);
      })
      .Case([&](tx::SliceOp s) -> Value {
        auto inShape = tensorType(s.getInput()).getShape();
        llvm::SmallVector<Value> in(index.begin(), index.end());
        for (auto [i, axisAttr] : llvm::enumerate(s.getAxes())) {
          int64_t axis = axisAttr < 0 ? axisAttr + inShape.size() : axisAttr;
          int64_t step = s.getSteps()[i];
          int64_t start = sliceStart(s.getStarts()[i], step, inShape[axis]);
          // start + i * step, in i64 so a negative step stays exact.
          Value pos = arith::IndexCastOp::create(b, b.getI64Type(), index[axis]);
          Value scaled = arith::MulIOp::create(b, pos, arith::ConstantIntOp::create(b, step, 64));
          Value sum = arith::AddIOp::create(b, scaled, arith::ConstantIntOp::create(b, start, 64));
          in[axis] = arith::IndexCastOp::create(b, b.getIndexType(), sum);
        }
        return emit(s.getInput(), in);
      })
      .Case([&](tx::ConcatOp c) -> Value {
        int64_t rank = shape.size();
        int64_t axis = static_cast<int64_t>(c.getAxis()) < 0 ? static_cast<int64_t>(c.getAxis()) + rank : static_cast<int64_t>(c.getAxis());
        llvm::SmallVector<std::pair<Value, int64_t>> parts; // (part, offset)
        int64_t offset = 0;
        for (Value part : c.getInputs()) {
          int64_t size = tensorType(part).getShape()[axis];
          if (size > 0)
            parts.push_back({part, offset});
          offset += size;
        }
        if (parts.empty())
          return fail("concat of empty tensors");
        // Only the part the element lies in is read: an if/else chain on
        // the position along the axis. (Reading every part at a clamped
        // index and selecting multiplied the loads by the number of parts;
        // a warp's elements are consecutive, so it rarely diverges.)
        Type resultType = computeType(elementType);
        std::function<Value(size_t)> emitFrom = [&](size_t k) -> Value {
          auto [part, partOffset] = parts[k];
          llvm::SmallVector<Value> in(index.begin(), index.end());
          in[axis] = arith::SubIOp::create(b, index[axis], idx(partOffset));
          if (k + 1 == parts.size())
            return emit(part, in);
          Value inPart = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, index[axis],
                                               idx(parts[k + 1].second));
          auto ifOp = scf::IfOp::create(b, TypeRange{resultType}, inPart, /*withElseRegion=*/true);
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(&ifOp.getThenRegion().front());
          pushScope();
          Value here = emit(part, in);
          popScope();
          scf::YieldOp::create(b, here);
          b.setInsertionPointToStart(&ifOp.getElseRegion().front());
          pushScope();
          Value later = emitFrom(k + 1);
          popScope();
          scf::YieldOp::create(b, later);
          return ifOp.getResult(0);
        };
        return emitFrom(0);
      })
      .Case([&](tx::PadOp p) -> Value {
        auto inShape = tensorType(p.getInput()).getShape();
        size_t rank = inShape.size();
        llvm::SmallVector<Value> in;
        Value inside = arith::ConstantIntOp::create(b, 1, 1);
        for (size_t d = 0; d < rank; ++d) {
          Value pos = arith::SubIOp::create(
              b, arith::IndexCastOp::create(b, b.getI64Type(), index[d]),
              arith::ConstantIntOp::create(b, p.getPads()[d], 64));
          Value lo = arith::CmpIOp::create(b, arith::CmpIPredicate::sge, pos,
                                           arith::ConstantIntOp::create(b, 0, 64));
          Value hi = arith::CmpIOp::create(b, arith::CmpIPredicate::slt, pos,
                                           arith::ConstantIntOp::create(b, inShape[d], 64));
          inside = arith::AndIOp::create(b, inside, arith::AndIOp::create(b, lo, hi));
          Value clamped = arith::MaxSIOp::create(
              b, arith::MinSIOp::create(b, pos, arith::ConstantIntOp::create(b, std::max<int64_t>(inShape[d] - 1, 0), 64)),
              arith::ConstantIntOp::create(b, 0, 64));
          in.push_back(arith::IndexCastOp::create(b, b.getIndexType(), clamped));
        }
        Value v = emit(p.getInput(), in);
        Value fill;
        Type ct = computeType(elementType);
        if (isa<FloatType>(ct))
          fill = roundTo(arith::ConstantOp::create(b, b.getFloatAttr(ct, p.getValue().convertToDouble())), elementType);
        else if (ct.isInteger(1))
          fill = arith::ConstantIntOp::create(b, p.getValue().convertToDouble() != 0.0, 1);
        else
          fill = arith::ConstantIntOp::create(b, static_cast<int64_t>(p.getValue().convertToDouble()), 64);
        return arith::SelectOp::create(b, inside, v, fill);
      })
      .Case([&](tx::SplitOp s) -> Value {
        int64_t rank = shape.size();
        int64_t axis = static_cast<int64_t>(s.getAxis()) < 0 ? static_cast<int64_t>(s.getAxis()) + rank : static_cast<int64_t>(s.getAxis());
        int64_t offset = 0;
        for (unsigned i = 0; i < resultNumber; ++i)
          offset += tensorType(s.getResult(i)).getShape()[axis];
        llvm::SmallVector<Value> in(index.begin(), index.end());
        in[axis] = arith::AddIOp::create(b, index[axis], idx(offset));
        return emit(s.getInput(), in);
      })
      .Default([&](Operation *) -> Value {
        return fail("'" + op->getName().getStringRef() +
                    "' cannot be computed inside a GPU kernel");
      });
}

/// Gathers (by index tensors), slice gradients, constant_of_shape and
/// cum_sum: elements found through other elements or loops.
Value KernelBuilder::emitIndexed(Operation *op, unsigned resultNumber,
                            Type elementType, llvm::ArrayRef<int64_t> shape,
                            llvm::ArrayRef<Value> index) {
  auto operandAt = [&](unsigned i) { return emitOperand(op, i, index); };
  auto operandType = [&](unsigned i) {
    return tensorType(op->getOperand(i)).getElementType();
  };
  auto round = [&](Value v) { return roundTo(v, elementType); };
  auto fail = [&](const llvm::Twine &why) { return emitFailure(op, why, elementType); };
  bool isFloat = isa<FloatType>(elementType);
  (void)resultNumber, (void)shape, (void)operandAt, (void)operandType, (void)isFloat,
      (void)round;
  return llvm::TypeSwitch<Operation *, Value>(op)
      .Case([&](tx::GatherOp g) -> Value {
        auto dataShape = tensorType(g.getData()).getShape();
        auto indicesShape = tensorType(g.getIndices()).getShape();
        int64_t axis = static_cast<int64_t>(g.getAxis()) < 0 ? static_cast<int64_t>(g.getAxis()) + dataShape.size() : static_cast<int64_t>(g.getAxis());
        size_t ni = indicesShape.size();
        llvm::SmallVector<Value> indicesIndex(index.begin() + axis,
                                              index.begin() + axis + ni);
        Value which = emit(g.getIndices(), indicesIndex);
        int64_t dim = dataShape[axis];
        // Negative indices count from the end; out-of-range ones are clamped
        // (the runtime checks token ids against the table before a step).
        which = clampIndex(which, dim);
        llvm::SmallVector<Value> in(index.begin(), index.begin() + axis);
        in.push_back(arith::IndexCastOp::create(b, b.getIndexType(), which));
        in.append(index.begin() + axis + ni, index.end());
        return emit(g.getData(), in);
      })
      .Case([&](tx::GatherElementsOp g) -> Value {
        // data[i with i[axis] = indices[i]]; negative indices count from
        // the end, out-of-range ones are clamped (as tx.gather's).
        auto dataShape = tensorType(g.getData()).getShape();
        int64_t axis = static_cast<int64_t>(g.getAxis());
        if (axis < 0)
          axis += dataShape.size();
        Value which = emit(g.getIndices(), index);
        int64_t dim = dataShape[axis];
        which = clampIndex(which, dim);
        llvm::SmallVector<Value> in(index.begin(), index.end());
        in[axis] = arith::IndexCastOp::create(b, b.getIndexType(), which);
        return emit(g.getData(), in);
      })
      .Case([&](tx::ConstantOfShapeOp c) -> Value {
        auto attr = cast<ElementsAttr>(c.getValue());
        Type ct = computeType(elementType);
        if (isa<FloatType>(ct))
          return roundTo(arith::ConstantOp::create(
                             b, b.getFloatAttr(ct, (*attr.value_begin<APFloat>()).convertToDouble())),
                         elementType);
        APInt v = *attr.value_begin<APInt>();
        if (ct.isInteger(1))
          return arith::ConstantIntOp::create(b, v.getBoolValue(), 1);
        return arith::ConstantIntOp::create(b, v.getSExtValue(), 64);
      })
      .Case([&](tx::GatherNDOp g) -> Value {
        // result[a, i, s] = data[a, indices[a, i, :], s] (tx.gather_nd).
        auto dataShape = tensorType(g.getData()).getShape();
        auto indicesShape = tensorType(g.getIndices()).getShape();
        size_t q = indicesShape.size();
        int64_t bd = static_cast<int64_t>(g.getBatchDims());
        int64_t k = indicesShape.back();
        llvm::SmallVector<Value> in(index.begin(), index.begin() + bd);
        llvm::SmallVector<Value> tuple(index.begin(), index.begin() + (q - 1));
        tuple.push_back(Value());
        for (int64_t t = 0; t < k; ++t) {
          tuple.back() = idx(t);
          Value which = clampIndex(emit(g.getIndices(), tuple), dataShape[bd + t]);
          in.push_back(arith::IndexCastOp::create(b, b.getIndexType(), which));
        }
        in.append(index.begin() + (q - 1), index.end());
        return emit(g.getData(), in);
      })
      .Case([&](tx::SliceGradOp sg) -> Value {
        // grad at (k - offset) / stride where that is a whole, in-range
        // position on every dim; 0 elsewhere.
        auto gradShape = tensorType(sg.getGrad()).getShape();
        Value inside = arith::ConstantIntOp::create(b, 1, 1);
        llvm::SmallVector<Value> in;
        Value zero = arith::ConstantIntOp::create(b, 0, 64);
        for (size_t d = 0; d < index.size(); ++d) {
          int64_t stride = sg.getStrides()[d];
          Value off = arith::SubIOp::create(
              b, arith::IndexCastOp::create(b, b.getI64Type(), index[d]),
              arith::ConstantIntOp::create(b, sg.getOffsets()[d], 64));
          Value s = arith::ConstantIntOp::create(b, stride, 64);
          Value q = arith::DivSIOp::create(b, off, s);
          Value whole = arith::CmpIOp::create(b, arith::CmpIPredicate::eq,
                                              arith::RemSIOp::create(b, off, s), zero);
          Value lo = arith::CmpIOp::create(b, arith::CmpIPredicate::sge, q, zero);
          Value hi = arith::CmpIOp::create(b, arith::CmpIPredicate::slt, q,
                                           arith::ConstantIntOp::create(b, gradShape[d], 64));
          inside = arith::AndIOp::create(b, inside, arith::AndIOp::create(b, whole, arith::AndIOp::create(b, lo, hi)));
          Value clamped = arith::MaxSIOp::create(
              b, arith::MinSIOp::create(b, q, arith::ConstantIntOp::create(b, std::max<int64_t>(gradShape[d] - 1, 0), 64)), zero);
          in.push_back(arith::IndexCastOp::create(b, b.getIndexType(), clamped));
        }
        Value v = emit(sg.getGrad(), in);
        Value z = arith::ConstantOp::create(b, b.getZeroAttr(v.getType()));
        return arith::SelectOp::create(b, inside, v, z);
      })
      .Case([&](tx::CumSumOp c) -> Value {
        // A loop over the summed positions of the axis (n per element:
        // fine for the short axes exporters cum-sum over).
        int64_t rank = shape.size();
        int64_t axis = static_cast<int64_t>(c.getAxis());
        if (axis < 0)
          axis += rank;
        int64_t n = shape[axis];
        Value pos = index[axis];
        Value lower, upper;
        bool rev = c.getReverse(), excl = c.getExclusive();
        if (!rev) {
          lower = idx(0);
          upper = excl ? pos : Value(arith::AddIOp::create(b, pos, idx(1)));
        } else {
          lower = excl ? Value(arith::AddIOp::create(b, pos, idx(1))) : pos;
          upper = idx(n);
        }
        Type ct = computeType(elementType);
        Value init = arith::ConstantOp::create(b, b.getZeroAttr(ct));
        auto loop = scf::ForOp::create(
            b, lower, upper, idx(1), ValueRange{init},
            [&](OpBuilder &nested, Location, Value j, ValueRange args) {
              OpBuilder::InsertionGuard guard(b);
              b.setInsertionPoint(nested.getInsertionBlock(), nested.getInsertionPoint());
              pushScope();
              llvm::SmallVector<Value> in(index.begin(), index.end());
              in[axis] = j;
              Value v = emit(c.getInput(), in);
              Value sum = isa<FloatType>(ct) ? Value(arith::AddFOp::create(b, args[0], v))
                                             : Value(arith::AddIOp::create(b, args[0], v));
              popScope();
              scf::YieldOp::create(b, sum);
            });
        Value total = loop.getResult(0);
        return isa<FloatType>(ct) ? roundTo(total, elementType)
                                  : castScalar(total, b.getI64Type(), elementType);
      })
      .Default([&](Operation *) -> Value {
        return fail("'" + op->getName().getStringRef() +
                    "' cannot be computed inside a GPU kernel");
      });
}

/// Dropout: the executor's counter-based mask, drawn per element.
Value KernelBuilder::emitDropout(Operation *op, unsigned resultNumber,
                            Type elementType, llvm::ArrayRef<int64_t> shape,
                            llvm::ArrayRef<Value> index) {
  auto operandAt = [&](unsigned i) { return emitOperand(op, i, index); };
  auto operandType = [&](unsigned i) {
    return tensorType(op->getOperand(i)).getElementType();
  };
  auto round = [&](Value v) { return roundTo(v, elementType); };
  auto fail = [&](const llvm::Twine &why) { return emitFailure(op, why, elementType); };
  bool isFloat = isa<FloatType>(elementType);
  (void)resultNumber, (void)shape, (void)operandAt, (void)operandType, (void)isFloat,
      (void)round;
  return llvm::TypeSwitch<Operation *, Value>(op)
      .Case([&](tx::DropoutOp d) -> Value {
        // The reference executor's counter-based mask (ElementwiseOps.cpp),
        // in wrapping 64-bit arithmetic: s = seed + key * K, then the
        // (index + 1)-th splitmix64 output, u = (z >> 11) * 2^-53.
        Value x = emit(d.getInput(), index);
        Value seed = arith::ConstantIntOp::create(b, d.getSeed(), 64);
        if (op->getNumOperands() > 1) {
          Value key = emit(op->getOperand(1), {});
          seed = arith::AddIOp::create(
              b, seed,
              arith::MulIOp::create(b, key, arith::ConstantIntOp::create(b, static_cast<int64_t>(0x2545F4914F6CDD1Dull), 64)));
        }
        Value linear = arith::IndexCastOp::create(b, b.getI64Type(), linearize(index, shape));
        auto c64 = [&](uint64_t v) { return arith::ConstantIntOp::create(b, static_cast<int64_t>(v), 64); };
        Value z = arith::AddIOp::create(
            b, seed, arith::MulIOp::create(b, arith::AddIOp::create(b, linear, c64(1)), c64(0x9E3779B97F4A7C15ull)));
        z = arith::MulIOp::create(b, arith::XOrIOp::create(b, z, arith::ShRUIOp::create(b, z, c64(30))), c64(0xBF58476D1CE4E5B9ull));
        z = arith::MulIOp::create(b, arith::XOrIOp::create(b, z, arith::ShRUIOp::create(b, z, c64(27))), c64(0x94D049BB133111EBull));
        z = arith::XOrIOp::create(b, z, arith::ShRUIOp::create(b, z, c64(31)));
        Value u = arith::MulFOp::create(
            b, arith::UIToFPOp::create(b, b.getF64Type(), arith::ShRUIOp::create(b, z, c64(11))),
            arith::ConstantOp::create(b, b.getF64FloatAttr(0x1.0p-53)));
        double ratio = d.getRatio().convertToFloat();
        Value keep = arith::CmpFOp::create(b, arith::CmpFPredicate::OGE, u,
                                           arith::ConstantOp::create(b, b.getF64FloatAttr(ratio)));
        // x * (1 / (1 - ratio)) in double, rounded once, as the executor does.
        Value wide = x.getType().isF64() ? x : Value(arith::ExtFOp::create(b, b.getF64Type(), x));
        Value scaled = arith::MulFOp::create(b, wide, arith::ConstantOp::create(b, b.getF64FloatAttr(1.0 / (1.0 - ratio))));
        Value narrow = x.getType().isF64() ? scaled : Value(arith::TruncFOp::create(b, x.getType(), scaled));
        narrow = round(narrow);
        Value zero = arith::ConstantOp::create(b, b.getZeroAttr(x.getType()));
        return arith::SelectOp::create(b, keep, narrow, zero);
      })
      .Default([&](Operation *) -> Value {
        return fail("'" + op->getName().getStringRef() +
                    "' cannot be computed inside a GPU kernel");
      });
}

//===----------------------------------------------------------------------===//
// Loops and reductions
//===----------------------------------------------------------------------===//

Value KernelBuilder::blockReduce(Value value, bool isMax) {
  auto combine = [&](Value x, Value y) -> Value {
    if (isMax)
      return arith::MaximumFOp::create(b, x, y);
    return arith::AddFOp::create(b, x, y);
  };
  auto warpReduce = [&](Value v) {
    for (int offset = 16; offset > 0; offset /= 2) {
      auto shuffle = gpu::ShuffleOp::create(b, v, offset, 32, gpu::ShuffleMode::XOR);
      v = combine(v, shuffle.getShuffleResult());
    }
    return v;
  };
  Value smem = kernel.getWorkgroupAttributions().front();
  Value tid = threadIndex();
  Value lane = arith::RemUIOp::create(b, tid, idx(32));
  Value warp = arith::DivUIOp::create(b, tid, idx(32));
  // The barrier first: the previous reduction's readers are done with smem.
  gpu::BarrierOp::create(b);
  Value partial = warpReduce(value);
  Value isLane0 = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, lane, idx(0));
  ifThen(isLane0, [&] { memref::StoreOp::create(b, partial, smem, ValueRange{warp}); });
  gpu::BarrierOp::create(b);
  // Every warp folds the per-warp partials, so every thread has the total.
  constexpr unsigned kWarps = kBlockSize / 32;
  Value inRange = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, lane, idx(kWarps));
  Value slot = arith::SelectOp::create(b, inRange, lane, idx(0));
  Value loaded = memref::LoadOp::create(b, smem, ValueRange{slot});
  Value identity = f32(isMax ? -std::numeric_limits<float>::infinity() : 0.0);
  return warpReduce(arith::SelectOp::create(b, inRange, loaded, identity));
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
              idx(kBlockSize), init, body, /*unroll=*/4);
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
