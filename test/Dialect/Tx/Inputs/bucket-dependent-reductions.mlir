// Input of bucket-gradient-reductions.mlir (DEPENDENT). Must not fire: the second reduce-scatter reads the first one's result
// (through a reshape), so moving the two together into one bucket after
// its input would put the first below its reader. It stays where it is,
// untagged; the first, whose input is a gradient complete before any
// reduce-scatter, is bucketed as usual.
// DEPENDENT-LABEL: func.func @step
// DEPENDENT:         %[[G:.+]] = tx.mul
// DEPENDENT-NEXT:    %[[S1:.+]] = tx.reduce_scatter mean %[[G]] ranks(2) {tx.bucket = 0 : i64}
// DEPENDENT:         %[[R:.+]] = tx.reshape %[[S1]]
// DEPENDENT-NEXT:    %[[S2:.+]] = tx.reduce_scatter mean %[[R]] ranks(2) : tensor<4xf32> -> tensor<2xf32>
// DEPENDENT-NEXT:    return
func.func @step(%x: tensor<8xf32> {tx.name = "x", tx.role = "data"})
    -> (tensor<2xf32> {tx.name = "s"})
    attributes {tx.train_step = {data_parallel = 2 : i64}} {
  %g = tx.mul %x, %x : tensor<8xf32>, tensor<8xf32>
  %y = tx.add %x, %x : tensor<8xf32>, tensor<8xf32>
  %s1 = tx.reduce_scatter mean %g ranks(2) : tensor<8xf32> -> tensor<4xf32>
  %r = tx.reshape %s1 : tensor<4xf32> -> tensor<4xf32>
  %s2 = tx.reduce_scatter mean %r ranks(2) : tensor<4xf32> -> tensor<2xf32>
  return %s2 : tensor<2xf32>
}
