//===- attention_tool_util.h - shared by the attention tools ----*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// What txrt-attention-bench and txrt-fp8-attention-probe both need: the
// spec of a contiguous [B, H, T, D] tensor, and the median time of a
// forward (and backward) over repeated runs.
//
//===----------------------------------------------------------------------===//

#ifndef TXRT_TOOLS_ATTENTION_TOOL_UTIL_H
#define TXRT_TOOLS_ATTENTION_TOOL_UTIL_H

#include "hal/hal.h"

#include <algorithm>
#include <memory>
#include <vector>

namespace txrt::tools {

/// The spec of a contiguous (row-major) [B, H, T, D] tensor at |ptr|.
inline hal::AttentionTensorSpec contiguousSpec(const std::vector<int64_t> &shape,
                                               hal::DevicePtr ptr) {
  hal::AttentionTensorSpec s;
  s.ptr = ptr;
  int64_t stride = 1;
  for (int d = 3; d >= 0; --d) {
    s.dims[d] = shape[d];
    s.strides[d] = stride;
    stride *= shape[d];
  }
  return s;
}

/// The median over |iters| runs (after 3 warm-up runs; CUDA events) of the
/// forward |fwd|, followed by the backward |bwd| when given.
inline Status medianMs(hal::Device &device, hal::Stream &stream, hal::Attention &attention,
                       hal::AttentionPlan &fwd, hal::AttentionPlan *bwd,
                       hal::DevicePtr workspace, int iters, double &median) {
  std::unique_ptr<hal::Event> start, end;
  TXRT_RETURN_IF_ERROR(device.createEvent(start));
  TXRT_RETURN_IF_ERROR(device.createEvent(end));
  std::vector<float> times;
  for (int i = 0; i < iters + 3; ++i) {
    TXRT_RETURN_IF_ERROR(stream.record(*start));
    TXRT_RETURN_IF_ERROR(attention.run(fwd, workspace, stream));
    if (bwd)
      TXRT_RETURN_IF_ERROR(attention.run(*bwd, workspace, stream));
    TXRT_RETURN_IF_ERROR(stream.record(*end));
    TXRT_RETURN_IF_ERROR(stream.synchronize());
    float ms = 0;
    TXRT_RETURN_IF_ERROR(device.elapsedMs(*start, *end, ms));
    if (i >= 3)
      times.push_back(ms);
  }
  std::sort(times.begin(), times.end());
  median = times[times.size() / 2];
  return Status();
}

} // namespace txrt::tools

#endif // TXRT_TOOLS_ATTENTION_TOOL_UTIL_H
