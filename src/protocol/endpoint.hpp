// Network endpoints as users type them ("node0:29400", "10.0.0.5:29400", "[fd00::1]:29400")
// and as ZeroMQ wants them ("tcp://node0:29400", "tcp://[fd00::1]:29400").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gossip_rdzv::protocol {

struct Endpoint {
  std::string host;        ///< host name or address, without brackets
  std::uint16_t port = 0;  ///< 0 only for listen addresses: the OS picks one
  bool ipv6 = false;       ///< `host` is an IPv6 address (printed in brackets)

  bool operator==(const Endpoint&) const = default;
};

struct EndpointRules {
  /// Non-empty: "HOST" may be omitted (":29400") and this host is used. For --listen.
  std::string_view default_host;
  /// Set: ":PORT" may be omitted ("node0") and this port is used. For --seed.
  std::optional<std::uint16_t> default_port;
  /// Port 0 means "any free port": only meaningful for addresses we bind.
  bool allow_port_zero = false;
};

/// Parses "HOST:PORT", "[V6]:PORT", and, when `rules` allow, ":PORT" or "HOST". On failure
/// returns nullopt and, if `error` is not null, a sentence naming what is wrong, e.g.
/// "port 99999 is out of range 1-65535" or "IPv6 address must be in brackets: [fd00::1]:29400".
/// Host names are checked for syntax only; nothing is resolved.
std::optional<Endpoint> parse_endpoint(std::string_view text, std::string* error,
                                       const EndpointRules& rules = {});

/// "host:port", or "[v6]:port".
std::string to_string(const Endpoint& endpoint);

/// "tcp://host:port" or "tcp://[v6]:port"; port 0 becomes ZeroMQ's "*" (any free port).
std::string zmq_address(const Endpoint& endpoint);

}  // namespace gossip_rdzv::protocol
