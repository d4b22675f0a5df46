//===- batch.cpp - the training batch, as txopt-run feeds it --------------===//
//
// SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "core/batch.h"

#include "core/npy.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>

namespace txrt {
namespace {
bool isTokenType(DType t) {
  return t == DType::I64 || t == DType::I32 || t == DType::I8;
}
} // namespace

std::vector<uint8_t> randomArgument(DType type, uint64_t elements, uint64_t seed,
                                    unsigned argIndex, int64_t bound) {
  std::vector<uint8_t> bytes(elements * dtypeSize(type));
  SplitMix64 rng{seed + (static_cast<uint64_t>(argIndex) << 32)};
  if (isFloatDType(type)) {
    for (uint64_t i = 0; i < elements; ++i) {
      double u1 = 1.0 - rng.uniform(), u2 = rng.uniform();
      double v = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
      storeFromDouble(type, bytes.data(), i, v);
    }
    return bytes;
  }
  if (type == DType::I1)
    bound = 2;
  for (uint64_t i = 0; i < elements; ++i)
    storeFromInt64(type, bytes.data(), i,
                   static_cast<int64_t>(rng.uniform() * static_cast<double>(bound)));
  return bytes;
}

Status readTokens(const std::string &path, std::vector<int64_t> &out) {
  std::ifstream file(path, std::ios::binary);
  if (!file)
    return Status::invalid("cannot read --data '" + path + "': " + std::strerror(errno));
  std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (path.size() >= 4 && path.compare(path.size() - 4, 4, ".npy") == 0) {
    NpyArray array;
    TXRT_RETURN_IF_ERROR(parseNpy(bytes, array).withContext("--data '" + path + "'"));
    DType type;
    if (array.descr == "<i8")
      type = DType::I64;
    else if (array.descr == "<i4")
      type = DType::I32;
    else if (array.descr == "|i1")
      type = DType::I8;
    else
      return Status::invalid("--data '" + path +
                             "': expected a 1-D integer array, but the file holds '" +
                             array.descr + "' values");
    if (array.shape.size() != 1)
      return Status::invalid("--data '" + path + "': expected a 1-D integer array, but "
                             "the file holds a rank-" +
                             std::to_string(array.shape.size()) + " array");
    out.resize(static_cast<size_t>(array.shape[0]));
    for (size_t i = 0; i < out.size(); ++i)
      out[i] = loadAsInt64(type, array.data.data(), i);
    return Status();
  }
  constexpr size_t kHeaderBytes = 256 * sizeof(int32_t);
  if (bytes.size() < kHeaderBytes)
    return Status::invalid("--data '" + path + "': too short for an llm.c token file "
                           "header (expected .npy or .bin)");
  int32_t header[256];
  std::memcpy(header, bytes.data(), kHeaderBytes);
  if (header[0] != 20240520 || header[1] != 1)
    return Status::invalid("--data '" + path + "': not an llm.c token file (magic " +
                           std::to_string(header[0]) + ", version " +
                           std::to_string(header[1]) + "; expected 20240520, 1)");
  int64_t count = header[2];
  if (count < 0 || bytes.size() != kHeaderBytes + static_cast<size_t>(count) * 2)
    return Status::invalid("--data '" + path + "': the header promises " +
                           std::to_string(count) + " tokens, but the file holds " +
                           std::to_string((bytes.size() - kHeaderBytes) / 2));
  out.resize(static_cast<size_t>(count));
  const auto *data = reinterpret_cast<const unsigned char *>(bytes.data() + kHeaderBytes);
  for (int64_t i = 0; i < count; ++i)
    out[i] = data[2 * i] | (data[2 * i + 1] << 8);
  return Status();
}

Status BatchFeeder::create(const Artifact &artifact, uint64_t seed,
                           const std::optional<std::string> &dataPath,
                           std::unique_ptr<BatchFeeder> &out, bool shuffle,
                           unsigned rank, unsigned ranks) {
  auto feeder = std::make_unique<BatchFeeder>();
  feeder->seed_ = seed;
  const fb::Artifact &a = artifact.root();
  size_t numArgs = a.arguments() ? a.arguments()->size() : 0;
  std::vector<unsigned> tokenArgs;
  std::optional<unsigned> labelArg;
  for (size_t i = 0; i < numArgs; ++i) {
    const fb::Argument *arg = a.arguments()->Get(i);
    if (str(arg->role()) == "data")
      feeder->tokensPerStep_ = artifact.argumentElements(static_cast<unsigned>(i));
    if (str(arg->role()) == "lr") {
      if (arg->dtype() != fb::DType::F32 || artifact.argumentElements(static_cast<unsigned>(i)) != 1)
        return Status::invalid("the lr argument '" + str(arg->name()) +
                               "' must be one f32 (the learning rate)");
      feeder->lrArg_ = Fed{static_cast<unsigned>(i), arg->dtype(), std::vector<uint8_t>(4)};
      feeder->compiledLr_ = arg->init() == fb::InitKind::SPLAT ? arg->splat() : 0.0;
      continue;
    }
    if (arg->init() != fb::InitKind::BATCH)
      continue;
    if (str(arg->role()) == "rng") {
      if (arg->dtype() != fb::DType::I64 || artifact.argumentElements(static_cast<unsigned>(i)) != 1)
        return Status::invalid("the rng argument '" + str(arg->name()) +
                               "' must be one i64 (the dropout key)");
      feeder->rngArg_ = Fed{static_cast<unsigned>(i), arg->dtype(), std::vector<uint8_t>(8)};
      continue;
    }
    if (dataPath && isTokenType(arg->dtype())) {
      if (str(arg->role()) == "labels") {
        if (labelArg)
          return Status::invalid("--data fills one labels argument, but '" +
                                 str(a.arguments()->Get(*labelArg)->name()) +
                                 "' and '" + str(arg->name()) + "' are both labels");
        labelArg = static_cast<unsigned>(i);
      } else {
        tokenArgs.push_back(static_cast<unsigned>(i));
      }
      continue;
    }
    int64_t bound = arg->index_bound() > 0 ? arg->index_bound() : 2;
    feeder->random_.push_back(
        Fed{static_cast<unsigned>(i), arg->dtype(),
            randomArgument(arg->dtype(), artifact.argumentElements(static_cast<unsigned>(i)),
                           seed, static_cast<unsigned>(i), bound)});
  }
  if (shuffle && !dataPath)
    return Status::invalid("--shuffle needs --data");
  if (dataPath) {
    if (tokenArgs.size() != 1)
      return Status::invalid("--data fills one token argument (and optionally one "
                             "labels argument), but the step has " +
                             std::to_string(tokenArgs.size()) +
                             " integer batch arguments");
    const fb::Argument *tokensArg = a.arguments()->Get(tokenArgs[0]);
    feeder->window_ = static_cast<int64_t>(artifact.argumentElements(tokenArgs[0]));
    feeder->tokensPerStep_ = static_cast<uint64_t>(feeder->window_);
    if (labelArg && artifact.argumentElements(*labelArg) !=
                        static_cast<uint64_t>(feeder->window_))
      return Status::invalid("--data: labels '" + str(a.arguments()->Get(*labelArg)->name()) +
                             "' and tokens '" + str(tokensArg->name()) +
                             "' have different shapes");
    TXRT_RETURN_IF_ERROR(readTokens(*dataPath, feeder->tokens_));
    const std::vector<int64_t> &tokens = feeder->tokens_;
    int64_t bound = tokensArg->index_bound();
    if (labelArg) {
      int64_t labels = a.arguments()->Get(*labelArg)->index_bound();
      if (labels > 0)
        bound = bound > 0 ? std::min(bound, labels) : labels;
    }
    feeder->vocabulary_ = bound;
    // Data parallelism: the ranks' windows side by side make one window
    // of the global batch; the stream advances by it.
    TXRT_RETURN_IF_ERROR(feeder->checkTokens("--data", *dataPath, tokens, ranks));
    feeder->windows_.emplace(static_cast<int64_t>(tokens.size()),
                             feeder->window_ * static_cast<int64_t>(ranks), shuffle, seed);
    size_t bytes = static_cast<size_t>(feeder->window_) * dtypeSize(tokensArg->dtype());
    feeder->tokensArg_ = Fed{tokenArgs[0], tokensArg->dtype(), std::vector<uint8_t>(bytes)};
    if (labelArg) {
      DType t = a.arguments()->Get(*labelArg)->dtype();
      feeder->labelsArg_ = Fed{*labelArg, t,
                               std::vector<uint8_t>(static_cast<size_t>(feeder->window_) *
                                                    dtypeSize(t))};
    }
  }
  // Gradient accumulation: a step consumes grad_accum micro-batches.
  feeder->gradAccum_ = a.grad_accum() > 1 ? a.grad_accum() : 1;
  feeder->tokensPerStep_ *= feeder->gradAccum_ * ranks;
  feeder->rank_ = rank;
  out = std::move(feeder);
  return Status();
}

void BatchFeeder::writesForStep(int64_t step, std::vector<Write> &out, unsigned micro) {
  out.clear();
  if (!randomWritten_) {
    for (const Fed &fed : random_)
      out.push_back(Write{fed.argument, &fed.bytes});
    randomWritten_ = true;
  }
  if (lrArg_ && schedule_ && micro == 0) {
    float lr = static_cast<float>(schedule_->at(step));
    std::memcpy(lrArg_->bytes.data(), &lr, sizeof lr);
    out.push_back(Write{lrArg_->argument, &lrArg_->bytes});
  }
  if (rngArg_) {
    // txopt-run's key: seed * 2^32 + k, k counting micro-batches from 0
    // (wrapping): (step - 1) * grad_accum + micro, the step's index when
    // there is no accumulation.
    uint64_t key = (seed_ << 32) + static_cast<uint64_t>(step - 1) * gradAccum_ + micro;
    std::memcpy(rngArg_->bytes.data(), &key, sizeof key);
    out.push_back(Write{rngArg_->argument, &rngArg_->bytes});
  }
  if (tokens_.empty() || !tokensArg_ || !windows_)
    return;
  writeWindow(tokens_, windows_->next() + static_cast<int64_t>(rank_) * window_, out);
}

void BatchFeeder::writeWindow(const std::vector<int64_t> &tokens, int64_t offset,
                              std::vector<Write> &out) {
  auto fill = [&](Fed &fed, int64_t shift) {
    for (int64_t k = 0; k < window_; ++k)
      storeFromInt64(fed.dtype, fed.bytes.data(), static_cast<size_t>(k),
                     tokens[static_cast<size_t>(offset + shift + k)]);
    out.push_back(Write{fed.argument, &fed.bytes});
  };
  fill(*tokensArg_, 0);
  if (labelsArg_)
    fill(*labelsArg_, 1);
}

Status BatchFeeder::checkTokens(const std::string &flag, const std::string &path,
                                const std::vector<int64_t> &tokens, unsigned ranks) const {
  int64_t needed = window_ * static_cast<int64_t>(ranks) + 1;
  if (static_cast<int64_t>(tokens.size()) < needed)
    return Status::invalid(flag + " '" + path + "' holds " + std::to_string(tokens.size()) +
                           " tokens; one batch " +
                           (ranks > 1 ? "of " + std::to_string(ranks) + " ranks " : "") +
                           "needs " + std::to_string(needed));
  if (vocabulary_ > 0)
    for (size_t p = 0; p < tokens.size(); ++p)
      if (tokens[p] < 0 || tokens[p] >= vocabulary_)
        return Status::invalid(flag + " '" + path + "': token " + std::to_string(tokens[p]) +
                               " at position " + std::to_string(p) +
                               " is outside the vocabulary [0, " +
                               std::to_string(vocabulary_) + ")");
  return Status();
}

Status BatchFeeder::loadValidation(const std::string &path) {
  if (!tokensArg_)
    return Status::invalid("--val-data needs --data (the validation windows fill the "
                           "arguments the training data fills)");
  std::vector<int64_t> tokens;
  TXRT_RETURN_IF_ERROR(readTokens(path, tokens));
  TXRT_RETURN_IF_ERROR(checkTokens("--val-data", path, tokens));
  valTokens_ = std::move(tokens);
  valWindows_ = (static_cast<int64_t>(valTokens_.size()) - 1) / window_;
  return Status();
}

void BatchFeeder::writesForValidation(int64_t k, std::vector<Write> &out) {
  out.clear();
  writeWindow(valTokens_, (k % valWindows_) * window_, out);
}

double BatchFeeder::lrForStep(int64_t step) const {
  double lr = schedule_ ? schedule_->at(step) : compiledLr_;
  return static_cast<double>(static_cast<float>(lr));
}

} // namespace txrt
