// The protocol core driven in memory: no sockets, no sleeps, virtual time only.
#include "protocol/core.hpp"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <set>

#include "mini_net.hpp"
#include "protocol/agreement.hpp"
#include "protocol/bitset.hpp"

namespace gossip_rdzv::protocol {
namespace {

using testing::MiniNet;
using testing::NodeOptions;
using namespace std::chrono_literals;

bool all_committed(MiniNet& net, const std::vector<int>& ids) {
  for (int i : ids) {
    if (!net.committed(i)) return false;
  }
  return true;
}

// Every node of `ids` committed the same assignment, ranks form a permutation.
void expect_consistent(MiniNet& net, const std::vector<int>& ids) {
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

std::vector<int> range(int from, int to) {
  std::vector<int> ids;
  for (int i = from; i <= to; ++i) ids.push_back(i);
  return ids;
}

// For tests that drive one core by hand: what MiniNet's node i announces, with --nnodes
// `nodes`, and a message from node i.
Announcement announcement(int i, std::uint32_t nodes) {
  Announcement a;
  a.endpoint = MiniNet::endpoint(i);
  a.node_id = 1000 + static_cast<std::uint64_t>(i);
  a.generation = 1;
  a.host = "10.0.0." + std::to_string(i);
  a.hostname = "node" + std::to_string(i);
  a.min_nodes = a.max_nodes = nodes;
  return a;
}
Envelope envelope_from(int i, Body body) {
  Envelope env;
  env.run_id = "run";
  env.sender = MiniNet::endpoint(i);
  env.sender_generation = 1;
  env.body = std::move(body);
  return env;
}

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

TEST(Core, NodesOnlyKnowingTheSeedLearnEachOtherByGossip) {
  MiniNet net(8, 8);
  for (int i = 1; i <= 8; ++i) net.add(i);
  ASSERT_TRUE(net.run([&] { return all_committed(net, range(1, 8)); }));
  for (int i = 1; i <= 8; ++i) {
    EXPECT_EQ(net.node(i)->snapshot().members.size(), 8u) << "node " << i;
  }
}

TEST(Core, CommittedNodesBecomeDoneOnceEveryoneKnows) {
  MiniNet net(4, 4);
  for (int i = 1; i <= 4; ++i) net.add(i);
  ASSERT_TRUE(net.run([&] {
    for (int i = 2; i <= 4; ++i)
      if (!net.node(i)->done()) return false;
    return true;
  }));
  // Well before the commit grace: done came from everyone's commit bits.
  EXPECT_LT(net.now(), std::chrono::milliseconds(500));
  // The seed (node 1) stays for the whole grace: a node that starts or restarts after the
  // commit knows nobody else to ask.
  const Time committed_at = net.now();
  EXPECT_FALSE(net.node(1)->done());
  // Past the members' linger it only answers: no probes or gossip to members that left
  // (they exit when done, as `gossip-rdzv join` does).
  for (int i = 2; i <= 4; ++i) net.crash(i);
  net.run([] { return false; }, Timing::local().outcome_linger + 10ms);
  std::vector<std::string> sent_to;
  net.on_send = [&](const std::string& from, const std::string& to, const Envelope&) {
    if (from == MiniNet::endpoint(1)) sent_to.push_back(to);
  };
  net.run([] { return false; }, 500ms);
  EXPECT_TRUE(sent_to.empty()) << sent_to.size() << " messages, the first to "
                               << (sent_to.empty() ? "" : sent_to[0]);
  net.inject(MiniNet::endpoint(1),
             envelope_from(9, Join{MemberRecord{announcement(9, 4), 0, MemberStatus::alive}}));
  net.run([] { return false; }, 2ms);
  EXPECT_EQ(std::count(sent_to.begin(), sent_to.end(), MiniNet::endpoint(9)), 1);
  ASSERT_TRUE(net.run([&] { return net.node(1)->done(); }));
  EXPECT_GE(net.now(), Timing::local().commit_grace);
  EXPECT_LT(net.now(), committed_at + Timing::local().commit_grace);
}

TEST(Core, NodeRestartedAfterTheCommitIsToldByTheSeedItsRoundIsOver) {
  MiniNet net(3, 3);
  for (int i = 1; i <= 3; ++i) net.add(i);
  ASSERT_TRUE(net.run([&] { return net.node(2)->done() && net.node(3)->done(); }));
  // Members 2 and 3 leave as `gossip-rdzv join` does; node 3's agent restarts a second later.
  net.crash(2);
  net.crash(3);
  net.events(3).clear();
  net.run([] { return false; }, 1s);
  ASSERT_FALSE(net.node(1)->done());  // else it would exit, and nobody would answer node 3
  net.add(3, {.generation = 2});
  ASSERT_TRUE(net.run([&] { return net.find_event<NotAdmitted>(3) != nullptr; }, 1s));
  EXPECT_FALSE(net.node(1)->done());
  EXPECT_TRUE(net.find_event<NotAdmitted>(3)->previous_process_in_view);
  EXPECT_FALSE(net.committed(3));
}

TEST(Core, CommittedNodeAnswersANodeOutsideTheViewThatStillTalks) {
  MiniNet net(3, 3);
  for (int i = 1; i <= 3; ++i) net.add(i);
  ASSERT_TRUE(net.run([&] { return all_committed(net, range(1, 3)); }));
  std::vector<Envelope> to_outsider, to_member;
  net.on_send = [&](const std::string& from, const std::string& to, const Envelope& msg) {
    if (from != MiniNet::endpoint(2)) return;
    if (to == MiniNet::endpoint(9)) to_outsider.push_back(msg);
    if (to == MiniNet::endpoint(3)) to_member.push_back(msg);
  };
  // An extra node whose one notice (tell_outsiders) was lost gossips on: each of its
  // messages is answered with the committed view, which tells it that it was not admitted.
  net.inject(MiniNet::endpoint(2), envelope_from(9, Gossip{}));
  net.inject(MiniNet::endpoint(2), envelope_from(9, Gossip{}));
  net.run([] { return false; }, 2ms);
  ASSERT_EQ(to_outsider.size(), 2u);
  for (const auto& msg : to_outsider) {
    const auto* gossip = std::get_if<Gossip>(&msg.body);
    ASSERT_NE(gossip, nullptr);
    ASSERT_EQ(gossip->views.size(), 1u);
    const auto& claim = gossip->views[0];
    EXPECT_EQ(claim.members.size(), 3u);                // the whole view: the outsider holds none
    EXPECT_GE(bits::count_within(claim.voted, 3), 2u);  // a quorum: enough to be not admitted
  }
  // A member's gossip gets no such answer: it learns the outcome by the usual push.
  const std::size_t before = to_member.size();
  net.inject(MiniNet::endpoint(2), envelope_from(3, Gossip{}));
  net.run([] { return false; }, 100us);
  EXPECT_EQ(to_member.size(), before);
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

// The suspicion timeout grows with log10 of the cluster size, and the size is at least
// --nnodes MIN: a node that knows few members yet (a late joiner) must not use the short
// timeout of a small cluster, or at high loss it buries live members for everyone before
// their refutation reaches it. Local timing: 4 x 200 ms x ceil(log10 100) = 1.6 s, where
// three known members would give the 1 s floor.
TEST(Core, SuspicionTimeoutAssumesAtLeastMinNodes) {
  MiniNet net(100, 100);  // never full: nobody commits
  for (int i = 1; i <= 3; ++i) net.add(i);
  ASSERT_TRUE(net.run([&] { return net.node(1)->snapshot().members.size() == 3; }, 5s));
  net.crash(3);
  auto seen = [&](auto type) {
    for (const auto& event : net.events(1)) {
      const auto* e = std::get_if<decltype(type)>(&event);
      if (e != nullptr && e->endpoint == MiniNet::endpoint(3)) return true;
    }
    return false;
  };
  ASSERT_TRUE(net.run([&] { return seen(MemberSuspected{}); }, 10s));
  const Time suspected = net.now();
  ASSERT_TRUE(net.run([&] { return seen(MemberDead{}); }, 10s));
  EXPECT_GE(net.now() - suspected, Time{std::chrono::milliseconds(1600)});
  EXPECT_LT(net.now() - suspected, Time{std::chrono::milliseconds(1700)});
}

bool all_joined(MiniNet& net, const std::vector<int>& ids) {
  for (int i : ids) {
    if (!net.node(i)->joined()) return false;
  }
  return true;
}

/// No two nodes of `ids` that committed hold different assignments (members with their
/// generations, ranks, master address and port, world size).
void expect_one_outcome(MiniNet& net, const std::vector<int>& ids) {
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

TEST(Core, NodesStartedWithDifferentSeedListsStopWithAnErrorNamingIt) {
  MiniNet net(3, 3);
  net.add(1);
  net.add(2);
  net.add(3, {.seeds = {MiniNet::endpoint(1), MiniNet::endpoint(2)}});
  ASSERT_TRUE(net.run([&] { return net.find_event<Fatal>(3) != nullptr; }));
  const Fatal* fatal = net.find_event<Fatal>(3);
  EXPECT_EQ(fatal->code, ErrorCode::usage);
  EXPECT_NE(fatal->message.find("another --seed list than this node (10.0.0.1:29400, "
                                "10.0.0.2:29400)"),
            std::string::npos)
      << fatal->message;
  net.run([] { return false; }, 10s);
  for (int i = 1; i <= 3; ++i) EXPECT_FALSE(net.committed(i)) << "node " << i;
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

TEST(Core, DedicatedSeedAnswersWithABoundedSample) {
  MiniNet net(40, 40);
  net.seed = MiniNet::endpoint(99);
  net.add(99, {.seed_only = true});
  std::size_t largest_reply = 0;
  net.on_deliver = [&](const std::string&, const Envelope& env) {
    if (auto* reply = std::get_if<JoinReply>(&env.body))
      largest_reply = std::max(largest_reply, reply->sample.size());
  };
  for (int i = 1; i <= 40; ++i) net.add(i);
  ASSERT_TRUE(net.run([&] { return all_committed(net, range(1, 40)); }));
  EXPECT_LE(largest_reply, Timing::local().join_sample_size);
  expect_consistent(net, range(1, 40));
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

TEST(Core, DifferentNnodesIsAFatalUsageError) {
  MiniNet net(2, 2);
  net.add(1);
  net.add(2, {.min_nodes = 3, .max_nodes = 3});
  ASSERT_TRUE(net.run([&] { return net.find_event<Fatal>(1) != nullptr; }));
  EXPECT_EQ(net.find_event<Fatal>(1)->code, ErrorCode::usage);
  EXPECT_NE(net.find_event<Fatal>(1)->message.find("--nnodes"), std::string::npos);
}

// Two machines advertising the same address:port (copied --advertise, host names that
// resolve to 127.0.1.1): the real owner of the endpoint learns of the other process through
// the seed and stops with a usage error naming both hosts, instead of being replaced by it.
TEST(Core, AnotherProcessAdvertisingOurEndpointIsAFatalUsageError) {
  MiniNet net(3, 3);
  net.add(1);
  net.add(2);
  ASSERT_TRUE(net.run([&] { return net.node(1)->snapshot().members.size() == 2; }));
  Envelope join;
  join.run_id = "run";
  join.sender = MiniNet::endpoint(2);
  join.sender_generation = 9;
  Join body;
  body.self.ann.endpoint = MiniNet::endpoint(2);
  body.self.ann.node_id = 4242;
  body.self.ann.generation = 9;
  body.self.ann.host = "10.0.0.2";
  body.self.ann.hostname = "copycat";
  body.self.ann.min_nodes = body.self.ann.max_nodes = 3;
  join.body = body;
  net.inject(MiniNet::endpoint(1), join);
  ASSERT_TRUE(net.run([&] { return net.find_event<Fatal>(2) != nullptr; }));
  const Fatal* fatal = net.find_event<Fatal>(2);
  EXPECT_EQ(fatal->code, ErrorCode::usage);
  for (const char* part : {"copycat", "node2", "10.0.0.2:29400", "--advertise"}) {
    EXPECT_NE(fatal->message.find(part), std::string::npos) << part << ": " << fatal->message;
  }
  EXPECT_FALSE(net.committed(2));
}

// An earlier process of ours (older generation, same host) is history, not a conflict.
TEST(Core, OurOwnEarlierProcessIsNotAConflict) {
  MiniNet net(2, 2);
  net.add(1);
  net.add(2, {.generation = 1});
  net.crash(2);
  net.add(2, {.generation = 2});
  ASSERT_TRUE(net.run([&] { return net.committed(1) && net.committed(2); }));
  EXPECT_EQ(net.find_event<Fatal>(2), nullptr);
}

TEST(Core, ForgedClaimsCannotForceACommit) {
  MiniNet net(3, 3);
  net.add(1);
  net.add(2);
  net.run([&] { return net.node(1)->snapshot().members.size() == 2; });
  // A claim with all bits set but a digest that does not match its members is ignored.
  ViewClaim forged;
  forged.round = 0;
  forged.attempt = 99;
  forged.members = {{MiniNet::endpoint(1), 1}, {MiniNet::endpoint(2), 1}, {"10.9.9.9:1", 1}};
  forged.digest = 12345;
  forged.proposed = forged.ready = forged.committed = {0xff};
  Envelope env;
  env.run_id = "run";
  env.sender = MiniNet::endpoint(2);
  env.sender_generation = 1;
  env.body = Gossip{false, {}, {forged}};
  net.inject(MiniNet::endpoint(1), env);
  net.run([] { return false; }, std::chrono::milliseconds(200));
  EXPECT_FALSE(net.committed(1));
  EXPECT_EQ(net.find_event<NotAdmitted>(1), nullptr);
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

// ---- reachability: a node whose advertised endpoint does not work is told so -----------

std::vector<UnreachableReported> reports_to(MiniNet& net, const std::string& name) {
  std::vector<UnreachableReported> reports;
  for (const auto& event : net.events(name)) {
    if (auto* report = std::get_if<UnreachableReported>(&event)) reports.push_back(*report);
  }
  return reports;
}

// A copy: snapshot() returns a temporary, so a pointer into it would dangle.
std::optional<UnreachablePeer> unreachable_in(const Snapshot& snapshot,
                                              const std::string& endpoint) {
  for (const auto& peer : snapshot.unreachable) {
    if (peer.endpoint == endpoint) return peer;
  }
  return std::nullopt;
}

TEST(Core, HealthyRunReportsNothingUnreachable) {
  MiniNet net(4, 4);
  for (int i = 1; i <= 4; ++i) net.add(i);
  ASSERT_TRUE(net.run([&] { return all_committed(net, range(1, 4)); }));
  net.run([] { return false; }, 5s);  // probes keep running after the commit
  for (int i = 1; i <= 4; ++i) {
    EXPECT_EQ(net.find_event<PeerUnreachable>(i), nullptr) << "node " << i;
    EXPECT_TRUE(reports_to(net, MiniNet::endpoint(i)).empty()) << "node " << i;
    EXPECT_TRUE(net.node(i)->snapshot().unreachable.empty()) << "node " << i;
  }
}

TEST(Core, NodeThatDropsInboundTrafficIsToldByTheSeedItCanSendTo) {
  MiniNet net(4, 4);
  for (int i = 1; i <= 4; ++i) net.add(i);
  for (int i = 1; i <= 3; ++i) net.cut_one_way(i, 4);  // node 4 drops every inbound connection
  const std::string bad = MiniNet::endpoint(4);
  ASSERT_TRUE(net.run([&] { return !reports_to(net, bad).empty(); }, 30s));
  const auto report = reports_to(net, bad).front();
  EXPECT_EQ(report.reporter, MiniNet::endpoint(1));  // the only node it ever sends to
  EXPECT_EQ(report.tried_endpoint, bad);
  EXPECT_GE(report.unanswered, UnreachablePeer::kReportAfter);
  EXPECT_FALSE(net.node(4)->joined());  // the JoinReply never reached it
  // The seed knows whom it told; the others, who only probed it, name it too.
  net.run([&] {
    return unreachable_in(net.node(2)->snapshot(), bad).has_value() &&
           unreachable_in(net.node(3)->snapshot(), bad).has_value();
  });
  const auto seen_by_seed = unreachable_in(net.node(1)->snapshot(), bad);
  ASSERT_TRUE(seen_by_seed);
  EXPECT_TRUE(seen_by_seed->told);
  EXPECT_TRUE(seen_by_seed->heard_meanwhile);  // its joins kept coming: it runs
  const auto* told = net.find_event<PeerUnreachable>(1);
  ASSERT_NE(told, nullptr);
  EXPECT_EQ(told->endpoint, bad);
  EXPECT_GE(told->unanswered, UnreachablePeer::kReportAfter);
  EXPECT_GE(seen_by_seed->unanswered, UnreachablePeer::kReportAfter);
  // Node 2 never hears from 4: to it, 4 could as well have crashed, and it says no more.
  const auto seen_by_other = unreachable_in(net.node(2)->snapshot(), bad);
  ASSERT_TRUE(seen_by_other);
  EXPECT_FALSE(seen_by_other->heard_meanwhile);
  EXPECT_FALSE(seen_by_other->told);
  EXPECT_FALSE(net.committed(1));
  for (int i = 1; i <= 3; ++i) EXPECT_TRUE(reports_to(net, MiniNet::endpoint(i)).empty());
}

TEST(Core, NodeAdvertisingLoopbackIsToldAndItsOwnEchoIsNoAnswer) {
  MiniNet net(4, 4);
  const std::string bad = "127.0.0.1:29400";
  net.loop_back(bad);  // what every other machine reaches at that address is itself
  for (int i = 1; i <= 3; ++i) net.add(i);
  NodeOptions options;
  options.endpoint = bad;
  net.add(4, options);
  ASSERT_TRUE(net.run([&] { return !reports_to(net, bad).empty(); }, 30s));
  EXPECT_EQ(reports_to(net, bad).front().tried_endpoint, bad);
  EXPECT_EQ(reports_to(net, bad).front().reporter, MiniNet::endpoint(1));
  // Pings to 127.0.0.1 came back to their senders, who did not take them for acks.
  net.run([&] { return unreachable_in(net.node(2)->snapshot(), bad).has_value(); });
  EXPECT_TRUE(unreachable_in(net.node(2)->snapshot(), bad));
  EXPECT_FALSE(net.committed(1));
}

// Node 1 of a run of 3 (LAN timing: probe 1 s, timeout 500 ms) that knows nodes 2 and 3;
// node 3 acks every ping, node 2 never answers. Records what node 1 sends node 2.
struct LonelyProber {
  struct PingSent {
    Time at;
    Ping ping;
  };
  Core core;
  std::vector<PingSent> pings_to_2;
  std::vector<Time> suspected_2, dead_2;
  Time now{0};

  static CoreConfig config() {
    CoreConfig c;
    c.self = announcement(1, 3);
    c.run_id = "run";
    c.seeds = {MiniNet::endpoint(2)};
    c.min_nodes = c.max_nodes = 3;
    return c;
  }
  LonelyProber() : core(config()) {
    core.start(now);
    core.on_message(now, envelope_from(2, JoinReply{{MemberRecord{announcement(2, 3), 0, {}},
                                                     MemberRecord{announcement(3, 3), 0, {}}},
                                                    true}));
    drain();
  }
  void drain() {
    while (auto out = core.poll_send()) {
      const auto* ping = std::get_if<Ping>(&out->msg.body);
      if (ping == nullptr) continue;
      if (out->to == MiniNet::endpoint(2)) pings_to_2.push_back({now, *ping});
      if (out->to == MiniNet::endpoint(3)) core.on_message(now, envelope_from(3, Ack{ping->seq}));
    }
    while (auto event = core.poll_event()) {
      if (const auto* s = std::get_if<MemberSuspected>(&*event);
          s && s->endpoint == MiniNet::endpoint(2))
        suspected_2.push_back(now);
      if (const auto* d = std::get_if<MemberDead>(&*event);
          d && d->endpoint == MiniNet::endpoint(2))
        dead_2.push_back(now);
    }
  }
  void run_until(Time end) {
    while (now < end) {
      now = std::max(now + Time{1}, core.next_wakeup());
      core.on_tick(now);
      drain();
    }
  }
};

// SWIM suspects after one unanswered period; at 30% loss that is 22% of the probes of a live
// member, and a 10,000-node cluster buried live members under the refutations. A member is
// suspected only after Timing::probe_rounds (2) unanswered periods in a row, each with a
// second direct ping at the probe timeout.
TEST(Core, SuspectsOnlyAfterProbeRoundsUnansweredInARow) {
  LonelyProber node;
  node.run_until(Time{std::chrono::seconds(30)});
  ASSERT_FALSE(node.suspected_2.empty());
  const Time suspected = node.suspected_2.front();
  std::map<std::uint64_t, std::vector<Time>> by_seq;
  for (const auto& sent : node.pings_to_2)
    if (sent.at < suspected) by_seq[sent.ping.seq].push_back(sent.at);
  ASSERT_EQ(by_seq.size(), node.core.config().timing.probe_rounds);
  Time previous{0};
  for (const auto& [seq, times] : by_seq) {
    ASSERT_EQ(times.size(), 2u) << "ping " << seq << ": first try and the retry at the timeout";
    EXPECT_EQ(times[1] - times[0], Time{std::chrono::milliseconds(500)});
    if (previous != Time{0}) {
      EXPECT_EQ(times[0] - previous, Time{std::chrono::seconds(1)}) << "consecutive periods";
    }
    previous = times[0];
  }
  EXPECT_EQ(suspected - previous, Time{std::chrono::seconds(1)});
}

// Lifeguard's buddy system: every ping to a member we suspect tells it so, long after the
// rumour left our piggyback queue, so a live member refutes as soon as we probe it.
TEST(Core, PingToASuspectCarriesTheSuspicion) {
  LonelyProber node;
  node.run_until(Time{std::chrono::seconds(30)});
  ASSERT_FALSE(node.suspected_2.empty());
  ASSERT_FALSE(node.dead_2.empty());
  std::set<std::uint64_t> seen;
  std::size_t told = 0;
  for (const auto& sent : node.pings_to_2) {
    if (!seen.insert(sent.ping.seq).second) continue;  // the bare retry of a ping
    if (sent.at <= node.suspected_2.front() || sent.at >= node.dead_2.front()) continue;
    bool carries = false;
    for (const auto& update : sent.ping.updates)
      carries |=
          update.ann.endpoint == MiniNet::endpoint(2) && update.status == MemberStatus::suspect;
    EXPECT_TRUE(carries) << "ping at " << sent.at.count() << " us";
    ++told;
  }
  EXPECT_GE(told, 2u);
}

// A joiner fresh from its seed's JoinReply: node 1, seed 2, and the `sample` members 3, 4, ...
// the seed returned; every member it pings answers. Counts the Gossip it pushes to each.
struct FreshJoiner {
  Core core;
  std::map<std::string, std::size_t> gossip_to;
  std::size_t gossips = 0;
  Time now{0};

  static CoreConfig config(std::uint32_t min_nodes) {
    CoreConfig c;
    c.self = announcement(1, min_nodes);
    c.run_id = "run";
    c.seeds = {MiniNet::endpoint(2)};
    c.min_nodes = c.max_nodes = min_nodes;
    return c;
  }
  FreshJoiner(std::uint32_t min_nodes, int sample) : core(config(min_nodes)) {
    core.start(now);
    JoinReply reply;
    reply.seed_is_member = true;
    for (int i = 3; i < 3 + sample; ++i)
      reply.sample.push_back(MemberRecord{announcement(i, min_nodes), 0, {}});
    reply.sample.push_back(MemberRecord{announcement(2, min_nodes), 0, {}});
    core.on_message(now, envelope_from(2, std::move(reply)));
    drain();
  }
  void drain() {
    while (auto out = core.poll_send()) {
      if (std::holds_alternative<Gossip>(out->msg.body)) {
        ++gossip_to[out->to];
        ++gossips;
      }
      if (const auto* ping = std::get_if<Ping>(&out->msg.body)) {
        const auto host = out->to.substr(0, out->to.rfind(':'));
        const int target = std::stoi(host.substr(host.rfind('.') + 1));
        core.on_message(now, envelope_from(target, Ack{ping->seq}));
      }
    }
    while (core.poll_event()) {
    }
  }
  void run_until(Time end) {
    while (now < end) {
      now = std::max(now + Time{1}, core.next_wakeup());
      core.on_tick(now);
      drain();
    }
  }
};

// Right after joining, a node knows its seed and the seed's sample of join_sample_size
// members: picked uniformly, the seed would get one in nine of its pushes, from every one of
// N joiners. Until a node knows MIN members, a seed is picked with weight known / MIN.
TEST(Core, FreshJoinerRarelyPushesToItsSeedBeforeItKnowsMinMembers) {
  FreshJoiner big(1000, 8);  // knows 10 of 1,000: keeps a seed on 1% of its picks
  big.run_until(Time{std::chrono::seconds(10)});
  ASSERT_GE(big.gossips, 100u);
  EXPECT_LE(big.gossip_to[MiniNet::endpoint(2)], big.gossips / 50) << big.gossips << " pushes";

  FreshJoiner full(10, 8);  // knows all of its 10: the seed is a member like any other
  full.run_until(Time{std::chrono::seconds(10)});
  ASSERT_GE(full.gossips, 100u);
  EXPECT_GE(full.gossip_to[MiniNet::endpoint(2)], full.gossips / 20) << full.gossips << " pushes";
}

TEST(Core, JoinerThatKnowsOnlyItsSeedStillPushesToIt) {
  FreshJoiner lonely(1000, 0);
  lonely.run_until(Time{std::chrono::seconds(5)});
  ASSERT_GE(lonely.gossips, 10u);
  EXPECT_EQ(lonely.gossip_to[MiniNet::endpoint(2)], lonely.gossips);
}

TEST(Core, BrokenDirectPathIsReportedEvenWhenIndirectProbesSucceed) {
  MiniNet net(4, 4);
  for (int i = 1; i <= 4; ++i) net.add(i);
  net.cut_one_way(2, 4);  // only 2 -> 4 fails; 4 still sends to 2, others reach both
  const std::string bad = MiniNet::endpoint(4);
  ASSERT_TRUE(net.run([&] { return !reports_to(net, bad).empty(); }, 60s));
  for (const auto& report : reports_to(net, bad)) {
    EXPECT_EQ(report.reporter, MiniNet::endpoint(2));
    EXPECT_EQ(report.tried_endpoint, bad);
  }
  // Node 4 never looked dead to anyone: helpers relayed 2's probes.
  for (int i = 1; i <= 3; ++i) {
    for (const auto& member : net.node(i)->snapshot().members) {
      if (member.ann.endpoint == bad) {
        EXPECT_NE(member.status, MemberStatus::dead);
      }
    }
  }
}

TEST(Core, NoticeFromAPeerIsOnlyAnEvent) {
  MiniNet net(2, 2);
  net.add(1);
  net.add(2);
  ASSERT_TRUE(net.run([&] { return all_committed(net, {1, 2}); }));
  Envelope notice;
  notice.run_id = "run";
  notice.sender = MiniNet::endpoint(1);
  notice.sender_generation = 1;
  notice.body = Unreachable{MiniNet::endpoint(2), 1500, 3};
  net.inject(MiniNet::endpoint(2), notice);
  net.run([&] { return !reports_to(net, MiniNet::endpoint(2)).empty(); }, 1s);
  const auto reports = reports_to(net, MiniNet::endpoint(2));
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports.front().reporter, MiniNet::endpoint(1));
  EXPECT_EQ(reports.front().unanswered, 3u);
  EXPECT_EQ(reports.front().failing_for, std::chrono::milliseconds(1500));
  EXPECT_TRUE(net.committed(2));
}

// A node whose table lacks members that a peer's view names pulls that peer's table at once
// (rate-limited) instead of waiting for the periodic push-pull.
TEST(Core, ViewNamingMembersWeLackPullsTheSendersTable) {
  auto announcement = [](int i) {
    auto a = gossip_rdzv::protocol::announcement(i, 3);
    a.seeds_digest = QuorumBase({MiniNet::endpoint(2)}).digest();
    return a;
  };
  CoreConfig config;
  config.self = announcement(1);
  config.run_id = "run";
  config.seeds = {MiniNet::endpoint(2)};
  config.min_nodes = config.max_nodes = 3;
  Core core(config);
  core.start(Time{0});
  auto envelope = [](Body body) { return envelope_from(2, std::move(body)); };
  core.on_message(Time{100}, envelope(JoinReply{{MemberRecord{announcement(2), 0, {}}}, true}));
  while (core.poll_send()) {
  }
  auto pulls_after = [&](Time now, std::vector<MemberKey> members) {
    ViewClaim claim;
    claim.attempt = 1;
    claim.members = std::move(members);
    claim.digest = view_digest(0, QuorumBase(config.seeds).digest(), claim.members);
    claim.proposed = claim.ready = claim.committed = claim.fenced = {0};
    core.on_message(now, envelope(Gossip{false, {}, {claim}}));
    int pulls = 0;
    while (auto out = core.poll_send()) {
      const auto* gossip = std::get_if<Gossip>(&out->msg.body);
      if (gossip != nullptr && gossip->want_reply && out->to == MiniNet::endpoint(2)) ++pulls;
    }
    return pulls;
  };
  const MemberKey a{MiniNet::endpoint(1), 1}, b{MiniNet::endpoint(2), 1},
      c{MiniNet::endpoint(3), 1}, d{MiniNet::endpoint(4), 1};
  EXPECT_EQ(pulls_after(Time{200}, {a, b}), 0);     // nothing we lack
  EXPECT_EQ(pulls_after(Time{300}, {a, b, c}), 1);  // 10.0.0.3 is unknown here
  EXPECT_EQ(pulls_after(Time{400}, {a, b, c}), 0);  // at most once per gossip interval
  EXPECT_EQ(pulls_after(Time{300} + std::chrono::milliseconds(200), {a, b, c}), 1);
  // A view without us is not our concern, but the view {a, b, c} we hold still names
  // 10.0.0.3, whose row we lack: a peer talking about views is asked for its table.
  EXPECT_EQ(pulls_after(Time{300} + std::chrono::milliseconds(400), {b, c, d}), 1);
}

// memberlist's pushPullScale: the periodic full-table exchange slows down above 32 members
// (x2 up to 64), so a node's full-table traffic does not grow with the cluster.
TEST(Core, PushPullSlowsDownAboveThirtyTwoMembers) {
  auto push_pulls_per_node = [](int nodes) {
    MiniNet net(100, 100);  // never full: the nodes keep gossiping for the whole run
    int requests = 0;
    net.on_deliver = [&](const std::string&, const Envelope& env) {
      const auto* gossip = std::get_if<Gossip>(&env.body);
      if (gossip != nullptr && gossip->want_reply && !gossip->updates.empty()) ++requests;
    };
    for (int i = 1; i <= nodes; ++i) net.add(i);
    const Time warm_up = net.now() + 5s;
    net.run([&] { return net.now() >= warm_up; }, 6s);  // everyone joined and known
    requests = 0;
    const Time end = net.now() + 20s;
    net.run([&] { return net.now() >= end; }, 21s);
    return static_cast<double>(requests) / nodes;
  };
  // Local timing: push_pull_interval 1 s, so ~20 per node in 20 s at 10 nodes, ~10 at 40.
  const double small = push_pulls_per_node(10);
  const double large = push_pulls_per_node(40);
  std::printf("push-pulls per node in 20 s: %.1f at 10 nodes, %.1f at 40\n", small, large);
  EXPECT_GT(small, 15.0);
  EXPECT_LT(small, 22.0);
  EXPECT_GT(large, 7.5);
  EXPECT_LT(large, 11.5);
}

// A member that is one of many seeds meets the other seeds a few at a time (gossip_fanout
// per attempt), and forwards its joiners to the collectors, the first gossip_fanout seeds in
// sorted order: no seed's work may grow with the number of seeds. Sorted as strings, the 12
// seeds begin "10.0.0.10:29400", "10.0.0.11:29400", "10.0.0.12:29400" (':' sorts after the
// digits), so 10.0.0.10 is a collector and 10.0.0.5 is not; of four seeds, 10.0.0.1-3 are.
TEST(Core, MemberSeedTalksToAFewOtherSeedsAtATime) {
  // --nnodes 100: never full, so nothing else changes the traffic
  auto announcement = [](int i) { return gossip_rdzv::protocol::announcement(i, 100); };
  const auto envelope = envelope_from;
  struct Case {
    int seeds;
    int self;
    std::vector<int> collectors;  // but us
  };
  const std::vector<Case> cases = {
      {4, 1, {2, 3}}, {4, 4, {1, 2, 3}}, {12, 10, {11, 12}}, {12, 5, {10, 11, 12}}};
  for (const auto& [seeds, self, collector_ids] : cases) {
    SCOPED_TRACE(std::to_string(seeds) + " seeds, we are 10.0.0." + std::to_string(self));
    CoreConfig config;
    config.self = announcement(self);
    config.run_id = "run";
    config.min_nodes = config.max_nodes = 100;
    config.timing = Timing::local();
    for (int i = 1; i <= seeds; ++i) config.seeds.push_back(MiniNet::endpoint(i));
    const std::size_t fanout = config.timing.gossip_fanout;
    std::multiset<std::string> collectors;
    for (int i : collector_ids) collectors.insert(MiniNet::endpoint(i));
    Core core(config);
    core.start(Time{0});
    // Destinations of the messages of one kind sent to seeds since the last call.
    auto to_seeds = [&](auto is_wanted) {
      std::multiset<std::string> to;
      while (auto out = core.poll_send()) {
        const bool is_seed =
            std::find(config.seeds.begin(), config.seeds.end(), out->to) != config.seeds.end();
        if (is_seed && is_wanted(out->msg.body)) to.insert(out->to);
      }
      return to;
    };
    auto is_join = [](const Body& body) { return std::holds_alternative<Join>(body); };
    EXPECT_EQ(to_seeds(is_join).size(), 1u);  // not joined yet: one seed at a time
    const int first = self == 2 ? 3 : 2;
    core.on_message(Time{1},
                    envelope(first, JoinReply{{MemberRecord{announcement(first), 0, {}}}, true}));
    to_seeds(is_join);
    // The first attempt to meet the other seeds comes with the first join retry (20 ms
    // +-20%), the next one no earlier than 32 ms after it.
    std::multiset<std::string> met;
    Time now{1};
    while (now < Time{std::chrono::milliseconds(40)}) {
      now = core.next_wakeup();
      core.on_tick(now);
      const auto joins = to_seeds(is_join);
      met.insert(joins.begin(), joins.end());
    }
    const std::size_t unmet = static_cast<std::size_t>(seeds) - 2;  // not us, not `first`
    EXPECT_EQ(met.size(), std::min(fanout, unmet));
    EXPECT_EQ(std::set<std::string>(met.begin(), met.end()).size(), met.size());
    EXPECT_EQ(met.count(MiniNet::endpoint(first)), 0u);
    EXPECT_EQ(met.count(MiniNet::endpoint(self)), 0u);
    // Three joiners arrive at once, off the gossip grid; one gossip interval later their
    // rows go, in one message each, to every collector but us.
    const Time arrival = now + Time{std::chrono::microseconds(3700)};
    while (core.next_wakeup() < arrival) {
      core.on_tick(core.next_wakeup());
      to_seeds(is_join);
    }
    for (int j = 50; j < 53; ++j) {
      core.on_message(arrival, envelope(j, Join{MemberRecord{announcement(j), 0, {}}}));
    }
    to_seeds(is_join);
    const Time forward_at =
        arrival + std::chrono::duration_cast<Time>(config.timing.gossip_interval);
    while (core.next_wakeup() < forward_at) {
      core.on_tick(core.next_wakeup());
      to_seeds(is_join);
    }
    core.on_tick(forward_at);
    const auto forwarded = to_seeds([](const Body& body) {
      const auto* gossip = std::get_if<Gossip>(&body);
      if (gossip == nullptr || gossip->want_reply || gossip->updates.size() != 3) return false;
      std::set<std::string> joiners;
      for (const auto& record : gossip->updates) joiners.insert(record.ann.endpoint);
      return joiners == std::set<std::string>{MiniNet::endpoint(50), MiniNet::endpoint(51),
                                              MiniNet::endpoint(52)};
    });
    EXPECT_EQ(forwarded, collectors);
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
