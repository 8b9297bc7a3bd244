// ZeroMQ transport: a ROUTER inbox bound on the listen address and one DEALER per
// destination, created on first use. Knows nothing of the protocol: it moves byte strings.
// A message can also be answered over the connection it arrived on (reply()): that works
// when the sender's own listen address does not (loopback advertised, inbound firewall), and
// the answer comes out of receive() on the sender's side like any other message.
// Delivery is best effort (a full queue drops the message): the protocol tolerates loss.
//
// Thread use: one thread sends and receives; any thread may call wake().
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <list>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <zmq.hpp>

namespace gossip_rdzv::transport {

using Bytes = std::vector<std::uint8_t>;

/// A received message and, when it came into the inbox, how to answer over its connection.
struct Received {
  Bytes bytes;
  /// The inbox connection it came on (ZeroMQ routing id), for reply(); empty when it is an
  /// answer that came back on one of our own outgoing connections.
  std::string reply_to;
};

struct TransportOptions {
  /// How long a closing socket keeps trying to deliver queued messages, so the last pushes
  /// before exit (commit notices) get out; also bounds how long close() can take.
  std::chrono::milliseconds linger{500};
  /// Messages queued per destination before sends are dropped.
  int send_high_water_mark = 1000;
  /// Larger incoming messages are refused by ZeroMQ before we ever see them.
  std::int64_t max_message_bytes = 16 * 1024 * 1024;
  /// Destinations kept connected; the least recently used is closed beyond this, so a node
  /// of a large cluster does not hold a socket (and file descriptors) per member forever.
  std::size_t max_destinations = 256;
  std::chrono::milliseconds reconnect_initial{100};
  std::chrono::milliseconds reconnect_max{5000};
};

class ZmqTransport {
 public:
  /// Binds the inbox on tcp://listen_host:listen_port (port 0: the OS picks one).
  /// Throws Error(listen_failed) naming the cause and the fix: port in use (and by which
  /// process, when visible), address not of this machine, or another bind failure.
  ZmqTransport(const std::string& listen_host, std::uint16_t listen_port,
               TransportOptions options = {});
  ~ZmqTransport();
  ZmqTransport(const ZmqTransport&) = delete;
  ZmqTransport& operator=(const ZmqTransport&) = delete;

  /// The port actually bound (the OS's choice when 0 was asked for).
  std::uint16_t bound_port() const { return bound_port_; }

  /// Queues `bytes` for `endpoint` ("host:port", "[v6]:port", or a full "tcp://..."
  /// address). Returns false when the message was dropped (queue full, bad address).
  bool send(const std::string& endpoint, const Bytes& bytes);

  /// The next message, waiting at most `timeout`; nullopt on timeout or after wake().
  std::optional<Bytes> receive(std::chrono::milliseconds timeout);
  /// As receive(), with the connection to reply() on. Also returns the answers that come
  /// back on the connections send() opened.
  std::optional<Received> receive_from(std::chrono::milliseconds timeout);

  /// Queues `bytes` back over the inbox connection `reply_to` (Received::reply_to). Returns
  /// false when the message was dropped (connection gone, queue full, empty id).
  bool reply(const std::string& reply_to, const Bytes& bytes);

  /// Makes a blocked (or the next) receive() return at once. Safe from any thread.
  void wake();

 private:
  struct Destination {
    zmq::socket_t socket;
    std::list<std::string>::iterator recency;
  };

  void bind(const std::string& listen_host, std::uint16_t listen_port);
  std::optional<Received> try_receive();
  /// Moves what waits on the destinations marked readable in `items` into answers_.
  void collect_answers(const std::vector<zmq_pollitem_t>& items,
                       const std::vector<zmq::socket_t*>& dealers);
  Destination* destination(const std::string& address);
  void evict_least_recent();
  void drain_wake();

  TransportOptions options_;
  zmq::context_t context_;
  zmq::socket_t inbox_;
  int wake_fd_ = -1;
  std::uint16_t bound_port_ = 0;
  std::unordered_map<std::string, Destination> destinations_;
  std::list<std::string> recency_;  ///< front: most recently used destination address
  std::deque<Bytes> answers_;       ///< received on destinations, not yet returned
};

/// "tcp://host:port" for "host:port" / "[v6]:port"; a "tcp://" address is returned as is.
std::string zmq_tcp_address(const std::string& endpoint);

}  // namespace gossip_rdzv::transport
