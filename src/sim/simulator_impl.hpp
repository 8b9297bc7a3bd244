// The Simulator's state and its parts, private to src/sim/. One struct holds the run (every
// part reads the same clock, queue, slots and statistics); its member functions are defined
// by concern, one file each:
//
//   simulator.cpp   the event loop: setup, the queue, one step of one core, the run
//   processes.cpp   process lifecycle (start, crash, exit) and the scenario's scheduled faults
//   delivery.cpp    packets: send through the network, deliver, park for absent listeners
//   run_report.cpp  observers and results: progress, stuck nodes, statistics, RunResult
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "protocol/codec.hpp"
#include "protocol/intern_pool.hpp"
#include "sim/simulator.hpp"

namespace gossip_rdzv::sim {

namespace detail {

/// A virtual time in seconds with microseconds, as traces and reports print it.
std::string seconds_text(Time t);

/// NodeTraffic's index of a message type: its wire value, which must fit the arrays.
std::size_t type_index(protocol::MessageType type);

}  // namespace detail

struct Packet {
  std::uint32_t from_slot = 0;
  std::uint64_t from_life = 0;
  protocol::MessageType type{};
  std::size_t size = 0;                        ///< encoded bytes (0 with CodecMode::off)
  std::vector<std::uint8_t> bytes;             ///< CodecMode::full
  std::optional<protocol::Envelope> envelope;  ///< other modes
};

enum class EventKind : std::uint8_t { start, wakeup, deliver, crash, restart, workers_fail };

struct QueuedEvent {
  Time at{0};
  std::uint64_t seq = 0;  ///< ties broken by insertion order: deterministic
  EventKind kind = EventKind::wakeup;
  std::uint32_t slot = 0;
  std::uint64_t life = 0;  ///< the process it is for; stale when the slot moved on
  std::shared_ptr<const Packet> packet;
  /// deliver: when a queued packet leaves its sender's queue (routed earlier, at the queue's
  /// release); a partition added meanwhile (a phase cut) still stops it. -1: sent directly.
  Time sent_at{-1};
};

struct Later {
  bool operator()(const QueuedEvent& a, const QueuedEvent& b) const {
    return a.at != b.at ? a.at > b.at : a.seq > b.seq;
  }
};

/// Packets one sender process queued for an endpoint where nothing listened (a DEALER waiting
/// to connect): released when a process starts there, lost if the sender ended first.
struct ParkedFlow {
  std::uint32_t from_slot = 0;
  std::uint64_t from_life = 0;
  Time since{0};  ///< the first send that found no listener: the reconnect schedule's start
  std::vector<std::shared_ptr<const Packet>> packets;
};

struct SlotState {
  NodeSpec spec;
  std::string endpoint;
  std::uint64_t generation = 0;
  protocol::MemberKey key;  ///< {endpoint, generation} of the current process
  std::uint64_t life = 0;   ///< current process (0: none yet)
  std::unique_ptr<protocol::Core> core;
  bool has_outcome = false;
  Time scheduled_wakeup = Time::max();
  Time last_step_at{-1};
  std::uint32_t steps_at_same_time = 0;
  std::uint32_t steps_since_check = 0;
  std::vector<ParkedFlow> parked;  ///< for this endpoint while no process runs here
  bool exited = false;     ///< its process ended with an outcome: no process will run here again
  bool connected = false;  ///< a packet to or from its current process was delivered
};

struct Simulator::Impl {
  Scenario scenario;
  SimOptions options;
  Network network;
  Checker checker;
  /// One pool for every core: N cores that know N members share N announcements.
  std::shared_ptr<protocol::InternPool> pool = std::make_shared<protocol::InternPool>();
  Prng ids;
  std::vector<SlotState> slots;
  std::unordered_map<std::string, std::uint32_t> slot_of;
  std::vector<QueuedEvent> queue;
  std::uint64_t next_seq = 0;
  std::uint64_t next_life = 1;
  std::vector<std::uint8_t> life_crashed;  ///< by life id: packets from it are lost
  Time now{0};
  Time settled{0};
  Time bound{0};  ///< termination_bound(scenario), fixed for the run
  RunStats stats;
  std::size_t seed_slot = 0;
  std::uint64_t seed_join_reply_bytes = 0, seed_join_replies = 0;
  std::size_t members_started = 0, members_joined = 0, initial_members = 0;
  std::size_t active_members = 0;  ///< member processes running (not crashed, not exited)
  std::size_t queued_faults = 0;   ///< crash / restart events in the queue
  std::vector<std::uint8_t> crash_fired;
  std::vector<std::uint8_t> cut_fired;              ///< by scenario.phase_partitions
  std::vector<std::uint8_t> cut_waiting_for_joins;  ///< its phase came before the last join
  /// Crashes or cuts still waiting for the first ready bit / vote: while any does, every
  /// step looks at the stepping core's held view.
  std::size_t awaiting_ready = 0, awaiting_vote = 0;
  bool all_joined_fired = false;
  bool aborted = false;
  std::uint64_t codec_refusals = 0;
  std::vector<std::string> stuck_notes;
  /// Elastic runs: since when every live member has committed one round of exactly the
  /// live members (reset when that stops being so), when the members were told to leave,
  /// and whether the run reached its end state.
  std::optional<Time> converged_since;
  std::optional<Time> leave_started;
  bool elastic_done = false;

  Impl(Scenario s, SimOptions o);

  // ---- the loop (simulator.cpp) ------------------------------------------------------------

  /// Whether `level` is traced: per-packet callers test it before building their text.
  bool tracing(int level) const { return options.trace >= level; }
  void trace(int level, const std::string& text);
  void push(QueuedEvent event);
  QueuedEvent pop();
  const protocol::MemberKey& key_of(const SlotState& slot) const { return slot.key; }
  void setup();
  Time deadline() const { return settled + bound; }
  void after_step(std::uint32_t index);
  void schedule_wakeup(std::uint32_t index);
  void handle_event(std::uint32_t index, const protocol::Event& event);
  bool guard_busy_loop(SlotState& slot, std::uint32_t index);
  void handle(const QueuedEvent& event);
  bool finished() const;
  RunResult run();

  // ---- processes and scheduled faults (processes.cpp) --------------------------------------

  void start_process(std::uint32_t index);
  void stop_process(std::uint32_t index, bool crash);
  void count_awaited(Trigger trigger, int step);
  void fire_crash(std::size_t index, Time at, std::optional<std::uint32_t> committer = {});
  void fire_cut(std::size_t index);
  void fire_phase(Trigger trigger, std::optional<std::uint32_t> committer = {});
  void watch_phases(const SlotState& slot);
  void maybe_fire_all_joined();
  void count_wrong_suspicion(const protocol::Event& event);

  // ---- elastic rounds (processes.cpp) ------------------------------------------------------

  void fire_workers_failed(std::size_t index);
  /// Whether every running member committed the round it is in, the same view, made of
  /// exactly the running members; empty when it is so, else why not.
  std::string elastic_unconverged() const;
  /// After each event of an elastic run: tracks convergence, starts the leaving, and sets
  /// elastic_done at the end state.
  void elastic_progress();
  /// The end-of-run verdict of an elastic run that did not reach its end state.
  void elastic_verdict();

  // ---- packets (delivery.cpp) --------------------------------------------------------------

  void send(std::uint32_t from, protocol::Outgoing out);
  void deliver(const QueuedEvent& event);
  void park(std::uint32_t to, std::shared_ptr<const Packet> packet);
  void release_parked(std::uint32_t index);

  // ---- observers and the result (run_report.cpp) -------------------------------------------

  void classify_lost_decision();
  Reachability reachability() const;
  void progress(std::uint64_t handled, std::chrono::steady_clock::duration wall);
  void describe_stuck_nodes();
  RunResult result();
};

}  // namespace gossip_rdzv::sim
