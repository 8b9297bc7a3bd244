// The simulated network: a seeded PRNG and a faulty packet model (latency, loss, duplication,
// reordering, partitions). Modelled on TigerBeetle's packet simulator: every decision comes
// from one PRNG seeded by the run seed, so a run is a pure function of its seed.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "protocol/core.hpp"
#include "protocol/prng.hpp"

namespace gossip_rdzv::sim {

using protocol::Time;

/// splitmix64: used to derive independent seeds (per node, per stream) from one run seed.
using protocol::splitmix64;
/// One splitmix64 step of `value` without state: a good 64-bit mixer.
std::uint64_t mix64(std::uint64_t value);

/// The simulator's only source of randomness: the core's xoshiro256** (protocol/prng.hpp),
/// its below() and unit() included, with streams and the distributions a network model
/// needs on top. No std:: distributions are used anywhere, because their output differs
/// between standard library versions; a seed must replay the same run on every machine.
class Prng : public protocol::Prng {
 public:
  /// `stream` separates independent sequences drawn from one run seed.
  explicit Prng(std::uint64_t seed, std::uint64_t stream = 0);

  /// Uniform in [low, high] (inclusive).
  std::uint64_t between(std::uint64_t low, std::uint64_t high);
  /// True with probability `probability` (0 never, 1 always).
  bool chance(double probability);
  /// Exponentially distributed with the given mean (inverse transform of unit()).
  double exponential(double mean);
  /// Uniform duration in [low, high].
  Time time_between(Time low, Time high);
};

/// How packets behave between two reachable nodes. Latency is one-way:
/// base + exponential(jitter_mean), plus with `reorder_probability` an extra uniform delay in
/// [0, reorder_max_delay] that lets later packets overtake it.
struct LinkConfig {
  Time latency_base{200};
  Time latency_jitter_mean{100};
  double loss_probability = 0.0;
  double duplicate_probability = 0.0;
  double reorder_probability = 0.0;
  Time reorder_max_delay{std::chrono::milliseconds(20)};
  /// A packet to an endpoint where no process listens waits in the sender's queue, as with
  /// the runtime's ZeroMQ DEALER: it retries `reconnect_initial` after the first attempt,
  /// doubling up to `reconnect_max`, and holds at most `queue_limit` packets (the transport's
  /// defaults: reconnect_ivl 100 ms, reconnect_ivl_max 5 s, sndhwm 1000). Node lowers both
  /// (to the join backoff's first step and to the probe interval); the model keeps the
  /// transport's defaults, the slower case.
  Time reconnect_initial{std::chrono::milliseconds(100)};
  Time reconnect_max{std::chrono::seconds(5)};
  std::uint32_t queue_limit = 1000;
};

/// When a sender that first found its destination not listening at `since` connects, given
/// that the destination listens from `up` (>= since): the first of its reconnect attempts
/// (at since, then after 100, 200, 400 ... ms, capped at reconnect_max) at or after `up`.
/// ZeroMQ adds up to one reconnect_initial of random jitter to each wait; the model does not.
Time reconnect_time(const LinkConfig& link, Time since, Time up);

/// A partition: nodes whose `side` differ cannot exchange packets while it is active
/// ([from, until)). Side 0 and side 1 are two groups; an isolated node is alone on side 1.
struct Partition {
  std::vector<std::uint8_t> side;  ///< indexed by node slot; missing slots are on side 0
  Time from{0};
  Time until{Time::max()};

  bool separates(std::size_t a, std::size_t b, Time now) const;
};

/// Decides the fate of each packet: dropped, or delivered once or twice at given times.
class Network {
 public:
  Network(LinkConfig link, std::uint64_t run_seed);

  void add_partition(Partition partition);
  /// The longest stretch of [from, until) during which no partition separates slots a and b.
  Time longest_reachable(std::size_t a, std::size_t b, Time from, Time until) const;
  const std::vector<Partition>& partitions() const { return partitions_; }
  const LinkConfig& link() const { return link_; }
  /// The latest `until` of any finite partition (0 when none): after this the network heals.
  Time healed_at() const;

  /// Delivery times of a packet sent at `now` from slot `from` to slot `to`: empty when lost
  /// or partitioned, two entries when duplicated.
  std::vector<Time> route(std::size_t from, std::size_t to, Time now);
  /// Whether a partition separates slots a and b at `at`, counted as a drop when it does: for
  /// a packet routed ahead of its send time (a sender's queue released at its reconnect), in
  /// case a partition was added since.
  bool drop_if_separated(std::size_t a, std::size_t b, Time at);

  std::uint64_t dropped_by_loss() const { return dropped_by_loss_; }
  std::uint64_t dropped_by_partition() const { return dropped_by_partition_; }
  std::uint64_t duplicated() const { return duplicated_; }

 private:
  Time one_way_delay();

  LinkConfig link_;
  Prng prng_;
  std::vector<Partition> partitions_;
  std::uint64_t dropped_by_loss_ = 0;
  std::uint64_t dropped_by_partition_ = 0;
  std::uint64_t duplicated_ = 0;
};

}  // namespace gossip_rdzv::sim
