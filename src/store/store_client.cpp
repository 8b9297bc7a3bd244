// gossip_rdzv::Store: a client that sends one request at a time to an agent's gossip socket
// and waits for the answer on a socket of its own (the agent answers to `reply_to`).
#include "gossip_rdzv/store.hpp"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <random>

#include "gossip_rdzv/error.hpp"
#include "protocol/endpoint.hpp"
#include "store/store_codec.hpp"
#include "transport/auth_notice.hpp"
#include "transport/key_file_watch.hpp"
#include "transport/keyring.hpp"
#include "transport/zmq_transport.hpp"

namespace gossip_rdzv {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Longer than the agent's own grace for a silent home (ServiceOptions::home_grace, 2 s), so a
// silent home is reported by the agent, naming it, before the client gives up on the agent.
constexpr milliseconds kAgentGrace{4000};
// How often a waiting client wakes to check its deadline.
constexpr milliseconds kPollSlice{1000};
// A waiting request asks its agent this often whether it is still there (Op::ping), so a dead
// agent ends the wait with unavailable within seconds, not at the request's timeout (torch's
// is 300 s), nor never (timeout 0).
constexpr milliseconds kAgentCheckInterval{5000};

std::string seconds_text(milliseconds duration) {
  if (duration.count() % 1000 == 0) return std::to_string(duration.count() / 1000) + " s";
  return std::to_string(duration.count()) + " ms";
}

StoreErrorCode code_of(store::Status status) {
  switch (status) {
    case store::Status::timeout:
      return StoreErrorCode::timeout;
    case store::Status::bad_request:
      return StoreErrorCode::bad_request;
    case store::Status::unavailable:
      return StoreErrorCode::unavailable;
    case store::Status::not_ready:
      return StoreErrorCode::not_ready;
    case store::Status::refused:
      return StoreErrorCode::refused;
    case store::Status::too_large:
      return StoreErrorCode::too_large;
    case store::Status::ok:
      break;
  }
  return StoreErrorCode::unavailable;
}

std::string strip_scheme(std::string endpoint) {
  constexpr std::string_view kScheme = "tcp://";
  if (endpoint.rfind(kScheme, 0) == 0) endpoint.erase(0, kScheme.size());
  return endpoint;
}

/// The local address the kernel uses to reach `host` (a UDP connect sends nothing): the
/// address the agent can answer us on.
std::string reply_host_for(const std::string& host) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* list = nullptr;
  if (::getaddrinfo(host.c_str(), "9", &hints, &list) != 0) return "127.0.0.1";
  std::unique_ptr<addrinfo, void (*)(addrinfo*)> owner(list, ::freeaddrinfo);
  const int fd = ::socket(list->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return "127.0.0.1";
  std::string chosen = list->ai_family == AF_INET6 ? "::1" : "127.0.0.1";
  sockaddr_storage local{};
  socklen_t length = sizeof local;
  if (::connect(fd, list->ai_addr, list->ai_addrlen) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) == 0) {
    char text[NI_MAXHOST];
    if (::getnameinfo(reinterpret_cast<sockaddr*>(&local), length, text, sizeof text, nullptr, 0,
                      NI_NUMERICHOST) == 0) {
      chosen = text;
    }
  }
  ::close(fd);
  return chosen;
}

std::string host_port(const std::string& host, std::uint16_t port) {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

// A client looks whether its key file changed before every request (one stat): it is never
// behind its file, so a rotation step done on a machine (`keys use`, then `keys remove` once
// every agent uses the new key) cannot leave a worker sealing with a key just removed.
constexpr milliseconds kKeyCheckInterval{0};

/// The client's keys (StoreOptions::key_file): read when set, and read again before a
/// request when the file changed (transport::KeyFileWatch, kKeyCheckInterval), so that a
/// rotation (`gossip-rdzv keys`) reaches a long-running worker as it reaches the agents. A
/// changed file that cannot be read leaves the previous keys.
class ClientKeys {
 public:
  /// Reads `path` ("" : no key). Throws StoreError(usage) naming the file and what is wrong;
  /// the previous keys stay then.
  void load(const std::string& path) {
    if (path.empty()) {
      keyring_.reset();
      watch_.reset();
      return;
    }
    try {
      keyring_ = transport::Keyring::load_file(path);
    } catch (const Error& error) {
      throw StoreError(StoreErrorCode::usage, error.what());
    }
    watch_.emplace(path, kKeyCheckInterval);
  }

  /// The keys to use now.
  const std::shared_ptr<const transport::Keyring>& current(Clock::time_point now) {
    if (!watch_) return keyring_;
    if (auto change = watch_->poll(now); change && change->keyring) {
      keyring_ = std::move(change->keyring);
    }
    return keyring_;
  }

  std::string path() const { return watch_ ? watch_->path() : std::string(); }
  const transport::Keyring* keyring() const { return keyring_.get(); }

 private:
  std::shared_ptr<const transport::Keyring> keyring_;
  std::optional<transport::KeyFileWatch> watch_;
};

// What a refusal for want of the key means for this client, and the fix.
std::string refusal_text(const transport::AuthRefusal& refusal, const std::string& agent,
                         const ClientKeys& keys) {
  using transport::NoticeReason;
  const std::string ours =
      keys.keyring() == nullptr
          ? std::string()
          : "key " + transport::key_id_text(keys.keyring()->primary_id()) + " from " + keys.path();
  const std::string theirs =
      refusal.key_id ? " (key " + transport::key_id_text(*refusal.key_id) + ")" : "";
  std::string text = "authentication failed: ";
  switch (refusal.reason) {
    case NoticeReason::key_required:
      text += refusal.by_us
                  ? "the agent at " + agent + " answered in clear, but this client holds " + ours +
                        "; start the agent with the same --key-file"
                  : "the agent at " + agent + theirs +
                        " requires the job's key and this client has none; set "
                        "GOSSIP_RDZV_KEY_FILE to the agent's --key-file";
      break;
    case NoticeReason::no_key_here:
      text += refusal.by_us
                  ? "the agent at " + agent + " sealed its answer with a key" + theirs +
                        " and this client has none; set GOSSIP_RDZV_KEY_FILE to the agent's "
                        "--key-file"
                  : "the agent at " + agent + " holds no key, but this client holds " + ours +
                        "; start the agent with the same --key-file, or unset "
                        "GOSSIP_RDZV_KEY_FILE here";
      break;
    case NoticeReason::unknown_key:
    case NoticeReason::forged:
      text += refusal.by_us
                  ? "the agent at " + agent + " sealed its answer with a key" + theirs + " that " +
                        keys.path() + " does not hold"
                  : "the agent at " + agent + theirs + " does not hold this client's " + ours;
      text += "; give the client the agent's --key-file (GOSSIP_RDZV_KEY_FILE)";
      break;
  }
  return text;
}

std::string quoted_keys(const std::vector<std::string>& keys) {
  std::string out;
  for (std::size_t i = 0; i < keys.size() && i < 3; ++i) {
    out += (i ? ", '" : "'") + keys[i] + "'";
  }
  if (keys.size() > 3) out += ", ... (" + std::to_string(keys.size()) + " keys)";
  return out;
}

}  // namespace

struct Store::Impl {
  StoreOptions options;
  std::string agent_host;
  std::mutex mutex;  ///< one request in flight
  std::unique_ptr<transport::ZmqTransport> transport;
  std::string reply_to;
  std::uint64_t next_id = std::random_device{}();
  ClientKeys keys;
  std::string last_refusal;  ///< the last answer we could not open, for agent_silent()

  void connect();
  void send(const store::StoreRequest& request);
  store::StoreResponse perform(store::StoreRequest request, milliseconds timeout);
  [[noreturn]] void agent_silent(const store::StoreRequest& request,
                                 const std::string& how_long) const;
  [[noreturn]] void fail(const store::StoreRequest& request, const store::StoreResponse& response,
                         milliseconds timeout) const;
};

void Store::Impl::connect() {
  if (transport) return;
  transport::TransportOptions transport_options;
  transport_options.linger = milliseconds::zero();  // unanswered requests need not outlive us
  transport_options.max_message_bytes = static_cast<std::int64_t>(store::kMaxStoreMessageBytes);
  transport_options.keyring = keys.current(Clock::now());
  const std::string host = reply_host_for(agent_host);
  try {
    transport = std::make_unique<transport::ZmqTransport>(host, 0, transport_options);
  } catch (const Error& error) {
    throw StoreError(StoreErrorCode::unavailable,
                     "cannot open the store client's reply socket: " + std::string(error.what()));
  }
  reply_to = host_port(host, transport->bound_port());
}

store::StoreResponse Store::Impl::perform(store::StoreRequest request, milliseconds timeout) {
  std::lock_guard lock(mutex);
  connect();
  if (const auto& keyring = keys.current(Clock::now()); keyring != transport->keyring()) {
    transport->set_keyring(keyring);
  }
  last_refusal.clear();
  request.run_id = options.run_id;
  request.request_id = next_id++;
  request.reply_to = reply_to;
  request.timeout_ms = static_cast<std::uint64_t>(std::max<std::int64_t>(timeout.count(), 0));
  request.timeout_ms = std::min(request.timeout_ms, store::kMaxTimeoutMs);
  send(request);
  const std::optional<Clock::time_point> deadline =
      request.timeout_ms == 0 ? std::nullopt : std::optional(Clock::now() + timeout + kAgentGrace);
  // The outstanding check of the agent (request id, sent at), and when the next one is due.
  std::optional<std::pair<std::uint64_t, Clock::time_point>> check;
  Clock::time_point next_check = Clock::now() + kAgentCheckInterval;
  while (!deadline || Clock::now() < *deadline) {
    milliseconds wait = kPollSlice;
    if (deadline) {
      wait = std::min(wait, std::chrono::ceil<milliseconds>(*deadline - Clock::now()));
    }
    if (check && Clock::now() - check->second >= kAgentGrace) {
      agent_silent(request,
                   "to a check within " + seconds_text(kAgentGrace) + " while the request waited");
    } else if (!check && Clock::now() >= next_check) {
      store::StoreRequest ping;
      ping.run_id = options.run_id;
      ping.request_id = next_id++;
      ping.reply_to = reply_to;
      ping.op = store::Op::ping;
      send(ping);
      check.emplace(ping.request_id, Clock::now());
    }
    auto message = transport->receive_from(std::max(wait, milliseconds(1)));
    if (!message) continue;
    if (message->refusal && !message->refusal->by_us) {
      // The agent refused the request: its notice came back on our own connection to it.
      throw StoreError(StoreErrorCode::refused,
                       std::string(store::to_string(request.op)) + "(" + quoted_keys(request.keys) +
                           "): " + refusal_text(*message->refusal, options.agent, keys));
    }
    if (message->refusal) {
      // An answer we could not open. Anyone can reach the reply socket, so this alone ends
      // nothing; if the agent's answer never opens, the silence is explained with it.
      last_refusal = refusal_text(*message->refusal, options.agent, keys);
      continue;
    }
    auto decoded = store::decode_store(message->bytes.data(), message->bytes.size());
    auto* parsed = std::get_if<store::StoreMessage>(&decoded);
    if (!parsed) continue;
    auto* response = std::get_if<store::StoreResponse>(parsed);
    if (response && check && response->request_id == check->first) {
      // Any answer, even a refusal from an agent that predates the check, shows it is there.
      check.reset();
      next_check = Clock::now() + kAgentCheckInterval;
      continue;
    }
    // Answers to earlier requests that timed out here may still arrive: skip them.
    if (!response || response->request_id != request.request_id) continue;
    if (response->status != store::Status::ok) fail(request, *response, timeout);
    return std::move(*response);
  }
  agent_silent(request, "within " + seconds_text(timeout + kAgentGrace));
}

void Store::Impl::agent_silent(const store::StoreRequest& request,
                               const std::string& how_long) const {
  throw StoreError(
      StoreErrorCode::unavailable,
      std::string(store::to_string(request.op)) + "(" + quoted_keys(request.keys) +
          "): the gossip-rdzv agent at " + options.agent + " did not answer " + how_long +
          (last_refusal.empty() ? ": is `gossip-rdzv join` still running on this machine, and is "
                                  "GOSSIP_RDZV_STORE right?"
                                : " that this client could open: " + last_refusal));
}

void Store::Impl::send(const store::StoreRequest& request) {
  const auto bytes = store::encode(store::StoreMessage(request));
  if (bytes.size() > store::kMaxStoreMessageBytes) {
    throw StoreError(StoreErrorCode::too_large,
                     std::string(store::to_string(request.op)) + "(" + quoted_keys(request.keys) +
                         "): the request is " + std::to_string(bytes.size()) +
                         " bytes, more than the 4 MiB a store message may carry");
  }
  if (!transport->send(options.agent, bytes)) {
    throw StoreError(StoreErrorCode::unavailable,
                     "cannot send to the gossip-rdzv agent at " + options.agent);
  }
}

void Store::Impl::fail(const store::StoreRequest& request, const store::StoreResponse& response,
                       milliseconds timeout) const {
  const std::string key =
      response.key.empty() && request.keys.size() == 1 ? request.keys.front() : response.key;
  std::string text = std::string(store::to_string(request.op)) + "(" +
                     (key.empty() ? quoted_keys(request.keys) : "'" + key + "'") + ")";
  switch (response.status) {
    case store::Status::timeout:
      text += " timed out after " + seconds_text(timeout) + ": the key was not set in time";
      break;
    case store::Status::unavailable:
      text += " failed: " + response.detail;
      break;
    default:
      text += " failed: " + response.detail;
  }
  if (!response.home.empty()) text += " (home " + response.home + ")";
  throw StoreError(code_of(response.status), text, key, response.home);
}

Store::Store(StoreOptions options) : impl_(std::make_unique<Impl>()) {
  options.agent = strip_scheme(options.agent);
  std::string why;
  const auto parsed = protocol::parse_endpoint(options.agent, &why, protocol::EndpointRules{});
  if (!parsed) {
    throw StoreError(StoreErrorCode::usage,
                     "store agent '" + options.agent + "' is not HOST:PORT: " + why);
  }
  impl_->agent_host = parsed->host;
  impl_->keys.load(options.key_file);
  impl_->options = std::move(options);
}

Store Store::from_env() {
  const char* agent = std::getenv("GOSSIP_RDZV_STORE");
  if (agent == nullptr || *agent == '\0') {
    throw StoreError(StoreErrorCode::usage,
                     "GOSSIP_RDZV_STORE is not set: start this program with `gossip-rdzv join "
                     "... -- CMD`, or source the env file of `gossip-rdzv join --serve-store`");
  }
  StoreOptions options;
  options.agent = agent;
  if (const char* run_id = std::getenv("TORCHELASTIC_RUN_ID")) options.run_id = run_id;
  if (const char* key_file = std::getenv("GOSSIP_RDZV_KEY_FILE")) options.key_file = key_file;
  if (const char* seconds = std::getenv("GOSSIP_RDZV_STORE_TIMEOUT")) {
    char* end = nullptr;
    const double value = std::strtod(seconds, &end);
    if (end == seconds || *end != '\0' || value < 0) {
      throw StoreError(StoreErrorCode::usage, "GOSSIP_RDZV_STORE_TIMEOUT='" + std::string(seconds) +
                                                  "' is not a number of seconds");
    }
    options.timeout = milliseconds(static_cast<std::int64_t>(value * 1000));
  }
  return Store(std::move(options));
}

Store::~Store() = default;
Store::Store(Store&&) noexcept = default;
Store& Store::operator=(Store&&) noexcept = default;

namespace {
store::StoreRequest make(store::Op op, std::vector<std::string> keys,
                         std::vector<store::Bytes> values = {}, std::int64_t amount = 0) {
  store::StoreRequest request;
  request.op = op;
  request.keys = std::move(keys);
  request.values = std::move(values);
  request.amount = amount;
  return request;
}
}  // namespace

void Store::set(const std::string& key, const Bytes& value) {
  impl_->perform(make(store::Op::set, {key}, {value}), timeout());
}

void Store::set(const std::string& key, std::string_view value) {
  set(key, Bytes(value.begin(), value.end()));
}

Store::Bytes Store::get(const std::string& key) {
  return get(key, timeout());
}

Store::Bytes Store::get(const std::string& key, milliseconds timeout) {
  auto response = impl_->perform(make(store::Op::get, {key}), timeout);
  if (response.values.size() != 1) {
    throw StoreError(StoreErrorCode::unavailable, "get('" + key + "'): malformed answer");
  }
  return std::move(response.values.front());
}

std::vector<Store::Bytes> Store::multi_get(const std::vector<std::string>& keys) {
  if (keys.empty()) return {};
  auto response = impl_->perform(make(store::Op::get, keys), timeout());
  if (response.values.size() != keys.size()) {
    throw StoreError(StoreErrorCode::unavailable, "multi_get: malformed answer");
  }
  return std::move(response.values);
}

void Store::wait(const std::vector<std::string>& keys) {
  wait(keys, timeout());
}

void Store::wait(const std::vector<std::string>& keys, milliseconds timeout) {
  if (keys.empty()) return;
  impl_->perform(make(store::Op::wait, keys), timeout);
}

std::int64_t Store::add(const std::string& key, std::int64_t amount) {
  return impl_->perform(make(store::Op::add, {key}, {}, amount), timeout()).number;
}

bool Store::check(const std::vector<std::string>& keys) {
  if (keys.empty()) return true;
  return impl_->perform(make(store::Op::check, keys), timeout()).number != 0;
}

Store::Bytes Store::compare_set(const std::string& key, const Bytes& expected,
                                const Bytes& desired) {
  auto response =
      impl_->perform(make(store::Op::compare_set, {key}, {expected, desired}), timeout());
  if (response.values.size() != 1) {
    throw StoreError(StoreErrorCode::unavailable, "compare_set('" + key + "'): malformed answer");
  }
  return std::move(response.values.front());
}

bool Store::delete_key(const std::string& key) {
  return impl_->perform(make(store::Op::delete_key, {key}), timeout()).number != 0;
}

std::int64_t Store::num_keys() {
  return impl_->perform(make(store::Op::num_keys, {}), timeout()).number;
}

std::vector<StoreMemberStats> Store::member_stats() {
  const auto response = impl_->perform(make(store::Op::stats, {}), timeout());
  std::vector<StoreMemberStats> members;
  for (const auto& value : response.values) {
    const auto stats = store::decode_member_stats(value);
    if (!stats) throw StoreError(StoreErrorCode::unavailable, "stats: malformed answer");
    members.push_back(StoreMemberStats{stats->member, stats->home_requests, stats->client_requests,
                                       stats->forwarded, stats->keys});
  }
  std::sort(members.begin(), members.end(),
            [](const auto& a, const auto& b) { return a.member < b.member; });
  return members;
}

milliseconds Store::timeout() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->options.timeout;
}

void Store::set_timeout(milliseconds timeout) {
  std::lock_guard lock(impl_->mutex);
  impl_->options.timeout = timeout;
}

const std::string& Store::agent() const {
  return impl_->options.agent;
}

void Store::set_key_file(const std::string& path) {
  std::lock_guard lock(impl_->mutex);
  impl_->keys.load(path);
  impl_->options.key_file = path;
  if (impl_->transport) impl_->transport->set_keyring(impl_->keys.current(Clock::now()));
}

std::string Store::key_file() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->options.key_file;
}

}  // namespace gossip_rdzv
