//===- Report.cpp - txopt's JSON report and terminal summary --------------===//
//
// SPDX-License-Identifier: Apache-2.0
// Builds the `--report` JSON and the summary printed after compilation.
//
//===----------------------------------------------------------------------===//

#include "Report.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
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
