#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Collects one norm micro-benchmark run (bench/norm/run.sh) into
OUT/norm.json and OUT/norm.md and prints the table.

  summarize.py DIR OUT

txopt's times come from `txrun --profile 3 --profile-out` of each artifact
(OUT/profiles/NAME.R.json, one per run R; the median per command over the
runs). Its norm kernels are picked by the command's origin, the op they
were lowered from (kernel names alone are not enough: the lowering reuses
one kernel for identical code, so a bias reduction can launch a kernel
named *_rms_norm_grad):
  forward:  the one launch from 'tx.layer_norm' / 'tx.rms_norm';
  backward: the two launches from 'tx.layer_norm_grad' / 'tx.rms_norm_grad':
            the row kernel (dx, and per-block partial column sums of
            dgamma/dbeta) and the kernel that adds the partial rows. In an
            f32 step that second kernel is a packed column-sum launch that
            also finishes the bias's column sum (its partials are a few MB,
            read there too).
Anything else is an error, and so is a kernel whose bytes are fewer than
the rows it must read and write (fwd: x and y; bwd: dy, x and dx), which
would mean the step no longer computes what this benchmark times. What was
picked is printed, so a reader can check it against DIR/NAME.plan.txt.

Bytes and GB/s:
  txopt: the profile's bytes of the picked commands (each buffer a kernel
    reads or writes counted once at its full size: for the backward these
    include the f32 partial column sums, written by one kernel and read by
    the other). "% of copy" and the targets (forward >= 90%, backward >=
    80%, issue 11) use these.
  every system, also txopt ("eff."): the minimal traffic of the operation,
    with s the element size and N = rows x hidden:
      fwd: read x, write y: 2 N s; + per-row f32 stats written (LayerNorm
           mean and rstd: 8 bytes a row, RMSNorm rstd: 4) + gamma (and
           beta) read;
      bwd: read dy and x, write dx: 3 N s; + the stats read + gamma read
           + dgamma (and dbeta) written.
    Effective GB/s is that divided by the time, the same yardstick for all.
Ratios are peer ms / txopt ms: above 1, txopt is faster.
"""

import json
import os
import statistics
import sys

TARGET = {"fwd": 0.90, "bwd": 0.80}
ELEMENT = {"f32": 4, "bf16": 2}


def fail(message):
    sys.exit(f"summarize.py: {message}")


def minimal_bytes(model, phase):
    n, rows, hidden = model["rows"] * model["hidden"], model["rows"], model["hidden"]
    s = ELEMENT[model["dtype"]]
    params = 2 if model["norm"] == "layer" else 1
    stats = (8 if model["norm"] == "layer" else 4) * rows
    if phase == "fwd":
        return 2 * n * s + stats + params * hidden * s
    return 3 * n * s + stats + hidden * s + params * hidden * s


def pick(profile, norm, path):
    """(forward commands, backward commands) of one profile, checked."""
    launches = [c for c in profile["commands"] if c["kind"] == "Launch"]
    fwd_origin, bwd_origin = f"'tx.{norm}_norm' ", f"'tx.{norm}_norm_grad' "
    fwd = [c for c in launches if c["origin"].startswith(fwd_origin)]
    # The row kernel's partial dgamma/dbeta rows are summed by a launch of
    # the norm gradient's own, or, where the norm kernel also sums the next
    # bias's gradient (an f32 dx: RowKernels.cpp's column-sum epilogue), by
    # the packed column-sum kernel that sums them all, named after its
    # first member (here the bias).
    bwd = [c for c in launches
           if c["origin"].startswith(bwd_origin) or c["kernel"].endswith("_column_sums")]
    if len(fwd) != 1:
        fail(f"{path}: expected 1 launch from {fwd_origin.strip()}, found {len(fwd)}: "
             f"{[c['kernel'] for c in fwd]}")
    if len(bwd) != 2:
        fail(f"{path}: expected 2 launches from {bwd_origin.strip()} or column sums (row kernel, column sums), "
             f"found {len(bwd)}: {[c['kernel'] for c in bwd]}")
    if not fwd[0]["kernel"].endswith(f"_{norm}_norm"):
        fail(f"{path}: the forward launch runs '{fwd[0]['kernel']}', not a *_{norm}_norm kernel")
    if not bwd[0]["kernel"].endswith(f"_{norm}_norm_grad"):
        fail(f"{path}: the first gradient launch runs '{bwd[0]['kernel']}', "
             f"not a *_{norm}_norm_grad kernel")
    return fwd, bwd


def host_gap_suspect(profile, command):
    """Heuristic: in a profiled step every command is enqueued between two
    events, so if the host had enqueued less far ahead than the GPU had run,
    the GPU idled inside this command's interval. True when the host's
    cumulative enqueue time up to this command exceeds the GPU's time up to
    the previous one (plus the first enqueue, when the GPU started)."""
    commands = profile["commands"]
    i = command["index"]
    host = sum(c.get("host_ms", 0.0) for c in commands[: i + 1])
    gpu = commands[0].get("host_ms", 0.0) + sum(c["ms"] for c in commands[:i])
    return host > gpu


def txopt_rows(directory, out, model):
    name, norm = model["name"], model["norm"]
    paths = sorted(p for p in os.listdir(os.path.join(out, "profiles"))
                   if p.startswith(name + ".") and p.endswith(".json"))
    if not paths:
        fail(f"no profile of {name} in {out}/profiles (did txrun fail? see {name}.*.txt)")
    picked = {"fwd": [], "bwd": []}
    indices, suspects = None, set()
    for p in paths:
        path = os.path.join(out, "profiles", p)
        profile = json.load(open(path))
        fwd, bwd = pick(profile, norm, path)
        these = ([c["index"] for c in fwd], [c["index"] for c in bwd])
        if indices is not None and these != indices:
            fail(f"{path}: picked commands {these}, another run of the same artifact {indices}")
        indices = these
        picked["fwd"].append(fwd)
        picked["bwd"].append(bwd)
        for c in fwd + bwd:
            if host_gap_suspect(profile, c):
                suspects.add(c["index"])
    rows = {}
    for phase in ("fwd", "bwd"):
        runs = picked[phase]
        kernels = []
        for k, c in enumerate(runs[0]):
            kernels.append({"index": c["index"], "kernel": c["kernel"], "origin": c["origin"],
                            "bytes": c["bytes"],
                            "ms": statistics.median(r[k]["ms"] for r in runs),
                            "ms_runs": [r[k]["ms"] for r in runs],
                            "host_ms": statistics.median(r[k].get("host_ms", 0.0) for r in runs),
                            "host_gap_suspect": c["index"] in suspects})
        ms = sum(k["ms"] for k in kernels)
        touched = sum(k["bytes"] for k in kernels)
        need = 2 if phase == "fwd" else 3
        least = need * model["rows"] * model["hidden"] * ELEMENT[model["dtype"]]
        if touched < least:
            fail(f"{name} {phase}: the picked kernels touch {touched} bytes, fewer than the "
                 f"{least} of the rows they must read and write: the step changed")
        rows[phase] = {"ms": ms, "bytes": touched, "kernels": kernels, "runs": len(runs)}
    return rows


def main():
    directory, out = sys.argv[1], sys.argv[2]
    models = json.load(open(os.path.join(directory, "models.json")))
    copy_info = json.load(open(os.path.join(out, "copy_bandwidth.json")))
    copy = copy_info["copy_gb_per_s"]
    torch_path = os.path.join(out, "torch_norm.json")
    peers = json.load(open(torch_path)) if os.path.exists(torch_path) else {"configs": [], "system": {}}
    by_name = {c["name"]: c for c in peers["configs"]}
    compile_info = {}
    compile_log = os.path.join(directory, "compile.jsonl")
    if os.path.exists(compile_log):
        with open(compile_log) as f:
            compile_info = {r["name"]: r for r in map(json.loads, filter(str.strip, f))}

    results = []
    print("picked txopt commands (index kernel origin: median ms over runs, bytes):")
    for model in models:
        tx = txopt_rows(directory, out, model)
        peer = by_name.get(model["name"], {})
        for phase in ("fwd", "bwd"):
            t = tx[phase]
            for k in t["kernels"]:
                flag = "  [host may have lagged: GPU idle possible]" if k["host_gap_suspect"] else ""
                print(f"  {model['name']} {phase}: #{k['index']} {k['kernel']} {k['origin'][:40]}: "
                      f"{k['ms']:.4f} ms {k['ms_runs']}, {k['bytes']} B{flag}")
            least = minimal_bytes(model, phase)
            gbs = t["bytes"] / (t["ms"] / 1e3) / 1e9
            row = {"name": model["name"], "norm": model["norm"], "dtype": model["dtype"],
                   "rows": model["rows"], "hidden": model["hidden"], "pass": phase,
                   "minimal_bytes": least,
                   "txopt": {"ms": t["ms"], "bytes": t["bytes"], "gb_per_s": gbs,
                             "pct_copy": 100 * gbs / copy,
                             "meets_target": gbs / copy >= TARGET[phase],
                             "eff_gb_per_s": least / (t["ms"] / 1e3) / 1e9,
                             "runs": t["runs"], "kernels": t["kernels"],
                             "compile_s": compile_info.get(model["name"], {}).get("compile_s")}}
            for mode in ("eager", "compile", "eager_l2_warm"):
                if mode in peer:
                    ms = peer[mode][f"{phase}_ms"]
                    row[mode] = {"ms": ms, "eff_gb_per_s": least / (ms / 1e3) / 1e9,
                                 "ratio_vs_txopt": ms / t["ms"]}
                    if mode == "compile":
                        row[mode]["compile_s"] = peer[mode].get("compile_s")
            row["input_sets"] = peer.get("input_sets")
            results.append(row)

    def cell(row, mode, key, fmt):
        return format(row[mode][key], fmt) if mode in row else "-"

    lines = [f"### LayerNorm / RMSNorm forward and backward — one run, {peers['system'].get('device', copy_info.get('device', 'GPU'))}",
             "",
             f"copy ceiling {copy:.0f} GB/s; targets (issue 11): forward >= 90%, backward >= 80% of copy "
             f"(txopt's bytes: what its kernels touch). Ratios: peer ms / txopt ms (> 1: txopt faster). "
             f"eff. %: minimal bytes / time / copy, for txopt, eager, compile. "
             f"PyTorch {peers['system'].get('torch', '?')}.",
             "",
             "| norm | dtype | rows x hidden | pass | txopt ms | txopt kernels (ms) | txopt GB | GB/s | % of copy | target | "
             "eager ms | compile ms | eager / txopt | compile / txopt | eff. % txopt / eager / compile |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        t = r["txopt"]
        kernels = " + ".join(f"{k['kernel']} {k['ms']:.3f}" for k in t["kernels"])
        eff = " / ".join(f"{100 * r[m]['eff_gb_per_s'] / copy:.0f}" if m in r else "-"
                         for m in ("txopt", "eager", "compile"))
        lines.append(
            f"| {r['norm']} | {r['dtype']} | {r['rows']}x{r['hidden']} | {r['pass']} | {t['ms']:.4f} | {kernels} | "
            f"{t['bytes'] / 1e9:.3f} | {t['gb_per_s']:.0f} | {t['pct_copy']:.0f}% | "
            f"{'met' if t['meets_target'] else 'missed'} | {cell(r, 'eager', 'ms', '.4f')} | "
            f"{cell(r, 'compile', 'ms', '.4f')} | {cell(r, 'eager', 'ratio_vs_txopt', '.2f')} | "
            f"{cell(r, 'compile', 'ratio_vs_txopt', '.2f')} | {eff} |")
    warm = [r for r in results if "eager_l2_warm" in r]
    if warm:
        lines += ["", "Shapes whose x fits in L2: txopt's step writes the norm's input (x * a + b) and, "
                  "for the backward, dy in the kernel just before the norm kernels read them, so part "
                  "of each may still be in L2; the peers' inputs are rotated (cold). Eager with one "
                  "input set reused (L2-warm), for scale:", ""]
        for r in warm:
            lines.append(f"- {r['name']} {r['pass']}: eager warm {r['eager_l2_warm']['ms']:.4f} ms "
                         f"(cold {cell(r, 'eager', 'ms', '.4f')}), txopt {r['txopt']['ms']:.4f} ms")
    suspects = [(r["name"], r["pass"], k["kernel"]) for r in results
                for k in r["txopt"]["kernels"] if k["host_gap_suspect"]]
    if suspects:
        lines += ["", "Host may have lagged behind the GPU in txopt's profiled step (its time may "
                  "include idle): " + ", ".join(f"{n} {p} {k}" for n, p, k in suspects)]
    text = "\n".join(lines) + "\n"
    with open(os.path.join(out, "norm.md"), "w") as f:
        f.write(text)
    with open(os.path.join(out, "norm.json"), "w") as f:
        json.dump({"copy_gb_per_s": copy, "targets": TARGET, "system": peers["system"],
                   "rows": results}, f, indent=1)
        f.write("\n")
    print()
    print(text)
    missing = [m["name"] for m in models if m["name"] not in by_name]
    if missing:
        fail(f"no PyTorch results for {', '.join(missing)} (see {out}/torch_norm.txt)")


if __name__ == "__main__":
    main()
