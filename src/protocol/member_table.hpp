// The SWIM membership table: one row per endpoint, SWIM's precedence rules for merging
// rumours, the piggyback queue, and O(1) random sampling of peers (so a seed's work per join
// does not grow with the cluster).
//
// Nothing here scans the table per message: rows live in a deque with a flat hash index, the
// live peers, the suspects (by deadline) and the piggyback queue are kept up to date as rows
// change, so one step costs O(log N) at most whatever the cluster size. A simulated cluster
// of N nodes holds N tables of N rows; per-step scans would make a run cubic, and every byte
// of a row counts N^2 times: a row is 40 bytes plus its index and queue entries, and points
// at its announcement in an InternPool (shared by all cores of a simulation).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "intern_pool.hpp"
#include "messages.hpp"
#include "prng.hpp"
#include "suspicion.hpp"
#include "time.hpp"

namespace gossip_rdzv::protocol {

struct Member {
  const Announcement* ann = nullptr;  ///< the process's announcement, in the table's pool
  std::uint64_t incarnation = 0;
  Time suspect_deadline{0};        ///< when a suspect is declared dead
  Time last_heard{0};              ///< last message from the member itself; 0: never
  std::uint32_t via = UINT32_MAX;  ///< who last told us about it: MemberTable::teller()
  MemberStatus status = MemberStatus::alive;
};

/// What a merge did, so the core can raise the matching event.
/// `confirmed`: another member suspects a suspect at the same incarnation (its deadline moved
/// closer, suspicion.hpp); news to spread, no event.
enum class MemberChange { none, joined, suspected, died, recovered, restarted, confirmed };

class MemberTable {
 public:
  /// `pool` holds the announcements; null: the table makes its own.
  explicit MemberTable(std::string self_endpoint, std::shared_ptr<InternPool> pool = nullptr);

  /// Rows a table holds at most (rows are never removed): rumours of further endpoints are
  /// ignored, so a stranger's forged joins cannot grow a node's memory without bound. A
  /// job's members fit: it is the most a reply can list (kMaxListLength).
  static constexpr std::size_t kMaxRows = 65536;

  /// Applies a rumour about another member using SWIM's precedence (newer generation wins;
  /// then higher incarnation; at equal incarnation dead > suspect > alive). Rumours about
  /// ourselves are not handled here (the core refutes them). A new endpoint beyond kMaxRows
  /// is ignored (MemberChange::none). A suspicion it starts runs on `clock`; a rumour of the
  /// same suspicion from another accuser confirms it (MemberChange::confirmed).
  MemberChange merge(const MemberRecord& rumour, Time now, const SuspicionClock& clock,
                     const std::string& via);

  /// Inserts or refreshes our own row.
  void set_self(const MemberRecord& self);

  /// A message arrived from this member itself.
  void heard_from(const std::string& endpoint, std::uint64_t generation, Time now);
  /// Starts suspecting a live member on `clock`, `accuser` (us) being its first accuser.
  bool suspect(const std::string& endpoint, const SuspicionClock& clock,
               const std::string& accuser);
  /// `accuser` suspects a member we already suspect: true if that is a new confirmation
  /// (the deadline moved closer, suspicion.hpp). Only accusers we hold a row for count, so
  /// made-up names confirm nothing and cost no memory.
  bool confirm(const std::string& endpoint, const std::string& accuser);
  bool declare_dead(const std::string& endpoint, Time now);
  /// A member declared dead since `since`, chosen uniformly (memberlist gossips to the dead
  /// for a while so that a wrongly buried member learns it and refutes).
  std::optional<std::string> sample_recently_dead(Prng& prng, Time since);
  /// Suspects whose deadline passed.
  std::vector<std::string> expired_suspects(Time now) const;
  std::optional<Time> earliest_suspect_deadline() const;

  const Member* find(const std::string& endpoint) const;
  /// Every row ever inserted, in insertion order; a row's index never changes. A deque: no
  /// spare capacity (a simulated cluster holds N tables of N rows).
  const std::deque<Member>& rows() const { return rows_; }
  /// The endpoint that last told us about a member ("" if none). Stored as the teller's row
  /// (4 bytes), not its name.
  const std::string& teller(const Member& member) const;
  /// Row index of `endpoint`, if known.
  std::optional<std::uint32_t> index_of(const std::string& endpoint) const;
  MemberRecord record(const Member& member) const;
  /// Bumped whenever a row is added or a member's generation or liveness changes.
  std::uint64_t version() const { return version_; }
  /// Bumped when a member dies, comes back or restarts (or is first heard of as dead), not
  /// when a live member is added: what can make a view unfit to hold (Agreement::valid).
  std::uint64_t liveness_version() const { return liveness_version_; }
  /// Row indices in the order their generation became known (a new row, or a restart): a
  /// view only needs to look at the entries it has not seen to find members that restarted.
  const std::vector<std::uint32_t>& generation_log() const { return generation_log_; }
  /// The announcement of exactly this process: the current row, or one a restart replaced.
  const Announcement* announcement(const MemberKey& key) const;
  /// Non-dead members, us included, sorted by endpoint.
  std::vector<MemberKey> live_keys() const;
  /// Non-dead members, us included.
  std::size_t live_count() const;

  /// Members other than us that are not dead.
  std::size_t live_peer_count() const { return live_peers_.size(); }
  /// Row indices of the live peers (unordered).
  const std::vector<std::uint32_t>& live_peers() const { return live_peers_; }
  /// Up to `count` distinct live peers, uniformly, excluding `exclude`.
  std::vector<std::string> sample_peers(Prng& prng, std::size_t count,
                                        const std::string& exclude = {}) const;

  /// Queues a row to be piggybacked `transmits` times (memberlist's TransmitLimitedQueue);
  /// queuing it again starts its count afresh.
  void enqueue(const std::string& endpoint, std::uint32_t transmits);
  /// Takes up to `max` queued rows, the least transmitted first, counting one transmission
  /// each; among rows sent equally often, the one that reached that count last goes first
  /// (so the newest of the never-sent). Like memberlist: during a join storm every new row
  /// gets its first transmissions before any row gets its tenth, so none is buried under
  /// newer ones.
  std::vector<MemberRecord> take_piggyback(std::size_t max);
  bool piggyback_pending() const { return queued_ != 0; }

  const std::shared_ptr<InternPool>& pool_handle() const { return pool_; }

 private:
  static constexpr std::uint32_t kNone = UINT32_MAX;
  /// `Member::via` values at or above this name a teller that has no row (a seed that is not
  /// a member, a `members` client): tellers_[via - kForeignTeller].
  static constexpr std::uint32_t kForeignTeller = 0x80000000u;
  /// Per-row bookkeeping next to `rows_` (same index).
  struct Slot {
    std::uint32_t live_position = kNone;  ///< index in live_peers_, kNone when not live
    std::uint32_t prev = kNone;           ///< neighbours in the queue list of its `sent` count
    std::uint32_t next = kNone;
    std::uint16_t sent = 0;   ///< transmissions since it was queued
    std::uint16_t limit = 0;  ///< transmissions it is queued for; 0: not queued
  };
  /// One open-addressing bucket of the endpoint index: row + 1 (0: empty) and the high half
  /// of the endpoint's hash, so most probes compare no strings.
  struct Bucket {
    std::uint32_t row_plus_one = 0;
    std::uint32_t hash_high = 0;
  };

  std::uint32_t insert(const MemberRecord& record);
  void index_row(std::uint32_t row, std::uint64_t hash);
  void set_status(std::uint32_t index, MemberStatus status, Time suspect_deadline);
  /// set_status from a rumour or our own probes: a suspect's suspicion (deadline and
  /// accusers) starts afresh on `clock`, `accuser` its first accuser.
  void take_status(std::uint32_t index, MemberStatus status, const SuspicionClock& clock,
                   const std::string& accuser);
  bool add_accuser(std::uint32_t index, const std::string& accuser);
  void move_deadline(std::uint32_t index, Time deadline);
  void track_liveness(std::uint32_t index);
  MemberChange apply(std::uint32_t index, const MemberRecord& rumour, const SuspicionClock& clock);
  std::uint32_t teller_id(const std::string& endpoint);
  void link(std::uint32_t row);
  void unlink(std::uint32_t row);

  std::string self_;
  std::shared_ptr<InternPool> pool_;
  std::deque<Member> rows_;
  std::deque<Slot> slots_;
  std::vector<Bucket> buckets_;  ///< size a power of two, at most half full
  std::uint64_t version_ = 0;
  std::uint64_t liveness_version_ = 0;
  std::vector<std::uint32_t> generation_log_;
  std::map<MemberKey, const Announcement*> retired_;  ///< processes replaced by a restart
  std::vector<std::uint32_t> live_peers_;
  std::set<std::pair<Time, std::uint32_t>> suspects_;  ///< (deadline, row) of every suspect
  /// Each suspect's clock and accusers (rows, the first accuser first, at most
  /// clock.expected + 1): kept beside the rows, which stay small, and only while suspect.
  struct Suspicion {
    SuspicionClock clock;
    std::vector<std::uint32_t> accusers;
  };
  std::unordered_map<std::uint32_t, Suspicion> suspicions_;
  /// The piggyback queue: queue_heads_[k] starts the list of rows sent k times, linked
  /// through their slots (no memory beyond the slot); the head goes out first.
  std::vector<std::uint32_t> queue_heads_;
  std::size_t queued_ = 0;
  struct Death {
    std::uint32_t row;
    Time at;
  };
  std::vector<Death> recent_deaths_;
  std::vector<std::string> tellers_;  ///< tellers without a row, in first-seen order
};

}  // namespace gossip_rdzv::protocol
