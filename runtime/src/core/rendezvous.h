//===- rendezvous.h - share a small blob from rank 0 over TCP --*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// NCCL needs every rank to start from the same 128-byte ncclUniqueId, which
// rank 0 creates. Rank 0 serves it at MASTER_ADDR:MASTER_PORT and the other
// ranks fetch it. Every wait is bounded by one deadline, so a rank that never
// starts, a wrong address or a port taken by another job ends the run with
// one line instead of a hang.
//
//===----------------------------------------------------------------------===//

#ifndef TXRT_CORE_RENDEZVOUS_H
#define TXRT_CORE_RENDEZVOUS_H

#include "core/launch_env.h"
#include "core/status.h"

#include <array>
#include <cstdint>

namespace txrt {

constexpr size_t kRendezvousBlobBytes = 128;

/// Rank 0: listens on env.masterAddr:env.masterPort (SO_REUSEADDR; when that
/// address is not one of this host's, as behind NAT, on every address of its
/// family), hands |blob| to each of the other worldSize - 1 ranks and returns
/// once all have it. Other ranks: connect (retrying while refused) and
/// replace |blob| with rank 0's. Each side first checks the other's greeting
/// (a magic and the world size), so a rank of another job, or of this job
/// launched with another world size, is turned away with a message rather
/// than handed a wrong id.
///
/// Everything finishes within |timeoutSeconds| or fails: TXRT_UNAVAILABLE
/// naming the address, the port and who was not heard from (e.g.
/// `rendezvous: rank 0 (listening on 10.0.0.1:29500) did not hear from 1 of
/// 3 ranks (rank 2) within 30 s`); TXRT_INVALID_ARGUMENT for a world size
/// mismatch or a rank launched twice. With one rank it returns at once and
/// opens no socket.
Status exchangeRendezvousBlob(const LaunchEnvironment &env,
                              std::array<uint8_t, kRendezvousBlobBytes> &blob,
                              double timeoutSeconds);

} // namespace txrt

#endif // TXRT_CORE_RENDEZVOUS_H
