//===- ArtifactWriter.cpp - StepProgram -> step.txa -----------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// Writes the artifact with the FlatBuffers schema the runtime reads
// (runtime/include/txrt/artifact.fbs): one schema, two readers' worth of
// generated code, no hand-rolled byte format.
//
//===----------------------------------------------------------------------===//

#include "txopt/Target/CUDA/StepProgram.h"

#include "llvm/ADT/StringMap.h"

#include "txrt/artifact_generated.h"

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::cuda;

namespace fb = txrt::fb;

/// The artifact format this compiler writes (runtime's kFormatVersion), the
/// oldest that holds what the step uses: 10 adds the GELU epilogue that
/// writes the pre-activation (GELU_AUX), 9 FP8 attention, 8
/// asynchronous collective groups (Join commands), 7 attention dropout, 6
/// adds 4-byte slots at 4-byte offsets (an entry of packed FP8 state), 5
/// data parallelism, 4 the state-init function, 3 adds attention tensors at
/// an offset inside their slot, 2 the micro-step (gradient accumulation);
/// anything else is version 1, which every runtime reads.
static constexpr uint32_t kFormatVersionGeluAux = 10;
static constexpr uint32_t kFormatVersionFP8Attention = 9;
static constexpr uint32_t kFormatVersionAsyncCollectives = 8;
static constexpr uint32_t kFormatVersionAttentionDropout = 7;
static constexpr uint32_t kFormatVersionScalarSlots = 6;
static constexpr uint32_t kFormatVersionDataParallel = 5;
static constexpr uint32_t kFormatVersionStateInit = 4;
static constexpr uint32_t kFormatVersionAttentionOffsets = 3;
static constexpr uint32_t kFormatVersionMicroStep = 2;
static constexpr uint32_t kFormatVersionBase = 1;

static fb::DType toFb(DType t) { return static_cast<fb::DType>(t); }

static fb::Epilogue epilogueOf(const GemmCmd &g) {
  if (g.gelu && g.geluAux >= 0)
    return g.bias >= 0 ? fb::Epilogue::GELU_AUX_BIAS : fb::Epilogue::GELU_AUX;
  if (g.gelu)
    return g.bias >= 0 ? fb::Epilogue::GELU_BIAS : fb::Epilogue::GELU;
  return g.bias >= 0 ? fb::Epilogue::BIAS : fb::Epilogue::NONE;
}

/// The kernel images: each part's cubin (when ptxas made them), which runs
/// on the target's architecture, then each part's PTX, kept for the
/// driver's JIT on other (newer) GPUs: part p's cubin is image p, its PTX
/// image cubins + p.
static std::vector<flatbuffers::Offset<fb::KernelImage>>
writeImages(flatbuffers::FlatBufferBuilder &fbb, const KernelImages &images) {
  std::vector<flatbuffers::Offset<fb::KernelImage>> imageList;
  auto add = [&](fb::ImageFormat format, const std::string &bytes) {
    auto data =
        fbb.CreateVector(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size());
    imageList.push_back(fb::CreateKernelImage(fbb, format, data));
  };
  if (images.hasCubins())
    for (const KernelImages::Part &part : images.parts)
      add(fb::ImageFormat::CUBIN, part.cubin);
  for (const KernelImages::Part &part : images.parts)
    add(fb::ImageFormat::PTX, part.ptx + '\0');
  return imageList;
}

static std::vector<flatbuffers::Offset<fb::Argument>>
writeArguments(flatbuffers::FlatBufferBuilder &fbb,
               const std::vector<ArgumentBinding> &list) {
  std::vector<flatbuffers::Offset<fb::Argument>> arguments;
  for (const ArgumentBinding &a : list) {
    fb::InitKind init = fb::InitKind::ZEROS;
    switch (a.init) {
    case ArgumentBinding::Init::Zeros: init = fb::InitKind::ZEROS; break;
    case ArgumentBinding::Init::Splat: init = fb::InitKind::SPLAT; break;
    case ArgumentBinding::Init::Inline: init = fb::InitKind::INLINE; break;
    case ArgumentBinding::Init::External: init = fb::InitKind::EXTERNAL; break;
    case ArgumentBinding::Init::Batch: init = fb::InitKind::BATCH; break;
    }
    arguments.push_back(fb::CreateArgument(
        fbb, fbb.CreateString(a.name), fbb.CreateString(a.role), a.slot,
        toFb(a.dtype), fbb.CreateVector(a.shape), init, a.splat,
        toFb(a.sourceType), a.data.empty() ? 0 : fbb.CreateVector(a.data),
        a.path.empty() ? 0 : fbb.CreateString(a.path), a.offset, a.length,
        a.indexBound, a.nextOf,
        a.fp8Sites.empty() ? 0 : fbb.CreateVectorOfStrings(a.fp8Sites),
        a.shardOf.empty() ? 0 : fbb.CreateVector(a.shardOf)));
  }
  return arguments;
}

static flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::Result>>>
writeResults(flatbuffers::FlatBufferBuilder &fbb, const std::vector<ResultBinding> &list) {
  std::vector<flatbuffers::Offset<fb::Result>> results;
  for (const ResultBinding &r : list)
    results.push_back(fb::CreateResult(fbb, fbb.CreateString(r.name), r.slot,
                                       toFb(r.dtype), fbb.CreateVector(r.shape),
                                       r.next));
  return fbb.CreateVector(results);
}

/// StepProgram.h's AttentionScalar is written as the schema's: the same
/// entries in the same order.
constexpr bool sameAttentionScalar(AttentionScalar ours, fb::AttentionScalar theirs) {
  return static_cast<unsigned>(ours) == static_cast<unsigned>(theirs);
}
static_assert(kNumAttentionScalars == static_cast<unsigned>(fb::AttentionScalar::MAX) + 1 &&
                  sameAttentionScalar(AttentionScalar::DescaleQ, fb::AttentionScalar::DESCALE_Q) &&
                  sameAttentionScalar(AttentionScalar::DescaleK, fb::AttentionScalar::DESCALE_K) &&
                  sameAttentionScalar(AttentionScalar::DescaleV, fb::AttentionScalar::DESCALE_V) &&
                  sameAttentionScalar(AttentionScalar::DescaleS, fb::AttentionScalar::DESCALE_S) &&
                  sameAttentionScalar(AttentionScalar::ScaleS, fb::AttentionScalar::SCALE_S) &&
                  sameAttentionScalar(AttentionScalar::ScaleO, fb::AttentionScalar::SCALE_O) &&
                  sameAttentionScalar(AttentionScalar::AmaxS, fb::AttentionScalar::AMAX_S) &&
                  sameAttentionScalar(AttentionScalar::AmaxO, fb::AttentionScalar::AMAX_O) &&
                  sameAttentionScalar(AttentionScalar::DescaleO, fb::AttentionScalar::DESCALE_O) &&
                  sameAttentionScalar(AttentionScalar::DescaleDO, fb::AttentionScalar::DESCALE_DO) &&
                  sameAttentionScalar(AttentionScalar::DescaleDP, fb::AttentionScalar::DESCALE_DP) &&
                  sameAttentionScalar(AttentionScalar::ScaleDQ, fb::AttentionScalar::SCALE_DQ) &&
                  sameAttentionScalar(AttentionScalar::ScaleDK, fb::AttentionScalar::SCALE_DK) &&
                  sameAttentionScalar(AttentionScalar::ScaleDV, fb::AttentionScalar::SCALE_DV) &&
                  sameAttentionScalar(AttentionScalar::ScaleDP, fb::AttentionScalar::SCALE_DP) &&
                  sameAttentionScalar(AttentionScalar::AmaxDQ, fb::AttentionScalar::AMAX_DQ) &&
                  sameAttentionScalar(AttentionScalar::AmaxDK, fb::AttentionScalar::AMAX_DK) &&
                  sameAttentionScalar(AttentionScalar::AmaxDV, fb::AttentionScalar::AMAX_DV) &&
                  sameAttentionScalar(AttentionScalar::AmaxDP, fb::AttentionScalar::AMAX_DP),
              "AttentionScalar (StepProgram.h) and artifact.fbs disagree");

/// What the commands use that decides the artifact's format version (and
/// whether it needs an FP8 GPU).
struct CommandFeatures {
  bool fp8 = false;          ///< an FP8 GEMM or attention
  bool attentionOffsets = false;
  bool attentionDropout = false;
  bool fp8Attention = false;
  bool geluAux = false;      ///< a GEMM with a GELU_AUX(_BIAS) epilogue
};

static flatbuffers::Offset<fb::Attention> writeAttention(flatbuffers::FlatBufferBuilder &fbb,
                                                         const AttentionCmd *at,
                                                         CommandFeatures &features) {
  auto tensor = [](const AttentionTensor &t) {
    return fb::AttentionTensor(t.slot, flatbuffers::span<const int64_t, 4>(t.dims),
                               flatbuffers::span<const int64_t, 4>(t.strides));
  };
  // Element offsets in the schema's order; written only when one is not 0.
  std::vector<int64_t> offsets = {at->q.offset, at->k.offset, at->v.offset, at->o.offset,
                                  at->mask ? at->mask->offset : 0,
                                  at->gradO.offset, at->gradQ.offset, at->gradK.offset,
                                  at->gradV.offset};
  flatbuffers::Offset<flatbuffers::Vector<int64_t>> offsetVector;
  if (llvm::any_of(offsets, [](int64_t o) { return o != 0; })) {
    offsetVector = fbb.CreateVector(offsets);
    features.attentionOffsets = true;
  }
  flatbuffers::Offset<flatbuffers::Vector<uint32_t>> scalarVector;
  if (at->fp8)
    scalarVector = fbb.CreateVector(at->fp8Scalars.data(), at->fp8Scalars.size());
  fb::AttentionBuilder ab(fbb);
  if (!offsetVector.IsNull())
    ab.add_offsets(offsetVector);
  if (at->fp8) {
    // An older runtime would run the FP8 codes as bf16.
    features.fp8Attention = features.fp8 = true;
    ab.add_fp8(true);
    ab.add_grad_dtype(toFb(at->gradType));
    ab.add_fp8_scalars(scalarVector);
  }
  ab.add_backward(at->backward);
  ab.add_dtype(toFb(at->dtype));
  ab.add_scale(at->scale);
  ab.add_causal(at->causal);
  ab.add_window(at->window);
  auto q = tensor(at->q), k = tensor(at->k), v = tensor(at->v), o = tensor(at->o);
  ab.add_q(&q);
  ab.add_k(&k);
  ab.add_v(&v);
  ab.add_o(&o);
  ab.add_lse(at->lse);
  if (at->dropoutRatio > 0.0f) {
    // An older runtime would ignore the fields and run without dropout.
    features.attentionDropout = true;
    ab.add_dropout_ratio(at->dropoutRatio);
    ab.add_dropout_key(at->dropoutKey);
    ab.add_dropout_offset(at->dropoutOffset);
  }
  fb::AttentionTensor mask, gradO, gradQ, gradK, gradV;
  if (at->mask) {
    mask = tensor(*at->mask);
    ab.add_has_mask(true);
    ab.add_mask(&mask);
  }
  if (at->backward) {
    gradO = tensor(at->gradO);
    gradQ = tensor(at->gradQ);
    gradK = tensor(at->gradK);
    gradV = tensor(at->gradV);
    ab.add_grad_o(&gradO);
    ab.add_grad_q(&gradQ);
    ab.add_grad_k(&gradK);
    ab.add_grad_v(&gradV);
  }
  return ab.Finish();
}

/// The commands of one function; adds what they use to |features|.
static flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::Command>>>
writeCommands(flatbuffers::FlatBufferBuilder &fbb, const std::vector<Command> &list,
              CommandFeatures &features) {
  std::vector<flatbuffers::Offset<fb::Command>> commands;
  for (const Command &c : list) {
    auto origin = fbb.CreateString(c.origin);
    if (auto *l = std::get_if<LaunchCmd>(&c.op)) {
      std::vector<uint32_t> grid(l->grid, l->grid + 3), block(l->block, l->block + 3);
      auto launch = fb::CreateLaunch(fbb, l->kernel, fbb.CreateVector(grid),
                                     fbb.CreateVector(block), l->sharedBytes,
                                     fbb.CreateVector(l->args),
                                     l->through.empty() ? 0 : fbb.CreateVector(l->through));
      commands.push_back(fb::CreateCommand(fbb, fb::Op::Launch, launch.Union(), origin));
    } else if (auto *g = std::get_if<GemmCmd>(&c.op)) {
      auto gemm = fb::CreateGemm(
          fbb, g->m, g->n, g->k, g->batch, g->transA, g->transB, g->lda, g->ldb,
          g->ldd, g->strideA, g->strideB, g->strideD, toFb(g->aType),
          toFb(g->bType), toFb(g->dType),
          g->allowTF32 ? fb::ComputeType::F32_FAST_TF32 : fb::ComputeType::F32,
          g->alpha, g->beta, g->a, g->b, g->d, g->bias,
          epilogueOf(*g), g->aScale, g->bScale, g->dScale, g->dAmax, g->fastAccumulation,
          g->geluAux, g->geluAux >= 0 ? g->ldd : 0);
      features.geluAux |= g->geluAux >= 0;
      // FP8 GEMMs need compute capability 8.9 (the FP8 casts do not: they
      // are integer code in the kernels).
      for (DType t : {g->aType, g->bType, g->dType})
        features.fp8 |= t == DType::F8E4M3FN || t == DType::F8E5M2;
      commands.push_back(fb::CreateCommand(fbb, fb::Op::Gemm, gemm.Union(), origin));
    } else if (auto *m = std::get_if<MemsetCmd>(&c.op)) {
      auto memset = fb::CreateMemset(fbb, m->slot, m->value);
      commands.push_back(fb::CreateCommand(fbb, fb::Op::Memset, memset.Union(), origin));
    } else if (auto *cp = std::get_if<CopyCmd>(&c.op)) {
      auto copy = fb::CreateCopy(fbb, cp->dst, cp->src, cp->bytes, cp->srcRankStride);
      commands.push_back(fb::CreateCommand(fbb, fb::Op::Copy, copy.Union(), origin));
    } else if (auto *col = std::get_if<CollectiveCmd>(&c.op)) {
      auto collective = fb::CreateCollective(
          fbb, static_cast<fb::CollectiveKind>(col->kind),
          static_cast<fb::Reduction>(col->reduction), toFb(col->dtype),
          col->sendCount, col->recvCount, col->src, col->dst, col->asyncGroup);
      commands.push_back(
          fb::CreateCommand(fbb, fb::Op::Collective, collective.Union(), origin));
    } else if (auto *join = std::get_if<JoinCmd>(&c.op)) {
      auto joinTable = fb::CreateJoin(fbb, join->group);
      commands.push_back(fb::CreateCommand(fbb, fb::Op::Join, joinTable.Union(), origin));
    } else if (auto *at = std::get_if<AttentionCmd>(&c.op)) {
      auto attention = writeAttention(fbb, at, features);
      commands.push_back(fb::CreateCommand(fbb, fb::Op::Attention, attention.Union(), origin));
    }
  }
  return fbb.CreateVector(commands);
}

LogicalResult cuda::writeArtifact(const StepProgram &program,
                                  const KernelImages &images,
                                  std::vector<uint8_t> &bytes,
                                  std::string &error,
                                  llvm::ArrayRef<RankVariantBytes> variants) {
  flatbuffers::FlatBufferBuilder fbb(1 << 20);
  std::vector<fb::Slot> slots;
  // A scalar between the 256-byte boundaries: an entry of packed FP8 state.
  bool scalarSlots = false;
  for (const Slot &s : program.slots) {
    slots.emplace_back(s.offset, s.bytes);
    scalarSlots |= s.offset % kSlotAlignment != 0;
  }

  std::vector<flatbuffers::Offset<fb::KernelImage>> imageList = writeImages(fbb, images);
  // Each kernel runs from its part's cubin with the part's PTX as its JIT
  // fallback; without cubins, from the PTX.
  int cubins = images.hasCubins() ? static_cast<int>(images.parts.size()) : 0;
  llvm::StringMap<int> partOf;
  for (size_t i = 0; i < images.parts.size(); ++i)
    for (const std::string &entry : images.parts[i].entries)
      partOf[entry] = static_cast<int>(i);
  std::vector<flatbuffers::Offset<fb::Kernel>> kernels;
  for (const std::string &name : program.kernelNames) {
    auto found = partOf.find(name);
    if (found == partOf.end()) {
      error = "kernel '" + name + "' is in none of the compiled parts";
      return failure();
    }
    int ptx = cubins + found->second;
    kernels.push_back(fb::CreateKernel(
        fbb, fbb.CreateString(name),
        static_cast<uint32_t>(cubins ? found->second : ptx), cubins ? ptx : -1));
  }

  std::vector<flatbuffers::Offset<fb::ConstantData>> constants;
  for (const ConstantUpload &c : program.constants)
    constants.push_back(fb::CreateConstantData(fbb, c.slot, fbb.CreateVector(c.data)));

  std::vector<flatbuffers::Offset<fb::Argument>> arguments =
      writeArguments(fbb, program.arguments);
  auto results = writeResults(fbb, program.results);

  CommandFeatures features;
  auto commands = writeCommands(fbb, program.commands, features);
  // Gradient accumulation: the micro-step's commands and results. An older
  // runtime would run the step alone (1/N of the gradient), so such an
  // artifact is format version 2, which those refuse.
  auto writeFunction = [&](const std::optional<FunctionProgram> &function) {
    if (!function)
      return flatbuffers::Offset<fb::Function>();
    auto functionCommands =
        writeCommands(fbb, function->commands, features);
    auto functionResults = writeResults(fbb, function->results);
    return fb::CreateFunction(fbb, fbb.CreateString(function->name),
                              functionCommands, functionResults);
  };
  flatbuffers::Offset<fb::Function> microStep = writeFunction(program.microStep);
  // Validation: an older runtime ignores it and runs the step as before.
  flatbuffers::Offset<fb::Function> evaluation = writeFunction(program.evaluation);
  flatbuffers::Offset<fb::Function> logits = writeFunction(program.logits);
  flatbuffers::Offset<fb::Function> stateInit = writeFunction(program.stateInit);

  // Each variant is a whole artifact read in place: its bytes start at a
  // 16-byte boundary (the builder's buffer is aligned to its largest
  // scalar, 8 bytes, and the runtime's copy of the file to 16), so its
  // scalars are as aligned as the root's.
  std::vector<flatbuffers::Offset<fb::RankVariant>> variantList;
  for (const RankVariantBytes &variant : variants) {
    fbb.ForceVectorAlignment(variant.bytes.size(), sizeof(uint8_t), 16);
    auto nested = fbb.CreateVector(variant.bytes);
    variantList.push_back(
        fb::CreateRankVariant(fbb, static_cast<uint32_t>(variant.ranks), nested));
  }

  auto artifact = fb::CreateArtifact(
      fbb,
      // An older runtime would skip the collectives and copy rank 0's
      // shard on every rank.
      // An older runtime refuses such slots, naming the misaligned one.
      // An older runtime refuses the epilogue as unknown.
      features.geluAux          ? kFormatVersionGeluAux
      : features.fp8Attention   ? kFormatVersionFP8Attention
      : program.stats.asyncGroups ? kFormatVersionAsyncCollectives
      : features.attentionDropout ? kFormatVersionAttentionDropout
      : scalarSlots        ? kFormatVersionScalarSlots
      : program.ranks > 0  ? kFormatVersionDataParallel
      : program.stateInit  ? kFormatVersionStateInit
      : features.attentionOffsets ? kFormatVersionAttentionOffsets
      : program.microStep ? kFormatVersionMicroStep
                          : kFormatVersionBase,
      fbb.CreateString("txopt 0.1.0"),
      fbb.CreateString(program.target), features.fp8,
      fbb.CreateString(program.recipe), program.arenaBytes,
      fbb.CreateVectorOfStructs(slots), fbb.CreateVector(imageList),
      fbb.CreateVector(kernels), fbb.CreateVector(constants),
      fbb.CreateVector(arguments), results, commands, program.arenaBytes,
      program.weightsDir.empty() ? 0 : fbb.CreateString(program.weightsDir),
      static_cast<uint32_t>(program.gradAccum), microStep, evaluation, logits,
      program.stats.modelFlops, stateInit, static_cast<uint32_t>(program.ranks),
      variantList.empty() ? 0 : fbb.CreateVector(variantList));
  fbb.Finish(artifact, fb::ArtifactIdentifier());
  bytes.assign(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
  if (bytes.empty()) {
    error = "empty artifact";
    return failure();
  }
  return success();
}
