// The key-value state of one home member: what it stores and which requests wait for keys.
// A pure state machine (no sockets, threads or clocks; time is passed in), so every rule is
// tested in memory: apply() requests, on_tick() to expire parked ones, poll_reply() answers.
//
// Semantics follow torch.distributed.Store (TCPStore's server): a get or wait on a missing key
// is parked until every key it names exists or its deadline passes; add keeps the counter
// as a decimal string; compare_set answers the value now stored.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "store/store_types.hpp"

namespace gossip_rdzv::store {

class StoreState {
 public:
  /// The caller's name for a request; its reply carries it back. Must be unique among the
  /// requests still parked.
  using Ticket = std::uint64_t;

  /// Applies `request`. An answer available now is queued at once; a get or wait on a
  /// missing key is parked until the keys exist (answered ok) or `request.deadline` passes
  /// (answered Status::timeout naming the first missing key).
  void apply(Time now, Ticket ticket, const Request& request);

  /// Expires parked requests whose deadline is <= now.
  void on_tick(Time now);

  /// Next queued answer, oldest first.
  std::optional<std::pair<Ticket, Reply>> poll_reply();

  /// The earliest deadline of a parked request.
  std::optional<Time> next_deadline() const;

  /// Forgets a parked request without answering it (its asker went away).
  void cancel(Ticket ticket);

  std::size_t num_keys() const { return values_.size(); }
  std::size_t parked() const { return parked_.size(); }
  /// Requests applied since construction (the load this home carried).
  std::uint64_t requests_applied() const { return requests_applied_; }

  /// Checks the internal cross-references; for tests.
  bool invariants() const;

 private:
  struct Parked {
    Request request;
  };

  void answer(Ticket ticket, Reply reply) { replies_.emplace_back(ticket, std::move(reply)); }
  void apply_now(Time now, Ticket ticket, const Request& request);
  void do_set(const Request& request, Ticket ticket);
  void do_get_or_wait(Time now, Ticket ticket, const Request& request);
  void do_add(const Request& request, Ticket ticket);
  void do_compare_set(const Request& request, Ticket ticket);
  void store(const std::string& key, Bytes value);
  bool erase(const std::string& key);
  void release_waiters(const std::string& key);
  bool all_present(const std::vector<std::string>& keys) const;
  Reply ready_reply(const Request& request) const;
  void unpark(Ticket ticket);

  std::unordered_map<std::string, Bytes> values_;
  std::unordered_map<Ticket, Parked> parked_;
  std::unordered_map<std::string, std::set<Ticket>> waiters_;  ///< key -> tickets needing it
  std::set<std::pair<Time, Ticket>> deadlines_;                ///< parked with a deadline
  std::deque<std::pair<Ticket, Reply>> replies_;
  std::uint64_t requests_applied_ = 0;
};

}  // namespace gossip_rdzv::store
