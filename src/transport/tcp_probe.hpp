// One TCP connection attempt, to tell a user *why* a seed is silent: nothing listening,
// packets dropped (firewall), no route, or a name that does not resolve.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace gossip_rdzv::transport {

enum class ProbeOutcome {
  connected,    ///< something accepts TCP connections on host:port
  refused,      ///< the host answered with RST: nothing listens on that port
  timed_out,    ///< no answer within the timeout: packets dropped (firewall?) or host down
  unreachable,  ///< EHOSTUNREACH / ENETUNREACH: no route to the host
  unresolved,   ///< getaddrinfo failed
};

struct ProbeResult {
  ProbeOutcome outcome = ProbeOutcome::unresolved;
  std::string detail;  ///< strerror / gai_strerror text of the failure, "" when connected
};

/// Tries every address `host` resolves to (numeric or name, IPv4 or IPv6) until one
/// connects; otherwise reports the most telling failure. Never throws; blocks at most about
/// `timeout` per resolved address (plus name resolution).
ProbeResult probe_tcp(const std::string& host, std::uint16_t port,
                      std::chrono::milliseconds timeout);

/// "connected", "refused", ... for logs and tests.
const char* to_string(ProbeOutcome outcome);

}  // namespace gossip_rdzv::transport
