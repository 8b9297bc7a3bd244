// Runtime: the event loop between a real ZmqTransport and protocol::Core, driven over
// loopback by a test transport that speaks raw protocol messages.
#include "runtime/runtime.hpp"

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "protocol/codec.hpp"

namespace gossip_rdzv::runtime {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

std::string loopback(std::uint16_t port) {
  return "127.0.0.1:" + std::to_string(port);
}

// A node of a cluster of `nodes` on an OS-picked loopback port, not started yet; with no
// `seeds` it is its own seed.
std::unique_ptr<Runtime> make_runtime(const std::string& hostname, std::uint32_t nodes = 1,
                                      std::vector<std::string> seeds = {}) {
  auto transport = std::make_unique<transport::ZmqTransport>("127.0.0.1", 0);
  protocol::CoreConfig config;
  config.self.endpoint = loopback(transport->bound_port());
  config.self.node_id = std::hash<std::string>{}(hostname);
  config.self.generation = 1;
  config.self.host = "127.0.0.1";
  config.self.hostname = hostname;
  config.self.master_port = 29500;
  config.self.min_nodes = config.self.max_nodes = nodes;
  config.min_nodes = config.max_nodes = nodes;
  config.seeds = std::move(seeds);
  config.run_id = "it-runtime";
  config.timing = Timing::local();
  config.rng_seed = 42;
  return std::make_unique<Runtime>(config, std::move(transport));
}

// A one-node cluster (no seeds: it is its own seed), started.
std::unique_ptr<Runtime> single_node_runtime() {
  auto runtime = make_runtime("solo");
  runtime->start();
  return runtime;
}

// The test's side of the conversation: its own inbox, and raw envelopes to the runtime.
class Client {
 public:
  Client() : transport_("127.0.0.1", 0) {}
  std::string endpoint() const { return loopback(transport_.bound_port()); }

  void send(const std::string& to, protocol::Envelope envelope) {
    envelope.sender = endpoint();
    transport_.send(to, protocol::encode(envelope));
  }
  void send_raw(const std::string& to, const transport::Bytes& bytes) {
    transport_.send(to, bytes);
  }

  /// The next message that decodes, waiting until `deadline_after`.
  std::optional<protocol::Envelope> receive(std::chrono::milliseconds deadline_after) {
    const auto deadline = Clock::now() + deadline_after;
    while (Clock::now() < deadline) {
      auto bytes = transport_.receive(50ms);
      if (!bytes) continue;
      auto result = protocol::decode(*bytes);
      if (result.ok()) return result.envelope();
    }
    return std::nullopt;
  }

 private:
  transport::ZmqTransport transport_;
};

protocol::Envelope query(const std::string& run_id, std::uint16_t version) {
  protocol::Envelope envelope;
  envelope.version = version;
  envelope.run_id = run_id;
  envelope.body = protocol::Query{};
  return envelope;
}

TEST(Runtime, SingleNodeCommitsAndPublishesTheOutcome) {
  auto runtime = single_node_runtime();
  const bool committed = runtime->wait_until(
      [](const RuntimeState& s) { return s.assignment.has_value(); }, Clock::now() + 10s);
  ASSERT_TRUE(committed);
  const RuntimeState state = runtime->state();
  EXPECT_TRUE(state.joined);
  EXPECT_EQ(state.assignment->nnodes(), 1u);
  EXPECT_EQ(state.assignment->master_port, 29500);
  EXPECT_TRUE(runtime->snapshot().commit_reported);
  EXPECT_TRUE(
      runtime->wait_until([](const RuntimeState& s) { return s.done; }, Clock::now() + 10s));
}

// The step in which the core commits also queues our ready and commit bits for the peers.
// They must be with the transport before a thread waiting for the outcome can see it:
// that thread writes the env file and starts workers, and its process may die right after
// (issue 21: a peer that never got our vote could then commit another outcome). The
// observer runs on the loop thread right after each hand-over and looks at what a waiting
// thread would see at that moment.
TEST(Runtime, CommitIsPublishedOnlyAfterTheCommittingStepsMessagesAreSent) {
  // Declared before the runtimes, so they outlive the loop threads that update them.
  std::mutex mutex;
  std::size_t sent_after_commit = 0;    // handed over once the core had reported the commit
  std::size_t sent_before_publish = 0;  // ... while waiting threads could not see it yet
  auto first = make_runtime("first", 2);
  auto second = make_runtime("second", 2, {first->config().self.endpoint});
  const Runtime& observed = *first;
  first->set_send_observer([&](const protocol::Outgoing&) {
    if (!observed.snapshot().commit_reported) return;
    const bool published = observed.state().assignment.has_value();
    std::lock_guard lock(mutex);
    ++sent_after_commit;
    if (!published) ++sent_before_publish;
  });
  first->start();
  second->start();
  for (Runtime* runtime : {first.get(), second.get()}) {
    ASSERT_TRUE(runtime->wait_until([](const RuntimeState& s) { return s.assignment.has_value(); },
                                    Clock::now() + 10s));
  }
  std::lock_guard lock(mutex);
  EXPECT_GT(sent_after_commit, 0u);
  EXPECT_GT(sent_before_publish, 0u) << "the commit was visible before its step's messages left";
}

TEST(Runtime, AnswersAQuery) {
  auto runtime = single_node_runtime();
  Client client;
  client.send(runtime->config().self.endpoint, query("it-runtime", protocol::kProtocolVersion));
  const auto reply = client.receive(5s);
  ASSERT_TRUE(reply.has_value());
  const auto* members = std::get_if<protocol::QueryReply>(&reply->body);
  ASSERT_NE(members, nullptr);
  ASSERT_EQ(members->members.size(), 1u);
  EXPECT_EQ(members->members[0].ann.hostname, "solo");
}

TEST(Runtime, RefusesAnotherRunId) {
  auto runtime = single_node_runtime();
  Client client;
  client.send(runtime->config().self.endpoint, query("someone-else", protocol::kProtocolVersion));
  const auto reply = client.receive(5s);
  ASSERT_TRUE(reply.has_value());
  const auto* refuse = std::get_if<protocol::Refuse>(&reply->body);
  ASSERT_NE(refuse, nullptr);
  EXPECT_EQ(refuse->reason, protocol::RefuseReason::run_id_mismatch);
  EXPECT_TRUE(runtime->wait_until([](const RuntimeState& s) { return !s.refusals.empty(); },
                                  Clock::now() + 5s));
  EXPECT_TRUE(runtime->state().refusals.front().by_us);
}

TEST(Runtime, RefusesAnotherProtocolVersionItCannotDecode) {
  auto runtime = single_node_runtime();
  Client client;
  client.send(runtime->config().self.endpoint, query("it-runtime", protocol::kProtocolVersion + 1));
  const auto reply = client.receive(5s);
  ASSERT_TRUE(reply.has_value());
  const auto* refuse = std::get_if<protocol::Refuse>(&reply->body);
  ASSERT_NE(refuse, nullptr);
  EXPECT_EQ(refuse->reason, protocol::RefuseReason::version_mismatch);
}

TEST(Runtime, GarbageDoesNotStopTheLoop) {
  auto runtime = single_node_runtime();
  Client client;
  const std::string target = runtime->config().self.endpoint;
  for (int i = 0; i < 200; ++i) {
    client.send_raw(
        target, transport::Bytes(static_cast<std::size_t>(i % 17), static_cast<std::uint8_t>(i)));
  }
  client.send(target, query("it-runtime", protocol::kProtocolVersion));
  const auto reply = client.receive(5s);
  ASSERT_TRUE(reply.has_value());
  EXPECT_NE(std::get_if<protocol::QueryReply>(&reply->body), nullptr);
  EXPECT_FALSE(runtime->state().loop_failure.has_value());
}

// Undecodable messages that each claim another sender (the name is the sender's choice)
// give a bounded number of warning lines, not one each.
TEST(Runtime, AFloodOfSpoofedSendersGivesABoundedNumberOfWarnings) {
  auto text = std::make_shared<std::ostringstream>();
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(*text);
  spdlog::drop("gossip_rdzv");
  auto logger = std::make_shared<spdlog::logger>("gossip_rdzv", sink);
  logger->set_level(spdlog::level::info);
  spdlog::register_logger(logger);
  auto runtime = single_node_runtime();
  Client client;
  const std::string target = runtime->config().self.endpoint;
  constexpr int kFlood = 20000;
  for (int i = 0; i < kFlood; ++i) {
    protocol::Envelope envelope = query("it-runtime", protocol::kProtocolVersion);
    envelope.sender = "spoofed-" + std::to_string(i) + ":1";
    transport::Bytes bytes = protocol::encode(envelope);
    bytes.pop_back();  // the header decodes, the body does not
    client.send_raw(target, bytes);
  }
  // Messages of one connection are handled in order: an answer comes after the flood. The
  // client's queue may be full for a while (it drops what it cannot queue), so ask again.
  bool answered = false;
  for (int attempt = 0; attempt < 300 && !answered; ++attempt) {
    client.send(target, query("it-runtime", protocol::kProtocolVersion));
    answered = client.receive(200ms).has_value();
  }
  ASSERT_TRUE(answered);
  runtime->stop();
  spdlog::drop("gossip_rdzv");
  const std::string log = text->str();
  std::size_t lines = 0;
  for (std::size_t at = log.find("not valid gossip-rdzv"); at != std::string::npos;
       at = log.find("not valid gossip-rdzv", at + 1)) {
    ++lines;
  }
  EXPECT_GE(lines, 1u) << log;
  EXPECT_LE(lines, 6u) << log;  // 5 per 10 s, and one line counting the rest
}

TEST(Runtime, StopIsIdempotentAndWakesWaiters) {
  auto runtime = single_node_runtime();
  const auto started = Clock::now();
  runtime->stop();
  runtime->stop();
  EXPECT_TRUE(
      runtime->wait_until([](const RuntimeState& s) { return s.stopped; }, Clock::now() + 1s));
  EXPECT_LT(Clock::now() - started, 2s);
}

TEST(RuntimeText, PrintableEscapesControlCharacters) {
  EXPECT_EQ(printable("node7"), "node7");
  EXPECT_EQ(printable("a\nb\x1b[31m"), "a\\x0ab\\x1b[31m");
  EXPECT_EQ(printable("back\\slash"), "back\\x5cslash");
}

// Peers on the same machine reach a loopback address: then blaming it would be false.
TEST(RuntimeText, LoopbackIsBlamedOnlyWhenAReporterIsOnAnotherMachine) {
  const std::string self = "127.0.0.1:29400";
  const std::string local = reachability_advice(self, {"127.0.0.1:29401", "localhost:29402"});
  EXPECT_EQ(local.find("is a loopback address"), std::string::npos) << local;
  EXPECT_NE(local.find("did not answer in time"), std::string::npos) << local;
  const std::string remote = reachability_advice(self, {"127.0.0.1:29401", "10.0.0.7:29400"});
  EXPECT_NE(remote.find("127.0.0.1 is a loopback address"), std::string::npos) << remote;
  const std::string routable = reachability_advice("10.0.0.5:29400", {"10.0.0.7:29400"});
  EXPECT_NE(routable.find("open inbound TCP port 29400"), std::string::npos) << routable;
}

}  // namespace
}  // namespace gossip_rdzv::runtime

namespace gossip_rdzv::runtime {
namespace {

TEST(Runtime, ARoundChangeNamesThePeerByHostAndHowLongItWasSilent) {
  protocol::RoundStarted dead{2, protocol::RoundReason::member_dead, "10.0.0.3:29400"};
  PeerDetail detail;
  detail.hostname = "trainer-3";
  detail.silent_for = protocol::Time(std::chrono::milliseconds(4100));
  EXPECT_EQ(describe_round_start(dead, detail),
            "member trainer-3 (10.0.0.3:29400) was declared dead (no answer for 4.1 s); "
            "re-forming the group (the previous round's workers stop)");
  // Never heard from directly, or unknown: the endpoint alone.
  EXPECT_EQ(describe_round_start(dead),
            "member 10.0.0.3:29400 was declared dead; re-forming the group (the previous "
            "round's workers stop)");
  protocol::RoundStarted arrived{3, protocol::RoundReason::member_arrived, "10.0.0.9:29400"};
  EXPECT_EQ(describe_round_start(arrived, {"trainer-9", std::nullopt}),
            "node trainer-9 (10.0.0.9:29400) is waiting to join and the job has room for it; "
            "re-forming the group (the previous round's workers stop)");
}

}  // namespace
}  // namespace gossip_rdzv::runtime
