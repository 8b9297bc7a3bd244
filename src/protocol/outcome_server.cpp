#include "outcome_server.hpp"

#include <algorithm>

#include "dissemination.hpp"
#include "rank_assignment.hpp"

namespace gossip_rdzv::protocol {

void OutcomeServer::after_step(CoreContext& ctx, Time now, Dissemination& dissemination) {
  const Agreement& agreement = ctx.agreement;
  if (agreement.committed() && !commit_reported_) report_commit(ctx, now, dissemination);
  if (agreement.not_admitted() && !not_admitted_reported_ && !awaits_next_round(ctx))
    report_not_admitted(ctx);
  if (agreement.everyone_committed() && !pushed_full_commit_) {
    // Our caller may stop once we are done: hand the complete commit set to a few members
    // now, or one that still lacks a bit only we had would wait out its grace.
    pushed_full_commit_ = true;
    dissemination.push(ctx, ctx.config.timing.gossip_fanout);
  }
  if (agreement.committed() && !done_ && commit_reported_ &&
      (now >= stay_until(ctx) || (agreement.everyone_committed() && now >= linger_until(ctx)))) {
    done_ = true;
  }
}

void OutcomeServer::report_commit(CoreContext& ctx, Time now, Dissemination& dissemination) {
  const auto members = ctx.agreement.committed_members(ctx.table);
  const auto view = ctx.agreement.committed_view();
  if (members.size() != view->members.size()) {
    // We adopted a commit but do not know every member's announcement yet (e.g. we
    // restarted and learned the outcome from one gossip): ask for the full table now.
    if (!asked_for_announcements_) {
      asked_for_announcements_ = true;
      dissemination.exchange_tables_now(now);
    }
    return;
  }
  commit_reported_ = true;
  committed_at_ = now;
  // Our ready and commit bits go out now, not on the next push: a caller that stops on this
  // outcome (a rank conflict is fatal) must not take the last bits its peers need with it.
  dissemination.push(ctx, ctx.config.timing.gossip_fanout);
  dissemination.note_pushed(now);
  tell_outsiders(ctx, view->members);
  next_retell_at_ = now + as_time(ctx.config.timing.probe_interval);
  const CoreConfig& config = ctx.config;
  auto result = assign_ranks(members, config.self.endpoint, config.run_id, config.round,
                             ctx.agreement.committed_seniors());
  if (auto* error = std::get_if<AssignmentError>(&result)) {
    ctx.events.push_back(Fatal{error->code, error->message});
  } else {
    auto& assignment = std::get<Assignment>(result);
    std::vector<MemberKey> by_rank;
    for (const NodeEntry& node : assignment.nodes)
      by_rank.push_back(MemberKey{node.endpoint, node.generation});
    ctx.last_outcome.emplace(config.round, std::move(by_rank));
    ctx.events.push_back(Committed{std::move(assignment)});
  }
}

// An elastic round that committed without us is not the end when its members will start
// another that can hold us: it is below MAX (they see us alive outside it), or it holds our
// endpoint's previous process (they see it restarted) (docs/protocol.md, "Rounds").
bool OutcomeServer::awaits_next_round(const CoreContext& ctx) const {
  if (!ctx.config.elastic) return false;
  const auto view = ctx.agreement.foreign_commit();
  if (!view) return false;
  if (view->members.size() < ctx.config.max_nodes) return true;
  return std::any_of(view->members.begin(), view->members.end(), [&](const MemberKey& key) {
    return key.endpoint == ctx.config.self.endpoint;
  });
}

void OutcomeServer::report_not_admitted(CoreContext& ctx) {
  not_admitted_reported_ = true;
  NotAdmitted event;
  event.round = ctx.config.round;
  if (auto view = ctx.agreement.foreign_commit()) {
    event.view_size = static_cast<std::uint32_t>(view->members.size());
    for (const auto& key : view->members) {
      if (key.endpoint == ctx.config.self.endpoint) event.previous_process_in_view = true;
    }
  }
  ctx.events.push_back(event);
}

// A seed that stays past a member's linger only answers: every member knows the outcome,
// and probing or gossiping to members that have left would only fill their queues.
// An elastic job's members never go quiet: failure detection must go on while the workers run.
bool OutcomeServer::seed_stays_quietly(const CoreContext& ctx) const {
  return !ctx.config.elastic && ctx.am_seed() && commit_reported_ && !done_ &&
         ctx.agreement.everyone_committed();
}

bool OutcomeServer::go_quiet(const CoreContext& ctx, Time now) {
  if (quiet_ || !seed_stays_quietly(ctx) || now < member_linger_until(ctx)) return false;
  quiet_ = true;
  return true;
}

// A seed tells the outsiders again once per probe interval while it stays (stay_until):
// one whose Join arrived after the commit, and whose answer was lost, may next ask only
// seconds later (join backoff), and a member's PingReq can make it joined without a row.
void OutcomeServer::tick_retell(CoreContext& ctx, Time now) {
  if (!commit_reported_ || done_ || !ctx.am_seed() || now < next_retell_at_) return;
  next_retell_at_ = now + as_time(ctx.config.timing.probe_interval);
  // The interned member list, not committed_view(): that copies every member each time.
  if (const MemberList* members = ctx.agreement.committed_member_list())
    tell_outsiders(ctx, *members);
}

// Members are told by gossip until they all know; a live node outside the view (an extra
// beyond MAX, a late joiner) is not a gossip target after the commit and would wait for
// its own join timeout once the members leave. Tell each one once, now.
void OutcomeServer::tell_outsiders(CoreContext& ctx, const MemberList& members) {
  for (std::uint32_t index : ctx.table.live_peers()) {
    const std::string& peer = ctx.table.rows()[index].ann->endpoint;
    // members are sorted by (endpoint, generation): find the endpoint by binary search.
    auto it = std::lower_bound(members.begin(), members.end(), MemberKey{peer, 0});
    if (it != members.end() && it->endpoint == peer) continue;
    Gossip outcome;
    outcome.views = ctx.views(peer);
    ctx.send(peer, std::move(outcome));
  }
}

bool OutcomeServer::outside_committed_view(const CoreContext& ctx, const std::string& endpoint,
                                           std::uint64_t generation) const {
  if (!commit_reported_ || ctx.config.seed_only) return false;
  const MemberList* members = ctx.agreement.committed_member_list();
  return members != nullptr &&
         !std::binary_search(members->begin(), members->end(), MemberKey{endpoint, generation});
}

bool OutcomeServer::answer_outsider_join(CoreContext& ctx, const Envelope& env) {
  if (!outside_committed_view(ctx, env.sender, env.sender_generation)) return false;
  // The round closed without this process (a late joiner, or a restart whose old process
  // is in the view): its answer is the outcome alone. A JoinReply would make it joined,
  // and a joined node stops asking us; if the outcome were lost it would then wait for
  // its join timeout among members that leave. Unanswered, it asks again.
  Gossip outcome;
  outcome.views = ctx.views(env);
  if (ctx.job_end) outcome.updates.push_back(*ctx.job_end);  // the job is over, too
  ctx.send(env.sender, std::move(outcome));
  return true;
}

void OutcomeServer::tell_joiner_outcome(CoreContext& ctx, const Envelope& env) {
  if (!ctx.agreement.committed()) return;
  Gossip outcome;
  outcome.views = ctx.views(env);
  ctx.send(env.sender, std::move(outcome));
}

// A node outside the committed view that still talks to us does not know the outcome
// (told, it would have stopped): tell_outsiders' one message was lost, or it restarted or
// came back from a partition after the commit. Answer each such message with the outcome
// while we are still here, as a Raft node answers a stale term. Join, Ping and a Gossip
// that wants a reply are answered with our claims already; the rest are answered here.
void OutcomeServer::answer_outsider(CoreContext& ctx, Time now, const Envelope& msg) {
  if (!outside_committed_view(ctx, msg.sender, msg.sender_generation)) return;
  last_outsider_heard_ = now;
  const auto* gossip = std::get_if<Gossip>(&msg.body);
  const bool answered_already = std::holds_alternative<Join>(msg.body) ||
                                std::holds_alternative<Ping>(msg.body) ||
                                (gossip != nullptr && gossip->want_reply);
  const bool asks = gossip != nullptr || std::holds_alternative<PingReq>(msg.body);
  if (answered_already || !asks) return;
  Gossip outcome;
  outcome.views = ctx.views(msg);
  ctx.send(msg.sender, std::move(outcome));
}

// How long a committed node serves at most: commit_grace, while members still lack our
// bits. A seed stays at least as long as a joiner waits between two attempts
// (join_backoff_max), so that any node that can reach it asks at least once after the
// commit and is told the outcome (docs/protocol.md, rule 7).
Time OutcomeServer::stay_until(const CoreContext& ctx) const {
  auto stay = ctx.config.timing.commit_grace;
  if (ctx.am_seed()) stay = std::max(stay, ctx.config.timing.join_backoff_max);
  return committed_at_ + as_time(stay);
}

// Once every member has committed we stay a little longer: outcome_linger after the
// commit, for a node started a moment too late; two gossip periods after the last message
// from a node outside the view, whose answer (answer_outsider) may have been lost and
// which asks again while it does not know. A seed stays until stay_until(): a node that
// starts or restarts after the commit knows nobody else to ask.
Time OutcomeServer::linger_until(const CoreContext& ctx) const {
  if (ctx.am_seed()) return stay_until(ctx);
  return member_linger_until(ctx);
}

Time OutcomeServer::member_linger_until(const CoreContext& ctx) const {
  Time until = committed_at_ + as_time(ctx.config.timing.outcome_linger);
  if (last_outsider_heard_) {
    until = std::max(until, *last_outsider_heard_ + 2 * as_time(ctx.config.timing.gossip_interval));
  }
  return until;
}

Time OutcomeServer::next_wakeup(const CoreContext& ctx) const {
  Time next = kNever;
  if (seed_stays_quietly(ctx) && !quiet_) next = std::min(next, member_linger_until(ctx));
  // committed_at_ is set when the commit is reported (all announcements known), not before:
  // a node that agreed but still waits for rows would otherwise spin at commit_grace or
  // outcome_linger past time zero.
  if (commit_reported_ && !done_) {
    next = std::min(next, stay_until(ctx));
    if (ctx.am_seed()) next = std::min(next, next_retell_at_);
    if (ctx.agreement.everyone_committed()) next = std::min(next, linger_until(ctx));
  }
  return next;
}

}  // namespace gossip_rdzv::protocol
