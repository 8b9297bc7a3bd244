#include "store/store_state.hpp"

#include <charconv>
#include <limits>

namespace gossip_rdzv::store {
namespace {

Bytes bytes_of(const std::string& text) {
  return Bytes(text.begin(), text.end());
}

// The counter of `add`, as torch's TCPStore parses it (std::stoll): optional sign, decimal
// digits, nothing else.
std::optional<std::int64_t> parse_counter(const Bytes& value) {
  const char* begin = reinterpret_cast<const char*>(value.data());
  const char* end = begin + value.size();
  if (begin != end && *begin == '+') ++begin;
  std::int64_t number = 0;
  const auto [stop, error] = std::from_chars(begin, end, number);
  if (error != std::errc() || stop != end || begin == end) return std::nullopt;
  return number;
}

std::string shown(const Bytes& value) {
  constexpr std::size_t kShown = 32;  // enough to recognise a value in an error message
  std::string text(value.begin(), value.begin() + std::min(value.size(), kShown));
  return value.size() > kShown ? text + "..." : text;
}

Reply error_reply(Status status, std::string key, std::string detail) {
  Reply reply;
  reply.status = status;
  reply.key = std::move(key);
  reply.detail = std::move(detail);
  return reply;
}

}  // namespace

void StoreState::apply(Time now, Ticket ticket, const Request& request) {
  ++requests_applied_;
  if (const std::string why = shape_error(request); !why.empty()) {
    answer(ticket, error_reply(Status::bad_request, "", why));
    return;
  }
  apply_now(now, ticket, request);
}

void StoreState::apply_now(Time now, Ticket ticket, const Request& request) {
  switch (request.op) {
    case Op::set:
      do_set(request, ticket);
      return;
    case Op::get:
    case Op::wait:
      do_get_or_wait(now, ticket, request);
      return;
    case Op::add:
      do_add(request, ticket);
      return;
    case Op::check: {
      Reply reply;
      reply.number = all_present(request.keys) ? 1 : 0;
      answer(ticket, std::move(reply));
      return;
    }
    case Op::compare_set:
      do_compare_set(request, ticket);
      return;
    case Op::delete_key: {
      Reply reply;
      reply.number = erase(request.keys.front()) ? 1 : 0;
      answer(ticket, std::move(reply));
      return;
    }
    case Op::num_keys: {
      Reply reply;
      reply.number = static_cast<std::int64_t>(values_.size());
      answer(ticket, std::move(reply));
      return;
    }
    case Op::stats:
    case Op::ping:
      // The agent answers these itself (StoreService); a home never gets one.
      answer(ticket, error_reply(Status::bad_request, "", "answered by the agent, not a home"));
      return;
  }
}

void StoreState::do_set(const Request& request, Ticket ticket) {
  // Answer first: the setter learns of its own write before the getters it releases.
  answer(ticket, Reply{});
  for (std::size_t i = 0; i < request.keys.size(); ++i) store(request.keys[i], request.values[i]);
}

void StoreState::do_get_or_wait(Time now, Ticket ticket, const Request& request) {
  if (all_present(request.keys)) {
    answer(ticket, ready_reply(request));
    return;
  }
  if (request.deadline && *request.deadline <= now) {
    for (const auto& key : request.keys) {
      if (!values_.count(key)) {
        answer(ticket, error_reply(Status::timeout, key, "the key was not set in time"));
        return;
      }
    }
  }
  parked_[ticket] = Parked{request};
  for (const auto& key : request.keys) {
    if (!values_.count(key)) waiters_[key].insert(ticket);
  }
  if (request.deadline) deadlines_.emplace(*request.deadline, ticket);
}

void StoreState::do_add(const Request& request, Ticket ticket) {
  const std::string& key = request.keys.front();
  std::int64_t current = 0;
  if (auto found = values_.find(key); found != values_.end()) {
    const auto parsed = parse_counter(found->second);
    if (!parsed) {
      answer(ticket, error_reply(Status::bad_request, key,
                                 "add on a value that is not a decimal integer ('" +
                                     shown(found->second) + "'): it was written by set"));
      return;
    }
    current = *parsed;
  }
  std::int64_t updated = 0;
  if (__builtin_add_overflow(current, request.amount, &updated)) {
    answer(ticket, error_reply(Status::bad_request, key, "add overflows a 64-bit counter"));
    return;
  }
  Reply reply;
  reply.number = updated;
  answer(ticket, std::move(reply));
  store(key, bytes_of(std::to_string(updated)));
}

void StoreState::do_compare_set(const Request& request, Ticket ticket) {
  const std::string& key = request.keys.front();
  const Bytes& expected = request.values[0];
  const Bytes& desired = request.values[1];
  Reply reply;
  auto found = values_.find(key);
  if (found == values_.end()) {
    // torch (TCPStore server): a missing key is created only when `expected` is empty;
    // otherwise the caller gets its own `expected` back and nothing changes.
    reply.values.push_back(expected.empty() ? desired : expected);
    answer(ticket, std::move(reply));
    if (expected.empty()) store(key, desired);
    return;
  }
  const bool swap = found->second == expected;
  reply.values.push_back(swap ? desired : found->second);
  answer(ticket, std::move(reply));
  if (swap) store(key, desired);
}

void StoreState::store(const std::string& key, Bytes value) {
  values_[key] = std::move(value);
  release_waiters(key);
}

bool StoreState::erase(const std::string& key) {
  if (values_.erase(key) == 0) return false;
  // Parked requests that already had this key must now wait for it again.
  for (const auto& [ticket, parked] : parked_) {
    for (const auto& wanted : parked.request.keys) {
      if (wanted == key) waiters_[key].insert(ticket);
    }
  }
  return true;
}

void StoreState::release_waiters(const std::string& key) {
  auto waiting = waiters_.find(key);
  if (waiting == waiters_.end()) return;
  const std::set<Ticket> tickets = std::move(waiting->second);
  waiters_.erase(waiting);
  for (const Ticket ticket : tickets) {
    auto parked = parked_.find(ticket);
    if (parked == parked_.end() || !all_present(parked->second.request.keys)) continue;
    Reply reply = ready_reply(parked->second.request);
    unpark(ticket);
    answer(ticket, std::move(reply));
  }
}

bool StoreState::all_present(const std::vector<std::string>& keys) const {
  for (const auto& key : keys) {
    if (!values_.count(key)) return false;
  }
  return true;
}

Reply StoreState::ready_reply(const Request& request) const {
  Reply reply;
  if (request.op == Op::get) {
    for (const auto& key : request.keys) reply.values.push_back(values_.at(key));
  }
  return reply;
}

void StoreState::on_tick(Time now) {
  while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
    const Ticket ticket = deadlines_.begin()->second;
    const Request request = parked_.at(ticket).request;
    unpark(ticket);
    std::string missing;
    for (const auto& key : request.keys) {
      if (!values_.count(key)) {
        missing = key;
        break;
      }
    }
    answer(ticket, error_reply(Status::timeout, missing, "the key was not set in time"));
  }
}

void StoreState::unpark(Ticket ticket) {
  auto parked = parked_.find(ticket);
  if (parked == parked_.end()) return;
  for (const auto& key : parked->second.request.keys) {
    auto waiting = waiters_.find(key);
    if (waiting == waiters_.end()) continue;
    waiting->second.erase(ticket);
    if (waiting->second.empty()) waiters_.erase(waiting);
  }
  if (parked->second.request.deadline) {
    deadlines_.erase({*parked->second.request.deadline, ticket});
  }
  parked_.erase(parked);
}

void StoreState::cancel(Ticket ticket) {
  unpark(ticket);
}

std::optional<std::pair<StoreState::Ticket, Reply>> StoreState::poll_reply() {
  if (replies_.empty()) return std::nullopt;
  auto front = std::move(replies_.front());
  replies_.pop_front();
  return front;
}

std::optional<Time> StoreState::next_deadline() const {
  if (deadlines_.empty()) return std::nullopt;
  return deadlines_.begin()->first;
}

bool StoreState::invariants() const {
  std::size_t with_deadline = 0;
  for (const auto& [ticket, parked] : parked_) {
    if (parked.request.deadline) {
      ++with_deadline;
      if (!deadlines_.count({*parked.request.deadline, ticket})) return false;
    }
    if (all_present(parked.request.keys)) return false;  // should have been released
    for (const auto& key : parked.request.keys) {
      if (values_.count(key)) continue;
      auto waiting = waiters_.find(key);
      if (waiting == waiters_.end() || !waiting->second.count(ticket)) return false;
    }
  }
  if (with_deadline != deadlines_.size()) return false;
  for (const auto& [key, tickets] : waiters_) {
    if (tickets.empty() || values_.count(key)) return false;
    for (const Ticket ticket : tickets) {
      if (!parked_.count(ticket)) return false;
    }
  }
  return true;
}

}  // namespace gossip_rdzv::store
