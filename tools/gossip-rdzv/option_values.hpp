// One option's text turned into a typed value. Every parser either returns the value or
// throws UsageError with one line naming the option, the value as given, what is wrong and
// the form expected: `--nnodes '2:x': not a node count or range (expected N or MIN:MAX, e.g.
// 4 or 2:8)`. Ranges that involve several options are find_problem's (config.hpp), so the
// command line, Node and the C API judge them alike; these only keep a value in its type.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cli_options.hpp"
#include "gossip_rdzv/config.hpp"
#include "protocol/endpoint.hpp"

namespace gossip_rdzv::cli {

/// A command line that cannot be run: `message` is the line to print (exit 2).
struct UsageError {
  std::string message;
};

/// Throws UsageError "OPTION 'VALUE': PROBLEM (expected EXPECTED)"; no parenthesis when
/// `expected` is empty.
[[noreturn]] void reject(const std::string& option, const std::string& value,
                         const std::string& problem, const std::string& expected);

/// Decimal digits only, fitting 64 bits; nullopt otherwise (signs, spaces, empty).
std::optional<std::uint64_t> to_unsigned(const std::string& text);
/// Why `text` is no count: "is too large" (digits only), "must not be negative" (a minus and
/// digits), else "not a whole number".
std::string why_not_a_count(const std::string& text);
/// A count that fits 32 bits.
std::uint32_t parse_count(const std::string& option, const std::string& text,
                          const std::string& expected);
/// A duration such as 500ms, 30s or 2m (protocol/duration.hpp).
std::chrono::milliseconds parse_duration_option(const std::string& option, const std::string& text);
/// HOST:PORT under `rules` (protocol/endpoint.hpp).
protocol::Endpoint parse_endpoint_option(const std::string& option, const std::string& text,
                                         const protocol::EndpointRules& rules,
                                         const std::string& expected);
/// Every comma-separated item of every value, empty items kept ("a,,b" and "a," have one).
std::vector<std::string> split_commas(const std::vector<std::string>& values);
/// --seed, given once or more, each a comma-separated list: "host:port" texts.
std::vector<std::string> parse_seeds(const std::vector<std::string>& raw);
/// --listen [HOST]:PORT into config.listen_host and listen_port.
void apply_listen(const std::string& text, Config& config);
/// --nnodes N or MIN:MAX into config.min_nodes and max_nodes.
void parse_nnodes(const std::string& text, Config& config);
/// --node-rank: -1 when empty; `max_nodes` only words the expected range.
std::int32_t parse_node_rank(const std::string& text, std::uint32_t max_nodes);
/// A port 1-65535; 0 when empty (not given).
std::uint16_t parse_port(const std::string& option, const std::string& text);
/// --profile lan, local or wan.
Timing parse_profile(const std::string& text);
/// --format: the forms `command` prints.
OutputFormat parse_format(const std::string& text, Command command);
/// A path option given as "" is refused.
void check_path(const std::string& option, const std::string& text);

}  // namespace gossip_rdzv::cli
