//===- PassOptions.h - typed options of the tx passes -----------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// The enumerated option types of Passes.td and the command-line parser that
// checks them when a pipeline is parsed, naming the allowed values.
//
//===----------------------------------------------------------------------===//

#ifndef TXOPT_DIALECT_TX_TRANSFORMS_PASSOPTIONS_H
#define TXOPT_DIALECT_TX_TRANSFORMS_PASSOPTIONS_H

#include "txopt/Dialect/Tx/IR/TxOps.h"
#include "txopt/Dialect/Tx/Transforms/Autodiff.h"
#include "txopt/Dialect/Tx/Transforms/TrainStep.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"

#include <optional>
#include <string>

namespace mlir::txopt::tx {

/// The element type tx-autocast runs matrix products in; fp32 (the default
/// pipeline's "no autocast") is not a tx-autocast value.
enum class GemmPrecision { fp32, bf16, fp16 };

/// Parses `fp32`, `bf16` or `fp16`.
std::optional<GemmPrecision> parseGemmPrecision(StringRef text);

} // namespace mlir::txopt::tx

namespace mlir::txopt {

/// The llvm::cl parser of an enumerated pass option: it accepts the names
/// given with llvm::cl::values, as llvm::cl::parser<E> does, but its error
/// lists them ("expected hybrid|e4m3, but got 'bogus'") where upstream's
/// says only "Cannot find option named 'bogus'". The members mirror
/// llvm::cl::parser<E> because MLIR's pass options read `Values` to print
/// an option back (GenericOptionParser::findArgStrForValue).
template <typename E>
class EnumOptionParser : public llvm::cl::generic_parser_base {
protected:
  class OptionInfo : public GenericOptionInfo {
  public:
    OptionInfo(StringRef name, E value, StringRef help)
        : GenericOptionInfo(name, help), V(value) {}
    llvm::cl::OptionValue<E> V;
  };
  llvm::SmallVector<OptionInfo, 4> Values;

public:
  using parser_data_type = E;

  EnumOptionParser(llvm::cl::Option &owner) : generic_parser_base(owner) {}

  unsigned getNumOptions() const override { return unsigned(Values.size()); }
  StringRef getOption(unsigned n) const override { return Values[n].Name; }
  StringRef getDescription(unsigned n) const override {
    return Values[n].HelpStr;
  }
  const llvm::cl::GenericOptionValue &getOptionValue(unsigned n) const override {
    return Values[n].V;
  }

  /// Returns true on error, as every llvm::cl parser does.
  bool parse(llvm::cl::Option &option, StringRef, StringRef arg, E &value) {
    for (const OptionInfo &info : Values)
      if (info.Name == arg) {
        value = info.V.getValue();
        return false;
      }
    std::string allowed;
    for (const OptionInfo &info : Values)
      allowed += (allowed.empty() ? "" : "|") + info.Name.str();
    return option.error("expected " + allowed + ", but got '" + arg + "'");
  }

  template <class DT>
  void addLiteralOption(StringRef name, const DT &value, StringRef help) {
    Values.emplace_back(name, static_cast<E>(value), help);
    AddLiteralOption(Owner, name);
  }
};

} // namespace mlir::txopt

/// Makes EnumOptionParser the parser of pass options of enum type |TYPE|
/// (MLIR's pass options use llvm::cl::parser<TYPE>). Expand at global scope.
#define TXOPT_ENUM_PASS_OPTION(TYPE)                                           \
  namespace llvm::cl {                                                         \
  template <>                                                                  \
  class parser<TYPE> : public ::mlir::txopt::EnumOptionParser<TYPE> {         \
  public:                                                                      \
    using ::mlir::txopt::EnumOptionParser<TYPE>::EnumOptionParser;             \
  };                                                                           \
  }

TXOPT_ENUM_PASS_OPTION(::mlir::txopt::tx::GemmPrecision)
TXOPT_ENUM_PASS_OPTION(::mlir::txopt::tx::LossKind)
TXOPT_ENUM_PASS_OPTION(::mlir::txopt::tx::OptimizerKind)
TXOPT_ENUM_PASS_OPTION(::mlir::txopt::tx::GradientWrt)
TXOPT_ENUM_PASS_OPTION(::mlir::txopt::tx::FP8ScalingKind)
TXOPT_ENUM_PASS_OPTION(::mlir::txopt::tx::FP8Format)
TXOPT_ENUM_PASS_OPTION(::mlir::txopt::tx::AmaxCompute)

#endif // TXOPT_DIALECT_TX_TRANSFORMS_PASSOPTIONS_H
