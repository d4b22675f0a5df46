// RUN: txopt-opt %s --txopt-default="precision=bf16" | FileCheck %s
// RUN: not txopt-opt %s --txopt-default="precision=fp8" 2>&1 | FileCheck %s --check-prefix=BADPRECISION

// txopt-default's precision is checked when the pipeline is parsed, naming
// the allowed values (fp8 needs the training step: txopt --train).
// BADPRECISION: for the --precision option: expected fp32|bf16|fp16, but got 'fp8'

// precision=bf16 runs tx-autocast after fusion.
// CHECK-LABEL: func.func @matmul
// CHECK:         tx.matmul %{{.+}}, %{{.+}} : tensor<4x8xbf16>, tensor<8x3xbf16>
func.func @matmul(%x: tensor<4x8xf32>, %w: tensor<8x3xf32>) -> tensor<4x3xf32> {
  %y = tx.matmul %x, %w : tensor<4x8xf32>, tensor<8x3xf32>
  return %y : tensor<4x3xf32>
}
