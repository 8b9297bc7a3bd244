#include "runtime/failure_report.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <iterator>
#include <set>

#include <spdlog/fmt/fmt.h>

#include "runtime/auth_report.hpp"

namespace gossip_rdzv::runtime {
namespace {

std::string member_name(const protocol::Announcement& ann) {
  return printable(ann.hostname) + " " + printable(ann.endpoint);
}

/// A refusal that settles the question "will this seed ever let us in": it refused us, or it
/// speaks a version we cannot read.
bool is_decisive(const protocol::PeerRefused& refusal) {
  return !refusal.by_us || refusal.reason == protocol::RefuseReason::version_mismatch;
}

struct JoinReport {
  std::vector<std::string> present;
  std::vector<std::string> silent;
  /// Of the silent, the suspects: members until declared dead, counted by the round.
  std::uint32_t suspects = 0;
};

JoinReport classify_members(const protocol::Snapshot& snapshot, protocol::Time now) {
  JoinReport report;
  for (const auto& member : snapshot.members) {
    if (member.status == protocol::MemberStatus::alive) {
      report.present.push_back(member_name(member.ann));
      continue;
    }
    if (member.status == protocol::MemberStatus::suspect) ++report.suspects;
    std::string line = member_name(member.ann) + " (" + status_text(member.status) + ", ";
    if (member.last_heard > protocol::Time::zero()) {
      line += "last heard " +
              seconds_text(std::chrono::duration_cast<milliseconds>(now - member.last_heard)) +
              " ago";
    } else {
      line += "never heard directly";
    }
    if (const auto* peer = unanswered_at(snapshot, member.ann.endpoint)) {
      line += fmt::format(", {} messages there unanswered", peer->unanswered);
    }
    if (!member.last_heard_via.empty()) {
      line += ", last news via " + printable(member.last_heard_via);
    }
    report.silent.push_back(line + ")");
  }
  return report;
}

std::string join_list(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

/// "A", "A and B", "A, B and C".
std::string and_list(const std::vector<std::string>& items) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += i + 1 == items.size() ? " and " : ", ";
    out += items[i];
  }
  return out;
}

std::string sentence_case(std::string text) {
  if (!text.empty()) text[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(text[0])));
  return text;
}

/// The members whose endpoint this node gets no answer from, or "".
std::string unreachable_peers_text(const protocol::Snapshot& snapshot, protocol::Time now) {
  std::vector<std::string> items;
  for (const auto& peer : snapshot.unreachable) {
    if (!reachable_only_one_way(peer)) continue;  // or it stopped: "Seen and then silent"
    std::string name = printable(peer.endpoint);
    for (const auto& member : snapshot.members) {
      if (member.ann.endpoint == peer.endpoint) name = member_name(member.ann);
    }
    items.push_back(fmt::format(
        "{} ({} messages unanswered over {} while it kept sending{})", name, peer.unanswered,
        seconds_text(std::chrono::duration_cast<milliseconds>(now - peer.since)),
        peer.told ? "; it was told" : ""));
  }
  if (items.empty()) return "";
  std::string text = "This node gets no answer at the advertised address of " + join_list(items);
  text +=
      ": their address does not work from here (wrong --advertise, or a firewall drops "
      "inbound traffic to their gossip port)";
  // A node that was itself starved of CPU (hundreds of agents on one machine) reads answers
  // after its deadlines and sees the same pattern with nothing wrong in any address. One late
  // tick (a pause) raises local health by one; 3 takes lateness that lasted.
  constexpr std::uint32_t kStarved = 3;
  if (snapshot.peak_local_health >= kStarved) {
    text += fmt::format(
        ", unless this node's own slowness explains it: it ran late during the wait (its "
        "timers fired after their time, and it slowed its own probing up to {} times), so "
        "their answers may have come too late rather than not at all; check this machine's "
        "load first",
        snapshot.peak_local_health + 1);
  }
  return text;
}

}  // namespace

/// It runs (it keeps sending) but does not answer at its advertised endpoint.
bool reachable_only_one_way(const protocol::UnreachablePeer& peer) {
  return peer.heard_meanwhile && peer.unanswered >= protocol::UnreachablePeer::kReportAfter;
}

const protocol::UnreachablePeer* unanswered_at(const protocol::Snapshot& snapshot,
                                               const std::string& endpoint) {
  for (const auto& peer : snapshot.unreachable) {
    if (peer.endpoint == endpoint) return &peer;
  }
  return nullptr;
}

std::string seconds_text(milliseconds duration) {
  if (duration < std::chrono::seconds(1)) return fmt::format("{} ms", duration.count());
  const double seconds = static_cast<double>(duration.count()) / 1000.0;
  return seconds < 10 ? fmt::format("{:.1f} s", seconds) : fmt::format("{:.0f} s", seconds);
}

std::string sizes_text(std::uint32_t min_nodes, std::uint32_t max_nodes) {
  return min_nodes == max_nodes ? std::to_string(min_nodes)
                                : std::to_string(min_nodes) + ":" + std::to_string(max_nodes);
}

const char* status_text(protocol::MemberStatus status) {
  switch (status) {
    case protocol::MemberStatus::alive:
      return "alive";
    case protocol::MemberStatus::suspect:
      return "suspect";
    case protocol::MemberStatus::dead:
      return "dead";
  }
  return "unknown";
}

/// `subject` is who was refused: "this node", or "the query" for query_members.
Error refusal_error(const protocol::PeerRefused& wire_refusal, const std::string& run_id,
                    const std::string& subject) {
  const std::string peer = printable(wire_refusal.peer);
  const std::string detail = printable(wire_refusal.detail);
  if (wire_refusal.reason == protocol::RefuseReason::key_mismatch) {
    return Error(ErrorCode::auth_failed, key_refusal_text(wire_refusal));
  }
  if (wire_refusal.reason == protocol::RefuseReason::run_id_mismatch) {
    return Error(ErrorCode::run_id_mismatch,
                 peer + " refused " + subject + ": " + detail +
                     ". Use the same --run-id on every node of the job (" + subject + " has '" +
                     run_id + "')");
  }
  const std::string what = wire_refusal.by_us ? peer + " speaks another protocol version: "
                                              : peer + " refused " + subject + ": ";
  return Error(ErrorCode::version_mismatch,
               what + detail +
                   fmt::format(". Run the same gossip-rdzv version on every node (this one "
                               "speaks protocol version {})",
                               protocol::kProtocolVersion));
}

std::vector<protocol::PeerRefused> decisive_refusals(const RuntimeState& state) {
  std::vector<protocol::PeerRefused> out;
  std::copy_if(state.refusals.begin(), state.refusals.end(), std::back_inserter(out), is_decisive);
  return out;
}

/// Before joining we only talk to seeds, so once as many seeds have refused as we have,
/// waiting longer cannot help.
bool refused_by_every_seed(const RuntimeState& state, std::size_t seed_count) {
  if (state.joined || seed_count == 0) return false;
  // Peers, not refusals: one seed may refuse for two reasons (a key and then another).
  std::set<std::string> peers;
  for (const auto& refusal : decisive_refusals(state)) peers.insert(refusal.peer);
  return peers.size() >= seed_count;
}

bool refused_by_seeds_of_another_job(const RuntimeState& state, std::size_t seed_count) {
  if (!refused_by_every_seed(state, seed_count)) return false;
  const auto refusals = decisive_refusals(state);
  return std::all_of(refusals.begin(), refusals.end(), [](const protocol::PeerRefused& r) {
    return r.reason == protocol::RefuseReason::run_id_mismatch ||
           r.reason == protocol::RefuseReason::key_mismatch;
  });
}

/// What peers told this node about its own endpoint, or "" when nobody did.
std::string told_unreachable_text(const RuntimeState& state, const std::string& self) {
  if (state.unreachable_reports.empty()) return "";
  std::vector<std::string> reporters;
  std::vector<std::string> endpoints;
  for (const auto& report : state.unreachable_reports) {
    reporters.push_back(printable(report.reporter));
    endpoints.push_back(report.reporter);
  }
  return fmt::format("peers cannot reach this node at {}: {} got no answer there; {}", self,
                     and_list(reporters), reachability_advice(self, endpoints));
}

std::string refused_runs_text(const RuntimeState& state, const std::string& run_id) {
  std::vector<std::string> refused;
  for (const auto& refusal : state.refusals) {
    if (!refusal.by_us || refusal.reason != protocol::RefuseReason::run_id_mismatch) continue;
    refused.push_back(printable(refusal.peer) + " (" + printable(refusal.detail) + ")");
  }
  if (refused.empty()) return "";
  return fmt::format(
      "this node refused {} of another run: {}; if they belong to this job, start them with "
      "--run-id {}",
      refused.size() == 1 ? "a node" : std::to_string(refused.size()) + " nodes", and_list(refused),
      run_id);
}

std::string refused_keys_text(const RuntimeState& state) {
  std::vector<std::string> refused;
  for (const auto& refusal : state.refusals) {
    if (!refusal.by_us || refusal.reason != protocol::RefuseReason::key_mismatch) continue;
    refused.push_back(printable(refusal.peer));
  }
  if (refused.empty()) return "";
  return fmt::format(
      "this node refused messages from {} without this job's key: {}; if they belong to this "
      "job, start them with the same --key-file",
      refused.size() == 1 ? "a peer" : std::to_string(refused.size()) + " peers",
      and_list(refused));
}

Error join_timeout_error(const Config& config, const protocol::Snapshot& snapshot,
                         protocol::Time now, const std::string& told) {
  const JoinReport report = classify_members(snapshot, now);
  const auto present = static_cast<std::uint32_t>(report.present.size());
  // A suspect is a member until declared dead: the round counts it, and it was started.
  const auto counted = present + report.suspects;
  std::string text = fmt::format(
      "timed out after {}: {} of {} nodes joined ({})", seconds_text(config.join_timeout), present,
      sizes_text(config.min_nodes, config.max_nodes), join_list(report.present));
  if (counted < config.min_nodes) {
    text += fmt::format("; {} still missing: start them with the same --seed and --run-id {}",
                        config.min_nodes - counted, config.run_id);
  } else if (const auto& seeds = snapshot.seeds; seeds.all_ready && 2 * seeds.won <= seeds.size) {
    text += fmt::format(
        "; every member is ready, but the view needs votes or witnesses from a majority of the "
        "seed list and has {} of {} (none from {}): a seed that is down, cut off or restarted "
        "before the commit stops the round, since nobody can tell it from a seed that commits "
        "another group behind a partition. Start the missing seeds, or give the job three or "
        "more seeds so that it survives the loss of one (docs/protocol.md, \"Quorum base\")",
        seeds.won, seeds.size, join_list(seeds.missing));
  } else {
    text +=
        "; enough nodes are present but they did not agree on a view in time (see the log "
        "with GOSSIP_RDZV_LOG=debug)";
  }
  if (!report.silent.empty()) text += ". Seen and then silent: " + join_list(report.silent);
  if (const auto peers = unreachable_peers_text(snapshot, now); !peers.empty()) {
    text += ". " + peers;
  }
  if (!told.empty()) text += ". " + sentence_case(told);
  return Error(ErrorCode::join_timeout, text);
}

Error not_admitted_error(const Config& config, const protocol::NotAdmitted& event) {
  if (event.previous_process_in_view) {
    return Error(ErrorCode::not_admitted,
                 fmt::format("round {} was agreed with this node's previous process (it "
                             "restarted after the others agreed); restart the other nodes too "
                             "so a new round forms",
                             event.round));
  }
  if (event.view_size < config.max_nodes) {
    // Below MAX the view did not close for lack of room: this node came after the last call,
    // or was cut off from the seeds' majority while the others agreed.
    return Error(ErrorCode::not_admitted,
                 fmt::format("this node was not admitted: the round closed with {} nodes "
                             "(--nnodes {}) without it, because it joined after the last call "
                             "ended or was cut off from the others while they agreed. Start "
                             "every node within --last-call of the first MIN, check the network "
                             "between this node and the seeds, or restart the job",
                             event.view_size, sizes_text(config.min_nodes, config.max_nodes)));
  }
  return Error(ErrorCode::not_admitted,
               fmt::format("this node was not admitted: the round closed with {} nodes "
                           "(--nnodes {}) without it, because more nodes were started with run "
                           "id '{}' than the job takes. Start at most {} nodes, raise the MAX "
                           "of --nnodes, or give this node another --run-id",
                           event.view_size, sizes_text(config.min_nodes, config.max_nodes),
                           config.run_id, config.max_nodes));
}

std::vector<MemberProgress> progress_rows(const protocol::Snapshot& snapshot, protocol::Time now) {
  std::vector<MemberProgress> rows;
  for (const auto& member : snapshot.members) {
    MemberProgress row{member.ann.endpoint, member.ann.hostname, status_text(member.status), {}};
    if (member.last_heard > protocol::Time::zero()) {
      row.last_heard = std::chrono::duration_cast<milliseconds>(now - member.last_heard);
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string seed_list_text(const std::vector<SeedAddress>& seeds) {
  if (seeds.empty()) return "none (this node is the seed)";
  std::vector<std::string> endpoints;
  for (const auto& seed : seeds) endpoints.push_back(seed.endpoint);
  return join_list(endpoints);
}

}  // namespace gossip_rdzv::runtime
