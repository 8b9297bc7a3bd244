// gossip-rdzv-sim: runs a simulated scenario for a range of seeds, checks every property of
// src/sim/checker.hpp, and prints per-run figures and the replay command of each failure.
//
//   gossip-rdzv-sim --scenario mix --nodes 50 --seeds 1:1000 --quiet
//   gossip-rdzv-sim --scenario restart --nodes 10 --seed 42 --trace 1     # replay one
//
// Exit status: 0 when every run passed, 1 when any failed, 2 for a usage error.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "sim/simulator.hpp"

namespace {

using namespace gossip_rdzv::sim;

struct SeedRange {
  std::uint64_t first = 1;
  std::uint64_t last = 1;
};

bool parse_range(const std::string& text, SeedRange& range) {
  try {
    const auto colon = text.find(':');
    std::size_t used = 0;
    if (colon == std::string::npos) {
      range.first = range.last = std::stoull(text, &used);
      return used == text.size();
    }
    const std::string a = text.substr(0, colon), b = text.substr(colon + 1);
    range.first = std::stoull(a, &used);
    if (used != a.size()) return false;
    range.last = std::stoull(b, &used);
    return used == b.size() && range.first <= range.last;
  } catch (const std::exception&) {
    return false;
  }
}

/// Peak resident memory of this process and of any finished child run, in KiB.
long peak_rss_kib() {
  rusage self{}, children{};
  getrusage(RUSAGE_SELF, &self);
  getrusage(RUSAGE_CHILDREN, &children);
  return std::max(self.ru_maxrss, children.ru_maxrss);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Deterministic simulation of gossip-rdzv: many cores, one virtual clock, a seeded "
      "faulty network; every property checked, every failure replayable from its seed."};
  std::string scenario_name = "plain";
  std::uint32_t nodes = 10;
  std::string seeds_text;
  std::string seed_text;
  std::optional<double> loss;
  std::string timing = "lan";
  std::uint32_t seed_nodes = 1;
  std::string codec = "full";
  bool quiet = false;
  int trace = 0;
  unsigned progress_seconds = 0;
  std::uint32_t invariant_every = 1;
  bool list = false;
  bool no_fork = false;
  std::size_t load_top = 0;

  std::string names;
  for (const auto& n : scenario_names()) names += (names.empty() ? "" : ", ") + n;
  app.add_option("--scenario", scenario_name, "Scenario: " + names)->capture_default_str();
  app.add_option("--nodes", nodes, "--nnodes of the run (MAX); mix draws 3..N")
      ->check(CLI::Range(1u, 1000000u))
      ->capture_default_str();
  auto* seeds_opt = app.add_option("--seeds", seeds_text, "Seed range FROM:TO (inclusive)");
  app.add_option("--seed", seed_text, "One seed (same as --seeds S:S)")->excludes(seeds_opt);
  app.add_option("--loss", loss, "Override the packet loss probability (0..1)")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--timing", timing, "Protocol timing preset: lan or local")
      ->check(CLI::IsMember({"lan", "local"}))
      ->capture_default_str();
  app.add_option("--seed-nodes", seed_nodes,
                 "plain and bench: the first K nodes are seeds every node lists (joins spread "
                 "over them)")
      ->check(CLI::Range(1u, 1000000u))
      ->capture_default_str();
  app.add_option("--codec", codec,
                 "full: msgpack encode+decode every packet; size: encode to count bytes only; "
                 "off: structs, no byte counts")
      ->check(CLI::IsMember({"full", "size", "off"}))
      ->capture_default_str();
  app.add_option("--check-every", invariant_every,
                 "Call core.check_invariants() every this-many steps of a node (1: every step)")
      ->check(CLI::Range(1u, 1000000u))
      ->capture_default_str();
  app.add_flag("--quiet,-q", quiet, "Print only failures and the final line");
  app.add_option("--trace", trace, "1: faults, membership and outcomes; 2: every packet")
      ->check(CLI::Range(0, 2));
  app.add_option("--progress", progress_seconds,
                 "Print a progress line (virtual time, members joined / committed / running) "
                 "every this-many seconds of wall time; 0: never. For runs of thousands of nodes")
      ->check(CLI::Range(0u, 86400u))
      ->capture_default_str();
  app.add_option("--load", load_top,
                 "After each run, list the N busiest nodes after the join exchange with their "
                 "messages sent/received by type")
      ->check(CLI::Range(std::size_t{0}, std::size_t{1000}));
  app.add_flag("--list", list, "List the scenarios and exit");
  app.add_flag("--no-fork", no_fork,
               "Run every seed in this process (default for one seed); otherwise each seed runs "
               "in a child process, so a core assertion ends that run only");
  CLI11_PARSE(app, argc, argv);

  if (list) {
    for (const auto& n : scenario_names()) std::cout << n << "\n";
    return 0;
  }
  if (!is_scenario_name(scenario_name)) {
    std::cerr << "unknown scenario '" << scenario_name << "'; one of: " << names << "\n";
    return 2;
  }
  SeedRange range;
  const std::string& range_text = !seed_text.empty() ? seed_text : seeds_text;
  if (!range_text.empty() && !parse_range(range_text, range)) {
    std::cerr << "bad seed range '" << range_text << "': expected S or FROM:TO with FROM <= TO\n";
    return 2;
  }

  install_abort_reporter();
  ScenarioOptions scenario_options;
  scenario_options.loss = loss;
  scenario_options.profile = timing == "local" ? TimingProfile::local : TimingProfile::lan;
  scenario_options.seed_nodes = seed_nodes;
  SimOptions sim_options;
  sim_options.codec = codec == "full"   ? CodecMode::full
                      : codec == "size" ? CodecMode::size_only
                                        : CodecMode::off;
  sim_options.invariant_every = invariant_every;
  sim_options.trace = trace;
  sim_options.trace_out = stdout;
  sim_options.progress_every = std::chrono::seconds(progress_seconds);

  std::uint64_t passed = 0, failed = 0;
  std::map<std::string, std::uint64_t> by_kind;
  std::vector<std::string> failing;
  const auto wall_start = std::chrono::steady_clock::now();
  // Runs one seed and prints its lines. Returns 0 when it passed, else 10 + the worst
  // FailureKind (the exit status of a forked run).
  auto run_one = [&](std::uint64_t seed) {
    const auto run_start = std::chrono::steady_clock::now();
    const std::clock_t cpu_start = std::clock();
    RunResult result = run_scenario(scenario_name, nodes, seed, scenario_options, sim_options);
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start).count();
    // CPU time as well: on a shared machine the wall time says more about the neighbours.
    const double cpu = static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC;
    if (!quiet) {
      std::printf("%s, wall %.3f s, cpu %.3f s, peak RSS %ld MiB\n", result.summary_line().c_str(),
                  wall, cpu, peak_rss_kib() / 1024);
    }
    if (!result.passed || !result.notes.empty()) std::fputs(result.report().c_str(), stdout);
    if (load_top > 0) std::fputs(result.load_report(load_top).c_str(), stdout);
    std::fflush(stdout);
    const auto worst = result.worst();
    return worst ? 10 + static_cast<int>(*worst) : 0;
  };
  const bool fork_each = !no_fork && range.first != range.last;
  for (std::uint64_t seed = range.first;; ++seed) {
    int status = 0;
    bool aborted = false;
    if (!fork_each) {
      status = run_one(seed);
    } else {
      std::fflush(stdout);
      const pid_t child = fork();
      if (child == 0) {
        std::_Exit(run_one(seed));
      } else if (child < 0) {
        std::perror("fork");
        return 2;
      }
      int wait_status = 0;
      waitpid(child, &wait_status, 0);
      if (WIFEXITED(wait_status)) {
        status = WEXITSTATUS(wait_status);
      } else {
        aborted = true;
        status = 1;
      }
    }
    if (status == 0) {
      ++passed;
    } else {
      ++failed;
      const std::string replay =
          make_scenario(scenario_name, nodes, seed, scenario_options).replay_command();
      std::string kind = "ABORT (core assertion)";
      if (!aborted && status >= 10 && status <= 10 + static_cast<int>(FailureKind::lost_decision))
        kind = to_string(static_cast<FailureKind>(status - 10));
      else if (!aborted)
        kind = "exit status " + std::to_string(status);
      ++by_kind[kind];
      failing.push_back(replay + "   # " + kind);
      if (aborted)
        std::printf("FAIL seed %llu: core aborted\n  replay: %s\n",
                    static_cast<unsigned long long>(seed), replay.c_str());
    }
    if (seed == range.last) break;
  }
  const double wall_total =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  std::string kinds;
  for (const auto& [kind, count] : by_kind)
    kinds += (kinds.empty() ? " (" : ", ") + std::to_string(count) + " " + kind;
  if (!kinds.empty()) kinds += ")";
  std::printf("%llu passed, %llu failed%s, wall %.1f s, peak RSS %ld MiB\n",
              static_cast<unsigned long long>(passed), static_cast<unsigned long long>(failed),
              kinds.c_str(), wall_total, peak_rss_kib() / 1024);
  for (const auto& line : failing) std::printf("  %s\n", line.c_str());
  return failed == 0 ? 0 : 1;
}
