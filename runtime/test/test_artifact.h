//===- test_artifact.h - small artifacts built in memory for tests -*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// A minimal valid step (one kernel launch, a GEMM, a memset, a copy, three
// arguments and a loss) whose fields tests override to provoke each
// validation error.
//
//===----------------------------------------------------------------------===//

#ifndef TXRT_TEST_TEST_ARTIFACT_H
#define TXRT_TEST_TEST_ARTIFACT_H

#include "txrt/artifact_format.h"
#include "txrt/artifact_generated.h"

#include <cstring>
#include <string>
#include <vector>

namespace txrt::test {

struct TestArtifact {
  uint32_t version = kFormatVersion;
  std::string target = "sm_90";
  uint64_t arena = 4096;
  std::vector<fb::Slot> slots = {fb::Slot(0, 1024), fb::Slot(1024, 1024),
                                 fb::Slot(2048, 256), fb::Slot(2304, 256)};
  uint32_t kernelImage = 0;
  int32_t kernelJitImage = -1;
  uint32_t launchKernel = 0;
  std::vector<uint32_t> launchArgs = {0, 1};
  std::vector<uint32_t> launchThrough; ///< offset-table slots (none: absent)
  std::vector<uint32_t> grid = {1, 1, 1}, block = {32, 1, 1};
  uint32_t gemmA = 0, gemmB = 0, gemmD = 1;
  uint64_t gemmM = 8, gemmN = 8, gemmK = 8, gemmLd = 8;
  int32_t gemmAScale = -1; ///< the GEMM's A scale slot (-1: none)
  bool gemmFastAccum = false; ///< FP8 fast accumulation (the GEMM is f32)
  fb::DType gemmType = fb::DType::F32; ///< A's, B's and D's type
  uint64_t gemmBatch = 1;
  fb::Epilogue gemmEpilogue = fb::Epilogue::NONE;
  int32_t gemmBias = -1, gemmAux = -1; ///< slots (-1: none)
  uint64_t gemmAuxLd = 0;
  uint32_t memsetSlot = 2;
  uint64_t copyBytes = 256;
  // Argument 0: "w", f32[4, 4], INLINE f32.
  std::vector<int64_t> wShape = {4, 4};
  std::vector<uint8_t> wData = std::vector<uint8_t>(64, 0);
  uint32_t wSlot = 0;
  std::vector<int64_t> wShardOf; ///< argument 0's shard_of (empty: absent)
  // Argument 1: "tokens", i64[2, 4], BATCH, role data, index_bound 50.
  // Argument 2: "labels", i64[2, 4], BATCH, role labels.
  // Result 0: "loss", f32[], slot 3.
  uint32_t lossSlot = 3;
  // Optional command 4: a fused attention over [1, 1, attnT, attnD] bf16
  // tensors in slots 0 (q, k, v) and 1 (o), lse in slot 3.
  bool withAttention = false;
  int64_t attnT = 4, attnD = 8, attnWindow = 0;
  bool attnCausal = true;
  fb::DType attnType = fb::DType::BF16;
  uint32_t attnLse = 3;
  // Format 7: the attention's dropout (0: none written), its key and offset
  // slots.
  float attnDropout = 0.0f;
  uint32_t attnDropoutKey = 2, attnDropoutOffset = 3;
  // Format 3: the attention's element offsets (empty: none written).
  std::vector<int64_t> attnOffsets;
  // Format 9: FP8 attention (attnFP8: the flag; attnType is then q's FP8
  // type) and its scalar slots in AttentionScalar order (empty: none
  // written).
  bool attnFP8 = false;
  bool attnBackward = false; ///< a backward: dO in slot 0, dQ/dK/dV in slot 1
  fb::DType attnGradType = fb::DType::F8E5M2;
  std::vector<uint32_t> attnFP8Scalars;
  // Gradient accumulation: grad_accum, and an optional micro-step of one
  // memset (of microMemsetSlot) with result "loss" in slot 3.
  uint32_t gradAccum = 1;
  bool withMicroStep = false;
  uint32_t microMemsetSlot = 2;
  // Validation: an optional eval function of one memset (of evalMemsetSlot)
  // whose results are evalResults "loss" values in slot 3, of evalLossType
  // and evalLossShape, the first naming argument evalNext as next.
  bool withEval = false;
  uint32_t evalMemsetSlot = 2;
  unsigned evalResults = 1;
  fb::DType evalLossType = fb::DType::F32;
  std::vector<int64_t> evalLossShape = {};
  int32_t evalNext = -1;
  // Data parallelism (format 5): the artifact's rank count, the copy's rank
  // stride, and an optional collective (command 4, or 5 after attention)
  // from collectiveSrc to collectiveDst.
  uint32_t ranks = 0;
  uint64_t copyRankStride = 0;
  bool withCollective = false;
  fb::CollectiveKind collectiveKind = fb::CollectiveKind::REDUCE_SCATTER;
  fb::DType collectiveType = fb::DType::F32;
  uint64_t sendCount = 64, recvCount = 32;
  uint32_t collectiveSrc = 0, collectiveDst = 1;
  // Format 8: one collective per entry, each of that asynchronous group
  // (0: none), then a Join per entry of joinGroups.
  std::vector<uint32_t> collectiveAsyncGroups = {0};
  std::vector<uint32_t> joinGroups;
  // Several rank counts (Artifact.rank_variants): each entry's rank count
  // and bytes (another TestArtifact's build()), the bytes starting
  // variantMisalignment bytes before a 16-byte boundary (0: on one).
  std::vector<std::pair<uint32_t, std::vector<uint8_t>>> rankVariants;
  size_t variantMisalignment = 0;

  std::vector<uint8_t> build() const {
    flatbuffers::FlatBufferBuilder b;
    static const char kPtx[] = ".version 8.0\n.target sm_90\n.address_size 64\n";
    auto image = fb::CreateKernelImage(
        b, fb::ImageFormat::PTX,
        b.CreateVector(reinterpret_cast<const uint8_t *>(kPtx), sizeof(kPtx)));
    auto kernel = fb::CreateKernel(b, b.CreateString("k"), kernelImage, kernelJitImage);
    auto launch = fb::CreateLaunch(b, launchKernel, b.CreateVector(grid),
                                   b.CreateVector(block), 0, b.CreateVector(launchArgs),
                                   launchThrough.empty() ? 0 : b.CreateVector(launchThrough));
    fb::GemmBuilder gb(b);
    gb.add_m(gemmM), gb.add_n(gemmN), gb.add_k(gemmK);
    gb.add_lda(gemmLd), gb.add_ldb(gemmLd), gb.add_ldd(gemmLd);
    gb.add_a(gemmA), gb.add_b(gemmB), gb.add_d(gemmD);
    gb.add_a_scale(gemmAScale);
    gb.add_fast_accum(gemmFastAccum);
    gb.add_a_type(gemmType), gb.add_b_type(gemmType), gb.add_d_type(gemmType);
    gb.add_batch(gemmBatch);
    gb.add_epilogue(gemmEpilogue);
    gb.add_bias(gemmBias), gb.add_aux(gemmAux), gb.add_aux_ld(gemmAuxLd);
    auto gemm = gb.Finish();
    auto memset = fb::CreateMemset(b, memsetSlot, 0);
    auto copy = fb::CreateCopy(b, 3, 2, copyBytes, copyRankStride);
    std::vector<flatbuffers::Offset<fb::Command>> commands = {
        fb::CreateCommand(b, fb::Op::Launch, launch.Union(), b.CreateString("x")),
        fb::CreateCommand(b, fb::Op::Gemm, gemm.Union(), b.CreateString("/MatMul")),
        fb::CreateCommand(b, fb::Op::Memset, memset.Union(), b.CreateString("zero")),
        fb::CreateCommand(b, fb::Op::Copy, copy.Union(), b.CreateString("next")),
    };
    if (withAttention) {
      int64_t dims[4] = {1, 1, attnT, attnD}, strides[4] = {attnT * attnD, attnT * attnD, attnD, 1};
      fb::AttentionTensor in(0, flatbuffers::span<const int64_t, 4>(dims),
                             flatbuffers::span<const int64_t, 4>(strides));
      fb::AttentionTensor out(1, flatbuffers::span<const int64_t, 4>(dims),
                              flatbuffers::span<const int64_t, 4>(strides));
      flatbuffers::Offset<flatbuffers::Vector<int64_t>> offsets;
      if (!attnOffsets.empty())
        offsets = b.CreateVector(attnOffsets);
      flatbuffers::Offset<flatbuffers::Vector<uint32_t>> scalars;
      if (!attnFP8Scalars.empty())
        scalars = b.CreateVector(attnFP8Scalars);
      fb::AttentionBuilder ab(b);
      if (attnFP8)
        ab.add_fp8(true), ab.add_grad_dtype(attnGradType);
      if (!attnFP8Scalars.empty())
        ab.add_fp8_scalars(scalars);
      if (!attnOffsets.empty())
        ab.add_offsets(offsets);
      ab.add_dtype(attnType);
      ab.add_scale(0.125f);
      ab.add_causal(attnCausal);
      ab.add_window(attnWindow);
      ab.add_q(&in), ab.add_k(&in), ab.add_v(&in), ab.add_o(&out);
      if (attnBackward) {
        ab.add_backward(true);
        ab.add_grad_o(&in);
        ab.add_grad_q(&out), ab.add_grad_k(&out), ab.add_grad_v(&out);
      }
      ab.add_lse(attnLse);
      if (attnDropout != 0.0f) {
        ab.add_dropout_ratio(attnDropout);
        ab.add_dropout_key(attnDropoutKey);
        ab.add_dropout_offset(attnDropoutOffset);
      }
      auto attention = ab.Finish();
      commands.push_back(fb::CreateCommand(b, fb::Op::Attention, attention.Union(),
                                           b.CreateString("/attention")));
    }
    if (withCollective) {
      for (uint32_t group : collectiveAsyncGroups) {
        auto collective = fb::CreateCollective(b, collectiveKind, fb::Reduction::MEAN,
                                               collectiveType, sendCount, recvCount,
                                               collectiveSrc, collectiveDst, group);
        commands.push_back(fb::CreateCommand(b, fb::Op::Collective, collective.Union(),
                                             b.CreateString("/reduce_scatter")));
      }
      for (uint32_t group : joinGroups)
        commands.push_back(fb::CreateCommand(b, fb::Op::Join,
                                             fb::CreateJoin(b, group).Union(),
                                             b.CreateString("/join")));
    }
    std::vector<int64_t> tokenShape = {2, 4};
    std::vector<flatbuffers::Offset<fb::Argument>> args = {
        fb::CreateArgument(b, b.CreateString("w"), b.CreateString("param"), wSlot,
                           fb::DType::F32, b.CreateVector(wShape), fb::InitKind::INLINE,
                           0.0, fb::DType::F32, b.CreateVector(wData), 0, 0, 0, 0, -1, 0,
                           wShardOf.empty() ? 0 : b.CreateVector(wShardOf)),
        fb::CreateArgument(b, b.CreateString("tokens"), b.CreateString("data"), 1,
                           fb::DType::I64, b.CreateVector(tokenShape),
                           fb::InitKind::BATCH, 0, fb::DType::F32, 0, 0, 0, 0, 50),
        fb::CreateArgument(b, b.CreateString("labels"), b.CreateString("labels"), 1,
                           fb::DType::I64, b.CreateVector(tokenShape),
                           fb::InitKind::BATCH, 0, fb::DType::F32, 0, 0, 0, 0, 50),
    };
    std::vector<int64_t> scalar;
    std::vector<flatbuffers::Offset<fb::Result>> results = {fb::CreateResult(
        b, b.CreateString("loss"), lossSlot, fb::DType::F32, b.CreateVector(scalar))};
    flatbuffers::Offset<fb::Function> micro = 0;
    if (withMicroStep) {
      auto microMemset = fb::CreateMemset(b, microMemsetSlot, 0);
      std::vector<flatbuffers::Offset<fb::Command>> microCommands = {fb::CreateCommand(
          b, fb::Op::Memset, microMemset.Union(), b.CreateString("micro zero"))};
      std::vector<flatbuffers::Offset<fb::Result>> microResults = {fb::CreateResult(
          b, b.CreateString("loss"), lossSlot, fb::DType::F32, b.CreateVector(scalar))};
      micro = fb::CreateFunction(b, b.CreateString("micro_step"),
                                 b.CreateVector(microCommands), b.CreateVector(microResults));
    }
    flatbuffers::Offset<fb::Function> eval = 0;
    if (withEval) {
      auto evalMemset = fb::CreateMemset(b, evalMemsetSlot, 0);
      std::vector<flatbuffers::Offset<fb::Command>> evalCommands = {fb::CreateCommand(
          b, fb::Op::Memset, evalMemset.Union(), b.CreateString("eval zero"))};
      std::vector<flatbuffers::Offset<fb::Result>> evalResultList;
      for (unsigned i = 0; i < evalResults; ++i)
        evalResultList.push_back(fb::CreateResult(b, b.CreateString("loss"), lossSlot,
                                                  evalLossType, b.CreateVector(evalLossShape),
                                                  i == 0 ? evalNext : -1));
      eval = fb::CreateFunction(b, b.CreateString("eval"), b.CreateVector(evalCommands),
                                b.CreateVector(evalResultList));
    }
    std::vector<flatbuffers::Offset<fb::RankVariant>> variants;
    for (const auto &[count, bytes] : rankVariants) {
      // The builder pads so that the last len - m bytes pushed end on a
      // 16-byte boundary: the data then starts m bytes before one.
      b.ForceVectorAlignment(bytes.size() - variantMisalignment, 1, 16);
      variants.push_back(fb::CreateRankVariant(b, count, b.CreateVector(bytes)));
    }
    auto root = fb::CreateArtifact(
        b, version, b.CreateString("txopt test"), b.CreateString(target), false,
        b.CreateString("{\"optimizer\": \"sgd\"}"), arena,
        b.CreateVectorOfStructs(slots), b.CreateVector(&image, 1),
        b.CreateVector(&kernel, 1), 0, b.CreateVector(args), b.CreateVector(results),
        b.CreateVector(commands), arena, 0, gradAccum, micro, eval, /*logits=*/0,
        /*model_flops=*/0.0, /*state_init=*/0, ranks,
        variants.empty() ? 0 : b.CreateVector(variants));
    fb::FinishArtifactBuffer(b, root);
    return std::vector<uint8_t>(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
  }
};

} // namespace txrt::test

#endif // TXRT_TEST_TEST_ARTIFACT_H
