#include "progress.hpp"

#include <gtest/gtest.h>

#include <cstdio>

namespace gossip_rdzv::cli {
namespace {

using namespace std::chrono_literals;

Progress progress_with(std::uint32_t alive, std::uint32_t min_nodes, std::uint32_t max_nodes) {
  Progress progress;
  progress.joined = true;
  progress.min_nodes = min_nodes;
  progress.max_nodes = max_nodes;
  for (std::uint32_t index = 0; index < alive; ++index) {
    progress.members.push_back(
        MemberProgress{"n" + std::to_string(index) + ":1", "n", "alive", {}});
  }
  return progress;
}

TEST(ProgressDisplayTest, DescribesFixedSize) {
  EXPECT_EQ(ProgressDisplay::describe(progress_with(3, 4, 4), 2s),
            "3/4 joined, waiting 1 more; last new member 2 s ago");
  EXPECT_EQ(ProgressDisplay::describe(progress_with(4, 4, 4), std::nullopt),
            "4/4 joined, agreeing");
}

TEST(ProgressDisplayTest, DescribesRange) {
  EXPECT_EQ(ProgressDisplay::describe(progress_with(1, 2, 8), std::nullopt),
            "1 joined, waiting 1 more (need 2, up to 8)");
  EXPECT_EQ(ProgressDisplay::describe(progress_with(3, 2, 8), 1s),
            "3 joined (need 2, up to 8), last call for more; last new member 1 s ago");
}

TEST(ProgressDisplayTest, DescribesBeforeJoining) {
  Progress progress;
  EXPECT_EQ(ProgressDisplay::describe(progress, std::nullopt), "contacting seed(s)...");
}

TEST(ProgressDisplayTest, LogModePrintsOncePerInterval) {
  std::FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  ProgressDisplay display(out, ProgressDisplay::Mode::log, 5s);
  auto start = ProgressDisplay::Clock::now();
  display.update(progress_with(1, 4, 4), start);
  display.update(progress_with(2, 4, 4), start + 1s);
  display.update(progress_with(2, 4, 4), start + 6s);
  std::rewind(out);
  char buffer[512] = {};
  std::size_t size = std::fread(buffer, 1, sizeof buffer - 1, out);
  std::fclose(out);
  EXPECT_EQ(std::string(buffer, size),
            "gossip-rdzv: 1/4 joined, waiting 3 more\n"
            "gossip-rdzv: 2/4 joined, waiting 2 more; last new member 5 s ago\n");
}

TEST(ProgressDisplayTest, LiveModeRewritesOneLine) {
  std::FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  ProgressDisplay display(out, ProgressDisplay::Mode::live);
  auto start = ProgressDisplay::Clock::now();
  display.update(progress_with(1, 2, 8), start);
  display.update(progress_with(1, 2, 8), start);  // unchanged: not redrawn
  display.update(progress_with(2, 2, 2), start);
  display.finish();
  std::rewind(out);
  char buffer[512] = {};
  std::size_t size = std::fread(buffer, 1, sizeof buffer - 1, out);
  std::fclose(out);
  std::string text(buffer, size);
  EXPECT_EQ(text.front(), '\r');
  EXPECT_EQ(text.back(), '\n');
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\r'), 2);
}

TEST(ProgressDisplayTest, SilentPrintsNothing) {
  std::FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  ProgressDisplay display(out, ProgressDisplay::Mode::silent);
  display.update(progress_with(1, 4, 4), ProgressDisplay::Clock::now());
  display.finish();
  EXPECT_EQ(std::ftell(out), 0);
  std::fclose(out);
}

}  // namespace
}  // namespace gossip_rdzv::cli
