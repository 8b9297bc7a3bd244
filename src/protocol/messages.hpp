// Every message of the gossip-rdzv protocol, as plain structs. The msgpack layout lives in
// codec.cpp and docs/protocol.md; nothing else knows it.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace gossip_rdzv::protocol {

inline constexpr std::uint16_t kProtocolVersion = 5;
inline constexpr char kMagic[] = "GRDZ";

/// What a node says about itself when it joins; never changes for one process.
struct Announcement {
  std::string endpoint;          ///< advertised gossip endpoint "host:port": the member key
  std::uint64_t node_id = 0;     ///< random per process start
  std::uint64_t generation = 0;  ///< larger after a restart with the same endpoint
  std::string host;              ///< advertised address (MASTER_ADDR candidate)
  std::string hostname;          ///< for people
  std::uint32_t nproc = 1;
  std::int32_t rank_hint = -1;    ///< -1: none
  std::uint16_t master_port = 0;  ///< port checked free on this node
  std::uint32_t min_nodes = 1;    ///< the sizes this node was started with (checked for mismatch)
  std::uint32_t max_nodes = 1;
  /// Digest of the seed list this node was started with, the round's quorum base (checked
  /// for mismatch: nodes given different seed lists never agree).
  std::uint64_t seeds_digest = 0;

  bool operator==(const Announcement&) const = default;
};

enum class MemberStatus : std::uint8_t { alive = 0, suspect = 1, dead = 2 };

/// A member that leaves on purpose (its workers finished: Core::leave) declares itself dead
/// at this incarnation, which no rumour can override and nobody can refute. Elastic rounds
/// tell it from a crash by it: a member that left ends no round.
inline constexpr std::uint64_t kLeftIncarnation = UINT64_MAX;
/// A member whose workers failed with no restart left ends the job for everyone
/// (Core::abort): it declares itself dead at kAbortedBase | exit status << 32 | the failing
/// worker's rank (status 0-255), as final as a leave and below kLeftIncarnation.
inline constexpr std::uint64_t kAbortedBase = 0xFFFF'0000'0000'0000;
/// Dead at or above kAbortedBase: the member left the job for good (finished or failed).
inline constexpr bool is_final_incarnation(std::uint64_t incarnation) {
  return incarnation >= kAbortedBase;
}
/// The incarnation Core::abort declares: `status` (clamped to 0-255) and `rank` in it.
inline constexpr std::uint64_t aborted_incarnation(std::uint32_t rank, int status) {
  const auto code = static_cast<std::uint64_t>(status < 0 ? 0 : status > 255 ? 255 : status);
  return kAbortedBase | code << 32 | rank;
}
/// The failing rank and exit status an aborted incarnation carries.
inline constexpr std::uint32_t aborted_rank(std::uint64_t incarnation) {
  return static_cast<std::uint32_t>(incarnation & 0xFFFF'FFFFu);
}
inline constexpr int aborted_status(std::uint64_t incarnation) {
  return static_cast<int>((incarnation >> 32) & 0xFFFFu);
}

/// One row of the membership table as it travels. Newer = (generation, incarnation, status)
/// larger, with dead > suspect > alive at equal incarnation (SWIM's override order).
struct MemberRecord {
  Announcement ann;
  std::uint64_t incarnation = 0;
  MemberStatus status = MemberStatus::alive;
  /// For a suspect: a member that suspects it (the sender's latest known accuser). Lifeguard
  /// counts distinct accusers of one incarnation as independent confirmations, and each
  /// shortens the suspicion (suspicion.hpp). Empty when unknown and for other statuses.
  std::string accuser;

  bool operator==(const MemberRecord&) const = default;
};

/// Appends `record` to a message's `updates` unless they already name its member (the
/// records come from one table, so a second one would say the same and only cost bytes).
inline void add_update_once(std::vector<MemberRecord>& updates, MemberRecord record) {
  for (const auto& update : updates)
    if (update.ann.endpoint == record.ann.endpoint) return;
  updates.push_back(std::move(record));
}

/// The member left the job for good: dead at a final incarnation.
inline bool is_final_death(const MemberRecord& record) {
  return record.status == MemberStatus::dead && is_final_incarnation(record.incarnation);
}

/// A member of a view: endpoint plus generation, so a restarted process is a new member.
struct MemberKey {
  std::string endpoint;
  std::uint64_t generation = 0;

  auto operator<=>(const MemberKey&) const = default;
};

/// A view under agreement and what the sender knows of it (seen-by sets, Akka-style).
/// Bit i of a set refers to members[i]; sets merge by union.
struct ViewClaim {
  std::uint32_t round = 0;
  std::uint64_t attempt = 0;            ///< views are ordered by (attempt, digest)
  std::uint64_t digest = 0;             ///< hash of (round, members)
  std::vector<MemberKey> members;       ///< sorted
  std::vector<std::uint8_t> proposed;   ///< members seen holding this view
  std::vector<std::uint8_t> ready;      ///< members seen ready (they saw `proposed` full)
  std::vector<std::uint8_t> voted;      ///< members that saw `ready` full and vote for the view
  std::vector<std::uint8_t> committed;  ///< members seen committed (they saw a quorum of votes)
  std::vector<std::uint8_t> fenced;     ///< members that promised never to vote for it: one of
                                        ///< its members died or restarted before they saw
                                        ///< `ready` full
  /// Dedicated seeds of the quorum base that witnessed the view (sorted endpoints): each
  /// witnesses at most one view of a round that can still commit (docs/protocol.md).
  std::vector<std::string> witnesses;
  /// Indices into `members` of the members of the previous round's outcome, in the node-rank
  /// order they had there: they keep that order and come before the others (docs/protocol.md,
  /// "Rank assignment"). Empty in round 0, when the proposer did not know that outcome, and
  /// in a claim by reference. Part of the digest.
  std::vector<std::uint32_t> seniors;

  bool operator==(const ViewClaim&) const = default;
};

/// Joiner -> seed.
struct Join {
  MemberRecord self;

  bool operator==(const Join&) const = default;
};
/// Seed -> joiner: a bounded sample of members, never the whole table.
struct JoinReply {
  std::vector<MemberRecord> sample;
  bool seed_is_member = false;

  bool operator==(const JoinReply&) const = default;
};
/// SWIM probe; `updates` and `views` are piggybacked.
struct Ping {
  std::uint64_t seq = 0;
  std::vector<MemberRecord> updates;
  std::vector<ViewClaim> views;

  bool operator==(const Ping&) const = default;
};
struct Ack {
  std::uint64_t seq = 0;
  std::vector<MemberRecord> updates;
  std::vector<ViewClaim> views;

  bool operator==(const Ack&) const = default;
};
/// "Probe `target` for me": the receiver pings it and relays the ack.
struct PingReq {
  std::uint64_t seq = 0;
  std::string target;

  bool operator==(const PingReq&) const = default;
};
/// Gossip push; with `want_reply` (push-pull) the receiver answers with its own state.
struct Gossip {
  bool want_reply = false;
  std::vector<MemberRecord> updates;
  std::vector<ViewClaim> views;

  bool operator==(const Gossip&) const = default;
};
/// `members` command -> any node or seed.
struct Query {
  bool operator==(const Query&) const = default;
};
struct QueryReply {
  /// last_heard_ms entry of a member the replying node never heard from directly (or itself).
  static constexpr std::uint64_t kNeverHeard = UINT64_MAX;

  std::vector<MemberRecord> members;
  std::vector<ViewClaim> views;
  /// By index of `members`: how long before the reply the replying node last heard from that
  /// member itself, in ms, or kNeverHeard. Empty from a node that predates the field.
  std::vector<std::uint64_t> last_heard_ms;

  bool operator==(const QueryReply&) const = default;
};
enum class RefuseReason : std::uint8_t {
  run_id_mismatch = 1,
  version_mismatch = 2,
  bad_message = 3,
  /// Never sent in a Refuse: the transport drops a message without the job's key and answers
  /// with its own notice (transport/auth_notice.hpp); the runtime reports it under this reason.
  key_mismatch = 4
};
/// Sent instead of an answer to a peer of another run or version, so both sides can say so.
struct Refuse {
  RefuseReason reason = RefuseReason::bad_message;
  std::string detail;

  bool operator==(const Refuse&) const = default;
};

/// "Messages I send to your advertised endpoint get no answer": sent back over the connection
/// a message from that node arrived on (never to its advertised endpoint, which is the one
/// that does not work), so that the node whose address is wrong or firewalled learns it.
struct Unreachable {
  std::string tried_endpoint;        ///< the address the sender tried (the receiver's)
  std::uint64_t failing_for_ms = 0;  ///< since the first unanswered message, in ms
  std::uint32_t unanswered = 0;      ///< probes or join replies that got no answer
  bool operator==(const Unreachable&) const = default;
};

using Body = std::variant<Join, JoinReply, Ping, Ack, PingReq, Gossip, Query, QueryReply, Refuse,
                          Unreachable>;

/// The header every message carries, plus its body.
struct Envelope {
  std::uint16_t version = kProtocolVersion;
  std::string run_id;
  std::string sender;  ///< sender's endpoint (for a `members` client: its reply address)
  std::uint64_t sender_generation = 0;
  Body body;

  bool operator==(const Envelope&) const = default;
};

}  // namespace gossip_rdzv::protocol
