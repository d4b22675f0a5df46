//===- FuseAttention.cpp - fuse scaled-dot-product attention --------------===//
//
// SPDX-License-Identifier: Apache-2.0
// tx-fuse-attention: matmul(q, kT) [* scale] [Where(cond, ., fill)]
// [+ mask] -> softmax(-1) [-> Where(IsNaN(p), 0, p) |
// Where(max(mask) == -inf, 0, p)] -> matmul(p, v) becomes tx.attention (see
// Passes.td for the contract).
//
//===----------------------------------------------------------------------===//

#include "txopt/Dialect/Tx/Transforms/Passes.h"

#include "txopt/Dialect/Tx/IR/TxDialect.h"
#include "txopt/Dialect/Tx/IR/TxOps.h"
#include "txopt/Dialect/Tx/IR/WeightSource.h"
#include "txopt/Dialect/Tx/Transforms/PatternUtils.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <cmath>
#include <cstring>
#include <numeric>
#include <string>

namespace mlir::txopt::tx {
#define GEN_PASS_DEF_FUSEATTENTIONPASS
#include "txopt/Dialect/Tx/Transforms/Passes.h.inc"
} // namespace mlir::txopt::tx

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::tx;

namespace {

RankedTensorType tensorType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

bool isAttentionElementType(Type type) {
  return type.isF16() || type.isBF16() || type.isF32();
}

/// A [B, H, T, D] operand of the fused op as found in the graph: |base|,
/// transposed by |perm| when it is not empty, then reshaped to |shape| when
/// its shape differs (a pure view: row-major order is kept).
struct HeadsRef {
  Value base;
  SmallVector<int64_t> perm;
  SmallVector<int64_t> shape;

  Value materialize(RewriterBase &rewriter, Location loc) const {
    Value value = base;
    if (!perm.empty())
      value = TransposeOp::create(rewriter, loc, value,
                                  rewriter.getDenseI64ArrayAttr(perm));
    auto type = tensorType(value);
    if (type.getShape() != ArrayRef<int64_t>(shape))
      value = ReshapeOp::create(
          rewriter, loc, RankedTensorType::get(shape, type.getElementType()),
          value);
    return value;
  }
};

/// What matching around one softmax found.
struct AttentionMatch {
  enum Status { NotACandidate, NearMiss, Matched };
  Status status = NotACandidate;
  std::string reason;
  Value q, mask;
  /// A mask made from a Where's constant condition, materialized as a
  /// tx.constant operand (set only when |mask| is not).
  ElementsAttr maskConstant;
  HeadsRef k, v;
  double scale = 1.0;
  bool causal = false;
  std::optional<int64_t> window;
  /// A training dropout of the probabilities (before the product with v).
  DropoutOp dropout;
  Operation *root = nullptr;
  /// The ops the fused op replaces, in data-flow order.
  SmallVector<Operation *> ops;
};

/// Multiplies |scale| by the scalar-constant factors of the single-use
/// Mul/Div ops that produce |value| and returns what they scale. Stops at
/// anything else; |why| is set when a Mul/Div by a non-scalar looks like a
/// scale that is not applied uniformly.
Value stripScale(Value value, double &scale, SmallVectorImpl<Operation *> &ops,
                 std::string &why) {
  while (Operation *op = value.getDefiningOp()) {
    if (!isa<MulOp, DivOp>(op))
      break;
    Value lhs = op->getOperand(0), rhs = op->getOperand(1);
    std::optional<double> factor = getScalarConstant(rhs);
    Value scaled = lhs;
    if (!factor && isa<MulOp>(op)) {
      factor = getScalarConstant(lhs);
      scaled = rhs;
    }
    if (!factor) {
      if (getNumElements(lhs) != getNumElements(rhs) &&
          (isa_and_nonnull<ConstantOp>(rhs.getDefiningOp()) ||
           isa_and_nonnull<ConstantOp>(lhs.getDefiningOp())))
        why = "expected a scalar scale, but '" +
              op->getName().getStringRef().str() + "' scales by a tensor";
      break;
    }
    if (tensorType(scaled).getShape() != tensorType(value).getShape())
      break;
    scale *= isa<DivOp>(op) ? 1.0 / *factor : *factor;
    ops.push_back(op);
    value = scaled;
  }
  return value;
}

/// |x| (shape [..., T, D] holding the row-major data of a [B, H, T, D]
/// tensor) as a fused-op operand: the grouped-query repeat
/// `reshape(expand(unsqueeze(k0, 2)))` folds into k0's fewer heads, an
/// ancestor through reshapes of the exact shape is used directly, anything
/// else is reshaped.
std::optional<HeadsRef> traceHeads(Value x, ArrayRef<int64_t> target) {
  int64_t b = target[0], h = target[1];
  // The grouped-query repeat first (anywhere up the reshape chain), then the
  // first ancestor of the exact shape.
  std::optional<HeadsRef> exact;
  for (Value y = x;;) {
    if (auto expand = y.getDefiningOp<ExpandOp>()) {
      ArrayRef<int64_t> es = tensorType(expand).getShape();
      auto unsqueeze = expand.getInput().getDefiningOp<UnsqueezeOp>();
      if (unsqueeze && es.size() == 5 && es[0] == b && es[1] * es[2] == h &&
          es[3] == target[2] && es[4] == target[3] &&
          unsqueeze.getAxes() == ArrayRef<int64_t>{2}) {
        Value k0 = unsqueeze.getInput();
        return HeadsRef{k0, {}, SmallVector<int64_t>(tensorType(k0).getShape())};
      }
    }
    if (!exact && tensorType(y).getShape() == target)
      exact = HeadsRef{y, {}, SmallVector<int64_t>(target)};
    auto reshape = y.getDefiningOp<ReshapeOp>();
    if (!reshape)
      break;
    y = reshape.getInput();
  }
  if (exact)
    return exact;
  ArrayRef<int64_t> xs = tensorType(x).getShape();
  if (xs.size() < 2 || xs.take_back(2) != target.take_back(2) ||
      getNumElements(x) != b * h * target[2] * target[3])
    return std::nullopt;
  return HeadsRef{x, {}, SmallVector<int64_t>(target)};
}

/// k as [B, H, Tk, D] from |kt|, a [B, H, D, Tk] value: a transpose whose
/// last two output dims are (D, Tk), reached through reshapes that keep
/// them, with the swap of those two dims undone.
std::optional<HeadsRef> traceKeys(Value kt, ArrayRef<int64_t> target) {
  ArrayRef<int64_t> trailing = tensorType(kt).getShape().take_back(2);
  Value y = kt;
  while (auto reshape = y.getDefiningOp<ReshapeOp>()) {
    y = reshape.getInput();
    if (tensorType(y).getShape().take_back(2) != trailing)
      return std::nullopt;
  }
  auto transpose = y.getDefiningOp<TransposeOp>();
  if (!transpose)
    return std::nullopt;
  SmallVector<int64_t> perm(transpose.getPerm());
  if (perm.size() < 2)
    return std::nullopt;
  std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
  bool identity = llvm::all_of(llvm::enumerate(perm), [](auto pair) {
    return pair.value() == static_cast<int64_t>(pair.index());
  });
  if (identity)
    return traceHeads(transpose.getInput(), target);
  ArrayRef<int64_t> in = tensorType(transpose.getInput()).getShape();
  SmallVector<int64_t> permuted;
  for (int64_t p : perm)
    permuted.push_back(in[p]);
  if (ArrayRef<int64_t>(permuted).take_back(2) != target.take_back(2))
    return std::nullopt;
  return HeadsRef{transpose.getInput(), perm, SmallVector<int64_t>(target)};
}

/// The dense value of a constant or of a frozen parameter with an inline
/// value; null for anything else (a sourced weight included).
ElementsAttr constantMaskValue(Value mask) {
  Operation *def = mask.getDefiningOp();
  if (auto constant = dyn_cast_or_null<ConstantOp>(def))
    return constant.getValue();
  if (auto load = dyn_cast_or_null<LoadParameterOp>(def)) {
    auto parameter = SymbolTable::lookupNearestSymbolFrom<ParameterOp>(
        load, load.getNameAttr());
    if (!parameter || !parameter.getFrozen())
      return nullptr;
    if (parameter.getInitialValue())
      return *parameter.getInitialValue();
    // A frozen f32 mask left in the model's external data (an exporter's
    // causal-mask buffer): read it, it decides what the op computes. Only
    // masks up to 4096 x 4096 are read; larger ones stay general operands.
    auto type = dyn_cast<RankedTensorType>(load.getType());
    if (!type || !type.getElementType().isF32() || type.getNumElements() > (int64_t(1) << 24))
      return nullptr;
    auto bytes = readParameterBytes(parameter, load->getParentOfType<ModuleOp>());
    if (!bytes) {
      llvm::consumeError(bytes.takeError()); // import checked the source
      return nullptr;
    }
    llvm::SmallVector<float> values(type.getNumElements());
    std::memcpy(values.data(), bytes->data(), values.size() * sizeof(float));
    return DenseElementsAttr::get(type, llvm::ArrayRef<float>(values));
  }
  return nullptr;
}

/// True when |value| reads (transitively) a parameter that is not frozen,
/// so it would need a gradient that the fused op does not give.
bool dependsOnTrainable(Value value) {
  SmallVector<Value> work{value};
  llvm::SmallPtrSet<Operation *, 32> seen;
  while (!work.empty()) {
    Operation *def = work.pop_back_val().getDefiningOp();
    if (!def || !seen.insert(def).second)
      continue;
    if (auto load = dyn_cast<LoadParameterOp>(def)) {
      auto parameter = SymbolTable::lookupNearestSymbolFrom<ParameterOp>(
          load, load.getNameAttr());
      if (!parameter || !parameter.getFrozen())
        return true;
      continue;
    }
    if (seen.size() > 4096)
      return true;
    llvm::append_range(work, def->getOperands());
  }
  return false;
}

/// What a constant additive mask of shape [..., Tq, Tk] is.
struct MaskKind {
  enum Kind { Zero, Causal, Other } kind = Other;
  std::optional<int64_t> window;
};

/// Classifies a constant mask: every entry 0 (no mask), or every [Tq, Tk]
/// slice the same causal triangle (0 where key j is visible from query i,
/// -inf or at most -1e30 elsewhere, which exp flushes to exactly 0) with an
/// optional sliding window; anything else is a general mask.
MaskKind classifyMask(ElementsAttr value, int64_t tq, int64_t tk) {
  MaskKind result;
  auto type = cast<RankedTensorType>(value.getType());
  if (!isa<FloatType>(type.getElementType()))
    return result;
  SmallVector<double> data;
  data.reserve(type.getNumElements());
  // f32 masks (GPT-2's 1024 x 1024 buffer, read once per layer) without an
  // APFloat per element; other float types through APFloat.
  auto floats = type.getElementType().isF32() ? value.tryGetValues<float>()
                                               : std::nullopt;
  if (floats) {
    for (float element : *floats)
      data.push_back(element);
  } else {
    for (APFloat element : value.getValues<APFloat>())
      data.push_back(element.convertToDouble());
  }
  if (llvm::all_of(data, [](double x) { return x == 0.0; })) {
    result.kind = MaskKind::Zero;
    return result;
  }
  ArrayRef<int64_t> shape = type.getShape();
  if (shape.size() < 2 || shape.take_back(2) != ArrayRef<int64_t>{tq, tk})
    return result;
  // Per row the first visible key; the window is the widest visible run.
  SmallVector<int64_t> first(tq, -1);
  for (int64_t i = 0; i < tq; ++i)
    for (int64_t j = 0; j < tk; ++j)
      if (data[i * tk + j] == 0.0) {
        first[i] = j;
        break;
      }
  int64_t window = 0;
  for (int64_t i = 0; i < tq; ++i) {
    if (first[i] < 0)
      return result; // a fully masked row: leave it to the general path
    window = std::max(window, i - first[i] + 1);
  }
  for (int64_t slice = 0, n = data.size() / (tq * tk); slice < n; ++slice)
    for (int64_t i = 0; i < tq; ++i)
      for (int64_t j = 0; j < tk; ++j) {
        double x = data[(slice * tq + i) * tk + j];
        bool visible = j <= i && j > i - window;
        if (visible ? x != 0.0 : !(x <= -1e30))
          return result;
      }
  result.kind = MaskKind::Causal;
  if (window < tq)
    result.window = window;
  return result;
}

/// A constant Where condition on the scores read as the additive mask it
/// amounts to: f32 0 where the scores are kept, -inf where the fill replaces
/// them, in the condition's shape. |emptyRow| is set when some query row
/// keeps no key at all (the softmax then sees only the fill).
struct ConditionMask {
  ElementsAttr additive;
  bool emptyRow = false;
};

/// |condition| (i1) as a mask that keeps the scores where it equals |keep|;
/// a null |additive| when its values cannot be read.
ConditionMask conditionAsMask(ElementsAttr condition, bool keep) {
  ConditionMask result;
  auto dense = dyn_cast<DenseElementsAttr>(condition);
  if (!dense || !dense.getElementType().isInteger(1))
    return result;
  auto type = cast<RankedTensorType>(condition.getType());
  // The last dim is the keys (or 1, broadcast over them): each run of it is
  // one query row.
  int64_t keys = type.getRank() ? type.getShape().back() : 1;
  SmallVector<float> values;
  values.reserve(type.getNumElements());
  int64_t kept = 0;
  for (bool bit : dense.getValues<bool>()) {
    kept += bit == keep;
    values.push_back(bit == keep ? 0.0f : -INFINITY);
    if (static_cast<int64_t>(values.size()) % keys == 0) {
      result.emptyRow |= kept == 0;
      kept = 0;
    }
  }
  auto f32 = RankedTensorType::get(type.getShape(),
                                   Float32Type::get(type.getContext()));
  result.additive = DenseElementsAttr::get(f32, llvm::ArrayRef<float>(values));
  return result;
}

/// Masks read in one pass run: every layer of a model usually adds the same
/// constant (GPT-2's 1024 x 1024 causal buffer) or selects with the same
/// condition, read and classified once here.
struct MaskCache {
  llvm::DenseMap<std::tuple<Attribute, int64_t, int64_t>, MaskKind> kinds;
  llvm::DenseMap<std::pair<Attribute, unsigned>, ConditionMask> conditions;

  MaskKind classify(ElementsAttr value, int64_t tq, int64_t tk) {
    auto key = std::make_tuple(Attribute(value), tq, tk);
    auto cached = kinds.find(key);
    if (cached == kinds.end())
      cached = kinds.try_emplace(key, classifyMask(value, tq, tk)).first;
    return cached->second;
  }

  const ConditionMask &condition(ElementsAttr value, bool keep) {
    auto key = std::make_pair(Attribute(value), unsigned(keep));
    auto cached = conditions.find(key);
    if (cached == conditions.end())
      cached = conditions.try_emplace(key, conditionAsMask(value, keep)).first;
    return cached->second;
  }
};

/// True when |value| is matmul(q, kT), maybe times scalar constants.
bool isScaledProduct(Value value) {
  double ignored = 1.0;
  SmallVector<Operation *> ignoredOps;
  std::string ignoredWhy;
  Value product = stripScale(value, ignored, ignoredOps, ignoredWhy);
  return static_cast<bool>(product.getDefiningOp<MatMulOp>());
}

/// True when |value| is a scaled product or a tx.where that selects one.
bool isScores(Value value) {
  if (isScaledProduct(value))
    return true;
  auto select = value.getDefiningOp<WhereOp>();
  return select && (isScaledProduct(select.getLhs()) ||
                    isScaledProduct(select.getRhs()));
}

/// Matches the attention around |softmax|: downstream, the matmul with v the
/// probabilities feed (maybe through a row guard); upstream,
/// [scale] [Where] [+ mask] over matmul(q, kT); then q, k and v's shapes
/// and head layouts, the masks, and that no intermediate escapes. Each phase
/// returns false when it has settled the match as no candidate or a near
/// miss.
class AttentionMatcher {
public:
  AttentionMatcher(SoftmaxOp softmax, MaskCache &masks) : softmax(softmax), masks(masks) {}

  AttentionMatch run() {
    if (!matchConsumer() || !matchScores() || !matchOperands() || !matchMask() ||
        !matchCondition() || !checkContained())
      return match;
    match.q = q;
    match.k = *k;
    match.v = *v;
    match.mask = mask;
    match.scale = scale;
    match.root = pv;
    match.ops = std::move(ops);
    match.status = AttentionMatch::Matched;
    return match;
  }

private:
  bool notCandidate(StringRef why) {
    match.status = AttentionMatch::NotACandidate;
    match.reason = why.str();
    return false;
  }
  bool nearMiss(const Twine &why) {
    match.status = AttentionMatch::NearMiss;
    match.reason = why.str();
    return false;
  }

  /// Downstream: the probabilities feed one matmul, maybe through HF's
  /// Where(IsNaN(p), 0, p) or ONNX Attention's Where(max(mask) == -inf, 0, p).
  bool matchConsumer() {
    Value probs = softmax.getResult();
    Value consumed = probs;
    SmallVector<Operation *> users(probs.getUsers());
    if (users.size() == 2) {
      auto isNan = dyn_cast<IsNaNOp>(users[0]);
      auto where = dyn_cast<WhereOp>(users[1]);
      if (!isNan) {
        isNan = dyn_cast<IsNaNOp>(users[1]);
        where = dyn_cast<WhereOp>(users[0]);
      }
      if (isNan && where && where.getCondition() == isNan.getResult() &&
          where.getRhs() == probs && isSplatConstant(where.getLhs(), 0.0) &&
          isNan->hasOneUse() && where.getType() == softmax.getType()) {
        tail = {isNan, where};
        consumed = where.getResult();
      }
    } else if (users.size() == 1) {
      // ONNX Attention's guard (what the importer writes for it): a row
      // whose mask is -inf everywhere gets probabilities 0, as tx.attention
      // gives it. Checked against the mask below.
      auto where = dyn_cast<WhereOp>(users[0]);
      auto equal = where ? where.getCondition().getDefiningOp<EqualOp>() : EqualOp();
      auto rowMax = equal ? equal.getLhs().getDefiningOp<ReduceMaxOp>() : ReduceMaxOp();
      if (rowMax && where.getRhs() == probs &&
          isSplatConstant(where.getLhs(), 0.0) &&
          isSplatConstant(equal.getRhs(), -INFINITY) && rowMax.getKeepDims() &&
          rowMax.getAxes().size() == 1 &&
          rowMax.getAxes()[0] == tensorType(rowMax.getInput()).getRank() - 1 &&
          rowMax->hasOneUse() && equal->hasOneUse() &&
          where.getType() == softmax.getType()) {
        tail = {rowMax, equal, where};
        guardedMask = rowMax.getInput();
        consumed = where.getResult();
      }
    }
    if (!consumed.hasOneUse()) {
      for (Operation *user : consumed.getUsers())
        if (isa<MatMulOp>(user) && user->getOperand(0) == consumed)
          return nearMiss("expected the probabilities to feed only the matmul "
                          "with v, but they have another user ('" +
                          (*llvm::find_if(consumed.getUsers(), [&](Operation *u) {
                            return u != user;
                          }))->getName().getStringRef() + "')");
      return notCandidate("the softmax does not feed one matmul");
    }
    Operation *user = *consumed.getUsers().begin();
    // A training dropout of the probabilities: the fused op draws the same
    // mask over [B, H, Tq, Tk] (the softmax's shape, so the same indices).
    if (auto dropout = dyn_cast<DropoutOp>(user)) {
      if (!dropout->hasOneUse())
        return nearMiss("expected the dropped-out probabilities to feed only "
                        "the matmul with v, but they have another user");
      match.dropout = dropout;
      tail.push_back(dropout);
      consumed = dropout.getResult();
      user = *consumed.getUsers().begin();
    }
    pv = dyn_cast<MatMulOp>(user);
    if (!pv || pv.getLhs() != consumed)
      return notCandidate("the softmax does not feed a matmul as its lhs");
    return true;
  }

  /// Upstream: [scale] [Where(cond, ., fill)] [+ mask] over matmul(q, kT),
  /// rank-4 scores and a softmax over the keys.
  bool matchScores() {
    Value scores = softmax.getInput();
    std::string scaleWhy;
    if (auto add = scores.getDefiningOp<AddOp>()) {
      Value lhs = add.getLhs(), rhs = add.getRhs();
      bool lhsScores = isScores(lhs);
      mask = lhsScores ? rhs : lhs;
      scores = lhsScores ? lhs : rhs;
      head.push_back(add);
    }
    // Hugging Face's eager attention masks with torch.where(cond, scores,
    // fill) (cond marks the kept keys), masked_fill with Where(cond, fill,
    // scores) (cond marks the masked ones); matchCondition checks the rest.
    if (auto found = scores.getDefiningOp<WhereOp>()) {
      bool lhsScores = isScaledProduct(found.getLhs());
      if (lhsScores || isScaledProduct(found.getRhs())) {
        select = found;
        keepWhen = lhsScores;
        fill = lhsScores ? found.getRhs() : found.getLhs();
        scores = lhsScores ? found.getLhs() : found.getRhs();
      }
    }
    scores = stripScale(scores, scale, scaleOps, scaleWhy);
    if (!scaleWhy.empty())
      return nearMiss(scaleWhy);
    qk = scores.getDefiningOp<MatMulOp>();
    if (!qk)
      return notCandidate("the softmax input is not a scaled matmul");

    type = tensorType(softmax.getInput());
    if (type.getRank() != 4)
      return nearMiss("expected rank-4 scores [B, H, Tq, Tk], but got rank " +
                      std::to_string(type.getRank()));
    FailureOr<int64_t> axis = normalizeAxis(softmax.getAxis(), 4);
    if (failed(axis) || *axis != 3)
      return nearMiss("expected a softmax over the last axis (keys), but got "
                      "axis " + std::to_string(softmax.getAxis()));
    return true;
  }

  /// q, kT and v: their scales, shapes [B, H, T, D] without broadcasting,
  /// one element type, and k and v's head layouts (GQA repeats folded).
  bool matchOperands() {
    std::string qWhy, kWhy;
    q = stripScale(qk.getLhs(), scale, qOps, qWhy);
    Value kt = stripScale(qk.getRhs(), scale, kOps, kWhy);
    if (!qWhy.empty() || !kWhy.empty())
      return nearMiss(qWhy.empty() ? kWhy : qWhy);
    if (!std::isfinite(scale) || scale == 0.0)
      return nearMiss("expected a finite non-zero scale, but got " +
                      formatNumber(scale));
    auto qType = tensorType(q), ktType = tensorType(kt);
    auto vValue = pv.getRhs();
    auto vType = tensorType(vValue);
    if (qType.getRank() != 4 || ktType.getRank() != 4 || vType.getRank() != 4)
      return nearMiss("expected rank-4 q, kT and v");
    ArrayRef<int64_t> qs = qType.getShape(), kts = ktType.getShape(),
                      vs = vType.getShape();
    int64_t b = qs[0], h = qs[1], d = qs[3], dv = vs[3];
    tq = qs[2];
    tk = kts[3];
    if (kts != ArrayRef<int64_t>{b, h, d, tk} || vs != ArrayRef<int64_t>{b, h, tk, dv})
      return nearMiss("expected kT " + formatShape({b, h, d, tk}) + " and v " +
                      formatShape({b, h, tk, dv}) +
                      " without batch broadcasting, but got " +
                      formatShape(kts) + " and " + formatShape(vs));
    element = qType.getElementType();
    if (!isAttentionElementType(element) || ktType.getElementType() != element ||
        vType.getElementType() != element)
      return nearMiss("expected q, k and v of one f16, bf16 or f32 type");
    k = traceKeys(kt, {b, h, tk, d});
    if (!k)
      return nearMiss("expected the matmul rhs to be a transpose of k's last "
                      "two dims, but got " +
                      (kt.getDefiningOp()
                           ? "'" + kt.getDefiningOp()->getName().getStringRef().str() + "'"
                           : std::string("a block argument")));
    v = traceHeads(vValue, {b, h, tk, dv});
    if (!v)
      return nearMiss("expected v as [B, H, Tk, Dv]");
    // GQA folds k and v alike; a repeat on one only stays unfolded.
    int64_t hk = k->shape[1], hv = v->shape[1];
    if (hk != hv) {
      return nearMiss("expected k and v repeated to the same number of heads, "
                      "but got " + std::to_string(hk) + " and " +
                      std::to_string(hv));
    }
    return true;
  }

  /// The mask: a constant causal triangle (or sliding window) becomes an
  /// attribute, an all-zero constant disappears, anything else is an operand.
  bool matchMask() {
    if (guardedMask && guardedMask != mask)
      return nearMiss("expected the fully-masked-row guard to read the "
                      "attention mask");
    if (!mask)
      return true;
    auto maskType = tensorType(mask);
    auto addType = tensorType(head.front()->getResult(0));
    if (addType != type || maskType.getRank() > 4)
      return nearMiss("expected the mask to broadcast to the scores' shape " +
                      formatShape(type.getShape()) + ", but got " +
                      formatShape(maskType.getShape()));
    if (maskType.getElementType() != element && !maskType.getElementType().isF32())
      return nearMiss("expected a mask of the scores' element type or f32");
    if (ElementsAttr value = constantMaskValue(mask)) {
      MaskKind kind = masks.classify(value, tq, tk);
      if (kind.kind == MaskKind::Zero) {
        mask = Value();
      } else if (kind.kind == MaskKind::Causal) {
        match.causal = true;
        match.window = kind.window;
        mask = Value();
      }
    }
    if (mask && dependsOnTrainable(mask))
      return nearMiss("expected a mask that needs no gradient, but it reads "
                      "a trainable parameter");
    return true;
  }

  /// The Where on the scores: a constant i1 condition and a scalar fill that
  /// exp flushes to exactly 0, read as the additive mask it amounts to
  /// (causal/window, nothing, or a constant 0 / -inf operand) and combined
  /// with the mask added after it (matchMask's result) only where that is
  /// exact.
  bool matchCondition() {
    if (!select)
      return true;
    if (tensorType(select) != tensorType(qk))
      return nearMiss("expected 'tx.where' on the scores to keep their shape " +
                      formatShape(tensorType(qk).getShape()) + ", but got " +
                      formatShape(tensorType(select).getShape()));
    std::optional<double> value = getScalarConstant(fill);
    if (!value)
      return nearMiss(
          getNumElements(fill) == 1
              ? std::string("expected a constant fill in 'tx.where' on the "
                            "scores, but it is computed at run time")
              : "expected a scalar fill in 'tx.where' on the scores, but got " +
                    quoteType(fill.getType()));
    // The fill replaces a score, so it must lose every softmax to a real
    // score by more than exp's range: -inf, or a finite value at most -1e30
    // (finfo(f32).min and finfo(bf16).min, about -3.4e38) next to scores far
    // smaller in magnitude, the bound classifyMask puts on additive masks.
    // f16 scores have no such value: finfo(f16).min = -65504 is within their
    // own range (a row of scores near -65504 would give the masked keys real
    // weight), so f16 takes -inf only.
    bool negInf = std::isinf(*value) && *value < 0;
    bool f16 = tensorType(select).getElementType().isF16();
    if (!negInf && (f16 || !(*value <= -1e30)))
      return nearMiss(Twine("expected the fill of 'tx.where' on ") +
                      (f16 ? "f16 scores to be -inf"
                           : "the scores to be -inf or at most -1e30") +
                      " (exp flushes it to exactly 0), but got " +
                      formatNumber(*value));
    ElementsAttr condition = constantMaskValue(select.getCondition());
    const ConditionMask *read =
        condition ? &masks.condition(condition, keepWhen) : nullptr;
    if (!read || !read->additive)
      return nearMiss("expected a constant condition in 'tx.where' on the "
                      "scores, but it is computed at run time");
    // A row without a kept key sees only the fill: softmax makes it uniform
    // (finite fill) or NaN (-inf), where tx.attention gives zeros. Only
    // Where(IsNaN(p), 0, p) after it makes the -inf case agree.
    bool nanGuard = !tail.empty() && isa<IsNaNOp>(tail.front());
    if (read->emptyRow && !(negInf && nanGuard))
      return nearMiss(Twine("expected the condition of 'tx.where' to keep a "
                            "key in every query row, but a row keeps none (the "
                            "softmax gives it ") +
                      (negInf ? "NaN" : "uniform probabilities") +
                      ", tx.attention zeros)");
    // With a mask added after the Where, a finite fill stays finite at the
    // keys the condition masks: a row the added mask hides completely then
    // spreads its probabilities over them, which no tx.attention mask gives.
    bool added = mask || match.causal;
    if (added && !negInf)
      return nearMiss("expected a fill of -inf in 'tx.where' when a mask is "
                      "added after it, but got " + formatNumber(*value));
    MaskKind kind = masks.classify(read->additive, tq, tk);
    switch (kind.kind) {
    case MaskKind::Zero:
      break; // the condition keeps every score
    case MaskKind::Causal:
      // A key must pass both triangles (the added mask's, made `causal` by
      // matchMask, and this one): the narrower window.
      if (!match.causal || !match.window)
        match.window = kind.window;
      else if (kind.window)
        match.window = std::min(*match.window, *kind.window);
      match.causal = true;
      break;
    case MaskKind::Other:
      // tx.attention takes one mask: the sum of two would be a new op, and
      // a causal triangle on top could leave a row with no key.
      if (added)
        return nearMiss("expected a causal condition in 'tx.where' when a "
                        "mask is added after it too, but got another pattern");
      match.maskConstant = read->additive;
      break;
    }
    return true;
  }

  /// No intermediate may escape: the fused op exposes none of them.
  bool checkContained() {
    llvm::append_range(ops, qOps);
    llvm::append_range(ops, kOps);
    ops.push_back(qk);
    llvm::append_range(ops, llvm::reverse(scaleOps));
    if (select)
      ops.push_back(select);
    llvm::append_range(ops, head);
    ops.push_back(softmax);
    llvm::append_range(ops, tail);
    ops.push_back(pv);
    llvm::SmallPtrSet<Operation *, 16> inChain(ops.begin(), ops.end());
    for (Operation *op : ops) {
      if (op->getBlock() != pv->getBlock())
        return nearMiss("expected the attention in one block");
      if (op == pv.getOperation())
        continue;
      if (Operation *outside = findUserOutside(op, inChain))
        return nearMiss("intermediate '" + op->getName().getStringRef() +
                        "' has a user outside the attention ('" +
                        outside->getName().getStringRef() + "')");
    }
    return true;
  }

  SoftmaxOp softmax;
  AttentionMatch match;
  SmallVector<Operation *> tail; // the row guard after the softmax
  Value guardedMask;             // the mask ONNX's row guard reads
  MatMulOp pv;
  SmallVector<Operation *> head; // the mask's add
  Value mask;
  WhereOp select;       // the Where on the scores
  Value fill;           // what it puts at the masked keys
  bool keepWhen = true; // the condition value that keeps a score
  double scale = 1.0;
  SmallVector<Operation *> scaleOps, qOps, kOps;
  MatMulOp qk;
  RankedTensorType type; // the scores'
  Value q;
  int64_t tq = 0, tk = 0;
  Type element;
  std::optional<HeadsRef> k, v;
  SmallVector<Operation *> ops;
  MaskCache &masks;
};

AttentionMatch matchAttention(SoftmaxOp softmax, MaskCache &masks) {
  return AttentionMatcher(softmax, masks).run();
}

void rewrite(AttentionMatch &match, RewriterBase &rewriter) {
  SmallVector<Location> locs = llvm::map_to_vector(
      match.ops, [](Operation *op) { return op->getLoc(); });
  Location loc = rewriter.getFusedLoc(locs);
  rewriter.setInsertionPoint(match.root);
  Value k = match.k.materialize(rewriter, loc);
  Value v = match.v.materialize(rewriter, loc);
  Value mask = match.mask;
  if (match.maskConstant)
    mask = ConstantOp::create(rewriter, loc, match.maskConstant);
  DropoutOp dropout = match.dropout;
  auto fused = AttentionOp::create(
      rewriter, loc, match.q, k, v, mask, dropout ? dropout.getKey() : Value(),
      rewriter.getF64FloatAttr(match.scale),
      match.causal ? rewriter.getUnitAttr() : nullptr,
      match.window ? rewriter.getI64IntegerAttr(*match.window) : nullptr,
      dropout ? dropout.getRatioAttr() : nullptr,
      dropout ? dropout.getSeedAttr() : rewriter.getI64IntegerAttr(0));
  rewriter.replaceOp(match.root, fused.getResult());
  for (Operation *op : llvm::reverse(match.ops))
    if (op != match.root && op->use_empty())
      rewriter.eraseOp(op);
}

/// For a GPU step: cuDNN's fused SDPA (what tx.attention lowers to there)
/// takes head dims that are multiples of 8 and at most 256, and a sliding
/// window only without dropout. Attention it cannot run stays in primitive
/// ops, as a near miss that says why. (Dropout itself fuses: cuDNN draws
/// the mask, a different one from the executor's; docs/GPU.md.)
void checkCudnnLimits(AttentionMatch &match) {
  if (match.dropout && match.window) {
    match.status = AttentionMatch::NearMiss;
    match.reason = "dropout with a sliding window: the GPU's fused attention "
                   "(cuDNN SDPA) takes a window only without dropout";
    return;
  }
  int64_t d = tensorType(match.q).getShape()[3], dv = match.v.shape[3];
  for (int64_t dim : {d, dv}) {
    if (isCudnnAttentionHeadDim(dim))
      continue;
    match.status = AttentionMatch::NearMiss;
    match.reason = "head dims " + std::to_string(d) + " (q, k) and " +
                   std::to_string(dv) +
                   " (v): the GPU's fused attention (cuDNN SDPA) needs "
                   "multiples of 8, at most 256";
    return;
  }
}

struct FuseAttentionPass : tx::impl::FuseAttentionPassBase<FuseAttentionPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    SmallVector<SoftmaxOp> softmaxes;
    func.walk([&](SoftmaxOp op) { softmaxes.push_back(op); });
    IRRewriter rewriter(&getContext());
    MaskCache masks;
    for (SoftmaxOp softmax : softmaxes) {
      AttentionMatch match = matchAttention(softmax, masks);
      if (match.status == AttentionMatch::Matched && cudnnLimits)
        checkCudnnLimits(match);
      if (match.status == AttentionMatch::Matched) {
        rewrite(match, rewriter);
        ++numAttention;
      } else if (match.status == AttentionMatch::NearMiss && explain) {
        reportNearMiss(softmax, "attention", match.reason);
      }
    }
  }
};

} // namespace
