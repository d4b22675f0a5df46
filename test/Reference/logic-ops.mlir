// RUN: txopt-run %s --function compare | FileCheck %s --check-prefix=CMP
// RUN: txopt-run %s --function logic | FileCheck %s --check-prefix=LOGIC

// CMP: result0: tensor<2x2xi1> = {{\[\[}}false, true], [false, false]]
// CMP: result1: tensor<2x2xi1> = {{\[\[}}true, true], [false, true]]
// CMP: result2: tensor<3xi1> = [false, false, true]
func.func @compare() -> (tensor<2x2xi1>, tensor<2x2xi1>, tensor<3xi1>) {
  %row = tx.constant dense<[[0], [1]]> : tensor<2x1xi64>
  %col = tx.constant dense<[0, 1]> : tensor<2xi64>
  %lt = tx.less %row, %col : tensor<2x1xi64>, tensor<2xi64>
  %le = tx.less_or_equal %row, %col : tensor<2x1xi64>, tensor<2xi64>
  %a = tx.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %b = tx.constant dense<2.0> : tensor<f32>
  %gt = tx.greater %a, %b : tensor<3xf32>, tensor<f32>
  return %lt, %le, %gt : tensor<2x2xi1>, tensor<2x2xi1>, tensor<3xi1>
}

// LOGIC: result0: tensor<2x2xi1> = {{\[\[}}true, false], [false, false]]
// LOGIC: result1: tensor<2x2xi1> = {{\[\[}}true, true], [true, false]]
// LOGIC: result2: tensor<2x2xi1> = {{\[\[}}false, true], [true, false]]
// LOGIC: result3: tensor<2x2xi1> = {{\[\[}}false, true], [true, true]]
func.func @logic() -> (tensor<2x2xi1>, tensor<2x2xi1>, tensor<2x2xi1>, tensor<2x2xi1>) {
  %a = tx.constant dense<[[true], [false]]> : tensor<2x1xi1>
  %b = tx.constant dense<[true, false]> : tensor<2xi1>
  %and = tx.and %a, %b : tensor<2x1xi1>, tensor<2xi1>
  %or = tx.or %a, %b : tensor<2x1xi1>, tensor<2xi1>
  %xor = tx.xor %a, %b : tensor<2x1xi1>, tensor<2xi1>
  %not = tx.not %and : tensor<2x2xi1>
  return %and, %or, %xor, %not : tensor<2x2xi1>, tensor<2x2xi1>, tensor<2x2xi1>, tensor<2x2xi1>
}
