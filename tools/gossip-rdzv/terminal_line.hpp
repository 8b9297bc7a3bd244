// The one line at the bottom of a terminal that `join` rewrites in place (its progress), and
// everything else written to the same terminal (log messages from the node's threads): a
// message is printed above the line, which is then drawn again, so the two never interleave
// in the middle of a line.
#pragma once

#include <spdlog/sinks/sink.h>

#include <cstdio>
#include <memory>
#include <mutex>
#include <string>

namespace gossip_rdzv::cli {

class TerminalLine {
 public:
  /// The line of `out`: one per stream, shared by every writer of that stream.
  static TerminalLine& of(std::FILE* out);

  /// Replaces the line on screen with `line` (not redrawn while unchanged).
  void show(const std::string& line);
  /// Ends the line with a newline and forgets it: what follows starts on a fresh line.
  void end();
  /// Erases the line, lets `write` print whole lines, then draws the line again.
  template <class Write>
  void print_above(Write&& write) {
    const std::lock_guard<std::mutex> lock(mutex_);
    erase();
    write();
    draw();
  }

  /// A spdlog sink that prints each message through `inner` above the line of `out`.
  static std::shared_ptr<spdlog::sinks::sink> sink(std::FILE* out,
                                                   std::shared_ptr<spdlog::sinks::sink> inner);

  explicit TerminalLine(std::FILE* out) : out_(out) {}

 private:
  void erase();
  void draw();

  std::mutex mutex_;
  std::FILE* out_;
  std::string line_;  ///< on screen, without a newline; empty: none
};

}  // namespace gossip_rdzv::cli
