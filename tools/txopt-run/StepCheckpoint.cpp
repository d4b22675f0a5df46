//===- StepCheckpoint.cpp - txopt-run --steps: --save, --resume -----------===//
//
// SPDX-License-Identifier: Apache-2.0
// What a txopt-run checkpoint holds and how its tensors are coded: the
// state arguments, loaded on --resume and written by --save, as txrt's
// safetensors checkpoints (runtime/src/core/checkpoint.h), so txrun can
// resume a txopt-run run and the other way round.
//
//===----------------------------------------------------------------------===//

#include "StepRunner.h"

#include "txopt/Dialect/Tx/Transforms/TrainStep.h"
#include "txopt/Reference/Npy.h"

#include "core/dtype.h"

#include "llvm/Support/FileSystem.h"

#include <cstring>

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::reference;
using namespace txopt_run;

namespace {

/// |tensor|'s values as the raw little-endian bytes of |dtype|.
std::vector<uint8_t> encodeTensor(const Tensor &tensor, const std::string &dtype) {
  size_t n = static_cast<size_t>(tensor.getNumElements());
  std::vector<uint8_t> out(n * txrt::safetensorsDTypeSize(dtype));
  uint8_t *p = out.data();
  for (size_t i = 0; i < n; ++i) {
    if (dtype == "F32") {
      float v = static_cast<float>(tensor.floats()[i]);
      std::memcpy(p + 4 * i, &v, 4);
    } else if (dtype == "F64") {
      double v = tensor.floats()[i];
      std::memcpy(p + 8 * i, &v, 8);
    } else if (dtype == "F16" || dtype == "BF16") {
      uint16_t v = dtype == "F16" ? txrt::f16FromDouble(tensor.floats()[i])
                                  : txrt::bf16FromDouble(tensor.floats()[i]);
      std::memcpy(p + 2 * i, &v, 2);
    } else if (dtype == "F8_E4M3") {
      p[i] = txrt::f8e4m3fnFromDouble(tensor.floats()[i]);
    } else if (dtype == "F8_E5M2") {
      p[i] = txrt::f8e5m2FromDouble(tensor.floats()[i]);
    } else {
      int64_t v = tensor.ints()[i];
      size_t size = txrt::safetensorsDTypeSize(dtype);
      if (dtype == "BOOL")
        v = v != 0;
      for (size_t b = 0; b < size; ++b)
        p[size * i + b] = static_cast<uint8_t>(static_cast<uint64_t>(v) >> (8 * b));
    }
  }
  return out;
}

/// The inverse of encodeTensor into a tensor of |type|.
Tensor decodeTensor(RankedTensorType type, const txrt::CheckpointTensor &t) {
  Tensor tensor(type);
  size_t n = static_cast<size_t>(tensor.getNumElements());
  const uint8_t *p = t.bytes.data();
  const std::string &dtype = t.dtype;
  for (size_t i = 0; i < n; ++i) {
    if (dtype == "F32") {
      float v;
      std::memcpy(&v, p + 4 * i, 4);
      tensor.floats()[i] = v;
    } else if (dtype == "F64") {
      std::memcpy(&tensor.floats()[i], p + 8 * i, 8);
    } else if (dtype == "F16" || dtype == "BF16") {
      uint16_t v;
      std::memcpy(&v, p + 2 * i, 2);
      tensor.floats()[i] = dtype == "F16" ? txrt::f16ToDouble(v) : txrt::bf16ToDouble(v);
    } else if (dtype == "F8_E4M3") {
      tensor.floats()[i] = txrt::f8e4m3fnToDouble(p[i]);
    } else if (dtype == "F8_E5M2") {
      tensor.floats()[i] = txrt::f8e5m2ToDouble(p[i]);
    } else {
      size_t size = txrt::safetensorsDTypeSize(dtype);
      uint64_t bits = 0;
      for (size_t b = 0; b < size; ++b)
        bits |= static_cast<uint64_t>(p[size * i + b]) << (8 * b);
      int64_t v = static_cast<int64_t>(bits);
      if (size < 8 && dtype != "BOOL" && (bits >> (8 * size - 1)) & 1)
        v = static_cast<int64_t>(bits | (~uint64_t(0) << (8 * size))); // sign-extend
      tensor.ints()[i] = v;
    }
  }
  return tensor;
}

} // namespace

Tensor txopt_run::shardOf(const Tensor &whole, RankedTensorType shardType, int64_t rank) {
  Tensor shard(shardType);
  int64_t size = shardType.getNumElements(), n = whole.getNumElements();
  for (int64_t i = 0; i < size && rank * size + i < n; ++i)
    shard.floats()[i] = whole.floats()[rank * size + i];
  return shard;
}

std::optional<llvm::ArrayRef<int64_t>> StepRunner::shardOfArg(unsigned arg) {
  if (auto shape = func.getArgAttrOfType<DenseI64ArrayAttr>(arg, tx::kShardOfAttrName))
    return shape.asArrayRef();
  return std::nullopt;
}

/// --resume: the checkpoint, whose seed the run continues with (it drives
/// the random batch and the dropout keys).
llvm::Error StepRunner::loadResume() {
  if (!run.resumeDir)
    return llvm::Error::success();
  checkpoint.emplace();
  if (txrt::Status st = txrt::loadCheckpoint(*run.resumeDir, *checkpoint); !st.ok())
    return error("--resume: " + st.message());
  if (options.seed != 0 && options.seed != checkpoint->info.seed)
    return error("--resume: the checkpoint's run has --seed " +
                 llvm::Twine(checkpoint->info.seed) + ", not " + llvm::Twine(options.seed) +
                 " (resuming keeps the seed; leave --seed out)");
  seed = checkpoint->info.seed;
  return llvm::Error::success();
}

/// The state a checkpoint holds: every argument a result carries
/// (weights, moments, step, FP8 scaling state, loss scale), in argument
/// order; with --resume, that state is loaded here.
llvm::Error StepRunner::prepareCheckpoints() {
  for (auto [r, a] : carried)
    stateArgs.push_back(a);
  llvm::sort(stateArgs);
  stateArgs.erase(std::unique(stateArgs.begin(), stateArgs.end()), stateArgs.end());
  recipe = tx::trainStepRecipeJson(func);
  if (run.saveDir || run.resumeDir) {
    for (unsigned a : stateArgs) {
      auto type = cast<RankedTensorType>(func.getArgument(a).getType());
      std::string dtype = safetensorsDType(type.getElementType());
      if (dtype.empty())
        return error("argument '" + argName(func, a) + "' has type " + typeText(type) +
                     ", which checkpoints cannot hold");
      auto role = func.getArgAttrOfType<StringAttr>(a, tx::kRoleAttrName);
      // A rank's shard (tx.shard_of) is saved whole: the checkpoint is the
      // same for any rank count, and for the plain step.
      llvm::ArrayRef<int64_t> shape = shardOfArg(a).value_or(type.getShape());
      specs.push_back({argName(func, a), role ? role.str() : "", dtype,
                       std::vector<int64_t>(shape.begin(), shape.end()), {}});
      if (auto sites = func.getArgAttrOfType<ArrayAttr>(a, tx::kFP8SitesAttrName))
        for (Attribute site : sites)
          if (auto text = dyn_cast<StringAttr>(site))
            specs.back().sites.push_back(text.str());
    }
  }
  if (!checkpoint)
    return llvm::Error::success();
  std::vector<std::string> warnings;
  if (txrt::Status st = txrt::checkCompatible(*checkpoint, recipe, specs, &warnings); !st.ok())
    return error("--resume: " + st.message());
  for (const std::string &w : warnings)
    llvm::errs() << "txopt-run: warning: --resume: " << w << "\n";
  for (unsigned a : stateArgs) {
    auto type = cast<RankedTensorType>(func.getArgument(a).getType());
    const txrt::CheckpointTensor &saved = *checkpoint->find(argName(func, a));
    if (auto whole = shardOfArg(a)) {
      // Split for this run's ranks: rank 0's shard here, every rank's when
      // the ranks start (runRanks).
      Tensor full = decodeTensor(RankedTensorType::get(*whole, type.getElementType()), saved);
      args[a] = shardOf(full, type, 0);
      resumedWhole[a] = std::move(full);
      continue;
    }
    args[a] = decodeTensor(type, saved);
  }
  const txrt::CheckpointInfo &info = checkpoint->info;
  firstStep = info.step + 1;
  if (info.hasData && !options.dataPath)
    return error("--resume: the checkpoint's run read --data '" + info.dataFile +
                 "'; pass --data to continue it");
  if (windows) {
    if (info.hasData && (info.dataTokens != tokens.size() || info.shuffle != run.shuffle))
      llvm::errs() << "txopt-run: warning: --resume: the checkpoint's run read "
                   << info.dataTokens << " tokens" << (info.shuffle ? " shuffled" : "")
                   << ", this one " << tokens.size() << (run.shuffle ? " shuffled" : "")
                   << "; continuing at window " << info.dataWindows << ", offset "
                   << info.dataOffset << "\n";
    windows->resume(info.dataWindows, info.dataOffset);
  }
  return llvm::Error::success();
}

/// --save: the state after |step|, with what resuming needs.
llvm::Error StepRunner::save(int64_t step) {
  txrt::Checkpoint out;
  txrt::CheckpointInfo &info = out.info;
  info.producer = "txopt-run";
  info.recipe = recipe;
  info.step = step;
  info.seed = seed;
  if (windows) {
    info.hasData = true;
    info.dataFile = *options.dataPath;
    info.dataTokens = tokens.size();
    info.dataOffset = windows->offset();
    info.dataWindows = windows->consumed();
    info.shuffle = run.shuffle;
  }
  info.schedule = schedule ? schedule->json() : "null";
  for (size_t k = 0; k < stateArgs.size(); ++k) {
    unsigned a = stateArgs[k];
    auto type = cast<RankedTensorType>(func.getArgument(a).getType());
    // The state as one rank holds it: simulated ranks' own arguments, else
    // this run's.
    auto ofRank = [&](size_t r) -> const Tensor & {
      return rankArgs.empty() ? args[a] : rankArgs[r][a];
    };
    size_t ranks = rankArgs.empty() ? 1 : rankArgs.size();
    Tensor value = ofRank(0);
    if (auto whole = shardOfArg(a)) {
      // Gather the shards in rank order and cut the padding off.
      value = Tensor(RankedTensorType::get(*whole, type.getElementType()));
      int64_t size = type.getNumElements(), n = value.getNumElements();
      for (size_t r = 0; r < ranks; ++r)
        for (int64_t i = 0; i < size && static_cast<int64_t>(r) * size + i < n; ++i)
          value.floats()[r * size + i] = ofRank(r).floats()[i];
    } else {
      // Replicated state (parameters, step, FP8 scaling state) is the same
      // on every rank; a difference is a bug, not something to save.
      auto sameBits = [](const auto &a, const auto &b) {
        return a.size() == b.size() &&
               (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(a[0])) == 0);
      };
      for (size_t r = 1; r < ranks; ++r)
        if (!sameBits(ofRank(r).floats(), value.floats()) ||
            !sameBits(ofRank(r).ints(), value.ints()))
          return error("--save: rank " + llvm::Twine(r) + " holds another '" + specs[k].name +
                       "' than rank 0 (replicated state must agree)");
    }
    out.tensors.push_back({specs[k].name, specs[k].role, specs[k].dtype, specs[k].shape,
                           encodeTensor(value, specs[k].dtype), specs[k].sites});
  }
  if (txrt::Status st = txrt::saveCheckpoint(*run.saveDir, out); !st.ok())
    return error("--save: step " + llvm::Twine(step) + ": " + st.message());
  llvm::errs() << "txopt-run: saved step " << step << " to '" << *run.saveDir << "'\n";
  return llvm::Error::success();
}
