// The protocol core: a pure state machine (no sockets, clocks, threads or global randomness).
// The caller hands in time and messages and drains what the core wants sent and what happened:
//
//   core.start(now);
//   loop: core.on_message(now, envelope) / core.on_tick(now) when now >= core.next_wakeup();
//         while (auto out = core.poll_send()) transmit(*out);
//         while (auto ev = core.poll_event()) handle(*ev);
//
// The same core runs over ZeroMQ (src/runtime) and in the simulator (src/sim).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "gossip_rdzv/assignment.hpp"
#include "gossip_rdzv/config.hpp"
#include "gossip_rdzv/error.hpp"
#include "messages.hpp"
#include "quorum_base.hpp"
#include "time.hpp"

namespace gossip_rdzv::protocol {

class InternPool;

struct CoreConfig {
  Announcement self;  ///< endpoint, ids, host, nproc, hint, master port, sizes
  std::string run_id = "default";
  std::vector<std::string> seeds;  ///< endpoints; one equal to self.endpoint is skipped
  std::uint32_t min_nodes = 1;
  std::uint32_t max_nodes = 1;
  Timing timing;
  std::chrono::milliseconds last_call{30000};
  std::uint64_t rng_seed = 1;  ///< the only source of randomness
  bool seed_only = false;      ///< a dedicated seed: introduces joiners, never a member
  std::uint32_t round = 0;     ///< the first round; elastic rounds count up from it
  /// Elastic: after a commit, a member's death or restart, a live node outside a view below
  /// MAX, request_next_round() or a peer's claim of a later round start the next round
  /// (docs/protocol.md, "Rounds"). Otherwise the core agrees once.
  bool elastic = false;
  /// Announcements and view member lists, interned; several cores of one process may share
  /// it (the simulator does). Null: the core makes its own.
  std::shared_ptr<InternPool> pool;
};

struct Outgoing {
  std::string to;  ///< destination endpoint "host:port"
  Envelope msg;
  /// Send back over the connection that the message being handled (by on_message) arrived
  /// on, not to `to`'s advertised endpoint: `to` is a node that endpoint does not reach.
  /// Only set on what on_message queues, so a caller that drains poll_send() after each
  /// on_message knows which connection it means. Without such a path, send it to `to`.
  bool reply = false;
};

// ---- events -------------------------------------------------------------------------------
struct JoinedCluster {
  std::string via;
};  ///< first answer from a seed or peer
struct MemberUp {
  Announcement member;
};
struct MemberSuspected {
  std::string endpoint;
};
struct MemberDead {
  std::string endpoint;
  /// It left the job for good (its workers finished, or it failed the job) rather than
  /// stopped answering: it keeps running, and serving its store keys, until the job ends.
  bool left = false;
};
struct Committed {
  Assignment assignment;
};  ///< this node's outcome for the round
/// The round committed without this node. `previous_process_in_view`: the view holds this
/// endpoint's previous process (this one restarted after the others agreed).
struct NotAdmitted {
  std::uint32_t round = 0;
  std::uint32_t view_size = 0;
  bool previous_process_in_view = false;
};
/// A peer of another run or version: `by_us` when we refused it, else it refused us.
struct PeerRefused {
  std::string peer;
  RefuseReason reason{};
  std::string detail;
  bool by_us = false;
};
/// `reporter` sends to this node's advertised endpoint (`tried_endpoint`) and gets no
/// answer: the address does not work from there (wrong --advertise, inbound firewall).
struct UnreachableReported {
  std::string reporter;
  std::string tried_endpoint;
  std::uint32_t unanswered = 0;
  Time failing_for{0};
};
/// This node starts telling `endpoint` that its advertised endpoint does not answer here
/// although it keeps sending (the first notice of each such episode): the other side of
/// UnreachableReported.
struct PeerUnreachable {
  std::string endpoint;
  std::uint32_t unanswered = 0;
  Time failing_for{0};
};
/// Why an elastic job moved on to another round.
enum class RoundReason : std::uint8_t {
  workers_failed,    ///< request_next_round(): this node's workers failed
  member_dead,       ///< `peer`, a member of the last round, was declared dead
  member_restarted,  ///< `peer`'s process restarted (a newer generation at its endpoint)
  member_arrived,    ///< `peer` is alive outside a round that has room for it
  peer_moved_on,     ///< `peer` claims a view of a later round
};
/// An elastic job left the round it was in (committed or not) for `round`: workers of the
/// earlier round must stop; Committed follows with the new round's assignment.
struct RoundStarted {
  std::uint32_t round = 0;
  RoundReason reason{};
  std::string peer;
};
/// The job ended for this node although its workers did not finish: `peer` (hostname
/// `hostname`) failed it (`failed`: its workers failed with no restart left; `rank` and
/// `status` say which worker and how), or, for a node that never committed a round, `peer`
/// left after its workers finished: the job is over before this node could join it.
struct JobEnded {
  bool failed = false;
  std::string peer;
  std::string hostname;
  std::uint32_t rank = 0;
  int status = 0;
};
/// The round cannot succeed for a reason the user must fix (e.g. rank hint conflict).
struct Fatal {
  ErrorCode code{};
  std::string message;
};
using Event =
    std::variant<JoinedCluster, MemberUp, MemberSuspected, MemberDead, Committed, NotAdmitted,
                 PeerRefused, Fatal, UnreachableReported, PeerUnreachable, RoundStarted, JobEnded>;

/// What the core knows, for progress lines and timeout reports.
struct MemberView {
  Announcement ann;
  MemberStatus status = MemberStatus::alive;
  std::uint64_t incarnation = 0;
  Time last_heard{0};          ///< last message from this member itself (0: never directly)
  std::string last_heard_via;  ///< who told us about it most recently
};
/// A peer whose advertised endpoint does not answer this node (direct probes unanswered, or
/// it kept re-sending Join after being answered).
struct UnreachablePeer {
  std::string endpoint;
  std::uint32_t unanswered = 0;  ///< in a row
  Time since{0};                 ///< first unanswered message
  /// A message from it arrived meanwhile: it runs, and its address is what fails (without
  /// this, a crashed node looks the same).
  bool heard_meanwhile = false;
  bool told = false;  ///< a notice went back to it
  /// The count at which a peer that is heard meanwhile is told, and reported as unreachable.
  static constexpr std::uint32_t kReportAfter = 3;
};
struct Snapshot {
  bool joined = false;
  bool commit_reported = false;  ///< Core::commit_reported()
  bool done = false;
  std::vector<MemberView> members;           ///< including self (unless seed_only)
  std::optional<ViewClaim> held;             ///< the view this node holds, if any
  std::vector<UnreachablePeer> unreachable;  ///< every peer with unanswered messages, by endpoint
  SeedQuorum seeds;                          ///< the held view and the seed list
  /// The highest Lifeguard local health this node reached (0: it never ran late): a node
  /// that was itself slow may have read answers too late, not missed them.
  std::uint32_t peak_local_health = 0;
};

class Core {
 public:
  explicit Core(CoreConfig config);
  ~Core();
  Core(Core&&) noexcept;
  Core& operator=(Core&&) noexcept;

  void start(Time now);
  void on_message(Time now, const Envelope& msg);
  /// The runtime could read only the header of a message: its version is not ours.
  void on_version_mismatch(Time now, const std::string& sender, std::uint16_t their_version);
  void on_tick(Time now);

  std::optional<Outgoing> poll_send();
  std::optional<Event> poll_event();
  /// When on_tick should next be called (may be <= now when work is pending).
  Time next_wakeup() const;

  bool joined() const;
  /// The round's outcome went out as an event: Committed (or Fatal when no rank assignment
  /// exists). It follows Agreement::committed() (this node knows the view it is a member of
  /// is decided) once the table holds every member's announcement, which ranks need.
  bool commit_reported() const;
  /// Committed and every member known to have committed, or the commit grace ran out.
  bool done() const;

  // ---- elastic rounds (config.elastic) --------------------------------------------------------
  /// The round this node is in.
  std::uint32_t round() const;
  /// This node's workers failed: once this round's outcome is reported, start the next
  /// round (RoundStarted{workers_failed}). Returns false, doing nothing, when the core is
  /// not elastic, has not reported this round's commit, or has left.
  bool request_next_round(Time now);
  /// This node's workers finished: leave the job for good (a death at kLeftIncarnation,
  /// spread by gossip), start no more rounds, keep answering until the caller stops.
  void leave(Time now);
  /// This node's workers failed with no restart left: end the job for every member (a
  /// death at a final incarnation carrying `rank` and `status` 0-255, spread by gossip; each
  /// member that learns it gets JobEnded{failed}). Like leave(), it starts no more rounds.
  void abort(Time now, std::uint32_t rank, int status);
  bool left() const;
  /// Lifeguard's local health, 0 when healthy (CoreContext::local_health): probing and
  /// suspicions run this many times + 1 slower while this node misses its own deadlines.
  std::uint32_t local_health() const;
  /// Left, and every other member of the last committed round left or is dead.
  bool job_finished() const;
  Snapshot snapshot() const;
  const CoreConfig& config() const;
  /// Aborts (assert) if an internal invariant is broken; the simulator calls it every step.
  void check_invariants() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace gossip_rdzv::protocol
