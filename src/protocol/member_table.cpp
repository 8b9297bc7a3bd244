#include "member_table.hpp"

#include <algorithm>

namespace gossip_rdzv::protocol {

MemberTable::MemberTable(std::string self_endpoint, std::shared_ptr<InternPool> pool)
    : self_(std::move(self_endpoint)),
      pool_(pool ? std::move(pool) : std::make_shared<InternPool>()),
      buckets_(16) {}

std::uint32_t MemberTable::insert(const MemberRecord& record) {
  const auto index = static_cast<std::uint32_t>(rows_.size());
  Member row;
  row.ann = &pool_->announcement(record.ann);
  row.incarnation = record.incarnation;
  row.status = MemberStatus::alive;
  rows_.push_back(row);
  slots_.emplace_back();
  if (rows_.size() * 2 > buckets_.size()) {
    // Keep the index at most half full: rebuild it twice as large.
    std::vector<Bucket> old(buckets_.size() * 2);
    old.swap(buckets_);
    for (const Bucket& bucket : old) {
      if (bucket.row_plus_one == 0) continue;
      const std::uint32_t row_index = bucket.row_plus_one - 1;
      index_row(row_index, endpoint_hash(rows_[row_index].ann->endpoint));
    }
  }
  index_row(index, endpoint_hash(record.ann.endpoint));
  generation_log_.push_back(index);
  ++version_;
  return index;
}

void MemberTable::index_row(std::uint32_t row, std::uint64_t hash) {
  const std::size_t mask = buckets_.size() - 1;
  for (std::size_t i = static_cast<std::size_t>(hash) & mask;; i = (i + 1) & mask) {
    if (buckets_[i].row_plus_one == 0) {
      buckets_[i] = Bucket{row + 1, static_cast<std::uint32_t>(hash >> 32)};
      return;
    }
  }
}

void MemberTable::set_status(std::uint32_t index, MemberStatus status, Time suspect_deadline) {
  Member& row = rows_[index];
  if (row.status == MemberStatus::suspect) {
    suspects_.erase({row.suspect_deadline, index});
    suspicions_.erase(index);
  }
  row.status = status;
  if (status == MemberStatus::suspect) {
    row.suspect_deadline = suspect_deadline;
    suspects_.emplace(suspect_deadline, index);
  }
}

void MemberTable::set_self(const MemberRecord& self) {
  auto found = index_of(self.ann.endpoint);
  const std::uint32_t index = found ? *found : insert(self);
  Member& row = rows_[index];
  if (found && (*row.ann != self.ann || row.status != self.status)) ++version_, ++liveness_version_;
  row.ann = &pool_->announcement(self.ann);
  row.incarnation = self.incarnation;
  set_status(index, self.status, row.suspect_deadline);
}

void MemberTable::take_status(std::uint32_t index, MemberStatus status, const SuspicionClock& clock,
                              const std::string& accuser) {
  set_status(index, status, clock.deadline(0));
  if (status != MemberStatus::suspect) return;
  suspicions_[index] = Suspicion{clock, {}};
  add_accuser(index, accuser);
}

bool MemberTable::add_accuser(std::uint32_t index, const std::string& accuser) {
  auto it = suspicions_.find(index);
  if (it == suspicions_.end()) return false;
  Suspicion& suspicion = it->second;
  if (suspicion.accusers.size() > suspicion.clock.expected) return false;  // at `min` already
  const auto accuser_row = index_of(accuser);
  if (!accuser_row || *accuser_row == index) return false;
  if (std::find(suspicion.accusers.begin(), suspicion.accusers.end(), *accuser_row) !=
      suspicion.accusers.end())
    return false;
  suspicion.accusers.push_back(*accuser_row);
  return true;
}

void MemberTable::move_deadline(std::uint32_t index, Time deadline) {
  Member& row = rows_[index];
  suspects_.erase({row.suspect_deadline, index});
  row.suspect_deadline = deadline;
  suspects_.emplace(deadline, index);
}

bool MemberTable::confirm(const std::string& endpoint, const std::string& accuser) {
  auto index = index_of(endpoint);
  if (!index || rows_[*index].status != MemberStatus::suspect) return false;
  if (!add_accuser(*index, accuser)) return false;
  const Suspicion& suspicion = suspicions_.at(*index);
  // The first accuser started the suspicion; every further one is a confirmation. A first
  // accuser we held no row for left the list empty: the earliest one we know counts as it.
  const auto confirmations = static_cast<std::uint32_t>(suspicion.accusers.size() - 1);
  move_deadline(*index, suspicion.clock.deadline(confirmations));
  return confirmations > 0;
}

MemberChange MemberTable::merge(const MemberRecord& rumour, Time now, const SuspicionClock& clock,
                                const std::string& via) {
  auto found = index_of(rumour.ann.endpoint);
  if (!found) {
    if (rows_.size() >= kMaxRows) return MemberChange::none;  // see kMaxRows
    const std::uint32_t index = insert(rumour);
    rows_[index].via = teller_id(via);
    take_status(index, rumour.status, clock, rumour.accuser);
    track_liveness(index);
    if (rumour.status == MemberStatus::dead) ++liveness_version_;
    return rumour.status == MemberStatus::dead ? MemberChange::died : MemberChange::joined;
  }
  MemberChange change = apply(*found, rumour, clock);
  if (change != MemberChange::none) rows_[*found].via = teller_id(via);
  if (change == MemberChange::died) recent_deaths_.push_back(Death{*found, now});
  return change;
}

MemberChange MemberTable::apply(std::uint32_t index, const MemberRecord& rumour,
                                const SuspicionClock& clock) {
  Member& row = rows_[index];
  if (rumour.ann.generation < row.ann->generation) return MemberChange::none;
  if (rumour.ann.generation > row.ann->generation) {
    // The process behind this endpoint restarted: its old generation is gone for good. Keep
    // its announcement: a view of this round may still name it.
    retired_.insert_or_assign(MemberKey{row.ann->endpoint, row.ann->generation}, row.ann);
    row.ann = &pool_->announcement(rumour.ann);
    row.incarnation = rumour.incarnation;
    row.last_heard = Time{0};
    take_status(index, rumour.status, clock, rumour.accuser);
    ++version_;
    ++liveness_version_;
    generation_log_.push_back(index);
    track_liveness(index);
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
      if (same && row.status == MemberStatus::suspect) {
        return confirm(row.ann->endpoint, rumour.accuser) ? MemberChange::confirmed
                                                          : MemberChange::none;
      }
      if (!(newer || (same && row.status == MemberStatus::alive))) return MemberChange::none;
      change = row.status == MemberStatus::suspect ? MemberChange::none : MemberChange::suspected;
      break;
    case MemberStatus::dead:
      if (!(newer || (same && row.status != MemberStatus::dead))) return MemberChange::none;
      change = row.status == MemberStatus::dead ? MemberChange::none : MemberChange::died;
      break;
  }
  const bool liveness_changed =
      (row.status == MemberStatus::dead) != (rumour.status == MemberStatus::dead);
  row.incarnation = rumour.incarnation;
  take_status(index, rumour.status, clock, rumour.accuser);
  if (liveness_changed) {
    ++version_;
    ++liveness_version_;
    track_liveness(index);
  }
  // A newer incarnation is news even when the status stays the same (it must spread).
  if (change == MemberChange::none && newer) change = MemberChange::recovered;
  return change;
}

void MemberTable::heard_from(const std::string& endpoint, std::uint64_t generation, Time now) {
  auto index = index_of(endpoint);
  if (index && rows_[*index].ann->generation == generation) rows_[*index].last_heard = now;
}

bool MemberTable::suspect(const std::string& endpoint, const SuspicionClock& clock,
                          const std::string& accuser) {
  auto index = index_of(endpoint);
  if (!index || rows_[*index].status != MemberStatus::alive) return false;
  take_status(*index, MemberStatus::suspect, clock, accuser);
  return true;
}

bool MemberTable::declare_dead(const std::string& endpoint, Time now) {
  auto index = index_of(endpoint);
  if (!index || rows_[*index].status == MemberStatus::dead) return false;
  set_status(*index, MemberStatus::dead, Time{0});
  ++version_;
  ++liveness_version_;
  track_liveness(*index);
  recent_deaths_.push_back(Death{*index, now});
  return true;
}

std::optional<std::string> MemberTable::sample_recently_dead(Prng& prng, Time since) {
  std::erase_if(recent_deaths_, [&](const Death& death) {
    return death.at < since || rows_[death.row].status != MemberStatus::dead;
  });
  if (recent_deaths_.empty()) return std::nullopt;
  return rows_[recent_deaths_[prng.below(recent_deaths_.size())].row].ann->endpoint;
}

std::vector<std::string> MemberTable::expired_suspects(Time now) const {
  std::vector<std::string> expired;
  for (const auto& [deadline, index] : suspects_) {
    if (deadline > now) break;
    expired.push_back(rows_[index].ann->endpoint);
  }
  return expired;
}

std::optional<Time> MemberTable::earliest_suspect_deadline() const {
  if (suspects_.empty()) return std::nullopt;
  return suspects_.begin()->first;
}

std::optional<std::uint32_t> MemberTable::index_of(const std::string& endpoint) const {
  const std::uint64_t hash = endpoint_hash(endpoint);
  const auto high = static_cast<std::uint32_t>(hash >> 32);
  const std::size_t mask = buckets_.size() - 1;
  for (std::size_t i = static_cast<std::size_t>(hash) & mask;; i = (i + 1) & mask) {
    const Bucket& bucket = buckets_[i];
    if (bucket.row_plus_one == 0) return std::nullopt;
    if (bucket.hash_high == high && rows_[bucket.row_plus_one - 1].ann->endpoint == endpoint)
      return bucket.row_plus_one - 1;
  }
}

const Member* MemberTable::find(const std::string& endpoint) const {
  auto index = index_of(endpoint);
  return index ? &rows_[*index] : nullptr;
}

std::uint32_t MemberTable::teller_id(const std::string& endpoint) {
  if (endpoint.empty()) return kNone;
  if (auto row = index_of(endpoint)) return *row;
  // Not a member: a seed_only seed, a client. There are few of them; look them up by name.
  auto it = std::find(tellers_.begin(), tellers_.end(), endpoint);
  if (it == tellers_.end()) it = tellers_.insert(tellers_.end(), endpoint);
  return kForeignTeller + static_cast<std::uint32_t>(it - tellers_.begin());
}

const std::string& MemberTable::teller(const Member& member) const {
  static const std::string none;
  if (member.via == kNone) return none;
  if (member.via >= kForeignTeller) return tellers_.at(member.via - kForeignTeller);
  return rows_[member.via].ann->endpoint;
}

MemberRecord MemberTable::record(const Member& member) const {
  MemberRecord record{*member.ann, member.incarnation, member.status, {}};
  if (member.status != MemberStatus::suspect) return record;
  // The row's index is its position in the deque (rows are never removed).
  auto it = suspicions_.find(*index_of(member.ann->endpoint));
  if (it != suspicions_.end() && !it->second.accusers.empty())
    record.accuser = rows_[it->second.accusers.back()].ann->endpoint;
  return record;
}

const Announcement* MemberTable::announcement(const MemberKey& key) const {
  const Member* row = find(key.endpoint);
  if (row != nullptr && row->ann->generation == key.generation) return row->ann;
  auto it = retired_.find(key);
  return it == retired_.end() ? nullptr : it->second;
}

std::vector<MemberKey> MemberTable::live_keys() const {
  std::vector<MemberKey> keys;
  keys.reserve(live_peers_.size() + 1);
  for (std::uint32_t index : live_peers_) {
    keys.push_back(MemberKey{rows_[index].ann->endpoint, rows_[index].ann->generation});
  }
  const Member* self = find(self_);
  if (self != nullptr && self->status != MemberStatus::dead)
    keys.push_back(MemberKey{self->ann->endpoint, self->ann->generation});
  std::sort(keys.begin(), keys.end());
  return keys;
}

std::size_t MemberTable::live_count() const {
  const Member* self = find(self_);
  return live_peers_.size() + (self != nullptr && self->status != MemberStatus::dead ? 1 : 0);
}

void MemberTable::track_liveness(std::uint32_t index) {
  if (rows_[index].ann->endpoint == self_) return;
  const bool live = rows_[index].status != MemberStatus::dead;
  std::uint32_t& position = slots_[index].live_position;
  if (live && position == kNone) {
    position = static_cast<std::uint32_t>(live_peers_.size());
    live_peers_.push_back(index);
  } else if (!live && position != kNone) {
    const std::uint32_t moved = live_peers_.back();
    live_peers_[position] = moved;
    slots_[moved].live_position = position;
    live_peers_.pop_back();
    position = kNone;
  }
}

std::vector<std::string> MemberTable::sample_peers(Prng& prng, std::size_t count,
                                                   const std::string& exclude) const {
  std::vector<std::string> picked;
  const std::size_t available = live_peers_.size();
  if (available == 0) return picked;
  const std::uint32_t excluded = exclude.empty() ? kNone : index_of(exclude).value_or(kNone);
  const bool exclude_live = excluded != kNone && slots_[excluded].live_position != kNone;
  // Rejection sampling: O(count) expected, independent of the table size.
  const std::size_t wanted = std::min(count, available - (exclude_live ? 1 : 0));
  std::vector<std::uint32_t> taken;
  std::size_t attempts = 0;
  while (taken.size() < wanted && attempts < wanted * 8 + 16) {
    ++attempts;
    const std::uint32_t candidate = live_peers_[prng.below(available)];
    if (candidate == excluded) continue;
    if (std::find(taken.begin(), taken.end(), candidate) != taken.end()) continue;
    taken.push_back(candidate);
  }
  for (std::uint32_t index : taken) picked.push_back(rows_[index].ann->endpoint);
  return picked;
}

void MemberTable::link(std::uint32_t row) {
  Slot& slot = slots_[row];
  if (queue_heads_.size() <= slot.sent) queue_heads_.resize(slot.sent + 1u, kNone);
  std::uint32_t& head = queue_heads_[slot.sent];
  slot.prev = kNone;
  slot.next = head;
  if (head != kNone) slots_[head].prev = row;
  head = row;
}

void MemberTable::unlink(std::uint32_t row) {
  Slot& slot = slots_[row];
  if (slot.prev != kNone) {
    slots_[slot.prev].next = slot.next;
  } else {
    queue_heads_[slot.sent] = slot.next;
  }
  if (slot.next != kNone) slots_[slot.next].prev = slot.prev;
  slot.prev = slot.next = kNone;
}

void MemberTable::enqueue(const std::string& endpoint, std::uint32_t transmits) {
  auto index = index_of(endpoint);
  if (!index) return;
  Slot& slot = slots_[*index];
  if (slot.limit != 0) {
    unlink(*index);
    --queued_;
  }
  slot.sent = 0;
  slot.limit = static_cast<std::uint16_t>(std::min<std::uint32_t>(transmits, UINT16_MAX));
  if (slot.limit == 0) return;
  ++queued_;
  link(*index);
}

std::vector<MemberRecord> MemberTable::take_piggyback(std::size_t max) {
  std::vector<std::uint32_t> picked;
  for (std::size_t sent = 0; sent < queue_heads_.size() && picked.size() < max; ++sent) {
    while (queue_heads_[sent] != kNone && picked.size() < max) {
      const std::uint32_t row = queue_heads_[sent];
      unlink(row);
      picked.push_back(row);
    }
  }
  std::vector<MemberRecord> taken;
  taken.reserve(picked.size());
  for (std::uint32_t index : picked) taken.push_back(record(rows_[index]));
  // Back in the queue one count up; the first picked (the most urgent) goes on top.
  for (auto it = picked.rbegin(); it != picked.rend(); ++it) {
    Slot& slot = slots_[*it];
    if (++slot.sent < slot.limit) {
      link(*it);
    } else {
      slot.limit = 0;
      --queued_;
    }
  }
  return taken;
}

}  // namespace gossip_rdzv::protocol
