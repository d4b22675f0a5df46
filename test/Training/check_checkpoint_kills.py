#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""kill -9 during checkpoint saves never loses the previous checkpoint, and
every run resumed from what is left prints exactly the uninterrupted run's
step lines.

check_checkpoint_kills.py TXOPT_RUN STEP.mlir WORKDIR KILLS STEPS [FLAGS...]

Runs `TXOPT_RUN STEP.mlir --steps STEPS FLAGS` once as the reference, then
KILLS times `... --save CK --save-every 1 [--resume CK]`, each killed with
SIGKILL: the first attempts inside a save at each phase in turn
(TXRT_CHECKPOINT_KILL_AT, runtime/src/core/checkpoint.h), the others at a
random moment. After every kill the checkpoint must load (`--resume CK`,
nothing left to run or a normal continuation), never step back, and every
line any attempt printed must equal the reference's line for that step.
When a run completes, the folder is removed and the cycle starts over.
"""
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time

PHASES = ["data-partial", "data-written", "data-renamed", "manifest-written",
          "manifest-renamed", "cleaned"]
LINE = re.compile(r"^step (\d+)  .*$", re.M)


def lines(text):
    return {int(m.group(1)): m.group(0) for m in LINE.finditer(text)}


def main():
    tool, step, workdir, kills, steps = sys.argv[1:6]
    kills, steps = int(kills), int(steps)
    flags = sys.argv[6:]
    os.makedirs(workdir, exist_ok=True)
    base = [tool, step, "--steps", str(steps)] + flags
    started = time.monotonic()
    ref = lines(subprocess.run(base, capture_output=True, text=True, check=True).stdout)
    duration = time.monotonic() - started
    assert sorted(ref) == list(range(1, steps + 1)), sorted(ref)
    ck = os.path.join(workdir, "ck")
    shutil.rmtree(ck, ignore_errors=True)
    manifest = os.path.join(ck, "checkpoint.json")
    rng = random.Random(20240520)
    last_step, compared, resumed, cycles, in_save = 0, 0, 0, 0, 0
    for attempt in range(kills):
        command = base + ["--save", ck, "--save-every", "1"]
        if os.path.exists(manifest):
            command += ["--resume", ck]
            resumed += 1
        env = dict(os.environ)
        phase = PHASES[attempt % len(PHASES)] if attempt < 2 * len(PHASES) else None
        if phase:
            env["TXRT_CHECKPOINT_KILL_AT"] = phase
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=env)
        if not phase:
            time.sleep(rng.uniform(0.0, duration * 1.2))
            proc.send_signal(signal.SIGKILL)
        out, err = proc.communicate()
        if proc.returncode not in (0, -signal.SIGKILL):
            sys.exit(f"attempt {attempt}: exit {proc.returncode}: {err.strip()}")
        if phase and proc.returncode == -signal.SIGKILL:
            in_save += 1
        for s, line in lines(out).items():
            if ref[s] != line:
                sys.exit(f"attempt {attempt}: step {s} differs from the uninterrupted run:\n"
                         f"  {line}\n  {ref[s]}")
            compared += 1
        if not os.path.exists(manifest):
            if last_step:
                sys.exit(f"attempt {attempt}: the checkpoint of step {last_step} is gone")
            continue
        check = subprocess.run([tool, step, "--steps", "1", "--resume", ck] + flags,
                               capture_output=True, text=True)
        if check.returncode != 0:
            sys.exit(f"attempt {attempt} ({phase or 'random kill'}): the checkpoint does "
                     f"not load: {check.stderr.strip()}")
        with open(manifest) as f:
            saved = json.load(f)["step"]
        if saved < last_step:
            sys.exit(f"attempt {attempt}: the checkpoint went back from step {last_step} "
                     f"to {saved}")
        last_step = saved
        if saved == steps:  # a full run: start over
            shutil.rmtree(ck)
            last_step = 0
            cycles += 1
    # What is left resumes to the end, matching the reference.
    command = base + (["--resume", ck] if os.path.exists(manifest) else [])
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    for s, line in lines(out).items():
        if ref[s] != line:
            sys.exit(f"final resume: step {s} differs:\n  {line}\n  {ref[s]}")
        compared += 1
    print(f"checkpoint kills ok: {kills} kills ({in_save} inside a save), {resumed} "
          f"resumes, {cycles} completed runs, {compared} step lines equal the "
          f"uninterrupted run's")


if __name__ == "__main__":
    main()
