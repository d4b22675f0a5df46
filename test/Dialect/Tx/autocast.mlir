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

// -----

// Fused attention runs in the low type (as torch.autocast runs
// scaled_dot_product_attention): q, k and v cast down, the output cast back
// to f32, the row log-sum-exp left f32, the mask left in its own type.
// CHECK-LABEL: func.func @causal
// CHECK-DAG: %[[Q:.*]] = tx.cast %arg0 : tensor<2x4x8x16xf32> to tensor<2x4x8x16xbf16>
// CHECK-DAG: %[[K:.*]] = tx.cast %arg1 : tensor<2x2x8x16xf32> to tensor<2x2x8x16xbf16>
// CHECK-DAG: %[[V:.*]] = tx.cast %arg2 : tensor<2x2x8x16xf32> to tensor<2x2x8x16xbf16>
// CHECK: %[[O:.*]], %[[LSE:.*]] = tx.attention %[[Q]], %[[K]], %[[V]] scale(2.500000e-01) causal : tensor<2x4x8x16xbf16>, tensor<2x2x8x16xbf16>, tensor<2x2x8x16xbf16>
// CHECK: %[[BACK:.*]] = tx.cast %[[O]] : tensor<2x4x8x16xbf16> to tensor<2x4x8x16xf32>
// CHECK: return %[[BACK]], %[[LSE]] : tensor<2x4x8x16xf32>, tensor<2x4x8xf32>
// FP16-LABEL: func.func @causal
// FP16: tx.attention {{.*}} : tensor<2x4x8x16xf16>, tensor<2x2x8x16xf16>, tensor<2x2x8x16xf16>
func.func @causal(%q: tensor<2x4x8x16xf32>, %k: tensor<2x2x8x16xf32>,
                  %v: tensor<2x2x8x16xf32>) -> (tensor<2x4x8x16xf32>, tensor<2x4x8xf32>) {
  %o, %lse = tx.attention %q, %k, %v scale(0.25) causal
      : tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>
  return %o, %lse : tensor<2x4x8x16xf32>, tensor<2x4x8xf32>
}

// -----

// The additive mask keeps its f32 type.
// CHECK-LABEL: func.func @masked
// CHECK-NOT: tx.cast %arg3
// CHECK: tx.attention %{{.*}}, %{{.*}}, %{{.*}} mask(%arg3) scale(2.500000e-01) : tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>, tensor<1x1x8x8xf32>
func.func @masked(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                  %v: tensor<1x2x8x16xf32>, %m: tensor<1x1x8x8xf32>) -> tensor<1x2x8x16xf32> {
  %o, %lse = tx.attention %q, %k, %v mask(%m) scale(0.25)
      : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x1x8x8xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// Must not fire: attention that is already bf16 gets no casts.
// CHECK-LABEL: func.func @already_low
// CHECK-NOT: tx.cast
// CHECK: tx.attention %arg0, %arg1, %arg2 scale(2.500000e-01) causal
// CHECK-NOT: tx.cast
// CHECK: return
func.func @already_low(%q: tensor<1x2x8x16xbf16>, %k: tensor<1x2x8x16xbf16>,
                       %v: tensor<1x2x8x16xbf16>) -> tensor<1x2x8x16xbf16> {
  %o, %lse = tx.attention %q, %k, %v scale(0.25) causal
      : tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>
  return %o : tensor<1x2x8x16xbf16>
}
