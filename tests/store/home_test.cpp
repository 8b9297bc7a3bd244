#include "store/home.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

namespace gossip_rdzv::store {
namespace {

std::vector<std::string> endpoints(std::size_t count) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < count; ++i) {
    out.push_back("10.0." + std::to_string(i / 250) + "." + std::to_string(i % 250 + 1) + ":29400");
  }
  return out;
}

// Keys as gloo and torch write them: a prefix and a rank.
std::vector<std::string> keys(std::size_t count) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < count; ++i) out.push_back("/default_pg/0//cpu//" + std::to_string(i));
  return out;
}

TEST(StableHash, IsFixedAcrossBuilds) {
  // Pinned values: every node of a job must agree, whatever compiler built it.
  EXPECT_EQ(stable_hash(""), stable_hash(""));
  EXPECT_NE(stable_hash("a"), stable_hash("b"));
  EXPECT_EQ(stable_hash("rank_0"), 0x710908e085430b95ULL) << std::hex << stable_hash("rank_0");
}

TEST(HomeMap, SameHomeWhateverTheMemberOrder) {
  auto members = endpoints(16);
  HomeMap forward(members);
  std::reverse(members.begin(), members.end());
  HomeMap backward(members);
  for (const auto& key : keys(500)) EXPECT_EQ(forward.home_of(key), backward.home_of(key));
}

TEST(HomeMap, OneMemberIsHomeOfEverything) {
  HomeMap map({"127.0.0.1:29400"});
  EXPECT_EQ(map.home_index("x"), 0u);
  EXPECT_EQ(map.home_of("anything"), "127.0.0.1:29400");
}

TEST(HomeMap, DuplicateEndpointsCountOnce) {
  HomeMap map({"b:1", "a:1", "b:1"});
  EXPECT_EQ(map.size(), 2u);
}

// A departing member moves only its own keys (the point of rendezvous hashing).
TEST(HomeMap, RemovingAMemberMovesOnlyItsKeys) {
  const auto members = endpoints(8);
  HomeMap full(members);
  auto fewer = members;
  fewer.erase(fewer.begin() + 3);
  HomeMap reduced(fewer);
  for (const auto& key : keys(2000)) {
    if (full.home_of(key) != members[3]) {
      EXPECT_EQ(full.home_of(key), reduced.home_of(key));
    }
  }
}

void expect_balanced(std::size_t member_count, std::size_t key_count, double max_over_mean) {
  HomeMap map(endpoints(member_count));
  std::vector<std::size_t> load(member_count, 0);
  for (const auto& key : keys(key_count)) ++load[map.home_index(key)];
  const double mean = static_cast<double>(key_count) / static_cast<double>(member_count);
  const auto [min, max] = std::minmax_element(load.begin(), load.end());
  EXPECT_LE(static_cast<double>(*max), max_over_mean * mean)
      << member_count << " homes, " << key_count << " keys: max " << *max << ", mean " << mean;
  EXPECT_GT(*min, 0u) << "a home got no key at all";
}

// Bounds: for n keys over m homes the max load of a uniform hash is about
// mean + 3 sqrt(mean); the factors below leave room for that, not for a skewed hash.
TEST(HomeMap, SpreadsGlooKeysOverEightHomes) {
  expect_balanced(8, 8000, 1.15);
}

TEST(HomeMap, SpreadsGlooKeysOverThirtyTwoHomes) {
  expect_balanced(32, 32000, 1.2);
}

TEST(HomeMap, SpreadsFewKeysAcceptably) {
  // gloo's full mesh of 64 ranks sets 64 keys: with 8 homes no home should get half of them.
  expect_balanced(8, 64, 2.5);
}

}  // namespace
}  // namespace gossip_rdzv::store
