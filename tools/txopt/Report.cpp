//===- Report.cpp - txopt's JSON report and terminal summary --------------===//
//
// SPDX-License-Identifier: Apache-2.0
// Builds the `--report` JSON and the summary printed after compilation.
//
//===----------------------------------------------------------------------===//

#include "Report.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "txopt/Dialect/Tx/IR/TxOps.h"
#include "txopt/Dialect/Tx/Transforms/Passes.h"
#include "txopt/Dialect/Tx/Transforms/PatternUtils.h"
#include "txopt/Dialect/Tx/Transforms/TrainStep.h"
#include "llvm/Support/Format.h"

#include <algorithm>
#include <vector>

using namespace txopt_cli;

std::map<std::string, int64_t> txopt_cli::countOps(mlir::ModuleOp module) {
  std::map<std::string, int64_t> counts;
  module.walk([&](mlir::Operation *op) {
    if (mlir::isa<mlir::ModuleOp, mlir::func::FuncOp, mlir::func::ReturnOp>(op))
      return;
    ++counts[op->getName().getStringRef().str()];
  });
  return counts;
}

std::map<std::string, int64_t> txopt_cli::countFused(mlir::ModuleOp module) {
  namespace tx = mlir::txopt::tx;
  std::map<std::string, int64_t> fused = {
      {"layer_norm", 0},     {"rms_norm", 0},       {"layer_norm_grad", 0},
      {"rms_norm_grad", 0},  {"optimizer_params", 0}, {"optimizer_ops", 0},
      {"attention", 0},      {"attention_grad", 0}};
  module.walk([&](mlir::Operation *op) {
    if (mlir::isa<tx::LayerNormOp>(op))
      ++fused["layer_norm"];
    else if (mlir::isa<tx::RMSNormOp>(op))
      ++fused["rms_norm"];
    else if (mlir::isa<tx::LayerNormGradOp>(op))
      ++fused["layer_norm_grad"];
    else if (mlir::isa<tx::RMSNormGradOp>(op))
      ++fused["rms_norm_grad"];
    else if (mlir::isa<tx::AttentionOp>(op))
      ++fused["attention"];
    else if (mlir::isa<tx::AttentionGradOp>(op))
      ++fused["attention_grad"];
    // FP8 attention replaces a fused attention (tx-insert-fp8): still fused.
    else if (mlir::isa<tx::FP8AttentionOp>(op))
      ++fused["attention"];
    else if (mlir::isa<tx::FP8AttentionGradOp>(op))
      ++fused["attention_grad"];
    else if (auto adam = mlir::dyn_cast<tx::AdamOp>(op)) {
      ++fused["optimizer_ops"];
      fused["optimizer_params"] += adam.getParams().size();
    } else if (auto sgd = mlir::dyn_cast<tx::SGDOp>(op)) {
      ++fused["optimizer_ops"];
      fused["optimizer_params"] += sgd.getParams().size();
    }
  });
  return fused;
}

/// The ONNX node name behind |loc|: the innermost name of a NameLoc, the
/// first named part of a FusedLoc, else the printed location.
static std::string nodeName(mlir::Location loc) {
  if (auto name = mlir::dyn_cast<mlir::NameLoc>(loc))
    return name.getName().str();
  if (auto fused = mlir::dyn_cast<mlir::FusedLoc>(loc))
    for (mlir::Location part : fused.getLocations())
      if (mlir::isa<mlir::NameLoc>(part))
        return nodeName(part);
  std::string text;
  llvm::raw_string_ostream os(text);
  os << loc;
  return text;
}

std::optional<NearMiss> txopt_cli::parseNearMiss(mlir::Location loc,
                                                 llvm::StringRef text) {
  if (!text.consume_front(mlir::txopt::tx::kNearMissPrefix))
    return std::nullopt;
  auto [pattern, reason] = text.split(": ");
  if (pattern.empty() || reason.empty())
    return std::nullopt;
  return NearMiss{pattern.str(), nodeName(loc), reason.str()};
}

std::optional<TrainSummary>
txopt_cli::describeTrainStep(mlir::ModuleOp module) {
  using namespace mlir;
  for (auto func : module.getOps<func::FuncOp>()) {
    auto recipe = func->getAttrOfType<DictionaryAttr>(
        txopt::tx::kTrainStepAttrName);
    if (!recipe)
      continue;
    TrainSummary train;
    train.function = func.getName().str();
    for (NamedAttribute entry : recipe) {
      Attribute value = entry.getValue();
      if (auto text = dyn_cast<StringAttr>(value))
        train.recipe[entry.getName().str()] = text.str();
      else if (auto number = dyn_cast<FloatAttr>(value))
        train.recipe[entry.getName().str()] = number.getValueAsDouble();
    }
    double recipeDecay = 0;
    if (auto decay = recipe.getAs<FloatAttr>("weight_decay"))
      recipeDecay = decay.getValueAsDouble();
    if (auto name = recipe.getAs<StringAttr>("optimizer"))
      train.optimizer = name.str();
    if (auto loss = recipe.getAs<StringAttr>("loss"))
      train.loss = loss.str();
    if (auto accum = recipe.getAs<IntegerAttr>("grad_accum"))
      train.gradAccum = accum.getInt();
    if (auto ranks = recipe.getAs<IntegerAttr>("data_parallel"))
      train.ranks = ranks.getInt();
    auto argName = [&](Value value) -> std::string {
      if (auto arg = dyn_cast<BlockArgument>(value))
        if (auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                          mlir::txopt::tx::kNameAttrName))
          return name.str();
      return "?";
    };
    for (unsigned i = 0; i < func.getNumArguments(); ++i) {
      auto role = func.getArgAttrOfType<StringAttr>(i, txopt::tx::kRoleAttrName);
      if (!role)
        continue;
      if (role.getValue() == "param") {
        ++train.trainableParams;
        train.trainableElements +=
            cast<RankedTensorType>(func.getArgument(i).getType()).getNumElements();
      } else if ((role.getValue() == "data" || role.getValue() == "labels") &&
                 train.microBatch.empty()) {
        auto type = cast<RankedTensorType>(func.getArgument(i).getType());
        train.microBatch.assign(type.getShape().begin(), type.getShape().end());
      } else if (!llvm::is_contained(
                     llvm::ArrayRef<llvm::StringRef>{"step", "lr", "rng", "data",
                                                     "labels", "grad_acc",
                                                     "loss_acc"},
                     role.getValue())) {
        ++train.stateTensors;
      }
    }
    func.walk([&](Operation *op) {
      if (auto load = dyn_cast<txopt::tx::LoadParameterOp>(op))
        train.frozen.push_back(load.getName().str());
      // Parameters exempt from a non-zero decay (with no decay at all,
      // nothing is exempt).
      auto noDecayGroup = [&](ValueRange params, APFloat decay) {
        if (decay.isZero() && recipeDecay > 0)
          for (Value param : params)
            train.noDecay.push_back(argName(param));
      };
      if (auto adam = dyn_cast<txopt::tx::AdamOp>(op))
        noDecayGroup(adam.getParams(), adam.getWeightDecay());
      if (auto sgd = dyn_cast<txopt::tx::SGDOp>(op))
        noDecayGroup(sgd.getParams(), sgd.getWeightDecay());
    });
    train.effectiveBatch = train.microBatch;
    if (!train.effectiveBatch.empty())
      train.effectiveBatch[0] *= train.gradAccum * train.ranks;
    llvm::sort(train.frozen);
    train.frozen.erase(std::unique(train.frozen.begin(), train.frozen.end()),
                       train.frozen.end());
    if (auto untied = module->getAttrOfType<DictionaryAttr>(
            txopt::tx::kUntiedParametersAttrName))
      for (NamedAttribute entry : untied) {
        std::vector<std::string> copies;
        for (Attribute copy : cast<ArrayAttr>(entry.getValue()))
          copies.push_back(cast<StringAttr>(copy).str());
        train.untied.emplace_back(entry.getName().str(), std::move(copies));
      }
    if (auto tied = module->getAttrOfType<DictionaryAttr>(
            txopt::tx::kTiedParametersAttrName))
      for (NamedAttribute entry : tied)
        train.tied.emplace_back(entry.getName().str(),
                                cast<StringAttr>(entry.getValue()).str());
    return train;
  }
  return std::nullopt;
}

PrecisionSummary txopt_cli::describePrecision(mlir::ModuleOp module,
                                              const std::string &mode) {
  PrecisionSummary precision;
  precision.mode = mode;
  module.walk([&](mlir::Operation *op) {
    // The GEMMs as the step has them, or in normal form (tx.blas_gemm) once
    // the GPU lowering rewrote them.
    auto normal = mlir::dyn_cast<mlir::txopt::tx::BlasGemmOp>(op);
    auto fp8 = mlir::dyn_cast<mlir::txopt::tx::FP8MatmulOp>(op);
    if (fp8 || (normal && normal.isFP8()))
      ++precision.fp8Gemms;
    if ((fp8 && fp8.getFastAccumulation()) || (normal && normal.getFastAccumulation()))
      ++precision.fp8FastAccumulationGemms;
    precision.fp8Attention += mlir::isa<mlir::txopt::tx::FP8AttentionOp>(op);
    precision.fp8AttentionGrads += mlir::isa<mlir::txopt::tx::FP8AttentionGradOp>(op);
    if (mlir::isa<mlir::txopt::tx::AttentionOp, mlir::txopt::tx::AttentionGradOp>(op)) {
      mlir::Type q = mlir::cast<mlir::RankedTensorType>(op->getOperand(0).getType())
                         .getElementType();
      if (q.isBF16() || q.isF16())
        ++(mlir::isa<mlir::txopt::tx::AttentionOp>(op) ? precision.lowPrecisionAttention
                                                       : precision.lowPrecisionAttentionGrads);
      return;
    }
    if (!mlir::isa<mlir::txopt::tx::MatMulOp, mlir::txopt::tx::GemmOp>(op) &&
        !(normal && !normal.isFP8()))
      return;
    auto type = mlir::cast<mlir::RankedTensorType>(op->getResult(0).getType());
    if (type.getElementType().isF32())
      ++precision.f32Gemms;
    else if (type.getElementType().isBF16() || type.getElementType().isF16())
      ++precision.lowPrecisionGemms;
  });
  for (auto func : module.getOps<mlir::func::FuncOp>())
    if (auto recipe = func->getAttrOfType<mlir::DictionaryAttr>(
            mlir::txopt::tx::kTrainStepAttrName)) {
      precision.lossScaling = recipe.contains("loss_scale");
      if (mlir::Attribute fp8 = recipe.get("fp8")) {
        llvm::raw_string_ostream os(precision.fp8Recipe);
        fp8.print(os);
      }
      for (unsigned i = 0; i < func.getNumArguments(); ++i)
        if (auto role = func.getArgAttrOfType<mlir::StringAttr>(
                i, mlir::txopt::tx::kRoleAttrName)) {
          // The cached weights' codes and amax (tx-cache-fp8-weights) are
          // counted as weights, not as scaling state.
          if (role.getValue() == "fp8_weight_amax")
            ++precision.fp8CachedWeights;
          else if (role.getValue() != "fp8_weight_codes")
            precision.fp8StateTensors += role.getValue().starts_with("fp8_");
          if (role.getValue() == "fp8_scale")
            precision.fp8CastSites += mlir::cast<mlir::RankedTensorType>(
                                          func.getArgumentTypes()[i])
                                          .getNumElements();
        }
    }
  return precision;
}

static llvm::json::Object toJson(const std::map<std::string, int64_t> &counts) {
  llvm::json::Object object;
  for (const auto &[name, count] : counts)
    object[name] = count;
  return object;
}

static int64_t total(const std::map<std::string, int64_t> &counts) {
  int64_t sum = 0;
  for (const auto &entry : counts)
    sum += entry.second;
  return sum;
}

llvm::json::Object txopt_cli::buildReport(const CompileSummary &summary) {
  llvm::json::Array warnings;
  for (const std::string &warning : summary.import.warnings)
    warnings.push_back(warning);
  llvm::json::Array notFused;
  for (const NearMiss &miss : summary.notFused)
    notFused.push_back(llvm::json::Object{
        {"pattern", miss.pattern}, {"node", miss.node}, {"reason", miss.reason}});
  llvm::json::Array fusionsRun;
  for (const std::string &name : summary.fusionsRun)
    fusionsRun.push_back(name);
  llvm::json::Array paddedLosses;
  for (auto [classes, padded] : summary.paddedLossClasses)
    paddedLosses.push_back(llvm::json::Object{{"classes", classes}, {"padded", padded}});
  llvm::json::Object report{
      {"model", summary.model},
      {"output", summary.output},
      {"emit", summary.emit},
      {"producer", summary.import.producer},
      {"opset", summary.import.opset},
      {"ops_in", toJson(summary.import.opsIn)},
      {"nodes_in", total(summary.import.opsIn)},
      {"tx_ops", toJson(summary.txOps)},
      {"parameters", summary.import.numParameters},
      {"parameter_elements", summary.import.numParameterElements},
      {"parameters_by_reference", summary.import.numSourcedParameters},
      {"parameter_bytes_by_reference", summary.import.numSourcedBytes},
      {"fusions_run", std::move(fusionsRun)},
      {"padded_loss_classes", std::move(paddedLosses)},
      {"fused", toJson(summary.fused)},
      {"not_fused", std::move(notFused)},
      {"warnings", std::move(warnings)},
      {"seconds", summary.seconds},
  };
  if (!summary.gpu.empty()) {
    report["launches"] = summary.gpuLaunches;
    report["memory"] = llvm::json::Object{
        {"arena_bytes", summary.gpuArenaBytes},
        {"attention_score_bytes_avoided", summary.gpuAttentionBytesAvoided},
        {"rematerialized_bytes", summary.gpuRematerializedBytes}};
    report["attention_calls"] = summary.gpuAttentionCalls;
    report["attention_calls_fp8"] = summary.gpuFP8AttentionCalls;
    report["gemm_bias_epilogues"] = summary.gpuBiasEpilogues;
    report["gemm_gelu_epilogues"] = summary.gpuGeluEpilogues;
    report["model_flops"] = summary.gpuModelFlops;
    report["gpu"] = summary.gpu;
    if (!summary.gpuRankVariants.empty()) {
      llvm::json::Array variants;
      for (const CompileSummary::RankVariant &v : summary.gpuRankVariants)
        variants.push_back(llvm::json::Object{{"ranks", v.ranks},
                                              {"arena_bytes", v.arenaBytes},
                                              {"launches", v.launches}});
      report["rank_variants"] = std::move(variants);
    }
  }
  {
    const PrecisionSummary &p = summary.precision;
    std::string low = p.mode == "fp32" ? "f32"
                      : p.mode == "fp8"  ? "fp8 where eligible, else bf16"
                                         : p.mode;
    report["precision"] = llvm::json::Object{
        {"mode", p.mode},
        {"policy",
         llvm::json::Object{{"tx.matmul", low},
                            {"tx.gemm", p.mode == "fp8" ? "bf16" : low},
                            {"tx.attention", p.mode != "fp8" ? low : p.fp8Attention ? "fp8 where eligible, else bf16" : "bf16"},
                            {"reductions, softmax, norms and statistics", "f32"},
                            {"loss", "f32"},
                            {"optimizer and master weights", "f32"}}},
        {"low_precision_gemms", p.lowPrecisionGemms},
        {"f32_gemms", p.f32Gemms},
        {"low_precision_attention", p.lowPrecisionAttention},
        {"low_precision_attention_grads", p.lowPrecisionAttentionGrads},
        {"loss_scaling", p.lossScaling},
    };
    if (p.mode == "fp8")
      report["fp8"] = llvm::json::Object{
          {"recipe", p.fp8Recipe},
          {"fp8_gemms", p.fp8Gemms},
          {"fast_accumulation_gemms", p.fp8FastAccumulationGemms},
          {"bf16_gemms", p.lowPrecisionGemms},
          {"state_tensors", p.fp8StateTensors},
          {"cast_sites", p.fp8CastSites},
          {"cached_weights", p.fp8CachedWeights},
          {"fp8_attention", p.fp8Attention},
          {"fp8_attention_grads", p.fp8AttentionGrads},
      };
  }
  if (summary.train) {
    const TrainSummary &train = *summary.train;
    llvm::json::Array frozen, noDecay;
    for (const std::string &name : train.frozen)
      frozen.push_back(name);
    for (const std::string &name : train.noDecay)
      noDecay.push_back(name);
    report["train"] = llvm::json::Object{
        {"function", train.function},
        {"optimizer", train.optimizer},
        {"loss", train.loss},
        {"recipe", llvm::json::Object(train.recipe)},
        {"trainable_params", train.trainableParams},
        {"trainable_elements", train.trainableElements},
        {"state_tensors", train.stateTensors},
        {"frozen", std::move(frozen)},
        {"no_decay", std::move(noDecay)},
    };
    llvm::json::Array untied, tied;
    for (const auto &[name, copies] : train.untied)
      untied.push_back(llvm::json::Object{
          {"parameter", name}, {"copies", llvm::json::Array(copies)}});
    for (const auto &[name, reason] : train.tied)
      tied.push_back(llvm::json::Object{{"parameter", name}, {"reason", reason}});
    report.getObject("train")->insert({"untied", std::move(untied)});
    report.getObject("train")->insert({"tied", std::move(tied)});
    if (train.gradAccum > 1 || train.ranks > 1) {
      llvm::json::Object &object = *report.getObject("train");
      // The batch argument's shape: one micro-batch of one rank.
      if (train.gradAccum > 1) {
        object["grad_accum"] = train.gradAccum;
        object["micro_batch"] = llvm::json::Array(train.microBatch);
      }
      if (train.ranks > 1) {
        object["data_parallel"] = train.ranks;
        object["batch_per_rank"] = llvm::json::Array(train.microBatch);
      }
      object["effective_batch"] = llvm::json::Array(train.effectiveBatch);
    }
  }
  if (!summary.weightsCheckpoint.empty())
    report["weights_checkpoint"] = llvm::json::Object{
        {"dir", summary.weightsCheckpoint}, {"parameters", summary.weightsLoaded}};
  return report;
}

/// "matmul 13, add 19, ..." for the |limit| most frequent ops.
static std::string topOps(const std::map<std::string, int64_t> &counts,
                          size_t limit) {
  std::vector<std::pair<std::string, int64_t>> sorted(counts.begin(),
                                                      counts.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto &a, const auto &b) { return a.second > b.second; });
  std::string text;
  for (size_t i = 0; i < sorted.size() && i < limit; ++i) {
    if (i)
      text += ", ";
    text += sorted[i].first + " " + std::to_string(sorted[i].second);
  }
  if (sorted.size() > limit)
    text += ", ...";
  return text;
}

void txopt_cli::printSummary(const CompileSummary &summary, bool verbose,
                             llvm::raw_ostream &os) {
  const auto &info = summary.import;
  os << "txopt: " << summary.model << " (opset " << info.opset;
  if (!info.producer.empty())
    os << ", " << info.producer;
  os << ")\n";
  os << "  imported   " << total(info.opsIn) << " ONNX nodes -> "
     << total(summary.txOps) << " ops, " << info.numParameters
     << " parameters ("
     << llvm::format("%.2f", info.numParameterElements / 1.0e6)
     << " M elements)\n";
  if (!summary.weightsCheckpoint.empty())
    os << "  weights    " << summary.weightsLoaded << " parameters from the checkpoint in '"
       << summary.weightsCheckpoint << "'\n";
  if (info.numSourcedParameters > 0)
    os << "  weights    " << info.numSourcedParameters
       << " parameters by reference ("
       << llvm::format("%.1f", info.numSourcedBytes / 1.0e6)
       << " MB left in external data, not read)\n";
  size_t limit = verbose ? SIZE_MAX : 8;
  os << "  ONNX ops   " << topOps(info.opsIn, limit) << "\n";
  os << "  tx ops     " << topOps(summary.txOps, limit) << "\n";
  if (!summary.fusionsRun.empty()) {
    const auto &f = summary.fused;
    auto count = [&](const char *key) {
      auto it = f.find(key);
      return it == f.end() ? int64_t{0} : it->second;
    };
    os << "  fused      " << count("layer_norm") << " layer_norm, "
       << count("rms_norm") << " rms_norm, " << count("layer_norm_grad")
       << " layer_norm_grad, " << count("rms_norm_grad") << " rms_norm_grad, ";
    // Under --train the optimizer is built, not found in the graph: the
    // train line counts it.
    if (!summary.train)
      os << count("optimizer_params") << " params in " << count("optimizer_ops")
         << " optimizer op(s), ";
    os << count("attention") << " attention, " << count("attention_grad")
       << " attention_grad\n";
    // A GEMM kept out of FP8 is a precision decision, reported on the
    // precision line and as a warning, not a fusion near miss (the JSON
    // report keeps every near miss).
    std::vector<const NearMiss *> misses;
    for (const NearMiss &miss : summary.notFused)
      if (miss.pattern != "fp8")
        misses.push_back(&miss);
    os << "  not fused  " << misses.size() << " near-miss(es)";
    if (!misses.empty() && !verbose)
      os << " (-v or --report lists them)";
    os << "\n";
    if (verbose)
      for (const NearMiss *miss : misses)
        os << "    - " << miss->pattern << " at '" << miss->node
           << "': " << miss->reason << "\n";
  } else if (summary.emit == "fused") {
    os << "  fused      nothing (--no-fuse=all)\n";
  }
  for (auto [classes, padded] : summary.paddedLossClasses)
    os << "  padded     the loss's " << classes << " classes to " << padded
       << " (16-byte rows of logits for the GEMMs; the padded classes' "
          "probabilities are 0)\n";
  if (summary.train) {
    const TrainSummary &train = *summary.train;
    auto ops = summary.fused.find("optimizer_ops");
    os << "  train      @" << train.function << ": " << train.optimizer
       << " over " << train.trainableParams << " params ("
       << llvm::format("%.2f", train.trainableElements / 1.0e6) << " M elements) in "
       << (ops == summary.fused.end() ? int64_t{0} : ops->second)
       << " multi-tensor op(s), " << train.noDecay.size() << " without decay, "
       << train.frozen.size() << " frozen, loss " << train.loss << "\n";
    if (!train.untied.empty()) {
      size_t copies = 0;
      std::string names;
      for (const auto &[name, list] : train.untied) {
        copies += list.size() + 1;
        if (names.size() < 160)
          names += (names.empty() ? "'" : ", '") + name + "' (" +
                   std::to_string(list.size() + 1) + " nodes)";
        else if (!llvm::StringRef(names).ends_with("..."))
          names += ", ...";
      }
      os << "  untied     " << train.untied.size()
         << " shared parameter(s) into " << copies
         << ", one per node that reads it: " << names
         << "; --tie=REGEX keeps them tied\n";
    }
    for (const auto &[name, reason] : train.tied)
      os << "  kept tied  '" << name << "': " << reason
         << "; --untie=REGEX unties it\n";
    if (train.gradAccum > 1 || train.ranks > 1) {
      auto dims = [](const std::vector<int64_t> &shape) {
        std::string text;
        for (int64_t d : shape)
          text += (text.empty() ? "" : "x") + std::to_string(d);
        return text;
      };
      if (train.gradAccum > 1)
        os << "  accumulate " << train.gradAccum << " micro-batches of "
           << dims(train.microBatch) << " per step (@micro_step)";
      else
        os << "  batch      " << dims(train.microBatch) << " per rank";
      if (train.ranks > 1)
        os << (train.gradAccum > 1 ? " on each of " : " on ") << train.ranks << " ranks";
      os << ": effective batch " << dims(train.effectiveBatch) << "\n";
    }
  }
  if (summary.precision.mode != "fp32") {
    const PrecisionSummary &p = summary.precision;
    os << "  precision  " << p.mode << ": ";
    if (p.mode == "fp8")
      os << p.fp8Gemms << " GEMMs in fp8 (" << p.fp8FastAccumulationGemms
         << " with fast accumulation; " << p.fp8CastSites << " cast tensors' scaling state in "
         << p.fp8StateTensors << " tensors, " << p.fp8CachedWeights
         << " weights' codes cached), " << p.lowPrecisionGemms
         << " in bf16 (see warnings), ";
    else
      os << p.lowPrecisionGemms << " GEMMs in " << p.mode << ", ";
    os << p.f32Gemms << " in f32; ";
    if (p.lowPrecisionAttention || p.lowPrecisionAttentionGrads)
      os << p.lowPrecisionAttention << " attention and " << p.lowPrecisionAttentionGrads
         << " attention gradient(s) in " << (p.mode == "fp8" ? "bf16" : p.mode) << "; ";
    if (p.fp8Attention || p.fp8AttentionGrads)
      os << p.fp8Attention << " attention and " << p.fp8AttentionGrads
         << " attention gradient(s) in fp8; ";
    os << "everything else f32" << (p.lossScaling ? "; dynamic loss scaling" : "") << "\n";
  }
  if (info.warnings.empty()) {
    os << "  warnings   none\n";
  } else {
    // The warnings themselves follow on stderr (txopt.cpp).
    os << "  warnings   " << info.warnings.size() << " (txopt: warning: lines on stderr)\n";
  }
  if (!summary.gpu.empty())
    os << "  gpu        " << summary.gpu << "\n";
  os << "  wrote      " << (summary.output == "-" ? "<stdout>" : summary.output)
     << " (" << summary.emit << ", "
     << llvm::format("%.2f", summary.seconds) << " s)\n";
}
