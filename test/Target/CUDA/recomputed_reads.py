"""Checks, in a `txopt --gpu-plan` listing, that each weight-gradient GEMM
named by --wgrad (m n k, e.g. "128 512 64") reads its GELU operand from a
buffer the launch right before it wrote, with the same kernel that wrote
the forward GEMM's operand (named by --fwd), into a different buffer.
Prints one line per pair; exits 1 if a pair breaks the rule or none is
found."""
import argparse
import re
import sys

ap = argparse.ArgumentParser()
ap.add_argument("plan")
ap.add_argument("--fwd", required=True, help="m n k of the forward GEMM")
ap.add_argument("--wgrad", required=True, help="m n k of the weight gradient")
args = ap.parse_args()

commands = [l for l in open(args.plan) if l.startswith(("launch ", "gemm ", "attention"))]
writer = {}  # slot -> (kernel, command index) of the last launch writing it
def shape(line):
    m = re.search(r"m=(\d+) n=(\d+) k=(\d+)", line)
    return " ".join(m.groups()) if m else None

forward = []
found = 0
for i, line in enumerate(commands):
    if line.startswith("launch "):
        kernel = line.split()[1]
        out = int(re.search(r"args=\[(\d+)", line).group(1))
        writer[out] = (kernel, i)
        continue
    if not line.startswith("gemm "):
        continue
    b = int(re.search(r" b=(\d+)", line).group(1))
    if shape(line) == args.fwd and " ta=0 tb=0 " in line:
        forward.append((b, writer.get(b)))
    elif shape(line) == args.wgrad:
        if not forward:
            print("weight gradient before any forward GEMM"); sys.exit(1)
        fb, (fkernel, _) = forward.pop()
        kernel, at = writer.get(b, (None, -1))
        ok = at == i - 1 and kernel == fkernel and b != fb
        print(f"wgrad reads slot {b} written by {kernel} {'just before' if at == i - 1 else 'earlier'}; "
              f"forward read slot {fb} from {fkernel}: {'ok' if ok else 'WRONG'}")
        if not ok:
            sys.exit(1)
        found += 1
print(f"{found} recomputed reads")
sys.exit(0 if found else 1)
