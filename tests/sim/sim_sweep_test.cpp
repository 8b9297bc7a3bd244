// The CI sweep: ~1000 seeded mixed scenarios (N up to 100), every property checked. Each run
// is forked, so one core assertion does not hide the others. A failure prints the replay
// command; docs/simulation.md says how to investigate it.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "sim_test_util.hpp"

namespace gossip_rdzv::sim {
namespace {

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
}

// Safety (agreement, ranks, validity, invariants) must hold in every run. Liveness has
// documented limits (docs/simulation.md): a node outside the view that nobody was left to
// tell, and a round blocked by a member gone for good (the only seed dead before every node
// joined, a member cut off past the others' commit grace; before votes also any member that
// crashed after the others were ready). A blocked run of any other scenario fails here. Their
// counts are deterministic for the 1000 seeds, so they are held to the figures measured when this
// bound was set: a change that strands more runs fails here. The counts move by a few either way
// whenever a change draws the cores' random numbers differently (another sample of the same races).
// 27 / 38 before the scaling work; 25 / 35 after claims by reference; 26 / 29 (2 Dec, commit
// after a122d31) with the shared pool, and one run in twenty at N up to 300; 24 / 25 once a
// node may hold a view before its table has every member (2 Dec); 23 / 26 once packets to a
// node not yet listening wait for it as ZeroMQ's do (3 Dec: the outsiders are restarts after
// commit, nodes cut off past the commit grace and extras beyond MAX; none is a node whose
// seed started after it); 23 / 25 once a member is suspected only after two unanswered probe
// rounds (3 Dec); 24 / 20 once a node weighs a seed by known / MIN when it picks gossip
// targets (3 Dec; over seeds 1-10,000 196 blocked and 303 outsiders, 199 and 298 before);
// 0 / 21 with votes and fences (protocol version 2): the 24 blocked runs all commit, and the
// outsiders are the same kinds (restarts after commit, extras beyond MAX at 10-20% loss,
// nodes cut off past the commit grace).
constexpr std::size_t kMaxBlockedRuns = 0;
constexpr std::size_t kMaxOutsiderRuns = 21;
// The scenarios where a member is gone for good mid-agreement: it crashes and does not come
// back, or (wrong-suspicion) it is cut off for longer than the others' commit grace, and when
// it returns every node that could tell it the outcome has exited.
bool member_crashed_for_good(const std::string& report) {
  return report.find("(seed-member-killed:") != std::string::npos ||
         report.find("(crash:") != std::string::npos ||
         report.find("(wrong-suspicion:") != std::string::npos;
}

TEST(SimSweep, MixedScenarios) {
  std::uint64_t first = 0, last = 0;
  sweep_range(first, last);
  std::vector<std::string> unsafe, blocked, outsider;
  for (std::uint64_t seed = first; seed <= last; ++seed) {
    // N cycles so that most runs are small (mix then draws 3..N): one in twenty goes up to
    // 300, one in twenty to 100, one in ten to 50.
    static constexpr std::uint32_t kNodes[] = {10, 30, 10, 50, 30, 10, 30, 10, 300, 30,
                                               10, 30, 10, 50, 30, 10, 30, 10, 100, 30};
    const auto run = testing::run_isolated("mix", kNodes[seed % 20], seed);
    if (run.passed()) continue;
    if (run.passed_or_outsider_timeout()) {
      outsider.push_back(run.replay);
    } else if (run.status == testing::IsolatedRun::Status::failed &&
               run.worst == FailureKind::liveness) {
      blocked.push_back(run.replay);
      if (!member_crashed_for_good(run.report))
        ADD_FAILURE() << "blocked although no member crashed for good:\n" << run.report;
    } else {
      unsafe.push_back(run.replay);
      ADD_FAILURE() << run.report;
    }
  }
  auto list = [](const std::vector<std::string>& runs) {
    std::string text;
    for (const auto& r : runs) text += "  " + r + "\n";
    return text;
  };
  std::printf("sweep of %llu runs: %zu unsafe, %zu blocked, %zu outsider timeouts\n%s%s",
              static_cast<unsigned long long>(last - first + 1), unsafe.size(), blocked.size(),
              outsider.size(), list(blocked).c_str(), list(outsider).c_str());
  EXPECT_TRUE(unsafe.empty()) << unsafe.size() << " runs broke safety or aborted:\n"
                              << list(unsafe);
  const bool default_range = first == 1 && last == 1000;
  if (default_range) {
    EXPECT_LE(blocked.size(), kMaxBlockedRuns) << list(blocked);
    EXPECT_LE(outsider.size(), kMaxOutsiderRuns) << list(outsider);
  }
}

// Member seeds that start together, listed by every node, with 0-20% loss: the mix's kinds
// are frozen (recorded seeds replay), so this kind has its own sweep. Every run must pass.
TEST(SimSweep, SeedLists) {
  std::vector<std::string> failed;
  for (std::uint64_t seed = 1; seed <= 300; ++seed) {
    static constexpr std::uint32_t kNodes[] = {6, 12, 30};
    const auto run = testing::run_isolated("seed-list", kNodes[seed % 3], seed);
    if (!run.passed()) {
      failed.push_back(run.replay);
      ADD_FAILURE() << run.report;
    }
  }
  std::printf("seed-list sweep of 300 runs: %zu failed\n", failed.size());
}

// More member seeds than gossip_fanout + 1 (6-20 of 18-60 nodes), 0-20% loss: each seed
// meets the others a few at a time and forwards its joiners to the collectors only, so the
// seeds' rows and every joiner's must still reach everyone. Every run must pass.
TEST(SimSweep, ManyMemberSeeds) {
  std::vector<std::string> failed;
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
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
  std::printf("many-member-seeds sweep of 200 runs: %zu failed\n", failed.size());
}

}  // namespace
}  // namespace gossip_rdzv::sim
