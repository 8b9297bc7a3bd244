// A gossip-rdzv node for custom launchers: configure, start, wait for the assignment, stop.
//
//   gossip_rdzv::Config cfg;
//   cfg.seeds = {"node0:29400"};
//   cfg.min_nodes = cfg.max_nodes = 4;
//   gossip_rdzv::Node node(cfg);
//   node.start();                                   // binds, starts joining
//   gossip_rdzv::Assignment a = node.wait();        // blocks until agreed (or throws Error)
//   auto env = gossip_rdzv::torch_env(a, /*local_rank=*/0);
//   node.finish();                                  // serve peers until they know the outcome
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gossip_rdzv/assignment.hpp"
#include "gossip_rdzv/config.hpp"
#include "gossip_rdzv/error.hpp"
#include "gossip_rdzv/export.h"

namespace gossip_rdzv {

/// A member as this node currently sees it, for progress displays and timeout reports.
struct MemberProgress {
  std::string endpoint;
  std::string hostname;
  std::string status;                      ///< "alive", "suspect" or "dead"
  std::optional<milliseconds> last_heard;  ///< how long ago it was last heard from directly
  bool unreachable = false;                ///< messages to its advertised endpoint go unanswered
};

struct GOSSIP_RDZV_API Progress {
  bool joined = false;  ///< a seed or peer has answered
  bool committed = false;
  std::uint32_t min_nodes = 0, max_nodes = 0;
  std::vector<MemberProgress> members;  ///< including this node
  std::string endpoint;                 ///< this node's advertised endpoint
  /// How long ago any other node was last heard from directly (unset: none yet).
  std::optional<milliseconds> last_heard;
  /// Peers that told this node they get no answer at `endpoint`.
  std::vector<std::string> unreachable_by;
  std::uint32_t alive() const;
};

/// An elastic job that another node failed: its workers failed with no restart left there
/// (Node::report_job_failed on that node). Every node stops its workers and ends with
/// `status`.
struct JobFailure {
  std::string node;        ///< the failing node's endpoint "host:port"
  std::string hostname;    ///< its host name, for people
  std::uint32_t rank = 0;  ///< the global rank of the worker that failed first there
  int status = 0;          ///< its exit status, or 128+N for signal N
  std::string message;     ///< one line naming all of the above and the fix
};

class GOSSIP_RDZV_API Node {
 public:
  /// Checks the config with validate() (config.hpp). Throws Error(usage) naming the bad
  /// field, its gossip-rdzv flag and the accepted form.
  explicit Node(Config config);
  /// Stops the node if it is still running.
  ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  /// Binds the gossip port and starts joining in a background thread.
  /// Throws Error(listen_failed) when the port is taken or the address is not local,
  /// Error(seed_unresolved) when no seed name resolves.
  void start();

  /// Blocks until this node's assignment is committed, at most `config.join_timeout`.
  /// Throws Error with: seed_unreachable (no seed ever answered), join_timeout (names who
  /// joined and who is missing), run_id_mismatch / version_mismatch, rank_conflict,
  /// not_admitted, job_over (an elastic job of this run id already finished or failed).
  Assignment wait();

  /// The assignment if already committed.
  std::optional<Assignment> try_assignment() const;

  Progress progress() const;

  // ---- elastic jobs (Config::elastic) ------------------------------------------------------
  /// Whether the job moved past `current`'s round (a member died or restarted, a node
  /// arrived, a node's workers failed) or another node failed the job (job_failure()):
  /// this node's workers of that round must stop.
  bool round_over(const Assignment& current) const;
  /// Why the latest round began, for people (unset: still in the first round).
  std::optional<std::string> round_change() const;
  /// Blocks until the assignment of a round after `previous` is committed, at most
  /// `config.join_timeout`; throws as wait() does, and Error(job_over) when another node
  /// failed the job.
  Assignment wait_next(const Assignment& previous);
  /// This node's workers of `current` failed while round_over(current) is still false:
  /// whether another member's departure explains it, so that it uses no restart. When a
  /// node's agent dies (killed, crashed), its peers' workers fail at once (their gloo
  /// connections reset), seconds before the membership declares it dead. This first waits
  /// for a message another member sent after the failure (about one gossip interval; at
  /// most a probe interval and a probe timeout), so that a node that was frozen or cut off
  /// learns whether the job moved on without it. Then it probes the gossip endpoint of every
  /// other member of `current` not already held dead (a TCP connection, at most about one
  /// probe interval in all); when one refuses (nothing listens there any more) or does not
  /// answer (its host is down or cut off), it waits until the round is over, at most as long
  /// as the failure detector takes to declare a death. Returns round_over(current) at the
  /// end: false when every member still listens (the failure is this node's own; a frozen
  /// member still has the kernel accept for it, and its death ends the round while the
  /// workers wait in a collective). Call it before report_job_failed() too: an abort ends
  /// the job for every node that learns of it, however stale.
  bool failure_explained_by_departure(const Assignment& current);
  /// This node's workers failed: the nodes agree on the next round (returns false, doing
  /// nothing, when the job is not elastic or this node has no committed round yet).
  bool report_workers_failed();
  /// This node's workers finished: it leaves the job and starts no more rounds; the others
  /// do not mistake its exit for a crash.
  void report_workers_finished();
  /// This node's workers failed with no restart left (`rank`: the first failing worker's
  /// global rank; `status`: its exit status, 128+N for signal N): the job ends for every
  /// node, each learning it as job_failure(). Starts no more rounds; call
  /// wait_job_finished() to let the news spread before stopping.
  void report_job_failed(std::uint32_t rank, int status);
  /// Set once another node failed the job (report_job_failed there).
  std::optional<JobFailure> job_failure() const;
  /// After report_workers_finished() or report_job_failed(): blocks until every other member of the
  /// last round left too or is dead (then this node may exit), at most `timeout`; returns whether
  /// so.
  bool wait_job_finished(milliseconds timeout);

  /// After commit: keep answering peers until every member knows the outcome, at most
  /// `config.timing.commit_grace`; a seed stays max(commit_grace, join_backoff_max) after
  /// its commit, for processes that start or restart late (docs/protocol.md, rule 7).
  /// Returns immediately if not committed.
  void finish();

  /// Stops the background thread and closes sockets. Idempotent.
  void stop();

  /// The endpoint peers use for this node ("host:port"), known after start().
  std::string endpoint() const;
  /// Whether nodes that start late ask this one first: the seed list names it, or it has
  /// none (known after start()). Such a node tells them the job is over (Error(job_over)
  /// there) for as long as it runs after the job ended, so an elastic launcher that wants
  /// late starters told keeps it running for a while before stop() (the CLI:
  /// --stay-after-job).
  bool listed_as_seed() const;

  /// The key file of its config (Config::key_file), "" for none: Store(node) uses it too.
  const std::string& key_file() const;

  struct GOSSIP_RDZV_LOCAL Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

/// Asks a running node or seed at `endpoint` for its membership table (the `members`
/// command). Throws Error(seed_unreachable) when it does not answer within `timeout`,
/// Error(run_id_mismatch) / Error(version_mismatch) when it refuses us.
GOSSIP_RDZV_API std::vector<MemberProgress> query_members(const std::string& endpoint,
                                                          const std::string& run_id,
                                                          milliseconds timeout);
/// As above, with the job's key file (Config::key_file; "" for none), as a node of a job
/// with a key must be asked. Also throws Error(usage) naming a key file that cannot be read.
GOSSIP_RDZV_API std::vector<MemberProgress> query_members(const std::string& endpoint,
                                                          const std::string& run_id,
                                                          milliseconds timeout,
                                                          const std::string& key_file);

}  // namespace gossip_rdzv
