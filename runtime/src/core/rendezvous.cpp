//===- rendezvous.cpp - share a small blob from rank 0 over TCP -----------===//
//
// SPDX-License-Identifier: Apache-2.0
// Wire format (integers little-endian):
//   rank r -> rank 0: magic[8] worldSize:u32 rank:u32
//   rank 0 -> rank r: magic[8] worldSize:u32 verdict:u32 blob[128]
// Rank 0 answers every well-formed greeting, also the ones it turns away, so
// the turned-away rank can say why (the verdict) instead of timing out.
// Sockets are non-blocking and every wait is a poll() against the deadline.
//
//===----------------------------------------------------------------------===//

#include "core/rendezvous.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <system_error>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace txrt {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint8_t kMagic[8] = {'t', 'x', 'r', 't', '-', 'r', 'd', '1'};
constexpr size_t kGreetingBytes = 16;
constexpr size_t kReplyBytes = 16 + kRendezvousBlobBytes;
/// How long rank 0 gives one connection to greet and take its reply, so a
/// stray client that connects and says nothing cannot hold up the real ranks
/// for the whole timeout.
constexpr std::chrono::seconds kPerConnectionLimit{10};
/// How long one connection attempt may take, so that an address that drops
/// packets (say, an unrouted IPv6 one) leaves time for MASTER_ADDR's others.
constexpr std::chrono::seconds kConnectAttemptLimit{5};
/// Pause between connection attempts while rank 0 is not listening yet.
constexpr std::chrono::milliseconds kRetryPause{100};

enum Verdict : uint32_t {
  kAccepted = 0,
  kWrongWorldSize = 1,
  kRankOutOfRange = 2,
  kDuplicateRank = 3,
};

void putU32(uint8_t *p, uint32_t value) {
  for (int i = 0; i < 4; ++i)
    p[i] = static_cast<uint8_t>(value >> (8 * i));
}

uint32_t getU32(const uint8_t *p) {
  uint32_t value = 0;
  for (int i = 0; i < 4; ++i)
    value |= static_cast<uint32_t>(p[i]) << (8 * i);
  return value;
}

std::string errnoText(int error) {
  return std::error_code(error, std::generic_category()).message();
}

std::string secondsText(double seconds) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g s", seconds);
  return text;
}

/// Milliseconds left until |deadline| for poll(), rounded up so that a
/// sub-millisecond remainder still waits instead of spinning.
int millisecondsLeft(Clock::time_point deadline) {
  auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::clamp<long long>(left.count(), 0, 1 << 30));
}

class Socket {
public:
  explicit Socket(int fd = -1) : fd_(fd) {}
  Socket(const Socket &) = delete;
  Socket &operator=(const Socket &) = delete;
  Socket(Socket &&other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  Socket &operator=(Socket &&other) noexcept {
    std::swap(fd_, other.fd_);
    return *this;
  }
  ~Socket() {
    if (fd_ >= 0)
      ::close(fd_);
  }
  int fd() const { return fd_; }

private:
  int fd_;
};

enum class Io { Done, TimedOut, Closed, Failed };

/// Waits for |events| on |fd| until |deadline|. Io::Done when ready.
Io waitFor(int fd, short events, Clock::time_point deadline, int &error) {
  while (true) {
    // At the deadline poll still looks once (timeout 0): a connection
    // refused at once must read as refused, not as timed out.
    pollfd entry{fd, events, 0};
    int ready = ::poll(&entry, 1, millisecondsLeft(deadline));
    if (ready > 0)
      return Io::Done;
    if (ready == 0)
      return Io::TimedOut;
    if (errno != EINTR) {
      error = errno;
      return Io::Failed;
    }
  }
}

Io sendAll(int fd, const uint8_t *data, size_t size, Clock::time_point deadline,
           int &error) {
  while (size > 0) {
    ssize_t sent = ::send(fd, data, size, MSG_NOSIGNAL);
    if (sent > 0) {
      data += sent;
      size -= static_cast<size_t>(sent);
      continue;
    }
    if (sent < 0 && errno == EINTR)
      continue;
    if (sent < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
      error = errno;
      return errno == EPIPE || errno == ECONNRESET ? Io::Closed : Io::Failed;
    }
    if (Io waited = waitFor(fd, POLLOUT, deadline, error); waited != Io::Done)
      return waited;
  }
  return Io::Done;
}

Io receiveAll(int fd, uint8_t *data, size_t size, Clock::time_point deadline,
              int &error) {
  while (size > 0) {
    ssize_t got = ::recv(fd, data, size, 0);
    if (got > 0) {
      data += got;
      size -= static_cast<size_t>(got);
      continue;
    }
    if (got == 0)
      return Io::Closed;
    if (errno == EINTR)
      continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      error = errno;
      return errno == ECONNRESET ? Io::Closed : Io::Failed;
    }
    if (Io waited = waitFor(fd, POLLIN, deadline, error); waited != Io::Done)
      return waited;
  }
  return Io::Done;
}

std::string endpoint(const LaunchEnvironment &env) {
  bool ipv6Literal = env.masterAddr.find(':') != std::string::npos;
  return (ipv6Literal ? "[" + env.masterAddr + "]" : env.masterAddr) + ":" +
         std::to_string(env.masterPort);
}

/// MASTER_ADDR's addresses for |flags| (AI_PASSIVE to listen).
Status resolve(const LaunchEnvironment &env, int flags, addrinfo *&out) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = flags | AI_NUMERICSERV;
  std::string port = std::to_string(env.masterPort);
  int result = ::getaddrinfo(env.masterAddr.c_str(), port.c_str(), &hints, &out);
  if (result != 0)
    return Status::unavailable("rendezvous: cannot resolve MASTER_ADDR=" +
                               env.masterAddr + ": " + ::gai_strerror(result));
  return Status();
}

/// Binds and listens on |address|; returns errno on failure.
int listenOn(const sockaddr *address, socklen_t length, int family, Socket &out) {
  Socket socket(::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (socket.fd() < 0)
    return errno;
  int one = 1;
  // A previous run's connections in TIME_WAIT must not block the port.
  ::setsockopt(socket.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(socket.fd(), address, length) != 0 || ::listen(socket.fd(), 128) != 0)
    return errno;
  out = std::move(socket);
  return 0;
}

Status listenForRanks(const LaunchEnvironment &env, Socket &listener) {
  addrinfo *addresses = nullptr;
  TXRT_RETURN_IF_ERROR(resolve(env, AI_PASSIVE, addresses));
  int error = 0;
  for (addrinfo *a = addresses; a; a = a->ai_next) {
    error = listenOn(a->ai_addr, a->ai_addrlen, a->ai_family, listener);
    if (error == 0)
      break;
  }
  // MASTER_ADDR may name this host by an address it does not own (NAT, a
  // container's published address): then listen on every address of the
  // same family, which is where the other ranks' connections arrive.
  if (error == EADDRNOTAVAIL && addresses) {
    sockaddr_storage any{};
    socklen_t length = 0;
    if (addresses->ai_family == AF_INET6) {
      auto *v6 = reinterpret_cast<sockaddr_in6 *>(&any);
      v6->sin6_family = AF_INET6;
      v6->sin6_addr = in6addr_any;
      v6->sin6_port = htons(static_cast<uint16_t>(env.masterPort));
      length = sizeof(sockaddr_in6);
    } else {
      auto *v4 = reinterpret_cast<sockaddr_in *>(&any);
      v4->sin_family = AF_INET;
      v4->sin_addr.s_addr = htonl(INADDR_ANY);
      v4->sin_port = htons(static_cast<uint16_t>(env.masterPort));
      length = sizeof(sockaddr_in);
    }
    error = listenOn(reinterpret_cast<sockaddr *>(&any), length,
                     addresses->ai_family, listener);
  }
  ::freeaddrinfo(addresses);
  if (error != 0)
    return Status::unavailable("rendezvous: rank 0 cannot listen on " + endpoint(env) +
                               ": " + errnoText(error));
  return Status();
}

/// Rank 0's side.
Status serveBlob(const LaunchEnvironment &env,
                 const std::array<uint8_t, kRendezvousBlobBytes> &blob,
                 double timeoutSeconds, Clock::time_point deadline) {
  Socket listener;
  TXRT_RETURN_IF_ERROR(listenForRanks(env, listener));
  const uint32_t worldSize = static_cast<uint32_t>(env.worldSize);
  std::vector<bool> served(worldSize, false);
  served[0] = true;
  uint32_t waitingFor = worldSize - 1;
  std::string turnedAway; // the first connection refused, for the timeout message

  while (waitingFor > 0) {
    int error = 0;
    Io ready = waitFor(listener.fd(), POLLIN, deadline, error);
    if (ready == Io::TimedOut)
      break;
    if (ready == Io::Failed)
      return Status::unavailable("rendezvous: rank 0 waiting on " + endpoint(env) +
                                 ": poll failed: " + errnoText(error));
    Socket peer(::accept4(listener.fd(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (peer.fd() < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ||
          errno == ECONNABORTED)
        continue;
      return Status::unavailable("rendezvous: rank 0 accepting on " + endpoint(env) +
                                 ": " + errnoText(errno));
    }
    auto connectionDeadline = std::min(deadline, Clock::now() + kPerConnectionLimit);
    uint8_t greeting[kGreetingBytes];
    if (receiveAll(peer.fd(), greeting, sizeof(greeting), connectionDeadline, error) !=
        Io::Done) {
      if (turnedAway.empty())
        turnedAway = "a connection that sent no greeting";
      continue;
    }
    if (std::memcmp(greeting, kMagic, sizeof(kMagic)) != 0) {
      if (turnedAway.empty())
        turnedAway = "a connection that is not a txrt rank";
      continue;
    }
    uint32_t peerWorldSize = getU32(greeting + 8);
    uint32_t peerRank = getU32(greeting + 12);
    Verdict verdict = kAccepted;
    std::string why;
    if (peerWorldSize != worldSize) {
      verdict = kWrongWorldSize;
      why = "rank " + std::to_string(peerRank) + " of a " +
            std::to_string(peerWorldSize) + "-rank job";
    } else if (peerRank == 0 || peerRank >= worldSize) {
      verdict = kRankOutOfRange;
      why = "a rank numbered " + std::to_string(peerRank);
    } else if (served[peerRank]) {
      verdict = kDuplicateRank;
      why = "a second rank " + std::to_string(peerRank);
    }
    uint8_t reply[kReplyBytes] = {};
    std::memcpy(reply, kMagic, sizeof(kMagic));
    putU32(reply + 8, worldSize);
    putU32(reply + 12, verdict);
    if (verdict == kAccepted)
      std::memcpy(reply + 16, blob.data(), blob.size());
    Io sent = sendAll(peer.fd(), reply, sizeof(reply), connectionDeadline, error);
    if (verdict != kAccepted) {
      if (turnedAway.empty())
        turnedAway = why;
      continue;
    }
    if (sent != Io::Done) {
      if (turnedAway.empty())
        turnedAway = "rank " + std::to_string(peerRank) +
                     ", which hung up before taking the id";
      continue;
    }
    served[peerRank] = true;
    --waitingFor;
  }
  if (waitingFor == 0)
    return Status();

  std::string missing;
  int listed = 0;
  for (uint32_t r = 1; r < worldSize; ++r) {
    if (served[r])
      continue;
    if (listed == 8) {
      missing += ", ...";
      break;
    }
    missing += (listed++ ? ", " : "") + std::to_string(r);
  }
  std::string message = "rendezvous: rank 0 (listening on " + endpoint(env) +
                        ") did not hear from " + std::to_string(waitingFor) + " of " +
                        std::to_string(worldSize) + " ranks (" +
                        (waitingFor == 1 ? "rank " : "ranks ") + missing + ") within " +
                        secondsText(timeoutSeconds);
  if (!turnedAway.empty())
    message += "; it turned away " + turnedAway;
  return Status::unavailable(message);
}

/// One attempt to connect to |address| before |deadline|; errno on failure.
int connectTo(const addrinfo &address, Clock::time_point deadline, Socket &out) {
  Socket socket(::socket(address.ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (socket.fd() < 0)
    return errno;
  if (::connect(socket.fd(), address.ai_addr, address.ai_addrlen) != 0) {
    if (errno != EINPROGRESS)
      return errno;
    int error = 0;
    Io ready = waitFor(socket.fd(), POLLOUT, deadline, error);
    if (ready == Io::TimedOut)
      return ETIMEDOUT;
    if (ready == Io::Failed)
      return error;
    socklen_t length = sizeof(error);
    if (::getsockopt(socket.fd(), SOL_SOCKET, SO_ERROR, &error, &length) != 0)
      return errno;
    if (error != 0)
      return error;
  }
  out = std::move(socket);
  return 0;
}

/// The other ranks' side.
Status fetchBlob(const LaunchEnvironment &env,
                 std::array<uint8_t, kRendezvousBlobBytes> &blob,
                 double timeoutSeconds, Clock::time_point deadline) {
  const std::string who = "rendezvous: rank " + std::to_string(env.rank);
  addrinfo *addresses = nullptr;
  TXRT_RETURN_IF_ERROR(resolve(env, 0, addresses));
  Socket connection;
  int lastError = 0;
  while (connection.fd() < 0) {
    for (addrinfo *a = addresses; a && connection.fd() < 0; a = a->ai_next)
      lastError = connectTo(
          *a, std::min(deadline, Clock::now() + kConnectAttemptLimit), connection);
    if (connection.fd() >= 0 || Clock::now() >= deadline)
      break;
    // Refused (or unreachable) while rank 0 is still starting: try again.
    std::this_thread::sleep_for(
        std::min<Clock::duration>(kRetryPause, deadline - Clock::now()));
  }
  ::freeaddrinfo(addresses);
  if (connection.fd() < 0)
    return Status::unavailable(who + " could not reach rank 0 at " + endpoint(env) +
                               " within " + secondsText(timeoutSeconds) +
                               " (last error: " + errnoText(lastError) + ")");

  uint8_t greeting[kGreetingBytes];
  std::memcpy(greeting, kMagic, sizeof(kMagic));
  putU32(greeting + 8, static_cast<uint32_t>(env.worldSize));
  putU32(greeting + 12, static_cast<uint32_t>(env.rank));
  uint8_t reply[kReplyBytes];
  int error = 0;
  Io io = sendAll(connection.fd(), greeting, sizeof(greeting), deadline, error);
  if (io == Io::Done)
    io = receiveAll(connection.fd(), reply, sizeof(reply), deadline, error);
  switch (io) {
  case Io::Done:
    break;
  case Io::TimedOut:
    return Status::unavailable(who + " connected to rank 0 at " + endpoint(env) +
                               " but got no reply within " + secondsText(timeoutSeconds));
  case Io::Closed:
    return Status::unavailable(who + ": the server at " + endpoint(env) +
                               " hung up without sending the id (not a txrt rank 0?)");
  case Io::Failed:
    return Status::unavailable(who + " talking to rank 0 at " + endpoint(env) + ": " +
                               errnoText(error));
  }
  if (std::memcmp(reply, kMagic, sizeof(kMagic)) != 0)
    return Status::unavailable(who + ": the server at " + endpoint(env) +
                               " is not a txrt rank 0 (unexpected reply)");
  uint32_t serverWorldSize = getU32(reply + 8);
  switch (getU32(reply + 12)) {
  case kAccepted:
    break;
  case kWrongWorldSize:
    return Status::invalid(who + ": rank 0 at " + endpoint(env) + " runs a job of " +
                           std::to_string(serverWorldSize) +
                           " ranks, but this rank was launched with a world size of " +
                           std::to_string(env.worldSize));
  case kDuplicateRank:
    return Status::invalid(who + ": rank 0 at " + endpoint(env) +
                           " already served a rank " + std::to_string(env.rank) +
                           " (two processes were launched with the same rank)");
  default:
    return Status::invalid(who + ": rank 0 at " + endpoint(env) +
                           " refused this rank's number");
  }
  std::memcpy(blob.data(), reply + 16, blob.size());
  return Status();
}

} // namespace

Status exchangeRendezvousBlob(const LaunchEnvironment &env,
                              std::array<uint8_t, kRendezvousBlobBytes> &blob,
                              double timeoutSeconds) {
  if (env.worldSize <= 1)
    return Status();
  if (env.rank < 0 || env.rank >= env.worldSize)
    return Status::invalid("rendezvous: rank " + std::to_string(env.rank) +
                           " is outside a world of " + std::to_string(env.worldSize));
  if (env.masterPort < 1 || env.masterPort > 65535)
    return Status::invalid("rendezvous: MASTER_PORT " + std::to_string(env.masterPort) +
                           " is not a TCP port");
  // Clamped so that "wait forever" (a huge or infinite value) cannot
  // overflow the clock.
  double bounded = timeoutSeconds > 0 ? std::min(timeoutSeconds, 1e8) : 0.0;
  auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double>(bounded));
  return env.rank == 0 ? serveBlob(env, blob, timeoutSeconds, deadline)
                       : fetchBlob(env, blob, timeoutSeconds, deadline);
}

} // namespace txrt
