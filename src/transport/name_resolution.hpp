// Names to addresses through the system resolver (getaddrinfo, so /etc/hosts and DNS), and
// this machine's own host name. Shared by the runtime (which seed address to dial) and
// `gossip-rdzv doctor` (which shows every address a seed name has).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace gossip_rdzv::transport {

struct Resolution {
  std::vector<std::string> addresses;  ///< numeric, in getaddrinfo order, no duplicates
  std::string error;                   ///< gai_strerror text when `addresses` is empty
};

/// Every address `host` (a name or a numeric address) resolves to, IPv4 and IPv6.
Resolution resolve_addresses(const std::string& host);

/// The address to dial among `addresses` (not empty): the first of the family we listen on
/// (a name such as localhost can resolve to ::1 first while we only listen on IPv4), else
/// the first.
std::string preferred_address(const std::vector<std::string>& addresses, bool prefer_ipv6);

/// The seeds a seed name stands for (docs/cli.md, --seed): each of its addresses of the family
/// we listen on (each address when it has none of that family), sorted, so that nodes given
/// the same answer in another order build the same seed list, which is the quorum base.
std::vector<std::string> seed_addresses(const std::vector<std::string>& addresses,
                                        bool prefer_ipv6);

/// This machine's host name (gethostname), nullopt when it cannot be read.
std::optional<std::string> local_hostname();

}  // namespace gossip_rdzv::transport
