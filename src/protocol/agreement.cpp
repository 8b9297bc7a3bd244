// The agreement rules of docs/protocol.md ("Agreement", rules 1-8) in one file, on purpose:
// the safety argument reads them together, so they stay side by side rather than split by size.
#include "agreement.hpp"

#include <algorithm>
#include <cassert>
#include <cstdio>
#include <cstdlib>

#include "bitset.hpp"

namespace gossip_rdzv::protocol {
namespace {

constexpr std::size_t kMaxKeptViews = 32;  // held, committed and the newest few are all we use

std::optional<std::size_t> index_in(const std::vector<MemberKey>& members, const MemberKey& key) {
  auto it = std::lower_bound(members.begin(), members.end(), key);
  if (it == members.end() || !(*it == key)) return std::nullopt;
  return static_cast<std::size_t>(it - members.begin());
}

bool strictly_sorted(const std::vector<MemberKey>& members) {
  for (std::size_t i = 1; i < members.size(); ++i) {
    if (!(members[i - 1] < members[i])) return false;
  }
  return true;
}

bool includes(const std::vector<MemberKey>& outer, const std::vector<MemberKey>& inner) {
  return std::includes(outer.begin(), outer.end(), inner.begin(), inner.end());
}

// Seniors are distinct indices into the member list.
bool well_formed_seniors(const std::vector<std::uint32_t>& seniors, std::size_t members) {
  if (seniors.size() > members) return false;
  std::vector<bool> seen(members, false);
  for (const std::uint32_t i : seniors) {
    if (i >= members || seen[i]) return false;
    seen[i] = true;
  }
  return true;
}

}  // namespace

bool quorum(const std::vector<std::uint8_t>& set, std::size_t members) {
  // More than half: any two such sets share a member, and one member of a view of two is no
  // quorum, so nobody commits on its own vote (an even view's tie is no outcome: it waits).
  return 2 * bits::count_within(set, members) > members;
}

bool blocking(const std::vector<std::uint8_t>& set, std::size_t members) {
  return members > 0 && 2 * bits::count_within(set, members) >= members;
}

std::uint64_t view_digest(std::uint32_t round, std::uint64_t base_digest,
                          const std::vector<MemberKey>& members,
                          const std::vector<std::uint32_t>& seniors) {
  std::uint64_t hash = fnv1a(kFnvOffset, &round, sizeof round);
  hash = fnv1a(hash, &base_digest, sizeof base_digest);
  for (const auto& key : members) {
    hash = fnv1a(hash, key.endpoint.data(), key.endpoint.size());
    const char separator = 0;
    hash = fnv1a(hash, &separator, 1);
    hash = fnv1a(hash, &key.generation, sizeof key.generation);
  }
  // After the members: a count then the indices, so that no member list and seniors
  // together hash like another pair (members are separated above, seniors are fixed-size).
  if (!seniors.empty()) {
    const auto count = static_cast<std::uint64_t>(seniors.size());
    hash = fnv1a(hash, &count, sizeof count);
    for (const std::uint32_t i : seniors) hash = fnv1a(hash, &i, sizeof i);
  }
  return hash;
}

bool decided(const ViewClaim& claim, const std::vector<MemberKey>& members,
             const QuorumBase& base) {
  return quorum(claim.voted, members.size()) && base.reached(members, claim.voted, claim.witnesses);
}

Agreement::Agreement(AgreementConfig config) : config_(std::move(config)) {
  if (!config_.pool) config_.pool = std::make_shared<InternPool>();
  if (config_.previous) {
    previous_sorted_ = *config_.previous;
    std::sort(previous_sorted_.begin(), previous_sorted_.end());
  }
}

ViewClaim Agreement::full_claim(const View& view) const {
  ViewClaim claim = view.claim;
  claim.members = *view.members;
  claim.seniors = view.seniors;
  return claim;
}

std::optional<std::vector<std::uint32_t>> Agreement::seniors_for(const MemberList& members) const {
  if (!config_.previous) return std::nullopt;
  std::vector<std::uint32_t> seniors;
  for (const MemberKey& key : *config_.previous) {
    if (auto i = index_in(members, key)) seniors.push_back(static_cast<std::uint32_t>(*i));
  }
  return seniors;
}

void Agreement::note_knows(const View& view, const MemberKey& key) const {
  const auto& members = *view.members;
  auto it = std::lower_bound(members.begin(), members.end(), key);
  if (it == members.end() || !(*it == key)) return;
  if (view.members_sent.empty()) view.members_sent = bits::empty(members.size());
  bits::set(view.members_sent, static_cast<std::size_t>(it - members.begin()));
}

bool Agreement::merge(const ViewClaim& claim, const MemberKey* from) {
  if (claim.round != config_.round) return false;
  const ViewId id{claim.attempt, claim.digest};
  auto it = views_.find(id);
  if (from != nullptr && it != views_.end()) note_knows(it->second, *from);
  if (it == views_.end()) {
    // A view we do not know must come with its members (a claim by reference to a view we
    // never held, or pruned, teaches nothing), and they must be the ones its digest names.
    if (claim.members.empty() || !strictly_sorted(claim.members)) return false;
    if (!well_formed_seniors(claim.seniors, claim.members.size())) return false;
    if (view_digest(claim.round, config_.base.digest(), claim.members, claim.seniors) !=
        claim.digest)
      return false;
    const std::size_t size = claim.members.size();
    // Not a copy of `claim` then clear(): the stored claim would keep the member list's
    // capacity (~40 B a member, for every view of every node: gigabytes in a large
    // simulation).
    ViewClaim incoming{claim.round, claim.attempt, claim.digest,    {},           claim.proposed,
                       claim.ready, claim.voted,   claim.committed, claim.fenced, claim.witnesses,
                       {}};
    for (auto* set : {&incoming.proposed, &incoming.ready, &incoming.voted, &incoming.committed,
                      &incoming.fenced}) {
      bits::trim(*set, size);
    }
    // A vote is only believable next to a full ready set, a commit bit next to a quorum of
    // votes: that is what each certifies.
    // Our own bits are what we set, never what a peer says we set: in a view we did not know
    // we hold none but the fence we remember promising.
    if (auto self = index_in(claim.members, config_.self)) {
      for (auto* set :
           {&incoming.proposed, &incoming.ready, &incoming.voted, &incoming.committed}) {
        bits::assign(*set, *self, false);
      }
      bits::assign(incoming.fenced, *self, fenced_.count(id) != 0);
    }
    if (!bits::full(incoming.ready, size)) incoming.voted = bits::empty(size);
    if (!protocol::decided(incoming, claim.members, config_.base))
      incoming.committed = bits::empty(size);
    max_attempt_ = std::max(max_attempt_, claim.attempt);
    View view;
    view.claim = std::move(incoming);
    view.members = config_.pool->members(claim.digest, claim.members);
    view.seniors = claim.seniors;
    if (auto wanted = seniors_for(claim.members)) view.acceptable = *wanted == claim.seniors;
    if (from != nullptr) note_knows(view, *from);
    views_.emplace(id, std::move(view));
    dirty_ = true;
    return true;
  }
  // A known view: its id names the members we checked when we stored it, so only the bits
  // count (a claim by reference carries nothing else). Bits past the view's size are ignored.
  ViewClaim& mine = it->second.claim;
  const std::size_t size = it->second.members->size();
  // Our own bit is never taken from a peer: a forged or corrupt claim must not vote, commit or
  // fence for us.
  const std::size_t self = my_index(it->second).value_or(size);
  bool grew = bits::merge_within(mine.proposed, claim.proposed, size, self);
  grew = bits::merge_within(mine.ready, claim.ready, size, self) || grew;
  // Votes are believable next to a full ready set of ours: the claim's could be full only
  // through our own ready bit, which we never take from a peer.
  if (bits::full(mine.ready, size)) {
    grew = bits::merge_within(mine.voted, claim.voted, size, self) || grew;
  }
  grew = merge_witnesses(mine.witnesses, claim.witnesses) || grew;
  // A commit bit is believable once what we now hold certifies the outcome.
  if (decided(it->second))
    grew = bits::merge_within(mine.committed, claim.committed, size, self) || grew;
  grew = bits::merge_within(mine.fenced, claim.fenced, size, self) || grew;
  dirty_ = dirty_ || grew;
  return grew;
}

std::optional<std::size_t> Agreement::my_index(const View& view) const {
  return index_in(*view.members, config_.self);
}

bool Agreement::can_win_base(const MemberList& members, const bits::Bytes& fenced,
                             const MemberTable& table) const {
  return config_.base.can_win(members, fenced, [&](const std::string& endpoint) {
    return table.find(endpoint) != nullptr;
  });
}

bool Agreement::valid(const View& view, const MemberTable& table, bool complete) const {
  // Outside the cache: a seed's first row (not a liveness change) can settle it, and it costs
  // a lookup per seed.
  if (!can_win_base(*view.members, view.claim.fenced, table)) return false;
  View::Validity& cache = complete ? view.complete_validity : view.hold_validity;
  // Adding a live row cannot make a view unfit to hold, only to be ready on: while tables
  // fill (N rows, one at a time) the hold check runs again only on deaths and restarts.
  const std::uint64_t version = complete ? table.version() : table.liveness_version();
  if (!complete) {
    // A first row for a member's endpoint can name a newer process than the view does.
    update_superseded(view, table);
    if (!view.superseded.empty()) return false;
  }
  if (cache.at_version == version) return cache.result;
  cache.at_version = version;
  cache.result = false;
  const std::size_t size = view.members->size();
  if (size < config_.min_nodes || size > config_.max_nodes) return false;
  if (complete && size > table.live_count()) return false;  // cheap: a member is missing
  if (!my_index(view)) return false;
  for (const auto& key : *view.members) {
    const Member* row = table.find(key.endpoint);
    if (row == nullptr) {
      // Not known dead: the proposer saw it alive, and our table pull (names_members_we_lack)
      // brings its row. Holding such a view at once stops each of our peers from sending us
      // its whole member list meanwhile (in large clusters, most of the CPU). Being ready
      // still waits for every row, so a node that commits knows every announcement.
      if (complete) return false;
      continue;
    }
    if (row->ann->generation > key.generation) return false;  // that process restarted
    if (row->ann->generation < key.generation && complete) return false;
    if (row->ann->generation == key.generation && row->status == MemberStatus::dead) return false;
  }
  cache.result = true;
  return true;
}

void Agreement::update_superseded(const View& view, const MemberTable& table) const {
  const auto& log = table.generation_log();
  const auto& members = *view.members;
  auto mark = [&](std::size_t index) {
    const auto i = static_cast<std::uint32_t>(index);
    if (std::find(view.superseded.begin(), view.superseded.end(), i) == view.superseded.end())
      view.superseded.push_back(i);
  };
  if (view.generation_log_seen == 0 && log.size() > members.size()) {
    // First look at this view: one lookup per member beats replaying a longer table log.
    for (std::size_t i = 0; i < members.size(); ++i) {
      const Member* row = table.find(members[i].endpoint);
      if (row != nullptr && row->ann->generation > members[i].generation) mark(i);
    }
    view.generation_log_seen = log.size();
    return;
  }
  // Then only rows whose generation appeared or changed since the last look can name a
  // newer process of one of our members: O(new entries * log N), not O(N) per step.
  auto endpoint_less = [](const MemberKey& key, const std::string& endpoint) {
    return key.endpoint < endpoint;
  };
  for (; view.generation_log_seen < log.size(); ++view.generation_log_seen) {
    const Member& row = table.rows()[log[view.generation_log_seen]];
    auto it = std::lower_bound(members.begin(), members.end(), row.ann->endpoint, endpoint_less);
    for (; it != members.end() && it->endpoint == row.ann->endpoint; ++it) {
      if (it->generation < row.ann->generation)
        mark(static_cast<std::size_t>(it - members.begin()));
    }
  }
}

const MemberList* Agreement::candidate(Time now, const MemberTable& table) {
  const std::size_t live = table.live_count();
  if (live < config_.min_nodes) {
    min_reached_at_.reset();
    last_call_end_.reset();
    last_call_over_ = false;
    return nullptr;
  }
  if (!min_reached_at_) min_reached_at_ = now;
  if (live < config_.max_nodes && !last_call_over_) {
    // torchrun's last call: MIN is there, wait a little for more before closing the view.
    last_call_end_ = *min_reached_at_ + last_call_for(table);
    if (now < *last_call_end_) return nullptr;
  }
  last_call_end_.reset();
  last_call_over_ = true;
  if (seen_table_version_ != table.version()) {
    // Sorted live members, built only when a view can be formed and the table changed.
    seen_table_version_ = table.version();
    auto live = table.live_keys();
    if (live.size() > config_.max_nodes) {
      // More than MAX: the seeds first, so that the view can win the quorum base, then the
      // others in member-key order (the same choice on every node with the same table).
      std::stable_partition(live.begin(), live.end(), [&](const MemberKey& key) {
        return config_.base.contains(key.endpoint);
      });
      live.resize(config_.max_nodes);
      std::sort(live.begin(), live.end());
    }
    const std::uint64_t digest = view_digest(config_.round, config_.base.digest(), live);
    live_ = config_.pool->members(digest, std::move(live));
  }
  return live_.get();
}

Time Agreement::last_call_for(const MemberTable& table) {
  if (!config_.previous || !config_.settle || *config_.settle >= config_.last_call)
    return config_.last_call;
  if (newcomers_version_ != table.version()) {
    newcomers_version_ = table.version();
    const auto live = table.live_keys();
    no_newcomer_ = std::all_of(live.begin(), live.end(), [&](const MemberKey& key) {
      return std::binary_search(previous_sorted_.begin(), previous_sorted_.end(), key);
    });
  }
  return no_newcomer_ ? *config_.settle : config_.last_call;
}

const Agreement::View* Agreement::highest() const {
  return views_.empty() ? nullptr : &views_.rbegin()->second;
}

bool Agreement::fence(const MemberTable& table) {
  bool changed = false;
  for (auto& [id, view] : views_) {
    ViewClaim& claim = view.claim;
    const std::size_t size = view.members->size();
    auto index = my_index(view);
    // A node that saw ready full votes instead (advance), and ready bits are never cleared:
    // a vote and a fence never meet (check_invariants holds both).
    if (!index || bits::get(claim.fenced, *index) || bits::full(claim.ready, size)) continue;
    update_superseded(view, table);
    bool missing_restarted = false;
    for (std::uint32_t i : view.superseded) {
      missing_restarted = missing_restarted || !bits::get(claim.ready, i);
    }
    // Ready on the view we hold, and one of its members is dead (or restarted): its ready bit
    // may never come, and a member that had it may have voted. We cannot tell which, so we
    // promise never to vote; a quorum of such promises proves the view can never commit.
    const bool member_gone = ready_ && held_ && id == *held_ && !valid(view, table, false);
    if (!missing_restarted && !member_gone) continue;
    bits::set(claim.fenced, *index);
    fenced_.insert(id);
    changed = true;
  }
  return changed;
}

bool Agreement::release_if_dead(const MemberTable& table) {
  if (!ready_ || !held_) return false;
  const View& held = views_.at(*held_);
  const auto& members = *held.members;
  if (!can_win_base(*held.members, held.claim.fenced, table)) {
    // Too few seeds are members of it that have not fenced it, or can still witness it: it
    // can never commit (e.g. two groups partitioned around two seeds, each ready on its own
    // half; or a member seed fenced it while a quorum of the others voted).
    ready_ = false;
    return true;
  }
  // A blocking set of fences meets every quorum of votes in a member that never voted: the
  // view can never commit, so holding it protects nothing. (A restart is no fence: the old
  // process may have voted, and only its own fence bit would prove it did not.)
  if (blocking(held.claim.fenced, members.size())) {
    ready_ = false;
    return true;
  }
  for (auto it = views_.upper_bound(*held_); it != views_.end(); ++it) {
    const ViewClaim& higher = it->second.claim;
    const auto& higher_members = *it->second.members;
    for (std::size_t i = 0; i < higher_members.size(); ++i) {
      if (!bits::get(higher.proposed, i)) continue;
      if (std::binary_search(members.begin(), members.end(), higher_members[i])) {
        // That member holds a higher view and, holding views in increasing order, will never
        // be ready on ours: our view can never commit, so our lock on it protects nothing.
        ready_ = false;
        return true;
      }
    }
  }
  return false;
}

ViewId Agreement::ensure_view(const std::shared_ptr<const MemberList>& members,
                              const std::vector<std::uint32_t>& seniors,
                              std::optional<ViewId> above) {
  if (held_ && (!above || *above < *held_)) above = held_;
  for (auto it = views_.rbegin(); it != views_.rend(); ++it) {
    if (above && !(*above < it->first)) break;
    if (!it->second.acceptable) continue;
    if (it->second.members == members || *it->second.members == *members) return it->first;
  }
  const auto known = seniors_for(*members);
  const std::vector<std::uint32_t>& named = known ? *known : seniors;
  ViewId id{max_attempt_ + 1, view_digest(config_.round, config_.base.digest(), *members, named)};
  max_attempt_ = id.attempt;
  View view;
  view.claim.round = config_.round;
  view.claim.attempt = id.attempt;
  view.claim.digest = id.digest;
  view.members = members;
  view.seniors = named;
  view.claim.proposed = bits::empty(members->size());
  view.claim.ready = bits::empty(members->size());
  view.claim.voted = bits::empty(members->size());
  view.claim.committed = bits::empty(members->size());
  view.claim.fenced = bits::empty(members->size());
  views_.emplace(id, std::move(view));
  return id;
}

bool Agreement::choose_held(Time now, const MemberTable& table) {
  if (ready_) return false;
  const MemberList* wanted = candidate(now, table);
  const View* best = nullptr;
  for (auto it = views_.rbegin(); it != views_.rend(); ++it) {
    // A view we fenced, or a quorum fenced, can never commit (a member buried by mistake may
    // make it valid again): offer its members under a new id instead.
    if (fenced_.count(it->first) || blocking(it->second.claim.fenced, it->second.members->size()))
      continue;
    // Seniors other than the previous outcome's, which we know: members that know it will
    // not hold it either (AgreementConfig::previous).
    if (!it->second.acceptable) continue;
    if (valid(it->second, table, false)) {
      best = &it->second;
      break;
    }
  }
  // A candidate that cannot win the quorum base (a group cut off from the seeds) is not
  // proposed: it could never commit, and holding it would only delay the group's return.
  const bool wanted_has_me = wanted &&
                             std::binary_search(wanted->begin(), wanted->end(), config_.self) &&
                             can_win_base(*wanted, {}, table);
  std::optional<ViewId> target;
  if (wanted_has_me) {
    const ViewId best_id =
        best == nullptr ? ViewId{} : ViewId{best->claim.attempt, best->claim.digest};
    if (best != nullptr &&
        (includes_cache_.view != best_id || includes_cache_.table_version != seen_table_version_)) {
      includes_cache_ = {best_id, seen_table_version_, includes(*best->members, *wanted)};
    }
    if (best != nullptr && includes_cache_.result) {
      target = best_id;
    } else {
      target = ensure_view(live_, {});
    }
  } else if (best != nullptr) {
    target = ViewId{best->claim.attempt, best->claim.digest};
  }
  if (target && config_.previous) {
    // Nodes that do not know the previous outcome hold the view above ours, which we never
    // will, and stay there while it includes their candidate: offer ours above it, or
    // neither side ever fills a view.
    const View* top = highest();
    const ViewId top_id{top->claim.attempt, top->claim.digest};
    if (!top->acceptable && *target < top_id) {
      const View& ours = views_.at(*target);
      target = ensure_view(ours.members, ours.seniors, top_id);
    }
  }
  if (!target || (held_ && *target == *held_)) return false;
  if (held_ && *target < *held_) {
    // Held views only go up: offer the same members again under a fresh, higher id.
    // (views_ is a map: `lower` stays valid while ensure_view adds a view.)
    const View& lower = views_.at(*target);
    target = ensure_view(lower.members, lower.seniors);
    if (!(*held_ < *target)) return false;
  }
  return hold(*target);
}

bool Agreement::hold(const ViewId& id) {
  held_ = id;
  ready_ = false;
  View& view = views_.at(id);
  auto index = my_index(view);
  assert(index.has_value());
  bits::set(view.claim.proposed, *index);
  return true;
}

bool Agreement::advance(const MemberTable& table) {
  if (!held_) return false;
  View& view = views_.at(*held_);
  const std::size_t size = view.members->size();
  const std::size_t index = *my_index(view);
  bool changed = false;
  if (!ready_ && bits::full(view.claim.proposed, size) && valid(view, table, true)) {
    ready_ = true;
    bits::set(view.claim.ready, index);
    changed = true;
  }
  if (ready_ && bits::full(view.claim.ready, size) && !fenced_.count(*held_) &&
      !bits::get(view.claim.voted, index)) {
    // Our vote: we saw every member ready. We do not commit on our own word, only once a
    // quorum voted, so survivors can always learn whether we might have (see fence()).
    bits::set(view.claim.voted, index);
    changed = true;
  }
  if (bits::get(view.claim.voted, index) && decided(view)) {
    committed_ = held_;
    bits::set(view.claim.committed, index);
    changed = true;
  }
  return changed;
}

bool Agreement::adopt_commit() {
  for (auto& [id, view] : views_) {
    if (!decided(view)) continue;
    auto index = my_index(view);
    if (!index) {
      if (not_admitted_) return false;
      not_admitted_ = true;
      foreign_commit_ = full_claim(view);
      return true;
    }
    // A quorum voted, so every member was ready on this view, us included, and no blocking
    // set can ever fence it (it would share a member with the voters): we are locked on it
    // already, or were and are about to hear the last bits, even if we fenced it ourselves.
    // Adopting it cannot contradict anyone.
    committed_ = id;
    held_ = id;
    ready_ = true;
    bits::set(view.claim.ready, *index);
    bits::set(view.claim.committed, *index);  // we know the outcome; no vote needed any more
    return true;
  }
  return false;
}

bool Agreement::decided(const View& view) const {
  return protocol::decided(view.claim, *view.members, config_.base);
}

bool Agreement::step(Time now, const MemberTable& table) {
  if (committed_) return false;
  if (not_admitted_) return false;
  const bool deadline_passed = last_call_end_ && now >= *last_call_end_;
  if (deadline_passed) last_call_end_.reset();  // candidate() sets it again if still waiting
  if (!dirty_ && stepped_version_ == table.version() && !deadline_passed) return false;
  dirty_ = false;
  stepped_version_ = table.version();
  bool changed = adopt_commit();
  if (committed_ || not_admitted_) return changed;
  changed = fence(table) || changed;
  changed = release_if_dead(table) || changed;
  changed = choose_held(now, table) || changed;
  changed = advance(table) || changed;
  prune();
  return changed;
}

void Agreement::prune() {
  // Views below the one we hold no longer decide anything here, and of the rest the newest
  // few are enough (release proofs come from views above ours). Never drop the held view.
  for (auto it = views_.begin(); it != views_.end();) {
    const bool below_held = held_ && it->first < *held_;
    const bool too_many = views_.size() > kMaxKeptViews;
    const bool keep = (held_ && it->first == *held_) || (committed_ && it->first == *committed_);
    if (keep || (!below_held && !too_many)) {
      ++it;
      continue;
    }
    it = views_.erase(it);
  }
}

std::vector<ViewClaim> Agreement::claims_to_send(const MemberKey* receiver) const {
  auto claim_for = [&](const View& view) {
    const ViewClaim& claim = view.claim;
    const auto& members = *view.members;
    if (receiver != nullptr) {
      auto it = std::lower_bound(members.begin(), members.end(), *receiver);
      if (it != members.end() && *it == *receiver) {
        const auto i = static_cast<std::size_t>(it - members.begin());
        // The receiver held this view (its bits are set only by itself), so it knows the
        // members: send the id and the bits only. A view it moved above may be pruned there,
        // which is harmless: nothing below its held view decides anything. Nor do we repeat
        // the members to one that got them from us lately: until it holds the view, its
        // other peers send them too.
        if (view.members_sent.empty() || view.members_sent_quota == 0) {
          view.members_sent = bits::empty(members.size());
          view.members_sent_quota = std::max<std::size_t>(16, members.size());
        }
        --view.members_sent_quota;
        const bool holds = bits::get(claim.proposed, i) || bits::get(claim.ready, i) ||
                           bits::get(claim.voted, i) || bits::get(claim.committed, i);
        if (holds || bits::get(view.members_sent, i)) return claim;  // members stay empty
        bits::set(view.members_sent, i);
      }
    }
    return full_claim(view);
  };
  std::vector<ViewClaim> claims;
  if (committed_) {
    claims.push_back(claim_for(views_.at(*committed_)));
    return claims;
  }
  if (held_) claims.push_back(claim_for(views_.at(*held_)));
  const View* top = highest();
  if (top != nullptr && (!held_ || !(ViewId{top->claim.attempt, top->claim.digest} == *held_))) {
    claims.push_back(claim_for(*top));
  }
  return claims;
}

std::vector<Announcement> Agreement::committed_members(const MemberTable& table) const {
  std::vector<Announcement> members;
  if (!committed_) return members;
  for (const auto& key : *views_.at(*committed_).members) {
    if (const Announcement* ann = table.announcement(key)) members.push_back(*ann);
  }
  return members;
}

std::optional<ViewClaim> Agreement::committed_view() const {
  if (!committed_) return std::nullopt;
  return full_claim(views_.at(*committed_));
}

const MemberList* Agreement::committed_member_list() const {
  return committed_ ? views_.at(*committed_).members.get() : nullptr;
}

std::vector<std::string> Agreement::committed_seniors() const {
  std::vector<std::string> endpoints;
  if (!committed_) return endpoints;
  const View& view = views_.at(*committed_);
  for (const std::uint32_t i : view.seniors) endpoints.push_back((*view.members)[i].endpoint);
  return endpoints;
}

std::optional<ViewClaim> Agreement::held_view() const {
  if (!held_) return std::nullopt;
  return full_claim(views_.at(*held_));
}

bool Agreement::everyone_committed() const {
  if (!committed_) return false;
  const View& view = views_.at(*committed_);
  return bits::full(view.claim.committed, view.members->size());
}

std::vector<std::string> Agreement::sample_missing_commit(Prng& prng, std::size_t count) const {
  std::vector<std::string> picked;
  if (!committed_) return picked;
  const View& view = views_.at(*committed_);
  const MemberList& members = *view.members;
  const auto& committed = view.claim.committed;  // our own bit is set: we committed
  const std::size_t missing = members.size() - bits::count(committed);
  if (missing == 0) return picked;
  if (missing > 4 * count) {
    // Most are missing: random draws find them quickly.
    for (std::size_t attempts = 0; picked.size() < count && attempts < count * 16; ++attempts) {
      const std::size_t i = prng.below(members.size());
      if (bits::get(committed, i)) continue;
      if (std::find(picked.begin(), picked.end(), members[i].endpoint) == picked.end())
        picked.push_back(members[i].endpoint);
    }
    return picked;
  }
  std::vector<std::size_t> left;
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (!bits::get(committed, i)) left.push_back(i);
  }
  while (!left.empty() && picked.size() < count) {
    const std::size_t j = prng.below(left.size());
    picked.push_back(members[left[j]].endpoint);
    left[j] = left.back();
    left.pop_back();
  }
  return picked;
}

std::optional<MemberKey> Agreement::blocked_by_gone(const MemberTable& table) const {
  if (committed_ || not_admitted_ || !ready_ || !held_) return std::nullopt;
  const View& view = views_.at(*held_);
  const MemberList& members = *view.members;
  update_superseded(view, table);
  // Members that can never add a vote: those that promised not to (fenced) and gone
  // processes whose vote we do not have.
  bits::Bytes unable = view.claim.fenced;
  std::optional<MemberKey> gone;
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (bits::get(view.claim.voted, i)) continue;
    const MemberKey& key = members[i];
    const Member* row = table.find(key.endpoint);
    const bool superseded = std::find(view.superseded.begin(), view.superseded.end(),
                                      static_cast<std::uint32_t>(i)) != view.superseded.end();
    const bool dead = row != nullptr && row->ann->generation == key.generation &&
                      row->status == MemberStatus::dead;
    if (!superseded && !dead) continue;
    bits::set(unable, i);
    if (!gone) gone = key;
  }
  if (!gone) return std::nullopt;
  // Decidable when the others' votes can still make a quorum and win the base.
  if (!blocking(unable, members.size()) && can_win_base(members, unable, table))
    return std::nullopt;
  return gone;
}

std::vector<std::string> Agreement::witnesses_wanted() const {
  if (committed_ || !held_ || !ready_) return {};
  const View& view = views_.at(*held_);
  if (!bits::full(view.claim.ready, view.members->size()) || decided(view)) return {};
  return config_.base.to_ask(*view.members, view.claim.witnesses);
}

Agreement::BaseStatus Agreement::base_status() const {
  BaseStatus status;
  status.size = config_.base.endpoints().size();
  const auto& id = committed_ ? committed_ : held_;
  if (!id) {
    status.missing = config_.base.endpoints();
    return status;
  }
  const View& view = views_.at(*id);
  status.all_ready = bits::full(view.claim.ready, view.members->size());
  status.missing = config_.base.missing(*view.members, view.claim.voted, view.claim.witnesses);
  status.won = status.size - status.missing.size();
  return status;
}

std::optional<Time> Agreement::next_deadline() const {
  if (committed_ || not_admitted_) return std::nullopt;
  return last_call_end_;
}

void Agreement::check_invariants() const {
  // Names the broken invariant on stderr before aborting, also in release builds, so that a
  // fuzzer's or simulator's crash says which rule broke.
  auto fail = [](const char* what) {
    std::fprintf(stderr, "agreement invariant broken: %s\n", what);
    std::abort();
  };
  for (const auto& [id, view] : views_) {
    if (!view.members || !view.claim.members.empty()) fail("view member list not interned");
    if (!view.claim.seniors.empty()) fail("view seniors stored in the claim");
    const std::size_t size = view.members->size();
    if (view.claim.proposed.size() != bits::bytes_for(size) ||
        view.claim.ready.size() != bits::bytes_for(size) ||
        view.claim.voted.size() != bits::bytes_for(size) ||
        view.claim.committed.size() != bits::bytes_for(size) ||
        view.claim.fenced.size() != bits::bytes_for(size)) {
      fail("seen-by set size does not match the view");
    }
    if (bits::any(view.claim.voted) && !bits::full(view.claim.ready, size)) {
      fail("a vote without a full ready set");
    }
    if (bits::any(view.claim.committed) && !decided(view)) {
      fail("a commit bit on a view that is not the outcome");
    }
    if (auto index = my_index(view);
        index && bits::get(view.claim.voted, *index) && bits::get(view.claim.fenced, *index)) {
      fail("we voted for a view and fenced it");
    }
  }
  if (ready_ && !held_) fail("ready without a held view");
  if (held_) {
    if (!views_.count(*held_)) fail("held view was pruned");
    const View& view = views_.at(*held_);
    auto index = my_index(view);
    if (!index) fail("holding a view without us in it");
    if (!bits::get(view.claim.proposed, *index)) fail("holding a view without our proposed bit");
    if (!view.acceptable) fail("holding a view whose seniors are not the previous outcome's");
    if (ready_ && !bits::get(view.claim.ready, *index)) fail("ready without our ready bit");
    if (held_->attempt > max_attempt_) fail("held attempt above the highest attempt seen");
  }
  if (committed_ && !(held_ && *held_ == *committed_)) fail("committed view is not the held view");
  if (committed_) {
    const View& view = views_.at(*committed_);
    if (!decided(view)) fail("committed without a quorum of votes and of the base");
  }
}

}  // namespace gossip_rdzv::protocol
