// A budget of log lines for what strangers can trigger at will (undecodable messages): at
// most `burst` lines per `period` in total. Counting per claimed sender would not bound
// anything, since a sender claims whatever name it likes.
#pragma once

#include <cstddef>

#include "protocol/core.hpp"

namespace gossip_rdzv::runtime {

class LogLimiter {
 public:
  struct Decision {
    bool log = false;                   ///< log this line
    std::size_t suppressed_before = 0;  ///< lines not logged in the period that just ended
  };

  LogLimiter(std::size_t burst, protocol::Time period) : burst_(burst), period_(period) {}

  /// Called for each line that could be logged at `now` (time never goes back).
  Decision allow(protocol::Time now) {
    Decision decision;
    if (!started_ || now - window_start_ >= period_) {
      decision.suppressed_before = suppressed_;
      started_ = true;
      window_start_ = now;
      logged_ = 0;
      suppressed_ = 0;
    }
    decision.log = logged_ < burst_;
    ++(decision.log ? logged_ : suppressed_);
    return decision;
  }

 private:
  std::size_t burst_;
  protocol::Time period_;
  bool started_ = false;
  protocol::Time window_start_{0};
  std::size_t logged_ = 0;
  std::size_t suppressed_ = 0;
};

}  // namespace gossip_rdzv::runtime
