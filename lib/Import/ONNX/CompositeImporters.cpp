//===- CompositeImporters.cpp - Gelu and Attention -------------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// The ONNX ops newer exporters write for what older ones spelled out:
// Gelu (opset 20; PyTorch's dynamo exporter writes it from opset 20 on) and
// Attention (opsets 23 to 25; written for F.scaled_dot_product_attention
// from opset 23 on). Both become their definition in tx ops, step for
// step as ONNX's reference computes it: Gelu its erf or tanh formula (the
// form older exports already had, which the GPU backend fuses into one
// elementwise kernel); Attention the scaled q.k^T, the soft cap, the bias
// (mask, causal frontier, window, per-batch KV lengths), softmax and the
// product with v. tx-fuse-attention then makes the fusable ones one
// tx.attention (by default, except on an f32 GPU step), with the same
// options, limits and near-miss remarks as for
// the attention older exporters spell out themselves.
//
//===----------------------------------------------------------------------===//

#include "ImporterInternal.h"

#include "txopt/Dialect/Tx/IR/TxOps.h"

#include "llvm/ADT/STLExtras.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::onnx_import;

namespace {
/// Builds a chain of ops for one node: each step takes the values of
/// earlier steps, and after the first failure (already reported through
/// the node's error) every later step returns null, so the importers read
/// as the formula they build and check for failure once at the end.
class OpChain {
public:
  explicit OpChain(NodeImporter &n) : n(n) {}

  template <typename OpTy>
  Value make(ValueRange operands, llvm::ArrayRef<NamedAttribute> attrs = {},
             Type resultType = {}) {
    if (broken || llvm::any_of(operands, [](Value v) { return !v; })) {
      broken = true;
      return {};
    }
    auto value = n.createOne<OpTy>(operands, attrs, resultType);
    if (failed(value)) {
      broken = true;
      return {};
    }
    return *value;
  }

  Value reshape(Value v, llvm::ArrayRef<int64_t> shape) {
    if (!v)
      return fail();
    auto type = llvm::cast<RankedTensorType>(v.getType());
    return make<tx::ReshapeOp>({v}, {}, type.clone(shape));
  }
  Value transpose(Value v, llvm::ArrayRef<int64_t> perm) {
    return make<tx::TransposeOp>(
        {v}, {n.named("perm", n.builder.getDenseI64ArrayAttr(perm))});
  }
  Value cast(Value v, Type elementType) {
    if (!v)
      return fail();
    auto type = llvm::cast<RankedTensorType>(v.getType());
    if (type.getElementType() == elementType)
      return v;
    return make<tx::CastOp>({v}, {}, type.clone(elementType));
  }

  bool ok() const { return !broken; }

private:
  Value fail() {
    broken = true;
    return {};
  }

  NodeImporter &n;
  bool broken = false;
};

/// True when |v| folded to a constant with every element false (a guard
/// that never fires: left out rather than computed).
bool isConstantFalse(Value v) {
  auto constant = v ? v.getDefiningOp<tx::ConstantOp>() : tx::ConstantOp();
  if (!constant)
    return false;
  auto value = llvm::dyn_cast<DenseElementsAttr>(constant.getValue());
  return value && value.getElementType().isInteger(1) && value.isSplat() &&
         !value.getSplatValue<bool>();
}

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

llvm::ArrayRef<int64_t> shapeOf(Value v) {
  return llvm::cast<RankedTensorType>(v.getType()).getShape();
}
} // namespace

//===----------------------------------------------------------------------===//
// Gelu
//===----------------------------------------------------------------------===//

/// approximate = "none": 0.5 x (1 + erf(x / sqrt 2)); "tanh":
/// 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))). Computed in x's type,
/// as ONNX's function body and PyTorch do.
LogicalResult onnx_import::importGelu(NodeImporter &n) {
  auto approximate = n.attrString("approximate", "none");
  if (failed(n.expectInputs(1, 1)) || failed(approximate))
    return failure();
  if (*approximate != "none" && *approximate != "tanh")
    return n.fail("approximate = '" + *approximate +
                  "' is not one of 'none' and 'tanh'");
  auto element = llvm::dyn_cast<FloatType>(n.type(0).getElementType());
  if (!element)
    return n.fail("Gelu needs a float input");
  OpChain c(n);
  Value x = n.input(0);
  Value inner;
  if (*approximate == "none") {
    inner = c.make<tx::ErfOp>(
        {c.make<tx::MulOp>({x, n.floatScalar(element, M_SQRT1_2)})});
  } else {
    Value cube = c.make<tx::MulOp>({c.make<tx::MulOp>({x, x}), x});
    Value poly = c.make<tx::AddOp>(
        {x, c.make<tx::MulOp>({cube, n.floatScalar(element, 0.044715)})});
    inner = c.make<tx::TanhOp>(
        {c.make<tx::MulOp>({poly, n.floatScalar(element, std::sqrt(2.0 / M_PI))})});
  }
  Value half = c.make<tx::MulOp>({x, n.floatScalar(element, 0.5)});
  Value y = c.make<tx::MulOp>(
      {half, c.make<tx::AddOp>({inner, n.floatScalar(element, 1.0)})});
  if (!c.ok())
    return failure();
  n.setResult(0, y);
  return success();
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

namespace {
/// What one Attention node asks for, read from its attributes and operands.
struct AttentionSpec {
  bool causal = false;
  std::optional<double> scale;
  double softcap = 0;
  int64_t qkOutputMode = 0;
  std::optional<Type> softmaxType;
  int64_t leftWindow = -1, rightWindow = -1;
  bool threeD = false;
  int64_t qHeads = 0, kvHeads = 0;
  // Operand indices of the optional inputs (ONNX's positions).
  static constexpr unsigned kMask = 3, kPastKey = 4, kPastValue = 5,
                            kNonPadKvLength = 6;
};

/// q, k and v in tx.attention's layout [B, heads, tokens, head dim], k and
/// v with the past cache in front (ONNX's present_key/present_value).
struct AttentionOperands {
  Value q, k, v;
  int64_t batch = 0, qHeads = 0, kvHeads = 0, qLen = 0, kvLen = 0;
  int64_t pastLen = 0;
};

FailureOr<AttentionSpec> readAttentionSpec(NodeImporter &n) {
  AttentionSpec spec;
  auto causal = n.attrInt("is_causal", 0);
  auto scale = n.attrFloat("scale", 0);
  auto softcap = n.attrFloat("softcap", 0);
  auto mode = n.attrInt("qk_matmul_output_mode", 0);
  auto precision = n.attrOptionalInt("softmax_precision");
  auto qHeads = n.attrOptionalInt("q_num_heads");
  auto kvHeads = n.attrOptionalInt("kv_num_heads");
  auto left = n.attrInt("left_window_size", -1);
  auto right = n.attrInt("right_window_size", -1);
  if (failed(causal) || failed(scale) || failed(softcap) || failed(mode) ||
      failed(precision) || failed(qHeads) || failed(kvHeads) || failed(left) ||
      failed(right))
    return failure();
  if (*causal != 0 && *causal != 1)
    return n.fail("is_causal must be 0 or 1, not " + std::to_string(*causal));
  spec.causal = *causal == 1;
  if (n.findAttr("scale")) {
    if (!(*scale > 0) || !std::isfinite(*scale))
      return n.fail("scale must be a positive finite number");
    spec.scale = *scale;
  }
  if (!std::isfinite(*softcap) || *softcap < 0)
    return n.fail("softcap must be zero (off) or a positive finite number");
  spec.softcap = *softcap;
  if (*mode < 0 || *mode > 3)
    return n.fail("qk_matmul_output_mode must be 0 to 3, not " +
                  std::to_string(*mode));
  spec.qkOutputMode = *mode;
  if (*precision) {
    Type type = convertElementType(n.getContext(), static_cast<int32_t>(**precision));
    if (!type || !llvm::isa<FloatType>(type))
      return n.fail("softmax_precision " + std::to_string(**precision) +
                    " is not a float type");
    spec.softmaxType = type;
  }
  if (*left < -1 || *right < -1)
    return n.fail("left_window_size and right_window_size must be -1 "
                  "(unbounded) or non-negative");
  spec.leftWindow = *left;
  spec.rightWindow = *right;
  int64_t rank = n.type(0).getRank();
  if (rank != 3 && rank != 4)
    return n.fail("Q must have rank 3 or 4, not " + std::to_string(rank));
  if (n.type(1).getRank() != rank || n.type(2).getRank() != rank)
    return n.fail("Q, K and V must have the same rank");
  spec.threeD = rank == 3;
  if (spec.threeD) {
    if (!*qHeads || !*kvHeads)
      return n.fail("3-D inputs need the q_num_heads and kv_num_heads attributes");
    spec.qHeads = **qHeads;
    spec.kvHeads = **kvHeads;
    if (spec.qHeads <= 0 || spec.kvHeads <= 0)
      return n.fail("q_num_heads and kv_num_heads must be positive");
  } else if ((*qHeads || *kvHeads) && n.opset >= 25) {
    return n.fail("q_num_heads and kv_num_heads must not be given for 4-D inputs");
  }
  return spec;
}

/// Brings 3-D [B, T, heads * D] operands to [B, heads, T, D], checks the
/// shapes and puts the past cache in front of k and v.
FailureOr<AttentionOperands> attentionOperands(NodeImporter &n, OpChain &c,
                                               const AttentionSpec &spec) {
  AttentionOperands o;
  Value q = n.input(0), k = n.input(1), v = n.input(2);
  auto toHeads = [&](Value x, int64_t heads, llvm::StringRef name) -> Value {
    auto shape = shapeOf(x);
    if (shape[2] % heads != 0) {
      (void)n.fail(name + " hidden size " + std::to_string(shape[2]) +
                   " is not a multiple of its head count " +
                   std::to_string(heads));
      return {};
    }
    Value split = c.reshape(x, {shape[0], shape[1], heads, shape[2] / heads});
    return c.transpose(split, {0, 2, 1, 3});
  };
  if (spec.threeD) {
    q = toHeads(q, spec.qHeads, "Q");
    k = q ? toHeads(k, spec.kvHeads, "K") : Value();
    v = k ? toHeads(v, spec.kvHeads, "V") : Value();
    if (!v || !c.ok())
      return failure();
  }
  auto qs = shapeOf(q), ks = shapeOf(k), vs = shapeOf(v);
  if (ks[0] != qs[0] || vs[0] != qs[0])
    return n.fail("Q, K and V must have the same batch size");
  if (ks[3] != qs[3])
    return n.fail("K's head size " + std::to_string(ks[3]) +
                  " differs from Q's " + std::to_string(qs[3]));
  if (vs[1] != ks[1] || vs[2] != ks[2])
    return n.fail("V's heads and sequence length must be K's");
  if (ks[1] <= 0 || qs[1] % ks[1] != 0)
    return n.fail("Q's " + std::to_string(qs[1]) +
                  " heads are not a multiple of K's " + std::to_string(ks[1]));
  if (n.has(AttentionSpec::kPastKey) != n.has(AttentionSpec::kPastValue))
    return n.fail("past_key and past_value must be given together");
  if (n.has(AttentionSpec::kPastKey)) {
    if (n.has(AttentionSpec::kNonPadKvLength))
      return n.fail("nonpad_kv_seqlen cannot be combined with past_key/past_value");
    Value pastK = n.input(AttentionSpec::kPastKey);
    Value pastV = n.input(AttentionSpec::kPastValue);
    auto pk = shapeOf(pastK), pv = shapeOf(pastV);
    if (pk.size() != 4 || pv.size() != 4 || pk[0] != ks[0] || pk[1] != ks[1] ||
        pk[3] != ks[3] || pv[0] != vs[0] || pv[1] != vs[1] || pv[3] != vs[3] ||
        pv[2] != pk[2])
      return n.fail("past_key/past_value must be [batch, kv heads, past length, "
                    "head size] matching K and V");
    o.pastLen = pk[2];
    auto axis = n.named("axis", n.builder.getI64IntegerAttr(2));
    k = c.make<tx::ConcatOp>({pastK, k}, {axis});
    v = c.make<tx::ConcatOp>({pastV, v}, {axis});
    if (!c.ok())
      return failure();
  }
  o.q = q;
  o.k = k;
  o.v = v;
  o.batch = qs[0];
  o.qHeads = qs[1];
  o.kvHeads = ks[1];
  o.qLen = qs[2];
  o.kvLen = shapeOf(k)[2];
  return o;
}

/// The attention mask as an additive bias of |element| type, padded with
/// -inf to the total key length (ONNX lets it be shorter); null when absent.
Value additiveMask(NodeImporter &n, OpChain &c, FloatType element, int64_t kvLen) {
  if (!n.has(AttentionSpec::kMask))
    return {};
  Value mask = n.input(AttentionSpec::kMask);
  auto type = n.type(AttentionSpec::kMask);
  if (type.getRank() == 0 || type.getShape().back() > kvLen) {
    (void)n.fail("attn_mask's last dimension must be at most the total key "
                 "length " + std::to_string(kvLen));
    return {};
  }
  Value negInf = n.floatScalar(element, kNegInf);
  if (type.getElementType().isInteger(1))
    mask = c.make<tx::WhereOp>({mask, n.floatScalar(element, 0), negInf});
  else if (llvm::isa<FloatType>(type.getElementType()))
    mask = c.cast(mask, element);
  else {
    (void)n.fail("attn_mask must be bool or float");
    return {};
  }
  int64_t pad = kvLen - type.getShape().back();
  if (pad > 0) {
    llvm::SmallVector<int64_t> padShape(type.getShape());
    padShape.back() = pad;
    auto padType = RankedTensorType::get(padShape, element);
    Value fill = n.constant(DenseElementsAttr::get(
        padType, roundedFloat(element, kNegInf)));
    mask = c.make<tx::ConcatOp>(
        {mask, fill},
        {n.named("axis", n.builder.getI64IntegerAttr(type.getRank() - 1))});
  }
  return mask;
}

/// A constant [Tq, Tk] bias: 0 where key j is visible from query i with the
/// causal frontier and window offset by |offset| (the past length), -inf
/// elsewhere. Null when neither applies.
Value constantFrontierBias(NodeImporter &n, const AttentionSpec &spec,
                           FloatType element, int64_t qLen, int64_t kvLen,
                           int64_t offset) {
  bool window = spec.leftWindow >= 0 || spec.rightWindow >= 0;
  if (!spec.causal && !window)
    return {};
  llvm::APFloat zero = roundedFloat(element, 0);
  llvm::APFloat negInf = roundedFloat(element, kNegInf);
  llvm::SmallVector<llvm::APFloat> values;
  values.reserve(qLen * kvLen);
  for (int64_t i = 0; i < qLen; ++i)
    for (int64_t j = 0; j < kvLen; ++j) {
      int64_t diff = i + offset - j; // how far key j lies behind query i
      bool visible = !spec.causal || diff >= 0;
      if (spec.leftWindow >= 0)
        visible = visible && diff <= spec.leftWindow;
      if (spec.rightWindow >= 0)
        visible = visible && -diff <= spec.rightWindow;
      values.push_back(visible ? zero : negInf);
    }
  return n.constant(DenseElementsAttr::get(
      RankedTensorType::get({qLen, kvLen}, element), values));
}

/// The per-batch bias of nonpad_kv_seqlen (opset 24; an external KV cache
/// where batch b holds L[b] valid keys): the keys from L[b] on are padding,
/// and the causal frontier and window are offset by L[b] - Tq. Returns a
/// [B, 1, Tq, Tk] bias.
Value perBatchBias(NodeImporter &n, OpChain &c, const AttentionSpec &spec,
                   FloatType element, int64_t batch, int64_t qLen, int64_t kvLen) {
  Value lengths = n.input(AttentionSpec::kNonPadKvLength);
  auto type = n.type(AttentionSpec::kNonPadKvLength);
  Type i64 = n.builder.getI64Type();
  if (type.getRank() != 1 || type.getDimSize(0) != batch ||
      !type.getElementType().isSignlessInteger()) {
    (void)n.fail("nonpad_kv_seqlen must be an integer tensor [batch]");
    return {};
  }
  lengths = c.cast(lengths, i64);
  // keyMinusQuery[i, j] = j - i.
  llvm::SmallVector<int64_t> keyMinusQuery;
  keyMinusQuery.reserve(qLen * kvLen);
  for (int64_t i = 0; i < qLen; ++i)
    for (int64_t j = 0; j < kvLen; ++j)
      keyMinusQuery.push_back(j - i);
  Value d = n.constant(DenseElementsAttr::get(
      RankedTensorType::get({qLen, kvLen}, i64), llvm::ArrayRef(keyMinusQuery)));
  // Query i sits at absolute position i + offset[b]: j is diff = offset - d
  // behind it.
  Value offset = c.reshape(
      c.make<tx::SubOp>({lengths, n.intScalar(i64, qLen)}),
      {batch, 1, 1});
  Value visible;
  auto both = [&](Value a, Value b) {
    return a ? c.make<tx::AndOp>({a, b}) : b;
  };
  if (spec.causal) // diff >= 0  <=>  d <= offset
    visible = c.make<tx::LessOrEqualOp>({d, offset});
  if (spec.leftWindow >= 0) { // diff <= left  <=>  offset - left <= d
    Value first = c.make<tx::SubOp>({offset, n.intScalar(i64, spec.leftWindow)});
    visible = both(visible, c.make<tx::LessOrEqualOp>({first, d}));
  }
  if (spec.rightWindow >= 0) { // -diff <= right  <=>  d <= offset + right
    Value last = c.make<tx::AddOp>({offset, n.intScalar(i64, spec.rightWindow)});
    visible = both(visible, c.make<tx::LessOrEqualOp>({d, last}));
  }
  // Keys at or past L[b] are padding.
  llvm::SmallVector<int64_t> keyIndex;
  for (int64_t j = 0; j < kvLen; ++j)
    keyIndex.push_back(j);
  Value keys = n.constant(DenseElementsAttr::get(
      RankedTensorType::get({kvLen}, i64), llvm::ArrayRef(keyIndex)));
  Value valid = c.make<tx::LessOp>({keys, c.reshape(lengths, {batch, 1, 1})});
  visible = both(visible, valid);
  Value bias = c.make<tx::WhereOp>(
      {visible, n.floatScalar(element, 0),
       n.floatScalar(element, kNegInf)});
  if (!bias)
    return {};
  auto shape = shapeOf(bias); // [B, 1, Tk] or [B, Tq, Tk]
  return c.reshape(bias, {batch, 1, shape[1], kvLen});
}

/// Repeats each of k's kvHeads heads n times ([h0, h0, h1, h1, ...]) for
/// grouped-query attention in the spelled-out form, as Hugging Face's
/// repeat_kv writes it (unsqueeze, expand, reshape), the form
/// tx-fuse-attention folds back into tx.attention's fewer kv heads.
Value repeatHeads(NodeImporter &n, OpChain &c, Value x, int64_t repeats) {
  if (repeats == 1 || !x)
    return x;
  auto s = shapeOf(x);
  Value spread = c.make<tx::UnsqueezeOp>(
      {x}, {n.named("axes", n.builder.getDenseI64ArrayAttr({2}))});
  if (!spread)
    return {};
  auto type = llvm::cast<RankedTensorType>(spread.getType());
  Value expanded = c.make<tx::ExpandOp>(
      {spread}, {}, type.clone({s[0], s[1], repeats, s[2], s[3]}));
  return c.reshape(expanded, {s[0], s[1] * repeats, s[2], s[3]});
}
} // namespace

LogicalResult onnx_import::importAttention(NodeImporter &n) {
  if (failed(n.expectInputs(3, n.opset >= 24 ? 7 : 6)))
    return failure();
  auto spec = readAttentionSpec(n);
  if (failed(spec))
    return failure();
  auto element = llvm::dyn_cast<FloatType>(n.type(0).getElementType());
  if (!element || n.type(1).getElementType() != element ||
      n.type(2).getElementType() != element)
    return n.fail("Q, K and V must have one float element type");
  OpChain c(n);
  auto o = attentionOperands(n, c, *spec);
  if (failed(o))
    return failure();
  double scale = spec->scale ? *spec->scale
                             : 1.0 / std::sqrt(double(shapeOf(o->q)[3]));
  Value mask = additiveMask(n, c, element, o->kvLen);
  if (n.has(AttentionSpec::kMask) && !mask)
    return failure();

  // The definition, as ONNX's reference computes it: q and k each scaled
  // by sqrt(scale) in the input type, the soft cap, the bias (mask, the
  // causal frontier and window offset by the past, per-batch padding),
  // softmax in softmax_precision, rows without a visible key set to 0.
  Value sqrtScale = n.floatScalar(element, std::sqrt(scale));
  Value k = repeatHeads(n, c, o->k, o->qHeads / o->kvHeads);
  Value v = repeatHeads(n, c, o->v, o->qHeads / o->kvHeads);
  Value scores = c.make<tx::MatMulOp>(
      {c.make<tx::MulOp>({o->q, sqrtScale}),
       c.make<tx::MulOp>({c.transpose(k, {0, 1, 3, 2}), sqrtScale})});
  if (spec->softcap > 0) {
    Value cap = n.floatScalar(element, spec->softcap);
    scores = c.make<tx::MulOp>(
        {c.make<tx::TanhOp>({c.make<tx::DivOp>({scores, cap})}), cap});
  }
  Value bias = mask;
  auto addBias = [&](Value term) {
    if (term)
      bias = bias ? c.make<tx::AddOp>({bias, term}) : term;
  };
  if (n.has(AttentionSpec::kNonPadKvLength))
    addBias(perBatchBias(n, c, *spec, element, o->batch, o->qLen, o->kvLen));
  else
    addBias(constantFrontierBias(n, *spec, element, o->qLen, o->kvLen,
                                 o->pastLen));
  Value biased = bias ? c.make<tx::AddOp>({scores, bias}) : scores;
  Value qkOutput = spec->qkOutputMode == 2 ? biased : scores;

  auto softmaxElement =
      spec->softmaxType ? llvm::cast<FloatType>(*spec->softmaxType) : element;
  Value probs = c.make<tx::SoftmaxOp>(
      {c.cast(biased, softmaxElement)},
      {n.named("axis", n.builder.getI64IntegerAttr(-1))});
  if (bias) {
    // A row whose bias is -inf everywhere has no visible key: its
    // probabilities are 0 (softmax alone would give NaN).
    int64_t lastAxis = static_cast<int64_t>(shapeOf(bias).size()) - 1;
    Value rowMax = c.make<tx::ReduceMaxOp>(
        {bias}, {n.named("axes", n.builder.getDenseI64ArrayAttr({lastAxis})),
                 n.named("keep_dims", n.builder.getUnitAttr())});
    Value noKey = c.make<tx::EqualOp>(
        {rowMax, n.floatScalar(element, kNegInf)});
    if (!isConstantFalse(noKey))
      probs = c.make<tx::WhereOp>({noKey, n.floatScalar(softmaxElement, 0), probs});
  }
  if (spec->qkOutputMode == 3)
    qkOutput = probs;
  Value out = c.make<tx::MatMulOp>({c.cast(probs, element), v});
  if (n.isOutputUsed(3))
    n.setResult(3, c.cast(qkOutput, element));
  if (spec->threeD && out) {
    auto s = shapeOf(out);
    out = c.reshape(c.transpose(out, {0, 2, 1, 3}), {s[0], s[2], s[1] * s[3]});
  }
  if (!c.ok() || !out)
    return failure();
  n.setResult(0, out);
  // present_key and present_value: the cache with this step's keys appended.
  if (n.numOutputs() > 1)
    n.setResult(1, o->k);
  if (n.numOutputs() > 2)
    n.setResult(2, o->v);
  return success();
}
