// The quorum base of a round: a fixed set of endpoints that every view of the round must win
// a majority of before it commits. Round 0's base is the seed list every node of the job was
// started with. Two views that each won a majority of one base share a base endpoint, so
// they cannot be disjoint groups (docs/protocol.md, "Quorum base").
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bitset.hpp"
#include "messages.hpp"

namespace gossip_rdzv::protocol {

class QuorumBase {
 public:
  QuorumBase() = default;
  /// Any order, duplicates allowed; kept sorted and unique.
  explicit QuorumBase(std::vector<std::string> endpoints);

  /// No base (a core given no seeds, as some tests build): every view's base is reached.
  bool empty() const { return endpoints_.empty(); }
  const std::vector<std::string>& endpoints() const { return endpoints_; }
  bool contains(const std::string& endpoint) const;
  /// FNV-1a of the sorted endpoints: part of every view's digest, so nodes started with
  /// different seed lists never hold the same view.
  std::uint64_t digest() const { return digest_; }

  /// How many base endpoints vote for a view (a member at that endpoint has its `voted` bit)
  /// or witnessed it (a dedicated seed at that endpoint is in `witnesses`).
  std::size_t won(const std::vector<MemberKey>& members, const bits::Bytes& voted,
                  const std::vector<std::string>& witnesses) const;
  /// The base endpoints that neither voted nor witnessed (the rest of won()).
  std::vector<std::string> missing(const std::vector<MemberKey>& members, const bits::Bytes& voted,
                                   const std::vector<std::string>& witnesses) const;
  /// Whether won() is more than half of the base.
  bool reached(const std::vector<MemberKey>& members, const bits::Bytes& voted,
               const std::vector<std::string>& witnesses) const;
  /// Whether the view can still win the base: the base endpoints that are members of it and
  /// have not fenced it (`fenced`: the view's fence bits; a fence is a promise never to vote)
  /// plus those outside it that may still witness are more than half. A base endpoint
  /// outside the view where `is_member_process` finds a member process (a member seed, which
  /// never witnesses) can never count for it. False means the view can never commit: holding
  /// or being ready on it protects nothing. A decided view never turns false: its base
  /// voters never fence it and its witnesses stay.
  bool can_win(const std::vector<MemberKey>& members, const bits::Bytes& fenced,
               const std::function<bool(const std::string&)>& is_member_process) const;
  /// Base endpoints that are no member of the view and have not witnessed it: the dedicated
  /// seeds (or absent member seeds) a voter asks for a witness.
  std::vector<std::string> to_ask(const std::vector<MemberKey>& members,
                                  const std::vector<std::string>& witnesses) const;

 private:
  /// Whether `endpoint` voted for the view (a member there, any generation) or witnessed it.
  static bool counts(const std::string& endpoint, const std::vector<MemberKey>& members,
                     const bits::Bytes& voted, const std::vector<std::string>& witnesses);
  /// Whether a member process at `endpoint` has not fenced the view.
  static bool may_vote(const std::string& endpoint, const std::vector<MemberKey>& members,
                       const bits::Bytes& fenced);

  std::vector<std::string> endpoints_;
  std::uint64_t digest_ = 0;
};

/// How the view a node holds stands with the round's quorum base, the seed list
/// (docs/protocol.md, "Quorum base"): a view whose members are all ready may still wait for
/// a majority of the seeds to vote (member seeds) or witness it (dedicated seeds).
struct SeedQuorum {
  std::size_t won = 0;               ///< seed endpoints that voted or witnessed
  std::size_t size = 0;              ///< seed endpoints in the list (0: no base condition)
  std::vector<std::string> missing;  ///< seed endpoints that did not (yet)
  bool all_ready = false;            ///< every member of the held view is ready on it
};

/// Unions `other` into `into` (both sorted and unique: the codec checks a claim's witnesses);
/// true if `into` grew.
bool merge_witnesses(std::vector<std::string>& into, const std::vector<std::string>& other);

/// Whether `endpoint` is the endpoint of some member of the sorted list (any generation).
bool has_member_at(const std::vector<MemberKey>& members, const std::string& endpoint);

}  // namespace gossip_rdzv::protocol
