// RUN: txopt-opt %s --split-input-file --verify-diagnostics --tx-untie-parameters | FileCheck %s
// RUN: txopt-opt %s --split-input-file --verify-diagnostics --tx-untie-parameters="tie=^h.0.ln_1.w" | FileCheck %s --check-prefix=TIE
// RUN: txopt-opt %s --split-input-file --verify-diagnostics --tx-untie-parameters="untie=wte|rope|ln_1.w tie=ln_1" | FileCheck %s --check-prefix=UNTIE
// RUN: txopt-opt %s --split-input-file --tx-untie-parameters --tx-untie-parameters | FileCheck %s --check-prefix=TWICE
// RUN: not txopt-opt %s --split-input-file --tx-untie-parameters="tie=(" 2>&1 | FileCheck %s --check-prefix=BADREGEX

// BADREGEX: error: invalid --tie/--untie regex: parentheses not balanced

// The exporter stored one LayerNorm weight for the norms of two modules
// (h.0.ln_1 and h.0.ln_2) and h.1.ln_1: every node after the first gets
// its own copy, named after its module; the record lists the copies.
// CHECK-LABEL: module attributes
// CHECK-SAME:    tx.untied_parameters = {h.0.ln_1.weight = ["h.0.ln_2.weight", "h.1.ln_1.weight"]}
// CHECK:         tx.parameter @h.0.ln_1.weight = dense<1.000000e+00> : tensor<4xf32>
// CHECK-NEXT:    tx.parameter @h.0.ln_2.weight = dense<1.000000e+00> : tensor<4xf32>
// CHECK-NEXT:    tx.parameter @h.1.ln_1.weight = dense<1.000000e+00> : tensor<4xf32>
// CHECK-LABEL: func.func @norms
// CHECK-DAG:     %[[W0:.+]] = tx.load_parameter @h.0.ln_1.weight
// CHECK-DAG:     %[[W1:.+]] = tx.load_parameter @h.0.ln_2.weight
// CHECK-DAG:     %[[W2:.+]] = tx.load_parameter @h.1.ln_1.weight
// CHECK:         %[[A:.+]] = tx.mul %arg0, %[[W0]]
// CHECK:         %[[B:.+]] = tx.mul %[[A]], %[[W1]]
// CHECK:         tx.mul %[[B]], %[[W2]]
// A second run finds nothing left to untie and keeps the record.
// TWICE-LABEL: module attributes
// TWICE-SAME:    tx.untied_parameters = {h.0.ln_1.weight = ["h.0.ln_2.weight", "h.1.ln_1.weight"]}
// TWICE-COUNT-3: tx.parameter
// TWICE-NEXT:    func.func @norms
// --tie keeps it shared and says why.
// TIE-LABEL:   module attributes {tx.tied_parameters = {h.0.ln_1.weight = "kept by --tie"}}
// TIE-NEXT:    tx.parameter @h.0.ln_1.weight
// TIE-NEXT:    func.func @norms
// --untie wins over --tie.
// UNTIE-LABEL: module attributes {tx.untied_parameters = {h.0.ln_1.weight = ["h.0.ln_2.weight", "h.1.ln_1.weight"]}
module {
  tx.parameter @h.0.ln_1.weight = dense<1.0> : tensor<4xf32>
  func.func @norms(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
    %w = tx.load_parameter @h.0.ln_1.weight : tensor<4xf32>
    %a = tx.mul %x, %w : tensor<2x4xf32>, tensor<4xf32> loc("ln"("h.0.ln_1"))
    %b = tx.mul %a, %w : tensor<2x4xf32>, tensor<4xf32> loc("ln_1"("h.0.ln_2"))
    %c = tx.mul %b, %w : tensor<2x4xf32>, tensor<4xf32> loc("ln_2"("h.1.ln_1"))
    return %c : tensor<2x4xf32>
  }
}

// -----

// One node imported as two ops (both at its location) reads one copy; a
// copy whose module name is taken, or that has no module, is named
// <name>.<k> for the k-th reader (k = 1 for the second).
// CHECK-LABEL: module attributes
// CHECK-SAME:    tx.untied_parameters = {a.bias = ["a.bias.1", "a.bias.2"]}
// CHECK-DAG:     tx.parameter @a.bias.1 = dense<0.000000e+00>
// CHECK-DAG:     tx.parameter @a.bias.2 = dense<0.000000e+00>
// CHECK-LABEL: func.func @names
// CHECK-DAG:     %[[B0:.+]] = tx.load_parameter @a.bias :
// CHECK-DAG:     %[[B1:.+]] = tx.load_parameter @a.bias.1 :
// CHECK-DAG:     %[[B2:.+]] = tx.load_parameter @a.bias.2 :
// CHECK:         %[[P:.+]] = tx.add %arg0, %[[B0]]
// CHECK:         %[[Q:.+]] = tx.add %[[P]], %[[B0]]
// CHECK:         %[[R:.+]] = tx.add %[[Q]], %[[B1]]
// CHECK:         tx.add %[[R]], %[[B2]]
module {
  tx.parameter @a.bias = dense<0.0> : tensor<4xf32>
  tx.parameter @b.bias = dense<0.5> : tensor<4xf32>
  func.func @names(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
    %b = tx.load_parameter @a.bias : tensor<4xf32>
    %p = tx.add %x, %b : tensor<2x4xf32>, tensor<4xf32> loc("n0"("a"))
    %q = tx.add %p, %b : tensor<2x4xf32>, tensor<4xf32> loc("n0"("a"))
    %r = tx.add %q, %b : tensor<2x4xf32>, tensor<4xf32> loc("n1"("b"))
    %s = tx.add %r, %b : tensor<2x4xf32>, tensor<4xf32> loc("n2")
    return %s : tensor<2x4xf32>
  }
}

// -----

// Must not fire: an embedding reused as the LM head stays tied (untie=wte
// unties it); so do a constant several modules read that no module owns
// (Llama's rotary table; untie=rope), a weight read by nodes of one module
// only, a parameter of an export without module scopes, a frozen buffer,
// and a parameter one node reads.
// CHECK-LABEL: module attributes
// CHECK-SAME:    tx.tied_parameters = {
// CHECK-SAME:      noscope = "the export names no modules to untie it by"
// CHECK-SAME:      one.w = "read by one module only"
// CHECK-SAME:      rope = "not a module's own parameter: a computed constant several modules read"
// CHECK-SAME:      wte = "an embedding reused as the LM head"
// CHECK-NOT:     tx.untied_parameters
// CHECK-COUNT-6: tx.parameter
// CHECK-NEXT:    func.func @kept
// UNTIE-LABEL: module attributes {tx.tied_parameters = {noscope = "{{[^"]*}}", one.w = "{{[^"]*}}"}
// UNTIE-SAME:    tx.untied_parameters = {rope = ["h.1.attn.rope"], wte = ["head.wte"]}
module {
  tx.parameter @wte = dense<0.25> : tensor<8x4xf32>
  tx.parameter @rope = dense<0.5> : tensor<4xf32>
  tx.parameter @one.w = dense<2.0> : tensor<4xf32>
  tx.parameter @noscope = dense<3.0> : tensor<4xf32>
  tx.parameter @mask = dense<0.0> : tensor<4xf32> frozen
  tx.parameter @single = dense<4.0> : tensor<4xf32>
  func.func @kept(%ids: tensor<2xi64>) -> tensor<2x8xf32> {
    %e = tx.load_parameter @wte : tensor<8x4xf32>
    %x = tx.gather %e, %ids {axis = 0 : i64} : tensor<8x4xf32>, tensor<2xi64> loc("embed"("wte"))
    %r = tx.load_parameter @rope : tensor<4xf32>
    %x1 = tx.mul %x, %r : tensor<2x4xf32>, tensor<4xf32> loc("rot0"("h.0.attn"))
    %x2 = tx.mul %x1, %r : tensor<2x4xf32>, tensor<4xf32> loc("rot1"("h.1.attn"))
    %o = tx.load_parameter @one.w : tensor<4xf32>
    %x3 = tx.mul %x2, %o : tensor<2x4xf32>, tensor<4xf32> loc("m0"("one"))
    %x4 = tx.add %x3, %o : tensor<2x4xf32>, tensor<4xf32> loc("m1"("one"))
    %n = tx.load_parameter @noscope : tensor<4xf32>
    %x5 = tx.mul %x4, %n : tensor<2x4xf32>, tensor<4xf32> loc("p0")
    %x6 = tx.mul %x5, %n : tensor<2x4xf32>, tensor<4xf32> loc("p1")
    %m = tx.load_parameter @mask : tensor<4xf32>
    %x7 = tx.add %x6, %m : tensor<2x4xf32>, tensor<4xf32> loc("q0"("h.0"))
    %x8 = tx.add %x7, %m : tensor<2x4xf32>, tensor<4xf32> loc("q1"("h.1"))
    %s = tx.load_parameter @single : tensor<4xf32>
    %x9 = tx.mul %x8, %s : tensor<2x4xf32>, tensor<4xf32> loc("r0"("h.0"))
    %et = tx.transpose %e perm [1, 0] : tensor<8x4xf32> loc("head_t"("head"))
    %y = tx.matmul %x9, %et : tensor<2x4xf32>, tensor<4x8xf32> loc("head"("head"))
    return %y : tensor<2x8xf32>
  }
}
