// A dedicated seed's part in agreement: it is no member of any view, but it is a base
// endpoint (quorum_base.hpp), so a view commits only if enough such seeds witnessed it.
//
// The witness acts as one more voter that every view of the round shares: it witnesses a
// view once every member of it is ready (ready full: every member is locked on it, as a vote
// requires), and then witnesses no other view until that one is provably dead by the same
// tests a ready member uses: a blocking set of its members fenced it, or one of its members
// holds a higher view. Two views that each won the base therefore share a member process or
// a witness, and neither can have committed unless they are the same view.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "agreement.hpp"
#include "messages.hpp"

namespace gossip_rdzv::protocol {

class Witness {
 public:
  Witness(std::string self, std::uint32_t round);

  /// Merges a member's claim (it must carry its members, as every claim sent to a seed does;
  /// a reference to a view we do not know is ignored) and witnesses what it may. Returns
  /// true when our copy of some view changed.
  bool merge(const ViewClaim& claim);
  /// Our copy of the view `asked` names, with its members, if we know it.
  std::optional<ViewClaim> answer(const ViewClaim& asked) const;
  /// The view we witnessed and have not released, if any.
  std::optional<ViewId> locked() const { return locked_; }

  void check_invariants() const;

 private:
  bool release_if_dead();
  bool witness_highest_ready();
  void prune();

  std::string self_;
  std::uint32_t round_ = 0;
  std::map<ViewId, ViewClaim> views_;  ///< full claims: members and sets
  std::optional<ViewId> locked_;
};

}  // namespace gossip_rdzv::protocol
