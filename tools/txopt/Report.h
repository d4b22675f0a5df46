//===- Report.h - txopt's JSON report and terminal summary ------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// What `--report` writes and what txopt prints after compiling a model.
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_TOOLS_TXOPT_REPORT_H
#define TXOPT_TOOLS_TXOPT_REPORT_H

#include "mlir/IR/BuiltinOps.h"
#include "txopt/Import/ONNX/ONNXImporter.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <string>

namespace txopt_cli {

/// Everything the report and the summary say about one compilation.
struct CompileSummary {
  std::string model;
  std::string output;
  std::string emit;
  mlir::txopt::ONNXImportInfo import;
  std::map<std::string, int64_t> txOps; ///< op name -> count in the output
  double seconds = 0.0;
};

/// Counts the ops of |module| by name (func.func and the module excluded).
std::map<std::string, int64_t> countOps(mlir::ModuleOp module);

/// The `--report` JSON object.
llvm::json::Object buildReport(const CompileSummary &summary);

/// A one-screen human summary; |verbose| lists every op kind.
void printSummary(const CompileSummary &summary, bool verbose,
                  llvm::raw_ostream &os);

} // namespace txopt_cli

#endif // TXOPT_TOOLS_TXOPT_REPORT_H
