// ZmqTransport on real loopback sockets with OS-picked ports.
#include "transport/zmq_transport.hpp"
#include "transport/zmtp.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <stdexcept>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

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

// Waits for one message, up to `deadline_after`. The first send waits for the connection and
// the receiver's handshake, which `sender` (when given) reads meanwhile, as a node's event
// loop would.
std::optional<Received> receive_from_within(ZmqTransport& transport,
                                            std::chrono::milliseconds deadline_after,
                                            ZmqTransport* sender = nullptr) {
  const auto deadline = Clock::now() + deadline_after;
  while (Clock::now() < deadline) {
    if (sender != nullptr) sender->flush(0ms);
    if (auto message = transport.receive_from(10ms)) return message;
  }
  return std::nullopt;
}
std::optional<Bytes> receive_within(ZmqTransport& transport,
                                    std::chrono::milliseconds deadline_after,
                                    ZmqTransport* sender = nullptr) {
  auto message = receive_from_within(transport, deadline_after, sender);
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
  const auto at_bob = receive_within(bob, 5s, &alice);
  ASSERT_TRUE(at_bob.has_value());
  EXPECT_EQ(text_of(*at_bob), "hello bob");

  ASSERT_TRUE(bob.send(loopback(alice), bytes_of("hello alice")));
  const auto at_alice = receive_within(alice, 5s, &bob);
  ASSERT_TRUE(at_alice.has_value());
  EXPECT_EQ(text_of(*at_alice), "hello alice");
}

// The reply path: an answer over the connection a message came on, which works whatever the
// sender's own listen address is; it comes out of the sender's receive like any message.
TEST(ZmqTransport, ReplyGoesBackOverTheSendersConnection) {
  ZmqTransport alice("127.0.0.1", 0);
  ZmqTransport bob("127.0.0.1", 0);
  ASSERT_TRUE(alice.send(loopback(bob), bytes_of("can you reach me?")));
  const auto question = receive_from_within(bob, 5s, &alice);
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
    const auto message = receive_within(receiver, 5s, &sender);
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
  ASSERT_TRUE(receive_within(second, 5s, &sender).has_value());
  sender.send(loopback(first), bytes_of("c"));
  const auto at_first = receive_within(first, 5s, &sender);
  ASSERT_TRUE(at_first.has_value());
}

// TCP sockets this process holds (listeners and both ends of each loopback connection).
std::size_t open_tcp_sockets() {
  std::size_t count = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code error;
    const auto target = std::filesystem::read_symlink(entry.path(), error);
    if (!error && target.string().rfind("socket:", 0) == 0) ++count;
  }
  return count;
}

// A node that talks to many peers keeps at most max_destinations connections open: the
// least recently used ones are closed, and a message to one of them opens it again.
TEST(ZmqTransport, ConnectionsStayWithinMaxDestinations) {
  constexpr std::size_t kPeers = 12;
  constexpr std::size_t kKept = 4;
  TransportOptions options;
  options.max_destinations = kKept;
  ZmqTransport sender("127.0.0.1", 0, options);
  std::vector<std::unique_ptr<ZmqTransport>> peers;
  for (std::size_t i = 0; i < kPeers; ++i)
    peers.push_back(std::make_unique<ZmqTransport>("127.0.0.1", 0));
  const std::size_t listeners = open_tcp_sockets();
  for (auto& peer : peers) {
    ASSERT_TRUE(sender.send(loopback(*peer), bytes_of("hi")));
    ASSERT_TRUE(receive_within(*peer, 5s, &sender).has_value());  // its connection was up
  }
  // Each connection kept is two sockets here (both ends are in this process).
  const auto deadline = Clock::now() + 5s;
  while (open_tcp_sockets() > listeners + 2 * kKept && Clock::now() < deadline) {
    // Closing finishes as each socket handles ZeroMQ's commands, which receive() does.
    sender.receive(1ms);
    for (auto& peer : peers) peer->receive(1ms);
  }
  EXPECT_LE(open_tcp_sockets(), listeners + 2 * kKept);
  ASSERT_TRUE(sender.send(loopback(*peers.front()), bytes_of("again")));
  const auto again = receive_within(*peers.front(), 5s, &sender);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(text_of(*again), "again");
}

// Nodes of earlier builds send from a DEALER and listen on a ROUTER: both directions and the
// reply path work with them.
TEST(ZmqTransport, SpeaksWithZeroMqDealerAndRouterSockets) {
  ZmqTransport node("127.0.0.1", 0);
  zmq::context_t context(1);
  zmq::socket_t dealer(context, zmq::socket_type::dealer);
  dealer.set(zmq::sockopt::linger, 0);
  dealer.connect("tcp://" + loopback(node));
  ASSERT_TRUE(dealer.send(zmq::str_buffer("from a dealer"), zmq::send_flags::none));
  const auto question = receive_from_within(node, 5s);
  ASSERT_TRUE(question.has_value());
  EXPECT_EQ(text_of(question->bytes), "from a dealer");
  ASSERT_TRUE(node.reply(question->reply_to, bytes_of("answer")));
  dealer.set(zmq::sockopt::rcvtimeo, 5000);
  zmq::message_t answer;
  ASSERT_TRUE(dealer.recv(answer));
  EXPECT_EQ(answer.to_string(), "answer");

  zmq::socket_t router(context, zmq::socket_type::router);
  router.set(zmq::sockopt::linger, 0);
  router.set(zmq::sockopt::rcvtimeo, 5000);
  router.bind("tcp://127.0.0.1:*");
  const std::string router_address = router.get(zmq::sockopt::last_endpoint);
  ASSERT_TRUE(node.send(router_address, bytes_of("to a router")));
  // The message waits for the router's handshake, which the node reads as it receives.
  router.set(zmq::sockopt::rcvtimeo, 0);
  zmq::message_t id;
  zmq::message_t payload;
  const auto deadline = Clock::now() + 5s;
  while (!router.recv(id) && Clock::now() < deadline) node.receive(10ms);
  ASSERT_TRUE(id.more());
  ASSERT_TRUE(router.recv(payload, zmq::recv_flags::none));
  EXPECT_EQ(payload.to_string(), "to a router");
  EXPECT_FALSE(payload.more());
  ASSERT_TRUE(router.send(id, zmq::send_flags::sndmore));
  ASSERT_TRUE(router.send(zmq::str_buffer("router answers"), zmq::send_flags::none));
  const auto back = receive_from_within(node, 5s);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(text_of(back->bytes), "router answers");
  EXPECT_TRUE(back->reply_to.empty());  // it came on our own connection
}

// A plain TCP client speaking ZMTP by hand, as a hostile peer would.
class RawZmtpClient {
 public:
  // Takes over a connected socket (one accepted from the node).
  explicit RawZmtpClient(int connected_fd) : fd_(connected_fd) { set_send_timeout(); }
  explicit RawZmtpClient(std::uint16_t port) : fd_(testing_support::connect_loopback(port)) {
    set_send_timeout();
  }
  ~RawZmtpClient() { ::close(fd_); }
  RawZmtpClient(const RawZmtpClient&) = delete;
  RawZmtpClient& operator=(const RawZmtpClient&) = delete;

  // Whatever has arrived, without waiting (empty: nothing yet, or the node closed).
  Bytes received_now() {
    Bytes out;
    std::uint8_t chunk[4096];
    while (true) {
      const auto n = ::recv(fd_, chunk, sizeof chunk, MSG_DONTWAIT);
      if (n <= 0) return out;
      out.insert(out.end(), chunk, chunk + n);
    }
  }

  // Sends all of `bytes`; false once the node closed the connection (or stopped reading).
  bool send_all(const Bytes& bytes) {
    std::size_t sent = 0;
    while (sent < bytes.size()) {
      const auto n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return false;
      sent += static_cast<std::size_t>(n);
    }
    return true;
  }

 private:
  void set_send_timeout() {
    const timeval timeout{2, 0};  // a send blocked this long: the node stopped reading
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  }

  int fd_ = -1;
};

bool contains(const Bytes& haystack, const std::string& needle) {
  return std::search(haystack.begin(), haystack.end(), needle.begin(), needle.end()) !=
         haystack.end();
}

// A destination whose peer has not greeted yet holds our messages; making room for another
// destination closes an idle one instead, so those messages reach the peer once it greets.
TEST(ZmqTransport, EvictionSparesADestinationWhoseMessagesWaitForItsGreeting) {
  LoopbackSocket slow(LoopbackSocket::Mode::listening);  // accepts, greets only later
  TransportOptions options;
  options.max_destinations = 2;
  ZmqTransport sender("127.0.0.1", 0, options);
  ZmqTransport first("127.0.0.1", 0);
  ZmqTransport second("127.0.0.1", 0);
  ASSERT_TRUE(sender.send("127.0.0.1:" + std::to_string(slow.port()), bytes_of("for slow")));
  ASSERT_TRUE(sender.send(loopback(first), bytes_of("a")));
  ASSERT_TRUE(receive_within(first, 5s, &sender).has_value());
  // Two destinations open, the slow one the least recent: a third makes one go.
  ASSERT_TRUE(sender.send(loopback(second), bytes_of("b")));
  ASSERT_TRUE(receive_within(second, 5s, &sender).has_value());
  const int accepted = ::accept(slow.fd(), nullptr, nullptr);
  ASSERT_GE(accepted, 0);
  RawZmtpClient peer(accepted);
  ASSERT_TRUE(peer.send_all(zmtp_handshake("ROUTER")));
  Bytes got;
  const auto deadline = Clock::now() + 5s;
  while (!contains(got, "for slow") && Clock::now() < deadline) {
    sender.receive(10ms);  // reads the greeting, then sends what waited
    const Bytes more = peer.received_now();
    got.insert(got.end(), more.begin(), more.end());
  }
  EXPECT_TRUE(contains(got, "for slow")) << got.size() << " bytes arrived, not the message";
}

// A peer that did not listen when we first sent to it gets what waits for it as soon as
// redial() says it listens (a node calls it when a message from that peer arrives), not at
// ZeroMQ's next retry: here a minute later, so only the redialled peer gets its message.
TEST(ZmqTransport, RedialSendsWhatWaitsToAPeerThatStartedAfterTheFirstTry) {
  TransportOptions options;
  options.reconnect_initial = 60s;
  options.reconnect_max = 60s;
  ZmqTransport sender("127.0.0.1", 0, options);
  const std::uint16_t redialled_port = testing_support::free_loopback_port();
  const std::uint16_t other_port = testing_support::free_loopback_port();
  ASSERT_NE(redialled_port, other_port);
  const std::string redialled = "127.0.0.1:" + std::to_string(redialled_port);
  const std::string other = "127.0.0.1:" + std::to_string(other_port);
  ASSERT_TRUE(sender.send(redialled, bytes_of("for the redialled")));
  ASSERT_TRUE(sender.send(other, bytes_of("for the other")));
  // ZeroMQ's first attempts find nothing listening (refused at once on loopback).
  sender.receive(200ms);
  ZmqTransport late("127.0.0.1", redialled_port);
  ZmqTransport other_late("127.0.0.1", other_port);
  // redial() leaves an attempt younger than the connect timeout (1 s) alone; the loop below
  // tells it again each turn, as a peer that keeps talking would.
  std::optional<Bytes> got;
  const auto deadline = Clock::now() + 10s;
  while (!got && Clock::now() < deadline) {
    sender.receive(10ms);
    sender.redial(redialled);
    got = late.receive(10ms);
  }
  ASSERT_TRUE(got.has_value()) << "the redialled peer got nothing within 10 s";
  EXPECT_EQ(text_of(*got), "for the redialled");
  EXPECT_FALSE(receive_within(other_late, 1s, &sender).has_value())
      << "the other peer got its message before ZeroMQ's retry: the test shows nothing";
}

// The counters an agent logs (Runtime): connections opened, evicted, and what an eviction
// that could not spare a waiting destination dropped.
TEST(ZmqTransport, CountersSayWhatConnectionsCostAndWhatWasDropped) {
  LoopbackSocket slow(LoopbackSocket::Mode::listening);  // accepts, never greets
  TransportOptions options;
  options.max_destinations = 1;
  ZmqTransport sender("127.0.0.1", 0, options);
  ZmqTransport first("127.0.0.1", 0);
  const std::string slow_address = "127.0.0.1:" + std::to_string(slow.port());
  ASSERT_TRUE(sender.send(slow_address, bytes_of("one")));
  ASSERT_TRUE(sender.send(slow_address, bytes_of("two")));
  // The only destination has messages waiting: a second one evicts it anyway.
  ASSERT_TRUE(sender.send(loopback(first), bytes_of("a")));
  ASSERT_TRUE(receive_within(first, 5s, &sender).has_value());
  EXPECT_FALSE(sender.send("not an address", bytes_of("x")));

  const TransportCounters& sent = sender.counters();
  EXPECT_EQ(sent.destinations_opened, 2u);
  EXPECT_EQ(sent.destinations_evicted, 1u);
  EXPECT_EQ(sent.evicted_waiting, 1u);
  EXPECT_EQ(sent.messages_lost_on_eviction, 2u);
  EXPECT_EQ(sent.sends_dropped, 1u);
  EXPECT_EQ(first.counters().inbound_accepted, 1u);
  EXPECT_EQ(first.counters().inbound_closed_for_room, 0u);
}

std::size_t resident_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoul(line.substr(6));
  }
  return 0;
}

// 1 MiB frames, each header marked "more": a multipart message that never ends. ZeroMQ's own
// sockets would hold all of it; the node drops the connection at the first frame's header.
// Another peer is still served.
TEST(ZmqTransport, EndlessMultipartMessageIsCutOffAndOthersStillGetThrough) {
  ZmqTransport node("127.0.0.1", 0);
  std::atomic<bool> stop{false};
  std::atomic<int> received{0};
  std::thread loop([&] {
    while (!stop) {
      if (auto message = node.receive(10ms)) ++received;
    }
  });
  const std::size_t rss_before = resident_kib();
  constexpr std::size_t kFrameBytes = 1 << 20;
  constexpr int kMaxFrames = 512;  // 512 MiB if nothing stopped it
  Bytes frame(9 + kFrameBytes, 'x');
  frame[0] = 0x03;  // long frame, more
  for (int i = 1; i < 9; ++i)
    frame[i] = static_cast<std::uint8_t>((kFrameBytes >> (8 * (8 - i))) & 0xff);
  int frames_sent = 0;
  {
    RawZmtpClient hostile(node.bound_port());
    ASSERT_TRUE(hostile.send_all(zmtp_handshake("DEALER")));
    while (frames_sent < kMaxFrames && hostile.send_all(frame)) ++frames_sent;
  }
  const std::size_t grown_kib = resident_kib() - std::min(resident_kib(), rss_before);
  // What TCP buffers took before the close was noticed, not hundreds of MiB.
  EXPECT_LT(frames_sent, 64) << "the connection was never closed";
  EXPECT_LT(grown_kib, 64u * 1024) << "KiB of resident memory grown";

  ZmqTransport other("127.0.0.1", 0);
  ASSERT_TRUE(other.send(loopback(node), bytes_of("still served")));
  const auto deadline = Clock::now() + 5s;
  while (received == 0 && Clock::now() < deadline) other.flush(10ms);
  stop = true;
  loop.join();
  EXPECT_EQ(received, 1);
}

// The same from a peer the node dialled (one that advertised itself): its answers on the
// node's own connection are parsed as strictly.
TEST(ZmqTransport, EndlessMultipartAnswerOnAnOutgoingConnectionIsCutOff) {
  LoopbackSocket listener(LoopbackSocket::Mode::listening);
  ZmqTransport node("127.0.0.1", 0);
  ASSERT_TRUE(node.send("127.0.0.1:" + std::to_string(listener.port()), bytes_of("hello?")));
  const int accepted = ::accept(listener.fd(), nullptr, nullptr);
  ASSERT_GE(accepted, 0);
  RawZmtpClient hostile(accepted);
  const std::size_t rss_before = resident_kib();
  ASSERT_TRUE(hostile.send_all(zmtp_handshake("ROUTER")));
  Bytes frame(9 + (1 << 20), 'x');
  frame[0] = 0x03;  // long frame, more
  frame[6] = 0x10;  // 1 MiB
  int frames_sent = 0;
  const auto deadline = Clock::now() + 20s;
  while (frames_sent < 512 && Clock::now() < deadline) {
    node.receive(1ms);  // the node's loop reads what arrives
    if (!hostile.send_all(frame)) break;
    ++frames_sent;
  }
  const std::size_t grown_kib = resident_kib() - std::min(resident_kib(), rss_before);
  EXPECT_LT(frames_sent, 64) << "the connection was never closed";
  EXPECT_LT(grown_kib, 64u * 1024) << "KiB of resident memory grown";
}

// A frame declaring more than max_message_bytes ends the connection before its bytes are held.
TEST(ZmqTransport, OversizedFrameEndsTheConnection) {
  TransportOptions options;
  options.max_message_bytes = 1000;
  ZmqTransport node("127.0.0.1", 0, options);
  RawZmtpClient hostile(node.bound_port());
  ASSERT_TRUE(hostile.send_all(zmtp_handshake("DEALER")));
  Bytes header{0x02, 0, 0, 0, 0, 0, 0, 0x10, 0};  // one final frame of 4096 bytes
  ASSERT_TRUE(hostile.send_all(header));
  bool closed = false;
  const auto deadline = Clock::now() + 10s;
  while (!closed && Clock::now() < deadline) {
    node.receive(10ms);
    closed = !hostile.send_all(Bytes(64 * 1024, 'y'));
  }
  EXPECT_TRUE(closed);
  EXPECT_FALSE(node.receive(50ms).has_value());
}

TEST(Zmtp, FramesSplitAnywhereAreReassembled) {
  Bytes stream = zmtp_handshake("ROUTER");
  for (const std::string& text : std::vector<std::string>{"a", std::string(300, 'b'), ""}) {
    const Bytes frame = zmtp_frame(reinterpret_cast<const std::uint8_t*>(text.data()), text.size());
    stream.insert(stream.end(), frame.begin(), frame.end());
  }
  for (std::size_t cut = 0; cut <= stream.size(); ++cut) {
    ZmtpReader reader(1000);
    std::vector<Bytes> messages;
    ASSERT_FALSE(reader.feed(stream.data(), cut, messages).has_value()) << cut;
    ASSERT_FALSE(reader.feed(stream.data() + cut, stream.size() - cut, messages).has_value());
    ASSERT_EQ(messages.size(), 3u) << cut;
    EXPECT_EQ(messages[1].size(), 300u);
    EXPECT_TRUE(messages[2].empty());
    EXPECT_EQ(reader.buffered(), 0u);
  }
}

// A node holds a reader per connection: between messages a reader holds no memory, however
// large the last chunk or message was.
TEST(Zmtp, AReaderHoldsMemoryOnlyWhileAMessageIsUnfinished) {
  ZmtpReader reader(1 << 20);
  std::vector<Bytes> messages;
  Bytes stream = zmtp_handshake("ROUTER");
  const Bytes small = zmtp_frame(Bytes(100, 'a'));
  stream.insert(stream.end(), small.begin(), small.end());
  ASSERT_FALSE(reader.feed(stream.data(), stream.size(), messages).has_value());
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_EQ(reader.capacity(), 0u);

  const Bytes large = zmtp_frame(Bytes(20000, 'b'));  // more than one 8 KiB chunk
  for (std::size_t at = 0; at < large.size(); at += 8192) {
    const std::size_t n = std::min<std::size_t>(8192, large.size() - at);
    ASSERT_FALSE(reader.feed(large.data() + at, n, messages).has_value());
    if (at + n < large.size()) {
      EXPECT_EQ(reader.buffered(), at + n);
    }
  }
  ASSERT_EQ(messages.size(), 2u);
  EXPECT_EQ(messages[1], Bytes(20000, 'b'));
  EXPECT_EQ(reader.buffered(), 0u);
  EXPECT_EQ(reader.capacity(), 0u);

  // A chunk that ends inside the next frame keeps only that frame's first bytes.
  Bytes two = small;
  two.insert(two.end(), large.begin(), large.begin() + 50);
  ASSERT_FALSE(reader.feed(two.data(), two.size(), messages).has_value());
  ASSERT_EQ(messages.size(), 3u);
  EXPECT_EQ(reader.buffered(), 50u);
}

TEST(Zmtp, BrokenPeersAreNamed) {
  const auto refusal = [](Bytes stream) {
    ZmtpReader reader(1000);
    std::vector<Bytes> messages;
    return reader.feed(stream.data(), stream.size(), messages).value_or("accepted");
  };
  EXPECT_NE(refusal(bytes_of("GET / HTTP/1.1\r\n")).find("not a ZeroMQ peer"), std::string::npos);
  Bytes plain = zmtp_handshake("DEALER");
  std::copy_n("PLAIN", 5, plain.begin() + 12);
  EXPECT_NE(refusal(plain).find("NULL"), std::string::npos);
  Bytes more = zmtp_handshake("DEALER");
  more.insert(more.end(), {0x01, 0x01, 'x'});
  EXPECT_NE(refusal(more).find("multipart"), std::string::npos);
  Bytes big = zmtp_handshake("DEALER");
  big.insert(big.end(), {0x02, 0, 0, 0, 0, 0, 0, 0x10, 0});
  EXPECT_NE(refusal(big).find("limit is 1000"), std::string::npos);
  const Bytes handshake = zmtp_handshake("DEALER");
  Bytes no_ready(handshake.begin(), handshake.begin() + 64);
  no_ready.insert(no_ready.end(), {0x00, 0x01, 'x'});
  EXPECT_NE(refusal(no_ready).find("before the READY"), std::string::npos);
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
  const auto message = receive_within(*receiver, 5s, &sender);
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
