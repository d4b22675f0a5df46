//===- Inputs.cpp - argument values for txopt-run -------------------------===//
//
// SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "Inputs.h"

#include "txopt/Dialect/Tx/IR/TxOps.h"

#include "core/batch.h"

#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringExtras.h"

#include <cmath>

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::reference;

std::optional<int64_t> txopt_run::inferIndexBound(Value arg) {
  std::optional<int64_t> bound;
  auto note = [&](int64_t b) { bound = bound ? std::min(*bound, b) : b; };
  llvm::SmallVector<Value> worklist{arg};
  llvm::SmallPtrSet<Operation *, 16> seen;
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    for (OpOperand &use : value.getUses()) {
      Operation *user = use.getOwner();
      unsigned index = use.getOperandNumber();
      // An index into a gather's data: below the gathered dim.
      auto noteGatheredDim = [&](auto gather) {
        if (index != 1)
          return;
        auto data = gather.getData().getType();
        if (auto axis = tx::normalizeAxis(gather.getAxis(), data.getRank());
            succeeded(axis))
          note(data.getDimSize(*axis));
      };
      if (auto gather = dyn_cast<tx::GatherOp>(user)) {
        noteGatheredDim(gather);
        continue;
      }
      if (auto gather = dyn_cast<tx::GatherElementsOp>(user)) {
        noteGatheredDim(gather);
        continue;
      }
      if (auto loss = dyn_cast<tx::SoftmaxCrossEntropyLossOp>(user)) {
        if (index == 1)
          note(loss.getScores().getType().getDimSize(1));
        continue;
      }
      bool movesData =
          isa<tx::CastOp, tx::ReshapeOp, tx::SqueezeOp, tx::UnsqueezeOp,
              tx::TransposeOp, tx::SliceOp, tx::PadOp, tx::ConcatOp,
              tx::ExpandOp, tx::IdentityOp, tx::SplitOp>(user) ||
          (isa<tx::WhereOp>(user) && index > 0);
      if (movesData && seen.insert(user).second)
        for (Value result : user->getResults())
          worklist.push_back(result);
    }
  }
  return bound;
}


Tensor txopt_run::randomTensor(RankedTensorType type, uint64_t seed,
                               unsigned argIndex, int64_t bound) {
  Tensor tensor(type);
  // One stream per argument: its state starts at seed + (argIndex << 32);
  // txrun's generator (core/batch.h), so both draw the same values.
  txrt::SplitMix64 rng{seed + (static_cast<uint64_t>(argIndex) << 32)};
  int64_t n = tensor.getNumElements();
  if (tensor.isFloat()) {
    for (int64_t i = 0; i < n; ++i) {
      // Box-Muller, cosine branch: u1 in (0, 1], u2 in [0, 1).
      double u1 = 1.0 - rng.uniform(), u2 = rng.uniform();
      tensor.floats()[i] =
          std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
    }
    roundToElementType(tensor);
    return tensor;
  }
  if (type.getElementType().isInteger(1))
    bound = 2;
  for (int64_t i = 0; i < n; ++i)
    tensor.ints()[i] = static_cast<int64_t>(rng.uniform() * static_cast<double>(bound));
  return tensor;
}

std::string txopt_run::npyFileNameFor(const std::string &name) {
  std::string out;
  for (char c : name)
    out += (llvm::isAlnum(c) || c == '.' || c == '_' || c == '-') ? c : '_';
  if (out.empty() || out[0] == '.')
    out = "_" + out;
  return out + ".npy";
}
