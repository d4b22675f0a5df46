// RUN: txopt-opt %s --split-input-file --tx-rematerialize | FileCheck %s

// The MLP of a bf16 step: the GELU-like output %g is cast to bf16 for the
// forward GEMM and read again by the weight gradient after two more GEMMs.
// %h and %t stay alive until the GELU's gradient (%gg), so the cast is
// recomputed from them right before the weight gradient, which reads the
// clone; the forward GEMM keeps the original.
// CHECK-LABEL: func.func @mlp
// CHECK:         %[[H:.+]] = tx.add %arg0, %arg1
// CHECK-NEXT:    %[[T:.+]] = tx.tanh %[[H]]
// CHECK-NEXT:    %[[G:.+]] = tx.mul %[[H]], %[[T]]
// CHECK-NEXT:    %[[C:.+]] = tx.cast %[[G]]
// CHECK-NEXT:    %[[Y:.+]] = tx.matmul %[[C]], %arg2
// CHECK-NEXT:    %[[L:.+]] = tx.matmul %[[Y]], %arg3
// CHECK-NEXT:    %[[DY:.+]] = tx.matmul %[[L]], %arg4
// CHECK-NEXT:    %[[G2:.+]] = tx.mul %[[H]], %[[T]]
// CHECK-NEXT:    %[[C2:.+]] = tx.cast %[[G2]]
// CHECK-NEXT:    %[[CT:.+]] = tx.transpose %[[C2]]
// CHECK-NEXT:    %[[DW:.+]] = tx.matmul %[[CT]], %[[DY]]
// CHECK-NEXT:    %[[GG:.+]] = tx.mul %[[H]], %[[T]]
// CHECK-NEXT:    return %[[DW]], %[[GG]]
func.func @mlp(%x: tensor<4x8xf32>, %b: tensor<8xf32>, %w: tensor<8x8xbf16>,
               %w2: tensor<8x8xbf16>, %w3: tensor<8x8xbf16>)
    -> (tensor<8x8xbf16>, tensor<4x8xf32>) {
  %h = tx.add %x, %b : tensor<4x8xf32>, tensor<8xf32>
  %t = tx.tanh %h : tensor<4x8xf32>
  %g = tx.mul %h, %t : tensor<4x8xf32>, tensor<4x8xf32>
  %c = tx.cast %g : tensor<4x8xf32> to tensor<4x8xbf16>
  %y = tx.matmul %c, %w : tensor<4x8xbf16>, tensor<8x8xbf16>
  %l = tx.matmul %y, %w2 : tensor<4x8xbf16>, tensor<8x8xbf16>
  %dy = tx.matmul %l, %w3 : tensor<4x8xbf16>, tensor<8x8xbf16>
  %ct = tx.transpose %c perm [1, 0] : tensor<4x8xbf16>
  %dw = tx.matmul %ct, %dy : tensor<8x4xbf16>, tensor<4x8xbf16>
  %gg = tx.mul %h, %t : tensor<4x8xf32>, tensor<4x8xf32>
  return %dw, %gg : tensor<8x8xbf16>, tensor<4x8xf32>
}

// -----

// Must not fire: no GEMM between the two readers, so the value is not
// held across anything long.
// CHECK-LABEL: func.func @adjacent_readers
// CHECK-COUNT-1: tx.cast
// CHECK-NOT:     tx.cast
func.func @adjacent_readers(%x: tensor<4x8xf32>, %w: tensor<8x8xbf16>)
    -> (tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xf32>) {
  %h = tx.tanh %x : tensor<4x8xf32>
  %c = tx.cast %h : tensor<4x8xf32> to tensor<4x8xbf16>
  %y = tx.matmul %c, %w : tensor<4x8xbf16>, tensor<8x8xbf16>
  %z = tx.matmul %c, %w : tensor<4x8xbf16>, tensor<8x8xbf16>
  %k = tx.mul %h, %h : tensor<4x8xf32>, tensor<4x8xf32>
  return %y, %z, %k : tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xf32>
}

// -----

// Must not fire: the chain's input %h (a GEMM result) is not alive at the
// late reader; recomputing would keep it alive instead, for nothing.
// CHECK-LABEL: func.func @input_dead_late
// CHECK-COUNT-1: tx.tanh
// CHECK-NOT:     tx.tanh
func.func @input_dead_late(%x: tensor<4x8xbf16>, %w: tensor<8x8xbf16>)
    -> (tensor<4x8xbf16>, tensor<8x8xbf16>) {
  %h = tx.matmul %x, %w : tensor<4x8xbf16>, tensor<8x8xbf16>
  %c = tx.tanh %h : tensor<4x8xbf16>
  %y = tx.matmul %c, %w : tensor<4x8xbf16>, tensor<8x8xbf16>
  %l = tx.matmul %y, %w : tensor<4x8xbf16>, tensor<8x8xbf16>
  %ct = tx.transpose %c perm [1, 0] : tensor<4x8xbf16>
  %dw = tx.matmul %ct, %l : tensor<8x4xbf16>, tensor<4x8xbf16>
  return %l, %dw : tensor<4x8xbf16>, tensor<8x8xbf16>
}

// -----

// Must not fire: a weight's bf16 copy (a chain over step arguments only)
// stays stored for the dgrad GEMM.
// CHECK-LABEL: func.func @weight_cast
// CHECK-COUNT-1: tx.cast
// CHECK-NOT:     tx.cast
func.func @weight_cast(%x: tensor<4x8xbf16>, %wf: tensor<8x8xf32>,
                       %w2: tensor<8x8xbf16>)
    -> (tensor<4x8xbf16>, tensor<4x8xbf16>) {
  %w = tx.cast %wf : tensor<8x8xf32> to tensor<8x8xbf16>
  %y = tx.matmul %x, %w : tensor<4x8xbf16>, tensor<8x8xbf16>
  %l = tx.matmul %y, %w2 : tensor<4x8xbf16>, tensor<8x8xbf16>
  %wt = tx.transpose %w perm [1, 0] : tensor<8x8xbf16>
  %dx = tx.matmul %l, %wt : tensor<4x8xbf16>, tensor<8x8xbf16>
  return %y, %dx : tensor<4x8xbf16>, tensor<4x8xbf16>
}

// -----

// Must not fire: every reader computes the value in its own kernel (all
// elementwise), so it is never stored and there is nothing to free.
// CHECK-LABEL: func.func @only_elementwise_readers
// CHECK-COUNT-1: tx.tanh
// CHECK-NOT:     tx.tanh
func.func @only_elementwise_readers(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %t = tx.tanh %x : tensor<4x8xf32>
  %a = tx.mul %t, %x : tensor<4x8xf32>, tensor<4x8xf32>
  %y = tx.matmul %a, %w : tensor<4x8xf32>, tensor<8x8xf32>
  %b = tx.add %t, %y : tensor<4x8xf32>, tensor<4x8xf32>
  return %a, %b : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Must not fire: the chain back to values alive late is 17 ops long, past
// the limit of 16.
// CHECK-LABEL: func.func @chain_too_long
// CHECK-COUNT-17: tx.tanh
// CHECK-NOT:      tx.tanh
func.func @chain_too_long(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>)
    -> (tensor<4x8xf32>, tensor<8x8xf32>, tensor<4x8xf32>) {
  %s = tx.add %x, %x : tensor<4x8xf32>, tensor<4x8xf32>
  %0 = tx.tanh %s : tensor<4x8xf32>
  %1 = tx.tanh %0 : tensor<4x8xf32>
  %2 = tx.tanh %1 : tensor<4x8xf32>
  %3 = tx.tanh %2 : tensor<4x8xf32>
  %4 = tx.tanh %3 : tensor<4x8xf32>
  %5 = tx.tanh %4 : tensor<4x8xf32>
  %6 = tx.tanh %5 : tensor<4x8xf32>
  %7 = tx.tanh %6 : tensor<4x8xf32>
  %8 = tx.tanh %7 : tensor<4x8xf32>
  %9 = tx.tanh %8 : tensor<4x8xf32>
  %10 = tx.tanh %9 : tensor<4x8xf32>
  %11 = tx.tanh %10 : tensor<4x8xf32>
  %12 = tx.tanh %11 : tensor<4x8xf32>
  %13 = tx.tanh %12 : tensor<4x8xf32>
  %14 = tx.tanh %13 : tensor<4x8xf32>
  %15 = tx.tanh %14 : tensor<4x8xf32>
  %16 = tx.tanh %15 : tensor<4x8xf32>
  %y = tx.matmul %16, %w : tensor<4x8xf32>, tensor<8x8xf32>
  %l = tx.matmul %y, %w : tensor<4x8xf32>, tensor<8x8xf32>
  %t = tx.transpose %16 perm [1, 0] : tensor<4x8xf32>
  %dw = tx.matmul %t, %l : tensor<8x4xf32>, tensor<4x8xf32>
  %k = tx.mul %s, %s : tensor<4x8xf32>, tensor<4x8xf32>
  return %l, %dw, %k : tensor<4x8xf32>, tensor<8x8xf32>, tensor<4x8xf32>
}
