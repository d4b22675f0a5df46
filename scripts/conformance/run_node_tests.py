#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""ONNX node conformance for txopt.

Generates ONNX's node test cases (one model per case, inputs and expected
outputs) from the installed `onnx` package's case generators into a work
folder, runs every case whose ops are all in txopt's op set through `txopt`
(import + default pipeline) and `txopt-run` (the CPU reference executor),
compares with the expected outputs (ONNX's tolerances: rtol 1e-3, atol
1e-7; integers and bools exactly) and classifies each case:

  pass     every output matches
  refused  txopt or txopt-run stopped with a one-line error (exit 1 or 2)
  wrong    an output is missing or differs
  crash    a signal, a timeout, another exit status, or an error that is
           not one line

A case is in scope when every node (subgraphs included) is an op that the
importer's registry (lib/Import/ONNX/ONNXOpImporters.cpp) lists; the others
are counted per op in the table but never run.

Usage:
  run_node_tests.py --bin build/bin --work build/conformance \
      --expected test/Conformance/expected.txt
      checks: fails (exit 1) on any wrong answer or crash, any case the list
      says passes that does not, any case the list excludes that now passes,
      and any in-scope case the list does not name (with --allow-new, as
      for another onnx version's suite, those are only listed).
  run_node_tests.py ... --update --docs docs/Conformance.md
      rewrites the list (and the per-op table) from this run; refuses to
      when a case is wrong or crashes (those are bugs, never expectations).
"""
import argparse
import collections
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import time
import warnings

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REGISTRY = os.path.join(ROOT, "lib", "Import", "ONNX", "ONNXOpImporters.cpp")
RTOL, ATOL = 1e-3, 1e-7
TIMEOUT_S = 60
SUB_BYTE_INTS = ("int4", "uint4", "int2", "uint2")  # ml_dtypes' names
# The 16-bit floats: explicit mantissa bits and smallest normal exponent.
HALF_MANTISSA_BITS = {"float16": 10, "bfloat16": 7}
HALF_MIN_EXPONENT = {"float16": -14, "bfloat16": -126}


def supported_ops():
    """The importer's registry keys: "Op" for ai.onnx, "domain.Op" otherwise."""
    text = open(REGISTRY).read()
    start = text.index("registry()")
    return set(re.findall(r'\{"([\w.]+)",\s*\{import', text[start:]))


def op_key(node):
    if node.domain in ("", "ai.onnx"):
        return node.op_type
    return node.domain + "." + node.op_type


def model_ops(graph):
    """Every op key used in |graph| and its subgraphs."""
    import onnx
    ops = set()
    for node in graph.node:
        ops.add(op_key(node))
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                ops |= model_ops(attr.g)
            for g in attr.graphs:
                ops |= model_ops(g)
    return ops


# ---------------------------------------------------------------------------
# Generation
# ---------------------------------------------------------------------------

def generate(work):
    """Writes every node case as WORK/cases/NAME/{model.onnx, test_data_set_N/
    {input,output}_J.pb} (the layout of onnx/backend/test/data/node) plus
    WORK/cases/NAME/op, the op the case tests. Skipped when WORK/cases was
    written by the same onnx version."""
    import onnx
    from onnx import numpy_helper
    cases_dir = os.path.join(work, "cases")
    stamp = os.path.join(cases_dir, ".onnx-version")
    version = onnx.__version__ + " layout 2"
    if os.path.exists(stamp) and open(stamp).read() == version:
        return cases_dir
    if os.path.exists(cases_dir):
        shutil.rmtree(cases_dir)
    os.makedirs(cases_dir)
    import onnx.backend.test.case.node as node_cases
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = node_cases.collect_testcases(None)
    # The op each case tests, as the generators registered it (a private
    # table; other onnx versions may lack it, then the model's own op is
    # used when it has one kind of node).
    op_of = {name: node.op_type
             for name, node in getattr(node_cases, "_existing_names", {}).items()}
    for case in cases:
        case_dir = os.path.join(cases_dir, case.name)
        os.makedirs(case_dir)
        with open(os.path.join(case_dir, "model.onnx"), "wb") as f:
            f.write(case.model.SerializeToString())
        # Expanded cases (the op's function body) are named NAME_expanded...
        base = re.sub(r"_expanded.*$", "", case.name)
        kinds = {n.op_type for n in case.model.graph.node}
        op = op_of.get(case.name, op_of.get(base, kinds.pop() if len(kinds) == 1 else "?"))
        if base != case.name:
            op += " (expanded)"
        with open(os.path.join(case_dir, "op"), "w") as f:
            f.write(op)
        graph = case.model.graph
        for i, (inputs, outputs) in enumerate(case.data_sets):
            ds = os.path.join(case_dir, "test_data_set_%d" % i)
            os.makedirs(ds)
            for kind, values, infos in (("input", inputs, graph.input),
                                        ("output", outputs, graph.output)):
                for j, value in enumerate(values):
                    info = infos[j]
                    if not info.type.HasField("tensor_type"):
                        continue  # sequences, maps, optionals: never in scope
                    proto = value if isinstance(value, onnx.TensorProto) else \
                        numpy_helper.from_array(np.asarray(value), info.name)
                    with open(os.path.join(ds, "%s_%d.pb" % (kind, j)), "wb") as f:
                        f.write(proto.SerializeToString())
    with open(stamp, "w") as f:
        f.write(version)
    return cases_dir


# ---------------------------------------------------------------------------
# Running one case
# ---------------------------------------------------------------------------

def one_line_error(stderr):
    """The error line when |stderr| is exactly one `tool: error: ...` line
    (warnings before it allowed), else None."""
    lines = [l for l in stderr.splitlines() if l.strip()]
    errors = [l for l in lines if ": error: " in l]
    if len(errors) == 1 and lines[-1] == errors[0] and \
            all(": warning: " in l for l in lines[:-1]):
        return errors[0]
    return None


def run_tool(cmd):
    """Runs |cmd|; returns (status, detail) with status ok/refused/crash."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S,
                           errors="replace")
    except subprocess.TimeoutExpired:
        return "crash", "%s timed out after %d s" % (os.path.basename(cmd[0]), TIMEOUT_S)
    if p.returncode == 0:
        return "ok", ""
    line = one_line_error(p.stderr)
    if p.returncode in (1, 2) and line:
        return "refused", line
    tail = " | ".join(p.stderr.strip().splitlines()[-3:])
    return "crash", "%s exited with %d: %s" % (os.path.basename(cmd[0]), p.returncode, tail)


def compare(name, want, got):
    """None when |got| matches |want| by ONNX's rules, else why not."""
    if got.shape != want.shape:
        return "output '%s': expected shape %s, but got %s" % (name, want.shape, got.shape)
    if want.dtype.kind in "biu" or str(want.dtype) in SUB_BYTE_INTS:
        # txopt-run widens integer widths without a .npy dtype of their own
        # (ml_dtypes' int4/uint4/int2/uint2 among them) to <i8 (signless
        # bits, sign-extended); narrowing back wraps, so it is exact when
        # the bits are right.
        if want.dtype.kind == "b":
            ok = np.array_equal(got.astype(bool), want) and np.isin(got, [0, 1]).all()
        else:
            ok = np.array_equal(got.astype(want.dtype), want)
        if not ok:
            bad = np.argwhere(got.astype(want.dtype) != want)
            idx = tuple(bad[0]) if len(bad) else ()
            return "output '%s': integers differ at %s (expected %s, got %s)" % (
                name, idx, want[idx] if idx else want, got[idx] if idx else got)
        return None
    if want.dtype.kind == "f" or str(want.dtype) in ("bfloat16",) or \
            str(want.dtype).startswith(("float8", "float4")):
        w = want.astype(np.float64)
        g = got.astype(np.float64)
        close = np.isclose(g, w, rtol=RTOL, atol=ATOL, equal_nan=True)
        mantissa_bits = HALF_MANTISSA_BITS.get(str(want.dtype))
        if mantissa_bits is not None:
            # ONNX's reference evaluator computes 16-bit ops with numpy in
            # that type, rounding every intermediate (sums included); txopt
            # accumulates in f32 and rounds once. Both are within a few
            # units in the last place of the exact result (txopt closer, in
            # every case checked: docs/Conformance.md), so 16-bit outputs
            # may also differ from the expected ones by 2 ulps of the type.
            with np.errstate(divide="ignore"):
                exponent = np.floor(np.log2(np.maximum(np.abs(w), np.finfo(np.float32).tiny)))
            ulp = np.exp2(np.maximum(exponent, HALF_MIN_EXPONENT[str(want.dtype)]) - mantissa_bits)
            with np.errstate(invalid="ignore"):
                close |= np.abs(g - w) <= 2 * ulp
        if not close.all():
            idx = tuple(np.argwhere(~close)[0])
            return "output '%s': %d of %d values differ, first at %s (expected %r, got %r)" % (
                name, int((~close).sum()), w.size, idx, w[idx], g[idx])
        return None
    return "output '%s': dtype %s is not compared" % (name, want.dtype)


def npy_file_name(name):
    """The file txopt-run --output-dir writes output NAME to."""
    out = re.sub(r"[^A-Za-z0-9._-]", "_", name)
    if not out or out.startswith("."):
        out = "_" + out
    return out + ".npy"


def dims_of(info):
    """Static dims of a graph input, or None when any is symbolic/missing."""
    t = info.type.tensor_type
    if not t.HasField("shape"):
        return None
    dims = []
    for d in t.shape.dim:
        if not d.HasField("dim_value"):
            return None
        dims.append(d.dim_value)
    return dims


def run_case(case_dir, tools):
    """Returns (status, detail) for one case."""
    import onnx
    from onnx import numpy_helper
    model_path = os.path.join(case_dir, "model.onnx")
    model = onnx.load(model_path)
    graph = model.graph
    init_names = {t.name for t in graph.initializer}
    inputs = [i for i in graph.input if i.name not in init_names]
    out_dir = os.path.join(case_dir, "out")
    if os.path.exists(out_dir):
        shutil.rmtree(out_dir)
    os.makedirs(out_dir)
    data_sets = sorted(d for d in os.listdir(case_dir) if d.startswith("test_data_set_"))
    compiled = {}  # input shapes -> compiled .mlir
    for ds_name in data_sets:
        ds = os.path.join(case_dir, ds_name)
        arrays = []
        for j, info in enumerate(graph.input):
            path = os.path.join(ds, "input_%d.pb" % j)
            if not os.path.exists(path):
                arrays.append(None)
                continue
            t = onnx.TensorProto()
            with open(path, "rb") as f:
                t.ParseFromString(f.read())
            arrays.append(numpy_helper.to_array(t))
        # Symbolic dims are sized from the data, as a user would with
        # --input-shape; static dims are left to the model.
        shape_args = []
        for j, info in enumerate(inputs):
            if arrays[j] is not None and dims_of(info) is None and arrays[j].ndim > 0:
                shape_args += ["--input-shape",
                               "%s=%s" % (info.name, "x".join(map(str, arrays[j].shape)))]
        key = tuple(shape_args)
        if key not in compiled:
            mlir = os.path.join(out_dir, "model%d.mlir" % len(compiled))
            status, detail = run_tool([tools[0], model_path, "-o", mlir] +
                                      list(tools[2]) + shape_args)
            if status != "ok":
                return status, detail
            compiled[key] = mlir
        run_args = []
        for j, info in enumerate(inputs):
            if arrays[j] is None:
                continue
            a = arrays[j]
            if str(a.dtype) in SUB_BYTE_INTS:
                # ml_dtypes' sub-byte integers: txopt-run reads their values
                # from |i1 for i4/i2 arguments.
                a = a.astype(np.int8)
            elif a.dtype.kind not in "biuf" or (a.dtype.kind == "f" and a.dtype.itemsize < 2):
                # bfloat16 / float8 (ml_dtypes): txopt-run reads them as
                # <f4 for narrower float arguments (exact).
                a = a.astype(np.float32)
            npy = os.path.join(out_dir, "%s_input_%d.npy" % (ds_name, j))
            np.save(npy, a, allow_pickle=False)
            run_args += ["--input", "%s=%s" % (info.name, npy)]
        result_dir = os.path.join(out_dir, ds_name)
        status, detail = run_tool([tools[1], compiled[key],
                                   "--print-limit", "0", "--output-dir", result_dir]
                                  + run_args)
        if status != "ok":
            return status, detail
        for j, info in enumerate(graph.output):
            path = os.path.join(ds, "output_%d.pb" % j)
            if not os.path.exists(path):
                continue
            t = onnx.TensorProto()
            with open(path, "rb") as f:
                t.ParseFromString(f.read())
            want = numpy_helper.to_array(t)
            got_path = os.path.join(result_dir, npy_file_name(info.name))
            if not os.path.exists(got_path):
                return "wrong", "output '%s' was not written" % info.name
            why = compare(info.name, want, np.load(got_path))
            if why:
                return "wrong", "%s: %s" % (ds_name, why)
    return "pass", ""


# ---------------------------------------------------------------------------
# Expectations and the table
# ---------------------------------------------------------------------------

def read_expected(path):
    """{case: (status, reason)} from the expectation list."""
    expected = {}
    for line in open(path):
        line = line.rstrip("\n")
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split(None, 2)
        expected[parts[0]] = (parts[1], parts[2] if len(parts) > 2 else "")
    return expected


def reason_of(detail):
    """The stable part of an error line: without the tool prefix."""
    detail = re.sub(r"^\S+: error: ", "", detail)
    # Paths under the work folder differ between machines.
    return re.sub(r"'[^' ]*/cases/[^/' ]+/", "'", detail)


def write_expected(path, results, onnx_version):
    with open(path, "w") as f:
        f.write("# ONNX node conformance expectations for txopt (onnx %s).\n" % onnx_version)
        f.write("# Generated by scripts/conformance/run_node_tests.py --update; do not edit.\n")
        f.write("# One in-scope case a line: NAME pass, or\n")
        f.write("# NAME refused REASON (the one-line error it gets; a design limit or\n")
        f.write("# a feature not yet implemented). Cases using an op outside txopt's op\n")
        f.write("# set are out of scope and not listed (docs/Conformance.md counts them).\n")
        for name in sorted(results):
            status, detail = results[name]
            if status == "pass":
                f.write("%s pass\n" % name)
            else:
                f.write("%s refused %s\n" % (name, reason_of(detail)))


def classify_reason(reason):
    """A short reason category for the per-op table (first rule that
    matches the error line)."""
    rules = [
        (r"not a constant after import-time folding",
         "shape operand is a run-time input (design limit: static shapes)"),
        (r"older than txopt reads", "opset below 7"),
        (r"string", "string tensors"),
        (r"not a tensor", "sequence/optional values"),
        (r"float8e8m0 with round_mode", "float8e8m0 rounding other than 'up'"),
        (r"saturate = 0", "non-saturating float8 cast"),
        (r"fmod = true", "floored float Mod (Mod-28 fmod = 0)"),
        (r"on uint64", "uint64 in a sign-dependent op"),
        (r"opset", "opset"),
        (r"positive sizes", "zero-sized dims"),
        (r"dtype|element type", "element type"),
        (r"no equivalent", "output tx has no equivalent"),
    ]
    for pattern, label in rules:
        if re.search(pattern, reason):
            return label
    return "other"


def write_docs(path, op_cases, results, out_of_scope, onnx_version):
    lines = [
        "# ONNX node conformance",
        "",
        "<!-- Generated by scripts/conformance/run_node_tests.py --update --docs; do not edit. -->",
        "",
        "ONNX's node test cases (generated from onnx %s's case generators), run through"
        % onnx_version,
        "`txopt` (import + default pipeline) and `txopt-run` (the CPU reference",
        "executor) and compared with ONNX's expected outputs (rtol 1e-3, atol 1e-7;",
        "integers and bools exactly; f16 and bf16 outputs may also differ by 2 units",
        "in the last place: ONNX's reference evaluator computes them with numpy in",
        "the 16-bit type, rounding every intermediate, where txopt accumulates in",
        "f32 and rounds once. In the Attention cases where that rule matters (7,",
        "and 6 with --no-fuse=attention), txopt's output is the closer of the two",
        "to the exact (f64) result, by max and mean error).",
        "`test/Conformance/node-tests.test` runs it in",
        "the lit suite against `test/Conformance/expected.txt`, which names every",
        "in-scope case that does not pass with the one-line error it gets.",
        "",
    ]
    total = len(results)
    passed = sum(1 for s, _ in results.values() if s == "pass")
    lines += [
        "In scope (every node is in txopt's op set): %d cases, %d pass, %d refused." % (
            total, passed, total - passed),
        "Out of scope (an op txopt does not import): %d cases." % sum(out_of_scope.values()),
        "",
        "Why in-scope cases are refused (each with a one-line error):",
        "",
        "* design limits: a shape operand (axes, pads, shape, starts, k, split",
        "  sizes, Range bounds, Dropout's training_mode) fed as a run-time graph",
        "  input, since tx shapes are static; string, sequence and optional values.",
        "",
        "Read with care (each has its own lit test in test/Import/ONNX): Cast",
        "from a float to the 2- and 4-bit integers follows ONNX's reference",
        "evaluator (truncation; 0 for NaN, infinities and out-of-range values,",
        "which ONNX leaves undefined); float4e2m1 and float8e8m0 are MLIR's",
        "f4E2M1FN and f8E8M0FNU (Cast to float8e8m0 with round_mode = 'up' and",
        "saturate = 1 only, the default); uint64 Div and Mod are computed without",
        "a wider type; opsets 1 to 6 are read when every op the model uses has",
        "the same definition there as at opset 7 (else the error says how to",
        "upgrade the model). Gelu and Attention import as their definitions in tx",
        "ops (test/Import/ONNX/attention-gelu.test), which the default pipeline's",
        "tx-fuse-attention makes one tx.attention in 67 of the 93 Attention cases",
        "(the others have a soft cap, a probabilities output, per-batch KV",
        "lengths, a two-sided window or a 16-bit softmax); the suite also runs the",
        "Attention cases with --no-fuse=attention (the definitions alone), and",
        "they pass too.",
        "",
        "| op | cases | pass | refused | why refused (cases) |",
        "|---|---|---|---|---|",
    ]
    by_op = collections.defaultdict(list)
    for name, op in op_cases.items():
        if name in results:
            by_op[op].append(name)
    for op in sorted(by_op):
        names = by_op[op]
        ok = [n for n in names if results[n][0] == "pass"]
        why = collections.Counter(classify_reason(reason_of(results[n][1]))
                                  for n in names if results[n][0] != "pass")
        lines.append("| %s | %d | %d | %d | %s |" % (
            op, len(names), len(ok), len(names) - len(ok),
            ", ".join("%s (%d)" % kv for kv in sorted(why.items()))))
    lines += ["", "Ops outside txopt's op set (cases):", ""]
    lines.append(", ".join("%s (%d)" % kv for kv in sorted(out_of_scope.items())))
    lines.append("")
    with open(path, "w") as f:
        f.write("\n".join(lines))


# ---------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", help="folder with txopt and txopt-run")
    ap.add_argument("--txopt", help="the txopt executable (default: BIN/txopt)")
    ap.add_argument("--txopt-run", help="the txopt-run executable (default: BIN/txopt-run)")
    ap.add_argument("--work", required=True, help="folder for the cases and outputs")
    ap.add_argument("--expected", required=True, help="the expectation list")
    ap.add_argument("--update", action="store_true", help="rewrite the expectation list")
    ap.add_argument("--docs", help="with --update: also write the per-op table here")
    ap.add_argument("--filter", help="only cases whose name matches this regex")
    ap.add_argument("--txopt-flag", action="append", default=[],
                    help="one more txopt flag (repeatable), e.g. --no-fuse=attention")
    ap.add_argument("--count-op",
                    help="also print in how many cases the compiled IR has this op "
                         "(that a fusion flag really fused)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--allow-new", action="store_true",
                    help="report cases the list does not name (another onnx version's "
                         "suite) without failing on them")
    args = ap.parse_args()
    if not (args.bin or (args.txopt and args.txopt_run)):
        ap.error("give --bin, or --txopt and --txopt-run")
    tools = (args.txopt or os.path.join(args.bin, "txopt"),
             args.txopt_run or os.path.join(args.bin, "txopt-run"),
             tuple(args.txopt_flag))

    import onnx
    start = time.time()
    cases_dir = generate(args.work)
    ops = supported_ops()
    names = sorted(n for n in os.listdir(cases_dir) if not n.startswith("."))
    if args.filter:
        names = [n for n in names if re.search(args.filter, n)]
    in_scope, op_cases, out_of_scope = [], {}, collections.Counter()
    for name in names:
        op_cases[name] = open(os.path.join(cases_dir, name, "op")).read()
        model = onnx.load(os.path.join(cases_dir, name, "model.onnx"))
        missing = model_ops(model.graph) - ops
        if missing:
            out_of_scope[op_cases[name]] += 1
        else:
            in_scope.append(name)

    results = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = {pool.submit(run_case, os.path.join(cases_dir, n), tools): n
                   for n in in_scope}
        for fut in concurrent.futures.as_completed(futures):
            name = futures[fut]
            try:
                results[name] = fut.result()
            except Exception as e:  # a harness problem is reported, not hidden
                results[name] = ("crash", "harness: %s: %s" % (type(e).__name__, e))

    counts = collections.Counter(s for s, _ in results.values())
    print("onnx %s: %d node cases, %d in scope: %d pass, %d refused, %d wrong, %d crash (%.0f s)"
          % (onnx.__version__, len(names), len(in_scope), counts["pass"], counts["refused"],
             counts["wrong"], counts["crash"], time.time() - start))

    if args.count_op:
        pattern = re.compile(r"\b%s\b" % re.escape(args.count_op))
        with_op = 0
        for name in in_scope:
            out = os.path.join(cases_dir, name, "out")
            files = [f for f in os.listdir(out) if f.endswith(".mlir")] if os.path.isdir(out) else []
            if any(pattern.search(open(os.path.join(out, f)).read()) for f in files):
                with_op += 1
        print("%s in %d of %d cases" % (args.count_op, with_op, len(in_scope)))

    problems = []
    for name in sorted(results):
        status, detail = results[name]
        if status in ("wrong", "crash"):
            problems.append("%s: %s: %s" % (status.upper(), name, detail))

    if args.update:
        if problems:
            print("\n".join(problems))
            sys.exit("not updating: wrong answers and crashes are bugs, not expectations")
        write_expected(args.expected, results, onnx.__version__)
        if args.docs:
            write_docs(args.docs, op_cases, results, out_of_scope, onnx.__version__)
        print("wrote %s" % args.expected)
        return

    expected = read_expected(args.expected)
    for name in sorted(results):
        status, detail = results[name]
        if status in ("wrong", "crash"):
            continue
        want = expected.get(name)
        if want is None:
            line = "NEW: %s: %s %s (not in %s; run with --update)" % (
                name, status, reason_of(detail), os.path.basename(args.expected))
            if args.allow_new:
                print(line)
            else:
                problems.append(line)
        elif want[0] == "pass" and status != "pass":
            problems.append("REGRESSION: %s: expected to pass, but %s: %s" % (name, status, detail))
        elif want[0] != "pass" and status == "pass":
            problems.append("NOW PASSES: %s (listed as %s; run with --update)" % (name, want[0]))
    if not args.filter and not args.allow_new:
        for name in sorted(set(expected) - set(results)):
            problems.append("GONE: %s is listed but no longer in scope" % name)
    for p in problems:
        print(p)
    if problems:
        sys.exit("%d conformance problem(s)" % len(problems))
    print("conformance: no wrong answers, no crashes, no regressions")


if __name__ == "__main__":
    main()
