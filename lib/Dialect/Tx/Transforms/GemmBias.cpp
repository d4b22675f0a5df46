//===- GemmBias.cpp - tx-gemm-bias ------------------------------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// A linear layer's bias is a row vector added to its GEMM's result. Where the
// sum's readers compute with it (a GELU, a residual add), the add runs in
// their kernel at no extra traffic, and stays. Where they only move it
// (reshape, split into heads, transpose, cast) into library calls that
// cannot add it themselves (cuDNN's attention, another GEMM), the add is a
// kernel of its own that reads and writes the whole product: GPT-2's q/k/v
// projection, 16384 x 2304 bf16, 0.039 ms a layer on the H200, only to
// add 2304 numbers. cuBLASLt adds a bias in the GEMM's epilogue instead;
// in the normal form that is the GEMM's `c` with beta 1 (the lowering takes
// a row vector `c` as cuBLASLt's bias). Then attention reads the GEMM's
// buffer in place (AttentionLayouts.cpp). The loss is such a reader too:
// BERT's LM-head bias was a kernel of its own over the 16384 x 30528
// logits (1.0 ms on the H100), and the loss then read them in f32.
//
//===----------------------------------------------------------------------===//

#include "txopt/Dialect/Tx/Transforms/GemmBias.h"
#include "txopt/Dialect/Tx/IR/TxOps.h"
#include "txopt/Dialect/Tx/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace mlir::txopt::tx {
#define GEN_PASS_DEF_GEMMBIASPASS
#include "txopt/Dialect/Tx/Transforms/Passes.h.inc"
} // namespace mlir::txopt::tx

using namespace mlir;
using namespace mlir::txopt;

namespace {

RankedTensorType tensorType(Value v) { return cast<RankedTensorType>(v.getType()); }

/// A bias add of a GEMM's result: `add(gemm, bias)` or
/// `add(cast(gemm), bias)`, either operand order.
struct BiasAdd {
  tx::AddOp add;
  tx::BlasGemmOp gemm;
  tx::CastOp widen; ///< the cast between them, or null
  Value product;    ///< the add's operand that is the GEMM's result (or cast)
  Value bias;
};

std::optional<BiasAdd> matchBiasAdd(tx::AddOp add) {
  for (unsigned side = 0; side < 2; ++side) {
    Value product = add->getOperand(side), bias = add->getOperand(1 - side);
    tx::CastOp widen = product.getDefiningOp<tx::CastOp>();
    Value gemmResult = widen ? widen.getInput() : product;
    if (auto gemm = gemmResult.getDefiningOp<tx::BlasGemmOp>())
      return BiasAdd{add, gemm, widen, product, bias};
  }
  return std::nullopt;
}

/// Why a kernel would still read the sum, so that the add runs in it at no
/// extra traffic and the fold gains nothing; "" when no kernel does: every
/// path from the sum ends in a library call with nothing but views on the
/// way. A reshape is a view everywhere. Before tx.attention and its
/// gradient, a head split (split, transpose) is a strided view cuDNN reads
/// (AttentionLayouts.cpp) and a cast back to the GEMM's element type
/// cancels the widening one (AttentionCasts.cpp). Before a GEMM, only
/// reshapes: a transpose the GEMM could read through its flag was folded
/// by tx-gemm-normal-form already, so one that is left is a copy kernel,
/// as is a split or a cast.
std::string whyAKernelReadsTheSum(Value sum, Type gemmElement) {
  // (value, whether a view only attention can take is on the path)
  llvm::SmallVector<std::pair<Value, bool>> work{{sum, false}};
  bool anyLibraryCall = false;
  while (!work.empty()) {
    auto [v, attentionViewsOnly] = work.pop_back_val();
    for (Operation *user : v.getUsers()) {
      if (isa<tx::ReshapeOp>(user)) {
        work.push_back({user->getResult(0), attentionViewsOnly});
        continue;
      }
      auto cast = dyn_cast<tx::CastOp>(user);
      if (isa<tx::SplitOp, tx::TransposeOp>(user) ||
          (cast && tensorType(cast.getResult()).getElementType() == gemmElement)) {
        for (Value r : user->getResults())
          work.push_back({r, true});
        continue;
      }
      // The loss and its gradient read the logits in a row kernel of their
      // own that takes no elementwise producer in (a widening cast only):
      // for them the add is a kernel over the whole B*T x vocabulary
      // logits, BERT's LM head 1.0 ms on the H100, writing them in f32.
      if (isa<tx::AttentionOp, tx::AttentionGradOp, tx::SoftmaxCrossEntropyLossOp,
              tx::SoftmaxCrossEntropyGradOp>(user) ||
          (isa<tx::BlasGemmOp>(user) && !attentionViewsOnly)) {
        anyLibraryCall = true;
        continue;
      }
      if (isa<tx::BlasGemmOp>(user))
        return "a split, transpose or cast before a GEMM is a kernel that reads the sum "
               "(the add runs in it)";
      return "'" + user->getName().getStringRef().str() +
             "' reads the sum (the add runs in its kernel)";
    }
  }
  return anyLibraryCall ? "" : "no library call reads the sum";
}

/// Why the bias add |m| is left as it is, or "" when it folds.
std::string whyNotFolded(BiasAdd m) {
  tx::BlasGemmOp gemm = m.gemm;
  if (gemm.getC())
    return "its GEMM already adds a c";
  if (!gemm.getResult().hasOneUse() || (m.widen && !m.widen.getResult().hasOneUse()))
    return "the GEMM's result is read without the bias too";
  RankedTensorType sumType = tensorType(m.add.getResult());
  RankedTensorType productType = tensorType(m.product);
  RankedTensorType gemmType = tensorType(gemm.getResult());
  RankedTensorType biasType = tensorType(m.bias);
  if (sumType != productType)
    return "the add broadcasts the GEMM's result";
  int64_t n = gemmType.getShape().back();
  ArrayRef<int64_t> biasShape = biasType.getShape();
  if (!tx::isRowVectorOver(biasShape, n))
    return "the other operand " + tx::formatShape(biasShape) +
           " is not a row vector over the GEMM's " + std::to_string(n) + " columns";
  Type gemmElement = gemmType.getElementType();
  if (gemm.isFP8() && !gemmElement.isBF16() && !gemmElement.isF16())
    return "an FP8 GEMM takes a bias only with a bf16 or f16 result";
  if (gemm.isFP8() && tensorType(gemm.getB()).getRank() != 2)
    return "an FP8 GEMM takes a bias only over one matrix (its b has batch dims)";
  if (!m.widen && biasType.getElementType() != gemmElement)
    return "the bias is not of the GEMM's element type";
  if (m.widen && !isa<FloatType>(biasType.getElementType()))
    return "the bias is not a float";
  return whyAKernelReadsTheSum(m.add.getResult(), gemmElement);
}

void fold(BiasAdd m) {
  tx::BlasGemmOp gemm = m.gemm;
  OpBuilder b(m.add);
  Location loc = m.add.getLoc();
  RankedTensorType gemmType = tensorType(gemm.getResult());
  Value bias = tx::biasAsEpilogueRow(b, loc, m.bias, gemmType);
  auto withBias = tx::BlasGemmOp::create(
      b, gemm.getLoc(), gemmType, gemm.getA(), gemm.getB(), bias, gemm.getAScaleInv(),
      gemm.getBScaleInv(), gemm.getTransposeAAttr(), gemm.getTransposeBAttr(),
      gemm.getAlphaAttr(), b.getF32FloatAttr(1.0f), gemm.getFastAccumulationAttr());
  Value sum = withBias.getResult();
  if (m.widen)
    sum = tx::CastOp::create(b, m.widen.getLoc(), tensorType(m.add.getResult()), sum);
  m.add.getResult().replaceAllUsesWith(sum);
  m.add.erase();
  if (m.widen)
    m.widen.erase();
  gemm.erase();
}

struct GemmBiasPass : public tx::impl::GemmBiasPassBase<GemmBiasPass> {
  void runOnOperation() override {
    tx::GemmBiasResult result = tx::foldBiasesIntoGemms(getOperation());
    // The must-not-fire cases say why in a remark (lit checks them).
    for (auto &[op, why] : result.left)
      op->emitRemark("bias add not folded into its GEMM: ") << why;
  }
};

} // namespace

bool tx::isRowVectorOver(ArrayRef<int64_t> shape, int64_t n) {
  return !shape.empty() && shape.back() == n &&
         llvm::all_of(shape.drop_back(), [](int64_t d) { return d == 1; });
}

Value tx::biasAsEpilogueRow(OpBuilder &b, Location loc, Value bias,
                            RankedTensorType gemmType) {
  int64_t n = gemmType.getShape().back();
  RankedTensorType biasType = tensorType(bias);
  if (biasType.getRank() != 1)
    bias = tx::ReshapeOp::create(b, loc, RankedTensorType::get({n}, biasType.getElementType()),
                                 bias);
  if (biasType.getElementType() != gemmType.getElementType())
    bias = tx::CastOp::create(b, loc, RankedTensorType::get({n}, gemmType.getElementType()),
                              bias);
  return bias;
}

tx::GemmBiasResult tx::foldBiasesIntoGemms(func::FuncOp func) {
  GemmBiasResult result;
  if (func.isExternal())
    return result;
  llvm::SmallVector<BiasAdd> matches;
  func.walk([&](tx::AddOp add) {
    if (auto m = matchBiasAdd(add))
      matches.push_back(*m);
  });
  for (const BiasAdd &m : matches) {
    std::string why = whyNotFolded(m);
    if (!why.empty()) {
      result.left.push_back({m.add, why});
      continue;
    }
    fold(m);
    ++result.folded;
  }
  return result;
}
