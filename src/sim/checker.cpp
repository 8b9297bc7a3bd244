#include "sim/checker.hpp"

#include <algorithm>
#include <cstdio>
#include <set>
#include <sstream>
#include <variant>

#include "protocol/rank_assignment.hpp"

namespace gossip_rdzv::sim {

using protocol::Announcement;
using protocol::MemberKey;

namespace {

std::string at_text(Time t) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6f s", static_cast<double>(t.count()) / 1e6);
  return buf;
}

std::string key_text(const MemberKey& key) {
  return key.endpoint + "/g" + std::to_string(key.generation);
}

template <typename T>
std::string differ(const std::string& field, const T& a, const T& b) {
  std::ostringstream out;
  out << field << ": " << a << " vs " << b;
  return out.str();
}

std::string entry_difference(std::size_t i, const NodeEntry& a, const NodeEntry& b) {
  // The field name is built only for a difference: this runs for every node of every commit.
  auto p = [i](const char* field) { return "nodes[" + std::to_string(i) + "]." + field; };
  if (a.endpoint != b.endpoint) return differ(p("endpoint"), a.endpoint, b.endpoint);
  // A member is a process, not an endpoint: a view with a node's restarted process is
  // another outcome (its master port, when it is node rank 0, is another port).
  if (a.generation != b.generation) return differ(p("generation"), a.generation, b.generation);
  if (a.node_id != b.node_id) return differ(p("node_id"), a.node_id, b.node_id);
  if (a.node_rank != b.node_rank) return differ(p("node_rank"), a.node_rank, b.node_rank);
  if (a.rank_offset != b.rank_offset) return differ(p("rank_offset"), a.rank_offset, b.rank_offset);
  if (a.nproc != b.nproc) return differ(p("nproc"), a.nproc, b.nproc);
  if (a.host != b.host) return differ(p("host"), a.host, b.host);
  if (a.hostname != b.hostname) return differ(p("hostname"), a.hostname, b.hostname);
  return {};
}

// assignment_difference() must compare every field of an assignment but my_node_rank: a new
// field in NodeEntry or Assignment changes these sizes and so stops the build until it is
// compared there.
static_assert(sizeof(NodeEntry) == 3 * sizeof(std::uint32_t) + 4 + 3 * sizeof(std::string) +
                                       2 * sizeof(std::uint64_t),
              "NodeEntry changed: update entry_difference()");
static_assert(sizeof(Assignment) ==
                  2 * sizeof(std::string) + sizeof(std::vector<NodeEntry>) + 4 * 4 + 8,
              "Assignment changed: update assignment_difference()");

}  // namespace

const char* to_string(FailureKind kind) {
  switch (kind) {
    case FailureKind::safety:
      return "SAFETY";
    case FailureKind::liveness:
      return "LIVENESS";
    case FailureKind::outsider:
      return "LIVENESS-OUTSIDER";
    case FailureKind::invariant:
      return "INVARIANT";
    case FailureKind::harness:
      return "HARNESS";
    case FailureKind::lost_decision:
      return "LIVENESS-LOST-DECISION";
  }
  return "?";
}

std::string assignment_difference(const Assignment& a, const Assignment& b) {
  if (a.run_id != b.run_id) return differ("run_id", a.run_id, b.run_id);
  if (a.round != b.round) return differ("round", a.round, b.round);
  if (a.world_size != b.world_size) return differ("world_size", a.world_size, b.world_size);
  if (a.master_addr != b.master_addr) return differ("master_addr", a.master_addr, b.master_addr);
  if (a.master_port != b.master_port) return differ("master_port", a.master_port, b.master_port);
  if (a.nodes.size() != b.nodes.size()) return differ("nnodes", a.nodes.size(), b.nodes.size());
  for (std::size_t i = 0; i < a.nodes.size(); ++i) {
    std::string d = entry_difference(i, a.nodes[i], b.nodes[i]);
    if (!d.empty()) return d;
  }
  return {};
}

std::string describe(const Assignment& assignment) {
  std::ostringstream out;
  out << "round " << assignment.round << " world " << assignment.world_size << " master "
      << assignment.master_addr << ":" << assignment.master_port << " nodes["
      << assignment.nodes.size() << "] {";
  const std::size_t shown = std::min<std::size_t>(assignment.nodes.size(), 12);
  for (std::size_t i = 0; i < shown; ++i) {
    const auto& n = assignment.nodes[i];
    out << (i ? ", " : "") << n.node_rank << ":" << n.endpoint << "/g" << n.generation << "+"
        << n.rank_offset << "x" << n.nproc;
  }
  if (shown < assignment.nodes.size()) out << ", ...";
  out << "}";
  return out.str();
}

Checker::Checker(CheckerConfig config) : config_(std::move(config)) {}

void Checker::fail(FailureKind kind, Time at, std::string what) {
  failures_.push_back({kind, at, std::move(what)});
}

std::size_t Checker::reclassify_liveness(FailureKind kind, const std::string& why) {
  std::size_t count = 0;
  for (auto& f : failures_) {
    if (f.kind != FailureKind::liveness && f.kind != FailureKind::outsider) continue;
    f.kind = kind;
    f.what += " (" + why + ")";
    ++count;
  }
  return count;
}

bool Checker::has_safety_failure() const {
  return std::any_of(failures_.begin(), failures_.end(),
                     [](const Failure& f) { return f.kind == FailureKind::safety; });
}

void Checker::on_start(const Announcement& ann, std::size_t slot, bool seed_only, Time now) {
  const MemberKey key{ann.endpoint, ann.generation};
  if (lives_.count(key)) {
    fail(FailureKind::harness, now, "started " + key_text(key) + " twice");
    return;
  }
  LifeRecord life;
  life.slot = slot;
  life.ann = ann;
  life.seed_only = seed_only;
  life.started = now;
  if (!seed_only) ++running_not_joined_;
  lives_.emplace(key, std::move(life));
}

void Checker::stopped(LifeRecord& life, Time now) {
  if (life.running && !life.joined && !life.seed_only) --running_not_joined_;
  life.running = false;
  life.stopped = now;
}

void Checker::on_crash(const MemberKey& key, Time now) {
  auto it = lives_.find(key);
  if (it == lives_.end()) return;
  stopped(it->second, now);
  it->second.crashed = true;
}

void Checker::on_exit(const MemberKey& key, Time now) {
  auto it = lives_.find(key);
  if (it == lives_.end()) return;
  stopped(it->second, now);
}

std::size_t Checker::running_members() const {
  std::size_t count = 0;
  for (const auto& [key, life] : lives_)
    if (!life.seed_only && !life.crashed) ++count;
  return count;
}

bool Checker::all_members_joined() const {
  return running_not_joined_ == 0;
}

void Checker::on_event(const MemberKey& key, const protocol::Event& event, Time now) {
  // A step drains all events of one core in a row (N^2 MemberUp in all): the life of the
  // previous event is tried first. Map iterators stay valid as lives are added.
  auto it = last_event_life_.valid && last_event_life_.it->first == key ? last_event_life_.it
                                                                        : lives_.find(key);
  if (it == lives_.end()) {
    fail(FailureKind::harness, now, "event from unknown process " + key_text(key));
    return;
  }
  last_event_life_.it = it;
  last_event_life_.valid = true;
  LifeRecord& life = it->second;
  if (std::holds_alternative<protocol::JoinedCluster>(event)) {
    if (life.running && !life.joined && !life.seed_only) --running_not_joined_;
    life.joined = true;
  } else if (const auto* committed = std::get_if<protocol::Committed>(&event)) {
    on_committed(life, committed->assignment, now);
  } else if (const auto* not_admitted = std::get_if<protocol::NotAdmitted>(&event)) {
    on_not_admitted(life, not_admitted->round, now);
  } else if (const auto* started = std::get_if<protocol::RoundStarted>(&event)) {
    on_round_started(life, *started, now);
  } else if (const auto* fatal = std::get_if<protocol::Fatal>(&event)) {
    // No scenario creates a reason for Fatal (hints are distinct and in range).
    if (life.outcome == LifeRecord::Outcome::none) {
      life.outcome = LifeRecord::Outcome::fatal;
      life.outcome_at = now;
    }
    fail(FailureKind::invariant, now,
         key_text(key) + " reported Fatal(" + std::string(to_string(fatal->code)) +
             "): " + fatal->message);
  }
}

bool Checker::in_view(const CommittedView& view, const MemberKey& key) {
  return std::binary_search(view.members.begin(), view.members.end(), key);
}

std::optional<std::size_t> Checker::find_view(const Assignment& assignment) const {
  for (std::size_t i = 0; i < views_.size(); ++i)
    if (views_[i].assignment.round == assignment.round &&
        assignment_difference(views_[i].assignment, assignment).empty())
      return i;
  return std::nullopt;
}

bool Checker::verified_before(const CommittedView& view, const Assignment& assignment) {
  return std::any_of(view.verified.begin(), view.verified.end(), [&](const Assignment& v) {
    return assignment_difference(v, assignment).empty();
  });
}

void Checker::on_committed(LifeRecord& life, const Assignment& assignment, Time now) {
  const MemberKey key{life.ann.endpoint, life.ann.generation};
  const std::string who = key_text(key);
  ++commit_events_;
  if (!first_commit_) first_commit_ = now;
  if (life.seed_only)
    fail(FailureKind::safety, now, "dedicated seed " + who + " committed " + describe(assignment));
  if (life.not_admitted_round == assignment.round)
    fail(FailureKind::safety, now,
         who + " committed round " + std::to_string(assignment.round) +
             " after it was told NotAdmitted in that round");
  const bool names_itself = assignment.my_node_rank < assignment.nodes.size() &&
                            assignment.nodes[assignment.my_node_rank].endpoint == key.endpoint &&
                            assignment.nodes[assignment.my_node_rank].generation == key.generation;
  if (!names_itself)
    fail(FailureKind::safety, now,
         who + " committed with my_node_rank " + std::to_string(assignment.my_node_rank) +
             " not naming itself: " + describe(assignment));

  // check_assignment() depends only on the assignment (my_node_rank aside, once the committer
  // is in it) and on what its nodes announced, which never changes: an assignment exactly
  // equal to one that passed it before passes again, so it is checked once, not N times.
  // Views of one round differ under assignment_difference(), so an assignment exactly equal
  // to a verified one of a view matches that view and no other: one comparison, not two.
  std::optional<std::size_t> match;
  bool cached = false;
  for (std::size_t i = 0; names_itself && i < views_.size() && !match; ++i)
    if (views_[i].assignment.round == assignment.round && verified_before(views_[i], assignment)) {
      match = i;
      cached = true;
    }
  if (!match) match = find_view(assignment);
  bool clean = cached;
  if (!cached) {
    const std::size_t failures_before = failures_.size();
    check_assignment(life, assignment, now);
    clean = names_itself && failures_.size() == failures_before;
  }

  // One commit per round and life; rounds only go up, and a life commits the round it is in.
  for (const std::size_t earlier : life.committed_views) {
    if (views_[earlier].assignment.round != assignment.round) continue;
    const std::string d = assignment_difference(views_[earlier].assignment, assignment);
    if (!d.empty())
      fail(FailureKind::safety, now, who + " committed twice, differently (" + d + ")");
    else
      fail(FailureKind::invariant, now,
           who + " emitted Committed twice in round " + std::to_string(assignment.round));
    return;
  }
  if (life.view_index && views_[*life.view_index].assignment.round > assignment.round)
    fail(FailureKind::invariant, now,
         who + " committed round " + std::to_string(assignment.round) + " after round " +
             std::to_string(views_[*life.view_index].assignment.round));
  if (assignment.round != life.round)
    fail(FailureKind::invariant, now,
         who + " committed round " + std::to_string(assignment.round) + " while in round " +
             std::to_string(life.round));

  if (!match) {
    Assignment shared = assignment;
    shared.my_node_rank = 0;
    // At most one assignment per (run id, round), compared in full, whoever committed it: a
    // process that crashed since counts (its workers may have started), and two groups that
    // share no member are two outcomes of one job as much as two overlapping views are.
    for (const auto& other : views_) {
      if (other.assignment.round != shared.round || other.assignment.run_id != shared.run_id)
        continue;
      fail(FailureKind::safety, now,
           "AGREEMENT: " + who + " committed " + describe(shared) + " but " +
               key_text(other.committers.front()) + " committed " + describe(other.assignment) +
               " (first difference: " + assignment_difference(other.assignment, shared) + ")");
    }
    const std::uint32_t shared_round = shared.round;
    CommittedView view;
    view.first_at = view.last_at = now;
    for (const auto& n : shared.nodes) view.members.push_back(MemberKey{n.endpoint, n.generation});
    std::sort(view.members.begin(), view.members.end());
    view.assignment = std::move(shared);
    views_.push_back(std::move(view));
    match = views_.size() - 1;
    for (const auto& [other_key, other] : lives_)
      if (other.not_admitted_round == shared_round && in_view(views_[*match], other_key))
        fail(
            FailureKind::safety, now,
            key_text(other_key) + " was told NotAdmitted but is in the view " + who + " committed");
  }
  CommittedView& view = views_[*match];
  if (clean && !cached) {
    view.verified.push_back(assignment);
    view.verified.back().my_node_rank = 0;
  }
  view.committers.push_back(key);
  view.last_at = now;
  if (life.outcome != LifeRecord::Outcome::committed) {
    life.outcome = LifeRecord::Outcome::committed;
    life.outcome_at = now;
  }
  life.view_index = match;
  life.committed_views.push_back(*match);
  last_outcome_ = now;
}

void Checker::on_round_started(LifeRecord& life, const protocol::RoundStarted& started, Time now) {
  const std::string who = key_text(MemberKey{life.ann.endpoint, life.ann.generation});
  if (started.round <= life.round)
    fail(FailureKind::invariant, now,
         who + " started round " + std::to_string(started.round) + " while in round " +
             std::to_string(life.round));
  life.round = std::max(life.round, started.round);
}

// The seniors a view of round `a.round` may name (docs/protocol.md, "Rank assignment"): the
// members of round a.round - 1's outcome that are in `a`, in their node-rank order there.
// A node that reported that outcome holds no view naming other seniors, so with one such
// node in `a` the seniors are exactly those; a view of nodes that all missed the outcome
// names none, or those if a node that knew proposed it. Round 0: none.
std::vector<std::vector<std::string>> Checker::allowed_seniors(const Assignment& a) const {
  const CommittedView* previous = nullptr;
  for (const auto& view : views_)
    if (a.round > 0 && view.assignment.round == a.round - 1 && view.assignment.run_id == a.run_id) {
      previous = &view;
      break;
    }
  if (previous == nullptr) return {{}};
  std::set<MemberKey> here;
  for (const auto& n : a.nodes) here.insert(MemberKey{n.endpoint, n.generation});
  std::vector<std::string> seniors;
  for (const auto& n : previous->assignment.nodes)
    if (here.count(MemberKey{n.endpoint, n.generation})) seniors.push_back(n.endpoint);
  const bool knew = std::any_of(previous->committers.begin(), previous->committers.end(),
                                [&](const MemberKey& key) { return here.count(key) != 0; });
  if (knew || seniors.empty()) return {seniors};
  return {seniors, {}};
}

void Checker::on_not_admitted(LifeRecord& life, std::uint32_t round, Time now) {
  const MemberKey key{life.ann.endpoint, life.ann.generation};
  for (const std::size_t committed : life.committed_views)
    if (views_[committed].assignment.round == round) {
      fail(FailureKind::safety, now,
           key_text(key) + " told NotAdmitted in round " + std::to_string(round) +
               " after it committed that round");
      return;
    }
  life.not_admitted_round = round;
  for (const auto& view : views_)
    if (view.assignment.round == round && in_view(view, key))
      fail(FailureKind::safety, now,
           key_text(key) + " told NotAdmitted but is in the committed view " +
               describe(view.assignment));
  if (life.outcome == LifeRecord::Outcome::none) {
    life.outcome = LifeRecord::Outcome::not_admitted;
    life.outcome_at = now;
    last_outcome_ = now;
  }
}

void Checker::check_assignment(const LifeRecord& life, const Assignment& a, Time now) {
  const std::string who = life.ann.endpoint + "/g" + std::to_string(life.ann.generation);
  auto bad = [&](const std::string& what) {
    fail(FailureKind::safety, now,
         who + " committed a bad assignment: " + what + " in " + describe(a));
  };
  if (a.run_id != config_.run_id) bad("run id '" + a.run_id + "'");
  if (a.nodes.size() < config_.min_nodes || a.nodes.size() > config_.max_nodes)
    bad("nnodes " + std::to_string(a.nodes.size()) + " outside --nnodes " +
        std::to_string(config_.min_nodes) + ":" + std::to_string(config_.max_nodes));
  if (a.nodes.empty()) return;

  std::uint64_t offset = 0;
  std::set<std::string> endpoints;
  std::vector<Announcement> anns;
  for (std::size_t i = 0; i < a.nodes.size(); ++i) {
    const NodeEntry& n = a.nodes[i];
    const std::string p = "nodes[" + std::to_string(i) + "] ";
    if (n.node_rank != i) bad(p + "node_rank " + std::to_string(n.node_rank));
    if (n.rank_offset != offset) bad(p + "rank_offset " + std::to_string(n.rank_offset));
    offset += n.nproc;
    if (!endpoints.insert(n.endpoint).second) bad(p + "endpoint " + n.endpoint + " twice");
    auto it = lives_.find(MemberKey{n.endpoint, n.generation});
    if (it == lives_.end()) {
      bad(p + n.endpoint + "/g" + std::to_string(n.generation) + " was never started");
      continue;
    }
    const Announcement& ann = it->second.ann;
    anns.push_back(ann);
    if (it->second.seed_only) bad(p + "is the dedicated seed " + n.endpoint);
    if (n.node_id != ann.node_id || n.host != ann.host || n.hostname != ann.hostname ||
        n.nproc != ann.nproc)
      bad(p + "does not match what " + n.endpoint + " announced");
    if (ann.rank_hint >= 0 && static_cast<std::size_t>(ann.rank_hint) < a.nodes.size() &&
        n.node_rank != static_cast<std::uint32_t>(ann.rank_hint))
      bad(p + "hint " + std::to_string(ann.rank_hint) + " not honoured");
  }
  if (a.world_size != offset) bad("world_size " + std::to_string(a.world_size));
  if (a.master_addr != a.nodes[0].host) bad("master_addr " + a.master_addr);
  if (anns.size() != a.nodes.size()) return;
  if (a.master_port != anns[0].master_port) bad("master_port " + std::to_string(a.master_port));

  // Ranks must be assign_ranks() of the view's announcements with one of the seniors the
  // view may name: that is stability across rounds, checked on the whole assignment.
  std::string difference;
  for (const auto& seniors : allowed_seniors(a)) {
    auto expected = protocol::assign_ranks(anns, life.ann.endpoint, a.run_id, a.round, seniors);
    if (const auto* error = std::get_if<protocol::AssignmentError>(&expected)) {
      bad("assign_ranks refuses this view: " + error->message);
      return;
    }
    Assignment e = std::get<Assignment>(expected);
    e.my_node_rank = 0;
    Assignment got = a;
    got.my_node_rank = 0;
    const std::string d = assignment_difference(e, got);
    if (d.empty()) return;
    std::string named;
    for (const auto& endpoint : seniors) named += (named.empty() ? "" : " ") + endpoint;
    difference += (difference.empty() ? "" : "; or ") + d +
                  " (seniors: " + (named.empty() ? "none" : named) + ")";
  }
  bad("RANK ORDER: differs from assign_ranks(view) with the previous round's survivors "
      "first: " +
      difference);
}

std::optional<Time> Checker::last_committer_stop() const {
  std::optional<Time> last;
  for (const auto& view : views_) {
    for (const auto& committer : view.committers) {
      const Time stopped = lives_.at(committer).stopped;
      if (!last || stopped > *last) last = stopped;
    }
  }
  return last;
}

std::map<MemberKey, std::string> Checker::beyond_reach(const Reachability& reach) const {
  std::map<MemberKey, std::string> beyond;
  std::vector<const LifeRecord*> committers;
  for (const auto& view : views_) {
    for (const auto& key : view.committers) committers.push_back(&lives_.at(key));
  }
  const Time last_exit = last_committer_stop().value_or(Time{0});
  for (const auto& [key, life] : lives_) {
    if (life.seed_only || life.crashed || life.outcome != LifeRecord::Outcome::none) continue;
    if (!committers.empty()) {
      bool reachable = false;
      bool started_after_all = true;
      for (const LifeRecord* c : committers) {
        if (c->stopped == Time::max()) {
          reachable = true;  // it is still there to answer
          break;
        }
        const Time from = std::max(c->outcome_at, life.started);
        if (from >= c->stopped) continue;
        started_after_all = false;
        const Time window = reach.longest_reachable
                                ? reach.longest_reachable(life.slot, c->slot, from, c->stopped)
                                : c->stopped - from;
        if (window >= reach.min_window) {
          reachable = true;
          break;
        }
      }
      if (!reachable) {
        beyond[key] = started_after_all
                          ? "started at " + at_text(life.started) +
                                ", after every node that committed had exited (the last at " +
                                at_text(last_exit) + ")"
                          : "reachable from no node that committed, between its commit and its "
                            "exit (the last at " +
                                at_text(last_exit) + "), for " + at_text(reach.min_window) +
                                " without a partition";
        continue;
      }
    }
    if (life.slot < reach.never_connected.size() && reach.never_connected[life.slot]) {
      beyond[key] = "the network lost every packet it sent and every packet sent to it";
      continue;
    }
    if (!life.joined && life.slot < reach.seeds.size() && !reach.seeds[life.slot].empty()) {
      const auto& seeds = reach.seeds[life.slot];
      const bool all_gone = std::all_of(seeds.begin(), seeds.end(), [&](std::size_t s) {
        return s < reach.gone_for_good.size() && reach.gone_for_good[s];
      });
      if (all_gone) {
        std::string list;
        for (std::size_t s : seeds)
          list += (list.empty() ? "slot " : ", slot ") + std::to_string(s);
        beyond[key] = "never joined, and every seed it lists (" + list +
                      ") crashed and never came back: nobody else knows it";
      }
    }
  }
  return beyond;
}

void Checker::finish(Time /*now*/, Time deadline, bool liveness_required, bool run_complete,
                     const std::map<MemberKey, std::string>& beyond) {
  // Several committed views of one round were each reported as an AGREEMENT failure when
  // they happened, disjoint or not.
  if (!run_complete) return;
  for (const auto& [key, why] : beyond) {
    notes_.push_back("slot " + std::to_string(lives_.at(key).slot) + " (" + key_text(key) +
                     ") had no outcome and nobody who knew one could reach it: " + why +
                     "; it stops at its join timeout");
  }
  // Nobody of a committed view is stranded: its running members all commit it (even when
  // fewer than MIN survive, since the view was decided).
  for (const auto& view : views_) {
    for (const auto& n : view.assignment.nodes) {
      auto it = lives_.find(MemberKey{n.endpoint, n.generation});
      if (it == lives_.end() || it->second.crashed || beyond.count(it->first)) continue;
      if (it->second.outcome == LifeRecord::Outcome::none)
        fail(FailureKind::liveness, deadline,
             "stranded: " + key_text(it->first) + " is in the committed view " +
                 describe(view.assignment) + " but never committed");
    }
  }
  // When every process that committed had stopped, a node outside the view had nobody left
  // to learn the outcome from: say so, it is a different fix from a stuck round.
  const std::optional<Time> last_stop = last_committer_stop();
  const std::string nobody_left = last_stop && *last_stop != Time::max()
                                      ? "; every node that committed had exited by " +
                                            at_text(*last_stop) + ", nobody was left to tell it"
                                      : "";
  if (liveness_required) {
    for (const auto& [key, life] : lives_) {
      if (life.seed_only || life.crashed || beyond.count(key)) continue;
      if (life.outcome == LifeRecord::Outcome::none) {
        bool in_some_view = false;
        for (const auto& view : views_) in_some_view = in_some_view || in_view(view, key);
        fail(nobody_left.empty() || in_some_view ? FailureKind::liveness : FailureKind::outsider,
             deadline,
             "no outcome: slot " + std::to_string(life.slot) + " (" + key_text(key) + ", started " +
                 at_text(life.started) + (life.joined ? ", joined" : ", never joined") +
                 ") neither committed nor was told NotAdmitted by the deadline " +
                 at_text(deadline) + nobody_left);
      } else if (life.outcome_at > deadline) {
        fail(FailureKind::liveness, deadline,
             "late outcome: " + key_text(key) + " at " + at_text(life.outcome_at) +
                 " after the deadline " + at_text(deadline));
      }
    }
  }
}

}  // namespace gossip_rdzv::sim
