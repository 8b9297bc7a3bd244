#include "sim/simulator.hpp"

#include <unistd.h>
#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstring>
#include <iterator>
#include <optional>
#include <sstream>
#include <unordered_map>
#include <variant>

#include "protocol/codec.hpp"
#include "protocol/intern_pool.hpp"

namespace gossip_rdzv::sim {

using protocol::Announcement;
using protocol::Core;
using protocol::CoreConfig;
using protocol::Envelope;
using protocol::MemberKey;

namespace {

// The replay command of the run in progress, for the SIGABRT handler. A fixed buffer: the
// handler may only call async-signal-safe functions.
char g_current_replay[512] = "";

void set_current_replay(const std::string& text) {
  const std::size_t n = std::min(text.size(), sizeof g_current_replay - 1);
  std::memcpy(g_current_replay, text.data(), n);
  g_current_replay[n] = '\0';
}

extern "C" void on_abort_signal(int signal_number) {
  static const char prefix[] = "\n*** core assertion failed (SIGABRT) during: ";
  ssize_t ignored = write(STDERR_FILENO, prefix, sizeof prefix - 1);
  ignored = write(STDERR_FILENO, g_current_replay, std::strlen(g_current_replay));
  ignored = write(STDERR_FILENO, "\n", 1);
  (void)ignored;
  std::signal(signal_number, SIG_DFL);
  std::raise(signal_number);
}

std::string seconds_text(Time t) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6f", static_cast<double>(t.count()) / 1e6);
  return buf;
}

const char* event_name(const protocol::Event& event) {
  static constexpr const char* names[] = {
      "JoinedCluster", "MemberUp",    "MemberSuspected", "MemberDead",          "Committed",
      "NotAdmitted",   "PeerRefused", "Fatal",           "UnreachableReported", "PeerUnreachable"};
  // One name per alternative: --trace 1 read past the end of this table (and crashed) once
  // the reachability events were added without names.
  static_assert(std::size(names) == std::variant_size_v<protocol::Event>);
  return names[event.index()];
}

/// NodeTraffic's index of a message type: its wire value, which must fit the arrays.
std::size_t type_index(protocol::MessageType type) {
  static_assert(static_cast<std::size_t>(protocol::MessageType::unreachable) <
                std::tuple_size_v<decltype(NodeTraffic::sent_by_type)>);
  return static_cast<std::size_t>(type);
}

/// Node ids are random per process start; they must be non-zero.
std::uint64_t nonzero(std::uint64_t value) {
  return value == 0 ? 1 : value;
}

}  // namespace

std::uint16_t master_port(std::uint64_t run_seed, std::size_t slot, std::uint64_t generation) {
  // The runtime picks a free port when its process starts, so a restarted process announces
  // another one. A hash rather than a stream draw: no other random choice of the run moves.
  const std::uint64_t h =
      mix64(run_seed ^ mix64(0x6d61737465720000ULL + slot * 0x100000001b3ULL + generation));
  return static_cast<std::uint16_t>(20000 + h % 40001);
}

void install_abort_reporter() {
  struct sigaction action {};
  action.sa_handler = on_abort_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGABRT, &action, nullptr);
}

// ---- the simulator ---------------------------------------------------------------------------

struct Packet {
  std::uint32_t from_slot = 0;
  std::uint64_t from_life = 0;
  protocol::MessageType type{};
  std::size_t size = 0;              ///< encoded bytes (0 with CodecMode::off)
  std::vector<std::uint8_t> bytes;   ///< CodecMode::full
  std::optional<Envelope> envelope;  ///< other modes
};

enum class EventKind : std::uint8_t { start, wakeup, deliver, crash, restart };

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
  MemberKey key;           ///< {endpoint, generation} of the current process
  std::uint64_t life = 0;  ///< current process (0: none yet)
  std::unique_ptr<Core> core;
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

  Impl(Scenario s, SimOptions o)
      : scenario(std::move(s)),
        options(o),
        network(scenario.link, scenario.seed),
        checker(CheckerConfig{scenario.run_id, scenario.min_nodes, scenario.max_nodes}),
        ids(scenario.seed, 3) {}

  /// Whether `level` is traced: per-packet callers test it before building their text.
  bool tracing(int level) const { return options.trace >= level; }

  void trace(int level, const std::string& text) {
    if (tracing(level)) {
      std::fprintf(options.trace_out, "[%s] %s\n", seconds_text(now).c_str(), text.c_str());
      // Flushed line by line: a core assertion aborts the process right after.
      std::fflush(options.trace_out);
    }
  }

  void push(QueuedEvent event) {
    event.seq = next_seq++;
    queue.push_back(std::move(event));
    std::push_heap(queue.begin(), queue.end(), Later{});
  }

  QueuedEvent pop() {
    std::pop_heap(queue.begin(), queue.end(), Later{});
    QueuedEvent event = std::move(queue.back());
    queue.pop_back();
    return event;
  }

  const MemberKey& key_of(const SlotState& slot) const { return slot.key; }

  void setup() {
    slots.resize(scenario.nodes.size());
    life_crashed.push_back(0);  // life 0: none
    for (std::size_t i = 0; i < slots.size(); ++i) {
      slots[i].spec = scenario.nodes[i];
      slots[i].endpoint = slot_endpoint(i);
      slot_of.emplace(slots[i].endpoint, static_cast<std::uint32_t>(i));
      if (!slots[i].spec.seed_only) ++initial_members;
      push({slots[i].spec.start, 0, EventKind::start, static_cast<std::uint32_t>(i), 0, nullptr});
      stats.last_start = std::max(stats.last_start, slots[i].spec.start);
    }
    seed_slot =
        scenario.nodes.empty() || scenario.nodes[0].seeds.empty() ? 0 : scenario.nodes[0].seeds[0];
    for (const auto& p : scenario.partitions) network.add_partition(p);
    settled = std::max(stats.last_start, network.healed_at());
    bound = termination_bound(scenario);
    crash_fired.assign(scenario.crashes.size(), 0);
    cut_fired.assign(scenario.phase_partitions.size(), 0);
    cut_waiting_for_joins.assign(scenario.phase_partitions.size(), 0);
    for (const auto& c : scenario.crashes) count_awaited(c.trigger, +1);
    for (const auto& p : scenario.phase_partitions) count_awaited(p.trigger, +1);
    for (std::size_t i = 0; i < scenario.crashes.size(); ++i) {
      const auto& c = scenario.crashes[i];
      if (c.trigger == Trigger::at_time) fire_crash(i, c.delay);
    }
    for (std::size_t i = 0; i < scenario.phase_partitions.size(); ++i)
      if (scenario.phase_partitions[i].trigger == Trigger::at_time) fire_cut(i);
    stats.traffic.assign(slots.size(), {});
    trace(1, "scenario " + scenario.kind + ": " + scenario.description);
  }

  void count_awaited(Trigger trigger, int step) {
    if (trigger == Trigger::first_ready) awaiting_ready += static_cast<std::size_t>(step);
    if (trigger == Trigger::first_vote) awaiting_vote += static_cast<std::size_t>(step);
  }

  /// `slot`: the crash's own, or the committer for CrashSpec::committer.
  void fire_crash(std::size_t index, Time at, std::optional<std::uint32_t> committer = {}) {
    if (crash_fired[index]) return;
    crash_fired[index] = 1;
    const auto& c = scenario.crashes[index];
    count_awaited(c.trigger, -1);
    ++queued_faults;
    const auto slot = c.committer && committer ? *committer : static_cast<std::uint32_t>(c.slot);
    if (c.committer && committer)
      trace(1,
            "slot " + std::to_string(slot) + " committed first: it crashes at " + seconds_text(at));
    push({at, 0, EventKind::crash, slot, index, nullptr});
  }

  /// Starts a phase partition: from now + delay for its length. The network settles at its
  /// heal, so termination is judged from then.
  void fire_cut(std::size_t index) {
    if (cut_fired[index]) return;
    cut_fired[index] = 1;
    const auto& spec = scenario.phase_partitions[index];
    count_awaited(spec.trigger, -1);
    Partition p;
    p.side = spec.side;
    p.from = now + spec.delay;
    p.until = p.from + spec.length;
    network.add_partition(p);
    settled = std::max(settled, p.until);
    trace(1, std::string("cut after ") + to_string(spec.trigger) + ": from " +
                 seconds_text(p.from) + " until " + seconds_text(p.until));
  }

  /// Fires every crash and cut waiting for `trigger` (after_commits: the commit count).
  void fire_phase(Trigger trigger, std::optional<std::uint32_t> committer = {}) {
    for (std::size_t i = 0; i < scenario.crashes.size(); ++i) {
      const auto& c = scenario.crashes[i];
      if (c.trigger != trigger) continue;
      if (trigger == Trigger::after_commits && checker.commit_events() != c.commits) continue;
      fire_crash(i, now + c.delay, committer);
    }
    for (std::size_t i = 0; i < scenario.phase_partitions.size(); ++i) {
      const auto& p = scenario.phase_partitions[i];
      if (p.trigger != trigger) continue;
      if (trigger == Trigger::after_commits && checker.commit_events() != p.commits) continue;
      // A cut is made after joining (the hole it looks for): one that comes first waits for
      // the last join. A node cut off from its seeds before it joined is told by nobody.
      if (!all_joined_fired)
        cut_waiting_for_joins[i] = 1;
      else
        fire_cut(i);
    }
  }

  /// The first ready bit and the first vote, seen on the core that set it: its own bit in
  /// the view it holds.
  void watch_phases(const SlotState& slot) {
    if ((awaiting_ready == 0 && awaiting_vote == 0) || !slot.core || slot.spec.seed_only) return;
    const protocol::Snapshot snap = slot.core->snapshot();
    if (!snap.held) return;
    const auto& members = snap.held->members;
    const auto it = std::find(members.begin(), members.end(), slot.key);  // natural order
    if (it == members.end()) return;
    const auto i = static_cast<std::size_t>(it - members.begin());
    auto bit = [i](const std::vector<std::uint8_t>& set) {
      return i / 8 < set.size() && ((set[i / 8] >> (i % 8)) & 1u) != 0;
    };
    if (awaiting_ready > 0 && bit(snap.held->ready)) fire_phase(Trigger::first_ready);
    if (awaiting_vote > 0 && bit(snap.held->voted)) fire_phase(Trigger::first_vote);
  }

  Time deadline() const { return settled + bound; }

  // ---- processes ---------------------------------------------------------------------------

  void start_process(std::uint32_t index) {
    SlotState& slot = slots[index];
    slot.generation += 1;
    slot.key = MemberKey{slot.endpoint, slot.generation};
    slot.connected = false;
    slot.life = next_life++;
    life_crashed.push_back(0);
    release_parked(index);
    CoreConfig config;
    Announcement& ann = config.self;
    ann.endpoint = slot.endpoint;
    ann.node_id = nonzero(ids.next());
    ann.generation = slot.generation;
    ann.host = slot_host(index);
    ann.hostname = "node" + std::to_string(index);
    ann.nproc = slot.spec.nproc;
    ann.rank_hint = slot.spec.rank_hint;
    ann.master_port = master_port(scenario.seed, index, slot.generation);
    ann.min_nodes = scenario.min_nodes;
    ann.max_nodes = scenario.max_nodes;
    config.run_id = scenario.run_id;
    for (std::size_t seed : slot.spec.seeds) config.seeds.push_back(slot_endpoint(seed));
    config.min_nodes = scenario.min_nodes;
    config.max_nodes = scenario.max_nodes;
    config.timing = scenario.timing;
    config.last_call = scenario.last_call;
    config.rng_seed =
        nonzero(mix64(scenario.seed ^ mix64(index * 0x100000001b3ULL + slot.generation)));
    config.seed_only = slot.spec.seed_only;
    config.round = 0;
    config.pool = pool;
    checker.on_start(ann, index, slot.spec.seed_only, now);
    slot.core = std::make_unique<Core>(std::move(config));
    slot.has_outcome = false;
    slot.scheduled_wakeup = Time::max();
    if (!slot.spec.seed_only) {
      if (slot.generation == 1) ++members_started;  // of the initial set; restarts not counted
      ++active_members;
    }
    trace(1, "start slot " + std::to_string(index) + " " + slot.endpoint + "/g" +
                 std::to_string(slot.generation) +
                 (slot.spec.seed_only ? " (dedicated seed)" : ""));
    slot.core->start(now);
    after_step(index);
  }

  /// The senders that queued packets for this endpoint connect at their next reconnect
  /// attempt and deliver the queue in order; a sender that crashed or exited took its queue
  /// with it.
  void release_parked(std::uint32_t index) {
    SlotState& slot = slots[index];
    std::vector<ParkedFlow> flows = std::move(slot.parked);
    slot.parked.clear();
    for (const ParkedFlow& flow : flows) {
      const SlotState& sender = slots[flow.from_slot];
      if (sender.life != flow.from_life || !sender.core) {  // crashed, exited or restarted
        stats.undeliverable += flow.packets.size();
        continue;
      }
      const Time connected = reconnect_time(scenario.link, flow.since, now);
      for (const auto& packet : flow.packets) {
        ++stats.released_to_listener;
        for (Time at : network.route(flow.from_slot, index, connected))
          push({at, 0, EventKind::deliver, index, slot.life, packet, connected});
      }
      if (tracing(1))
        trace(1, "slot " + std::to_string(flow.from_slot) + " connects to slot " +
                     std::to_string(index) + " at " + seconds_text(connected) + ": " +
                     std::to_string(flow.packets.size()) + " queued packets");
    }
  }

  /// Queues a packet for an endpoint where no process runs (see ParkedFlow).
  void park(std::uint32_t to, std::shared_ptr<const Packet> packet) {
    auto& flows = slots[to].parked;
    auto flow = std::find_if(flows.begin(), flows.end(),
                             [&](const ParkedFlow& f) { return f.from_life == packet->from_life; });
    if (flow == flows.end())
      flow = flows.insert(flows.end(), ParkedFlow{packet->from_slot, packet->from_life, now, {}});
    if (flow->packets.size() >= scenario.link.queue_limit) {
      ++stats.undeliverable;  // the transport's send fails at the high-water mark
      return;
    }
    ++stats.queued_for_listener;
    flow->packets.push_back(std::move(packet));
  }

  void stop_process(std::uint32_t index, bool crash) {
    SlotState& slot = slots[index];
    if (!slot.core) return;
    if (crash) {
      checker.on_crash(key_of(slot), now);
      life_crashed[slot.life] = 1;
    } else {
      checker.on_exit(key_of(slot), now);
      slot.exited = true;  // (its queue was released when it started: nothing is parked)
    }
    if (!slot.spec.seed_only) --active_members;
    slot.core.reset();
    slot.scheduled_wakeup = Time::max();
    trace(1, std::string(crash ? "crash" : "exit") + " slot " + std::to_string(index) + " " +
                 slot.endpoint + "/g" + std::to_string(slot.generation));
  }

  // ---- one step of one core ----------------------------------------------------------------

  /// Drains what the core produced, checks it, and reschedules its wakeup.
  void after_step(std::uint32_t index) {
    SlotState& slot = slots[index];
    ++stats.steps;
    while (auto out = slot.core->poll_send()) send(index, std::move(*out));
    while (auto event = slot.core->poll_event()) handle_event(index, *event);
    if (!slot.core) return;
    watch_phases(slot);
    if (++slot.steps_since_check >= options.invariant_every) {
      slot.steps_since_check = 0;
      slot.core->check_invariants();
    }
    if (slot.has_outcome && (slot.core->done() || !slot.core->commit_reported())) {
      // A committed node exits once everyone knows the outcome (or its grace ran out), a
      // node not admitted exits at once: what `gossip-rdzv join` does.
      stop_process(index, false);
      return;
    }
    schedule_wakeup(index);
  }

  void schedule_wakeup(std::uint32_t index) {
    SlotState& slot = slots[index];
    Time wakeup = slot.core->next_wakeup();
    if (wakeup == Time::max()) {
      slot.scheduled_wakeup = Time::max();
      return;
    }
    wakeup = std::max(wakeup, now);
    if (wakeup == slot.scheduled_wakeup) return;
    slot.scheduled_wakeup = wakeup;
    push({wakeup, 0, EventKind::wakeup, index, slot.life, nullptr});
  }

  void handle_event(std::uint32_t index, const protocol::Event& event) {
    SlotState& slot = slots[index];
    checker.on_event(key_of(slot), event, now);
    if (tracing(1)) {
      std::string text = "slot " + std::to_string(index) + " " + event_name(event);
      if (const auto* c = std::get_if<protocol::Committed>(&event))
        text += " " + describe(c->assignment) + " me=" + std::to_string(c->assignment.my_node_rank);
      else if (const auto* s = std::get_if<protocol::MemberSuspected>(&event))
        text += " " + s->endpoint;
      else if (const auto* d = std::get_if<protocol::MemberDead>(&event))
        text += " " + d->endpoint;
      else if (const auto* u = std::get_if<protocol::MemberUp>(&event))
        text += " " + u->member.endpoint + "/g" + std::to_string(u->member.generation);
      else if (const auto* n = std::get_if<protocol::NotAdmitted>(&event))
        text += " view_size=" + std::to_string(n->view_size);
      if (std::holds_alternative<protocol::MemberUp>(event) ||
          std::holds_alternative<protocol::MemberSuspected>(event))
        trace(2, text);
      else
        trace(1, text);
    }
    count_wrong_suspicion(event);
    if (std::holds_alternative<protocol::JoinedCluster>(event) && !slot.spec.seed_only) {
      ++members_joined;
      maybe_fire_all_joined();
    } else if (std::holds_alternative<protocol::Committed>(event)) {
      slot.has_outcome = true;
      ++stats.committed;
      fire_phase(Trigger::after_commits, index);
    } else if (std::holds_alternative<protocol::NotAdmitted>(event) ||
               std::holds_alternative<protocol::Fatal>(event)) {
      if (std::holds_alternative<protocol::NotAdmitted>(event)) ++stats.not_admitted;
      slot.has_outcome = true;
    }
  }

  void count_wrong_suspicion(const protocol::Event& event) {
    const auto* suspected = std::get_if<protocol::MemberSuspected>(&event);
    const auto* dead = std::get_if<protocol::MemberDead>(&event);
    if (suspected == nullptr && dead == nullptr) return;
    const auto it = slot_of.find(suspected != nullptr ? suspected->endpoint : dead->endpoint);
    if (it == slot_of.end() || !slots[it->second].core) return;
    if (suspected != nullptr) {
      ++stats.suspected_running;
      return;
    }
    ++stats.buried_running;
    if (!stats.first_buried_running) stats.first_buried_running = now;
  }

  void maybe_fire_all_joined() {
    if (all_joined_fired || members_started < initial_members || !checker.all_members_joined())
      return;
    all_joined_fired = true;
    fire_phase(Trigger::after_all_joined);
    for (std::size_t i = 0; i < cut_waiting_for_joins.size(); ++i)
      if (cut_waiting_for_joins[i]) fire_cut(i);
  }

  // ---- the network -------------------------------------------------------------------------

  void send(std::uint32_t from, protocol::Outgoing out) {
    auto packet = std::make_shared<Packet>();
    packet->from_slot = from;
    packet->from_life = slots[from].life;
    packet->type = protocol::message_type(out.msg.body);
    if (options.codec == CodecMode::off) {
      packet->envelope = std::move(out.msg);
    } else {
      std::vector<std::uint8_t> bytes = protocol::encode(out.msg);
      packet->size = bytes.size();
      if (options.codec == CodecMode::full)
        packet->bytes = std::move(bytes);
      else
        packet->envelope = std::move(out.msg);
    }
    auto& traffic = stats.traffic[from];
    ++traffic.messages_sent;
    ++traffic.sent_by_type[type_index(packet->type)];
    traffic.bytes_sent += packet->size;
    if (from == seed_slot && packet->type == protocol::MessageType::join_reply) {
      seed_join_reply_bytes += packet->size;
      ++seed_join_replies;
    }
    auto it = slot_of.find(out.to);
    if (it == slot_of.end() || !slots[it->second].core) {
      // Nobody will ever listen there (unknown, or exited): a queue that would never drain
      // is counted as lost at once.
      const bool lost = it == slot_of.end() || slots[it->second].exited;
      if (tracing(2))
        trace(2, "slot " + std::to_string(from) + " -> " + out.to + " " +
                     std::string(protocol::to_string(packet->type)) +
                     (lost ? " undeliverable" : " queued: nobody listens"));
      if (lost)
        ++stats.undeliverable;
      else
        park(it->second, std::move(packet));
      return;
    }
    const std::uint32_t to = it->second;
    const auto deliveries = network.route(from, to, now);
    if (tracing(2))
      trace(2, "slot " + std::to_string(from) + " -> " + std::to_string(to) + " " +
                   std::string(protocol::to_string(packet->type)) + " " +
                   std::to_string(packet->size) + " B" + (deliveries.empty() ? " dropped" : ""));
    std::shared_ptr<const Packet> shared = std::move(packet);
    for (Time at : deliveries) push({at, 0, EventKind::deliver, to, slots[to].life, shared});
  }

  void deliver(const QueuedEvent& event) {
    SlotState& slot = slots[event.slot];
    const Packet& packet = *event.packet;
    // A crash loses the packets in flight from it (its queues die with it) and to it.
    if (!slot.core || slot.life != event.life || life_crashed[packet.from_life]) {
      ++stats.undeliverable;
      return;
    }
    if (event.sent_at >= Time(0) &&
        network.drop_if_separated(packet.from_slot, event.slot, event.sent_at))
      return;
    if (tracing(2))
      trace(2, "deliver " + std::to_string(packet.from_slot) + " -> " + std::to_string(event.slot) +
                   " " + std::string(protocol::to_string(packet.type)) + " " +
                   std::to_string(packet.size) + " B");
    slot.connected = true;
    if (slots[packet.from_slot].life == packet.from_life) slots[packet.from_slot].connected = true;
    auto& traffic = stats.traffic[event.slot];
    ++traffic.messages_received;
    ++traffic.received_by_type[type_index(packet.type)];
    traffic.bytes_received += packet.size;
    ++stats.packets_delivered;
    if (packet.envelope) {
      slot.core->on_message(now, *packet.envelope);
    } else {
      protocol::DecodeResult decoded = protocol::decode(packet.bytes);
      if (!decoded.ok()) {
        // One report per kind of refusal is enough; the count says how widespread it is.
        if (++codec_refusals > 3) return;
        checker.fail(FailureKind::harness, now,
                     "codec refused bytes the core of slot " + std::to_string(packet.from_slot) +
                         " sent (" + std::string(protocol::to_string(packet.type)) +
                         "): " + protocol::describe(decoded.error()));
        return;
      }
      slot.core->on_message(now, decoded.envelope());
    }
    after_step(event.slot);
  }

  // ---- the loop ----------------------------------------------------------------------------

  bool guard_busy_loop(SlotState& slot, std::uint32_t index) {
    if (slot.last_step_at == now) {
      if (++slot.steps_at_same_time > 10000) {
        checker.fail(FailureKind::invariant, now,
                     "slot " + std::to_string(index) +
                         " busy-loops: next_wakeup() <= now after 10000 ticks at one instant");
        aborted = true;
        return false;
      }
    } else {
      slot.last_step_at = now;
      slot.steps_at_same_time = 0;
    }
    return true;
  }

  void handle(const QueuedEvent& event) {
    SlotState& slot = slots[event.slot];
    switch (event.kind) {
      case EventKind::start:
        start_process(event.slot);
        break;
      case EventKind::wakeup:
        if (!slot.core || slot.life != event.life || slot.scheduled_wakeup != event.at) return;
        slot.scheduled_wakeup = Time::max();
        if (!guard_busy_loop(slot, event.slot)) return;
        slot.core->on_tick(now);
        after_step(event.slot);
        break;
      case EventKind::deliver:
        deliver(event);
        break;
      case EventKind::crash: {
        --queued_faults;
        const auto& c = scenario.crashes[event.life];
        // A process that already exited (done) cannot crash, and restarting it would be a
        // new process arriving after the round, not a restart mid-round.
        if (!slot.core) break;
        stop_process(event.slot, true);
        settled = std::max(settled, now);
        if (c.restart_after) {
          ++queued_faults;
          push({now + *c.restart_after, 0, EventKind::restart, event.slot, 0, nullptr});
        }
        break;
      }
      case EventKind::restart:
        --queued_faults;
        if (!slot.core) {
          settled = std::max(settled, now);
          start_process(event.slot);
        }
        break;
    }
  }

  bool finished() const {
    // Every member process has stopped (exited with an outcome, or crashed) and no fault is
    // still to come; a dedicated seed does not count, it never exits by itself.
    return members_started == initial_members && active_members == 0 && queued_faults == 0;
  }

  RunResult run() {
    set_current_replay(scenario.replay_command());
    setup();
    const auto grace = std::chrono::duration_cast<Time>(scenario.timing.commit_grace);
    const auto started = std::chrono::steady_clock::now();
    auto next_progress = started + options.progress_every;
    std::uint64_t handled = 0;
    while (!queue.empty() && !aborted) {
      if (queue.front().at > deadline() + grace) break;
      QueuedEvent event = pop();
      now = event.at;
      handle(event);
      if (finished()) break;
      // The clock is read once per 4096 events, and only with --progress.
      if (++handled % 4096 == 0 && options.progress_every.count() > 0) {
        const auto wall = std::chrono::steady_clock::now();
        if (wall >= next_progress) {
          next_progress = wall + options.progress_every;
          progress(handled, wall - started);
        }
      }
    }
    stats.end = now;
    stats.deadline = deadline();
    if (codec_refusals > 3)
      checker.fail(FailureKind::harness, now,
                   "codec refused " + std::to_string(codec_refusals) + " packets in all");
    // After a busy loop the run stopped early: its missing outcomes say nothing more.
    const auto beyond = checker.beyond_reach(reachability());
    const bool enough_alive = checker.running_members() - beyond.size() >= scenario.min_nodes;
    checker.finish(now, deadline(), enough_alive, !aborted, beyond);
    if (!aborted) classify_lost_decision();
    if (!checker.passed()) describe_stuck_nodes();
    return result();
  }

  /// A round whose outcome only crashed processes knew, and whose survivors cannot finish
  /// it: every process that committed view V crashed, and the votes for V that the running
  /// processes hold are no strict majority of V. V may have been committed, so it can never
  /// be released, and it can never gather a majority again: blocked, whatever the protocol
  /// (e.g. the first of two nodes commits and is killed before its vote leaves). Its
  /// liveness failures are reported as such; anything else stays what it was.
  void classify_lost_decision() {
    if (checker.passed()) return;
    for (const auto& f : checker.failures())
      if (f.kind != FailureKind::liveness && f.kind != FailureKind::outsider) return;
    for (const CommittedView& view : checker.views()) {
      const bool all_crashed =
          std::all_of(view.committers.begin(), view.committers.end(),
                      [&](const MemberKey& key) { return checker.lives().at(key).crashed; });
      if (!all_crashed) continue;
      std::vector<bool> voted(view.members.size(), false);
      for (const SlotState& slot : slots) {
        if (!slot.core || slot.spec.seed_only) continue;
        const protocol::Snapshot snap = slot.core->snapshot();
        if (!snap.held) continue;
        std::vector<MemberKey> held = snap.held->members;
        std::sort(held.begin(), held.end());
        if (held != view.members) continue;
        for (std::size_t i = 0; i < snap.held->members.size(); ++i) {
          const auto& set = snap.held->voted;
          if (i / 8 < set.size() && ((set[i / 8] >> (i % 8)) & 1u) != 0) {
            const auto at =
                std::lower_bound(view.members.begin(), view.members.end(), snap.held->members[i]);
            voted[static_cast<std::size_t>(at - view.members.begin())] = true;
          }
        }
      }
      const auto votes = static_cast<std::size_t>(std::count(voted.begin(), voted.end(), true));
      if (2 * votes > view.members.size()) continue;  // they could commit it: a real hang
      std::string committers;
      for (const auto& key : view.committers)
        committers +=
            (committers.empty() ? "" : ", ") + key.endpoint + "/g" + std::to_string(key.generation);
      checker.reclassify_liveness(FailureKind::lost_decision,
                                  "only " + committers + " committed " + describe(view.assignment) +
                                      ", and crashed; the survivors see " + std::to_string(votes) +
                                      " of " + std::to_string(view.members.size()) +
                                      " votes, no majority: blocked for good");
      return;
    }
  }

  Reachability reachability() const {
    Reachability reach;
    reach.longest_reachable = [this](std::size_t a, std::size_t b, Time from, Time until) {
      return network.longest_reachable(a, b, from, until);
    };
    reach.min_window = std::chrono::duration_cast<Time>(scenario.timing.join_backoff_max);
    for (const SlotState& slot : slots) {
      reach.seeds.push_back(slot.spec.seeds);
      // Its last process crashed and none is running or scheduled to restart.
      reach.gone_for_good.push_back(!slot.core && !slot.exited && slot.generation > 0);
      reach.never_connected.push_back(slot.core != nullptr && !slot.connected);
    }
    return reach;
  }

  void progress(std::uint64_t handled, std::chrono::steady_clock::duration wall) {
    std::fprintf(options.trace_out,
                 "[%s] progress: %zu of %zu members started, %zu joined, %zu committed, %zu "
                 "running; %llu events handled, %zu queued; wall %.0f s\n",
                 seconds_text(now).c_str(), members_started, initial_members, members_joined,
                 static_cast<std::size_t>(stats.committed), active_members,
                 static_cast<unsigned long long>(handled), queue.size(),
                 std::chrono::duration<double>(wall).count());
    std::fflush(options.trace_out);
  }

  /// What each running node without an outcome believes, for the failure report.
  void describe_stuck_nodes() {
    std::size_t described = 0;
    for (std::size_t i = 0; i < slots.size() && described < 6; ++i) {
      const SlotState& slot = slots[i];
      if (!slot.core || slot.has_outcome || slot.spec.seed_only) continue;
      ++described;
      const protocol::Snapshot snap = slot.core->snapshot();
      std::size_t alive = 0, suspect = 0, dead = 0;
      for (const auto& m : snap.members) {
        if (m.status == protocol::MemberStatus::alive) ++alive;
        if (m.status == protocol::MemberStatus::suspect) ++suspect;
        if (m.status == protocol::MemberStatus::dead) ++dead;
      }
      std::ostringstream out;
      out << "slot " << i << " at the end: joined " << snap.joined << ", members alive " << alive
          << " suspect " << suspect << " dead " << dead;
      if (snap.held) {
        auto bits = [](const std::vector<std::uint8_t>& set) {
          std::size_t count = 0;
          for (std::uint8_t byte : set) count += static_cast<std::size_t>(__builtin_popcount(byte));
          return count;
        };
        out << "; holds view attempt " << snap.held->attempt << " of " << snap.held->members.size()
            << " members, proposed " << bits(snap.held->proposed) << " ready "
            << bits(snap.held->ready) << " voted " << bits(snap.held->voted) << " committed "
            << bits(snap.held->committed) << " fenced " << bits(snap.held->fenced) << " {";
        for (std::size_t k = 0; k < snap.held->members.size() && k < 12; ++k)
          out << (k ? " " : "") << snap.held->members[k].endpoint << "/g"
              << snap.held->members[k].generation;
        out << (snap.held->members.size() > 12 ? " ...}" : "}");
      } else {
        out << "; holds no view";
      }
      stuck_notes.push_back(out.str());
    }
  }

  RunResult result() {
    RunResult r;
    r.scenario = scenario;
    r.failures = checker.failures();
    r.notes = checker.notes();
    r.notes.insert(r.notes.end(), stuck_notes.begin(), stuck_notes.end());
    if (stats.buried_running > 0)
      r.notes.push_back("members still running were declared dead " +
                        std::to_string(stats.buried_running) + " times (first at " +
                        seconds_text(*stats.first_buried_running) + " s), suspected " +
                        std::to_string(stats.suspected_running) + " times");
    r.passed = r.failures.empty();
    stats.first_commit = checker.first_commit();
    stats.last_outcome = checker.last_outcome();
    if (stats.last_outcome) {
      stats.agreement_time = *stats.last_outcome - std::min(stats.last_start, *stats.last_outcome);
      stats.gossip_periods =
          static_cast<double>(stats.agreement_time.count()) /
          static_cast<double>(
              std::chrono::duration_cast<Time>(scenario.timing.gossip_interval).count());
    }
    stats.dropped_by_loss = network.dropped_by_loss();
    stats.dropped_by_partition = network.dropped_by_partition();
    stats.duplicated = network.duplicated();
    double messages = 0, bytes = 0, members = 0, after_join = 0;
    for (std::size_t i = 0; i < slots.size(); ++i) {
      if (slots[i].spec.seed_only) continue;
      const auto& t = stats.traffic[i];
      members += 1;
      messages += static_cast<double>(t.messages());
      bytes += static_cast<double>(t.bytes());
      stats.messages_per_node.max =
          std::max(stats.messages_per_node.max, static_cast<double>(t.messages()));
      stats.bytes_per_node.max = std::max(stats.bytes_per_node.max, static_cast<double>(t.bytes()));
      const auto beyond = static_cast<double>(t.messages_after_join());
      after_join += beyond;
      stats.messages_per_node_after_join.max =
          std::max(stats.messages_per_node_after_join.max, beyond);
    }
    if (members > 0) {
      stats.messages_per_node.mean = messages / members;
      stats.messages_per_node_after_join.mean = after_join / members;
      stats.bytes_per_node.mean = bytes / members;
      stats.seed_bytes_per_member =
          static_cast<double>(stats.traffic[seed_slot].bytes_sent) / members;
    }
    if (seed_join_replies > 0)
      stats.seed_bytes_per_join =
          static_cast<double>(seed_join_reply_bytes) / static_cast<double>(seed_join_replies);
    r.stats = stats;
    return r;
  }
};

Simulator::Simulator(Scenario scenario, SimOptions options)
    : impl_(std::make_unique<Impl>(std::move(scenario), options)) {}
Simulator::~Simulator() = default;

RunResult Simulator::run() {
  return impl_->run();
}

RunResult run_scenario(const std::string& name, std::uint32_t nodes, std::uint64_t seed,
                       const ScenarioOptions& scenario_options, const SimOptions& options) {
  return Simulator(make_scenario(name, nodes, seed, scenario_options), options).run();
}

// ---- reports ---------------------------------------------------------------------------------

bool RunResult::safety_failed() const {
  return std::any_of(failures.begin(), failures.end(),
                     [](const Failure& f) { return f.kind == FailureKind::safety; });
}

std::optional<FailureKind> RunResult::worst() const {
  static constexpr FailureKind kOrder[] = {FailureKind::safety,   FailureKind::invariant,
                                           FailureKind::harness,  FailureKind::liveness,
                                           FailureKind::outsider, FailureKind::lost_decision};
  for (FailureKind kind : kOrder)
    for (const auto& f : failures)
      if (f.kind == kind) return kind;
  return std::nullopt;
}

std::string RunResult::report() const {
  std::ostringstream out;
  out << (passed ? "PASS " : "FAIL ") << "seed " << scenario.seed << " (" << scenario.kind << ": "
      << scenario.description << ")\n";
  for (const auto& f : failures)
    out << "  " << to_string(f.kind) << " at " << seconds_text(f.at) << " s: " << f.what << "\n";
  for (const auto& n : notes) out << "  note: " << n << "\n";
  if (!passed) out << "  replay: " << scenario.replay_command() << "\n";
  return out.str();
}

std::string RunResult::summary_line() const {
  char buf[512];
  std::snprintf(
      buf, sizeof buf,
      "%s seed %llu %-18s nodes %zu: agreement %s s (%.1f gossip periods), committed %llu, "
      "not admitted %llu, msgs/node mean %.0f max %.0f (after join mean %.0f max %.0f), "
      "bytes/node mean %.0f max %.0f, seed B/join %.0f",
      passed ? "ok  " : "FAIL", static_cast<unsigned long long>(scenario.seed),
      scenario.kind.c_str(), scenario.nodes.size(),
      stats.last_outcome ? seconds_text(stats.agreement_time).c_str() : "-", stats.gossip_periods,
      static_cast<unsigned long long>(stats.committed),
      static_cast<unsigned long long>(stats.not_admitted), stats.messages_per_node.mean,
      stats.messages_per_node.max, stats.messages_per_node_after_join.mean,
      stats.messages_per_node_after_join.max, stats.bytes_per_node.mean, stats.bytes_per_node.max,
      stats.seed_bytes_per_join);
  return buf;
}

std::uint64_t NodeTraffic::join_messages() const {
  std::uint64_t total = 0;
  for (auto type : {protocol::MessageType::join, protocol::MessageType::join_reply})
    total += sent_by_type[type_index(type)] + received_by_type[type_index(type)];
  return total;
}

std::string RunResult::load_report(std::size_t count) const {
  std::vector<bool> is_seed(scenario.nodes.size(), false);
  for (const auto& spec : scenario.nodes)
    for (std::size_t seed : spec.seeds)
      if (seed < is_seed.size()) is_seed[seed] = true;
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < scenario.nodes.size() && i < stats.traffic.size(); ++i)
    if (!scenario.nodes[i].seed_only) order.push_back(i);
  const auto after_join = [&](std::size_t slot) {
    return stats.traffic[slot].messages_after_join();
  };
  count = std::min(count, order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(count), order.end(),
                    [&](std::size_t a, std::size_t b) { return after_join(a) > after_join(b); });
  std::ostringstream out;
  out << "busiest after the join exchange (mean "
      << std::llround(stats.messages_per_node_after_join.mean)
      << "), messages sent/received by type:\n";
  for (std::size_t k = 0; k < count; ++k) {
    const std::size_t slot = order[k];
    const auto& t = stats.traffic[slot];
    out << "  slot " << slot << (is_seed[slot] ? " (seed)" : "") << ": " << after_join(slot);
    for (std::size_t type = 0; type < t.sent_by_type.size(); ++type) {
      if (t.sent_by_type[type] == 0 && t.received_by_type[type] == 0) continue;
      out << ", " << protocol::to_string(static_cast<protocol::MessageType>(type)) << " "
          << t.sent_by_type[type] << "/" << t.received_by_type[type];
    }
    out << "\n";
  }
  return out.str();
}

}  // namespace gossip_rdzv::sim
