// RUN: txopt-opt %s --split-input-file --tx-attention-bias | FileCheck %s

// tx-attention-bias: an attention mask becomes the [B|1, H|1, Tq, Tk] bias
// of q's type that cuDNN's fused attention reads (an expand over the query
// and key dims, batch and heads left broadcast, then a cast).

// A [B, 1, 1, Tk] f32 padding mask beside f16 attention: spelled out over
// Tq (B * Tq * Tk, not B * H * Tq * Tk) and cast to f16 once, right after
// the mask's definition, for the forward and its gradient alike.
// CHECK-LABEL: func.func @padding_mask
// CHECK:      %[[M:.*]] = tx.neg %arg3 : tensor<2x1x1x12xf32>
// CHECK-NEXT: %[[E:.*]] = tx.expand %[[M]] : tensor<2x1x1x12xf32> -> tensor<2x1x6x12xf32>
// CHECK-NEXT: %[[B:.*]] = tx.cast %[[E]] : tensor<2x1x6x12xf32> to tensor<2x1x6x12xf16>
// CHECK-NOT:  tx.expand
// CHECK:      tx.attention %arg0, %arg1, %arg2 mask(%[[B]])
// CHECK:      tx.attention_grad %{{.*}}, %arg0, %arg1, %arg2, mask(%[[B]]),
func.func @padding_mask(%q: tensor<2x4x6x8xf16>, %k: tensor<2x4x12x8xf16>, %v: tensor<2x4x12x8xf16>,
                        %pad: tensor<2x1x1x12xf32>)
    -> (tensor<2x4x6x8xf16>, tensor<2x4x6x8xf16>) {
  %m = tx.neg %pad : tensor<2x1x1x12xf32>
  %o, %lse = tx.attention %q, %k, %v mask(%m) scale(1.0)
      : tensor<2x4x6x8xf16>, tensor<2x4x12x8xf16>, tensor<2x4x12x8xf16>, tensor<2x1x1x12xf32>
  %dq, %dk, %dv = tx.attention_grad %o, %q, %k, %v, mask(%m), %o, %lse scale(1.0)
      : tensor<2x4x6x8xf16>, tensor<2x4x6x8xf16>, tensor<2x4x12x8xf16>, tensor<2x4x12x8xf16>, tensor<2x4x6xf32>, tensor<2x1x1x12xf32>
  return %o, %dq : tensor<2x4x6x8xf16>, tensor<2x4x6x8xf16>
}

// -----

// A 2-D [Tq, Tk] mask of q's type (a block argument): only the leading
// unit dims are spelled out, at the start of the block; no cast.
// CHECK-LABEL: func.func @two_d_mask
// CHECK-NEXT: %[[E:.*]] = tx.expand %arg3 : tensor<16x16xbf16> -> tensor<1x1x16x16xbf16>
// CHECK-NOT:  tx.cast
// CHECK:      tx.attention %arg0, %arg1, %arg2 mask(%[[E]])
func.func @two_d_mask(%q: tensor<2x8x16x64xbf16>, %k: tensor<2x8x16x64xbf16>, %v: tensor<2x8x16x64xbf16>,
                      %m: tensor<16x16xbf16>) -> tensor<2x8x16x64xbf16> {
  %o, %lse = tx.attention %q, %k, %v mask(%m) scale(0.125)
      : tensor<2x8x16x64xbf16>, tensor<2x8x16x64xbf16>, tensor<2x8x16x64xbf16>, tensor<16x16xbf16>
  return %o : tensor<2x8x16x64xbf16>
}

// -----

// Must not fire: a mask already in the bias form (heads broadcast), and
// attention without a mask.
// CHECK-LABEL: func.func @already_bias
// CHECK-NOT:  tx.expand
// CHECK-NOT:  tx.cast
// CHECK:      tx.attention %arg0, %arg1, %arg2 mask(%arg3)
// CHECK:      tx.attention %arg0, %arg1, %arg2 scale
func.func @already_bias(%q: tensor<2x8x16x64xbf16>, %k: tensor<2x8x16x64xbf16>, %v: tensor<2x8x16x64xbf16>,
                        %m: tensor<2x1x16x16xbf16>) -> (tensor<2x8x16x64xbf16>, tensor<2x8x16x64xbf16>) {
  %o, %lse = tx.attention %q, %k, %v mask(%m) scale(0.125)
      : tensor<2x8x16x64xbf16>, tensor<2x8x16x64xbf16>, tensor<2x8x16x64xbf16>, tensor<2x1x16x16xbf16>
  %o2, %lse2 = tx.attention %q, %k, %v scale(0.125) causal
      : tensor<2x8x16x64xbf16>, tensor<2x8x16x64xbf16>, tensor<2x8x16x64xbf16>
  return %o, %o2 : tensor<2x8x16x64xbf16>, tensor<2x8x16x64xbf16>
}
