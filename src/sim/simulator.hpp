// The deterministic simulator: many protocol cores on one virtual clock, talking through the
// seeded faulty network of network.hpp, with the properties of checker.hpp checked as the
// run goes. No threads, no real time: a run is a pure function of its Scenario (the wall
// clock only paces the optional progress lines).
//
//   Scenario s = make_scenario("restart", 10, 42);
//   RunResult r = Simulator(s).run();
//   if (!r.passed) std::puts(r.report().c_str());   // includes the replay command
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/checker.hpp"
#include "sim/network.hpp"
#include "sim/scenario.hpp"

namespace gossip_rdzv::sim {

/// How packets cross the simulated network.
enum class CodecMode {
  full,       ///< encode to msgpack, decode at the receiver (exercises the codec)
  size_only,  ///< encode only to count bytes; the receiver gets the sender's struct
  off,        ///< pass structs, count no bytes (fastest)
};

struct SimOptions {
  CodecMode codec = CodecMode::full;
  /// core.check_invariants() after every this-many steps of a node (1: every step).
  std::uint32_t invariant_every = 1;
  /// 0: silent; 1: starts, faults, membership changes and outcomes; 2: also every packet.
  int trace = 0;
  std::FILE* trace_out = stderr;
  /// Write a progress line to `trace_out` at most this often in wall-clock time (0: never):
  /// virtual time, members joined / committed / running, events handled, queue length. Only
  /// what is printed depends on the wall clock, never the run (for runs that take hours).
  std::chrono::milliseconds progress_every{0};
};

/// Traffic of one slot over the whole run (every generation), in encoded bytes.
struct NodeTraffic {
  std::uint64_t messages_sent = 0;
  std::uint64_t messages_received = 0;
  std::uint64_t bytes_sent = 0;
  std::uint64_t bytes_received = 0;
  /// Sent and received by protocol::MessageType (index = the type's wire value).
  std::array<std::uint64_t, 16> sent_by_type{}, received_by_type{};
  std::uint64_t messages() const { return messages_sent + messages_received; }
  std::uint64_t bytes() const { return bytes_sent + bytes_received; }
  /// Join and JoinReply, sent + received (counted in messages() too).
  std::uint64_t join_messages() const;
  /// messages() without Join and JoinReply.
  std::uint64_t messages_after_join() const { return messages() - join_messages(); }
};

struct MeanMax {
  double mean = 0;
  double max = 0;
};

struct RunStats {
  Time last_start{0};  ///< when the last node of the initial set started
  std::optional<Time> first_commit;
  std::optional<Time> last_outcome;  ///< the last Committed / NotAdmitted
  Time end{0};                       ///< virtual time when the run stopped
  Time deadline{0};                  ///< settle time + termination bound
  /// last_outcome - last_start, and the same in gossip intervals.
  Time agreement_time{0};
  double gossip_periods = 0;
  std::uint64_t steps = 0;  ///< start / on_message / on_tick calls
  std::uint64_t packets_delivered = 0;
  /// Lost for want of a process: to an unknown endpoint, in flight to or from a process that
  /// crashed or stopped, waiting for a listener when its sender ended, or past the queue limit.
  std::uint64_t undeliverable = 0;
  /// Sent to an endpoint where no process listened: queued by the sender until one starts
  /// there (LinkConfig::reconnect_*), as ZeroMQ does; those that left the queue count as
  /// released.
  std::uint64_t queued_for_listener = 0, released_to_listener = 0;
  std::uint64_t dropped_by_loss = 0, dropped_by_partition = 0, duplicated = 0;
  std::uint64_t committed = 0, not_admitted = 0;
  /// MemberSuspected / MemberDead events (one per node that learns it) naming a member whose
  /// process was running at the time: wrong suspicions, and wrong burials. A partition
  /// longer than the suspicion timeout buries by design; loss alone should not.
  std::uint64_t suspected_running = 0, buried_running = 0;
  std::optional<Time> first_buried_running;
  /// Over member slots (not a dedicated seed): messages and bytes sent + received.
  MeanMax messages_per_node, bytes_per_node;
  /// The same without Join / JoinReply: with one seed every joiner's first exchange is
  /// with it, so its total grows with N whatever the protocol does after.
  MeanMax messages_per_node_after_join;
  /// The seed slot's JoinReply bytes per JoinReply, and all its bytes sent per member.
  double seed_bytes_per_join = 0;
  double seed_bytes_per_member = 0;
  std::vector<NodeTraffic> traffic;  ///< by slot
};

struct RunResult {
  Scenario scenario;
  bool passed = false;
  std::vector<Failure> failures;
  std::vector<std::string> notes;
  RunStats stats;

  bool safety_failed() const;
  /// The most serious failure: safety, invariant, harness, liveness, outsider in that order.
  std::optional<FailureKind> worst() const;
  /// The failures, notes and the replay command, one a line.
  std::string report() const;
  /// One line: scenario, outcome, agreement time, gossip periods, traffic.
  std::string summary_line() const;
  /// The `count` member slots with the most messages after the join exchange, each with its
  /// messages sent / received by type: where the busiest node's load comes from.
  std::string load_report(std::size_t count) const;
};

class Simulator {
 public:
  explicit Simulator(Scenario scenario, SimOptions options = {});
  ~Simulator();
  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;

  RunResult run();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

/// The master port the process of `slot` announces in its `generation`: drawn from the run
/// seed in 20000-60000, different for each (slot, generation) in practice, as a runtime that
/// picks a free port at each start (docs/simulation.md, "The model").
std::uint16_t master_port(std::uint64_t run_seed, std::size_t slot, std::uint64_t generation);

/// Runs one scenario; shorthand for Simulator(make_scenario(...), options).run().
RunResult run_scenario(const std::string& name, std::uint32_t nodes, std::uint64_t seed,
                       const ScenarioOptions& scenario_options = {},
                       const SimOptions& options = {});

/// Installs a SIGABRT handler that prints the replay command of the run in progress (a core
/// assertion aborts the process, so the seed would otherwise be lost). Idempotent.
void install_abort_reporter();

}  // namespace gossip_rdzv::sim
