#include "failure_detector.hpp"

#include <algorithm>

#include "reachability.hpp"

namespace gossip_rdzv::protocol {
namespace {

constexpr std::size_t kMaxRelays = 1024;  // PingReq relays in flight; more are dropped

}  // namespace

void FailureDetector::start(CoreContext& ctx, Time now) {
  next_probe_at_ = now + probe_interval(ctx);
}

Time FailureDetector::probe_interval(const CoreContext& ctx) {
  return as_time(ctx.config.timing.probe_interval) * (ctx.local_health + 1);
}

Time FailureDetector::probe_timeout(const CoreContext& ctx) {
  return as_time(ctx.config.timing.probe_timeout) * (ctx.local_health + 1);
}

Time FailureDetector::late_by(const CoreContext& ctx) {
  return as_time(ctx.config.timing.probe_timeout) / 2;
}

void FailureDetector::note_member_change(CoreContext& ctx, MemberChange change,
                                         const MemberRecord& rumour) {
  if (change == MemberChange::none) return;
  // A new member is news for the periodic push, not a reason to push at once: in a join
  // storm every node learns a row every few milliseconds and would push each time (the
  // agreement pushes at once what the rendezvous waits for: the claims).
  ctx.table.enqueue(rumour.ann.endpoint, ctx.retransmits());
  // A confirmation only shortens a timeout of seconds: the periodic push carries it soon
  // enough, and pushing at once would make every member push for every accuser.
  if (change != MemberChange::joined && change != MemberChange::confirmed) ctx.dirty = true;
  switch (change) {
    case MemberChange::joined:
    case MemberChange::restarted:
      ctx.events.push_back(MemberUp{rumour.ann});
      break;
    case MemberChange::suspected:
      ctx.events.push_back(MemberSuspected{rumour.ann.endpoint});
      break;
    case MemberChange::died:
      ctx.events.push_back(MemberDead{rumour.ann.endpoint, is_final_death(rumour)});
      break;
    default:
      break;
  }
}

void FailureDetector::refute(CoreContext& ctx, const MemberRecord& rumour) {
  if (rumour.ann.generation != ctx.config.self.generation) return;  // an older process of ours
  // Having left we stay gone; nothing refutes a leave (final incarnations are the highest).
  if (ctx.left || is_final_incarnation(rumour.incarnation)) return;
  if (rumour.status == MemberStatus::alive || rumour.incarnation < ctx.incarnation) return;
  worse(ctx);  // suspected by others: most often we were too slow to answer (Lifeguard)
  ctx.incarnation = rumour.incarnation + 1;
  ctx.table.set_self(ctx.self_record());
  ctx.table.enqueue(ctx.config.self.endpoint, ctx.retransmits());
  ctx.dirty = true;
}

void FailureDetector::tick_suspicions(CoreContext& ctx, Time now) {
  for (const auto& endpoint : ctx.table.expired_suspects(now)) {
    if (!ctx.table.declare_dead(endpoint, now)) continue;
    const Member* row = ctx.table.find(endpoint);
    ctx.table.enqueue(endpoint, ctx.retransmits());
    ctx.dirty = true;
    ctx.events.push_back(MemberDead{row->ann->endpoint});
  }
}

void FailureDetector::suspect(CoreContext& ctx, const std::string& endpoint, Time now) {
  const std::string& self = ctx.config.self.endpoint;
  if (!ctx.table.suspect(endpoint, ctx.suspicion_clock(now), self)) {
    // Suspected already, by others: our own unanswered probes confirm it (Lifeguard), and
    // the confirmation spreads under our name so that every member's timeout shrinks.
    if (ctx.table.confirm(endpoint, self)) ctx.table.enqueue(endpoint, ctx.retransmits());
    return;
  }
  ctx.table.enqueue(endpoint, ctx.retransmits());
  ctx.dirty = true;
  ctx.events.push_back(MemberSuspected{endpoint});
}

void FailureDetector::tick(CoreContext& ctx, Time now, Reachability& reachability) {
  const Timing& timing = ctx.config.timing;
  if (probe_ && !probe_->indirect_sent && !probe_->given_more_time) {
    const Time timeout_at = probe_->sent_at + probe_timeout(ctx);
    if (now >= timeout_at && now - timeout_at > late_by(ctx)) {
      // We come to this timeout late: we were not running, and the ack may be waiting
      // unread. Another (longer) timeout from now, not a failure of the target; once per
      // probe, so that a node that is always late still finds a dead member.
      worse(ctx);
      probe_->sent_at = now;
      probe_->given_more_time = true;
    }
  }
  if (probe_ && !probe_->indirect_sent && now >= probe_->sent_at + probe_timeout(ctx)) {
    probe_->indirect_sent = true;
    reachability.note_unanswered_probe(ctx, probe_->target, now);
    // A second direct ping next to the indirect ones (memberlist pings over TCP here): one
    // lost ping or ack does not leave the target to three 4-hop paths alone.
    Ping retry;
    retry.seq = probe_->seq;
    ctx.send(probe_->target, std::move(retry));
    for (const auto& helper :
         ctx.table.sample_peers(ctx.prng, timing.indirect_probes, probe_->target)) {
      PingReq request;
      request.seq = probe_->seq;
      request.target = probe_->target;
      ctx.send(helper, std::move(request));
    }
  }
  if (now < next_probe_at_) return;
  if (now - next_probe_at_ > late_by(ctx)) worse(ctx);
  if (probe_ && probe_->given_more_time && !probe_->indirect_sent &&
      probe_->sent_at + probe_interval(ctx) > now) {
    // Its timeout was re-armed because we were late: its period runs from there.
    next_probe_at_ = probe_->sent_at + probe_interval(ctx);
    return;
  }
  next_probe_at_ = now + probe_interval(ctx);
  // Neither direct nor indirect ack in a period: probe the same member again, and suspect
  // it only after `probe_rounds` such periods in a row.
  std::optional<Probe> unanswered = std::move(probe_);
  probe_.reset();
  std::string target;
  std::uint32_t round = 1;
  if (unanswered) {
    if (unanswered->round >= timing.probe_rounds) {
      suspect(ctx, unanswered->target, now);
    } else if (const Member* row = ctx.table.find(unanswered->target);
               row != nullptr && row->status != MemberStatus::dead) {
      target = unanswered->target;
      round = unanswered->round + 1;
    }
  }
  if (target.empty()) {
    const auto& live = ctx.table.live_peers();
    const auto next = order_.next(live.size(), ctx.prng);
    if (!next) return;
    target = ctx.table.rows()[live[*next]].ann->endpoint;
  }
  Ping ping;
  ping.seq = ++next_seq_;
  if (!ctx.config.seed_only) ping.updates = ctx.table.take_piggyback(timing.max_piggyback);
  tell_suspect(ctx, target, ping.updates);
  ping.views = ctx.views(target);
  probe_ = Probe{target, ping.seq, now, false, round};
  ctx.send(target, std::move(ping));
}

// The member hears the suspicion from us at once and refutes, instead of waiting for the
// rumour to reach it.
void FailureDetector::tell_suspect(const CoreContext& ctx, const std::string& target,
                                   std::vector<MemberRecord>& updates) {
  const Member* row = ctx.table.find(target);
  if (row != nullptr && row->status == MemberStatus::suspect)
    add_update_once(updates, ctx.table.record(*row));
}

void FailureDetector::tick_as_dedicated_seed(CoreContext& ctx, Time now,
                                             Reachability& reachability) {
  tick_suspicions(ctx, now);
  tick(ctx, now, reachability);
  tick_relays(now);
}

void FailureDetector::tick_relays(Time now) {
  std::erase_if(relays_, [&](const auto& entry) { return entry.second.expires <= now; });
}

Time FailureDetector::next_wakeup(const CoreContext& ctx, bool probing) const {
  Time next = kNever;
  if (probing) next = std::min(next, next_probe_at_);
  if (probe_ && !probe_->indirect_sent) next = std::min(next, probe_->sent_at + probe_timeout(ctx));
  if (auto deadline = ctx.table.earliest_suspect_deadline()) next = std::min(next, *deadline);
  return next;
}

void FailureDetector::answer_ping(CoreContext& ctx, const Envelope& env, const Ping& ping) {
  Ack ack;
  ack.seq = ping.seq;
  ack.updates = ctx.table.take_piggyback(ctx.config.timing.max_piggyback);
  ack.views = ctx.views(env);
  ctx.send(env.sender, std::move(ack));
}

void FailureDetector::on_ack(CoreContext& ctx, const Ack& ack) {
  // Direct or relayed by a PingReq helper: the sequence number alone identifies the probe.
  if (probe_ && probe_->seq == ack.seq) {
    probe_.reset();
    better(ctx);
  }
  auto relay = relays_.find(ack.seq);
  if (relay != relays_.end()) {
    Ack forwarded;
    forwarded.seq = relay->second.requester_seq;
    ctx.send(relay->second.requester, std::move(forwarded));
    relays_.erase(relay);
  }
}

void FailureDetector::relay(CoreContext& ctx, Time now, const Envelope& env,
                            const PingReq& request) {
  if (relays_.size() >= kMaxRelays || request.target == ctx.config.self.endpoint) return;
  const std::uint64_t seq = ++next_seq_;
  relays_[seq] = Relay{env.sender, request.seq, now + as_time(ctx.config.timing.probe_interval)};
  Ping ping;
  ping.seq = seq;
  ctx.send(request.target, std::move(ping));
}

}  // namespace gossip_rdzv::protocol
