// RUN: txopt-opt %s --split-input-file --tx-fuse-attention | FileCheck %s
// RUN: txopt-opt %s --split-input-file --tx-fuse-attention=explain=true 2>&1 >/dev/null \
// RUN:   | FileCheck %s --check-prefix=EXPLAIN --implicit-check-not=remark

// The EXPLAIN lines check the near-miss remark that explain=true adds at the
// softmax (the line after them) of every candidate that was not fused; fused
// attention and non-candidates stay silent (--implicit-check-not).

//===----------------------------------------------------------------------===//
// Fused
//===----------------------------------------------------------------------===//

// PyTorch SDPA through the dynamo exporter (nanogpt_op18): q and kT each
// scaled by sqrt(scale), kT as reshape/transpose/reshape through [B*H, T, D],
// a causal mask of 0 / finfo.min as a frozen parameter.
tx.parameter @causal = dense<[[0.0, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38],
                              [0.0, 0.0, -3.40282347E+38, -3.40282347E+38],
                              [0.0, 0.0, 0.0, -3.40282347E+38],
                              [0.0, 0.0, 0.0, 0.0]]> : tensor<4x4xf32> frozen
// CHECK-LABEL: func.func @sdpa_dynamo
// CHECK-SAME:    %[[Q:[^:]+]]: tensor<1x2x4x8xf32>, %[[K:[^:]+]]: tensor<1x2x4x8xf32>, %[[V:[^:]+]]: tensor<1x2x4x8xf32>
// CHECK:         %[[O:.+]], %{{.+}} = tx.attention %[[Q]], %[[K]], %[[V]] scale(0.12499999{{[0-9]+}}) causal : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>
// CHECK-NOT:     tx.softmax
// CHECK-NOT:     tx.matmul
// CHECK:         return %[[O]]
func.func @sdpa_dynamo(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %c = tx.constant dense<0.353553385> : tensor<1xf32>
  %mask = tx.load_parameter @causal : tensor<4x4xf32>
  %k3 = tx.reshape %k : tensor<1x2x4x8xf32> -> tensor<2x4x8xf32>
  %kt3 = tx.transpose %k3 perm [0, 2, 1] : tensor<2x4x8xf32>
  %kt = tx.reshape %kt3 : tensor<2x8x4xf32> -> tensor<1x2x8x4xf32>
  %qs = tx.mul %q, %c : tensor<1x2x4x8xf32>, tensor<1xf32>
  %kts = tx.mul %kt, %c : tensor<1x2x8x4xf32>, tensor<1xf32>
  %s = tx.matmul %qs, %kts : tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>
  %sm = tx.add %s, %mask : tensor<1x2x4x4xf32>, tensor<4x4xf32>
  %p = tx.softmax %sm axis(-1) : tensor<1x2x4x4xf32>
  %o = tx.matmul %p, %v : tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

// The TorchScript exporter (nanogpt_op14): kT = permute(0, 2, 3, 1) of the
// [B, T, H, D] head split, a constant 0 / -inf mask. k becomes the
// transpose(0, 2, 1, 3) of the split.
// CHECK-LABEL: func.func @sdpa_torchscript
// CHECK-SAME:    %[[Q:[^:]+]]: tensor<1x2x4x8xf32>, %[[KS:[^:]+]]: tensor<1x4x2x8xf32>, %[[V:[^:]+]]: tensor<1x2x4x8xf32>
// CHECK:         %[[K:.+]] = tx.transpose %[[KS]] perm [0, 2, 1, 3] : tensor<1x4x2x8xf32>
// CHECK:         %[[O:.+]], %{{.+}} = tx.attention %[[Q]], %[[K]], %[[V]] scale(0.12499999{{[0-9]+}}) causal
// CHECK:         return %[[O]]
func.func @sdpa_torchscript(%q: tensor<1x2x4x8xf32>, %ksplit: tensor<1x4x2x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %mask = tx.constant dense<[[0.0, 0xFF800000, 0xFF800000, 0xFF800000],
                             [0.0, 0.0, 0xFF800000, 0xFF800000],
                             [0.0, 0.0, 0.0, 0xFF800000],
                             [0.0, 0.0, 0.0, 0.0]]> : tensor<4x4xf32>
  %c = tx.constant dense<0.353553385> : tensor<1xf32>
  %kt = tx.transpose %ksplit perm [0, 2, 3, 1] : tensor<1x4x2x8xf32>
  %qs = tx.mul %q, %c : tensor<1x2x4x8xf32>, tensor<1xf32>
  %kts = tx.mul %kt, %c : tensor<1x2x8x4xf32>, tensor<1xf32>
  %s = tx.matmul %qs, %kts : tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>
  %sm = tx.add %s, %mask : tensor<1x2x4x4xf32>, tensor<4x4xf32>
  %p = tx.softmax %sm axis(-1) : tensor<1x2x4x4xf32>
  %o = tx.matmul %p, %v : tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

// Hugging Face eager Llama: k and v repeated from 1 to 2 heads (repeat_kv),
// k.transpose(2, 3), scores * 1/sqrt(d), a mask computed at run time (an
// argument: an operand, never `causal`), Where(IsNaN(p), 0, p).
// CHECK-LABEL: func.func @hf_eager_gqa_runtime_mask
// CHECK-SAME:    %[[Q:[^:]+]]: tensor<1x2x4x8xf32>, %[[K:[^:]+]]: tensor<1x1x4x8xf32>, %[[V:[^:]+]]: tensor<1x1x4x8xf32>, %[[M:[^:]+]]: tensor<1x1x4x4xf32>
// CHECK:         %[[O:.+]], %{{.+}} = tx.attention %[[Q]], %[[K]], %[[V]] mask(%[[M]]) scale(1.250000e-01) : tensor<1x2x4x8xf32>, tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>, tensor<1x1x4x4xf32>
// CHECK-NOT:     tx.is_nan
// CHECK:         return %[[O]]
func.func @hf_eager_gqa_runtime_mask(%q: tensor<1x2x4x8xf32>, %k: tensor<1x1x4x8xf32>, %v: tensor<1x1x4x8xf32>, %m: tensor<1x1x4x4xf32>) -> tensor<1x2x4x8xf32> {
  %ku = tx.unsqueeze %k axes [2] : tensor<1x1x4x8xf32>
  %ke = tx.expand %ku : tensor<1x1x1x4x8xf32> -> tensor<1x1x2x4x8xf32>
  %kr = tx.reshape %ke : tensor<1x1x2x4x8xf32> -> tensor<1x2x4x8xf32>
  %vu = tx.unsqueeze %v axes [2] : tensor<1x1x4x8xf32>
  %ve = tx.expand %vu : tensor<1x1x1x4x8xf32> -> tensor<1x1x2x4x8xf32>
  %vr = tx.reshape %ve : tensor<1x1x2x4x8xf32> -> tensor<1x2x4x8xf32>
  %kt = tx.transpose %kr perm [0, 1, 3, 2] : tensor<1x2x4x8xf32>
  %s = tx.matmul %q, %kt : tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>
  %c = tx.constant dense<0.125> : tensor<f32>
  %ss = tx.mul %s, %c : tensor<1x2x4x4xf32>, tensor<f32>
  %sm = tx.add %ss, %m : tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>
  %p = tx.softmax %sm axis(-1) : tensor<1x2x4x4xf32>
  %nan = tx.is_nan %p : tensor<1x2x4x4xf32> -> tensor<1x2x4x4xi1>
  %zero = tx.constant dense<0.0> : tensor<f32>
  %pz = tx.where %nan, %zero, %p : tensor<1x2x4x4xi1>, tensor<f32>, tensor<1x2x4x4xf32>
  %o = tx.matmul %pz, %vr : tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

// Mistral's sliding window (2 keys) as a constant [B, 1, T, T] mask.
// CHECK-LABEL: func.func @sliding_window
// CHECK:         tx.attention %{{.+}}, %{{.+}}, %{{.+}} scale(1.250000e-01) causal window(2)
func.func @sliding_window(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %mask = tx.constant dense<[[[[0.0, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38],
                               [0.0, 0.0, -3.40282347E+38, -3.40282347E+38],
                               [-3.40282347E+38, 0.0, 0.0, -3.40282347E+38],
                               [-3.40282347E+38, -3.40282347E+38, 0.0, 0.0]]]]> : tensor<1x1x4x4xf32>
  %kt = tx.transpose %k perm [0, 1, 3, 2] : tensor<1x2x4x8xf32>
  %s = tx.matmul %q, %kt : tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>
  %c = tx.constant dense<8.0> : tensor<f32>
  %ss = tx.div %s, %c : tensor<1x2x4x4xf32>, tensor<f32>
  %sm = tx.add %ss, %mask : tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>
  %p = tx.softmax %sm axis(3) : tensor<1x2x4x4xf32>
  %o = tx.matmul %p, %v : tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

// BERT without padding: an all-zero constant mask disappears; the scores
// divided by sqrt(d).
// CHECK-LABEL: func.func @zero_mask_div
// CHECK:         tx.attention %{{.+}}, %{{.+}}, %{{.+}} scale(0.35355339{{[0-9]+}}) : tensor<1x2x4x8xf32>
// CHECK-NOT:     causal
func.func @zero_mask_div(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %mask = tx.constant dense<0.0> : tensor<1x1x1x4xf32>
  %kt = tx.transpose %k perm [0, 1, 3, 2] : tensor<1x2x4x8xf32>
  %s = tx.matmul %q, %kt : tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>
  %c = tx.constant dense<2.82842712> : tensor<f32>
  %ss = tx.div %s, %c : tensor<1x2x4x4xf32>, tensor<f32>
  %sm = tx.add %mask, %ss : tensor<1x1x1x4xf32>, tensor<1x2x4x4xf32>
  %p = tx.softmax %sm axis(-1) : tensor<1x2x4x4xf32>
  %o = tx.matmul %p, %v : tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

// A constant that is neither zero nor causal (an upper triangle) stays a
// mask operand.
// CHECK-LABEL: func.func @constant_not_causal
// CHECK:         %[[M:.+]] = tx.constant
// CHECK:         tx.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%[[M]]) scale(1.000000e+00) :
func.func @constant_not_causal(%q: tensor<1x1x2x8xf32>, %k: tensor<1x1x2x8xf32>, %v: tensor<1x1x2x8xf32>) -> tensor<1x1x2x8xf32> {
  %mask = tx.constant dense<[[0.0, 0.0], [0xFF800000, 0.0]]> : tensor<2x2xf32>
  %kt = tx.transpose %k perm [0, 1, 3, 2] : tensor<1x1x2x8xf32>
  %s = tx.matmul %q, %kt : tensor<1x1x2x8xf32>, tensor<1x1x8x2xf32>
  %sm = tx.add %s, %mask : tensor<1x1x2x2xf32>, tensor<2x2xf32>
  %p = tx.softmax %sm axis(-1) : tensor<1x1x2x2xf32>
  %o = tx.matmul %p, %v : tensor<1x1x2x2xf32>, tensor<1x1x2x8xf32>
  return %o : tensor<1x1x2x8xf32>
}

// -----

// ONNX Attention with a run-time mask, as the importer spells it out: the
// guard Where(max(mask) == -inf, 0, p) gives a row without a visible key
// probabilities 0, which tx.attention gives it too, so it folds in.
// CHECK-LABEL: func.func @onnx_attention_row_guard
// CHECK-SAME:    %[[Q:[^:]+]]: tensor<1x2x4x8xf32>, %[[K:[^:]+]]: tensor<1x2x4x8xf32>, %[[V:[^:]+]]: tensor<1x2x4x8xf32>, %[[M:[^:]+]]: tensor<4x4xf32>
// CHECK:         %[[O:.+]], %{{.+}} = tx.attention %[[Q]], %[[K]], %[[V]] mask(%[[M]]) scale(0.124999{{[0-9]+}})
// CHECK-NOT:     tx.reduce_max
// CHECK:         return %[[O]]
func.func @onnx_attention_row_guard(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %m: tensor<4x4xf32>) -> tensor<1x2x4x8xf32> {
  %c = tx.constant dense<0.353553385> : tensor<f32>
  %qs = tx.mul %q, %c : tensor<1x2x4x8xf32>, tensor<f32>
  %kt = tx.transpose %k perm [0, 1, 3, 2] : tensor<1x2x4x8xf32>
  %kts = tx.mul %kt, %c : tensor<1x2x8x4xf32>, tensor<f32>
  %s = tx.matmul %qs, %kts : tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>
  %sm = tx.add %s, %m : tensor<1x2x4x4xf32>, tensor<4x4xf32>
  %p = tx.softmax %sm axis(-1) : tensor<1x2x4x4xf32>
  %max = tx.reduce_max %m axes [1] keep_dims : tensor<4x4xf32>
  %ninf = tx.constant dense<0xFF800000> : tensor<f32>
  %none = tx.equal %max, %ninf : tensor<4x1xf32>, tensor<f32>
  %zero = tx.constant dense<0.0> : tensor<f32>
  %pz = tx.where %none, %zero, %p : tensor<4x1xi1>, tensor<f32>, tensor<1x2x4x4xf32>
  %o = tx.matmul %pz, %v : tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

// Hugging Face GPT-2 eager attention (GPT2Attention._attn): the scores
// divided by sqrt(d), then torch.where(causal_mask, scores, finfo.min) with
// the constant lower-triangular bool buffer: `causal`, no Where left.
// CHECK-LABEL: func.func @hf_gpt2_where_causal
// CHECK-SAME:    %[[Q:[^:]+]]: tensor<1x2x4x8xf32>, %[[K:[^:]+]]: tensor<1x2x4x8xf32>, %[[V:[^:]+]]: tensor<1x2x4x8xf32>
// CHECK:         %[[O:.+]], %{{.+}} = tx.attention %[[Q]], %[[K]], %[[V]] scale(0.35355339{{[0-9]+}}) causal : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>
// CHECK-NOT:     tx.where
// CHECK-NOT:     tx.softmax
// CHECK:         return %[[O]]
func.func @hf_gpt2_where_causal(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %causal = tx.constant dense<[[[[true, false, false, false],
                                 [true, true, false, false],
                                 [true, true, true, false],
                                 [true, true, true, true]]]]> : tensor<1x1x4x4xi1>
  %min = tx.constant dense<-3.40282347E+38> : tensor<f32>
  %kt = tx.transpose %k perm [0, 1, 3, 2] : tensor<1x2x4x8xf32>
  %s = tx.matmul %q, %kt : tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>
  %c = tx.constant dense<2.82842712> : tensor<f32>
  %ss = tx.div %s, %c : tensor<1x2x4x4xf32>, tensor<f32>
  %sm = tx.where %causal, %ss, %min : tensor<1x1x4x4xi1>, tensor<1x2x4x4xf32>, tensor<f32>
  %p = tx.softmax %sm axis(-1) : tensor<1x2x4x4xf32>
  %o = tx.matmul %p, %v : tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

// masked_fill style, Where(cond, -inf, scores) with cond true at the masked
// keys: here those outside a 2-key sliding window, so `causal window(2)`.
// CHECK-LABEL: func.func @masked_fill_window
// CHECK:         tx.attention %{{.+}}, %{{.+}}, %{{.+}} scale(1.250000e-01) causal window(2) :
// CHECK-NOT:     tx.where
func.func @masked_fill_window(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %masked = tx.constant dense<[[false, true, true, true],
                               [false, false, true, true],
                               [true, false, false, true],
                               [true, true, false, false]]> : tensor<4x4xi1>
  %ninf = tx.constant dense<0xFF800000> : tensor<1xf32>
  %kt = tx.transpose %k perm [0, 1, 3, 2] : tensor<1x2x4x8xf32>
  %s = tx.matmul %q, %kt : tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>
  %c = tx.constant dense<0.125> : tensor<f32>
  %ss = tx.mul %s, %c : tensor<1x2x4x4xf32>, tensor<f32>
  %sm = tx.where %masked, %ninf, %ss : tensor<4x4xi1>, tensor<1xf32>, tensor<1x2x4x4xf32>
  %p = tx.softmax %sm axis(-1) : tensor<1x2x4x4xf32>
  %o = tx.matmul %p, %v : tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

// bf16 scores filled with finfo(bf16).min (about -3.39e38, below -1e30, so
// exp gives the masked keys exactly 0 as in f32).
// CHECK-LABEL: func.func @where_bf16_finfo_min
// CHECK:         tx.attention %{{.+}}, %{{.+}}, %{{.+}} scale(1.000000e+00) causal : tensor<1x1x4x8xbf16>
func.func @where_bf16_finfo_min(%q: tensor<1x1x4x8xbf16>, %k: tensor<1x1x4x8xbf16>, %v: tensor<1x1x4x8xbf16>) -> tensor<1x1x4x8xbf16> {
  %causal = tx.constant dense<[[true, false, false, false],
                               [true, true, false, false],
                               [true, true, true, false],
                               [true, true, true, true]]> : tensor<4x4xi1>
  %min = tx.constant dense<-3.38953139E+38> : tensor<bf16>
  %kt = tx.transpose %k perm [0, 1, 3, 2] : tensor<1x1x4x8xbf16>
  %s = tx.matmul %q, %kt : tensor<1x1x4x8xbf16>, tensor<1x1x8x4xbf16>
  %sm = tx.where %causal, %s, %min : tensor<4x4xi1>, tensor<1x1x4x4xbf16>, tensor<bf16>
  %p = tx.softmax %sm axis(-1) : tensor<1x1x4x4xbf16>
  %o = tx.matmul %p, %v : tensor<1x1x4x4xbf16>, tensor<1x1x4x8xbf16>
  return %o : tensor<1x1x4x8xbf16>
}

// -----

// f16 scores filled with -inf: exact (finfo(f16).min is not, see below).
// CHECK-LABEL: func.func @where_f16_neg_inf
// CHECK:         tx.attention %{{.+}}, %{{.+}}, %{{.+}} scale(1.000000e+00) causal : tensor<1x1x4x8xf16>
func.func @where_f16_neg_inf(%q: tensor<1x1x4x8xf16>, %k: tensor<1x1x4x8xf16>, %v: tensor<1x1x4x8xf16>) -> tensor<1x1x4x8xf16> {
  %causal = tx.constant dense<[[true, false, false, false],
                               [true, true, false, false],
                               [true, true, true, false],
                               [true, true, true, true]]> : tensor<4x4xi1>
  %ninf = tx.constant dense<0xFC00> : tensor<f16>
  %kt = tx.transpose %k perm [0, 1, 3, 2] : tensor<1x1x4x8xf16>
  %s = tx.matmul %q, %kt : tensor<1x1x4x8xf16>, tensor<1x1x8x4xf16>
  %sm = tx.where %causal, %s, %ninf : tensor<4x4xi1>, tensor<1x1x4x4xf16>, tensor<f16>
  %p = tx.softmax %sm axis(-1) : tensor<1x1x4x4xf16>
  %o = tx.matmul %p, %v : tensor<1x1x4x4xf16>, tensor<1x1x4x8xf16>
  return %o : tensor<1x1x4x8xf16>
}

// -----

// An upper-triangular condition (key j kept for query i iff j >= i) is not
// causal; every row keeps a key, so it becomes the equal 0 / -inf mask
// operand.
// CHECK-LABEL: func.func @where_upper_triangle
// CHECK:         %[[M:.+]] = tx.constant dense<{{\[\[\[\[}}0.000000e+00, 0.000000e+00, 0.000000e+00], [0xFF800000, 0.000000e+00, 0.000000e+00], [0xFF800000, 0xFF800000, 0.000000e+00]]]]> : tensor<1x1x3x3xf32>
// CHECK:         tx.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%[[M]]) scale(1.000000e+00) : {{.+}}, tensor<1x1x3x3xf32>
// CHECK-NOT:     causal
func.func @where_upper_triangle(%q: tensor<1x1x3x8xf32>, %k: tensor<1x1x3x8xf32>, %v: tensor<1x1x3x8xf32>) -> tensor<1x1x3x8xf32> {
  %upper = tx.constant dense<[[[[true, true, true],
                                [false, true, true],
                                [false, false, true]]]]> : tensor<1x1x3x3xi1>
  %min = tx.constant dense<-3.40282347E+38> : tensor<f32>
  %kt = tx.transpose %k perm [0, 1, 3, 2] : tensor<1x1x3x8xf32>
  %s = tx.matmul %q, %kt : tensor<1x1x3x8xf32>, tensor<1x1x8x3xf32>
  %sm = tx.where %upper, %s, %min : tensor<1x1x3x3xi1>, tensor<1x1x3x3xf32>, tensor<f32>
  %p = tx.softmax %sm axis(-1) : tensor<1x1x3x3xf32>
  %o = tx.matmul %p, %v : tensor<1x1x3x3xf32>, tensor<1x1x3x8xf32>
  return %o : tensor<1x1x3x8xf32>
}

// -----

// Where(causal, scores, -inf) and then an additive padding mask (an
// argument): `causal` plus the mask operand. -inf stays -inf whatever the
// mask adds, so both drop the same keys.
// CHECK-LABEL: func.func @where_causal_then_padding
// CHECK-SAME:    %[[M:[^:]+]]: tensor<1x1x1x4xf32>
// CHECK:         tx.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%[[M]]) scale(1.000000e+00) causal :
// CHECK-NOT:     tx.where
func.func @where_causal_then_padding(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %m: tensor<1x1x1x4xf32>) -> tensor<1x2x4x8xf32> {
  %causal = tx.constant dense<[[true, false, false, false],
                               [true, true, false, false],
                               [true, true, true, false],
                               [true, true, true, true]]> : tensor<4x4xi1>
  %ninf = tx.constant dense<0xFF800000> : tensor<f32>
  %kt = tx.transpose %k perm [0, 1, 3, 2] : tensor<1x2x4x8xf32>
  %s = tx.matmul %q, %kt : tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>
  %w = tx.where %causal, %s, %ninf : tensor<4x4xi1>, tensor<1x2x4x4xf32>, tensor<f32>
  %sm = tx.add %m, %w : tensor<1x1x1x4xf32>, tensor<1x2x4x4xf32>
  %p = tx.softmax %sm axis(-1) : tensor<1x2x4x4xf32>
  %o = tx.matmul %p, %v : tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

// A row the condition masks completely, filled with -inf, is NaN after the
// softmax; Where(IsNaN(p), 0, p) makes it 0, tx.attention's value, so it
// fuses with the mask operand (row 0 keeps no key).
// CHECK-LABEL: func.func @where_empty_row_nan_guard
// CHECK:         %[[M:.+]] = tx.constant dense<{{\[\[}}0xFF800000, 0xFF800000], [0.000000e+00, 0xFF800000]]> : tensor<2x2xf32>
// CHECK:         tx.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%[[M]]) scale(1.000000e+00) :
// CHECK-NOT:     tx.is_nan
func.func @where_empty_row_nan_guard(%q: tensor<1x1x2x8xf32>, %k: tensor<1x1x2x8xf32>, %v: tensor<1x1x2x8xf32>) -> tensor<1x1x2x8xf32> {
  %keep = tx.constant dense<[[false, false], [true, false]]> : tensor<2x2xi1>
  %ninf = tx.constant dense<0xFF800000> : tensor<f32>
  %kt = tx.transpose %k perm [0, 1, 3, 2] : tensor<1x1x2x8xf32>
  %s = tx.matmul %q, %kt : tensor<1x1x2x8xf32>, tensor<1x1x8x2xf32>
  %sm = tx.where %keep, %s, %ninf : tensor<2x2xi1>, tensor<1x1x2x2xf32>, tensor<f32>
  %p = tx.softmax %sm axis(-1) : tensor<1x1x2x2xf32>
  %nan = tx.is_nan %p : tensor<1x1x2x2xf32> -> tensor<1x1x2x2xi1>
  %zero = tx.constant dense<0.0> : tensor<f32>
  %pz = tx.where %nan, %zero, %p : tensor<1x1x2x2xi1>, tensor<f32>, tensor<1x1x2x2xf32>
  %o = tx.matmul %pz, %v : tensor<1x1x2x2xf32>, tensor<1x1x2x8xf32>
  return %o : tensor<1x1x2x8xf32>
}

// -----

// A 2-key band selected by Where, then a constant causal triangle added:
// a key must pass both, so `causal window(2)` and no mask operand.
// CHECK-LABEL: func.func @where_window_then_causal_mask
// CHECK:         tx.attention %{{.+}}, %{{.+}}, %{{.+}} scale(1.000000e+00) causal window(2) : tensor<1x1x3x8xf32>, tensor<1x1x3x8xf32>, tensor<1x1x3x8xf32>
func.func @where_window_then_causal_mask(%q: tensor<1x1x3x8xf32>, %k: tensor<1x1x3x8xf32>, %v: tensor<1x1x3x8xf32>) -> tensor<1x1x3x8xf32> {
  %band = tx.constant dense<[[true, false, false],
                             [true, true, false],
                             [false, true, true]]> : tensor<3x3xi1>
  %ninf = tx.constant dense<0xFF800000> : tensor<f32>
  %causal = tx.constant dense<[[0.0, 0xFF800000, 0xFF800000],
                               [0.0, 0.0, 0xFF800000],
                               [0.0, 0.0, 0.0]]> : tensor<3x3xf32>
  %kt = tx.transpose %k perm [0, 1, 3, 2] : tensor<1x1x3x8xf32>
  %s = tx.matmul %q, %kt : tensor<1x1x3x8xf32>, tensor<1x1x8x3xf32>
  %w = tx.where %band, %s, %ninf : tensor<3x3xi1>, tensor<1x1x3x3xf32>, tensor<f32>
  %sm = tx.add %w, %causal : tensor<1x1x3x3xf32>, tensor<3x3xf32>
  %p = tx.softmax %sm axis(-1) : tensor<1x1x3x3xf32>
  %o = tx.matmul %p, %v : tensor<1x1x3x3xf32>, tensor<1x1x3x8xf32>
  return %o : tensor<1x1x3x8xf32>
}

// -----

// A condition that keeps every score: the Where disappears.
// CHECK-LABEL: func.func @where_keeps_all
// CHECK:         tx.attention %{{.+}}, %{{.+}}, %{{.+}} scale(1.000000e+00) : tensor<1x1x2x8xf32>, tensor<1x1x2x8xf32>, tensor<1x1x2x8xf32>
// CHECK-NOT:     causal
func.func @where_keeps_all(%q: tensor<1x1x2x8xf32>, %k: tensor<1x1x2x8xf32>, %v: tensor<1x1x2x8xf32>) -> tensor<1x1x2x8xf32> {
  %all = tx.constant dense<true> : tensor<1x1x1x2xi1>
  %min = tx.constant dense<-3.40282347E+38> : tensor<f32>
  %kt = tx.transpose %k perm [0, 1, 3, 2] : tensor<1x1x2x8xf32>
  %s = tx.matmul %q, %kt : tensor<1x1x2x8xf32>, tensor<1x1x8x2xf32>
  %sm = tx.where %all, %s, %min : tensor<1x1x1x2xi1>, tensor<1x1x2x2xf32>, tensor<f32>
  %p = tx.softmax %sm axis(-1) : tensor<1x1x2x2xf32>
  %o = tx.matmul %p, %v : tensor<1x1x2x2xf32>, tensor<1x1x2x8xf32>
  return %o : tensor<1x1x2x8xf32>
}

//===----------------------------------------------------------------------===//
// Not fused
//===----------------------------------------------------------------------===//

// -----

// A softmax over the queries, not the keys.
// CHECK-LABEL: func.func @softmax_other_axis
// CHECK-NOT:     tx.attention
// CHECK:         tx.softmax
func.func @softmax_other_axis(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %kt = tx.transpose %k perm [0, 1, 3, 2] : tensor<1x2x4x8xf32>
  %s = tx.matmul %q, %kt : tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>
  // EXPLAIN: remark: not fused: attention: expected a softmax over the last axis (keys), but got axis 2
  %p = tx.softmax %s axis(2) : tensor<1x2x4x4xf32>
  %o = tx.matmul %p, %v : tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

// A scale that differs per key is not a uniform scale.
// CHECK-LABEL: func.func @scale_per_key
// CHECK-NOT:     tx.attention
func.func @scale_per_key(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %kt = tx.transpose %k perm [0, 1, 3, 2] : tensor<1x2x4x8xf32>
  %s = tx.matmul %q, %kt : tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>
  %c = tx.constant dense<[0.125, 0.25, 0.125, 0.125]> : tensor<4xf32>
  %ss = tx.mul %s, %c : tensor<1x2x4x4xf32>, tensor<4xf32>
  // EXPLAIN: remark: not fused: attention: expected a scalar scale, but 'tx.mul' scales by a tensor
  %p = tx.softmax %ss axis(-1) : tensor<1x2x4x4xf32>
  %o = tx.matmul %p, %v : tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

// The probabilities escape (attention weights returned, output_attentions).
// CHECK-LABEL: func.func @probabilities_escape
// CHECK-NOT:     tx.attention
func.func @probabilities_escape(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>)
    -> (tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32>) {
  %kt = tx.transpose %k perm [0, 1, 3, 2] : tensor<1x2x4x8xf32>
  %s = tx.matmul %q, %kt : tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>
  // EXPLAIN: remark: not fused: attention: expected the probabilities to feed only the matmul with v, but they have another user ('func.return')
  %p = tx.softmax %s axis(-1) : tensor<1x2x4x4xf32>
  %o = tx.matmul %p, %v : tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>
  return %o, %p : tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32>
}

// -----

// The scores escape.
// CHECK-LABEL: func.func @scores_escape
// CHECK-NOT:     tx.attention
func.func @scores_escape(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>)
    -> (tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32>) {
  %kt = tx.transpose %k perm [0, 1, 3, 2] : tensor<1x2x4x8xf32>
  %s = tx.matmul %q, %kt : tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>
  // EXPLAIN: remark: not fused: attention: intermediate 'tx.matmul' has a user outside the attention ('func.return')
  %p = tx.softmax %s axis(-1) : tensor<1x2x4x4xf32>
  %o = tx.matmul %p, %v : tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>
  return %o, %s : tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32>
}

// -----

// A training dropout on the probabilities becomes the op's dropout: the
// same key, ratio and seed, so the same mask (the dropout goes too).
// CHECK-LABEL: func.func @dropout_on_probabilities
// CHECK:         %[[KEY:.+]] = tx.constant dense<0> : tensor<i64>
// CHECK:         %{{.+}}, %{{.+}} = tx.attention %arg0, %arg1, %arg2 scale(1.000000e+00) dropout(%[[KEY]], 1.000000e-01, 1) :
// CHECK-NOT:     tx.dropout
// CHECK-NOT:     tx.softmax
func.func @dropout_on_probabilities(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %key = tx.constant dense<0> : tensor<i64>
  %kt = tx.transpose %k perm [0, 1, 3, 2] : tensor<1x2x4x8xf32>
  %s = tx.matmul %q, %kt : tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>
  %p = tx.softmax %s axis(-1) : tensor<1x2x4x4xf32>
  %d = tx.dropout %p, %key ratio(1.000000e-01) seed(1) : tensor<1x2x4x4xf32>
  %o = tx.matmul %d, %v : tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

// Must not fire: the dropped-out probabilities are read by something else
// too (the fused op would not expose them).
// CHECK-LABEL: func.func @dropout_read_twice
// CHECK-NOT:     tx.attention
func.func @dropout_read_twice(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32>) {
  %key = tx.constant dense<0> : tensor<i64>
  %kt = tx.transpose %k perm [0, 1, 3, 2] : tensor<1x2x4x8xf32>
  %s = tx.matmul %q, %kt : tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>
  // EXPLAIN: remark: not fused: attention: expected the dropped-out probabilities to feed only the matmul with v, but they have another user
  %p = tx.softmax %s axis(-1) : tensor<1x2x4x4xf32>
  %d = tx.dropout %p, %key ratio(1.000000e-01) seed(1) : tensor<1x2x4x4xf32>
  %o = tx.matmul %d, %v : tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>
  return %o, %d : tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32>
}

// -----

// A learned additive bias would need the gradient tx.attention_grad does not give.
tx.parameter @bias = dense<0.5> : tensor<4x4xf32>
// CHECK-LABEL: func.func @trainable_mask
// CHECK-NOT:     tx.attention
func.func @trainable_mask(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %b = tx.load_parameter @bias : tensor<4x4xf32>
  %kt = tx.transpose %k perm [0, 1, 3, 2] : tensor<1x2x4x8xf32>
  %s = tx.matmul %q, %kt : tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>
  %sm = tx.add %s, %b : tensor<1x2x4x4xf32>, tensor<4x4xf32>
  // EXPLAIN: remark: not fused: attention: expected a mask that needs no gradient, but it reads a trainable parameter
  %p = tx.softmax %sm axis(-1) : tensor<1x2x4x4xf32>
  %o = tx.matmul %p, %v : tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

// A softmax that is not attention (a classifier head) is not a candidate.
// CHECK-LABEL: func.func @plain_softmax
// CHECK:         tx.softmax
func.func @plain_softmax(%x: tensor<2x10xf32>) -> tensor<2x10xf32> {
  %p = tx.softmax %x axis(-1) : tensor<2x10xf32>
  return %p : tensor<2x10xf32>
}

// -----

// A row guard that reads another tensor than the mask added to the scores
// is not tx.attention's rule for rows without a visible key.
// CHECK-LABEL: func.func @row_guard_other_mask
// CHECK-NOT:     tx.attention
func.func @row_guard_other_mask(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %m: tensor<4x4xf32>, %other: tensor<4x4xf32>) -> tensor<1x2x4x8xf32> {
  %kt = tx.transpose %k perm [0, 1, 3, 2] : tensor<1x2x4x8xf32>
  %s = tx.matmul %q, %kt : tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>
  %sm = tx.add %s, %m : tensor<1x2x4x4xf32>, tensor<4x4xf32>
  // EXPLAIN: remark: not fused: attention: expected the fully-masked-row guard to read the attention mask
  %p = tx.softmax %sm axis(-1) : tensor<1x2x4x4xf32>
  %max = tx.reduce_max %other axes [1] keep_dims : tensor<4x4xf32>
  %ninf = tx.constant dense<0xFF800000> : tensor<f32>
  %none = tx.equal %max, %ninf : tensor<4x1xf32>, tensor<f32>
  %zero = tx.constant dense<0.0> : tensor<f32>
  %pz = tx.where %none, %zero, %p : tensor<4x1xi1>, tensor<f32>, tensor<1x2x4x4xf32>
  %o = tx.matmul %pz, %v : tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

// A Where whose condition is computed at run time: whether a row keeps no
// key is unknown, and the finite fill would give it uniform probabilities.
// CHECK-LABEL: func.func @where_runtime_condition
// CHECK-NOT:     tx.attention
func.func @where_runtime_condition(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %keep: tensor<1x1x4x4xi1>) -> tensor<1x2x4x8xf32> {
  %min = tx.constant dense<-3.40282347E+38> : tensor<f32>
  %kt = tx.transpose %k perm [0, 1, 3, 2] : tensor<1x2x4x8xf32>
  %s = tx.matmul %q, %kt : tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>
  %sm = tx.where %keep, %s, %min : tensor<1x1x4x4xi1>, tensor<1x2x4x4xf32>, tensor<f32>
  // EXPLAIN: remark: not fused: attention: expected a constant condition in 'tx.where' on the scores, but it is computed at run time
  %p = tx.softmax %sm axis(-1) : tensor<1x2x4x4xf32>
  %o = tx.matmul %p, %v : tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

// A fill of 0 is a real score, not a mask: the masked keys keep weight.
// CHECK-LABEL: func.func @where_fill_zero
// CHECK-NOT:     tx.attention
func.func @where_fill_zero(%q: tensor<1x1x2x8xf32>, %k: tensor<1x1x2x8xf32>, %v: tensor<1x1x2x8xf32>) -> tensor<1x1x2x8xf32> {
  %causal = tx.constant dense<[[true, false], [true, true]]> : tensor<2x2xi1>
  %zero = tx.constant dense<0.0> : tensor<f32>
  %kt = tx.transpose %k perm [0, 1, 3, 2] : tensor<1x1x2x8xf32>
  %s = tx.matmul %q, %kt : tensor<1x1x2x8xf32>, tensor<1x1x8x2xf32>
  %sm = tx.where %causal, %s, %zero : tensor<2x2xi1>, tensor<1x1x2x2xf32>, tensor<f32>
  // EXPLAIN: remark: not fused: attention: expected the fill of 'tx.where' on the scores to be -inf or at most -1e30 (exp flushes it to exactly 0), but got 0
  %p = tx.softmax %sm axis(-1) : tensor<1x1x2x2xf32>
  %o = tx.matmul %p, %v : tensor<1x1x2x2xf32>, tensor<1x1x2x8xf32>
  return %o : tensor<1x1x2x8xf32>
}

// -----

// -1e4 (BERT's old mask value) leaves exp(-1e4 - max) = 0 only for scores
// above about -9900: not exact.
// CHECK-LABEL: func.func @where_fill_minus_1e4
// CHECK-NOT:     tx.attention
func.func @where_fill_minus_1e4(%q: tensor<1x1x2x8xf32>, %k: tensor<1x1x2x8xf32>, %v: tensor<1x1x2x8xf32>) -> tensor<1x1x2x8xf32> {
  %causal = tx.constant dense<[[true, false], [true, true]]> : tensor<2x2xi1>
  %fill = tx.constant dense<-1.0e+04> : tensor<f32>
  %kt = tx.transpose %k perm [0, 1, 3, 2] : tensor<1x1x2x8xf32>
  %s = tx.matmul %q, %kt : tensor<1x1x2x8xf32>, tensor<1x1x8x2xf32>
  %sm = tx.where %causal, %s, %fill : tensor<2x2xi1>, tensor<1x1x2x2xf32>, tensor<f32>
  // EXPLAIN: remark: not fused: attention: expected the fill of 'tx.where' on the scores to be -inf or at most -1e30 (exp flushes it to exactly 0), but got -10000
  %p = tx.softmax %sm axis(-1) : tensor<1x1x2x2xf32>
  %o = tx.matmul %p, %v : tensor<1x1x2x2xf32>, tensor<1x1x2x8xf32>
  return %o : tensor<1x1x2x8xf32>
}

// -----

// finfo(f16).min = -65504 is within the range of the f16 scores themselves.
// CHECK-LABEL: func.func @where_f16_finfo_min
// CHECK-NOT:     tx.attention
func.func @where_f16_finfo_min(%q: tensor<1x1x2x8xf16>, %k: tensor<1x1x2x8xf16>, %v: tensor<1x1x2x8xf16>) -> tensor<1x1x2x8xf16> {
  %causal = tx.constant dense<[[true, false], [true, true]]> : tensor<2x2xi1>
  %min = tx.constant dense<-65504.0> : tensor<f16>
  %kt = tx.transpose %k perm [0, 1, 3, 2] : tensor<1x1x2x8xf16>
  %s = tx.matmul %q, %kt : tensor<1x1x2x8xf16>, tensor<1x1x8x2xf16>
  %sm = tx.where %causal, %s, %min : tensor<2x2xi1>, tensor<1x1x2x2xf16>, tensor<f16>
  // EXPLAIN: remark: not fused: attention: expected the fill of 'tx.where' on f16 scores to be -inf (exp flushes it to exactly 0), but got -65504
  %p = tx.softmax %sm axis(-1) : tensor<1x1x2x2xf16>
  %o = tx.matmul %p, %v : tensor<1x1x2x2xf16>, tensor<1x1x2x8xf16>
  return %o : tensor<1x1x2x8xf16>
}

// -----

// A fill per position is not a mask value.
// CHECK-LABEL: func.func @where_fill_not_scalar
// CHECK-NOT:     tx.attention
func.func @where_fill_not_scalar(%q: tensor<1x1x2x8xf32>, %k: tensor<1x1x2x8xf32>, %v: tensor<1x1x2x8xf32>) -> tensor<1x1x2x8xf32> {
  %causal = tx.constant dense<[[true, false], [true, true]]> : tensor<2x2xi1>
  %fill = tx.constant dense<[-3.40282347E+38, -1.0]> : tensor<2xf32>
  %kt = tx.transpose %k perm [0, 1, 3, 2] : tensor<1x1x2x8xf32>
  %s = tx.matmul %q, %kt : tensor<1x1x2x8xf32>, tensor<1x1x8x2xf32>
  %sm = tx.where %causal, %s, %fill : tensor<2x2xi1>, tensor<1x1x2x2xf32>, tensor<2xf32>
  // EXPLAIN: remark: not fused: attention: expected a scalar fill in 'tx.where' on the scores, but got 'tensor<2xf32>'
  %p = tx.softmax %sm axis(-1) : tensor<1x1x2x2xf32>
  %o = tx.matmul %p, %v : tensor<1x1x2x2xf32>, tensor<1x1x2x8xf32>
  return %o : tensor<1x1x2x8xf32>
}

// -----

// A fill computed at run time.
// CHECK-LABEL: func.func @where_fill_runtime
// CHECK-NOT:     tx.attention
func.func @where_fill_runtime(%q: tensor<1x1x2x8xf32>, %k: tensor<1x1x2x8xf32>, %v: tensor<1x1x2x8xf32>, %fill: tensor<f32>) -> tensor<1x1x2x8xf32> {
  %causal = tx.constant dense<[[true, false], [true, true]]> : tensor<2x2xi1>
  %kt = tx.transpose %k perm [0, 1, 3, 2] : tensor<1x1x2x8xf32>
  %s = tx.matmul %q, %kt : tensor<1x1x2x8xf32>, tensor<1x1x8x2xf32>
  %sm = tx.where %causal, %s, %fill : tensor<2x2xi1>, tensor<1x1x2x2xf32>, tensor<f32>
  // EXPLAIN: remark: not fused: attention: expected a constant fill in 'tx.where' on the scores, but it is computed at run time
  %p = tx.softmax %sm axis(-1) : tensor<1x1x2x2xf32>
  %o = tx.matmul %p, %v : tensor<1x1x2x2xf32>, tensor<1x1x2x8xf32>
  return %o : tensor<1x1x2x8xf32>
}

// -----

// The causal buffer used in the wrong direction, Where(causal, fill,
// scores): the kept keys are the strict upper triangle, the last query keeps
// none, and the unfused softmax gives that row uniform probabilities where
// tx.attention would give zeros. Never `causal`.
// CHECK-LABEL: func.func @where_wrong_direction
// CHECK-NOT:     tx.attention
func.func @where_wrong_direction(%q: tensor<1x1x3x8xf32>, %k: tensor<1x1x3x8xf32>, %v: tensor<1x1x3x8xf32>) -> tensor<1x1x3x8xf32> {
  %causal = tx.constant dense<[[true, false, false],
                               [true, true, false],
                               [true, true, true]]> : tensor<3x3xi1>
  %min = tx.constant dense<-3.40282347E+38> : tensor<f32>
  %kt = tx.transpose %k perm [0, 1, 3, 2] : tensor<1x1x3x8xf32>
  %s = tx.matmul %q, %kt : tensor<1x1x3x8xf32>, tensor<1x1x8x3xf32>
  %sm = tx.where %causal, %min, %s : tensor<3x3xi1>, tensor<f32>, tensor<1x1x3x3xf32>
  // EXPLAIN: remark: not fused: attention: expected the condition of 'tx.where' to keep a key in every query row, but a row keeps none (the softmax gives it uniform probabilities, tx.attention zeros)
  %p = tx.softmax %sm axis(-1) : tensor<1x1x3x3xf32>
  %o = tx.matmul %p, %v : tensor<1x1x3x3xf32>, tensor<1x1x3x8xf32>
  return %o : tensor<1x1x3x8xf32>
}

// -----

// The same with -inf and no NaN guard: the unfused row is NaN.
// CHECK-LABEL: func.func @where_empty_row_no_guard
// CHECK-NOT:     tx.attention
func.func @where_empty_row_no_guard(%q: tensor<1x1x2x8xf32>, %k: tensor<1x1x2x8xf32>, %v: tensor<1x1x2x8xf32>) -> tensor<1x1x2x8xf32> {
  %keep = tx.constant dense<[[false, true], [false, false]]> : tensor<2x2xi1>
  %ninf = tx.constant dense<0xFF800000> : tensor<f32>
  %kt = tx.transpose %k perm [0, 1, 3, 2] : tensor<1x1x2x8xf32>
  %s = tx.matmul %q, %kt : tensor<1x1x2x8xf32>, tensor<1x1x8x2xf32>
  %sm = tx.where %keep, %s, %ninf : tensor<2x2xi1>, tensor<1x1x2x2xf32>, tensor<f32>
  // EXPLAIN: remark: not fused: attention: expected the condition of 'tx.where' to keep a key in every query row, but a row keeps none (the softmax gives it NaN, tx.attention zeros)
  %p = tx.softmax %sm axis(-1) : tensor<1x1x2x2xf32>
  %o = tx.matmul %p, %v : tensor<1x1x2x2xf32>, tensor<1x1x2x8xf32>
  return %o : tensor<1x1x2x8xf32>
}

// -----

// GPT-2 with a padding mask: Where(causal, scores, finfo.min) + mask. A
// query whose kept keys are all padding gets finfo.min + finfo.min = -inf
// there but finfo.min at the later keys, so the unfused softmax spreads it
// over the future; tx.attention cannot.
// CHECK-LABEL: func.func @where_finite_fill_then_mask
// CHECK-NOT:     tx.attention
func.func @where_finite_fill_then_mask(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %m: tensor<1x1x1x4xf32>) -> tensor<1x2x4x8xf32> {
  %causal = tx.constant dense<[[true, false, false, false],
                               [true, true, false, false],
                               [true, true, true, false],
                               [true, true, true, true]]> : tensor<4x4xi1>
  %min = tx.constant dense<-3.40282347E+38> : tensor<f32>
  %kt = tx.transpose %k perm [0, 1, 3, 2] : tensor<1x2x4x8xf32>
  %s = tx.matmul %q, %kt : tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>
  %w = tx.where %causal, %s, %min : tensor<4x4xi1>, tensor<1x2x4x4xf32>, tensor<f32>
  %sm = tx.add %w, %m : tensor<1x2x4x4xf32>, tensor<1x1x1x4xf32>
  // EXPLAIN: remark: not fused: attention: expected a fill of -inf in 'tx.where' when a mask is added after it, but got -3.402823e+38
  %p = tx.softmax %sm axis(-1) : tensor<1x2x4x4xf32>
  %o = tx.matmul %p, %v : tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

// A non-causal condition and an added mask: two mask operands, which
// tx.attention does not take.
// CHECK-LABEL: func.func @where_pattern_then_mask
// CHECK-NOT:     tx.attention
func.func @where_pattern_then_mask(%q: tensor<1x1x3x8xf32>, %k: tensor<1x1x3x8xf32>, %v: tensor<1x1x3x8xf32>, %m: tensor<1x1x1x3xf32>) -> tensor<1x1x3x8xf32> {
  %upper = tx.constant dense<[[true, true, true],
                              [false, true, true],
                              [false, false, true]]> : tensor<3x3xi1>
  %ninf = tx.constant dense<0xFF800000> : tensor<f32>
  %kt = tx.transpose %k perm [0, 1, 3, 2] : tensor<1x1x3x8xf32>
  %s = tx.matmul %q, %kt : tensor<1x1x3x8xf32>, tensor<1x1x8x3xf32>
  %w = tx.where %upper, %s, %ninf : tensor<3x3xi1>, tensor<1x1x3x3xf32>, tensor<f32>
  %sm = tx.add %w, %m : tensor<1x1x3x3xf32>, tensor<1x1x1x3xf32>
  // EXPLAIN: remark: not fused: attention: expected a causal condition in 'tx.where' when a mask is added after it too, but got another pattern
  %p = tx.softmax %sm axis(-1) : tensor<1x1x3x3xf32>
  %o = tx.matmul %p, %v : tensor<1x1x3x3xf32>, tensor<1x1x3x8xf32>
  return %o : tensor<1x1x3x8xf32>
}
