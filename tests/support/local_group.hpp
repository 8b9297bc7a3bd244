// Real nodes on 127.0.0.1 that form one group through the public API, for the tests of what
// runs on top of a formed group (the store, its gloo adapter).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gossip_rdzv/node.hpp"
#include "support/loopback_socket.hpp"

namespace gossip_rdzv::testing_support {

/// Starts `count` nodes of run `run_id` with local timing (the first is every node's seed,
/// host names `<hostname_prefix><i>`) and returns once each has its assignment.
inline std::vector<std::unique_ptr<Node>> form_local_group(const std::string& run_id,
                                                           std::uint32_t count,
                                                           const std::string& hostname_prefix) {
  std::vector<std::unique_ptr<Node>> nodes;
  const std::uint16_t seed_port = free_loopback_port();
  for (std::uint32_t i = 0; i < count; ++i) {
    Config config;
    config.run_id = run_id;
    config.seeds = {"127.0.0.1:" + std::to_string(seed_port)};
    config.listen_host = "127.0.0.1";
    config.listen_port = i == 0 ? seed_port : 0;
    config.min_nodes = config.max_nodes = count;
    config.hostname = hostname_prefix + std::to_string(i);
    config.join_timeout = std::chrono::seconds(20);
    config.timing = Timing::local();
    nodes.push_back(std::make_unique<Node>(config));
    nodes.back()->start();
  }
  for (auto& node : nodes) node->wait();
  return nodes;
}

}  // namespace gossip_rdzv::testing_support
