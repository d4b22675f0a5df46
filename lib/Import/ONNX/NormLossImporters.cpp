//===- NormLossImporters.cpp - reductions, norms, loss, dropout -----------===//
//
// SPDX-License-Identifier: Apache-2.0
// The ONNX ops whose attributes moved between opsets (reduction axes,
// Softmax's axis) and the training-graph ops (normalizations, the loss,
// Dropout), mapped onto tx.
//
//===----------------------------------------------------------------------===//

#include "ImporterInternal.h"

#include "txopt/Dialect/Tx/IR/TxOps.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/xxhash.h"

#include <cstdio>
#include <cstdlib>

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::onnx_import;

//===----------------------------------------------------------------------===//
// Reductions and normalization
//===----------------------------------------------------------------------===//

namespace {
/// ReduceSum takes axes as an input from opset 13, ReduceMean and ReduceMax
/// from opset 18; before that they are an attribute. With the input form,
/// `noop_with_empty_axes` turns "no axes" into the identity.
template <typename OpTy, int64_t AxesInputSince>
LogicalResult importReduce(NodeImporter &n) {
  auto keepDims = n.attrInt("keepdims", 1);
  if (failed(keepDims))
    return failure();
  std::optional<llvm::SmallVector<int64_t>> axes;
  bool noop = false;
  if (n.opset >= AxesInputSince) {
    auto noopAttr = n.attrInt("noop_with_empty_axes", 0);
    if (failed(n.expectInputs(1, 2)) || failed(noopAttr))
      return failure();
    noop = *noopAttr != 0;
    if (n.has(1)) {
      auto given = n.constantInts(1, "the axes operand");
      if (failed(given))
        return failure();
      axes = *given;
    }
  } else {
    auto given = n.attrInts("axes");
    if (failed(n.expectInputs(1, 1)) || failed(given))
      return failure();
    axes = *given;
  }
  if ((!axes || axes->empty()) && noop) {
    n.setResult(0, n.input(0));
    return success();
  }
  llvm::SmallVector<NamedAttribute> attrs{n.named(
      "axes", n.builder.getDenseI64ArrayAttr(axes ? *axes : llvm::SmallVector<int64_t>()))};
  if (*keepDims)
    attrs.push_back(n.named("keep_dims", n.builder.getUnitAttr()));
  return setOne(n, n.createOne<OpTy>({n.input(0)}, attrs));
}

} // namespace

LogicalResult onnx_import::importReduceMean(NodeImporter &n) {
  return importReduce<tx::ReduceMeanOp, 18>(n);
}

LogicalResult onnx_import::importReduceSum(NodeImporter &n) {
  return importReduce<tx::ReduceSumOp, 13>(n);
}

LogicalResult onnx_import::importReduceMax(NodeImporter &n) {
  return importReduce<tx::ReduceMaxOp, 18>(n);
}

/// Softmax from opset 13 normalizes along one axis (default -1). Before 13
/// it flattened the input to 2-D at `axis` (default 1), which equals the
/// one-axis form only when axis is the last dim.
LogicalResult onnx_import::importSoftmax(NodeImporter &n) {
  auto axis = n.attrInt("axis", n.opset >= 13 ? -1 : 1);
  if (failed(n.expectInputs(1, 1)) || failed(axis))
    return failure();
  int64_t rank = n.type(0).getRank();
  auto normalized = axisFor(n, *axis, rank);
  if (failed(normalized))
    return failure();
  if (n.opset < 13 && *normalized != rank - 1)
    return n.fail("Softmax before opset 13 flattens at axis " +
                  std::to_string(*axis) +
                  ", which is not the last axis; tx only has the opset 13 "
                  "single-axis form");
  return setOne(n, n.createOne<tx::SoftmaxOp>(
                       {n.input(0)},
                       {n.named("axis", n.builder.getI64IntegerAttr(*axis))},
                       n.type(0)));
}

/// stash_type 1 (f32 statistics) is what tx computes; others are noted.
static LogicalResult checkStashType(NodeImporter &n) {
  auto stash = n.attrInt("stash_type", 1);
  if (failed(stash))
    return failure();
  if (*stash != 1)
    n.warn("stash_type " + std::to_string(*stash) +
           " ignored; tx accumulates in at least f32");
  return success();
}

LogicalResult onnx_import::importLayerNorm(NodeImporter &n) {
  auto axis = n.attrInt("axis", -1);
  auto epsilon = n.attrFloat("epsilon", 1e-5f);
  if (failed(n.expectInputs(2, 3)) || failed(axis) || failed(epsilon) ||
      failed(checkStashType(n)) || failed(n.rejectUsedOutput(1, "Mean")) ||
      failed(n.rejectUsedOutput(2, "InvStdDev")))
    return failure();
  llvm::SmallVector<Value> operands{n.input(0), n.input(1)};
  if (n.has(2))
    operands.push_back(n.input(2));
  return setOne(n, n.createOne<tx::LayerNormalizationOp>(
                       operands,
                       {n.named("axis", n.builder.getI64IntegerAttr(*axis)),
                        n.named("epsilon", n.builder.getF32FloatAttr(*epsilon))},
                       n.type(0)));
}

/// ONNX RMSNormalization (opset 23) and com.microsoft
/// SimplifiedLayerNormalization compute the same thing.
LogicalResult onnx_import::importRMSNorm(NodeImporter &n) {
  auto axis = n.attrInt("axis", -1);
  auto epsilon = n.attrFloat("epsilon", 1e-5f);
  if (failed(n.expectInputs(2, 2)) || failed(axis) || failed(epsilon) ||
      failed(checkStashType(n)) ||
      failed(n.rejectUsedOutput(1, "inv_std_var")) ||
      failed(n.rejectUsedOutput(2, "saved output")))
    return failure();
  return setOne(n, n.createOne<tx::RMSNormalizationOp>(
                       {n.input(0), n.input(1)},
                       {n.named("axis", n.builder.getI64IntegerAttr(*axis)),
                        n.named("epsilon", n.builder.getF32FloatAttr(*epsilon))},
                       n.type(0)));
}

//===----------------------------------------------------------------------===//
// Loss and dropout
//===----------------------------------------------------------------------===//

LogicalResult onnx_import::importSoftmaxCrossEntropyLoss(NodeImporter &n) {
  auto reductionName = n.attrString("reduction", "mean");
  auto ignoreIndex = n.attrOptionalInt("ignore_index");
  if (failed(n.expectInputs(2, 3)) || failed(reductionName) ||
      failed(ignoreIndex) || failed(n.rejectUsedOutput(1, "log_prob")))
    return failure();
  std::optional<tx::LossReduction> reduction =
      llvm::StringSwitch<std::optional<tx::LossReduction>>(*reductionName)
          .Case("mean", tx::LossReduction::mean)
          .Case("sum", tx::LossReduction::sum)
          .Case("none", tx::LossReduction::none)
          .Default(std::nullopt);
  if (!reduction)
    return n.fail("unknown reduction " + quote(*reductionName));
  llvm::SmallVector<Value> operands{n.input(0), n.input(1)};
  if (n.has(2))
    operands.push_back(n.input(2));
  llvm::SmallVector<NamedAttribute> attrs{n.named(
      "reduction", tx::LossReductionAttr::get(n.getContext(), *reduction))};
  if (*ignoreIndex)
    attrs.push_back(
        n.named("ignore_index", n.builder.getI64IntegerAttr(**ignoreIndex)));
  return setOne(n, n.createOne<tx::SoftmaxCrossEntropyLossOp>(operands, attrs));
}

/// Dropout is the identity unless `training_mode` is a constant true (the
/// exporters emit inference-mode Dropout; training-time dropout is ours).
/// The mask is keyed by the `seed` attribute and a key operand (tx.dropout's
/// description). The key is a constant 0 here; tx-build-train-step replaces
/// it by the step's rng_key, so each step draws a fresh mask. Without an
/// ONNX `seed` (PyTorch exports never write one) the seed is a hash of the
/// node's output name, unique in an ONNX graph, so dropouts of the same
/// shape draw different masks; a given seed is kept as the user asked.
LogicalResult onnx_import::importDropout(NodeImporter &n) {
  auto seed = n.attrOptionalInt("seed");
  if (failed(n.expectInputs(1, 3)) || failed(seed))
    return failure();
  // ONNX types ratio as a float tensor (T1) and training_mode as bool
  // (T2); anything else is an invalid model, not a value to convert.
  if (n.has(1) && !llvm::isa<FloatType>(n.type(1).getElementType()))
    return n.fail("ratio (input " + quote(n.node.input(1)) +
                  ") must be a float tensor, but has element type " +
                  [&] {
                    std::string text;
                    llvm::raw_string_ostream os(text);
                    os << n.type(1).getElementType();
                    return text;
                  }());
  if (n.has(2) && !n.type(2).getElementType().isInteger(1))
    return n.fail("training_mode (input " + quote(n.node.input(2)) +
                  ") must be a bool tensor");
  bool training = false;
  if (n.has(2)) {
    auto mode = n.constantScalar(2, "training_mode");
    if (failed(mode))
      return failure();
    training = *mode != 0.0;
  }
  if (!training) {
    n.setResult(0, n.input(0));
    if (n.isOutputUsed(1))
      n.setResult(1, n.constant(DenseElementsAttr::get(
                         n.type(0).clone(n.builder.getI1Type()), true)));
    return success();
  }
  if (failed(n.rejectUsedOutput(1, "mask")))
    return failure();
  double ratio = 0.5;
  if (n.has(1)) {
    auto given = n.constantScalar(1, "ratio");
    if (failed(given))
      return failure();
    ratio = *given;
  }
  StringRef output = n.numOutputs() ? StringRef(n.node.output(0)) : "";
  auto seedValue =
      seed->value_or(static_cast<int64_t>(llvm::xxh3_64bits(output)));
  Value key = n.constant(DenseElementsAttr::get(
      RankedTensorType::get({}, n.builder.getI64Type()), int64_t(0)));
  return setOne(n, n.createOne<tx::DropoutOp>(
                       {n.input(0), key},
                       {n.named("ratio", n.builder.getF32FloatAttr(ratio)),
                        n.named("seed", n.builder.getI64IntegerAttr(seedValue))},
                       n.type(0)));
}

/// ai.onnx.preview.training.Adam (version 1) over N tensors: inputs R
/// (learning rate), T (step count), X1..XN, G1..GN, V1..VN, H1..HN; outputs
/// the new X, V, H. Per tensor (ONNX spec):
///
///   G' = G + norm_coefficient * X                  (L2 decay)
///   V' = alpha V + (1 - alpha) G';  H' = beta H + (1 - beta) G'^2
///   R' = T > 0 ? R sqrt(1 - beta^T) / (1 - alpha^T) : R
///   X' = (1 - norm_coefficient_post) (X - R' V' / (sqrt(H') + epsilon))
///
/// which is tx.adam in `adam` mode with the `epsilon_hat` placement, step T,
/// followed by a multiply for norm_coefficient_post (decay after the
/// update, which tx.adam does not have). ONNX skips the bias correction at
/// T = 0; tx.adam always applies it, so T must be >= 1 when the step runs
/// (at T = 0 the update divides by zero and txopt-run --check-finite=all
/// reports it), which training loops satisfy by counting from 1.
/// ONNX stores these attributes as float; the user wrote a decimal (0.999),
/// and tx.adam's attributes are f64 like PyTorch's hyper-parameters. The
/// shortest decimal that rounds to the float is the value written.
static double writtenDecimal(float value) {
  char text[32];
  for (int digits = 1; digits <= 9; ++digits) {
    std::snprintf(text, sizeof(text), "%.*g", digits, static_cast<double>(value));
    if (std::strtof(text, nullptr) == value)
      return std::strtod(text, nullptr);
  }
  return value;
}

LogicalResult onnx_import::importPreviewTrainingAdam(NodeImporter &n) {
  unsigned numInputs = n.numInputs();
  if (numInputs < 6 || (numInputs - 2) % 4 != 0)
    return n.fail("expected R, T and 4 x N tensors (X, G, V, H), but got " +
                  llvm::Twine(numInputs) + " inputs");
  unsigned count = (numInputs - 2) / 4;
  if (n.numOutputs() > 3 * count)
    return n.fail("expected at most " + llvm::Twine(3 * count) +
                  " outputs (new X, V, H per tensor), but got " +
                  llvm::Twine(n.numOutputs()));
  auto alpha = n.attrFloat("alpha", 0.9f);
  auto beta = n.attrFloat("beta", 0.999f);
  auto epsilon = n.attrFloat("epsilon", 1e-6f);
  auto decay = n.attrFloat("norm_coefficient", 0.0f);
  auto decayPost = n.attrFloat("norm_coefficient_post", 0.0f);
  if (failed(alpha) || failed(beta) || failed(epsilon) || failed(decay) ||
      failed(decayPost))
    return failure();
  MLIRContext *context = n.getContext();
  auto scalarF32 = RankedTensorType::get({}, Float32Type::get(context));
  auto toScalarF32 = [&](unsigned i, llvm::StringRef what) -> FailureOr<Value> {
    RankedTensorType type = n.type(i);
    if (type.getNumElements() != 1)
      return n.fail(what + " must hold one element, but has " +
                    llvm::Twine(type.getNumElements()) + " elements");
    Value v = n.input(i);
    if (type.getRank() != 0) {
      auto reshaped = n.createOne<tx::ReshapeOp>(
          {v}, {}, RankedTensorType::get({}, type.getElementType()));
      if (failed(reshaped))
        return failure();
      v = *reshaped;
    }
    if (type.getElementType() != Float32Type::get(context)) {
      auto cast = n.createOne<tx::CastOp>({v}, {}, scalarF32);
      if (failed(cast))
        return failure();
      v = *cast;
    }
    return v;
  };
  auto lr = toScalarF32(0, "R (the learning rate)");
  if (failed(lr))
    return failure();
  auto step = toScalarF32(1, "T (the step count)");
  if (failed(step))
    return failure();
  llvm::SmallVector<Value> operands;
  for (unsigned i = 2; i < numInputs; ++i)
    operands.push_back(n.input(i));
  operands.push_back(*lr);
  operands.push_back(*step);
  llvm::SmallVector<Type> types;
  for (unsigned k = 0; k < 3; ++k)
    for (unsigned i = 0; i < count; ++i)
      types.push_back(n.type(2 + i));
  Builder &b = n.builder;
  llvm::SmallVector<NamedAttribute> attrs{
      n.named("mode", tx::AdamModeAttr::get(context, tx::AdamMode::adam)),
      n.named("beta1", b.getF64FloatAttr(writtenDecimal(*alpha))),
      n.named("beta2", b.getF64FloatAttr(writtenDecimal(*beta))),
      n.named("epsilon", b.getF64FloatAttr(writtenDecimal(*epsilon))),
      n.named("epsilon_placement",
              tx::EpsilonPlacementAttr::get(context,
                                            tx::EpsilonPlacement::epsilon_hat)),
      n.named("weight_decay", b.getF64FloatAttr(writtenDecimal(*decay))),
      n.named("operandSegmentSizes",
              b.getDenseI32ArrayAttr({int32_t(count), int32_t(count),
                                      int32_t(count), int32_t(count), 1, 1})),
  };
  auto results = n.create(tx::AdamOp::getOperationName(), operands, attrs,
                          types, 3 * count);
  if (failed(results))
    return failure();
  for (unsigned i = 0; i < std::min<unsigned>(n.numOutputs(), 3 * count); ++i) {
    Value value = (*results)[i];
    if (i < count && *decayPost != 0.0f) {
      auto factor = n.constant(DenseElementsAttr::get(
          RankedTensorType::get({}, n.type(2 + i).getElementType()),
          llvm::ArrayRef<Attribute>{b.getFloatAttr(
              n.type(2 + i).getElementType(), 1.0 - *decayPost)}));
      auto scaled = n.createOne<tx::MulOp>({value, factor});
      if (failed(scaled))
        return failure();
      value = *scaled;
    }
    n.setResult(i, value);
  }
  return success();
}
