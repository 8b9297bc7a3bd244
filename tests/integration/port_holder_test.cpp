// find_port_holder on a port this test process holds.
#include "transport/port_holder.hpp"

#include <unistd.h>

#include <gtest/gtest.h>

#include "support/loopback_socket.hpp"

namespace gossip_rdzv::transport {
namespace {

using gossip_rdzv::testing_support::LoopbackSocket;

TEST(PortHolder, FindsThisProcessListening) {
  LoopbackSocket listener(LoopbackSocket::Mode::listening);
  const auto holder = find_port_holder(listener.port());
  ASSERT_TRUE(holder.has_value());
  EXPECT_EQ(holder->pid, ::getpid());
  EXPECT_NE(holder->command_line.find("port_holder_test"), std::string::npos)
      << holder->command_line;
  EXPECT_EQ(describe_port_holder(listener.port()).rfind("by pid " + std::to_string(::getpid()), 0),
            0u);
}

TEST(PortHolder, IgnoresSocketsThatDoNotListen) {
  LoopbackSocket bound_only(LoopbackSocket::Mode::bound_only);
  EXPECT_FALSE(find_port_holder(bound_only.port()).has_value());
  EXPECT_EQ(describe_port_holder(bound_only.port()), "by another process (not visible from here)");
}

}  // namespace
}  // namespace gossip_rdzv::transport
