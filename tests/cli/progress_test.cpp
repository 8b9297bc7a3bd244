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
  Progress progress = progress_with(3, 4, 4);
  EXPECT_EQ(ProgressDisplay::describe(progress), "3/4 joined, waiting for 1 more");
  progress.last_heard = 2400ms;
  EXPECT_EQ(ProgressDisplay::describe(progress),
            "3/4 joined, waiting for 1 more; last heard 2 s ago");
  EXPECT_EQ(ProgressDisplay::describe(progress_with(4, 4, 4)), "4/4 joined, agreeing");
}

TEST(ProgressDisplayTest, NamesTheMembersSeenAndThenLost) {
  Progress progress = progress_with(12, 16, 16);
  progress.members.push_back(MemberProgress{"10.0.0.13:29400", "node-a", "dead", 9000ms});
  progress.members.push_back(MemberProgress{"10.0.0.14:29400", "node-b", "suspect", 3000ms});
  progress.last_heard = 3000ms;
  EXPECT_EQ(
      ProgressDisplay::describe(progress),
      "12/16 joined, 1 suspect (node-b), waiting for node-a (dead), 2 more; last heard 3 s ago");
}

// A suspect is still a member: the round counts it and does not wait for it, so the line
// names it apart from what the round waits for.
TEST(ProgressDisplayTest, CountsSuspectsAsMembersTheRoundDoesNotWaitFor) {
  Progress progress = progress_with(250, 256, 256);
  for (int i = 0; i < 6; ++i) {
    progress.members.push_back(MemberProgress{
        "10.0.2." + std::to_string(i) + ":1", "s" + std::to_string(i), "suspect", {}});
  }
  EXPECT_EQ(ProgressDisplay::describe(progress),
            "250/256 joined, 6 suspect (s0, s1, s2, s3, s4, 1 more), agreeing");
  Progress elastic = progress_with(1, 2, 4);
  elastic.members.push_back(MemberProgress{"10.0.0.2:1", "b", "suspect", {}});
  EXPECT_EQ(ProgressDisplay::describe(elastic),
            "1 joined, 1 suspect (b) (need 2, up to 4), last call for more");
  elastic.min_nodes = 3;
  EXPECT_EQ(ProgressDisplay::describe(elastic),
            "1 joined, 1 suspect (b), waiting for 1 more (need 3, up to 4)");
}

TEST(ProgressDisplayTest, NamesByEndpointWhenHostNamesRepeat) {
  Progress progress = progress_with(1, 3, 3);
  progress.members.push_back(MemberProgress{"127.0.0.1:29402", "n", "dead", {}});
  EXPECT_EQ(ProgressDisplay::describe(progress),
            "1/3 joined, waiting for 127.0.0.1:29402 (dead), 1 more");
}

TEST(ProgressDisplayTest, NamesAtMostFiveAndCountsTheRest) {
  Progress progress = progress_with(1, 8, 8);
  for (int i = 0; i < 7; ++i) {
    progress.members.push_back(
        MemberProgress{"10.0.1." + std::to_string(i) + ":1", "d" + std::to_string(i), "dead", {}});
  }
  EXPECT_EQ(
      ProgressDisplay::describe(progress),
      "1/8 joined, waiting for d0 (dead), d1 (dead), d2 (dead), d3 (dead), d4 (dead), 2 more");
}

TEST(ProgressDisplayTest, NamesWhatCannotBeReached) {
  Progress progress = progress_with(3, 4, 4);
  progress.members.push_back(MemberProgress{"10.0.0.4:29400", "node-d", "alive", {}, true});
  EXPECT_EQ(ProgressDisplay::describe(progress),
            "4/4 joined, agreeing; no answer at the address of node-d");
  Progress joining;
  joining.endpoint = "127.0.0.1:29400";
  joining.unreachable_by = {"10.0.0.1:29400"};
  EXPECT_EQ(ProgressDisplay::describe(joining),
            "contacting seed(s)...; peers cannot reach this node at 127.0.0.1:29400: "
            "10.0.0.1:29400");
}

TEST(ProgressDisplayTest, NamesFromTheNetworkCannotDriveTheTerminal) {
  Progress progress = progress_with(1, 2, 2);
  progress.members.push_back(MemberProgress{"10.0.0.9:1", "evil\x1b[2J", "dead", {}});
  progress.endpoint = "10.0.0.1:1";
  progress.unreachable_by = {"x\r\x1b[1m:1"};
  EXPECT_EQ(ProgressDisplay::describe(progress),
            "1/2 joined, waiting for evil?[2J (dead); peers cannot reach this node at "
            "10.0.0.1:1: x??[1m:1");
}

TEST(ProgressDisplayTest, DescribesRange) {
  EXPECT_EQ(ProgressDisplay::describe(progress_with(1, 2, 8)),
            "1 joined, waiting for 1 more (need 2, up to 8)");
  Progress progress = progress_with(3, 2, 8);
  progress.last_heard = 1s;
  EXPECT_EQ(ProgressDisplay::describe(progress),
            "3 joined (need 2, up to 8), last call for more; last heard 1 s ago");
}

TEST(ProgressDisplayTest, DescribesBeforeJoining) {
  Progress progress;
  EXPECT_EQ(ProgressDisplay::describe(progress), "contacting seed(s)...");
}

TEST(ProgressDisplayTest, LogModePrintsOncePerInterval) {
  std::FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  ProgressDisplay display(out, ProgressDisplay::Mode::log, 5s);
  auto start = ProgressDisplay::Clock::now();
  display.update(progress_with(1, 4, 4), start);
  display.update(progress_with(2, 4, 4), start + 1s);
  Progress later = progress_with(2, 4, 4);
  later.last_heard = 5s;
  display.update(later, start + 6s);
  std::rewind(out);
  char buffer[512] = {};
  std::size_t size = std::fread(buffer, 1, sizeof buffer - 1, out);
  std::fclose(out);
  EXPECT_EQ(std::string(buffer, size),
            "gossip-rdzv: 1/4 joined, waiting for 3 more\n"
            "gossip-rdzv: 2/4 joined, waiting for 2 more; last heard 5 s ago\n");
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
  // Drawn, then erased (carriage return, erase to end of line) and redrawn once, then ended.
  EXPECT_EQ(text, ProgressDisplay::describe(progress_with(1, 2, 8)) + "\r\033[K" +
                      ProgressDisplay::describe(progress_with(2, 2, 2)) + "\n");
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
