// Which process holds a TCP port, for "port already in use" messages. Reads /proc, so it
// only sees processes of this user (or all of them as root) in this network namespace.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace gossip_rdzv::transport {

struct PortHolder {
  int pid = 0;
  std::string command_line;  ///< argv joined by spaces, "" if unreadable
};

/// The process with a LISTEN socket on `port` (IPv4 or IPv6, any address), found through
/// /proc/net/tcp{,6} (socket inode) and /proc/[pid]/fd (which process holds that inode).
/// nullopt when no such socket is listed or its owner is not visible to us.
std::optional<PortHolder> find_port_holder(std::uint16_t port);

/// "by pid 1234 (python3 -m http.server 29400)", or "by another process (not visible from
/// here)" when there is no `holder`.
std::string describe(const std::optional<PortHolder>& holder);

/// describe(find_port_holder(port)).
std::string describe_port_holder(std::uint16_t port);

}  // namespace gossip_rdzv::transport
