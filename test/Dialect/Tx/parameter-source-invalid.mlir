// RUN: txopt-opt %s --split-input-file --verify-diagnostics

// One case per verifier branch of #tx.weight_source and of tx.parameter's
// constraints (C1)-(C4) (TxOps.td), plus the parser's type check.

// The path is relative to tx.model_dir: an absolute one is refused.
// expected-error @+1 {{expected a relative path inside the model's folder, but got absolute location '/etc/passwd'}}
tx.parameter @absolute : tensor<2xf32> source(#tx.weight_source<path = "/etc/passwd", offset = 0, length = 8>)

// -----

// No ".." component, so the path cannot leave the model's folder.
// expected-error @+1 {{expected a relative path inside the model's folder, but got location '../w.bin', which leaves the model's folder}}
tx.parameter @parent : tensor<2xf32> source(#tx.weight_source<path = "../w.bin", offset = 0, length = 8>)

// -----

// An empty path names no file.
// expected-error @+1 {{expected a relative path inside the model's folder, but got an empty location}}
tx.parameter @empty : tensor<2xf32> source(#tx.weight_source<path = "", offset = 0, length = 8>)

// -----

// The byte range must be addressable.
// expected-error @+1 {{expected offset + length to fit in 64 bits, but got 18446744073709551615 + 8}}
tx.parameter @overflow : tensor<2xf32> source(#tx.weight_source<path = "w.bin", offset = 18446744073709551615, length = 8>)

// -----

// (C1) Static shape: the byte length follows from it.
// expected-error @+1 {{'tx.parameter' op expected a statically shaped tensor type, but got 'tensor<?xf32>'}}
tx.parameter @dynamic : tensor<?xf32> source(#tx.weight_source<path = "w.bin", offset = 0, length = 8>)

// -----

// (C1) Weights are floating point, by reference too.
// expected-error @+1 {{'tx.parameter' op expected a floating-point parameter, but got element type 'i32'}}
tx.parameter @integer : tensor<2xi32> source(#tx.weight_source<path = "w.bin", offset = 0, length = 8>)

// -----

// (C2) Not both an initial value and a source.
// expected-error @+1 {{'tx.parameter' op expected exactly one of an initial value and a source, but got both}}
tx.parameter @both : tensor<2xf32> source(#tx.weight_source<path = "w.bin", offset = 0, length = 8>) {initial_value = dense<1.0> : tensor<2xf32>}

// -----

// (C2) Not neither.
// expected-error @+1 {{'tx.parameter' op expected exactly one of an initial value and a source, but got neither}}
"tx.parameter"() <{sym_name = "neither", type = tensor<2xf32>}> : () -> ()

// -----

// (C3) The initial value has the declared type.
// expected-error @+1 {{'tx.parameter' op expected an initial value of type 'tensor<4xf32>', but got 'tensor<2xf32>'}}
"tx.parameter"() <{sym_name = "mismatch", type = tensor<4xf32>, initial_value = dense<1.0> : tensor<2xf32>}> : () -> ()

// -----

// (C4) Sourced elements are whole bytes (no packed 4-bit floats).
// expected-error @+1 {{'tx.parameter' op expected a sourced parameter of whole-byte elements, but got element type 'f4E2M1FN'}}
tx.parameter @packed : tensor<4xf4E2M1FN> source(#tx.weight_source<path = "w.bin", offset = 0, length = 2>)

// -----

// (C4) The length is the type's size: 768 x 768 f32 is 2359296 bytes.
// expected-error @+1 {{'tx.parameter' op expected a source length of 2359296 bytes for 'tensor<768x768xf32>', but got 393216}}
tx.parameter @short : tensor<768x768xf32> source(#tx.weight_source<path = "model.onnx.data", offset = 0, length = 393216>)

// -----

// The parser takes the type from the declaration: it must be a tensor.
// expected-error @+1 {{expected a statically shaped tensor type, but got 'vector<2xf32>'}}
tx.parameter @vector : vector<2xf32> source(#tx.weight_source<path = "w.bin", offset = 0, length = 8>)
