// Whether a TCP port can be taken here: one bind, the socket closed again at once. Used to
// pick MASTER_PORT (the runtime) and to check --listen and --master-port (`gossip-rdzv
// doctor`), so both judge a port by the same rule.
#pragma once

#include <cstdint>
#include <string>
#include <variant>

namespace gossip_rdzv::transport {

/// Binds a TCP socket to `ip`:`port` (port 0: the OS picks) with SO_REUSEADDR, as ZeroMQ and
/// torch's TCPStore do, so a TIME_WAIT leftover is no conflict while a listener is. Returns
/// the bound port, or the errno of the failure (EADDRNOTAVAIL when `ip` is not numeric).
std::variant<std::uint16_t, int> try_bind_tcp(const std::string& ip, std::uint16_t port);

}  // namespace gossip_rdzv::transport
