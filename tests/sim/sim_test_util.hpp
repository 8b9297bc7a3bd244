// Runs one simulated scenario in a child process, so that a core assertion (abort) fails
// that run only and the test still prints the replay command.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <optional>
#include <string>

#include "sim/simulator.hpp"

namespace gossip_rdzv::sim::testing {

struct IsolatedRun {
  enum class Status { passed, failed, safety, aborted } status = Status::failed;
  std::optional<FailureKind> worst;  ///< when it ran to the end
  std::string report;                ///< the run's report (failures, notes, replay command)
  std::string replay;
  bool passed() const { return status == Status::passed; }
  /// Passed, or its only failures are nodes outside the committed view that nobody was left
  /// to tell (every committer had exited). Such a node ends at its own --join-timeout with an
  /// error; it is counted and reported, but it is a documented outcome, not a hang of the
  /// round (docs/simulation.md, "Open limits").
  bool passed_or_outsider_timeout() const {
    return passed() || (status == Status::failed && worst == FailureKind::outsider);
  }
  /// Its only failures are a round whose outcome died with the processes that committed it
  /// (FailureKind::lost_decision): a documented liveness limit, never a double commit.
  bool lost_decision() const {
    return status == Status::failed && worst == FailureKind::lost_decision;
  }
};

inline IsolatedRun run_isolated(const std::string& name, std::uint32_t nodes, std::uint64_t seed,
                                const ScenarioOptions& scenario_options = {},
                                const SimOptions& options = {}) {
  IsolatedRun run;
  run.replay = make_scenario(name, nodes, seed, scenario_options).replay_command();
  int fds[2];
  if (pipe(fds) != 0) return run;
  std::fflush(nullptr);
  const pid_t child = fork();
  if (child == 0) {
    close(fds[0]);
    const RunResult result =
        Simulator(make_scenario(name, nodes, seed, scenario_options), options).run();
    const std::string text = result.report();
    std::size_t written = 0;
    while (written < text.size()) {
      const ssize_t n = write(fds[1], text.data() + written, text.size() - written);
      if (n <= 0) break;
      written += static_cast<std::size_t>(n);
    }
    close(fds[1]);
    const auto worst = result.worst();
    std::_Exit(worst ? 10 + static_cast<int>(*worst) : 0);
  }
  close(fds[1]);
  char buf[4096];
  ssize_t n = 0;
  while ((n = read(fds[0], buf, sizeof buf)) > 0)
    run.report.append(buf, static_cast<std::size_t>(n));
  close(fds[0]);
  int wait_status = 0;
  waitpid(child, &wait_status, 0);
  if (!WIFEXITED(wait_status)) {
    run.status = IsolatedRun::Status::aborted;
    run.report += "core aborted (signal " + std::to_string(WTERMSIG(wait_status)) +
                  "); replay: " + run.replay + "\n";
  } else {
    const int code = WEXITSTATUS(wait_status);
    if (code >= 10) run.worst = static_cast<FailureKind>(code - 10);
    run.status = code == 0                          ? IsolatedRun::Status::passed
                 : run.worst == FailureKind::safety ? IsolatedRun::Status::safety
                                                    : IsolatedRun::Status::failed;
  }
  return run;
}

}  // namespace gossip_rdzv::sim::testing
