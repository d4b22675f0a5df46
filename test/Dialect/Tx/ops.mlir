// RUN: txopt-opt %s | txopt-opt | FileCheck %s
// RUN: txopt-opt %s --mlir-print-op-generic | txopt-opt | FileCheck %s

// Round trip of every tx op: the custom form and the generic form both parse
// back to the same custom form. Result types the ops infer are pinned through
// the enclosing function's return type, which must match for the IR to verify.

//===----------------------------------------------------------------------===//
// Parameters and constants
//===----------------------------------------------------------------------===//

// CHECK-LABEL: tx.parameter @h.0.ln_1.weight = dense<1.000000e+00> : tensor<128xf32>
tx.parameter @"h.0.ln_1.weight" = dense<1.0> : tensor<128xf32>
// CHECK: tx.parameter @causal_mask = dense<0.000000e+00> : tensor<4x4xbf16> frozen
tx.parameter @causal_mask = dense<0.0> : tensor<4x4xbf16> frozen

// CHECK-LABEL: func.func @load_parameter
// CHECK:         %[[W:.+]] = tx.load_parameter @h.0.ln_1.weight : tensor<128xf32>
// CHECK:         %[[M:.+]] = tx.load_parameter @causal_mask : tensor<4x4xbf16>
// CHECK:         return %[[W]], %[[M]]
func.func @load_parameter() -> (tensor<128xf32>, tensor<4x4xbf16>) {
  %w = tx.load_parameter @"h.0.ln_1.weight" : tensor<128xf32>
  %m = tx.load_parameter @causal_mask : tensor<4x4xbf16>
  return %w, %m : tensor<128xf32>, tensor<4x4xbf16>
}

// CHECK-LABEL: func.func @constant
// CHECK:         %[[A:.+]] = tx.constant dense<9.99999974E-6> : tensor<f32>
// CHECK:         %[[B:.+]] = tx.constant dense<[2, 3]> : tensor<2xi64>
// CHECK:         %[[C:.+]] = tx.constant dense<true> : tensor<2x2xi1>
// CHECK:         return %[[A]], %[[B]], %[[C]]
func.func @constant() -> (tensor<f32>, tensor<2xi64>, tensor<2x2xi1>) {
  %a = tx.constant dense<1.0e-05> : tensor<f32>
  %b = tx.constant dense<[2, 3]> : tensor<2xi64>
  %c = tx.constant dense<true> : tensor<2x2xi1>
  return %a, %b, %c : tensor<f32>, tensor<2xi64>, tensor<2x2xi1>
}

// The shape operand need not be a constant: the result type carries the shape.
// CHECK-LABEL: func.func @constant_of_shape
// CHECK-SAME:    %[[S:[^:]+]]: tensor<2xi64>
// CHECK:         %[[Z:.+]] = tx.constant_of_shape %[[S]] value(dense<0.000000e+00> : tensor<1xf32>) : tensor<2xi64> -> tensor<2x3xf32>
// CHECK:         %[[E:.+]] = tx.constant dense<> : tensor<0xi64>
// CHECK:         %[[O:.+]] = tx.constant_of_shape %[[E]] value(dense<1> : tensor<1xi64>) : tensor<0xi64> -> tensor<i64>
// CHECK:         return %[[Z]], %[[O]]
func.func @constant_of_shape(%s: tensor<2xi64>) -> (tensor<2x3xf32>, tensor<i64>) {
  %z = tx.constant_of_shape %s value(dense<0.0> : tensor<1xf32>) : tensor<2xi64> -> tensor<2x3xf32>
  %e = tx.constant dense<> : tensor<0xi64>
  %o = tx.constant_of_shape %e value(dense<1> : tensor<1xi64>) : tensor<0xi64> -> tensor<i64>
  return %z, %o : tensor<2x3xf32>, tensor<i64>
}

// CHECK-LABEL: func.func @range
// CHECK-SAME:    %[[START:[^:]+]]: tensor<i64>, %[[LIMIT:[^:]+]]: tensor<i64>, %[[DELTA:[^:]+]]: tensor<i64>
// CHECK:         %[[R:.+]] = tx.range %[[START]], %[[LIMIT]], %[[DELTA]] : tensor<i64> -> tensor<32xi64>
// CHECK:         %[[F:.+]] = tx.range %{{.+}}, %{{.+}}, %{{.+}} : tensor<f32> -> tensor<4xf32>
// CHECK:         return %[[R]], %[[F]]
func.func @range(%start: tensor<i64>, %limit: tensor<i64>, %delta: tensor<i64>)
    -> (tensor<32xi64>, tensor<4xf32>) {
  %r = tx.range %start, %limit, %delta : tensor<i64> -> tensor<32xi64>
  %fs = tx.constant dense<1.0> : tensor<f32>
  %fl = tx.constant dense<0.0> : tensor<f32>
  %fd = tx.constant dense<-0.25> : tensor<f32>
  %f = tx.range %fs, %fl, %fd : tensor<f32> -> tensor<4xf32>
  return %r, %f : tensor<32xi64>, tensor<4xf32>
}

// Shape clamps start/end to [0, rank] after adding rank to negative values.
// CHECK-LABEL: func.func @shape
// CHECK-SAME:    %[[X:[^:]+]]: tensor<2x32x128xf32>
// CHECK:         %[[ALL:.+]] = tx.shape %[[X]] : tensor<2x32x128xf32>
// CHECK:         %[[TAIL:.+]] = tx.shape %[[X]] {start = -2 : i64} : tensor<2x32x128xf32>
// CHECK:         %[[MID:.+]] = tx.shape %[[X]] {end = 2 : i64, start = 1 : i64} : tensor<2x32x128xf32>
// CHECK:         %[[CLAMP:.+]] = tx.shape %[[X]] {end = 100 : i64, start = -100 : i64} : tensor<2x32x128xf32>
// CHECK:         %[[EMPTY:.+]] = tx.shape %[[X]] {end = 1 : i64, start = 2 : i64} : tensor<2x32x128xf32>
// CHECK:         return %[[ALL]], %[[TAIL]], %[[MID]], %[[CLAMP]], %[[EMPTY]]
func.func @shape(%x: tensor<2x32x128xf32>)
    -> (tensor<3xi64>, tensor<2xi64>, tensor<1xi64>, tensor<3xi64>, tensor<0xi64>) {
  %all = tx.shape %x : tensor<2x32x128xf32>
  %tail = tx.shape %x {start = -2} : tensor<2x32x128xf32>
  %mid = tx.shape %x {start = 1, end = 2} : tensor<2x32x128xf32>
  %clamp = tx.shape %x {start = -100, end = 100} : tensor<2x32x128xf32>
  %empty = tx.shape %x {start = 2, end = 1} : tensor<2x32x128xf32>
  return %all, %tail, %mid, %clamp, %empty
      : tensor<3xi64>, tensor<2xi64>, tensor<1xi64>, tensor<3xi64>, tensor<0xi64>
}

// CHECK-LABEL: func.func @identity
// CHECK-SAME:    %[[X:[^:]+]]: tensor<4xf32>
// CHECK:         %[[Y:.+]] = tx.identity %[[X]] : tensor<4xf32>
// CHECK:         return %[[Y]]
func.func @identity(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = tx.identity %x : tensor<4xf32>
  return %y : tensor<4xf32>
}

//===----------------------------------------------------------------------===//
// Elementwise arithmetic (broadcasting)
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @add
// CHECK-SAME:    %[[A:[^:]+]]: tensor<2x32x128xf32>, %[[B:[^:]+]]: tensor<128xf32>
// CHECK:         %[[Y:.+]] = tx.add %[[A]], %[[B]] : tensor<2x32x128xf32>, tensor<128xf32>
// CHECK:         return %[[Y]] : tensor<2x32x128xf32>
func.func @add(%a: tensor<2x32x128xf32>, %b: tensor<128xf32>) -> tensor<2x32x128xf32> {
  %y = tx.add %a, %b : tensor<2x32x128xf32>, tensor<128xf32>
  return %y : tensor<2x32x128xf32>
}

// Both operands broadcast: [4, 1] and [3] give [4, 3].
// CHECK-LABEL: func.func @sub
// CHECK:         %[[Y:.+]] = tx.sub %{{.+}}, %{{.+}} : tensor<4x1xi64>, tensor<3xi64>
// CHECK:         return %[[Y]] : tensor<4x3xi64>
func.func @sub(%a: tensor<4x1xi64>, %b: tensor<3xi64>) -> tensor<4x3xi64> {
  %y = tx.sub %a, %b : tensor<4x1xi64>, tensor<3xi64>
  return %y : tensor<4x3xi64>
}

// A size-1 dim broadcasts to a size-0 dim.
// CHECK-LABEL: func.func @mul
// CHECK:         %[[Y:.+]] = tx.mul %{{.+}}, %{{.+}} : tensor<0x4xbf16>, tensor<1x4xbf16>
// CHECK:         return %[[Y]] : tensor<0x4xbf16>
func.func @mul(%a: tensor<0x4xbf16>, %b: tensor<1x4xbf16>) -> tensor<0x4xbf16> {
  %y = tx.mul %a, %b : tensor<0x4xbf16>, tensor<1x4xbf16>
  return %y : tensor<0x4xbf16>
}

// CHECK-LABEL: func.func @div
// CHECK:         %[[Y:.+]] = tx.div %{{.+}}, %{{.+}} : tensor<2x4x32x32xf32>, tensor<f32>
// CHECK:         return %[[Y]] : tensor<2x4x32x32xf32>
func.func @div(%a: tensor<2x4x32x32xf32>, %b: tensor<f32>) -> tensor<2x4x32x32xf32> {
  %y = tx.div %a, %b : tensor<2x4x32x32xf32>, tensor<f32>
  return %y : tensor<2x4x32x32xf32>
}

// The result keeps the base's element type; the exponent may differ.
// CHECK-LABEL: func.func @pow
// CHECK:         %[[Y:.+]] = tx.pow %{{.+}}, %{{.+}} : tensor<2x32xf16>, tensor<f32>
// CHECK:         %[[Z:.+]] = tx.pow %{{.+}}, %{{.+}} : tensor<2x32xf32>, tensor<i64>
// CHECK:         return %[[Y]], %[[Z]] : tensor<2x32xf16>, tensor<2x32xf32>
func.func @pow(%x: tensor<2x32xf16>, %e: tensor<f32>, %x2: tensor<2x32xf32>, %i: tensor<i64>)
    -> (tensor<2x32xf16>, tensor<2x32xf32>) {
  %y = tx.pow %x, %e : tensor<2x32xf16>, tensor<f32>
  %z = tx.pow %x2, %i : tensor<2x32xf32>, tensor<i64>
  return %y, %z : tensor<2x32xf16>, tensor<2x32xf32>
}

// CHECK-LABEL: func.func @mod
// CHECK:         %[[I:.+]] = tx.mod %{{.+}}, %{{.+}} : tensor<4xi64>, tensor<i64>
// CHECK:         %[[IF:.+]] = tx.mod %{{.+}}, %{{.+}} {fmod = true} : tensor<4xi64>, tensor<i64>
// CHECK:         %[[F:.+]] = tx.mod %{{.+}}, %{{.+}} {fmod = true} : tensor<4xf32>, tensor<4xf32>
// CHECK:         return %[[I]], %[[IF]], %[[F]] : tensor<4xi64>, tensor<4xi64>, tensor<4xf32>
func.func @mod(%a: tensor<4xi64>, %b: tensor<i64>, %c: tensor<4xf32>)
    -> (tensor<4xi64>, tensor<4xi64>, tensor<4xf32>) {
  %i = tx.mod %a, %b {fmod = false} : tensor<4xi64>, tensor<i64>
  %if = tx.mod %a, %b {fmod = true} : tensor<4xi64>, tensor<i64>
  %f = tx.mod %c, %c {fmod = true} : tensor<4xf32>, tensor<4xf32>
  return %i, %if, %f : tensor<4xi64>, tensor<4xi64>, tensor<4xf32>
}

// CHECK-LABEL: func.func @equal
// CHECK:         %[[Y:.+]] = tx.equal %{{.+}}, %{{.+}} : tensor<2x32xi64>, tensor<i64>
// CHECK:         return %[[Y]] : tensor<2x32xi1>
func.func @equal(%a: tensor<2x32xi64>, %b: tensor<i64>) -> tensor<2x32xi1> {
  %y = tx.equal %a, %b : tensor<2x32xi64>, tensor<i64>
  return %y : tensor<2x32xi1>
}

// CHECK-LABEL: func.func @greater_or_equal
// CHECK:         %[[Y:.+]] = tx.greater_or_equal %{{.+}}, %{{.+}} : tensor<32x1xf32>, tensor<1x32xf32>
// CHECK:         return %[[Y]] : tensor<32x32xi1>
func.func @greater_or_equal(%a: tensor<32x1xf32>, %b: tensor<1x32xf32>) -> tensor<32x32xi1> {
  %y = tx.greater_or_equal %a, %b : tensor<32x1xf32>, tensor<1x32xf32>
  return %y : tensor<32x32xi1>
}

// All three operands broadcast together.
// CHECK-LABEL: func.func @where
// CHECK-SAME:    %[[C:[^:]+]]: tensor<32x32xi1>, %[[S:[^:]+]]: tensor<2x4x32x32xf32>, %[[N:[^:]+]]: tensor<f32>
// CHECK:         %[[Y:.+]] = tx.where %[[C]], %[[S]], %[[N]] : tensor<32x32xi1>, tensor<2x4x32x32xf32>, tensor<f32>
// CHECK:         %[[Z:.+]] = tx.where %{{.+}}, %{{.+}}, %{{.+}} : tensor<3x1xi1>, tensor<1x4xi64>, tensor<i64>
// CHECK:         return %[[Y]], %[[Z]] : tensor<2x4x32x32xf32>, tensor<3x4xi64>
func.func @where(%c: tensor<32x32xi1>, %s: tensor<2x4x32x32xf32>, %n: tensor<f32>,
                 %c2: tensor<3x1xi1>, %a: tensor<1x4xi64>, %b: tensor<i64>)
    -> (tensor<2x4x32x32xf32>, tensor<3x4xi64>) {
  %y = tx.where %c, %s, %n : tensor<32x32xi1>, tensor<2x4x32x32xf32>, tensor<f32>
  %z = tx.where %c2, %a, %b : tensor<3x1xi1>, tensor<1x4xi64>, tensor<i64>
  return %y, %z : tensor<2x4x32x32xf32>, tensor<3x4xi64>
}

//===----------------------------------------------------------------------===//
// Elementwise unary
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @float_unary
// CHECK-SAME:    %[[X:[^:]+]]: tensor<2x32xf32>
// CHECK:         %[[SQRT:.+]] = tx.sqrt %[[X]] : tensor<2x32xf32>
// CHECK:         %[[RECIP:.+]] = tx.reciprocal %[[SQRT]] : tensor<2x32xf32>
// CHECK:         %[[ERF:.+]] = tx.erf %[[RECIP]] : tensor<2x32xf32>
// CHECK:         %[[TANH:.+]] = tx.tanh %[[ERF]] : tensor<2x32xf32>
// CHECK:         %[[SIG:.+]] = tx.sigmoid %[[TANH]] : tensor<2x32xf32>
// CHECK:         %[[EXP:.+]] = tx.exp %[[SIG]] : tensor<2x32xf32>
// CHECK:         %[[LOG:.+]] = tx.log %[[EXP]] : tensor<2x32xf32>
// CHECK:         %[[SIN:.+]] = tx.sin %[[LOG]] : tensor<2x32xf32>
// CHECK:         %[[COS:.+]] = tx.cos %[[SIN]] : tensor<2x32xf32>
// CHECK:         return %[[COS]]
func.func @float_unary(%x: tensor<2x32xf32>) -> tensor<2x32xf32> {
  %0 = tx.sqrt %x : tensor<2x32xf32>
  %1 = tx.reciprocal %0 : tensor<2x32xf32>
  %2 = tx.erf %1 : tensor<2x32xf32>
  %3 = tx.tanh %2 : tensor<2x32xf32>
  %4 = tx.sigmoid %3 : tensor<2x32xf32>
  %5 = tx.exp %4 : tensor<2x32xf32>
  %6 = tx.log %5 : tensor<2x32xf32>
  %7 = tx.sin %6 : tensor<2x32xf32>
  %8 = tx.cos %7 : tensor<2x32xf32>
  return %8 : tensor<2x32xf32>
}

// CHECK-LABEL: func.func @sqrt
// CHECK:         %[[Y:.+]] = tx.sqrt %{{.+}} : tensor<8xbf16>
// CHECK:         return %[[Y]] : tensor<8xbf16>
func.func @sqrt(%x: tensor<8xbf16>) -> tensor<8xbf16> {
  %y = tx.sqrt %x : tensor<8xbf16>
  return %y : tensor<8xbf16>
}

// CHECK-LABEL: func.func @reciprocal
// CHECK:         %[[Y:.+]] = tx.reciprocal %{{.+}} : tensor<f64>
func.func @reciprocal(%x: tensor<f64>) -> tensor<f64> {
  %y = tx.reciprocal %x : tensor<f64>
  return %y : tensor<f64>
}

// CHECK-LABEL: func.func @erf
// CHECK:         %[[Y:.+]] = tx.erf %{{.+}} : tensor<2x32x512xf16>
func.func @erf(%x: tensor<2x32x512xf16>) -> tensor<2x32x512xf16> {
  %y = tx.erf %x : tensor<2x32x512xf16>
  return %y : tensor<2x32x512xf16>
}

// CHECK-LABEL: func.func @tanh
// CHECK:         %[[Y:.+]] = tx.tanh %{{.+}} : tensor<4xf32>
func.func @tanh(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = tx.tanh %x : tensor<4xf32>
  return %y : tensor<4xf32>
}

// CHECK-LABEL: func.func @sigmoid
// CHECK:         %[[Y:.+]] = tx.sigmoid %{{.+}} : tensor<4xf32>
func.func @sigmoid(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = tx.sigmoid %x : tensor<4xf32>
  return %y : tensor<4xf32>
}

// CHECK-LABEL: func.func @exp
// CHECK:         %[[Y:.+]] = tx.exp %{{.+}} : tensor<4xf32>
func.func @exp(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = tx.exp %x : tensor<4xf32>
  return %y : tensor<4xf32>
}

// CHECK-LABEL: func.func @log
// CHECK:         %[[Y:.+]] = tx.log %{{.+}} : tensor<4xf32>
func.func @log(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = tx.log %x : tensor<4xf32>
  return %y : tensor<4xf32>
}

// CHECK-LABEL: func.func @sin
// CHECK:         %[[Y:.+]] = tx.sin %{{.+}} : tensor<32x16xf32>
func.func @sin(%x: tensor<32x16xf32>) -> tensor<32x16xf32> {
  %y = tx.sin %x : tensor<32x16xf32>
  return %y : tensor<32x16xf32>
}

// CHECK-LABEL: func.func @cos
// CHECK:         %[[Y:.+]] = tx.cos %{{.+}} : tensor<32x16xf32>
func.func @cos(%x: tensor<32x16xf32>) -> tensor<32x16xf32> {
  %y = tx.cos %x : tensor<32x16xf32>
  return %y : tensor<32x16xf32>
}

// CHECK-LABEL: func.func @neg
// CHECK:         %[[F:.+]] = tx.neg %{{.+}} : tensor<2x4x32x16xf32>
// CHECK:         %[[I:.+]] = tx.neg %{{.+}} : tensor<3xi32>
// CHECK:         return %[[F]], %[[I]]
func.func @neg(%x: tensor<2x4x32x16xf32>, %i: tensor<3xi32>) -> (tensor<2x4x32x16xf32>, tensor<3xi32>) {
  %f = tx.neg %x : tensor<2x4x32x16xf32>
  %n = tx.neg %i : tensor<3xi32>
  return %f, %n : tensor<2x4x32x16xf32>, tensor<3xi32>
}

// CHECK-LABEL: func.func @relu
// CHECK:         %[[Y:.+]] = tx.relu %{{.+}} : tensor<2x32x512xf32>
func.func @relu(%x: tensor<2x32x512xf32>) -> tensor<2x32x512xf32> {
  %y = tx.relu %x : tensor<2x32x512xf32>
  return %y : tensor<2x32x512xf32>
}

// CHECK-LABEL: func.func @is_nan
// CHECK:         %[[M:.+]] = tx.is_nan %{{.+}} : tensor<2x1x32x32xf32> -> tensor<2x1x32x32xi1>
// CHECK:         return %[[M]]
func.func @is_nan(%x: tensor<2x1x32x32xf32>) -> tensor<2x1x32x32xi1> {
  %m = tx.is_nan %x : tensor<2x1x32x32xf32> -> tensor<2x1x32x32xi1>
  return %m : tensor<2x1x32x32xi1>
}

// CHECK-LABEL: func.func @cast
// CHECK-SAME:    %[[X:[^:]+]]: tensor<4x128xf32>
// CHECK:         %[[H:.+]] = tx.cast %[[X]] : tensor<4x128xf32> to tensor<4x128xbf16>
// CHECK:         %[[I:.+]] = tx.cast %[[H]] : tensor<4x128xbf16> to tensor<4x128xi64>
// CHECK:         %[[B:.+]] = tx.cast %[[I]] : tensor<4x128xi64> to tensor<4x128xi1>
// CHECK:         return %[[B]]
func.func @cast(%x: tensor<4x128xf32>) -> tensor<4x128xi1> {
  %h = tx.cast %x : tensor<4x128xf32> to tensor<4x128xbf16>
  %i = tx.cast %h : tensor<4x128xbf16> to tensor<4x128xi64>
  %b = tx.cast %i : tensor<4x128xi64> to tensor<4x128xi1>
  return %b : tensor<4x128xi1>
}

// CHECK-LABEL: func.func @trilu
// CHECK:         %[[U:.+]] = tx.trilu %{{.+}} : tensor<32x32xf32>
// CHECK:         %[[L:.+]] = tx.trilu %{{.+}} {k = -1 : i64, upper = false} : tensor<32x32xf32>
// CHECK:         %[[B:.+]] = tx.trilu %{{.+}} {k = 2 : i64} : tensor<2x3x4xi1>
// CHECK:         return %[[U]], %[[L]], %[[B]]
func.func @trilu(%x: tensor<32x32xf32>, %m: tensor<2x3x4xi1>)
    -> (tensor<32x32xf32>, tensor<32x32xf32>, tensor<2x3x4xi1>) {
  %u = tx.trilu %x : tensor<32x32xf32>
  %l = tx.trilu %x {upper = false, k = -1} : tensor<32x32xf32>
  %b = tx.trilu %m {k = 2} : tensor<2x3x4xi1>
  return %u, %l, %b : tensor<32x32xf32>, tensor<32x32xf32>, tensor<2x3x4xi1>
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @matmul
// CHECK:         %[[Y:.+]] = tx.matmul %{{.+}}, %{{.+}} : tensor<2x32x128xf32>, tensor<128x384xf32>
// CHECK:         return %[[Y]] : tensor<2x32x384xf32>
func.func @matmul(%x: tensor<2x32x128xf32>, %w: tensor<128x384xf32>) -> tensor<2x32x384xf32> {
  %y = tx.matmul %x, %w : tensor<2x32x128xf32>, tensor<128x384xf32>
  return %y : tensor<2x32x384xf32>
}

// Batch dims broadcast in both directions: [2, 1] and [4] give [2, 4].
// CHECK-LABEL: func.func @matmul_batch_broadcast
// CHECK:         %[[Y:.+]] = tx.matmul %{{.+}}, %{{.+}} : tensor<2x1x8x16xf32>, tensor<4x16x5xf32>
// CHECK:         return %[[Y]] : tensor<2x4x8x5xf32>
func.func @matmul_batch_broadcast(%a: tensor<2x1x8x16xf32>, %b: tensor<4x16x5xf32>) -> tensor<2x4x8x5xf32> {
  %y = tx.matmul %a, %b : tensor<2x1x8x16xf32>, tensor<4x16x5xf32>
  return %y : tensor<2x4x8x5xf32>
}

// A 1-D lhs is a row vector, a 1-D rhs a column; the inserted dim goes away.
// CHECK-LABEL: func.func @matmul_vectors
// CHECK:         %[[VM:.+]] = tx.matmul %{{.+}}, %{{.+}} : tensor<16xf32>, tensor<3x16x5xf32>
// CHECK:         %[[MV:.+]] = tx.matmul %{{.+}}, %{{.+}} : tensor<3x8x16xf32>, tensor<16xf32>
// CHECK:         %[[VV:.+]] = tx.matmul %{{.+}}, %{{.+}} : tensor<16xf32>, tensor<16xf32>
// CHECK:         return %[[VM]], %[[MV]], %[[VV]] : tensor<3x5xf32>, tensor<3x8xf32>, tensor<f32>
func.func @matmul_vectors(%v: tensor<16xf32>, %b: tensor<3x16x5xf32>, %a: tensor<3x8x16xf32>)
    -> (tensor<3x5xf32>, tensor<3x8xf32>, tensor<f32>) {
  %vm = tx.matmul %v, %b : tensor<16xf32>, tensor<3x16x5xf32>
  %mv = tx.matmul %a, %v : tensor<3x8x16xf32>, tensor<16xf32>
  %vv = tx.matmul %v, %v : tensor<16xf32>, tensor<16xf32>
  return %vm, %mv, %vv : tensor<3x5xf32>, tensor<3x8xf32>, tensor<f32>
}

// CHECK-LABEL: func.func @gemm
// CHECK-SAME:    %[[A:[^:]+]]: tensor<64x128xf32>, %[[B:[^:]+]]: tensor<384x128xf32>, %[[C:[^:]+]]: tensor<384xf32>
// CHECK:         %[[Y:.+]] = tx.gemm %[[A]], %[[B]], %[[C]] {transB = true} : tensor<64x128xf32>, tensor<384x128xf32>, tensor<384xf32>
// CHECK:         return %[[Y]] : tensor<64x384xf32>
func.func @gemm(%a: tensor<64x128xf32>, %b: tensor<384x128xf32>, %c: tensor<384xf32>) -> tensor<64x384xf32> {
  %y = tx.gemm %a, %b, %c {transB = true} : tensor<64x128xf32>, tensor<384x128xf32>, tensor<384xf32>
  return %y : tensor<64x384xf32>
}

// Without C, and with A transposed: [K, M] x [K, N] -> [M, N].
// CHECK-LABEL: func.func @gemm_no_c_trans_a
// CHECK:         %[[Y:.+]] = tx.gemm %{{.+}}, %{{.+}} {alpha = 5.000000e-01 : f32, transA = true} : tensor<128x64xf32>, tensor<128x32xf32>
// CHECK:         return %[[Y]] : tensor<64x32xf32>
func.func @gemm_no_c_trans_a(%a: tensor<128x64xf32>, %b: tensor<128x32xf32>) -> tensor<64x32xf32> {
  %y = tx.gemm %a, %b {transA = true, alpha = 0.5 : f32} : tensor<128x64xf32>, tensor<128x32xf32>
  return %y : tensor<64x32xf32>
}

// Both transposed, and C as a [M, 1] column that broadcasts along N.
// CHECK-LABEL: func.func @gemm_trans_both
// CHECK:         %[[Y:.+]] = tx.gemm %{{.+}}, %{{.+}}, %{{.+}} {beta = 2.000000e+00 : f32, transA = true, transB = true} : tensor<16x8xf32>, tensor<4x16xf32>, tensor<8x1xf32>
// CHECK:         return %[[Y]] : tensor<8x4xf32>
func.func @gemm_trans_both(%a: tensor<16x8xf32>, %b: tensor<4x16xf32>, %c: tensor<8x1xf32>) -> tensor<8x4xf32> {
  %y = tx.gemm %a, %b, %c {transA = true, transB = true, beta = 2.0 : f32} : tensor<16x8xf32>, tensor<4x16xf32>, tensor<8x1xf32>
  return %y : tensor<8x4xf32>
}

//===----------------------------------------------------------------------===//
// Indexing and data movement
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @gather
// CHECK:         %[[E:.+]] = tx.gather %{{.+}}, %{{.+}} : tensor<512x128xf32>, tensor<2x32xi64>
// CHECK:         %[[M:.+]] = tx.gather %{{.+}}, %{{.+}} {axis = -1 : i64} : tensor<4x5x6xf32>, tensor<3xi32>
// CHECK:         %[[S:.+]] = tx.gather %{{.+}}, %{{.+}} {axis = 1 : i64} : tensor<4x5x6xf32>, tensor<i64>
// CHECK:         return %[[E]], %[[M]], %[[S]] : tensor<2x32x128xf32>, tensor<4x5x3xf32>, tensor<4x6xf32>
func.func @gather(%wte: tensor<512x128xf32>, %ids: tensor<2x32xi64>, %x: tensor<4x5x6xf32>,
                  %i: tensor<3xi32>, %s: tensor<i64>)
    -> (tensor<2x32x128xf32>, tensor<4x5x3xf32>, tensor<4x6xf32>) {
  %e = tx.gather %wte, %ids {axis = 0} : tensor<512x128xf32>, tensor<2x32xi64>
  %m = tx.gather %x, %i {axis = -1} : tensor<4x5x6xf32>, tensor<3xi32>
  %g = tx.gather %x, %s {axis = 1} : tensor<4x5x6xf32>, tensor<i64>
  return %e, %m, %g : tensor<2x32x128xf32>, tensor<4x5x3xf32>, tensor<4x6xf32>
}

// The result has the shape of the indices.
// CHECK-LABEL: func.func @gather_elements
// CHECK:         %[[T:.+]] = tx.gather_elements %{{.+}}, %{{.+}} {axis = 1 : i64} : tensor<64x512xf32>, tensor<64x1xi64>
// CHECK:         %[[U:.+]] = tx.gather_elements %{{.+}}, %{{.+}} : tensor<64x512xf32>, tensor<3x7xi32>
// CHECK:         return %[[T]], %[[U]] : tensor<64x1xf32>, tensor<3x7xf32>
func.func @gather_elements(%logp: tensor<64x512xf32>, %labels: tensor<64x1xi64>, %i: tensor<3x7xi32>)
    -> (tensor<64x1xf32>, tensor<3x7xf32>) {
  %t = tx.gather_elements %logp, %labels {axis = 1} : tensor<64x512xf32>, tensor<64x1xi64>
  %u = tx.gather_elements %logp, %i : tensor<64x512xf32>, tensor<3x7xi32>
  return %t, %u : tensor<64x1xf32>, tensor<3x7xf32>
}

// CHECK-LABEL: func.func @reshape
// CHECK:         %[[Y:.+]] = tx.reshape %{{.+}} : tensor<2x32x128xf32> -> tensor<64x128xf32>
// CHECK:         %[[S:.+]] = tx.reshape %{{.+}} : tensor<1x1xi64> -> tensor<i64>
// CHECK:         return %[[Y]], %[[S]]
func.func @reshape(%x: tensor<2x32x128xf32>, %o: tensor<1x1xi64>) -> (tensor<64x128xf32>, tensor<i64>) {
  %y = tx.reshape %x : tensor<2x32x128xf32> -> tensor<64x128xf32>
  %s = tx.reshape %o : tensor<1x1xi64> -> tensor<i64>
  return %y, %s : tensor<64x128xf32>, tensor<i64>
}

// CHECK-LABEL: func.func @expand
// CHECK:         %[[Y:.+]] = tx.expand %{{.+}} : tensor<2x1x32x16xf32> -> tensor<2x4x32x16xf32>
// CHECK:         %[[R:.+]] = tx.expand %{{.+}} : tensor<3x1xi64> -> tensor<2x3x5xi64>
// CHECK:         return %[[Y]], %[[R]]
func.func @expand(%x: tensor<2x1x32x16xf32>, %i: tensor<3x1xi64>) -> (tensor<2x4x32x16xf32>, tensor<2x3x5xi64>) {
  %y = tx.expand %x : tensor<2x1x32x16xf32> -> tensor<2x4x32x16xf32>
  %r = tx.expand %i : tensor<3x1xi64> -> tensor<2x3x5xi64>
  return %y, %r : tensor<2x4x32x16xf32>, tensor<2x3x5xi64>
}

// shape(result)[k] = shape(input)[perm[k]].
// CHECK-LABEL: func.func @transpose
// CHECK:         %[[Y:.+]] = tx.transpose %{{.+}} perm [0, 2, 1, 3] : tensor<2x32x4x16xf32>
// CHECK:         %[[Z:.+]] = tx.transpose %{{.+}} perm [2, 0, 1] : tensor<2x3x4xf32>
// CHECK:         return %[[Y]], %[[Z]] : tensor<2x4x32x16xf32>, tensor<4x2x3xf32>
func.func @transpose(%x: tensor<2x32x4x16xf32>, %t: tensor<2x3x4xf32>)
    -> (tensor<2x4x32x16xf32>, tensor<4x2x3xf32>) {
  %y = tx.transpose %x perm [0, 2, 1, 3] : tensor<2x32x4x16xf32>
  %z = tx.transpose %t perm [2, 0, 1] : tensor<2x3x4xf32>
  return %y, %z : tensor<2x4x32x16xf32>, tensor<4x2x3xf32>
}

// CHECK-LABEL: func.func @split
// CHECK-SAME:    %[[QKV:[^:]+]]: tensor<2x32x384xf32>
// CHECK:         %[[P:.+]]:3 = tx.split %[[QKV]] axis(2) : tensor<2x32x384xf32> -> tensor<2x32x128xf32>, tensor<2x32x128xf32>, tensor<2x32x128xf32>
// CHECK:         %[[U:.+]]:2 = tx.split %{{.+}} axis(-1) : tensor<4x7xi64> -> tensor<4x3xi64>, tensor<4x4xi64>
// CHECK:         %[[O:.+]] = tx.split %{{.+}} axis(0) : tensor<4x7xi64> -> tensor<4x7xi64>
// CHECK:         return %[[P]]#0, %[[P]]#1, %[[P]]#2, %[[U]]#1, %[[O]]
func.func @split(%qkv: tensor<2x32x384xf32>, %i: tensor<4x7xi64>)
    -> (tensor<2x32x128xf32>, tensor<2x32x128xf32>, tensor<2x32x128xf32>, tensor<4x4xi64>, tensor<4x7xi64>) {
  %q, %k, %v = tx.split %qkv axis(2) : tensor<2x32x384xf32> -> tensor<2x32x128xf32>, tensor<2x32x128xf32>, tensor<2x32x128xf32>
  %a, %b = tx.split %i axis(-1) : tensor<4x7xi64> -> tensor<4x3xi64>, tensor<4x4xi64>
  %o = tx.split %i axis(0) : tensor<4x7xi64> -> tensor<4x7xi64>
  return %q, %k, %v, %b, %o
      : tensor<2x32x128xf32>, tensor<2x32x128xf32>, tensor<2x32x128xf32>, tensor<4x4xi64>, tensor<4x7xi64>
}

// CHECK-LABEL: func.func @slice
// CHECK:         %[[Y:.+]] = tx.slice %{{.+}} starts [0] ends [16] axes [3] steps [1] : tensor<2x4x32x32xf32>
// CHECK:         return %[[Y]] : tensor<2x4x32x16xf32>
func.func @slice(%x: tensor<2x4x32x32xf32>) -> tensor<2x4x32x16xf32> {
  %y = tx.slice %x starts [0] ends [16] axes [3] steps [1] : tensor<2x4x32x32xf32>
  return %y : tensor<2x4x32x16xf32>
}

// Negative starts/ends count from the end; steps > 1 round up.
// CHECK-LABEL: func.func @slice_negative_starts
// CHECK:         %[[Y:.+]] = tx.slice %{{.+}} starts [-3, 1] ends [-1, 10] axes [0, -1] steps [1, 3] : tensor<10x10xf32>
// CHECK:         return %[[Y]] : tensor<2x3xf32>
func.func @slice_negative_starts(%x: tensor<10x10xf32>) -> tensor<2x3xf32> {
  %y = tx.slice %x starts [-3, 1] ends [-1, 10] axes [0, -1] steps [1, 3] : tensor<10x10xf32>
  return %y : tensor<2x3xf32>
}

// ONNX exporters write INT64_MAX / INT64_MIN for "to the end": both clamp.
// For a negative step, start clamps to dim - 1 and end to -1 (before 0).
// CHECK-LABEL: func.func @slice_clamping
// CHECK:         %[[ALL:.+]] = tx.slice %{{.+}} starts [0] ends [9223372036854775807] axes [0] steps [1] : tensor<10x6xf32>
// CHECK:         %[[REV:.+]] = tx.slice %{{.+}} starts [-1] ends [-9223372036854775808] axes [0] steps [-1] : tensor<10x6xf32>
// CHECK:         %[[REV2:.+]] = tx.slice %{{.+}} starts [9223372036854775807] ends [-9223372036854775807] axes [1] steps [-2] : tensor<10x6xf32>
// CHECK:         %[[EMPTY:.+]] = tx.slice %{{.+}} starts [20] ends [30] axes [0] steps [1] : tensor<10x6xf32>
// CHECK:         %[[BIG:.+]] = tx.slice %{{.+}} starts [-100] ends [100] axes [1] steps [9223372036854775807] : tensor<10x6xf32>
// CHECK:         return %[[ALL]], %[[REV]], %[[REV2]], %[[EMPTY]], %[[BIG]] : tensor<10x6xf32>, tensor<10x6xf32>, tensor<10x3xf32>, tensor<0x6xf32>, tensor<10x1xf32>
func.func @slice_clamping(%x: tensor<10x6xf32>)
    -> (tensor<10x6xf32>, tensor<10x6xf32>, tensor<10x3xf32>, tensor<0x6xf32>, tensor<10x1xf32>) {
  %all = tx.slice %x starts [0] ends [9223372036854775807] axes [0] steps [1] : tensor<10x6xf32>
  %rev = tx.slice %x starts [-1] ends [-9223372036854775808] axes [0] steps [-1] : tensor<10x6xf32>
  %rev2 = tx.slice %x starts [9223372036854775807] ends [-9223372036854775807] axes [1] steps [-2] : tensor<10x6xf32>
  %empty = tx.slice %x starts [20] ends [30] axes [0] steps [1] : tensor<10x6xf32>
  %big = tx.slice %x starts [-100] ends [100] axes [1] steps [9223372036854775807] : tensor<10x6xf32>
  return %all, %rev, %rev2, %empty, %big
      : tensor<10x6xf32>, tensor<10x6xf32>, tensor<10x3xf32>, tensor<0x6xf32>, tensor<10x1xf32>
}

// Negative steps: [8:2:-2] takes 8, 6, 4; a huge negative step takes one element.
// CHECK-LABEL: func.func @slice_negative_steps
// CHECK:         %[[A:.+]] = tx.slice %{{.+}} starts [8] ends [2] axes [0] steps [-2] : tensor<10xi64>
// CHECK:         %[[B:.+]] = tx.slice %{{.+}} starts [2] ends [8] axes [0] steps [-1] : tensor<10xi64>
// CHECK:         %[[C:.+]] = tx.slice %{{.+}} starts [5] ends [-20] axes [0] steps [-9223372036854775808] : tensor<10xi64>
// CHECK:         %[[D:.+]] = tx.slice %{{.+}} starts [0] ends [-1] axes [0] steps [-1] : tensor<0xi64>
// CHECK:         return %[[A]], %[[B]], %[[C]], %[[D]] : tensor<3xi64>, tensor<0xi64>, tensor<1xi64>, tensor<0xi64>
func.func @slice_negative_steps(%x: tensor<10xi64>, %e: tensor<0xi64>)
    -> (tensor<3xi64>, tensor<0xi64>, tensor<1xi64>, tensor<0xi64>) {
  %a = tx.slice %x starts [8] ends [2] axes [0] steps [-2] : tensor<10xi64>
  %b = tx.slice %x starts [2] ends [8] axes [0] steps [-1] : tensor<10xi64>
  %c = tx.slice %x starts [5] ends [-20] axes [0] steps [-9223372036854775808] : tensor<10xi64>
  %d = tx.slice %e starts [0] ends [-1] axes [0] steps [-1] : tensor<0xi64>
  return %a, %b, %c, %d : tensor<3xi64>, tensor<0xi64>, tensor<1xi64>, tensor<0xi64>
}

// CHECK-LABEL: func.func @concat
// CHECK:         %[[Y:.+]] = tx.concat %{{.+}}, %{{.+}} axis(3) : tensor<2x4x32x8xf32>, tensor<2x4x32x8xf32>
// CHECK:         %[[Z:.+]] = tx.concat %{{.+}}, %{{.+}}, %{{.+}} axis(-2) : tensor<1x3xi64>, tensor<0x3xi64>, tensor<5x3xi64>
// CHECK:         %[[O:.+]] = tx.concat %{{.+}} axis(0) : tensor<1x3xi64>
// CHECK:         return %[[Y]], %[[Z]], %[[O]] : tensor<2x4x32x16xf32>, tensor<6x3xi64>, tensor<1x3xi64>
func.func @concat(%a: tensor<2x4x32x8xf32>, %i: tensor<1x3xi64>, %e: tensor<0x3xi64>, %j: tensor<5x3xi64>)
    -> (tensor<2x4x32x16xf32>, tensor<6x3xi64>, tensor<1x3xi64>) {
  %y = tx.concat %a, %a axis(3) : tensor<2x4x32x8xf32>, tensor<2x4x32x8xf32>
  %z = tx.concat %i, %e, %j axis(-2) : tensor<1x3xi64>, tensor<0x3xi64>, tensor<5x3xi64>
  %o = tx.concat %i axis(0) : tensor<1x3xi64>
  return %y, %z, %o : tensor<2x4x32x16xf32>, tensor<6x3xi64>, tensor<1x3xi64>
}

// An empty axes list removes every size-1 dim.
// CHECK-LABEL: func.func @squeeze
// CHECK:         %[[Y:.+]] = tx.squeeze %{{.+}} axes [1] : tensor<64x1xf32>
// CHECK:         %[[N:.+]] = tx.squeeze %{{.+}} axes [-1, 0] : tensor<1x3x1xf32>
// CHECK:         %[[A:.+]] = tx.squeeze %{{.+}} axes [] : tensor<1x3x1xf32>
// CHECK:         %[[S:.+]] = tx.squeeze %{{.+}} axes [] : tensor<1x1xf32>
// CHECK:         return %[[Y]], %[[N]], %[[A]], %[[S]] : tensor<64xf32>, tensor<3xf32>, tensor<3xf32>, tensor<f32>
func.func @squeeze(%x: tensor<64x1xf32>, %t: tensor<1x3x1xf32>, %o: tensor<1x1xf32>)
    -> (tensor<64xf32>, tensor<3xf32>, tensor<3xf32>, tensor<f32>) {
  %y = tx.squeeze %x axes [1] : tensor<64x1xf32>
  %n = tx.squeeze %t axes [-1, 0] : tensor<1x3x1xf32>
  %a = tx.squeeze %t axes [] : tensor<1x3x1xf32>
  %s = tx.squeeze %o axes [] : tensor<1x1xf32>
  return %y, %n, %a, %s : tensor<64xf32>, tensor<3xf32>, tensor<3xf32>, tensor<f32>
}

// Positions index the result; negative ones count from its end.
// CHECK-LABEL: func.func @unsqueeze
// CHECK:         %[[Y:.+]] = tx.unsqueeze %{{.+}} axes [0, 1] : tensor<32x32xf32>
// CHECK:         %[[Z:.+]] = tx.unsqueeze %{{.+}} axes [-1, 1] : tensor<32x32xf32>
// CHECK:         %[[S:.+]] = tx.unsqueeze %{{.+}} axes [0] : tensor<f32>
// CHECK:         return %[[Y]], %[[Z]], %[[S]] : tensor<1x1x32x32xf32>, tensor<32x1x32x1xf32>, tensor<1xf32>
func.func @unsqueeze(%x: tensor<32x32xf32>, %s: tensor<f32>)
    -> (tensor<1x1x32x32xf32>, tensor<32x1x32x1xf32>, tensor<1xf32>) {
  %y = tx.unsqueeze %x axes [0, 1] : tensor<32x32xf32>
  %z = tx.unsqueeze %x axes [-1, 1] : tensor<32x32xf32>
  %u = tx.unsqueeze %s axes [0] : tensor<f32>
  return %y, %z, %u : tensor<1x1x32x32xf32>, tensor<32x1x32x1xf32>, tensor<1xf32>
}

// Constant mode (the default) and a negative pad that crops.
// CHECK-LABEL: func.func @pad
// CHECK:         %[[Y:.+]] = tx.pad %{{.+}} pads [0, 0, 0, 1] value(-1.000000e+02) : tensor<2x32xi64>
// CHECK:         %[[C:.+]] = tx.pad %{{.+}} pads [-1, 2, 0, -3] value(0.000000e+00) : tensor<2x32xi64>
// CHECK:         return %[[Y]], %[[C]] : tensor<2x33xi64>, tensor<1x31xi64>
func.func @pad(%labels: tensor<2x32xi64>) -> (tensor<2x33xi64>, tensor<1x31xi64>) {
  %y = tx.pad %labels pads [0, 0, 0, 1] value(-100.0) : tensor<2x32xi64>
  %c = tx.pad %labels pads [-1, 2, 0, -3] value(0.0) : tensor<2x32xi64>
  return %y, %c : tensor<2x33xi64>, tensor<1x31xi64>
}

// CHECK-LABEL: func.func @pad_modes
// CHECK:         %[[R:.+]] = tx.pad %{{.+}} pads [1, 2, 1, 2] value(0.000000e+00) {mode = #tx<pad_mode reflect>} : tensor<3x4xf32>
// CHECK:         %[[E:.+]] = tx.pad %{{.+}} pads [5, 0, 5, 0] value(0.000000e+00) {mode = #tx<pad_mode edge>} : tensor<3x4xf32>
// CHECK:         %[[W:.+]] = tx.pad %{{.+}} pads [0, 4, 0, 4] value(0.000000e+00) {mode = #tx<pad_mode wrap>} : tensor<3x4xf32>
// CHECK:         %[[K:.+]] = tx.pad %{{.+}} pads [1, 0, 1, 0] value(1.500000e+00) : tensor<3x4xf32>
// CHECK:         return %[[R]], %[[E]], %[[W]], %[[K]] : tensor<5x8xf32>, tensor<13x4xf32>, tensor<3x12xf32>, tensor<5x4xf32>
func.func @pad_modes(%x: tensor<3x4xf32>)
    -> (tensor<5x8xf32>, tensor<13x4xf32>, tensor<3x12xf32>, tensor<5x4xf32>) {
  %r = tx.pad %x pads [1, 2, 1, 2] value(0.0) {mode = #tx<pad_mode reflect>} : tensor<3x4xf32>
  %e = tx.pad %x pads [5, 0, 5, 0] value(0.0) {mode = #tx<pad_mode edge>} : tensor<3x4xf32>
  %w = tx.pad %x pads [0, 4, 0, 4] value(0.0) {mode = #tx<pad_mode wrap>} : tensor<3x4xf32>
  %k = tx.pad %x pads [1, 0, 1, 0] value(1.5) {mode = #tx<pad_mode constant>} : tensor<3x4xf32>
  return %r, %e, %w, %k : tensor<5x8xf32>, tensor<13x4xf32>, tensor<3x12xf32>, tensor<5x4xf32>
}

//===----------------------------------------------------------------------===//
// Reductions and normalization
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @reduce_mean
// CHECK:         %[[K:.+]] = tx.reduce_mean %{{.+}} axes [-1] keep_dims : tensor<2x32x128xf32>
// CHECK:         %[[D:.+]] = tx.reduce_mean %{{.+}} axes [0, 2] : tensor<2x32x128xf32>
// CHECK:         return %[[K]], %[[D]] : tensor<2x32x1xf32>, tensor<32xf32>
func.func @reduce_mean(%x: tensor<2x32x128xf32>) -> (tensor<2x32x1xf32>, tensor<32xf32>) {
  %k = tx.reduce_mean %x axes [-1] keep_dims : tensor<2x32x128xf32>
  %d = tx.reduce_mean %x axes [0, 2] : tensor<2x32x128xf32>
  return %k, %d : tensor<2x32x1xf32>, tensor<32xf32>
}

// Empty axes reduce every dim.
// CHECK-LABEL: func.func @reduce_sum
// CHECK:         %[[A:.+]] = tx.reduce_sum %{{.+}} axes [] : tensor<4x5xi64>
// CHECK:         %[[K:.+]] = tx.reduce_sum %{{.+}} axes [] keep_dims : tensor<4x5xi64>
// CHECK:         %[[O:.+]] = tx.reduce_sum %{{.+}} axes [1] : tensor<4x5xi64>
// CHECK:         return %[[A]], %[[K]], %[[O]] : tensor<i64>, tensor<1x1xi64>, tensor<4xi64>
func.func @reduce_sum(%x: tensor<4x5xi64>) -> (tensor<i64>, tensor<1x1xi64>, tensor<4xi64>) {
  %a = tx.reduce_sum %x axes [] : tensor<4x5xi64>
  %k = tx.reduce_sum %x axes [] keep_dims : tensor<4x5xi64>
  %o = tx.reduce_sum %x axes [1] : tensor<4x5xi64>
  return %a, %k, %o : tensor<i64>, tensor<1x1xi64>, tensor<4xi64>
}

// CHECK-LABEL: func.func @reduce_max
// CHECK:         %[[K:.+]] = tx.reduce_max %{{.+}} axes [-1] keep_dims : tensor<2x4x32x32xf32>
// CHECK:         %[[D:.+]] = tx.reduce_max %{{.+}} axes [1, -1] : tensor<2x4x32x32xf32>
// CHECK:         return %[[K]], %[[D]] : tensor<2x4x32x1xf32>, tensor<2x32xf32>
func.func @reduce_max(%x: tensor<2x4x32x32xf32>) -> (tensor<2x4x32x1xf32>, tensor<2x32xf32>) {
  %k = tx.reduce_max %x axes [-1] keep_dims : tensor<2x4x32x32xf32>
  %d = tx.reduce_max %x axes [1, -1] : tensor<2x4x32x32xf32>
  return %k, %d : tensor<2x4x32x1xf32>, tensor<2x32xf32>
}

// CHECK-LABEL: func.func @softmax
// CHECK:         %[[P:.+]] = tx.softmax %{{.+}} axis(-1) : tensor<2x4x32x32xf32>
// CHECK:         %[[Q:.+]] = tx.softmax %{{.+}} axis(1) : tensor<2x4x32x32xf32>
// CHECK:         return %[[P]], %[[Q]]
func.func @softmax(%s: tensor<2x4x32x32xf32>) -> (tensor<2x4x32x32xf32>, tensor<2x4x32x32xf32>) {
  %p = tx.softmax %s axis(-1) : tensor<2x4x32x32xf32>
  %q = tx.softmax %s axis(1) : tensor<2x4x32x32xf32>
  return %p, %q : tensor<2x4x32x32xf32>, tensor<2x4x32x32xf32>
}

// CHECK-LABEL: func.func @layer_normalization
// CHECK-SAME:    %[[X:[^:]+]]: tensor<2x32x128xf32>, %[[G:[^:]+]]: tensor<128xf32>, %[[B:[^:]+]]: tensor<128xf32>
// CHECK:         %[[Y:.+]] = tx.layer_normalization %[[X]], %[[G]], %[[B]] axis(-1) eps(9.99999974E-6) : tensor<2x32x128xf32>, tensor<128xf32>, tensor<128xf32>
// CHECK:         %[[N:.+]] = tx.layer_normalization %[[X]], %[[G]] axis(2) eps(0.000000e+00) : tensor<2x32x128xf32>, tensor<128xf32>
// CHECK:         %[[M:.+]] = tx.layer_normalization %[[X]], %{{.+}}, %{{.+}} axis(1) eps(1.000000e-03) : tensor<2x32x128xf32>, tensor<32x128xf32>, tensor<1x128xf32>
// CHECK:         return %[[Y]], %[[N]], %[[M]]
func.func @layer_normalization(%x: tensor<2x32x128xf32>, %g: tensor<128xf32>, %b: tensor<128xf32>,
                               %g2: tensor<32x128xf32>, %b2: tensor<1x128xf32>)
    -> (tensor<2x32x128xf32>, tensor<2x32x128xf32>, tensor<2x32x128xf32>) {
  %y = tx.layer_normalization %x, %g, %b axis(-1) eps(1.0e-05) : tensor<2x32x128xf32>, tensor<128xf32>, tensor<128xf32>
  %n = tx.layer_normalization %x, %g axis(2) eps(0.0) : tensor<2x32x128xf32>, tensor<128xf32>
  %m = tx.layer_normalization %x, %g2, %b2 axis(1) eps(1.0e-03) : tensor<2x32x128xf32>, tensor<32x128xf32>, tensor<1x128xf32>
  return %y, %n, %m : tensor<2x32x128xf32>, tensor<2x32x128xf32>, tensor<2x32x128xf32>
}

// CHECK-LABEL: func.func @rms_normalization
// CHECK:         %[[Y:.+]] = tx.rms_normalization %{{.+}}, %{{.+}} axis(-1) eps(9.99999997E-7) : tensor<2x32x128xbf16>, tensor<128xbf16>
// CHECK:         return %[[Y]] : tensor<2x32x128xbf16>
func.func @rms_normalization(%x: tensor<2x32x128xbf16>, %g: tensor<128xbf16>) -> tensor<2x32x128xbf16> {
  %y = tx.rms_normalization %x, %g axis(-1) eps(1.0e-06) : tensor<2x32x128xbf16>, tensor<128xbf16>
  return %y : tensor<2x32x128xbf16>
}

//===----------------------------------------------------------------------===//
// Loss and regularization
//===----------------------------------------------------------------------===//

// `mean` and `sum` give a scalar; `none` gives the labels' shape.
// CHECK-LABEL: func.func @softmax_cross_entropy_loss
// CHECK:         %[[MEAN:.+]] = tx.softmax_cross_entropy_loss %{{.+}}, %{{.+}} reduction(mean) {ignore_index = -100 : i64} : tensor<64x512xf32>, tensor<64xi64>
// CHECK:         %[[SUM:.+]] = tx.softmax_cross_entropy_loss %{{.+}}, %{{.+}} reduction(sum) : tensor<64x512xf32>, tensor<64xi64>
// CHECK:         %[[NONE:.+]] = tx.softmax_cross_entropy_loss %{{.+}}, %{{.+}} reduction(none) : tensor<64x512xf32>, tensor<64xi64>
// CHECK:         return %[[MEAN]], %[[SUM]], %[[NONE]] : tensor<f32>, tensor<f32>, tensor<64xf32>
func.func @softmax_cross_entropy_loss(%logits: tensor<64x512xf32>, %labels: tensor<64xi64>)
    -> (tensor<f32>, tensor<f32>, tensor<64xf32>) {
  %mean = tx.softmax_cross_entropy_loss %logits, %labels reduction(mean) {ignore_index = -100} : tensor<64x512xf32>, tensor<64xi64>
  %sum = tx.softmax_cross_entropy_loss %logits, %labels reduction(sum) : tensor<64x512xf32>, tensor<64xi64>
  %none = tx.softmax_cross_entropy_loss %logits, %labels reduction(none) : tensor<64x512xf32>, tensor<64xi64>
  return %mean, %sum, %none : tensor<f32>, tensor<f32>, tensor<64xf32>
}

// Class weights, and [N, C, d1] scores with [N, d1] labels.
// CHECK-LABEL: func.func @softmax_cross_entropy_loss_weights
// CHECK:         %[[W:.+]] = tx.softmax_cross_entropy_loss %{{.+}}, %{{.+}}, %{{.+}} reduction(mean) : tensor<64x512xf32>, tensor<64xi32>, tensor<512xf32>
// CHECK:         %[[D:.+]] = tx.softmax_cross_entropy_loss %{{.+}}, %{{.+}}, %{{.+}} reduction(none) {ignore_index = 0 : i64} : tensor<2x512x32xf32>, tensor<2x32xi64>, tensor<512xf32>
// CHECK:         return %[[W]], %[[D]] : tensor<f32>, tensor<2x32xf32>
func.func @softmax_cross_entropy_loss_weights(%logits: tensor<64x512xf32>, %labels: tensor<64xi32>,
                                              %w: tensor<512xf32>, %s: tensor<2x512x32xf32>,
                                              %l: tensor<2x32xi64>)
    -> (tensor<f32>, tensor<2x32xf32>) {
  %a = tx.softmax_cross_entropy_loss %logits, %labels, %w reduction(mean) : tensor<64x512xf32>, tensor<64xi32>, tensor<512xf32>
  %b = tx.softmax_cross_entropy_loss %s, %l, %w reduction(none) {ignore_index = 0} : tensor<2x512x32xf32>, tensor<2x32xi64>, tensor<512xf32>
  return %a, %b : tensor<f32>, tensor<2x32xf32>
}

// CHECK-LABEL: func.func @dropout
// CHECK-SAME:    %[[X:[^:]+]]: tensor<2x32x128xf32>, %[[KEY:[^:]+]]: tensor<i64>
// CHECK:         %[[Y:.+]] = tx.dropout %[[X]], %[[KEY]] ratio(1.000000e-01) seed(42) : tensor<2x32x128xf32>
// CHECK:         %[[Z:.+]] = tx.dropout %[[X]], %[[KEY]] ratio(0.000000e+00) seed(0) : tensor<2x32x128xf32>
// CHECK:         return %[[Y]], %[[Z]]
func.func @dropout(%x: tensor<2x32x128xf32>, %key: tensor<i64>) -> (tensor<2x32x128xf32>, tensor<2x32x128xf32>) {
  %y = tx.dropout %x, %key ratio(0.1) seed(42) : tensor<2x32x128xf32>
  %z = tx.dropout %x, %key ratio(0.0) seed(0) : tensor<2x32x128xf32>
  return %y, %z : tensor<2x32x128xf32>, tensor<2x32x128xf32>
}
