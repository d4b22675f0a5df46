// tx-cache-fp8-weights on the FP8 steps of insert-fp8.mlir (tx-insert-fp8's
// output on Inputs/insert-fp8-steps.mlir). That the cached step computes
// exactly what the uncached one does is checked end to end by
// test/Training/fp8-weight-cache.test; here, the IR.
// RUN: txopt-opt %S/Inputs/insert-fp8-steps.mlir --split-input-file --tx-insert-fp8 --tx-cache-fp8-weights | FileCheck %s
// RUN: txopt-opt %S/Inputs/insert-fp8-steps.mlir --split-input-file --tx-insert-fp8=scaling=current --tx-cache-fp8-weights=explain=1 2>&1 | FileCheck %s --check-prefix=CURRENT
// RUN: cd %S/Inputs && txopt-opt insert-fp8-forward.mlir --split-input-file --tx-build-train-step="freeze=^w2$" --tx-insert-fp8 --tx-cache-fp8-weights=explain=1 2>&1 | FileCheck %s --check-prefix=FROZEN
// RUN: not txopt-opt %S/Inputs/insert-fp8-steps.mlir --split-input-file --tx-insert-fp8 --tx-cache-fp8-weights --tx-cache-fp8-weights 2>&1 | FileCheck %s --check-prefix=TWICE

// The middle GEMM's weight w2 (argument 1) is cast once per step for the
// forward GEMM (as rhs, [N, K]) and, transposed, for the dgrad. Its codes
// in both layouts and its amax become state; the forward reads the kept
// transposed codes through a transpose (the GEMM's TN flag), the dgrad the
// plain ones; the scale update takes the kept amax as the weight's row (site
// 1) of the packed amaxes. The activation and the gradient casts stay as
// they are.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME:    %[[CODES:arg[0-9]+]]: tensor<16x16xf8E4M3FN> {tx.init = 0.000000e+00 : f32, tx.name = "w2.fp8_codes", tx.role = "fp8_weight_codes"}
// CHECK-SAME:    %[[CODEST:arg[0-9]+]]: tensor<16x16xf8E4M3FN> {tx.init = 0.000000e+00 : f32, tx.name = "w2.fp8_codes_t", tx.role = "fp8_weight_codes"}
// CHECK-SAME:    %[[AMAX:arg[0-9]+]]: tensor<f32> {tx.init = 0.000000e+00 : f32, tx.name = "w2.fp8_amax", tx.role = "fp8_weight_amax"}
// CHECK-SAME:    {tx.name = "w2.fp8_codes", tx.next = [[NCODES:[0-9]+]] : i64}
// CHECK-SAME:    {tx.name = "w2.fp8_codes_t", tx.next = [[NCODEST:[0-9]+]] : i64}
// CHECK-SAME:    {tx.name = "w2.fp8_amax", tx.next = [[NAMAX:[0-9]+]] : i64}
// The weight's scale is not read in the step any more (its site read is
// gone); its scale inverse still is, by both GEMMs.
// CHECK-NOT:     tx.fp8_site %arg14[1]
// CHECK:         %[[WINV:.+]] = tx.fp8_site %arg15[1] : tensor<2xf32>
// CHECK-NOT:     tx.fp8_site %arg14[1]
// CHECK:         %[[ROW0:.+]] = tx.reshape %{{.+}} : tensor<f32> -> tensor<1xf32>
// CHECK-NEXT:    %[[ROW1:.+]] = tx.reshape %[[AMAX]] : tensor<f32> -> tensor<1xf32>
// CHECK-NEXT:    %[[AMAXES:.+]] = tx.concat %[[ROW0]], %[[ROW1]] axis(0)
// CHECK-NEXT:    %{{.+}}, %[[SCALES:.+]], %{{.+}} = tx.fp8_scale_update %arg13, %arg14, %[[AMAXES]] : tensor<2x1024xf32> for f8E4M3FN
// CHECK-NOT:     tx.quantize %arg1,
// CHECK:         %[[FWD:.+]] = tx.transpose %[[CODEST]] perm [1, 0] : tensor<16x16xf8E4M3FN>
// CHECK:         tx.fp8_matmul %{{.+}}, %[[FWD]] scale_inv(%{{.+}}, %[[WINV]])
// CHECK-NOT:     tx.quantize %arg1,
// CHECK:         %[[DGRAD:.+]] = tx.transpose %[[CODES]] perm [1, 0] : tensor<16x16xf8E4M3FN>
// CHECK:         tx.fp8_matmul %{{.+}}, %[[DGRAD]] scale_inv(%{{.+}}, %[[WINV]])
// The next step's values: the updated weight, cast with the updated scale.
// CHECK:         %[[NEW:.+]]:3, %{{.+}}:3, %{{.+}}:3 = tx.adam
// CHECK:         %[[WSCALE:.+]] = tx.fp8_site %[[SCALES]][1] : tensor<2xf32>
// CHECK-NEXT:    %[[NAMAXV:.+]] = tx.amax %[[NEW]]#1 : tensor<16x16xf32>
// CHECK-NEXT:    %[[NCODESV:.+]] = tx.quantize %[[NEW]]#1, %[[WSCALE]] : tensor<16x16xf32> to tensor<16x16xf8E4M3FN>
// CHECK:         %[[NCODESTV:.+]] = tx.transpose %[[NCODESV]] perm [1, 0]
// CHECK:         return {{.*}}, %[[NCODESV]], %[[NCODESTV]], %[[NAMAXV]] :
// Three quantizes in the step: the activation, the gradient, the next codes.
// CHECK-NOT:     tx.quantize
// The state-init function: the same cast of the weight the arguments hold,
// with the scale they hold; each result names the argument it initializes.
// CHECK-LABEL: func.func @train_step_state_init(
// CHECK-SAME:    %[[W:arg1]]: tensor<16x16xf32> {tx.name = "w2", tx.parameter = @w2, tx.role = "param"}
// CHECK-SAME:    %[[SCALES:arg[0-9]+]]: tensor<2xf32> {tx.fp8_sites = ["middle.lhs", "middle.rhs"], tx.init = 1.000000e+00 : f32, tx.name = "fp8.e4m3.scale", tx.role = "fp8_scale"}
// CHECK-SAME:    -> (tensor<16x16xf8E4M3FN> {tx.name = "w2.fp8_codes", tx.next = [[NCODES]] : i64}, tensor<16x16xf8E4M3FN> {tx.name = "w2.fp8_codes_t", tx.next = [[NCODEST]] : i64}, tensor<f32> {tx.name = "w2.fp8_amax", tx.next = [[NAMAX]] : i64})
// CHECK-SAME:    attributes {tx.state_init = @train_step}
// CHECK-NEXT:    %[[SCALE:.+]] = tx.fp8_site %[[SCALES]][1] : tensor<2xf32>
// CHECK-NEXT:    %[[A:.+]] = tx.amax %[[W]]
// CHECK-NEXT:    %[[Q:.+]] = tx.quantize %[[W]], %[[SCALE]]
// CHECK-NEXT:    %[[T:.+]] = tx.transpose %[[Q]] perm [1, 0]
// CHECK-NEXT:    return %[[Q]], %[[T]], %[[A]]

// A step without FP8 GEMMs: nothing to cache, no state-init function.
// CHECK-LABEL: func.func @train_step(
// CHECK-NOT:     fp8_codes
// CHECK-NOT:     state_init

// Current scaling has no scale state to cast ahead with: nothing cached,
// and no remark (activations and gradients never get one either).
// CURRENT-NOT: remark
// CURRENT-NOT: fp8_codes
// CURRENT-NOT: state_init
// CURRENT: tx.fp8_current_scale

// A frozen weight is a constant of the step, not state: cast every step.
// FROZEN: remark: {{.*}}"middle"{{.*}} not cached: fp8 weight: the parameter is frozen (a constant of the step)
// FROZEN-NOT: fp8_codes
// FROZEN-NOT: state_init

// TWICE: error: 'train_step' already has a state-init function
