// Configuration of a gossip-rdzv node. Every field has a documented default; the presets
// (lan(), local(), wan()) only change protocol timing. validate() holds every rule a config
// must meet; Node, the C API and the gossip-rdzv command all check it there.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include "gossip_rdzv/export.h"

namespace gossip_rdzv {

using std::chrono::milliseconds;

/// Protocol timing and fan-out. Defaults follow hashicorp/memberlist's LAN profile
/// (probe 1 s, gossip 200 ms to 3 nodes); new information is also pushed at once, so these
/// periods bound recovery from loss rather than the speed of a healthy rendezvous.
/// validate() rejects a period that is not positive and a zero fan-out or probe_rounds.
struct GOSSIP_RDZV_API Timing {
  milliseconds gossip_interval{200};  ///< periodic push of recent updates to `gossip_fanout` peers
  std::uint32_t gossip_fanout = 3;    ///< peers per gossip push (periodic and immediate)
  milliseconds min_push_gap{5};       ///< rate limit between two immediate pushes
  milliseconds probe_interval{1000};  ///< SWIM: one member probed per interval
  milliseconds probe_timeout{500};    ///< SWIM: ack expected within this, else indirect probes
  std::uint32_t indirect_probes = 3;  ///< SWIM: members asked to probe on our behalf
  std::uint32_t probe_rounds = 2;     ///< unanswered probe periods in a row before a suspicion
  std::uint32_t suspicion_mult = 4;   ///< suspect -> dead: see suspicion_timeout()
  milliseconds suspicion_min{2000};   ///< suspect -> dead never sooner than this
  /// Lifeguard (memberlist's SuspicionMaxTimeoutMult): a suspicion no other member confirms
  /// lasts this many times suspicion_timeout(); see suspicion_confirmations(). 1: fixed.
  std::uint32_t suspicion_max_mult = 6;
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
  /// Members other than the first accuser that must suspect the same incarnation for the
  /// timeout to come down from suspicion_max_mult * suspicion_timeout() to
  /// suspicion_timeout(); each one shortens it logarithmically (memberlist): suspicion_mult
  /// - 2, or 0 (the timeout is suspicion_timeout() from the start) when fewer than that many
  /// members besides the suspect and its accuser exist.
  std::uint32_t suspicion_confirmations(std::size_t members) const;
  /// The longest a suspicion lasts on a healthy node before its member is declared dead:
  /// suspicion_max_mult * suspicion_timeout() when confirmations are expected (none came),
  /// else suspicion_timeout(). Local health multiplies both (docs/protocol.md).
  milliseconds suspicion_timeout_max(std::size_t members) const;

  static Timing lan();
  static Timing local();  ///< one machine, loopback: 10x faster periods
  static Timing wan();
  /// The preset named "lan", "local" or "wan" (--profile); nullopt for any other name.
  static std::optional<Timing> profile(std::string_view name);
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
  /// Elastic job (`--max-restarts` > 0): after a round commits, the nodes agree on the next
  /// one when a member dies or restarts, a node arrives below max_nodes, or a node reports
  /// its workers failed (Node::report_workers_failed). Otherwise the job agrees once.
  bool elastic = false;
  /// A key file (docs/security.md): with one, every message between nodes, and between a
  /// worker's store client and its agent, is authenticated and encrypted with the job's key,
  /// and messages without it are refused. Empty: no key, messages go in clear. Node::start()
  /// reads it (Error(usage) naming the file when it cannot be read or holds no valid key);
  /// the running node re-reads it when it changes (key rotation, `gossip-rdzv keys`).
  std::string key_file;
};

/// A rule of validate() that a config breaks, in parts, so that each front end can word it
/// in its own terms: the command line names its flag and the text it was given.
struct GOSSIP_RDZV_API ConfigProblem {
  std::string field;     ///< the Config field, e.g. "min_nodes" or "timing.probe_interval"
  std::string option;    ///< the gossip-rdzv flag that sets it, e.g. "--nnodes"; "" for none
  std::string value;     ///< the field's value as text
  std::string problem;   ///< what is wrong, e.g. "must be at least 1"
  std::string expected;  ///< what is accepted, e.g. "a whole number from 1 to 1000000"

  /// "config min_nodes '0' (--nnodes): must be at least 1 (expected N or MIN:MAX ...)".
  std::string message() const;
};

/// The first rule `config` breaks, or nullopt. The rules:
///   run_id          1 to 64 letters, digits, '.', '_' or '-' (find_run_id_problem)
///   min/max_nodes   1 <= min_nodes <= max_nodes <= 65536 (the nodes a round can hold)
///   nproc_per_node  1 to 1000000
///   node_rank       -1 (none) or below max_nodes
///   seeds           at least one unless dedicated_seed; each "host[:port]" or "[v6][:port]"
///   advertise_host  empty, or a host name or address without port, brackets or spaces
///   timing          every period positive; gossip_fanout and probe_rounds at least 1
///   join_timeout    positive
///   master_port     0 (pick a free one) or not the listen_port (unless dedicated_seed)
GOSSIP_RDZV_API std::optional<ConfigProblem> find_problem(const Config& config);

/// What is allowed but worth saying before the node starts, one sentence each: today
/// `--nnodes MIN:MAX` with 2*MIN <= MAX (a partition can leave two groups of MIN; only the one
/// holding a majority of the seed list agrees). Node::start() logs each as a warning.
GOSSIP_RDZV_API std::vector<std::string> config_warnings(const Config& config);

/// The run id rule alone, for a caller that needs no other field (a members query).
GOSSIP_RDZV_API std::optional<ConfigProblem> find_run_id_problem(const std::string& run_id);

/// Throws Error (error.hpp) with ErrorCode::usage and find_problem()'s message() when
/// `config` breaks a rule; returns when it breaks none.
GOSSIP_RDZV_API void validate(const Config& config);

}  // namespace gossip_rdzv
