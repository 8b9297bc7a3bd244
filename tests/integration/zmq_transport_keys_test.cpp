// ZmqTransport with job keys on real loopback sockets: sealed traffic between holders of a
// key, refusals on both sides for a missing or wrong key, rotation, and the cap on inbound
// connections that a flood of connections meets.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>

#include "support/loopback_socket.hpp"
#include "transport/zmq_transport.hpp"

namespace gossip_rdzv::transport {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

Bytes bytes_of(const std::string& text) {
  return Bytes(text.begin(), text.end());
}

std::shared_ptr<const Keyring> new_ring() {
  return Keyring::parse(Keyring::generate_key_line(), "test");
}

TransportOptions keyed(std::shared_ptr<const Keyring> ring) {
  TransportOptions options;
  options.keyring = std::move(ring);
  return options;
}

std::string loopback(const ZmqTransport& transport) {
  return "127.0.0.1:" + std::to_string(transport.bound_port());
}

// The next message or refusal on `transport`, while `others` read theirs (the handshakes), as
// their event loops would; nullopt after 5 s. What `others` receive meanwhile is kept in
// `others_got`.
std::optional<Received> next(ZmqTransport& transport, std::vector<ZmqTransport*> others = {},
                             std::vector<Received>* others_got = nullptr) {
  const auto deadline = Clock::now() + 5s;
  while (Clock::now() < deadline) {
    for (ZmqTransport* other : others) {
      while (auto got = other->receive_from(0ms)) {
        if (others_got != nullptr) others_got->push_back(std::move(*got));
      }
    }
    if (auto message = transport.receive_from(5ms)) return message;
  }
  return std::nullopt;
}

TEST(ZmqTransportKeys, HoldersOfTheKeyExchangeSealedMessagesAndReplies) {
  const std::string key = Keyring::generate_key_line();
  ZmqTransport alice("127.0.0.1", 0, keyed(Keyring::parse(key, "a")));
  ZmqTransport bob("127.0.0.1", 0, keyed(Keyring::parse(key, "b")));
  ASSERT_TRUE(alice.send(loopback(bob), bytes_of("hello bob")));
  auto got = next(bob, {&alice});
  ASSERT_TRUE(got.has_value());
  ASSERT_FALSE(got->refusal.has_value());
  EXPECT_EQ(got->bytes, bytes_of("hello bob"));
  ASSERT_TRUE(bob.reply(got->reply_to, bytes_of("hello alice")));
  auto answer = next(alice, {&bob});
  ASSERT_TRUE(answer.has_value());
  ASSERT_FALSE(answer->refusal.has_value());
  EXPECT_EQ(answer->bytes, bytes_of("hello alice"));
}

TEST(ZmqTransportKeys, AMessageWithoutTheKeyIsRefusedOnBothSides) {
  const auto ring = new_ring();
  ZmqTransport keyless("127.0.0.1", 0);
  ZmqTransport node("127.0.0.1", 0, keyed(ring));
  ASSERT_TRUE(keyless.send(loopback(node), bytes_of("GRDV join")));

  auto dropped = next(node, {&keyless});
  ASSERT_TRUE(dropped.has_value());
  ASSERT_TRUE(dropped->refusal.has_value()) << "an unsealed message must not get through";
  EXPECT_TRUE(dropped->bytes.empty());
  EXPECT_TRUE(dropped->refusal->by_us);
  EXPECT_EQ(dropped->refusal->reason, NoticeReason::key_required);
  EXPECT_EQ(dropped->refusal->peer, "127.0.0.1");  // the connection's address
  EXPECT_EQ(dropped->refusal->unsealed, bytes_of("GRDV join"));

  // The node's challenge and its notice may reach the keyless side in either order; the
  // challenge it refuses itself (no key here: the peer holds one). Then comes the notice.
  std::optional<Received> told;
  for (int event = 0; event < 2 && !told; ++event) {
    auto got = next(keyless, {&node});
    ASSERT_TRUE(got.has_value());
    ASSERT_TRUE(got->refusal.has_value());
    if (got->refusal->by_us) {
      EXPECT_EQ(got->refusal->reason, NoticeReason::no_key_here);
      continue;
    }
    told = std::move(got);
  }
  ASSERT_TRUE(told.has_value()) << "the node's notice never came";
  EXPECT_EQ(told->refusal->reason, NoticeReason::key_required);
  EXPECT_EQ(told->refusal->peer, loopback(node));
  EXPECT_EQ(told->refusal->key_id, ring->primary_id());
}

TEST(ZmqTransportKeys, AMessageSealedWithAnotherKeyIsRefusedWithItsKeyId) {
  const auto ours = new_ring();
  const auto theirs = new_ring();
  ZmqTransport stranger("127.0.0.1", 0, keyed(theirs));
  ZmqTransport node("127.0.0.1", 0, keyed(ours));
  ASSERT_TRUE(stranger.send(loopback(node), bytes_of("vote")));

  auto dropped = next(node, {&stranger});
  ASSERT_TRUE(dropped.has_value() && dropped->refusal.has_value());
  EXPECT_EQ(dropped->refusal->reason, NoticeReason::unknown_key);
  EXPECT_EQ(dropped->refusal->key_id, theirs->primary_id());
  EXPECT_TRUE(dropped->refusal->unsealed.empty());

  auto told = next(stranger, {&node});
  ASSERT_TRUE(told.has_value() && told->refusal.has_value());
  EXPECT_FALSE(told->refusal->by_us);
  EXPECT_EQ(told->refusal->reason, NoticeReason::unknown_key);
  EXPECT_EQ(told->refusal->key_id, ours->primary_id());
}

TEST(ZmqTransportKeys, ASealedMessageToANodeWithoutAKeyIsRefusedOnBothSides) {
  const auto ring = new_ring();
  ZmqTransport keyed_sender("127.0.0.1", 0, keyed(ring));
  ZmqTransport keyless("127.0.0.1", 0);
  ASSERT_TRUE(keyed_sender.send(loopback(keyless), bytes_of("secret")));

  // The keyed side's challenge, sent first, is what the keyless one refuses: the sealed
  // message itself waits for a challenge that never comes, and is dropped at the notice.
  auto dropped = next(keyless, {&keyed_sender});
  ASSERT_TRUE(dropped.has_value() && dropped->refusal.has_value());
  EXPECT_TRUE(dropped->refusal->by_us);
  EXPECT_EQ(dropped->refusal->reason, NoticeReason::no_key_here);

  auto told = next(keyed_sender, {&keyless});
  ASSERT_TRUE(told.has_value() && told->refusal.has_value());
  EXPECT_FALSE(told->refusal->by_us);
  EXPECT_EQ(told->refusal->reason, NoticeReason::no_key_here);
  EXPECT_FALSE(told->refusal->key_id.has_value());
}

TEST(ZmqTransportKeys, ReceiveSkipsRefusals) {
  ZmqTransport keyless("127.0.0.1", 0);
  ZmqTransport node("127.0.0.1", 0, keyed(new_ring()));
  ASSERT_TRUE(keyless.send(loopback(node), bytes_of("plain")));
  // The refusal is made (the keyless side hears of it) but receive() returns no message.
  std::optional<Received> told;
  const auto deadline = Clock::now() + 5s;
  while (!told && Clock::now() < deadline) {
    EXPECT_FALSE(node.receive(1ms).has_value());
    // (It also refuses the node's challenge itself: skip that one.)
    while ((told = keyless.receive_from(1ms)) && (!told->refusal || told->refusal->by_us)) {
    }
  }
  ASSERT_TRUE(told.has_value() && told->refusal.has_value());
  EXPECT_EQ(told->refusal->reason, NoticeReason::key_required);
}

// Keys given to running transports that had none (Store::set_key_file does this): their old
// connections, without challenges, are closed and new ones carry sealed messages.
TEST(ZmqTransportKeys, KeysGivenToRunningTransportsTakeEffect) {
  ZmqTransport alice("127.0.0.1", 0);
  ZmqTransport bob("127.0.0.1", 0);
  ASSERT_TRUE(alice.send(loopback(bob), bytes_of("in clear")));
  auto got = next(bob, {&alice});
  ASSERT_TRUE(got.has_value() && !got->refusal);
  const std::string key = Keyring::generate_key_line();
  alice.set_keyring(Keyring::parse(key, "a"));
  bob.set_keyring(Keyring::parse(key, "b"));
  ASSERT_TRUE(alice.send(loopback(bob), bytes_of("sealed now")));
  std::vector<Received> alice_got;
  got = next(bob, {&alice}, &alice_got);
  ASSERT_TRUE(got.has_value());
  ASSERT_FALSE(got->refusal.has_value());
  EXPECT_EQ(got->bytes, bytes_of("sealed now"));
  for (const auto& r : alice_got) EXPECT_FALSE(r.refusal.has_value());
}

// A hand-made connection to a node: ZMTP handshake and our challenge out, the node's
// handshake and challenge in; then raw frames.
class RawConnection {
 public:
  explicit RawConnection(std::uint16_t port)
      : fd_(testing_support::connect_loopback(port)), reader_(1 << 20) {
    timeval timeout{0, 50 * 1000};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    send(zmtp_handshake("DEALER"));
    send(zmtp_frame(encode_challenge(new_challenge())));
  }
  ~RawConnection() { ::close(fd_); }

  void send(const Bytes& bytes) {
    ASSERT_EQ(::send(fd_, bytes.data(), bytes.size(), 0), static_cast<ssize_t>(bytes.size()));
  }

  /// The next message the node sends here, while `node` runs its loop; nullopt after 5 s.
  std::optional<Bytes> next(ZmqTransport& node, std::vector<Received>* node_got) {
    const auto deadline = Clock::now() + 5s;
    while (Clock::now() < deadline) {
      if (!pending_.empty()) {
        Bytes message = std::move(pending_.front());
        pending_.erase(pending_.begin());
        return message;
      }
      while (auto got = node.receive_from(1ms)) node_got->push_back(std::move(*got));
      std::uint8_t buffer[4096];
      const auto n = ::recv(fd_, buffer, sizeof buffer, 0);
      if (n > 0) reader_.feed(buffer, static_cast<std::size_t>(n), pending_);
    }
    return std::nullopt;
  }

 private:
  int fd_ = -1;
  ZmtpReader reader_;
  std::vector<Bytes> pending_;
};

// A sealed message sent again, on its own connection or on another, is refused
// (docs/protocol.md, "Keys"); the original was accepted once.
TEST(ZmqTransportKeys, AReplayedMessageIsRefused) {
  const auto ring = new_ring();
  ZmqTransport node("127.0.0.1", 0, keyed(ring));
  std::vector<Received> node_got;
  RawConnection first(node.bound_port());
  const auto challenge = first.next(node, &node_got);
  ASSERT_TRUE(challenge.has_value());
  const auto node_challenge = decode_challenge(*challenge);
  ASSERT_TRUE(node_challenge.has_value()) << "the node's first message is its challenge";

  const Bytes sealed = ring->seal(bytes_of("add 1"), *node_challenge, 1, Side::dialler);
  first.send(zmtp_frame(sealed));
  const auto count_messages = [&] {
    return std::count_if(node_got.begin(), node_got.end(),
                         [](const Received& r) { return !r.refusal; });
  };
  const auto deadline = Clock::now() + 5s;
  while (count_messages() == 0 && Clock::now() < deadline) {
    while (auto got = node.receive_from(1ms)) node_got.push_back(std::move(*got));
  }
  ASSERT_EQ(count_messages(), 1);
  EXPECT_EQ(node_got.back().bytes, bytes_of("add 1"));

  // Again on the same connection: refused, with a notice back.
  first.send(zmtp_frame(sealed));
  const auto notice = first.next(node, &node_got);
  ASSERT_TRUE(notice.has_value());
  ASSERT_TRUE(decode_notice(*notice).has_value());
  EXPECT_EQ(decode_notice(*notice)->reason, NoticeReason::forged);

  // On a new connection (the node's challenge there is another): refused too.
  RawConnection second(node.bound_port());
  ASSERT_TRUE(second.next(node, &node_got).has_value());  // its challenge
  second.send(zmtp_frame(sealed));
  const auto second_notice = second.next(node, &node_got);
  ASSERT_TRUE(second_notice.has_value());
  ASSERT_TRUE(decode_notice(*second_notice).has_value());
  EXPECT_EQ(decode_notice(*second_notice)->reason, NoticeReason::forged);

  EXPECT_EQ(count_messages(), 1) << "a replay got through";
  const auto refusals = std::count_if(node_got.begin(), node_got.end(), [](const Received& r) {
    return r.refusal && r.refusal->by_us && r.refusal->reason == NoticeReason::forged;
  });
  EXPECT_EQ(refusals, 2);
}

TEST(ZmqTransportKeys, RotationInstallUseRemoveLosesNoMessage) {
  const std::string old_key = Keyring::generate_key_line();
  const std::string new_key = Keyring::generate_key_line();
  ZmqTransport alice("127.0.0.1", 0, keyed(Keyring::parse(old_key, "a")));
  ZmqTransport bob("127.0.0.1", 0, keyed(Keyring::parse(old_key, "b")));
  const auto exchange = [&](const std::string& text) {
    ASSERT_TRUE(alice.send(loopback(bob), bytes_of(text)));
    auto got = next(bob, {&alice});
    ASSERT_TRUE(got.has_value());
    ASSERT_FALSE(got->refusal.has_value()) << text;
    EXPECT_EQ(got->bytes, bytes_of(text));
    ASSERT_TRUE(bob.reply(got->reply_to, bytes_of("re: " + text)));
    auto answer = next(alice, {&bob});
    ASSERT_TRUE(answer.has_value());
    ASSERT_FALSE(answer->refusal.has_value()) << text;
    EXPECT_EQ(answer->bytes, bytes_of("re: " + text));
  };
  exchange("before");
  // Install on bob only, then on both; use on alice first; remove on bob first.
  bob.set_keyring(Keyring::parse(old_key + "\n" + new_key, "b"));
  exchange("bob installed");
  alice.set_keyring(Keyring::parse(old_key + "\n" + new_key, "a"));
  exchange("both installed");
  alice.set_keyring(Keyring::parse(new_key + "\n" + old_key, "a"));
  exchange("alice uses the new key");
  bob.set_keyring(Keyring::parse(new_key + "\n" + old_key, "b"));
  exchange("both use the new key");
  bob.set_keyring(Keyring::parse(new_key, "b"));
  exchange("bob removed the old key");
  alice.set_keyring(Keyring::parse(new_key, "a"));
  exchange("both removed the old key");
}

// `count` raw TCP connections to `node`, each sending `first_bytes`, while the node's loop
// accepts (and evicts) them as they come.
std::vector<int> open_raw_connections(ZmqTransport& node, int count, const Bytes& first_bytes) {
  std::vector<int> fds;
  for (int i = 0; i < count; ++i) {
    fds.push_back(testing_support::connect_loopback(node.bound_port(), SOCK_NONBLOCK));
    node.receive_from(1ms);
    if (!first_bytes.empty()) {
      ::send(fds.back(), first_bytes.data(), first_bytes.size(), MSG_NOSIGNAL);
    }
  }
  return fds;
}

// How many of `fds` the node closed (end of stream read), reading what it sent first.
std::size_t closed_by_node(const std::vector<int>& fds) {
  std::size_t closed = 0;
  for (const int fd : fds) {
    std::uint8_t buffer[512];
    ssize_t n = 0;
    while ((n = ::recv(fd, buffer, sizeof buffer, 0)) > 0) {
    }
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) ++closed;
  }
  return closed;
}

// Runs `node`'s loop until `satisfied` or 10 s.
void run_until(ZmqTransport& node, const std::function<bool()>& satisfied) {
  const auto deadline = Clock::now() + 10s;
  while (!satisfied() && Clock::now() < deadline) node.receive_from(5ms);
}

// A flood of connections fills the inbound cap; the idlest connections go, so the
// connections stay bounded and a peer that talks is still heard.
TEST(ZmqTransportKeys, AFloodOfConnectionsStaysUnderTheCapAndALegitimatePeerGetsThrough) {
  TransportOptions options = keyed(new_ring());
  options.max_inbound_connections = 16;
  const auto ring = options.keyring;
  ZmqTransport node("127.0.0.1", 0, options);
  const std::vector<int> flood = open_raw_connections(node, 200, {});
  run_until(node, [&] { return closed_by_node(flood) >= 200 - 16; });
  EXPECT_EQ(closed_by_node(flood), 200u - 16u);
  EXPECT_LE(node.inbound_connections(), 16u);

  ZmqTransport peer("127.0.0.1", 0, keyed(ring));
  ASSERT_TRUE(peer.send(loopback(node), bytes_of("let me in")));
  auto got = next(node, {&peer});
  ASSERT_TRUE(got.has_value());
  ASSERT_FALSE(got->refusal.has_value());
  EXPECT_EQ(got->bytes, bytes_of("let me in"));
  EXPECT_LE(node.inbound_connections(), 16u);
  for (const int fd : flood) ::close(fd);
}

// One address holds at most max_inbound_per_address connections: its idlest go first, and
// a peer from that address that talks is still heard.
TEST(ZmqTransportKeys, OneAddressHoldsAtMostItsShareOfConnections) {
  TransportOptions options = keyed(new_ring());
  options.max_inbound_connections = 100;
  options.max_inbound_per_address = 8;
  const auto ring = options.keyring;
  ZmqTransport node("127.0.0.1", 0, options);
  // Each sends its handshake: the node learns its address from its first bytes.
  const std::vector<int> flood = open_raw_connections(node, 40, zmtp_handshake("DEALER"));
  run_until(node, [&] { return closed_by_node(flood) >= 40 - 8; });
  EXPECT_EQ(closed_by_node(flood), 40u - 8u);
  EXPECT_LE(node.inbound_connections(), 8u);

  ZmqTransport peer("127.0.0.1", 0, keyed(ring));
  ASSERT_TRUE(peer.send(loopback(node), bytes_of("from the same address")));
  auto got = next(node, {&peer});
  ASSERT_TRUE(got.has_value());
  ASSERT_FALSE(got->refusal.has_value());
  EXPECT_EQ(got->bytes, bytes_of("from the same address"));
  EXPECT_LE(node.inbound_connections(), 8u);
  for (const int fd : flood) ::close(fd);
}

// Connections that never deliver a message hold at most max_undelivered_bytes together: each
// of these sends half of a 1 MiB frame and stops, and the largest holders are closed.
TEST(ZmqTransportKeys, UnfinishedFramesOfStrangersStayWithinTheBudget) {
  TransportOptions options = keyed(new_ring());
  options.max_undelivered_bytes = std::size_t{1} << 20;  // room for two of them
  const auto ring = options.keyring;
  ZmqTransport node("127.0.0.1", 0, options);
  Bytes first = zmtp_handshake("DEALER");
  const std::size_t frame = std::size_t{1} << 20;
  first.push_back(0x02);  // a long frame, not "more"
  for (int i = 7; i >= 0; --i) first.push_back(static_cast<std::uint8_t>(frame >> (8 * i)));
  first.resize(first.size() + frame / 2, 0x5a);
  const std::vector<int> flood = open_raw_connections(node, 8, first);
  run_until(node, [&] { return closed_by_node(flood) >= 6; });
  EXPECT_GE(closed_by_node(flood), 6u);
  EXPECT_LE(node.inbound_connections(), 2u);

  ZmqTransport peer("127.0.0.1", 0, keyed(ring));
  ASSERT_TRUE(peer.send(loopback(node), bytes_of("still heard")));
  auto got = next(node, {&peer});
  ASSERT_TRUE(got.has_value());
  ASSERT_FALSE(got->refusal.has_value());
  EXPECT_EQ(got->bytes, bytes_of("still heard"));
  for (const int fd : flood) ::close(fd);
}

}  // namespace
}  // namespace gossip_rdzv::transport
