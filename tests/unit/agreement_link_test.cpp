// The core's side of agreement (protocol/agreement_link.hpp): peers started with other
// sizes, seed lists or at our endpoint stop the round; forged claims are ignored.
#include "protocol/agreement_link.hpp"

#include <gtest/gtest.h>

#include "core_helpers.hpp"

namespace gossip_rdzv::protocol {
namespace {

using namespace testing;
using namespace std::chrono_literals;

TEST(AgreementLink, NodesStartedWithDifferentSeedListsStopWithAnErrorNamingIt) {
  MiniNet net(3, 3);
  net.add(1);
  net.add(2);
  net.add(3, {.seeds = {MiniNet::endpoint(1), MiniNet::endpoint(2)}});
  ASSERT_TRUE(net.run([&] { return net.find_event<Fatal>(3) != nullptr; }));
  const Fatal* fatal = net.find_event<Fatal>(3);
  EXPECT_EQ(fatal->code, ErrorCode::usage);
  EXPECT_NE(fatal->message.find("another --seed list than this node (10.0.0.1:29400, "
                                "10.0.0.2:29400)"),
            std::string::npos)
      << fatal->message;
  net.run([] { return false; }, 10s);
  for (int i = 1; i <= 3; ++i) EXPECT_FALSE(net.committed(i)) << "node " << i;
}

TEST(AgreementLink, DifferentNnodesIsAFatalUsageError) {
  MiniNet net(2, 2);
  net.add(1);
  net.add(2, {.min_nodes = 3, .max_nodes = 3});
  ASSERT_TRUE(net.run([&] { return net.find_event<Fatal>(1) != nullptr; }));
  EXPECT_EQ(net.find_event<Fatal>(1)->code, ErrorCode::usage);
  EXPECT_NE(net.find_event<Fatal>(1)->message.find("--nnodes"), std::string::npos);
}

// Two machines advertising the same address:port (copied --advertise, host names that
// resolve to 127.0.1.1): the real owner of the endpoint learns of the other process through
// the seed and stops with a usage error naming both hosts, instead of being replaced by it.
TEST(AgreementLink, AnotherProcessAdvertisingOurEndpointIsAFatalUsageError) {
  MiniNet net(3, 3);
  net.add(1);
  net.add(2);
  ASSERT_TRUE(net.run([&] { return net.node(1)->snapshot().members.size() == 2; }));
  Envelope join;
  join.run_id = "run";
  join.sender = MiniNet::endpoint(2);
  join.sender_generation = 9;
  Join body;
  body.self.ann.endpoint = MiniNet::endpoint(2);
  body.self.ann.node_id = 4242;
  body.self.ann.generation = 9;
  body.self.ann.host = "10.0.0.2";
  body.self.ann.hostname = "copycat";
  body.self.ann.min_nodes = body.self.ann.max_nodes = 3;
  join.body = body;
  net.inject(MiniNet::endpoint(1), join);
  ASSERT_TRUE(net.run([&] { return net.find_event<Fatal>(2) != nullptr; }));
  const Fatal* fatal = net.find_event<Fatal>(2);
  EXPECT_EQ(fatal->code, ErrorCode::usage);
  for (const char* part : {"copycat", "node2", "10.0.0.2:29400", "--advertise"}) {
    EXPECT_NE(fatal->message.find(part), std::string::npos) << part << ": " << fatal->message;
  }
  EXPECT_FALSE(net.committed(2));
}

// An earlier process of ours (older generation, same host) is history, not a conflict.
TEST(AgreementLink, OurOwnEarlierProcessIsNotAConflict) {
  MiniNet net(2, 2);
  net.add(1);
  net.add(2, {.generation = 1});
  net.crash(2);
  net.add(2, {.generation = 2});
  ASSERT_TRUE(net.run([&] { return net.committed(1) && net.committed(2); }));
  EXPECT_EQ(net.find_event<Fatal>(2), nullptr);
}

TEST(AgreementLink, ForgedClaimsCannotForceACommit) {
  MiniNet net(3, 3);
  net.add(1);
  net.add(2);
  net.run([&] { return net.node(1)->snapshot().members.size() == 2; });
  // A claim with all bits set but a digest that does not match its members is ignored.
  ViewClaim forged;
  forged.round = 0;
  forged.attempt = 99;
  forged.members = {{MiniNet::endpoint(1), 1}, {MiniNet::endpoint(2), 1}, {"10.9.9.9:1", 1}};
  forged.digest = 12345;
  forged.proposed = forged.ready = forged.committed = {0xff};
  Envelope env;
  env.run_id = "run";
  env.sender = MiniNet::endpoint(2);
  env.sender_generation = 1;
  env.body = Gossip{false, {}, {forged}};
  net.inject(MiniNet::endpoint(1), env);
  net.run([] { return false; }, std::chrono::milliseconds(200));
  EXPECT_FALSE(net.committed(1));
  EXPECT_EQ(net.find_event<NotAdmitted>(1), nullptr);
}

}  // namespace
}  // namespace gossip_rdzv::protocol
