//===- launch_env.cpp - rank and rendezvous from the launcher -------------===//
//
// SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "core/launch_env.h"

#include <climits>

namespace txrt {
namespace {

/// The variable names of one launcher.
struct LauncherNames {
  const char *source;
  const char *rank;
  const char *worldSize;
  const char *localRank;
};

constexpr LauncherNames kTorchrun{"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"};
constexpr LauncherNames kMpirun{"mpirun", "OMPI_COMM_WORLD_RANK",
                                "OMPI_COMM_WORLD_SIZE",
                                "OMPI_COMM_WORLD_LOCAL_RANK"};

Status invalid(const std::string &message) {
  return Status::invalid("launch environment: " + message);
}

/// The variable's value, or nullptr when unset or empty (a shell's `export
/// RANK=` means "not given", not "malformed").
const char *lookup(const std::function<const char *(const char *)> &getenv,
                   const char *name) {
  const char *value = getenv(name);
  return value && *value ? value : nullptr;
}

/// Parses a decimal integer in [minimum, INT_MAX]. Only digits: "+1", " 1"
/// and "1.0" are refused rather than guessed at.
Status parseInteger(const char *name, const char *text, int minimum, int &out) {
  long long value = 0;
  for (const char *p = text; *p; ++p) {
    if (*p < '0' || *p > '9')
      return invalid(std::string(name) + "=" + text + " is not a non-negative integer");
    value = value * 10 + (*p - '0');
    if (value > INT_MAX)
      return invalid(std::string(name) + "=" + text + " is too large");
  }
  if (value < minimum)
    return invalid(std::string(name) + "=" + text + " must be at least " +
                   std::to_string(minimum));
  out = static_cast<int>(value);
  return Status();
}

/// Rank, world size and local rank under one launcher's names. |present| is
/// false when neither the rank nor the world size is set.
Status readRanks(const std::function<const char *(const char *)> &getenv,
                 const LauncherNames &names, bool &present, LaunchEnvironment &env) {
  const char *rankText = lookup(getenv, names.rank);
  const char *sizeText = lookup(getenv, names.worldSize);
  present = rankText || sizeText;
  if (!present)
    return Status();
  if (!rankText)
    return invalid(std::string(names.worldSize) + "=" + sizeText + " is set but " +
                   names.rank + " is not");
  if (!sizeText)
    return invalid(std::string(names.rank) + "=" + rankText + " is set but " +
                   names.worldSize + " is not");
  TXRT_RETURN_IF_ERROR(parseInteger(names.worldSize, sizeText, 1, env.worldSize));
  TXRT_RETURN_IF_ERROR(parseInteger(names.rank, rankText, 0, env.rank));
  if (env.rank >= env.worldSize)
    return invalid(std::string(names.rank) + "=" + rankText + " is not below " +
                   names.worldSize + "=" + sizeText);
  env.localRank = env.rank;
  if (const char *localText = lookup(getenv, names.localRank)) {
    TXRT_RETURN_IF_ERROR(parseInteger(names.localRank, localText, 0, env.localRank));
    if (env.localRank >= env.worldSize)
      return invalid(std::string(names.localRank) + "=" + localText +
                     " is not below " + names.worldSize + "=" + sizeText);
  }
  env.source = names.source;
  return Status();
}

} // namespace

Status readLaunchEnvironment(const std::function<const char *(const char *)> &getenv,
                             std::optional<LaunchEnvironment> &out) {
  out.reset();
  LaunchEnvironment torchrun, mpirun;
  bool hasTorchrun = false, hasMpirun = false;
  TXRT_RETURN_IF_ERROR(readRanks(getenv, kTorchrun, hasTorchrun, torchrun));
  TXRT_RETURN_IF_ERROR(readRanks(getenv, kMpirun, hasMpirun, mpirun));
  if (!hasTorchrun && !hasMpirun)
    return Status();
  if (hasTorchrun && hasMpirun &&
      (torchrun.rank != mpirun.rank || torchrun.worldSize != mpirun.worldSize))
    return invalid("RANK=" + std::to_string(torchrun.rank) +
                   " WORLD_SIZE=" + std::to_string(torchrun.worldSize) +
                   " disagree with OMPI_COMM_WORLD_RANK=" + std::to_string(mpirun.rank) +
                   " OMPI_COMM_WORLD_SIZE=" + std::to_string(mpirun.worldSize));
  LaunchEnvironment env = hasTorchrun ? torchrun : mpirun;

  const char *addr = lookup(getenv, "MASTER_ADDR");
  const char *portText = lookup(getenv, "MASTER_PORT");
  if (env.worldSize > 1 && !addr)
    return invalid("MASTER_ADDR is not set (rank 0's address; required when "
                   "the world size is " + std::to_string(env.worldSize) + ")");
  if (env.worldSize > 1 && !portText)
    return invalid("MASTER_PORT is not set (rank 0's rendezvous port; required "
                   "when the world size is " + std::to_string(env.worldSize) + ")");
  env.masterAddr = addr ? addr : "127.0.0.1";
  if (portText) {
    TXRT_RETURN_IF_ERROR(parseInteger("MASTER_PORT", portText, 0, env.masterPort));
    if (env.masterPort < 1 || env.masterPort > 65535)
      return invalid(std::string("MASTER_PORT=") + portText +
                     " is not a TCP port (1..65535)");
    // torchrun's agent serves its own store on MASTER_PORT and says so in
    // TORCHELASTIC_USE_AGENT_STORE: rank 0 cannot listen there, so the
    // rendezvous takes the next port.
    const char *agentStore = lookup(getenv, "TORCHELASTIC_USE_AGENT_STORE");
    if (agentStore && std::string(agentStore) == "True")
      env.masterPort = env.masterPort == 65535 ? 65534 : env.masterPort + 1;
  }
  if (const char *override = lookup(getenv, "TXRT_RENDEZVOUS_PORT")) {
    TXRT_RETURN_IF_ERROR(parseInteger("TXRT_RENDEZVOUS_PORT", override, 0, env.masterPort));
    if (env.masterPort < 1 || env.masterPort > 65535)
      return invalid(std::string("TXRT_RENDEZVOUS_PORT=") + override +
                     " is not a TCP port (1..65535)");
  }
  out = std::move(env);
  return Status();
}

} // namespace txrt
