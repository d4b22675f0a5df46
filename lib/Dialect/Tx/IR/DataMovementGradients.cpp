//===- DataMovementGradients.cpp - gathers, shapes ------------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// Gradient rules of the indexing and data-movement tx ops (gathers,
// reshapes, transpose, slice, concat, split, pad).
// Each rule is the op's DifferentiableOpInterface::buildGradients and states
// its formula; `g` is the result gradient and `y` the op's result. Every
// rule is checked against finite differences by test/Reference/gradcheck.py.
//
//===----------------------------------------------------------------------===//

#include "GradientUtils.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/STLExtras.h"

#include <cmath>
#include <numeric>

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::tx;
using namespace mlir::txopt::tx::gradient;

// Indexing and data movement
//===----------------------------------------------------------------------===//

// d gather(data, idx) = scatter-add of g into zeros at idx (tx.gather_grad)
LogicalResult GatherOp::buildGradients(GradientContext &c) {
  GatherOp op = *this;
  int64_t axis = normalized(op.getAxis(), tensorTypeOf(op.getData()).getRank());
  c.set(0, GatherGradOp::create(c.b, op.getData().getType(), c.g(),
                                op.getIndices(), c.b.getI64IntegerAttr(axis)));
  return success();
}

// d gather_elements(data, idx) = element scatter-add (tx.gather_elements_grad)
LogicalResult GatherElementsOp::buildGradients(GradientContext &c) {
  GatherElementsOp op = *this;
  int64_t axis = normalized(op.getAxis(), tensorTypeOf(op.getData()).getRank());
  c.set(0, GatherElementsGradOp::create(c.b, op.getData().getType(), c.g(),
                                        op.getIndices(),
                                        c.b.getI64IntegerAttr(axis)));
  return success();
}

// d gather_nd(data, idx) = scatter-add of g's slices into zeros at the index
// tuples (tx.gather_nd_grad)
LogicalResult GatherNDOp::buildGradients(GradientContext &c) {
  GatherNDOp op = *this;
  c.set(0, GatherNDGradOp::create(c.b, op.getData().getType(), c.g(),
                                  op.getIndices(), op.getBatchDimsAttr()));
  return success();
}

// d reshape / squeeze / unsqueeze (x) = reshape(g) to x's shape
static LogicalResult reshapeRule(GradientContext &c, Operation *op) {
  c.set(0, reshape(c.b, c.g(), tensorTypeOf(op->getOperand(0)).getShape()));
  return success();
}
LogicalResult ReshapeOp::buildGradients(GradientContext &c) {
  return reshapeRule(c, *this);
}
LogicalResult SqueezeOp::buildGradients(GradientContext &c) {
  return reshapeRule(c, *this);
}
LogicalResult UnsqueezeOp::buildGradients(GradientContext &c) {
  return reshapeRule(c, *this);
}

// d expand(x) = g summed over the broadcast dims
LogicalResult ExpandOp::buildGradients(GradientContext &c) {
  ExpandOp op = *this;
  c.set(0, sumToType(c.b, c.g(), op.getInput()));
  return success();
}

// d transpose(x, perm) = transpose(g, perm^-1)
LogicalResult TransposeOp::buildGradients(GradientContext &c) {
  TransposeOp op = *this;
  ArrayRef<int64_t> perm = op.getPerm();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = i;
  c.set(0, TransposeOp::create(c.b, c.g(), c.b.getDenseI64ArrayAttr(inverse)));
  return success();
}

// d slice(x) = g placed where the slice read, zeros elsewhere: tx.pad for
// unit steps, tx.slice_grad for any other step (negative ones included).
LogicalResult SliceOp::buildGradients(GradientContext &c) {
  SliceOp op = *this;
  SmallVector<int64_t> offsets, sizes, strides;
  op.getNormalizedRanges(offsets, sizes, strides);
  auto inputType = tensorTypeOf(op.getInput());
  if (llvm::all_of(strides, [](int64_t s) { return s == 1; })) {
    int64_t rank = inputType.getRank();
    SmallVector<int64_t> pads(2 * rank);
    for (int64_t d = 0; d < rank; ++d) {
      pads[d] = offsets[d];
      pads[d + rank] = inputType.getDimSize(d) - offsets[d] - sizes[d];
    }
    if (llvm::all_of(pads, [](int64_t p) { return p == 0; })) {
      c.set(0, c.g());
      return success();
    }
    c.set(0,
          PadOp::create(c.b, c.g(), c.b.getDenseI64ArrayAttr(pads),
                        PadModeAttr::get(c.b.getContext(), PadMode::constant),
                        c.b.getF64FloatAttr(0.0)));
    return success();
  }
  // Empty dims may carry any offset; give them one the verifier accepts.
  for (auto [offset, size] : llvm::zip(offsets, sizes))
    if (size == 0)
      offset = 0;
  c.set(0, SliceGradOp::create(c.b, inputType, c.g(),
                               c.b.getDenseI64ArrayAttr(offsets),
                               c.b.getDenseI64ArrayAttr(strides)));
  return success();
}

// d concat(x_0, .., x_n) = the slices of g along axis
LogicalResult ConcatOp::buildGradients(GradientContext &c) {
  ConcatOp op = *this;
  int64_t rank = tensorTypeOf(op.getResult()).getRank();
  int64_t axis = normalized(op.getAxis(), rank);
  int64_t offset = 0;
  for (auto [i, input] : llvm::enumerate(op.getInputs())) {
    int64_t size = tensorTypeOf(input).getDimSize(axis);
    if (c.wants(i))
      c.set(i, SliceOp::create(c.b, c.g(), c.b.getDenseI64ArrayAttr({offset}),
                               c.b.getDenseI64ArrayAttr({offset + size}),
                               c.b.getDenseI64ArrayAttr({axis}),
                               c.b.getDenseI64ArrayAttr({1})));
    offset += size;
  }
  return success();
}

// d split(x) = concat of the pieces' gradients (zeros for unused pieces)
LogicalResult SplitOp::buildGradients(GradientContext &c) {
  SplitOp op = *this;
  int64_t rank = tensorTypeOf(op.getInput()).getRank();
  SmallVector<Value> pieces;
  for (unsigned i = 0; i < op->getNumResults(); ++i)
    pieces.push_back(c.gOrZeros(i));
  if (pieces.size() == 1) {
    c.set(0, pieces.front());
    return success();
  }
  c.set(0, ConcatOp::create(
               c.b, pieces,
               c.b.getI64IntegerAttr(normalized(op.getAxis(), rank))));
  return success();
}

// d pad(x) (constant mode) = g cropped to where x landed; a negative pad
// cropped x, so those elements of x get zeros back.
LogicalResult PadOp::buildGradients(GradientContext &c) {
  PadOp op = *this;
  if (op.getMode() != PadMode::constant)
    return unsupported(op, "in '" + stringifyPadMode(op.getMode()) + "' mode");
  auto inputType = tensorTypeOf(op.getInput());
  int64_t rank = inputType.getRank();
  ArrayRef<int64_t> pads = op.getPads();
  SmallVector<int64_t> starts, ends, axes, steps, repad(2 * rank, 0);
  bool crop = false;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t begin = pads[d], end = pads[d + rank];
    int64_t extent = inputType.getDimSize(d) + std::min<int64_t>(begin, 0) +
                     std::min<int64_t>(end, 0);
    int64_t start = std::max<int64_t>(begin, 0);
    crop |= begin > 0 || end > 0;
    starts.push_back(start);
    ends.push_back(start + extent);
    axes.push_back(d);
    steps.push_back(1);
    repad[d] = std::max<int64_t>(-begin, 0);
    repad[d + rank] = std::max<int64_t>(-end, 0);
  }
  Value grad = c.g();
  if (crop)
    grad = SliceOp::create(c.b, grad, c.b.getDenseI64ArrayAttr(starts),
                           c.b.getDenseI64ArrayAttr(ends),
                           c.b.getDenseI64ArrayAttr(axes),
                           c.b.getDenseI64ArrayAttr(steps));
  if (llvm::any_of(repad, [](int64_t p) { return p != 0; }))
    grad = PadOp::create(c.b, grad, c.b.getDenseI64ArrayAttr(repad),
                         PadModeAttr::get(c.b.getContext(), PadMode::constant),
                         c.b.getF64FloatAttr(0.0));
  c.set(0, grad);
  return success();
}

//===----------------------------------------------------------------------===//
