// Elastic rounds (rounds.hpp, docs/protocol.md "Rounds"): after a commit the nodes agree again
// when a node's workers fail, a member dies, restarts or arrives below MAX, or a peer is in a
// later round; every round has one outcome; a member that left on purpose ends no round.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "core_helpers.hpp"

namespace gossip_rdzv::protocol::testing {
namespace {

/// The assignment node i committed for `round`, if any.
std::optional<Assignment> commit_of(MiniNet& net, int i, std::uint32_t round) {
  for (const auto& a : net.commits(i)) {
    if (a.round == round) return a;
  }
  return std::nullopt;
}

bool all_in_round(MiniNet& net, const std::vector<int>& ids, std::uint32_t round) {
  for (int i : ids) {
    if (!commit_of(net, i, round)) return false;
  }
  return true;
}

std::vector<std::string> endpoints(const Assignment& a) {
  std::vector<std::string> out;
  for (const auto& node : a.nodes) out.push_back(node.endpoint);
  return out;
}

/// Every node of `ids` committed one and the same outcome for `round`: members, ranks,
/// master address and port, world size.
void expect_one_outcome(MiniNet& net, const std::vector<int>& ids, std::uint32_t round) {
  const auto first = commit_of(net, ids.front(), round);
  ASSERT_TRUE(first);
  for (int i : ids) {
    const auto mine = commit_of(net, i, round);
    ASSERT_TRUE(mine) << "node " << i << " did not commit round " << round;
    EXPECT_EQ(endpoints(*mine), endpoints(*first));
    EXPECT_EQ(mine->master_addr, first->master_addr);
    EXPECT_EQ(mine->master_port, first->master_port);
    EXPECT_EQ(mine->world_size, first->world_size);
    EXPECT_EQ(mine->me().endpoint, MiniNet::endpoint(i));
  }
}

const RoundStarted* round_started(MiniNet& net, int i, std::uint32_t round) {
  for (const auto& event : net.events(i)) {
    if (auto* e = std::get_if<RoundStarted>(&event); e && e->round == round) return e;
  }
  return nullptr;
}

NodeOptions elastic(std::uint32_t min = 0, std::uint32_t max = 0) {
  NodeOptions options;
  options.elastic = true;
  options.min_nodes = min;
  options.max_nodes = max;
  return options;
}

TEST(Rounds, WorkersFailingOnOneNodeStartTheNextRoundEverywhere) {
  MiniNet net(3, 3);
  for (int i = 1; i <= 3; ++i) net.add(i, elastic());
  ASSERT_TRUE(net.run([&] { return all_in_round(net, {1, 2, 3}, 0); }));
  ASSERT_TRUE(net.node(2)->request_next_round(net.now()));
  ASSERT_TRUE(net.run([&] { return all_in_round(net, {1, 2, 3}, 1); }));
  expect_one_outcome(net, {1, 2, 3}, 1);
  ASSERT_TRUE(round_started(net, 2, 1));
  EXPECT_EQ(round_started(net, 2, 1)->reason, RoundReason::workers_failed);
  EXPECT_EQ(round_started(net, 1, 1)->reason, RoundReason::peer_moved_on);
  // Same members: stable ranks, the same master.
  EXPECT_EQ(endpoints(*commit_of(net, 1, 1)), endpoints(*commit_of(net, 1, 0)));
  EXPECT_EQ(net.node(1)->round(), 1u);
}

TEST(Rounds, ANonElasticCoreAgreesOnce) {
  MiniNet net(2, 2);
  net.add(1), net.add(2);
  ASSERT_TRUE(net.run([&] { return all_committed(net, {1, 2}); }));
  EXPECT_FALSE(net.node(1)->request_next_round(net.now()));
  net.crash(2);
  net.run([] { return false; }, 10s);
  EXPECT_EQ(net.node(1)->round(), 0u);
  EXPECT_EQ(net.commits(1).size(), 1u);
}

TEST(Rounds, NoNextRoundBeforeThisOneCommitted) {
  MiniNet net(3, 3);
  net.add(1, elastic()), net.add(2, elastic());
  net.run([] { return false; }, 1s);
  EXPECT_FALSE(net.node(1)->request_next_round(net.now()));
  EXPECT_EQ(net.node(1)->round(), 0u);
}

TEST(Rounds, SurvivorsOfADeadMemberFormTheNextRoundWithoutIt) {
  MiniNet net(2, 3);
  for (int i = 1; i <= 3; ++i) net.add(i, elastic());
  ASSERT_TRUE(net.run([&] { return all_in_round(net, {1, 2, 3}, 0); }));
  ASSERT_EQ(commit_of(net, 1, 0)->nnodes(), 3u);
  net.crash(3);
  ASSERT_TRUE(net.run([&] { return all_in_round(net, {1, 2}, 1); }));
  expect_one_outcome(net, {1, 2}, 1);
  EXPECT_EQ(commit_of(net, 1, 1)->nnodes(), 2u);
  const RoundStarted* why = round_started(net, 1, 1);
  ASSERT_TRUE(why);
  EXPECT_TRUE(why->reason == RoundReason::member_dead || why->reason == RoundReason::peer_moved_on);
  // Survivors keep their relative order: node ranks follow the same natural order.
  EXPECT_EQ(commit_of(net, 1, 1)->nodes[0].endpoint, commit_of(net, 1, 0)->nodes[0].endpoint);
}

TEST(Rounds, FewerThanMinSurvivorsWaitAndCommitNothing) {
  MiniNet net(2, 2);
  net.add(1, elastic()), net.add(2, elastic());
  ASSERT_TRUE(net.run([&] { return all_in_round(net, {1, 2}, 0); }));
  net.crash(2);
  EXPECT_FALSE(net.run([&] { return commit_of(net, 1, 1).has_value(); }, 20s));
  EXPECT_EQ(net.node(1)->round(), 1u);  // it left round 0: its workers must stop
}

TEST(Rounds, ANodeArrivingBelowMaxGrowsTheJob) {
  MiniNet net(2, 3);
  net.last_call = 500ms;
  net.add(1, elastic()), net.add(2, elastic());
  ASSERT_TRUE(net.run([&] { return all_in_round(net, {1, 2}, 0); }));
  ASSERT_EQ(commit_of(net, 1, 0)->nnodes(), 2u);
  net.add(3, elastic());
  ASSERT_TRUE(net.run([&] { return all_in_round(net, {1, 2, 3}, 1); }));
  expect_one_outcome(net, {1, 2, 3}, 1);
  EXPECT_EQ(commit_of(net, 1, 1)->nnodes(), 3u);
  EXPECT_FALSE(net.find_event<NotAdmitted>(3));
  // The newcomer comes after the members it joined.
  EXPECT_EQ(commit_of(net, 1, 1)->nodes.back().endpoint, MiniNet::endpoint(3));
}

TEST(Rounds, ANodeArrivingAtMaxIsNotAdmitted) {
  MiniNet net(2, 2);
  net.add(1, elastic()), net.add(2, elastic());
  ASSERT_TRUE(net.run([&] { return all_in_round(net, {1, 2}, 0); }));
  net.add(3, elastic());
  ASSERT_TRUE(net.run([&] { return net.find_event<NotAdmitted>(3) != nullptr; }));
  EXPECT_EQ(net.node(1)->round(), 0u);
}

TEST(Rounds, AMemberThatLeftOnPurposeStartsNoRoundAndTheJobEndsWhenAllLeft) {
  MiniNet net(3, 3);
  for (int i = 1; i <= 3; ++i) net.add(i, elastic());
  ASSERT_TRUE(net.run([&] { return all_in_round(net, {1, 2, 3}, 0); }));
  net.node(3)->leave(net.now());
  EXPECT_FALSE(net.node(3)->job_finished());
  // Its leave spreads before it exits; then its exit is no failure.
  net.run([] { return false; }, 2s);
  net.crash(3);
  net.run([] { return false; }, 20s);
  EXPECT_EQ(net.node(1)->round(), 0u);
  EXPECT_EQ(net.node(2)->round(), 0u);
  net.node(1)->leave(net.now());
  net.node(2)->leave(net.now());
  ASSERT_TRUE(net.run([&] { return net.node(1)->job_finished() && net.node(2)->job_finished(); }));
  EXPECT_FALSE(net.node(1)->request_next_round(net.now()));
}

// A member that left names its leave in every push, not only while the rumour's
// retransmissions last: members that left at the same moment hold each other dead and had
// spent those retransmissions on the others, and a member's job ends only once it knows
// that every member of the round left (`gossip-rdzv-sim --scenario elastic --nodes 8
// --seed 4101` never ended before).
TEST(Rounds, AMemberThatLeftNamesItsLeaveInEveryPush) {
  MiniNet net(4, 4);
  for (int i = 1; i <= 4; ++i) net.add(i, elastic());
  ASSERT_TRUE(net.run([&] { return all_in_round(net, {1, 2, 3, 4}, 0); }));
  net.node(1)->leave(net.now());
  std::size_t pushes = 0;
  std::size_t without_leave = 0;
  net.on_send = [&](const std::string& from, const std::string&, const Envelope& msg) {
    const auto* gossip = std::get_if<Gossip>(&msg.body);
    if (from != MiniNet::endpoint(1) || gossip == nullptr) return;
    ++pushes;
    const bool named = std::any_of(gossip->updates.begin(), gossip->updates.end(), [](auto& r) {
      return r.ann.endpoint == MiniNet::endpoint(1) && is_final_death(r);
    });
    if (!named) ++without_leave;
  };
  net.run([] { return false; }, 3s);
  // Its own row is queued for retransmit_mult (4) * ceil(log2 5) = 12 transmissions.
  EXPECT_GT(pushes, 12u) << "more pushes than its rumour's retransmissions";
  EXPECT_EQ(without_leave, 0u);
}

TEST(Rounds, ANodeCutOffMidJobLearnsItWasLeftOutAndRejoinsALaterRound) {
  MiniNet net(2, 3);
  for (int i = 1; i <= 3; ++i) net.add(i, elastic());
  ASSERT_TRUE(net.run([&] { return all_in_round(net, {1, 2, 3}, 0); }));
  net.cut(3, 1), net.cut(3, 2);
  ASSERT_TRUE(net.run([&] { return all_in_round(net, {1, 2}, 1); }));
  EXPECT_EQ(commit_of(net, 1, 1)->nnodes(), 2u);
  // Cut off, it sees the others die and leaves round 0 too, but alone it is no round.
  EXPECT_FALSE(commit_of(net, 3, 1));
  net.heal();
  // It hears of round 1 (its round-0 workers must stop), and as the job has room, the
  // others take it back in a later round.
  ASSERT_TRUE(net.run([&] { return net.node(3)->round() >= 1; }));
  ASSERT_TRUE(net.run([&] {
    const auto a = net.commits(3);
    return !a.empty() && a.back().round >= 2 && a.back().nnodes() == 3;
  }));
  const std::uint32_t round = net.commits(3).back().round;
  ASSERT_TRUE(net.run([&] { return all_in_round(net, {1, 2, 3}, round); }));
  expect_one_outcome(net, {1, 2, 3}, round);
}

TEST(Rounds, ASeedKilledMidJobDoesNotStopAJobGivenThreeSeeds) {
  MiniNet net(2, 3);
  NodeOptions options = elastic();
  options.seeds = {MiniNet::endpoint(1), MiniNet::endpoint(2), MiniNet::endpoint(3)};
  for (int i = 1; i <= 3; ++i) net.add(i, options);
  ASSERT_TRUE(net.run([&] { return all_in_round(net, {1, 2, 3}, 0); }));
  net.crash(1);
  ASSERT_TRUE(net.run([&] { return all_in_round(net, {2, 3}, 1); }));
  expect_one_outcome(net, {2, 3}, 1);
  // The seed restarts (a new process at its endpoint) and is taken back in.
  NodeOptions restarted = options;
  restarted.generation = 2;
  net.add(1, restarted);
  ASSERT_TRUE(net.run([&] {
    const auto a = net.commits(1);
    return !a.empty() && a.back().nnodes() == 3;
  }));
  const std::uint32_t round = net.commits(1).back().round;
  ASSERT_TRUE(net.run([&] { return all_in_round(net, {1, 2, 3}, round); }));
  expect_one_outcome(net, {1, 2, 3}, round);
}

TEST(Rounds, ANodeWhoseRestartsAreExhaustedEndsTheJobForEveryMember) {
  MiniNet net(3, 3);
  for (int i = 1; i <= 3; ++i) net.add(i, elastic());
  ASSERT_TRUE(net.run([&] { return all_in_round(net, {1, 2, 3}, 0); }));
  net.node(2)->abort(net.now(), 4, 137);
  ASSERT_TRUE(net.run([&] {
    return net.find_event<JobEnded>(1) != nullptr && net.find_event<JobEnded>(3) != nullptr;
  }));
  for (int i : {1, 3}) {
    const JobEnded* ended = net.find_event<JobEnded>(i);
    EXPECT_TRUE(ended->failed);
    EXPECT_EQ(ended->peer, MiniNet::endpoint(2));
    EXPECT_EQ(ended->rank, 4u);
    EXPECT_EQ(ended->status, 137);
  }
  EXPECT_FALSE(net.find_event<JobEnded>(2));  // it knows: it ended the job
  // Its exit is no crash to re-form around: no round 1 anywhere.
  net.crash(2);
  net.run([] { return false; }, 20s);
  EXPECT_EQ(net.node(1)->round(), 0u);
  EXPECT_EQ(net.node(3)->round(), 0u);
  // The others leave too; the job is over for all.
  net.node(1)->leave(net.now());
  net.node(3)->leave(net.now());
  ASSERT_TRUE(net.run([&] { return net.node(1)->job_finished() && net.node(3)->job_finished(); }));
}

TEST(Rounds, ANodeStartedAfterTheJobFinishedIsToldSoByTheSeed) {
  MiniNet net(2, 2);
  net.seed = MiniNet::endpoint(9);
  net.add(9, {.seed_only = true});
  net.add(1, elastic()), net.add(2, elastic());
  ASSERT_TRUE(net.run([&] { return all_in_round(net, {1, 2}, 0); }));
  net.node(1)->leave(net.now());
  net.node(2)->leave(net.now());
  ASSERT_TRUE(net.run([&] { return net.node(1)->job_finished() && net.node(2)->job_finished(); }));
  net.run([] { return false; }, 2s);  // the leaves spread; then the agents exit
  net.crash(1), net.crash(2);
  net.add(3, elastic());
  ASSERT_TRUE(net.run([&] { return net.find_event<JobEnded>(3) != nullptr; }));
  EXPECT_FALSE(net.find_event<JobEnded>(3)->failed);
  EXPECT_TRUE(net.commits(3).empty());
}

TEST(Rounds, ANodeStartedAfterAFailedJobIsToldWhoFailedIt) {
  MiniNet net(2, 2);
  net.add(1, elastic()), net.add(2, elastic());
  ASSERT_TRUE(net.run([&] { return all_in_round(net, {1, 2}, 0); }));
  net.node(2)->abort(net.now(), 1, 1);
  ASSERT_TRUE(net.run([&] { return net.find_event<JobEnded>(1) != nullptr; }));
  net.node(1)->leave(net.now());  // the seed node answers while it waits for the others
  net.add(3, elastic());
  ASSERT_TRUE(net.run([&] { return net.find_event<JobEnded>(3) != nullptr; }));
  const JobEnded* ended = net.find_event<JobEnded>(3);
  EXPECT_TRUE(ended->failed);
  EXPECT_EQ(ended->peer, MiniNet::endpoint(2));
  EXPECT_EQ(ended->rank, 1u);
  EXPECT_EQ(ended->status, 1);
}

// The seed node was starting a round of its own when the job failed, so it answers a late
// node's Join itself (it committed no view to answer from): its own leave and the abort
// reach the late node in one reply, the leave first. The abort outranks the leave there too.
TEST(Rounds, ANodeStartedAfterAFailedJobIsToldWhoFailedItByASeedBetweenRounds) {
  MiniNet net(2, 2);
  net.add(1, elastic()), net.add(2, elastic());
  ASSERT_TRUE(net.run([&] { return all_in_round(net, {1, 2}, 0); }));
  ASSERT_TRUE(net.node(1)->request_next_round(net.now()));  // its workers failed too
  net.node(2)->abort(net.now(), 1, 3);
  ASSERT_TRUE(net.run([&] { return net.find_event<JobEnded>(1) != nullptr; }));
  EXPECT_EQ(net.node(1)->round(), 1u);
  EXPECT_TRUE(commit_of(net, 1, 1) == std::nullopt);
  net.node(1)->leave(net.now());
  net.crash(2);
  net.add(3, elastic());
  ASSERT_TRUE(net.run([&] { return net.find_event<JobEnded>(3) != nullptr; }));
  std::vector<JobEnded> ended;
  for (const auto& event : net.events(3)) {
    if (auto* e = std::get_if<JobEnded>(&event)) ended.push_back(*e);
  }
  ASSERT_FALSE(ended.empty());
  EXPECT_TRUE(ended.back().failed);  // what the node reports (the runtime keeps the last)
  EXPECT_EQ(ended.back().peer, MiniNet::endpoint(2));
  EXPECT_EQ(ended.back().status, 3);
}

TEST(Rounds, AMemberStillInTheJobIsNotToldItFinishedWhenAnotherLeaves) {
  MiniNet net(2, 2);
  net.add(1, elastic()), net.add(2, elastic());
  ASSERT_TRUE(net.run([&] { return all_in_round(net, {1, 2}, 0); }));
  net.node(2)->leave(net.now());
  net.run([] { return false; }, 5s);
  EXPECT_FALSE(net.find_event<JobEnded>(1));
  EXPECT_FALSE(net.node(1)->job_finished());
}

// A round after the first waits a few gossip periods, not --last-call again
// (later_round_last_call): the survivors of a death re-form as soon as they know of it.
TEST(Rounds, ARoundAfterTheFirstDoesNotWaitTheWholeLastCall) {
  MiniNet net(2, 3);
  net.last_call = 60s;
  for (int i = 1; i <= 3; ++i) net.add(i, elastic());
  ASSERT_TRUE(net.run([&] { return all_in_round(net, {1, 2, 3}, 0); }, 10s));  // MAX: no wait
  net.crash(3);
  ASSERT_TRUE(net.run([&] { return all_in_round(net, {1, 2}, 1); }, 20s));
  expect_one_outcome(net, {1, 2}, 1);
  EXPECT_EQ(commit_of(net, 1, 1)->nnodes(), 2u);
}

// A later round with nobody new to admit (a death, a worker failure) waits one gossip period
// for the news to reach the others (AgreementConfig::settle), not later_round_last_call; one
// with a newcomer waits that whole last call, so that nodes started together join together.
TEST(Rounds, ARoundWithNobodyNewWaitsOneGossipPeriodAndOneWithANewcomerTheLastCall) {
  const Timing timing = Timing::local();
  const Time later_last_call = std::chrono::duration_cast<Time>(5 * timing.gossip_interval);
  auto round_took = [](MiniNet& net, int i, std::uint32_t round) -> std::optional<Time> {
    std::optional<Time> started;
    if (!net.run([&] { return round_started(net, i, round) != nullptr; })) return std::nullopt;
    started = net.now();
    if (!net.run([&] { return commit_of(net, i, round).has_value(); })) return std::nullopt;
    return net.now() - *started;
  };

  MiniNet shrink(2, 3);
  for (int i = 1; i <= 3; ++i) shrink.add(i, elastic());
  ASSERT_TRUE(shrink.run([&] { return all_in_round(shrink, {1, 2, 3}, 0); }));
  shrink.crash(3);
  const auto after_death = round_took(shrink, 1, 1);
  ASSERT_TRUE(after_death);
  expect_one_outcome(shrink, {1, 2}, 1);
  EXPECT_LT(*after_death, later_last_call);

  MiniNet grow(2, 4);  // three of four after the arrival: a last call
  grow.last_call = 500ms;
  grow.add(1, elastic()), grow.add(2, elastic());
  ASSERT_TRUE(grow.run([&] { return all_in_round(grow, {1, 2}, 0); }));
  grow.add(3, elastic());
  const auto after_arrival = round_took(grow, 1, 1);
  ASSERT_TRUE(after_arrival);
  expect_one_outcome(grow, {1, 2, 3}, 1);
  EXPECT_GE(*after_arrival, later_last_call);
}

/// The last round node i committed, if it is later than `after` and has `size` members.
std::optional<std::uint32_t> later_round_of_size(MiniNet& net, int i, std::uint32_t after,
                                                 std::size_t size) {
  const auto commits = net.commits(i);
  if (commits.empty() || commits.back().round <= after || commits.back().nnodes() != size)
    return std::nullopt;
  return commits.back().round;
}

NodeOptions three_seeds() {
  NodeOptions options;
  options.elastic = true;
  options.seeds = {MiniNet::endpoint(1), MiniNet::endpoint(2), MiniNet::endpoint(3)};
  return options;
}

// Liveness (docs/simulation.md, "Elastic rounds: open failures").
// `--scenario elastic --nodes 3 --seed 441`: a seed restarts while its messages to the others
// are lost. The others still gossip to its dead generation, so the first Gossip that reaches
// the new process makes it joined, with no row in its table but its own, and tells it of a
// round that committed without it (below MAX: it awaits the next one, and so stops meeting
// the seeds). It sent nothing again, and the others never learned of the new process. A
// joined node with no live peer and no outcome asks the seeds again, listed seeds included.
TEST(Rounds, RestartedSeedMadeJoinedByGossipToItsDeadProcessAsksTheSeedsAgain) {
  MiniNet net(2, 3);
  for (int i = 1; i <= 3; ++i) net.add(i, three_seeds());
  ASSERT_TRUE(net.run([&] { return all_in_round(net, {1, 2, 3}, 0); }));
  net.crash(3);
  ASSERT_TRUE(net.run([&] { return all_in_round(net, {1, 2}, 1); }));
  // Until their rumours are spent: what reaches the dead process then is its own row.
  net.run([] { return false; }, 3s);
  net.cut_one_way(3, 1), net.cut_one_way(3, 2);
  NodeOptions restarted = three_seeds();
  restarted.generation = 2;
  net.add(3, restarted);
  ASSERT_TRUE(net.run([&] { return net.node(3)->joined() && net.node(3)->round() >= 1; }));
  net.heal();
  ASSERT_TRUE(net.run([&] { return later_round_of_size(net, 3, 1, 3).has_value(); }));
  const std::uint32_t round = *later_round_of_size(net, 3, 1, 3);
  ASSERT_TRUE(net.run([&] { return all_in_round(net, {1, 2, 3}, round); }));
  for (int i : {1, 2})
    EXPECT_EQ(endpoints(*commit_of(net, i, round)), endpoints(*commit_of(net, 3, round)));
}

}  // namespace
}  // namespace gossip_rdzv::protocol::testing
