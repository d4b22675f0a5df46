#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""An independent training reference for txopt: PyTorch autograd and
torch.optim.AdamW running the same ONNX forward+loss graph, from the same
initial weights, on the same token batches as `txopt-run --steps --data`.

    torch_reference.py MODEL.onnx --steps N --data TOKENS.npy
        [--device cuda|cpu] [--lr 1e-3] [--out DIR] [--dtype float32|float64]
        [--schedule cosine|linear|constant --warmup W --decay-steps D
         --min-lr Y] [--grad-accum N]

The ONNX graph is interpreted node by node with torch ops (one function per
op type, below), so autograd differentiates it; shape subgraphs are
evaluated eagerly like everything else (their values are constant for the
static input shapes). Nothing of txopt is used.

What is trained, as txopt does it (docs/Import.md, docs/Training.md):
  * every float initializer with more than one element whose values are
    all finite and below half the type's largest value is a parameter; a
    float initializer holding inf/NaN or a huge value (attention masks) is
    frozen; one-element floats and integer initializers are constants;
  * an initializer that nodes of several modules read because the
    exporter stored identical initializers once (all LayerNorm weights of a
    fresh GPT-2) is untied, one parameter per reading node, named as txopt's
    tx-untie-parameters names them (untie_shared_initializers below); an
    embedding reused as the LM head stays ONE parameter (tied); --tie and
    --untie as txopt's;
  * a parameter only `Shape` reads, or that nothing reads, is not trained;
  * AdamW (torch.optim.AdamW, foreach=False, fused=False): lr 1e-3,
    betas (0.9, 0.999), eps 1e-8, weight decay 0.01 on parameters of rank
    >= 2 and 0 on the others; no gradient clipping;
  * loss = graph output 0; grad_norm = sqrt(sum_i sum(g_i^2)) over all
    trained parameters before the update.

Batches, as txopt-run's StepLoop.cpp: the model's integer inputs are the token
argument and (optionally) the labels argument, the integer input that
reaches a SoftmaxCrossEntropyLoss's labels through integer ops. Step k
(1-based, as printed) uses tokens[o, o + n) for the data and
tokens[o + 1, o + n + 1) for the labels, n = batch * seq; before each step
o wraps to 0 if o + n + 1 > len(tokens); after it o += n.

Learning-rate schedules as txrun/txopt-run compute them (runtime/src/core/
training.cpp, LrSchedule::at), each step's lr rounded to f32 as they feed it
to the step's lr argument. Gradient accumulation as `txopt --grad-accum N`
compiles it: each step reads N consecutive windows (micro-batches), the
update sees the mean of their gradients (each micro-batch's loss divided by
N before backward), the printed loss is the mean of their losses, and the
dropout key of micro-batch m of step k is --seed * 2^32 + (k - 1) * N + m.

Prints `step N  loss L  grad_norm G` (%.9g) per step, like txopt-run and
txrun; lines starting with '#' are notes. With --out DIR writes every
trained parameter after the last step as DIR/<name>.npy, and its AdamW
moments as DIR/<name>.exp_avg.npy and DIR/<name>.exp_avg_sq.npy (float32; names
sanitized as txopt-run does: characters outside [A-Za-z0-9._-] become '_',
and a leading '.' (or an empty name) gets a '_' prefix).

Dropout is the identity unless training_mode is true with a ratio > 0 (the
dynamo GPT-2 export has five such). Then, by default (--dropout txopt), the
mask is txopt's own counter-based one (tx.dropout's description; seed =
the node's `seed` attribute, else xxh3-64 of its first output name, as the
importer does; key = --seed * 2^32 + k on step k counted from 0, as
txopt-run and txrun feed rng_key), so the run stays exact;
--dropout identity skips it, and a note says the comparison is not exact.
"""
import argparse
import math
import os
import re
import sys

import numpy as np
import onnx
from onnx import numpy_helper
import torch
import torch.nn.functional as F

# ----------------------------------------------------------------------------
# Types

_ONNX_TO_TORCH = {
    onnx.TensorProto.FLOAT: torch.float32,
    onnx.TensorProto.DOUBLE: torch.float64,
    onnx.TensorProto.FLOAT16: torch.float16,
    onnx.TensorProto.BFLOAT16: torch.bfloat16,
    onnx.TensorProto.INT8: torch.int8,
    onnx.TensorProto.UINT8: torch.uint8,
    onnx.TensorProto.INT16: torch.int16,
    onnx.TensorProto.INT32: torch.int32,
    onnx.TensorProto.INT64: torch.int64,
    onnx.TensorProto.BOOL: torch.bool,
    # Unsigned types wider than 8 bits have no torch equivalent with full
    # arithmetic; txopt treats them as signless of the same width.
    onnx.TensorProto.UINT16: torch.int16,
    onnx.TensorProto.UINT32: torch.int32,
    onnx.TensorProto.UINT64: torch.int64,
}
_FLOAT_TYPES = (onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE,
                onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16)


# ----------------------------------------------------------------------------
# Dropout as txopt draws it

# XXH3-64 (the default secret, inputs up to 240 bytes): txopt's importer seeds
# a Dropout without an ONNX `seed` with llvm::xxh3_64bits(first output name).
M = (1 << 64) - 1
_SECRET = bytes.fromhex(
    "b8fe6c3923a44bbe7c01812cf721ad1cded46de9839097db7240a4a4b7b3671f"
    "cb79e64eccc0e578825ad07dccff7221b8084674f743248ee03590e6813a264c"
    "3c2852bb91c300cb88d0658b1b532ea371644897a20df94e3819ef46a9deacd8"
    "a8fa763fe39c343ff9dcbbc7c70b4f1d8a51e04bcdb45931c89f7ec9d9787364"
    "eac5ac8334d3ebc3c581a0fffa1363eb170ddd51b7f0da49d316552629d4689e"
    "2b16be587d47a1fc8ff8b8d17ad031ce45cb3a8f95160428afd7fbcabb4b407e")
P64_1, P64_2, P64_3 = 0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9
MX1, MX2 = 0x165667919E3779F9, 0x9FB21C651E98DF25


def _r64(b, o): return int.from_bytes(b[o:o + 8], "little")
def _r32(b, o): return int.from_bytes(b[o:o + 4], "little")
def _rotl(x, r): return ((x << r) | (x >> (64 - r))) & M


def _xxh64_avalanche(h):
    h ^= h >> 33; h = (h * P64_2) & M
    h ^= h >> 29; h = (h * P64_3) & M
    return h ^ (h >> 32)


def _avalanche(h):
    h ^= h >> 37; h = (h * MX1) & M
    return h ^ (h >> 32)


def _fold(a, b):
    p = a * b
    return (p & M) ^ (p >> 64)


def _mix16(p, o, so, seed=0):
    s = _SECRET
    return _fold(_r64(p, o) ^ ((_r64(s, so) + seed) & M),
                 _r64(p, o + 8) ^ ((_r64(s, so + 8) - seed) & M))


def xxh3_64(data, seed=0):
    """XXH3-64 of bytes with the default secret (inputs up to 240 bytes)."""
    p, n, s = bytes(data), len(data), _SECRET
    if n == 0:
        return _xxh64_avalanche(seed ^ _r64(s, 56) ^ _r64(s, 64))
    if n <= 3:
        combined = (p[0] << 16) | (p[n >> 1] << 24) | p[n - 1] | (n << 8)
        bitflip = ((_r32(s, 0) ^ _r32(s, 4)) + seed) & M
        return _xxh64_avalanche(combined ^ bitflip)
    if n <= 8:
        sw = int.from_bytes((seed & 0xFFFFFFFF).to_bytes(4, "little"), "big")
        seed ^= (sw << 32) & M
        bitflip = ((_r64(s, 8) ^ _r64(s, 16)) - seed) & M
        h = (_r32(p, n - 4) + (_r32(p, 0) << 32)) ^ bitflip
        h ^= _rotl(h, 49) ^ _rotl(h, 24)
        h = (h * MX2) & M
        h ^= (h >> 35) + n
        h = (h * MX2) & M
        return h ^ (h >> 28)
    if n <= 16:
        lo = _r64(p, 0) ^ (((_r64(s, 24) ^ _r64(s, 32)) + seed) & M)
        hi = _r64(p, n - 8) ^ (((_r64(s, 40) ^ _r64(s, 48)) - seed) & M)
        swapped = int.from_bytes(lo.to_bytes(8, "little"), "big")
        return _avalanche((n + swapped + hi + _fold(lo, hi)) & M)
    if n <= 128:
        acc = (n * P64_1) & M
        if n > 32:
            if n > 64:
                if n > 96:
                    acc += _mix16(p, 48, 96, seed) + _mix16(p, n - 64, 112, seed)
                acc += _mix16(p, 32, 64, seed) + _mix16(p, n - 48, 80, seed)
            acc += _mix16(p, 16, 32, seed) + _mix16(p, n - 32, 48, seed)
        acc += _mix16(p, 0, 0, seed) + _mix16(p, n - 16, 16, seed)
        return _avalanche(acc & M)
    if n <= 240:
        acc = (n * P64_1) & M
        for i in range(8):
            acc += _mix16(p, 16 * i, 16 * i, seed)
        acc = _avalanche(acc & M)
        for i in range(8, n // 16):
            acc += _mix16(p, 16 * i, 16 * (i - 8) + 3, seed)
        acc += _mix16(p, n - 16, 136 - 17, seed)
        return _avalanche(acc & M)
    raise ValueError("xxh3_64: inputs over 240 bytes are not implemented")


def dropout_keep(seed, key, shape, ratio):
    """tx.dropout's mask (docs/Training.md; the reference executor's
    dropoutUniform): element i (row-major) is kept when u >= ratio, with
    s = seed + key * 0x2545F4914F6CDD1D, z = s + (i + 1) * 0x9E3779B97F4A7C15,
    splitmix64's finalizer, u = (z >> 11) * 2^-53; wrapping uint64."""
    n = int(np.prod(shape)) if len(shape) else 1
    with np.errstate(over="ignore"):
        s = np.uint64((seed + key * 0x2545F4914F6CDD1D) & M)
        z = s + (np.arange(1, n + 1, dtype=np.uint64) *
                 np.uint64(0x9E3779B97F4A7C15))
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    u = (z >> np.uint64(11)).astype(np.float64) * 2.0 ** -53
    return (u >= ratio).reshape(shape)


class Unsupported(Exception):
    pass


class Interp:
    """Evaluates one ONNX graph with torch ops."""

    def __init__(self, model, device, fdtype):
        self.model = model
        self.graph = model.graph
        self.device = device
        self.fdtype = fdtype  # the working float type (f32, or f64 to diagnose)
        self.opset = 1
        for o in model.opset_import:
            if o.domain in ("", "ai.onnx"):
                self.opset = o.version
        self.notes = []
        self.dropout = "txopt"  # or "identity"
        self.rng_key = 0        # txopt's rng_key of the current step

    # -- helpers -------------------------------------------------------------
    def torch_type(self, onnx_type):
        if onnx_type in _FLOAT_TYPES:
            # f64 diagnosis runs every float in f64; in f32 mode keep the
            # model's own types (bf16/f16 casts stay what they are).
            if self.fdtype == torch.float64:
                return torch.float64
            return _ONNX_TO_TORCH[onnx_type]
        if onnx_type not in _ONNX_TO_TORCH:
            raise Unsupported("element type %s" %
                              onnx.TensorProto.DataType.Name(onnx_type))
        return _ONNX_TO_TORCH[onnx_type]

    def from_numpy(self, array, onnx_type):
        t = torch.from_numpy(np.ascontiguousarray(array).copy())
        return t.to(device=self.device, dtype=self.torch_type(onnx_type))

    def tensor_attr(self, tp):
        return self.from_numpy(numpy_helper.to_array(tp), tp.data_type)

    @staticmethod
    def ints(t):
        return [int(v) for v in t.reshape(-1).tolist()]

    # -- running -------------------------------------------------------------
    def run(self, env, record=None):
        """Runs every node; env maps names to tensors (inputs and
        initializers) and receives every output. record(node, inputs) is
        called before each node."""
        for node in self.graph.node:
            if node.domain not in ("", "ai.onnx"):
                raise Unsupported("node '%s': domain '%s' op %s" %
                                  (node.name, node.domain, node.op_type))
            fn = getattr(self, "op_" + node.op_type, None)
            if fn is None:
                raise Unsupported("node '%s': op %s" % (node.name, node.op_type))
            ins = [env[n] if n else None for n in node.input]
            if record is not None:
                record(node, ins)
            attrs = {a.name: onnx.helper.get_attribute_value(a)
                     for a in node.attribute}
            outs = fn(ins, attrs, node)
            if not isinstance(outs, (list, tuple)):
                outs = [outs]
            for name, value in zip(node.output, outs):
                if name:
                    env[name] = value
        return env

    # -- elementwise ---------------------------------------------------------
    def op_Add(self, i, a, n): return i[0] + i[1]
    def op_Sub(self, i, a, n): return i[0] - i[1]
    def op_Mul(self, i, a, n): return i[0] * i[1]

    def op_Div(self, i, a, n):
        if i[0].is_floating_point():
            return i[0] / i[1]
        return torch.div(i[0], i[1], rounding_mode="trunc")

    def op_Mod(self, i, a, n):
        if a.get("fmod", 0) or i[0].is_floating_point():
            return torch.fmod(i[0], i[1])
        return torch.remainder(i[0], i[1])

    def op_Pow(self, i, a, n):
        x, y = i
        if y.numel() == 1 and not y.requires_grad:
            # A constant exponent (x^2, x^0.5): the scalar overload, whose
            # backward is y * x^(y-1) without a log term.
            e = y.reshape(()).item()
            if float(e).is_integer():
                e = int(e)
            out = torch.pow(x, e)
            return out.reshape(torch.broadcast_shapes(x.shape, y.shape))
        return torch.pow(x, y.to(x.dtype) if x.is_floating_point() else y)

    def op_Sqrt(self, i, a, n): return torch.sqrt(i[0])
    def op_Reciprocal(self, i, a, n): return torch.reciprocal(i[0])
    def op_Neg(self, i, a, n): return torch.neg(i[0])
    def op_Abs(self, i, a, n): return torch.abs(i[0])
    def op_Tanh(self, i, a, n): return torch.tanh(i[0])
    def op_Sigmoid(self, i, a, n): return torch.sigmoid(i[0])
    def op_Relu(self, i, a, n): return torch.relu(i[0])
    def op_Exp(self, i, a, n): return torch.exp(i[0])
    def op_Log(self, i, a, n): return torch.log(i[0])
    def op_Erf(self, i, a, n): return torch.erf(i[0])
    def op_Sin(self, i, a, n): return torch.sin(i[0])
    def op_Cos(self, i, a, n): return torch.cos(i[0])
    def op_IsNaN(self, i, a, n): return torch.isnan(i[0])
    def op_Not(self, i, a, n): return torch.logical_not(i[0])
    def op_And(self, i, a, n): return torch.logical_and(i[0], i[1])
    def op_Or(self, i, a, n): return torch.logical_or(i[0], i[1])
    def op_Xor(self, i, a, n): return torch.logical_xor(i[0], i[1])
    def op_Equal(self, i, a, n): return torch.eq(i[0], i[1])
    def op_Less(self, i, a, n): return torch.lt(i[0], i[1])
    def op_LessOrEqual(self, i, a, n): return torch.le(i[0], i[1])
    def op_Greater(self, i, a, n): return torch.gt(i[0], i[1])
    def op_GreaterOrEqual(self, i, a, n): return torch.ge(i[0], i[1])

    def op_Max(self, i, a, n):
        out = i[0]
        for x in i[1:]:
            out = torch.maximum(out, x)
        return out

    def op_Min(self, i, a, n):
        out = i[0]
        for x in i[1:]:
            out = torch.minimum(out, x)
        return out

    def op_Where(self, i, a, n):
        return torch.where(i[0].bool(), i[1], i[2])

    def op_Identity(self, i, a, n): return i[0]

    def op_Cast(self, i, a, n):
        return i[0].to(self.torch_type(a["to"]))

    def op_CastLike(self, i, a, n):
        return i[0].to(i[1].dtype)

    def op_Dropout(self, i, a, n):
        x = i[0]
        ratio = 0.5
        training = False
        if len(i) > 1 and i[1] is not None:
            # txopt keeps the ratio as an f32 attribute.
            ratio = float(np.float32(i[1].reshape(()).item()))
        if len(i) > 2 and i[2] is not None:
            training = bool(i[2].reshape(()).item())
        keep_all = torch.ones(x.shape, dtype=torch.bool, device=x.device)
        if not training or ratio == 0:
            return [x, keep_all]
        if self.dropout == "identity":
            note = ("Dropout '%s' has training_mode true, ratio %g: run here as "
                    "the identity (--dropout identity), so the comparison is "
                    "NOT exact" % (n.name, ratio))
            if note not in self.notes:
                self.notes.append(note)
            return [x, keep_all]
        # txopt's tx.dropout: the same mask on every executor.
        if "seed" in a:
            seed = a["seed"] & M
        else:
            seed = xxh3_64(n.output[0].encode()) if n.output else xxh3_64(b"")
        keep = torch.from_numpy(dropout_keep(seed, self.rng_key, tuple(x.shape),
                                             ratio)).to(x.device)
        scale = 1.0 / (1.0 - ratio)
        note = ("Dropout '%s' (training, ratio %g): txopt's mask, seed %d" %
                (n.name, ratio, seed))
        if note not in self.notes:
            self.notes.append(note)
        if x.dtype == torch.float32:
            # The executor scales in double and rounds once.
            y = (x.double() * scale).float()
        else:
            y = x * scale
        return [torch.where(keep, y, torch.zeros((), dtype=x.dtype, device=x.device)),
                keep]

    # -- linear algebra ------------------------------------------------------
    def op_MatMul(self, i, a, n): return torch.matmul(i[0], i[1])

    def op_Gemm(self, i, a, n):
        A, B = i[0], i[1]
        if a.get("transA", 0):
            A = A.transpose(0, 1)
        if a.get("transB", 0):
            B = B.transpose(0, 1)
        out = torch.matmul(A, B)
        alpha = a.get("alpha", 1.0)
        if alpha != 1.0:
            out = out * alpha
        if len(i) > 2 and i[2] is not None:
            C = i[2]
            beta = a.get("beta", 1.0)
            if beta != 1.0:
                C = C * beta
            out = out + C
        return out

    # -- normalization, softmax, loss ----------------------------------------
    def op_Softmax(self, i, a, n):
        x = i[0]
        if self.opset >= 13:
            return torch.softmax(x, dim=a.get("axis", -1))
        axis = a.get("axis", 1) % max(x.dim(), 1)
        flat = x.reshape(int(np.prod(x.shape[:axis])), -1)
        return torch.softmax(flat, dim=1).reshape(x.shape)

    def op_LogSoftmax(self, i, a, n):
        x = i[0]
        if self.opset >= 13:
            return torch.log_softmax(x, dim=a.get("axis", -1))
        axis = a.get("axis", 1) % max(x.dim(), 1)
        flat = x.reshape(int(np.prod(x.shape[:axis])), -1)
        return torch.log_softmax(flat, dim=1).reshape(x.shape)

    def op_LayerNormalization(self, i, a, n):
        x, scale = i[0], i[1]
        bias = i[2] if len(i) > 2 else None
        axis = a.get("axis", -1) % x.dim()
        eps = a.get("epsilon", 1e-5)
        shape = tuple(x.shape[axis:])
        y = F.layer_norm(x, shape, scale.expand(shape) if scale.shape != shape else scale,
                         None if bias is None else
                         (bias.expand(shape) if bias.shape != shape else bias), eps)
        outs = [y]
        if len(n.output) > 1:
            dims = list(range(axis, x.dim()))
            mean = x.mean(dim=dims, keepdim=True)
            var = ((x - mean) ** 2).mean(dim=dims, keepdim=True)
            outs += [mean, torch.rsqrt(var + eps)]
        return outs

    def op_RMSNormalization(self, i, a, n):
        x, scale = i[0], i[1]
        axis = a.get("axis", -1) % x.dim()
        eps = a.get("epsilon", 1e-5)
        dims = list(range(axis, x.dim()))
        return x * torch.rsqrt((x * x).mean(dim=dims, keepdim=True) + eps) * scale

    def op_SoftmaxCrossEntropyLoss(self, i, a, n):
        scores, labels = i[0], i[1]
        weights = i[2] if len(i) > 2 else None
        reduction = a.get("reduction", b"mean")
        if isinstance(reduction, bytes):
            reduction = reduction.decode()
        # ONNX without ignore_index ignores nothing; torch's default is -100.
        ignore = a.get("ignore_index", -(2 ** 62))
        logp = torch.log_softmax(scores, dim=1)
        loss = F.nll_loss(logp, labels.long(), weight=weights,
                          ignore_index=int(ignore), reduction=reduction)
        return [loss, logp]

    # -- reductions ----------------------------------------------------------
    def _axes(self, i, a, input_from):
        if self.opset >= input_from:
            if len(i) > 1 and i[1] is not None:
                return self.ints(i[1])
            return []
        return list(a.get("axes", []))

    def _reduce(self, fn, i, a, input_from):
        x = i[0]
        axes = self._axes(i, a, input_from)
        keep = bool(a.get("keepdims", 1))
        if not axes:
            if a.get("noop_with_empty_axes", 0):
                return x
            axes = list(range(x.dim()))
        axes = sorted(ax % max(x.dim(), 1) for ax in axes)
        return fn(x, axes, keep)

    def op_ReduceMean(self, i, a, n):
        return self._reduce(lambda x, d, k: x.mean(dim=d, keepdim=k), i, a, 18)

    def op_ReduceSum(self, i, a, n):
        return self._reduce(lambda x, d, k: x.sum(dim=d, keepdim=k), i, a, 13)

    def op_ReduceMax(self, i, a, n):
        return self._reduce(lambda x, d, k: torch.amax(x, dim=d, keepdim=k), i, a, 18)

    def op_ReduceMin(self, i, a, n):
        return self._reduce(lambda x, d, k: torch.amin(x, dim=d, keepdim=k), i, a, 18)

    def op_CumSum(self, i, a, n):
        x = i[0]
        axis = self.ints(i[1])[0]
        if a.get("reverse", 0):
            x = x.flip(axis)
        out = torch.cumsum(x, dim=axis)
        if a.get("exclusive", 0):
            out = out - x
        if a.get("reverse", 0):
            out = out.flip(axis)
        return out

    # -- shapes and data movement --------------------------------------------
    def op_Shape(self, i, a, n):
        shape = list(i[0].shape)
        start = a.get("start", 0)
        end = a.get("end", None)
        shape = shape[slice(start, end)]
        return torch.tensor(shape, dtype=torch.int64, device=self.device)

    def op_Size(self, i, a, n):
        return torch.tensor(i[0].numel(), dtype=torch.int64, device=self.device)

    def op_Constant(self, i, a, n):
        if "value" in a:
            return self.tensor_attr(a["value"])
        if "value_float" in a:
            return torch.tensor(a["value_float"], dtype=self.torch_type(onnx.TensorProto.FLOAT),
                                device=self.device)
        if "value_floats" in a:
            return torch.tensor(list(a["value_floats"]),
                                dtype=self.torch_type(onnx.TensorProto.FLOAT),
                                device=self.device)
        if "value_int" in a:
            return torch.tensor(a["value_int"], dtype=torch.int64, device=self.device)
        if "value_ints" in a:
            return torch.tensor(list(a["value_ints"]), dtype=torch.int64, device=self.device)
        raise Unsupported("node '%s': Constant with attribute %s" % (n.name, list(a)))

    def op_ConstantOfShape(self, i, a, n):
        shape = self.ints(i[0])
        if "value" in a:
            v = self.tensor_attr(a["value"]).reshape(())
            return torch.full(shape, v.item(), dtype=v.dtype, device=self.device)
        return torch.zeros(shape, dtype=self.torch_type(onnx.TensorProto.FLOAT),
                           device=self.device)

    def op_Range(self, i, a, n):
        start, limit, delta = (x.reshape(()).item() for x in i)
        return torch.arange(start, limit, delta, dtype=i[0].dtype, device=self.device)

    def op_Reshape(self, i, a, n):
        x = i[0]
        shape = self.ints(i[1])
        if not a.get("allowzero", 0):
            shape = [x.shape[k] if s == 0 else s for k, s in enumerate(shape)]
        return x.reshape(shape)

    def op_Flatten(self, i, a, n):
        x = i[0]
        axis = a.get("axis", 1) % (x.dim() + 1) if x.dim() else 0
        outer = int(np.prod(x.shape[:axis])) if axis else 1
        return x.reshape(outer, -1)

    def op_Transpose(self, i, a, n):
        x = i[0]
        perm = a.get("perm", None)
        if perm is None:
            perm = list(range(x.dim()))[::-1]
        return x.permute(*perm)

    def op_Unsqueeze(self, i, a, n):
        x = i[0]
        axes = self.ints(i[1]) if self.opset >= 13 else list(a["axes"])
        rank = x.dim() + len(axes)
        for ax in sorted(ax % rank for ax in axes):
            x = x.unsqueeze(ax)
        return x

    def op_Squeeze(self, i, a, n):
        x = i[0]
        if self.opset >= 13:
            axes = self.ints(i[1]) if len(i) > 1 and i[1] is not None else None
        else:
            axes = list(a["axes"]) if "axes" in a else None
        if axes is None:
            return x.squeeze()
        for ax in sorted((ax % x.dim() for ax in axes), reverse=True):
            x = x.squeeze(ax)
        return x

    def op_Expand(self, i, a, n):
        x = i[0]
        shape = torch.broadcast_shapes(tuple(x.shape), tuple(self.ints(i[1])))
        return x.expand(shape)

    def op_Concat(self, i, a, n):
        xs = [x for x in i if x is not None]
        return torch.cat(xs, dim=a["axis"])

    def op_Split(self, i, a, n):
        x = i[0]
        axis = a.get("axis", 0) % x.dim()
        dim = x.shape[axis]
        count = len(n.output)
        if self.opset >= 13 and len(i) > 1 and i[1] is not None:
            sizes = self.ints(i[1])
        elif self.opset < 13 and "split" in a:
            sizes = list(a["split"])
        elif "num_outputs" in a:
            k = a["num_outputs"]
            piece = -(-dim // k)  # ceil: the last piece is the smaller one
            sizes = [piece] * (k - 1) + [dim - piece * (k - 1)]
        else:
            sizes = [dim // count] * count
        return list(torch.split(x, sizes, dim=axis))

    def op_Slice(self, i, a, n):
        x = i[0]
        if self.opset >= 10:
            starts = self.ints(i[1])
            ends = self.ints(i[2])
            axes = self.ints(i[3]) if len(i) > 3 and i[3] is not None else \
                list(range(len(starts)))
            steps = self.ints(i[4]) if len(i) > 4 and i[4] is not None else \
                [1] * len(starts)
        else:
            starts, ends = list(a["starts"]), list(a["ends"])
            axes = list(a.get("axes", range(len(starts))))
            steps = [1] * len(starts)
        for s, e, ax, st in zip(starts, ends, axes, steps):
            ax %= x.dim()
            dim = x.shape[ax]
            # Python's slice clamping is ONNX's (negative values count from
            # the end; then clamped to [0, dim] forward, [-1, dim-1] backward).
            lo, hi, step = slice(s, e, st).indices(dim)
            if step == 1:
                x = x.narrow(ax, lo, max(hi - lo, 0))
            else:
                idx = torch.tensor(list(range(lo, hi, step)), dtype=torch.int64,
                                   device=x.device)
                x = x.index_select(ax, idx)
        return x

    def op_Gather(self, i, a, n):
        x, idx = i
        axis = a.get("axis", 0) % x.dim()
        idx = idx.long()
        idx = torch.where(idx < 0, idx + x.shape[axis], idx)
        out = x.index_select(axis, idx.reshape(-1))
        return out.reshape(tuple(x.shape[:axis]) + tuple(idx.shape) +
                           tuple(x.shape[axis + 1:]))

    def op_GatherElements(self, i, a, n):
        x, idx = i
        axis = a.get("axis", 0) % x.dim()
        idx = idx.long()
        idx = torch.where(idx < 0, idx + x.shape[axis], idx)
        return torch.gather(x, axis, idx)

    def op_Trilu(self, i, a, n):
        x = i[0]
        k = int(i[1].reshape(()).item()) if len(i) > 1 and i[1] is not None else 0
        if a.get("upper", 1):
            return torch.triu(x, k)
        return torch.tril(x, k)

    def op_Pad(self, i, a, n):
        x = i[0]
        mode = a.get("mode", b"constant")
        if isinstance(mode, bytes):
            mode = mode.decode()
        if self.opset >= 11:
            pads = self.ints(i[1])
            value = i[2].reshape(()).item() if len(i) > 2 and i[2] is not None else 0
            axes = self.ints(i[3]) if len(i) > 3 and i[3] is not None else \
                list(range(x.dim()))
        else:
            pads = list(a["pads"])
            value = a.get("value", 0.0)
            axes = list(range(x.dim()))
        axes = [ax % x.dim() for ax in axes]
        k = len(axes)
        begin = {ax: pads[j] for j, ax in enumerate(axes)}
        end = {ax: pads[j + k] for j, ax in enumerate(axes)}
        torch_pads = []
        for ax in reversed(range(x.dim())):
            torch_pads += [begin.get(ax, 0), end.get(ax, 0)]
        if mode == "constant":
            return F.pad(x, torch_pads, mode="constant", value=value)
        if mode not in ("edge", "reflect", "wrap"):
            raise Unsupported("node '%s': Pad mode %s" % (n.name, mode))
        # Per axis, as an index_select (differentiable, any rank).
        for ax in range(x.dim()):
            b, e = begin.get(ax, 0), end.get(ax, 0)
            if b < 0:
                x, b = x.narrow(ax, -b, x.shape[ax] + b), 0
            if e < 0:
                x, e = x.narrow(ax, 0, x.shape[ax] + e), 0
            if b == 0 and e == 0:
                continue
            dim = x.shape[ax]
            idx = []
            for j in range(-b, dim + e):
                if mode == "edge":
                    k = min(max(j, 0), dim - 1)
                elif mode == "wrap":
                    k = j % dim
                else:  # reflect, without repeating the edge
                    period = 2 * (dim - 1) if dim > 1 else 1
                    k = j % period
                    k = period - k if k >= dim else k
                idx.append(k)
            x = x.index_select(ax, torch.tensor(idx, dtype=torch.int64, device=x.device))
        return x


# ----------------------------------------------------------------------------
# The training problem


def find_labels_input(model, int_inputs):
    """The integer graph input that reaches a SoftmaxCrossEntropyLoss's labels
    (input 1) through integer ops (Shape cuts the dependence: txopt folds it
    to a constant). None when no input does."""
    producer = {}
    for node in model.graph.node:
        for o in node.output:
            producer[o] = node
    found = set()
    for node in model.graph.node:
        if node.op_type != "SoftmaxCrossEntropyLoss" or len(node.input) < 2:
            continue
        stack, seen = [node.input[1]], set()
        while stack:
            name = stack.pop()
            if name in seen or not name:
                continue
            seen.add(name)
            if name in int_inputs:
                found.add(name)
                continue
            p = producer.get(name)
            if p is None or p.op_type in ("Shape", "Size"):
                continue
            stack.extend(p.input)
    if len(found) > 1:
        raise SystemExit("torch_reference: several inputs reach the loss's "
                         "labels: %s" % sorted(found))
    return next(iter(found)) if found else None


def read_tokens(path):
    if path.endswith(".npy"):
        arr = np.load(path)
        if arr.ndim != 1 or not np.issubdtype(arr.dtype, np.integer):
            raise SystemExit("--data '%s': expected a 1-D integer array" % path)
        return arr.astype(np.int64)
    raw = open(path, "rb").read()
    header = np.frombuffer(raw[:1024], dtype="<i4")
    if len(header) < 256 or header[0] != 20240520 or header[1] != 1:
        raise SystemExit("--data '%s': not an llm.c token file" % path)
    count = int(header[2])
    return np.frombuffer(raw[1024:1024 + 2 * count], dtype="<u2").astype(np.int64)


def npy_file_name(name):
    out = "".join(c if (c.isascii() and c.isalnum()) or c in "._-" else "_"
                  for c in name)
    if not out or out[0] == ".":
        out = "_" + out
    return out + ".npy"


def classify_initializer(init):
    """'param', 'frozen' or 'constant', as txopt's importer decides."""
    if init.data_type not in _FLOAT_TYPES:
        return "constant"
    arr = numpy_helper.to_array(init)
    if arr.size <= 1:
        return "constant"
    a64 = arr.astype(np.float64)
    if arr.dtype == np.float16 or init.data_type == onnx.TensorProto.FLOAT16:
        big = 65504.0
    elif init.data_type == onnx.TensorProto.BFLOAT16:
        big = 3.3895313892515355e38
    elif init.data_type == onnx.TensorProto.DOUBLE:
        big = np.finfo(np.float64).max
    else:
        big = float(np.finfo(np.float32).max)
    if not np.all(np.isfinite(a64)) or np.max(np.abs(a64)) >= big / 2:
        return "frozen"
    return "param"


def module_scope(node):
    """The PyTorch module a node comes from ("h.0.ln_2"), or "": as txopt's
    importer reads it (ONNXImporter.cpp, moduleScope)."""
    for prop in getattr(node, "metadata_props", []):
        if prop.key == "pkg.torch.onnx.name_scopes":
            scopes = re.findall(r"'([^']*)'|\"([^\"]*)\"", prop.value)
            scopes = [a or b for a, b in scopes]
            return scopes[-2] if len(scopes) >= 2 else ""
    if node.name.startswith("/"):
        return ".".join(node.name[1:].split("/")[:-1])
    return ""


def untie_shared_initializers(model, tie=None, untie=None):
    """Rewrites |model| as txopt's tx-untie-parameters pass rewrites its IR
    (Passes.td): a trainable initializer that nodes of several modules read,
    named after one of those modules ("<scope>.<leaf>"), keeps its name for
    that module's node and gets a copy for every other reading node, named
    "<scope>.<leaf>" (else "<name>.<k>", k its reader's position); an embedding reused as the LM head (exactly one reader is
    a Gather reading it as its table), a constant computed once and read by
    several modules, and initializers of exports without module scopes stay
    shared. |tie| / |untie| are txopt's --tie / --untie regexes. Returns
    ([(name, [copies])], [(name, reason)])."""
    graph = model.graph
    inits = {t.name: t for t in graph.initializer}
    # The importer forwards Identity: its readers read the initializer. The
    # TorchScript exporter writes one Identity per deduplicated use, its
    # output named as the lost initializer was: read the source directly and
    # drop those Identities, so a copy may take that name.
    outputs = {o.name for o in graph.output}
    alias = {}
    for node in list(graph.node):
        if (node.op_type == "Identity" and node.input and
                alias.get(node.input[0], node.input[0]) in inits and
                node.output[0] not in outputs):
            alias[node.output[0]] = alias.get(node.input[0], node.input[0])
            graph.node.remove(node)
    for node in graph.node:
        for pos, name in enumerate(node.input):
            if name in alias:
                node.input[pos] = alias[name]
    readers = {}  # initializer -> [(node, [input positions])] in node order
    for node in graph.node:
        if node.op_type in ("Shape", "Size"):
            continue
        for pos, src in enumerate(node.input):
            if src in inits:
                entry = readers.setdefault(src, [])
                if not entry or entry[-1][0] is not node:
                    entry.append((node, []))
                entry[-1][1].append(pos)
    tie_re = re.compile(tie) if tie else None
    untie_re = re.compile(untie) if untie else None
    taken = set(inits) | {o for n in graph.node for o in n.output} | \
        {i.name for i in graph.input}
    untied, kept = [], []
    for name, nodes in readers.items():
        if len(nodes) < 2 or classify_initializer(inits[name]) != "param":
            continue
        scopes = [module_scope(n) for n, _ in nodes]
        owns = lambda sc: bool(sc) and name.startswith(sc + ".") and \
            "." not in name[len(sc) + 1:]
        embeddings = sum(1 for n, pos in nodes if n.op_type == "Gather" and 0 in pos)
        distinct = set(scopes)
        reason = ""
        if embeddings == 1:
            reason = "an embedding reused as the LM head"
        elif len(distinct) == 1:
            reason = ("the export names no modules to untie it by"
                      if not scopes[0] else "read by one module only")
        elif not any(owns(sc) for sc in distinct):
            reason = ("not a module's own parameter: a computed constant "
                      "several modules read")
        if not reason and tie_re and tie_re.search(name):
            reason = "kept by --tie"
        if untie_re and untie_re.search(name):
            reason = ""
        if reason:
            kept.append((name, reason))
            continue
        leaf = name.rsplit(".", 1)[1] if "." in name else name
        copies = []
        # The owning module's reader keeps the name, else the first reader.
        keeper = next((k for k, sc in enumerate(scopes) if owns(sc)), 0)
        for k, ((node, positions), scope) in enumerate(zip(nodes, scopes)):
            if k == keeper:
                continue
            copy = scope + "." + leaf if scope else ""
            if not copy or copy in taken:
                copy = "%s.%d" % (name, k)
                j = 1
                while copy in taken:
                    copy = "%s.%d_%d" % (name, k, j)
                    j += 1
            taken.add(copy)
            tensor = onnx.TensorProto()
            tensor.CopyFrom(inits[name])
            tensor.name = copy
            graph.initializer.append(tensor)
            for pos in positions:
                node.input[pos] = copy
            copies.append(copy)
        untied.append((name, copies))
    return untied, kept


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("model")
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--data", required=True, help="token file (.npy or llm.c .bin)")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--weight-decay", type=float, default=0.01)
    p.add_argument("--freeze", default=None,
                   help="regex: parameters whose name matches are frozen "
                        "(txopt --freeze)")
    p.add_argument("--tie", default=None,
                   help="regex: shared parameters kept tied (txopt --tie)")
    p.add_argument("--untie", default=None,
                   help="regex: shared parameters untied (txopt --untie)")
    p.add_argument("--out", default=None, help="write trained parameters here")
    p.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    p.add_argument("--schedule", choices=["cosine", "linear", "constant"], default=None)
    p.add_argument("--warmup", type=int, default=0)
    p.add_argument("--decay-steps", type=int, default=None)
    p.add_argument("--min-lr", type=float, default=0.0)
    p.add_argument("--grad-accum", type=int, default=1)
    p.add_argument("--dropout", choices=["txopt", "identity"], default="txopt",
                   help="training-mode Dropout: txopt's counter-based mask "
                        "(exact), or the identity")
    p.add_argument("--seed", type=int, default=0,
                   help="txopt-run's --seed: step k's dropout key is "
                        "seed * 2^32 + k")
    p.add_argument("--input-shape", action="append", default=[],
                   help="NAME=D0xD1 for symbolic input dims")
    args = p.parse_args(argv)

    torch.manual_seed(0)
    if args.device.startswith("cuda"):
        # Exact f32 everywhere: no TF32 in matmuls.
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    fdtype = torch.float64 if args.dtype == "float64" else torch.float32
    device = torch.device(args.device)

    model = onnx.load(args.model)
    untied, kept_tied = untie_shared_initializers(model, args.tie, args.untie)
    interp = Interp(model, device, fdtype)
    interp.dropout = args.dropout
    graph = model.graph

    # Parameters and constants.
    inits = {t.name: t for t in graph.initializer}
    readers = {}  # initializer name -> set of op types reading it
    for node in graph.node:
        for name in node.input:
            if name in inits:
                readers.setdefault(name, set()).add(node.op_type)
    freeze_re = re.compile(args.freeze) if args.freeze else None
    const_env, params, frozen, unused = {}, {}, [], []
    for name, init in inits.items():
        kind = classify_initializer(init)
        if kind == "param" and freeze_re and freeze_re.search(name):
            kind = "frozen"
        arr = numpy_helper.to_array(init)
        if kind == "param":
            if not (readers.get(name, set()) - {"Shape", "Size"}):
                unused.append(name)
                const_env[name] = interp.from_numpy(arr, init.data_type)
                continue
            # f32 master weights (f64 when diagnosing), whatever the
            # initializer's float type.
            t = torch.from_numpy(arr.astype(np.float64 if fdtype == torch.float64
                                            else np.float32))
            params[name] = (t.to(device).requires_grad_(True),
                            interp.torch_type(init.data_type))
        else:
            if kind == "frozen":
                frozen.append(name)
            const_env[name] = interp.from_numpy(arr, init.data_type)

    # Batch inputs.
    input_shapes = {}
    for spec in args.input_shape:
        k, v = spec.split("=", 1)
        input_shapes[k] = [int(d) for d in v.split("x")]
    batch_inputs = {}
    for inp in graph.input:
        if inp.name in inits:
            continue
        tt = inp.type.tensor_type
        shape = input_shapes.get(inp.name) or [d.dim_value for d in tt.shape.dim]
        if any(d <= 0 for d in shape):
            raise SystemExit("input '%s' has a symbolic dim; give --input-shape" %
                             inp.name)
        if tt.elem_type in _FLOAT_TYPES or tt.elem_type == onnx.TensorProto.BOOL:
            raise SystemExit("input '%s' is not an integer token input" % inp.name)
        batch_inputs[inp.name] = (shape, tt.elem_type)
    labels_name = find_labels_input(model, set(batch_inputs))
    data_names = [n for n in batch_inputs if n != labels_name]
    if len(data_names) != 1:
        raise SystemExit("--data fills one token argument (and optionally one "
                         "labels argument), but the model has %d: %s" %
                         (len(data_names), data_names))
    data_name = data_names[0]
    data_shape = batch_inputs[data_name][0]
    if labels_name and batch_inputs[labels_name][0] != data_shape:
        raise SystemExit("labels '%s' and tokens '%s' have different shapes" %
                         (labels_name, data_name))
    window = int(np.prod(data_shape))
    tokens = read_tokens(args.data)
    if len(tokens) < window + 1:
        raise SystemExit("--data holds %d tokens; one batch needs %d" %
                         (len(tokens), window + 1))

    # The optimizer: decay on rank >= 2 only.
    decay = [t for t, _ in params.values() if t.dim() >= 2]
    no_decay = [t for t, _ in params.values() if t.dim() < 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": args.weight_decay},
         {"params": no_decay, "weight_decay": 0.0}],
        lr=args.lr, betas=(0.9, 0.999), eps=1e-8, foreach=False, fused=False)

    print("# torch_reference: %s opset %d, torch %s, device %s, %s" %
          (os.path.basename(args.model), interp.opset, torch.__version__, device,
           args.dtype))
    print("# data '%s' %s, labels %s, window %d of %d tokens" %
          (data_name, "x".join(map(str, data_shape)),
           "'%s'" % labels_name if labels_name else "none", window, len(tokens)))
    print("# trained %d parameters (%d elements; %d with weight decay), "
          "frozen %d%s" %
          (len(params), sum(t.numel() for t, _ in params.values()), len(decay),
           len(frozen), (": " + ", ".join(frozen)) if frozen else ""))
    if unused:
        print("# not trained (only Shape reads them, or nothing): " + ", ".join(unused))
    for name, copies in untied:
        print("# untied '%s' into %d: %s" % (name, len(copies) + 1, ", ".join(copies)))
    for name, reason in kept_tied:
        print("# kept tied '%s': %s" % (name, reason))

    def lr_at(step):
        # LrSchedule::at, then rounded to f32 as the lr argument holds it.
        lr, warmup = args.lr, args.warmup
        decay = args.decay_steps if args.decay_steps is not None else args.steps
        if args.schedule is None:
            value = lr
        elif warmup > 0 and step <= warmup:
            value = lr * step / warmup
        elif args.schedule == "constant":
            value = lr
        elif step >= decay:
            value = args.min_lr
        else:
            p = (step - warmup) / (decay - warmup)
            value = (args.min_lr + 0.5 * (1.0 + math.cos(math.pi * p)) * (lr - args.min_lr)
                     if args.schedule == "cosine" else lr + p * (args.min_lr - lr))
        return float(np.float32(value))

    accum = args.grad_accum
    if args.schedule or accum > 1:
        print("# schedule %s (warm-up %d, decay to step %s, min lr %g), %d micro-batch(es) per step"
              % (args.schedule or "none", args.warmup, args.decay_steps or args.steps,
                 args.min_lr, accum))
    offset = 0
    ran_notes = False
    for step in range(1, args.steps + 1):
        opt.zero_grad(set_to_none=True)
        for group in opt.param_groups:
            group["lr"] = lr_at(step)
        micro_losses = []
        for micro in range(accum):
            if offset + window + 1 > len(tokens):
                offset = 0
            env = dict(const_env)
            # Params are cast to the model's type where read (bf16/f16 models).
            for name, (t, ttype) in params.items():
                env[name] = t if t.dtype == ttype else t.to(ttype)
            d_type = interp.torch_type(batch_inputs[data_name][1])
            env[data_name] = torch.from_numpy(
                tokens[offset:offset + window].reshape(data_shape)).to(device, d_type)
            if labels_name:
                l_type = interp.torch_type(batch_inputs[labels_name][1])
                env[labels_name] = torch.from_numpy(
                    tokens[offset + 1:offset + 1 + window].reshape(data_shape)).to(
                        device, l_type)
            offset += window

            interp.rng_key = ((args.seed << 32) + (step - 1) * accum + micro) & M
            env = interp.run(env)
            micro_loss = env[graph.output[0].name]
            if not ran_notes:
                for note in interp.notes:
                    print("# NOTE: " + note)
                ran_notes = True
            (micro_loss / accum if accum > 1 else micro_loss).backward()
            micro_losses.append(micro_loss.detach())
        loss = sum(micro_losses) / accum if accum > 1 else micro_losses[0]
        grads = []
        for name, (t, _) in params.items():
            if t.grad is None:  # read, but no differentiable path: txopt's 0
                t.grad = torch.zeros_like(t)
            grads.append(t.grad)
        with torch.no_grad():
            grad_norm = torch.sqrt(sum((g.to(fdtype) * g.to(fdtype)).sum()
                                       for g in grads))
        lv, gv = float(loss.detach().float().item()), float(grad_norm.item())
        print("step %d  loss %.9g  grad_norm %.9g" % (step, lv, gv))
        sys.stdout.flush()
        if not (math.isfinite(lv) and math.isfinite(gv)):
            print("torch_reference: step %d: non-finite loss or gradient norm; "
                  "stopped" % step, file=sys.stderr)
            return 1
        opt.step()

    if args.out:
        os.makedirs(args.out, exist_ok=True)
        for name, (t, _) in params.items():
            np.save(os.path.join(args.out, npy_file_name(name)),
                    t.detach().cpu().numpy().astype(np.float32))
            # AdamW's moments, named as txopt-run names them.
            state = opt.state.get(t, {})
            for key in ("exp_avg", "exp_avg_sq"):
                if key in state:
                    np.save(os.path.join(args.out, npy_file_name(name + "." + key)),
                            state[key].detach().cpu().numpy().astype(np.float32))
        print("# wrote %d parameters to %s" % (len(params), args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
