// What `gossip-rdzv join` shows on stderr while it waits for the other nodes: a line
// rewritten in place on a terminal, a log line every few seconds otherwise, nothing with
// --quiet. Formatting is a pure function of the Progress snapshot and the clock.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include "gossip_rdzv/node.hpp"

namespace gossip_rdzv::cli {

class ProgressDisplay {
 public:
  enum class Mode { live, log, silent };
  using Clock = std::chrono::steady_clock;

  /// The mode for stderr: live on a terminal, log otherwise, silent with --quiet.
  static Mode mode_for_stderr(bool quiet);

  ProgressDisplay(std::FILE* out, Mode mode,
                  std::chrono::milliseconds log_interval = std::chrono::seconds(5));

  /// Shows `progress` if the mode calls for it now (live: every call; log: every interval).
  void update(const Progress& progress, Clock::time_point now);

  /// Ends the live line so that what follows starts on a fresh line.
  void finish();

  /// "12/16 joined, waiting for node-a (dead), node-b (suspect), 2 more; last heard 3 s ago"
  /// and its variants: members seen and then lost are named, the others counted; members
  /// whose endpoint does not answer and peers that cannot reach this node are named too.
  static std::string describe(const Progress& progress);

 private:
  std::FILE* out_;
  Mode mode_;
  std::chrono::milliseconds log_interval_;
  std::optional<Clock::time_point> last_log_;
};

}  // namespace gossip_rdzv::cli
