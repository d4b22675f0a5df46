//===- TxNormOps.td - fused normalization ops ---------------*- tablegen -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// Fused LayerNorm / RMSNorm over the innermost dimension and their gradients,
// created by tx-fuse-norms (forward) and the autodiff pass (backward).
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_DIALECT_TX_IR_TXNORMOPS_TD
#define TXOPT_DIALECT_TX_IR_TXNORMOPS_TD

include "txopt/Dialect/Tx/IR/TxBase.td"
include "txopt/Dialect/Tx/IR/TxInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

// Activations and gradients of a fused norm. f64 is left out on purpose: the
// statistics are accumulated in f32, which would silently lose precision.
def Tx_NormTensor : StaticShapeTensorOf<[F16, BF16, F32]>;

// Per-row statistics (mean, rstd): always f32, shape of the input with the
// innermost dim set to 1, as ONNX LayerNormalization's Mean/InvStdDev outputs
// and torch.native_layer_norm have them, so they broadcast against the input
// without a reshape in the gradient.
def Tx_NormStatsTensor : StaticShapeTensorOf<[F32]>;

// Notation shared by the descriptions below: `x` has shape [N..., D]; `i`
// ranges over the leading dims N... and `j`, `k` over the innermost dim D.
// `f32(.)` widens exactly; `T(.)` rounds to nearest even into the element type
// of `x`, `G(.)` into that of `gamma`.

//===----------------------------------------------------------------------===//
// LayerNormOp
//===----------------------------------------------------------------------===//

def Tx_LayerNormOp : Tx_Op<"layer_norm", [Tx_Differentiable, Pure, InferTypeOpAdaptor]> {
  let summary = "Layer normalization over the innermost dimension";
  let description = [{
    Normalizes every row of `input` (its innermost dim, of size `D`) to zero
    mean and unit variance, then applies the per-feature affine map:

    ```
    mean[i]   = (1/D) * sum_j f32(x[i, j])
    var[i]    = (1/D) * sum_j (f32(x[i, j]) - mean[i])^2        // biased
    rstd[i]   = 1 / sqrt(var[i] + epsilon)                      // eps inside the sqrt
    result[i, j] = T((f32(x[i, j]) - mean[i]) * rstd[i] * f32(gamma[j])
                     + f32(beta[j]))                            // beta = 0 when absent
    ```

    All statistics are accumulated in f32 whatever the element type of
    `input`; `result` is rounded once at the end. `mean` and `rstd` have the
    shape of `input` with the innermost dim set to 1 and are kept for
    `tx.layer_norm_grad`. `gamma` and `beta` have shape `[D]` and the
    element type of `input` or f32 (f32 master weights under autocast).

    A normalization without a learned scale (`elementwise_affine=False`)
    carries a constant `gamma` of ones: the product is exact, and every
    layer norm then has one operand list. `beta` stays optional because
    `bias=False` is common (nanoGPT) and saves a read per element.

    Created by `tx-fuse-norms` from `tx.layer_normalization` or from the
    decomposed ReduceMean/Sub/Pow/... chain of opset-14 exports.

    ```mlir
    %y, %mean, %rstd = tx.layer_norm %x, %g, %b eps(1.0e-05)
        : tensor<2x32x128xbf16>, tensor<128xf32>, tensor<128xf32>
    // %mean, %rstd : tensor<2x32x1xf32>
    ```
  }];
  let arguments = (ins Tx_NormTensor:$input,
                       Tx_NormTensor:$gamma,
                       Optional<Tx_NormTensor>:$beta,
                       F32Attr:$epsilon);
  let results = (outs Tx_NormTensor:$result,
                      Tx_NormStatsTensor:$mean,
                      Tx_NormStatsTensor:$rstd);
  // Result types are inferred from `input`, so the format names only the
  // operand types, like tx.layer_normalization's.
  let assemblyFormat = [{
    $input `,` $gamma (`,` $beta^)? `eps` `(` $epsilon `)` attr-dict
    `:` type($input) `,` type($gamma) (`,` type($beta)^)?
  }];
  let hasVerifier = 1;  // epsilon >= 0; gamma/beta shape [D] and element type
}

//===----------------------------------------------------------------------===//
// RMSNormOp
//===----------------------------------------------------------------------===//

def Tx_RMSNormOp : Tx_Op<"rms_norm", [Tx_Differentiable, Pure, InferTypeOpAdaptor]> {
  let summary = "RMS normalization over the innermost dimension";
  let description = [{
    Scales every row of `input` (its innermost dim, of size `D`) by the
    reciprocal of its root mean square, without centering:

    ```
    ms[i]     = (1/D) * sum_j f32(x[i, j])^2
    rstd[i]   = 1 / sqrt(ms[i] + epsilon)                       // eps inside the sqrt
    result[i, j] = T(f32(x[i, j]) * rstd[i] * f32(gamma[j]))
    ```

    Statistics are accumulated in f32 whatever the element type of `input`;
    `result` is rounded once at the end. `rstd` has the shape of `input`
    with the innermost dim set to 1 and is kept for `tx.rms_norm_grad`.

    `gamma` is required: every exporter (HF Llama/Mistral/T5,
    com.microsoft SimplifiedLayerNormalization, ONNX RMSNormalization)
    carries one; `tx-fuse-norms` materializes ones for the rare chain
    without it. It has shape `[D]` and the element type of `input` or f32.

    ```mlir
    %y, %rstd = tx.rms_norm %x, %g eps(1.0e-06) : tensor<2x32x128xbf16>, tensor<128xbf16>
    // %rstd : tensor<2x32x1xf32>
    ```
  }];
  let arguments = (ins Tx_NormTensor:$input,
                       Tx_NormTensor:$gamma,
                       F32Attr:$epsilon);
  let results = (outs Tx_NormTensor:$result,
                      Tx_NormStatsTensor:$rstd);
  let assemblyFormat = [{
    $input `,` $gamma `eps` `(` $epsilon `)` attr-dict `:` type($input) `,` type($gamma)
  }];
  let hasVerifier = 1;  // epsilon >= 0; gamma shape [D] and element type
}

//===----------------------------------------------------------------------===//
// LayerNormGradOp
//===----------------------------------------------------------------------===//

def Tx_LayerNormGradOp : Tx_Op<"layer_norm_grad", [Pure, InferTypeOpAdaptor,
    AllTypesMatch<["grad", "input"]>, AllTypesMatch<["mean", "rstd"]>]> {
  let summary = "Gradients of tx.layer_norm with respect to input, gamma and beta";
  let description = [{
    Given the upstream gradient `grad` (dy) and the `mean`/`rstd` saved by
    the forward `tx.layer_norm` of `input`:

    ```
    xhat[i, j] = (f32(x[i, j]) - mean[i]) * rstd[i]
    g[i, j]    = f32(dy[i, j]) * f32(gamma[j])
    input_grad[i, j] = T(rstd[i] * (g[i, j] - (1/D) * sum_k g[i, k]
                                    - xhat[i, j] * (1/D) * sum_k g[i, k] * xhat[i, k]))
    gamma_grad[j]    = G(sum_i f32(dy[i, j]) * xhat[i, j])
    beta_grad[j]     = G(sum_i f32(dy[i, j]))
    ```

    Every sum is accumulated in f32. `grad` has the type of `input`; the
    parameter gradients have the type of `gamma` (`beta_grad` is produced
    even when the forward had no beta; it is then dead).

    ```mlir
    %dx, %dg, %db = tx.layer_norm_grad %dy, %x, %g, %mean, %rstd
        : tensor<2x32x128xbf16>, tensor<128xf32>, tensor<2x32x1xf32>
    ```
  }];
  let arguments = (ins Tx_NormTensor:$grad,
                       Tx_NormTensor:$input,
                       Tx_NormTensor:$gamma,
                       Tx_NormStatsTensor:$mean,
                       Tx_NormStatsTensor:$rstd);
  let results = (outs Tx_NormTensor:$input_grad,
                      Tx_NormTensor:$gamma_grad,
                      Tx_NormTensor:$beta_grad);
  // `grad` and `rstd` take their types from `input` and `mean` through the
  // AllTypesMatch traits, so only three types are spelled.
  let assemblyFormat = [{
    $grad `,` $input `,` $gamma `,` $mean `,` $rstd attr-dict
    `:` type($input) `,` type($gamma) `,` type($mean)
  }];
  let hasVerifier = 1;  // gamma shape [D] and element type; stats shape [N..., 1]
}

//===----------------------------------------------------------------------===//
// RMSNormGradOp
//===----------------------------------------------------------------------===//

def Tx_RMSNormGradOp : Tx_Op<"rms_norm_grad", [Pure, InferTypeOpAdaptor,
    AllTypesMatch<["grad", "input"]>]> {
  let summary = "Gradients of tx.rms_norm with respect to input and gamma";
  let description = [{
    Given the upstream gradient `grad` (dy) and the `rstd` saved by the
    forward `tx.rms_norm` of `input`:

    ```
    xhat[i, j] = f32(x[i, j]) * rstd[i]
    g[i, j]    = f32(dy[i, j]) * f32(gamma[j])
    input_grad[i, j] = T(rstd[i] * (g[i, j] - xhat[i, j] * (1/D) * sum_k g[i, k] * xhat[i, k]))
    gamma_grad[j]    = G(sum_i f32(dy[i, j]) * xhat[i, j])
    ```

    Every sum is accumulated in f32. `grad` has the type of `input`;
    `gamma_grad` has the type of `gamma`.

    ```mlir
    %dx, %dg = tx.rms_norm_grad %dy, %x, %g, %rstd
        : tensor<2x32x128xbf16>, tensor<128xbf16>, tensor<2x32x1xf32>
    ```
  }];
  let arguments = (ins Tx_NormTensor:$grad,
                       Tx_NormTensor:$input,
                       Tx_NormTensor:$gamma,
                       Tx_NormStatsTensor:$rstd);
  let results = (outs Tx_NormTensor:$input_grad,
                      Tx_NormTensor:$gamma_grad);
  let assemblyFormat = [{
    $grad `,` $input `,` $gamma `,` $rstd attr-dict
    `:` type($input) `,` type($gamma) `,` type($rstd)
  }];
  let hasVerifier = 1;  // gamma shape [D] and element type; rstd shape [N..., 1]
}

#endif // TXOPT_DIALECT_TX_IR_TXNORMOPS_TD
