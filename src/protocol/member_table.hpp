// The SWIM membership table: one row per endpoint, SWIM's precedence rules for merging
// rumours, the piggyback queue, and O(1) random sampling of peers (so a seed's work per join
// does not grow with the cluster).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core.hpp"
#include "messages.hpp"
#include "prng.hpp"

namespace gossip_rdzv::protocol {

struct Member {
  Announcement ann;
  std::uint64_t incarnation = 0;
  MemberStatus status = MemberStatus::alive;
  Time suspect_deadline{0};    ///< when a suspect is declared dead
  Time last_heard{0};          ///< last message from the member itself; 0: never
  std::string last_heard_via;  ///< who last told us about it
};

/// What a merge did, so the core can raise the matching event.
enum class MemberChange { none, joined, suspected, died, recovered, restarted };

class MemberTable {
 public:
  explicit MemberTable(std::string self_endpoint);

  /// Applies a rumour about another member using SWIM's precedence (newer generation wins;
  /// then higher incarnation; at equal incarnation dead > suspect > alive). Rumours about
  /// ourselves are not handled here (the core refutes them).
  MemberChange merge(const MemberRecord& rumour, Time now, Time suspicion_deadline,
                     const std::string& via);

  /// Inserts or refreshes our own row.
  void set_self(const MemberRecord& self);

  /// A message arrived from this member itself.
  void heard_from(const std::string& endpoint, std::uint64_t generation, Time now);
  bool suspect(const std::string& endpoint, Time deadline);
  bool declare_dead(const std::string& endpoint, Time now);
  /// A member declared dead since `since`, chosen uniformly (memberlist gossips to the dead
  /// for a while so that a wrongly buried member learns it and refutes).
  std::optional<std::string> sample_recently_dead(Prng& prng, Time since);
  /// Suspects whose deadline passed.
  std::vector<std::string> expired_suspects(Time now) const;
  std::optional<Time> earliest_suspect_deadline() const;

  const Member* find(const std::string& endpoint) const;
  const std::map<std::string, Member>& rows() const { return rows_; }
  MemberRecord record(const Member& member) const;
  /// Bumped whenever a member's generation or liveness changes.
  std::uint64_t version() const { return version_; }

  /// Members other than us that are not dead.
  std::size_t live_peer_count() const { return live_peers_.size(); }
  const std::vector<std::string>& live_peers() const { return live_peers_; }
  /// Up to `count` distinct live peers, uniformly, excluding `exclude`.
  std::vector<std::string> sample_peers(Prng& prng, std::size_t count,
                                        const std::string& exclude = {}) const;

  /// Queues a row to be piggybacked `transmits` times (memberlist's TransmitLimitedQueue).
  void enqueue(const std::string& endpoint, std::uint32_t transmits);
  /// Takes up to `max` queued rows, newest first, counting one transmission each.
  std::vector<MemberRecord> take_piggyback(std::size_t max);
  bool piggyback_pending() const { return !queue_.empty(); }

 private:
  void track_liveness(const std::string& endpoint, bool live);
  MemberChange apply(Member& row, const MemberRecord& rumour, Time suspicion_deadline);

  std::string self_;
  std::map<std::string, Member> rows_;
  std::uint64_t version_ = 0;
  std::vector<std::string> live_peers_;
  std::unordered_map<std::string, std::size_t> live_index_;
  struct Queued {
    std::string endpoint;
    std::uint32_t remaining;
  };
  std::vector<Queued> queue_;
  struct Death {
    std::string endpoint;
    Time at;
  };
  std::vector<Death> recent_deaths_;  ///< appended in time order, pruned by sample_recently_dead
};

}  // namespace gossip_rdzv::protocol
