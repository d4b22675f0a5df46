// RUN: txopt-opt %s --split-input-file --canonicalize | FileCheck %s

// Folders of the tx ops, and the cases that must not fold.

// A constant materializes as tx.constant and unused ones disappear.
// CHECK-LABEL: func.func @constant
// CHECK:         %[[C:.+]] = tx.constant dense<[1, 2]> : tensor<2xi64>
// CHECK-NOT:     tx.constant
// CHECK:         return %[[C]]
func.func @constant() -> tensor<2xi64> {
  %unused = tx.constant dense<3.0> : tensor<f32>
  %c = tx.constant dense<[1, 2]> : tensor<2xi64>
  return %c : tensor<2xi64>
}

// -----

// CHECK-LABEL: func.func @identity
// CHECK-SAME:    %[[X:[^:]+]]: tensor<4xf32>
// CHECK-NOT:     tx.identity
// CHECK:         return %[[X]]
func.func @identity(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = tx.identity %x : tensor<4xf32>
  %z = tx.identity %y : tensor<4xf32>
  return %z : tensor<4xf32>
}

// -----

// Shapes are static: tx.shape always folds, with ONNX start/end clamping.
// CHECK-LABEL: func.func @shape
// CHECK-DAG:     %[[ALL:.+]] = tx.constant dense<[2, 32, 128]> : tensor<3xi64>
// CHECK-DAG:     %[[TAIL:.+]] = tx.constant dense<[32, 128]> : tensor<2xi64>
// CHECK-DAG:     %[[EMPTY:.+]] = tx.constant dense<> : tensor<0xi64>
// CHECK-NOT:     tx.shape
// CHECK:         return %[[ALL]], %[[TAIL]], %[[EMPTY]], %[[ALL]]
func.func @shape(%x: tensor<2x32x128xf32>)
    -> (tensor<3xi64>, tensor<2xi64>, tensor<0xi64>, tensor<3xi64>) {
  %all = tx.shape %x : tensor<2x32x128xf32>
  %tail = tx.shape %x {start = -2} : tensor<2x32x128xf32>
  %empty = tx.shape %x {start = 2, end = 1} : tensor<2x32x128xf32>
  %clamped = tx.shape %x {start = -100, end = 100} : tensor<2x32x128xf32>
  return %all, %tail, %empty, %clamped : tensor<3xi64>, tensor<2xi64>, tensor<0xi64>, tensor<3xi64>
}

// -----

// ConstantOfShape folds to a splat; the shape operand need not be constant
// since the result type already carries the shape.
// CHECK-LABEL: func.func @constant_of_shape
// CHECK-DAG:     %[[Z:.+]] = tx.constant dense<0.000000e+00> : tensor<2x3xf32>
// CHECK-DAG:     %[[O:.+]] = tx.constant dense<1> : tensor<4xi64>
// CHECK-NOT:     tx.constant_of_shape
// CHECK:         return %[[Z]], %[[O]]
func.func @constant_of_shape(%s: tensor<1xi64>) -> (tensor<2x3xf32>, tensor<4xi64>) {
  %shape = tx.constant dense<[2, 3]> : tensor<2xi64>
  %z = tx.constant_of_shape %shape value(dense<0.0> : tensor<1xf32>) : tensor<2xi64> -> tensor<2x3xf32>
  %o = tx.constant_of_shape %s value(dense<1> : tensor<1xi64>) : tensor<1xi64> -> tensor<4xi64>
  return %z, %o : tensor<2x3xf32>, tensor<4xi64>
}

// -----

// Range folds when all three operands are constants.
// CHECK-LABEL: func.func @range_int
// CHECK-DAG:     %[[UP:.+]] = tx.constant dense<[0, 3, 6, 9]> : tensor<4xi64>
// CHECK-DAG:     %[[DOWN:.+]] = tx.constant dense<[5, 3, 1]> : tensor<3xi32>
// CHECK-DAG:     %[[NONE:.+]] = tx.constant dense<> : tensor<0xi64>
// CHECK-NOT:     tx.range
// CHECK:         return %[[UP]], %[[DOWN]], %[[NONE]]
func.func @range_int() -> (tensor<4xi64>, tensor<3xi32>, tensor<0xi64>) {
  %s = tx.constant dense<0> : tensor<i64>
  %l = tx.constant dense<10> : tensor<i64>
  %d = tx.constant dense<3> : tensor<i64>
  %up = tx.range %s, %l, %d : tensor<i64> -> tensor<4xi64>
  %s32 = tx.constant dense<5> : tensor<i32>
  %l32 = tx.constant dense<0> : tensor<i32>
  %d32 = tx.constant dense<-2> : tensor<i32>
  %down = tx.range %s32, %l32, %d32 : tensor<i32> -> tensor<3xi32>
  %none = tx.range %l, %s, %d : tensor<i64> -> tensor<0xi64>
  return %up, %down, %none : tensor<4xi64>, tensor<3xi32>, tensor<0xi64>
}

// -----

// Near the ends of i64 the length and values are exact:
// ceil((2^63 - 1 + 2^63) / (2^63 - 1)) = 3.
// CHECK-LABEL: func.func @range_int64_extremes
// CHECK:         %[[R:.+]] = tx.constant dense<[-9223372036854775808, -1, 9223372036854775806]> : tensor<3xi64>
// CHECK-NOT:     tx.range
// CHECK:         return %[[R]]
func.func @range_int64_extremes() -> tensor<3xi64> {
  %s = tx.constant dense<-9223372036854775808> : tensor<i64>
  %l = tx.constant dense<9223372036854775807> : tensor<i64>
  %d = tx.constant dense<9223372036854775807> : tensor<i64>
  %r = tx.range %s, %l, %d : tensor<i64> -> tensor<3xi64>
  return %r : tensor<3xi64>
}

// -----

// Float ranges accumulate in the element type, as ONNX specifies: the eighth
// f32 element is 0.1 added seven times (0.700000048), not f32(7 * 0.1).
// CHECK-LABEL: func.func @range_float
// CHECK:         %[[R:.+]] = tx.constant dense<[0.000000e+00, 1.000000e-01, 2.000000e-01, 3.000000e-01, 4.000000e-01, 5.000000e-01, 6.000000e-01, 0.700000048]> : tensor<8xf32>
// CHECK-NOT:     tx.range
// CHECK:         return %[[R]]
func.func @range_float() -> tensor<8xf32> {
  %s = tx.constant dense<0.0> : tensor<f32>
  %l = tx.constant dense<0.75> : tensor<f32>
  %d = tx.constant dense<0.1> : tensor<f32>
  %r = tx.range %s, %l, %d : tensor<f32> -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

// Must not fold: operands that are not constants.
// CHECK-LABEL: func.func @range_not_constant
// CHECK:         tx.range
func.func @range_not_constant(%n: tensor<i64>) -> tensor<32xi64> {
  %s = tx.constant dense<0> : tensor<i64>
  %d = tx.constant dense<1> : tensor<i64>
  %r = tx.range %s, %n, %d : tensor<i64> -> tensor<32xi64>
  return %r : tensor<32xi64>
}

// -----

// Must not fold: a valid but long range stays an op instead of a huge constant.
// CHECK-LABEL: func.func @range_too_long
// CHECK:         %[[R:.+]] = tx.range
// CHECK:         return %[[R]]
func.func @range_too_long() -> tensor<1000000xi64> {
  %s = tx.constant dense<0> : tensor<i64>
  %l = tx.constant dense<1000000> : tensor<i64>
  %d = tx.constant dense<1> : tensor<i64>
  %r = tx.range %s, %l, %d : tensor<i64> -> tensor<1000000xi64>
  return %r : tensor<1000000xi64>
}

// -----

// Reshape to the same type is the input; a constant reshapes in place.
// CHECK-LABEL: func.func @reshape
// CHECK-SAME:    %[[X:[^:]+]]: tensor<2x3xf32>
// CHECK-DAG:     %[[C:.+]] = tx.constant dense<{{\[}}[1, 2], [3, 4], [5, 6]]> : tensor<3x2xi64>
// CHECK-NOT:     tx.reshape
// CHECK:         return %[[X]], %[[C]]
func.func @reshape(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<3x2xi64>) {
  %same = tx.reshape %x : tensor<2x3xf32> -> tensor<2x3xf32>
  %c = tx.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi64>
  %r = tx.reshape %c : tensor<2x3xi64> -> tensor<3x2xi64>
  return %same, %r : tensor<2x3xf32>, tensor<3x2xi64>
}

// -----

// Must not fold: a reshape of a non-constant to another type.
// CHECK-LABEL: func.func @reshape_not_constant
// CHECK:         %[[R:.+]] = tx.reshape %{{.+}} : tensor<2x3xf32> -> tensor<6xf32>
// CHECK:         return %[[R]]
func.func @reshape_not_constant(%x: tensor<2x3xf32>) -> tensor<6xf32> {
  %r = tx.reshape %x : tensor<2x3xf32> -> tensor<6xf32>
  return %r : tensor<6xf32>
}

// -----

// Expand to the same type is the input; a splat constant expands for free.
// CHECK-LABEL: func.func @expand
// CHECK-SAME:    %[[X:[^:]+]]: tensor<4xf32>
// CHECK-DAG:     %[[C:.+]] = tx.constant dense<-1.000000e+09> : tensor<2x4x4xf32>
// CHECK-NOT:     tx.expand
// CHECK:         return %[[X]], %[[C]]
func.func @expand(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<2x4x4xf32>) {
  %same = tx.expand %x : tensor<4xf32> -> tensor<4xf32>
  %c = tx.constant dense<-1.0e+09> : tensor<1x4xf32>
  %e = tx.expand %c : tensor<1x4xf32> -> tensor<2x4x4xf32>
  return %same, %e : tensor<4xf32>, tensor<2x4x4xf32>
}

// -----

// Must not fold: expanding a non-splat constant would duplicate its data.
// CHECK-LABEL: func.func @expand_not_splat
// CHECK:         %[[E:.+]] = tx.expand %{{.+}} : tensor<2xi64> -> tensor<3x2xi64>
// CHECK:         return %[[E]]
func.func @expand_not_splat() -> tensor<3x2xi64> {
  %c = tx.constant dense<[1, 2]> : tensor<2xi64>
  %e = tx.expand %c : tensor<2xi64> -> tensor<3x2xi64>
  return %e : tensor<3x2xi64>
}

// -----

// A cast to the same type is the input; a real conversion stays.
// CHECK-LABEL: func.func @cast
// CHECK-SAME:    %[[X:[^:]+]]: tensor<4xf32>
// CHECK:         %[[H:.+]] = tx.cast %[[X]] : tensor<4xf32> to tensor<4xbf16>
// CHECK-NOT:     tx.cast
// CHECK:         return %[[X]], %[[H]]
func.func @cast(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xbf16>) {
  %same = tx.cast %x : tensor<4xf32> to tensor<4xf32>
  %h = tx.cast %x : tensor<4xf32> to tensor<4xbf16>
  return %same, %h : tensor<4xf32>, tensor<4xbf16>
}

// -----

// Must not fold: weights are state, so a read is never replaced by the
// parameter's initial value.
tx.parameter @w = dense<1.0> : tensor<4xf32>
// CHECK-LABEL: func.func @load_parameter_not_folded
// CHECK:         %[[W:.+]] = tx.load_parameter @w : tensor<4xf32>
// CHECK-NOT:     tx.constant
// CHECK:         return %[[W]]
func.func @load_parameter_not_folded() -> tensor<4xf32> {
  %w = tx.load_parameter @w : tensor<4xf32>
  return %w : tensor<4xf32>
}

// -----

// Must not fold: ops without folders keep constant operands.
// CHECK-LABEL: func.func @add_not_folded
// CHECK:         %[[A:.+]] = tx.add
// CHECK:         return %[[A]]
func.func @add_not_folded() -> tensor<2xf32> {
  %c = tx.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %a = tx.add %c, %c : tensor<2xf32>, tensor<2xf32>
  return %a : tensor<2xf32>
}

// -----

// Must not fold or erase: dropout draws random numbers.
// CHECK-LABEL: func.func @dropout_kept
// CHECK:         tx.dropout
func.func @dropout_kept(%x: tensor<4xf32>) {
  %k = tx.constant dense<0> : tensor<i64>
  %y = tx.dropout %x, %k ratio(0.5) seed(1) : tensor<4xf32>
  return
}
