// Stock mlir-opt-22 parses and prints tx IR once the dialect plugin is loaded.
// UNSUPPORTED: system-windows
// RUN: mlir-opt %s --load-dialect-plugin=%txopt_libs/libTxoptPlugin.so | FileCheck %s
// RUN: not mlir-opt %s 2>&1 | FileCheck %s --check-prefix=NOPLUGIN

// CHECK-LABEL: func.func @scale
// CHECK:         tx.mul %{{.+}}, %{{.+}} : tensor<4x8xf32>, tensor<8xf32>
// NOPLUGIN: Dialect `tx' not found
func.func @scale(%x: tensor<4x8xf32>, %w: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = tx.mul %x, %w : tensor<4x8xf32>, tensor<8xf32>
  return %0 : tensor<4x8xf32>
}
