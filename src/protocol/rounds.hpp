// Elastic rounds (CoreConfig::elastic): when a job that agreed must agree again. After this
// node reported its round's commit, the next round starts when its workers failed
// (request_next_round), a member of the committed view died or restarted, or a live node
// waits outside a view that has room for it (below MAX). A member that left on purpose
// (its workers finished: kLeftIncarnation) ends no round. Every round keeps the seed list as
// its quorum base, so each round has at most one outcome by the same argument as round 0
// (docs/protocol.md, "Rounds").
#pragma once

#include <optional>

#include "core_context.hpp"

namespace gossip_rdzv::protocol {

class Rounds {
 public:
  /// The workers of this node failed: the next round is wanted once our commit is reported.
  void request() { requested_ = true; }
  /// A new round began: a request made in the last one is spent.
  void started() {
    requested_ = false;
    blocked_since_.reset();
  }
  /// Why the round after ours should start now, if it should. `commit_reported`: this node
  /// reported its round's outcome (only then does it know the members whose loss matters).
  std::optional<RoundStarted> due(const CoreContext& ctx, bool commit_reported) const;

  /// The next round, when the view this node is ready on has been blocked by a gone
  /// member's missing vote (Agreement::blocked_by_gone) for later_round_last_call: the
  /// votes that could settle it died with that process, so no live node can finish this
  /// round. A round this node never committed ends this way; if the gone process did
  /// commit it, that outcome was its alone. Elastic jobs only.
  std::optional<RoundStarted> blocked(const CoreContext& ctx, Time now);

  /// This node reported a round's commit.
  void note_commit() { committed_once_ = true; }
  /// `record` is a member's final death (is_final_incarnation): whether the job ended for
  /// us with it. A member whose workers failed with no restart left ends it for everyone; a
  /// member that finished ends it only for a node that never committed a round (it started
  /// too late: the job is over). Reports the first such end only, or an abort after a
  /// leave (the abort says why the job ended); a node that left or a dedicated seed has no
  /// job to end.
  std::optional<JobEnded> note_final(const CoreContext& ctx, const MemberRecord& record);

 private:
  bool requested_ = false;
  bool committed_once_ = false;
  std::optional<Time> blocked_since_;  ///< when blocked() first saw the held view blocked
  bool ended_ = false;
  bool ended_failed_ = false;  ///< the end reported was an abort
};

/// We left (Core::leave), and every other member of the last committed round left or is dead.
bool job_finished(const CoreContext& ctx);

/// Whether `row` left on purpose (Core::leave or Core::abort), rather than crashed.
bool left_on_purpose(const Member& row);

}  // namespace gossip_rdzv::protocol
