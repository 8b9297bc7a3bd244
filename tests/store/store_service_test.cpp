// The agent's routing, in memory: several StoreServices exchange bytes through a queue, a
// test client talks to one of them, time is virtual.
#include "store/store_service.hpp"

#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "support/store_bytes.hpp"

namespace gossip_rdzv::store {
namespace {

using namespace std::chrono_literals;

using testing_support::b;
using testing_support::s;

Assignment view_of(std::size_t nodes) {
  Assignment a;
  a.run_id = "job";
  a.round = 0;
  for (std::size_t i = 0; i < nodes; ++i) {
    NodeEntry node;
    node.node_rank = static_cast<std::uint32_t>(i);
    node.endpoint = "10.0.0." + std::to_string(i + 1) + ":29400";
    node.hostname = "node" + std::to_string(i);
    a.nodes.push_back(node);
  }
  return a;
}

class Net {
 public:
  explicit Net(std::size_t nodes) : view_(view_of(nodes)) {
    for (const auto& node : view_.nodes) {
      services_[node.endpoint] =
          std::make_unique<StoreService>(ServiceOptions{node.endpoint, "job"});
    }
  }
  void commit_all() {
    for (auto& [endpoint, service] : services_) commit(endpoint);
  }
  void commit(const std::string& endpoint) {
    Assignment mine = view_;
    for (const auto& node : mine.nodes) {
      if (node.endpoint == endpoint) mine.my_node_rank = node.node_rank;
    }
    services_.at(endpoint)->on_committed(now, mine);
    pump();
  }
  std::string endpoint(std::size_t i) const { return view_.nodes.at(i).endpoint; }
  /// The view of the next elastic round: `round`, with the first `keep` nodes (commit() then
  /// hands it to each node).
  void new_round(std::uint32_t round, std::size_t keep) {
    view_.round = round;
    view_.nodes.resize(keep);
  }
  /// A key whose home is node `node` in the current view.
  std::string key_homed_at(std::size_t node, const std::string& prefix = "k") const {
    std::vector<std::string> endpoints;
    for (const auto& entry : view_.nodes) endpoints.push_back(entry.endpoint);
    const HomeMap homes(endpoints);
    for (int i = 0;; ++i) {
      const std::string candidate = prefix + std::to_string(i);
      if (homes.members()[homes.home_index(candidate)] == endpoint(node)) return candidate;
    }
  }
  StoreService& service(std::size_t i) { return *services_.at(endpoint(i)); }

  // Sends from a client at `client` to the agent of node `agent`; returns the request id.
  std::uint64_t send(std::size_t agent, StoreRequest request, const std::string& client = "c:1") {
    request.request_id = ++last_id_;
    request.reply_to = client;
    if (request.run_id.empty()) request.run_id = "job";
    const auto bytes = encode(StoreMessage(request));
    service(agent).on_bytes(now, bytes.data(), bytes.size());
    pump();
    return request.request_id;
  }
  std::optional<StoreResponse> answer(std::uint64_t id) {
    auto found = answers_.find(id);
    if (found == answers_.end()) return std::nullopt;
    return found->second;
  }
  StoreResponse call(std::size_t agent, StoreRequest request) {
    const auto id = send(agent, std::move(request));
    auto response = answer(id);
    EXPECT_TRUE(response) << "no answer";
    return response.value_or(StoreResponse{});
  }
  void advance(Time by) {
    now += by;
    for (auto& [endpoint, service] : services_) service->on_tick(now);
    pump();
  }
  // Delivers every queued message (a dead node drops what it receives).
  void pump() {
    bool moved = true;
    while (moved) {
      moved = false;
      for (auto& [from, service] : services_) {
        while (auto out = service->poll_send()) {
          moved = true;
          ++messages;
          deliver(*out);
        }
        EXPECT_TRUE(service->invariants());
      }
    }
  }
  std::set<std::string> dead;
  Time now{0};
  std::size_t messages = 0;

 private:
  void deliver(const Outgoing& out) {
    if (dead.count(out.to)) return;
    auto target = services_.find(out.to);
    if (target != services_.end()) {
      target->second->on_bytes(now, out.bytes.data(), out.bytes.size());
      return;
    }
    auto decoded = decode_store(out.bytes.data(), out.bytes.size());
    ASSERT_TRUE(std::holds_alternative<StoreMessage>(decoded));
    const auto& response = std::get<StoreResponse>(std::get<StoreMessage>(decoded));
    answers_[response.request_id] = response;
  }
  Assignment view_;
  std::map<std::string, std::unique_ptr<StoreService>> services_;
  std::map<std::uint64_t, StoreResponse> answers_;
  std::uint64_t last_id_ = 0;
};

StoreRequest req(Op op, std::vector<std::string> keys, std::vector<Bytes> values = {},
                 std::uint64_t timeout_ms = 30000, std::int64_t amount = 0) {
  StoreRequest r;
  r.op = op;
  r.keys = std::move(keys);
  r.values = std::move(values);
  r.timeout_ms = timeout_ms;
  r.amount = amount;
  return r;
}

TEST(StoreService, SetOnOneNodeGetOnAnother) {
  Net net(4);
  net.commit_all();
  EXPECT_EQ(net.call(0, req(Op::set, {"k"}, {b("v")})).status, Status::ok);
  const auto got = net.call(3, req(Op::get, {"k"}));
  EXPECT_EQ(got.status, Status::ok);
  EXPECT_EQ(s(got.values.at(0)), "v");
}

TEST(StoreService, EachKeyLivesOnExactlyItsHome) {
  Net net(8);
  net.commit_all();
  for (int i = 0; i < 200; ++i)
    net.call(i % 8, req(Op::set, {"key" + std::to_string(i)}, {b("x")}));
  std::int64_t total = 0;
  std::vector<std::string> endpoints;
  for (std::size_t i = 0; i < 8; ++i) endpoints.push_back(net.endpoint(i));
  HomeMap homes(endpoints);
  for (std::size_t i = 0; i < 8; ++i) {
    total += static_cast<std::int64_t>(net.service(i).stats().home_requests);
    EXPECT_GT(net.service(i).stats().home_requests, 5u) << "node " << i << " served little";
  }
  EXPECT_EQ(total, 200);
  EXPECT_EQ(net.call(5, req(Op::num_keys, {})).number, 200);
}

TEST(StoreService, BlockingGetIsReleasedByALaterSetElsewhere) {
  Net net(4);
  net.commit_all();
  const auto waiting = net.send(1, req(Op::get, {"late"}, {}, 60000));
  net.advance(2s);
  EXPECT_FALSE(net.answer(waiting));
  net.call(2, req(Op::set, {"late"}, {b("here")}));
  auto got = net.answer(waiting);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->status, Status::ok);
  EXPECT_EQ(s(got->values.at(0)), "here");
}

TEST(StoreService, MultiGetAcrossHomesKeepsKeyOrder) {
  Net net(8);
  net.commit_all();
  std::vector<std::string> keys;
  for (int i = 0; i < 32; ++i) {
    keys.push_back("rank_" + std::to_string(i));
    net.call(i % 8, req(Op::set, {keys.back()}, {b(std::to_string(i * i))}));
  }
  const auto got = net.call(3, req(Op::get, keys));
  ASSERT_EQ(got.status, Status::ok);
  ASSERT_EQ(got.values.size(), keys.size());
  for (int i = 0; i < 32; ++i) EXPECT_EQ(s(got.values[i]), std::to_string(i * i));
}

TEST(StoreService, AddFromEveryNodeLosesNothing) {
  Net net(8);
  net.commit_all();
  std::int64_t last = 0;
  for (int i = 0; i < 80; ++i)
    last = net.call(i % 8, req(Op::add, {"counter"}, {}, 30000, 1)).number;
  EXPECT_EQ(last, 80);
  EXPECT_EQ(s(net.call(0, req(Op::get, {"counter"})).values.at(0)), "80");
}

TEST(StoreService, WaitTimesOutNamingKeyAndHome) {
  Net net(4);
  net.commit_all();
  const auto id = net.send(0, req(Op::wait, {"never"}, {}, 1000));
  net.advance(999ms);
  EXPECT_FALSE(net.answer(id));
  net.advance(1ms);
  auto got = net.answer(id);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->status, Status::timeout);
  EXPECT_EQ(got->key, "never");
  EXPECT_NE(got->home.find("node rank"), std::string::npos) << got->home;
}

TEST(StoreService, DeadHomeIsReportedUnavailableAfterTheGrace) {
  Net net(4);
  net.commit_all();
  // Find a key whose home is node 2, then kill node 2.
  std::vector<std::string> endpoints;
  for (std::size_t i = 0; i < 4; ++i) endpoints.push_back(net.endpoint(i));
  HomeMap homes(endpoints);
  std::string key;
  for (int i = 0; homes.home_of(key) != net.endpoint(2); ++i) key = "k" + std::to_string(i);
  net.dead.insert(net.endpoint(2));
  const auto id = net.send(0, req(Op::set, {key}, {b("v")}, 1000));
  net.advance(1s);
  EXPECT_FALSE(net.answer(id));
  net.advance(5s);
  auto got = net.answer(id);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->status, Status::unavailable);
  EXPECT_NE(got->home.find(net.endpoint(2)), std::string::npos);
  EXPECT_NE(got->detail.find("node rank 2"), std::string::npos) << got->detail;
}

std::string key_homed_at(Net& net, std::size_t nodes, std::size_t home) {
  std::vector<std::string> endpoints;
  for (std::size_t i = 0; i < nodes; ++i) endpoints.push_back(net.endpoint(i));
  HomeMap homes(endpoints);
  std::string key;
  for (int i = 0; homes.home_of(key) != net.endpoint(home); ++i) key = "k" + std::to_string(i);
  return key;
}

TEST(StoreService, DeclaredDeathReleasesAGetThatWaitsForEver) {
  Net net(4);
  net.commit_all();
  const std::string key = key_homed_at(net, 4, 3);
  const auto id = net.send(0, req(Op::get, {key}, {}, /*timeout_ms=*/0));
  net.advance(std::chrono::hours(1));
  EXPECT_FALSE(net.answer(id));  // parked at its home, no deadline
  net.dead.insert(net.endpoint(3));
  net.service(0).on_member_dead(net.endpoint(3));
  net.pump();
  auto got = net.answer(id);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->status, Status::unavailable);
  EXPECT_EQ(got->key, key);
  EXPECT_NE(got->home.find(net.endpoint(3)), std::string::npos) << got->home;
  EXPECT_NE(got->detail.find("declared dead"), std::string::npos) << got->detail;
  EXPECT_TRUE(net.service(0).invariants());
}

TEST(StoreService, RequestsForADeadHomeFailAtOnceUntilItIsBack) {
  Net net(4);
  net.commit_all();
  const std::string key = key_homed_at(net, 4, 2);
  net.service(1).on_member_dead(net.endpoint(2));
  const auto got = net.call(1, req(Op::wait, {key, "other"}, {}, 0));
  EXPECT_EQ(got.status, Status::unavailable);
  EXPECT_EQ(got.key, key);
  // Keys on live homes are not affected.
  const std::string alive_key = key_homed_at(net, 4, 3);
  EXPECT_EQ(net.call(1, req(Op::set, {alive_key}, {b("v")})).status, Status::ok);
  // The membership sees it again (restarted, or a refuted suspicion): it is a home again.
  net.service(1).on_member_alive(net.endpoint(2));
  EXPECT_EQ(net.call(1, req(Op::set, {key}, {b("v")})).status, Status::ok);
}

TEST(StoreService, AStoreMessageFromADeclaredDeadHomeShowsItAlive) {
  Net net(2);
  net.commit_all();
  const std::string key = key_homed_at(net, 2, 1);
  net.service(0).on_member_dead(net.endpoint(1));
  EXPECT_EQ(net.call(0, req(Op::set, {key}, {b("v")})).status, Status::unavailable);
  // Node 1 forwards a part to node 0 (a key homed there): node 0 hears from it.
  EXPECT_EQ(net.call(1, req(Op::set, {key_homed_at(net, 2, 0)}, {b("v")})).status, Status::ok);
  EXPECT_EQ(net.call(0, req(Op::set, {key}, {b("v")})).status, Status::ok);
}

TEST(StoreService, StatsCountWhatEachMemberServedAndNotThemselves) {
  Net net(4);
  net.commit_all();
  for (int i = 0; i < 100; ++i) {
    net.call(static_cast<std::size_t>(i) % 4, req(Op::set, {"s" + std::to_string(i)}, {b("v")}));
  }
  auto read = [&](std::size_t agent) {
    const auto got = net.call(agent, req(Op::stats, {}));
    EXPECT_EQ(got.status, Status::ok);
    std::map<std::string, MemberStats> by_member;
    for (const auto& value : got.values) {
      const auto stats = decode_member_stats(value);
      EXPECT_TRUE(stats);
      if (stats) by_member[stats->member] = *stats;
    }
    return by_member;
  };
  const auto first = read(2);
  ASSERT_EQ(first.size(), 4u);
  std::uint64_t served = 0, keys = 0, clients = 0;
  for (const auto& [member, stats] : first) {
    served += stats.home_requests;
    keys += stats.keys;
    clients += stats.client_requests;
    EXPECT_GT(stats.home_requests, 0u) << member;  // 100 keys over 4 homes: all get some
  }
  EXPECT_EQ(served, 100u);
  EXPECT_EQ(keys, 100u);
  EXPECT_EQ(clients, 100u);
  EXPECT_EQ(read(0), first);  // reading them changed nothing
}

TEST(StoreService, PingIsAnsweredByTheAgentAtOnceEvenBeforeTheView) {
  Net net(3);
  const auto before = net.messages;
  const auto got = net.call(1, req(Op::ping, {}));
  EXPECT_EQ(got.status, Status::ok);
  EXPECT_EQ(net.messages - before, 1u);  // the answer only: no home involved
  EXPECT_EQ(net.service(1).stats().client_requests, 0u);
}

TEST(StoreService, RequestsBeforeTheViewWaitForIt) {
  Net net(2);
  const auto id = net.send(0, req(Op::set, {"early"}, {b("1")}, 10000));
  net.advance(1s);
  EXPECT_FALSE(net.answer(id));
  net.commit_all();
  auto got = net.answer(id);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->status, Status::ok);
}

TEST(StoreService, RequestsBeforeTheViewTimeOutAsNotReady) {
  Net net(2);
  const auto id = net.send(0, req(Op::get, {"x"}, {}, 2000));
  net.advance(2s);
  auto got = net.answer(id);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->status, Status::not_ready);
}

TEST(StoreService, OtherRunIdIsRefused) {
  Net net(2);
  net.commit_all();
  auto request = req(Op::set, {"k"}, {b("v")});
  request.run_id = "other";
  const auto got = net.call(0, request);
  EXPECT_EQ(got.status, Status::refused);
  EXPECT_NE(got.detail.find("other"), std::string::npos);
}

TEST(StoreService, CompareSetAndDeleteGoToTheHome) {
  Net net(3);
  net.commit_all();
  EXPECT_EQ(s(net.call(0, req(Op::compare_set, {"c"}, {b(""), b("one")})).values.at(0)), "one");
  EXPECT_EQ(s(net.call(1, req(Op::compare_set, {"c"}, {b("one"), b("two")})).values.at(0)), "two");
  EXPECT_EQ(s(net.call(2, req(Op::compare_set, {"c"}, {b("x"), b("y")})).values.at(0)), "two");
  EXPECT_EQ(net.call(1, req(Op::delete_key, {"c"})).number, 1);
  EXPECT_EQ(net.call(2, req(Op::check, {"c"})).number, 0);
}

TEST(StoreService, CheckSpansHomes) {
  Net net(4);
  net.commit_all();
  net.call(0, req(Op::set, {"a", "b", "c"}, {b("1"), b("2"), b("3")}));
  EXPECT_EQ(net.call(1, req(Op::check, {"a", "b", "c"})).number, 1);
  EXPECT_EQ(net.call(1, req(Op::check, {"a", "b", "zz"})).number, 0);
}

TEST(StoreService, GarbageIsIgnoredAndWarnedAbout) {
  Net net(1);
  net.commit_all();
  const std::vector<std::uint8_t> junk = {0x93, 0xa4, 'G', 'R', 'D', 'S', 0xff};
  net.service(0).on_bytes(net.now, junk.data(), junk.size());
  EXPECT_TRUE(net.service(0).poll_warning());
  EXPECT_EQ(net.service(0).stats().refused, 1u);
}

TEST(StoreService, OneHopPerKey) {
  Net net(8);
  net.commit_all();
  const auto before = net.messages;
  net.call(0, req(Op::set, {"single"}, {b("v")}));
  // client <- agent, plus at most agent -> home -> agent.
  EXPECT_LE(net.messages - before, 3u);
}

// An agent that committed first sends a part to a home that has not committed yet: the home
// holds it until its own view, then applies it, and the worker's call succeeds.
TEST(StoreService, PartReachingAHomeBeforeItsViewWaitsForIt) {
  Net net(2);
  net.commit(net.endpoint(0));
  std::string key;  // a key whose home is node 1
  HomeMap homes({net.endpoint(0), net.endpoint(1)});
  for (int i = 0; key.empty(); ++i) {
    const std::string candidate = "k" + std::to_string(i);
    if (homes.members()[homes.home_index(candidate)] == net.endpoint(1)) key = candidate;
  }
  const auto id = net.send(0, req(Op::set, {key}, {b("v")}, 0));
  EXPECT_FALSE(net.answer(id));
  EXPECT_EQ(net.service(1).stats().home_requests, 0u);  // held, not applied
  net.commit(net.endpoint(1));
  ASSERT_TRUE(net.answer(id));
  EXPECT_EQ(net.answer(id)->status, Status::ok);
  EXPECT_EQ(net.service(1).stats().home_requests, 1u);
}

// Bytes from anyone that claim to be a part for their home are not written before the view,
// and once there is one, only if they are of its round and from one of its members.
TEST(StoreService, PartOfAnotherRoundBeforeTheViewIsNeverApplied) {
  Net net(2);
  StoreRequest part = req(Op::set, {"k"}, {b("stranger")}, 0);
  part.at_home = true;
  part.round = 0;
  const auto stranger = net.send(0, part, "stranger:1");
  part.round = 7;
  net.send(0, part, net.endpoint(1));  // as if from a member: its refusal goes there
  const auto later = net.send(0, part, "stranger:1");
  EXPECT_EQ(net.service(0).stats().home_requests, 0u);
  net.commit_all();
  EXPECT_EQ(net.service(0).stats().home_requests, 0u);
  EXPECT_EQ(net.call(0, req(Op::num_keys, {})).number, 0);
  ASSERT_TRUE(net.answer(stranger));
  EXPECT_EQ(net.answer(stranger)->status, Status::refused);
  EXPECT_NE(net.answer(stranger)->detail.find("no member"), std::string::npos)
      << net.answer(stranger)->detail;
  // A part of a later round waits for this node's commit of that round, which checks it.
  EXPECT_FALSE(net.answer(later));
  net.new_round(7, 2);
  net.commit_all();
  ASSERT_TRUE(net.answer(later));
  EXPECT_EQ(net.answer(later)->status, Status::refused);
  EXPECT_EQ(net.call(0, req(Op::num_keys, {})).number, 1);  // the member's part only
}

// A part of a later round waits for that round at most its own timeout: the home may never
// commit it (left out of it).
TEST(StoreService, PartOfALaterRoundTimesOutNamingTheRound) {
  Net net(2);
  net.commit_all();
  StoreRequest part = req(Op::get, {"k"}, {}, 100);
  part.at_home = true;
  part.round = 3;
  const auto id = net.send(0, part, "c:9");
  net.advance(99ms);
  EXPECT_FALSE(net.answer(id));
  net.advance(1ms);
  ASSERT_TRUE(net.answer(id));
  EXPECT_EQ(net.answer(id)->status, Status::not_ready);
  EXPECT_NE(net.answer(id)->detail.find("has not committed round 3"), std::string::npos)
      << net.answer(id)->detail;
}

// docs/store.md, "Rounds": a home drops the keys of a round when it commits the next one.
TEST(StoreService, KeysOfAnOldRoundAreNotVisibleInTheNext) {
  Net net(3);
  net.commit_all();
  for (int i = 0; i < 20; ++i) {
    const std::string key = "r/" + std::to_string(i);
    ASSERT_EQ(net.call(i % 3, req(Op::set, {key}, {b("old")})).status, Status::ok);
  }
  EXPECT_EQ(net.call(0, req(Op::num_keys, {})).number, 20);
  net.new_round(1, 3);
  net.commit_all();
  EXPECT_EQ(net.call(1, req(Op::num_keys, {})).number, 0);
  EXPECT_EQ(net.call(2, req(Op::check, {"r/0", "r/1"})).number, 0);
  const auto id = net.send(0, req(Op::get, {"r/3"}, {}, 100));
  net.advance(100ms);
  ASSERT_TRUE(net.answer(id));
  EXPECT_EQ(net.answer(id)->status, Status::timeout);
  EXPECT_EQ(net.call(1, req(Op::set, {"r/3"}, {b("new")})).status, Status::ok);
  EXPECT_EQ(s(net.call(2, req(Op::get, {"r/3"})).values.at(0)), "new");
}

// Requests of the old round still open when a node commits the next one are answered: its
// clients' calls (to a remote home or to itself) and other agents' parts parked at it.
TEST(StoreService, OpenRequestsOfAnOldRoundAreRefusedWhenItEnds) {
  Net net(2);
  net.commit_all();
  const auto remote = net.send(0, req(Op::get, {net.key_homed_at(1)}, {}, 0));
  const auto local = net.send(0, req(Op::get, {net.key_homed_at(0)}, {}, 0));
  const auto parked = net.send(1, req(Op::wait, {net.key_homed_at(0, "w")}, {}, 0), "c:2");
  EXPECT_FALSE(net.answer(remote) || net.answer(local) || net.answer(parked));
  net.new_round(1, 2);
  net.commit(net.endpoint(0));
  for (const auto id : {remote, local, parked}) {
    ASSERT_TRUE(net.answer(id));
    EXPECT_EQ(net.answer(id)->status, Status::refused);
    EXPECT_NE(net.answer(id)->detail.find("round 0 is over"), std::string::npos)
        << net.answer(id)->detail;
  }
  net.commit(net.endpoint(1));
}

// A worker of the new round reaches a home still in the old round: its part waits for the
// home's commit of the new round, and never sees the old round's value.
TEST(StoreService, PartOfTheNextRoundWaitsForItsHomeToCommitIt) {
  Net net(2);
  net.commit_all();
  const std::string key = net.key_homed_at(1);
  ASSERT_EQ(net.call(0, req(Op::set, {key}, {b("old")})).status, Status::ok);
  net.new_round(1, 2);
  net.commit(net.endpoint(0));
  const auto id = net.send(0, req(Op::get, {key}, {}, 0));
  EXPECT_FALSE(net.answer(id));  // held by node 1, which holds "old" for round 0
  net.send(0, req(Op::set, {key}, {b("new")}, 0));
  net.commit(net.endpoint(1));
  ASSERT_TRUE(net.answer(id));
  EXPECT_EQ(net.answer(id)->status, Status::ok);
  EXPECT_EQ(s(net.answer(id)->values.at(0)), "new");
}

// What waits for the view is bounded in bytes, not only in count.
TEST(StoreService, RequestsWaitingForTheViewAreBoundedInBytes) {
  ServiceOptions options{"10.0.0.1:29400", "job"};
  options.max_waiting_bytes = 1000;
  StoreService service(options);
  const auto send = [&](std::uint64_t id, std::size_t value_size) {
    StoreRequest request = req(Op::set, {"k" + std::to_string(id)}, {Bytes(value_size, 'x')}, 0);
    request.request_id = id;
    request.reply_to = "c:1";
    request.run_id = "job";
    const auto bytes = encode(StoreMessage(request));
    service.on_bytes(Time{0}, bytes.data(), bytes.size());
  };
  send(1, 400);
  send(2, 400);
  EXPECT_FALSE(service.poll_send());  // both held
  send(3, 400);                       // 1,200 bytes would exceed the bound
  const auto refused = service.poll_send();
  ASSERT_TRUE(refused);
  const auto decoded = decode_store(refused->bytes.data(), refused->bytes.size());
  ASSERT_TRUE(std::holds_alternative<StoreMessage>(decoded));
  const auto& response = std::get<StoreResponse>(std::get<StoreMessage>(decoded));
  EXPECT_EQ(response.request_id, 3u);
  EXPECT_EQ(response.status, Status::not_ready);
  EXPECT_NE(response.detail.find("bytes"), std::string::npos) << response.detail;
  EXPECT_TRUE(service.invariants());
  Assignment one = view_of(1);
  one.my_node_rank = 0;
  service.on_committed(Time{0}, one);
  std::set<std::uint64_t> answered;
  while (auto out = service.poll_send()) {
    const auto got = decode_store(out->bytes.data(), out->bytes.size());
    const auto& r = std::get<StoreResponse>(std::get<StoreMessage>(got));
    EXPECT_EQ(r.status, Status::ok);
    answered.insert(r.request_id);
  }
  EXPECT_EQ(answered, (std::set<std::uint64_t>{1, 2}));
  send(4, 5000);  // with a view nothing waits: no bound applies
  EXPECT_TRUE(service.poll_send());
}

}  // namespace
}  // namespace gossip_rdzv::store
