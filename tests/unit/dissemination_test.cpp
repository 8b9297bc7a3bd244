// Spreading what a node knows (protocol/dissemination.hpp), driven through the core: gossip
// targets, table pulls and the push-pull rate.
#include "protocol/dissemination.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <map>

#include "core_helpers.hpp"
#include "protocol/agreement.hpp"
#include "protocol/quorum_base.hpp"

namespace gossip_rdzv::protocol {
namespace {

using namespace testing;
using namespace std::chrono_literals;

TEST(Dissemination, NodesOnlyKnowingTheSeedLearnEachOtherByGossip) {
  MiniNet net(8, 8);
  for (int i = 1; i <= 8; ++i) net.add(i);
  ASSERT_TRUE(net.run([&] { return all_committed(net, range(1, 8)); }));
  for (int i = 1; i <= 8; ++i) {
    EXPECT_EQ(net.node(i)->snapshot().members.size(), 8u) << "node " << i;
  }
}

// A joiner fresh from its seed's JoinReply: node 1, seed 2, and the `sample` members 3, 4, ...
// the seed returned; every member it pings answers. Counts the Gossip it pushes to each.
struct FreshJoiner {
  Core core;
  std::map<std::string, std::size_t> gossip_to;
  std::size_t gossips = 0;
  Time now{0};

  static CoreConfig config(std::uint32_t min_nodes) {
    CoreConfig c;
    c.self = announcement(1, min_nodes);
    c.run_id = "run";
    c.seeds = {MiniNet::endpoint(2)};
    c.min_nodes = c.max_nodes = min_nodes;
    return c;
  }
  FreshJoiner(std::uint32_t min_nodes, int sample) : core(config(min_nodes)) {
    this->min_nodes = min_nodes;
    core.start(now);
    JoinReply reply;
    reply.seed_is_member = true;
    for (int i = 3; i < 3 + sample; ++i)
      reply.sample.push_back(MemberRecord{announcement(i, min_nodes), 0, {}, {}});
    reply.sample.push_back(MemberRecord{announcement(2, min_nodes), 0, {}, {}});
    core.on_message(now, envelope_from(2, std::move(reply)));
    drain();
  }
  void drain() {
    while (auto out = core.poll_send()) {
      if (std::holds_alternative<Gossip>(out->msg.body)) {
        ++gossip_to[out->to];
        ++gossips;
      }
      if (const auto* ping = std::get_if<Ping>(&out->msg.body)) {
        const auto host = out->to.substr(0, out->to.rfind(':'));
        const int target = std::stoi(host.substr(host.rfind('.') + 1));
        core.on_message(now, envelope_from(target, Ack{ping->seq}));
      }
    }
    while (core.poll_event()) {
    }
  }
  void run_until(Time end) {
    run_core_until(core, now, end, [this] { drain(); });
  }
  /// As run_until, hearing a new rumour about a sampled member every gossip period: a node
  /// with nothing to tell does not push, so counting picks needs news to carry.
  void run_with_news_until(Time end, int sample) {
    std::uint64_t incarnation = 0;
    int next = 0;
    const Time period = as_time(CoreConfig{}.timing.gossip_interval);
    for (Time news = now; now < end; news += period) {
      const int member = 3 + next++ % sample;
      Gossip gossip;
      gossip.updates.push_back(
          MemberRecord{announcement(member, min_nodes), ++incarnation, {}, {}});
      core.on_message(now, envelope_from(member, std::move(gossip)));
      drain();
      run_until(std::min(end, news + period));
    }
  }
  std::uint32_t min_nodes = 0;
};

// Right after joining, a node knows its seed and the seed's sample of join_sample_size
// members: picked uniformly, the seed would get one in nine of its pushes, from every one of
// N joiners. Until a node knows MIN members, a seed is picked with weight known / MIN.
TEST(Dissemination, FreshJoinerRarelyPushesToItsSeedBeforeItKnowsMinMembers) {
  FreshJoiner big(1000, 8);  // knows 10 of 1,000: keeps a seed on 1% of its picks
  big.run_with_news_until(Time{std::chrono::seconds(10)}, 8);
  ASSERT_GE(big.gossips, 100u);
  EXPECT_LE(big.gossip_to[MiniNet::endpoint(2)], big.gossips / 50) << big.gossips << " pushes";

  FreshJoiner full(10, 8);  // knows all of its 10: the seed is a member like any other
  full.run_with_news_until(Time{std::chrono::seconds(10)}, 8);
  ASSERT_GE(full.gossips, 100u);
  EXPECT_GE(full.gossip_to[MiniNet::endpoint(2)], full.gossips / 20) << full.gossips << " pushes";
}

TEST(Dissemination, JoinerThatKnowsOnlyItsSeedStillPushesToIt) {
  FreshJoiner lonely(1000, 0);
  lonely.run_until(Time{std::chrono::seconds(5)});
  ASSERT_GE(lonely.gossips, 1u);
  EXPECT_EQ(lonely.gossip_to[MiniNet::endpoint(2)], lonely.gossips);
}

// A node waiting for --nnodes MIN has no view to claim; once its rumours have been
// retransmitted it pushes nothing (an empty push tells nothing) and only probes and
// exchanges tables (push-pull), until it hears news, which it passes on.
TEST(Dissemination, ANodeWithNothingToTellDoesNotPush) {
  FreshJoiner waiting(1000, 8);
  waiting.run_until(Time{std::chrono::seconds(5)});
  ASSERT_GE(waiting.gossips, 1u) << "its own row and the sample's go out first";
  const std::size_t pushed = waiting.gossips;
  std::size_t pings = 0;
  std::size_t exchanges = 0;
  run_core_until(waiting.core, waiting.now, Time{std::chrono::seconds(15)}, [&] {
    while (auto out = waiting.core.poll_send()) {
      if (const auto* gossip = std::get_if<Gossip>(&out->msg.body)) {
        if (gossip->want_reply) {
          ++exchanges;
        } else {
          ++waiting.gossips;
        }
      }
      if (const auto* ping = std::get_if<Ping>(&out->msg.body)) {
        ++pings;
        const auto host = out->to.substr(0, out->to.rfind(':'));
        const int target = std::stoi(host.substr(host.rfind('.') + 1));
        waiting.core.on_message(waiting.now, envelope_from(target, Ack{ping->seq}));
      }
    }
  });
  EXPECT_EQ(waiting.gossips, pushed) << "10 s with nothing new";
  EXPECT_GE(pings, 5u) << "failure detection goes on";
  EXPECT_GE(exchanges, 1u) << "anti-entropy goes on";

  waiting.run_with_news_until(Time{std::chrono::seconds(16)}, 8);
  EXPECT_GT(waiting.gossips, pushed) << "a rumour heard is passed on";
}

// A node whose table lacks members that a peer's view names pulls that peer's table at once
// (rate-limited) instead of waiting for the periodic push-pull.
TEST(Dissemination, ViewNamingMembersWeLackPullsTheSendersTable) {
  auto announcement = [](int i) {
    auto a = testing::announcement(i, 3);
    a.seeds_digest = QuorumBase({MiniNet::endpoint(2)}).digest();
    return a;
  };
  CoreConfig config;
  config.self = announcement(1);
  config.run_id = "run";
  config.seeds = {MiniNet::endpoint(2)};
  config.min_nodes = config.max_nodes = 3;
  Core core(config);
  core.start(Time{0});
  auto envelope = [](Body body) { return envelope_from(2, std::move(body)); };
  core.on_message(Time{100}, envelope(JoinReply{{MemberRecord{announcement(2), 0, {}, {}}}, true}));
  while (core.poll_send()) {
  }
  auto pulls_after = [&](Time now, std::vector<MemberKey> members) {
    ViewClaim claim;
    claim.attempt = 1;
    claim.members = std::move(members);
    claim.digest = view_digest(0, QuorumBase(config.seeds).digest(), claim.members);
    claim.proposed = claim.ready = claim.committed = claim.fenced = {0};
    core.on_message(now, envelope(Gossip{false, {}, {claim}}));
    int pulls = 0;
    while (auto out = core.poll_send()) {
      const auto* gossip = std::get_if<Gossip>(&out->msg.body);
      if (gossip != nullptr && gossip->want_reply && out->to == MiniNet::endpoint(2)) ++pulls;
    }
    return pulls;
  };
  const MemberKey a{MiniNet::endpoint(1), 1}, b{MiniNet::endpoint(2), 1},
      c{MiniNet::endpoint(3), 1}, d{MiniNet::endpoint(4), 1};
  EXPECT_EQ(pulls_after(Time{200}, {a, b}), 0);     // nothing we lack
  EXPECT_EQ(pulls_after(Time{300}, {a, b, c}), 1);  // 10.0.0.3 is unknown here
  EXPECT_EQ(pulls_after(Time{400}, {a, b, c}), 0);  // at most once per gossip interval
  EXPECT_EQ(pulls_after(Time{300} + std::chrono::milliseconds(200), {a, b, c}), 1);
  // A view without us is not our concern, but the view {a, b, c} we hold still names
  // 10.0.0.3, whose row we lack: a peer talking about views is asked for its table.
  EXPECT_EQ(pulls_after(Time{300} + std::chrono::milliseconds(400), {b, c, d}), 1);
}

// memberlist's pushPullScale: the periodic full-table exchange slows down above 32 members
// (x2 up to 64), so a node's full-table traffic does not grow with the cluster.
TEST(Dissemination, PushPullSlowsDownAboveThirtyTwoMembers) {
  auto push_pulls_per_node = [](int nodes) {
    MiniNet net(100, 100);  // never full: the nodes keep gossiping for the whole run
    int requests = 0;
    net.on_deliver = [&](const std::string&, const Envelope& env) {
      const auto* gossip = std::get_if<Gossip>(&env.body);
      if (gossip != nullptr && gossip->want_reply && !gossip->updates.empty()) ++requests;
    };
    for (int i = 1; i <= nodes; ++i) net.add(i);
    const Time warm_up = net.now() + 5s;
    net.run([&] { return net.now() >= warm_up; }, 6s);  // everyone joined and known
    requests = 0;
    const Time end = net.now() + 20s;
    net.run([&] { return net.now() >= end; }, 21s);
    return static_cast<double>(requests) / nodes;
  };
  // Local timing: push_pull_interval 1 s, so ~20 per node in 20 s at 10 nodes, ~10 at 40.
  const double small = push_pulls_per_node(10);
  const double large = push_pulls_per_node(40);
  std::printf("push-pulls per node in 20 s: %.1f at 10 nodes, %.1f at 40\n", small, large);
  EXPECT_GT(small, 15.0);
  EXPECT_LT(small, 22.0);
  EXPECT_GT(large, 7.5);
  EXPECT_LT(large, 11.5);
}

}  // namespace
}  // namespace gossip_rdzv::protocol
