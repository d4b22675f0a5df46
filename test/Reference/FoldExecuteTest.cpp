//===- FoldExecuteTest.cpp - import-time folding == execution -------------===//
//
// SPDX-License-Identifier: Apache-2.0
// One semantics for folding and execution (issue 14): for every op family
// the ONNX importer folds, the same node is imported twice, once on Constant
// nodes (folded at import into tx.constant) and once on graph inputs holding
// the same values (run by the reference executor), and the results are
// compared bit for bit. Prints one line per case and a summary; exits 1 on
// any mismatch, or when a folded import still computes something (then
// nothing was folded and the comparison would prove nothing).
// fold-vs-execute.test runs it.
//
//===----------------------------------------------------------------------===//

#include "txopt/Dialect/Tx/IR/TxOps.h"
#include "txopt/Import/ONNX/ONNXImporter.h"
#include "txopt/InitAll.h"
#include "txopt/Reference/Executor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using namespace mlir;
using namespace mlir::txopt;

namespace {

/// One input: its ONNX type (`float[2, 3]`), name and literal (`{1, 2}`).
struct Input {
  const char *type, *name, *values;
};

/// A node (or a few) over |inputs| producing the graph outputs |outputs|.
struct Case {
  const char *name;
  std::vector<Input> inputs;
  const char *outputs; // e.g. "float[2, 3] y, bool[2] z"
  const char *body;
  int opset = 18;
};

std::string header(int opset) {
  return "<ir_version: 8, opset_import: [\"\" : " + std::to_string(opset) +
         "]>\n";
}

std::string constants(const Case &c) {
  std::string text;
  for (const Input &in : c.inputs)
    text += std::string("  ") + in.name + " = Constant <value = " + in.type +
            " " + in.values + "> ()\n";
  return text;
}

/// g () => (inputs...): the input values as the importer reads them.
std::string valuesModel(const Case &c) {
  std::string outs;
  for (const Input &in : c.inputs)
    outs += std::string(outs.empty() ? "" : ", ") + in.type + " " + in.name;
  return header(c.opset) + "g () => (" + outs + ")\n{\n" + constants(c) + "}\n";
}

/// g () => (outputs) on Constant nodes: folded at import.
std::string foldedModel(const Case &c) {
  return header(c.opset) + "g () => (" + c.outputs + ")\n{\n" + constants(c) +
         c.body + "}\n";
}

/// g (inputs) => (outputs): the same node, run by the executor.
std::string executedModel(const Case &c) {
  std::string ins;
  for (const Input &in : c.inputs)
    ins += std::string(ins.empty() ? "" : ", ") + in.type + " " + in.name;
  return header(c.opset) + "g (" + ins + ") => (" + c.outputs + ")\n{\n" +
         c.body + "}\n";
}

/// Imports |text| and runs its @main on |arguments|.
bool importAndRun(MLIRContext &context, const std::string &text,
                  llvm::ArrayRef<reference::Tensor> arguments,
                  std::vector<reference::Tensor> &results, int *computeOps,
                  std::string &error) {
  ONNXImportOptions options;
  ONNXImportInfo info;
  OwningOpRef<ModuleOp> module = importONNXText(
      context, text, "fold-execute.onnxtxt", options, info, error);
  if (!module)
    return false;
  auto main = module->lookupSymbol<func::FuncOp>("main");
  if (!main) {
    error = "no @main";
    return false;
  }
  if (computeOps) {
    *computeOps = 0;
    main.walk([&](Operation *op) {
      if (!isa<func::FuncOp, func::ReturnOp, tx::ConstantOp>(op))
        ++*computeOps;
    });
  }
  reference::Executor executor(*module);
  llvm::Expected<std::vector<reference::Tensor>> out =
      executor.run(main, arguments);
  if (!out) {
    error = llvm::toString(out.takeError());
    return false;
  }
  results = std::move(*out);
  return true;
}

/// Bit-for-bit equality (floats by their double bit pattern, so NaN == NaN
/// and -0 != +0); returns the first differing element, or -1.
int64_t firstDifference(const reference::Tensor &a, const reference::Tensor &b) {
  if (a.getType() != b.getType())
    return 0;
  for (int64_t i = 0; i < a.getNumElements(); ++i) {
    if (a.isFloat()) {
      if (std::memcmp(&a.floats()[i], &b.floats()[i], sizeof(double)) != 0)
        return i;
    } else if (a.ints()[i] != b.ints()[i]) {
      return i;
    }
  }
  return -1;
}

std::vector<Case> cases() {
  const Input f23{"float[2, 3]", "a", "{1.5, -2.25, 0.1, 3.0, -0.0, 1e-3}"};
  const Input f3{"float[3]", "b", "{0.3, -4.0, 7.0}"};
  const Input i6{"int64[6]", "i", "{7, -7, 9223372036854775807, 0, -3, 5}"};
  const Input j6{"int64[6]", "j", "{2, 2, 2, 5, 2, -3}"};
  // The ONNX text parser has no f16 literals: cast them in the body.
  const Input h4{"float[4]", "h", "{0.1, 1000.0, -3.3, 65000.0}"};
  return {
      {"broadcast arithmetic (f32)",
       {f23, f3},
       "float[2, 3] s, float[2, 3] d, float[2, 3] m, float[2, 3] q, "
       "float[2, 3] p",
       "  s = Add(a, b)\n  d = Sub(a, b)\n  m = Mul(a, b)\n  q = Div(a, b)\n"
       "  p = Pow(b, a)\n"},
      {"integer arithmetic (wrap-around, truncating division, mod)",
       {i6, j6},
       "int64[6] s, int64[6] m, int64[6] q, int64[6] r, int64[6] n",
       "  s = Add(i, i)\n  m = Mul(i, j)\n  q = Div(i, j)\n"
       "  r = Mod(i, j)\n  n = Neg(i)\n"},
      {"float mod, max, min",
       {f23, f3},
       "float[2, 3] r, float[2, 3] mx, float[2, 3] mn",
       "  r = Mod <fmod = 1> (a, b)\n  mx = Max(a, b)\n  mn = Min(a, b)\n"},
      {"f16 arithmetic rounds once",
       {h4},
       "float16[4] s, float16[4] m",
       "  hh = Cast <to = 10> (h)\n  s = Add(hh, hh)\n  m = Mul(hh, hh)\n"},
      {"unary math",
       {{"float[6]", "x", "{0.25, 1.0, 2.5, 10.0, 1e-4, 0.7}"},
        {"float[6]", "y", "{-3.0, -0.5, 0.0, 0.5, 3.0, 20.0}"}},
       "float[6] sq, float[6] rc, float[6] ex, float[6] lg, float[6] sn, "
       "float[6] cs, float[6] th, float[6] sg, float[6] ef, float[6] rl, "
       "float[6] ng",
       "  sq = Sqrt(x)\n  rc = Reciprocal(x)\n  ex = Exp(y)\n  lg = Log(x)\n"
       "  sn = Sin(y)\n  cs = Cos(y)\n  th = Tanh(y)\n  sg = Sigmoid(y)\n"
       "  ef = Erf(y)\n  rl = Relu(y)\n  ng = Neg(y)\n"},
      {"comparisons, logic, where, isnan",
       {f23, f3},
       "bool[2, 3] lt, bool[2, 3] le, bool[2, 3] gt, bool[2, 3] ge, "
       "bool[2, 3] eq, bool[2, 3] an, bool[2, 3] xo, bool[2, 3] nt, "
       "float[2, 3] w, bool[2, 3] nan",
       "  lt = Less(a, b)\n  le = LessOrEqual(a, b)\n  gt = Greater(a, b)\n"
       "  ge = GreaterOrEqual(a, b)\n  eq = Equal(a, a)\n  an = And(lt, ge)\n"
       "  o = Or(lt, gt)\n  xo = Xor(o, le)\n  nt = Not(xo)\n"
       "  w = Where(lt, a, b)\n  nan = IsNaN(a)\n"},
      {"casts (truncation, f16/bf16 rounding, bool)",
       {{"float[5]", "x", "{-2.7, 2.7, 0.1, 70000.0, 0.0}"},
        {"int64[3]", "k", "{-5, 0, 300}"}},
       "int64[5] ti, float16[5] th, bfloat16[5] tb, bool[5] tz, "
       "float[3] kf, int32[3] k32",
       "  ti = Cast <to = 7> (x)\n  th = Cast <to = 10> (x)\n"
       "  tb = Cast <to = 16> (x)\n  tz = Cast <to = 9> (x)\n"
       "  kf = Cast <to = 1> (k)\n  k32 = Cast <to = 6> (k)\n"},
      // Shapes, starts and axes must be constants in both imports (tx wants
      // them static): they are Constant nodes of the body.
      {"data movement",
       {f23,
        {"int64[2]", "idx", "{2, -3}"},
        {"int64[2, 1]", "nd", "{1, 0}"},
        {"float[2, 1]", "c", "{9.0, 8.0}"}},
       "float[3, 2] t, float[2, 2] sl, float[2, 1] s0, float[2, 1] s1, "
       "float[2, 4] ct, float[2, 2] ga, float[2, 3] gn, float[2, 3] ex",
       "  starts = Constant <value = int64[2] {0, 1}> ()\n"
       "  ends = Constant <value = int64[2] {2, 3}> ()\n"
       "  t = Transpose <perm = [1, 0]> (a)\n"
       "  sl = Slice(a, starts, ends)\n"
       "  s0, s1 = Split <axis = 1, num_outputs = 2> (sl2)\n"
       "  sl2 = Slice(a, starts, ends)\n"
       "  ct = Concat <axis = 1> (a, c)\n"
       "  ga = Gather <axis = 1> (a, idx)\n"
       "  gn = GatherND(a, nd)\n"
       "  ex = Expand(c, shape3)\n"
       "  shape3 = Constant <value = int64[2] {2, 3}> ()\n"},
      {"scans, triangles, reductions",
       {f23, {"int64[3, 3]", "m", "{1, 2, 3, 4, 5, 6, 7, 8, 9}"}},
       "float[2, 3] cs, float[2, 3] cx, int64[3, 3] tu, int64[3, 3] tl, "
       "float[2] rs, float[2] rx, float[2] rm, int64[3] ri",
       "  axis = Constant <value = int64 {1}> ()\n"
       "  axes = Constant <value = int64[1] {1}> ()\n"
       "  cs = CumSum(a, axis)\n"
       "  cx = CumSum <exclusive = 1, reverse = 1> (a, axis)\n"
       "  tu = Trilu <upper = 1> (m)\n  tl = Trilu <upper = 0> (m)\n"
       "  rs = ReduceSum <keepdims = 0> (a, axes)\n"
       "  rx = ReduceMax <keepdims = 0> (a, axes)\n"
       "  rm = ReduceMean <keepdims = 0> (a, axes)\n"
       "  ri = ReduceSum <keepdims = 0> (m, axes)\n"},
      {"splat operands (evaluated on one element)",
       {{"float", "u", "{0.1}"}, {"float", "v", "{3.0}"}},
       "float s, float p, float w",
       "  s = Add(u, v)\n  p = Pow(u, v)\n  w = Div(u, v)\n"},
  };
}

} // namespace

int main() {
  DialectRegistry registry;
  registerAllDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();

  int mismatches = 0, values = 0;
  std::vector<Case> all = cases();
  for (const Case &c : all) {
    std::string error;
    std::vector<reference::Tensor> inputs, folded, executed;
    int foldedOps = 0, executedOps = 0;
    if (!importAndRun(context, valuesModel(c), {}, inputs, nullptr, error) ||
        !importAndRun(context, foldedModel(c), {}, folded, &foldedOps,
                      error) ||
        !importAndRun(context, executedModel(c), inputs, executed,
                      &executedOps, error)) {
      std::printf("%s: ERROR %s\n", c.name, error.c_str());
      ++mismatches;
      continue;
    }
    if (foldedOps != 0 || executedOps == 0) {
      std::printf("%s: ERROR %d ops left after folding, %d executed\n", c.name,
                  foldedOps, executedOps);
      ++mismatches;
      continue;
    }
    int caseMismatches = 0, caseValues = 0;
    for (size_t r = 0; r < folded.size(); ++r) {
      int64_t at = firstDifference(folded[r], executed[r]);
      caseValues += folded[r].getNumElements();
      if (at >= 0) {
        ++caseMismatches;
        std::printf("%s: MISMATCH in output #%zu at element %lld: folded %s, "
                    "executed %s\n",
                    c.name, r, static_cast<long long>(at),
                    reference::typeString(folded[r]).c_str(),
                    reference::typeString(executed[r]).c_str());
      }
    }
    std::printf("%s: %zu outputs, %d values, %s\n", c.name, folded.size(),
                caseValues, caseMismatches ? "DIFFERENT" : "identical");
    mismatches += caseMismatches;
    values += caseValues;
  }
  std::printf("%zu cases, %d values, %d mismatches\n", all.size(), values,
              mismatches);
  return mismatches ? 1 : 0;
}
