// Reachability of advertised endpoints (protocol/reachability.hpp), driven through the core:
// who is told that its endpoint does not work, and when nobody is.
#include "protocol/reachability.hpp"

#include <gtest/gtest.h>

#include <optional>

#include "core_helpers.hpp"

namespace gossip_rdzv::protocol {
namespace {

using namespace testing;
using namespace std::chrono_literals;

// What node `name` was told about its own endpoint.
std::vector<UnreachableReported> reports_to(MiniNet& net, const std::string& name) {
  std::vector<UnreachableReported> reports;
  for (const auto& event : net.events(name)) {
    if (auto* report = std::get_if<UnreachableReported>(&event)) reports.push_back(*report);
  }
  return reports;
}

// A copy: snapshot() returns a temporary, so a pointer into it would dangle.
std::optional<UnreachablePeer> unreachable_in(const Snapshot& snapshot,
                                              const std::string& endpoint) {
  for (const auto& peer : snapshot.unreachable) {
    if (peer.endpoint == endpoint) return peer;
  }
  return std::nullopt;
}

TEST(Reachability, HealthyRunReportsNothingUnreachable) {
  MiniNet net(4, 4);
  for (int i = 1; i <= 4; ++i) net.add(i);
  ASSERT_TRUE(net.run([&] { return all_committed(net, range(1, 4)); }));
  net.run([] { return false; }, 5s);  // probes keep running after the commit
  for (int i = 1; i <= 4; ++i) {
    EXPECT_EQ(net.find_event<PeerUnreachable>(i), nullptr) << "node " << i;
    EXPECT_TRUE(reports_to(net, MiniNet::endpoint(i)).empty()) << "node " << i;
    EXPECT_TRUE(net.node(i)->snapshot().unreachable.empty()) << "node " << i;
  }
}

TEST(Reachability, NodeThatDropsInboundTrafficIsToldByTheSeedItCanSendTo) {
  MiniNet net(4, 4);
  for (int i = 1; i <= 4; ++i) net.add(i);
  for (int i = 1; i <= 3; ++i) net.cut_one_way(i, 4);  // node 4 drops every inbound connection
  const std::string bad = MiniNet::endpoint(4);
  ASSERT_TRUE(net.run([&] { return !reports_to(net, bad).empty(); }, 30s));
  const auto report = reports_to(net, bad).front();
  EXPECT_EQ(report.reporter, MiniNet::endpoint(1));  // the only node it ever sends to
  EXPECT_EQ(report.tried_endpoint, bad);
  EXPECT_GE(report.unanswered, UnreachablePeer::kReportAfter);
  EXPECT_FALSE(net.node(4)->joined());  // the JoinReply never reached it
  // The seed knows whom it told; the others, who only probed it, name it too.
  net.run([&] {
    return unreachable_in(net.node(2)->snapshot(), bad).has_value() &&
           unreachable_in(net.node(3)->snapshot(), bad).has_value();
  });
  const auto seen_by_seed = unreachable_in(net.node(1)->snapshot(), bad);
  ASSERT_TRUE(seen_by_seed);
  EXPECT_TRUE(seen_by_seed->told);
  EXPECT_TRUE(seen_by_seed->heard_meanwhile);  // its joins kept coming: it runs
  const auto* told = net.find_event<PeerUnreachable>(1);
  ASSERT_NE(told, nullptr);
  EXPECT_EQ(told->endpoint, bad);
  EXPECT_GE(told->unanswered, UnreachablePeer::kReportAfter);
  EXPECT_GE(seen_by_seed->unanswered, UnreachablePeer::kReportAfter);
  // Node 2 never hears from 4: to it, 4 could as well have crashed, and it says no more.
  const auto seen_by_other = unreachable_in(net.node(2)->snapshot(), bad);
  ASSERT_TRUE(seen_by_other);
  EXPECT_FALSE(seen_by_other->heard_meanwhile);
  EXPECT_FALSE(seen_by_other->told);
  EXPECT_FALSE(net.committed(1));
  for (int i = 1; i <= 3; ++i) EXPECT_TRUE(reports_to(net, MiniNet::endpoint(i)).empty());
}

TEST(Reachability, NodeAdvertisingLoopbackIsToldAndItsOwnEchoIsNoAnswer) {
  MiniNet net(4, 4);
  const std::string bad = "127.0.0.1:29400";
  net.loop_back(bad);  // what every other machine reaches at that address is itself
  for (int i = 1; i <= 3; ++i) net.add(i);
  NodeOptions options;
  options.endpoint = bad;
  net.add(4, options);
  ASSERT_TRUE(net.run([&] { return !reports_to(net, bad).empty(); }, 30s));
  EXPECT_EQ(reports_to(net, bad).front().tried_endpoint, bad);
  EXPECT_EQ(reports_to(net, bad).front().reporter, MiniNet::endpoint(1));
  // Pings to 127.0.0.1 came back to their senders, who did not take them for acks.
  net.run([&] { return unreachable_in(net.node(2)->snapshot(), bad).has_value(); });
  EXPECT_TRUE(unreachable_in(net.node(2)->snapshot(), bad));
  EXPECT_FALSE(net.committed(1));
}

TEST(Reachability, BrokenDirectPathIsReportedEvenWhenIndirectProbesSucceed) {
  MiniNet net(4, 4);
  for (int i = 1; i <= 4; ++i) net.add(i);
  net.cut_one_way(2, 4);  // only 2 -> 4 fails; 4 still sends to 2, others reach both
  const std::string bad = MiniNet::endpoint(4);
  ASSERT_TRUE(net.run([&] { return !reports_to(net, bad).empty(); }, 60s));
  for (const auto& report : reports_to(net, bad)) {
    EXPECT_EQ(report.reporter, MiniNet::endpoint(2));
    EXPECT_EQ(report.tried_endpoint, bad);
  }
  // Node 4 never looked dead to anyone: helpers relayed 2's probes.
  for (int i = 1; i <= 3; ++i) {
    for (const auto& member : net.node(i)->snapshot().members) {
      if (member.ann.endpoint == bad) {
        EXPECT_NE(member.status, MemberStatus::dead);
      }
    }
  }
}

TEST(Reachability, NoticeFromAPeerIsOnlyAnEvent) {
  MiniNet net(2, 2);
  net.add(1);
  net.add(2);
  ASSERT_TRUE(net.run([&] { return all_committed(net, {1, 2}); }));
  Envelope notice;
  notice.run_id = "run";
  notice.sender = MiniNet::endpoint(1);
  notice.sender_generation = 1;
  notice.body = Unreachable{MiniNet::endpoint(2), 1500, 3};
  net.inject(MiniNet::endpoint(2), notice);
  net.run([&] { return !reports_to(net, MiniNet::endpoint(2)).empty(); }, 1s);
  const auto reports = reports_to(net, MiniNet::endpoint(2));
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports.front().reporter, MiniNet::endpoint(1));
  EXPECT_EQ(reports.front().unanswered, 3u);
  EXPECT_EQ(reports.front().failing_for, std::chrono::milliseconds(1500));
  EXPECT_TRUE(net.committed(2));
}

}  // namespace
}  // namespace gossip_rdzv::protocol
