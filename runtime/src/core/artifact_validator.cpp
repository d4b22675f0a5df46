//===- artifact_validator.cpp - the checks behind validateArtifact --------===//
//
// SPDX-License-Identifier: Apache-2.0
// Walks a verified step.txa once and checks what FlatBuffers cannot: slot
// sizes and references, kernels and images, commands' operands, bindings.
// All arithmetic on sizes from the file is overflow-checked: a hostile or
// corrupt artifact must produce a message, never an out-of-bounds access.
// Apart from artifact.cpp (loading, lookups) since it is most of the code.
//
//===----------------------------------------------------------------------===//

#include "core/artifact.h"

#include "core/dtype.h"
#include "txrt/artifact_format.h"

#include <algorithm>
#include <cstring>

namespace txrt {
namespace {

template <typename T> size_t sizeOf(const flatbuffers::Vector<T> *v) {
  return v ? v->size() : 0;
}

/// a * b into |out| unless it exceeds 2^62.
bool mulChecked(uint64_t a, uint64_t b, uint64_t &out) {
  constexpr uint64_t kLimit = uint64_t(1) << 62;
  if (a != 0 && b > kLimit / a)
    return false;
  out = a * b;
  return out <= kLimit;
}

bool addChecked(uint64_t a, uint64_t b, uint64_t &out) {
  out = a + b;
  return out >= a && out <= (uint64_t(1) << 62);
}

/// Walks the artifact once, stopping at the first problem.
class Validator {
public:
  explicit Validator(const fb::Artifact &a) : a_(a), numSlots_(sizeOf(a.slots())) {}

  Status run() {
    TXRT_RETURN_IF_ERROR(checkSlots());
    TXRT_RETURN_IF_ERROR(checkImagesAndKernels());
    TXRT_RETURN_IF_ERROR(checkConstants());
    TXRT_RETURN_IF_ERROR(checkArguments());
    TXRT_RETURN_IF_ERROR(checkResults(a_.results(), ""));
    TXRT_RETURN_IF_ERROR(checkCommands(a_.commands(), ""));
    TXRT_RETURN_IF_ERROR(checkMicroStep());
    TXRT_RETURN_IF_ERROR(checkStateInit());
    TXRT_RETURN_IF_ERROR(checkEvaluation());
    return checkLogits();
  }

private:
  const fb::Artifact &a_;
  size_t numSlots_;

  uint64_t slotBytes(unsigned slot) const { return a_.slots()->Get(slot)->bytes(); }

  /// "|what| names slot N, but the artifact has M slots".
  Status checkSlotIndex(const std::string &where, const std::string &what,
                        int64_t slot) const {
    if (slot >= 0 && static_cast<uint64_t>(slot) < numSlots_)
      return Status();
    return Status::invalid(where + ": " + what + " names slot " +
                           std::to_string(slot) + ", but the artifact has " +
                           std::to_string(numSlots_) + " slots");
  }

  Status checkSlots() {
    uint64_t arena = a_.arena_bytes();
    for (size_t i = 0; i < numSlots_; ++i) {
      const fb::Slot *s = a_.slots()->Get(i);
      std::string where = "slot " + std::to_string(i);
      // A scalar (an entry of packed FP8 state) needs only its own
      // alignment; everything else starts on a 256-byte boundary.
      uint64_t alignment = s->bytes() <= kScalarSlotBytes ? kScalarSlotBytes : kSlotAlignment;
      if (s->offset() % alignment != 0)
        return Status::invalid(where + ": offset " + std::to_string(s->offset()) +
                               " is not a multiple of " + std::to_string(alignment));
      uint64_t end;
      if (!addChecked(s->offset(), s->bytes(), end) || end > arena)
        return Status::invalid(where + ": bytes [" + std::to_string(s->offset()) +
                               ", " + std::to_string(s->offset() + s->bytes()) +
                               ") lie outside the arena of " +
                               std::to_string(arena) + " bytes");
    }
    return Status();
  }

  Status checkImagesAndKernels() {
    for (size_t i = 0; i < sizeOf(a_.images()); ++i) {
      const fb::KernelImage *image = a_.images()->Get(i);
      std::string where = "image " + std::to_string(i);
      if (image->format() != fb::ImageFormat::PTX &&
          image->format() != fb::ImageFormat::CUBIN)
        return Status::invalid(where + ": unknown image format " +
                               std::to_string(int(image->format())));
      if (sizeOf(image->data()) == 0)
        return Status::invalid(where + ": no data");
    }
    size_t numImages = sizeOf(a_.images());
    for (size_t i = 0; i < sizeOf(a_.kernels()); ++i) {
      const fb::Kernel *k = a_.kernels()->Get(i);
      std::string where = "kernel " + std::to_string(i);
      if (!k->name() || k->name()->size() == 0)
        return Status::invalid(where + ": no name");
      if (k->image() >= numImages)
        return Status::invalid(where + " ('" + k->name()->str() +
                               "'): names image " + std::to_string(k->image()) +
                               ", but the artifact has " +
                               std::to_string(numImages) + " images");
      if (k->jit_image() >= 0 &&
          (static_cast<size_t>(k->jit_image()) >= numImages ||
           a_.images()->Get(k->jit_image())->format() != fb::ImageFormat::PTX))
        return Status::invalid(where + " ('" + k->name()->str() +
                               "'): its JIT image " + std::to_string(k->jit_image()) +
                               " is not a PTX image of the artifact's " +
                               std::to_string(numImages));
    }
    return Status();
  }

  Status checkConstants() {
    for (size_t i = 0; i < sizeOf(a_.constants()); ++i) {
      const fb::ConstantData *c = a_.constants()->Get(i);
      std::string where = "constant " + std::to_string(i);
      TXRT_RETURN_IF_ERROR(checkSlotIndex(where, "its slot", c->slot()));
      if (sizeOf(c->data()) > slotBytes(c->slot()))
        return Status::invalid(where + ": " + std::to_string(sizeOf(c->data())) +
                               " bytes do not fit slot " +
                               std::to_string(c->slot()) + " of " +
                               std::to_string(slotBytes(c->slot())) + " bytes");
    }
    return Status();
  }

  /// Element count and bytes of a tensor, checked to fit |slot|.
  Status checkTensor(const std::string &where, DType dtype,
                     const flatbuffers::Vector<int64_t> *shape, unsigned slot,
                     uint64_t &elements) {
    if (!isKnownDType(dtype))
      return Status::invalid(where + ": unknown dtype " +
                             std::to_string(int(dtype)));
    TXRT_RETURN_IF_ERROR(checkSlotIndex(where, "its slot", slot));
    if (!shapeElements(shape, elements))
      return Status::invalid(where + ": the shape has a negative or too large "
                                     "dimension");
    uint64_t bytes;
    if (!mulChecked(elements, dtypeSize(dtype), bytes) || bytes > slotBytes(slot))
      return Status::invalid(where + ": " + std::to_string(elements) + " x " +
                             dtypeName(dtype) + " need " +
                             std::to_string(elements * dtypeSize(dtype)) +
                             " bytes, but slot " + std::to_string(slot) +
                             " has " + std::to_string(slotBytes(slot)));
    return Status();
  }

  Status checkArguments() {
    size_t numResults = sizeOf(a_.results());
    for (size_t i = 0; i < sizeOf(a_.arguments()); ++i) {
      const fb::Argument *arg = a_.arguments()->Get(i);
      std::string where = "argument " + std::to_string(i) + " ('" +
                          str(arg->name()) + "')";
      uint64_t elements;
      TXRT_RETURN_IF_ERROR(
          checkTensor(where, arg->dtype(), arg->shape(), arg->slot(), elements));
      if (arg->next_of() < -1 ||
          (arg->next_of() >= 0 && static_cast<size_t>(arg->next_of()) >= numResults))
        return Status::invalid(where + ": next_of names result " +
                               std::to_string(arg->next_of()) +
                               ", but the artifact has " +
                               std::to_string(numResults) + " results");
      switch (arg->init()) {
      case fb::InitKind::ZEROS:
      case fb::InitKind::SPLAT:
      case fb::InitKind::BATCH:
        break;
      case fb::InitKind::INLINE:
      case fb::InitKind::EXTERNAL: {
        if (!isKnownDType(arg->source_dtype()))
          return Status::invalid(where + ": unknown source dtype " +
                                 std::to_string(int(arg->source_dtype())));
        uint64_t want = elements * dtypeSize(arg->source_dtype());
        uint64_t have = arg->init() == fb::InitKind::INLINE
                            ? sizeOf(arg->data())
                            : arg->length();
        if (have != want)
          return Status::invalid(
              where + ": " +
              (arg->init() == fb::InitKind::INLINE ? "inline data" : "external data") +
              " holds " + std::to_string(have) + " bytes, but " +
              std::to_string(elements) + " x " + dtypeName(arg->source_dtype()) +
              " need " + std::to_string(want));
        if (arg->init() == fb::InitKind::EXTERNAL &&
            (!arg->path() || arg->path()->size() == 0))
          return Status::invalid(where + ": external data without a path");
        break;
      }
      default:
        return Status::invalid(where + ": unknown init kind " +
                               std::to_string(int(arg->init())));
      }
      TXRT_RETURN_IF_ERROR(checkShardOf(where, *arg, elements));
    }
    return Status();
  }

  /// Data parallel: an argument that is the rank's shard of a whole tensor
  /// (shard_of) is 1-D with ceil(n / ranks) elements of the whole's n, in
  /// an artifact for ranks (checkpoints gather and split it by that rule).
  Status checkShardOf(const std::string &where, const fb::Argument &arg, uint64_t elements) {
    if (!arg.shard_of())
      return Status();
    uint64_t whole;
    if (a_.ranks() == 0)
      return Status::invalid(where + ": shard_of in an artifact that is not data-parallel");
    if (!shapeElements(arg.shard_of(), whole) || whole == 0)
      return Status::invalid(where + ": shard_of has a zero, negative or too large dimension");
    uint64_t ranks = a_.ranks(), shard = (whole + ranks - 1) / ranks;
    if (!arg.shape() || arg.shape()->size() != 1 || elements != shard)
      return Status::invalid(where + ": a shard of " + std::to_string(whole) +
                             " elements over " + std::to_string(ranks) +
                             " ranks holds " + std::to_string(shard) +
                             " elements in one dimension, but the argument has " +
                             std::to_string(elements));
    return Status();
  }

  /// Gradient accumulation: the micro-step's commands and results pass
  /// the step's checks, and it only comes with grad_accum > 1.
  Status checkMicroStep() {
    const fb::Function *micro = a_.micro_step();
    if (!micro)
      return a_.grad_accum() <= 1
                 ? Status()
                 : Status::invalid("grad_accum is " + std::to_string(a_.grad_accum()) +
                                   ", but the artifact has no micro-step");
    if (a_.grad_accum() < 2)
      return Status::invalid("the artifact has a micro-step, but grad_accum is " +
                             std::to_string(a_.grad_accum()) + " (expected >= 2)");
    std::string prefix = "micro-step '" + str(micro->name()) + "': ";
    TXRT_RETURN_IF_ERROR(checkResults(micro->results(), prefix));
    return checkCommands(micro->commands(), prefix);
  }

  /// FP8 weight caching: the state-init function's commands and results
  /// pass the step's checks, and every result initializes an argument.
  Status checkStateInit() {
    const fb::Function *init = a_.state_init();
    if (!init)
      return Status();
    std::string prefix = "state-init '" + str(init->name()) + "': ";
    TXRT_RETURN_IF_ERROR(checkResults(init->results(), prefix));
    if (init->results())
      for (const fb::Result *r : *init->results())
        if (r->next() < 0)
          return Status::invalid(prefix + "result '" + str(r->name()) +
                                 "' initializes no argument (next < 0)");
    return checkCommands(init->commands(), prefix);
  }

  /// Validation: the evaluation function returns one float value (the
  /// loss).
  Status checkEvaluation() {
    return checkForwardFunction(
        a_.eval(), "evaluation", "the loss", "validation",
        [](const fb::Result &loss) {
          uint64_t elements = 0;
          return isFloatDType(loss.dtype()) && shapeElements(loss.shape(), elements) &&
                 elements == 1;
        },
        "one float value");
  }

  /// Sampling: the logits function returns one float tensor of rank >= 2
  /// (a row of scores per token).
  Status checkLogits() {
    return checkForwardFunction(
        a_.logits(), "logits", "the scores", "sampling",
        [](const fb::Result &scores) {
          return isFloatDType(scores.dtype()) && sizeOf(scores.shape()) >= 2;
        },
        "a float tensor of rank >= 2 (a row of scores per token)");
  }

  /// A forward-only function beside the step (|kind|, if present): its
  /// commands and result pass the step's checks, it has exactly one result
  /// (|what|) of which |fits| holds (else "expected its result to be
  /// |expected|"), and it writes no argument (|use| names what it is for).
  template <typename Fits>
  Status checkForwardFunction(const fb::Function *function, const char *kind,
                              const char *what, const char *use, Fits fits,
                              const char *expected) {
    if (!function)
      return Status();
    std::string prefix = std::string(kind) + " '" + str(function->name()) + "': ";
    TXRT_RETURN_IF_ERROR(checkResults(function->results(), prefix));
    if (sizeOf(function->results()) != 1)
      return Status::invalid(prefix + "expected one result (" + what + "), got " +
                             std::to_string(sizeOf(function->results())));
    const fb::Result *result = function->results()->Get(0);
    if (!fits(*result))
      return Status::invalid(prefix + "expected its result to be " + expected);
    if (result->next() >= 0)
      return Status::invalid(prefix + "its result names argument " +
                             std::to_string(result->next()) + " as next, but " + use +
                             " changes no argument");
    return checkCommands(function->commands(), prefix);
  }

  using Results = flatbuffers::Vector<flatbuffers::Offset<fb::Result>>;
  using Commands = flatbuffers::Vector<flatbuffers::Offset<fb::Command>>;

  Status checkResults(const Results *results, const std::string &prefix) {
    size_t numArgs = sizeOf(a_.arguments());
    for (size_t i = 0; i < sizeOf(results); ++i) {
      const fb::Result *r = results->Get(i);
      std::string where =
          prefix + "result " + std::to_string(i) + " ('" + str(r->name()) + "')";
      uint64_t elements;
      TXRT_RETURN_IF_ERROR(
          checkTensor(where, r->dtype(), r->shape(), r->slot(), elements));
      if (r->next() < -1 || (r->next() >= 0 && static_cast<size_t>(r->next()) >= numArgs))
        return Status::invalid(where + ": next names argument " +
                               std::to_string(r->next()) +
                               ", but the artifact has " +
                               std::to_string(numArgs) + " arguments");
      if (r->next() >= 0) {
        const fb::Argument *arg = a_.arguments()->Get(r->next());
        uint64_t argElements = 0;
        shapeElements(arg->shape(), argElements);
        if (arg->dtype() != r->dtype() || argElements != elements)
          return Status::invalid(where + ": becomes argument " +
                                 std::to_string(r->next()) + " ('" +
                                 str(arg->name()) +
                                 "'), but their dtypes or sizes differ");
      }
    }
    return Status();
  }

  /// Checks that a |rows| x |cols| column-major matrix with leading
  /// dimension |ld|, |batch| times |stride| elements apart, fits |slot|.
  Status checkMatrix(const std::string &where, const char *name, unsigned slot,
                     DType type, uint64_t rows, uint64_t cols, uint64_t ld,
                     uint64_t batch, int64_t stride) {
    TXRT_RETURN_IF_ERROR(checkSlotIndex(where, std::string("operand ") + name, slot));
    if (!isKnownDType(type))
      return Status::invalid(where + ": operand " + name + " has unknown dtype " +
                             std::to_string(int(type)));
    if (ld < rows)
      return Status::invalid(where + ": operand " + name + " has leading dimension " +
                             std::to_string(ld) + " < its " + std::to_string(rows) +
                             " rows");
    if (stride < 0)
      return Status::invalid(where + ": operand " + name + " has a negative batch stride");
    uint64_t lastCol = 0, extent = 0, batchSpan = 0, elements = 0, bytes = 0;
    if (!mulChecked(ld, cols - 1, lastCol) || !addChecked(lastCol, rows, extent) ||
        !mulChecked(batch - 1, static_cast<uint64_t>(stride), batchSpan) ||
        !addChecked(batchSpan, extent, elements) ||
        !mulChecked(elements, dtypeSize(type), bytes) || bytes > slotBytes(slot))
      return Status::invalid(where + ": operand " + name + " spans " +
                             std::to_string(elements * dtypeSize(type)) +
                             " bytes, but slot " + std::to_string(slot) + " has " +
                             std::to_string(slotBytes(slot)));
    return Status();
  }

  Status checkOptionalSlot(const std::string &where, const char *what, int slot) {
    if (slot == -1)
      return Status();
    return checkSlotIndex(where, what, slot);
  }

  Status checkGemm(const std::string &where, const fb::Gemm &g) {
    if (g.m() == 0 || g.n() == 0 || g.k() == 0 || g.batch() == 0)
      return Status::invalid(where + ": gemm has an empty dimension (m " +
                             std::to_string(g.m()) + ", n " + std::to_string(g.n()) +
                             ", k " + std::to_string(g.k()) + ", batch " +
                             std::to_string(g.batch()) + ")");
    for (DType t : {g.a_type(), g.b_type(), g.d_type()})
      if (!isFloatDType(t) || t == DType::F64)
        return Status::invalid(where + ": gemm operand type " +
                               std::string(dtypeName(t)) +
                               " is not one of f32, f16, bf16, f8e4m3fn, f8e5m2");
    // FP8 operands: the device check needs the flag (compute capability
    // 8.9), and cuBLASLt's FP8 kernels take A transposed and B not.
    bool fp8 = false;
    for (DType t : {g.a_type(), g.b_type()})
      fp8 |= t == DType::F8E4M3FN || t == DType::F8E5M2;
    if (fp8 && !a_.needs_fp8())
      return Status::invalid(where + ": FP8 gemm in an artifact without needs_fp8");
    if (fp8 && (!g.trans_a() || g.trans_b()))
      return Status::invalid(where + ": FP8 gemm is not in the TN form cuBLASLt needs");
    if (!fp8 && g.fast_accum())
      return Status::invalid(where + ": fast_accum on a gemm without FP8 operands");
    if (g.compute() != fb::ComputeType::F32 &&
        g.compute() != fb::ComputeType::F32_FAST_TF32)
      return Status::invalid(where + ": unknown compute type " +
                             std::to_string(int(g.compute())));
    if (static_cast<unsigned>(g.epilogue()) > static_cast<unsigned>(fb::Epilogue::MAX))
      return Status::invalid(where + ": unknown epilogue " +
                             std::to_string(int(g.epilogue())));
    TXRT_RETURN_IF_ERROR(checkMatrix(where, "A", g.a(), g.a_type(),
                                     g.trans_a() ? g.k() : g.m(),
                                     g.trans_a() ? g.m() : g.k(), g.lda(),
                                     g.batch(), g.stride_a()));
    TXRT_RETURN_IF_ERROR(checkMatrix(where, "B", g.b(), g.b_type(),
                                     g.trans_b() ? g.n() : g.k(),
                                     g.trans_b() ? g.k() : g.n(), g.ldb(),
                                     g.batch(), g.stride_b()));
    TXRT_RETURN_IF_ERROR(checkMatrix(where, "D", g.d(), g.d_type(), g.m(), g.n(),
                                     g.ldd(), g.batch(), g.stride_d()));
    bool wantsBias = g.epilogue() == fb::Epilogue::BIAS ||
                     g.epilogue() == fb::Epilogue::GELU_BIAS ||
                     g.epilogue() == fb::Epilogue::GELU_AUX_BIAS;
    if (wantsBias && g.bias() < 0)
      return Status::invalid(where + ": the bias epilogue has no bias slot");
    TXRT_RETURN_IF_ERROR(checkOptionalSlot(where, "bias", g.bias()));
    TXRT_RETURN_IF_ERROR(checkGeluAux(where, g));
    TXRT_RETURN_IF_ERROR(checkOptionalSlot(where, "a_scale", g.a_scale()));
    TXRT_RETURN_IF_ERROR(checkOptionalSlot(where, "b_scale", g.b_scale()));
    TXRT_RETURN_IF_ERROR(checkOptionalSlot(where, "d_scale", g.d_scale()));
    TXRT_RETURN_IF_ERROR(checkOptionalSlot(where, "d_amax", g.d_amax()));
    if (g.bias() >= 0 && slotBytes(g.bias()) < g.m() * dtypeSize(g.d_type()))
      return Status::invalid(where + ": bias slot " + std::to_string(g.bias()) +
                             " holds fewer than m = " + std::to_string(g.m()) +
                             " elements");
    for (int s : {g.a_scale(), g.b_scale(), g.d_scale(), g.d_amax()}) {
      if (s >= 0 && slotBytes(s) < 4)
        return Status::invalid(where + ": scale slot " + std::to_string(s) +
                               " is smaller than one f32");
      // cuBLASLt refuses a scale pointer aligned only 4 (NOT_SUPPORTED).
      if (s >= 0 && a_.slots()->Get(s)->offset() % kSlotAlignment != 0)
        return Status::invalid(where + ": scale slot " + std::to_string(s) + " is not " +
                               std::to_string(kSlotAlignment) +
                               "-byte aligned (cuBLASLt refuses it)");
    }
    return Status();
  }

  /// The pre-activation a GELU_AUX(_BIAS) epilogue writes (format 10):
  /// a 16-bit D, one matrix, a leading dimension of at least m that is a
  /// multiple of 8 (cuBLASLt's rule), and a slot that holds it. Other
  /// epilogues have no aux slot.
  Status checkGeluAux(const std::string &where, const fb::Gemm &g) {
    bool wantsAux = g.epilogue() == fb::Epilogue::GELU_AUX ||
                    g.epilogue() == fb::Epilogue::GELU_AUX_BIAS;
    if (!wantsAux) {
      if (g.aux() >= 0)
        return Status::invalid(where + ": an aux slot without a GELU_AUX epilogue");
      return Status();
    }
    if (g.aux() < 0)
      return Status::invalid(where + ": the GELU_AUX epilogue has no aux slot");
    TXRT_RETURN_IF_ERROR(checkOptionalSlot(where, "aux", g.aux()));
    if (g.d_type() != DType::BF16 && g.d_type() != DType::F16)
      return Status::invalid(where + ": the GELU_AUX epilogue needs a bf16 or f16 D, not " +
                             dtypeName(g.d_type()));
    if (g.batch() != 1)
      return Status::invalid(where + ": the GELU_AUX epilogue on a batched gemm");
    if (g.aux_ld() < g.m() || g.aux_ld() % 8 != 0)
      return Status::invalid(where + ": aux_ld " + std::to_string(g.aux_ld()) +
                             " is less than m = " + std::to_string(g.m()) +
                             " or not a multiple of 8");
    uint64_t elements, bytes;
    if (!mulChecked(g.aux_ld(), g.n(), elements) ||
        !mulChecked(elements, dtypeSize(g.d_type()), bytes) || bytes > slotBytes(g.aux()))
      return Status::invalid(where + ": aux slot " + std::to_string(g.aux()) +
                             " holds fewer than aux_ld x n = " + std::to_string(g.aux_ld()) +
                             " x " + std::to_string(g.n()) + " elements");
    return Status();
  }

  /// An FP8 attention's f32 scalars (format 9): one slot per
  /// AttentionScalar the direction uses, each at least 4 bytes at a 4-byte
  /// offset; causal, and no mask, window or dropout (cuDNN's FP8 attention
  /// on Hopper takes none).
  Status checkFP8AttentionScalars(const std::string &where, const fb::Attention &at) {
    if (at.has_mask() || at.window() != 0 || at.dropout_ratio() != 0.0f)
      return Status::invalid(where + ": FP8 attention with a mask, window or dropout");
    // cuDNN's FP8 forward saturates the quantized probabilities at a delayed
    // scale without a causal mask (tx-insert-fp8 says why; measured).
    if (!at.causal())
      return Status::invalid(where + ": FP8 attention without a causal mask (cuDNN's FP8 "
                                     "forward would saturate its quantized probabilities)");
    if (sizeOf(at.fp8_scalars()) != kAttentionScalarCount)
      return Status::invalid(where + ": FP8 attention has " +
                             std::to_string(sizeOf(at.fp8_scalars())) + " scalars, not " +
                             std::to_string(kAttentionScalarCount));
    using S = fb::AttentionScalar;
    for (unsigned i = 0; i < kAttentionScalarCount; ++i) {
      S which = static_cast<S>(i);
      bool used = attentionScalarUsed(which, at.backward());
      uint32_t slot = at.fp8_scalars()->Get(i);
      std::string name = std::string("FP8 attention scalar ") + fb::EnumNameAttentionScalar(which);
      if (!used) {
        if (slot != kNoAttentionScalarSlot)
          return Status::invalid(where + ": " + name + " is set, but the " +
                                 (at.backward() ? "backward" : "forward") + " has none");
        continue;
      }
      if (slot == kNoAttentionScalarSlot)
        return Status::invalid(where + ": " + name + " is missing");
      TXRT_RETURN_IF_ERROR(checkSlotIndex(where, name, slot));
      if (slotBytes(slot) < 4 || a_.slots()->Get(slot)->offset() % 4 != 0)
        return Status::invalid(where + ": " + name + " slot " + std::to_string(slot) +
                               " is not a 4-byte aligned f32");
    }
    return Status();
  }

  /// A [B, H, T, D] attention tensor: known dims, non-negative strides, and
  /// its last element inside its slot.
  Status checkAttentionTensor(const std::string &where, const char *name,
                              const fb::AttentionTensor *t, DType type,
                              int64_t offset = 0) {
    if (!t)
      return Status::invalid(where + ": attention tensor " + name + " is missing");
    TXRT_RETURN_IF_ERROR(checkSlotIndex(where, std::string("attention tensor ") + name,
                                        t->slot()));
    if (offset < 0)
      return Status::invalid(where + ": attention tensor " + name + " has offset " +
                             std::to_string(offset));
    uint64_t last = static_cast<uint64_t>(offset);
    for (unsigned d = 0; d < 4; ++d) {
      int64_t dim = t->dims()->Get(d), stride = t->strides()->Get(d);
      uint64_t span;
      if (dim <= 0 || stride < 0 ||
          !mulChecked(static_cast<uint64_t>(dim - 1), static_cast<uint64_t>(stride), span) ||
          !addChecked(last, span, last))
        return Status::invalid(where + ": attention tensor " + name +
                               " has dim " + std::to_string(dim) + " / stride " +
                               std::to_string(stride) + " at axis " + std::to_string(d));
    }
    uint64_t bytes;
    if (!addChecked(last, 1, last) || !mulChecked(last, dtypeSize(type), bytes) ||
        bytes > slotBytes(t->slot()))
      return Status::invalid(where + ": attention tensor " + name + " spans " +
                             std::to_string(last) + " elements, more than slot " +
                             std::to_string(t->slot()) + " holds (" +
                             std::to_string(slotBytes(t->slot())) + " bytes)");
    return Status();
  }

  Status checkAttention(const std::string &where, const fb::Attention &at) {
    auto isFP8 = [](DType t) { return t == DType::F8E4M3FN || t == DType::F8E5M2; };
    if (at.fp8()) {
      if (!isFP8(at.dtype()) || (at.backward() && !isFP8(at.grad_dtype())))
        return Status::invalid(where + ": FP8 attention of types " +
                               std::string(dtypeName(at.dtype())) + " / " +
                               std::string(dtypeName(at.grad_dtype())) + " (expected FP8)");
      TXRT_RETURN_IF_ERROR(checkFP8AttentionScalars(where, at));
    } else if (at.dtype() != DType::BF16 && at.dtype() != DType::F16) {
      return Status::invalid(where + ": attention type " +
                             std::string(dtypeName(at.dtype())) +
                             " is not bf16 or f16");
    } else if (at.fp8_scalars()) {
      return Status::invalid(where + ": FP8 scalars on an attention that is not FP8");
    }
    if (at.window() < 0 || (at.window() > 0 && !at.causal()))
      return Status::invalid(where + ": attention window " +
                             std::to_string(at.window()) + " needs causal and >= 0");
    DType t = at.dtype();
    // Element offsets (format 3): q, k, v, o, mask, grad_o, grad_q, grad_k, grad_v.
    const size_t numOffsets = sizeOf(at.offsets());
    if (numOffsets != 0 && numOffsets != 9)
      return Status::invalid(where + ": attention has " + std::to_string(numOffsets) +
                             " offsets, not 9");
    auto offset = [&](unsigned i) -> int64_t {
      return numOffsets ? at.offsets()->Get(i) : 0;
    };
    TXRT_RETURN_IF_ERROR(checkAttentionTensor(where, "q", at.q(), t, offset(0)));
    TXRT_RETURN_IF_ERROR(checkAttentionTensor(where, "k", at.k(), t, offset(1)));
    TXRT_RETURN_IF_ERROR(checkAttentionTensor(where, "v", at.v(), t, offset(2)));
    TXRT_RETURN_IF_ERROR(checkAttentionTensor(where, "o", at.o(), t, offset(3)));
    auto q = at.q()->dims(), k = at.k()->dims(), v = at.v()->dims(), o = at.o()->dims();
    if (k->Get(0) != q->Get(0) || v->Get(0) != q->Get(0) || q->Get(1) % k->Get(1) != 0 ||
        v->Get(1) != k->Get(1) || k->Get(3) != q->Get(3) || v->Get(2) != k->Get(2) ||
        o->Get(0) != q->Get(0) || o->Get(1) != q->Get(1) || o->Get(2) != q->Get(2) ||
        o->Get(3) != v->Get(3))
      return Status::invalid(where + ": attention q/k/v/o dims do not agree");
    TXRT_RETURN_IF_ERROR(checkSlotIndex(where, "attention lse", at.lse()));
    uint64_t rows = static_cast<uint64_t>(q->Get(0)) * q->Get(1) * q->Get(2);
    if (slotBytes(at.lse()) < rows * 4)
      return Status::invalid(where + ": attention lse slot holds fewer than " +
                             std::to_string(rows) + " f32");
    if (at.has_mask())
      TXRT_RETURN_IF_ERROR(checkAttentionTensor(where, "mask", at.mask(), t, offset(4)));
    // Dropout (format 7): a ratio in [0, 1) and the key, an i64 the library
    // reads from device memory (8-byte aligned).
    if (!(at.dropout_ratio() >= 0.0f && at.dropout_ratio() < 1.0f))
      return Status::invalid(where + ": attention dropout ratio " +
                             std::to_string(at.dropout_ratio()) + " is not in [0, 1)");
    if (at.dropout_ratio() > 0.0f)
      for (auto [what, slot] : {std::pair{"key", at.dropout_key()},
                                std::pair{"offset", at.dropout_offset()}}) {
        TXRT_RETURN_IF_ERROR(
            checkSlotIndex(where, std::string("attention dropout ") + what, slot));
        if (slotBytes(slot) < 8 || a_.slots()->Get(slot)->offset() % 8 != 0)
          return Status::invalid(where + ": attention dropout " + what + " slot " +
                                 std::to_string(slot) + " is not an 8-byte aligned i64");
      }
    if (at.backward()) {
      // FP8: dO and the gradients have a type of their own.
      DType g = at.fp8() ? at.grad_dtype() : t;
      TXRT_RETURN_IF_ERROR(checkAttentionTensor(where, "grad_o", at.grad_o(), g, offset(5)));
      TXRT_RETURN_IF_ERROR(checkAttentionTensor(where, "grad_q", at.grad_q(), g, offset(6)));
      TXRT_RETURN_IF_ERROR(checkAttentionTensor(where, "grad_k", at.grad_k(), g, offset(7)));
      TXRT_RETURN_IF_ERROR(checkAttentionTensor(where, "grad_v", at.grad_v(), g, offset(8)));
    }
    return Status();
  }

  /// A collective's counts agree with the step's rank count and fit its
  /// slots.
  Status checkCollective(const std::string &where, const fb::Collective &c) {
    uint64_t ranks = a_.ranks();
    if (ranks == 0)
      return Status::invalid(where + ": a collective in a step that is not "
                             "data-parallel (the artifact's ranks is 0)");
    if (!isFloatDType(c.dtype()) || c.dtype() == fb::DType::F8E4M3FN || c.dtype() == fb::DType::F8E5M2)
      return Status::invalid(where + ": collective over " +
                             std::string(dtypeName(c.dtype())) +
                             " elements (expected f32, f16, bf16 or f64)");
    uint64_t expectedRecv = 0;
    switch (c.kind()) {
    case fb::CollectiveKind::ALL_REDUCE:
      expectedRecv = c.send_count();
      break;
    case fb::CollectiveKind::REDUCE_SCATTER:
      if (c.send_count() % ranks != 0)
        return Status::invalid(where + ": reduce-scatter of " +
                               std::to_string(c.send_count()) +
                               " elements, not a multiple of " + std::to_string(ranks) +
                               " ranks");
      expectedRecv = c.send_count() / ranks;
      break;
    case fb::CollectiveKind::ALL_GATHER:
      if (!mulChecked(c.send_count(), ranks, expectedRecv))
        return Status::invalid(where + ": all-gather count overflows");
      break;
    default:
      return Status::invalid(where + ": unknown collective kind " +
                             std::to_string(int(c.kind())));
    }
    if (c.recv_count() != expectedRecv)
      return Status::invalid(where + ": collective receives " +
                             std::to_string(c.recv_count()) + " elements, expected " +
                             std::to_string(expectedRecv) + " over " +
                             std::to_string(ranks) + " ranks");
    if (c.reduction() > fb::Reduction::MAX && c.kind() != fb::CollectiveKind::ALL_GATHER)
      return Status::invalid(where + ": unknown reduction " +
                             std::to_string(int(c.reduction())));
    for (auto [slot, count, name] : {std::tuple{c.src(), c.send_count(), "source"},
                                     std::tuple{c.dst(), c.recv_count(), "destination"}}) {
      TXRT_RETURN_IF_ERROR(checkSlotIndex(where, std::string("collective ") + name, slot));
      uint64_t bytes = 0;
      if (!mulChecked(count, dtypeSize(c.dtype()), bytes) || bytes > slotBytes(slot))
        return Status::invalid(where + ": collective " + name + " of " +
                               std::to_string(count) + " elements exceeds slot " +
                               std::to_string(slot) + " (" +
                               std::to_string(slotBytes(slot)) + " bytes)");
    }
    // Source and destination apart in the arena (the compiler never
    // aliases them; NCCL's reduce-scatter and all-gather are undefined on
    // overlapping buffers other than its exact in-place layouts).
    uint64_t srcBegin = a_.slots()->Get(c.src())->offset(),
             dstBegin = a_.slots()->Get(c.dst())->offset();
    uint64_t srcEnd = srcBegin + c.send_count() * dtypeSize(c.dtype()),
             dstEnd = dstBegin + c.recv_count() * dtypeSize(c.dtype());
    if (srcBegin < dstEnd && dstBegin < srcEnd)
      return Status::invalid(where + ": collective source (slot " + std::to_string(c.src()) +
                             ") and destination (slot " + std::to_string(c.dst()) +
                             ") overlap in the arena");
    return Status();
  }

  /// Asynchronous collective groups (format 8): a group's collectives
  /// stand together; groups are numbered 1, 2, ... in command order over
  /// the whole artifact; a Join names a group started before it and ends
  /// every running group up to it; none runs past its function's end.
  struct AsyncGroups {
    unsigned lastStarted = 0;     ///< over the whole artifact
    std::vector<unsigned> running; ///< this function's, in order
  };
  AsyncGroups async_;

  Status checkAsyncCollective(const std::string &where, const Commands *commands, size_t i,
                              unsigned group) {
    bool continues = i > 0 && commands->Get(i - 1)->op_type() == fb::Op::Collective &&
                     commands->Get(i - 1)->op_as_Collective()->async_group() == group;
    if (continues)
      return Status();
    if (group <= async_.lastStarted)
      return Status::invalid(where + ": asynchronous collective group " +
                             std::to_string(group) + " does not follow group " +
                             std::to_string(async_.lastStarted) +
                             " (a group's collectives stand together, groups numbered in "
                             "order)");
    async_.lastStarted = group;
    async_.running.push_back(group);
    return Status();
  }

  Status checkJoin(const std::string &where, const fb::Join &join) {
    // It names a running group: the runtime waits for the event that
    // group records when it ends (earlier groups end before it).
    unsigned group = join.group();
    if (std::find(async_.running.begin(), async_.running.end(), group) ==
        async_.running.end())
      return Status::invalid(where + ": join of asynchronous collective group " +
                             std::to_string(group) + ", which is not running here");
    eraseUpTo(async_.running, group);
    return Status();
  }

  static void eraseUpTo(std::vector<unsigned> &v, unsigned group) {
    v.erase(std::remove_if(v.begin(), v.end(), [&](unsigned g) { return g <= group; }),
            v.end());
  }

  Status checkCommands(const Commands *commands, const std::string &prefix) {
    Status checked = checkCommandList(commands, prefix);
    if (checked.ok() && !async_.running.empty())
      checked = Status::invalid(prefix + "asynchronous collective group " +
                                std::to_string(async_.running.front()) +
                                " is never joined before the function ends");
    async_.running.clear();
    return checked;
  }

  Status checkCommandList(const Commands *commands, const std::string &prefix) {
    size_t numKernels = sizeOf(a_.kernels());
    for (size_t i = 0; i < sizeOf(commands); ++i) {
      const fb::Command *c = commands->Get(i);
      std::string where = prefix + "command " + std::to_string(i) + " (origin '" +
                          str(c->origin()) + "')";
      switch (c->op_type()) {
      case fb::Op::Launch: {
        const fb::Launch *l = c->op_as_Launch();
        if (l->kernel() >= numKernels)
          return Status::invalid(where + ": launch names kernel " +
                                 std::to_string(l->kernel()) +
                                 ", but the artifact has " +
                                 std::to_string(numKernels) + " kernels");
        for (auto [dims, name] : {std::pair{l->grid(), "grid"}, {l->block(), "block"}}) {
          if (sizeOf(dims) != 3)
            return Status::invalid(where + ": launch " + name + " has " +
                                   std::to_string(sizeOf(dims)) +
                                   " entries, expected 3 (x, y, z)");
          for (unsigned d = 0; d < 3; ++d)
            if (dims->Get(d) == 0)
              return Status::invalid(where + ": launch " + name + " dimension " +
                                     std::to_string(d) + " is 0");
        }
        for (size_t j = 0; j < sizeOf(l->args()); ++j)
          TXRT_RETURN_IF_ERROR(checkSlotIndex(
              where, "launch argument " + std::to_string(j), l->args()->Get(j)));
        for (size_t j = 0; j < sizeOf(l->through()); ++j)
          TXRT_RETURN_IF_ERROR(checkSlotIndex(
              where, "launch table entry " + std::to_string(j), l->through()->Get(j)));
        break;
      }
      case fb::Op::Gemm:
        TXRT_RETURN_IF_ERROR(checkGemm(where, *c->op_as_Gemm()));
        break;
      case fb::Op::Attention:
        TXRT_RETURN_IF_ERROR(checkAttention(where, *c->op_as_Attention()));
        break;
      case fb::Op::Memset: {
        const fb::Memset *m = c->op_as_Memset();
        TXRT_RETURN_IF_ERROR(checkSlotIndex(where, "memset", m->slot()));
        if (slotBytes(m->slot()) % 4 != 0)
          return Status::invalid(where + ": memset slot " +
                                 std::to_string(m->slot()) + " has " +
                                 std::to_string(slotBytes(m->slot())) +
                                 " bytes, not a multiple of 4");
        break;
      }
      case fb::Op::Copy: {
        const fb::Copy *cp = c->op_as_Copy();
        TXRT_RETURN_IF_ERROR(checkSlotIndex(where, "copy destination", cp->dst()));
        TXRT_RETURN_IF_ERROR(checkSlotIndex(where, "copy source", cp->src()));
        if (cp->bytes() > slotBytes(cp->dst()) || cp->bytes() > slotBytes(cp->src()))
          return Status::invalid(where + ": copy of " + std::to_string(cp->bytes()) +
                                 " bytes exceeds slot " + std::to_string(cp->src()) +
                                 " (" + std::to_string(slotBytes(cp->src())) +
                                 " bytes) or slot " + std::to_string(cp->dst()) +
                                 " (" + std::to_string(slotBytes(cp->dst())) +
                                 " bytes)");
        if (cp->src_rank_stride()) {
          // The last rank's shard must lie inside the source slot.
          uint64_t lastShardEnd = 0;
          if (a_.ranks() == 0)
            return Status::invalid(where + ": a per-rank copy (rank stride " +
                                   std::to_string(cp->src_rank_stride()) +
                                   ") in a step that is not data-parallel");
          if (!mulChecked(cp->src_rank_stride(), a_.ranks() - 1, lastShardEnd) ||
              lastShardEnd + cp->bytes() < lastShardEnd ||
              lastShardEnd + cp->bytes() > slotBytes(cp->src()))
            return Status::invalid(where + ": rank " + std::to_string(a_.ranks() - 1) +
                                   "'s shard (stride " +
                                   std::to_string(cp->src_rank_stride()) + ", " +
                                   std::to_string(cp->bytes()) +
                                   " bytes) lies outside source slot " +
                                   std::to_string(cp->src()) + " (" +
                                   std::to_string(slotBytes(cp->src())) + " bytes)");
        }
        break;
      }
      case fb::Op::Collective:
        TXRT_RETURN_IF_ERROR(checkCollective(where, *c->op_as_Collective()));
        if (unsigned group = c->op_as_Collective()->async_group())
          TXRT_RETURN_IF_ERROR(checkAsyncCollective(where, commands, i, group));
        break;
      case fb::Op::Join:
        TXRT_RETURN_IF_ERROR(checkJoin(where, *c->op_as_Join()));
        break;
      default:
        return Status::invalid(where + ": unknown or missing op (type " +
                               std::to_string(int(c->op_type())) + ")");
      }
    }
    return Status();
  }
};

} // namespace

bool shapeElements(const flatbuffers::Vector<int64_t> *shape, uint64_t &out) {
  out = 1;
  for (size_t i = 0; i < sizeOf(shape); ++i) {
    int64_t d = shape->Get(i);
    if (d < 0 || !mulChecked(out, static_cast<uint64_t>(d), out))
      return false;
  }
  return true;
}

Status validateArtifact(const fb::Artifact &artifact) {
  return Validator(artifact).run();
}

} // namespace txrt
