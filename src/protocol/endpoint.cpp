#include "endpoint.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>

namespace gossip_rdzv::protocol {
namespace {

constexpr std::size_t kMaxHostNameBytes = 253;  // RFC 1035: a full domain name
constexpr std::size_t kMaxLabelBytes = 63;      // RFC 1035: one label

std::optional<Endpoint> fail(std::string* error, std::string message) {
  if (error) *error = std::move(message);
  return std::nullopt;
}

std::string quoted(std::string_view text) {
  return "'" + std::string(text) + "'";
}

bool is_digits(std::string_view text) {
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); });
}

// Returns an error sentence, or an empty string when the port is acceptable.
std::string check_port(std::string_view text, const EndpointRules& rules, std::uint16_t& port) {
  const std::string range = rules.allow_port_zero ? "0-65535" : "1-65535";
  if (text.empty()) return "missing port after ':'";
  if (!is_digits(text)) return "port " + quoted(text) + " is not a number";
  // More than 5 digits cannot be a port; checked before converting so nothing overflows.
  const bool too_long = text.size() > 5;
  const unsigned long value = too_long ? 0 : std::stoul(std::string(text));
  if (too_long || value > 65535 || (value == 0 && !rules.allow_port_zero)) {
    return "port " + std::string(text) + " is out of range " + range;
  }
  port = static_cast<std::uint16_t>(value);
  return {};
}

bool valid_label(std::string_view label) {
  if (label.empty() || label.size() > kMaxLabelBytes) return false;
  return std::all_of(label.begin(), label.end(),
                     [](unsigned char c) { return std::isalnum(c) || c == '-' || c == '_'; });
}

// Syntax only (RFC 1123 labels, plus '_' which some clusters use); nothing is resolved.
std::string check_host_name(std::string_view host) {
  const bool dotted_numbers = std::all_of(
      host.begin(), host.end(), [](unsigned char c) { return std::isdigit(c) || c == '.'; });
  if (dotted_numbers) {
    in_addr address{};
    const std::string text(host);
    if (inet_pton(AF_INET, text.c_str(), &address) == 1) return {};
    return "invalid IPv4 address " + quoted(host);
  }
  if (host.size() > kMaxHostNameBytes) return "host name longer than 253 characters";
  std::size_t start = 0;
  while (start <= host.size()) {
    const std::size_t dot = std::min(host.find('.', start), host.size());
    if (!valid_label(host.substr(start, dot - start))) {
      return "invalid host name " + quoted(host) +
             ": use letters, digits, '-', '_' and single dots between labels";
    }
    start = dot + 1;
  }
  return {};
}

// An IPv6 address, optionally with a zone ("fe80::1%eth0").
std::string check_ipv6(std::string_view host) {
  const std::size_t percent = host.find('%');
  const std::string address(host.substr(0, percent));
  in6_addr parsed{};
  if (inet_pton(AF_INET6, address.c_str(), &parsed) != 1) {
    return "invalid IPv6 address " + quoted(host);
  }
  if (percent != std::string_view::npos && !valid_label(host.substr(percent + 1))) {
    return "invalid IPv6 zone in " + quoted(host);
  }
  return {};
}

// An unbracketed address with several colons: show the user the bracketed form.
std::string bracket_hint(std::string_view text) {
  const std::size_t last = text.rfind(':');
  std::string host(text.substr(0, last));
  std::string port(text.substr(last + 1));
  if (!is_digits(port) || check_ipv6(host).size() > 0) {
    host = std::string(text);  // the whole text is the address: show a placeholder port
    port = "29400";
  }
  return "IPv6 address must be in brackets: [" + host + "]:" + port;
}

std::optional<Endpoint> finish(Endpoint endpoint, std::optional<std::string_view> port_text,
                               std::string_view text, const EndpointRules& rules,
                               std::string* error) {
  if (!port_text) {
    if (!rules.default_port) {
      return fail(error, "missing port in " + quoted(text) + ": expected HOST:PORT, e.g. " +
                             (endpoint.ipv6 ? "[fd00::1]:29400" : "node0:29400"));
    }
    endpoint.port = *rules.default_port;
    return endpoint;
  }
  const std::string port_error = check_port(*port_text, rules, endpoint.port);
  if (!port_error.empty()) return fail(error, port_error + " in " + quoted(text));
  return endpoint;
}

std::optional<Endpoint> parse_bracketed(std::string_view text, const EndpointRules& rules,
                                        std::string* error) {
  const std::size_t close = text.find(']');
  if (close == std::string_view::npos) return fail(error, "missing ']' in " + quoted(text));
  Endpoint endpoint{std::string(text.substr(1, close - 1)), 0, true};
  const std::string host_error = check_ipv6(endpoint.host);
  if (!host_error.empty()) return fail(error, host_error);
  const std::string_view rest = text.substr(close + 1);
  if (rest.empty()) return finish(std::move(endpoint), std::nullopt, text, rules, error);
  if (rest.front() != ':') {
    return fail(error, "expected ':PORT' after ']' in " + quoted(text));
  }
  return finish(std::move(endpoint), rest.substr(1), text, rules, error);
}

std::optional<Endpoint> parse_plain(std::string_view text, const EndpointRules& rules,
                                    std::string* error) {
  const std::size_t colons = std::count(text.begin(), text.end(), ':');
  if (colons > 1) return fail(error, bracket_hint(text));
  const std::size_t colon = text.find(':');
  Endpoint endpoint{std::string(text.substr(0, colon)), 0, false};
  if (endpoint.host.empty()) {
    if (rules.default_host.empty()) {
      return fail(error, "missing host in " + quoted(text) + ": expected HOST:PORT");
    }
    // The default host is the caller's own setting ("0.0.0.0", "::"), not user input.
    endpoint.host = std::string(rules.default_host);
    endpoint.ipv6 = endpoint.host.find(':') != std::string::npos;
  } else if (colon == std::string_view::npos && is_digits(text)) {
    return fail(error, quoted(text) + " has no host: write HOST:" + std::string(text) +
                           (rules.default_host.empty() ? "" : " or :" + std::string(text)));
  } else {
    const std::string host_error = check_host_name(endpoint.host);
    if (!host_error.empty()) return fail(error, host_error);
  }
  if (colon == std::string_view::npos) {
    return finish(std::move(endpoint), std::nullopt, text, rules, error);
  }
  return finish(std::move(endpoint), text.substr(colon + 1), text, rules, error);
}

}  // namespace

std::optional<Endpoint> parse_endpoint(std::string_view text, std::string* error,
                                       const EndpointRules& rules) {
  if (text.empty()) return fail(error, "empty address: expected HOST:PORT, e.g. node0:29400");
  if (text.front() == '[') return parse_bracketed(text, rules, error);
  return parse_plain(text, rules, error);
}

std::string to_string(const Endpoint& endpoint) {
  const std::string port = std::to_string(endpoint.port);
  if (endpoint.ipv6) return "[" + endpoint.host + "]:" + port;
  return endpoint.host + ":" + port;
}

std::string zmq_address(const Endpoint& endpoint) {
  const std::string port = endpoint.port == 0 ? "*" : std::to_string(endpoint.port);
  if (endpoint.ipv6) return "tcp://[" + endpoint.host + "]:" + port;
  return "tcp://" + endpoint.host + ":" + port;
}

}  // namespace gossip_rdzv::protocol
