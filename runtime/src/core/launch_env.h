//===- launch_env.h - rank and rendezvous from the launcher ----*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// A data-parallel run is started by a launcher (torchrun, mpirun, a script)
// that tells each process who it is through environment variables. This
// reads them once, checks them, and says in one line what is wrong, so a
// mistyped launch fails before any device or network work.
//
//===----------------------------------------------------------------------===//

#ifndef TXRT_CORE_LAUNCH_ENV_H
#define TXRT_CORE_LAUNCH_ENV_H

#include "core/status.h"

#include <functional>
#include <optional>
#include <string>

namespace txrt {

/// Who this process is in a data-parallel job and where rank 0 serves the
/// rendezvous.
struct LaunchEnvironment {
  int rank = 0;
  int worldSize = 1;
  /// This process's index among the ranks on its node (picks the GPU).
  int localRank = 0;
  /// Where rank 0 listens for the rendezvous (exchangeRendezvousBlob):
  /// MASTER_ADDR, and MASTER_PORT, or MASTER_PORT + 1 under torchrun
  /// (TORCHELASTIC_USE_AGENT_STORE=True: its agent's store listens on
  /// MASTER_PORT), or TXRT_RENDEZVOUS_PORT when set.
  std::string masterAddr;
  int masterPort = 0;
  /// Which names were read: "torchrun" (RANK, WORLD_SIZE, LOCAL_RANK) or
  /// "mpirun" (OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK).
  std::string source;
};

/// Reads the launch environment through |getenv| (std::getenv in txrun; a
/// table in tests). An unset or empty variable counts as unset.
///
/// - Neither RANK/WORLD_SIZE nor OMPI_COMM_WORLD_RANK/_SIZE set: |out| =
///   nullopt, OK (a plain single-process run).
/// - torchrun's names are read when RANK or WORLD_SIZE is set, else
///   Open MPI's. Both must be set; LOCAL_RANK (OMPI_COMM_WORLD_LOCAL_RANK)
///   defaults to the rank, which is right on one node. When both sets are
///   present they must agree (a launcher inside mpirun that renumbers ranks
///   would otherwise be silently ignored).
/// - MASTER_ADDR and MASTER_PORT are required when the world size is above 1
///   (mpirun does not set them: pass them with `-x`); with one rank nothing
///   is exchanged and they default to 127.0.0.1 and 0.
///
/// A malformed, partial or out-of-range value is TXRT_INVALID_ARGUMENT naming
/// the variable and its value, e.g. `launch environment: RANK=4 is not below
/// WORLD_SIZE=4`.
Status readLaunchEnvironment(const std::function<const char *(const char *)> &getenv,
                             std::optional<LaunchEnvironment> &out);

} // namespace txrt

#endif // TXRT_CORE_LAUNCH_ENV_H
