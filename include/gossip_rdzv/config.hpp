// Configuration of a gossip-rdzv node. Every field has a documented default; the presets
// (lan(), local(), wan()) only change protocol timing.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gossip_rdzv {

using std::chrono::milliseconds;

/// Protocol timing and fan-out. Defaults follow hashicorp/memberlist's LAN profile
/// (probe 1 s, gossip 200 ms to 3 nodes); new information is also pushed at once, so these
/// periods bound recovery from loss rather than the speed of a healthy rendezvous. Node's
/// constructor rejects (ErrorCode::usage) a period that is not positive and a zero fan-out.
struct Timing {
  milliseconds gossip_interval{200};  ///< periodic push of recent updates to `gossip_fanout` peers
  std::uint32_t gossip_fanout = 3;    ///< peers per gossip push (periodic and immediate)
  milliseconds min_push_gap{5};       ///< rate limit between two immediate pushes
  milliseconds probe_interval{1000};  ///< SWIM: one member probed per interval
  milliseconds probe_timeout{500};    ///< SWIM: ack expected within this, else indirect probes
  std::uint32_t indirect_probes = 3;  ///< SWIM: members asked to probe on our behalf
  std::uint32_t probe_rounds = 2;     ///< unanswered probe periods in a row before a suspicion
  std::uint32_t suspicion_mult = 4;   ///< suspect -> dead: see suspicion_timeout()
  milliseconds suspicion_min{2000};   ///< suspect -> dead never sooner than this
  milliseconds push_pull_interval{
      5000};  ///< full-state exchange with one random peer (anti-entropy)
  std::uint32_t retransmit_mult =
      4;  ///< an update is piggybacked mult * log2(N+1) times (memberlist)
  std::uint32_t max_piggyback = 32;  ///< records piggybacked on one message
  std::uint32_t join_sample_size =
      8;  ///< members a seed returns per join (bounded: not the whole table)
  milliseconds join_backoff_initial{100};  ///< first retry of a join; doubles with jitter...
  milliseconds join_backoff_max{5000};     ///< ... up to this cap
  milliseconds dead_gossip_window{30000};  ///< keep gossiping to members declared dead this long
                                           ///< (memberlist's GossipToTheDeadTime), so a wrongly
                                           ///< buried member hears it and refutes
  milliseconds commit_grace{5000};         ///< after committing, serve peers at most this long
                                           ///< (a seed: at least join_backoff_max, so a node
                                           ///< that starts after the commit is told)
  milliseconds outcome_linger{1000};  ///< after everyone committed, keep answering this long so
                                      ///< that a node started a moment too late is told it was
                                      ///< not admitted instead of finding nobody there

  /// How long a suspected member has to refute before it is declared dead, for a cluster of
  /// `members` (memberlist): suspicion_mult * max(1, ceil(log10 members)) * probe_interval,
  /// at least suspicion_min. A node passes max(members it knows, --nnodes MIN); the
  /// simulator uses the same function for its scenarios and its termination bound.
  milliseconds suspicion_timeout(std::size_t members) const;

  static Timing lan();
  static Timing local();  ///< one machine, loopback: 10x faster periods
  static Timing wan();
};

/// A node's configuration. `seeds` and the sizes are the only fields without a usable default.
struct Config {
  std::string run_id = "default";       ///< nodes of different run ids refuse each other
  std::vector<std::string> seeds;       ///< "host:port" or "[v6]:port"; may include this node
  std::string listen_host = "0.0.0.0";  ///< where the gossip socket binds
  std::uint16_t listen_port = 29400;    ///< 0 picks a free port
  std::string advertise_host;           ///< address peers dial; empty: chosen by route to the seed
  std::uint32_t min_nodes = 1;          ///< --nnodes MIN (or N)
  std::uint32_t max_nodes = 1;          ///< --nnodes MAX (or N)
  std::uint32_t nproc_per_node = 1;     ///< local worker processes on this node
  std::int32_t node_rank = -1;          ///< --node-rank hint, -1 for none
  std::uint16_t master_port = 0;        ///< 0: pick a free port on this node (used if it is rank 0)
  milliseconds join_timeout{600000};    ///< give up (with a report of who is missing) after this
  milliseconds last_call{30000};        ///< with MIN < MAX: wait this long for more after MIN
  Timing timing = Timing::lan();
  std::string hostname;         ///< empty: the machine's host name
  std::uint64_t rng_seed = 0;   ///< 0: seeded from the OS; fixed only for tests
  bool dedicated_seed = false;  ///< only introduce joiners, never a member (`seed` command)
};

}  // namespace gossip_rdzv
