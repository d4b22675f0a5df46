// tx-autocast runs fused attention in the low type: q, k and v cast down,
// the output cast back to f32, the row log-sum-exp left f32 and the mask
// left in its own type. Attention already in a low type is left alone.
// RUN: txopt-opt %s --pass-pipeline='builtin.module(func.func(tx-autocast{precision=bf16}))' | FileCheck %s
// RUN: txopt-opt %s --pass-pipeline='builtin.module(func.func(tx-autocast{precision=fp16}))' | FileCheck %s --check-prefix=FP16

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
