/*===- artifact_format.h - step.txa format constants ----------------------===*
 *
 * SPDX-License-Identifier: Apache-2.0
 * The version of the artifact format (artifact.fbs) that this runtime reads
 * and the compiler (lib/Target/CUDA) writes. Compatible schema changes add
 * fields at the end of a table and keep the version; anything else bumps it,
 * and a runtime refuses artifacts newer than it knows.
 *
 *===----------------------------------------------------------------------===*/

#ifndef TXRT_ARTIFACT_FORMAT_H
#define TXRT_ARTIFACT_FORMAT_H

#ifdef __cplusplus
namespace txrt {
/// Artifact.format_version written by the compiler and accepted (or older)
/// by the runtime. 10: the GELU epilogue writing the pre-activation
/// (Epilogue GELU_AUX / GELU_AUX_BIAS, Gemm.aux and aux_ld; an older
/// runtime refuses the epilogue as unknown). 9: FP8 attention (Attention.fp8, grad_dtype and
/// fp8_scalars; an older runtime would run the FP8 codes as bf16). 8:
/// asynchronous collective groups (Collective.async_group
/// and Join commands: bucketed gradient reduce-scatters run beside the
/// backward; an older runtime would not know the Join command). 7: attention with dropout (Attention.dropout_*; an older
/// runtime would run it without). 6: slots of at most 4 bytes at any 4-byte offset (one
/// cast site's entry of packed FP8 state, read by kernels and cuBLASLt
/// as a scalar; an older runtime refuses them as misaligned). 5: data
/// parallelism (Collective commands, Copy's rank
/// stride, Artifact.ranks; an older runtime would skip the collectives and
/// copy rank 0's shard everywhere). 4: the state-init function (an older runtime would start
/// the FP8 weight codes at zero). 3: attention tensors at an element offset inside their
/// slot (Attention.offsets; an older runtime would read the slot's start).
/// 2: the micro-step of gradient accumulation (an older runtime would run
/// the step alone). The compiler writes the oldest version that holds
/// what the step uses (1 for a plain step).
constexpr unsigned kFormatVersion = 10;
/// The FlatBuffers file identifier at bytes 4..7 of every step.txa.
constexpr const char kFileIdentifier[] = "TXA1";
/// Arena slot offsets are multiples of this many bytes, except that a slot
/// of at most kScalarSlotBytes bytes (a scalar inside packed state) may
/// sit at any multiple of its size's alignment, kScalarSlotBytes.
constexpr unsigned long long kSlotAlignment = 256;
constexpr unsigned long long kScalarSlotBytes = 4;
} // namespace txrt
#endif

#define TXRT_ARTIFACT_FORMAT_VERSION 10

#endif /* TXRT_ARTIFACT_FORMAT_H */
