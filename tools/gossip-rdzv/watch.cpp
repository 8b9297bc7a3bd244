#include "watch.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "launcher.hpp"

namespace gossip_rdzv::cli {
namespace {

// How often the loop looks for a new round or a job that ended between signals: the
// launcher polls its workers as often, so both modes notice a round as soon.
constexpr auto kPollPeriod = std::chrono::milliseconds(100);

void say(const CliOptions& options, const std::string& text) {
  if (!options.verbosity.quiet) std::fprintf(stderr, "gossip-rdzv: %s\n", text.c_str());
}

// Leaves the job as `-- CMD` does when its workers finish: the others do not take our exit
// for a crash and re-form. We linger until they all left too, at most commit_grace, so that
// the news reaches them before our sockets close.
int leave_job(Node& node, const CliOptions& options, const std::string& why) {
  say(options, why);
  node.report_workers_finished();
  node.wait_job_finished(options.config.timing.commit_grace);
  return 0;
}

std::string leaving_for(int signal, const Assignment& assignment) {
  return std::string(strsignal(signal)) + ": leaving the job in round " +
         std::to_string(assignment.round) + " (the others go on without re-forming for it)";
}

// Runs --on-round for `assignment`; returns the SIGINT/SIGTERM received meanwhile (forwarded
// to the command), or 0. A failing command is reported and the watch goes on: the files of
// the round are written whatever it does, and leaving the job for it would force a new
// round on every other node.
int run_on_round(const Assignment& assignment, const CliOptions& options, const WatchHooks& hooks) {
  Launcher launcher;
  const WorkerSpec command{{"/bin/sh", "-c", options.on_round},
                           on_round_env(hooks.round_env(assignment), assignment, options)};
  const int status = launch_and_wait(launcher, {command}, [] { return false; });
  if (auto signal = launcher.received_signal()) return *signal;
  if (status != 0) {
    std::fprintf(stderr,
                 "gossip-rdzv: --on-round failed with status %d for round %u; watching on "
                 "(the round's files are written; the command runs again at the next round)\n",
                 status, assignment.round);
  }
  return 0;
}

}  // namespace

bool others_left(const Progress& progress, const Assignment& round) {
  std::size_t others = 0;
  for (const NodeEntry& member : round.nodes) {
    if (member.endpoint == round.me().endpoint) continue;
    ++others;
    const auto row = std::find_if(
        progress.members.begin(), progress.members.end(),
        [&](const MemberProgress& candidate) { return candidate.endpoint == member.endpoint; });
    if (row == progress.members.end() || row->status != "dead") return false;
  }
  return others > 0;
}

EnvVars on_round_env(EnvVars round_env, const Assignment& assignment, const CliOptions& options) {
  EnvVars env = std::move(round_env);
  env.emplace_back("GOSSIP_RDZV_ROUND", std::to_string(assignment.round));
  if (!options.env_file.empty()) {
    std::string files;
    for (const auto& path : env_file_paths(options.env_file, assignment.me().nproc)) {
      files += (files.empty() ? "" : "\n") + path;
    }
    env.emplace_back("GOSSIP_RDZV_ENV_FILES", files);
  }
  if (!options.membership_file.empty()) {
    env.emplace_back("GOSSIP_RDZV_MEMBERSHIP_FILE", options.membership_file);
  }
  return env;
}

int run_watch(Node& node, Assignment first, const CliOptions& options, const WatchHooks& hooks) {
  Assignment assignment = std::move(first);
  while (true) {
    if (!options.on_round.empty()) {
      if (const int signal = run_on_round(assignment, options, hooks); signal != 0) {
        return leave_job(node, options, leaving_for(signal, assignment));
      }
    }
    while (!node.round_over(assignment)) {
      if (const int signal = hooks.wait_signal(kPollPeriod); signal != 0) {
        return leave_job(node, options, leaving_for(signal, assignment));
      }
      // The progress first: others_left() needs it taken while the round was current.
      const Progress progress = node.progress();
      if (!node.round_over(assignment) && others_left(progress, assignment)) {
        return leave_job(node, options,
                         "every other node of round " + std::to_string(assignment.round) +
                             " left the job (their workers finished); leaving too");
      }
    }
    say(options, node.round_change().value_or("the job moved to another round") +
                     "; the outputs of round " + std::to_string(assignment.round) +
                     " are rewritten once the next round forms");
    assignment = hooks.next_round(assignment);
    hooks.publish(assignment);
    say(options, "round " + std::to_string(assignment.round) + ": wrote the outputs (" +
                     std::to_string(assignment.nnodes()) + " nodes, WORLD_SIZE " +
                     std::to_string(assignment.world_size) + ")");
  }
}

}  // namespace gossip_rdzv::cli
