//===- artifact_test.cpp - loading and validating step.txa ----------------===//
//
// SPDX-License-Identifier: Apache-2.0
// Every rejection must be one line naming what is wrong; these tests pin
// the substrings users will search for.
//
//===----------------------------------------------------------------------===//

#include "core/artifact.h"
#include "core/session.h"
#include "test_artifact.h"

#include <gtest/gtest.h>

using namespace txrt;
using txrt::test::TestArtifact;

namespace {
Status load(const std::vector<uint8_t> &bytes) {
  std::unique_ptr<Artifact> artifact;
  return Artifact::fromBytes(bytes, ".", artifact);
}

void expectRejected(const TestArtifact &t, const std::string &substring) {
  Status s = load(t.build());
  ASSERT_FALSE(s.ok()) << "expected a rejection containing: " << substring;
  EXPECT_NE(s.message().find(substring), std::string::npos) << s.message();
  EXPECT_EQ(s.message().find('\n'), std::string::npos) << "one line: " << s.message();
}
} // namespace

TEST(Artifact, MinimalArtifactLoads) {
  std::unique_ptr<Artifact> artifact;
  Status s = Artifact::fromBytes(TestArtifact().build(), "/weights", artifact);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(artifact->root().commands()->size(), 4u);
  EXPECT_EQ(artifact->findResult("loss"), 0);
  EXPECT_EQ(artifact->findArgument("tokens"), 1);
  EXPECT_EQ(artifact->findArgument("nope"), -1);
  EXPECT_EQ(artifact->argumentElements(0), 16u);
  EXPECT_EQ(artifact->directory(), "/weights");
}

TEST(Artifact, TruncatedIsRejected) {
  std::vector<uint8_t> bytes = TestArtifact().build();
  for (size_t length : {size_t(0), size_t(4), size_t(7), size_t(8), size_t(16),
                        bytes.size() / 4, bytes.size() / 2, 3 * bytes.size() / 4,
                        bytes.size() - 8}) {
    // (Cutting only trailing padding can leave a valid buffer, so the
    // lengths cut into data.)
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + length);
    Status s = load(cut);
    ASSERT_FALSE(s.ok()) << "length " << length;
    EXPECT_NE(s.message().find("not a txopt artifact or truncated"), std::string::npos)
        << "length " << length << ": " << s.message();
  }
}

TEST(Artifact, GarbageIsRejected) {
  std::vector<uint8_t> garbage(300, 0xAB);
  Status s = load(garbage);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("not a txopt artifact"), std::string::npos) << s.message();
}

TEST(Artifact, WrongIdentifierIsRejected) {
  std::vector<uint8_t> bytes = TestArtifact().build();
  bytes[4] = 'X';
  Status s = load(bytes);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("file identifier is not 'TXA1'"), std::string::npos)
      << s.message();
}

TEST(Artifact, NewerVersionIsRejected) {
  TestArtifact t;
  t.version = kFormatVersion + 1;
  expectRejected(t, "artifact format version " + std::to_string(kFormatVersion + 1) +
                        " is newer than this runtime supports (" +
                        std::to_string(kFormatVersion) + "); rebuild txrun");
}

TEST(Artifact, VersionZeroIsRejected) {
  TestArtifact t;
  t.version = 0;
  expectRejected(t, "format version 0");
}

TEST(Artifact, LaunchArgumentSlotOutOfRange) {
  TestArtifact t;
  t.launchArgs = {0, 1, 2, 99};
  expectRejected(t, "command 0 (origin 'x'): launch argument 3 names slot 99, but the "
                    "artifact has 4 slots");
}

TEST(Artifact, LaunchTableSlotOutOfRange) {
  TestArtifact t;
  t.launchThrough = {1, 2, 42};
  expectRejected(t, "command 0 (origin 'x'): launch table entry 2 names slot 42, but the "
                    "artifact has 4 slots");
}

TEST(Artifact, LaunchTableSlotsInRangeLoad) {
  TestArtifact t;
  t.launchThrough = {1, 2, 3};
  EXPECT_TRUE(load(t.build()).ok());
}

TEST(Artifact, KernelIndexOutOfRange) {
  TestArtifact t;
  t.launchKernel = 5;
  expectRejected(t, "command 0 (origin 'x'): launch names kernel 5, but the artifact "
                    "has 1 kernels");
}

TEST(Artifact, ImageIndexOutOfRange) {
  TestArtifact t;
  t.kernelImage = 3;
  expectRejected(t, "kernel 0 ('k'): names image 3, but the artifact has 1 images");
}

TEST(Artifact, JitImageMustBeAnExistingPtxImage) {
  TestArtifact t;
  t.kernelJitImage = 0; // the one image is PTX: valid
  Status s = load(t.build());
  EXPECT_TRUE(s.ok()) << s.message();
  t.kernelJitImage = 2;
  expectRejected(t, "kernel 0 ('k'): its JIT image 2 is not a PTX image of the artifact's 1");
}

TEST(Artifact, GridNeedsThreeNonzeroEntries) {
  TestArtifact t;
  t.grid = {1, 1};
  expectRejected(t, "launch grid has 2 entries, expected 3");
  t.grid = {1, 0, 1};
  expectRejected(t, "launch grid dimension 1 is 0");
  t.grid = {1, 1, 1};
  t.block = {0, 1, 1};
  expectRejected(t, "launch block dimension 0 is 0");
}

TEST(Artifact, SlotPastArena) {
  TestArtifact t;
  t.slots.push_back(fb::Slot(3840, 512));
  expectRejected(t, "slot 4: bytes [3840, 4352) lie outside the arena of 4096 bytes");
}

TEST(Artifact, MisalignedSlot) {
  TestArtifact t;
  t.slots.push_back(fb::Slot(100, 8));
  expectRejected(t, "slot 4: offset 100 is not a multiple of 256");
}

TEST(Artifact, InlineDataOfWrongLength) {
  TestArtifact t;
  t.wData.resize(60);
  expectRejected(t, "argument 0 ('w'): inline data holds 60 bytes, but 16 x f32 need 64");
}

TEST(Artifact, ArgumentLargerThanItsSlot) {
  TestArtifact t;
  t.wShape = {16, 32};
  t.wData.resize(16 * 32 * 4);
  expectRejected(t, "argument 0 ('w'): 512 x f32 need 2048 bytes, but slot 0 has 1024");
}

TEST(Artifact, NegativeDimension) {
  TestArtifact t;
  t.wShape = {-1, 4};
  expectRejected(t, "argument 0 ('w'): the shape has a negative");
}

TEST(Artifact, ResultSlotOutOfRange) {
  TestArtifact t;
  t.lossSlot = 7;
  expectRejected(t, "result 0 ('loss'): its slot names slot 7, but the artifact has 4 slots");
}

TEST(Artifact, GemmOperandsChecked) {
  TestArtifact t;
  t.gemmD = 40;
  expectRejected(t, "command 1 (origin '/MatMul'): operand D names slot 40");
  t = TestArtifact();
  t.gemmLd = 4;
  expectRejected(t, "operand A has leading dimension 4 < its 8 rows");
  t = TestArtifact();
  t.gemmM = t.gemmLd = 64;
  expectRejected(t, "operand A spans");
  // The fast accumulator is an FP8 mode: on an f32 GEMM it is a compiler bug.
  t = TestArtifact();
  t.gemmFastAccum = true;
  expectRejected(t, "command 1 (origin '/MatMul'): fast_accum on a gemm without FP8 operands");
}

TEST(Artifact, GeluAuxEpilogueChecked) {
  // A bf16 8 x 8 GEMM computing its GELU with a bias (slot 3), the
  // pre-activation to slot 2 (256 bytes: 8 x 8 bf16 is 128).
  TestArtifact valid;
  valid.gemmType = fb::DType::BF16;
  valid.gemmEpilogue = fb::Epilogue::GELU_AUX_BIAS;
  valid.gemmBias = 3, valid.gemmAux = 2, valid.gemmAuxLd = 8;
  Status s = load(valid.build());
  EXPECT_TRUE(s.ok()) << s.message();
  TestArtifact t = valid;
  t.gemmEpilogue = fb::Epilogue::GELU_AUX;
  t.gemmBias = -1;
  s = load(t.build());
  EXPECT_TRUE(s.ok()) << s.message();
  t = valid;
  t.gemmBias = -1;
  expectRejected(t, "command 1 (origin '/MatMul'): the bias epilogue has no bias slot");
  t = valid;
  t.gemmAux = -1;
  expectRejected(t, "command 1 (origin '/MatMul'): the GELU_AUX epilogue has no aux slot");
  t = valid;
  t.gemmEpilogue = fb::Epilogue::BIAS;
  expectRejected(t, "command 1 (origin '/MatMul'): an aux slot without a GELU_AUX epilogue");
  t = valid;
  t.gemmAux = 40;
  expectRejected(t, "command 1 (origin '/MatMul'): aux names slot 40");
  t = valid;
  t.gemmType = fb::DType::F32;
  expectRejected(t, "the GELU_AUX epilogue needs a bf16 or f16 D, not f32");
  t = valid;
  t.gemmAuxLd = 4;
  expectRejected(t, "aux_ld 4 is less than m = 8 or not a multiple of 8");
  t.gemmAuxLd = 12;
  expectRejected(t, "aux_ld 12 is less than m = 8 or not a multiple of 8");
  t.gemmAuxLd = 24;
  expectRejected(t, "aux slot 2 holds fewer than aux_ld x n = 24 x 8 elements");
  t = valid;
  t.gemmBatch = 2;
  expectRejected(t, "the GELU_AUX epilogue on a batched gemm");
}

TEST(Artifact, ScalarSlotsMayBeUnaligned) {
  // A 4-byte slot inside another (an entry of packed FP8 state) may sit at
  // any 4-byte offset; a larger slot, or a 2-byte offset, may not.
  TestArtifact t;
  t.slots.push_back(fb::Slot(2048 + 12, 4));
  Status s = load(t.build());
  EXPECT_TRUE(s.ok()) << s.message();
  t.slots.back() = fb::Slot(2048 + 14, 4);
  expectRejected(t, "slot 4: offset 2062 is not a multiple of 4");
  t.slots.back() = fb::Slot(2048 + 16, 8);
  expectRejected(t, "slot 4: offset 2064 is not a multiple of 256");
  // But no GEMM may take such a slot as a scale: cuBLASLt refuses it.
  t = TestArtifact();
  t.slots.push_back(fb::Slot(2048 + 12, 4));
  t.gemmAScale = 4;
  expectRejected(t, "command 1 (origin '/MatMul'): scale slot 4 is not 256-byte aligned");
  t.gemmAScale = 2;
  Status aligned = load(t.build());
  EXPECT_TRUE(aligned.ok()) << aligned.message();
}

TEST(Artifact, MemsetAndCopyChecked) {
  TestArtifact t;
  t.memsetSlot = 12;
  expectRejected(t, "command 2 (origin 'zero'): memset names slot 12");
  t = TestArtifact();
  t.copyBytes = 4096;
  expectRejected(t, "command 3 (origin 'next'): copy of 4096 bytes exceeds");
}

TEST(Artifact, AttentionChecked) {
  TestArtifact t;
  t.withAttention = true;
  std::unique_ptr<Artifact> artifact;
  ASSERT_TRUE(Artifact::fromBytes(t.build(), "/weights", artifact).ok());
  t.attnT = 64; // 64 x 8 bf16 = 1 KiB fits slot 0; 64 x 16 does not
  t.attnD = 16;
  expectRejected(t, "command 4 (origin '/attention'): attention tensor q spans 1024 elements");
  t = TestArtifact();
  t.withAttention = true;
  t.attnType = fb::DType::F32;
  expectRejected(t, "attention type f32 is not bf16 or f16");
  t = TestArtifact();
  t.withAttention = true;
  t.attnCausal = false;
  t.attnWindow = 2;
  expectRejected(t, "attention window 2 needs causal");
  t = TestArtifact();
  t.withAttention = true;
  t.attnLse = 9;
  expectRejected(t, "attention lse names slot 9");
}

// Format 7: attention dropout, a ratio in [0, 1) keyed by an i64 slot.
TEST(Artifact, AttentionDropoutChecked) {
  TestArtifact t;
  t.withAttention = true;
  t.attnDropout = 0.1f;
  std::unique_ptr<Artifact> artifact;
  ASSERT_TRUE(Artifact::fromBytes(t.build(), "/weights", artifact).ok());
  t.attnDropout = 1.0f;
  expectRejected(t, "attention dropout ratio 1.000000 is not in [0, 1)");
  t.attnDropout = -0.5f;
  expectRejected(t, "attention dropout ratio -0.500000 is not in [0, 1)");
  t.attnDropout = 0.1f;
  t.attnDropoutKey = 9;
  expectRejected(t, "attention dropout key names slot 9");
  t.attnDropoutKey = 2;
  t.attnDropoutOffset = 7;
  expectRejected(t, "attention dropout offset names slot 7");
  t.slots.push_back(fb::Slot(2560, 4));
  t.attnDropoutOffset = 4;
  expectRejected(t, "attention dropout offset slot 4 is not an 8-byte aligned i64");
  t.attnDropoutOffset = 3;
  t.attnDropoutKey = 4;
  expectRejected(t, "attention dropout key slot 4 is not an 8-byte aligned i64");
}

// Format 3: q/k/v/o as views at an element offset inside their slot (the
// head split and merge cuDNN reads and writes in place).
TEST(Artifact, AttentionOffsetsAreValidated) {
  TestArtifact t;
  t.withAttention = true;
  // 4 x 8 bf16 = 32 elements of slot 0's 512: k at element 32 still fits.
  t.attnOffsets = {0, 32, 64, 0, 0, 0, 0, 0, 0};
  std::unique_ptr<Artifact> artifact;
  ASSERT_TRUE(Artifact::fromBytes(t.build(), "/weights", artifact).ok());
  t.attnOffsets = {0, 0, 0};
  expectRejected(t, "attention has 3 offsets, not 9");
  t.attnOffsets = {0, -8, 0, 0, 0, 0, 0, 0, 0};
  expectRejected(t, "attention tensor k has offset -8");
  t.attnOffsets = {0, 0, 500, 0, 0, 0, 0, 0, 0};
  expectRejected(t, "attention tensor v spans 532 elements");
}

// Format 9: FP8 attention, its f32 scales and amaxes each a slot of at
// least 4 bytes at a 4-byte offset (a site's entry of packed FP8 state).
TEST(Artifact, FP8AttentionChecked) {
  constexpr uint32_t kNone = 0xffffffffu;
  auto fp8Forward = [&] {
    TestArtifact t;
    t.withAttention = true;
    t.attnFP8 = true;
    t.attnType = fb::DType::F8E4M3FN;
    t.slots.push_back(fb::Slot(2560, 4)); // 4: the scales
    t.slots.push_back(fb::Slot(2564, 4)); // 5: amax_s
    t.slots.push_back(fb::Slot(2568, 4)); // 6: amax_o
    t.slots.push_back(fb::Slot(2572, 2)); // 7: too small for an f32
    // DESCALE_Q..SCALE_O read slot 4, AMAX_S and AMAX_O are 5 and 6; the
    // backward's own eleven are unused.
    t.attnFP8Scalars = {4, 4, 4, 4, 4, 4, 5, 6};
    t.attnFP8Scalars.resize(19, kNone);
    return t;
  };
  TestArtifact t = fp8Forward();
  std::unique_ptr<Artifact> artifact;
  Status loaded = Artifact::fromBytes(t.build(), "/weights", artifact);
  ASSERT_TRUE(loaded.ok()) << loaded.message();
  t.attnType = fb::DType::BF16;
  expectRejected(t, "FP8 attention of types bf16 / f8e5m2 (expected FP8)");
  t = fp8Forward();
  t.attnFP8Scalars.pop_back();
  expectRejected(t, "FP8 attention has 18 scalars, not 19");
  t = fp8Forward();
  t.attnFP8Scalars[0] = kNone;
  expectRejected(t, "FP8 attention scalar DESCALE_Q is missing");
  t = fp8Forward();
  t.attnFP8Scalars[8] = 4;
  expectRejected(t, "FP8 attention scalar DESCALE_O is set, but the forward has none");
  t = fp8Forward();
  t.attnFP8Scalars[5] = 99;
  expectRejected(t, "FP8 attention scalar SCALE_O names slot 99");
  t = fp8Forward();
  t.attnFP8Scalars[6] = 7;
  expectRejected(t, "FP8 attention scalar AMAX_S slot 7 is not a 4-byte aligned f32");
  t = fp8Forward();
  t.attnWindow = 2;
  expectRejected(t, "FP8 attention with a mask, window or dropout");
  t = fp8Forward();
  t.attnCausal = false;
  expectRejected(t, "FP8 attention without a causal mask");
  // FP8 scalars on a bf16 attention.
  t = fp8Forward();
  t.attnFP8 = false;
  t.attnType = fb::DType::BF16;
  expectRejected(t, "FP8 scalars on an attention that is not FP8");
  // The backward: DESCALE_Q..SCALE_S and DESCALE_O..AMAX_DP, its gradients
  // in an FP8 type of their own.
  auto fp8Backward = [&] {
    TestArtifact b = fp8Forward();
    b.attnBackward = true;
    b.attnFP8Scalars = {4, 4, 4, 4, 4, kNone, kNone, kNone, 4, 4, 4, 4, 4, 4, 4, 5, 5, 6, 6};
    return b;
  };
  t = fp8Backward();
  loaded = Artifact::fromBytes(t.build(), "/weights", artifact);
  ASSERT_TRUE(loaded.ok()) << loaded.message();
  t.attnFP8Scalars[5] = 4;
  expectRejected(t, "FP8 attention scalar SCALE_O is set, but the backward has none");
  t = fp8Backward();
  t.attnFP8Scalars[18] = kNone;
  expectRejected(t, "FP8 attention scalar AMAX_DP is missing");
  t = fp8Backward();
  t.attnGradType = fb::DType::BF16;
  expectRejected(t, "FP8 attention of types f8e4m3fn / bf16 (expected FP8)");
}

TEST(Artifact, MissingFileIsNamed) {
  std::unique_ptr<Artifact> artifact;
  Status s = Artifact::loadFile("/nonexistent/step.txa", artifact);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("cannot read '/nonexistent/step.txa'"), std::string::npos);
}

// Gradient accumulation (format version 2): the micro-step's commands and
// results pass the step's checks; grad_accum and the micro-step come
// together.
TEST(Artifact, MicroStepLoads) {
  TestArtifact t;
  t.gradAccum = 4;
  t.withMicroStep = true;
  std::unique_ptr<Artifact> artifact;
  Status s = Artifact::fromBytes(t.build(), ".", artifact);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(artifact->root().grad_accum(), 4u);
  ASSERT_NE(artifact->root().micro_step(), nullptr);
  EXPECT_EQ(artifact->root().micro_step()->commands()->size(), 1u);
}

TEST(Artifact, MicroStepCommandsAreValidated) {
  TestArtifact t;
  t.gradAccum = 2;
  t.withMicroStep = true;
  t.microMemsetSlot = 9;
  expectRejected(t, "micro-step 'micro_step': command 0 (origin 'micro zero')");
}

TEST(Artifact, MicroStepResultsAreValidated) {
  TestArtifact t;
  t.gradAccum = 2;
  t.withMicroStep = true;
  t.lossSlot = 12;
  expectRejected(t, "result 0 ('loss')");
}

TEST(Artifact, AccumulationNeedsItsMicroStep) {
  TestArtifact t;
  t.gradAccum = 2;
  expectRejected(t, "grad_accum is 2, but the artifact has no micro-step");
  TestArtifact u;
  u.withMicroStep = true;
  expectRejected(u, "the artifact has a micro-step, but grad_accum is 1 (expected >= 2)");
}

// Validation: the evaluation function's commands and result pass the
// step's checks; it returns one float (the loss) and changes no argument.
TEST(Artifact, EvaluationLoads) {
  TestArtifact t;
  t.withEval = true;
  std::unique_ptr<Artifact> artifact;
  Status s = Artifact::fromBytes(t.build(), ".", artifact);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_NE(artifact->root().eval(), nullptr);
  EXPECT_EQ(artifact->root().eval()->commands()->size(), 1u);
  TestArtifact bf16;
  bf16.withEval = true;
  bf16.evalLossType = fb::DType::BF16;
  ASSERT_TRUE(Artifact::fromBytes(bf16.build(), ".", artifact).ok());
}

TEST(Artifact, EvaluationCommandsAreValidated) {
  TestArtifact t;
  t.withEval = true;
  t.evalMemsetSlot = 9;
  expectRejected(t, "evaluation 'eval': command 0 (origin 'eval zero')");
}

TEST(Artifact, EvaluationReturnsOneFloat) {
  TestArtifact two;
  two.withEval = true;
  two.evalResults = 2;
  expectRejected(two, "evaluation 'eval': expected one result (the loss), got 2");
  TestArtifact ints;
  ints.withEval = true;
  ints.evalLossType = fb::DType::I64;
  expectRejected(ints, "evaluation 'eval': expected its result to be one float value");
  TestArtifact vector;
  vector.withEval = true;
  vector.evalLossShape = {2};
  vector.lossSlot = 2;
  expectRejected(vector, "evaluation 'eval': expected its result to be one float value");
}

TEST(Artifact, EvaluationChangesNoArgument) {
  TestArtifact t;
  t.wShape = {};
  t.wData = std::vector<uint8_t>(4, 0);
  t.withEval = true;
  t.evalNext = 0;
  expectRejected(t, "evaluation 'eval': its result names argument 0 as next, but "
                    "validation changes no argument");
}

// Data parallelism (format 5): collectives and per-rank copies are checked
// against the artifact's rank count and their slots.
TEST(Artifact, DataParallelCommandsLoad) {
  TestArtifact t;
  t.ranks = 2;
  t.withCollective = true; // reduce-scatter of 64 f32 (slot 0) into 32 (slot 1)
  t.copyBytes = 128;
  t.copyRankStride = 128; // rank 1's shard ends at slot 2's 256 bytes
  std::unique_ptr<Artifact> artifact;
  Status s = Artifact::fromBytes(t.build(), "/weights", artifact);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(artifact->root().ranks(), 2u);
  EXPECT_EQ(artifact->root().commands()->Get(4)->op_type(), fb::Op::Collective);
}

TEST(Artifact, CollectiveNeedsADataParallelStep) {
  TestArtifact t;
  t.withCollective = true;
  expectRejected(t, "command 4 (origin '/reduce_scatter'): a collective in a step that "
                    "is not data-parallel");
}

TEST(Artifact, CollectiveCountsMatchTheRanks) {
  TestArtifact t;
  t.ranks = 2;
  t.withCollective = true;
  t.recvCount = 64;
  expectRejected(t, "collective receives 64 elements, expected 32 over 2 ranks");
  t.ranks = 3;
  expectRejected(t, "reduce-scatter of 64 elements, not a multiple of 3 ranks");
  t.ranks = 2;
  t.collectiveKind = fb::CollectiveKind::ALL_GATHER;
  t.sendCount = 32;
  t.recvCount = 32;
  expectRejected(t, "collective receives 32 elements, expected 64 over 2 ranks");
}

TEST(Artifact, CollectiveBuffersFitTheirSlots) {
  TestArtifact t;
  t.ranks = 2;
  t.withCollective = true;
  t.sendCount = 512; // 2048 bytes in slot 0 of 1024
  t.recvCount = 256;
  expectRejected(t, "collective source of 512 elements exceeds slot 0 (1024 bytes)");
  t.sendCount = 64;
  t.recvCount = 32;
  t.collectiveDst = 2; // 128 bytes fit in 256
  std::unique_ptr<Artifact> artifact;
  EXPECT_TRUE(Artifact::fromBytes(t.build(), "/weights", artifact).ok());
  t.collectiveDst = 9;
  expectRejected(t, "collective destination names slot 9, but the artifact has 4 slots");
  t.collectiveDst = 0;
  expectRejected(t, "collective source (slot 0) and destination (slot 0) overlap in the arena");
}

TEST(Artifact, CollectiveOverFP8IsRejected) {
  TestArtifact t;
  t.ranks = 2;
  t.withCollective = true;
  t.collectiveType = fb::DType::F8E4M3FN;
  expectRejected(t, "collective over f8e4m3fn elements");
}

// A sharded argument (shard_of: checkpoints gather it whole) holds
// ceil(n / ranks) elements of the whole tensor's n, in one dimension.
TEST(Artifact, AsyncCollectiveGroupsLoad) {
  TestArtifact t;
  t.ranks = 2;
  t.withCollective = true;
  t.collectiveAsyncGroups = {1, 1, 2};
  t.joinGroups = {2};
  std::unique_ptr<Artifact> artifact;
  Status s = Artifact::fromBytes(t.build(), "/weights", artifact);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(artifact->root().commands()->Get(7)->op_type(), fb::Op::Join);
}

TEST(Artifact, AsyncCollectiveGroupsChecked) {
  TestArtifact t;
  t.ranks = 2;
  t.withCollective = true;
  // Every group joined before its function ends.
  t.collectiveAsyncGroups = {1};
  expectRejected(t, "asynchronous collective group 1 is never joined before the function ends");
  // Numbered in order, a group's collectives together.
  t.collectiveAsyncGroups = {2, 1};
  t.joinGroups = {2};
  expectRejected(t, "asynchronous collective group 1 does not follow group 2");
  t.collectiveAsyncGroups = {1, 2, 1};
  expectRejected(t, "asynchronous collective group 1 does not follow group 2");
  // A join names a running group.
  t.collectiveAsyncGroups = {0};
  t.joinGroups = {1};
  expectRejected(t, "join of asynchronous collective group 1, which is not running here");
  t.collectiveAsyncGroups = {1, 3};
  t.joinGroups = {2};
  expectRejected(t, "join of asynchronous collective group 2, which is not running here");
  t.joinGroups = {1, 1};
  expectRejected(t, "join of asynchronous collective group 1, which is not running here");
  t.joinGroups = {1, 3};
  std::unique_ptr<Artifact> artifact;
  Status s = Artifact::fromBytes(t.build(), "/weights", artifact);
  EXPECT_TRUE(s.ok()) << s.message();
}

TEST(Artifact, ShardOfMatchesTheRanks) {
  TestArtifact t;
  t.ranks = 2;
  t.wShape = {8};
  t.wData = std::vector<uint8_t>(32, 0);
  t.wShardOf = {3, 5}; // 15 elements: shards of 8, the last one padded
  std::unique_ptr<Artifact> artifact;
  Status s = Artifact::fromBytes(t.build(), "/weights", artifact);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(artifact->root().arguments()->Get(0)->shard_of()->size(), 2u);
  t.wShardOf = {4, 5};
  expectRejected(t, "argument 0 ('w'): a shard of 20 elements over 2 ranks holds 10 "
                    "elements in one dimension, but the argument has 8");
  t.wShardOf = {0, 5};
  expectRejected(t, "argument 0 ('w'): shard_of has a zero, negative or too large dimension");
  t.wShardOf = {16};
  t.ranks = 0;
  expectRejected(t, "argument 0 ('w'): shard_of in an artifact that is not data-parallel");
}

TEST(Artifact, RankStrideStaysInsideTheSource) {
  TestArtifact t;
  t.ranks = 2;
  t.copyBytes = 128;
  t.copyRankStride = 192; // rank 1 would read bytes 192..320 of 256
  expectRejected(t, "rank 1's shard (stride 192, 128 bytes) lies outside source slot 2 "
                    "(256 bytes)");
  t.ranks = 0;
  t.copyRankStride = 128;
  expectRejected(t, "a per-rank copy (rank stride 128) in a step that is not data-parallel");
}

// Several rank counts in one artifact (txopt --data-parallel=2,4): the
// root is the step for 2 ranks, a rank variant the step for 4; a run picks
// its count's step and refuses any other count, naming those it holds.
namespace {
TestArtifact dataParallelStep(uint32_t ranks) {
  TestArtifact t;
  t.ranks = ranks;
  t.withCollective = true; // reduce-scatter of 64 f32 into 64 / ranks
  t.recvCount = 64 / ranks;
  return t;
}
} // namespace

TEST(Artifact, RankVariantsLoadAndOneIsSelected) {
  TestArtifact t = dataParallelStep(2);
  t.rankVariants = {{4, dataParallelStep(4).build()}};
  std::unique_ptr<Artifact> artifact;
  Status s = Artifact::fromBytes(t.build(), ".", artifact);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(artifact->rankCounts(), (std::vector<unsigned>{2, 4}));
  EXPECT_EQ(artifact->root().ranks(), 2u);
  EXPECT_EQ(rankCountMismatch(*artifact, 2, true), "");
  artifact->selectRanks(4);
  EXPECT_EQ(artifact->root().ranks(), 4u);
  auto *collective = artifact->root().commands()->Get(4)->op_as_Collective();
  ASSERT_NE(collective, nullptr);
  EXPECT_EQ(collective->recv_count(), 16u);
  EXPECT_EQ(rankCountMismatch(*artifact, 4, true), "");
  // A count it does not hold leaves the selection as it was, and the
  // mismatch names every count.
  artifact->selectRanks(3);
  EXPECT_EQ(artifact->root().ranks(), 4u);
  EXPECT_EQ(rankCountMismatch(*artifact, 3, true),
            "this step is data-parallel over 2 or 4 ranks, but 3 were started");
  artifact->selectRanks(2);
  EXPECT_EQ(artifact->root().ranks(), 2u);
  EXPECT_EQ(artifact->rankCounts(), (std::vector<unsigned>{2, 4}));
}

TEST(Artifact, OneRankCountSuggestsCompilingForBoth) {
  std::unique_ptr<Artifact> artifact;
  ASSERT_TRUE(Artifact::fromBytes(dataParallelStep(2).build(), ".", artifact).ok());
  EXPECT_EQ(artifact->rankCounts(), (std::vector<unsigned>{2}));
  EXPECT_EQ(rankCountMismatch(*artifact, 4, true),
            "this step is data-parallel over 2 ranks, but 4 were started (compile it "
            "with txopt --train --data-parallel=2,4 for both counts in one artifact)");
}

TEST(Artifact, RankVariantsAreValidated) {
  TestArtifact t = dataParallelStep(2);
  t.rankVariants = {{4, dataParallelStep(4).build()}};
  TestArtifact plain = t;
  plain.ranks = 0;
  plain.withCollective = false;
  expectRejected(plain, "the artifact has rank variants, but its step is not data-parallel");
  t.rankVariants = {{0, dataParallelStep(4).build()}};
  expectRejected(t, "rank variant 0 (0 ranks): a rank count of 0");
  t.rankVariants = {{2, dataParallelStep(2).build()}};
  expectRejected(t, "rank variant 0 (2 ranks): a second step for 2 ranks");
  t.rankVariants = {{4, dataParallelStep(4).build()}, {4, dataParallelStep(4).build()}};
  expectRejected(t, "rank variant 1 (4 ranks): a second step for 4 ranks");
  t.rankVariants = {{4, dataParallelStep(2).build()}};
  expectRejected(t, "rank variant 0 (4 ranks): its step is for 2 ranks");
  // The variant's own commands are checked like the root's.
  TestArtifact wrongCounts = dataParallelStep(4);
  wrongCounts.recvCount = 32;
  t.rankVariants = {{4, wrongCounts.build()}};
  expectRejected(t, "rank variant 0 (4 ranks): command 4 (origin '/reduce_scatter'): "
                    "collective receives 32 elements, expected 16 over 4 ranks");
  // Another file's identifier inside: the FlatBuffers verifier accepts it
  // (nested buffers are verified without one), the loader does not.
  std::vector<uint8_t> renamed = dataParallelStep(4).build();
  std::memcpy(renamed.data() + 4, "XXXX", 4);
  t.rankVariants = {{4, renamed}};
  expectRejected(t, "rank variant 0 (4 ranks): not a txopt artifact or truncated: the file "
                    "identifier is not 'TXA1'");
  TestArtifact nested = dataParallelStep(4);
  nested.rankVariants = {{8, dataParallelStep(8).build()}};
  t.rankVariants = {{4, nested.build()}};
  expectRejected(t, "rank variant 0 (4 ranks): it has rank variants of its own");
  t.rankVariants = {{4, dataParallelStep(4).build()}};
  t.variantMisalignment = 4;
  expectRejected(t, "rank variant 0 (4 ranks): its bytes do not start at a 16-byte boundary");
}

// Variants inside variants are refused one level down, however deep the
// chain: the loader verifies each variant itself rather than letting
// FlatBuffers' verifier follow nested buffers (a chain 60,000 deep once
// overflowed the stack).
TEST(Artifact, DeepVariantChainsAreRefusedOneLevelDown) {
  std::vector<uint8_t> chain = dataParallelStep(8).build();
  for (uint32_t level = 0; level < 2000; ++level) {
    TestArtifact wrapper = dataParallelStep(4);
    wrapper.rankVariants = {{8, chain}};
    chain = wrapper.build();
  }
  TestArtifact t = dataParallelStep(2);
  t.rankVariants = {{4, chain}};
  expectRejected(t, "rank variant 0 (4 ranks): it has rank variants of its own");
}

TEST(Artifact, TooManyRankVariantsAreRefused) {
  TestArtifact t = dataParallelStep(1);
  std::vector<uint8_t> variant = dataParallelStep(2).build();
  for (uint32_t i = 0; i < kMaxRankVariants + 1; ++i)
    t.rankVariants.push_back({2 + i, variant});
  expectRejected(t, "the artifact has 64 rank variants, more than the 63 txopt writes at most");
}
