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

#include <cmath>
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

/// LayerNormalization whose Mean or InvStdDev output is used: tx.layer_norm
/// computes both (f32, over the innermost dim), so x becomes [rows, cols]
/// (cols: the product of the normalized dims from `axis` on), scale and
/// bias are broadcast to the normalized dims and flattened to [cols], and
/// the results are reshaped back, the statistics to x's shape with the
/// normalized dims set to 1 (ONNX's Mean/InvStdDev shape). Row-major
/// flattening keeps every row's elements together, so the statistics are
/// those of ONNX's normalized slices.
static LogicalResult importLayerNormWithStats(NodeImporter &n, int64_t axisAttr,
                                              float epsilon) {
  RankedTensorType xType = n.type(0);
  int64_t rank = xType.getRank();
  auto axis = axisFor(n, axisAttr, rank, "axis");
  if (failed(axis))
    return failure();
  llvm::ArrayRef<int64_t> shape = xType.getShape();
  int64_t rows = 1, cols = 1;
  for (int64_t d = 0; d < rank; ++d)
    (d < *axis ? rows : cols) *= shape[d];
  llvm::SmallVector<int64_t> normalized(shape.begin() + *axis, shape.end());
  auto flatten = [&](Value value, llvm::ArrayRef<int64_t> to) -> FailureOr<Value> {
    auto type = llvm::cast<RankedTensorType>(value.getType());
    if (type.getShape() == to)
      return value;
    return n.createOne<tx::ReshapeOp>({value}, {}, type.clone(to));
  };
  auto flatParam = [&](Value value) -> FailureOr<Value> {
    auto type = llvm::cast<RankedTensorType>(value.getType());
    if (type.getShape() != llvm::ArrayRef<int64_t>(normalized)) {
      auto expanded = n.createOne<tx::ExpandOp>({value}, {}, type.clone(normalized));
      if (failed(expanded))
        return failure();
      value = *expanded;
    }
    return flatten(value, {cols});
  };
  llvm::SmallVector<Value> operands;
  auto x2 = flatten(n.input(0), {rows, cols});
  if (failed(x2))
    return failure();
  operands.push_back(*x2);
  for (unsigned i = 1; i < 3; ++i) {
    if (!n.has(i))
      continue;
    auto flat = flatParam(n.input(i));
    if (failed(flat))
      return failure();
    operands.push_back(*flat);
  }
  auto results = n.create(
      tx::LayerNormOp::getOperationName(), operands,
      {n.named("epsilon", n.builder.getF32FloatAttr(epsilon))}, {}, 3);
  if (failed(results))
    return failure();
  llvm::SmallVector<int64_t> statsShape(shape.begin(), shape.end());
  for (int64_t d = *axis; d < rank; ++d)
    statsShape[d] = 1;
  for (unsigned i = 0; i < 3 && i < n.numOutputs(); ++i) {
    auto back = flatten((*results)[i], i == 0 ? shape : llvm::ArrayRef<int64_t>(statsShape));
    if (failed(back))
      return failure();
    n.setResult(i, *back);
  }
  return success();
}

LogicalResult onnx_import::importLayerNorm(NodeImporter &n) {
  auto axis = n.attrInt("axis", -1);
  auto epsilon = n.attrFloat("epsilon", 1e-5f);
  if (failed(n.expectInputs(2, 3)) || failed(axis) || failed(epsilon) ||
      failed(checkStashType(n)))
    return failure();
  if (n.isOutputUsed(1) || n.isOutputUsed(2))
    return importLayerNormWithStats(n, *axis, *epsilon);
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

/// SoftmaxCrossEntropyLoss's log_prob output, log_softmax(scores) over the
/// class axis 1, as the stable `s - log(sum(exp(s)))` with `s = x - max(x)`
/// (log(softmax) would send underflowed probabilities to -inf).
static LogicalResult importLogProb(NodeImporter &n) {
  Builder &b = n.builder;
  llvm::SmallVector<NamedAttribute> classAxis{
      n.named("axes", b.getDenseI64ArrayAttr({1})),
      n.named("keep_dims", b.getUnitAttr())};
  auto max = n.createOne<tx::ReduceMaxOp>({n.input(0)}, classAxis);
  if (failed(max))
    return failure();
  auto shifted = n.createOne<tx::SubOp>({n.input(0), *max});
  if (failed(shifted))
    return failure();
  auto exp = n.createOne<tx::ExpOp>({*shifted});
  if (failed(exp))
    return failure();
  auto sum = n.createOne<tx::ReduceSumOp>({*exp}, classAxis);
  if (failed(sum))
    return failure();
  auto log = n.createOne<tx::LogOp>({*sum});
  if (failed(log))
    return failure();
  auto logProb = n.createOne<tx::SubOp>({*shifted, *log});
  if (failed(logProb))
    return failure();
  n.setResult(1, *logProb);
  return success();
}

LogicalResult onnx_import::importSoftmaxCrossEntropyLoss(NodeImporter &n) {
  auto reductionName = n.attrString("reduction", "mean");
  auto ignoreIndex = n.attrOptionalInt("ignore_index");
  if (failed(n.expectInputs(2, 3)) || failed(reductionName) ||
      failed(ignoreIndex))
    return failure();
  if (n.isOutputUsed(1) && failed(importLogProb(n)))
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
/// T = 0, which tx.adam always applies: T = 0 becomes step 1 with a rate
/// that step 1's correction maps back to R (below).
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
  // ONNX skips the bias correction at T = 0 (R' = R); tx.adam always
  // applies it. At T = 0, step 1 with R * (1 - alpha) / sqrt(1 - beta)
  // gives tx.adam's corrected rate sqrt(1 - beta) / (1 - alpha) * that = R,
  // so the update is ONNX's; for T >= 1 both are unchanged.
  {
    auto scalar = [&](double v) {
      return n.constant(DenseElementsAttr::get(scalarF32, static_cast<float>(v)));
    };
    double t0Scale = (1.0 - *alpha) / std::sqrt(1.0 - static_cast<double>(*beta));
    auto positive = n.createOne<tx::GreaterOp>({*step, scalar(0.0)});
    auto atLeastOne = n.createOne<tx::MaxOp>({*step, scalar(1.0)});
    auto lrT0 = n.createOne<tx::MulOp>({*lr, scalar(t0Scale)});
    if (failed(positive) || failed(atLeastOne) || failed(lrT0))
      return failure();
    lr = n.createOne<tx::WhereOp>({*positive, *lr, *lrT0});
    if (failed(lr))
      return failure();
    step = atLeastOne;
  }
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
