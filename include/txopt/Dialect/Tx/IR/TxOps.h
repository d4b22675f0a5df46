//===- TxOps.h - tx dialect operations --------------------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// Declares the tx ops generated from TxOps.td and the shape helpers they share.
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_DIALECT_TX_IR_TXOPS_H
#define TXOPT_DIALECT_TX_IR_TXOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <type_traits>

#include "txopt/Dialect/Tx/IR/TxDialect.h"
#include "txopt/Dialect/Tx/IR/TxEnums.h.inc"
#include "txopt/Dialect/Tx/IR/TxInterfaces.h"
#define GET_ATTRDEF_CLASSES
#include "txopt/Dialect/Tx/IR/TxAttrs.h.inc"

namespace mlir::txopt::tx {
/// The type of the scales (and amaxes) that go with an FP8 amax history:
/// 0-d for one history [L], [N] for N packed rows [N, L]
/// (tx.fp8_scale_update). Any other type maps to itself, so the verifier
/// reports the history's own constraint.
Type fp8EntriesType(Type history);
} // namespace mlir::txopt::tx

#define GET_OP_CLASSES
#include "txopt/Dialect/Tx/IR/TxOps.h.inc"

namespace mlir::txopt::tx {

/// Numpy/ONNX multidirectional broadcast of two shapes; failure when a pair
/// of dims is neither equal nor 1.
FailureOr<SmallVector<int64_t>> broadcastShapes(ArrayRef<int64_t> lhs,
                                                ArrayRef<int64_t> rhs);

/// The batch rule of tx.blas_gemm (one strided batch per side): the batch
/// dims of the two operands are equal, or one side's multiply to 1.
bool areGemmBatchesStridable(ArrayRef<int64_t> aBatch, ArrayRef<int64_t> bBatch);

/// Maps a possibly negative axis into [0, rank); failure when out of range.
FailureOr<int64_t> normalizeAxis(int64_t axis, int64_t rank);

/// The value of |value| when it is a constant with a single distinct element
/// (a scalar, or a splat of any shape), as a double.
std::optional<double> getSplatConstant(Value value);

/// Formats a shape as `[2, 32, 128]` for diagnostics.
std::string formatShape(ArrayRef<int64_t> shape);

/// Result shape of `tx.gather_nd` for operands of shapes |data| and
/// |indices| and |batchDims|: `shape(indices)[:-1] ++ shape(data)[b + k:]`.
/// Fails with |error| set (an "expected ..." sentence) when constraints
/// (C1)-(C3) of the op's description do not hold. tx.gather_nd_grad checks
/// its operands with it too.
FailureOr<SmallVector<int64_t>> gatherNDShape(ArrayRef<int64_t> data,
                                              ArrayRef<int64_t> indices,
                                              int64_t batchDims,
                                              std::string &error);

/// Length of `tx.range` over the constant scalars |start|, |limit| and
/// |delta| (one element type), as onnxruntime computes it:
/// `max(ceil((limit - start) / delta), 0)` with `limit - start` taken in the
/// element type and the division in f64; exact for integers (computed in
/// APInt two bits wider than the element type). Fails with |error| set for a
/// zero delta, non-finite float operands or a length past int64. The ONNX
/// importer applies its own, smaller element bound on top.
FailureOr<int64_t> rangeLength(DenseElementsAttr start, DenseElementsAttr limit,
                               DenseElementsAttr delta, std::string &error);

} // namespace mlir::txopt::tx

namespace mlir::txopt::tx::detail {

/// Backs `Tx_InferTypeOpAdaptor` (TxBase.td). The generated custom parser
/// calls inference with the inherent attributes it read from `attr-dict` still
/// in `attributes` and with defaults not yet populated; upstream's adaptor
/// only reads `properties`, so it would see null attributes there. Build the
/// properties the op will end up with and infer from those.
template <typename OpTy>
LogicalResult
inferWithParsedProperties(MLIRContext *context, std::optional<Location> loc,
                          ValueRange operands, DictionaryAttr attributes,
                          OpaqueProperties properties, RegionRange regions,
                          SmallVectorImpl<Type> &inferred) {
  using Properties = typename OpTy::Properties;
  if constexpr (std::is_same_v<Properties, EmptyProperties>) {
    typename OpTy::Adaptor adaptor(operands, attributes, properties, regions);
    return OpTy::inferReturnTypes(context, loc, adaptor, inferred);
  } else {
    Properties merged;
    if (properties)
      merged = *properties.as<Properties *>();
    if (attributes)
      for (NamedAttribute attr : attributes)
        OpTy::setInherentAttr(merged, attr.getName().getValue(),
                              attr.getValue());
    OpTy::populateDefaultProperties(
        OperationName(OpTy::getOperationName(), context), merged);
    typename OpTy::Adaptor adaptor(operands, attributes, merged, regions);
    return OpTy::inferReturnTypes(context, loc, adaptor, inferred);
  }
}

} // namespace mlir::txopt::tx::detail

namespace mlir::txopt::tx {

/// `custom<EnumKeyword>($attr)` in an assembly format: the bare case name of
/// a tx enum attribute, as in `reduction(mean)`. Printing the attribute
/// directly would emit its leading space (`reduction( mean)`).
template <typename EnumAttrT>
ParseResult parseEnumKeyword(OpAsmParser &parser, EnumAttrT &attr) {
  using EnumT = decltype(std::declval<EnumAttrT>().getValue());
  FailureOr<EnumT> value = FieldParser<EnumT>::parse(parser);
  if (failed(value))
    return failure();
  attr = EnumAttrT::get(parser.getContext(), *value);
  return success();
}

template <typename EnumAttrT>
void printEnumKeyword(OpAsmPrinter &printer, Operation *, EnumAttrT attr) {
  printer << stringifyEnum(attr.getValue());
}

} // namespace mlir::txopt::tx

#endif // TXOPT_DIALECT_TX_IR_TXOPS_H
