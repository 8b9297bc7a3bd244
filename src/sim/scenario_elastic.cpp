// The elastic scenario: an elastic job over many rounds (docs/simulation.md, "The elastic
// scenario"), apart from scenario.cpp for its length.
#include <algorithm>
#include <chrono>
#include <sstream>

#include "sim/scenario.hpp"

namespace gossip_rdzv::sim {

namespace {

Time as_time(std::int64_t milliseconds) {
  return std::chrono::duration_cast<Time>(std::chrono::milliseconds(milliseconds));
}

}  // namespace

/// The elastic job (docs/simulation.md, "The elastic scenario"): --nnodes MIN:MAX with MAX
/// the --nodes given, 1-3 member seeds, some members arriving late, and a sequence of faults
/// over many rounds; every fault heals before the end and at least MIN members stay.
void make_elastic(Scenario& s, Prng& prng, std::ostringstream& what) {
  const auto n = static_cast<std::uint32_t>(s.nodes.size());
  s.elastic = true;
  s.max_nodes = n;
  s.min_nodes = static_cast<std::uint32_t>(prng.between(1, std::max<std::uint32_t>(1, n / 2)));
  const auto seeds = static_cast<std::size_t>(prng.between(1, std::min<std::uint32_t>(3, n)));
  std::vector<std::size_t> seed_slots;
  for (std::size_t i = 0; i < seeds; ++i) seed_slots.push_back(i);
  // The first members start within the usual spread; the others arrive during the faults.
  const auto initial =
      static_cast<std::size_t>(prng.between(std::max<std::size_t>(seeds, s.min_nodes), n));
  const Time susp = std::chrono::duration_cast<Time>(s.timing.suspicion_timeout(n));
  const auto fault_count = static_cast<std::size_t>(prng.between(3, 8));
  std::vector<Time> fault_at;
  Time t = as_time(3000);
  for (std::size_t i = 0; i < fault_count; ++i) {
    t += prng.time_between(as_time(1000), susp + as_time(4000));
    fault_at.push_back(t);
  }
  for (std::size_t i = 0; i < n; ++i) {
    s.nodes[i].seeds = seed_slots;
    if (i < seeds) s.nodes[i].start = Time(0);
    if (i >= initial) s.nodes[i].start = prng.time_between(as_time(2000), t);
  }
  static constexpr double kLoss[] = {0.0, 0.0, 0.01, 0.05, 0.1};
  s.link.loss_probability = kLoss[prng.below(5)];
  // A slot is down in [down_from, down_until); a seed goes down only while fewer than a
  // majority of the seeds are out with it (at most seeds / 2 at once).
  std::vector<Time> down_from(n, Time::max()), down_until(n, Time(0));
  std::size_t gone = 0;  // crashed for good: at least MIN members stay
  const std::size_t seeds_may_be_down = seeds / 2;
  const Time rejoin = 2 * susp + as_time(3000);
  std::size_t crashes = 0, restarts = 0, worker_failures = 0, cuts = 0;
  for (const Time at : fault_at) {
    const auto pick = prng.below(4);
    if (pick == 0 || pick == 1) {
      if (pick == 0) {
        s.worker_failures.push_back(WorkerFailure{at, prng.next()});
        ++worker_failures;
        continue;
      }
      // A partition: one node or a random side, healed within two suspicion timeouts.
      Partition p;
      p.side.assign(n, 0);
      if (prng.chance(0.5)) {
        p.side[prng.below(n)] = 1;
      } else {
        for (auto& side : p.side) side = prng.chance(0.5) ? 1 : 0;
      }
      p.from = at;
      p.until = at + prng.time_between(as_time(300), 2 * susp);
      s.partitions.push_back(p);
      ++cuts;
      continue;
    }
    // A crash of a member up at `at`, restarted at the same endpoint (generation + 1)
    // unless it is not a seed and enough members stay without it.
    const auto slot = static_cast<std::size_t>(prng.below(n));
    if (s.nodes[slot].start >= at || (down_until[slot] > at && down_from[slot] <= at)) continue;
    // A restarted or newly started process knows nothing of the rounds until it heard a
    // peer: it counts as out for `rejoin` (longer than any partition) after it starts. A
    // crash needs another member that is in, so that the job's rounds are never forgotten
    // by every process at once (docs/simulation.md, "The elastic scenario").
    auto out = [&](std::size_t k) {
      return s.nodes[k].start + rejoin > at ||
             (down_from[k] <= at && down_until[k] != Time::max() && down_until[k] + rejoin > at) ||
             (down_from[k] <= at && down_until[k] == Time::max());
    };
    bool someone_in = false;
    for (std::size_t k = 0; k < n; ++k) someone_in = someone_in || (k != slot && !out(k));
    if (!someone_in) continue;
    if (slot < seeds) {
      std::size_t seeds_out = 0;
      for (std::size_t k = 0; k < seeds; ++k)
        if (out(k)) ++seeds_out;
      if (seeds_out + 1 > seeds_may_be_down) continue;
    }
    CrashSpec c;
    c.slot = slot;
    c.trigger = Trigger::at_time;
    c.delay = at;
    const bool for_good = slot >= seeds && gone + 1 + s.min_nodes <= n && prng.chance(0.2) &&
                          down_until[slot] != Time::max();
    down_from[slot] = at;
    if (for_good) {
      ++gone;
      down_until[slot] = Time::max();
    } else {
      c.restart_after = prng.time_between(as_time(200), susp + as_time(3000));
      down_until[slot] = at + *c.restart_after;
      ++restarts;
    }
    s.crashes.push_back(c);
    ++crashes;
  }
  s.leave_at_end = prng.chance(0.5);
  what << n << " slots, --nnodes " << s.min_nodes << ":" << n << ", " << seeds
       << " member seed(s), " << n - initial << " late arrival(s), " << crashes << " crash(es) ("
       << restarts << " restarted), " << worker_failures << " worker failure(s), " << cuts
       << " partition(s), loss " << s.link.loss_probability
       << (s.leave_at_end ? ", every member leaves at the end" : "");
}

}  // namespace gossip_rdzv::sim
