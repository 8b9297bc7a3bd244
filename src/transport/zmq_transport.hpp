// ZeroMQ transport: an inbox bound on the listen address and one outbox that connects to each
// destination on first use, naming that connection itself (ZMQ_CONNECT_ROUTING_ID) so a send
// picks it by name. Both are raw ZMQ_STREAM sockets on which the transport speaks ZMTP itself
// (zmtp.hpp): the inbox as a ROUTER, the outbox as a DEALER, so that a message is one frame
// and a peer sending multipart messages, or frames over max_message_bytes, is disconnected
// before its bytes pile up. Knows nothing of the protocol: it moves byte strings. A message can
// also be answered over the connection it arrived on (reply()): that works when the sender's own
// listen address does not (loopback advertised, inbound firewall), and the answer comes out of
// receive() on the sender's side like any other message. Delivery is best effort (a full queue
// drops the message): the protocol tolerates loss.
//
// Cost per peer (docs/wire-format.md, "Transport"): a wake-up polls two sockets and an
// eventfd whatever the number of peers; at most max_destinations outgoing connections are
// open, the least recently used one with nothing waiting for its peer's handshake is closed
// beyond that. Memory per connection is bounded:
// receive_high_water_mark chunks of at most 8 KiB queued by ZeroMQ, plus one unfinished
// message of at most max_message_bytes.
//
// Thread use: one thread sends and receives; any thread may call wake().
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <zmq.hpp>

#include "transport/auth_notice.hpp"
#include "transport/keyring.hpp"
#include "transport/zmtp.hpp"

namespace gossip_rdzv::transport {

/// A message dropped for want of the job's key, by us or (its notice came back) by the peer.
struct AuthRefusal {
  bool by_us = true;  ///< we dropped theirs (and answered with a notice), or they dropped ours
  NoticeReason reason = NoticeReason::key_required;
  /// Who: the endpoint we sent to when it came back on our own connection, else the inbound
  /// connection's address ("10.0.0.7": ZeroMQ gives the peer's address, not its port).
  std::string peer;
  /// by_us: the key id the message was sealed with (unknown_key, forged); otherwise the
  /// refuser's primary key id, when it holds keys.
  std::optional<KeyId> key_id;
  /// by_us with key_required: the bytes as they came, so the caller can decode who the
  /// unsealed message claims to come from.
  Bytes unsealed;
};

/// A received message and, when it came into the inbox, how to answer over its connection.
struct Received {
  Bytes bytes;
  /// The inbox connection it came on (ZeroMQ routing id), for reply(); empty when it is an
  /// answer that came back on one of our own outgoing connections.
  std::string reply_to;
  /// Set (and `bytes` empty) when this is no message but a refusal for want of the key.
  std::optional<AuthRefusal> refusal;
};

/// What a transport did with its connections and messages since it was made. An agent logs
/// them when it stops (debug level); docs/performance.md counts connections with them.
struct TransportCounters {
  std::uint64_t destinations_opened = 0;   ///< outgoing connections opened, one per new destination
  std::uint64_t destinations_evicted = 0;  ///< of those, closed to stay within max_destinations
  /// Evicted while messages still waited for the peer's greeting (every destination had
  /// some), and the messages dropped with them.
  std::uint64_t evicted_waiting = 0;
  std::uint64_t messages_lost_on_eviction = 0;
  std::uint64_t inbound_accepted = 0;  ///< inbound connections taken
  /// Inbound connections closed to stay within max_inbound_connections or
  /// max_inbound_per_address.
  std::uint64_t inbound_closed_for_room = 0;
  std::uint64_t sends_dropped = 0;  ///< send() and reply() calls that returned false
};

struct TransportOptions {
  /// How long a closing socket keeps trying to deliver queued messages, so the last pushes
  /// before exit (commit notices) get out; also bounds how long close() can take.
  std::chrono::milliseconds linger{500};
  /// Messages queued per destination before sends are dropped.
  int send_high_water_mark = 1000;
  /// Chunks read from one connection (at most 8 KiB each, ZeroMQ's read size) queued before
  /// ZeroMQ stops reading it and TCP pushes back on the sender. With max_message_bytes, what
  /// one connection can make this node hold.
  int receive_high_water_mark = 64;
  /// A peer that sends a larger message is disconnected when its frame header arrives.
  std::int64_t max_message_bytes = 16 * 1024 * 1024;
  /// Destinations kept connected; beyond this the least recently used one whose peer has
  /// greeted is closed (dropping what ZeroMQ still queued for it), or the least recent of
  /// all when every peer is yet to greet, so a node of a large cluster holds a bounded number
  /// of TCP connections, not one per member.
  std::size_t max_destinations = 64;
  /// Inbound connections held; beyond this the one idle the longest is closed, so a flood of
  /// connections cannot grow memory without bound or keep a legitimate peer out for long.
  /// Lowered to half the process's open-file limit (RLIMIT_NOFILE) when that is smaller.
  std::size_t max_inbound_connections = 1024;
  /// Inbound connections from one address held; beyond this its idlest is closed, so one
  /// host flooding connections takes at most this share of max_inbound_connections.
  std::size_t max_inbound_per_address = 512;
  /// Bytes that inbound connections which have not yet delivered a message (with keys: one
  /// that opened) may hold together; beyond it the largest is closed. Without it 1024
  /// strangers could each hold an unfinished frame of max_message_bytes before any check.
  std::size_t max_undelivered_bytes = std::size_t{64} << 20;
  /// The job's keys: with one, every message is sealed on send and opened on receipt, and
  /// what does not open is dropped and refused (AuthRefusal). Without, messages go in clear
  /// and sealed ones arriving are refused. set_keyring() replaces it (key rotation).
  std::shared_ptr<const Keyring> keyring;
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
  /// Refusals for want of the key are skipped: receive_from() reports them.
  std::optional<Bytes> receive(std::chrono::milliseconds timeout);
  /// As receive(), with the connection to reply() on. Also returns the answers that come
  /// back on the connections send() opened.
  std::optional<Received> receive_from(std::chrono::milliseconds timeout);

  /// Queues `bytes` back over the inbox connection `reply_to` (Received::reply_to). Returns
  /// false when the message was dropped (connection gone, queue full, empty id).
  bool reply(const std::string& reply_to, const Bytes& bytes);

  /// A message to a new destination waits until that peer's handshake arrives (which the
  /// peer sends when its own receive() sees the connection), read by receive() or here. This
  /// waits, at most `timeout`, until no message waits so, for a caller that sends and then
  /// does not receive; what arrives meanwhile stays for receive(). Returns whether none
  /// waits. The destructor does it within options.linger.
  bool flush(std::chrono::milliseconds timeout);

  /// Rotation: the keys to seal with and accept from now on (nullptr: none). Loop thread only.
  /// Going from keys to none or back closes every connection (their challenges were, or
  /// were not, exchanged): the next message opens a new one.
  void set_keyring(std::shared_ptr<const Keyring> keyring);
  const std::shared_ptr<const Keyring>& keyring() const { return options_.keyring; }

  /// Inbound connections held now (at most options.max_inbound_connections).
  std::size_t inbound_connections() const { return inbound_.size(); }
  const TransportCounters& counters() const { return counters_; }
  /// Whether a connection this transport opened to `endpoint` ever got that peer's ZMTP
  /// greeting, i.e. a ZeroMQ peer listened there. Remembered for the first kMaxGreetedKept
  /// endpoints; a report uses it to tell a seed that stopped from one that never ran.
  bool has_greeted(const std::string& endpoint) const;

  /// A message from the process at `endpoint` just arrived, so it listens now. If our
  /// connection to it is not up (ZeroMQ found nothing there and retries only on its reconnect
  /// schedule, up to options.reconnect_max later), it is dialled again at once, and what
  /// waits for it goes on the new connection. Not within the connect timeout (1 s) of the
  /// last attempt, which may still be under way; nothing happens for an endpoint we hold no
  /// connection to.
  void redial(const std::string& endpoint);

  /// Makes a blocked (or the next) receive() return at once. Safe from any thread.
  void wake();

 private:
  /// One connection's sealing state, used when the transport holds keys: our random
  /// challenge, sent first, which the peer seals its messages for; theirs, which we seal for;
  /// each direction's counter (keyring.hpp).
  struct Channel {
    Challenge ours{};  ///< drawn only with keys: a keyless connection never uses it
    std::optional<Challenge> theirs;
    std::uint64_t sent = 0;      ///< the counter of the last message sealed for the peer
    std::uint64_t received = 0;  ///< the counter of the last message opened from the peer
    bool refused = false;        ///< the peer's notice said it drops what we send
    bool we_dialled = false;     ///< a Destination (we seal as Side::dialler), not an Inbound
    int notices_sent = 0;        ///< refusal notices sent on it (kMaxNoticesPerConnection)
  };
  struct Destination {
    std::string routing_id;  ///< the outbox connection's name, unique for the socket's life
    std::list<std::string>::iterator recency;
    ZmtpReader reader;       ///< what the destination answers on this connection
    bool connected = false;  ///< ZeroMQ reported the TCP connection up
    /// Messages waiting for the peer's handshake (and, with keys, its challenge), at most
    /// send_high_water_mark of them; see can_send().
    std::deque<Bytes> waiting;
    Channel channel;
    bool greeted = false;  ///< its address is in greeted_ (or greeted_ was full)
    std::chrono::steady_clock::time_point dialled_at{};  ///< when connect() was called
  };

  struct Inbound {
    ZmtpReader reader;
    std::list<std::string>::iterator recency;
    std::string peer;  ///< the TCP peer's address, once its first bytes came
    Channel channel;
    bool delivered = false;  ///< a message came out of it (with keys: one that opened)
    std::size_t held = 0;    ///< bytes its reader holds, counted while nothing was delivered
  };

  void bind(const std::string& listen_host, std::uint16_t listen_port);
  /// send() without the count: queues `bytes` for `endpoint`, false when dropped.
  bool queue(const std::string& endpoint, const Bytes& bytes);
  void configure_outbox();
  /// Queues `data` on the raw connection `id` of `socket`; false when it was dropped.
  static bool send_raw(zmq::socket_t& socket, const std::string& id, const Bytes& data);
  /// Reads what the sockets hold into ready_, until something is ready or nothing is left.
  void pump();
  /// One chunk (or connection notice) from `socket`; false when none was waiting.
  bool read_chunk(zmq::socket_t& socket, bool inbox);
  void on_inbox_chunk(const std::string& id, const zmq::message_t& data);
  void on_outbox_chunk(const std::string& id, const zmq::message_t& data);
  /// Opens (with a keyring) or checks (without) one message of `peer` and queues it, or the
  /// refusal it earns, for receive(); answers an inbound refused message with a notice.
  /// Returns whether it queued a message (not a refusal or a challenge).
  bool accept(Bytes message, const std::string& reply_to, const std::string& peer,
              Channel& channel);
  /// Closes the inbound connections that have not delivered a message yet, the one holding
  /// the most bytes first, until they hold at most options.max_undelivered_bytes.
  void enforce_undelivered_budget();
  /// Whether a message to `target` can go now: its handshake (and challenge) arrived.
  bool can_send(const Destination& target) const;
  /// `bytes` as the frame to send on `channel`: sealed for it when the transport holds keys.
  Bytes frame_for(Channel& channel, const Bytes& bytes) const;
  void refuse(Channel& channel, const std::string& reply_to, const std::string& peer,
              NoticeReason reason, std::optional<KeyId> key_id, Bytes unsealed);
  /// Closes inbound connection `id` (an empty message tells ZeroMQ to) and forgets it.
  void close_inbound(std::string id);
  /// Forgets inbound connection `id` (closed by the peer, or by close_inbound).
  void forget_inbound(std::string id);
  /// Records that connection `id` comes from `address`, closing that address's idlest
  /// other connections beyond max_inbound_per_address.
  void note_inbound_address(const std::string& id, Inbound& connection, std::string address);
  std::optional<Received> take_ready();
  Destination* destination(const std::string& address);
  /// Closes the connection to `address` and forgets it (its queue is dropped).
  void drop_destination(const std::string& address);
  void evict_least_recent();
  void drain_wake();

  TransportOptions options_;
  zmq::context_t context_;
  zmq::socket_t inbox_;
  zmq::socket_t outbox_;
  int wake_fd_ = -1;
  std::uint16_t bound_port_ = 0;
  std::uint64_t next_routing_id_ = 0;
  bool outbox_first_ = false;  ///< which socket pump() reads first next time
  std::unordered_map<std::string, Destination> destinations_;  ///< by address
  std::unordered_map<std::string, std::string> address_of_;    ///< outbox routing id -> address
  std::list<std::string> recency_;  ///< front: most recently used destination address
  std::unordered_map<std::string, Inbound> inbound_;  ///< inbox connections by routing id
  std::list<std::string> inbound_recency_;  ///< front: the connection heard from most recently
  std::unordered_map<std::string, std::size_t> inbound_per_address_;  ///< by Inbound::peer
  std::size_t undelivered_bytes_ = 0;  ///< Inbound::held over the connections not delivered
  std::deque<Received> ready_;         ///< parsed from the last chunks read, not yet returned
  TransportCounters counters_;
  static constexpr std::size_t kMaxGreetedKept = 4096;
  std::unordered_set<std::string> greeted_;  ///< addresses whose greeting arrived
};

/// "tcp://host:port" for "host:port" / "[v6]:port"; a "tcp://" address is returned as is.
std::string zmq_tcp_address(const std::string& endpoint);

}  // namespace gossip_rdzv::transport
