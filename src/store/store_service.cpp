#include "store/store_service.hpp"

#include <algorithm>
#include <cassert>

namespace gossip_rdzv::store {
namespace {

// Warnings kept for the runtime's log; past this the oldest are dropped (a flood of bad
// messages must not grow memory).
constexpr std::size_t kMaxWarnings = 64;

Time to_time(std::uint64_t milliseconds) {
  return std::chrono::duration_cast<Time>(std::chrono::milliseconds(milliseconds));
}

std::string seconds_text(std::uint64_t milliseconds) {
  if (milliseconds % 1000 == 0) return std::to_string(milliseconds / 1000) + " s";
  return std::to_string(milliseconds) + " ms";
}

// What a request waiting for the view holds in memory, counted against max_waiting_bytes.
std::size_t held_bytes(const StoreRequest& request) {
  std::size_t bytes = request.reply_to.size() + request.run_id.size();
  for (const auto& key : request.keys) bytes += key.size();
  for (const auto& value : request.values) bytes += value.size();
  return bytes;
}

}  // namespace

StoreService::StoreService(ServiceOptions options) : options_(std::move(options)) {}

void StoreService::on_committed(Time now, const Assignment& assignment) {
  if (assignment_ && assignment.round != assignment_->round) end_round(assignment.round);
  assignment_ = assignment;
  std::vector<std::string> endpoints;
  for (const auto& node : assignment.nodes) endpoints.push_back(node.endpoint);
  homes_.emplace(std::move(endpoints));
  auto waiting = std::move(waiting_for_view_);
  waiting_for_view_.clear();
  waiting_bytes_ = 0;
  for (auto& [arrival, request] : waiting) {
    if (for_later_round(request)) {  // the sender is ahead of this node still
      waiting_bytes_ += held_bytes(request);
      waiting_for_view_.emplace_back(arrival, std::move(request));
      continue;
    }
    // The time already spent waiting counts against the request's own timeout.
    if (request.timeout_ms != 0) {
      const auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(now - arrival);
      request.timeout_ms -= std::min<std::uint64_t>(request.timeout_ms - 1, spent.count());
    }
    release(now, request);
  }
  drain_state();
}

bool StoreService::for_later_round(const StoreRequest& request) const {
  return request.at_home && assignment_ && request.round > assignment_->round;
}

void StoreService::end_round(std::uint32_t next_round) {
  const std::string why = "round " + std::to_string(assignment_->round) +
                          " is over (the job moved to round " + std::to_string(next_round) +
                          "): its keys are gone, and a worker of that round must stop";
  // Our clients' calls of the old round: every part is forgotten, local tickets cancelled.
  std::vector<std::uint64_t> calls;
  for (const auto& [call_id, call] : calls_) calls.push_back(call_id);
  Reply reply;
  reply.status = Status::refused;
  reply.detail = why;
  for (const std::uint64_t call_id : calls) finish_call(call_id, reply, "");
  // Other agents' parts parked at this home (a get waiting for a key) are answered too.
  for (const auto& [ticket, origin] : origins_) {
    if (origin.local_part) continue;
    StoreResponse response{options_.run_id,
                           origin.request_id,
                           options_.self_endpoint,
                           Status::refused,
                           {},
                           0,
                           "",
                           why,
                           options_.self_endpoint};
    respond(origin.reply_to, std::move(response));
  }
  origins_.clear();
  local_answers_.clear();
  state_ = StoreState();
}

void StoreService::release(Time now, const StoreRequest& request) {
  if (request.at_home) {
    serve_as_home(now, request);
  } else {
    dispatch(now, request);
  }
}

void StoreService::on_bytes(Time now, const std::uint8_t* data, std::size_t size) {
  StoreDecodeResult result = decode_store(data, size);
  if (auto* error = std::get_if<StoreDecodeError>(&result)) {
    handle_undecodable(*error);
    return;
  }
  auto& message = std::get<StoreMessage>(result);
  if (auto* request = std::get_if<StoreRequest>(&message)) {
    handle_request(now, std::move(*request));
  } else {
    handle_response(std::get<StoreResponse>(message));
  }
  drain_state();
}

void StoreService::handle_undecodable(const StoreDecodeError& error) {
  ++stats_.refused;
  if (warnings_.size() < kMaxWarnings) {
    warnings_.push_back("ignored a store message: " + error.detail);
  }
  if (error.answerable && !error.answerable->reply_to.empty()) {
    refuse(*error.answerable, Status::refused, error.detail);
  }
}

void StoreService::handle_request(Time now, StoreRequest request) {
  if (!request.run_id.empty() && request.run_id != options_.run_id) {
    ++stats_.refused;
    refuse(request, Status::refused,
           "this store serves run id '" + options_.run_id + "', the request is for run id '" +
               request.run_id + "': point GOSSIP_RDZV_STORE at an agent of your own job");
    return;
  }
  if (request.at_home) {
    dead_homes_.erase(request.reply_to);  // an agent that sends us parts is alive
  } else if (request.op == Op::ping) {
    respond(request.reply_to, answer_to(request));
    return;
  } else if (request.op != Op::stats) {
    ++stats_.client_requests;
  }
  if (homes_ && !for_later_round(request)) {
    release(now, request);
    return;
  }
  // Before the view nothing is applied, not even a part addressed to us as its home: its
  // round can only be checked against a view (the sender may have committed first, or be a
  // stranger), so it waits like a client's request. A part for a later round than ours
  // comes from an agent that committed that round first: it waits for our commit of it.
  hold_until_view(now, std::move(request));
}

void StoreService::hold_until_view(Time now, StoreRequest request) {
  const std::size_t bytes = held_bytes(request);
  if (waiting_for_view_.size() >= options_.max_waiting_for_view ||
      waiting_bytes_ + bytes > options_.max_waiting_bytes) {
    refuse(request, Status::not_ready,
           "this node has not agreed on a view yet and already holds " +
               std::to_string(waiting_for_view_.size()) + " waiting requests (" +
               std::to_string(waiting_bytes_) + " bytes; at most " +
               std::to_string(options_.max_waiting_for_view) + " and " +
               std::to_string(options_.max_waiting_bytes) +
               " bytes): retry once every node has joined (see `gossip-rdzv members`)");
    return;
  }
  waiting_bytes_ += bytes;
  waiting_for_view_.emplace_back(now, std::move(request));
}

void StoreService::serve_as_home(Time now, const StoreRequest& request) {
  // Parts come from the agents of the view, which answer at their gossip endpoint.
  const auto& members = homes_->members();
  if (!std::binary_search(members.begin(), members.end(), request.reply_to)) {
    refuse(request, Status::refused,
           "the request claims to be a part for its home, but " + request.reply_to +
               " is no member of the agreed view of " + options_.self_endpoint +
               ": only the job's own agents forward requests");
    return;
  }
  if (request.round != assignment_->round) {
    refuse(request, Status::refused,
           "the request is for round " + std::to_string(request.round) + " but " +
               options_.self_endpoint + " is in round " + std::to_string(assignment_->round) +
               ": an agent of another round (restarted nodes?) sent it");
    return;
  }
  if (request.op == Op::stats) {
    StoreResponse response = answer_to(request);
    response.values.push_back(encode_member_stats(member_stats()));
    respond(request.reply_to, std::move(response));
    return;
  }
  ++stats_.home_requests;
  const StoreState::Ticket ticket = next_id_++;
  origins_[ticket] = Origin{std::nullopt, request.reply_to, request.request_id};
  state_.apply(now, ticket, to_state_request(now, request));
}

MemberStats StoreService::member_stats() const {
  return MemberStats{options_.self_endpoint, stats_.home_requests, stats_.client_requests,
                     stats_.forwarded, state_.num_keys()};
}

Request StoreService::to_state_request(Time now, const StoreRequest& request) const {
  Request out{request.op, request.keys, request.values, request.amount, std::nullopt};
  if (request.timeout_ms != 0) out.deadline = now + to_time(request.timeout_ms);
  return out;
}

void StoreService::dispatch(Time now, const StoreRequest& request) {
  assert(homes_);
  const std::uint64_t call_id = next_id_++;
  Call& call = calls_[call_id];
  call.reply_to = request.reply_to;
  call.client_request_id = request.request_id;
  call.op = request.op;
  if (request.op == Op::get) call.values.resize(request.keys.size());
  if (request.op == Op::check) call.number = 1;
  if (request.timeout_ms != 0) {
    call.deadline = now + to_time(request.timeout_ms) + options_.home_grace;
    call_deadlines_.emplace(*call.deadline, call_id);
  }
  if (request.op == Op::num_keys || request.op == Op::stats) {
    for (const auto& member : homes_->members()) send_part(now, request, call_id, member, {});
    return;
  }
  std::map<std::size_t, std::vector<std::size_t>> by_home;
  for (std::size_t i = 0; i < request.keys.size(); ++i) {
    by_home[homes_->home_index(request.keys[i])].push_back(i);
  }
  for (auto& [home, indices] : by_home) {
    send_part(now, request, call_id, homes_->members()[home], std::move(indices));
  }
}

void StoreService::send_part(Time now, const StoreRequest& request, std::uint64_t call_id,
                             const std::string& home, std::vector<std::size_t> key_indices) {
  StoreRequest part;
  part.run_id = options_.run_id;
  part.request_id = next_id_++;
  part.reply_to = options_.self_endpoint;
  part.round = assignment_->round;
  part.at_home = true;
  part.op = request.op;
  part.amount = request.amount;
  part.timeout_ms = request.timeout_ms;
  for (const std::size_t i : key_indices) {
    part.keys.push_back(request.keys[i]);
    if (request.op == Op::set) part.values.push_back(request.values[i]);
  }
  if (request.op == Op::compare_set) part.values = request.values;

  calls_.at(call_id).parts.insert(part.request_id);
  Part& record = parts_[part.request_id];
  record.call_id = call_id;
  record.key_indices = std::move(key_indices);
  record.keys = part.keys;
  record.home = home;
  if (dead_homes_.count(home)) {
    answer_locally(part.request_id, dead_home_reply(record));
    return;
  }
  if (request.op == Op::stats) {
    if (home == options_.self_endpoint) {
      Reply reply;
      reply.values.push_back(encode_member_stats(member_stats()));
      answer_locally(part.request_id, std::move(reply));
    } else {
      outgoing_.push_back(Outgoing{home, encode(StoreMessage(std::move(part)))});
    }
    return;
  }
  if (home == options_.self_endpoint) {
    ++stats_.home_requests;
    const StoreState::Ticket ticket = next_id_++;
    record.local_ticket = ticket;
    origins_[ticket] = Origin{part.request_id, "", 0};
    state_.apply(now, ticket, to_state_request(now, part));
    return;
  }
  ++stats_.forwarded;
  outgoing_.push_back(Outgoing{home, encode(StoreMessage(std::move(part)))});
}

void StoreService::answer_locally(std::uint64_t part_id, Reply reply) {
  local_answers_.emplace_back(part_id, std::move(reply));
}

Reply StoreService::dead_home_reply(const Part& part) const {
  Reply reply;
  reply.status = Status::unavailable;
  reply.key = part.keys.empty() ? "" : part.keys.front();
  reply.detail = "the home member " + describe_member(part.home) +
                 " was declared dead by the membership (it stopped answering probes); the "
                 "keys it held are lost (the store keeps one copy of each key)";
  return reply;
}

void StoreService::on_member_dead(const std::string& endpoint) {
  if (endpoint == options_.self_endpoint) return;
  dead_homes_.insert(endpoint);
  std::vector<std::uint64_t> waiting;
  for (const auto& [part_id, part] : parts_) {
    if (part.home == endpoint) waiting.push_back(part_id);
  }
  for (const std::uint64_t part_id : waiting) {
    const auto found = parts_.find(part_id);
    if (found == parts_.end()) continue;  // its call failed already through another part
    const Reply reply = dead_home_reply(found->second);
    complete_part(part_id, reply, endpoint);
  }
  if (!waiting.empty() && warnings_.size() < kMaxWarnings) {
    warnings_.push_back("store: " + describe_member(endpoint) + " was declared dead; " +
                        std::to_string(waiting.size()) +
                        " request(s) waiting for it failed as unavailable");
  }
}

void StoreService::handle_response(const StoreResponse& response) {
  dead_homes_.erase(response.sender);  // it answered: alive
  auto part = parts_.find(response.request_id);
  if (part == parts_.end()) return;  // its call finished already (error or timeout)
  Reply reply{response.status, response.values, response.number, response.key, response.detail};
  const std::string home = part->second.home;  // a copy: complete_part erases the part
  complete_part(response.request_id, reply, home);
}

void StoreService::drain_state() {
  while (!local_answers_.empty()) {
    auto [part_id, reply] = std::move(local_answers_.front());
    local_answers_.pop_front();
    auto part = parts_.find(part_id);
    if (part == parts_.end()) continue;  // its call finished already
    const std::string home = part->second.home;
    complete_part(part_id, reply, home);
  }
  while (auto answered = state_.poll_reply()) {
    auto origin = origins_.find(answered->first);
    if (origin == origins_.end()) continue;
    const Origin where = std::move(origin->second);
    origins_.erase(origin);
    if (where.local_part) {
      complete_part(*where.local_part, answered->second, options_.self_endpoint);
      continue;
    }
    const Reply& reply = answered->second;
    StoreResponse response{options_.run_id, where.request_id, options_.self_endpoint,
                           reply.status,    reply.values,     reply.number,
                           reply.key,       reply.detail,     ""};
    respond(where.reply_to, std::move(response));
  }
}

void StoreService::complete_part(std::uint64_t part_id, const Reply& reply,
                                 const std::string& home) {
  auto found = parts_.find(part_id);
  if (found == parts_.end()) return;
  const Part part = std::move(found->second);
  parts_.erase(found);
  auto call_it = calls_.find(part.call_id);
  assert(call_it != calls_.end());
  Call& call = call_it->second;
  call.parts.erase(part_id);
  if (reply.status != Status::ok) {
    finish_call(part.call_id, reply, home);
    return;
  }
  switch (call.op) {
    case Op::get:
      for (std::size_t i = 0; i < part.key_indices.size() && i < reply.values.size(); ++i) {
        call.values[part.key_indices[i]] = reply.values[i];
      }
      break;
    case Op::check:
      call.number = call.number != 0 && reply.number != 0 ? 1 : 0;
      break;
    case Op::num_keys:
      call.number += reply.number;
      break;
    case Op::stats:
      call.values.insert(call.values.end(), reply.values.begin(), reply.values.end());
      break;
    case Op::add:
    case Op::delete_key:
    case Op::compare_set:
      call.number = reply.number;
      call.values = reply.values;
      break;
    case Op::set:
    case Op::wait:
    case Op::ping:
      break;
  }
  if (call.parts.empty()) {
    Reply done;
    done.values = std::move(call.values);
    done.number = call.number;
    finish_call(part.call_id, done, "");
  }
}

void StoreService::finish_call(std::uint64_t call_id, const Reply& reply, const std::string& home) {
  auto found = calls_.find(call_id);
  if (found == calls_.end()) return;
  Call call = std::move(found->second);
  calls_.erase(found);
  if (call.deadline) call_deadlines_.erase({*call.deadline, call_id});
  for (const std::uint64_t part_id : call.parts) {  // parts still outstanding: forget them
    auto part = parts_.find(part_id);
    if (part == parts_.end()) continue;
    if (part->second.local_ticket) {
      state_.cancel(*part->second.local_ticket);
      origins_.erase(*part->second.local_ticket);
    }
    parts_.erase(part);
  }
  StoreResponse response{
      options_.run_id, call.client_request_id, options_.self_endpoint,
      reply.status,    reply.values,           reply.number,
      reply.key,       reply.detail,           home.empty() ? "" : describe_member(home)};
  respond(call.reply_to, std::move(response));
}

void StoreService::respond(const std::string& to, StoreResponse response) {
  auto bytes = encode(StoreMessage(response));
  if (bytes.size() > kMaxStoreMessageBytes) {
    const std::size_t size = bytes.size();
    response.status = Status::too_large;
    response.values.clear();
    response.detail = "the answer (" + std::to_string(size) +
                      " bytes) is larger than the 4 MiB a store message may carry; get "
                      "fewer keys at once";
    bytes = encode(StoreMessage(std::move(response)));
  }
  outgoing_.push_back(Outgoing{to, std::move(bytes)});
}

StoreResponse StoreService::answer_to(const StoreRequest& request) const {
  StoreResponse response;
  response.run_id = options_.run_id;
  response.request_id = request.request_id;
  response.sender = options_.self_endpoint;
  return response;
}

void StoreService::refuse(const StoreRequest& request, Status status, const std::string& detail) {
  StoreResponse response = answer_to(request);
  response.status = status;
  response.detail = detail;
  response.home = options_.self_endpoint;
  respond(request.reply_to, std::move(response));
}

void StoreService::on_tick(Time now) {
  state_.on_tick(now);
  drain_state();
  expire_calls(now);
  expire_waiting_for_view(now);
}

void StoreService::expire_calls(Time now) {
  while (!call_deadlines_.empty() && call_deadlines_.begin()->first <= now) {
    const std::uint64_t call_id = call_deadlines_.begin()->second;
    const Call& call = calls_.at(call_id);
    std::string silent;
    for (const std::uint64_t part_id : call.parts) {
      const std::string& home = parts_.at(part_id).home;
      silent += (silent.empty() ? "" : ", ") + describe_member(home);
    }
    const std::string first_home = call.parts.empty() ? "" : parts_.at(*call.parts.begin()).home;
    Reply reply;
    reply.status = Status::unavailable;
    reply.detail = "no answer from the home member(s) " + silent + " (dead, or unreachable from " +
                   options_.self_endpoint + ")";
    if (warnings_.size() < kMaxWarnings) warnings_.push_back("store: " + reply.detail);
    finish_call(call_id, reply, first_home);
  }
}

void StoreService::expire_waiting_for_view(Time now) {
  while (!waiting_for_view_.empty()) {
    auto& [arrival, request] = waiting_for_view_.front();
    if (request.timeout_ms == 0 || arrival + to_time(request.timeout_ms) > now) {
      // Not expired; later arrivals may be, so look at all of them.
      break;
    }
    refuse(request, Status::not_ready, not_ready_detail(request));
    waiting_bytes_ -= held_bytes(request);
    waiting_for_view_.pop_front();
  }
  // Expired entries behind a longer-lived one are rare (timeouts usually equal); sweep them.
  std::erase_if(waiting_for_view_, [&](const auto& entry) {
    const auto& [arrival, request] = entry;
    if (request.timeout_ms == 0 || arrival + to_time(request.timeout_ms) > now) return false;
    refuse(request, Status::not_ready, not_ready_detail(request));
    waiting_bytes_ -= held_bytes(request);
    return true;
  });
}

std::string StoreService::not_ready_detail(const StoreRequest& request) const {
  if (for_later_round(request)) {
    return options_.self_endpoint + " has not committed round " + std::to_string(request.round) +
           " within the request's timeout (" + seconds_text(request.timeout_ms) +
           "; it is in round " + std::to_string(assignment_->round) +
           "): it may have been left out of that round";
  }
  return "this node has not agreed on a view within the request's timeout (" +
         seconds_text(request.timeout_ms) +
         "): the store works once every node has joined (see `gossip-rdzv members`)";
}

std::optional<Outgoing> StoreService::poll_send() {
  if (outgoing_.empty()) return std::nullopt;
  Outgoing out = std::move(outgoing_.front());
  outgoing_.pop_front();
  return out;
}

std::optional<std::string> StoreService::poll_warning() {
  if (warnings_.empty()) return std::nullopt;
  std::string text = std::move(warnings_.front());
  warnings_.pop_front();
  return text;
}

std::optional<Time> StoreService::next_wakeup() const {
  std::optional<Time> next = state_.next_deadline();
  auto earlier = [&](Time candidate) {
    if (!next || candidate < *next) next = candidate;
  };
  if (!call_deadlines_.empty()) earlier(call_deadlines_.begin()->first);
  for (const auto& [arrival, request] : waiting_for_view_) {
    if (request.timeout_ms != 0) earlier(arrival + to_time(request.timeout_ms));
  }
  return next;
}

std::string StoreService::describe_member(const std::string& endpoint) const {
  if (assignment_) {
    for (const auto& node : assignment_->nodes) {
      if (node.endpoint != endpoint) continue;
      return endpoint + " (node rank " + std::to_string(node.node_rank) + ", " + node.hostname +
             ")";
    }
  }
  return endpoint;
}

bool StoreService::invariants() const {
  for (const auto& [part_id, part] : parts_) {
    auto call = calls_.find(part.call_id);
    if (call == calls_.end() || !call->second.parts.count(part_id)) return false;
  }
  for (const auto& [call_id, call] : calls_) {
    for (const std::uint64_t part_id : call.parts) {
      if (!parts_.count(part_id)) return false;
    }
    if (call.deadline && !call_deadlines_.count({*call.deadline, call_id})) return false;
  }
  std::size_t held = 0;
  for (const auto& [arrival, request] : waiting_for_view_) held += held_bytes(request);
  if (held != waiting_bytes_) return false;
  for (const auto& [arrival, request] : waiting_for_view_) {
    if (homes_ && !for_later_round(request)) return false;  // released at the commit
  }
  return call_deadlines_.size() <= calls_.size() && state_.invariants();
}

}  // namespace gossip_rdzv::store
