// RUN: txopt-opt %s --split-input-file --verify-diagnostics

// One case per verifier branch of the collectives (TxCollectiveOps.cpp),
// plus the ODS constraints: at least one rank, 1-D shards, matching
// element types.

// A step for zero ranks means nothing.
func.func @all_reduce_zero_ranks(%x: tensor<8xf32>) {
  // expected-error @+1 {{'ranks' failed to satisfy constraint}}
  %0 = tx.all_reduce sum %x ranks(0) : tensor<8xf32>
  return
}

// -----

// Collectives combine floats (gradients, losses, amaxes).
func.func @all_reduce_integer(%x: tensor<8xi64>) {
  // expected-error @+1 {{must be statically shaped tensor of floating-point values}}
  %0 = "tx.all_reduce"(%x) <{reduction = #tx<collective_reduction sum>, ranks = 2 : i64}> : (tensor<8xi64>) -> tensor<8xi64>
  return
}

// -----

// The result of all_reduce has the operand's type.
func.func @all_reduce_type_mismatch(%x: tensor<8xf32>) {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %0 = "tx.all_reduce"(%x) <{reduction = #tx<collective_reduction sum>, ranks = 2 : i64}> : (tensor<8xf32>) -> tensor<8xbf16>
  return
}

// -----

// reduce_scatter: the input must split into equal shards.
func.func @reduce_scatter_not_divisible(%x: tensor<10xf32>) {
  // expected-error @+1 {{expected the full length 10 to be a multiple of ranks (4)}}
  %0 = tx.reduce_scatter sum %x ranks(4) : tensor<10xf32> -> tensor<2xf32>
  return
}

// -----

// reduce_scatter: the result is one shard.
func.func @reduce_scatter_wrong_shard(%x: tensor<12xf32>) {
  // expected-error @+1 {{expected shard length 4 (12 / 3 ranks), but got 6}}
  %0 = tx.reduce_scatter mean %x ranks(3) : tensor<12xf32> -> tensor<6xf32>
  return
}

// -----

// reduce_scatter works on flattened tensors only.
func.func @reduce_scatter_2d(%x: tensor<4x4xf32>) {
  // expected-error @+1 {{must be statically shaped 1D tensor}}
  %0 = "tx.reduce_scatter"(%x) <{reduction = #tx<collective_reduction sum>, ranks = 2 : i64}> : (tensor<4x4xf32>) -> tensor<8xf32>
  return
}

// -----

// reduce_scatter keeps the element type.
func.func @reduce_scatter_element_type(%x: tensor<8xf32>) {
  // expected-error @+1 {{all of {input, result} have same element type}}
  %0 = tx.reduce_scatter sum %x ranks(2) : tensor<8xf32> -> tensor<4xbf16>
  return
}

// -----

// all_gather: the result must be ranks shards long.
func.func @all_gather_wrong_length(%x: tensor<4xf32>) {
  // expected-error @+1 {{expected shard length 5 (10 / 2 ranks), but got 4}}
  %0 = tx.all_gather %x ranks(2) : tensor<4xf32> -> tensor<10xf32>
  return
}

// -----

// all_gather: a result length that no shard count gives.
func.func @all_gather_not_divisible(%x: tensor<4xf32>) {
  // expected-error @+1 {{expected the full length 9 to be a multiple of ranks (2)}}
  %0 = tx.all_gather %x ranks(2) : tensor<4xf32> -> tensor<9xf32>
  return
}

// -----

// all_gather keeps the element type.
func.func @all_gather_element_type(%x: tensor<4xf32>) {
  // expected-error @+1 {{failed to verify that all of {input, result} have same element type}}
  %0 = tx.all_gather %x ranks(2) : tensor<4xf32> -> tensor<8xf16>
  return
}

// -----

// rank_shard: the replicated tensor must split into equal shards.
func.func @rank_shard_not_divisible(%x: tensor<7xf32>) {
  // expected-error @+1 {{expected the full length 7 to be a multiple of ranks (2)}}
  %0 = tx.rank_shard %x ranks(2) : tensor<7xf32> -> tensor<3xf32>
  return
}

// -----

// rank_shard: the result is one shard.
func.func @rank_shard_wrong_shard(%x: tensor<8xf32>) {
  // expected-error @+1 {{expected shard length 2 (8 / 4 ranks), but got 4}}
  %0 = tx.rank_shard %x ranks(4) : tensor<8xf32> -> tensor<4xf32>
  return
}

// -----

// tx.bucket (tx-bucket-gradient-reductions) numbers a reduce-scatter's
// bucket: an integer >= 0, on a tx.reduce_scatter only.
func.func @bucket_on_all_gather(%x: tensor<4xf32>) {
  // expected-error @+1 {{expected tx.bucket to be a tx.reduce_scatter's integer >= 0, but got 0 : i64}}
  %0 = tx.all_gather %x ranks(2) {tx.bucket = 0 : i64} : tensor<4xf32> -> tensor<8xf32>
  return
}

// -----

func.func @bucket_negative(%x: tensor<8xf32>) {
  // expected-error @+1 {{expected tx.bucket to be a tx.reduce_scatter's integer >= 0, but got -1 : i64}}
  %0 = tx.reduce_scatter mean %x ranks(2) {tx.bucket = -1 : i64} : tensor<8xf32> -> tensor<4xf32>
  return
}

// -----

func.func @bucket_not_integer(%x: tensor<8xf32>) {
  // expected-error @+1 {{expected tx.bucket to be a tx.reduce_scatter's integer >= 0, but got "first"}}
  %0 = tx.reduce_scatter mean %x ranks(2) {tx.bucket = "first"} : tensor<8xf32> -> tensor<4xf32>
  return
}
