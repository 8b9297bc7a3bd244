// Small helpers over the BSD socket address API, shared by the runtime (advertise address,
// free ports) and `gossip-rdzv doctor` (which checks the same things before a job starts).
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <optional>
#include <string>

namespace gossip_rdzv::transport {

struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;
  int family() const { return storage.ss_family; }
  const sockaddr* get() const { return reinterpret_cast<const sockaddr*>(&storage); }
};

/// A numeric IPv4/IPv6 address and port as a socket address; nullopt if `ip` is not numeric.
std::optional<SocketAddress> numeric_address(const std::string& ip, std::uint16_t port);

/// The numeric text of an address ("10.0.0.1", "fd00::1"); empty on failure.
std::string numeric_host(const sockaddr* address, socklen_t length);

/// The local address the kernel would use to reach `ip`: a UDP connect sends nothing but
/// picks the route and source address. nullopt when there is no route.
std::optional<std::string> route_source(const std::string& ip);

/// Whether `ip` is an address of this machine: only those can be bound. Unlike the
/// interface table this also knows 127.0.1.1 (Debian's /etc/hosts entry for the host name).
bool is_local_ip(const std::string& ip);

bool is_loopback(const std::string& ip);

/// A host text with a colon is an IPv6 literal (host names and IPv4 have none).
inline bool is_ipv6(const std::string& host) {
  return host.find(':') != std::string::npos;
}

}  // namespace gossip_rdzv::transport
