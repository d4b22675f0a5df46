// RUN: txopt-opt %s --split-input-file --tx-attention-casts | FileCheck %s

// tx-attention-casts: the casts between the head split/merge and a bf16
// attention move to the far side of the layout chains, so that the chains
// join the attention op to the projections' buffers (which the GPU backend
// then reads and writes as strided views).

// GPT-2's attention after autocast: one f32 q/k/v projection split into
// heads, each piece cast to bf16; the bf16 result widened, then merged.
// After: one cast of the projection before the split; the merge happens in
// bf16 and one cast widens the merged result.
// CHECK-LABEL: func.func @head_split_and_merge
// CHECK:      %[[C:.*]] = tx.cast %arg0 : tensor<2x16x96xf32> to tensor<2x16x96xbf16>
// CHECK-NEXT: %[[S:.*]]:3 = tx.split %[[C]] axis(-1) : tensor<2x16x96xbf16> -> tensor<2x16x32xbf16>, tensor<2x16x32xbf16>, tensor<2x16x32xbf16>
// CHECK-NOT:  tx.cast
// CHECK:      %[[O:.*]], %{{.*}} = tx.attention
// CHECK-NEXT: %[[T:.*]] = tx.transpose %[[O]] perm [0, 2, 1, 3] : tensor<2x4x16x8xbf16>
// CHECK-NEXT: %[[R:.*]] = tx.reshape %[[T]] : tensor<2x16x4x8xbf16> -> tensor<2x16x32xbf16>
// CHECK-NEXT: %[[W:.*]] = tx.cast %[[R]] : tensor<2x16x32xbf16> to tensor<2x16x32xf32>
// CHECK-NEXT: return %[[W]]
func.func @head_split_and_merge(%qkv: tensor<2x16x96xf32>) -> tensor<2x16x32xf32> {
  %q, %k, %v = tx.split %qkv axis(-1) : tensor<2x16x96xf32> -> tensor<2x16x32xf32>, tensor<2x16x32xf32>, tensor<2x16x32xf32>
  %q4 = tx.reshape %q : tensor<2x16x32xf32> -> tensor<2x16x4x8xf32>
  %k4 = tx.reshape %k : tensor<2x16x32xf32> -> tensor<2x16x4x8xf32>
  %v4 = tx.reshape %v : tensor<2x16x32xf32> -> tensor<2x16x4x8xf32>
  %qt = tx.transpose %q4 perm [0, 2, 1, 3] : tensor<2x16x4x8xf32>
  %kt = tx.transpose %k4 perm [0, 2, 1, 3] : tensor<2x16x4x8xf32>
  %vt = tx.transpose %v4 perm [0, 2, 1, 3] : tensor<2x16x4x8xf32>
  %qb = tx.cast %qt : tensor<2x4x16x8xf32> to tensor<2x4x16x8xbf16>
  %kb = tx.cast %kt : tensor<2x4x16x8xf32> to tensor<2x4x16x8xbf16>
  %vb = tx.cast %vt : tensor<2x4x16x8xf32> to tensor<2x4x16x8xbf16>
  %o, %lse = tx.attention %qb, %kb, %vb scale(0.35355339) causal
      : tensor<2x4x16x8xbf16>, tensor<2x4x16x8xbf16>, tensor<2x4x16x8xbf16>
  %of = tx.cast %o : tensor<2x4x16x8xbf16> to tensor<2x4x16x8xf32>
  %ot = tx.transpose %of perm [0, 2, 1, 3] : tensor<2x4x16x8xf32>
  %om = tx.reshape %ot : tensor<2x16x4x8xf32> -> tensor<2x16x32xf32>
  return %om : tensor<2x16x32xf32>
}

// -----

// The backward: dQ, dK, dV widened and concatenated (the q/k/v
// projection's gradient) are concatenated in bf16 and widened once; a
// narrowing cast of a widened bf16 value (dO read back in bf16) is the
// bf16 value itself.
// CHECK-LABEL: func.func @gradients_concatenated
// CHECK-NOT:  tx.cast %arg0
// CHECK:      %[[DQ:.*]], %[[DK:.*]], %[[DV:.*]] = tx.attention_grad %arg0, %arg1, %arg2, %arg3, %arg4, %arg5
// CHECK-NEXT: %[[C:.*]] = tx.concat %[[DQ]], %[[DK]], %[[DV]] axis(-1) : tensor<2x4x16x8xbf16>, tensor<2x4x16x8xbf16>, tensor<2x4x16x8xbf16>
// CHECK-NEXT: %[[W:.*]] = tx.cast %[[C]] : tensor<2x4x16x24xbf16> to tensor<2x4x16x24xf32>
// CHECK-NEXT: return %[[W]]
func.func @gradients_concatenated(%do: tensor<2x4x16x8xbf16>, %q: tensor<2x4x16x8xbf16>, %k: tensor<2x4x16x8xbf16>,
                                  %v: tensor<2x4x16x8xbf16>, %o: tensor<2x4x16x8xbf16>, %lse: tensor<2x4x16xf32>)
    -> tensor<2x4x16x24xf32> {
  %dof = tx.cast %do : tensor<2x4x16x8xbf16> to tensor<2x4x16x8xf32>
  %dob = tx.cast %dof : tensor<2x4x16x8xf32> to tensor<2x4x16x8xbf16>
  %dq, %dk, %dv = tx.attention_grad %dob, %q, %k, %v, %o, %lse scale(0.35355339) causal
      : tensor<2x4x16x8xbf16>, tensor<2x4x16x8xbf16>, tensor<2x4x16x8xbf16>, tensor<2x4x16x8xbf16>, tensor<2x4x16xf32>
  %dqf = tx.cast %dq : tensor<2x4x16x8xbf16> to tensor<2x4x16x8xf32>
  %dkf = tx.cast %dk : tensor<2x4x16x8xbf16> to tensor<2x4x16x8xf32>
  %dvf = tx.cast %dv : tensor<2x4x16x8xbf16> to tensor<2x4x16x8xf32>
  %g = tx.concat %dqf, %dkf, %dvf axis(-1) : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>
  return %g : tensor<2x4x16x24xf32>
}

// -----

// Must not fire: the projection's piece is also read by something other
// than attention (the cast stays after the transpose; the attention result
// returned as it is), and a concat with an operand that is not a widened
// attention result (the casts stay).
// CHECK-LABEL: func.func @piece_read_elsewhere
// CHECK:      tx.transpose %arg0
// CHECK-NEXT: tx.cast %{{.*}} : tensor<2x4x16x8xf32> to tensor<2x4x16x8xbf16>
// CHECK-LABEL: func.func @concat_with_other
// CHECK:      tx.attention
// CHECK-NEXT: %[[W:.*]] = tx.cast %{{.*}} : tensor<2x4x16x8xbf16> to tensor<2x4x16x8xf32>
// CHECK-NEXT: tx.concat %[[W]], %arg1 axis(-1) : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>
func.func @piece_read_elsewhere(%x: tensor<2x16x4x8xf32>) -> (tensor<2x4x16x8xbf16>, tensor<2x4x16x8xf32>) {
  %t = tx.transpose %x perm [0, 2, 1, 3] : tensor<2x16x4x8xf32>
  %b = tx.cast %t : tensor<2x4x16x8xf32> to tensor<2x4x16x8xbf16>
  %o, %lse = tx.attention %b, %b, %b scale(0.35355339)
      : tensor<2x4x16x8xbf16>, tensor<2x4x16x8xbf16>, tensor<2x4x16x8xbf16>
  %n = tx.neg %t : tensor<2x4x16x8xf32>
  return %o, %n : tensor<2x4x16x8xbf16>, tensor<2x4x16x8xf32>
}
func.func @concat_with_other(%q: tensor<2x4x16x8xbf16>, %other: tensor<2x4x16x8xf32>) -> tensor<2x4x16x16xf32> {
  %o, %lse = tx.attention %q, %q, %q scale(0.35355339)
      : tensor<2x4x16x8xbf16>, tensor<2x4x16x8xbf16>, tensor<2x4x16x8xbf16>
  %of = tx.cast %o : tensor<2x4x16x8xbf16> to tensor<2x4x16x8xf32>
  %g = tx.concat %of, %other axis(-1) : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>
  return %g : tensor<2x4x16x16xf32>
}
