#include "terminal_line.hpp"

#include <gtest/gtest.h>
#include <spdlog/logger.h>
#include <spdlog/sinks/ostream_sink.h>

#include <cstdio>
#include <sstream>
#include <string>

namespace gossip_rdzv::cli {
namespace {

std::string contents(std::FILE* out) {
  std::fflush(out);
  std::rewind(out);
  std::string text;
  char buffer[256];
  while (std::size_t n = std::fread(buffer, 1, sizeof buffer, out)) text.append(buffer, n);
  return text;
}

TEST(TerminalLineTest, TextPrintedAboveTheLineLeavesItIntactBelow) {
  std::FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  TerminalLine line(out);
  line.show("1/3 joined");
  line.print_above([&] { std::fputs("warning: x\n", out); });
  line.show("1/3 joined");  // unchanged: not redrawn
  line.show("2/3 joined");
  line.end();
  EXPECT_EQ(contents(out), "1/3 joined\r\033[Kwarning: x\n1/3 joined\r\033[K2/3 joined\n");
  std::fclose(out);
}

TEST(TerminalLineTest, WithoutALineTextIsPrintedAsIs) {
  std::FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  TerminalLine line(out);
  line.print_above([&] { std::fputs("plain\n", out); });
  line.end();  // nothing on screen: no newline added
  EXPECT_EQ(contents(out), "plain\n");
  std::fclose(out);
}

// The spdlog sink of `gossip-rdzv` on a terminal: a log message from another thread erases
// the progress line, is printed whole, and the line comes back under it.
TEST(TerminalLineTest, LogSinkPrintsMessagesAboveTheLine) {
  std::FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  std::ostringstream logged;
  auto inner = std::make_shared<spdlog::sinks::ostream_sink_mt>(logged);
  // The sink writes through `inner`; the test stream stands in for stderr, so mirror it.
  spdlog::logger logger("t", TerminalLine::sink(out, inner));
  logger.set_pattern("%v");
  TerminalLine::of(out).show("waiting");
  logger.warn("peer slow");
  TerminalLine::of(out).end();
  EXPECT_EQ(logged.str(), "peer slow\n");
  EXPECT_EQ(contents(out), "waiting\r\033[Kwaiting\n");
  std::fclose(out);
}

}  // namespace
}  // namespace gossip_rdzv::cli
