#include "elastic.hpp"

#include <cstdio>
#include <cstring>

namespace gossip_rdzv::cli {
namespace {

void say(const CliOptions& options, const std::string& text) {
  if (!options.verbosity.quiet) std::fprintf(stderr, "gossip-rdzv: %s\n", text.c_str());
}

std::string status_text(int status) {
  if (status > 128) return "signal " + std::string(strsignal(status - 128));
  return "exit status " + std::to_string(status);
}

}  // namespace

int run_elastic(Node& node, Assignment first, const CliOptions& options,
                const ElasticHooks& hooks) {
  Assignment assignment = std::move(first);
  std::uint32_t restarts_used = 0;
  while (true) {
    Launcher launcher;
    const int status = launch_and_wait(launcher, hooks.workers(assignment),
                                       [&] { return node.round_over(assignment); });
    // A command that cannot be run here would fail the same way again; an interrupt ends
    // the job.
    if (!launcher.exec_error().empty() || launcher.received_signal()) return status;
    // Our workers failing after the job moved on (their peers went away) is no failure of
    // ours: it uses no restart.
    if (launcher.stopped_early() || (status != 0 && node.round_over(assignment))) {
      say(options, node.round_change().value_or("the job moved to another round") +
                       "; stopped this node's workers of round " +
                       std::to_string(assignment.round) + " (no restart used)");
    } else if (status == 0) {
      node.report_workers_finished();
      say(options, "this node's workers finished; waiting for the other nodes' to finish");
      if (!node.wait_job_finished(options.config.join_timeout)) {
        say(options,
            "the other nodes' workers did not finish within --join-timeout; this "
            "node's finished, so it exits 0 (see the other nodes' output for theirs)");
      }
      return 0;
    } else {
      const std::size_t local_rank = launcher.first_failed().value_or(0);
      const std::string failure = "local rank " + std::to_string(local_rank) + " (rank " +
                                  std::to_string(assignment.me().rank_offset + local_rank) +
                                  ") on this node failed with " + status_text(status);
      if (restarts_used >= options.max_restarts) {
        std::fprintf(stderr,
                     "gossip-rdzv: %s; restarts exhausted (%u of %u used): the worker's "
                     "output above says why; allow more with --max-restarts\n",
                     failure.c_str(), restarts_used, options.max_restarts);
        return status;
      }
      ++restarts_used;
      say(options, failure + "; restart " + std::to_string(restarts_used) + " of " +
                       std::to_string(options.max_restarts) + ": re-forming the group");
      node.report_workers_failed();
    }
    assignment = hooks.next_round(assignment);
    hooks.show(assignment);
  }
}

}  // namespace gossip_rdzv::cli
