#include "protocol/natural_order.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

namespace gossip_rdzv::protocol {
namespace {

TEST(NaturalOrder, DigitRunsCompareByValue) {
  EXPECT_TRUE(natural_less("node7", "node66"));
  EXPECT_TRUE(natural_less("node66", "node100"));
  EXPECT_TRUE(natural_less("node2", "node10"));
  EXPECT_FALSE(natural_less("node10", "node2"));
  EXPECT_TRUE(natural_less("10.0.0.9", "10.0.0.10"));
}

TEST(NaturalOrder, NonDigitsCompareLexicographically) {
  EXPECT_TRUE(natural_less("node-a", "node-b"));
  EXPECT_FALSE(natural_less("node-b", "node-a"));
  EXPECT_TRUE(natural_less("alpha", "beta"));
  EXPECT_TRUE(natural_less("rack1-node9", "rack2-node1"));
  EXPECT_TRUE(natural_less("rack1-node9", "rack1-node10"));
}

TEST(NaturalOrder, LeadingZerosAreEqualValuesButNotEqualStrings) {
  EXPECT_NE(natural_compare("node07", "node7"), 0);
  EXPECT_EQ(natural_compare("node07", "node7"), -natural_compare("node7", "node07"));
  // The value decides before the zeros do.
  EXPECT_TRUE(natural_less("node007", "node8"));
  EXPECT_TRUE(natural_less("node8", "node010"));
  // Equal values: the rest of the string decides before the zeros.
  EXPECT_TRUE(natural_less("node07a", "node7b"));
  EXPECT_TRUE(natural_less("node000", "node1"));
}

TEST(NaturalOrder, HugeNumbersDoNotOverflow) {
  EXPECT_TRUE(natural_less("n99999999999999999999999", "n100000000000000000000000"));
  EXPECT_TRUE(natural_less("n18446744073709551616", "n18446744073709551617"));
}

TEST(NaturalOrder, EmptyAndPrefixes) {
  EXPECT_EQ(natural_compare("", ""), 0);
  EXPECT_TRUE(natural_less("", "a"));
  EXPECT_TRUE(natural_less("", "0"));
  EXPECT_FALSE(natural_less("a", ""));
  EXPECT_TRUE(natural_less("node", "node1"));
  EXPECT_TRUE(natural_less("node1", "node1a"));
  EXPECT_EQ(natural_compare("node12", "node12"), 0);
}

TEST(NaturalOrder, MixedDigitAndNonDigit) {
  // Digits sort as their bytes against other characters: '-' < '0'..'9' < 'a'.
  EXPECT_TRUE(natural_less("node-1", "node1"));
  EXPECT_TRUE(natural_less("node1", "nodea"));
  EXPECT_TRUE(natural_less("a1b2c3", "a1b2c10"));
  EXPECT_TRUE(natural_less("a2b", "a10a"));
}

// A comparator std::sort can use must be a strict weak order; check it on many strings,
// and that the sorted result does not depend on the starting order.
TEST(NaturalOrder, IsATotalOrderOnRandomStrings) {
  std::mt19937 rng(1234);
  const std::string alphabet = "0019a-b.";
  std::vector<std::string> words;
  for (int i = 0; i < 300; ++i) {
    std::string w;
    const int len = static_cast<int>(rng() % 7);
    for (int k = 0; k < len; ++k) w += alphabet[rng() % alphabet.size()];
    words.push_back(w);
  }
  for (const auto& a : words) {
    EXPECT_FALSE(natural_less(a, a));
    for (const auto& b : words) {
      EXPECT_EQ(natural_compare(a, b) == 0, a == b) << a << " vs " << b;
      EXPECT_EQ(natural_compare(a, b), -natural_compare(b, a)) << a << " vs " << b;
    }
  }
  for (std::size_t i = 0; i < 60; ++i) {
    for (std::size_t j = 0; j < 60; ++j) {
      for (std::size_t k = 0; k < 60; ++k) {
        if (natural_less(words[i], words[j]) && natural_less(words[j], words[k])) {
          ASSERT_TRUE(natural_less(words[i], words[k]))
              << words[i] << " < " << words[j] << " < " << words[k];
        }
      }
    }
  }
  auto sorted = words;
  std::sort(sorted.begin(), sorted.end(), natural_less);
  auto shuffled = words;
  std::shuffle(shuffled.begin(), shuffled.end(), rng);
  std::sort(shuffled.begin(), shuffled.end(), natural_less);
  EXPECT_EQ(sorted, shuffled);
}

TEST(NaturalOrder, SortsHostNamesLikePeopleDo) {
  std::vector<std::string> hosts{"node100", "node7",  "node66", "node-b",
                                 "node10",  "node-a", "node2"};
  std::sort(hosts.begin(), hosts.end(), natural_less);
  EXPECT_EQ(hosts, (std::vector<std::string>{"node-a", "node-b", "node2", "node7", "node10",
                                             "node66", "node100"}));
}

}  // namespace
}  // namespace gossip_rdzv::protocol
