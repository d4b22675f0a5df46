/*===- tx-capi.c - embed txopt through its C API ---------------*- C -*-===*
 *
 * SPDX-License-Identifier: Apache-2.0
 * Registers the tx dialect from its handle, parses tx IR, runs the default
 * pipeline built through the C API and prints the result.
 *
 *===----------------------------------------------------------------------===*/

// RUN: txopt-capi-test 2>&1 | FileCheck %s

#include "txopt-c/Dialects.h"

#include "mlir-c/IR.h"
#include "mlir-c/Pass.h"

#include <stdio.h>
#include <stdlib.h>

static void printToStdout(MlirStringRef text, void *userData) {
  (void)userData;
  fwrite(text.data, 1, text.length, stdout);
}

static int fail(const char *what) {
  fprintf(stderr, "FAILED: %s\n", what);
  return 1;
}

int main(void) {
  MlirContext context = mlirContextCreate();
  MlirDialectRegistry registry = mlirDialectRegistryCreate();
  txoptRegisterAllDialects(registry);
  mlirContextAppendDialectRegistry(context, registry);
  mlirDialectRegistryDestroy(registry);

  // The dialect handle alone must be enough to load tx.
  MlirDialect tx = mlirDialectHandleLoadDialect(mlirGetDialectHandle__tx__(), context);
  if (mlirDialectIsNull(tx))
    return fail("tx dialect did not load");
  MlirStringRef ns = mlirDialectGetNamespace(tx);
  // CHECK: dialect namespace: tx
  printf("dialect namespace: %.*s\n", (int)ns.length, ns.data);

  // Two identical reads of one constant: CSE in the default pipeline must
  // merge them, which proves the pipeline really ran.
  const char *source =
      "func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
      "  %a = tx.constant dense<2.0> : tensor<4xf32>\n"
      "  %b = tx.constant dense<2.0> : tensor<4xf32>\n"
      "  %0 = tx.mul %x, %a : tensor<4xf32>, tensor<4xf32>\n"
      "  %1 = tx.mul %0, %b : tensor<4xf32>, tensor<4xf32>\n"
      "  return %1 : tensor<4xf32>\n"
      "}\n";
  MlirModule module = mlirModuleCreateParse(context, mlirStringRefCreateFromCString(source));
  if (mlirModuleIsNull(module))
    return fail("parse");

  MlirPassManager pm = mlirPassManagerCreate(context);
  if (mlirLogicalResultIsFailure(txoptBuildDefaultPipeline(
          mlirPassManagerGetAsOpPassManager(pm), mlirStringRefCreateFromCString(""))))
    return fail("build pipeline");
  if (mlirLogicalResultIsFailure(
          mlirPassManagerRunOnOp(pm, mlirModuleGetOperation(module))))
    return fail("run pipeline");

  // CHECK-LABEL: func.func @f
  // CHECK:         %[[C:.+]] = tx.constant dense<2.000000e+00>
  // CHECK-NOT:     tx.constant
  // CHECK:         %[[M:.+]] = tx.mul %{{.+}}, %[[C]]
  // CHECK:         tx.mul %[[M]], %[[C]]
  mlirOperationPrint(mlirModuleGetOperation(module), printToStdout, NULL);
  printf("\n");

  // A generated per-pass entry point: tx-fuse-norms on an imported ONNX
  // LayerNormalization turns it into the fused tx.layer_norm.
  mlirRegisterTxPasses();
  const char *normSource =
      "func.func @ln(%x: tensor<2x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<2x8xf32> {\n"
      "  %0 = tx.layer_normalization %x, %g, %b axis(-1) eps(1.0e-05)"
      " : tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>\n"
      "  return %0 : tensor<2x8xf32>\n"
      "}\n";
  MlirModule normModule = mlirModuleCreateParse(context, mlirStringRefCreateFromCString(normSource));
  if (mlirModuleIsNull(normModule))
    return fail("parse norm module");
  MlirPassManager normPm = mlirPassManagerCreate(context);
  MlirOpPassManager funcPm = mlirPassManagerGetNestedUnder(
      normPm, mlirStringRefCreateFromCString("func.func"));
  mlirOpPassManagerAddOwnedPass(funcPm, mlirCreateTxFuseNormsPass());
  if (mlirLogicalResultIsFailure(
          mlirPassManagerRunOnOp(normPm, mlirModuleGetOperation(normModule))))
    return fail("run tx-fuse-norms");
  // CHECK-LABEL: func.func @ln
  // CHECK:         tx.layer_norm
  // CHECK-NOT:     tx.layer_normalization
  mlirOperationPrint(mlirModuleGetOperation(normModule), printToStdout, NULL);
  printf("\n");
  mlirPassManagerDestroy(normPm);
  mlirModuleDestroy(normModule);

  // Bad pipeline options are reported, not fatal.
  // CHECK: bad options rejected: yes
  MlirPassManager pm2 = mlirPassManagerCreate(context);
  MlirLogicalResult bad = txoptBuildDefaultPipeline(
      mlirPassManagerGetAsOpPassManager(pm2),
      mlirStringRefCreateFromCString("no-such-option=1"));
  printf("bad options rejected: %s\n", mlirLogicalResultIsFailure(bad) ? "yes" : "no");

  mlirPassManagerDestroy(pm2);
  mlirPassManagerDestroy(pm);
  mlirModuleDestroy(module);
  mlirContextDestroy(context);
  return 0;
}
