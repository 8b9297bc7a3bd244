// gossip_rdzv::Node on real loopback sockets: config checks, a 4-node rendezvous in one
// process, and the errors a user meets (other run id, silent seed, join timeout).
#include "gossip_rdzv/node.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "protocol/codec.hpp"
#include "support/loopback_socket.hpp"
#include "transport/zmq_transport.hpp"

namespace gossip_rdzv {
namespace {

using namespace std::chrono_literals;
using gossip_rdzv::testing_support::LoopbackSocket;
using Clock = std::chrono::steady_clock;

std::uint16_t free_port() {
  return gossip_rdzv::testing_support::free_loopback_port();
}

std::string loopback(std::uint16_t port) {
  return "127.0.0.1:" + std::to_string(port);
}

Config local_config(std::uint32_t nodes, const std::string& seed) {
  Config config;
  config.run_id = "it-node";
  config.seeds = {seed};
  config.listen_host = "127.0.0.1";
  config.listen_port = 0;
  config.min_nodes = config.max_nodes = nodes;
  config.nproc_per_node = 2;
  config.join_timeout = 10s;  // an upper bound only: loopback rendezvous take well under 1 s
  config.timing = Timing::local();
  return config;
}

// The first node of a cluster listens on a fixed free port and names itself as the seed,
// as `gossip-rdzv join --seed node0:PORT` does on node0.
Config seed_node_config(std::uint32_t nodes, const std::string& hostname) {
  const std::uint16_t port = free_port();
  Config config = local_config(nodes, loopback(port));
  config.listen_port = port;
  config.hostname = hostname;
  return config;
}

std::unique_ptr<Node> start_seed_node(std::uint32_t nodes, const std::string& hostname) {
  auto node = std::make_unique<Node>(seed_node_config(nodes, hostname));
  node->start();
  return node;
}

std::unique_ptr<Node> start_node(std::uint32_t nodes, const std::string& seed,
                                 const std::string& hostname) {
  Config config = local_config(nodes, seed);
  config.hostname = hostname;
  auto node = std::make_unique<Node>(config);
  node->start();
  return node;
}

ErrorCode code_of(const std::function<void()>& action, std::string* message = nullptr) {
  try {
    action();
  } catch (const Error& error) {
    if (message) *message = error.what();
    return error.code();
  }
  return ErrorCode::ok;
}

// ---- config checks --------------------------------------------------------------------------

struct BadConfig {
  const char* name;
  std::function<void(Config&)> spoil;
  const char* named_in_message;
};

TEST(NodeConfig, RejectsEachBadFieldNamingIt) {
  const std::vector<BadConfig> cases = {
      {"min zero", [](Config& c) { c.min_nodes = 0; }, "min_nodes"},
      {"min > max",
       [](Config& c) {
         c.min_nodes = 5;
         c.max_nodes = 4;
       },
       "MIN <= MAX"},
      {"nproc zero", [](Config& c) { c.nproc_per_node = 0; }, "nproc"},
      {"rank too big", [](Config& c) { c.node_rank = 4; }, "node_rank '4'"},
      {"no seeds", [](Config& c) { c.seeds.clear(); }, "--seed"},
      {"bad seed", [](Config& c) { c.seeds = {"node0:99999"}; }, "node0:99999"},
      {"empty run id", [](Config& c) { c.run_id = ""; }, "run_id"},
      {"bad run id", [](Config& c) { c.run_id = "job 42"; }, "job 42"},
      {"long run id", [](Config& c) { c.run_id = std::string(65, 'a'); }, "run_id"},
      {"no gossip fanout", [](Config& c) { c.timing.gossip_fanout = 0; }, "gossip_fanout"},
      {"no probe rounds", [](Config& c) { c.timing.probe_rounds = 0; }, "probe_rounds"},
      {"zero gossip period", [](Config& c) { c.timing.gossip_interval = milliseconds(0); },
       "gossip_interval"},
  };
  for (const auto& bad : cases) {
    Config config = local_config(4, "127.0.0.1:29400");
    bad.spoil(config);
    std::string message;
    EXPECT_EQ(code_of([&] { Node node(config); }, &message), ErrorCode::usage) << bad.name;
    EXPECT_NE(message.find(bad.named_in_message), std::string::npos) << bad.name << ": " << message;
  }
}

TEST(NodeConfig, DedicatedSeedNeedsNoSeeds) {
  Config config = local_config(4, "unused:1");
  config.seeds.clear();
  config.dedicated_seed = true;
  EXPECT_EQ(code_of([&] { Node node(config); }), ErrorCode::ok);
}

TEST(NodeConfig, AcceptsASeedWithoutPort) {
  Config config = local_config(4, "node0");
  EXPECT_EQ(code_of([&] { Node node(config); }), ErrorCode::ok);
}

// ---- start failures -------------------------------------------------------------------------

TEST(NodeStart, UnresolvableSeedIsNamed) {
  Node node(local_config(2, "no-such-seed.invalid:29400"));
  std::string message;
  EXPECT_EQ(code_of([&] { node.start(); }, &message), ErrorCode::seed_unresolved);
  EXPECT_NE(message.find("no-such-seed.invalid"), std::string::npos) << message;
}

TEST(NodeStart, ListenPortInUseNamesThisProcess) {
  LoopbackSocket held(LoopbackSocket::Mode::listening);
  Config config = local_config(2, "127.0.0.1:1");
  config.listen_port = held.port();
  Node node(config);
  std::string message;
  EXPECT_EQ(code_of([&] { node.start(); }, &message), ErrorCode::listen_failed);
  EXPECT_NE(message.find(std::to_string(held.port())), std::string::npos) << message;
  EXPECT_NE(message.find("pid " + std::to_string(::getpid())), std::string::npos) << message;
}

TEST(NodeStart, StartTwiceIsAUsageError) {
  auto node = start_seed_node(1, "solo");
  EXPECT_EQ(code_of([&] { node->start(); }), ErrorCode::usage);
}

TEST(NodeStart, WaitBeforeStartIsAUsageError) {
  Node node(local_config(1, "127.0.0.1:1"));
  EXPECT_EQ(code_of([&] { node.wait(); }), ErrorCode::usage);
}

// ---- rendezvous -------------------------------------------------------------------------------

TEST(NodeRendezvous, SingleNodeSeedOfItselfCommitsAlone) {
  auto node = start_seed_node(1, "solo");
  const Assignment assignment = node->wait();
  EXPECT_EQ(assignment.nnodes(), 1u);
  EXPECT_EQ(assignment.world_size, 2u);
  EXPECT_EQ(assignment.master_addr, "127.0.0.1");
  EXPECT_NE(assignment.master_port, 0);
  EXPECT_EQ(assignment.me().endpoint, node->endpoint());
  node->finish();
}

// ZeroMQ binds to an interface name; peers must be told its address, never the name.
TEST(NodeRendezvous, ListenOnInterfaceNameAdvertisesItsAddress) {
  const std::uint16_t port = free_port();
  Config config = local_config(1, loopback(port));
  config.listen_host = "lo";
  config.listen_port = port;
  Node node(config);
  node.start();
  EXPECT_EQ(node.endpoint(), loopback(port));
  const Assignment assignment = node.wait();
  EXPECT_EQ(assignment.master_addr, "127.0.0.1");
  EXPECT_EQ(assignment.me().host, "127.0.0.1");
  node.finish();
}

TEST(NodeRendezvous, FourNodesConvergeToIdenticalAssignments) {
  std::vector<std::unique_ptr<Node>> nodes;
  nodes.push_back(start_seed_node(4, "node0"));
  const std::string seed = nodes[0]->endpoint();
  for (int i = 1; i < 4; ++i) nodes.push_back(start_node(4, seed, "node" + std::to_string(i)));

  std::vector<std::future<Assignment>> waits;
  for (auto& node : nodes) {
    waits.push_back(std::async(std::launch::async, [&node] { return node->wait(); }));
  }
  std::vector<Assignment> assignments;
  for (auto& wait : waits) assignments.push_back(wait.get());

  std::set<std::uint32_t> my_ranks;
  for (std::size_t i = 0; i < assignments.size(); ++i) {
    const Assignment& a = assignments[i];
    EXPECT_EQ(a.run_id, "it-node");
    EXPECT_EQ(a.world_size, 8u);
    ASSERT_EQ(a.nnodes(), 4u);
    EXPECT_EQ(a.me().endpoint, nodes[i]->endpoint());
    my_ranks.insert(a.my_node_rank);
    // Everything but "which one am I" is the same on every node.
    EXPECT_EQ(a.master_addr, assignments[0].master_addr);
    EXPECT_EQ(a.master_port, assignments[0].master_port);
    EXPECT_EQ(a.round, assignments[0].round);
    for (std::uint32_t r = 0; r < 4; ++r) {
      EXPECT_EQ(a.nodes[r].endpoint, assignments[0].nodes[r].endpoint);
      EXPECT_EQ(a.nodes[r].rank_offset, 2 * r);
      EXPECT_EQ(a.nodes[r].hostname, "node" + std::to_string(r));  // natural host name order
    }
  }
  EXPECT_EQ(my_ranks.size(), 4u);
  for (auto& node : nodes) node->finish();
  for (auto& node : nodes) EXPECT_TRUE(node->try_assignment().has_value());
}

// A node whose seed list names itself and others, as when every node runs the same command
// with --seed A,B,C: it is one of the seeds (docs/protocol.md, "Several seeds"). With
// --nnodes 1 it is a cluster of one, as the only seed would be, whether or not B is up.
// One of several listed seeds is a member and knows it: with --nnodes 1 it still needs a
// majority of the seed list to commit (the seed list is round 0's quorum base), so with the
// other seed down it waits, and its timeout names the silent seed and the fix.
TEST(NodeRendezvous, OneOfTwoSeedsAloneWaitsForTheOtherAndSaysSo) {
  Config config = seed_node_config(1, "alpha");
  const std::string absent = loopback(free_port());  // nothing listens there
  config.seeds.push_back(absent);
  config.join_timeout = std::chrono::seconds(3);
  Node node(config);
  node.start();
  try {
    node.wait();
    FAIL() << "committed without a majority of the seed list";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::seed_unreachable);
    const std::string text = error.what();
    EXPECT_NE(text.find("nothing listens on " + absent), std::string::npos) << text;
  }
}

// Three member seeds with real sockets, each listing all three (the seed list is round 0's
// quorum base, so every node must be given the same list). Before they are joined they try
// their seeds in turn, so this can pass even when joined seeds stop meeting the others; the
// deterministic checks of that are Bootstrap.MemberSeedTalksToAFewOtherSeedsAtATime and
// SimSweep.ManyMemberSeeds, and the test above shows the node knows it is a seed.
TEST(NodeRendezvous, MemberSeedsMeetEveryListedSeed) {
  const std::uint16_t ports[] = {free_port(), free_port(), free_port()};
  const std::vector<std::string> all = {loopback(ports[0]), loopback(ports[1]), loopback(ports[2])};
  auto seed_config = [&](int i, std::vector<std::string> seeds) {
    Config config = local_config(3, seeds.front());
    config.seeds = std::move(seeds);
    config.listen_port = ports[i];
    config.hostname = std::vector<std::string>{"alpha", "beta", "gamma"}[i];
    return config;
  };
  std::vector<std::unique_ptr<Node>> nodes;
  nodes.push_back(std::make_unique<Node>(seed_config(0, all)));
  nodes.push_back(std::make_unique<Node>(seed_config(1, all)));
  nodes.push_back(std::make_unique<Node>(seed_config(2, all)));
  for (auto& node : nodes) node->start();
  std::vector<std::future<Assignment>> waits;
  for (auto& node : nodes) {
    waits.push_back(std::async(std::launch::async, [&node] { return node->wait(); }));
  }
  std::vector<Assignment> assignments;
  for (auto& wait : waits) assignments.push_back(wait.get());
  for (std::size_t i = 0; i < assignments.size(); ++i) {
    ASSERT_EQ(assignments[i].nnodes(), 3u);
    EXPECT_EQ(assignments[i].me().endpoint, nodes[i]->endpoint());
    for (std::uint32_t r = 0; r < 3; ++r) {
      EXPECT_EQ(assignments[i].nodes[r].endpoint, assignments[0].nodes[r].endpoint);
    }
  }
  for (auto& node : nodes) node->finish();
}

// A free port on ::1, or 0 when this machine has no IPv6 loopback.
std::uint16_t free_ipv6_loopback_port() {
  const int fd = ::socket(AF_INET6, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in6 address{};
  address.sin6_family = AF_INET6;
  address.sin6_addr = in6addr_loopback;
  socklen_t length = sizeof address;
  std::uint16_t port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
    port = ntohs(address.sin6_port);
  }
  ::close(fd);
  return port;
}

TEST(NodeRendezvous, DefaultListenHostBindsIPv6WhenEverySeedIsIPv6) {
  const std::uint16_t port = free_ipv6_loopback_port();
  if (port == 0) GTEST_SKIP() << "no IPv6 loopback (::1) on this machine";
  // listen_host stays the default 0.0.0.0: the nodes must still reach each other on ::1.
  Config first = local_config(2, "[::1]:" + std::to_string(port));
  first.listen_host = Config{}.listen_host;
  first.listen_port = port;
  first.hostname = "v6-0";
  Config second = first;
  second.listen_port = 0;
  second.hostname = "v6-1";
  std::vector<std::unique_ptr<Node>> nodes;
  nodes.push_back(std::make_unique<Node>(first));
  nodes.push_back(std::make_unique<Node>(second));
  for (auto& node : nodes) node->start();
  std::vector<std::future<Assignment>> waits;
  for (auto& node : nodes) {
    waits.push_back(std::async(std::launch::async, [&node] { return node->wait(); }));
  }
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const Assignment assignment = waits[i].get();
    EXPECT_EQ(assignment.nnodes(), 2u);
    EXPECT_EQ(nodes[i]->endpoint().rfind("[::1]:", 0), 0u) << nodes[i]->endpoint();
  }
  for (auto& node : nodes) node->finish();
}

TEST(NodeRendezvous, ProgressListsTheMembersAfterCommit) {
  auto first = start_seed_node(2, "alpha");
  auto second = start_node(2, first->endpoint(), "beta");
  first->wait();
  second->wait();
  const Progress progress = second->progress();
  EXPECT_TRUE(progress.joined);
  EXPECT_TRUE(progress.committed);
  EXPECT_EQ(progress.min_nodes, 2u);
  EXPECT_EQ(progress.members.size(), 2u);
  EXPECT_EQ(progress.alive(), 2u);
}

TEST(NodeRendezvous, QueryMembersListsTheMembers) {
  auto first = start_seed_node(2, "alpha");
  auto second = start_node(2, first->endpoint(), "beta");
  first->wait();
  second->wait();
  const auto rows = query_members(first->endpoint(), "it-node", 5s);
  std::set<std::string> hostnames;
  for (const auto& row : rows) {
    hostnames.insert(row.hostname);
    EXPECT_EQ(row.status, "alive");
    // The asked node (alpha) heard beta itself, over real sockets, within the last seconds;
    // itself it never "hears" (LAST_HEARD "-").
    if (row.hostname == "beta") {
      ASSERT_TRUE(row.last_heard.has_value());
      EXPECT_LT(*row.last_heard, 10s);
    } else {
      EXPECT_FALSE(row.last_heard.has_value());
    }
  }
  EXPECT_EQ(hostnames, (std::set<std::string>{"alpha", "beta"}));
}

TEST(NodeRendezvous, QueryMembersWithAnotherRunIdIsRefused) {
  auto node = start_seed_node(1, "solo");
  std::string message;
  EXPECT_EQ(code_of([&] { query_members(node->endpoint(), "other-run", 5s); }, &message),
            ErrorCode::run_id_mismatch);
  EXPECT_NE(message.find("other-run"), std::string::npos) << message;
  EXPECT_NE(message.find("it-node"), std::string::npos) << message;
}

TEST(NodeRendezvous, QueryMembersOfAClosedPortSaysNothingListens) {
  const std::uint16_t port = free_port();
  std::string message;
  EXPECT_EQ(code_of([&] { query_members(loopback(port), "it-node", 500ms); }, &message),
            ErrorCode::seed_unreachable);
  EXPECT_NE(message.find("nothing listens"), std::string::npos) << message;
}

TEST(NodeRendezvous, SurvivesGarbageOnItsPort) {
  auto first = start_seed_node(2, "alpha");
  {
    transport::ZmqTransport vandal("127.0.0.1", 0);
    for (int i = 0; i < 50; ++i) {
      vandal.send(first->endpoint(), transport::Bytes(static_cast<std::size_t>(i), 0xc1));
    }
  }
  auto second = start_node(2, first->endpoint(), "beta");
  EXPECT_EQ(first->wait().nnodes(), 2u);
  EXPECT_EQ(second->wait().nnodes(), 2u);
}

// ---- failures during the rendezvous ----------------------------------------------------------

struct StrangerOutcome {
  ErrorCode code{};
  std::string message;
  Clock::duration took{};
};

// A node of run "another-job" (--nnodes `nodes`) whose only seed is a member of "it-node".
StrangerOutcome join_another_runs_seed(std::uint32_t nodes) {
  auto member = start_seed_node(2, "alpha");
  Config config = local_config(nodes, member->endpoint());
  config.run_id = "another-job";
  Node stranger(config);
  stranger.start();
  const auto started = Clock::now();
  StrangerOutcome outcome;
  outcome.code = code_of([&] { stranger.wait(); }, &outcome.message);
  outcome.took = Clock::now() - started;
  return outcome;
}

TEST(NodeFailure, OtherRunIdGetsRunIdMismatchNamingBothRuns) {
  const StrangerOutcome outcome = join_another_runs_seed(2);
  const std::string& message = outcome.message;
  EXPECT_EQ(outcome.code, ErrorCode::run_id_mismatch);
  EXPECT_LT(outcome.took, 5s) << "a refusal by the only seed should end the wait";
  EXPECT_NE(message.find("another-job"), std::string::npos) << message;
  EXPECT_NE(message.find("it-node"), std::string::npos) << message;
  EXPECT_NE(message.find("--run-id"), std::string::npos) << message;
}

// A node of one (--nnodes 1) given another run's seed could commit alone before the
// refusal arrives, and exit 0: it agrees only once it has heard from its own run.
TEST(NodeFailure, SingleNodeGivenAnotherRunsSeedIsRefusedNotCommittedAlone) {
  const StrangerOutcome outcome = join_another_runs_seed(1);
  EXPECT_EQ(outcome.code, ErrorCode::run_id_mismatch);
  EXPECT_NE(outcome.message.find("another-job"), std::string::npos) << outcome.message;
}

TEST(NodeFailure, ClosedSeedPortGivesSeedUnreachableNothingListens) {
  const std::uint16_t closed = free_port();
  Config config = local_config(2, loopback(closed));
  config.join_timeout = 1500ms;
  Node node(config);
  node.start();
  const auto started = Clock::now();
  std::string message;
  EXPECT_EQ(code_of([&] { node.wait(); }, &message), ErrorCode::seed_unreachable);
  EXPECT_LT(Clock::now() - started, 1500ms + 3s);  // join timeout + one probe
  EXPECT_NE(message.find("nothing listens on " + loopback(closed)), std::string::npos) << message;
}

TEST(NodeFailure, SeedThatIsAnotherServiceIsNamedAsSuch) {
  LoopbackSocket other_service(LoopbackSocket::Mode::listening);  // accepts TCP, never answers
  Config config = local_config(2, loopback(other_service.port()));
  config.join_timeout = 1s;
  Node node(config);
  node.start();
  std::string message;
  EXPECT_EQ(code_of([&] { node.wait(); }, &message), ErrorCode::seed_unreachable);
  EXPECT_NE(message.find("accepts connections but never answered"), std::string::npos) << message;
}

// A seed process that took the connection (its transport greeted ours) but never answered
// the Join is named as such: too busy when it is still there, stopped when nothing listens
// any more (an overloaded seed of 512 joiners gave up at its own --join-timeout before the
// last ones launched gave up at theirs, and they were told to start it).
TEST(NodeFailure, ASeedThatTookTheConnectionButNeverAnsweredIsBusyOrStopped) {
  for (const bool stop_it : {false, true}) {
    auto silent = std::make_unique<transport::ZmqTransport>("127.0.0.1", 0);
    const std::string endpoint = loopback(silent->bound_port());
    std::atomic<bool> quit{false};
    std::atomic<bool> heard{false};
    std::thread loop([&] {
      while (!quit) {
        if (silent->receive(10ms)) heard = true;  // the Join: it came after our greeting
      }
    });
    Config config = local_config(2, endpoint);
    config.join_timeout = 2s;
    Node node(config);
    node.start();
    const auto deadline = Clock::now() + 10s;
    while (!heard && Clock::now() < deadline) std::this_thread::sleep_for(5ms);
    ASSERT_TRUE(heard);
    if (stop_it) {
      quit = true;
      loop.join();
      silent.reset();
    }
    std::string message;
    EXPECT_EQ(code_of([&] { node.wait(); }, &message), ErrorCode::seed_unreachable);
    EXPECT_NE(message.find("the seed at " + endpoint +
                           " took this node's connection but never "
                           "answered it"),
              std::string::npos)
        << message;
    if (stop_it) {
      EXPECT_NE(message.find("nothing listens there now: the seed stopped"), std::string::npos)
          << message;
    } else {
      EXPECT_NE(message.find("it is too busy"), std::string::npos) << message;
      quit = true;
      loop.join();
    }
  }
}

// A fake seed of a newer protocol version: it answers every message with a Refuse whose
// header carries its version, which this build cannot decode beyond the header.
TEST(NodeFailure, SeedOfAnotherVersionGivesVersionMismatch) {
  transport::ZmqTransport fake_seed("127.0.0.1", 0);
  const std::string fake_endpoint = loopback(fake_seed.bound_port());
  Node node(local_config(2, fake_endpoint));
  node.start();
  auto outcome = std::async(std::launch::async, [&] {
    std::string message;
    const ErrorCode code = code_of([&] { node.wait(); }, &message);
    return std::make_pair(code, message);
  });
  while (outcome.wait_for(0ms) != std::future_status::ready) {
    const auto bytes = fake_seed.receive(50ms);
    if (!bytes) continue;
    const auto join = protocol::decode(*bytes);
    if (!join.ok()) continue;
    protocol::Envelope refuse;
    refuse.version = protocol::kProtocolVersion + 1;
    refuse.run_id = "it-node";
    refuse.sender = fake_endpoint;
    refuse.body = protocol::Refuse{protocol::RefuseReason::version_mismatch, "future seed"};
    fake_seed.send(join.envelope().sender, protocol::encode(refuse));
  }
  const auto [code, message] = outcome.get();
  EXPECT_EQ(code, ErrorCode::version_mismatch) << message;
  EXPECT_NE(message.find(fake_endpoint), std::string::npos) << message;
  EXPECT_NE(message.find("same gossip-rdzv version"), std::string::npos) << message;
}

TEST(NodeFailure, JoinTimeoutNamesWhoJoinedAndHowManyAreMissing) {
  auto first = start_seed_node(3, "alpha");
  Config config = local_config(3, first->endpoint());
  config.hostname = "beta";
  config.join_timeout = 1500ms;
  Node second(config);
  second.start();
  std::string message;
  EXPECT_EQ(code_of([&] { second.wait(); }, &message), ErrorCode::join_timeout);
  EXPECT_NE(message.find("2 of 3 nodes joined"), std::string::npos) << message;
  EXPECT_NE(message.find("alpha"), std::string::npos) << message;
  EXPECT_NE(message.find("1 still missing"), std::string::npos) << message;
}

TEST(NodeFailure, SilentMemberIsReportedWithWhenItWasLastHeard) {
  Config config = seed_node_config(3, "alpha");
  config.join_timeout = 4s;  // past Timing::local()'s suspicion (about 1 s)
  Node first(config);
  first.start();
  auto second = start_node(3, first.endpoint(), "beta");
  // Wait until alpha has heard beta, then let beta vanish.
  const auto deadline = Clock::now() + 3s;
  while (first.progress().alive() < 2 && Clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);  // polling a condition with a deadline
  }
  ASSERT_EQ(first.progress().alive(), 2u);
  second.reset();

  std::string message;
  EXPECT_EQ(code_of([&] { first.wait(); }, &message), ErrorCode::join_timeout);
  EXPECT_NE(message.find("1 of 3 nodes joined"), std::string::npos) << message;
  EXPECT_NE(message.find("Seen and then silent: beta"), std::string::npos) << message;
  EXPECT_NE(message.find("ago"), std::string::npos) << message;
  // A member that stopped is not one whose address fails: it sent nothing since.
  EXPECT_EQ(message.find("This node gets no answer"), std::string::npos) << message;
}

// A node advertising an address nobody can reach (TEST-NET-1) reaches its seed, whose
// answers go nowhere: the seed tells it so over its own connection, and both say who and
// where in their errors, instead of "the seed accepts connections but never answered".
TEST(NodeFailure, NodeWhoseAddressDoesNotWorkIsToldSoByTheSeed) {
  Config seed_config = seed_node_config(2, "alpha");
  seed_config.join_timeout = 3s;
  Node seed(seed_config);
  seed.start();
  Config config = local_config(2, seed.endpoint());
  config.hostname = "beta";
  config.advertise_host = "192.0.2.1";
  config.join_timeout = 3s;
  Node bad(config);
  bad.start();
  const std::string bad_endpoint = bad.endpoint();
  ASSERT_EQ(bad_endpoint.rfind("192.0.2.1:", 0), 0u) << bad_endpoint;

  auto seed_outcome = std::async(std::launch::async, [&] {
    std::string message;
    const ErrorCode code = code_of([&] { seed.wait(); }, &message);
    return std::make_pair(code, message);
  });
  std::string message;
  EXPECT_EQ(code_of([&] { bad.wait(); }, &message), ErrorCode::seed_unreachable);
  EXPECT_NE(message.find("no seed let this node join within 3.0 s: peers cannot reach this "
                         "node at " +
                         bad_endpoint + ": " + seed.endpoint() + " got no answer there"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("or open inbound TCP port " + bad_endpoint.substr(10)), std::string::npos)
      << message;
  const Progress progress = bad.progress();
  EXPECT_EQ(progress.unreachable_by, std::vector<std::string>{seed.endpoint()});

  const auto [seed_code, seed_message] = seed_outcome.get();
  EXPECT_EQ(seed_code, ErrorCode::join_timeout);
  EXPECT_NE(seed_message.find("This node gets no answer at the advertised address of beta " +
                              bad_endpoint + " ("),
            std::string::npos)
      << seed_message;
  EXPECT_NE(seed_message.find("it was told"), std::string::npos) << seed_message;
}

// A seed stays max(commit_grace, join_backoff_max) after its commit, so that a node that
// starts or restarts late asks it at least once and is told the outcome. Under the wan
// profile the backoff (30 s) is the longer one; here the same shape, scaled down.
// ---- elastic jobs: whose failure is it ------------------------------------------------------

// Three elastic nodes (--nnodes 2:3) on loopback, committed in round 0.
struct ElasticTrio {
  std::vector<std::unique_ptr<Node>> nodes;
  std::vector<Assignment> round0;

  ElasticTrio() {
    Config seed = seed_node_config(3, "node0");
    make_elastic(seed);
    nodes.push_back(std::make_unique<Node>(seed));
    nodes[0]->start();
    for (int i = 1; i < 3; ++i) {
      Config config = local_config(3, nodes[0]->endpoint());
      config.hostname = "node" + std::to_string(i);
      make_elastic(config);
      nodes.push_back(std::make_unique<Node>(config));
      nodes.back()->start();
    }
    std::vector<std::future<Assignment>> waits;
    for (auto& node : nodes)
      waits.push_back(std::async(std::launch::async, [&node] { return node->wait(); }));
    for (auto& wait : waits) round0.push_back(wait.get());
  }
  static void make_elastic(Config& config) {
    config.elastic = true;
    config.min_nodes = 2;
    config.max_nodes = 3;
  }
};

TEST(NodeElastic, AWorkerFailureWhileEveryMemberListensIsThisNodesOwn) {
  ElasticTrio trio;
  EXPECT_FALSE(trio.nodes[1]->failure_explained_by_departure(trio.round0[1]));
  EXPECT_FALSE(trio.nodes[1]->round_over(trio.round0[1]));
}

// A member's agent gone (here stopped without leaving, as a killed process): the survivors'
// workers fail before its death is declared, and that failure uses no restart.
TEST(NodeElastic, AWorkerFailureAfterAMembersAgentWentIsExplainedByItsDeparture) {
  ElasticTrio trio;
  const std::string gone = trio.nodes[2]->endpoint();
  trio.nodes[2]->stop();
  EXPECT_TRUE(trio.nodes[1]->failure_explained_by_departure(trio.round0[1]));
  EXPECT_TRUE(trio.nodes[1]->round_over(trio.round0[1]));
  const auto why = trio.nodes[1]->round_change();
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("dead"), std::string::npos) << *why;
  // The survivors form round 1 without it; nobody reported a worker failure.
  const Assignment next = trio.nodes[1]->wait_next(trio.round0[1]);
  EXPECT_EQ(next.round, 1u);
  EXPECT_EQ(next.nnodes(), 2u);
  for (const auto& node : next.nodes) EXPECT_NE(node.endpoint, gone);
}

// After the job, a node that left goes on answering while it runs: the CLI keeps a seed's
// running for --stay-after-job, so that a node started after every agent exited is told.
TEST(NodeElastic, ASeedStillRunningAfterTheJobTellsALateNodeItIsOver) {
  ElasticTrio trio;
  EXPECT_TRUE(trio.nodes[0]->listed_as_seed());
  EXPECT_FALSE(trio.nodes[1]->listed_as_seed());
  for (auto& node : trio.nodes) node->report_workers_finished();
  for (auto& node : trio.nodes) EXPECT_TRUE(node->wait_job_finished(30s));
  trio.nodes[1]->stop();
  trio.nodes[2]->stop();
  Config config = local_config(3, trio.nodes[0]->endpoint());
  config.hostname = "late";
  ElasticTrio::make_elastic(config);
  Node late(config);
  late.start();
  std::string message;
  EXPECT_EQ(code_of([&] { late.wait(); }, &message), ErrorCode::job_over) << message;
  EXPECT_NE(message.find("the job of this run id already finished: node node0"), std::string::npos)
      << message;
}

TEST(NodeLifecycle, FinishOnASeedLastsTheJoinBackoffWhenItIsLongerThanTheGrace) {
  Config config = seed_node_config(1, "seed");
  config.timing.commit_grace = 300ms;
  config.timing.join_backoff_max = 3s;
  Node node(config);
  const auto started = Clock::now();
  node.start();
  node.wait();
  node.finish();
  // The commit came after start(), and the core is done no earlier than the stay after it.
  // (commit_grace + 1 s would be too early: a late starter must still be told.)
  EXPECT_GE(Clock::now() - started, config.timing.join_backoff_max);
}

TEST(NodeLifecycle, StopIsIdempotentAndQuick) {
  auto node = start_seed_node(2, "alone");
  const auto started = Clock::now();
  node->stop();
  node->stop();
  node.reset();
  EXPECT_LT(Clock::now() - started, 2s);
}

}  // namespace
}  // namespace gossip_rdzv
