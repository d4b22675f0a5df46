//===- Executor.h - CPU reference interpreter over tx IR --------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// The numerics oracle: interprets one func.func of tx ops, deterministically.
//
// Precision. Every op computes in double from its operands and rounds each
// result element once to the result's element type (f32 and f16/bf16 bit-
// exactly, round to nearest even; f64 unchanged; integers wrap to their
// width; i1 is 0/1). Inside one op nothing is rounded: reductions, matmul
// and gemm sums, softmax, the norms and cross-entropy accumulate in double
// and round only their results. So an f32 op's result is the correctly
// rounded value of its exact (double) formula in most cases, which is at
// least as accurate as any f32 implementation it is compared with.
//
// In f64 mode (ExecutorOptions::computeInF64) float results are never
// rounded at all, whatever their element type, so the whole function is
// evaluated in double: smooth enough for finite-difference gradient checks.
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_REFERENCE_EXECUTOR_H
#define TXOPT_REFERENCE_EXECUTOR_H

#include "txopt/Reference/Communicator.h"
#include "txopt/Reference/Tensor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Location.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

#include <vector>

namespace mlir::txopt::reference {

/// Which values --check-finite reports.
enum class FiniteCheck {
  Off,       ///< no checking (the default)
  NaN,       ///< the first op result holding a NaN; infinities pass, since
             ///< exported attention masks use -inf legitimately
  NonFinite, ///< the first op result holding a NaN or +-inf (for gradients
             ///< and optimizer steps, where an infinity is always a bug)
};

struct ExecutorOptions {
  /// Keep every float value in double, never rounding to element types.
  bool computeInF64 = false;
  /// Stop at the first op whose result fails this check.
  FiniteCheck checkFinite = FiniteCheck::Off;
  /// Make tx.dropout pass its input through, for comparisons with a
  /// reference whose random numbers differ (onnxruntime's, PyTorch's).
  bool disableDropout = false;
  /// The ranks the collectives (tx.all_reduce, ...) run over; null means
  /// one rank. Not owned; one per thread when N ranks are simulated.
  Communicator *communicator = nullptr;
};

class Executor {
public:
  /// |module| holds the functions and the tx.parameter ops they read; it
  /// must outlive the executor.
  explicit Executor(ModuleOp module, ExecutorOptions options = {});

  /// Runs |func| (single block, tx ops and func.return) on |arguments|, one
  /// per function argument, each of the argument's exact type. Returns the
  /// results, or an error whose message is one line naming the op and its
  /// location (the ONNX node name for imported IR).
  llvm::Expected<std::vector<Tensor>> run(func::FuncOp func,
                                          llvm::ArrayRef<Tensor> arguments);

  /// Replaces the value `tx.load_parameter @name` reads (initially the
  /// parameter's initial value). The type must match the parameter's.
  llvm::Error setParameter(llvm::StringRef name, Tensor value);

  /// The value `tx.load_parameter @name` reads.
  llvm::Expected<const Tensor *> getParameter(llvm::StringRef name);

  const ExecutorOptions &getOptions() const { return options; }

private:
  llvm::Expected<Tensor> evaluateConstant(Operation *op);
  /// An error when |op|'s results would not fit the memory budget on top of
  /// what is live and held.
  llvm::Error checkResultBudget(Operation &op);
  /// |op|'s results into |results|: a constant, a parameter load, or a
  /// kernel over its operands (found in |values|).
  llvm::Error evaluate(Operation &op, const llvm::DenseMap<Value, Tensor> &values,
                       llvm::SmallVectorImpl<Tensor> &results);

  ModuleOp module;
  ExecutorOptions options;
  llvm::StringMap<Tensor> parameters;
  llvm::DenseMap<Operation *, Tensor> constants;
  /// Bytes held by `parameters` and `constants` (for the memory budget).
  uint64_t heldBytes = 0;
  /// Bytes held by the live values of the run in progress.
  uint64_t liveBytes = 0;
};

/// Evaluates one op (not tx.constant or tx.load_parameter, which read the
/// module) on |operands| exactly as Executor::run does: the same kernel, then
/// each result rounded to its element type (unless options.computeInF64).
/// Returns false when no kernel implements |op|, true after filling
/// |results| (one per op result), or an error: a one-line message without
/// location, e.g. "integer division by zero". The ONNX importer folds
/// constants through it, so a folded constant is what the step computes.
llvm::Expected<bool> evaluateOp(Operation *op,
                                llvm::ArrayRef<const Tensor *> operands,
                                llvm::SmallVectorImpl<Tensor> &results,
                                const ExecutorOptions &options = {});

/// Describes |loc| for a one-line message: `'node name'` for a NameLoc (what
/// the ONNX importer attaches), `file:line:col` for a file location.
std::string describeLocation(Location loc);

} // namespace mlir::txopt::reference

#endif // TXOPT_REFERENCE_EXECUTOR_H
