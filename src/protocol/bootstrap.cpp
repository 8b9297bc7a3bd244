#include "bootstrap.hpp"

#include <algorithm>

namespace gossip_rdzv::protocol {
namespace {

/// Up to `count` distinct entries of `from`, uniformly at random (a partial Fisher-Yates
/// shuffle). All of them, in order and without drawing, when there are no more than `count`.
std::vector<std::string> pick(Prng& prng, const std::vector<std::string>& from, std::size_t count) {
  if (from.size() <= count) return from;
  std::vector<std::string> pool = from;
  for (std::size_t i = 0; i < count; ++i) {
    std::swap(pool[i], pool[i + prng.below(pool.size() - i)]);
  }
  pool.resize(count);
  return pool;
}

}  // namespace

Bootstrap::Bootstrap(const CoreContext& ctx) {
  const CoreConfig& config = ctx.config;
  if (config.seed_only || !ctx.listed_seed) return;
  unmet_seeds_ = config.seeds;
  // The collectors: the first gossip_fanout seeds in sorted order, the same on every node
  // given the same seed list (see answer_join).
  std::vector<std::string> sorted_seeds = config.seeds;
  sorted_seeds.push_back(config.self.endpoint);
  std::sort(sorted_seeds.begin(), sorted_seeds.end());
  sorted_seeds.erase(std::unique(sorted_seeds.begin(), sorted_seeds.end()), sorted_seeds.end());
  sorted_seeds.resize(std::min<std::size_t>(sorted_seeds.size(), config.timing.gossip_fanout));
  for (const auto& seed : sorted_seeds) {
    if (seed != config.self.endpoint) collectors_.push_back(seed);
  }
}

void Bootstrap::start(CoreContext& ctx, Time now) {
  join_backoff_ = as_time(ctx.config.timing.join_backoff_initial);
  if (ctx.config.seeds.size() > 1) first_seed_ = ctx.prng.below(ctx.config.seeds.size());
  next_join_at_ = now;
}

void Bootstrap::mark_joined(CoreContext& ctx, const std::string& via) {
  if (joined_) return;
  joined_ = true;
  ctx.events.push_back(JoinedCluster{via});
}

// A member that is itself one of several seeds keeps joining the other seeds until each is
// in its table. Seeds that start together may otherwise each find a different partner
// first: joiners spread over the seeds would then form groups that never hear of each
// other (docs/protocol.md, "Several seeds"). Until the round commits.
bool Bootstrap::meeting_seeds(CoreContext& ctx) {
  if (unmet_seeds_.empty()) return false;
  std::erase_if(unmet_seeds_,
                [&](const std::string& seed) { return ctx.table.find(seed) != nullptr; });
  if (ctx.agreement.committed() || ctx.agreement.not_admitted()) unmet_seeds_.clear();
  return !unmet_seeds_.empty();
}

// A member's PingReq made us joined before any row reached us, every peer we knew is dead
// (they committed without us and left), or a restarted process was made joined by a message
// its peers still sent to its dead generation. Ask a seed again, as before joining: it
// answers with members or the outcome, and it learns our process. A member seed asks the
// other seeds too: with no live peer it sends nothing else, and an elastic seed that awaits
// the next round (one committed without it) no longer meets the seeds, so the members would
// never hear of its new process. A dedicated seed never joins (its Join would announce it
// as a member).
bool Bootstrap::lost_touch(const CoreContext& ctx, bool has_outcome) const {
  return joined_ && !ctx.config.seed_only && !has_outcome && ctx.table.live_peers().empty();
}

void Bootstrap::tick(CoreContext& ctx, Time now, bool has_outcome) {
  const CoreConfig& config = ctx.config;
  if (now < next_join_at_ || config.seeds.empty()) return;
  Join join;
  join.self = ctx.self_record();
  if (joined_ && !lost_touch(ctx, has_outcome)) {
    if (!meeting_seeds(ctx)) return;
    // A few of them per attempt: their rows also arrive by gossip, and joining every other
    // seed at once would cost each seed work that grows with the number of seeds.
    for (const auto& seed : pick(ctx.prng, unmet_seeds_, config.timing.gossip_fanout))
      ctx.send(seed, join);
  } else {
    ctx.send(config.seeds[(first_seed_ + join_attempts_) % config.seeds.size()], std::move(join));
  }
  ++join_attempts_;
  // Exponential backoff with +-20% jitter so a crowd of joiners does not retry in step.
  const double jitter = 0.8 + 0.4 * ctx.prng.unit();
  next_join_at_ =
      now + Time{static_cast<std::int64_t>(static_cast<double>(join_backoff_.count()) * jitter)};
  join_backoff_ = std::min(join_backoff_ * 2, as_time(config.timing.join_backoff_max));
}

Time Bootstrap::next_wakeup(const CoreContext& ctx, bool has_outcome) const {
  Time next = kNever;
  if (((!joined_ || lost_touch(ctx, has_outcome)) && !ctx.config.seeds.empty()) ||
      !unmet_seeds_.empty())
    next = std::min(next, next_join_at_);
  if (!joiners_to_forward_.empty()) next = std::min(next, next_forward_at_);
  return next;
}

void Bootstrap::answer_join(CoreContext& ctx, Time now, const Envelope& env, const Join& join) {
  const CoreConfig& config = ctx.config;
  JoinReply reply;
  reply.seed_is_member = !config.seed_only;
  for (const auto& peer :
       ctx.table.sample_peers(ctx.prng, config.timing.join_sample_size, env.sender)) {
    reply.sample.push_back(ctx.table.record(*ctx.table.find(peer)));
  }
  // The job ended (a member failed it, or all finished): the joiner learns it now, before
  // our own leave (an abort is what it should report).
  if (ctx.job_end && ctx.job_end->ann.endpoint != ctx.config.self.endpoint)
    reply.sample.push_back(*ctx.job_end);
  if (!config.seed_only) reply.sample.push_back(ctx.self_record());
  ctx.send(env.sender, std::move(reply));
  if (config.seed_only) {
    introduce(ctx, join.self);
    // Every other seed introduces it to the members it knows: dedicated seeds are not
    // members and never gossip, so joiners spread over seeds that never talk to each
    // other would otherwise form separate groups.
    tell_seeds(ctx, config.seeds, {join.self});
  } else if (!collectors_.empty()) {
    // Member seeds tell their joiners to the collector seeds once per gossip period
    // (forward_joiners), so each collector knows every joiner directly, as a single seed
    // does: it completes its table (and proposes the view) right after the last join,
    // instead of waiting for the slowest rumour's tail. One message per collector per
    // period, not per join; a seed that is no collector hears none of them, so no seed's
    // work grows with the number of seeds beyond the collectors' one message per seed.
    if (joiners_to_forward_.empty())
      next_forward_at_ = now + as_time(config.timing.gossip_interval);
    joiners_to_forward_.push_back(join.self);
  }
}

void Bootstrap::introduce(CoreContext& ctx, const MemberRecord& joiner) {
  for (const auto& peer :
       ctx.table.sample_peers(ctx.prng, ctx.config.timing.gossip_fanout, joiner.ann.endpoint)) {
    Gossip gossip;
    gossip.updates = {joiner};
    ctx.send(peer, std::move(gossip));
  }
}

void Bootstrap::tell_seeds(CoreContext& ctx, const std::vector<std::string>& seeds,
                           const std::vector<MemberRecord>& joiners) {
  for (const auto& other : seeds) {
    Gossip gossip;
    gossip.updates = joiners;
    ctx.send(other, std::move(gossip));
  }
}

void Bootstrap::forward_joiners(CoreContext& ctx, Time now) {
  if (joiners_to_forward_.empty() || now < next_forward_at_) return;
  tell_seeds(ctx, collectors_, joiners_to_forward_);
  joiners_to_forward_.clear();
}

}  // namespace gossip_rdzv::protocol
