// One copy of what many holders would otherwise each copy: announcements (they never change
// for one process) and view member lists (every node of a round holds the same few).
//
// A runtime core owns its pool, which holds one entry per process it ever heard of. The
// simulator hands one pool to all its cores: N cores that each know N members then share N
// announcements instead of holding N^2 copies, which is what lets one process simulate
// 10,000 nodes. Interning is deterministic and has no effect on protocol behaviour.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "messages.hpp"

namespace gossip_rdzv::protocol {

using MemberList = std::vector<MemberKey>;

class InternPool {
 public:
  /// The pool's copy of `ann` (equal in every field), added if new. The reference stays valid
  /// as long as the pool lives.
  const Announcement& announcement(const Announcement& ann);
  /// A shared, immutable copy of `members`, named by `digest` (the view's digest): the same
  /// list interned twice gives the same object while some holder keeps it alive.
  std::shared_ptr<const MemberList> members(std::uint64_t digest, MemberList members);

  std::size_t announcement_count() const { return announcements_.size(); }

 private:
  struct AnnouncementHash {
    std::size_t operator()(const Announcement& ann) const;
  };
  std::unordered_set<Announcement, AnnouncementHash> announcements_;
  std::unordered_multimap<std::uint64_t, std::weak_ptr<const MemberList>> lists_;
};

/// FNV-1a 64: folds `size` bytes into `hash` (start from kFnvOffset); stable across platforms.
inline constexpr std::uint64_t kFnvOffset = 0xcbf29ce484222325ULL;
std::uint64_t fnv1a(std::uint64_t hash, const void* data, std::size_t size);
/// FNV-1a 64 of a string: the member table's index hash.
std::uint64_t endpoint_hash(std::string_view endpoint);

}  // namespace gossip_rdzv::protocol
