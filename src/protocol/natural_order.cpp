#include "protocol/natural_order.hpp"

#include <cstddef>

namespace gossip_rdzv::protocol {
namespace {

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// Length of the digit run starting at `pos`.
std::size_t digit_run(std::string_view s, std::size_t pos) {
  std::size_t end = pos;
  while (end < s.size() && is_digit(s[end])) ++end;
  return end - pos;
}

// Compares two digit runs by value: strip leading zeros, then the longer is larger, then
// digit by digit. Works for runs of any length, where converting to an integer would
// overflow.
int compare_numbers(std::string_view a, std::string_view b) {
  const auto strip = [](std::string_view s) {
    const std::size_t first = s.find_first_not_of('0');
    return first == std::string_view::npos ? std::string_view{} : s.substr(first);
  };
  const std::string_view x = strip(a);
  const std::string_view y = strip(b);
  if (x.size() != y.size()) return x.size() < y.size() ? -1 : 1;
  return x.compare(y) < 0 ? -1 : (x.compare(y) > 0 ? 1 : 0);
}

int compare_bytes(std::string_view a, std::string_view b) {
  const int c = a.compare(b);
  return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

}  // namespace

int natural_compare(std::string_view a, std::string_view b) {
  std::size_t i = 0;
  std::size_t j = 0;
  while (i < a.size() && j < b.size()) {
    if (is_digit(a[i]) && is_digit(b[j])) {
      const std::size_t len_a = digit_run(a, i);
      const std::size_t len_b = digit_run(b, j);
      const int c = compare_numbers(a.substr(i, len_a), b.substr(j, len_b));
      if (c != 0) return c;
      i += len_a;
      j += len_b;
      continue;
    }
    // A digit against a non-digit compares as bytes: the answer depends only on whether
    // the other character sorts before '0' or after '9', which keeps the order transitive.
    const auto ca = static_cast<unsigned char>(a[i]);
    const auto cb = static_cast<unsigned char>(b[j]);
    if (ca != cb) return ca < cb ? -1 : 1;
    ++i;
    ++j;
  }
  if (i < a.size() || j < b.size()) return i < a.size() ? 1 : -1;
  // Equal up to leading zeros: fall back to bytes so only identical strings tie.
  return compare_bytes(a, b);
}

bool natural_less(std::string_view a, std::string_view b) {
  return natural_compare(a, b) < 0;
}

}  // namespace gossip_rdzv::protocol
