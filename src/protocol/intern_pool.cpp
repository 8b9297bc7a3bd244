#include "intern_pool.hpp"

namespace gossip_rdzv::protocol {

std::uint64_t fnv1a(std::uint64_t hash, const void* data, std::size_t size) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < size; ++i) {
    hash ^= bytes[i];
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

std::uint64_t endpoint_hash(std::string_view endpoint) {
  return fnv1a(kFnvOffset, endpoint.data(), endpoint.size());
}

std::size_t InternPool::AnnouncementHash::operator()(const Announcement& ann) const {
  // Endpoint, generation and node id tell processes apart; equality checks the rest.
  return static_cast<std::size_t>(endpoint_hash(ann.endpoint) ^
                                  (ann.generation * 0x9e3779b97f4a7c15ULL) ^ ann.node_id);
}

const Announcement& InternPool::announcement(const Announcement& ann) {
  return *announcements_.insert(ann).first;
}

std::shared_ptr<const MemberList> InternPool::members(std::uint64_t digest, MemberList members) {
  auto [first, last] = lists_.equal_range(digest);
  for (auto it = first; it != last;) {
    if (auto held = it->second.lock()) {
      if (*held == members) return held;
      ++it;
    } else {
      it = lists_.erase(it);  // nobody holds that list any more
    }
  }
  auto shared = std::make_shared<const MemberList>(std::move(members));
  lists_.emplace(digest, shared);
  return shared;
}

}  // namespace gossip_rdzv::protocol
