#include "runtime/seed_resolver.hpp"

#include <algorithm>
#include <future>

#include <spdlog/fmt/fmt.h>
#include <spdlog/fmt/ranges.h>

#include "gossip_rdzv/error.hpp"
#include "protocol/config_text.hpp"
#include "transport/interface.hpp"
#include "transport/name_resolution.hpp"
#include "transport/socket_address.hpp"
#include "transport/tcp_probe.hpp"

namespace gossip_rdzv::runtime {
namespace {

using protocol::Endpoint;
using transport::is_ipv6;
using transport::is_local_ip;
using transport::is_loopback;
using transport::route_source;

// One TCP connection attempt per silent seed when explaining a timeout. On a LAN, an
// address with no host behind it fails with EHOSTUNREACH only after ARP gives up (~3 s):
// a shorter probe would report that "no route" as a firewall dropping packets.
constexpr milliseconds kSeedProbeTimeout{4000};

}  // namespace

bool is_wildcard(const std::string& host) {
  return host.empty() || host == "0.0.0.0" || host == "::" || host == "[::]" || host == "*";
}

std::string endpoint_text(const std::string& host, std::uint16_t port) {
  return protocol::to_string(Endpoint{host, port, is_ipv6(host)});
}

std::optional<Endpoint> parse_seed(const std::string& text, std::string* error) {
  return protocol::parse_endpoint(text, error, protocol::seed_rules());
}

std::optional<std::string> resolve_host(const std::string& host, bool prefer_ipv6,
                                        std::string* error) {
  const auto resolution = transport::resolve_addresses(host);
  if (resolution.addresses.empty()) {
    if (error) *error = resolution.error;
    return std::nullopt;
  }
  return transport::preferred_address(resolution.addresses, prefer_ipv6);
}

std::vector<SeedAddress> resolve_seeds(const Config& config, spdlog::logger& log) {
  std::vector<SeedAddress> resolved;
  std::string first_failure;
  for (const auto& text : config.seeds) {
    const Endpoint given = *parse_seed(text, nullptr);
    const auto resolution = transport::resolve_addresses(given.host);
    if (resolution.addresses.empty()) {
      log.warn("seed '{}' does not resolve ({}): skipping it", text, resolution.error);
      if (first_failure.empty()) {
        first_failure = "seed name '" + given.host +
                        "' does not resolve (getaddrinfo: " + resolution.error +
                        "): check the spelling, /etc/hosts or DNS";
      }
      continue;
    }
    // A name with several addresses (a Kubernetes headless Service) stands for one seed each.
    const auto ips = transport::seed_addresses(resolution.addresses, is_ipv6(config.listen_host));
    for (const auto& ip : ips) {
      SeedAddress seed{text, given, ip, endpoint_text(ip, given.port)};
      const bool known = std::any_of(resolved.begin(), resolved.end(), [&](const SeedAddress& s) {
        return s.endpoint == seed.endpoint;
      });
      if (!known) resolved.push_back(std::move(seed));
    }
    if (ips.size() > 1) {
      log.info("seed '{}' resolves to {} addresses; each is a seed: {}", text, ips.size(),
               fmt::join(ips, ", "));
    }
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
    if (auto address = transport::address_of_interface(config.listen_host, false)) return *address;
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

std::string self_advertise_for(const std::string& target_ip) {
  return route_source(target_ip).value_or(is_ipv6(target_ip) ? "::1" : "127.0.0.1");
}

std::string explain_silent_seed(const std::string& host, std::uint16_t port, bool greeted) {
  const std::string where = endpoint_text(host, port);
  const auto probe = transport::probe_tcp(host, port, kSeedProbeTimeout);
  if (greeted && probe.outcome == transport::ProbeOutcome::refused) {
    return fmt::format(
        "the seed at {} took this node's connection but never answered it, and nothing "
        "listens there now: the seed stopped, most likely at its own --join-timeout, which "
        "counts from its start (or it was killed); start every node within that time of the "
        "seed, or give the seed a longer --join-timeout",
        where);
  }
  if (greeted && (probe.outcome == transport::ProbeOutcome::connected ||
                  probe.outcome == transport::ProbeOutcome::timed_out)) {
    // Timed out: a seed too busy to accept lets its listen queue fill and drops connections.
    return fmt::format(
        "the seed at {} took this node's connection but never answered it: it is too busy "
        "(many nodes joining through it on a loaded machine) or stuck; check its load and its "
        "log, or list more seeds (--seed A,B,C) to share the joins",
        where);
  }
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
std::string explain_silent_seeds(const std::vector<SeedAddress>& seeds,
                                 const std::vector<std::string>& greeted) {
  std::vector<std::future<std::string>> probes;
  for (const auto& seed : seeds) {
    const bool was_there =
        std::find(greeted.begin(), greeted.end(), seed.endpoint) != greeted.end();
    probes.push_back(std::async(std::launch::async, [&seed, was_there] {
      return explain_silent_seed(seed.given.host, seed.given.port, was_there);
    }));
  }
  std::string text;
  for (auto& probe : probes) text += (text.empty() ? "" : "; ") + probe.get();
  return text;
}

}  // namespace gossip_rdzv::runtime
