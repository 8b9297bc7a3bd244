// Serving the round's outcome (protocol/outcome_server.hpp), driven through the core: when
// members and seeds are done, and what nodes outside the committed view are told.
#include "protocol/outcome_server.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "core_helpers.hpp"
#include "protocol/bitset.hpp"

namespace gossip_rdzv::protocol {
namespace {

using namespace testing;
using namespace std::chrono_literals;

TEST(OutcomeServer, CommittedNodesBecomeDoneOnceEveryoneKnows) {
  MiniNet net(4, 4);
  for (int i = 1; i <= 4; ++i) net.add(i);
  ASSERT_TRUE(net.run([&] {
    for (int i = 2; i <= 4; ++i)
      if (!net.node(i)->done()) return false;
    return true;
  }));
  // Well before the commit grace: done came from everyone's commit bits.
  EXPECT_LT(net.now(), std::chrono::milliseconds(500));
  // The seed (node 1) stays for the whole grace: a node that starts or restarts after the
  // commit knows nobody else to ask.
  const Time committed_at = net.now();
  EXPECT_FALSE(net.node(1)->done());
  // Past the members' linger it only answers: no probes or gossip to members that left
  // (they exit when done, as `gossip-rdzv join` does).
  for (int i = 2; i <= 4; ++i) net.crash(i);
  net.run([] { return false; }, Timing::local().outcome_linger + 10ms);
  std::vector<std::string> sent_to;
  net.on_send = [&](const std::string& from, const std::string& to, const Envelope&) {
    if (from == MiniNet::endpoint(1)) sent_to.push_back(to);
  };
  net.run([] { return false; }, 500ms);
  EXPECT_TRUE(sent_to.empty()) << sent_to.size() << " messages, the first to "
                               << (sent_to.empty() ? "" : sent_to[0]);
  net.inject(MiniNet::endpoint(1),
             envelope_from(9, Join{MemberRecord{announcement(9, 4), 0, MemberStatus::alive, {}}}));
  net.run([] { return false; }, 2ms);
  EXPECT_EQ(std::count(sent_to.begin(), sent_to.end(), MiniNet::endpoint(9)), 1);
  ASSERT_TRUE(net.run([&] { return net.node(1)->done(); }));
  EXPECT_GE(net.now(), Timing::local().commit_grace);
  EXPECT_LT(net.now(), committed_at + Timing::local().commit_grace);
}

TEST(OutcomeServer, NodeRestartedAfterTheCommitIsToldByTheSeedItsRoundIsOver) {
  MiniNet net(3, 3);
  for (int i = 1; i <= 3; ++i) net.add(i);
  ASSERT_TRUE(net.run([&] { return net.node(2)->done() && net.node(3)->done(); }));
  // Members 2 and 3 leave as `gossip-rdzv join` does; node 3's agent restarts a second later.
  net.crash(2);
  net.crash(3);
  net.events(3).clear();
  net.run([] { return false; }, 1s);
  ASSERT_FALSE(net.node(1)->done());  // else it would exit, and nobody would answer node 3
  net.add(3, {.generation = 2});
  ASSERT_TRUE(net.run([&] { return net.find_event<NotAdmitted>(3) != nullptr; }, 1s));
  EXPECT_FALSE(net.node(1)->done());
  EXPECT_TRUE(net.find_event<NotAdmitted>(3)->previous_process_in_view);
  EXPECT_FALSE(net.committed(3));
}

TEST(OutcomeServer, CommittedNodeAnswersANodeOutsideTheViewThatStillTalks) {
  MiniNet net(3, 3);
  for (int i = 1; i <= 3; ++i) net.add(i);
  ASSERT_TRUE(net.run([&] { return all_committed(net, range(1, 3)); }));
  std::vector<Envelope> to_outsider, to_member;
  net.on_send = [&](const std::string& from, const std::string& to, const Envelope& msg) {
    if (from != MiniNet::endpoint(2)) return;
    if (to == MiniNet::endpoint(9)) to_outsider.push_back(msg);
    if (to == MiniNet::endpoint(3)) to_member.push_back(msg);
  };
  // An extra node whose one notice (tell_outsiders) was lost gossips on: each of its
  // messages is answered with the committed view, which tells it that it was not admitted.
  net.inject(MiniNet::endpoint(2), envelope_from(9, Gossip{}));
  net.inject(MiniNet::endpoint(2), envelope_from(9, Gossip{}));
  net.run([] { return false; }, 2ms);
  ASSERT_EQ(to_outsider.size(), 2u);
  for (const auto& msg : to_outsider) {
    const auto* gossip = std::get_if<Gossip>(&msg.body);
    ASSERT_NE(gossip, nullptr);
    ASSERT_EQ(gossip->views.size(), 1u);
    const auto& claim = gossip->views[0];
    EXPECT_EQ(claim.members.size(), 3u);                // the whole view: the outsider holds none
    EXPECT_GE(bits::count_within(claim.voted, 3), 2u);  // a quorum: enough to be not admitted
  }
  // A member's gossip gets no such answer: it learns the outcome by the usual push.
  const std::size_t before = to_member.size();
  net.inject(MiniNet::endpoint(2), envelope_from(3, Gossip{}));
  net.run([] { return false; }, 100us);
  EXPECT_EQ(to_member.size(), before);
}

}  // namespace
}  // namespace gossip_rdzv::protocol
