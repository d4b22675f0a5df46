// The layout rewrites the GPU lowering runs before its kernel grouping
// (tx-gemm-transposes, tx-attention-bias, tx-attention-casts) leave every
// value the same bits on the executor: each function below runs as written
// and after the three passes, on random inputs, and every output must be
// bit-identical (and not all zeros: the products happened). The greps check
// that each pass did rewrite something here.
// RUN: rm -rf %t && mkdir -p %t
// RUN: txopt-opt %s --tx-gemm-transposes --tx-attention-bias --tx-attention-casts -o %t/after.mlir
// RUN: FileCheck %s --check-prefix=AFTER < %t/after.mlir
// AFTER-LABEL: func.func @tied_head
// AFTER:       tx.cast %arg1 : tensor<16x8xf32> to tensor<16x8xbf16>
// AFTER-LABEL: func.func @tied_head_gradient
// AFTER:       tx.matmul %{{.*}}, %arg0 : tensor<16x4xf32>, tensor<4x8xf32>
// AFTER-LABEL: func.func @padding_mask
// AFTER:       tx.expand %arg3 : tensor<2x1x1x6xbf16> -> tensor<2x1x6x6xbf16>
// AFTER-LABEL: func.func @heads
// AFTER:       tx.cast %arg0 : tensor<2x6x48xf32> to tensor<2x6x48xbf16>
// AFTER:       tx.concat %{{.*}}, %{{.*}}, %{{.*}} axis(-1) : tensor<2x2x6x8xbf16>
// RUN: for f in tied_head tied_head_gradient padding_mask heads; do txopt-run %s --function $f --seed 5 --output-dir %t/before/$f > /dev/null && txopt-run %t/after.mlir --function $f --seed 5 --output-dir %t/after/$f > /dev/null || exit 1; done
// RUN: %python %S/same_outputs.py %t/before %t/after | FileCheck %s
// CHECK: 9 outputs bit-identical, none all zeros

// The tied LM head in bf16: the embedding read transposed by the forward
// GEMM and as it is by the backward's.
func.func @tied_head(%x: tensor<4x8xbf16>, %w: tensor<16x8xf32>, %dy: tensor<4x16xbf16>)
    -> (tensor<4x16xbf16> {tx.name = "y"}, tensor<4x8xbf16> {tx.name = "dx"}) {
  %t = tx.transpose %w perm [1, 0] : tensor<16x8xf32>
  %c = tx.cast %t : tensor<8x16xf32> to tensor<8x16xbf16>
  %y = tx.matmul %x, %c : tensor<4x8xbf16>, tensor<8x16xbf16>
  %back = tx.transpose %c perm [1, 0] : tensor<8x16xbf16>
  %dx = tx.matmul %dy, %back : tensor<4x16xbf16>, tensor<16x8xbf16>
  return %y, %dx : tensor<4x16xbf16>, tensor<4x8xbf16>
}

// Its gradient: x^T dy read transposed, added to the gather gradient.
func.func @tied_head_gradient(%x: tensor<4x8xf32>, %dy: tensor<4x16xf32>, %g: tensor<16x8xf32>)
    -> (tensor<16x8xf32> {tx.name = "dw"}) {
  %xt = tx.transpose %x perm [1, 0] : tensor<4x8xf32>
  %dwt = tx.matmul %xt, %dy : tensor<8x4xf32>, tensor<4x16xf32>
  %dw = tx.transpose %dwt perm [1, 0] : tensor<8x16xf32>
  %s = tx.add %dw, %g : tensor<16x8xf32>, tensor<16x8xf32>
  return %s : tensor<16x8xf32>
}

// A [B, 1, 1, Tk] padding mask of q's type, forward and backward.
func.func @padding_mask(%q: tensor<2x2x6x8xbf16>, %k: tensor<2x2x6x8xbf16>, %v: tensor<2x2x6x8xbf16>,
                        %m: tensor<2x1x1x6xbf16>, %do: tensor<2x2x6x8xbf16>)
    -> (tensor<2x2x6x8xbf16> {tx.name = "o"}, tensor<2x2x6x8xbf16> {tx.name = "dq"},
        tensor<2x2x6x8xbf16> {tx.name = "dk"}, tensor<2x2x6x8xbf16> {tx.name = "dv"}) {
  %o, %lse = tx.attention %q, %k, %v mask(%m) scale(0.35355339)
      : tensor<2x2x6x8xbf16>, tensor<2x2x6x8xbf16>, tensor<2x2x6x8xbf16>, tensor<2x1x1x6xbf16>
  %dq, %dk, %dv = tx.attention_grad %do, %q, %k, %v, mask(%m), %o, %lse scale(0.35355339)
      : tensor<2x2x6x8xbf16>, tensor<2x2x6x8xbf16>, tensor<2x2x6x8xbf16>, tensor<2x2x6x8xbf16>, tensor<2x2x6xf32>, tensor<2x1x1x6xbf16>
  return %o, %dq, %dk, %dv : tensor<2x2x6x8xbf16>, tensor<2x2x6x8xbf16>, tensor<2x2x6x8xbf16>, tensor<2x2x6x8xbf16>
}

// The head split of an f32 q/k/v projection, bf16 attention and its
// gradient, the head merge of o and the concatenated dQ, dK, dV in f32.
func.func @heads(%qkv: tensor<2x6x48xf32>, %do: tensor<2x2x6x8xf32>)
    -> (tensor<2x6x16xf32> {tx.name = "o"}, tensor<2x2x6x24xf32> {tx.name = "dqkv"}) {
  %q, %k, %v = tx.split %qkv axis(-1) : tensor<2x6x48xf32> -> tensor<2x6x16xf32>, tensor<2x6x16xf32>, tensor<2x6x16xf32>
  %q4 = tx.reshape %q : tensor<2x6x16xf32> -> tensor<2x6x2x8xf32>
  %k4 = tx.reshape %k : tensor<2x6x16xf32> -> tensor<2x6x2x8xf32>
  %v4 = tx.reshape %v : tensor<2x6x16xf32> -> tensor<2x6x2x8xf32>
  %qt = tx.transpose %q4 perm [0, 2, 1, 3] : tensor<2x6x2x8xf32>
  %kt = tx.transpose %k4 perm [0, 2, 1, 3] : tensor<2x6x2x8xf32>
  %vt = tx.transpose %v4 perm [0, 2, 1, 3] : tensor<2x6x2x8xf32>
  %qb = tx.cast %qt : tensor<2x2x6x8xf32> to tensor<2x2x6x8xbf16>
  %kb = tx.cast %kt : tensor<2x2x6x8xf32> to tensor<2x2x6x8xbf16>
  %vb = tx.cast %vt : tensor<2x2x6x8xf32> to tensor<2x2x6x8xbf16>
  %o, %lse = tx.attention %qb, %kb, %vb scale(0.35355339) causal
      : tensor<2x2x6x8xbf16>, tensor<2x2x6x8xbf16>, tensor<2x2x6x8xbf16>
  %of = tx.cast %o : tensor<2x2x6x8xbf16> to tensor<2x2x6x8xf32>
  %ot = tx.transpose %of perm [0, 2, 1, 3] : tensor<2x2x6x8xf32>
  %om = tx.reshape %ot : tensor<2x6x2x8xf32> -> tensor<2x6x16xf32>
  %dob = tx.cast %do : tensor<2x2x6x8xf32> to tensor<2x2x6x8xbf16>
  %dq, %dk, %dv = tx.attention_grad %dob, %qb, %kb, %vb, %o, %lse scale(0.35355339) causal
      : tensor<2x2x6x8xbf16>, tensor<2x2x6x8xbf16>, tensor<2x2x6x8xbf16>, tensor<2x2x6x8xbf16>, tensor<2x2x6xf32>
  %dqf = tx.cast %dq : tensor<2x2x6x8xbf16> to tensor<2x2x6x8xf32>
  %dkf = tx.cast %dk : tensor<2x2x6x8xbf16> to tensor<2x2x6x8xf32>
  %dvf = tx.cast %dv : tensor<2x2x6x8xbf16> to tensor<2x2x6x8xf32>
  %g = tx.concat %dqf, %dkf, %dvf axis(-1) : tensor<2x2x6x8xf32>, tensor<2x2x6x8xf32>, tensor<2x2x6x8xf32>
  return %om, %g : tensor<2x6x16xf32>, tensor<2x2x6x24xf32>
}
