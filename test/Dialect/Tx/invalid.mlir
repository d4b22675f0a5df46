// RUN: txopt-opt %s --split-input-file --verify-diagnostics

// One case per verifier branch and per result-type inference failure in
// TxOps.cpp. Ops with inferred result types run inference while parsing, so
// their errors are reported at the op's location by the parser.

//===----------------------------------------------------------------------===//
// Inference guards (every op with an inferred result type)
//===----------------------------------------------------------------------===//

// Inference runs from the parser before the operand constraints: a dynamic
// dim must be rejected, not fed into shape arithmetic as INT64_MIN.
func.func @add_dynamic_operand(%a: tensor<?x4xf32>) {
  // expected-error @+1 {{expected statically shaped tensor operands, but got 'tensor<?x4xf32>'}}
  %0 = tx.add %a, %a : tensor<?x4xf32>, tensor<?x4xf32>
  return
}

// -----

// Same guard for an op whose clamping would misbehave on a dynamic dim.
func.func @slice_dynamic_operand(%a: tensor<?xf32>) {
  // expected-error @+1 {{expected statically shaped tensor operands, but got 'tensor<?xf32>'}}
  %0 = tx.slice %a starts [0] ends [1] axes [0] steps [-1] : tensor<?xf32>
  return
}

// -----

// In generic form the operand constraints are verified before inference.
func.func @add_generic_dynamic_operand(%a: tensor<?xf32>) {
  // expected-error @+1 {{'tx.add' op operand #0 must be statically shaped tensor}}
  %0 = "tx.add"(%a, %a) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  return
}

// -----

// A result type that disagrees with inference (generic form).
func.func @add_wrong_result_type(%a: tensor<4xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<4xf32>' are incompatible with return type(s) of operation 'tensor<5xf32>'}}
  // expected-error @+1 {{'tx.add' op failed to infer returned types}}
  %0 = "tx.add"(%a, %a) : (tensor<4xf32>, tensor<4xf32>) -> tensor<5xf32>
  return
}

//===----------------------------------------------------------------------===//
// Parameters and constants
//===----------------------------------------------------------------------===//

// -----

// Weights are floating point; integer initializers become tx.constant.
// expected-error @+1 {{'tx.parameter' op expected a floating-point parameter, but got element type 'i64'}}
tx.parameter @parameter_non_float = dense<1> : tensor<4xi64>

// -----

// The initial value must be a tensor (rejected by the parser, which takes
// the parameter's type from it).
// expected-error @+1 {{expected a statically shaped tensor type, but got 'vector<4xf32>'}}
tx.parameter @parameter_vector = dense<1.0> : vector<4xf32>

// -----

// Parameters live at module level only.
func.func @parameter_in_function() {
  // expected-error @+1 {{'tx.parameter' op expects parent op 'builtin.module'}}
  tx.parameter @w = dense<1.0> : tensor<4xf32>
  return
}

// -----

// The symbol must name a tx.parameter.
func.func @load_parameter_missing_symbol() -> tensor<4xf32> {
  // expected-error @+1 {{'tx.load_parameter' op expected 'missing' to name a tx.parameter}}
  %0 = tx.load_parameter @missing : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// The result type is the parameter's type.
tx.parameter @w = dense<1.0> : tensor<4xf32>
func.func @load_parameter_type_mismatch() -> tensor<4xf16> {
  // expected-error @+1 {{'tx.load_parameter' op expected type 'tensor<4xf32>' of parameter 'w', but got 'tensor<4xf16>'}}
  %0 = tx.load_parameter @w : tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

// The fill value has exactly one element.
func.func @constant_of_shape_value_count(%s: tensor<2xi64>) {
  // expected-error @+1 {{'tx.constant_of_shape' op expected a one-element value, but got 2 elements}}
  %0 = tx.constant_of_shape %s value(dense<[0.0, 1.0]> : tensor<2xf32>) : tensor<2xi64> -> tensor<2x3xf32>
  return
}

// -----

// The fill value has the result's element type.
func.func @constant_of_shape_value_type(%s: tensor<2xi64>) {
  // expected-error @+1 {{'tx.constant_of_shape' op expected value element type 'f32', but got 'i64'}}
  %0 = tx.constant_of_shape %s value(dense<0> : tensor<1xi64>) : tensor<2xi64> -> tensor<2x3xf32>
  return
}

// -----

// A non-constant shape still fixes the result rank.
func.func @constant_of_shape_rank(%s: tensor<3xi64>) {
  // expected-error @+1 {{'tx.constant_of_shape' op expected shape operand with 2 entries, but got 3}}
  %0 = tx.constant_of_shape %s value(dense<0.0> : tensor<1xf32>) : tensor<3xi64> -> tensor<2x3xf32>
  return
}

// -----

// A constant shape fixes the result dims.
func.func @constant_of_shape_dims() {
  %s = tx.constant dense<[2, 4]> : tensor<2xi64>
  // expected-error @+1 {{'tx.constant_of_shape' op expected result shape [2, 4], but got [2, 3]}}
  %0 = tx.constant_of_shape %s value(dense<0.0> : tensor<1xf32>) : tensor<2xi64> -> tensor<2x3xf32>
  return
}

// -----

// ONNX's shape input is 1-D.
func.func @constant_of_shape_2d_shape(%s: tensor<2x1xi64>) {
  // expected-error @+1 {{'tx.constant_of_shape' op operand #0 must be statically shaped 1D tensor of 64-bit signless integer values}}
  %0 = tx.constant_of_shape %s value(dense<0.0> : tensor<1xf32>) : tensor<2x1xi64> -> tensor<2x1xf32>
  return
}

// -----

// The result has the operands' element type.
func.func @range_element_type(%a: tensor<i64>) {
  // expected-error @+1 {{'tx.range' op expected result element type 'i64', but got 'i32'}}
  %0 = tx.range %a, %a, %a : tensor<i64> -> tensor<0xi32>
  return
}

// -----

// A constant zero delta is rejected even when start and limit are unknown.
func.func @range_zero_delta(%a: tensor<i64>) {
  %d = tx.constant dense<0> : tensor<i64>
  // expected-error @+1 {{'tx.range' op expected a non-zero delta}}
  %0 = tx.range %a, %a, %d : tensor<i64> -> tensor<4xi64>
  return
}

// -----

// Constant operands fix the length: ceil((10 - 0) / 3) = 4.
func.func @range_count() {
  %s = tx.constant dense<0> : tensor<i64>
  %l = tx.constant dense<10> : tensor<i64>
  %d = tx.constant dense<3> : tensor<i64>
  // expected-error @+1 {{'tx.range' op expected a result of 4 elements, but got 3}}
  %0 = tx.range %s, %l, %d : tensor<i64> -> tensor<3xi64>
  return
}

// -----

// Exact integer arithmetic: the full i64 range does not overflow, and its
// length does not fit in 64 bits.
func.func @range_huge_integer_count() {
  %s = tx.constant dense<-9223372036854775808> : tensor<i64>
  %l = tx.constant dense<9223372036854775807> : tensor<i64>
  %d = tx.constant dense<1> : tensor<i64>
  // expected-error @+1 {{'tx.range' op expected a range length that fits in 64 bits}}
  %0 = tx.range %s, %l, %d : tensor<i64> -> tensor<4xi64>
  return
}

// -----

// A float length past int64 must not reach a float-to-int conversion.
func.func @range_huge_float_count() {
  %s = tx.constant dense<0.0> : tensor<f32>
  %l = tx.constant dense<3.0e+38> : tensor<f32>
  %d = tx.constant dense<1.0e-30> : tensor<f32>
  // expected-error @+1 {{'tx.range' op expected a range length that fits in 64 bits}}
  %0 = tx.range %s, %l, %d : tensor<f32> -> tensor<4xf32>
  return
}

// -----

// Infinite or NaN operands have no length.
func.func @range_non_finite() {
  %s = tx.constant dense<0.0> : tensor<f32>
  %l = tx.constant dense<0x7F800000> : tensor<f32>
  %d = tx.constant dense<1.0> : tensor<f32>
  // expected-error @+1 {{'tx.range' op expected finite start, limit and delta}}
  %0 = tx.range %s, %l, %d : tensor<f32> -> tensor<4xf32>
  return
}

// -----

// Every tx value is statically shaped, range results included.
func.func @range_dynamic_result(%a: tensor<i64>) {
  // expected-error @+1 {{'tx.range' op result #0 must be statically shaped 1D tensor}}
  %0 = tx.range %a, %a, %a : tensor<i64> -> tensor<?xi64>
  return
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

// -----

// Broadcasting compares dims right to left; 3 and 4 do not broadcast.
func.func @add_broadcast_mismatch(%a: tensor<2x3xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{expected broadcastable operand shapes, but got [2, 3] and [4]}}
  %0 = tx.add %a, %b : tensor<2x3xf32>, tensor<4xf32>
  return
}

// -----

// Arithmetic operands share one element type.
func.func @mul_element_type_mismatch(%a: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error @+1 {{expected operands of one element type, but got 'f32' and 'f16'}}
  %0 = tx.mul %a, %b : tensor<4xf32>, tensor<4xf16>
  return
}

// -----

// Comparison operands share one element type too.
func.func @equal_element_type_mismatch(%a: tensor<4xi64>, %b: tensor<4xi32>) {
  // expected-error @+1 {{expected operands of one element type, but got 'i64' and 'i32'}}
  %0 = tx.equal %a, %b : tensor<4xi64>, tensor<4xi32>
  return
}

// -----

// Pow allows a different exponent type, but still broadcasts.
func.func @pow_broadcast_mismatch(%a: tensor<4xf32>, %b: tensor<3xi64>) {
  // expected-error @+1 {{expected broadcastable operand shapes, but got [4] and [3]}}
  %0 = tx.pow %a, %b : tensor<4xf32>, tensor<3xi64>
  return
}

// -----

// ONNX Mod requires fmod = 1 for floating-point operands.
func.func @mod_float_without_fmod(%a: tensor<4xf32>) {
  // expected-error @+1 {{'tx.mod' op expected fmod = true for floating-point operands}}
  %0 = tx.mod %a, %a : tensor<4xf32>, tensor<4xf32>
  return
}

// -----

// Where's branches share one element type.
func.func @where_element_type_mismatch(%c: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<f16>) {
  // expected-error @+1 {{expected branches of one element type, but got 'f32' and 'f16'}}
  %0 = tx.where %c, %a, %b : tensor<4xi1>, tensor<4xf32>, tensor<f16>
  return
}

// -----

// The condition broadcasts with the branches.
func.func @where_broadcast_mismatch(%c: tensor<3xi1>, %a: tensor<4xf32>, %b: tensor<f32>) {
  // expected-error @+1 {{expected broadcastable operand shapes, but got [3] and [4]}}
  %0 = tx.where %c, %a, %b : tensor<3xi1>, tensor<4xf32>, tensor<f32>
  return
}

// -----

// Trilu works on the last two dims.
func.func @trilu_rank(%a: tensor<4xf32>) {
  // expected-error @+1 {{'tx.trilu' op expected an input of rank at least 2, but got rank 1}}
  %0 = tx.trilu %a : tensor<4xf32>
  return
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

// -----

// MatMul operands share one element type.
func.func @matmul_element_type(%a: tensor<2x3xf32>, %b: tensor<3x4xbf16>) {
  // expected-error @+1 {{expected operands of one element type, but got 'f32' and 'bf16'}}
  %0 = tx.matmul %a, %b : tensor<2x3xf32>, tensor<3x4xbf16>
  return
}

// -----

// Scalars are not matrices.
func.func @matmul_scalar(%a: tensor<f32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{expected operands of rank at least 1, but got [] and [3]}}
  %0 = tx.matmul %a, %b : tensor<f32>, tensor<3xf32>
  return
}

// -----

// lhs's last dim contracts with rhs's second-to-last.
func.func @matmul_contraction(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+1 {{expected matching contraction dims, but got [2, 3] and [4, 5]}}
  %0 = tx.matmul %a, %b : tensor<2x3xf32>, tensor<4x5xf32>
  return
}

// -----

// Batch dims broadcast numpy-style: 2 and 3 do not.
func.func @matmul_batch(%a: tensor<2x4x8xf32>, %b: tensor<3x8x5xf32>) {
  // expected-error @+1 {{expected broadcastable batch dims, but got [2, 4, 8] and [3, 8, 5]}}
  %0 = tx.matmul %a, %b : tensor<2x4x8xf32>, tensor<3x8x5xf32>
  return
}

// -----

// Gemm takes matrices only.
func.func @gemm_rank(%a: tensor<2x3x4xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+1 {{expected 2-D A and B, but got [2, 3, 4] and [4, 5]}}
  %0 = tx.gemm %a, %b : tensor<2x3x4xf32>, tensor<4x5xf32>
  return
}

// -----

// A and B share one element type.
func.func @gemm_element_type(%a: tensor<2x3xf32>, %b: tensor<3x4xf16>) {
  // expected-error @+1 {{expected A and B of one element type, but got 'f32' and 'f16'}}
  %0 = tx.gemm %a, %b : tensor<2x3xf32>, tensor<3x4xf16>
  return
}

// -----

// transB reads B as [N, K]: K is 3 for A but 4 for B.
func.func @gemm_contraction(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) {
  // expected-error @+1 {{expected matching contraction dims, but got 3 and 4}}
  %0 = tx.gemm %a, %b {transB = true} : tensor<2x3xf32>, tensor<3x4xf32>
  return
}

// -----

// C broadcasts to [M, N] = [2, 4].
func.func @gemm_c_shape(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>, %c: tensor<3xf32>) {
  // expected-error @+1 {{expected C broadcastable to [2, 4], but got [3]}}
  %0 = tx.gemm %a, %b, %c : tensor<2x3xf32>, tensor<3x4xf32>, tensor<3xf32>
  return
}

// -----

// C broadcasts unidirectionally: a rank-3 C is rejected even with 1-sized dims.
func.func @gemm_c_rank(%a: tensor<1x3xf32>, %b: tensor<3x1xf32>, %c: tensor<1x1x1xf32>) {
  // expected-error @+1 {{expected C broadcastable to [1, 1], but got [1, 1, 1]}}
  %0 = tx.gemm %a, %b, %c : tensor<1x3xf32>, tensor<3x1xf32>, tensor<1x1x1xf32>
  return
}

// -----

// C has A's element type.
func.func @gemm_c_element_type(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>, %c: tensor<4xf16>) {
  // expected-error @+1 {{expected C element type 'f32', but got 'f16'}}
  %0 = tx.gemm %a, %b, %c : tensor<2x3xf32>, tensor<3x4xf32>, tensor<4xf16>
  return
}

//===----------------------------------------------------------------------===//
// Indexing and data movement
//===----------------------------------------------------------------------===//

// -----

// Gather's axis indexes data's dims.
func.func @gather_axis(%d: tensor<4x5xf32>, %i: tensor<3xi64>) {
  // expected-error @+1 {{expected axis in [-2, 2), but got -3}}
  %0 = tx.gather %d, %i {axis = -3} : tensor<4x5xf32>, tensor<3xi64>
  return
}

// -----

// GatherElements indices have data's rank.
func.func @gather_elements_rank(%d: tensor<4x5xf32>, %i: tensor<4xi64>) {
  // expected-error @+1 {{expected indices of rank 2, but got 1}}
  %0 = tx.gather_elements %d, %i : tensor<4x5xf32>, tensor<4xi64>
  return
}

// -----

// GatherElements' axis indexes data's dims.
func.func @gather_elements_axis(%d: tensor<4x5xf32>, %i: tensor<4x1xi64>) {
  // expected-error @+1 {{expected axis in [-2, 2), but got 2}}
  %0 = tx.gather_elements %d, %i {axis = 2} : tensor<4x5xf32>, tensor<4x1xi64>
  return
}

// -----

// Off the axis, indices may not be larger than data (out-of-bounds reads).
func.func @gather_elements_dims(%d: tensor<4x5xf32>, %i: tensor<6x1xi64>) {
  // expected-error @+1 {{expected indices dim 0 of at most 4, but got 6}}
  %0 = tx.gather_elements %d, %i {axis = 1} : tensor<4x5xf32>, tensor<6x1xi64>
  return
}

// -----

// Reshape keeps the element count.
func.func @reshape_count(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'tx.reshape' op expected 6 result elements, but got 8}}
  %0 = tx.reshape %a : tensor<2x3xf32> -> tensor<2x4xf32>
  return
}

// -----

// Reshape keeps the element type.
func.func @reshape_element_type(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'tx.reshape' op expected result element type 'f32', but got 'f16'}}
  %0 = tx.reshape %a : tensor<2x3xf32> -> tensor<6xf16>
  return
}

// -----

// Expand's result is the broadcast of the input shape.
func.func @expand_shape(%a: tensor<3x4xf32>) {
  // expected-error @+1 {{'tx.expand' op expected input shape [3, 4] to broadcast to [4]}}
  %0 = tx.expand %a : tensor<3x4xf32> -> tensor<4xf32>
  return
}

// -----

// Expand keeps the element type.
func.func @expand_element_type(%a: tensor<1x4xf32>) {
  // expected-error @+1 {{'tx.expand' op expected result element type 'f32', but got 'i32'}}
  %0 = tx.expand %a : tensor<1x4xf32> -> tensor<3x4xi32>
  return
}

// -----

// perm lists every dim.
func.func @transpose_perm_length(%a: tensor<2x3x4xf32>) {
  // expected-error @+1 {{expected a permutation of 3 dims, but got [1, 0]}}
  %0 = tx.transpose %a perm [1, 0] : tensor<2x3x4xf32>
  return
}

// -----

// perm lists each dim once.
func.func @transpose_perm_repeat(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{expected a permutation of 2 dims, but got [1, 1]}}
  %0 = tx.transpose %a perm [1, 1] : tensor<2x3xf32>
  return
}

// -----

// Split's axis indexes the input's dims.
func.func @split_axis(%a: tensor<4x6xf32>) {
  // expected-error @+1 {{'tx.split' op expected axis within rank 2, but got -3}}
  %0:2 = tx.split %a axis(-3) : tensor<4x6xf32> -> tensor<4x3xf32>, tensor<4x3xf32>
  return
}

// -----

// Split produces at least one piece.
func.func @split_no_results(%a: tensor<4x6xf32>) {
  // expected-error @+1 {{'tx.split' op expected at least one result}}
  "tx.split"(%a) <{axis = 0 : i64}> : (tensor<4x6xf32>) -> ()
  return
}

// -----

// Pieces keep the input's rank and element type.
func.func @split_result_type(%a: tensor<4x6xf32>) {
  // expected-error @+1 {{'tx.split' op expected result #1 of rank 2 and element type 'f32', but got 'tensor<4x3xf16>'}}
  %0:2 = tx.split %a axis(1) : tensor<4x6xf32> -> tensor<4x3xf32>, tensor<4x3xf16>
  return
}

// -----

// Pieces match the input off the split axis.
func.func @split_dims(%a: tensor<4x6xf32>) {
  // expected-error @+1 {{'tx.split' op expected result dim 0 to be 4, but got 2}}
  %0:2 = tx.split %a axis(1) : tensor<4x6xf32> -> tensor<4x3xf32>, tensor<2x3xf32>
  return
}

// -----

// Pieces cover the split axis exactly.
func.func @split_sum(%a: tensor<4x6xf32>) {
  // expected-error @+1 {{'tx.split' op expected the pieces to sum to 6 along axis 1, but got 5}}
  %0:2 = tx.split %a axis(1) : tensor<4x6xf32> -> tensor<4x3xf32>, tensor<4x2xf32>
  return
}

// -----

// Huge pieces must not overflow the sum.
func.func @split_sum_overflow(%a: tensor<4xf32>) {
  // expected-error @+1 {{'tx.split' op expected the pieces to sum to 4 along axis 0, but got more}}
  %0:2 = tx.split %a axis(0) : tensor<4xf32> -> tensor<9223372036854775807xf32>, tensor<9223372036854775807xf32>
  return
}

// -----

// starts, ends, axes and steps pair up.
func.func @slice_lengths(%a: tensor<4x6xf32>) {
  // expected-error @+1 {{expected starts, ends, axes and steps of one length, but got 1, 2, 1 and 1}}
  %0 = tx.slice %a starts [0] ends [1, 2] axes [0] steps [1] : tensor<4x6xf32>
  return
}

// -----

// Each axis is sliced at most once.
func.func @slice_axes_repeat(%a: tensor<4x6xf32>) {
  // expected-error @+1 {{expected distinct axes within rank 2, but got [0, -2]}}
  %0 = tx.slice %a starts [0, 0] ends [1, 1] axes [0, -2] steps [1, 1] : tensor<4x6xf32>
  return
}

// -----

// Axes index the input's dims.
func.func @slice_axes_range(%a: tensor<4x6xf32>) {
  // expected-error @+1 {{expected distinct axes within rank 2, but got [2]}}
  %0 = tx.slice %a starts [0] ends [1] axes [2] steps [1] : tensor<4x6xf32>
  return
}

// -----

// A zero step never advances.
func.func @slice_zero_step(%a: tensor<4x6xf32>) {
  // expected-error @+1 {{expected non-zero steps, but got [0]}}
  %0 = tx.slice %a starts [0] ends [1] axes [0] steps [0] : tensor<4x6xf32>
  return
}

// -----

// Concat needs an input to take the rank from.
func.func @concat_no_inputs() {
  // expected-error @+2 {{expected at least one input}}
  // expected-error @+1 {{'tx.concat' op failed to infer returned types}}
  %0 = "tx.concat"() <{axis = 0 : i64}> : () -> tensor<0xf32>
  return
}

// -----

// Concat's axis indexes the inputs' dims.
func.func @concat_axis(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{expected axis within rank 2, but got 2}}
  %0 = tx.concat %a, %a axis(2) : tensor<2x3xf32>, tensor<2x3xf32>
  return
}

// -----

// Inputs share rank and element type.
func.func @concat_element_type(%a: tensor<2x3xf32>, %b: tensor<2x3xf16>) {
  // expected-error @+1 {{expected inputs of one rank and element type, but got 'tensor<2x3xf32>' and 'tensor<2x3xf16>'}}
  %0 = tx.concat %a, %b axis(0) : tensor<2x3xf32>, tensor<2x3xf16>
  return
}

// -----

// Inputs agree off the concat axis.
func.func @concat_dims(%a: tensor<2x3xf32>, %b: tensor<2x4xf32>) {
  // expected-error @+1 {{expected inputs to agree on dim 1, but got [2, 3] and [2, 4]}}
  %0 = tx.concat %a, %b axis(0) : tensor<2x3xf32>, tensor<2x4xf32>
  return
}

// -----

// The concatenated dim must stay representable.
func.func @concat_overflow(%a: tensor<9223372036854775807xf32>) {
  // expected-error @+1 {{expected a concatenated dim that fits in 64 bits}}
  %0 = tx.concat %a, %a axis(0) : tensor<9223372036854775807xf32>, tensor<9223372036854775807xf32>
  return
}

// -----

// Squeeze's axes index the input's dims.
func.func @squeeze_axis_range(%a: tensor<4x1xf32>) {
  // expected-error @+1 {{expected axes within rank 2, but got 2}}
  %0 = tx.squeeze %a axes [2] : tensor<4x1xf32>
  return
}

// -----

// Only size-1 dims can be squeezed.
func.func @squeeze_non_1_dim(%a: tensor<4x1xf32>) {
  // expected-error @+1 {{expected dim 0 to be 1, but got 4}}
  %0 = tx.squeeze %a axes [0] : tensor<4x1xf32>
  return
}

// -----

// Unsqueeze positions index the result (rank 2 + 1 here) and are distinct.
func.func @unsqueeze_axes(%a: tensor<4x5xf32>) {
  // expected-error @+1 {{expected distinct axes within rank 3, but got [3]}}
  %0 = tx.unsqueeze %a axes [3] : tensor<4x5xf32>
  return
}

// -----

// Two pads (begin, end) per dim.
func.func @pad_length(%a: tensor<4x5xf32>) {
  // expected-error @+1 {{expected 4 pads, but got 2}}
  %0 = tx.pad %a pads [1, 1] value(0.0) : tensor<4x5xf32>
  return
}

// -----

// Negative pads crop, at most the whole dim: -3 and -2 remove 5 of 4.
func.func @pad_negative(%a: tensor<4x5xf32>) {
  // expected-error @+1 {{expected pads [-3, -2] to crop at most 4 elements of dim 0}}
  %0 = tx.pad %a pads [-3, 0, -2, 0] value(0.0) : tensor<4x5xf32>
  return
}

// -----

// Cropping past the dim is not undone by a positive pad on the other side.
func.func @pad_negative_overcrop(%a: tensor<4x5xf32>) {
  // expected-error @+1 {{expected pads [0, -6] to crop at most 5 elements of dim 1}}
  %0 = tx.pad %a pads [0, 0, 3, -6] value(0.0) : tensor<4x5xf32>
  return
}

// -----

// INT64_MIN pads must not overflow.
func.func @pad_int64_min(%a: tensor<4xf32>) {
  // expected-error @+1 {{expected pads [-9223372036854775808, 0] to crop at most 4 elements of dim 0}}
  %0 = tx.pad %a pads [-9223372036854775808, 0] value(0.0) : tensor<4xf32>
  return
}

// -----

// Huge positive pads must not overflow.
func.func @pad_overflow(%a: tensor<4xf32>) {
  // expected-error @+1 {{expected a padded dim 0 that fits in 64 bits, but got pads [9223372036854775807, 0]}}
  %0 = tx.pad %a pads [9223372036854775807, 0] value(0.0) : tensor<4xf32>
  return
}

// -----

// Reflect mirrors without the border element: at most dim - 1 per side.
func.func @pad_reflect_too_wide(%a: tensor<3x4xf32>) {
  // expected-error @+1 {{expected 'reflect' pads of at most 2 on dim 0, but got [3, 0]}}
  %0 = tx.pad %a pads [3, 0, 0, 0] value(0.0) {mode = #tx<pad_mode reflect>} : tensor<3x4xf32>
  return
}

// -----

// Edge repeats the border element, so the dim must not be empty.
func.func @pad_edge_empty_dim(%a: tensor<0x4xf32>) {
  // expected-error @+1 {{expected 'edge' pads of at most 0 on dim 0, but got [1, 1]}}
  %0 = tx.pad %a pads [1, 0, 1, 0] value(0.0) {mode = #tx<pad_mode edge>} : tensor<0x4xf32>
  return
}

// -----

// Wrap copies from the other side: at most dim (after cropping) per side.
func.func @pad_wrap_too_wide(%a: tensor<3x4xf32>) {
  // expected-error @+1 {{expected 'wrap' pads of at most 3 on dim 1, but got [-1, 5]}}
  %0 = tx.pad %a pads [0, -1, 0, 5] value(0.0) {mode = #tx<pad_mode wrap>} : tensor<3x4xf32>
  return
}

//===----------------------------------------------------------------------===//
// Reductions and normalization
//===----------------------------------------------------------------------===//

// -----

// Reduction axes are distinct and within the rank.
func.func @reduce_sum_axes_repeat(%a: tensor<4x5xf32>) {
  // expected-error @+1 {{expected distinct axes within rank 2, but got [1, -1]}}
  %0 = tx.reduce_sum %a axes [1, -1] : tensor<4x5xf32>
  return
}

// -----

// Reduction axes index the input's dims.
func.func @reduce_mean_axes_range(%a: tensor<4x5xf32>) {
  // expected-error @+1 {{expected distinct axes within rank 2, but got [2]}}
  %0 = tx.reduce_mean %a axes [2] keep_dims : tensor<4x5xf32>
  return
}

// -----

// Same check for reduce_max, with a negative axis.
func.func @reduce_max_axes_range(%a: tensor<4x5xf32>) {
  // expected-error @+1 {{expected distinct axes within rank 2, but got [-3]}}
  %0 = tx.reduce_max %a axes [-3] : tensor<4x5xf32>
  return
}

// -----

// Softmax's axis indexes the input's dims (negative values print signed).
func.func @softmax_axis(%a: tensor<4x5xf32>) {
  // expected-error @+1 {{'tx.softmax' op expected axis within rank 2, but got -3}}
  %0 = tx.softmax %a axis(-3) : tensor<4x5xf32>
  return
}

// -----

// LayerNormalization's axis indexes the input's dims.
func.func @layer_normalization_axis(%x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'tx.layer_normalization' op expected axis within rank 2, but got 2}}
  %0 = tx.layer_normalization %x, %g axis(2) eps(1.0e-05) : tensor<2x8xf32>, tensor<8xf32>
  return
}

// -----

// Scale broadcasts to the normalized dims ([8] here).
func.func @layer_normalization_scale_shape(%x: tensor<2x8xf32>, %g: tensor<2x8xf32>) {
  // expected-error @+1 {{'tx.layer_normalization' op expected scale shape broadcastable to [8], but got [2, 8]}}
  %0 = tx.layer_normalization %x, %g axis(-1) eps(1.0e-05) : tensor<2x8xf32>, tensor<2x8xf32>
  return
}

// -----

// Bias broadcasts to the normalized dims ([2, 8] for axis 0).
func.func @layer_normalization_bias_shape(%x: tensor<2x8xf32>, %g: tensor<8xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'tx.layer_normalization' op expected bias shape broadcastable to [2, 8], but got [4]}}
  %0 = tx.layer_normalization %x, %g, %b axis(0) eps(1.0e-05) : tensor<2x8xf32>, tensor<8xf32>, tensor<4xf32>
  return
}

// -----

// Scale has the input's element type.
func.func @layer_normalization_scale_type(%x: tensor<2x8xf32>, %g: tensor<8xf16>) {
  // expected-error @+1 {{'tx.layer_normalization' op expected scale element type 'f32', but got 'f16'}}
  %0 = tx.layer_normalization %x, %g axis(-1) eps(1.0e-05) : tensor<2x8xf32>, tensor<8xf16>
  return
}

// -----

// Bias has the input's element type.
func.func @layer_normalization_bias_type(%x: tensor<2x8xf32>, %g: tensor<8xf32>, %b: tensor<8xbf16>) {
  // expected-error @+1 {{'tx.layer_normalization' op expected bias element type 'f32', but got 'bf16'}}
  %0 = tx.layer_normalization %x, %g, %b axis(-1) eps(1.0e-05) : tensor<2x8xf32>, tensor<8xf32>, tensor<8xbf16>
  return
}

// -----

// Epsilon is added to the variance.
func.func @layer_normalization_negative_epsilon(%x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'tx.layer_normalization' op expected a non-negative epsilon, but got -1.000000e-05}}
  %0 = tx.layer_normalization %x, %g axis(-1) eps(-1.0e-05) : tensor<2x8xf32>, tensor<8xf32>
  return
}

// -----

// NaN is not a non-negative epsilon either.
func.func @rms_normalization_nan_epsilon(%x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'tx.rms_normalization' op expected a non-negative epsilon, but got nan}}
  %0 = tx.rms_normalization %x, %g axis(-1) eps(0x7FC00000) : tensor<2x8xf32>, tensor<8xf32>
  return
}

// -----

// RMSNormalization's epsilon is checked too.
func.func @rms_normalization_negative_epsilon(%x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'tx.rms_normalization' op expected a non-negative epsilon, but got -1.000000e+00}}
  %0 = tx.rms_normalization %x, %g axis(-1) eps(-1.0) : tensor<2x8xf32>, tensor<8xf32>
  return
}

// -----

// RMSNormalization's axis indexes the input's dims.
func.func @rms_normalization_axis(%x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'tx.rms_normalization' op expected axis within rank 2, but got -3}}
  %0 = tx.rms_normalization %x, %g axis(-3) eps(1.0e-06) : tensor<2x8xf32>, tensor<8xf32>
  return
}

// -----

// RMSNormalization's scale broadcasts to the normalized dims.
func.func @rms_normalization_scale_shape(%x: tensor<2x8xf32>, %g: tensor<4xf32>) {
  // expected-error @+1 {{'tx.rms_normalization' op expected scale shape broadcastable to [8], but got [4]}}
  %0 = tx.rms_normalization %x, %g axis(-1) eps(1.0e-06) : tensor<2x8xf32>, tensor<4xf32>
  return
}

// -----

// RMSNormalization's scale has the input's element type.
func.func @rms_normalization_scale_type(%x: tensor<2x8xbf16>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'tx.rms_normalization' op expected scale element type 'bf16', but got 'f32'}}
  %0 = tx.rms_normalization %x, %g axis(-1) eps(1.0e-06) : tensor<2x8xbf16>, tensor<8xf32>
  return
}

//===----------------------------------------------------------------------===//
// Loss and regularization
//===----------------------------------------------------------------------===//

// -----

// Scores are [N, C, ...].
func.func @softmax_cross_entropy_loss_rank(%s: tensor<8xf32>, %l: tensor<8xi64>) {
  // expected-error @+1 {{expected scores of rank at least 2, but got [8]}}
  %0 = tx.softmax_cross_entropy_loss %s, %l reduction(mean) : tensor<8xf32>, tensor<8xi64>
  return
}

// -----

// Labels are [N, d1, ...]: scores without the class dim.
func.func @softmax_cross_entropy_loss_labels(%s: tensor<8x10x4xf32>, %l: tensor<8x10xi64>) {
  // expected-error @+1 {{expected labels shape [8, 4], but got [8, 10]}}
  %0 = tx.softmax_cross_entropy_loss %s, %l reduction(none) : tensor<8x10x4xf32>, tensor<8x10xi64>
  return
}

// -----

// Weights hold one value per class.
func.func @softmax_cross_entropy_loss_weights_shape(%s: tensor<8x10xf32>, %l: tensor<8xi64>, %w: tensor<8xf32>) {
  // expected-error @+1 {{expected weights shape [10], but got [8]}}
  %0 = tx.softmax_cross_entropy_loss %s, %l, %w reduction(sum) : tensor<8x10xf32>, tensor<8xi64>, tensor<8xf32>
  return
}

// -----

// Weights have the scores' element type.
func.func @softmax_cross_entropy_loss_weights_type(%s: tensor<8x10xf32>, %l: tensor<8xi64>, %w: tensor<10xf16>) {
  // expected-error @+1 {{expected weights element type 'f32', but got 'f16'}}
  %0 = tx.softmax_cross_entropy_loss %s, %l, %w reduction(mean) : tensor<8x10xf32>, tensor<8xi64>, tensor<10xf16>
  return
}

// -----

// A ratio of 1 would divide by zero.
func.func @dropout_ratio_one(%x: tensor<4xf32>) {
  %k = tx.constant dense<0> : tensor<i64>
  // expected-error @+1 {{'tx.dropout' op expected ratio in [0, 1), but got 1.000000e+00}}
  %0 = tx.dropout %x, %k ratio(1.0) seed(0) : tensor<4xf32>
  return
}

// -----

// A negative ratio is not a probability.
func.func @dropout_ratio_negative(%x: tensor<4xf32>) {
  %k = tx.constant dense<0> : tensor<i64>
  // expected-error @+1 {{'tx.dropout' op expected ratio in [0, 1), but got -1.000000e-01}}
  %0 = tx.dropout %x, %k ratio(-0.1) seed(0) : tensor<4xf32>
  return
}

// -----

// The key is one i64 (a step's rng_key): not a tensor of keys.
func.func @dropout_key_not_scalar(%x: tensor<4xf32>, %k: tensor<2xi64>) {
  // expected-error @+1 {{'tx.dropout' op operand #1 must be 0D tensor of 64-bit signless integer values, but got 'tensor<2xi64>'}}
  %0 = "tx.dropout"(%x, %k) <{ratio = 1.0e-01 : f32, seed = 0 : i64}> : (tensor<4xf32>, tensor<2xi64>) -> tensor<4xf32>
  return
}

// -----

// Nor a narrower integer: the mask formula is defined on 64 bits.
func.func @dropout_key_i32(%x: tensor<4xf32>, %k: tensor<i32>) {
  // expected-error @+1 {{'tx.dropout' op operand #1 must be 0D tensor of 64-bit signless integer values, but got 'tensor<i32>'}}
  %0 = "tx.dropout"(%x, %k) <{ratio = 1.0e-01 : f32, seed = 0 : i64}> : (tensor<4xf32>, tensor<i32>) -> tensor<4xf32>
  return
}

// -----

// The result has the input's type (the key's is another).
func.func @dropout_result_type(%x: tensor<4xf32>, %k: tensor<i64>) {
  // expected-error @+1 {{'tx.dropout' op failed to verify that all of {input, result} have same type}}
  %0 = "tx.dropout"(%x, %k) <{ratio = 1.0e-01 : f32, seed = 0 : i64}> : (tensor<4xf32>, tensor<i64>) -> tensor<4xf16>
  return
}
