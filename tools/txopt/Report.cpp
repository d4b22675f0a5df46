//===- Report.cpp - txopt's JSON report and terminal summary --------------===//
//
// SPDX-License-Identifier: Apache-2.0
// Builds the `--report` JSON and the summary printed after compilation.
//
//===----------------------------------------------------------------------===//

#include "Report.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "txopt/Dialect/Tx/IR/TxOps.h"
#include "txopt/Dialect/Tx/Transforms/PatternUtils.h"
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
      {"rms_norm_grad", 0},  {"optimizer_params", 0}, {"optimizer_ops", 0}};
  module.walk([&](mlir::Operation *op) {
    if (mlir::isa<tx::LayerNormOp>(op))
      ++fused["layer_norm"];
    else if (mlir::isa<tx::RMSNormOp>(op))
      ++fused["rms_norm"];
    else if (mlir::isa<tx::LayerNormGradOp>(op))
      ++fused["layer_norm_grad"];
    else if (mlir::isa<tx::RMSNormGradOp>(op))
      ++fused["rms_norm_grad"];
    else if (auto adam = mlir::dyn_cast<tx::AdamOp>(op)) {
      ++fused["optimizer_ops"];
      fused["optimizer_params"] += adam.getParams().size();
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
  return llvm::json::Object{
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
      {"fusions_run", std::move(fusionsRun)},
      {"fused", toJson(summary.fused)},
      {"not_fused", std::move(notFused)},
      {"warnings", std::move(warnings)},
      {"seconds", summary.seconds},
  };
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
       << " layer_norm_grad, " << count("rms_norm_grad") << " rms_norm_grad, "
       << count("optimizer_params") << " params in " << count("optimizer_ops")
       << " optimizer op(s)\n";
    os << "  not fused  " << summary.notFused.size() << " near-miss(es)";
    if (!summary.notFused.empty() && !verbose)
      os << " (-v or --report lists them)";
    os << "\n";
    if (verbose)
      for (const NearMiss &miss : summary.notFused)
        os << "    - " << miss.pattern << " at '" << miss.node
           << "': " << miss.reason << "\n";
  } else if (summary.emit == "fused") {
    os << "  fused      nothing (--no-fuse=all)\n";
  }
  if (info.warnings.empty()) {
    os << "  warnings   none\n";
  } else {
    os << "  warnings   " << info.warnings.size() << "\n";
    size_t shown = verbose ? info.warnings.size() : std::min<size_t>(3, info.warnings.size());
    for (size_t i = 0; i < shown; ++i)
      os << "    - " << info.warnings[i] << "\n";
  }
  os << "  wrote      " << (summary.output == "-" ? "<stdout>" : summary.output)
     << " (" << summary.emit << ", "
     << llvm::format("%.2f", summary.seconds) << " s)\n";
}
