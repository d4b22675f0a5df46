// RUN: txopt-run %s --function cast_to_bf16 | FileCheck %s --check-prefix=BF16
// RUN: txopt-run %s --function cast_to_f16 | FileCheck %s --check-prefix=F16
// RUN: txopt-run %s --function cast_to_int | FileCheck %s --check-prefix=INT
// RUN: txopt-run %s --function bf16_arith | FileCheck %s --check-prefix=ARITH
// RUN: txopt-run %s --function bf16_arith --f64 | FileCheck %s --check-prefix=ARITH64

// f32 -> bf16 rounds to nearest, ties to even:
//   1 + 2^-8 is halfway between 1 and 1 + 2^-7: even is 1;
//   1 + 3 * 2^-8 is halfway between 1 + 2^-7 (odd) and 1 + 2^-6 (even);
//   1 + 2^-8 + 2^-23 is just above halfway, so it rounds up;
//   3.38e38 rounds to bf16's largest finite value, 3.4e38 overflows to inf;
//   2^-134 is half bf16's smallest subnormal (ties to 0), 3 * 2^-134 ties to
//   2^-132 (even); -0 and NaN keep their kind.
// BF16: result0: tensor<10xbf16> = [1, 1.015625, 1.0078125, 3.38953139e+38, inf, -inf, 0, 1.83670992e-40, -0, nan]
func.func @cast_to_bf16() -> tensor<10xbf16> {
  %x = tx.constant dense<[1.00390625, 1.01171875, 1.00390637, 3.389e38, 3.4e38, -3.4028234e38, 0x00008000, 0x00018000, -0.0, 0x7FC00000]> : tensor<10xf32>
  %y = tx.cast %x : tensor<10xf32> to tensor<10xbf16>
  return %y : tensor<10xbf16>
}

// f32 -> f16: 65519 rounds down to 65504, 65520 ties to 65536 = inf;
// 2049 ties to 2048, 2051 to 2052; 2^-25 ties to 0, 3 * 2^-25 to 2^-23.
// F16: result0: tensor<8xf16> = [65504, inf, 2048, 2052, 0, 1.1920929e-07, 1, -inf]
// F16: result1: tensor<8xf32> = [65504, inf, 2048, 2052, 0, 1.1920929e-07, 1, -inf]
func.func @cast_to_f16() -> (tensor<8xf16>, tensor<8xf32>) {
  %x = tx.constant dense<[65519.0, 65520.0, 2049.0, 2051.0, 2.98023224e-08, 8.94069672e-08, 1.00048828, -1.0e6]> : tensor<8xf32>
  %y = tx.cast %x : tensor<8xf32> to tensor<8xf16>
  %z = tx.cast %y : tensor<8xf16> to tensor<8xf32>
  return %y, %z : tensor<8xf16>, tensor<8xf32>
}

// Float -> int truncates toward zero, narrower ints wrap, anything -> i1 is
// x != 0, and i64 -> f32 rounds once (2^24 + 1 -> 2^24).
// INT: result0: tensor<4xi64> = [-2, 2, 0, 300]
// INT: result1: tensor<4xi8> = [-2, 2, 0, 44]
// INT: result2: tensor<4xi1> = [true, true, true, true]
// INT: result3: tensor<3xi1> = [false, true, true]
// INT: result4: tensor<2xf32> = [16777216, -3]
func.func @cast_to_int() -> (tensor<4xi64>, tensor<4xi8>, tensor<4xi1>, tensor<3xi1>, tensor<2xf32>) {
  %x = tx.constant dense<[-2.7, 2.7, -0.5, 300.0]> : tensor<4xf32>
  %a = tx.cast %x : tensor<4xf32> to tensor<4xi64>
  %b = tx.cast %x : tensor<4xf32> to tensor<4xi8>
  %c = tx.cast %x : tensor<4xf32> to tensor<4xi1>
  %f = tx.constant dense<[0.0, 0.5, 0x7FC00000]> : tensor<3xf32>
  %d = tx.cast %f : tensor<3xf32> to tensor<3xi1>
  %i = tx.constant dense<[16777217, -3]> : tensor<2xi64>
  %e = tx.cast %i : tensor<2xi64> to tensor<2xf32>
  return %a, %b, %c, %d, %e : tensor<4xi64>, tensor<4xi8>, tensor<4xi1>, tensor<3xi1>, tensor<2xf32>
}

// bf16 arithmetic rounds every result to bf16 (256 + 1 = 256); --f64 does not.
// ARITH: result0 = 256
// ARITH64: result0 = 257
func.func @bf16_arith() -> tensor<bf16> {
  %a = tx.constant dense<256.0> : tensor<bf16>
  %b = tx.constant dense<1.0> : tensor<bf16>
  %c = tx.add %a, %b : tensor<bf16>, tensor<bf16>
  return %c : tensor<bf16>
}
