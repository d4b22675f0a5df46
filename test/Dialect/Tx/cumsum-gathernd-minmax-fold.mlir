// RUN: txopt-opt %s --split-input-file --canonicalize | FileCheck %s

// Folders of tx.max / tx.min and tx.cum_sum.

// max(x, x) = min(x, x) = x.
// CHECK-LABEL: func.func @max_min_same_operand
// CHECK-SAME:    %[[X:[^:]+]]: tensor<4xf32>
// CHECK-NOT:     tx.max
// CHECK-NOT:     tx.min
// CHECK:         return %[[X]], %[[X]]
func.func @max_min_same_operand(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %a = tx.max %x, %x : tensor<4xf32>, tensor<4xf32>
  %b = tx.min %x, %x : tensor<4xf32>, tensor<4xf32>
  return %a, %b : tensor<4xf32>, tensor<4xf32>
}

// -----

// Different operands: no fold.
// CHECK-LABEL: func.func @max_no_fold
// CHECK:         tx.max
func.func @max_no_fold(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %a = tx.max %x, %y : tensor<4xf32>, tensor<4xf32>
  return %a : tensor<4xf32>
}

// -----

// A scan over a dim of size 1 is the input, or zeros when exclusive.
// CHECK-LABEL: func.func @cum_sum_unit_dim
// CHECK-SAME:    %[[X:[^:]+]]: tensor<3x1xi64>
// CHECK-NOT:     tx.cum_sum
// CHECK:         %[[Z:.+]] = tx.constant dense<0> : tensor<3x1xi64>
// CHECK:         return %[[X]], %[[Z]]
func.func @cum_sum_unit_dim(%x: tensor<3x1xi64>) -> (tensor<3x1xi64>, tensor<3x1xi64>) {
  %a = tx.cum_sum %x axis(-1) reverse : tensor<3x1xi64>
  %b = tx.cum_sum %x axis(1) exclusive : tensor<3x1xi64>
  return %a, %b : tensor<3x1xi64>, tensor<3x1xi64>
}

// -----

// A scan over a longer dim stays.
// CHECK-LABEL: func.func @cum_sum_no_fold
// CHECK:         tx.cum_sum %{{.+}} axis(0)
func.func @cum_sum_no_fold(%x: tensor<3x1xi64>) -> tensor<3x1xi64> {
  %a = tx.cum_sum %x axis(0) : tensor<3x1xi64>
  return %a : tensor<3x1xi64>
}
