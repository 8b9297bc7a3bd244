#include "transport/tcp_probe.hpp"

#include "transport/file_descriptor.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

namespace gossip_rdzv::transport {
namespace {

using std::chrono::milliseconds;

struct AddrInfoDeleter {
  void operator()(addrinfo* list) const { freeaddrinfo(list); }
};
using AddrInfoList = std::unique_ptr<addrinfo, AddrInfoDeleter>;

ProbeResult from_errno(int error) {
  ProbeOutcome outcome = ProbeOutcome::unreachable;
  if (error == 0) outcome = ProbeOutcome::connected;
  if (error == ECONNREFUSED) outcome = ProbeOutcome::refused;
  if (error == ETIMEDOUT) outcome = ProbeOutcome::timed_out;
  return ProbeResult{outcome, error == 0 ? "" : std::strerror(error)};
}

int wait_for_connect(int fd, milliseconds timeout) {
  pollfd item{fd, POLLOUT, 0};
  int ready = 0;
  do {
    ready = ::poll(&item, 1, static_cast<int>(timeout.count()));
  } while (ready < 0 && errno == EINTR);
  if (ready == 0) return ETIMEDOUT;
  if (ready < 0) return errno;
  int error = 0;
  socklen_t length = sizeof error;
  if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0) return errno;
  return error;
}

ProbeResult probe_address(const addrinfo& address, milliseconds timeout) {
  FileDescriptor fd(::socket(address.ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return from_errno(errno);
  if (::connect(fd.get(), address.ai_addr, address.ai_addrlen) == 0) return from_errno(0);
  if (errno != EINPROGRESS) return from_errno(errno);
  return from_errno(wait_for_connect(fd.get(), timeout));
}

// Which failure tells the user most: a definite answer beats a silence beats no route.
int rank(ProbeOutcome outcome) {
  switch (outcome) {
    case ProbeOutcome::connected:
      return 4;
    case ProbeOutcome::refused:
      return 3;
    case ProbeOutcome::timed_out:
      return 2;
    case ProbeOutcome::unreachable:
      return 1;
    case ProbeOutcome::unresolved:
      return 0;
  }
  return 0;
}

}  // namespace

ProbeResult probe_tcp(const std::string& host, std::uint16_t port, milliseconds timeout) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* raw = nullptr;
  const std::string service = std::to_string(port);
  const int status = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &raw);
  if (status != 0) return ProbeResult{ProbeOutcome::unresolved, ::gai_strerror(status)};
  const AddrInfoList list(raw);

  ProbeResult best{ProbeOutcome::unresolved, "no address"};
  for (const addrinfo* address = list.get(); address != nullptr; address = address->ai_next) {
    ProbeResult result = probe_address(*address, timeout);
    if (rank(result.outcome) > rank(best.outcome)) best = std::move(result);
    if (best.outcome == ProbeOutcome::connected) break;
  }
  return best;
}

const char* to_string(ProbeOutcome outcome) {
  switch (outcome) {
    case ProbeOutcome::connected:
      return "connected";
    case ProbeOutcome::refused:
      return "refused";
    case ProbeOutcome::timed_out:
      return "timed_out";
    case ProbeOutcome::unreachable:
      return "unreachable";
    case ProbeOutcome::unresolved:
      return "unresolved";
  }
  return "unknown";
}

}  // namespace gossip_rdzv::transport
