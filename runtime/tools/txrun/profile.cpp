//===- profile.cpp - txrun --profile: one step command by command ---------===//
//
// SPDX-License-Identifier: Apache-2.0
// The --profile table and the --profile-out JSON; apart from the run loop
// (run.cpp) since they only read the artifact and the measured times.
//
//===----------------------------------------------------------------------===//

#include "profile.h"

#include "core/json.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>

using namespace txrt;

namespace {

/// The buffers a command touches, by slot: a launch's arguments (and the
/// tensors a packed kernel reaches through its offset table), a GEMM's
/// A, B, D (and bias, scales), an attention call's tensors. Their bytes are
/// what a bandwidth figure divides by (each counted once, so a broadcast
/// input counts its own size, not the elements read through it). A slot a
/// launch passes twice counts twice: the compiler lists a kernel's outputs,
/// then its distinct input values, so a repeated slot is an output written
/// over an input (the cross-entropy kernel's logits and their gradient) or,
/// rarely, one buffer read through two views of it. A packed kernel's table
/// does not say which tensors it writes over, so those count once, and its
/// figure stays a lower bound.
std::vector<unsigned> slotsOf(const fb::Command &c) {
  std::vector<unsigned> s;
  switch (c.op_type()) {
  case fb::Op::Launch: {
    if (auto *through = c.op_as_Launch()->through())
      s.assign(through->begin(), through->end());
    std::vector<unsigned> args;
    if (auto *a = c.op_as_Launch()->args())
      args.assign(a->begin(), a->end());
    std::sort(s.begin(), s.end());
    s.erase(std::unique(s.begin(), s.end()), s.end());
    // Table entries that are also arguments are counted with the arguments.
    s.erase(std::remove_if(s.begin(), s.end(),
                           [&](unsigned slot) {
                             return std::find(args.begin(), args.end(), slot) != args.end();
                           }),
            s.end());
    s.insert(s.end(), args.begin(), args.end());
    return s;
  }
  case fb::Op::Gemm: {
    const fb::Gemm *g = c.op_as_Gemm();
    s = {g->a(), g->b(), g->d()};
    if (g->bias() >= 0)
      s.push_back(static_cast<unsigned>(g->bias()));
    break;
  }
  case fb::Op::Memset: s = {c.op_as_Memset()->slot()}; break;
  case fb::Op::Copy: s = {c.op_as_Copy()->dst(), c.op_as_Copy()->src()}; break;
  case fb::Op::Attention: {
    const fb::Attention *a = c.op_as_Attention();
    for (const fb::AttentionTensor *t :
         {a->q(), a->k(), a->v(), a->o(), a->grad_o(), a->grad_q(), a->grad_k(), a->grad_v(),
          a->has_mask() ? a->mask() : nullptr})
      if (t)
        s.push_back(t->slot());
    s.push_back(a->lse());
    break;
  }
  default: break;
  }
  std::sort(s.begin(), s.end());
  s.erase(std::unique(s.begin(), s.end()), s.end());
  return s;
}

} // namespace

void txrun::printProfile(const Artifact &artifact, const std::vector<float> &ms,
                  float total) {
  const fb::Artifact &a = artifact.root();
  std::map<std::string, std::pair<double, int>> families;
  std::vector<std::pair<float, unsigned>> order;
  for (unsigned i = 0; i < ms.size(); ++i) {
    const fb::Command *c = a.commands()->Get(i);
    std::string family;
    switch (c->op_type()) {
    case fb::Op::Launch: {
      std::string name = a.kernels()->Get(c->op_as_Launch()->kernel())->name()->str();
      size_t underscore = name.find('_');
      family = "kernel " + (underscore == std::string::npos ? name : name.substr(underscore + 1));
      break;
    }
    case fb::Op::Gemm: family = "gemm (cuBLASLt)"; break;
    case fb::Op::Memset: family = "memset"; break;
    case fb::Op::Copy: family = "copy"; break;
    case fb::Op::Attention: family = "attention (cuDNN SDPA)"; break;
    default: family = "other"; break;
    }
    families[family].first += ms[i];
    families[family].second += 1;
    order.push_back({ms[i], i});
  }
  std::vector<std::pair<double, std::string>> rows;
  for (auto &[name, v] : families)
    rows.push_back({v.first, name});
  std::sort(rows.rbegin(), rows.rend());
  std::printf("profile: %zu commands, %.3f ms (events between commands, no graph)\n",
              ms.size(), total);
  std::printf("  %-36s %10s %6s %7s\n", "family", "ms", "count", "share");
  for (auto &[t, name] : rows)
    std::printf("  %-36s %10.3f %6d %6.1f%%\n", name.c_str(), t, families[name].second,
                total > 0 ? 100.0 * t / total : 0.0);
  std::sort(order.rbegin(), order.rend());
  std::printf("  slowest commands:\n");
  for (size_t k = 0; k < std::min<size_t>(12, order.size()); ++k)
    std::printf("  %10.3f ms  %s\n", order[k].first,
                artifact.describeCommand(order[k].second).c_str());
  std::fflush(stdout);
}

Status txrun::writeProfileJson(const std::string &path, const Artifact &artifact,
                        const std::vector<float> &ms, const std::vector<float> &hostMs,
                        float total) {
  const fb::Artifact &a = artifact.root();
  std::string out = "{\"step_ms\": " + json::number(total) + ", \"commands\": [\n";
  for (unsigned i = 0; i < ms.size(); ++i) {
    const fb::Command *c = a.commands()->Get(i);
    std::string kind = fb::EnumNameOp(c->op_type()), name;
    if (c->op_type() == fb::Op::Launch)
      name = a.kernels()->Get(c->op_as_Launch()->kernel())->name()->str();
    uint64_t bytes = 0;
    for (unsigned slot : slotsOf(*c))
      if (a.slots() && slot < a.slots()->size())
        bytes += a.slots()->Get(slot)->bytes();
    out += "  {\"index\": " + std::to_string(i) + ", \"kind\": " + json::quote(kind) +
           ", \"kernel\": " + json::quote(name) + ", \"origin\": " +
           json::quote(c->origin() ? c->origin()->str() : "") + ", \"ms\": " +
           json::number(ms[i]) + ", \"host_ms\": " + json::number(hostMs[i]) +
           ", \"bytes\": " + std::to_string(bytes) + "}" +
           (i + 1 < ms.size() ? ",\n" : "\n");
  }
  out += "]}\n";
  FILE *f = std::fopen(path.c_str(), "w");
  if (!f)
    return Status::invalid("cannot write '" + path + "': " + std::strerror(errno));
  bool ok = std::fwrite(out.data(), 1, out.size(), f) == out.size();
  ok = std::fclose(f) == 0 && ok;
  return ok ? Status() : Status::invalid("cannot write '" + path + "'");
}
