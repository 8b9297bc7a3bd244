// The Simulator's event loop: setup, the event queue, one step of one core and the run; the
// other parts of Simulator::Impl are listed in simulator_impl.hpp.
#include "sim/simulator.hpp"

#include <unistd.h>
#include <algorithm>
#include <csignal>
#include <cstring>
#include <iterator>
#include <variant>

#include "sim/simulator_impl.hpp"

namespace gossip_rdzv::sim {

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

const char* reason_name(protocol::RoundReason reason) {
  switch (reason) {
    case protocol::RoundReason::workers_failed:
      return "workers failed";
    case protocol::RoundReason::member_dead:
      return "member dead";
    case protocol::RoundReason::member_restarted:
      return "member restarted";
    case protocol::RoundReason::member_arrived:
      return "member arrived";
    case protocol::RoundReason::peer_moved_on:
      return "peer moved on";
  }
  return "?";
}

const char* event_name(const protocol::Event& event) {
  static constexpr const char* names[] = {"JoinedCluster",   "MemberUp",     "MemberSuspected",
                                          "MemberDead",      "Committed",    "NotAdmitted",
                                          "PeerRefused",     "Fatal",        "UnreachableReported",
                                          "PeerUnreachable", "RoundStarted", "JobEnded"};
  // One name per alternative: --trace 1 read past the end of this table (and crashed) once
  // the reachability events were added without names.
  static_assert(std::size(names) == std::variant_size_v<protocol::Event>);
  return names[event.index()];
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

using detail::seconds_text;

// ---- the simulator ---------------------------------------------------------------------------

Simulator::Impl::Impl(Scenario s, SimOptions o)
    : scenario(std::move(s)),
      options(o),
      network(scenario.link, scenario.seed),
      checker(CheckerConfig{scenario.run_id, scenario.min_nodes, scenario.max_nodes}),
      ids(scenario.seed, 3) {}

void Simulator::Impl::trace(int level, const std::string& text) {
  if (tracing(level)) {
    std::fprintf(options.trace_out, "[%s] %s\n", seconds_text(now).c_str(), text.c_str());
    // Flushed line by line: a core assertion aborts the process right after.
    std::fflush(options.trace_out);
  }
}

void Simulator::Impl::push(QueuedEvent event) {
  event.seq = next_seq++;
  queue.push_back(std::move(event));
  std::push_heap(queue.begin(), queue.end(), Later{});
}

QueuedEvent Simulator::Impl::pop() {
  std::pop_heap(queue.begin(), queue.end(), Later{});
  QueuedEvent event = std::move(queue.back());
  queue.pop_back();
  return event;
}

void Simulator::Impl::setup() {
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
  for (std::size_t i = 0; i < scenario.worker_failures.size(); ++i) {
    ++queued_faults;
    push({scenario.worker_failures[i].at, 0, EventKind::workers_fail, 0, i, nullptr});
  }
  stats.traffic.assign(slots.size(), {});
  trace(1, "scenario " + scenario.kind + ": " + scenario.description);
}

/// Drains what the core produced, checks it, and reschedules its wakeup.
void Simulator::Impl::after_step(std::uint32_t index) {
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
  if (!scenario.elastic && slot.has_outcome &&
      (slot.core->done() || !slot.core->commit_reported())) {
    // A committed node exits once everyone knows the outcome (or its grace ran out), a
    // node not admitted exits at once: what `gossip-rdzv join` does.
    stop_process(index, false);
    return;
  }
  schedule_wakeup(index);
}

void Simulator::Impl::schedule_wakeup(std::uint32_t index) {
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

void Simulator::Impl::handle_event(std::uint32_t index, const protocol::Event& event) {
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
    else if (const auto* r = std::get_if<protocol::RoundStarted>(&event))
      text += " round " + std::to_string(r->round) + " (" + reason_name(r->reason) + " " + r->peer +
              ")";
    else if (const auto* n = std::get_if<protocol::NotAdmitted>(&event))
      text += " view_size=" + std::to_string(n->view_size);
    if (std::holds_alternative<protocol::MemberUp>(event) ||
        std::holds_alternative<protocol::MemberSuspected>(event))
      trace(2, text);
    else
      trace(1, text);
  }
  count_wrong_suspicion(event);
  if (std::holds_alternative<protocol::RoundStarted>(event) && slot.core && slot.core->left())
    checker.fail(FailureKind::invariant, now,
                 "slot " + std::to_string(index) + " started a round after it left the job");
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

bool Simulator::Impl::guard_busy_loop(SlotState& slot, std::uint32_t index) {
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

void Simulator::Impl::handle(const QueuedEvent& event) {
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
    case EventKind::workers_fail:
      --queued_faults;
      fire_workers_failed(event.life);
      break;
    case EventKind::restart:
      --queued_faults;
      if (!slot.core) {
        settled = std::max(settled, now);
        start_process(event.slot);
      }
      break;
  }
}

bool Simulator::Impl::finished() const {
  // Every member process has stopped (exited with an outcome, or crashed) and no fault is
  // still to come; a dedicated seed does not count, it never exits by itself.
  return members_started == initial_members && active_members == 0 && queued_faults == 0;
}

RunResult Simulator::Impl::run() {
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
    if (scenario.elastic) {
      elastic_progress();
      if (elastic_done) break;
    }
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
  if (scenario.elastic && !aborted) elastic_verdict();
  if (!aborted) classify_lost_decision();
  if (!checker.passed()) describe_stuck_nodes();
  return result();
}

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

}  // namespace gossip_rdzv::sim
