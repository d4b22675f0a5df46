// RUN: rm -rf %t && mkdir -p %t
// RUN: txopt-run %s --function cast_to_e4m3 --print-limit 32 | FileCheck %s --check-prefix=E4M3
// RUN: txopt-run %s --function cast_to_e5m2 | FileCheck %s --check-prefix=E5M2
// RUN: txopt-run %s --function between_formats | FileCheck %s --check-prefix=BETWEEN
// RUN: txopt-run %s --function fp8_arith | FileCheck %s --check-prefix=ARITH
// RUN: txopt-run %s --function cast_to_e4m3 --output-dir %t > /dev/null
// RUN: txopt-run %s --function read_e4m3 --input q=%t/result0.npy --print-limit 32 | FileCheck %s --check-prefix=NPY

// tx.cast to the OCP FP8 types rounds to nearest even and saturates, as
// TE, cuBLASLt and ONNX Cast (saturate=1) do; test/Reference/
// float-formats.test proves the rounding against APFloat for every code and
// millions of values. Here, the executor end to end:
//   448 is E4M3FN's largest value; 449 and 464 (the tie with the missing
//   480, which would be odd) round to it; 464 + ulp, 480, +-1e9 and +-inf
//   saturate to +-448; NaN stays NaN;
//   2^-9 is the smallest subnormal, 2^-10 ties to 0, 2^-10 + ulp rounds up
//   to 2^-9, 3 * 2^-10 ties to the even 2^-8;
//   1.0625 ties to 1 and 1.1875 to 1.25 (the even neighbours); -0 stays -0;
//   2^-6 is the smallest normal. Widening back to f32 is exact.
// E4M3: result0: tensor<18xf8E4M3FN> = [448, 448, 448, 448, 448, 448, -448, 448, -448, nan, 0.001953125, 0, 0.001953125, 0.00390625, 1, 1.25, -0, 0.015625]
// E4M3: result1: tensor<18xf32> = [448, 448, 448, 448, 448, 448, -448, 448, -448, nan, 0.001953125, 0, 0.001953125, 0.00390625, 1, 1.25, -0, 0.015625]
func.func @cast_to_e4m3() -> (tensor<18xf8E4M3FN>, tensor<18xf32>) {
  %x = tx.constant dense<[448.0, 449.0, 464.0, 0x43E80001, 480.0, 1.0e9, -1.0e9, 0x7F800000, 0xFF800000, 0x7FC00000,
                          0.001953125, 0.0009765625, 0x3A800001, 0.0029296875, 1.0625, 1.1875, -0.0, 0.015625]> : tensor<18xf32>
  %y = tx.cast %x : tensor<18xf32> to tensor<18xf8E4M3FN>
  %z = tx.cast %y : tensor<18xf8E4M3FN> to tensor<18xf32>
  return %y, %z : tensor<18xf8E4M3FN>, tensor<18xf32>
}

// E5M2 (largest 57344): 61439 rounds down to it; 61440, the tie with 65536,
// goes to the even 65536 and overflows, so it saturates, as do 1e6 and
// +-inf; NaN stays NaN; 2^-16 is the smallest subnormal, 2^-17 ties to 0,
// 3 * 2^-17 to 2^-15; 1.125 ties to 1, 1.375 to 1.5.
// E5M2: result0: tensor<12xf8E5M2> = [57344, 57344, 57344, 57344, 57344, -57344, nan, 1.52587891e-05, 0, 3.05175781e-05, 1, 1.5]
func.func @cast_to_e5m2() -> tensor<12xf8E5M2> {
  %x = tx.constant dense<[57344.0, 61439.0, 61440.0, 1.0e6, 0x7F800000, 0xFF800000, 0x7FC00000,
                          1.52587891e-05, 7.62939453e-06, 2.28881836e-05, 1.125, 1.375]> : tensor<12xf32>
  %y = tx.cast %x : tensor<12xf32> to tensor<12xf8E5M2>
  return %y : tensor<12xf8E5M2>
}

// E4M3FN -> E5M2 drops a mantissa bit (1.125 ties to 1, 1.375 to 1.5);
// E5M2 -> E4M3FN saturates (57344, -24576) and flushes 2^-16, below half of
// E4M3FN's smallest subnormal, to 0; both FP8 types widen exactly to bf16.
// BETWEEN: result0: tensor<5xf8E5M2> = [1, 1.5, 448, 0.001953125, -3.5]
// BETWEEN: result1: tensor<5xf8E4M3FN> = [448, 0, 1, 2.5, -448]
// BETWEEN: result2: tensor<5xbf16> = [1.125, 1.375, 448, 0.001953125, -3.5]
func.func @between_formats() -> (tensor<5xf8E5M2>, tensor<5xf8E4M3FN>, tensor<5xbf16>) {
  %x = tx.constant dense<[1.125, 1.375, 448.0, 0.001953125, -3.5]> : tensor<5xf8E4M3FN>
  %y = tx.cast %x : tensor<5xf8E4M3FN> to tensor<5xf8E5M2>
  %z = tx.constant dense<[57344.0, 1.52587891e-05, 1.0, 2.5, -24576.0]> : tensor<5xf8E5M2>
  %w = tx.cast %z : tensor<5xf8E5M2> to tensor<5xf8E4M3FN>
  %b = tx.cast %x : tensor<5xf8E4M3FN> to tensor<5xbf16>
  return %y, %w, %b : tensor<5xf8E5M2>, tensor<5xf8E4M3FN>, tensor<5xbf16>
}

// Arithmetic in an FP8 type rounds every result the same way:
// 448 + 448 saturates, 1 + 2^-4 ties to 1, 240 + 16 = 256 is exact;
// in E5M2 57344^2 saturates and 3 * 3 = 9 ties to 8.
// ARITH: result0: tensor<3xf8E4M3FN> = [448, 1, 256]
// ARITH: result1: tensor<3xf8E5M2> = [57344, 1, 8]
func.func @fp8_arith() -> (tensor<3xf8E4M3FN>, tensor<3xf8E5M2>) {
  %a = tx.constant dense<[448.0, 1.0, 240.0]> : tensor<3xf8E4M3FN>
  %b = tx.constant dense<[448.0, 0.0625, 16.0]> : tensor<3xf8E4M3FN>
  %c = tx.add %a, %b : tensor<3xf8E4M3FN>, tensor<3xf8E4M3FN>
  %d = tx.constant dense<[57344.0, 1.0, 3.0]> : tensor<3xf8E5M2>
  %e = tx.mul %d, %d : tensor<3xf8E5M2>, tensor<3xf8E5M2>
  return %c, %e : tensor<3xf8E4M3FN>, tensor<3xf8E5M2>
}

// FP8 outputs are written as <f4 .npy and read back into an FP8 argument
// unchanged (txopt-run accepts <f4 for narrower float arguments).
// NPY: result0: tensor<18xf8E4M3FN> = [448, 448, 448, 448, 448, 448, -448, 448, -448, nan, 0.001953125, 0, 0.001953125, 0.00390625, 1, 1.25, -0, 0.015625]
func.func @read_e4m3(%q: tensor<18xf8E4M3FN> {tx.name = "q"}) -> tensor<18xf8E4M3FN> {
  return %q : tensor<18xf8E4M3FN>
}
