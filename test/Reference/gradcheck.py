#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Numerical gradient checks for tx-differentiate.

Two suites, both evaluated by the CPU reference executor in f64
(`txopt-run --f64`) and compared with central finite differences:

  rules   For every gradient rule, a tiny tx function (built below from a
          template, with seeded random inputs and a seeded random weighting
          of the rule's output, so that every output element matters):
            loss = reduce_sum(body(args, params) * W)
          It is differentiated with `tx-differentiate=wrt=all` and the
          `_grad` function's gradients are compared, entry by entry, with
              fd = (L(x + h e_i) - L(x - h e_i)) / (2h),  h = 1e-6 max(1, |x_i|)
          where L is the `_grad` function's own loss (result #0).
  models  Real exports (nanoGPT, Llama, GPT-2) imported with
          `txopt MODEL --emit=tx`, differentiated with respect to their
          parameters, and a seeded sample of parameter-gradient entries
          compared the same way. The parameter values are the model's
          initial values, read from the module with a generated helper
          function; perturbed values are passed as the `_grad` function's
          parameter arguments (f32 arguments: the step actually taken,
          fl(x + h) - fl(x - h), is used as the denominator).

An entry passes when |ad - fd| <= TOL * max(1, |fd|) (TOL = 1e-6 by
default): absolute below 1, relative above. The script prints the seed, one
line per rule / model with its largest error, and a summary; it exits 1 when
any check fails.

Usage (see test/Reference/gradcheck.test):
  gradcheck.py --txopt-opt BIN/txopt-opt [--txopt-run BIN/txopt-run]
               [--txopt BIN/txopt] [--suite rules|models|all] [--seed S]
               [--only NAME[,NAME..]] [--samples N] [--work DIR] [--jobs N]
"""

import argparse
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

TOL = 1e-6
REL_STEP = 1e-6


# ---------------------------------------------------------------------------
# Rule cases
# ---------------------------------------------------------------------------

def ttype(shape, elem="f64"):
    return "tensor<" + "".join(f"{d}x" for d in shape) + elem + ">"


class Case:
    """A tiny function exercising one or more gradient rules.

    args:   [(shape, domain)] f64 function arguments %a0, %a1, ...
    params: [(name, shape, domain, frozen)] tx.parameter declarations, read
            in the body with tx.load_parameter.
    body:   MLIR text defining %y of type `y`.
    """

    def __init__(self, name, rules, args, body, y, params=(), optional=None):
        self.name = name
        self.rules = rules
        self.args = list(args)
        self.params = list(params)
        self.body = body
        self.y = y
        # Why the case may be skipped when the executor cannot run it.
        self.optional = optional


def y_shape(ytype):
    dims = ytype[len("tensor<"):-1].split("x")[:-1]
    return tuple(int(d) for d in dims)


def A(*shape, domain="normal"):
    return (tuple(shape), domain)


T = ttype
CASES = [
    # --- elementwise arithmetic, broadcasting -------------------------------
    Case("add_broadcast", ["add"], [A(2, 3), A(3)], f"""
    %y = tx.add %a0, %a1 : {T((2,3))}, {T((3,))}""", T((2, 3))),
    Case("sub_broadcast_both", ["sub"], [A(2, 1, 3), A(4, 1)], f"""
    %y = tx.sub %a0, %a1 : {T((2,1,3))}, {T((4,1))}""", T((2, 4, 3))),
    Case("mul_broadcast", ["mul"], [A(2, 3), A(2, 1)], f"""
    %y = tx.mul %a0, %a1 : {T((2,3))}, {T((2,1))}""", T((2, 3))),
    Case("mul_same_value", ["mul", "summing"], [A(2, 3)], f"""
    %y = tx.mul %a0, %a0 : {T((2,3))}, {T((2,3))}""", T((2, 3))),
    Case("div_broadcast", ["div"], [A(2, 3), A(3, domain="away0")], f"""
    %y = tx.div %a0, %a1 : {T((2,3))}, {T((3,))}""", T((2, 3))),
    Case("div_scalar_rhs", ["div"], [A(2, 3), A(domain="away0")], f"""
    %y = tx.div %a0, %a1 : {T((2,3))}, {T(())}""", T((2, 3))),
    Case("pow_const_two", ["pow"], [A(2, 3)], f"""
    %e = tx.constant dense<2.0> : {T(())}
    %y = tx.pow %a0, %e : {T((2,3))}, {T(())}""", T((2, 3))),
    Case("pow_const_fraction", ["pow"], [A(2, 3, domain="pos")], f"""
    %e = tx.constant dense<-0.5> : {T((1,))}
    %y = tx.pow %a0, %e : {T((2,3))}, {T((1,))}""", T((2, 3))),
    Case("pow_int_exponent", ["pow"], [A(2, 3)], f"""
    %e = tx.constant dense<[1, 2, 3]> : {T((3,), 'i64')}
    %y = tx.pow %a0, %e : {T((2,3))}, {T((3,), 'i64')}""", T((2, 3))),
    Case("pow_var_exponent", ["pow"], [A(2, 3, domain="pos"), A(3)], f"""
    %y = tx.pow %a0, %a1 : {T((2,3))}, {T((3,))}""", T((2, 3))),
    Case("max_broadcast", ["max"], [A(2, 3), A(3)], f"""
    %y = tx.max %a0, %a1 : {T((2,3))}, {T((3,))}""", T((2, 3))),
    Case("min_broadcast_both", ["min"], [A(2, 1, 3), A(4, 1)], f"""
    %y = tx.min %a0, %a1 : {T((2,1,3))}, {T((4,1))}""", T((2, 4, 3))),
    # Every element ties: each operand gets half of g, together g.
    Case("max_same_value", ["max", "summing"], [A(2, 3)], f"""
    %y = tx.max %a0, %a0 : {T((2,3))}, {T((2,3))}""", T((2, 3))),
    Case("min_clamp_constant", ["min"], [A(3, 4)], f"""
    %c = tx.constant dense<[0.25, -0.5, 2.0, 0.0]> : {T((4,))}
    %y = tx.min %a0, %c : {T((3,4))}, {T((4,))}""", T((3, 4))),
    Case("where_broadcast", ["where"], [A(2, 3), A(3)], f"""
    %c = tx.constant dense<[[true, false, true], [false, false, true]]> : {T((2,3), 'i1')}
    %y = tx.where %c, %a0, %a1 : {T((2,3), 'i1')}, {T((2,3))}, {T((3,))}""",
         T((2, 3))),
    Case("where_cond_broadcast", ["where"], [A(2, 3), A(2, 1)], f"""
    %c = tx.constant dense<[true, false, true]> : {T((3,), 'i1')}
    %y = tx.where %c, %a0, %a1 : {T((3,), 'i1')}, {T((2,3))}, {T((2,1))}""",
         T((2, 3))),
    # --- elementwise unary ---------------------------------------------------
    Case("sqrt", ["sqrt"], [A(2, 3, domain="pos")], f"""
    %y = tx.sqrt %a0 : {T((2,3))}""", T((2, 3))),
    Case("reciprocal", ["reciprocal"], [A(2, 3, domain="away0")], f"""
    %y = tx.reciprocal %a0 : {T((2,3))}""", T((2, 3))),
    Case("neg", ["neg"], [A(2, 3)], f"""
    %y = tx.neg %a0 : {T((2,3))}""", T((2, 3))),
    Case("erf", ["erf"], [A(2, 3)], f"""
    %y = tx.erf %a0 : {T((2,3))}""", T((2, 3))),
    Case("tanh", ["tanh"], [A(2, 3)], f"""
    %y = tx.tanh %a0 : {T((2,3))}""", T((2, 3))),
    Case("sigmoid", ["sigmoid"], [A(2, 3)], f"""
    %y = tx.sigmoid %a0 : {T((2,3))}""", T((2, 3))),
    Case("relu", ["relu"], [A(3, 4, domain="away0")], f"""
    %y = tx.relu %a0 : {T((3,4))}""", T((3, 4))),
    Case("exp", ["exp"], [A(2, 3)], f"""
    %y = tx.exp %a0 : {T((2,3))}""", T((2, 3))),
    Case("log", ["log"], [A(2, 3, domain="pos")], f"""
    %y = tx.log %a0 : {T((2,3))}""", T((2, 3))),
    Case("sin", ["sin"], [A(2, 3)], f"""
    %y = tx.sin %a0 : {T((2,3))}""", T((2, 3))),
    Case("cos", ["cos"], [A(2, 3)], f"""
    %y = tx.cos %a0 : {T((2,3))}""", T((2, 3))),
    Case("identity", ["identity"], [A(2, 3)], f"""
    %y = tx.identity %a0 : {T((2,3))}""", T((2, 3))),
    Case("cast_f32_roundtrip", ["cast"], [A(2, 3)], f"""
    %c = tx.cast %a0 : {T((2,3))} to {T((2,3), 'f32')}
    %s = tx.sin %c : {T((2,3), 'f32')}
    %y = tx.cast %s : {T((2,3), 'f32')} to {T((2,3))}""", T((2, 3))),
    Case("trilu_lower", ["trilu"], [A(2, 3, 4)], f"""
    %y = tx.trilu %a0 {{upper = false, k = 0 : i64}} : {T((2,3,4))}""",
         T((2, 3, 4))),
    Case("trilu_upper_k1", ["trilu"], [A(4, 3)], f"""
    %y = tx.trilu %a0 {{upper = true, k = 1 : i64}} : {T((4,3))}""", T((4, 3))),
    Case("dropout", ["dropout"], [A(4, 5)], f"""
    %k = tx.constant dense<5> : tensor<i64>
    %y = tx.dropout %a0, %k ratio(0.3) seed(7) : {T((4,5))}""", T((4, 5))),
    # --- linear algebra ------------------------------------------------------
    Case("matmul_2d", ["matmul"], [A(3, 4), A(4, 5)], f"""
    %y = tx.matmul %a0, %a1 : {T((3,4))}, {T((4,5))}""", T((3, 5))),
    Case("matmul_batch_broadcast", ["matmul"], [A(2, 1, 3, 4), A(3, 4, 2)], f"""
    %y = tx.matmul %a0, %a1 : {T((2,1,3,4))}, {T((3,4,2))}""", T((2, 3, 3, 2))),
    Case("matmul_linear_layer", ["matmul"], [A(2, 3, 4), A(4, 5)], f"""
    %y = tx.matmul %a0, %a1 : {T((2,3,4))}, {T((4,5))}""", T((2, 3, 5))),
    Case("matmul_batched_lhs_2d", ["matmul"], [A(3, 4), A(2, 4, 5)], f"""
    %y = tx.matmul %a0, %a1 : {T((3,4))}, {T((2,4,5))}""", T((2, 3, 5))),
    Case("matmul_vector_lhs", ["matmul"], [A(4), A(2, 4, 3)], f"""
    %y = tx.matmul %a0, %a1 : {T((4,))}, {T((2,4,3))}""", T((2, 3))),
    Case("matmul_vector_rhs", ["matmul"], [A(2, 3, 4), A(4)], f"""
    %y = tx.matmul %a0, %a1 : {T((2,3,4))}, {T((4,))}""", T((2, 3))),
    Case("matmul_vector_vector", ["matmul"], [A(4), A(4)], f"""
    %y = tx.matmul %a0, %a1 : {T((4,))}, {T((4,))}""", T(())),
    Case("gemm_bias", ["gemm"], [A(3, 4), A(4, 5), A(5)], f"""
    %y = tx.gemm %a0, %a1, %a2 {{alpha = 0.75 : f32, beta = 1.25 : f32}} : {T((3,4))}, {T((4,5))}, {T((5,))}""",
         T((3, 5))),
    Case("gemm_trans_a_b_column_c", ["gemm"], [A(4, 3), A(5, 4), A(3, 1)], f"""
    %y = tx.gemm %a0, %a1, %a2 {{transA = true, transB = true, alpha = -0.5 : f32}} : {T((4,3))}, {T((5,4))}, {T((3,1))}""",
         T((3, 5))),
    Case("gemm_trans_b_no_c", ["gemm"], [A(3, 4), A(5, 4)], f"""
    %y = tx.gemm %a0, %a1 {{transB = true}} : {T((3,4))}, {T((5,4))}""", T((3, 5))),
    Case("gemm_trans_a_full_c", ["gemm"], [A(4, 3), A(4, 5), A(3, 5)], f"""
    %y = tx.gemm %a0, %a1, %a2 {{transA = true, beta = 0.5 : f32}} : {T((4,3))}, {T((4,5))}, {T((3,5))}""",
         T((3, 5))),
    # --- indexing and data movement -----------------------------------------
    Case("gather_embedding", ["gather"], [A(5, 3)], f"""
    %i = tx.constant dense<[[0, 2], [2, -1]]> : {T((2,2), 'i64')}
    %y = tx.gather %a0, %i {{axis = 0 : i64}} : {T((5,3))}, {T((2,2), 'i64')}""",
         T((2, 2, 3))),
    Case("gather_inner_axis", ["gather"], [A(2, 4, 3)], f"""
    %i = tx.constant dense<[3, 0, 3]> : {T((3,), 'i32')}
    %y = tx.gather %a0, %i {{axis = -2 : i64}} : {T((2,4,3))}, {T((3,), 'i32')}""",
         T((2, 3, 3))),
    Case("gather_scalar_index", ["gather"], [A(2, 4, 3)], f"""
    %i = tx.constant dense<1> : {T((), 'i64')}
    %y = tx.gather %a0, %i {{axis = 1 : i64}} : {T((2,4,3))}, {T((), 'i64')}""",
         T((2, 3))),
    Case("gather_elements", ["gather_elements"], [A(3, 4)], f"""
    %i = tx.constant dense<[[0, 3], [1, 1], [-1, 2]]> : {T((3,2), 'i64')}
    %y = tx.gather_elements %a0, %i {{axis = 1 : i64}} : {T((3,4))}, {T((3,2), 'i64')}""",
         T((3, 2))),
    Case("gather_elements_axis0_smaller", ["gather_elements"], [A(3, 4)], f"""
    %i = tx.constant dense<[[2, 0, 2], [0, 0, 1]]> : {T((2,3), 'i64')}
    %y = tx.gather_elements %a0, %i {{axis = 0 : i64}} : {T((3,4))}, {T((2,3), 'i64')}""",
         T((2, 3))),
    Case("gather_nd_elements", ["gather_nd"], [A(3, 4)], f"""
    %i = tx.constant dense<[[[0, 1], [2, -1]], [[0, 1], [-3, 0]]]> : {T((2,2,2), 'i64')}
    %y = tx.gather_nd %a0, %i : {T((3,4))}, {T((2,2,2), 'i64')}""", T((2, 2))),
    Case("gather_nd_rows", ["gather_nd"], [A(4, 3)], f"""
    %i = tx.constant dense<[[3], [1], [3]]> : {T((3,1), 'i32')}
    %y = tx.gather_nd %a0, %i : {T((4,3))}, {T((3,1), 'i32')}""", T((3, 3))),
    Case("gather_nd_batch_dims", ["gather_nd"], [A(2, 3, 4)], f"""
    %i = tx.constant dense<[[[2], [0], [2]], [[1], [1], [-1]]]> : {T((2,3,1), 'i64')}
    %y = tx.gather_nd %a0, %i {{batch_dims = 1 : i64}} : {T((2,3,4))}, {T((2,3,1), 'i64')}""",
         T((2, 3, 4))),
    Case("reshape", ["reshape"], [A(2, 3, 4)], f"""
    %y = tx.reshape %a0 : {T((2,3,4))} -> {T((6,4))}""", T((6, 4))),
    Case("squeeze", ["squeeze"], [A(2, 1, 3)], f"""
    %y = tx.squeeze %a0 axes [1] : {T((2,1,3))}""", T((2, 3))),
    Case("unsqueeze", ["unsqueeze"], [A(2, 3)], f"""
    %y = tx.unsqueeze %a0 axes [0, 2] : {T((2,3))}""", T((1, 2, 1, 3))),
    Case("transpose", ["transpose"], [A(2, 3, 4)], f"""
    %y = tx.transpose %a0 perm [2, 0, 1] : {T((2,3,4))}""", T((4, 2, 3))),
    Case("expand", ["expand"], [A(3, 1)], f"""
    %y = tx.expand %a0 : {T((3,1))} -> {T((2,3,4))}""", T((2, 3, 4))),
    Case("slice_unit_steps", ["slice"], [A(4, 5)], f"""
    %y = tx.slice %a0 starts [1, 0] ends [3, -1] axes [0, 1] steps [1, 1] : {T((4,5))}""",
         T((2, 4))),
    Case("slice_strided", ["slice"], [A(3, 7)], f"""
    %y = tx.slice %a0 starts [1] ends [9223372036854775807] axes [-1] steps [2] : {T((3,7))}""",
         T((3, 3))),
    Case("slice_negative_step", ["slice"], [A(3, 5)], f"""
    %y = tx.slice %a0 starts [-1, 2] ends [-9223372036854775808, 0] axes [1, 0] steps [-2, -1] : {T((3,5))}""",
         T((2, 3))),
    Case("concat_reuse", ["concat", "summing"], [A(2, 3), A(2, 2)], f"""
    %y = tx.concat %a0, %a1, %a0 axis(-1) : {T((2,3))}, {T((2,2))}, {T((2,3))}""",
         T((2, 8))),
    Case("split_unused_piece", ["split"], [A(2, 6)], f"""
    %p0, %p1, %p2 = tx.split %a0 axis(1) : {T((2,6))} -> {T((2,1))}, {T((2,2))}, {T((2,3))}
    %y = tx.mul %p2, %p0 : {T((2,3))}, {T((2,1))}""", T((2, 3))),
    Case("pad_constant", ["pad"], [A(3, 4)], f"""
    %y = tx.pad %a0 pads [1, 0, 2, 1] value(0.5) : {T((3,4))}""", T((6, 5))),
    Case("pad_negative_crop", ["pad"], [A(3, 4)], f"""
    %y = tx.pad %a0 pads [-1, 2, 0, -1] value(0.0) : {T((3,4))}""", T((2, 5))),
    # --- reductions ----------------------------------------------------------
    Case("reduce_sum_keep", ["reduce_sum"], [A(2, 3, 4)], f"""
    %y = tx.reduce_sum %a0 axes [1] keep_dims : {T((2,3,4))}""", T((2, 1, 4))),
    Case("reduce_sum_all", ["reduce_sum"], [A(2, 3)], f"""
    %y = tx.reduce_sum %a0 axes [] : {T((2,3))}""", T(())),
    Case("reduce_mean_two_axes", ["reduce_mean"], [A(2, 3, 4)], f"""
    %y = tx.reduce_mean %a0 axes [0, -1] : {T((2,3,4))}""", T((3,))),
    Case("reduce_max", ["reduce_max"], [A(2, 5, 3)], f"""
    %y = tx.reduce_max %a0 axes [1] : {T((2,5,3))}""", T((2, 3))),
    Case("reduce_max_keep_all", ["reduce_max"], [A(3, 4)], f"""
    %y = tx.reduce_max %a0 axes [] keep_dims : {T((3,4))}""", T((1, 1))),
    # --- scans ---------------------------------------------------------------
    Case("cum_sum", ["cum_sum"], [A(3, 4)], f"""
    %y = tx.cum_sum %a0 axis(1) : {T((3,4))}""", T((3, 4))),
    Case("cum_sum_exclusive", ["cum_sum"], [A(3, 4)], f"""
    %y = tx.cum_sum %a0 axis(-1) exclusive : {T((3,4))}""", T((3, 4))),
    Case("cum_sum_reverse", ["cum_sum"], [A(3, 4)], f"""
    %y = tx.cum_sum %a0 axis(0) reverse : {T((3,4))}""", T((3, 4))),
    Case("cum_sum_exclusive_reverse", ["cum_sum"], [A(2, 5, 3)], f"""
    %y = tx.cum_sum %a0 axis(1) exclusive reverse : {T((2,5,3))}""", T((2, 5, 3))),
    # --- softmax, norms, loss ------------------------------------------------
    Case("softmax_inner_axis", ["softmax"], [A(2, 4, 3)], f"""
    %y = tx.softmax %a0 axis(1) : {T((2,4,3))}""", T((2, 4, 3))),
    Case("layer_normalization", ["layer_normalization"],
         [A(2, 3, 5), A(5), A(5)], f"""
    %y = tx.layer_normalization %a0, %a1, %a2 axis(-1) eps(1.0e-05) : {T((2,3,5))}, {T((5,))}, {T((5,))}""",
         T((2, 3, 5))),
    Case("layer_normalization_two_dims", ["layer_normalization"],
         [A(2, 3, 4), A(3, 4)], f"""
    %y = tx.layer_normalization %a0, %a1 axis(1) eps(0.1) : {T((2,3,4))}, {T((3,4))}""",
         T((2, 3, 4))),
    Case("layer_normalization_f32", ["layer_normalization", "cast"],
         [A(2, 5), A(5), A(5)], f"""
    %x = tx.cast %a0 : {T((2,5))} to {T((2,5), 'f32')}
    %g = tx.cast %a1 : {T((5,))} to {T((5,), 'f32')}
    %b = tx.cast %a2 : {T((5,))} to {T((5,), 'f32')}
    %n = tx.layer_normalization %x, %g, %b axis(-1) eps(1.0e-05) : {T((2,5), 'f32')}, {T((5,), 'f32')}, {T((5,), 'f32')}
    %y = tx.cast %n : {T((2,5), 'f32')} to {T((2,5))}""", T((2, 5))),
    Case("layer_normalization_f32_no_bias", ["layer_normalization", "cast"],
         [A(3, 4), A(4)], f"""
    %x = tx.cast %a0 : {T((3,4))} to {T((3,4), 'f32')}
    %g = tx.cast %a1 : {T((4,))} to {T((4,), 'f32')}
    %n = tx.layer_normalization %x, %g axis(1) eps(1.0e-05) : {T((3,4), 'f32')}, {T((4,), 'f32')}
    %y = tx.cast %n : {T((3,4), 'f32')} to {T((3,4))}""", T((3, 4))),
    Case("rms_normalization_f32", ["rms_normalization", "cast"],
         [A(2, 3, 5), A(5)], f"""
    %x = tx.cast %a0 : {T((2,3,5))} to {T((2,3,5), 'f32')}
    %g = tx.cast %a1 : {T((5,))} to {T((5,), 'f32')}
    %n = tx.rms_normalization %x, %g axis(-1) eps(1.0e-06) : {T((2,3,5), 'f32')}, {T((5,), 'f32')}
    %y = tx.cast %n : {T((2,3,5), 'f32')} to {T((2,3,5))}""", T((2, 3, 5))),
    Case("rms_normalization", ["rms_normalization"], [A(2, 3, 5), A(5)], f"""
    %y = tx.rms_normalization %a0, %a1 axis(-1) eps(1.0e-06) : {T((2,3,5))}, {T((5,))}""",
         T((2, 3, 5))),
    Case("rms_normalization_two_dims", ["rms_normalization"],
         [A(2, 3, 4), A(4)], f"""
    %y = tx.rms_normalization %a0, %a1 axis(1) eps(0.01) : {T((2,3,4))}, {T((4,))}""",
         T((2, 3, 4))),
    Case("cross_entropy_mean_ignore", ["softmax_cross_entropy_loss"], [A(4, 5)], f"""
    %l = tx.constant dense<[1, -100, 4, 0]> : {T((4,), 'i64')}
    %y = tx.softmax_cross_entropy_loss %a0, %l reduction(mean) {{ignore_index = -100 : i64}} : {T((4,5))}, {T((4,), 'i64')}""",
         T(())),
    Case("cross_entropy_sum_weighted", ["softmax_cross_entropy_loss"], [A(4, 5)], f"""
    %l = tx.constant dense<[1, 3, 4, 1]> : {T((4,), 'i32')}
    %w = tx.constant dense<[0.5, 2.0, 1.0, 0.25, 1.5]> : {T((5,))}
    %y = tx.softmax_cross_entropy_loss %a0, %l, %w reduction(sum) : {T((4,5))}, {T((4,), 'i32')}, {T((5,))}""",
         T(())),
    Case("cross_entropy_mean_weighted_spatial", ["softmax_cross_entropy_loss"],
         [A(2, 4, 3)], f"""
    %l = tx.constant dense<[[0, 3, 2], [2, 1, 2]]> : {T((2,3), 'i64')}
    %w = tx.constant dense<[0.5, 2.0, 1.0, 0.25]> : {T((4,))}
    %y = tx.softmax_cross_entropy_loss %a0, %l, %w reduction(mean) {{ignore_index = 1 : i64}} : {T((2,4,3))}, {T((2,3), 'i64')}, {T((4,))}""",
         T(())),
    Case("cross_entropy_none", ["softmax_cross_entropy_loss"], [A(3, 4)], f"""
    %l = tx.constant dense<[2, 0, 3]> : {T((3,), 'i64')}
    %y = tx.softmax_cross_entropy_loss %a0, %l reduction(none) : {T((3,4))}, {T((3,), 'i64')}""",
         T((3,))),
    # --- fused norms (the executor kernels belong to lib/Reference) ---------
    Case("layer_norm_fused", ["layer_norm"], [A(2, 3, 5), A(5), A(5)], f"""
    %x = tx.cast %a0 : {T((2,3,5))} to {T((2,3,5), 'f32')}
    %g = tx.cast %a1 : {T((5,))} to {T((5,), 'f32')}
    %b = tx.cast %a2 : {T((5,))} to {T((5,), 'f32')}
    %n, %mean, %rstd = tx.layer_norm %x, %g, %b eps(1.0e-05) : {T((2,3,5), 'f32')}, {T((5,), 'f32')}, {T((5,), 'f32')}
    %y = tx.cast %n : {T((2,3,5), 'f32')} to {T((2,3,5))}""", T((2, 3, 5)),
         optional="tx.layer_norm / tx.layer_norm_grad kernels"),
    Case("rms_norm_fused", ["rms_norm"], [A(2, 3, 5), A(5)], f"""
    %x = tx.cast %a0 : {T((2,3,5))} to {T((2,3,5), 'f32')}
    %g = tx.cast %a1 : {T((5,))} to {T((5,), 'f32')}
    %n, %rstd = tx.rms_norm %x, %g eps(1.0e-06) : {T((2,3,5), 'f32')}, {T((5,), 'f32')}
    %y = tx.cast %n : {T((2,3,5), 'f32')} to {T((2,3,5))}""", T((2, 3, 5)),
         optional="tx.rms_norm / tx.rms_norm_grad kernels"),
    # --- fused attention (tx.attention / tx.attention_grad) ----------------
    # Grouped-query (2 query heads on 1 kv head), causal, Dv != D.
    Case("attention_gqa_causal", ["attention"], [A(2, 2, 3, 4), A(2, 1, 3, 4), A(2, 1, 3, 5)], f"""
    %q = tx.cast %a0 : {T((2,2,3,4))} to {T((2,2,3,4), 'f32')}
    %k = tx.cast %a1 : {T((2,1,3,4))} to {T((2,1,3,4), 'f32')}
    %v = tx.cast %a2 : {T((2,1,3,5))} to {T((2,1,3,5), 'f32')}
    %o, %lse = tx.attention %q, %k, %v scale(0.5) causal : {T((2,2,3,4), 'f32')}, {T((2,1,3,4), 'f32')}, {T((2,1,3,5), 'f32')}
    %y = tx.cast %o : {T((2,2,3,5), 'f32')} to {T((2,2,3,5))}""", T((2, 2, 3, 5)),
         optional="tx.attention / tx.attention_grad kernels"),
    # A sliding window, Tq != Tk.
    Case("attention_window", ["attention"], [A(1, 2, 4, 3), A(1, 2, 4, 3), A(1, 2, 4, 3)], f"""
    %q = tx.cast %a0 : {T((1,2,4,3))} to {T((1,2,4,3), 'f32')}
    %k = tx.cast %a1 : {T((1,2,4,3))} to {T((1,2,4,3), 'f32')}
    %v = tx.cast %a2 : {T((1,2,4,3))} to {T((1,2,4,3), 'f32')}
    %o, %lse = tx.attention %q, %k, %v scale(0.7) causal window(2) : {T((1,2,4,3), 'f32')}, {T((1,2,4,3), 'f32')}, {T((1,2,4,3), 'f32')}
    %y = tx.cast %o : {T((1,2,4,3), 'f32')} to {T((1,2,4,3))}""", T((1, 2, 4, 3)),
         optional="tx.attention / tx.attention_grad kernels"),
    # A constant additive mask broadcast over batch and heads (one key of the
    # second query masked with -inf), not causal.
    Case("attention_mask", ["attention"], [A(2, 1, 2, 3), A(2, 1, 3, 3), A(2, 1, 3, 2)], f"""
    %q = tx.cast %a0 : {T((2,1,2,3))} to {T((2,1,2,3), 'f32')}
    %k = tx.cast %a1 : {T((2,1,3,3))} to {T((2,1,3,3), 'f32')}
    %v = tx.cast %a2 : {T((2,1,3,2))} to {T((2,1,3,2), 'f32')}
    %m = tx.constant dense<[[0.5, 0.0, -1.0], [0.0, 0xFF800000, 0.25]]> : {T((2,3), 'f32')}
    %o, %lse = tx.attention %q, %k, %v mask(%m) scale(1.0) : {T((2,1,2,3), 'f32')}, {T((2,1,3,3), 'f32')}, {T((2,1,3,2), 'f32')}, {T((2,3), 'f32')}
    %y = tx.cast %o : {T((2,1,2,2), 'f32')} to {T((2,1,2,2))}""", T((2, 1, 2, 2)),
         optional="tx.attention / tx.attention_grad kernels"),
    # A dropout of the probabilities (a fixed key: the same mask every
    # evaluation, so the function is differentiable where it keeps).
    Case("attention_dropout", ["attention"], [A(1, 2, 4, 3), A(1, 2, 4, 3), A(1, 2, 4, 3)], f"""
    %q = tx.cast %a0 : {T((1,2,4,3))} to {T((1,2,4,3), 'f32')}
    %k = tx.cast %a1 : {T((1,2,4,3))} to {T((1,2,4,3), 'f32')}
    %v = tx.cast %a2 : {T((1,2,4,3))} to {T((1,2,4,3), 'f32')}
    %key = tx.constant dense<5> : {T((), 'i64')}
    %o, %lse = tx.attention %q, %k, %v scale(0.6) causal dropout(%key, 0.3, 11) : {T((1,2,4,3), 'f32')}, {T((1,2,4,3), 'f32')}, {T((1,2,4,3), 'f32')}
    %y = tx.cast %o : {T((1,2,4,3), 'f32')} to {T((1,2,4,3))}""", T((1, 2, 4, 3)),
         optional="tx.attention / tx.attention_grad kernels"),
    # --- parameters, reuse, composition --------------------------------------
    Case("parameters_and_reuse", ["load_parameter", "summing", "frozen"],
         [A(2, 3)], f"""
    %w = tx.load_parameter @w : {T((3,4))}
    %b = tx.load_parameter @b : {T((4,))}
    %m = tx.load_parameter @mask : {T((4,))}
    %h = tx.matmul %a0, %w : {T((2,3))}, {T((3,4))}
    %w2 = tx.load_parameter @w : {T((3,4))}
    %s = tx.reduce_sum %w2 axes [0] : {T((3,4))}
    %hb = tx.add %h, %b : {T((2,4))}, {T((4,))}
    %t = tx.tanh %hb : {T((2,4))}
    %u = tx.mul %t, %s : {T((2,4))}, {T((4,))}
    %y = tx.mul %u, %m : {T((2,4))}, {T((4,))}""", T((2, 4)),
         params=[("w", (3, 4), "normal", False), ("b", (4,), "normal", False),
                 ("mask", (4,), "normal", True)]),
    Case("gelu_tanh_chain", ["mul", "add", "pow", "tanh"], [A(2, 4)], f"""
    %c3 = tx.constant dense<3.0> : {T(())}
    %k = tx.constant dense<0.044715> : {T(())}
    %s = tx.constant dense<0.7978845608028654> : {T(())}
    %one = tx.constant dense<1.0> : {T(())}
    %half = tx.constant dense<0.5> : {T(())}
    %x3 = tx.pow %a0, %c3 : {T((2,4))}, {T(())}
    %kx3 = tx.mul %x3, %k : {T((2,4))}, {T(())}
    %in = tx.add %a0, %kx3 : {T((2,4))}, {T((2,4))}
    %sin = tx.mul %in, %s : {T((2,4))}, {T(())}
    %th = tx.tanh %sin : {T((2,4))}
    %p1 = tx.add %th, %one : {T((2,4))}, {T(())}
    %hx = tx.mul %a0, %half : {T((2,4))}, {T(())}
    %y = tx.mul %hx, %p1 : {T((2,4))}, {T((2,4))}""", T((2, 4))),
]


def sample_domain(rng, shape, domain):
    if domain == "normal":
        value = rng.standard_normal(shape)
    elif domain == "pos":
        value = rng.uniform(0.5, 2.0, shape)
    elif domain == "away0":
        value = rng.uniform(0.2, 2.0, shape) * rng.choice([-1.0, 1.0], shape)
    else:
        raise ValueError(domain)
    return np.array(value, dtype=np.float64).reshape(shape)


def dense_literal(array):
    """An MLIR dense<...> body for |array| with full f64 precision."""
    def fmt(a):
        if a.ndim == 0:
            return repr(float(a))
        return "[" + ", ".join(fmt(x) for x in a) + "]"
    return fmt(np.asarray(array, dtype=np.float64))


def build_case_module(case, rng):
    """Returns (mlir text, {input name: value}) for a rule case."""
    inputs = {}
    params_text = []
    for name, shape, domain, frozen in case.params:
        value = sample_domain(rng, shape, domain)
        params_text.append(
            f"tx.parameter @{name} = dense<{dense_literal(value)}> : {ttype(shape)}"
            + (" frozen" if frozen else ""))
        if not frozen:
            inputs[name] = value
    args = []
    for i, (shape, domain) in enumerate(case.args):
        args.append(f"%a{i}: {ttype(shape)}")
        inputs[f"arg{i}"] = sample_domain(rng, shape, domain)
    weights = rng.standard_normal(y_shape(case.y))
    body = case.body + f"""
    %__w = tx.constant dense<{dense_literal(weights)}> : {case.y}
    %__p = tx.mul %y, %__w : {case.y}, {case.y}
    %__l = tx.reduce_sum %__p axes [] : {case.y}"""
    text = "\n".join(params_text) + f"""
func.func @f({", ".join(args)}) -> tensor<f64> {{{body}
    return %__l : tensor<f64>
}}
"""
    return text, inputs, ("\n".join(params_text), body)


def build_fd_module(case, inputs, parts, points):
    """A function returning the loss at every point of |points|.

    Each point is {input name: value} overriding some inputs. The forward
    body is copied once per point with its SSA names suffixed, arguments
    become constants (f64 literals round-trip exactly) and loads of an
    overridden parameter become constants too. One executor run then
    evaluates every finite-difference point.
    """
    params_text, body = parts
    lines = []
    for j, point in enumerate(points):
        for i, (shape, _) in enumerate(case.args):
            value = point.get(f"arg{i}", inputs[f"arg{i}"])
            lines.append(f"    %a{i}_c{j} = tx.constant "
                         f"dense<{dense_literal(value)}> : {ttype(shape)}")
        for line in body.strip("\n").split("\n"):
            line = re.sub(r"%([A-Za-z_][\w$.]*)", rf"%\1_c{j}", line)
            m = re.match(r"(\s*%\S+) = tx\.load_parameter @([\w.$-]+) : "
                         r"(tensor<[^>]*>)", line)
            if m and m.group(2) in point:
                line = (f"{m.group(1)} = tx.constant "
                        f"dense<{dense_literal(point[m.group(2)])}> : "
                        f"{m.group(3)}")
            lines.append(line)
    types = ", ".join(["tensor<f64>"] * len(points))
    results = ", ".join(f"%__l_c{j}" for j in range(len(points)))
    return (params_text + f"\nfunc.func @fd() -> ({types}) {{\n"
            + "\n".join(lines) + f"\n    return {results} : {types}\n}}\n")


# ---------------------------------------------------------------------------
# Running the tools
# ---------------------------------------------------------------------------

class ToolError(Exception):
    pass


def run(cmd, what):
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)
    if proc.returncode != 0:
        raise ToolError(f"{what} failed ({proc.returncode}): "
                        f"{proc.stderr.strip() or proc.stdout.strip()}\n"
                        f"  command: {' '.join(cmd)}")
    return proc.stdout


def npy_name(name):
    """txopt-run's file name for output |name| (see fileNameFor)."""
    out = "".join(c if (c.isalnum() or c in "._-") else "_" for c in name)
    if not out or out[0] == ".":
        out = "_" + out
    return out + ".npy"


_ATTR_DICT = r"\{([^{}]*)\}"


def parse_grad_signature(text, func):
    """Argument (name, type) list and result grad_of list of @func."""
    m = re.search(r"func\.func (?:public |private )?@" + re.escape(func)
                  + r"\((.*?)\)\s*->\s*\((.*?)\)\s*attributes", text, re.S)
    if not m:
        raise ToolError(f"cannot find the signature of @{func}")
    args_text, results_text = m.group(1), m.group(2)
    args = []
    for am in re.finditer(r"%[\w.$-]+: (tensor<[^>]*>)(?: " + _ATTR_DICT + ")?",
                          args_text):
        attrs = am.group(2) or ""
        nm = re.search(r'tx\.name = "((?:[^"\\]|\\.)*)"', attrs)
        args.append((nm.group(1) if nm else None, am.group(1)))
    grad_of = []
    for rm in re.finditer(r"tx\.grad_of = (@\"(?:[^\"\\]|\\.)*\"|@[\w.$-]+|\d+ : i64)",
                          results_text):
        g = rm.group(1)
        if g.startswith("@"):
            grad_of.append(("param", g[1:].strip('"')))
        else:
            grad_of.append(("arg", int(g.split()[0])))
    return args, grad_of


def elem_dtype(ttype_text):
    elem = ttype_text[len("tensor<"):-1].split("x")[-1]
    return {"f64": np.float64, "f32": np.float32, "i64": np.int64,
            "i32": np.int32, "i1": np.bool_}.get(elem)


class Evaluator:
    """Runs `<func>_grad` on the executor with some inputs given as .npy."""

    def __init__(self, tools, module, func, work, fixed_args, seed):
        self.tools = tools
        self.module = module
        self.func = func
        self.work = work
        self.fixed = fixed_args  # [--input NAME=FILE] for unperturbed inputs
        self.seed = seed
        self.counter = 0

    def evaluate(self, overrides, want_grads=False):
        """Loss (and result list) with |overrides| = {name: ndarray}."""
        d = tempfile.mkdtemp(dir=self.work)
        cmd = [self.tools["txopt-run"], self.module, "--function", self.func,
               "--f64", "--seed", str(self.seed), "--output-dir", d,
               "--print-limit", "0"]
        given = dict(self.fixed)
        for name, value in overrides.items():
            path = os.path.join(d, "in_" + npy_name(name))
            np.save(path, value)
            given[name] = path
        for name, path in given.items():
            cmd += ["--input", f"{name}={path}"]
        out = run(cmd, "txopt-run")
        names = []
        for line in out.splitlines():
            m = re.match(r"^(.*?)(?: = |: tensor<)", line)
            if m:
                names.append(m.group(1))
        results = [np.load(os.path.join(d, npy_name(n))) for n in names]
        shutil.rmtree(d, ignore_errors=True)
        return results if want_grads else float(results[0])


def finite_difference(evaluator, name, base, index, pool):
    """Central difference of the loss along element |index| of input |name|."""
    x0 = float(np.asarray(base).reshape(-1)[index])
    h = REL_STEP * max(1.0, abs(x0))
    plus = np.array(base, copy=True)
    minus = np.array(base, copy=True)
    plus.flat[index] = x0 + h
    minus.flat[index] = x0 - h
    # The step actually taken (f32 inputs round x0 +- h).
    step = float(plus.flat[index]) - float(minus.flat[index])
    fp = pool.submit(evaluator.evaluate, {name: plus})
    fm = pool.submit(evaluator.evaluate, {name: minus})
    return fp, fm, step


def compare(entries):
    """entries: [(ad, fd)] -> (max scaled error, max abs error, worst)."""
    worst = (0.0, 0.0, None)
    for label, ad, fd in entries:
        err = abs(ad - fd)
        scaled = err / max(1.0, abs(fd))
        if scaled >= worst[0]:
            worst = (scaled, max(worst[1], err), (label, ad, fd))
        else:
            worst = (worst[0], max(worst[1], err), worst[2])
    return worst


# ---------------------------------------------------------------------------
# Suites
# ---------------------------------------------------------------------------

def differentiate(tools, src, dst, wrt):
    run([tools["txopt-opt"], src, f"--tx-differentiate=wrt={wrt}", "-o", dst],
        "txopt-opt --tx-differentiate")


def check_rules(args, tools, work, pool):
    rng = np.random.default_rng(args.seed)
    only = set(args.only.split(",")) if args.only else None
    results = []  # (case, status, scaled, abs, detail)
    for case in CASES:
        case_rng = np.random.default_rng(rng.integers(1 << 62))
        if only and case.name not in only and not (set(case.rules) & only):
            continue
        cdir = os.path.join(work, case.name)
        os.makedirs(cdir, exist_ok=True)
        text, inputs, parts = build_case_module(case, case_rng)
        src = os.path.join(cdir, "f.mlir")
        dst = os.path.join(cdir, "f_grad.mlir")
        with open(src, "w") as f:
            f.write(text)
        try:
            differentiate(tools, src, dst, "all")
            with open(dst) as f:
                gtext = f.read()
            _, grad_of = parse_grad_signature(gtext, "f_grad")
            fixed = {}
            for name, value in inputs.items():
                path = os.path.join(cdir, "in_" + npy_name(name))
                np.save(path, value)
                fixed[name] = path
            ev = Evaluator(tools, dst, "f_grad", cdir, fixed, args.seed)
            grads_future = pool.submit(ev.evaluate, {}, True)
            # Every finite-difference point of every input, in one run.
            points, entries_todo = [], []
            for kind, key in grad_of:
                name = f"arg{key}" if kind == "arg" else key
                base = inputs[name]
                for idx in range(base.size):
                    x0 = float(base.flat[idx])
                    h = REL_STEP * max(1.0, abs(x0))
                    plus, minus = base.copy(), base.copy()
                    plus.flat[idx] = x0 + h
                    minus.flat[idx] = x0 - h
                    entries_todo.append((name, idx, len(points),
                                         float(plus.flat[idx]) -
                                         float(minus.flat[idx])))
                    points += [{name: plus}, {name: minus}]
            fd_src = os.path.join(cdir, "fd.mlir")
            with open(fd_src, "w") as f:
                f.write(build_fd_module(case, inputs, parts, points))
            fd_ev = Evaluator(tools, fd_src, "fd", cdir, {}, args.seed)
            losses = [float(v) for v in fd_ev.evaluate({}, want_grads=True)]
            outs = grads_future.result()
            grads = {}
            for k, (kind, key) in enumerate(grad_of):
                name = f"arg{key}" if kind == "arg" else key
                grads[name] = outs[1 + k]
                if grads[name].shape != inputs[name].shape:
                    raise ToolError(f"gradient of {name} has shape "
                                    f"{grads[name].shape}, expected "
                                    f"{inputs[name].shape}")
            entries = [(f"{name}[{idx}]", float(grads[name].flat[idx]),
                        (losses[p] - losses[p + 1]) / step)
                       for name, idx, p, step in entries_todo]
            if len(grad_of) != len([a for a in case.args]) + len(
                    [p for p in case.params if not p[3]]):
                raise ToolError(f"expected a gradient per float argument and "
                                f"trainable parameter, got {len(grad_of)}")
            scaled, abserr, worst = compare(entries)
            status = "ok" if scaled <= args.tol else "FAIL"
            detail = (f"worst {worst[0]}: ad={worst[1]:.12g} fd={worst[2]:.12g}"
                      if worst[2] is not None else "")
            results.append((case, status, scaled, abserr, len(entries), detail))
        except ToolError as e:
            message = str(e)
            if case.optional and "unsupported op" in message:
                results.append((case, "SKIP", 0.0, 0.0, 0,
                                f"executor lacks {case.optional}"))
            else:
                results.append((case, "FAIL", float("inf"), float("inf"), 0,
                                message))
        r = results[-1]
        print(f"rule {r[0].name:38s} [{','.join(r[0].rules)}] {r[1]:4s} "
              f"max_err={r[2]:.2e} max_abs={r[3]:.2e} entries={r[4]}"
              + (f"  {r[5]}" if r[1] != "ok" else ""), flush=True)
    # Per-rule maxima.
    per_rule = {}
    for case, status, scaled, abserr, n, _ in results:
        if status == "SKIP":
            continue
        for rule in case.rules:
            prev = per_rule.get(rule, 0.0)
            per_rule[rule] = max(prev, scaled)
    print("per-rule max error: " + ", ".join(
        f"{k}={v:.1e}" for k, v in sorted(per_rule.items())))
    failed = [r for r in results if r[1] == "FAIL"]
    skipped = [r for r in results if r[1] == "SKIP"]
    print(f"gradcheck rules: {len(results) - len(failed) - len(skipped)} passed, "
          f"{len(failed)} failed, {len(skipped)} skipped "
          f"(tolerance {args.tol:g}, seed {args.seed})")
    return not failed


PARAM_RE = re.compile(
    r'^\s*tx\.parameter @("(?:[^"\\]|\\.)*"|[\w.$-]+) = .*? : (tensor<[^>]*>)( frozen)?',
    re.M)


def model_parameters(text):
    params = []
    for m in PARAM_RE.finditer(text):
        name = m.group(1)
        params.append((name.strip('"') if name.startswith('"') else name,
                       name, m.group(2), bool(m.group(3))))
    return params


def check_models(args, tools, work, pool):
    models = [m for m in args.models.split(",") if m]
    ok = True
    summary = []
    for model in models:
        path = model
        if not os.path.exists(path):
            path = os.path.join(args.models_dir, model + ".onnx")
        label = os.path.splitext(os.path.basename(path))[0]
        if not os.path.exists(path):
            print(f"model {label}: SKIP (not found: {path})")
            continue
        mdir = os.path.join(work, label)
        os.makedirs(mdir, exist_ok=True)
        try:
            t0 = time.time()
            imported = os.path.join(mdir, "m.mlir")
            run([tools["txopt"], path, f"--emit={args.emit}",
                 "--print-locations", "-q", "-o", imported],
                f"txopt --emit={args.emit}")
            with open(imported) as f:
                text = f.read()
            params = model_parameters(text)
            trainable = [p for p in params if not p[3]]
            # A helper that returns every trainable parameter's value.
            helper = "func.func @__gradcheck_params() -> (" + ", ".join(
                t for _, _, t, _ in trainable) + ") {\n"
            for i, (_, sym, t, _) in enumerate(trainable):
                helper += f"  %p{i} = tx.load_parameter @{sym} : {t}\n"
            helper += "  return " + ", ".join(
                f"%p{i}" for i in range(len(trainable))) + " : " + ", ".join(
                t for _, _, t, _ in trainable) + "\n}\n"
            # Before the module's closing brace (location aliases follow it).
            end = [m.start() for m in re.finditer(r"^\}", text, re.M)][-1]
            with_helper = os.path.join(mdir, "m_params.mlir")
            with open(with_helper, "w") as f:
                f.write(text[:end] + helper + text[end:])
            pdir = os.path.join(mdir, "params")
            run([tools["txopt-run"], with_helper, "--function",
                 "__gradcheck_params", "--output-dir", pdir, "--print-limit",
                 "0"], "txopt-run (parameter values)")
            values = {}
            # bf16 / f16 parameters are passed as <f4 (txopt-run rounds
            # them); a 1e-6 step does not survive that rounding, so their
            # entries are not sampled.
            coarse = set()
            for i, (name, _, t, _) in enumerate(trainable):
                dtype = elem_dtype(t)
                if dtype is None:
                    coarse.add(name)
                    dtype = np.float32
                values[name] = np.load(os.path.join(pdir, f"result{i}.npy")) \
                    .astype(dtype)
            fmatch = re.search(r"func\.func (?:public )?@([\w.$-]+)\(", text)
            func = fmatch.group(1)
            grad_mlir = os.path.join(mdir, "m_grad.mlir")
            differentiate(tools, imported, grad_mlir, "params")
            with open(grad_mlir) as f:
                gtext = f.read()
            _, grad_of = parse_grad_signature(gtext, func + "_grad")
            fixed = {}
            for name, value in values.items():
                p = os.path.join(mdir, "in_" + npy_name(name))
                np.save(p, value)
                fixed[name] = p
            ev = Evaluator(tools, grad_mlir, func + "_grad", mdir, fixed,
                           args.seed)
            outs = ev.evaluate({}, want_grads=True)
            loss = float(outs[0])
            grads = {key: outs[1 + k] for k, (kind, key) in enumerate(grad_of)}
            if sorted(grads) != sorted(values):
                raise ToolError("gradient results do not match the trainable "
                                "parameters")
            rng = np.random.default_rng(args.seed)
            names = sorted(n for n in values if n not in coarse)
            if not names:
                print(f"model {label}: SKIP (every parameter is bf16/f16: a "
                      f"{REL_STEP:g} step does not survive their rounding)")
                summary.append("SKIP")
                continue
            picks = []
            order = rng.permutation(len(names))
            for s in range(args.samples):
                name = names[order[s % len(names)]]
                picks.append((name, int(rng.integers(values[name].size))))
            futures = []
            for name, idx in picks:
                fp, fm, step = finite_difference(ev, name, values[name], idx, pool)
                futures.append((f"{name}[{idx}]",
                                float(grads[name].reshape(-1)[idx]), fp, fm, step))
            entries = [(lbl, ad, (fp.result() - fm.result()) / step)
                       for lbl, ad, fp, fm, step in futures]
            scaled, abserr, worst = compare(entries)
            rel = max((abs(ad - fd) / abs(fd) for _, ad, fd in entries
                       if abs(fd) > 1e-3), default=0.0)
            status = "ok" if scaled <= args.tol else "FAIL"
            ok &= status == "ok"
            print(f"model {label}: {status} loss={loss:.6f} params={len(values)}"
                  + (f" ({len(coarse)} bf16/f16 not sampled)" if coarse else "") +
                  f" "
                  f"samples={len(entries)} max_err={scaled:.2e} "
                  f"max_abs={abserr:.2e} max_rel(|g|>1e-3)={rel:.2e} "
                  f"({time.time() - t0:.0f}s)", flush=True)
            if args.verbose or status != "ok":
                for lbl, ad, fd in entries:
                    print(f"  {lbl}: ad={ad:.12g} fd={fd:.12g}")
            summary.append(status)
        except ToolError as e:
            ok = False
            print(f"model {label}: FAIL {e}", flush=True)
            summary.append("FAIL")
    print(f"gradcheck models: {summary.count('ok')} passed, "
          f"{summary.count('FAIL')} failed, {summary.count('SKIP')} skipped "
          f"(tolerance {args.tol:g}, "
          f"seed {args.seed})")
    return ok


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--txopt-opt", required=True)
    parser.add_argument("--txopt-run", help="default: next to txopt-opt")
    parser.add_argument("--txopt", help="default: next to txopt-opt")
    parser.add_argument("--suite", choices=["rules", "models", "all"],
                        default="rules")
    parser.add_argument("--seed", type=int,
                        help="default: $GRADCHECK_SEED, else a fresh seed "
                             "(printed, so that a failure can be replayed)")
    parser.add_argument("--only", help="comma-separated case or rule names")
    parser.add_argument("--tol", type=float, default=TOL)
    parser.add_argument("--models",
                        default="nanogpt_op18_loss,llama_op18_loss,gpt2_op18_loss")
    parser.add_argument("--models-dir", default=os.environ.get(
        "TXOPT_MODELS_DIR", os.path.join(os.path.dirname(os.path.abspath(
            __file__)), "..", "Inputs", "models")),
                        help="folder of MODEL.onnx files (default: the repo's "
                             "fixtures, test/Inputs/models)")
    parser.add_argument("--emit", choices=["tx", "fused"], default="tx",
                        help="import models as imported (tx) or fused "
                             "(tx-fuse-norms before differentiation)")
    parser.add_argument("--samples", type=int, default=20,
                        help="parameter-gradient entries checked per model")
    parser.add_argument("--work", help="scratch directory (default: a temp dir)")
    parser.add_argument("--jobs", type=int, default=min(4, os.cpu_count() or 1))
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()

    if args.seed is None:
        args.seed = int(os.environ.get("GRADCHECK_SEED", "0")) or \
            int.from_bytes(os.urandom(4), "little")
    bindir = os.path.dirname(os.path.abspath(args.txopt_opt))
    tools = {"txopt-opt": args.txopt_opt,
             "txopt-run": args.txopt_run or os.path.join(bindir, "txopt-run"),
             "txopt": args.txopt or os.path.join(bindir, "txopt")}
    work = args.work or tempfile.mkdtemp(prefix="gradcheck-")
    if os.path.exists(work):
        shutil.rmtree(work)
    os.makedirs(work)
    print(f"gradcheck: seed {args.seed}, step {REL_STEP:g} * max(1, |x|), "
          f"tolerance {args.tol:g}, work dir {work}", flush=True)
    ok = True
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        if args.suite in ("rules", "all"):
            ok &= check_rules(args, tools, work, pool)
        if args.suite in ("models", "all"):
            ok &= check_models(args, tools, work, pool)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
