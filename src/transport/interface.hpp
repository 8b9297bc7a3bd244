// Which local network interface holds an address: GLOO_SOCKET_IFNAME for the advertised
// address, and a check that an address given by the user is really this machine's.
// Not pure: reads the interface table (getifaddrs) on every call.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace gossip_rdzv::transport {

/// The name of the local interface holding the IPv4 or IPv6 address `ip` ("lo" for
/// 127.0.0.1, "eth0", ...). `ip` may be bracketed ("[::1]") and may carry a zone
/// ("fe80::1%eth0"). Returns nullopt when `ip` is not an address literal (a host name, ""),
/// is not held by any interface (including 0.0.0.0 and ::), or the table cannot be read.
std::optional<std::string> interface_for_address(const std::string& ip);

/// interface_for_address(ip).has_value().
bool is_local_address(const std::string& ip);

/// The address of the local interface named `name` ("eth0"), for a listen address given as
/// an interface name (ZeroMQ binds to those): its first IPv4 address, or with `ipv6` (or when
/// it has no IPv4 address) its first global-scope IPv6 address. nullopt when there is no
/// such interface or it has no usable address.
std::optional<std::string> address_of_interface(const std::string& name, bool ipv6 = false);

/// Every IPv4 and IPv6 address of this machine, numeric ("127.0.0.1", "fe80::1%eth0"), each
/// once, in interface-table order: for error messages that list what a user may listen on.
/// Empty when the table cannot be read.
std::vector<std::string> local_addresses();

}  // namespace gossip_rdzv::transport
