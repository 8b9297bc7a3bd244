// The core's router: it holds the parts (core_context.hpp lists them) and hands each message
// and tick to the parts concerned, in a fixed order, so that the same inputs give the same
// outputs in the same order (the simulator replays runs from their seed).
#include "core.hpp"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "agreement_link.hpp"
#include "bootstrap.hpp"
#include "core_context.hpp"
#include "dissemination.hpp"
#include "failure_detector.hpp"
#include "outcome_server.hpp"
#include "reachability.hpp"
#include "rounds.hpp"

namespace gossip_rdzv::protocol {

struct Core::Impl {
  explicit Impl(CoreConfig config) : ctx(std::move(config)), bootstrap(ctx), link(ctx) {}

  CoreContext ctx;
  Bootstrap bootstrap;
  FailureDetector detector;
  Dissemination dissemination;
  Reachability reachability;
  OutcomeServer outcome;
  AgreementLink link;
  Rounds rounds;
  bool started = false;
  std::unordered_set<std::string> refused;     ///< peers we refused (reported once each)
  std::unordered_set<std::string> refused_by;  ///< peers that refused us (reported once each)

  /// Merges rumours into the table, refuting those about us and checking every peer's
  /// configuration against ours.
  void learn(const std::vector<MemberRecord>& records, const std::string& via, Time now) {
    for (const auto& rumour : records) {
      if (rumour.ann.endpoint.empty()) continue;
      if (rumour.ann.endpoint == ctx.config.self.endpoint) {
        if (link.other_process_at_our_endpoint(ctx, rumour.ann)) continue;
        detector.refute(ctx, rumour);
        if (rumour.status != MemberStatus::alive) tell_alive(via, now);
        continue;
      }
      link.check_peer(ctx, rumour.ann);
      const auto change = ctx.table.merge(rumour, now, ctx.suspicion_clock(now), via);
      detector.note_member_change(ctx, change, rumour);
      if (change != MemberChange::none) note_if_final(rumour);
    }
  }
  /// `peer` sent us a rumour of our suspicion or death, so it holds us suspect or dead. Our
  /// refutation spreads by gossip to the members we hold alive; when `peer` is one we hold
  /// dead too (two sides of a long partition bury each other), nothing else would ever
  /// carry it there. So it gets our row directly, at most once a gossip period.
  void tell_alive(const std::string& peer, Time now) {
    if (peer.empty() || peer == ctx.config.self.endpoint || ctx.left || ctx.config.seed_only)
      return;
    const Time period = as_time(ctx.config.timing.gossip_interval);
    if (now >= told_window_start + period) {
      // An entry older than a period no longer holds anything back: dropping them keeps the
      // map to this period's and the last one's accusers, at most 2 * kMaxAccusersTold.
      std::erase_if(told_alive, [&](const auto& entry) { return entry.second + period <= now; });
      told_window_start = now;
      told_in_window = 0;
    }
    auto it = told_alive.find(peer);
    if (it != told_alive.end() && now < it->second + period) return;
    // The sender's endpoint is its own claim: a flood of rumours under made-up senders must
    // not make us write to every address it names. One refutation that reaches the other
    // side spreads there by gossip, so a few a period are enough after a partition heals.
    if (told_in_window >= kMaxAccusersTold) return;
    ++told_in_window;
    told_alive.insert_or_assign(peer, now);
    Gossip news;
    news.updates.push_back(ctx.self_record());
    ctx.send(peer, std::move(news));
  }
  /// Accusers tell_alive() answers per gossip period.
  static constexpr std::size_t kMaxAccusersTold = 8;
  std::unordered_map<std::string, Time> told_alive;  ///< tell_alive(): when each peer was told
  Time told_window_start{0};
  std::size_t told_in_window = 0;
  /// A member left the job for good (merged, so it is the newest news of it): a joiner
  /// hears of it from us, and the job may be over for us too (Rounds::note_final).
  void note_if_final(const MemberRecord& record) {
    if (!is_final_death(record)) return;
    ctx.note_final(record);
    if (auto ended = rounds.note_final(ctx, record)) ctx.events.push_back(std::move(*ended));
  }
  /// Leaves the job at `incarnation` (kLeftIncarnation or an aborted one): our row says so
  /// from now on and gossip spreads it.
  void leave_at(Time now, std::uint64_t incarnation) {
    if (ctx.left || ctx.config.seed_only) return;
    ctx.left = true;
    ctx.left_incarnation = incarnation;
    ctx.table.set_self(ctx.self_record());
    ctx.note_final(ctx.self_record());
    ctx.table.enqueue(ctx.config.self.endpoint, ctx.retransmits());
    dissemination.push(ctx, ctx.config.timing.gossip_fanout);
    dissemination.note_pushed(now);
    // The seeds are where a node that starts later asks first: they keep the news for it
    // (a dedicated seed is no member, so gossip alone might never reach it).
    for (const auto& seed : ctx.config.seeds) {
      Gossip news;
      news.updates.push_back(ctx.self_record());
      ctx.send(seed, std::move(news));
    }
  }
  void learn_views(const Envelope& env, const std::vector<ViewClaim>& claims, Time now) {
    follow_later_round(env, claims, now);
    link.learn_views(ctx, claims, env.sender, env.sender_generation, now, dissemination);
  }

  // ---- elastic rounds (rounds.hpp) ------------------------------------------------------------
  /// Leaves the current round for `next.round`: a fresh agreement and outcome over the same
  /// table; the caller's workers of the earlier round must stop (the event says so).
  void start_round(Time now, RoundStarted next) {
    ctx.start_round(next.round);
    link.start_round(ctx);
    outcome = OutcomeServer{};
    rounds.started();
    ctx.events.push_back(std::move(next));
    dissemination.push(ctx, ctx.config.timing.gossip_fanout);
    dissemination.note_pushed(now);
  }
  /// A peer claims a view of a later round: that round started, so ours is over. Claims
  /// come only from nodes in that round, which every node reaches only after a commit.
  void follow_later_round(const Envelope& env, const std::vector<ViewClaim>& claims, Time now) {
    if (ctx.left || !(ctx.config.elastic || ctx.config.seed_only)) return;
    std::uint32_t later = ctx.config.round;
    for (const auto& claim : claims) later = std::max(later, claim.round);
    if (later == ctx.config.round) return;
    if (ctx.config.seed_only) {
      ctx.config.round = later;
      link.start_round(ctx);
      return;
    }
    start_round(now, RoundStarted{later, RoundReason::peer_moved_on, env.sender});
  }
  void start_round_if_due(Time now) {
    auto next = rounds.due(ctx, outcome.commit_reported());
    if (!next) next = rounds.blocked(ctx, now);
    if (next) {
      start_round(now, std::move(*next));
      step_agreement(now);
    }
  }

  void step_agreement(Time now) {
    if (link.step(ctx, now, bootstrap.joined())) outcome.after_step(ctx, now, dissemination);
    if (outcome.commit_reported()) rounds.note_commit();
  }

  /// Joined and not a quiet seed: probes and gossip run.
  bool active() const { return bootstrap.joined() && !outcome.quiet(); }

  // ---- message handlers ----------------------------------------------------------------------
  void handle(Time now, const Envelope& env, const Join& join) {
    learn({join.self}, env.sender, now);
    // on_message noted the sender before this Join created its row: note it now, so a
    // joiner that goes silent right after reads "last heard", not "never heard directly".
    ctx.table.heard_from(env.sender, env.sender_generation, now);
    reachability.note_join(ctx, now, env.sender, env.sender_generation);
    if (outcome.answer_outsider_join(ctx, env)) return;
    bootstrap.answer_join(ctx, now, env, join);
    outcome.tell_joiner_outcome(ctx, env);
  }
  void handle(Time now, const Envelope& env, const JoinReply& reply) {
    bootstrap.mark_joined(ctx, env.sender);
    learn(reply.sample, env.sender, now);
    dissemination.exchange_tables_now(now);  // one full exchange right away, then periodic
  }
  void handle(Time now, const Envelope& env, const Ping& ping) {
    bootstrap.mark_joined(ctx, env.sender);
    learn(ping.updates, env.sender, now);
    learn_views(env, ping.views, now);
    detector.answer_ping(ctx, env, ping);
  }
  void handle(Time now, const Envelope& env, const Ack& ack) {
    bootstrap.mark_joined(ctx, env.sender);
    learn(ack.updates, env.sender, now);
    learn_views(env, ack.views, now);
    // An ack from the member itself answers a ping we sent to its advertised endpoint.
    reachability.note_answered(env.sender);
    detector.on_ack(ctx, ack);
  }
  void handle(Time now, const Envelope& env, const PingReq& request) {
    bootstrap.mark_joined(ctx, env.sender);
    detector.relay(ctx, now, env, request);
  }
  void handle(Time now, const Envelope& env, const Gossip& gossip) {
    bootstrap.mark_joined(ctx, env.sender);
    if (ctx.config.seed_only) {
      follow_later_round(env, gossip.views, now);
      link.answer_as_witness(ctx, env.sender, gossip.views);
      // A member's final death is kept for joiners (note_if_final): a node that starts
      // after the job ended hears so from the seed instead of waiting for its timeout.
      for (const auto& record : gossip.updates) {
        if (is_final_death(record)) learn({record}, env.sender, now);
      }
    }
    if (ctx.config.seed_only && ctx.is_seed(env.sender)) {
      // Joiners another dedicated seed took in: introduce the ones new to us.
      for (const auto& record : gossip.updates) {
        const bool known = ctx.table.find(record.ann.endpoint) != nullptr;
        learn({record}, env.sender, now);
        if (!known && ctx.table.find(record.ann.endpoint) != nullptr)
          bootstrap.introduce(ctx, record);
      }
      return;
    }
    learn(gossip.updates, env.sender, now);
    learn_views(env, gossip.views, now);
    dissemination.answer(ctx, env, gossip);
  }
  void handle(Time now, const Envelope& env, const Query&) {
    std::vector<const Member*> rows;
    for (const auto& row : ctx.table.rows()) rows.push_back(&row);
    std::sort(rows.begin(), rows.end(),
              [](const auto* a, const auto* b) { return a->ann->endpoint < b->ann->endpoint; });
    QueryReply reply;
    for (const auto* row : rows) {
      reply.members.push_back(ctx.table.record(*row));
      const bool heard = row->last_heard > Time::zero() && row->last_heard <= now;
      reply.last_heard_ms.push_back(
          heard ? static_cast<std::uint64_t>(
                      std::chrono::duration_cast<std::chrono::milliseconds>(now - row->last_heard)
                          .count())
                : QueryReply::kNeverHeard);
    }
    reply.views = ctx.views(env);
    ctx.send(env.sender, std::move(reply));
  }
  void handle(Time, const Envelope&, const QueryReply&) {}
  void handle(Time, const Envelope& env, const Refuse& refuse) {
    if (refused_by.insert(env.sender).second) {
      ctx.events.push_back(PeerRefused{env.sender, refuse.reason, refuse.detail, false});
    }
  }
  void handle(Time, const Envelope& env, const Unreachable& notice) {
    reachability.on_notice(ctx, env, notice);
  }

  void refuse(const std::string& peer, RefuseReason reason, std::string detail) {
    Refuse message;
    message.reason = reason;
    message.detail = detail;
    ctx.send(peer, std::move(message));
    if (refused.insert(peer).second) {
      ctx.events.push_back(PeerRefused{peer, reason, std::move(detail), true});
    }
  }
};

Core::Core(CoreConfig config) : impl_(std::make_unique<Impl>(std::move(config))) {}
Core::~Core() = default;
Core::Core(Core&&) noexcept = default;
Core& Core::operator=(Core&&) noexcept = default;

void Core::start(Time now) {
  Impl& s = *impl_;
  CoreContext& ctx = s.ctx;
  if (s.started) return;
  s.started = true;
  s.bootstrap.start(ctx, now);
  s.detector.start(ctx, now);
  s.dissemination.start(ctx, now);
  if (!ctx.config.seed_only) {
    ctx.table.set_self(ctx.self_record());
    ctx.table.enqueue(ctx.config.self.endpoint, ctx.retransmits());
  }
  // The only seed, or a dedicated one: a dedicated seed never joins anyone (its Join would
  // announce it as a member); other dedicated seeds hear of its joiners (answer_join).
  if (ctx.config.seeds.empty() || ctx.config.seed_only)
    s.bootstrap.mark_joined(ctx, ctx.config.self.endpoint);
  s.bootstrap.tick(ctx, now, s.outcome.has_outcome());
  s.step_agreement(now);
}

void Core::on_message(Time now, const Envelope& msg) {
  Impl& s = *impl_;
  CoreContext& ctx = s.ctx;
  if (const auto* refuse = std::get_if<Refuse>(&msg.body)) {
    s.handle(now, msg, *refuse);
    return;
  }
  if (msg.sender.empty()) return;
  if (msg.sender == ctx.config.self.endpoint &&
      msg.sender_generation == ctx.config.self.generation) {
    // Our own message came back: some peer's advertised endpoint leads to this very node
    // (e.g. it advertises 127.0.0.1). It is no answer from that peer.
    return;
  }
  if (msg.version != kProtocolVersion) {
    on_version_mismatch(now, msg.sender, msg.version);
    return;
  }
  if (msg.run_id != ctx.config.run_id) {
    s.refuse(msg.sender, RefuseReason::run_id_mismatch,
             "node " + ctx.config.self.endpoint + " belongs to run '" + ctx.config.run_id +
                 "', the message came from run '" + msg.run_id + "'");
    return;
  }
  ctx.table.heard_from(msg.sender, msg.sender_generation, now);
  std::visit([&](const auto& body) { s.handle(now, msg, body); }, msg.body);
  if (!std::holds_alternative<Unreachable>(msg.body)) s.reachability.maybe_tell(ctx, now, msg);
  s.step_agreement(now);
  s.start_round_if_due(now);
  s.outcome.answer_outsider(ctx, now, msg);
}

void Core::on_version_mismatch(Time, const std::string& sender, std::uint16_t their_version) {
  impl_->refuse(sender, RefuseReason::version_mismatch,
                "node " + impl_->ctx.config.self.endpoint +
                    " speaks gossip-rdzv protocol version " + std::to_string(kProtocolVersion) +
                    ", the message came with version " + std::to_string(their_version));
}

void Core::on_tick(Time now) {
  Impl& s = *impl_;
  CoreContext& ctx = s.ctx;
  if (!s.started) return;
  s.bootstrap.tick(ctx, now, s.outcome.has_outcome());
  if (ctx.config.seed_only) {
    s.detector.tick_as_dedicated_seed(ctx, now, s.reachability);
    return;
  }
  s.detector.tick_suspicions(ctx, now);
  s.bootstrap.forward_joiners(ctx, now);
  if (s.outcome.go_quiet(ctx, now)) {
    s.detector.stop_probing();
    ctx.dirty = false;
  }
  if (s.active()) s.detector.tick(ctx, now, s.reachability);
  s.step_agreement(now);
  if (s.active()) s.dissemination.tick(ctx, now, !s.outcome.commit_reported(), s.link);
  s.outcome.tick_retell(ctx, now);
  s.detector.tick_relays(now);
  s.step_agreement(now);
  s.start_round_if_due(now);
}

std::optional<Outgoing> Core::poll_send() {
  auto& outbox = impl_->ctx.outbox;
  if (outbox.empty()) return std::nullopt;
  Outgoing out = std::move(outbox.front());
  outbox.pop_front();
  return out;
}

std::optional<Event> Core::poll_event() {
  auto& events = impl_->ctx.events;
  if (events.empty()) return std::nullopt;
  Event event = std::move(events.front());
  events.pop_front();
  return event;
}

Time Core::next_wakeup() const {
  const Impl& s = *impl_;
  const CoreContext& ctx = s.ctx;
  if (!s.started) return kNever;
  if (ctx.config.seed_only) return s.detector.next_wakeup(ctx, true);
  Time next = s.bootstrap.next_wakeup(ctx, s.outcome.has_outcome());
  next = std::min(next, s.detector.next_wakeup(ctx, s.active()));
  next = std::min(next, s.dissemination.next_wakeup(ctx, s.active(), !s.outcome.commit_reported()));
  if (auto deadline = ctx.agreement.next_deadline()) next = std::min(next, *deadline);
  return std::min(next, s.outcome.next_wakeup(ctx));
}

bool Core::joined() const {
  return impl_->bootstrap.joined();
}
bool Core::commit_reported() const {
  return impl_->outcome.commit_reported();
}
bool Core::done() const {
  return impl_->outcome.done();
}

std::uint32_t Core::round() const {
  return impl_->ctx.config.round;
}

bool Core::request_next_round(Time now) {
  Impl& s = *impl_;
  if (!s.ctx.config.elastic || s.ctx.left || !s.outcome.commit_reported()) return false;
  s.rounds.request();
  s.start_round_if_due(now);
  return true;
}

void Core::leave(Time now) {
  impl_->leave_at(now, kLeftIncarnation);
}

void Core::abort(Time now, std::uint32_t rank, int status) {
  impl_->leave_at(now, aborted_incarnation(rank, status));
}

bool Core::left() const {
  return impl_->ctx.left;
}

std::uint32_t Core::local_health() const {
  return impl_->ctx.local_health;
}

bool Core::job_finished() const {
  return protocol::job_finished(impl_->ctx);
}
const CoreConfig& Core::config() const {
  return impl_->ctx.config;
}

Snapshot Core::snapshot() const {
  const Impl& s = *impl_;
  const CoreContext& ctx = s.ctx;
  Snapshot snap;
  snap.joined = s.bootstrap.joined();
  snap.commit_reported = s.outcome.commit_reported();
  snap.done = s.outcome.done();
  for (const auto& row : ctx.table.rows()) {
    snap.members.push_back(
        MemberView{*row.ann, row.status, row.incarnation, row.last_heard, ctx.table.teller(row)});
  }
  std::sort(snap.members.begin(), snap.members.end(),
            [](const auto& a, const auto& b) { return a.ann.endpoint < b.ann.endpoint; });
  snap.held = ctx.agreement.held_view();
  if (!ctx.config.seed_only) snap.seeds = ctx.agreement.base_status();
  snap.unreachable = s.reachability.unreachable_peers();
  snap.peak_local_health = ctx.peak_local_health;
  return snap;
}

void Core::check_invariants() const {
  const Impl& s = *impl_;
  const CoreContext& ctx = s.ctx;
  ctx.agreement.check_invariants();
  s.link.check_invariants();
  const Member* self = ctx.table.find(ctx.config.self.endpoint);
  // We never hold a rumour of our own death (we refute it), unless we left.
  const MemberStatus expected = ctx.left ? MemberStatus::dead : MemberStatus::alive;
  if (!ctx.config.seed_only && s.started && (self == nullptr || self->status != expected)) {
    std::abort();
  }
}

}  // namespace gossip_rdzv::protocol
