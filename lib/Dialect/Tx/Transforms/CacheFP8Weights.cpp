//===- CacheFP8Weights.cpp - tx-cache-fp8-weights: FP8 weight codes as state ===//
//
// SPDX-License-Identifier: Apache-2.0
// Under delayed scaling a weight's FP8 codes are a function of the weight
// and of a scale that is known one step ahead. This pass keeps them (and
// the weight's amax) as step state: the step casts the weights it has just
// updated with the scale it has just derived, for the next step, and a
// state-init function gives the first step its codes. The forward then
// reads codes instead of casting f32 master weights, and a backend can
// write the codes in the optimizer's kernel, which reads and writes the
// weights anyway (Transformer Engine caches FP8 weights the same way).
//
//===----------------------------------------------------------------------===//

#include "txopt/Dialect/Tx/IR/TxOps.h"
#include "txopt/Dialect/Tx/Transforms/Passes.h"
#include "txopt/Dialect/Tx/Transforms/TrainStep.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::txopt::tx {
#define GEN_PASS_DEF_CACHEFP8WEIGHTSPASS
#include "txopt/Dialect/Tx/Transforms/Passes.h.inc"
} // namespace mlir::txopt::tx

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::tx;

namespace {

/// One weight cast the pass can cache: `quantize(chain(param), scale)`,
/// its scale site |index| of the packed scale state, whose amax is row
/// |index| of that state's `tx.fp8_scale_update`.
struct CachedCast {
  BlockArgument param;    // the f32 master weight
  CastOp chain;           // its cast to the GEMMs' type, or null
  QuantizeOp quantize;
  AmaxOp amax;
  FP8ScaleUpdateOp update;
  int64_t index = 0;      // the site's row in the packed state
  OpOperand *amaxRow = nullptr; // where the update's amaxes take the site's
  Value nextParam;        // the step's next value of |param|
  bool needsPlain = false, needsTransposed = false;
  // What the step's cast was, for casting again once its ops are gone.
  Type castType;          // null: no cast
  RankedTensorType codesType;
  Location castLoc, quantizeLoc, amaxLoc;
};

StringRef roleOf(func::FuncOp func, unsigned arg) {
  auto role = func.getArgAttrOfType<StringAttr>(arg, kRoleAttrName);
  return role ? role.getValue() : StringRef();
}

/// The cast of |quantize| when it is a cast this pass can cache; otherwise
/// the reason a weight's cast is not (for the remark), or none when
/// |quantize| casts no weight at all (an activation or a gradient).
FailureOr<CachedCast> matchWeightCast(func::FuncOp func, QuantizeOp quantize,
                                      ArrayRef<Value> nextOf,
                                      std::string &reason) {
  Location loc = quantize.getLoc();
  CachedCast c{.castLoc = loc, .quantizeLoc = loc, .amaxLoc = loc};
  c.quantize = quantize;
  c.codesType = cast<RankedTensorType>(quantize.getType());
  auto site = quantize.getScale().getDefiningOp<FP8SiteOp>();
  auto scale = site ? dyn_cast<BlockArgument>(site.getState()) : BlockArgument();
  if (!scale || roleOf(func, scale.getArgNumber()) != "fp8_scale")
    return failure(); // current scaling: a scale of this step's own amax
  c.index = static_cast<int64_t>(site.getIndex());
  Value input = quantize.getInput();
  if (auto castOp = input.getDefiningOp<CastOp>()) {
    c.chain = castOp;
    c.castType = castOp.getType();
    c.castLoc = castOp.getLoc();
    input = castOp.getInput();
  }
  if (input.getDefiningOp<LoadParameterOp>()) {
    reason = "the parameter is frozen (a constant of the step)";
    return failure();
  }
  auto param = dyn_cast<BlockArgument>(input);
  if (!param || roleOf(func, param.getArgNumber()) != "param")
    return failure();
  c.param = param;
  c.nextParam = nextOf[param.getArgNumber()];
  if (!c.nextParam) {
    reason = "the parameter is not updated (frozen)";
    return failure();
  }
  // The amax reaches the update as row |index| of its amaxes: reshaped to
  // one element and concatenated with the other sites' (tx-insert-fp8).
  for (Operation *user : quantize.getInput().getUsers()) {
    auto amax = dyn_cast<AmaxOp>(user);
    if (!amax || !amax->hasOneUse())
      continue;
    auto row = dyn_cast<ReshapeOp>(*amax->user_begin());
    if (!row || !row->hasOneUse())
      continue;
    OpOperand &rowUse = *row->use_begin();
    Operation *rows = rowUse.getOwner();
    auto concat = dyn_cast<ConcatOp>(rows);
    int64_t position = concat ? rowUse.getOperandNumber() : 0;
    if (concat && !concat->hasOneUse())
      continue;
    auto update = dyn_cast<FP8ScaleUpdateOp>(concat ? *concat->user_begin() : rows);
    if (update && update.getScale() == scale && position == c.index &&
        (concat ? update.getAmax() == concat.getResult() : update.getAmax() == row.getResult())) {
      c.amax = amax;
      c.amaxLoc = amax.getLoc();
      c.update = update;
      c.amaxRow = &row->getOpOperand(0);
    }
  }
  if (!c.update) {
    reason = "its amax does not go straight to its scale update (all-reduced "
             "across data-parallel ranks?)";
    return failure();
  }
  // The layouts its readers want: a GEMM's rhs is stored [N, K] (the FP8
  // GEMMs' TN form), every other reader (the dgrad through a transpose,
  // an lhs) reads the codes as they are.
  for (OpOperand &use : quantize->getUses()) {
    bool rhs = isa<FP8MatmulOp>(use.getOwner()) && use.getOperandNumber() == 1 &&
               cast<RankedTensorType>(quantize.getType()).getRank() == 2;
    (rhs ? c.needsTransposed : c.needsPlain) = true;
  }
  return c;
}

class WeightCacher {
public:
  WeightCacher(func::FuncOp step) : step(step), builder(step.getContext()) {}

  LogicalResult run(bool explain) {
    auto ret = cast<func::ReturnOp>(step.getBody().front().getTerminator());
    SmallVector<Value> nextOf(step.getNumArguments());
    for (unsigned r = 0; r < ret.getNumOperands(); ++r)
      if (auto next = step.getResultAttrOfType<IntegerAttr>(r, kNextAttrName))
        if (next.getInt() >= 0 && next.getInt() < step.getNumArguments())
          nextOf[next.getInt()] = ret.getOperand(r);
    SmallVector<QuantizeOp> quantizes;
    step.walk([&](QuantizeOp q) { quantizes.push_back(q); });
    for (QuantizeOp q : quantizes) {
      std::string reason;
      FailureOr<CachedCast> c = matchWeightCast(step, q, nextOf, reason);
      if (succeeded(c)) {
        casts.push_back(*c);
      } else if (explain && !reason.empty()) {
        q->emitRemark("not cached: fp8 weight: ") << reason;
      }
    }
    if (casts.empty())
      return success();
    for (CachedCast &c : casts)
      if (failed(cacheInStep(c)))
        return failure();
    finishStep(ret);
    return buildStateInit();
  }

private:
  /// The state arguments of one cached cast (null: not needed).
  struct Slot {
    CachedCast *cast;
    BlockArgument plain, transposed, amax;
  };

  RankedTensorType scalarType() {
    return RankedTensorType::get({}, builder.getF32Type());
  }

  /// A new state argument of the step (tx.init 0: the state-init function
  /// writes its first value).
  BlockArgument addState(Type type, const std::string &name, StringRef role) {
    unsigned index = step.getNumArguments();
    NamedAttrList attrs;
    attrs.append(kNameAttrName, builder.getStringAttr(name));
    attrs.append(kRoleAttrName, builder.getStringAttr(role));
    attrs.append(kInitAttrName, builder.getF32FloatAttr(0));
    if (failed(step.insertArgument(index, type, attrs.getDictionary(step.getContext()),
                                   step.getLoc())))
      return {};
    return step.getArgument(index);
  }

  /// The step's cast, amax and quantize of |param| (an argument of the
  /// function being built into), with |scale|, at the builder's point.
  struct Computed {
    Value plain, transposed, amax;
  };
  Computed castAgain(const CachedCast &c, Value param, Value scale) {
    Location loc = c.quantizeLoc;
    Value input = param;
    if (c.castType)
      input = CastOp::create(builder, c.castLoc, c.castType, param);
    Computed out;
    out.amax = AmaxOp::create(builder, c.amaxLoc, input);
    out.plain = QuantizeOp::create(builder, loc, c.codesType, input, scale);
    if (c.needsTransposed)
      out.transposed =
          TransposeOp::create(builder, loc, out.plain, builder.getDenseI64ArrayAttr({1, 0}));
    return out;
  }

  LogicalResult cacheInStep(CachedCast &c) {
    std::string base =
        step.getArgAttrOfType<StringAttr>(c.param.getArgNumber(), kNameAttrName)
            .getValue()
            .str();
    RankedTensorType codesType = c.codesType;
    Slot slot{&c, {}, {}, {}};
    if (c.needsPlain)
      slot.plain = addState(codesType, base + ".fp8_codes", "fp8_weight_codes");
    if (c.needsTransposed) {
      auto t = RankedTensorType::get({codesType.getDimSize(1), codesType.getDimSize(0)},
                                     codesType.getElementType());
      slot.transposed = addState(t, base + ".fp8_codes_t", "fp8_weight_codes");
    }
    slot.amax = addState(scalarType(), base + ".fp8_amax", "fp8_weight_amax");
    if ((c.needsPlain && !slot.plain) || (c.needsTransposed && !slot.transposed) ||
        !slot.amax)
      return emitError(step.getLoc(), "cannot add FP8 weight-cache state arguments");
    // Readers take the kept codes: an rhs the transposed copy, read back
    // through a transpose (which the GEMM takes as its TN flag).
    for (OpOperand &use : llvm::make_early_inc_range(c.quantize->getUses())) {
      Operation *user = use.getOwner();
      bool rhs = isa<FP8MatmulOp>(user) && use.getOperandNumber() == 1 &&
                 codesType.getRank() == 2;
      if (rhs) {
        builder.setInsertionPoint(user);
        use.set(TransposeOp::create(builder, c.quantizeLoc, slot.transposed,
                                    builder.getDenseI64ArrayAttr({1, 0})));
      } else {
        use.set(slot.plain);
      }
    }
    c.amaxRow->set(slot.amax);
    c.amax->erase();
    Operation *scaleSite = c.quantize.getScale().getDefiningOp();
    c.quantize->erase();
    if (scaleSite->use_empty())
      scaleSite->erase();
    if (c.chain && c.chain->use_empty())
      c.chain->erase();
    c.chain = {};
    c.amax = {};
    c.quantize = {};
    slots.push_back(slot);
    return success();
  }

  /// Appends |values| as results that become |s|'s state arguments
  /// (tx.name and tx.next), skipping a layout no reader wants.
  void carryInto(const Slot &s, const Computed &values, SmallVectorImpl<Value> &results,
                 SmallVectorImpl<DictionaryAttr> &attrs) {
    for (auto [v, arg] : {std::pair{values.plain, s.plain},
                          {values.transposed, s.transposed},
                          {values.amax, s.amax}}) {
      if (!arg)
        continue;
      results.push_back(v);
      attrs.push_back(builder.getDictionaryAttr(
          {builder.getNamedAttr(kNameAttrName,
                                step.getArgAttr(arg.getArgNumber(), kNameAttrName)),
           builder.getNamedAttr(kNextAttrName,
                                builder.getI64IntegerAttr(arg.getArgNumber()))}));
    }
  }

  /// The next values: the updated weights cast with the updated scales.
  void finishStep(func::ReturnOp ret) {
    builder.setInsertionPoint(ret);
    SmallVector<Value> results(ret.getOperands());
    SmallVector<DictionaryAttr> attrs;
    for (unsigned r = 0; r < ret.getNumOperands(); ++r)
      attrs.push_back(step.getResultAttrDict(r) ? step.getResultAttrDict(r)
                                                : builder.getDictionaryAttr({}));
    for (Slot &s : slots) {
      CachedCast &c = *s.cast;
      Value scale = FP8SiteOp::create(builder, c.quantizeLoc, scalarType(),
                                      c.update.getNewScale(), c.index);
      carryInto(s, castAgain(c, c.nextParam, scale), results, attrs);
    }
    func::ReturnOp::create(builder, ret.getLoc(), results);
    ret.erase();
    step.setFunctionType(FunctionType::get(step.getContext(),
                                           step.getBody().front().getArgumentTypes(),
                                           ValueRange(results).getTypes()));
    step.setAllResultAttrs(attrs);
    // @eval and @logits take the step's arguments: the cache too.
    appendStepArgumentsToCompanions(step);
  }

  /// `@<step>_state_init`: the step's arguments in, the first value of
  /// every cache state out (tx.next): the weights cast with the scales
  /// they hold. Run once before the first step (and harmless after a
  /// checkpoint is restored: it derives the same values the step keeps).
  LogicalResult buildStateInit() {
    ModuleOp module = step->getParentOfType<ModuleOp>();
    builder.setInsertionPointAfter(step);
    auto init = func::FuncOp::create(
        builder, step.getLoc(), (step.getName() + "_state_init").str(),
        FunctionType::get(step.getContext(), step.getArgumentTypes(), {}));
    // tx.shard_of stays on the step: it needs the step's recipe.
    for (unsigned i = 0; i < step.getNumArguments(); ++i)
      if (DictionaryAttr attrs = step.getArgAttrDict(i)) {
        NamedAttrList kept(attrs);
        kept.erase(kShardOfAttrName);
        init.setArgAttrs(i, kept.getDictionary(step.getContext()));
      }
    init->setAttr(kStateInitAttrName, FlatSymbolRefAttr::get(step));
    Block *entry = init.addEntryBlock();
    builder.setInsertionPointToEnd(entry);
    SmallVector<Value> results;
    SmallVector<DictionaryAttr> attrs;
    for (Slot &s : slots) {
      CachedCast &c = *s.cast;
      Value packed = entry->getArgument(
          cast<BlockArgument>(c.update.getScale()).getArgNumber());
      Value scale = FP8SiteOp::create(builder, c.quantizeLoc, scalarType(), packed, c.index);
      carryInto(s, castAgain(c, entry->getArgument(c.param.getArgNumber()), scale), results,
                attrs);
    }
    func::ReturnOp::create(builder, step.getLoc(), results);
    init.setFunctionType(FunctionType::get(step.getContext(), step.getArgumentTypes(),
                                           ValueRange(results).getTypes()));
    init.setAllResultAttrs(attrs);
    SymbolTable(module).insert(init);
    return success();
  }

  func::FuncOp step;
  OpBuilder builder;
  SmallVector<CachedCast> casts;
  SmallVector<Slot> slots;
};

struct CacheFP8WeightsPass : tx::impl::CacheFP8WeightsPassBase<CacheFP8WeightsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (auto func : llvm::to_vector(module.getOps<func::FuncOp>())) {
      if (!func->hasAttr(kTrainStepAttrName) || func.isExternal())
        continue;
      for (auto other : module.getOps<func::FuncOp>())
        if (auto ref = other->getAttrOfType<FlatSymbolRefAttr>(kStateInitAttrName))
          if (ref.getValue() == func.getName()) {
            emitError(func.getLoc(), "'") << func.getName()
                                          << "' already has a state-init function";
            return signalPassFailure();
          }
      if (failed(WeightCacher(func).run(explain)))
        return signalPassFailure();
    }
  }
};

} // namespace
