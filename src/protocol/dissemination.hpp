// Spreading what a node knows: every gossip period a push of piggybacked rumours and claims
// to a few peers (at once, rate-limited, when there is news), a periodic full-table exchange
// with one peer (push-pull), table pulls from peers that know members we lack, and a few
// words for members buried recently, who refute only once they hear it. After a commit the
// pushes go to the committed view's members, first those not known to know the outcome.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "core_context.hpp"

namespace gossip_rdzv::protocol {

class AgreementLink;

class Dissemination {
 public:
  void start(CoreContext& ctx, Time now);
  /// Periodic and news-driven pushes, and the full-table exchange while `exchanging` (no
  /// outcome reported yet).
  void tick(CoreContext& ctx, Time now, bool exchanging, const AgreementLink& link);
  /// When tick next has work; `pushing`: joined and not quiet.
  Time next_wakeup(const CoreContext& ctx, bool pushing, bool exchanging) const;

  /// Gossip with piggybacked rumours and our claims to `fanout` peers; with `skip_empty`,
  /// none to a peer for whom there is neither.
  void push(CoreContext& ctx, std::size_t fanout, bool skip_empty = false);
  /// A push went out now (the news gap runs from here).
  void note_pushed(Time now) { last_push_at_ = now; }
  /// The next tick exchanges full tables with a peer.
  void exchange_tables_now(Time now) { next_push_pull_at_ = now; }
  /// Asks `peer` for its table (at most once per gossip period, before the commit).
  void pull_table(CoreContext& ctx, const std::string& peer, Time now);
  /// Answers a Gossip that wants a reply with our full table and claims.
  void answer(CoreContext& ctx, const Envelope& env, const Gossip& gossip);

 private:
  std::vector<std::string> targets(CoreContext& ctx, std::size_t count);
  void pass_over_seeds(CoreContext& ctx, std::vector<std::string>& picked);
  std::optional<std::string> push_pull_partner(CoreContext& ctx);
  void gossip_to_the_dead(CoreContext& ctx, Time now);
  /// After we left: our final row joins `updates` unless it is there.
  static void add_own_leave(const CoreContext& ctx, std::vector<MemberRecord>& updates);
  Time push_pull_gap(const CoreContext& ctx) const;
  static std::vector<MemberRecord> full_state(const CoreContext& ctx);

  Time next_gossip_at_{0};
  Time next_push_pull_at_{0};
  Time next_table_pull_at_{0};  ///< rate limit of pull_table()
  Time last_push_at_{0};
};

}  // namespace gossip_rdzv::protocol
