// What the parts of the core share (core.cpp holds them, and routes messages and ticks to
// them): the configuration, the one PRNG, the membership table and the agreement every part
// reads, and the queues of what to send and what happened. Each part keeps its own state
// beside it: bootstrap.hpp (joining through the seeds), failure_detector.hpp (SWIM probes and
// suspicion), dissemination.hpp (gossip pushes and table exchanges), reachability.hpp (telling
// a node its endpoint does not answer), outcome_server.hpp (serving the outcome after the
// commit) and agreement_link.hpp (claims in and out, the witness, configuration checks).
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agreement.hpp"
#include "core.hpp"
#include "member_table.hpp"
#include "messages.hpp"
#include "prng.hpp"
#include "time.hpp"

namespace gossip_rdzv::protocol {

/// No wakeup wanted.
inline constexpr Time kNever{INT64_MAX / 4};

template <class Duration>
Time as_time(Duration d) {
  return std::chrono::duration_cast<Time>(d);
}

/// Round 0's quorum base: the seed list; a node given no seed is its own seed, as a node
/// whose only seed is itself (the first node of a job started from a library).
QuorumBase base_of(const CoreConfig& config);

/// The last call of every round after the first (docs/protocol.md, "Rounds"): the job runs
/// already, its members are known and a node that arrives later starts one more round, so
/// waiting the whole --last-call again would only hold the restart back. Five gossip
/// periods (1 s in the LAN profile) let the news of a change — a death, several nodes
/// started together — reach every member first; never longer than --last-call.
Time later_round_last_call(const CoreConfig& config);

struct CoreContext {
  /// Takes our own endpoint out of the seed list (listed_seed says it was there).
  explicit CoreContext(CoreConfig cfg);

  CoreConfig config;
  Prng prng;
  MemberTable table;
  Agreement agreement;
  bool listed_seed = false;           ///< our own endpoint is in the seed list
  std::vector<std::string> seed_set;  ///< config.seeds sorted, for is_seed()
  std::deque<Outgoing> outbox;
  std::deque<Event> events;
  /// Ours in SWIM: raised above a rumour that suspects or buries us (FailureDetector::refute).
  std::uint64_t incarnation = 0;
  /// News to push before the next gossip period (Dissemination::tick): a membership change,
  /// new agreement bits.
  bool dirty = false;
  /// Lifeguard's local health, 0 when healthy: probing and the suspicions we start or learn
  /// run this many times + 1 slower (FailureDetector).
  std::uint32_t local_health = 0;
  /// The highest local_health reached: whether this node ever ran late, for reports.
  std::uint32_t peak_local_health = 0;

  /// Left the job (Core::leave): our row says so, and it never changes again.
  bool left = false;
  /// The incarnation our row is dead at once we left: kLeftIncarnation, or an aborted one.
  std::uint64_t left_incarnation = kLeftIncarnation;
  /// The first final record we learned or made (an aborted one wins over a leave): a joiner
  /// gets it with our JoinReply, so a node that starts after the job ended is told so.
  std::optional<MemberRecord> job_end;

  /// Notes `record`'s final death for job_end.
  void note_final(const MemberRecord& record);

  /// The last round whose outcome we reported (Committed) and its members (endpoint,
  /// generation) by node rank: a new round started right after it places them first, in
  /// that order (AgreementConfig::previous).
  std::optional<std::pair<std::uint32_t, std::vector<MemberKey>>> last_outcome;

  /// Moves to `round`: a new agreement over the same table and quorum base.
  void start_round(std::uint32_t round);

  Envelope envelope(Body body) const;
  void send(const std::string& to, Body body);
  /// Back over the connection the message being handled arrived on (Outgoing::reply).
  void reply(const std::string& to, Body body);
  MemberRecord self_record() const;

  std::size_t cluster_size() const { return table.live_peer_count() + 1; }
  /// How many times a rumour is piggybacked: retransmit_mult * ceil(log2(N + 1)).
  std::uint32_t retransmits() const;
  /// The clock of a suspicion this node starts or learns at `now` (suspicion.hpp): `min` is
  /// Timing::suspicion_timeout for max(N, --nnodes MIN) times local health + 1, `max` that
  /// times suspicion_max_mult, and suspicion_mult - 2 confirmations (none when the members
  /// we hold alive are too few to give them) bring it down to `min`.
  SuspicionClock suspicion_clock(Time now) const;

  /// Our claims for `peer`: by reference for views it is known to hold (docs/protocol.md).
  std::vector<ViewClaim> views(const std::string& peer) const;
  /// Our claims in answer to `msg`: for the process that sent it, which may be a newer one at
  /// that endpoint than our table knows (it restarted). Its earlier process held our views;
  /// by reference they would mean nothing to it.
  std::vector<ViewClaim> views(const Envelope& msg) const;

  bool is_seed(const std::string& endpoint) const;
  /// Whether we are a seed of our run: the node that late and restarted processes ask.
  bool am_seed() const { return listed_seed || config.seeds.empty(); }
};

}  // namespace gossip_rdzv::protocol
