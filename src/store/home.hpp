// Which member of the agreed view is the home of a key: rendezvous hashing (highest random
// weight, Thaler & Ravishankar 1996). Every node computes the same home from the same view,
// keys spread evenly over the members, and a member's departure only moves its own keys.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gossip_rdzv::store {

/// A stable 64-bit hash of `bytes` (FNV-1a, then murmur3's finaliser): the same on every
/// platform and standard library, unlike std::hash.
std::uint64_t stable_hash(std::string_view bytes);

class HomeMap {
 public:
  /// `members`: the gossip endpoints of the agreed view (any order; the result does not
  /// depend on it). Must not be empty.
  explicit HomeMap(std::vector<std::string> members);

  /// Index into members() of the home of `key`: the member with the highest
  /// score(key, member). Ties (a 2^-64 event) go to the smaller endpoint.
  std::size_t home_index(std::string_view key) const;
  const std::string& home_of(std::string_view key) const { return members_[home_index(key)]; }

  const std::vector<std::string>& members() const { return members_; }
  std::size_t size() const { return members_.size(); }

 private:
  std::vector<std::string> members_;          ///< sorted, so ties break the same everywhere
  std::vector<std::uint64_t> member_hashes_;  ///< stable_hash of each member, precomputed
};

}  // namespace gossip_rdzv::store
