// RUN: rm -rf %t && mkdir -p %t
// RUN: txopt-run %s --function produce --output-dir %t | FileCheck %s --check-prefix=PRODUCE
// RUN: txopt-run %s --function consume --input x=%t/x.npy --input arg1=%t/flags.npy --input n=%t/n.npy \
// RUN:   | FileCheck %s --check-prefix=CONSUME
// RUN: txopt-run %s --function produce --f64 --output-dir %t/f64
// RUN: not txopt-run %s --function consume --input x=%t/f64/x.npy 2>&1 | FileCheck %s --check-prefix=DTYPE
// RUN: not txopt-run %s --function consume --input x=%t/n.npy 2>&1 | FileCheck %s --check-prefix=SHAPE
// RUN: not txopt-run %s --function consume --input y=%t/x.npy 2>&1 | FileCheck %s --check-prefix=NAME
// RUN: txopt-run %s --function random_ids --seed 3 > %t/r1
// RUN: txopt-run %s --function random_ids --seed 3 > %t/r2
// RUN: txopt-run %s --function random_ids --seed 4 > %t/r3
// RUN: diff %t/r1 %t/r2
// RUN: not diff %t/r1 %t/r3
// RUN: FileCheck %s --check-prefix=RANDOM --input-file %t/r1
// RUN: txopt-run %s --function random_ids --int-range ids=2 | FileCheck %s --check-prefix=RANGE

// Outputs print in order and are written as DIR/<tx.name>.npy.
// PRODUCE: x: tensor<2x3xf32> = {{\[\[}}0.5, -1, 2], [3.25, 4, -0]]
// PRODUCE-NEXT: flags: tensor<3xi1> = [true, false, true]
// PRODUCE-NEXT: n = 7
func.func @produce() -> (tensor<2x3xf32> {tx.name = "x"}, tensor<3xi1> {tx.name = "flags"}, tensor<i64> {tx.name = "n"}) {
  %x = tx.constant dense<[[0.5, -1.0, 2.0], [3.25, 4.0, -0.0]]> : tensor<2x3xf32>
  %f = tx.constant dense<[true, false, true]> : tensor<3xi1>
  %n = tx.constant dense<7> : tensor<i64>
  return %x, %f, %n : tensor<2x3xf32>, tensor<3xi1>, tensor<i64>
}

// Inputs are named by tx.name or by position (argN).
// CONSUME: result0: tensor<2x3xf32> = {{\[\[}}4.5, 6, 9], [10.25, 11, 7]]
// CONSUME-NEXT: result1: tensor<3xi1> = [true, false, true]
func.func @consume(%x: tensor<2x3xf32> {tx.name = "x"}, %flags: tensor<3xi1> {tx.name = "flags"}, %n: tensor<i64> {tx.name = "n"})
    -> (tensor<2x3xf32>, tensor<3xi1>) {
  %nf = tx.cast %n : tensor<i64> to tensor<f32>
  %y = tx.add %x, %nf : tensor<2x3xf32>, tensor<f32>
  %w = tx.constant dense<[[-4.0, 0.0, 0.0], [0.0, 0.0, 0.0]]> : tensor<2x3xf32>
  %z = tx.add %y, %w : tensor<2x3xf32>, tensor<2x3xf32>
  %two = tx.constant dense<[[1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]> : tensor<2x3xf32>
  %zz = tx.add %z, %two : tensor<2x3xf32>, tensor<2x3xf32>
  return %zz, %flags : tensor<2x3xf32>, tensor<3xi1>
}

// DTYPE: txopt-run: error: input 'x' ('{{.*}}x.npy'): expected tensor<2x3xf32>, but the file holds tensor<2x3xf64> ('<f8')
// SHAPE: txopt-run: error: input 'x' ('{{.*}}n.npy'): expected tensor<2x3xf32>, but the file holds tensor<i64> ('<i8')
// NAME: txopt-run: error: --input names no argument of 'consume': 'y' (arguments: x, flags, n)

// Random token ids index a 5-row table, so they are drawn from [0, 5);
// --int-range overrides the bound.
// RANDOM: ids: tensor<2x6xi64> = {{\[\[[0-4](, [0-4]){5}\], \[[0-4](, [0-4]){5}\]\]}}
// RANGE: ids: tensor<2x6xi64> = {{\[\[[01](, [01]){5}\], \[[01](, [01]){5}\]\]}}
func.func @random_ids(%ids: tensor<2x6xi64> {tx.name = "ids"}, %noise: tensor<2xf32>)
    -> (tensor<2x6xi64> {tx.name = "ids"}, tensor<2x6x2xf32>) {
  %table = tx.constant dense<1.0> : tensor<5x2xf32>
  %flat = tx.reshape %ids : tensor<2x6xi64> -> tensor<12xi64>
  %back = tx.reshape %flat : tensor<12xi64> -> tensor<2x6xi64>
  %e = tx.gather %table, %back {axis = 0} : tensor<5x2xf32>, tensor<2x6xi64>
  %y = tx.add %e, %noise : tensor<2x6x2xf32>, tensor<2xf32>
  return %ids, %y : tensor<2x6xi64>, tensor<2x6x2xf32>
}
