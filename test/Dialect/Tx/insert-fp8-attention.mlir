// tx-insert-fp8 with attention=true (txopt --fp8-attention): each eligible
// fused attention and its gradient become tx.fp8_attention and
// tx.fp8_attention_grad. The forward models below go through
// tx-build-train-step first (the pass needs its reverse-sweep marker).
// RUN: txopt-opt %s --split-input-file --tx-build-train-step --tx-insert-fp8="attention=1" | FileCheck %s
// RUN: txopt-opt %s --split-input-file --tx-build-train-step --tx-insert-fp8="attention=1 explain=1" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: txopt-opt %s --split-input-file --tx-build-train-step --tx-insert-fp8 | FileCheck %s --check-prefix=OFF
// RUN: txopt-opt %s --split-input-file --tx-build-train-step --tx-insert-fp8="attention=1 exclude=^none$" | FileCheck %s --check-prefix=HOIST
// RUN: txopt-opt %s --split-input-file --tx-build-train-step --tx-insert-fp8="attention=1 explain=1 scaling=current" 2>&1 | FileCheck %s --check-prefix=CURRENT
// RUN: txopt-opt %s --split-input-file --tx-build-train-step --tx-insert-fp8="attention=1 explain=1 target=sm_89" 2>&1 | FileCheck %s --check-prefix=SM89

// A causal bf16 attention of head dim 128 (q = x * p, k = x, v = p): q, k
// and v cast with sites of their own (attn.q, .k, .v), the quantized
// probabilities and the output sites attn.s and attn.o, whose amaxes are
// the op's results; the FP8 output dequantized with o's scale inverse for
// the loss. The upstream gradient cast to E5M2 (attn.backward.do); the
// backward reads the forward's codes, FP8 output, lse and s's scale and
// inverse; its gradients (attn.backward.dq, .dk, .dv) and quantized dS
// (.dp) get E5M2 sites fed by its amaxes, and are dequantized. Each FP8
// type's update reads its sites' amaxes in site order.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME:    tx.fp8_sites = ["attn.q", "attn.k", "attn.v", "attn.s", "attn.o"]
// CHECK-SAME:    tx.fp8_sites = ["attn.backward.do", "attn.backward.dq", "attn.backward.dk", "attn.backward.dv", "attn.backward.dp"]
// CHECK:         %[[QA:.+]] = tx.amax %[[QB:.+]] : tensor<1x2x16x128xbf16>
// CHECK-NEXT:    %[[Q8:.+]] = tx.quantize %[[QB]], %{{.+}} : tensor<1x2x16x128xbf16> to tensor<1x2x16x128xf8E4M3FN>
// CHECK:         %[[K8:.+]] = tx.quantize
// CHECK:         %[[V8:.+]] = tx.quantize
// CHECK:         %[[SS:.+]] = tx.fp8_site %[[SCALE:.+]][3]
// CHECK-NEXT:    %[[SI:.+]] = tx.fp8_site %[[SCALEINV:.+]][3]
// CHECK-NEXT:    %[[OS:.+]] = tx.fp8_site %[[SCALE]][4]
// CHECK-NEXT:    %[[OI:.+]] = tx.fp8_site %[[SCALEINV]][4]
// CHECK-NEXT:    %[[O8:.+]], %[[LSE:.+]], %[[SAMAX:.+]], %[[OAMAX:.+]] = tx.fp8_attention %[[Q8]], %[[K8]], %[[V8]] scale_inv(%{{.+}}, %{{.+}}, %{{.+}}, %[[SI]]) fp8_scale(%[[SS]], %[[OS]]) scale(0.088388347648318003) causal
// CHECK:         tx.reshape %[[SAMAX]]
// CHECK-NEXT:    tx.reshape %[[OAMAX]]
// CHECK-NEXT:    tx.concat
// CHECK-NEXT:    tx.fp8_scale_update {{.*}} for f8E4M3FN
// CHECK-NEXT:    %[[O:.+]] = tx.dequantize %[[O8]], %[[OI]] : tensor<1x2x16x128xf8E4M3FN> to tensor<1x2x16x128xbf16>
// CHECK:         %[[DO8:.+]] = tx.quantize %{{.+}}, %{{.+}} : tensor<1x2x16x128xbf16> to tensor<1x2x16x128xf8E5M2>
// CHECK:         %[[DQ:.+]], %[[DK:.+]], %[[DV:.+]], %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} = tx.fp8_attention_grad %[[DO8]], %[[Q8]], %[[K8]], %[[V8]], %[[O8]], %[[LSE]] scale_inv(%{{.+}}, %{{.+}}, %{{.+}}, %[[OI]], %{{.+}}, %[[SI]], %{{.+}}) fp8_scale(%[[SS]], %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) scale(0.088388347648318003) causal
// CHECK:         tx.fp8_scale_update {{.*}} for f8E5M2
// CHECK-NEXT:    tx.dequantize %[[DQ]], %{{.+}} : tensor<1x2x16x128xf8E5M2> to tensor<1x2x16x128xbf16>
// CHECK-NEXT:    tx.dequantize %[[DK]]
// CHECK-NEXT:    tx.dequantize %[[DV]]
// CHECK-NOT:     tx.attention
// REMARK-NOT:    loc("attn"):
// Must not fire: without the option the attention stays bf16.
// OFF-LABEL:   func.func @train_step(
// OFF:           tx.attention {{.*}} : tensor<1x2x16x128xbf16>
// OFF:           tx.attention_grad
// OFF-NOT:       tx.fp8_attention
// Current scaling has no state to give the output its scale before the
// call: nothing converts, with the reason.
// CURRENT:       remark: loc("attn"): not fused: fp8 attention: current scaling: cuDNN's FP8 attention writes an FP8 output whose scale must be known before the call (use delayed scaling)
// CURRENT-NOT:   tx.fp8_attention
// SM89:          remark: loc("attn"): not fused: fp8 attention: target sm_89 (cuDNN's FP8 attention needs sm_90 or newer)
// SM89-NOT:      tx.fp8_attention
tx.parameter @p = dense<0.5> : tensor<1x2x16x128xf32>
func.func @main(%x: tensor<1x2x16x128xf32> {tx.name = "x"}) -> (tensor<f32> {tx.name = "loss"}) {
  %p = tx.load_parameter @p : tensor<1x2x16x128xf32>
  %q = tx.mul %x, %p : tensor<1x2x16x128xf32>, tensor<1x2x16x128xf32>
  %qb = tx.cast %q : tensor<1x2x16x128xf32> to tensor<1x2x16x128xbf16>
  %xb = tx.cast %x : tensor<1x2x16x128xf32> to tensor<1x2x16x128xbf16>
  %pb = tx.cast %p : tensor<1x2x16x128xf32> to tensor<1x2x16x128xbf16>
  %o, %lse = tx.attention %qb, %xb, %pb scale(0.088388347648318) causal : tensor<1x2x16x128xbf16>, tensor<1x2x16x128xbf16>, tensor<1x2x16x128xbf16> loc("attn")
  %of = tx.cast %o : tensor<1x2x16x128xbf16> to tensor<1x2x16x128xf32>
  %sq = tx.mul %of, %of : tensor<1x2x16x128xf32>, tensor<1x2x16x128xf32>
  %l = tx.reduce_mean %sq axes [] : tensor<1x2x16x128xf32>
  return %l : tensor<f32>
}

// -----

// Must not fire: head dim 64 (cuDNN's FP8 backward on Hopper takes 128).
// REMARK: remark: loc("attn64"): not fused: fp8 attention: head dim 64: cuDNN's FP8 attention backward on Hopper takes head dim 128 only
// CHECK-LABEL: func.func @train_step(
// CHECK: tx.attention {{.*}} : tensor<1x2x16x64xbf16>
tx.parameter @p = dense<0.5> : tensor<1x2x16x64xf32>
func.func @main(%x: tensor<1x2x16x64xf32> {tx.name = "x"}) -> (tensor<f32> {tx.name = "loss"}) {
  %p = tx.load_parameter @p : tensor<1x2x16x64xf32>
  %pb = tx.cast %p : tensor<1x2x16x64xf32> to tensor<1x2x16x64xbf16>
  %o, %lse = tx.attention %pb, %pb, %pb scale(0.125) causal : tensor<1x2x16x64xbf16>, tensor<1x2x16x64xbf16>, tensor<1x2x16x64xbf16> loc("attn64")
  %of = tx.cast %o : tensor<1x2x16x64xbf16> to tensor<1x2x16x64xf32>
  %l = tx.reduce_mean %of axes [] : tensor<1x2x16x64xf32>
  return %l : tensor<f32>
}

// -----

// Must not fire: no causal mask (cuDNN's FP8 forward would saturate the
// quantized probabilities at a delayed scale from their amax, below 1).
// REMARK: remark: loc("bidirectional"): not fused: fp8 attention: no causal mask: cuDNN's FP8 forward quantizes exp(S - running max), up to 1, with a scale from the normalized probabilities' amax, below 1 without a causal mask: its codes would saturate
// CHECK-LABEL: func.func @train_step(
// CHECK-NOT: tx.fp8_attention
// CHECK: tx.attention {{.*}} : tensor<1x2x16x128xbf16>
// CHECK-NOT: tx.fp8_attention
tx.parameter @p = dense<0.5> : tensor<1x2x16x128xf32>
func.func @main(%x: tensor<1x2x16x128xf32> {tx.name = "x"}) -> (tensor<f32> {tx.name = "loss"}) {
  %p = tx.load_parameter @p : tensor<1x2x16x128xf32>
  %q = tx.mul %x, %p : tensor<1x2x16x128xf32>, tensor<1x2x16x128xf32>
  %qb = tx.cast %q : tensor<1x2x16x128xf32> to tensor<1x2x16x128xbf16>
  %pb = tx.cast %p : tensor<1x2x16x128xf32> to tensor<1x2x16x128xbf16>
  %o, %lse = tx.attention %qb, %pb, %pb scale(0.088388347648318) : tensor<1x2x16x128xbf16>, tensor<1x2x16x128xbf16>, tensor<1x2x16x128xbf16> loc("bidirectional")
  %of = tx.cast %o : tensor<1x2x16x128xbf16> to tensor<1x2x16x128xf32>
  %l = tx.reduce_mean %of axes [] : tensor<1x2x16x128xf32>
  return %l : tensor<f32>
}

// -----

// Must not fire: an additive mask, a sliding window, an f32 attention.
// REMARK: remark: loc("masked"): not fused: fp8 attention: an attention mask (cuDNN's FP8 attention takes a causal mask only)
// REMARK: remark: loc("windowed"): not fused: fp8 attention: a sliding window (not in cuDNN's FP8 attention on Hopper)
// REMARK: remark: loc("wide"): not fused: fp8 attention: an f32 attention (FP8 attention replaces a bf16 or f16 one)
// CHECK-LABEL: func.func @train_step(
// CHECK-NOT: tx.fp8_attention
tx.parameter @p = dense<0.5> : tensor<1x2x16x128xf32>
func.func @main(%m: tensor<1x1x16x16xf32> {tx.name = "mask"}) -> (tensor<f32> {tx.name = "loss"}) {
  %p = tx.load_parameter @p : tensor<1x2x16x128xf32>
  %pb = tx.cast %p : tensor<1x2x16x128xf32> to tensor<1x2x16x128xbf16>
  %o1, %l1 = tx.attention %pb, %pb, %pb mask(%m) scale(0.125) : tensor<1x2x16x128xbf16>, tensor<1x2x16x128xbf16>, tensor<1x2x16x128xbf16>, tensor<1x1x16x16xf32> loc("masked")
  %o2, %l2 = tx.attention %o1, %pb, %pb scale(0.125) causal window(4) : tensor<1x2x16x128xbf16>, tensor<1x2x16x128xbf16>, tensor<1x2x16x128xbf16> loc("windowed")
  %of = tx.cast %o2 : tensor<1x2x16x128xbf16> to tensor<1x2x16x128xf32>
  %o3, %l3 = tx.attention %of, %p, %p scale(0.125) causal : tensor<1x2x16x128xf32>, tensor<1x2x16x128xf32>, tensor<1x2x16x128xf32> loc("wide")
  %l = tx.reduce_mean %o3 axes [] : tensor<1x2x16x128xf32>
  return %l : tensor<f32>
}

// -----

// Must not fire: an attention the step never differentiates (nothing it
// reads is a parameter) is converted with its backward or not at all.
// REMARK: remark: loc("frozen"): not fused: fp8 attention: no gradient of it in the step (FP8 attention is converted with its backward)
// CHECK-LABEL: func.func @train_step(
// CHECK: tx.attention {{.*}} : tensor<1x2x16x128xbf16>
tx.parameter @w = dense<0.5> : tensor<128x128xf32>
func.func @main(%x: tensor<1x2x16x128xbf16> {tx.name = "x"}) -> (tensor<f32> {tx.name = "loss"}) {
  %w = tx.load_parameter @w : tensor<128x128xf32>
  %o, %lse = tx.attention %x, %x, %x scale(0.125) causal : tensor<1x2x16x128xbf16>, tensor<1x2x16x128xbf16>, tensor<1x2x16x128xbf16> loc("frozen")
  %of = tx.cast %o : tensor<1x2x16x128xbf16> to tensor<1x2x16x128xf32>
  %y = tx.matmul %of, %w : tensor<1x2x16x128xf32>, tensor<128x128xf32>
  %l = tx.reduce_mean %y axes [] : tensor<1x2x16x128xf32>
  return %l : tensor<f32>
}

// -----

// Must not fire: dropout of the probabilities (the FP8 ops have none yet).
// REMARK: remark: loc("dropped"): not fused: fp8 attention: dropout of the probabilities (not in the FP8 attention ops yet)
// CHECK-LABEL: func.func @train_step(
// CHECK: tx.attention {{.*}} dropout
tx.parameter @p = dense<0.5> : tensor<1x2x16x128xf32>
func.func @main(%key: tensor<i64> {tx.name = "key"}) -> (tensor<f32> {tx.name = "loss"}) {
  %p = tx.load_parameter @p : tensor<1x2x16x128xf32>
  %pb = tx.cast %p : tensor<1x2x16x128xf32> to tensor<1x2x16x128xbf16>
  %o, %lse = tx.attention %pb, %pb, %pb scale(0.125) causal dropout(%key, 0.1, 7) : tensor<1x2x16x128xbf16>, tensor<1x2x16x128xbf16>, tensor<1x2x16x128xbf16> loc("dropped")
  %of = tx.cast %o : tensor<1x2x16x128xbf16> to tensor<1x2x16x128xf32>
  %l = tx.reduce_mean %of axes [] : tensor<1x2x16x128xf32>
  return %l : tensor<f32>
}

// -----

// v is a layout value (two transposes) that a GEMM converted before the
// attention also reads through a reshape (every GEMM converted: exclude matches none): its cast's layout ops, made next
// to that GEMM (after the attention), move up before the attention that
// reads them (once, the FP8 attention read a value defined further down).
// HOIST:       %[[V1:.+]] = tx.transpose %{{.+}} perm [0, 1, 3, 2] : tensor<1x2x16x128xf8E4M3FN>
// HOIST-NEXT:  %[[V2:.+]] = tx.transpose %[[V1]] perm [0, 1, 3, 2] : tensor<1x2x128x16xf8E4M3FN>
// HOIST:       tx.fp8_attention %{{.+}}, %{{.+}}, %[[V2]]
// HOIST:       tx.reshape %[[V2]]
// HOIST:       tx.fp8_matmul
tx.parameter @p = dense<0.5> : tensor<1x2x16x128xf32>
tx.parameter @w = dense<0.5> : tensor<128x128xf32>
func.func @main(%x: tensor<1x2x16x128xf32> {tx.name = "x"}) -> (tensor<f32> {tx.name = "loss"}) {
  %p = tx.load_parameter @p : tensor<1x2x16x128xf32>
  %w = tx.load_parameter @w : tensor<128x128xf32>
  %q = tx.mul %x, %p : tensor<1x2x16x128xf32>, tensor<1x2x16x128xf32>
  %qb = tx.cast %q : tensor<1x2x16x128xf32> to tensor<1x2x16x128xbf16>
  %pb = tx.cast %p : tensor<1x2x16x128xf32> to tensor<1x2x16x128xbf16>
  %vt = tx.transpose %pb perm [0, 1, 3, 2] : tensor<1x2x16x128xbf16>
  %v = tx.transpose %vt perm [0, 1, 3, 2] : tensor<1x2x128x16xbf16>
  %o, %lse = tx.attention %qb, %qb, %v scale(0.088388347648318) causal : tensor<1x2x16x128xbf16>, tensor<1x2x16x128xbf16>, tensor<1x2x16x128xbf16> loc("attn")
  %v2 = tx.reshape %v : tensor<1x2x16x128xbf16> -> tensor<32x128xbf16>
  %wb = tx.cast %w : tensor<128x128xf32> to tensor<128x128xbf16>
  %y0 = tx.matmul %v2, %wb : tensor<32x128xbf16>, tensor<128x128xbf16> loc("g0")
  %y = tx.matmul %y0, %wb : tensor<32x128xbf16>, tensor<128x128xbf16> loc("g1")
  %y2 = tx.matmul %y, %wb : tensor<32x128xbf16>, tensor<128x128xbf16> loc("g2")
  %yf = tx.cast %y2 : tensor<32x128xbf16> to tensor<32x128xf32>
  %of = tx.cast %o : tensor<1x2x16x128xbf16> to tensor<1x2x16x128xf32>
  %sq = tx.mul %of, %of : tensor<1x2x16x128xf32>, tensor<1x2x16x128xf32>
  %l = tx.reduce_mean %sq axes [] : tensor<1x2x16x128xf32>
  %l2 = tx.reduce_mean %yf axes [] : tensor<32x128xf32>
  %lt = tx.add %l, %l2 : tensor<f32>, tensor<f32>
  return %lt : tensor<f32>
}
