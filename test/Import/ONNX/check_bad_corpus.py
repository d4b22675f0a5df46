#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs the generated bad-input corpus (scripts/make_bad_onnx.py --corpus).

Usage: check_bad_corpus.py --txopt TXOPT --txopt-run TXOPT_RUN CORPUS_DIR

Every model must end in a clean error or the right answer:
  import: txopt exits 1 or 2, prints exactly one stderr line starting with
          "txopt: error:" that contains each of the entry's "names";
  run:    txopt imports it (exit 0); txopt-run exits 1 with one line that
          contains the names;
  ort:    txopt and txopt-run succeed, and every output equals
          onnxruntime's (exactly for integers, to 1e-6 for floats), or
          the entry's "expected" values where onnxruntime departs from the
          spec (Slice with end = INT64_MAX and a negative step).
A crash (signal), a hang (60 s) or any other exit status is a failure.
Prints one line per failure and a summary `N models: N ok`.
"""
import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile

TIMEOUT = 60


def run(cmd):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return None, "", "timeout"
    return p.returncode, p.stdout, p.stderr


def one_line_error(tool, rc, err, names, allowed):
    lines = err.splitlines()
    if rc is None:
        return "hang (timeout)"
    if rc < 0:
        return "killed by signal %d" % -rc
    if rc not in allowed:
        return "exit %d (expected %s): %s" % (rc, allowed, err.strip()[:300])
    if len(lines) != 1 or not lines[0].startswith(tool + ": error: "):
        return "expected one '%s: error:' line, got %d lines: %s" % (
            tool, len(lines), err.strip()[:300])
    for name in names:
        if name not in lines[0]:
            return "message does not name %r: %s" % (name, lines[0])
    return None


def check(entry, args, corpus, scratch):
    path = os.path.join(corpus, entry["file"])
    stem = os.path.join(scratch, entry["file"][:-5])
    names = entry["names"]
    if entry["kind"] == "import":
        rc, _, err = run([args.txopt, path, "--emit=tx", "-o", stem + ".mlir"])
        return one_line_error("txopt", rc, err, names, (1, 2))
    rc, _, err = run([args.txopt, path, "--emit=tx", "-o", stem + ".mlir"])
    if rc != 0:
        return "import failed (exit %s): %s" % (rc, err.strip()[:300])
    if entry["kind"] == "run":
        rc, _, err = run([args.txopt_run, stem + ".mlir"] + entry["run_args"])
        return one_line_error("txopt-run", rc, err, names, (1,))
    # ort
    import numpy as np
    import onnxruntime as ort
    feeds = {k: np.array(v, np.float32) for k, v in entry["inputs"].items()}
    cmd = [args.txopt_run, stem + ".mlir", "--output-dir", stem + ".out",
           "--print-limit", "0"]
    for k, v in feeds.items():
        np.save(stem + "." + k + ".npy", v)
        cmd += ["--input", "%s=%s.%s.npy" % (k, stem, k)]
    rc, _, err = run(cmd)
    if rc != 0:
        return "txopt-run failed (exit %s): %s" % (rc, err.strip()[:300])
    if "expected" in entry:
        outputs = list(entry["expected"])
        want = [np.array(entry["expected"][o], np.float32) for o in outputs]
    else:
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        want = sess.run(None, feeds)
        outputs = [o.name for o in sess.get_outputs()]
    for out, value in zip(outputs, want):
        got = np.load(os.path.join(stem + ".out", out + ".npy"))
        if got.shape != value.shape:
            return "output %s: shape %s, expected %s" % (
                out, got.shape, value.shape)
        if not np.allclose(got, value, rtol=1e-6, atol=0, equal_nan=True):
            return "output %s: %s, expected %s" % (
                out, got.tolist(), value.tolist())
    return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--txopt", required=True)
    parser.add_argument("--txopt-run", required=True)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("corpus")
    args = parser.parse_args()
    with open(os.path.join(args.corpus, "manifest.json")) as f:
        entries = json.load(f)
    failures = 0
    with tempfile.TemporaryDirectory() as scratch:
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            results = pool.map(lambda e: check(e, args, args.corpus, scratch),
                               entries)
            for entry, problem in zip(entries, results):
                if problem:
                    failures += 1
                    print("FAIL %s (%s): %s" % (entry["file"], entry["kind"],
                                                problem))
    kinds = {}
    for e in entries:
        kinds[e["kind"]] = kinds.get(e["kind"], 0) + 1
    print("%d models (%s): %d ok" % (
        len(entries), ", ".join("%d %s" % (n, k) for k, n in sorted(kinds.items())),
        len(entries) - failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
