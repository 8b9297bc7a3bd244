#include "gossip_rdzv/config.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <regex>
#include <utility>

#include "gossip_rdzv/error.hpp"
#include "protocol/codec.hpp"
#include "protocol/config_text.hpp"
#include "protocol/endpoint.hpp"

namespace gossip_rdzv {

// The defaults in config.hpp follow hashicorp/memberlist's DefaultLANConfig (config.go):
// ProbeInterval 1s, ProbeTimeout 500ms, GossipInterval 200ms, GossipNodes 3, IndirectChecks 3,
// RetransmitMult 4, SuspicionMult 4. Push-pull is shorter than memberlist's 30s because a
// rendezvous lasts seconds, not months, and anti-entropy must repair loss within it.
Timing Timing::lan() {
  return Timing{};
}

// One machine over loopback: round trips are microseconds, so periods are about 10x shorter
// than LAN (memberlist's DefaultLocalConfig shortens probe timeout to 200ms and gossip to
// 100ms; we go further because loopback tests want a rendezvous within a second or two).
Timing Timing::local() {
  Timing timing;
  timing.gossip_interval = milliseconds(20);
  timing.min_push_gap = milliseconds(1);
  timing.probe_interval = milliseconds(200);
  timing.probe_timeout = milliseconds(100);
  timing.suspicion_min = milliseconds(1000);
  timing.push_pull_interval = milliseconds(1000);
  timing.join_backoff_initial = milliseconds(20);
  timing.join_backoff_max = milliseconds(1000);
  timing.commit_grace = milliseconds(2000);
  timing.outcome_linger = milliseconds(300);
  return timing;
}

// Across data centres: memberlist's DefaultWANConfig (config.go): GossipInterval 500ms,
// GossipNodes 4, ProbeInterval 5s, ProbeTimeout 3s, SuspicionMult 6, PushPullInterval 60s.
// The probe interval stays above the timeout so indirect probes fit inside one interval.
// Join backoff and commit grace are ours: WAN round trips of ~100-300ms and lost packets
// make a 30s cap and 15s grace comfortable without stalling a start for minutes.
Timing Timing::wan() {
  Timing timing;
  timing.gossip_interval = milliseconds(500);
  timing.gossip_fanout = 4;
  timing.probe_interval = milliseconds(5000);
  timing.probe_timeout = milliseconds(3000);
  timing.suspicion_mult = 6;
  timing.push_pull_interval = milliseconds(60000);
  timing.join_backoff_initial = milliseconds(500);
  timing.join_backoff_max = milliseconds(30000);
  timing.commit_grace = milliseconds(15000);
  timing.outcome_linger = milliseconds(3000);
  return timing;
}

std::optional<Timing> Timing::profile(std::string_view name) {
  if (name == "lan") return lan();
  if (name == "local") return local();
  if (name == "wan") return wan();
  return std::nullopt;
}

milliseconds Timing::suspicion_timeout(std::size_t members) const {
  const double scale = std::max(1.0, std::log10(static_cast<double>(members)));
  const auto computed = probe_interval * static_cast<std::int64_t>(suspicion_mult) *
                        static_cast<std::int64_t>(std::ceil(scale));
  return std::max(computed, suspicion_min);
}

std::uint32_t Timing::suspicion_confirmations(std::size_t members) const {
  if (suspicion_mult <= 2 || suspicion_max_mult <= 1) return 0;
  const std::uint32_t expected = suspicion_mult - 2;
  return members < std::size_t{expected} + 2 ? 0 : expected;
}

milliseconds Timing::suspicion_timeout_max(std::size_t members) const {
  const milliseconds min = suspicion_timeout(members);
  return suspicion_confirmations(members) == 0 ? min : min * std::max(suspicion_max_mult, 1u);
}

// ---- validation ------------------------------------------------------------------------------

namespace {

// The core's seen-by bitsets hold at most this many members (codec limit).
constexpr std::uint32_t kMaxNodes = static_cast<std::uint32_t>(protocol::kMaxListLength);
// More local workers than any machine runs; keeps the world size far from overflow.
constexpr std::uint32_t kMaxProcsPerNode = 1'000'000;

const char* const kNnodesForm = "N or MIN:MAX with 1 <= MIN <= MAX <= 65536, e.g. 4 or 2:8";
static_assert(kMaxNodes == 65536, "kNnodesForm names the limit");

std::string ms_text(milliseconds duration) {
  return std::to_string(duration.count()) + " ms";
}

std::optional<ConfigProblem> find_sizes_problem(const Config& config) {
  const std::string min = std::to_string(config.min_nodes);
  if (config.min_nodes < 1) {
    return ConfigProblem{"min_nodes", "--nnodes", min, "must be at least 1", kNnodesForm};
  }
  if (config.min_nodes > config.max_nodes) {
    return ConfigProblem{
        "min_nodes", "--nnodes", min,
        "MIN must not exceed MAX (max_nodes is " + std::to_string(config.max_nodes) + ")",
        kNnodesForm};
  }
  if (config.max_nodes > kMaxNodes) {
    return ConfigProblem{
        "max_nodes", "--nnodes", std::to_string(config.max_nodes),
        "is more than the " + std::to_string(kMaxNodes) + " nodes a round can hold", kNnodesForm};
  }
  const std::string nproc = std::to_string(config.nproc_per_node);
  const std::string nproc_form = "a whole number from 1 to " + std::to_string(kMaxProcsPerNode);
  if (config.nproc_per_node < 1) {
    return ConfigProblem{"nproc_per_node", "--nproc-per-node", nproc, "must be at least 1",
                         nproc_form};
  }
  if (config.nproc_per_node > kMaxProcsPerNode) {
    return ConfigProblem{"nproc_per_node", "--nproc-per-node", nproc, "is too large", nproc_form};
  }
  if (config.node_rank < -1 ||
      (config.node_rank >= 0 && static_cast<std::uint32_t>(config.node_rank) >= config.max_nodes)) {
    return ConfigProblem{
        "node_rank", "--node-rank", std::to_string(config.node_rank),
        config.node_rank < -1 ? "must be -1 (none) or a rank" : "must be below the node count",
        "0 to " + std::to_string(config.max_nodes - 1) + ", below the --nnodes MAX, or none"};
  }
  return std::nullopt;
}

std::optional<ConfigProblem> find_seeds_problem(const Config& config) {
  const char* const form = "HOST:PORT[,HOST:PORT...], e.g. node0:29400";
  if (config.seeds.empty() && !config.dedicated_seed) {
    return ConfigProblem{
        "seeds", "--seed", "", "no seed given",
        std::string(form) + ", the same on every node (it may be this node itself)"};
  }
  for (const auto& seed : config.seeds) {
    std::string why;
    if (!protocol::parse_endpoint(seed, &why, protocol::seed_rules())) {
      return ConfigProblem{"seeds", "--seed", seed, "not HOST:PORT: " + why, form};
    }
  }
  return std::nullopt;
}

// The address peers dial, as given: ZeroMQ and gloo take it verbatim.
std::optional<ConfigProblem> find_advertise_problem(const std::string& host) {
  const char* const form = "a host name or address of this machine, without a port";
  const auto problem = [&](const char* what) {
    return ConfigProblem{"advertise_host", "--advertise", host, what, form};
  };
  if (host.empty()) return std::nullopt;
  if (std::any_of(host.begin(), host.end(),
                  [](unsigned char c) { return c <= 0x20 || c == 0x7f; })) {
    return problem("contains spaces or control characters");
  }
  // One colon is "host:port"; an IPv6 address has at least two.
  if (std::count(host.begin(), host.end(), ':') == 1) return problem("looks like HOST:PORT");
  if (host.front() == '[') return problem("brackets are not needed");
  return std::nullopt;
}

// A zero period would make the core busy-loop; a zero fan-out would stop gossip and leave
// member seeds that never meet each other (docs/protocol.md, "Several seeds").
std::optional<ConfigProblem> find_timing_problem(const Timing& timing) {
  const std::pair<const char*, milliseconds> periods[] = {
      {"gossip_interval", timing.gossip_interval},
      {"probe_interval", timing.probe_interval},
      {"probe_timeout", timing.probe_timeout},
      {"push_pull_interval", timing.push_pull_interval},
      {"join_backoff_initial", timing.join_backoff_initial},
      {"join_backoff_max", timing.join_backoff_max}};
  for (const auto& [name, period] : periods) {
    if (period <= milliseconds::zero()) {
      return ConfigProblem{std::string("timing.") + name, "", ms_text(period), "must be positive",
                           "a period above zero; start from Timing::lan(), local() or wan()"};
    }
  }
  if (timing.probe_rounds == 0) {
    return ConfigProblem{"timing.probe_rounds", "", "0", "must be at least 1",
                         "the unanswered probe periods in a row before a member is suspected "
                         "(default 2)"};
  }
  if (timing.suspicion_max_mult == 0 || timing.suspicion_max_mult > 100) {
    return ConfigProblem{"timing.suspicion_max_mult", "", std::to_string(timing.suspicion_max_mult),
                         "must be 1 to 100",
                         "how many times longer an unconfirmed suspicion lasts (default 6, "
                         "1 for a fixed timeout)"};
  }
  if (timing.gossip_fanout == 0) {
    return ConfigProblem{"timing.gossip_fanout", "", "0",
                         "must be at least 1 (with 0 no node gossips)",
                         "the peers per gossip push (LAN default 3)"};
  }
  return std::nullopt;
}

}  // namespace

std::string ConfigProblem::message() const {
  std::string text = "config " + field + " '" + value + "'";
  if (!option.empty()) text += " (" + option + ")";
  return text + ": " + problem + " (expected " + expected + ")";
}

std::optional<ConfigProblem> find_run_id_problem(const std::string& run_id) {
  static const std::regex allowed("[A-Za-z0-9._-]{1,64}");
  if (std::regex_match(run_id, allowed)) return std::nullopt;
  return ConfigProblem{"run_id", "--run-id", run_id, run_id.empty() ? "is empty" : "is invalid",
                       "1 to 64 letters, digits, '.', '_' or '-', the same on every node, e.g. "
                       "job42"};
}

std::optional<ConfigProblem> find_problem(const Config& config) {
  if (auto problem = find_run_id_problem(config.run_id)) return problem;
  if (auto problem = find_sizes_problem(config)) return problem;
  if (auto problem = find_seeds_problem(config)) return problem;
  if (auto problem = find_advertise_problem(config.advertise_host)) return problem;
  if (auto problem = find_timing_problem(config.timing)) return problem;
  if (config.join_timeout <= milliseconds::zero()) {
    return ConfigProblem{"join_timeout", "--join-timeout", ms_text(config.join_timeout),
                         "must be positive", "a duration such as 10m"};
  }
  // The workers' TCPStore would try to bind the node's own gossip port, and another node's
  // worker would talk torch's store protocol to a gossip socket.
  if (!config.dedicated_seed && config.master_port != 0 &&
      config.master_port == config.listen_port) {
    return ConfigProblem{"master_port", "--master-port", std::to_string(config.master_port),
                         "is this node's own gossip port (--listen)",
                         "a port other than the --listen port, or none: a free one is picked"};
  }
  return std::nullopt;
}

std::vector<std::string> config_warnings(const Config& config) {
  std::vector<std::string> warnings;
  // docs/protocol.md, "Quorum base": two groups of MIN or more fit under MAX together. They
  // can never both agree, but the one without a majority of the seed list waits, which a
  // user should expect rather than meet.
  if (!config.dedicated_seed && config.max_nodes > 1 &&
      2 * std::uint64_t{config.min_nodes} <= config.max_nodes) {
    warnings.push_back("--nnodes " + std::to_string(config.min_nodes) + ":" +
                       std::to_string(config.max_nodes) +
                       ": MIN is at most half of MAX, so a partition can leave two groups of "
                       "MIN or more; only the one holding a majority of the --seed list can "
                       "agree, and the other waits for the partition to heal (see "
                       "docs/protocol.md, \"Quorum base\")");
  }
  return warnings;
}

void validate(const Config& config) {
  if (auto problem = find_problem(config)) throw Error(ErrorCode::usage, problem->message());
}

// ---- text forms ------------------------------------------------------------------------------

namespace protocol {

EndpointRules seed_rules() {
  EndpointRules rules;
  rules.default_port = kDefaultPort;
  return rules;
}

EndpointRules listen_rules() {
  EndpointRules rules;
  rules.default_host = "0.0.0.0";
  rules.allow_port_zero = true;
  return rules;
}

namespace {

std::optional<std::uint32_t> parse_count(std::string_view text) {
  std::uint32_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) {
    return std::nullopt;
  }
  return value;
}

}  // namespace

std::optional<NodeCounts> parse_nnodes(std::string_view text) {
  const auto colon = text.find(':');
  const auto min = parse_count(text.substr(0, colon));
  const auto max = colon == std::string_view::npos ? min : parse_count(text.substr(colon + 1));
  if (!min || !max) return std::nullopt;
  return NodeCounts{*min, *max};
}

}  // namespace protocol

}  // namespace gossip_rdzv
