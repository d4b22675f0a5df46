// RUN: txopt-run %s --function reduce | FileCheck %s --check-prefix=REDUCE
// RUN: txopt-run %s --function softmax | FileCheck %s --check-prefix=SOFTMAX
// RUN: txopt-run %s --function norms | FileCheck %s --check-prefix=NORM
// RUN: txopt-run %s --function matmul_gemm | FileCheck %s --check-prefix=MATMUL

// REDUCE: result0: tensor<2x1xf32> = {{\[\[}}6], [15]]
// REDUCE: result1 = 3.5
// REDUCE: result2: tensor<3xf32> = [4, 5, 6]
// REDUCE: result3: tensor<2xi64> = [2, 5]
func.func @reduce() -> (tensor<2x1xf32>, tensor<f32>, tensor<3xf32>, tensor<2xi64>) {
  %x = tx.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %s = tx.reduce_sum %x axes [1] keep_dims : tensor<2x3xf32>
  %m = tx.reduce_mean %x axes [] : tensor<2x3xf32>
  %x0 = tx.reduce_max %x axes [-2] : tensor<2x3xf32>
  %i = tx.constant dense<[[1, 2, 4], [4, 5, 7]]> : tensor<2x3xi64>
  %im = tx.reduce_mean %i axes [1] : tensor<2x3xi64>
  return %s, %m, %x0, %im : tensor<2x1xf32>, tensor<f32>, tensor<3xf32>, tensor<2xi64>
}

// Softmax along the last axis and along axis 0 (a -inf entry gets 0).
// SOFTMAX: result0: tensor<2x3xf32> = {{\[\[}}0.0900305733, 0.244728476, 0.665240943], [0.5, 0, 0.5]]
// SOFTMAX: result1: tensor<2x3xf32> = {{\[\[}}0.731058598, 1, 0.952574134], [0.268941432, 0, 0.0474258736]]
func.func @softmax() -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %x = tx.constant dense<[[1.0, 2.0, 3.0], [0.0, 0xFF800000, 0.0]]> : tensor<2x3xf32>
  %a = tx.softmax %x axis(-1) : tensor<2x3xf32>
  %b = tx.softmax %x axis(0) : tensor<2x3xf32>
  return %a, %b : tensor<2x3xf32>, tensor<2x3xf32>
}

// LayerNormalization over the last axis and over the last two; RMSNormalization
// (values checked against numpy in f64, rounded to f32).
// NORM: result0: tensor<1x4xf32> = {{\[\[}}-0.341635406, 0.105576389, 2.34163547, 6.36654186]]
// NORM: result1: tensor<1x2x2xf32> = {{\[\[\[}}-1.34163547, -0.447211802], [0.447211802, 1.34163547]]]
// NORM: result2: tensor<1x4xf32> = {{\[\[}}0.365148127, 1.46059251, 3.28633308, 5.84237003]]
func.func @norms() -> (tensor<1x4xf32>, tensor<1x2x2xf32>, tensor<1x4xf32>) {
  %x = tx.constant dense<[[1.0, 2.0, 3.0, 4.0]]> : tensor<1x4xf32>
  %g = tx.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %b = tx.constant dense<[1.0, 1.0, 1.0, 1.0]> : tensor<4xf32>
  %ln = tx.layer_normalization %x, %g, %b axis(-1) eps(1.0e-05) : tensor<1x4xf32>, tensor<4xf32>, tensor<4xf32>
  %x3 = tx.reshape %x : tensor<1x4xf32> -> tensor<1x2x2xf32>
  %one = tx.constant dense<1.0> : tensor<1xf32>
  %ln2 = tx.layer_normalization %x3, %one axis(1) eps(1.0e-05) : tensor<1x2x2xf32>, tensor<1xf32>
  %rms = tx.rms_normalization %x, %g axis(-1) eps(1.0e-05) : tensor<1x4xf32>, tensor<4xf32>
  return %ln, %ln2, %rms : tensor<1x4xf32>, tensor<1x2x2xf32>, tensor<1x4xf32>
}

// Batched matmul with broadcasting batch dims and 1-D operands; gemm with
// transposes, alpha, beta and a broadcast C.
// MATMUL: result0: tensor<2x2x2xf32> = {{\[\[\[}}7, 10], [15, 22]], {{\[\[}}-7, -10], [-15, -22]]]
// MATMUL: result1: tensor<2xf32> = [5, 11]
// MATMUL: result2 = 5
// MATMUL: result3: tensor<2x2xf32> = {{\[\[}}17, 36], [23, 50]]
// MATMUL: result4: tensor<2x2xi64> = {{\[\[}}7, 10], [15, 22]]
func.func @matmul_gemm() -> (tensor<2x2x2xf32>, tensor<2xf32>, tensor<f32>, tensor<2x2xf32>, tensor<2x2xi64>) {
  %a = tx.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %sign = tx.constant dense<[[[1.0]], [[-1.0]]]> : tensor<2x1x1xf32>
  %batch = tx.mul %a, %sign : tensor<2x2xf32>, tensor<2x1x1xf32>
  %bm = tx.matmul %batch, %a : tensor<2x2x2xf32>, tensor<2x2xf32>
  %v = tx.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %mv = tx.matmul %a, %v : tensor<2x2xf32>, tensor<2xf32>
  %vv = tx.matmul %v, %v : tensor<2xf32>, tensor<2xf32>
  %c = tx.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %g = tx.gemm %a, %a, %c {transA = true, transB = true, alpha = 2.0 : f32, beta = 3.0 : f32} : tensor<2x2xf32>, tensor<2x2xf32>, tensor<2xf32>
  %ai = tx.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi64>
  %im = tx.matmul %ai, %ai : tensor<2x2xi64>, tensor<2x2xi64>
  return %bm, %mv, %vv, %g, %im : tensor<2x2x2xf32>, tensor<2xf32>, tensor<f32>, tensor<2x2xf32>, tensor<2x2xi64>
}
