"""Checks, in a `txopt --gpu-plan` listing, that each weight-gradient GEMM
named by --wgrad (m n k, e.g. "128 512 64") reads its GELU operand from a
buffer the launch right before it wrote, with the same kernel that wrote
the forward GEMM's operand (named by --fwd: a GEMM of that shape without
transposes before the first gradient kernel, from the same ONNX node as
the weight gradient), into a different buffer. A GEMM computing the GELU
in its epilogue (tx-gemm-gelu) is that operand's writer "gemm_gelu".
With --by-column-sum the launch right before it is instead a column sum
(`_reduce_sum`) listing that buffer among its arguments, which no launch
since the forward GEMM wrote as its first output (the recompute is one of
the sum kernel's extra outputs, RecomputeScheduling.cpp).
Prints one line per pair; exits 1 if a pair breaks the rule or none is
found."""
import argparse
import re
import sys

ap = argparse.ArgumentParser()
ap.add_argument("plan")
ap.add_argument("--fwd", required=True, help="m n k of the forward GEMM")
ap.add_argument("--wgrad", required=True, help="m n k of the weight gradient")
ap.add_argument("--by-column-sum", action="store_true",
                help="the recompute is written by the column sum's kernel")
args = ap.parse_args()

commands = [l for l in open(args.plan) if l.startswith(("launch ", "gemm ", "attention"))]
writer = {}  # slot -> (kernel, command index) of the last launch writing it
mention = {}  # slot -> (kernel, command index) of the last launch listing it
def shape(line):
    m = re.search(r"m=(\d+) n=(\d+) k=(\d+)", line)
    return " ".join(m.groups()) if m else None

forward = {}  # origin -> (b slot, its writer) of each forward GEMM
found = 0
in_backward = False  # from the first gradient kernel on (the loss's)
for i, line in enumerate(commands):
    if line.startswith("launch "):
        kernel = line.split()[1]
        in_backward = in_backward or kernel.endswith("_grad")
        listed = [int(a) for a in re.search(r"args=\[([0-9, ]+)\]", line).group(1).split(",")]
        writer[listed[0]] = (kernel, i)
        for slot in listed:
            mention[slot] = (kernel, i)
        continue
    if not line.startswith("gemm "):
        continue
    b = int(re.search(r" b=(\d+)", line).group(1))
    origin = line.split("//")[-1].strip()
    # A GEMM with the GELU epilogue writes the GELU (its d) itself.
    if " gelu " in line:
        writer[int(re.search(r" d=(\d+)", line).group(1))] = ("gemm_gelu", i)
    if shape(line) == args.fwd and " ta=0 tb=0 " in line and not in_backward:
        forward[origin] = (b, writer.get(b, (None, -1)))
    elif shape(line) == args.wgrad and in_backward and origin in forward:
        fb, (fkernel, fat) = forward.pop(origin)
        if args.by_column_sum:
            kernel, at = mention.get(b, (None, -1))
            first_output = writer.get(b, (None, -1))[1] > fat
            ok = at == i - 1 and kernel.endswith("_reduce_sum") and not first_output and b != fb
            print(f"wgrad reads slot {b} listed by {kernel} {'just before' if at == i - 1 else 'earlier'}"
                  f"{', a first output since the forward' if first_output else ''}; "
                  f"forward read slot {fb} from {fkernel}: {'ok' if ok else 'WRONG'}")
        else:
            kernel, at = writer.get(b, (None, -1))
            ok = at == i - 1 and kernel == fkernel and b != fb
            print(f"wgrad reads slot {b} written by {kernel} {'just before' if at == i - 1 else 'earlier'}; "
                  f"forward read slot {fb} from {fkernel}: {'ok' if ok else 'WRONG'}")
        if not ok:
            sys.exit(1)
        found += 1
print(f"{found} recomputed reads")
sys.exit(0 if found else 1)
