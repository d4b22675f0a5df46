// RUN: txopt-run %s --function loss_ignore_index | FileCheck %s --check-prefix=IGNORE
// RUN: txopt-run %s --function loss_weights | FileCheck %s --check-prefix=WEIGHTS
// RUN: txopt-run %s --function loss_spatial | FileCheck %s --check-prefix=SPATIAL
// RUN: not txopt-run %s --function loss_bad_label 2>&1 | FileCheck %s --check-prefix=BAD

// The third position is ignored: mean = (ln 2 + ln(1 + e)) / 2.
// IGNORE: mean = 1.00320446
// IGNORE: sum = 2.00640893
// IGNORE: none: tensor<3xf32> = [0.693147182, 1.31326163, 0]
// IGNORE: all_ignored = nan
func.func @loss_ignore_index() -> (tensor<f32> {tx.name = "mean"}, tensor<f32> {tx.name = "sum"}, tensor<3xf32> {tx.name = "none"}, tensor<f32> {tx.name = "all_ignored"}) {
  %s = tx.constant dense<[[0.0, 0.0], [1.0, 0.0], [5.0, 5.0]]> : tensor<3x2xf32>
  %l = tx.constant dense<[0, 1, -100]> : tensor<3xi64>
  %mean = tx.softmax_cross_entropy_loss %s, %l reduction(mean) {ignore_index = -100} : tensor<3x2xf32>, tensor<3xi64>
  %sum = tx.softmax_cross_entropy_loss %s, %l reduction(sum) {ignore_index = -100} : tensor<3x2xf32>, tensor<3xi64>
  %none = tx.softmax_cross_entropy_loss %s, %l reduction(none) {ignore_index = -100} : tensor<3x2xf32>, tensor<3xi64>
  %ign = tx.constant dense<-100> : tensor<3xi64>
  %nan = tx.softmax_cross_entropy_loss %s, %ign reduction(mean) {ignore_index = -100} : tensor<3x2xf32>, tensor<3xi64>
  return %mean, %sum, %none, %nan : tensor<f32>, tensor<f32>, tensor<3xf32>, tensor<f32>
}

// Class weights scale each term and the mean divides by the summed weights
// of the counted positions: (2 ln 2 + ln(1 + e)) / 3.
// WEIGHTS: result0 = 0.899852037
func.func @loss_weights() -> tensor<f32> {
  %s = tx.constant dense<[[0.0, 0.0], [1.0, 0.0], [5.0, 5.0]]> : tensor<3x2xf32>
  %l = tx.constant dense<[0, 1, 7]> : tensor<3xi64>
  %w = tx.constant dense<[2.0, 1.0]> : tensor<2xf32>
  %loss = tx.softmax_cross_entropy_loss %s, %l, %w reduction(mean) {ignore_index = 7} : tensor<3x2xf32>, tensor<3xi64>, tensor<2xf32>
  return %loss : tensor<f32>
}

// Scores [N, C, d]: the class axis is 1, not the last one.
// SPATIAL: result0: tensor<1x2xf32> = {{\[\[}}0.693147182, 0.126928017]]
func.func @loss_spatial() -> tensor<1x2xf32> {
  %s = tx.constant dense<[[[0.0, 2.0], [0.0, 0.0]]]> : tensor<1x2x2xf32>
  %l = tx.constant dense<[[1, 0]]> : tensor<1x2xi64>
  %loss = tx.softmax_cross_entropy_loss %s, %l reduction(none) : tensor<1x2x2xf32>, tensor<1x2xi64>
  return %loss : tensor<1x2xf32>
}

// BAD: txopt-run: error: tx.softmax_cross_entropy_loss at 'loss/SoftmaxCrossEntropyLoss': label 2 is out of range [0, 2)
func.func @loss_bad_label() -> tensor<f32> {
  %s = tx.constant dense<[[0.0, 0.0]]> : tensor<1x2xf32>
  %l = tx.constant dense<[2]> : tensor<1xi64>
  %loss = tx.softmax_cross_entropy_loss %s, %l reduction(mean) : tensor<1x2xf32>, tensor<1xi64> loc("loss/SoftmaxCrossEntropyLoss")
  return %loss : tensor<f32>
}
