// A plain TCP socket bound on 127.0.0.1 with an OS-picked port, for tests that need a port
// held by "another program" (listening) or a port known to refuse (bound only); and a raw
// client socket connected to a loopback port.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace gossip_rdzv::testing_support {

class LoopbackSocket {
 public:
  enum class Mode { bound_only, listening };

  explicit LoopbackSocket(Mode mode) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
      throw std::runtime_error("cannot bind a loopback test socket");
    }
    if (mode == Mode::listening && ::listen(fd_, 16) != 0) {
      throw std::runtime_error("cannot listen on a loopback test socket");
    }
    socklen_t length = sizeof address;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
  }
  ~LoopbackSocket() { ::close(fd_); }
  LoopbackSocket(const LoopbackSocket&) = delete;
  LoopbackSocket& operator=(const LoopbackSocket&) = delete;

  std::uint16_t port() const { return port_; }
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
  std::uint16_t port_ = 0;
};

/// A port nobody listens on right now (the OS picked it and we released it).
inline std::uint16_t free_loopback_port() {
  return LoopbackSocket(LoopbackSocket::Mode::bound_only).port();
}

/// A TCP socket connected (or, with SOCK_NONBLOCK in `flags`, connecting) to 127.0.0.1:port,
/// as a raw peer that speaks ZMTP by hand; the caller closes it. Throws when that fails.
inline int connect_loopback(std::uint16_t port, int flags = 0) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | flags, 0);
  if (fd < 0) throw std::runtime_error("cannot open a loopback test socket");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(port);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 &&
      !((flags & SOCK_NONBLOCK) != 0 && errno == EINPROGRESS)) {
    ::close(fd);
    throw std::runtime_error("cannot connect to 127.0.0.1:" + std::to_string(port));
  }
  return fd;
}

}  // namespace gossip_rdzv::testing_support
