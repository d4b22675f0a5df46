// The executor's tx.blas_gemm_gelu against numpy on fresh random inputs,
// and tx-gemm-gelu's rewrite of GPT-2's MLP chain against the chain it
// replaces (gemm_gelu_oracle.py says how and with which tolerances).
// REQUIRES: numpy
// RUN: rm -rf %t && mkdir -p %t
// RUN: txopt-opt %s --tx-gemm-gelu -o %t/folded.mlir
// RUN: grep -c "tx.blas_gemm_gelu" %t/folded.mlir | FileCheck %s --check-prefix=FOLDED
// FOLDED: {{^}}4{{$}}
// RUN: %python %S/gemm_gelu_oracle.py --txopt-run txopt-run --source %s --folded %t/folded.mlir --work %t | FileCheck %s
// CHECK: gemm-gelu oracle: seed {{[0-9]+}}
// CHECK-NOT: FAIL
// CHECK: fused: 6 outputs match numpy's bf16 rounding of gelu(s) and s bit for bit
// CHECK: folded chain: 2 outputs within 2e-2 of their largest magnitude of the chain's

// The fused op with a bias and alpha, from f32 inputs rounded to bf16.
func.func @fused(%a: tensor<32x24xf32> {tx.name = "a"}, %b: tensor<24x64xf32> {tx.name = "b"},
                 %bias: tensor<64xf32> {tx.name = "bias"})
    -> (tensor<32x64xbf16> {tx.name = "gelu"}, tensor<32x64xbf16> {tx.name = "pre"}) {
  %a16 = tx.cast %a : tensor<32x24xf32> to tensor<32x24xbf16>
  %b16 = tx.cast %b : tensor<24x64xf32> to tensor<24x64xbf16>
  %bias16 = tx.cast %bias : tensor<64xf32> to tensor<64xbf16>
  %y, %pre = tx.blas_gemm_gelu %a16, %b16, %bias16 {alpha = 0.5 : f32}
      : tensor<32x24xbf16>, tensor<24x64xbf16>, tensor<64xbf16> -> tensor<32x64xbf16>, tensor<32x64xbf16>
  return %y, %pre : tensor<32x64xbf16>, tensor<32x64xbf16>
}

// The operand layouts the op takes: a batched a (its leading dims rows of
// M) against a transposed b, and a transposed a; no bias.
func.func @fused_layouts(%a3: tensor<2x16x24xf32> {tx.name = "a3"}, %bt: tensor<64x24xf32> {tx.name = "bt"},
                         %at: tensor<24x32xf32> {tx.name = "at"}, %b: tensor<24x64xf32> {tx.name = "b"})
    -> (tensor<2x16x64xbf16> {tx.name = "gelu3"}, tensor<2x16x64xbf16> {tx.name = "pre3"},
        tensor<32x64xbf16> {tx.name = "gelut"}, tensor<32x64xbf16> {tx.name = "pret"}) {
  %a316 = tx.cast %a3 : tensor<2x16x24xf32> to tensor<2x16x24xbf16>
  %bt16 = tx.cast %bt : tensor<64x24xf32> to tensor<64x24xbf16>
  %at16 = tx.cast %at : tensor<24x32xf32> to tensor<24x32xbf16>
  %b16 = tx.cast %b : tensor<24x64xf32> to tensor<24x64xbf16>
  %y3, %pre3 = tx.blas_gemm_gelu %a316, %bt16 {transpose_b}
      : tensor<2x16x24xbf16>, tensor<64x24xbf16> -> tensor<2x16x64xbf16>, tensor<2x16x64xbf16>
  %yt, %pret = tx.blas_gemm_gelu %at16, %b16 {transpose_a}
      : tensor<24x32xbf16>, tensor<24x64xbf16> -> tensor<32x64xbf16>, tensor<32x64xbf16>
  return %y3, %pre3, %yt, %pret : tensor<2x16x64xbf16>, tensor<2x16x64xbf16>, tensor<32x64xbf16>, tensor<32x64xbf16>
}

// GPT-2's MLP as a bf16 step computes it (GEMMs in bf16, the bias and the
// GELU in f32), with a stand-in for the backward reading the GELU's input.
func.func @chain(%a: tensor<32x24xf32> {tx.name = "a"}, %b: tensor<24x64xf32> {tx.name = "b"},
                 %bias: tensor<64xf32> {tx.name = "bias"}, %w2: tensor<64x16xf32> {tx.name = "w2"})
    -> (tensor<32x16xbf16> {tx.name = "out"}, tensor<32x64xf32> {tx.name = "backward"}) {
  %half = tx.constant dense<0.5> : tensor<1xf32>
  %three = tx.constant dense<3.0> : tensor<1xf32>
  %k = tx.constant dense<0.044715> : tensor<1xf32>
  %c = tx.constant dense<0.797884583> : tensor<1xf32>
  %one = tx.constant dense<1.0> : tensor<1xf32>
  %a16 = tx.cast %a : tensor<32x24xf32> to tensor<32x24xbf16>
  %b16 = tx.cast %b : tensor<24x64xf32> to tensor<24x64xbf16>
  %w216 = tx.cast %w2 : tensor<64x16xf32> to tensor<64x16xbf16>
  %p = tx.blas_gemm %a16, %b16 : tensor<32x24xbf16>, tensor<24x64xbf16> -> tensor<32x64xbf16>
  %f = tx.cast %p : tensor<32x64xbf16> to tensor<32x64xf32>
  %s = tx.add %f, %bias : tensor<32x64xf32>, tensor<64xf32>
  %cube = tx.pow %s, %three : tensor<32x64xf32>, tensor<1xf32>
  %kc = tx.mul %cube, %k : tensor<32x64xf32>, tensor<1xf32>
  %inner = tx.add %s, %kc : tensor<32x64xf32>, tensor<32x64xf32>
  %u = tx.mul %inner, %c : tensor<32x64xf32>, tensor<1xf32>
  %t = tx.tanh %u : tensor<32x64xf32>
  %hs = tx.mul %s, %half : tensor<32x64xf32>, tensor<1xf32>
  %tp = tx.add %t, %one : tensor<32x64xf32>, tensor<1xf32>
  %g = tx.mul %hs, %tp : tensor<32x64xf32>, tensor<32x64xf32>
  %g16 = tx.cast %g : tensor<32x64xf32> to tensor<32x64xbf16>
  %out = tx.blas_gemm %g16, %w216 : tensor<32x64xbf16>, tensor<64x16xbf16> -> tensor<32x16xbf16>
  %back = tx.mul %t, %s : tensor<32x64xf32>, tensor<32x64xf32>
  return %out, %back : tensor<32x16xbf16>, tensor<32x64xf32>
}
