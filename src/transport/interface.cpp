#include "transport/interface.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstring>
#include <memory>
#include <set>

namespace gossip_rdzv::transport {
namespace {

struct ParsedAddress {
  int family = AF_UNSPEC;
  in_addr v4{};
  in6_addr v6{};
  std::string zone;  ///< IPv6 zone ("eth0" of "fe80::1%eth0"), empty if none
};

std::optional<ParsedAddress> parse(std::string text) {
  if (text.size() >= 2 && text.front() == '[' && text.back() == ']') {
    text = text.substr(1, text.size() - 2);
  }
  ParsedAddress out;
  if (inet_pton(AF_INET, text.c_str(), &out.v4) == 1) {
    out.family = AF_INET;
    return out;
  }
  if (const auto percent = text.find('%'); percent != std::string::npos) {
    out.zone = text.substr(percent + 1);
    text.resize(percent);
  }
  if (inet_pton(AF_INET6, text.c_str(), &out.v6) == 1) {
    out.family = AF_INET6;
    return out;
  }
  return std::nullopt;
}

bool matches(const ParsedAddress& want, const ifaddrs& entry) {
  const sockaddr* sa = entry.ifa_addr;
  if (sa == nullptr || sa->sa_family != want.family) return false;
  if (want.family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(sa);
    return std::memcmp(&v4->sin_addr, &want.v4, sizeof want.v4) == 0;
  }
  const auto* v6 = reinterpret_cast<const sockaddr_in6*>(sa);
  if (std::memcmp(&v6->sin6_addr, &want.v6, sizeof want.v6) != 0) return false;
  // A link-local address can sit on several interfaces; a zone picks one of them.
  return want.zone.empty() || want.zone == entry.ifa_name;
}

/// The one walk over the interface table: calls `visit` for each entry that has an address
/// until it returns true. False when the table cannot be read.
template <typename Visit>
bool walk_addresses(Visit visit) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return false;
  const std::unique_ptr<ifaddrs, void (*)(ifaddrs*)> owner(list, freeifaddrs);
  for (const ifaddrs* entry = list; entry != nullptr; entry = entry->ifa_next) {
    if (entry->ifa_addr != nullptr && visit(*entry)) break;
  }
  return true;
}

}  // namespace

std::optional<std::string> interface_for_address(const std::string& ip) {
  const std::optional<ParsedAddress> want = parse(ip);
  if (!want) return std::nullopt;
  std::optional<std::string> found;
  walk_addresses([&](const ifaddrs& entry) {
    if (matches(*want, entry)) found = entry.ifa_name;
    return found.has_value();
  });
  return found;
}

bool is_local_address(const std::string& ip) {
  return interface_for_address(ip).has_value();
}

std::optional<std::string> address_of_interface(const std::string& name, bool ipv6) {
  if (name.empty()) return std::nullopt;
  std::optional<std::string> v4;
  std::optional<std::string> v6;
  walk_addresses([&](const ifaddrs& entry) {
    const sockaddr* sa = entry.ifa_addr;
    if (name != entry.ifa_name) return false;
    char text[INET6_ADDRSTRLEN] = {};
    if (sa->sa_family == AF_INET && !v4) {
      const auto* a = reinterpret_cast<const sockaddr_in*>(sa);
      if (inet_ntop(AF_INET, &a->sin_addr, text, sizeof text) != nullptr) v4 = text;
    } else if (sa->sa_family == AF_INET6 && !v6) {
      const auto* a = reinterpret_cast<const sockaddr_in6*>(sa);
      // Link-local addresses need a zone that peers cannot use.
      if (!IN6_IS_ADDR_LINKLOCAL(&a->sin6_addr) &&
          inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof text) != nullptr)
        v6 = text;
    }
    return false;
  });
  if (ipv6 && v6) return v6;
  return v4 ? v4 : v6;
}

std::vector<std::string> local_addresses() {
  std::set<std::string> seen;
  std::vector<std::string> out;
  walk_addresses([&](const ifaddrs& entry) {
    const sockaddr* address = entry.ifa_addr;
    if (address->sa_family != AF_INET && address->sa_family != AF_INET6) return false;
    const socklen_t length =
        address->sa_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    char text[NI_MAXHOST];
    if (getnameinfo(address, length, text, sizeof text, nullptr, 0, NI_NUMERICHOST) == 0 &&
        seen.insert(text).second)
      out.emplace_back(text);
    return false;
  });
  return out;
}

}  // namespace gossip_rdzv::transport
