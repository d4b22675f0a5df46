// A step function (tx.train_step) whose reverse-sweep seed carries no
// tx.grad_seed marker, as after a cleanup pass: tx-insert-fp8 must refuse it
// rather than treat every gradient as a forward value.
func.func @train_step(%x: tensor<16x16xf32> {tx.role = "data"}, %w: tensor<16x16xf32> {tx.role = "param"}) -> tensor<16x16xf32> attributes {tx.train_step = {optimizer = "adamw"}} {
  %y = tx.matmul %x, %w : tensor<16x16xf32>, tensor<16x16xf32>
  return %y : tensor<16x16xf32>
}
