#include "elastic.hpp"

#include <algorithm>
#include <chrono>
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

// How long a node that ends the job, or learned that another ended it, keeps answering so
// that every other node hears it before this one exits.
constexpr std::chrono::seconds kJobEndGrace{15};

/// Waits until every other member of the round left or is dead (Node::wait_job_finished),
/// at most `timeout`, or until SIGINT or SIGTERM arrives: then returns that signal, else 0
/// (the waits can last --join-timeout, and Ctrl-C must not wait that long).
int wait_others(Node& node, std::chrono::milliseconds timeout, const ElasticHooks& hooks) {
  constexpr std::chrono::milliseconds kSlice{200};
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (auto now = std::chrono::steady_clock::now(); now < deadline;
       now = std::chrono::steady_clock::now()) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now);
    if (node.wait_job_finished(std::min(kSlice, left))) return 0;
    if (const int signal = hooks.wait_signal(std::chrono::milliseconds(0))) return signal;
  }
  return 0;
}

/// Interrupted while the end of the job spread: this agent ends now, and does not stay.
ElasticEnd interrupted(int signal) {
  std::fprintf(stderr,
               "gossip-rdzv: interrupted by %s while waiting for the other nodes to end the job; "
               "this node's workers are no longer running\n",
               strsignal(signal));
  return {128 + signal, false};
}

/// Another node failed the job: this node's workers are stopped; leave and end with the
/// failure's status.
ElasticEnd end_with(Node& node, const JobFailure& failure, const ElasticHooks& hooks) {
  std::fprintf(stderr, "gossip-rdzv: %s; this node's workers were stopped\n",
               failure.message.c_str());
  node.report_workers_finished();
  if (const int signal = wait_others(node, kJobEndGrace, hooks)) return interrupted(signal);
  return {failure.status != 0 ? failure.status : 1, true};
}

}  // namespace

ElasticEnd run_elastic(Node& node, Assignment first, const CliOptions& options,
                       const ElasticHooks& hooks) {
  Assignment assignment = std::move(first);
  std::uint32_t restarts_used = 0;
  while (true) {
    Launcher launcher;
    const int status = launch_and_wait(launcher, hooks.workers(assignment),
                                       [&] { return node.round_over(assignment); });
    // A command that cannot be run here would fail the same way again; an interrupt ends
    // the job.
    if (!launcher.exec_error().empty() || launcher.received_signal()) return {status, false};
    if (auto failure = node.job_failure()) return end_with(node, *failure, hooks);
    // Our workers failing after the job moved on, or because a member's agent went away
    // (their peers' connections reset before the death is declared), is no failure of ours:
    // it uses no restart.
    const auto moved_on = [&](const std::string& what) {
      say(options, node.round_change().value_or("the job moved to another round") + "; " + what +
                       " (no restart used)");
    };
    if (launcher.stopped_early()) {
      moved_on("stopped this node's workers of round " + std::to_string(assignment.round));
    } else if (status != 0 && node.failure_explained_by_departure(assignment)) {
      moved_on("this node's workers of round " + std::to_string(assignment.round) +
               " had already failed with " + status_text(status) + ", which that change explains");
    } else if (status == 0) {
      node.report_workers_finished();
      say(options, "this node's workers finished; waiting for the other nodes' to finish");
      if (const int signal = wait_others(node, options.config.join_timeout, hooks))
        return interrupted(signal);
      if (!node.wait_job_finished(std::chrono::milliseconds(0))) {
        say(options,
            "the other nodes' workers did not finish within --join-timeout; this "
            "node's finished, so it exits 0 (see the other nodes' output for theirs)");
      }
      return {0, true};
    } else {
      const std::size_t local_rank = launcher.first_failed().value_or(0);
      const std::string failure = "local rank " + std::to_string(local_rank) + " (rank " +
                                  std::to_string(assignment.me().rank_offset + local_rank) +
                                  ") on this node failed with " + status_text(status);
      if (restarts_used >= options.max_restarts) {
        std::fprintf(stderr,
                     "gossip-rdzv: %s; restarts exhausted (%u of %u used): the worker's "
                     "output above says why; allow more with --max-restarts. Ending the job "
                     "on every node\n",
                     failure.c_str(), restarts_used, options.max_restarts);
        node.report_job_failed(static_cast<std::uint32_t>(assignment.me().rank_offset + local_rank),
                               status);
        if (const int signal = wait_others(node, kJobEndGrace, hooks)) return interrupted(signal);
        return {status, true};
      }
      ++restarts_used;
      say(options, failure + "; restart " + std::to_string(restarts_used) + " of " +
                       std::to_string(options.max_restarts) + ": re-forming the group");
      node.report_workers_failed();
    }
    try {
      assignment = hooks.next_round(assignment);
    } catch (const Error&) {
      if (auto failure = node.job_failure()) return end_with(node, *failure, hooks);
      throw;
    }
    hooks.show(assignment);
  }
}

}  // namespace gossip_rdzv::cli
