#include "core.hpp"

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <unordered_set>

#include "agreement.hpp"
#include "member_table.hpp"
#include "prng.hpp"
#include "rank_assignment.hpp"
#include "witness.hpp"

namespace gossip_rdzv::protocol {
namespace {

constexpr Time kNever{INT64_MAX / 4};
constexpr std::size_t kMaxRelays = 1024;  // PingReq relays in flight; more are dropped
// Unanswered messages to one endpoint before we call it unreachable and tell its owner: one
// can be a connection still being set up (a lost SYN costs a second), two can be a lossy
// network (at 10% loss a probe and its ack both get through 81% of the time: two failures
// in a row 3.6%, three 0.7%); three in a row is a pattern.
constexpr std::uint32_t kUnreachableAfter = UnreachablePeer::kReportAfter;
// Endpoints remembered for reachability (members and joiners); past this many the memory is
// forgotten, so a flood of spoofed joiners cannot grow it without bound.
constexpr std::size_t kMaxReachabilityEntries = 4096;

template <class Duration>
Time as_time(Duration d) {
  return std::chrono::duration_cast<Time>(d);
}

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

/// Round 0's quorum base: the seed list; a node given no seed is its own seed, as a node
/// whose only seed is itself (the first node of a job started from a library).
QuorumBase base_of(const CoreConfig& config) {
  if (config.seeds.empty() && !config.seed_only) return QuorumBase({config.self.endpoint});
  return QuorumBase(config.seeds);
}

struct Core::Impl {
  explicit Impl(CoreConfig cfg)
      : config(std::move(cfg)),
        prng(config.rng_seed),
        table(config.self.endpoint, config.pool),
        agreement(AgreementConfig{MemberKey{config.self.endpoint, config.self.generation},
                                  config.round, config.min_nodes, config.max_nodes,
                                  as_time(config.last_call), base_of(config), table.pool_handle()}),
        witness(config.self.endpoint, config.round) {
    config.self.seeds_digest = agreement.base().digest();
    // A member listed among the seeds meets every other seed (see tick_join).
    listed_seed = std::erase(config.seeds, config.self.endpoint) > 0;
    seed_set = config.seeds;
    std::sort(seed_set.begin(), seed_set.end());
    if (!config.seed_only && listed_seed) {
      unmet_seeds = config.seeds;
      // The collectors: the first gossip_fanout seeds in sorted order, the same on every
      // node given the same seed list (see handle(Join)).
      std::vector<std::string> sorted_seeds = config.seeds;
      sorted_seeds.push_back(config.self.endpoint);
      std::sort(sorted_seeds.begin(), sorted_seeds.end());
      sorted_seeds.erase(std::unique(sorted_seeds.begin(), sorted_seeds.end()), sorted_seeds.end());
      sorted_seeds.resize(std::min<std::size_t>(sorted_seeds.size(), config.timing.gossip_fanout));
      for (const auto& seed : sorted_seeds) {
        if (seed != config.self.endpoint) collectors.push_back(seed);
      }
    }
  }

  // ---- configuration-derived numbers ----------------------------------------------------
  std::size_t cluster_size() const { return table.live_peer_count() + 1; }
  std::uint32_t retransmits() const {
    const double n = static_cast<double>(cluster_size()) + 1.0;
    return config.timing.retransmit_mult * static_cast<std::uint32_t>(std::ceil(std::log2(n)));
  }
  /// memberlist's pushPullScale: above 32 members the periodic full-table exchange slows by
  /// one interval per doubling, so its cost per node stays about flat instead of growing
  /// with N (10,000 nodes each exchanging a 10,000-row table, ~60 B a row both ways, every
  /// 5 s would be about 2.4 GB/s in all).
  Time push_pull_gap() const {
    const double n = static_cast<double>(cluster_size());
    const auto scale =
        n <= 32.0 ? 1 : static_cast<std::int64_t>(std::ceil(std::log2(n) - std::log2(32.0))) + 1;
    return as_time(config.timing.push_pull_interval) * scale;
  }
  Time suspicion_timeout() const {
    // N is at least --nnodes MIN: a node that joined late knows few members yet, and with
    // the timeout of a small cluster it declared live members dead, for everyone, before
    // their refutation reached it (docs/protocol.md, "Suspicion").
    return as_time(
        config.timing.suspicion_timeout(std::max<std::size_t>(cluster_size(), config.min_nodes)));
  }

  // ---- sending -----------------------------------------------------------------------------
  Envelope envelope(Body body) const {
    Envelope env;
    env.run_id = config.run_id;
    env.sender = config.self.endpoint;
    env.sender_generation = config.self.generation;
    env.body = std::move(body);
    return env;
  }
  void send(const std::string& to, Body body) {
    outbox.push_back(Outgoing{to, envelope(std::move(body))});
  }
  MemberRecord self_record() const {
    return MemberRecord{config.self, incarnation, MemberStatus::alive};
  }

  /// Our claims for `peer`: by reference for views it is known to hold (docs/protocol.md).
  std::vector<ViewClaim> views(const std::string& peer) const {
    if (config.seed_only) return {};
    const Member* row = table.find(peer);
    if (row == nullptr) return agreement.claims_to_send();
    const MemberKey key{peer, row->ann->generation};
    return agreement.claims_to_send(&key);
  }
  /// Our claims in answer to `msg`: for the process that sent it, which may be a newer one at
  /// that endpoint than our table knows (it restarted). Its earlier process held our views;
  /// by reference they would mean nothing to it.
  std::vector<ViewClaim> views(const Envelope& msg) const {
    if (config.seed_only) return {};
    const MemberKey key{msg.sender, msg.sender_generation};
    return agreement.claims_to_send(&key);
  }

  std::vector<std::string> gossip_targets(std::size_t count) {
    if (agreement.committed()) {
      // After committing, talk to the view's members: first those not yet known to know
      // the outcome, then random others so that they learn who else knows and can stop.
      std::vector<std::string> picked = agreement.sample_missing_commit(prng, count);
      pick_members(*agreement.committed_member_list(), count, picked);
      return picked;
    }
    std::vector<std::string> picked = table.sample_peers(prng, count);
    pass_over_seeds(picked);
    return picked;
  }

  // A node knows its seeds because it was given them, not because it heard of them at random:
  // right after joining, its table is a seed's sample of join_sample_size members plus the
  // seed, so one in three of its first pushes would go to the seed, and every one of N
  // joiners does that (at N = 10,000 the seed carried 6.3x a node's mean traffic after the
  // joins). Until the table holds the MIN members we wait for, keep a seed with probability
  // (members known) / MIN, which gives it about a random member's share, and pick another
  // peer in its place; a seed stays when there is nobody else to pick.
  void pass_over_seeds(std::vector<std::string>& picked) {
    if (seed_set.empty()) return;
    const std::size_t known = table.live_peer_count() + 1;
    if (known >= config.min_nodes) return;
    const double keep = static_cast<double>(known) / static_cast<double>(config.min_nodes);
    for (auto& peer : picked) {
      if (!is_seed(peer) || prng.unit() < keep) continue;
      for (int attempt = 0; attempt < 4; ++attempt) {
        auto other = table.sample_peers(prng, 1);
        if (other.empty() || is_seed(other.front()) ||
            std::find(picked.begin(), picked.end(), other.front()) != picked.end())
          continue;
        peer = std::move(other.front());
        break;
      }
    }
  }

  bool is_seed(const std::string& endpoint) const {
    return std::binary_search(seed_set.begin(), seed_set.end(), endpoint);
  }

  /// Up to `count` picks in all, at random from `members` (no copy of the list: after a
  /// commit this runs every gossip period, and the view has every member).
  void pick_members(const MemberList& members, std::size_t count,
                    std::vector<std::string>& picked) {
    const std::size_t wanted = std::min(count, members.size());
    for (std::size_t attempts = 0; picked.size() < wanted && attempts < wanted * 8 + 16;
         ++attempts) {
      const std::string& endpoint = members[prng.below(members.size())].endpoint;
      if (endpoint == config.self.endpoint) continue;
      if (std::find(picked.begin(), picked.end(), endpoint) == picked.end())
        picked.push_back(endpoint);
    }
  }

  void push_gossip(std::size_t fanout) {
    for (const auto& peer : gossip_targets(fanout)) {
      Gossip gossip;
      gossip.updates = table.take_piggyback(config.timing.max_piggyback);
      gossip.views = views(peer);
      send(peer, std::move(gossip));
    }
  }

  std::vector<MemberRecord> full_state() const {
    std::vector<MemberRecord> records;
    records.reserve(table.rows().size());
    for (const auto& row : table.rows()) records.push_back(table.record(row));
    return records;
  }

  // ---- learning ------------------------------------------------------------------------------
  void note_member_change(MemberChange change, const MemberRecord& rumour) {
    if (change == MemberChange::none) return;
    table.enqueue(rumour.ann.endpoint, retransmits());
    dirty = true;
    switch (change) {
      case MemberChange::joined:
      case MemberChange::restarted:
        events.push_back(MemberUp{rumour.ann});
        break;
      case MemberChange::suspected:
        events.push_back(MemberSuspected{rumour.ann.endpoint});
        break;
      case MemberChange::died:
        events.push_back(MemberDead{rumour.ann.endpoint});
        break;
      default:
        break;
    }
  }

  void refute(const MemberRecord& rumour) {
    if (rumour.ann.generation != config.self.generation) return;  // an older process of ours
    if (rumour.status == MemberStatus::alive || rumour.incarnation < incarnation) return;
    // SWIM: someone suspects or buried us; outbid the rumour with a higher incarnation.
    incarnation = rumour.incarnation + 1;
    table.set_self(self_record());
    table.enqueue(config.self.endpoint, retransmits());
    dirty = true;
  }

  /// Another live process with our endpoint: not an earlier process of ours (those have an
  /// older generation and, being on this machine, our host name). Two nodes that advertise
  /// the same address:port (a copied --advertise, a host name resolving to 127.0.1.1 on
  /// both) would otherwise replace each other in everyone's table as if restarted.
  bool claims_our_endpoint(const Announcement& ann) const {
    if (ann.node_id == config.self.node_id) return false;
    return ann.generation >= config.self.generation || ann.hostname != config.self.hostname;
  }

  void report_shared_endpoint(const Announcement& ann) {
    if (config_fatal) return;
    config_fatal = true;
    events.push_back(
        Fatal{ErrorCode::usage,
              "node " + ann.hostname + " advertises the same endpoint " + ann.endpoint +
                  " as this node (" + config.self.hostname +
                  "); every node needs an address:port of its own that the others can dial: give "
                  "each node its own --advertise address (or --listen port), and check that the "
                  "host name does not resolve to a loopback address such as 127.0.1.1"});
  }

  void check_sizes(const Announcement& ann) {
    if (config.seed_only || config_fatal) return;
    if (ann.min_nodes == config.min_nodes && ann.max_nodes == config.max_nodes) return;
    config_fatal = true;
    auto sizes = [](std::uint32_t lo, std::uint32_t hi) {
      return lo == hi ? std::to_string(lo) : std::to_string(lo) + ":" + std::to_string(hi);
    };
    events.push_back(
        Fatal{ErrorCode::usage,
              "node " + ann.hostname + " (" + ann.endpoint + ") was started with --nnodes " +
                  sizes(ann.min_nodes, ann.max_nodes) + " but this node with --nnodes " +
                  sizes(config.min_nodes, config.max_nodes) + "; start every node of run '" +
                  config.run_id + "' with the same --nnodes"});
  }

  /// The seed list is round 0's quorum base: nodes started with different lists could each
  /// win their own base, so they never hold the same view; say so instead of timing out.
  void check_seed_list(const Announcement& ann) {
    if (config.seed_only || config_fatal || agreement.committed() || agreement.not_admitted())
      return;
    if (ann.seeds_digest == config.self.seeds_digest) return;
    config_fatal = true;
    events.push_back(Fatal{ErrorCode::usage,
                           "node " + ann.hostname + " (" + ann.endpoint +
                               ") was started with another --seed list than this node (" +
                               seed_list_text() + "); start every node of run '" + config.run_id +
                               "' with the same --seed list: it decides which group may agree "
                               "(docs/protocol.md, \"Quorum base\")"});
  }
  std::string seed_list_text() const {
    std::string text;
    for (const auto& endpoint : agreement.base().endpoints()) {
      text += (text.empty() ? "" : ", ") + endpoint;
    }
    return text.empty() ? "none" : text;
  }

  void learn(const std::vector<MemberRecord>& records, const std::string& via, Time now) {
    for (const auto& rumour : records) {
      if (rumour.ann.endpoint.empty()) continue;
      if (rumour.ann.endpoint == config.self.endpoint) {
        if (claims_our_endpoint(rumour.ann)) {
          report_shared_endpoint(rumour.ann);
        } else {
          refute(rumour);
        }
        continue;
      }
      check_sizes(rumour.ann);
      check_seed_list(rumour.ann);
      const auto change = table.merge(rumour, now, now + suspicion_timeout(), via);
      note_member_change(change, rumour);
    }
  }

  void learn_views(const std::vector<ViewClaim>& claims, const std::string& via,
                   std::uint64_t via_generation, Time now) {
    if (config.seed_only) return;
    const MemberKey sender{via, via_generation};
    for (const auto& claim : claims) {
      if (agreement.merge(claim, &sender)) dirty = true;
      if (names_members_we_lack(claim)) pull_table(via, now);
    }
    // We may hold a view before our table has all its members (Agreement::valid); claims by
    // reference no longer name them, so ask the peers that talk about it for their tables.
    if (agreement.held_size() > table.rows().size()) pull_table(via, now);
  }

  // A view that names us and more members than our table has rows: the sender knows members
  // we missed (a late joiner whose rumours were already spent). Epidemic push leaves such a
  // tail, which would otherwise wait for the next periodic push-pull. (Members we know but
  // think dead do not count: pulling a table every gossip period under loss costs a lot and
  // brings no row we lack.)
  bool names_members_we_lack(const ViewClaim& claim) const {
    if (claim.round != config.round || claim.members.size() <= table.rows().size()) return false;
    const MemberKey self{config.self.endpoint, config.self.generation};
    return std::binary_search(claim.members.begin(), claim.members.end(), self);
  }

  void pull_table(const std::string& peer, Time now) {
    if (now < next_table_pull_at || agreement.committed()) return;
    next_table_pull_at = now + as_time(config.timing.gossip_interval);
    Gossip gossip;
    gossip.want_reply = true;
    gossip.views = views(peer);
    send(peer, std::move(gossip));
  }

  void mark_joined(const std::string& via) {
    if (joined) return;
    joined = true;
    events.push_back(JoinedCluster{via});
  }

  // ---- message handlers ----------------------------------------------------------------------
  void handle(Time now, const Envelope& env, const Join& join) {
    learn({join.self}, env.sender, now);
    // on_message noted the sender before this Join created its row: note it now, so a
    // joiner that goes silent right after reads "last heard", not "never heard directly".
    table.heard_from(env.sender, env.sender_generation, now);
    note_join(now, env.sender, env.sender_generation);
    if (outside_committed_view(env.sender, env.sender_generation)) {
      // The round closed without this process (a late joiner, or a restart whose old process
      // is in the view): its answer is the outcome alone. A JoinReply would make it joined,
      // and a joined node stops asking us; if the outcome were lost it would then wait for
      // its join timeout among members that leave. Unanswered, it asks again.
      Gossip outcome;
      outcome.views = views(env);
      send(env.sender, std::move(outcome));
      return;
    }
    JoinReply reply;
    reply.seed_is_member = !config.seed_only;
    for (const auto& peer : table.sample_peers(prng, config.timing.join_sample_size, env.sender)) {
      reply.sample.push_back(table.record(*table.find(peer)));
    }
    if (!config.seed_only) reply.sample.push_back(self_record());
    send(env.sender, std::move(reply));
    if (config.seed_only) {
      introduce(join.self);
      // Every other seed introduces it to the members it knows: dedicated seeds are not
      // members and never gossip, so joiners spread over seeds that never talk to each
      // other would otherwise form separate groups.
      tell_seeds(config.seeds, {join.self});
    } else if (!collectors.empty()) {
      // Member seeds tell their joiners to the collector seeds once per gossip period
      // (forward_joiners), so each collector knows every joiner directly, as a single seed
      // does: it completes its table (and proposes the view) right after the last join,
      // instead of waiting for the slowest rumour's tail. One message per collector per
      // period, not per join; a seed that is no collector hears none of them, so no seed's
      // work grows with the number of seeds beyond the collectors' one message per seed.
      if (joiners_to_forward.empty())
        next_forward_at = now + as_time(config.timing.gossip_interval);
      joiners_to_forward.push_back(join.self);
    }
    if (agreement.committed()) {
      Gossip outcome;  // a member that missed the commit learns it at once
      outcome.views = views(env);
      send(env.sender, std::move(outcome));
    }
  }

  /// Whether we committed and `endpoint`/`generation` is no member of the committed view.
  bool outside_committed_view(const std::string& endpoint, std::uint64_t generation) const {
    if (!commit_reported || config.seed_only) return false;
    const MemberList* members = agreement.committed_member_list();
    return members != nullptr &&
           !std::binary_search(members->begin(), members->end(), MemberKey{endpoint, generation});
  }
  void handle(Time now, const Envelope& env, const JoinReply& reply) {
    mark_joined(env.sender);
    learn(reply.sample, env.sender, now);
    next_push_pull_at = now;  // one full exchange right away, then periodic
  }
  void handle(Time now, const Envelope& env, const Ping& ping) {
    mark_joined(env.sender);
    learn(ping.updates, env.sender, now);
    learn_views(ping.views, env.sender, env.sender_generation, now);
    Ack ack;
    ack.seq = ping.seq;
    ack.updates = table.take_piggyback(config.timing.max_piggyback);
    ack.views = views(env);
    send(env.sender, std::move(ack));
  }
  void handle(Time now, const Envelope& env, const Ack& ack) {
    mark_joined(env.sender);
    learn(ack.updates, env.sender, now);
    learn_views(ack.views, env.sender, env.sender_generation, now);
    // An ack from the member itself answers a ping we sent to its advertised endpoint.
    unanswered.erase(env.sender);
    // Direct or relayed by a PingReq helper: the sequence number alone identifies the probe.
    if (probe && probe->seq == ack.seq) probe.reset();
    auto relay = relays.find(ack.seq);
    if (relay != relays.end()) {
      Ack forwarded;
      forwarded.seq = relay->second.requester_seq;
      send(relay->second.requester, std::move(forwarded));
      relays.erase(relay);
    }
  }
  void handle(Time now, const Envelope& env, const PingReq& request) {
    mark_joined(env.sender);
    if (relays.size() >= kMaxRelays || request.target == config.self.endpoint) return;
    const std::uint64_t seq = ++next_seq;
    relays[seq] = Relay{env.sender, request.seq, now + as_time(config.timing.probe_interval)};
    Ping ping;
    ping.seq = seq;
    send(request.target, std::move(ping));
  }
  /// A dedicated seed is a base endpoint: members that voted for a view ask it to witness
  /// (witness.hpp); it answers with its copy of each view it knows, its witness included.
  void answer_as_witness(const std::string& asker, const std::vector<ViewClaim>& claims) {
    if (claims.empty()) return;
    Gossip answer;
    for (const auto& claim : claims) {
      witness.merge(claim);
      auto mine = witness.answer(claim);
      // Only what the asker lacks: a committed member answers every message from outside
      // its view with the outcome, and an answer to that would never end.
      if (mine && !std::includes(claim.witnesses.begin(), claim.witnesses.end(),
                                 mine->witnesses.begin(), mine->witnesses.end())) {
        answer.views.push_back(std::move(*mine));
      }
    }
    if (!answer.views.empty()) send(asker, std::move(answer));
  }

  /// Members that voted for a view whose base is not won yet ask the base endpoints outside
  /// the view (dedicated seeds) to witness it, with the whole claim.
  void ask_witnesses() {
    const auto seeds = agreement.witnesses_wanted();
    if (seeds.empty()) return;
    const auto claims = agreement.claims_to_send();
    for (const auto& seed : seeds) {
      Gossip request;
      request.views = claims;
      send(seed, std::move(request));
    }
  }

  /// A dedicated seed introduces a joiner to a few members now; they spread it from there.
  void introduce(const MemberRecord& joiner) {
    for (const auto& peer :
         table.sample_peers(prng, config.timing.gossip_fanout, joiner.ann.endpoint)) {
      Gossip gossip;
      gossip.updates = {joiner};
      send(peer, std::move(gossip));
    }
  }

  void handle(Time now, const Envelope& env, const Gossip& gossip) {
    mark_joined(env.sender);
    if (config.seed_only) answer_as_witness(env.sender, gossip.views);
    if (config.seed_only && is_seed(env.sender)) {
      // Joiners another dedicated seed took in: introduce the ones new to us.
      for (const auto& record : gossip.updates) {
        const bool known = table.find(record.ann.endpoint) != nullptr;
        learn({record}, env.sender, now);
        if (!known && table.find(record.ann.endpoint) != nullptr) introduce(record);
      }
      return;
    }
    learn(gossip.updates, env.sender, now);
    learn_views(gossip.views, env.sender, env.sender_generation, now);
    if (gossip.want_reply) {
      Gossip reply;
      reply.updates = full_state();
      reply.views = views(env);
      send(env.sender, std::move(reply));
    }
  }
  void handle(Time now, const Envelope& env, const Query&) {
    std::vector<const Member*> rows;
    for (const auto& row : table.rows()) rows.push_back(&row);
    std::sort(rows.begin(), rows.end(),
              [](const auto* a, const auto* b) { return a->ann->endpoint < b->ann->endpoint; });
    QueryReply reply;
    for (const auto* row : rows) {
      reply.members.push_back(table.record(*row));
      const bool heard = row->last_heard > Time::zero() && row->last_heard <= now;
      reply.last_heard_ms.push_back(
          heard ? static_cast<std::uint64_t>(
                      std::chrono::duration_cast<std::chrono::milliseconds>(now - row->last_heard)
                          .count())
                : QueryReply::kNeverHeard);
    }
    reply.views = views(env);
    send(env.sender, std::move(reply));
  }
  void handle(Time, const Envelope&, const QueryReply&) {}
  void handle(Time, const Envelope& env, const Refuse& refuse) {
    if (refused_by.insert(env.sender).second) {
      events.push_back(PeerRefused{env.sender, refuse.reason, refuse.detail, false});
    }
  }

  void handle(Time, const Envelope& env, const Unreachable& notice) {
    events.push_back(UnreachableReported{
        env.sender, notice.tried_endpoint, notice.unanswered,
        std::chrono::duration_cast<Time>(std::chrono::milliseconds(notice.failing_for_ms))});
  }

  // ---- reachability of the others' advertised endpoints ---------------------------------
  // A node whose advertised endpoint does not work (loopback, NAT, an inbound firewall) can
  // still send: its messages arrive, ours to it vanish. SWIM alone hides this (indirect
  // probes may succeed, or the node is just declared dead), so we count what goes
  // unanswered at its endpoint and, when it next talks to us, say so over the connection its
  // message came on (Outgoing::reply).
  struct Unanswered {
    std::uint64_t generation = 0;
    std::uint32_t count = 0;
    Time since{0};
    bool heard_meanwhile = false;
    std::optional<Time> last_notice;
  };
  Unanswered& unanswered_entry(const std::string& endpoint, std::uint64_t generation, Time now) {
    if (unanswered.size() >= kMaxReachabilityEntries && !unanswered.contains(endpoint))
      unanswered.clear();
    Unanswered& entry = unanswered[endpoint];
    if (entry.count == 0 || entry.generation != generation)
      entry = Unanswered{generation, 0, now, false, {}};
    return entry;
  }

  // A probe got no ack within probe_timeout: the direct path failed, whatever the indirect
  // probes find (gloo needs every pair connected).
  void note_unanswered_probe(const std::string& endpoint, Time now) {
    const Member* row = table.find(endpoint);
    if (row == nullptr) return;
    ++unanswered_entry(endpoint, row->ann->generation, now).count;
  }

  // A joiner that keeps sending Join after we answered it twice, well after the answers had
  // time to arrive, never got them.
  void note_join(Time now, const std::string& joiner, std::uint64_t generation) {
    if (joins_answered.size() >= kMaxReachabilityEntries && !joins_answered.contains(joiner))
      joins_answered.clear();
    JoinSeen& seen = joins_answered[joiner];
    if (seen.answers == 0 || seen.generation != generation) seen = JoinSeen{generation, 0, now};
    if (seen.answers >= kUnreachableAfter &&
        now >= seen.first_answer_at + 2 * as_time(config.timing.probe_interval)) {
      Unanswered& entry = unanswered_entry(joiner, generation, seen.first_answer_at);
      entry.count = std::max(entry.count, seen.answers);
      entry.heard_meanwhile = true;  // this very Join
      entry.since = std::min(entry.since, seen.first_answer_at);
    }
    ++seen.answers;  // the JoinReply handle(Join) sends now
  }

  // Called for every message a peer sends us: if its endpoint does not answer us, tell it
  // (at most once per probe interval), back over the connection the message came on.
  void maybe_tell_unreachable(Time now, const Envelope& env) {
    auto it = unanswered.find(env.sender);
    if (it == unanswered.end()) return;
    Unanswered& entry = it->second;
    if (env.sender_generation != entry.generation) {
      if (env.sender_generation > entry.generation) unanswered.erase(it);  // it restarted
      return;
    }
    if (entry.count == 0) return;
    entry.heard_meanwhile = true;
    if (entry.count < kUnreachableAfter) return;
    if (entry.last_notice && now < *entry.last_notice + as_time(config.timing.probe_interval))
      return;
    if (!entry.last_notice)
      events.push_back(PeerUnreachable{env.sender, entry.count, now - entry.since});
    entry.last_notice = now;
    Unreachable notice;
    notice.tried_endpoint = env.sender;
    notice.failing_for_ms = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(now - entry.since).count());
    notice.unanswered = entry.count;
    outbox.push_back(Outgoing{env.sender, envelope(std::move(notice)), true});
  }

  void refuse(const std::string& peer, RefuseReason reason, std::string detail) {
    Refuse message;
    message.reason = reason;
    message.detail = detail;
    send(peer, std::move(message));
    if (refused.insert(peer).second) {
      events.push_back(PeerRefused{peer, reason, std::move(detail), true});
    }
  }

  // ---- periodic work -------------------------------------------------------------------------
  /// A member that is itself one of several seeds keeps joining the other seeds until each is
  /// in its table. Seeds that start together may otherwise each find a different partner
  /// first: joiners spread over the seeds would then form groups that never hear of each
  /// other (the simulator found this with --seed-nodes 4). Until the round commits.
  bool meeting_seeds() {
    if (unmet_seeds.empty()) return false;
    std::erase_if(unmet_seeds,
                  [&](const std::string& seed) { return table.find(seed) != nullptr; });
    if (agreement.committed() || agreement.not_admitted()) unmet_seeds.clear();
    return !unmet_seeds.empty();
  }

  /// Joined, without an outcome, and no live peer known: a member's PingReq made us joined
  /// before any row reached us, or every peer we knew is dead (they committed without us and
  /// left). Ask the seed again, as before joining: it answers with members or the outcome.
  bool lost_touch() const {
    return joined && !listed_seed && !commit_reported && !not_admitted_reported &&
           table.live_peers().empty();
  }

  void tick_join(Time now) {
    if (now < next_join_at || config.seeds.empty()) return;
    Join join;
    join.self = self_record();
    if (joined && !lost_touch()) {
      if (!meeting_seeds()) return;
      // A few of them per attempt: their rows also arrive by gossip, and joining every other
      // seed at once would cost each seed work that grows with the number of seeds.
      for (const auto& seed : pick(prng, unmet_seeds, config.timing.gossip_fanout))
        send(seed, join);
    } else {
      send(config.seeds[(first_seed + join_attempts) % config.seeds.size()], std::move(join));
    }
    ++join_attempts;
    // Exponential backoff with +-20% jitter so a crowd of joiners does not retry in step.
    const double jitter = 0.8 + 0.4 * prng.unit();
    next_join_at =
        now + Time{static_cast<std::int64_t>(static_cast<double>(join_backoff.count()) * jitter)};
    join_backoff = std::min(join_backoff * 2, as_time(config.timing.join_backoff_max));
  }

  void tick_suspicions(Time now) {
    for (const auto& endpoint : table.expired_suspects(now)) {
      if (!table.declare_dead(endpoint, now)) continue;
      const Member* row = table.find(endpoint);
      table.enqueue(endpoint, retransmits());
      dirty = true;
      events.push_back(MemberDead{row->ann->endpoint});
    }
  }

  void suspect(const std::string& endpoint, Time now) {
    if (!table.suspect(endpoint, now + suspicion_timeout())) return;
    table.enqueue(endpoint, retransmits());
    dirty = true;
    events.push_back(MemberSuspected{endpoint});
  }

  void tick_probe(Time now) {
    if (probe && !probe->indirect_sent &&
        now >= probe->sent_at + as_time(config.timing.probe_timeout)) {
      probe->indirect_sent = true;
      note_unanswered_probe(probe->target, now);
      // A second direct ping next to the indirect ones (memberlist pings over TCP here): one
      // lost ping or ack no longer leaves the target to three 4-hop paths alone.
      Ping retry;
      retry.seq = probe->seq;
      send(probe->target, std::move(retry));
      for (const auto& helper :
           table.sample_peers(prng, config.timing.indirect_probes, probe->target)) {
        PingReq request;
        request.seq = probe->seq;
        request.target = probe->target;
        send(helper, std::move(request));
      }
    }
    if (now < next_probe_at) return;
    next_probe_at = now + as_time(config.timing.probe_interval);
    // Neither direct nor indirect ack in a period: probe the same member again, and suspect
    // it only after `probe_rounds` such periods in a row.
    std::optional<Probe> unanswered = std::move(probe);
    probe.reset();
    std::string target;
    std::uint32_t round = 1;
    if (unanswered) {
      if (unanswered->round >= config.timing.probe_rounds) {
        suspect(unanswered->target, now);
      } else if (const Member* row = table.find(unanswered->target);
                 row != nullptr && row->status != MemberStatus::dead) {
        target = unanswered->target;
        round = unanswered->round + 1;
      }
    }
    if (target.empty()) {
      auto targets = table.sample_peers(prng, 1);
      if (targets.empty()) return;
      target = std::move(targets.front());
    }
    Ping ping;
    ping.seq = ++next_seq;
    ping.updates = table.take_piggyback(config.timing.max_piggyback);
    tell_suspect(target, ping.updates);
    ping.views = views(target);
    probe = Probe{target, ping.seq, now, false, round};
    send(target, std::move(ping));
  }

  // Lifeguard's buddy system: a ping to a member we suspect carries that suspicion, so the
  // member hears it from us at once and refutes, instead of waiting for the rumour to reach it.
  void tell_suspect(const std::string& target, std::vector<MemberRecord>& updates) const {
    const Member* row = table.find(target);
    if (row == nullptr || row->status != MemberStatus::suspect) return;
    for (const auto& update : updates)
      if (update.ann.endpoint == target) return;
    updates.push_back(table.record(*row));
  }

  void tell_seeds(const std::vector<std::string>& seeds, const std::vector<MemberRecord>& joiners) {
    for (const auto& other : seeds) {
      Gossip gossip;
      gossip.updates = joiners;
      send(other, std::move(gossip));
    }
  }

  void forward_joiners(Time now) {
    if (joiners_to_forward.empty() || now < next_forward_at) return;
    tell_seeds(collectors, joiners_to_forward);
    joiners_to_forward.clear();
  }

  void tick_gossip(Time now) {
    if (now >= next_gossip_at) {
      next_gossip_at = now + as_time(config.timing.gossip_interval);
      push_gossip(config.timing.gossip_fanout);
      gossip_to_the_dead(now);
      ask_witnesses();
      last_push_at = now;
      dirty = false;
    }
    if (dirty && now >= last_push_at + as_time(config.timing.min_push_gap)) {
      // New information goes out at once, not on the next period: a rendezvous should cost
      // a few round trips, not a few gossip intervals.
      push_gossip(config.timing.gossip_fanout);
      ask_witnesses();
      last_push_at = now;
      dirty = false;
    }
    if (now >= next_push_pull_at && !commit_reported) {
      next_push_pull_at = now + push_pull_gap();
      if (auto peer = push_pull_partner()) {
        Gossip gossip;
        gossip.want_reply = true;
        gossip.updates = full_state();
        gossip.views = views(*peer);
        send(*peer, std::move(gossip));
      }
    }
  }

  // A random live peer, preferably not one of our seeds: every node joined through them and
  // knows them, so they would otherwise answer far more full-state exchanges than anyone.
  std::optional<std::string> push_pull_partner() {
    auto peers = table.sample_peers(prng, config.seeds.size() + 1);
    for (const auto& peer : peers) {
      if (!is_seed(peer)) return peer;
    }
    if (peers.empty()) return std::nullopt;
    return peers.front();
  }

  // A member buried by mistake (a partition longer than the suspicion timeout) only refutes
  // once it hears the rumour, and nobody talks to the dead: keep telling one for a while.
  void gossip_to_the_dead(Time now) {
    auto buried = table.sample_recently_dead(prng, now - as_time(config.timing.dead_gossip_window));
    if (!buried) return;
    Gossip gossip;
    gossip.updates = table.take_piggyback(config.timing.max_piggyback);
    if (const Member* row = table.find(*buried)) gossip.updates.push_back(table.record(*row));
    gossip.views = views(*buried);
    send(*buried, std::move(gossip));
  }

  void tick_relays(Time now) {
    std::erase_if(relays, [&](const auto& entry) { return entry.second.expires <= now; });
  }

  void step_agreement(Time now) {
    if (config.seed_only || config_fatal) return;
    // Given a seed that is not ourselves, we agree only once we have heard from our run:
    // alone we would commit a view of one (with MIN 1) before learning that the seed belongs
    // to another run or already holds the members. A member among several seeds may start a
    // round alone, as the only seed does.
    if (!joined && !listed_seed) return;
    if (agreement.step(now, table)) dirty = true;
    if (agreement.committed() && !commit_reported) report_commit(now);
    if (agreement.not_admitted() && !not_admitted_reported) report_not_admitted();
    if (agreement.everyone_committed() && !pushed_full_commit) {
      // Our caller may stop once we are done: hand the complete commit set to a few members
      // now, or one that still lacks a bit only we had would wait out its grace.
      pushed_full_commit = true;
      push_gossip(config.timing.gossip_fanout);
    }
    if (agreement.committed() && !done && commit_reported &&
        (now >= stay_until() || (agreement.everyone_committed() && now >= linger_until()))) {
      done = true;
    }
  }

  /// Whether we are a seed of our run: the node that late and restarted processes ask.
  bool am_seed() const { return listed_seed || config.seeds.empty(); }

  // How long a committed node serves at most: commit_grace, while members still lack our
  // bits. A seed stays at least as long as a joiner waits between two attempts
  // (join_backoff_max), so that any node that can reach it asks at least once after the
  // commit and is told the outcome (docs/protocol.md, rule 7).
  Time stay_until() const {
    auto stay = config.timing.commit_grace;
    if (am_seed()) stay = std::max(stay, config.timing.join_backoff_max);
    return committed_at + as_time(stay);
  }

  // Once every member has committed we stay a little longer: outcome_linger after the
  // commit, for a node started a moment too late; two gossip periods after the last message
  // from a node outside the view, whose answer (answer_outsider) may have been lost and
  // which asks again while it does not know. A seed stays until stay_until(): a node that
  // starts or restarts after the commit knows nobody else to ask.
  Time linger_until() const {
    if (am_seed()) return stay_until();
    return member_linger_until();
  }
  Time member_linger_until() const {
    Time until = committed_at + as_time(config.timing.outcome_linger);
    if (last_outsider_heard) {
      until = std::max(until, *last_outsider_heard + 2 * as_time(config.timing.gossip_interval));
    }
    return until;
  }

  void report_commit(Time now) {
    const auto members = agreement.committed_members(table);
    const auto view = agreement.committed_view();
    if (members.size() != view->members.size()) {
      // We adopted a commit but do not know every member's announcement yet (e.g. we
      // restarted and learned the outcome from one gossip): ask for the full table now.
      if (!asked_for_announcements) {
        asked_for_announcements = true;
        next_push_pull_at = now;
      }
      return;
    }
    commit_reported = true;
    committed_at = now;
    // Our ready and commit bits go out now, not on the next push: a caller that stops on this
    // outcome (a rank conflict is fatal) must not take the last bits its peers need with it.
    push_gossip(config.timing.gossip_fanout);
    last_push_at = now;
    tell_outsiders(view->members);
    next_retell_at = now + as_time(config.timing.probe_interval);
    auto result = assign_ranks(members, config.self.endpoint, config.run_id, config.round);
    if (auto* error = std::get_if<AssignmentError>(&result)) {
      events.push_back(Fatal{error->code, error->message});
    } else {
      events.push_back(Committed{std::get<Assignment>(std::move(result))});
    }
  }

  // A seed that stays past a member's linger only answers: every member knows the outcome,
  // and probing or gossiping to members that have left would only fill their queues.
  bool seed_stays_quietly() const {
    return am_seed() && commit_reported && !done && agreement.everyone_committed();
  }
  void tick_quiet(Time now) {
    if (quiet || !seed_stays_quietly() || now < member_linger_until()) return;
    quiet = true;
    probe.reset();
    dirty = false;
  }

  // A seed tells the outsiders again once per probe interval while it stays (stay_until):
  // one whose Join arrived after the commit, and whose answer was lost, may next ask only
  // seconds later (join backoff), and a member's PingReq can make it joined without a row.
  void tick_retell(Time now) {
    if (!commit_reported || done || !am_seed() || now < next_retell_at) return;
    next_retell_at = now + as_time(config.timing.probe_interval);
    // The interned member list, not committed_view(): that copies every member each time.
    if (const MemberList* members = agreement.committed_member_list()) tell_outsiders(*members);
  }

  // Members are told by gossip until they all know; a live node outside the view (an extra
  // beyond MAX, a late joiner) is not a gossip target after the commit and would wait for
  // its own join timeout once the members leave. Tell each one once, now.
  void tell_outsiders(const MemberList& members) {
    for (std::uint32_t index : table.live_peers()) {
      const std::string& peer = table.rows()[index].ann->endpoint;
      // members are sorted by (endpoint, generation): find the endpoint by binary search.
      auto it = std::lower_bound(members.begin(), members.end(), MemberKey{peer, 0});
      if (it != members.end() && it->endpoint == peer) continue;
      Gossip outcome;
      outcome.views = views(peer);
      send(peer, std::move(outcome));
    }
  }

  // A node outside the committed view that still talks to us does not know the outcome
  // (told, it would have stopped): tell_outsiders' one message was lost, or it restarted or
  // came back from a partition after the commit. Answer each such message with the outcome
  // while we are still here, as a Raft node answers a stale term. Join, Ping and a Gossip
  // that wants a reply are answered with our claims already; the rest are answered here.
  void answer_outsider(Time now, const Envelope& msg) {
    if (!outside_committed_view(msg.sender, msg.sender_generation)) return;
    last_outsider_heard = now;
    const auto* gossip = std::get_if<Gossip>(&msg.body);
    const bool answered_already = std::holds_alternative<Join>(msg.body) ||
                                  std::holds_alternative<Ping>(msg.body) ||
                                  (gossip != nullptr && gossip->want_reply);
    const bool asks = gossip != nullptr || std::holds_alternative<PingReq>(msg.body);
    if (answered_already || !asks) return;
    Gossip outcome;
    outcome.views = views(msg);
    send(msg.sender, std::move(outcome));
  }

  void report_not_admitted() {
    not_admitted_reported = true;
    NotAdmitted event;
    event.round = config.round;
    if (auto view = agreement.foreign_commit()) {
      event.view_size = static_cast<std::uint32_t>(view->members.size());
      for (const auto& key : view->members) {
        if (key.endpoint == config.self.endpoint) event.previous_process_in_view = true;
      }
    }
    events.push_back(event);
  }

  // ---- state --------------------------------------------------------------------------------
  CoreConfig config;
  Prng prng;
  MemberTable table;
  Agreement agreement;
  Witness witness;  ///< a dedicated seed's part in agreement (witness.hpp)
  std::deque<Outgoing> outbox;
  std::deque<Event> events;
  std::uint64_t incarnation = 0;
  bool started = false;
  bool joined = false;
  bool dirty = false;
  bool done = false;
  bool commit_reported = false;
  bool not_admitted_reported = false;
  bool config_fatal = false;
  bool asked_for_announcements = false;
  bool pushed_full_commit = false;
  std::uint64_t join_attempts = 0;
  std::size_t first_seed = 0;           ///< random: with several seeds, the joins spread over them
  bool listed_seed = false;             ///< our own endpoint is in the seed list
  std::vector<std::string> seed_set;    ///< config.seeds sorted, for is_seed()
  std::vector<std::string> collectors;  ///< the seeds our joiners go to (we are a member seed)
  std::vector<MemberRecord> joiners_to_forward;  ///< to the collectors
  Time next_forward_at{0};
  std::vector<std::string> unmet_seeds;  ///< other seeds not yet in our table (we are a seed)
  Time join_backoff{0};
  Time next_join_at{0};
  Time next_probe_at{0};
  Time next_gossip_at{0};
  Time next_push_pull_at{0};
  Time next_table_pull_at{0};  ///< rate limit of pull_table()
  Time last_push_at{0};
  Time committed_at{0};
  std::optional<Time> last_outsider_heard;  ///< last message from outside the committed view
  Time next_retell_at{0};                   ///< tick_retell (a seed, after its commit)
  bool quiet = false;  ///< a seed past the members' linger: answers, no probes or gossip
  std::uint64_t next_seq = 0;
  struct Probe {
    std::string target;
    std::uint64_t seq;
    Time sent_at;
    bool indirect_sent;
    std::uint32_t round;  ///< 1 for the first period of this target; see Timing::probe_rounds
  };
  std::optional<Probe> probe;
  struct Relay {
    std::string requester;
    std::uint64_t requester_seq;
    Time expires;
  };
  std::unordered_map<std::uint64_t, Relay> relays;
  std::unordered_set<std::string> refused;
  std::unordered_set<std::string> refused_by;
  std::unordered_map<std::string, Unanswered> unanswered;
  struct JoinSeen {
    std::uint64_t generation = 0;
    std::uint32_t answers = 0;  ///< JoinReplies sent to this joiner process
    Time first_answer_at{0};
  };
  std::unordered_map<std::string, JoinSeen> joins_answered;
};

Core::Core(CoreConfig config) : impl_(std::make_unique<Impl>(std::move(config))) {}
Core::~Core() = default;
Core::Core(Core&&) noexcept = default;
Core& Core::operator=(Core&&) noexcept = default;

void Core::start(Time now) {
  Impl& s = *impl_;
  if (s.started) return;
  s.started = true;
  s.join_backoff = as_time(s.config.timing.join_backoff_initial);
  if (s.config.seeds.size() > 1) s.first_seed = s.prng.below(s.config.seeds.size());
  s.next_join_at = now;
  s.next_probe_at = now + as_time(s.config.timing.probe_interval);
  s.next_gossip_at = now + as_time(s.config.timing.gossip_interval);
  s.next_push_pull_at = now + as_time(s.config.timing.push_pull_interval);
  if (!s.config.seed_only) {
    s.table.set_self(s.self_record());
    s.table.enqueue(s.config.self.endpoint, s.retransmits());
  }
  // The only seed, or a dedicated one: a dedicated seed never joins anyone (its Join would
  // announce it as a member); other dedicated seeds hear of its joiners (handle(Join)).
  if (s.config.seeds.empty() || s.config.seed_only) s.mark_joined(s.config.self.endpoint);
  s.tick_join(now);
  s.step_agreement(now);
}

void Core::on_message(Time now, const Envelope& msg) {
  Impl& s = *impl_;
  if (const auto* refuse = std::get_if<Refuse>(&msg.body)) {
    s.handle(now, msg, *refuse);
    return;
  }
  if (msg.sender.empty()) return;
  if (msg.sender == s.config.self.endpoint && msg.sender_generation == s.config.self.generation) {
    // Our own message came back: some peer's advertised endpoint leads to this very node
    // (e.g. it advertises 127.0.0.1). It is no answer from that peer.
    return;
  }
  if (msg.version != kProtocolVersion) {
    on_version_mismatch(now, msg.sender, msg.version);
    return;
  }
  if (msg.run_id != s.config.run_id) {
    s.refuse(msg.sender, RefuseReason::run_id_mismatch,
             "node " + s.config.self.endpoint + " belongs to run '" + s.config.run_id +
                 "', the message came from run '" + msg.run_id + "'");
    return;
  }
  s.table.heard_from(msg.sender, msg.sender_generation, now);
  std::visit([&](const auto& body) { s.handle(now, msg, body); }, msg.body);
  if (!std::holds_alternative<Unreachable>(msg.body)) s.maybe_tell_unreachable(now, msg);
  s.step_agreement(now);
  s.answer_outsider(now, msg);
}

void Core::on_version_mismatch(Time, const std::string& sender, std::uint16_t their_version) {
  impl_->refuse(sender, RefuseReason::version_mismatch,
                "node " + impl_->config.self.endpoint + " speaks gossip-rdzv protocol version " +
                    std::to_string(kProtocolVersion) + ", the message came with version " +
                    std::to_string(their_version));
}

void Core::on_tick(Time now) {
  Impl& s = *impl_;
  if (!s.started) return;
  s.tick_join(now);
  if (!s.config.seed_only) {
    s.tick_suspicions(now);
    s.forward_joiners(now);
    s.tick_quiet(now);
    if (s.joined && !s.quiet) s.tick_probe(now);
    s.step_agreement(now);
    if (s.joined && !s.quiet) s.tick_gossip(now);
    s.tick_retell(now);
    s.tick_relays(now);
    s.step_agreement(now);
  }
}

std::optional<Outgoing> Core::poll_send() {
  if (impl_->outbox.empty()) return std::nullopt;
  Outgoing out = std::move(impl_->outbox.front());
  impl_->outbox.pop_front();
  return out;
}

std::optional<Event> Core::poll_event() {
  if (impl_->events.empty()) return std::nullopt;
  Event event = std::move(impl_->events.front());
  impl_->events.pop_front();
  return event;
}

Time Core::next_wakeup() const {
  const Impl& s = *impl_;
  if (!s.started || s.config.seed_only) return kNever;
  Time next = kNever;
  auto consider = [&](Time t) { next = std::min(next, t); };
  if (((!s.joined || s.lost_touch()) && !s.config.seeds.empty()) || !s.unmet_seeds.empty())
    consider(s.next_join_at);
  if (!s.joiners_to_forward.empty()) consider(s.next_forward_at);
  if (s.seed_stays_quietly() && !s.quiet) consider(s.member_linger_until());
  if (s.joined && !s.quiet) {
    consider(s.next_probe_at);
    consider(s.next_gossip_at);
    if (!s.commit_reported) consider(s.next_push_pull_at);
    if (s.dirty) consider(s.last_push_at + as_time(s.config.timing.min_push_gap));
  }
  if (s.probe && !s.probe->indirect_sent)
    consider(s.probe->sent_at + as_time(s.config.timing.probe_timeout));
  if (auto deadline = s.table.earliest_suspect_deadline()) consider(*deadline);
  if (auto deadline = s.agreement.next_deadline()) consider(*deadline);
  // committed_at is set when the commit is reported (all announcements known), not before:
  // a node that agreed but still waits for rows would otherwise spin at commit_grace or
  // outcome_linger past time zero (the simulator found it at N = 500 with 10% loss).
  if (s.commit_reported && !s.done) {
    consider(s.stay_until());
    if (s.am_seed()) consider(s.next_retell_at);
    if (s.agreement.everyone_committed()) consider(s.linger_until());
  }
  return next;
}

bool Core::joined() const {
  return impl_->joined;
}
bool Core::commit_reported() const {
  return impl_->commit_reported;
}
bool Core::done() const {
  return impl_->done;
}
const CoreConfig& Core::config() const {
  return impl_->config;
}

Snapshot Core::snapshot() const {
  const Impl& s = *impl_;
  Snapshot snap;
  snap.joined = s.joined;
  snap.commit_reported = s.commit_reported;
  snap.done = s.done;
  for (const auto& row : s.table.rows()) {
    snap.members.push_back(
        MemberView{*row.ann, row.status, row.incarnation, row.last_heard, s.table.teller(row)});
  }
  std::sort(snap.members.begin(), snap.members.end(),
            [](const auto& a, const auto& b) { return a.ann.endpoint < b.ann.endpoint; });
  snap.held = s.agreement.held_view();
  if (!s.config.seed_only) snap.seeds = s.agreement.base_status();
  for (const auto& [endpoint, entry] : s.unanswered) {
    if (entry.count == 0) continue;
    snap.unreachable.push_back(UnreachablePeer{
        endpoint, entry.count, entry.since, entry.heard_meanwhile, entry.last_notice.has_value()});
  }
  std::sort(
      snap.unreachable.begin(), snap.unreachable.end(),
      [](const UnreachablePeer& a, const UnreachablePeer& b) { return a.endpoint < b.endpoint; });
  return snap;
}

void Core::check_invariants() const {
  const Impl& s = *impl_;
  s.agreement.check_invariants();
  s.witness.check_invariants();
  const Member* self = s.table.find(s.config.self.endpoint);
  if (!s.config.seed_only && s.started &&
      (self == nullptr || self->status != MemberStatus::alive)) {
    std::abort();  // we never hold a rumour of our own death: we refute it
  }
}

}  // namespace gossip_rdzv::protocol
