// Agreement on one view per round without a coordinator. docs/protocol.md has the argument;
// in short, each node holds at most one view at a time and views are totally ordered by
// (attempt, digest):
//
//   proposed(V) bit of m: m held V.          ready(V) bit of m: m saw proposed(V) full.
//   voted(V) bit of m: m saw ready(V) full and votes for V.
//   V is the round's outcome once (a) a strict majority of its members voted and (b) the
//   round's quorum base (the seed list) is won: more than half of the base endpoints are
//   members of V that voted, or dedicated seeds that witnessed V.
//   committed(V) bit of m: m saw (a) and (b) (it knows the outcome).
//   fenced(V) bit of m: m promised never to vote for V.
//
//   1. A node's held view only ever increases in that order.
//   2. A ready node keeps its view until the view is provably dead: some member of it holds a
//      higher view (by 1 it will never hold this one again, so ready(V) can never fill), or
//      its fenced members are a blocking set (at least half: the others are no majority).
//   3. Bits are set only by their owner and merge by union, so a copy can be stale but never
//      wrong; a full ready(V) without a blocking fence set means every member is locked on V.
//   4. Learning of a view that is the outcome adopts it (a member) or ends the round (not
//      admitted).
//   5. A ready member that dies (or restarts) before its ready bit reaches everyone would
//      block a view whose other members are all ready: it may have seen ready full and voted,
//      but nobody commits on fewer votes than a majority, so it cannot have committed alone.
//      Each member that lacks ready full when it learns of the death fences; a blocking set
//      of fences releases the view.
//   6. Two views that each won the base share a base endpoint: the same member process
//      (overlapping views, covered by 1-5) or the same witness, which witnesses a second view
//      only once the first is provably dead (witness.hpp). So disjoint groups cannot both
//      commit.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "intern_pool.hpp"
#include "member_table.hpp"
#include "messages.hpp"
#include "prng.hpp"
#include "quorum_base.hpp"
#include "time.hpp"

namespace gossip_rdzv::protocol {

struct ViewId {
  std::uint64_t attempt = 0;
  std::uint64_t digest = 0;
  auto operator<=>(const ViewId&) const = default;
};

/// Whether `set` (bits over a view of `members`) is a quorum: more than half. Any two quorums
/// of one view share a member, and no single member of a view of two or more is one.
bool quorum(const std::vector<std::uint8_t>& set, std::size_t members);
/// Whether `set` blocks every quorum: at least half, so the members outside it are no
/// majority. A blocking set of fences proves that the view can never commit.
bool blocking(const std::vector<std::uint8_t>& set, std::size_t members);

/// Digest of a round's member list and seniors (ViewClaim::seniors) under a quorum base
/// (FNV-1a 64): names a view on every node alike; nodes started with different seed lists
/// never name the same view.
std::uint64_t view_digest(std::uint32_t round, std::uint64_t base_digest,
                          const std::vector<MemberKey>& members,
                          const std::vector<std::uint32_t>& seniors = {});

/// Whether `claim` is the round's outcome: a quorum of votes and the base won. Its sets are
/// bits over `members`.
bool decided(const ViewClaim& claim, const std::vector<MemberKey>& members, const QuorumBase& base);

struct AgreementConfig {
  MemberKey self;
  std::uint32_t round = 0;
  std::uint32_t min_nodes = 1;
  std::uint32_t max_nodes = 1;
  Time last_call{0};
  /// The round's quorum base: for round 0 the seed endpoints this node was given (itself
  /// included when listed). Empty: no base condition (a lone core in tests).
  QuorumBase base;
  /// Where member lists are interned (shared with the member table); null: its own.
  std::shared_ptr<InternPool> pool;
  /// The previous round's outcome, its members by node rank, when this node knows it (it
  /// reported that commit). Then every view it holds or proposes names as seniors exactly
  /// those of its members, in that order (stable ranks); a view naming others is one it will
  /// not hold. Without it any seniors are accepted and its own proposals name none.
  std::optional<std::vector<MemberKey>> previous = std::nullopt;
  /// With `previous`: the last call instead when every live member of the table is a
  /// member of the previous outcome (a round after a death or a worker failure, nobody new
  /// to admit). It only lets the news of the change reach the others; a member that arrives
  /// later starts a round of its own. A newcomer seen before it ends brings back `last_call`.
  /// Unset: `last_call` always.
  std::optional<Time> settle = std::nullopt;
};

class Agreement {
 public:
  explicit Agreement(AgreementConfig config);

  /// Merges a peer's claim. Returns true when it taught us something (new view or new bits).
  /// Claims for another round, or inconsistent ones (digest does not match the members), are
  /// ignored.
  /// `from`, when given, is the member that sent it: it knows the view's members (it sends
  /// no claim of a view it does not know), so we stop sending it the member list.
  bool merge(const ViewClaim& claim, const MemberKey* from = nullptr);

  /// Re-evaluates what to hold, readiness and commit against the membership table.
  /// Returns true when our own bits or held view changed.
  bool step(Time now, const MemberTable& table);

  /// The views worth telling a peer about: held, highest known, committed. A view the
  /// receiver is known to hold (its own proposed, ready or committed bit is set) goes by
  /// reference: its id and seen-by sets without the member list. Without a receiver (or one
  /// not in the view), every claim carries its members.
  std::vector<ViewClaim> claims_to_send(const MemberKey* receiver = nullptr) const;

  /// The round's quorum base (AgreementConfig::base).
  const QuorumBase& base() const { return config_.base; }

  /// This node knows the round's outcome, a view it is a member of (its committed bit is
  /// set). The core reports it (Core::commit_reported()) once it also knows every member's
  /// announcement.
  bool committed() const { return committed_.has_value(); }
  bool not_admitted() const { return not_admitted_; }
  /// Committed view's members' announcements that the table knows (all of them once the
  /// table has heard of every member; a restarted member's old process included).
  std::vector<Announcement> committed_members(const MemberTable& table) const;
  std::optional<ViewClaim> committed_view() const;
  /// The committed view's members (sorted), without copying them; null before a commit.
  const MemberList* committed_member_list() const;
  /// The committed view's seniors (ViewClaim::seniors) as endpoints, in their order.
  std::vector<std::string> committed_seniors() const;
  std::optional<ViewClaim> held_view() const;
  /// Members of the held view (0 when none), without copying it.
  std::size_t held_size() const { return held_ ? views_.at(*held_).members->size() : 0; }
  /// The committed view that does not include us (when not_admitted()).
  std::optional<ViewClaim> foreign_commit() const { return foreign_commit_; }
  /// Every member of the committed view is known to have committed.
  bool everyone_committed() const;
  /// Up to `count` members of the committed view other than us not yet known to have
  /// committed, at random, with no per-member work while many are missing (this runs every
  /// gossip period after a commit).
  std::vector<std::string> sample_missing_commit(Prng& prng, std::size_t count) const;
  /// When a view can next be formed (the end of the last call), if waiting for it.
  std::optional<Time> next_deadline() const;
  /// Base endpoints to ask for a witness of the held view: we voted for it, its votes are a
  /// quorum but the base is not won, and these seeds are no members of it (dedicated seeds,
  /// or seeds cut off from the view). Empty otherwise.
  std::vector<std::string> witnesses_wanted() const;
  /// A member whose process is gone (dead, or its endpoint runs a newer one) without its
  /// vote in our copy of the view we are ready on, when the votes of that view's live
  /// members could never decide it without such votes: nobody alive can learn whether the
  /// view was decided (the gone process may have voted and committed), so this round can
  /// never end here. Elastic jobs start the next round then (Rounds::blocked). None when
  /// we are not ready, committed, or the live members' votes could still decide the view.
  std::optional<MemberKey> blocked_by_gone(const MemberTable& table) const;
  /// Where the held (or committed) view stands with the quorum base, for progress lines and
  /// the timeout error: a round whose members are all ready may still wait for seeds.
  using BaseStatus = SeedQuorum;
  BaseStatus base_status() const;

  void check_invariants() const;

 private:
  struct View {
    ViewClaim claim;  ///< id and seen-by sets; `claim.members` stays empty, see `members`
    std::shared_ptr<const MemberList> members;  ///< interned: one copy for every holder
    std::vector<std::uint32_t> seniors;         ///< ViewClaim::seniors (claim.seniors is empty)
    /// Its seniors are the ones we know to be right (always, without a previous outcome): we
    /// may hold it. Kept either way, as a proof that its holders left the views below.
    bool acceptable = true;
    struct Validity {
      std::uint64_t at_version = UINT64_MAX;  ///< table version the result is for
      bool result = false;
    };
    mutable Validity hold_validity;      ///< cache of valid(view, table, false)
    mutable Validity complete_validity;  ///< cache of valid(view, table, true)
    /// Entries of table.generation_log() looked at, and the members whose endpoint now runs
    /// a newer process (kept up to date by update_superseded, also from const valid()).
    mutable std::size_t generation_log_seen = 0;
    mutable std::vector<std::uint32_t> superseded;
    /// Members we sent the member list to (bit i: members[i]): each gets it from us once, by
    /// reference afterwards, until `members_sent_quota` claims later (a lost copy is sent
    /// again; a large view has many other senders). A full claim costs ~20 bytes a member.
    mutable std::vector<std::uint8_t> members_sent;
    mutable std::size_t members_sent_quota = 0;
  };

  /// Whether to hold `view` (complete = false: no member known dead or restarted) or to be
  /// ready on it (complete = true: also every member's row, with its generation, is here).
  bool valid(const View& view, const MemberTable& table, bool complete) const;
  const MemberList* candidate(Time now, const MemberTable& table);
  /// The last call that applies now: config_.settle when no live member is new since the
  /// previous outcome, else config_.last_call.
  Time last_call_for(const MemberTable& table);
  ViewClaim full_claim(const View& view) const;
  void update_superseded(const View& view, const MemberTable& table) const;
  bool release_if_dead(const MemberTable& table);
  /// Whether a view of `members` can still win the quorum base, given which base endpoints
  /// the table knows as member processes.
  bool can_win_base(const MemberList& members, const bits::Bytes& fenced,
                    const MemberTable& table) const;
  /// Sets our fenced bit on views with a member gone before we saw ready full (rule 5).
  bool fence(const MemberTable& table);
  bool decided(const View& view) const;
  bool choose_held(Time now, const MemberTable& table);
  bool hold(const ViewId& id);
  /// A view of `members` above the held one (and above `above`): an existing one we may
  /// hold, or a new one with the seniors we know (AgreementConfig::previous), else `seniors`.
  ViewId ensure_view(const std::shared_ptr<const MemberList>& members,
                     const std::vector<std::uint32_t>& seniors,
                     std::optional<ViewId> above = std::nullopt);
  /// The seniors a view of `members` must name, when we know the previous outcome.
  std::optional<std::vector<std::uint32_t>> seniors_for(const MemberList& members) const;
  bool advance(const MemberTable& table);
  bool adopt_commit();
  std::optional<std::size_t> my_index(const View& view) const;
  const View* highest() const;
  void prune();
  /// Notes that member `key` of `view` has its member list (mark in members_sent).
  void note_knows(const View& view, const MemberKey& key) const;

  AgreementConfig config_;
  std::map<ViewId, View> views_;
  std::optional<ViewId> held_;
  bool ready_ = false;
  std::optional<ViewId> committed_;
  std::set<ViewId> fenced_;  ///< views we promised never to vote for (a member died or restarted)
  bool not_admitted_ = false;
  std::optional<ViewClaim> foreign_commit_;
  std::uint64_t max_attempt_ = 0;
  std::optional<Time> min_reached_at_;  ///< when MIN live members were first seen (last call)
  std::optional<Time> last_call_end_;
  bool last_call_over_ = false;  ///< a view was formed after the last call: it stays over
  /// Whether every live member is one of config_.previous (AgreementConfig::settle), for
  /// the table version `newcomers_version_`; `previous_sorted_` is previous in key order.
  bool no_newcomer_ = false;
  std::uint64_t newcomers_version_ = UINT64_MAX;
  std::vector<MemberKey> previous_sorted_;
  // step() does real work only when something changed: new bits, a membership change, or
  // the end of the last call. Keeps a simulated 10k-node cluster affordable.
  bool dirty_ = true;
  std::uint64_t seen_table_version_ = UINT64_MAX;
  std::uint64_t stepped_version_ = UINT64_MAX;
  /// Non-dead members, sorted, at most MAX, for seen_table_version_ (interned: when it
  /// becomes a view, the view shares it).
  std::shared_ptr<const MemberList> live_;
  /// includes(view, live_) of the last view compared, per table version.
  struct IncludesCache {
    ViewId view;
    std::uint64_t table_version = UINT64_MAX;
    bool result = false;
  };
  IncludesCache includes_cache_;
};

}  // namespace gossip_rdzv::protocol
