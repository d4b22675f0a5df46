//===- dtype.h - element types of artifact tensors -------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// Sizes, names and host-side conversions of the artifact's DType values.
// Conversions round like the reference executor (lib/Reference): one
// round-to-nearest-even from the exact value, so the runtime's initial
// weights and random batches are bit-identical to txopt-run's.
//
//===----------------------------------------------------------------------===//

#ifndef TXRT_CORE_DTYPE_H
#define TXRT_CORE_DTYPE_H

#include "core/status.h"
#include "txrt/artifact_generated.h"

#include <cstddef>
#include <cstdint>

namespace txrt {

using DType = fb::DType;

/// True for the enum values this runtime knows (a newer compiler could
/// write one it does not).
bool isKnownDType(DType type);
/// Bytes per element (I1 is one byte per element).
size_t dtypeSize(DType type);
/// "f32", "bf16", "f8e4m3fn", ... for messages.
const char *dtypeName(DType type);
bool isFloatDType(DType type);

/// IEEE-style encodings, rounding |x| once to nearest-even.
uint16_t bf16FromDouble(double x);
uint16_t f16FromDouble(double x);
double bf16ToDouble(uint16_t bits);
double f16ToDouble(uint16_t bits);
/// OCP FP8. Values beyond the largest finite become NaN (E4M3FN, which has
/// no infinity) or infinity (E5M2), as a non-saturating conversion does.
uint8_t f8e4m3fnFromDouble(double x);
uint8_t f8e5m2FromDouble(double x);
double f8e4m3fnToDouble(uint8_t bits);
double f8e5m2ToDouble(uint8_t bits);

/// Element |index| of |data| (of |type|) as a double (integers exactly up to
/// 2^53). Unknown types read as 0.
double loadAsDouble(DType type, const void *data, size_t index);
/// Element |index| of integer |data| as int64 (floats truncate).
int64_t loadAsInt64(DType type, const void *data, size_t index);
/// Stores |value| rounded to |type| (integers truncate toward zero and wrap
/// to the width; I1 stores value != 0).
void storeFromDouble(DType type, void *data, size_t index, double value);
/// Stores integer |value| to |type| exactly where representable.
void storeFromInt64(DType type, void *data, size_t index, int64_t value);

/// Converts |count| elements of |from| at |src| to |to| at |dst|. Integer to
/// integer conversions are exact (wrapping to narrower widths), float to
/// float round once. Fails naming the pair for conversions it does not do.
Status convertElements(DType from, const void *src, DType to, void *dst,
                       size_t count);

} // namespace txrt

#endif // TXRT_CORE_DTYPE_H
