// Process lifecycle of the simulated slots (start, crash, exit) and the scenario's scheduled
// faults: crashes and phase partitions fired at a time or at a phase of the round.
#include <algorithm>
#include <string>

#include "sim/simulator_impl.hpp"

namespace gossip_rdzv::sim {

using detail::seconds_text;
using protocol::Announcement;
using protocol::Core;
using protocol::CoreConfig;
using protocol::MemberKey;

namespace {

/// Node ids are random per process start; they must be non-zero.
std::uint64_t nonzero(std::uint64_t value) {
  return value == 0 ? 1 : value;
}

}  // namespace

void Simulator::Impl::start_process(std::uint32_t index) {
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
  config.elastic = scenario.elastic;
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
               std::to_string(slot.generation) + (slot.spec.seed_only ? " (dedicated seed)" : ""));
  slot.core->start(now);
  after_step(index);
}

void Simulator::Impl::stop_process(std::uint32_t index, bool crash) {
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

void Simulator::Impl::count_awaited(Trigger trigger, int step) {
  if (trigger == Trigger::first_ready) awaiting_ready += static_cast<std::size_t>(step);
  if (trigger == Trigger::first_vote) awaiting_vote += static_cast<std::size_t>(step);
}

/// `slot`: the crash's own, or the committer for CrashSpec::committer.
void Simulator::Impl::fire_crash(std::size_t index, Time at,
                                 std::optional<std::uint32_t> committer) {
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
void Simulator::Impl::fire_cut(std::size_t index) {
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
  trace(1, std::string("cut after ") + to_string(spec.trigger) + ": from " + seconds_text(p.from) +
               " until " + seconds_text(p.until));
}

/// Fires every crash and cut waiting for `trigger` (after_commits: the commit count).
void Simulator::Impl::fire_phase(Trigger trigger, std::optional<std::uint32_t> committer) {
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
void Simulator::Impl::watch_phases(const SlotState& slot) {
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

void Simulator::Impl::maybe_fire_all_joined() {
  if (all_joined_fired || members_started < initial_members || !checker.all_members_joined())
    return;
  all_joined_fired = true;
  fire_phase(Trigger::after_all_joined);
  for (std::size_t i = 0; i < cut_waiting_for_joins.size(); ++i)
    if (cut_waiting_for_joins[i]) fire_cut(i);
}

void Simulator::Impl::count_wrong_suspicion(const protocol::Event& event) {
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

// ---- elastic rounds ----------------------------------------------------------------------------

void Simulator::Impl::fire_workers_failed(std::size_t index) {
  std::vector<std::uint32_t> committed;
  for (std::uint32_t i = 0; i < slots.size(); ++i)
    if (slots[i].core && !slots[i].spec.seed_only && slots[i].core->commit_reported())
      committed.push_back(i);
  if (committed.empty()) {
    trace(1, "workers fail: no member has committed, nothing to fail");
    return;
  }
  const std::uint32_t slot = committed[scenario.worker_failures[index].pick % committed.size()];
  trace(1, "workers of slot " + std::to_string(slot) + " fail in round " +
               std::to_string(slots[slot].core->round()));
  settled = std::max(settled, now);
  if (!slots[slot].core->request_next_round(now))
    checker.fail(FailureKind::invariant, now,
                 "slot " + std::to_string(slot) +
                     " refused request_next_round after it reported its commit");
  after_step(slot);
}

std::string Simulator::Impl::elastic_unconverged() const {
  std::vector<MemberKey> running;
  std::optional<std::size_t> view;
  std::uint32_t first = 0;
  for (std::uint32_t i = 0; i < slots.size(); ++i) {
    const SlotState& slot = slots[i];
    if (!slot.core || slot.spec.seed_only) continue;
    running.push_back(slot.key);
    const auto it = checker.lives().find(slot.key);
    if (it == checker.lives().end() || !it->second.view_index)
      return "slot " + std::to_string(i) + " has committed no round";
    const std::size_t mine = *it->second.view_index;
    if (checker.views()[mine].assignment.round != slot.core->round())
      return "slot " + std::to_string(i) + " is in round " + std::to_string(slot.core->round()) +
             " and has not committed it";
    if (view && *view != mine)
      return "slot " + std::to_string(i) + " committed round " +
             std::to_string(checker.views()[mine].assignment.round) + ", slot " +
             std::to_string(first) + " round " +
             std::to_string(checker.views()[*view].assignment.round);
    if (!view) first = i;
    view = mine;
  }
  if (running.size() < scenario.min_nodes) return {};  // nothing can commit: nothing owed
  std::sort(running.begin(), running.end());
  if (checker.views()[*view].members != running)
    return "the round every live member committed, " + describe(checker.views()[*view].assignment) +
           ", is not the set of live members";
  return {};
}

void Simulator::Impl::elastic_progress() {
  if (leave_started) {
    for (const SlotState& slot : slots)
      if (slot.core && !slot.spec.seed_only && !slot.core->job_finished()) return;
    elastic_done = true;
    return;
  }
  if (now < settled || queued_faults > 0 || !elastic_unconverged().empty()) {
    converged_since.reset();
    return;
  }
  if (!converged_since) converged_since = now;
  // Held for a few gossip periods: a round that keeps moving on without a cause shows.
  const Time hold = 10 * std::chrono::duration_cast<Time>(scenario.timing.gossip_interval);
  if (now - *converged_since < hold) return;
  if (!scenario.leave_at_end) {
    elastic_done = true;
    return;
  }
  leave_started = now;
  settled = now;
  trace(1, "every live member's workers finished: each leaves the job");
  for (std::uint32_t i = 0; i < slots.size(); ++i)
    if (slots[i].core && !slots[i].spec.seed_only) {
      slots[i].core->leave(now);
      after_step(i);
    }
}

void Simulator::Impl::elastic_verdict() {
  if (elastic_done) return;
  const std::string why = elastic_unconverged();
  std::string what = leave_started ? "job end: not every member that left saw the job finished"
                                   : "no round made of every live member committed on all of them";
  what += " by the deadline " + seconds_text(deadline());
  if (!why.empty()) what += " (" + why + ")";
  if (leave_started) {
    std::string unfinished;
    for (std::uint32_t i = 0; i < slots.size(); ++i) {
      if (!slots[i].core || slots[i].spec.seed_only || slots[i].core->job_finished()) continue;
      unfinished += (unfinished.empty() ? "" : "; ") + std::to_string(i) + ", which holds";
      for (const auto& member : slots[i].core->snapshot().members) {
        if (member.status == protocol::MemberStatus::dead) continue;
        unfinished += " " + member.ann.endpoint + "/g" + std::to_string(member.ann.generation) +
                      (member.status == protocol::MemberStatus::suspect ? " suspect" : "") +
                      " inc " + std::to_string(member.incarnation);
      }
    }
    what += " (slots that did not: " + unfinished + ")";
  }
  checker.fail(FailureKind::liveness, deadline(), what);
}

}  // namespace gossip_rdzv::sim
