// RUN: txopt-opt %s --split-input-file --tx-gemm-transposes | FileCheck %s

// tx-gemm-transposes: casts move before the transposes GEMMs fold, and a
// 2-D GEMM read only through a transpose computes the transposed result.
// Both are exact; the GPU plans of every checked model are the same as
// when the lowering did this itself (GPU.md, stage 0).

// The tied LM head: the f32 embedding read as [d, vocab] in bf16 by the
// forward GEMM, and as it is by the backward's GEMM (a transpose back).
// The cast converts in place order; the transpose back is the cast.
// CHECK-LABEL: func.func @cast_before_transpose
// CHECK:      %[[C:.*]] = tx.cast %arg1 : tensor<16x8xf32> to tensor<16x8xbf16>
// CHECK-NEXT: %[[T:.*]] = tx.transpose %[[C]] perm [1, 0] : tensor<16x8xbf16>
// CHECK-NEXT: %[[Y:.*]] = tx.matmul %arg0, %[[T]] : tensor<4x8xbf16>, tensor<8x16xbf16>
// CHECK-NEXT: %[[D:.*]] = tx.matmul %arg2, %[[C]] : tensor<4x16xbf16>, tensor<16x8xbf16>
// CHECK-NEXT: return %[[Y]], %[[D]]
func.func @cast_before_transpose(%x: tensor<4x8xbf16>, %w: tensor<16x8xf32>, %dy: tensor<4x16xbf16>)
    -> (tensor<4x16xbf16>, tensor<4x8xbf16>) {
  %t = tx.transpose %w perm [1, 0] : tensor<16x8xf32>
  %c = tx.cast %t : tensor<8x16xf32> to tensor<8x16xbf16>
  %y = tx.matmul %x, %c : tensor<4x8xbf16>, tensor<8x16xbf16>
  %back = tx.transpose %c perm [1, 0] : tensor<8x16xbf16>
  %dx = tx.matmul %dy, %back : tensor<4x16xbf16>, tensor<16x8xbf16>
  return %y, %dx : tensor<4x16xbf16>, tensor<4x8xbf16>
}

// -----

// Read only through the transpose back: the moved transpose is dead and
// goes too.
// CHECK-LABEL: func.func @only_read_back
// CHECK-NOT:  tx.transpose
// CHECK:      %[[C:.*]] = tx.cast %arg1 : tensor<16x8xf32> to tensor<16x8xbf16>
// CHECK-NEXT: tx.matmul %arg0, %[[C]] : tensor<4x16xbf16>, tensor<16x8xbf16>
func.func @only_read_back(%dy: tensor<4x16xbf16>, %w: tensor<16x8xf32>) -> tensor<4x8xbf16> {
  %t = tx.transpose %w perm [1, 0] : tensor<16x8xf32>
  %c = tx.cast %t : tensor<8x16xf32> to tensor<8x16xbf16>
  %back = tx.transpose %c perm [1, 0] : tensor<8x16xbf16>
  %dx = tx.matmul %dy, %back : tensor<4x16xbf16>, tensor<16x8xbf16>
  return %dx : tensor<4x8xbf16>
}

// -----

// Must not fire: the cast is read by something other than a GEMM (it
// would be computed transposed anyway), and the transpose has a reader
// besides the cast.
// CHECK-LABEL: func.func @cast_read_elsewhere
// CHECK:      %[[T:.*]] = tx.transpose %arg1 perm [1, 0] : tensor<16x8xf32>
// CHECK-NEXT: %[[C:.*]] = tx.cast %[[T]] : tensor<8x16xf32> to tensor<8x16xbf16>
// CHECK-NEXT: tx.matmul %arg0, %[[C]]
// CHECK-NEXT: tx.add %[[C]], %[[C]]
// CHECK-LABEL: func.func @transpose_read_elsewhere
// CHECK:      %[[T:.*]] = tx.transpose %arg1 perm [1, 0] : tensor<16x8xf32>
// CHECK-NEXT: %[[C:.*]] = tx.cast %[[T]] : tensor<8x16xf32> to tensor<8x16xbf16>
func.func @cast_read_elsewhere(%x: tensor<4x8xbf16>, %w: tensor<16x8xf32>)
    -> (tensor<4x16xbf16>, tensor<8x16xbf16>) {
  %t = tx.transpose %w perm [1, 0] : tensor<16x8xf32>
  %c = tx.cast %t : tensor<8x16xf32> to tensor<8x16xbf16>
  %y = tx.matmul %x, %c : tensor<4x8xbf16>, tensor<8x16xbf16>
  %s = tx.add %c, %c : tensor<8x16xbf16>, tensor<8x16xbf16>
  return %y, %s : tensor<4x16xbf16>, tensor<8x16xbf16>
}
func.func @transpose_read_elsewhere(%x: tensor<4x8xbf16>, %w: tensor<16x8xf32>)
    -> (tensor<4x16xbf16>, tensor<8x16xf32>) {
  %t = tx.transpose %w perm [1, 0] : tensor<16x8xf32>
  %c = tx.cast %t : tensor<8x16xf32> to tensor<8x16xbf16>
  %y = tx.matmul %x, %c : tensor<4x8xbf16>, tensor<8x16xbf16>
  return %y, %t : tensor<4x16xbf16>, tensor<8x16xf32>
}

// -----

// The tied embedding's LM-head gradient: dW^T = x^T dy is read only
// through a transpose to be added to the gather gradient [vocab, d]; the
// GEMM computes dW = dy^T x itself (operands swapped, each transposed: the
// transpose x^T read as it was goes, and dy^T is new, for the normal form
// to fold).
// CHECK-LABEL: func.func @result_transposed
// CHECK:      %[[DYT:.*]] = tx.transpose %arg1 perm [1, 0] : tensor<4x16xf32>
// CHECK-NEXT: %[[DW:.*]] = tx.matmul %[[DYT]], %arg0 : tensor<16x4xf32>, tensor<4x8xf32>
// CHECK-NEXT: %[[S:.*]] = tx.add %[[DW]], %arg2
// CHECK-NEXT: return %[[S]]
func.func @result_transposed(%x: tensor<4x8xf32>, %dy: tensor<4x16xf32>, %g: tensor<16x8xf32>)
    -> tensor<16x8xf32> {
  %xt = tx.transpose %x perm [1, 0] : tensor<4x8xf32>
  %dwt = tx.matmul %xt, %dy : tensor<8x4xf32>, tensor<4x16xf32>
  %dw = tx.transpose %dwt perm [1, 0] : tensor<8x16xf32>
  %s = tx.add %dw, %g : tensor<16x8xf32>, tensor<16x8xf32>
  return %s : tensor<16x8xf32>
}

// -----

// Through a cast: the GEMM computes the transposed f32 product and the
// cast converts it.
// CHECK-LABEL: func.func @result_cast_then_transposed
// CHECK:      %[[P:.*]] = tx.matmul %{{.*}}, %{{.*}} : tensor<16x4xf32>, tensor<4x8xf32>
// CHECK-NEXT: %[[C:.*]] = tx.cast %[[P]] : tensor<16x8xf32> to tensor<16x8xbf16>
// CHECK-NEXT: return %[[C]]
func.func @result_cast_then_transposed(%a: tensor<8x4xf32>, %b: tensor<4x16xf32>)
    -> tensor<16x8xbf16> {
  %p = tx.matmul %a, %b : tensor<8x4xf32>, tensor<4x16xf32>
  %c = tx.cast %p : tensor<8x16xf32> to tensor<8x16xbf16>
  %t = tx.transpose %c perm [1, 0] : tensor<8x16xbf16>
  return %t : tensor<16x8xbf16>
}

// -----

// Must not fire: a batched GEMM, and a result something else reads too.
// CHECK-LABEL: func.func @batched
// CHECK:      %[[P:.*]] = tx.matmul %arg0, %arg1 : tensor<2x8x4xf32>, tensor<2x4x16xf32>
// CHECK-NEXT: tx.transpose %[[P]] perm [0, 2, 1]
// CHECK-LABEL: func.func @result_read_twice
// CHECK:      %[[P:.*]] = tx.matmul %arg0, %arg1 : tensor<8x4xf32>, tensor<4x16xf32>
// CHECK-NEXT: tx.transpose %[[P]] perm [1, 0]
func.func @batched(%a: tensor<2x8x4xf32>, %b: tensor<2x4x16xf32>) -> tensor<2x16x8xf32> {
  %p = tx.matmul %a, %b : tensor<2x8x4xf32>, tensor<2x4x16xf32>
  %t = tx.transpose %p perm [0, 2, 1] : tensor<2x8x16xf32>
  return %t : tensor<2x16x8xf32>
}
func.func @result_read_twice(%a: tensor<8x4xf32>, %b: tensor<4x16xf32>)
    -> (tensor<16x8xf32>, tensor<8x16xf32>) {
  %p = tx.matmul %a, %b : tensor<8x4xf32>, tensor<4x16xf32>
  %t = tx.transpose %p perm [1, 0] : tensor<8x16xf32>
  return %t, %p : tensor<16x8xf32>, tensor<8x16xf32>
}
