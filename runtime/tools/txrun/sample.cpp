//===- sample.cpp - txrun sample: text from a trained step ----------------===//
//
// SPDX-License-Identifier: Apache-2.0
// Autoregressive generation with the artifact's logits function. The step's
// batch has a fixed shape [B, T], so each new token costs one forward of
// the whole batch: the context (the last T tokens at most) fills row 0 from
// position 0, the rest is zeros, and the scores of the context's last
// position choose the next token. The model is causal, so the zeros after
// the context cannot change those scores. Slow for long batches, exact, and
// needs nothing beyond what the training step was compiled with.
//
//===----------------------------------------------------------------------===//

#include "sample.h"

#include "options.h"

#include "core/batch.h"
#include "core/checkpoint.h"
#include "core/session.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numeric>

using namespace txrt;
using namespace txrun;

const char *const txrun::kSampleHelp =
    R"(OVERVIEW: txrun sample - generate tokens with a compiled step's model

USAGE: txrun sample STEP.txa [--resume DIR] (--prompt TEXT | --prompt-ids LIST) [options]

The artifact must carry a logits function (txopt --train --eval with a
softmax cross-entropy loss). Each new token runs it once over the batch,
the context in row 0 of the token argument.

OPTIONS:
  --resume DIR         Take the parameters from the checkpoint in DIR (txrun
                       or txopt-run --save); without it, the artifact's
                       initial weights.
  --prompt TEXT        The prompt's bytes are its tokens (a byte-level
                       vocabulary of at least 256); the output is printed
                       as text.
  --prompt-ids LIST    Comma-separated token ids; the output is ids.
  --tokens N           Tokens to generate (default 200).
  --top-k K            Sample among the K most likely tokens (default 1:
                       greedy, always the most likely).
  --temperature X      Divide the scores by X > 0 before sampling (default 1).
  --seed S             Seed of the sampling (default 0).
  --weights-dir DIR    Folder for the artifact's relative EXTERNAL weights.
  --device I           CUDA device ordinal (default 0).
  --help               Print this help.
)";

namespace {

/// An integer >= |min| (options.cpp's parseInt, bounded).
bool parseCount(const std::string &text, int64_t &out, int64_t min) {
  int64_t v = 0;
  if (!parseInt(text, v) || v < min)
    return false;
  out = v;
  return true;
}

bool parseIds(const std::string &text, std::vector<int64_t> &out) {
  out.clear();
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    int64_t id;
    if (!parseCount(text.substr(start, comma - start), id, 0))
      return false;
    out.push_back(id);
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  return !out.empty();
}

/// The generation state: the session and where the context goes.
class Sampler {
public:
  explicit Sampler(const SampleOptions &o) : o(o), rng{o.seed} {}
  int run();

private:
  int load();
  int loadWeights();
  int generate(std::vector<int64_t> context);
  int64_t choose(std::vector<double> &scores);

  const SampleOptions &o;
  SplitMix64 rng;
  std::shared_ptr<const Artifact> artifact;
  std::unique_ptr<Session> session;
  int tokensArg = -1;
  uint64_t seqLen = 0, rows = 0;
  int64_t vocabulary = 0;
};

int Sampler::load() {
  std::unique_ptr<Artifact> loaded;
  if (Status s = Artifact::loadFile(o.artifact, loaded); !s.ok())
    return fail(kRunError, s.message());
  artifact = std::move(loaded);
  const fb::Artifact &a = artifact->root();
  if (!a.logits())
    return fail(kRunError, "the artifact has no logits function to sample from "
                           "(compile with txopt --train --eval; the loss must be a "
                           "softmax cross-entropy)");
  // The token argument: the one with role "data", an integer tensor.
  for (unsigned i = 0; a.arguments() && i < a.arguments()->size(); ++i) {
    const fb::Argument *arg = a.arguments()->Get(i);
    if (str(arg->role()) == "data" && !isFloatDType(arg->dtype()))
      tokensArg = static_cast<int>(i);
  }
  if (tokensArg < 0)
    return fail(kRunError, "the step has no integer argument with role 'data' to hold "
                           "the context");
  const fb::Argument *tokens = a.arguments()->Get(tokensArg);
  rows = artifact->argumentElements(static_cast<unsigned>(tokensArg));
  seqLen = tokens->shape()->size() ? static_cast<uint64_t>(
                                         tokens->shape()->Get(tokens->shape()->size() - 1))
                                   : 1;
  const fb::Result *scores = a.logits()->results()->Get(0);
  vocabulary = scores->shape()->Get(scores->shape()->size() - 1);
  uint64_t scoreRows = 0;
  shapeElements(scores->shape(), scoreRows);
  scoreRows /= static_cast<uint64_t>(vocabulary);
  if (scoreRows != rows)
    return fail(kRunError, "the logits have " + std::to_string(scoreRows) +
                               " rows, but the token argument '" + str(tokens->name()) +
                               "' holds " + std::to_string(rows) +
                               " tokens: rows cannot be matched to positions");
  if (o.prompt && vocabulary < 256)
    return fail(kUsageError, "--prompt TEXT needs a byte-level vocabulary (>= 256 "
                             "tokens); this one has " +
                                 std::to_string(vocabulary) + ": use --prompt-ids");
  int64_t bound = tokens->index_bound() > 0 ? tokens->index_bound() : vocabulary;
  for (int64_t id : o.promptIds)
    if (id >= bound)
      return fail(kUsageError, "--prompt-ids: token " + std::to_string(id) +
                                   " is outside the vocabulary [0, " +
                                   std::to_string(bound) + ")");
  SessionOptions options;
  options.device = o.device;
  if (o.weightsDir)
    options.weightsDir = *o.weightsDir;
  if (Status s = Session::create(artifact, options, session); !s.ok())
    return fail(kRunError, s.message());
  return kSuccess;
}

/// --resume: every parameter from the checkpoint, by name (nothing else is
/// needed to sample); a missing or differently sized one is refused.
int Sampler::loadWeights() {
  if (!o.resumeDir) {
    std::fprintf(stderr, "txrun sample: no --resume: sampling with the artifact's "
                         "initial weights\n");
    return kSuccess;
  }
  Checkpoint checkpoint;
  if (Status s = loadCheckpoint(*o.resumeDir, checkpoint); !s.ok())
    return fail(kRunError, "--resume: " + s.message());
  const fb::Artifact &a = artifact->root();
  unsigned loaded = 0;
  for (unsigned i = 0; i < a.arguments()->size(); ++i) {
    const fb::Argument *arg = a.arguments()->Get(i);
    if (str(arg->role()) != "param")
      continue;
    const CheckpointTensor *t = checkpoint.find(str(arg->name()));
    uint64_t bytes = artifact->argumentElements(i) * dtypeSize(arg->dtype());
    if (!t)
      return fail(kRunError, "--resume: the checkpoint has no tensor '" + str(arg->name()) +
                                 "' (a checkpoint of another model?)");
    if (t->bytes.size() != bytes)
      return fail(kRunError, "--resume: tensor '" + t->name + "' holds " +
                                 std::to_string(t->bytes.size()) + " bytes; the step's '" +
                                 str(arg->name()) + "' needs " + std::to_string(bytes));
    if (Status s = session->writeArgument(i, t->bytes.data(), t->bytes.size()); !s.ok())
      return fail(kRunError, "--resume: " + s.message());
    ++loaded;
  }
  std::fprintf(stderr, "txrun sample: %u parameters from '%s' (step %lld)\n", loaded,
               o.resumeDir->c_str(), static_cast<long long>(checkpoint.info.step));
  return kSuccess;
}

/// The next token from one row of scores: the most likely (top-k 1), or a
/// draw among the k most likely with softmax(scores / temperature).
int64_t Sampler::choose(std::vector<double> &scores) {
  std::vector<int64_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  int64_t k = std::min<int64_t>(o.topK, static_cast<int64_t>(scores.size()));
  // Ties go to the smaller id, so greedy decoding is reproducible.
  std::partial_sort(order.begin(), order.begin() + k, order.end(),
                    [&](int64_t x, int64_t y) {
                      return scores[x] > scores[y] || (scores[x] == scores[y] && x < y);
                    });
  if (k == 1)
    return order[0];
  std::vector<double> weights(k);
  double top = scores[order[0]] / o.temperature, sum = 0;
  for (int64_t j = 0; j < k; ++j)
    sum += weights[j] = std::exp(scores[order[j]] / o.temperature - top);
  double u = rng.uniform() * sum;
  for (int64_t j = 0; j < k; ++j) {
    u -= weights[j];
    if (u < 0)
      return order[j];
  }
  return order[k - 1];
}

int Sampler::generate(std::vector<int64_t> context) {
  const fb::Argument *arg = artifact->root().arguments()->Get(tokensArg);
  std::vector<uint8_t> batch(rows * dtypeSize(arg->dtype()), 0);
  bool text = o.prompt.has_value();
  if (text)
    std::fwrite(o.prompt->data(), 1, o.prompt->size(), stdout);
  for (int64_t n = 0; n < o.tokens; ++n) {
    size_t keep = std::min<size_t>(context.size(), seqLen);
    std::fill(batch.begin(), batch.end(), 0);
    for (size_t p = 0; p < keep; ++p)
      storeFromInt64(arg->dtype(), batch.data(), p, context[context.size() - keep + p]);
    if (Status s = session->writeArgument(static_cast<unsigned>(tokensArg), batch.data(),
                                          batch.size());
        !s.ok())
      return fail(kRunError, s.message());
    std::vector<double> scores;
    if (Status s = session->runLogits(nullptr); !s.ok())
      return fail(kRunError, s.message());
    if (Status s = session->readLogitsRow(keep - 1, scores); !s.ok())
      return fail(kRunError, s.message());
    for (double x : scores)
      if (!std::isfinite(x))
        return fail(kRunError, "token " + std::to_string(n + 1) + ": the scores hold " +
                                   (std::isnan(x) ? "NaN" : "an infinite value"));
    int64_t next = choose(scores);
    context.push_back(next);
    if (text) {
      unsigned char byte = static_cast<unsigned char>(next < 256 ? next : '?');
      std::fputc(byte, stdout);
    } else {
      std::printf(n ? ",%lld" : "%lld", static_cast<long long>(next));
    }
    std::fflush(stdout);
  }
  std::printf("\n");
  return kSuccess;
}

int Sampler::run() {
  if (int exit = load())
    return exit;
  if (int exit = loadWeights())
    return exit;
  std::vector<int64_t> context = o.promptIds;
  if (o.prompt)
    for (unsigned char c : *o.prompt)
      context.push_back(c);
  return generate(std::move(context));
}

} // namespace

bool txrun::parseSampleOptions(int argc, char **argv, SampleOptions &o,
                               std::string &error) {
  for (int i = 2; i < argc; ++i) {
    std::string arg = argv[i], name = arg, value;
    if (arg == "--help" || arg == "-h") {
      o.help = true;
      continue;
    }
    bool inlineValue = false;
    if (size_t eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      inlineValue = true;
    }
    static const char *const valued[] = {"--resume", "--prompt", "--prompt-ids",
                                         "--tokens", "--top-k", "--temperature",
                                         "--seed", "--weights-dir", "--device"};
    bool isValued = std::find_if(std::begin(valued), std::end(valued), [&](const char *v) {
                      return name == v;
                    }) != std::end(valued);
    if (!isValued) {
      if (arg.size() > 1 && arg[0] == '-') {
        error = "unknown option '" + arg + "' (see txrun sample --help)";
        return false;
      }
      if (!o.artifact.empty()) {
        error = "more than one artifact given ('" + o.artifact + "' and '" + arg + "')";
        return false;
      }
      o.artifact = arg;
      continue;
    }
    if (!inlineValue) {
      if (i + 1 >= argc) {
        error = "option '" + name + "' needs a value";
        return false;
      }
      value = argv[++i];
    }
    int64_t n = 0;
    if (name == "--resume") {
      o.resumeDir = value;
    } else if (name == "--weights-dir") {
      o.weightsDir = value;
    } else if (name == "--prompt") {
      if (value.empty()) {
        error = "--prompt needs at least one character";
        return false;
      }
      o.prompt = value;
    } else if (name == "--prompt-ids") {
      if (!parseIds(value, o.promptIds)) {
        error = "expected --prompt-ids as comma-separated ids >= 0, but got '" + value + "'";
        return false;
      }
    } else if (name == "--tokens" || name == "--top-k") {
      if (!parseCount(value, n, 1)) {
        error = "expected " + name + " N with N > 0, but got '" + value + "'";
        return false;
      }
      (name == "--tokens" ? o.tokens : o.topK) = n;
    } else if (name == "--temperature") {
      char *end = nullptr;
      double x = std::strtod(value.c_str(), &end);
      if (value.empty() || *end || !(x > 0) || !std::isfinite(x)) {
        error = "expected --temperature X with a finite X > 0, but got '" + value + "'";
        return false;
      }
      o.temperature = x;
    } else if (name == "--seed") {
      if (!parseCount(value, n, 0)) {
        error = "expected a non-negative integer --seed, but got '" + value + "'";
        return false;
      }
      o.seed = static_cast<uint64_t>(n);
    } else { // --device
      if (!parseCount(value, n, 0) || n > 1024) {
        error = "expected --device I with I >= 0, but got '" + value + "'";
        return false;
      }
      o.device = static_cast<int>(n);
    }
  }
  if (o.help)
    return true;
  if (o.artifact.empty()) {
    error = "no artifact given (usage: txrun sample STEP.txa --prompt TEXT; see "
            "txrun sample --help)";
    return false;
  }
  if (o.prompt.has_value() == !o.promptIds.empty()) {
    error = "give exactly one of --prompt TEXT and --prompt-ids LIST";
    return false;
  }
  return true;
}

int txrun::sample(const SampleOptions &o) { return Sampler(o).run(); }
