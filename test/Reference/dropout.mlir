// RUN: txopt-run %s --function dropout_seeded > %t.a
// RUN: txopt-run %s --function dropout_seeded > %t.b
// RUN: diff %t.a %t.b
// RUN: FileCheck %s --check-prefix=MASK --input-file %t.a
// RUN: txopt-run %s --function dropout_zero_ratio | FileCheck %s --check-prefix=ZERO

// The mask is a pure function of (seed, element index): splitmix64's
// (index + 1)-th output for the seed, u = top 53 bits / 2^53, kept when
// u >= ratio, scaled by 1 / (1 - ratio). Another seed gives another mask.
// (Values reproduced independently in Python from that definition.)
// MASK: seed42: tensor<12xf32> = [2, 0, 0, 0, 0, 2, 0, 2, 0, 2, 0, 0]
// MASK: seed43: tensor<12xf32> = [2, 2, 0, 2, 0, 0, 0, 2, 2, 0, 2, 0]
func.func @dropout_seeded() -> (tensor<12xf32> {tx.name = "seed42"}, tensor<12xf32> {tx.name = "seed43"}) {
  %x = tx.constant dense<1.0> : tensor<12xf32>
  %a = tx.dropout %x ratio(0.5) seed(42) : tensor<12xf32>
  %b = tx.dropout %x ratio(0.5) seed(43) : tensor<12xf32>
  return %a, %b : tensor<12xf32>, tensor<12xf32>
}

// ZERO: result0: tensor<4xf32> = [1, 2, 3, 4]
func.func @dropout_zero_ratio() -> tensor<4xf32> {
  %x = tx.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %y = tx.dropout %x ratio(0.0) seed(7) : tensor<4xf32>
  return %y : tensor<4xf32>
}
