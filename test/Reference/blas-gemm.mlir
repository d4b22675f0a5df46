// tx.blas_gemm on the executor equals the GEMMs tx-gemm-normal-form
// rewrites, bit for bit, on random inputs: each function below runs as
// written and after the pass (where every GEMM is a tx.blas_gemm, the
// transposes flags), and every output must be the same bits (not all
// zeros: the products happened).
// RUN: rm -rf %t && mkdir -p %t
// RUN: txopt-opt %s --tx-gemm-normal-form -o %t/normal.mlir
// RUN: not grep -E "tx\.(matmul|gemm|fp8_matmul|transpose) " %t/normal.mlir
// RUN: grep -c "tx.blas_gemm" %t/normal.mlir | FileCheck %s --check-prefix=NORMAL
// NORMAL: {{^}}7{{$}}
// RUN: for f in linear batched_bf16 gemm fp8; do txopt-run %s --function $f --seed 11 --output-dir %t/before/$f > /dev/null && txopt-run %t/normal.mlir --function $f --seed 11 --output-dir %t/after/$f > /dev/null || exit 1; done
// RUN: %python %S/same_outputs.py %t/before %t/after | FileCheck %s
// CHECK: 7 outputs bit-identical, none all zeros

// A linear layer reading its weight transposed, 3-D against a shared 2-D
// weight (folded into M on the GPU).
func.func @linear(%x: tensor<4x6x8xf32>, %w: tensor<5x8xf32>) -> (tensor<4x6x5xf32> {tx.name = "y"}) {
  %t = tx.transpose %w perm [1, 0] : tensor<5x8xf32>
  %y = tx.matmul %x, %t : tensor<4x6x8xf32>, tensor<8x5xf32>
  return %y : tensor<4x6x5xf32>
}

// Both sides batched and transposed, in bf16 (one rounding of the f64 sum).
func.func @batched_bf16(%a: tensor<2x3x8x6xf32>, %b: tensor<2x3x5x8xf32>)
    -> (tensor<2x3x6x5xbf16> {tx.name = "ab"}, tensor<2x3x8x8xbf16> {tx.name = "ba"}) {
  %a16 = tx.cast %a : tensor<2x3x8x6xf32> to tensor<2x3x8x6xbf16>
  %b16 = tx.cast %b : tensor<2x3x5x8xf32> to tensor<2x3x5x8xbf16>
  %at = tx.transpose %a16 perm [0, 1, 3, 2] : tensor<2x3x8x6xbf16>
  %bt = tx.transpose %b16 perm [0, 1, 3, 2] : tensor<2x3x5x8xbf16>
  %ab = tx.matmul %at, %bt : tensor<2x3x6x8xbf16>, tensor<2x3x8x5xbf16>
  %ba = tx.matmul %bt, %b16 : tensor<2x3x8x5xbf16>, tensor<2x3x5x8xbf16>
  return %ab, %ba : tensor<2x3x6x5xbf16>, tensor<2x3x8x8xbf16>
}

// ONNX Gemm with alpha, beta and a broadcast C; and one reading a transpose
// of its own transposed operand.
func.func @gemm(%a: tensor<6x8xf32>, %b: tensor<5x8xf32>, %c: tensor<5xf32>)
    -> (tensor<6x5xf32> {tx.name = "y"}, tensor<6x5xf32> {tx.name = "z"}) {
  %y = tx.gemm %a, %b, %c {alpha = 0.5 : f32, beta = 2.0 : f32, transB = true} : tensor<6x8xf32>, tensor<5x8xf32>, tensor<5xf32>
  %at = tx.transpose %a perm [1, 0] : tensor<6x8xf32>
  %z = tx.gemm %at, %b {transA = true, transB = true} : tensor<8x6xf32>, tensor<5x8xf32>
  return %y, %z : tensor<6x5xf32>, tensor<6x5xf32>
}

// FP8: codes of random values (E4M3 activations, E5M2 gradients), the
// weight's read transposed (by the forward) and as stored (by the input
// gradient); scale inverses applied after the sum.
func.func @fp8(%x: tensor<6x8xf32>, %w: tensor<5x8xf32>, %g: tensor<6x5xf32>)
    -> (tensor<6x5xbf16> {tx.name = "y"}, tensor<6x8xf32> {tx.name = "dx"}) {
  %two = tx.constant dense<2.0> : tensor<f32>
  %half = tx.constant dense<0.5> : tensor<f32>
  %four = tx.constant dense<4.0> : tensor<f32>
  %xq = tx.quantize %x, %two : tensor<6x8xf32> to tensor<6x8xf8E4M3FN>
  %wq = tx.quantize %w, %two : tensor<5x8xf32> to tensor<5x8xf8E4M3FN>
  %gq = tx.quantize %g, %four : tensor<6x5xf32> to tensor<6x5xf8E5M2>
  %wt = tx.transpose %wq perm [1, 0] : tensor<5x8xf8E4M3FN>
  %y = tx.fp8_matmul %xq, %wt scale_inv(%half, %half) : tensor<6x8xf8E4M3FN>, tensor<8x5xf8E4M3FN> -> tensor<6x5xbf16>
  %dx = tx.fp8_matmul %gq, %wq scale_inv(%half, %half) : tensor<6x5xf8E5M2>, tensor<5x8xf8E4M3FN> -> tensor<6x8xf32>
  return %y, %dx : tensor<6x5xbf16>, tensor<6x8xf32>
}
