#include "store/home.hpp"

#include <algorithm>
#include <cassert>

namespace gossip_rdzv::store {
namespace {

// murmur3's 64-bit finaliser: every input bit flips each output bit with probability ~1/2,
// which rendezvous hashing needs so that scores of one key over many members are independent.
std::uint64_t mix64(std::uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

std::uint64_t score(std::uint64_t key_hash, std::uint64_t member_hash) {
  // Multiplying by the golden-ratio constant first keeps (key, member) and (member, key)
  // apart, so swapping two hashes does not give equal scores.
  return mix64(key_hash * 0x9e3779b97f4a7c15ULL ^ member_hash);
}

}  // namespace

std::uint64_t stable_hash(std::string_view bytes) {
  std::uint64_t hash = 0xcbf29ce484222325ULL;  // FNV-1a 64-bit offset basis and prime
  for (const char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
  return mix64(hash);
}

HomeMap::HomeMap(std::vector<std::string> members) : members_(std::move(members)) {
  assert(!members_.empty());
  std::sort(members_.begin(), members_.end());
  members_.erase(std::unique(members_.begin(), members_.end()), members_.end());
  member_hashes_.reserve(members_.size());
  for (const auto& member : members_) member_hashes_.push_back(stable_hash(member));
}

std::size_t HomeMap::home_index(std::string_view key) const {
  const std::uint64_t key_hash = stable_hash(key);
  std::size_t best = 0;
  std::uint64_t best_score = score(key_hash, member_hashes_[0]);
  for (std::size_t i = 1; i < member_hashes_.size(); ++i) {
    const std::uint64_t candidate = score(key_hash, member_hashes_[i]);
    if (candidate > best_score) {  // strict: on a tie the earlier (smaller) endpoint stays
      best = i;
      best_score = candidate;
    }
  }
  return best;
}

}  // namespace gossip_rdzv::store
