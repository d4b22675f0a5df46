// RUN: txopt-opt %s | txopt-opt | FileCheck %s
// RUN: txopt-opt %s --mlir-print-op-generic | txopt-opt | FileCheck %s

// Round trip of both forms of tx.parameter: inline (`= dense<...>`) and by
// reference (`: type source(#tx.weight_source<...>)`), each optionally
// frozen; the generic form parses back to the same custom form.

// CHECK-LABEL: module attributes {tx.model_dir = "/models/gpt2"}
module attributes {tx.model_dir = "/models/gpt2"} {
  // CHECK: tx.parameter @inline = dense<1.000000e+00> : tensor<4xf32>{{$}}
  tx.parameter @inline = dense<1.0> : tensor<4xf32>
  // CHECK: tx.parameter @inline_frozen = dense<0xFF800000> : tensor<2xf32> frozen{{$}}
  tx.parameter @inline_frozen = dense<0xFF800000> : tensor<2xf32> frozen
  // CHECK: tx.parameter @h.0.attn.c_attn.weight : tensor<768x2304xf32> source(#tx.weight_source<path = "model.onnx.data", offset = 512, length = 7077888>){{$}}
  tx.parameter @h.0.attn.c_attn.weight : tensor<768x2304xf32> source(#tx.weight_source<path = "model.onnx.data", offset = 512, length = 7077888>)
  // CHECK: tx.parameter @mask : tensor<4x4xbf16> source(#tx.weight_source<path = "sub/dir/w.bin", offset = 0, length = 32>) frozen{{$}}
  tx.parameter @mask : tensor<4x4xbf16> source(#tx.weight_source<path = "sub/dir/w.bin", offset = 0, length = 32>) frozen
  // The reads of both forms are the same op.
  // CHECK-LABEL: func.func @reads
  // CHECK: tx.load_parameter @h.0.attn.c_attn.weight : tensor<768x2304xf32>
  // CHECK: tx.load_parameter @inline : tensor<4xf32>
  func.func @reads() -> (tensor<768x2304xf32>, tensor<4xf32>) {
    %0 = tx.load_parameter @h.0.attn.c_attn.weight : tensor<768x2304xf32>
    %1 = tx.load_parameter @inline : tensor<4xf32>
    return %0, %1 : tensor<768x2304xf32>, tensor<4xf32>
  }
}
