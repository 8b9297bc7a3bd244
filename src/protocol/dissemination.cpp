#include "dissemination.hpp"

#include <algorithm>
#include <cmath>

#include "agreement_link.hpp"

namespace gossip_rdzv::protocol {
namespace {

/// Up to `count` picks in all, at random from `members` (no copy of the list: after a
/// commit this runs every gossip period, and the view has every member).
void pick_members(CoreContext& ctx, const MemberList& members, std::size_t count,
                  std::vector<std::string>& picked) {
  const std::size_t wanted = std::min(count, members.size());
  for (std::size_t attempts = 0; picked.size() < wanted && attempts < wanted * 8 + 16; ++attempts) {
    const std::string& endpoint = members[ctx.prng.below(members.size())].endpoint;
    if (endpoint == ctx.config.self.endpoint) continue;
    if (std::find(picked.begin(), picked.end(), endpoint) == picked.end())
      picked.push_back(endpoint);
  }
}

}  // namespace

void Dissemination::start(CoreContext& ctx, Time now) {
  next_gossip_at_ = now + as_time(ctx.config.timing.gossip_interval);
  next_push_pull_at_ = now + as_time(ctx.config.timing.push_pull_interval);
}

/// memberlist's pushPullScale: above 32 members the periodic full-table exchange slows by
/// one interval per doubling, so its cost per node stays about flat instead of growing
/// with N (10,000 nodes each exchanging a 10,000-row table, ~60 B a row both ways, every
/// 5 s would be about 2.4 GB/s in all).
Time Dissemination::push_pull_gap(const CoreContext& ctx) const {
  const double n = static_cast<double>(ctx.cluster_size());
  const auto scale =
      n <= 32.0 ? 1 : static_cast<std::int64_t>(std::ceil(std::log2(n) - std::log2(32.0))) + 1;
  return as_time(ctx.config.timing.push_pull_interval) * scale;
}

std::vector<std::string> Dissemination::targets(CoreContext& ctx, std::size_t count) {
  if (ctx.agreement.committed()) {
    // After committing, talk to the view's members: first those not yet known to know
    // the outcome, then random others so that they learn who else knows and can stop.
    std::vector<std::string> picked = ctx.agreement.sample_missing_commit(ctx.prng, count);
    pick_members(ctx, *ctx.agreement.committed_member_list(), count, picked);
    return picked;
  }
  std::vector<std::string> picked = ctx.table.sample_peers(ctx.prng, count);
  pass_over_seeds(ctx, picked);
  return picked;
}

// A node knows its seeds because it was given them, not because it heard of them at random:
// right after joining, its table is a seed's sample of join_sample_size members plus the
// seed, so one in three of its first pushes would go to the seed, and every one of N
// joiners does that, making the seed the busiest node by far (figures in
// docs/performance.md, "Protocol choices"). Until the table holds the MIN members we wait for, keep
// a seed with probability (members known) / MIN, which gives it about a random member's share, and
// pick another peer in its place; a seed stays when there is nobody else to pick.
void Dissemination::pass_over_seeds(CoreContext& ctx, std::vector<std::string>& picked) {
  if (ctx.seed_set.empty()) return;
  const std::size_t known = ctx.table.live_peer_count() + 1;
  if (known >= ctx.config.min_nodes) return;
  const double keep = static_cast<double>(known) / static_cast<double>(ctx.config.min_nodes);
  for (auto& peer : picked) {
    if (!ctx.is_seed(peer) || ctx.prng.unit() < keep) continue;
    for (int attempt = 0; attempt < 4; ++attempt) {
      auto other = ctx.table.sample_peers(ctx.prng, 1);
      if (other.empty() || ctx.is_seed(other.front()) ||
          std::find(picked.begin(), picked.end(), other.front()) != picked.end())
        continue;
      peer = std::move(other.front());
      break;
    }
  }
}

// Once we left, every push names our leave: its retransmissions may all have gone out while
// a peer that left at the same moment was already dead to everyone who had it queued, and
// that peer's job ends only when it knows every member of the round left
// (`gossip-rdzv-sim --scenario elastic --nodes 8 --seed 4101` before this).
void Dissemination::add_own_leave(const CoreContext& ctx, std::vector<MemberRecord>& updates) {
  if (ctx.left) add_update_once(updates, ctx.self_record());
}

void Dissemination::push(CoreContext& ctx, std::size_t fanout, bool skip_empty) {
  for (const auto& peer : targets(ctx, fanout)) {
    Gossip gossip;
    gossip.updates = ctx.table.take_piggyback(ctx.config.timing.max_piggyback);
    add_own_leave(ctx, gossip.updates);
    gossip.views = ctx.views(peer);
    if (skip_empty && gossip.updates.empty() && gossip.views.empty()) continue;
    ctx.send(peer, std::move(gossip));
  }
}

std::vector<MemberRecord> Dissemination::full_state(const CoreContext& ctx) {
  std::vector<MemberRecord> records;
  records.reserve(ctx.table.rows().size());
  for (const auto& row : ctx.table.rows()) records.push_back(ctx.table.record(row));
  return records;
}

// Before this round's outcome, a push with no update and no claim tells nothing (memberlist's
// gossip() sends only when it has broadcasts): nodes waiting for --nnodes MIN, whose updates
// have all been retransmitted, stay silent but for probes and push-pull, instead of each
// sending gossip_fanout empty messages a period to random peers (a TCP connection each,
// beyond the transport's cache). After the outcome there is no push-pull, and an empty push
// is what makes a peer that knows more answer (the outcome, a member's leave): it stays.
void Dissemination::tick(CoreContext& ctx, Time now, bool exchanging, const AgreementLink& link) {
  const Timing& timing = ctx.config.timing;
  if (now >= next_gossip_at_) {
    next_gossip_at_ = now + as_time(timing.gossip_interval);
    push(ctx, timing.gossip_fanout, exchanging);
    gossip_to_the_dead(ctx, now);
    link.ask_witnesses(ctx);
    last_push_at_ = now;
    ctx.dirty = false;
  }
  if (ctx.dirty && now >= last_push_at_ + as_time(timing.min_push_gap)) {
    // New information goes out at once, not on the next period: a rendezvous should cost
    // a few round trips, not a few gossip intervals.
    push(ctx, timing.gossip_fanout, exchanging);
    link.ask_witnesses(ctx);
    last_push_at_ = now;
    ctx.dirty = false;
  }
  if (now >= next_push_pull_at_ && exchanging) {
    next_push_pull_at_ = now + push_pull_gap(ctx);
    if (auto peer = push_pull_partner(ctx)) {
      Gossip gossip;
      gossip.want_reply = true;
      gossip.updates = full_state(ctx);
      gossip.views = ctx.views(*peer);
      ctx.send(*peer, std::move(gossip));
    }
  }
}

Time Dissemination::next_wakeup(const CoreContext& ctx, bool pushing, bool exchanging) const {
  if (!pushing) return kNever;
  Time next = next_gossip_at_;
  if (exchanging) next = std::min(next, next_push_pull_at_);
  if (ctx.dirty) next = std::min(next, last_push_at_ + as_time(ctx.config.timing.min_push_gap));
  return next;
}

// A random live peer, preferably not one of our seeds: every node joined through them and
// knows them, so they would otherwise answer far more full-state exchanges than anyone.
std::optional<std::string> Dissemination::push_pull_partner(CoreContext& ctx) {
  auto peers = ctx.table.sample_peers(ctx.prng, ctx.config.seeds.size() + 1);
  for (const auto& peer : peers) {
    if (!ctx.is_seed(peer)) return peer;
  }
  if (peers.empty()) return std::nullopt;
  return peers.front();
}

// A member buried by mistake (a partition longer than the suspicion timeout) only refutes
// once it hears the rumour, and nobody talks to the dead: keep telling one for a while.
void Dissemination::gossip_to_the_dead(CoreContext& ctx, Time now) {
  auto buried =
      ctx.table.sample_recently_dead(ctx.prng, now - as_time(ctx.config.timing.dead_gossip_window));
  if (!buried) return;
  Gossip gossip;
  gossip.updates = ctx.table.take_piggyback(ctx.config.timing.max_piggyback);
  add_own_leave(ctx, gossip.updates);
  if (const Member* row = ctx.table.find(*buried))
    add_update_once(gossip.updates, ctx.table.record(*row));
  gossip.views = ctx.views(*buried);
  ctx.send(*buried, std::move(gossip));
}

void Dissemination::pull_table(CoreContext& ctx, const std::string& peer, Time now) {
  if (now < next_table_pull_at_ || ctx.agreement.committed()) return;
  next_table_pull_at_ = now + as_time(ctx.config.timing.gossip_interval);
  Gossip gossip;
  gossip.want_reply = true;
  gossip.views = ctx.views(peer);
  ctx.send(peer, std::move(gossip));
}

void Dissemination::answer(CoreContext& ctx, const Envelope& env, const Gossip& gossip) {
  if (!gossip.want_reply) return;
  Gossip reply;
  reply.updates = full_state(ctx);
  reply.views = ctx.views(env);
  ctx.send(env.sender, std::move(reply));
}

}  // namespace gossip_rdzv::protocol
