// Real nodes on 127.0.0.1 that form one group through the public API, for the tests of what
// runs on top of a formed group (the store, its gloo adapter).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gossip_rdzv/node.hpp"
#include "gossip_rdzv/store.hpp"
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

/// The client requests the agent at `member` has counted, read through `observer` (a client
/// of another member; member_stats() itself is no client request of `member`).
inline std::uint64_t client_requests(Store& observer, const std::string& member) {
  for (const auto& stats : observer.member_stats()) {
    if (stats.member == member) return stats.client_requests;
  }
  return 0;
}

/// Waits (up to `timeout`) until the agent at `member` has counted more than `before` client
/// requests: the way to know that a blocking request has reached its agent and waits there.
inline bool await_client_request(Store& observer, const std::string& member, std::uint64_t before,
                                 std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (client_requests(observer, member) > before) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // polling with a deadline
  }
  return false;
}

}  // namespace gossip_rdzv::testing_support
