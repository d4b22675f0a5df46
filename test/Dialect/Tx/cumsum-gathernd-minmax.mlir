// RUN: txopt-opt %s | txopt-opt | FileCheck %s
// RUN: txopt-opt %s --mlir-print-op-generic | txopt-opt | FileCheck %s

// Round trip of tx.max / tx.min, tx.gather_nd and tx.cum_sum through the
// custom and the generic form. Inferred result types are pinned by the
// functions' return types.

// Broadcasting in both directions, as the dynamo Llama export's mask does.
// CHECK-LABEL: func.func @max_broadcast
// CHECK-SAME:    %[[A:[^:]+]]: tensor<2x1x32x1xi64>, %[[B:[^:]+]]: tensor<1x1x1x32xi64>
// CHECK:         %[[M:.+]] = tx.max %[[A]], %[[B]] : tensor<2x1x32x1xi64>, tensor<1x1x1x32xi64>
// CHECK:         return %[[M]] : tensor<2x1x32x32xi64>
func.func @max_broadcast(%a: tensor<2x1x32x1xi64>, %b: tensor<1x1x1x32xi64>) -> tensor<2x1x32x32xi64> {
  %m = tx.max %a, %b : tensor<2x1x32x1xi64>, tensor<1x1x1x32xi64>
  return %m : tensor<2x1x32x32xi64>
}

// CHECK-LABEL: func.func @min_scalar
// CHECK:         %[[M:.+]] = tx.min %{{.+}}, %{{.+}} : tensor<4x8xbf16>, tensor<bf16>
// CHECK:         return %[[M]] : tensor<4x8xbf16>
func.func @min_scalar(%a: tensor<4x8xbf16>, %b: tensor<bf16>) -> tensor<4x8xbf16> {
  %m = tx.min %a, %b : tensor<4x8xbf16>, tensor<bf16>
  return %m : tensor<4x8xbf16>
}

// Default batch_dims (0) is elided; tuples of length 2 address a [2, 32]
// tensor element by element.
// CHECK-LABEL: func.func @gather_nd_elements
// CHECK-SAME:    %[[D:[^:]+]]: tensor<2x32xi64>, %[[I:[^:]+]]: tensor<2x1x32x32x2xi64>
// CHECK:         %[[G:.+]] = tx.gather_nd %[[D]], %[[I]] : tensor<2x32xi64>, tensor<2x1x32x32x2xi64>
// CHECK:         return %[[G]] : tensor<2x1x32x32xi64>
func.func @gather_nd_elements(%d: tensor<2x32xi64>, %i: tensor<2x1x32x32x2xi64>) -> tensor<2x1x32x32xi64> {
  %g = tx.gather_nd %d, %i : tensor<2x32xi64>, tensor<2x1x32x32x2xi64>
  return %g : tensor<2x1x32x32xi64>
}

// One batch dim and tuples of length 1 select rows: the result keeps the
// dims after batch_dims + 1.
// CHECK-LABEL: func.func @gather_nd_batch_rows
// CHECK:         %[[G:.+]] = tx.gather_nd %{{.+}}, %{{.+}} {batch_dims = 1 : i64} : tensor<2x3x4xf32>, tensor<2x5x1xi32>
// CHECK:         return %[[G]] : tensor<2x5x4xf32>
func.func @gather_nd_batch_rows(%d: tensor<2x3x4xf32>, %i: tensor<2x5x1xi32>) -> tensor<2x5x4xf32> {
  %g = tx.gather_nd %d, %i {batch_dims = 1} : tensor<2x3x4xf32>, tensor<2x5x1xi32>
  return %g : tensor<2x5x4xf32>
}

// CHECK-LABEL: func.func @cum_sum
// CHECK-SAME:    %[[X:[^:]+]]: tensor<2x32xi64>, %[[F:[^:]+]]: tensor<4x8xf32>
// CHECK:         %[[C:.+]] = tx.cum_sum %[[X]] axis(1) : tensor<2x32xi64>
// CHECK:         %[[E:.+]] = tx.cum_sum %[[F]] axis(-1) exclusive : tensor<4x8xf32>
// CHECK:         %[[R:.+]] = tx.cum_sum %[[F]] axis(0) reverse : tensor<4x8xf32>
// CHECK:         %[[B:.+]] = tx.cum_sum %[[F]] axis(1) exclusive reverse : tensor<4x8xf32>
// CHECK:         return %[[C]], %[[E]], %[[R]], %[[B]]
func.func @cum_sum(%x: tensor<2x32xi64>, %f: tensor<4x8xf32>)
    -> (tensor<2x32xi64>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %c = tx.cum_sum %x axis(1) : tensor<2x32xi64>
  %e = tx.cum_sum %f axis(-1) exclusive : tensor<4x8xf32>
  %r = tx.cum_sum %f axis(0) reverse : tensor<4x8xf32>
  %b = tx.cum_sum %f axis(1) exclusive reverse : tensor<4x8xf32>
  return %c, %e, %r, %b : tensor<2x32xi64>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
