// The checker itself, fed by hand: a divergent commit, a bad rank, a stranded node must each
// be caught, or the simulator's "pass" means nothing.
#include "sim/checker.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "protocol/rank_assignment.hpp"

namespace gossip_rdzv::sim {
namespace {

using protocol::Announcement;
using protocol::MemberKey;

Announcement ann(int i, std::int32_t hint = -1) {
  Announcement a;
  a.endpoint = "10.0.0." + std::to_string(i + 1) + ":29400";
  a.node_id = 1000 + static_cast<std::uint64_t>(i);
  a.generation = 1;
  a.host = "10.0.0." + std::to_string(i + 1);
  a.hostname = "node" + std::to_string(i);
  a.nproc = 2;
  a.rank_hint = hint;
  a.master_port = 29500;
  return a;
}

MemberKey key(const Announcement& a) {
  return {a.endpoint, a.generation};
}

Assignment assignment_for(const std::vector<Announcement>& members, const Announcement& self) {
  auto result = protocol::assign_ranks(members, self.endpoint, "sim", 0);
  return std::get<Assignment>(result);
}

struct CheckerTest : ::testing::Test {
  Checker checker{CheckerConfig{"sim", 3, 3}};
  std::vector<Announcement> nodes = {ann(0), ann(1), ann(2), ann(3)};

  void SetUp() override {
    for (std::size_t i = 0; i < nodes.size(); ++i) checker.on_start(nodes[i], i, false, Time(0));
  }
  void commit(int who, const std::vector<Announcement>& view) {
    checker.on_event(key(nodes[who]), protocol::Committed{assignment_for(view, nodes[who])},
                     Time(10));
  }
};

TEST_F(CheckerTest, IdenticalCommitsPass) {
  const std::vector<Announcement> view = {nodes[0], nodes[1], nodes[2]};
  for (int i = 0; i < 3; ++i) commit(i, view);
  checker.on_event(key(nodes[3]), protocol::NotAdmitted{0, 3}, Time(11));
  checker.finish(Time(20), Time(100), true);
  EXPECT_TRUE(checker.passed()) << checker.failures().front().what;
  ASSERT_EQ(checker.views().size(), 1u);
  EXPECT_EQ(checker.views()[0].committers.size(), 3u);
  // The three commits are one assignment: verified once, compared twice.
  EXPECT_EQ(checker.views()[0].verified.size(), 1u);
}

// A commit that differs from a verified assignment in a node id alone is another
// assignment: checked in full (it does not match what the node announced) and a second
// outcome of the round.
TEST_F(CheckerTest, CommitDifferingFromAVerifiedViewOnlyInANodeIdIsAnotherOutcome) {
  const std::vector<Announcement> view = {nodes[0], nodes[1], nodes[2]};
  commit(0, view);
  ASSERT_TRUE(checker.passed());
  Assignment a = assignment_for(view, nodes[1]);
  a.nodes[2].node_id += 1;
  checker.on_event(key(nodes[1]), protocol::Committed{a}, Time(10));
  ASSERT_TRUE(checker.has_safety_failure());
  EXPECT_NE(checker.failures().front().what.find("does not match what"), std::string::npos)
      << checker.failures().front().what;
  EXPECT_NE(checker.failures().back().what.find("AGREEMENT"), std::string::npos);
  EXPECT_NE(checker.failures().back().what.find("nodes[2].node_id"), std::string::npos)
      << checker.failures().back().what;
  EXPECT_EQ(checker.views().size(), 2u);
}

TEST_F(CheckerTest, CommitOfAVerifiedViewMustStillNameItself) {
  const std::vector<Announcement> view = {nodes[0], nodes[1], nodes[2]};
  commit(0, view);
  Assignment a = assignment_for(view, nodes[0]);  // nodes[1] commits node 0's my_node_rank
  checker.on_event(key(nodes[1]), protocol::Committed{a}, Time(10));
  ASSERT_TRUE(checker.has_safety_failure());
  EXPECT_NE(checker.failures()[0].what.find("not naming itself"), std::string::npos);
}

TEST_F(CheckerTest, AllMembersJoinedCountsRunningMembersOnly) {
  EXPECT_FALSE(checker.all_members_joined());
  for (int i = 0; i < 3; ++i) checker.on_event(key(nodes[i]), protocol::JoinedCluster{}, Time(1));
  EXPECT_FALSE(checker.all_members_joined());
  checker.on_crash(key(nodes[3]), Time(2));
  EXPECT_TRUE(checker.all_members_joined());
  checker.on_start(ann(4), 4, true, Time(3));  // a dedicated seed does not join
  EXPECT_TRUE(checker.all_members_joined());
  const Announcement late = ann(5);
  checker.on_start(late, 5, false, Time(3));
  EXPECT_FALSE(checker.all_members_joined());
  checker.on_exit(key(late), Time(4));
  checker.on_exit(key(late), Time(5));  // twice: counted once
  EXPECT_TRUE(checker.all_members_joined());
}

// The checker remembers the life of the previous event; a copy must not use the original's.
TEST_F(CheckerTest, CopyRecordsEventsInItsOwnLives) {
  checker.on_event(key(nodes[0]), protocol::JoinedCluster{}, Time(1));
  Checker copy = checker;
  copy.on_event(key(nodes[0]), protocol::NotAdmitted{0, 3}, Time(2));
  EXPECT_EQ(copy.lives().at(key(nodes[0])).outcome, LifeRecord::Outcome::not_admitted);
  EXPECT_EQ(checker.lives().at(key(nodes[0])).outcome, LifeRecord::Outcome::none);
}

TEST_F(CheckerTest, DivergentCommitsAreASafetyFailure) {
  commit(0, {nodes[0], nodes[1], nodes[2]});
  commit(1, {nodes[0], nodes[1], nodes[3]});
  EXPECT_TRUE(checker.has_safety_failure());
  EXPECT_NE(checker.failures()[0].what.find("AGREEMENT"), std::string::npos);
}

TEST_F(CheckerTest, NotAdmittedMemberOfTheViewIsASafetyFailure) {
  checker.on_event(key(nodes[2]), protocol::NotAdmitted{0, 3}, Time(5));
  commit(0, {nodes[0], nodes[1], nodes[2]});
  EXPECT_TRUE(checker.has_safety_failure());
}

TEST_F(CheckerTest, WrongRankOffsetIsASafetyFailure) {
  Assignment a = assignment_for({nodes[0], nodes[1], nodes[2]}, nodes[0]);
  a.nodes[1].rank_offset += 1;
  checker.on_event(key(nodes[0]), protocol::Committed{a}, Time(10));
  EXPECT_TRUE(checker.has_safety_failure());
}

TEST_F(CheckerTest, UnknownMemberIsASafetyFailure) {
  Assignment a = assignment_for({nodes[0], nodes[1], nodes[2]}, nodes[0]);
  a.nodes[2].generation = 7;
  checker.on_event(key(nodes[0]), protocol::Committed{a}, Time(10));
  EXPECT_TRUE(checker.has_safety_failure());
}

TEST_F(CheckerTest, MissingOutcomeIsLivenessOnlyWhenRequired) {
  commit(0, {nodes[0], nodes[1], nodes[2]});
  commit(1, {nodes[0], nodes[1], nodes[2]});
  commit(2, {nodes[0], nodes[1], nodes[2]});
  Checker relaxed = checker;
  relaxed.finish(Time(20), Time(100), false);
  EXPECT_TRUE(relaxed.passed());
  checker.finish(Time(20), Time(100), true);  // node 3 never heard
  ASSERT_FALSE(checker.passed());
  EXPECT_EQ(checker.failures()[0].kind, FailureKind::liveness);
  EXPECT_FALSE(checker.has_safety_failure());
}

TEST_F(CheckerTest, StrandedViewMemberIsLivenessEvenBelowMin) {
  commit(0, {nodes[0], nodes[1], nodes[2]});
  checker.finish(Time(20), Time(100), false);
  ASSERT_FALSE(checker.passed());
  EXPECT_NE(checker.failures()[0].what.find("stranded"), std::string::npos);
}

TEST_F(CheckerTest, CrashedMembersAreExempt) {
  commit(0, {nodes[0], nodes[1], nodes[2]});
  commit(1, {nodes[0], nodes[1], nodes[2]});
  checker.on_crash(key(nodes[2]), Time(15));
  checker.on_crash(key(nodes[3]), Time(15));
  checker.finish(Time(20), Time(100), true);
  EXPECT_TRUE(checker.passed());
}

// Termination asks nothing of a process that no node knowing the outcome could reach; the
// exceptions must stay that narrow, or a stuck round would hide behind them.
struct BeyondReachTest : CheckerTest {
  Reachability reach;
  std::vector<std::pair<Time, Time>> cuts_3;  ///< when slot 3 is cut off from everyone

  void SetUp() override {
    CheckerTest::SetUp();
    reach.seeds = {{}, {0}, {0}, {0}};
    reach.gone_for_good = {false, false, false, false};
    reach.min_window = Time(5);
    reach.longest_reachable = [this](std::size_t a, std::size_t b, Time from, Time until) {
      if (a != 3 && b != 3) return until - from;
      Time longest{0}, open = from;  // one cut at most in these tests
      for (const auto& [cut_from, cut_until] : cuts_3) {
        longest = std::max(longest, std::clamp(cut_from, from, until) - open);
        open = std::clamp(cut_until, from, until);
      }
      return std::max(longest, until - open);
    };
    for (int i = 0; i < 3; ++i) commit(i, {nodes[0], nodes[1], nodes[2]});  // at 10
  }
  void exit_committers(Time at) {
    for (int i = 0; i < 3; ++i) checker.on_exit(key(nodes[i]), at);
  }
};

TEST_F(BeyondReachTest, ProcessCutOffUntilEveryCommitterLeftIsExcusedWithANote) {
  exit_committers(Time(30));
  cuts_3 = {{Time(5), Time(50)}};
  const auto beyond = checker.beyond_reach(reach);
  ASSERT_EQ(beyond.size(), 1u);
  EXPECT_NE(beyond.begin()->second.find("reachable from no node"), std::string::npos);
  checker.finish(Time(60), Time(100), true, true, beyond);
  EXPECT_TRUE(checker.passed()) << checker.failures().front().what;
  ASSERT_EQ(checker.notes().size(), 1u);
  EXPECT_NE(checker.notes()[0].find("join timeout"), std::string::npos);
}

TEST_F(BeyondReachTest, ProcessIsOwedAnOutcomeOnceReachableForTheWindow) {
  exit_committers(Time(30));
  cuts_3 = {{Time(5), Time(26)}};  // reachable 4 µs after the heal: shorter than the window
  EXPECT_EQ(checker.beyond_reach(reach).size(), 1u);
  cuts_3 = {{Time(5), Time(25)}};  // 5 µs: long enough to be heard
  EXPECT_TRUE(checker.beyond_reach(reach).empty());
  checker.finish(Time(60), Time(100), true, true, checker.beyond_reach(reach));
  ASSERT_FALSE(checker.passed());
  EXPECT_EQ(checker.failures()[0].kind, FailureKind::outsider);
}

TEST_F(BeyondReachTest, CommitterStillRunningCanAlwaysTell) {
  cuts_3 = {{Time(0), Time::max()}};
  checker.on_exit(key(nodes[0]), Time(30));
  checker.on_exit(key(nodes[1]), Time(30));  // node 2 never exits
  EXPECT_TRUE(checker.beyond_reach(reach).empty());
}

TEST_F(BeyondReachTest, ProcessStartedAfterEveryCommitterLeftIsExcused) {
  exit_committers(Time(30));
  checker.on_crash(key(nodes[3]), Time(31));
  Announcement again = nodes[3];
  again.generation = 2;
  checker.on_start(again, 3, false, Time(40));
  const auto beyond = checker.beyond_reach(reach);
  ASSERT_EQ(beyond.size(), 1u);
  EXPECT_EQ(beyond.begin()->first, key(again));
  EXPECT_NE(beyond.begin()->second.find("after every node that committed had exited"),
            std::string::npos);
}

TEST(CheckerBeyondReach, NeverJoinedBehindASeedGoneForGoodIsExcusedOnlyThen) {
  Checker checker{CheckerConfig{"sim", 3, 3}};
  const std::vector<Announcement> n = {ann(0), ann(1), ann(2)};
  for (std::size_t i = 0; i < n.size(); ++i) checker.on_start(n[i], i, false, Time(0));
  checker.on_event(key(n[1]), protocol::JoinedCluster{n[0].endpoint}, Time(1));
  checker.on_crash(key(n[0]), Time(2));
  Reachability reach;
  reach.seeds = {{}, {0}, {0}};
  reach.gone_for_good = {false, false, false};  // the seed comes back
  EXPECT_TRUE(checker.beyond_reach(reach).empty());
  reach.gone_for_good = {true, false, false};
  const auto beyond = checker.beyond_reach(reach);
  ASSERT_EQ(beyond.size(), 1u);  // node 2; node 1 joined and knows others
  EXPECT_EQ(beyond.begin()->first, key(n[2]));
  EXPECT_NE(beyond.begin()->second.find("never joined"), std::string::npos);
}

TEST_F(BeyondReachTest, ProcessWhosePacketsWereAllLostIsExcused) {
  exit_committers(Time(30));
  EXPECT_TRUE(checker.beyond_reach(reach).empty());  // reachable all along: owed
  reach.never_connected = {false, false, false, true};
  const auto beyond = checker.beyond_reach(reach);
  ASSERT_EQ(beyond.size(), 1u);
  EXPECT_NE(beyond.begin()->second.find("lost every packet"), std::string::npos);
}

// --nnodes 2:4 cut in two: two groups that share no member are two outcomes of the round
// as much as two overlapping views are. No scenario excuses them.
TEST(CheckerAgreement, DisjointCommittedViewsAreASafetyFailure) {
  Checker checker{CheckerConfig{"sim", 2, 4}};
  std::vector<Announcement> n = {ann(0), ann(1), ann(2), ann(3)};
  for (std::size_t i = 0; i < n.size(); ++i) checker.on_start(n[i], i, false, Time(0));
  auto commit = [&](int who, const std::vector<Announcement>& view) {
    checker.on_event(key(n[who]), protocol::Committed{assignment_for(view, n[who])}, Time(1));
  };
  commit(0, {n[0], n[1]});
  commit(1, {n[0], n[1]});
  EXPECT_TRUE(checker.passed());
  commit(2, {n[2], n[3]});
  ASSERT_TRUE(checker.has_safety_failure());
  EXPECT_NE(checker.failures()[0].what.find("AGREEMENT"), std::string::npos);
  EXPECT_EQ(checker.views().size(), 2u);
  checker.finish(Time(2), Time(100), false);
  EXPECT_TRUE(checker.notes().empty());
}

// Two nodes A (node rank 0) and B: node `victim` commits {A, B} and is killed; it restarts
// as generation 2 with the port its new process picked (`port`), and the other node commits
// the view with it. Returns the failures: the killed process's commit counts though it crashed.
std::vector<Failure> commit_crash_restart_commit(int victim, std::uint16_t port) {
  Checker checker{CheckerConfig{"sim", 2, 2}};
  std::vector<Announcement> n = {ann(0), ann(1)};
  n[0].master_port = 31001;
  for (std::size_t i = 0; i < n.size(); ++i) checker.on_start(n[i], i, false, Time(0));
  const Assignment first = assignment_for(n, n[victim]);
  EXPECT_EQ(first.nodes[0].endpoint, n[0].endpoint);
  checker.on_event(key(n[victim]), protocol::Committed{first}, Time(1));
  checker.on_crash(key(n[victim]), Time(1));
  n[victim].generation = 2;
  n[victim].node_id = 5000;
  n[victim].master_port = port;
  checker.on_start(n[victim], static_cast<std::size_t>(victim), false, Time(2));
  const int other = 1 - victim;
  checker.on_event(key(n[other]), protocol::Committed{assignment_for(n, n[other])}, Time(3));
  EXPECT_TRUE(checker.has_safety_failure());
  return checker.failures();
}

// The one-vote hole: A commits {A, B} and is killed, B commits {A2, B}. Same endpoints,
// ranks and hosts; the master port (and A's generation) differ.
TEST(CheckerAgreement, CrashedCommitterWithAnotherMasterPortIsASafetyFailure) {
  const auto failures = commit_crash_restart_commit(0, 47002);
  ASSERT_EQ(failures.size(), 1u) << failures.back().what;
  EXPECT_NE(failures[0].what.find("AGREEMENT"), std::string::npos) << failures[0].what;
  EXPECT_NE(failures[0].what.find("master_port: 31001 vs 47002"), std::string::npos)
      << failures[0].what;
}

// The same with B killed and restarted at node rank 1: only its generation (and node id)
// tells the two assignments apart, and that is enough.
TEST(CheckerAgreement, AnotherGenerationOfAMemberIsASafetyFailure) {
  const auto failures = commit_crash_restart_commit(1, 47002);
  ASSERT_EQ(failures.size(), 1u) << failures.back().what;
  EXPECT_NE(failures[0].what.find("nodes[1].generation: 1 vs 2"), std::string::npos)
      << failures[0].what;
}

TEST(CheckerSeed, DedicatedSeedInAViewIsASafetyFailure) {
  Checker checker{CheckerConfig{"sim", 2, 2}};
  const Announcement a = ann(0), seed = ann(1);
  checker.on_start(a, 0, false, Time(0));
  checker.on_start(seed, 1, true, Time(0));
  checker.on_event(key(a), protocol::Committed{assignment_for({a, seed}, a)}, Time(1));
  EXPECT_TRUE(checker.has_safety_failure());
}

TEST(CheckerHints, IgnoredHintIsASafetyFailure) {
  Checker checker{CheckerConfig{"sim", 2, 2}};
  const Announcement a = ann(0), b = ann(1, 0);  // b asks for node rank 0
  checker.on_start(a, 0, false, Time(0));
  checker.on_start(b, 1, false, Time(0));
  Assignment honoured = assignment_for({a, b}, a);
  ASSERT_EQ(honoured.nodes[0].endpoint, b.endpoint);
  Assignment ignored = honoured;
  std::swap(ignored.nodes[0], ignored.nodes[1]);
  ignored.nodes[0].node_rank = 0;
  ignored.nodes[1].node_rank = 1;
  ignored.master_addr = ignored.nodes[0].host;
  ignored.my_node_rank = 0;
  checker.on_event(key(a), protocol::Committed{ignored}, Time(1));
  EXPECT_TRUE(checker.has_safety_failure());
}

// ---- elastic rounds ----------------------------------------------------------------------------

Assignment in_round(const std::vector<Announcement>& members, const Announcement& self,
                    std::uint32_t round) {
  return std::get<Assignment>(protocol::assign_ranks(members, self.endpoint, "sim", round));
}

bool any_failure_says(const Checker& checker, const std::string& text) {
  return std::any_of(checker.failures().begin(), checker.failures().end(),
                     [&](const Failure& f) { return f.what.find(text) != std::string::npos; });
}

struct ElasticCheckerTest : ::testing::Test {
  Checker checker{CheckerConfig{"sim", 2, 4}};
  std::vector<Announcement> nodes = {ann(0), ann(1), ann(2), ann(3)};

  void SetUp() override {
    for (std::size_t i = 0; i < nodes.size(); ++i) checker.on_start(nodes[i], i, false, Time(0));
  }
  void start_round(int who, std::uint32_t round, Time at) {
    checker.on_event(key(nodes[who]),
                     protocol::RoundStarted{round, protocol::RoundReason::member_dead, {}}, at);
  }
  void commit(int who, const std::vector<Announcement>& view, std::uint32_t round, Time at) {
    checker.on_event(key(nodes[who]), protocol::Committed{in_round(view, nodes[who], round)}, at);
  }
};

// One life commits round 0, moves on and commits round 1 with a smaller view: two outcomes
// of one life, each compared in full against the other committers of its round.
TEST_F(ElasticCheckerTest, OneCommitPerRoundPasses) {
  const std::vector<Announcement> r0 = {nodes[0], nodes[1], nodes[2]};
  const std::vector<Announcement> r1 = {nodes[0], nodes[2]};
  for (int i = 0; i < 3; ++i) commit(i, r0, 0, Time(10));
  for (int i : {0, 2}) start_round(i, 1, Time(20));
  for (int i : {0, 2}) commit(i, r1, 1, Time(30));
  checker.on_crash(key(nodes[1]), Time(15));
  checker.on_crash(key(nodes[3]), Time(15));
  checker.finish(Time(40), Time(100), true);
  EXPECT_TRUE(checker.passed()) << checker.failures().front().what;
  EXPECT_EQ(checker.views().size(), 2u);
  EXPECT_EQ(checker.lives().at(key(nodes[0])).committed_views.size(), 2u);
}

TEST_F(ElasticCheckerTest, TwoCommitsOfOneRoundByOneLifeFail) {
  const std::vector<Announcement> r0 = {nodes[0], nodes[1]};
  commit(0, r0, 0, Time(10));
  commit(0, r0, 0, Time(11));
  EXPECT_TRUE(any_failure_says(checker, "emitted Committed twice in round 0"));
}

TEST_F(ElasticCheckerTest, TwoViewsOfOneLaterRoundAreAnAgreementFailure) {
  const std::vector<Announcement> r0 = {nodes[0], nodes[1], nodes[2]};
  for (int i = 0; i < 3; ++i) commit(i, r0, 0, Time(10));
  for (int i = 0; i < 3; ++i) start_round(i, 1, Time(20));
  commit(0, {nodes[0], nodes[1]}, 1, Time(30));
  commit(2, {nodes[1], nodes[2]}, 1, Time(30));
  EXPECT_TRUE(checker.has_safety_failure());
  EXPECT_TRUE(any_failure_says(checker, "AGREEMENT"));
}

TEST_F(ElasticCheckerTest, RoundsOfOneLifeOnlyGoUp) {
  start_round(0, 2, Time(5));
  start_round(0, 1, Time(6));
  EXPECT_TRUE(any_failure_says(checker, "started round 1 while in round 2"));
  commit(1, {nodes[0], nodes[1]}, 1, Time(7));
  EXPECT_TRUE(any_failure_says(checker, "committed round 1 while in round 0"));
}

// A NotAdmitted bars its own round only: the node may be taken into the next one.
TEST_F(ElasticCheckerTest, NotAdmittedBarsItsRoundOnly) {
  const std::vector<Announcement> r0 = {nodes[0], nodes[1]};
  for (int i = 0; i < 2; ++i) commit(i, r0, 0, Time(10));
  checker.on_event(key(nodes[2]), protocol::NotAdmitted{0, 2}, Time(11));
  const std::vector<Announcement> r1 = {nodes[0], nodes[1], nodes[2]};
  for (int i = 0; i < 3; ++i) start_round(i, 1, Time(20));
  for (int i = 0; i < 3; ++i) commit(i, r1, 1, Time(30));
  EXPECT_TRUE(checker.passed()) << checker.failures().front().what;
  checker.on_event(key(nodes[3]), protocol::NotAdmitted{1, 3}, Time(31));
  start_round(3, 1, Time(31));  // (not a failure by itself: the round it was refused)
  commit(3, {nodes[0], nodes[3]}, 1, Time(32));
  EXPECT_TRUE(any_failure_says(checker, "after it was told NotAdmitted in that round"));
}

// Node ranks of one view in another order than assign_ranks gives, with the survivors of
// round 0 first: the ranks check catches it.
TEST_F(ElasticCheckerTest, SurvivorsSwappedAcrossRoundsFail) {
  const std::vector<Announcement> r0 = {nodes[0], nodes[1], nodes[2]};
  for (int i = 0; i < 3; ++i) commit(i, r0, 0, Time(10));
  start_round(0, 1, Time(20));
  Assignment swapped = in_round({nodes[0], nodes[2]}, nodes[0], 1);
  std::swap(swapped.nodes[0], swapped.nodes[1]);
  swapped.nodes[0].node_rank = 0;
  swapped.nodes[1].node_rank = 1;
  swapped.nodes[1].rank_offset = swapped.nodes[0].nproc;
  swapped.nodes[0].rank_offset = 0;
  swapped.master_addr = swapped.nodes[0].host;
  swapped.my_node_rank = 1;
  checker.on_event(key(nodes[0]), protocol::Committed{swapped}, Time(30));
  EXPECT_TRUE(any_failure_says(checker, "RANK ORDER"))
      << (checker.failures().empty() ? "" : checker.failures().back().what);
}

// Round 1 adds a newcomer whose host name sorts first. A member that reported round 0's
// outcome holds only views with round 0's members first, so natural order of all is a
// safety failure; the survivors first, then the newcomer, passes.
TEST_F(ElasticCheckerTest, ANewcomerComesAfterTheSurvivorsWhenAMemberKnewTheRound) {
  const std::vector<Announcement> r0 = {nodes[1], nodes[2]};
  for (int i : {1, 2}) commit(i, r0, 0, Time(10));
  for (int i : {0, 1, 2}) start_round(i, 1, Time(20));
  const std::vector<Announcement> r1 = {nodes[0], nodes[1], nodes[2]};
  checker.on_event(key(nodes[0]), protocol::Committed{in_round(r1, nodes[0], 1)}, Time(30));
  EXPECT_TRUE(any_failure_says(checker, "RANK ORDER")) << "natural order let through";

  Checker fresh{CheckerConfig{"sim", 2, 4}};
  for (std::size_t i = 0; i < nodes.size(); ++i) fresh.on_start(nodes[i], i, false, Time(0));
  for (int i : {1, 2})
    fresh.on_event(key(nodes[i]), protocol::Committed{in_round(r0, nodes[i], 0)}, Time(10));
  for (int i : {0, 1, 2})
    fresh.on_event(key(nodes[i]),
                   protocol::RoundStarted{1, protocol::RoundReason::member_arrived, {}}, Time(20));
  const std::vector<std::string> seniors = {nodes[1].endpoint, nodes[2].endpoint};
  for (int i : {0, 1, 2})
    fresh.on_event(key(nodes[i]),
                   protocol::Committed{std::get<Assignment>(
                       protocol::assign_ranks(r1, nodes[i].endpoint, "sim", 1, seniors))},
                   Time(30));
  EXPECT_TRUE(fresh.passed()) << fresh.failures().front().what;
  EXPECT_EQ(fresh.views().back().assignment.nodes.back().endpoint, nodes[0].endpoint);
}

// When no member of the new view reported the previous outcome (the only one that did
// crashed), nobody could name the seniors: natural order is allowed too, any other is not.
TEST_F(ElasticCheckerTest, WithoutAMemberThatKnewTheRoundNaturalOrderIsAllowed) {
  const std::vector<Announcement> r0 = {nodes[1], nodes[2]};
  commit(2, r0, 0, Time(10));
  checker.on_crash(key(nodes[2]), Time(11));
  for (int i : {0, 1, 3}) start_round(i, 1, Time(20));
  const std::vector<Announcement> r1 = {nodes[0], nodes[1], nodes[3]};
  commit(0, r1, 1, Time(30));  // natural order
  EXPECT_TRUE(checker.passed()) << checker.failures().front().what;
  Assignment other = in_round(r1, nodes[3], 1);
  std::swap(other.nodes[0], other.nodes[2]);  // node 3 first: neither allowed order
  for (std::uint32_t i = 0; i < 3; ++i) {
    other.nodes[i].node_rank = i;
    other.nodes[i].rank_offset = i * other.nodes[i].nproc;
  }
  other.master_addr = other.nodes[0].host;
  other.master_port = nodes[3].master_port;
  other.my_node_rank = 0;
  checker.on_event(key(nodes[3]), protocol::Committed{other}, Time(31));
  EXPECT_TRUE(any_failure_says(checker, "RANK ORDER"));
}

// A node with a hint takes its rank wherever the others fall: no order is asked of it.
TEST(ElasticChecker, HintedNodesAreLeftOutOfTheOrderCheck) {
  Checker checker{CheckerConfig{"sim", 2, 3}};
  const std::vector<Announcement> nodes = {ann(0), ann(1), ann(2, 0)};
  for (std::size_t i = 0; i < nodes.size(); ++i) checker.on_start(nodes[i], i, false, Time(0));
  checker.on_event(key(nodes[0]), protocol::Committed{in_round(nodes, nodes[0], 0)}, Time(1));
  checker.on_event(key(nodes[0]),
                   protocol::RoundStarted{1, protocol::RoundReason::workers_failed, {}}, Time(2));
  checker.on_event(key(nodes[0]), protocol::Committed{in_round({nodes[0], nodes[2]}, nodes[0], 1)},
                   Time(3));
  EXPECT_TRUE(checker.passed()) << checker.failures().front().what;
}

}  // namespace
}  // namespace gossip_rdzv::sim
