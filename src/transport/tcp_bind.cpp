#include "transport/tcp_bind.hpp"

#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>

#include "transport/file_descriptor.hpp"
#include "transport/socket_address.hpp"

namespace gossip_rdzv::transport {

std::variant<std::uint16_t, int> try_bind_tcp(const std::string& ip, std::uint16_t port) {
  auto address = numeric_address(ip, port);
  if (!address) return EADDRNOTAVAIL;
  FileDescriptor fd(::socket(address->family(), SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return errno;
  const int reuse = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &reuse, sizeof reuse);
  if (::bind(fd.get(), address->get(), address->length) != 0) return errno;
  socklen_t length = sizeof address->storage;
  ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&address->storage), &length);
  const auto* bound = address->get();
  return bound->sa_family == AF_INET
             ? ntohs(reinterpret_cast<const sockaddr_in*>(bound)->sin_port)
             : ntohs(reinterpret_cast<const sockaddr_in6*>(bound)->sin6_port);
}

}  // namespace gossip_rdzv::transport
