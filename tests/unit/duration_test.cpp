#include "protocol/duration.hpp"

#include <gtest/gtest.h>

namespace gossip_rdzv::protocol {
namespace {

using std::chrono::milliseconds;

milliseconds parsed(std::string_view text) {
  std::string error;
  const std::optional<milliseconds> duration = parse_duration(text, &error);
  EXPECT_TRUE(duration.has_value()) << text << ": " << error;
  return duration.value_or(milliseconds(-1));
}

std::string refused(std::string_view text) {
  std::string error;
  const std::optional<milliseconds> duration = parse_duration(text, &error);
  EXPECT_FALSE(duration.has_value()) << text << " = " << duration->count() << "ms";
  return error;
}

TEST(Duration, ParsesEveryUnit) {
  EXPECT_EQ(parsed("500ms"), milliseconds(500));
  EXPECT_EQ(parsed("30s"), milliseconds(30'000));
  EXPECT_EQ(parsed("2m"), milliseconds(120'000));
  EXPECT_EQ(parsed("1h"), milliseconds(3'600'000));
  EXPECT_EQ(parsed("0"), milliseconds(0));
}

TEST(Duration, PlainNumberIsSeconds) {
  EXPECT_EQ(parsed("45"), milliseconds(45'000));
}

TEST(Duration, FractionsDownToAMillisecond) {
  EXPECT_EQ(parsed("1.5s"), milliseconds(1500));
  EXPECT_EQ(parsed(".25s"), milliseconds(250));
  EXPECT_EQ(parsed("0.001s"), milliseconds(1));
  EXPECT_EQ(parsed("1.5m"), milliseconds(90'000));
  EXPECT_EQ(parsed("0.5h"), milliseconds(1'800'000));
  EXPECT_NE(refused("0.0005s").find("finer than a millisecond"), std::string::npos);
  EXPECT_NE(refused("1.5ms").find("finer than a millisecond"), std::string::npos);
  EXPECT_NE(refused("5.s").find("no digits after"), std::string::npos);
}

TEST(Duration, ErrorsNameTheProblem) {
  EXPECT_EQ(refused("2d"), "unknown unit 'd' in '2d': use ms, s, m or h");
  EXPECT_NE(refused("").find("empty duration"), std::string::npos);
  EXPECT_NE(refused("-5s").find("is negative"), std::string::npos);
  EXPECT_NE(refused("s").find("does not start with a number"), std::string::npos);
  EXPECT_NE(refused("5 s").find("unknown unit ' s'"), std::string::npos);
  EXPECT_NE(refused("1e3s").find("unknown unit"), std::string::npos);
  EXPECT_NE(refused("1.2.3s").find("unknown unit"), std::string::npos);
}

TEST(Duration, HugeValuesAreOutOfRangeNotOverflowed) {
  EXPECT_NE(refused("999999999999h").find("out of range"), std::string::npos);
  EXPECT_NE(refused("99999999999999999999999s").find("out of range"), std::string::npos);
  EXPECT_NE(refused("1.0000001s").find("out of range"), std::string::npos);
  EXPECT_EQ(parsed("277777h"), milliseconds(277777LL * 3'600'000));
}

TEST(Duration, NullErrorPointerIsAllowed) {
  EXPECT_FALSE(parse_duration("x", nullptr).has_value());
  EXPECT_EQ(parse_duration("2s", nullptr), milliseconds(2000));
}

}  // namespace
}  // namespace gossip_rdzv::protocol
