// gossip_rdzv::Node: checks the config, resolves seeds, binds the transport, fills the
// core's config and turns the runtime's outcome into an Assignment or an Error that names
// the cause and the fix.
#include "gossip_rdzv/node.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <future>
#include <iterator>
#include <mutex>
#include <random>
#include <regex>
#include <variant>

#include <spdlog/fmt/fmt.h>

#include "output/interface.hpp"
#include "protocol/codec.hpp"
#include "protocol/core.hpp"
#include "protocol/endpoint.hpp"
#include "runtime/runtime.hpp"
#include "store/store_codec.hpp"
#include "store/store_service.hpp"
#include "transport/file_descriptor.hpp"
#include "transport/port_holder.hpp"
#include "transport/socket_address.hpp"
#include "transport/tcp_probe.hpp"
#include "transport/zmq_transport.hpp"

namespace gossip_rdzv {

std::uint32_t Progress::alive() const {
  return static_cast<std::uint32_t>(std::count_if(
      members.begin(), members.end(), [](const MemberProgress& m) { return m.status == "alive"; }));
}

namespace {

using Clock = std::chrono::steady_clock;
using protocol::Endpoint;

// The documented default gossip port (config.hpp): a seed given without ":PORT" uses it.
constexpr std::uint16_t kDefaultPort = 29400;
// One TCP connection attempt per silent seed when explaining a timeout. On a LAN, an
// address with no host behind it fails with EHOSTUNREACH only after ARP gives up (~3 s):
// a shorter probe would report that "no route" as a firewall dropping packets.
constexpr milliseconds kSeedProbeTimeout{4000};
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

bool is_wildcard(const std::string& host) {
  return host.empty() || host == "0.0.0.0" || host == "::" || host == "[::]" || host == "*";
}

std::string endpoint_text(const std::string& host, std::uint16_t port) {
  return protocol::to_string(Endpoint{host, port, is_ipv6(host)});
}

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

std::string seconds_text(milliseconds duration) {
  const double seconds = static_cast<double>(duration.count()) / 1000.0;
  return seconds < 10 ? fmt::format("{:.1f} s", seconds) : fmt::format("{:.0f} s", seconds);
}

std::string sizes_text(std::uint32_t min_nodes, std::uint32_t max_nodes) {
  return min_nodes == max_nodes ? std::to_string(min_nodes)
                                : std::to_string(min_nodes) + ":" + std::to_string(max_nodes);
}

// ---- configuration ---------------------------------------------------------------------------

std::optional<Endpoint> parse_seed(const std::string& text, std::string* error) {
  protocol::EndpointRules rules;
  rules.default_port = kDefaultPort;
  return protocol::parse_endpoint(text, error, rules);
}

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

void validate(const Config& config) {
  check_run_id(config.run_id);
  check_sizes(config);
  check_seeds(config);
  if (config.join_timeout <= milliseconds::zero()) {
    throw Error(ErrorCode::usage, "join_timeout must be positive, e.g. --join-timeout 10m");
  }
}

// ---- seeds -------------------------------------------------------------------------------

struct SeedAddress {
  std::string text;      ///< as the user gave it ("node0:29400")
  Endpoint given;        ///< parsed, host as given
  std::string ip;        ///< the address it resolves to
  std::string endpoint;  ///< numeric "ip:port", as handed to the core
};

/// The numeric address `host` resolves to, preferring the family we listen on (a name such
/// as localhost can resolve to ::1 first while we only listen on IPv4).
std::optional<std::string> resolve_host(const std::string& host, bool prefer_ipv6,
                                        std::string* error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* raw = nullptr;
  const int status = ::getaddrinfo(host.c_str(), nullptr, &hints, &raw);
  if (status != 0) {
    if (error) *error = ::gai_strerror(status);
    return std::nullopt;
  }
  std::unique_ptr<addrinfo, void (*)(addrinfo*)> list(raw, ::freeaddrinfo);
  const int preferred = prefer_ipv6 ? AF_INET6 : AF_INET;
  const addrinfo* chosen = list.get();
  for (const addrinfo* a = list.get(); a != nullptr; a = a->ai_next) {
    if (a->ai_family == preferred) {
      chosen = a;
      break;
    }
  }
  return numeric_host(chosen->ai_addr, chosen->ai_addrlen);
}

std::vector<SeedAddress> resolve_seeds(const Config& config, spdlog::logger& log) {
  std::vector<SeedAddress> resolved;
  std::string first_failure;
  for (const auto& text : config.seeds) {
    const Endpoint given = *parse_seed(text, nullptr);
    std::string why;
    const auto ip = resolve_host(given.host, is_ipv6(config.listen_host), &why);
    if (!ip) {
      log.warn("seed '{}' does not resolve ({}): skipping it", text, why);
      if (first_failure.empty()) {
        first_failure = "seed name '" + given.host + "' does not resolve (getaddrinfo: " + why +
                        "): check the spelling, /etc/hosts or DNS";
      }
      continue;
    }
    resolved.push_back(SeedAddress{text, given, *ip, endpoint_text(*ip, given.port)});
  }
  if (resolved.empty() && !config.seeds.empty()) {
    throw Error(ErrorCode::seed_unresolved, first_failure);
  }
  return resolved;
}

/// The address peers should dial: given, or the one we listen on, or the one the kernel
/// uses toward the first seed.
std::string choose_advertise_host(const Config& config, const std::vector<SeedAddress>& seeds,
                                  spdlog::logger& log) {
  if (!config.advertise_host.empty()) return config.advertise_host;
  if (!is_wildcard(config.listen_host)) {
    // ZeroMQ also binds to an interface name ("eth0"); peers need its address instead.
    if (auto address = output::address_of_interface(config.listen_host, false)) return *address;
    return config.listen_host;
  }
  const char* fallback_target = is_ipv6(config.listen_host) ? "2001:db8::1" : "192.0.2.1";
  std::optional<std::string> chosen;
  if (!seeds.empty()) chosen = route_source(seeds.front().ip);
  // A seed *name* resolving to loopback on the seed machine itself (Debian maps the host
  // name to 127.0.1.1) must not make it advertise loopback to the other machines.
  if (chosen && is_loopback(*chosen) && !is_loopback(seeds.front().given.host) &&
      seeds.front().given.host != "localhost") {
    if (auto routed = route_source(fallback_target); routed && !is_loopback(*routed)) {
      log.warn(
          "seed '{}' resolves to loopback {} here; advertising {} instead (set "
          "--advertise to override)",
          seeds.front().text, seeds.front().ip, *routed);
      chosen = routed;
    }
  }
  if (!chosen) chosen = route_source(fallback_target);
  return chosen.value_or("127.0.0.1");
}

/// The seeds minus this node itself: the same command runs on every node, seed included.
std::vector<SeedAddress> without_self(std::vector<SeedAddress> seeds, std::uint16_t bound_port,
                                      const std::string& advertise_host) {
  std::erase_if(seeds, [&](const SeedAddress& seed) {
    return seed.given.port == bound_port && (seed.ip == advertise_host || is_local_ip(seed.ip));
  });
  return seeds;
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

// ---- diagnosis ---------------------------------------------------------------------------

std::string explain_silent_seed(const std::string& host, std::uint16_t port) {
  const std::string where = endpoint_text(host, port);
  const auto probe = transport::probe_tcp(host, port, kSeedProbeTimeout);
  switch (probe.outcome) {
    case transport::ProbeOutcome::refused:
      return "nothing listens on " + where + ": start the seed first or fix the port in --seed";
    case transport::ProbeOutcome::timed_out:
      return fmt::format(
          "{} does not answer: a firewall may drop traffic to port {}; open it or check with "
          "`nc -vz {} {}`",
          where, port, host, port);
    case transport::ProbeOutcome::unreachable:
      return "no route to " + host + " (" + probe.detail + ")";
    case transport::ProbeOutcome::connected:
      return where +
             " accepts connections but never answered as a gossip-rdzv seed: is it another "
             "service, or a different --run-id/version?";
    case transport::ProbeOutcome::unresolved:
      return "seed name '" + host + "' does not resolve (" + probe.detail + ")";
  }
  return where + " did not answer";
}

/// One explanation per seed, probed in parallel so the report takes one probe timeout.
std::string explain_silent_seeds(const std::vector<SeedAddress>& seeds) {
  std::vector<std::future<std::string>> probes;
  for (const auto& seed : seeds) {
    probes.push_back(std::async(std::launch::async, [&seed] {
      return explain_silent_seed(seed.given.host, seed.given.port);
    }));
  }
  std::string text;
  for (auto& probe : probes) text += (text.empty() ? "" : "; ") + probe.get();
  return text;
}

const char* status_text(protocol::MemberStatus status) {
  switch (status) {
    case protocol::MemberStatus::alive:
      return "alive";
    case protocol::MemberStatus::suspect:
      return "suspect";
    case protocol::MemberStatus::dead:
      return "dead";
  }
  return "unknown";
}

std::string member_name(const protocol::Announcement& ann) {
  return runtime::printable(ann.hostname) + " " + runtime::printable(ann.endpoint);
}

/// `subject` is who was refused: "this node", or "the query" for query_members.
Error refusal_error(const protocol::PeerRefused& wire_refusal, const std::string& run_id,
                    const std::string& subject = "this node") {
  const std::string peer = runtime::printable(wire_refusal.peer);
  const std::string detail = runtime::printable(wire_refusal.detail);
  if (wire_refusal.reason == protocol::RefuseReason::run_id_mismatch) {
    return Error(ErrorCode::run_id_mismatch,
                 peer + " refused " + subject + ": " + detail +
                     ". Use the same --run-id on every node of the job (" + subject + " has '" +
                     run_id + "')");
  }
  const std::string what = wire_refusal.by_us ? peer + " speaks another protocol version: "
                                              : peer + " refused " + subject + ": ";
  return Error(ErrorCode::version_mismatch,
               what + detail +
                   fmt::format(". Run the same gossip-rdzv version on every node (this one "
                               "speaks protocol version {})",
                               protocol::kProtocolVersion));
}

/// A refusal that settles the question "will this seed ever let us in": it refused us, or it
/// speaks a version we cannot read.
bool is_decisive(const protocol::PeerRefused& refusal) {
  return !refusal.by_us || refusal.reason == protocol::RefuseReason::version_mismatch;
}

std::vector<protocol::PeerRefused> decisive_refusals(const runtime::RuntimeState& state) {
  std::vector<protocol::PeerRefused> out;
  std::copy_if(state.refusals.begin(), state.refusals.end(), std::back_inserter(out), is_decisive);
  return out;
}

/// Before joining we only talk to seeds, so once as many seeds have refused as we have,
/// waiting longer cannot help.
bool refused_by_every_seed(const runtime::RuntimeState& state, std::size_t seed_count) {
  return !state.joined && seed_count > 0 && decisive_refusals(state).size() >= seed_count;
}

struct JoinReport {
  std::vector<std::string> present;
  std::vector<std::string> silent;
};

const protocol::UnreachablePeer* unanswered_at(const protocol::Snapshot& snapshot,
                                               const std::string& endpoint) {
  for (const auto& peer : snapshot.unreachable) {
    if (peer.endpoint == endpoint) return &peer;
  }
  return nullptr;
}

/// It runs (it keeps sending) but does not answer at its advertised endpoint.
bool reachable_only_one_way(const protocol::UnreachablePeer& peer) {
  return peer.heard_meanwhile && peer.unanswered >= protocol::UnreachablePeer::kReportAfter;
}

JoinReport classify_members(const protocol::Snapshot& snapshot, protocol::Time now) {
  JoinReport report;
  for (const auto& member : snapshot.members) {
    if (member.status == protocol::MemberStatus::alive) {
      report.present.push_back(member_name(member.ann));
      continue;
    }
    std::string line = member_name(member.ann) + " (" + status_text(member.status) + ", ";
    if (member.last_heard > protocol::Time::zero()) {
      line += "last heard " +
              seconds_text(std::chrono::duration_cast<milliseconds>(now - member.last_heard)) +
              " ago";
    } else {
      line += "never heard directly";
    }
    if (const auto* peer = unanswered_at(snapshot, member.ann.endpoint)) {
      line += fmt::format(", {} messages there unanswered", peer->unanswered);
    }
    if (!member.last_heard_via.empty()) {
      line += ", last news via " + runtime::printable(member.last_heard_via);
    }
    report.silent.push_back(line + ")");
  }
  return report;
}

std::string join_list(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

/// "A", "A and B", "A, B and C".
std::string and_list(const std::vector<std::string>& items) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += i + 1 == items.size() ? " and " : ", ";
    out += items[i];
  }
  return out;
}

std::string sentence_case(std::string text) {
  if (!text.empty()) text[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(text[0])));
  return text;
}

/// What peers told this node about its own endpoint, or "" when nobody did.
std::string told_unreachable_text(const runtime::RuntimeState& state, const std::string& self) {
  if (state.unreachable_reports.empty()) return "";
  std::vector<std::string> reporters;
  for (const auto& report : state.unreachable_reports) {
    reporters.push_back(runtime::printable(report.reporter));
  }
  return fmt::format("peers cannot reach this node at {}: {} got no answer there; {}", self,
                     and_list(reporters), runtime::reachability_advice(self));
}

/// The members whose endpoint this node gets no answer from, or "".
std::string unreachable_peers_text(const protocol::Snapshot& snapshot, protocol::Time now) {
  std::vector<std::string> items;
  for (const auto& peer : snapshot.unreachable) {
    if (!reachable_only_one_way(peer)) continue;  // or it stopped: "Seen and then silent"
    std::string name = runtime::printable(peer.endpoint);
    for (const auto& member : snapshot.members) {
      if (member.ann.endpoint == peer.endpoint) name = member_name(member.ann);
    }
    items.push_back(fmt::format(
        "{} ({} messages unanswered over {} while it kept sending{})", name, peer.unanswered,
        seconds_text(std::chrono::duration_cast<milliseconds>(now - peer.since)),
        peer.told ? "; it was told" : ""));
  }
  if (items.empty()) return "";
  return "This node gets no answer at the advertised address of " + join_list(items) +
         ": their address does not work from here (wrong --advertise, or a firewall drops "
         "inbound traffic to their gossip port)";
}

Error join_timeout_error(const Config& config, const protocol::Snapshot& snapshot,
                         protocol::Time now, const std::string& told) {
  const JoinReport report = classify_members(snapshot, now);
  const auto present = static_cast<std::uint32_t>(report.present.size());
  std::string text = fmt::format(
      "timed out after {}: {} of {} nodes joined ({})", seconds_text(config.join_timeout), present,
      sizes_text(config.min_nodes, config.max_nodes), join_list(report.present));
  if (present < config.min_nodes) {
    text += fmt::format("; {} still missing: start them with the same --seed and --run-id {}",
                        config.min_nodes - present, config.run_id);
  } else {
    text +=
        "; enough nodes are present but they did not agree on a view in time (see the log "
        "with GOSSIP_RDZV_LOG=debug)";
  }
  if (!report.silent.empty()) text += ". Seen and then silent: " + join_list(report.silent);
  if (const auto peers = unreachable_peers_text(snapshot, now); !peers.empty()) {
    text += ". " + peers;
  }
  if (!told.empty()) text += ". " + sentence_case(told);
  return Error(ErrorCode::join_timeout, text);
}

Error not_admitted_error(const Config& config, const protocol::NotAdmitted& event) {
  if (event.previous_process_in_view) {
    return Error(ErrorCode::not_admitted,
                 fmt::format("round {} was agreed with this node's previous process (it "
                             "restarted after the others agreed); restart the other nodes too "
                             "so a new round forms",
                             event.round));
  }
  return Error(ErrorCode::not_admitted,
               fmt::format("this node was not admitted: the round closed with {} nodes "
                           "(--nnodes {}) without it, because more nodes were started with run "
                           "id '{}' than the job takes. Start at most {} nodes, raise the MAX "
                           "of --nnodes, or give this node another --run-id",
                           event.view_size, sizes_text(config.min_nodes, config.max_nodes),
                           config.run_id, config.max_nodes));
}

std::vector<MemberProgress> progress_rows(const protocol::Snapshot& snapshot, protocol::Time now) {
  std::vector<MemberProgress> rows;
  for (const auto& member : snapshot.members) {
    MemberProgress row{member.ann.endpoint, member.ann.hostname, status_text(member.status), {}};
    if (member.last_heard > protocol::Time::zero()) {
      row.last_heard = std::chrono::duration_cast<milliseconds>(now - member.last_heard);
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string seed_list_text(const std::vector<SeedAddress>& seeds) {
  if (seeds.empty()) return "none (this node is the seed)";
  std::vector<std::string> endpoints;
  for (const auto& seed : seeds) endpoints.push_back(seed.endpoint);
  return join_list(endpoints);
}

std::string self_advertise_for(const std::string& target_ip) {
  return route_source(target_ip).value_or(is_ipv6(target_ip) ? "::1" : "127.0.0.1");
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
  impl_->seeds = without_self(std::move(resolved), port, advertise_host);
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
  progress.committed = snapshot.committed;
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
  // The core ends its own grace period; the extra second only covers loop latency.
  const auto deadline = Clock::now() + impl_->config.timing.commit_grace + std::chrono::seconds(1);
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
  for (const auto& record : reply->members) {
    rows.push_back(MemberProgress{record.ann.endpoint, record.ann.hostname,
                                  status_text(record.status), std::nullopt});
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
