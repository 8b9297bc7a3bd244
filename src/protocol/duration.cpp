#include "duration.hpp"

#include <cctype>
#include <cstdint>

namespace gossip_rdzv::protocol {
namespace {

using std::chrono::milliseconds;

std::optional<milliseconds> fail(std::string* error, std::string message) {
  if (error) *error = std::move(message);
  return std::nullopt;
}

// Milliseconds per unit; 0 for an unknown unit. No unit means seconds.
std::int64_t unit_ms(std::string_view unit) {
  if (unit.empty() || unit == "s") return 1000;
  if (unit == "ms") return 1;
  if (unit == "m") return 60'000;
  if (unit == "h") return 3'600'000;
  return 0;
}

std::size_t count_digits(std::string_view text, std::size_t from) {
  std::size_t end = from;
  while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
  return end - from;
}

// Digits beyond these would overflow the arithmetic below before the range check catches them.
constexpr std::size_t kMaxWholeDigits = 12;  // 10^12 h in ms < 2^63
constexpr std::size_t kMaxFractionDigits = 6;

std::int64_t to_int(std::string_view digits) {
  std::int64_t value = 0;
  for (char c : digits) value = value * 10 + (c - '0');
  return value;
}

}  // namespace

std::optional<milliseconds> parse_duration(std::string_view text, std::string* error) {
  const std::string shown = "'" + std::string(text) + "'";
  if (text.empty()) return fail(error, "empty duration: expected e.g. 500ms, 30s, 2m or 1h");
  const std::size_t whole_digits = count_digits(text, 0);
  std::size_t pos = whole_digits;
  std::size_t fraction_digits = 0;
  const bool has_point = pos < text.size() && text[pos] == '.';
  if (has_point) {
    fraction_digits = count_digits(text, pos + 1);
    pos += 1 + fraction_digits;
  }
  if (whole_digits == 0 && fraction_digits == 0 && text.size() > 1 && text[0] == '-') {
    return fail(error, "duration " + shown + " is negative: give a positive duration (e.g. 30s)");
  }
  if (whole_digits == 0 && fraction_digits == 0) {
    return fail(error, "duration " + shown + " does not start with a number (e.g. 30s)");
  }
  if (has_point && fraction_digits == 0) {
    return fail(error, "duration " + shown + " has no digits after the '.'");
  }
  const std::string_view unit = text.substr(pos);
  const std::int64_t per_unit_ms = unit_ms(unit);
  if (per_unit_ms == 0) {
    return fail(error,
                "unknown unit '" + std::string(unit) + "' in " + shown + ": use ms, s, m or h");
  }
  if (whole_digits > kMaxWholeDigits || fraction_digits > kMaxFractionDigits) {
    return fail(error, "duration " + shown + " is out of range");
  }
  std::int64_t scale = 1;
  for (std::size_t i = 0; i < fraction_digits; ++i) scale *= 10;
  const std::int64_t fraction =
      has_point ? to_int(text.substr(whole_digits + 1, fraction_digits)) : 0;
  if ((fraction * per_unit_ms) % scale != 0) {
    return fail(error, "duration " + shown + " is finer than a millisecond");
  }
  const std::int64_t whole = to_int(text.substr(0, whole_digits));
  const auto total_ms = milliseconds(whole * per_unit_ms + fraction * per_unit_ms / scale);
  if (total_ms > kMaxDuration) return fail(error, "duration " + shown + " is out of range");
  return total_ms;
}

}  // namespace gossip_rdzv::protocol
