// RUN: not txopt-run %s --function unknown_op 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: txopt-run %s --function masked_log | FileCheck %s --check-prefix=NOCHECK
// RUN: not txopt-run %s --function masked_log --check-finite 2>&1 | FileCheck %s --check-prefix=NAN
// RUN: txopt-run %s --function neg_inf_mask --check-finite | FileCheck %s --check-prefix=INFOK
// RUN: not txopt-run %s --function neg_inf_mask --check-finite=all 2>&1 | FileCheck %s --check-prefix=INF
// RUN: not txopt-run %s --function no_such_function 2>&1 | FileCheck %s --check-prefix=NOFUNC
// RUN: not txopt-run %t.missing.mlir 2>&1 | FileCheck %s --check-prefix=NOFILE
// RUN: echo "func.func @f() { tx.bogus }" > %t.bad.mlir
// RUN: not txopt-run %t.bad.mlir 2>&1 | FileCheck %s --check-prefix=PARSE
// RUN: echo "not an npy file" > %t.npy
// RUN: not txopt-run %s --function takes_input --input x=%t.npy 2>&1 | FileCheck %s --check-prefix=BADNPY

// Exit status: 1 for a bad model, input or run; 2 for a usage error.
// RUN: txopt-run %s --function unknown_op > /dev/null 2>&1 || echo "exit $?" > %t.status
// RUN: txopt-run %s --bogus-flag >> %t.status 2>&1 || echo "exit $?" >> %t.status
// RUN: txopt-run >> %t.status 2>&1 || echo "exit $?" >> %t.status
// RUN: txopt-run %s --check-finite=maybe >> %t.status 2>&1 || echo "exit $?" >> %t.status
// RUN: txopt-run %s --input x >> %t.status 2>&1 || echo "exit $?" >> %t.status
// RUN: FileCheck %s --check-prefix=STATUS --input-file %t.status
// STATUS: exit 1
// STATUS-NEXT: txopt-run: error: unknown option '--bogus-flag' (see --help)
// STATUS-NEXT: exit 2
// STATUS-NEXT: txopt-run: error: no model given (usage: txopt-run MODEL.mlir [options]; see --help)
// STATUS-NEXT: exit 2
// STATUS-NEXT: txopt-run: error: unknown --check-finite value 'maybe' (expected 'nan' or 'all')
// STATUS-NEXT: exit 2
// STATUS-NEXT: txopt-run: error: expected --input NAME=FILE.npy, but got 'x'
// STATUS-NEXT: exit 2

// An op the executor does not implement is an error naming it and its node.
// UNKNOWN: txopt-run: error: unsupported op 'func.call' at 'blocks/Call': the reference executor has no implementation for it
func.func private @helper() -> tensor<f32>
func.func @unknown_op() -> tensor<f32> {
  %0 = func.call @helper() : () -> tensor<f32> loc("blocks/Call")
  return %0 : tensor<f32>
}

// log(-1) is NaN: reported only under --check-finite, at the first op.
// NOCHECK: result0: tensor<2xf32> = [0, nan]
// NAN: txopt-run: error: tx.log at '/h.0/Log': produced NaN at element [1] of tensor<2xf32> (--check-finite)
func.func @masked_log() -> tensor<2xf32> {
  %x = tx.constant dense<[1.0, -1.0]> : tensor<2xf32>
  %l = tx.log %x : tensor<2xf32> loc("/h.0/Log")
  %y = tx.add %l, %l : tensor<2xf32>, tensor<2xf32> loc("/h.0/Add")
  return %y : tensor<2xf32>
}

// A -inf attention mask is legitimate: only --check-finite=all flags it.
// INFOK: result0: tensor<3xf32> = [0.5, 0.5, 0]
// INF: txopt-run: error: tx.constant at '/attn/mask': produced -inf at element [] of tensor<f32> (--check-finite)
func.func @neg_inf_mask() -> tensor<3xf32> {
  %s = tx.constant dense<[1.0, 1.0, 1.0]> : tensor<3xf32>
  %m = tx.constant dense<[true, true, false]> : tensor<3xi1>
  %ninf = tx.constant dense<0xFF800000> : tensor<f32> loc("/attn/mask")
  %w = tx.where %m, %s, %ninf : tensor<3xi1>, tensor<3xf32>, tensor<f32>
  %p = tx.softmax %w axis(-1) : tensor<3xf32>
  return %p : tensor<3xf32>
}

// NOFUNC: txopt-run: error: no function named 'no_such_function' in '{{.*}}errors.mlir'
// NOFILE: txopt-run: error: cannot read '{{.*}}missing.mlir': no such file
// PARSE: txopt-run: error: {{.*}}bad.mlir{{.*}}
// BADNPY: txopt-run: error: input 'x': '{{.*}}.npy': invalid .npy: missing the \x93NUMPY magic
func.func @takes_input(%x: tensor<2xf32> {tx.name = "x"}) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}
