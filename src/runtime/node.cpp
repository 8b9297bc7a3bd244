// gossip_rdzv::Node: checks the config, resolves seeds (seed_resolver.hpp), binds the
// transport, fills the core's config and turns the runtime's outcome into an Assignment or
// an Error that names the cause and the fix (failure_report.hpp).
#include "gossip_rdzv/node.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <random>
#include <regex>
#include <utility>
#include <variant>

#include <spdlog/fmt/fmt.h>

#include "protocol/codec.hpp"
#include "protocol/core.hpp"
#include "protocol/endpoint.hpp"
#include "runtime/failure_report.hpp"
#include "runtime/runtime.hpp"
#include "runtime/seed_resolver.hpp"
#include "store/store_codec.hpp"
#include "store/store_service.hpp"
#include "transport/file_descriptor.hpp"
#include "transport/port_holder.hpp"
#include "transport/socket_address.hpp"
#include "transport/zmq_transport.hpp"

namespace gossip_rdzv {

std::uint32_t Progress::alive() const {
  return static_cast<std::uint32_t>(std::count_if(
      members.begin(), members.end(), [](const MemberProgress& m) { return m.status == "alive"; }));
}

namespace {

using Clock = std::chrono::steady_clock;
using protocol::Endpoint;

// How often query_members repeats its question: the first may wait for the connection.
constexpr milliseconds kQueryResendInterval{500};
// The core's seen-by bitsets hold at most this many members (codec limit).
constexpr std::uint32_t kMaxNodes = static_cast<std::uint32_t>(protocol::kMaxListLength);

// ---- small socket helpers ------------------------------------------------------------------

using transport::FileDescriptor;
using transport::is_ipv6;
using transport::is_local_ip;
using transport::is_loopback;
using transport::numeric_address;
using transport::numeric_host;
using transport::route_source;
using transport::SocketAddress;

// Seed resolution (seed_resolver.hpp) and the texts of failures (failure_report.hpp).
using runtime::choose_advertise_host;
using runtime::decisive_refusals;
using runtime::endpoint_text;
using runtime::explain_silent_seed;
using runtime::explain_silent_seeds;
using runtime::is_wildcard;
using runtime::join_timeout_error;
using runtime::not_admitted_error;
using runtime::parse_seed;
using runtime::progress_rows;
using runtime::reachable_only_one_way;
using runtime::refusal_error;
using runtime::refused_by_every_seed;
using runtime::resolve_host;
using runtime::resolve_seeds;
using runtime::seconds_text;
using runtime::seed_list_text;
using runtime::SeedAddress;
using runtime::self_advertise_for;
using runtime::sizes_text;
using runtime::status_text;
using runtime::told_unreachable_text;
using runtime::unanswered_at;
using runtime::without_self;

/// Binds TCP `ip`:`port` (port 0: the OS picks) and returns the port, or the errno.
std::variant<std::uint16_t, int> try_bind_tcp(const std::string& ip, std::uint16_t port) {
  auto address = numeric_address(ip, port);
  if (!address) return EINVAL;
  FileDescriptor fd(::socket(address->family(), SOCK_STREAM | SOCK_CLOEXEC, 0));
  const int reuse = 1;  // as torch's TCPStore does: a TIME_WAIT leftover is no conflict
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &reuse, sizeof reuse);
  if (fd.get() < 0 || ::bind(fd.get(), address->get(), address->length) != 0) return errno;
  socklen_t length = sizeof address->storage;
  ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&address->storage), &length);
  const auto* in = address->get();
  const std::uint16_t bound = in->sa_family == AF_INET
                                  ? ntohs(reinterpret_cast<const sockaddr_in*>(in)->sin_port)
                                  : ntohs(reinterpret_cast<const sockaddr_in6*>(in)->sin6_port);
  return bound;
}

std::uint64_t random_u64() {
  std::random_device device;
  return (static_cast<std::uint64_t>(device()) << 32) ^ device();
}

std::string local_hostname() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

// ---- configuration ---------------------------------------------------------------------------

void check_run_id(const std::string& run_id) {
  static const std::regex allowed("[A-Za-z0-9._-]{1,64}");
  if (run_id.empty()) {
    throw Error(ErrorCode::usage,
                "run_id is empty: give every node of the job the same --run-id, e.g. job42");
  }
  if (!std::regex_match(run_id, allowed)) {
    throw Error(ErrorCode::usage, "run_id '" + run_id +
                                      "' is invalid: use 1 to 64 letters, digits, '.', '_' or "
                                      "'-', the same on every node");
  }
}

void check_sizes(const Config& config) {
  if (config.min_nodes < 1) {
    throw Error(ErrorCode::usage, "min_nodes is 0: --nnodes needs at least 1 node");
  }
  if (config.min_nodes > config.max_nodes) {
    throw Error(ErrorCode::usage, fmt::format("min_nodes ({}) is larger than max_nodes ({}): use "
                                              "--nnodes MIN:MAX with MIN <= MAX",
                                              config.min_nodes, config.max_nodes));
  }
  if (config.max_nodes > kMaxNodes) {
    throw Error(ErrorCode::usage,
                fmt::format("max_nodes {} is more than the {} nodes a round can hold: use a "
                            "smaller --nnodes",
                            config.max_nodes, kMaxNodes));
  }
  if (config.nproc_per_node < 1) {
    throw Error(ErrorCode::usage, "nproc_per_node is 0: --nproc-per-node needs at least 1");
  }
  if (config.node_rank < -1 ||
      (config.node_rank >= 0 && static_cast<std::uint32_t>(config.node_rank) >= config.max_nodes)) {
    throw Error(ErrorCode::usage,
                fmt::format("node_rank {} is out of range: use --node-rank 0..{} (below "
                            "--nnodes {}), or leave it out",
                            config.node_rank, config.max_nodes - 1, config.max_nodes));
  }
}

void check_seeds(const Config& config) {
  if (config.seeds.empty() && !config.dedicated_seed) {
    throw Error(ErrorCode::usage,
                "no seed given: pass --seed HOST:PORT, the same on every node (it may be this "
                "node itself)");
  }
  for (const auto& seed : config.seeds) {
    std::string why;
    if (!parse_seed(seed, &why)) {
      throw Error(ErrorCode::usage, "seed '" + seed + "' is not HOST:PORT: " + why);
    }
  }
}

// A zero period would make the core busy-loop; a zero fan-out would stop gossip and leave
// member seeds that never meet each other (docs/protocol.md, "Several seeds").
void check_timing(const Timing& timing) {
  const std::pair<const char*, milliseconds> periods[] = {
      {"gossip_interval", timing.gossip_interval},
      {"probe_interval", timing.probe_interval},
      {"probe_timeout", timing.probe_timeout},
      {"push_pull_interval", timing.push_pull_interval},
      {"join_backoff_initial", timing.join_backoff_initial},
      {"join_backoff_max", timing.join_backoff_max}};
  for (const auto& [name, period] : periods) {
    if (period <= milliseconds::zero()) {
      throw Error(ErrorCode::usage,
                  fmt::format("Timing::{} must be positive, not {} ms: set it above zero, or "
                              "start from Timing::lan(), local() or wan()",
                              name, period.count()));
    }
  }
  if (timing.probe_rounds == 0) {
    throw Error(ErrorCode::usage,
                "Timing::probe_rounds must be at least 1 (the default is 2): a member is "
                "suspected after this many unanswered probe periods in a row");
  }
  if (timing.gossip_fanout == 0) {
    throw Error(ErrorCode::usage,
                "Timing::gossip_fanout must be at least 1 (the LAN default is 3): with 0 "
                "no node gossips");
  }
}

void validate(const Config& config) {
  check_run_id(config.run_id);
  check_sizes(config);
  check_seeds(config);
  check_timing(config.timing);
  if (config.join_timeout <= milliseconds::zero()) {
    throw Error(ErrorCode::usage, "join_timeout must be positive, e.g. --join-timeout 10m");
  }
}

std::uint16_t choose_master_port(const Config& config, const std::string& advertise_host,
                                 spdlog::logger& log) {
  const std::string any = is_ipv6(advertise_host) ? "::" : "0.0.0.0";
  const auto result = try_bind_tcp(any, config.master_port);
  if (const auto* port = std::get_if<std::uint16_t>(&result)) return *port;
  const int error = std::get<int>(result);
  if (config.master_port == 0) {
    throw Error(ErrorCode::listen_failed,
                std::string("cannot find a free port for MASTER_PORT: ") + std::strerror(error));
  }
  log.warn(
      "master port {} is already in use {}: if this node gets node rank 0 the workers "
      "cannot start their process group; stop that process or pick another --master-port",
      config.master_port, transport::describe_port_holder(config.master_port));
  return config.master_port;
}

// ---- the store -------------------------------------------------------------------------------

/// Serves the store (docs/store.md) on the gossip socket: the keys this node is home for,
/// and the requests of its local workers.
class StoreSidecar : public runtime::Sidecar {
 public:
  StoreSidecar(const std::string& endpoint, const std::string& run_id)
      : service_(store::ServiceOptions{endpoint, run_id}), log_(runtime::logger()) {}

  bool claims(const transport::Bytes& bytes) const override {
    return store::is_store_message(bytes.data(), bytes.size());
  }
  void on_bytes(protocol::Time now, const transport::Bytes& bytes) override {
    service_.on_bytes(now, bytes.data(), bytes.size());
  }
  void on_committed(protocol::Time now, const Assignment& assignment) override {
    service_.on_committed(now, assignment);
  }
  void on_member_dead(const std::string& endpoint) override { service_.on_member_dead(endpoint); }
  void on_member_alive(const std::string& endpoint) override { service_.on_member_alive(endpoint); }
  void on_tick(protocol::Time now) override {
    service_.on_tick(now);
    while (auto warning = service_.poll_warning()) log_->warn("{}", runtime::printable(*warning));
  }
  std::vector<Send> take_sends() override {
    std::vector<Send> sends;
    while (auto out = service_.poll_send()) sends.push_back(Send{out->to, std::move(out->bytes)});
    return sends;
  }
  std::optional<protocol::Time> next_wakeup() const override { return service_.next_wakeup(); }

 private:
  store::StoreService service_;
  std::shared_ptr<spdlog::logger> log_;
};

}  // namespace

// ---- Node ------------------------------------------------------------------------------------

struct Node::Impl {
  Config config;
  std::vector<SeedAddress> seeds;  ///< resolved, without this node: what the core dials
  bool listed_as_seed = false;     ///< the seed list named this node
  std::unique_ptr<runtime::Runtime> runtime;
  std::string endpoint;
  Clock::time_point started_at;
  std::mutex lifecycle;  ///< serialises start() and stop()

  runtime::Runtime& running(const char* call) const {
    if (!runtime) {
      throw Error(ErrorCode::usage, std::string("Node::") + call + "() needs start() first");
    }
    return *runtime;
  }
  protocol::CoreConfig core_config(const std::string& advertise_host) const;
  Error timeout_error(const runtime::RuntimeState& state) const;
};

protocol::CoreConfig Node::Impl::core_config(const std::string& advertise_host) const {
  auto log = runtime::logger();
  protocol::CoreConfig core;
  core.self.endpoint = endpoint;
  core.self.node_id = random_u64();
  core.self.generation = static_cast<std::uint64_t>(
      std::chrono::duration_cast<milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
  core.self.host = advertise_host;
  core.self.hostname = config.hostname.empty() ? local_hostname() : config.hostname;
  core.self.nproc = config.nproc_per_node;
  core.self.rank_hint = config.node_rank;
  core.self.master_port =
      config.dedicated_seed ? 0 : choose_master_port(config, advertise_host, *log);
  core.self.min_nodes = config.min_nodes;
  core.self.max_nodes = config.max_nodes;
  core.run_id = config.run_id;
  for (const auto& seed : seeds) core.seeds.push_back(seed.endpoint);
  // The core must know it is one of the seeds: a member seed meets every other seed and
  // hands its joiners to the collectors (docs/protocol.md, "Several seeds"). It removes its
  // own endpoint again.
  if (listed_as_seed) core.seeds.push_back(endpoint);
  core.min_nodes = config.min_nodes;
  core.max_nodes = config.max_nodes;
  core.timing = config.timing;
  core.last_call = config.last_call;
  core.rng_seed = config.rng_seed != 0 ? config.rng_seed : random_u64();
  core.seed_only = config.dedicated_seed;
  return core;
}

Error Node::Impl::timeout_error(const runtime::RuntimeState& state) const {
  const auto refusals = decisive_refusals(state);
  if (!state.joined && !refusals.empty()) return refusal_error(refusals.front(), config.run_id);
  const std::string told = told_unreachable_text(state, endpoint);
  if (!state.joined && !told.empty()) {
    // The seed answered, but only to say that its answers cannot reach us.
    return Error(ErrorCode::seed_unreachable, "no seed let this node join within " +
                                                  seconds_text(config.join_timeout) + ": " + told);
  }
  if (!state.joined) {
    return Error(ErrorCode::seed_unreachable, "no seed answered within " +
                                                  seconds_text(config.join_timeout) + ": " +
                                                  explain_silent_seeds(seeds));
  }
  return join_timeout_error(config, runtime->snapshot(), runtime->now(), told);
}

Node::Node(Config config) : impl_(std::make_unique<Impl>()) {
  validate(config);
  impl_->config = std::move(config);
}

Node::~Node() {
  stop();
}

void Node::start() {
  std::lock_guard lock(impl_->lifecycle);
  if (impl_->runtime) throw Error(ErrorCode::usage, "Node::start() was already called");
  const Config& config = impl_->config;
  auto log = runtime::logger();
  if (config.max_nodes > 1 && config.min_nodes * 2 <= config.max_nodes) {
    log->warn(
        "--nnodes {}: with MIN <= MAX/2 two separate groups of this run may form "
        "if the nodes cannot all reach each other; see docs/protocol.md",
        sizes_text(config.min_nodes, config.max_nodes));
  }
  auto resolved = resolve_seeds(config, *log);
  // 0.0.0.0 (the default) takes IPv4 only: on an IPv6-only network the peers could not dial
  // us. When every seed resolves only to IPv6 (resolve_seeds prefers IPv4), bind [::], which
  // takes both families, so such a network works without --listen [::]:PORT.
  if (config.listen_host == "0.0.0.0" && !resolved.empty() &&
      std::all_of(resolved.begin(), resolved.end(),
                  [](const SeedAddress& seed) { return is_ipv6(seed.ip); })) {
    log->info("every seed resolves only to IPv6 ({}): listening on [::] instead of 0.0.0.0",
              seed_list_text(resolved));
    impl_->config.listen_host = "::";
  }
  transport::TransportOptions options;
  options.max_message_bytes = static_cast<std::int64_t>(protocol::kMaxMessageBytes);
  // A seed that starts a little after its joiners is normal; ZeroMQ's first reconnect should
  // not be slower than the protocol's own first join retry (20 ms with the local profile).
  options.reconnect_initial =
      std::min(options.reconnect_initial, config.timing.join_backoff_initial);
  auto transport =
      std::make_unique<transport::ZmqTransport>(config.listen_host, config.listen_port, options);
  const std::uint16_t port = transport->bound_port();
  const std::string advertise_host = choose_advertise_host(config, resolved, *log);
  impl_->endpoint = endpoint_text(advertise_host, port);
  const std::size_t listed = resolved.size();
  impl_->seeds = without_self(std::move(resolved), port, advertise_host);
  impl_->listed_as_seed = impl_->seeds.size() < listed;
  auto core_config = impl_->core_config(advertise_host);  // may throw: nothing runs yet
  log->info("listening as {} (run '{}', --nnodes {}), seeds: {}", impl_->endpoint, config.run_id,
            sizes_text(config.min_nodes, config.max_nodes), seed_list_text(impl_->seeds));
  impl_->started_at = Clock::now();
  auto store = config.dedicated_seed
                   ? nullptr
                   : std::make_unique<StoreSidecar>(impl_->endpoint, config.run_id);
  impl_->runtime = std::make_unique<runtime::Runtime>(std::move(core_config), std::move(transport),
                                                      std::move(store));
  impl_->runtime->start();
}

Assignment Node::wait() {
  runtime::Runtime& runtime = impl_->running("wait");
  if (impl_->config.dedicated_seed) {
    throw Error(ErrorCode::usage, "Node::wait() on a dedicated seed: it never joins a round");
  }
  const std::size_t seed_count = impl_->seeds.size();
  runtime.wait_until(
      [&](const runtime::RuntimeState& s) {
        return s.assignment || s.fatal || s.not_admitted || s.loop_failure || s.stopped ||
               refused_by_every_seed(s, seed_count);
      },
      impl_->started_at + impl_->config.join_timeout);
  const runtime::RuntimeState state = runtime.state();
  if (state.assignment) return *state.assignment;
  if (state.fatal) throw Error(state.fatal->code, state.fatal->message);
  if (state.not_admitted) throw not_admitted_error(impl_->config, *state.not_admitted);
  if (state.stopped) throw Error(ErrorCode::usage, "Node::stop() was called during wait()");
  if (state.loop_failure) {
    throw Error(ErrorCode::internal, "the gossip-rdzv event loop failed: " + *state.loop_failure);
  }
  throw impl_->timeout_error(state);
}

std::optional<Assignment> Node::try_assignment() const {
  if (!impl_->runtime) return std::nullopt;
  return impl_->runtime->state().assignment;
}

Progress Node::progress() const {
  Progress progress;
  progress.min_nodes = impl_->config.min_nodes;
  progress.max_nodes = impl_->config.max_nodes;
  if (!impl_->runtime) return progress;
  const protocol::Snapshot snapshot = impl_->runtime->snapshot();
  progress.joined = snapshot.joined;
  progress.committed = snapshot.commit_reported;
  progress.members = progress_rows(snapshot, impl_->runtime->now());
  progress.endpoint = impl_->endpoint;
  for (auto& row : progress.members) {
    const auto* peer = unanswered_at(snapshot, row.endpoint);
    row.unreachable = peer != nullptr && reachable_only_one_way(*peer);
    if (row.endpoint == progress.endpoint || !row.last_heard) continue;
    progress.last_heard = std::min(progress.last_heard.value_or(*row.last_heard), *row.last_heard);
  }
  for (const auto& report : impl_->runtime->state().unreachable_reports) {
    progress.unreachable_by.push_back(report.reporter);
  }
  return progress;
}

void Node::finish() {
  if (!impl_->runtime || !impl_->runtime->state().assignment) return;
  // The core ends its own stay (done); this bound only guards against a loop that never
  // says so. It must not be shorter than the core's stay: a seed stays
  // max(commit_grace, join_backoff_max) (Core::stay_until), which under the wan profile is
  // the backoff (30 s, against a 15 s grace). The extra second covers loop latency.
  const Timing& timing = impl_->config.timing;
  const bool seed = impl_->listed_as_seed || impl_->seeds.empty();
  const auto stay =
      seed ? std::max(timing.commit_grace, timing.join_backoff_max) : timing.commit_grace;
  const auto deadline = Clock::now() + stay + std::chrono::seconds(1);
  impl_->runtime->wait_until(
      [](const runtime::RuntimeState& s) {
        return s.done || s.stopped || s.loop_failure.has_value();
      },
      deadline);
}

void Node::stop() {
  std::lock_guard lock(impl_->lifecycle);
  if (impl_->runtime) impl_->runtime->stop();
}

std::string Node::endpoint() const {
  return impl_->endpoint;
}

// ---- query_members -------------------------------------------------------------------------

namespace {

struct QueryTarget {
  Endpoint given;
  std::string ip;
};

QueryTarget resolve_query_target(const std::string& endpoint) {
  std::string why;
  const auto given = parse_seed(endpoint, &why);
  if (!given) throw Error(ErrorCode::usage, "'" + endpoint + "' is not HOST:PORT: " + why);
  const auto ip = resolve_host(given->host, given->ipv6, &why);
  if (!ip) {
    throw Error(ErrorCode::seed_unresolved, "name '" + given->host +
                                                "' does not resolve (getaddrinfo: " + why +
                                                "): check the spelling, /etc/hosts or DNS");
  }
  return QueryTarget{*given, *ip};
}

std::optional<std::vector<MemberProgress>> answer_rows(const protocol::DecodeResult& result,
                                                       const std::string& run_id) {
  if (!result.ok()) {
    const auto& error = result.error();
    if (error.kind == protocol::DecodeError::Kind::version_mismatch && error.header) {
      throw Error(
          ErrorCode::version_mismatch,
          fmt::format("{} speaks gossip-rdzv protocol version {}, this program version "
                      "{}: use the same gossip-rdzv version",
                      error.header->sender, error.header->version, protocol::kProtocolVersion));
    }
    return std::nullopt;
  }
  const protocol::Envelope& envelope = result.envelope();
  if (const auto* refuse = std::get_if<protocol::Refuse>(&envelope.body)) {
    throw refusal_error(
        protocol::PeerRefused{envelope.sender, refuse->reason, refuse->detail, false}, run_id,
        "the query");
  }
  const auto* reply = std::get_if<protocol::QueryReply>(&envelope.body);
  if (!reply) return std::nullopt;
  std::vector<MemberProgress> rows;
  for (std::size_t i = 0; i < reply->members.size(); ++i) {
    const auto& record = reply->members[i];
    std::optional<milliseconds> last_heard;
    if (i < reply->last_heard_ms.size() &&
        reply->last_heard_ms[i] != protocol::QueryReply::kNeverHeard &&
        reply->last_heard_ms[i] <= static_cast<std::uint64_t>(milliseconds::max().count())) {
      last_heard = milliseconds(static_cast<milliseconds::rep>(reply->last_heard_ms[i]));
    }
    rows.push_back(MemberProgress{record.ann.endpoint, record.ann.hostname,
                                  status_text(record.status), last_heard});
  }
  return rows;
}

}  // namespace

std::vector<MemberProgress> query_members(const std::string& endpoint, const std::string& run_id,
                                          milliseconds timeout) {
  check_run_id(run_id);
  const QueryTarget target = resolve_query_target(endpoint);
  const std::string source = self_advertise_for(target.ip);
  transport::TransportOptions options;
  options.linger = milliseconds::zero();  // an unanswered query need not outlive this call
  transport::ZmqTransport client(source, 0, options);
  protocol::Envelope query;
  query.run_id = run_id;
  query.sender = endpoint_text(source, client.bound_port());
  query.body = protocol::Query{};
  const auto bytes = protocol::encode(query);
  const std::string destination = endpoint_text(target.ip, target.given.port);

  const auto deadline = Clock::now() + timeout;
  auto next_send = Clock::now();
  while (Clock::now() < deadline) {
    if (Clock::now() >= next_send) {
      client.send(destination, bytes);
      next_send = Clock::now() + kQueryResendInterval;
    }
    const auto wait = std::min(std::chrono::ceil<milliseconds>(next_send - Clock::now()),
                               std::chrono::ceil<milliseconds>(deadline - Clock::now()));
    const auto message = client.receive(std::max(wait, milliseconds(1)));
    if (!message) continue;
    if (auto rows = answer_rows(protocol::decode(*message), run_id)) return *rows;
  }
  throw Error(ErrorCode::seed_unreachable,
              endpoint + " did not answer within " + seconds_text(timeout) + ": " +
                  explain_silent_seed(target.given.host, target.given.port));
}

}  // namespace gossip_rdzv
