#include "transport/name_resolution.hpp"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <memory>

#include "transport/socket_address.hpp"

namespace gossip_rdzv::transport {

Resolution resolve_addresses(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* raw = nullptr;
  const int status = ::getaddrinfo(host.c_str(), nullptr, &hints, &raw);
  Resolution out;
  if (status != 0) {
    out.error = ::gai_strerror(status);
    return out;
  }
  std::unique_ptr<addrinfo, void (*)(addrinfo*)> list(raw, ::freeaddrinfo);
  for (const addrinfo* a = list.get(); a != nullptr; a = a->ai_next) {
    std::string text = numeric_host(a->ai_addr, a->ai_addrlen);
    if (!text.empty() &&
        std::find(out.addresses.begin(), out.addresses.end(), text) == out.addresses.end()) {
      out.addresses.push_back(std::move(text));
    }
  }
  if (out.addresses.empty()) out.error = "no address";
  return out;
}

std::string preferred_address(const std::vector<std::string>& addresses, bool prefer_ipv6) {
  const auto found = std::find_if(addresses.begin(), addresses.end(), [&](const std::string& ip) {
    return is_ipv6(ip) == prefer_ipv6;
  });
  return found != addresses.end() ? *found : addresses.front();
}

std::vector<std::string> seed_addresses(const std::vector<std::string>& addresses,
                                        bool prefer_ipv6) {
  std::vector<std::string> kept;
  for (const auto& ip : addresses) {
    if (is_ipv6(ip) == prefer_ipv6) kept.push_back(ip);
  }
  if (kept.empty()) kept = addresses;
  std::sort(kept.begin(), kept.end());
  kept.erase(std::unique(kept.begin(), kept.end()), kept.end());
  return kept;
}

std::optional<std::string> local_hostname() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return std::nullopt;
  return std::string(name);
}

}  // namespace gossip_rdzv::transport
