#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""CPU self-test of summarize.py (no GPU): writes into OUT what run.sh
would leave there, with made-up times, and runs summarize.py on it.

  selftest.py DIR OUT

The txopt profiles follow txrun's --profile-out format
(runtime/tools/txrun/profile.cpp: {"step_ms", "commands": [{"index",
"kind", "kernel", "origin", "ms", "host_ms", "bytes"}]}), one record per
command of DIR/NAME.plan.txt with its real kernel name and origin, so the
picking runs on the commands the GPU will run. Times and bytes are
invented (bytes: the norm kernels' rows plus a little, others small);
only the parsing and the checks are under test. It also checks that
summarize.py fails loudly on a profile without the norm gradient.
"""

import json
import os
import re
import subprocess
import sys

LAUNCH = re.compile(r"^launch (\S+) .*// (.*)$")
COPY = re.compile(r"^copy .*// (.*)$")


def fake_profile(plan_path, model, run):
    n = model["rows"] * model["hidden"] * (2 if model["dtype"] == "bf16" else 4)
    commands, grads = [], 0
    for line in open(plan_path):
        line = line.rstrip("\n")
        m = LAUNCH.match(line)
        if m:
            kernel, origin = m.groups()
            kind = "Launch"
        elif COPY.match(line):
            kernel, origin, kind = "", COPY.match(line).group(1), "Copy"
        else:
            continue
        norm = origin.startswith(f"'tx.{model['norm']}_norm")
        grad = origin.startswith(f"'tx.{model['norm']}_norm_grad'")
        rows = 3 if grad else 2
        # The norm-gradient's first launch is its row kernel, the second
        # its column sums (small).
        is_row_kernel = norm and (not grad or grads == 0)
        grads += grad
        commands.append({
            "index": len(commands), "kind": kind, "kernel": kernel, "origin": origin,
            "ms": round(n * rows / 3.6e12 * 1e3 * (1 + 0.01 * run), 6) if is_row_kernel else 0.004,
            "host_ms": 0.004, "bytes": n * rows + 4096 if norm and is_row_kernel else 4096})
    return {"step_ms": sum(c["ms"] for c in commands), "commands": commands}


def main():
    directory, out = sys.argv[1], sys.argv[2]
    here = os.path.dirname(os.path.abspath(__file__))
    models = json.load(open(os.path.join(directory, "models.json")))
    os.makedirs(os.path.join(out, "profiles"), exist_ok=True)
    with open(os.path.join(out, "copy_bandwidth.json"), "w") as f:
        json.dump({"copy_gb_per_s": 4200.0, "device": "synthetic"}, f)
    configs = []
    for model in models:
        for run in (1, 2, 3):
            with open(os.path.join(out, "profiles", f"{model['name']}.{run}.json"), "w") as f:
                json.dump(fake_profile(os.path.join(directory, model["name"] + ".plan.txt"), model, run), f)
        configs.append({"name": model["name"], "input_sets": 2,
                        "eager": {"fwd_ms": 0.1, "bwd_ms": 0.2},
                        "compile": {"fwd_ms": 0.09, "bwd_ms": 0.15, "compile_s": 3.0}})
    with open(os.path.join(out, "torch_norm.json"), "w") as f:
        json.dump({"system": {"torch": "synthetic", "device": "synthetic"}, "configs": configs}, f)
    summarize = [sys.executable, os.path.join(here, "summarize.py"), directory, out]
    subprocess.run(summarize, check=True)
    for key in ("rows",):
        assert len(json.load(open(os.path.join(out, "norm.json")))[key]) == 2 * len(models)

    # A profile without the norm gradient's launches must fail.
    first = models[0]["name"]
    path = os.path.join(out, "profiles", f"{first}.1.json")
    profile = json.load(open(path))
    profile["commands"] = [c for c in profile["commands"] if "_norm_grad'" not in c["origin"]]
    json.dump(profile, open(path, "w"))
    broken = subprocess.run(summarize, capture_output=True, text=True)
    assert broken.returncode != 0 and "expected 2 launches" in broken.stderr, broken.stderr
    print("selftest.py: summarize.py parsed the synthetic run, and refused the broken profile:\n  "
          + broken.stderr.strip())


if __name__ == "__main__":
    main()
