// Config fields as people type them, shared by the two front ends that take text: the
// gossip-rdzv command line and gossip_rdzv_config_set() in the C API. These only parse;
// gossip_rdzv::validate() (config.hpp) judges the values. Defined in config.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "protocol/endpoint.hpp"

namespace gossip_rdzv::protocol {

/// The documented default gossip port (Config::listen_port): a seed given without ":PORT"
/// uses it.
inline constexpr std::uint16_t kDefaultPort = 29400;

/// A seed: "host", "host:port" or "[v6]:port", the port defaulting to kDefaultPort.
EndpointRules seed_rules();

/// A listen address: ":PORT" binds every address (0.0.0.0), port 0 lets the OS pick.
EndpointRules listen_rules();

struct NodeCounts {
  std::uint32_t min_nodes = 0;
  std::uint32_t max_nodes = 0;
};

/// --nnodes / "nnodes": "N" or "MIN:MAX" as whole numbers; nullopt when it is neither.
/// The counts' ranges are validate()'s to check.
std::optional<NodeCounts> parse_nnodes(std::string_view text);

}  // namespace gossip_rdzv::protocol
