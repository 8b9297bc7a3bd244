#include "option_values.hpp"

#include <charconv>
#include <sstream>

#include "protocol/config_text.hpp"
#include "protocol/duration.hpp"

namespace gossip_rdzv::cli {
namespace {

// The codec's sentences name the value themselves ("... in '3d'") and sometimes the form;
// our line already starts with the value and ends with the form, so those parts go.
[[noreturn]] void fail_with_codec_error(const std::string& option, const std::string& value,
                                        std::string error, const std::string& expected) {
  const std::string repeated = " in '" + value + "'";
  if (auto found = error.find(repeated); found != std::string::npos) {
    error.erase(found, repeated.size());
  }
  if (auto found = error.find(": expected"); found != std::string::npos) error.erase(found);
  reject(option, value, error, error.find("expected") == std::string::npos ? expected : "");
}

}  // namespace

[[noreturn]] void reject(const std::string& option, const std::string& value,
                         const std::string& problem, const std::string& expected) {
  std::string message = option + " '" + value + "': " + problem;
  if (!expected.empty()) message += " (expected " + expected + ")";
  throw UsageError{message};
}

std::optional<std::uint64_t> to_unsigned(const std::string& text) {
  std::uint64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

// Why `text` is no whole number: a sign, too many digits for the field, or something else.
std::string why_not_a_count(const std::string& text) {
  const bool digits = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
  if (digits) return "is too large";
  if (text.size() > 1 && text[0] == '-' &&
      text.find_first_not_of("0123456789", 1) == std::string::npos) {
    return "must not be negative";
  }
  return "not a whole number";
}

// Its range is find_problem's to judge; this only keeps the value in the field's type.
std::uint32_t parse_count(const std::string& option, const std::string& text,
                          const std::string& expected) {
  auto value = to_unsigned(text);
  if (!value) reject(option, text, why_not_a_count(text), expected);
  if (*value > UINT32_MAX) reject(option, text, "is too large", expected);
  return static_cast<std::uint32_t>(*value);
}

std::chrono::milliseconds parse_duration_option(const std::string& option,
                                                const std::string& text) {
  std::string error;
  auto value = gossip_rdzv::protocol::parse_duration(text, &error);
  if (!value) fail_with_codec_error(option, text, error, "a duration such as 500ms, 30s or 2m");
  return *value;
}

protocol::Endpoint parse_endpoint_option(const std::string& option, const std::string& text,
                                         const protocol::EndpointRules& rules,
                                         const std::string& expected) {
  std::string error;
  auto value = protocol::parse_endpoint(text, &error, rules);
  if (!value) fail_with_codec_error(option, text, error, expected);
  return *value;
}

std::vector<std::string> split_commas(const std::vector<std::string>& values) {
  std::vector<std::string> items;
  for (const auto& value : values) {
    std::stringstream stream(value);
    std::string item;
    while (std::getline(stream, item, ',')) items.push_back(item);
    if (!value.empty() && value.back() == ',') items.emplace_back();
  }
  return items;
}

std::vector<std::string> parse_seeds(const std::vector<std::string>& raw) {
  const std::string expected = "HOST:PORT[,HOST:PORT...], e.g. node0:29400";
  if (raw.empty()) throw UsageError{"--seed is required (expected " + expected + ")"};
  std::vector<std::string> seeds;
  for (const auto& item : split_commas(raw)) {
    if (item.empty()) reject("--seed", item, "empty seed address", expected);
    seeds.push_back(protocol::to_string(
        parse_endpoint_option("--seed", item, protocol::seed_rules(), expected)));
  }
  return seeds;
}

void apply_listen(const std::string& text, Config& config) {
  auto endpoint = parse_endpoint_option("--listen", text, protocol::listen_rules(),
                                        "[HOST]:PORT, e.g. :29400 or 10.0.0.5:29400");
  config.listen_host = endpoint.host;
  config.listen_port = endpoint.port;
}

void parse_nnodes(const std::string& text, Config& config) {
  const std::string expected = "N or MIN:MAX, e.g. 4 or 2:8";
  if (text.empty()) throw UsageError{"--nnodes is required (expected " + expected + ")"};
  const auto counts = protocol::parse_nnodes(text);
  if (!counts) {
    const auto colon = text.find(':');
    for (const std::string& part :
         {text.substr(0, colon), colon == std::string::npos ? "" : text.substr(colon + 1)}) {
      const auto value = to_unsigned(part);
      if (value && *value <= UINT32_MAX) continue;  // this part is fine
      const std::string why = why_not_a_count(part);
      if (!part.empty() && why != "not a whole number") {
        reject("--nnodes", text, (colon == std::string::npos ? "" : "'" + part + "' ") + why,
               expected);
      }
    }
    reject("--nnodes", text, "not a node count or range", expected);
  }
  config.min_nodes = counts->min_nodes;
  config.max_nodes = counts->max_nodes;
  // The MIN <= MAX/2 warning is config_warnings()'s: the node logs it, once.
}

std::int32_t parse_node_rank(const std::string& text, std::uint32_t max_nodes) {
  if (text.empty()) return -1;
  const std::string expected = "0 to " + std::to_string(max_nodes - 1) + ", below the --nnodes MAX";
  auto value = to_unsigned(text);
  if (!value) reject("--node-rank", text, why_not_a_count(text), expected);
  if (*value > INT32_MAX) reject("--node-rank", text, "is too large", expected);
  return static_cast<std::int32_t>(*value);
}

std::uint16_t parse_port(const std::string& option, const std::string& text) {
  if (text.empty()) return 0;
  auto value = to_unsigned(text);
  if (!value || *value == 0 || *value > 65535) reject(option, text, "not a port", "1-65535");
  return static_cast<std::uint16_t>(*value);
}

Timing parse_profile(const std::string& text) {
  const auto timing = Timing::profile(text);
  if (!timing) reject("--profile", text, "unknown profile", "lan, local or wan");
  return *timing;
}

OutputFormat parse_format(const std::string& text, Command command) {
  if (command == Command::doctor) {
    if (text == "text") return OutputFormat::text;
    if (text == "json") return OutputFormat::json;
    reject("--format", text, "unknown format", "text or json");
  }
  if (command == Command::members) {
    if (text == "table") return OutputFormat::table;
    if (text == "json") return OutputFormat::json;
    reject("--format", text, "unknown format", "table or json");
  }
  if (text == "env") return OutputFormat::env;
  if (text == "export") return OutputFormat::export_;
  if (text == "json") return OutputFormat::json;
  reject("--format", text, "unknown format", "env, export or json");
}

void check_path(const std::string& option, const std::string& text) {
  if (text.empty()) reject(option, text, "empty path", "a file path");
}

}  // namespace gossip_rdzv::cli
