#include "member_table.hpp"

#include <algorithm>

namespace gossip_rdzv::protocol {

MemberTable::MemberTable(std::string self_endpoint) : self_(std::move(self_endpoint)) {}

void MemberTable::set_self(const MemberRecord& self) {
  auto& row = rows_[self.ann.endpoint];
  if (row.ann != self.ann || row.status != self.status) ++version_;
  row.ann = self.ann;
  row.incarnation = self.incarnation;
  row.status = self.status;
}

MemberChange MemberTable::merge(const MemberRecord& rumour, Time now, Time suspicion_deadline,
                                const std::string& via) {
  const std::string& endpoint = rumour.ann.endpoint;
  auto it = rows_.find(endpoint);
  if (it == rows_.end()) {
    Member row;
    row.ann = rumour.ann;
    row.incarnation = rumour.incarnation;
    row.status = rumour.status;
    row.last_heard_via = via;
    if (row.status == MemberStatus::suspect) row.suspect_deadline = suspicion_deadline;
    rows_.emplace(endpoint, std::move(row));
    ++version_;
    track_liveness(endpoint, rumour.status != MemberStatus::dead);
    return rumour.status == MemberStatus::dead ? MemberChange::died : MemberChange::joined;
  }
  MemberChange change = apply(it->second, rumour, suspicion_deadline);
  if (change != MemberChange::none) it->second.last_heard_via = via;
  if (change == MemberChange::died) recent_deaths_.push_back(Death{endpoint, now});
  return change;
}

MemberChange MemberTable::apply(Member& row, const MemberRecord& rumour, Time suspicion_deadline) {
  if (rumour.ann.generation < row.ann.generation) return MemberChange::none;
  if (rumour.ann.generation > row.ann.generation) {
    // The process behind this endpoint restarted: its old generation is gone for good.
    row.ann = rumour.ann;
    row.incarnation = rumour.incarnation;
    row.status = rumour.status;
    row.last_heard = Time{0};
    row.suspect_deadline = suspicion_deadline;
    ++version_;
    track_liveness(rumour.ann.endpoint, rumour.status != MemberStatus::dead);
    return MemberChange::restarted;
  }
  const bool newer = rumour.incarnation > row.incarnation;
  const bool same = rumour.incarnation == row.incarnation;
  MemberChange change = MemberChange::none;
  switch (rumour.status) {
    case MemberStatus::alive:
      if (newer)
        change = row.status == MemberStatus::alive ? MemberChange::none : MemberChange::recovered;
      if (!newer) return MemberChange::none;
      break;
    case MemberStatus::suspect:
      if (!(newer || (same && row.status == MemberStatus::alive))) return MemberChange::none;
      change = row.status == MemberStatus::suspect ? MemberChange::none : MemberChange::suspected;
      row.suspect_deadline = suspicion_deadline;
      break;
    case MemberStatus::dead:
      if (!(newer || (same && row.status != MemberStatus::dead))) return MemberChange::none;
      change = row.status == MemberStatus::dead ? MemberChange::none : MemberChange::died;
      break;
  }
  const bool liveness_changed =
      (row.status == MemberStatus::dead) != (rumour.status == MemberStatus::dead);
  row.incarnation = rumour.incarnation;
  row.status = rumour.status;
  if (liveness_changed) {
    ++version_;
    track_liveness(rumour.ann.endpoint, rumour.status != MemberStatus::dead);
  }
  // A newer incarnation is news even when the status stays the same (it must spread).
  if (change == MemberChange::none && newer) change = MemberChange::recovered;
  return change;
}

void MemberTable::heard_from(const std::string& endpoint, std::uint64_t generation, Time now) {
  auto it = rows_.find(endpoint);
  if (it != rows_.end() && it->second.ann.generation == generation) it->second.last_heard = now;
}

bool MemberTable::suspect(const std::string& endpoint, Time deadline) {
  auto it = rows_.find(endpoint);
  if (it == rows_.end() || it->second.status != MemberStatus::alive) return false;
  it->second.status = MemberStatus::suspect;
  it->second.suspect_deadline = deadline;
  return true;
}

bool MemberTable::declare_dead(const std::string& endpoint, Time now) {
  auto it = rows_.find(endpoint);
  if (it == rows_.end() || it->second.status == MemberStatus::dead) return false;
  it->second.status = MemberStatus::dead;
  ++version_;
  track_liveness(endpoint, false);
  recent_deaths_.push_back(Death{endpoint, now});
  return true;
}

std::optional<std::string> MemberTable::sample_recently_dead(Prng& prng, Time since) {
  std::erase_if(recent_deaths_, [&](const Death& death) {
    const Member* row = find(death.endpoint);
    return death.at < since || row == nullptr || row->status != MemberStatus::dead;
  });
  if (recent_deaths_.empty()) return std::nullopt;
  return recent_deaths_[prng.below(recent_deaths_.size())].endpoint;
}

std::vector<std::string> MemberTable::expired_suspects(Time now) const {
  std::vector<std::string> expired;
  for (const auto& [endpoint, row] : rows_) {
    if (row.status == MemberStatus::suspect && row.suspect_deadline <= now)
      expired.push_back(endpoint);
  }
  return expired;
}

std::optional<Time> MemberTable::earliest_suspect_deadline() const {
  std::optional<Time> earliest;
  for (const auto& [endpoint, row] : rows_) {
    if (row.status != MemberStatus::suspect) continue;
    if (!earliest || row.suspect_deadline < *earliest) earliest = row.suspect_deadline;
  }
  return earliest;
}

const Member* MemberTable::find(const std::string& endpoint) const {
  auto it = rows_.find(endpoint);
  return it == rows_.end() ? nullptr : &it->second;
}

MemberRecord MemberTable::record(const Member& member) const {
  return MemberRecord{member.ann, member.incarnation, member.status};
}

void MemberTable::track_liveness(const std::string& endpoint, bool live) {
  if (endpoint == self_) return;
  auto it = live_index_.find(endpoint);
  if (live && it == live_index_.end()) {
    live_index_.emplace(endpoint, live_peers_.size());
    live_peers_.push_back(endpoint);
  } else if (!live && it != live_index_.end()) {
    const std::size_t slot = it->second;
    live_index_.erase(it);
    if (slot + 1 != live_peers_.size()) {
      live_peers_[slot] = std::move(live_peers_.back());
      live_index_[live_peers_[slot]] = slot;
    }
    live_peers_.pop_back();
  }
}

std::vector<std::string> MemberTable::sample_peers(Prng& prng, std::size_t count,
                                                   const std::string& exclude) const {
  std::vector<std::string> picked;
  const std::size_t available = live_peers_.size();
  if (available == 0) return picked;
  // Rejection sampling: O(count) expected, independent of the table size.
  const std::size_t wanted = std::min(count, available - (live_index_.count(exclude) ? 1 : 0));
  std::size_t attempts = 0;
  while (picked.size() < wanted && attempts < wanted * 8 + 16) {
    ++attempts;
    const std::string& candidate = live_peers_[prng.below(available)];
    if (candidate == exclude) continue;
    if (std::find(picked.begin(), picked.end(), candidate) != picked.end()) continue;
    picked.push_back(candidate);
  }
  return picked;
}

void MemberTable::enqueue(const std::string& endpoint, std::uint32_t transmits) {
  auto it = std::find_if(queue_.begin(), queue_.end(),
                         [&](const Queued& q) { return q.endpoint == endpoint; });
  if (it != queue_.end()) queue_.erase(it);
  queue_.push_back(Queued{endpoint, transmits});
}

std::vector<MemberRecord> MemberTable::take_piggyback(std::size_t max) {
  std::vector<MemberRecord> taken;
  for (auto it = queue_.rbegin(); it != queue_.rend() && taken.size() < max; ++it) {
    const Member* row = find(it->endpoint);
    if (row != nullptr) taken.push_back(record(*row));
    it->remaining = row == nullptr ? 0 : it->remaining - 1;
  }
  std::erase_if(queue_, [](const Queued& q) { return q.remaining == 0; });
  return taken;
}

}  // namespace gossip_rdzv::protocol
