#include "protocol/rank_assignment.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

namespace gossip_rdzv::protocol {
namespace {

Announcement member(const std::string& hostname, std::uint32_t nproc = 1, std::int32_t hint = -1) {
  static std::uint64_t next_id = 1000;
  Announcement a;
  a.hostname = hostname;
  a.host = "10.0.0." + std::to_string(next_id % 200);
  a.endpoint = a.host + ":29400";
  a.node_id = next_id++;
  a.generation = 3;
  a.nproc = nproc;
  a.rank_hint = hint;
  a.master_port = static_cast<std::uint16_t>(29500 + next_id % 100);
  return a;
}

Assignment assign_ok(const std::vector<Announcement>& members, const std::string& self) {
  auto result = assign_ranks(members, self, "job42", 7);
  if (auto* err = std::get_if<AssignmentError>(&result)) {
    ADD_FAILURE() << "unexpected error: " << err->message;
    return {};
  }
  return std::get<Assignment>(result);
}

AssignmentError assign_error(const std::vector<Announcement>& members) {
  auto result = assign_ranks(members, members.front().endpoint, "job42", 0);
  if (std::holds_alternative<Assignment>(result)) {
    ADD_FAILURE() << "expected an error";
    return {};
  }
  return std::get<AssignmentError>(result);
}

std::vector<std::string> hostnames(const Assignment& a) {
  std::vector<std::string> out;
  for (const auto& n : a.nodes) out.push_back(n.hostname);
  return out;
}

bool same(const Assignment& a, const Assignment& b) {
  if (a.nodes.size() != b.nodes.size()) return false;
  for (std::size_t i = 0; i < a.nodes.size(); ++i) {
    const NodeEntry& x = a.nodes[i];
    const NodeEntry& y = b.nodes[i];
    if (x.node_rank != y.node_rank || x.rank_offset != y.rank_offset || x.nproc != y.nproc ||
        x.endpoint != y.endpoint || x.node_id != y.node_id) {
      return false;
    }
  }
  return a.world_size == b.world_size && a.master_addr == b.master_addr &&
         a.master_port == b.master_port && a.my_node_rank == b.my_node_rank;
}

TEST(RankAssignment, NaturalOrderWithoutHints) {
  const std::vector<Announcement> m{member("node100"), member("node7"), member("node66"),
                                    member("node-b"), member("node-a")};
  const Assignment a = assign_ok(m, m[1].endpoint);
  EXPECT_EQ(hostnames(a),
            (std::vector<std::string>{"node-a", "node-b", "node7", "node66", "node100"}));
  EXPECT_EQ(a.my_node_rank, 2u);
  EXPECT_EQ(a.me().hostname, "node7");
  for (std::uint32_t r = 0; r < a.nnodes(); ++r) EXPECT_EQ(a.nodes[r].node_rank, r);
}

TEST(RankAssignment, FillsEveryField) {
  Announcement x = member("node1", 4);
  x.host = "192.168.1.5";
  x.endpoint = "192.168.1.5:29401";
  x.node_id = 0xFFFFFFFFFFFFFFF0ull;
  x.generation = 12;
  x.master_port = 31000;
  const Assignment a = assign_ok({x, member("node2", 2)}, x.endpoint);
  EXPECT_EQ(a.run_id, "job42");
  EXPECT_EQ(a.round, 7u);
  const NodeEntry& n = a.nodes[0];
  EXPECT_EQ(n.host, "192.168.1.5");
  EXPECT_EQ(n.endpoint, "192.168.1.5:29401");
  EXPECT_EQ(n.hostname, "node1");
  EXPECT_EQ(n.node_id, 0xFFFFFFFFFFFFFFF0ull);
  EXPECT_EQ(n.generation, 12u);
  EXPECT_EQ(n.nproc, 4u);
  EXPECT_EQ(a.master_addr, "192.168.1.5");
  EXPECT_EQ(a.master_port, 31000);
}

TEST(RankAssignment, TiesFallBackToHostThenEndpoint) {
  Announcement a = member("same");
  Announcement b = member("same");
  Announcement c = member("same");
  a.host = "10.0.0.10";
  a.endpoint = "10.0.0.10:29400";
  b.host = "10.0.0.9";
  b.endpoint = "10.0.0.9:29401";
  c.host = "10.0.0.9";
  c.endpoint = "10.0.0.9:29400";
  const Assignment r = assign_ok({a, b, c}, a.endpoint);
  ASSERT_EQ(r.nodes.size(), 3u);
  EXPECT_EQ(r.nodes[0].endpoint, "10.0.0.9:29400");
  EXPECT_EQ(r.nodes[1].endpoint, "10.0.0.9:29401");
  EXPECT_EQ(r.nodes[2].endpoint, "10.0.0.10:29400");
}

TEST(RankAssignment, PermutationInvariant) {
  std::vector<Announcement> m;
  for (int i = 0; i < 40; ++i) {
    const std::int32_t hint = (i % 9 == 0) ? i / 3 : -1;  // a few hints, no conflicts
    m.push_back(member("host" + std::to_string((i * 37) % 41), 1 + i % 4, hint));
  }
  m.push_back(member("host5"));  // duplicate hostname: host/endpoint decide
  const std::string self = m[17].endpoint;
  const Assignment reference = assign_ok(m, self);
  ASSERT_EQ(reference.nodes.size(), m.size());
  std::mt19937_64 rng(20240601);
  for (int trial = 0; trial < 100; ++trial) {
    std::shuffle(m.begin(), m.end(), rng);
    const Assignment again = assign_ok(m, self);
    ASSERT_TRUE(same(reference, again)) << "trial " << trial;
  }
}

TEST(RankAssignment, HintsHonouredAndGapsFilledInNaturalOrder) {
  const std::vector<Announcement> m{member("node9"), member("node3", 1, 0), member("node1"),
                                    member("node20"), member("node5", 1, 2)};
  const Assignment a = assign_ok(m, m[0].endpoint);
  EXPECT_EQ(hostnames(a), (std::vector<std::string>{"node3", "node1", "node5", "node9", "node20"}));
}

TEST(RankAssignment, LastRankHint) {
  const std::vector<Announcement> m{member("a"), member("b", 1, 2), member("c")};
  EXPECT_EQ(hostnames(assign_ok(m, m[0].endpoint)), (std::vector<std::string>{"a", "c", "b"}));
}

TEST(RankAssignment, ConflictNamesBothNodesAndTheFix) {
  const std::vector<Announcement> m{member("gpu-a", 1, 1), member("gpu-b"), member("gpu-c", 1, 1)};
  const AssignmentError e = assign_error(m);
  EXPECT_EQ(e.code, ErrorCode::rank_conflict);
  for (const auto& needle :
       {std::string("gpu-a"), m[0].endpoint, std::string("gpu-c"), m[2].endpoint,
        std::string("--node-rank 1"), std::string("give each node a distinct --node-rank")}) {
    EXPECT_NE(e.message.find(needle), std::string::npos) << needle << " in: " << e.message;
  }
  EXPECT_EQ(e.message.find("gpu-b"), std::string::npos) << e.message;
}

TEST(RankAssignment, ConflictMessageIsTheSameOnEveryNode) {
  std::vector<Announcement> m{member("x", 1, 0), member("y", 1, 0), member("z", 1, 0)};
  const std::string first = assign_error(m).message;
  std::reverse(m.begin(), m.end());
  EXPECT_EQ(assign_error(m).message, first);
}

TEST(RankAssignment, HintOutOfRange) {
  const std::vector<Announcement> m{member("n1"), member("n2", 1, 3), member("n3")};
  const AssignmentError e = assign_error(m);
  EXPECT_EQ(e.code, ErrorCode::rank_conflict);
  for (const auto& needle : {std::string("n2"), m[1].endpoint, std::string("--node-rank 3"),
                             std::string("only 3 nodes")}) {
    EXPECT_NE(e.message.find(needle), std::string::npos) << needle << " in: " << e.message;
  }
}

TEST(RankAssignment, MixedNprocOffsetsAndWorldSize) {
  const std::vector<Announcement> m{member("n3", 2), member("n1", 8), member("n2", 1),
                                    member("n4", 4)};
  const Assignment a = assign_ok(m, m[0].endpoint);
  ASSERT_EQ(a.nodes.size(), 4u);
  EXPECT_EQ(a.world_size, 15u);
  const std::vector<std::uint32_t> offsets{a.nodes[0].rank_offset, a.nodes[1].rank_offset,
                                           a.nodes[2].rank_offset, a.nodes[3].rank_offset};
  EXPECT_EQ(offsets, (std::vector<std::uint32_t>{0, 8, 9, 11}));
  EXPECT_EQ(a.me().hostname, "n3");
  EXPECT_EQ(a.me().rank_offset, 9u);
}

TEST(RankAssignment, MasterIsNodeRankZero) {
  Announcement hinted = member("zzz", 1, 0);
  hinted.host = "172.16.0.99";
  hinted.master_port = 40000;
  const std::vector<Announcement> m{member("aaa"), hinted, member("bbb")};
  const Assignment a = assign_ok(m, m[0].endpoint);
  EXPECT_EQ(a.master_addr, "172.16.0.99");
  EXPECT_EQ(a.master_port, 40000);
  EXPECT_EQ(a.nodes[0].hostname, "zzz");
}

TEST(RankAssignment, SingleNode) {
  const std::vector<Announcement> m{member("solo", 3)};
  const Assignment a = assign_ok(m, m[0].endpoint);
  EXPECT_EQ(a.world_size, 3u);
  EXPECT_EQ(a.my_node_rank, 0u);
  EXPECT_EQ(a.master_addr, m[0].host);
}

TEST(RankAssignment, SelfMissingIsInternal) {
  auto result = assign_ranks({member("a"), member("b")}, "10.9.9.9:1", "r", 0);
  ASSERT_TRUE(std::holds_alternative<AssignmentError>(result));
  const auto& e = std::get<AssignmentError>(result);
  EXPECT_EQ(e.code, ErrorCode::internal);
  EXPECT_NE(e.message.find("10.9.9.9:1"), std::string::npos) << e.message;
}

TEST(RankAssignment, EmptyViewAndDuplicatesAreErrorsNotCrashes) {
  auto empty = assign_ranks({}, "x:1", "r", 0);
  ASSERT_TRUE(std::holds_alternative<AssignmentError>(empty));
  EXPECT_EQ(std::get<AssignmentError>(empty).code, ErrorCode::internal);

  const Announcement a = member("a");
  auto dup = assign_ranks({a, a}, a.endpoint, "r", 0);
  ASSERT_TRUE(std::holds_alternative<AssignmentError>(dup));
  EXPECT_EQ(std::get<AssignmentError>(dup).code, ErrorCode::internal);
}

// Across rounds: the previous round's members (seniors) keep their order there and come
// first; newcomers follow in natural order; hints still win.
TEST(RankAssignment, SeniorsKeepTheirOrderAndNewcomersFollowThem) {
  const Announcement n7 = member("node7"), n66 = member("node66"), n100 = member("node100");
  const Announcement n2 = member("node2"), n1 = member("node1", 2, 1);
  // Round r had node100 before node7 (e.g. node100 held rank 0 then); node2 and node1 are
  // new, node1 with --node-rank 1.
  auto result =
      assign_ranks({n7, n66, n100, n2, n1}, n2.endpoint, "r", 3, {n100.endpoint, n7.endpoint});
  ASSERT_TRUE(std::holds_alternative<Assignment>(result))
      << std::get<AssignmentError>(result).message;
  const Assignment& a = std::get<Assignment>(result);
  EXPECT_EQ(hostnames(a),
            (std::vector<std::string>{"node100", "node1", "node7", "node2", "node66"}));
  EXPECT_EQ(a.my_node_rank, 3u);
  EXPECT_EQ(a.nodes[2].rank_offset, 3u);  // node100 (1) + node1 (2)
  EXPECT_EQ(a.master_addr, n100.host);
  EXPECT_EQ(a.round, 3u);
  // A hinted senior keeps its hint; the other seniors fill the free ranks in their order.
  const Announcement h = member("hinted", 1, 0);
  auto hinted =
      assign_ranks({n7, n66, h}, n7.endpoint, "r", 1, {n66.endpoint, h.endpoint, n7.endpoint});
  ASSERT_TRUE(std::holds_alternative<Assignment>(hinted));
  EXPECT_EQ(hostnames(std::get<Assignment>(hinted)),
            (std::vector<std::string>{"hinted", "node66", "node7"}));
}

TEST(RankAssignment, SeniorsThatAreNoDistinctMembersAreAnInternalError) {
  const Announcement a = member("a"), b = member("b");
  for (const std::vector<std::string>& seniors :
       {std::vector<std::string>{"10.9.9.9:1"}, std::vector<std::string>{a.endpoint, a.endpoint}}) {
    auto result = assign_ranks({a, b}, a.endpoint, "r", 1, seniors);
    ASSERT_TRUE(std::holds_alternative<AssignmentError>(result));
    EXPECT_EQ(std::get<AssignmentError>(result).code, ErrorCode::internal);
  }
}

TEST(RankAssignment, ZeroNprocIsRejected) {
  const std::vector<Announcement> m{member("ok"), member("broken", 0)};
  const AssignmentError e = assign_error(m);
  EXPECT_EQ(e.code, ErrorCode::usage);
  EXPECT_NE(e.message.find("broken"), std::string::npos) << e.message;
}

TEST(RankAssignment, WorldSizeOverflowIsRejected) {
  const std::vector<Announcement> m{member("a", 0x7FFFFFFF), member("b", 0x7FFFFFFF),
                                    member("c", 0x7FFFFFFF)};
  EXPECT_EQ(assign_error(m).code, ErrorCode::usage);
}

TEST(RankAssignment, NegativeHintsOtherThanMinusOneMeanNone) {
  const std::vector<Announcement> m{member("b", 1, -7), member("a")};
  EXPECT_EQ(hostnames(assign_ok(m, m[0].endpoint)), (std::vector<std::string>{"a", "b"}));
}

}  // namespace
}  // namespace gossip_rdzv::protocol
