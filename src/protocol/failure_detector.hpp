// SWIM's failure detector: once per probe interval ping one member (each live peer once per
// pass, in a random order: probe_order.hpp); without an ack within probe_timeout ping it
// again and ask a few others to ping it (PingReq); after probe_rounds unanswered periods
// suspect it, and declare it dead when the suspicion times out unrefuted.
// A rumour that suspects or buries us is refuted with a higher incarnation.
//
// Lifeguard's local health: a node that is itself slow (a host whose CPU is busy, a process
// that waits seconds to run) misses its own deadlines and would blame members that answered
// in time. A tick that comes well after the time we asked for, and a rumour that suspects us,
// make our health worse; an ack to our probe makes it better. Our probe interval and
// timeout, and the suspicions we start or learn, are multiplied by health + 1 (memberlist's
// awareness, at most kMaxHealth + 1; CoreContext::suspicion_timeout), and
// a probe whose timeout we only looked at late is given another timeout instead of being
// counted as unanswered: its ack may be among the messages we had no CPU to read.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core_context.hpp"
#include "probe_order.hpp"

namespace gossip_rdzv::protocol {

class Reachability;

class FailureDetector {
 public:
  void start(CoreContext& ctx, Time now);
  /// Probes due at `now` (reachability counts a probe left unanswered).
  void tick(CoreContext& ctx, Time now, Reachability& reachability);
  /// Declares dead the suspects whose suspicion timed out.
  void tick_suspicions(CoreContext& ctx, Time now);
  /// Forgets PingReq relays past their time.
  void tick_relays(Time now);
  /// A dedicated seed's whole tick: it probes the members it knows, suspects and buries them
  /// like a member, so that its `members` answer and the sample it gives joiners of a later
  /// job hold no process that left. It only watches: its pings carry no rumours, so its
  /// suspicions never reach the members (a member it cannot reach stays theirs to judge).
  void tick_as_dedicated_seed(CoreContext& ctx, Time now, Reachability& reachability);
  /// Drops the probe in flight (a seed that stops probing, OutcomeServer::go_quiet).
  void stop_probing() { probe_.reset(); }
  /// When tick or tick_suspicions next has work; `probing`: joined and not quiet.
  Time next_wakeup(const CoreContext& ctx, bool probing) const;

  /// Local health (CoreContext::local_health) is at most this: memberlist's
  /// AwarenessMaxMultiplier less one.
  static constexpr std::uint32_t kMaxHealth = 7;

  /// Spreads a membership change the table just made and reports it as an event.
  void note_member_change(CoreContext& ctx, MemberChange change, const MemberRecord& rumour);
  /// SWIM: someone suspects or buried us; outbid the rumour with a higher incarnation.
  void refute(CoreContext& ctx, const MemberRecord& rumour);

  void answer_ping(CoreContext& ctx, const Envelope& env, const Ping& ping);
  /// An ack to our probe (direct or relayed) or to a ping we relay.
  void on_ack(CoreContext& ctx, const Ack& ack);
  /// Pings `request.target` for the member that asked (SWIM's indirect probe).
  void relay(CoreContext& ctx, Time now, const Envelope& env, const PingReq& request);

 private:
  void suspect(CoreContext& ctx, const std::string& endpoint, Time now);
  static Time probe_interval(const CoreContext& ctx);
  static Time probe_timeout(const CoreContext& ctx);
  /// Ran this much after a deadline of ours: we were not running (probe_timeout / 2).
  static Time late_by(const CoreContext& ctx);
  static void worse(CoreContext& ctx) {
    ctx.local_health = std::min(ctx.local_health + 1, kMaxHealth);
    ctx.peak_local_health = std::max(ctx.peak_local_health, ctx.local_health);
  }
  static void better(CoreContext& ctx) { ctx.local_health -= ctx.local_health == 0 ? 0 : 1; }
  /// Lifeguard's buddy system: a ping to a member we suspect carries that suspicion.
  static void tell_suspect(const CoreContext& ctx, const std::string& target,
                           std::vector<MemberRecord>& updates);

  struct Probe {
    std::string target;
    std::uint64_t seq;
    Time sent_at;
    bool indirect_sent;
    std::uint32_t round;  ///< 1 for the first period of this target; see Timing::probe_rounds
    bool given_more_time = false;  ///< its timeout was re-armed once because we were late
  };
  struct Relay {
    std::string requester;
    std::uint64_t requester_seq;
    Time expires;
  };
  std::optional<Probe> probe_;
  ProbeOrder order_;  ///< which live peer a new probe goes to
  std::unordered_map<std::uint64_t, Relay> relays_;
  std::uint64_t next_seq_ = 0;
  Time next_probe_at_{0};
};

}  // namespace gossip_rdzv::protocol
