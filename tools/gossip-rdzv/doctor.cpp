#include "doctor.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <future>
#include <variant>

#include <spdlog/fmt/fmt.h>

#include "gossip_rdzv/node.hpp"
#include "output/membership_json.hpp"
#include "protocol/endpoint.hpp"
#include "runtime/seed_resolver.hpp"
#include "transport/interface.hpp"
#include "transport/socket_address.hpp"
#include "transport/tcp_bind.hpp"

namespace gossip_rdzv::cli {
namespace {

using std::chrono::milliseconds;

// As join judges them (runtime/seed_resolver.hpp).
using runtime::endpoint_text;
using runtime::is_wildcard;
using transport::is_ipv6;
using transport::is_loopback;

bool is_numeric(const std::string& host) {
  return transport::numeric_address(host, 0).has_value();
}

std::string seconds_text(milliseconds duration) {
  return fmt::format("{:.1f} s", static_cast<double>(duration.count()) / 1000.0);
}

std::string join_list(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

bool is_gossip_rdzv(const std::optional<transport::PortHolder>& holder) {
  return holder && holder->command_line.find("gossip-rdzv") != std::string::npos;
}

DoctorItem item(std::string check, std::string subject, Verdict verdict, std::string finding,
                std::string fix = "", ErrorCode code = ErrorCode::ok) {
  return DoctorItem{std::move(check),   std::move(subject), verdict,
                    std::move(finding), std::move(fix),     code};
}

DoctorItem failure(std::string check, std::string subject, ErrorCode code, std::string finding,
                   std::string fix) {
  return item(std::move(check), std::move(subject), Verdict::fail, std::move(finding),
              std::move(fix), code);
}

// ---- seeds ---------------------------------------------------------------------------------

struct SeedCheck {
  std::string text;  ///< "node0:29400" as given
  protocol::Endpoint given;
  std::string dial_ip;  ///< the address join dials; "" when it does not resolve
  bool usable = false;  ///< join can get in through it
  std::vector<DoctorItem> items;
};

std::string families_text(const std::vector<std::string>& addresses) {
  std::vector<std::string> labelled;
  for (const auto& address : addresses) {
    labelled.push_back(address + (is_ipv6(address) ? " (AAAA)" : " (A)"));
  }
  return join_list(labelled);
}

/// The seeds `seed` stands for once resolved: itself, or one per address when its name has
/// several (as join: transport::seed_addresses), each with the address join dials.
std::vector<SeedCheck> check_resolution(SeedCheck seed, const DoctorOptions& options,
                                        DoctorProbe& probe) {
  const auto resolution = probe.resolve(seed.given.host);
  if (resolution.addresses.empty()) {
    seed.items.push_back(
        failure("resolve", seed.text, ErrorCode::seed_unresolved,
                "seed name '" + seed.given.host +
                    "' does not resolve (getaddrinfo: " + resolution.error + ")",
                "check the spelling, /etc/hosts or DNS (`getent ahosts " + seed.given.host +
                    "`), or give the seed's address, e.g. 10.0.0.5:29400 or [fd00::5]:29400"));
    return {seed};
  }
  const auto ips = transport::seed_addresses(resolution.addresses, is_ipv6(options.listen_host));
  if (is_numeric(seed.given.host)) {
    seed.dial_ip = ips.front();
    seed.items.push_back(item("resolve", seed.text, Verdict::pass,
                              seed.given.host + " is an address; nothing to resolve"));
    return {seed};
  }
  const std::string finding =
      seed.given.host + " resolves to " + families_text(resolution.addresses) +
      (ips.size() == 1 ? "; join dials " + ips.front()
                       : "; join takes each of " + join_list(ips) + " as a seed");
  seed.items.push_back(item("resolve", seed.text, Verdict::pass, finding));
  std::vector<SeedCheck> out;
  for (const auto& ip : ips) {
    SeedCheck one = seed;
    one.dial_ip = ip;
    if (ips.size() > 1) {
      one.text = seed.text + " (" + ip + ")";
      if (!out.empty()) one.items.clear();  // the resolve line once, with the first address
    }
    out.push_back(std::move(one));
  }
  return out;
}

bool is_self(const SeedCheck& seed, const DoctorOptions& options, DoctorProbe& probe) {
  return seed.given.port == options.listen_port && probe.is_local_address(seed.dial_ip);
}

DoctorItem reach_failure(const SeedCheck& seed, const transport::ProbeResult& result,
                         milliseconds timeout) {
  const std::string where = endpoint_text(seed.dial_ip, seed.given.port);
  const std::string port = std::to_string(seed.given.port);
  switch (result.outcome) {
    case transport::ProbeOutcome::refused:
      return failure("reach", seed.text, ErrorCode::seed_unreachable,
                     "nothing listens on " + where + " (connection refused)",
                     "start the seed first or fix the port in --seed; on the seed machine `ss "
                     "-ltnp 'sport = :" +
                         port + "'` shows what listens");
    case transport::ProbeOutcome::timed_out:
      return failure("reach", seed.text, ErrorCode::seed_unreachable,
                     where + " does not answer within " + seconds_text(timeout) +
                         ": packets are dropped, most likely by a firewall (or the host is down)",
                     "open TCP port " + port +
                         " on the seed machine and on this one (`nft list ruleset`, `iptables "
                         "-S`); check with `nc -vz " +
                         seed.dial_ip + " " + port + "`");
    case transport::ProbeOutcome::unreachable:
      return failure("reach", seed.text, ErrorCode::seed_unreachable,
                     "no route to " + seed.dial_ip + " (" + result.detail +
                         "): the address is wrong, or the host is down or not on a network this "
                         "machine reaches",
                     "check the seed address: is it the seed machine's? (`ip route get " +
                         seed.dial_ip + "`, `ip neigh`, `ping " + seed.dial_ip + "`)");
    default:
      return failure("reach", seed.text, ErrorCode::seed_unresolved,
                     "cannot connect to " + where + ": " + result.detail, "check the seed address");
  }
}

std::optional<DoctorItem> self_seed_item(const SeedCheck& seed,
                                         const transport::ProbeResult& result) {
  if (result.outcome == transport::ProbeOutcome::refused) {
    return item("reach", seed.text, Verdict::pass,
                "the seed is this node itself (" + seed.dial_ip +
                    " is local, port = --listen port): join will listen there, nothing runs "
                    "there yet");
  }
  return std::nullopt;
}

void check_handshake(SeedCheck& seed, const DoctorOptions& options, DoctorProbe& probe) {
  const std::string endpoint = endpoint_text(seed.dial_ip, seed.given.port);
  const auto answer = probe.handshake(endpoint, options.run_id, options.timeout);
  if (answer.code == ErrorCode::ok) {
    seed.usable = true;
    seed.items.push_back(item("handshake", seed.text, Verdict::pass,
                              fmt::format("{} answers as gossip-rdzv run '{}': it knows {} "
                                          "member(s), {} alive",
                                          endpoint, options.run_id, answer.members, answer.alive)));
    return;
  }
  std::string fix;
  std::string finding = answer.message;
  switch (answer.code) {
    case ErrorCode::run_id_mismatch:
      fix = "start every node of the job with the same --run-id (this check used --run-id " +
            options.run_id + "); stop leftover nodes of older jobs";
      break;
    case ErrorCode::version_mismatch:
      fix = "install the same gossip-rdzv version on every machine";
      break;
    case ErrorCode::auth_failed:
      fix = options.key_file.empty()
                ? "the seed's job has a key: give doctor and join its --key-file "
                  "(GOSSIP_RDZV_KEY_FILE)"
                : "give every node the same key file (compare `gossip-rdzv keys list "
                  "--key-file " +
                      options.key_file + "` with the seed's), or none if the job has none";
      break;
    case ErrorCode::seed_unreachable:
      finding = endpoint +
                " accepts TCP connections but did not answer the gossip-rdzv query "
                "within " +
                seconds_text(options.timeout);
      fix =
          "check that this port is a gossip-rdzv node or seed (`ss -ltnp` on that machine), "
          "not another service";
      break;
    default:
      fix = "see docs/troubleshooting.md";
  }
  seed.items.push_back(failure("handshake", seed.text, answer.code, finding, fix));
}

/// The seed as given, parsed and resolved: one check per address it stands for.
std::vector<SeedCheck> resolve_seed(const std::string& text, const DoctorOptions& options,
                                    DoctorProbe& probe) {
  SeedCheck seed;
  seed.text = text;
  std::string why;
  auto given = runtime::parse_seed(text, &why);
  if (!given) {
    seed.items.push_back(failure("resolve", text, ErrorCode::usage,
                                 "'" + text + "' is not HOST:PORT: " + why,
                                 "give --seed as HOST:PORT or [IPv6]:PORT"));
    return {seed};
  }
  seed.given = *given;
  return check_resolution(std::move(seed), options, probe);
}

/// Connects to a resolved seed's address and, when it answers, tries the handshake.
SeedCheck check_seed(SeedCheck seed, const DoctorOptions& options, DoctorProbe& probe) {
  if (seed.dial_ip.empty()) return seed;
  const auto reach = probe.connect(seed.dial_ip, seed.given.port, options.timeout);
  if (is_self(seed, options, probe)) {
    if (auto self = self_seed_item(seed, reach)) {
      seed.items.push_back(*self);
      seed.usable = true;
      return seed;
    }
  }
  if (reach.outcome != transport::ProbeOutcome::connected) {
    seed.items.push_back(reach_failure(seed, reach, options.timeout));
    seed.items.push_back(
        item("handshake", seed.text, Verdict::skip, "not tried: the seed cannot be reached"));
    return seed;
  }
  seed.items.push_back(item("reach", seed.text, Verdict::pass,
                            "connected to " + endpoint_text(seed.dial_ip, seed.given.port)));
  check_handshake(seed, options, probe);
  return seed;
}

// With one usable seed, join gets in: a failing other seed only costs retries.
void soften_when_another_seed_works(std::vector<SeedCheck>& seeds) {
  const bool any_usable =
      std::any_of(seeds.begin(), seeds.end(), [](const SeedCheck& s) { return s.usable; });
  if (!any_usable) return;
  for (auto& seed : seeds) {
    for (auto& entry : seed.items) {
      if (entry.verdict != Verdict::fail) continue;
      entry.verdict = Verdict::warn;
      entry.code = ErrorCode::ok;
      entry.fix += " (join can get in through another seed meanwhile)";
    }
  }
}

// ---- local ports ---------------------------------------------------------------------------

std::string bind_ip(const std::string& host, DoctorProbe& probe) {
  if (is_wildcard(host)) return is_ipv6(host) ? "::" : "0.0.0.0";
  if (is_numeric(host)) return host;
  const auto resolution = probe.resolve(host);
  return resolution.addresses.empty() ? host : resolution.addresses.front();
}

DoctorItem port_item(const std::string& check, const std::string& subject, std::uint16_t port,
                     const DoctorProbe::PortState& state, const std::string& host,
                     const std::string& fix_busy) {
  if (state.error == 0) {
    return item(check, subject, Verdict::pass, "port " + std::to_string(port) + " is free");
  }
  if (state.error == EADDRINUSE) {
    const std::string finding =
        "port " + std::to_string(port) + " is already in use " + transport::describe(state.holder);
    if (check == "listen port" && is_gossip_rdzv(state.holder)) {
      return item(check, subject, Verdict::warn, finding,
                  "fine if that is this job's node; a second node on this machine needs "
                  "another --listen port");
    }
    return failure(check, subject, ErrorCode::listen_failed, finding, fix_busy);
  }
  if (state.error == EADDRNOTAVAIL || state.error == EINVAL || state.error == ENODEV) {
    return failure(check, subject, ErrorCode::listen_failed,
                   host + " is not an address of this machine",
                   "use --listen :PORT (all addresses) or an address of `ip -brief address`");
  }
  if (state.error == EACCES) {
    return failure(check, subject, ErrorCode::listen_failed,
                   "permission denied (ports below 1024 need root)", "pick a port of 1024 or more");
  }
  return failure(check, subject, ErrorCode::listen_failed,
                 "cannot bind port " + std::to_string(port) + ": " + std::strerror(state.error),
                 "pick another port");
}

// join binds --listen as given: 0.0.0.0 (the default) takes IPv4 only, yet the node
// advertises the address that routes to the seed, an IPv6 one when the seed is IPv6. (When
// every seed is IPv6-only join binds [::] instead: run_doctor checks that listen host.)
std::optional<DoctorItem> check_listen_family(const DoctorOptions& options, const SeedCheck* seed) {
  if (seed == nullptr || !is_ipv6(seed->dial_ip) || is_ipv6(options.listen_host)) {
    return std::nullopt;
  }
  const std::string port = std::to_string(options.listen_port);
  return failure("listen port", endpoint_text(options.listen_host, options.listen_port),
                 ErrorCode::listen_failed,
                 "--listen " + endpoint_text(options.listen_host, options.listen_port) +
                     " accepts IPv4 only, but the seed " + seed->dial_ip +
                     " is reached over IPv6: the others could not dial this node",
                 "pass --listen [::]:" + port + " (IPv6 and IPv4) or this machine's IPv6 address");
}

DoctorItem check_listen(const DoctorOptions& options, DoctorProbe& probe) {
  const std::string subject = endpoint_text(options.listen_host, options.listen_port);
  if (options.listen_port == 0) {
    return item("listen port", subject, Verdict::pass, "port 0: the OS picks a free port");
  }
  const std::string ip = bind_ip(options.listen_host, probe);
  return port_item("listen port", subject, options.listen_port,
                   probe.bind_port(ip, options.listen_port), options.listen_host,
                   "stop that process, or pick another port with --listen :PORT (and use it in "
                   "the others' --seed if this node is a seed); check with `ss -ltnp 'sport = "
                   ":" +
                       std::to_string(options.listen_port) + "'`");
}

DoctorItem check_master_port(const DoctorOptions& options, DoctorProbe& probe) {
  const std::string subject = std::to_string(options.master_port);
  const std::string any = is_ipv6(options.listen_host) ? "::" : "0.0.0.0";
  return port_item("master port", subject, options.master_port,
                   probe.bind_port(any, options.master_port), any,
                   "if this node gets node rank 0 its workers cannot start their process "
                   "group: stop that process, or pick another --master-port");
}

// ---- route and host name -------------------------------------------------------------------

const SeedCheck* first_resolved(const std::vector<SeedCheck>& seeds) {
  for (const auto& seed : seeds) {
    if (!seed.dial_ip.empty()) return &seed;
  }
  return nullptr;
}

std::string interface_text(const std::string& ifname) {
  return ifname.empty() ? std::string("an unknown interface") : ifname;
}

DoctorItem check_route(const SeedCheck& seed, const DoctorOptions& options, DoctorProbe& probe,
                       DoctorReport& report) {
  const auto route = probe.route_to(seed.dial_ip);
  if (!route) {
    return failure(
        "route", seed.text, ErrorCode::seed_unreachable,
        "no route to " + seed.dial_ip + " from this machine",
        "check the seed address and this machine's routes (`ip route get " + seed.dial_ip + "`)");
  }
  std::string finding = "traffic to " + seed.dial_ip + " leaves through " +
                        interface_text(route->ifname) + " from " + route->source;
  const bool listen_fixed = !is_wildcard(options.listen_host);
  report.advertise = listen_fixed ? options.listen_host : route->source;
  report.gloo_socket_ifname = listen_fixed
                                  ? transport::interface_for_address(report.advertise).value_or("")
                                  : route->ifname;
  // As join does (runtime::choose_advertise_host): a seed *name* that maps to loopback here
  // (Debian's 127.0.1.1 for the host name) must not make this node advertise loopback to the
  // others.
  if (!listen_fixed && is_loopback(route->source) && !is_loopback(seed.given.host) &&
      seed.given.host != "localhost") {
    const auto outward = probe.route_to(is_ipv6(seed.dial_ip) ? "2001:db8::1" : "192.0.2.1");
    if (outward && !is_loopback(outward->source)) {
      report.advertise = outward->source;
      report.gloo_socket_ifname = outward->ifname;
      finding += " (the seed's name maps to loopback here, so join advertises the address of " +
                 interface_text(outward->ifname) + " instead)";
    }
  }
  finding += ": join advertises " + report.advertise;
  if (!report.gloo_socket_ifname.empty()) {
    finding += " and writes GLOO_SOCKET_IFNAME=" + report.gloo_socket_ifname;
  }
  if (listen_fixed && route->source != options.listen_host && !is_loopback(seed.dial_ip)) {
    return item("route", seed.text, Verdict::warn, finding,
                "--listen " + options.listen_host +
                    " is not the address that routes to the seed (" + route->source +
                    "): make sure the others can reach " + options.listen_host);
  }
  return item("route", seed.text, Verdict::pass, finding);
}

DoctorItem check_hostname(const SeedCheck* seed, const DoctorReport& report, DoctorProbe& probe) {
  const std::string name = probe.hostname();
  const auto resolution = probe.resolve(name);
  const std::string advertise =
      report.advertise.empty() ? "this machine's address" : report.advertise;
  if (resolution.addresses.empty()) {
    return item("host name", name, Verdict::warn,
                "host name '" + name + "' does not resolve (" + resolution.error + ")",
                "tools that dial the host name (e.g. MASTER_ADDR=$(hostname)) will fail; add it "
                "to /etc/hosts with " +
                    advertise);
  }
  const bool all_loopback = std::all_of(resolution.addresses.begin(), resolution.addresses.end(),
                                        [](const std::string& ip) { return is_loopback(ip); });
  if (all_loopback && seed != nullptr && !is_loopback(seed->dial_ip)) {
    return item("host name", name, Verdict::warn,
                "host name '" + name + "' resolves to " + join_list(resolution.addresses) +
                    ", a loopback address, while the seed " + seed->dial_ip + " is not on loopback",
                "tools that use the host name as MASTER_ADDR would hand peers an unreachable "
                "address: map the name to " +
                    advertise + " in /etc/hosts; gossip-rdzv itself advertises " + advertise);
  }
  return item("host name", name, Verdict::pass,
              "host name '" + name + "' resolves to " + join_list(resolution.addresses));
}

// ---- output --------------------------------------------------------------------------------

// The most fundamental failure first (DoctorReport::exit_code); any other code comes last.
int severity(ErrorCode code) {
  static constexpr ErrorCode kOrder[] = {
      ErrorCode::usage,         ErrorCode::seed_unresolved, ErrorCode::seed_unreachable,
      ErrorCode::listen_failed, ErrorCode::run_id_mismatch, ErrorCode::version_mismatch};
  return static_cast<int>(std::find(std::begin(kOrder), std::end(kOrder), code) -
                          std::begin(kOrder));
}

const DoctorItem* blocking_item(const DoctorReport& report) {
  const DoctorItem* worst = nullptr;
  for (const auto& entry : report.items) {
    if (entry.verdict != Verdict::fail) continue;
    if (worst == nullptr || severity(entry.code) < severity(worst->code)) worst = &entry;
  }
  return worst;
}

std::size_t count(const DoctorReport& report, Verdict verdict) {
  return static_cast<std::size_t>(
      std::count_if(report.items.begin(), report.items.end(),
                    [verdict](const DoctorItem& entry) { return entry.verdict == verdict; }));
}

std::string lower(const char* text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

const char* to_string(Verdict verdict) {
  static constexpr const char* kNames[] = {"PASS", "WARN", "FAIL", "SKIP"};  // Verdict's order
  const auto index = static_cast<std::size_t>(verdict);
  return index < std::size(kNames) ? kNames[index] : "?";
}

int DoctorReport::exit_code() const {
  const DoctorItem* worst = blocking_item(*this);
  return worst == nullptr ? 0 : static_cast<int>(worst->code);
}

// ---- SystemProbe ---------------------------------------------------------------------------

DoctorProbe::Resolution SystemProbe::resolve(const std::string& host) {
  return transport::resolve_addresses(host);
}

transport::ProbeResult SystemProbe::connect(const std::string& ip, std::uint16_t port,
                                            milliseconds timeout) {
  return transport::probe_tcp(ip, port, timeout);
}

DoctorProbe::Handshake SystemProbe::handshake(const std::string& endpoint,
                                              const std::string& run_id, milliseconds timeout) {
  Handshake out;
  try {
    const auto members = query_members(endpoint, run_id, timeout, key_file_);
    out.members = members.size();
    out.alive = static_cast<std::size_t>(
        std::count_if(members.begin(), members.end(),
                      [](const MemberProgress& m) { return m.status == "alive"; }));
  } catch (const Error& error) {
    out.code = error.code();
    out.message = error.what();
  } catch (const std::exception& error) {
    out.code = ErrorCode::internal;
    out.message = error.what();
  }
  return out;
}

DoctorProbe::PortState SystemProbe::bind_port(const std::string& ip, std::uint16_t port) {
  PortState state;
  const auto bound = transport::try_bind_tcp(ip, port);
  if (const auto* error = std::get_if<int>(&bound)) {
    state.error = *error;
    if (state.error == EADDRINUSE) state.holder = transport::find_port_holder(port);
  }
  return state;
}

std::optional<DoctorProbe::Route> SystemProbe::route_to(const std::string& ip) {
  auto source = transport::route_source(ip);
  if (!source) return std::nullopt;
  const std::string ifname = transport::interface_for_address(*source).value_or("");
  return Route{std::move(*source), ifname};
}

bool SystemProbe::is_local_address(const std::string& ip) {
  return transport::is_local_ip(ip);
}

std::string SystemProbe::hostname() {
  return transport::local_hostname().value_or("localhost");
}

// ---- run_doctor ----------------------------------------------------------------------------

DoctorReport run_doctor(const DoctorOptions& options, DoctorProbe& probe) {
  // Seeds are probed in parallel, so a report takes about one timeout, not one per seed.
  std::vector<SeedCheck> resolved;
  for (const auto& text : options.seeds) {
    for (auto& seed : resolve_seed(text, options, probe)) resolved.push_back(std::move(seed));
  }
  std::vector<std::future<SeedCheck>> pending;
  for (auto& seed : resolved) {
    pending.push_back(std::async(std::launch::async, [&options, &probe, seed]() mutable {
      return check_seed(std::move(seed), options, probe);
    }));
  }
  std::vector<SeedCheck> seeds;
  for (auto& future : pending) seeds.push_back(future.get());
  soften_when_another_seed_works(seeds);

  DoctorReport report;
  for (const auto& seed : seeds) {
    report.items.insert(report.items.end(), seed.items.begin(), seed.items.end());
  }
  const SeedCheck* routed = first_resolved(seeds);
  // As Node::start(): with the default listen host and every resolved seed IPv6-only, join
  // binds [::] (IPv6 and IPv4) instead of 0.0.0.0.
  DoctorOptions effective = options;
  const bool every_seed_ipv6 =
      routed != nullptr && std::all_of(seeds.begin(), seeds.end(), [](const SeedCheck& seed) {
        return seed.dial_ip.empty() || is_ipv6(seed.dial_ip);
      });
  if (options.listen_host == "0.0.0.0" && every_seed_ipv6) effective.listen_host = "::";
  report.items.push_back(check_listen(effective, probe));
  if (auto family = check_listen_family(effective, routed)) report.items.push_back(*family);
  if (options.master_port != 0) report.items.push_back(check_master_port(effective, probe));
  if (routed != nullptr) report.items.push_back(check_route(*routed, effective, probe, report));
  report.items.push_back(check_hostname(routed, report, probe));
  report.key = options.key_file.empty()
                   ? "none (messages in clear)"
                   : fmt::format("{} ({} key{}) from {}", options.key_id, options.key_count,
                                 options.key_count == 1 ? "" : "s", options.key_file);
  report.key_file = options.key_file;
  report.key_id = options.key_id;
  report.key_count = options.key_count;
  return report;
}

std::string doctor_text(const DoctorReport& report) {
  std::string out;
  for (const auto& entry : report.items) {
    out += fmt::format("{}  {}: {}\n", to_string(entry.verdict), entry.check + " " + entry.subject,
                       entry.finding);
    if (!entry.fix.empty()) out += "      fix: " + entry.fix + "\n";
  }
  out += "\n";
  if (!report.advertise.empty()) {
    out += "advertise address: " + report.advertise;
    if (!report.gloo_socket_ifname.empty()) {
      out += ", GLOO_SOCKET_IFNAME=" + report.gloo_socket_ifname;
    }
    out += "\n";
  }
  if (!report.key.empty()) out += "key: " + report.key + "\n";
  const auto failures = count(report, Verdict::fail);
  const auto warnings = count(report, Verdict::warn);
  const DoctorItem* worst = blocking_item(report);
  if (worst == nullptr) {
    out += fmt::format("verdict: nothing blocks the job ({} warning(s))\n", warnings);
  } else {
    out += fmt::format("verdict: {} failure(s), {} warning(s); exit {} ({}): {} {}\n", failures,
                       warnings, static_cast<int>(worst->code), gossip_rdzv::to_string(worst->code),
                       worst->check, worst->subject);
  }
  return out;
}

std::string doctor_json(const DoctorReport& report) {
  const int code = report.exit_code();
  std::string out =
      "{\"ok\": " + std::string(code == 0 ? "true" : "false") +
      ", \"exit_code\": " + std::to_string(code) +
      ", \"exit_name\": " + json_string(gossip_rdzv::to_string(static_cast<ErrorCode>(code))) +
      ", \"advertise\": " + json_string(report.advertise) +
      ", \"gloo_socket_ifname\": " + json_string(report.gloo_socket_ifname) + ", \"key\": " +
      (report.key_file.empty() ? std::string("null")
                               : "{\"file\": " + json_string(report.key_file) +
                                     ", \"id\": " + json_string(report.key_id) +
                                     ", \"keys\": " + std::to_string(report.key_count) + "}") +
      ", \"checks\": [";
  bool first = true;
  for (const auto& entry : report.items) {
    out += first ? "\n  " : ",\n  ";
    first = false;
    out += "{\"check\": " + json_string(entry.check) +
           ", \"subject\": " + json_string(entry.subject) +
           ", \"verdict\": " + json_string(lower(to_string(entry.verdict))) +
           ", \"exit_code\": " + std::to_string(static_cast<int>(entry.code)) +
           ", \"finding\": " + json_string(entry.finding) + ", \"fix\": " + json_string(entry.fix) +
           "}";
  }
  out += "\n]}\n";
  return out;
}

}  // namespace gossip_rdzv::cli
