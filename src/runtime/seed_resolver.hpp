// Seeds as the user gave them, made usable: parsed (default port 29400), resolved preferring
// the address family we listen on, this node itself dropped from the list, the address to
// advertise chosen, and a silent seed explained by a TCP probe. Used by gossip_rdzv::Node.
// Not pure: resolves names, reads routes and the interface table, and opens TCP connections.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <spdlog/logger.h>

#include "gossip_rdzv/config.hpp"
#include "protocol/endpoint.hpp"

namespace gossip_rdzv::runtime {

struct SeedAddress {
  std::string text;          ///< as the user gave it ("node0:29400")
  protocol::Endpoint given;  ///< parsed, host as given
  std::string ip;            ///< the address it resolves to
  std::string endpoint;      ///< numeric "ip:port", as handed to the core
};

/// "", "0.0.0.0", "::", "[::]" or "*": listen on every address.
bool is_wildcard(const std::string& host);

/// "host:port", bracketing an IPv6 host.
std::string endpoint_text(const std::string& host, std::uint16_t port);

/// A --seed value: "host", "host:port" or "[v6]:port"; the port defaults to 29400. nullopt
/// with `*error` set when it is malformed.
std::optional<protocol::Endpoint> parse_seed(const std::string& text, std::string* error);

/// The numeric address `host` resolves to, preferring the family we listen on (a name such
/// as localhost can resolve to ::1 first while we only listen on IPv4). nullopt with
/// `*error` (getaddrinfo's message) when it does not resolve.
std::optional<std::string> resolve_host(const std::string& host, bool prefer_ipv6,
                                        std::string* error);

/// Every seed of `config` that resolves (a warning for each that does not). Throws
/// seed_unresolved, naming the first failure, when none does.
std::vector<SeedAddress> resolve_seeds(const Config& config, spdlog::logger& log);

/// The address peers should dial: --advertise, else the one we listen on (an interface
/// name's address), else the one the kernel uses toward the first seed (never loopback
/// because a seed name resolves to loopback here).
std::string choose_advertise_host(const Config& config, const std::vector<SeedAddress>& seeds,
                                  spdlog::logger& log);

/// The seeds minus this node itself: the same command runs on every node, seed included.
std::vector<SeedAddress> without_self(std::vector<SeedAddress> seeds, std::uint16_t bound_port,
                                      const std::string& advertise_host);

/// The local address the kernel would use toward `target_ip` (loopback when none).
std::string self_advertise_for(const std::string& target_ip);

/// Why `host`:`port` does not answer, from one TCP connection attempt (4 s at most).
/// `greeted`: a seed process did listen there (it greeted a connection of ours), so a seed
/// that is gone now stopped, and one still there was too busy or stuck to answer.
std::string explain_silent_seed(const std::string& host, std::uint16_t port, bool greeted = false);

/// Why each seed stays silent ("nothing listens on ...", "a firewall may drop ...", "no route
/// ..."), probed in parallel: the report takes one probe timeout (4 s), not one per seed.
/// `greeted`: the seeds' endpoints (SeedAddress::endpoint) that greeted a connection of ours.
std::string explain_silent_seeds(const std::vector<SeedAddress>& seeds,
                                 const std::vector<std::string>& greeted = {});

}  // namespace gossip_rdzv::runtime
