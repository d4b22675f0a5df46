// RUN: txopt-opt %s --tx-build-train-step --tx-data-parallel=ranks=4 --tx-bucket-gradient-reductions=bucket-bytes=1 | FileCheck %s
// RUN: txopt-opt %s --tx-build-train-step --tx-data-parallel=ranks=4 --tx-bucket-gradient-reductions=bucket-bytes=1000 | FileCheck %s --check-prefix=ONE
// RUN: txopt-opt %s --tx-build-train-step --tx-data-parallel=ranks=4 --tx-bucket-gradient-reductions=bucket-bytes=0 | FileCheck %s --check-prefix=OFF
// RUN: txopt-opt %s --tx-build-train-step --tx-bucket-gradient-reductions=bucket-bytes=1 | FileCheck %s --check-prefix=PLAIN
// RUN: not txopt-opt %s --tx-bucket-gradient-reductions=bucket-bytes=-1 2>&1 | FileCheck %s --check-prefix=NEG
// RUN: txopt-opt %S/Inputs/bucket-dependent-reductions.mlir --tx-bucket-gradient-reductions=bucket-bytes=100000 | FileCheck %S/Inputs/bucket-dependent-reductions.mlir --check-prefix=DEPENDENT

// tx-bucket-gradient-reductions on the data-parallel step of two layers:
// the backward completes w2's gradient (8 elements, 32 bytes) before it
// computes w1's (6, padded to 8 for 4 ranks).

// Buckets of at least 1 byte: each reduce-scatter right after its
// gradient, w2's (bucket 0) ahead of the rest of the backward, w1's
// (bucket 1) with its flatten and zero padding; the sums of squares stay
// where the norm is taken.
// CHECK-LABEL: func.func @train_step(
// CHECK:         %[[GW2:.+]] = tx.matmul %{{.+}}, %{{.+}} : tensor<2x4xf32>, tensor<4x4xf32>
// CHECK-NEXT:    %[[F2:.+]] = tx.reshape %[[GW2]] : tensor<2x4xf32> -> tensor<8xf32>
// CHECK-NEXT:    %[[S2:.+]] = tx.reduce_scatter mean %[[F2]] ranks(4) {tx.bucket = 0 : i64} : tensor<8xf32> -> tensor<2xf32>
// CHECK:         %[[GW1:.+]] = tx.matmul %{{.+}}, %{{.+}} : tensor<3x4xf32>, tensor<4x2xf32>
// CHECK-NEXT:    %[[F1:.+]] = tx.reshape %[[GW1]] : tensor<3x2xf32> -> tensor<6xf32>
// CHECK-NEXT:    %[[Z:.+]] = tx.constant dense<0.000000e+00> : tensor<2xf32>
// CHECK-NEXT:    %[[P1:.+]] = tx.concat %[[F1]], %[[Z]] axis(0)
// CHECK-NEXT:    %[[S1:.+]] = tx.reduce_scatter mean %[[P1]] ranks(4) {tx.bucket = 1 : i64} : tensor<8xf32> -> tensor<2xf32>
// CHECK-NEXT:    tx.mul %[[S1]], %[[S1]]
// CHECK:         tx.mul %[[S2]], %[[S2]]
// CHECK:         tx.all_reduce sum
// CHECK:         tx.adam adamw params({{.+}}) grads(%[[S1]], %[[S2]])

// One bucket (1000 bytes hold both): after the last gradient, the
// feeders first, then the reduce-scatters together in the order their
// gradients were complete.
// ONE-LABEL: func.func @train_step(
// ONE:         %[[GW2:.+]] = tx.matmul %{{.+}}, %{{.+}} : tensor<2x4xf32>, tensor<4x4xf32>
// ONE-NOT:     tx.reduce_scatter
// ONE:         %[[GW1:.+]] = tx.matmul %{{.+}}, %{{.+}} : tensor<3x4xf32>, tensor<4x2xf32>
// ONE-NEXT:    %[[F2:.+]] = tx.reshape %[[GW2]] : tensor<2x4xf32> -> tensor<8xf32>
// ONE-NEXT:    %[[F1:.+]] = tx.reshape %[[GW1]] : tensor<3x2xf32> -> tensor<6xf32>
// ONE-NEXT:    tx.constant
// ONE-NEXT:    %[[P1:.+]] = tx.concat %[[F1]]
// ONE-NEXT:    tx.reduce_scatter mean %[[F2]] ranks(4) {tx.bucket = 0 : i64}
// ONE-NEXT:    tx.reduce_scatter mean %[[P1]] ranks(4) {tx.bucket = 0 : i64}
// ONE-NOT:     tx.bucket = 1

// bucket-bytes=0: the reduce-scatters stay where tx-data-parallel put
// them, after the backward, without buckets.
// OFF-LABEL: func.func @train_step(
// OFF:         tx.matmul %{{.+}}, %{{.+}} : tensor<3x4xf32>, tensor<4x2xf32>
// OFF:         tx.reduce_scatter
// OFF:         tx.reduce_scatter
// OFF-NOT:     tx.bucket

// A step that is not data-parallel: nothing to move.
// PLAIN-LABEL: func.func @train_step(
// PLAIN-NOT:     tx.reduce_scatter
// PLAIN-NOT:     tx.bucket

// NEG: tx-bucket-gradient-reductions: expected bucket-bytes >= 0, but got -1

// DEPENDENT (Inputs/bucket-dependent-reductions.mlir): a reduce-scatter
// reading another's result stays where it is, untagged.

tx.parameter @w1 = dense<[[0.5, -0.25], [0.125, 1.0], [-1.0, 0.75]]> : tensor<3x2xf32>
tx.parameter @w2 = dense<[[0.5, -0.5, 0.25, 1.0], [1.0, 0.25, -0.75, 0.5]]> : tensor<2x4xf32>
func.func @main(%x: tensor<4x3xf32> {tx.name = "x"}) -> (tensor<f32> {tx.name = "loss"}) {
  %w1 = tx.load_parameter @w1 : tensor<3x2xf32>
  %w2 = tx.load_parameter @w2 : tensor<2x4xf32>
  %h = tx.matmul %x, %w1 : tensor<4x3xf32>, tensor<3x2xf32>
  %a = tx.mul %h, %h : tensor<4x2xf32>, tensor<4x2xf32>
  %y = tx.matmul %a, %w2 : tensor<4x2xf32>, tensor<2x4xf32>
  %sq = tx.mul %y, %y : tensor<4x4xf32>, tensor<4x4xf32>
  %l = tx.reduce_mean %sq axes [] : tensor<4x4xf32>
  return %l : tensor<f32>
}
