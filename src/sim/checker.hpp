// The properties every simulated run must hold, checked from the outside on what the cores
// emit (Committed, NotAdmitted, Fatal, JoinedCluster) and on which processes were started:
//
//  - agreement: all Committed events of one round carry the same assignment (run id, round,
//    world size, master, and every node with its node rank, rank offset, endpoint, ...);
//  - ranks: node ranks 0..N-1 and global ranks 0..W-1 each exactly once, rank hints
//    honoured, and the assignment equal to assign_ranks() of the view's announcements;
//  - validity: only started processes (endpoint, generation, node id, host, nproc as they
//    announced) appear; never a dedicated seed; a NotAdmitted node is in no committed view;
//    a member of a committed view that is still running commits that view;
//  - termination: when the network has settled and at least MIN members are running, every
//    running member has an outcome (Committed, or NotAdmitted) within the stated bound;
//  - rounds (elastic runs): a process commits at most once per round, its rounds strictly
//    increase (RoundStarted goes to a higher round than the one it is in, Committed is for
//    the round it is in), and a NotAdmitted bars a commit of that round only;
//  - rank stability: in round r > 0 the members of round r-1's outcome come first (rank
//    hints aside), in their order there, then the newcomers in natural order
//    (docs/protocol.md, "Rank assignment"); when no member of the view had reported round
//    r-1's outcome, the natural order of all is allowed too. Part of the ranks check.
//
// A safety failure (agreement, ranks, validity) is a protocol bug in every scenario; a
// liveness failure (termination) is reported separately. Agreement compares the whole
// assignment, member generations, node ids and the master port included, across every
// process that committed, crashed ones included: two committed views of one round are a
// safety failure whether they overlap or not.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gossip_rdzv/assignment.hpp"
#include "protocol/core.hpp"

namespace gossip_rdzv::sim {

using protocol::Time;

enum class FailureKind {
  safety,     ///< agreement, ranks or validity broken: a protocol bug
  liveness,   ///< a live node had no outcome within the termination bound
  outsider,   ///< liveness, narrower: a node in no committed view was never told NotAdmitted,
              ///< and every node that committed had exited (nobody left to tell it)
  invariant,  ///< the core reported an impossible event (e.g. Fatal without cause)
  harness,    ///< the simulator itself saw something impossible (codec refused our bytes)
  /// liveness, explained: the only processes that committed crashed, and the votes the
  /// survivors can still see are no majority of the view, so no protocol can finish the
  /// round (docs/protocol.md, "What can still block a round"). Never a safety failure.
  lost_decision,
};
const char* to_string(FailureKind kind);

struct Failure {
  FailureKind kind = FailureKind::safety;
  Time at{0};
  std::string what;
};

struct CheckerConfig {
  std::string run_id;
  std::uint32_t min_nodes = 1;
  std::uint32_t max_nodes = 1;
};

/// What happened to one process (one generation of one slot).
struct LifeRecord {
  std::size_t slot = 0;
  protocol::Announcement ann;
  bool seed_only = false;
  bool running = true;  ///< false after a crash or exit
  bool crashed = false;
  bool joined = false;
  Time started{0};
  Time stopped{Time::max()};  ///< crash or exit time
  enum class Outcome { none, committed, not_admitted, fatal } outcome = Outcome::none;
  Time outcome_at{0};                     ///< the first outcome
  std::optional<std::size_t> view_index;  ///< into Checker::views(): the last round committed
  std::uint32_t round = 0;                ///< the round its core is in (RoundStarted moves it)
  /// The views it committed, one per round, rounds strictly increasing.
  std::vector<std::size_t> committed_views;
  std::optional<std::uint32_t> not_admitted_round;
};

/// A distinct committed assignment of some round and who committed it.
struct CommittedView {
  Assignment assignment;  ///< my_node_rank zeroed: the part every member shares
  std::vector<protocol::MemberKey> committers;
  Time first_at{0};
  Time last_at{0};
  /// The nodes of `assignment` as keys, sorted: membership in O(log N).
  std::vector<protocol::MemberKey> members;
  /// The assignment of this view (my_node_rank ignored) once it passed every structural
  /// check: a later commit equal to it needs no second assign_ranks(). At most one entry.
  std::vector<Assignment> verified;
};

/// What the network allowed, for the exceptions to termination (Checker::beyond_reach).
struct Reachability {
  /// The longest stretch of [from, until) during which slots a and b could exchange packets.
  std::function<Time(std::size_t a, std::size_t b, Time from, Time until)> longest_reachable;
  /// How long a process must be reachable to be owed an outcome: the longest a node waits
  /// between two attempts to reach its seed (Timing::join_backoff_max). A seed stays that
  /// long after its commit (docs/protocol.md, rule 7), so a node that can reach it for that
  /// long is heard.
  Time min_window{0};
  /// The slots each slot joins through (its seeds), by slot.
  std::vector<std::vector<std::size_t>> seeds;
  /// Slots whose last process crashed and never came back, by slot.
  std::vector<bool> gone_for_good;
  /// Slots whose running process never had a packet delivered, to it or from it: the
  /// network lost every one (at 20% loss, six Joins in a row and more).
  std::vector<bool> never_connected;
};

class Checker {
 public:
  explicit Checker(CheckerConfig config);

  void on_start(const protocol::Announcement& ann, std::size_t slot, bool seed_only, Time now);
  void on_crash(const protocol::MemberKey& key, Time now);
  void on_exit(const protocol::MemberKey& key, Time now);
  void on_event(const protocol::MemberKey& key, const protocol::Event& event, Time now);
  /// Records a failure found outside the events (e.g. undecodable bytes).
  void fail(FailureKind kind, Time at, std::string what);
  /// Turns every liveness and outsider failure into `kind`, with `why` appended; the count.
  std::size_t reclassify_liveness(FailureKind kind, const std::string& why);

  /// Running processes without an outcome that no process knowing the outcome could reach,
  /// each with the reason: no protocol could tell them, and termination does not ask it
  /// (they stop at their own join timeout). Two cases, both faults that never healed while
  /// anyone who knew was there:
  ///  - somebody committed, and no committer was reachable from this process, between its
  ///    commit (or this process's start) and its exit, for `min_window` without a partition
  ///    in between (it had stopped before the process started, or partitions cut them apart);
  ///  - it never joined, and every seed it lists crashed and never came back;
  ///  - the network lost every packet it sent and every packet sent to it.
  std::map<protocol::MemberKey, std::string> beyond_reach(const Reachability& reach) const;

  /// End-of-run checks. `deadline` is settle time + termination bound; liveness is required
  /// only when `liveness_required` (MIN members still running). `run_complete` is false when
  /// the run stopped early (a busy loop): then no liveness is judged at all. The processes in
  /// `beyond` (from beyond_reach) are neither stranded nor late: each gets a note instead.
  void finish(Time now, Time deadline, bool liveness_required, bool run_complete = true,
              const std::map<protocol::MemberKey, std::string>& beyond = {});

  bool passed() const { return failures_.empty(); }
  bool has_safety_failure() const;
  const std::vector<Failure>& failures() const { return failures_; }
  const std::vector<std::string>& notes() const { return notes_; }
  const std::vector<CommittedView>& views() const { return views_; }
  const std::map<protocol::MemberKey, LifeRecord>& lives() const { return lives_; }

  std::size_t running_members() const;
  bool all_members_joined() const;
  std::uint64_t commit_events() const { return commit_events_; }
  std::optional<Time> first_commit() const { return first_commit_; }
  std::optional<Time> last_outcome() const { return last_outcome_; }

 private:
  void on_committed(LifeRecord& life, const Assignment& assignment, Time now);
  void on_not_admitted(LifeRecord& life, std::uint32_t round, Time now);
  void on_round_started(LifeRecord& life, const protocol::RoundStarted& started, Time now);
  /// The seniors (endpoints, ViewClaim::seniors) a committed view like `a` may name: one
  /// list when they are determined, two (those or none) when no member of `a` reported the
  /// previous round's outcome.
  std::vector<std::vector<std::string>> allowed_seniors(const Assignment& a) const;
  /// When the last process that committed crashed or exited (Time::max() while one runs);
  /// none before any commit.
  std::optional<Time> last_committer_stop() const;
  /// Marks a process crashed or exited.
  void stopped(LifeRecord& life, Time now);
  /// Structure of one assignment: ranks, hints, validity, equality with assign_ranks().
  void check_assignment(const LifeRecord& life, const Assignment& assignment, Time now);
  static bool in_view(const CommittedView& view, const protocol::MemberKey& key);
  /// Index into views_ of the view of `assignment`'s round equal to it under
  /// assignment_difference(), if any.
  std::optional<std::size_t> find_view(const Assignment& assignment) const;
  /// Whether `assignment` (my_node_rank ignored) is exactly one `view` verified before.
  static bool verified_before(const CommittedView& view, const Assignment& assignment);

  CheckerConfig config_;
  std::map<protocol::MemberKey, LifeRecord> lives_;
  /// The life of the last on_event(). A copy of the Checker starts without it: the iterator
  /// would point into the other map.
  struct LastLife {
    std::map<protocol::MemberKey, LifeRecord>::iterator it;
    bool valid = false;
    LastLife() = default;
    LastLife(const LastLife&) {}
    LastLife& operator=(const LastLife&) {
      valid = false;
      return *this;
    }
  } last_event_life_;
  std::vector<CommittedView> views_;
  std::vector<Failure> failures_;
  std::vector<std::string> notes_;
  std::uint64_t commit_events_ = 0;
  /// Members (not dedicated seeds) running and not yet joined: all_members_joined() in O(1).
  std::size_t running_not_joined_ = 0;
  std::optional<Time> first_commit_;
  std::optional<Time> last_outcome_;
};

/// "nodes[3].rank_offset: 8 vs 9" — the first difference of two assignments, ignoring
/// my_node_rank; empty when they agree.
std::string assignment_difference(const Assignment& a, const Assignment& b);
/// One line: round, world size, master and the node list, for failure reports.
std::string describe(const Assignment& assignment);

}  // namespace gossip_rdzv::sim
