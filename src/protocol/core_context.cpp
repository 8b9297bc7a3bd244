#include "core_context.hpp"

#include <algorithm>
#include <cmath>

namespace gossip_rdzv::protocol {

QuorumBase base_of(const CoreConfig& config) {
  if (config.seeds.empty() && !config.seed_only) return QuorumBase({config.self.endpoint});
  return QuorumBase(config.seeds);
}

CoreContext::CoreContext(CoreConfig cfg)
    : config(std::move(cfg)),
      prng(config.rng_seed),
      table(config.self.endpoint, config.pool),
      agreement(AgreementConfig{MemberKey{config.self.endpoint, config.self.generation},
                                config.round, config.min_nodes, config.max_nodes,
                                as_time(config.last_call), base_of(config), table.pool_handle()}) {
  config.self.seeds_digest = agreement.base().digest();
  // A member listed among the seeds meets every other seed (Bootstrap::tick).
  listed_seed = std::erase(config.seeds, config.self.endpoint) > 0;
  seed_set = config.seeds;
  std::sort(seed_set.begin(), seed_set.end());
}

Time later_round_last_call(const CoreConfig& config) {
  return std::min(as_time(config.last_call), as_time(5 * config.timing.gossip_interval));
}

void CoreContext::start_round(std::uint32_t round) {
  config.round = round;
  // Every round's quorum base is round 0's: the seed list as given (config.seeds no longer
  // holds our own endpoint, so base_of(config) would differ from node to node).
  QuorumBase base = agreement.base();
  AgreementConfig next{MemberKey{config.self.endpoint, config.self.generation},
                       round,
                       config.min_nodes,
                       config.max_nodes,
                       later_round_last_call(config),
                       std::move(base),
                       table.pool_handle()};
  // Only the outcome of the round just before counts: every node that knows it names the
  // same seniors, and one that knows an older outcome names none (docs/protocol.md).
  if (last_outcome && round > 0 && last_outcome->first == round - 1)
    next.previous = last_outcome->second;
  // A round with nobody new to admit waits one gossip period: one push of the news.
  next.settle = std::min(next.last_call, as_time(config.timing.gossip_interval));
  agreement = Agreement(std::move(next));
  dirty = true;
}

Envelope CoreContext::envelope(Body body) const {
  Envelope env;
  env.run_id = config.run_id;
  env.sender = config.self.endpoint;
  env.sender_generation = config.self.generation;
  env.body = std::move(body);
  return env;
}

void CoreContext::send(const std::string& to, Body body) {
  outbox.push_back(Outgoing{to, envelope(std::move(body))});
}

void CoreContext::reply(const std::string& to, Body body) {
  outbox.push_back(Outgoing{to, envelope(std::move(body)), true});
}

MemberRecord CoreContext::self_record() const {
  if (left) return MemberRecord{config.self, left_incarnation, MemberStatus::dead, {}};
  return MemberRecord{config.self, incarnation, MemberStatus::alive, {}};
}

void CoreContext::note_final(const MemberRecord& record) {
  if (!job_end ||
      (job_end->incarnation == kLeftIncarnation && record.incarnation != kLeftIncarnation)) {
    job_end = record;
  }
}

std::uint32_t CoreContext::retransmits() const {
  const double n = static_cast<double>(cluster_size()) + 1.0;
  return config.timing.retransmit_mult * static_cast<std::uint32_t>(std::ceil(std::log2(n)));
}

SuspicionClock CoreContext::suspicion_clock(Time now) const {
  // N is at least --nnodes MIN: a node that joined late knows few members yet, and with
  // the timeout of a small cluster it declared live members dead, for everyone, before
  // their refutation reached it (docs/protocol.md, "Suspicion").
  const std::size_t members = std::max<std::size_t>(cluster_size(), config.min_nodes);
  const Timing& timing = config.timing;
  SuspicionClock clock;
  clock.start = now;
  // A node that is itself slow (local_health) cannot tell a slow peer from a dead one, and
  // the peer's refutation may be among the messages it has not read yet: it waits longer.
  clock.min = as_time(timing.suspicion_timeout(members)) * (local_health + 1);
  clock.max = clock.min * std::max<std::uint32_t>(timing.suspicion_max_mult, 1);
  // Confirmations can only come from members that exist: the ones we hold alive, not MIN.
  clock.expected = timing.suspicion_confirmations(cluster_size());
  return clock;
}

std::vector<ViewClaim> CoreContext::views(const std::string& peer) const {
  if (config.seed_only) return {};
  const Member* row = table.find(peer);
  if (row == nullptr) return agreement.claims_to_send();
  const MemberKey key{peer, row->ann->generation};
  return agreement.claims_to_send(&key);
}

std::vector<ViewClaim> CoreContext::views(const Envelope& msg) const {
  if (config.seed_only) return {};
  const MemberKey key{msg.sender, msg.sender_generation};
  return agreement.claims_to_send(&key);
}

bool CoreContext::is_seed(const std::string& endpoint) const {
  return std::binary_search(seed_set.begin(), seed_set.end(), endpoint);
}

}  // namespace gossip_rdzv::protocol
