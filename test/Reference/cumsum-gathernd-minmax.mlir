// RUN: txopt-run %s --function max_min | FileCheck %s --check-prefix=MINMAX
// RUN: txopt-run %s --function cum_sum | FileCheck %s --check-prefix=CUMSUM
// RUN: txopt-run %s --function gather_nd | FileCheck %s --check-prefix=GATHERND
// RUN: txopt-run %s --function gather_nd_grad | FileCheck %s --check-prefix=GRAD
// RUN: not txopt-run %s --function gather_nd_out_of_range 2>&1 | FileCheck %s --check-prefix=OOR

// Broadcasting max / min; a NaN in either operand gives NaN (onnxruntime),
// and integers compare as signed.
// MINMAX: result0: tensor<2x3xf32> = {{\[\[}}1, 2, nan], [nan, nan, nan]]
// MINMAX: result1: tensor<2x3xf32> = {{\[\[}}0.5, -1, nan], [nan, nan, nan]]
// MINMAX: result2: tensor<3xi64> = [4, 5, 4]
// MINMAX: result3: tensor<3xi64> = [-7, 4, 3]
func.func @max_min() -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<3xi64>, tensor<3xi64>) {
  %a = tx.constant dense<[0.5, -1.0, 0x7FC00000]> : tensor<3xf32>
  %b = tx.constant dense<[[1.0, 2.0, 3.0], [0x7FC00000, 0x7FC00000, 0x7FC00000]]> : tensor<2x3xf32>
  %max = tx.max %a, %b : tensor<3xf32>, tensor<2x3xf32>
  %min = tx.min %b, %a : tensor<2x3xf32>, tensor<3xf32>
  %p = tx.constant dense<[-7, 5, 3]> : tensor<3xi64>
  %q = tx.constant dense<4> : tensor<i64>
  %imax = tx.max %p, %q : tensor<3xi64>, tensor<i64>
  %imin = tx.min %p, %q : tensor<3xi64>, tensor<i64>
  return %max, %min, %imax, %imin : tensor<2x3xf32>, tensor<2x3xf32>, tensor<3xi64>, tensor<3xi64>
}

// The four scan directions along the last axis, one along the first, and
// integer sums that wrap at the element width (i8: 100 + 100 = -56).
// CUMSUM: result0: tensor<2x3xf32> = {{\[\[}}1, 3, 6], [4, 9, 15]]
// CUMSUM: result1: tensor<2x3xf32> = {{\[\[}}0, 1, 3], [0, 4, 9]]
// CUMSUM: result2: tensor<2x3xf32> = {{\[\[}}6, 5, 3], [15, 11, 6]]
// CUMSUM: result3: tensor<2x3xf32> = {{\[\[}}5, 3, 0], [11, 6, 0]]
// CUMSUM: result4: tensor<2x3xf32> = {{\[\[}}1, 2, 3], [5, 7, 9]]
// CUMSUM: result5: tensor<3xi8> = [100, -56, 44]
func.func @cum_sum() -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<3xi8>) {
  %x = tx.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %inc = tx.cum_sum %x axis(1) : tensor<2x3xf32>
  %exc = tx.cum_sum %x axis(-1) exclusive : tensor<2x3xf32>
  %rev = tx.cum_sum %x axis(1) reverse : tensor<2x3xf32>
  %both = tx.cum_sum %x axis(1) exclusive reverse : tensor<2x3xf32>
  %col = tx.cum_sum %x axis(0) : tensor<2x3xf32>
  %i = tx.constant dense<100> : tensor<3xi8>
  %wrap = tx.cum_sum %i axis(0) : tensor<3xi8>
  return %inc, %exc, %rev, %both, %col, %wrap : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<3xi8>
}

// Element tuples (negative indices count from the end), row tuples, and one
// batch dim: each batch picks rows of its own slab.
// GATHERND: result0: tensor<3xf32> = [2, 6, 4]
// GATHERND: result1: tensor<2x3xf32> = {{\[\[}}4, 5, 6], [1, 2, 3]]
// GATHERND: result2: tensor<2x2x2xi64> = {{\[\[\[}}2, 3], [0, 1]], {{\[\[}}4, 5], [4, 5]]]
func.func @gather_nd() -> (tensor<3xf32>, tensor<2x3xf32>, tensor<2x2x2xi64>) {
  %x = tx.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %pairs = tx.constant dense<[[0, 1], [-1, -1], [1, 0]]> : tensor<3x2xi64>
  %e = tx.gather_nd %x, %pairs : tensor<2x3xf32>, tensor<3x2xi64>
  %rows = tx.constant dense<[[1], [0]]> : tensor<2x1xi32>
  %r = tx.gather_nd %x, %rows : tensor<2x3xf32>, tensor<2x1xi32>
  %t = tx.constant dense<[[[0, 1], [2, 3]], [[4, 5], [6, 7]]]> : tensor<2x2x2xi64>
  %bi = tx.constant dense<[[[1], [0]], [[0], [0]]]> : tensor<2x2x1xi64>
  %b = tx.gather_nd %t, %bi {batch_dims = 1} : tensor<2x2x2xi64>, tensor<2x2x1xi64>
  return %e, %r, %b : tensor<3xf32>, tensor<2x3xf32>, tensor<2x2x2xi64>
}

// The adjoint adds the slices of tuples that repeat.
// GRAD: result0: tensor<2x3xf32> = {{\[\[}}0, 1, 0], [2, 0, 4]]
// GRAD: result1: tensor<2x2x2xf32> = {{\[\[\[}}3, 4], [1, 2]], {{\[\[}}12, 14], [0, 0]]]
func.func @gather_nd_grad() -> (tensor<2x3xf32>, tensor<2x2x2xf32>) {
  %g = tx.constant dense<[1.0, 4.0, 2.0]> : tensor<3xf32>
  %pairs = tx.constant dense<[[0, 1], [-1, -1], [1, 0]]> : tensor<3x2xi64>
  %e = tx.gather_nd_grad %g, %pairs batch_dims(0) : tensor<3xf32>, tensor<3x2xi64> -> tensor<2x3xf32>
  %gb = tx.constant dense<[[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0]]]> : tensor<2x2x2xf32>
  %bi = tx.constant dense<[[[1], [0]], [[0], [0]]]> : tensor<2x2x1xi64>
  %b = tx.gather_nd_grad %gb, %bi batch_dims(1) : tensor<2x2x2xf32>, tensor<2x2x1xi64> -> tensor<2x2x2xf32>
  return %e, %b : tensor<2x3xf32>, tensor<2x2x2xf32>
}

// OOR: txopt-run: error: tx.gather_nd at 'mask/GatherND': index 2 is out of range [-2, 2)
func.func @gather_nd_out_of_range() -> tensor<1xf32> {
  %x = tx.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %i = tx.constant dense<[[2, 0]]> : tensor<1x2xi64>
  %y = tx.gather_nd %x, %i : tensor<2x3xf32>, tensor<1x2xi64> loc("mask/GatherND")
  return %y : tensor<1xf32>
}
