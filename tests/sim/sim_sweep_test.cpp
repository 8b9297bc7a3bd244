// The CI sweep: 1000 seeded mixed scenarios (N up to 300), every property checked, then the
// seed-list and many-member-seed sweeps. Each run is forked, so one core assertion does not hide
// the others. A failure prints the replay command; docs/simulation.md says how to investigate it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "sim_test_util.hpp"

namespace gossip_rdzv::sim {
namespace {

// GOSSIP_RDZV_SIM_SWEEP_RUNS=N caps every sweep below at its first N runs: the sanitizer
// builds (scripts/sanitize.sh), several times slower, run a trimmed sweep.
std::uint64_t capped(std::uint64_t runs) {
  if (const char* env = std::getenv("GOSSIP_RDZV_SIM_SWEEP_RUNS")) {
    return std::min<std::uint64_t>(runs, std::stoull(env));
  }
  return runs;
}

// GOSSIP_RDZV_SIM_SWEEP=FROM:TO overrides the seed range (a long run covers more).
void sweep_range(std::uint64_t& first, std::uint64_t& last) {
  first = 1;
  last = 1000;
  if (const char* env = std::getenv("GOSSIP_RDZV_SIM_SWEEP")) {
    const std::string text = env;
    const auto colon = text.find(':');
    if (colon != std::string::npos) {
      first = std::stoull(text.substr(0, colon));
      last = std::stoull(text.substr(colon + 1));
    }
  }
  last = first + capped(last - first + 1) - 1;
}

// Every run must pass: safety (agreement, ranks, validity, invariants) and termination.
// Termination asks nothing of a process that no node knowing the outcome could reach
// (Checker::beyond_reach: it started after they all left, partitions or a seed gone for good
// kept it away, or the network lost every packet it sent); such a run passes with a note.
// (docs/simulation.md keeps the measured history of this sweep.)
TEST(SimSweep, MixedScenarios) {
  std::uint64_t first = 0, last = 0;
  sweep_range(first, last);
  std::vector<std::string> unsafe, blocked, outsider, lost;
  for (std::uint64_t seed = first; seed <= last; ++seed) {
    // N cycles so that most runs are small (mix then draws 3..N): one in twenty goes up to
    // 300, one in twenty to 100, one in ten to 50.
    static constexpr std::uint32_t kNodes[] = {10, 30, 10, 50, 30, 10, 30, 10, 300, 30,
                                               10, 30, 10, 50, 30, 10, 30, 10, 100, 30};
    const auto run = testing::run_isolated("mix", kNodes[seed % 20], seed);
    if (run.passed()) continue;
    if (run.lost_decision()) {  // the documented limit: counted, not a failure
      lost.push_back(run.replay);
      std::printf("%s", run.report.c_str());
      continue;
    }
    if (run.passed_or_outsider_timeout()) {
      outsider.push_back(run.replay);
    } else if (run.status == testing::IsolatedRun::Status::failed &&
               run.worst == FailureKind::liveness) {
      blocked.push_back(run.replay);
    } else {
      unsafe.push_back(run.replay);
    }
    ADD_FAILURE() << run.report;
  }
  auto list = [](const std::vector<std::string>& runs) {
    std::string text;
    for (const auto& r : runs) text += "  " + r + "\n";
    return text;
  };
  std::printf(
      "sweep of %llu runs: %zu unsafe, %zu blocked, %zu outsider timeouts, %zu lost decisions\n"
      "%s%s%s",
      static_cast<unsigned long long>(last - first + 1), unsafe.size(), blocked.size(),
      outsider.size(), lost.size(), list(blocked).c_str(), list(outsider).c_str(),
      list(lost).c_str());
  EXPECT_TRUE(unsafe.empty()) << unsafe.size() << " runs broke safety or aborted:\n"
                              << list(unsafe);
}

// The two split-brain holes (docs/simulation.md, "Scenarios"), outside the frozen mix: every
// run must pass. A lost decision (the only processes that committed crashed and the
// survivors hold no majority of votes, which no protocol can finish; the checker decides it
// from the cores' votes, never from the scenario) is counted apart, and at most `max_lost`
// of them are accepted.
void sweep_holes(const char* name, const std::vector<std::uint32_t>& nodes, std::uint64_t runs,
                 std::size_t max_lost) {
  runs = capped(runs);
  std::vector<std::string> failed, lost;
  for (std::uint64_t seed = 1; seed <= runs; ++seed) {
    const auto run = testing::run_isolated(name, nodes[seed % nodes.size()], seed);
    if (run.passed()) continue;
    if (run.lost_decision()) {
      lost.push_back(run.replay);
      continue;
    }
    failed.push_back(run.replay);
    ADD_FAILURE() << run.report;
  }
  std::string text;
  for (const auto& r : lost) text += "  " + r + "\n";
  std::printf("%s sweep of %llu runs: %zu failed, %zu lost decisions\n%s", name,
              static_cast<unsigned long long>(runs), failed.size(), lost.size(), text.c_str());
  EXPECT_LE(lost.size(), max_lost) << "lost decisions should stay rare:\n" << text;
}

// Cut in two at every phase of the round (all joined, first ready bit, first vote, first
// commit), healed 0.2 s to 2 suspicion timeouts + 6 s later; --nnodes with 2 MIN <= MAX,
// or more than MAX processes. A side without a majority of the seeds must wait for the heal.
// Every run must pass.
TEST(SimSweep, PartitionAtEveryPhase) {
  sweep_holes("partition-at-phase", {4, 8, 4, 6, 10, 4, 8, 5}, 400, 0);
}

// The first committer killed at once and restarted at once (two nodes mostly, 0-30% loss):
// its restarted process picks another master port, so one vote deciding alone shows as two
// assignments.
TEST(SimSweep, KillTheFirstCommitter) {
  sweep_holes("kill-first-committer", {2, 2, 2, 3}, 400, 0);
}

// Member seeds that start together, listed by every node, with 0-20% loss: the mix's kinds
// are frozen (recorded seeds replay), so this kind has its own sweep. Every run must pass.
TEST(SimSweep, SeedLists) {
  std::vector<std::string> failed;
  const std::uint64_t runs = capped(300);
  for (std::uint64_t seed = 1; seed <= runs; ++seed) {
    static constexpr std::uint32_t kNodes[] = {6, 12, 30};
    const auto run = testing::run_isolated("seed-list", kNodes[seed % 3], seed);
    if (!run.passed()) {
      failed.push_back(run.replay);
      ADD_FAILURE() << run.report;
    }
  }
  std::printf("seed-list sweep of %llu runs: %zu failed\n", static_cast<unsigned long long>(runs),
              failed.size());
}

// More member seeds than gossip_fanout + 1 (6-20 of 18-60 nodes), 0-20% loss: each seed
// meets the others a few at a time and forwards its joiners to the collectors only, so the
// seeds' rows and every joiner's must still reach everyone. Every run must pass.
TEST(SimSweep, ManyMemberSeeds) {
  std::vector<std::string> failed;
  const std::uint64_t runs = capped(200);
  for (std::uint64_t seed = 1; seed <= runs; ++seed) {
    static constexpr double kLoss[] = {0.0, 0.05, 0.1, 0.2};
    ScenarioOptions options;
    options.seed_nodes = 6 + static_cast<std::uint32_t>(seed % 15);
    options.loss = kLoss[seed % 4];
    const auto run = testing::run_isolated("plain", 3 * options.seed_nodes, seed, options);
    if (!run.passed()) {
      failed.push_back(run.replay);
      ADD_FAILURE() << run.report;
    }
  }
  std::printf("many-member-seeds sweep of %llu runs: %zu failed\n",
              static_cast<unsigned long long>(runs), failed.size());
}

// Elastic jobs over many rounds (docs/simulation.md, "The elastic scenario"): --nnodes
// MIN:MAX, 1-3 member seeds, late arrivals, worker failures, crashes and restarts, partitions
// and loss drawn from the seed; after the last fault every live member must commit one round
// made of exactly the live members (and, when the scenario says so, all leave and see the job
// finished). Every round is checked as round 0 is: one outcome, compared in full.
// No run may break safety. Runs listed here would stay blocked by an open liveness bug of
// docs/simulation.md ("Elastic rounds: open failures", issue #22); they are still run and
// must fail only on liveness, and any other failing run fails the test. None is listed now.
TEST(SimSweep, ElasticRounds) {
  const std::set<std::string> known_blocked = {};
  std::vector<std::string> failed;
  const std::uint64_t runs = capped(1000);
  for (std::uint64_t seed = 1; seed <= runs; ++seed) {
    static constexpr std::uint32_t kNodes[] = {2, 3, 4, 5, 6, 8, 10, 12};
    const auto run = testing::run_isolated("elastic", kNodes[seed % 8], seed);
    if (run.passed()) continue;
    failed.push_back(run.replay);
    const bool liveness_only =
        run.status == testing::IsolatedRun::Status::failed && run.worst &&
        (*run.worst == FailureKind::liveness || *run.worst == FailureKind::outsider ||
         *run.worst == FailureKind::lost_decision);
    if (!liveness_only || known_blocked.count(run.replay) == 0) ADD_FAILURE() << run.report;
  }
  std::string text;
  for (const auto& r : failed) text += "  " + r + "\n";
  std::printf("elastic sweep of %llu runs: %zu failed (%zu known to stay blocked)\n%s",
              static_cast<unsigned long long>(runs), failed.size(), known_blocked.size(),
              text.c_str());
}

}  // namespace
}  // namespace gossip_rdzv::sim
