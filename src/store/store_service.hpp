// The store as one agent runs it: the home of its share of the keys, and the router of its
// local workers' requests. A pure state machine like the protocol core: bytes in
// (on_bytes), time in (on_tick), messages out (poll_send); the runtime feeds it the store
// messages that arrive on the gossip socket and sends what it produces.
//
// A worker's request reaches its agent; the agent splits it by home (rendezvous hashing over
// the agreed view, store/home.hpp), sends each part to its home in one hop (or applies it
// itself when it is the home), gathers the answers and replies. Each key lives on exactly one
// member, so operations on a key are linearizable at its home.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "gossip_rdzv/assignment.hpp"
#include "store/home.hpp"
#include "store/store_codec.hpp"
#include "store/store_state.hpp"

namespace gossip_rdzv::store {

struct ServiceOptions {
  std::string self_endpoint;  ///< this node's gossip endpoint: homes answer it there
  std::string run_id;
  /// How much longer than a request's own timeout the agent waits for a home before it
  /// reports the home as unavailable (covers the home's own timeout answer in flight).
  Time home_grace = std::chrono::seconds(2);
  /// Requests that arrive before the view is agreed (from workers, or parts from agents
  /// that committed first) wait for it at most their own timeout, and never more than this
  /// many, holding at most max_waiting_bytes of keys and values together; beyond either the
  /// request is refused with Status::not_ready.
  std::size_t max_waiting_for_view = 100000;
  std::size_t max_waiting_bytes = std::size_t{64} << 20;
};

struct Outgoing {
  std::string to;  ///< endpoint "host:port"
  Bytes bytes;
};

/// The load this agent carried since it started. Op::stats requests (which read these) are
/// not counted in them. Clients read every member's with Store::member_stats().
struct ServiceStats {
  std::uint64_t client_requests = 0;  ///< requests from workers (or any client)
  std::uint64_t home_requests = 0;    ///< requests (parts) this node applied as a home
  std::uint64_t forwarded = 0;        ///< parts sent to another home
  std::uint64_t refused = 0;          ///< undecodable, other run, other version
};

class StoreService {
 public:
  explicit StoreService(ServiceOptions options);

  /// The agreed view: from now on keys have homes. Requests that waited for it run now.
  /// A view of another round than the current one starts that round (docs/store.md,
  /// "Rounds"): the keys this home held are dropped, and every request of the old round still
  /// open here (its clients' calls, other agents' parts parked at this home) is answered
  /// Status::refused, saying the round is over. Parts for a later round than this node's
  /// wait until it commits that round.
  void on_committed(Time now, const Assignment& assignment);
  /// One message that is_store_message() claimed.
  void on_bytes(Time now, const std::uint8_t* data, std::size_t size);
  /// Expires parked requests and requests whose home did not answer.
  void on_tick(Time now);
  /// The membership declared `endpoint` dead (SWIM, after the commit): every request waiting
  /// for it as a home fails now with Status::unavailable naming the key and the home, and
  /// new ones fail at once, until it is seen alive again (on_member_alive, or a store
  /// message from it).
  void on_member_dead(const std::string& endpoint);
  /// `endpoint` is alive after all (it joined or restarted, or a message from it arrived):
  /// it is a home again.
  void on_member_alive(const std::string& endpoint) { dead_homes_.erase(endpoint); }

  std::optional<Outgoing> poll_send();
  /// Something worth a log line (a refused peer, a silent home), oldest first.
  std::optional<std::string> poll_warning();
  std::optional<Time> next_wakeup() const;

  const ServiceStats& stats() const { return stats_; }
  bool has_view() const { return homes_.has_value(); }
  /// "host:port (node rank R, hostname H)", or the endpoint alone before the view.
  std::string describe_member(const std::string& endpoint) const;
  bool invariants() const;

 private:
  // A worker's request being answered, possibly by several homes.
  struct Call {
    std::string reply_to;
    std::uint64_t client_request_id = 0;
    Op op = Op::get;
    std::vector<Bytes> values;  ///< get: one slot per key
    std::int64_t number = 0;
    std::set<std::uint64_t> parts;  ///< outstanding part ids
    std::optional<Time> deadline;
  };
  // One home's share of a call.
  struct Part {
    std::uint64_t call_id = 0;
    std::vector<std::size_t> key_indices;
    std::vector<std::string> keys;  ///< the keys of key_indices, to name them in errors
    std::string home;
    std::optional<StoreState::Ticket> local_ticket;  ///< set when this node is the home
  };
  // Who a StoreState ticket answers: a part of our own call, or a remote agent.
  struct Origin {
    std::optional<std::uint64_t> local_part;
    std::string reply_to;
    std::uint64_t request_id = 0;
  };

  void handle_request(Time now, StoreRequest request);
  void handle_response(const StoreResponse& response);
  void handle_undecodable(const StoreDecodeError& error);
  void serve_as_home(Time now, const StoreRequest& request);
  void dispatch(Time now, const StoreRequest& request);
  void send_part(Time now, const StoreRequest& request, std::uint64_t call_id,
                 const std::string& home, std::vector<std::size_t> key_indices);
  void drain_state();
  void complete_part(std::uint64_t part_id, const Reply& reply, const std::string& home);
  void finish_call(std::uint64_t call_id, const Reply& reply, const std::string& home);
  void respond(const std::string& to, StoreResponse response);
  void refuse(const StoreRequest& request, Status status, const std::string& detail);
  /// An ok response to `request` from this node, to fill in.
  StoreResponse answer_to(const StoreRequest& request) const;
  void expire_calls(Time now);
  MemberStats member_stats() const;
  /// A reply to one of our own parts that needs no message (this node is the home of a stats
  /// part, or the home is dead); answered in drain_state(), never inside dispatch().
  void answer_locally(std::uint64_t part_id, Reply reply);
  Reply dead_home_reply(const Part& part) const;
  void expire_waiting_for_view(Time now);
  /// A part sent by an agent that is already in a later round than this node.
  bool for_later_round(const StoreRequest& request) const;
  /// Why a request that waited for a view (of a later round, for a part) timed out.
  std::string not_ready_detail(const StoreRequest& request) const;
  /// Drops the current round's keys and answers its open requests (on_committed).
  void end_round(std::uint32_t next_round);
  void hold_until_view(Time now, StoreRequest request);
  /// Runs a request that waited for the view: a part at its home, or a client's request.
  void release(Time now, const StoreRequest& request);
  Request to_state_request(Time now, const StoreRequest& request) const;

  ServiceOptions options_;
  std::optional<Assignment> assignment_;
  std::optional<HomeMap> homes_;
  StoreState state_;
  std::uint64_t next_id_ = 1;
  std::unordered_map<std::uint64_t, Call> calls_;
  std::unordered_map<std::uint64_t, Part> parts_;
  std::unordered_map<StoreState::Ticket, Origin> origins_;
  std::set<std::pair<Time, std::uint64_t>> call_deadlines_;
  std::deque<std::pair<Time, StoreRequest>> waiting_for_view_;  ///< (arrival, request)
  std::size_t waiting_bytes_ = 0;  ///< keys and values held in waiting_for_view_
  std::deque<std::pair<std::uint64_t, Reply>> local_answers_;  ///< (part id, reply)
  std::set<std::string> dead_homes_;  ///< declared dead and not heard from since
  std::deque<Outgoing> outgoing_;
  std::deque<std::string> warnings_;
  ServiceStats stats_;
};

}  // namespace gossip_rdzv::store
