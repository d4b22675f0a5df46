// Stock mlir-opt-22 runs txopt's default pipeline from the pass plugin.
// UNSUPPORTED: system-windows
// RUN: mlir-opt %s --load-dialect-plugin=%txopt_libs/libTxoptPlugin.so \
// RUN:   --load-pass-plugin=%txopt_libs/libTxoptPlugin.so \
// RUN:   --pass-pipeline="builtin.module(txopt-default)" | FileCheck %s

// The shape of a static tensor folds to a constant in the default pipeline.
// CHECK-LABEL: func.func @shape_folds
// CHECK:         %[[S:.+]] = tx.constant dense<[2, 32]> : tensor<2xi64>
// CHECK-NOT:     tx.shape
// CHECK:         return %[[S]]
func.func @shape_folds(%x: tensor<2x32xf32>) -> tensor<2xi64> {
  %0 = tx.shape %x : tensor<2x32xf32>
  return %0 : tensor<2xi64>
}
