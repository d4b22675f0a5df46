//===- EmitDataMovement.cpp - The elemental emitter's index remapping -----===//
//
// SPDX-License-Identifier: Apache-2.0
// KernelBuilder's data-movement family (reshape, transpose, slice, concat,
// pad, split, expand, trilu), its indexed family (gathers, slice gradients,
// constant_of_shape, cum_sum) and dropout: ops whose element is another
// element found at a computed index, apart from the arithmetic of
// EmitArithmetic.cpp.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "txopt/Dialect/Tx/IR/TxOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::cuda;

static RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// ONNX Slice's clamped start on one axis (see tx.slice's description).
static int64_t sliceStart(int64_t start, int64_t step, int64_t dim) {
  if (start < 0)
    start = start < -dim ? 0 : start + dim;
  if (step > 0)
    return std::min(std::max<int64_t>(start, 0), dim);
  return std::min(std::max<int64_t>(start, 0), dim - 1);
}
/// concat: the element of the one input the position along the axis lies in.
Value KernelBuilder::emitConcat(Operation *op, Type elementType, llvm::ArrayRef<int64_t> shape,
                                llvm::ArrayRef<Value> index) {
  auto c = cast<tx::ConcatOp>(op);
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
    return emitFailure(op, "concat of empty tensors", elementType);
  // In a group of emitComputedGroup: one branch on the group's column.
  if (axis == rank - 1) {
    llvm::SmallVector<std::pair<int64_t, int64_t>> pieces;
    for (auto [part, partOffset] : parts)
      pieces.push_back({partOffset, partOffset + tensorType(part).getShape()[axis]});
    Value grouped = emitGroupPieces(op, index, elementType, pieces,
                                    [&](size_t k, llvm::ArrayRef<Value> at) {
      auto [part, partOffset] = parts[k];
      llvm::SmallVector<Value> in(at.begin(), at.end());
      in[axis] = arith::SubIOp::create(b, at[axis], idx(partOffset));
      return emit(part, in);
    });
    if (grouped)
      return grouped;
  }
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
}

/// Reshapes, transposes, slices, concatenation, padding, splits, expand,
/// trilu: the element of the input at a remapped index.
Value KernelBuilder::padFill(Operation *pad, Type elementType) {
  double value = cast<tx::PadOp>(pad).getValue().convertToDouble();
  Type ct = computeType(elementType);
  if (isa<FloatType>(ct))
    return roundTo(arith::ConstantOp::create(b, b.getFloatAttr(ct, value)), elementType);
  if (ct.isInteger(1))
    return arith::ConstantIntOp::create(b, value != 0.0, 1);
  return arith::ConstantIntOp::create(b, static_cast<int64_t>(value), 64);
}

llvm::SmallVector<Value>
KernelBuilder::emitComputedGroup(Value v, llvm::ArrayRef<llvm::SmallVector<Value>> indices,
                                 Value column) {
  std::optional<InnermostGroup> outer = std::move(innermostGroup);
  innermostGroup = InnermostGroup{{}, column};
  for (const auto &index : indices)
    innermostGroup->positions.push_back(index.back());
  // The concatenations and pads first: their branches then come before
  // every other access of the group, and those sit together after them,
  // where LLVM merges them (the first element's loads, left before a
  // branch, kept the rest from merging whole).
  emitGroupPiecesFirst(v, indices.front(), /*withRoot=*/false);
  llvm::SmallVector<Value> values;
  for (const auto &index : indices)
    values.push_back(emitComputed(v, index));
  innermostGroup = std::move(outer);
  return values;
}

void KernelBuilder::emitGroupPiecesFirst(Value root, llvm::ArrayRef<Value> index,
                                        bool withRoot) {
  auto shape = tensorType(root).getShape();
  llvm::SmallVector<Value> work{root};
  llvm::DenseSet<Value> seen{root};
  while (!work.empty()) {
    Value u = work.pop_back_val();
    Operation *def = u.getDefiningOp();
    // Same-shaped values only: their index is |index|.
    if (!def || (u != root && readsFromMemory(u, plan)) || tensorType(u).getShape() != shape)
      continue;
    if (isa<tx::ConcatOp, tx::PadOp, tx::SliceGradOp>(def)) {
      if (u != root || withRoot)
        emit(u, index);
      continue;
    }
    if (isa<tx::ReshapeOp, tx::SqueezeOp, tx::UnsqueezeOp>(def)) {
      Value input = def->getOperand(0);
      if (readsFromMemory(input, plan))
        continue;
      if (auto mapped = reshapedGroup(def, shape, index)) {
        std::optional<InnermostGroup> outer = std::move(innermostGroup);
        innermostGroup = std::move(mapped->second);
        emitGroupPiecesFirst(input, mapped->first, /*withRoot=*/true);
        innermostGroup = std::move(outer);
      }
      continue;
    }
    // A transpose that keeps the innermost axis (a head split or merge):
    // the input at the permuted index, the same group.
    if (auto transpose = dyn_cast<tx::TransposeOp>(def)) {
      auto perm = transpose.getPerm();
      Value input = transpose.getInput();
      if (!perm.empty() && perm.back() == static_cast<int64_t>(perm.size()) - 1 &&
          !readsFromMemory(input, plan)) {
        llvm::SmallVector<Value> in(index.size());
        for (auto [i, p] : llvm::enumerate(perm))
          in[p] = index[i];
        emitGroupPiecesFirst(input, in, /*withRoot=*/true);
      }
      continue;
    }
    if (isa<tx::TriluOp, tx::IdentityOp, tx::ExpandOp, tx::SliceOp, tx::SplitOp, tx::GatherOp,
            tx::GatherElementsOp, tx::GatherNDOp, tx::ConstantOfShapeOp, tx::CumSumOp,
            tx::DropoutOp>(def))
      continue;
    for (Value operand : def->getOperands())
      if (seen.insert(operand).second)
        work.push_back(operand);
  }
}

std::optional<std::pair<llvm::SmallVector<Value>, KernelBuilder::InnermostGroup>>
KernelBuilder::reshapedGroup(Operation *op, llvm::ArrayRef<int64_t> shape,
                             llvm::ArrayRef<Value> index) {
  if (!innermostGroup || index.empty())
    return std::nullopt;
  const InnermostGroup &group = *innermostGroup;
  int64_t lanes = static_cast<int64_t>(group.positions.size());
  const auto *at = llvm::find(group.positions, index.back());
  auto inShape = tensorType(op->getOperand(0)).getShape();
  if (at == group.positions.end() || inShape.empty() || inShape.back() % lanes != 0 ||
      shape.back() % lanes != 0)
    return std::nullopt;
  llvm::ArrayRef<Value> outer = index.drop_back();
  const ReshapedGroup *found = nullptr;
  for (const auto &scope : llvm::reverse(reshapedGroups)) {
    for (const ReshapedGroup &r : scope)
      if (r.reshape == op && r.column == group.column && llvm::equal(r.outer, outer)) {
        found = &r;
        break;
      }
    if (found)
      break;
  }
  if (!found) {
    // The group's first element, at a multiple of the group's size in the
    // input's innermost axis too (both lengths are multiples of it), so
    // the group is the same run of that axis: one index outside it.
    llvm::SmallVector<Value> first(index.begin(), index.end());
    first.back() = group.positions.front();
    llvm::SmallVector<Value> in = delinearize(linearize(first, shape), inShape);
    ReshapedGroup r{op, group.column, llvm::SmallVector<Value>(outer), {}, {{}, in.back()}};
    r.inOuter.assign(in.begin(), in.end() - 1);
    for (int64_t k = 0; k < lanes; ++k)
      r.inner.positions.push_back(arith::AddIOp::create(b, in.back(), idx(k)));
    reshapedGroups.back().push_back(std::move(r));
    found = &reshapedGroups.back().back();
  }
  llvm::SmallVector<Value> in(found->inOuter);
  in.push_back(found->inner.positions[at - group.positions.begin()]);
  return std::make_pair(in, found->inner);
}

Value KernelBuilder::emitGroupPieces(
    Operation *op, llvm::ArrayRef<Value> index, Type elementType,
    llvm::ArrayRef<std::pair<int64_t, int64_t>> pieces,
    llvm::function_ref<Value(size_t, llvm::ArrayRef<Value>)> emitPiece) {
  if (!innermostGroup || index.empty())
    return {};
  const InnermostGroup &group = *innermostGroup;
  int64_t lanes = static_cast<int64_t>(group.positions.size());
  const auto *at = llvm::find(group.positions, index.back());
  if (at == group.positions.end())
    return {};
  llvm::SmallVector<size_t> used; // the pieces with elements
  for (auto [i, piece] : llvm::enumerate(pieces)) {
    if (piece.first % lanes != 0 || piece.second % lanes != 0)
      return {};
    if (piece.second > piece.first)
      used.push_back(i);
  }
  if (used.empty())
    return {};
  // The group's elements: this one's index with each position innermost.
  llvm::SmallVector<llvm::SmallVector<Value>> indices;
  for (Value position : group.positions) {
    indices.emplace_back(index.begin(), index.end());
    indices.back().back() = position;
  }
  auto emitAll = [&](size_t piece) {
    llvm::SmallVector<Value> values;
    for (const auto &elementIndex : indices)
      values.push_back(emitPiece(piece, elementIndex));
    return values;
  };
  // if (column < end of piece 0) piece 0 else if (...) piece 1 ... else
  // the last: the group lies in one piece (its boundaries are whole
  // groups), so one branch serves all its elements.
  llvm::SmallVector<Type> types(lanes, computeType(elementType));
  std::function<llvm::SmallVector<Value>(size_t)> fromPiece =
      [&](size_t u) -> llvm::SmallVector<Value> {
    if (u + 1 == used.size())
      return emitAll(used[u]);
    Value inPiece = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, group.column,
                                          idx(pieces[used[u]].second));
    auto ifOp = scf::IfOp::create(b, types, inPiece, /*withElseRegion=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    pushScope();
    scf::YieldOp::create(b, emitAll(used[u]));
    popScope();
    b.setInsertionPointToStart(&ifOp.getElseRegion().front());
    pushScope();
    scf::YieldOp::create(b, fromPiece(u + 1));
    popScope();
    return llvm::SmallVector<Value>(ifOp.getResults());
  };
  llvm::SmallVector<Value> values = fromPiece(0);
  // The other elements find theirs where emitComputed looks first.
  size_t self = at - group.positions.begin();
  Value result = op->getResult(0);
  for (auto [k, elementIndex] : llvm::enumerate(indices)) {
    if (k == self)
      continue;
    llvm::SmallVector<Value> key{result};
    key.append(elementIndex.begin(), elementIndex.end());
    scopes.back()[op].push_back({key, values[k]});
  }
  return values[self];
}

Value KernelBuilder::emitDataMovement(Operation *op, unsigned resultNumber,
                            Type elementType, llvm::ArrayRef<int64_t> shape,
                            llvm::ArrayRef<Value> index) {
  auto operandAt = [&](unsigned i) { return emitOperand(op, i, index); };
  auto fail = [&](const llvm::Twine &why) { return emitFailure(op, why, elementType); };
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
        // Same elements, same order: memory is read at the same linear
        // index (no divisions and remainders to undo, which also keeps a
        // thread's consecutive loads visibly consecutive to LLVM).
        if (readsFromMemory(input, plan))
          return load(input, linear);
        // A float cast of a value in memory (a bf16 GEMM output widened, then
        // split into heads): the same linear index of the cast's input, then
        // the cast. Delinearized and linearized again (remainders by the
        // row length), the index hid from LLVM that a thread's loads are
        // consecutive and 16-byte aligned.
        if (auto castOp = input.getDefiningOp<tx::CastOp>()) {
          Value source = castOp.getInput();
          Type from = tensorType(source).getElementType(), to = tensorType(input).getElementType();
          if (readsFromMemory(source, plan) && isa<FloatType>(from) && isa<FloatType>(to))
            return castScalar(load(source, linear), from, to);
        }
        // In a group of emitComputedGroup that stays in one row of the
        // input's innermost axis: the input's group, so what the input
        // computes (Llama's rotary gradient, per head, before the heads are
        // merged) sees the group's elements as consecutive.
        if (auto mapped = reshapedGroup(op, shape, index)) {
          std::optional<InnermostGroup> outer = std::move(innermostGroup);
          innermostGroup = std::move(mapped->second);
          Value value = emit(input, mapped->first);
          innermostGroup = std::move(outer);
          return value;
        }
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
      .Case([&](tx::ConcatOp) { return emitConcat(op, elementType, shape, index); })
      .Case([&](tx::PadOp p) -> Value {
        auto inShape = tensorType(p.getInput()).getShape();
        size_t rank = inShape.size();
        // In a group of emitComputedGroup, padded along the innermost axis
        // only: one branch on the group's column between the fill before,
        // the input and the fill after.
        bool innermostOnly = rank > 0;
        for (size_t d = 0; d + 1 < rank; ++d)
          innermostOnly &= p.getPads()[d] == 0 && p.getPads()[rank + d] == 0;
        if (innermostOnly) {
          int64_t before = p.getPads()[rank - 1], size = inShape[rank - 1];
          llvm::SmallVector<std::pair<int64_t, int64_t>> pieces = {
              {0, before}, {before, before + size}, {before + size, shape[rank - 1]}};
          Value grouped = emitGroupPieces(op, index, elementType, pieces,
                                          [&](size_t k, llvm::ArrayRef<Value> at) {
            if (k != 1)
              return padFill(op, elementType);
            llvm::SmallVector<Value> in(at.begin(), at.end());
            in[rank - 1] = arith::SubIOp::create(b, at[rank - 1], idx(before));
            return emit(p.getInput(), in);
          });
          if (grouped)
            return grouped;
        }
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
        return arith::SelectOp::create(b, inside, v, padFill(op, elementType));
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

/// cum_sum: a loop over the summed positions of the axis (n per element:
/// fine for the short axes exporters cum-sum over).
Value KernelBuilder::emitCumSum(Operation *op, Type elementType, llvm::ArrayRef<int64_t> shape,
                                llvm::ArrayRef<Value> index) {
  auto c = cast<tx::CumSumOp>(op);
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
}

/// Gathers (by index tensors), slice gradients, constant_of_shape and
/// cum_sum: elements found through other elements or loops.
Value KernelBuilder::emitIndexed(Operation *op, unsigned resultNumber,
                            Type elementType, llvm::ArrayRef<int64_t> shape,
                            llvm::ArrayRef<Value> index) {
  auto fail = [&](const llvm::Twine &why) { return emitFailure(op, why, elementType); };
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
        // In a group of emitComputedGroup, a unit-stride slice of the
        // innermost axis only (the gradient of rotate-half's halves): one
        // branch on the group's column between the zeros and the gradient.
        size_t rank = index.size();
        bool innermostOnly = rank > 0;
        for (size_t d = 0; d < rank; ++d)
          innermostOnly &= sg.getStrides()[d] == 1 &&
                           (d + 1 == rank || (sg.getOffsets()[d] == 0 && gradShape[d] == shape[d]));
        if (innermostOnly) {
          int64_t offset = sg.getOffsets()[rank - 1], size = gradShape[rank - 1];
          llvm::SmallVector<std::pair<int64_t, int64_t>> pieces = {
              {0, offset}, {offset, offset + size}, {offset + size, shape[rank - 1]}};
          Value grouped = emitGroupPieces(op, index, elementType, pieces,
                                          [&](size_t k, llvm::ArrayRef<Value> at) -> Value {
            if (k != 1)
              return arith::ConstantOp::create(b, b.getZeroAttr(computeType(elementType)));
            llvm::SmallVector<Value> in(at.begin(), at.end());
            in[rank - 1] = arith::SubIOp::create(b, at[rank - 1], idx(offset));
            return emit(sg.getGrad(), in);
          });
          if (grouped)
            return grouped;
        }
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
      .Case([&](tx::CumSumOp) { return emitCumSum(op, elementType, shape, index); })
      .Default([&](Operation *) -> Value {
        return fail("'" + op->getName().getStringRef() +
                    "' cannot be computed inside a GPU kernel");
      });
}

/// Dropout: the executor's counter-based mask, drawn per element.
Value KernelBuilder::emitDropout(Operation *op, unsigned resultNumber,
                            Type elementType, llvm::ArrayRef<int64_t> shape,
                            llvm::ArrayRef<Value> index) {
  auto round = [&](Value v) { return roundTo(v, elementType); };
  auto fail = [&](const llvm::Twine &why) { return emitFailure(op, why, elementType); };
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
