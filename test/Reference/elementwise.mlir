// RUN: txopt-run %s --function add_broadcast | FileCheck %s --check-prefix=ADD
// RUN: txopt-run %s --function add_rounds_to_f32 | FileCheck %s --check-prefix=F32
// RUN: txopt-run %s --function add_rounds_to_f32 --f64 | FileCheck %s --check-prefix=F64
// RUN: txopt-run %s --function integer_arith | FileCheck %s --check-prefix=INT
// RUN: txopt-run %s --function float_mod_pow | FileCheck %s --check-prefix=FMOD
// RUN: txopt-run %s --function compare_where | FileCheck %s --check-prefix=WHERE
// RUN: txopt-run %s --function unary_math | FileCheck %s --check-prefix=UNARY
// RUN: txopt-run %s --function neg_relu_isnan | FileCheck %s --check-prefix=NEG

// Numpy broadcasting of a row over a matrix; the result keeps its tx.name.
// ADD: sum: tensor<2x3xf32> = {{\[\[}}11, 22, 33], [14, 25, 36]]
func.func @add_broadcast() -> (tensor<2x3xf32> {tx.name = "sum"}) {
  %a = tx.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %b = tx.constant dense<[10.0, 20.0, 30.0]> : tensor<3xf32>
  %c = tx.add %a, %b : tensor<2x3xf32>, tensor<3xf32>
  return %c : tensor<2x3xf32>
}

// f32 0.1 + 0.2 rounds to the f32 nearest the exact sum; --f64 keeps it.
// F32: result0 = 0.300000012
// F64: result0 = 0.300000004
func.func @add_rounds_to_f32() -> tensor<f32> {
  %a = tx.constant dense<0.1> : tensor<f32>
  %b = tx.constant dense<0.2> : tensor<f32>
  %c = tx.add %a, %b : tensor<f32>, tensor<f32>
  return %c : tensor<f32>
}

// Integer division truncates; mod follows the divisor's sign unless fmod;
// i32 arithmetic wraps; integer pow is exact.
// INT: result0: tensor<4xi64> = [-3, 3, 3, -3]
// INT: result1: tensor<4xi64> = [2, -2, -1, 1]
// INT: result2: tensor<4xi64> = [-1, 1, -1, 1]
// INT: result3: tensor<2xi32> = [-2147483648, 2147483646]
// INT: result4: tensor<2xi64> = [1024, -27]
func.func @integer_arith() -> (tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<2xi32>, tensor<2xi64>) {
  %a = tx.constant dense<[-7, 7, -7, 7]> : tensor<4xi64>
  %b = tx.constant dense<[2, 2, -2, -2]> : tensor<4xi64>
  %d = tx.constant dense<[3, -3, -3, 3]> : tensor<4xi64>
  %q = tx.div %a, %b : tensor<4xi64>, tensor<4xi64>
  %m = tx.mod %a, %d : tensor<4xi64>, tensor<4xi64>
  %f = tx.mod %a, %d {fmod = true} : tensor<4xi64>, tensor<4xi64>
  %big = tx.constant dense<[2147483647, -2147483648]> : tensor<2xi32>
  %neg1 = tx.constant dense<[1, -2]> : tensor<2xi32>
  %w = tx.add %big, %neg1 : tensor<2xi32>, tensor<2xi32>
  %base = tx.constant dense<[2, -3]> : tensor<2xi64>
  %exp = tx.constant dense<[10, 3]> : tensor<2xi64>
  %p = tx.pow %base, %exp : tensor<2xi64>, tensor<2xi64>
  return %q, %m, %f, %w, %p : tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<2xi32>, tensor<2xi64>
}

// Float fmod keeps the dividend's sign; pow takes an exponent of another type.
// FMOD: result0: tensor<2xf32> = [-1.5, 1.5]
// FMOD: result1: tensor<2xf32> = [2.25, 0.125]
func.func @float_mod_pow() -> (tensor<2xf32>, tensor<2xf32>) {
  %a = tx.constant dense<[-7.5, 7.5]> : tensor<2xf32>
  %b = tx.constant dense<2.0> : tensor<f32>
  %m = tx.mod %a, %b {fmod = true} : tensor<2xf32>, tensor<f32>
  %x = tx.constant dense<[1.5, 0.5]> : tensor<2xf32>
  %e = tx.constant dense<[2, 3]> : tensor<2xi64>
  %p = tx.pow %x, %e : tensor<2xf32>, tensor<2xi64>
  return %m, %p : tensor<2xf32>, tensor<2xf32>
}

// A causal mask: where(j <= i, scores, -inf) with three-way broadcasting.
// WHERE: result0: tensor<2x2xi1> = {{\[\[}}true, false], [true, true]]
// WHERE: result1: tensor<2x2x2xf32> = {{\[\[\[}}1, -inf], [3, 4]], {{\[\[}}5, -inf], [7, 8]]]
// WHERE: result2: tensor<3xi1> = [false, true, false]
func.func @compare_where() -> (tensor<2x2xi1>, tensor<2x2x2xf32>, tensor<3xi1>) {
  %row = tx.constant dense<[[0], [1]]> : tensor<2x1xi64>
  %col = tx.constant dense<[0, 1]> : tensor<2xi64>
  %mask = tx.greater_or_equal %row, %col : tensor<2x1xi64>, tensor<2xi64>
  %s = tx.constant dense<[[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0]]]> : tensor<2x2x2xf32>
  %ninf = tx.constant dense<0xFF800000> : tensor<f32>
  %y = tx.where %mask, %s, %ninf : tensor<2x2xi1>, tensor<2x2x2xf32>, tensor<f32>
  %a = tx.constant dense<[1.0, 2.0, 0x7FC00000]> : tensor<3xf32>
  %b = tx.constant dense<[2.0, 2.0, 0x7FC00000]> : tensor<3xf32>
  %eq = tx.equal %a, %b : tensor<3xf32>, tensor<3xf32>
  return %mask, %y, %eq : tensor<2x2xi1>, tensor<2x2x2xf32>, tensor<3xi1>
}

// Float math, each rounded once to f32 (values checked against numpy).
// UNARY: result0: tensor<9xf32> = [1.41421354, 0.5, 0.520499885, 0.462117165, 0.622459352, 1.64872122, -0.693147182, 0.47942555, 0.87758255]
func.func @unary_math() -> tensor<9xf32> {
  %x = tx.constant dense<[2.0]> : tensor<1xf32>
  %h = tx.constant dense<[0.5]> : tensor<1xf32>
  %0 = tx.sqrt %x : tensor<1xf32>
  %1 = tx.reciprocal %x : tensor<1xf32>
  %2 = tx.erf %h : tensor<1xf32>
  %3 = tx.tanh %h : tensor<1xf32>
  %4 = tx.sigmoid %h : tensor<1xf32>
  %5 = tx.exp %h : tensor<1xf32>
  %6 = tx.log %h : tensor<1xf32>
  %7 = tx.sin %h : tensor<1xf32>
  %8 = tx.cos %h : tensor<1xf32>
  %all = tx.concat %0, %1, %2, %3, %4, %5, %6, %7, %8 axis(0) : tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>
  return %all : tensor<9xf32>
}

// NEG: result0: tensor<3xf32> = [1, -0, -2]
// NEG: result1: tensor<3xi64> = [0, 0, 5]
// NEG: result2: tensor<3xi1> = [false, true, false]
// NEG: result3: tensor<3xf32> = [-1, 0, 2]
func.func @neg_relu_isnan() -> (tensor<3xf32>, tensor<3xi64>, tensor<3xi1>, tensor<3xf32>) {
  %x = tx.constant dense<[-1.0, 0.0, 2.0]> : tensor<3xf32>
  %n = tx.neg %x : tensor<3xf32>
  %i = tx.constant dense<[-3, 0, 5]> : tensor<3xi64>
  %r = tx.relu %i : tensor<3xi64>
  %y = tx.constant dense<[1.0, 0x7FC00000, 0xFF800000]> : tensor<3xf32>
  %nan = tx.is_nan %y : tensor<3xf32> -> tensor<3xi1>
  %id = tx.identity %x : tensor<3xf32>
  return %n, %r, %nan, %id : tensor<3xf32>, tensor<3xi64>, tensor<3xi1>, tensor<3xf32>
}
