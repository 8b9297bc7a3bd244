#include "sim/network.hpp"

#include <algorithm>
#include <cmath>

namespace gossip_rdzv::sim {

std::uint64_t mix64(std::uint64_t value) {
  return splitmix64(value);
}

// Seeding xoshiro through splitmix64 is what its authors recommend; it never yields the
// all-zero state. The stream is folded into the seed first.
Prng::Prng(std::uint64_t seed, std::uint64_t stream)
    : protocol::Prng(seed ^ mix64(stream + 0x5851f42d4c957f2dULL)) {}

std::uint64_t Prng::between(std::uint64_t low, std::uint64_t high) {
  if (high <= low) return low;
  const std::uint64_t span = high - low;
  if (span == UINT64_MAX) return next();
  return low + below(span + 1);
}

bool Prng::chance(double probability) {
  if (probability <= 0.0) return false;
  if (probability >= 1.0) return true;
  return unit() < probability;
}

double Prng::exponential(double mean) {
  return -mean * std::log1p(-unit());
}

Time Prng::time_between(Time low, Time high) {
  if (high <= low) return low;
  return low +
         Time(static_cast<Time::rep>(below(static_cast<std::uint64_t>((high - low).count()) + 1)));
}

Time reconnect_time(const LinkConfig& link, Time since, Time up) {
  Time attempt = since;
  Time wait = link.reconnect_initial < Time(1) ? Time(1) : link.reconnect_initial;
  const Time cap = std::max(wait, link.reconnect_max);
  while (attempt < up) {
    attempt += wait;
    wait = std::min(wait * 2, cap);
  }
  return attempt;
}

bool Partition::separates(std::size_t a, std::size_t b, Time now) const {
  if (now < from || now >= until) return false;
  const std::uint8_t side_a = a < side.size() ? side[a] : 0;
  const std::uint8_t side_b = b < side.size() ? side[b] : 0;
  return side_a != side_b;
}

Network::Network(LinkConfig link, std::uint64_t run_seed) : link_(link), prng_(run_seed, 2) {}

void Network::add_partition(Partition partition) {
  partitions_.push_back(std::move(partition));
}

Time Network::longest_reachable(std::size_t a, std::size_t b, Time from, Time until) const {
  std::vector<std::pair<Time, Time>> cuts;
  for (const auto& p : partitions_) {
    const std::uint8_t side_a = a < p.side.size() ? p.side[a] : 0;
    const std::uint8_t side_b = b < p.side.size() ? p.side[b] : 0;
    if (side_a != side_b && p.from < until && p.until > from) cuts.emplace_back(p.from, p.until);
  }
  std::sort(cuts.begin(), cuts.end());
  Time longest{0};
  Time open = from;  // reachable since `open`
  for (const auto& [start, end] : cuts) {
    if (start > open) longest = std::max(longest, std::min(start, until) - open);
    open = std::max(open, end);
    if (open >= until) return longest;
  }
  return std::max(longest, until - open);
}

Time Network::healed_at() const {
  Time latest{0};
  for (const auto& p : partitions_)
    if (p.until != Time::max() && p.until > latest) latest = p.until;
  return latest;
}

Time Network::one_way_delay() {
  Time delay = link_.latency_base;
  if (link_.latency_jitter_mean.count() > 0)
    delay += Time(static_cast<Time::rep>(
        prng_.exponential(static_cast<double>(link_.latency_jitter_mean.count()))));
  if (prng_.chance(link_.reorder_probability))
    delay += prng_.time_between(Time(0), link_.reorder_max_delay);
  // Never zero: a packet cannot arrive at the instant it is sent.
  return delay < Time(1) ? Time(1) : delay;
}

bool Network::drop_if_separated(std::size_t a, std::size_t b, Time at) {
  for (const auto& p : partitions_) {
    if (p.separates(a, b, at)) {
      ++dropped_by_partition_;
      return true;
    }
  }
  return false;
}

std::vector<Time> Network::route(std::size_t from, std::size_t to, Time now) {
  std::vector<Time> deliveries;
  for (const auto& p : partitions_) {
    if (p.separates(from, to, now)) {
      ++dropped_by_partition_;
      return deliveries;
    }
  }
  if (prng_.chance(link_.loss_probability)) {
    ++dropped_by_loss_;
    return deliveries;
  }
  deliveries.push_back(now + one_way_delay());
  if (prng_.chance(link_.duplicate_probability)) {
    ++duplicated_;
    deliveries.push_back(now + one_way_delay());
  }
  return deliveries;
}

}  // namespace gossip_rdzv::sim
