#include "transport/zmq_transport.hpp"

#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <memory>

#include "gossip_rdzv/error.hpp"
#include "transport/interface.hpp"
#include "transport/port_holder.hpp"

namespace gossip_rdzv::transport {
namespace {

constexpr std::string_view kTcpScheme = "tcp://";
// Below the reconnect interval a dropped SYN would otherwise stall a connection for the
// kernel's ~2 minute SYN retry budget; retrying sooner finds a peer that started late.
constexpr int kConnectTimeoutMs = 1000;
// Refusal notices sent on one connection at most (see refuse()).
constexpr int kMaxNoticesPerConnection = 8;
// Of an unsealed message refused, what is kept for the caller to name its claimed sender
// (the gossip header is at its start).
constexpr std::size_t kUnsealedBytesKept = 1024;

bool is_ipv6_literal(const std::string& host) {
  return host.find(':') != std::string::npos;
}

std::string bracketed(const std::string& host) {
  if (is_ipv6_literal(host) && host.front() != '[') return "[" + host + "]";
  return host;
}

std::string host_port(const std::string& host, std::uint16_t port) {
  return bracketed(host) + ":" + std::to_string(port);
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out.empty() ? "(none found)" : out;
}

Error listen_error(const std::string& host, std::uint16_t port, const zmq::error_t& error) {
  const std::string prefix = "cannot listen on " + host_port(host, port) + ": ";
  switch (error.num()) {
    case EADDRINUSE:
      return Error(ErrorCode::listen_failed,
                   prefix + "the port is already in use " + describe_port_holder(port) +
                       ". Stop that process or pick another port with --listen :PORT");
    case EADDRNOTAVAIL:
      return Error(ErrorCode::listen_failed,
                   prefix + "address " + host +
                       " is not an address of this machine; use --listen :PORT or one of: " +
                       joined(local_addresses()));
    case ENODEV:
      return Error(ErrorCode::listen_failed,
                   prefix + "'" + host +
                       "' is neither an address nor an interface of this machine; use "
                       "--listen :PORT or one of: " +
                       joined(local_addresses()));
    case EACCES:
      return Error(ErrorCode::listen_failed,
                   prefix +
                       "permission denied (ports below 1024 need root); pick a port "
                       "of 1024 or more with --listen :PORT");
    default:
      return Error(ErrorCode::listen_failed, prefix + error.what());
  }
}

std::uint16_t port_of_zmq_endpoint(const std::string& address) {
  // "tcp://0.0.0.0:40123" or "tcp://[::]:40123": the port follows the last colon.
  const auto colon = address.rfind(':');
  return static_cast<std::uint16_t>(std::stoul(address.substr(colon + 1)));
}

}  // namespace

std::string zmq_tcp_address(const std::string& endpoint) {
  if (endpoint.rfind(kTcpScheme, 0) == 0) return endpoint;
  return std::string(kTcpScheme) + endpoint;
}

ZmqTransport::ZmqTransport(const std::string& listen_host, std::uint16_t listen_port,
                           TransportOptions options)
    : options_(options),
      context_(1),
      inbox_(context_, zmq::socket_type::stream),
      outbox_(context_, zmq::socket_type::stream) {
  // Half the descriptors this process may open, at most: a node at its cap can still
  // accept (and so evict for) a new connection, and open its own.
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY) {
    options_.max_inbound_connections = std::min<std::size_t>(
        options_.max_inbound_connections, std::max<std::size_t>(16, files.rlim_cur / 2));
  }
  // One address takes at most half the table, whatever the limits above made of it.
  options_.max_inbound_per_address =
      std::min(options_.max_inbound_per_address,
               std::max<std::size_t>(1, options_.max_inbound_connections / 2));
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) throw Error(ErrorCode::internal, "eventfd failed: " + std::to_string(errno));
  try {
    configure_outbox();
    bind(listen_host.empty() ? "0.0.0.0" : listen_host, listen_port);
  } catch (...) {
    ::close(wake_fd_);
    throw;
  }
}

ZmqTransport::~ZmqTransport() {
  // The last messages (commit notices before exit) may wait for a handshake: give them the
  // linger time. Members close after this: the outbox lingers at most options_.linger too,
  // then the context terminates.
  const auto started = std::chrono::steady_clock::now();
  flush(options_.linger);
  const auto left = options_.linger - std::chrono::duration_cast<std::chrono::milliseconds>(
                                          std::chrono::steady_clock::now() - started);
  try {
    // One linger in all: what the handshakes took is not given again to the close.
    outbox_.set(zmq::sockopt::linger,
                static_cast<int>(std::max(left, std::chrono::milliseconds(0)).count()));
  } catch (const zmq::error_t&) {
    // the socket keeps its linger
  }
  ::close(wake_fd_);
}

bool ZmqTransport::flush(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    // Only the outbox, and a bounded number of chunks per round: answers go to ready_.
    for (int n = 0; n < 256 && read_chunk(outbox_, false); ++n) {
    }
    const bool waiting = std::any_of(destinations_.begin(), destinations_.end(),
                                     [](const auto& d) { return !d.second.waiting.empty(); });
    if (!waiting) return true;
    const auto left =
        std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left <= std::chrono::milliseconds(0)) return false;
    zmq_pollitem_t item{outbox_.handle(), 0, ZMQ_POLLIN, 0};
    try {
      zmq::poll(&item, 1, std::min(left, std::chrono::milliseconds(10)));
    } catch (const zmq::error_t&) {
      // EINTR: read and check again
    }
  }
}

void ZmqTransport::bind(const std::string& listen_host, std::uint16_t listen_port) {
  // The inbox only sends replies (notices, best effort): do not hold up closing for them.
  inbox_.set(zmq::sockopt::linger, 0);
  inbox_.set(zmq::sockopt::rcvhwm, options_.receive_high_water_mark);
  inbox_.set(zmq::sockopt::sndhwm, options_.send_high_water_mark);
  if (is_ipv6_literal(listen_host)) inbox_.set(zmq::sockopt::ipv6, 1);
  const std::string port_text = listen_port == 0 ? "*" : std::to_string(listen_port);
  try {
    inbox_.bind(std::string(kTcpScheme) + bracketed(listen_host) + ":" + port_text);
  } catch (const zmq::error_t& error) {
    throw listen_error(listen_host, listen_port, error);
  }
  bound_port_ = port_of_zmq_endpoint(inbox_.get(zmq::sockopt::last_endpoint));
}

void ZmqTransport::configure_outbox() {
  outbox_.set(zmq::sockopt::linger, static_cast<int>(options_.linger.count()));
  outbox_.set(zmq::sockopt::sndhwm, options_.send_high_water_mark);
  outbox_.set(zmq::sockopt::rcvhwm, options_.receive_high_water_mark);
  outbox_.set(zmq::sockopt::ipv6, 1);  // also connects to IPv4 addresses
  outbox_.set(zmq::sockopt::reconnect_ivl, static_cast<int>(options_.reconnect_initial.count()));
  outbox_.set(zmq::sockopt::reconnect_ivl_max, static_cast<int>(options_.reconnect_max.count()));
  outbox_.set(zmq::sockopt::connect_timeout, kConnectTimeoutMs);
}

bool ZmqTransport::send_raw(zmq::socket_t& socket, const std::string& id, const Bytes& data) {
  try {
    // ZMQ_STREAM: the first frame names the connection (an unknown one is EHOSTUNREACH, a
    // full queue EAGAIN), the second is bytes for its TCP stream.
    if (!socket.send(zmq::const_buffer(id.data(), id.size()),
                     zmq::send_flags::sndmore | zmq::send_flags::dontwait)) {
      return false;
    }
    return socket.send(zmq::const_buffer(data.data(), data.size()), zmq::send_flags::dontwait)
        .has_value();
  } catch (const zmq::error_t&) {
    return false;
  }
}

bool ZmqTransport::send(const std::string& endpoint, const Bytes& bytes) {
  const bool queued = queue(endpoint, bytes);
  if (!queued) ++counters_.sends_dropped;
  return queued;
}

bool ZmqTransport::queue(const std::string& endpoint, const Bytes& bytes) {
  Destination* target = destination(zmq_tcp_address(endpoint));
  if (target == nullptr) return false;
  if (can_send(*target)) {
    return send_raw(outbox_, target->routing_id, frame_for(target->channel, bytes));
  }
  if (target->channel.refused ||
      target->waiting.size() >= static_cast<std::size_t>(options_.send_high_water_mark)) {
    return false;
  }
  target->waiting.push_back(bytes);
  return true;
}

bool ZmqTransport::has_greeted(const std::string& endpoint) const {
  return greeted_.count(zmq_tcp_address(endpoint)) > 0;
}

bool ZmqTransport::can_send(const Destination& target) const {
  return target.reader.handshake_done() && (!options_.keyring || target.channel.theirs);
}

Bytes ZmqTransport::frame_for(Channel& channel, const Bytes& bytes) const {
  if (!options_.keyring) return zmtp_frame(bytes);
  return zmtp_frame(options_.keyring->seal(bytes, *channel.theirs, ++channel.sent,
                                           channel.we_dialled ? Side::dialler : Side::listener));
}

void ZmqTransport::set_keyring(std::shared_ptr<const Keyring> keyring) {
  const bool had_keys = options_.keyring != nullptr;
  options_.keyring = std::move(keyring);
  if (had_keys == (options_.keyring != nullptr)) {
    // Rotation: the same connections go on; a peer that refused our old key may take the
    // new one.
    for (auto& [address, target] : destinations_) target.channel.refused = false;
    return;
  }
  while (!recency_.empty()) drop_destination(std::string(recency_.back()));
  while (!inbound_recency_.empty()) close_inbound(inbound_recency_.back());
}

ZmqTransport::Destination* ZmqTransport::destination(const std::string& address) {
  if (auto found = destinations_.find(address); found != destinations_.end()) {
    recency_.splice(recency_.begin(), recency_, found->second.recency);
    return &found->second;
  }
  // Never reused: ZeroMQ refuses (asserts on) a routing id that names a live connection, and
  // a closed one may still be closing.
  std::string routing_id = "d" + std::to_string(next_routing_id_++);
  try {
    outbox_.set(zmq::sockopt::connect_routing_id, routing_id);
    outbox_.connect(address);
  } catch (const zmq::error_t&) {
    return nullptr;  // malformed address: nothing will ever reach it, and nothing is closed
  }
  if (destinations_.size() >= options_.max_destinations) evict_least_recent();
  // The connection's queue exists from connect() on; ZeroMQ sends it once TCP is up, so the
  // handshake goes first; messages wait for the peer's (see Destination::waiting). A
  // connection is used once: when it drops it is closed (drop_destination), never resumed
  // mid-stream.
  send_raw(outbox_, routing_id, zmtp_handshake("DEALER"));
  Channel channel;
  channel.we_dialled = true;
  if (options_.keyring) {
    channel.ours = new_challenge();
    send_raw(outbox_, routing_id, zmtp_frame(encode_challenge(channel.ours)));
  }
  recency_.push_front(address);
  address_of_[routing_id] = address;
  ++counters_.destinations_opened;
  const auto inserted = destinations_.emplace(
      address, Destination{std::move(routing_id),
                           recency_.begin(),
                           ZmtpReader(static_cast<std::size_t>(options_.max_message_bytes)),
                           false,
                           {},
                           channel});
  inserted.first->second.dialled_at = std::chrono::steady_clock::now();
  return &inserted.first->second;
}

void ZmqTransport::redial(const std::string& endpoint) {
  const std::string address = zmq_tcp_address(endpoint);
  const auto found = destinations_.find(address);
  if (found == destinations_.end() || found->second.connected) return;
  // An attempt younger than the connect timeout may still be under way (a WAN round trip):
  // closing it for a new one each time the peer speaks could keep it from ever connecting.
  if (std::chrono::steady_clock::now() <
      found->second.dialled_at + std::chrono::milliseconds(kConnectTimeoutMs))
    return;
  std::deque<Bytes> waiting = std::move(found->second.waiting);
  drop_destination(address);
  Destination* fresh = destination(address);
  if (fresh != nullptr) fresh->waiting = std::move(waiting);
}

void ZmqTransport::drop_destination(const std::string& address) {
  const auto found = destinations_.find(address);
  if (found == destinations_.end()) return;
  try {
    outbox_.disconnect(address);
  } catch (const zmq::error_t&) {
    // already gone: nothing to close
  }
  address_of_.erase(found->second.routing_id);
  recency_.erase(found->second.recency);
  destinations_.erase(found);
}

// Closing a connection drops the messages still waiting for its peer's handshake, so the
// least recently used destination with none goes first: a peer slow to greet (a process
// starved of CPU among hundreds on one machine) would otherwise lose what waits for it
// each time its sender makes room for another destination. Only when every destination
// has messages waiting is the least recent one closed anyway.
void ZmqTransport::evict_least_recent() {
  if (recency_.empty()) return;
  std::string victim = recency_.back();
  for (auto it = recency_.rbegin(); it != recency_.rend(); ++it) {
    const auto found = destinations_.find(*it);
    if (found != destinations_.end() && found->second.waiting.empty()) {
      victim = *it;
      break;
    }
  }
  if (const auto found = destinations_.find(victim);
      found != destinations_.end() && !found->second.waiting.empty()) {
    ++counters_.evicted_waiting;
    counters_.messages_lost_on_eviction += found->second.waiting.size();
  }
  ++counters_.destinations_evicted;
  drop_destination(victim);
}

bool ZmqTransport::reply(const std::string& reply_to, const Bytes& bytes) {
  const auto found = inbound_.find(reply_to);
  // With keys the peer's challenge came first on its connection; without it, no reply.
  const bool queued = !reply_to.empty() && found != inbound_.end() &&
                      (!options_.keyring || found->second.channel.theirs) &&
                      send_raw(inbox_, reply_to, frame_for(found->second.channel, bytes));
  if (!queued) ++counters_.sends_dropped;
  return queued;
}

std::optional<Bytes> ZmqTransport::receive(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    auto message = receive_from(timeout);
    if (!message) return std::nullopt;
    if (!message->refusal) return std::move(message->bytes);
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return std::nullopt;  // refusals only, until the deadline
    timeout = std::chrono::ceil<std::chrono::milliseconds>(deadline - now);
  }
}

std::optional<Received> ZmqTransport::receive_from(std::chrono::milliseconds timeout) {
  pump();
  if (auto message = take_ready()) return message;
  // Two sockets and the wake-up eventfd, however many peers there are.
  std::array<zmq_pollitem_t, 3> items = {{{inbox_.handle(), 0, ZMQ_POLLIN, 0},
                                          {outbox_.handle(), 0, ZMQ_POLLIN, 0},
                                          {nullptr, wake_fd_, ZMQ_POLLIN, 0}}};
  try {
    zmq::poll(items.data(), items.size(), timeout);
  } catch (const zmq::error_t&) {
    return std::nullopt;  // EINTR: the caller loops anyway
  }
  if ((items[2].revents & ZMQ_POLLIN) != 0) drain_wake();
  pump();
  return take_ready();
}

std::optional<Received> ZmqTransport::take_ready() {
  if (ready_.empty()) return std::nullopt;
  Received message = std::move(ready_.front());
  ready_.pop_front();
  return message;
}

void ZmqTransport::pump() {
  // Bounds one call's work; the chunks left wait in ZeroMQ's bounded queues.
  constexpr int kMaxChunks = 256;
  for (int n = 0; n < kMaxChunks && ready_.empty(); ++n) {
    outbox_first_ = !outbox_first_;  // neither socket starves the other
    const bool read = outbox_first_ ? (read_chunk(outbox_, false) || read_chunk(inbox_, true))
                                    : (read_chunk(inbox_, true) || read_chunk(outbox_, false));
    if (!read) return;
  }
}

bool ZmqTransport::read_chunk(zmq::socket_t& socket, bool inbox) {
  try {
    zmq::message_t id;
    if (!socket.recv(id, zmq::recv_flags::dontwait)) return false;
    zmq::message_t data;  // ZMQ_STREAM: always a second frame, empty for a connection notice
    if (id.more() && !socket.recv(data, zmq::recv_flags::dontwait)) return true;
    const std::string name(id.data<char>(), id.size());
    if (inbox) {
      on_inbox_chunk(name, data);
    } else {
      on_outbox_chunk(name, data);
    }
    return true;
  } catch (const zmq::error_t&) {
    return false;
  }
}

void ZmqTransport::on_inbox_chunk(const std::string& id, const zmq::message_t& data) {
  auto found = inbound_.find(id);
  if (data.size() == 0) {  // a connection opened, or closed
    if (found != inbound_.end()) {
      forget_inbound(id);
    } else if (send_raw(inbox_, id, zmtp_handshake("ROUTER"))) {
      // Only a live connection gets a reader: a late notice of one already closed does not.
      // Beyond the cap the connection idle the longest goes: a flood of connections evicts
      // its own before a peer that keeps talking.
      while (inbound_.size() >= std::max<std::size_t>(options_.max_inbound_connections, 1)) {
        ++counters_.inbound_closed_for_room;
        close_inbound(inbound_recency_.back());
      }
      ++counters_.inbound_accepted;
      inbound_recency_.push_front(id);
      Channel channel;
      if (options_.keyring) {
        channel.ours = new_challenge();
        send_raw(inbox_, id, zmtp_frame(encode_challenge(channel.ours)));
      }
      inbound_.emplace(id, Inbound{ZmtpReader(static_cast<std::size_t>(options_.max_message_bytes)),
                                   inbound_recency_.begin(),
                                   {},
                                   channel});
    }
    return;
  }
  if (found == inbound_.end()) return;  // a connection closed by us: the rest is dropped
  Inbound& connection = found->second;
  inbound_recency_.splice(inbound_recency_.begin(), inbound_recency_, connection.recency);
  if (connection.peer.empty()) {
    // The C call only reads the message's metadata (it is not const-qualified).
    const char* address = zmq_msg_gets(const_cast<zmq_msg_t*>(data.handle()), "Peer-Address");
    note_inbound_address(id, connection, address != nullptr ? address : "(unknown address)");
  }
  std::vector<Bytes> messages;
  if (connection.reader.feed(data.data<std::uint8_t>(), data.size(), messages)) {
    close_inbound(id);
    return;  // nothing from a peer that broke the rules
  }
  const std::string peer = connection.peer;
  for (auto& message : messages) {
    connection.delivered |= accept(std::move(message), id, peer, connection.channel);
  }
  undelivered_bytes_ -= connection.held;
  connection.held = connection.delivered ? 0 : connection.reader.buffered();
  undelivered_bytes_ += connection.held;
  if (undelivered_bytes_ > options_.max_undelivered_bytes) enforce_undelivered_budget();
}

void ZmqTransport::enforce_undelivered_budget() {
  while (undelivered_bytes_ > options_.max_undelivered_bytes) {
    auto largest = inbound_.end();
    for (auto it = inbound_.begin(); it != inbound_.end(); ++it) {
      if (largest == inbound_.end() || it->second.held > largest->second.held) largest = it;
    }
    if (largest == inbound_.end() || largest->second.held == 0) return;
    close_inbound(largest->first);
  }
}

void ZmqTransport::note_inbound_address(const std::string& id, Inbound& connection,
                                        std::string address) {
  connection.peer = std::move(address);
  const std::size_t count = ++inbound_per_address_[connection.peer];
  const std::size_t cap = std::max<std::size_t>(options_.max_inbound_per_address, 1);
  if (count <= cap) return;
  std::vector<std::string> idlest;  // collected first: closing edits the list
  for (auto it = inbound_recency_.rbegin();
       idlest.size() < count - cap && it != inbound_recency_.rend(); ++it) {
    if (*it != id && inbound_.at(*it).peer == connection.peer) idlest.push_back(*it);
  }
  counters_.inbound_closed_for_room += idlest.size();
  for (const std::string& victim : idlest) close_inbound(victim);
}

void ZmqTransport::forget_inbound(std::string id) {
  const auto found = inbound_.find(id);
  if (found == inbound_.end()) return;
  undelivered_bytes_ -= found->second.held;
  if (!found->second.peer.empty()) {
    const auto counted = inbound_per_address_.find(found->second.peer);
    if (counted != inbound_per_address_.end() && --counted->second == 0) {
      inbound_per_address_.erase(counted);
    }
  }
  inbound_recency_.erase(found->second.recency);
  inbound_.erase(found);
}

void ZmqTransport::close_inbound(std::string id) {
  if (inbound_.count(id) == 0) return;
  send_raw(inbox_, id, Bytes{});  // an empty message closes the connection
  forget_inbound(id);
}

void ZmqTransport::on_outbox_chunk(const std::string& id, const zmq::message_t& data) {
  const auto address = address_of_.find(id);
  if (address == address_of_.end()) return;  // a connection already closed
  Destination& target = destinations_.at(address->second);
  if (data.size() == 0) {  // connected, or (the second notice) disconnected
    if (!target.connected) {
      target.connected = true;
    } else {
      drop_destination(std::string(address->second));
    }
    return;
  }
  std::vector<Bytes> messages;
  if (target.reader.feed(data.data<std::uint8_t>(), data.size(), messages)) {
    drop_destination(std::string(address->second));
    return;
  }
  // Answers on our own connection: not a reply target. The peer is the endpoint we dialled
  // ("tcp://" removed). Its challenge, if any, comes first: read before the queue goes out.
  const std::string peer = address->second.substr(address->second.rfind("tcp://", 0) == 0 ? 6 : 0);
  for (auto& message : messages) accept(std::move(message), {}, peer, target.channel);
  if (!target.greeted && target.reader.handshake_done()) {
    target.greeted = true;
    if (greeted_.size() < kMaxGreetedKept) greeted_.insert(address->second);
  }
  if (target.channel.refused) {
    target.waiting.clear();  // it said it drops what we send: no use queueing it
  } else if (can_send(target)) {
    for (const Bytes& bytes : target.waiting) {
      send_raw(outbox_, target.routing_id, frame_for(target.channel, bytes));
    }
    target.waiting.clear();
  }
}

bool ZmqTransport::accept(Bytes message, const std::string& reply_to, const std::string& peer,
                          Channel& channel) {
  if (looks_like_challenge(message)) {
    // The peer holds a key: what we send must be sealed for this challenge.
    if (!options_.keyring) {
      refuse(channel, reply_to, peer, NoticeReason::no_key_here, std::nullopt, {});
    } else if (auto challenge = decode_challenge(message);
               challenge && !channel.theirs && *challenge != channel.ours) {
      // Only the first: a later one would let replays in. Never our own: sealing for it
      // would let our messages be reflected back to us.
      channel.theirs = challenge;
    }
    return false;
  }
  if (looks_like_notice(message)) {
    // A peer dropped one of ours for want of the key. Only a peer we dialled can say so: on
    // a connection into our inbox anyone could, to make this node give up (it is
    // unauthenticated). A malformed notice is dropped too.
    if (!reply_to.empty()) return false;
    if (auto notice = decode_notice(message)) {
      channel.refused = true;
      ready_.push_back(Received{
          {}, reply_to, AuthRefusal{false, notice->reason, peer, notice->refuser_key, {}}});
    }
    return false;
  }
  const auto& ring = options_.keyring;
  if (!ring) {
    if (!looks_sealed(message)) {
      ready_.push_back(Received{std::move(message), reply_to, std::nullopt});
      return true;
    }
    std::optional<KeyId> theirs;
    if (message.size() >= 13) {
      theirs.emplace();
      std::copy(message.begin() + 5, message.begin() + 13, theirs->begin());
    }
    refuse(channel, reply_to, peer, NoticeReason::no_key_here, theirs, {});
    return false;
  }
  Opened opened = ring->open(message, channel.ours, channel.received,
                             channel.we_dialled ? Side::listener : Side::dialler);
  switch (opened.status) {
    case OpenStatus::ok:
      channel.received = opened.counter;
      ready_.push_back(Received{std::move(opened.plain), reply_to, std::nullopt});
      return true;
    case OpenStatus::not_sealed:
      // Kept for the caller to name the claimed sender: its header, not the whole message.
      message.resize(std::min<std::size_t>(message.size(), kUnsealedBytesKept));
      refuse(channel, reply_to, peer, NoticeReason::key_required, std::nullopt, std::move(message));
      return false;
    case OpenStatus::unknown_key:
      refuse(channel, reply_to, peer, NoticeReason::unknown_key, opened.key_id, {});
      return false;
    case OpenStatus::forged:
    case OpenStatus::replayed:
      refuse(channel, reply_to, peer, NoticeReason::forged, opened.key_id, {});
      return false;
  }
  return false;
}

void ZmqTransport::refuse(Channel& channel, const std::string& reply_to, const std::string& peer,
                          NoticeReason reason, std::optional<KeyId> key_id, Bytes unsealed) {
  // Only inbound messages are answered: an answer on our own connection that we cannot open
  // came from a peer that already knows (it refused ours, or will). A few notices per
  // connection: a peer that keeps sending what we refuse, and never reads, cannot make us
  // queue notices without end.
  if (!reply_to.empty() && channel.notices_sent < kMaxNoticesPerConnection) {
    ++channel.notices_sent;
    AuthNotice notice{reason, std::nullopt};
    if (options_.keyring) notice.refuser_key = options_.keyring->primary_id();
    send_raw(inbox_, reply_to, zmtp_frame(encode_notice(notice)));
  }
  ready_.push_back(
      Received{{}, reply_to, AuthRefusal{true, reason, peer, key_id, std::move(unsealed)}});
}

void ZmqTransport::wake() {
  const std::uint64_t one = 1;
  [[maybe_unused]] const auto written = ::write(wake_fd_, &one, sizeof one);
}

void ZmqTransport::drain_wake() {
  std::uint64_t count = 0;
  [[maybe_unused]] const auto read = ::read(wake_fd_, &count, sizeof count);
}

}  // namespace gossip_rdzv::transport
