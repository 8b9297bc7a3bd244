// What the simulator observes and reports: progress lines, the state of stuck nodes, lost
// decisions, the run's statistics, and RunResult's reports.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <sstream>

#include "sim/simulator_impl.hpp"

namespace gossip_rdzv::sim {

using protocol::MemberKey;

namespace detail {

std::string seconds_text(Time t) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6f", static_cast<double>(t.count()) / 1e6);
  return buf;
}

std::size_t type_index(protocol::MessageType type) {
  static_assert(static_cast<std::size_t>(protocol::MessageType::unreachable) <
                std::tuple_size_v<decltype(NodeTraffic::sent_by_type)>);
  return static_cast<std::size_t>(type);
}

}  // namespace detail

using detail::seconds_text;
using detail::type_index;

/// A round whose outcome only crashed processes knew, and whose survivors cannot finish
/// it: every process that committed view V crashed, and the votes for V that the running
/// processes hold are no strict majority of V. V may have been committed, so it can never
/// be released, and it can never gather a majority again: blocked, whatever the protocol
/// (e.g. the first of two nodes commits and is killed before its vote leaves). Its
/// liveness failures are reported as such; anything else stays what it was.
void Simulator::Impl::classify_lost_decision() {
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

Reachability Simulator::Impl::reachability() const {
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

void Simulator::Impl::progress(std::uint64_t handled, std::chrono::steady_clock::duration wall) {
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
void Simulator::Impl::describe_stuck_nodes() {
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

RunResult Simulator::Impl::result() {
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
