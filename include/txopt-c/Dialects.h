/*===- Dialects.h - C API for the tx dialect -------------------*- C -*-===*
 *
 * SPDX-License-Identifier: Apache-2.0
 * Embedding txopt from C (or any language with a C FFI): the dialect handle,
 * the generated per-pass entry points and the default pipeline.
 *
 *===----------------------------------------------------------------------===*/

#ifndef TXOPT_C_DIALECTS_H
#define TXOPT_C_DIALECTS_H

#include "mlir-c/IR.h"
#include "mlir-c/Pass.h"
#include "mlir-c/Support.h"

#ifdef __cplusplus
extern "C" {
#endif

MLIR_DECLARE_CAPI_DIALECT_REGISTRATION(Tx, tx);

/* Registers tx, func and every dialect tx IR mentions into |registry|. */
MLIR_CAPI_EXPORTED void txoptRegisterAllDialects(MlirDialectRegistry registry);

/* Registers txopt's passes and pipelines for textual pipeline parsing. */
MLIR_CAPI_EXPORTED void txoptRegisterAllPasses(void);

/* Appends the pipeline `txopt model.onnx` runs after import to |pm|.
 * |options| uses textual pipeline-option syntax ("" for the defaults). */
MLIR_CAPI_EXPORTED MlirLogicalResult
txoptBuildDefaultPipeline(MlirOpPassManager pm, MlirStringRef options);

#ifdef __cplusplus
}
#endif

#include "txopt-c/Passes.h"

#endif /* TXOPT_C_DIALECTS_H */
