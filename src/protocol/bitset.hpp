// Seen-by sets of a view: bit i stands for the view's members[i]. They only ever grow (merge
// is a union), which is what makes stale copies harmless: a bit is set only by its owner.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace gossip_rdzv::protocol::bits {

using Bytes = std::vector<std::uint8_t>;

inline std::size_t bytes_for(std::size_t members) {
  return (members + 7) / 8;
}

inline Bytes empty(std::size_t members) {
  return Bytes(bytes_for(members), 0);
}

inline bool get(const Bytes& set, std::size_t index) {
  return index / 8 < set.size() && ((set[index / 8] >> (index % 8)) & 1u) != 0;
}

inline void set(Bytes& set, std::size_t index) {
  if (index / 8 < set.size())
    set[index / 8] = static_cast<std::uint8_t>(set[index / 8] | (1u << (index % 8)));
}

/// ORs `other` into `into`; returns true if `into` gained a bit. Sizes must match (the codec
/// rejects claims whose set sizes do not fit their member count).
inline bool merge(Bytes& into, const Bytes& other) {
  bool grew = false;
  for (std::size_t i = 0; i < into.size() && i < other.size(); ++i) {
    const auto merged = static_cast<std::uint8_t>(into[i] | other[i]);
    grew = grew || merged != into[i];
    into[i] = merged;
  }
  return grew;
}

/// Sets or clears bit `index` (ignored past the set).
inline void assign(Bytes& set, std::size_t index, bool value) {
  if (index / 8 >= set.size()) return;
  const auto bit = static_cast<unsigned>(1u << (index % 8));
  set[index / 8] = static_cast<std::uint8_t>(value ? set[index / 8] | bit : set[index / 8] & ~bit);
}

/// ORs the first `members` bits of `other` into `into`, except bit `except` (bits past them,
/// and bytes past either set, are ignored: `other` came from a peer); returns true if `into`
/// gained a bit. Pass `except` >= `members` to take every bit.
inline bool merge_within(Bytes& into, const Bytes& other, std::size_t members,
                         std::size_t except = SIZE_MAX) {
  const std::size_t n = std::min({into.size(), other.size(), bytes_for(members)});
  bool grew = false;
  for (std::size_t i = 0; i < n; ++i) {
    auto incoming = other[i];
    if (i + 1 == bytes_for(members) && members % 8 != 0)
      incoming = static_cast<std::uint8_t>(incoming & ((1u << (members % 8)) - 1u));
    if (except / 8 == i) incoming = static_cast<std::uint8_t>(incoming & ~(1u << (except % 8)));
    const auto merged = static_cast<std::uint8_t>(into[i] | incoming);
    grew = grew || merged != into[i];
    into[i] = merged;
  }
  return grew;
}

/// The bits of byte members / 8 that belong to members 0..members-1 (0 when members % 8 is 0:
/// that byte is past the set).
inline unsigned tail_mask(std::size_t members) {
  return (1u << (members % 8)) - 1u;
}

/// Clears bits past `members` in the last byte, so a peer cannot make a set look full.
inline void trim(Bytes& set, std::size_t members) {
  set.resize(bytes_for(members), 0);
  if (members % 8 != 0 && !set.empty()) {
    set.back() = static_cast<std::uint8_t>(set.back() & tail_mask(members));
  }
}

inline std::size_t count(const Bytes& set) {
  std::size_t total = 0;
  for (auto byte : set) total += static_cast<std::size_t>(__builtin_popcount(byte));
  return total;
}

/// Set bits among 0..members-1 (bits past them do not count).
inline std::size_t count_within(const Bytes& set, std::size_t members) {
  std::size_t total = 0;
  const std::size_t whole = std::min(set.size(), members / 8);
  for (std::size_t i = 0; i < whole; ++i)
    total += static_cast<std::size_t>(__builtin_popcount(set[i]));
  if (members % 8 != 0 && members / 8 < set.size()) {
    total += static_cast<std::size_t>(__builtin_popcount(set[members / 8] & tail_mask(members)));
  }
  return total;
}

inline bool full(const Bytes& set, std::size_t members) {
  return count(set) == members;
}

inline bool any(const Bytes& set) {
  for (auto byte : set)
    if (byte != 0) return true;
  return false;
}

}  // namespace gossip_rdzv::protocol::bits
