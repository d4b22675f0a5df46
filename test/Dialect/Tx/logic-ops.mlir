// RUN: txopt-opt %s | txopt-opt | FileCheck %s

// CHECK-LABEL: func.func @less
// CHECK:         %[[Y:.+]] = tx.less %{{.+}}, %{{.+}} : tensor<32x1xf32>, tensor<1x32xf32>
// CHECK:         return %[[Y]] : tensor<32x32xi1>
func.func @less(%a: tensor<32x1xf32>, %b: tensor<1x32xf32>) -> tensor<32x32xi1> {
  %y = tx.less %a, %b : tensor<32x1xf32>, tensor<1x32xf32>
  return %y : tensor<32x32xi1>
}

// CHECK-LABEL: func.func @less_or_equal
// CHECK:         tx.less_or_equal %{{.+}}, %{{.+}} : tensor<32x1xi64>, tensor<32xi64>
func.func @less_or_equal(%a: tensor<32x1xi64>, %b: tensor<32xi64>) -> tensor<32x32xi1> {
  %y = tx.less_or_equal %a, %b : tensor<32x1xi64>, tensor<32xi64>
  return %y : tensor<32x32xi1>
}

// CHECK-LABEL: func.func @greater
// CHECK:         tx.greater %{{.+}}, %{{.+}} : tensor<2x32xi64>, tensor<i64>
func.func @greater(%a: tensor<2x32xi64>, %b: tensor<i64>) -> tensor<2x32xi1> {
  %y = tx.greater %a, %b : tensor<2x32xi64>, tensor<i64>
  return %y : tensor<2x32xi1>
}

// CHECK-LABEL: func.func @logic
// CHECK:         %[[A:.+]] = tx.and %{{.+}}, %{{.+}} : tensor<32x32xi1>, tensor<32xi1>
// CHECK:         %[[O:.+]] = tx.or %[[A]], %{{.+}} : tensor<32x32xi1>, tensor<i1>
// CHECK:         %[[X:.+]] = tx.xor %[[O]], %[[A]] : tensor<32x32xi1>, tensor<32x32xi1>
// CHECK:         %[[N:.+]] = tx.not %[[X]] : tensor<32x32xi1>
// CHECK:         return %[[N]] : tensor<32x32xi1>
func.func @logic(%a: tensor<32x32xi1>, %b: tensor<32xi1>, %c: tensor<i1>) -> tensor<32x32xi1> {
  %0 = tx.and %a, %b : tensor<32x32xi1>, tensor<32xi1>
  %1 = tx.or %0, %c : tensor<32x32xi1>, tensor<i1>
  %2 = tx.xor %1, %0 : tensor<32x32xi1>, tensor<32x32xi1>
  %3 = tx.not %2 : tensor<32x32xi1>
  return %3 : tensor<32x32xi1>
}
