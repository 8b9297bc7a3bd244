#include "gossip_rdzv/config.hpp"

#include <algorithm>
#include <cmath>

namespace gossip_rdzv {

// The defaults in config.hpp follow hashicorp/memberlist's DefaultLANConfig (config.go):
// ProbeInterval 1s, ProbeTimeout 500ms, GossipInterval 200ms, GossipNodes 3, IndirectChecks 3,
// RetransmitMult 4, SuspicionMult 4. Push-pull is shorter than memberlist's 30s because a
// rendezvous lasts seconds, not months, and anti-entropy must repair loss within it.
Timing Timing::lan() {
  return Timing{};
}

// One machine over loopback: round trips are microseconds, so periods are about 10x shorter
// than LAN (memberlist's DefaultLocalConfig shortens probe timeout to 200ms and gossip to
// 100ms; we go further because loopback tests want a rendezvous within a second or two).
Timing Timing::local() {
  Timing timing;
  timing.gossip_interval = milliseconds(20);
  timing.min_push_gap = milliseconds(1);
  timing.probe_interval = milliseconds(200);
  timing.probe_timeout = milliseconds(100);
  timing.suspicion_min = milliseconds(1000);
  timing.push_pull_interval = milliseconds(1000);
  timing.join_backoff_initial = milliseconds(20);
  timing.join_backoff_max = milliseconds(1000);
  timing.commit_grace = milliseconds(2000);
  timing.outcome_linger = milliseconds(300);
  return timing;
}

// Across data centres: memberlist's DefaultWANConfig (config.go): GossipInterval 500ms,
// GossipNodes 4, ProbeInterval 5s, ProbeTimeout 3s, SuspicionMult 6, PushPullInterval 60s.
// The probe interval stays above the timeout so indirect probes fit inside one interval.
// Join backoff and commit grace are ours: WAN round trips of ~100-300ms and lost packets
// make a 30s cap and 15s grace comfortable without stalling a start for minutes.
Timing Timing::wan() {
  Timing timing;
  timing.gossip_interval = milliseconds(500);
  timing.gossip_fanout = 4;
  timing.probe_interval = milliseconds(5000);
  timing.probe_timeout = milliseconds(3000);
  timing.suspicion_mult = 6;
  timing.push_pull_interval = milliseconds(60000);
  timing.join_backoff_initial = milliseconds(500);
  timing.join_backoff_max = milliseconds(30000);
  timing.commit_grace = milliseconds(15000);
  timing.outcome_linger = milliseconds(3000);
  return timing;
}

milliseconds Timing::suspicion_timeout(std::size_t members) const {
  const double scale = std::max(1.0, std::log10(static_cast<double>(members)));
  const auto computed = probe_interval * static_cast<std::int64_t>(suspicion_mult) *
                        static_cast<std::int64_t>(std::ceil(scale));
  return std::max(computed, suspicion_min);
}

}  // namespace gossip_rdzv
