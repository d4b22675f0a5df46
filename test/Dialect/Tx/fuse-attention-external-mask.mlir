// RUN: sed "s|@INPUTS@|%S/Inputs|" %s | txopt-opt --split-input-file --tx-fuse-attention | FileCheck %s

// A frozen mask left in the model's external data (an exporter's causal-mask
// buffer, as scripts/export_gpt_external.py writes GPT-2's) is read at
// compile time: a causal triangle becomes `causal` (cuDNN then skips the
// masked half), anything else stays a mask operand. Inputs/masks4x4.bin
// holds two f32 4x4 masks, 0 / -inf: the causal lower triangle at offset 0,
// the upper triangle at offset 64.

module attributes {tx.model_dir = "@INPUTS@"} {
  tx.parameter @causal_mask : tensor<4x4xf32> source(#tx.weight_source<path = "masks4x4.bin", offset = 0, length = 64>) frozen
  // CHECK-LABEL: func.func @external_causal
  // CHECK:         tx.attention %{{.+}}, %{{.+}}, %{{.+}} scale({{.+}}) causal :
  func.func @external_causal(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
    %mask = tx.load_parameter @causal_mask : tensor<4x4xf32>
    %c = tx.constant dense<0.353553385> : tensor<1xf32>
    %kt = tx.transpose %k perm [0, 1, 3, 2] : tensor<1x2x4x8xf32>
    %s = tx.matmul %q, %kt : tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>
    %ss = tx.mul %s, %c : tensor<1x2x4x4xf32>, tensor<1xf32>
    %sq = tx.mul %ss, %c : tensor<1x2x4x4xf32>, tensor<1xf32>
    %sm = tx.add %sq, %mask : tensor<1x2x4x4xf32>, tensor<4x4xf32>
    %p = tx.softmax %sm axis(-1) : tensor<1x2x4x4xf32>
    %o = tx.matmul %p, %v : tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>
    return %o : tensor<1x2x4x8xf32>
  }
}

// -----

// Must not fire as causal: the upper triangle stays an explicit mask.
module attributes {tx.model_dir = "@INPUTS@"} {
  tx.parameter @upper_mask : tensor<4x4xf32> source(#tx.weight_source<path = "masks4x4.bin", offset = 64, length = 64>) frozen
  // CHECK-LABEL: func.func @external_not_causal
  // CHECK:         %[[M:.+]] = tx.load_parameter @upper_mask
  // CHECK:         tx.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%[[M]]) scale({{.+}}) :
  // CHECK-NOT:     causal
  func.func @external_not_causal(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
    %mask = tx.load_parameter @upper_mask : tensor<4x4xf32>
    %c = tx.constant dense<0.353553385> : tensor<1xf32>
    %kt = tx.transpose %k perm [0, 1, 3, 2] : tensor<1x2x4x8xf32>
    %s = tx.matmul %q, %kt : tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>
    %ss = tx.mul %s, %c : tensor<1x2x4x4xf32>, tensor<1xf32>
    %sq = tx.mul %ss, %c : tensor<1x2x4x4xf32>, tensor<1xf32>
    %sm = tx.add %sq, %mask : tensor<1x2x4x4xf32>, tensor<4x4xf32>
    %p = tx.softmax %sm axis(-1) : tensor<1x2x4x4xf32>
    %o = tx.matmul %p, %v : tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>
    return %o : tensor<1x2x4x8xf32>
  }
}
