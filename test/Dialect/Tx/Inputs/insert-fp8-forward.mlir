// The forward models of test/Dialect/Tx/insert-fp8.mlir. That test runs
// tx-insert-fp8 alone on their training steps, Inputs/insert-fp8-steps.mlir
// (tx-build-train-step's output, which it also checks is current).

// Three GEMMs in a row. By default the first and last forward GEMM (and the
// backward GEMMs of the same node) stay as they are; the middle one and its
// dgrad and wgrad become FP8 GEMMs. The numbers of these ops are checked by
// test/Reference/fp8-scaling.mlir and test/Training/precision-curves.test.
tx.parameter @w1 = dense<0.5> : tensor<32x16xf32>
tx.parameter @w2 = dense<0.25> : tensor<16x16xf32>
tx.parameter @w3 = dense<0.125> : tensor<16x16xf32>
func.func @main(%x: tensor<16x32xf32> {tx.name = "x"}) -> (tensor<f32> {tx.name = "loss"}) {
  %w1 = tx.load_parameter @w1 : tensor<32x16xf32>
  %w2 = tx.load_parameter @w2 : tensor<16x16xf32>
  %w3 = tx.load_parameter @w3 : tensor<16x16xf32>
  %h1 = tx.matmul %x, %w1 : tensor<16x32xf32>, tensor<32x16xf32> loc("first")
  %a1 = tx.relu %h1 : tensor<16x16xf32>
  %h2 = tx.matmul %a1, %w2 : tensor<16x16xf32>, tensor<16x16xf32> loc("middle")
  %h3 = tx.matmul %h2, %w3 : tensor<16x16xf32>, tensor<16x16xf32> loc("last")
  %sq = tx.mul %h3, %h3 : tensor<16x16xf32>, tensor<16x16xf32>
  %l = tx.reduce_mean %sq axes [] : tensor<16x16xf32>
  return %l : tensor<f32>
}

// -----

// Shapes cuBLASLt cannot run in FP8 stay as they are.
tx.parameter @v = dense<0.5> : tensor<32x16xf32>
tx.parameter @u = dense<0.5> : tensor<16x16xf32>
tx.parameter @c = dense<0.5> : tensor<16xf32>
func.func @main(%x: tensor<10x32xf32> {tx.name = "x"}) -> (tensor<f32> {tx.name = "loss"}) {
  %v = tx.load_parameter @v : tensor<32x16xf32>
  %u = tx.load_parameter @u : tensor<16x16xf32>
  %c = tx.load_parameter @c : tensor<16xf32>
  %h = tx.matmul %x, %v : tensor<10x32xf32>, tensor<32x16xf32> loc("odd")
  %g = tx.gemm %h, %u, %c : tensor<10x16xf32>, tensor<16x16xf32>, tensor<16xf32> loc("with_bias")
  %l = tx.reduce_sum %g axes [] : tensor<10x16xf32>
  return %l : tensor<f32>
}

// -----

// tx.gemm: transposes are applied before the cast, alpha and the bias after
// the FP8 product, in the GEMM's type.
tx.parameter @wt = dense<0.5> : tensor<32x16xf32>
tx.parameter @bias = dense<0.5> : tensor<32xf32>
func.func @main(%x: tensor<16x16xf32> {tx.name = "x"}) -> (tensor<f32> {tx.name = "loss"}) {
  %w = tx.load_parameter @wt : tensor<32x16xf32>
  %c = tx.load_parameter @bias : tensor<32xf32>
  %g = tx.gemm %x, %w, %c {transB = true, alpha = 2.0 : f32, beta = 0.5 : f32} : tensor<16x16xf32>, tensor<32x16xf32>, tensor<32xf32> loc("gemm")
  %l = tx.reduce_sum %g axes [] : tensor<16x32xf32>
  return %l : tensor<f32>
}
