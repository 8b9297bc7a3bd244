// What the core's tests share: checks over a MiniNet's outcomes, and for tests that drive one
// core by hand, what MiniNet's node i announces and a message from it.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "mini_net.hpp"

namespace gossip_rdzv::protocol::testing {

inline bool all_committed(MiniNet& net, const std::vector<int>& ids) {
  for (int i : ids) {
    if (!net.committed(i)) return false;
  }
  return true;
}

inline bool all_joined(MiniNet& net, const std::vector<int>& ids) {
  for (int i : ids) {
    if (!net.node(i)->joined()) return false;
  }
  return true;
}

inline std::vector<int> range(int from, int to) {
  std::vector<int> ids;
  for (int i = from; i <= to; ++i) ids.push_back(i);
  return ids;
}

// Every node of `ids` committed the same assignment, ranks form a permutation.
inline void expect_consistent(MiniNet& net, const std::vector<int>& ids) {
  auto first = net.committed(ids.front());
  ASSERT_TRUE(first);
  std::set<std::uint32_t> node_ranks;
  for (int i : ids) {
    auto a = net.committed(i);
    ASSERT_TRUE(a) << "node " << i << " did not commit";
    EXPECT_EQ(a->world_size, first->world_size);
    EXPECT_EQ(a->master_addr, first->master_addr);
    EXPECT_EQ(a->master_port, first->master_port);
    ASSERT_EQ(a->nodes.size(), first->nodes.size());
    for (std::size_t n = 0; n < a->nodes.size(); ++n) {
      EXPECT_EQ(a->nodes[n].endpoint, first->nodes[n].endpoint);
      EXPECT_EQ(a->nodes[n].rank_offset, first->nodes[n].rank_offset);
    }
    EXPECT_EQ(a->me().endpoint, MiniNet::endpoint(i));
    node_ranks.insert(a->my_node_rank);
  }
  EXPECT_EQ(node_ranks.size(), ids.size());
}

/// No two nodes of `ids` that committed hold different assignments (members with their
/// generations, ranks, master address and port, world size).
inline void expect_one_outcome(MiniNet& net, const std::vector<int>& ids) {
  std::optional<Assignment> first;
  for (int i : ids) {
    auto a = net.committed(i);
    if (!a) continue;
    if (!first) {
      first = a;
      continue;
    }
    EXPECT_EQ(a->world_size, first->world_size) << "node " << i;
    EXPECT_EQ(a->master_addr, first->master_addr) << "node " << i;
    EXPECT_EQ(a->master_port, first->master_port) << "node " << i;
    ASSERT_EQ(a->nodes.size(), first->nodes.size()) << "node " << i;
    for (std::size_t n = 0; n < a->nodes.size(); ++n) {
      EXPECT_EQ(a->nodes[n].endpoint, first->nodes[n].endpoint);
      EXPECT_EQ(a->nodes[n].generation, first->nodes[n].generation);
      EXPECT_EQ(a->nodes[n].rank_offset, first->nodes[n].rank_offset);
    }
  }
}

// For tests that drive one core by hand: what MiniNet's node i announces, with --nnodes
// `nodes`, and a message from node i.
inline Announcement announcement(int i, std::uint32_t nodes) {
  Announcement a;
  a.endpoint = MiniNet::endpoint(i);
  a.node_id = 1000 + static_cast<std::uint64_t>(i);
  a.generation = 1;
  a.host = "10.0.0." + std::to_string(i);
  a.hostname = "node" + std::to_string(i);
  a.min_nodes = a.max_nodes = nodes;
  return a;
}
inline Envelope envelope_from(int i, Body body) {
  Envelope env;
  env.run_id = "run";
  env.sender = MiniNet::endpoint(i);
  env.sender_generation = 1;
  env.body = std::move(body);
  return env;
}

// For a core driven by hand: tick it at each wakeup (at least 1 us apart), or `late` after
// it (a node waiting for a CPU), until `end`, calling `drain` after every tick to take what
// it sent and reported.
template <class Drain>
void run_core_until(Core& core, Time& now, Time end, Drain drain, Time late = Time{0}) {
  while (now < end) {
    now = std::max(now + Time{1}, core.next_wakeup() + late);
    core.on_tick(now);
    drain();
  }
}

}  // namespace gossip_rdzv::protocol::testing
