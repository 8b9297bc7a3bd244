#include "witness.hpp"

#include <algorithm>
#include <cassert>
#include <cstdlib>

#include "bitset.hpp"
#include "quorum_base.hpp"

namespace gossip_rdzv::protocol {
namespace {

// The locked view and the newest others are all a witness decides with: a release proof is a
// view above the locked one.
constexpr std::size_t kMaxKeptViews = 16;

bool merge_sets(ViewClaim& mine, const ViewClaim& claim) {
  const std::size_t size = mine.members.size();
  bool grew = false;
  for (auto [into, from] :
       {std::pair{&mine.proposed, &claim.proposed}, std::pair{&mine.ready, &claim.ready},
        std::pair{&mine.voted, &claim.voted}, std::pair{&mine.committed, &claim.committed},
        std::pair{&mine.fenced, &claim.fenced}}) {
    grew = bits::merge_within(*into, *from, size) || grew;
  }
  return merge_witnesses(mine.witnesses, claim.witnesses) || grew;
}

}  // namespace

Witness::Witness(std::string self, std::uint32_t round) : self_(std::move(self)), round_(round) {}

bool Witness::merge(const ViewClaim& claim) {
  if (claim.round != round_) return false;
  const ViewId id{claim.attempt, claim.digest};
  bool changed = false;
  auto it = views_.find(id);
  if (it == views_.end()) {
    if (claim.members.empty()) return false;
    ViewClaim stored = claim;
    for (auto* set :
         {&stored.proposed, &stored.ready, &stored.voted, &stored.committed, &stored.fenced}) {
      set->resize(bits::bytes_for(stored.members.size()));
      bits::trim(*set, stored.members.size());
    }
    views_.emplace(id, std::move(stored));
    changed = true;
  } else {
    changed = merge_sets(it->second, claim);
  }
  changed = release_if_dead() || changed;
  changed = witness_highest_ready() || changed;
  prune();
  return changed;
}

bool Witness::release_if_dead() {
  if (!locked_) return false;
  const ViewClaim& held = views_.at(*locked_);
  bool dead = blocking(held.fenced, held.members.size());
  for (auto it = views_.upper_bound(*locked_); it != views_.end() && !dead; ++it) {
    const ViewClaim& higher = it->second;
    for (std::size_t i = 0; i < higher.members.size() && !dead; ++i) {
      // A member of the locked view holds a higher one: by rule 1 it is never ready on ours
      // again, and since it left, our view's ready set was never full everywhere it counts
      // (docs/protocol.md, "Why no two nodes commit different views").
      dead = bits::get(higher.proposed, i) &&
             std::binary_search(held.members.begin(), held.members.end(), higher.members[i]);
    }
  }
  if (dead) locked_.reset();
  return dead;
}

bool Witness::witness_highest_ready() {
  if (locked_) return false;
  for (auto it = views_.rbegin(); it != views_.rend(); ++it) {
    ViewClaim& view = it->second;
    const std::size_t size = view.members.size();
    if (!bits::full(view.ready, size) || blocking(view.fenced, size)) continue;
    locked_ = it->first;
    merge_witnesses(view.witnesses, {self_});
    return true;
  }
  return false;
}

void Witness::prune() {
  while (views_.size() > kMaxKeptViews) {
    auto lowest = views_.begin();
    if (locked_ && lowest->first == *locked_) ++lowest;
    views_.erase(lowest);
  }
}

std::optional<ViewClaim> Witness::answer(const ViewClaim& asked) const {
  auto it = views_.find(ViewId{asked.attempt, asked.digest});
  if (asked.round != round_ || it == views_.end()) return std::nullopt;
  return it->second;
}

void Witness::check_invariants() const {
  auto fail = [](const char* what) {
    (void)what;
    assert(false && what);
    std::abort();
  };
  for (const auto& [id, view] : views_) {
    const bool ours = std::binary_search(view.witnesses.begin(), view.witnesses.end(), self_);
    if (ours && !bits::full(view.ready, view.members.size()))
      fail("witnessed a view whose ready set is not full");
    if (locked_ && id == *locked_ && !ours) fail("locked on a view we did not witness");
  }
  if (locked_ && !views_.count(*locked_)) fail("locked view was pruned");
}

}  // namespace gossip_rdzv::protocol
