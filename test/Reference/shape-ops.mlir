// RUN: txopt-run %s --function gather_negative_index | FileCheck %s --check-prefix=GATHER
// RUN: txopt-run %s --function slice_negative_step | FileCheck %s --check-prefix=SLICE
// RUN: txopt-run %s --function pad_modes | FileCheck %s --check-prefix=PAD
// RUN: txopt-run %s --function transpose_concat_split | FileCheck %s --check-prefix=MOVE
// RUN: txopt-run %s --function reshape_expand_squeeze | FileCheck %s --check-prefix=RESHAPE
// RUN: txopt-run %s --function trilu_masks | FileCheck %s --check-prefix=TRILU
// RUN: txopt-run %s --function shape_range_fill | FileCheck %s --check-prefix=CREATE
// RUN: not txopt-run %s --function gather_out_of_range 2>&1 | FileCheck %s --check-prefix=OOR

// Gather counts negative indices from the end, along any axis.
// GATHER: result0: tensor<2x2xf32> = {{\[\[}}5, 6], [1, 2]]
// GATHER: result1: tensor<3x1xf32> = {{\[\[}}2], [4], [6]]
// GATHER: result2: tensor<2x2xf32> = {{\[\[}}2, 1], [3, 4]]
func.func @gather_negative_index() -> (tensor<2x2xf32>, tensor<3x1xf32>, tensor<2x2xf32>) {
  %table = tx.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>
  %ids = tx.constant dense<[-1, 0]> : tensor<2xi64>
  %rows = tx.gather %table, %ids {axis = 0} : tensor<3x2xf32>, tensor<2xi64>
  %col = tx.constant dense<[-1]> : tensor<1xi32>
  %cols = tx.gather %table, %col {axis = 1} : tensor<3x2xf32>, tensor<1xi32>
  %sel = tx.constant dense<[[1, 0], [-2, -1]]> : tensor<2x2xi64>
  %pick = tx.gather_elements %table, %sel {axis = 1} : tensor<3x2xf32>, tensor<2x2xi64>
  return %rows, %cols, %pick : tensor<2x2xf32>, tensor<3x1xf32>, tensor<2x2xf32>
}

// Negative steps, and the INT64 extremes exporters write for "to the end".
// SLICE: result0: tensor<3xi64> = [8, 5, 2]
// SLICE: result1: tensor<10xi64> = [9, 8, 7, 6, 5, 4, 3, 2, 1, 0]
// SLICE: result2: tensor<2x2xi64> = {{\[\[}}9, 7], [4, 2]]
func.func @slice_negative_step() -> (tensor<3xi64>, tensor<10xi64>, tensor<2x2xi64>) {
  %x = tx.constant dense<[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]> : tensor<10xi64>
  %a = tx.slice %x starts [8] ends [1] axes [0] steps [-3] : tensor<10xi64>
  %b = tx.slice %x starts [-1] ends [-9223372036854775808] axes [0] steps [-1] : tensor<10xi64>
  %m = tx.reshape %x : tensor<10xi64> -> tensor<2x5xi64>
  %c = tx.slice %m starts [-1, 9223372036854775807] ends [-3, -4] axes [0, -1] steps [-1, -2] : tensor<2x5xi64>
  return %a, %b, %c : tensor<3xi64>, tensor<10xi64>, tensor<2x2xi64>
}

// The four pad modes on [1, 2, 3] with 2 before and 1 after; a negative pad
// crops first (and the fill is rounded to the element type).
// PAD: result0: tensor<6xf32> = [9.5, 9.5, 1, 2, 3, 9.5]
// PAD: result1: tensor<6xf32> = [3, 2, 1, 2, 3, 2]
// PAD: result2: tensor<6xf32> = [1, 1, 1, 2, 3, 3]
// PAD: result3: tensor<6xf32> = [2, 3, 1, 2, 3, 1]
// PAD: result4: tensor<2x4xi64> = {{\[\[}}2, 3, -100, -100], [5, 6, -100, -100]]
// PAD: result5: tensor<4x3xf32> = {{\[\[}}5, 6, 5], [2, 3, 2], [5, 6, 5], [2, 3, 2]]
func.func @pad_modes() -> (tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<2x4xi64>, tensor<4x3xf32>) {
  %x = tx.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %c = tx.pad %x pads [2, 1] value(9.5) : tensor<3xf32>
  %r = tx.pad %x pads [2, 1] value(0.0) {mode = #tx<pad_mode reflect>} : tensor<3xf32>
  %e = tx.pad %x pads [2, 1] value(0.0) {mode = #tx<pad_mode edge>} : tensor<3xf32>
  %w = tx.pad %x pads [2, 1] value(0.0) {mode = #tx<pad_mode wrap>} : tensor<3xf32>
  %labels = tx.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi64>
  %shift = tx.pad %labels pads [0, -1, 0, 2] value(-100.0) : tensor<2x3xi64>
  %m = tx.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %ref = tx.pad %m pads [1, -1, 1, 1] value(0.0) {mode = #tx<pad_mode reflect>} : tensor<2x3xf32>
  return %c, %r, %e, %w, %shift, %ref : tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<2x4xi64>, tensor<4x3xf32>
}

// MOVE: result0: tensor<3x2xi64> = {{\[\[}}1, 4], [2, 5], [3, 6]]
// MOVE: result1: tensor<2x1xi64> = {{\[\[}}1], [4]]
// MOVE: result2: tensor<2x2xi64> = {{\[\[}}2, 3], [5, 6]]
// MOVE: result3: tensor<2x5xi64> = {{\[\[}}1, 2, 3, 1, 2], [4, 5, 6, 4, 5]]
func.func @transpose_concat_split() -> (tensor<3x2xi64>, tensor<2x1xi64>, tensor<2x2xi64>, tensor<2x5xi64>) {
  %x = tx.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi64>
  %t = tx.transpose %x perm [1, 0] : tensor<2x3xi64>
  %a, %b = tx.split %x axis(1) : tensor<2x3xi64> -> tensor<2x1xi64>, tensor<2x2xi64>
  %ab = tx.slice %x starts [0] ends [2] axes [1] steps [1] : tensor<2x3xi64>
  %c = tx.concat %x, %ab axis(-1) : tensor<2x3xi64>, tensor<2x2xi64>
  return %t, %a, %b, %c : tensor<3x2xi64>, tensor<2x1xi64>, tensor<2x2xi64>, tensor<2x5xi64>
}

// RESHAPE: result0: tensor<3x2xf32> = {{\[\[}}1, 2], [3, 4], [5, 6]]
// RESHAPE: result1: tensor<2x3xf32> = {{\[\[}}1, 2, 3], [1, 2, 3]]
// RESHAPE: result2: tensor<3xf32> = [1, 2, 3]
// RESHAPE: result3: tensor<1x3x1xf32> = {{\[\[\[}}1], [2], [3]]]
func.func @reshape_expand_squeeze() -> (tensor<3x2xf32>, tensor<2x3xf32>, tensor<3xf32>, tensor<1x3x1xf32>) {
  %x = tx.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %r = tx.reshape %x : tensor<2x3xf32> -> tensor<3x2xf32>
  %row = tx.constant dense<[[1.0, 2.0, 3.0]]> : tensor<1x3xf32>
  %e = tx.expand %row : tensor<1x3xf32> -> tensor<2x3xf32>
  %s = tx.squeeze %row axes [0] : tensor<1x3xf32>
  %u = tx.unsqueeze %s axes [0, -1] : tensor<3xf32>
  return %r, %e, %s, %u : tensor<3x2xf32>, tensor<2x3xf32>, tensor<3xf32>, tensor<1x3x1xf32>
}

// Trilu over the last two dims, with a diagonal offset.
// TRILU: result0: tensor<3x3xf32> = {{\[\[}}1, 0, 0], [1, 1, 0], [1, 1, 1]]
// TRILU: result1: tensor<3x3xf32> = {{\[\[}}0, 1, 1], [0, 0, 1], [0, 0, 0]]
// TRILU: result2: tensor<2x2x2xi1> = {{\[\[\[}}true, true], [false, true]], {{\[\[}}true, true], [false, true]]]
func.func @trilu_masks() -> (tensor<3x3xf32>, tensor<3x3xf32>, tensor<2x2x2xi1>) {
  %ones = tx.constant dense<1.0> : tensor<3x3xf32>
  %l = tx.trilu %ones {upper = false} : tensor<3x3xf32>
  %u = tx.trilu %ones {upper = true, k = 1} : tensor<3x3xf32>
  %t = tx.constant dense<true> : tensor<2x2x2xi1>
  %b = tx.trilu %t : tensor<2x2x2xi1>
  return %l, %u, %b : tensor<3x3xf32>, tensor<3x3xf32>, tensor<2x2x2xi1>
}

// Shape, Range (accumulated in the element type) and ConstantOfShape.
// CREATE: result0: tensor<2xi64> = [3, 4]
// CREATE: result1: tensor<4xi64> = [10, 7, 4, 1]
// CREATE: result2: tensor<3xf32> = [0, 0.100000001, 0.200000003]
// CREATE: result3: tensor<3x4xf32> = {{\[\[}}-0.5, -0.5, -0.5, -0.5], [-0.5, -0.5, -0.5, -0.5], [-0.5, -0.5, -0.5, -0.5]]
func.func @shape_range_fill(%x: tensor<2x3x4xf32>) -> (tensor<2xi64>, tensor<4xi64>, tensor<3xf32>, tensor<3x4xf32>) {
  %s = tx.shape %x {start = -2} : tensor<2x3x4xf32>
  %start = tx.constant dense<10> : tensor<i64>
  %limit = tx.constant dense<0> : tensor<i64>
  %delta = tx.constant dense<-3> : tensor<i64>
  %r = tx.range %start, %limit, %delta : tensor<i64> -> tensor<4xi64>
  %fs = tx.constant dense<0.0> : tensor<f32>
  %fl = tx.constant dense<0.25> : tensor<f32>
  %fd = tx.constant dense<0.1> : tensor<f32>
  %fr = tx.range %fs, %fl, %fd : tensor<f32> -> tensor<3xf32>
  %c = tx.constant_of_shape %s value(dense<-0.5> : tensor<1xf32>) : tensor<2xi64> -> tensor<3x4xf32>
  return %s, %r, %fr, %c : tensor<2xi64>, tensor<4xi64>, tensor<3xf32>, tensor<3x4xf32>
}

// An index outside [-dim, dim) is an error naming the op and its node.
// OOR: txopt-run: error: tx.gather at 'embed/Gather': index 3 is out of range [-3, 3)
func.func @gather_out_of_range() -> tensor<1x2xf32> {
  %table = tx.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>
  %ids = tx.constant dense<[3]> : tensor<1xi64>
  %rows = tx.gather %table, %ids {axis = 0} : tensor<3x2xf32>, tensor<1xi64> loc("embed/Gather")
  return %rows : tensor<1x2xf32>
}
