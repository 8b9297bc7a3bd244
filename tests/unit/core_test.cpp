// The protocol core as a whole, driven in memory (no sockets, no sleeps, virtual time only):
// rounds end to end, rank assignment, MIN:MAX and the last call, restarts, partitions and the
// quorum base, refusals and queries the router answers. Each room's own behaviour is tested in
// the test file named after it (bootstrap_test.cpp, failure_detector_test.cpp, ...).
#include "protocol/core.hpp"

#include <gtest/gtest.h>

#include <optional>

#include "core_helpers.hpp"

namespace gossip_rdzv::protocol {
namespace {

using namespace testing;
using namespace std::chrono_literals;

TEST(Core, SingleNodeThatIsItsOwnSeedCommitsAlone) {
  MiniNet net(1, 1);
  net.add(1);
  ASSERT_TRUE(net.run([&] { return all_committed(net, {1}); }));
  EXPECT_EQ(net.committed(1)->world_size, 1u);
  EXPECT_NE(net.find_event<JoinedCluster>(1), nullptr);
}

TEST(Core, FourNodesJoinThroughOneSeedAndAgree) {
  MiniNet net(4, 4);
  for (int i = 1; i <= 4; ++i) net.add(i);
  ASSERT_TRUE(net.run([&] { return all_committed(net, range(1, 4)); }));
  expect_consistent(net, range(1, 4));
  // Healthy loopback-like network: a handful of round trips, far below a gossip period.
  EXPECT_LT(net.now(), std::chrono::milliseconds(100));
}

TEST(Core, AgreesUnderThirtyPercentLoss) {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    MiniNet net(6, 6, seed);
    net.loss = 0.3;
    for (int i = 1; i <= 6; ++i) net.add(i);
    ASSERT_TRUE(net.run([&] { return all_committed(net, range(1, 6)); }, std::chrono::seconds(120)))
        << "seed " << seed;
    expect_consistent(net, range(1, 6));
  }
}

TEST(Core, MixedNprocGivesOffsetsAndWorldSize) {
  MiniNet net(3, 3);
  net.add(1, {.nproc = 2});
  net.add(2, {.nproc = 3});
  net.add(3, {.nproc = 1});
  ASSERT_TRUE(net.run([&] { return all_committed(net, range(1, 3)); }));
  auto a = *net.committed(2);
  EXPECT_EQ(a.world_size, 6u);
  std::uint32_t offset = 0;
  for (const auto& node : a.nodes) {
    EXPECT_EQ(node.rank_offset, offset);
    offset += node.nproc;
  }
}

TEST(Core, RankHintsAreHonoured) {
  MiniNet net(3, 3);
  net.add(1, {.rank_hint = 2});
  net.add(2, {.rank_hint = 0});
  net.add(3);
  ASSERT_TRUE(net.run([&] { return all_committed(net, range(1, 3)); }));
  EXPECT_EQ(net.committed(1)->my_node_rank, 2u);
  EXPECT_EQ(net.committed(2)->my_node_rank, 0u);
  EXPECT_EQ(net.committed(3)->my_node_rank, 1u);
  EXPECT_EQ(net.committed(3)->master_addr, "10.0.0.2");
}

TEST(Core, ConflictingRankHintsFailOnEveryNodeNamingBoth) {
  MiniNet net(3, 3);
  net.add(1, {.rank_hint = 1});
  net.add(2, {.rank_hint = 1});
  net.add(3);
  ASSERT_TRUE(net.run([&] {
    for (int i = 1; i <= 3; ++i)
      if (!net.find_event<Fatal>(i)) return false;
    return true;
  }));
  for (int i = 1; i <= 3; ++i) {
    const Fatal* fatal = net.find_event<Fatal>(i);
    EXPECT_EQ(fatal->code, ErrorCode::rank_conflict);
    EXPECT_NE(fatal->message.find("node1"), std::string::npos) << fatal->message;
    EXPECT_NE(fatal->message.find("node2"), std::string::npos) << fatal->message;
  }
}

TEST(Core, MinMaxWaitsForTheLastCallThenClosesWithEveryoneThere) {
  MiniNet net(2, 4);
  net.last_call = std::chrono::milliseconds(1000);
  net.add(1);
  net.add(2);
  net.add(3);
  ASSERT_TRUE(net.run([&] { return all_committed(net, range(1, 3)); }));
  EXPECT_GE(net.now(), std::chrono::milliseconds(1000));  // the last call was honoured
  expect_consistent(net, range(1, 3));
  EXPECT_EQ(net.committed(1)->nnodes(), 3u);
}

TEST(Core, MinMaxClosesAtOnceWhenMaxArrive) {
  MiniNet net(2, 3);
  net.last_call = std::chrono::seconds(30);
  for (int i = 1; i <= 3; ++i) net.add(i);
  ASSERT_TRUE(net.run([&] { return all_committed(net, range(1, 3)); }));
  EXPECT_LT(net.now(), std::chrono::seconds(1));
}

TEST(Core, JoinerAtTheEndOfTheLastCallIsAdmittedOrToldConsistently) {
  for (int delay_ms = 990; delay_ms <= 1030; delay_ms += 5) {
    MiniNet net(2, 4);
    net.last_call = std::chrono::milliseconds(1000);
    net.add(1);
    net.add(2);
    net.run([] { return false; }, std::chrono::milliseconds(delay_ms));
    net.add(3);
    ASSERT_TRUE(net.run([&] {
      return all_committed(net, {1, 2}) && (net.committed(3) || net.find_event<NotAdmitted>(3));
    }));
    if (net.committed(3)) {
      expect_consistent(net, range(1, 3));
    } else {
      expect_consistent(net, {1, 2});
      EXPECT_EQ(net.committed(1)->nnodes(), 2u) << "delay " << delay_ms;
    }
  }
}

TEST(Core, MoreNodesThanMaxCommitExactlyOneViewAndTheExtraIsNotAdmitted) {
  MiniNet net(4, 4);
  for (int i = 1; i <= 5; ++i) net.add(i);
  int admitted_count = 0, refused_count = 0;
  ASSERT_TRUE(net.run([&] {
    admitted_count = refused_count = 0;
    for (int i = 1; i <= 5; ++i) {
      if (net.committed(i)) ++admitted_count;
      if (net.find_event<NotAdmitted>(i)) ++refused_count;
    }
    return admitted_count + refused_count == 5;
  }));
  EXPECT_EQ(admitted_count, 4);
  EXPECT_EQ(refused_count, 1);
  std::vector<int> admitted;
  for (int i = 1; i <= 5; ++i)
    if (net.committed(i)) admitted.push_back(i);
  expect_consistent(net, admitted);
}

TEST(Core, NodeRestartingMidRoundIsAgreedWithItsNewProcess) {
  MiniNet net(3, 3);
  net.add(1);
  net.add(2);
  net.run([] { return false; }, std::chrono::milliseconds(2));
  net.add(3);
  // Crash node 3 as soon as it announced itself, then bring it back (same endpoint).
  net.run([&] { return net.node(1)->snapshot().members.size() == 3; });
  net.crash(3);
  net.events(3).clear();
  net.add(3, {.generation = 2});
  ASSERT_TRUE(net.run([&] { return all_committed(net, range(1, 3)); }));
  expect_consistent(net, range(1, 3));
  EXPECT_EQ(net.committed(1)->nodes[net.committed(3)->my_node_rank].generation, 2u);
}

// Node 3 is cut off from the others while the round is open (the last call keeps it open),
// first for less than the suspicion timeout, then for longer. Whatever the outcome, nobody
// may commit a view another node does not commit, and every node must end committed or
// not admitted.
void run_partition(std::chrono::milliseconds cut_for, std::uint64_t seed) {
  MiniNet net(2, 4, seed);
  net.last_call = std::chrono::milliseconds(1500);
  for (int i = 1; i <= 3; ++i) net.add(i);
  ASSERT_TRUE(net.run([&] {
    for (int i = 1; i <= 3; ++i)
      if (net.node(i)->snapshot().members.size() != 3) return false;
    return true;
  }));
  net.cut(1, 3);
  net.cut(2, 3);
  net.run([] { return false; }, cut_for);
  net.heal();
  ASSERT_TRUE(net.run([&] {
    for (int i = 1; i <= 3; ++i)
      if (!net.committed(i) && !net.find_event<NotAdmitted>(i)) return false;
    return true;
  }));
  std::vector<int> admitted;
  for (int i = 1; i <= 3; ++i)
    if (net.committed(i)) admitted.push_back(i);
  ASSERT_GE(admitted.size(), 2u);
  expect_consistent(net, admitted);
}

TEST(Core, WronglySuspectedMemberComesBackAndAgreementHolds) {
  // Local timing: probe 200 ms, suspicion at least 1 s.
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    run_partition(std::chrono::milliseconds(500), seed);   // shorter than the suspicion timeout
    run_partition(std::chrono::milliseconds(3000), seed);  // declared dead, then comes back
  }
}

TEST(Core, OneOfThreeDedicatedSeedsKilledAfterBootstrapDoesNotBlockTheOthers) {
  MiniNet net(4, 4);
  const std::vector<std::string> seeds{MiniNet::endpoint(97), MiniNet::endpoint(98),
                                       MiniNet::endpoint(99)};
  for (int s = 97; s <= 99; ++s) net.add(s, {.seed_only = true, .seeds = seeds});
  for (int i = 1; i <= 4; ++i) net.add(i, {.seeds = seeds});
  net.run([&] { return all_joined(net, range(1, 4)); });
  net.crash(99);
  // The two seeds left are a majority of the three: they witness the view.
  ASSERT_TRUE(net.run([&] { return all_committed(net, range(1, 4)); }));
  expect_consistent(net, range(1, 4));
}

TEST(Core, TheOnlySeedKilledBeforeTheCommitStopsTheRoundInsteadOfRiskingTwoOutcomes) {
  // The quorum base of round 0 is the seed list: with one seed, no view can commit without
  // it, since nobody can tell its death from a partition behind which it commits another
  // view. The nodes wait (the runtime ends at --join-timeout); three seeds survive one death.
  MiniNet net(4, 4);
  net.seed = MiniNet::endpoint(9);
  net.add(9, {.seed_only = true});
  for (int i = 1; i <= 4; ++i) net.add(i);
  net.run([&] { return all_joined(net, range(1, 4)); });
  net.crash(9);
  EXPECT_FALSE(net.run([&] { return net.committed(1).has_value(); }, 60s));
  for (int i = 1; i <= 4; ++i) EXPECT_FALSE(net.committed(i)) << "node " << i;
}

TEST(Core, MemberSeedKilledAfterTheCommitLeavesTheOutcomeStanding) {
  MiniNet net(3, 3);
  for (int i = 1; i <= 3; ++i) net.add(i);
  ASSERT_TRUE(net.run([&] { return all_committed(net, range(1, 3)); }));
  net.crash(1);
  net.run([] { return false; }, 10s);
  expect_consistent(net, range(2, 3));
}

TEST(Core, PartitionDuringTheLastCallCommitsOnlyOnTheSeedsSide) {
  // --nnodes 2:8, four nodes, {1,2} | {3,4} once all joined and before the last call ends:
  // both sides have MIN. Only the side holding a majority of the seed list (node 1) may
  // commit; the other side waits, and learns after the heal that it was not admitted.
  MiniNet net(2, 8);
  net.last_call = 3s;
  for (int i = 1; i <= 4; ++i) net.add(i);
  ASSERT_TRUE(net.run([&] { return all_joined(net, range(1, 4)); }));
  for (int a : {1, 2})
    for (int b : {3, 4}) net.cut(a, b);
  ASSERT_TRUE(net.run([&] { return all_committed(net, {1, 2}); }, 60s));
  net.run([] { return false; }, 20s);  // long past the last call and the suspicion timeout
  EXPECT_FALSE(net.committed(3));
  EXPECT_FALSE(net.committed(4));
  EXPECT_EQ(net.committed(1)->world_size, 2u);
  net.heal();
  ASSERT_TRUE(net.run([&] {
    return net.find_event<NotAdmitted>(3) != nullptr && net.find_event<NotAdmitted>(4) != nullptr;
  }));
  expect_one_outcome(net, range(1, 4));
}

TEST(Core, MoreProcessesThanMaxSplitInTwoGroupsCommitOnlyOnTheSeedsSide) {
  // --nnodes 3:4 and six processes: a partition 3 | 3 after joining leaves two groups of
  // MIN. Without a quorum base both would commit; only the seed's side may.
  MiniNet net(3, 4);
  net.last_call = 3s;
  for (int i = 1; i <= 6; ++i) net.add(i);
  net.run([&] { return all_joined(net, range(1, 6)); });
  for (int a : {1, 2, 3})
    for (int b : {4, 5, 6}) net.cut(a, b);
  net.run([] { return false; }, 40s);
  expect_one_outcome(net, range(1, 6));
  net.heal();
  net.run([] { return false; }, 20s);
  expect_one_outcome(net, range(1, 6));
}

TEST(Core, PeerOfAnotherRunIsRefusedAndToldWhy) {
  MiniNet net(2, 2);
  net.add(1);
  net.add(2, {.run_id = "other"});
  ASSERT_TRUE(net.run([&] { return net.find_event<PeerRefused>(2) != nullptr; }));
  const PeerRefused* told = net.find_event<PeerRefused>(2);
  EXPECT_FALSE(told->by_us);
  EXPECT_EQ(told->reason, RefuseReason::run_id_mismatch);
  EXPECT_NE(told->detail.find("'run'"), std::string::npos) << told->detail;
  const PeerRefused* refused = net.find_event<PeerRefused>(1);
  ASSERT_NE(refused, nullptr);
  EXPECT_TRUE(refused->by_us);
  EXPECT_FALSE(net.committed(1));
}

TEST(Core, PeerOfAnotherVersionIsRefused) {
  MiniNet net(2, 2);
  Core& core = net.add(1);
  core.on_version_mismatch(net.now(), "10.0.0.7:29400", 99);
  auto out = core.poll_send();
  ASSERT_TRUE(out);
  EXPECT_EQ(out->to, "10.0.0.7:29400");
  auto* refuse = std::get_if<Refuse>(&out->msg.body);
  ASSERT_NE(refuse, nullptr);
  EXPECT_EQ(refuse->reason, RefuseReason::version_mismatch);
  EXPECT_NE(refuse->detail.find("99"), std::string::npos);
}

// `gossip-rdzv members` shows how long ago the asked node heard from each member itself.
TEST(Core, QueryReplySaysHowLongAgoEachMemberWasHeard) {
  MiniNet net(3, 3);  // two of three: they know each other and keep probing, nobody commits
  net.add(1);
  net.add(2);
  ASSERT_TRUE(net.run([&] { return net.node(1)->snapshot().members.size() == 2; }));
  net.run([] { return false; }, std::chrono::milliseconds(500));
  const Time asked_at = net.now() + std::chrono::milliseconds(1);
  Envelope query;
  query.run_id = "run";
  query.sender = "client:1";
  query.body = Query{};
  Core& node = *net.node(1);
  node.on_message(asked_at, query);
  std::optional<QueryReply> reply;
  while (auto out = node.poll_send()) {
    if (const auto* r = std::get_if<QueryReply>(&out->msg.body)) reply = *r;
  }
  ASSERT_TRUE(reply.has_value());
  ASSERT_EQ(reply->members.size(), 2u);
  ASSERT_EQ(reply->last_heard_ms.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    const std::string& who = reply->members[i].ann.endpoint;
    if (who == MiniNet::endpoint(1)) {
      EXPECT_EQ(reply->last_heard_ms[i], QueryReply::kNeverHeard) << "itself";
    } else {
      // Node 2 probes node 1 and gossips to it: local timing probes every 200 ms.
      EXPECT_LE(reply->last_heard_ms[i], 1000u) << who;
    }
  }
}

TEST(Core, IsDeterministicForAGivenSeed) {
  auto run_once = [] {
    MiniNet net(5, 5, 42);
    net.loss = 0.2;
    for (int i = 1; i <= 5; ++i) net.add(i);
    net.run([&] { return all_committed(net, range(1, 5)); });
    return std::make_pair(net.now(), net.committed(3)->my_node_rank);
  };
  EXPECT_EQ(run_once(), run_once());
}

}  // namespace
}  // namespace gossip_rdzv::protocol
