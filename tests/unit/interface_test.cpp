#include "transport/interface.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <ifaddrs.h>
#include <netinet/in.h>
#include <algorithm>

#include <optional>
#include <string>

namespace gossip_rdzv {
namespace {

TEST(Interface, LoopbackIsLo) {
  EXPECT_EQ(transport::interface_for_address("127.0.0.1"), std::optional<std::string>("lo"));
  EXPECT_TRUE(transport::is_local_address("127.0.0.1"));
}

TEST(Interface, NotLocalOrNotAnAddress) {
  EXPECT_FALSE(transport::interface_for_address("0.0.0.0").has_value());
  EXPECT_FALSE(transport::interface_for_address("192.0.2.123").has_value());  // TEST-NET-1
  EXPECT_FALSE(transport::interface_for_address("localhost").has_value());
  EXPECT_FALSE(transport::interface_for_address("").has_value());
  EXPECT_FALSE(transport::interface_for_address("[").has_value());
  EXPECT_FALSE(transport::is_local_address("999.1.1.1"));
}

TEST(Interface, Ipv6LoopbackWhenConfigured) {
  // Containers often run without IPv6; only check the answer when ::1 exists at all.
  const auto v6 = transport::interface_for_address("::1");
  if (!v6) GTEST_SKIP() << "no ::1 on this machine";
  EXPECT_EQ(*v6, "lo");
  EXPECT_EQ(transport::interface_for_address("[::1]"), v6);
}

TEST(Interface, AddressOfInterfaceName) {
  EXPECT_EQ(transport::address_of_interface("lo"), std::optional<std::string>("127.0.0.1"));
  EXPECT_FALSE(transport::address_of_interface("no-such-if0").has_value());
  EXPECT_FALSE(transport::address_of_interface("").has_value());
  EXPECT_FALSE(transport::address_of_interface("127.0.0.1").has_value());  // an address, not a name
  if (transport::interface_for_address("::1")) {
    EXPECT_EQ(transport::address_of_interface("lo", true), std::optional<std::string>("::1"));
  }
}

// Every interface with an address gives one back that the same interface holds.
TEST(Interface, AddressOfInterfaceRoundTrips) {
  ifaddrs* list = nullptr;
  ASSERT_EQ(getifaddrs(&list), 0);
  int checked = 0;
  for (const ifaddrs* e = list; e != nullptr; e = e->ifa_next) {
    if (e->ifa_addr == nullptr || e->ifa_addr->sa_family != AF_INET) continue;
    const auto address = transport::address_of_interface(e->ifa_name);
    ASSERT_TRUE(address.has_value()) << e->ifa_name;
    EXPECT_EQ(transport::interface_for_address(*address), std::optional<std::string>(e->ifa_name));
    ++checked;
  }
  freeifaddrs(list);
  EXPECT_GT(checked, 0);
}

// Every IPv4 address the machine holds maps back to an interface that holds it.
TEST(Interface, EveryLocalIpv4AddressIsFound) {
  ifaddrs* list = nullptr;
  ASSERT_EQ(getifaddrs(&list), 0);
  int checked = 0;
  for (const ifaddrs* e = list; e != nullptr; e = e->ifa_next) {
    if (e->ifa_addr == nullptr || e->ifa_addr->sa_family != AF_INET) continue;
    char text[INET_ADDRSTRLEN] = {};
    const auto* sin = reinterpret_cast<const sockaddr_in*>(e->ifa_addr);
    ASSERT_NE(inet_ntop(AF_INET, &sin->sin_addr, text, sizeof text), nullptr);
    const auto found = transport::interface_for_address(text);
    ASSERT_TRUE(found.has_value()) << text;
    EXPECT_TRUE(transport::is_local_address(text));
    ++checked;
  }
  freeifaddrs(list);
  EXPECT_GE(checked, 1);  // at least lo
}

TEST(Interface, LocalAddressesListsLoopbackOnceAndOnlyLocalAddresses) {
  const std::vector<std::string> all = transport::local_addresses();
  EXPECT_EQ(std::count(all.begin(), all.end(), "127.0.0.1"), 1);
  for (const auto& address : all) {
    EXPECT_EQ(std::count(all.begin(), all.end(), address), 1) << address;
    EXPECT_TRUE(transport::is_local_address(address)) << address;
  }
  EXPECT_FALSE(std::find(all.begin(), all.end(), "192.0.2.1") != all.end());  // TEST-NET-1
}

}  // namespace
}  // namespace gossip_rdzv
