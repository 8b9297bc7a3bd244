// Joining through the seeds (protocol/bootstrap.hpp), driven through the core: a seed's
// bounded JoinReply sample, and a member seed meeting the other seeds a few at a time.
#include "protocol/bootstrap.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "core_helpers.hpp"

namespace gossip_rdzv::protocol {
namespace {

using namespace testing;
using namespace std::chrono_literals;

TEST(Bootstrap, DedicatedSeedAnswersWithABoundedSample) {
  MiniNet net(40, 40);
  net.seed = MiniNet::endpoint(99);
  net.add(99, {.seed_only = true});
  std::size_t largest_reply = 0;
  net.on_deliver = [&](const std::string&, const Envelope& env) {
    if (auto* reply = std::get_if<JoinReply>(&env.body))
      largest_reply = std::max(largest_reply, reply->sample.size());
  };
  for (int i = 1; i <= 40; ++i) net.add(i);
  ASSERT_TRUE(net.run([&] { return all_committed(net, range(1, 40)); }));
  EXPECT_LE(largest_reply, Timing::local().join_sample_size);
  expect_consistent(net, range(1, 40));
}

// A member that is one of many seeds meets the other seeds a few at a time (gossip_fanout
// per attempt), and forwards its joiners to the collectors, the first gossip_fanout seeds in
// sorted order: no seed's work may grow with the number of seeds. Sorted as strings, the 12
// seeds begin "10.0.0.10:29400", "10.0.0.11:29400", "10.0.0.12:29400" (':' sorts after the
// digits), so 10.0.0.10 is a collector and 10.0.0.5 is not; of four seeds, 10.0.0.1-3 are.
TEST(Bootstrap, MemberSeedTalksToAFewOtherSeedsAtATime) {
  // --nnodes 100: never full, so nothing else changes the traffic
  auto announcement = [](int i) { return testing::announcement(i, 100); };
  const auto envelope = envelope_from;
  struct Case {
    int seeds;
    int self;
    std::vector<int> collectors;  // but us
  };
  const std::vector<Case> cases = {
      {4, 1, {2, 3}}, {4, 4, {1, 2, 3}}, {12, 10, {11, 12}}, {12, 5, {10, 11, 12}}};
  for (const auto& [seeds, self, collector_ids] : cases) {
    SCOPED_TRACE(std::to_string(seeds) + " seeds, we are 10.0.0." + std::to_string(self));
    CoreConfig config;
    config.self = announcement(self);
    config.run_id = "run";
    config.min_nodes = config.max_nodes = 100;
    config.timing = Timing::local();
    for (int i = 1; i <= seeds; ++i) config.seeds.push_back(MiniNet::endpoint(i));
    const std::size_t fanout = config.timing.gossip_fanout;
    std::multiset<std::string> collectors;
    for (int i : collector_ids) collectors.insert(MiniNet::endpoint(i));
    Core core(config);
    core.start(Time{0});
    // Destinations of the messages of one kind sent to seeds since the last call.
    auto to_seeds = [&](auto is_wanted) {
      std::multiset<std::string> to;
      while (auto out = core.poll_send()) {
        const bool is_seed =
            std::find(config.seeds.begin(), config.seeds.end(), out->to) != config.seeds.end();
        if (is_seed && is_wanted(out->msg.body)) to.insert(out->to);
      }
      return to;
    };
    auto is_join = [](const Body& body) { return std::holds_alternative<Join>(body); };
    EXPECT_EQ(to_seeds(is_join).size(), 1u);  // not joined yet: one seed at a time
    const int first = self == 2 ? 3 : 2;
    core.on_message(
        Time{1}, envelope(first, JoinReply{{MemberRecord{announcement(first), 0, {}, {}}}, true}));
    to_seeds(is_join);
    // The first attempt to meet the other seeds comes with the first join retry (20 ms
    // +-20%), the next one no earlier than 32 ms after it.
    std::multiset<std::string> met;
    Time now{1};
    while (now < Time{std::chrono::milliseconds(40)}) {
      now = core.next_wakeup();
      core.on_tick(now);
      const auto joins = to_seeds(is_join);
      met.insert(joins.begin(), joins.end());
    }
    const std::size_t unmet = static_cast<std::size_t>(seeds) - 2;  // not us, not `first`
    EXPECT_EQ(met.size(), std::min(fanout, unmet));
    EXPECT_EQ(std::set<std::string>(met.begin(), met.end()).size(), met.size());
    EXPECT_EQ(met.count(MiniNet::endpoint(first)), 0u);
    EXPECT_EQ(met.count(MiniNet::endpoint(self)), 0u);
    // Three joiners arrive at once, off the gossip grid; one gossip interval later their
    // rows go, in one message each, to every collector but us.
    const Time arrival = now + Time{std::chrono::microseconds(3700)};
    while (core.next_wakeup() < arrival) {
      core.on_tick(core.next_wakeup());
      to_seeds(is_join);
    }
    for (int j = 50; j < 53; ++j) {
      core.on_message(arrival, envelope(j, Join{MemberRecord{announcement(j), 0, {}, {}}}));
    }
    to_seeds(is_join);
    const Time forward_at =
        arrival + std::chrono::duration_cast<Time>(config.timing.gossip_interval);
    while (core.next_wakeup() < forward_at) {
      core.on_tick(core.next_wakeup());
      to_seeds(is_join);
    }
    core.on_tick(forward_at);
    const auto forwarded = to_seeds([](const Body& body) {
      const auto* gossip = std::get_if<Gossip>(&body);
      if (gossip == nullptr || gossip->want_reply || gossip->updates.size() != 3) return false;
      std::set<std::string> joiners;
      for (const auto& record : gossip->updates) joiners.insert(record.ann.endpoint);
      return joiners == std::set<std::string>{MiniNet::endpoint(50), MiniNet::endpoint(51),
                                              MiniNet::endpoint(52)};
    });
    EXPECT_EQ(forwarded, collectors);
  }
}

}  // namespace
}  // namespace gossip_rdzv::protocol
