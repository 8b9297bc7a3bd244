// Hand-made assignments for the tests of what is written from one (env files, membership JSON).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gossip_rdzv/assignment.hpp"

namespace gossip_rdzv::testing_support {

/// Node `rank` on `host`: endpoint host:29400, host name node<rank>, node id 42 + rank.
inline NodeEntry sample_node(std::uint32_t rank, std::uint32_t offset, std::uint32_t nproc,
                             const std::string& host) {
  NodeEntry n;
  n.node_rank = rank;
  n.rank_offset = offset;
  n.nproc = nproc;
  n.host = host;
  n.endpoint = host + ":29400";
  n.hostname = "node" + std::to_string(rank);
  n.node_id = 42 + rank;
  return n;
}

/// Round `round` of run "job42" over `nodes`, master 10.0.0.1:29500, seen by node rank 1.
inline Assignment sample_assignment(std::uint32_t round, std::vector<NodeEntry> nodes) {
  Assignment a;
  a.run_id = "job42";
  a.round = round;
  for (const auto& n : nodes) a.world_size += n.nproc;
  a.master_addr = "10.0.0.1";
  a.master_port = 29500;
  a.nodes = std::move(nodes);
  a.my_node_rank = 1;
  return a;
}

}  // namespace gossip_rdzv::testing_support
