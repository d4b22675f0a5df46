//===- npy.h - NumPy .npy files for txrun ----------------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// Written exactly as txopt-run's writer (lib/Reference/Npy.cpp) writes them,
// so the lead can compare the two executors' outputs file by file: f16 as
// '<f2', f64 as '<f8', every other float (f32, bf16, FP8) as '<f4', i1 as
// '|b1', i32 as '<i4', other integers as '<i8'.
//
//===----------------------------------------------------------------------===//

#ifndef TXRT_CORE_NPY_H
#define TXRT_CORE_NPY_H

#include "core/dtype.h"

#include <string>
#include <vector>

namespace txrt {

/// The .npy descr a tensor of |type| is written with.
const char *npyDescrFor(DType type);
/// The bytes of a .npy file holding |elements| values of |type| at |data|.
std::string serializeNpy(DType type, const std::vector<int64_t> &shape,
                         const void *data, size_t elements);
Status writeNpyFile(const std::string &path, DType type,
                    const std::vector<int64_t> &shape, const void *data,
                    size_t elements);

/// A parsed .npy: its descr, shape and raw little-endian payload.
struct NpyArray {
  std::string descr;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;
};
/// Parses the subset NumPy writes (version 1-3, C order, little-endian).
Status parseNpy(const std::string &bytes, NpyArray &out);

/// txopt-run's output file name for |name|: characters outside
/// [A-Za-z0-9._-] become '_', an empty or dot-leading name gets a '_'
/// prefix, and ".npy" is appended.
std::string npyFileNameFor(const std::string &name);

} // namespace txrt

#endif // TXRT_CORE_NPY_H
