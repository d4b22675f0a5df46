//===- StepProgram.cpp - the lowered step as text -------------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// StepProgram::print, the text `txopt --gpu-plan=FILE` writes and lit tests check: the
// commands in order, the slots and the arena plan. Apart from the lowering,
// which only builds the program.
//
//===----------------------------------------------------------------------===//

#include "txopt/Target/CUDA/StepProgram.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::cuda;

/// A shape as `[2, 3]`.
static std::string shapeText(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

void StepProgram::print(llvm::raw_ostream &os) const {
  os << "gpu step for " << target << ": " << commands.size() << " commands ("
     << stats.launches << " launches, " << stats.gemms << " gemms, "
     << (stats.fp8Gemms ? std::to_string(stats.fp8Gemms) + " of them fp8, " : "")
     << stats.memsets << " memsets, " << stats.copies << " copies"
     << (stats.attentions ? ", " + std::to_string(stats.attentions) + " fused attention" : "")
     << (stats.fp8Attentions ? " (" + std::to_string(stats.fp8Attentions) + " fp8)" : "")
     << (stats.biasEpilogues ? ", " + std::to_string(stats.biasEpilogues) + " gemms adding a bias"
                             : "")
     << (stats.collectives ? ", " + std::to_string(stats.collectives) + " collectives over " +
                                 std::to_string(ranks) + " ranks"
                           : "")
     << "), " << stats.fusedOps << " ops fused into their users\n";
  os << "arena " << arenaBytes << " bytes: arguments+constants "
     << stats.argumentBytes << ", scratch " << stats.scratchBytes
     << " (unplanned " << stats.unplannedBytes << ")";
  if (stats.rematerializedValues)
    os << "; " << stats.rematerializedValues
       << " values recomputed for the backward, " << stats.rematerializedBytes
       << " bytes not kept";
  os << "\n";
  if (stats.peakCommand >= 0) {
    os << "peak " << stats.peakLiveBytes << " bytes of temporaries live at command "
       << stats.peakCommand << " (" << stats.peakOrigin << "), the largest:\n";
    for (const auto &p : stats.peakBuffers)
      os << "  slot=" << p.slot << " bytes=" << p.bytes << " commands=" << p.first << ".."
         << p.last << " " << p.what << "\n";
  }
  for (const ArgumentBinding &a : arguments)
    os << "arg '" << a.name << "' role=" << a.role << " slot=" << a.slot
       << " " << dtypeName(a.dtype) << " next_of=" << a.nextOf
       << (a.fp8Sites.empty() ? std::string()
                              : " sites=" + std::to_string(a.fp8Sites.size()) + " (" +
                                    a.fp8Sites.front() + ", ...)")
       << (a.shardOf.empty() ? std::string() : " shard_of=" + shapeText(a.shardOf))
       << "\n";
  for (const ResultBinding &r : results)
    os << "result '" << r.name << "' slot=" << r.slot << " next=" << r.next << "\n";
  auto printCommand = [&](const Command &c) {
    if (auto *l = std::get_if<LaunchCmd>(&c.op)) {
      os << "launch " << kernelNames[l->kernel] << " grid=" << l->grid[0]
         << " block=" << l->block[0];
      if (l->sharedBytes)
        os << " shared=" << l->sharedBytes;
      os << " args=[";
      llvm::interleaveComma(l->args, os);
      os << "]";
      if (!l->through.empty()) {
        os << " through=[";
        llvm::interleaveComma(l->through, os);
        os << "]";
      }
    } else if (auto *g = std::get_if<GemmCmd>(&c.op)) {
      os << "gemm m=" << g->m << " n=" << g->n << " k=" << g->k
         << " batch=" << g->batch << " ta=" << g->transA << " tb=" << g->transB
         << " " << dtypeName(g->aType);
      if (g->bType != g->aType)
        os << "*" << dtypeName(g->bType);
      os << "->" << dtypeName(g->dType) << (g->allowTF32 ? " tf32" : "")
         << " a=" << g->a << " b=" << g->b << " d=" << g->d
         << " beta=" << g->beta;
      if (g->aScale >= 0)
        os << " a_scale=" << g->aScale << " b_scale=" << g->bScale;
      if (g->fastAccumulation)
        os << " fast_accum";
      if (g->bias >= 0)
        os << " bias=" << g->bias;
      if (g->alpha != 1.0f)
        os << " alpha=" << g->alpha;
    } else if (auto *m = std::get_if<MemsetCmd>(&c.op)) {
      os << "memset slot=" << m->slot << " value=" << m->value;
    } else if (auto *cp = std::get_if<CopyCmd>(&c.op)) {
      os << "copy dst=" << cp->dst << " src=" << cp->src << " bytes=" << cp->bytes;
      if (cp->srcRankStride)
        os << " src+=rank*" << cp->srcRankStride;
    } else if (auto *col = std::get_if<CollectiveCmd>(&c.op)) {
      static const char *kinds[] = {"all_reduce", "reduce_scatter", "all_gather"};
      static const char *reductions[] = {"sum", "max", "mean"};
      os << kinds[static_cast<int>(col->kind)];
      if (col->kind != CollectiveCmd::Kind::AllGather)
        os << " " << reductions[static_cast<int>(col->reduction)];
      os << " " << dtypeName(col->dtype) << " send=" << col->sendCount
         << " recv=" << col->recvCount << " src=" << col->src << " dst=" << col->dst;
      if (col->asyncGroup)
        os << " async=" << col->asyncGroup;
    } else if (auto *join = std::get_if<JoinCmd>(&c.op)) {
      os << "join async<=" << join->group;
    } else if (auto *at = std::get_if<AttentionCmd>(&c.op)) {
      os << (at->backward ? "attention_grad" : "attention") << " b=" << at->q.dims[0]
         << " h=" << at->q.dims[1] << " hkv=" << at->k.dims[1]
         << " tq=" << at->q.dims[2] << " tk=" << at->k.dims[2]
         << " d=" << at->q.dims[3] << " dv=" << at->v.dims[3] << " "
         << dtypeName(at->dtype) << " scale=" << at->scale
         << (at->causal ? " causal" : "");
      if (at->window)
        os << " window=" << at->window;
      if (at->dropoutRatio > 0.0f)
        os << " dropout=" << at->dropoutRatio << " key=" << at->dropoutKey
           << " seed=" << at->dropoutSeed << " offset=" << at->dropoutOffset;
      if (at->fp8) {
        // The scalars' slots, by name: fp8(grad type; name=slot ...).
        static const char *names[kNumAttentionScalars] = {
            "descale_q", "descale_k", "descale_v", "descale_s", "scale_s", "scale_o",
            "amax_s", "amax_o", "descale_o", "descale_do", "descale_dp", "scale_dq",
            "scale_dk", "scale_dv", "scale_dp", "amax_dq", "amax_dk", "amax_dv", "amax_dp"};
        os << " fp8(";
        if (at->backward)
          os << "grad " << dtypeName(at->gradType) << ";";
        for (unsigned i = 0; i < kNumAttentionScalars; ++i) {
          unsigned slot = at->fp8Scalars[i];
          if (slot == kNoSlot)
            continue;
          os << " " << names[i] << "=" << slot;
          if (auto source = scalarSources.find(slot); source != scalarSources.end())
            os << "(" << source->second << ")";
        }
        os << ")";
      }
      // A view inside another buffer: slot+offset:[strides].
      auto tensor = [&](const char *name, const AttentionTensor &t) {
        os << " " << name << "=" << t.slot;
        int64_t stride = 1;
        bool contiguous = t.offset == 0;
        for (int d = 3; d >= 0; --d) {
          contiguous &= t.strides[d] == stride || t.dims[d] == 1;
          stride *= t.dims[d];
        }
        if (contiguous)
          return;
        os << "+" << t.offset << ":[" << t.strides[0] << "," << t.strides[1]
           << "," << t.strides[2] << "," << t.strides[3] << "]";
      };
      tensor("q", at->q);
      tensor("k", at->k);
      tensor("v", at->v);
      tensor("o", at->o);
      os << " lse=" << at->lse;
      if (at->mask)
        tensor("mask", *at->mask);
      if (at->backward) {
        tensor("do", at->gradO);
        tensor("dq", at->gradQ);
        tensor("dk", at->gradK);
        tensor("dv", at->gradV);
      }
    }
    os << "  // " << c.origin << "\n";
  };
  for (const Command &c : commands)
    printCommand(c);
  if (microStep) {
    // Gradient accumulation: run gradAccum - 1 times per step, before it.
    os << "micro-step '" << microStep->name << "' (" << gradAccum - 1
       << " per step): " << microStep->commands.size() << " commands\n";
    for (const ResultBinding &r : microStep->results)
      os << "micro-result '" << r.name << "' slot=" << r.slot << " next=" << r.next << "\n";
    for (const Command &c : microStep->commands)
      printCommand(c);
  }
  auto printForward = [&](const char *kind, const FunctionProgram &f) {
    os << kind << " '" << f.name << "': " << f.commands.size() << " commands\n";
    for (const ResultBinding &r : f.results)
      os << kind << "-result '" << r.name << "' slot=" << r.slot << "\n";
    for (const Command &c : f.commands)
      printCommand(c);
  };
  if (evaluation)
    printForward("evaluation", *evaluation);
  if (logits)
    printForward("logits", *logits);
  if (stateInit) {
    // FP8 weight caching: once, before the first step.
    os << "state-init '" << stateInit->name << "' (once, before step 1): "
       << stateInit->commands.size() << " commands\n";
    for (const ResultBinding &r : stateInit->results)
      os << "state-init-result '" << r.name << "' slot=" << r.slot << " next=" << r.next << "\n";
    for (const Command &c : stateInit->commands)
      printCommand(c);
  }
}
