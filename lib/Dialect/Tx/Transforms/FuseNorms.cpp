//===- FuseNorms.cpp - fuse LayerNorm / RMSNorm subgraphs -----------------===//
//
// SPDX-License-Identifier: Apache-2.0
// tx-fuse-norms: ONNX norm ops and decomposed norm chains over the innermost
// dim become tx.layer_norm / tx.rms_norm (see Passes.td for the contract).
// The decomposed chains are found by NormChainMatcher.cpp.
//
//===----------------------------------------------------------------------===//

#include "txopt/Dialect/Tx/Transforms/Passes.h"

#include "NormChainMatcher.h"

#include "txopt/Dialect/Tx/IR/TxDialect.h"
#include "txopt/Dialect/Tx/IR/TxOps.h"
#include "txopt/Dialect/Tx/Transforms/PatternUtils.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <cmath>
#include <string>

namespace mlir::txopt::tx {
#define GEN_PASS_DEF_FUSENORMSPASS
#include "txopt/Dialect/Tx/Transforms/Passes.h.inc"
} // namespace mlir::txopt::tx

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::tx;
using namespace mlir::txopt::tx::norm_fusion;

namespace {

/// Why an ONNX-level norm op cannot become a fused op (empty if it can):
/// only the innermost dim may be normalized (axis -1, or an axis whose other
/// normalized dims are 1), and scale/bias must hold exactly D elements so
/// they reshape to [D].
std::string checkOnnxNorm(Value input, int64_t axis, Value scale, Value bias) {
  auto type = tensorType(input);
  if (!isNormElementType(type.getElementType()))
    return "expected an f16, bf16 or f32 input, but got " +
           printed(TypeAttr::get(type.getElementType()));
  FailureOr<int64_t> start = normalizeAxis(axis, type.getRank());
  if (failed(start))
    return "expected an axis within rank " + std::to_string(type.getRank());
  ArrayRef<int64_t> normalized = type.getShape().drop_front(*start);
  if (llvm::any_of(normalized.drop_back(), [](int64_t d) { return d != 1; }))
    return "expected normalization over the innermost dim only, but axis " +
           std::to_string(axis) + " normalizes dims " + formatShape(normalized);
  int64_t dim = type.getShape().back();
  for (Value affine : {scale, bias})
    if (affine && tensorType(affine).getNumElements() != dim)
      return "expected " + std::string(affine == scale ? "scale" : "bias") +
             " with " + std::to_string(dim) + " elements, but got shape " +
             formatShape(tensorType(affine).getShape());
  return {};
}

/// |affine| as a [D] tensor: reshaped when the ONNX op had it as [1, D].
Value asVector(PatternRewriter &rewriter, Location loc, Value affine) {
  if (!affine || tensorType(affine).getRank() == 1)
    return affine;
  auto type = tensorType(affine);
  return ReshapeOp::create(
      rewriter, loc,
      RankedTensorType::get({type.getNumElements()}, type.getElementType()),
      affine);
}

/// Rewrites the decomposed LayerNorm / RMSNorm chain around a reduce_mean of
/// a square (see matchDecomposedNorm) into tx.layer_norm / tx.rms_norm.
/// Legal because the chain computes exactly the fused op's formula (biased
/// variance, eps inside the square root, innermost axis) and no intermediate
/// escapes; the fused op only accumulates in f32 and rounds once.
struct FuseDecomposedNormPattern : OpRewritePattern<ReduceMeanOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ReduceMeanOp variance,
                                PatternRewriter &rewriter) const override {
    NormMatch match = matchDecomposedNorm(variance);
    if (match.status != NormMatch::Matched)
      return rewriter.notifyMatchFailure(variance, match.reason);
    NormChain &chain = match.chain;

    SmallVector<Location> locs = llvm::map_to_vector(
        chain.ops, [](Operation *op) { return op->getLoc(); });
    Location loc = rewriter.getFusedLoc(locs);
    rewriter.setInsertionPoint(chain.root);
    auto inputType = tensorType(chain.input);
    Value gamma = chain.gamma;
    if (!gamma) {
      // No learned scale: a constant 1, exact in every element type.
      auto type = RankedTensorType::get({inputType.getShape().back()},
                                        inputType.getElementType());
      gamma = ConstantOp::create(
          rewriter, loc,
          DenseElementsAttr::get(
              type, rewriter.getFloatAttr(inputType.getElementType(), 1.0)));
    }
    FloatAttr epsilon = rewriter.getF32FloatAttr(chain.epsilon);
    Value result;
    if (match.kind == NormKind::LayerNorm)
      result = LayerNormOp::create(rewriter, loc, chain.input, gamma,
                                   chain.beta, epsilon)
                   .getResult();
    else
      result = RMSNormOp::create(rewriter, loc, chain.input, gamma, epsilon)
                   .getResult();
    rewriter.replaceOp(chain.root, result);
    for (Operation *op : llvm::reverse(chain.ops))
      if (op != chain.root)
        rewriter.eraseOp(op);
    return success();
  }
};

/// Rewrites tx.layer_normalization (ONNX LayerNormalization) that normalizes
/// only the innermost dim into tx.layer_norm: same formula, the fused op
/// additionally returns mean and rstd.
struct FuseLayerNormalizationPattern : OpRewritePattern<LayerNormalizationOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(LayerNormalizationOp op,
                                PatternRewriter &rewriter) const override {
    std::string why =
        checkOnnxNorm(op.getInput(), op.getAxis(), op.getScale(), op.getBias());
    if (!why.empty())
      return rewriter.notifyMatchFailure(op, why);
    Value gamma = asVector(rewriter, op.getLoc(), op.getScale());
    Value beta = asVector(rewriter, op.getLoc(), op.getBias());
    auto fused = LayerNormOp::create(rewriter, op.getLoc(), op.getInput(),
                                     gamma, beta, op.getEpsilonAttr());
    rewriter.replaceOp(op, fused.getResult());
    return success();
  }
};

/// Rewrites tx.rms_normalization (ONNX RMSNormalization, com.microsoft
/// SimplifiedLayerNormalization) that normalizes only the innermost dim into
/// tx.rms_norm: same formula, the fused op additionally returns rstd.
struct FuseRMSNormalizationPattern : OpRewritePattern<RMSNormalizationOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(RMSNormalizationOp op,
                                PatternRewriter &rewriter) const override {
    std::string why =
        checkOnnxNorm(op.getInput(), op.getAxis(), op.getScale(), Value());
    if (!why.empty())
      return rewriter.notifyMatchFailure(op, why);
    Value gamma = asVector(rewriter, op.getLoc(), op.getScale());
    auto fused = RMSNormOp::create(rewriter, op.getLoc(), op.getInput(), gamma,
                                   op.getEpsilonAttr());
    rewriter.replaceOp(op, fused.getResult());
    return success();
  }
};

/// Fuses norms in one function, then, with `explain`, re-matches what is
/// left so that each near miss is reported once, in its final state (the
/// greedy driver retries patterns, so remarks from patterns would repeat).
struct FuseNormsPass : tx::impl::FuseNormsPassBase<FuseNormsPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    auto count = [&](auto tag) {
      using OpTy = decltype(tag);
      int64_t n = 0;
      func.walk([&](OpTy) { ++n; });
      return n;
    };
    int64_t layerNormsBefore = count(LayerNormOp());
    int64_t rmsNormsBefore = count(RMSNormOp());

    RewritePatternSet patterns(&getContext());
    populateFuseNormsPatterns(patterns);
    // Touch nothing but norm chains: no folding, no constant hoisting.
    GreedyRewriteConfig config;
    config.enableFolding(false)
        .enableConstantCSE(false)
        .setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    if (failed(applyPatternsGreedily(func, std::move(patterns), config))) {
      func.emitError("tx-fuse-norms did not converge");
      return signalPassFailure();
    }
    numLayerNorm += count(LayerNormOp()) - layerNormsBefore;
    numRMSNorm += count(RMSNormOp()) - rmsNormsBefore;

    if (explain)
      explainNearMisses(func);
  }

  static void explainNearMisses(func::FuncOp func) {
    llvm::SmallPtrSet<Operation *, 8> reported;
    func.walk([&](Operation *op) {
      if (auto reduce = dyn_cast<ReduceMeanOp>(op)) {
        NormMatch match = matchDecomposedNorm(reduce);
        if (match.status == NormMatch::NearMiss &&
            reported.insert(match.anchor).second)
          reportNearMiss(match.anchor, kindName(match.kind), match.reason);
      } else if (auto norm = dyn_cast<LayerNormalizationOp>(op)) {
        std::string why = checkOnnxNorm(norm.getInput(), norm.getAxis(),
                                        norm.getScale(), norm.getBias());
        if (!why.empty())
          reportNearMiss(op, "layer_norm", why);
      } else if (auto norm = dyn_cast<RMSNormalizationOp>(op)) {
        std::string why = checkOnnxNorm(norm.getInput(), norm.getAxis(),
                                        norm.getScale(), Value());
        if (!why.empty())
          reportNearMiss(op, "rms_norm", why);
      }
    });
  }
};

} // namespace

void tx::populateFuseNormsPatterns(RewritePatternSet &patterns) {
  patterns.add<FuseDecomposedNormPattern, FuseLayerNormalizationPattern,
               FuseRMSNormalizationPattern>(patterns.getContext());
}
