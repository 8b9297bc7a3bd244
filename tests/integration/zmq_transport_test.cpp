// ZmqTransport on real loopback sockets with OS-picked ports.
#include "transport/zmq_transport.hpp"

#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "support/loopback_socket.hpp"

#include "gossip_rdzv/error.hpp"

namespace gossip_rdzv::transport {
namespace {

using gossip_rdzv::testing_support::LoopbackSocket;

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

Bytes bytes_of(const std::string& text) {
  return Bytes(text.begin(), text.end());
}
std::string text_of(const Bytes& bytes) {
  return std::string(bytes.begin(), bytes.end());
}

std::string loopback(const ZmqTransport& transport) {
  return "127.0.0.1:" + std::to_string(transport.bound_port());
}

// Waits for one message, up to `deadline_after`; the first send may wait for the connection.
std::optional<Received> receive_from_within(ZmqTransport& transport,
                                            std::chrono::milliseconds deadline_after) {
  const auto deadline = Clock::now() + deadline_after;
  while (Clock::now() < deadline) {
    if (auto message = transport.receive_from(50ms)) return message;
  }
  return std::nullopt;
}
std::optional<Bytes> receive_within(ZmqTransport& transport,
                                    std::chrono::milliseconds deadline_after) {
  auto message = receive_from_within(transport, deadline_after);
  if (!message) return std::nullopt;
  return std::move(message->bytes);
}

TEST(ZmqTransport, BindsAnOsPickedPort) {
  ZmqTransport transport("127.0.0.1", 0);
  EXPECT_NE(transport.bound_port(), 0);
}

TEST(ZmqTransport, ExchangesMessagesBothWays) {
  ZmqTransport alice("127.0.0.1", 0);
  ZmqTransport bob("127.0.0.1", 0);

  ASSERT_TRUE(alice.send(loopback(bob), bytes_of("hello bob")));
  const auto at_bob = receive_within(bob, 5s);
  ASSERT_TRUE(at_bob.has_value());
  EXPECT_EQ(text_of(*at_bob), "hello bob");

  ASSERT_TRUE(bob.send(loopback(alice), bytes_of("hello alice")));
  const auto at_alice = receive_within(alice, 5s);
  ASSERT_TRUE(at_alice.has_value());
  EXPECT_EQ(text_of(*at_alice), "hello alice");
}

// The reply path: an answer over the connection a message came on, which works whatever the
// sender's own listen address is; it comes out of the sender's receive like any message.
TEST(ZmqTransport, ReplyGoesBackOverTheSendersConnection) {
  ZmqTransport alice("127.0.0.1", 0);
  ZmqTransport bob("127.0.0.1", 0);
  ASSERT_TRUE(alice.send(loopback(bob), bytes_of("can you reach me?")));
  const auto question = receive_from_within(bob, 5s);
  ASSERT_TRUE(question.has_value());
  EXPECT_EQ(text_of(question->bytes), "can you reach me?");
  ASSERT_FALSE(question->reply_to.empty());  // it came into bob's inbox

  // Alice blocks in one long receive: the answer on her outgoing connection must end it.
  std::optional<Received> answer;
  const auto started = Clock::now();
  std::thread listener([&] { answer = alice.receive_from(10s); });
  ASSERT_TRUE(bob.reply(question->reply_to, bytes_of("no")));
  listener.join();
  EXPECT_LT(Clock::now() - started, 5s);
  ASSERT_TRUE(answer.has_value());
  EXPECT_EQ(text_of(answer->bytes), "no");
  EXPECT_TRUE(answer->reply_to.empty());  // it came back on alice's connection to bob
  // Bob never opened a connection to alice's listen address.
  EXPECT_FALSE(receive_within(alice, 200ms).has_value());
}

TEST(ZmqTransport, ReplyWithoutAConnectionIsDropped) {
  ZmqTransport transport("127.0.0.1", 0);
  EXPECT_FALSE(transport.reply("", bytes_of("x")));
}

TEST(ZmqTransport, KeepsOrderOnOneDestination) {
  ZmqTransport sender("127.0.0.1", 0);
  ZmqTransport receiver("127.0.0.1", 0);
  for (int i = 0; i < 100; ++i) sender.send(loopback(receiver), bytes_of(std::to_string(i)));
  for (int i = 0; i < 100; ++i) {
    const auto message = receive_within(receiver, 5s);
    ASSERT_TRUE(message.has_value()) << "message " << i;
    EXPECT_EQ(text_of(*message), std::to_string(i));
  }
}

TEST(ZmqTransport, EvictedDestinationIsRecreatedOnNextSend) {
  TransportOptions options;
  options.max_destinations = 1;
  ZmqTransport sender("127.0.0.1", 0, options);
  ZmqTransport first("127.0.0.1", 0);
  ZmqTransport second("127.0.0.1", 0);
  sender.send(loopback(first), bytes_of("a"));
  sender.send(loopback(second), bytes_of("b"));
  ASSERT_TRUE(receive_within(second, 5s).has_value());
  sender.send(loopback(first), bytes_of("c"));
  const auto at_first = receive_within(first, 5s);
  ASSERT_TRUE(at_first.has_value());
}

TEST(ZmqTransport, ReceiveTimesOutWithoutMessages) {
  ZmqTransport transport("127.0.0.1", 0);
  const auto started = Clock::now();
  EXPECT_FALSE(transport.receive(50ms).has_value());
  EXPECT_GE(Clock::now() - started, 40ms);
}

TEST(ZmqTransport, WakeInterruptsReceiveFromAnotherThread) {
  ZmqTransport transport("127.0.0.1", 0);
  const auto started = Clock::now();
  std::thread waker([&] { transport.wake(); });
  const auto message = transport.receive(10s);
  waker.join();
  EXPECT_FALSE(message.has_value());
  EXPECT_LT(Clock::now() - started, 5s);
}

TEST(ZmqTransport, SendToMalformedAddressIsDropped) {
  ZmqTransport transport("127.0.0.1", 0);
  EXPECT_FALSE(transport.send("no-port-here", bytes_of("x")));
}

TEST(ZmqTransport, DestroyingWithUndeliverableMessagesReturnsWithinLinger) {
  LoopbackSocket closed_later(
      LoopbackSocket::Mode::listening);  // a port nobody answers ZMTP on: the message stays queued
  const auto started = Clock::now();
  {
    ZmqTransport transport("127.0.0.1", 0);
    transport.send("127.0.0.1:" + std::to_string(closed_later.port()), bytes_of("stuck"));
  }
  EXPECT_LT(Clock::now() - started, 3s);
}

TEST(ZmqTransport, PortInUseNamesThePortAndTheHoldingProcess) {
  LoopbackSocket held(LoopbackSocket::Mode::listening);
  try {
    ZmqTransport transport("127.0.0.1", held.port());
    FAIL() << "bind on a held port succeeded";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::listen_failed);
    const std::string message = error.what();
    EXPECT_NE(message.find(std::to_string(held.port())), std::string::npos) << message;
    EXPECT_NE(message.find("already in use"), std::string::npos) << message;
    EXPECT_NE(message.find("pid " + std::to_string(::getpid())), std::string::npos) << message;
    EXPECT_NE(message.find("--listen"), std::string::npos) << message;
  }
}

TEST(ZmqTransport, AddressOfAnotherMachineIsNamedWithLocalAlternatives) {
  // 192.0.2.0/24 is TEST-NET-1 (RFC 5737): never assigned to a real machine.
  try {
    ZmqTransport transport("192.0.2.55", 0);
    FAIL() << "bind on a foreign address succeeded";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::listen_failed);
    const std::string message = error.what();
    EXPECT_NE(message.find("192.0.2.55 is not an address of this machine"), std::string::npos)
        << message;
    EXPECT_NE(message.find("127.0.0.1"), std::string::npos) << message;
  }
}

TEST(ZmqTransport, UnknownHostOrInterfaceIsAListenError) {
  try {
    ZmqTransport transport("no-such-interface-xyz", 0);
    FAIL() << "bind on a bogus host succeeded";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::listen_failed);
    EXPECT_NE(std::string(error.what()).find("no-such-interface-xyz"), std::string::npos)
        << error.what();
  }
}

TEST(ZmqTransport, Ipv6LoopbackWorksWhenAvailable) {
  std::optional<ZmqTransport> receiver;
  try {
    receiver.emplace("::1", 0);
  } catch (const Error& error) {
    GTEST_SKIP() << "no IPv6 loopback here: " << error.what();
  }
  ZmqTransport sender("127.0.0.1", 0);
  sender.send("[::1]:" + std::to_string(receiver->bound_port()), bytes_of("v6"));
  const auto message = receive_within(*receiver, 5s);
  ASSERT_TRUE(message.has_value());
  EXPECT_EQ(text_of(*message), "v6");
}

TEST(ZmqTransportAddress, AddsTheTcpSchemeOnce) {
  EXPECT_EQ(zmq_tcp_address("10.0.0.1:29400"), "tcp://10.0.0.1:29400");
  EXPECT_EQ(zmq_tcp_address("[::1]:29400"), "tcp://[::1]:29400");
  EXPECT_EQ(zmq_tcp_address("tcp://h:1"), "tcp://h:1");
}

}  // namespace
}  // namespace gossip_rdzv::transport
