// probe_tcp against loopback ports we open and close ourselves.
#include "transport/tcp_probe.hpp"

#include <unistd.h>

#include <gtest/gtest.h>

#include "support/loopback_socket.hpp"

namespace gossip_rdzv::transport {
namespace {

using gossip_rdzv::testing_support::LoopbackSocket;

using namespace std::chrono_literals;

TEST(TcpProbe, ConnectsToAListeningPort) {
  LoopbackSocket server(LoopbackSocket::Mode::listening);
  const ProbeResult result = probe_tcp("127.0.0.1", server.port(), 2s);
  EXPECT_EQ(result.outcome, ProbeOutcome::connected) << result.detail;
}

TEST(TcpProbe, ConnectsThroughAHostName) {
  LoopbackSocket server(LoopbackSocket::Mode::listening);
  const ProbeResult result = probe_tcp("localhost", server.port(), 2s);
  EXPECT_EQ(result.outcome, ProbeOutcome::connected) << result.detail;
}

TEST(TcpProbe, IsRefusedOnAClosedPort) {
  // Bound but not listening: the port is ours (nobody else can take it) yet refuses.
  LoopbackSocket reserved(LoopbackSocket::Mode::bound_only);
  const ProbeResult result = probe_tcp("127.0.0.1", reserved.port(), 2s);
  EXPECT_EQ(result.outcome, ProbeOutcome::refused) << result.detail;
  EXPECT_FALSE(result.detail.empty());
}

TEST(TcpProbe, ReportsAnUnresolvableName) {
  // .invalid never resolves (RFC 2606).
  const ProbeResult result = probe_tcp("no-such-host.invalid", 29400, 2s);
  EXPECT_EQ(result.outcome, ProbeOutcome::unresolved);
  EXPECT_FALSE(result.detail.empty());
}

TEST(TcpProbe, OutcomesHaveNames) {
  EXPECT_STREQ(to_string(ProbeOutcome::timed_out), "timed_out");
  EXPECT_STREQ(to_string(ProbeOutcome::unreachable), "unreachable");
}

}  // namespace
}  // namespace gossip_rdzv::transport
