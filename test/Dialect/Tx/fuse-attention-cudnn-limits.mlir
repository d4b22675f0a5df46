// tx-fuse-attention with cudnn-limits=true (what txopt sets for a GPU step):
// attention whose head dim is not a multiple of 8, or above 256, or with a
// dropout on the probabilities together with a sliding window, stays in
// primitive ops with a near-miss remark naming why, since the GPU runs
// tx.attention as cuDNN's fused SDPA. Without the option they fuse.
// Dropout alone fuses for the GPU too (cuDNN draws the mask).
// RUN: txopt-opt %s --split-input-file --tx-fuse-attention="cudnn-limits=true" | FileCheck %s --check-prefix=LIMITS
// RUN: txopt-opt %s --split-input-file --tx-fuse-attention | FileCheck %s --check-prefix=ANY
// RUN: txopt-opt %s --split-input-file --tx-fuse-attention="cudnn-limits=true explain=true" 2>&1 >/dev/null \
// RUN:   | FileCheck %s --check-prefix=EXPLAIN --implicit-check-not=remark

// Head dim 16: within cuDNN's limits, fused either way.
// LIMITS-LABEL: func.func @head_dim_16
// LIMITS: tx.attention
// ANY-LABEL: func.func @head_dim_16
// ANY: tx.attention
func.func @head_dim_16(%q: tensor<1x2x4x16xf32>, %k: tensor<1x2x4x16xf32>, %v: tensor<1x2x4x16xf32>) -> tensor<1x2x4x16xf32> {
  %c = tx.constant dense<0.25> : tensor<1xf32>
  %kt = tx.transpose %k perm [0, 1, 3, 2] : tensor<1x2x4x16xf32>
  %s = tx.matmul %q, %kt : tensor<1x2x4x16xf32>, tensor<1x2x16x4xf32>
  %ss = tx.mul %s, %c : tensor<1x2x4x4xf32>, tensor<1xf32>
  %p = tx.softmax %ss axis(-1) : tensor<1x2x4x4xf32>
  %o = tx.matmul %p, %v : tensor<1x2x4x4xf32>, tensor<1x2x4x16xf32>
  return %o : tensor<1x2x4x16xf32>
}

// -----

// Head dim 12: not a multiple of 8, so not fused for the GPU.
// LIMITS-LABEL: func.func @head_dim_12
// LIMITS-NOT: tx.attention
// LIMITS: tx.softmax
// LIMITS-NOT: tx.attention
// ANY-LABEL: func.func @head_dim_12
// ANY: tx.attention
// EXPLAIN: remark: not fused: attention: head dims 12 (q, k) and 12 (v): the GPU's fused attention (cuDNN SDPA) needs multiples of 8, at most 256
func.func @head_dim_12(%q: tensor<1x2x4x12xf32>, %k: tensor<1x2x4x12xf32>, %v: tensor<1x2x4x12xf32>) -> tensor<1x2x4x12xf32> {
  %c = tx.constant dense<0.288675> : tensor<1xf32>
  %kt = tx.transpose %k perm [0, 1, 3, 2] : tensor<1x2x4x12xf32>
  %s = tx.matmul %q, %kt : tensor<1x2x4x12xf32>, tensor<1x2x12x4xf32>
  %ss = tx.mul %s, %c : tensor<1x2x4x4xf32>, tensor<1xf32>
  %p = tx.softmax %ss axis(-1) : tensor<1x2x4x4xf32>
  %o = tx.matmul %p, %v : tensor<1x2x4x4xf32>, tensor<1x2x4x12xf32>
  return %o : tensor<1x2x4x12xf32>
}

// -----

// Head dim 264: above cuDNN's 256.
// LIMITS-LABEL: func.func @head_dim_264
// LIMITS-NOT: tx.attention
// ANY-LABEL: func.func @head_dim_264
// ANY: tx.attention
// EXPLAIN: remark: not fused: attention: head dims 264 (q, k) and 264 (v)
func.func @head_dim_264(%q: tensor<1x1x4x264xf32>, %k: tensor<1x1x4x264xf32>, %v: tensor<1x1x4x264xf32>) -> tensor<1x1x4x264xf32> {
  %kt = tx.transpose %k perm [0, 1, 3, 2] : tensor<1x1x4x264xf32>
  %s = tx.matmul %q, %kt : tensor<1x1x4x264xf32>, tensor<1x1x264x4xf32>
  %p = tx.softmax %s axis(-1) : tensor<1x1x4x4xf32>
  %o = tx.matmul %p, %v : tensor<1x1x4x4xf32>, tensor<1x1x4x264xf32>
  return %o : tensor<1x1x4x264xf32>
}

// -----

// A training dropout on the probabilities fuses for the GPU as well: cuDNN's
// SDPA draws the mask (not the executor's one; docs/GPU.md).
// LIMITS-LABEL: func.func @dropout
// LIMITS: tx.attention {{.*}} dropout(%{{.+}}, 1.000000e-01, 3)
// LIMITS-NOT: tx.dropout
// ANY-LABEL: func.func @dropout
// ANY: tx.attention {{.*}} dropout(
func.func @dropout(%q: tensor<1x2x4x16xf32>, %k: tensor<1x2x4x16xf32>, %v: tensor<1x2x4x16xf32>) -> tensor<1x2x4x16xf32> {
  %key = tx.constant dense<0> : tensor<i64>
  %kt = tx.transpose %k perm [0, 1, 3, 2] : tensor<1x2x4x16xf32>
  %s = tx.matmul %q, %kt : tensor<1x2x4x16xf32>, tensor<1x2x16x4xf32>
  %p = tx.softmax %s axis(-1) : tensor<1x2x4x4xf32>
  %d = tx.dropout %p, %key ratio(1.000000e-01) seed(3) : tensor<1x2x4x4xf32>
  %o = tx.matmul %d, %v : tensor<1x2x4x4xf32>, tensor<1x2x4x16xf32>
  return %o : tensor<1x2x4x16xf32>
}

// -----

// Dropout with a sliding window (2 keys): cuDNN's SDPA takes the window's
// bounds only without dropout, so a GPU step keeps it unfused.
// LIMITS-LABEL: func.func @dropout_window
// LIMITS-NOT: tx.attention
// LIMITS: tx.dropout
// LIMITS-NOT: tx.attention
// ANY-LABEL: func.func @dropout_window
// ANY: tx.attention {{.*}} causal window(2) dropout(
// EXPLAIN: remark: not fused: attention: dropout with a sliding window: the GPU's fused attention (cuDNN SDPA) takes a window only without dropout
func.func @dropout_window(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %key = tx.constant dense<0> : tensor<i64>
  %mask = tx.constant dense<[[[[0.0, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38],
                               [0.0, 0.0, -3.40282347E+38, -3.40282347E+38],
                               [-3.40282347E+38, 0.0, 0.0, -3.40282347E+38],
                               [-3.40282347E+38, -3.40282347E+38, 0.0, 0.0]]]]> : tensor<1x1x4x4xf32>
  %kt = tx.transpose %k perm [0, 1, 3, 2] : tensor<1x2x4x8xf32>
  %s = tx.matmul %q, %kt : tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>
  %c = tx.constant dense<8.0> : tensor<f32>
  %ss = tx.div %s, %c : tensor<1x2x4x4xf32>, tensor<f32>
  %sm = tx.add %ss, %mask : tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>
  %p = tx.softmax %sm axis(3) : tensor<1x2x4x4xf32>
  %d = tx.dropout %p, %key ratio(1.000000e-01) seed(3) : tensor<1x2x4x4xf32>
  %o = tx.matmul %d, %v : tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}
