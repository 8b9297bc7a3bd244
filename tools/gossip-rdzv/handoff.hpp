// `join` that only writes its outcome (env files, membership file, stdout): the command the
// user waits for returns as soon as the outcome is out, and the node's remaining duty —
// answering the other members and late starters until its stay ends (docs/protocol.md,
// rule 7) — runs on in a child process, as daemons that report readiness do.
//
// The same split serves an elastic job's agent on a seed node (--stay-after-job): once the
// job is over, join exits with the job's status and the child tells nodes that start late
// that the job is over, for a bounded time.
//
// split() forks before any socket or thread exists. The child runs the node; the parent only
// waits: for the child's "ready" (then it exits at once with the status the child gave), or
// for the child's exit (then it exits with the child's status, or dies of the child's
// signal, so every failure reaches the caller unchanged). SIGINT and SIGTERM sent to the
// parent before the hand-off are passed on to the child (but not those the terminal sends,
// which reach the child as well, nor the same signal again within a second; a signal to the
// whole process group reaches both, and the launcher takes the parent's copy for the same
// signal, launcher.hpp); a parent killed
// outright takes the child with it (PR_SET_PDEATHSIG). After the hand-off the child holds
// no descriptor of the caller's (stdin, stdout and stderr are /dev/null; what else it
// inherited is closed) and ignores the terminal's hang-up, so `eval "$(gossip-rdzv join
// ...)"` returns too, and it exits when its stay ends.
//
// A node restarted on the same port while the previous one's child still stays would find
// the port taken. The child therefore holds a local rendezvous point named after its port
// (an abstract Unix socket, private to the network namespace, gone with the process); the
// new node's end_previous_stay() connects there, and the child ends its stay at once: the
// new process at that endpoint supersedes it, as a restart always did.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

namespace gossip_rdzv::cli {

class Handoff {
 public:
  /// In the parent: the status to exit with (never returns before the child is ready or
  /// gone). In the child: std::nullopt, and the caller goes on as the node.
  /// Throws Error(internal) when the process cannot fork.
  std::optional<int> split();
  /// In the child, once the outcome is written: the parent exits with `status` (0-255) and
  /// this process goes quiet, ending its stay early if a new node asks for `port`
  /// (end_previous_stay). Returns whether so; false, doing nothing, when split() was not
  /// called or ready() was already.
  bool ready(std::uint16_t port, int status = 0);

 private:
  int ready_fd_ = -1;
  std::vector<int> inherited_;  ///< the caller's descriptors (no close-on-exec), closed at ready()
};

/// Whether a previous node's stay held `port` on this machine and has now ended (waits for
/// it at most `timeout`): then binding the port again can succeed.
bool end_previous_stay(std::uint16_t port, std::chrono::milliseconds timeout);

}  // namespace gossip_rdzv::cli
