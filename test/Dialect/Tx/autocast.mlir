// RUN: txopt-opt %s --split-input-file --tx-autocast | FileCheck %s
// RUN: txopt-opt %s --split-input-file --tx-autocast="precision=fp16" | FileCheck %s --check-prefix=FP16
// RUN: not txopt-opt %s --tx-autocast="precision=fp8" 2>&1 | FileCheck %s --check-prefix=BADPRECISION

// The option is checked when the pipeline is parsed, naming the allowed
// values (fp8 is tx-insert-fp8's business, fp32 means no tx-autocast).
// BADPRECISION: expected bf16|fp16, but got 'fp8'

// An f32 matmul runs in bf16 (the default): both operands are cast down and
// the result is widened right away, so its users still see f32.
// CHECK-LABEL: func.func @matmul_f32
// CHECK-SAME:    %[[X:[^:]+]]: tensor<4x8xf32>, %[[W:[^:]+]]: tensor<8x3xf32>
// CHECK-DAG:     %[[XL:.+]] = tx.cast %[[X]] : tensor<4x8xf32> to tensor<4x8xbf16>
// CHECK-DAG:     %[[WL:.+]] = tx.cast %[[W]] : tensor<8x3xf32> to tensor<8x3xbf16>
// CHECK:         %[[YL:.+]] = tx.matmul %[[XL]], %[[WL]] : tensor<4x8xbf16>, tensor<8x3xbf16>
// CHECK:         %[[Y:.+]] = tx.cast %[[YL]] : tensor<4x3xbf16> to tensor<4x3xf32>
// CHECK:         return %[[Y]]
// FP16-LABEL: func.func @matmul_f32
// FP16:         tx.matmul %{{.+}}, %{{.+}} : tensor<4x8xf16>, tensor<8x3xf16>
func.func @matmul_f32(%x: tensor<4x8xf32>, %w: tensor<8x3xf32>) -> tensor<4x3xf32> {
  %y = tx.matmul %x, %w : tensor<4x8xf32>, tensor<8x3xf32>
  return %y : tensor<4x3xf32>
}

// -----

// tx.gemm keeps its attributes; the bias is cast with the other operands.
// CHECK-LABEL: func.func @gemm_keeps_attributes
// CHECK:         %[[G:.+]] = tx.gemm %{{.+}}, %{{.+}}, %{{.+}} {alpha = 2.000000e+00 : f32, transB = true} : tensor<4x8xbf16>, tensor<3x8xbf16>, tensor<3xbf16>
// CHECK:         tx.cast %[[G]] : tensor<4x3xbf16> to tensor<4x3xf32>
func.func @gemm_keeps_attributes(%x: tensor<4x8xf32>, %w: tensor<3x8xf32>, %b: tensor<3xf32>) -> tensor<4x3xf32> {
  %y = tx.gemm %x, %w, %b {transB = true, alpha = 2.0 : f32} : tensor<4x8xf32>, tensor<3x8xf32>, tensor<3xf32>
  return %y : tensor<4x3xf32>
}

// -----

// Must not fire: everything but matrix products stays f32 (here a softmax),
// and a GEMM that is already in a low type is left alone.
// CHECK-LABEL: func.func @leaves_other_ops_and_low_gemms
// CHECK-NOT:     tx.cast
// CHECK:         tx.softmax
// CHECK:         tx.matmul %{{.+}}, %{{.+}} : tensor<4x8xbf16>, tensor<8x3xbf16>
// CHECK-NOT:     tx.cast
func.func @leaves_other_ops_and_low_gemms(%x: tensor<4x8xf32>, %a: tensor<4x8xbf16>, %w: tensor<8x3xbf16>)
    -> (tensor<4x8xf32>, tensor<4x3xbf16>) {
  %s = tx.softmax %x axis(-1) : tensor<4x8xf32>
  %y = tx.matmul %a, %w : tensor<4x8xbf16>, tensor<8x3xbf16>
  return %s, %y : tensor<4x8xf32>, tensor<4x3xbf16>
}
