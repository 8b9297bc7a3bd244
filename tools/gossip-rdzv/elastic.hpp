// `join --max-restarts K -- CMD`: the supervision loop of an elastic job. Each round's
// workers run until they all exit 0 (this node leaves the job and waits for the others to
// finish), one fails (the nodes re-form and restart them while restarts remain), or the
// job moves to another round without us failing (a member died, restarted or arrived: the
// workers stop and restart with the new round's variables, no restart used). When a node's
// restarts are exhausted it ends the job for every node (Node::report_job_failed): each one
// stops its workers, names that failure and exits with its status.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "cli_options.hpp"
#include "gossip_rdzv/node.hpp"
#include "launcher.hpp"

namespace gossip_rdzv::cli {

struct ElasticHooks {
  /// The workers of a round (torchrun's variables for each local rank).
  std::function<std::vector<WorkerSpec>(const Assignment&)> workers;
  /// Waits for the assignment of the round after `previous` (with progress and Ctrl-C).
  std::function<Assignment(const Assignment& previous)> next_round;
  /// Shows a round's assignment (the table on stderr).
  std::function<void(const Assignment&)> show;
  /// Waits up to `timeout` for SIGINT or SIGTERM; returns it, or 0.
  std::function<int(std::chrono::milliseconds timeout)> wait_signal;
};

/// How run_elastic ended.
struct ElasticEnd {
  int status = 0;  ///< the exit status for the agent (docs/cli.md)
  /// The job is over for every node: it finished, or a node failed it with no restart
  /// left. False when this agent was interrupted (also while it waited for the others to
  /// learn of the end) or could not run CMD.
  bool job_over = false;
};

/// Runs the job from `first` on. Every worker has been reaped when it returns.
ElasticEnd run_elastic(Node& node, Assignment first, const CliOptions& options,
                       const ElasticHooks& hooks);

}  // namespace gossip_rdzv::cli
