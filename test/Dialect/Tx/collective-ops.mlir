// RUN: txopt-opt %s --split-input-file | txopt-opt --split-input-file | FileCheck %s
// RUN: txopt-opt %s --split-input-file --mlir-print-op-generic | txopt-opt --split-input-file | FileCheck %s

// Round trips of the collectives (TxCollectiveOps.td), in custom and generic
// form: every reduction kind, and each op with its result type.

// all_reduce keeps the operand's type, any rank; each reduction kind.
// CHECK-LABEL: func.func @all_reduce_kinds
// CHECK-SAME:    %[[X:[^:]+]]: tensor<4x8xf32>, %[[L:[^:]+]]: tensor<f32>, %[[H:[^:]+]]: tensor<16xbf16>
// CHECK:         %[[S:.+]] = tx.all_reduce sum %[[X]] ranks(2) : tensor<4x8xf32>
// CHECK:         %[[M:.+]] = tx.all_reduce mean %[[L]] ranks(4) : tensor<f32>
// CHECK:         %[[A:.+]] = tx.all_reduce max %[[H]] ranks(1) : tensor<16xbf16>
// CHECK:         return %[[S]], %[[M]], %[[A]]
func.func @all_reduce_kinds(%x: tensor<4x8xf32>, %l: tensor<f32>, %h: tensor<16xbf16>)
    -> (tensor<4x8xf32>, tensor<f32>, tensor<16xbf16>) {
  %s = tx.all_reduce sum %x ranks(2) : tensor<4x8xf32>
  %m = tx.all_reduce mean %l ranks(4) : tensor<f32>
  %a = tx.all_reduce max %h ranks(1) : tensor<16xbf16>
  return %s, %m, %a : tensor<4x8xf32>, tensor<f32>, tensor<16xbf16>
}

// -----

// A ZeRO-1 round: reduce-scatter a gradient, shard the parameter, gather it back.
// CHECK-LABEL: func.func @shard_round_trip
// CHECK-SAME:    %[[G:[^:]+]]: tensor<64xf32>, %[[P:[^:]+]]: tensor<64xf32>
// CHECK:         %[[GS:.+]] = tx.reduce_scatter mean %[[G]] ranks(2) : tensor<64xf32> -> tensor<32xf32>
// CHECK:         %[[PS:.+]] = tx.rank_shard %[[P]] ranks(2) : tensor<64xf32> -> tensor<32xf32>
// CHECK:         %[[U:.+]] = tx.sub %[[PS]], %[[GS]]
// CHECK:         %[[F:.+]] = tx.all_gather %[[U]] ranks(2) : tensor<32xf32> -> tensor<64xf32>
// CHECK:         return %[[F]]
func.func @shard_round_trip(%g: tensor<64xf32>, %p: tensor<64xf32>) -> tensor<64xf32> {
  %gs = tx.reduce_scatter mean %g ranks(2) : tensor<64xf32> -> tensor<32xf32>
  %ps = tx.rank_shard %p ranks(2) : tensor<64xf32> -> tensor<32xf32>
  %u = tx.sub %ps, %gs : tensor<32xf32>, tensor<32xf32>
  %f = tx.all_gather %u ranks(2) : tensor<32xf32> -> tensor<64xf32>
  return %f : tensor<64xf32>
}

// -----

// reduce_scatter's sum and max; one rank makes every shard the whole tensor.
// CHECK-LABEL: func.func @reduce_scatter_kinds
// CHECK:         tx.reduce_scatter sum %{{.+}} ranks(3) : tensor<12xf32> -> tensor<4xf32>
// CHECK:         tx.reduce_scatter max %{{.+}} ranks(1) : tensor<12xf32> -> tensor<12xf32>
func.func @reduce_scatter_kinds(%x: tensor<12xf32>) -> (tensor<4xf32>, tensor<12xf32>) {
  %s = tx.reduce_scatter sum %x ranks(3) : tensor<12xf32> -> tensor<4xf32>
  %m = tx.reduce_scatter max %x ranks(1) : tensor<12xf32> -> tensor<12xf32>
  return %s, %m : tensor<4xf32>, tensor<12xf32>
}

// -----

// A reduce-scatter with its bucket (tx-bucket-gradient-reductions).
// CHECK-LABEL: func.func @bucketed
// CHECK: tx.reduce_scatter mean %{{.+}} ranks(2) {tx.bucket = 3 : i64} : tensor<8xf32> -> tensor<4xf32>
func.func @bucketed(%x: tensor<8xf32>) -> tensor<4xf32> {
  %0 = tx.reduce_scatter mean %x ranks(2) {tx.bucket = 3 : i64} : tensor<8xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
