#include "transport/zmq_transport.hpp"

#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

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
    : options_(options), context_(1), inbox_(context_, zmq::socket_type::router) {
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) throw Error(ErrorCode::internal, "eventfd failed: " + std::to_string(errno));
  try {
    bind(listen_host.empty() ? "0.0.0.0" : listen_host, listen_port);
  } catch (...) {
    ::close(wake_fd_);
    throw;
  }
}

ZmqTransport::~ZmqTransport() {
  // Members close after this: destinations linger at most options_.linger, then the
  // context terminates.
  ::close(wake_fd_);
}

void ZmqTransport::bind(const std::string& listen_host, std::uint16_t listen_port) {
  // The inbox only sends replies (notices, best effort): do not hold up closing for them.
  inbox_.set(zmq::sockopt::linger, 0);
  inbox_.set(zmq::sockopt::maxmsgsize, options_.max_message_bytes);
  if (is_ipv6_literal(listen_host)) inbox_.set(zmq::sockopt::ipv6, 1);
  const std::string port_text = listen_port == 0 ? "*" : std::to_string(listen_port);
  try {
    inbox_.bind(std::string(kTcpScheme) + bracketed(listen_host) + ":" + port_text);
  } catch (const zmq::error_t& error) {
    throw listen_error(listen_host, listen_port, error);
  }
  bound_port_ = port_of_zmq_endpoint(inbox_.get(zmq::sockopt::last_endpoint));
}

bool ZmqTransport::send(const std::string& endpoint, const Bytes& bytes) {
  Destination* target = destination(zmq_tcp_address(endpoint));
  if (target == nullptr) return false;
  try {
    const auto sent = target->socket.send(zmq::const_buffer(bytes.data(), bytes.size()),
                                          zmq::send_flags::dontwait);
    return sent.has_value();  // empty: EAGAIN, the queue is full
  } catch (const zmq::error_t&) {
    return false;
  }
}

ZmqTransport::Destination* ZmqTransport::destination(const std::string& address) {
  if (auto found = destinations_.find(address); found != destinations_.end()) {
    recency_.splice(recency_.begin(), recency_, found->second.recency);
    return &found->second;
  }
  if (destinations_.size() >= options_.max_destinations) evict_least_recent();
  zmq::socket_t dealer(context_, zmq::socket_type::dealer);
  dealer.set(zmq::sockopt::linger, static_cast<int>(options_.linger.count()));
  dealer.set(zmq::sockopt::sndhwm, options_.send_high_water_mark);
  dealer.set(zmq::sockopt::ipv6, 1);  // also connects to IPv4 addresses
  dealer.set(zmq::sockopt::reconnect_ivl, static_cast<int>(options_.reconnect_initial.count()));
  dealer.set(zmq::sockopt::reconnect_ivl_max, static_cast<int>(options_.reconnect_max.count()));
  dealer.set(zmq::sockopt::connect_timeout, kConnectTimeoutMs);
  try {
    dealer.connect(address);
  } catch (const zmq::error_t&) {
    return nullptr;  // malformed address: nothing will ever reach it
  }
  recency_.push_front(address);
  const auto inserted =
      destinations_.emplace(address, Destination{std::move(dealer), recency_.begin()});
  return &inserted.first->second;
}

void ZmqTransport::evict_least_recent() {
  if (recency_.empty()) return;
  destinations_.erase(recency_.back());
  recency_.pop_back();
}

bool ZmqTransport::reply(const std::string& reply_to, const Bytes& bytes) {
  if (reply_to.empty()) return false;
  try {
    // ROUTER: the first frame names the connection; an unknown one drops the message.
    if (!inbox_.send(zmq::const_buffer(reply_to.data(), reply_to.size()),
                     zmq::send_flags::sndmore | zmq::send_flags::dontwait)) {
      return false;
    }
    const auto sent =
        inbox_.send(zmq::const_buffer(bytes.data(), bytes.size()), zmq::send_flags::dontwait);
    return sent.has_value();
  } catch (const zmq::error_t&) {
    return false;
  }
}

std::optional<Bytes> ZmqTransport::receive(std::chrono::milliseconds timeout) {
  auto message = receive_from(timeout);
  if (!message) return std::nullopt;
  return std::move(message->bytes);
}

std::optional<Received> ZmqTransport::receive_from(std::chrono::milliseconds timeout) {
  if (auto message = try_receive()) return message;
  std::vector<zmq_pollitem_t> items = {{inbox_.handle(), 0, ZMQ_POLLIN, 0},
                                       {nullptr, wake_fd_, ZMQ_POLLIN, 0}};
  std::vector<zmq::socket_t*> dealers;
  if (answers_.empty()) {
    // Answers to what we sent come back on the destinations' own sockets.
    for (auto& [address, destination] : destinations_) {
      items.push_back({destination.socket.handle(), 0, ZMQ_POLLIN, 0});
      dealers.push_back(&destination.socket);
    }
  } else {
    timeout = std::chrono::milliseconds(0);
  }
  try {
    zmq::poll(items.data(), items.size(), timeout);
  } catch (const zmq::error_t&) {
    return std::nullopt;  // EINTR: the caller loops anyway
  }
  if ((items[1].revents & ZMQ_POLLIN) != 0) drain_wake();
  collect_answers(items, dealers);
  if (auto message = try_receive()) return message;
  if (answers_.empty()) return std::nullopt;
  Received answer{std::move(answers_.front()), {}};
  answers_.pop_front();
  return answer;
}

void ZmqTransport::collect_answers(const std::vector<zmq_pollitem_t>& items,
                                   const std::vector<zmq::socket_t*>& dealers) {
  constexpr std::size_t kMaxPerDestination = 64;  // one chatty peer cannot starve the rest
  for (std::size_t i = 0; i < dealers.size(); ++i) {
    if ((items[i + 2].revents & ZMQ_POLLIN) == 0) continue;
    try {
      for (std::size_t n = 0; n < kMaxPerDestination; ++n) {
        zmq::message_t part;
        if (!dealers[i]->recv(part, zmq::recv_flags::dontwait)) break;
        answers_.emplace_back(part.data<std::uint8_t>(), part.data<std::uint8_t>() + part.size());
        while (part.more() && dealers[i]->recv(part, zmq::recv_flags::dontwait)) {
          // extra frames are not ours: dropped
        }
      }
    } catch (const zmq::error_t&) {
      // a socket error loses what it held; the protocol tolerates loss
    }
  }
}

std::optional<Received> ZmqTransport::try_receive() {
  try {
    zmq::message_t identity;  // ROUTER prefixes the sender's connection id
    if (!inbox_.recv(identity, zmq::recv_flags::dontwait)) return std::nullopt;
    std::string reply_to(identity.data<char>(), identity.size());
    std::optional<Bytes> payload;
    for (bool more = identity.more(); more;) {
      zmq::message_t part;
      if (!inbox_.recv(part, zmq::recv_flags::dontwait)) break;
      // Our DEALERs send one frame; extra frames are someone else's and are dropped.
      if (!payload)
        payload.emplace(part.data<std::uint8_t>(), part.data<std::uint8_t>() + part.size());
      more = part.more();
    }
    return Received{payload ? std::move(*payload) : Bytes{}, std::move(reply_to)};
  } catch (const zmq::error_t&) {
    return std::nullopt;
  }
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
