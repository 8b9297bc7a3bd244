// Serving the round's outcome once it is decided: report it (Committed, Fatal when no rank
// assignment exists, or NotAdmitted), then keep answering until every member knows it (or the
// commit grace runs out) and a little longer for late starters; tell nodes outside the
// committed view (extras beyond MAX, late joiners, restarts) the outcome whenever they talk
// to us. A seed stays longest, as it is whom late and restarted processes ask, and stops
// probing and gossiping once every member knows (it goes quiet).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core_context.hpp"

namespace gossip_rdzv::protocol {

class Dissemination;

class OutcomeServer {
 public:
  bool commit_reported() const { return commit_reported_; }
  /// The round's outcome is known, with us (commit_reported) or without us (not admitted).
  bool has_outcome() const { return commit_reported_ || not_admitted_reported_; }
  /// Committed and every member known to have committed, or the commit grace ran out.
  bool done() const { return done_; }
  /// A seed past the members' linger: answers, no probes or gossip.
  bool quiet() const { return quiet_; }

  /// After the agreement stepped: reports what it decided, and ends the round's service when
  /// it is time.
  void after_step(CoreContext& ctx, Time now, Dissemination& dissemination);
  /// Whether a seed goes quiet now (then it stops probing and pushing).
  bool go_quiet(const CoreContext& ctx, Time now);
  /// A seed tells the outsiders again once per probe interval while it stays.
  void tick_retell(CoreContext& ctx, Time now);
  /// When the outcome server next has work (kNever: none).
  Time next_wakeup(const CoreContext& ctx) const;

  /// Answers a Join from a process outside the committed view with the outcome alone;
  /// returns whether it did (the Join gets no JoinReply then).
  bool answer_outsider_join(CoreContext& ctx, const Envelope& env);
  /// A member that joins after we committed (it missed the commit) learns it at once.
  void tell_joiner_outcome(CoreContext& ctx, const Envelope& env);
  /// Answers a message from outside the committed view that nothing else answered.
  void answer_outsider(CoreContext& ctx, Time now, const Envelope& msg);

 private:
  /// Whether we committed and `endpoint`/`generation` is no member of the committed view.
  bool outside_committed_view(const CoreContext& ctx, const std::string& endpoint,
                              std::uint64_t generation) const;
  void report_commit(CoreContext& ctx, Time now, Dissemination& dissemination);
  void report_not_admitted(CoreContext& ctx);
  bool awaits_next_round(const CoreContext& ctx) const;
  void tell_outsiders(CoreContext& ctx, const MemberList& members);
  bool seed_stays_quietly(const CoreContext& ctx) const;
  Time stay_until(const CoreContext& ctx) const;
  Time linger_until(const CoreContext& ctx) const;
  Time member_linger_until(const CoreContext& ctx) const;

  bool commit_reported_ = false;
  bool not_admitted_reported_ = false;
  bool done_ = false;
  bool quiet_ = false;
  bool asked_for_announcements_ = false;
  bool pushed_full_commit_ = false;
  Time committed_at_{0};
  std::optional<Time> last_outsider_heard_;  ///< last message from outside the committed view
  Time next_retell_at_{0};                   ///< tick_retell (a seed, after its commit)
};

}  // namespace gossip_rdzv::protocol
