#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Draws loss curves from --log JSONL files (txopt-run or txrun):

  scripts/plot_log.py run.jsonl [other.jsonl ...] -o curve.png [--smooth K] [--lr]

One line per file (labelled by file name), loss against step, and the
validation loss ({"step", "val_loss"} records, --val-data) dashed; --smooth K
adds a K-step moving average; --lr draws the learning rate on a second
axis; the gradient norm goes in a lower panel when the logs have it. A
step logged twice (a resumed run appending to its log) keeps its last
record. Needs matplotlib (scripts/setup.sh puts it in the test venv)."""
import argparse
import json
import os
import sys


def read(path):
    """The step records of |path| (a step logged twice keeps its last) and
    its validation records ({"step", "val_loss"}), each sorted by step."""
    records, val = {}, {}
    with open(path) as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                r = json.loads(line)
            except json.JSONDecodeError as e:
                sys.exit(f"{path}:{number}: not JSON: {e}")
            if "step" in r and "val_loss" in r:
                val[r["step"]] = r
                continue
            if "step" not in r or "loss" not in r:
                sys.exit(f"{path}:{number}: no step/loss in {line}")
            records[r["step"]] = r
    return [records[s] for s in sorted(records)], [val[s] for s in sorted(val)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("logs", nargs="+")
    parser.add_argument("-o", "--output", default="curve.png")
    parser.add_argument("--smooth", type=int, default=0)
    parser.add_argument("--lr", action="store_true", help="plot the learning rate too")
    parser.add_argument("--title", default=None)
    args = parser.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("plot_log.py needs matplotlib: .venv/bin/pip install matplotlib")

    runs = [(os.path.basename(p), *read(p)) for p in args.logs]
    has_norm = any(r.get("grad_norm") is not None for _, rs, _ in runs for r in rs)
    fig, axes = plt.subplots(2 if has_norm else 1, 1, sharex=True,
                             figsize=(8, 6 if has_norm else 4), squeeze=False)
    ax = axes[0][0]
    for label, records, val in runs:
        steps = [r["step"] for r in records]
        loss = [r["loss"] if r["loss"] is not None else float("nan") for r in records]
        (line,) = ax.plot(steps, loss, label=label, alpha=0.4 if args.smooth > 1 else 1.0)
        if val:
            # Validation (--val-data): the same colour, dashed, with markers.
            ax.plot([r["step"] for r in val],
                    [r["val_loss"] if r["val_loss"] is not None else float("nan") for r in val],
                    "--o", markersize=3, color=line.get_color(), label=f"{label} validation")
        if args.smooth > 1 and len(loss) >= args.smooth:
            k = args.smooth
            avg = [sum(loss[i - k + 1:i + 1]) / k for i in range(k - 1, len(loss))]
            ax.plot(steps[k - 1:], avg, color=line.get_color(), label=f"{label} ({k}-step mean)")
        if has_norm:
            axes[1][0].plot(steps, [r.get("grad_norm") for r in records], color=line.get_color(),
                            label=label)
    ax.set_ylabel("loss")
    ax.grid(alpha=0.3)
    ax.legend(loc="upper right", fontsize="small")
    if args.lr:
        twin = ax.twinx()
        for label, records, _ in runs:
            twin.plot([r["step"] for r in records], [r.get("lr") for r in records], "--",
                      linewidth=0.8, label=f"{label} lr")
        twin.set_ylabel("lr")
    if has_norm:
        axes[1][0].set_ylabel("grad norm")
        axes[1][0].grid(alpha=0.3)
    axes[-1][0].set_xlabel("step")
    ax.set_title(args.title or "training loss")
    fig.tight_layout()
    fig.savefig(args.output, dpi=120)
    last = ", ".join(f"{label}: step {rs[-1]['step']} loss {rs[-1]['loss']:.6g}"
                     for label, rs, _ in runs if rs)
    print(f"wrote {args.output} ({last})")


if __name__ == "__main__":
    main()
