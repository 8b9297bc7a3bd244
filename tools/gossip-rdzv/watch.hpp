// `join --watch [--on-round CMD]`: env-file mode for an elastic job whose workers something
// else supervises (systemd, a container runtime). The agent stays up; each time the job
// moves to a new round (a member died or restarted, a node arrived below MAX) it waits for
// that round, rewrites the outputs atomically and runs --on-round. It leaves the job on
// SIGINT/SIGTERM, or once every other member of its round left on purpose (the job ended);
// fewer than MIN nodes for --join-timeout ends it with exit 5 (docs/cli.md, "Watching
// rounds").
#pragma once

#include <chrono>
#include <functional>

#include "cli_options.hpp"
#include "gossip_rdzv/env.hpp"
#include "gossip_rdzv/node.hpp"

namespace gossip_rdzv::cli {

struct WatchHooks {
  /// Writes a round's files and prints its variables (the outputs of a plain `join`).
  std::function<void(const Assignment&)> publish;
  /// Waits for the assignment of the round after `previous` (with progress and Ctrl-C).
  std::function<Assignment(const Assignment& previous)> next_round;
  /// Waits up to `timeout` for SIGINT or SIGTERM; returns it, or 0.
  std::function<int(std::chrono::milliseconds timeout)> wait_signal;
  /// The node-level variables of a round, as printed on stdout (--on-round gets them).
  std::function<EnvVars(const Assignment&)> round_env;
};

/// Follows the job from `first` on, whose outputs are already published; returns the exit
/// status for the agent (0, or throws Error as Node::wait_next does).
int run_watch(Node& node, Assignment first, const CliOptions& options, const WatchHooks& hooks);

/// Whether every member of `round` but this node left the job on purpose, judged from a
/// `progress` taken while `round` was still the node's current round: a member that died
/// without leaving starts the next round in the same step that marks it dead, so a dead
/// member of a round that is not over left on purpose. False for a round of one node.
bool others_left(const Progress& progress, const Assignment& round);

/// What --on-round runs with on top of the agent's environment: `round_env`, then
/// GOSSIP_RDZV_ROUND, GOSSIP_RDZV_ENV_FILES (the env files, one path per line; with
/// --env-file) and GOSSIP_RDZV_MEMBERSHIP_FILE (with --membership-file).
EnvVars on_round_env(EnvVars round_env, const Assignment& assignment, const CliOptions& options);

}  // namespace gossip_rdzv::cli
