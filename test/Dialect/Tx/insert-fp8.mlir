// tx-insert-fp8 alone, on training steps built from Inputs/insert-fp8-forward.mlir
// (Inputs/insert-fp8-steps.mlir; the first two RUN lines check it is current).
// RUN: cd %S/Inputs && txopt-opt insert-fp8-forward.mlir --split-input-file --tx-build-train-step --mlir-print-debuginfo -o %t.steps
// RUN: grep -v '^// GENERATED' %S/Inputs/insert-fp8-steps.mlir | diff %t.steps -
// RUN: txopt-opt %S/Inputs/insert-fp8-steps.mlir --split-input-file --mlir-print-debuginfo --mlir-pretty-debuginfo --tx-insert-fp8 | FileCheck %s
// RUN: txopt-opt %S/Inputs/insert-fp8-steps.mlir --split-input-file --tx-insert-fp8="format=e4m3 history=16 amax=most_recent margin=1" | FileCheck %s --check-prefix=E4M3
// RUN: txopt-opt %S/Inputs/insert-fp8-steps.mlir --split-input-file --tx-insert-fp8="scaling=current" | FileCheck %s --check-prefix=CURRENT
// RUN: txopt-opt %S/Inputs/insert-fp8-steps.mlir --split-input-file --mlir-print-debuginfo --mlir-pretty-debuginfo --tx-insert-fp8="exclude=^middle$" | FileCheck %s --check-prefix=EXCLUDE
// RUN: txopt-opt %S/Inputs/insert-fp8-steps.mlir --split-input-file --tx-insert-fp8="explain=1" 2>&1 | FileCheck %s --check-prefix=EXPLAIN
// RUN: txopt-opt %S/Inputs/insert-fp8-steps.mlir --split-input-file --tx-insert-fp8="exclude=^none$ explain=1" 2>&1 | FileCheck %s --check-prefix=DIMS
// RUN: txopt-opt %S/Inputs/insert-fp8-steps.mlir --split-input-file --tx-insert-fp8="target=sm_80 explain=1" 2>&1 | FileCheck %s --check-prefix=SM80
// RUN: not txopt-opt %S/Inputs/insert-fp8-steps.mlir --split-input-file --tx-insert-fp8="format=e5m2" 2>&1 | FileCheck %s --check-prefix=BADFORMAT
// RUN: not txopt-opt %S/Inputs/insert-fp8-steps.mlir --split-input-file --tx-insert-fp8="scaling=just_in_time" 2>&1 | FileCheck %s --check-prefix=BADSCALING
// RUN: not txopt-opt %S/Inputs/insert-fp8-steps.mlir --split-input-file --tx-insert-fp8="amax=mean" 2>&1 | FileCheck %s --check-prefix=BADAMAX
// RUN: not txopt-opt %S/Inputs/insert-fp8-steps.mlir --split-input-file --tx-insert-fp8=format=bogus 2>&1 | FileCheck %s --check-prefix=BADFORMATFLAG
// RUN: not txopt-opt %S/Inputs/insert-fp8-steps.mlir --split-input-file --tx-insert-fp8="target=hopper" 2>&1 | FileCheck %s --check-prefix=BADTARGET
// RUN: not txopt-opt %S/Inputs/insert-fp8-steps.mlir --split-input-file --tx-insert-fp8="history=0" 2>&1 | FileCheck %s --check-prefix=BADHISTORY
// RUN: not txopt-opt %S/Inputs/step-without-seed.mlir --tx-insert-fp8 2>&1 | FileCheck %s --check-prefix=NOSEED
// RUN: txopt-opt %S/Inputs/insert-fp8-steps.mlir --split-input-file --tx-insert-fp8="fast-accumulation=forward" | FileCheck %s --check-prefix=FORWARD
// RUN: txopt-opt %S/Inputs/insert-fp8-steps.mlir --split-input-file --tx-insert-fp8="fast-accumulation=all" | FileCheck %s --check-prefix=FAST
// RUN: not txopt-opt %S/Inputs/insert-fp8-steps.mlir --split-input-file --tx-insert-fp8="fast-accumulation=sometimes" 2>&1 | FileCheck %s --check-prefix=BADFAST

// Three GEMMs in a row. By default the first and last forward GEMM (and the
// backward GEMMs of the same node) stay as they are; the middle one and its
// dgrad and wgrad become FP8 GEMMs. The numbers of these ops are checked by
// test/Reference/fp8-scaling.mlir and test/Training/precision-curves.test.

// The options are checked when the pipeline is parsed, before any pass runs.
// BADFORMAT: for the --format option: expected hybrid|e4m3, but got 'e5m2'
// BADFORMAT-NOT: tx.train_step
// BADSCALING: for the --scaling option: expected delayed|current, but got 'just_in_time'
// BADAMAX: for the --amax option: expected max|most_recent, but got 'mean'
// BADFAST: for the --fast-accumulation option: Cannot find option named 'sometimes'

// Accumulation: by default (above) every GEMM split; forward (Transformer
// Engine's default): the forward GEMM fast, its dgrad and wgrad split;
// all: the gradients' too.
// FORWARD-LABEL: func.func @train_step(
// FORWARD:       tx.fp8_matmul {{.*}} {fast_accumulation} : tensor<16x16xf8E4M3FN>, tensor<16x16xf8E4M3FN> -> tensor<16x16xf32>
// FORWARD:       tx.fp8_matmul {{.*}}) : tensor<16x16xf8E5M2>, tensor<16x16xf8E4M3FN> -> tensor<16x16xf32>
// FORWARD:       tx.fp8_matmul {{.*}}) : tensor<16x16xf8E4M3FN>, tensor<16x16xf8E5M2> -> tensor<16x16xf32>
// FAST-LABEL:  func.func @train_step(
// FAST:          tx.fp8_matmul {{.*}} {fast_accumulation} : tensor<16x16xf8E4M3FN>, tensor<16x16xf8E4M3FN> -> tensor<16x16xf32>
// FAST:          tx.fp8_matmul {{.*}} {fast_accumulation} : tensor<16x16xf8E5M2>, tensor<16x16xf8E4M3FN> -> tensor<16x16xf32>
// FAST:          tx.fp8_matmul {{.*}} {fast_accumulation} : tensor<16x16xf8E4M3FN>, tensor<16x16xf8E5M2> -> tensor<16x16xf32>
// BADFORMATFLAG: for the --format option: expected hybrid|e4m3, but got 'bogus'
// BADTARGET: error: expected target=sm_XY (e.g. sm_90), but got 'hopper'
// BADHISTORY: error: expected history >= 1 and margin >= 0, but got 0 and 0
// NOSEED: error: expected the tx.grad_seed marker of the reverse sweep: run tx-insert-fp8 right after tx-build-train-step, before any cleanup pass

// Delayed scaling, hybrid: weights and activations E4M3, the gradient E5M2.
// The scaling state is packed per FP8 type: an [N, 1024] amax history and
// [N] scales and scale inverses, one row per cast site (tx.fp8_sites names
// them), updated by one tx.fp8_scale_update per type at the end of the
// step from this step's amaxes in site order, and returned with tx.next.
// One cast and one site per tensor: the backward GEMMs read the forward's
// codes transposed (w2^T in dgrad, the activation's transpose in wgrad),
// with the forward's scale_inv. Three sites for the three operand tensors,
// no fourth.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME:    %[[H4:arg13]]: tensor<2x1024xf32> {tx.fp8_sites = ["middle.lhs", "middle.rhs"], tx.init = 0.000000e+00 : f32, tx.name = "fp8.e4m3.amax_history", tx.role = "fp8_amax_history"}
// CHECK-SAME:    %[[S4:arg14]]: tensor<2xf32> {tx.fp8_sites = ["middle.lhs", "middle.rhs"], tx.init = 1.000000e+00 : f32, tx.name = "fp8.e4m3.scale", tx.role = "fp8_scale"}
// CHECK-SAME:    %[[I4:arg15]]: tensor<2xf32> {tx.fp8_sites = ["middle.lhs", "middle.rhs"], tx.init = 1.000000e+00 : f32, tx.name = "fp8.e4m3.scale_inv", tx.role = "fp8_scale_inv"}
// CHECK-SAME:    %[[H5:arg16]]: tensor<1x1024xf32> {tx.fp8_sites = ["middle.backward.lhs"], tx.init = 0.000000e+00 : f32, tx.name = "fp8.e5m2.amax_history", tx.role = "fp8_amax_history"}
// CHECK-SAME:    %[[S5:arg17]]: tensor<1xf32> {{{.*}}tx.name = "fp8.e5m2.scale", tx.role = "fp8_scale"}
// CHECK-SAME:    %[[I5:arg18]]: tensor<1xf32> {{{.*}}tx.name = "fp8.e5m2.scale_inv", tx.role = "fp8_scale_inv"}
// CHECK-NOT:     fp8_amax_history
// CHECK-SAME:    -> (
// CHECK-SAME:    tensor<2x1024xf32> {tx.name = "fp8.e4m3.amax_history", tx.next = 13 : i64}, tensor<2xf32> {tx.name = "fp8.e4m3.scale", tx.next = 14 : i64}, tensor<2xf32> {tx.name = "fp8.e4m3.scale_inv", tx.next = 15 : i64}
// CHECK-SAME:    tensor<1x1024xf32> {tx.name = "fp8.e5m2.amax_history", tx.next = 16 : i64}, tensor<1xf32> {tx.name = "fp8.e5m2.scale", tx.next = 17 : i64}, tensor<1xf32> {tx.name = "fp8.e5m2.scale_inv", tx.next = 18 : i64})
// CHECK-SAME:    fp8 = #tx.fp8_recipe<delayed, format = hybrid, history = 1024, amax = max, margin = 0>
// The site reads come before the amax, whose kernel a backend fuses with
// the quantize that reads the scale.
// CHECK:         %[[SW:.+]] = tx.fp8_site %[[S4]][1] : tensor<2xf32>
// CHECK-NEXT:    %[[IW:.+]] = tx.fp8_site %[[I4]][1] : tensor<2xf32>
// CHECK-NEXT:    %[[AW:.+]] = tx.amax %[[W2:arg1]] : tensor<16x16xf32>
// CHECK-NEXT:    %[[QW:.+]] = tx.quantize %[[W2]], %[[SW]] : tensor<16x16xf32> to tensor<16x16xf8E4M3FN>
// CHECK:         tx.matmul {{.*}} "first"
// CHECK:         %[[SX:.+]] = tx.fp8_site %[[S4]][0] : tensor<2xf32>
// CHECK-NEXT:    %[[IX:.+]] = tx.fp8_site %[[I4]][0] : tensor<2xf32>
// CHECK-NEXT:    %[[AX:.+]] = tx.amax
// Once the step has every site's amax (here the activation's is the last
// one), the sites are updated at once: the amaxes in site order (site 0 is
// the activation, site 1 the weight), one update. Its results are only
// returned, so it could as well come at the end.
// CHECK-NEXT:    %[[R0:.+]] = tx.reshape %[[AX]] : tensor<f32> -> tensor<1xf32>
// CHECK-NEXT:    %[[R1:.+]] = tx.reshape %[[AW]] : tensor<f32> -> tensor<1xf32>
// CHECK-NEXT:    %[[A4:.+]] = tx.concat %[[R0]], %[[R1]] axis(0) : tensor<1xf32>, tensor<1xf32>
// CHECK-NEXT:    %[[NH4:.+]], %[[NS4:.+]], %[[NI4:.+]] = tx.fp8_scale_update %[[H4]], %[[S4]], %[[A4]] : tensor<2x1024xf32> for f8E4M3FN #tx.fp8_recipe<delayed, format = hybrid, history = 1024, amax = max, margin = 0>
// CHECK-NEXT:    %[[QX:.+]] = tx.quantize %{{.+}}, %[[SX]] : tensor<16x16xf32> to tensor<16x16xf8E4M3FN>
// CHECK:         tx.fp8_matmul %[[QX]], %[[QW]] scale_inv(%[[IX]], %[[IW]]) : tensor<16x16xf8E4M3FN>, tensor<16x16xf8E4M3FN> -> tensor<16x16xf32> "middle"
// CHECK:         tx.matmul {{.*}} "last"
// CHECK:         %[[SG:.+]] = tx.fp8_site %[[S5]][0] : tensor<1xf32>
// CHECK-NEXT:    %[[IG:.+]] = tx.fp8_site %[[I5]][0] : tensor<1xf32>
// CHECK-NEXT:    %[[AG:.+]] = tx.amax
// One site needs no concat.
// CHECK-NEXT:    %[[A5:.+]] = tx.reshape %[[AG]] : tensor<f32> -> tensor<1xf32>
// CHECK-NEXT:    %[[NH5:.+]], %[[NS5:.+]], %[[NI5:.+]] = tx.fp8_scale_update %[[H5]], %[[S5]], %[[A5]] : tensor<1x1024xf32> for f8E5M2
// CHECK-NEXT:    %[[QG:.+]] = tx.quantize %{{.+}}, %[[SG]] : tensor<16x16xf32> to tensor<16x16xf8E5M2>
// CHECK-NOT:     tx.amax
// CHECK:         %[[QWT:.+]] = tx.transpose %[[QW]] perm [1, 0] : tensor<16x16xf8E4M3FN> "middle"
// CHECK:         tx.fp8_matmul %[[QG]], %[[QWT]] scale_inv(%[[IG]], %[[IW]]) : tensor<16x16xf8E5M2>, tensor<16x16xf8E4M3FN> -> tensor<16x16xf32> "middle"
// CHECK:         %[[QXT:.+]] = tx.transpose %[[QX]] perm [1, 0] : tensor<16x16xf8E4M3FN> "middle"
// CHECK:         tx.fp8_matmul %[[QXT]], %[[QG]] scale_inv(%[[IX]], %[[IG]]) : tensor<16x16xf8E4M3FN>, tensor<16x16xf8E5M2> -> tensor<16x16xf32> "middle"
// CHECK-NOT:     tx.fp8_matmul
// CHECK-NOT:     tx.fp8_scale_update
// CHECK:         return {{.*}}, %[[NH4]], %[[NS4]], %[[NI4]], %[[NH5]], %[[NS5]], %[[NI5]] :
// CHECK-NOT:     tx.amax
// CHECK-NOT:     tx.grad_seed

// e4m3 everywhere: one packed state of three sites, the recipe's options on
// its one update.
// E4M3-LABEL: func.func @train_step(
// E4M3-SAME:    tensor<3x16xf32> {tx.fp8_sites = ["middle.lhs", "middle.rhs", "middle.backward.lhs"], tx.init = 0.000000e+00 : f32, tx.name = "fp8.e4m3.amax_history"
// E4M3-NOT:     f8E5M2
// E4M3:         tx.fp8_scale_update {{.*}} : tensor<3x16xf32> for f8E4M3FN #tx.fp8_recipe<delayed, format = e4m3, history = 16, amax = most_recent, margin = 1>
// E4M3-NOT:     f8E5M2

// Current scaling: the scale comes from this step's amax; no state.
// CURRENT-LABEL: func.func @train_step(
// CURRENT-NOT:   fp8_scale
// CURRENT-NOT:   tx.fp8_site
// CURRENT:       %[[A:.+]] = tx.amax
// CURRENT:       %[[S:.+]], %[[SI:.+]] = tx.fp8_current_scale %[[A]] for f8E4M3FN #tx.fp8_recipe<current, format = hybrid>
// CURRENT:       tx.quantize %{{.+}}, %[[S]]
// CURRENT-NOT:   tx.fp8_scale_update

// exclude= replaces the default: now first and last are converted, middle not.
// EXCLUDE-LABEL: func.func @train_step(
// EXCLUDE:       tx.fp8_matmul {{.*}} "first"
// EXCLUDE:       tx.matmul {{.*}} "middle"
// EXCLUDE:       tx.fp8_matmul {{.*}} "last"

// Every GEMM left alone says why.
// EXPLAIN-DAG: remark: loc("first"): not fused: fp8: excluded: the first or last forward GEMM
// EXPLAIN-DAG: remark: loc("last"): not fused: fp8: excluded: the first or last forward GEMM
// DIMS-DAG: remark: loc("odd"): not fused: fp8: dims M=10 K=32 N=16 are not all multiples of 16 (cuBLASLt FP8 requirement)
// DIMS-DAG: remark: loc("with_bias"): not fused: fp8: dims M=10 K=16 N=16 are not all multiples of 16 (cuBLASLt FP8 requirement)
// SM80-DAG: remark: loc("middle"): not fused: fp8: target sm_80 has no FP8 tensor cores (sm_89 or newer needed)
// SM80-NOT: tx.fp8_matmul
// Input: chunk 1 of Inputs/insert-fp8-forward.mlir, as a step in Inputs/insert-fp8-steps.mlir.

// -----

// Shapes cuBLASLt cannot run in FP8 stay as they are.
// Input: chunk 2 of Inputs/insert-fp8-forward.mlir, as a step in Inputs/insert-fp8-steps.mlir.

// -----

// tx.gemm: the tensor is cast as it is and its transpose flag becomes a
// transpose of the codes; alpha and the bias come after the FP8 product, in
// the GEMM's type. The backward's transposed gradient reads the same codes.
// EXCLUDE-LABEL: func.func @train_step(
// EXCLUDE:       %[[Q:.+]] = tx.quantize %arg0, %{{.+}} : tensor<32x16xf32> to tensor<32x16xf8E4M3FN>
// EXCLUDE:       %[[T:.+]] = tx.transpose %[[Q]] perm [1, 0] : tensor<32x16xf8E4M3FN> "gemm"
// EXCLUDE:       %[[P:.+]] = tx.fp8_matmul %{{.+}}, %[[T]] scale_inv({{.*}}) : tensor<16x16xf8E4M3FN>, tensor<16x32xf8E4M3FN> -> tensor<16x32xf32> "gemm"
// EXCLUDE:       %[[A:.+]] = tx.mul %[[P]], %{{.+}} : tensor<16x32xf32>, tensor<f32> "gemm"
// EXCLUDE:       %[[C:.+]] = tx.mul %{{.+}}, %{{.+}} : tensor<32xf32>, tensor<f32> "gemm"
// EXCLUDE:       tx.add %[[A]], %[[C]] : tensor<16x32xf32>, tensor<32xf32> "gemm"
// EXCLUDE:       %[[G:.+]] = tx.quantize %{{.+}} : tensor<16x32xf32> to tensor<16x32xf8E5M2>
// EXCLUDE:       %[[GT:.+]] = tx.transpose %[[G]] perm [1, 0] : tensor<16x32xf8E5M2> "gemm"
// EXCLUDE:       tx.fp8_matmul %[[GT]], %{{.+}} : tensor<32x16xf8E5M2>, tensor<16x16xf8E4M3FN> -> tensor<32x16xf32> "gemm"
// Input: chunk 3 of Inputs/insert-fp8-forward.mlir, as a step in Inputs/insert-fp8-steps.mlir.
