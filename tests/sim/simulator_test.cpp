// Every scenario on a few seeds at small N, the checker must pass; plus the seeds where the
// simulator found protocol bugs, kept as named regression tests (docs/simulation.md).
#include "sim/simulator.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "protocol/codec.hpp"

#include "sim_test_util.hpp"

namespace gossip_rdzv::sim {
namespace {

using testing::run_isolated;

void expect_seeds_pass(const std::string& name, std::uint32_t nodes, std::uint64_t first,
                       std::uint64_t last) {
  for (std::uint64_t seed = first; seed <= last; ++seed) {
    const auto run = run_isolated(name, nodes, seed);
    EXPECT_TRUE(run.passed()) << run.report;
  }
}

TEST(Simulator, SameSeedSameRun) {
  const RunResult a = run_scenario("mix", 12, 5);
  const RunResult b = run_scenario("mix", 12, 5);
  EXPECT_EQ(a.stats.steps, b.stats.steps);
  EXPECT_EQ(a.stats.end, b.stats.end);
  EXPECT_EQ(a.stats.packets_delivered, b.stats.packets_delivered);
  EXPECT_EQ(a.report(), b.report());
}

TEST(Simulator, PlainRunCommitsEveryNodeAndCountsBytes) {
  const RunResult r = run_scenario("plain", 8, 1);
  ASSERT_TRUE(r.passed) << r.report();
  EXPECT_EQ(r.stats.committed, 8u);
  EXPECT_GT(r.stats.bytes_per_node.mean, 0);
  EXPECT_GT(r.stats.seed_bytes_per_join, 0);
  EXPECT_LE(r.stats.messages_per_node.mean, r.stats.messages_per_node.max);
}

// --load: the per-type counts add up to each node's total, and the seed, which answered every
// Join (retries included), is marked and shows them.
TEST(Simulator, LoadReportCountsEveryMessageByType) {
  const RunResult r = run_scenario("plain", 8, 1);
  ASSERT_TRUE(r.passed) << r.report();
  for (const auto& t : r.stats.traffic) {
    std::uint64_t sent = 0, received = 0;
    for (auto n : t.sent_by_type) sent += n;
    for (auto n : t.received_by_type) received += n;
    EXPECT_EQ(sent, t.messages_sent);
    EXPECT_EQ(received, t.messages_received);
  }
  const auto join = static_cast<std::size_t>(protocol::MessageType::join);
  const auto reply = static_cast<std::size_t>(protocol::MessageType::join_reply);
  std::uint64_t joins_sent = 0;
  for (std::size_t slot = 1; slot < r.stats.traffic.size(); ++slot)
    joins_sent += r.stats.traffic[slot].sent_by_type[join];
  const std::uint64_t joins = r.stats.traffic[0].received_by_type[join];
  EXPECT_GE(joins, 7u) << "seven joiners, one Join each at least";
  EXPECT_EQ(joins, joins_sent) << "no loss in plain";
  EXPECT_EQ(r.stats.traffic[0].sent_by_type[reply], joins);
  const std::string report = r.load_report(8);
  EXPECT_NE(report.find("slot 0 (seed): "), std::string::npos) << report;
  const std::string counts =
      "Join 0/" + std::to_string(joins) + ", JoinReply " + std::to_string(joins) + "/0";
  EXPECT_NE(report.find(counts), std::string::npos) << report;
  EXPECT_EQ(std::count(report.begin(), report.end(), '\n'), 9) << report;
}

TEST(Simulator, CodecModesAgree) {
  SimOptions off;
  off.codec = CodecMode::off;
  SimOptions size;
  size.codec = CodecMode::size_only;
  const RunResult full = run_scenario("dup-reorder", 6, 3);
  const RunResult structs = run_scenario("dup-reorder", 6, 3, {}, off);
  const RunResult sized = run_scenario("dup-reorder", 6, 3, {}, size);
  EXPECT_EQ(full.stats.steps, structs.stats.steps);
  EXPECT_EQ(full.stats.bytes_per_node.mean, sized.stats.bytes_per_node.mean);
}

// Long runs print where they are; the wall clock paces the lines but never the run.
TEST(Simulator, ProgressLinesReportTheRunWithoutChangingIt) {
  std::FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  SimOptions options;
  options.trace_out = out;
  options.progress_every = std::chrono::milliseconds(1);
  ScenarioOptions loss;
  loss.loss = 0.1;
  const RunResult with = run_scenario("bench", 200, 1, loss, options);
  const RunResult without = run_scenario("bench", 200, 1, loss);
  ASSERT_TRUE(with.passed) << with.report();
  EXPECT_EQ(with.stats.steps, without.stats.steps);
  EXPECT_EQ(with.stats.agreement_time, without.stats.agreement_time);
  EXPECT_EQ(with.stats.messages_per_node.max, without.stats.messages_per_node.max);

  std::rewind(out);
  std::string text;
  char buffer[4096];
  while (std::fgets(buffer, sizeof buffer, out) != nullptr) text += buffer;
  std::fclose(out);
  // A 200-node run handles hundreds of thousands of events over tens of milliseconds.
  ASSERT_NE(text.find("] progress: "), std::string::npos) << text;
  EXPECT_NE(text.find(" of 200 members started, "), std::string::npos) << text;
  EXPECT_NE(text.find(" events handled, "), std::string::npos) << text;
}

// ZeroMQ queues what a node sends to an endpoint where nothing listens yet and delivers it
// once the listener is up; the simulator does the same (docs/simulation.md, "The model").
Scenario seed_starts_last(std::uint64_t seed) {
  Scenario s = make_scenario("plain", 5, seed);
  const std::size_t seed_slot = s.nodes.at(1).seeds.at(0);
  s.nodes.at(seed_slot).start = std::chrono::seconds(3);  // the others start within 0.5 s
  return s;
}

TEST(Simulator, PacketsToANodeNotYetListeningWaitForIt) {
  const RunResult r = Simulator(seed_starts_last(1)).run();
  ASSERT_TRUE(r.passed) << r.report();
  EXPECT_EQ(r.stats.committed, 5u);
  EXPECT_GE(r.stats.queued_for_listener, 4u);  // at least every joiner's first Join
  EXPECT_EQ(r.stats.released_to_listener, r.stats.queued_for_listener);
}

// 40 nodes for --nnodes 20: the extras exit at once when told NotAdmitted while members
// still gossip to them. Those packets are lost at once, not queued for a listener that
// never comes back.
TEST(Simulator, PacketsToAnExitedNodeAreNotQueued) {
  const RunResult r = run_scenario("over-max-2x", 20, 1);
  ASSERT_TRUE(r.passed) << r.report();
  EXPECT_GT(r.stats.undeliverable, 0u);
  EXPECT_EQ(r.stats.released_to_listener, r.stats.queued_for_listener);  // nobody crashed
}

TEST(Simulator, QueueLimitDropsWhatTheSenderCannotHold) {
  Scenario s = seed_starts_last(1);
  s.link.queue_limit = 0;
  const RunResult r = Simulator(s).run();
  ASSERT_TRUE(r.passed) << r.report();  // the joiners retry with backoff
  EXPECT_EQ(r.stats.queued_for_listener, 0u);
  EXPECT_GE(r.stats.undeliverable, 4u);
}

TEST(Simulator, AQueueDiesWithItsSender) {
  Scenario s = seed_starts_last(1);
  s.min_nodes = 4;
  CrashSpec crash;
  crash.slot = 4;
  crash.delay = std::chrono::seconds(1);  // after its Join was queued, before the seed is up
  s.crashes.push_back(crash);
  const RunResult r = Simulator(s).run();
  ASSERT_TRUE(r.passed) << r.report();
  EXPECT_EQ(r.stats.committed, 4u);
  EXPECT_LT(r.stats.released_to_listener, r.stats.queued_for_listener);
  EXPECT_GE(r.stats.undeliverable, r.stats.queued_for_listener - r.stats.released_to_listener);
}

TEST(Scenarios, Plain) {
  expect_seeds_pass("plain", 10, 1, 5);
}
TEST(Scenarios, PlainFifty) {
  expect_seeds_pass("plain", 50, 1, 2);
}
TEST(Scenarios, Loss10) {
  expect_seeds_pass("loss10", 10, 1, 5);
}
TEST(Scenarios, Loss30) {
  expect_seeds_pass("loss30", 10, 1, 5);
}
TEST(Scenarios, DuplicationAndReordering) {
  expect_seeds_pass("dup-reorder", 10, 1, 5);
}
TEST(Scenarios, OneMoreThanMax) {
  expect_seeds_pass("over-max", 10, 1, 5);
}
TEST(Scenarios, TwiceMax) {
  expect_seeds_pass("over-max-2x", 10, 1, 5);
}
TEST(Scenarios, JoinersAtTheEndOfTheLastCall) {
  expect_seeds_pass("last-call", 10, 1, 5);
}
TEST(Scenarios, RestartMidRound) {
  expect_seeds_pass("restart", 10, 1, 5);
}
TEST(Scenarios, CrashMidRound) {
  expect_seeds_pass("crash", 10, 1, 5);
}
TEST(Scenarios, WrongSuspicion) {
  expect_seeds_pass("wrong-suspicion", 10, 1, 5);
}
TEST(Scenarios, DedicatedSeedKilledAfterBootstrap) {
  expect_seeds_pass("seed-killed", 10, 1, 5);
}
// The seed is a member here: killed in the round, it is a member crash. Without fences every
// survivor would stay ready and wait for the dead seed's ready bit; the survivors fence the
// view and agree without it.
TEST(Scenarios, SeedMemberKilledAfterBootstrap) {
  expect_seeds_pass("seed-member-killed", 10, 1, 20);
}
TEST(Scenarios, MinAtMostHalfMaxSplit) {
  expect_seeds_pass("split", 10, 2, 6);
}
TEST(Scenarios, RankHintsAndMixedNproc) {
  expect_seeds_pass("hints", 10, 1, 5);
}
TEST(Scenarios, SeedListStartingTogether) {
  expect_seeds_pass("seed-list", 12, 1, 10);
}
TEST(Scenarios, SlowHostStartsAfterSeveralSuspicionTimeouts) {
  expect_seeds_pass("slow-host", 10, 1, 5);
}
TEST(Scenarios, PartitionAtPhase) {
  expect_seeds_pass("partition-at-phase", 8, 1, 5);
}
TEST(Scenarios, KillFirstCommitter) {
  expect_seeds_pass("kill-first-committer", 2, 1, 5);
}
TEST(Scenarios, MixSmall) {
  expect_seeds_pass("mix", 20, 1, 20);
}

// ---- regression seeds: each failed when found; the comment says what the core did. -------
// The simulator's draws changed since some were found, so a seed may no longer make the
// exact run described; the test still checks that run in full.

// 60 nodes for --nnodes 30 at 10% loss: views churn past 32 attempts and Agreement::step's
// pruning erased the *held* view: check_invariants aborted "held view was pruned". Also: an
// extra node (slot 57) was not told NotAdmitted before every committed node exited
// (LIVENESS-OUTSIDER).
TEST(Regression, HeldViewPrunedWithManyViews) {
  const auto run = run_isolated("mix", 30, 40);
  EXPECT_TRUE(run.passed()) << run.report;
}

// --nnodes 9:10, the seed node 0 crashes just after all joined: every survivor is ready on
// the 10-view and waited forever for node 0's ready bit (release_if_dead needed a member on
// a higher view, and a ready node never moves up): a crash after the ready phase blocked,
// since node 0 might have seen every ready bit and committed alone. Found as seed 33; since
// the scaling work that seed commits before the crash, and seed 10 showed the same. Fixed by
// votes: nobody commits on its own word, only on a quorum of votes, so the survivors (a
// quorum) fence the view and agree on the nine of them.
// --nnodes 2:5, one member seed, cut 2|3 just after the first vote: three members vote, the
// seed and one other fence. Three votes are a quorum of five, but the base (the one seed)
// can never vote, and two fences are no blocking set: every node stayed ready on the view
// after the heal. A view whose base endpoints fenced it can no longer win the base, so it
// is released and the next attempt commits.
TEST(Regression, SeedThatFencedAViewOfAVotingQuorumBlocksIt) {
  const auto run = run_isolated("partition-at-phase", 5, 87);
  EXPECT_TRUE(run.passed()) << run.report;
}

TEST(Regression, CrashedMemberBlockedReadyView) {
  const auto run = run_isolated("seed-member-killed", 10, 10);
  EXPECT_TRUE(run.passed()) << run.report;
}

// Found while adding votes, before the `committed` bit meant "saw a quorum": slot 5 votes and
// is cut off (0.463 s) before it sees a quorum; the others commit, see every vote, take that
// for "everyone knows", linger 1 s and exit. Slot 5 comes back to nobody: stranded in the
// committed view. Since version 2's commit bit is set only on a quorum, the others serve the
// outcome until slot 5 has it.
TEST(Regression, VoterCutOffBeforeTheQuorumIsStranded) {
  const auto run = run_isolated("wrong-suspicion", 10, 25);
  EXPECT_TRUE(run.passed()) << run.report;
}

// --nnodes 4:5: slot 2 commits first and crashes at that instant (its last pushes die with
// it), restarting as generation 2 1.9 s later. Without fences the four survivors stay ready
// on the 5-view forever (g1's ready bit never arrives); with fences alone (no strict
// majority of votes) they commit a second view with 10.0.0.3/g2: the SAFETY failure of the
// next test.
TEST(Regression, CommitterCrashBlocksSurvivors) {
  const auto run = run_isolated("restart", 5, 41);
  EXPECT_TRUE(run.passed()) << run.report;
}

// SAFETY. --nnodes 2:3: slot 2 is the first to commit (the view with 10.0.0.3/g1) and
// crashes at that instant, before its pushes leave; it restarts as generation 2 2.6 s later.
// If the survivors fenced the view whose member restarted and a single vote could commit,
// all three would commit a second view with 10.0.0.3/g2: two different assignments for
// round 0, differing in that generation (and in the master port when 10.0.0.3 is node
// rank 0). A commit needs a strict majority of votes, so this cannot happen.
TEST(Regression, FencedViewWasAlreadyCommittedByTheCrashedMember) {
  const auto run = run_isolated("restart", 3, 7);
  EXPECT_TRUE(run.passed()) << run.report;
}

// ---- the split-brain holes of issue 21: both fail (SAFETY) with the old quorum rule ("more
// than half, or exactly half including the first member") and must pass with a quorum base.

// No second outcome (SAFETY), and the round ends.
void expect_one_outcome(const std::string& name, std::uint32_t nodes, std::uint64_t seed) {
  const auto run = run_isolated(name, nodes, seed);
  EXPECT_NE(run.status, testing::IsolatedRun::Status::safety) << run.report;
  EXPECT_TRUE(run.passed()) << run.report;
}

// The one-vote hole. --nnodes 2, no loss: 10.0.0.1 (the view's first member) sees both ready
// bits, votes, and its own vote was a quorum of {10.0.0.1, 10.0.0.2}: it commits alone at
// 0.501 s with master port 35253 and is killed at that instant, before its vote leaves. It
// restarts 57 ms later as generation 2 and picks port 42301; 10.0.0.2 never saw the first
// process's vote, fences the view, and both commit {10.0.0.1/g2, 10.0.0.2}: two assignments
// for round 0 with different MASTER_PORTs. With a strict majority the first process cannot
// commit without 10.0.0.2's vote.
TEST(Regression, TwoNodeViewCommitsOnOneVote) {
  expect_one_outcome("kill-first-committer", 2, 93);
}

// Disjoint groups, 2 MIN <= MAX. --nnodes 2:8, four processes, one seed (10.0.0.1): all
// joined, cut 2|2 0.751 s later, during the last call, for 14 s. Each side buries the other
// after its suspicion timeout and commits a view of two: {.1 .2} and {.3 .4}, two outcomes
// of round 0 with two masters. Only the side with the seed may commit.
TEST(Regression, DisjointHalvesOfMinToMaxCommitDuringTheLastCall) {
  expect_one_outcome("partition-at-phase", 8, 209);
}

// The same at MIN:MAX = 2:4 with four processes, cut 2|2 as the first node sets its ready
// bit, for 12.7 s: each half buries the other (7-12 s) and commits a view of two, {.1 .4}
// at 11.2 s and {.2 .3} at 12.5 s, each with its own master.
TEST(Regression, HalvesCutAtTheFirstReadyBitEachCommit) {
  expect_one_outcome("partition-at-phase", 4, 609);
}

// More than MAX processes: --nnodes 3:4 with six, three member seeds (.1 .2 .3) listed by
// all, cut 3|3 from the start for 16.8 s: {.1 .2 .4} join through .1 and .2, {.3 .5 .6}
// through .3, and each group of MIN commits at 2.48 s. The side with one seed of three must
// wait for the heal.
TEST(Regression, MoreThanMaxProcessesFormTwoGroups) {
  expect_one_outcome("partition-at-phase", 4, 76);
}

// --nnodes 10, slot 9 isolated longer than the suspicion timeout: both sides declare the
// other dead and, after the heal, never speak again (nothing probes or gossips to dead
// members, nobody re-joins through the seed): the round never completes.
TEST(Regression, PartitionLongerThanSuspicionNeverHeals) {
  const auto run = run_isolated("wrong-suspicion", 10, 24);
  EXPECT_TRUE(run.passed()) << run.report;
}

// MIN <= MAX/2, last call ends while the held view cannot advance: next_wakeup() kept
// returning the past last_call_end_ and the node spun.
TEST(Regression, BusyLoopAfterLastCallEnds) {
  const auto run = run_isolated("split", 10, 1);
  EXPECT_TRUE(run.passed()) << run.report;
}

// The 11th node for --nnodes 10 is in join backoff when the seed commits, is done() and
// exits 2 ms later: the extra node is never told NotAdmitted (join_timeout instead).
TEST(Regression, ExtraNodeStrandedWhenSeedExits) {
  const auto run = run_isolated("over-max", 10, 20);
  EXPECT_TRUE(run.passed()) << run.report;
}

// 20 nodes for --nnodes 10: a joined extra node never hears of the commit before every
// committed node exits (it ends believing 16 members dead, holding its own view).
TEST(Regression, JoinedExtraNodeNeverToldNotAdmitted) {
  const auto run = run_isolated("over-max-2x", 10, 34);
  EXPECT_TRUE(run.passed()) << run.report;
}

// --nnodes 20:21: slot 17 crashes after commit #4 and restarts (generation 2) 1.9 s later,
// while committed nodes still serve their grace: it joins but learns no member and no
// commit, so it is never told NotAdmitted.
TEST(Regression, RestartedAfterCommitNeverToldNotAdmitted) {
  const auto run = run_isolated("mix", 30, 234);
  EXPECT_TRUE(run.passed()) << run.report;
}

// The outsider fixes of 4 December (docs/simulation.md, "Nodes outside the view"). Before
// them one run in 36 of `mix --nodes 50` ended with a live node never told its outcome:

// 66 nodes for --nnodes 33 at 10% loss: slot 16 joined but every member's one notice
// (tell_outsiders) missed it; its Gossip reached four members after the commit, and nobody
// answered it. Committed nodes answer every message of a node outside the view with the
// outcome, and stay two gossip periods after the last one.
TEST(Regression, OutsiderGossipsToMembersThatDoNotAnswer) {
  const auto run = run_isolated("mix", 50, 2);
  EXPECT_TRUE(run.passed()) << run.report;
}

// --nnodes 6:7: slot 3 crashes after the commit and restarts 1.5 s later; every member,
// the seed too, had exited 1 s after the commit. A seed stays join_backoff_max (LAN:
// 5 s) after its commit, so a process that starts or restarts meanwhile is told.
TEST(Regression, RestartAfterTheSeedLeftFindsNobody) {
  const auto run = run_isolated("mix", 50, 21);
  EXPECT_TRUE(run.passed()) << run.report;
}

// --nnodes 28, slot 6 restarts 0.9 s after it crashed post-commit: members gossip the
// outcome to its endpoint by reference (they believe its old process holds the view), which
// means nothing to the new process, and its Join's outcome was lost. Answers go to the
// sender's own process (Envelope generation), and a claim by reference to an unknown view
// makes the receiver ask for the whole one.
TEST(Regression, RestartedProcessGetsTheOutcomeByReference) {
  const auto run = run_isolated("mix", 50, 2393);
  EXPECT_TRUE(run.passed()) << run.report;
}

// 12 nodes for --nnodes 11 at 20% loss: the extra's one Join that arrived after the commit
// had its outcome lost; then the seed chose it as a PingReq helper, which made it "joined"
// with no row in its table, so it stopped asking. A joined node that knows no live peer and
// has no outcome asks the seed again.
TEST(Regression, PingReqMadeAnOutsiderJoinedWithNobodyToAsk) {
  const auto run = run_isolated("mix", 50, 6870);
  EXPECT_TRUE(run.passed()) << run.report;
}

// 34 nodes for --nnodes 17 at 20% loss: slot 30's only Join to arrive came after the commit
// and its answer was lost; its next three Joins (backoff 0.3, 0.8, 1.6 s) were lost too
// before the seed left. A seed tells the outsiders it knows again once a probe interval.
TEST(Regression, LateJoinerWhoseAnswerWasLostIsToldAgain) {
  const auto run = run_isolated("mix", 50, 7554);
  EXPECT_TRUE(run.passed()) << run.report;
}

// Five nodes listing four member seeds (slots 0-3), all starting within 0.5 s: 10.0.0.3 and
// 10.0.0.4 meet first; 10.0.0.5 joins through 10.0.0.2 and 10.0.0.1 through one of those.
// Every node stops joining once joined, so the groups {.1 .2 .5} and {.3 .4} never hear of
// each other and nobody commits (LIVENESS). A member that is a seed keeps joining the
// other seeds until each is in its table.
TEST(Regression, SeedsThatMeetDifferentPartnersFormTwoGroups) {
  ScenarioOptions options;
  options.seed_nodes = 4;
  const auto run = run_isolated("plain", 5, 1, options);
  EXPECT_TRUE(run.passed()) << run.report;
}

// 2,000 nodes at 30% loss wait 36 s for a slow host (--scenario slow-host --nodes 2000
// --seed 1 --loss 0.3). SWIM suspected a live member after one unanswered probe period: 22%
// of the probes at 30% loss, and every suspicion and every refutation is gossiped to all
// members, more than the piggyback can carry. Live members were declared dead 16 times
// (first at 22.1 s; 32.7 million MemberSuspected events); at 10,000 nodes three live members
// were buried for everyone at 18 s. Fixed (3 Dec): a second direct ping at the probe
// timeout, two unanswered rounds in a row before suspecting, and a ping to a suspect carries
// the suspicion (docs/protocol.md, "Why two rounds"): no burial, 1.44 million suspicions
// learned, 8,621 messages per node instead of 21,937. The one large run in CI: about 2.7 min
// of CPU, in process (no fork) with the codec off and invariants every 1000 steps.
TEST(Regression, LossAloneBuriesLiveMembersWhileASlowHostIsAwaited) {
  ScenarioOptions scenario_options;
  scenario_options.loss = 0.3;
  SimOptions options;
  options.codec = CodecMode::off;
  options.invariant_every = 1000;
  const auto r = run_scenario("slow-host", 2000, 1, scenario_options, options);
  std::printf("%s\nsuspected %llu, buried %llu\n", r.summary_line().c_str(),
              static_cast<unsigned long long>(r.stats.suspected_running),
              static_cast<unsigned long long>(r.stats.buried_running));
  EXPECT_TRUE(r.passed) << r.report();
  EXPECT_EQ(r.stats.buried_running, 0u) << r.report();
  // Learned suspicions of running members: 32.7 million before, 1.44 million since.
  EXPECT_LT(r.stats.suspected_running, 5'000'000u);
}

// An elastic job goes through many rounds (a worker failure, a crash and restart, two
// arrivals: rounds 0-5 at --nodes 6 --seed 27) and every member leaves at the end: the run
// passes only if each round had one outcome and the last one holds every live member.
TEST(Elastic, ManyRoundsEachWithOneOutcomeAndTheJobEnds) {
  const RunResult r = run_scenario("elastic", 6, 27);
  EXPECT_TRUE(r.passed) << r.report();
  EXPECT_TRUE(r.scenario.leave_at_end);
  // One commit per member per round: far more than one per process.
  EXPECT_GE(r.stats.committed, 25u);
}

}  // namespace
}  // namespace gossip_rdzv::sim
