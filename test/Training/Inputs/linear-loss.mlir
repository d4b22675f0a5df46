// A linear layer with a mean-square loss: small enough to reason about the
// loss-scaling state by hand.
tx.parameter @w = dense<[[0.5, -0.25], [0.125, 1.0], [-1.0, 0.75]]> : tensor<3x2xf32>
tx.parameter @b = dense<[0.1, -0.2]> : tensor<2xf32>
func.func @main(%x: tensor<4x3xf32> {tx.name = "x"}) -> (tensor<f32> {tx.name = "loss"}) {
  %w = tx.load_parameter @w : tensor<3x2xf32>
  %b = tx.load_parameter @b : tensor<2xf32>
  %y = tx.matmul %x, %w : tensor<4x3xf32>, tensor<3x2xf32>
  %z = tx.add %y, %b : tensor<4x2xf32>, tensor<2xf32>
  %sq = tx.mul %z, %z : tensor<4x2xf32>, tensor<4x2xf32>
  %l = tx.reduce_mean %sq axes [] : tensor<4x2xf32>
  return %l : tensor<f32>
}
