//===- TxBase.td - tx dialect definition and base classes ---*- tablegen -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// The tx dialect, its type constraints and the op base classes every op uses.
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_DIALECT_TX_IR_TXBASE_TD
#define TXOPT_DIALECT_TX_IR_TXBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Tx_Dialect : Dialect {
  let name = "tx";
  let cppNamespace = "::mlir::txopt::tx";
  let summary = "Training-step IR: ONNX-semantics primitives, fused norms, optimizer updates, FP8 casts";
  let description = [{
    `tx` holds two families of ops:

    * primitives with ONNX semantics (broadcasting, attribute meaning, result
      shapes), so the importer maps each ONNX node to exactly one op and the
      reference executor can be checked against onnxruntime op by op;
    * the training ops nobody else has (fused norms and their gradients, the
      multi-tensor optimizer, FP8 scaling), added by the fusion passes.

    All tensors are statically shaped: symbolic dimensions are bound when a
    model is imported. Trainable weights live in module-level `tx.parameter`
    symbols and are read with `tx.load_parameter`, so weights are state, never
    constants that a folder could bake into the graph.
  }];
  let hasConstantMaterializer = 1;
  let useDefaultAttributePrinterParser = 1;
  // The training step's contract (docs/Training.md) is verified here, not
  // trusted from string literals: tx.* attributes on modules, functions,
  // arguments and results (TxDialect.cpp).
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
}

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

// Every tx value is a statically shaped tensor: the importer binds symbolic
// dims up front, so no op ever has to reason about `?`.
def Tx_Tensor : StaticShapeTensorOf<[AnyType]>;
def Tx_FloatTensor : StaticShapeTensorOf<[AnyFloat]>;
def Tx_IntTensor : StaticShapeTensorOf<[AnySignlessInteger]>;
def Tx_IndexTensor : StaticShapeTensorOf<[I32, I64]>;
def Tx_BoolTensor : StaticShapeTensorOf<[I1]>;
def Tx_NumericTensor : StaticShapeTensorOf<[AnyFloat, AnySignlessInteger]>;
def Tx_ScalarTensor : 0DTensorOf<[AnyFloat, AnySignlessInteger]>;

// A statically shaped 1-D tensor (1DTensorOf alone admits `tensor<?xT>`).
class Tx_1DTensorOf<list<Type> allowedTypes>
    : RankedTensorOf<allowedTypes, [HasAnyRankOfPred<[1]>, HasStaticShapePred],
                     "statically shaped 1D tensor">;

//===----------------------------------------------------------------------===//
// Result-type inference
//===----------------------------------------------------------------------===//

// Upstream's InferTypeOpAdaptor, except that the adaptor sees the properties
// the op will end up with. The generated custom parser runs inference while
// the inherent attributes written in `attr-dict` (`{axis = 1}`, `{transB =
// true}`) still sit in the attribute dictionary and before defaults are
// populated, so upstream's adaptor would read null attributes there.
// `detail::inferWithParsedProperties` (TxOps.h) merges both first.
def Tx_InferTypeOpAdaptor : TraitList<[
    DeclareOpInterfaceMethods<InferTypeOpInterface>,
    NativeOpTrait<
      /*name=*/"InferTypeOpAdaptor",
      /*traits=*/[],
      /*extraOpDeclaration=*/[{
        static ::llvm::LogicalResult
        inferReturnTypes(::mlir::MLIRContext *context,
                         std::optional<::mlir::Location> location,
                         Adaptor adaptor,
                         ::llvm::SmallVectorImpl<::mlir::Type> &inferredReturnTypes);
      }],
      /*extraOpDefinition=*/[{
        ::llvm::LogicalResult
        $cppClass::inferReturnTypes(::mlir::MLIRContext *context,
                          std::optional<::mlir::Location> location,
                          ::mlir::ValueRange operands, ::mlir::DictionaryAttr attributes,
                          ::mlir::OpaqueProperties properties, ::mlir::RegionRange regions,
                          ::llvm::SmallVectorImpl<::mlir::Type> &inferredReturnTypes) {
          return ::mlir::txopt::tx::detail::inferWithParsedProperties<$cppClass>(
              context, location, operands, attributes, properties, regions,
              inferredReturnTypes);
        }
      }]
    >
  ]>;

//===----------------------------------------------------------------------===//
// Op base classes
//===----------------------------------------------------------------------===//

class Tx_Op<string mnemonic, list<Trait> traits = []>
    : Op<Tx_Dialect, mnemonic, traits>;

// Elementwise unary op whose result has the operand's type.
class Tx_UnaryOp<string mnemonic, Type operandType, list<Trait> traits = []>
    : Tx_Op<mnemonic, !listconcat(traits,
          [Pure, Elementwise, SameOperandsAndResultType])> {
  let arguments = (ins operandType:$input);
  let results = (outs operandType:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

// Elementwise binary op with ONNX (numpy) multidirectional broadcasting. The
// result shape is inferred, so the format only names the operand types.
class Tx_BroadcastBinaryOp<string mnemonic, Type operandType, list<Trait> traits = []>
    : Tx_Op<mnemonic, !listconcat(traits,
          [Pure, Tx_InferTypeOpAdaptor])> {
  let arguments = (ins operandType:$lhs, operandType:$rhs);
  let results = (outs Tx_Tensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs)";
}

#endif // TXOPT_DIALECT_TX_IR_TXBASE_TD
