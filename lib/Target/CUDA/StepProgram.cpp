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

/// The first line: the command count, by kind, and what was fused.
static void printCommandTotals(llvm::raw_ostream &os, const StepProgram &program) {
  const StepStatistics &stats = program.stats;
  os << "gpu step for " << program.target << ": " << program.commands.size() << " commands ("
     << stats.launches << " launches, " << stats.gemms << " gemms, "
     << (stats.fp8Gemms ? std::to_string(stats.fp8Gemms) + " of them fp8, " : "")
     << stats.memsets << " memsets, " << stats.copies << " copies"
     << (stats.attentions ? ", " + std::to_string(stats.attentions) + " fused attention" : "")
     << (stats.fp8Attentions ? " (" + std::to_string(stats.fp8Attentions) + " fp8)" : "")
     << (stats.biasEpilogues ? ", " + std::to_string(stats.biasEpilogues) + " gemms adding a bias"
                             : "")
     << (stats.geluEpilogues ? ", " + std::to_string(stats.geluEpilogues) +
                                   " gemms computing a GELU"
                             : "")
     << (stats.collectives ? ", " + std::to_string(stats.collectives) + " collectives over " +
                                 std::to_string(program.ranks) + " ranks"
                           : "")
     << "), " << stats.fusedOps << " ops fused into their users\n";
}

/// The arena's size and split, and where the temporaries peak.
static void printArena(llvm::raw_ostream &os, const StepProgram &program) {
  const StepStatistics &stats = program.stats;
  os << "arena " << program.arenaBytes << " bytes: arguments+constants "
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
}

/// The step's arguments and results, with their slots.
static void printBindings(llvm::raw_ostream &os, const StepProgram &program) {
  for (const ArgumentBinding &a : program.arguments)
    os << "arg '" << a.name << "' role=" << a.role << " slot=" << a.slot
       << " " << dtypeName(a.dtype) << " next_of=" << a.nextOf
       << (a.fp8Sites.empty() ? std::string()
                              : " sites=" + std::to_string(a.fp8Sites.size()) + " (" +
                                    a.fp8Sites.front() + ", ...)")
       << (a.shardOf.empty() ? std::string() : " shard_of=" + shapeText(a.shardOf))
       << (a.indexBound > 0 ? " index_bound=" + std::to_string(a.indexBound) : std::string())
       << "\n";
  for (const ResultBinding &r : program.results)
    os << "result '" << r.name << "' slot=" << r.slot << " next=" << r.next << "\n";
}

static void printLaunch(llvm::raw_ostream &os, const LaunchCmd &l,
                        const std::vector<std::string> &kernelNames) {
  os << "launch " << kernelNames[l.kernel] << " grid=" << l.grid[0]
     << " block=" << l.block[0];
  if (l.sharedBytes)
    os << " shared=" << l.sharedBytes;
  os << " args=[";
  llvm::interleaveComma(l.args, os);
  os << "]";
  if (!l.through.empty()) {
    os << " through=[";
    llvm::interleaveComma(l.through, os);
    os << "]";
  }
}

static void printGemm(llvm::raw_ostream &os, const GemmCmd &g) {
  os << "gemm m=" << g.m << " n=" << g.n << " k=" << g.k
     << " batch=" << g.batch << " ta=" << g.transA << " tb=" << g.transB
     << " " << dtypeName(g.aType);
  if (g.bType != g.aType)
    os << "*" << dtypeName(g.bType);
  os << "->" << dtypeName(g.dType) << (g.allowTF32 ? " tf32" : "")
     << " a=" << g.a << " b=" << g.b << " d=" << g.d
     << " beta=" << g.beta;
  if (g.aScale >= 0)
    os << " a_scale=" << g.aScale << " b_scale=" << g.bScale;
  if (g.fastAccumulation)
    os << " fast_accum";
  if (g.bias >= 0)
    os << " bias=" << g.bias;
  if (g.gelu)
    os << " gelu";
  if (g.geluAux >= 0)
    os << " pre_activation=" << g.geluAux;
  if (g.alpha != 1.0f)
    os << " alpha=" << g.alpha;
}

static void printCollective(llvm::raw_ostream &os, const CollectiveCmd &col) {
  static const char *kinds[] = {"all_reduce", "reduce_scatter", "all_gather"};
  static const char *reductions[] = {"sum", "max", "mean"};
  os << kinds[static_cast<int>(col.kind)];
  if (col.kind != CollectiveCmd::Kind::AllGather)
    os << " " << reductions[static_cast<int>(col.reduction)];
  os << " " << dtypeName(col.dtype) << " send=" << col.sendCount
     << " recv=" << col.recvCount << " src=" << col.src << " dst=" << col.dst;
  if (col.asyncGroup)
    os << " async=" << col.asyncGroup;
}

/// The scalars' slots, by name: fp8(grad type; name=slot ...), each followed
/// by the packed state entry it copies when |scalarSources| knows one.
static void printAttentionScalars(llvm::raw_ostream &os, const AttentionCmd &at,
                                  const std::map<unsigned, std::string> &scalarSources) {
  static const char *names[kNumAttentionScalars] = {
      "descale_q", "descale_k", "descale_v", "descale_s", "scale_s", "scale_o",
      "amax_s", "amax_o", "descale_o", "descale_do", "descale_dp", "scale_dq",
      "scale_dk", "scale_dv", "scale_dp", "amax_dq", "amax_dk", "amax_dv", "amax_dp"};
  os << " fp8(";
  if (at.backward)
    os << "grad " << dtypeName(at.gradType) << ";";
  for (unsigned i = 0; i < kNumAttentionScalars; ++i) {
    unsigned slot = at.fp8Scalars[i];
    if (slot == kNoSlot)
      continue;
    os << " " << names[i] << "=" << slot;
    if (auto source = scalarSources.find(slot); source != scalarSources.end())
      os << "(" << source->second << ")";
  }
  os << ")";
}

/// ` name=slot`, and for a view inside another buffer (not a contiguous
/// tensor at the slot's start) `+offset:[strides]`.
static void printAttentionTensor(llvm::raw_ostream &os, const char *name,
                                 const AttentionTensor &t) {
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
}

static void printAttention(llvm::raw_ostream &os, const AttentionCmd &at,
                           const std::map<unsigned, std::string> &scalarSources) {
  os << (at.backward ? "attention_grad" : "attention") << " b=" << at.q.dims[0]
     << " h=" << at.q.dims[1] << " hkv=" << at.k.dims[1]
     << " tq=" << at.q.dims[2] << " tk=" << at.k.dims[2]
     << " d=" << at.q.dims[3] << " dv=" << at.v.dims[3] << " "
     << dtypeName(at.dtype) << " scale=" << at.scale
     << (at.causal ? " causal" : "");
  if (at.window)
    os << " window=" << at.window;
  if (at.dropoutRatio > 0.0f)
    os << " dropout=" << at.dropoutRatio << " key=" << at.dropoutKey
       << " seed=" << at.dropoutSeed << " offset=" << at.dropoutOffset;
  if (at.fp8)
    printAttentionScalars(os, at, scalarSources);
  printAttentionTensor(os, "q", at.q);
  printAttentionTensor(os, "k", at.k);
  printAttentionTensor(os, "v", at.v);
  printAttentionTensor(os, "o", at.o);
  os << " lse=" << at.lse;
  if (at.mask)
    printAttentionTensor(os, "mask", *at.mask);
  if (at.backward) {
    printAttentionTensor(os, "do", at.gradO);
    printAttentionTensor(os, "dq", at.gradQ);
    printAttentionTensor(os, "dk", at.gradK);
    printAttentionTensor(os, "dv", at.gradV);
  }
}

/// One command on its own line, followed by the op it came from.
static void printCommand(llvm::raw_ostream &os, const Command &c, const StepProgram &program) {
  if (auto *l = std::get_if<LaunchCmd>(&c.op)) {
    printLaunch(os, *l, program.kernelNames);
  } else if (auto *g = std::get_if<GemmCmd>(&c.op)) {
    printGemm(os, *g);
  } else if (auto *m = std::get_if<MemsetCmd>(&c.op)) {
    os << "memset slot=" << m->slot << " value=" << m->value;
  } else if (auto *cp = std::get_if<CopyCmd>(&c.op)) {
    os << "copy dst=" << cp->dst << " src=" << cp->src << " bytes=" << cp->bytes;
    if (cp->srcRankStride)
      os << " src+=rank*" << cp->srcRankStride;
  } else if (auto *col = std::get_if<CollectiveCmd>(&c.op)) {
    printCollective(os, *col);
  } else if (auto *join = std::get_if<JoinCmd>(&c.op)) {
    os << "join async<=" << join->group;
  } else if (auto *at = std::get_if<AttentionCmd>(&c.op)) {
    printAttention(os, *at, program.scalarSources);
  }
  os << "  // " << c.origin << "\n";
}

static void printCommands(llvm::raw_ostream &os, const std::vector<Command> &commands,
                          const StepProgram &program) {
  for (const Command &c : commands)
    printCommand(os, c, program);
}

/// Gradient accumulation: run gradAccum - 1 times per step, before it.
static void printMicroStep(llvm::raw_ostream &os, const StepProgram &program) {
  const FunctionProgram &microStep = *program.microStep;
  os << "micro-step '" << microStep.name << "' (" << program.gradAccum - 1
     << " per step): " << microStep.commands.size() << " commands\n";
  for (const ResultBinding &r : microStep.results)
    os << "micro-result '" << r.name << "' slot=" << r.slot << " next=" << r.next << "\n";
  printCommands(os, microStep.commands, program);
}

/// A forward-only function (`evaluation`, `logits`): its results change no
/// argument, so they have no `next`.
static void printForwardFunction(llvm::raw_ostream &os, const char *kind,
                                 const FunctionProgram &f, const StepProgram &program) {
  os << kind << " '" << f.name << "': " << f.commands.size() << " commands\n";
  for (const ResultBinding &r : f.results)
    os << kind << "-result '" << r.name << "' slot=" << r.slot << "\n";
  printCommands(os, f.commands, program);
}

/// FP8 weight caching: once, before the first step.
static void printStateInit(llvm::raw_ostream &os, const StepProgram &program) {
  const FunctionProgram &stateInit = *program.stateInit;
  os << "state-init '" << stateInit.name << "' (once, before step 1): "
     << stateInit.commands.size() << " commands\n";
  for (const ResultBinding &r : stateInit.results)
    os << "state-init-result '" << r.name << "' slot=" << r.slot << " next=" << r.next << "\n";
  printCommands(os, stateInit.commands, program);
}

void StepProgram::print(llvm::raw_ostream &os) const {
  printCommandTotals(os, *this);
  printArena(os, *this);
  printBindings(os, *this);
  printCommands(os, commands, *this);
  if (microStep)
    printMicroStep(os, *this);
  if (evaluation)
    printForwardFunction(os, "evaluation", *evaluation, *this);
  if (logits)
    printForwardFunction(os, "logits", *logits, *this);
  if (stateInit)
    printStateInit(os, *this);
}
