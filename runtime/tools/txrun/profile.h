//===- profile.h - txrun --profile: one step command by command -*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// What --profile K prints (device time by kind of command, the slowest
// commands) and what --profile-out writes (every command as JSON), from
// the per-command times of Session::runStepProfiled.
//
//===----------------------------------------------------------------------===//

#ifndef TXRT_TOOLS_TXRUN_PROFILE_H
#define TXRT_TOOLS_TXRUN_PROFILE_H

#include "core/artifact.h"
#include "core/status.h"

#include <string>
#include <vector>

namespace txrun {

/// The --profile table: device time per kind of command (kernel family by
/// the op it came from, cuBLASLt GEMMs, fused attention, memsets, copies)
/// and the slowest single commands with their origin.
void printProfile(const txrt::Artifact &artifact, const std::vector<float> &ms,
                  float total);

/// --profile-out: the profiled step, command by command, as JSON.
txrt::Status writeProfileJson(const std::string &path, const txrt::Artifact &artifact,
                              const std::vector<float> &ms,
                              const std::vector<float> &hostMs, float total);

} // namespace txrun

#endif // TXRT_TOOLS_TXRUN_PROFILE_H
