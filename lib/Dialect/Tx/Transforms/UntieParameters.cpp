//===- UntieParameters.cpp - tx-untie-parameters ---------------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// Gives each node its own copy of a trainable weight that several nodes read
// because the exporter stored identical initializers once, and keeps an
// embedding reused as the LM head tied (Passes.td).
//
//===----------------------------------------------------------------------===//

#include "txopt/Dialect/Tx/IR/TxOps.h"
#include "txopt/Dialect/Tx/Transforms/Passes.h"

#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Regex.h"

namespace mlir::txopt::tx {
#define GEN_PASS_DEF_UNTIEPARAMETERSPASS
#include "txopt/Dialect/Tx/Transforms/Passes.h.inc"
} // namespace mlir::txopt::tx

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::tx;

namespace {

/// One ONNX node reading a parameter: the operands through which it reads
/// it (an importer may turn one node into several ops; they stay together).
struct Reader {
  std::string scope; // the PyTorch module, "" when the exporter did not say
  bool isEmbedding = false; // a tx.gather reading the parameter as its table
  llvm::SmallVector<OpOperand *> operands;
};

/// The node an op was imported from and its module scope: the importer's
/// NameLoc("node", NameLoc("module.path")). Ops without a NameLoc are each
/// their own node.
std::pair<StringAttr, std::string> nodeAndScope(Operation *op) {
  auto name = dyn_cast<NameLoc>(op->getLoc());
  if (!name) {
    std::string key;
    llvm::raw_string_ostream(key) << "op@" << static_cast<const void *>(op);
    return {StringAttr::get(op->getContext(), key), ""};
  }
  std::string scope;
  if (auto child = dyn_cast<NameLoc>(name.getChildLoc()))
    scope = child.getName().str();
  return {name.getName(), scope};
}

/// The name of the copy of |original| for reader |index| (1 for the second
/// reader), per the rule in Passes.td; |taken| holds every symbol so far.
std::string copyName(StringRef original, StringRef scope, unsigned index,
                     const llvm::StringSet<> &taken) {
  if (!scope.empty()) {
    StringRef leaf = original.contains('.') ? original.rsplit('.').second
                                            : original;
    std::string name = (scope + "." + leaf).str();
    if (!taken.contains(name))
      return name;
  }
  std::string name = (original + "." + Twine(index)).str();
  for (unsigned j = 1; taken.contains(name); ++j)
    name = (original + "." + Twine(index) + "_" + Twine(j)).str();
  return name;
}

/// True when module |scope| owns parameter |name|: the name is
/// `<scope>.<leaf>`, as PyTorch names a module's own parameters.
bool ownsName(StringRef scope, StringRef name) {
  return !scope.empty() && name.starts_with(scope) &&
         name.drop_front(scope.size()).starts_with(".") &&
         !name.drop_front(scope.size() + 1).contains('.');
}

/// Why parameter |name|, read by the nodes |byNode|, is shared on purpose
/// and stays tied, or "" when the exporter shared it by accident: it is a
/// module's own parameter (named `<scope>.<leaf>` after one of its readers'
/// modules) that nodes of other modules read too.
template <typename ByNode>
StringRef whyShared(StringRef name, const ByNode &byNode) {
  unsigned embeddings = llvm::count_if(
      byNode, [](auto &entry) { return entry.second.isEmbedding; });
  if (embeddings == 1)
    return "an embedding reused as the LM head";
  llvm::StringSet<> scopes;
  for (auto &entry : byNode)
    scopes.insert(entry.second.scope);
  if (scopes.size() == 1)
    return scopes.begin()->getKey().empty()
               ? "the export names no modules to untie it by"
               : "read by one module only";
  bool owned = llvm::any_of(scopes, [&](const auto &scope) {
    return ownsName(scope.getKey(), name);
  });
  if (!owned)
    return "not a module's own parameter: a computed constant several "
           "modules read";
  return "";
}

struct UntieParametersPass
    : public tx::impl::UntieParametersPassBase<UntieParametersPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    llvm::Regex tieRegex(tie), untieRegex(untie);
    std::string regexError;
    if ((!tie.empty() && !tieRegex.isValid(regexError)) ||
        (!untie.empty() && !untieRegex.isValid(regexError))) {
      module.emitError("invalid --tie/--untie regex: ") << regexError;
      return signalPassFailure();
    }

    // Each parameter's readers in program order, one per (function, node).
    llvm::MapVector<StringAttr,
                    llvm::MapVector<std::pair<Operation *, StringAttr>, Reader>>
        readers;
    module.walk([&](Operation *op) {
      for (OpOperand &operand : op->getOpOperands()) {
        auto load = operand.get().getDefiningOp<LoadParameterOp>();
        if (!load)
          continue;
        auto [node, scope] = nodeAndScope(op);
        Operation *function = op->getParentOfType<FunctionOpInterface>();
        Reader &reader = readers[load.getNameAttr().getAttr()][{function, node}];
        reader.scope = scope;
        if (auto gather = dyn_cast<GatherOp>(op))
          reader.isEmbedding |= operand.getOperandNumber() == 0;
        reader.operands.push_back(&operand);
      }
    });

    SymbolTable symbols(module);
    llvm::StringSet<> taken;
    for (Operation &op : module.getBody()->getOperations())
      if (auto symbol = op.getAttrOfType<StringAttr>(
              SymbolTable::getSymbolAttrName()))
        taken.insert(symbol.getValue());

    Builder builder(&getContext());
    llvm::SmallVector<NamedAttribute> untied, tied;
    if (auto done = module->getAttrOfType<DictionaryAttr>(kUntiedParametersAttrName))
      llvm::append_range(untied, done.getValue());
    if (auto kept = module->getAttrOfType<DictionaryAttr>(kTiedParametersAttrName))
      llvm::append_range(tied, kept.getValue());

    for (auto &[paramName, byNode] : readers) {
      auto param = symbols.lookup<ParameterOp>(paramName);
      if (!param || param.getFrozen() || byNode.size() < 2)
        continue;
      StringRef name = paramName.getValue();
      StringRef keptBecause = whyShared(name, byNode);
      if (keptBecause.empty() && !tie.empty() && tieRegex.match(name))
        keptBecause = "kept by --tie";
      if (!untie.empty() && untieRegex.match(name))
        keptBecause = "";
      if (!keptBecause.empty()) {
        if (!llvm::any_of(tied, [&](NamedAttribute a) { return a.getName() == name; }))
          tied.emplace_back(builder.getStringAttr(name),
                            builder.getStringAttr(keptBecause));
        continue;
      }

      llvm::SmallVector<Attribute> copies;
      OpBuilder paramBuilder(param);
      paramBuilder.setInsertionPointAfter(param);
      // The reader of the module that owns the name keeps the original (the
      // LM head keeps `lm_head.weight`, the embedding gets a copy), else the
      // first reader does.
      auto owner = llvm::find_if(byNode, [&](auto &entry) {
        return ownsName(entry.second.scope, name);
      });
      size_t keeper = owner == byNode.end() ? 0 : owner - byNode.begin();
      for (auto [index, entry] : llvm::enumerate(byNode)) {
        if (index == keeper)
          continue;
        Reader &reader = entry.second;
        std::string copy = copyName(name, reader.scope, index, taken);
        taken.insert(copy);
        auto clone = cast<ParameterOp>(paramBuilder.clone(*param));
        clone.setSymName(copy);
        paramBuilder.setInsertionPointAfter(clone);
        copies.push_back(builder.getStringAttr(copy));
        // One new load per original load this node reads through.
        llvm::DenseMap<Operation *, Value> newLoads;
        for (OpOperand *operand : reader.operands) {
          auto load = operand->get().getDefiningOp<LoadParameterOp>();
          Value &replacement = newLoads[load];
          if (!replacement) {
            OpBuilder loadBuilder(load);
            loadBuilder.setInsertionPointAfter(load);
            replacement = LoadParameterOp::create(loadBuilder, load.getLoc(),
                                                  load.getType(), copy);
          }
          operand->set(replacement);
        }
      }
      untied.emplace_back(builder.getStringAttr(name),
                          builder.getArrayAttr(copies));
    }
    if (!untied.empty())
      module->setAttr(kUntiedParametersAttrName,
                      builder.getDictionaryAttr(untied));
    if (!tied.empty())
      module->setAttr(kTiedParametersAttrName, builder.getDictionaryAttr(tied));
  }
};

} // namespace
