// RUN: txopt-run %s --function dropout_seeded > %t.a
// RUN: txopt-run %s --function dropout_seeded > %t.b
// RUN: diff %t.a %t.b
// RUN: FileCheck %s --check-prefix=MASK --input-file %t.a
// RUN: txopt-run %s --function dropout_keyed | FileCheck %s --check-prefix=KEY
// RUN: txopt-run %s --function dropout_zero_ratio | FileCheck %s --check-prefix=ZERO

// The mask is a pure function of (seed, key, element index): splitmix64's
// (index + 1)-th output from the state seed + key * 0x2545F4914F6CDD1D,
// u = top 53 bits / 2^53, kept when u >= ratio, scaled by 1 / (1 - ratio).
// Another seed gives another mask. With key 0 the mask is the seed's alone.
// (Values reproduced independently in Python from that definition;
// dropout_check.py checks many more.)
// MASK: seed42: tensor<12xf32> = [2, 0, 0, 0, 0, 2, 0, 2, 0, 2, 0, 0]
// MASK: seed43: tensor<12xf32> = [2, 2, 0, 2, 0, 0, 0, 2, 2, 0, 2, 0]
func.func @dropout_seeded() -> (tensor<12xf32> {tx.name = "seed42"}, tensor<12xf32> {tx.name = "seed43"}) {
  %x = tx.constant dense<1.0> : tensor<12xf32>
  %k = tx.constant dense<0> : tensor<i64>
  %a = tx.dropout %x, %k ratio(0.5) seed(42) : tensor<12xf32>
  %b = tx.dropout %x, %k ratio(0.5) seed(43) : tensor<12xf32>
  return %a, %b : tensor<12xf32>, tensor<12xf32>
}

// The key is what a training step varies (its rng_key): another key gives
// another mask for the same op (seed), the same key the same mask, and two
// ops of one shape (seeds 42, 43) still differ under one key.
// KEY: key1: tensor<12xf32> = [0, 0, 2, 2, 2, 2, 2, 2, 2, 0, 2, 2]
// KEY: key1_again: tensor<12xf32> = [0, 0, 2, 2, 2, 2, 2, 2, 2, 0, 2, 2]
// KEY: key2: tensor<12xf32> = [2, 2, 2, 2, 0, 2, 0, 0, 0, 2, 0, 2]
// KEY: seed43_key1: tensor<12xf32> = [2, 2, 2, 0, 0, 0, 2, 0, 2, 0, 0, 0]
func.func @dropout_keyed() -> (tensor<12xf32> {tx.name = "key1"},
                               tensor<12xf32> {tx.name = "key1_again"},
                               tensor<12xf32> {tx.name = "key2"},
                               tensor<12xf32> {tx.name = "seed43_key1"}) {
  %x = tx.constant dense<1.0> : tensor<12xf32>
  %k1 = tx.constant dense<1> : tensor<i64>
  %k2 = tx.constant dense<2> : tensor<i64>
  %a = tx.dropout %x, %k1 ratio(0.5) seed(42) : tensor<12xf32>
  %b = tx.dropout %x, %k1 ratio(0.5) seed(42) : tensor<12xf32>
  %c = tx.dropout %x, %k2 ratio(0.5) seed(42) : tensor<12xf32>
  %d = tx.dropout %x, %k1 ratio(0.5) seed(43) : tensor<12xf32>
  return %a, %b, %c, %d : tensor<12xf32>, tensor<12xf32>, tensor<12xf32>, tensor<12xf32>
}

// ZERO: result0: tensor<4xf32> = [1, 2, 3, 4]
func.func @dropout_zero_ratio() -> tensor<4xf32> {
  %x = tx.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %k = tx.constant dense<3> : tensor<i64>
  %y = tx.dropout %x, %k ratio(0.0) seed(7) : tensor<4xf32>
  return %y : tensor<4xf32>
}
