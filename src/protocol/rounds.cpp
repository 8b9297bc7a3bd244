#include "rounds.hpp"

#include <algorithm>

namespace gossip_rdzv::protocol {

bool left_on_purpose(const Member& row) {
  return row.status == MemberStatus::dead && is_final_incarnation(row.incarnation);
}

std::optional<JobEnded> Rounds::note_final(const CoreContext& ctx, const MemberRecord& record) {
  if (ctx.left || ctx.config.seed_only) return std::nullopt;
  const bool failed = record.incarnation != kLeftIncarnation;
  // Reported once, except that an abort still outranks a leave reported before it (as
  // CoreContext::note_final keeps it): a late node may read a seed's own leave before the
  // abort that the same answer carries.
  if (ended_ && (ended_failed_ || !failed)) return std::nullopt;
  if (!failed && committed_once_) return std::nullopt;
  ended_ = true;
  ended_failed_ = failed;
  JobEnded event;
  event.failed = failed;
  event.peer = record.ann.endpoint;
  event.hostname = record.ann.hostname;
  if (failed) {
    event.rank = aborted_rank(record.incarnation);
    event.status = aborted_status(record.incarnation);
  }
  return event;
}

bool job_finished(const CoreContext& ctx) {
  if (!ctx.left) return false;
  const MemberList* members = ctx.agreement.committed_member_list();
  if (members == nullptr) return true;
  for (const MemberKey& key : *members) {
    if (key.endpoint == ctx.config.self.endpoint) continue;
    const Member* row = ctx.table.find(key.endpoint);
    if (row != nullptr && row->ann->generation == key.generation &&
        row->status != MemberStatus::dead)
      return false;
  }
  return true;
}

std::optional<RoundStarted> Rounds::due(const CoreContext& ctx, bool commit_reported) const {
  if (!ctx.config.elastic || ctx.left || ended_ || !commit_reported) return std::nullopt;
  const std::uint32_t next = ctx.config.round + 1;
  if (requested_) return RoundStarted{next, RoundReason::workers_failed, {}};
  const MemberList* members = ctx.agreement.committed_member_list();
  if (members == nullptr) return std::nullopt;
  for (const MemberKey& key : *members) {
    if (key.endpoint == ctx.config.self.endpoint) continue;
    const Member* row = ctx.table.find(key.endpoint);
    if (row == nullptr) continue;
    if (row->ann->generation > key.generation)
      return RoundStarted{next, RoundReason::member_restarted, key.endpoint};
    if (row->status == MemberStatus::dead && !left_on_purpose(*row))
      return RoundStarted{next, RoundReason::member_dead, key.endpoint};
  }
  if (members->size() >= ctx.config.max_nodes) return std::nullopt;
  // Room left: a live node outside the view is a newcomer (scale-up) or a member of an
  // earlier round that was left out and came back.
  for (std::uint32_t index : ctx.table.live_peers()) {
    const Member& row = ctx.table.rows()[index];
    if (row.status != MemberStatus::alive) continue;
    const MemberKey key{row.ann->endpoint, row.ann->generation};
    if (!std::binary_search(members->begin(), members->end(), key))
      return RoundStarted{next, RoundReason::member_arrived, key.endpoint};
  }
  return std::nullopt;
}

std::optional<RoundStarted> Rounds::blocked(const CoreContext& ctx, Time now) {
  if (!ctx.config.elastic || ctx.left || ended_) return std::nullopt;
  const auto gone = ctx.agreement.blocked_by_gone(ctx.table);
  if (!gone) {
    blocked_since_.reset();
    return std::nullopt;
  }
  // For as long as a later round's last call: a vote still on its way would settle it.
  if (!blocked_since_) blocked_since_ = now;
  if (now < *blocked_since_ + later_round_last_call(ctx.config)) return std::nullopt;
  const Member* row = ctx.table.find(gone->endpoint);
  const bool restarted = row != nullptr && row->ann->generation > gone->generation;
  return RoundStarted{ctx.config.round + 1,
                      restarted ? RoundReason::member_restarted : RoundReason::member_dead,
                      gone->endpoint};
}

}  // namespace gossip_rdzv::protocol
