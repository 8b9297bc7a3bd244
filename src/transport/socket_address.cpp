#include "transport/socket_address.hpp"

#include <netdb.h>

#include <cstring>

#include "transport/file_descriptor.hpp"

namespace gossip_rdzv::transport {

std::optional<SocketAddress> numeric_address(const std::string& ip, std::uint16_t port) {
  addrinfo hints{};
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* list = nullptr;
  if (::getaddrinfo(ip.c_str(), std::to_string(port).c_str(), &hints, &list) != 0) {
    return std::nullopt;
  }
  SocketAddress out;
  std::memcpy(&out.storage, list->ai_addr, list->ai_addrlen);
  out.length = list->ai_addrlen;
  ::freeaddrinfo(list);
  return out;
}

std::string numeric_host(const sockaddr* address, socklen_t length) {
  char text[NI_MAXHOST];
  if (::getnameinfo(address, length, text, sizeof text, nullptr, 0, NI_NUMERICHOST) != 0) {
    return "";
  }
  return text;
}

std::optional<std::string> route_source(const std::string& ip) {
  const auto target = numeric_address(ip, 9);  // 9: discard; any port would do
  if (!target) return std::nullopt;
  FileDescriptor fd(::socket(target->family(), SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0 || ::connect(fd.get(), target->get(), target->length) != 0) return std::nullopt;
  SocketAddress local;
  local.length = sizeof local.storage;
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&local.storage), &local.length) != 0) {
    return std::nullopt;
  }
  const std::string text = numeric_host(local.get(), local.length);
  return text.empty() ? std::nullopt : std::optional(text);
}

bool is_local_ip(const std::string& ip) {
  const auto address = numeric_address(ip, 0);
  if (!address) return false;
  FileDescriptor fd(::socket(address->family(), SOCK_DGRAM | SOCK_CLOEXEC, 0));
  return fd.get() >= 0 && ::bind(fd.get(), address->get(), address->length) == 0;
}

bool is_loopback(const std::string& ip) {
  return ip.rfind("127.", 0) == 0 || ip == "::1";
}

}  // namespace gossip_rdzv::transport
