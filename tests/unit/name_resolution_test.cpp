#include "transport/name_resolution.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gossip_rdzv {
namespace {

using Addresses = std::vector<std::string>;

TEST(NameResolution, ANameWithSeveralAddressesIsOneSeedEachOfTheListenFamily) {
  const Addresses answer{"10.0.0.3", "fd00::1", "10.0.0.1", "10.0.0.2"};
  EXPECT_EQ(transport::seed_addresses(answer, false),
            (Addresses{"10.0.0.1", "10.0.0.2", "10.0.0.3"}));
  EXPECT_EQ(transport::seed_addresses(answer, true), (Addresses{"fd00::1"}));
}

TEST(NameResolution, TheSameAnswerInAnotherOrderGivesTheSameSeeds) {
  // Every node must build the same seed list (the quorum base) from a DNS answer whose
  // order the resolver rotates.
  const Addresses one{"10.0.0.2", "10.0.0.10", "10.0.0.1"};
  const Addresses other{"10.0.0.1", "10.0.0.2", "10.0.0.10"};
  EXPECT_EQ(transport::seed_addresses(one, false), transport::seed_addresses(other, false));
}

TEST(NameResolution, OnlyTheOtherFamilyIsStillUsed) {
  EXPECT_EQ(transport::seed_addresses({"fd00::2", "fd00::1"}, false),
            (Addresses{"fd00::1", "fd00::2"}));
  EXPECT_EQ(transport::seed_addresses({"10.0.0.1"}, true), (Addresses{"10.0.0.1"}));
}

TEST(NameResolution, DuplicatesCountOnce) {
  EXPECT_EQ(transport::seed_addresses({"10.0.0.1", "10.0.0.1"}, false), (Addresses{"10.0.0.1"}));
}

TEST(NameResolution, LocalhostResolvesThroughTheSystemResolver) {
  const auto resolution = transport::resolve_addresses("localhost");
  ASSERT_FALSE(resolution.addresses.empty()) << resolution.error;
  EXPECT_EQ(transport::seed_addresses(resolution.addresses, false).front(), "127.0.0.1");
}

TEST(NameResolution, AnUnknownNameGivesTheResolversMessage) {
  const auto resolution = transport::resolve_addresses("no-such-host.invalid");
  EXPECT_TRUE(resolution.addresses.empty());
  EXPECT_FALSE(resolution.error.empty());
}

}  // namespace
}  // namespace gossip_rdzv
