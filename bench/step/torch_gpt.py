#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The PyTorch peer of a txopt whole-step benchmark: the GPT (or, by the
export's --arch, the Llama-style decoder or BERT-style encoder) that
scripts/export_gpt_external.py writes as ONNX, written as a PyTorch user
writes it (F.linear with bias, F.layer_norm, the export's GELU: exact, or
the tanh form of --gelu tanh; SDPA with is_causal, tied LM head, mean
cross-entropy), with the *same* weights read
from the export's external-data file and AdamW with txopt's defaults
(lr 1e-3, betas 0.9/0.999, eps 1e-8, weight decay 0.01 on rank >= 2).

  torch_gpt.py MODEL.onnx TOKENS.npy --mode {eager-fp32,eager-bf16,compile-bf16}
      --steps N [--warmup W] [--out RESULT.json]

Batches are the windows txrun --data reads: step k trains on tokens
[k*B*T, (k+1)*B*T) with labels shifted by one, so the first losses can be
compared with txrun's. Step time: CUDA events around each whole step
(forward, backward, optimizer), the median of the steps after --warmup.
Memory: torch.cuda.max_memory_allocated (tensors) and max_memory_reserved
(what the caching allocator took from the device). Launches: kernels of one
profiled step (torch.profiler). Time to first step: from reading the ONNX
file to the end of step 1, compile included.
"""

import argparse
import json
import math
import os
import statistics
import time

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import numpy_helper


def load_weights(model_path):
    """Every float initializer of the export, by name, read from its
    external-data file (the export script's layout)."""
    model = onnx.load(model_path, load_external_data=False)
    folder = os.path.dirname(os.path.abspath(model_path))
    weights, shapes = {}, {}
    for t in model.graph.initializer:
        if t.data_type != onnx.TensorProto.FLOAT:
            continue
        info = {e.key: e.value for e in t.external_data}
        if info:
            with open(os.path.join(folder, info["location"]), "rb") as f:
                f.seek(int(info["offset"]))
                raw = f.read(int(info["length"]))
            array = np.frombuffer(raw, np.float32).reshape(list(t.dims)).copy()
        else:
            array = numpy_helper.to_array(t).astype(np.float32)
        weights[t.name] = array
    for i in model.graph.input:
        shapes[i.name] = [d.dim_value for d in i.type.tensor_type.shape.dim]
    # The head split's shape constant [B, T, heads, head dim] gives the
    # head count (--heads of the export).
    for t in model.graph.initializer:
        if t.name == "heads_shape":
            shapes["heads"] = int(numpy_helper.to_array(t, base_dir=folder)[2])
    # The export's GELU: the tanh form (--gelu tanh, GPT-2's gelu_new) has
    # Tanh nodes, the erf form (the default, nn.GELU()) Erf nodes.
    shapes["gelu"] = "tanh" if any(n.op_type == "Tanh" for n in model.graph.node) else "none"
    # --arch of the export (llama, bert); none written: the GPT.
    shapes["arch"] = {p.key: p.value for p in model.metadata_props}.get("arch", "gpt")
    return weights, shapes


class GPT(torch.nn.Module):
    def __init__(self, weights, layers, heads, gelu="none", arch="gpt"):
        super().__init__()
        self.layers, self.heads, self.gelu, self.arch = layers, heads, gelu, arch
        self.params = torch.nn.ParameterDict(
            {k.replace(".", "__"): torch.nn.Parameter(torch.from_numpy(v))
             for k, v in weights.items() if k.endswith((".weight", ".bias"))})
        if arch == "llama":  # the export's rotary tables, [T, head dim]
            self.register_buffer("rope_cos", torch.from_numpy(weights["rope.cos"]))
            self.register_buffer("rope_sin", torch.from_numpy(weights["rope.sin"]))

    def p(self, name):
        return self.params[name.replace(".", "__")]

    def forward(self, ids, labels):
        if self.arch == "llama":
            return self.forward_llama(ids, labels)
        if self.arch == "bert":
            return self.forward_bert(ids, labels)
        b, t = ids.shape
        d = self.p("wte.weight").shape[1]
        h = self.heads
        x = F.embedding(ids, self.p("wte.weight")) + self.p("wpe.weight")[:t]

        def ln(z, name):
            return F.layer_norm(z, (d,), self.p(name + ".weight"), self.p(name + ".bias"), 1e-5)

        def linear(z, name):
            # The export stores [in, out] (GPT-2's Conv1D); F.linear wants
            # [out, in]: a transposed view, which cuBLAS reads as is.
            return F.linear(z, self.p(name + ".weight").t(), self.p(name + ".bias"))

        for i in range(self.layers):
            pre = f"h.{i}"
            qkv = linear(ln(x, pre + ".ln_1"), pre + ".attn.c_attn")
            q, k, v = (z.view(b, t, h, d // h).transpose(1, 2) for z in qkv.split(d, dim=-1))
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            o = o.transpose(1, 2).reshape(b, t, d)
            x = x + linear(o, pre + ".attn.c_proj")
            m = F.gelu(linear(ln(x, pre + ".ln_2"), pre + ".mlp.c_fc"), approximate=self.gelu)
            x = x + linear(m, pre + ".mlp.c_proj")
        logits = ln(x, "ln_f") @ self.p("wte.weight").t()
        return F.cross_entropy(logits.reshape(b * t, -1).float(), labels.reshape(b * t))

    def forward_llama(self, ids, labels):
        """The export's --arch llama: F.rms_norm, no biases, rotary q and k
        (rotate-half), causal SDPA, SwiGLU, the untied lm_head."""
        b, t = ids.shape
        d = self.p("wte.weight").shape[1]
        h = self.heads
        cos, sin = self.rope_cos[:t], self.rope_sin[:t]

        def rms(z, name):
            return F.rms_norm(z, (d,), self.p(name + ".weight"), 1e-5)

        def proj(z, name):
            return F.linear(z, self.p(name + ".weight").t())

        def rope(z):
            first, second = z.chunk(2, dim=-1)
            return z * cos + torch.cat((-second, first), dim=-1) * sin

        x = F.embedding(ids, self.p("wte.weight"))
        for i in range(self.layers):
            pre = f"h.{i}"
            a = rms(x, pre + ".ln_1")
            q, k, v = (proj(a, f"{pre}.attn.{n}").view(b, t, h, d // h).transpose(1, 2)
                       for n in ("q", "k", "v"))
            o = F.scaled_dot_product_attention(rope(q), rope(k), v, is_causal=True)
            x = x + proj(o.transpose(1, 2).reshape(b, t, d), pre + ".attn.c_proj")
            m = rms(x, pre + ".ln_2")
            x = x + proj(F.silu(proj(m, pre + ".mlp.gate")) * proj(m, pre + ".mlp.up"), pre + ".mlp.down")
        logits = proj(rms(x, "ln_f"), "lm_head")
        return F.cross_entropy(logits.reshape(b * t, -1).float(), labels.reshape(b * t))

    def forward_bert(self, ids, labels):
        """The export's --arch bert: post-LN encoder, bidirectional SDPA,
        GELU, the masked-LM head (transform, tied decoder with its bias)."""
        b, t = ids.shape
        d = self.p("wte.weight").shape[1]
        h = self.heads

        def ln(z, name):
            return F.layer_norm(z, (d,), self.p(name + ".weight"), self.p(name + ".bias"), 1e-5)

        def linear(z, name):
            return F.linear(z, self.p(name + ".weight").t(), self.p(name + ".bias"))

        x = ln(F.embedding(ids, self.p("wte.weight")) + self.p("wpe.weight")[:t], "emb_ln")
        for i in range(self.layers):
            pre = f"h.{i}"
            qkv = linear(x, pre + ".attn.c_attn")
            q, k, v = (z.view(b, t, h, d // h).transpose(1, 2) for z in qkv.split(d, dim=-1))
            o = F.scaled_dot_product_attention(q, k, v)
            x = ln(x + linear(o.transpose(1, 2).reshape(b, t, d), pre + ".attn.c_proj"), pre + ".ln_1")
            m = F.gelu(linear(x, pre + ".mlp.c_fc"), approximate=self.gelu)
            x = ln(x + linear(m, pre + ".mlp.c_proj"), pre + ".ln_2")
        x = ln(F.gelu(linear(x, "head.dense"), approximate=self.gelu), "ln_f")
        logits = x @ self.p("wte.weight").t() + self.p("head.bias")
        return F.cross_entropy(logits.reshape(b * t, -1).float(), labels.reshape(b * t))


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model")
    parser.add_argument("tokens")
    parser.add_argument("--mode", required=True,
                        choices=["eager-fp32", "eager-bf16", "compile-bf16",
                                 "eager-bf16-clip", "compile-bf16-clip"])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--out")
    args = parser.parse_args()

    t0 = time.perf_counter()
    torch.backends.cuda.matmul.allow_tf32 = False  # txopt's f32 is exact f32
    torch.backends.cudnn.allow_tf32 = False
    weights, shapes = load_weights(args.model)
    b, t = shapes["ids"]
    d = weights["wte.weight"].shape[1]
    layers = sum(1 for k in weights if k.endswith(".ln_1.weight"))
    model = GPT(weights, layers, shapes.get("heads", d // 64), shapes["gelu"], shapes["arch"]).cuda()
    decay = [p for p in model.parameters() if p.ndim >= 2]
    no_decay = [p for p in model.parameters() if p.ndim < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=1e-3, betas=(0.9, 0.999), eps=1e-8, fused=True)
    tokens = torch.from_numpy(np.load(args.tokens).astype(np.int64)).cuda()
    window = b * t

    def batch(k):
        offset = (k * window) % (tokens.numel() - window)
        return (tokens[offset:offset + window].view(b, t),
                tokens[offset + 1:offset + 1 + window].view(b, t))

    bf16 = args.mode != "eager-fp32"
    forward = torch.compile(model) if args.mode.startswith("compile-") else model
    # "-clip": the gradients clipped to a global norm of 1.0 before the
    # update (nanoGPT's and Hugging Face Trainer's default), eagerly with
    # the foreach kernels, as those training loops do.
    clip = args.mode.endswith("-clip")

    def step(k):
        ids, labels = batch(k)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16):
            loss = forward(ids, labels)
        loss.backward()
        if clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=True)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    losses, times = [], []
    torch.cuda.reset_peak_memory_stats()
    first_step_s = None
    for k in range(args.steps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        loss = step(k)
        end.record()
        end.synchronize()
        if first_step_s is None:
            first_step_s = time.perf_counter() - t0
        losses.append(float(loss))
        times.append(start.elapsed_time(end))
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        step(args.steps)
        torch.cuda.synchronize()
    launches = sum(1 for e in prof.events()
                   if e.device_type == torch.autograd.DeviceType.CUDA)
    timed = times[args.warmup:] or times
    ms = statistics.median(timed)
    n_params = sum(p.numel() for p in model.parameters())
    result = {
        "system": "pytorch " + torch.__version__, "mode": args.mode,
        "batch": b, "seq": t, "layers": layers, "d_model": d,
        "ms": ms, "tok_per_s": window / (ms / 1e3),
        # 6 N per token for the weights, plus attention's 12 L T d (fwd+bwd,
        # causal counted in full as in the PaLM appendix).
        "model_tflops": (6 * n_params + 12 * layers * t * d) * window / (ms / 1e3) / 1e12,
        "peak_allocated_bytes": torch.cuda.max_memory_allocated(),
        "peak_reserved_bytes": torch.cuda.max_memory_reserved(),
        "launches": launches, "first_step_s": first_step_s,
        "losses": losses,
    }
    line = json.dumps(result)
    print(line)
    if args.out:
        with open(args.out, "w") as f:
            f.write(line + "\n")
    if not all(math.isfinite(x) for x in losses):
        raise SystemExit("torch_gpt: non-finite loss")


if __name__ == "__main__":
    main()
